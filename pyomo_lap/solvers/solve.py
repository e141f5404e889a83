"""Solving a built model through Pyomo, with solver look-up, default IPOPT options and a
plain report of what happened (:class:`~pyomo_lap.solvers.report.SolveReport`, in
:mod:`pyomo_lap.solvers.report`).

Any name Pyomo's ``SolverFactory`` knows can be given. Two NLP interfaces are tested here:

* ``ipopt`` - Pyomo's classic shell interface to the ``ipopt`` executable (the default);
* ``ipopt_v2`` - Pyomo's newer interface (:mod:`pyomo.contrib.solver`, ``Ipopt``), which
  writes the NL file with its own writer, scales the model from the ``scaling_factor``
  suffix itself and parses IPOPT's log.

Names that Pyomo registers for its newer interfaces (``ipopt_v2``, ``highs``, ...) are solved
through that interface directly, the others through the classic one.
"""
from __future__ import annotations

import io
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pyomo.environ as pyo
from pyomo.common.log import LoggingIntercept
from pyomo.common.tempfiles import TempfileManager
from pyomo.contrib.solver.common.base import LegacySolverWrapper
from pyomo.contrib.solver.common.factory import SolverFactory as NewSolverFactory
from pyomo.contrib.solver.common.results import (
    SolutionStatus,
    TerminationCondition as TC,
    legacy_solver_status_map,
    legacy_termination_condition_map,
)
from pyomo.contrib.solver.solvers.ipopt import ipopt_command_line_options
from pyomo.opt import TerminationCondition
from pyomo.opt.base.solvers import UnknownSolver

from ..util.domains import error_text
from ..util.gc_pause import gc_paused
from . import warm_start as ws
from .lap import ipopt_c, ipopt_options
from .lap.car_blocks import refresh_cars
from .lap.solver import _OWN_OPTIONS, LAP_IPOPT_OPTIONS, LapIpopt
from .linear_solvers import LIBRARY_OPTIONS, linear_solver_refusal
from .report import (
    _HINTS,
    SolveReport,
    _exit_line,
    _iterations,
    _sizes,
    decode_solver_message,
    diagnose,
    log_statistics,
)

__all__ = ["SolveReport", "solve_model", "ensure_solver", "SolverNotFoundError",
           "SolveInterrupted", "DEFAULT_IPOPT_OPTIONS", "diagnose", "TESTED_SOLVERS",
           "log_statistics", "DEFAULT_SOLVER", "ASL_SOLVERS",
           "parse_solver_options", "decode_solver_message", "check_solver_options",
           "SolverOptionError", "CHECKED_SOLVERS"]
# SolveReport, diagnose, log_statistics and decode_solver_message live in .report; public
# names of this module before the split (docs/reference/api.md), kept here

TESTED_SOLVERS = ("lap_ipopt", "ipopt", "ipopt_v2")
"""Solver names (Pyomo ``SolverFactory`` names) that the test suite solves the OCP with."""

DEFAULT_SOLVER = "lap_ipopt"
"""The solver of :func:`solve_model`, :func:`pyomo_lap.api.solve_sector` and ``pyomo-lap
solve`` unless another is named: the fast path (:mod:`pyomo_lap.solvers.lap.solver`)."""

ASL_SOLVERS = ("ipopt", "ipopt_v2")
"""Pyomo's interfaces to the ``ipopt`` executable (NL file, AMPL solver library)."""

DEFAULT_IPOPT_OPTIONS = {   # for the ASL path; lap_ipopt has its own (LAP_IPOPT_OPTIONS)
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
    "The default solver lap_ipopt needs only the casadi wheel (`pip install casadi`, part of "
    "pyomo_lap's requirements). The ASL path (ipopt, ipopt_v2) needs an `ipopt` executable: "
    "`PYOMO_LAP_ASL=1 bash scripts/bootstrap.sh` (builds it from Debian packages into "
    ".venv/bin), "
    "`conda install -c conda-forge ipopt`, or `idaes get-extensions`; or put any `ipopt` "
    "executable on PATH. Tested solver names: " + ", ".join(TESTED_SOLVERS) + ".")


class SolverNotFoundError(RuntimeError):
    """The requested solver is not available."""


class SolveInterrupted(KeyboardInterrupt):
    """The solve was interrupted (Ctrl-C, SIGINT). ``report`` says what is known (time,
    iterations seen); the model keeps its previous values; the solver process is stopped
    and its temporary files removed. ``load_iterate``: for ``lap_ipopt``, a function that
    loads the solver's last iterate into the model and returns its iteration number (None
    for the other solvers, or when the solver made no iteration)."""

    def __init__(self, report: "SolveReport", load_iterate=None):
        self.report = report
        self.load_iterate = load_iterate
        super().__init__(report.describe())


def _venv_bin() -> Path:
    return Path(sys.prefix) / "bin"


def _new_interface(opt):
    """The :mod:`pyomo.contrib.solver` object behind a legacy wrapper, or None."""
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
    with LoggingIntercept(io.StringIO(), "pyomo", logging.WARNING):
        opt = pyo.SolverFactory(name)
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
    if not available and name == DEFAULT_SOLVER:
        raise SolverNotFoundError(
            f"solver {name!r} is not available: it needs the casadi wheel, which ships the IPOPT "
            "library it uses (`pip install casadi`; `bash scripts/bootstrap.sh` installs it), or "
            "PYOMO_LAP_IPOPT_LIBRARY pointing at an IPOPT 3.14 library. The ASL path "
            "(--solver ipopt) works without it.")
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
    ``tol=1e-6`` -> 1e-06), everything else stays a string (``linear_solver=mumps``). The
    names and values are not checked here: :func:`check_solver_options` checks them against
    the solver's own option list.

    Raises
    ------
    ValueError
        An item without ``=`` or with an empty key (the message names the item).
    """
    out = {}
    for item in pairs or ():
        key, sep, val = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"solver option {item!r}: expected KEY=VALUE, e.g. max_iter=500")
        key, val = key.strip(), val.strip()
        for conv in (int, float):
            try:
                out[key] = conv(val)
                break
            except ValueError:
                continue
        else:
            out[key] = val
    return out


CHECKED_SOLVERS = ("lap_ipopt", "ipopt", "ipopt_v2")
"""Solvers whose options :func:`check_solver_options` checks before anything is built; the
options of any other solver are passed through unchecked."""

_ASL_OWN = {
    # the ipopt executable's own AMPL keywords (`ipopt -=`), which are not options of the IPOPT
    # library: name -> the library option it stands for, or (kind, values / range)
    "maxit": "max_iter",
    "outlev": "print_level",
    "halt_on_ampl_error": ("string", ("yes", "no")),
    "wantsol": ("integer", (0, 15)),
}


class SolverOptionError(ValueError):
    """A solver option that the solver would refuse: ``key``, ``value``, ``solver`` and
    ``text`` (what was expected). The message is ``solver option KEY = VALUE: TEXT`` (the
    command line says ``--solver-option KEY=VALUE: TEXT``)."""

    def __init__(self, key: str, value, text: str, solver: str = ""):
        super().__init__(f"solver option {key} = {value!r}: {text}")
        self.key, self.value, self.text, self.solver = key, value, text, solver


def _asl_command_line_options() -> Optional[set]:
    """The names the classic ``ipopt`` interface passes on the executable's command line:
    its AMPL keywords (the list of ``ipopt -=``, as Pyomo keeps it), or None if unknown."""
    return set(ipopt_command_line_options)


def _own_option_error(solver: str, key: str, value) -> str:
    """Why ``lap_ipopt`` refuses ``key = value`` of its own options ('' if it takes it)."""
    try:
        LapIpopt.CONFIG()[key] = value
    except (ValueError, TypeError) as exc:
        return (f"not accepted ({error_text(exc)}); {solver}'s option {key}: "
                f"{LapIpopt.CONFIG.get(key)._description}")
    return ""


def _asl_keyword_error(key: str, value, rule) -> str:
    """Why the ipopt executable refuses its own keyword ``key = value`` ('' if it takes it);
    ``rule`` is ``("string", values)`` or ``("integer", (lower, upper))``."""
    if rule[0] == "string":
        text = ("yes" if value else "no") if isinstance(value, bool) else value
        return "" if text in rule[1] else "expected one of " + ", ".join(map(repr, rule[1]))
    lo, hi = rule[1]
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if isinstance(value, bool) or number is None or not number.is_integer() \
            or not lo <= number <= hi:
        return f"expected an integer with {lo} <= {key} <= {hi}"
    return ""


def check_solver_options(solver: str, options: Optional[dict]) -> dict:
    """Check solver options against the solver's own option list, before anything is built.

    * ``lap_ipopt`` (default): its own options (``compile``, ``verify_points``,
      ``eliminate_derivatives``, ``tune_process``, ``eval_threads``: the domains of
      :class:`pyomo_lap.solvers.lap.solver.LapIpoptConfig`) and the options of the IPOPT
      library it solves with, as that library documents and accepts them
      (:func:`pyomo_lap.solvers.lap.ipopt_options.check_ipopt_option`: name, type, range, values);
    * ``ipopt`` (Pyomo's classic interface to the executable): the names the executable takes
      on its command line (its AMPL keywords, ``ipopt -=``) and, with the prefix ``OF_``
      (written to an options file), every IPOPT option; values checked as above, against the
      IPOPT 3.14 library of the casadi wheel (the executable may be another version);
    * ``ipopt_v2``: every IPOPT option and the executable's keywords ``maxit``, ``outlev``,
      ``halt_on_ampl_error`` (not ``wantsol`` nor ``option_file_name``, which Pyomo sets);
    * any other solver: not checked (returned as given).

    A ``linear_solver`` must be one IPOPT can load, and an ``output_file`` in an existing
    folder (:func:`_check_loadable`). Without a usable IPOPT library the solver checks them.

    Parameters
    ----------
    solver : str
        Pyomo solver name.
    options : dict or None
        ``{name: value}`` as given (values: str, bool, int or float).

    Returns
    -------
    dict
        The options, unchanged.

    Raises
    ------
    SolverOptionError (a ValueError)
        The first option the solver would refuse: an unknown name (with the closest names), a
        value of the wrong type, outside the option's range or not among its values, a linear
        solver IPOPT cannot load; naming the option, the value and what was expected.
    """
    options = dict(options or {})
    if solver not in CHECKED_SOLVERS or not options:
        return options
    try:
        docs = ipopt_options.ipopt_options_documentation()
    except Exception:  # noqa: BLE001 - no usable library: the solver itself will report
        docs = None
    asl_keywords = _asl_command_line_options() if solver == "ipopt" else None
    own = _OWN_OPTIONS if solver == DEFAULT_SOLVER else ()
    extra = tuple(own) + (tuple(_ASL_OWN) if solver != DEFAULT_SOLVER else ())

    def refuse(key, value, text):
        raise SolverOptionError(key, value, text, solver)

    def ipopt_option(key, name, value):
        try:
            ipopt_options.check_ipopt_option(name, value, extra_names=extra)
        except ipopt_options.IpoptOptionError as exc:
            if exc.suggestions is None:
                refuse(key, value, exc.text.replace(name, key) if name != key else exc.text)
            version = ".".join(map(str, ipopt_c.ipopt_version()))
            what = (f"neither one of {solver}'s own ({', '.join(own)}) nor an option of IPOPT "
                    f"{version}" if own else f"not an option of IPOPT {version}")
            hint = (f"did you mean {' or '.join(map(repr, exc.suggestions))}?" if exc.suggestions
                    else f"IPOPT's options: {ipopt_c.OPTIONS_URL}")
            refuse(key, value, f"unknown option of {solver}: {what}; {hint}")

    for key, value in options.items():
        if not isinstance(key, str) or not key.strip():
            refuse(key, value, "expected an option name (a non-empty string)")
        if key in own:
            why = _own_option_error(solver, key, value)
            if why:
                refuse(key, value, why)
            continue
        if key in _OWN_OPTIONS:
            refuse(key, value, f"an option of {DEFAULT_SOLVER}, not of {solver}")
        if docs is None:
            continue
        if key.startswith("OF_") and solver != "ipopt":
            refuse(key, value, "the prefix OF_ is for Pyomo's classic interface (--solver "
                               f"ipopt); with {solver}, give {key[3:]!r}")
        if key.startswith("OF_"):        # classic ipopt: written to an options file
            ipopt_option(key, key[3:], value)
            continue
        if solver == "ipopt_v2" and key in ("wantsol", "option_file_name"):
            refuse(key, value, "set by Pyomo's ipopt_v2 interface itself; leave it out")
        if solver != DEFAULT_SOLVER and key in _ASL_OWN:
            rule = _ASL_OWN[key]
            if isinstance(rule, str):
                ipopt_option(key, rule, value)
            elif _asl_keyword_error(key, value, rule):
                refuse(key, value, _asl_keyword_error(key, value, rule))
            continue
        if asl_keywords is not None and key not in asl_keywords and key in docs:
            refuse(key, value, f"the ipopt executable takes {key!r} only from an options file: "
                               f"give it as OF_{key} (Pyomo's classic interface writes the OF_ "
                               "options to one), or use --solver ipopt_v2 or lap_ipopt")
        ipopt_option(key, key, value)
    return _check_loadable(solver, options, refuse) if docs is not None else options


def _check_loadable(solver: str, options: dict, refuse) -> dict:
    """Refuse (through ``refuse(key, value, text)``) a ``linear_solver`` (``OF_linear_solver``)
    that the solver's IPOPT cannot load, asked of IPOPT itself
    (:func:`pyomo_lap.solvers.linear_solvers.linear_solver_refusal`), and an ``output_file``
    whose folder does not exist; returns ``options``."""
    plain = {k[3:] if k.startswith("OF_") else k: (k, v) for k, v in options.items()}
    if "output_file" in plain:
        key, value = plain["output_file"]
        folder = Path(str(value)).expanduser().parent
        if not str(value).strip() or not folder.is_dir():
            refuse(key, value, f"expected a file in an existing folder ({str(folder)!r} is not "
                               "one); IPOPT writes its log there")
    if "linear_solver" in plain:
        key, value = plain["linear_solver"]
        libraries = {k: plain[k][1] for k in LIBRARY_OPTIONS if k in plain}
        why = linear_solver_refusal(solver, str(value), libraries)
        if why:
            refuse(key, value, why)
    return options


def solve_model(m, solver: str = DEFAULT_SOLVER, options: Optional[dict] = None, tee: bool = False,
                load_partial: bool = True, intermediate=None, warm_start: bool = True) -> SolveReport:
    """Solve a model and report plainly.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    solver : str
        Pyomo solver name: ``lap_ipopt`` (default, the fast path), ``ipopt`` (the classic
        ASL path), ``ipopt_v2`` (Pyomo's newer interface to the same executable), or any
        other name Pyomo knows.
    options : dict, optional
        Solver options passed through unchanged; for the ASL path they update
        :data:`DEFAULT_IPOPT_OPTIONS`, for ``lap_ipopt`` its own defaults
        (:data:`pyomo_lap.solvers.lap.solver.LAP_IPOPT_OPTIONS`).
    tee : bool
        Stream the solver's output (iterations) to stdout.
    load_partial : bool
        Load the solver's last point into the model also when it did not converge (the
        report says it is not optimal).
    intermediate : callable, optional
        ``lap_ipopt`` only (ignored by the other solvers): called at every IPOPT iteration with
        IPOPT's values (:class:`pyomo_lap.util.progress.IterationProgress`; the ``intermediate``
        option of :class:`pyomo_lap.solvers.lap.solver.LapIpopt`).
    warm_start : bool
        ``lap_ipopt`` and ``ipopt``: keep IPOPT's multipliers in the model after an optimal
        solve, and start from the model's solution (its primal point and those multipliers,
        IPOPT's warm-start options) when it holds one: a re-solve after a car parameter was
        changed (``m.vehicle.aero.Cz1.fix(0.6)``), :func:`pyomo_lap.ocp.build.set_vehicle`, a
        parameter fixed or freed or a constraint added (:mod:`pyomo_lap.solvers.warm_start`).
        A warm start that does not end optimal is solved again from the same point, cold.
        ``report.warm_start`` says which it was. False: every solve starts cold (IPOPT's
        initialization from the model's values only) and nothing is kept.

    Returns
    -------
    SolveReport

    Raises
    ------
    SolverNotFoundError
    SolveInterrupted (a KeyboardInterrupt)
        Ctrl-C during the solve: the solver process is stopped, its temporary files are
        removed and the model keeps its previous values; ``exc.report`` tells the time and
        the iterations seen, ``exc.load_iterate`` loads ``lap_ipopt``'s last iterate.

    Notes
    -----
    Failures are not raised but reported: ``report.ok`` is False and ``report.kind``,
    ``report.describe()`` say what happened (iteration limit, local infeasibility,
    restoration failure, evaluation error, bad option, ...), with a hint.
    """
    opt = ensure_solver(solver)
    refresh_cars(m)          # every pyomo_lap car takes its parameters as m.vehicle holds them
    opts = dict(DEFAULT_IPOPT_OPTIONS) if solver in ASL_SOLVERS else {}
    if not (warm_start and solver in ws.WARM_START_SOLVERS):
        opts.update(options or {})
        return _solve_once(m, opt, solver, opts, tee, load_partial, intermediate)
    ws.declare_multiplier_suffixes(m)
    warm = ws.holds_multipliers(m) and "warm_start_init_point" not in (options or {})
    first = None
    if warm:
        restore = ws.primal_snapshot(m)
        effective = {**_solver_defaults(solver), **(options or {})}
        first = _solve_once(m, opt, solver, {**opts, **ws.warm_start_options(effective),
                                             **(options or {})}, tee, load_partial, intermediate)
        first.warm_start = "warm"
        if first.ok:
            ws.keep_multipliers(m)
            return first
        restore()            # from the same point again, cold
    if "warm_start_init_point" not in (options or {}):
        ws.forget_multipliers(m)            # a cold solve (the caller's own warm start keeps them)
    report = _solve_once(m, opt, solver, {**opts, **(options or {})}, tee, load_partial,
                         intermediate)
    if report.ok:
        ws.keep_multipliers(m)
    else:
        ws.forget_multipliers(m)         # the point loaded is not the multipliers' optimum
    if first is not None:
        report.warm_start = (f"cold after a failed warm start ({first.kind}, "
                             f"{first.iterations} iterations, {first.solve_time_s:.1f} s)")
        report.solve_time_s += first.solve_time_s
    return report


def _solver_defaults(solver: str) -> dict:
    """The IPOPT options a solver path uses unless told otherwise."""
    if solver == DEFAULT_SOLVER:
        return dict(LAP_IPOPT_OPTIONS)
    return dict(DEFAULT_IPOPT_OPTIONS) if solver in ASL_SOLVERS else {}


def _solve_once(m, opt, solver: str, opts: dict, tee: bool, load_partial: bool,
                intermediate) -> SolveReport:
    """One solve of ``m`` with ``opt`` and the options ``opts`` (:func:`solve_model`)."""
    new = _new_interface(opt)
    if new is not None:
        exe = _venv_bin() / "ipopt"
        if "ipopt" in solver and exe.exists() and not new.available():
            new.config.executable = str(exe)     # .venv/bin/ipopt, venv not activated
        return _solve_new_interface(m, new, solver, opts, tee, load_partial, intermediate)
    opt.options.update(opts)
    fd, logfile = tempfile.mkstemp(prefix="pyomo_lap_", suffix=".log")
    os.close(fd)
    depth = _tempfile_depth()
    pyomo_log = io.StringIO()
    t0 = time.perf_counter()
    try:
        # Pyomo's own log lines about a failed solve (the whole solver log, again) are
        # captured: the report says what happened, and tee shows the solver's output
        with LoggingIntercept(pyomo_log, "pyomo", logging.WARNING):
            try:
                res = opt.solve(m, tee=tee, load_solutions=False, logfile=logfile)
            except NotImplementedError:   # interfaces that take no log file (appsi_ipopt ...)
                res = opt.solve(m, tee=tee, load_solutions=False)
    except KeyboardInterrupt:
        elapsed = time.perf_counter() - t0
        _drop_tempfiles(depth)
        log = _read_and_remove(logfile)
        raise SolveInterrupted(SolveReport(
            False, "userInterrupt", "aborted", "interrupted (SIGINT)", _iterations(log, True),
            elapsed, solver, log, *_sizes(log), _exit_line(log), kind="interrupted",
            explanation=_HINTS["interrupted"][0], hint=_HINTS["interrupted"][1])) from None
    except Exception as exc:  # the solver crashed or returned an error code
        _drop_tempfiles(depth)
        log = _read_and_remove(logfile) or pyomo_log.getvalue()
        return SolveReport(False, "error", "error", f"{type(exc).__name__}: {exc}",
                           _iterations(log, True), time.perf_counter() - t0, solver, log,
                           *_sizes(log), _exit_line(log))
    elapsed = time.perf_counter() - t0
    log = _read_and_remove(logfile)
    tc = res.solver.termination_condition
    ok = tc in (TerminationCondition.optimal, TerminationCondition.locallyOptimal)
    if pyomo_log.getvalue().strip():   # kept in the report; passed on after a good solve
        log += "\n--- Pyomo's messages ---\n" + pyomo_log.getvalue()
        if ok:
            logging.getLogger(__name__).warning(pyomo_log.getvalue().strip())
    if ok or (load_partial and len(res.solution) > 0):
        with LoggingIntercept(io.StringIO(), "pyomo", logging.WARNING):  # "warning status"
            m.solutions.load_from(res)
    return SolveReport(ok, str(tc), str(res.solver.status), str(res.solver.message or ""),
                       _iterations(log, not ok), elapsed, solver, log, *_sizes(log),
                       _exit_line(log))


def _tempfile_depth() -> int:
    return len(getattr(TempfileManager, "_context_stack", None) or [])


def _drop_tempfiles(depth: int) -> None:
    """Remove the temporary files (NL, solution, options) of a solve that did not return:
    Pyomo pops its temporary-file context only after a solve completes."""
    try:
        while _tempfile_depth() > depth:
            TempfileManager.pop(remove=True)
    except Exception:  # never hide the original problem behind a clean-up failure
        pass


def _solve_new_interface(m, opt, solver, opts, tee, load_partial, intermediate=None) -> SolveReport:
    """Solve through a :mod:`pyomo.contrib.solver` interface; the report uses the classic
    names of the termination conditions (``optimal``, ``maxIterations``...) so that runs made
    with either interface read alike."""
    t0 = time.perf_counter()
    try:
        with gc_paused():
            more = {"intermediate": intermediate} if intermediate is not None and \
                "intermediate" in getattr(opt, "CONFIG", {}) else {}
            res = opt.solve(m, tee=tee, load_solutions=False,
                            raise_exception_on_nonoptimal_result=False, solver_options=opts,
                            **more)
    except KeyboardInterrupt as exc:
        log = getattr(exc, "solver_log", "") or ""
        partial = getattr(exc, "ipopt_result", None)
        raise SolveInterrupted(SolveReport(
            False, "userInterrupt", "aborted", "interrupted (SIGINT)",
            getattr(partial, "iterations", None) if partial is not None else _iterations(log, True),
            time.perf_counter() - t0, solver, log, *_sizes(log), _exit_line(log),
            kind="interrupted", explanation=_HINTS["interrupted"][0],
            hint=_HINTS["interrupted"][1]), getattr(exc, "load_iterate", None)) from None
    except (NotImplementedError, ValueError) as exc:
        # the model could not be translated (lap_ipopt) or an option was refused: say so
        # plainly, as a failed solve, before anything ran
        kind = "bad_option" if "option" in str(exc) else "solver_error"
        return SolveReport(False, "error", "error", f"{type(exc).__name__}: {exc}", None,
                           time.perf_counter() - t0, solver, str(exc), None, None, "",
                           kind=kind, explanation=f"{_HINTS[kind][0]}: {exc}",
                           hint=_HINTS[kind][1] if kind == "solver_error" else
                           "check the option's name and value (IPOPT's options: "
                           "https://coin-or.github.io/Ipopt/OPTIONS.html)")
    except Exception as exc:  # the solver crashed or returned an error code
        if getattr(exc, "explanation", ""):   # says what happened itself (lap_ipopt: a
            # damaged compiled library, pyomo_lap.solvers.lap.checks.CompiledLibraryMismatch)
            return SolveReport(False, "error", "error", f"{type(exc).__name__}: {exc}", None,
                               time.perf_counter() - t0, solver, str(exc), None, None, "",
                               kind="solver_error", explanation=exc.explanation,
                               hint=getattr(exc, "hint", ""))
        return SolveReport(False, "error", "error", f"{type(exc).__name__}: {exc}", None,
                           time.perf_counter() - t0, solver, "", None, None, "")
    elapsed = time.perf_counter() - t0
    log = getattr(res, "solver_log", "") or ""
    tc = res.termination_condition
    ok = tc == TC.convergenceCriteriaSatisfied and res.solution_status in (
        SolutionStatus.optimal, SolutionStatus.feasible)
    if ok or (load_partial and res.solution_status != SolutionStatus.noSolution):
        res.solution_loader.load_vars()
        if ok:       # duals (suffix 'dual'), reduced costs ('rc'), IPOPT's bound multipliers
            try:
                res.solution_loader.load_import_suffixes()
            except (NotImplementedError, AttributeError):
                pass
    legacy_tc = legacy_termination_condition_map.get(tc, tc)
    status = legacy_solver_status_map.get(tc, "unknown")
    if solver == DEFAULT_SOLVER and tc in (TC.iterationLimit, TC.locallyInfeasible, TC.maxTimeLimit):
        status = "warning"     # as Pyomo's classic ipopt reports these (the same words either path)
    iters = res.extra_info.iteration_count if "iteration_count" in res.extra_info else None
    report = SolveReport(ok, str(legacy_tc), str(status), str(tc.name), iters if iters is not None
                         else _iterations(log), elapsed, solver, log, *_sizes(log), _exit_line(log))
    report.details = {k: res.extra_info[k] for k in ("ipopt_s", "translate_s", "compile_s",
                                                     "verify_s", "function_s", "function_calls",
                                                     "translation")
                      if k in res.extra_info}
    return report


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
