"""The sector of the optimal control problem, shared by every vehicle model: where it lies and
how it starts and ends.

The sector and its mesh (:func:`sector_mesh`, :func:`_sector_points`, :func:`track_joints`,
:func:`fast_element_lookup`), the track coordinate of its points (:func:`track_coordinate`), the entry speed of an open sector (:func:`entry_speed`),
pyomo.dae's collocation on the track and the track limits (:func:`discretize_on_track`,
:func:`track_limits`, :func:`set_track_limits`), the boundary conditions
(:func:`add_boundary_conditions`), and the start and end every vehicle model's ``build``
shares (:func:`new_sector_model`, :func:`finish_build`). The objective, the scaling and the
named per-point expressions are in :mod:`pyomo_lap.ocp.common`.

This module imports no vehicle model and no builder (:mod:`pyomo_lap.ocp.build`): they import it.
"""
from __future__ import annotations

import bisect
import math
import time

import numpy as np
import pyomo.environ as pyo
from pyomo.dae import ContinuousSet

from ..spatial.tree import TrackJoint
from ..util.domains import number_text
from ..vehicle.speed_profile import quasi_steady_speed
from .common import add_objective, control_states, reference_time, scale_control_rates
from .mesh import adaptive_boundaries
from .vehicle_model import ProblemData, car_block, update_problem

__all__ = ["sector_mesh", "sector_track_points", "track_joints", "fast_element_lookup", "entry_speed",
           "discretize_on_track", "track_limits", "set_track_limits", "add_boundary_conditions",
           "new_sector_model", "finish_build", "track_coordinate"]


def track_coordinate(start: float, s_sector, track_length: float | None = None) -> np.ndarray:
    """The track coordinate ``s`` [m] of points ``s_sector`` [m] of a sector from ``start``.

    On a closed track (``track_length`` given) a point past the start of the sector is put in
    ``(0, track_length]``: the finish line reached from before is ``track_length``, not 0, so
    a closed lap from the start line runs from 0 to ``track_length`` increasing; only a sector
    that crosses the line in its middle restarts from (just above) 0 there.

    Parameters
    ----------
    start : float
        Track coordinate of the sector start [m].
    s_sector : array_like (n,)
        Distances from the sector start [m], >= 0.
    track_length : float, optional
        Length of a closed track [m]; None for an open track (``start + s_sector``).

    Returns
    -------
    ndarray (n,)
    """
    x = float(start) + np.asarray(s_sector, dtype=float)
    if track_length is None:
        return x
    L = float(track_length)
    laps = np.maximum(np.ceil(x / L - 1.0 - 1e-12), 0.0)    # whole laps behind the point
    return np.where(x > 0.0, x - L * laps, x)


def sector_track_points(track, start, length, sigma):
    """The track at points ``sigma`` [m] of the sector that starts at ``start`` [m] (a closed
    track's coordinate taken modulo its length): the :class:`~pyomo_lap.track.points.TrackPoints`
    of the build's mesh (``m.problem.track_points``) and of any other points (the channels on a
    fixed step)."""
    s_track = start + np.asarray(sigma, dtype=float)
    if track.closed:
        s_track = np.mod(s_track, track.length)
    return track.evaluate(s_track)


_sector_points = sector_track_points      # its name in the vehicle models' builds



def fast_element_lookup(cs) -> None:
    """Give a ``ContinuousSet`` a ``get_lower_element_boundary`` that finds the element by
    bisection (same results as pyomo.dae's method, which scans the list of element boundaries
    at every call: pyomo.dae calls it once per collocation equation, so the discretization of
    a full lap cost O(N^2), 3 s of the build at N = 2000)."""
    original = cs.get_lower_element_boundary

    def get_lower_element_boundary(point, _cs=cs):
        fe = _cs._fe
        if not fe or point < fe[0]:
            return original(point)
        i = bisect.bisect_left(fe, point)
        if i < len(fe) and fe[i] == point:
            if i != 0 and _cs._discretization_info.get("scheme") == "LAGRANGE-RADAU":
                return fe[i - 1]
            return point
        return fe[i - 1]

    cs.get_lower_element_boundary = get_lower_element_boundary


def track_joints(tp) -> list:
    """TrackJoint objects (numbers) for each point of a :class:`~pyomo_lap.track.points.TrackPoints`.

    ``J = [1, 0, 0, Omega]`` and ``dJ = [0, 0, 0, dOmega/ds]`` because q1 is the arc length
    (eq 12b with ``|p_,q1| = 1``)."""
    out = []
    for i in range(len(tp.s)):
        om = [float(x) for x in tp.omega[i]]
        dom = [float(x) for x in tp.domega_ds[i]]
        out.append(TrackJoint(R=tp.rotation[i].tolist(), J=[1.0, 0, 0] + om,
                              dJ=[0, 0, 0] + dom, p=tp.position[i].tolist()))
    return out


_V_MAX = 150.0
"""Upper bound of ``q1_dot`` [m/s] in every car model."""


def sector_mesh(track, cfg, vehicle=None):
    """Check the sector options against the track and return ``(L, bounds)``: the sector
    length [m] and the element boundaries (None: uniform, ``cfg.nfe`` elements; when
    ``element_boundaries`` is given, ``cfg.nfe`` is set to their number minus one). With
    ``cfg.mesh == "adaptive"`` (and neither ``nfe`` nor ``element_boundaries`` given) the
    boundaries are placed for ``vehicle`` by :func:`pyomo_lap.ocp.mesh.adaptive_boundaries`.

    Raises
    ------
    ValueError
        Sector outside an open track, longer than one lap of a closed track, periodic on a
        sector that is not a whole closed lap, bad element boundaries, too short a sector for
        the mesh.
    """
    if not (np.isfinite(cfg.start) and 0 <= cfg.start < track.length):
        raise ValueError(f"start = {cfg.start!r} m: expected 0 <= start < {track.length:.1f} m "
                         f"(the length of track {track.name!r})")
    L = track.length - cfg.start if cfg.length is None else cfg.length
    if not np.isfinite(L):
        raise ValueError(f"length = {cfg.length!r} m: expected a finite sector length")
    if not L > 0:
        raise ValueError(f"sector length must be > 0 m, got length={cfg.length!r} "
                         f"(start={cfg.start} m, track length {track.length:.1f} m)")
    if track.closed and L > track.length + 1e-6 * max(1.0, track.length):
        raise ValueError(f"sector length {number_text(L)} m: longer than one lap of the closed loop "
                         f"{track.name!r}, which is {track.length:.1f} m long; expected a length "
                         f"<= {track.length:.1f} m (a sector is at most one lap; the whole lap: "
                         "periodic=True, length=None)")
    if not track.closed and cfg.start + L > track.length + 1e-6:
        raise ValueError(f"sector [{cfg.start}, {cfg.start + L}] m runs past the end of the open "
                         f"track {track.name!r} (length {track.length:.1f} m)")
    if cfg.periodic and (not track.closed or abs(L - track.length) > 1e-6):
        raise ValueError("periodic=True needs a closed track and a sector of one whole lap "
                         f"(length {track.length:.1f} m), got length={L:.1f} m")
    bounds = None
    if cfg.nfe is None and cfg.element_boundaries is None:
        if not (np.isfinite(cfg.element_length) and cfg.element_length > 0):
            raise ValueError(f"element_length = {cfg.element_length!r} m: expected a positive length")
        if getattr(cfg, "mesh", "uniform") == "adaptive" and vehicle is not None:
            v0 = None
            if not cfg.periodic and cfg.initial_speed != "free":
                v0 = entry_speed(track, vehicle, cfg, _V_MAX)
            bounds = np.round(adaptive_boundaries(track, vehicle, cfg.start, L, cfg.periodic, cfg,
                                                  v_start=v0), 6)
            bounds[0], bounds[-1] = 0.0, L        # exactly the sector's ends (not rounded)
            cfg.nfe = len(bounds) - 1
            return L, bounds
        cfg.nfe = max(2, int(math.ceil(L / cfg.element_length - 1e-9)))
    if cfg.element_boundaries is not None:
        bounds = np.round(np.asarray(cfg.element_boundaries, dtype=float), 6)
        if (len(bounds) < 2 or not np.all(np.isfinite(bounds)) or abs(bounds[0]) > 1e-6
                or abs(bounds[-1] - L) > 1e-6 or np.any(np.diff(bounds) < 0.1)):
            raise ValueError(f"element_boundaries must increase from 0 to the sector length {L:.6f} m "
                             f"in steps of at least 0.1 m, got {len(bounds)} values "
                             f"[{bounds[0] if len(bounds) else ''} ... {bounds[-1] if len(bounds) else ''}]")
        bounds[0], bounds[-1] = 0.0, L
        cfg.nfe = len(bounds) - 1
    if L / cfg.nfe < 0.1:
        raise ValueError(f"nfe={cfg.nfe} is too many for a {L:.1f} m sector (elements < 0.1 m)")
    return L, bounds


def entry_speed(track, p, cfg, v_max: float) -> float:
    """Speed q1_dot [m/s] at the start of an open sector: the quasi-steady flying-lap estimate
    there (:func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`) or ``cfg.initial_speed``.

    Raises
    ------
    ValueError
        A given speed outside ``[v_min, v_max]``.
    """
    if cfg.initial_speed == "quasi-steady":
        if track.closed:
            s_lap = np.linspace(0.0, track.length, int(track.length / 5.0) + 1)
            tl = track.evaluate(s_lap)
            v_lap = quasi_steady_speed(p, s_lap, tl.omega, tl.rotation, closed=True)
            v0 = float(np.interp(np.mod(cfg.start, track.length), s_lap, v_lap))
        else:
            tl = track.evaluate(np.array([cfg.start]))
            v0 = float(quasi_steady_speed(p, np.array([cfg.start]), tl.omega, tl.rotation, closed=False)[0])
    else:
        v0 = float(cfg.initial_speed)
        if not (np.isfinite(v0) and cfg.v_min <= v0 <= v_max):
            raise ValueError(f"initial_speed = {cfg.initial_speed!r} m/s: expected a speed "
                             f"between v_min = {cfg.v_min} and {v_max} m/s")
    return v0


def discretize_on_track(m, track, vehicle, cfg, length: float, controls) -> tuple:
    """pyomo.dae's collocation of ``m`` over ``m.s``, then the track at its points and the
    track limits on ``q2``: the steps every vehicle model's build shares.

    Sets ``m.problem.dae_time_s`` (pyomo.dae's share of the build [s]), ``m.problem.track_points`` (the
    track numbers at the points, :class:`pyomo_lap.track.points.TrackPoints`: the record's
    track inputs); bounds ``m.q2[s]`` to the track's width minus half the car's width
    and ``cfg.track_margin`` each side.

    Parameters
    ----------
    m : ConcreteModel
        With the ContinuousSet ``m.s`` [m], the variables (``q2`` among them) and their
        ``DerivativeVar`` s declared.
    track, vehicle : Track, VehicleParameters
    cfg : OCP_CONFIG value (``nfe``, ``ncp``, ``scheme``, ``start``,
        ``piecewise_constant_controls``, ``track_margin``)
    length : float
        Sector length [m].
    controls : sequence of str
        The control variables (one value per element with piecewise-constant controls).

    Returns
    -------
    (sigma (n,) ndarray of the points [m], TrackPoints, {point: index})

    Raises
    ------
    ValueError
        The track is narrower than the car plus margins somewhere (the message says where).
    """
    if cfg.piecewise_constant_controls and control_states(cfg, m):
        raise ValueError("piecewise_constant_controls = True needs control_form = 'point': "
                         "controls that are states are continuous along the track")
    disc = pyo.TransformationFactory("dae.collocation")
    t_dae = time.perf_counter()
    disc.apply_to(m, wrt=m.s, nfe=cfg.nfe, ncp=cfg.ncp, scheme=cfg.scheme)
    if cfg.piecewise_constant_controls and cfg.ncp > 1:
        for c in controls:
            disc.reduce_collocation_points(m, var=m.component(c), ncp=1, contset=m.s)
    dae_time_s = time.perf_counter() - t_dae      # pyomo.dae's share of the build
    sigma = np.array(sorted(m.s))
    tp = _sector_points(track, cfg.start, length, sigma)
    update_problem(m, dae_time_s=dae_time_s, track_points=tp)
    idx = {s: i for i, s in enumerate(sigma)}
    patches = getattr(m.problem.vehicle_model, "patch_limits", False)
    set_track_limits(m, track_limits(track, tp, sigma, vehicle, cfg, patches), idx)
    return sigma, tp, idx


def track_limits(track, tp, sigma, vehicle, cfg, patches: bool = False) -> tuple:
    """The bounds of ``q2`` [m] at the points: the track's width each side minus half the
    car's width and ``cfg.track_margin``; with ``patches`` (a model whose rows keep each
    contact patch within the track, :attr:`~pyomo_lap.ocp.vehicle_model.VehicleModel.patch_limits`)
    the track's width each side minus ``cfg.track_margin`` (the car's centre within the
    edges), the check below with the contact patches' span ``max(t_i + tw_i)``.

    Parameters
    ----------
    track : Track
        For the message.
    tp : TrackPoints
        The track at the points (``width_left``, ``width_right``, (n,) [m]).
    sigma : (n,) array
        The points [m] from the sector start.
    vehicle : VehicleParameters
        ``width`` [m].
    cfg : OCP options (``start``, ``track_margin``)

    Returns
    -------
    (lower, upper) : two (n,) arrays [m]

    Raises
    ------
    ValueError
        The track is narrower than the car plus margins at a point (the first one is named).
    """
    span = (max(vehicle.t1 + vehicle.tw1, vehicle.t2 + vehicle.tw2) if patches else vehicle.width)
    half = 0.5 * span + cfg.track_margin
    lower = -(np.asarray(tp.width_right, dtype=float) - half)
    upper = np.asarray(tp.width_left, dtype=float) - half
    bad = np.flatnonzero(~(lower < upper))
    if patches:
        lower = lower - 0.5 * span
        upper = upper + 0.5 * span
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"track {track.name!r} at s={cfg.start + sigma[i]:.1f} m is narrower "
                         f"({tp.width_left[i] + tp.width_right[i]:.2f} m) than the car "
                         f"plus margins ({2 * half:.2f} m)")
    return lower, upper


def set_track_limits(m, limits: tuple, idx: dict) -> None:
    """Bound ``m.q2[s]`` by :func:`track_limits` (``limits``; ``idx``: point -> position)."""
    lower, upper = limits
    for s, v in m.q2.items():
        i = idx[s]
        v.setlb(lower[i])
        v.setub(upper[i])


def add_boundary_conditions(m, track, vehicle, cfg, states, rates, controls) -> None:
    """The boundary conditions every vehicle model shares.

    * the controls at ``s = 0`` (not a collocation point) are those of the first element
      (``m.controls_at_start``), unless they are states (``control_form = "state"``); the
      time starts at 0;
    * a closed lap (``cfg.periodic``): every state and rate at the end equals its value at the
      start (``m.periodic``, with the controls when they are states; the time is not
      periodic);
    * an open sector: the speed ``q1_dot`` at the start is fixed to
      :func:`entry_speed` (unless ``cfg.initial_speed == "free"``; ``m.problem.initial_speed`` [m/s],
      else None), and the car enters settled: every other rate is zero at the start
      (otherwise the optimizer starts with stored lateral or spring energy it can turn into
      speed).

    Parameters
    ----------
    m : ConcreteModel
        A discretized model (``m.s``, ``m.t``, the states, rates and controls).
    track, vehicle, cfg : the model's Track, VehicleParameters and OCP options
    states, rates, controls : sequences of str
        The model's variable names; ``rates[0]`` is ``"q1_dot"``.
    """
    sigma = sorted(m.s)
    first, last = sigma[0], sigma[-1]
    smooth = control_states(cfg, m)
    if not smooth:
        m.controls_at_start = pyo.Constraint(tuple(controls), rule=lambda m, c:
                                             m.component(c)[first] == m.component(c)[sigma[1]])
    m.t[first].fix(0.0)
    if cfg.periodic:
        periodic = tuple(states) + tuple(rates) + (tuple(controls) if smooth else ())
        m.periodic = pyo.Constraint(periodic, rule=lambda m, k:
                                    m.component(k)[last] == m.component(k)[first])
    if not cfg.periodic and cfg.initial_speed != "free":
        update_problem(m, initial_speed=entry_speed(track, vehicle, cfg, m.q1_dot[first].ub))
        m.q1_dot[first].fix(m.problem.initial_speed)
    if not cfg.periodic:
        for k in rates[1:]:
            m.component(k)[first].fix(0.0)


def new_sector_model(track, vehicle, cfg, vehicle_model, title: str):
    """The start every vehicle model's ``build`` shares: the sector and its mesh
    (:func:`sector_mesh`), the ``ConcreteModel`` with ``m.problem``
    (:class:`~pyomo_lap.ocp.vehicle_model.ProblemData`) and the ``ContinuousSet`` ``m.s`` in
    ``q1`` [m] from 0 to the sector length.

    Parameters
    ----------
    track, vehicle, cfg : the Track, VehicleParameters and OCP options
    vehicle_model : VehicleModel
        The model being built (``m.problem.vehicle_model``).
    title : str
        Start of the model's name, e.g. ``"pyomo_lap single-track"``.

    Returns
    -------
    (ConcreteModel, float)
        The model and the sector length [m].

    Raises
    ------
    ValueError
        From :func:`sector_mesh` (a sector outside the track, a bad mesh).
    """
    placement = ("given" if cfg.element_boundaries is not None else
                 "uniform" if cfg.nfe is not None or getattr(cfg, "mesh", "uniform") != "adaptive"
                 else "adaptive")
    L, bounds = sector_mesh(track, cfg, vehicle)
    m = pyo.ConcreteModel(name=f"{title} {track.name} {cfg.start:.0f}+{L:.0f} m")
    m.problem = ProblemData(vehicle_model=vehicle_model, options=cfg, track=track,
                            sector_length=L, mesh=placement,
                            time_scale=reference_time(track, vehicle, cfg, L))
    car_block(m, vehicle)           # m.vehicle: the car (pyomo_lap.ocp.vehicle_model.car_block)
    m.s = ContinuousSet(bounds=(0.0, L), initialize=None if bounds is None else bounds.tolist(),
                        doc="distance along the spine from the sector start, q1 [m]")
    fast_element_lookup(m.s)
    return m, L


def finish_build(m, track, vehicle, cfg, states, rates, controls, set_scaling, t0: float):
    """The end every vehicle model's ``build`` shares: :func:`add_boundary_conditions`,
    :func:`add_objective` (41), the model's scaling factors (``set_scaling(m)``) and the build
    time [s] since ``t0`` (``time.perf_counter()``) in ``m.problem.build_time_s``. Returns ``m``."""
    add_boundary_conditions(m, track, vehicle, cfg, states, rates, controls)
    add_objective(m, cfg)
    set_scaling(m)
    if control_states(cfg, m):
        scale_control_rates(m, controls)
    update_problem(m, build_time_s=time.perf_counter() - t0)
    return m
