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

What the checks of a result need of a model (:mod:`pyomo_lap.verify`: the collocation defects,
the replay, the self-check, ``pyomo-lap validate``) comes through three of its members, so that
every check serves every model with no model's name compared anywhere: ``trajectory`` (the
channel table of a solved model, in one call), ``defect_states`` (the states in ``s`` the
defects are taken on) and ``dynamics`` (a :class:`ModelDynamics`: the right-hand side in ``s``
and in time, the limits to judge, the bounds, the car's scales). The families whose rows are
recorded get the first and the third from their record with no code of their own
(:mod:`pyomo_lap.ocp.record_model`); the racecar from its own equations
(:mod:`pyomo_lap.ocp.racecar`). What else a job does by model is declared the same way, on the
model: whether its solution gives the lap time's sensitivities (``lap_time_sensitivities``),
which models its solution starts (``initial_guess_for``); the mesh refinement of a job serves
every model the checks serve. No module outside the registry compares a model's name
(``tests/test_verify_every_model.py``).

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
from typing import Callable, Optional, Protocol

import pyomo.environ as pyo

__all__ = ["VehicleModel", "ProblemData", "update_problem", "car_block", "ModelDynamics",
           "PathRoles"]


@dataclasses.dataclass(frozen=True)
class PathRoles:
    """Which of a model's states and controls play the parts the path-following driver of the
    replay needs (:class:`pyomo_lap.verify.simulate.PathFollowing`) and the replay's checks
    judge.

    Attributes
    ----------
    lateral : str
        The lateral offset from the track's centre line [m] (``q2``; the racecar's ``n``).
    heading : str
        The heading relative to the centre line [rad] (``q3``; the racecar's ``alpha``).
    speed : str
        The speed state [m/s] (``q1_dot``; the racecar's ``V``): a replay whose speed falls
        below its ``v_min`` has stopped.
    steer : str
        The steering control [rad] the driver corrects (``delta``).
    """

    lateral: str = "q2"
    heading: str = "q3"
    speed: str = "q1_dot"
    steer: str = "delta"


class ModelDynamics(Protocol):
    r"""A vehicle model's equations for one car, as the checks of a result use them: what
    ``VehicleModel.dynamics(vehicle, model, cfg)`` returns.

    The state in ``s`` is :attr:`states` (``VehicleModel.defect_states``: the model's states
    and rates, the time ``t`` last; table columns); the state in time is ``y = (s,
    states[:-1])``, the track coordinate first (the time is the integrator's). ``trk`` is the
    track at a point as the recorded rows take it, the 15 numbers of
    :data:`pyomo_lap.ocp.point_rows.TRACK_INPUTS` (:func:`pyomo_lap.ocp.point_functions.track_vectors`).

    Attributes
    ----------
    model : VehicleModel
    states : tuple of str
        The states in ``s``, the time last.
    names : tuple of str
        The state in time: the track coordinate's name (``q1``, ``s``), then ``states[:-1]``.
    controls, algebraic : tuple of str
        The model's controls and algebraic variables (table columns).
    path : PathRoles
    bounds : dict
        ``{state: (lower, upper)}``: where a replayed car has spun (it leaves them).
    control_bounds : dict
        ``{control: (lower, upper)}``: the driver's commands are clipped to them.
    magnitudes : ndarray (len(names),)
        Typical sizes of the state in time, the integrator's absolute tolerance over its
        relative one.
    channel_columns : dict
        ``{channel of the checks: the model's column}`` for channels the model's table names
        otherwise (:data:`pyomo_lap.verify.quality.SMOOTHNESS_CHECKS`: ``f_11z``, ``a_x`` ...).
    steering : tuple
        ``(name, unit)`` of the steering scale the replay's steering correction is judged
        against (:meth:`steering_scale`).
    limit_names : tuple of str
        The names of :meth:`limits` (empty for a model without limits of its own).
    """

    model: "VehicleModel"
    states: tuple
    names: tuple
    controls: tuple
    algebraic: tuple
    path: PathRoles
    bounds: dict
    control_bounds: dict
    channel_columns: dict
    steering: tuple
    limit_names: tuple

    def time_rates(self, trk, y, u, z0=None) -> tuple:
        """``(dy/dt (len(names),), z (n_z,))`` at one point: the algebraic equations solved
        from ``z0``; ``dy/dt[0]`` is the speed along the centre line ``ds/dt``.

        Raises
        ------
        pyomo_lap.ocp.point_functions.AlgebraicLoopError
            The algebraic equations have no solution near ``z0`` (a wheel lifts).
        """

    def spatial_rhs(self, trk, x, u, z0=None) -> tuple:
        """``(dx/ds (k, len(states)), z (k, n_z), ok (k,))`` at ``k`` points at once (``trk``
        (k, 15), ``x`` (k, len(states)), ``u`` (k, len(controls)), ``z0`` (k, n_z) guesses):
        the right-hand side of the model's ODE in ``s``; ``ok`` False where the algebraic
        equations were not solved."""

    def limits(self, trk, x, u, z) -> dict:
        """``{name: (k,) array}``: the share of each limit a result must respect that the
        points use (1 at the limit: the friction ellipses, the power), from the states in
        ``s``, the controls and the algebraic variables at ``k`` points; ``{}`` for a model
        whose limits the table's channels judge (:mod:`pyomo_lap.verify.energy_balance`)."""

    def path_speed(self, trk, y) -> float:
        """The speed along the centre line ``ds/dt`` [m/s] at one state in time ``y``."""

    def scales(self, curvature: float) -> dict:
        """The car's scales of the channels' thresholds (:data:`pyomo_lap.verify.quality.SMOOTHNESS_CHECKS`):
        ``steer`` (the wheelbase times ``curvature``, the RMS curvature of the sector [1/m]),
        ``speed`` (the top speed) [m/s], ``force`` [N], ``acceleration`` [m/s^2], and ``slip``
        [rad] where the car has a tyre characteristic."""

    def steering_scale(self, curvature: float) -> float:
        """The steering the replay's correction is judged against [rad] (:attr:`steering`)."""


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
        ``trajectory(m) -> pandas.DataFrame``: the channel table of a solved model in one call,
        one row per point of ``m.s`` (``s``, ``s_sector``, ``element``, ``t``, the states,
        controls and algebraic variables, the channels, the track's ``Omega_*`` and widths;
        :func:`pyomo_lap.results.table.trajectory_dataframe` adds the columns derived from
        these). The families whose rows are recorded:
        :func:`pyomo_lap.ocp.record_model.record_table`. None: no table (the worked example
        :mod:`pyomo_lap.ocp.point_mass`).
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
    dynamics : callable, optional
        ``dynamics(vehicle, model, cfg) -> ModelDynamics``: the model's equations for the car
        ``vehicle`` as the checks use them (``model`` is this object, ``cfg`` the OCP options
        the rows are recorded with). The families whose rows are recorded:
        :func:`pyomo_lap.ocp.record_model.record_dynamics`. None: the model's results are
        not checked.
    defect_states : tuple of str
        The states in ``s`` the checks take the defects on and integrate, table columns, the
        time ``t`` last; default ``states + rates + ("t",)``.
    lap_time_sensitivities : bool
        The lap time's sensitivities to the car's parameters can be taken of a solution
        (:func:`pyomo_lap.analysis.sensitivities.lap_time_sensitivities`, the job option
        ``sensitivities``): the model records its rows with the car's parameters as symbols
        in the layout those sensitivities read (the full car's). False: the option is refused
        before anything is built, naming the models that have it.
    initial_guess_for : dict
        ``{name of a registered model: start(m, m_solved) -> dict}``: the models this model's
        solution gives an initial guess to (the job option ``initial_guess`` naming this model:
        the job solves this model on the same mesh first); ``start`` writes it into the built
        model ``m`` of that name from this model's solved ``m_solved`` and returns what it did
        (:func:`pyomo_lap.ocp.single_track.warm_start_full`). Empty: none; the option's values
        are ``"cold"`` and the names of the models that have one
        (:func:`pyomo_lap.ocp.build.models_with`).

    The checks of a result and the job's mesh refinement (:mod:`pyomo_lap.api.refine`) serve
    every model with :attr:`trajectory` and :attr:`dynamics`; a model with :attr:`algebraics`
    has them solved at the refined mesh's points from its recorded rows.
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
    dynamics: Optional[Callable] = None
    defect_states: tuple = ()
    lap_time_sensitivities: bool = False
    initial_guess_for: dict = dataclasses.field(default_factory=dict, hash=False)

    def __post_init__(self):
        """The default :attr:`defect_states`."""
        if not self.defect_states:
            object.__setattr__(self, "defect_states", tuple(self.states) + tuple(self.rates) + ("t",))

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
