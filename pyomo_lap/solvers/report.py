"""What a solve did, in words: :class:`SolveReport` (status, iterations, time, sizes), the
diagnosis of a failure with a hint (:func:`diagnose`), and the figures read from an IPOPT log
(:func:`log_statistics`); :func:`pyomo_lap.solvers.solve.solve_model` returns the report.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional

__all__ = ["SolveReport", "diagnose", "log_statistics", "decode_solver_message"]


_ESCAPE = re.compile(r"\\x([0-9A-Fa-f]{2})")


def decode_solver_message(text) -> str:
    r"""A solver message with its ``\xHH`` escapes decoded: AMPL solution files escape the
    colon, which Pyomo passes on (``'Ipopt 3.11.9\x3a Optimal Solution Found'`` ->
    ``'Ipopt 3.11.9: Optimal Solution Found'``). Other text is unchanged."""
    if not text:
        return "" if text is None else str(text)
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), str(text))


@dataclasses.dataclass
class SolveReport:
    """What a solve did.

    Attributes
    ----------
    ok : bool
        True when the solver reported an optimal solution (for IPOPT also "Solved To
        Acceptable Level", which Pyomo reports as optimal; :attr:`exit_message` tells them
        apart).
    termination_condition : str
        Pyomo's termination condition (``optimal``, ``maxIterations``, ``infeasible`` ...).
    status : str
        Pyomo's solver status.
    message : str
        The solver's own message.
    iterations : int or None
        Iteration count read from the solver log (IPOPT).
    solve_time_s : float
        Wall-clock time of the solve call [s].
    solver : str
    log : str
        Solver output.
    n_variables, n_constraints : int or None
        Size of the NLP as the solver saw it (IPOPT's log).
    exit_message : str
        IPOPT's ``EXIT:`` line, e.g. ``Optimal Solution Found.`` or ``Solved To Acceptable
        Level.`` (Pyomo reports both as ``optimal``).
    details : dict
        Solver-specific figures (``lap_ipopt``: ``ipopt_s``, ``translate_s``, ``compile_s``,
        ``verify_s``, ``function_s`` and ``function_calls`` by callback, ``translation``).
    kind : str
        ``optimal``, ``acceptable``, ``iteration_limit``, ``infeasible``,
        ``restoration_failed``, ``evaluation_error``, ``interrupted``, ``time_limit``,
        ``bad_option``, ``solver_error`` or ``failed`` (from :func:`diagnose`).
    explanation, hint : str
        What happened in plain words, and what to try (empty when optimal).
    warm_start : str
        ``"cold"``, ``"warm"`` (from the model's solution and multipliers,
        :mod:`pyomo_lap.solvers.warm_start`), or ``"cold after a failed warm start (...)"``
        (:attr:`solve_time_s` then counts both solves).
    """

    ok: bool
    termination_condition: str
    status: str
    message: str
    iterations: Optional[int]
    solve_time_s: float
    solver: str
    log: str = ""
    n_variables: Optional[int] = None
    n_constraints: Optional[int] = None
    exit_message: str = ""
    kind: str = ""
    explanation: str = ""
    hint: str = ""
    details: dict = dataclasses.field(default_factory=dict)
    warm_start: str = "cold"

    def __post_init__(self):
        """Decode the messages; the kind, explanation and hint of a failure."""
        self.message = decode_solver_message(self.message)
        self.exit_message = decode_solver_message(self.exit_message)
        if not self.kind:
            self.kind, self.explanation, self.hint = diagnose(self)

    def describe(self) -> str:
        """One paragraph: what happened, the solver's status and, on a failure, a hint."""
        facts = [f"termination condition {self.termination_condition}",
                 f"solver status {self.status}"]
        if self.exit_message:
            facts.append(f"IPOPT: {self.exit_message!r}")
        if self.iterations is not None:
            facts.append(f"{self.iterations} iterations")
        facts.append(f"{self.solve_time_s:.1f} s")
        facts.append("started " + self.warm_start)
        text = f"{self.explanation} ({', '.join(facts)})"
        return text + (f". Hint: {self.hint}" if self.hint else "")


_HINTS = {
    "iteration_limit": (
        "the solver stopped at its iteration limit before converging",
        "raise the limit (--max-iter N; Python: solver_options={'max_iter': N}), or solve a "
        "coarser mesh (--nfe) or a shorter sector first and start from it "
        "(pyomo_lap.ocp.initialize.initialize_from_solution)"),
    "infeasible": (
        "the solver converged to a point of local infeasibility: the constraints cannot all "
        "hold near this point",
        "check the entry speed (--initial-speed; 'free' lets the optimizer choose it), that "
        "the car fits the track (widths, --vehicle width), the vehicle's grip, power and "
        "steering limit, and any constraint you added"),
    "restoration_failed": (
        "the solver's restoration phase failed to get back to a feasible point",
        "this usually means a poor start or a badly conditioned problem near it: try another "
        "mesh (--nfe), a shorter sector, --initial-speed free, or check the vehicle data"),
    "evaluation_error": (
        "the model produced NaN or infinity (a function or derivative could not be evaluated)",
        "check the vehicle data (loads, tyre parameters) and the track (grades, curvature); "
        "try another mesh (--nfe) or a shorter sector"),
    "interrupted": (
        "the solve was interrupted by the user",
        "nothing was lost: earlier results are untouched; run again when ready"),
    "time_limit": (
        "the solver stopped at its time limit",
        "raise the limit (max_cpu_time) or solve a coarser mesh first"),
    "bad_option": (
        "the solver refused an option",
        "check the option's name and value; IPOPT's AMPL interface takes only some options "
        "on the command line, pass others through an options file by prefixing them with "
        "OF_ (e.g. OF_max_resto_iter)"),
    "solver_error": (
        "the solver stopped with an error",
        "read the solver's log (run with -v); try another mesh (--nfe), a shorter "
        "sector or --initial-speed free"),
    "failed": (
        "the solver did not report an optimal solution",
        "read the solver's log (run with -v)"),
}


def diagnose(report) -> tuple:
    """Classify a solve from its termination condition, IPOPT's ``EXIT:`` line and log.

    Parameters
    ----------
    report : SolveReport
        (``termination_condition``, ``status``, ``exit_message``, ``message``, ``log``).

    Returns
    -------
    (kind, explanation, hint) : tuple of str
        ``kind`` as in :attr:`SolveReport.kind`; ``hint`` is '' when optimal.
    """
    tc = str(report.termination_condition)
    ex = (report.exit_message or "").lower()
    msg = (report.message or "").lower()
    log = report.log or ""
    if report.ok or tc in ("optimal", "locallyOptimal", "globallyOptimal"):
        if "acceptable" in ex:
            return ("acceptable", "the solver reached an acceptable (not the requested) "
                    "tolerance", "")
        return "optimal", "the solver found an optimal solution", ""
    detail = re.findall(r"(Unknown keyword \S+|Exception message: .*)", log)
    if "unknown keyword" in log.lower() or "OPTION_INVALID" in log:
        kind = "bad_option"
    elif "restoration" in ex and "fail" in ex:
        kind = "restoration_failed"
    elif "invalid number" in ex or "invalid number" in msg:
        kind = "evaluation_error"
    elif "requested by user" in ex or tc in ("userInterrupt", "interrupted"):
        kind = "interrupted"
    elif tc in ("maxTimeLimit", "maxEvaluations") or "cpu time" in ex or "wallclock" in ex:
        kind = "time_limit"     # (Pyomo reports IPOPT's CPU-time limit as maxIterations)
    elif tc == "maxIterations" or "maximum number of iterations" in ex:
        kind = "iteration_limit"
    elif tc in ("infeasible", "locallyInfeasible", "globallyInfeasible") or "infeasib" in ex:
        kind = "infeasible"
    elif tc in ("error", "internalSolverError", "solverFailure") or ex:
        kind = "solver_error"
    else:
        kind = "failed"
    explanation, hint = _HINTS[kind]
    if kind == "bad_option" and detail:
        explanation += ": " + detail[0].replace("Exception message: ", "").strip()
    return kind, explanation, hint


def log_statistics(log: str) -> dict:
    """Figures of an IPOPT log (3.11 or 3.14): NLP size, iterations, time split.

    Returns
    -------
    dict
        Any of ``n_variables``, ``n_equalities``, ``n_inequalities``, ``jac_nnz`` (equality
        plus inequality Jacobian), ``hess_nnz`` (lower triangle), ``iterations``,
        ``ipopt_internal_s`` (IPOPT's own work: linear algebra, line search [s], CPU time in
        3.11, wall time in 3.14), ``ipopt_eval_s`` (function evaluations [s]),
        ``inertia_corrections`` (iterations whose ``lg(rg)`` column shows a regularization:
        each costs at least one more factorization) that the log holds.
    """
    out = {}
    pats = {
        "n_variables": r"Total number of variables\.*:\s*(\d+)",
        "n_equalities": r"Total number of equality constraints\.*:\s*(\d+)",
        "n_inequalities": r"Total number of inequality constraints\.*:\s*(\d+)",
        "jac_eq": r"nonzeros in equality constraint Jacobian\.*:\s*(\d+)",
        "jac_ineq": r"nonzeros in inequality constraint Jacobian\.*:\s*(\d+)",
        "hess_nnz": r"nonzeros in Lagrangian Hessian\.*:\s*(\d+)",
        "iterations": r"Number of Iterations\.*:\s*(\d+)",
        "ipopt_internal_s": r"Total (?:CPU )?sec(?:ond)?s in IPOPT \(w/o function evaluations\)\s*=\s*([\d.]+)",
        "ipopt_eval_s": r"Total (?:CPU )?sec(?:ond)?s in NLP function evaluations\s*=\s*([\d.]+)",
    }
    for key, pat in pats.items():
        hit = re.findall(pat, log)
        if hit:
            out[key] = float(hit[-1]) if key.endswith("_s") else int(hit[-1])
    if "jac_eq" in out or "jac_ineq" in out:
        out["jac_nnz"] = out.pop("jac_eq", 0) + out.pop("jac_ineq", 0)
    rows = re.findall(r"^\s*\d+r?\s+[-+]?\d\.\d+e[-+]\d+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)\s",
                      log, flags=re.MULTILINE)
    if rows:
        out["inertia_corrections"] = sum(1 for r in rows if r != "-")
    return out


def _iterations(log: str, from_table: bool = False) -> Optional[int]:
    """IPOPT's iteration count: its summary line or, with ``from_table`` when there is
    none (an interrupted or crashed solve), the last row of the iteration table."""
    hit = re.findall(r"Number of Iterations\.*:\s*(\d+)", log)
    if hit:
        return int(hit[-1])
    if from_table:
        rows = re.findall(r"^\s*(\d+)r?\s+[-+]?\d\.\d+e[-+]\d+\s", log, flags=re.MULTILINE)
        if rows:
            return int(rows[-1])
    return None


def _sizes(log: str):
    nv = re.findall(r"Total number of variables\.*:\s*(\d+)", log)
    ne = re.findall(r"Total number of equality constraints\.*:\s*(\d+)", log)
    ni = re.findall(r"Total number of inequality constraints\.*:\s*(\d+)", log)
    if not (nv and ne and ni):
        return None, None
    return int(nv[-1]), int(ne[-1]) + int(ni[-1])


def _exit_line(log: str) -> str:
    hit = re.findall(r"EXIT:\s*(.*)", log)
    return hit[-1].strip() if hit else ""
