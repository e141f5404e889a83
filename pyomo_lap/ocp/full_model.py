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

with :math:`\ddot q` from the ABA (:mod:`pyomo_lap.spatial.chain`), the four load equations (35)
and the three in-plane equations (36) (:mod:`pyomo_lap.vehicle.car`). Path constraints: power
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
from typing import Callable, Optional

import numpy as np
import pyomo.environ as pyo

from ..vehicle import car as veh
from ..spatial.backend import add, is_number, mul, sub
from ..spatial.chain import TrackJoint
from .initialize import cold_start_profile
from ..vehicle.numeric import CarFunctions, track_vector
from .common import (OBJECTIVE_SCALE, add_car_controls, add_derivative_vars, car_control_bounds,
                     control_states, scale_control_rates,
                     discretize_on_track, entry_speed, finish_build, new_sector_model, _Namer,
                     scale_variables, set_bounds, set_track_limits, track_limits, _set_new)
from .vehicle_model import VehicleModel, update_problem

__all__ = ["FULL_MODEL", "STATE_NAMES", "RATE_NAMES", "build_full_model", "initialize_full_model",
           "record_point_rows", "point_row_list", "rows_on_tape", "adherence_rows", "PointRows", "RowFamily",
           "add_recorded_rows", "set_full_vehicle", "VehicleStructureError", "load_bounds",
           "add_channel_expressions", "CHANNEL_EXPRESSIONS"]

STATE_NAMES = ("q2", "q3", "q4", "q5", "q6")
RATE_NAMES = ("q1_dot", "q2_dot", "q3_dot", "q4_dot", "q5_dot", "q6_dot")

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
    """The rows of the OCP at one point, recorded once on a :class:`pyomo_lap.spatial.tape.Tape`.

    Every row body is a function of the point's variables (:data:`POINT_VARIABLES`, in the
    model: ``m.<name>[s]``) and of the track numbers there (:data:`TRACK_INPUTS`). The Pyomo
    builder replays the tape at every point (:func:`build_model`); the fast solver path
    (:mod:`pyomo_lap.solvers.lap_solver`) turns the same tape into one compiled CasADi function
    mapped over the points, and checks before each solve that the model still holds these
    rows.

    Attributes
    ----------
    tape : pyomo_lap.spatial.tape.Tape
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
    groups : list
        Set by :func:`build_model`: the points grouped by their zero track numbers, each with
        its specialized tape and the positions of its literal parameters (``m.car.literal``,
        ``m.car.numeric``), for :func:`set_full_vehicle`.
    parameter_values : dict
        Set by :func:`build_model` and :func:`set_full_vehicle`: the values of
        ``m.car.literal`` and ``m.car.numeric`` that belong to these rows (the fast solver path
        translates the rows from their expressions when they no longer hold them).
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
    groups: list = dataclasses.field(default_factory=list, repr=False)
    parameter_values: dict = dataclasses.field(default_factory=dict, repr=False)

    def casadi_function(self, name: str = "point_rows", literals: bool = False):
        """``casadi.Function`` ``(w[33], track[15]) -> rows``, or with ``literals``
        ``(w, track, literals) -> rows`` where ``literals`` are the numbers of the car and the
        options (:meth:`literal_values`), so that one function serves every car of the same
        structure (see :func:`pyomo_lap.spatial.tape.casadi_function`)."""
        from ..spatial.tape import casadi_function
        return casadi_function(self.tape, self.outputs, {"w": self.variables, "track": self.track_inputs},
                               name=name, literals="literals" if literals else None)

    def parameters_changed(self, model) -> str:
        """Which of the model's ``m.car.literal`` / ``m.car.numeric`` no longer hold
        :attr:`parameter_values` (changed other than by :func:`set_full_vehicle`): their
        names, '' if none (or if the rows were not built with parameters)."""
        if not self.parameter_values or model.component("car") is None:
            return ""
        now = _parameter_values(model)
        return ", ".join(f"m.car.{name}" for name, values in self.parameter_values.items()
                         if now.get(name) != values)

    def literal_values(self):
        """The numbers of the car and the options in the recorded rows, in the order of the
        ``literals`` argument of :meth:`casadi_function` (ndarray (k,))."""
        from ..spatial.tape import literal_arguments
        return np.asarray(literal_arguments(self.tape), dtype=float)

    def structure_key(self, salt: str = "") -> str:
        """A hash of the recorded rows with the car's and the options' numbers left out
        (:func:`pyomo_lap.spatial.tape.structure_key`): the same for two cars that differ only
        in parameter values, so that they share one compiled function."""
        from ..spatial.tape import structure_key
        return structure_key(self.tape, self.outputs, tuple(self.variables) + tuple(self.track_inputs),
                             salt)


def record_point_rows(p, chain, cfg) -> PointRows:
    r"""Record the rows of the OCP at one point, once, on :class:`pyomo_lap.spatial.tape.Node` symbols.

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

    groups = {"x": len(POINT_VARIABLES), "track": len(TRACK_INPUTS)}
    rows = []          # (family, key, node, lower, upper, where)

    def fn(namer, x):
        rows[:] = point_row_list(p, chain, cfg, x["x"], x["track"], namer)
        return [r[2] for r in rows]

    return rows_on_tape(fn, groups, rows)


def rows_on_tape(fn, groups: dict, rows: list, variables=None) -> PointRows:
    """Record one point's rows on a tape and group them into families (what every model with
    recorded rows shares: the full and the multibody car).

    Parameters
    ----------
    fn : callable
        ``fn(namer, x) -> list of expressions``; fills ``rows`` with tuples
        ``(family, key, node, lower, upper, where)`` as it runs.
    groups : dict
        ``{"x": number of point variables, "track": number of track inputs}``.
    rows : list
        The list ``fn`` fills.
    variables : tuple of str, optional
        The point variables in tape order (default :data:`POINT_VARIABLES`, the full car's).

    Returns
    -------
    PointRows
        The tape, with its inputs named after the model's components, its outputs and families.
    """
    from ..spatial.tape import record
    point_vars = POINT_VARIABLES if variables is None else variables
    tape, outs = record(fn, groups)
    # the tape's inputs are named x[i] / track[i]: rename them after the model's components
    names = {f"x[{i}]": n for i, n in enumerate(point_vars)}
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
    return (PointRows(tape=tape, outputs=list(outs), families=families) if variables is None else
            PointRows(tape=tape, outputs=list(outs), families=families, variables=variables))


def point_row_list(p, chain, cfg, x, track, namer=None) -> list:
    r"""The rows of the OCP at one point (those of :func:`record_point_rows`), on any scalars.

    Parameters
    ----------
    p : VehicleParameters (or an object with its fields and properties, e.g. CasADi symbols:
        :mod:`pyomo_lap.post.sensitivities`)
    chain : chain.Chain
        :func:`pyomo_lap.vehicle.car.build_chain` of ``p``.
    cfg : ConfigDict
        :data:`OCP_CONFIG` values (``adherence``, ``v_min``, ``periodic``).
    x : sequence of 33 scalars
        The point's variables, in the order of :data:`POINT_VARIABLES`.
    track : sequence of 15 scalars
        The track numbers, in the order of :data:`TRACK_INPUTS`.
    namer : callable, optional
        ``namer(tag, value)`` (see :func:`pyomo_lap.vehicle.car.car_equations`).

    Returns
    -------
    list of (family, key, body, lower, upper, where)
        One tuple per row, in the order of the recorded outputs; ``lower``/``upper`` are
        None, floats or (``power_limit``) ``p.P_max``.
    """
    rows = []
    v = dict(zip(POINT_VARIABLES, x))
    t = list(track)
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
    return rows


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
        Channels of :func:`pyomo_lap.vehicle.car.car_equations` (``f_<w>x``, ``f_<w>y``,
        ``D_<w>``, ``theta_<w>``).
    form : {"below-peak", "squared"}

    Returns
    -------
    list of ((wheel, sense), body)
    """
    from ..spatial.backend import cos
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
        # brake_ratio >= 0 (schema): a symbolic one (sensitivities) has the same rows
        front_brakes = not is_number(p.brake_ratio) or 0.0 <= p.brake_ratio
        senses = (-1,) if w.startswith("1") and front_brakes else (1, -1)
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
    from ..spatial.tape import Node

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
    "adherence": "friction ellipse of each tyre (see pyomo_lap.ocp.build.adherence_rows) [N]",
    "speed_min": "v_3x >= v_min [m/s] (slip angles (33) divide by v_3x)",
    "settled_start": "open sector: the car enters settled, q_k_ddot = 0 (k = 4..6) at the start",
}


def track_numbers(tp) -> dict:
    """The track numbers of :data:`TRACK_INPUTS` at the points of a
    :class:`~pyomo_lap.track.geometry.TrackPoints`, as ``name -> (n,) array``."""
    n = len(tp.s)
    R = np.asarray(tp.rotation, dtype=float).reshape(n, 9)
    out = {f"R[{k}]": R[:, k] for k in range(9)}
    for k in range(3):
        out[f"Om[{k}]"] = np.asarray(tp.omega[:, k], dtype=float)
        out[f"dOm[{k}]"] = np.asarray(tp.domega_ds[:, k], dtype=float)
    return out


def _replay(m, rec: PointRows, tp, sigma, named: bool, progress, user_tags=USER_TAGS) -> list:
    """The row bodies at every point as Pyomo expressions (:class:`pyomo_lap.spatial.tape.PyomoReplay`).

    The points are grouped by which track numbers are exactly zero; the tape is specialized
    to each group (:func:`pyomo_lap.spatial.tape.specialize`), so a zero never enters an expression.
    Tagged quantities of the model code (:data:`USER_TAGS`) become ``m.car.<tag>[s]``; with
    ``named``, the other nodes used more than once (:func:`_shared_nodes`) become
    ``m.car.cse[s, k]`` (``k``: the node's index on the recorded tape).

    The numbers of the car and the options (the tape's literals) enter the expressions as
    mutable parameters: ``m.car.literal[g, k]`` (group ``g`` of points, one per literal of
    its symbolic operations, shared by its points) and ``m.car.numeric[s, k]`` (the values at
    a point that combine a literal with the track's numbers); :func:`set_full_vehicle` puts
    another car's numbers into them. The groups are kept on ``rec.groups``.

    Returns
    -------
    list (one entry per point) of lists (one entry per output of ``rec``)
    """
    groups = rec.groups = _replay_groups(rec, tp, sigma, named, user_tags)
    n = len(sigma)
    lit_index = [(g, k) for g, grp in enumerate(groups) for k in range(len(grp.replay.literal_slots))]
    lit_init = {(g, k): v for g, grp in enumerate(groups)
                for k, v in enumerate(grp.replay.literal_values())}
    m.car.literal = pyo.Param(lit_index, mutable=True, initialize=lit_init,
                              doc="numbers of the car and the options in the rows: literal k of "
                                  "the rows of point group g (set by set_vehicle)")
    num_init = {(sigma[i], k): row[k] for grp in groups
                for i, row in zip(grp.points.tolist(), grp.numbers)
                for k in grp.replay.parameter_columns}
    m.car.numeric = pyo.Param(list(num_init), mutable=True, initialize=num_init,
                              doc="values at point s that combine the car's numbers with the "
                                  "track's (column k of the point's group; set by set_vehicle)")
    namer = _Namer(m.car, m.s)
    if named:
        keys = sorted(set().union(*(g.shared_keys for g in groups)))
        m.car.cse_index = pyo.Set(initialize=keys, doc="tape index of a shared subexpression")
        m.car.cse = pyo.Expression(m.s, m.car.cse_index, doc="common subexpressions of the car equations")
    cse = m.car.component("cse")
    comps = [m.component(name) for name in rec.variables]
    columns = []          # the variables of each component at every point, in point order
    for c in comps:
        keys, datas = zip(*c.items()) if len(c) == n else ((), ())
        columns.append(list(datas) if list(keys) == list(sigma) else [c[s] for s in sigma])
    point_vars = list(zip(*columns))
    values = [None] * n
    done = 0
    literal, numeric = m.car.literal, m.car.numeric
    for g, grp in enumerate(groups):
        replay = grp.replay
        lits = [literal[g, k] for k in range(len(replay.literal_slots))]
        pcols = replay.parameter_columns
        for row, i in zip(grp.numbers.tolist(), grp.points.tolist()):
            s = sigma[i]
            for k in pcols:
                row[k] = numeric[s, k]
            if named:
                def share(k, value, _s=s):
                    return _set_new(cse, (_s, k), value)
            else:
                def share(k, value):
                    return value
            values[i] = replay.build(point_vars[i], row, namer.at(s), share, lits)
            done += 1
            if progress is not None:
                progress("building the model", done, n)
    rec.parameter_values = _parameter_values(m)
    return values


def _parameter_values(m) -> dict:
    """The values of ``m.car.literal`` and ``m.car.numeric`` (:attr:`PointRows.parameter_values`;
    a component that is missing has none)."""
    return {name: [p.value for p in comp.values()] for name in ("literal", "numeric")
            if (comp := m.car.component(name)) is not None}


@dataclasses.dataclass
class _ReplayGroup:
    """The points of one pattern of zero track numbers and the tape specialized to them."""
    replay: object          # PyomoReplay (with literal parameters)
    points: np.ndarray      # positions in sigma
    numbers: np.ndarray     # (len(points), k) numeric values
    zeros: dict             # the track inputs that are 0 at these points
    shared_keys: tuple      # tape indices of the named shared nodes
    structure: str          # structure_key of the specialized tape
    user_tags: tuple        # the tags kept as named expressions


def _specialized(rec: PointRows, zeros: dict, named: bool, user_tags) -> tuple:
    """The tape of ``rec`` specialized to the track inputs ``zeros`` (with its tags kept to
    ``user_tags``): ``(tape, outputs, shared nodes, structure key)``, the key covering the
    tags and the shared nodes (which named expressions the replay makes)."""
    from ..spatial.tape import specialize, structure_key
    rec.tape.tags = {i: t for i, t in rec.tape.tags.items() if t.startswith(user_tags)}
    spec, outs, origin = specialize(rec.tape, rec.outputs, zeros)
    shared = {i: origin[i] for i in _shared_nodes(spec)} if named else {}
    key = structure_key(spec, outs, tuple(rec.variables) + tuple(TRACK_INPUTS),
                        salt=repr(sorted(spec.tags.items())) + repr(sorted(shared.items())))
    return spec, outs, shared, key


def _replay_groups(rec: PointRows, tp, sigma, named: bool, user_tags=USER_TAGS) -> list:
    """The specialized tapes of :func:`_replay`, one :class:`_ReplayGroup` per pattern of zero
    track numbers (what the build replays; their structure keys tell whether another car's rows
    have the same expressions)."""
    from ..spatial.tape import PyomoReplay
    numbers = track_numbers(tp)
    zero = np.stack([numbers[k] == 0.0 for k in TRACK_INPUTS], axis=1)
    patterns, inverse = np.unique(zero, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    groups = []
    for g, pat in enumerate(patterns):
        consts = {k: 0.0 for k, z in zip(TRACK_INPUTS, pat) if z}
        spec, outs, shared, key = _specialized(rec, consts, named, user_tags)
        replay = PyomoReplay(spec, outs, rec.variables, shared=shared, parameters=True)
        pts = np.flatnonzero(inverse == g)
        nums = replay.numeric_values({k: numbers[k][pts] for k in replay.numeric_inputs}, len(pts))
        groups.append(_ReplayGroup(replay, pts, nums, consts, tuple(shared.values()), key,
                                   tuple(user_tags)))
    return groups


def _replay_lifted(m, rec: PointRows, tp, sigma, lift, progress) -> list:
    """As :func:`_replay`, for the option ``lift``: every tag of the model code that starts
    with one of ``lift`` becomes a variable ``m.car.<tag>[s]`` with its defining equation
    ``m.car.<tag>_def[s]`` (slow path through :meth:`pyomo_lap.spatial.tape.Tape.replay`)."""
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



def add_recorded_rows(m, rec: PointRows, values, tp, sigma, idx, record_built: bool = True,
                      docs: Optional[dict] = None) -> None:
    """Add the replayed rows of every point as ``Constraint`` components (one per
    :class:`RowFamily`) and record on ``rec`` what the fast solver path checks: the rows as
    built, the variable components, the named expressions of ``m.car``, the track numbers and
    the points. Shared by every model whose rows are recorded (:func:`record_point_rows`,
    :mod:`pyomo_lap.ocp.multibody`).

    Parameters
    ----------
    m : ConcreteModel
    rec : PointRows
    values : list
        Per point, the replayed outputs of ``rec`` (:func:`_replay`).
    tp : TrackPoints
    sigma : list of float
        The points, sorted [m].
    idx : dict
        ``s -> position in sigma``.
    record_built : bool
        False for lifted rows (option ``lift``), which are not the recorded ones.
    docs : dict, optional
        ``family name -> doc`` of the constraint components (default: the full model's).
    """
    docs = {**_FAMILY_DOCS, **(docs or {})}
    where = {"all": sigma, "interior": sigma[1:], "first": sigma[:1]}
    built = rec.built = []        # (ConstraintData, its expression, point, output) as built
    bounds = _bound_parameters(m, rec.families)
    for fam in rec.families:
        pts = where[fam.where]
        if fam.where == "first":
            index = list(fam.keys)
        elif fam.keys == (None,):
            index = list(pts)
        else:
            index = [(k, s) if not isinstance(k, tuple) else k + (s,) for k in fam.keys for s in pts]
        con = pyo.Constraint(index, doc=docs.get(fam.name))
        m.add_component(fam.name, con)
        for j, key in enumerate(fam.keys):
            out = fam.outputs[j]
            equality = fam.lower[j] is not None and fam.lower[j] == fam.upper[j]
            lo, up = bounds[fam.name, j, "lower"], bounds[fam.name, j, "upper"]
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
                c = _set_new(con, ix, (body == lo) if equality else (lo, body, up))
                if record_built:
                    built.append((c, c.expr, i, out))
    # what the fast solver path checks before it uses the recorded rows instead of these
    # expressions: the variable components, the named expressions and the track numbers
    rec.components = {name: m.component(name) for name in rec.variables}
    rec.named = []
    for e in m.car.component_data_objects(pyo.Expression, descend_into=True):
        ix = e.index()
        rec.named.append((e, e.expr, idx[ix[0] if isinstance(ix, tuple) else ix]))
    numbers = track_numbers(tp)
    rec.track_values = np.stack([numbers[k] for k in TRACK_INPUTS], axis=1)
    rec.points = list(sigma)


def _bound_parameters(m, families) -> dict:
    """The bounds of the recorded rows as built: ``{(family, row, side): bound}`` with None,
    0.0 (a residual) or the mutable parameter ``m.car.row_bound[family, row, side]`` holding
    the number (the car's or the options': ``power_limit`` <= P_max, ``speed_min`` >= v_min;
    :func:`set_full_vehicle` sets it). An equality's two bounds are one parameter (side
    ``"lower"``)."""
    out, init = {}, {}
    for fam in families:
        for j in range(len(fam.keys)):
            lo, up = fam.lower[j], fam.upper[j]
            for side, v in (("lower", lo), ("upper", up)):
                if v is None or v == 0.0:
                    out[fam.name, j, side] = v
                elif side == "upper" and lo is not None and lo == up:
                    out[fam.name, j, side] = _SAME_AS_LOWER        # the lower one's parameter
                else:
                    init[fam.name, j, side] = float(v)
    m.car.row_bound = pyo.Param(list(init), mutable=True, initialize=init,
                                doc="the numbers bounding the recorded rows (family, row, "
                                    "'lower' / 'upper')")
    for key in init:
        out[key] = m.car.row_bound[key]
    for key, v in out.items():
        if v is _SAME_AS_LOWER:
            out[key] = out[key[0], key[1], "lower"]
    return out


_SAME_AS_LOWER = object()


def _bound_pattern(families) -> list:
    """Which bounds of the families are None, 0 or a number, and which rows are equalities
    (part of the model's structure: :func:`set_full_vehicle` refuses a car that changes it)."""
    kind = (lambda v: "none" if v is None else "zero" if v == 0.0 else "number")
    return [(f.name, f.keys, f.outputs, f.where, tuple(map(kind, f.lower)), tuple(map(kind, f.upper)),
             tuple(lo is not None and lo == up for lo, up in zip(f.lower, f.upper)))
            for f in families]


def add_point_rows(m, rec: PointRows, chain, tp, sigma, idx, cfg, progress, lift=(),
                   user_tags=USER_TAGS, docs: Optional[dict] = None) -> None:
    """Replay the recorded rows at every point into the model (what the full and the
    multibody car share): ``m.problem`` gets the chain and the rows, the rows become the
    ``Constraint`` components (:func:`add_recorded_rows`), the speed of the ``speed_min`` row
    the named expression ``m.v_3x[s]``.

    Parameters
    ----------
    lift : tuple of str
        Tags made variables (:data:`OCP_CONFIG` ``lift``; the rows are then not checked by the
        fast path).
    user_tags, docs
        The named expressions ``m.car.<tag>[s]`` kept, and the rows' docs.
    """
    update_problem(m, chain=chain, point_rows=rec)
    if lift:
        values = _replay_lifted(m, rec, tp, sigma, lift, progress)
    else:
        values = _replay(m, rec, tp, sigma, cfg.named_subexpressions, progress, user_tags=user_tags)
    add_recorded_rows(m, rec, values, tp, sigma, idx, record_built=not lift, docs=docs)
    v3x_out = next(f.outputs[0] for f in rec.families if f.name == "speed_min")
    m.v_3x = pyo.Expression(m.s, rule=lambda m, s: values[idx[s]][v3x_out],
                            doc="longitudinal speed of O3 in {B3} [m/s]")


def chain_scaling(m, extra: Optional[Callable] = None) -> tuple:
    """The scaling the full and the multibody car share (IPOPT's user scaling, from typical
    magnitudes; ``m.scaling_factor``): the variables of the six-joint chain (states, rates),
    the time, the controls and ``extra``; the rows ``ode_q``, ``ode_qdot``, ``ode_t``,
    ``power_limit``, ``adherence``, ``speed_min`` and the objective.

    Parameters
    ----------
    extra : callable, optional
        ``extra(F) -> {variable name: typical scale}`` of the car's own variables, ``F`` the
        per-wheel force scale.

    Returns
    -------
    (sf, F, typical)
        The suffix, the per-wheel force scale 1/(m g / 4) [1/N] and the scales by variable
        name (for the car's own rows).
    """
    p = m.problem.vehicle
    sf = m.component("scaling_factor")        # kept when the model's car changes
    if sf is None:
        sf = m.scaling_factor = pyo.Suffix(direction=pyo.Suffix.EXPORT)
    F = 1.0 / (p.m * p.gravity / 4)       # per-wheel forces
    L = m.problem.sector_length
    typical = {"q2": 1.0, "q3": 10.0, "q4": 100.0, "q5": 100.0, "q6": 100.0, "q1_dot": 0.05,
               "q2_dot": 1.0, "q3_dot": 2.0, "q4_dot": 10.0, "q5_dot": 10.0, "q6_dot": 10.0,
               "t": 1.0 / max(1.0, L / 30.0), "f_xa": F, "f_xb": F, "delta": 10.0}
    if extra is not None:
        typical.update(extra(F))
    scale_variables(m, sf, typical)
    qdd_scale = {1: 0.1, 2: 0.1, 3: 0.5, 4: 0.1, 5: 0.1, 6: 0.1}    # other joints: 0.02
    for (k, s), c in m.ode_qdot.items():
        sf[c] = qdd_scale.get(k, 0.02) * 0.5
    for (k, s), c in m.ode_q.items():
        sf[c] = typical[f"{k}_dot"] * 0.5
    for c in m.ode_t.values():
        sf[c] = 1.0
    for c in m.power_limit.values():
        sf[c] = 1.0 / p.P_max
    for c in m.adherence.values():
        sf[c] = F * F if m.problem.options.adherence == "squared" else F
    for c in m.speed_min.values():
        sf[c] = 0.05
    # the objective is scaled to about 1000 (the sector time divided by the time it takes at
    # 30 m/s, times 1000). With an objective of order one (as before), the log-barrier terms
    # of the ~3 active inequalities per point, mu * sum(log(slack)), still moved the optimum
    # by 0.5-1 % at IPOPT's final barrier parameter, and IPOPT needed 120-180 iterations; scaled
    # to 1000, the same solve takes about 30 iterations and ends within 1e-5 of the optimum
    # (README, "Scaling and solver options")
    sf[m.objective] = OBJECTIVE_SCALE / max(1.0, L / 30.0)
    return sf, F, typical


def build_full_model(track, vehicle: veh.VehicleParameters, cfg, t0: Optional[float] = None,
                     progress=None) -> pyo.ConcreteModel:
    """Build and discretize the minimum-time OCP of the full model on a sector (the
    ``build`` of :data:`FULL_MODEL`; called by :func:`pyomo_lap.ocp.build.build_model`, which
    parses the options into ``cfg``, a copy of :data:`pyomo_lap.ocp.build.OCP_CONFIG`).

    Returns
    -------
    pyomo.environ.ConcreteModel
        As :func:`pyomo_lap.ocp.build.build_model`.
    """
    t0 = time.perf_counter() if t0 is None else t0
    p = vehicle
    u = pyo.units
    m, L = new_sector_model(track, p, cfg, FULL_MODEL, "pyomo_lap")

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
    add_car_controls(m, p, cfg)
    for name, bounds in load_bounds(p).items():
        m.add_component(name, pyo.Var(m.s, initialize=p.m * p.gravity / 4, bounds=bounds,
                                      units=u.N, doc=f"vertical load {name[2:4]} (axle, side) [N]"))
    m.f_3x = pyo.Var(m.s, initialize=0.0, units=u.N, doc="in-plane tyre force on body 3, x3 [N], eq (36a)")
    m.f_3y = pyo.Var(m.s, initialize=0.0, units=u.N, doc="in-plane tyre force on body 3, y3 [N], eq (36b)")
    m.m_3z = pyo.Var(m.s, initialize=0.0, units=u.N * u.m, doc="tyre yaw moment about O3 [N m], eq (36c)")

    add_derivative_vars(m, STATE_NAMES + RATE_NAMES + ("t",))

    # ---- discretization -----------------------------------------------------------------
    sigma, tp, idx = discretize_on_track(m, track, p, cfg, L, veh.CONTROLS)

    # ---- the rows at every point ---------------------------------------------------------
    # The rows of one point are recorded once on symbols (pyomo_lap.spatial.tape: common
    # subexpressions merged) and replayed at every point on the point's variables and track
    # numbers; the quantities users ask for are named Expressions m.car.<tag>[s].
    m.car = pyo.Block()
    chain = veh.build_chain(p)
    add_point_rows(m, record_point_rows(p, chain, cfg), chain, tp, sigma, idx, cfg, progress,
                   lift=cfg.lift)

    add_channel_expressions(m)

    # ---- boundary conditions (the zero heave, pitch and roll accelerations of a settled
    # start are the recorded rows 'settled_start') --------------------------------------------
    # ---- and the objective (41), the scaling, the build time -----------------------------------
    return finish_build(m, track, p, cfg, STATE_NAMES, RATE_NAMES, veh.CONTROLS, _set_scaling, t0)


CHANNEL_EXPRESSIONS = ("speed", "a_x", "a_y", "alpha_1", "alpha_2", "f_11x", "f_12x", "f_21x",
                       "f_22x", "f_11y", "f_12y", "f_21y", "f_22y")
"""The named channels on a full model, ``m.<name>[s]`` (:func:`add_channel_expressions`); the
vertical loads are the variables ``m.f_11z`` ... ``m.f_22z``."""


def add_channel_expressions(m) -> None:
    r"""The channels a user writes constraints and objectives on, as named ``Expression``
    components indexed by ``m.s`` (the same quantities, in SI units, as the columns of the
    same name of ``trajectory.csv``; ``pyomo-lap channels`` describes each):

    * ``m.speed`` [m/s]: speed of O3, :math:`\sqrt{v_{3x}^2 + v_{3y}^2}` (not ``q1_dot``, the
      rate along the centreline, which differs from it by the lateral offset and yaw);
    * ``m.a_x``, ``m.a_y`` [m/s^2]: acceleration of O3 in {B3} without gravity, + forward,
      + left (:func:`pyomo_lap.vehicle.car.o3_acceleration`);
    * ``m.alpha_1``, ``m.alpha_2`` [rad]: slip angles of the front and rear axle, eq (33);
    * ``m.f_11x`` ... ``m.f_22x``, ``m.f_11y`` ... ``m.f_22y`` [N]: longitudinal and lateral
      tyre forces (wheel ``ij``: axle ``i`` = 1 front, 2 rear; side ``j`` = 1 left, 2 right),
      eqs (32), (34).

    They reuse the named expressions of the rows (``m.car.V3_k``, ``m.car.a3_k``,
    ``m.car.alpha_1`` ...): no equation is written twice. The car's numbers in them are the
    mutable parameters ``m.car.gravity`` [m/s^2], ``m.car.f_11x_share`` and
    ``m.car.f_21x_share`` [-] (:func:`set_full_vehicle` sets them).
    """
    from ..spatial import lie
    from ..spatial.backend import cos, sin, sqrt
    p = m.problem.vehicle
    joints = m.problem.track_joints
    sigma = sorted(m.s)
    idx = {s: i for i, s in enumerate(sigma)}
    car = m.car
    car.gravity = pyo.Param(initialize=p.gravity, mutable=True,
                            doc="gravity of the named accelerations m.a_x, m.a_y [m/s^2]")

    def named(prefix, k, s):
        comp = car.component(f"{prefix}_{k}")
        return comp[s] if comp is not None and s in comp else 0.0

    def v3(s):
        return [named("V3", k, s) for k in range(6)]

    done = {}

    def acc(s):
        if s not in done:
            R = joints[idx[s]].R
            q3 = m.q3[s]
            R03 = lie.matmul3(R, lie.rot_axis(2, cos(q3), sin(q3)))
            a3 = [named("a3", k, s) for k in range(3)]
            done.clear()
            done[s] = veh.o3_acceleration(v3(s), a3, R03[2], car.gravity)
        return done[s]

    m.speed = pyo.Expression(m.s, rule=lambda m, s: sqrt(named("V3", 0, s) ** 2 + named("V3", 1, s) ** 2),
                             doc="speed of O3, sqrt(v_3x^2 + v_3y^2) [m/s]")
    m.a_x = pyo.Expression(m.s, rule=lambda m, s: acc(s)[0],
                           doc="longitudinal acceleration of O3 in {B3} without gravity, + forward [m/s^2]")
    m.a_y = pyo.Expression(m.s, rule=lambda m, s: acc(s)[1],
                           doc="lateral acceleration of O3 in {B3} without gravity, + left [m/s^2]")
    for axle in ("1", "2"):
        m.add_component(f"alpha_{axle}", pyo.Expression(
            m.s, rule=lambda m, s, a=axle: car.component(f"alpha_{a}")[s],
            doc=f"slip angle of the {'front' if axle == '1' else 'rear'} axle, eq (33) [rad]"))
    car.f_11x_share = pyo.Param(initialize=0.5 * p.brake_ratio, mutable=True,
                                doc="share of f_xb on each front wheel, k_b / 2 [-], eq (34)")
    car.f_21x_share = pyo.Param(initialize=0.5 * (1.0 - p.brake_ratio), mutable=True,
                                doc="share of f_xb on each rear wheel, (1 - k_b) / 2 [-], eq (34)")
    for w in WHEELS:
        where = f"{'front' if w[0] == '1' else 'rear'}-{'left' if w[1] == '1' else 'right'}"
        if w[0] == "1":
            rule = (lambda m, s: car.f_11x_share * m.f_xb[s])
        else:
            rule = (lambda m, s: car.f_21x_share * m.f_xb[s] + 0.5 * m.f_xa[s])
        m.add_component(f"f_{w}x", pyo.Expression(
            m.s, rule=rule, doc=f"longitudinal tyre force, {where} wheel, eq (34) [N]"))
        m.add_component(f"f_{w}y", pyo.Expression(
            m.s, rule=lambda m, s, w=w: car.component(f"f_{w}y")[s],
            doc=f"lateral tyre force, {where} wheel, eq (32) [N]"))


def load_bounds(p) -> dict:
    """The bounds of the vertical loads ``f_ijz`` [N]: ``{name: (f_z,min, 20 m g)}``."""
    return {f"f_{w}z": (p.fz_min, 20 * p.m * p.gravity) for w in WHEELS}


class VehicleStructureError(ValueError):
    """The new car's equations differ in structure from those the model was built with (a
    parameter became 0 or 1, or equal to another, and an operation folded away): the model
    cannot take the car by :func:`set_full_vehicle`; build a new one."""


def set_full_vehicle(m, vehicle: veh.VehicleParameters) -> None:
    """Change the car of a built full model in place: the model becomes the one
    :func:`build_full_model` builds for ``vehicle`` on the same track, sector, mesh and options,
    without building it again (the ``set_vehicle`` of :data:`FULL_MODEL`; the public entry is
    :func:`pyomo_lap.ocp.build.set_vehicle`).

    The rows' expressions hold the car's numbers as mutable parameters (``m.car.literal``,
    ``m.car.numeric``, see :func:`_replay`); the new car's rows are recorded, checked to have
    the same structure (:func:`pyomo_lap.spatial.tape.structure_key`, of the recorded rows and
    of each group's specialized tape) and their numbers put into the parameters. Then what else
    depends on the car: the bounds of the controls, loads and track limits, the fixed entry
    speed, the scaling factors and ``m.problem`` (``vehicle``, ``chain``, ``point_rows``,
    ``initial_speed``). No component is added or removed: the rows and the variables keep
    their order. The variables keep their values: initialize the model
    (:func:`pyomo_lap.ocp.initialize.initialize_model`) or load a solution before solving.
    ``tests/test_set_vehicle.py`` compares every row, bound, fixed value and scaling factor
    with a model built for the new car.

    Parameters
    ----------
    m : ConcreteModel
        Built by :func:`build_full_model` (without the option ``lift``).
    vehicle : VehicleParameters

    Raises
    ------
    VehicleStructureError (a ValueError)
        The new car's rows differ in structure (the model is left unchanged), or the model
        was built with ``lift`` or has no recorded rows.
    ValueError
        The track is narrower than the new car plus margins, or its entry speed is refused
        (the model is left unchanged).
    """
    t0 = time.perf_counter()
    pr = m.problem
    cfg = pr.options
    old = pr.point_rows
    if cfg.lift or old is None or not old.built or not old.groups:
        raise VehicleStructureError("the model's car cannot be changed: it was built with the "
                                    "option 'lift' or has no recorded rows; build a new model")
    p = vehicle
    chain = veh.build_chain(p)
    rec = record_point_rows(p, chain, cfg)
    same = (rec.structure_key() == old.structure_key()
            and _bound_pattern(rec.families) == _bound_pattern(old.families))
    tp = pr.track_points
    sigma = np.array(sorted(m.s))
    specs = []
    if same:
        for grp in old.groups:
            spec, _, _, key = _specialized(rec, grp.zeros, cfg.named_subexpressions, grp.user_tags)
            specs.append(spec)
            if key != grp.structure:
                same = False
                break
    if not same:
        raise VehicleStructureError(
            f"vehicle {p.name!r}: its equations differ in structure from those of "
            f"{pr.vehicle.name!r} the model was built with (a parameter that is 0, 1 or "
            "equal to another folds an operation away); build a new model for it")
    idx = {s: i for i, s in enumerate(sigma)}
    limits = track_limits(pr.track, tp, sigma, p, cfg)     # may refuse the car: nothing changed yet
    first = sigma[0]
    v0 = (entry_speed(pr.track, p, cfg, m.q1_dot[first].ub)
          if pr.initial_speed is not None else None)
    numbers = track_numbers(tp)
    lit_values, num_values = {}, {}
    for g, (grp, spec) in enumerate(zip(old.groups, specs)):
        r = grp.replay
        lit_values.update({(g, k): v for k, v in enumerate(r.literal_values(spec))})
        if r.parameter_columns:
            pts = grp.points
            nums = r.numeric_values({k: numbers[k][pts] for k in r.numeric_inputs}, len(pts), spec)
            for i, row in zip(pts.tolist(), nums[:, r.parameter_columns].tolist()):
                num_values.update({(sigma[i], k): v for k, v in zip(r.parameter_columns, row)})
    # ---- from here on the model changes -----------------------------------------------------
    m.car.literal.store_values(lit_values)
    m.car.numeric.store_values(num_values)
    fams = {f.name: f for f in rec.families}
    m.car.row_bound.store_values({(name, j, side): float(getattr(fams[name], side)[j])
                                  for name, j, side in m.car.row_bound.keys()})
    for name in ("built", "named", "components", "track_values", "points", "groups"):
        setattr(rec, name, getattr(old, name))      # the same expressions, now with rec's numbers
    rec.parameter_values = _parameter_values(m)
    update_problem(m, vehicle=p, chain=chain, point_rows=rec, initial_speed=v0)
    set_bounds(m, {**car_control_bounds(p), **load_bounds(p)})
    set_track_limits(m, limits, idx)
    if m.car.component("gravity") is not None:       # the named channels' numbers
        m.car.gravity.set_value(p.gravity)
        m.car.f_11x_share.set_value(0.5 * p.brake_ratio)
        m.car.f_21x_share.set_value(0.5 * (1.0 - p.brake_ratio))
    if v0 is not None:
        m.q1_dot[first].fix(v0)
    _set_scaling(m)
    if control_states(cfg, m):
        scale_control_rates(m, veh.CONTROLS)
    update_problem(m, build_time_s=time.perf_counter() - t0, dae_time_s=0.0)


def _set_scaling(m) -> None:
    """Scaling factors (exported to IPOPT's user-scaling) from typical magnitudes: the chain's
    (:func:`chain_scaling`), the loads and the in-plane tyre forces and their equations."""
    sf, F, _ = chain_scaling(m, lambda F: {"f_11z": F, "f_12z": F, "f_21z": F, "f_22z": F,
                                           "f_3x": F / 4, "f_3y": F / 4, "m_3z": F / 4})
    for c in m.loads_eq.values():
        sf[c] = F
    for (k, s), c in m.inplane_eq.items():
        sf[c] = F / 4
    if m.component("settled_start") is not None:
        for c in m.settled_start.values():
            sf[c] = 0.1


def initialize_full_model(m, fixed_point_iterations: int = 4) -> dict:
    """Cold-start initial guess of a full model (the steps of :mod:`pyomo_lap.ocp.initialize`);
    :func:`pyomo_lap.ocp.initialize.initialize_model` calls it for a full model.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    fixed_point_iterations : int
        Iterations of the algebraic loop per point.

    Returns
    -------
    dict
        ``{"status": "ok", "estimated_time_s": float, "max_algebraic_residual": float}``.
    """
    p = m.problem.vehicle
    sigma = np.array(sorted(m.s))
    prof = cold_start_profile(m)
    v, t, sag, fx = prof["v"], prof["t"], prof["sag"], prof["fx"]
    f_xa, f_xb, delta = prof["f_xa"], prof["f_xb"], prof["delta"]
    chain, joints = m.problem.chain, m.problem.track_joints
    car = CarFunctions(p)        # the same car equations, traced once for fast float evaluation
    lifted = bool(m.problem.options.lift)
    max_res = 0.0
    s1, s2 = p.static_loads
    for i, s in enumerate(sigma):
        q = [0.0, 0.0, 0.0, float(sag[i]), 0.0, 0.0]
        qd = [float(v[i]), 0.0, 0.0, 0.0, 0.0, 0.0]
        u = [float(f_xa[i]), float(f_xb[i]), float(delta[i])]
        trk = track_vector(joints[i])

        def residual(zz, _trk=trk, _q=q, _qd=qd, _u=u):
            return car.evaluate(_trk, _q, _qd, _u, zz)[1]
        # step 4: a fixed number of fixed-point (Picard) steps z <- z - r(z)
        z = veh.solve_loop(residual, [s1, s1, s2, s2, float(fx[i]), 0.0, 0.0], None, tol=0.0,
                           max_iter=fixed_point_iterations, floor=p.fz_min, line_search=False,
                           raise_on_failure=False).tolist()
        qdd, res = car.evaluate(trk, q, qd, u, z)
        if lifted:   # values of the lifted intermediates (OCP option 'lift')
            recorded = {}

            def record(tag, value, _rec=recorded):
                _rec[tag] = value
                return value
            veh.car_equations(p, chain, joints[i], q, qd, u, z, namer=record)
            for tag, value in recorded.items():
                comp = m.car.component(tag)
                if comp is not None and comp.ctype is pyo.Var:
                    comp[s].set_value(float(value))
        max_res = max(max_res, float(np.max(np.abs(res))))
        vals = dict(zip(STATE_NAMES, q[1:]))
        vals.update(zip(RATE_NAMES, qd))
        vals.update(t=float(t[i]), f_xa=u[0], f_xb=u[1], delta=u[2])
        vals.update(zip(veh.ALGEBRAIC, z))
        for name, val in vals.items():
            var = m.component(name)[s]
            if not var.fixed:
                lb, ub = var.lb, var.ub
                if lb is not None:
                    val = max(val, lb)
                if ub is not None:
                    val = min(val, ub)
                var.set_value(val, skip_validation=True)
        for k, name in enumerate(STATE_NAMES):
            m.component(f"d{name}_ds")[s].set_value(qd[k + 1] / qd[0])
        for k, name in enumerate(RATE_NAMES):
            m.component(f"d{name}_ds")[s].set_value(float(qdd[k]) / qd[0])
        m.dt_ds[s].set_value(1.0 / qd[0])
    return {"status": "ok", "estimated_time_s": float(t[-1]), "max_algebraic_residual": max_res}


FULL_MODEL = VehicleModel(
    name="full",
    description="the six-joint Lie-group car (pyomo_lap.vehicle.car, pyomo_lap.spatial.chain)",
    states=STATE_NAMES, rates=RATE_NAMES, controls=veh.CONTROLS, algebraics=veh.ALGEBRAIC,
    build=build_full_model, initialize=initialize_full_model,
    point_rows=lambda p, cfg: record_point_rows(p, veh.build_chain(p), cfg),
    set_vehicle=set_full_vehicle)
"""The full model as a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` (registry key ``"full"``)."""
