"""What a job makes of a solve: ``summary.json``'s contents (result, options, sizes, provenance,
timings), the channels, the self-check and the export into the results folder (a fallback
folder when that fails), the console's lines (:func:`track_data_lines`, :func:`result_line`),
and the errors of a job that did not end with its results written
(:class:`SolveFailedError`, :class:`ResultsNotWrittenError`).
"""
from __future__ import annotations

import hashlib
import json
import math
import platform
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import numpy as np
import pyomo.environ as pyo
from pyomo.version import version

from .. import __version__
from ..analysis.sensitivities import (
    PENALTY_COST_FACTOR,
    lap_time_cost,
    lap_time_sensitivities,
)
from ..folders.writer import ResultsWriter
from ..ocp.common import regularization, vehicle_of_model, vehicle_var
from ..ocp.hybrid import hybrid_summary
from ..ocp.integrals import energy_summary
from ..plots.figures import plot_results
from ..results.corners import corner_records, corner_table
from ..results.fixed_step import fixed_step_lines, model_fixed_step
from ..results.summary import SUMMARY_FORMAT, Summary, as_summary
from ..results.table import (
    FolderNotReplaceableError,
    effective_solver_options,
    sector_records,
    sector_times,
    solution_arrays,
    trajectory_dataframe,
    write_results,
)
from ..solvers.solve import ensure_solver, log_statistics
from ..track.report import assumption_lines, step_lines
from ..vehicle.car import VehicleParameters, models_dir
from ..vehicle.schema import PARAMETER_KEYS
from ..verify.quality import channel_quality, model_quality
from ..verify.verdict import (
    interpolation_of,
    lap_time_cost_text,
    regularization_text,
    self_check,
    self_check_text,
)
from .config import OWN_OCP_OPTIONS
from .state import Job
from .warm_start import multiplier_arrays

__all__ = ["SolveFailedError", "ResultsNotWrittenError", "model_size", "solve_summary",
           "track_data_lines", "result_line", "results_of_solve"]


class ResultsNotWrittenError(OSError):
    """The results of a solve could not be written where asked; the message names the
    fallback folder where they were saved instead."""


class SolveFailedError(RuntimeError):
    """The solver did not find an optimal solution. ``report`` is the
    :class:`~pyomo_lap.solvers.solve.SolveReport`; ``partial_dir`` the folder holding the partial
    results (marked ``"partial": true``), or None."""

    def __init__(self, message: str, report=None, partial_dir=None):
        super().__init__(message)
        self.report = report
        self.partial_dir = partial_dir


def model_size(m) -> dict:
    """Counts of the model's unfixed variables and active constraints (cheap; the NLP that
    the solver sees may drop variables that appear in no constraint)."""
    nv = sum(1 for v in m.component_data_objects(pyo.Var, descend_into=True) if not v.fixed)
    nc = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True, descend_into=True))
    return {"n_variables": nv, "n_constraints": nc}


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _provenance(p, solver_name: str) -> dict:
    """What else is needed to trace a result: the parameters' hash, code and solver versions."""
    out = {"vehicle_parameters_sha256": hashlib.sha256(
        json.dumps(p.as_dict(), sort_keys=True, default=str).encode()).hexdigest()}
    try:
        out["pyomo_lap_git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
            text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        ver = ensure_solver(solver_name).version()
        if ver:
            out["solver_version"] = ".".join(str(v) for v in ver)
    except Exception:  # not every interface reports a version
        pass
    out["created_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return out


def _input_files(tr, vehicle) -> dict:
    """Absolute, resolved paths and SHA-256 of the track and vehicle files the run read (when
    they are files)."""
    out = {}
    src = (getattr(tr, "provenance", None) or {}).get("source_file")
    if src and Path(src).exists():
        out["track_file"] = str(Path(src).resolve())
        out["track_file_sha256"] = _sha256(src)
    if isinstance(vehicle, (str, Path)):
        vp = Path(vehicle) if Path(vehicle).suffix == ".toml" else models_dir() / f"{vehicle}.toml"
        if vp.exists():
            out["vehicle_file"] = str(vp.resolve())
            out["vehicle_file_sha256"] = _sha256(vp)
    return out


def track_data_lines(tr, brief: bool = False) -> list:
    """What was done to a track's data and which values were assumed.

    Parameters
    ----------
    tr : Track
        A loaded track (its ``provenance`` holds the records).
    brief : bool
        False: one short line per step and per assumed value (``'track data: elevation
        outliers dropped: 1 at s = 499 m (largest 300 m at s = 499 m)'``, ``'track: width = 4 m
        each side assumed: ...'``). True: all of it in one line (``'track data: 5 processing
        steps; assumed: width 4 m each side, banking 0 rad (details: -v or pyomo-lap
        check)'``), or none when nothing was done or assumed: what ``pyomo-lap solve`` prints
        without ``-v``.

    Returns
    -------
    list of str
        The lines; the full records are in ``tr.processing_steps`` and ``tr.assumptions`` (and
        a result's ``summary.json``: ``track_processing``, ``track_assumptions``).
    """
    prov = getattr(tr, "provenance", None) or {}
    steps, assumed = prov.get("processing_steps", []), prov.get("assumptions", [])
    if not brief:
        return ([f"track data: {line}" for line in step_lines(steps)]
                + [f"track: {line}" for line in assumption_lines(assumed)])
    if not steps and not assumed:
        return []
    parts = [f"{len(steps)} processing step{'s' if len(steps) != 1 else ''}"] if steps else []
    values = [f"{a['quantity']} {a['value']:.3g} {a['unit']}".rstrip()
              if isinstance(a["value"], (int, float)) and not isinstance(a["value"], bool)
              else f"{a['quantity']} {a['value']} {a['unit']}".rstrip() for a in assumed]
    if values:
        parts.append("assumed: " + ", ".join(values))
    return ["track data: " + "; ".join(parts) + " (details: -v or pyomo-lap check)"]


def result_line(summary: Summary, periodic: bool) -> str:
    """The last line of a solve: ``'lap time ...'`` for a closed lap (``periodic``),
    ``'sector time ...'`` for a sector, with the distance, mean and top speed and the times
    of the timed sectors, and the verdict of the result's self-check when the summary has
    one (``'; self-check PASS'``, ``'; self-check FAIL: energy_balance 6.2 % P_max at s = 75
    m'``: :func:`pyomo_lap.verify.verdict.self_check_text`); ``summary`` a
    :class:`~pyomo_lap.results.summary.Summary` or the dict of its keys."""
    summary = as_summary(summary)
    what = "lap time" if periodic else "sector time"
    line = (f"{what} {summary.lap_time_s:.3f} s over {summary.length_m:.0f} m "
            f"(mean {summary.mean_speed_kmh:.1f} km/h, max {summary.max_speed_kmh:.1f} km/h); "
            "sectors " + ", ".join(f"{x['time_s']:.3f}" for x in summary.sectors) + " s")
    if summary.self_check:
        line += "; " + self_check_text(summary.self_check)
    return line


def _effective_options(solver: str, used: Optional[dict]) -> dict:
    """The options the solver ran with (pyomo_lap's defaults updated by the given ones):
    :func:`pyomo_lap.results.table.effective_solver_options` without the sources."""
    return {k: v for k, (v, _) in effective_solver_options(solver, used or {}).items()}


def _mean_speed_kmh(df) -> float:
    """The time average of the speed channel [km/h] (trapezoids in time): the car's path length
    over the time."""
    t = df["t"].to_numpy(float)
    v = df["speed_kmh"].to_numpy(float)
    return float(np.trapezoid(v, t) / (t[-1] - t[0]))


def _vehicle_parameters(p) -> dict:
    """The car's parameters by their dotted names (``summary.json``'s ``vehicle_parameters``):
    ``{name: value}``, the gravity included."""
    if hasattr(p, "parameter_values"):       # a car of its own schema (the racecar)
        return dict(p.parameter_values())
    out = {k: p.value(k) for k in PARAMETER_KEYS if p.value(k) is not None}
    out["gravity"] = p.gravity
    return out


def _setup_summary(m, start: dict) -> dict:
    """The optimal setup of a solve with free parameters: ``{name: {"value", "start", "lower",
    "upper", "at_bound" ("lower", "upper" or None), "unit"}}``."""
    out = {}
    for key, (v0, lo, up) in start.items():
        var = vehicle_var(m, key)
        v = float(var.value)
        tol = 1e-6 * max(1.0, abs(up - lo))
        at = "lower" if v - lo <= tol else "upper" if up - v <= tol else None
        out[key] = {"value": v, "start": v0, "lower": lo, "upper": up, "at_bound": at,
                    "unit": str(pyo.units.get_units(var))}
    return out


def _mesh_summary(m) -> dict:
    """The finite elements of a built model: count, shortest, longest and their boundaries
    from the sector start [m] (to solve another car on the same mesh: the OCP option
    ``element_boundaries``)."""
    fe = sorted(m.s.get_finite_elements())
    h = [b - a for a, b in zip(fe[:-1], fe[1:])]
    return {"placement": m.problem.mesh,
            "n_elements": len(h), "shortest_m": min(h), "longest_m": max(h),
            "element_boundaries_m": [round(float(b), 6) for b in fe]}


def _corner_summary(job: Job, df, summary: Summary) -> None:
    """``summary.corners`` (the per-corner table, :func:`pyomo_lap.results.corners.corner_table`)
    and ``corners_source``; the sectors at the sector file's starts when there is one."""
    if job.corners is None or not {"s_sector", "t", "speed_kmh"} <= set(df):
        return
    tab = corner_table(df, job.corners, job.tr.length, job.tr.closed)
    summary.corners = corner_records(tab)
    summary.corners_source = job.corners_source
    if job.sector_boundaries is not None:
        summary.sector_boundaries = job.sector_boundaries
        summary.sectors = sector_records(sector_times(df, boundaries=job.sector_boundaries))


def _setup_gain(summary: Summary, baseline) -> None:
    """``summary.setup_baseline``: the baseline (:func:`pyomo_lap.api.job._setup_baseline`)
    and the gain of the optimal setup, ``gain_s`` = baseline - optimum [s] and ``gain_pct``
    [%] of the baseline (positive: the optimum is faster)."""
    if not baseline or summary.lap_time_s is None:
        return
    base = baseline["lap_time_s"]
    gain = base - float(summary.lap_time_s)
    summary.setup_baseline = {**baseline, "gain_s": gain,
                              "gain_pct": 100.0 * gain / base if base else None}


def solve_summary(m, rep, size: Optional[dict] = None) -> Summary:
    """The summary of a solved model: what the model and the solver's report say of the
    result (the part of ``summary.json`` that does not depend on how the job got there; the
    job adds its own, :func:`pyomo_lap.solve_sector`).

    Parameters
    ----------
    m : ConcreteModel
        A model of :func:`pyomo_lap.ocp.build.build_model`, solved (or not: a failed solve's
        values, or none).
    rep : SolveReport
        Its solve's report (:func:`pyomo_lap.solvers.solve.solve_model`).
    size : dict, optional
        :func:`model_size` of ``m`` (computed when needed and not given): the sizes recorded
        when the solver does not report the NLP's own.

    Returns
    -------
    Summary
        ``summary_format``, ``lap_time_s`` [s] (None when the model holds no values), the
        report's ``termination_condition``, ``outcome``, ``solver_hint``, ``solver_status``,
        ``solver_message``, ``ipopt_exit``, ``optimal``, ``n_variables``, ``n_constraints``,
        ``iterations``, ``solve_time_s`` [s], the model's ``build_time_s`` [s], ``nfe``,
        ``ncp``, ``scheme``, ``ocp_options``, ``n_points``, ``start_m``, ``length_m`` [m],
        ``periodic``, ``model``, ``initial_speed_mps`` [m/s], ``objective`` [s]: what
        :func:`pyomo_lap.verify.verdict.self_check` needs of a result.
    """
    lap = pyo.value(m.lap_time, exception=False)   # None if a failed solve left no values
    objective = pyo.value(m.objective, exception=False)
    opts = m.problem.options
    if size is None and (rep.n_variables is None or rep.n_constraints is None):
        size = model_size(m)
    return Summary(
        summary_format=SUMMARY_FORMAT,
        lap_time_s=float(lap) if lap is not None else None,
        termination_condition=rep.termination_condition, outcome=rep.kind,
        solver_hint=rep.hint, solver_status=rep.status, solver_message=rep.message,
        ipopt_exit=rep.exit_message, optimal=rep.ok,
        n_variables=rep.n_variables if rep.n_variables is not None else size["n_variables"],
        n_constraints=(rep.n_constraints if rep.n_constraints is not None
                       else size["n_constraints"]),
        iterations=rep.iterations, build_time_s=m.problem.build_time_s,
        solve_time_s=rep.solve_time_s, nfe=opts.nfe, ncp=opts.ncp, scheme=opts.scheme,
        ocp_options={k: (list(v) if isinstance(v, tuple) else v)
                     for k, v in opts.value().items() if k not in OWN_OCP_OPTIONS},
        n_points=len(m.s), start_m=opts.start, length_m=m.problem.sector_length,
        periodic=opts.periodic, model=m.problem.vehicle_model.name,
        initial_speed_mps=m.problem.initial_speed,
        objective=float(objective) if objective is not None else None)


def results_of_solve(job: Job, own: Optional[dict] = None) -> None:
    """What a job makes of its solve, the same steps for every pipeline that solves
    (:func:`pyomo_lap.solve_sector`, each lap of a stint: :mod:`pyomo_lap.api.stint`):
    ``summary.json``'s contents (:func:`_summarize`), the caller's ``own`` fields of it, then
    the channels, their quality, the self-check of a solved result and the files
    (:func:`_channels_and_export`: into ``job.writer`` when given, else ``job.out_dir``; none
    when both are None).

    Parameters
    ----------
    job : Job
        A job whose model is solved (or stopped): ``cfg``, ``echo``, ``tr``, ``p``, ``m``,
        ``rep``, ``used_options`` set (by the job's steps up to the solve, or a stint's).
    own : dict, optional
        Fields of :class:`~pyomo_lap.results.summary.Summary` the caller sets after the
        summary is made and before the channels and the files (a stint's lap: ``lap``,
        ``mass_start_kg``, ``periodic``, ``warm_start``, ``limits``).

    Returns
    -------
    None
        ``job.summary``, ``job.df``, ``job.self_check`` (None unless solved), ``job.where``
        are set.

    Raises
    ------
    AttributeError
        A name in ``own`` that is no field of the summary (nothing written).
    SolveFailedError, ResultsNotWrittenError, FolderWriteError
        As :func:`_channels_and_export`.
    """
    _summarize(job)
    for name, value in (own or {}).items():
        setattr(job.summary, name, value)
    _channels_and_export(job)


def _summarize(job: Job) -> None:
    """``job.summary``: what summary.json holds before the channels (:func:`solve_summary`,
    and the job's own: options, warm starts, inputs, provenance, the track's records, the
    NLP's size, the timings, the refinement and continuation)."""
    cfg, m, rep, tr, p = job.cfg, job.m, job.rep, job.tr, job.p
    s = job.summary = solve_summary(m, rep, job.size)
    s.model_reused = job.reused
    s.init_time_s = job.init_s
    s.initial_guess = cfg.initial_guess
    if job.warm:
        s.warm_start = job.warm
    s.warm_start_from = str(cfg.warm_start_from) if cfg.warm_start_from is not None else None
    if job.warm_source:
        s.warm_start_source = job.warm_source
    if job.warm_retry:
        s.warm_start_failed = job.warm_retry
    s.track, s.vehicle, s.solver = tr.name, p.name, cfg.solver
    s.solver_options = dict(job.used_options or {})   # of the solve that gave the result
    s.solver_options_effective = _effective_options(cfg.solver, job.used_options)
    s.pyomo_lap_version, s.pyomo_version = __version__, _pyomo_version()
    s.python = platform.python_version()
    for key, value in {**_input_files(tr, cfg.vehicle), **_provenance(p, cfg.solver)}.items():
        setattr(s, key, value)
    s.track_width_m = cfg.track_width
    s.track_flat = bool(cfg.flat)
    s.track_lat_lon_order = _lat_lon_summary(tr, cfg.lat_lon_order)
    s.track_processing = list(getattr(tr, "processing_steps", []))
    s.track_assumptions = list(getattr(tr, "assumptions", []))
    s.track_repairs = [*getattr(tr, "build_repairs", []),
                       *(str(f) for f in getattr(tr, "findings", []))]
    stats = log_statistics(rep.log or "")
    s.nlp = {k: stats[k] for k in ("n_variables", "n_equalities", "n_inequalities",
                                   "jac_nnz", "hess_nnz") if k in stats}
    s.timing = _timing(job, stats)
    s.mesh_refinement = job.refinement
    s.mesh_continuation = job.continuation
    if m.component("hybrid") is not None:     # a car with [hybrid] (docs/energy.md)
        s.hybrid = hybrid_summary(m)


def _timing(job: Job, stats: dict) -> dict:
    """summary.json's ``timing``: build, DAE transformation, initial guess, solve and, from the
    solver's report and IPOPT's log, translation, compile, checks, IPOPT's own work and the
    function evaluations [s]."""
    m, rep = job.m, job.rep
    timing = {"build_s": m.problem.build_time_s, "dae_transformation_s": m.problem.dae_time_s,
              "init_s": job.init_s, "solve_s": rep.solve_time_s}
    timing.update({k: stats[k] for k in ("ipopt_internal_s", "ipopt_eval_s",
                                         "inertia_corrections") if k in stats})
    d = rep.details or {}
    for k in ("translate_s", "compile_s", "verify_s", "ipopt_s"):
        if k in d:
            timing[k] = d[k]
    if "function_s" in d:
        timing["function_s"] = dict(d["function_s"])
        timing["function_calls"] = dict(d["function_calls"])
        timing.setdefault("ipopt_eval_s", sum(d["function_s"].values()))
        if "ipopt_s" in d:      # IPOPT's own work: the solve minus the function evaluations
            timing.setdefault("ipopt_internal_s", d["ipopt_s"] - timing["ipopt_eval_s"])
    return timing


def _channels_and_export(job: Job) -> None:
    """The channels (a failed solve whose last point cannot be evaluated writes nothing),
    their quality, the mesh, sector times, mean speed, the car as solved and the optimal
    setup, the sensitivities, and the files; ``job.df``, ``job.sens``, ``job.where``."""
    cfg, echo, m, rep, summary = job.cfg, job.echo, job.m, job.rep, job.summary
    timing = summary.timing
    t_out = time.perf_counter()
    try:
        kept = job.result_df                            # the refinement's check made it
        df = kept[1] if kept is not None and kept[0] is m else trajectory_dataframe(
            m, progress=job.progress)
    except Exception as exc:
        if rep.ok:
            raise
        raise SolveFailedError(f"{cfg.solver}: {rep.describe()}. The last point could not be "
                               f"evaluated ({type(exc).__name__}: {exc}); nothing was written"
                               + (f", {job.out_dir}/ was left untouched" if job.out_dir else ""),
                               rep) from None
    summary.max_speed_kmh = float(df["speed_kmh"].max())
    summary.energy = energy_summary(m, df)     # the integrals of m.energy [J], issue 38
    p_solved = vehicle_of_model(m) if rep.ok or not cfg.free else job.p
    vm = m.problem.vehicle_model           # its equations for the car as solved, for the checks
    dyn = None if vm.dynamics is None else vm.dynamics(p_solved, vm, m.problem.options)
    summary.channel_quality = (channel_quality(df, p_solved) if dyn is None
                               else model_quality(df, dyn))
    summary.mesh = _mesh_summary(m)
    summary.sectors = sector_records(sector_times(df, cfg.n_sectors))
    _corner_summary(job, df, summary)
    # the car's mean speed: its path length over the time (the time average of the speed
    # channel), not the centreline's length, which a car cutting corners does not drive
    lap = summary.lap_time_s
    summary.mean_speed_kmh = (None if lap is None or lap <= 0 else _mean_speed_kmh(df)
                              if {"t", "speed_kmh"} <= set(df.columns)
                              else float(3.6 * m.problem.sector_length / lap))
    timing["channels_s"] = time.perf_counter() - t_out
    summary.vehicle_parameters = _vehicle_parameters(p_solved)
    _regularization(job, summary)
    job.self_check = None
    if rep.ok:
        _self_check(job, df, p_solved, dyn)
    if job.setup_start is not None:
        _setup_result(job, summary)
    job.sens = None
    if cfg.sensitivities and rep.ok:
        sens = job.sens = lap_time_sensitivities(m)
        timing["sensitivities_s"] = sens.attrs["time_s"]
        summary.sensitivities = sens.to_dict(orient="records")
        top = sens.reindex(sens["dT_1pct"].abs().sort_values(ascending=False).index).head(3)
        echo(f"  sensitivities in {sens.attrs['time_s']:.1f} s; largest, for +1 %: "
             + ", ".join(f"{r.parameter} {r.dT_1pct * 1e3:+.1f} ms" for r in top.itertuples()))
    if cfg.penalty_cost and rep.ok and summary.regularization is not None:
        _penalty_cost(job, summary)
    job.df, job.where = df, None
    if job.out_dir is not None or job.writer is not None:
        echo("exporting ...")
        table, mesh = _fixed_step(job, df)
        job.where = _write_or_fallback(
            job.writer if job.writer is not None else job.out_dir, table, summary, p_solved if isinstance(p_solved, VehicleParameters)
            else summary.vehicle_parameters, rep, echo, cfg.n_sectors,
            {**solution_arrays(m), **(multiplier_arrays(m) if rep.ok else {})}
            if rep.ok or rep.kind == "interrupted" else None, mesh)
        if job.sens is not None:
            plot_results(job.where, figures=["sensitivities"], echo=echo)


def _setup_result(job: Job, summary: Summary) -> None:
    """A setup optimization's result: ``summary.setup`` (:func:`_setup_summary`) and
    ``summary.setup_baseline`` (:func:`_setup_gain`), said on the console."""
    summary.setup = _setup_summary(job.m, job.setup_start)
    job.echo("  optimal setup: " + ", ".join(
        f"{k} = {v['value']:.6g}" + (f" (at its {v['at_bound']} bound)" if v["at_bound"] else "")
        for k, v in summary.setup.items()))
    _setup_gain(summary, job.setup_baseline)
    if summary.setup_baseline is not None:
        b = summary.setup_baseline
        job.echo(f"  baseline {b['lap_time_s']:.3f} s -> optimum {summary.lap_time_s:.3f} s: "
                 f"gain {b['gain_s']:.3f} s ({b['gain_pct']:.2f} %)")


def _fixed_step(job: Job, df) -> tuple:
    """The table to write and the mesh rows to write beside it: with the job option ``every``
    on a solved result, the channels on that step
    (:func:`pyomo_lap.results.fixed_step.model_fixed_step`) and the mesh rows ``df``
    (``summary.trajectory_step_m``); otherwise ``df`` and None (partial results keep
    their mesh rows: their polynomials are no solution)."""
    every = job.cfg.every
    if every is None or not job.rep.ok:
        return df, None
    job.summary.trajectory_step_m = float(every)
    table = model_fixed_step(job.m, df, every)
    job.summary.fixed_step = dict(table.attrs.get("fixed_step") or {})
    for line in fixed_step_lines(job.summary.fixed_step):
        job.echo(line)
    return table, df


def _regularization(job: Job, summary: Summary) -> None:
    """``summary.regularization``: the objective's penalties in seconds and their share of
    the objective (:func:`pyomo_lap.ocp.common.regularization`), said on the console; none
    for a model without them or without values."""
    try:
        reg = regularization(job.m)
    except (ValueError, TypeError, AttributeError, ZeroDivisionError):
        return
    if not all(math.isfinite(x) for x in (reg["total_s"], reg["share"])):
        return
    summary.regularization = reg
    _objective_note(summary, reg)
    job.echo(f"  {regularization_text(reg)}")


def _objective_note(summary: Summary, reg: dict) -> None:
    """``summary.penalty_s`` (objective - lap_time_s [s]) and ``summary.objective_note``
    (what the objective is: the sector time plus the penalties of eq (41) and the rates, named
    by ``regularization.terms``)."""
    objective, lap = summary.objective, summary.lap_time_s
    if objective is None or lap is None:
        return
    summary.penalty_s = float(objective) - float(lap)
    names = ", ".join(reg.get("terms", {})) or "none"
    summary.objective_note = (
        "objective = lap_time_s + penalty_s [s]: the sector time the solver minimised plus the "
        f"penalty terms ({names}: jumps and rates of the steering and of the tyre forces, "
        "braking while driving; each in seconds in regularization.terms); lap_time_s is the "
        "time alone")


def _penalty_cost(job: Job, summary: Summary) -> None:
    """The job option ``penalty_cost``: what the penalties cost in lap time
    (:func:`pyomo_lap.analysis.sensitivities.lap_time_cost`, a second solve with every weight / 10
    from the optimum, which the model keeps) into ``summary.regularization``, said on the
    console; its time into ``summary.timing["penalty_cost_s"]``."""
    job.echo(f"  the penalties' lap-time cost: solving again with every weight / "
             f"{PENALTY_COST_FACTOR:g} ...")
    cost = lap_time_cost(job.m, job.cfg.solver, job.solver_options)
    reg = summary.regularization
    reg["lap_time_cost_s"] = cost["lap_time_cost_s"]
    reg["lap_time_cost"] = cost
    summary.timing["penalty_cost_s"] = cost["time_s"]
    job.echo(f"  {lap_time_cost_text(reg)}")


def _self_check(job: Job, df, vehicle, dynamics=None) -> None:
    """The fast checks of the result (:func:`pyomo_lap.verify.verdict.self_check`: defects,
    speed consistency, energy balance, power limit, the model's own limits) into
    ``summary.self_check`` and ``job.self_check``; its time into
    ``summary.timing["self_check_s"]``. The result's vehicle model is the model's; the
    sector, mesh and controls' form are the typed summary's (``start_m``, ``ncp``,
    ``scheme``, ``ocp_options.control_form``) and its ``channel_quality`` is reused."""
    kept = job.result_defects      # measured by the refinement's check on job.m
    s = job.summary
    sc = self_check(df, job.m.problem.vehicle_model, job.tr, vehicle,
                    start=float(s.start_m if s.start_m is not None else 0.0),
                    ncp=int(s.ncp if s.ncp is not None else 2), scheme=s.scheme,
                    interpolation=interpolation_of(s), car=dynamics,
                    defects=kept[1] if kept is not None and kept[0] is job.m else None,
                    quality=s.channel_quality)
    s.self_check = sc
    s.timing["self_check_s"] = sc["wall_time_s"]
    job.self_check = sc


def _lat_lon_summary(tr, option: str):
    """summary.json's ``track_lat_lon_order``: the option ``lat_lon_order`` and, for a GPS
    file, the order used and why (:func:`pyomo_lap.track.gps.lat_lon_record`; a track with
    x/y coordinates: ``order`` None)."""
    rec = (getattr(tr, "provenance", None) or {}).get("lat_lon_order")
    return dict(rec) if rec else dict(option=option, order=None, given=False,
                                      why="x/y coordinates: no latitude and longitude")


def _write_or_fallback(out_dir, df, summary: Summary, params: dict, rep, echo,
                       n_sectors: int = 3, solution: Optional[dict] = None,
                       mesh_df=None) -> Path:
    """write_results, and when that fails (disk full, folder removed, permissions), the same
    files in a fresh folder of the temporary directory: a result is never lost. ``out_dir`` a
    :class:`~pyomo_lap.folders.writer.ResultsWriter` (a folder inside one written whole, a
    stint's lap): the files through it, said by no line and kept nowhere else on an error (the
    outer folder's writer removes what it wrote, the earlier folder stays as it was)."""
    partial = "interrupted" if rep.kind == "interrupted" else not rep.ok
    if isinstance(out_dir, ResultsWriter):
        return write_results(out_dir, df, summary, params, partial=partial, n_sectors=n_sectors,
                             solution=solution, mesh_df=mesh_df)
    try:
        where = write_results(out_dir, df, summary, params, partial=partial, n_sectors=n_sectors,
                              solution=solution, echo=_recovery_only(echo), mesh_df=mesh_df)
    except (OSError, FolderNotReplaceableError) as exc:  # e.g. a file of the user's added meanwhile
        fallback = Path(tempfile.mkdtemp(prefix=f"pyomo_lap-{out_dir.name}-"))
        try:
            where = write_results(fallback / out_dir.name, df, summary, params, partial=partial,
                                  n_sectors=n_sectors, solution=solution, mesh_df=mesh_df)
        except BaseException:           # the temporary folder's disk full too: nothing left
            shutil.rmtree(fallback, ignore_errors=True)
            raise
        msg = (f"could not write the results to {out_dir}: {exc}; they were saved to {where}/ "
               "instead")
        if rep.ok:
            raise ResultsNotWrittenError(msg) from None
        echo(msg)
        return where
    files = sorted(p.name for p in Path(where).iterdir() if p.is_file() and p.name[0] != ".")
    what = ("results" if rep.ok else "the last iterate" if partial == "interrupted"
            else "partial results")
    echo(f"{what} written to {where}/ ({', '.join(files)})")
    return where


def _recovery_only(echo):
    """``echo`` for :func:`write_results` without its progress lines (``"  writing ..."``)."""
    return lambda text: None if text.startswith("  writing ") else echo(text)


def _pyomo_version() -> str:
    return version
