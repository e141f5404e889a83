r"""The multibody car as a vehicle model (registry key ``"multibody"``; issue 14, parts 3-4).

The car of :mod:`pyomo_lap.vehicle.multibody_car`: the chassis on the six joints of the
chain and four wheel carriers on suspension joints, the tyre loads from the carriers' states
(the tyre's vertical spring and damper) instead of the reduced model's algebraic load
transfer. The OCP is the reduced model's (:mod:`pyomo_lap.ocp.full_model`) with these
changes:

* states :math:`q_2..q_6, z_{11}, z_{12}, z_{21}, z_{22}` and their rates with
  :math:`\dot q_1`, and the time; controls :math:`f_{xa}, f_{xb}, \delta`; **no algebraic
  variables** (the loads and the tyre forces are explicit functions of the states);
* the spatial DAE (39) for the ten joint rates, with :math:`\ddot q` from the ABA of the
  ten-joint tree (:func:`pyomo_lap.spatial.dynamics.aba`);
* path constraints as the reduced model's (power, friction ellipse of each tyre, speed,
  track limits, steering) and :math:`f_{ijz} \ge f_{z,min}` on the tyre-spring loads;
* an open sector starts settled: the suspension rates are zero (common) and the seven
  suspension accelerations (heave, pitch, roll, four carriers) are zero at the start.

The rows of one point are recorded once on a tape and replayed at every point, as the full
model's (:func:`pyomo_lap.ocp.full_model.record_point_rows`), so the solver ``lap_ipopt``
evaluates them with compiled CasADi functions.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo

from ..spatial.backend import add, sub
from ..spatial.lie import cross
from ..spatial.tree import forward_kinematics
from ..vehicle import car as veh, multibody_car as mbc
from ..vehicle.powertrain import power_available
from ..vehicle.schema import OPTIONAL_SECTIONS
from .common import (
    add_car_controls,
    add_derivative_vars,
    add_joint_variables,
    add_vehicle_block,
    car_control_bounds,
)
from .full_model import (
    _FAMILY_DOCS,
    VEHICLE_INPUTS,
    PointRows,
    add_point_rows,
    adherence_rows,
    brake_rows,
    chain_scaling,
    rows_on_tape,
    set_car,
    unsupported_tyre,
    vehicle_inputs,
)
from .initialize import cold_start_profile
from .point_functions import record_channels
from .point_rows import spatial_dae_rows, track_joint
from .record_model import record_dynamics, record_table
from .sector import discretize_on_track, finish_build, new_sector_model
from .vehicle_model import VehicleModel

__all__ = ["MULTIBODY_MODEL", "STATE_NAMES", "RATE_NAMES", "POINT_VARIABLES",
           "build_multibody_model", "initialize_multibody_model", "record_multibody_rows",
           "multibody_channels"]

STATE_NAMES = ("q2", "q3", "q4", "q5", "q6") + mbc.SUSPENSION
RATE_NAMES = ("q1_dot", "q2_dot", "q3_dot", "q4_dot", "q5_dot", "q6_dot") + tuple(
    f"{z}_dot" for z in mbc.SUSPENSION)
DERIVATIVE_NAMES = tuple(f"d{k}_ds" for k in STATE_NAMES + RATE_NAMES) + ("dt_ds",)
POINT_VARIABLES = STATE_NAMES + RATE_NAMES + veh.CONTROLS + DERIVATIVE_NAMES
"""The variables of one point the recorded rows depend on (43 names, the tape's inputs)."""

USER_TAGS = ("qdd", "alpha_", "f_", "zc_", "aero_q")
"""Tags kept as named Expressions ``m.car.<tag>[s]`` (``qdd0..qdd9``: the ten accelerations,
``f_ijz``: the tyre loads, ``zc_ij``: wheel-centre heights)."""

_DOCS = {
    "ode_q": "spatial DAE (39), kinematics: q1_dot dq_k/ds - q_k_dot = 0 (q2..q6, z_ij) [m/s, rad/s]",
    "ode_qdot": "spatial DAE (39), dynamics: q1_dot dq_k_dot/ds - q_k_ddot(ABA) = 0 (k = 1..10: "
                "q1..q6, z11, z12, z21, z22) [m/s^2, rad/s^2]",
    "load_min": "tyre-spring load f_ijz >= fz_min [N]",
    "settled_start": "open sector: the car enters settled, q_k_ddot = 0 (k = 4..10: heave, pitch, "
                     "roll, the four carriers) at the start",
}


def _point(v: dict, t) -> tuple:
    tj = track_joint(t)
    q = [0.0] + [v[k] for k in STATE_NAMES]
    qd = [v[k] for k in RATE_NAMES]
    u = [v[k] for k in veh.CONTROLS]
    return tj, q, qd, u


MULTIBODY_VEHICLE_INPUTS = VEHICLE_INPUTS + tuple(
    f"multibody.{key}" for key in OPTIONAL_SECTIONS["multibody"])
"""The car's parameters the multibody rows take as symbols: the full model's and the
``[multibody]`` section's (the model's ``m.vehicle.*``)."""


def record_multibody_rows(p, cfg) -> PointRows:
    r"""Record the rows of the multibody OCP at one point (as
    :func:`pyomo_lap.ocp.full_model.record_point_rows`).

    Rows: ``ode_q[k]`` (k in :data:`STATE_NAMES`), ``ode_qdot[k]`` (k = 1..10), ``ode_t``,
    ``power_limit``, ``adherence[w, sense]``, ``speed_min``, ``load_min[w]``
    (:math:`f_{ijz} \ge f_{z,min}`), and for open sectors ``settled_start[k]`` (k = 4..10).

    Parameters
    ----------
    p : VehicleParameters
        With the ``[multibody]`` parameters (the values of the symbols
        :data:`MULTIBODY_VEHICLE_INPUTS`: the tree is built on the symbols,
        :func:`pyomo_lap.vehicle.multibody_car.build_tree`).
    cfg : ConfigDict
        OCP options (``adherence``, ``v_min``, ``periodic``).

    Returns
    -------
    PointRows
        With ``variables = POINT_VARIABLES``.
    """
    def point_rows(p, v, track, namer):
        tree = mbc.build_tree(p)
        tj, q, qd, u = _point(v, track)
        e = mbc.multibody_equations(p, tree, tj, q, qd, u, namer=namer)
        ch = e.channels
        rows = spatial_dae_rows(v, STATE_NAMES, RATE_NAMES, e.qdd)
        rows.append(("power_limit", None, sub(ch["power"], power_available(p, ch["v_3x"])),
                     None, 0.0, "all"))
        for key, body in brake_rows(p, v["f_xb"]):
            rows.append(("brake_limit", key, body, None, 0.0, "all"))
        for key, body in adherence_rows(p, ch, cfg.adherence):
            rows.append(("adherence", key, body, None, 0.0, "all"))
        rows.append(("speed_min", None, ch["v_3x"], cfg.v_min, None, "all"))
        for w in mbc.WHEELS:
            rows.append(("load_min", w, sub(ch[f"f_{w}z"], p.fz_min), 0.0, None, "all"))
        if not cfg.periodic:
            for k in range(4, 11):
                rows.append(("settled_start", k, e.qdd[k - 1], 0.0, 0.0, "first"))
        return rows, multibody_channel_group(tree, tj, q, qd, e)

    unsupported_tyre(p, "multibody")
    return rows_on_tape(point_rows, p, POINT_VARIABLES,
                        vehicle_inputs(p, MULTIBODY_VEHICLE_INPUTS))


def build_multibody_model(track, vehicle, cfg, t0: Optional[float] = None,
                          progress=None) -> pyo.ConcreteModel:
    """Build and discretize the minimum-time OCP of the multibody car (the ``build`` of
    :data:`MULTIBODY_MODEL`).

    Returns
    -------
    pyomo.environ.ConcreteModel
        As :func:`pyomo_lap.ocp.build.build_model`.

    Raises
    ------
    ValueError
        The vehicle has no ``[multibody]`` section, or ``cfg.lift`` is set (not supported).
    """
    t0 = time.perf_counter() if t0 is None else t0
    p = vehicle
    mbc.require_multibody_parameters(p)
    if cfg.lift:
        raise ValueError("the multibody model does not support the OCP option 'lift'")
    m, L = new_sector_model(track, p, cfg, MULTIBODY_MODEL, "pyomo_lap multibody")
    add_joint_variables(m, MULTIBODY_MODEL, cfg)    # q2..q6, z_ij, their rates, t
    add_car_controls(m, p, cfg)
    add_derivative_vars(m, STATE_NAMES + RATE_NAMES + ("t",))
    sigma, tp, idx = discretize_on_track(m, track, p, cfg, L, veh.CONTROLS)
    add_vehicle_block(m, p)       # m.vehicle.<section>.<key>: the rows take them as symbols
    m.car = pyo.Block()
    tree = mbc.build_tree(p)
    add_point_rows(m, record_multibody_rows(p, cfg), tree, tp, sigma, idx, cfg, progress,
                   user_tags=USER_TAGS, docs={**_FAMILY_DOCS, **_DOCS})
    return finish_build(m, track, p, cfg, STATE_NAMES, RATE_NAMES, veh.CONTROLS, _set_scaling, t0)


def set_multibody_vehicle(m, vehicle) -> None:
    """Change the car of a built multibody model in place (the ``set_vehicle`` of
    :data:`MULTIBODY_MODEL`; public entry :func:`pyomo_lap.ocp.build.set_vehicle`): the model
    becomes the one :func:`build_multibody_model` builds for ``vehicle`` (its parameters
    ``m.vehicle.*``, the tree, control bounds, track limits, entry speed, scaling), as
    :func:`pyomo_lap.ocp.full_model.set_full_vehicle`.

    Raises
    ------
    ValueError
        The car has no ``[multibody]`` section, or as :func:`~pyomo_lap.ocp.full_model.set_full_vehicle`
        (the model is left unchanged).
    """
    mbc.require_multibody_parameters(vehicle)
    set_car(m, vehicle, mbc.build_tree(vehicle), car_control_bounds(vehicle), _set_scaling)


def _set_scaling(m) -> None:
    """Scaling factors (IPOPT's user scaling) from typical magnitudes: the chain's, as the full
    model's (:func:`pyomo_lap.ocp.full_model.chain_scaling`), the suspension joints', the
    tyre-load bounds and the settled start."""
    sf, F, _ = chain_scaling(m, lambda F: {k: v for z in mbc.SUSPENSION
                                           for k, v in ((z, 100.0), (f"{z}_dot", 10.0))})
    for c in m.load_min.values():
        sf[c] = F
    if m.component("settled_start") is not None:
        for k, c in m.settled_start.items():
            sf[c] = 0.1 if k <= 6 else 0.02


def multibody_channel_group(tree, tj, q, qd, e) -> dict:
    r"""The multibody record's channel group: the channels of
    :func:`pyomo_lap.vehicle.multibody_car.multibody_equations`, the acceleration of O3 in
    {B3} without gravity (the full model's ``a_x, a_y, a_z``: the physical body acceleration
    of the road body, :math:`\dot v + \omega \times v`) and, as the full model's, the vehicle
    invariant point (the chassis' origin) relative to the track's spine point in the ground
    frame, ``dx_vip, dy_vip, dz_vip`` (:data:`pyomo_lap.ocp.record_model.SPINE_RELATIVE`)."""
    kin = forward_kinematics(tree, q, qd, e.qdd, track={0: tj})
    V3, Vd3 = kin.V[mbc.ROAD], kin.Vdot[mbc.ROAD]
    wxv = cross(V3[3:], V3[:3])
    out = dict(e.channels)
    out.update({f"a_{c}": add(Vd3[k], wxv[k]) for k, c in enumerate("xyz")})
    out.update(zip(("dx_vip", "dy_vip", "dz_vip"), kin.pose[mbc.CHASSIS][1]))
    return out


def multibody_channels(m) -> tuple:
    """Accelerations and channels of a model at its current values, every point (the model's
    record, :func:`pyomo_lap.ocp.point_functions.record_channels`).

    Returns
    -------
    (values, qdd, channels)
        ``values``: dict name -> (n,) array of the point variables; ``qdd``: (n, 10) array
        [m/s^2, rad/s^2]; ``channels``: dict name -> (n,) array (those of
        :func:`pyomo_lap.vehicle.multibody_car.multibody_equations`, sorted by name).
    """
    out = record_channels(m)
    vals = {n: out["values"][n] for n in STATE_NAMES + RATE_NAMES + veh.CONTROLS}
    qdd = np.stack(list(out["qdd"].values()), axis=1)
    return vals, qdd, dict(sorted(out["channels"].items()))


def initialize_multibody_model(m, **kwargs) -> dict:
    """Cold-start initial guess: the common quasi-steady profile
    (:func:`pyomo_lap.ocp.initialize.cold_start_profile`: speed, time, point-mass controls,
    kinematic steer) on the centreline, the suspension at the design ride height (the static
    equilibrium: all of ``q4..q6, z_ij`` zero), rates zero but ``q1_dot``, and the derivative
    variables from the right-hand sides of the DAE at the guess.

    Returns
    -------
    dict
        ``{"status": "ok", "estimated_time_s": float}``.
    """
    prof = cold_start_profile(m)
    sigma = sorted(m.s)
    vals = {n: np.zeros(len(sigma)) for n in STATE_NAMES + RATE_NAMES}
    vals["q1_dot"] = prof["v"]
    vals.update(t=prof["t"], f_xa=prof["f_xa"], f_xb=prof["f_xb"], delta=prof["delta"])
    for name, arr in vals.items():
        comp = m.component(name)
        for i, s in enumerate(sigma):
            var = comp[s]
            if var.fixed:
                continue
            val = float(arr[i])
            if var.lb is not None:
                val = max(val, var.lb)
            if var.ub is not None:
                val = min(val, var.ub)
            var.set_value(val, skip_validation=True)
    _, qdd, _ = multibody_channels(m)
    for i, s in enumerate(sigma):
        v = float(pyo.value(m.q1_dot[s]))
        for name in STATE_NAMES:
            m.component(f"d{name}_ds")[s].set_value(float(pyo.value(m.component(f"{name}_dot")[s])) / v)
        for k, name in enumerate(RATE_NAMES):
            m.component(f"d{name}_ds")[s].set_value(float(qdd[i, k]) / v)
        m.dt_ds[s].set_value(1.0 / v)
    return {"status": "ok", "estimated_time_s": float(prof["t"][-1])}


MULTIBODY_MODEL = VehicleModel(
    name="multibody",
    description=("the multibody car: chassis on the six-joint chain, four wheel carriers on "
                 "suspension joints, tyre loads from the tyres' vertical springs "
                 "(pyomo_lap.vehicle.multibody_car)"),
    states=STATE_NAMES, rates=RATE_NAMES, controls=veh.CONTROLS, algebraics=(),
    build=build_multibody_model, initialize=initialize_multibody_model,
    trajectory=record_table,
    point_rows=record_multibody_rows,
    set_vehicle=set_multibody_vehicle, dynamics=record_dynamics)
"""The multibody car as a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` (key ``"multibody"``)."""
