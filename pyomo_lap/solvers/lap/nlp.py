r"""A built Pyomo model as the arrays and callbacks of a nonlinear program, evaluated by
compiled CasADi functions.

This is the translation step of the fast solver path (:mod:`pyomo_lap.solvers.lap.solver`). It takes
any Pyomo model with one objective and continuous variables; what it makes fast is the
structure of a pyomo_lap model:

* **recorded rows.** The rows the OCP builder made from its per-point tape
  (:class:`pyomo_lap.ocp.build.PointRows`: the spatial DAE, loads, in-plane equations and path
  constraints at every point) are evaluated by *one* CasADi function of a point's variables,
  the track's numbers and the car's parameters, traced from the same tape that built the
  Pyomo expressions, compiled to machine code (:mod:`pyomo_lap.util.casadi_compile`) and mapped
  over the points; its Jacobian and the Hessian of its Lagrangian are per-point functions too.
  Before it uses them, the translation checks that the model still holds exactly these
  rows: each row's expression object and each named expression ``m.car.*`` must be the one
  the builder made (a row that a user replaced, or whose point has a replaced named
  expression, is translated from its Pyomo expression instead, see below), and at a sample of
  points (every point with ``verify_points="all"``) the Pyomo expressions, evaluated with
  floats at the model's current values, must give the same residuals as the compiled
  function to 1e-9 relative; otherwise :class:`RecordedRowsMismatch` is raised and nothing is
  solved. Before that, each compiled library (rows, Jacobian, Hessian of the Lagrangian) is
  compared with CasADi's virtual machine on the function traced from the same tape at three
  of those points (:meth:`LapNLP._verify_library`); the libraries that differ are removed
  from the cache, compiled again and checked again, and the solve goes on (one warning); if
  a rebuilt library differs still, the functions run in CasADi's virtual machine (a warning
  says so). A library that does not fit its function (other inputs or outputs) is never used
  (:func:`pyomo_lap.util.casadi_compile.signature_problem`).
* **linear rows** of the shapes pyomo.dae's collocation equations and the boundary conditions
  have (sums of variables times numbers): a constant sparse matrix.
* **the objective**, when it is at most quadratic (:mod:`pyomo.repn`'s standard
  representation): a sparse linear and quadratic form.
* **any other row and objective**: walked into CasADi ``SX`` expressions
  (:func:`pyomo_lap.solvers.casadi_expr.pyomo_to_casadi`), differentiated by CasADi. A node the walker
  cannot translate raises :class:`NotImplementedError` that names the constraint.

Fixed variables are constants; a variable enters the NLP only if a row or the objective
depends on it (as Pyomo's NL writer does). Scaling factors come from the model's
``scaling_factor`` suffixes and are handed to IPOPT's user scaling.

Conventions: ``x`` is the vector of unscaled decision variables, ``g(x)`` the unscaled row
bodies with bounds ``g_lb <= g(x) <= g_ub``; the Lagrangian is
:math:`\sigma f(x) + \lambda^T g(x)` (IPOPT's). The Hessian is returned as its lower triangle.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Dict, Optional

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from pyomo.common.dependencies import attempt_import
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.expr.numeric_expr import (
    LinearExpression,
    MonomialTermExpression,
    NegationExpression,
    SumExpression,
)
from pyomo.repn import generate_standard_repn

from ..casadi_expr import pyomo_to_casadi
from . import compiled
from .car_blocks import recorded_rows
from .checks import RowChecks

ca, ca_available = attempt_import("casadi")

__all__ = ["LapNLP", "TranslationReport"]

_INF = 1e20


@dataclasses.dataclass
class TranslationReport:
    """What the translation did (numbers of rows by kind, times [s], checks)."""

    n_variables: int = 0
    n_constraints: int = 0
    n_recorded_rows: int = 0
    n_linear_rows: int = 0
    n_generic_rows: int = 0
    jac_nnz: int = 0
    hess_nnz: int = 0
    translate_s: float = 0.0
    compile_s: float = 0.0
    verify_s: float = 0.0
    compiled: bool = False
    compile_reason: str = ""
    verified_points: int = 0
    max_verify_error: float = 0.0
    library_points: int = 0
    max_library_error: float = 0.0
    library_verify_s: float = 0.0
    fallback: str = ""
    generic_families: Dict[str, int] = dataclasses.field(default_factory=dict)
    eliminated: int = 0
    presolve_s: float = 0.0

    @property
    def evaluation(self) -> str:
        """How the rows were evaluated: ``"compiled"`` (a pyomo_lap car's recorded rows, per-point
        functions compiled to C), ``"recorded"`` (its recorded rows in CasADi's virtual machine,
        when no compiler is found) or ``"translated"`` (every row walked from its Pyomo
        expression)."""
        if not self.n_recorded_rows:
            return "translated"
        return "compiled" if self.compiled else "recorded"


class LapNLP(RowChecks):
    """A Pyomo model as an NLP: bounds, sparsity, and evaluation callbacks (see module doc).

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        Any model with exactly one active objective and continuous variables; a model from
        :func:`pyomo_lap.ocp.build.build_model` gets the compiled per-point evaluation.
    compile : {"auto", "compile", "vm"}
        How the per-point functions run (:func:`pyomo_lap.util.casadi_compile.compile_functions`).
    threads : int, optional
        Threads of the mapped per-point functions (default: the number of CPUs, at most 4).
    verify_points : int or "all"
        Points at which the recorded rows are checked against the Pyomo expressions.

    Attributes
    ----------
    variables : list of VarData
        The decision variables, in the order of ``x``.
    constraints : list of ConstraintData
        The rows, in the order of ``g``: recorded, linear, other.
    x0, x_lb, x_ub : ndarray (n,)
    g_lb, g_ub : ndarray (m,)
    jac_rows, jac_cols : ndarray (nnz_jac,)
    hess_rows, hess_cols : ndarray (nnz_hess,)
        Lower triangle (row >= col).
    x_scaling, g_scaling : ndarray or None
    obj_scaling : float
    sense : int
        1 to minimize, -1 to maximize (the callbacks always minimize ``sense * f``).
    report : TranslationReport

    Raises
    ------
    ValueError
        Not exactly one active objective; a discrete variable; a fixed variable without a
        value.
    NotImplementedError
        A node the translation does not know (named with its constraint).
    RecordedRowsMismatch
        See the module docstring.
    """

    def __init__(self, model, compile: str = "auto", threads: Optional[int] = None,
                 verify_points=8):
        t0 = time.perf_counter()
        self.model = model
        self.report = rep = TranslationReport()
        objs = list(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
        if len(objs) != 1:
            raise ValueError(f"the model has {len(objs)} active objectives; the solver needs exactly one")
        self.pyomo_objective = objs[0]
        self.sense = 1 if objs[0].sense == pyo.minimize else -1
        self._var_index: Dict[int, int] = {}
        self._vars: list = []            # every referenced variable, in the order of x
        rec, recorded, generic = self._split_rows(model)
        self._point = None
        if recorded:
            self._setup_points(rec, recorded, compile, threads or min(4, os.cpu_count() or 1))
        lin, nl = self._translate(generic)
        self._set_variables()
        self._set_rows(recorded, lin, nl)
        self._set_jacobian_structure()
        self._set_hessian_structure()
        self._drop_structure_parts()
        self.x_scaling, self.g_scaling, self.obj_scaling = self._scaling(model)
        rep.n_variables, rep.n_constraints = self.n, self.m
        rep.n_recorded_rows, rep.n_linear_rows = len(recorded), len(lin["cons"])
        rep.n_generic_rows = len(nl["cons"])
        rep.jac_nnz, rep.hess_nnz = int(self.jac_rows.size), int(self.hess_rows.size)
        self._cache_x = None
        if self._point is not None:
            tv = time.perf_counter()
            self._verify(verify_points)
            rep.verify_s = time.perf_counter() - tv
        rep.translate_s = time.perf_counter() - t0 - rep.verify_s

    # ---- translation steps -------------------------------------------------------------------
    def _var_id(self, vd) -> int:
        """Position of variable ``vd`` in ``x`` (registered at its first use)."""
        k = self._var_index.get(id(vd))
        if k is None:
            k = self._var_index[id(vd)] = len(self._vars)
            self._vars.append(vd)
        return k

    def _split_rows(self, model):
        """``(rec, recorded, generic)``: the recorded rows still as built, ``(ConstraintData,
        point, output)``, and the other active rows, counted by family in the report."""
        rep = self.report
        cons = list(model.component_data_objects(pyo.Constraint, active=True, descend_into=True))
        active = {id(c) for c in cons}
        rec, rep.fallback = self._recorded_rows(model)
        recorded = []
        if rec is not None:
            bad_points = rec.changed_named_points()
            recorded = [(c, i, out) for c, ex, i, out in rec.built
                        if id(c) in active and c.expr is ex and i not in bad_points]
            if bad_points:
                rep.fallback = (f"named expressions m.car.* were changed at {len(bad_points)} "
                                "point(s); their rows are translated from their expressions")
        recorded_ids = {id(c) for c, _, _ in recorded}
        generic = [c for c in cons if id(c) not in recorded_ids]
        for c in generic:
            fam = c.parent_component().local_name
            rep.generic_families[fam] = rep.generic_families.get(fam, 0) + 1
        return rec, recorded, generic

    @staticmethod
    def _recorded_rows(model):
        """``(rec, "")`` with the recorded rows (:class:`~pyomo_lap.ocp.point_rows.PointRows`)
        of the pyomo_lap car found in the model's blocks
        (:func:`pyomo_lap.solvers.lap.car_blocks.recorded_rows`: the model itself, or a block of a
        user's model) if they can be used, else ``(None, why)``. With more than one car, the
        first car's rows are compiled and the others' translated."""
        found = recorded_rows(model)
        found = [(owner, rec) for owner, rec in found if getattr(rec, "built", None)]
        if not found:
            return None, ("the model has no recorded rows (no block built by "
                          "pyomo_lap.ocp.build.build_model, or built with the option 'lift'): "
                          "every row is translated from its expression")
        owner, rec = found[0]
        for name, comp in rec.components.items():
            if owner.component(name) is not comp:
                return None, (f"the variable component {name!r} was replaced after the model was "
                              "built: every row is translated from its expression")
        vehicle = owner.component("vehicle")
        for name, var in rec.vehicle_components.items():
            sec, _, key = name.rpartition(".")
            block = (vehicle.component(sec) if sec else vehicle) if vehicle is not None else None
            if block is None or block.component(key) is not var:
                return None, (f"the car's parameter m.vehicle.{name} was replaced after the model "
                              "was built: every row is translated from its expression")
        if len(found) > 1:
            return rec, (f"{len(found)} pyomo_lap cars in the model: the first one's rows are "
                         "compiled, the others' translated from their expressions")
        return rec, ""

    def _translate(self, generic):
        """The rows not taken from the recorded functions and the objective: the linear rows
        of the shapes pyomo.dae writes into a sparse matrix (``lin``), any other row and the
        objective walked into CasADi, which differentiates them (``nl``; :meth:`_set_generic`)."""
        lin = {"rows": [], "cols": [], "vals": [], "const": [], "cons": [], "bounds": []}
        nl = {"cons": [], "bounds": [], "exprs": [], "syms": {}}
        cache: dict = {}

        def leaf(vd):
            if vd.fixed:
                if vd.value is None:
                    raise ValueError(f"fixed variable {vd.name} has no value")
                return float(vd.value)
            k = self._var_id(vd)
            s = nl["syms"].get(k)
            if s is None:
                s = nl["syms"][k] = ca.SX.sym(f"x{k}")
            return s

        for c in generic:
            lo, body, up = c.to_bounded_expression(evaluate_bounds=True)
            terms = _simple_linear(body)
            if terms is not None:
                const, terms = terms
                r = len(lin["cons"])
                for vd, a in terms:
                    if vd.fixed:
                        const += a * float(vd.value)
                    elif a != 0.0:
                        lin["rows"].append(r)
                        lin["cols"].append(self._var_id(vd))
                        lin["vals"].append(a)
                lin["const"].append(const)
                lin["cons"].append(c)
                lin["bounds"].append((lo, up))
                continue
            try:
                nl["exprs"].append(pyomo_to_casadi(body, leaf, cache))
            except NotImplementedError as exc:
                raise NotImplementedError(f"constraint {c.name}: {exc}") from None
            nl["cons"].append(c)
            nl["bounds"].append((lo, up))
        obj = self.pyomo_objective
        quad = _quadratic(obj.expr)
        if quad is not None:
            nl["f"] = _casadi_quadratic(quad, leaf)
        else:
            try:
                nl["f"] = pyomo_to_casadi(obj.expr, leaf, cache)
            except NotImplementedError as exc:
                raise NotImplementedError(f"objective {obj.name}: {exc}") from None
        return lin, nl

    def _set_variables(self) -> None:
        """``variables``, ``n``, ``x0`` (clipped to the bounds), ``x_lb``, ``x_ub``."""
        for vd in self._vars:
            if not vd.is_continuous():
                raise ValueError(f"variable {vd.name} is not continuous ({vd.domain}); the solver "
                                 "solves nonlinear programs in continuous variables only")
            if vd.fixed:     # fixed variables are constants of the functions
                raise AssertionError("internal: a fixed variable was registered")
        self.variables = self._vars
        self.n = len(self._vars)
        bounds = [vd.bounds for vd in self._vars]
        self.x_lb = _bounds([b[0] for b in bounds], -_INF)
        self.x_ub = _bounds([b[1] for b in bounds], _INF)
        x0 = np.array([vd.value if vd.value is not None else 0.0 for vd in self._vars], float)
        self.x0 = np.clip(x0, self.x_lb, self.x_ub)

    def _set_rows(self, recorded, lin, nl) -> None:
        """The rows (recorded, linear, other), their bounds (read from the model: those of the
        recorded rows may be parameters a user changes) and the generic functions."""
        n_rec, n_lin = len(recorded), len(lin["cons"])
        self._lin = sp.csr_matrix((lin["vals"], (lin["rows"], lin["cols"])), shape=(n_lin, self.n))
        self._lin_const = np.array(lin["const"], dtype=float)
        self.constraints = [c for c, _, _ in recorded] + lin["cons"] + nl["cons"]
        self.m = len(self.constraints)
        other = lin["bounds"] + nl["bounds"]
        self.g_lb = _bounds([c.lb for c, _, _ in recorded] + [lo for lo, _ in other], -_INF)
        self.g_ub = _bounds([c.ub for c, _, _ in recorded] + [up for _, up in other], _INF)
        self._rec_slice = slice(0, n_rec)
        self._lin_slice = slice(n_rec, n_rec + n_lin)
        self._nl_slice = slice(n_rec + n_lin, self.m)
        self._set_generic(nl)

    def _set_generic(self, nl) -> None:
        """CasADi functions of the objective and the other rows on the variables they use
        (``_gen_ids``), with their derivatives and sparsity."""
        syms = nl["syms"]
        ids = np.array(sorted(syms), dtype=np.int64)
        xg = ca.vertcat(*[syms[k] for k in ids]) if ids.size else ca.SX(0, 1)
        G = ca.vertcat(*[ca.SX(e) for e in nl["exprs"]]) if nl["exprs"] else ca.SX(0, 1)
        fx = ca.SX(nl["f"]) * self.sense
        lam = ca.SX.sym("lam", G.numel())
        sigma = ca.SX.sym("sigma")
        JG = ca.jacobian(G, xg)
        Hg = ca.tril(ca.hessian(sigma * fx + ca.dot(lam, G), xg)[0])
        self._gen_ids = ids
        self._fun_f = ca.Function("f", [xg], [fx, ca.gradient(fx, xg)])
        self._fun_g = ca.Function("g", [xg], [G])
        self._fun_jg = ca.Function("jg", [xg], [JG.nz[:] if JG.nnz() else ca.SX(0, 1)])
        self._fun_hg = ca.Function("hg", [xg, sigma, lam], [Hg.nz[:] if Hg.nnz() else ca.SX(0, 1)])
        jr, jc = (np.asarray(a, dtype=np.int64) for a in JG.sparsity().get_triplet())
        hr, hc = (np.asarray(a, dtype=np.int64) for a in Hg.sparsity().get_triplet())
        self._jg_rows, self._jg_cols = jr + self._nl_slice.start, ids[jc]
        self._hg_rows, self._hg_cols = ids[hr], ids[hc]

    def _set_jacobian_structure(self) -> None:
        """``jac_rows``, ``jac_cols``: the recorded rows' entries, the linear rows', the others'."""
        lin = self._lin.tocoo()
        parts_r = [lin.row.astype(np.int64) + self._lin_slice.start, self._jg_rows]
        parts_c = [lin.col.astype(np.int64), self._jg_cols]
        n_pj = 0
        if self._point is not None:
            parts_r.insert(0, self._point["jac_rows"])
            parts_c.insert(0, self._point["jac_cols"])
            n_pj = self._point["jac_rows"].size
        self.jac_rows = np.concatenate(parts_r).astype(np.int32)
        self.jac_cols = np.concatenate(parts_c).astype(np.int32)
        self._lin_vals = lin.data.astype(float)
        self._jac_lin = slice(n_pj, n_pj + self._lin_vals.size)
        self._jac_gen = slice(n_pj + self._lin_vals.size, self.jac_rows.size)

    def _set_hessian_structure(self) -> None:
        """``hess_rows``, ``hess_cols``: the lower triangle, the entries of the recorded rows'
        and of the generic function merged (``_hess_dest``: where each value goes)."""
        R = [np.maximum(self._hg_rows, self._hg_cols)]
        C = [np.minimum(self._hg_rows, self._hg_cols)]
        if self._point is not None:
            R.insert(0, self._point["hess_rows"])
            C.insert(0, self._point["hess_cols"])
        n = max(self.n, 1)
        uniq, inv = np.unique(np.concatenate(R) * self.n + np.concatenate(C), return_inverse=True)
        self.hess_rows = (uniq // n).astype(np.int32)
        self.hess_cols = (uniq % n).astype(np.int32)
        self._hess_dest = inv.astype(np.int64)

    def _drop_structure_parts(self) -> None:
        """Free what only the structure's assembly needed: the variables' lookup by ``id``
        and the recorded rows' own index arrays, now in ``jac_rows`` ... (int64 copies: about
        70 MB on a full lap, held through IPOPT's solve otherwise). The evaluation keeps
        ``jac_src``, ``hess_src`` and ``_hess_dest``."""
        self._var_index = None
        if self._point is not None:
            for key in ("jac_rows", "jac_cols", "hess_rows", "hess_cols"):
                self._point.pop(key, None)

    # ---- the recorded rows -------------------------------------------------------------------
    def _setup_points(self, rec, recorded, compile_mode, threads):
        """Per-point functions and the maps between their arrays and the NLP's."""
        tc = time.perf_counter()
        params = [rec.vehicle_components[k] for k in rec.vehicle_inputs]
        for v in params:
            if v.value is None:
                raise ValueError(f"the car's parameter {v.name} has no value")
        free = any(not v.fixed for v in params)
        pf = compiled.point_functions(rec, compile_mode, free=free)
        funs = pf["functions"]
        self.report.compile_s = time.perf_counter() - tc
        self.report.compiled, self.report.compile_reason = funs.compiled, funs.reason
        jr, jc = pf["jac_sparsity"]
        hr, hc = pf["hess_sparsity"]
        n_out, N = pf["n_out"], len(rec.points)
        I_ = np.array([i for _, i, _ in recorded], dtype=np.int64)
        O_ = np.array([o for _, _, o in recorded], dtype=np.int64)
        A = np.zeros((N, n_out), dtype=bool)          # the active recorded rows
        A[I_, O_] = True
        W0, XIDX = self._point_variables(rec, params, free, A, pf)
        dec = np.argwhere(XIDX >= 0)                  # (point, input) of each decision variable
        T = np.ascontiguousarray(rec.track_values, dtype=float)       # (N, 15)
        # the car's parameters, the same at every point (a few dozen: repeated, not broadcast)
        values = np.zeros(0) if free else np.array([float(v.value) for v in params], dtype=float)
        C = np.ascontiguousarray(np.tile(values, (N, 1))).reshape(N, values.size)
        self._point = {
            "W": W0.copy(), "L": np.zeros((N, n_out)), "N": N, "n_out": n_out, "W0": W0, "T": T,
            "wpos": dec[:, 0] * W0.shape[1] + dec[:, 1], "wx": XIDX[dec[:, 0], dec[:, 1]],
            "rows_out": O_, "rows_pt": I_, "points_sampled": np.flatnonzero(A.any(axis=1)),
            "recorded": recorded, "rec": rec, "threads": threads,
            # for the check of the compiled functions (_verify_library) and their rebuild
            "C": C, "free": free, "key": pf.get("key"), "compile_mode": compile_mode,
            "jac_sparsity": (jr, jc), "hess_sparsity": (hr, hc),
        }
        self._bind(funs)
        self._point.update(_jacobian_map(jr, jc, n_out, I_, O_, XIDX))
        self._point.update(_hessian_map(hr, hc, self._point["points_sampled"], XIDX))

    def _bind(self, funs) -> None:
        """Evaluate the points with ``funs`` (``point_f``, ``point_fj``, ``point_h``), mapped
        over the points and bound to the point arrays (:class:`_Buffered`)."""
        P = self._point
        N, threads, n_out = P["N"], P["threads"], P["n_out"]
        W, T, C, L = P["W"], P["T"], P["C"], P["L"]
        jac = np.zeros((N, P["jac_sparsity"][0].size))
        hess = np.zeros((N, P["hess_sparsity"][0].size))
        P["functions"] = funs
        P["F"] = P["FJ"] = P["FH"] = None         # the old libraries' last users go first
        P["F"] = _Buffered(_mapped(funs["point_f"], N, threads), [W, T, C], [np.zeros((N, n_out))])
        P["FJ"] = _Buffered(_mapped(funs["point_fj"], N, threads), [W, T, C],
                            [np.zeros((N, n_out)), jac])
        P["FH"] = _Buffered(_mapped(funs["point_h"], N, threads), [W, T, C, L], [hess])

    def _point_variables(self, rec, params, free, A, pf):
        """``(W0, XIDX)``, (N, n_in) each: the point inputs at the current values and the
        position in ``x`` of each one that is a decision variable a recorded row needs (-1
        for the others). With ``free`` the car's parameters follow the point's variables in
        ``w``: the same value and, when free, the same decision variable at every point (the
        Jacobian has their column in every point's rows; their Hessian entries of all points
        are summed)."""
        jr, jc = pf["jac_sparsity"]
        N, n_in = A.shape[0], pf["n_in"]
        S = np.zeros((pf["n_out"], n_in), dtype=np.int64)
        S[jr, jc] = 1
        needed = (A.astype(np.int64) @ S) > 0              # (N, n_in)
        comps = [rec.components[name] for name in rec.variables]
        W0 = np.zeros((N, n_in))        # point-major: CasADi's column-major (n_in, N)
        XIDX = np.full((N, n_in), -1, dtype=np.int64)
        if free:
            nw = len(comps)
            for j, v in enumerate(params):
                W0[:, nw + j] = float(v.value)
                if not v.fixed:
                    XIDX[needed[:, nw + j], nw + j] = self._var_id(v)
        for k, comp in enumerate(comps):
            for i, vd in enumerate(_entries_at(comp, rec.points)):
                if vd.value is not None:
                    W0[i, k] = vd.value
                if needed[i, k]:
                    if not vd.fixed:
                        XIDX[i, k] = self._var_id(vd)
                    elif vd.value is None:
                        raise ValueError(f"fixed variable {vd.name} has no value")
        return W0, XIDX

    def _scaling(self, model):
        """``(x_scaling, g_scaling, obj_scaling)`` from the ``scaling_factor`` suffixes.

        A component's own factor, else its parent component's, else 1; ``(None, None, 1.0)``
        without any. (:class:`pyomo.core.base.suffix.SuffixFinder` does the same lookup, at
        twice the time on the default job.)"""
        factors = {}
        for suf in model.component_data_objects(pyo.Suffix, active=True, descend_into=True):
            if suf.local_name == "scaling_factor":
                for comp, v in suf.items():
                    factors[id(comp)] = v
        if not factors:
            return None, None, 1.0

        def get(objs):
            fget = factors.get
            vals = [fget(id(o)) for o in objs]
            for k, v in enumerate(vals):
                if v is None:
                    vals[k] = fget(id(objs[k].parent_component()), 1.0)
            arr = np.array(vals, dtype=float)
            bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))
            if bad.size:
                raise ValueError(f"scaling_factor of {objs[bad[0]].name} is {vals[bad[0]]!r}; "
                                 "expected a finite number > 0")
            return arr
        return (get(self.variables), get(self.constraints),
                float(get([self.pyomo_objective])[0]))

    # ---- evaluation --------------------------------------------------------------------------
    def _point_inputs(self, x):
        """Write the point inputs of ``x`` into the bound buffer ``W`` (N, n_in)."""
        P = self._point
        W = P["W"]
        W[...] = P["W0"]
        W.ravel()[P["wpos"]] = x[P["wx"]]
        return W

    def _point_eval(self, x, jacobian: bool = False):
        """Row values (N, n_out) and, with ``jacobian``, Jacobian values (N, nnz) of the
        point function at ``x`` (views of the bound buffers); the last point's results are
        kept (IPOPT asks for the rows and then the Jacobian at the same point; at trial points
        of its line search, only the rows)."""
        same = self._cache_x is not None and np.array_equal(x, self._cache_x)
        if same and (not jacobian or self._cache[1] is not None):
            return self._cache
        P = self._point
        self._point_inputs(x)
        self._cache = tuple(P["FJ"]()) if jacobian else (P["F"]()[0], None)
        self._cache_x = np.array(x, copy=True)
        return self._cache

    def _gen(self, x):
        return x[self._gen_ids]

    def objective(self, x) -> float:
        """``sense * f(x)``."""
        return float(self._fun_f(self._gen(x))[0])

    def gradient(self, x, out) -> None:
        """Gradient of ``sense * f`` into ``out`` (n,)."""
        out[:] = 0.0
        if self._gen_ids.size:
            out[self._gen_ids] = np.asarray(self._fun_f(self._gen(x))[1]).ravel()

    def constraints_eval(self, x, out) -> None:
        """``g(x)`` into ``out`` (m,)."""
        if self._point is not None:
            o, _ = self._point_eval(x)
            out[self._rec_slice] = o[self._point["rows_pt"], self._point["rows_out"]]
        out[self._lin_slice] = self._lin @ x + self._lin_const
        if self._nl_slice.stop > self._nl_slice.start:
            out[self._nl_slice] = np.asarray(self._fun_g(self._gen(x))).ravel()

    def jacobian(self, x, out) -> None:
        """Values of the Jacobian entries (``jac_rows``, ``jac_cols``) into ``out``."""
        if self._point is not None:
            _, j = self._point_eval(x, jacobian=True)
            src = self._point["jac_src"]
            out[:src.size] = j.ravel()[src]
        out[self._jac_lin] = self._lin_vals
        if self._jac_gen.stop > self._jac_gen.start:
            out[self._jac_gen] = np.asarray(self._fun_jg(self._gen(x))).ravel()

    def hessian(self, x, obj_factor, lam, out) -> None:
        r"""Values of the lower-triangle entries of :math:`\sigma \nabla^2 f + \sum \lambda_i
        \nabla^2 g_i` (``hess_rows``, ``hess_cols``) into ``out``."""
        parts = []
        if self._point is not None:
            P = self._point
            P["L"][P["rows_pt"], P["rows_out"]] = lam[self._rec_slice]
            self._point_inputs(x)
            parts.append(P["FH"]()[0].ravel()[P["hess_src"]])
            self._cache_x = None      # W was rewritten
        parts.append(np.asarray(self._fun_hg(self._gen(x), obj_factor, lam[self._nl_slice])).ravel())
        vals = np.concatenate(parts) if len(parts) > 1 else parts[0]
        out[:] = np.bincount(self._hess_dest, weights=vals, minlength=out.size)

    # ------------------------------------------------------------------------------------------
    @property
    def full(self):
        """The problem itself (:class:`ReducedNLP` has a reduced one)."""
        return self

    def full_x(self, x) -> np.ndarray:
        """``x`` itself, as floats (the values of every variable)."""
        return np.asarray(x, dtype=float)

    def full_multipliers(self, x, mult_g, mult_x_L, mult_x_U):
        """``(x, mult_g, mult_x_L, mult_x_U)`` unchanged (see :meth:`ReducedNLP.full_multipliers`)."""
        return np.asarray(x, dtype=float), mult_g, mult_x_L, mult_x_U

    def load(self, x, mult_g=None, mult_x_L=None, mult_x_U=None) -> None:
        """Write a solution into the model's variables."""
        for vd, v in zip(self.variables, np.asarray(x, dtype=float).tolist()):
            vd.set_value(v, skip_validation=True)


def _entries_at(comp, points) -> list:
    """The entries of a component indexed by the points ``s`` at ``points``, in that order: its
    items as they are when they are exactly those points in that order (no lookup per point;
    5400 points x 30 variables on a lap), else one lookup per point."""
    if len(comp) == len(points):
        keys, entries = zip(*comp.items()) if len(points) else ((), ())
        if list(keys) == list(points):
            return list(entries)
    return [comp[s] for s in points]


def _jacobian_map(jr, jc, n_out, I_, O_, XIDX) -> dict:
    """``jac_rows``, ``jac_cols`` of the recorded rows' Jacobian entries in the NLP and
    ``jac_src``, their positions in the mapped function's (N, nnz) values: the entries of
    output ``O_[r]`` at point ``I_[r]`` in the columns of decision variables."""
    order = np.argsort(jr, kind="stable")
    ptr = np.searchsorted(jr[order], np.arange(n_out + 1))
    counts = ptr[O_ + 1] - ptr[O_]
    rep_r = np.repeat(np.arange(O_.size, dtype=np.int64), counts)
    rep_i = np.repeat(I_, counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    e = order[np.repeat(ptr[O_], counts) + within]            # entry of the Jacobian's values
    xcol = XIDX[rep_i, jc[e]]
    keep = xcol >= 0
    return {"jac_rows": rep_r[keep], "jac_cols": xcol[keep], "jac_src": (rep_i * jr.size + e)[keep]}


def _hessian_map(hr, hc, pts, XIDX) -> dict:
    """``hess_rows``, ``hess_cols`` (lower triangle) of the Hessian entries of every point with
    a recorded row that fall on two decision variables, and ``hess_src``, their positions in
    the mapped function's (N, nnz) values."""
    P = np.repeat(pts, hr.size)
    E = np.tile(np.arange(hr.size), pts.size)
    xa, xb = XIDX[P, hr[E]], XIDX[P, hc[E]]
    keep = (xa >= 0) & (xb >= 0)
    return {"hess_rows": np.maximum(xa, xb)[keep], "hess_cols": np.minimum(xa, xb)[keep],
            "hess_src": (P * hr.size + E)[keep]}


class _Buffered:
    """A CasADi function bound to NumPy arrays (``casadi.Function.buffer``): a call writes the
    results straight into the output arrays, with no conversion (converting a mapped
    function's (279, 4147) result to NumPy took 67 ms, the evaluation itself 9 ms). The
    arrays are point-major (N, n) C-ordered: CasADi's column-major (n, N); a sparse output's
    array holds its nonzeros."""

    def __init__(self, f, inputs, outputs):
        self._buf, self._eval = f.buffer()
        self.inputs, self.outputs = inputs, outputs
        for k, a in enumerate(inputs):
            assert a.flags.c_contiguous and a.dtype == np.float64
            self._buf.set_arg(k, memoryview(a.reshape(-1)))
        for k, a in enumerate(outputs):
            assert a.flags.c_contiguous and a.dtype == np.float64
            self._buf.set_res(k, memoryview(a.reshape(-1)))

    def __call__(self):
        self._eval()
        return self.outputs


def _mapped(f, n: int, threads: int):
    """``f`` mapped over ``n`` points, on ``threads`` threads when more than one."""
    return f.map(n, "thread", threads) if threads > 1 else f.map(n)


def _bounds(values, default) -> np.ndarray:
    """The bounds ``values`` (None -> ``default``) as an array, clipped to +-1e20."""
    a = np.array([default if b is None else b for b in values], dtype=float)
    return np.clip(a, -_INF, _INF)


def _quadratic(expr):
    """``(constant, [(var, a)], [((var_i, var_j), q)])`` with ``expr = constant + sum a x +
    sum q x_i x_j`` for an expression of degree at most 2 in the unfixed variables, else
    None: :func:`pyomo.repn.generate_standard_repn` (parameters and fixed variables at their
    values).

    The objectives of :func:`pyomo_lap.ocp.build.add_objective` are of this shape; translated as
    sparse vectors, they cost a few products instead of a CasADi call per node of the Pyomo
    expression (70 ms on the default job).
    """
    try:
        repn = generate_standard_repn(expr, quadratic=True, compute_values=True)
    except Exception:       # noqa: BLE001 - the general translation says what is wrong
        return None
    if repn.nonlinear_expr is not None:
        return None
    return (float(repn.constant), list(zip(repn.linear_vars, map(float, repn.linear_coefs))),
            list(zip(repn.quadratic_vars, map(float, repn.quadratic_coefs))))


def _casadi_quadratic(quad, leaf):
    """The CasADi expression of a :func:`_quadratic` result, ``c + a^T X + X^T Q X`` on the
    symbols ``X`` of ``leaf(var)``, with two sparse products (a product of two symbols per
    term costs five times as long)."""
    c, lin, quadratic = quad
    pos: Dict[int, int] = {}
    syms = []
    for v in [v for v, _ in lin] + [v for pair, _ in quadratic for v in pair]:
        if id(v) not in pos:
            pos[id(v)] = len(syms)
            syms.append(leaf(v))
    if not syms:
        return ca.SX(c)
    X = ca.vertcat(*syms)
    a = np.zeros(len(syms))
    np.add.at(a, [pos[id(v)] for v, _ in lin], [coef for _, coef in lin])
    f = c + ca.dot(ca.DM(a), X)
    if quadratic:
        Q = ca.DM.triplet([pos[id(vi)] for (vi, _), _ in quadratic],
                          [pos[id(vj)] for (_, vj), _ in quadratic],
                          ca.DM([q for _, q in quadratic]), len(syms), len(syms))
        f = f + ca.dot(X, ca.mtimes(Q, X))
    return f


def _simple_linear(body):
    """``(constant, [(var, coef)])`` for the shapes pyomo.dae writes, else None.

    The shapes: a variable, a monomial, a LinearExpression, a sum of these and numbers.
    (Measured on the default job's 6720 collocation rows: 28 ms,
    :func:`pyomo.repn.generate_standard_repn` 63 ms.)"""
    const = 0.0
    terms = []
    stack = [(body, 1.0)]
    while stack:
        e, a = stack.pop()
        t = type(e)
        if t in native_numeric_types:
            const += a * e
        elif t is MonomialTermExpression:
            c, v = e.args
            if type(c) not in native_numeric_types or v.is_expression_type():
                return None
            terms.append((v, a * c))
        elif t is LinearExpression or t is SumExpression:
            stack.extend((arg, a) for arg in e.args)
        elif t is NegationExpression:
            stack.append((e.args[0], -a))
        elif not e.is_expression_type() and e.is_variable_type():
            terms.append((e, a))
        else:
            return None
    return const, terms
