r"""The same OCP built and solved with CasADi, for benchmarks against the Pyomo route.

Given a model built by :func:`pyomo_lap.ocp.build_model` and initialized by
:func:`pyomo_lap.initialize.initialize_model`, :func:`build_casadi_nlp` writes the *same*
nonlinear program with CasADi symbols and :func:`solve_casadi` solves it with the IPOPT that
ships with CasADi:

* the decision variables are the model's unfixed variables that appear in an active constraint
  or the objective (states, rates, time, controls, algebraic variables and the
  ``DerivativeVar`` entries, at every point of ``m.s``), with the model's bounds and current
  values as the initial guess; fixed variables enter as constants. This is the set of columns
  Pyomo's NL writer gives IPOPT (``dx/ds`` at ``s = 0`` is in no constraint and is left out);
* the constraints are the model's active constraints, one row each, in the order of
  ``m.component_data_objects(Constraint, active=True)``, with the same body and bounds
  (``lower <= body <= upper`` as Pyomo normalizes them);
* the car's physics (``ode_qdot``, ``loads_eq``, ``inplane_eq``, ``power_limit``,
  ``adherence``, ``speed_min``, ``settled_start``) comes from the same Lie-group/ABA code,
  :func:`pyomo_lap.vehicle.car_equations`, evaluated once on ``casadi.SX`` symbols into a
  per-point :class:`casadi.Function` that is ``map``-ped over the points of ``m.s``;
* the collocation equations (``*_disc_eq``, ``*_cont_eq``) come from the collocation matrices
  of ``m.s.get_discretization_info()`` (the ones pyomo.dae used), the control interpolation
  equations (``*_interpolation_constraints``) from pyomo.dae's rule; the kinematic ODEs from
  their one-line formulas; any other active constraint (``controls_at_start``, ``periodic``,
  constraints a user added) and the objective by converting their Pyomo expressions to
  ``casadi.SX`` (:func:`pyomo_to_casadi`);
* IPOPT's user-scaling is made explicit: with the model's ``scaling_factor`` suffix
  :math:`d_x, d_g, d_f`, CasADi's IPOPT solves in :math:`\tilde x = d_x x` the problem
  :math:`\min d_f f(\tilde x/d_x)` s.t. :math:`d_g\,g_L \le d_g\,g(\tilde x/d_x) \le d_g\,g_U`,
  :math:`d_x x_L \le \tilde x \le d_x x_U`, with ``nlp_scaling_method = none``; this is the
  scaled problem IPOPT builds internally from the suffix in the Pyomo route.

CasADi is an optional dependency (``pip install pyomo_lap[benchmark]``); it is imported only
inside the functions of this module.
"""
from __future__ import annotations

import bisect
import dataclasses
import math
import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo
import scipy.sparse
from pyomo.dae import DerivativeVar

from . import vehicle as veh
from .chain import TrackJoint
from .ocp import RATE_NAMES, STATE_NAMES

__all__ = ["CasadiNLP", "CasadiSolveReport", "build_casadi_nlp", "solve_casadi",
           "load_solution", "pyomo_to_casadi", "casadi_ipopt_options"]

_INPUTS = STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC   # 5 + 6 + 3 + 7 = 21
# rows of the per-point physics output: qdd (6), load residuals (4), in-plane residuals (3),
# power, v_3x, adherence bodies (4)
_OUT_QDD, _OUT_LOAD, _OUT_INPLANE, _OUT_POWER, _OUT_V3X, _OUT_ADH, _N_OUT = 0, 6, 10, 13, 14, 15, 19
_WHEELS = ("11", "12", "21", "22")


def _casadi():
    try:
        import casadi
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("pyomo_lap.casadi_ocp needs CasADi: pip install 'pyomo_lap[benchmark]' "
                          "(or pip install casadi)") from exc
    return casadi


# --------------------------------------------------------------------------------------------
# Pyomo expression -> CasADi (or float) conversion
# --------------------------------------------------------------------------------------------

def pyomo_to_casadi(expr, leaf, cache: Optional[dict] = None, functions=None):
    """Convert a Pyomo expression into a CasADi expression (or a float).

    Walks the expression tree without recursion; each named ``Expression`` is converted once
    and reused (``cache``), so deeply nested named expressions cost linear time (Pyomo's own
    ``value()`` re-evaluates them at each use).

    Parameters
    ----------
    expr : Pyomo expression, variable or number
    leaf : callable
        ``leaf(var_data)`` returning the stand-in of an (unfixed or fixed) variable.
    cache : dict, optional
        ``id(named expression) -> converted value``, shared between calls.
    functions : module, optional
        Where the intrinsic functions (``sin``, ``cos``, ``atan``, ``sqrt``, ``exp`` ...) are
        taken from: ``casadi`` (default) or :mod:`math` (float evaluation).

    Returns
    -------
    casadi.SX, casadi.MX or float

    Raises
    ------
    NotImplementedError
        For an expression node without a CasADi counterpart (e.g. ``Expr_if``).
    """
    from pyomo.common.numeric_types import native_numeric_types
    from pyomo.core.expr.numeric_expr import UnaryFunctionExpression, AbsExpression
    from pyomo.core.expr.visitor import StreamBasedExpressionVisitor

    if functions is None:
        functions = _casadi()
    cache = {} if cache is None else cache
    fabs = getattr(functions, "fabs", abs)

    class _Visitor(StreamBasedExpressionVisitor):
        def initializeWalker(self, e):
            descend, result = self.beforeChild(None, e, 0)
            if not descend:
                return False, result
            return True, e

        def beforeChild(self, node, child, child_idx):
            if type(child) in native_numeric_types:
                return False, child
            if child.is_expression_type():
                if child.is_named_expression_type() and id(child) in cache:
                    return False, cache[id(child)]
                return True, None
            if child.is_variable_type():
                return False, leaf(child)
            return False, pyo.value(child)   # Param, constant component

        def exitNode(self, node, data):
            if node.is_named_expression_type():
                cache[id(node)] = data[0]
                return data[0]
            if isinstance(node, AbsExpression):
                return fabs(data[0])
            if isinstance(node, UnaryFunctionExpression):
                name = node.getname()
                fn = getattr(functions, name, None)
                if fn is None:
                    raise NotImplementedError(f"function {name!r} has no counterpart in "
                                              f"{getattr(functions, '__name__', functions)}")
                return fn(data[0])
            try:
                return node._apply_operation(data)
            except Exception as exc:
                raise NotImplementedError(f"cannot convert the Pyomo node {type(node).__name__} "
                                          f"({node}) : {exc}") from exc

    return _Visitor().walk_expression(expr)


# --------------------------------------------------------------------------------------------
# the NLP
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class CasadiNLP:
    """The OCP as a CasADi NLP (scaled), from :func:`build_casadi_nlp`.

    Attributes
    ----------
    mode : str
        ``'SX'`` or ``'MX'``: the symbol type of the NLP.
    nlp : dict
        ``{'x': (n,) symbols (scaled), 'f': scaled objective, 'g': (m,) scaled constraints}``.
    x0, lbx, ubx : ndarray (n,)
        Scaled initial guess and bounds (``±inf`` where there is no bound).
    lbg, ubg : ndarray (m,)
        Scaled constraint bounds.
    x_scale, g_scale : ndarray (n,), (m,)
        Scaling factors :math:`d_x, d_g` (``scaled = d * unscaled``).
    f_scale : float
        Objective scaling :math:`d_f`.
    variables : list of VarData
        The model variable of each entry of ``x``.
    constraints : list of ConstraintData
        The model constraint of each entry of ``g``.
    model : pyomo.environ.ConcreteModel
    build_s, build_cpu_s : float
        Wall and CPU time of :func:`build_casadi_nlp` (the symbolic NLP) [s].
    solvers : dict
        ``nlpsol`` objects created by :func:`solve_casadi`, by their options.
    """

    mode: str
    nlp: dict
    x0: np.ndarray
    lbx: np.ndarray
    ubx: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    x_scale: np.ndarray
    g_scale: np.ndarray
    f_scale: float
    variables: list
    constraints: list
    model: object
    build_s: float
    build_cpu_s: float = 0.0
    _perm: np.ndarray = dataclasses.field(repr=False, default=None)
    _fixed_values: np.ndarray = dataclasses.field(repr=False, default=None)
    _t_ids: tuple = dataclasses.field(repr=False, default=None)
    solvers: dict = dataclasses.field(repr=False, default_factory=dict)
    _functions: dict = dataclasses.field(repr=False, default_factory=dict)

    @property
    def n_variables(self) -> int:
        """Number of decision variables."""
        return int(self.x0.size)

    @property
    def n_constraints(self) -> int:
        """Number of constraint rows (equalities and inequalities)."""
        return int(self.lbg.size)

    def entry_values(self, x) -> np.ndarray:
        """Values of every model variable entry (decision or fixed) for unscaled ``x``."""
        x = np.asarray(x, dtype=float).ravel()
        return np.concatenate([x, self._fixed_values])[self._perm]

    def lap_time(self, x) -> float:
        """``t`` at the last point minus ``t`` at the first for unscaled ``x`` [s]."""
        v = self.entry_values(x)
        return float(v[self._t_ids[1]] - v[self._t_ids[0]])

    def _function(self, name):
        if name not in self._functions:
            ca = _casadi()
            self._functions[name] = ca.Function(name, [self.nlp["x"]], [self.nlp[name[0]]])
        return self._functions[name]

    def constraint_values(self, x=None) -> np.ndarray:
        """Unscaled constraint bodies ``g(x)`` for unscaled ``x`` (default: the initial
        guess), one per entry of :attr:`constraints`."""
        xs = self.x0 if x is None else self.x_scale * np.asarray(x, dtype=float).ravel()
        return np.asarray(self._function("g")(xs)).ravel() / self.g_scale

    def objective_value(self, x=None) -> float:
        """Unscaled objective at unscaled ``x`` (default: the initial guess)."""
        xs = self.x0 if x is None else self.x_scale * np.asarray(x, dtype=float).ravel()
        return float(self._function("f")(xs)) / self.f_scale


def _point_function(p: veh.VehicleParameters, chain, track_params: np.ndarray):
    """The car's equations at one point as a CasADi function of the 21 point inputs
    (:data:`_INPUTS`) and of the track joint's varying numbers.

    ``track_params`` is ``(N, 21)``: R (row-major 9), J (6), dJ (6) at each point. Columns that
    are the same at every point stay plain numbers in the function (so the structural zeros of
    ``J = [1, 0, 0, Omega]`` are kept, as in the Pyomo model); the others become inputs.
    Returns ``(function, varying_columns)``."""
    ca = _casadi()
    const = np.all(track_params == track_params[0], axis=0)
    varying = np.flatnonzero(~const)
    w = ca.SX.sym("w", len(_INPUTS))
    trk = ca.SX.sym("track", len(varying))
    tv = [float(x) for x in track_params[0]]
    for j, col in enumerate(varying):
        tv[col] = trk[j]
    tj = TrackJoint(R=[tv[0:3], tv[3:6], tv[6:9]], J=tv[9:15], dJ=tv[15:21])
    q = (0.0,) + tuple(w[k] for k in range(5))
    qd = tuple(w[5 + k] for k in range(6))
    u = tuple(w[11 + k] for k in range(3))
    z = tuple(w[14 + k] for k in range(7))
    eq = veh.car_equations(p, chain, tj, q, qd, u, z, namer=None)
    ch = eq.channels
    ratio = p.mu_y0 / p.mu_x0
    # adherence body as Pyomo normalizes (ratio fx)^2 + fy^2 <= D^2: lhs - rhs <= 0
    adh = [(ratio * ch[f"f_{wh}x"]) ** 2 + ch[f"f_{wh}y"] ** 2 - veh.peak_force(p, z[k]) ** 2
           for k, wh in enumerate(_WHEELS)]
    out = list(eq.qdd) + list(eq.load_residuals) + list(eq.inplane_residuals) + \
        [ch["power"], ch["v_3x"]] + adh
    assert len(out) == _N_OUT
    return ca.Function("car_point", [w, trk], [ca.vertcat(*out)], ["w", "track"], ["out"]), varying


class _Rows:
    """Accumulates constraint rows: model constraint, bounds, and a recipe for the body."""

    def __init__(self):
        self.cons, self.lb, self.ub, self.blocks = [], [], [], []

    def add(self, cons, lb, ub, recipe):
        n = len(cons)
        if n == 0:
            return
        self.cons.extend(cons)
        self.lb.append(np.broadcast_to(np.asarray(lb, dtype=float), (n,)))
        self.ub.append(np.broadcast_to(np.asarray(ub, dtype=float), (n,)))
        self.blocks.append((n, recipe))


def build_casadi_nlp(m, mode: str = "MX", map_parallelization: str = "serial") -> CasadiNLP:
    """Build the CasADi twin of a built and initialized pyomo_lap model.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        From :func:`pyomo_lap.ocp.build_model`, with values (e.g. from
        :func:`pyomo_lap.initialize.initialize_model` or a solution).
    mode : {'MX', 'SX'}
        Symbol type of the NLP. With ``'MX'`` the per-point physics stays one mapped function
        call in the expression graph; with ``'SX'`` it is inlined at every point.
    map_parallelization : {'serial', 'openmp', 'thread'}
        How the per-point function is mapped over the points (``casadi.Function.map``).

    Returns
    -------
    CasadiNLP

    Raises
    ------
    ValueError
        Bad ``mode``; a model with several active objectives; a non-positive scaling factor.
    NotImplementedError
        A model built with the ``lift`` option (lifted intermediates are variables of
        ``m.car``) or an expression the converter does not know.
    """
    ca = _casadi()
    if mode not in ("MX", "SX"):
        raise ValueError(f"mode = {mode!r}: expected 'MX' or 'SX'")
    t0, c0 = time.perf_counter(), time.process_time()
    if tuple(m.options.lift):
        raise NotImplementedError(f"models built with lift={tuple(m.options.lift)!r} are not "
                                  "supported by the CasADi twin (build with lift=())")
    p = m.vehicle
    sigma = list(m.s)
    N = len(sigma)
    pos = {s: i for i, s in enumerate(sigma)}
    sf_suffix = m.component("scaling_factor")
    sf_get = (lambda c: sf_suffix.get(c, 1.0)) if sf_suffix is not None else (lambda c: 1.0)

    # ---- every variable entry of the model gets a global id ---------------------------------
    entries = []           # VarData
    ids_of = {}            # id(VarData) -> global id
    comp_ids = {}          # name of a component indexed by m.s -> (N,) global ids
    for comp in m.component_objects((pyo.Var, DerivativeVar), descend_into=True):
        if comp.is_indexed() and comp.index_set() is m.s:
            arr = np.empty(N, dtype=np.int64)
            for i, s in enumerate(sigma):
                vd = comp[s]
                arr[i] = len(entries)
                ids_of[id(vd)] = len(entries)
                entries.append(vd)
            if comp.parent_block() is m:
                comp_ids[comp.local_name] = arr
        else:
            for vd in comp.values():
                ids_of[id(vd)] = len(entries)
                entries.append(vd)
    M = len(entries)
    referenced = np.zeros(M, dtype=bool)   # appears in a constraint or the objective
    rows = _Rows()

    # ---- per-point physics ------------------------------------------------------------------
    in_ids = np.stack([comp_ids[n] for n in _INPUTS], axis=1)          # (N, 21)
    referenced[in_ids.ravel()] = True
    joints = m.track_joints
    track_params = np.array([[float(x) for r in tj.R for x in r] + [float(x) for x in tj.J]
                             + [float(x) for x in tj.dJ] for tj in joints])       # (N, 21)
    point_fn, varying = _point_function(p, m.chain, track_params)

    def out_index(row, s_list):
        """Index into vec(OUT) ((19, N) column-major) of output ``row`` at the points."""
        return np.array([pos[s] * _N_OUT + row for s in s_list], dtype=np.int64)

    cfg = m.options
    disc = m.s.get_discretization_info()
    fe_pos = sorted(pos[s] for s in m.s.get_finite_elements())

    def lower_element(idx):
        return fe_pos[bisect.bisect_left(fe_pos, idx) - 1]

    generic = []   # ConstraintData converted from their Pyomo expression

    for con in m.component_objects(pyo.Constraint, active=True, descend_into=True):
        name = con.local_name
        datas = [c for c in con.values() if c.active]
        if not datas:
            continue
        keys = [c.index() for c in datas]
        top = con.parent_block() is m
        # the spatial DAE (39): q1_dot * dx/ds - rhs, as in ocp.py
        if top and name == "ode_q":
            a = np.array([comp_ids["q1_dot"][pos[s]] for k, s in keys])
            b = np.array([comp_ids[f"d{k}_ds"][pos[s]] for k, s in keys])
            c = np.array([comp_ids[f"{k}_dot"][pos[s]] for k, s in keys])
            referenced[np.r_[a, b, c]] = True
            rows.add(datas, 0.0, 0.0, ("ode", a, b, c, None))
        elif top and name == "ode_qdot":
            a = np.array([comp_ids["q1_dot"][pos[s]] for k, s in keys])
            b = np.array([comp_ids[f"dq{k}_dot_ds"][pos[s]] for k, s in keys])
            o = np.array([pos[s] * _N_OUT + _OUT_QDD + k - 1 for k, s in keys])
            referenced[np.r_[a, b]] = True
            rows.add(datas, 0.0, 0.0, ("ode", a, b, None, o))
        elif top and name == "ode_t":
            a = np.array([comp_ids["q1_dot"][pos[s]] for s in keys])
            b = np.array([comp_ids["dt_ds"][pos[s]] for s in keys])
            referenced[np.r_[a, b]] = True
            rows.add(datas, 1.0, 1.0, ("ode", a, b, None, None))
        # the car's rows: entries of the mapped physics output
        elif top and name in ("loads_eq", "inplane_eq"):
            base = _OUT_LOAD if name == "loads_eq" else _OUT_INPLANE
            o = np.array([pos[s] * _N_OUT + base + k for k, s in keys])
            rows.add(datas, 0.0, 0.0, ("out", o))
        elif top and name == "power_limit":
            rows.add(datas, -np.inf, p.P_max, ("out", out_index(_OUT_POWER, keys)))
        elif top and name == "adherence":
            o = np.array([pos[s] * _N_OUT + _OUT_ADH + k for k, s in keys])
            rows.add(datas, -np.inf, 0.0, ("out", o))
        elif top and name == "speed_min":
            rows.add(datas, cfg.v_min, np.inf, ("out", out_index(_OUT_V3X, keys)))
        elif top and name == "settled_start":
            o = np.array([pos[sigma[0]] * _N_OUT + _OUT_QDD + k - 1 for k in keys])
            rows.add(datas, 0.0, 0.0, ("out", o))
        # pyomo.dae's linear equations, from the collocation matrices
        elif top and name.endswith(("_disc_eq", "_cont_eq")) and (lin := _collocation_rows(
                m, name, keys, pos, sigma, comp_ids, disc, lower_element)) is not None:
            referenced[lin[1]] = True
            rows.add(datas, 0.0, 0.0, ("linear",) + lin)
        elif top and name.endswith("_interpolation_constraints") and (lin := _interpolation_rows(
                m, name, len(datas), comp_ids, disc, fe_pos)) is not None:
            referenced[lin[1]] = True
            rows.add(datas, 0.0, 0.0, ("linear",) + lin)
        else:   # anything else: converted from its Pyomo expression
            generic.extend(datas)
            rows.add(datas, [c.lb if c.lb is not None else -np.inf for c in datas],
                     [c.ub if c.ub is not None else np.inf for c in datas], ("generic",))

    # ---- objective and the other constraints, converted from their Pyomo expressions -------
    objs = list(m.component_data_objects(pyo.Objective, active=True, descend_into=True))
    if len(objs) != 1:
        raise ValueError(f"the model has {len(objs)} active objectives, expected exactly one")
    obj = objs[0]
    gen_syms = {}          # global id -> SX symbol

    def leaf(vd):
        if vd.fixed:
            return float(vd.value)
        k = ids_of.get(id(vd))
        if k is None:
            raise ValueError(f"variable {vd.name} is not on the model")
        if k not in gen_syms:
            gen_syms[k] = ca.SX.sym(f"v{k}")
        return gen_syms[k]

    cache = {}
    gen_exprs = [pyomo_to_casadi(c.body, leaf, cache) for c in generic]
    f_expr = pyomo_to_casadi(obj.expr, leaf, cache)
    if obj.sense == pyo.maximize:
        f_expr = -f_expr
    gen_ids = np.array(sorted(gen_syms), dtype=np.int64)
    referenced[gen_ids] = True
    gen_fn = ca.Function("pyomo_exprs", [ca.vertcat(*[gen_syms[k] for k in gen_ids])],
                         [ca.vertcat(*[ca.SX(e) for e in gen_exprs]) if gen_exprs else ca.SX(0, 1),
                          ca.SX(f_expr)])

    # ---- decision variables -------------------------------------------------------------
    fixed = np.array([vd.fixed for vd in entries], dtype=bool)
    decision = np.flatnonzero(referenced & ~fixed)
    others = np.flatnonzero(~(referenced & ~fixed))
    perm = np.empty(M, dtype=np.int64)
    perm[decision] = np.arange(decision.size)
    perm[others] = decision.size + np.arange(others.size)
    values = np.array([vd.value if vd.value is not None else 0.0 for vd in entries], dtype=float)
    fixed_values = values[others]
    variables = [entries[k] for k in decision]
    x_scale = np.array([sf_get(vd) for vd in variables], dtype=float)
    lb = np.array([vd.lb if vd.lb is not None else -np.inf for vd in variables], dtype=float)
    ub = np.array([vd.ub if vd.ub is not None else np.inf for vd in variables], dtype=float)
    g_scale = np.array([sf_get(c) for c in rows.cons], dtype=float)
    f_scale = float(sf_get(obj))
    for what, arr in (("variable", x_scale), ("constraint", g_scale), ("objective", [f_scale])):
        bad = [i for i, v in enumerate(np.atleast_1d(arr)) if not (np.isfinite(v) and v > 0)]
        if bad:
            who = (variables if what == "variable" else rows.cons if what == "constraint"
                   else [obj])[bad[0]]
            raise ValueError(f"scaling_factor of {what} {who.name} is {np.atleast_1d(arr)[bad[0]]!r}; "
                             "expected a finite number > 0")

    # ---- symbolic NLP -----------------------------------------------------------------------
    Sym = ca.SX if mode == "SX" else ca.MX
    y = Sym.sym("x", decision.size)
    x_unscaled = y * ca.DM(1.0 / x_scale)
    v_all = ca.vertcat(x_unscaled, ca.DM(fixed_values))[perm.tolist()]

    def take(ids):
        return v_all[np.asarray(ids, dtype=np.int64).tolist()]

    w_in = ca.reshape(take(in_ids.ravel()), len(_INPUTS), N)
    trk = ca.DM(track_params[:, varying].T) if varying.size else ca.DM(0, N)
    mapped = point_fn.map(N, map_parallelization)
    OUT = mapped(w_in, trk)
    out_vec = ca.vec(OUT)
    gen_out = gen_fn(take(gen_ids)) if gen_ids.size else gen_fn(ca.DM(0, 1))
    g_blocks = []
    n_gen = 0
    for n, recipe in rows.blocks:
        kind = recipe[0]
        if kind == "ode":
            _, a, b, c, o = recipe
            e = take(a) * take(b)
            if c is not None:
                e = e - take(c)
            if o is not None:
                e = e - out_vec[o.tolist()]
        elif kind == "out":
            e = out_vec[recipe[1].tolist()]
        elif kind == "linear":
            _, r, cols, vals = recipe
            A = ca.DM(scipy.sparse.csc_matrix((vals, (r, cols)), shape=(n, M)))
            e = ca.mtimes(A, v_all)
        else:
            e = gen_out[0][n_gen:n_gen + n]
            n_gen += n
        g_blocks.append(e)
    g = ca.vertcat(*g_blocks) * ca.DM(g_scale)
    f = gen_out[1] * f_scale
    lbg = np.concatenate(rows.lb) if rows.lb else np.zeros(0)
    ubg = np.concatenate(rows.ub) if rows.ub else np.zeros(0)
    t_ids = (int(comp_ids["t"][0]), int(comp_ids["t"][-1]))
    nlp = CasadiNLP(
        mode=mode, nlp={"x": y, "f": f, "g": g},
        x0=x_scale * values[decision], lbx=x_scale * lb, ubx=x_scale * ub,
        lbg=g_scale * lbg, ubg=g_scale * ubg, x_scale=x_scale, g_scale=g_scale,
        f_scale=f_scale, variables=variables, constraints=rows.cons, model=m,
        build_s=0.0, _perm=perm, _fixed_values=fixed_values, _t_ids=t_ids)
    nlp.build_s = time.perf_counter() - t0
    nlp.build_cpu_s = time.process_time() - c0
    return nlp


def _collocation_rows(m, name, keys, pos, sigma, comp_ids, disc, lower_element):
    """Sparse rows (row, column, value) of the pyomo.dae collocation equations of one
    ``DerivativeVar`` (``<dv>_disc_eq``) or continuity equations of one state
    (``<state>_<s>_cont_eq``, Legendre), mirroring ``pyomo.dae.plugins.colloc`` and
    ``pyomo.dae.misc.add_continuity_equations``. None when the name is not recognized."""
    ncp = disc["ncp"]
    scheme = disc["scheme"]
    rows, cols, vals = [], [], []
    if name.endswith("_disc_eq"):
        dvname = name[: -len("_disc_eq")]
        dv = m.component(dvname)
        if not isinstance(dv, DerivativeVar) or dvname not in comp_ids:
            return None
        state = dv.get_state_var().local_name
        if state not in comp_ids or len(dv.get_continuousset_list()) != 1:
            return None   # second derivatives: not used by the OCP
        adot = disc["adot"]
        d_ids, x_ids = comp_ids[dvname], comp_ids[state]
        span = ncp if scheme == "LAGRANGE-RADAU" else ncp + 1
        for r, s in enumerate(keys):
            idx = pos[s]
            low = lower_element(idx)
            inv_h = 1.0 / (sigma[low + span] - sigma[low])
            rows.append(r)
            cols.append(d_ids[idx])
            vals.append(1.0)
            for j in range(ncp + 1):
                rows.append(r)
                cols.append(x_ids[low + j])
                vals.append(-adot[j][idx - low] * inv_h)
    else:
        cs = m.s.local_name
        suffix = f"_{cs}_cont_eq"
        state = name[: -len(suffix)] if name.endswith(suffix) else None
        if state not in comp_ids or disc["afinal"] is None:
            return None
        afinal = disc["afinal"]
        x_ids = comp_ids[state]
        for r, s in enumerate(keys):
            idx = pos[s]
            low = lower_element(idx)
            rows.append(r)
            cols.append(x_ids[idx])
            vals.append(1.0)
            for j in range(ncp + 1):
                rows.append(r)
                cols.append(x_ids[low + j])
                vals.append(-afinal[j])
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals)


def _interpolation_rows(m, name, n, comp_ids, disc, fe_pos):
    """Sparse rows of pyomo.dae's ``reduce_collocation_points(var, ncp=1)`` equations
    ``var[t_ik] == var[t_i,ncp]`` (k = 1..ncp-1 in each element, in pyomo.dae's order).
    None when the constraint list does not have that shape."""
    var = name[: -len("_interpolation_constraints")]
    ncp = disc["ncp"]
    if var not in comp_ids or n != (len(fe_pos) - 1) * (ncp - 1):
        return None
    ids = comp_ids[var]
    rows, cols, vals = [], [], []
    r = 0
    for i in range(len(fe_pos) - 1):
        base = fe_pos[i]
        for k in range(1, ncp):
            rows += [r, r]
            cols += [ids[base + k], ids[base + ncp]]
            vals += [1.0, -1.0]
            r += 1
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals)


# --------------------------------------------------------------------------------------------
# solving
# --------------------------------------------------------------------------------------------

def casadi_ipopt_options(options: Optional[dict] = None) -> dict:
    """IPOPT options for the CasADi route: :data:`pyomo_lap.solve.DEFAULT_IPOPT_OPTIONS` with
    ``nlp_scaling_method = none`` (the scaling is in the NLP itself), updated by ``options``."""
    from .solve import DEFAULT_IPOPT_OPTIONS
    opts = dict(DEFAULT_IPOPT_OPTIONS)
    opts["nlp_scaling_method"] = "none"
    opts.update(options or {})
    return opts


@dataclasses.dataclass
class CasadiSolveReport:
    """Outcome of :func:`solve_casadi`.

    Attributes
    ----------
    ok : bool
        IPOPT reported success (``Solve_Succeeded`` or ``Solved_To_Acceptable_Level``).
    return_status : str
        IPOPT's return status.
    lap_time_s : float
        ``t`` at the last point minus ``t`` at the first [s].
    objective : float
        Unscaled objective.
    iterations : int
    build_s : float
        Symbolic NLP (:attr:`CasadiNLP.build_s`) plus ``nlpsol`` creation [s].
    build_cpu_s : float
        The same in CPU time [s].
    nlpsol_s : float
        ``nlpsol`` creation (derivative generation) [s]; 0 when reused.
    solve_s : float
        Wall time of the solver call [s].
    solve_cpu_s : float
        CPU time of this process during the solver call [s] (on a shared machine the wall
        time also counts the time other processes had the cores).
    t_wall : dict
        Wall time per part from CasADi's statistics [s]: ``nlp_f``, ``nlp_g``, ``nlp_grad_f``,
        ``nlp_jac_g``, ``nlp_hess_l`` (the functions that were called), their sum
        ``functions``, ``total`` (= ``solve_s``) and ``ipopt_rest`` = ``total - functions``
        (IPOPT's own work: linear solver, line search).
    t_proc : dict
        The same as CPU times [s].
    n_variables, n_constraints, jac_nnz, hess_nnz : int
        Size of the NLP; nonzeros of the constraint Jacobian and of the lower triangle of the
        Lagrangian Hessian.
    x : ndarray (n,)
        Unscaled solution (in the order of :attr:`CasadiNLP.variables`).
    lam_g : ndarray (m,)
        Constraint multipliers of the scaled problem.
    """

    ok: bool
    return_status: str
    lap_time_s: float
    objective: float
    iterations: int
    build_s: float
    build_cpu_s: float
    nlpsol_s: float
    solve_s: float
    solve_cpu_s: float
    t_wall: dict
    t_proc: dict
    n_variables: int
    n_constraints: int
    jac_nnz: int
    hess_nnz: int
    x: np.ndarray = dataclasses.field(repr=False)
    lam_g: np.ndarray = dataclasses.field(repr=False)


def solve_casadi(nlp: CasadiNLP, options: Optional[dict] = None, tee: bool = False,
                 expand: Optional[bool] = None, x0=None) -> CasadiSolveReport:
    """Solve a :class:`CasadiNLP` with CasADi's IPOPT.

    Parameters
    ----------
    nlp : CasadiNLP
    options : dict, optional
        IPOPT options updating :func:`casadi_ipopt_options` (same meaning as for
        :func:`pyomo_lap.solve.solve_model`).
    tee : bool
        Print IPOPT's iterations (otherwise ``print_level`` 0 unless given in ``options``).
    expand : bool, optional
        Expand an MX NLP into SX before solving (CasADi's ``expand`` option); default False.
    x0 : array (n,), optional
        Unscaled initial guess (default: the model's values at build time).

    Returns
    -------
    CasadiSolveReport

    Raises
    ------
    ImportError
        CasADi is not installed.
    """
    ca = _casadi()
    ipopt = casadi_ipopt_options(options)
    if not tee and "print_level" not in (options or {}):
        ipopt["print_level"] = 0
    ipopt.setdefault("sb", "yes")
    expand = bool(expand)
    key = (tuple(sorted((k, str(v)) for k, v in ipopt.items())), expand)
    t0, c0 = time.perf_counter(), time.process_time()
    created = key not in nlp.solvers
    if created:
        nlp.solvers[key] = ca.nlpsol("pyomo_lap_casadi", "ipopt", nlp.nlp,
                                     {"ipopt": ipopt, "print_time": False, "expand": expand})
    solver = nlp.solvers[key]
    nlpsol_s = time.perf_counter() - t0 if created else 0.0
    nlpsol_cpu_s = time.process_time() - c0 if created else 0.0
    xs0 = nlp.x0 if x0 is None else nlp.x_scale * np.asarray(x0, dtype=float).ravel()
    t1, c1 = time.perf_counter(), time.process_time()
    sol = solver(x0=xs0, lbx=nlp.lbx, ubx=nlp.ubx, lbg=nlp.lbg, ubg=nlp.ubg)
    solve_s, solve_cpu_s = time.perf_counter() - t1, time.process_time() - c1
    st = solver.stats()
    x = np.asarray(sol["x"]).ravel() / nlp.x_scale
    t_wall = {k[len("t_wall_"):]: float(v) for k, v in st.items()
              if k.startswith("t_wall_") and isinstance(v, (int, float)) and
              st.get("n_call_" + k[len("t_wall_"):], 1)}
    t_wall["functions"] = sum(t_wall.values())
    t_wall["total"] = solve_s
    t_wall["ipopt_rest"] = solve_s - t_wall["functions"]   # IPOPT itself (MUMPS, line search)
    t_proc = {k[len("t_proc_"):]: float(v) for k, v in st.items()
              if k.startswith("t_proc_") and isinstance(v, (int, float)) and
              st.get("n_call_" + k[len("t_proc_"):], 1)}
    t_proc["functions"] = sum(t_proc.values())
    t_proc["total"] = solve_cpu_s
    t_proc["ipopt_rest"] = solve_cpu_s - t_proc["functions"]
    jac = solver.get_function("nlp_jac_g").sparsity_out(1)
    hess = solver.get_function("nlp_hess_l").sparsity_out(0)
    # CasADi stores one triangle of the symmetric Hessian; count the lower triangle as IPOPT does
    ones = ca.DM.ones(hess)
    hess_nnz = int(ca.tril(ones + ones.T).nnz()) if hess.nnz() else 0
    status = str(st.get("return_status", ""))
    return CasadiSolveReport(
        ok=bool(st.get("success", False)), return_status=status,
        lap_time_s=nlp.lap_time(x), objective=float(sol["f"]) / nlp.f_scale,
        iterations=int(st.get("iter_count", -1)), build_s=nlp.build_s + nlpsol_s,
        build_cpu_s=nlp.build_cpu_s + nlpsol_cpu_s, nlpsol_s=nlpsol_s, solve_s=solve_s, solve_cpu_s=solve_cpu_s, t_wall=t_wall,
        t_proc=t_proc, n_variables=nlp.n_variables,
        n_constraints=nlp.n_constraints, jac_nnz=int(jac.nnz()), hess_nnz=hess_nnz, x=x,
        lam_g=np.asarray(sol["lam_g"]).ravel())


def load_solution(m, nlp: CasadiNLP, sol) -> None:
    """Write a CasADi solution into the model's variables.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model ``nlp`` was built from.
    nlp : CasadiNLP
    sol : CasadiSolveReport or array (n,)
        Report of :func:`solve_casadi` or an unscaled solution vector.

    Raises
    ------
    ValueError
        ``nlp`` was built from another model, or the vector has the wrong length.
    """
    if nlp.model is not m:
        raise ValueError("nlp was built from another model")
    x = sol.x if isinstance(sol, CasadiSolveReport) else np.asarray(sol, dtype=float).ravel()
    if x.size != nlp.n_variables:
        raise ValueError(f"solution has {x.size} entries, the NLP {nlp.n_variables} variables")
    for vd, val in zip(nlp.variables, x):
        vd.set_value(float(val), skip_validation=True)
