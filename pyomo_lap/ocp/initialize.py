"""Initial guess for the OCP, from a cold start (no earlier solution needed).

Steps (each returns nothing and writes into the model's variables):

1. speed: the quasi-steady point-mass speed profile along the centreline
   (:func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`), honouring a fixed entry speed;
2. states: on the centreline (``q2 = q3 = 0``), static heave sag plus the aerodynamic sag,
   no pitch or roll, rates zero except ``q1_dot``; time by quadrature of ``1/q1_dot``;
3. controls: the longitudinal force a point mass needs for the profile's acceleration, drag
   and grade, split into traction (capped by power) and braking; steer from the kinematic
   (Ackermann) angle ``l * Omega_z``;
4. algebraic variables: a fixed-point iteration of the load and in-plane equations
   (35)-(36) (:func:`pyomo_lap.vehicle.car.solve_loop`) evaluated with floats by the same code
   that builds the Pyomo model (the model's record of its rows, evaluated through CasADi,
   :class:`pyomo_lap.ocp.point_functions.CarFunctions`);
5. derivative variables: the right-hand sides of the spatial DAE (39) at the guess.

Steps 1-3 (:func:`cold_start_profile`) are the same for every vehicle model; steps 4-5 are
the model's own (``initialize`` of its :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`: the
full model's :func:`pyomo_lap.ocp.full_model.initialize_full_model`, the single-track model's
:func:`pyomo_lap.ocp.single_track.initialize_single_track`), reached through
:func:`initialize_model`. This module imports no vehicle model.
"""
from __future__ import annotations

import numpy as np

from ..util.suffixes import forget_multipliers
from ..vehicle.speed_profile import quasi_steady_speed
from .common import initialize_control_rates
from .transfer import Solution, model_states, transfer_solution

__all__ = ["initialize_model", "initialize_from_solution", "initialize_from_trajectory",
           "cold_start_profile"]


def initialize_model(m, **kwargs) -> dict:
    """Write a cold-start initial guess into a model from :func:`pyomo_lap.ocp.build.build_model`:
    the ``initialize`` of the model's vehicle model (``m.problem.vehicle_model``, a
    :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`): for the full model
    :func:`pyomo_lap.ocp.full_model.initialize_full_model` (the steps above), for the
    single-track model :func:`pyomo_lap.ocp.single_track.initialize_single_track`.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    **kwargs
        Passed on (full model: ``fixed_point_iterations``, iterations of the algebraic loop
        per point, default 4).

    Returns
    -------
    dict
        ``{"status": "ok", "estimated_time_s": float, "max_algebraic_residual": float}``.
    """
    vm = getattr(getattr(m, "problem", None), "vehicle_model", None)
    if vm is None:
        raise ValueError("the model has no vehicle model (m.problem.vehicle_model): build it with "
                         "pyomo_lap.ocp.build.build_model")
    forget_multipliers(m)
    out = vm.initialize(m, **kwargs)
    initialize_control_rates(m, vm.controls)
    return out


def cold_start_profile(m) -> dict:
    """Steps 1-3 of the cold start (module docstring) for a model of either vehicle model.

    Returns
    -------
    dict of (n,) arrays over the sorted points of ``m.s``
        ``v`` speed [m/s], ``t`` time [s], ``sag`` static plus aerodynamic heave [m], ``fx``
        point-mass longitudinal force [N], ``f_xa``, ``f_xb`` [N], ``delta`` kinematic steer
        [rad].
    """
    p = m.vehicle.built_for
    tp = m.problem.track_points
    sigma = np.array(sorted(m.s))
    closed = bool(m.problem.options.periodic)
    v = quasi_steady_speed(p, sigma, tp.omega, tp.rotation, closed=closed,
                           v_start=m.problem.initial_speed, v_min=m.problem.options.v_min)
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
    if getattr(p, "combined_slip", "constraint") == "ellipse":
        # a combined-slip tyre loses its lateral force to its longitudinal one: a guess asking
        # an axle for more than the friction ellipse leaves it (the quasi-steady profile's
        # corner exits and entries) starts the solver far from any feasible point; keep each
        # axle's longitudinal force within half of what the ellipse leaves
        normal = p.m * p.gravity * tp.rotation[:, 2, 2] + kd * v ** 2
        lateral = p.m * v ** 2 * np.abs(tp.omega[:, 2]) / np.maximum(p.mu_y0 * normal, 1e-9)
        left = p.mu_x0 * np.maximum(normal, 0.0) * np.sqrt(np.clip(1.0 - lateral ** 2, 0.0, 1.0))
        rear = p.a1 / p.l
        f_xa = np.minimum(f_xa, 0.5 * rear * left)
        f_xb = np.maximum(f_xb, -0.5 * left)
    delta = np.clip(p.l * tp.omega[:, 2], -0.9 * p.delta_max, 0.9 * p.delta_max)
    return {"v": v, "t": t, "sag": sag, "fx": fx, "f_xa": f_xa, "f_xb": f_xb, "delta": delta}


def initialize_from_solution(m, source) -> dict:
    """Initialize a model from a solved model of the same sector on the same or another mesh,
    of the same or another vehicle model (the single-track start of the full model, the finite
    differences of the sensitivities): every variable the two share that is indexed by the
    track coordinate is moved by the source's collocation polynomials, the derivative
    variables as variables of their own (:func:`pyomo_lap.ocp.transfer.transfer_solution`
    with ``derivatives="values"``: on the same mesh, the source's very values), clipped to the
    bounds; the multipliers forgotten.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        Target model (from :func:`pyomo_lap.ocp.build.build_model`).
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
    if abs(m.problem.sector_length - source.problem.sector_length) > 1e-9 or \
            abs(m.problem.options.start - source.problem.options.start) > 1e-9:
        raise ValueError(f"source sector [{source.problem.options.start}, +{source.problem.sector_length}] m "
                         f"differs from the target's [{m.problem.options.start}, +{m.problem.sector_length}] m")
    out = transfer_solution(m, Solution.from_model(source), derivatives="values")
    return {"status": "ok", "variables": out["variables"]}


def initialize_from_trajectory(m, df) -> dict:
    """Initialize a model from the mesh rows of a solved model of the same sector (a results
    folder's ``trajectory.csv`` read with ``pyomo_lap.results.table.read_trajectory(folder,
    mesh=True)``), on the same or another mesh: every column that is a variable of the model
    (states, rates, time, controls, algebraic variables) by the table's collocation
    polynomials (its elements from its column ``element``), the derivative variables of the
    states by the polynomials' derivatives
    (:func:`pyomo_lap.ocp.transfer.transfer_solution`); on the same mesh the model holds the
    solution (to the table's precision).

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        From :func:`pyomo_lap.ocp.build.build_model`.
    df : pandas.DataFrame
        Columns ``s_sector``, ``element``, the states, controls, algebraic variables, ``t``.

    Returns
    -------
    dict
        ``{"status": "ok", "variables": count}``.

    Raises
    ------
    ValueError
        A missing column, a table that does not cover the model's sector, or rows that are
        not a mesh (:meth:`pyomo_lap.ocp.transfer.Solution.from_table`).
    """
    s_src = df["s_sector"].to_numpy(dtype=float)
    if abs(s_src[0]) > 1e-6 or abs(s_src[-1] - m.problem.sector_length) > 1e-3:
        raise ValueError(f"trajectory covers [{s_src[0]}, {s_src[-1]}] m of the sector, the model "
                         f"[0, {m.problem.sector_length}] m")
    vm = m.problem.vehicle_model
    names = vm.variables
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise ValueError(f"trajectory lacks column(s) {missing}")
    sol = Solution.from_table(df[["s_sector", "element", *names]], scheme=m.problem.options.scheme,
                              states=model_states(m))
    out = transfer_solution(m, sol)
    return {"status": "ok", "variables": out["variables"]}
