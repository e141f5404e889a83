r"""A point-mass vehicle model: the worked example of ``docs/vehicle_models.md``.

A vehicle model of the OCP written only against the interface
(:class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`) and the shared pieces of
:mod:`pyomo_lap.ocp.common`. It is not in the registry :data:`pyomo_lap.ocp.build.VEHICLE_MODELS`;
use it as an object, ``build_model(track, vehicle, model=POINT_MASS_MODEL)`` (or register it
with one line there).

The car is a point mass in the plane of the track, at the lateral offset ``q2 = n`` from the
spine, moving with the spine's curvature :math:`\kappa = \Omega_z` (Frenet frame; slope
enters as the grade force, banking and crests not at all). With :math:`\dot s = \dot q_1`:

.. math::
    \ddot s = \frac{F_t/m + 2\kappa\dot s\dot n + \kappa'\dot s^2 n}{1 - \kappa n},\qquad
    \ddot n = F_n/m - \kappa(1 - \kappa n)\dot s^2,

with the tangential force :math:`F_t = f_{xa} + f_{xb} - \tfrac12\rho S C_x v^2 - m g\,
r_{31}` (drag and grade) and the lateral force of a kinematic car,
:math:`F_n = m v^2 \delta / l` (so ``delta`` is a steer angle and the steering penalty of
(41) keeps its meaning). Path constraints: the friction circle
:math:`(f_{xa} + f_{xb})^2 + F_n^2 \le (\mu_y (m g + \tfrac12\rho S (C_{z1}+C_{z2}) v^2))^2`,
the power limit, the track limits on ``q2``. No algebraic variables.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo
from pyomo.dae import DerivativeVar

from .common import OBJECTIVE_SCALE, scale_variables, set_within_bounds
from .initialize import cold_start_profile
from .sector import discretize_on_track, finish_build, new_sector_model
from .vehicle_model import VehicleModel

__all__ = ["POINT_MASS_MODEL", "build_point_mass_model", "initialize_point_mass"]

STATE_NAMES = ("q2",)
RATE_NAMES = ("q1_dot", "q2_dot")
CONTROLS = ("f_xa", "f_xb", "delta")


def build_point_mass_model(track, vehicle, cfg, t0: Optional[float] = None, progress=None):
    """The ``build`` of :data:`POINT_MASS_MODEL` (see :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`)."""
    t0 = time.perf_counter() if t0 is None else t0
    if cfg.lift:
        raise ValueError("option 'lift' is not available for the point-mass model")
    p = vehicle
    m, L = new_sector_model(track, p, cfg, POINT_MASS_MODEL, "pyomo_lap point-mass")
    m.q2 = pyo.Var(m.s, initialize=0.0, doc="lateral offset from the spine, + left [m]")
    m.q1_dot = pyo.Var(m.s, initialize=20.0, bounds=(cfg.v_min, 150.0), doc="ds/dt [m/s]")
    m.q2_dot = pyo.Var(m.s, initialize=0.0, doc="dq2/dt [m/s]")
    m.t = pyo.Var(m.s, initialize=0.0, doc="time [s]")
    fmax = 3 * p.m * p.gravity * max(p.mu_x0, p.mu_y0)
    m.f_xa = pyo.Var(m.s, initialize=0.0, bounds=(0.0, fmax), doc="traction force [N]")
    m.f_xb = pyo.Var(m.s, initialize=0.0, bounds=(-fmax, 0.0), doc="braking force [N]")
    m.delta = pyo.Var(m.s, initialize=0.0, bounds=(-p.delta_max, p.delta_max),
                      doc="kinematic steer angle [rad]: lateral force m v^2 delta / l")
    for name in STATE_NAMES + RATE_NAMES + ("t",):
        m.add_component(f"d{name}_ds", DerivativeVar(m.component(name), wrt=m.s, doc=f"d{name}/dq1"))
    sigma, tp, idx = discretize_on_track(m, track, p, cfg, L, CONTROLS)
    kappa = {s: float(tp.omega[idx[s], 2]) for s in sigma}
    dkappa = {s: float(tp.domega_ds[idx[s], 2]) for s in sigma}
    grade = {s: float(tp.rotation[idx[s], 2, 0]) for s in sigma}
    kx = 0.5 * p.rho * p.S * p.Cx
    kz = 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2)

    def f_n(m, s):
        return p.m * m.q1_dot[s] ** 2 * m.delta[s] / p.l
    m.f_n = pyo.Expression(m.s, rule=f_n, doc="lateral force [N]")
    first = sigma[0]

    def ode(m, k, s):
        if s == first:
            return pyo.Constraint.Skip
        v, n, nd, kp = m.q1_dot[s], m.q2[s], m.q2_dot[s], kappa[s]
        if k == "q2":
            rhs = nd
        elif k == "q1_dot":
            f_t = m.f_xa[s] + m.f_xb[s] - kx * v ** 2 - p.m * p.gravity * grade[s]
            rhs = (f_t / p.m + 2 * kp * v * nd + dkappa[s] * v ** 2 * n) / (1 - kp * n)
        elif k == "q2_dot":
            rhs = m.f_n[s] / p.m - kp * (1 - kp * n) * v ** 2
        else:
            rhs = 1.0
        return m.q1_dot[s] * m.component(f"d{k}_ds")[s] == rhs
    m.ode = pyo.Constraint(STATE_NAMES + RATE_NAMES + ("t",), m.s, rule=ode,
                           doc="spatial ODE: q1_dot d(x)/ds = dx/dt")
    m.friction = pyo.Constraint(m.s, rule=lambda m, s: (m.f_xa[s] + m.f_xb[s]) ** 2 + m.f_n[s] ** 2
                                <= (p.mu_y0 * (p.m * p.gravity + kz * m.q1_dot[s] ** 2)) ** 2,
                                doc="friction circle [N^2]")
    m.power_limit = pyo.Constraint(m.s, rule=lambda m, s: m.f_xa[s] * m.q1_dot[s] <= p.P_max)
    return finish_build(m, track, p, cfg, STATE_NAMES, RATE_NAMES, CONTROLS, _set_scaling, t0)


def _set_scaling(m) -> None:
    p = m.vehicle.built_for
    sf = m.scaling_factor = pyo.Suffix(direction=pyo.Suffix.EXPORT)
    F = 1.0 / (p.m * p.gravity)
    L = m.problem.sector_length
    typical = {"q2": 1.0, "q1_dot": 0.05, "q2_dot": 1.0, "t": 1.0 / max(1.0, float(m.problem.time_scale) or L / 30.0),
               "f_xa": F, "f_xb": F, "delta": 10.0}
    scale_variables(m, sf, typical)
    for (k, s), c in m.ode.items():
        sf[c] = {"q2": 0.5, "q1_dot": 0.05, "q2_dot": 0.05, "t": 1.0}[k]
    for c in m.friction.values():
        sf[c] = F * F
    for c in m.power_limit.values():
        sf[c] = 1.0 / p.P_max
    sf[m.objective] = OBJECTIVE_SCALE / max(1.0, float(m.problem.time_scale) or L / 30.0)


def initialize_point_mass(m, **kwargs) -> dict:
    """The ``initialize`` of :data:`POINT_MASS_MODEL`: the cold-start profile
    (:func:`pyomo_lap.ocp.initialize.cold_start_profile`) on the spine; keyword arguments are
    ignored."""
    prof = cold_start_profile(m)
    sigma = sorted(m.s)
    dvds = np.gradient(prof["v"], np.asarray(sigma))
    for i, s in enumerate(sigma):
        v = float(prof["v"][i])
        vals = {"q2": 0.0, "q1_dot": v, "q2_dot": 0.0, "t": float(prof["t"][i]),
                "f_xa": float(prof["f_xa"][i]), "f_xb": float(prof["f_xb"][i]),
                "delta": float(prof["delta"][i])}
        set_within_bounds(m, s, vals)
        m.dq2_ds[s].set_value(0.0)
        m.dq2_dot_ds[s].set_value(0.0)
        m.dq1_dot_ds[s].set_value(float(dvds[i]))
        m.dt_ds[s].set_value(1.0 / v)
    return {"status": "ok", "estimated_time_s": float(prof["t"][-1])}


POINT_MASS_MODEL = VehicleModel(
    name="point-mass",
    description="a point mass in the track's plane with a friction circle (pyomo_lap.ocp.point_mass)",
    states=STATE_NAMES, rates=RATE_NAMES, controls=CONTROLS, algebraics=(),
    build=build_point_mass_model, initialize=initialize_point_mass)
"""The point-mass model as a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` (not registered)."""
