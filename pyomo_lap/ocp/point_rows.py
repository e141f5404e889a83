r"""The rows of one point of the OCP, recorded once and replayed at every point of the mesh.

What the full, the single-track and the multibody car share (:mod:`pyomo_lap.ocp.full_model`,
:mod:`pyomo_lap.ocp.single_track`, :mod:`pyomo_lap.ocp.multibody`): their per-point rows (the
spatial DAE, the algebraic equations, the path constraints) are written once as a function of

* the point's variables (``m.<name>[s]``, :attr:`PointRows.variables`),
* the track's numbers there (:data:`TRACK_INPUTS`: the frame, :math:`\Omega`,
  :math:`d\Omega/ds`),
* the car's parameters (:attr:`PointRows.vehicle_inputs`, dotted names such as
  ``"mass.total"``: the model's variables ``m.vehicle.mass.total``, fixed unless the user
  frees them),

recorded on a :class:`pyomo_lap.spatial.tape.Tape` (:func:`rows_on_tape`) and

* replayed into Pyomo expressions at every point (:func:`replay_rows`): the nodes that depend
  on the car's parameters only (an inertia, a static load) are built once for the model, as
  the named expressions ``m.vehicle.derived[k]``; a tagged quantity of the model code becomes
  ``m.car.<tag>[s]``; a node used more than once ``m.car.cse[s, k]``;
* traced into one CasADi function ``(w, track, vehicle) -> rows`` that the fast solver path
  compiles (:meth:`PointRows.casadi_function`). The car's parameters are an argument of it,
  never numbers folded into the code: every car has the same rows, one compiled function
  serves every car of a model (:meth:`PointRows.structure_key`).

With the rows the model code returns its *channel group* (:attr:`PointRows.channels`: the
accelerations, tyre quantities and loads of the results), recorded on the same tape and
inputs but no part of the NLP; the record's function ``(w, track, vehicle) -> (rows,
channels)`` (:meth:`PointRows.point_function`) is what every numeric evaluation after the
build uses (:mod:`pyomo_lap.ocp.point_functions`).
"""
from __future__ import annotations

import dataclasses
import itertools
import operator
from typing import Optional

import numpy as np
import pyomo.environ as pyo

from ..spatial.backend import is_number, mul, sub
from ..spatial.tape import (
    Node,
    PyomoReplay,
    casadi_function,
    record,
    specialize,
    structure_key,
)
from ..spatial.tree import TrackJoint
from ..vehicle.car import o3_acceleration
from ..vehicle.schema import SymbolicVehicle
from .common import _Namer, _set_new, entries_at, expression_setter, vehicle_var
from .vehicle_model import update_problem

__all__ = ["TRACK_INPUTS", "RowFamily", "PointRows", "rows_on_tape", "track_numbers",
           "replay_rows", "add_recorded_rows", "add_point_rows", "shared_nodes",
           "changed_named_points", "track_joint", "spatial_dae_rows", "chain_channels"]

TRACK_INPUTS = tuple(f"R[{k}]" for k in range(9)) + tuple(f"Om[{k}]" for k in range(3)) \
    + tuple(f"dOm[{k}]" for k in range(3))
r"""The track numbers of one point the rows depend on: :math:`R_{0,1}` row by row,
:math:`\Omega` and :math:`d\Omega/ds` (eq 12 with :math:`|p_{,q1}| = 1`)."""


def chain_channels(p, e, unsprung: int = 2, sprung: int = 5) -> dict:
    r"""The channel group of a car on the six-joint chain (the full model's record): the
    channels of its equations ``e`` (``CarEquations.channels``), the acceleration of O3 in
    {B3} without gravity ``a_x, a_y, a_z`` (:func:`pyomo_lap.vehicle.car.o3_acceleration`)
    and the vehicle invariant point relative to the track's spine point in the ground frame,
    ``dx_vip, dy_vip, dz_vip`` (:math:`R_{0,1}` times the VIP in {B1}: the record's track
    inputs hold no position; :mod:`pyomo_lap.results.table` adds the spine's to give
    ``x_vip`` ...).

    Parameters
    ----------
    p : VehicleParameters or SymbolicVehicle
    e : CarEquations
    unsprung, sprung : int
        The bodies of {B3} and of the VIP ({B6}) in the chain.
    """
    out = dict(e.channels)
    R03 = e.kin.pose[unsprung][0]
    acc = o3_acceleration(e.kin.V[unsprung], e.aba.Vdot[unsprung], R03[2], p.gravity)
    out.update(zip(("a_x", "a_y", "a_z"), acc))
    out.update(zip(("dx_vip", "dy_vip", "dz_vip"), e.kin.pose[sprung][1]))
    return out


def track_joint(t) -> TrackJoint:
    r"""The track joint of one point from its numbers :data:`TRACK_INPUTS` (any scalars: the
    tape's symbols when the rows are recorded): :math:`R_{0,1}`, :math:`J = (1, 0, 0, \Omega)`,
    :math:`dJ = (0, 0, 0, d\Omega/ds)` (eq 12 with :math:`|p_{,q1}| = 1`)."""
    t = list(t)
    return TrackJoint(R=[t[0:3], t[3:6], t[6:9]], J=[1.0, 0, 0] + t[9:12],
                      dJ=[0, 0, 0] + t[12:15], p=[0.0, 0.0, 0.0])


def spatial_dae_rows(v: dict, states, rates, qdd) -> list:
    r"""The spatial DAE (39) at one point, multiplied through by :math:`\dot q_1 > 0`.

    As rows ``(family, key, body, lower, upper, where)`` collocated at every point but the
    first:

    * ``ode_q[k]`` (k in ``states``): :math:`\dot q_1\, dq_k/ds - \dot q_k = 0`;
    * ``ode_qdot[k]`` (k = 1..len(rates)): :math:`\dot q_1\, d\dot q_k/ds - \ddot q_k = 0`;
    * ``ode_t``: :math:`\dot q_1\, dt/ds = 1`.

    Parameters
    ----------
    v : dict
        The point's variables by name (``q2``, ``q2_dot``, ``dq2_ds``, ``dq2_dot_ds``, ``dt_ds`` ...).
    states, rates : sequences of str
        The joint coordinates besides ``q1`` and the rates, ``q1_dot`` first.
    qdd : sequence
        The accelerations of the rates' joints (from the ABA), in the order of ``rates``.
    """
    q1d = v["q1_dot"]
    rows = [("ode_q", k, sub(mul(q1d, v[f"d{k}_ds"]), v[f"{k}_dot"]), 0.0, 0.0, "interior")
            for k in states]
    rows += [("ode_qdot", k + 1, sub(mul(q1d, v[f"d{name}_ds"]), qdd[k]), 0.0, 0.0, "interior")
             for k, name in enumerate(rates)]
    rows.append(("ode_t", None, mul(q1d, v["dt_ds"]), 1.0, 1.0, "interior"))
    return rows


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
        Bounds of each row (numbers: the car's numbers are in the bodies).
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
    """The rows of the OCP at one point, recorded once (module docstring).

    Attributes
    ----------
    tape : pyomo_lap.spatial.tape.Tape
    outputs : list
        Row bodies (tape nodes), in family order.
    families : list of RowFamily
    variables : tuple of str
        The point's variables, in the order of the tape's inputs ``w``.
    track_inputs : tuple of str
    vehicle_inputs : tuple of str
        The car's parameters the rows take as symbols (dotted names, e.g. ``"mass.total"``);
        empty for a model whose rows hold the car's numbers.
    channels : dict
        ``name -> node`` (or constant): the record's *channel group*, the quantities of a
        point the model code returns besides its rows (accelerations, tyre quantities, loads:
        the columns of ``trajectory.csv``), recorded with the rows on the same tape and the
        same inputs. Outputs, never rows: no constraint is built from them, they are not
        live on the tape (:attr:`tape`'s uses count the rows only) and they are not in
        :meth:`casadi_function` or :meth:`structure_key`; :meth:`point_function` evaluates
        them (:func:`record_channels`).
    built : list of (ConstraintData, expression, point, output)
        Set by the build: every row as built (its relational expression object), the index of
        its point in :attr:`points` and of its body in :attr:`outputs`.
    named : list of (list of ExpressionData, list of tuple[, list of point keys])
        Set by the build: the named expressions ``m.car.*`` as built (each component's
        entries and their argument tuples, and each entry's point where ``s`` is not the first
        index, as the racecar's per-wheel quantities ``m.N[wheel, s]``;
        :func:`changed_named_points`; an entry's key is its
        ``index()``: no copy of the keys is kept, 70 bytes an entry, 1.2 million entries on a
        lap).
    components : dict
        ``name -> Var`` component of each of :attr:`variables`, as built.
    vehicle_components : dict
        ``dotted name -> ScalarVar`` of each of :attr:`vehicle_inputs` (``m.vehicle.*``).
    track_values : ndarray (n_points, 15)
        The track numbers at each point (columns :attr:`track_inputs`).
    points : list of float
        The points ``s`` of the mesh, sorted [m].
    """

    tape: object
    outputs: list
    families: list
    variables: tuple
    track_inputs: tuple = TRACK_INPUTS
    vehicle_inputs: tuple = ()
    channels: dict = dataclasses.field(default_factory=dict, repr=False)
    built: list = dataclasses.field(default_factory=list, repr=False)
    named: list = dataclasses.field(default_factory=list, repr=False)
    components: dict = dataclasses.field(default_factory=dict, repr=False)
    vehicle_components: dict = dataclasses.field(default_factory=dict, repr=False)
    track_values: object = dataclasses.field(default=None, repr=False)
    points: list = dataclasses.field(default_factory=list, repr=False)

    def casadi_function(self, name: str = "point_rows"):
        """``casadi.Function`` ``(w, track, vehicle) -> rows`` (the three groups of inputs:
        :attr:`variables`, :attr:`track_inputs`, :attr:`vehicle_inputs`), see
        :func:`pyomo_lap.spatial.tape.casadi_function`."""
        return casadi_function(self.tape, self.outputs,
                               {"w": self.variables, "track": self.track_inputs,
                                "vehicle": self.vehicle_inputs}, name=name)

    def point_function(self):
        """``casadi.Function`` ``(w, track, vehicle) -> (rows, channels)``: the rows (as
        :meth:`casadi_function`) and the channel group (:attr:`channels`, in order) of one
        point, SX, made once per record and channel group (the function every numeric
        evaluation of the car's equations after the build uses: channels, simulation,
        defects, initial guesses; a channel added to :attr:`channels` makes it anew)."""
        key = tuple((k, id(v)) for k, v in self.channels.items())
        made = self.__dict__.get("_point_function")
        if made is None or made[0] != key:
            fn = casadi_function(self.tape, {"rows": self.outputs,
                                             "channels": list(self.channels.values())},
                                 {"w": self.variables, "track": self.track_inputs,
                                  "vehicle": self.vehicle_inputs}, name="point_record")
            made = self.__dict__["_point_function"] = (key, fn)
        return made[1]

    @property
    def channel_names(self) -> tuple:
        """The names of :attr:`channels`, in order."""
        return tuple(self.channels)

    def vehicle_values(self, vehicle) -> np.ndarray:
        """The values of :attr:`vehicle_inputs` for a car (``VehicleParameters``), in order:
        the ``vehicle`` argument of :meth:`casadi_function` (ndarray (k,))."""
        return np.array([float(vehicle.value(k)) for k in self.vehicle_inputs], dtype=float)

    def changed_named_points(self) -> set:
        """:func:`changed_named_points` of these rows (asked by the solver ``lap_ipopt``)."""
        return changed_named_points(self)

    def structure_key(self, salt: str = "") -> str:
        """A hash of the recorded rows (:func:`pyomo_lap.spatial.tape.structure_key`): the
        same for every car when the car's parameters are inputs (:attr:`vehicle_inputs`), so
        that they share one compiled function."""
        return structure_key(self.tape, self.outputs, tuple(self.variables) + tuple(self.track_inputs)
                             + tuple(self.vehicle_inputs), salt)


def rows_on_tape(point_rows, car, variables: tuple, vehicle_inputs: tuple) -> PointRows:
    """Record one point's rows on a tape and group them into families (what the full, the
    single-track and the multibody recording share).

    Parameters
    ----------
    point_rows : callable
        ``point_rows(p, v, track, namer) -> list of (family, key, body, lower, upper, where)``,
        or ``(rows, channels)`` with ``channels`` a dict ``name -> scalar`` (the record's
        channel group, :attr:`PointRows.channels`): the rows of one point, given the car ``p`` (a
        :class:`~pyomo_lap.vehicle.schema.SymbolicVehicle` whose ``vehicle_inputs`` are the
        tape's symbols), the point's variables ``v`` (``{name: symbol}``), the track numbers
        (a list in the order of :data:`TRACK_INPUTS`) and the tape's ``namer``.
    car : VehicleParameters
        Gives what is not a symbol (the car's name, an absent optional section).
    variables : tuple of str
        The point variables in tape order.
    vehicle_inputs : tuple of str
        The car's parameters given as symbols (dotted names), in tape order.

    Returns
    -------
    PointRows
        The tape, with its inputs named after the model's components, its outputs and families.
    """
    rows = []           # (family, key, body, lower, upper, where)
    channels = {}       # name -> scalar: the channel group

    def fn(namer, x):
        p = SymbolicVehicle(car, dict(zip(vehicle_inputs, x["vehicle"])))
        out = point_rows(p, dict(zip(variables, x["x"])), list(x["track"]), namer)
        if isinstance(out, tuple):
            out, ch = out
            channels.update(ch)
        rows[:] = out
        return [r[2] for r in rows]

    groups = {"x": len(variables), "track": len(TRACK_INPUTS), "vehicle": len(vehicle_inputs)}
    tape, outs = record(fn, groups)
    # the tape's inputs are named x[i] / track[i] / vehicle[i]: rename them
    names = {f"x[{i}]": n for i, n in enumerate(variables)}
    names.update({f"track[{i}]": n for i, n in enumerate(TRACK_INPUTS)})
    names.update({f"vehicle[{i}]": n for i, n in enumerate(vehicle_inputs)})
    for node in tape.nodes:
        if node.op == "input":
            node.args = (names[node.args[0]],)
    tape.input_names = [names[n] for n in tape.input_names]
    tape.count_uses(outs)         # the rows only: the channel group is no part of the NLP
    families = []
    for fam in dict.fromkeys(r[0] for r in rows):
        idx = [i for i, r in enumerate(rows) if r[0] == fam]
        families.append(RowFamily(fam, tuple(rows[i][1] for i in idx), tuple(idx),
                                  tuple(rows[i][3] for i in idx), tuple(rows[i][4] for i in idx),
                                  rows[idx[0]][5]))
    return PointRows(tape=tape, outputs=list(outs), families=families, variables=tuple(variables),
                     vehicle_inputs=tuple(vehicle_inputs), channels=dict(channels))


def track_numbers(tp) -> dict:
    """The track numbers of :data:`TRACK_INPUTS` at the points of a
    :class:`~pyomo_lap.track.points.TrackPoints`, as ``name -> (n,) array``."""
    n = len(tp.s)
    R = np.asarray(tp.rotation, dtype=float).reshape(n, 9)
    out = {f"R[{k}]": R[:, k] for k in range(9)}
    for k in range(3):
        out[f"Om[{k}]"] = np.asarray(tp.omega[:, k], dtype=float)
        out[f"dOm[{k}]"] = np.asarray(tp.domega_ds[:, k], dtype=float)
    return out


def shared_nodes(tape) -> list:
    """Nodes of the car tape written as common subexpressions ``m.car.cse[s, k]``.

    A node used more than once is named unless it is a single cheap operation (``+ - *`` on
    named nodes, inputs or constants) used at most three times: repeating such a node costs
    the AMPL solver library less than a defined variable, and every named expression costs
    Pyomo's NL writer time and memory (it keeps, for each, the set of named expressions it
    depends on)."""
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


def _specialized(rec: PointRows, zeros: dict, named: bool, user_tags) -> tuple:
    """The tape of ``rec`` specialized to the track inputs ``zeros`` (with its tags kept to
    ``user_tags``): ``(tape, outputs, shared nodes, origin)``."""
    rec.tape.tags = {i: t for i, t in rec.tape.tags.items() if t.startswith(user_tags)}
    spec, outs, origin = specialize(rec.tape, rec.outputs, zeros)
    shared = {i: origin[i] for i in shared_nodes(spec)} if named else {}
    return spec, outs, shared, origin


def replay_rows(m, rec: PointRows, tp, sigma, named: bool, progress, user_tags) -> list:
    """The row bodies at every point as Pyomo expressions (:class:`pyomo_lap.spatial.tape.PyomoReplay`).

    The points are grouped by which track numbers are exactly zero; the tape is specialized
    to each group (:func:`pyomo_lap.spatial.tape.specialize`), so a zero never enters an
    expression. The nodes that depend on the car's parameters only become the named
    expressions ``m.vehicle.derived[k]`` (``k``: the node of the recording), built once for all
    points and groups; tagged quantities of the model code (``user_tags``) become
    ``m.car.<tag>[s]``; with ``named``, the other nodes used more than once
    (:func:`shared_nodes`) become ``m.car.cse[s, k]``.

    Parameters
    ----------
    m : ConcreteModel
        With ``m.car`` (a Block) and, when ``rec.vehicle_inputs``, ``m.vehicle``
        (:func:`pyomo_lap.ocp.common.add_vehicle_block`).

    Returns
    -------
    list (one entry per point) of lists (one entry per output of ``rec``)
    """
    numbers = track_numbers(tp)
    zero = np.stack([numbers[k] == 0.0 for k in TRACK_INPUTS], axis=1)
    patterns, inverse = np.unique(zero, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    groups = []
    for g, pat in enumerate(patterns):
        consts = {k: 0.0 for k, z in zip(TRACK_INPUTS, pat) if z}
        spec, outs, shared, origin = _specialized(rec, consts, named, user_tags)
        replay = PyomoReplay(spec, outs, rec.variables, shared=shared,
                             global_inputs=rec.vehicle_inputs,
                             global_keys={i: origin[i] for i in range(len(origin))})
        pts = np.flatnonzero(inverse == g)
        nums = replay.numeric_values({k: numbers[k][pts] for k in replay.numeric_inputs}, len(pts))
        groups.append((replay, pts, nums, shared))
    # the car's parameters and what depends on them alone: once, named m.vehicle.derived[k]
    globals_ = {}
    if rec.vehicle_inputs:
        params = [vehicle_var(m, k) for k in rec.vehicle_inputs]
        for replay, *_ in groups:
            globals_.update(replay.build_globals(params, lambda tag, v: v, None))
        inputs = {id(v) for v in params}
        derived = {k: e for k, e in globals_.items() if id(e) not in inputs}
        m.vehicle.derived = pyo.Expression(sorted(derived), initialize=derived,
                                           doc="quantities of the car's parameters alone that "
                                               "the rows use (k: node of the recording)")
        globals_.update({k: m.vehicle.derived[k] for k in derived})
    namer = _Namer(m.car, m.s)
    if named:
        keys = sorted(set().union(*(set(g[3].values()) for g in groups)))
        m.car.cse_index = pyo.Set(initialize=keys, doc="tape index of a shared subexpression")
        m.car.cse = pyo.Expression(m.s, m.car.cse_index, initialize={},   # sparse: the used ones
                                    doc="common subexpressions of the car equations")
    cse = m.car.component("cse")
    set_cse = expression_setter(cse) if named else None
    comps = [m.component(name) for name in rec.variables]
    n = len(sigma)
    # the variables of each component at every point, in point order
    point_vars = list(zip(*(entries_at(c, sigma) for c in comps)))
    values = [None] * n
    done = 0
    for replay, pts, nums, _ in groups:
        for row, i in zip(nums.tolist(), pts.tolist()):
            s = sigma[i]
            if named:
                def share(k, value, _s=s):
                    return set_cse((_s, k), value)
            else:
                def share(k, value):
                    return value
            values[i] = replay.build(point_vars[i], row, namer.at(s), share, globals_)
            done += 1
            if progress is not None:
                progress("building the model", done, n)
    return values


def replay_lifted(m, rec: PointRows, tp, sigma, lift, progress) -> list:
    """As :func:`replay_rows`, for the OCP option ``lift``: every tag of the model code that
    starts with one of ``lift`` becomes a variable ``m.car.<tag>[s]`` with its defining
    equation ``m.car.<tag>_def[s]`` (slow path through :meth:`pyomo_lap.spatial.tape.Tape.replay`)."""
    tape = rec.tape
    numbers = track_numbers(tp)
    namer = _Namer(m.car, m.s, lift=lift)
    comps = [m.component(name) for name in rec.variables]
    params = {k: vehicle_var(m, k) for k in rec.vehicle_inputs}
    values = []
    for i, s in enumerate(sigma):
        inputs = {k: float(numbers[k][i]) for k in TRACK_INPUTS}
        inputs.update({name: c[s] for name, c in zip(rec.variables, comps)})
        inputs.update(params)
        values.append(tape.replay(inputs, rec.outputs, name=namer.at(s), share=lambda k, v: v))
        if progress is not None:
            progress("building the model", i + 1, len(sigma))
    return values


def add_recorded_rows(m, rec: PointRows, values, tp, sigma, idx, record_built: bool = True,
                      docs: Optional[dict] = None, bound_values: Optional[dict] = None) -> None:
    """Add the replayed rows of every point as ``Constraint`` components (one per
    :class:`RowFamily`) and record on ``rec`` what the fast solver path checks: the rows as
    built, the variable components, the named expressions of ``m.car``, the track numbers and
    the points.

    Parameters
    ----------
    m : ConcreteModel
    rec : PointRows
    values : list
        Per point, the replayed outputs of ``rec`` (:func:`replay_rows`).
    tp : TrackPoints
    sigma : list of float
        The points, sorted [m].
    idx : dict
        ``s -> position in sigma``.
    record_built : bool
        False for lifted rows (option ``lift``), which are not the recorded ones.
    docs : dict, optional
        ``family name -> doc`` of the constraint components.
    bound_values : dict, optional
        ``name -> (n,) array`` over the points: a row bound given as a string (a
        :class:`RowFamily` bound ``"upper"``, say) takes the array's value at each point (the
        track's edges of the ``track_limit`` rows).
    """
    docs = docs or {}
    where = {"all": sigma, "interior": sigma[1:], "first": sigma[:1]}
    built = rec.built = []        # (ConstraintData, its expression, point, output) as built
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
            lo, up = fam.lower[j], fam.upper[j]
            equality = lo is not None and lo == up
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
                if isinstance(lo, str) or isinstance(up, str):
                    lo_i = float(bound_values[lo][i]) if isinstance(lo, str) else lo
                    up_i = float(bound_values[up][i]) if isinstance(up, str) else up
                    c = _set_new(con, ix, (lo_i, body, up_i))
                else:
                    c = _set_new(con, ix, (body == lo) if equality else (lo, body, up))
                if record_built:
                    built.append((c, c.expr, i, out))
    # what the fast solver path checks before it uses the recorded rows instead of these
    # expressions: the variable components, the named expressions and the track numbers
    rec.components = {name: m.component(name) for name in rec.variables}
    rec.vehicle_components = {k: vehicle_var(m, k) for k in rec.vehicle_inputs}
    rec.named = []
    for comp in m.car.component_objects(pyo.Expression, descend_into=True):
        # (its entries, their argument tuples as built): set_value / .expr = ... replace the
        # tuple, so an identity test finds every change (1.2 million entries on a lap: kept as
        # lists; the point of a changed entry is looked up, from its index, only when one is
        # found; comp.keys() would make a new key tuple per entry, 85 MB on a lap)
        entries = list(comp.values())
        rec.named.append((entries, [e._args_ for e in entries]))
    numbers = track_numbers(tp)
    rec.track_values = np.stack([numbers[k] for k in TRACK_INPUTS], axis=1)
    rec.points = list(sigma)


def changed_named_points(rec: PointRows) -> set:
    """The points (positions in :attr:`PointRows.points`) whose named expressions ``m.car.*``
    were changed since the build (an entry's argument tuple is no longer the one built)."""
    idx = {s: i for i, s in enumerate(rec.points)}
    bad = set()
    now = operator.attrgetter("_args_")
    for entries, args, *points in rec.named:
        # C-level loops: 1.2 million entries on a lap
        changed = list(itertools.compress(itertools.count(),
                                          map(operator.is_not, map(now, entries), args)))
        if points:             # each entry's point given (an index whose s is not first)
            bad.update(idx[points[0][k]] for k in changed)
            continue
        keys = [entries[k].index() for k in changed]
        bad.update(idx[key[0] if isinstance(key, tuple) else key] for key in keys)
    return bad


def add_point_rows(m, rec: PointRows, chain, tp, sigma, idx, cfg, progress, lift=(),
                   user_tags=(), docs: Optional[dict] = None,
                   bound_values: Optional[dict] = None) -> None:
    """Replay the recorded rows at every point into the model (what the full, single-track and
    multibody cars share): ``m.problem`` gets the chain and the rows, the rows become the
    ``Constraint`` components (:func:`add_recorded_rows`), the speed of the ``speed_min`` row
    the named expression ``m.v_3x[s]``.

    Parameters
    ----------
    lift : tuple of str
        Tags made variables (OCP option ``lift``; the rows are then not checked by the fast
        path).
    user_tags, docs
        The named expressions ``m.car.<tag>[s]`` kept, and the rows' docs.
    """
    update_problem(m, chain=chain, point_rows=rec)
    if lift:
        values = replay_lifted(m, rec, tp, sigma, lift, progress)
    else:
        values = replay_rows(m, rec, tp, sigma, cfg.named_subexpressions, progress, tuple(user_tags))
    add_recorded_rows(m, rec, values, tp, sigma, idx, record_built=not lift, docs=docs,
                      bound_values=bound_values)
    v3x_out = next(f.outputs[0] for f in rec.families if f.name == "speed_min")
    m.v_3x = pyo.Expression(m.s, rule=lambda m, s: values[idx[s]][v3x_out],
                            doc="longitudinal speed of O3 in {B3} [m/s]")
