"""Shared infrastructure of the optimal control problem, used by every vehicle model.

The pieces of :func:`pyomo_lap.ocp.build.build_model` that do not depend on the vehicle model: the
sector and its mesh (:func:`sector_mesh`, :func:`_sector_points`, :func:`track_joints`,
:func:`fast_element_lookup`), the entry speed of an open sector (:func:`entry_speed`), the
objective (41) (:func:`add_objective`, :data:`OBJECTIVE_SCALE`), named per-point expressions
(:class:`_Namer`, :func:`_set_new`) and Pyomo's units (:func:`pyomo_units`).

This module imports no vehicle model (:mod:`pyomo_lap.ocp.full_model`,
:mod:`pyomo_lap.ocp.single_track`) and no builder (:mod:`pyomo_lap.ocp.build`): they import it.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pyomo.environ as pyo
from pyomo.dae import ContinuousSet, DerivativeVar

from ..spatial.backend import is_number
from ..spatial.chain import TrackJoint
from .vehicle_model import ProblemData, update_problem

__all__ = ["add_boundary_conditions", "discretize_on_track", "scale_variables", "sector_mesh", "track_joints", "fast_element_lookup", "entry_speed", "add_objective",
           "OBJECTIVE_SCALE", "pyomo_units"]


def _sector_points(track, start, length, sigma):
    s_track = start + np.asarray(sigma, dtype=float)
    if track.closed:
        s_track = np.mod(s_track, track.length)
    return track.evaluate(s_track)



def fast_element_lookup(cs) -> None:
    """Give a ``ContinuousSet`` a ``get_lower_element_boundary`` that finds the element by
    bisection (same results as pyomo.dae's method, which scans the list of element boundaries
    at every call: pyomo.dae calls it once per collocation equation, so the discretization of
    a full lap cost O(N^2), 3 s of the build at N = 2000)."""
    import bisect
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
    """TrackJoint objects (numbers) for each point of a :class:`~pyomo_lap.track.geometry.TrackPoints`.

    ``J = [1, 0, 0, Omega]`` and ``dJ = [0, 0, 0, dOmega/ds]`` because q1 is the arc length
    (eq 12b with ``|p_,q1| = 1``)."""
    out = []
    for i in range(len(tp.s)):
        om = [float(x) for x in tp.omega[i]]
        dom = [float(x) for x in tp.domega_ds[i]]
        out.append(TrackJoint(R=tp.rotation[i].tolist(), J=[1.0, 0, 0] + om,
                              dJ=[0, 0, 0] + dom, p=tp.position[i].tolist()))
    return out


def sector_mesh(track, cfg):
    """Check the sector options against the track and return ``(L, bounds)``: the sector
    length [m] and the element boundaries (None: uniform, ``cfg.nfe`` elements; when
    ``element_boundaries`` is given, ``cfg.nfe`` is set to their number minus one).

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
        raise ValueError(f"sector length {L:.1f} m: longer than one lap of the closed loop "
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
        from ..vehicle.speed_profile import quasi_steady_speed
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


class _Namer:
    """Turns tagged intermediates into entries of IndexedExpressions on a block."""

    def __init__(self, block, index_set, lift=()):
        self.block = block
        self.index_set = index_set
        self.pending = {}
        self.comps = {}
        self.lift = tuple(lift)

    def at(self, s):
        def name(tag, value):
            if self.lift and not is_number(value) and tag.startswith(self.lift):
                var = self.block.component(tag)
                if var is None:
                    var = pyo.Var(self.index_set, initialize=0.0)
                    self.block.add_component(tag, var)
                    self.block.add_component(f"{tag}_def", pyo.Constraint(self.index_set))
                self.block.component(f"{tag}_def")[s] = var[s] == value
                return var[s]
            comp = self.comps.get(tag)
            if is_number(value):
                if comp is None:
                    self.pending.setdefault(tag, {})[s] = value
                else:
                    comp[s] = value
                return value
            if comp is None:
                comp = self.comps[tag] = pyo.Expression(self.index_set)
                self.block.add_component(tag, comp)
                for ss, v in self.pending.pop(tag, {}).items():
                    comp[ss] = v
            return _set_new(comp, s, value)
        return name


def _set_new(comp, index, value):
    """``comp[index] = value`` for a new entry of an indexed component, returning the entry
    (Pyomo's ``_setitem_when_not_present`` does both in one step: a model has about 40 such
    entries per point; the public route looks the index up twice)."""
    setter = getattr(comp, "_setitem_when_not_present", None)
    if setter is not None:
        return setter(index, value)
    comp[index] = value
    return comp[index]


def pyomo_units():
    """Pyomo's units (``pyomo.environ.units``), on first use backed by a pint registry that
    keeps its parsed unit definitions in pint's disk cache (``<cache>/pint``, see
    :func:`pyomo_lap.util.casadi_compile.cache_dir`): building pint's registry from its definition
    file took 0.29 s of every model build, from the cache 0.02 s. The registry and the units
    are pint's defaults either way."""
    units = pyo.units
    if type(units).__name__ == "_DeferredUnitsSingleton":    # not used yet in this process
        try:
            import pint

            from ..util.casadi_compile import cache_dir
            folder = cache_dir() / "pint"
            folder.mkdir(parents=True, exist_ok=True)
            units.set_pint_registry(pint.UnitRegistry(cache_folder=str(folder)))
        except Exception:   # pint's own default registry is created on first use instead
            pass
    return pyo.units


def add_objective(m, cfg) -> None:
    r"""The sector time and the penalties of eq (41), shared by both vehicle models.

    Adds ``m.lap_time`` (:math:`t(L) - t(0)` [s]), ``m.steer_penalty``
    (:math:`\sum (\delta_{k+1} - \delta_k)^2` over consecutive control values [rad^2]),
    ``m.complementarity_penalty`` (the mean of :math:`-f_{xa} f_{xb}` over the sector
    [N^2]), their weights ``m.K_delta`` [s/rad^2] and ``m.K_f`` [s/N^2], and
    ``m.objective``. With piecewise-constant controls a control value is the element's;
    otherwise every collocation point has one (the point ``s = 0`` copies the first).
    """
    u = pyo.units
    sigma = sorted(m.s)
    first, last = sigma[0], sigma[-1]
    if cfg.piecewise_constant_controls and cfg.ncp > 1:
        elems = sorted(m.s.get_finite_elements())
        pos = {s: i for i, s in enumerate(sigma)}
        ctrl_pts = [sigma[pos[e] + 1] for e in elems[:-1]]
        h = np.diff(elems)
    else:
        ctrl_pts = sigma[1:]
        h = np.diff(sigma)
    L = m.problem.sector_length
    m.lap_time = pyo.Expression(expr=m.t[last] - m.t[first], doc="sector (lap) time [s]")
    m.steer_penalty = pyo.Expression(expr=sum((m.delta[b] - m.delta[a]) ** 2
                                              for a, b in zip(ctrl_pts[:-1], ctrl_pts[1:])),
                                     doc="steering jumps between control values [rad^2], eq (41)")
    m.complementarity_penalty = pyo.Expression(expr=sum(-m.f_xa[c] * m.f_xb[c] * hh / L
                                                        for c, hh in zip(ctrl_pts, h)),
                                               doc="mean of -f_xa f_xb [N^2], eq (41)")
    m.K_delta = pyo.Param(initialize=cfg.K_delta, units=u.s / u.rad ** 2,
                          doc="weight of the steering-jump penalty [s/rad^2], eq (41)")
    m.K_f = pyo.Param(initialize=cfg.K_f, units=u.s / u.N ** 2,
                      doc="weight of the complementarity penalty [s/N^2], eq (41)")
    m.objective = pyo.Objective(expr=m.lap_time + m.K_delta * m.steer_penalty
                                + m.K_f * m.complementarity_penalty, sense=pyo.minimize)


OBJECTIVE_SCALE = 1000.0
"""The scaled objective is about this number (see :func:`pyomo_lap.ocp.full_model._set_scaling`)."""


def discretize_on_track(m, track, vehicle, cfg, length: float, controls) -> tuple:
    """pyomo.dae's collocation of ``m`` over ``m.s``, then the track at its points and the
    track limits on ``q2``: the steps every vehicle model's build shares.

    Sets ``m.problem.dae_time_s`` (pyomo.dae's share of the build [s]), ``m.problem.track_points`` (the
    track numbers at the points, :class:`pyomo_lap.track.geometry.TrackPoints`) and
    ``m.problem.track_joints``; bounds ``m.q2[s]`` to the track's width minus half the car's width
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
    disc = pyo.TransformationFactory("dae.collocation")
    t_dae = time.perf_counter()
    disc.apply_to(m, wrt=m.s, nfe=cfg.nfe, ncp=cfg.ncp, scheme=cfg.scheme)
    if cfg.piecewise_constant_controls and cfg.ncp > 1:
        for c in controls:
            disc.reduce_collocation_points(m, var=m.component(c), ncp=1, contset=m.s)
    dae_time_s = time.perf_counter() - t_dae      # pyomo.dae's share of the build
    sigma = np.array(sorted(m.s))
    tp = _sector_points(track, cfg.start, length, sigma)
    update_problem(m, dae_time_s=dae_time_s, track_points=tp, track_joints=track_joints(tp))
    idx = {s: i for i, s in enumerate(sigma)}
    set_track_limits(m, track_limits(track, tp, sigma, vehicle, cfg), idx)
    return sigma, tp, idx


def track_limits(track, tp, sigma, vehicle, cfg) -> tuple:
    """The bounds of ``q2`` [m] at the points: the track's width each side minus half the
    car's width and ``cfg.track_margin``.

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
    half = 0.5 * vehicle.width + cfg.track_margin
    lower = -(np.asarray(tp.width_right, dtype=float) - half)
    upper = np.asarray(tp.width_left, dtype=float) - half
    bad = np.flatnonzero(~(lower < upper))
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


def scale_variables(m, sf, typical: dict) -> None:
    """Scaling factors of the variables from their typical magnitudes, shared by the vehicle
    models: ``sf[v] = typical[name]`` for every unfixed entry of ``m.<name>``, and for the
    derivative ``m.d<name>_ds`` (a state's change over a few metres; the entry at the first
    point is not used by the collocation) ``typical[name] * 10`` (``t``: ``* L / 30``).

    Parameters
    ----------
    m : ConcreteModel
        A built model (``m.s``, ``m.problem.sector_length`` [m]).
    sf : Suffix
        The model's ``scaling_factor`` suffix.
    typical : dict
        ``{variable name: scaling factor}`` (1 / the typical magnitude in SI units).
    """
    L = m.problem.sector_length
    first = m.s.first()
    for name, f in typical.items():
        for v in m.component(name).values():
            if not v.fixed:
                sf[v] = f
        dv = m.component(f"d{name}_ds")
        if dv is not None:
            for s, v in dv.items():
                if s != first:
                    sf[v] = f * (L / 30.0 if name == "t" else 10.0)


def add_boundary_conditions(m, track, vehicle, cfg, states, rates, controls) -> None:
    """The boundary conditions every vehicle model shares.

    * the controls at ``s = 0`` (not a collocation point) are those of the first element
      (``m.controls_at_start``); the time starts at 0;
    * a closed lap (``cfg.periodic``): every state and rate at the end equals its value at the
      start (``m.periodic``; the time is not periodic);
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
    m.controls_at_start = pyo.Constraint(tuple(controls), rule=lambda m, c:
                                         m.component(c)[first] == m.component(c)[sigma[1]])
    m.t[first].fix(0.0)
    if cfg.periodic:
        m.periodic = pyo.Constraint(tuple(states) + tuple(rates), rule=lambda m, k:
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
    L, bounds = sector_mesh(track, cfg)
    m = pyo.ConcreteModel(name=f"{title} {track.name} {cfg.start:.0f}+{L:.0f} m")
    m.problem = ProblemData(vehicle_model=vehicle_model, options=cfg, vehicle=vehicle, track=track,
                            sector_length=L)
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
    update_problem(m, build_time_s=time.perf_counter() - t0)
    return m


def set_within_bounds(m, s, values: dict) -> None:
    """Initial values ``{name: value}`` of the variables ``m.<name>[s]``, each clipped to its
    bounds; fixed variables keep their values."""
    for name, val in values.items():
        var = m.component(name)[s]
        if not var.fixed:
            if var.lb is not None:
                val = max(val, var.lb)
            if var.ub is not None:
                val = min(val, var.ub)
            var.set_value(val, skip_validation=True)


def add_car_controls(m, vehicle) -> None:
    """The controls the car models share, indexed by ``m.s``: traction ``f_xa`` >= 0 [N] on the
    rear axle, braking ``f_xb`` <= 0 [N] split by ``k_b`` (eq. 34), both within three times the
    car's weight times its larger friction coefficient, and the road-wheel steer angle
    ``delta`` within ``delta_max`` [rad]; the objective (41) penalizes them
    (:func:`add_objective`)."""
    u = pyo.units
    b = car_control_bounds(vehicle)
    m.f_xa = pyo.Var(m.s, initialize=0.0, bounds=b["f_xa"], units=u.N, doc="traction force, rear axle, eq (34) [N]")
    m.f_xb = pyo.Var(m.s, initialize=0.0, bounds=b["f_xb"], units=u.N, doc="braking force, split by k_b, eq (34) [N]")
    m.delta = pyo.Var(m.s, initialize=0.0, bounds=b["delta"], units=u.rad, doc="road-wheel steer angle [rad]")


def car_control_bounds(vehicle) -> dict:
    """The bounds of the controls of :func:`add_car_controls`: ``{name: (lower, upper)}``
    (``f_xa``, ``f_xb`` [N]: three times the weight times the larger friction coefficient;
    ``delta`` [rad]: ``delta_max``)."""
    p = vehicle
    fmax = 3 * p.m * p.gravity * max(p.mu_x0, p.mu_y0)
    return {"f_xa": (0.0, fmax), "f_xb": (-fmax, 0.0), "delta": (-p.delta_max, p.delta_max)}


def set_bounds(m, bounds: dict) -> None:
    """``m.<name>[s].setlb/setub`` for every entry of each ``{name: (lower, upper)}``."""
    for name, (lo, up) in bounds.items():
        for v in m.component(name).values():
            v.setlb(lo)
            v.setub(up)


def add_derivative_vars(m, names) -> None:
    """``m.d<name>_ds``, the pyomo.dae derivative of ``m.<name>`` with respect to ``q1`` (``m.s``),
    in the variable's units per metre, for each of ``names``."""
    u = pyo.units
    for name in names:
        var = m.component(name)
        m.add_component(f"d{name}_ds", DerivativeVar(var, wrt=m.s, units=u.get_units(var) / u.m,
                                                     doc=f"d{name}/dq1"))
