"""Solving a built model through Pyomo, with solver look-up, default IPOPT options and a
plain report of what happened."""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pyomo.environ as pyo
from pyomo.opt import TerminationCondition

__all__ = ["SolveReport", "solve_model", "ensure_solver", "SolverNotFoundError",
           "DEFAULT_IPOPT_OPTIONS"]

DEFAULT_IPOPT_OPTIONS = {
    "nlp_scaling_method": "user-scaling",   # the model's scaling_factor suffix
    "linear_solver": "mumps",
    "mu_strategy": "monotone",              # 'adaptive' raised mu far from a good start
    "tol": 1e-5,                            # scaled NLP error; the lap time is then converged to ~1e-5
    "acceptable_tol": 1e-4,
    "max_iter": 3000,
    "print_level": 5,
}
"""IPOPT options used unless the caller overrides them."""

INSTALL_HINT = (
    "Install IPOPT with one of: `bash scripts/bootstrap.sh` (builds it from Debian packages into "
    ".venv/bin), `conda install -c conda-forge ipopt`, or `idaes get-extensions`; or put any "
    "`ipopt` executable on PATH.")


class SolverNotFoundError(RuntimeError):
    """The requested solver is not available."""


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


def _venv_bin() -> Path:
    return Path(sys.prefix) / "bin"


def ensure_solver(name: str = "ipopt"):
    """Return a Pyomo solver object, finding ``.venv/bin/ipopt`` even when the virtual
    environment is not activated.

    Raises
    ------
    SolverNotFoundError
        With installation hints, when the solver cannot be found.
    """
    opt = pyo.SolverFactory(name)
    available = False
    try:
        available = bool(opt.available(exception_flag=False))
    except Exception:  # some plugins raise instead of returning False
        available = False
    if not available and name == "ipopt":
        exe = _venv_bin() / "ipopt"
        if exe.exists():
            opt = pyo.SolverFactory(name, executable=str(exe))
            available = bool(opt.available(exception_flag=False))
    if not available:
        hint = INSTALL_HINT if "ipopt" in name else "Check the solver name and its installation."
        raise SolverNotFoundError(f"solver {name!r} is not available. {hint}")
    return opt


def solve_model(m, solver: str = "ipopt", options: Optional[dict] = None, tee: bool = False,
                load_partial: bool = True) -> SolveReport:
    """Solve a model and report plainly.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    solver : str
        Pyomo solver name (``ipopt`` by default).
    options : dict, optional
        Solver options; for IPOPT they update :data:`DEFAULT_IPOPT_OPTIONS`.
    tee : bool
        Stream the solver's output (iterations) to stdout.
    load_partial : bool
        Load the solver's last point into the model also when it did not converge (the
        report says it is not optimal).

    Returns
    -------
    SolveReport

    Raises
    ------
    SolverNotFoundError
    KeyboardInterrupt
        Passed on after the interruption (the model keeps its previous values).
    """
    opt = ensure_solver(solver)
    opts = dict(DEFAULT_IPOPT_OPTIONS) if "ipopt" in solver else {}
    opts.update(options or {})
    opt.options.update(opts)
    fd, logfile = tempfile.mkstemp(prefix="pyomo_lap_", suffix=".log")
    os.close(fd)
    t0 = time.perf_counter()
    try:
        res = opt.solve(m, tee=tee, load_solutions=False, logfile=logfile)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the solver crashed or returned an error code
        log = _read_and_remove(logfile)
        return SolveReport(False, "error", "error", f"{type(exc).__name__}: {exc}", _iterations(log),
                           time.perf_counter() - t0, solver, log, *_sizes(log), _exit_line(log))
    elapsed = time.perf_counter() - t0
    log = _read_and_remove(logfile)
    tc = res.solver.termination_condition
    ok = tc in (TerminationCondition.optimal, TerminationCondition.locallyOptimal)
    if ok or (load_partial and len(res.solution) > 0):
        m.solutions.load_from(res)
    return SolveReport(ok, str(tc), str(res.solver.status), str(res.solver.message or ""),
                       _iterations(log), elapsed, solver, log, *_sizes(log), _exit_line(log))


def _iterations(log: str) -> Optional[int]:
    hit = re.findall(r"Number of Iterations\.*:\s*(\d+)", log)
    return int(hit[-1]) if hit else None


def _sizes(log: str):
    nv = re.findall(r"Total number of variables\.*:\s*(\d+)", log)
    ne = re.findall(r"Total number of equality constraints\.*:\s*(\d+)", log)
    ni = re.findall(r"Total number of inequality constraints\.*:\s*(\d+)", log)
    if not (nv and ne and ni):
        return None, None
    return int(nv[-1]), int(ne[-1]) + int(ni[-1])


def _read_and_remove(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _exit_line(log: str) -> str:
    hit = re.findall(r"EXIT:\s*(.*)", log)
    return hit[-1].strip() if hit else ""
