r"""The same NLP built and solved with CasADi, for benchmarks against the other solver paths.

Given a built and initialized pyomo_lap model (or any Pyomo model the fast path can translate),
:func:`build_casadi_nlp` writes the *same* nonlinear program with CasADi symbols and
:func:`solve_casadi` solves it with CasADi's own IPOPT interface (``nlpsol``), which derives
the Jacobian and the Hessian by CasADi's automatic differentiation. "The same" is by
construction: the NLP is taken from :class:`pyomo_lap.solvers.lap.nlp.LapNLP`, the translation of the
fast solver path:

* the decision variables are the model's unfixed variables that a row or the objective depends
  on, with the model's bounds and current values; fixed variables are constants;
* the rows are the model's active constraints: the recorded per-point rows as one CasADi
  function of a point's variables and track numbers (traced from the tape that built the
  Pyomo expressions), ``map``-ped over the points; the linear rows as a sparse matrix; the
  other rows and the objective converted from their Pyomo expressions
  (:func:`pyomo_to_casadi`);
* IPOPT's user-scaling is made explicit: with the model's ``scaling_factor`` suffix
  :math:`d_x, d_g, d_f`, CasADi's IPOPT solves in :math:`\tilde x = d_x x` the problem
  :math:`\min d_f f(\tilde x/d_x)` s.t. :math:`d_g\,g_L \le d_g\,g(\tilde x/d_x) \le d_g\,g_U`,
  :math:`d_x x_L \le \tilde x \le d_x x_U`, with ``nlp_scaling_method = none``: the scaled
  problem IPOPT builds internally from the suffix on the other paths.

The difference from the fast path (:mod:`pyomo_lap.solvers.lap.solver`) is only in who evaluates the
derivatives (CasADi's automatic differentiation of the mapped function here, compiled
per-point Jacobian and Hessian functions there) and in the interface to the same IPOPT 3.14
library.

CasADi is imported only inside the functions of this module.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np
import scipy.sparse

__all__ = ["CasadiNLP", "CasadiSolveReport", "build_casadi_nlp", "solve_casadi",
           "load_solution", "pyomo_to_casadi", "casadi_ipopt_options"]

from .casadi_expr import _casadi, pyomo_to_casadi  # noqa: F401  (pyomo_to_casadi: public here too)
from .lap.checks import evaluate_expression
from .lap.compiled import _point_symbols
from .lap.nlp import LapNLP
from .lap.solver import LAP_IPOPT_OPTIONS

# --------------------------------------------------------------------------------------------
# the NLP
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class CasadiNLP:
    """The NLP as CasADi expressions (scaled), from :func:`build_casadi_nlp`.

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
    sense : int
        1 to minimize, -1 to maximize (``f`` is ``sense`` times the model's objective).
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
    sense: int = 1
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

    def lap_time(self, x) -> float:
        """``m.lap_time`` for unscaled ``x`` (other variables at their values) [s]."""
        saved = [v.value for v in self.variables]
        try:
            for v, val in zip(self.variables, np.asarray(x, dtype=float).tolist()):
                v.set_value(val, skip_validation=True)
            return evaluate_expression(self.model.lap_time)
        finally:
            for v, val in zip(self.variables, saved):
                v.set_value(val, skip_validation=True)

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
        """Unscaled objective of the model at unscaled ``x`` (default: the initial guess)."""
        xs = self.x0 if x is None else self.x_scale * np.asarray(x, dtype=float).ravel()
        return float(self._function("f")(xs)) / self.f_scale * self.sense


def build_casadi_nlp(m, mode: str = "MX", map_parallelization: str = "serial",
                     lap_nlp=None) -> CasadiNLP:
    """Build the CasADi twin of a built and initialized model.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        From :func:`pyomo_lap.ocp.build.build_model`, with values (e.g. from
        :func:`pyomo_lap.ocp.initialize.initialize_model` or a solution).
    mode : {'MX', 'SX'}
        Symbol type of the NLP. With ``'MX'`` the per-point function stays one mapped call in
        the expression graph; with ``'SX'`` it is inlined at every point (small models only).
    map_parallelization : {'serial', 'openmp', 'thread'}
        How the per-point function is mapped over the points (``casadi.Function.map``).
    lap_nlp : pyomo_lap.solvers.lap.nlp.LapNLP, optional
        The translation to use (default: made here, with its per-point functions in CasADi's
        virtual machine; the twin uses only its structure and the uncompiled row function).

    Returns
    -------
    CasadiNLP

    Raises
    ------
    ValueError
        Bad ``mode``; see also :class:`pyomo_lap.solvers.lap.nlp.LapNLP`.
    NotImplementedError
        An expression the translation does not know (named with its constraint).
    """
    ca = _casadi()
    if mode not in ("MX", "SX"):
        raise ValueError(f"mode = {mode!r}: expected 'MX' or 'SX'")
    t0, c0 = time.perf_counter(), time.process_time()
    nlp = lap_nlp if lap_nlp is not None else LapNLP(m, compile="vm")
    n = nlp.n
    x_scale = nlp.x_scaling if nlp.x_scaling is not None else np.ones(n)
    g_scale = nlp.g_scaling if nlp.g_scaling is not None else np.ones(nlp.m)
    f_scale = float(nlp.obj_scaling)
    Sym = ca.SX if mode == "SX" else ca.MX
    y = Sym.sym("x", n)
    x = y * ca.DM(1.0 / x_scale)
    blocks = []
    P = nlp._point
    if P is not None:
        w_, t_, c_, r_ = _point_symbols(P["rec"], P["free"])
        F = ca.Function("point_rows", [w_, t_, c_], [r_])
        N, n_in = P["N"], P["W0"].shape[1]
        W0 = P["W0"].copy()
        W0.ravel()[P["wpos"]] = 0.0
        # the point inputs, (n_in, N): W0 plus the decision variables placed by a 0/1 matrix
        # (W0 is point-major (N, n_in): flattened, it is the column-major (n_in, N))
        place = scipy.sparse.csc_matrix((np.ones(P["wpos"].size), (P["wpos"], P["wx"])),
                                        shape=(n_in * N, n))
        Wflat = ca.DM(W0.ravel()) + ca.mtimes(ca.DM(place), x)
        W = ca.reshape(Wflat, n_in, N)             # CasADi reshapes column-major
        out = F.map(N, map_parallelization)(W, ca.DM(P["T"].T), ca.DM(P["C"].T))
        flat = ca.vec(out)                         # column-major: entry j + n_out * point
        blocks.append(flat[(P["rows_pt"] * P["n_out"] + P["rows_out"]).tolist()])
    if nlp._lin.shape[0]:
        blocks.append(ca.mtimes(ca.DM(nlp._lin.tocsc()), x) + ca.DM(nlp._lin_const))
    xg = x[nlp._gen_ids.tolist()] if nlp._gen_ids.size else Sym(0, 1)
    if nlp._nl_slice.stop > nlp._nl_slice.start:
        blocks.append(nlp._fun_g(xg))
    g = ca.vertcat(*blocks) * ca.DM(g_scale) if blocks else Sym(0, 1)
    f = nlp._fun_f(xg)[0] * f_scale
    out_nlp = CasadiNLP(
        mode=mode, nlp={"x": y, "f": f, "g": g},
        x0=x_scale * nlp.x0, lbx=x_scale * _inf(nlp.x_lb), ubx=x_scale * _inf(nlp.x_ub),
        lbg=g_scale * _inf(nlp.g_lb), ubg=g_scale * _inf(nlp.g_ub), x_scale=x_scale,
        g_scale=g_scale, f_scale=f_scale, variables=list(nlp.variables),
        constraints=list(nlp.constraints), model=m, build_s=0.0, sense=nlp.sense)
    out_nlp.build_s = time.perf_counter() - t0
    out_nlp.build_cpu_s = time.process_time() - c0
    return out_nlp


def _inf(a):
    """LapNLP's +-1e20 bounds as +-inf."""
    a = np.asarray(a, dtype=float).copy()
    a[a <= -1e19] = -np.inf
    a[a >= 1e19] = np.inf
    return a


# --------------------------------------------------------------------------------------------
# solving
# --------------------------------------------------------------------------------------------

def casadi_ipopt_options(options: Optional[dict] = None) -> dict:
    """IPOPT options for the CasADi route: those of the fast path
    (:data:`pyomo_lap.solvers.lap.solver.LAP_IPOPT_OPTIONS`) with ``nlp_scaling_method = none`` (the
    scaling is in the NLP itself), updated by ``options``."""
    opts = dict(LAP_IPOPT_OPTIONS)
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
    n_calls : dict
        Number of calls of each function (``nlp_g``, ``nlp_jac_g``, ``nlp_hess_l`` ...).
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
    n_calls: dict = dataclasses.field(default_factory=dict)


def solve_casadi(nlp: CasadiNLP, options: Optional[dict] = None, tee: bool = False,
                 expand: Optional[bool] = None, x0=None) -> CasadiSolveReport:
    """Solve a :class:`CasadiNLP` with CasADi's IPOPT.

    Parameters
    ----------
    nlp : CasadiNLP
    options : dict, optional
        IPOPT options updating :func:`casadi_ipopt_options` (same meaning as for
        :func:`pyomo_lap.solvers.solve.solve_model`).
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
    n_calls = {k[len("n_call_"):]: int(v) for k, v in st.items()
               if k.startswith("n_call_") and isinstance(v, (int, float))}
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
        lap_time_s=nlp.lap_time(x), objective=float(sol["f"]) / nlp.f_scale * nlp.sense,
        iterations=int(st.get("iter_count", -1)), build_s=nlp.build_s + nlpsol_s,
        build_cpu_s=nlp.build_cpu_s + nlpsol_cpu_s, nlpsol_s=nlpsol_s, solve_s=solve_s,
        solve_cpu_s=solve_cpu_s, t_wall=t_wall, n_calls=n_calls,
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
