r"""The arithmetic of orthogonal collocation, written once: the Lagrange basis of an element's
nodes (values and first derivatives, :func:`lagrange_basis`), its integrals (the quadrature
and the integration weights, :func:`integration_weights`), the finite elements of a mesh and
the points each element's polynomials pass through (:class:`CollocationGrid` from a model's
``ContinuousSet`` or from the points of a results table, :func:`element_points` from a
table's ``element`` column), and the values of the collocation polynomials anywhere in the
sector (:func:`collocation_interpolate`). As dymos keeps ``utils/lagrange.py`` and
``transcriptions/grid_data.py``: every module that evaluates, integrates or differentiates a
collocation polynomial (the OCP's penalties, energy integrals and hybrid battery, the
racecar's controls, the defects, the replay's controls, the fixed-step channels, the moves
of a solution between meshes) uses these.

Conventions (pyomo.dae's ``LAGRANGE-RADAU`` and ``LAGRANGE-LEGENDRE``): the sector is cut
into finite elements :math:`[a_j, b_j]` of length :math:`h_j`; on each, a state is the
polynomial of degree ``ncp`` through its value at the element's start :math:`a_j` and at the
``ncp`` collocation points (Radau: the last one is :math:`b_j`; Legendre: all strictly inside,
the end value then the polynomial's), an algebraic variable or a control given at the
collocation points the polynomial of degree ``ncp - 1`` through those. With
:math:`\tau = (s - a_j)/h_j` and the Lagrange polynomials :math:`\ell_k(\tau)` of the nodes
:math:`\tau_k`, :math:`x(s) = \sum_k \ell_k(\tau)\,x_k`,
:math:`dx/ds = \sum_k \ell_k'(\tau)\,x_k / h_j` and
:math:`\int_{a_j}^{s} f = h_j \sum_k \left(\int_0^{\tau}\ell_k\right) f_k`.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

__all__ = ["lagrange_basis", "barycentric_weights", "barycentric_value", "integration_weights", "quadrature_weights", "Element",
           "CollocationGrid", "element_points", "collocation_interpolate", "snap_breaks", "SCHEMES",
           "INTERPOLATION_KINDS", "BOUNDARY_SIDES", "ElementPolynomials", "element_polynomials"]

SCHEMES = ("LAGRANGE-RADAU", "LAGRANGE-LEGENDRE")
"""pyomo.dae's orthogonal collocation schemes."""

BOUNDARY_SIDES = ("start", "end")
"""Which element a query at an inner element boundary belongs to in :func:`collocation_interpolate`
(and :meth:`CollocationGrid.element_of`): the one that starts there or the one that ends there.
The values are the same (a mesh point's value); the derivatives differ, the polynomials being
continuous only."""

INTERPOLATION_KINDS = ("state", "algebraic", "all")
"""What :func:`collocation_interpolate` passes a polynomial through on each element:
``"state"`` the start and the collocation points, ``"algebraic"`` the collocation points,
``"all"`` every mesh point of the closed element."""

_TOL = 1e-9
"""Positions closer than this times the sector length (at least 1 m) are the same point."""


def lagrange_basis(nodes, x, derivative: bool = False):
    r"""The Lagrange polynomials through ``nodes`` at ``x`` (and their first derivatives).

    :math:`\ell_k(x) = \prod_{j \ne k} (x - x_j) / \prod_{j \ne k} (x_k - x_j)`, so that
    ``L @ values`` interpolates and ``dL @ values`` differentiates.

    Parameters
    ----------
    nodes : (K,) array_like
        Distinct nodes (any scale; usually :math:`\tau \in [0, 1]`).
    x : float or (Q,) array_like
        Where to evaluate.
    derivative : bool
        Also return :math:`\ell_k'(x)`.

    Returns
    -------
    L : ndarray (Q, K)
        Row ``i`` holds :math:`\ell_k(x_i)`.
    dL : ndarray (Q, K)
        Only with ``derivative=True``: :math:`\ell_k'(x_i)` (per unit of ``x``).

    Raises
    ------
    ValueError
        Nodes that are not distinct.
    """
    nodes = np.asarray(nodes, dtype=float).ravel()
    xi = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
    n = len(nodes)
    if n > 1 and np.min(np.abs(np.subtract.outer(nodes, nodes))[~np.eye(n, dtype=bool)]) == 0.0:
        raise ValueError(f"nodes = {nodes.tolist()}: expected distinct nodes")
    L = np.ones((len(xi), n))
    dL = np.zeros((len(xi), n))
    for k in range(n):
        others = [nodes[j] for j in range(n) if j != k]
        den = np.prod([nodes[k] - o for o in others])
        for o in others:
            L[:, k] *= (xi - o)
        if derivative:
            for j in range(len(others)):
                term = np.ones_like(xi)
                for jj, oo in enumerate(others):
                    if jj != j:
                        term = term * (xi - oo)
                dL[:, k] += term
            dL[:, k] /= den
        L[:, k] /= den
    return (L, dL) if derivative else L


def barycentric_weights(nodes) -> np.ndarray:
    r"""The barycentric weights :math:`w_k = 1/\prod_{j \ne k}(x_k - x_j)` of each row of
    ``nodes`` (:func:`barycentric_value` evaluates the interpolating polynomial with them in
    O(K) per point: what a control law called at every step of an ODE solver needs).

    Parameters
    ----------
    nodes : (N, K) array_like
        N sets of K distinct nodes.

    Returns
    -------
    ndarray (N, K)
    """
    nodes = np.asarray(nodes, dtype=float)
    diff = nodes[:, :, None] - nodes[:, None, :]
    K = nodes.shape[1]
    diff[:, np.arange(K), np.arange(K)] = 1.0
    return 1.0 / np.prod(diff, axis=2)


def barycentric_value(nodes, weights, values, x: float) -> np.ndarray:
    r"""The interpolating polynomial through ``(nodes, values)`` at ``x`` (first barycentric
    form, :math:`p(x) = \prod_j (x - x_j) \sum_k w_k y_k / (x - x_k)`; a node's own value
    exactly at a node).

    Parameters
    ----------
    nodes : (K,) ndarray
    weights : (K,) ndarray
        :func:`barycentric_weights` of ``nodes``.
    values : (K,) or (K, C) ndarray
    x : float

    Returns
    -------
    ndarray () or (C,)
    """
    d = x - nodes
    hit = np.flatnonzero(d == 0.0)
    if len(hit):
        return np.array(values[hit[0]], copy=True)
    return (np.prod(d) * weights / d) @ values


def integration_weights(nodes, t) -> np.ndarray:
    r"""Weights of the integral of the interpolating polynomial from 0 to ``t``:
    :math:`c_k(t) = \int_0^{t} \ell_k(\tau)\,d\tau`, so that :math:`\int_0^t p = \sum_k c_k
    y_k` for the polynomial :math:`p` through :math:`(\tau_k, y_k)`.

    Parameters
    ----------
    nodes : (K,) array_like
        Distinct nodes on the unit element.
    t : float or (Q,) array_like
        Upper limits.

    Returns
    -------
    ndarray (Q, K)
    """
    nodes = np.asarray(nodes, dtype=float).ravel()
    t = np.atleast_1d(np.asarray(t, dtype=float)).ravel()
    out = np.empty((len(t), len(nodes)))
    for j in range(len(nodes)):
        others = np.delete(nodes, j)
        coef = np.poly(others) / np.prod(nodes[j] - others) if len(others) else np.array([1.0])
        out[:, j] = np.polyval(np.polyint(coef), t)
    return out


def quadrature_weights(nodes) -> np.ndarray:
    r"""The quadrature of the unit element on ``nodes``: :math:`b_k = \int_0^1 \ell_k`
    (Radau or Gauss nodes: exact for polynomials of degree :math:`2K - 2` or :math:`2K - 1`).

    Parameters
    ----------
    nodes : (K,) array_like

    Returns
    -------
    ndarray (K,)
    """
    return integration_weights(nodes, 1.0)[0]


@dataclasses.dataclass(frozen=True)
class Element:
    """One finite element of a :class:`CollocationGrid`.

    Attributes
    ----------
    a, b : float
        Its start and end [m].
    start : int
        Index (into the grid's points) of the point at ``a``.
    inside : ndarray of int
        Indices of the points strictly inside.
    nodes : ndarray of int
        Indices of its collocation points: ``inside`` and, for Radau, the point at ``b``.
    end : int
        Index of the point at ``b``.
    """

    a: float
    b: float
    start: int
    inside: np.ndarray
    nodes: np.ndarray
    end: int

    @property
    def h(self) -> float:
        """Its length [m]."""
        return self.b - self.a

    @property
    def state_points(self) -> np.ndarray:
        """Indices of the points its state polynomials pass through: the start, then the
        collocation points."""
        return np.r_[self.start, self.nodes]


class CollocationGrid:
    """The finite elements of a collocation mesh and their points (dymos's ``GridData``).

    Parameters
    ----------
    points : (M,) array_like
        Every point of the mesh [m] (element boundaries and collocation points), increasing.
    breaks : (N+1,) array_like
        The element boundaries [m], increasing, each one of ``points``.
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}

    Raises
    ------
    ValueError
        A scheme not in :data:`SCHEMES`, positions that do not increase, a boundary that is no
        point, or an element without collocation points.
    """

    def __init__(self, points, breaks, scheme: str = "LAGRANGE-RADAU"):
        scheme = str(scheme).upper()
        if scheme not in SCHEMES:
            raise ValueError(f"scheme = {scheme!r}: expected one of {', '.join(SCHEMES)}")
        self.points = np.asarray(points, dtype=float)
        self.breaks = np.asarray(breaks, dtype=float)
        self.scheme = scheme
        if np.any(np.diff(self.points) <= 0) or np.any(np.diff(self.breaks) <= 0):
            raise ValueError("the mesh points and the element boundaries must increase")
        tol = 1e-12 * max(1.0, float(abs(self.breaks[-1])))
        where = np.searchsorted(self.points, self.breaks)
        where = np.clip(where, 0, len(self.points) - 1)
        near = np.abs(self.points[where] - self.breaks) <= 1e-9 * max(1.0, abs(self.breaks[-1]))
        if not near.all():
            bad = self.breaks[~near][0]
            raise ValueError(f"element boundary {bad:g} m is not a point of the mesh")
        self.elements = []
        for j, (a, b) in enumerate(zip(self.breaks[:-1], self.breaks[1:])):
            inside = np.flatnonzero((self.points > a + tol) & (self.points < b - tol))
            nodes = np.r_[inside, where[j + 1]] if scheme == "LAGRANGE-RADAU" else inside
            if len(nodes) == 0:
                raise ValueError(f"element [{a:g}, {b:g}] m has no collocation points")
            self.elements.append(Element(float(a), float(b), int(where[j]), inside,
                                         nodes.astype(int), int(where[j + 1])))

    @classmethod
    def from_set(cls, cs, scheme: Optional[str] = None) -> "CollocationGrid":
        """The grid of a discretized pyomo.dae ``ContinuousSet`` (its points and finite
        elements; the scheme from its discretization info unless given)."""
        if scheme is None:
            scheme = cs.get_discretization_info().get("scheme", "LAGRANGE-RADAU")
        return cls(sorted(float(x) for x in cs), sorted(float(x) for x in cs.get_finite_elements()),
                   scheme)

    @classmethod
    def from_model(cls, m) -> "CollocationGrid":
        """The grid of a built model's ``m.s`` (:func:`pyomo_lap.ocp.build.build_model`), with
        its scheme (``m.problem.options.scheme``)."""
        return cls.from_set(m.s, m.problem.options.scheme)

    def tau(self, element: Element, indices) -> np.ndarray:
        """The positions of ``indices`` scaled to ``element``: :math:`(s - a)/h`."""
        return (self.points[np.asarray(indices)] - element.a) / element.h

    def element_of(self, s, boundary: str = "start") -> np.ndarray:
        """Index of the element each position ``s`` lies in: an inner boundary belongs to the
        element that starts there (``boundary="start"``) or to the one that ends there
        (``"end"``: the element whose Radau collocation equation holds there); the sector's
        start always to the first element, its end to the last.

        Raises
        ------
        ValueError
            ``boundary`` not ``"start"`` or ``"end"``.
        """
        if boundary not in BOUNDARY_SIDES:
            raise ValueError(f"boundary = {boundary!r}: expected one of {', '.join(BOUNDARY_SIDES)}")
        s = np.asarray(s, dtype=float)
        side = "right" if boundary == "start" else "left"
        return np.clip(np.searchsorted(self.breaks, s, side=side) - 1, 0, len(self.elements) - 1)

    def quadrature(self) -> dict:
        r"""``{point: w}`` [m] with :math:`\int f\,ds \approx \sum w_k f(s_k)` over the
        collocation points of every element (:func:`quadrature_weights` times :math:`h`); the
        sector's first point (not a collocation point) has none."""
        out = {}
        for e in self.elements:
            w = quadrature_weights(self.tau(e, e.nodes))
            for i, wk in zip(e.nodes, w):
                s = float(self.points[i])
                out[s] = out.get(s, 0.0) + float(e.h * wk)
        return out

    def integration_rows(self) -> list:
        r"""The collocation of a state without feedback: ``(point, start, {node: c})`` for
        every point past each element's start, with :math:`x(\text{point}) = x(\text{start})
        + \sum c_k f(\text{node}_k)`, :math:`c_k = h\,\int_0^{\tau}\ell_k` [m] over the
        element's collocation points."""
        out = []
        for e in self.elements:
            tau = self.tau(e, e.nodes)
            pts = np.r_[e.inside, e.end]
            C = e.h * integration_weights(tau, self.tau(e, pts))
            for i, c in zip(pts, C):
                out.append((float(self.points[i]), float(e.a),
                            {float(self.points[k]): float(ck) for k, ck in zip(e.nodes, c)}))
        return out

    def lengths(self) -> dict:
        """``{point: h}`` [m]: the length of the element each point lies in (the first point:
        the first element's)."""
        k = np.clip(np.searchsorted(self.breaks, self.points, side="left") - 1, 0,
                    len(self.elements) - 1)
        h = np.diff(self.breaks)[k]
        return {float(s): float(hh) for s, hh in zip(self.points, h)}


def element_points(element, s, scheme: str = "LAGRANGE-RADAU") -> list:
    """The rows of a trajectory table that carry each finite element's polynomials.

    Parameters
    ----------
    element : (M,) array_like of int
        The table's ``element`` column: 0 for the first point (``s = 0``), ``j >= 1`` for the
        points in :math:`(e_{j-1}, e_j]`.
    s : (M,) array_like
        The points' positions (``s_sector``) [m], non-decreasing.
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
        Radau: every point of an element is a collocation point (the last one is
        :math:`e_j`); Legendre: all but the element's end point :math:`e_j`.

    Returns
    -------
    list of (int, ndarray)
        For each element ``j = 1 .. N``: the row of its start point :math:`e_{j-1}` (the last
        row of element ``j - 1``, the row of element 0 for ``j = 1``) and the rows of its
        collocation points. The states of pyomo.dae's Lagrange collocation, and controls that
        are states (OCP option ``control_form = "state"``), are on element ``j`` the
        polynomial through these ``ncp + 1`` points.

    Raises
    ------
    ValueError
        Positions that decrease, an element without points, or an element whose start point
        is not in the table (element ``j - 1`` absent, e.g. a table that does not begin at
        ``s = 0``).
    """
    el = np.asarray(element).astype(int)
    s = np.asarray(s, float)
    if np.any(np.diff(s) < 0):
        raise ValueError("the trajectory's points must be ordered by s_sector")
    n = int(el.max()) if el.size else 0
    last = {}
    for i, j in enumerate(el):
        last[int(j)] = i                     # the last row of each element (its end point)
    out = []
    for j in range(1, n + 1):
        if j - 1 not in last:
            raise ValueError(f"element {j} has no start point in the trajectory (no row of "
                             f"element {j - 1}); expected a table from s = 0 (element 0)")
        i0 = last[j - 1]
        idx = np.flatnonzero((el == j) & (s > s[i0] + 1e-9))   # a repeated boundary is not a point
        if len(idx) == 0:
            raise ValueError(f"trajectory has no points in element {j}")
        if scheme == "LAGRANGE-LEGENDRE" and len(idx) > 1:
            idx = idx[:-1]
        out.append((i0, idx))
    return out


@dataclasses.dataclass
class ElementPolynomials:
    """The collocation polynomials of a table's states and controls in every finite element,
    at the same relative points of each (:func:`element_polynomials`).

    Attributes
    ----------
    nodes : list of ndarray
        Each element's rows of the table its states' polynomial passes through: its start,
        then its collocation points (:func:`element_points`).
    ends : ndarray (N,)
        Each element's last row (its end point).
    a, b, h : ndarray (N,)
        The elements' starts, ends and lengths [m].
    s : ndarray (N Q,)
        The points, element after element: ``a + h tau`` [m].
    states, derivatives : ndarray (N, Q, C)
        The states' polynomials and their derivatives d/ds [unit/m] there.
    controls : ndarray (N, Q, C_u)
        The controls' polynomials there.
    node_rows : ndarray (N ncp,)
        The rows of the collocation points, element after element.
    node_derivatives : ndarray (N ncp, C)
        The states' polynomials' derivatives d/ds at those points [unit/m]: what the
        collocation equations equate to the dynamics.
    """

    nodes: list
    ends: np.ndarray
    a: np.ndarray
    b: np.ndarray
    h: np.ndarray
    s: np.ndarray
    states: np.ndarray
    derivatives: np.ndarray
    controls: np.ndarray
    node_rows: np.ndarray
    node_derivatives: np.ndarray


def element_polynomials(element, s, states, controls, tau, scheme: str = "LAGRANGE-RADAU",
                        ncp: Optional[int] = None, state_controls: bool = True) -> ElementPolynomials:
    r"""The collocation polynomials of a trajectory table's states and controls, element by
    element, at the relative points ``tau`` of every element (e.g. Gauss points, for the
    collocation defects of :func:`pyomo_lap.verify.defects.collocation_defects`), and the
    states' derivatives at the collocation points.

    On element :math:`j` a state is the polynomial through the element's start and its
    collocation points (:func:`element_points`); a control the same polynomial
    (``state_controls``: controls that are states, OCP option ``control_form = "state"``), or
    the one of degree ``ncp - 1`` through the collocation points only. With :math:`\tau_k` the
    nodes' relative positions, :math:`x(a_j + h_j\tau) = \sum_k \ell_k(\tau) x_k` and
    :math:`dx/ds = \sum_k \ell_k'(\tau) x_k / h_j` (:func:`lagrange_basis`).

    Parameters
    ----------
    element : (M,) array_like of int
        The table's ``element`` column.
    s : (M,) array_like
        The table's ``s_sector`` [m].
    states : (M, C) array_like
    controls : (M, C_u) array_like
    tau : (Q,) array_like
        The relative points in [0, 1].
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
    ncp : int, optional
        The collocation points every element must have.
    state_controls : bool

    Returns
    -------
    ElementPolynomials

    Raises
    ------
    ValueError
        An element without ``ncp`` collocation points (:func:`element_points`' errors too).
    """
    el, s = np.asarray(element).astype(int), np.asarray(s, float)
    X, U, gx = np.asarray(states, float), np.asarray(controls, float), np.asarray(tau, float)
    groups = element_points(el, s, scheme)
    n_el, ng = len(groups), len(gx)
    xs = np.empty((n_el, ng, X.shape[1]))
    dxs = np.empty_like(xs)
    us = np.empty((n_el, ng, U.shape[1]))
    a, b = np.empty(n_el), np.empty(n_el)
    nodes_all, ends, node_dx = [], np.empty(n_el, dtype=int), []
    cache = {}                       # the Lagrange matrices of the elements' relative nodes
    for j, (i0, pts) in enumerate(groups):
        if ncp is not None and len(pts) != ncp:
            raise ValueError(f"element {j + 1} has {len(pts)} collocation points, expected ncp = {ncp}")
        nodes = np.r_[i0, pts]
        ends[j] = np.flatnonzero(el == j + 1)[-1]
        a[j], b[j] = s[i0], s[ends[j]]
        h = b[j] - a[j]
        xi = (s[nodes] - a[j]) / h
        key = tuple(np.round(xi, 12))
        if key not in cache:
            cache[key] = (lagrange_basis(xi, gx, derivative=True),
                          lagrange_basis(xi, xi[1:], derivative=True)[1],
                          None if state_controls else lagrange_basis(xi[1:], gx))
        (L, dL), dLn, Lu = cache[key]
        Xn = X[nodes]
        xs[j], dxs[j] = L @ Xn, dL @ Xn / h
        us[j] = L @ U[nodes] if state_controls else Lu @ U[nodes[1:]]
        nodes_all.append(nodes)
        node_dx.append(dLn @ Xn / h)
    h = b - a
    return ElementPolynomials(
        nodes=nodes_all, ends=ends, a=a, b=b, h=h,
        s=(a[:, None] + h[:, None] * gx[None, :]).ravel(), states=xs, derivatives=dxs,
        controls=us, node_rows=np.concatenate([nd[1:] for nd in nodes_all]) if n_el else
        np.zeros(0, dtype=int),
        node_derivatives=np.concatenate(node_dx) if n_el else np.zeros((0, X.shape[1])))


def _interpolation_points(grid: CollocationGrid, kind: str) -> list:
    """Per element, the indices of the points of :func:`collocation_interpolate`'s ``kind``
    (Legendre: the element's end is a collocation point of neither kind, only of ``"all"``)."""
    return [e.state_points if kind == "state" else e.nodes if kind == "algebraic"
            else np.r_[e.start, e.inside, e.end] for e in grid.elements]


def collocation_interpolate(breaks, nodes, values, query, kind: str = "state",
                            scheme: str = "LAGRANGE-RADAU", derivative: bool = False,
                            boundary: str = "start"):
    """Values at ``query`` of the collocation polynomials of one or more channels.

    Within element ``j`` (``breaks[j] <= x < breaks[j+1]``; the last element includes its
    end) the value is the Lagrange polynomial through the element's points of ``kind``
    (:data:`INTERPOLATION_KINDS`): ``"state"`` the start and the collocation points,
    ``"algebraic"`` the collocation points only, ``"all"`` every mesh point of the closed
    element. A query at a mesh point (within 1e-9 of the sector length) gets the mesh point's
    value.

    Parameters
    ----------
    breaks : array_like (N+1,)
        Element boundaries [m], increasing; every one a mesh point.
    nodes : array_like (M,)
        The mesh points [m], increasing (the element boundaries and the collocation points).
    values : array_like (M,) or (M, C)
        Values at the mesh points (C channels at once).
    query : array_like (Q,)
        Where to evaluate [m], within ``[breaks[0], breaks[-1]]``.
    kind : {'state', 'algebraic', 'all'}
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
        pyomo.dae's collocation scheme.
    derivative : bool
        Also return the polynomials' derivatives d/ds at ``query`` [unit/m] (no mesh-point
        override for those).
    boundary : {'start', 'end'}
        The element of a query at an inner element boundary (:data:`BOUNDARY_SIDES`): the one
        starting there (default) or the one ending there; only the derivatives differ.

    Returns
    -------
    ndarray (Q,) or (Q, C)
        The values; with ``derivative=True`` a pair (values, derivatives).

    Raises
    ------
    ValueError
        A bad ``kind``, ``scheme`` or ``boundary``, shapes that disagree, positions that do not
        increase, a query outside the elements, an element without interpolation points.
    """
    if kind not in INTERPOLATION_KINDS:
        raise ValueError(f"kind = {kind!r}: expected one of {', '.join(INTERPOLATION_KINDS)}")
    y = np.asarray(values, dtype=float)
    q = np.asarray(query, dtype=float)
    flat = y.ndim == 1
    y2 = y.reshape(len(y), -1)
    if len(y2) != len(np.asarray(nodes)):
        raise ValueError(f"values has {len(y2)} rows for {len(np.asarray(nodes))} mesh points: "
                         "expected one per point")
    grid = CollocationGrid(nodes, breaks, scheme)
    br, pts = grid.breaks, grid.points
    tol = _TOL * max(1.0, float(abs(br[-1] - br[0])))
    if q.size and (q.min() < br[0] - tol or q.max() > br[-1] + tol):
        raise ValueError(f"query from {q.min():g} to {q.max():g} m: expected positions within "
                         f"the elements [{br[0]:g}, {br[-1]:g}] m")
    through = _interpolation_points(grid, kind)
    el = grid.element_of(q, boundary)
    out = np.zeros((len(q), y2.shape[1]))
    dout = np.zeros_like(out)
    for j in np.unique(el):
        e, idx = grid.elements[j], through[j]
        if len(idx) == 0:
            raise ValueError(f"element [{e.a:g}, {e.b:g}] m has no {kind} interpolation points "
                             "among the mesh points: expected its collocation points")
        here = np.flatnonzero(el == j)
        L, dL = lagrange_basis(grid.tau(e, idx), (q[here] - e.a) / e.h, derivative=True)
        out[here] = L @ y2[idx]
        dout[here] = dL @ y2[idx] / e.h
    # at a mesh point: its value, exactly (an algebraic variable at an element's start, a
    # Legendre state at an element's end)
    i = np.clip(np.searchsorted(pts, q), 0, len(pts) - 1)
    i = np.where((i > 0) & (np.abs(pts[i - 1] - q) < np.abs(pts[i] - q)), i - 1, i)
    hit = np.abs(pts[i] - q) <= tol
    out[hit] = y2[i[hit]]
    if flat:
        out, dout = out[:, 0], dout[:, 0]
    return (out, dout) if derivative else out



def snap_breaks(points, breaks, tol: float = 1e-5) -> np.ndarray:
    """Element boundaries as mesh points: each of ``breaks`` replaced by the nearest of
    ``points`` (a results folder's ``summary.json`` rounds them to 1e-6 m).

    Parameters
    ----------
    points : (M,) array_like
        The mesh points [m], increasing.
    breaks : (N+1,) array_like
        The element boundaries [m], as given.
    tol : float
        The largest distance from a boundary to its point [m].

    Returns
    -------
    ndarray (N+1,)
        ``points[k]`` for each boundary.

    Raises
    ------
    ValueError
        Fewer than two boundaries, or a boundary farther than ``tol`` from every point (naming
        it and the nearest point).
    """
    nodes = np.asarray(points, dtype=float)
    b = np.asarray(breaks, dtype=float)
    snap = np.clip(np.searchsorted(nodes, b), 0, len(nodes) - 1)
    snap = np.where((snap > 0) & (np.abs(nodes[snap - 1] - b) < np.abs(nodes[snap] - b)),
                    snap - 1, snap)
    off = np.abs(nodes[snap] - b)
    if len(b) < 2 or off.max() > tol:
        k = int(np.argmax(off)) if len(b) else 0
        where = f"element boundary {b[k]:g} m is not a mesh point (nearest {nodes[snap[k]]:g} m)" \
            if len(b) else "no element boundaries"
        raise ValueError(f"{where}: expected the boundaries of the mesh")
    return nodes[snap]
