r"""The minimum-lap-time optimal control problem: its options (:data:`OCP_CONFIG`), the
registry of vehicle models (:data:`VEHICLE_MODELS`) and the builder (:func:`build_model`).

The independent variable is the arc length along the track spine, :math:`q_1 = s` (on the
model, ``m.s`` runs from 0 to the sector length; the track coordinate is ``start + s``). The
objective (41) is the sector time plus penalties on steering jumps and on simultaneous
traction and braking (:func:`pyomo_lap.ocp.common.add_objective`).

:func:`build_model` parses the options and hands them to the vehicle model's ``build``
(:class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`):

* ``"full"`` (:data:`pyomo_lap.ocp.full_model.FULL_MODEL`): the six-joint Lie-group car; the
  formulation (states, controls, algebraic variables, the spatial DAE (39), the path
  constraints, the recorded per-point rows ``m.problem.point_rows``) is described in
  :mod:`pyomo_lap.ocp.full_model`;
* ``"single-track"`` (:data:`pyomo_lap.ocp.single_track.SINGLE_TRACK_MODEL`): the rigid
  nonlinear bicycle with Fiala tyres.

Another model is one module that defines a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`
and one line in :data:`VEHICLE_MODELS` (``docs/vehicle_models.md``).

The names this module exported before the split (``record_point_rows``, ``PointRows``,
``add_objective``, ``sector_mesh`` ...) are re-exported from :mod:`pyomo_lap.ocp.full_model`
and :mod:`pyomo_lap.ocp.common`. Imports run one way: :mod:`pyomo_lap.ocp.common` and
:mod:`pyomo_lap.ocp.vehicle_model` below the models, the models below this module.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Optional

import pyomo.environ as pyo
from pyomo.common.config import ConfigDict, ConfigValue, In, NonNegativeFloat

from ..util.domains import EntrySpeed, FiniteFloat, FloatBetween, IntBetween, OneOf
from ..util.gc_pause import collect_frozen, gc_paused
from ..vehicle import car as veh
from ..vehicle.schema import KEY_OF_FIELD, field_of
from .common import (  # noqa: F401
    OBJECTIVE_SCALE,
    _Namer,
    _schema_bounds,
    _set_new,
    add_objective,
    pyomo_units,
    vehicle_of_model,
    vehicle_var,
)
from .full_model import (  # noqa: F401  (re-exported: the names of pyomo_lap.ocp.build before the split)
    _FAMILY_DOCS,
    DERIVATIVE_NAMES,
    FULL_MODEL,
    POINT_VARIABLES,
    RATE_NAMES,
    STATE_NAMES,
    TRACK_INPUTS,
    USER_TAGS,
    VEHICLE_INPUTS,
    WHEELS,
    PointRows,
    RowFamily,
    VehicleStructureError,
    _set_scaling,
    adherence_rows,
    build_full_model,
    record_point_rows,
    track_numbers,
)
from .hybrid import add_hybrid
from .integrals import EnergyLimits, add_energy_integrals
from .multibody import MULTIBODY_MODEL
from .racecar import RACECAR_MODEL
from .sector import (  # noqa: F401  (re-exported)
    _sector_points,
    entry_speed,
    fast_element_lookup,
    sector_mesh,
    track_joints,
)
from .single_track import SINGLE_TRACK_MODEL
from .vehicle_model import VehicleModel, update_problem

__all__ = ["OCP_CONFIG", "build_model", "set_vehicle", "CarRefresh", "record_rows", "point_rows_recorder", "free_parameters", "VehicleStructureError", "STATE_NAMES", "RATE_NAMES", "track_joints",
           "sector_mesh", "entry_speed", "VEHICLE_MODELS", "DEFAULT_MODEL", "models_with", "VehicleModel",
           "vehicle_model"]

VEHICLE_MODELS = {
    FULL_MODEL.name: FULL_MODEL,
    SINGLE_TRACK_MODEL.name: SINGLE_TRACK_MODEL,
    MULTIBODY_MODEL.name: MULTIBODY_MODEL,
    RACECAR_MODEL.name: RACECAR_MODEL,    # dymos's racecar example (pyomo_lap/ocp/racecar.py, docs/racecar.md)
}
"""The registry of vehicle models: OCP option ``model`` (and the CLI's ``--model``) ->
:class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`. Another model: one line here."""

DEFAULT_MODEL = FULL_MODEL.name
"""The vehicle model of the OCP option ``model``'s default, and of a result or a vehicle file
that names none (a ``summary.json`` written before the option existed)."""


def models_with(capability: str) -> list:
    """The names of the registered models whose :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`
    has ``capability`` (a field, e.g. ``"lap_time_sensitivities"``, ``"initial_guess_for"``,
    ``"dynamics"``) set: true, not None, not empty; in the registry's order. What a message
    that lists the models able to do something names.

    Raises
    ------
    ValueError
        ``capability`` is no field of ``VehicleModel``.
    """
    fields = {f.name for f in dataclasses.fields(VehicleModel)}
    if capability not in fields:
        raise ValueError(f"capability = {capability!r}: expected a field of VehicleModel "
                         f"({', '.join(sorted(fields))})")
    return [name for name, vm in VEHICLE_MODELS.items() if getattr(vm, capability)]


class _VehicleModelDomain:
    """Domain of the option ``model``: a key of :data:`VEHICLE_MODELS`, or a
    :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` object (a registered one is stored as its
    key)."""

    def __call__(self, value):
        if isinstance(value, VehicleModel):
            return value.name if VEHICLE_MODELS.get(value.name) is value else value
        return In(list(VEHICLE_MODELS))(value)

    def domain_name(self):
        return In(list(VEHICLE_MODELS)).domain_name()

    @property
    def choices(self):
        """The registered names (the CLI's choices)."""
        return list(VEHICLE_MODELS)


_vehicle_model_domain = _VehicleModelDomain()


def vehicle_model(model) -> VehicleModel:
    """The :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` of an option value ``model`` (a
    key of :data:`VEHICLE_MODELS` or a ``VehicleModel``).

    Raises
    ------
    ValueError
        A name that is not a key of :data:`VEHICLE_MODELS`.
    """
    if isinstance(model, VehicleModel):
        return model
    try:
        return VEHICLE_MODELS[model]
    except (KeyError, TypeError):
        raise ValueError(f"model = {model!r}: expected one of {sorted(VEHICLE_MODELS)} "
                         "or a pyomo_lap.ocp.vehicle_model.VehicleModel") from None


W_DEFAULTS = {"w_steer_rate": 0.01, "w_force_rate": 0.1, "w_steer_jump": 0.01,
              "w_complementarity": 5.0}
"""The defaults of the dimensionless penalty weights (:func:`pyomo_lap.ocp.common.penalty_weights`):
chosen so that the penalties are at most 0.1 % of the objective on the closed laps of every
bundled car on every bundled circuit (docs/formulation.md, "The penalties"), with smooth channels."""

RETIRED_OPTIONS = {"K_delta_rate": "w_steer_rate", "K_force_rate": "w_force_rate",
                   "K_delta": "w_steer_jump", "K_force": "w_force_jump", "K_f": "w_complementarity",
                   "mesh_lateral_rate": "mesh_lateral_change",
                   "mesh_longitudinal_rate": "mesh_longitudinal_change",
                   "mesh_curvature_rate": "mesh_curvature_change"}
"""OCP options of earlier versions (absolute weights and rates sized for one car) -> the
dimensionless option that replaced each; the model's Params ``m.K_*`` keep their names and SI
units."""

OCP_CONFIG = ConfigDict("pyomo_lap OCP options")
OCP_CONFIG.declare("model", ConfigValue(default=DEFAULT_MODEL, domain=_vehicle_model_domain,
                   description="vehicle model (the registry, VEHICLE_MODELS): " + "; ".join(
                       f"{name!r}, {vm.description}" for name, vm in VEHICLE_MODELS.items())))
OCP_CONFIG.declare("start", ConfigValue(default=0.0, domain=FiniteFloat(0.0, False, "a finite distance >= 0 m from the track's start"),
                   description="track coordinate of the sector start [m]"))
OCP_CONFIG.declare("length", ConfigValue(default=None, domain=FiniteFloat(0.0, True, "a positive, finite length in metres", optional=True),
                   description="sector length [m]; None: the whole track (from start)"))
OCP_CONFIG.declare("nfe", ConfigValue(default=None, domain=IntBetween(2, 100000, optional=True),
                   description="number of finite elements N; None: the sector length divided by "
                               "element_length, rounded up"))
OCP_CONFIG.declare("element_length", ConfigValue(default=10.0, domain=FiniteFloat(0.0, True, "a positive, finite length in metres"),
                   description="length of the finite elements when nfe is None [m]; 10 m with "
                               "ncp = 2 is within 0.02 % of the mesh-converged lap time on the "
                               "Nordschleife (docs/benchmarks.md, 'Accuracy: mesh study')"))
OCP_CONFIG.declare("mesh", ConfigValue(default="adaptive", domain=In(["adaptive", "uniform"]),
                   description="placement of the finite elements when nfe and element_boundaries "
                               "are not given: 'adaptive' (element_length, split where the car's "
                               "quasi-steady accelerations change fast and doubled where they are "
                               "calm, pyomo_lap.ocp.mesh) or 'uniform' (element_length)"))
OCP_CONFIG.declare("mesh_lateral_change", ConfigValue(default=0.095, domain=FiniteFloat(0.0, True, "a positive fraction"),
                   description="adaptive mesh: change of the quasi-steady lateral acceleration "
                               "over an element_length, relative to the car's largest tyre force "
                               "over its mass (pyomo_lap.ocp.common.force_scale), above which "
                               "elements are split [-]"))
OCP_CONFIG.declare("mesh_longitudinal_change", ConfigValue(default=0.19, domain=FiniteFloat(0.0, True, "a positive fraction"),
                   description="adaptive mesh: the same for the longitudinal acceleration [-]"))
OCP_CONFIG.declare("mesh_curvature_change", ConfigValue(default=0.05, domain=FiniteFloat(0.0, True, "a positive fraction"),
                   description="adaptive mesh: change of the track's curvature over an "
                               "element_length, times element_length, above which elements are "
                               "split (hairpins, where the car turns fast at low speed) [-]"))
OCP_CONFIG.declare("mesh_max_split", ConfigValue(default=3, domain=IntBetween(1, 10),
                   description="adaptive mesh: most parts an element_length is split into"))
OCP_CONFIG.declare("mesh_coarsen", ConfigValue(default=2.0, domain=FiniteFloat(1.0, False, "a factor >= 1"),
                   description="adaptive mesh: element_length is multiplied by this on calm "
                               "stretches (straights, steady corners) [-]"))
OCP_CONFIG.declare("ncp", ConfigValue(default=2, domain=IntBetween(1, 10),
                   description="collocation points per finite element"))
OCP_CONFIG.declare("scheme", ConfigValue(default="LAGRANGE-RADAU",
                   domain=OneOf(["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"]),
                   description="pyomo.dae orthogonal collocation scheme"))
OCP_CONFIG.declare("periodic", ConfigValue(default=False, domain=bool,
                   description="closed lap: all states at the end equal those at the start"))
OCP_CONFIG.declare("initial_speed", ConfigValue(default="quasi-steady",
                   domain=EntrySpeed(),
                   description="open sector: speed q1_dot at the start [m/s], 'quasi-steady' "
                               "(the flying-lap estimate there) or 'free'; the other rates start "
                               "at zero and the suspension settled (zero heave, pitch and roll "
                               "accelerations)"))
OCP_CONFIG.declare("piecewise_constant_controls", ConfigValue(default=False, domain=bool,
                   description="controls constant within each finite element (True, the paper's "
                               "u_i) or a value at every collocation point (False, default: the lap "
                               "time converges with the mesh much faster: docs/benchmarks.md, 'Accuracy: mesh study')"))
OCP_CONFIG.declare("control_form", ConfigValue(default="state", domain=In(["point", "state"]),
                   description="'point': a value of each control at every collocation point (as "
                               "algebraic variables); 'state': the controls are differential "
                               "states in q1 (continuous, a polynomial in each element) and their "
                               "rates d/dq1 the decision variables, penalized by w_steer_rate and "
                               "w_force_rate"))
OCP_CONFIG.declare("w_steer_rate", ConfigValue(default=W_DEFAULTS["w_steer_rate"], domain=NonNegativeFloat,
                   description="control_form 'state': dimensionless weight of the steering-rate "
                               "penalty (T/L) integral of (h d delta/dq1 / d_ref)^2 dq1, T the "
                               "sector's quasi-steady time, L its length, h the element length, "
                               "d_ref the steering the sector asks of the car (wheelbase times the "
                               "track's RMS curvature: pyomo_lap.ocp.common.steer_scale) [-]"))
OCP_CONFIG.declare("w_force_rate", ConfigValue(default=W_DEFAULTS["w_force_rate"], domain=NonNegativeFloat,
                   description="control_form 'state': dimensionless weight of the force-rate "
                               "penalty (T/L) integral of (h d f_xa/dq1 / F)^2 + (h d f_xb/dq1 / F)^2 "
                               "dq1, F the car's largest tyre force "
                               "(pyomo_lap.ocp.common.force_scale) [-]"))
OCP_CONFIG.declare("w_steer_jump", ConfigValue(default=W_DEFAULTS["w_steer_jump"], domain=NonNegativeFloat,
                   description="dimensionless weight of the steering-jump penalty of eq (41): T "
                               "times the mean of ((delta_{i+1} - delta_i) / d_ref)^2 [-]"))
OCP_CONFIG.declare("w_force_jump", ConfigValue(default=0.0, domain=NonNegativeFloat,
                   description="dimensionless weight of the force-jump penalty of eq (41) of the "
                               "journal paper: T times the mean of ((f_{i+1} - f_i) / F)^2 over "
                               "f_xa and f_xb (0: not added) [-]"))
OCP_CONFIG.declare("w_complementarity", ConfigValue(default=W_DEFAULTS["w_complementarity"], domain=NonNegativeFloat,
                   description="dimensionless weight of the complementarity penalty of eq (41): T "
                               "times the mean of -f_xa f_xb / F^2 [-]"))
OCP_CONFIG.declare("v_min", ConfigValue(default=5.0, domain=NonNegativeFloat,
                   description="lower bound on v_3x and q1_dot [m/s] (slip angles (33) divide by v_3x)"))
OCP_CONFIG.declare("lift", ConfigValue(default=(), domain=tuple,
                   description="tags of ABA/car intermediates made variables with defining equality "
                               "constraints (e.g. ('qdd', 'W3J')) instead of named expressions"))
OCP_CONFIG.declare("element_boundaries", ConfigValue(default=None, domain=lambda x: None if x is None else tuple(float(v) for v in x),
                   description="finite-element boundaries in the sector [m], from 0 to the sector length "
                               "(a non-uniform mesh, e.g. from pyomo_lap.api.refine.refine_mesh); nfe is then "
                               "their number minus one"))
OCP_CONFIG.declare("adherence", ConfigValue(default="below-peak", domain=In(["below-peak", "squared"]),
                   description="form of the tyres' adherence constraints (friction ellipse): "
                               "'below-peak' |mu_y/mu_x f_x| <= D cos(theta), two rows a tyre, each "
                               "tyre at or below the peak of its Magic Formula; 'squared' the paper's "
                               "(mu_y/mu_x f_x)^2 + f_y^2 <= D^2 (degenerate at the peak; see "
                               "pyomo_lap.ocp.full_model.adherence_rows)"))
OCP_CONFIG.declare("stiffness_reserve", ConfigValue(default=None, domain=FloatBetween(0.0, 0.5, "a share between 0 and 0.5, or None", optional=True),
                   description="share of its cornering stiffness every tyre keeps at the optimum "
                               "[-]: the Magic Formula's cos(theta) >= it (the lateral force at most "
                               "sqrt(1 - r^2) of its peak: 0.5 % below at 0.1), Fiala's "
                               "(1 - upsilon)^2 >= it. At 0 the plan may hold a tyre at the very peak "
                               "of its lateral characteristic, where the steering has no authority "
                               "and the car no stability: no driver follows such a plan (issue 33). "
                               "None: 0.1 (AUTO_STIFFNESS_RESERVE) for the tyres that can sit at their "
                               "peak under any longitudinal force (combined_slip = 'ellipse', a Fiala "
                               "tyre, the 'squared' adherence form), 0 for the default 'below-peak' "
                               "form, whose friction ellipse keeps a tyre below its peak whenever it "
                               "carries a longitudinal force. Not applied with slip_angle_max (the "
                               "car file allows past the peak) nor by the multibody model "
                               "(pyomo_lap.ocp.full_model.slip_rows)"))
OCP_CONFIG.declare("named_subexpressions", ConfigValue(default=True, domain=bool,
                   description="write shared subexpressions of the car equations as named "
                               "Expressions m.car.cse[s, k] (the NL writer makes them defined "
                               "variables, which the AMPL solver library evaluates once; Pyomo's "
                               "own walkers need them to stay fast); the same model for every "
                               "solver. False shares the expression objects without naming them: "
                               "about 20 % faster to build, fine for lap_ipopt, but Pyomo's NL "
                               "writer and value() then expand the shared parts"))
OCP_CONFIG.declare("limits", ConfigValue(default=None, domain=EnergyLimits(),
                   description="energy limits over the sector, {name: energy}: each a row "
                               "integral <= limit on m.energy (pyomo_lap.ocp.integrals; names "
                               "engine_energy, traction_energy, braking_energy, drag_energy, "
                               "tyre_energy_fl ... _rr, tyre_energy for each tyre; values in J, "
                               "kJ, MJ, Wh, kWh, e.g. '24MJ'); none: no row added"))
OCP_CONFIG.declare("track_margin", ConfigValue(default=0.0, domain=NonNegativeFloat,
                   description="extra distance kept from each track edge [m]"))



def build_model(track, vehicle: veh.VehicleParameters, config: Optional[dict] = None,
                progress=None, **kwargs) -> pyo.ConcreteModel:
    """Build and discretize the minimum-time OCP on a sector of a track.

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
    vehicle : VehicleParameters
    config : dict, optional
        Options of :data:`OCP_CONFIG` (keyword arguments override them). The option
        ``model`` names the vehicle model in :data:`VEHICLE_MODELS` (``"full"``,
        ``"single-track"``) or is a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` object.
    progress : callable, optional
        ``progress(label, done, total)``, called after the physics of each point is built
        (see :mod:`pyomo_lap.util.progress`).

    Returns
    -------
    pyomo.environ.ConcreteModel
        Discretized, with variables not yet initialized (see
        :func:`pyomo_lap.ocp.initialize.initialize_model`). ``m.problem.vehicle_model`` is the
        :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`, ``m.problem.options`` holds the options,
        ``m.problem.track_points`` the track at every point of ``m.s``, ``m.problem.build_time_s`` the time
        [s] (of which ``m.problem.dae_time_s`` in pyomo.dae's transformation).

    Raises
    ------
    ValueError
        Sector outside an open track, longer than one lap of a closed track, periodic on a
        sector that is not a whole closed lap, too short a sector for the mesh; a model name
        not in :data:`VEHICLE_MODELS`.
    """
    collect_frozen()        # the models of earlier jobs the caller dropped are freed
    with gc_paused():
        return _build_model(track, vehicle, config, progress, kwargs)


def set_vehicle(m, vehicle: veh.VehicleParameters) -> pyo.ConcreteModel:
    """Put another car into a built model, in place: the model becomes the one
    :func:`build_model` builds for ``vehicle`` with the same track, sector, mesh and options
    (the same rows in the same order, with the new car's numbers; bounds, entry speed and
    scaling factors of the new car), in a fraction of the build's time. For setup studies:
    a user's loop over cars, and each worker of :func:`pyomo_lap.sweep`.

    The variables keep their values: initialize the model
    (:func:`pyomo_lap.ocp.initialize.initialize_model`) or load a solution before solving.
    Constraints and objectives the user added stay as they are (those that use the car's
    numbers must be updated by the user).

    Parameters
    ----------
    m : ConcreteModel
        Built by :func:`build_model` (``m.problem.build_time_s`` becomes the time this took [s]).
    vehicle : VehicleParameters

    Returns
    -------
    ConcreteModel
        ``m``.

    Raises
    ------
    ValueError
        The model's vehicle model cannot change its car (``set_vehicle`` of its
        :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` is None: a model whose rows hold
        the car's numbers, such as the point-mass example; or built with ``lift``), the new
        car has a parameter the model's has not (an optional section), or the track is too
        narrow for it. The model is unchanged in each case.
    """
    vm = m.problem.vehicle_model
    if vm.set_vehicle is None:
        raise VehicleStructureError(f"model {vm.name!r} cannot change its car in place; build "
                                    "a new model for the other car")
    vm.set_vehicle(m, vehicle)
    return m


class CarRefresh:
    """``m.vehicle.refresh()``: bring a built model in line with its car's parameters as
    ``m.vehicle`` holds them now (values changed by hand, ``m.vehicle.mass.total.fix(250)``):
    the bounds of the controls, loads and track limits, the fixed entry speed, the scaling
    factors and the penalty weights become those of a new build with that car
    (:func:`set_vehicle`); the rows refer to ``m.vehicle`` already. A free parameter (unfixed)
    counts with its current value.

    :func:`build_model` puts one on the car block of every model whose vehicle model can change
    its car (:attr:`~pyomo_lap.ocp.vehicle_model.VehicleModel.set_vehicle`). The solvers call
    it on every block of the model they solve that has one, found through Pyomo's component
    tree (:func:`pyomo_lap.solvers.solve.solve_model`, the solver ``lap_ipopt``: also a pyomo_lap
    model that is a block of a user's model); with another solver interface call it yourself.

    Parameters
    ----------
    block : pyomo.environ.Block
        The car block ``m.vehicle`` (the model is its parent block).
    """

    def __init__(self, block):
        self.block = block

    def __call__(self) -> bool:
        """Refresh the model; whether anything changed.

        Raises
        ------
        ValueError
            Values the vehicle schema refuses (naming the parameter), a track too narrow for
            the car; the model is left unchanged.
        """
        m = self.block.parent_block()
        p = vehicle_of_model(m)
        if p == self.block.built_for:
            return False
        m.problem.vehicle_model.set_vehicle(m, p)
        return True


def record_rows(vehicle, config: Optional[dict] = None):
    """The rows of one point that :func:`build_model` records for ``vehicle`` and ``config``
    (OCP options, ``model`` among them), without building a model: a
    :class:`~pyomo_lap.ocp.point_rows.PointRows`, or None for a vehicle model whose rows are
    not recorded (``VehicleModel.point_rows`` is None). What
    :func:`pyomo_lap.solvers.lap.precompile.compile_ahead` compiles."""
    cfg = OCP_CONFIG(config or {})
    rows = vehicle_model(cfg.model).point_rows
    return None if rows is None else rows(vehicle, cfg)


def point_rows_recorder(vehicle, config: Optional[dict] = None):
    """``record() -> PointRows``: :func:`record_rows` of ``vehicle`` and ``config`` to be called
    later (the options checked now), or None when the model's rows are not recorded; what
    :func:`pyomo_lap.solvers.lap.compiled.prefetch_point_functions` runs in its thread."""
    cfg = OCP_CONFIG(config or {})
    rows = vehicle_model(cfg.model).point_rows
    return None if rows is None else functools.partial(rows, vehicle, cfg)


def check_free_parameters(rec, free: dict, keep_sum=(), model_name: str = DEFAULT_MODEL) -> None:
    """Check a setup optimization before anything is built: every free parameter is used by
    the car's rows (``rec``, the recording of the model's rows), its bounds lie in the
    schema's range, every ``keep_sum`` group is made of free parameters.

    Parameters
    ----------
    rec : PointRows or None
        ``VehicleModel.point_rows(car, cfg)``; None for a model whose rows hold the car's
        numbers.
    free : dict
        ``{dotted name: (lower, upper)}``.
    keep_sum : sequence of tuples of dotted names
    model_name : str
        For the message.

    Raises
    ------
    ValueError
        One line naming the parameter, the value and what was expected.
    """
    if rec is None or not rec.vehicle_inputs:
        raise ValueError(f"model {model_name!r}: its equations hold the car's numbers; setup "
                         "optimization needs a model whose rows take the car's parameters as "
                         "symbols: 'full', 'single-track' or 'multibody'")
    live = {n.args[0]: rec.tape.live[n.index] for n in rec.tape.nodes if n.op == "input"}
    for key, (lo, up) in free.items():
        field = field_of(key)          # ValueError: an unknown name
        dotted = "gravity" if field == "gravity" else KEY_OF_FIELD[field]
        if not (live.get(dotted, False) or live.get(key, False)):
            raise ValueError(f"free {key}: the car's equations do not use it (a width, a limit "
                             "or a minimum load enters as a bound of the variables); expected "
                             "a parameter of the rows, e.g. aero.Cz1, powertrain.brake_ratio, "
                             "mass.total")
        slo, sup = _schema_bounds(field)
        if (slo is not None and lo < slo) or (sup is not None and up > sup):
            raise ValueError(f"free {key}={lo:g}:{up:g}: outside the vehicle schema's range "
                             f"[{slo}, {sup}]")
    for group in keep_sum or ():
        missing = [k for k in group if k not in free]
        if missing:
            raise ValueError(f"keep_sum {','.join(group)}: {', '.join(missing)} not free; give "
                             "each with free (--free NAME=LOWER:UPPER)")


def free_parameters(m, free: dict, keep_sum=()) -> dict:
    """Make some of the car's parameters decision variables of the model (setup optimization):
    ``m.vehicle.<section>.<key>`` unfixed within the given bounds, shared by every point; each
    group of ``keep_sum`` gets the constraint ``m.vehicle.keep_sum[k]``: its sum stays at its
    present value (a fixed total downforce with a free balance). Other couplings are ordinary
    Pyomo constraints on ``m.vehicle.*`` (docs/scripting.md, "Setup optimization").

    Parameters
    ----------
    m : ConcreteModel
        A full model (``m.vehicle``; its rows take the car's parameters as symbols).
    free : dict
        ``{dotted name: (lower, upper)}``.
    keep_sum : sequence of tuples of dotted names
        Each a group of free parameters.

    Returns
    -------
    dict
        ``{dotted name: (start value, lower, upper)}``.

    Raises
    ------
    ValueError
        As :func:`check_free_parameters` (which :func:`pyomo_lap.solve_sector` calls before it
        builds), or a parameter the model's car has no value for. The model is left unchanged.
    """
    rec = getattr(m.problem, "point_rows", None)
    check_free_parameters(rec if m.component("vehicle") is not None else None, free, keep_sum,
                          m.problem.vehicle_model.name)
    plan = {key: (vehicle_var(m, key), lo, up) for key, (lo, up) in free.items()}
    out = {}
    for key, (var, lo, up) in plan.items():
        out[key] = (float(var.value), lo, up)
        var.unfix()
        var.setlb(lo)
        var.setub(up)
        var.set_value(min(max(float(var.value), lo), up))
    if keep_sum:
        groups = list(keep_sum)
        m.vehicle.keep_sum = pyo.Constraint(range(len(groups)), rule=lambda b, k: sum(
            vehicle_var(m, n) for n in groups[k]) == sum(out[n][0] for n in groups[k]),
            doc="the sum of each group of free parameters held at its value")
    return out


def _build_model(track, vehicle, config, progress, kwargs):
    t0 = time.perf_counter()
    pyomo_units()
    cfg = OCP_CONFIG(config or {})
    cfg.set_value(kwargs)
    vm = vehicle_model(cfg.model)
    m = vm.build(track, vehicle, cfg, t0=t0, progress=progress)
    update_problem(m, vehicle_model=vm)
    add_energy_integrals(m, cfg.limits)       # m.energy; rows only for the limits given
    if vm.set_vehicle is not None and m.component("vehicle") is not None:
        m.vehicle.refresh = CarRefresh(m.vehicle)
    add_hybrid(m)       # m.hybrid for a car with [hybrid] (docs/energy.md); else nothing
    return m
