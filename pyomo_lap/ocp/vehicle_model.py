"""The vehicle-model interface of the optimal control problem.

:func:`pyomo_lap.ocp.build.build_model` builds the minimum-time OCP of a *vehicle model*: a
:class:`VehicleModel` object, found by its name in the registry
:data:`pyomo_lap.ocp.build.VEHICLE_MODELS` (the OCP option ``model``, the CLI's ``--model``) or
given directly (``build_model(track, vehicle, model=<VehicleModel>)``).
:func:`pyomo_lap.ocp.initialize.initialize_model` writes the model's initial guess by the object
stored on the built model (``m.problem.vehicle_model``). The car lives in one Pyomo
component, the car block ``m.vehicle`` (:func:`car_block`): its parameters as variables (the
full, single-track and multibody cars), the car its car-dependent numbers were made for
(``m.vehicle.built_for``), the recorded rows of its equations (``m.vehicle.point_rows``, what
the solver ``lap_ipopt`` compiles, found through Pyomo's component tree, also when the model
is a block of a user's model) and ``m.vehicle.refresh()`` (set by
:func:`pyomo_lap.ocp.build.build_model`). Everything else a built model carries besides its
Pyomo components is in one typed place, ``m.problem`` (a :class:`ProblemData`).

Four registered models implement it (:data:`pyomo_lap.ocp.build.VEHICLE_MODELS`): the full
six-joint car (:data:`pyomo_lap.ocp.full_model.FULL_MODEL`), the single-track car
(:data:`pyomo_lap.ocp.single_track.SINGLE_TRACK_MODEL`), the multibody car
(:mod:`pyomo_lap.ocp.multibody`) and dymos's racecar (:mod:`pyomo_lap.ocp.racecar`); the
point mass (:mod:`pyomo_lap.ocp.point_mass`) is a worked example, not registered. Another model
is one new module that defines a :class:`VehicleModel` and one line in
:data:`pyomo_lap.ocp.build.VEHICLE_MODELS` (``docs/vehicle_models.md``, and the walk-through
"Add a vehicle-model family" in ``docs/architecture.md``).

This module imports nothing of the package (Pyomo only).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import pyomo.environ as pyo

__all__ = ["VehicleModel", "ProblemData", "update_problem", "car_block"]


@dataclasses.dataclass(frozen=True)
class VehicleModel:
    """One vehicle model of the OCP.

    The variables of a built model are indexed by ``m.s`` (the distance from the sector
    start, ``q1``) and named as listed here; the time ``m.t[s]`` and the derivative
    variables ``m.d<name>_ds`` of the states, rates and the time belong to every model.

    Attributes
    ----------
    name : str
        Registry key (the OCP option ``model``), e.g. ``"full"``.
    description : str
        One line for help texts.
    states : tuple of str
        Joint coordinates besides ``q1 = s`` (``("q2", "q3")`` ...); each has a rate.
    rates : tuple of str
        Joint rates, ``q1_dot`` first; ``m.d<rate>_ds`` are their derivatives.
    controls : tuple of str
        Control variables (``("f_xa", "f_xb", "delta")`` for the built-in cars: the
        objective (41), :func:`pyomo_lap.ocp.common.add_objective`, uses these three).
    algebraics : tuple of str
        Algebraic unknowns solved with the dynamics at every point (loads, tyre forces ...).
    build : callable
        ``build(track, vehicle, cfg, t0=None, progress=None) -> pyomo.environ.ConcreteModel``:
        the discretized OCP on the sector ``cfg.start, cfg.length`` with the options ``cfg``
        (a copy of :data:`pyomo_lap.ocp.build.OCP_CONFIG` with the user's values): the
        ``ContinuousSet`` ``m.s``, the variables with their bounds, the per-point equations
        (the spatial DAE, the algebraic equations, the path constraints), the boundary
        conditions, the objective (:func:`pyomo_lap.ocp.common.add_objective`) and the
        scaling factors (``m.scaling_factor``). The model also carries ``m.problem``, a
        :class:`ProblemData` (``t0``: the build's start, ``time.perf_counter()``, for its
        ``build_time_s``); ``progress(label, done, total)`` may be called while the points
        are built. The shared steps are in :mod:`pyomo_lap.ocp.sector` and
        :mod:`pyomo_lap.ocp.common`.
    initialize : callable
        ``initialize(m, **kwargs) -> dict``: write the initial guess (a cold start: no earlier
        solution needed) into a model built by ``build``; returns at least
        ``{"status": "ok", "estimated_time_s": float}``. Reached through
        :func:`pyomo_lap.ocp.initialize.initialize_model`.
    trajectory : callable, optional
        ``trajectory(m) -> pandas.DataFrame``: one row per point of a solved model (used by
        :func:`pyomo_lap.results.table.trajectory_dataframe`); None: the full model's table.
    point_rows : callable, optional
        ``point_rows(vehicle, cfg) -> pyomo_lap.ocp.full_model.PointRows``: the rows of one
        point recorded on a tape, as ``build`` records them, without building a model (models
        whose rows are recorded: the fast path compiles them, and
        :func:`pyomo_lap.solvers.lap.compiled.prefetch_point_functions` can compile them ahead of
        the build, e.g. once for all the cars of a sweep). None: rows written as Pyomo
        expressions only.
    set_vehicle : callable, optional
        ``set_vehicle(m, vehicle)``: make a model built by ``build`` the one ``build`` makes
        for another car on the same track, sector, mesh and options, in place (raises
        ``ValueError`` when it cannot; reached through
        :func:`pyomo_lap.ocp.build.set_vehicle`). None: a new car needs a new build.
    patch_limits : bool
        The model keeps each tyre's contact patch within the track by rows of its own
        (the full model's ``track_limit``): ``q2`` is then only bounded by the track's edges;
        False: ``q2`` keeps half the car's ``width`` from each edge.
    """

    name: str
    description: str
    states: tuple
    rates: tuple
    controls: tuple
    algebraics: tuple
    build: Callable
    initialize: Callable
    trajectory: Optional[Callable] = None
    point_rows: Optional[Callable] = None
    set_vehicle: Optional[Callable] = None
    patch_limits: bool = False

    @property
    def variables(self) -> tuple:
        """All variables indexed by ``m.s``: states, rates, time, controls, algebraics."""
        return self.states + self.rates + ("t",) + self.controls + self.algebraics


@dataclasses.dataclass(frozen=True)
class ProblemData:
    """What a built model was built from and for: ``m.problem``, its one non-Pyomo attribute.

    Frozen: the builders set it in stages with :func:`update_problem` (each stage a new
    object); after :func:`pyomo_lap.ocp.build.build_model` returns it does not change.

    Attributes
    ----------
    vehicle_model : VehicleModel
        The model's equations, initial guess and channels.
    options : pyomo.common.config.ConfigDict
        The OCP options (a copy of :data:`pyomo_lap.ocp.build.OCP_CONFIG` with the user's
        values): sector start, length, mesh, scheme, boundary conditions ...
    track : pyomo_lap.track.geometry.Track
        The whole track the sector lies on.
    sector_length : float
        Length of the sector [m] (``q1`` runs from 0 to it; ``m.s`` in the sector's frame).
    track_points : pyomo_lap.track.points.TrackPoints or None
        The track evaluated at every point of ``m.s`` (shape ``(len(m.s), ...)`` arrays).
    initial_speed : float or None
        The entry speed fixed at ``s = 0`` [m/s]; None when free or on a periodic lap.
    chain : pyomo_lap.spatial.tree.KinematicTree or None
        The car's kinematic tree (:func:`pyomo_lap.vehicle.car.build_chain`, the single-track
        or the multibody car's).
    point_rows : object or None
        The per-point rows recorded on a tape, of every model that records them (full,
        single-track, multibody: the car's parameters as symbols; the racecar: its numbers),
        the same object as ``m.vehicle.point_rows`` (where the solver path ``lap_ipopt`` finds
        it).
    mesh : str
        How the finite elements were placed: ``"uniform"`` (``nfe`` or ``element_length``),
        ``"adaptive"`` (:func:`pyomo_lap.ocp.mesh.adaptive_boundaries`) or ``"given"`` (the
        option ``element_boundaries``).
    dae_time_s : float
        Wall time of pyomo.dae's transformation [s].
    build_time_s : float
        Wall time of the whole build [s] (includes ``dae_time_s``).
    time_scale : float
        The sector time of the car's quasi-steady speed profile on the centreline [s]
        (:func:`pyomo_lap.ocp.common.reference_time`): the scale of the objective's
        penalties (:func:`pyomo_lap.ocp.common.add_objective`).
    """

    vehicle_model: Optional[VehicleModel]
    options: object
    track: object
    sector_length: float
    track_points: object = None
    initial_speed: Optional[float] = None
    chain: object = None
    point_rows: object = None
    mesh: str = "uniform"
    dae_time_s: float = 0.0
    build_time_s: float = 0.0
    time_scale: float = 0.0


def update_problem(m, **fields) -> ProblemData:
    """Set ``m.problem`` to a copy of it with ``fields`` changed (the builders' stages).

    Two fields live on the car block (:func:`car_block`) rather than in :class:`ProblemData`:
    ``vehicle`` (the car the model's numbers are made for: ``m.vehicle.built_for``) and
    ``point_rows`` (kept in both: ``m.vehicle.point_rows`` is what the solver finds).

    Raises
    ------
    TypeError
        A field that :class:`ProblemData` does not have.
    AttributeError
        ``m`` has no ``problem`` yet.
    """
    if "vehicle" in fields:
        car_block(m, fields.pop("vehicle"))
    if "point_rows" in fields:
        car_block(m).point_rows = fields["point_rows"]
    m.problem = dataclasses.replace(m.problem, **fields)
    return m.problem


def car_block(m, vehicle=None):
    """The car's block of a built model, ``m.vehicle`` (a ``pyomo.environ.Block``, added empty
    if the model has none yet); with ``vehicle``, the car the model's car-dependent numbers
    (bounds, entry speed, scaling, penalty weights) are made for is set to it.

    The block's attributes besides its components:

    * ``built_for``: that car (a ``VehicleParameters``, or the racecar's parameters); equal to
      the car the block's variables hold (:func:`pyomo_lap.ocp.common.vehicle_of_model`) after
      every ``refresh``;
    * ``point_rows``: the recorded rows of the car's equations, or None;
    * ``refresh``: ``refresh() -> bool``, set by :func:`pyomo_lap.ocp.build.build_model` for
      the models that can change their car in place: brings the model in line with the values
      of the block's variables (a solver calls it on every block that has it).

    Parameters
    ----------
    m : ConcreteModel or Block
        A built model (or one being built).
    vehicle : object, optional
        The car the model's numbers are made for.

    Returns
    -------
    pyomo.environ.Block
        ``m.vehicle``.
    """
    blk = m.component("vehicle")
    if blk is None:
        blk = pyo.Block(doc="the car: its parameters (fixed Vars, dotted names of the vehicle "
                            "file), the car its numbers are made for, its recorded rows")
        m.add_component("vehicle", blk)
        blk.built_for, blk.point_rows = None, None
    if vehicle is not None:
        blk.built_for = vehicle
    return blk
