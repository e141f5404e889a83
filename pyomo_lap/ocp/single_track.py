r"""Single-track (nonlinear bicycle) model with Fiala tyres: a second vehicle model in the same
optimal-control machinery.

The model of seed ``004`` lumps the two wheels of each axle into one and keeps the chassis
rigid. Here it is built from the same pieces as the full model:

* **chain**: joints 1-3 of the car's chain (track joint, lateral offset ``q2``, relative yaw
  ``q3``), :func:`build_chain`, with one rigid body, the whole car (sprung and unsprung
  masses at zero suspension deflection, their spatial inertias added about O3). The ABA of
  :mod:`pyomo_lap.spatial.tree` gives :math:`\ddot q_1..\ddot q_3` and the structural wrench
  :math:`W_{3J}` on any 3D track, so slope, banking and crests enter exactly as in the full
  model. On a flat track this is the seed's planar bicycle, written in the track coordinates
  instead of :math:`(U_x, U_y, r)` (the seed's listing has the sign of :math:`r U_y` in
  :math:`\dot U_x` wrong; the Newton-Euler form used here has :math:`\dot U_x = F_x/m + r U_y`,
  :math:`\dot U_y = F_y/m - r U_x`);
* **loads**: the axle loads statically equivalent to :math:`W_{3J}` (front
  :math:`(a_2 f_{3z} - m_{3y})/l`, rear :math:`(a_1 f_{3z} + m_{3y})/l`): longitudinal load
  transfer, aerodynamic loads, normal curvature; no lateral transfer (one wheel per axle);
* **tyres** (seed ``004``): Fiala lateral force of each axle,

  .. math::
      f_{iy} = D_i\,(3\upsilon - 3\upsilon|\upsilon| + \upsilon^3),\quad
      \upsilon = \frac{C_i \tan\alpha_i}{3 D_i},\quad |\upsilon| \le 1,

  (the seed's polynomial, written for a force that is positive for a positive slip angle as
  in eq (33); the tyre slides at :math:`|\upsilon| = 1`), with the exact slip angles
  :math:`\alpha_1 = \delta - \arctan\frac{v_{3y} + a_1\omega_{3z}}{v_{3x}}`,
  :math:`\alpha_2 = \arctan\frac{a_2\omega_{3z} - v_{3y}}{v_{3x}}`. The axle's cornering
  stiffness and peak force are those of two tyres of the full model at half the axle load,
  :math:`C_i = 2 C_\alpha(f_{iz}/2)`, :math:`D_i = 2 D(f_{iz}/2)` (eq 32), so both models
  share the tyre data. Combined slip: as in the full model, the lateral force is the
  pure-slip one and each axle obeys the friction ellipse
  :math:`(\mu_y/\mu_x f_{ix})^2 + f_{iy}^2 \le D_i^2` as a path constraint (the seed derates
  the peak instead, :math:`\sqrt{(\mu F_z)^2 - F_x^2}`; the ellipse keeps the comparison with
  the full model about the chassis, not the tyre model);
* longitudinal forces, aerodynamics, power limit, objective and mesh as in the full model.

Variables keep the full model's names where they mean the same (``q2, q3, q1_dot, q2_dot,
q3_dot, t, f_xa, f_xb, delta, f_3x, f_3y, m_3z``); the algebraic loads are the axle loads
``f_1z, f_2z``. A solved single-track model is a warm start for the full model
(:func:`warm_start_full`).
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo

from ..spatial.backend import add, mul, sub
from ..vehicle import car as veh
from ..vehicle.powertrain import power_available
from ..vehicle.single_track_car import (  # noqa: F401
    _ABS_EPS2,
    ALGEBRAIC,
    RATE_NAMES,
    STATE_NAMES,
    _clip_unit,
    build_chain,
    fiala_axle,
    single_track_equations,
)
from .common import (
    OBJECTIVE_SCALE,
    add_car_controls,
    add_derivative_vars,
    add_joint_variables,
    add_tyre_wrench_variables,
    add_vehicle_block,
    car_control_bounds,
    scale_variables,
    set_within_bounds,
)
from .full_model import (  # noqa: F401  # noqa: F401
    _FAMILY_DOCS,
    FULL_MODEL,
    RATE_NAMES as FULL_RATES,
    STATE_NAMES as FULL_STATES,
    VEHICLE_INPUTS,
    brake_rows,
    set_car,
    vehicle_inputs,
)
from .initialize import cold_start_profile, initialize_from_solution, initialize_model
from .point_functions import AlgebraicLoopError, CarFunctions, record_of, track_vectors
from .point_rows import (
    PointRows,
    add_point_rows,
    rows_on_tape,
    spatial_dae_rows,
    track_joint,
)
from .record_model import record_dynamics, record_table
from .sector import discretize_on_track, finish_build, new_sector_model
from .vehicle_model import VehicleModel

__all__ = ["ALGEBRAIC", "STATE_NAMES", "RATE_NAMES", "POINT_VARIABLES", "build_chain", "fiala_axle",
           "single_track_equations", "build_single_track_model", "record_single_track_rows",
           "set_single_track_vehicle", "initialize_single_track", "warm_start_full",
           "SINGLE_TRACK_MODEL"]

DERIVATIVE_NAMES = tuple(f"d{k}_ds" for k in STATE_NAMES + RATE_NAMES) + ("dt_ds",)
POINT_VARIABLES = STATE_NAMES + RATE_NAMES + veh.CONTROLS + ALGEBRAIC + DERIVATIVE_NAMES
"""The variables of one point the recorded rows depend on (19 names, the tape's inputs)."""

USER_TAGS = ("qdd", "W3J", "V3", "alpha_", "f_", "Y_", "aero_q")
"""Tags kept as named Expressions ``m.car.<tag>[s]`` (slip angles, axle forces, ...)."""

_DOCS = {
    "ode_qdot": "spatial DAE (39), dynamics: q1_dot dq_k_dot/ds - q_k_ddot(ABA) = 0 (k = 1..3) "
                "[m/s^2, rad/s^2]",
    "loads_eq": "axle loads statically equivalent to W_3J: f_iz - F_i = 0 [N]",
    "inplane_eq": "in-plane tyre resultant on the car: f_3x, f_3y, m_3z [N, N, N m]",
    "adherence": "friction ellipse of each axle: (mu_y/mu_x f_ix)^2 + f_iy^2 - D_i^2 <= 0 [N^2]",
    "fiala_range": "Fiala range of each axle: upsilon_i^2 <= 1 (the tyre slides at 1)",
}


# ------------------------------------------------------------------------------ the OCP
def build_single_track_model(track, vehicle: veh.VehicleParameters, cfg, t0: Optional[float] = None,
                             progress=None):
    """Build and discretize the minimum-time OCP of the single-track model on a sector.

    The ``build`` of :data:`SINGLE_TRACK_MODEL`, called by :func:`pyomo_lap.ocp.build.build_model`
    with option ``model='single-track'`` (``progress`` as there); same
    options, mesh, objective (41), power limit, track limits and entry conditions as the full
    model. Differences: states ``q2, q3, q1_dot..q3_dot, t``; algebraic ``f_1z, f_2z, f_3x,
    f_3y, m_3z``; adherence per axle (friction ellipse) and the Fiala range
    ``|upsilon_i| <= 1`` (constraint ``fiala_range``).

    Returns
    -------
    pyomo.environ.ConcreteModel

    Raises
    ------
    ValueError
        As :func:`pyomo_lap.ocp.build.build_model`.
    """
    t0 = time.perf_counter() if t0 is None else t0
    if cfg.lift:
        raise ValueError("option 'lift' is not available for the single-track model")
    p = vehicle
    u = pyo.units
    m, L = new_sector_model(track, p, cfg, SINGLE_TRACK_MODEL, "pyomo_lap single-track")
    add_joint_variables(m, SINGLE_TRACK_MODEL, cfg)     # q2, q3, q1_dot..q3_dot, t
    add_car_controls(m, p, cfg)
    for name, bounds in axle_load_bounds(p).items():
        m.add_component(name, pyo.Var(m.s, initialize=p.m * p.gravity / 2, bounds=bounds,
                                      units=u.N, doc=f"vertical load of axle {name[2]} [N]"))
    add_tyre_wrench_variables(m, "the car")
    add_derivative_vars(m, STATE_NAMES + RATE_NAMES + ("t",))
    sigma, tp, idx = discretize_on_track(m, track, p, cfg, L, ("f_xa", "f_xb", "delta"))
    add_vehicle_block(m, p)       # m.vehicle.<section>.<key>: the rows take them as symbols
    m.car = pyo.Block()
    add_point_rows(m, record_single_track_rows(p, cfg), build_chain(p), tp, sigma, idx, cfg,
                   progress, user_tags=USER_TAGS, docs={**_FAMILY_DOCS, **_DOCS})
    return finish_build(m, track, p, cfg, STATE_NAMES, RATE_NAMES, ("f_xa", "f_xb", "delta"),
                        _set_scaling, t0)


def record_single_track_rows(p, cfg) -> PointRows:
    r"""Record the rows of the single-track OCP at one point (as
    :func:`pyomo_lap.ocp.full_model.record_point_rows`: the car's parameters are the symbols
    :data:`pyomo_lap.ocp.full_model.VEHICLE_INPUTS`, the model's ``m.vehicle.*``).

    Rows: ``ode_q[k]`` (k = q2, q3), ``ode_qdot[k]`` (k = 1..3), ``ode_t``, ``loads_eq[k]``
    (k = 0, 1: front, rear axle), ``inplane_eq[k]`` (k = 0..2), ``power_limit``,
    ``adherence[k]`` (k = 1, 2: the friction ellipse of each axle), ``fiala_range[k]``
    (:math:`\upsilon_k^2 \le 1`), ``speed_min``.

    Parameters
    ----------
    p : VehicleParameters
        Gives only what is not a parameter of the car (its name).
    cfg : ConfigDict
        OCP options (``v_min``).

    Returns
    -------
    PointRows
        With ``variables = POINT_VARIABLES``.
    """
    def point_rows(p, v, track, namer):
        e = single_track_equations(p, build_chain(p), track_joint(track),
                                   [0.0, v["q2"], v["q3"]], [v[k] for k in RATE_NAMES],
                                   [v[k] for k in veh.CONTROLS], [v[k] for k in ALGEBRAIC],
                                   namer=namer)
        ch = e.channels
        rows = spatial_dae_rows(v, STATE_NAMES, RATE_NAMES, e.qdd)
        for k in range(2):
            rows.append(("loads_eq", k, e.load_residuals[k], 0.0, 0.0, "all"))
        for k in range(3):
            rows.append(("inplane_eq", k, e.inplane_residuals[k], 0.0, 0.0, "all"))
        rows.append(("power_limit", None, sub(ch["power"], power_available(p, ch["v_3x"])),
                     None, 0.0, "all"))
        for key, body in brake_rows(p, v["f_xb"]):
            rows.append(("brake_limit", key, body, None, 0.0, "all"))
        ratio = p.mu_y0 / p.mu_x0
        for k in (1, 2):
            fx, fy, D = ch[f"f_{k}x"], ch[f"f_{k}y"], ch[f"D_{k}"]
            rows.append(("adherence", k, sub(add(mul(mul(ratio, fx), mul(ratio, fx)), mul(fy, fy)),
                                             mul(D, D)), None, 0.0, "all"))
        for k in (1, 2):
            ups = ch[f"upsilon_{k}"]
            rows.append(("fiala_range", k, mul(ups, ups), None, 1.0, "all"))
        rows.append(("speed_min", None, ch["v_3x"], cfg.v_min, None, "all"))
        return rows, dict(ch)        # the record's channel group: the equations' channels

    return rows_on_tape(point_rows, p, POINT_VARIABLES, vehicle_inputs(p))


def axle_load_bounds(p) -> dict:
    """Bounds of the axle loads ``f_1z, f_2z``: ``(2 fz_min, 20 m g)`` [N]."""
    return {name: (2 * p.fz_min, 20 * p.m * p.gravity) for name in ("f_1z", "f_2z")}


def set_single_track_vehicle(m, vehicle: veh.VehicleParameters) -> None:
    """Change the car of a built single-track model in place (the ``set_vehicle`` of
    :data:`SINGLE_TRACK_MODEL`; public entry :func:`pyomo_lap.ocp.build.set_vehicle`): the
    model becomes the one :func:`build_single_track_model` builds for ``vehicle`` (its
    parameters ``m.vehicle.*``, chain, bounds of controls and axle loads, track limits, entry
    speed, scaling), as :func:`pyomo_lap.ocp.full_model.set_full_vehicle`.

    Raises
    ------
    ValueError
        As :func:`~pyomo_lap.ocp.full_model.set_full_vehicle` (the model is left unchanged).
    """
    set_car(m, vehicle, build_chain(vehicle),
            {**car_control_bounds(vehicle), **axle_load_bounds(vehicle)}, _set_scaling)


def _set_scaling(m) -> None:
    p = m.vehicle.built_for
    sf = m.component("scaling_factor")        # kept when the model's car changes (set_vehicle)
    if sf is None:
        sf = m.scaling_factor = pyo.Suffix(direction=pyo.Suffix.EXPORT)
    F = 1.0 / (p.m * p.gravity / 4)
    L = m.problem.sector_length
    T = max(1.0, float(m.problem.time_scale) or L / 30.0)    # the sector's quasi-steady time
    typical = {"q2": 1.0, "q3": 10.0, "q1_dot": T / L, "q2_dot": 1.0, "q3_dot": 2.0,
               "t": 1.0 / T, "f_xa": F, "f_xb": F, "delta": 10.0,
               "f_1z": F / 2, "f_2z": F / 2, "f_3x": F / 4, "f_3y": F / 4, "m_3z": F / 4}
    scale_variables(m, sf, typical)
    for (k, s), c in m.ode_qdot.items():
        sf[c] = {1: 0.1, 2: 0.1, 3: 0.5}[k] * 0.5
    for (k, s), c in m.ode_q.items():
        sf[c] = typical[f"{k}_dot"] * 0.5
    for c in m.ode_t.values():
        sf[c] = 1.0
    for c in m.loads_eq.values():
        sf[c] = F / 2
    for c in m.inplane_eq.values():
        sf[c] = F / 4
    for c in m.power_limit.values():
        sf[c] = 1.0 / p.P_max
    for c in m.adherence.values():
        sf[c] = (F / 2) ** 2
    if m.component("brake_limit") is not None:
        for (key, s), c in m.brake_limit.items():
            sf[c] = 1.0 / float(p.T_b1 if key == "1" else p.T_b2)
    for c in m.speed_min.values():
        sf[c] = T / L
    sf[m.objective] = OBJECTIVE_SCALE / T   # see pyomo_lap.ocp.full_model._set_scaling


# ------------------------------------------------------------------------------ initial guess, results
def initialize_single_track(m, **kwargs) -> dict:
    """Cold-start guess for a single-track model, by the steps of
    :func:`pyomo_lap.ocp.initialize.initialize_model` (quasi-steady speed profile on the
    centreline, point-mass controls, kinematic steer, algebraic loop solved by Newton with
    the traced equations, derivative variables from the DAE). The ``initialize`` of
    :data:`SINGLE_TRACK_MODEL`; keyword arguments of
    :func:`~pyomo_lap.ocp.initialize.initialize_model` for the full model
    (``fixed_point_iterations``) are ignored.

    Returns
    -------
    dict
        ``{"status", "estimated_time_s", "max_algebraic_residual"}``.
    """
    p = m.vehicle.built_for
    prof = cold_start_profile(m)
    car = CarFunctions(record_of(m), p, m.problem.vehicle_model)   # the model's record
    tracks = track_vectors(m.problem.track_points)     # the record's track inputs per point
    sigma = np.array(sorted(m.s))
    max_res = 0.0
    z = None
    for i, s in enumerate(sigma):
        v = float(prof["v"][i])
        q, qd = [0.0, 0.0, 0.0], [v, 0.0, 0.0]
        u = [float(prof["f_xa"][i]), float(prof["f_xb"][i]), float(prof["delta"][i])]
        trk = tracks[i]
        z, qdd = car.solve(trk, q, qd, u, z)
        max_res = max(max_res, float(np.max(np.abs(car.evaluate(trk, q, qd, u, z)[1]))))
        vals = {"q2": 0.0, "q3": 0.0, "q1_dot": v, "q2_dot": 0.0, "q3_dot": 0.0,
                "t": float(prof["t"][i]), "f_xa": u[0], "f_xb": u[1], "delta": u[2]}
        vals.update(zip(ALGEBRAIC, z))
        set_within_bounds(m, s, vals)
        m.dq2_ds[s].set_value(0.0)
        m.dq3_ds[s].set_value(0.0)
        for k in range(3):
            m.component(f"dq{k + 1}_dot_ds")[s].set_value(float(qdd[k]) / v)
        m.dt_ds[s].set_value(1.0 / v)
    return {"status": "ok", "estimated_time_s": float(prof["t"][-1]), "max_algebraic_residual": max_res}


def warm_start_full(m_full, m_single) -> dict:
    """Initialize a full model from a solved single-track model of the same sector.

    Steps: (1) the cold start of :func:`pyomo_lap.ocp.initialize.initialize_model`;
    (2) every variable the two models share (``q2, q3, q1_dot, q2_dot, q3_dot, t``, controls,
    ``f_3x, f_3y, m_3z`` and their derivatives) interpolated from the single-track solution
    (:func:`pyomo_lap.ocp.initialize.initialize_from_solution`); (3) at every point, heave,
    pitch and roll settled under the single-track motion (zero suspension accelerations) and
    the seven algebraic variables solved, by Newton on the traced full equations;
    (4) suspension rates and the derivative variables made consistent.

    Returns
    -------
    dict
        ``{"status": "ok", "points": n, "unsettled": k}`` (points where step 3 failed and the
        cold-start values were kept).

    Raises
    ------
    ValueError
        ``m_full`` is not a full model, or the sectors differ.
    """
    if (m_full.problem.vehicle_model is not FULL_MODEL
            or m_single.problem.vehicle_model is not SINGLE_TRACK_MODEL):
        raise ValueError(f"warm_start_full needs a {FULL_MODEL.name!r} model and a solved "
                         f"{SINGLE_TRACK_MODEL.name!r} model, got {m_full.problem.vehicle_model.name!r} "
                         f"and {m_single.problem.vehicle_model.name!r}")
    initialize_model(m_full)
    initialize_from_solution(m_full, m_single)
    p = m_full.vehicle.built_for
    car = CarFunctions(record_of(m_full), p, m_full.problem.vehicle_model)
    tracks = track_vectors(m_full.problem.track_points)
    sigma = np.array(sorted(m_full.s))
    Q = np.zeros((len(sigma), 6))
    QD = np.zeros((len(sigma), 6))
    Z = np.zeros((len(sigma), 7))
    QDD = np.zeros((len(sigma), 6))
    bad = 0
    z = None
    for i, s in enumerate(sigma):
        q = np.array([0.0] + [pyo.value(m_full.component(n)[s]) for n in FULL_STATES])
        qd = np.array([pyo.value(m_full.component(n)[s]) for n in FULL_RATES])
        qd[3:] = 0.0
        u = np.array([pyo.value(m_full.component(n)[s]) for n in veh.CONTROLS])
        trk = tracks[i]

        def settle(y, _trk=trk, _q=q, _qd=qd, _u=u):
            qq = _q.copy()
            qq[3:] = y[7:]
            qdd, r = car.evaluate(_trk, qq, _qd, _u, y[:7])
            return np.r_[r, 1e3 * qdd[3:]]

        def jac(y):
            J = np.zeros((10, 10))
            f0 = settle(y)
            for j in range(10):
                dy = np.zeros(10)
                dy[j] = 1e-6 * max(1.0, abs(y[j]))
                J[:, j] = (settle(y + dy) - f0) / dy[j]
            return J
        zq = car.static_guess if z is None else z
        try:
            y = veh.solve_loop(settle, np.r_[zq, q[3:]], jac, tol=1e-6, max_iter=30)
            z = y[:7]
            q[3:] = y[7:]
        except RuntimeError:
            bad += 1
            z = np.array([pyo.value(m_full.component(n)[s]) for n in veh.ALGEBRAIC])
        try:
            z, qdd = car.solve(trk, q, qd, u, z)
        except AlgebraicLoopError:
            qdd = np.zeros(6)
        Q[i], QD[i], Z[i], QDD[i] = q, qd, z, qdd
    # suspension rates along the path: q_k_dot = q1_dot dq_k/ds
    for k in (3, 4, 5):
        QD[:, k] = QD[:, 0] * np.gradient(Q[:, k], sigma)
    QD[0, 3:] = 0.0 if m_full.component("q4_dot")[sigma[0]].fixed else QD[0, 3:]
    for i, s in enumerate(sigma):
        vals = dict(zip(FULL_STATES, Q[i, 1:]))
        vals.update(zip(FULL_RATES[3:], QD[i, 3:]))
        vals.update(zip(veh.ALGEBRAIC, Z[i]))
        set_within_bounds(m_full, s, {k: float(v) for k, v in vals.items()})
        v1 = QD[i, 0]
        for k, name in enumerate(FULL_STATES):
            m_full.component(f"d{name}_ds")[s].set_value(float(QD[i, k + 1]) / v1)
        for k, name in enumerate(FULL_RATES):
            m_full.component(f"d{name}_ds")[s].set_value(float(QDD[i, k]) / v1)
    return {"status": "ok", "points": len(sigma), "unsettled": bad}


SINGLE_TRACK_MODEL = VehicleModel(
    name="single-track",
    description="rigid nonlinear bicycle with Fiala tyres (pyomo_lap.ocp.single_track)",
    states=STATE_NAMES, rates=RATE_NAMES, controls=veh.CONTROLS, algebraics=ALGEBRAIC,
    build=build_single_track_model, initialize=initialize_single_track,
    trajectory=record_table, point_rows=record_single_track_rows,
    set_vehicle=set_single_track_vehicle, dynamics=record_dynamics,
    initial_guess_for={FULL_MODEL.name: warm_start_full})
"""The single-track model as a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` (registry key
``"single-track"``)."""
