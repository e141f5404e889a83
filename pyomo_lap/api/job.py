"""The whole job in one call, :func:`solve_sector`: load the track and the car, build or reuse
the model, initialize (or warm-start), solve (with mesh continuation when asked or needed),
refine, write the results; :class:`SectorResults`, what it returns.

Its options are :data:`pyomo_lap.api.config.SOLVE_CONFIG`; what it makes of a solve (summary,
channels, export) is :mod:`pyomo_lap.api.results`; the refinement of the mesh
:mod:`pyomo_lap.api.refine`.
"""
from __future__ import annotations

import importlib
import math
import time
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pyomo.environ as pyo
from pyomo.common.config import document_kwargs_from_configdict

from ..analysis.sensitivities import (
    SENSITIVITY_SOLVER_OPTIONS,
    declare_multiplier_suffixes,
)
from ..folders.results_folder import check_output_dir
from ..ocp.build import (
    VEHICLE_MODELS,
    build_model,
    free_parameters,
    models_with,
    point_rows_recorder,
    set_vehicle,
    vehicle_model,
)
from ..ocp.full_model import VehicleStructureError
from ..ocp.initialize import initialize_model
from ..ocp.options import check_ocp_options
from ..ocp.racecar import junction_boundaries
from ..solvers.lap.compiled import prefetch_point_functions
from ..solvers.solve import (
    CHECKED_SOLVERS,
    DEFAULT_SOLVER,
    SolveInterrupted,
    check_solver_options,
    ensure_solver,
    solve_model,
)
from ..track import checks as track_checks
from ..track.corners import (
    corner_file_for,
    sector_file_for,
    track_corners,
    track_sectors,
)
from ..track.geometry import Track
from ..track.gps import lat_lon_order_warnings
from ..track.loading import load_track
from ..util.overlap import while_solver_runs
from ..util.progress import echo_progress
from ..util.steps import check_step
from ..vehicle.car import load_vehicle
from ..vehicle.limits import limits_car_problems, merge_limits
from ..vehicle.schema import suspicious_values
from .config import (
    SOLVE_CONFIG,
    WARM_START_MU_INIT,
    _check_free_before_build,
    job_model,
    job_options,
    prefetch_options,
)
from .continuation import (
    CONTINUATION_IPOPT_OPTIONS,
    solve_by_continuation,
    stage_element_lengths,
)
from .refine import _refine_job
from .results import (
    SolveFailedError,
    _input_files,
    model_size,
    result_line,
    results_of_solve,
    track_data_lines,
)
from .state import Job
from .warm_start import apply_warm_start, check_source, read_source

__all__ = ["solve_sector", "SectorResults", "reads_start_multipliers"]


@document_kwargs_from_configdict(SOLVE_CONFIG)
def solve_sector(config: Optional[dict] = None, *, echo: Callable[[str], None] = print,
                 progress=None, model_cache: Optional[dict] = None, on_iteration=None,
                 **kwargs):
    """Build, initialize and solve the minimum-time problem on a sector, and export.

    Parameters
    ----------
    config : dict, optional
        Options (:data:`SOLVE_CONFIG`, listed below as keyword arguments); keywords given
        directly override them. On a closed track a sector is at most one lap
        (``periodic=True, length=None`` for the lap itself).
    echo : callable
        ``echo(str)`` for progress messages.
    progress : callable, optional
        ``progress(label, done, total)`` for the model build and the channel evaluation
        (default: :func:`pyomo_lap.util.progress.echo_progress` through ``echo``).
    model_cache : dict, optional
        Where to keep the built model for the next call (a setup study: the same job for
        several cars, as each worker of :func:`pyomo_lap.sweep` does). A later call with the
        same track (a name or file, unchanged on disk), sector, mesh and model options puts
        the new car into the kept model (:func:`pyomo_lap.ocp.build.set_vehicle`: the same
        rows, bounds, entry speed and scaling as a new build, in about a tenth of its time)
        instead of building one; the summary says ``"model_reused": true``. The track, as
        loaded, is kept with it. Any other call builds and keeps its model instead (one model
        is kept). The model returned is the kept
        one: the next call changes it, and what you change on it (constraints added or
        deactivated, variables fixed) stays in it for the next call. Not with ``sensitivities``,
        ``free``, ``lift`` or a :class:`Track` object (a new build each time).
    on_iteration : callable, optional
        ``lap_ipopt`` only: called at every IPOPT iteration of the solve with IPOPT's values
        (``on_iteration(info)``, :class:`pyomo_lap.util.progress.IterationProgress`: one line
        updated about once a second; returning False stops IPOPT).

    Returns
    -------
    SectorResults
        ``(model, SolveReport, DataFrame or None, Summary)``, unpacking as a tuple, with
        ``.sensitivities`` (a DataFrame with ``sensitivities=True``, else None).
        The summary (:class:`pyomo_lap.results.summary.Summary`: ``summary.json``'s keys as
        its fields, ``res.summary.lap_time_s``, and as a mapping, ``res.summary["lap_time_s"]``)
        holds, besides the results, what was done to the
        track's data (``track_processing``), the values assumed (``track_assumptions``), the
        repairs (``track_repairs``: those made when a bundled track was built, then the
        loader's) and the absolute paths of the input files.

    Raises
    ------
    ValueError
        An unknown option or a value outside its domain (the message names the option, the
        value and what was expected); a solver option the solver would refuse
        (:class:`pyomo_lap.solvers.solve.SolverOptionError`, checked against the solver's own
        option list before the track is loaded:
        :func:`pyomo_lap.solvers.solve.check_solver_options`); bad track, vehicle or options (before any solve), a
        sector longer than one lap of a closed track, ``track_width`` with a :class:`Track`;
        :class:`TrackDataError` and :class:`VehicleFileError` list every problem of the data.
    SolverNotFoundError
        The solver is not installed (before any build).
    SolveFailedError (a RuntimeError)
        The solver did not reach an optimal solution: the message says what happened, the
        solver's status and a hint (after writing partial results, marked as such, to
        ``<out_dir>.failed``; an existing ``out_dir`` is left untouched).
    SolveInterrupted (a KeyboardInterrupt)
        Ctrl-C (or a SIGTERM handled as one) during the solve; ``out_dir`` is left untouched.
        With ``lap_ipopt`` and an ``out_dir``, IPOPT's last iterate is written (a partial
        export, with ``solution.npz``) to ``<out_dir>.interrupted``, named by
        ``exc.interrupted_dir`` (else None), from which ``warm_start_from`` starts a later
        solve.
    ResultsNotWrittenError (an OSError)
        The results could not be written to ``out_dir`` (after saving them to a fallback
        folder that the message names: a solved result is never lost).
    """
    held = []    # the lock on out_dir: taken before the build (check_output_dir), released here
    try:
        return _solve_sector(job_options(config, **kwargs), echo, progress, model_cache, held,
                             on_iteration)
    finally:
        for lock in held:
            lock.release()


def _solve_sector(cfg, echo, progress, model_cache, held: list, on_iteration=None):
    """The work of :func:`solve_sector` on checked options ``cfg``, in its steps (each a
    function below, sharing the job's state ``job``, a :class:`pyomo_lap.api.state.Job`); the
    lock on ``out_dir`` (:class:`pyomo_lap.results.table.OutputLock`) is appended to ``held``
    when taken."""
    job = Job(cfg=cfg, echo=echo, progress=progress, cache=model_cache, held=held,
              out_dir=cfg.out_dir, on_iteration=on_iteration)
    _check_job(job)                 # every option, before anything is loaded or built
    _load_inputs(job)               # track, sector, car, solver, results folder
    _build_or_reuse(job)            # the model (kept in model_cache or built)
    _initial_guess(job)             # initial guess, warm starts, free parameters
    try:
        with while_solver_runs(_post_imports(job.out_dir is not None)):
            _solve_job(job)         # the solve (again from the usual start if a warm one fails)
    except SolveInterrupted as exc:
        _keep_interrupted(job, exc)  # the last iterate to <out_dir>.interrupted
        raise
    _stop_if_not_started(job)       # no partial results of a solve that never started
    _refine_job(job)                # a finer mesh where the defects are large, solved again
    results_of_solve(job)           # summary.json's content; the channels, self-check, files
    if not job.rep.ok:
        kept = (f" Partial results (the last point, marked \"partial\": true) are in {job.where}/; "
                f"{job.out_dir}/ was left untouched." if job.where is not None else "")
        raise SolveFailedError(f"{cfg.solver} did not find an optimal solution: "
                               f"{job.rep.describe()}.{kept}", job.rep, job.where)
    echo(result_line(job.summary, cfg.periodic))
    return SectorResults(job.m, job.rep, job.df, job.summary, job.sens, job.self_check)


_AFTER_THE_SOLVE = ("pyomo_lap.results.table", "pyomo_lap.verify.quality")
"""Modules the channels need after every solve (pandas among them: 0.2 s)."""


_FOR_THE_EXPORT = ("pyarrow.csv", "pyarrow.parquet", "xlsxwriter")
"""Modules the export needs after the solve (:func:`pyomo_lap.results.table.write_results`)."""


def _post_imports(export: bool) -> Callable[[], None]:
    """The imports of the channels (and of the export, when ``export``), to run while IPOPT
    works (:func:`pyomo_lap.util.overlap.while_solver_runs`): 0.2-0.3 s of every solve no
    longer waited for after it on a machine with a second core. The later imports of the
    same modules wait for one under way (Python's per-module import locks); one that fails
    here fails again, with its message, where the module is used."""

    def work():
        for name in _AFTER_THE_SOLVE + (_FOR_THE_EXPORT if export else ()):
            try:
                importlib.import_module(name)
            except Exception:   # noqa: BLE001  (raised again, with its message, where used)
                pass
    return work


def _check_job(job: Job) -> None:
    """The job's options checked together (ValueError, one line): the model (the vehicle file
    may name it), sensitivities, OCP and solver options, a Track object with a width or flat, free
    parameters; ``job.model``, ``job.ocp_options``, ``job.solver_options``, ``job.reuse``."""
    cfg = job.cfg
    cfg.model = job.model = job_model(cfg.model, cfg.vehicle)
    vm = VEHICLE_MODELS.get(job.model) if isinstance(job.model, str) else None
    if cfg.sensitivities and vm is not None and not vm.lap_time_sensitivities:
        raise ValueError(f"sensitivities = True with model = {job.model!r}: the lap-time "
                         "sensitivities need one of the models "
                         f"{', '.join(map(repr, models_with('lap_time_sensitivities')))}")
    job.ocp_options = check_ocp_options(cfg.ocp_options)
    job.solver_options = check_solver_options(cfg.solver, cfg.solver_options) or None
    if vm is None:   # a VehicleModel object: build_model takes it, not this job
        raise ValueError(f"model = {job.model!r}: expected one of "
                         f"{', '.join(map(repr, VEHICLE_MODELS))}")
    if isinstance(cfg.track, Track) and cfg.track_width is not None:
        raise ValueError(f"track_width = {cfg.track_width!r} m with a Track object: expected a "
                         "track name or file (for a Track, give its widths when building it)")
    if isinstance(cfg.track, Track) and cfg.lat_lon_order != "auto":
        raise ValueError(f"lat_lon_order = {cfg.lat_lon_order!r} with a Track object: expected "
                         "a GPS track file (for a Track, load it with load_track(..., "
                         "lat_lon_order=...))")
    if isinstance(cfg.track, Track) and cfg.flat:
        raise ValueError("flat = True with a Track object: expected a track name or file (for "
                         "a Track, load it with load_track(..., flat=True))")
    # a kept model (and its track) serves this call: see model_cache
    job.reuse = (job.cache is not None and not cfg.sensitivities
                 and not job.ocp_options.get("lift") and not isinstance(cfg.track, Track)
                 and not cfg.free)
    if cfg.keep_sum and not cfg.free:
        raise ValueError("keep_sum without free parameters: give them with free "
                         "(--free NAME=LOWER:UPPER)")


def _load_inputs(job: Job) -> None:
    """The track (repairs and data steps said), the sector, the car, the checks that need
    them (the car fits, free parameters the rows use), the solver, the results folder (locked);
    ``job.tr``, ``job.p``, ``job.start``, ``job.length``, ``job.track_key``."""
    cfg, echo = job.cfg, job.echo
    track = cfg.track
    job.track_key = ("track " + _model_key(track, cfg.repair_track, cfg.track_width, {}, cfg.flat,
                                           cfg.lat_lon_order) if job.reuse else None)
    with warnings.catch_warnings():      # the repairs are reported through echo instead
        warnings.simplefilter("ignore", track_checks.TrackRepairWarning)
        if isinstance(track, Track):
            tr = track
        elif job.reuse and job.track_key in job.cache:
            tr = job.cache[job.track_key]
        else:
            tr = load_track(track, repair=cfg.repair_track, track_width=cfg.track_width,
                            flat=cfg.flat, lat_lon_order=cfg.lat_lon_order)
    for r in getattr(tr, "build_repairs", []):
        echo(f"track repaired when its bundled file was built: {r}")
    for f in getattr(tr, "findings", []):
        echo(f"track repaired: {f}")
    for line in lat_lon_order_warnings(getattr(tr, "processing_steps", None) or []):
        echo(line)                            # a GPS file's order of lat and lon: said always
    detail = getattr(echo, "detail", None)    # the CLI's echo: the steps only with -v
    for line in track_data_lines(tr, brief=True) if detail is not None else ():
        echo(line)
    for line in track_data_lines(tr):
        (detail or echo)(line)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", track_checks.TrackRepairWarning)
        job.start, job.length, fixes = track_checks.check_sector(tr, cfg.start, cfg.length,
                                                                 repair=cfg.repair_track)
    p = load_vehicle(cfg.vehicle) if isinstance(cfg.vehicle, (str, Path)) else cfg.vehicle
    for f in fixes:
        echo(f"sector repaired: {f}")
    for line in suspicious_values(p):
        echo(f"warning: vehicle {p.name}: {line}")
    track_checks.check_vehicle_fits(tr, p, job.start, job.length)
    if cfg.every is not None and cfg.every > job.length * (1 + 1e-12):
        raise ValueError(f"every = {cfg.every:g} m: expected a step of at most the sector's "
                         f"length ({job.length:g} m)")
    if cfg.every is not None:      # rows without bound on a step finer than the mesh resolves
        span = job.length if job.length is not None else tr.length - job.start
        h = float(job.ocp_options.get("element_length") or 10.0)
        n = (cfg.nfe or math.ceil(span / h - 1e-9)) * int(cfg.ncp or 1)
        check_step(float(cfg.every), span, n, option="every =",
                   of=f"the mesh points asked for ({'nfe' if cfg.nfe else f'element_length {h:g} m'}"
                      f", ncp {cfg.ncp})")
    if cfg.free:           # a setup optimization the car's rows cannot do: said before building
        _check_free_before_build(p, job.model, cfg.periodic, job.ocp_options, cfg)
    ensure_solver(cfg.solver)  # fail before building when the solver is missing
    if job.out_dir is not None:
        # fail before building when OUT is unusable, holds files of the user's or another run
        # writes into it; locked from here to the end (released by solve_sector)
        job.out_dir = check_output_dir(job.out_dir, echo=echo, hold=job.held)
    job.tr, job.p = tr, p
    _track_corners(job)


def _track_corners(job: Job) -> None:
    """The track's corners and sector starts (:mod:`pyomo_lap.track.corners`: the files beside
    the track file, else detected), read before the solve so a bad file stops the job early;
    ``job.corners``, ``job.sector_boundaries`` (None without a sector file)."""
    tr = job.tr
    job.corners = track_corners(tr)
    path = corner_file_for(tr)
    job.corners_source = str(path) if path is not None else "detected"
    starts = track_sectors(tr)
    job.sector_boundaries = None if starts is None else {
        "s_start_m": [s for s, _ in starts], "names": [n for _, n in starts],
        "track_length_m": float(tr.length), "closed": bool(tr.closed),
        "source": str(sector_file_for(tr))}


def _build_or_reuse(job: Job) -> None:
    """The model: the one kept in ``model_cache`` given this car, or a new build (the compiled
    point functions prepared meanwhile); ``job.m``, ``job.reused``, ``job.size``."""
    cfg, echo, tr, p = job.cfg, job.echo, job.tr, job.p
    limits = merge_limits(getattr(p, "limits", None), cfg.limits)
    problems = limits_car_problems(p, limits, field="limit fuel")   # before the build
    if problems:
        raise ValueError(problems[0])
    length = job.length if job.length is not None else tr.length - job.start
    echo(f"track {tr.name}: {tr.length:.1f} m ({'closed' if tr.closed else 'open'}); vehicle {p.name}")
    echo(f"building the model: sector {job.start:.0f} m + {length:.0f} m, "
         f"nfe={cfg.nfe if cfg.nfe is not None else 'auto (from the element length)'}, "
         f"ncp={cfg.ncp}, {cfg.scheme} ...")
    if job.progress is None:
        job.progress = echo_progress(echo)
    compiled = prefetch_options(cfg, job.ocp_options)
    compiling = None
    if compiled is not None:
        # the compiled per-point functions of this car: the C compiler runs while Pyomo builds
        # (nothing to do when a car of the same structure compiled them before)
        compiling = prefetch_point_functions(point_rows_recorder(p, compiled))
    job.build_kwargs = dict(start=job.start, length=job.length, nfe=cfg.nfe, ncp=cfg.ncp,
                            scheme=cfg.scheme, initial_speed=cfg.initial_speed,
                            periodic=cfg.periodic, model=job.model,
                            **({"limits": limits} if limits else {}),
                            **job.ocp_options)   # the same model whichever solver is named
    m, key = None, None
    if job.reuse:
        key = _model_key(cfg.track, cfg.repair_track, cfg.track_width, job.build_kwargs, cfg.flat,
                         cfg.lat_lon_order)
        m = _reuse_model(job.cache, key, p)
        if job.cache.get(key) is None:
            job.cache.clear()          # one model kept: the other one is freed first
    job.reused = m is not None
    if m is None:
        m = build_model(tr, p, progress=job.progress, **job.build_kwargs)
        if key is not None:
            job.cache[key] = m
            job.cache[job.track_key] = tr        # the model's track, loaded once
    job.m, job.size = m, model_size(m)
    echo(f"  {'the kept model given the car' if job.reused else 'built'} in "
         f"{m.problem.build_time_s:.1f} s: {len(m.s)} points, {m.problem.options.nfe} elements; "
         f"the Pyomo model has {job.size['n_variables']} variables and "
         f"{job.size['n_constraints']} constraints")
    if compiling is not None and compiling.compiling:
        echo("  compiling this model's point functions to machine code (once on this machine, "
             "for every car; the set-up's `pyomo-lap compile` makes the common ones ahead) ...")


def _initial_guess(job: Job) -> None:
    """The initial guess (quasi-steady; the solve of the model the option ``initial_guess``
    names, where its ``VehicleModel.initial_guess_for`` starts the job's model; a warm start
    from a results folder), then the free parameters unfixed and the sensitivities' solver options;
    ``job.info``, ``job.warm``, ``job.init_s``, ``job.setup_start``."""
    cfg, echo, m = job.cfg, job.echo, job.m
    t0 = time.perf_counter()
    job.info = initialize_model(m)
    job.warm = None
    start = (None if cfg.initial_guess == "cold" else
             vehicle_model(cfg.initial_guess).initial_guess_for.get(job.model))
    if start is not None:
        job.warm = _start_from_model(job, start)
    job.warm_source = None
    if cfg.warm_start_from is not None:
        job.warm_source = _warm_start(job)
    job.init_s = time.perf_counter() - t0
    echo(f"  initial guess in {job.init_s:.1f} s (quasi-steady estimate "
         f"{job.info['estimated_time_s']:.2f} s)")
    job.setup_start = job.setup_baseline = None
    if cfg.free:
        job.setup_baseline = _setup_baseline(job)
        job.setup_start = free_parameters(m, cfg.free, cfg.keep_sum)
        echo("  setup optimization: " + ", ".join(f"{k} in [{lo:g}, {up:g}] from {v0:g}"
                                                  for k, (v0, lo, up) in job.setup_start.items())
             + "".join(f"; {' + '.join(g)} held" for g in cfg.keep_sum or ()))
    if cfg.sensitivities:
        declare_multiplier_suffixes(m)       # the multipliers come back with the solution
        # a tighter solve: the active set and the multipliers the sensitivities stand on
        job.solver_options = {**SENSITIVITY_SOLVER_OPTIONS, **(job.solver_options or {})}


def _warm_start(job: Job) -> dict:
    """The model's start moved from the results folder ``warm_start_from`` onto this job's
    mesh, sector and car (:func:`pyomo_lap.api.warm_start.apply_warm_start`), after the usual
    initial guess; what it covered, for the console and ``summary.json``
    (``warm_start_source``). WarmStartError (a ValueError) before the solve: another track or
    vehicle model, no results there."""
    cfg, tr = job.cfg, job.tr
    src = read_source(cfg.warm_start_from)
    sha = _input_files(tr, cfg.vehicle).get("track_file_sha256")
    check_source(src, track_name=tr.name, track_sha256=sha, model=job.model)
    info = apply_warm_start(job.m, src, track_length=float(tr.length) if tr.closed else None)
    summ = src["summary"]                       # a Summary (read_source)
    mesh = summ.mesh or {}
    out = {"folder": str(cfg.warm_start_from), "covered_share": info["covered_share"],
           "covered_m": info["covered_m"], "n_variables_set": info["n_variables"],
           "variables_missing": info["variables_missing"], "multipliers": info["multipliers"],
           "multipliers_used": info["multipliers"] and reads_start_multipliers(cfg.solver),
           "same_mesh": info["same_mesh"], "source_car": summ.vehicle,
           "source_start_m": summ.start_m, "source_length_m": summ.length_m,
           "source_periodic": bool(summ.periodic),
           "source_mesh": {"n_elements": mesh.get("n_elements"), "ncp": summ.ncp,
                           "scheme": summ.scheme, "n_points": summ.n_points}}
    job.echo(f"  warm start from {cfg.warm_start_from}: {100 * out['covered_share']:.0f} % of "
             f"the sector ({out['covered_m']:.0f} m) from car {out['source_car']}, sector "
             f"{out['source_start_m'] or 0:g} m + {out['source_length_m'] or 0:g} m on "
             f"{mesh.get('n_elements')} elements x ncp {summ.ncp}"
             f"{' (this mesh)' if out['same_mesh'] else ' (interpolated)'}"
             + ("; with its multipliers" if out["multipliers_used"] else
                "; its multipliers not used (this solver does not read them)"
                if out["multipliers"] else "; primal values only (no multipliers there)"))
    return out


def reads_start_multipliers(solver: str) -> bool:
    """Whether the solver takes starting multipliers from the suffixes ``dual``,
    ``ipopt_zL_in``, ``ipopt_zU_in`` (:data:`pyomo_lap.solvers.warm_start.WARM_START_SOLVERS`
    less Pyomo's ``ipopt``: with the suffixes of a folder's multipliers moved onto another mesh,
    its executable did not exit normally on the default car (issue 36), so a folder's warm
    start gives it the primal values only)."""
    return solver == DEFAULT_SOLVER


def _setup_baseline(job: Job):
    """The baseline of a setup optimization: the same job solved with the parameters fixed at
    their start values (the car as given), before they are freed; the free solve starts from
    its solution. ``{"lap_time_s", "iterations", "solve_time_s"}``, or None (the solve failed:
    the model is initialised again and the setup optimization goes on without a baseline)."""
    job.echo("  baseline: the job with the parameters fixed at their start values ...")
    rep = solve_model(job.m, solver=job.cfg.solver, options=job.solver_options)
    if not rep.ok:
        job.echo(f"  baseline: {rep.termination_condition}; no baseline lap time")
        initialize_model(job.m)
        return None
    lap = float(pyo.value(job.m.lap_time))
    job.echo(f"  baseline time {lap:.3f} s ({rep.iterations} iterations, {rep.solve_time_s:.1f} s)")
    return {"lap_time_s": lap, "iterations": rep.iterations, "solve_time_s": rep.solve_time_s}


def _start_from_model(job: Job, start: Callable) -> dict:
    """Solve the model the job option ``initial_guess`` names on the same mesh and start the
    job's model from it with ``start`` (that model's ``VehicleModel.initial_guess_for`` entry
    for the job's model, e.g. :func:`pyomo_lap.ocp.single_track.warm_start_full`); what it
    took, for the summary (the keys ``single_track_*`` of ``summary.json``, kept)."""
    cfg, echo = job.cfg, job.echo
    source = cfg.initial_guess
    echo(f"  initial guess from the {source} model on the same mesh ...")
    ms = build_model(job.tr, job.p, **{**job.build_kwargs, "nfe": job.m.problem.options.nfe,
                                       "model": source, "limits": None})
    initialize_model(ms)
    rs = solve_model(ms, solver=cfg.solver, options=job.solver_options)
    if not rs.ok:
        raise RuntimeError(f"the {source} model for the initial guess did not solve: "
                           f"{rs.termination_condition}")
    warm = {"single_track_time_s": float(pyo.value(ms.lap_time)),
            "single_track_iterations": rs.iterations, "single_track_solve_time_s": rs.solve_time_s}
    start(job.m, ms)
    echo(f"  {source} {'lap' if cfg.periodic else 'sector'} time "
         f"{warm['single_track_time_s']:.3f} s ({rs.iterations} iterations, {rs.solve_time_s:.1f} s)")
    return warm


def _solve_job(job: Job) -> None:
    """The solve (with a warm start's barrier parameter; from the usual initial guess again
    if the warm start fails); ``job.rep``, ``job.used_options``, ``job.warm_retry``."""
    cfg, echo, m, size = job.cfg, job.echo, job.m, job.size
    echo(f"solving with {cfg.solver} ...")

    def solve(options):
        more = {} if job.on_iteration is None else {"intermediate": job.on_iteration}
        rep = solve_model(m, solver=cfg.solver, options=options, tee=cfg.tee, **more)
        echo(f"  {rep.termination_condition} ({rep.exit_message or rep.message}) after "
             f"{rep.iterations} iterations, {rep.solve_time_s:.1f} s")
        if rep.n_variables is not None and rep.n_variables != size["n_variables"]:
            # summary.json's n_variables: the problem the solver saw, not the Pyomo model
            echo(f"  the solver saw {rep.n_variables} variables, {rep.n_constraints} constraints "
                 "(in summary.json): the model's less its fixed variables"
                 + (" and pyomo.dae's derivatives, eliminated" if cfg.solver == DEFAULT_SOLVER else ""))
        return rep

    warm = job.warm_source
    job.used_options = (job.solver_options if warm is None else
                        {**({} if warm["multipliers_used"]     # solve_model's warm start
                            else {"mu_init": WARM_START_MU_INIT}), **(job.solver_options or {})})
    declare_multiplier_suffixes(m)  # the multipliers come back for solution.npz (a later warm start)
    job.warm_retry = None
    job.continuation = None
    why = _continuation_reason(job)
    if why is not None:
        job.rep = _continuation(job, solve, why)
        return
    job.rep = solve(job.used_options)
    if (job.rep.kind != "interrupted" and not job.rep.ok and cfg.mesh_continuation == "auto"
            and _continuation_possible(job)):
        failed = {"termination_condition": job.rep.termination_condition,
                  "iterations": job.rep.iterations, "solve_time_s": job.rep.solve_time_s}
        echo("  the direct solve did not end optimal: solving again by mesh continuation ...")
        initialize_model(m)
        job.rep = _continuation(job, solve, "the direct solve did not end optimal")
        job.continuation["direct_solve"] = failed
        return
    if cfg.warm_start_from is not None and not job.rep.ok:
        # the warm start did not lead to an optimum: the usual start, as without it
        job.warm_retry = {"termination_condition": job.rep.termination_condition,
                          "iterations": job.rep.iterations, "solve_time_s": job.rep.solve_time_s}
        echo("  the warm start failed: solving again from the usual initial guess ...")
        initialize_model(m)
        for name in ("ipopt_zL_in", "ipopt_zU_in"):      # no starting multipliers
            if m.component(name) is not None:
                m.del_component(name)
        job.used_options = job.solver_options
        job.rep = solve(job.used_options)


def _continuation_possible(job: Job) -> bool:
    """Whether the job's model can be solved by mesh continuation: not from a warm start
    (``warm_start_from``: it starts near its solution already) nor with free parameters (the
    coarse models would need them too)."""
    return job.cfg.warm_start_from is None and not job.cfg.free


def _fine_element_m(m) -> float:
    """The mean element length of a built model [m]."""
    return float(m.problem.sector_length) / int(m.problem.options.nfe)


def _straddled_junctions(m) -> int:
    """How many curvature steps of an arc track (the junctions of its segments,
    :func:`pyomo_lap.ocp.racecar.junction_boundaries`) lie inside an element of ``m`` rather
    than on an element end (0 for a track of points, whose curvature does not step)."""
    L = float(m.problem.sector_length)
    knots = junction_boundaries(m.problem.track, float(m.problem.options.start), L, L)
    if knots is None:
        return 0
    ends = np.array(sorted(float(x) for x in m.s.get_finite_elements()))
    inner = np.asarray(knots[1:-1], float)
    if inner.size == 0:
        return 0
    gap = np.min(np.abs(inner[:, None] - ends[None, :]), axis=1)
    return int(np.sum(gap > 1e-6 * max(1.0, L)))


def _continuation_reason(job: Job) -> Optional[str]:
    """Why the job is solved by mesh continuation from the start (``mesh_continuation``
    ``"on"``, or ``"auto"`` with curvature steps inside elements), or None (a direct
    solve)."""
    cfg, m = job.cfg, job.m
    if cfg.mesh_continuation == "off" or not _continuation_possible(job):
        return None
    if cfg.mesh_continuation == "on":
        return "mesh_continuation = 'on'"
    n = _straddled_junctions(m)
    if n:
        return (f"{n} curvature step{'s' if n != 1 else ''} of the track inside elements of "
                "the job's mesh")
    return None


def _continuation(job: Job, solve, why: str):
    """The job's model solved by mesh continuation
    (:func:`pyomo_lap.api.continuation.solve_by_continuation`: coarse meshes of the job's
    problem, the OCP option ``element_length`` halved down to twice the job's mean element,
    then the job's mesh from the finest one's solution); ``job.continuation`` says what was
    solved (summary.json ``mesh_continuation``), ``job.used_options`` the fine solve's options.
    Returns the fine solve's report."""
    cfg, m = job.cfg, job.m
    lengths = stage_element_lengths(_fine_element_m(m), float(m.problem.options.element_length))
    job.echo(f"  mesh continuation ({why}): coarse meshes of "
             + ", ".join(f"{h:.3g}" for h in lengths) + " m elements first ...")
    warm = {**(CONTINUATION_IPOPT_OPTIONS if cfg.solver in CHECKED_SOLVERS else {}),
            **(job.solver_options or {})}
    kw = {k: v for k, v in job.build_kwargs.items() if k not in ("nfe", "element_boundaries")}

    def build(h):
        mc = build_model(job.tr, job.p, progress=lambda *a: None, **{**kw, "element_length": h})
        initialize_model(mc)
        return mc

    def solve_stage(model, options):
        used = job.solver_options if options is None else options
        if model is m:
            job.used_options = used
            return solve(used)
        more = {} if job.on_iteration is None else {"intermediate": job.on_iteration}
        try:
            return solve_model(model, solver=cfg.solver, options=used, **more)
        except SolveInterrupted as exc:
            exc.load_iterate = None      # a coarse mesh's iterate: nothing of the job's to keep
            raise

    t0 = time.perf_counter()
    rep, stages = solve_by_continuation(m, build, lengths, solve=solve_stage, warm_options=warm,
                                        echo=job.echo)
    job.continuation = {"reason": why, "stages": stages,
                        "iterations": sum(s["iterations"] or 0 for s in stages),
                        "coarse_time_s": time.perf_counter() - t0 - (rep.solve_time_s or 0.0)}
    return rep


def _keep_interrupted(job: Job, exc) -> None:
    """A solve stopped by Ctrl-C or SIGTERM (``exc``, a SolveInterrupted) with an ``out_dir``:
    IPOPT's last iterate loaded into the model and written, as partial results with its
    ``solution.npz``, to ``<out_dir>.interrupted`` (``out_dir`` untouched), named by
    ``exc.interrupted_dir``; nothing when the solver gives no iterate (not ``lap_ipopt``,
    stopped before its first iteration). A second interruption meanwhile stops the export
    (nothing written)."""
    exc.interrupted_dir = None
    if job.out_dir is None or exc.load_iterate is None:
        return
    iteration = exc.load_iterate()
    job.rep = exc.report
    job.echo(f"  keeping the last iterate (iteration {iteration}) ...")
    results_of_solve(job, own={"interrupted_at_iteration": iteration})
    exc.interrupted_dir = job.where


def _stop_if_not_started(job: Job) -> None:
    """An IPOPT solve that failed before its first iteration (a linear solver that could not
    be loaded, an option refused when the solve started) left the model as built: there are no
    partial results to write. Raises SolveFailedError saying so (nothing written, ``out_dir``
    left untouched); any other solve goes on."""
    rep, cfg = job.rep, job.cfg
    if rep.ok or cfg.solver not in CHECKED_SOLVERS or (rep.iterations is not None
                                                       and rep.iterations >= 0):
        return
    kept = f"; {job.out_dir}/ was left untouched" if job.out_dir is not None else ""
    raise SolveFailedError(f"{cfg.solver} stopped before its first iteration: "
                           f"{rep.describe()}. Nothing was written (there are no partial "
                           f"results){kept}", rep)


def _model_key(track, repair_track, track_width, build_kwargs: dict, flat: bool = False,
               lat_lon_order: str = "auto") -> str:
    """What a model kept in a ``model_cache`` was built from, except the car: the track (a
    name, or a file with its size and modification time, how it was loaded: ``repair_track``,
    ``track_width``, ``flat``, ``lat_lon_order``) and the build's options."""
    where = Path(str(track)).expanduser()
    stamp = None
    if where.is_file():
        st = where.stat()
        stamp = (str(where.resolve()), st.st_size, st.st_mtime_ns)
    return repr((str(track), stamp, repair_track, track_width, bool(flat), lat_lon_order,
                 sorted((k, repr(v)) for k, v in build_kwargs.items())))


def _reuse_model(model_cache: dict, key: str, vehicle):
    """The model kept under ``key`` with ``vehicle`` put into it, or None (none kept, or the car
    differs in structure: :class:`pyomo_lap.ocp.full_model.VehicleStructureError`)."""
    m = model_cache.get(key)
    if m is None:
        return None
    try:
        return set_vehicle(m, vehicle)
    except VehicleStructureError:
        model_cache.pop(key, None)
        return None


class SectorResults(tuple):
    """What :func:`solve_sector` returns: the tuple ``(model, report, trajectory, summary)``
    (it unpacks as before) with these four and :attr:`sensitivities` as attributes.

    Attributes
    ----------
    model : ConcreteModel
    report : SolveReport
    trajectory : DataFrame
        One row per point (:func:`pyomo_lap.results.table.trajectory_dataframe`).
    summary : Summary
        ``summary.json``'s contents (:class:`pyomo_lap.results.summary.Summary`): its keys as
        fields (``summary.lap_time_s``) and, as before, as a mapping
        (``summary["lap_time_s"]``, ``summary.get("self_check")``, ``dict(summary)``;
        ``summary.to_dict()`` for JSON).
    sensitivities : DataFrame or None
        With ``sensitivities=True``: d(lap time)/d(parameter) per parameter
        (:func:`pyomo_lap.analysis.sensitivities.lap_time_sensitivities`), else None.
    self_check : dict or None
        The fast checks of the result and their verdict (``summary.self_check``,
        :func:`pyomo_lap.verify.verdict.self_check`): ``self_check["verdict"]`` is ``"pass"``,
        ``"warn"`` or ``"fail"``. A result that fails is returned (and written) all the
        same: look at it before using it.
    """

    def __new__(cls, model, report, trajectory, summary, sensitivities=None, self_check=None):
        """The tuple of the four, with the sensitivities and the self-check as attributes."""
        self = super().__new__(cls, (model, report, trajectory, summary))
        self.sensitivities = sensitivities
        self.self_check = self_check
        return self

    model = property(lambda self: self[0])
    report = property(lambda self: self[1])
    trajectory = property(lambda self: self[2])
    summary = property(lambda self: self[3])
