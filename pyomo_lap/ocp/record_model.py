r"""What a vehicle-model family whose rows are recorded gets from its record, with no code of
its own: the two hooks of :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` the checks of a
result read (:mod:`pyomo_lap.verify`).

* ``trajectory`` = :func:`record_table`: the channel table of a solved model in one call,
  every column at every point of ``m.s`` from the one record of the model's equations
  (:func:`pyomo_lap.ocp.point_functions.record_channels`, the car's parameters at the values
  of ``m.vehicle``): the variables, the joint accelerations, the record's channel group, the
  speed, the positions, the track, the energies' powers, a hybrid's columns, the controls'
  time rates and the quasi-steady point-mass reference;
* ``dynamics`` = :func:`record_dynamics`: a :class:`RecordDynamics`, the car's equations as
  the checks use them (:class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics`), from the
  record's float functions :class:`~pyomo_lap.ocp.point_functions.CarFunctions`: with
  :math:`x = (q_2..q_n, \dot q_1..\dot q_n, t)`, the spatial DAE (39)

  .. math::
      \frac{dx}{ds} = \frac{(\dot q_2..\dot q_n,\ \ddot q_1..\ddot q_n,\ 1)}{\dot q_1},

  the algebraic loop solved at every point, and in time :math:`\dot y = (\dot q, \ddot q)`
  for :math:`y = (q_1..q_n, \dot q_1..\dot q_n)`.

The full, single-track and multibody models use both (``ocp/full_model.py``,
``ocp/single_track.py``, ``ocp/multibody.py``); the chain gives every one of them the same
roles: the lateral offset ``q2``, the relative yaw ``q3``, the speed ``q1_dot``, the steer
angle ``delta`` (:class:`~pyomo_lap.ocp.vehicle_model.PathRoles`).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from ..util.gc_pause import gc_paused
from ..vehicle.car import car_scales
from ..vehicle.speed_profile import quasi_steady_speed
from .common import vehicle_of_model
from .hybrid import hybrid_channels
from .point_functions import CarFunctions, record_channels
from .sector import track_coordinate
from .vehicle_model import PathRoles

__all__ = ["record_table", "record_dataframe", "record_dynamics", "RecordDynamics", "SPINE_RELATIVE",
           "record_columns", "SPIN_YAW", "as_dynamics"]

SPINE_RELATIVE = {"dx_vip": "x_vip", "dy_vip": "y_vip", "dz_vip": "z_vip"}
"""Channels of a record given relative to the track's spine point (the record's track inputs
hold no position), and the column of :func:`record_table` each becomes (the spine's position
added)."""

SPIN_YAW = 0.8
"""A car on the chain whose yaw relative to the track frame ``|q3|`` passes this [rad] has
spun (the replay's stop, :attr:`RecordDynamics.bounds`)."""


def record_columns(rec) -> tuple:
    """The columns of :func:`record_table` that a record's channel group gives
    (:attr:`pyomo_lap.ocp.point_rows.PointRows.channels`): one per channel, named as the
    channel (:data:`SPINE_RELATIVE` renamed). Each needs an entry in the channel dictionary
    (:data:`pyomo_lap.results.channels.CHANNELS`)."""
    return tuple(SPINE_RELATIVE.get(k, k) for k in rec.channel_names)


def record_table(m) -> pd.DataFrame:
    """The channel table of a solved model whose rows are recorded, all points at once (the
    ``trajectory`` of the full, single-track and multibody models; module docstring).

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        Built by :func:`pyomo_lap.ocp.build.build_model`, with values (a solution).

    Returns
    -------
    pandas.DataFrame
        One row per point of ``m.s``: ``s`` (the track coordinate, increasing along the
        sector: :func:`pyomo_lap.ocp.sector.track_coordinate`), ``s_sector``, ``q1``, the
        model's variables, ``<joint>_ddot``, the record's channels (:func:`record_columns`),
        ``speed`` [m/s], ``speed_kmh``, the spine ``x_spine .. z_spine`` [m], the widths
        ``width_left``, ``width_right`` [m], ``Omega_x .. Omega_z`` [1/m],
        ``load_residual_max`` [N], ``element`` (:func:`record_dataframe`), a hybrid's
        columns (:func:`pyomo_lap.ocp.hybrid.hybrid_channels`), the controls' time rates
        ``<control>_rate`` (``control_form = "state"``), ``v_point_mass`` [m/s] and
        ``t_point_mass`` [s] (:func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`). The
        columns computed from these (``a_t``, the logger channels, the energies' powers) are
        the results layer's (:func:`pyomo_lap.results.point_table.add_derived_channels`).

    Raises
    ------
    ValueError
        A variable without a value (Pyomo's message).
    """
    # the collector's full passes walk every object of the model (~1.3 s per pass for 600
    # points), and recording the tape allocates enough to trigger one
    with gc_paused():
        cols = dict(record_dataframe(record_channels(m), m.problem.track_points, sorted(m.s),
                                     list(m.s.get_finite_elements())))
        p = vehicle_of_model(m)
        tp = m.problem.track_points
        sig = np.asarray(sorted(m.s), dtype=float)
        v_pm = quasi_steady_speed(p, sig, tp.omega, tp.rotation, closed=bool(m.problem.options.periodic),
                                  v_start=m.problem.initial_speed, v_min=m.problem.options.v_min)
    for name, values in hybrid_channels(m).items():  # a car with [hybrid] (docs/energy.md)
        cols[name] = values if len(values) == len(sig) else np.nan
    cols.update(_control_rates(m, cols))
    track = m.problem.track
    if getattr(track, "closed", False):
        cols["s"] = cols["q1"] = track_coordinate(float(m.problem.options.start), sig,
                                                  float(track.length))
    cols["v_point_mass"] = v_pm
    cols["t_point_mass"] = np.concatenate([[0.0], np.cumsum(0.5 * (1 / v_pm[1:] + 1 / v_pm[:-1])
                                                            * np.diff(sig))])
    return pd.DataFrame(cols)


def record_dataframe(numbers: dict, tp, s_sector, breaks) -> pd.DataFrame:
    r"""The record's columns of :func:`trajectory_dataframe` at any points: the numbers of
    :func:`pyomo_lap.ocp.point_functions.record_numbers` there (the variables, the joint
    accelerations, the channel group, ``load_residual_max``), with ``speed``, ``speed_kmh``,
    the global positions (:data:`SPINE_RELATIVE` plus the spine), the track's widths and
    :math:`\Omega` (``tp``, a :class:`~pyomo_lap.track.points.TrackPoints` of the points),
    ``s``, ``q1`` (``tp.s``), ``s_sector`` and ``element`` (from ``breaks``) [SI]. The mesh
    rows and the rows on a fixed step (:mod:`pyomo_lap.results.fixed_step`) are made by it."""
    ch = dict(numbers["channels"])
    s_track = np.asarray(tp.s, dtype=float)
    sigma = np.asarray(s_sector, dtype=float)
    cols = {"s": s_track.copy(), "s_sector": sigma, "q1": s_track.copy()}
    cols.update(numbers["values"])
    cols.update(numbers["qdd"])
    position = np.asarray(tp.position, dtype=float)
    relative = {name: ch.pop(key) for key, name in SPINE_RELATIVE.items() if key in ch}
    acc = {k: ch.pop(k) for k in ("a_x", "a_y", "a_z") if k in ch}
    cols.update(ch)
    if "v_3x" in ch and "v_3y" in ch:
        cols["speed"] = np.hypot(ch["v_3x"], ch["v_3y"])
        cols["speed_kmh"] = 3.6 * cols["speed"]
    cols.update(acc)
    cols.update({name: position[:, "xyz".index(name[0])] + x for name, x in relative.items()})
    cols["x_spine"], cols["y_spine"], cols["z_spine"] = (position[:, k] for k in range(3))
    cols["width_left"] = np.asarray(tp.width_left, dtype=float)
    cols["width_right"] = np.asarray(tp.width_right, dtype=float)
    omega = np.asarray(tp.omega, dtype=float)
    cols["Omega_x"], cols["Omega_y"], cols["Omega_z"] = (omega[:, k] for k in range(3))
    if numbers["load_residual_max"] is not None:
        cols["load_residual_max"] = numbers["load_residual_max"]
    cols["element"] = np.searchsorted(np.asarray(breaks, dtype=float), sigma,
                                      side="left").astype(np.int64)
    return pd.DataFrame(cols)


def _control_rates(m, cols: dict) -> dict:
    r"""The time rates ``<control>_rate`` :math:`= \dot q_1\, du/dq_1` [rad/s, N/s] of the
    controls that are states (``control_form = "state"``); at ``s = 0``, not collocated, the
    rate of the first collocation point."""
    out = {}
    if "q1_dot" not in cols:
        return out
    sigma = sorted(m.s)
    for c in ("delta", "f_xa", "f_xb"):
        dv = m.component(f"d{c}_ds")
        if dv is None:
            continue
        rate = np.array([dv[x].value if dv[x].value is not None else np.nan for x in sigma], dtype=float)
        if len(rate) > 1:
            rate[0] = rate[1]
        out[f"{c}_rate"] = rate * np.asarray(cols["q1_dot"], dtype=float)
    return out


def as_dynamics(car):
    """A model's equations as the checks use them: ``car`` itself if it is a
    :class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics`, the :class:`RecordDynamics` of
    :class:`~pyomo_lap.ocp.point_functions.CarFunctions` (a car on the chain) otherwise."""
    return car if hasattr(car, "spatial_rhs") else RecordDynamics.of_car(car)


def record_dynamics(vehicle, model, cfg) -> "RecordDynamics":
    """The ``dynamics`` hook of the families whose rows are recorded: :class:`RecordDynamics`
    of ``vehicle`` from the record ``model.point_rows(vehicle, cfg)`` (recorded when first
    evaluated)."""
    return RecordDynamics(vehicle, model, cfg)


class RecordDynamics:
    """A car on the kinematic chain as the checks use it
    (:class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics`, module docstring), from its record.

    Parameters
    ----------
    vehicle : VehicleParameters
    model : VehicleModel
        A family whose rows are recorded (``point_rows``), with an ``ode_qdot`` family.
    cfg : ConfigDict, optional
        The OCP options to record the rows with (not needed with ``car``).
    car : CarFunctions, optional
        The record's float functions, if made already (else made from the record at the first
        evaluation, about 0.2 s).
    """

    path = PathRoles()
    channel_columns: dict = {}
    steering = ("the steer limit delta_max", "% delta_max")
    limit_names = ()

    def __init__(self, vehicle, model, cfg=None, car: Optional[CarFunctions] = None):
        self.vehicle, self.model, self._cfg, self._car = vehicle, model, cfg, car
        self.states = tuple(model.defect_states)
        self.names = ("q1",) + tuple(model.states) + tuple(model.rates)
        self.controls, self.algebraic = tuple(model.controls), tuple(model.algebraics)
        self.n_q = len(model.rates)
        self.bounds = {"q3": (-SPIN_YAW, SPIN_YAW)}
        self.control_bounds = {"delta": (-vehicle.delta_max, vehicle.delta_max)}
        extra = self.n_q - 3          # heave, pitch, roll, wheel carriers ...
        self.magnitudes = np.array([1.0, 1.0, 1.0] + [0.01] * extra + [10.0, 1.0, 1.0] + [0.1] * extra)

    @classmethod
    def of_car(cls, car: CarFunctions) -> "RecordDynamics":
        """The dynamics of given car functions (their car and model)."""
        return cls(car.p, car.vehicle_model, car=car)

    @property
    def car(self) -> CarFunctions:
        """The record's float functions (:class:`~pyomo_lap.ocp.point_functions.CarFunctions`)."""
        if self._car is None:
            self._car = CarFunctions(self.model.point_rows(self.vehicle, self._cfg),
                                     self.vehicle, self.model)
        return self._car

    def time_rates(self, trk, y, u, z0=None) -> tuple:
        r"""``(dy/dt, z)`` at one point, ``y = (q, q_dot)``: :math:`(\dot q, \ddot q)` with
        the algebraic loop solved from ``z0`` (:meth:`CarFunctions.solve`, which raises
        :class:`~pyomo_lap.ocp.point_functions.AlgebraicLoopError`)."""
        n = self.n_q
        z, qdd = self.car.solve(trk, y[:n], y[n:], u, z0)
        return np.concatenate([y[n:], qdd]), z

    def spatial_rhs(self, trk, x, u, z0=None) -> tuple:
        r"""``(dx/ds (k, 2n), z (k, n_z), ok (k,))`` at ``k`` points at once: the algebraic loop
        solved at every point (:meth:`CarFunctions.solve_many`, from ``z0`` or the static
        loads), :math:`(\dot q_2.., \ddot q, 1)/\dot q_1`."""
        k, n = len(x), self.n_q
        q = np.hstack([np.zeros((k, 1)), x[:, 0:n - 1]])
        qd = x[:, n - 1:2 * n - 1]
        if z0 is None:
            z0 = np.tile(self.car.static_guess, (k, 1))
        z, qdd, ok = self.car.solve_many(trk, q, qd, u, z0)
        f = np.hstack([qd[:, 1:], qdd, np.ones((k, 1))])
        return f / qd[:, :1], z, ok

    def limits(self, trk, x, u, z) -> dict:
        """None of its own: a car on the chain has its power row and energy balance judged
        from its table's channels (:func:`pyomo_lap.verify.energy_balance.energy_balance`)."""
        return {}

    def path_speed(self, trk, y) -> float:
        """``q1_dot`` [m/s]."""
        return float(y[self.n_q])

    def scales(self, curvature: float) -> dict:
        """:func:`pyomo_lap.vehicle.car.car_scales`."""
        return car_scales(self.vehicle, curvature)

    def steering_scale(self, curvature: float) -> float:
        """The steer limit ``delta_max`` [rad]."""
        return float(self.vehicle.delta_max)
