r"""``lap_ipopt``: the fast solver path, a Pyomo solver like any other.

>>> import pyomo.environ as pyo
>>> import pyomo_lap                                   # registers the solver
>>> opt = pyo.SolverFactory("lap_ipopt")               # doctest: +SKIP
>>> results = opt.solve(m, tee=True)                   # doctest: +SKIP

It takes a built Pyomo model, with whatever constraints, objective, fixed variables and bounds
the user changed, translates it into a nonlinear program whose rows are evaluated by compiled
CasADi functions (:class:`pyomo_lap.solvers.lap.nlp.LapNLP`: the recorded per-point rows of a pyomo_lap
model as one mapped function, the rest from their Pyomo expressions), and solves it with IPOPT
3.14 (MUMPS, QAMD ordering) from the ``casadi`` wheel through IPOPT's C interface
(:mod:`pyomo_lap.solvers.lap.ipopt_c`): no NL file, no AMPL solver library, nothing to compile by hand.
Primal values, constraint duals (suffix ``dual``), reduced costs (``rc``) and IPOPT's bound
multipliers (``ipopt_zL_out``, ``ipopt_zU_out``), the termination condition and the iteration
count are loaded back into Pyomo, so everything downstream works unchanged.

The solver is registered with Pyomo's newer solver factory (``pyomo.contrib.solver``), which
also registers a wrapper with the classic ``pyomo.environ.SolverFactory``.

Sign conventions (those of Pyomo's ``ipopt`` interface, checked in the tests): the dual of a
row is :math:`\partial f^*/\partial b`, the sensitivity of the optimal objective to the row's
bound :math:`b`; ``rc`` likewise for a variable's active bound; for a minimization
``ipopt_zL_out >= 0`` and ``ipopt_zU_out <= 0`` (the other way round for a maximization).
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
from pyomo.common.collections import ComponentMap
from pyomo.common.config import Bool, ConfigValue, In, NonNegativeInt
from pyomo.common.dependencies import attempt_import
from pyomo.contrib.solver.common.base import Availability, SolverBase
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import (
    Results,
    SolutionStatus,
    TerminationCondition,
)
from pyomo.contrib.solver.common.solution_loader import (
    NoSolutionSolutionLoader,
    SolutionLoader,
)
from pyomo.contrib.solver.common.util import NoOptimalSolutionError, NoSolutionError
from pyomo.core.base.suffix import Suffix
from pyomo.core.staleflag import StaleFlagManager

from ...util.memory import release_free_memory
from ...util.overlap import solver_starts
from ...util.processes import process_running
from .car_blocks import refresh_cars
from .ipopt_c import find_ipopt_library, ipopt_version, load_ipopt_library
from .ipopt_problem import IpoptProblem
from .nlp import LapNLP
from .reduced import ReducedNLP

casadi, casadi_available = attempt_import("casadi")

__all__ = ["LapIpopt", "LAP_IPOPT_OPTIONS", "SOLVER_NAME", "IPOPT_LOG_PREFIX",
           "remove_stale_ipopt_logs"]

SOLVER_NAME = "lap_ipopt"

LAP_IPOPT_OPTIONS = {
    "linear_solver": "mumps",
    "mumps_pivot_order": 6,         # QAMD: the fastest MUMPS ordering measured on these KKT systems
    # MUMPS's own scalings stay on (IPOPT's defaults): off (mumps_scaling=0,
    # mumps_permuting_scaling=0) the full car's laps took 4-16 % less IPOPT time with the same
    # iterations, but the racecar model took 52 iterations instead of 23 (docs/solvers.md)
    # no residual check of each step's linear system (a verification solve with it): the same
    # iterations and lap times (to 2e-11) on 7 laps and the other models, 17-23 % less IPOPT time
    "fast_step_computation": "yes",
    "mu_strategy": "monotone",
    "tol": 1e-5,
    "acceptable_tol": 1e-4,
    "max_iter": 3000,
}
"""IPOPT options of :class:`LapIpopt` unless the caller overrides them (docs/solvers.md)."""

IPOPT_LOG_PREFIX = "pyomo_lap_ipopt_"
"""IPOPT's log file of a solve, in the temporary folder, is ``<prefix><pid>_<random>.log``
(removed after the solve; those of killed processes by :func:`remove_stale_ipopt_logs`)."""


def remove_stale_ipopt_logs(directory=None) -> list:
    """Remove the IPOPT log files (``pyomo_lap_ipopt_<pid>_*.log``) of processes that are no
    longer running (killed by SIGKILL during a solve), from ``directory`` (default: the
    temporary folder, :func:`tempfile.gettempdir`). Called at the start of every solve.

    Returns
    -------
    list of Path
        The files removed.
    """
    folder = Path(directory) if directory is not None else Path(tempfile.gettempdir())
    removed = []
    try:
        candidates = list(folder.glob(IPOPT_LOG_PREFIX + "*.log"))
    except OSError:
        return removed
    for f in sorted(candidates):
        m = re.fullmatch(re.escape(IPOPT_LOG_PREFIX) + r"(\d+)_.*\.log", f.name)
        if m is None or process_running(int(m.group(1))):
            continue
        try:
            f.unlink()
            removed.append(f)
        except OSError:
            pass
    return removed


# IPOPT return status -> (termination condition, solution status, EXIT line of the log)
_STATUS = {
    0: (TerminationCondition.convergenceCriteriaSatisfied, SolutionStatus.optimal),
    1: (TerminationCondition.convergenceCriteriaSatisfied, SolutionStatus.feasible),
    2: (TerminationCondition.locallyInfeasible, SolutionStatus.infeasible),
    3: (TerminationCondition.error, SolutionStatus.infeasible),
    4: (TerminationCondition.unbounded, SolutionStatus.infeasible),
    5: (TerminationCondition.interrupted, SolutionStatus.infeasible),
    6: (TerminationCondition.convergenceCriteriaSatisfied, SolutionStatus.feasible),
    -1: (TerminationCondition.iterationLimit, SolutionStatus.infeasible),
    -2: (TerminationCondition.error, SolutionStatus.infeasible),
    -3: (TerminationCondition.error, SolutionStatus.infeasible),
    -4: (TerminationCondition.maxTimeLimit, SolutionStatus.infeasible),
    -5: (TerminationCondition.maxTimeLimit, SolutionStatus.infeasible),
}


@contextlib.contextmanager
def _tuned_process(enabled: bool = True):
    """Process settings for a large IPOPT solve, restored afterwards (Linux, glibc).

    * glibc's allocator keeps freed memory and does not use ``mmap`` for large blocks
      (``mallopt``: ``M_MMAP_MAX = 0``, ``M_TRIM_THRESHOLD`` 2 GB, ``M_TOP_PAD`` 256 MB).
      MUMPS allocates and frees its work space at every factorization; by default each large
      block is a fresh ``mmap`` whose pages the kernel zeroes again: 8 of the 61 s of IPOPT's
      own time on the full lap were system time, 1 s with these settings;
    * the OpenBLAS of the casadi wheel (MUMPS's dense kernels) runs on one thread: its second
      thread spun on the second core (more system time, no gain in wall time) while the
      per-point functions run their own threads.
    """
    if not enabled or not sys.platform.startswith("linux"):
        yield
        return
    restore = []
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
        for param, value, default in ((M_MMAP_MAX, 0, 65536),
                                      (M_TRIM_THRESHOLD, 2_000_000_000, 128 * 1024),
                                      (M_TOP_PAD, 256 * 1024 * 1024, 128 * 1024)):
            if mallopt(param, value):
                restore.append(lambda p=param, d=default: mallopt(p, d))
        restore.append(lambda: libc.malloc_trim(0))
    except (OSError, AttributeError):
        pass
    try:
        for lib in sorted(find_ipopt_library().parent.glob("libcasadi-tp-openblas.so*")):
            blas = ctypes.CDLL(str(lib))
            before = blas.openblas_get_num_threads()
            blas.openblas_set_num_threads(1)
            restore.append(lambda b=blas, n=before: b.openblas_set_num_threads(n))
            break
    except Exception:   # another BLAS, or none: nothing to tune
        pass
    try:
        yield
    finally:
        for undo in reversed(restore):
            try:
                undo()
            except Exception:
                pass


def _verify_points(value):
    """Domain of ``verify_points``: ``"all"`` or an integer >= 0 (``"8"`` and 8.0 too)."""
    if value == "all":
        return value
    if not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
        if number is not None and number.is_integer() and number >= 0:
            return int(number)
    raise ValueError(f"expected 'all' or an integer >= 0, not {value!r}")


def _callable_or_none(value):
    """Domain of ``intermediate``: a callable or None."""
    if value is None or callable(value):
        return value
    raise ValueError(f"expected a callable intermediate(info) or None, not {value!r}")


class LapIpoptConfig(SolverConfig):
    """Options of :class:`LapIpopt` (besides Pyomo's common solver options)."""

    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None,
                 visibility=0):
        super().__init__(description=description, doc=doc, implicit=implicit,
                         implicit_domain=implicit_domain, visibility=visibility)
        self.compile: str = self.declare("compile", ConfigValue(
            default="auto", domain=In(["auto", "compile", "vm"]),
            description="how the per-point functions run: 'compile' to machine code (cached), "
                        "'vm' in CasADi's virtual machine, 'auto' compile when a C compiler is found"))
        self.verify_points = self.declare("verify_points", ConfigValue(
            default=8, domain=_verify_points,
            description="points at which the recorded rows are checked against the model's "
                        "expressions before the solve, or 'all'"))
        self.eliminate_derivatives: bool = self.declare("eliminate_derivatives", ConfigValue(
            default=True, domain=Bool,
            description="eliminate pyomo.dae's derivative variables and their collocation "
                        "equations before IPOPT sees the problem (pyomo_lap.solvers.lap.reduced.ReducedNLP): "
                        "the same solutions and duals, a third fewer unknowns in the KKT system"))
        self.tune_process: bool = self.declare("tune_process", ConfigValue(
            default=True, domain=Bool,
            description="during the solve, keep freed memory in the allocator and run the BLAS "
                        "on one thread (see pyomo_lap.solvers.lap.solver._tuned_process)"))
        self.eval_threads: int = self.declare("eval_threads", ConfigValue(
            default=0, domain=NonNegativeInt,
            description="threads of the per-point functions (0: the number of CPUs, at most 4)"))
        self.intermediate = self.declare("intermediate", ConfigValue(
            default=None, domain=_callable_or_none,
            description="called at every IPOPT iteration with IPOPT's info dict (iter_count, "
                        "obj_value, inf_pr, inf_du, mu, d_norm, regularization_size, alpha_du, "
                        "alpha_pr, ls_trials, alg_mod); False stops IPOPT; its finish() method, "
                        "if any, is called when the solve ends "
                        "(pyomo_lap.util.progress.IterationProgress)"))


_OWN_OPTIONS = ("compile", "verify_points", "eliminate_derivatives", "tune_process", "eval_threads")
"""Options of :class:`LapIpoptConfig` that may be given among the solver options."""


class LapSolutionLoader(SolutionLoader):
    """Primal and dual values of a :class:`LapIpopt` solve."""

    def __init__(self, model, nlp, x, mult_g, mult_x_L, mult_x_U, sense: int):
        self._pyomo_model = model
        self._nlp = nlp
        self._x = np.asarray(x, dtype=float)
        # Pyomo's sign convention (that of its ipopt interface): minus IPOPT's multipliers,
        # of the original objective's sense
        self._duals = -np.asarray(mult_g, dtype=float) * sense
        self._zl = np.asarray(mult_x_L, dtype=float) * sense
        self._zu = -np.asarray(mult_x_U, dtype=float) * sense

    def get_number_of_solutions(self) -> int:
        return 1

    def get_solution_ids(self):
        return [None]

    def get_vars(self, vars_to_load: Optional[Sequence] = None):
        vals = ComponentMap(zip(self._nlp.variables, self._x.tolist()))
        if vars_to_load is None:
            return vals
        return ComponentMap((v, vals[v]) for v in vars_to_load if v in vals)

    def load_vars(self, vars_to_load: Optional[Sequence] = None) -> None:
        if vars_to_load is None:
            for v, val in zip(self._nlp.variables, self._x.tolist()):
                v.set_value(val, skip_validation=True)
        else:
            for v, val in self.get_vars(vars_to_load).items():
                v.set_value(val, skip_validation=True)
        StaleFlagManager.mark_all_as_stale(delayed=True)

    def get_duals(self, cons_to_load: Optional[Sequence] = None) -> Dict:
        duals = dict(zip(self._nlp.constraints, self._duals.tolist()))
        if cons_to_load is None:
            return duals
        return {c: duals[c] for c in cons_to_load if c in duals}

    def get_reduced_costs(self, vars_to_load: Optional[Sequence] = None):
        rc = ComponentMap(zip(self._nlp.variables, (self._zl + self._zu).tolist()))
        if vars_to_load is None:
            return rc
        return ComponentMap((v, rc[v]) for v in vars_to_load if v in rc)

    def load_import_suffixes(self) -> None:
        suffixes = self._collect_and_clear_import_suffixes()
        if "dual" in suffixes:
            suffixes["dual"].update(self.get_duals())
        if "rc" in suffixes:
            suffixes["rc"].update(self.get_reduced_costs())
        if "ipopt_zL_out" in suffixes:
            suffixes["ipopt_zL_out"].update(zip(self._nlp.variables, self._zl.tolist()))
        if "ipopt_zU_out" in suffixes:
            suffixes["ipopt_zU_out"].update(zip(self._nlp.variables, self._zu.tolist()))


@SolverFactory.register(SOLVER_NAME, doc="IPOPT 3.14 on the model evaluated by compiled CasADi "
                        "functions (pyomo_lap's fast path)")
class LapIpopt(SolverBase):
    """IPOPT 3.14 on a Pyomo model evaluated by compiled CasADi functions (module docstring).

    ``solve(model, tee=False, load_solutions=True, solver_options=None, ...)`` returns a
    :class:`pyomo.contrib.solver.common.results.Results`; ``results.solver_log`` is IPOPT's
    log, ``results.extra_info`` holds ``iteration_count``, ``ipopt_status``, the translation
    report (sizes, times, checks), ``evaluation`` (how the rows were evaluated:
    :attr:`pyomo_lap.solvers.lap.nlp.TranslationReport.evaluation`) and the time split of the
    solve (``ipopt_s``, ``function_s`` by callback, ``translate_s``, ``compile_s``). The solver
    keeps the last solve's results as ``last_results``: through ``pyomo.environ.SolverFactory``
    (whose results do not carry ``extra_info``), ``opt.last_results.extra_info.evaluation``.

    A pyomo_lap model is found through Pyomo's component tree (its car block ``m.vehicle``,
    :mod:`pyomo_lap.solvers.lap.car_blocks`): a user's model that holds one as a block
    (``u.lap = build_model(track, car)``, with the user's own rows and objective) gets the
    compiled evaluation of its car's rows, and every car takes the parameters its ``m.vehicle``
    holds before the solve (``m.vehicle.refresh()``).

    Raises
    ------
    NotImplementedError, ValueError, pyomo_lap.solvers.lap.checks.RecordedRowsMismatch
        Before solving, when the model cannot be translated (see
        :class:`pyomo_lap.solvers.lap.nlp.LapNLP`).
    KeyboardInterrupt
        Ctrl-C during the solve: IPOPT is stopped cleanly at its next iteration and the model
        keeps its values; ``exc.load_iterate()`` (None if IPOPT made no iteration) loads
        IPOPT's last iterate into the model and returns its iteration number.
    """

    CONFIG = LapIpoptConfig()

    def __init__(self, **kwds):
        super().__init__(**kwds)
        self.last_results = None

    def available(self) -> Availability:
        """Whether IPOPT's library and CasADi can be loaded."""
        try:
            load_ipopt_library()
        except Exception:
            return Availability.NotFound
        return Availability.FullLicense

    def version(self):
        """IPOPT's version (a tuple), or None when its library cannot be loaded."""
        try:
            return ipopt_version()
        except Exception:
            return None

    def solve(self, model, **kwds) -> Results:
        """Solve ``model`` (class docstring)."""
        start = time.perf_counter()
        refresh_cars(model)      # every pyomo_lap car takes its parameters as m.vehicle holds them
        results = Results()
        results.timing_info.start_timestamp = datetime.datetime.now(datetime.timezone.utc)
        results.solver_name = self.name
        results.solver_version = self.version()
        config, user = self._config(kwds)
        StaleFlagManager.mark_all_as_stale()
        nlp = _translate(model, config)
        timers = {k: 0.0 for k in ("f", "grad_f", "g", "jac_g", "h")}
        counts = {k: 0 for k in timers}
        options = _ipopt_options(config, user)
        output = options.pop("output_file", None)       # the user's log file: _run writes it
        prob, print_level = _ipopt_problem(nlp, options, bool(config.tee), timers, counts)
        prob.intermediate = config.intermediate
        mults = start_multipliers(model, nlp, options)
        t_solve = time.perf_counter()
        try:
            res, log = _run(prob, nlp.x0, print_level, config.tune_process, output, mults)
        except KeyboardInterrupt as exc:
            exc.load_iterate = _iterate_loader(model, nlp, getattr(exc, "ipopt_result", None))
            raise
        finally:
            getattr(config.intermediate, "finish", lambda: None)()
        results.extra_info.ipopt_s = time.perf_counter() - t_solve
        _fill_results(results, model, nlp, res, log, timers, counts)
        ss = results.solution_status
        if config.raise_exception_on_nonoptimal_result and ss != SolutionStatus.optimal:
            raise NoOptimalSolutionError()
        if config.load_solutions:
            if ss == SolutionStatus.noSolution:
                raise NoSolutionError()
            results.solution_loader.load_solution()
        results.solver_config = config
        results.timing_info.wall_time = time.perf_counter() - start
        self.last_results = results      # also for pyomo.environ.SolverFactory's legacy results
        return results

    def _config(self, kwds):
        """The solve's configuration and the IPOPT options given; this solver's own options
        may also come with the IPOPT options (the CLI's --solver-option, Pyomo's legacy
        ``options``): they are taken out of those."""
        config = self.config(value=kwds, preserve_implicit=True)
        user = dict(config.solver_options.value() if hasattr(config.solver_options, "value")
                    else config.solver_options)
        for key in _OWN_OPTIONS:
            if key in user:
                config[key] = user.pop(key)
        return config, user


def _translate(model, config):
    """The model as an NLP of compiled functions (:class:`~pyomo_lap.solvers.lap.nlp.LapNLP`,
    reduced by :class:`~pyomo_lap.solvers.lap.reduced.ReducedNLP` unless told not to)."""
    nlp = LapNLP(model, compile=config.compile, threads=config.eval_threads or None,
                 verify_points=config.verify_points)
    nlp = ReducedNLP(nlp) if config.eliminate_derivatives else nlp
    # the translation's freed temporaries back to the system before IPOPT and MUMPS allocate:
    # 160 MB of a full lap's peak otherwise (pyomo_lap.util.memory)
    release_free_memory()
    return nlp


def _ipopt_options(config, user: dict) -> dict:
    """:data:`LAP_IPOPT_OPTIONS`, Pyomo's ``time_limit`` as ``max_wall_time``, and the
    user's options."""
    options = dict(LAP_IPOPT_OPTIONS)
    if config.time_limit is not None:           # Pyomo's common option, as IPOPT's
        options["max_wall_time"] = float(config.time_limit)
    options.update(user)
    return options


def _ipopt_problem(nlp, options: dict, tee: bool, timers: dict, counts: dict):
    """The :class:`~pyomo_lap.solvers.lap.ipopt_problem.IpoptProblem` of ``nlp`` with its options
    (the log on the console only with ``tee``) and the model's scaling, its callbacks timed
    into ``timers`` and counted into ``counts``; returns it and the print level of the log
    file."""

    def timed(key, fn):
        def wrapper(*args):
            t = time.perf_counter()
            try:
                return fn(*args)
            finally:
                timers[key] += time.perf_counter() - t
                counts[key] += 1
        return wrapper

    prob = IpoptProblem(nlp.n, nlp.m, nlp.x_lb, nlp.x_ub, nlp.g_lb, nlp.g_ub, nlp.jac_rows,
                        nlp.jac_cols, nlp.hess_rows, nlp.hess_cols,
                        objective=timed("f", nlp.objective),
                        gradient=timed("grad_f", nlp.gradient),
                        constraints=timed("g", nlp.constraints_eval),
                        jacobian=timed("jac_g", nlp.jacobian),
                        hessian=timed("h", nlp.hessian))
    if nlp.x_scaling is not None and "nlp_scaling_method" not in options:
        prob.set_scaling(nlp.obj_scaling, nlp.x_scaling, nlp.g_scaling)
        options["nlp_scaling_method"] = "user-scaling"
    print_level = int(options.pop("print_level", 5))
    options["print_level"] = print_level if tee else 0
    options.setdefault("sb", "yes")     # no banner
    file_level = options.pop("file_print_level", None)   # of the log file (_run's)
    for key, val in options.items():
        prob.add_option(key, val)
    return prob, max(print_level, 5) if file_level is None else int(file_level)


def start_multipliers(model, nlp, options: dict):
    """IPOPT's starting multipliers ``(mult_g, mult_x_L, mult_x_U)`` of a warm start, in the
    order of ``nlp``'s rows and variables, read from the model's export suffixes as Pyomo's
    ``ipopt`` interface sends them: ``dual`` (rows), ``ipopt_zL_in`` and ``ipopt_zU_in``
    (bounds), in Pyomo's signs (module docstring); a row or bound the suffixes do not hold
    (a constraint added since) starts at 0. None unless IPOPT's option
    ``warm_start_init_point`` is ``yes`` (IPOPT uses the given multipliers only then) and the
    model has at least one of these suffixes with a value.

    Returns
    -------
    tuple of three ndarray, shapes (m,), (n,), (n,); or None
    """
    if str(options.get("warm_start_init_point", "no")).lower() != "yes":
        return None

    def values(name, items):
        suffix = model.component(name)
        if not isinstance(suffix, Suffix) or not suffix.export_enabled() or len(suffix) == 0:
            return None
        get = suffix.get
        return np.fromiter((get(c, 0.0) or 0.0 for c in items), dtype=float, count=len(items))

    dual = values("dual", nlp.constraints)
    zl = values("ipopt_zL_in", nlp.variables)
    zu = values("ipopt_zU_in", nlp.variables)
    if dual is None and zl is None and zu is None:
        return None
    sense = nlp.sense           # the inverse of LapSolutionLoader's conversion
    mult_g = -dual * sense if dual is not None else np.zeros(nlp.m)
    mult_x_l = zl * sense if zl is not None else np.zeros(nlp.n)
    mult_x_u = -zu * sense if zu is not None else np.zeros(nlp.n)
    if not all(np.isfinite(a).all() for a in (mult_g, mult_x_l, mult_x_u)):
        return None
    return mult_g, mult_x_l, mult_x_u


def _run(prob, x0, print_level: int, tune_process: bool, output_file=None, start=None):
    """Solve with IPOPT's log written to a file at ``print_level``: the user's
    ``output_file`` (kept), else a temporary file (``IPOPT_LOG_PREFIX<pid>_*.log``, removed
    afterwards); returns (the :class:`~pyomo_lap.solvers.lap.ipopt_problem.IpoptResult`, the log).
    IPOPT writes one log file only: the report reads the user's. A KeyboardInterrupt is passed
    on with the log as ``exc.solver_log``."""
    remove_stale_ipopt_logs()
    if output_file is None:
        fd, logfile = tempfile.mkstemp(prefix=f"{IPOPT_LOG_PREFIX}{os.getpid()}_", suffix=".log")
        os.close(fd)
    else:
        logfile = os.fspath(Path(str(output_file)).expanduser())
    prob.set_output_file(logfile, print_level=print_level)
    try:
        try:
            with _tuned_process(tune_process):
                solver_starts()
                res = prob.solve(x0, *(start or ()))
        finally:
            log = Path(logfile).read_text(errors="replace") if os.path.exists(logfile) else ""
            try:
                if output_file is None:
                    os.unlink(logfile)
            except OSError:
                pass
    except KeyboardInterrupt as exc:
        exc.solver_log = log
        raise
    return res, log


def _iterate_loader(model, nlp, res):
    """For an interrupted solve: a function loading IPOPT's last iterate (``res.x``, which
    IPOPT returns when it stops at the user's request: the iterate of its last iteration)
    into ``model`` and returning its iteration number; None when there is none (stopped
    before its first iteration, or not finite)."""
    if res is None or res.iterations < 0 or not np.all(np.isfinite(res.x)):
        return None

    def load() -> int:
        xf, lam, zl, zu = nlp.full_multipliers(res.x, res.mult_g, res.mult_x_L, res.mult_x_U)
        LapSolutionLoader(model, nlp.full, xf, lam, zl, zu, nlp.sense).load_vars()
        return res.iterations
    return load


def _fill_results(results, model, nlp, res, log, timers, counts) -> None:
    """Termination, log, figures and the solution loader of a finished solve."""
    tc, ss = _STATUS.get(res.status, (TerminationCondition.error, SolutionStatus.noSolution))
    results.termination_condition = tc
    results.solution_status = ss
    results.solver_log = log
    info = results.extra_info
    info.iteration_count = res.iterations
    info.ipopt_status = res.status_name
    info.translation = nlp.report
    info.evaluation = nlp.report.evaluation
    info.function_s = dict(timers)
    info.function_calls = dict(counts)
    info.translate_s = nlp.report.translate_s
    info.compile_s = nlp.report.compile_s
    info.verify_s = nlp.report.verify_s
    if np.all(np.isfinite(res.x)):
        xf, lam, zl, zu = nlp.full_multipliers(res.x, res.mult_g, res.mult_x_L, res.mult_x_U)
        results.solution_loader = LapSolutionLoader(model, nlp.full, xf, lam, zl, zu, nlp.sense)
        results.incumbent_objective = float(res.obj) * nlp.sense
    else:
        results.solution_loader = NoSolutionSolutionLoader(model, "IPOPT returned no finite point")
        results.solution_status = SolutionStatus.noSolution
