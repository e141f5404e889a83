r"""A-posteriori checks of a collocation solution: the dynamics residual between collocation
points, the local error of each element by shooting, and mesh refinement.

Direct collocation imposes the DAE only at the collocation points. Between them the solution
is the interpolating polynomial of each finite element, and nothing makes it satisfy the
dynamics. Two measures of how far it is from doing so:

* **residual** (:func:`collocation_defects`): in element :math:`j` the states are the Lagrange
  polynomial :math:`x_j(s)` through the element's start and its collocation points (exactly
  the polynomial pyomo.dae's Lagrange collocation uses). At Gauss points between the
  collocation points the algebraic loop is solved at :math:`x_j(s)` with the element's
  controls :math:`u_j(s)` (controls that are states, OCP option ``control_form = "state"``:
  the polynomial through the element's start and collocation points, like the states;
  ``control_form = "point"``: the polynomial of degree ``ncp - 1`` through the controls at
  the element's collocation points, :class:`pyomo_lap.verify.controls.CollocationControls`, a
  constant for piecewise-constant controls), and the residual of the spatial DAE (39)

  .. math::
      r_i(s) = \frac{dx_{j,i}}{ds}(s) - \frac{f_i(x_j(s), u_j(s), z(s))}{\dot q_1(s)}

  (:math:`f = (\dot q_2..\dot q_6, \ddot q_1..\ddot q_6, 1)`) is integrated over the element:
  :math:`\eta_{j,i} = \int_{e_j} |r_i|\,ds` is the error the element's polynomial makes in
  state :math:`i` [state unit]. The scaled error of the element is
  :math:`\varepsilon_j = \max_i \eta_{j,i} / (1 + \max_k |x_i(s_k)|)` (Betts, *Practical
  Methods for Optimal Control*, sec. 4.7);
* **shooting** (``shooting=True``): from the state at each element's start the time-domain
  simulation (:mod:`pyomo_lap.verify.simulate`) with the element's controls :math:`u_j(s)` is
  integrated to the element's end; the difference from the collocation state there is the
  element's local error [state unit] (and the time difference, [s]).

:func:`pyomo_lap.api.refine.refine_mesh` splits the elements whose scaled error exceeds a tolerance, builds the
model on the new mesh (OCP option ``element_boundaries``), initializes it from the solved one
(:func:`pyomo_lap.ocp.transfer.transfer_solution`, the algebraic loop solved at the new points)
and solves it.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np
import pandas as pd

from ..ocp.collocation import element_points, lagrange_basis
from ..ocp.point_functions import CarFunctions, track_vectors

__all__ = ["collocation_defects", "DefectReport", "DEFECT_STATES", "defect_states"]


DEFECT_STATES = ("q2", "q3", "q4", "q5", "q6", "q1_dot", "q2_dot", "q3_dot", "q4_dot",
                 "q5_dot", "q6_dot", "t")
"""States of the spatial DAE whose residual is measured, full model (any model's:
:func:`defect_states`)."""


def defect_states(car) -> tuple:
    """The states of the spatial DAE of the car functions' model (``car.vehicle_model``):
    its joint coordinates besides ``q1``, its rates, and the time (:data:`DEFECT_STATES` for
    the full model)."""
    vm = car.vehicle_model
    return tuple(vm.states) + tuple(vm.rates) + ("t",)


@dataclasses.dataclass
class DefectReport:
    """Result of :func:`collocation_defects`.

    Attributes
    ----------
    elements : DataFrame
        One row per finite element: ``element`` (1..N), ``s_start``, ``s_end``, ``h`` [m],
        ``eta_<state>`` (integrated |residual| [state unit]), ``eps`` (scaled error, the
        refinement criterion [-]), ``worst`` (state giving ``eps``); with shooting also
        ``shoot_<state>`` (local error at the element's end [state unit]) and ``shoot_t`` [s].
    points : DataFrame
        One row per evaluation point: ``s_sector``, ``element``, ``res_<state>``
        [state unit / m].
    node_residual : dict
        Largest |residual| at the collocation points per state [state unit / m]: the DAE as the
        solver satisfied it (tolerance-level; a check of this function against the model).
    weights : dict
        ``1 + max |x_i|`` per state.
    wall_time_s : float
    states : tuple of str
        The states measured (:func:`defect_states`).
    """

    elements: pd.DataFrame
    points: pd.DataFrame
    node_residual: dict
    weights: dict
    wall_time_s: float
    states: tuple = DEFECT_STATES

    def summary(self) -> dict:
        """Headline numbers (JSON-friendly)."""
        el = self.elements
        k = int(el["eps"].idxmax())
        out = {
            "n_elements": int(len(el)),
            "eps_max": float(el["eps"].max()), "eps_median": float(el["eps"].median()),
            "eps_max_element": int(el["element"].iloc[k]),
            "eps_max_at_s_m": float(0.5 * (el["s_start"].iloc[k] + el["s_end"].iloc[k])),
            "eps_max_state": str(el["worst"].iloc[k]),
            "eta_max": {st: float(el[f"eta_{st}"].max()) for st in self.states},
            "node_residual_max": {k2: float(v) for k2, v in self.node_residual.items()},
            "wall_time_s": self.wall_time_s,
        }
        if "shoot_q2" in el.columns:
            out["shoot_max"] = {st: float(np.nanmax(np.abs(el[f"shoot_{st}"])))
                                for st in self.states}
            out["shoot_time_sum_s"] = float(np.nansum(el["shoot_t"]))
        return out




def _from_source(source, ncp, scheme, start, interpolation=None):
    """Trajectory DataFrame, ncp, scheme, start and the controls' interpolation
    (``'state'`` or ``'polynomial'``) from a model or a DataFrame."""
    if interpolation not in (None, "auto", "polynomial", "constant", "state"):
        raise ValueError(f"interpolation = {interpolation!r}: expected 'auto', 'polynomial', "
                         "'constant' or 'state'")
    if isinstance(source, pd.DataFrame):
        df = source
        if start is None:
            start = float(df["s"].iloc[0]) if "s" in df.columns else 0.0
        if ncp is None:
            counts = np.bincount(df["element"].to_numpy().astype(int))
            ncp = int(counts[1]) if scheme == "LAGRANGE-RADAU" else int(counts[1]) - 1
        return df, ncp, scheme, start, "state" if interpolation == "state" else "polynomial"
    from ..results.table import trajectory_dataframe
    m = source
    opts = m.problem.options
    if interpolation is None:
        interpolation = "state" if getattr(opts, "control_form", "point") == "state" else "polynomial"
    return (trajectory_dataframe(m), opts.ncp, opts.scheme,
            opts.start if start is None else start,
            "state" if interpolation == "state" else "polynomial")


def collocation_defects(source, track, vehicle, *, ncp: Optional[int] = None,
                        scheme: str = "LAGRANGE-RADAU", start: Optional[float] = None,
                        n_gauss: Optional[int] = None, shooting: bool = False,
                        car: Optional[CarFunctions] = None,
                        interpolation: Optional[str] = None,
                        node_residuals: bool = True, model: Optional[str] = None) -> DefectReport:
    r"""Residual of the dynamics of a collocation solution between its collocation points.

    Parameters
    ----------
    source : pyomo model or DataFrame
        A solved full model (:func:`pyomo_lap.ocp.build.build_model`) or its trajectory
        (:func:`pyomo_lap.results.table.trajectory_dataframe`, or ``trajectory.csv`` read with
        :func:`pyomo_lap.results.table.read_trajectory`: every number at full precision).
    track, vehicle
        Those the model was built with.
    ncp : int, optional
        Collocation points per element (read from the model; for a DataFrame inferred from
        the points per element).
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
        For a DataFrame (a model knows its own).
    start : float, optional
        Track coordinate of the sector start [m].
    n_gauss : int, optional
        Gauss-Legendre points per element for the integral (default ``ncp + 2``).
    shooting : bool
        Also integrate each element in time from its start (local error by shooting; about
        10-20 ms per element).
    car : CarFunctions, optional
    interpolation : {'state', 'polynomial', 'auto', 'constant'}, optional
        The controls between the points: ``'state'``, the polynomial through the element's
        start and collocation points (controls that are states, OCP option
        ``control_form = "state"``); any other value, the polynomial through the
        collocation points only (``control_form = "point"``; a constant for constant
        controls). Default: a model's ``control_form``; ``'polynomial'`` for a table (whose
        ``summary.json`` says it under ``ocp_options``).
    node_residuals : bool
        Also the residual at the collocation points (:attr:`DefectReport.node_residual`, the
        solver's tolerance; a third of the time). False: zeros (the self-check of a solve).
    model : str, optional
        The vehicle model (a model's own; ``"full"`` for a table): any model that records
        its rows (:func:`pyomo_lap.verify.simulate.car_functions`); the states measured are
        its (:func:`defect_states`).

    Returns
    -------
    DefectReport

    Raises
    ------
    ValueError
        Unknown scheme or interpolation, or a trajectory whose elements do not have the
        expected points.
    """
    t0 = time.perf_counter()
    if scheme not in ("LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"):
        raise ValueError(f"scheme = {scheme!r}: expected 'LAGRANGE-RADAU' or 'LAGRANGE-LEGENDRE'")
    df, ncp, scheme, start, interpolation = _from_source(source, ncp, scheme, start, interpolation)
    state_controls = interpolation == "state"
    if car is None:
        from .simulate import car_functions
        if model is None and not isinstance(source, pd.DataFrame):
            model = source.problem.vehicle_model.name
        car = car_functions(vehicle, model or "full")
    states = defect_states(car)
    el = df["element"].to_numpy().astype(int)
    s = df["s_sector"].to_numpy(float)
    X = df[list(states)].to_numpy(float)          # (M, 12) for the full model
    Z = df[list(car.algebraic)].to_numpy(float)
    U = df[list(car.vehicle_model.controls)].to_numpy(float)
    weights = {st: 1.0 + float(np.max(np.abs(X[:, k]))) for k, st in enumerate(states)}
    wvec = np.array([weights[st] for st in states])
    ng = n_gauss or ncp + 2
    gx, gw = np.polynomial.legendre.leggauss(ng)
    gx, gw = 0.5 * (gx + 1.0), 0.5 * gw
    node_sets, eval_s = _element_nodes(el, s, scheme, ncp, gx)
    sector = _Sector(car=car, s=s, el=el, X=X, Z=Z, U=U,
                     tv_nodes=track_vectors(track.evaluate(start + s)),
                     tv_eval=track_vectors(track.evaluate(start + eval_s)), gx=gx, gw=gw,
                     state_controls=state_controls, node_residuals=node_residuals, states=states)
    elements, points, node_res = _all_element_defects(sector, node_sets, wvec)
    if shooting:
        _shooting(elements, df, track, vehicle, car, start, node_sets, el, state_controls)
    return DefectReport(elements=elements, points=points,
                        node_residual=dict(zip(states, node_res)), weights=weights,
                        wall_time_s=time.perf_counter() - t0, states=states)


@dataclasses.dataclass
class _Sector:
    """The solution :func:`collocation_defects` checks: its points' ``s_sector`` [m],
    elements, states (:func:`defect_states`), algebraic variables and controls (one row per
    point), the track at the points and at the Gauss points, and the Gauss rule on [0, 1]."""

    car: CarFunctions
    s: np.ndarray
    el: np.ndarray
    X: np.ndarray
    Z: np.ndarray
    U: np.ndarray
    tv_nodes: np.ndarray
    tv_eval: np.ndarray
    gx: np.ndarray
    gw: np.ndarray
    state_controls: bool
    node_residuals: bool = True
    states: tuple = DEFECT_STATES


def _spatial_rhs(car, trk, x, u, zguess):
    """``f / q1_dot`` for the states of :func:`defect_states`, and ``z``."""
    n = car.n_q
    q = np.r_[0.0, x[0:n - 1]]
    qd = x[n - 1:2 * n - 1]
    z, qdd = car.solve(trk, q, qd, u, zguess)
    f = np.r_[qd[1:], qdd, 1.0]
    return f / qd[0], z


def _spatial_rhs_many(car, trk, x, u, zguess) -> tuple:
    """:func:`_spatial_rhs` at many points at once (:meth:`CarFunctions.solve_many`):
    ``f / q1_dot`` (k, 12) and a mask of the points whose algebraic loop was solved."""
    k, n = len(x), car.n_q
    q = np.hstack([np.zeros((k, 1)), x[:, 0:n - 1]])
    qd = x[:, n - 1:2 * n - 1]
    _, qdd, ok = car.solve_many(trk, q, qd, u, zguess)
    f = np.hstack([qd[:, 1:], qdd, np.ones((k, 1))])
    return f / qd[:, :1], ok


def _all_element_defects(c: _Sector, node_sets, wvec) -> tuple:
    """The rows of :attr:`DefectReport.elements` and :attr:`DefectReport.points` of every
    element, and the largest residual at the collocation points (zeros without
    ``c.node_residuals``): the states' and controls' polynomials at the Gauss points element
    by element, the car's equations at all of them in one batch (the algebraic loop of each
    started from its element's first collocation point)."""
    ng, ns = len(c.gx), len(c.states)
    n_el = len(node_sets)
    xs = np.empty((n_el, ng, ns))
    dxs = np.empty_like(xs)
    us = np.empty((n_el, ng, c.U.shape[1]))
    a = np.empty(n_el)
    b = np.empty(n_el)
    node_res = np.zeros(ns)
    nodes_rows, nodes_dx = [], []
    cache = {}                       # the Lagrange matrices of the elements' relative nodes
    for j, nodes in enumerate(node_sets):
        a[j], b[j] = c.s[nodes[0]], c.s[np.flatnonzero(c.el == j + 1)[-1]]
        h = b[j] - a[j]
        xi = (c.s[nodes] - a[j]) / h
        Xn = c.X[nodes]
        key = tuple(np.round(xi, 12))
        if key not in cache:
            cache[key] = lagrange_basis(xi, c.gx, derivative=True)
        L, dL = cache[key]
        xs[j], dxs[j] = L @ Xn, dL @ Xn / h
        if c.state_controls:
            us[j] = L @ c.U[nodes]
        else:
            Lu = lagrange_basis(xi[1:], c.gx)
            us[j] = Lu @ c.U[nodes[1:]]
        if c.node_residuals:
            _, dLn = lagrange_basis(xi, xi[1:], derivative=True)
            nodes_rows.append(nodes[1:])
            nodes_dx.append(dLn @ Xn / h)
    first = np.array([nodes[1] for nodes in node_sets])
    f, ok = _spatial_rhs_many(c.car, c.tv_eval, xs.reshape(-1, ns), us.reshape(n_el * ng, -1),
                              np.repeat(c.Z[first], ng, axis=0))
    res = dxs.reshape(-1, ns) - f
    res[~ok] = np.nan
    if c.node_residuals:
        rows = np.concatenate(nodes_rows)
        fn, okn = _spatial_rhs_many(c.car, c.tv_nodes[rows], c.X[rows], c.U[rows], c.Z[rows])
        rn = np.abs(np.concatenate(nodes_dx) - fn)[okn]
        if rn.size:
            node_res = rn.max(axis=0)
    h = b - a
    eta = h[:, None] * np.einsum("g,jgi->ji", c.gw, np.abs(res.reshape(n_el, ng, ns)))
    scaled = eta / wvec
    worst = np.argmax(np.where(np.isfinite(scaled), scaled, -np.inf), axis=1)
    elements = pd.DataFrame({"element": np.arange(1, n_el + 1), "s_start": a, "s_end": b, "h": h,
                             **{f"eta_{st}": eta[:, i] for i, st in enumerate(c.states)},
                             "eps": scaled[np.arange(n_el), worst],
                             "worst": [c.states[i] for i in worst]})
    points = pd.DataFrame({"s_sector": (a[:, None] + h[:, None] * c.gx[None, :]).ravel(),
                           "element": np.repeat(np.arange(1, n_el + 1), ng),
                           **{f"res_{st}": res[:, i] for i, st in enumerate(c.states)}})
    return elements, points, node_res


def _element_nodes(el, s, scheme: str, ncp: int, gx) -> tuple:
    """The rows of each element's polynomial (its start, then its collocation points), and
    the Gauss points ``gx`` (on [0, 1]) of every element, element after element [m].

    Raises
    ------
    ValueError
        An element without ``ncp`` collocation points.
    """
    eval_s, node_sets = [], []
    groups = element_points(el, s, scheme)
    for j in range(1, int(el.max()) + 1):
        idx = np.flatnonzero(el == j)
        i0, pts = groups[j - 1]                             # the element's start (previous end)
        if len(pts) != ncp:
            raise ValueError(f"element {j} has {len(pts)} collocation points, expected ncp = {ncp}")
        node_sets.append(np.r_[i0, pts])
        a, b = s[i0], s[idx[-1]]
        eval_s.append(a + (b - a) * gx)
    return node_sets, np.concatenate(eval_s)


def _shooting(elements, df, track, vehicle, car, start, node_sets, el, state_controls=False):
    from .controls import CollocationControls
    from .simulate import simulate
    s = df["s_sector"].to_numpy(float)
    states, n = defect_states(car), car.n_q
    U = df[list(car.vehicle_model.controls)].to_numpy(float)
    cols = {st: np.full(len(elements), np.nan) for st in states}
    for j in range(1, len(elements) + 1):
        i0 = node_sets[j - 1][0]
        i1 = np.flatnonzero(el == j)[-1]
        r0, r1 = df.iloc[i0], df.iloc[i1]
        x0 = np.r_[start + s[i0], [r0[k] for k in states[:2 * n - 1]]]
        # the nodes of the element's control polynomial: start and collocation points
        # (controls that are states), or the collocation points
        pts = node_sets[j - 1] if state_controls else node_sets[j - 1][1:]
        ctl = CollocationControls("s", [start + s[i0] - 1.0, start + s[i1] + 1.0],
                                  [start + s[pts]], [U[pts]])
        try:
            sim = simulate(track, vehicle, ctl, x0, t_end=10.0 * (r1["t"] - r0["t"]) + 1.0,
                           s_end=start + s[i1], z0=r0[list(car.algebraic)].to_numpy(float),
                           rtol=1e-9, max_step=0.05, car=car, model=car.model, tyres=car.tyres)
        except ValueError:
            continue
        if sim.status != "end":
            continue
        xe = sim.x[-1]
        for k, st in enumerate(states[:-1]):
            cols[st][j - 1] = xe[k + 1] - r1[st]
        cols["t"][j - 1] = (sim.t[-1] - sim.t[0]) - (r1["t"] - r0["t"])
    for st in states:
        elements[f"shoot_{st}"] = cols[st]
