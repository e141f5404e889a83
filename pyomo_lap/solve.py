"""Solving a built model through Pyomo, with solver look-up, default IPOPT options and a
plain report of what happened.

Any name Pyomo's ``SolverFactory`` knows can be given. Two NLP interfaces are tested here:

* ``ipopt`` - Pyomo's classic shell interface to the ``ipopt`` executable (the default);
* ``ipopt_v2`` - Pyomo's newer interface (:mod:`pyomo.contrib.solver`, ``Ipopt``), which
  writes the NL file with its own writer, scales the model from the ``scaling_factor``
  suffix itself and parses IPOPT's log.

Names that Pyomo registers for its newer interfaces (``ipopt_v2``, ``highs``, ...) are solved
through that interface directly, the others through the classic one.
"""
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
           "DEFAULT_IPOPT_OPTIONS", "TESTED_SOLVERS", "parse_solver_options"]

TESTED_SOLVERS = ("ipopt", "ipopt_v2")
"""Solver names (Pyomo ``SolverFactory`` names) that the test suite solves the OCP with."""

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
    "`ipopt` executable on PATH. Tested solver names: " + ", ".join(TESTED_SOLVERS) + ".")


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


def _new_interface(opt):
    """The :mod:`pyomo.contrib.solver` object behind a legacy wrapper, or None."""
    try:
        from pyomo.contrib.solver.common.base import LegacySolverWrapper
        from pyomo.contrib.solver.common.factory import SolverFactory as NewSolverFactory
    except ImportError:  # pragma: no cover - older Pyomo
        return None
    if not isinstance(opt, LegacySolverWrapper):
        return None
    for name, cls in NewSolverFactory._cls.items():
        if type(opt) is not cls and isinstance(opt, cls):
            return NewSolverFactory(name)
    return None


def ensure_solver(name: str = "ipopt"):
    """Return a Pyomo solver object, finding ``.venv/bin/ipopt`` even when the virtual
    environment is not activated.

    Parameters
    ----------
    name : str
        A Pyomo ``SolverFactory`` name (``ipopt``, ``ipopt_v2``, ...).

    Raises
    ------
    SolverNotFoundError
        With installation hints, when Pyomo knows no such solver or cannot find it.
    """
    if not isinstance(name, str) or not name.strip():
        raise SolverNotFoundError(f"solver name {name!r}: expected a Pyomo solver name such as "
                                  f"{' or '.join(TESTED_SOLVERS)}")
    opt = pyo.SolverFactory(name)
    from pyomo.opt.base.solvers import UnknownSolver
    if opt is None or isinstance(opt, UnknownSolver):
        raise SolverNotFoundError(
            f"solver {name!r} is not a solver Pyomo knows (see `pyomo help --solvers`). "
            f"NLP solvers tested with pyomo_lap: {', '.join(TESTED_SOLVERS)}. {INSTALL_HINT}")
    available = False
    try:
        available = bool(opt.available(exception_flag=False))
    except Exception:  # some plugins raise instead of returning False
        available = False
    if not available and name in ("ipopt", "ipopt_v2"):
        exe = _venv_bin() / "ipopt"
        if exe.exists():
            try:
                opt = pyo.SolverFactory(name, executable=str(exe))
                new = _new_interface(opt)
                if new is not None:
                    new.config.executable = str(exe)
                    available = bool(new.available())
                else:
                    available = bool(opt.available(exception_flag=False))
            except Exception:
                available = False
    if not available:
        hint = INSTALL_HINT if name in ("ipopt", "ipopt_v2") else (
            "It needs the cyipopt Python package built against an Ipopt library "
            "(`pip install cyipopt` or `conda install -c conda-forge cyipopt`), or use one of "
            f"{', '.join(TESTED_SOLVERS)}. {INSTALL_HINT}") if name == "cyipopt" else (
            "Pyomo knows it, but cannot find it on this machine: install it (and put its "
            f"executable on PATH), or use one of {', '.join(TESTED_SOLVERS)}. {INSTALL_HINT}")
        raise SolverNotFoundError(f"solver {name!r} is not available. {hint}")
    return opt


def parse_solver_options(pairs) -> dict:
    """Turn ``["KEY=VALUE", ...]`` into a dict of solver options.

    Values that read as integers or floats become numbers (``max_iter=500`` -> 500,
    ``tol=1e-6`` -> 1e-06), everything else stays a string (``linear_solver=mumps``).

    Raises
    ------
    ValueError
        An item without ``=`` or with an empty key (the message names the item).
    """
    out = {}
    for item in pairs or ():
        key, sep, val = str(item).partition("=")
        key, val = key.strip(), val.strip()
        if not sep or not key:
            raise ValueError(f"solver option {item!r}: expected KEY=VALUE, e.g. max_iter=500")
        for conv in (int, float):
            try:
                out[key] = conv(val)
                break
            except ValueError:
                continue
        else:
            out[key] = val
    return out


def solve_model(m, solver: str = "ipopt", options: Optional[dict] = None, tee: bool = False,
                load_partial: bool = True) -> SolveReport:
    """Solve a model and report plainly.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    solver : str
        Pyomo solver name (``ipopt`` by default; ``ipopt_v2`` is Pyomo's newer IPOPT interface).
    options : dict, optional
        Solver options passed through unchanged; for IPOPT (any name containing ``ipopt``)
        they update :data:`DEFAULT_IPOPT_OPTIONS`.
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
    new = _new_interface(opt)
    if new is not None:
        return _solve_new_interface(m, new, solver, opts, tee, load_partial)
    opt.options.update(opts)
    fd, logfile = tempfile.mkstemp(prefix="pyomo_lap_", suffix=".log")
    os.close(fd)
    t0 = time.perf_counter()
    try:
        try:
            res = opt.solve(m, tee=tee, load_solutions=False, logfile=logfile)
        except NotImplementedError:   # interfaces that take no log file (appsi_ipopt ...)
            res = opt.solve(m, tee=tee, load_solutions=False)
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


def _solve_new_interface(m, opt, solver, opts, tee, load_partial) -> SolveReport:
    """Solve through a :mod:`pyomo.contrib.solver` interface; the report uses the classic
    names of the termination conditions (``optimal``, ``maxIterations``...) so that runs made
    with either interface read alike."""
    from pyomo.contrib.solver.common.results import (SolutionStatus, legacy_solver_status_map,
                                                     legacy_termination_condition_map)
    from pyomo.contrib.solver.common.results import TerminationCondition as TC
    t0 = time.perf_counter()
    try:
        res = opt.solve(m, tee=tee, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                        solver_options=opts)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the solver crashed or returned an error code
        return SolveReport(False, "error", "error", f"{type(exc).__name__}: {exc}", None,
                           time.perf_counter() - t0, solver, "", None, None, "")
    elapsed = time.perf_counter() - t0
    log = getattr(res, "solver_log", "") or ""
    tc = res.termination_condition
    ok = tc == TC.convergenceCriteriaSatisfied and res.solution_status in (
        SolutionStatus.optimal, SolutionStatus.feasible)
    if ok or (load_partial and res.solution_status != SolutionStatus.noSolution):
        res.solution_loader.load_vars()
    legacy_tc = legacy_termination_condition_map.get(tc, tc)
    status = legacy_solver_status_map.get(tc, "unknown")
    iters = res.extra_info.iteration_count if "iteration_count" in res.extra_info else None
    return SolveReport(ok, str(legacy_tc), str(status), str(tc.name), iters if iters is not None
                       else _iterations(log), elapsed, solver, log, *_sizes(log), _exit_line(log))


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
