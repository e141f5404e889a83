r"""The minimum-lap-time optimal control problem as a pyomo.dae model (sec. 3.2 and 4).

The independent variable is the arc length along the track spine, :math:`q_1 = s` (on the
model, ``m.s`` runs from 0 to the sector length; the track coordinate is ``start + s``).

* states :math:`x = (q_2..q_6,\ \dot q_1..\dot q_6)` and the time ``t``;
* controls :math:`u = (f_{xa}, f_{xb}, \delta)`, piecewise constant per finite element by
  default (as the paper's :math:`u_i`);
* algebraic variables :math:`z = (f_{11z}, f_{12z}, f_{21z}, f_{22z}, f_{3x}, f_{3y}, m_{3z})`.

The spatial DAE (39), multiplied through by :math:`\dot q_1 > 0`:

.. math::
    \dot q_1 \frac{dq_k}{ds} = \dot q_k\ (k = 2..6),\quad
    \dot q_1 \frac{d\dot q_k}{ds} = \ddot q_k(x, u, z)\ (k = 1..6),\quad
    \dot q_1 \frac{dt}{ds} = 1,

with :math:`\ddot q` from the ABA (:mod:`pyomo_lap.chain`), the four load equations (35)
and the three in-plane equations (36) (:mod:`pyomo_lap.vehicle`). Path constraints: power
:math:`f_{xa} v_{3x} \le P_{max}`, the friction ellipse of each tyre, the track limits on
:math:`q_2`, steering bounds, :math:`f_{ijz} \ge f_{z,min}`, :math:`v_{3x} \ge v_{min}`.
Objective (41): the sector time :math:`t(L)` plus a penalty on steering jumps between
elements and a relaxation of the complementarity :math:`f_{xa} f_{xb} = 0`.

All physics per point are named ``Expression`` components of the block ``m.car``
(``m.car.qdd1[s]``, ``m.car.W3J_2[s]`` (= f_3z), ``m.car.alpha_1[s]``, ``m.car.f_11y[s]``...),
so users can reach them and the NL writer shares them.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo
from pyomo.common.config import ConfigDict, ConfigValue, In, NonNegativeFloat, PositiveInt
from pyomo.dae import ContinuousSet, DerivativeVar

from . import vehicle as veh
from .backend import is_number
from .chain import TrackJoint

__all__ = ["OCP_CONFIG", "build_model", "STATE_NAMES", "RATE_NAMES", "track_joints",
           "sector_mesh", "entry_speed"]

STATE_NAMES = ("q2", "q3", "q4", "q5", "q6")
RATE_NAMES = ("q1_dot", "q2_dot", "q3_dot", "q4_dot", "q5_dot", "q6_dot")

OCP_CONFIG = ConfigDict("pyomo_lap OCP options")
OCP_CONFIG.declare("model", ConfigValue(default="full", domain=In(["full", "single-track"]),
                   description="vehicle model: 'full' (the six-joint Lie-group car) or 'single-track' "
                               "(rigid nonlinear bicycle with Fiala tyres, pyomo_lap.single_track)"))
OCP_CONFIG.declare("start", ConfigValue(default=0.0, domain=float,
                   description="track coordinate of the sector start [m]"))
OCP_CONFIG.declare("length", ConfigValue(default=None, domain=lambda x: None if x is None else float(x),
                   description="sector length [m]; None: the whole track (from start)"))
OCP_CONFIG.declare("nfe", ConfigValue(default=400, domain=PositiveInt,
                   description="number of finite elements (mesh intervals) N"))
OCP_CONFIG.declare("ncp", ConfigValue(default=3, domain=PositiveInt,
                   description="collocation points per finite element"))
OCP_CONFIG.declare("scheme", ConfigValue(default="LAGRANGE-RADAU",
                   domain=In(["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"]),
                   description="pyomo.dae orthogonal collocation scheme"))
OCP_CONFIG.declare("periodic", ConfigValue(default=False, domain=bool,
                   description="closed lap: all states at the end equal those at the start"))
OCP_CONFIG.declare("initial_speed", ConfigValue(default="quasi-steady",
                   domain=lambda x: x if x in ("quasi-steady", "free") else float(x),
                   description="open sector: speed q1_dot at the start [m/s], 'quasi-steady' "
                               "(the flying-lap estimate there) or 'free'; the other rates start "
                               "at zero and the suspension settled (zero heave, pitch and roll "
                               "accelerations)"))
OCP_CONFIG.declare("piecewise_constant_controls", ConfigValue(default=True, domain=bool,
                   description="controls constant within each finite element"))
OCP_CONFIG.declare("K_delta", ConfigValue(default=1.0, domain=NonNegativeFloat,
                   description="weight of the steering-jump penalty sum (delta_{i+1}-delta_i)^2 [s/rad^2], eq (41)"))
OCP_CONFIG.declare("K_f", ConfigValue(default=1e-5, domain=NonNegativeFloat,
                   description="weight of the complementarity penalty mean(-f_xa f_xb) [s/N^2], eq (41)"))
OCP_CONFIG.declare("v_min", ConfigValue(default=5.0, domain=NonNegativeFloat,
                   description="lower bound on v_3x and q1_dot [m/s] (slip angles (33) divide by v_3x)"))
OCP_CONFIG.declare("lift", ConfigValue(default=(), domain=tuple,
                   description="tags of ABA/car intermediates made variables with defining equality "
                               "constraints (e.g. ('qdd', 'W3J')) instead of named expressions"))
OCP_CONFIG.declare("element_boundaries", ConfigValue(default=None, domain=lambda x: None if x is None else tuple(float(v) for v in x),
                   description="finite-element boundaries in the sector [m], from 0 to the sector length "
                               "(a non-uniform mesh, e.g. from pyomo_lap.defects.refine_mesh); nfe is then "
                               "their number minus one"))
OCP_CONFIG.declare("track_margin", ConfigValue(default=0.0, domain=NonNegativeFloat,
                   description="extra distance kept from each track edge [m]"))


def _sector_points(track, start, length, sigma):
    s_track = start + np.asarray(sigma, dtype=float)
    if track.closed:
        s_track = np.mod(s_track, track.length)
    return track.evaluate(s_track)


USER_TAGS = ("qdd", "W3J", "V3", "V6", "a3", "alpha_", "f_", "Y_", "aero_q", "roll_moment")
"""Tags of the car equations kept as named Expressions ``m.car.<tag>[s]`` (prefixes)."""


def record_car_equations(p, chain):
    """Record :func:`pyomo_lap.vehicle.car_equations` once on :class:`pyomo_lap.tape.Node`
    symbols.

    Inputs of the tape: ``q[0..4]`` (q2..q6), ``qd[0..5]`` (q̇1..q̇6), ``u[0..2]``
    (f_xa, f_xb, delta), ``z[0..6]`` (the algebraic variables) and the track joint's numbers
    ``R[0..8]`` (row-major), ``Om[0..2]`` (Omega), ``dOm[0..2]`` (dOmega/ds), ``p[0..2]``.

    Returns
    -------
    (Tape, dict)
        The tape (uses counted) and its output nodes: ``qdd`` (6), ``load_res`` (4),
        ``inplane`` (3), ``v3x``, ``power``, ``fx`` (4 wheels), ``fy`` (4 wheels).
    """
    from .tape import record

    def fn(namer, x):
        R = [x["R"][3 * r:3 * r + 3] for r in range(3)]
        tj = TrackJoint(R=R, J=[1.0, 0, 0] + x["Om"], dJ=[0, 0, 0] + x["dOm"], p=x["p"])
        e = veh.car_equations(p, chain, tj, [0.0] + x["q"], x["qd"], x["u"], x["z"], namer=namer)
        ch = e.channels
        return {"qdd": list(e.qdd), "load_res": list(e.load_residuals),
                "inplane": list(e.inplane_residuals), "v3x": ch["v_3x"], "power": ch["power"],
                "fx": [ch[f"f_{w}x"] for w in ("11", "12", "21", "22")],
                "fy": [ch[f"f_{w}y"] for w in ("11", "12", "21", "22")]}

    tape, outs = record(fn, {"q": 5, "qd": 6, "u": 3, "z": 7, "R": 9, "Om": 3, "dOm": 3, "p": 3})
    flat = outs["qdd"] + outs["load_res"] + outs["inplane"] + [outs["v3x"], outs["power"]] \
        + outs["fx"] + outs["fy"]
    tape.count_uses(flat)
    return tape, outs


def _shared_nodes(tape) -> list:
    """Nodes of the car tape written as common subexpressions ``m.car.cse[s, k]``.

    A node used more than once is named unless it is a single cheap operation (``+ - *`` on
    named nodes, inputs or constants) used at most three times: repeating such a node costs
    the AMPL solver library less than a defined variable, and every named expression costs
    Pyomo's NL writer time and memory (it keeps, for each, the set of named expressions it
    depends on)."""
    from .tape import Node

    local = [0] * len(tape.nodes)
    out = []
    for i, node in enumerate(tape.nodes):
        if not tape.live[i] or node.op == "input":
            continue
        size = 1 + sum(local[a.index] for a in node.args if isinstance(a, Node))
        named = i in tape.tags or (
            tape.uses[i] > 1 and node.op != "neg"
            and (size > 1 or tape.uses[i] > 3 or node.op not in ("add", "sub", "mul")))
        if named:
            if i not in tape.tags:
                out.append(i)
            size = 0
        local[i] = size
    return out


def _tape_inputs(tj) -> dict:
    """The track-joint numbers of one point, keyed as the tape's inputs."""
    d = {}
    for r in range(3):
        for c in range(3):
            d[f"R[{3 * r + c}]"] = float(tj.R[r][c])
    for k in range(3):
        d[f"Om[{k}]"] = float(tj.J[3 + k])
        d[f"dOm[{k}]"] = float(tj.dJ[3 + k])
        d[f"p[{k}]"] = float(tj.p[k])
    return d


def track_joints(tp) -> list:
    """TrackJoint objects (numbers) for each point of a :class:`~pyomo_lap.track.TrackPoints`.

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
        Sector outside an open track, periodic on a sector that is not a whole closed lap,
        bad element boundaries, too short a sector for the mesh.
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
    if not track.closed and cfg.start + L > track.length + 1e-6:
        raise ValueError(f"sector [{cfg.start}, {cfg.start + L}] m runs past the end of the open "
                         f"track {track.name!r} (length {track.length:.1f} m)")
    if cfg.periodic and (not track.closed or abs(L - track.length) > 1e-6):
        raise ValueError("periodic=True needs a closed track and a sector of one whole lap "
                         f"(length {track.length:.1f} m), got length={L:.1f} m")
    bounds = None
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
    there (:func:`pyomo_lap.speed_profile.quasi_steady_speed`) or ``cfg.initial_speed``.

    Raises
    ------
    ValueError
        A given speed outside ``[v_min, v_max]``.
    """
    if cfg.initial_speed == "quasi-steady":
        from .speed_profile import quasi_steady_speed
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
            comp = self.block.component(tag)
            if is_number(value):
                if comp is None:
                    self.pending.setdefault(tag, {})[s] = value
                else:
                    comp[s] = value
                return value
            if comp is None:
                comp = pyo.Expression(self.index_set)
                self.block.add_component(tag, comp)
                for ss, v in self.pending.pop(tag, {}).items():
                    comp[ss] = v
            comp[s] = value
            return comp[s]
        return name


def build_model(track, vehicle: veh.VehicleParameters, config: Optional[dict] = None,
                progress=None, **kwargs) -> pyo.ConcreteModel:
    """Build and discretize the minimum-time OCP on a sector of a track.

    Parameters
    ----------
    track : pyomo_lap.track.Track
    vehicle : VehicleParameters
    config : dict, optional
        Options of :data:`OCP_CONFIG` (keyword arguments override them).
    progress : callable, optional
        ``progress(label, done, total)``, called after the physics of each point is built
        (see :mod:`pyomo_lap.progress`).

    Returns
    -------
    pyomo.environ.ConcreteModel
        Discretized, with variables not yet initialized (see
        :func:`pyomo_lap.initialize.initialize_model`). ``m.options`` holds the options,
        ``m.track_points`` the track at every point of ``m.s``, ``m.build_time_s`` the time.

    Raises
    ------
    ValueError
        Sector outside an open track, periodic on a sector that is not a whole closed lap,
        too short a sector for the mesh.
    """
    t0 = time.perf_counter()
    cfg = OCP_CONFIG(config or {})
    cfg.set_value(kwargs)
    if cfg.model == "single-track":
        from .single_track import build_single_track_model
        return build_single_track_model(track, vehicle, cfg, t0)
    L, bounds = sector_mesh(track, cfg)
    p = vehicle
    u = pyo.units
    m = pyo.ConcreteModel(name=f"pyomo_lap {track.name} {cfg.start:.0f}+{L:.0f} m")
    m.options = cfg
    m.vehicle = p
    m.track = track
    m.sector_length = L
    m.s = ContinuousSet(bounds=(0.0, L), initialize=None if bounds is None else bounds.tolist(),
                        doc="distance along the spine from the sector start, q1 [m]")

    # ---- variables ---------------------------------------------------------------------
    m.q2 = pyo.Var(m.s, initialize=0.0, units=u.m, doc="lateral offset of O3 from the spine, + left [m]")
    m.q3 = pyo.Var(m.s, initialize=0.0, bounds=(-1.0, 1.0), units=u.rad, doc="yaw relative to the track frame [rad]")
    m.q4 = pyo.Var(m.s, initialize=0.0, bounds=(-0.2, 0.2), units=u.m, doc="heave of the VIP [m]")
    m.q5 = pyo.Var(m.s, initialize=0.0, bounds=(-0.3, 0.3), units=u.rad, doc="pitch [rad], + nose down")
    m.q6 = pyo.Var(m.s, initialize=0.0, bounds=(-0.3, 0.3), units=u.rad, doc="roll [rad], + right side down")
    m.q1_dot = pyo.Var(m.s, initialize=20.0, bounds=(cfg.v_min, 150.0), units=u.m / u.s, doc="dq1/dt [m/s]")
    m.q2_dot = pyo.Var(m.s, initialize=0.0, units=u.m / u.s, doc="dq2/dt [m/s]")
    m.q3_dot = pyo.Var(m.s, initialize=0.0, units=u.rad / u.s, doc="dq3/dt [rad/s]")
    m.q4_dot = pyo.Var(m.s, initialize=0.0, units=u.m / u.s, doc="dq4/dt [m/s]")
    m.q5_dot = pyo.Var(m.s, initialize=0.0, units=u.rad / u.s, doc="dq5/dt [rad/s]")
    m.q6_dot = pyo.Var(m.s, initialize=0.0, units=u.rad / u.s, doc="dq6/dt [rad/s]")
    m.t = pyo.Var(m.s, initialize=0.0, units=u.s, doc="time [s]")
    fmax = 3 * p.m * p.gravity * max(p.mu_x0, p.mu_y0)
    m.f_xa = pyo.Var(m.s, initialize=0.0, bounds=(0.0, fmax), units=u.N, doc="traction force, rear axle, eq (34) [N]")
    m.f_xb = pyo.Var(m.s, initialize=0.0, bounds=(-fmax, 0.0), units=u.N, doc="braking force, split by k_b, eq (34) [N]")
    m.delta = pyo.Var(m.s, initialize=0.0, bounds=(-p.delta_max, p.delta_max), units=u.rad, doc="road-wheel steer angle [rad]")
    fz_max = 20 * p.m * p.gravity
    for name in ("f_11z", "f_12z", "f_21z", "f_22z"):
        m.add_component(name, pyo.Var(m.s, initialize=p.m * p.gravity / 4, bounds=(p.fz_min, fz_max),
                                      units=u.N, doc=f"vertical load {name[2:4]} (axle, side) [N]"))
    m.f_3x = pyo.Var(m.s, initialize=0.0, units=u.N, doc="in-plane tyre force on body 3, x3 [N], eq (36a)")
    m.f_3y = pyo.Var(m.s, initialize=0.0, units=u.N, doc="in-plane tyre force on body 3, y3 [N], eq (36b)")
    m.m_3z = pyo.Var(m.s, initialize=0.0, units=u.N * u.m, doc="tyre yaw moment about O3 [N m], eq (36c)")

    states = {k: m.component(k) for k in STATE_NAMES + RATE_NAMES + ("t",)}
    for name, var in states.items():
        m.add_component(f"d{name}_ds", DerivativeVar(var, wrt=m.s, units=u.get_units(var) / u.m,
                                                     doc=f"d{name}/dq1"))

    # ---- discretization -----------------------------------------------------------------
    disc = pyo.TransformationFactory("dae.collocation")
    disc.apply_to(m, wrt=m.s, nfe=cfg.nfe, ncp=cfg.ncp, scheme=cfg.scheme)
    if cfg.piecewise_constant_controls and cfg.ncp > 1:
        for c in ("f_xa", "f_xb", "delta"):
            disc.reduce_collocation_points(m, var=m.component(c), ncp=1, contset=m.s)
    sigma = np.array(sorted(m.s))
    tp = _sector_points(track, cfg.start, L, sigma)
    m.track_points = tp
    joints = m.track_joints = track_joints(tp)
    idx = {s: i for i, s in enumerate(sigma)}

    # track limits on q2 (half the car's width and a margin inside each edge)
    half = 0.5 * p.width + cfg.track_margin
    for s in m.s:
        i = idx[s]
        lo, hi = -(tp.width_right[i] - half), tp.width_left[i] - half
        if not lo < hi:
            raise ValueError(f"track {track.name!r} at s={cfg.start + s:.1f} m is narrower "
                             f"({tp.width_left[i] + tp.width_right[i]:.2f} m) than the car "
                             f"plus margins ({2 * half:.2f} m)")
        m.q2[s].setlb(lo)
        m.q2[s].setub(hi)

    # ---- physics at every point (named Expressions in m.car) ----------------------------
    # The car equations are recorded once on symbols (pyomo_lap.tape: common subexpressions
    # merged) and replayed at every point on the point's variables and track numbers.
    m.car = pyo.Block()
    namer = _Namer(m.car, m.s, lift=cfg.lift)
    chain = m.chain = veh.build_chain(p)
    tape, outs = record_car_equations(p, chain)
    m.car_tape, m.car_outputs = tape, outs
    # named as m.car.<tag>[s]: the quantities users ask for; the other tags of the model code
    # (articulated-body inertias, U, d, ...) are shared subexpressions like any other
    # (with the option 'lift', every tag of the model code can be lifted, so all are kept)
    if not cfg.lift:
        tape.tags = {i: t for i, t in tape.tags.items() if t.startswith(USER_TAGS)}
    shared = _shared_nodes(tape)
    shared_set = set(shared)
    m.car.cse_index = pyo.Set(initialize=shared, doc="tape index of a shared subexpression")
    m.car.cse = pyo.Expression(m.s, m.car.cse_index, doc="common subexpressions of the car equations")
    cse = m.car.cse
    flat_outs = outs["qdd"] + outs["load_res"] + outs["inplane"] + [outs["v3x"], outs["power"]] \
        + outs["fx"] + outs["fy"]
    qdd, load_res, inplane_res, adh, power, v3x = {}, {}, {}, {}, {}, {}
    for s in m.s:
        i = idx[s]
        inputs = _tape_inputs(joints[i])
        for k, name in enumerate(STATE_NAMES):
            inputs[f"q[{k}]"] = m.component(name)[s]
        for k, name in enumerate(RATE_NAMES):
            inputs[f"qd[{k}]"] = m.component(name)[s]
        for k, name in enumerate(("f_xa", "f_xb", "delta")):
            inputs[f"u[{k}]"] = m.component(name)[s]
        z = tuple(m.component(n)[s] for n in veh.ALGEBRAIC)
        for k in range(7):
            inputs[f"z[{k}]"] = z[k]

        def share(k, value, _s=s):
            cse[_s, k] = value
            return cse[_s, k]
        vals = tape.replay(inputs, flat_outs, name=namer.at(s), share=share, shared=shared_set)
        qdd[s] = vals[0:6]
        load_res[s] = vals[6:10]
        inplane_res[s] = vals[10:13]
        v3x[s], power[s] = vals[13], vals[14]
        fx, fy = vals[15:19], vals[19:23]
        adh[s] = [(fx[k], fy[k], z[k]) for k in range(4)]
        if progress is not None:
            progress("building the model", i + 1, len(sigma))
    m.v_3x = pyo.Expression(m.s, rule=lambda m, s: v3x[s], doc="longitudinal speed of O3 in {B3} [m/s]")

    # ---- the spatial DAE (39) ------------------------------------------------------------
    first = sigma[0]
    m.ode_q = pyo.Constraint(STATE_NAMES, m.s, rule=lambda m, k, s: pyo.Constraint.Skip if s == first
                             else m.q1_dot[s] * m.component(f"d{k}_ds")[s] == m.component(f"{k}_dot")[s])
    m.ode_qdot = pyo.Constraint(range(1, 7), m.s, rule=lambda m, k, s: pyo.Constraint.Skip if s == first
                                else m.q1_dot[s] * m.component(f"dq{k}_dot_ds")[s] == qdd[s][k - 1])
    m.ode_t = pyo.Constraint(m.s, rule=lambda m, s: pyo.Constraint.Skip if s == first
                             else m.q1_dot[s] * m.dt_ds[s] == 1.0)
    # algebraic equations (35) and (36)
    m.loads_eq = pyo.Constraint(range(4), m.s, rule=lambda m, k, s: load_res[s][k] == 0)
    m.inplane_eq = pyo.Constraint(range(3), m.s, rule=lambda m, k, s: inplane_res[s][k] == 0)

    # ---- path constraints ----------------------------------------------------------------
    m.power_limit = pyo.Constraint(m.s, rule=lambda m, s: power[s] <= p.P_max)
    ratio = p.mu_y0 / p.mu_x0

    def adherence(m, k, s):
        fx, fy, fz = adh[s][k]
        D = veh.peak_force(p, fz)
        return (ratio * fx) ** 2 + fy ** 2 <= D ** 2
    m.adherence = pyo.Constraint(range(4), m.s, rule=adherence)
    m.speed_min = pyo.Constraint(m.s, rule=lambda m, s: v3x[s] >= cfg.v_min)

    # ---- boundary conditions ---------------------------------------------------------------
    last = sigma[-1]
    # the controls at s = 0 (not a collocation point) are those of the first element
    m.controls_at_start = pyo.Constraint(("f_xa", "f_xb", "delta"), rule=lambda m, c:
                                         m.component(c)[first] == m.component(c)[sigma[1]])
    m.t[first].fix(0.0)
    if cfg.periodic:
        names = STATE_NAMES + RATE_NAMES
        m.periodic = pyo.Constraint(names, rule=lambda m, k: m.component(k)[last] == m.component(k)[first])
    m.initial_speed = None
    if not cfg.periodic and cfg.initial_speed != "free":
        v0 = entry_speed(track, p, cfg, m.q1_dot[first].ub)
        m.initial_speed = v0
        m.q1_dot[first].fix(v0)
    if not cfg.periodic:
        # the car enters an open sector settled: no lateral, yaw, heave, pitch or roll rates and
        # no heave, pitch or roll acceleration (otherwise the optimizer starts with stored
        # spring or lateral kinetic energy it can turn into speed)
        for k in ("q2_dot", "q3_dot", "q4_dot", "q5_dot", "q6_dot"):
            m.component(k)[first].fix(0.0)
        m.settled_start = pyo.Constraint(range(4, 7), rule=lambda m, k: qdd[first][k - 1] == 0)

    # ---- objective (41) ---------------------------------------------------------------------
    elems = sorted(m.s.get_finite_elements())
    m.lap_time = pyo.Expression(expr=m.t[last] - m.t[first], doc="sector (lap) time [s]")
    # controls are constant in each element: take their value at its first collocation point
    ctrl_pts = [sigma[idx[e] + 1] for e in elems[:-1]]
    m.steer_penalty = pyo.Expression(expr=sum((m.delta[b] - m.delta[a]) ** 2
                                              for a, b in zip(ctrl_pts[:-1], ctrl_pts[1:])))
    h = np.diff(elems)
    m.complementarity_penalty = pyo.Expression(expr=sum(-m.f_xa[c] * m.f_xb[c] * hh / L
                                                        for c, hh in zip(ctrl_pts, h)))
    m.K_delta = pyo.Param(initialize=cfg.K_delta, units=u.s / u.rad ** 2,
                          doc="weight of the steering-jump penalty [s/rad^2], eq (41)")
    m.K_f = pyo.Param(initialize=cfg.K_f, units=u.s / u.N ** 2,
                      doc="weight of the complementarity penalty [s/N^2], eq (41)")
    m.objective = pyo.Objective(expr=m.lap_time + m.K_delta * m.steer_penalty
                                + m.K_f * m.complementarity_penalty, sense=pyo.minimize)
    _set_scaling(m)
    m.build_time_s = time.perf_counter() - t0
    return m


def _set_scaling(m) -> None:
    """Scaling factors (exported to IPOPT's user-scaling) from typical magnitudes."""
    p = m.vehicle
    sf = m.scaling_factor = pyo.Suffix(direction=pyo.Suffix.EXPORT)
    F = 1.0 / (p.m * p.gravity / 4)       # per-wheel forces
    typical = {"q2": 1.0, "q3": 10.0, "q4": 100.0, "q5": 100.0, "q6": 100.0, "q1_dot": 0.05,
               "q2_dot": 1.0, "q3_dot": 2.0, "q4_dot": 10.0, "q5_dot": 10.0, "q6_dot": 10.0,
               "t": 1.0 / max(1.0, m.sector_length / 30.0), "f_xa": F, "f_xb": F, "delta": 10.0,
               "f_11z": F, "f_12z": F, "f_21z": F, "f_22z": F, "f_3x": F / 4, "f_3y": F / 4,
               "m_3z": F / 4}
    L = m.sector_length
    first = m.s.first()
    for name, f in typical.items():
        var = m.component(name)
        for v in var.values():
            if not v.fixed:
                sf[v] = f
        dv = m.component(f"d{name}_ds")
        if dv is not None:   # d/ds of a state: its scale over a few metres (unused at s=0)
            for s, v in dv.items():
                if s != first:
                    sf[v] = f * (L / 30.0 if name == "t" else 10.0)
    qdd_scale = {1: 0.1, 2: 0.1, 3: 0.5, 4: 0.1, 5: 0.1, 6: 0.1}
    for (k, s), c in m.ode_qdot.items():
        sf[c] = qdd_scale[k] * 0.5
    for (k, s), c in m.ode_q.items():
        sf[c] = typical[f"{k}_dot"] * 0.5
    for c in m.ode_t.values():
        sf[c] = 1.0
    for c in m.loads_eq.values():
        sf[c] = F
    for (k, s), c in m.inplane_eq.items():
        sf[c] = F / 4
    for c in m.power_limit.values():
        sf[c] = 1.0 / p.P_max
    for c in m.adherence.values():
        sf[c] = F * F
    for c in m.speed_min.values():
        sf[c] = 0.05
    if m.component("settled_start") is not None:
        for c in m.settled_start.values():
            sf[c] = 0.1
    sf[m.objective] = 1.0 / max(1.0, L / 30.0)
