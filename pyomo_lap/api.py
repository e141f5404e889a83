"""The scripting API: build, initialize, solve, results — and the whole job in one call.

Example
-------
>>> from pyomo_lap import load_track, load_vehicle, build_model, initialize_model, solve_model
>>> m = build_model(load_track("nordschleife"), load_vehicle("fsae"), length=300, nfe=30)
>>> initialize_model(m)                                          # doctest: +SKIP
>>> report = solve_model(m)                                      # doctest: +SKIP
>>> df = trajectory_dataframe(m)                                 # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import platform
import time
import json
import math
import warnings
from pathlib import Path
from typing import Callable, Optional

import pyomo.environ as pyo
from pyomo.common.config import ConfigDict, ConfigValue, document_kwargs_from_configdict

from . import __version__
from .ocp.initialize import initialize_model
from .ocp.build import build_model
from .solvers.solve import SolveInterrupted, solve_model
from .solvers.warm_start import PRIMAL_START_MU_INIT
from .track.checks import LAT_LON_ORDERS
from .track.loading import load_track, track_formats_help
from .util.overlap import while_solver_runs
from .util.domains import (Anything, DictOrNone, FiniteFloat, IntBetween, OneOf, PathOrNone,
                           error_text)
from .vehicle.car import load_vehicle

__all__ = ["job_mesh", "solve_sector", "SectorResults", "SOLVE_CONFIG", "job_options", "OptionValueError", "model_size", "SolveFailedError", "ResultsNotWrittenError",
           "track_data_lines", "result_line", "prefetch_options"]


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
    import json
    import subprocess
    from datetime import datetime, timezone
    out = {"vehicle_parameters_sha256": hashlib.sha256(
        json.dumps(p.as_dict(), sort_keys=True, default=str).encode()).hexdigest()}
    try:
        out["pyomo_lap_git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
            text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from .solvers.solve import ensure_solver
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
    from .vehicle.car import models_dir
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
    from .track.report import assumption_lines, step_lines
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


def result_line(summary: dict, periodic: bool) -> str:
    """The last line of a solve: ``'lap time ...'`` for a closed lap (``periodic``),
    ``'sector time ...'`` for a sector, with the distance, mean and top speed and the times
    of the timed sectors, and the verdict of the result's self-check when the summary has
    one (``'; self-check PASS'``, ``'; self-check FAIL: energy_balance 6.2 % P_max at s = 75
    m'``: :func:`pyomo_lap.post.validate.self_check_text`)."""
    what = "lap time" if periodic else "sector time"
    line = (f"{what} {summary['lap_time_s']:.3f} s over {summary['length_m']:.0f} m "
            f"(mean {summary['mean_speed_kmh']:.1f} km/h, max {summary['max_speed_kmh']:.1f} km/h); "
            "sectors " + ", ".join(f"{x['time_s']:.3f}" for x in summary["sectors"]) + " s")
    if summary.get("self_check"):
        from .post.validate import self_check_text
        line += "; " + self_check_text(summary["self_check"])
    return line


from .ocp.options import CLI_OWNED  # noqa: E402

OWN_OCP_OPTIONS = CLI_OWNED
"""The OCP options that are also options of the job (:data:`SOLVE_CONFIG`)."""
"""OCP options that solve_sector has as arguments and the summary records at its top level
(the summary's ``ocp_options`` holds the others)."""


class _TrackWidth:
    """The total width of the track [m] or None (:func:`pyomo_lap.track.checks.check_track_width`)."""

    cli_type = float

    def __call__(self, x):
        from .track.checks import check_track_width
        if x is None:
            return None
        try:
            return 2.0 * check_track_width(x)
        except ValueError as exc:       # its message without the "name = value: " prefix
            raise ValueError(str(exc).split(": ", 1)[-1]) from None

    def domain_name(self) -> str:
        return "float in (0, 200] or None"


class _FreeParameters:
    """Domain of the job option ``free``: the car's parameters made decision variables, with
    their bounds: ``{"aero.Cz1": (0.3, 0.9)}`` or ``["aero.Cz1=0.3:0.9", ...]`` (the CLI's
    ``--free``) -> ``{dotted name: (lower, upper)}``."""

    def __call__(self, x):
        from .vehicle.schema import KEY_OF_FIELD, field_of
        if x is None:
            return {}
        items = x.items() if isinstance(x, dict) else []
        if not isinstance(x, dict):
            for text in ([x] if isinstance(x, str) else x):
                name, sep, rng = str(text).partition("=")
                lo, sep2, up = rng.partition(":")
                if not sep or not sep2:
                    raise ValueError(f"{text!r}: expected NAME=LOWER:UPPER, e.g. aero.Cz1=0.3:0.9")
                items.append((name.strip(), (lo, up)))
        out = {}
        for name, bounds in items:
            try:
                key = KEY_OF_FIELD[field_of(str(name))]
                lo, up = (float(b) for b in bounds)
            except (TypeError, ValueError, KeyError) as exc:
                raise ValueError(f"{name}={bounds!r}: {exc}") from None
            if not (math.isfinite(lo) and math.isfinite(up) and lo < up):
                raise ValueError(f"{key}={lo:g}:{up:g}: expected finite bounds, lower < upper")
            out[key] = (lo, up)
        return out

    def domain_name(self) -> str:
        return "{name: (lower, upper)} or NAME=LOWER:UPPER texts"


class _KeepSums:
    """Domain of the job option ``keep_sum``: groups of the car's parameters whose sum is held
    at its value (``[("aero.Cz1", "aero.Cz2")]`` or ``["aero.Cz1,aero.Cz2"]``)."""

    def __call__(self, x):
        from .vehicle.schema import KEY_OF_FIELD, field_of
        if x is None:
            return ()
        out = []
        for group in ([x] if isinstance(x, str) else x):
            names = group.split(",") if isinstance(group, str) else list(group)
            keys = tuple(KEY_OF_FIELD[field_of(str(n).strip())] for n in names if str(n).strip())
            if len(keys) < 2:
                raise ValueError(f"{group!r}: expected two or more parameters, e.g. aero.Cz1,aero.Cz2")
            out.append(keys)
        return tuple(out)

    def domain_name(self) -> str:
        return "groups of parameter names (A,B[,...])"


def _check_free_before_build(p, model, periodic, ocp_options, cfg) -> None:
    """:func:`pyomo_lap.ocp.build.check_free_parameters` on the rows the build will record
    (ValueError: one line, before anything is built)."""
    from .ocp.build import OCP_CONFIG, check_free_parameters, vehicle_model
    vm = vehicle_model(model)
    rec = None
    if vm.point_rows is not None:
        ocfg = OCP_CONFIG(dict(ocp_options))
        ocfg.periodic = periodic
        rec = vm.point_rows(p, ocfg)
    check_free_parameters(rec, cfg.free, cfg.keep_sum, model)


def job_model(model, vehicle):
    """The vehicle model a job builds: ``model`` when given, else the one the vehicle file
    names (its top-level ``model = "..."``, :func:`pyomo_lap.vehicle.car.vehicle_file_model`),
    else ``"full"``.

    Raises
    ------
    ValueError
        ``model`` given and the vehicle file naming another one (one line, naming both).
    """
    from .vehicle.car import vehicle_file_model
    named = vehicle_file_model(vehicle)
    if named is not None:
        from .ocp.build import VEHICLE_MODELS
        if named not in VEHICLE_MODELS:
            where = vehicle if isinstance(vehicle, (str, Path)) else getattr(vehicle, "name", vehicle)
            raise ValueError(f"vehicle {str(where)!r}: model = {named!r}: expected one of "
                             f"{', '.join(VEHICLE_MODELS)}")
    if model is None:
        return named or "full"
    if named is not None and model != named:
        where = vehicle if isinstance(vehicle, (str, Path)) else getattr(vehicle, "name", vehicle)
        raise ValueError(f"model = {model!r}, but the vehicle {str(where)!r} is for the model "
                         f"{named!r} (its model = {named!r}): give no model, or model = {named!r}")
    return model


_EVERY = FiniteFloat(0.0, True, "a finite step > 0 m, at most the sector's length", optional=True)
_EVERY_TEXT = ("write the channels every EVERY metres of the sector [m] (None: one row per point "
               "of the solver's mesh): trajectory.csv, .parquet and the workbook's channels on 0, "
               "EVERY, 2 EVERY, ... and the sector's end, read from the collocation polynomials "
               "(docs/fixed_step.md); the mesh rows in trajectory_mesh.csv "
               "and .parquet")
"""The job option ``every``: its domain and description (:data:`SOLVE_CONFIG`)."""


def _solve_config() -> ConfigDict:
    from .ocp.build import OCP_CONFIG
    c = ConfigDict(description="the options of one job (solve_sector, pyomo-lap solve)")
    c.declare("track", ConfigValue(default="nordschleife", domain=Anything("str, Path or Track"),
              description="track name (see `pyomo-lap tracks`: centrelines and arc tracks such "
                          "as dymos_oval) or a file (docs/tracks.md): "
                          + track_formats_help()
                          + " (in Python also a Track)"))
    c.declare("vehicle", ConfigValue(default="fsae", domain=Anything("str, Path or VehicleParameters"),
              description="vehicle name (models/*.toml) or a .toml file (in Python also a "
                          "VehicleParameters)"))
    for name in OWN_OCP_OPTIONS:
        cv = OCP_CONFIG.get(name)     # declared once, in OCP_CONFIG: domain and description
        # model: default None, the model the vehicle file names, else 'full' (job_model)
        default = 2000.0 if name == "length" else None if name == "model" else cv.value()
        c.declare(name, ConfigValue(default=default, domain=cv._domain, description=cv._description))
    c.declare("initial_guess", ConfigValue(default="cold", domain=OneOf(["cold", "single-track"]),
              description="full model: 'single-track' solves the single-track model on the same "
                          "mesh first and starts from it (pyomo_lap.ocp.single_track.warm_start_full)"))
    c.declare("warm_start_from", ConfigValue(default=None, domain=PathOrNone(),
              description="results folder (its solution.npz and summary.json) of an earlier "
                          "solve of the same track and vehicle model: the initial point, moved "
                          "onto this job's mesh, sector and car by the absolute track position "
                          "(any mesh; a longer, shorter or overlapping sector, a closed lap; "
                          "another car: the job's own mesh; docs/warm_start.md); what it "
                          "covered: summary.json warm_start_source. Another track or vehicle "
                          "model is an error before the solve. With its multipliers IPOPT starts "
                          "with warm_start_init_point = yes (pyomo_lap.solvers.warm_start.warm_start_options), else "
                          "mu_init = 1e-3, unless a solver option sets them; should that solve "
                          "fail, the case is solved again from the usual initial guess "
                          "(command line: --warm-start, alias --warm-start-from; pyomo-lap sweep "
                          "uses it)"))
    c.declare("solver", ConfigValue(default="lap_ipopt", domain=str,
              description="Pyomo solver name (tested: lap_ipopt = the fast path, IPOPT 3.14 on "
                          "compiled functions; ipopt = the ASL path, IPOPT's AMPL executable; "
                          "ipopt_v2 = Pyomo's newer interface to the same executable)"))
    c.declare("solver_options", ConfigValue(default=None, domain=DictOrNone(),
              description="options passed through to the solver, e.g. {'max_iter': 500}"))
    c.declare("ocp_options", ConfigValue(default=None, domain=DictOrNone(),
              description="the other options of the optimal control problem (the second table of "
                          "docs/options.md), e.g. {'adherence': 'squared'}"))
    c.declare("n_sectors", ConfigValue(default=3, domain=IntBetween(1, 1000),
              description="number of equal sectors timed in the summary"))
    c.declare("out_dir", ConfigValue(default=Path("results"), domain=PathOrNone(),
              description="output folder (None: nothing is written)"))
    c.declare("every", ConfigValue(default=None, domain=_EVERY, description=_EVERY_TEXT))
    c.declare("tee", ConfigValue(default=False, domain=bool,
              description="stream the solver's iterations (the command line streams them unless "
                          "--quiet is given)"))
    c.declare("repair_track", ConfigValue(default=False, domain=bool,
              description="repair the track data where a repair is well defined (missing values, "
                          "duplicates, glitches, a small gap in a loop, a sector past the end of "
                          "an open track); every repair is reported"))
    c.declare("track_width", ConfigValue(default=None, domain=_TrackWidth(),
              description="total width of the track [m], half each side of the centreline; "
                          "replaces the widths of the track data (default: the data's widths; "
                          "4 m each side for data without widths, which is reported)"))
    c.declare("lat_lon_order", ConfigValue(default="auto", domain=OneOf(LAT_LON_ORDERS),
              description="GPS track files (lat/lon CSV, zaggyai .json, .kml): which column "
                          "(key) holds the latitude. 'auto': as named, read swapped only when "
                          "latitudes beyond 90 deg force it (with repair_track), and a warning "
                          "when both orders are valid coordinates of tracks more than 1 % "
                          "apart in length; 'lat,lon': as named (no warning); 'lon,lat': the "
                          "column named latitude holds the longitudes (read swapped, no "
                          "warning). A track with x/y coordinates takes only 'auto'; the order "
                          "used and why: summary.json track_lat_lon_order"))
    c.declare("flat", ConfigValue(default=False, domain=bool,
              description="ignore the track file's elevations (noisy ones): z = 0, banking as "
                          "given; reported as a processing step and an assumed value (a "
                          "crossing of the flat track is taken as a bridge)"))
    c.declare("free", ConfigValue(default=None, domain=_FreeParameters(),
              description="the car's parameters optimized with the trajectory (setup "
                          "optimization): {name: (lower, upper)} with the dotted names of the "
                          "vehicle file, e.g. {'aero.Cz1': (0.3, 0.9)}; on the command line "
                          "--free aero.Cz1=0.3:0.9 (repeatable). Only parameters the car's "
                          "equations use (not widths or limits that are variable bounds); the "
                          "entry speed of an open sector stays the starting car's"))
    c.declare("keep_sum", ConfigValue(default=None, domain=_KeepSums(),
              description="groups of free parameters whose sum is held at its value (a fixed "
                          "total downforce with a free balance: aero.Cz1,aero.Cz2); on the "
                          "command line --keep-sum aero.Cz1,aero.Cz2 (repeatable)"))
    c.declare("refine_mesh", ConfigValue(default=True, domain=bool,
              description="after an optimal solve of the full model whose collocation defects "
                          "or speed consistency are above the self-check's warning (DEFECT_MAX, "
                          "DEFECT_P95, SPEED_CONSISTENCY: a step of the speed that the "
                          "acceleration does not integrate to, e.g. a throttle blip one element "
                          "long), split the elements where they are large and solve again from the solution "
                          "on the refined mesh, up to twice (MESH_REFINEMENTS; pyomo_lap.post.defects.refine_mesh; not "
                          "when the job gives its mesh: nfe, element_boundaries, a warm start, "
                          "free parameters or sensitivities); summary.json says what was split"))
    _declare_after_the_solve(c)
    return c


def _declare_after_the_solve(c: ConfigDict) -> None:
    """The job options of :func:`_solve_config` about how the solve is reached and what follows
    it: ``mesh_continuation``, ``penalty_cost``, ``sensitivities``."""
    c.declare("mesh_continuation", ConfigValue(default="auto", domain=OneOf(["auto", "on", "off"]),
              description="solve the job's mesh from the solution of coarser meshes of the same "
                          "problem (the default placement with element_length, halved down to "
                          "twice the job's mean element; pyomo_lap.post.continuation): 'on' "
                          "always; 'auto' when the job's elements straddle the curvature steps "
                          "of an arc track (junctions inside elements: nfe or element_boundaries "
                          "given on dymos_oval, dymos_barcelona) and when a direct solve does "
                          "not end optimal; 'off' never. Not with warm_start_from or free "
                          "parameters; summary.json mesh_continuation says what was solved"))
    c.declare("penalty_cost", ConfigValue(default=False, domain=bool,
              description="after an optimal solve, solve again from the optimum with every "
                          "penalty weight divided by 10 and report what the penalties cost in "
                          "lap time: the difference of the two sector times (summary.json "
                          "regularization.lap_time_cost_s, the console, pyomo-lap validate; "
                          "pyomo_lap.post.sensitivities.lap_time_cost). The result written is "
                          "the one with the default weights; the second solve takes about a "
                          "third of the first's time"))
    c.declare("sensitivities", ConfigValue(default=False, domain=bool,
              description="after the solve, d(lap time)/d(parameter) for every parameter of the "
                          "vehicle file and the track's friction scale from the multipliers "
                          "(pyomo_lap.post.sensitivities; full model; solved to tol = 1e-10 unless "
                          "a solver option says otherwise): the workbook's 'sensitivities' sheet, "
                          "plots/sensitivities.png, results.sensitivities"))


SOLVE_CONFIG = _solve_config()
"""The one declaration of a job's options: :func:`solve_sector` takes them as keywords,
``pyomo-lap solve`` derives its command-line options from them (:mod:`pyomo_lap.cli`), and the
table of them in docs/options.md is generated from it (``pyomo-lap options --markdown``). The options
of the optimal control problem among them (``start`` ... ``model``) are those of
:data:`pyomo_lap.ocp.build.OCP_CONFIG` (the default ``length`` here is 2000 m)."""


WARM_START_MU_INIT = PRIMAL_START_MU_INIT
"""IPOPT's initial barrier parameter for a warm start (``warm_start_from``) from primal values
only (:data:`pyomo_lap.solvers.warm_start.PRIMAL_START_MU_INIT`)."""




def _effective_options(solver: str, used: Optional[dict]) -> dict:
    """The options the solver ran with (pyomo_lap's defaults updated by the given ones):
    :func:`pyomo_lap.post.results.effective_solver_options` without the sources."""
    from .post.results import effective_solver_options
    return {k: v for k, (v, _) in effective_solver_options(solver, used or {}).items()}


def _mean_speed_kmh(df) -> float:
    """The time average of the speed channel [km/h] (trapezoids in time): the car's path length
    over the time."""
    import numpy as np
    t = df["t"].to_numpy(float)
    v = df["speed_kmh"].to_numpy(float)
    return float(np.trapezoid(v, t) / (t[-1] - t[0]))


def _vehicle_parameters(p) -> dict:
    """The car's parameters by their dotted names (``summary.json``'s ``vehicle_parameters``):
    ``{name: value}``, the gravity included."""
    if hasattr(p, "parameter_values"):       # a car of its own schema (the racecar)
        return dict(p.parameter_values())
    from .vehicle.schema import PARAMETER_KEYS
    out = {k: p.value(k) for k in PARAMETER_KEYS if p.value(k) is not None}
    out["gravity"] = p.gravity
    return out


def _setup_summary(m, start: dict) -> dict:
    """The optimal setup of a solve with free parameters: ``{name: {"value", "start", "lower",
    "upper", "at_bound" ("lower", "upper" or None), "unit"}}``."""
    from .ocp.common import vehicle_var
    out = {}
    for key, (v0, lo, up) in start.items():
        var = vehicle_var(m, key)
        v = float(var.value)
        tol = 1e-6 * max(1.0, abs(up - lo))
        at = "lower" if v - lo <= tol else "upper" if up - v <= tol else None
        out[key] = {"value": v, "start": v0, "lower": lo, "upper": up, "at_bound": at,
                    "unit": str(pyo.units.get_units(var))}
    return out


def job_mesh(config: Optional[dict] = None, **kwargs) -> Optional[list]:
    """The element boundaries the build of a job places with the adaptive mesh (OCP option
    ``mesh = "adaptive"``, :func:`pyomo_lap.ocp.mesh.adaptive_boundaries`), without building:
    for a sweep, which solves every case on the mesh of its base car so that the lap-time
    differences between cases are not mesh differences.

    Parameters
    ----------
    config, **kwargs
        The job's options, as :func:`solve_sector` takes them.

    Returns
    -------
    list of float or None
        From 0 to the sector length [m]; None when the job's mesh is not adaptive (``nfe`` or
        ``element_boundaries`` given, or ``mesh = "uniform"``).

    Raises
    ------
    ValueError
        Bad options, track, vehicle or sector (as :func:`solve_sector`).
    """
    from .ocp.build import OCP_CONFIG, sector_mesh
    from .ocp.options import check_ocp_options
    from .track import checks as track_checks
    from .vehicle.car import VehicleParameters
    cfg = job_options(config, **kwargs)
    ocp = check_ocp_options(cfg.ocp_options)
    oc = OCP_CONFIG()
    oc.set_value({k: v for k, v in ocp.items()})
    if cfg.nfe is not None or oc.element_boundaries is not None or oc.mesh != "adaptive":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", track_checks.TrackRepairWarning)
        tr = load_track(cfg.track, repair=cfg.repair_track, track_width=cfg.track_width,
                        flat=cfg.flat, lat_lon_order=cfg.lat_lon_order)
        start, length, _ = track_checks.check_sector(tr, cfg.start, cfg.length,
                                                     repair=cfg.repair_track)
    p = load_vehicle(cfg.vehicle) if isinstance(cfg.vehicle, (str, Path)) else cfg.vehicle
    cfg.model = job_model(cfg.model, cfg.vehicle)
    if not isinstance(p, VehicleParameters):     # the racecar's elements are uniform
        return None
    oc.set_value({"start": start, "length": length, "ncp": cfg.ncp, "scheme": cfg.scheme,
                  "periodic": cfg.periodic, "initial_speed": cfg.initial_speed,
                  "model": cfg.model})
    _, bounds = sector_mesh(tr, oc, p)
    return None if bounds is None else [float(b) for b in bounds]


def _mesh_summary(m) -> dict:
    """The finite elements of a built model: count, shortest, longest and their boundaries
    from the sector start [m] (to solve another car on the same mesh: the OCP option
    ``element_boundaries``)."""
    fe = sorted(m.s.get_finite_elements())
    h = [b - a for a, b in zip(fe[:-1], fe[1:])]
    return {"placement": m.problem.mesh,
            "n_elements": len(h), "shortest_m": min(h), "longest_m": max(h),
            "element_boundaries_m": [round(float(b), 6) for b in fe]}


class OptionValueError(ValueError):
    """A job option's value outside its domain: ``key``, ``value`` and the domain's ``text``
    (``expected ...``); the message is ``key = value: text`` (the CLI says ``--flag value``)."""

    def __init__(self, key: str, value, text: str):
        super().__init__(f"{key} = {value!r}: {text}")
        self.key, self.value, self.text = key, value, text


def prefetch_options(cfg, ocp_options: Optional[dict] = None) -> Optional[dict]:
    """The OCP options of a job (:func:`job_options`) that decide its recorded rows, as
    :func:`pyomo_lap.solvers.lap_nlp.prefetch_point_functions` takes them: ``model``,
    ``periodic``, ``initial_speed`` and the ``ocp_options`` (given already checked, or
    checked here); None when the job does not solve with compiled functions (a solver other
    than the default ``lap_ipopt``, or its option ``compile=vm``)."""
    from .ocp.options import check_ocp_options
    from .solvers.solve import DEFAULT_SOLVER
    if cfg.solver != DEFAULT_SOLVER or (cfg.solver_options or {}).get("compile") == "vm":
        return None
    ocp = check_ocp_options(cfg.ocp_options) if ocp_options is None else ocp_options
    return {"model": cfg.model, "periodic": cfg.periodic, "initial_speed": cfg.initial_speed,
            **ocp}


def job_options(config: Optional[dict] = None, **kwargs) -> ConfigDict:
    """The job's options checked against :data:`SOLVE_CONFIG` (``config`` then ``kwargs``).

    Raises
    ------
    OptionValueError (a ValueError)
        ``option = value: expected ...`` for a value outside the option's domain.
    ValueError
        An unknown option, with the list of the known ones.
    """
    cfg = SOLVE_CONFIG()
    for key, value in {**(config or {}), **kwargs}.items():
        if key not in cfg:
            raise ValueError(f"unknown option {key!r}: expected one of {', '.join(SOLVE_CONFIG.keys())}")
        try:
            cfg[key] = value
        except (ValueError, TypeError) as exc:
            raise OptionValueError(key, value, error_text(exc)) from None
    return cfg


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
        ``(model, SolveReport, DataFrame or None, summary dict)``, unpacking as a tuple, with
        ``.sensitivities`` (a DataFrame with ``sensitivities=True``, else None).
        The summary (``summary.json``) holds, besides the results, what was done to the
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
    function below, sharing the job's state ``job``); the lock on ``out_dir``
    (:class:`pyomo_lap.post.results.OutputLock`) is appended to ``held`` when taken."""
    import types
    job = types.SimpleNamespace(cfg=cfg, echo=echo, progress=progress, cache=model_cache,
                                held=held, out_dir=cfg.out_dir, on_iteration=on_iteration)
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
    _summarize(job)                 # summary.json's content
    _channels_and_export(job)       # the channels, sensitivities, files
    if not job.rep.ok:
        kept = (f" Partial results (the last point, marked \"partial\": true) are in {job.where}/; "
                f"{job.out_dir}/ was left untouched." if job.where is not None else "")
        raise SolveFailedError(f"{cfg.solver} did not find an optimal solution: "
                               f"{job.rep.describe()}.{kept}", job.rep, job.where)
    echo(result_line(job.summary, cfg.periodic))
    return SectorResults(job.m, job.rep, job.df, job.summary, job.sens, job.self_check)


_AFTER_THE_SOLVE = ("pyomo_lap.post.results", "pyomo_lap.post.quality")
"""Modules the channels need after every solve (pandas among them: 0.2 s)."""
_FOR_THE_EXPORT = ("pyarrow.csv", "pyarrow.parquet", "xlsxwriter")
"""Modules the export needs after the solve (:func:`pyomo_lap.post.results.write_results`)."""


def _post_imports(export: bool) -> Callable[[], None]:
    """The imports of the channels (and of the export, when ``export``), to run while IPOPT
    works (:func:`pyomo_lap.util.overlap.while_solver_runs`): 0.2-0.3 s of every solve no
    longer waited for after it on a machine with a second core. The later imports of the
    same modules wait for one under way (Python's per-module import locks); one that fails
    here fails again, with its message, where the module is used."""
    import importlib

    def work():
        for name in _AFTER_THE_SOLVE + (_FOR_THE_EXPORT if export else ()):
            try:
                importlib.import_module(name)
            except Exception:   # noqa: BLE001  (raised again, with its message, where used)
                pass
    return work


def _check_job(job) -> None:
    """The job's options checked together (ValueError, one line): the model (the vehicle file
    may name it), sensitivities, OCP and solver options, a Track object with a width or flat, free
    parameters; ``job.model``, ``job.ocp_options``, ``job.solver_options``, ``job.reuse``."""
    from .ocp.build import VEHICLE_MODELS
    from .ocp.options import check_ocp_options
    from .solvers.solve import check_solver_options
    from .track.geometry import Track
    cfg = job.cfg
    cfg.model = job.model = job_model(cfg.model, cfg.vehicle)
    if cfg.sensitivities and job.model != "full":
        raise ValueError(f"sensitivities = True with model = {job.model!r}: the lap-time "
                         "sensitivities need the full model (model = 'full')")
    job.ocp_options = check_ocp_options(cfg.ocp_options)
    job.solver_options = check_solver_options(cfg.solver, cfg.solver_options) or None
    if job.model not in VEHICLE_MODELS:   # a VehicleModel object: build_model takes it, not this job
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


def _load_inputs(job) -> None:
    """The track (repairs and data steps said), the sector, the car, the checks that need
    them (the car fits, free parameters the rows use), the solver, the results folder (locked);
    ``job.tr``, ``job.p``, ``job.start``, ``job.length``, ``job.track_key``."""
    from .solvers.solve import ensure_solver
    from .track import checks as track_checks
    from .track.geometry import Track
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
    from .track.gps import lat_lon_order_warnings
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
    track_checks.check_vehicle_fits(tr, p, job.start, job.length)
    if cfg.every is not None and cfg.every > job.length * (1 + 1e-12):
        raise ValueError(f"every = {cfg.every:g} m: expected a step of at most the sector's "
                         f"length ({job.length:g} m)")
    if cfg.free:           # a setup optimization the car's rows cannot do: said before building
        _check_free_before_build(p, job.model, cfg.periodic, job.ocp_options, cfg)
    ensure_solver(cfg.solver)  # fail before building when the solver is missing
    if job.out_dir is not None:
        from .post.folders import check_output_dir
        # fail before building when OUT is unusable, holds files of the user's or another run
        # writes into it; locked from here to the end (released by solve_sector)
        job.out_dir = check_output_dir(job.out_dir, echo=echo, hold=job.held)
    job.tr, job.p = tr, p
    _track_corners(job)


def _track_corners(job) -> None:
    """The track's corners and sector starts (:mod:`pyomo_lap.track.corners`: the files beside
    the track file, else detected), read before the solve so a bad file stops the job early;
    ``job.corners``, ``job.sector_boundaries`` (None without a sector file)."""
    from .track.corners import (corner_file_for, sector_file_for, track_corners,
                                track_sectors)
    tr = job.tr
    job.corners = track_corners(tr)
    path = corner_file_for(tr)
    job.corners_source = str(path) if path is not None else "detected"
    starts = track_sectors(tr)
    job.sector_boundaries = None if starts is None else {
        "s_start_m": [s for s, _ in starts], "names": [n for _, n in starts],
        "track_length_m": float(tr.length), "closed": bool(tr.closed),
        "source": str(sector_file_for(tr))}


def _corner_summary(job, df, summary: dict) -> None:
    """``summary["corners"]`` (the per-corner table, :func:`pyomo_lap.post.corners.corner_table`)
    and ``corners_source``; the sectors at the sector file's starts when there is one."""
    from .post.corners import corner_records, corner_table
    from .post.results import sector_records, sector_times
    if getattr(job, "corners", None) is None or not {"s_sector", "t", "speed_kmh"} <= set(df):
        return
    tab = corner_table(df, job.corners, job.tr.length, job.tr.closed)
    summary["corners"] = corner_records(tab)
    summary["corners_source"] = job.corners_source
    if job.sector_boundaries is not None:
        summary["sector_boundaries"] = job.sector_boundaries
        summary["sectors"] = sector_records(sector_times(df, boundaries=job.sector_boundaries))


def _build_or_reuse(job) -> None:
    """The model: the one kept in ``model_cache`` given this car, or a new build (the compiled
    point functions prepared meanwhile); ``job.m``, ``job.reused``, ``job.size``."""
    cfg, echo, tr, p = job.cfg, job.echo, job.tr, job.p
    length = job.length if job.length is not None else tr.length - job.start
    echo(f"track {tr.name}: {tr.length:.1f} m ({'closed' if tr.closed else 'open'}); vehicle {p.name}")
    echo(f"building the model: sector {job.start:.0f} m + {length:.0f} m, "
         f"nfe={cfg.nfe if cfg.nfe is not None else 'auto (from the element length)'}, "
         f"ncp={cfg.ncp}, {cfg.scheme} ...")
    if job.progress is None:
        from .util.progress import echo_progress
        job.progress = echo_progress(echo)
    compiled = prefetch_options(cfg, job.ocp_options)
    compiling = None
    if compiled is not None:
        # the compiled per-point functions of this car: the C compiler runs while Pyomo builds
        # (nothing to do when a car of the same structure compiled them before)
        from .solvers.lap_nlp import prefetch_point_functions
        compiling = prefetch_point_functions(p, compiled)
    from .vehicle.limits import merge_limits      # the car file's [limits], the job's win
    limits = merge_limits(getattr(p, "limits", None), cfg.limits)
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


def _initial_guess(job) -> None:
    """The initial guess (quasi-steady; the single-track model's solve; a warm start from a
    results folder), then the free parameters unfixed and the sensitivities' solver options;
    ``job.info``, ``job.warm``, ``job.init_s``, ``job.setup_start``."""
    cfg, echo, m = job.cfg, job.echo, job.m
    t0 = time.perf_counter()
    job.info = initialize_model(m)
    job.warm = None
    if cfg.initial_guess == "single-track" and job.model == "full":
        job.warm = _single_track_start(job)
    job.warm_source = None
    if cfg.warm_start_from is not None:
        job.warm_source = _warm_start(job)
    job.init_s = time.perf_counter() - t0
    echo(f"  initial guess in {job.init_s:.1f} s (quasi-steady estimate "
         f"{job.info['estimated_time_s']:.2f} s)")
    job.setup_start = job.setup_baseline = None
    if cfg.free:
        from .ocp.build import free_parameters
        job.setup_baseline = _setup_baseline(job)
        job.setup_start = free_parameters(m, cfg.free, cfg.keep_sum)
        echo("  setup optimization: " + ", ".join(f"{k} in [{lo:g}, {up:g}] from {v0:g}"
                                                  for k, (v0, lo, up) in job.setup_start.items())
             + "".join(f"; {' + '.join(g)} held" for g in cfg.keep_sum or ()))
    if cfg.sensitivities:
        from .post.sensitivities import SENSITIVITY_SOLVER_OPTIONS, declare_multiplier_suffixes
        declare_multiplier_suffixes(m)       # the multipliers come back with the solution
        # a tighter solve: the active set and the multipliers the sensitivities stand on
        job.solver_options = {**SENSITIVITY_SOLVER_OPTIONS, **(job.solver_options or {})}


def _warm_start(job) -> dict:
    """The model's start moved from the results folder ``warm_start_from`` onto this job's
    mesh, sector and car (:func:`pyomo_lap.post.warm_start.apply_warm_start`), after the usual
    initial guess; what it covered, for the console and ``summary.json``
    (``warm_start_source``). WarmStartError (a ValueError) before the solve: another track or
    vehicle model, no results there."""
    from .post.warm_start import apply_warm_start, check_source, read_source
    cfg, tr = job.cfg, job.tr
    src = read_source(cfg.warm_start_from)
    sha = _input_files(tr, cfg.vehicle).get("track_file_sha256")
    check_source(src, track_name=tr.name, track_sha256=sha, model=job.model)
    info = apply_warm_start(job.m, src, track_length=float(tr.length) if tr.closed else None)
    summ = src["summary"]
    mesh = summ.get("mesh") or {}
    out = {"folder": str(cfg.warm_start_from), "covered_share": info["covered_share"],
           "covered_m": info["covered_m"], "n_variables_set": info["n_variables"],
           "variables_missing": info["variables_missing"], "multipliers": info["multipliers"],
           "multipliers_used": info["multipliers"] and reads_start_multipliers(cfg.solver),
           "same_mesh": info["same_mesh"], "source_car": summ.get("vehicle"),
           "source_start_m": summ.get("start_m"), "source_length_m": summ.get("length_m"),
           "source_periodic": bool(summ.get("periodic")),
           "source_mesh": {"n_elements": mesh.get("n_elements"), "ncp": summ.get("ncp"),
                           "scheme": summ.get("scheme"), "n_points": summ.get("n_points")}}
    job.echo(f"  warm start from {cfg.warm_start_from}: {100 * out['covered_share']:.0f} % of "
             f"the sector ({out['covered_m']:.0f} m) from car {out['source_car']}, sector "
             f"{out['source_start_m'] or 0:g} m + {out['source_length_m'] or 0:g} m on "
             f"{mesh.get('n_elements')} elements x ncp {summ.get('ncp')}"
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
    from .solvers.solve import DEFAULT_SOLVER
    return solver == DEFAULT_SOLVER


def _setup_baseline(job):
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


def _setup_gain(summary: dict, baseline) -> None:
    """``summary["setup_baseline"]``: the baseline (:func:`_setup_baseline`) and the gain of
    the optimal setup, ``gain_s`` = baseline - optimum [s] and ``gain_pct`` [%] of the
    baseline (positive: the optimum is faster)."""
    if not baseline or summary.get("lap_time_s") is None:
        return
    base = baseline["lap_time_s"]
    gain = base - float(summary["lap_time_s"])
    summary["setup_baseline"] = {**baseline, "gain_s": gain,
                                 "gain_pct": 100.0 * gain / base if base else None}


def _single_track_start(job) -> dict:
    """Solve the single-track model on the same mesh and start the full model from it
    (:func:`pyomo_lap.ocp.single_track.warm_start_full`); what it took, for the summary."""
    from .ocp.single_track import warm_start_full
    cfg, echo = job.cfg, job.echo
    echo("  initial guess from the single-track model on the same mesh ...")
    ms = build_model(job.tr, job.p, **{**job.build_kwargs, "nfe": job.m.problem.options.nfe,
                                       "model": "single-track", "limits": None})
    initialize_model(ms)
    rs = solve_model(ms, solver=cfg.solver, options=job.solver_options)
    if not rs.ok:
        raise RuntimeError(f"the single-track model for the initial guess did not solve: "
                           f"{rs.termination_condition}")
    warm = {"single_track_time_s": float(pyo.value(ms.lap_time)),
            "single_track_iterations": rs.iterations, "single_track_solve_time_s": rs.solve_time_s}
    warm_start_full(job.m, ms)
    echo(f"  single-track {'lap' if cfg.periodic else 'sector'} time "
         f"{warm['single_track_time_s']:.3f} s ({rs.iterations} iterations, {rs.solve_time_s:.1f} s)")
    return warm


def _solve_job(job) -> None:
    """The solve (with a warm start's barrier parameter; from the usual initial guess again
    if the warm start fails); ``job.rep``, ``job.used_options``, ``job.warm_retry``."""
    from .solvers.solve import DEFAULT_SOLVER
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

    warm = getattr(job, "warm_source", None)
    job.used_options = (job.solver_options if warm is None else
                        {**({} if warm["multipliers_used"]     # solve_model's warm start
                            else {"mu_init": WARM_START_MU_INIT}), **(job.solver_options or {})})
    from .post.sensitivities import declare_multiplier_suffixes
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


def _continuation_possible(job) -> bool:
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
    import numpy as np
    from .ocp.racecar import junction_boundaries
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


def _continuation_reason(job) -> Optional[str]:
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


def _continuation(job, solve, why: str):
    """The job's model solved by mesh continuation
    (:func:`pyomo_lap.post.continuation.solve_by_continuation`: coarse meshes of the job's
    problem, the OCP option ``element_length`` halved down to twice the job's mean element,
    then the job's mesh from the finest one's solution); ``job.continuation`` says what was
    solved (summary.json ``mesh_continuation``), ``job.used_options`` the fine solve's options.
    Returns the fine solve's report."""
    from .post.continuation import (CONTINUATION_IPOPT_OPTIONS, solve_by_continuation,
                                    stage_element_lengths)
    from .solvers.solve import CHECKED_SOLVERS
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


def _keep_interrupted(job, exc) -> None:
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
    _summarize(job)
    job.summary["interrupted_at_iteration"] = iteration
    _channels_and_export(job)
    exc.interrupted_dir = job.where


def _stop_if_not_started(job) -> None:
    """An IPOPT solve that failed before its first iteration (a linear solver that could not
    be loaded, an option refused when the solve started) left the model as built: there are no
    partial results to write. Raises SolveFailedError saying so (nothing written, ``out_dir``
    left untouched); any other solve goes on."""
    from .solvers.solve import CHECKED_SOLVERS
    rep, cfg = job.rep, job.cfg
    if rep.ok or cfg.solver not in CHECKED_SOLVERS or (rep.iterations is not None
                                                       and rep.iterations >= 0):
        return
    kept = f"; {job.out_dir}/ was left untouched" if job.out_dir is not None else ""
    raise SolveFailedError(f"{cfg.solver} stopped before its first iteration: "
                           f"{rep.describe()}. Nothing was written (there are no partial "
                           f"results){kept}", rep)


MESH_REFINEMENTS = 2
"""Most rounds of the job option ``refine_mesh`` (:func:`_refine_job`): a refined solution
moves, and a throttle applied within one element elsewhere can take the defects above the
warning again (the Formula One car at Barcelona, issue 33: 0.163 before, 0.165 at another
element after one round)."""


def _refine_job(job) -> None:
    """The job option ``refine_mesh``: a full model solved to optimality whose collocation
    defects or speed consistency (:func:`pyomo_lap.post.quality.speed_consistency`) are above
    the self-check's warning is solved again on a mesh refined where they are
    (:func:`pyomo_lap.post.defects.refine_mesh`: elements above half the warning split; the
    speed error of a step falls with its length, so an element is split in as many parts as
    its error is multiples of that), from its solution, up to :data:`MESH_REFINEMENTS` times;
    each refined model replaces ``job.m``, its report ``job.rep``, if it is optimal (else the
    last optimal one stands). ``job.refinement`` says what was done (``rounds``: each one)."""
    cfg, m, rep = job.cfg, job.m, job.rep
    job.refinement = None
    opts = m.problem.options
    given = (opts.element_boundaries is not None or m.problem.mesh == "uniform"
             or cfg.warm_start_from is not None or cfg.free or cfg.sensitivities
             or opts.lift)
    if not (cfg.refine_mesh and rep.ok and m.problem.vehicle_model.name == "full") or given:
        return
    rounds = []
    for _ in range(MESH_REFINEMENTS):
        r = _refine_once(job)
        if r is None:
            break
        rounds.append(r)
        if not r["optimal"]:
            break
    if rounds:
        job.refinement = {"elements_split": sum(r["elements_split"] for r in rounds),
                          "nfe_before": rounds[0]["nfe_before"],
                          "nfe_after": rounds[-1]["nfe_after"] if rounds[-1]["optimal"]
                          else rounds[-1]["nfe_before"],
                          "defect_max_before": rounds[0]["defect_max_before"],
                          "lap_time_before_s": rounds[0]["lap_time_before_s"],
                          "iterations": sum(r["iterations"] or 0 for r in rounds),
                          "optimal": all(r["optimal"] for r in rounds),
                          "time_s": sum(r["time_s"] for r in rounds), "rounds": rounds}


def _refine_once(job):
    """One round of :func:`_refine_job` on ``job.m``: None when its defects and speed
    consistency are within the warnings, else what was done (and ``job.m``, ``job.rep``
    replaced by the refined model's if it is optimal)."""
    import numpy as np
    from .post.defects import collocation_defects, refine_mesh
    from .post.validate import DEFECT_MAX, DEFECT_P95, SPEED_CONSISTENCY
    m = job.m
    t0 = time.perf_counter()
    speed_split, speed_max = _speed_consistency_split(m, job)     # keeps job.result_df
    opts = m.problem.options
    d = collocation_defects(job.result_df[1], m.problem.track, m.problem.vehicle, ncp=opts.ncp,
                            scheme=opts.scheme, start=opts.start, node_residuals=False,
                            interpolation="state" if opts.control_form == "state" else "polynomial")
    eps = d.elements["eps"].to_numpy(float)
    if not np.all(np.isfinite(eps)):
        return None
    defects_high = eps.max() > DEFECT_MAX[0] or np.percentile(eps, 95) > DEFECT_P95[0]
    if not (defects_high or speed_split):
        job.result_defects = (m, d)  # of job.m as it stands: the self-check takes them
        return None
    why = []
    if defects_high:
        why.append(f"the collocation defects reach {eps.max():.3g} (warning above {DEFECT_MAX[0]:g})")
    if speed_split:
        why.append(f"the speed consistency reaches {speed_max:.3g} % of the top speed (warning "
                   f"above {SPEED_CONSISTENCY[0]:g} %)")
    job.echo(f"  {' and '.join(why)}: refining the mesh where they are large and solving again ...")
    options = {"mu_init": WARM_START_MU_INIT, **(job.solver_options or {})}
    res = refine_mesh(m, tol=0.5 * DEFECT_MAX[0], defects=d, max_split=3, solver=job.cfg.solver,
                      solver_options=options, also_split=speed_split)
    new_rep = res.solve_report
    out = {"elements_split": len(res.split), "nfe_before": len(eps),
           "nfe_after": len(res.boundaries) - 1, "defect_max_before": float(eps.max()),
           "speed_consistency_before_pct": float(speed_max),
           "lap_time_before_s": res.lap_time_before,
           "iterations": None if new_rep is None else new_rep.iterations,
           "optimal": bool(new_rep is not None and new_rep.ok),
           "time_s": time.perf_counter() - t0}
    if out["optimal"]:
        job.echo(f"  {len(res.split)} elements split ({len(eps)} -> {len(res.boundaries) - 1}); "
                 f"{new_rep.termination_condition} after {new_rep.iterations} iterations, "
                 f"{new_rep.solve_time_s:.1f} s")
        job.m, job.rep = res.model, new_rep
        job.size = model_size(res.model)
    else:
        job.echo("  the solve on the refined mesh did not end optimal: the result before it stands")
    return out


def _speed_consistency_split(m, job=None) -> tuple:
    """The elements of a solved full model whose speed consistency
    (:func:`pyomo_lap.post.quality.speed_step_errors`) is above half the self-check's warning
    (:data:`pyomo_lap.post.validate.SPEED_CONSISTENCY`), ``{element: parts}`` (the error of a
    step falls with its length: as many parts as the error is multiples of that half), and the
    largest error [% of the car's top speed]. With ``job``, the table is kept as
    ``job.result_df`` (the channels of ``job.m``, if it is not refined)."""
    import numpy as np
    from .ocp.common import vehicle_of_model
    from .post.quality import _distinct, channel_scales, speed_step_errors
    from .post.results import trajectory_dataframe
    from .post.validate import SPEED_CONSISTENCY
    df = trajectory_dataframe(m)
    if job is not None:
        job.result_df = (m, df)
    need = {"t", "speed", "v_3x", "v_3y", "a_x", "a_y", "element"}
    if not need <= set(df.columns) or len(df) < 3:
        return {}, 0.0
    v_ref = channel_scales(vehicle_of_model(m), df).get("speed")
    if not v_ref:
        return {}, 0.0
    keep = _distinct(df["s_sector" if "s_sector" in df.columns else "s"].to_numpy(float))
    _, err = speed_step_errors(df)
    rel = 100.0 * np.abs(err) / v_ref                   # [% of the top speed]
    element = df["element"].to_numpy(int)[keep][1:]     # a step lies in its end point's element
    tol = 0.5 * SPEED_CONSISTENCY[0]
    split = {}
    for j, r in zip(element, rel):
        if r > tol:
            split[int(j)] = max(split.get(int(j), 1), int(min(3, max(2, np.ceil(r / tol)))))
    return (split if rel.max() > SPEED_CONSISTENCY[0] else {}), float(rel.max())


def _summarize(job) -> None:
    """``job.summary``: what summary.json holds before the channels (result, options, sizes,
    provenance, the NLP's size and the timings)."""
    cfg, m, rep, size, tr, p = job.cfg, job.m, job.rep, job.size, job.tr, job.p
    lap = pyo.value(m.lap_time, exception=False)   # None if a failed solve left no values
    objective = pyo.value(m.objective, exception=False)
    job.lap = float(lap) if lap is not None else None
    summary = {
        "lap_time_s": job.lap,
        "termination_condition": rep.termination_condition,
        "outcome": rep.kind,
        "solver_hint": rep.hint,
        "solver_status": rep.status,
        "solver_message": rep.message,
        "ipopt_exit": rep.exit_message,
        "optimal": rep.ok,
        "n_variables": rep.n_variables if rep.n_variables is not None else size["n_variables"],
        "n_constraints": rep.n_constraints if rep.n_constraints is not None else size["n_constraints"],
        "iterations": rep.iterations,
        "build_time_s": m.problem.build_time_s,
        "model_reused": job.reused,
        "init_time_s": job.init_s,
        "solve_time_s": rep.solve_time_s,
        "nfe": m.problem.options.nfe, "ncp": cfg.ncp, "scheme": cfg.scheme,
        "ocp_options": {k: (list(v) if isinstance(v, tuple) else v)
                        for k, v in m.problem.options.value().items() if k not in OWN_OCP_OPTIONS},
        "n_points": len(m.s),
        "start_m": job.start,
        "length_m": m.problem.sector_length,
        "periodic": cfg.periodic,
        "model": job.model,
        "initial_guess": cfg.initial_guess,
        **({"warm_start": job.warm} if job.warm else {}),
        "warm_start_from": str(cfg.warm_start_from) if cfg.warm_start_from is not None else None,
        **({"warm_start_source": job.warm_source} if getattr(job, "warm_source", None) else {}),
        **({"warm_start_failed": job.warm_retry} if job.warm_retry else {}),
        "initial_speed_mps": m.problem.initial_speed,
        "track": tr.name,
        "vehicle": p.name,
        "solver": cfg.solver,
        "solver_options": dict(job.used_options or {}),   # of the solve that gave the result
        "solver_options_effective": _effective_options(cfg.solver, job.used_options),
        "objective": float(objective) if objective is not None else None,
        "pyomo_lap_version": __version__,
        "pyomo_version": _pyomo_version(),
        "python": platform.python_version(),
        **_input_files(tr, cfg.vehicle),
        **_provenance(p, cfg.solver),
        "track_width_m": cfg.track_width,
        "track_flat": bool(cfg.flat),
        "track_lat_lon_order": _lat_lon_summary(tr, cfg.lat_lon_order),
        "track_processing": list(getattr(tr, "processing_steps", [])),
        "track_assumptions": list(getattr(tr, "assumptions", [])),
        "track_repairs": [*getattr(tr, "build_repairs", []),
                          *(str(f) for f in getattr(tr, "findings", []))],
    }
    from .solvers.solve import log_statistics
    stats = log_statistics(rep.log or "")
    summary["nlp"] = {k: stats[k] for k in ("n_variables", "n_equalities", "n_inequalities",
                                            "jac_nnz", "hess_nnz") if k in stats}
    summary["timing"] = _timing(job, stats)
    summary["mesh_refinement"] = getattr(job, "refinement", None)
    summary["mesh_continuation"] = getattr(job, "continuation", None)
    from .ocp.integrals import energy_summary
    summary["energy"] = energy_summary(m)     # the integrals of m.energy [J], issue 38
    job.summary = summary


def _timing(job, stats: dict) -> dict:
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


def _channels_and_export(job) -> None:
    """The channels (a failed solve whose last point cannot be evaluated writes nothing),
    their quality, the mesh, sector times, mean speed, the car as solved and the optimal
    setup, the sensitivities, and the files; ``job.df``, ``job.sens``, ``job.where``."""
    from .ocp.common import vehicle_of_model
    from .post.quality import channel_quality
    from .post.results import sector_records, sector_times
    from .vehicle.car import VehicleParameters
    cfg, echo, m, rep, summary = job.cfg, job.echo, job.m, job.rep, job.summary
    timing = summary["timing"]
    t_out = time.perf_counter()
    try:
        from .post.results import trajectory_dataframe
        kept = getattr(job, "result_df", None)          # the refinement's check made it
        df = kept[1] if kept is not None and kept[0] is m else trajectory_dataframe(
            m, progress=job.progress)
    except Exception as exc:
        if rep.ok:
            raise
        raise SolveFailedError(f"{cfg.solver}: {rep.describe()}. The last point could not be "
                               f"evaluated ({type(exc).__name__}: {exc}); nothing was written"
                               + (f", {job.out_dir}/ was left untouched" if job.out_dir else ""),
                               rep) from None
    summary["max_speed_kmh"] = float(df["speed_kmh"].max())
    p_solved = vehicle_of_model(m) if rep.ok or not cfg.free else job.p
    summary["channel_quality"] = channel_quality(df, p_solved)
    summary["mesh"] = _mesh_summary(m)
    summary["sectors"] = sector_records(sector_times(df, cfg.n_sectors))
    _corner_summary(job, df, summary)
    # the car's mean speed: its path length over the time (the time average of the speed
    # channel), not the centreline's length, which a car cutting corners does not drive
    lap = job.lap
    summary["mean_speed_kmh"] = (None if lap is None or lap <= 0 else _mean_speed_kmh(df)
                                 if {"t", "speed_kmh"} <= set(df.columns)
                                 else float(3.6 * m.problem.sector_length / lap))
    timing["channels_s"] = time.perf_counter() - t_out
    summary["vehicle_parameters"] = _vehicle_parameters(p_solved)
    _regularization(job, summary)
    job.self_check = None
    if rep.ok:
        _self_check(job, df, p_solved)
    if job.setup_start is not None:
        summary["setup"] = _setup_summary(m, job.setup_start)
        echo("  optimal setup: " + ", ".join(
            f"{k} = {v['value']:.6g}" + (f" (at its {v['at_bound']} bound)" if v["at_bound"] else "")
            for k, v in summary["setup"].items()))
        _setup_gain(summary, job.setup_baseline)
        if "setup_baseline" in summary:
            b = summary["setup_baseline"]
            echo(f"  baseline {b['lap_time_s']:.3f} s -> optimum {summary['lap_time_s']:.3f} s: "
                 f"gain {b['gain_s']:.3f} s ({b['gain_pct']:.2f} %)")
    job.sens = None
    if cfg.sensitivities and rep.ok:
        from .post.sensitivities import lap_time_sensitivities
        sens = job.sens = lap_time_sensitivities(m)
        timing["sensitivities_s"] = sens.attrs["time_s"]
        summary["sensitivities"] = sens.to_dict(orient="records")
        top = sens.reindex(sens["dT_1pct"].abs().sort_values(ascending=False).index).head(3)
        echo(f"  sensitivities in {sens.attrs['time_s']:.1f} s; largest, for +1 %: "
             + ", ".join(f"{r.parameter} {r.dT_1pct * 1e3:+.1f} ms" for r in top.itertuples()))
    if cfg.penalty_cost and rep.ok and "regularization" in summary:
        _penalty_cost(job, summary)
    job.df, job.where = df, None
    if job.out_dir is not None:
        echo("exporting ...")
        from .post.results import solution_arrays
        from .post.warm_start import multiplier_arrays
        table, mesh = _fixed_step(job, df)
        job.where = _write_or_fallback(
            job.out_dir, table, summary, p_solved if isinstance(p_solved, VehicleParameters)
            else summary["vehicle_parameters"], rep, echo, cfg.n_sectors,
            {**solution_arrays(m), **(multiplier_arrays(m) if rep.ok else {})}
            if rep.ok or rep.kind == "interrupted" else None, mesh)
        if job.sens is not None:
            from .post.plots import plot_results
            plot_results(job.where, figures=["sensitivities"], echo=echo)


def _fixed_step(job, df) -> tuple:
    """The table to write and the mesh rows to write beside it: with the job option ``every``
    on a solved result, the channels on that step
    (:func:`pyomo_lap.post.fixed_step.model_fixed_step`) and the mesh rows ``df``
    (``summary["trajectory_step_m"]``); otherwise ``df`` and None (partial results keep
    their mesh rows: their polynomials are no solution)."""
    every = job.cfg.every
    if every is None or not job.rep.ok:
        return df, None
    from .post.fixed_step import model_fixed_step
    job.summary["trajectory_step_m"] = float(every)
    return model_fixed_step(job.m, df, every), df


def _regularization(job, summary: dict) -> None:
    """``summary["regularization"]``: the objective's penalties in seconds and their share of
    the objective (:func:`pyomo_lap.ocp.common.regularization`), said on the console; none
    for a model without them or without values."""
    from .ocp.common import regularization
    from .post.validate import regularization_text
    try:
        reg = regularization(job.m)
    except (ValueError, TypeError, AttributeError, ZeroDivisionError):
        return
    if not all(math.isfinite(x) for x in (reg["total_s"], reg["share"])):
        return
    summary["regularization"] = reg
    _objective_note(summary, reg)
    job.echo(f"  {regularization_text(reg)}")


def _objective_note(summary: dict, reg: dict) -> None:
    """``summary["penalty_s"]`` (objective - lap_time_s [s]) and ``summary["objective_note"]``
    (what the objective is: the sector time plus the penalties of eq (41) and the rates, named
    by ``regularization.terms``)."""
    objective, lap = summary.get("objective"), summary.get("lap_time_s")
    if objective is None or lap is None:
        return
    summary["penalty_s"] = float(objective) - float(lap)
    names = ", ".join(reg.get("terms", {})) or "none"
    summary["objective_note"] = (
        "objective = lap_time_s + penalty_s [s]: the sector time the solver minimised plus the "
        f"penalty terms ({names}: jumps and rates of the steering and of the tyre forces, "
        "braking while driving; each in seconds in regularization.terms); lap_time_s is the "
        "time alone")


def _penalty_cost(job, summary: dict) -> None:
    """The job option ``penalty_cost``: what the penalties cost in lap time
    (:func:`pyomo_lap.post.sensitivities.lap_time_cost`, a second solve with every weight / 10
    from the optimum, which the model keeps) into ``summary["regularization"]``, said on the
    console; its time into ``summary["timing"]["penalty_cost_s"]``."""
    from .post.sensitivities import PENALTY_COST_FACTOR, lap_time_cost
    from .post.validate import lap_time_cost_text
    job.echo(f"  the penalties' lap-time cost: solving again with every weight / "
             f"{PENALTY_COST_FACTOR:g} ...")
    cost = lap_time_cost(job.m, job.cfg.solver, job.solver_options)
    reg = summary["regularization"]
    reg["lap_time_cost_s"] = cost["lap_time_cost_s"]
    reg["lap_time_cost"] = cost
    summary["timing"]["penalty_cost_s"] = cost["time_s"]
    job.echo(f"  {lap_time_cost_text(reg)}")


def _self_check(job, df, vehicle) -> None:
    """The fast checks of the result (:func:`pyomo_lap.post.validate.self_check`: defects,
    speed consistency, energy balance, power limit) into ``summary["self_check"]`` and
    ``job.self_check``; its time into ``summary["timing"]["self_check_s"]``."""
    from .post.validate import self_check
    kept = getattr(job, "result_defects", None)   # measured by the refinement's check on job.m
    sc = self_check(df, job.summary, job.tr, vehicle,
                    defects=kept[1] if kept is not None and kept[0] is job.m else None)
    job.summary["self_check"] = sc
    job.summary["timing"]["self_check_s"] = sc["wall_time_s"]
    job.self_check = sc


def _lat_lon_summary(tr, option: str):
    """summary.json's ``track_lat_lon_order``: the option ``lat_lon_order`` and, for a GPS
    file, the order used and why (:func:`pyomo_lap.track.gps.lat_lon_record`; a track with
    x/y coordinates: ``order`` None)."""
    rec = (getattr(tr, "provenance", None) or {}).get("lat_lon_order")
    return dict(rec) if rec else dict(option=option, order=None, given=False,
                                      why="x/y coordinates: no latitude and longitude")


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
    from .ocp.build import set_vehicle
    from .ocp.full_model import VehicleStructureError
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
        One row per point (:func:`pyomo_lap.post.results.trajectory_dataframe`).
    summary : dict
        ``summary.json``.
    sensitivities : DataFrame or None
        With ``sensitivities=True``: d(lap time)/d(parameter) per parameter
        (:func:`pyomo_lap.post.sensitivities.lap_time_sensitivities`), else None.
    self_check : dict or None
        The fast checks of the result and their verdict (``summary["self_check"]``,
        :func:`pyomo_lap.post.validate.self_check`): ``self_check["verdict"]`` is ``"pass"``,
        ``"warn"`` or ``"fail"``. A result that fails is returned (and written) all the
        same: look at it before using it.
    """

    def __new__(cls, model, report, trajectory, summary, sensitivities=None, self_check=None):
        self = super().__new__(cls, (model, report, trajectory, summary))
        self.sensitivities = sensitivities
        self.self_check = self_check
        return self

    model = property(lambda self: self[0])
    report = property(lambda self: self[1])
    trajectory = property(lambda self: self[2])
    summary = property(lambda self: self[3])


def _write_or_fallback(out_dir: Path, df, summary: dict, params: dict, rep, echo,
                       n_sectors: int = 3, solution: Optional[dict] = None,
                       mesh_df=None) -> Path:
    """write_results, and when that fails (disk full, folder removed, permissions), the same
    files in a fresh folder of the temporary directory: a result is never lost."""
    import tempfile
    from .post.results import FolderNotReplaceableError, write_results
    partial = "interrupted" if rep.kind == "interrupted" else not rep.ok
    try:
        where = write_results(out_dir, df, summary, params, partial=partial, n_sectors=n_sectors,
                              solution=solution, echo=_recovery_only(echo), mesh_df=mesh_df)
    except (OSError, FolderNotReplaceableError) as exc:  # e.g. a file of the user's added meanwhile
        fallback = Path(tempfile.mkdtemp(prefix=f"pyomo_lap-{out_dir.name}-"))
        where = write_results(fallback / out_dir.name, df, summary, params, partial=partial,
                              n_sectors=n_sectors, solution=solution, mesh_df=mesh_df)
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
    from pyomo.version import version
    return version
