"""The options of a job (:data:`SOLVE_CONFIG`, the one declaration :func:`pyomo_lap.solve_sector`
and ``pyomo-lap solve`` take their options from) and their checks: :func:`job_options`,
:func:`job_model`, :func:`prefetch_options`, :func:`job_mesh`, :class:`OptionValueError`.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Optional

from pyomo.common.config import ConfigDict, ConfigValue

from ..solvers.warm_start import PRIMAL_START_MU_INIT
from ..track.checks import LAT_LON_ORDERS
from ..track.loading import load_track, track_formats_help
from ..util.domains import (
    Anything,
    DictOrNone,
    FiniteFloat,
    IntBetween,
    OneOf,
    PathOrNone,
    error_text,
)
from ..vehicle.car import load_vehicle

__all__ = ["SOLVE_CONFIG", "OWN_OCP_OPTIONS", "WARM_START_MU_INIT", "job_options", "job_model",
           "job_mesh", "prefetch_options", "OptionValueError"]


from ..ocp.build import (
    DEFAULT_MODEL,
    OCP_CONFIG,
    VEHICLE_MODELS,
    check_free_parameters,
    models_with,
    sector_mesh,
    vehicle_model,
)
from ..ocp.options import (
    CLI_OWNED,  # noqa: E402
    check_ocp_options,
)
from ..solvers.solve import DEFAULT_SOLVER
from ..track import checks as track_checks
from ..track.checks import check_track_width
from ..vehicle.car import VehicleParameters, vehicle_file_model
from ..vehicle.schema import KEY_OF_FIELD, field_of

OWN_OCP_OPTIONS = CLI_OWNED
"""The OCP options that are also options of the job (:data:`SOLVE_CONFIG`)."""
"""OCP options that solve_sector has as arguments and the summary records at its top level
(the summary's ``ocp_options`` holds the others)."""


class _TrackWidth:
    """The total width of the track [m] or None (:func:`pyomo_lap.track.checks.check_track_width`)."""

    cli_type = float

    def __call__(self, x):
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
    else the registry's default (:data:`pyomo_lap.ocp.build.DEFAULT_MODEL`).

    Raises
    ------
    ValueError
        ``model`` given and the vehicle file naming another one (one line, naming both).
    """
    named = vehicle_file_model(vehicle)
    if named is not None:
        if named not in VEHICLE_MODELS:
            where = vehicle if isinstance(vehicle, (str, Path)) else getattr(vehicle, "name", vehicle)
            raise ValueError(f"vehicle {str(where)!r}: model = {named!r}: expected one of "
                             f"{', '.join(VEHICLE_MODELS)}")
    if model is None:
        return named or DEFAULT_MODEL
    if named is not None and model != named:
        where = vehicle if isinstance(vehicle, (str, Path)) else getattr(vehicle, "name", vehicle)
        raise ValueError(f"model = {model!r}, but the vehicle {str(where)!r} is for the model "
                         f"{named!r} (its model = {named!r}): give no model, or model = {named!r}")
    return model


_EVERY = FiniteFloat(0.0, True, "a finite step > 0 m, at most the sector's length", optional=True)


_EVERY_TEXT = ("write the channels every EVERY metres of the sector [m] (None: one row per point "
               "of the solver's mesh): trajectory.csv, .parquet and the workbook's channels on 0, "
               "EVERY, 2 EVERY, ... and the sector's end (EVERY at least the sector's length / (100 "
               "mesh points asked for): at most 100 rows per mesh interval), computed there "
               "from the collocation "
               "polynomials (docs/fixed_step.md); the mesh rows in trajectory_mesh.csv "
               "and .parquet")
"""The job option ``every``: its domain and description (:data:`SOLVE_CONFIG`)."""


def _solve_config() -> ConfigDict:
    c = ConfigDict(description="the options of one job (solve_sector, pyomo-lap solve)")
    c.declare("track", ConfigValue(default="nordschleife", domain=Anything("str, Path or Track"),
              description="track name (see `pyomo-lap tracks`: centrelines and arc tracks such "
                          "as dymos_oval; a bundled name wins over a local file or folder of "
                          "that name: ./NAME for the local one) or a file (docs/tracks.md): "
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
    c.declare("initial_guess", ConfigValue(default="cold",
              domain=OneOf(["cold", *models_with("initial_guess_for")]),
              description="'cold' (the model's own initial guess) or a model whose solution "
                          "starts the job's model (VehicleModel.initial_guess_for): "
                          "'single-track' solves the single-track model on the same mesh first "
                          "and starts the full model from it "
                          "(pyomo_lap.ocp.single_track.warm_start_full); for another model, "
                          "the cold start"))
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
              description="after an optimal solve (of any vehicle model whose results are "
                          "checked: VehicleModel.trajectory and .dynamics) whose collocation defects "
                          "or speed consistency are above the self-check's warning (DEFECT_MAX, "
                          "DEFECT_P95, SPEED_CONSISTENCY: a step of the speed that the "
                          "acceleration does not integrate to, e.g. a throttle blip one element "
                          "long), split the elements where they are large and solve again from the solution "
                          "on the refined mesh, up to twice (MESH_REFINEMENTS; pyomo_lap.api.refine.refine_mesh; not "
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
                          "twice the job's mean element; pyomo_lap.api.continuation): 'on' "
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
                          "pyomo_lap.analysis.sensitivities.lap_time_cost). The result written is "
                          "the one with the default weights; the second solve takes about a "
                          "third of the first's time"))
    c.declare("sensitivities", ConfigValue(default=False, domain=bool,
              description="after the solve, d(lap time)/d(parameter) for every parameter of the "
                          "vehicle file and the track's friction scale from the multipliers "
                          "(pyomo_lap.analysis.sensitivities; full model; solved to tol = 1e-10 unless "
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


class OptionValueError(ValueError):
    """A job option's value outside its domain: ``key``, ``value`` and the domain's ``text``
    (``expected ...``); the message is ``key = value: text`` (the CLI says ``--flag value``)."""

    def __init__(self, key: str, value, text: str):
        super().__init__(f"{key} = {value!r}: {text}")
        self.key, self.value, self.text = key, value, text


def prefetch_options(cfg, ocp_options: Optional[dict] = None) -> Optional[dict]:
    """The OCP options of a job (:func:`job_options`) that decide its recorded rows, as
    :func:`pyomo_lap.solvers.lap.compiled.prefetch_point_functions` takes them: ``model``,
    ``periodic``, ``initial_speed`` and the ``ocp_options`` (given already checked, or
    checked here); None when the job does not solve with compiled functions (a solver other
    than the default ``lap_ipopt``, or its option ``compile=vm``)."""
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
