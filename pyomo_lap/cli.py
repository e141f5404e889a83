"""Command-line interface: ``pyomo-lap solve | sweep | plot | compare | diagnose | channels |
tracks | vehicles``.

Built on click. Errors in the inputs are reported as one clear line and a non-zero exit
code, before any model is built.
"""
from __future__ import annotations

import functools
import math
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import click

from . import __version__

__all__ = ["main"]


def _fail(msg: str, code: int = 2):
    click.secho(f"error: {msg}", fg="red", err=True)
    sys.exit(code)


SELF_CHECK_FAILED = 4
"""Exit code of ``pyomo-lap solve`` for a result that was solved (IPOPT: optimal) and written,
but failed its self-check (:func:`pyomo_lap.post.validate.self_check`): a script must not take
it for a good result."""

_SIGNAL = {"name": "SIGINT (Ctrl-C)", "code": 130}


def _on_sigterm(signum, frame):
    """SIGTERM (a scheduler's kill, `kill PID`) is handled like Ctrl-C: the solver is
    stopped, temporary files are removed, and nothing existing is touched."""
    _SIGNAL.update(name="SIGTERM", code=143)
    raise KeyboardInterrupt


def _state(folder: Path):
    """What identifies the content of a results folder (its summary), or None."""
    try:
        return (folder / "summary.json").read_bytes()
    except OSError:
        return None


def _complete_results(folder) -> None:
    """Stop (exit 2, one line) unless ``folder`` holds the complete results of a run: its
    manifest and the files it lists (:func:`pyomo_lap.post.results.check_results_folder`)."""
    from .post.results import check_results_folder
    try:
        check_results_folder(folder)
    except ValueError as exc:
        _fail(str(exc))


def _unexpected(exc: BaseException):
    """An error that is not a reported failure: one line, no traceback (unless asked)."""
    if os.environ.get("PYOMO_LAP_DEBUG"):
        raise exc
    _fail(f"unexpected {type(exc).__name__}: {exc} (this is a bug in pyomo_lap; run again with "
          "PYOMO_LAP_DEBUG=1 to see the traceback and please report it)", code=3)


_VERBOSITY_KEY = "pyomo_lap.verbosity"


def _verbosity() -> int:
    """How much the running command prints: -1 with ``-q/--quiet``, 1 with ``-v/--verbose``,
    0 otherwise (set by :func:`_add_verbosity`)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_VERBOSITY_KEY, 0) if ctx is not None else 0


class _Echo:
    """``click.echo`` by verbosity, for the library's ``echo`` arguments: ``echo(text)`` prints
    what a command says by default (with ``-q`` only the lines starting with one of ``keep``:
    the result), ``echo.detail(text)`` prints only with ``-v`` (e.g. each step done to the
    track data: :func:`pyomo_lap.api.track_data_lines`)."""

    def __init__(self, level: int, keep: tuple = ()):
        self.level, self.keep = level, tuple(keep)

    def __call__(self, text: str = "") -> None:
        if self.level >= 0 or (self.keep and str(text).startswith(self.keep)):
            click.echo(text)

    def detail(self, text: str = "") -> None:
        if self.level > 0:
            click.echo(text)


_SWEEP_RESULT_LINES = tuple(f"{d}" for d in "0123456789")
"""What ``pyomo-lap sweep -q`` prints: the final count (``'16 cases: 16 solved'``)."""

_SOLVE_RESULT_LINES = ("sector time ", "lap time ", "results written to ",
                       "partial results written to ", "the last iterate written to ",
                       "could not write ", "track repaired",
                       "sector repaired", "track warning")
"""What ``pyomo-lap solve -q`` prints: the result, where it was written, and any repair made
to the inputs."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pyomo-lap")
def main():
    """Minimum-lap-time planning on 3D tracks (Lie-group race-car model, pyomo.dae, IPOPT)."""


_SPELLING = {
    # job option of SOLVE_CONFIG -> how the command line spells it, where not --<name>
    "periodic": (("--full-lap", "periodic"), {"is_flag": True, "help": "the whole closed lap, "
                 "periodic in every state (from the track's start; no --start, --length, "
                 "--initial-speed)"}),
    "refine_mesh": (("--refine-mesh/--no-refine-mesh", "refine_mesh"), {"default": True}),
    "solver_options": (("--solver-option", "solver_options"), {
        "multiple": True, "metavar": "KEY=VALUE",
        "help": "solver option passed through to the solver (repeatable), e.g. max_iter=500"}),
    "ocp_options": (("--ocp-option", "ocp_options"), {
        "multiple": True, "metavar": "KEY=VALUE",
        "help": "another option of the optimal control problem (repeatable), e.g. "
                "adherence=squared, element_length=5, piecewise_constant_controls=true, "
                "K_delta=2; the list with defaults and units: pyomo-lap options, or the "
                "documentation's options page (docs/options.md)"}),
    "free": (("--free", "free"), {"multiple": True, "metavar": "NAME=LOWER:UPPER",
             "help": "optimize this parameter of the car with the trajectory, within the bounds "
                     "(repeatable; setup optimization), e.g. --free aero.Cz1=0.3:0.9 "
                     "--free powertrain.brake_ratio=0.5:0.95; the names: pyomo-lap vehicles "
                     "--template or the workbook's vehicle sheet"}),
    "keep_sum": (("--keep-sum", "keep_sum"), {"multiple": True, "metavar": "A,B[,...]",
                 "help": "hold the sum of these free parameters at its value (repeatable), e.g. "
                         "--keep-sum aero.Cz1,aero.Cz2: a fixed total downforce, a free balance"}),
    "limits": (("--limit", "limits"), {
        "multiple": True, "metavar": "NAME=VALUE",
        "help": "an energy limit over the sector (repeatable), e.g. engine_energy=24MJ, "
                "tyre_energy_fl=0.8MJ (units J, kJ, MJ, Wh, kWh; a bare number is J; names: "
                "docs/energy.md)"}),
    "n_sectors": (("--sectors", "n_sectors"), {}),
    # --warm-start-from: the name before issue 36, kept as an alias
    "warm_start_from": (("--warm-start", "--warm-start-from", "warm_start_from"),
                        {"metavar": "RUN"}),
    "track_width": (("--track-width", "track_width"), {"metavar": "METRES"}),
    "out_dir": (("--out", "out_dir"), {"type": click.Path(file_okay=False)}),
    # the command line streams the solver's iterations with -v/--verbose (added to every
    # command by _add_verbosity, at the end of this module); this entry names it in the tables
    "tee": (("--verbose", "verbose"), {}),
}

_NONE_WORDS = {"length": ("none", "all"), "nfe": ("none", "auto")}
"""The words (any case) the command line takes for an option's ``None``, besides ``none``
(``--length all``: the whole track from --start; ``--nfe auto``: the element length decides)."""


class _OrNone(click.ParamType):
    """The option's own type, or one of ``words`` (any case) for the API's ``None``: the
    command line's spelling of ``None`` (``--length all``, ``--nfe auto``, ``--out none``)."""

    def __init__(self, base, words):
        self.base = click.types.convert_type(base)
        self.words = tuple(words)
        self.name = f"{self.base.name} or {' or '.join(self.words)}"

    def get_metavar(self, param, ctx=None):      # click >= 8.2 passes ctx
        return f"{self.base.name.upper()}|{'|'.join(self.words)}"

    def convert(self, value, param, ctx):
        if value is None or (isinstance(value, str) and value.strip().lower() in self.words):
            return None
        return self.base.convert(value, param, ctx)


def _flag(name: str) -> str:
    return (_SPELLING[name][0][0].split("/")[0] if name in _SPELLING
            else "--" + name.replace("_", "-"))


def _click_type(cv):
    """The click type of a job option, from its domain (choices) or its default."""
    from .util.domains import EntrySpeed, FiniteFloat, IntBetween
    d = cv._domain
    if getattr(d, "cli_type", None) is not None:
        return d.cli_type
    choices = getattr(d, "choices", None) or getattr(d, "values", None)
    if choices:
        return click.Choice(list(choices))
    if isinstance(d, IntBetween):
        return int
    if isinstance(d, FiniteFloat):
        return float
    if isinstance(d, EntrySpeed) or d is str:
        return str
    return None


def job_options(*names, **defaults):
    """Decorator: the click options of the job options ``names``, derived from
    :data:`pyomo_lap.api.SOLVE_CONFIG` (the one declaration: default, type, choices, help);
    ``defaults`` overrides a default for one command (e.g. ``diagnose``'s short sector)."""
    from .api import SOLVE_CONFIG

    def decorate(f):
        for name in reversed(names):
            cv = SOLVE_CONFIG.get(name)
            decls, extra = _SPELLING.get(name, (("--" + name.replace("_", "-"), name), {}))
            kw = {"help": " ".join((cv._description or "").split()), **extra}
            if isinstance(cv.value(), bool) and "is_flag" not in kw:
                kw["is_flag"] = True
            if not kw.get("is_flag") and not kw.get("multiple"):
                default = defaults.get(name, cv.value())
                kw.setdefault("type", _click_type(cv))
                kw["default"] = None if default is None else (str(default) if kw["type"] is str
                                                              else default)
                kw["show_default"] = default is not None
                if _takes_none(cv) and kw["type"] is not None:
                    words = ("none",) + tuple(w for w in _NONE_WORDS.get(name, ()) if w != "none")
                    kw["type"] = _OrNone(kw["type"], words)
                    kw["help"] += f"; on the command line: {' or '.join(words)}"
            f = click.option(*decls, **kw)(f)
        return f
    return decorate


def _input_files_exist(**given) -> None:
    """A track or vehicle given as a file (a suffix or a folder in its name; bundled ones are
    names) that is not there stops with exit 2 and the absolute path looked at: relative paths
    are the current folder's (``--vehicle mycar.toml``)."""
    for key, value in given.items():
        if not isinstance(value, str) or not value:
            continue
        path = Path(value).expanduser()
        if (path.suffix or "/" in value or os.sep in value) and not path.exists():
            _fail(f"{_flag(key)} {value}: {key} file not found (looked for {path.resolve()})")


def _takes_none(cv) -> bool:
    """Whether a job option's domain takes ``None`` (an optional number, a path or None)."""
    from .util.domains import PathOrNone
    d = cv._domain
    return bool(getattr(d, "optional", False)) or isinstance(d, PathOrNone)


def _shown(value) -> str:
    """A value as the user typed it: numbers bare, other words quoted."""
    if isinstance(value, str):
        try:
            float(value)
            return value
        except ValueError:
            return repr(value)
    from .util.domains import number_text
    return f"{value:g}" if isinstance(value, float) else number_text(value)


def _full_lap_job(ctx, job: dict) -> dict:
    """``--full-lap``: the whole closed lap from the track's start (``start`` 0, no
    ``length``); given together with ``--start``, ``--length`` or ``--initial-speed`` it stops
    with exit 2. Returns ``job`` (changed in place)."""
    if job["periodic"]:
        given = [_flag(n) for n in ("start", "length", "initial_speed")
                 if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
        if given:
            _fail(f"--full-lap solves the whole closed lap; it cannot be combined with "
                  f"{', '.join(given)}")
        job.update(start=0.0, length=None)
    return job


def _solver_options_checked(solver: str, options: dict) -> dict:
    """The solver options checked against the solver's own option list
    (:func:`pyomo_lap.solvers.solve.check_solver_options`); a bad one stops with exit 2 and
    ``--solver-option KEY=VALUE: expected ...``, before anything is loaded or built."""
    from .solvers.solve import SolverOptionError, check_solver_options
    try:
        return check_solver_options(solver, options)
    except SolverOptionError as exc:
        _fail(f"--solver-option {exc.key}={exc.value}: {exc.text}")


def _checked(values: dict):
    """The job's options checked one by one against SOLVE_CONFIG; a bad value stops with exit
    2 and ``--flag value: expected ...``."""
    from .api import OptionValueError, job_options
    try:
        return job_options(values)
    except OptionValueError as exc:
        _fail(f"{_flag(exc.key)} {_shown(exc.value)}: {exc.text}")


@main.command()
@job_options("track", "vehicle", "start", "length", "periodic", "nfe", "ncp", "scheme",
             "initial_speed", "model", "initial_guess", "solver", "solver_options", "ocp_options",
             "n_sectors", "out_dir", "every")
@click.option("--max-iter", type=int, default=None,
              help="solver iteration limit, short for --solver-option max_iter=N (default: "
                   "3000 for lap_ipopt, ipopt and ipopt_v2: pyomo_lap.solvers.lap_solver."
                   "LAP_IPOPT_OPTIONS, and for the ASL path pyomo_lap.solvers.solve."
                   "DEFAULT_IPOPT_OPTIONS; another solver: its own)")
@job_options("repair_track", "track_width", "lat_lon_order", "flat", "refine_mesh",
             "mesh_continuation", "penalty_cost", "sensitivities",
             "warm_start_from", "free",
             "keep_sum", "limits")
@click.option("--progress/--no-progress", "show_progress", default=None,
              help="one line on standard error, updated about once a second while IPOPT works "
                   "(lap_ipopt): iteration, objective, primal and dual infeasibility, time "
                   "[default: on when standard error is a terminal, without -q or -v]")
def solve(max_iter, solver_options, ocp_options, show_progress, **job):
    """Solve the minimum-time problem on a sector (or, with --full-lap, the closed lap) and
    write trajectory.csv, trajectory.parquet, results.xlsx, summary.json and solution.npz to OUT.

    Prints one line per stage and the result; -v adds what was done to the track data (each
    step) and the solver's iterations, -q prints the result only.

    Every solved result checks itself (the collocation defects, the speed against the
    acceleration, the energy balance, the power limit; the fast checks of `pyomo-lap
    validate`): the result line ends with "self-check PASS", "self-check WARN: ..." or
    "self-check FAIL: ..." (the checks, their values and where), and summary.json holds them
    (self_check).

    Exit codes: 0 solved (self-check pass or warn); 1 the solver failed (partial results in
    OUT.failed, OUT untouched) or the results could not be written to OUT (saved elsewhere,
    named); 2 bad input or missing solver (nothing built); 3 unexpected error; 4 solved, but
    the result failed its self-check (written to OUT all the same, to be looked at, not
    used); 130 / 143 interrupted by SIGINT (Ctrl-C) / SIGTERM (OUT untouched; with lap_ipopt
    the last iterate is kept in OUT.interrupted, for --warm-start OUT.interrupted).
    """
    try:
        from .api import ResultsNotWrittenError, SolveFailedError, solve_sector  # heavy imports
        from .util.progress import click_progress
        from .solvers.solve import SolveInterrupted, SolverNotFoundError, parse_solver_options
    except KeyboardInterrupt:
        _fail("interrupted while starting; nothing was done", code=130)

    ctx = click.get_current_context()
    full_lap = job["periodic"]
    _input_files_exist(track=job["track"], vehicle=job["vehicle"])
    cfg = _checked(_full_lap_job(ctx, job))
    if cfg.nfe is not None and not full_lap and cfg.length is not None and cfg.length / cfg.nfe < 0.1:
        _fail(f"--nfe {cfg.nfe} on a {cfg.length:g} m sector gives elements of "
              f"{cfg.length / cfg.nfe:.3g} m: expected elements of at least 0.1 m (fewer "
              "elements or a longer sector)")
    if max_iter is not None and not 1 <= max_iter <= 10 ** 7:
        _fail(f"--max-iter {_shown(max_iter)}: expected an integer between 1 and 10000000")
    try:
        options = parse_solver_options(solver_options)
    except ValueError as exc:
        _fail(f"--solver-option: {exc}")
    if max_iter is not None:
        options["max_iter"] = max_iter
    options = _solver_options_checked(cfg.solver, options)
    from .ocp.options import check_ocp_options, parse_ocp_options
    try:
        cfg.ocp_options = check_ocp_options(parse_ocp_options(ocp_options))
    except ValueError as exc:
        _fail(f"--ocp-option: {exc}")
    cfg.solver_options = options or None
    level = _verbosity()
    cfg.tee = level > 0
    out_dir, solver, length = cfg.out_dir, cfg.solver, ctx.params["length"]
    before = _state(Path(out_dir)) if out_dir is not None else None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    t0 = time.perf_counter()
    res = None
    try:
        res = solve_sector(cfg.value(), echo=_Echo(level, keep=_SOLVE_RESULT_LINES),
                           progress=click_progress() if level >= 0 else (lambda *a, **k: None),
                           on_iteration=_iteration_progress(show_progress, level))
    except SolveInterrupted as exc:
        _interrupted(exc, solver, out_dir)
    except KeyboardInterrupt:
        done = ("nothing was written" if out_dir is None else
                "nothing was written and {out}/ was left untouched" if _state(Path(out_dir)) == before
                else "the complete results had already been written to {out}/")
        _fail(f"interrupted by {_SIGNAL['name']} after {time.perf_counter() - t0:.1f} s; "
              + done.format(out=out_dir), code=_SIGNAL["code"])
    except (SolveFailedError, ResultsNotWrittenError) as exc:
        _fail(str(exc), code=1)
    except (ValueError, OSError, SolverNotFoundError) as exc:
        msg = str(exc)
        if (any(getattr(f, "kind", "") == "longer_than_lap" for f in getattr(exc, "findings", []))
                and ctx.get_parameter_source("length") is click.core.ParameterSource.DEFAULT):
            msg += f" (--length was not given: its default is {length:g} m)"
        _fail(msg)
    except Exception as exc:  # noqa: BLE001 - reported in one line, never a traceback
        _unexpected(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)
    sc = getattr(res, "self_check", None)
    if sc is not None and sc["verdict"] == "fail":
        where = "" if out_dir is None else f" (written to {out_dir}/ to be looked at)"
        _fail(f"the result failed its self-check{where}: "
              + ", ".join(f"{n}: {c['detail']}" for n, c in sc["checks"].items()
                          if c["verdict"] == "fail")
              + ". Hint: a finer mesh (--nfe, --ocp-option element_length=...) or "
              "`pyomo-lap validate` for the replay", code=SELF_CHECK_FAILED)


def _iteration_progress(show, level: int):
    """``solve``'s progress line while IPOPT works
    (:class:`pyomo_lap.util.progress.IterationProgress` on standard error), or None: ``show``
    True/False (``--progress``/``--no-progress``) decides; by default it is on when standard
    error is a terminal and neither -q nor -v was given (-v streams IPOPT's own table)."""
    from .util.progress import IterationProgress
    if show is None:
        show = level == 0 and sys.stderr.isatty()
    return IterationProgress(interval_s=1.0) if show else None


def _interrupted(exc, solver: str, out_dir) -> None:
    """``solve`` stopped by Ctrl-C or SIGTERM during the solve: one line saying so, where the
    last iterate was kept (``OUT.interrupted``) and the command that continues from it; exit
    130 or 143."""
    import shlex
    r = exc.report
    its = f", {r.iterations} iterations" if r.iterations is not None else ""
    kept = getattr(exc, "interrupted_dir", None)
    head = (f"interrupted by {_SIGNAL['name']} while {solver} was solving ({r.solve_time_s:.1f} s"
            f"{its}; termination condition {r.termination_condition}); the solver was stopped")
    if kept is None:
        _fail(head + ", nothing was written"
              + ("" if out_dir is None else f" and {out_dir}/ was left untouched") + ". Hint: run "
              "again; a shorter sector or a coarser mesh (--nfe) solves faster", code=_SIGNAL["code"])
    args, skip = [], False
    for a in sys.argv[1:]:      # the same command, its warm start replaced by the kept iterate
        if skip or a.startswith("--warm-start"):
            skip = a in ("--warm-start", "--warm-start-from")
            continue
        args.append(a)
    _fail(head + f", {out_dir}/ was left untouched and the last iterate was kept in {kept}/. "
          "To continue from it: " + shlex.join(["pyomo-lap", *args, "--warm-start",
                                                 str(kept)]), code=_SIGNAL["code"])


@main.command()
@click.option("--set", "set_values", multiple=True, metavar="NAME=VALUES",
              help="a grid axis (repeatable): a vehicle parameter as the vehicle file names it "
                   "(mass.total, aero.Cx; the key alone where unique: total, Cx) with a range "
                   "START:STOP:STEP (STOP included) or a list A,B,C; also track=A,B and "
                   "vehicle=A,B. The cases are every combination")
@click.option("--cases", "cases_file", default=None, type=click.Path(dir_okay=False),
              help="a CSV of cases instead of a grid: one row per case, one column per "
                   "parameter (and optional track, vehicle columns)")
@click.option("--out", "out", default="sweep", show_default=True, type=click.Path(file_okay=False),
              help="the sweep folder (sweep.json, rows/, cases/<id>/, sweep.parquet, sweep.xlsx, plots)")
@click.option("--resume", is_flag=True, help="finish an interrupted sweep in --out: run only "
              "the cases without a row (and those lost with a worker)")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="a running Dask scheduler (default: a local cluster, one worker per core)")
@click.option("--workers", default=None, type=click.IntRange(1, 1024),
              help="worker processes of the local cluster  [default: one per core]")
@click.option("--warm-start/--no-warm-start", "warm_start", default=True, show_default=True,
              help="start each case from the solution of the nearest solved case of the same "
                   "track and vehicle file (the first cases, one per worker, from the usual "
                   "initial guess; a warm start that fails is solved again from it)")
@job_options("track", "vehicle", "start", "length", "periodic", "nfe", "ncp", "scheme",
             "initial_speed", "model", "initial_guess", "solver", "solver_options", "ocp_options",
             "n_sectors", "repair_track", "track_width", "lat_lon_order", "flat")
def sweep(set_values, cases_file, out, resume, scheduler, workers, warm_start, solver_options,
          ocp_options, **job):
    """Solve many cases of one job on Dask: a grid of vehicle parameters (--set), a CSV of
    cases (--cases), several tracks or vehicles; one solve per case. Every finished case is
    written at once (a row in OUT/rows/, its results in OUT/cases/<id>/); a case that fails is
    a row with its reason. At the end: OUT/sweep.parquet, OUT/sweep.xlsx and the plots (lap
    time against each swept parameter, a heat map for two).

    Exit codes: 0 every case solved; 1 some cases failed (rows with their reasons); 2 a bad
    specification (nothing ran); 130 interrupted (finished cases are kept: --resume).
    """
    from .ocp.options import check_ocp_options, parse_ocp_options
    from .solvers.solve import parse_solver_options
    from .sweeps import SweepSpecError, sweep as run_sweep
    ctx = click.get_current_context()
    _input_files_exist(track=job["track"], vehicle=job["vehicle"])
    cfg = _checked(_full_lap_job(ctx, job))
    try:
        options = parse_solver_options(solver_options)
    except ValueError as exc:
        _fail(f"--solver-option: {exc}")
    options = _solver_options_checked(cfg.solver, options)
    try:
        ocp = check_ocp_options(parse_ocp_options(ocp_options))
    except ValueError as exc:
        _fail(f"--ocp-option: {exc}")
    if not set_values and not cases_file:
        _fail("nothing to sweep: give --set NAME=VALUES (repeatable) or --cases FILE")
    values = {k: cfg[k] for k in job}
    values.update(solver_options=options or None, ocp_options=ocp or None)
    try:
        table = run_sweep(list(set_values), cases_file, out=out, resume=resume,
                          scheduler=scheduler, workers=workers, warm_start=warm_start,
                          echo=_Echo(_verbosity(), keep=_SWEEP_RESULT_LINES), **values)
    except SweepSpecError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail(f"interrupted; the finished cases are in {out}/rows/: run again with --resume "
              "to finish the sweep", code=130)
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    if len(table) and (table["status"] != "solved").any():
        sys.exit(1)


@main.command()
@job_options("track", "vehicle", "repair_track", "track_width", "lat_lon_order", "flat")
def check(track, vehicle, repair_track, track_width, lat_lon_order, flat):
    """Check a track and a vehicle file (and that the car fits the track) without solving.
    Lists what was done to the track's data (a table: elevations missing, outliers dropped,
    gaps filled, smoothing, merged points) and every value assumed because the data lack it
    (widths, banking). Exit code 0 when both can be used, 2 otherwise; every problem is
    listed."""
    _input_files_exist(track=track, vehicle=vehicle)
    track_width = _checked({"track_width": track_width}).track_width
    try:
        from .track import checks as track_checks
        from .track.loading import load_track
        from .track.report import assumption_lines, format_steps_table
        from .vehicle.car import load_vehicle
        problems = []
        tr = p = None
        try:
            with warnings.catch_warnings():   # the repairs are listed below
                warnings.simplefilter("ignore", track_checks.TrackRepairWarning)
                tr = load_track(track, repair=repair_track, track_width=track_width, flat=flat,
                                lat_lon_order=lat_lon_order)
            for r in tr.build_repairs:
                click.echo(f"track repaired when its bundled file was built: {r}")
            for f in tr.findings:
                click.echo(f"track repaired: {f}")
            click.echo(f"track {tr.name}: {tr.length:.1f} m, {'closed' if tr.closed else 'open'}: ok")
            from .track.gps import lat_lon_order_warnings
            for line in lat_lon_order_warnings(tr.processing_steps):
                click.echo(line)
            if tr.processing_steps and _verbosity() >= 0:
                click.echo("what was done to the track data (where: arc length s on the "
                           "loaded track):")
                click.echo(format_steps_table(tr.processing_steps))
            for line in assumption_lines(tr.assumptions) if _verbosity() >= 0 else ():
                click.echo(f"track: {line}")
        except (ValueError, OSError) as exc:
            problems.append(str(exc))
        try:
            p = load_vehicle(vehicle)
            click.echo(f"vehicle {p.name}: {p.m:g} kg, {p.P_max / 1e3:g} kW: ok")
        except (ValueError, OSError) as exc:
            problems.append(str(exc))
        if tr is not None and p is not None:
            try:
                track_checks.check_vehicle_fits(tr, p)
                assumed = any(a["quantity"].startswith("width") for a in tr.assumptions)
                click.echo(f"the car ({p.width:.2f} m) fits the track everywhere"
                           + ((" (with the assumed widths above)" if _verbosity() >= 0 else
                               " (with assumed widths)") if assumed else ""))
            except ValueError as exc:
                problems.append(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", code=130)
    except Exception as exc:  # noqa: BLE001
        _unexpected(exc)
    if problems:
        _fail("\n".join(problems))


@main.command()
@click.argument("results_dir", required=False, default=None, type=click.Path(file_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="results folder of `pyomo-lap solve` (the same as RESULTS_DIR)  [default: results]")
@click.option("--no-feedback", is_flag=True,
              help="skip the replay with steering feedback (and its checks)")
@click.option("--shooting", is_flag=True,
              help="also the local error of each element by shooting (reported, not judged)")
@click.option("--open-loop", is_flag=True,
              help="also replay open loop (reported, not judged: it departs on any real result)")
@click.option("--plots", "plots_dir", default=None, type=click.Path(file_okay=False),
              help="folder for validation_defects.png and validation_replay.png  "
                   "[default: RESULTS_DIR]")
@click.option("--no-plots", is_flag=True, help="write no figures")
@click.option("--strict", is_flag=True, help="exit with code 1 on a warning too")
def validate(results_dir, out_dir, no_feedback, shooting, open_loop, plots_dir, no_plots, strict):
    """Check a solved sector and give a verdict: replay the optimal controls with
    path-following steering, measure the collocation defects and the channels' zig-zags and
    speed consistency; one line per check (PASS|WARN|FAIL, value, thresholds), then the verdict.
    Writes validation.json, defects.csv and two figures to RESULTS_DIR.

    Exit code: 0 pass or warn (1 on warn with --strict), 1 fail, 2 bad arguments (not a results
    folder, a result of another model)."""
    from .post.validate import validate_results
    if results_dir is not None and out_dir is not None and Path(results_dir) != Path(out_dir):
        _fail(f"two results folders given: {results_dir} and --out {out_dir}; give one")
    folder = results_dir or out_dir or "results"
    _complete_results(folder)          # a missing folder too (one that a run is replacing)
    try:
        res = validate_results(folder, feedback=not no_feedback, shooting=shooting,
                               open_loop=open_loop, plots=not no_plots, plots_dir=plots_dir,
                               echo=_Echo(_verbosity(), keep=("verdict:", "WARN", "FAIL")))
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    except Exception as exc:               # noqa: BLE001 - one line, not a traceback
        _unexpected(exc)
    verdict = res["verdict"]
    if verdict == "fail" or (verdict == "warn" and strict):
        sys.exit(1)


@main.command()
@click.argument("run", type=click.Path(file_okay=False), metavar="RUN")
@click.option("--every", required=True, type=float, metavar="STEP",
              help="the step [m]: rows at 0, STEP, 2 STEP, ... and the sector's end, read from "
                   "the collocation polynomials")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder  [default: RUN/export_every_STEPm]")
def export(run, every, out_dir):
    """Write the results of RUN again with the channels every STEP metres of the sector: the
    files `pyomo-lap solve --every STEP` would have written (trajectory.csv, .parquet and the
    workbook on the step; trajectory_mesh.csv and .parquet the mesh rows; summary.json,
    solution.npz), into RUN/export_every_STEPm/ or --out DIR.

    Exit codes: 0 written; 2 not a complete results folder, a bad step, a folder that
    cannot be replaced."""
    from .post.fixed_step import export_fixed_step
    _complete_results(run)
    if not (math.isfinite(every) and every > 0):
        _fail(f"--every {_shown(every)}: expected a finite step > 0 m")
    try:
        where = export_fixed_step(run, every, out=out_dir, echo=_Echo(_verbosity()).detail)
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    except Exception as exc:               # noqa: BLE001 - one line, not a traceback
        _unexpected(exc)
    if _verbosity() >= 0:
        click.echo(f"channels every {every:g} m written to {where}/")


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False))     # a missing one: checked
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder  [default: RESULTS_DIR/plots]")
@click.option("--pdf", is_flag=True, help="also write all figures to plots.pdf")
@click.option("--reference", default=None, type=click.Path(file_okay=False),
              help="a second results folder: speed and time delta against it")
@click.option("--figure", "figures", multiple=True,
              help="only this figure (repeatable): track_map, racing_line, elevation, speed, "
                   "controls, attitudes, power, gg, vertical_loads, sensitivities (a run with "
                   "--sensitivities)")
@click.option("--range", "s_range", default=None, metavar="A:B",
              help="only this distance window, in metres of track coordinate s as on the "
                   "figures' horizontal axes (s of the run's start + s_sector, not s_sector): "
                   "1200:1800, :800 (from the start), 1200: (to the end); the track map "
                   "highlights it")
def plot(results_dir, out_dir, pdf, reference, figures, s_range):
    """Write the figures of a results folder as PNG (and PDF with --pdf)."""
    from .post.plots import parse_range, plot_results
    try:
        parse_range(s_range, "--range")          # the text, before anything is read
    except ValueError as exc:
        _fail(str(exc))
    for folder in (results_dir, reference):
        if folder is not None:
            _complete_results(folder)
    try:
        files = plot_results(results_dir, out_dir=out_dir, formats=("png", "pdf") if pdf else ("png",),
                             figures=list(figures) or None, reference_dir=reference,
                             echo=_Echo(_verbosity()).detail, s_range=s_range)
    except (ValueError, OSError, KeyError) as exc:
        _fail(str(exc))
    if _verbosity() >= 0:
        click.echo(f"{len(files)} files written to {Path(files[0]).parent}/")


@main.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]",
                type=click.Path(exists=True, file_okay=False))
@click.option("--telemetry", default=None, type=click.Path(exists=True, dir_okay=False),
              metavar="LOG.csv",
              help="a logged lap to overlay on RUN (one run): a MoTeC i2 or AiM RaceStudio CSV "
                   "export as it comes, or a CSV with a distance or a time column, a speed column "
                   "with its unit ('speed [km/h]') and any channels named as the run's (a_y, "
                   "...; docs: Logger files); aligned on distance (the logged distance "
                   "stretched to the run's length when within 10 %)")
@click.option("--lap", "lap", default=None, type=int, metavar="N",
              help="with --telemetry: the lap of the logged outing to overlay (1 = the log's "
                   "first segment, the out lap; the laps are listed)  [default: the fastest "
                   "complete lap, between two beacon markers]")
@click.option("--every", default=None, metavar="STEP",
              help="write the comparison table on a fixed step: of distance (1m, 0.5m) or of "
                   "the first run's time (0.01s, 100Hz)")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder, not inside a run's folder  [default: "
                   "compare_<name of RUN_A>_vs_<name of RUN_B> next to RUN_B; with more runs "
                   "compare_<first>_and_<n>_more; with --telemetry compare_<RUN>_vs_<file>]")
@click.option("--sectors", default=3, show_default=True, type=int,
              help="equal parts of the common stretch timed in the table")
@click.option("--pdf", is_flag=True, help="also write the figure as PDF")
def compare(runs, telemetry, lap, every, out_dir, sectors, pdf):
    """Time delta along the track: of RUN_B against RUN_A (two runs), of every run against the
    first (more runs; the legend and compare_runs.csv give the vehicle parameters in which
    they differ), or of a logged lap against RUN (--telemetry)."""
    from .post.compare import compare_many, compare_telemetry, parse_step
    if sectors < 1 or sectors > 1000:
        _fail(f"--sectors {sectors}: expected an integer between 1 and 1000")
    if every is not None:
        try:
            parse_step(every)
        except ValueError as exc:
            _fail(f"--every {exc}")
    if telemetry is not None and len(runs) != 1:
        _fail(f"--telemetry compares one run with a logged lap; {len(runs)} runs given")
    if lap is not None and telemetry is None:
        _fail(f"--lap {lap}: a lap of a logged outing; give --telemetry FILE")
    if telemetry is None and len(runs) < 2:
        _fail("one run given: expected two runs or more, or one run and --telemetry LAP.csv")
    for folder in runs:
        _complete_results(folder)
    formats = ("png", "pdf") if pdf else ("png",)
    echo = _Echo(_verbosity()).detail
    try:
        if telemetry is not None:
            res = compare_telemetry(runs[0], telemetry, out_dir=out_dir, n_sectors=sectors,
                                    every=every, formats=formats, echo=echo, lap=lap)
        elif len(runs) > 2:
            res = compare_many(runs, out_dir=out_dir, n_sectors=sectors, every=every,
                               formats=formats, echo=echo)
        else:
            from .post.plots import compare_runs
            res = compare_runs(runs[0], runs[1], out_dir=out_dir, n_sectors=sectors,
                               formats=formats, echo=echo)
            if every is not None:
                from .post.compare import _at_steps
                _at_steps(res["delta"], every, "s [m]", "t_A [s]").to_csv(
                    Path(res["files"][0]), index=False, float_format="%.10g")
    except (ValueError, OSError, KeyError) as exc:
        _fail(str(exc))
    if telemetry is not None:
        _echo_telemetry(res, Path(runs[0]).name, Path(telemetry).name)
    elif len(runs) > 2:
        _echo_many(res)
    else:
        _echo_two(res, Path(runs[0]).name, Path(runs[1]).name)
    if _verbosity() >= 0:
        click.echo(f"written to {Path(res['files'][0]).parent}/")


@main.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]",
                type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False),
              help="the HTML file  [default: RUN/report.html for one run (recorded in its "
                   "manifest: the next solve into RUN replaces it); "
                   "report_<first>_and_<n>_more.html next to the first run for several; "
                   "report_<RUN>_vs_<file>.html with --telemetry]")
@click.option("--telemetry", default=None, type=click.Path(exists=True, dir_okay=False),
              metavar="LAP.csv",
              help="a logged lap to overlay on RUN (one run), as `compare --telemetry` reads it")
@click.option("--max-points", default=20000, show_default=True, type=click.IntRange(4, None),
              help="most points drawn per trace; longer traces keep the smallest and the "
                   "largest value of each of max-points/2 bins")
def report(runs, out, telemetry, max_points):
    """Write one self-contained HTML report of one run or several (opens offline in a
    browser): the runs and the parameters in which they differ, the track map coloured by
    a channel, the channels along the track on one zoomable axis with one cursor, the GG
    diagram with its envelope, the time delta (several runs or --telemetry), the corners
    (a run with corners.csv)."""
    from .post.report import write_report
    if telemetry is not None and len(runs) != 1:
        _fail(f"--telemetry compares one run with a logged lap; {len(runs)} runs given")
    for folder in runs:
        _complete_results(folder)
    try:
        path = write_report(runs, out=out, telemetry=telemetry, max_points=max_points,
                            echo=_Echo(_verbosity()).detail)
    except ImportError as exc:
        _fail(f"the report needs the package plotly ({exc}): pip install plotly")
    except (ValueError, OSError, KeyError) as exc:
        _fail(str(exc))
    if _verbosity() >= 0:
        click.echo(f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB)")


def _echo_sectors(tab, a: str, b: str, col_a: str, col_b: str, delta_t: float) -> None:
    """The sector table of a comparison of two laps: each sector's span and both times (the
    columns ``col_a``, ``col_b`` of ``tab``, headed ``a``, ``b``), its delta, and the total."""
    click.echo(f"{'sector':>6} {'from [m]':>9} {'to [m]':>9} {a[:12]:>12} {b[:12]:>12} {'delta [s]':>10}")
    for _, r in tab.iterrows():
        click.echo(f"{int(r['sector']):>6} {r['s_start [m]']:>9.1f} {r['s_end [m]']:>9.1f} "
                   f"{r[col_a]:>12.3f} {r[col_b]:>12.3f} {r['delta [s]']:>+10.3f}")
    click.echo(f"{'total':>6} {tab['s_start [m]'].iloc[0]:>9.1f} {tab['s_end [m]'].iloc[-1]:>9.1f} "
               f"{tab[col_a].sum():>12.3f} {tab[col_b].sum():>12.3f} {delta_t:>+10.3f}")


def _echo_two(res: dict, a: str, b: str) -> None:
    """The tables of ``compare RUN_A RUN_B``: sector times, the runs' statistics, channels."""
    _echo_sectors(res["sectors"], a, b, "time_A [s]", "time_B [s]", res["delta_t_s"])
    click.echo(f"(delta > 0: {b} is behind {a})")
    if _verbosity() < 0:
        return
    _echo_corners(res.get("corners"), a, b)
    click.echo("")
    runs = res["runs"]
    click.echo(f"{'run':<22} {a[:14]:>14} {b[:14]:>14}")
    for _, r in runs.iterrows():
        fmt = (lambda v: f"{v:>14.3f}") if isinstance(r["A"], float) else (lambda v: f"{str(v):>14}")
        click.echo(f"{r['quantity']:<22} {fmt(r['A'])} {fmt(r['B'])}")
    ch = res["channels"]
    if len(ch):
        click.echo("")
        click.echo(f"{'channel':<10} {'unit':>5} {'mean ' + a[:9]:>14} {'mean ' + b[:9]:>14} "
                   f"{'rms(B-A)':>10} {'max|B-A|':>10} {'at s [m]':>9}")
        for _, r in ch.iterrows():
            click.echo(f"{r['channel']:<10} {r['unit']:>5} {r['mean_A']:>14.5g} {r['mean_B']:>14.5g} "
                       f"{r['rms_diff']:>10.4g} {r['max_abs_diff']:>10.4g} {r['s_at_max [m]']:>9.1f}")


def _echo_corners(tab, a: str, b: str) -> None:
    """The corner table of a comparison of two runs (:func:`pyomo_lap.post.corners.corner_deltas`):
    each corner's time in both runs, the difference, and the difference of the minimum speeds."""
    if tab is None or not len(tab):
        return
    click.echo("")
    click.echo(f"{'corner':<14} {'dir':>5} {a[:10] + ' [s]':>14} {b[:10] + ' [s]':>14} "
               f"{'delta [s]':>10} {'d v_min [km/h]':>15}")
    for _, r in tab.iterrows():
        click.echo(f"{str(r['name'])[:14]:<14} {r['direction']:>5} {r['time_A [s]']:>14.3f} "
                   f"{r['time_B [s]']:>14.3f} {r['delta_time [s]']:>+10.3f} "
                   f"{r['delta_min_speed [km/h]']:>+15.2f}")


def _echo_many(res: dict) -> None:
    """The table of ``compare`` with more than two runs: each run's time over the common
    stretch, its delta to the first and the parameters in which it differs."""
    runs = res["runs"]
    click.echo(f"{'run':<24} {'time [s]':>10} {'delta [s]':>10}  differs in")
    for (_, r), label in zip(runs.iterrows(), res["labels"]):
        differs = label.split(": ", 1)[1] if ": " in label else ""
        click.echo(f"{str(r['run'])[:24]:<24} {r['time over the common stretch [s]']:>10.3f} "
                   f"{r['delta to the first [s]']:>+10.3f}  {differs}")
    click.echo(f"(over {res['delta']['s [m]'].iloc[0]:.1f}-{res['delta']['s [m]'].iloc[-1]:.1f} m; "
               "delta > 0: behind the first run)")
    corners = res.get("corners")
    if _verbosity() >= 0 and corners is not None and len(corners):
        deltas = [c for c in corners.columns if c.startswith("delta_")]
        click.echo("")
        click.echo(f"{'corner':<14} " + " ".join(f"{c[6:-4][:12]:>12}" for c in deltas)
                   + "  (delta [s] to the first run)")
        for _, r in corners.iterrows():
            click.echo(f"{str(r['name'])[:14]:<14} " + " ".join(f"{r[c]:>+12.3f}" for c in deltas))


def _echo_telemetry(res: dict, run: str, log: str) -> None:
    """The tables of ``compare RUN --telemetry LAP``: sector times, the alignment and the
    channels compared."""
    info = res["info"]
    _echo_sectors(res["sectors"], run, log, "time_run [s]", "time_log [s]", res["delta_t_s"])
    click.echo(f"(delta > 0: the logged lap {log} loses time on {run})")
    if _verbosity() < 0:
        return
    laps = info.get("laps")
    if laps is not None and len(laps) > 1:
        click.echo(f"laps in {log}: " + ", ".join(
            f"{int(r['lap'])}: {r['time [s]']:.3f} s" + ("" if r["complete"] else " (part)")
            for _, r in laps.iterrows()) + f"; lap {info['lap']} overlaid"
            + ("" if info.get("lap_asked") else " (the fastest complete; --lap N for another)"))
    click.echo(f"logged lap read: {info['how']}; speed from {info['speed']!r}"
               + "".join(f"; {d}" for d in info["derived"])
               + (f"; its distance stretched by {info['scale']:.5f} to the run's"
                  if info["scale"] != 1.0 else ""))
    if info["compared"]:
        click.echo("channels compared: " + ", ".join(info["compared"]))
    if info["skipped"]:
        click.echo("channels not compared (another unit): " + "; ".join(info["skipped"]))


@main.command()
@job_options("track", "vehicle", "start", "length", "nfe", "ncp", start=500.0, length=100.0, nfe=5)
@click.option("--solve", "do_solve", is_flag=True, help="solve first and diagnose the optimum")
@job_options("solver")
@click.option("--no-numerical", is_flag=True, help="structural checks only")
@click.option("--report", default=None, type=click.Path(dir_okay=False),
              help="also write the toolbox's reports to this file")
def diagnose(track, vehicle, start, length, nfe, ncp, do_solve, solver, no_numerical, report):
    """Run the IDAES diagnostics toolbox (structural and numerical checks) and a units check
    on the model of a short sector."""
    from .post.diagnose import diagnose as run
    from .solvers.solve import SolverNotFoundError
    _checked({"start": start, "length": length, "nfe": nfe, "ncp": ncp})
    if nfe > 200:
        _fail(f"--nfe {nfe}: expected an integer between 2 and 200 (diagnose a short sector)")
    buf = __import__("io").StringIO()

    class _Tee:
        def write(self, text):
            buf.write(text)
            if _verbosity() >= 0:
                click.echo(text, nl=False)

    try:
        res = run(track=track, vehicle=vehicle, start=start, length=length, nfe=nfe, ncp=ncp,
                  numerical=not no_numerical, solve=do_solve, solver=solver, stream=_Tee(),
                  echo=_Echo(_verbosity()))
    except (ValueError, OSError, SolverNotFoundError) as exc:
        _fail(str(exc))
    if report:
        Path(report).write_text(buf.getvalue())
        click.echo(f"report written to {report}")
    warnings = res["structural_warnings"] + res["numerical_warnings"]
    click.echo(f"{len(warnings)} warnings; degrees of freedom after fixing the controls: "
               f"{res['degrees_of_freedom']}; units consistent in: {', '.join(res['units']['checked'])}")


@main.command()
@click.option("--markdown", is_flag=True, help="as the Markdown tables of the documentation's "
              "options page (docs/options.md)")
def options(markdown):
    """List every option with its default, domain and meaning: the job's (`solve`'s own
    options, the keywords of pyomo_lap.solve_sector) and the optimal control problem's
    (`--ocp-option KEY=VALUE`); both tables come from the one declaration of each."""
    from .api import SOLVE_CONFIG
    from .ocp.options import CLI_OWNED, options_table
    if markdown:
        click.echo(job_options_table(), nl=False)
        click.echo(options_table(), nl=False)
        return
    click.echo("job options (pyomo-lap solve --OPTION, pyomo_lap.solve_sector(OPTION=...)):")
    for key in SOLVE_CONFIG.keys():
        cv = SOLVE_CONFIG.get(key)
        click.echo(f"  {_flag(key):18s} {key:16s} default {cv.value()!r}")
    from .ocp.build import OCP_CONFIG
    click.echo("options of the optimal control problem (--ocp-option KEY=VALUE; "
               "ocp_options={...}):")
    for key in OCP_CONFIG.keys():
        if key not in CLI_OWNED:
            click.echo(f"  {key:28s} default {OCP_CONFIG.get(key).value()!r}")


def job_options_table() -> str:
    """The job's options (:data:`pyomo_lap.api.SOLVE_CONFIG`) as a Markdown table with their
    command-line spelling (``docs/options.md`` holds it; ``pyomo-lap options --markdown``)."""
    from .api import SOLVE_CONFIG
    from .ocp.options import options_table
    return options_table(config=SOLVE_CONFIG, flags=_flag)


@main.command()
@click.argument("names", nargs=-1, metavar="[NAME ...]")
@click.option("--markdown", is_flag=True, help="as the Markdown table of docs/channels.md")
def channels(names, markdown):
    """What each column of trajectory.csv is: unit, meaning, sign convention, source (the
    paper's equation or the code) and, for one wheel's or one axle's channels, which one
    (11 front-left, 12 front-right, 21 rear-left, 22 rear-right). Without NAME: every column
    of the full, multibody and single-track models' tables."""
    from .post.channels import channel_markdown, channel_text, describe
    for name in names:           # every name checked before anything is printed
        try:
            describe(name)
        except KeyError as exc:
            _fail(exc.args[0])
    columns = list(names) or None
    click.echo(channel_markdown(columns) if markdown else channel_text(columns), nl=False)


@main.command("compile")
@click.option("--vehicle", default="fsae", show_default=True,
              help="the car the rows are recorded with (the libraries serve every car)")
def compile_(vehicle):
    """Compile the full model's point functions (rows, Jacobian, Hessian of the Lagrangian)
    to machine code now, for an open sector and a closed lap, with a fixed setup and with
    free parameters, so that the first solve is as fast as the later ones; the set-up
    (scripts/bootstrap.sh) runs it. Without it the first solve of each of these compiles
    them while the model is built (and says so). Cached on disk (PYOMO_LAP_CACHE, or the
    user's cache folder); already compiled libraries are checked, not rebuilt."""
    from .solvers.precompile import compile_ahead
    t0 = time.perf_counter()
    echo = click.echo if _verbosity() >= 0 else (lambda *_: None)
    echo("compiling the full model's point functions (once on this machine, any car) ...")
    try:
        rows = compile_ahead(vehicle, echo=echo)
    except (RuntimeError, ValueError) as exc:
        _fail(str(exc))
    n = sum(not r["cached"] for r in rows)
    click.echo(f"point functions ready: {n} compiled, {len(rows) - n} already there, "
               f"{time.perf_counter() - t0:.1f} s")


@main.command()
def tracks():
    """List the tracks shipped with the package: name (for --track), what it is, its kind
    (a centreline, or straights and arcs), length, elevation range, closed or open, and where
    the data come from (repository and commit; provenance, processing and repairs:
    data/tracks/README.md and each track's .json or .toml)."""
    try:
        import pandas as pd

        from .track.loading import bundled_tracks
        rows = bundled_tracks()
    except ValueError as exc:
        _fail(str(exc))
    except Exception as exc:  # noqa: BLE001
        _unexpected(exc)
    if not rows:
        click.echo("no bundled tracks found")
        return
    df = pd.DataFrame([{
        "name": r["name"],
        "track": r["display_name"] + (f" ({r['country']})" if r["country"] else ""),
        "kind": r["kind"],
        "length [m]": f"{r['length_m']:.1f}",
        "elevation [m]": f"{r['elevation_min_m']:.1f}-{r['elevation_max_m']:.1f}",
        "loop": {True: "closed", False: "open"}.get(r["closed"], "?"),
        "source": (f"{r['repository']} @ {r['commit'][:12]}" if r["commit"]
                   else r["repository"] or "-"),
    } for r in rows])
    width = {c: max(len(c), int(df[c].str.len().max())) for c in df.columns}
    right = ("length [m]", "elevation [m]")
    text = df.to_string(index=False, justify="left", formatters={
        c: (lambda x, n=width[c], r=c in right: str(x).rjust(n) if r else str(x).ljust(n))
        for c in df.columns})
    for line in text.splitlines():
        click.echo(line.rstrip())


def _range_text(info) -> str:
    """The range of a :class:`~pyomo_lap.vehicle.schema.VehicleParameters` field from its
    bounds (``> 0 and <= 10000``), '' when it has none."""
    from .vehicle.schema import bound_texts
    lo, hi = bound_texts(info)
    extra = info.json_schema_extra or {}
    if lo is None and extra.get("minimum") is not None:      # optional fields
        lo = f">= {extra['minimum']:g}"
    if hi is None and extra.get("maximum") is not None:
        hi = f"<= {extra['maximum']:g}"
    return " and ".join(t for t in (lo, hi) if t)


_EXAMPLE_VALUES = {
    "T_b1": 3000.0, "T_b2": 2000.0, "alpha_max": 0.166,
    "power_curve_speed": [0.0, 10.0, 20.0, 40.0, 60.0], "power_curve_power": [0.0, 30e3, 45e3, 47e3, 47e3],
    "engine_speed": [100.0, 400.0, 700.0, 1000.0], "engine_torque": [60.0, 75.0, 70.0, 55.0],
    "gear_ratios": [2.8, 2.0, 1.6, 1.3, 1.1], "final_drive": 3.2, "drivetrain_efficiency": 0.9,
    # [fuel]: thermal_efficiency (with lower_heating_value) OR the map, and mass_start
    "fuel_lhv": 43.0e6, "fuel_efficiency": 0.25, "fuel_map_power": [0.0, 20e3, 47e3],
    "fuel_map_flow": [2e-4, 1.6e-3, 5e-3], "fuel_mass": 5.0,
}
"""Values shown (commented out) in the template for keys the car leaves out."""


def _toml_value(value) -> str:
    """A value as TOML: a float, a string in quotes or an array of floats."""
    import json
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(repr(float(v)) for v in value) + "]"
    return repr(float(value))


def vehicle_template(base: str = "fsae") -> str:
    """A vehicle file (TOML) with every key of the schema, each preceded by comments giving
    its meaning, unit and range, generated from
    :class:`pyomo_lap.vehicle.schema.VehicleParameters` (descriptions, bounds, units),
    :data:`~pyomo_lap.vehicle.schema.SECTIONS` and
    :data:`~pyomo_lap.vehicle.schema.OPTIONAL_SECTIONS`; the values are those of the bundled
    car ``base`` (or a vehicle file's path), so the text loads as a valid car
    (``pyomo-lap vehicles --template > mycar.toml``). The car's name is left to the file's
    name; an optional section the car does not have is written commented out.

    Raises
    ------
    ValueError
        ``base`` is no bundled car and no readable vehicle file, or not a file of the six-joint
        car (:class:`~pyomo_lap.vehicle.schema.VehicleParameters`).
    """
    import json
    import textwrap

    from .vehicle.car import load_vehicle
    from .vehicle.schema import (MAX_STATIC_SAG, OPTIONAL_KEYS, OPTIONAL_SECTIONS, SECTIONS,
                                 SETTINGS, VehicleParameters)
    car = load_vehicle(base)
    if not isinstance(car, VehicleParameters):
        raise ValueError(f"vehicle {base!r} is a {type(car).__name__} file, not one of the "
                         "six-joint car's (VehicleParameters); the template is of the latter: "
                         "start from fsae, f1_2014 or bmw_320i")
    fields = VehicleParameters.model_fields
    lines = [
        "# Vehicle file of pyomo_lap (TOML): every key of the schema, with its meaning, unit",
        "# and accepted range above it (pyomo_lap.vehicle.schema.VehicleParameters).",
        *textwrap.wrap(f"Generated by `pyomo-lap vehicles --template {base}`; the values are "
                       f"those of the car {car.name!r} ({car.description or 'no description'}).",
                       90, initial_indent="# ", subsequent_indent="# "),
        "# Replace them with your car's, in SI units (kg, m, s, N, rad, W: P_max in W, not kW;",
        "# wheel rates in N/m, not N/mm; angles in rad, not deg), and say where each value",
        "# comes from (a comment; mark the values you had to choose, and why).",
        "# Check the file with `pyomo-lap check --vehicle mycar.toml`; solve with",
        "# `pyomo-lap solve --vehicle mycar.toml`. Every problem is reported at once, naming the",
        "# [section] key, the value and what was expected. Besides the ranges: total mass >",
        "# unsprung; Ixx, Iyy, Izz satisfy the triangle inequality; hq1, hq2 < h; width >=",
        f"# max(t1, t2); static sag (total - unsprung) g / (2 k1 + 2 k2) <= {MAX_STATIC_SAG:g} m;",
        "# fz_min < the smaller static wheel load.",
        "",
        "# name of the car (optional; default: the file's name without .toml)",
        f"# name = {json.dumps(car.name)}",
        "# free text: what the car is and where its data come from",
        f"description = {json.dumps(car.description or '')}",
    ]

    def key_lines(section: str, key: str, attr: str, commented: bool) -> list:
        info = fields[attr]
        unit = (info.json_schema_extra or {}).get("unit", "")
        meaning = (info.description or "").rsplit(" [", 1)[0]
        rng = _range_text(info)
        value = getattr(car, attr)
        optional = f"{section}.{key}" in OPTIONAL_KEYS or key in SETTINGS.get(section, {})
        out = [f"# {meaning}",
               f"#   unit: {unit}" + (f"; range: {rng}" if rng else "")
               + ("; optional" if optional else "")]
        if value is None:
            value = _EXAMPLE_VALUES.get(attr, getattr(load_vehicle("fsae"), attr))
            commented = True
        out.append(f"{'# ' if commented else ''}{key} = {_toml_value(value)}")
        return out

    for section, keys in SECTIONS.items():
        lines += ["", f"[{section}]"]
        for key, attr in keys.items():
            lines += key_lines(section, key, attr, False)
        for key, attr in SETTINGS.get(section, {}).items():
            lines += key_lines(section, key, attr, False)
    for section, keys in SETTINGS.items():
        if section in SECTIONS:
            continue
        absent = all(getattr(car, attr) is None for attr in keys.values())
        lines += ["", f"# optional section [{section}]"
                  + (f" (not given for {car.name!r}: remove the '# ' to use it)" if absent else ""),
                  f"{'# ' if absent else ''}[{section}]"]
        for key, attr in keys.items():
            lines += key_lines(section, key, attr, absent)
    for section, keys in OPTIONAL_SECTIONS.items():
        absent = all(getattr(car, attr) is None for attr in keys.values())
        lines += ["", f"# optional section [{section}]: all its keys or none"
                  + (f" (not given for {car.name!r}: remove the '# ' to use it)" if absent else ""),
                  f"{'# ' if absent else ''}[{section}]"]
        for key, attr in keys.items():
            lines += key_lines(section, key, attr, absent)
    return "\n".join(lines) + "\n"


@main.command()
@click.argument("name", required=False, default=None)
@click.option("--template", is_flag=True,
              help="print a vehicle file with every key, its meaning, unit and range as "
                   "comments and the values of NAME (default: fsae), e.g. "
                   "`pyomo-lap vehicles --template > mycar.toml`")
def vehicles(name, template):
    """List the vehicle files shipped with the package (name and description); with
    --template, print a vehicle file to start your own car from."""
    from .vehicle.car import available_vehicles, load_vehicle
    if template:
        try:
            click.echo(vehicle_template(name or "fsae"), nl=False)
        except ValueError as exc:
            _fail(str(exc))
        return
    names = [name] if name else available_vehicles()
    for n in names:
        try:
            car = load_vehicle(n)
        except ValueError as exc:
            _fail(str(exc))
        click.echo(f"{n:<12} {car.description}" if car.description else n)


_QUIET_VERBOSE_HELP = {
    # command: (help of -q, help of -v); the others print a listing or a table, which is
    # their result: -q and -v are accepted and change nothing there
    "solve": ("print only the result line, where the results went and any repair",
              "also each step done to the track data (where, how much) and the solver's "
              "iterations"),
    "sweep": ("print only the final count of cases (no line per finished case)",
              "the same as the default: a line per finished case"),
    "check": ("print only whether the track and the vehicle can be used (no table of what "
              "was done to the track data, no assumed values)",
              "the same as the default: every step and assumed value"),
    "validate": ("print only the verdict and the checks that warn or fail",
                 "the same as the default: the progress and every check"),
    "plot": ("print nothing (errors only; the exit code says how it went)",
             "also every file written"),
    "compare": ("accepted on every command; compare prints its tables, which are its result "
                "(the files: compare.csv, compare.png), and -q does not shorten them",
                "accepted on every command; the tables are printed in full without it"),
    "stint": ("print only the stint's result line, not each lap's",
              "the same as the default: a line per lap"),
    "diagnose": ("print only the final count of warnings, not the toolbox's reports",
                 "the same as the default: the toolbox's reports"),
}


@main.command()
@job_options("track", "vehicle", "solver", "limits", track="red_bull_ring")
@click.option("--laps", type=click.IntRange(1, 100), default=5, show_default=True,
              help="laps of the stint, solved one after the other on one model (--limit: per "
                   "lap, over the car file's [limits])")
@click.option("--stint-limit", "stint_limits", multiple=True, metavar="NAME=VALUE",
              help="a budget for the whole stint (repeatable), e.g. tyre_energy=1MJ, "
                   "fuel=2kg: each lap may use what is left over the laps left")
@click.option("--out", "out_dir", default="results/stint", show_default=True,
              type=click.Path(file_okay=False), help="folder of lap_NN/ and stint.csv/.xlsx")
def stint(track, vehicle, solver, laps, limits, stint_limits, out_dir):
    """Solve a stint: LAPS laps of a closed circuit on one model, each from the exit state of
    the one before, the car lighter by the fuel burned ([fuel]); docs/energy.md."""
    from .post.stint import StintError, solve_stint
    try:
        res = solve_stint(track, vehicle, laps, limits=list(limits), solver=solver,
                          stint_limits=list(stint_limits), out_dir=out_dir,
                          echo=_Echo(_verbosity()))
    except (ValueError, OSError, StintError) as exc:
        _fail(str(exc))
    times = ", ".join(f"{r['lap_time_s']:.3f}" for r in res["laps"])
    click.echo(f"stint of {laps} laps in {res['wall_s']:.1f} s: lap times {times} s; "
               f"written to {out_dir}/ (stint.csv, stint.xlsx, lap_01/ ...)")


def _add_verbosity(cmd: click.Command) -> None:
    """Give ``cmd`` the options ``-q/--quiet`` and ``-v/--verbose`` (taken out of the
    callback's keywords; the command reads them with :func:`_verbosity`)."""
    names = {p.name for p in cmd.params}
    if "quiet" in names or "verbose" in names:
        return
    quiet_help, verbose_help = _QUIET_VERBOSE_HELP.get(cmd.name, (
        "accepted on every command; this one prints its listing, which -q does not shorten",
        "accepted on every command; this one prints its listing, which -v does not lengthen"))
    cmd.params.append(click.Option(["-q", "--quiet"], is_flag=True, help=quiet_help))
    cmd.params.append(click.Option(["-v", "--verbose"], is_flag=True, help=verbose_help))
    callback = cmd.callback

    @functools.wraps(callback)
    def run(*args, quiet=False, verbose=False, **kwargs):
        if quiet and verbose:
            _fail("-q/--quiet and -v/--verbose: give one of them")
        click.get_current_context().meta[_VERBOSITY_KEY] = -1 if quiet else (1 if verbose else 0)
        return callback(*args, **kwargs)

    cmd.callback = run


for _command in main.commands.values():     # keep this after every command of the module
    _add_verbosity(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
