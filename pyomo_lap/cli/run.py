"""The commands that run a job or check its inputs or results: ``pyomo-lap solve``, ``sweep``,
``check``, ``validate``, ``export``.
"""
from __future__ import annotations

import math
import shlex
import signal
import sys
import time
import warnings
from pathlib import Path

import click

from ..api import (  # heavy imports
    ResultsNotWrittenError,
    SolveFailedError,
    solve_sector,
)
from ..api.stint import StintError, solve_stint
from ..api.validate import validate_results
from ..folders.writer import FolderWriteError
from ..ocp.options import check_ocp_options, parse_ocp_options
from ..results.fixed_step import export_fixed_step
from ..solvers.solve import SolveInterrupted, SolverNotFoundError, parse_solver_options
from ..sweeps import SweepSpecError, sweep as run_sweep
from ..track import arcs, checks as track_checks
from ..track.gps import lat_lon_order_warnings
from ..track.loading import load_track, track_suffixes
from ..track.report import assumption_lines, format_steps_table
from ..util.progress import IterationProgress, click_progress
from ..vehicle.car import load_vehicle
from ..vehicle.schema import suspicious_values
from .base import (
    _SIGNAL,
    _SOLVE_RESULT_LINES,
    _SWEEP_RESULT_LINES,
    SELF_CHECK_FAILED,
    WRITES_NOTHING,
    _checked,
    _complete_results,
    _Echo,
    _fail,
    _fail_error,
    _full_lap_job,
    _input_files_exist,
    _on_sigterm,
    _shown,
    _solver_options_checked,
    _state,
    _unexpected,
    _verbosity,
    job_options,
    main,
    writes,
)


@writes("OUT (--out), a results folder written whole; OUT.failed, OUT.interrupted")
@main.command()
@job_options("track", "vehicle", "start", "length", "periodic", "nfe", "ncp", "scheme",
             "initial_speed", "model", "initial_guess", "solver", "solver_options", "ocp_options",
             "n_sectors", "out_dir", "every")
@click.option("--max-iter", type=int, default=None,
              help="solver iteration limit, short for --solver-option max_iter=N (default: "
                   "3000 for lap_ipopt, ipopt and ipopt_v2: pyomo_lap.solvers.lap.solver."
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
        _fail(msg, code=1 if isinstance(exc, FolderWriteError) else 2)
    except Exception as exc:  # noqa: BLE001 - reported in one line, never a traceback
        _unexpected(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)
    sc = getattr(res, "self_check", None)
    if sc is not None and sc["verdict"] == "fail":
        where = "" if out_dir is None else f" (written to {out_dir}/ to be looked at)"
        _fail(f"the result failed its self-check{where}: {_failed_checks(sc)}. Hint: a finer "
              "mesh (--nfe, --ocp-option element_length=...) or `pyomo-lap validate` for the "
              "replay", code=SELF_CHECK_FAILED)


def _failed_checks(sc: dict) -> str:
    """The checks of a self-check (:func:`pyomo_lap.verify.verdict.self_check`) that failed,
    with their details: ``'energy_balance: +0.120 m/s^2 over ...; speed_consistency: ...'``."""
    return ", ".join(f"{n}: {c['detail']}" for n, c in sc["checks"].items()
                     if c["verdict"] == "fail")


def _iteration_progress(show, level: int):
    """``solve``'s progress line while IPOPT works
    (:class:`pyomo_lap.util.progress.IterationProgress` on standard error), or None: ``show``
    True/False (``--progress``/``--no-progress``) decides; by default it is on when standard
    error is a terminal and neither -q nor -v was given (-v streams IPOPT's own table)."""
    if show is None:
        show = level == 0 and sys.stderr.isatty()
    return IterationProgress(interval_s=1.0) if show else None


def _interrupted(exc, solver: str, out_dir) -> None:
    """``solve`` stopped by Ctrl-C or SIGTERM during the solve: one line saying so, where the
    last iterate was kept (``OUT.interrupted``) and the command that continues from it; exit
    130 or 143."""
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


@writes("OUT (--out), a sweep folder: its table and figures added, rows and cases by its workers")
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
        _fail(f"interrupted by {_SIGNAL['name']}; the finished cases are in {out}/rows/: run "
              "again with --resume to finish the sweep", code=_SIGNAL["code"])
    except (ValueError, OSError) as exc:
        _fail_error(exc)
    if len(table) and (table["status"] != "solved").any():
        sys.exit(1)


def _files_as_options(files, track, vehicle):
    """``pyomo-lap check FILE ...``: each FILE as the track or the car, by its kind (a
    ``.toml`` holding ``[[segment]]`` tables or ``base``: an arc track, another ``.toml``: a
    car, a file of another registered track suffix: a track); ``(track, vehicle)``. A file
    of no known kind, two of one kind, or one also given by ``--track``/``--vehicle`` stops
    with exit 2."""
    ctx = click.get_current_context()
    given = {k: ctx.get_parameter_source(k) != click.core.ParameterSource.DEFAULT
             for k in ("track", "vehicle")}
    chosen = {}
    for f in files:
        path = Path(f).expanduser()
        if not path.is_file():
            _fail(f"check {f}: file not found (looked for {path.resolve()})")
        suffix = path.suffix.lower()
        if suffix == ".toml":
            kind = "track" if arcs.holds_arc_track(path) else "vehicle"
        elif suffix in track_suffixes():
            kind = "track"
        else:
            _fail(f"check {f}: unknown kind of file {suffix or '(no suffix)'!r}; expected a "
                  f"track file ({', '.join(track_suffixes())}) or a car file (.toml)")
        if given[kind] or kind in chosen:
            _fail(f"check {f}: a second {kind} file (the {kind} is already "
                  f"{chosen.get(kind, track if kind == 'track' else vehicle)}); give one {kind}")
        chosen[kind] = f
    return chosen.get("track", track), chosen.get("vehicle", vehicle)


@writes(WRITES_NOTHING)
@main.command()
@click.argument("files", nargs=-1, metavar="[FILE ...]")
@job_options("track", "vehicle", "repair_track", "track_width", "lat_lon_order", "flat")
def check(files, track, vehicle, repair_track, track_width, lat_lon_order, flat):
    """Check a track and a vehicle file (and that the car fits the track) without solving.
    FILE: a track or a car file, told apart by its kind (`pyomo-lap check mytrack.csv`,
    `pyomo-lap check mycar.toml`: a .toml with [[segment]] tables is an arc track, another
    .toml a car), the same as --track FILE or --vehicle FILE.
    Lists what was done to the track's data (a table: elevations missing, outliers dropped,
    gaps filled, smoothing, merged points) and every value assumed because the data lack it
    (widths, banking). Exit code 0 when both can be used, 2 otherwise; every problem is
    listed."""
    track, vehicle = _files_as_options(files, track, vehicle)
    _input_files_exist(track=track, vehicle=vehicle)
    track_width = _checked({"track_width": track_width}).track_width
    try:
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
            for line in suspicious_values(p):
                click.secho(f"warning: vehicle {p.name}: {line}", fg="yellow", err=True)
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


@writes("validation.json, defects.csv and figures added to RESULTS_DIR (figures: --plots)")
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

    Every registered vehicle model's result is checked the same way (the racecar's also on its
    friction ellipses and power).

    Exit code: 0 pass or warn (1 on warn with --strict), 1 fail, 2 bad arguments (not a results
    folder, a result of a model that cannot be checked)."""
    if results_dir is not None and out_dir is not None and Path(results_dir) != Path(out_dir):
        _fail(f"two results folders given: {results_dir} and --out {out_dir}; give one")
    folder = results_dir or out_dir or "results"
    _complete_results(folder)          # a missing folder too (one that a run is replacing)
    try:
        res = validate_results(folder, feedback=not no_feedback, shooting=shooting,
                               open_loop=open_loop, plots=not no_plots, plots_dir=plots_dir,
                               echo=_Echo(_verbosity(), keep=("verdict:", "WARN", "FAIL")))
    except (ValueError, OSError) as exc:
        _fail_error(exc)
    except Exception as exc:               # noqa: BLE001 - one line, not a traceback
        _unexpected(exc)
    verdict = res["verdict"]
    if verdict == "fail" or (verdict == "warn" and strict):
        sys.exit(1)


@writes("RUN/export_every_STEPm or --out, a results folder written whole")
@main.command()
@click.argument("run", type=click.Path(file_okay=False), metavar="RUN")
@click.option("--every", required=True, type=float, metavar="STEP",
              help="the step [m]: rows at 0, STEP, 2 STEP, ... and the sector's end, computed "
                   "there from the collocation polynomials; at least the run's length / (100 "
                   "(mesh points - 1)): at most 100 rows per mesh interval")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder  [default: RUN/export_every_STEPm]")
def export(run, every, out_dir):
    """Write the results of RUN again with the channels every STEP metres of the sector: the
    files `pyomo-lap solve --every STEP` would have written (trajectory.csv, .parquet and the
    workbook on the step; trajectory_mesh.csv and .parquet the mesh rows; summary.json,
    solution.npz), into RUN/export_every_STEPm/ or --out DIR.

    Exit codes: 0 written; 2 not a complete results folder, a bad step, a folder that
    cannot be replaced."""
    _complete_results(run)
    if not (math.isfinite(every) and every > 0):
        _fail(f"--every {_shown(every)}: expected a finite step > 0 m")
    try:
        where = export_fixed_step(run, every, out=out_dir, echo=_Echo(_verbosity()).detail,
                                  say=_Echo(_verbosity()))
    except (ValueError, OSError) as exc:
        _fail_error(exc)
    except Exception as exc:               # noqa: BLE001 - one line, not a traceback
        _unexpected(exc)
    if _verbosity() >= 0:
        click.echo(f"channels every {every:g} m written to {where}/")


@writes("OUT (--out), a stint folder written whole (stint.*, lap_NN/)")
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
    the one before, the car lighter by the fuel burned ([fuel]); docs/energy.md.

    Each lap's folder OUT/lap_NN is a results folder as `pyomo-lap solve` writes one, its
    summary.json with the lap's self-check; each lap's line and the table's self_check column
    say its verdict (PASS, WARN, FAIL).

    Exit codes: 0 every lap solved (self-check pass or warn); 1 the folder could not be
    written; 2 bad input, a folder that is not a stint's, or a lap not solved to optimality
    or out of fuel (the laps before it written); 4 every lap solved and written, but one or
    more failed their self-check (to be looked at, not used); 130 / 143 interrupted.
    """
    try:
        res = solve_stint(track, vehicle, laps, limits=list(limits), solver=solver,
                          stint_limits=list(stint_limits), out_dir=out_dir,
                          echo=_Echo(_verbosity()))
    except (ValueError, OSError, StintError) as exc:
        _fail_error(exc)
    times = ", ".join(f"{r['lap_time_s']:.3f}" for r in res["laps"])
    click.echo(f"stint of {laps} laps in {res['wall_s']:.1f} s: lap times {times} s; "
               f"written to {out_dir}/ (stint.csv, stint.xlsx, lap_01/ ...)")
    failed = [(r["lap"], sc) for r, sc in zip(res["laps"], res["self_checks"])
              if sc is not None and sc["verdict"] == "fail"]
    if failed:
        _fail(f"lap{'s' if len(failed) > 1 else ''} {', '.join(str(k) for k, _ in failed)} of "
              f"the stint failed the self-check (written to {out_dir}/ to be looked at): "
              + "; ".join(f"lap {k}: {_failed_checks(sc)}" for k, sc in failed)
              + f". Hint: `pyomo-lap validate {out_dir}/lap_NN` for the replay",
              code=SELF_CHECK_FAILED)
