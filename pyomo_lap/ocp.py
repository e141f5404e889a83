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
import math
import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo
from pyomo.common.config import ConfigDict, ConfigValue, In, NonNegativeFloat, PositiveInt
from pyomo.dae import ContinuousSet, DerivativeVar

from . import vehicle as veh
from .backend import add, is_number, mul, sub
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
OCP_CONFIG.declare("nfe", ConfigValue(default=None, domain=lambda x: None if x is None else PositiveInt(x),
                   description="number of finite elements N; None: the sector length divided by "
                               "element_length, rounded up"))
OCP_CONFIG.declare("element_length", ConfigValue(default=10.0, domain=float,
                   description="length of the finite elements when nfe is None [m]; 10 m with "
                               "ncp = 2 is within 0.02 % of the mesh-converged lap time on the "
                               "Nordschleife (README, 'Mesh study')"))
OCP_CONFIG.declare("ncp", ConfigValue(default=2, domain=PositiveInt,
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
OCP_CONFIG.declare("piecewise_constant_controls", ConfigValue(default=False, domain=bool,
                   description="controls constant within each finite element (True, the paper's "
                               "u_i) or a value at every collocation point (False, default: the lap "
                               "time converges with the mesh much faster, README 'Mesh study')"))
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
OCP_CONFIG.declare("adherence", ConfigValue(default="below-peak", domain=In(["below-peak", "squared"]),
                   description="form of the tyres' adherence constraints (friction ellipse): "
                               "'below-peak' |mu_y/mu_x f_x| <= D cos(theta), two rows a tyre, each "
                               "tyre at or below the peak of its Magic Formula; 'squared' the paper's "
                               "(mu_y/mu_x f_x)^2 + f_y^2 <= D^2 (degenerate at the peak; see "
                               "pyomo_lap.ocp.adherence_rows)"))
OCP_CONFIG.declare("named_subexpressions", ConfigValue(default=True, domain=bool,
                   description="write shared subexpressions of the car equations as named "
                               "Expressions m.car.cse[s, k] (the NL writer makes them defined "
                               "variables, which the AMPL solver library evaluates once; Pyomo's "
                               "own walkers need them to stay fast); False shares the expression "
                               "objects without naming them: faster to build, fine for lap_ipopt "
                               "(pyomo_lap.api.solve_sector uses it for that solver), but Pyomo's "
                               "NL writer and value() then expand the shared parts"))
OCP_CONFIG.declare("track_margin", ConfigValue(default=0.0, domain=NonNegativeFloat,
                   description="extra distance kept from each track edge [m]"))


def _sector_points(track, start, length, sigma):
    s_track = start + np.asarray(sigma, dtype=float)
    if track.closed:
        s_track = np.mod(s_track, track.length)
    return track.evaluate(s_track)


USER_TAGS = ("qdd", "W3J", "V3", "V6", "a3", "alpha_", "f_", "Y_", "aero_q", "roll_moment")
"""Tags of the car equations kept as named Expressions ``m.car.<tag>[s]`` (prefixes)."""


DERIVATIVE_NAMES = tuple(f"d{k}_ds" for k in STATE_NAMES + RATE_NAMES) + ("dt_ds",)
"""Names of the ``DerivativeVar`` components (d/dq1 of the states and of the time)."""

POINT_VARIABLES = STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC + DERIVATIVE_NAMES
"""The model variables of one point that the rows of :func:`record_point_rows` depend on
(33 names, in the order of the tape's inputs)."""

TRACK_INPUTS = tuple(f"R[{k}]" for k in range(9)) + tuple(f"Om[{k}]" for k in range(3)) \
    + tuple(f"dOm[{k}]" for k in range(3))
r"""The track numbers of one point the rows depend on: :math:`R_{0,1}` row by row,
:math:`\Omega` and :math:`d\Omega/ds` (eq 12 with :math:`|p_{,q1}| = 1`)."""

WHEELS = ("11", "12", "21", "22")


@dataclasses.dataclass
class RowFamily:
    """One family of per-point rows: the entries of a ``Constraint`` component.

    Attributes
    ----------
    name : str
        Name of the component on the model (``ode_qdot``, ``adherence`` ...).
    keys : tuple
        First index of each row of the family (``None`` for a component indexed by ``s``
        only; the component is then indexed ``[s]``, otherwise ``[key, s]``, or ``[key]`` for
        ``where == "first"``).
    outputs : tuple of int
        Position of each row's body among :attr:`PointRows.outputs`.
    lower, upper : tuple of (float or None)
        Bounds of each row.
    where : str
        ``"all"`` points, ``"interior"`` (all but the first: the DAE is not collocated at
        ``s = 0``), or ``"first"`` (the first point only).
    """

    name: str
    keys: tuple
    outputs: tuple
    lower: tuple
    upper: tuple
    where: str = "all"


@dataclasses.dataclass
class PointRows:
    """The rows of the OCP at one point, recorded once on a :class:`pyomo_lap.tape.Tape`.

    Every row body is a function of the point's variables (:data:`POINT_VARIABLES`, in the
    model: ``m.<name>[s]``) and of the track numbers there (:data:`TRACK_INPUTS`). The Pyomo
    builder replays the tape at every point (:func:`build_model`); the fast solver path
    (:mod:`pyomo_lap.lap_solver`) turns the same tape into one compiled CasADi function
    mapped over the points, and checks before each solve that the model still holds these
    rows.

    Attributes
    ----------
    tape : pyomo_lap.tape.Tape
    outputs : list
        Row bodies (tape nodes), in family order.
    families : list of RowFamily
    variables, track_inputs : tuple of str
    built : list of (ConstraintData, expression, point, output)
        Set by :func:`build_model`: every row as built (its relational expression object),
        the index of its point in :attr:`points` and of its body in :attr:`outputs`.
    named : list of (ExpressionData, expression, point)
        Set by :func:`build_model`: the named expressions ``m.car.*`` as built.
    components : dict
        ``name -> Var`` component of each of :attr:`variables`, as built.
    track_values : ndarray (n_points, 15)
        The track numbers at each point (columns :attr:`track_inputs`).
    points : list of float
        The points ``s`` of the mesh, sorted [m].
    """

    tape: object
    outputs: list
    families: list
    variables: tuple = POINT_VARIABLES
    track_inputs: tuple = TRACK_INPUTS
    built: list = dataclasses.field(default_factory=list, repr=False)
    named: list = dataclasses.field(default_factory=list, repr=False)
    components: dict = dataclasses.field(default_factory=dict, repr=False)
    track_values: object = dataclasses.field(default=None, repr=False)
    points: list = dataclasses.field(default_factory=list, repr=False)

    def casadi_function(self, name: str = "point_rows"):
        """``casadi.Function`` ``(w[33], track[15]) -> rows`` (see :func:`pyomo_lap.tape.casadi_function`)."""
        from .tape import casadi_function
        return casadi_function(self.tape, self.outputs, {"w": self.variables, "track": self.track_inputs},
                               name=name)


def record_point_rows(p, chain, cfg) -> PointRows:
    r"""Record the rows of the OCP at one point, once, on :class:`pyomo_lap.tape.Node` symbols.

    Rows (sec. 3.2 and 4; every body is written ``body`` with constant bounds):

    * ``ode_q[k]`` (k = q2..q6): :math:`\dot q_1\, dq_k/ds - \dot q_k = 0`, eq (39);
    * ``ode_qdot[k]`` (k = 1..6): :math:`\dot q_1\, d\dot q_k/ds - \ddot q_k = 0` with
      :math:`\ddot q` from the ABA;
    * ``ode_t``: :math:`\dot q_1\, dt/ds = 1`;
    * ``loads_eq[k]`` (35) and ``inplane_eq[k]`` (36): residuals = 0;
    * ``power_limit``: :math:`f_{xa} v_{3x} \le P_{max}`;
    * ``adherence[w, sense]``: the friction ellipse of each tyre (see ``adherence`` in
      :data:`OCP_CONFIG`);
    * ``speed_min``: :math:`v_{3x} \ge v_{min}`;
    * ``settled_start[k]`` (k = 4..6, open sectors): :math:`\ddot q_k = 0` at the start.

    Parameters
    ----------
    p : VehicleParameters
    chain : chain.Chain
    cfg : ConfigDict
        :data:`OCP_CONFIG` values (``adherence``, ``v_min``, ``periodic``).

    Returns
    -------
    PointRows
    """
    from .tape import record

    groups = {"x": len(POINT_VARIABLES), "track": len(TRACK_INPUTS)}
    rows = []          # (family, key, node, lower, upper, where)

    def fn(namer, x):
        v = dict(zip(POINT_VARIABLES, x["x"]))
        t = x["track"]
        tj = TrackJoint(R=[t[0:3], t[3:6], t[6:9]], J=[1.0, 0, 0] + t[9:12],
                        dJ=[0, 0, 0] + t[12:15], p=[0.0, 0.0, 0.0])
        q = [0.0] + [v[k] for k in STATE_NAMES]
        qd = [v[k] for k in RATE_NAMES]
        u = [v[k] for k in veh.CONTROLS]
        z = [v[k] for k in veh.ALGEBRAIC]
        e = veh.car_equations(p, chain, tj, q, qd, u, z, namer=namer)
        ch = e.channels
        q1d = v["q1_dot"]
        for k in STATE_NAMES:
            rows.append(("ode_q", k, sub(mul(q1d, v[f"d{k}_ds"]), v[f"{k}_dot"]), 0.0, 0.0, "interior"))
        for k in range(1, 7):
            rows.append(("ode_qdot", k, sub(mul(q1d, v[f"dq{k}_dot_ds"]), e.qdd[k - 1]), 0.0, 0.0,
                         "interior"))
        rows.append(("ode_t", None, mul(q1d, v["dt_ds"]), 1.0, 1.0, "interior"))
        for k in range(4):
            rows.append(("loads_eq", k, e.load_residuals[k], 0.0, 0.0, "all"))
        for k in range(3):
            rows.append(("inplane_eq", k, e.inplane_residuals[k], 0.0, 0.0, "all"))
        rows.append(("power_limit", None, ch["power"], None, p.P_max, "all"))
        for key, body in adherence_rows(p, ch, cfg.adherence):
            rows.append(("adherence", key, body, None, 0.0, "all"))
        rows.append(("speed_min", None, ch["v_3x"], cfg.v_min, None, "all"))
        if not cfg.periodic:
            for k in range(4, 7):
                rows.append(("settled_start", k, e.qdd[k - 1], 0.0, 0.0, "first"))
        return [r[2] for r in rows]

    tape, outs = record(fn, groups)
    # the tape's inputs are named x[i] / track[i]: rename them after the model's components
    names = {f"x[{i}]": n for i, n in enumerate(POINT_VARIABLES)}
    names.update({f"track[{i}]": n for i, n in enumerate(TRACK_INPUTS)})
    for node in tape.nodes:
        if node.op == "input":
            node.args = (names[node.args[0]],)
    tape.input_names = [names[n] for n in tape.input_names]
    tape.count_uses(outs)
    families = []
    for fam in dict.fromkeys(r[0] for r in rows):
        idx = [i for i, r in enumerate(rows) if r[0] == fam]
        families.append(RowFamily(fam, tuple(rows[i][1] for i in idx), tuple(idx),
                                  tuple(rows[i][3] for i in idx), tuple(rows[i][4] for i in idx),
                                  rows[idx[0]][5]))
    return PointRows(tape=tape, outputs=list(outs), families=families)


def adherence_rows(p, ch, form: str) -> list:
    r"""Bodies (``<= 0``) of the adherence constraints of the four tyres.

    ``form = "squared"`` is the friction ellipse as the paper writes it,
    :math:`(\mu_y/\mu_x\, f_x)^2 + f_y^2 - D^2 \le 0`, one row per tyre (key ``(w, 0)``).
    With the Magic Formula :math:`f_y = D\sin\theta` (eq 32) this is
    :math:`(\mu_y/\mu_x f_x)^2 \le D^2\cos^2\theta`, whose gradient vanishes when a tyre is
    at the peak of its lateral characteristic with no longitudinal force: the constraint is
    active there with a zero gradient, the multipliers are unbounded and IPOPT crawls.

    ``form = "below-peak"`` (default) writes the same ellipse as
    :math:`\pm\mu_y/\mu_x\, f_x - D\cos\theta \le 0` (keys ``(w, +1)``, ``(w, -1)``),
    which has a nonzero gradient everywhere and also keeps each tyre at or below the peak
    of its lateral characteristic (:math:`\cos\theta \ge 0`). A row that the control
    bounds make redundant is left out: a front tyre that only brakes
    (:math:`f_x = k_b f_{xb}/2 \le 0`) has only the ``-1`` row.

    Parameters
    ----------
    p : VehicleParameters
    ch : dict
        Channels of :func:`pyomo_lap.vehicle.car_equations` (``f_<w>x``, ``f_<w>y``,
        ``D_<w>``, ``theta_<w>``).
    form : {"below-peak", "squared"}

    Returns
    -------
    list of ((wheel, sense), body)
    """
    from .backend import cos
    ratio = p.mu_y0 / p.mu_x0
    out = []
    for w in WHEELS:
        fx, D = ch[f"f_{w}x"], ch[f"D_{w}"]
        if form == "squared":
            body = sub(add(mul(mul(ratio, fx), mul(ratio, fx)), mul(ch[f"f_{w}y"], ch[f"f_{w}y"])),
                       mul(D, D))
            out.append(((w, 0), body))
            continue
        cap = mul(D, cos(ch[f"theta_{w}"]))
        senses = (-1,) if w.startswith("1") and 0.0 <= p.brake_ratio else (1, -1)
        for sense in senses:
            out.append(((w, sense), sub(mul(sense * ratio, fx), cap)))
    return out


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


_FAMILY_DOCS = {
    "ode_q": "spatial DAE (39), kinematics: q1_dot dq_k/ds - q_k_dot = 0 [m/s, rad/s]",
    "ode_qdot": "spatial DAE (39), dynamics: q1_dot dq_k_dot/ds - q_k_ddot(ABA) = 0 [m/s^2, rad/s^2]",
    "ode_t": "time: q1_dot dt/ds = 1",
    "loads_eq": "vertical loads, eq (35): f_ijz - f~_ijz = 0 [N]",
    "inplane_eq": "in-plane tyre resultant, eq (36) [N, N, N m]",
    "power_limit": "traction power f_xa v_3x <= P_max [W]",
    "adherence": "friction ellipse of each tyre (see pyomo_lap.ocp.adherence_rows) [N]",
    "speed_min": "v_3x >= v_min [m/s] (slip angles (33) divide by v_3x)",
    "settled_start": "open sector: the car enters settled, q_k_ddot = 0 (k = 4..6) at the start",
}


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


def track_numbers(tp) -> dict:
    """The track numbers of :data:`TRACK_INPUTS` at the points of a
    :class:`~pyomo_lap.track.TrackPoints`, as ``name -> (n,) array``."""
    n = len(tp.s)
    R = np.asarray(tp.rotation, dtype=float).reshape(n, 9)
    out = {f"R[{k}]": R[:, k] for k in range(9)}
    for k in range(3):
        out[f"Om[{k}]"] = np.asarray(tp.omega[:, k], dtype=float)
        out[f"dOm[{k}]"] = np.asarray(tp.domega_ds[:, k], dtype=float)
    return out


def _replay(m, rec: PointRows, tp, sigma, named: bool, progress) -> list:
    """The row bodies at every point as Pyomo expressions (:class:`pyomo_lap.tape.PyomoReplay`).

    The points are grouped by which track numbers are exactly zero; the tape is specialized
    to each group (:func:`pyomo_lap.tape.specialize`), so a zero never enters an expression.
    Tagged quantities of the model code (:data:`USER_TAGS`) become ``m.car.<tag>[s]``; with
    ``named``, the other nodes used more than once (:func:`_shared_nodes`) become
    ``m.car.cse[s, k]`` (``k``: the node's index on the recorded tape).

    Returns
    -------
    list (one entry per point) of lists (one entry per output of ``rec``)
    """
    from .tape import PyomoReplay, specialize
    tape = rec.tape
    tape.tags = {i: t for i, t in tape.tags.items() if t.startswith(USER_TAGS)}
    n = len(sigma)
    numbers = track_numbers(tp)
    zero = np.stack([numbers[k] == 0.0 for k in TRACK_INPUTS], axis=1)
    patterns, inverse = np.unique(zero, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    groups = []
    keys = set()
    for g, pat in enumerate(patterns):
        consts = {k: 0.0 for k, z in zip(TRACK_INPUTS, pat) if z}
        spec, outs, origin = specialize(tape, rec.outputs, consts)
        shared = {i: origin[i] for i in _shared_nodes(spec)} if named else {}
        keys.update(shared.values())
        replay = PyomoReplay(spec, outs, POINT_VARIABLES, shared=shared)
        pts = np.flatnonzero(inverse == g)
        nums = replay.numeric_values({k: numbers[k][pts] for k in replay.numeric_inputs}, len(pts))
        groups.append((replay, pts, nums))
    namer = _Namer(m.car, m.s)
    if named:
        m.car.cse_index = pyo.Set(initialize=sorted(keys), doc="tape index of a shared subexpression")
        m.car.cse = pyo.Expression(m.s, m.car.cse_index, doc="common subexpressions of the car equations")
    cse = m.car.component("cse")
    comps = [m.component(name) for name in POINT_VARIABLES]
    columns = []          # the variables of each component at every point, in point order
    for c in comps:
        keys, datas = zip(*c.items()) if len(c) == n else ((), ())
        columns.append(list(datas) if list(keys) == list(sigma) else [c[s] for s in sigma])
    point_vars = list(zip(*columns))
    values = [None] * n
    done = 0
    for replay, pts, nums in groups:
        for row, i in zip(nums.tolist(), pts.tolist()):
            s = sigma[i]
            if named:
                def share(k, value, _s=s):
                    return _set_new(cse, (_s, k), value)
            else:
                def share(k, value):
                    return value
            values[i] = replay.build(point_vars[i], row, namer.at(s), share)
            done += 1
            if progress is not None:
                progress("building the model", done, n)
    return values


def _replay_lifted(m, rec: PointRows, tp, sigma, lift, progress) -> list:
    """As :func:`_replay`, for the option ``lift``: every tag of the model code that starts
    with one of ``lift`` becomes a variable ``m.car.<tag>[s]`` with its defining equation
    ``m.car.<tag>_def[s]`` (slow path through :meth:`pyomo_lap.tape.Tape.replay`)."""
    tape = rec.tape
    numbers = track_numbers(tp)
    namer = _Namer(m.car, m.s, lift=lift)
    comps = [m.component(name) for name in POINT_VARIABLES]
    values = []
    for i, s in enumerate(sigma):
        inputs = {k: float(numbers[k][i]) for k in TRACK_INPUTS}
        inputs.update({name: c[s] for name, c in zip(POINT_VARIABLES, comps)})
        values.append(tape.replay(inputs, rec.outputs, name=namer.at(s), share=lambda k, v: v))
        if progress is not None:
            progress("building the model", i + 1, len(sigma))
    return values


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
        ``m.track_points`` the track at every point of ``m.s``, ``m.build_time_s`` the time
        [s] (of which ``m.dae_time_s`` in pyomo.dae's transformation).

    Raises
    ------
    ValueError
        Sector outside an open track, longer than one lap of a closed track, periodic on a
        sector that is not a whole closed lap, too short a sector for the mesh.
    """
    from .gc_pause import gc_paused
    with gc_paused():
        return _build_model(track, vehicle, config, progress, kwargs)


def pyomo_units():
    """Pyomo's units (``pyomo.environ.units``), on first use backed by a pint registry that
    keeps its parsed unit definitions in pint's disk cache (``<cache>/pint``, see
    :func:`pyomo_lap.casadi_compile.cache_dir`): building pint's registry from its definition
    file took 0.29 s of every model build, from the cache 0.02 s. The registry and the units
    are pint's defaults either way."""
    units = pyo.units
    if type(units).__name__ == "_DeferredUnitsSingleton":    # not used yet in this process
        try:
            import pint

            from .casadi_compile import cache_dir
            folder = cache_dir() / "pint"
            folder.mkdir(parents=True, exist_ok=True)
            units.set_pint_registry(pint.UnitRegistry(cache_folder=str(folder)))
        except Exception:   # pint's own default registry is created on first use instead
            pass
    return pyo.units


def _build_model(track, vehicle, config, progress, kwargs):
    t0 = time.perf_counter()
    pyomo_units()
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
    fast_element_lookup(m.s)

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
    t_dae = time.perf_counter()
    disc.apply_to(m, wrt=m.s, nfe=cfg.nfe, ncp=cfg.ncp, scheme=cfg.scheme)
    if cfg.piecewise_constant_controls and cfg.ncp > 1:
        for c in ("f_xa", "f_xb", "delta"):
            disc.reduce_collocation_points(m, var=m.component(c), ncp=1, contset=m.s)
    m.dae_time_s = time.perf_counter() - t_dae      # pyomo.dae's share of the build
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

    # ---- the rows at every point ---------------------------------------------------------
    # The rows of one point are recorded once on symbols (pyomo_lap.tape: common
    # subexpressions merged) and replayed at every point on the point's variables and track
    # numbers; the quantities users ask for are named Expressions m.car.<tag>[s].
    m.car = pyo.Block()
    chain = m.chain = veh.build_chain(p)
    rec = m.point_rows = record_point_rows(p, chain, cfg)
    if cfg.lift:
        values = _replay_lifted(m, rec, tp, sigma, cfg.lift, progress)
    else:
        values = _replay(m, rec, tp, sigma, cfg.named_subexpressions, progress)
    first = sigma[0]
    where = {"all": sigma, "interior": sigma[1:], "first": sigma[:1]}
    built = rec.built = []        # (ConstraintData, its expression, point, output) as built
    record_built = not cfg.lift   # lifted rows are not the recorded ones
    for fam in rec.families:
        pts = where[fam.where]
        if fam.where == "first":
            index = list(fam.keys)
        elif fam.keys == (None,):
            index = list(pts)
        else:
            index = [(k, s) if not isinstance(k, tuple) else k + (s,) for k in fam.keys for s in pts]
        con = pyo.Constraint(index, doc=_FAMILY_DOCS.get(fam.name))
        m.add_component(fam.name, con)
        for j, key in enumerate(fam.keys):
            lo, up, out = fam.lower[j], fam.upper[j], fam.outputs[j]
            for s in pts:
                i = idx[s]
                body = values[i][out]
                if is_number(body):
                    continue
                if fam.where == "first":
                    ix = key
                elif key is None:
                    ix = s
                else:
                    ix = key + (s,) if isinstance(key, tuple) else (key, s)
                c = _set_new(con, ix, (body == lo) if lo is not None and lo == up else (lo, body, up))
                if record_built:
                    built.append((c, c.expr, i, out))
    # what the fast solver path checks before it uses the recorded rows instead of these
    # expressions: the variable components, the named expressions and the track numbers
    rec.components = {name: m.component(name) for name in POINT_VARIABLES}
    rec.named = []
    for e in m.car.component_data_objects(pyo.Expression, descend_into=True):
        ix = e.index()
        rec.named.append((e, e.expr, idx[ix[0] if isinstance(ix, tuple) else ix]))
    numbers = track_numbers(tp)
    rec.track_values = np.stack([numbers[k] for k in TRACK_INPUTS], axis=1)
    rec.points = list(sigma)
    v3x_out = next(f.outputs[0] for f in rec.families if f.name == "speed_min")
    m.v_3x = pyo.Expression(m.s, rule=lambda m, s: values[idx[s]][v3x_out],
                            doc="longitudinal speed of O3 in {B3} [m/s]")

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

    # ---- objective (41) ---------------------------------------------------------------------
    add_objective(m, cfg)
    _set_scaling(m)
    m.build_time_s = time.perf_counter() - t0
    return m


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
    L = m.sector_length
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
"""The scaled objective is about this number (see :func:`_set_scaling`)."""


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
        sf[c] = F * F if m.options.adherence == "squared" else F
    for c in m.speed_min.values():
        sf[c] = 0.05
    if m.component("settled_start") is not None:
        for c in m.settled_start.values():
            sf[c] = 0.1
    # the objective is scaled to about 1000 (the sector time divided by the time it takes at
    # 30 m/s, times 1000). With an objective of order one (as before), the log-barrier terms
    # of the ~3 active inequalities per point, mu * sum(log(slack)), still moved the optimum
    # by 0.5-1 % at IPOPT's final barrier parameter, and IPOPT needed 120-180 iterations; scaled
    # to 1000, the same solve takes about 30 iterations and ends within 1e-5 of the optimum
    # (README, "Scaling and solver options")
    sf[m.objective] = OBJECTIVE_SCALE / max(1.0, L / 30.0)
