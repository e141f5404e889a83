"""The parts of the lap-time sensitivities (:mod:`pyomo_lap.analysis.sensitivities`) taken from
the solved model's multipliers: the per-point rows' Lagrangian with the vehicle parameters as
CasADi symbols (:func:`_point_lagrangian`), the variable bounds that depend on the car
(:func:`bound_functions`, checked against the model's) and their multipliers, the part of
pyomo.dae's collocation equations, and the sector time's adjoint: one KKT solve on
:class:`pyomo_lap.solvers.lap.nlp.LapNLP`'s Hessian and Jacobian
(:func:`_sector_time_adjoint`).
"""
from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
import scipy.sparse.linalg as spl
from pyomo.common.dependencies import attempt_import
from pyomo.repn import generate_standard_repn

from ..ocp.point_functions import record_of
from ..solvers.lap.nlp import LapNLP
from ..spatial.backend import is_number
from ..vehicle.car import force_scale
from ..vehicle.schema import SymbolicVehicle, field_of

ca, ca_available = attempt_import("casadi")

__all__ = ["bound_functions"]


_BOUND_FAMILIES = ("delta", "f_11z", "f_12z", "f_21z", "f_22z", "f_xa", "f_xb", "q2")


class _AttributeSpy:
    """A :class:`VehicleParameters` that records the names of the attributes read from it."""

    def __init__(self, p):
        self._p = p
        self.used = set()

    def __getattr__(self, name):
        self.used.add(name)
        return getattr(self._p, name)


def bound_functions(p, cfg) -> dict:
    """The bounds of the model's variables that depend on the car, as functions of ``p``
    (numbers or symbols), the same formulas as the builder's
    (:func:`pyomo_lap.ocp.full_model.build_full_model`,
    :func:`pyomo_lap.ocp.sector.discretize_on_track`).

    Returns
    -------
    dict
        ``name -> (lb, ub)``; for ``q2`` the offsets added to the track's widths:
        ``lb = -w_right + offset``, ``ub = w_left - offset`` with ``offset`` returned in both
        places [m]; ``None`` where the bound does not depend on ``p``.
    """
    # the controls' box (twice the largest tyre force) is never active: taken as a number
    fmax = 2.0 * force_scale(getattr(p, "numbers", p))
    fz_max = 20 * p.m * p.gravity
    half = cfg.track_margin     # q2 within the edges: the contact patches are rows (track_limit)
    out = {"delta": (-p.delta_max, p.delta_max), "f_xa": (None, fmax), "f_xb": (-fmax, None),
           "q2": (half, half)}
    for w in ("11", "12", "21", "22"):
        out[f"f_{w}z"] = (p.fz_min, fz_max)
    return out


def _check_bounds(m, p, cfg) -> None:
    """The model's bounds are those of :func:`bound_functions` (a changed builder must be
    followed here)."""
    b = bound_functions(p, cfg)
    tp = m.problem.track_points
    sigma = sorted(m.s)
    for name in _BOUND_FAMILIES:
        comp = m.component(name)
        lo, up = b[name]
        for i, s in enumerate(sigma):
            v = comp[s]
            if v.fixed:
                continue
            if name == "q2":
                want = (-(tp.width_right[i] - lo), tp.width_left[i] - up)
            else:
                want = (lo, up)
            for got, exp in ((v.lb, want[0]), (v.ub, want[1])):
                if exp is not None and (got is None or abs(got - float(exp)) > 1e-9 * max(1.0, abs(float(exp)))):
                    raise RuntimeError(f"the bound of {v.name} is {got}, the sensitivities expect "
                                       f"{float(exp)}: pyomo_lap.analysis.lagrangian.bound_functions "
                                       "does not follow the builder")


def _model_rows(m, rec, families_rows):
    """The model's constraint of every (row, point), as in the builder: ``[j][i] -> ConstraintData
    or None``."""
    sigma = rec.points
    n = len(sigma)
    where = {"all": range(n), "interior": range(1, n), "first": range(0, 1)}
    table = []
    for fam, key, wh in families_rows:
        comp = m.component(fam)
        col = [None] * n
        for i in where[wh]:
            s = sigma[i]
            if wh == "first":
                ix = key
            elif key is None:
                ix = s
            else:
                ix = key + (s,) if isinstance(key, tuple) else (key, s)
            if comp is not None and ix in comp:
                col[i] = comp[ix]
        table.append(col)
    return table


@dataclasses.dataclass
class _PointLagrangian:
    """The model's per-point rows with the vehicle parameters as CasADi symbols, and their
    numbers at the solution (:func:`_point_lagrangian`)."""

    F: object           # mapped over the points: (w, track, p, d, u) -> d/dp and d/dv0 of
    #                     d.g, and of u.grad_w(d.g)
    P: object           # the parameters' symbols (SX, in the order of PARAMETERS)
    sym: object         # the SymbolicVehicle of P
    Wv: np.ndarray      # (n_variables, n_points) the point variables' values
    Tv: np.ndarray      # (15, n_points) the track numbers
    PP: np.ndarray      # (n_parameters, n_points) the parameters' values
    Dv: np.ndarray      # (n_rows, n_points) the rows' duals
    cons: list          # [row][point] -> ConstraintData or None
    comps: list         # the Var component of every point variable
    sigma: list         # the points s [m]
    p0: np.ndarray      # (n_parameters,) the parameters' values


def _point_lagrangian(m, names: list, dual) -> _PointLagrangian:
    r"""The rows of the model's own recording, its car's parameters given as symbols (the
    gravity, not a parameter of the vehicle file, as its number), as the derivatives of
    :math:`\sum_i d_i g_i` at one point mapped over the points, with the solution's values
    and duals."""
    prob = m.problem
    p = m.vehicle.built_for
    P = ca.SX.sym("p", len(names))
    sym = SymbolicVehicle(p, {k: P[i] for i, k in enumerate(names)})
    rec = record_of(m)
    nv, nt = len(rec.variables), len(rec.track_inputs)
    W = ca.SX.sym("w", nv)
    T = ca.SX.sym("track", nt)
    pos = {f: i for i, f in enumerate(names)}
    V = ca.vertcat(*[P[pos[field_of(k)]] if field_of(k) in pos else float(p.value(k))
                     for k in rec.vehicle_inputs])
    out = rec.casadi_function()(W, T, V)
    info_of = {o: (fam.name, key, fam.where) for fam in rec.families
               for o, key in zip(fam.outputs, fam.keys)}
    g, fam_rows = [], []
    for o, node in enumerate(rec.outputs):
        if is_number(node):
            continue
        g.append(out[o])
        fam_rows.append(info_of[o])
    G = ca.vertcat(*g)
    D = ca.SX.sym("d", G.numel())
    U = ca.SX.sym("u", nv)
    lag = ca.dot(D, G)                       # sum_i d_i g_i at one point
    lag_u = ca.dot(ca.gradient(lag, W), U)   # its derivative in w along u
    iq1 = rec.variables.index("q1_dot")
    F = ca.Function("dlag", [W, T, P, D, U], [ca.gradient(lag, P), ca.gradient(lag, W[iq1]),
                                              ca.gradient(lag_u, P), ca.gradient(lag_u, W[iq1])])
    # the point's values, track numbers and duals
    sigma = rec.points
    n = len(sigma)
    comps = [m.component(k) for k in rec.variables]
    cons = _model_rows(m, rec, fam_rows)
    p0 = np.array([getattr(p, k) for k in names], dtype=float)
    return _PointLagrangian(
        F=F.map(n, "serial"), P=P, sym=sym,
        Wv=np.array([[pyo.value(c[s]) for s in sigma] for c in comps]),
        Tv=np.asarray(rec.track_values, dtype=float).T, PP=np.tile(p0[:, None], (1, n)),
        Dv=np.array([[dual.get(c, 0.0) if c is not None else 0.0 for c in col] for col in cons]),
        cons=cons, comps=comps, sigma=sigma, p0=p0)


def _bound_jacobian(bound, P, p0) -> np.ndarray:
    """``d bound / dp`` at ``p0`` (a CasADi expression of the symbols ``P``)."""
    return np.asarray(ca.evalf(ca.substitute(ca.jacobian(bound, P), P, p0))).ravel()


def _bound_gradient(m, bsym: dict, rows: _PointLagrangian, bound_mult) -> np.ndarray:
    r""":math:`\sum_j z_{L,j} \partial x_{L,j}/\partial p + z_{U,j} \partial x_{U,j}/\partial p`
    over the variable bounds that depend on the car (:func:`bound_functions`)."""
    grad_bounds = np.zeros(len(rows.p0))
    for name in _BOUND_FAMILIES:
        comp = m.component(name)
        lo, up = bsym[name]
        zlo, zup = (np.array(a) for a in zip(*(bound_mult(comp[s]) for s in rows.sigma)))
        if name == "q2":      # lb = -w_r + offset, ub = w_l - offset
            dlo = _bound_jacobian(lo, rows.P, rows.p0)
            grad_bounds += zlo.sum() * dlo - zup.sum() * dlo
            continue
        for bnd, z in ((lo, zlo), (up, zup)):
            if bnd is None or is_number(bnd):
                continue
            grad_bounds += z.sum() * _bound_jacobian(bnd, rows.P, rows.p0)
    return grad_bounds


def _sector_time_adjoint(m, rows: _PointLagrangian, bsym: dict, bound_mult, v0):
    r""":math:`dT^*/dp` of the sector time :math:`T` (not the objective) by one adjoint solve.

    With the active set fixed, the optimum moves with :math:`p` as
    :math:`K\,[dx; d\lambda] = -[\nabla^2_{xp}L; \partial c_A/\partial p]\,dp`, where
    :math:`K = [[H, A^T], [A, 0]]` is the KKT matrix at the solution (:math:`H` the Hessian of
    the Lagrangian, :math:`A` the Jacobian of the equality rows, of the active inequality rows
    and of the active bounds). With :math:`K [u; v] = [\nabla T; 0]`:
    :math:`dT/dp = -(u^T \nabla^2_{xp} L + v^T \partial c_A/\partial p)`. :math:`H`, :math:`A`
    come from :class:`pyomo_lap.solvers.lap.nlp.LapNLP` (the compiled functions of the
    solve), :math:`\nabla^2_{xp} L` and :math:`\partial c/\partial p` from the per-point rows
    with symbolic parameters (AD, ``rows``). A row or bound is active when its scaled
    multiplier exceeds its scaled slack (their product is IPOPT's final barrier parameter).

    Parameters
    ----------
    m : ConcreteModel
    rows : _PointLagrangian
    bsym : dict
        :func:`bound_functions` of the symbolic vehicle.
    bound_mult : callable
        :func:`_bound_multipliers`.
    v0 : VarData or None
        The fixed entry speed ``q1_dot`` at the first point, None without one.

    Returns
    -------
    (ndarray (n_par,), float, dict)
        :math:`dT/dp` without the entry speed's part, :math:`dT/dv_0` [s per m/s] (0 without a
        fixed entry speed), and figures (sizes, times, the solve's relative residual).

    Raises
    ------
    RuntimeError
        The KKT system is singular or its solve inaccurate (residual above 1e-8).
    """
    t0 = time.perf_counter()
    nlp = LapNLP(m, verify_points=2)
    kkt = _kkt_system(m, nlp, bound_mult)
    t1 = time.perf_counter()
    sol, resid = _solve_kkt(kkt.K, kkt.rhs)
    dT, dT_v0 = _adjoint_gradient(m, nlp, kkt, sol, rows, bsym, v0)
    info = {"kkt_size": int(kkt.nx + kkt.na), "active_rows": int(kkt.ar.size),
            "active_bounds": int(kkt.ab.size), "residual": resid,
            "time_s": time.perf_counter() - t0, "solve_s": time.perf_counter() - t1}
    return dT, dT_v0, info


@dataclasses.dataclass
class _KKT:
    """The KKT system at the solution (:func:`_kkt_system`)."""

    nx: int               # variables
    ng: int               # rows
    na: int               # active rows and bounds
    row_of: dict          # id(ConstraintData) -> row of the NLP
    col_of: dict          # id(VarData) -> column of the NLP
    ar: np.ndarray        # the active rows
    ab: np.ndarray        # the variables at an active bound
    act_lo: np.ndarray    # (nx,) bool: at an active lower bound
    K: object             # [[H, A^T], [A, -1e-12 I]] (scipy.sparse, csc)
    rhs: np.ndarray       # [grad T; 0]


def _kkt_system(m, nlp, bound_mult) -> _KKT:
    """The KKT matrix of the solved model ``m`` (its NLP ``nlp``: Hessian of the Lagrangian,
    Jacobian of the equality and active rows and active bounds) and the gradient of the
    sector time as its right-hand side."""
    dual = m.dual
    x = np.array([v.value for v in nlp.variables], dtype=float)
    nx, ng = x.size, len(nlp.constraints)
    row_of = {id(c): r for r, c in enumerate(nlp.constraints)}
    col_of = {id(v): k for k, v in enumerate(nlp.variables)}
    y = np.array([dual.get(c, 0.0) for c in nlp.constraints])   # Pyomo's: df*/db = -lambda
    hv = np.empty(nlp.hess_rows.size)
    nlp.hessian(x, 1.0, -y * nlp.sense, hv)
    Hl = sp.coo_matrix((hv, (nlp.hess_rows, nlp.hess_cols)), shape=(nx, nx)).tocsr()
    H = Hl + Hl.T - sp.diags(Hl.diagonal())
    jv = np.empty(nlp.jac_rows.size)
    nlp.jacobian(x, jv)
    J = sp.coo_matrix((jv, (nlp.jac_rows, nlp.jac_cols)), shape=(ng, nx)).tocsr()
    gval = np.empty(ng)
    nlp.constraints_eval(x, gval)
    gs = nlp.g_scaling if nlp.g_scaling is not None else np.ones(ng)
    xs = nlp.x_scaling if nlp.x_scaling is not None else np.ones(nx)
    fs = nlp.obj_scaling or 1.0
    slack = np.minimum(np.abs(gval - nlp.g_lb), np.abs(gval - nlp.g_ub))
    active_row = (nlp.g_lb == nlp.g_ub) | (np.abs(y) * fs / gs > slack * gs)
    z = np.array([bound_mult(v) for v in nlp.variables]).reshape(nx, 2)
    act_lo = np.isfinite(nlp.x_lb) & (z[:, 0] * fs / xs > (x - nlp.x_lb) * xs)
    act_up = np.isfinite(nlp.x_ub) & (-z[:, 1] * fs / xs > (nlp.x_ub - x) * xs)
    ar = np.flatnonzero(active_row)
    ab = np.flatnonzero(act_lo | act_up)
    E = sp.coo_matrix((np.ones(ab.size), (np.arange(ab.size), ab)), shape=(ab.size, nx))
    A = sp.vstack([J[ar], E]).tocsr()
    na = A.shape[0]
    # -1e-12 on the multipliers' block, as IPOPT's delta_c: redundant active rows (an active
    # bound that an equality also fixes) would make K singular; the solution's residual is
    # checked below
    K = sp.bmat([[H, A.T], [A, -1e-12 * sp.identity(na)]], format="csc")
    rhs = np.zeros(nx + na)
    repn = generate_standard_repn(m.lap_time.expr, compute_values=True)
    for v, c in zip(repn.linear_vars, repn.linear_coefs):
        if id(v) in col_of:
            rhs[col_of[id(v)]] += c
    return _KKT(nx=nx, ng=ng, na=na, row_of=row_of, col_of=col_of, ar=ar, ab=ab, act_lo=act_lo,
                K=K, rhs=rhs)


def _solve_kkt(K, rhs) -> tuple:
    """The solution of ``K sol = rhs`` and its relative residual.

    Raises
    ------
    RuntimeError
        ``K`` is singular, or the residual exceeds 1e-8.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", spl.MatrixRankWarning)
        try:
            sol = spl.spsolve(K, rhs)
        except spl.MatrixRankWarning as exc:
            raise RuntimeError(f"the KKT matrix is singular ({exc})") from None
    resid = float(np.linalg.norm(K @ sol - rhs) / max(np.linalg.norm(rhs), 1e-300))
    if not np.all(np.isfinite(sol)) or resid > 1e-8:
        raise RuntimeError(f"the KKT solve is inaccurate (relative residual {resid:.1e})")
    return sol, resid


def _adjoint_gradient(m, nlp, kkt: _KKT, sol, rows: _PointLagrangian, bsym: dict, v0) -> tuple:
    r""":math:`dT/dp = -(u^T \nabla^2_{xp} L + v^T \partial c_A/\partial p)` from the adjoint
    ``sol = [u; v]`` (rows by AD over the points, active bounds by :func:`bound_functions`),
    and :math:`dT/dv_0` (0.0 for ``v0`` None)."""
    nx, ng, ar, ab, row_of, col_of = kkt.nx, kkt.ng, kkt.ar, kkt.ab, kkt.row_of, kkt.col_of
    u, v = sol[:nx], sol[nx:]
    vr = np.zeros(ng)
    vr[ar] = v[:ar.size]
    vb = np.zeros(nx)
    vb[ab] = v[ar.size:]
    Vv = np.array([[vr[row_of[id(c)]] if c is not None and id(c) in row_of else 0.0 for c in col]
                   for col in rows.cons])
    Uv = np.array([[u[col_of[id(c[s])]] if id(c[s]) in col_of else 0.0 for s in rows.sigma]
                   for c in rows.comps])
    _, _, hu_p, hu_v0 = rows.F(rows.Wv, rows.Tv, rows.PP, rows.Dv, Uv)   # d/dp, d/dv0 of u . grad_w (y . g)
    gv_p, gv_v0, _, _ = rows.F(rows.Wv, rows.Tv, rows.PP, Vv, np.zeros_like(Uv))  # of v . g
    # L_xp = -d_w (y . g_p) (Pyomo's y = -lambda): -u' L_xp = +hu; -v' c_p = -gv
    dT = np.asarray(hu_p).sum(axis=1) - np.asarray(gv_p).sum(axis=1)
    # active bounds x_j = b_j(p): c_p = -db/dp
    for name in _BOUND_FAMILIES:
        comp = m.component(name)
        lo, up = bsym[name]
        for s in rows.sigma:
            k = col_of.get(id(comp[s]))
            if k is None or vb[k] == 0.0:
                continue
            b = lo if kkt.act_lo[k] else up
            if b is None or is_number(b):
                continue
            db = _bound_jacobian(b, rows.P, rows.p0)
            if name == "q2" and not kkt.act_lo[k]:     # ub = w_left - offset
                db = -db
            dT += vb[k] * db
    dT_v0 = 0.0
    if v0 is not None:      # the entry speed, a fixed variable: rows of the first point, collocation
        dT_v0 = float(np.asarray(hu_v0)[0, 0]) - float(np.asarray(gv_v0)[0, 0])
        dT_v0 -= _collocation_part(m, v0, {c: vr[row_of[id(c)]] for c in nlp.constraints
                                           if vr[row_of[id(c)]] != 0.0})
    return dT, dT_v0


def _bound_multipliers(m, zl, zu):
    r"""``var -> (z_L, z_U)``, :math:`\partial f^*` over the variable's lower and upper bound.

    From ``ipopt_zL_out`` / ``ipopt_zU_out`` (``lap_ipopt``, the classic ``ipopt``), unless the
    model's ``rc`` (reduced costs, :math:`z_L + z_U`) disagrees with them: Pyomo's
    ``ipopt_v2`` (6.10) returns the bound multipliers of the problem its NL writer scaled
    (``scaling_factor``) but unscaled reduced costs; then the reduced cost is split by sign
    (minimization: positive at a lower bound, negative at an upper one).

    Raises
    ------
    ValueError
        Neither bound multipliers nor reduced costs came back from the solver.
    """
    rc = m.component("rc")
    have_z = len(zl) + len(zu) > 0
    have_rc = rc is not None and len(rc) > 0
    if not have_z and not have_rc:
        raise ValueError("the solver returned no bound multipliers (suffixes ipopt_zL_out, "
                         "ipopt_zU_out or rc): the variables' bounds cannot be counted")
    use_rc = False
    if have_rc:
        diff = scale = 0.0
        for v, r in rc.items():
            z = zl.get(v, 0.0) + zu.get(v, 0.0)
            diff, scale = max(diff, abs(r - z)), max(scale, abs(r))
        use_rc = not have_z or diff > 1e-6 * scale + 1e-12
    if use_rc:
        return lambda v: (max(rc.get(v, 0.0), 0.0), min(rc.get(v, 0.0), 0.0))
    return lambda v: (zl.get(v, 0.0), zu.get(v, 0.0))


def _collocation_part(m, var, dual) -> float:
    r""":math:`\sum_i y_i \partial c_i/\partial x` over pyomo.dae's discretization equations of
    ``var``'s derivative (``d<var>_ds_disc_eq``, and ``<var>_interpolation_constraints`` of a
    Legendre scheme), which are linear; only those of the first two finite elements can hold
    the sector's first point."""
    name = var.parent_component().local_name
    elems = sorted(m.s.get_finite_elements())
    reach = elems[min(2, len(elems) - 1)] + 1e-9
    was_fixed = var.fixed
    var.unfix()
    total = 0.0
    try:
        for cname in (f"d{name}_ds_disc_eq", f"{name}_interpolation_constraints"):
            con = m.component(cname)
            if con is None:
                continue
            for ix, c in con.items():
                s = ix[-1] if isinstance(ix, tuple) else ix
                if not c.active or s > reach:
                    continue
                y = dual.get(c, 0.0)
                if y == 0.0:
                    continue
                repn = generate_standard_repn(c.body, compute_values=True)
                if repn.nonlinear_expr is not None or repn.quadratic_vars:
                    raise NotImplementedError(f"{c.name} is not linear")
                for v, coef in zip(repn.linear_vars, repn.linear_coefs):
                    if v is var:
                        total += y * coef
    finally:
        if was_fixed:
            var.fix()
    return total
