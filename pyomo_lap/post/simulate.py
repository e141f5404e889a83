r"""The direct simulation model: the car's DAE integrated in time on any track.

The time-domain state is :math:`x = (q_1..q_n, \dot q_1..\dot q_n)` (``n = 6`` for the full
model, 3 for the single-track model), with :math:`q_1` the track coordinate (arc length along
the spine from the track's origin, *not* from a sector start). At every evaluation of the
right-hand side

.. math::
    \dot x = \big(\dot q,\ \ddot q(x, u, z)\big),\qquad r(x, u, z) = 0,

the algebraic variables ``z`` (the vertical loads and the in-plane tyre wrench, eqs (35)-(36))
are solved by Newton's method from the previous solution, and :math:`\ddot q` comes from the
ABA, both through :class:`pyomo_lap.vehicle.numeric.CarFunctions`: the same Lie-group/ABA code that
writes the Pyomo model, traced once and evaluated on floats. The integrators are SciPy's
(:func:`scipy.integrate.solve_ivp`).

Controls are ``u = (f_xa [N], f_xb [N], delta [rad])`` given by a control law
``u(t, x, segment)``:

* :class:`PiecewiseControls`: constant per segment of time or of track distance, e.g. the
  element-wise constant controls of an OCP built with ``piecewise_constant_controls=True``
  (:func:`controls_from_trajectory`). The integration restarts at every segment boundary (a
  time, or an event ``q1 = s_k``), so the integrator never steps over a jump of the controls;
* :class:`CollocationControls`: per segment, the Lagrange polynomial through values at given
  nodes, e.g. the controls of an OCP with a control value at every collocation point (the
  default): in each finite element, the polynomial of degree ``ncp - 1`` through the element's
  collocation values (discontinuous at the element boundaries, where the integration restarts
  as for :class:`PiecewiseControls`);
* :class:`FunctionControls`: any function ``u(t, x)``;
* :class:`PathFollowing`: piecewise feed-forward controls plus a steering feedback that keeps
  the car on a reference path (see :mod:`pyomo_lap.post.replay`).

The run stops at the end of the sector (``s_end``), at ``t_end``, when the car spins
(``|q3| > q3_max``), stops (``q1_dot < v_min``), or when the algebraic loop has no solution
(a wheel lifts); :attr:`SimulationResult.status` says which.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np
from scipy.integrate import solve_ivp

from ..vehicle.numeric import AlgebraicLoopError, CarFunctions

__all__ = ["simulate", "SimulationResult", "PiecewiseControls", "CollocationControls", "FunctionControls",
           "PathFollowing", "TrackLookup", "state_names", "controls_from_trajectory"]


def state_names(n_q: int = 6) -> tuple:
    """Names of the time-domain state: ``q1..qn, q1_dot..qn_dot``."""
    return tuple(f"q{k}" for k in range(1, n_q + 1)) + tuple(f"q{k}_dot" for k in range(1, n_q + 1))


# ------------------------------------------------------------------------------ track access
class TrackLookup:
    """Track-joint vectors (:func:`pyomo_lap.vehicle.numeric.track_vector`) and widths at a track
    coordinate, with a one-entry cache (the integrator and the event functions ask for the same
    ``q1`` several times).

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
        Open tracks are evaluated at ``q1`` clipped to ``[0, length]`` (the integrator may try
        a stage a little past the end of the last segment).
    """

    def __init__(self, track):
        self.track = track
        self._key = None
        self._val = None

    def __call__(self, q1: float):
        q1 = float(q1)
        if q1 != self._key:
            s = q1 if self.track.closed else min(max(q1, 0.0), self.track.length)
            tp = self.track.evaluate(np.array([s]))
            trk = np.zeros(21)
            trk[:9] = tp.rotation[0].reshape(9)
            trk[9] = 1.0
            trk[12:15] = tp.omega[0]
            trk[18:21] = tp.domega_ds[0]
            self._key, self._val = q1, (trk, float(tp.width_left[0]), float(tp.width_right[0]))
        return self._val


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
    values : ndarray (N, 3)
        ``f_xa [N], f_xb [N], delta [rad]`` on each segment.

    Raises
    ------
    ValueError
        Bad basis, shapes, or boundaries that do not increase.
    """

    basis: str
    breaks: np.ndarray
    values: np.ndarray

    def __post_init__(self):
        self.breaks = np.asarray(self.breaks, float)
        self.values = np.asarray(self.values, float)
        if self.basis not in ("s", "t"):
            raise ValueError(f"basis = {self.basis!r}: expected 's' (track distance) or 't' (time)")
        if self.values.ndim != 2 or self.values.shape[1] != 3:
            raise ValueError(f"values must have shape (N, 3), got {self.values.shape}")
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
        return self.values[segment]


def lagrange_weights(nodes, x) -> np.ndarray:
    """Lagrange basis polynomials through ``nodes`` evaluated at ``x``: ``(len(x), len(nodes))``
    (row ``i`` holds the basis polynomials ``l_j(x_i)``, so ``L @ values`` interpolates)."""
    nodes = np.asarray(nodes, float)
    x = np.atleast_1d(np.asarray(x, float))
    L = np.ones((len(x), len(nodes)))
    for j, xj in enumerate(nodes):
        for k, xk in enumerate(nodes):
            if k != j:
                L[:, j] *= (x - xk) / (xj - xk)
    return L


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
    values : ndarray (N, K, 3)
        ``f_xa [N], f_xb [N], delta [rad]`` at the nodes.

    The polynomial of segment ``k`` is used over the whole segment, and a little beyond it
    (the integrator's stages near a boundary); before the first and after the last boundary
    the controls at those boundaries hold.

    Raises
    ------
    ValueError
        Bad basis, shapes, boundaries that do not increase, or repeated nodes in a segment.
    """

    basis: str
    breaks: np.ndarray
    nodes: np.ndarray
    values: np.ndarray

    def __post_init__(self):
        self.breaks = np.asarray(self.breaks, float)
        self.nodes = np.asarray(self.nodes, float)
        self.values = np.asarray(self.values, float)
        if self.basis not in ("s", "t"):
            raise ValueError(f"basis = {self.basis!r}: expected 's' (track distance) or 't' (time)")
        if self.values.ndim != 3 or self.values.shape[2] != 3 or self.nodes.shape != self.values.shape[:2]:
            raise ValueError(f"values must have shape (N, K, 3) and nodes (N, K), got "
                             f"{self.values.shape} and {self.nodes.shape}")
        if self.breaks.shape != (len(self.values) + 1,):
            raise ValueError(f"breaks must have N+1 = {len(self.values) + 1} entries, got "
                             f"{self.breaks.shape}")
        if np.any(np.diff(self.breaks) <= 0):
            raise ValueError("breaks must increase strictly")
        if self.nodes.shape[1] > 1 and np.any(np.diff(np.sort(self.nodes, axis=1), axis=1) <= 0):
            raise ValueError("the nodes of a segment must be distinct")

    def segment(self, b: float) -> int:
        """Index of the segment holding ``b`` (time or distance)."""
        k = int(np.searchsorted(self.breaks, b, side="right")) - 1
        return min(max(k, 0), len(self.values) - 1)

    def at(self, b, segment: Optional[int] = None) -> np.ndarray:
        """Controls at ``b`` [m or s] from the polynomial of ``segment`` (default: the segment
        holding ``b``)."""
        b = min(max(float(b), self.breaks[0]), self.breaks[-1])
        k = self.segment(b) if segment is None else segment
        return lagrange_weights(self.nodes[k], [b])[0] @ self.values[k]

    def __call__(self, t, x, segment: int):
        return self.at(x[0] if self.basis == "s" else t, segment)


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
        return 0

    def __call__(self, t, x, segment: int):
        return self.fun(t, x)


class PathFollowing:
    r"""Feed-forward controls plus a path-following steering feedback.

    .. math::
        \delta = \delta_{ff} + K\,\big[(q_2^{ref}(q_1) - q_2) + L\,(q_3^{ref}(q_1) - q_3)\big],
        \qquad L = \max(L_{min}, T_p \dot q_1),

    the lateral error at a preview point a distance :math:`L` ahead (a classic
    "look-ahead" driver model: :math:`q_2` grows to the left and :math:`\delta > 0` steers left,
    so a car right of its path steers left). Optionally a speed feedback
    :math:`\Delta f_x = K_v m\,(\dot q_1^{ref} - \dot q_1)` adds to the traction force when
    positive (capped by the power limit) and to the braking force when negative.

    Parameters
    ----------
    feedforward : PiecewiseControls or CollocationControls
        The open-loop controls (e.g. of a solved OCP).
    s_ref : (M,) increasing track coordinates [m]
    q2_ref, q3_ref : (M,)
        Reference lateral offset [m] and relative yaw [rad] at ``s_ref``.
    gain : float
        K [rad/m].
    preview_time : float
        T_p [s].
    preview_min : float
        L_min [m].
    v_ref : (M,), optional
        Reference speed q1_dot [m/s] (needed when ``k_v > 0``).
    k_v : float
        K_v [1/s] (0: no speed feedback).
    vehicle : VehicleParameters, optional
        For the steering limit, the mass and the power limit.
    """

    def __init__(self, feedforward, s_ref, q2_ref, q3_ref, gain: float = 0.05,
                 preview_time: float = 0.3, preview_min: float = 3.0, v_ref=None,
                 k_v: float = 0.0, vehicle=None):
        self.ff = feedforward
        self.basis, self.breaks = feedforward.basis, feedforward.breaks
        self.s_ref = np.asarray(s_ref, float)
        self.q2_ref = np.asarray(q2_ref, float)
        self.q3_ref = np.asarray(q3_ref, float)
        self.v_ref = None if v_ref is None else np.asarray(v_ref, float)
        if not (gain >= 0 and preview_time >= 0 and preview_min >= 0 and k_v >= 0):
            raise ValueError(f"gains must be >= 0: gain={gain}, preview_time={preview_time}, "
                             f"preview_min={preview_min}, k_v={k_v}")
        if k_v > 0 and (self.v_ref is None or vehicle is None):
            raise ValueError("k_v > 0 needs v_ref and vehicle")
        self.gain, self.preview_time, self.preview_min, self.k_v = gain, preview_time, preview_min, k_v
        self.vehicle = vehicle

    def segment(self, b) -> int:
        return self.ff.segment(b)

    def correction(self, x):
        """Steering correction [rad] at state ``x`` (before the steering limit)."""
        n = len(x) // 2
        s = x[0]
        e_y = np.interp(s, self.s_ref, self.q2_ref) - x[1]
        e_psi = np.interp(s, self.s_ref, self.q3_ref) - x[2]
        L = max(self.preview_min, self.preview_time * x[n])
        return self.gain * (e_y + L * e_psi)

    def __call__(self, t, x, segment: int):
        f_xa, f_xb, delta = self.ff(t, x, segment)
        delta = delta + self.correction(x)
        p = self.vehicle
        if p is not None:
            delta = min(max(delta, -p.delta_max), p.delta_max)
        if self.k_v > 0:
            n = len(x) // 2
            dfx = self.k_v * p.m * (np.interp(x[0], self.s_ref, self.v_ref) - x[n])
            if dfx > 0:
                f_xa = min(f_xa + dfx, p.P_max / max(x[n], 1.0))
            else:
                f_xb = f_xb + dfx
        return np.array([f_xa, f_xb, delta])


def controls_from_trajectory(df, basis: str = "s", start: Optional[float] = None,
                             interpolation: str = "auto", scheme: str = "LAGRANGE-RADAU"):
    """The controls of a solved OCP as a control law of :func:`simulate`.

    The OCP's dynamics see the controls at the collocation points only. With a control value
    at every collocation point (``piecewise_constant_controls=False``, the default) the profile
    they stand for is, on each finite element, the Lagrange polynomial through the element's
    collocation values (degree ``ncp - 1``; :class:`CollocationControls`). With controls
    constant per element (``piecewise_constant_controls=True``, the paper's :math:`u_i`) the
    polynomial is that constant; it is then returned as :class:`PiecewiseControls`.

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`pyomo_lap.post.results.trajectory_dataframe` or
        :func:`pyomo_lap.post.results.read_trajectory` (columns ``s_sector``, ``t``, ``element``,
        ``f_xa``, ``f_xb``, ``delta``; element ``j >= 1`` holds the points in
        :math:`(e_{j-1}, e_j]`).
    basis : {'s', 't'}
        Segments in track distance (boundaries ``start + e_j``, polynomials in ``q1``) or in
        time (``t(e_j)``, polynomials in ``t``).
    start : float, optional
        Track coordinate of the sector start [m] (default ``s[0]`` of ``df``).
    interpolation : {'auto', 'polynomial', 'constant'}
        ``'polynomial'``: :class:`CollocationControls`; ``'constant'``: the value at the
        element's first point held over the element (:class:`PiecewiseControls`); ``'auto'``:
        ``'constant'`` when the controls are constant within every element (to 1e-7 of each
        control's largest magnitude, as the equality constraints of piecewise-constant
        controls hold after a solve and a CSV round trip), else ``'polynomial'``.
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
        The collocation scheme: for Radau all points of an element are collocation points; for
        Legendre the element's end point is not (its control enters no dynamics) and is left
        out of the polynomial.

    Returns
    -------
    CollocationControls or PiecewiseControls

    Raises
    ------
    ValueError
        Missing columns, an unknown option, or an element count that does not match.
    """
    need = {"s_sector", "t", "element", "f_xa", "f_xb", "delta"}
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"trajectory lacks column(s) {sorted(missing)}")
    if basis not in ("s", "t"):
        raise ValueError(f"basis = {basis!r}: expected 's' or 't'")
    if interpolation not in ("auto", "polynomial", "constant"):
        raise ValueError(f"interpolation = {interpolation!r}: expected 'auto', 'polynomial' or 'constant'")
    if scheme not in ("LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"):
        raise ValueError(f"scheme = {scheme!r}: expected 'LAGRANGE-RADAU' or 'LAGRANGE-LEGENDRE'")
    if start is None:
        start = float(df["s"].iloc[0]) if "s" in df.columns else 0.0
    el = df["element"].to_numpy().astype(int)
    s = df["s_sector"].to_numpy(float)
    t = df["t"].to_numpy(float)
    U = df[["f_xa", "f_xb", "delta"]].to_numpy(float)
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


# ------------------------------------------------------------------------------ results
@dataclasses.dataclass
class SimulationResult:
    """Output of :func:`simulate`.

    Attributes
    ----------
    t : ndarray (n,)
        Times of the accepted integrator steps [s].
    x : ndarray (n, 2 n_q)
        States ``q1..q_nq, q1_dot..`` (:func:`state_names`).
    u : ndarray (n, 3)
        Controls ``f_xa, f_xb [N], delta [rad]`` applied at those times.
    z : ndarray (n, n_z)
        Algebraic variables (loads, in-plane tyre wrench) [N, N m].
    qdd : ndarray (n, n_q)
        Joint accelerations.
    status : str
        ``'end'`` (reached ``s_end``), ``'t_end'``, ``'spin'`` (``|q3| > q3_max``),
        ``'stopped'`` (``q1_dot < v_min``), ``'algebraic'`` (no solution of the algebraic loop,
        e.g. a wheel lifts), ``'solver'`` (the integrator failed).
    message : str
        What happened, with time and place.
    t_stop, s_stop : float
        Time [s] and track coordinate [m] where the run ended (for ``'algebraic'`` the failing
        evaluation, which lies at most one chunk after the last stored step).
    algebraic, n_q : tuple of str, int
    n_rhs : int
        Right-hand-side evaluations.
    wall_time_s : float
    """

    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    z: np.ndarray
    qdd: np.ndarray
    status: str
    message: str
    t_stop: float
    s_stop: float
    algebraic: tuple
    n_q: int
    n_rhs: int = 0
    wall_time_s: float = 0.0

    @property
    def success(self) -> bool:
        """True when the run ended at ``s_end`` or ``t_end``."""
        return self.status in ("end", "t_end")

    def dataframe(self):
        """One row per stored step: ``t``, ``s`` (= q1), states, ``q<k>_ddot``, controls and
        algebraic variables, in SI units (see :data:`pyomo_lap.post.results.UNITS`)."""
        import pandas as pd
        cols = {"t": self.t, "s": self.x[:, 0]}
        for k, name in enumerate(state_names(self.n_q)):
            cols[name] = self.x[:, k]
        for k in range(self.n_q):
            cols[f"q{k + 1}_ddot"] = self.qdd[:, k]
        for k, name in enumerate(("f_xa", "f_xb", "delta")):
            cols[name] = self.u[:, k]
        for k, name in enumerate(self.algebraic):
            cols[name] = self.z[:, k]
        return pd.DataFrame(cols)

    def at_s(self, s_query) -> np.ndarray:
        """States at track coordinates ``s_query`` (cubic Hermite in time, with ``t(s)`` from
        the monotone ``q1(t)``); NaN outside the simulated range.

        Returns
        -------
        ndarray (m, 2 n_q + 1)
            The state and, last, the time [s] at which the car passed each ``s``.
        """
        from scipy.interpolate import CubicHermiteSpline
        s_query = np.atleast_1d(np.asarray(s_query, float))
        t, x = self.t, self.x
        keep = np.concatenate([[True], np.diff(t) > 0])
        t, x = t[keep], x[keep]
        n = self.n_q
        xd = np.column_stack([x[:, n:], self.qdd[keep]])
        out = np.full((len(s_query), 2 * n + 1), np.nan)
        if len(t) < 2:
            return out
        spl = CubicHermiteSpline(t, x, xd, axis=0)
        q1 = x[:, 0]
        # a run that stops at s_end ends there to the event tolerance: 1 um counts as inside
        inside = (s_query >= q1[0] - 1e-6) & (s_query <= q1[-1] + 1e-6)
        if not np.all(np.diff(q1) > 0):
            inside &= False
        tq = np.interp(np.clip(s_query[inside], q1[0], q1[-1]), q1, t)
        for _ in range(3):   # Newton on q1(t) = s
            xs = spl(tq)
            tq = np.clip(tq - (xs[:, 0] - s_query[inside]) / np.maximum(xs[:, n], 1e-6), t[0], t[-1])
        out[inside, :2 * n] = spl(tq)
        out[inside, -1] = tq
        return out


# ------------------------------------------------------------------------------ simulation
def simulate(track, vehicle, controls, x0: Sequence[float], t_end: float, *,
             s_end: Optional[float] = None, z0: Optional[Sequence[float]] = None,
             model: str = "full", tyres: bool = True, method: str = "RK45",
             rtol: float = 1e-6, atol: Optional[Sequence[float]] = None,
             max_step: float = 0.05, chunk: float = 1.0, q3_max: float = 0.8,
             v_min: float = 1.0, car: Optional[CarFunctions] = None) -> SimulationResult:
    r"""Integrate the car's dynamics in time.

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
    vehicle : VehicleParameters
    controls : PiecewiseControls, FunctionControls, PathFollowing or callable
        Control law; a plain callable ``u(t, x)`` is wrapped in :class:`FunctionControls`.
    x0 : (2 n_q,) initial state ``q1..q_nq, q1_dot..`` [m, rad, m/s, rad/s]; ``q1`` is the
        track coordinate [m].
    t_end : float
        Final time [s] (the initial time is 0, or ``controls.breaks[0]`` for time-based
        piecewise controls).
    s_end : float, optional
        Stop when ``q1`` reaches it [m].
    z0 : (n_z,), optional
        Guess of the algebraic variables at the start.
    model : {'full', 'single-track'}
    tyres : bool
        False: no in-plane tyre forces (``f_3x = f_3y = m_3z = 0``), e.g. to check energy
        conservation.
    method : str
        :func:`scipy.integrate.solve_ivp` method (``'RK45'``, ``'DOP853'``, ``'LSODA'``,
        ``'Radau'`` ...).
    rtol : float
    atol : (2 n_q,), optional
        Default ``rtol`` times 1 m, 1 m, 1 rad, 0.01 m, 0.01 rad, 0.01 rad, 10 m/s, 1 m/s,
        1 rad/s, 0.1 m/s, 0.1 rad/s, 0.1 rad/s (full model).
    max_step : float
        Largest step [s].
    chunk : float
        Longest single call of the integrator [s]: a failure of the algebraic loop loses at most
        this much of the stored trajectory (the failing time and place are still reported).
    q3_max, v_min : float
        Stop when ``|q3| > q3_max`` [rad] (spin) or ``q1_dot < v_min`` [m/s].
    car : CarFunctions, optional
        Reuse traced functions (tracing takes about 0.2 s).

    Returns
    -------
    SimulationResult

    Raises
    ------
    ValueError
        Wrong length of ``x0``, non-finite values, ``t_end`` not after the start, a mismatching
        ``car``, or the initial algebraic loop without solution.
    """
    import time as _time
    wall0 = _time.perf_counter()
    if car is None:
        car = CarFunctions(vehicle, model=model, tyres=tyres)
    elif car.model != model or car.tyres != bool(tyres):
        raise ValueError(f"car functions are for model={car.model!r}, tyres={car.tyres}; "
                         f"asked for model={model!r}, tyres={tyres}")
    n = car.n_q
    x0 = np.asarray(x0, float)
    if x0.shape != (2 * n,) or not np.all(np.isfinite(x0)):
        raise ValueError(f"x0 must be {2 * n} finite numbers ({', '.join(state_names(n))}), got {x0!r}")
    if not callable(getattr(controls, "segment", None)):
        controls = FunctionControls(controls)
    basis = getattr(controls, "basis", None)
    breaks = getattr(controls, "breaks", None)
    t0 = float(breaks[0]) if basis == "t" else 0.0
    if not t_end > t0:
        raise ValueError(f"t_end = {t_end!r} s must be after the start {t0} s")
    if atol is None:
        scale = ([1.0, 1.0, 1.0, 0.01, 0.01, 0.01, 10.0, 1.0, 1.0, 0.1, 0.1, 0.1] if n == 6
                 else [1.0, 1.0, 1.0, 10.0, 1.0, 1.0])
        atol = rtol * np.array(scale)
    look = TrackLookup(track)
    state = {"z": None if z0 is None else np.asarray(z0, float), "seg": 0, "n": 0,
             "where": (t0, x0[0])}
    seg0 = controls.segment(x0[0] if basis == "s" else t0)
    state["seg"] = seg0

    def rhs(t, x):
        state["n"] += 1
        state["where"] = (t, x[0])
        trk = look(x[0])[0]
        u = controls(t, x, state["seg"])
        z, qdd = car.solve(trk, x[:n], x[n:], u, state["z"])
        state["z"] = z
        return np.concatenate([x[n:], qdd])

    # the initial algebraic loop (a clear error before any integration)
    try:
        rhs(t0, x0)
    except AlgebraicLoopError as exc:
        raise ValueError(f"no solution of the algebraic loop at the initial state: {exc}") from None

    def ev_spin(t, x):
        return q3_max - abs(x[2])
    ev_spin.terminal, ev_spin.direction = True, -1

    def ev_stop(t, x):
        return x[n] - v_min
    ev_stop.terminal, ev_stop.direction = True, -1
    stop_events = [("spin", ev_spin), ("stopped", ev_stop)]
    if s_end is not None:
        def ev_end(t, x):
            return x[0] - s_end
        ev_end.terminal, ev_end.direction = True, 1
        stop_events.append(("end", ev_end))

    T, X = [np.array([t0])], [x0[None, :]]
    t, x = t0, x0.copy()
    status, message = None, ""
    while status is None:
        seg = state["seg"]
        t_stop = min(t_end, t + chunk)
        events = [e for _, e in stop_events]
        names = [k for k, _ in stop_events]
        if basis == "t" and seg + 1 < len(breaks) - 1:
            t_stop = min(t_stop, float(breaks[seg + 1]))
        if basis == "s" and seg + 1 < len(breaks) - 1:
            s_next = float(breaks[seg + 1])

            def ev_seg(tt, xx, _s=s_next):
                return xx[0] - _s
            ev_seg.terminal, ev_seg.direction = True, 1
            events.append(ev_seg)
            names.append("segment")
        if t_stop <= t:
            status, message = "t_end", f"reached t_end = {t_end} s"
            break
        try:
            sol = solve_ivp(rhs, (t, t_stop), x, method=method, rtol=rtol, atol=atol,
                            max_step=max_step, events=events)
        except AlgebraicLoopError as exc:
            tf, sf = state["where"]
            status = "algebraic"
            message = f"algebraic loop without solution at t = {tf:.3f} s, q1 = {sf:.1f} m: {exc}"
            break
        if sol.status == -1:
            status, message = "solver", f"integrator failed at t = {t:.3f} s: {sol.message}"
            break
        if len(sol.t) > 1:
            T.append(sol.t[1:])
            X.append(sol.y.T[1:])
        t, x = float(sol.t[-1]), sol.y[:, -1].copy()
        if sol.status == 1:
            hit = [k for k, te in enumerate(sol.t_events) if len(te)]
            k = hit[0]
            if names[k] == "segment":
                t, x = float(sol.t_events[k][0]), sol.y_events[k][0].copy()
                if T[-1][-1] != t:
                    T.append(np.array([t]))
                    X.append(x[None, :])
                state["seg"] = seg + 1
                continue
            status = names[k]
            message = {"spin": f"the car spun: |q3| > {q3_max} rad",
                       "stopped": f"the car stopped: q1_dot < {v_min} m/s",
                       "end": f"reached s_end = {s_end} m"}[status]
            message += f" at t = {t:.3f} s, q1 = {x[0]:.1f} m"
            break
        if basis == "t" and seg + 1 < len(breaks) - 1 and t >= float(breaks[seg + 1]) - 1e-12:
            state["seg"] = seg + 1
        if t >= t_end:
            status, message = "t_end", f"reached t_end = {t_end} s at q1 = {x[0]:.1f} m"
    T = np.concatenate(T)
    X = np.concatenate(X)
    # controls, algebraic variables and accelerations at the stored steps
    U = np.zeros((len(T), 3))
    Z = np.zeros((len(T), car.n_z))
    QDD = np.zeros((len(T), n))
    z = None if z0 is None else np.asarray(z0, float)
    for i, (ti, xi) in enumerate(zip(T, X)):
        seg = controls.segment(xi[0] if basis == "s" else ti)
        if basis == "s" and i + 1 < len(T) and X[i + 1, 0] > xi[0]:
            seg = controls.segment(0.5 * (xi[0] + X[i + 1, 0]))   # a step starting on a boundary
        u = np.asarray(controls(ti, xi, seg), float)
        try:
            z, qdd = car.solve(look(xi[0])[0], xi[:n], xi[n:], u, z)
        except AlgebraicLoopError:
            z, qdd = np.full(car.n_z, np.nan), np.full(n, np.nan)
        U[i], Z[i], QDD[i] = u, z, qdd
    if status == "algebraic":
        t_stop, s_stop = state["where"]
    else:
        t_stop, s_stop = float(T[-1]), float(X[-1, 0])
    return SimulationResult(t=T, x=X, u=U, z=Z, qdd=QDD, status=status, message=message,
                            t_stop=float(t_stop), s_stop=float(s_stop),
                            algebraic=car.algebraic, n_q=n, n_rhs=state["n"],
                            wall_time_s=_time.perf_counter() - wall0)
