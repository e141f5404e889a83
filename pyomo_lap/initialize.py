"""Initial guess for the OCP, from a cold start (no earlier solution needed).

Steps (each returns nothing and writes into the model's variables):

1. speed: the quasi-steady point-mass speed profile along the centreline
   (:func:`pyomo_lap.speed_profile.quasi_steady_speed`), honouring a fixed entry speed;
2. states: on the centreline (``q2 = q3 = 0``), static heave sag plus the aerodynamic sag,
   no pitch or roll, rates zero except ``q1_dot``; time by quadrature of ``1/q1_dot``;
3. controls: the longitudinal force a point mass needs for the profile's acceleration, drag
   and grade, split into traction (capped by power) and braking; steer from the kinematic
   (Ackermann) angle ``l * Omega_z``;
4. algebraic variables: a fixed-point iteration of the load and in-plane equations
   (35)-(36) evaluated with floats by the same code that builds the Pyomo model;
5. derivative variables: the right-hand sides of the spatial DAE (39) at the guess.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from . import vehicle as veh
from .ocp import RATE_NAMES, STATE_NAMES
from .speed_profile import quasi_steady_speed

__all__ = ["initialize_model"]


def initialize_model(m, fixed_point_iterations: int = 4) -> dict:
    """Write a cold-start initial guess into a model from :func:`pyomo_lap.ocp.build_model`.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    fixed_point_iterations : int
        Iterations of the algebraic loop per point.

    Returns
    -------
    dict
        ``{"status": "ok", "estimated_time_s": float, "max_algebraic_residual": float}``.
    """
    p = m.vehicle
    tp = m.track_points
    sigma = np.array(sorted(m.s))
    closed = bool(m.options.periodic)
    v = quasi_steady_speed(p, sigma, tp.omega, tp.rotation, closed=closed,
                           v_start=m.initial_speed, v_min=m.options.v_min)
    invv = 1.0 / v
    t = np.concatenate([[0.0], np.cumsum(0.5 * (invv[1:] + invv[:-1]) * np.diff(sigma))])
    susp = p.suspension
    kd = 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2)
    kx = 0.5 * p.rho * p.S * p.Cx
    sag = -(p.m_s * p.gravity + kd * v ** 2) / susp["k"]
    dvds = np.gradient(v, sigma)
    ax = v * dvds
    g_t = p.gravity * tp.rotation[:, 2, 0]
    fx = p.m * (ax + g_t) + kx * v ** 2
    f_xa = np.clip(fx, 0.0, p.P_max / v)
    f_xb = np.minimum(fx, 0.0)
    delta = np.clip(p.l * tp.omega[:, 2], -0.9 * p.delta_max, 0.9 * p.delta_max)
    # step 4: the algebraic loop, all points at once on the recorded car equations
    tape, outs = m.car_tape, m.car_outputs
    n = len(sigma)
    zeros = np.zeros(n)
    q = [zeros, zeros, sag, zeros, zeros]                      # q2..q6
    qd = [v, zeros, zeros, zeros, zeros, zeros]                # q1_dot..q6_dot
    u = [f_xa, f_xb, delta]
    s1, s2 = p.static_loads
    z = [np.full(n, s1), np.full(n, s1), np.full(n, s2), np.full(n, s2), fx.copy(), zeros, zeros]
    inputs = _track_inputs(m)

    def evaluate(tagged=False):
        for k in range(5):
            inputs[f"q[{k}]"] = q[k]
        for k in range(6):
            inputs[f"qd[{k}]"] = qd[k]
        for k in range(3):
            inputs[f"u[{k}]"] = u[k]
        for k in range(7):
            inputs[f"z[{k}]"] = z[k]
        return tape.evaluate(inputs, outs["qdd"] + outs["load_res"] + outs["inplane"], tagged=tagged)

    for _ in range(fixed_point_iterations):
        r = [np.broadcast_to(x, (n,)) for x in evaluate()]
        z = [np.maximum(p.fz_min, z[k] - r[6 + k]) for k in range(4)] + \
            [z[4 + k] - r[10 + k] for k in range(3)]
    r, tags = evaluate(tagged=True)
    r = [np.broadcast_to(np.asarray(x, dtype=float), (n,)) for x in r]
    max_res = float(max(np.max(np.abs(x)) for x in r[6:13]))
    for tag, value in tags.items():   # lifted intermediates (OCP option 'lift')
        comp = m.car.component(tag)
        if comp is not None and comp.ctype is pyo.Var:
            value = np.broadcast_to(np.asarray(value, dtype=float), (n,))
            for i, s in enumerate(sigma):
                comp[s].set_value(float(value[i]))
    vals = dict(zip(STATE_NAMES, q))
    vals.update(zip(RATE_NAMES, qd))
    vals.update(t=t, f_xa=u[0], f_xb=u[1], delta=u[2])
    vals.update(zip(veh.ALGEBRAIC, z))
    for name, arr in vals.items():
        var = m.component(name)
        arr = np.broadcast_to(np.asarray(arr, dtype=float), (n,))
        for i, s in enumerate(sigma):
            vd = var[s]
            if vd.fixed:
                continue
            val = float(arr[i])
            if vd.lb is not None:
                val = max(val, vd.lb)
            if vd.ub is not None:
                val = min(val, vd.ub)
            vd.set_value(val, skip_validation=True)
    rates = dict(zip(STATE_NAMES, qd[1:]))
    rates.update(zip(RATE_NAMES, r[0:6]))
    for name, arr in rates.items():
        dv = m.component(f"d{name}_ds")
        arr = np.broadcast_to(np.asarray(arr, dtype=float), (n,))
        for i, s in enumerate(sigma):
            dv[s].set_value(float(arr[i] / v[i]))
    for i, s in enumerate(sigma):
        m.dt_ds[s].set_value(1.0 / float(v[i]))
    return {"status": "ok", "estimated_time_s": float(t[-1]), "max_algebraic_residual": max_res}


def _track_inputs(m) -> dict:
    """The track-joint numbers of every point, keyed as the car tape's inputs (arrays)."""
    from .ocp import _tape_inputs
    per_point = [_tape_inputs(j) for j in m.track_joints]
    return {k: np.array([d[k] for d in per_point]) for k in per_point[0]}


def initialize_from_solution(m, source) -> dict:
    """Initialize a model from a solved model on another mesh of the same sector (mesh
    continuation): every variable indexed by the track coordinate is interpolated linearly in
    ``s``.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        Target model (from :func:`pyomo_lap.ocp.build_model`).
    source : pyomo.environ.ConcreteModel
        Solved model on the same sector (any ``nfe``, ``ncp``, scheme).

    Returns
    -------
    dict
        ``{"status": "ok", "variables": count}``.

    Raises
    ------
    ValueError
        If the two models do not cover the same sector.
    """
    if abs(m.sector_length - source.sector_length) > 1e-9 or \
            abs(m.options.start - source.options.start) > 1e-9:
        raise ValueError(f"source sector [{source.options.start}, +{source.sector_length}] m "
                         f"differs from the target's [{m.options.start}, +{m.sector_length}] m")
    s_src = np.array(sorted(source.s))
    s_dst = np.array(sorted(m.s))
    count = 0
    for var in source.component_objects(pyo.Var, descend_into=False):
        if not var.is_indexed() or var.index_set() is not source.s:
            continue
        target = m.component(var.local_name)
        if target is None:
            continue
        vals = np.array([pyo.value(var[s], exception=False) if var[s].value is not None else np.nan
                         for s in s_src], dtype=float)
        ok = np.isfinite(vals)
        if ok.sum() < 2:
            continue
        new = np.interp(s_dst, s_src[ok], vals[ok])
        for s, v in zip(s_dst, new):
            vd = target[s]
            if vd.fixed:
                continue
            if vd.lb is not None:
                v = max(v, vd.lb)
            if vd.ub is not None:
                v = min(v, vd.ub)
            vd.set_value(float(v), skip_validation=True)
            count += 1
    return {"status": "ok", "variables": count}
