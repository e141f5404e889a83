r"""The direct simulation model: a vehicle model's equations integrated in time on any track.

The time-domain state is the model's state in time (``ModelDynamics.names``): the track
coordinate (arc length along the spine from the track's origin, *not* from a sector start)
first, then the model's states in ``s`` but the time; for a car on the chain
:math:`x = (q_1..q_n, \dot q_1..\dot q_n)` (``n = 6`` for the full model, 3 for the
single-track model, 10 for the multibody car), for dymos's racecar :math:`(s, n, V, \alpha,
\lambda, \omega, a_x, a_y)`. At every evaluation of the right-hand side the model's equations
give :math:`\dot x` (``ModelDynamics.time_rates``): for a car on the chain

.. math::
    \dot x = \big(\dot q,\ \ddot q(x, u, z)\big),\qquad r(x, u, z) = 0,

the algebraic variables ``z`` (the vertical loads and the in-plane tyre wrench, eqs (35)-(36))
solved by Newton's method from the previous solution, and :math:`\ddot q` from the ABA, both
through :class:`pyomo_lap.ocp.point_functions.CarFunctions`: the model's one record of its rows
(the same Lie-group/ABA code that writes the Pyomo model, recorded once), evaluated on floats
(:func:`car_functions`). The integrators are SciPy's (:func:`scipy.integrate.solve_ivp`).

Controls are the model's (``u = (f_xa [N], f_xb [N], delta [rad])`` for the cars on the chain)
given by a control law ``u(t, x, segment)``:

* :class:`~pyomo_lap.verify.controls.PiecewiseControls`: constant per segment of time or of track distance, e.g. the
  element-wise constant controls of an OCP built with ``piecewise_constant_controls=True``
  (:func:`~pyomo_lap.verify.controls.controls_from_trajectory`). The integration restarts at every segment boundary (a
  time, or an event ``q1 = s_k``), so the integrator never steps over a jump of the controls;
* :class:`~pyomo_lap.verify.controls.CollocationControls`: per segment, the Lagrange polynomial through values at given
  nodes, e.g. the controls of an OCP with a control value at every collocation point (the
  default): in each finite element, the polynomial of degree ``ncp - 1`` through the element's
  collocation values (discontinuous at the element boundaries, where the integration restarts
  as for :class:`~pyomo_lap.verify.controls.PiecewiseControls`); for controls that are differential states of the OCP
  (``control_form = "state"``), the polynomial of degree ``ncp`` through the element's start
  and collocation points, continuous across the boundaries (``restart=False``: no restarts);
* :class:`~pyomo_lap.verify.controls.FunctionControls`: any function ``u(t, x)``;
* :class:`PathFollowing`: feed-forward controls plus a steering feedback that keeps the car on
  a reference path (see :mod:`pyomo_lap.verify.replay`).

The run stops at the end of the sector (``s_end``), at ``t_end``, when the car spins (a state
leaves the model's ``bounds``: ``|q3| > 0.8`` rad on the chain), stops (its speed state below
``v_min``), or when the algebraic loop has no solution (a wheel lifts);
:attr:`SimulationResult.status` says which.
"""
from __future__ import annotations

import dataclasses
import time as _time
from typing import Optional, Sequence

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicHermiteSpline, CubicSpline

from ..ocp.build import DEFAULT_MODEL, OCP_CONFIG, vehicle_model
from ..ocp.point_functions import (
    N_TRACK,
    AlgebraicLoopError,
    CarFunctions,
    track_vectors,
)
from ..ocp.record_model import RecordDynamics, as_dynamics
from ..track.arcs import ArcTrack
from .controls import CollocationControls, FunctionControls

__all__ = ["simulate", "car_functions", "SimulationResult", "PathFollowing", "TrackLookup",
           "state_names", "preview_steering", "model_dynamics", "shoot_elements"]


def state_names(n_q: int = 6) -> tuple:
    """Names of the time-domain state: ``q1..qn, q1_dot..qn_dot``."""
    return tuple(f"q{k}" for k in range(1, n_q + 1)) + tuple(f"q{k}_dot" for k in range(1, n_q + 1))


def car_functions(vehicle, model: str = DEFAULT_MODEL, tyres: bool = True) -> CarFunctions:
    """The float functions of a car (:class:`~pyomo_lap.ocp.point_functions.CarFunctions`)
    from the record of the vehicle model ``model`` (its ``VehicleModel.point_rows`` with the
    default OCP options): any registered model that records its rows.

    Raises
    ------
    ValueError
        An unknown model, or one whose rows are not recorded.
    """
    vm = vehicle_model(model)
    if vm.point_rows is None:
        raise ValueError(f"model {model!r} does not record its rows: no car functions")
    return CarFunctions(vm.point_rows(vehicle, OCP_CONFIG()), vehicle, vm, tyres=tyres)


def model_dynamics(vehicle, model=DEFAULT_MODEL):
    """The equations of the vehicle model ``model`` (a key of
    :data:`pyomo_lap.ocp.build.VEHICLE_MODELS` or a ``VehicleModel``) for ``vehicle`` as the
    simulation and the checks use them (``VehicleModel.dynamics``, the rows recorded with the
    default OCP options): a :class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics`.

    Raises
    ------
    ValueError
        An unknown model, or one without ``dynamics``.
    """
    vm = vehicle_model(model)
    if vm.dynamics is None:
        raise ValueError(f"model {vm.name!r}: its VehicleModel has no dynamics to simulate")
    return vm.dynamics(vehicle, vm, OCP_CONFIG())


def _dynamics(car, vehicle, model, tyres: bool):
    """The model's equations :func:`simulate` integrates: ``car`` itself (a ``ModelDynamics``),
    the dynamics of car functions (:class:`pyomo_lap.ocp.record_model.RecordDynamics`), or
    those of ``model`` for ``vehicle`` (without tyres: the car functions of
    :func:`car_functions`)."""
    if car is None:
        return (model_dynamics(vehicle, model) if tyres else
                RecordDynamics.of_car(car_functions(vehicle, model, tyres=False)))
    return as_dynamics(car)


def shoot_elements(track, vehicle, dynamics, s_track, X, U, Z, nodes, ends,
                   state_controls: bool = True, rtol: float = 1e-9) -> np.ndarray:
    """The local error of each finite element of a collocation solution by shooting: from the
    state at the element's start, :func:`simulate` with the element's control polynomial
    (:class:`~pyomo_lap.verify.controls.CollocationControls` through its start and
    collocation points, ``state_controls``, or through its collocation points) to its end,
    minus the collocation state there (for the defects of
    :func:`pyomo_lap.verify.defects.collocation_defects`).

    Parameters
    ----------
    track, vehicle
    dynamics : ModelDynamics
        The model's equations.
    s_track : (M,) ndarray
        The table's points on the track [m].
    X, U, Z : ndarray (M, ...)
        The table's states in ``s`` (``dynamics.states``, the time last), controls and
        algebraic variables.
    nodes : list of ndarray
        Each element's start row and collocation rows
        (:attr:`pyomo_lap.ocp.collocation.ElementPolynomials.nodes`).
    ends : (N,) ndarray
        Each element's last row.
    state_controls : bool
    rtol : float
        The integrator's relative tolerance.

    Returns
    -------
    ndarray (N, len(dynamics.states))
        The simulation minus the collocation at each element's end [state unit; the time
        [s]]; NaN where the simulation did not reach it.
    """
    out = np.full((len(nodes), X.shape[1]), np.nan)
    for j, (nd, i1) in enumerate(zip(nodes, ends)):
        i0 = nd[0]
        pts = nd if state_controls else nd[1:]
        ctl = CollocationControls("s", [s_track[i0] - 1.0, s_track[i1] + 1.0], [s_track[pts]],
                                  [U[pts]])
        T = X[i1, -1] - X[i0, -1]
        try:
            sim = simulate(track, vehicle, ctl, np.r_[s_track[i0], X[i0, :-1]],
                           t_end=10.0 * T + 1.0, s_end=s_track[i1],
                           z0=Z[i0] if Z.shape[1] else None, rtol=rtol, max_step=0.05,
                           car=dynamics)
        except ValueError:
            continue
        if sim.status != "end":
            continue
        out[j, :-1] = sim.x[-1, 1:] - X[i1, :-1]
        out[j, -1] = (sim.t[-1] - sim.t[0]) - T
    return out


# ------------------------------------------------------------------------------ track access
class TrackLookup:
    """Track vectors (:func:`pyomo_lap.ocp.point_functions.track_vector`) and widths at a track
    coordinate, with a one-entry cache (the integrator and the event functions ask for the same
    ``q1`` several times).

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
        Open tracks are evaluated at ``q1`` clipped to ``[0, length]`` (the integrator may try
        a stage a little past the end of the last segment).
    span : (float, float), optional
        A range of ``q1`` [m] to tabulate: the track is evaluated once on a grid of ``step``
        over it and interpolated there by cubic splines, about 20 times faster than
        evaluating the track's splines at every call (0.28 ms); outside the range the track
        is evaluated. Measured on the Nordschleife, 0-2000 m, with ``step = 0.25``: largest
        errors 6e-10 in the rotation matrix, 2e-10 1/m in ``Omega``, 4e-8 1/m^2 in
        ``dOmega/ds`` (4e-5 of its largest value); the widths exactly.
    step : float
        Grid step of the table [m].

    A track of straights and arcs (:class:`pyomo_lap.track.arcs.ArcTrack`) is not tabulated: its
    curvature steps at the junctions, which a spline through the grid would overshoot (a
    replay of dymos's racecar then steered against a curvature that is not there), and its
    closed forms are cheap to evaluate.
    """

    def __init__(self, track, span=None, step: float = 0.25):
        self.track = track
        self._key = None
        self._val = None
        self._table = None
        if span is not None and not isinstance(track, ArcTrack):
            self._tabulate(float(span[0]), float(span[1]), float(step))

    def _tabulate(self, a: float, b: float, step: float) -> None:
        if not self.track.closed:
            a, b = max(a, 0.0), min(b, self.track.length)
        n = int(np.ceil((b - a) / step))
        if not (step > 0 and n >= 3):
            return
        grid = a + step * np.arange(n + 1)
        s = grid if self.track.closed else np.minimum(grid, self.track.length)
        tp = self.track.evaluate(s)
        vals = np.column_stack([tp.rotation.reshape(len(grid), 9), tp.omega, tp.domega_ds,
                                tp.width_left, tp.width_right])
        c = CubicSpline(grid, vals, axis=0).c            # (4, n, 17)
        self._table = (a, step, n, grid[-1], np.ascontiguousarray(np.transpose(c, (1, 0, 2))))

    def _evaluate(self, q1: float):
        tab = self._table
        if tab is not None and tab[0] <= q1 <= tab[3]:
            a, step, n, _, c = tab
            i = min(int((q1 - a) / step), n - 1)
            d = q1 - (a + i * step)
            ci = c[i]
            v = ((ci[0] * d + ci[1]) * d + ci[2]) * d + ci[3]
            return v[:N_TRACK].copy(), float(v[15]), float(v[16])
        s = q1 if self.track.closed else min(max(q1, 0.0), self.track.length)
        tp = self.track.evaluate(np.array([s]))
        return track_vectors(tp)[0], float(tp.width_left[0]), float(tp.width_right[0])

    def __call__(self, q1: float):
        """The track vector and the widths at ``q1`` (the last one cached)."""
        q1 = float(q1)
        if q1 != self._key:
            self._key, self._val = q1, self._evaluate(q1)
        return self._val


def preview_steering(e_y, e_psi, speed, gain: float, preview_time: float,
                     preview_min: float):
    r"""The steering correction of the look-ahead driver [rad]: :math:`K\,(e_y + L\,e_\psi)`,
    :math:`L = \max(L_{min}, T_p v)` (:class:`PathFollowing`).

    Parameters
    ----------
    e_y : float
        Lateral error, the reference's lateral offset minus the car's [m] (+: the path is to
        the car's left, and a positive steer angle steers left).
    e_psi : float
        Heading error, the reference's heading relative to the centre line minus the car's
        [rad].
    speed : float
        The car's speed along the centre line [m/s].
    gain, preview_time, preview_min : float
        K [rad/m], T_p [s], L_min [m].
    """
    L = max(preview_min, preview_time * speed)
    return gain * (e_y + L * e_psi)


class PathFollowing:
    r"""Feed-forward controls plus a path-following steering feedback.

    .. math::
        \delta = \delta_{ff} + K\,\big[(n^{ref}(s) - n) + L\,(\psi^{ref}(s) - \psi)\big],
        \qquad L = \max(L_{min}, T_p \dot s),

    the lateral error at a preview point a distance :math:`L` ahead (a classic "look-ahead"
    driver model, :func:`preview_steering`): :math:`n` the lateral offset and :math:`\psi` the
    heading relative to the centre line (the model's ``path`` roles: ``q2`` and ``q3`` on the
    chain, the racecar's ``n`` and ``alpha``), :math:`\dot s` the speed along the centre line.
    :math:`n` grows to the left and :math:`\delta > 0` steers left, so a car right of its path
    steers left. The steer angle is kept within the model's ``control_bounds``. Optionally (a
    car with the drive and brake forces ``f_xa``, ``f_xb`` first among its controls) a speed
    feedback :math:`\Delta f_x = K_v m\,(v^{ref} - v)` adds to the traction force when positive
    (capped by the power limit) and to the braking force when negative.

    Parameters
    ----------
    feedforward : PiecewiseControls or CollocationControls
        The open-loop controls (e.g. of a solved OCP).
    s_ref : (M,) increasing track coordinates [m]
    q2_ref, q3_ref : (M,)
        Reference lateral offset [m] and heading [rad] at ``s_ref``.
    gain : float
        K [rad/m].
    preview_time : float
        T_p [s].
    preview_min : float
        L_min [m].
    v_ref : (M,), optional
        Reference speed [m/s] (needed when ``k_v > 0``).
    k_v : float
        K_v [1/s] (0: no speed feedback).
    vehicle : VehicleParameters, optional
        For the steering limit ``delta_max`` (without ``dynamics``), the mass and the power
        limit.
    reference : callable, optional
        ``reference(s [m]) -> (lateral [m], heading [rad], speed [m/s])``: the reference
        between the points, replacing the linear interpolation of ``q2_ref``, ``q3_ref`` and
        ``v_ref`` at ``s_ref`` (e.g. the collocation polynomials of an optimum; on its
        elements of up to 20 m the chords of the linear interpolation leave the path by
        centimetres, which the feedback then steers towards).
    dynamics : ModelDynamics, optional
        The model driven: the positions of its ``path`` roles in its state and controls, its
        speed along the centre line ``path_speed``, its steering bounds. Default: a car on the
        chain (``q2``, ``q3`` second and third, ``q1_dot`` the first rate, ``delta`` third).
    track_lookup : TrackLookup, optional
        The track for ``dynamics.path_speed`` (with ``dynamics``).

    Raises
    ------
    ValueError
        A negative gain, or ``k_v > 0`` without ``v_ref`` and ``vehicle``.
    """

    def __init__(self, feedforward, s_ref, q2_ref, q3_ref, gain: float = 0.05,
                 preview_time: float = 0.3, preview_min: float = 3.0, v_ref=None,
                 k_v: float = 0.0, vehicle=None, reference=None, dynamics=None,
                 track_lookup: Optional["TrackLookup"] = None):
        self.ff = feedforward
        self.basis, self.breaks = feedforward.basis, feedforward.breaks
        self.restart = getattr(feedforward, "restart", True)
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
        self.reference = reference
        self._roles(dynamics, track_lookup)

    def _roles(self, dyn, look) -> None:
        """The positions of the lateral offset, the heading and the speed in the state, of the
        steering in the controls, and its bounds."""
        self._speed = None
        if dyn is None:             # a car on the chain: q1..qn, q1_dot..qn_dot; f_xa, f_xb, delta
            self._lat, self._head, self._steer = 1, 2, 2
            p = self.vehicle
            self._steer_bounds = None if p is None else (-p.delta_max, p.delta_max)
            return
        names, path = list(dyn.names), dyn.path
        self._lat, self._head = names.index(path.lateral), names.index(path.heading)
        self._steer = list(dyn.controls).index(path.steer)
        self._steer_bounds = dyn.control_bounds.get(path.steer)
        self._speed = lambda x: dyn.path_speed(look(x[0])[0], x)

    def segment(self, b) -> int:
        """The segment of ``b`` (a track coordinate or a time)."""
        return self.ff.segment(b)

    def correction(self, x):
        """Steering correction [rad] at state ``x`` (before the steering limit)."""
        s = x[0]
        if self.reference is not None:
            q2r, q3r = self.reference(s)[:2]
            e_y, e_psi = q2r - x[self._lat], q3r - x[self._head]
        else:
            e_y = np.interp(s, self.s_ref, self.q2_ref) - x[self._lat]
            e_psi = np.interp(s, self.s_ref, self.q3_ref) - x[self._head]
        speed = x[len(x) // 2] if self._speed is None else self._speed(x)
        return preview_steering(e_y, e_psi, speed, self.gain, self.preview_time, self.preview_min)

    def __call__(self, t, x, segment: int):
        """The controls at time ``t`` and state ``x`` in segment ``segment``."""
        u = np.array(self.ff(t, x, segment), dtype=float)
        delta = u[self._steer] + self.correction(x)
        if self._steer_bounds is not None:
            delta = min(max(delta, self._steer_bounds[0]), self._steer_bounds[1])
        u[self._steer] = delta
        if self.k_v > 0:
            p, n = self.vehicle, len(x) // 2
            v_ref = (self.reference(x[0])[2] if self.reference is not None
                     else np.interp(x[0], self.s_ref, self.v_ref))
            dfx = self.k_v * p.m * (v_ref - x[n])
            if dfx > 0:
                u[0] = min(u[0] + dfx, p.P_max / max(x[n], 1.0))
            else:
                u[1] = u[1] + dfx
        return u


# ------------------------------------------------------------------------------ results
@dataclasses.dataclass
class SimulationResult:
    r"""Output of :func:`simulate`.

    Attributes
    ----------
    t : ndarray (n,)
        Times of the accepted integrator steps [s].
    x : ndarray (n, len(names))
        The state in time at those times (:attr:`names`; a car on the chain: ``q1..q_nq,
        q1_dot..``, :func:`state_names`), the track coordinate first [m].
    u : ndarray (n, len(controls))
        The controls applied at those times (``f_xa, f_xb [N], delta [rad]`` on the chain).
    z : ndarray (n, n_z)
        Algebraic variables (loads, in-plane tyre wrench) [N, N m].
    xdot : ndarray (n, len(names))
        The state's time derivative at those times (on the chain :math:`(\dot q, \ddot q)`).
    status : str
        ``'end'`` (reached ``s_end``), ``'t_end'``, ``'spin'`` (a state left the model's
        bounds: ``|q3| > 0.8`` on the chain), ``'stopped'`` (the speed state below ``v_min``),
        ``'algebraic'`` (no solution of the algebraic loop, e.g. a wheel lifts), ``'solver'``
        (the integrator failed).
    message : str
        What happened, with time and place.
    t_stop, s_stop : float
        Time [s] and track coordinate [m] where the run ended (for ``'algebraic'`` the failing
        evaluation, which lies at most one chunk after the last stored step).
    algebraic, names, controls : tuple of str
        The names of ``z``'s, ``x``'s and ``u``'s columns.
    n_rhs : int
        Right-hand-side evaluations.
    wall_time_s : float
    """

    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    z: np.ndarray
    xdot: np.ndarray
    status: str
    message: str
    t_stop: float
    s_stop: float
    algebraic: tuple
    names: tuple
    controls: tuple = ("f_xa", "f_xb", "delta")
    n_rhs: int = 0
    wall_time_s: float = 0.0

    @property
    def success(self) -> bool:
        """True when the run ended at ``s_end`` or ``t_end``."""
        return self.status in ("end", "t_end")

    def dataframe(self):
        """One row per stored step: ``t``, ``s`` (the track coordinate), the states, the
        time derivatives of the rates (``<joint>_ddot`` of ``<joint>_dot``) and of the states
        without a rate among the states (``d<name>_dt``), controls and algebraic variables, in
        SI units (see :data:`pyomo_lap.results.table.UNITS`)."""
        cols = {"t": self.t, "s": self.x[:, 0]}
        for k, name in enumerate(self.names):
            cols[name] = self.x[:, k]
        for k, name in enumerate(self.names):
            if name.endswith("_dot"):
                cols[name[:-len("_dot")] + "_ddot"] = self.xdot[:, k]
            elif f"{name}_dot" not in self.names:
                cols[f"d{name}_dt"] = self.xdot[:, k]
        for k, name in enumerate(self.controls):
            cols[name] = self.u[:, k]
        for k, name in enumerate(self.algebraic):
            cols[name] = self.z[:, k]
        return pd.DataFrame(cols)

    def at_s(self, s_query) -> np.ndarray:
        """States at track coordinates ``s_query`` (cubic Hermite in time, with ``t(s)`` from
        the monotone track coordinate ``x[:, 0]``); NaN outside the simulated range.

        Returns
        -------
        ndarray (m, len(names) + 1)
            The state and, last, the time [s] at which the car passed each ``s``.
        """
        s_query = np.atleast_1d(np.asarray(s_query, float))
        t, x = self.t, self.x
        keep = np.concatenate([[True], np.diff(t) > 0])
        t, x = t[keep], x[keep]
        ny = x.shape[1]
        out = np.full((len(s_query), ny + 1), np.nan)
        if len(t) < 2:
            return out
        spl = CubicHermiteSpline(t, x, self.xdot[keep], axis=0)
        q1 = x[:, 0]
        # a run that stops at s_end ends there to the event tolerance: 1 um counts as inside
        inside = (s_query >= q1[0] - 1e-6) & (s_query <= q1[-1] + 1e-6)
        if not np.all(np.diff(q1) > 0):
            inside &= False
        tq = np.interp(np.clip(s_query[inside], q1[0], q1[-1]), q1, t)
        for _ in range(3):   # Newton on s(t) = s
            tq = np.clip(tq - (spl(tq)[:, 0] - s_query[inside]) / np.maximum(spl(tq, 1)[:, 0], 1e-6),
                         t[0], t[-1])
        out[inside, :ny] = spl(tq)
        out[inside, -1] = tq
        return out


# ------------------------------------------------------------------------------ simulation
def simulate(track, vehicle, controls, x0: Sequence[float], t_end: float, *,
             s_end: Optional[float] = None, z0: Optional[Sequence[float]] = None,
             model=DEFAULT_MODEL, tyres: bool = True, method: str = "RK45",
             rtol: float = 1e-6, atol: Optional[Sequence[float]] = None,
             max_step: float = 0.05, chunk: float = 1.0, bounds: Optional[dict] = None,
             v_min: float = 1.0, car=None,
             track_lookup: Optional[TrackLookup] = None) -> SimulationResult:
    r"""Integrate a vehicle model's equations in time (module docstring).

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
    vehicle : VehicleParameters or RacecarParameters
    controls : PiecewiseControls, FunctionControls, PathFollowing or callable
        Control law; a plain callable ``u(t, x)`` is wrapped in :class:`FunctionControls`.
    x0 : (len(names),)
        Initial state in time (``ModelDynamics.names``; a car on the chain ``q1..q_nq,
        q1_dot..`` [m, rad, m/s, rad/s]); the first is the track coordinate [m].
    t_end : float
        Final time [s] (the initial time is 0, or ``controls.breaks[0]`` for time-based
        piecewise controls).
    s_end : float, optional
        Stop when the track coordinate reaches it [m].
    z0 : (n_z,), optional
        Guess of the algebraic variables at the start.
    model : str or VehicleModel
        The vehicle model (:func:`model_dynamics`) when ``car`` is not given.
    tyres : bool
        False: no in-plane tyre forces (``f_3x = f_3y = m_3z = 0``; a car on the chain), e.g.
        to check energy conservation.
    method : str
        :func:`scipy.integrate.solve_ivp` method (``'RK45'``, ``'DOP853'``, ``'LSODA'``,
        ``'Radau'`` ...).
    rtol : float
    atol : (len(names),), optional
        Default ``rtol`` times the model's ``magnitudes`` (a car on the chain: 1 m, 1 m,
        1 rad, 0.01 m, 0.01 rad, 0.01 rad, 10 m/s, 1 m/s, 1 rad/s, 0.1 m/s, 0.1 rad/s,
        0.1 rad/s for the full model; 0.01 and 0.1 for every joint after the third).
    max_step : float
        Largest step [s].
    chunk : float
        Longest single call of the integrator [s]: a failure of the algebraic loop loses at most
        this much of the stored trajectory (the failing time and place are still reported).
    bounds : dict, optional
        ``{state: (lower, upper)}``: stop when a state leaves them (spin); default the
        model's (``|q3| <= 0.8`` rad on the chain).
    v_min : float
        Stop when the model's speed state falls below it [m/s].
    car : ModelDynamics or CarFunctions, optional
        The model's equations, if made already (recording and tracing a car on the chain takes
        about 0.2 s); ``model`` and ``tyres`` are then not used.
    track_lookup : TrackLookup, optional
        The track access (default ``TrackLookup(track)``: the track's splines evaluated at
        every call); one with a ``span`` tabulates the track (faster).

    Returns
    -------
    SimulationResult

    Raises
    ------
    ValueError
        Wrong length of ``x0``, non-finite values, ``t_end`` not after the start, a model
        without ``dynamics``, or the initial algebraic loop without solution.
    """
    wall0 = _time.perf_counter()
    run = _prepare_run(track, vehicle, controls, x0, t_end, z0, model, tyres, car, track_lookup)
    dyn = run.dyn
    if atol is None:
        atol = rtol * np.asarray(dyn.magnitudes, float)
    # the initial algebraic loop (a clear error before any integration)
    try:
        run.rhs(run.t0, run.x0)
    except AlgebraicLoopError as exc:
        raise ValueError(f"no solution of the algebraic loop at the initial state: {exc}") from None
    stops = _stop_events(dyn, dyn.bounds if bounds is None else bounds, v_min, s_end)
    T, X, status, message = _integrate(run, stops, t_end, chunk,
                                       dict(method=method, rtol=rtol, atol=atol, max_step=max_step))
    U, Z, XD = _at_steps(run, T, X, z0)
    if status == "algebraic":
        t_stop, s_stop = run.where
    else:
        t_stop, s_stop = float(T[-1]), float(X[-1, 0])
    return SimulationResult(t=T, x=X, u=U, z=Z, xdot=XD, status=status, message=message,
                            t_stop=float(t_stop), s_stop=float(s_stop),
                            algebraic=tuple(dyn.algebraic), names=tuple(dyn.names),
                            controls=tuple(dyn.controls), n_rhs=run.n_rhs,
                            wall_time_s=_time.perf_counter() - wall0)


@dataclasses.dataclass
class _Run:
    """What the steps of :func:`simulate` share: the model's equations, the control law and
    its segments, the track access, and the running state of the right-hand side."""

    dyn: object                    # the model's ModelDynamics
    controls: object
    look: TrackLookup
    x0: np.ndarray
    t0: float                      # the initial time [s]
    basis: Optional[str]           # the controls' segments in 's' or 't' (None: no segments)
    breaks: Optional[np.ndarray]   # the segments' boundaries
    n_seg: int                     # segments the integration restarts at
    z: Optional[np.ndarray] = None     # the last solution of the algebraic loop
    seg: int = 0                       # the control segment being integrated
    n_rhs: int = 0                     # right-hand-side evaluations
    where: tuple = (0.0, 0.0)          # (t [s], q1 [m]) of the last evaluation

    def rhs(self, t, x):
        r""":math:`\dot x` (the model's ``time_rates``), the algebraic loop solved from the last
        ``z``."""
        self.n_rhs += 1
        self.where = (t, x[0])
        trk = self.look(x[0])[0]
        u = self.controls(t, x, self.seg)
        xdot, self.z = self.dyn.time_rates(trk, x, u, self.z)
        return xdot

    def segment_at(self, t, x) -> int:
        """The control segment at time ``t`` and state ``x``."""
        return self.controls.segment(x[0] if self.basis == "s" else t)


def _prepare_run(track, vehicle, controls, x0, t_end, z0, model, tyres, car,
                 track_lookup) -> _Run:
    """Step 1 of :func:`simulate`: check the inputs, the model's equations, wrap the controls."""
    dyn = _dynamics(car, vehicle, model, tyres)
    names = tuple(dyn.names)
    x0 = np.asarray(x0, float)
    if x0.shape != (len(names),) or not np.all(np.isfinite(x0)):
        raise ValueError(f"x0 must be {len(names)} finite numbers ({', '.join(names)}), got {x0!r}")
    if not callable(getattr(controls, "segment", None)):
        controls = FunctionControls(controls)
    basis = getattr(controls, "basis", None)
    breaks = getattr(controls, "breaks", None)
    t0 = float(breaks[0]) if basis == "t" else 0.0
    # segments the integration restarts at (none for controls continuous across them)
    n_seg = len(breaks) - 1 if breaks is not None and getattr(controls, "restart", True) else 1
    if not t_end > t0:
        raise ValueError(f"t_end = {t_end!r} s must be after the start {t0} s")
    look = track_lookup if track_lookup is not None else TrackLookup(track)
    run = _Run(dyn=dyn, controls=controls, look=look, x0=x0, t0=t0, basis=basis, breaks=breaks,
               n_seg=n_seg, z=None if z0 is None else np.asarray(z0, float), where=(t0, x0[0]))
    run.seg = run.segment_at(t0, x0)
    return run


def _stop_events(dyn, bounds: dict, v_min: float, s_end: Optional[float]) -> list:
    """The terminal events of a run, ``(status, event function, message)``: a spin (a state
    out of ``bounds``), a stop (the model's speed state below ``v_min``) and, with ``s_end``,
    the end of the sector."""
    names = list(dyn.names)
    stops = []
    for name, (lo, hi) in bounds.items():
        k = names.index(name)

        def ev_spin(t, x, _k=k, _lo=lo, _hi=hi):
            return min(x[_k] - _lo, _hi - x[_k])
        ev_spin.terminal, ev_spin.direction = True, -1
        text = (f"|{name}| > {hi:g}" if lo == -hi else f"{name} outside [{lo:g}, {hi:g}]")
        stops.append(("spin", ev_spin, f"the car spun: {text} rad"))
    v = names.index(dyn.path.speed)

    def ev_stop(t, x):
        return x[v] - v_min
    ev_stop.terminal, ev_stop.direction = True, -1
    stops.append(("stopped", ev_stop, f"the car stopped: {dyn.path.speed} < {v_min} m/s"))
    if s_end is not None:
        def ev_end(t, x):
            return x[0] - s_end
        ev_end.terminal, ev_end.direction = True, 1
        stops.append(("end", ev_end, f"reached s_end = {s_end} m"))
    return stops


def _segment_event(s_next: float):
    """Terminal event ``q1 = s_next``: the boundary of a control segment in distance."""
    def ev_seg(tt, xx):
        return xx[0] - s_next
    ev_seg.terminal, ev_seg.direction = True, 1
    return ev_seg


def _integrate(run: _Run, stops: list, t_end: float, chunk: float, ivp: dict) -> tuple:
    """Step 2 of :func:`simulate`: integrate chunk by chunk, restarting at every segment
    boundary, until a stop event, ``t_end``, or a failure.

    Returns
    -------
    (T, X, status, message)
        The accepted steps' times (n,) [s] and states (n, 2 n_q), and how the run ended.
    """
    basis, breaks, n_seg = run.basis, run.breaks, run.n_seg
    texts = {name: text for name, _, text in stops}
    T, X = [np.array([run.t0])], [run.x0[None, :]]
    t, x = run.t0, run.x0.copy()
    status, message = None, ""
    while status is None:
        seg = run.seg
        t_stop = min(t_end, t + chunk)
        events = [e for _, e, _ in stops]
        names = [k for k, _, _ in stops]
        if basis == "t" and seg + 1 < n_seg:
            t_stop = min(t_stop, float(breaks[seg + 1]))
        if basis == "s" and seg + 1 < n_seg:
            events.append(_segment_event(float(breaks[seg + 1])))
            names.append("segment")
        if t_stop <= t:
            status, message = "t_end", f"reached t_end = {t_end} s"
            break
        try:
            sol = solve_ivp(run.rhs, (t, t_stop), x, events=events, **ivp)
        except AlgebraicLoopError as exc:
            tf, sf = run.where
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
                run.seg = seg + 1
                continue
            status = names[k]
            message = texts[status] + f" at t = {t:.3f} s, q1 = {x[0]:.1f} m"
            break
        if basis == "t" and seg + 1 < n_seg and t >= float(breaks[seg + 1]) - 1e-12:
            run.seg = seg + 1
        if t >= t_end:
            status, message = "t_end", f"reached t_end = {t_end} s at q1 = {x[0]:.1f} m"
    return np.concatenate(T), np.concatenate(X), status, message


def _at_steps(run: _Run, T: np.ndarray, X: np.ndarray, z0) -> tuple:
    """Step 3 of :func:`simulate`: controls (n, n_u), algebraic variables (n, n_z) and the
    state's time derivative (n, len(names)) at the stored steps (NaN where the algebraic loop
    fails)."""
    dyn, controls = run.dyn, run.controls
    U = np.zeros((len(T), len(dyn.controls)))
    Z = np.zeros((len(T), len(dyn.algebraic)))
    XD = np.zeros_like(X)
    z = None if z0 is None else np.asarray(z0, float)
    for i, (ti, xi) in enumerate(zip(T, X)):
        seg = run.segment_at(ti, xi)
        if run.basis == "s" and i + 1 < len(T) and X[i + 1, 0] > xi[0]:
            seg = controls.segment(0.5 * (xi[0] + X[i + 1, 0]))   # a step starting on a boundary
        u = np.asarray(controls(ti, xi, seg), float)
        try:
            xd, z = dyn.time_rates(run.look(xi[0])[0], xi, u, z)
        except AlgebraicLoopError:
            z, xd = np.full(len(dyn.algebraic), np.nan), np.full(len(xi), np.nan)
        U[i], Z[i], XD[i] = u, z, xd
    return U, Z, XD
