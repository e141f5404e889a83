"""The control laws of the time-domain simulation (:func:`pyomo_lap.verify.simulate.simulate`):
controls constant per segment of time or of track distance (:class:`PiecewiseControls`), the
Lagrange polynomials of the collocation through given nodes (:class:`CollocationControls`,
:func:`pyomo_lap.ocp.collocation.barycentric_value`), any function ``u(t, x)`` (:class:`FunctionControls`), and the
controls of a solved OCP's trajectory table (:func:`controls_from_trajectory`, the element's
points :func:`pyomo_lap.ocp.collocation.element_points`). The path-following driver is
:class:`pyomo_lap.verify.simulate.PathFollowing`.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np

from ..ocp.collocation import barycentric_value, barycentric_weights, element_points

__all__ = ["PiecewiseControls", "CollocationControls", "FunctionControls",
           "controls_from_trajectory", "CONTROL_COLUMNS"]


CONTROL_COLUMNS = ("f_xa", "f_xb", "delta")
"""The controls of the cars :func:`simulate` drives: drive and brake forces [N], steer angle
[rad]."""


# ------------------------------------------------------------------------------ control laws
@dataclasses.dataclass
class PiecewiseControls:
    """Controls constant on segments of time or of track distance.

    Attributes
    ----------
    basis : {'s', 't'}
        Segments of the track coordinate ``q1`` [m] or of time [s].
    breaks : ndarray (N+1,)
        Increasing segment boundaries [m or s]; segment ``k`` is ``[breaks[k], breaks[k+1])``.
        Before the first and after the last boundary the first and last values hold.
    values : ndarray (N, m)
        The controls on each segment: ``f_xa [N], f_xb [N], delta [rad]`` for the cars of
        :func:`simulate` (other control sets for other models, e.g. the racecar's ``delta,
        thrust``).

    Raises
    ------
    ValueError
        Bad basis, shapes, or boundaries that do not increase.
    """

    basis: str
    breaks: np.ndarray
    values: np.ndarray

    def __post_init__(self):
        """Check and convert the fields."""
        self.breaks = np.asarray(self.breaks, float)
        self.values = np.asarray(self.values, float)
        if self.basis not in ("s", "t"):
            raise ValueError(f"basis = {self.basis!r}: expected 's' (track distance) or 't' (time)")
        if self.values.ndim != 2:
            raise ValueError(f"values must have shape (N, m), got {self.values.shape}")
        if self.breaks.shape != (len(self.values) + 1,):
            raise ValueError(f"breaks must have N+1 = {len(self.values) + 1} entries, got "
                             f"{self.breaks.shape}")
        if np.any(np.diff(self.breaks) <= 0):
            raise ValueError("breaks must increase strictly")

    def segment(self, b: float) -> int:
        """Index of the segment holding ``b`` (time or distance)."""
        k = int(np.searchsorted(self.breaks, b, side="right")) - 1
        return min(max(k, 0), len(self.values) - 1)

    def __call__(self, t, x, segment: int):
        """The controls at time ``t`` and state ``x`` in segment ``segment``."""
        return self.values[segment]




@dataclasses.dataclass
class CollocationControls:
    """Controls given on each segment by the Lagrange polynomial through values at nodes.

    The controls of a solved OCP with a value at every collocation point
    (``piecewise_constant_controls=False``): on finite element ``j`` the OCP's dynamics see the
    control values ``u_jk`` at the element's collocation points ``c_jk`` only; the control
    profile they stand for is the polynomial of degree ``ncp - 1`` through them, within the
    element (as pyomo.dae's ``reduce_collocation_points`` interpolates a variable over an
    element; with it, the Radau collocation equations are one step of the Radau IIA
    Runge-Kutta method on a control that is smooth within the step). The profile may jump at
    the element boundaries; the simulation restarts there (see :class:`PiecewiseControls`).

    Attributes
    ----------
    basis : {'s', 't'}
        Segments of the track coordinate ``q1`` [m] or of time [s].
    breaks : ndarray (N+1,)
        Increasing segment boundaries [m or s].
    nodes : ndarray (N, K)
        Positions of the values on each segment [m or s], distinct within a segment (they
        may lie on its boundaries, e.g. the Radau point at the element end).
    values : ndarray (N, K, m)
        The controls at the nodes: ``f_xa [N], f_xb [N], delta [rad]`` for the cars of
        :func:`simulate` (other control sets, or states, for other uses).
    restart : bool
        True (default): the polynomials may jump at the boundaries; :func:`simulate` restarts
        the integration at each and the polynomial of the current segment is used over the
        whole segment, and a little beyond it (the integrator's stages near a boundary).
        False: the polynomials join continuously at the boundaries (controls that are
        differential states of the OCP, ``interpolation='state'`` of
        :func:`controls_from_trajectory`); the integration runs through the boundaries and
        each evaluation takes the polynomial of the segment holding its ``q1`` (or time).

    Before the first and after the last boundary the controls at those boundaries hold.

    Raises
    ------
    ValueError
        Bad basis, shapes, boundaries that do not increase, or repeated nodes in a segment.
    """

    basis: str
    breaks: np.ndarray
    nodes: np.ndarray
    values: np.ndarray
    restart: bool = True

    def __post_init__(self):
        """Check and convert the fields."""
        self.breaks = np.asarray(self.breaks, float)
        self.nodes = np.asarray(self.nodes, float)
        self.values = np.asarray(self.values, float)
        if self.basis not in ("s", "t"):
            raise ValueError(f"basis = {self.basis!r}: expected 's' (track distance) or 't' (time)")
        if self.values.ndim != 3 or self.nodes.shape != self.values.shape[:2]:
            raise ValueError(f"values must have shape (N, K, m) and nodes (N, K), got "
                             f"{self.values.shape} and {self.nodes.shape}")
        if self.breaks.shape != (len(self.values) + 1,):
            raise ValueError(f"breaks must have N+1 = {len(self.values) + 1} entries, got "
                             f"{self.breaks.shape}")
        if np.any(np.diff(self.breaks) <= 0):
            raise ValueError("breaks must increase strictly")
        if self.nodes.shape[1] > 1 and np.any(np.diff(np.sort(self.nodes, axis=1), axis=1) <= 0):
            raise ValueError("the nodes of a segment must be distinct")
        self._bary = barycentric_weights(self.nodes)

    def segment(self, b: float) -> int:
        """Index of the segment holding ``b`` (time or distance)."""
        k = int(np.searchsorted(self.breaks, b, side="right")) - 1
        return min(max(k, 0), len(self.values) - 1)

    def at(self, b, segment: Optional[int] = None) -> np.ndarray:
        """Controls at ``b`` [m or s] from the polynomial of ``segment`` (default: the segment
        holding ``b``)."""
        b = min(max(float(b), self.breaks[0]), self.breaks[-1])
        k = self.segment(b) if segment is None else segment
        return barycentric_value(self.nodes[k], self._bary[k], self.values[k], b)

    def __call__(self, t, x, segment: int):
        """The controls at time ``t`` and state ``x`` in segment ``segment``."""
        return self.at(x[0] if self.basis == "s" else t, segment if self.restart else None)


class FunctionControls:
    """Controls given by a function ``u(t, x) -> (f_xa, f_xb, delta)``, continuous in time.

    Parameters
    ----------
    fun : callable
        ``fun(t [s], x (2n,)) -> 3 floats``.
    """

    basis = None
    breaks = None

    def __init__(self, fun: Callable):
        self.fun = fun

    def segment(self, b) -> int:
        """The segment of ``b`` (a track coordinate or a time)."""
        return 0

    def __call__(self, t, x, segment: int):
        """The controls at time ``t`` and state ``x`` in segment ``segment``."""
        return self.fun(t, x)




def _check_control_options(df, basis: str, interpolation: str, scheme: str,
                           columns=CONTROL_COLUMNS) -> None:
    """The columns and options of :func:`controls_from_trajectory`.

    Raises
    ------
    ValueError
        A missing column, or an option not among those listed there.
    """
    need = {"s_sector", "t", "element", *columns}
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"trajectory lacks column(s) {sorted(missing)}")
    if basis not in ("s", "t"):
        raise ValueError(f"basis = {basis!r}: expected 's' or 't'")
    if interpolation not in ("auto", "polynomial", "constant", "state"):
        raise ValueError(f"interpolation = {interpolation!r}: expected 'auto', 'polynomial', "
                         "'constant' or 'state'")
    if scheme not in ("LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"):
        raise ValueError(f"scheme = {scheme!r}: expected 'LAGRANGE-RADAU' or 'LAGRANGE-LEGENDRE'")


def controls_from_trajectory(df, basis: str = "s", start: Optional[float] = None,
                             interpolation: str = "auto", scheme: str = "LAGRANGE-RADAU",
                             columns=CONTROL_COLUMNS):
    """The controls of a solved OCP as a control law of :func:`simulate`.

    The OCP's dynamics see the controls at the collocation points only. With a control value
    at every collocation point (``piecewise_constant_controls=False``, OCP option
    ``control_form = "point"``) the profile they stand for is, on each finite element, the
    Lagrange polynomial through the element's collocation values (degree ``ncp - 1``;
    :class:`CollocationControls`). With controls constant per element
    (``piecewise_constant_controls=True``, the paper's :math:`u_i`) the polynomial is that
    constant; it is then returned as :class:`PiecewiseControls`. With controls that are
    differential states in ``q1`` (``control_form = "state"``, the default OCP since it was
    introduced) a control is, like every state, the polynomial of degree ``ncp`` through the
    element's start point and its collocation points (:func:`pyomo_lap.ocp.collocation.element_points`), continuous
    across the element boundaries (``interpolation='state'``).

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`pyomo_lap.results.table.trajectory_dataframe` or
        :func:`pyomo_lap.results.table.read_trajectory` (columns ``s_sector``, ``t``, ``element``,
        ``f_xa``, ``f_xb``, ``delta``; element ``j >= 1`` holds the points in
        :math:`(e_{j-1}, e_j]`).
    basis : {'s', 't'}
        Segments in track distance (boundaries ``start + e_j``, polynomials in ``q1``) or in
        time (``t(e_j)``, polynomials in ``t``).
    start : float, optional
        Track coordinate of the sector start [m] (default ``s[0]`` of ``df``).
    interpolation : {'auto', 'polynomial', 'constant', 'state'}
        ``'state'``: the polynomial through the element's start and collocation points
        (controls that are states; :class:`CollocationControls` with ``restart=False``: the
        polynomials join at the boundaries); ``'polynomial'``: through the collocation points
        only (:class:`CollocationControls`); ``'constant'``: the value at the
        element's first point held over the element (:class:`PiecewiseControls`); ``'auto'``:
        ``'constant'`` when the controls are constant within every element (to 1e-7 of each
        control's largest magnitude, as the equality constraints of piecewise-constant
        controls hold after a solve and a CSV round trip), else ``'polynomial'`` (never
        ``'state'``: a table does not say how its controls were made; the summary's
        ``ocp_options.control_form`` does).
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
        The collocation scheme: for Radau all points of an element are collocation points; for
        Legendre the element's end point is not (its control enters no dynamics) and is left
        out of the polynomial.
    columns : sequence of str
        The controls' columns (default :data:`CONTROL_COLUMNS`, the cars of :func:`simulate`;
        ``("delta", "thrust")`` for the racecar's).

    Returns
    -------
    CollocationControls or PiecewiseControls
        Their values in the order of ``columns``.

    Raises
    ------
    ValueError
        Missing columns, an unknown option, or an element count that does not match.
    """
    _check_control_options(df, basis, interpolation, scheme, columns)
    if start is None:
        start = float(df["s"].iloc[0]) if "s" in df.columns else 0.0
    el = df["element"].to_numpy().astype(int)
    s = df["s_sector"].to_numpy(float)
    t = df["t"].to_numpy(float)
    U = df[list(columns)].to_numpy(float)
    n = int(el.max())
    members = [np.flatnonzero(el == j) for j in range(1, n + 1)]
    if any(len(idx) == 0 for idx in members):
        raise ValueError(f"trajectory has no points in element(s) "
                         f"{[j for j, idx in enumerate(members, 1) if len(idx) == 0]}")
    ends = np.array([idx[-1] for idx in members])
    if basis == "s":
        x = start + s
        breaks = start + np.concatenate([[s[0]], s[ends]])
    else:
        x = t
        breaks = np.concatenate([[t[0]], t[ends]])
    if interpolation == "state":
        groups = element_points(el, s, scheme)
        K = {len(idx) + 1 for _, idx in groups}
        if len(K) != 1:
            raise ValueError(f"elements with different numbers of collocation points "
                             f"{sorted(k - 1 for k in K)}")
        sel = np.array([np.r_[i0, idx] for i0, idx in groups])
        return CollocationControls(basis, breaks, x[sel], U[sel], restart=False)
    if scheme == "LAGRANGE-LEGENDRE":
        members = [idx[:-1] if len(idx) > 1 else idx for idx in members]
    if interpolation == "auto":
        scale = np.maximum(np.max(np.abs(U), axis=0), 1e-12)
        spread = max(float(np.max(np.ptp(U[idx], axis=0) / scale)) for idx in members)
        interpolation = "constant" if spread <= 1e-7 else "polynomial"
    if interpolation == "constant":
        return PiecewiseControls(basis, breaks, U[[idx[0] for idx in members]])
    K = {len(idx) for idx in members}
    if len(K) != 1:
        raise ValueError(f"elements with different numbers of collocation points {sorted(K)}")
    sel = np.array(members)
    return CollocationControls(basis, breaks, x[sel], U[sel])
