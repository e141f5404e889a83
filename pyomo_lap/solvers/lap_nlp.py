r"""A built Pyomo model as the arrays and callbacks of a nonlinear program, evaluated by
compiled CasADi functions.

This is the translation step of the fast solver path (:mod:`pyomo_lap.solvers.lap_solver`). It takes
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

import contextlib
import dataclasses
import math
import os
import threading
import time
import warnings
from typing import Dict, Optional

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.expr.numeric_expr import (LinearExpression, MonomialTermExpression,
                                          NegationExpression, SumExpression)

__all__ = ["LapNLP", "ReducedNLP", "RecordedRowsMismatch", "CompiledLibraryMismatch",
           "evaluate_expression", "point_functions", "prefetch_point_functions",
           "point_functions_cached"]

_INF = 1e20

LIBRARY_TOLERANCE = 1e-7
"""Largest relative difference accepted between a compiled point function and CasADi's
virtual machine on the same function, before a solve. Measured: below 1e-13 for the rows and
their derivatives of the default job; up to 6e-9 for the Hessian of the setup optimization
(the car's parameters free: sums of many terms that cancel, evaluated in another order by the
compiled code); a library with constants changed by 5 % differs by 1e-2."""

ROWS_TOLERANCE = 1e-9
"""Largest relative difference accepted between a recorded row and its Pyomo expression."""

_POINT_FUNCTIONS = ("point_f", "point_fj", "point_h")


class RecordedRowsMismatch(RuntimeError):
    """The model's expressions and the recorded rows give different residuals: the fast
    path refuses to solve (the message names the row, the point and both values)."""


class CompiledLibraryMismatch(RecordedRowsMismatch):
    """A compiled library of the per-point functions does not compute what the function it
    was compiled from computes (CasADi's virtual machine on the function traced from the same
    tape). Kept for code that catches it: :class:`LapNLP` no longer raises it (a library that
    differs is rebuilt in the same run, and CasADi's virtual machine is used when the rebuilt
    one differs still).

    Attributes
    ----------
    library : Path
        The removed library.
    explanation, hint : str
        What happened and what to do, in words (:class:`pyomo_lap.solvers.solve.SolveReport`).
    """

    def __init__(self, message: str, library=None):
        super().__init__(message)
        self.library = library
        self.explanation = message
        self.hint = ("run again: the library is compiled anew on the next run; if this happens "
                     "again, solve without compiled code (--solver-option compile=vm; Python: "
                     "solver_options={'compile': 'vm'}) and report it")


def evaluate_expression(expr, memo: Optional[dict] = None) -> float:
    """Value of a Pyomo expression (or variable, parameter, number) at the current variable
    values, visiting each node of the expression DAG once: ``pyomo.environ.value`` re-walks a
    named expression, or a subexpression object shared by several parents, at every use,
    which costs exponential time on the nested expressions of the car.
    (:func:`pyomo_lap.solvers.casadi_expr.pyomo_to_casadi` with :mod:`math`'s functions;
    ``memo``: ``id(node) -> (node, value)``, shared between calls at the same values.) Raises
    ``ValueError`` for a variable without a value."""
    from .casadi_expr import pyomo_to_casadi

    def leaf(v):
        if v.value is None:
            raise ValueError(f"{v.name} has no value")
        return float(v.value)
    return float(pyomo_to_casadi(expr, leaf, {} if memo is None else memo, functions=math))


# --------------------------------------------------------------------------------------------
# the per-point functions, compiled (in the background while the model is built)
# --------------------------------------------------------------------------------------------

def point_functions(rec, compile_mode: str = "auto", quiet: bool = False,
                    free: bool = False, on_compile=None) -> dict:
    r"""The per-point functions of recorded rows (:class:`pyomo_lap.ocp.build.PointRows`), compiled.

    ``point_f(w, track, vehicle) -> rows``, ``point_fj(w, track, vehicle) -> (rows, Jacobian)``
    and ``point_h(w, track, vehicle, lam) -> lower triangle of``
    :math:`\sum_j \lambda_j \nabla^2_w r_j` (sparse outputs), the derivatives by CasADi's
    automatic differentiation of the function traced from the tape
    (:meth:`pyomo_lap.ocp.point_rows.PointRows.casadi_function`). ``vehicle`` are the car's
    parameters (:meth:`~pyomo_lap.ocp.point_rows.PointRows.vehicle_values`): an argument, not
    constants of the code, so the compiled libraries, cached under a hash of the tape
    (:meth:`~pyomo_lap.ocp.point_rows.PointRows.structure_key`), serve every car of the model.
    With ``free`` (the setup optimization: some of the car's parameters are decision
    variables) ``w`` is the point's variables followed by the car's parameters, the
    derivatives are taken with respect to both, and ``vehicle`` is empty.

    A cache entry is used only when every library passes
    :func:`~pyomo_lap.util.casadi_compile.check_file`; otherwise the functions are traced and
    :func:`~pyomo_lap.util.casadi_compile.compile_functions` removes a damaged, foreign or
    mismatching library and builds it again (under the entry's lock, with a warning once).

    Parameters
    ----------
    rec : PointRows
    compile_mode : {"auto", "compile", "vm"}
        As :func:`pyomo_lap.util.casadi_compile.compile_functions`.
    quiet : bool
        No warning when the functions fall back to CasADi's virtual machine.
    on_compile : callable, optional
        Called (no arguments) when the cache has no libraries for ``rec`` and they are about
        to be compiled.

    Returns
    -------
    dict
        ``functions`` (:class:`pyomo_lap.util.casadi_compile.CompiledFunctions`), ``n_in``,
        ``n_out``, ``jac_sparsity`` and ``hess_sparsity`` (row and column index arrays of the
        Jacobian and of the Hessian's lower triangle), ``free``, ``key`` (the cache key, None
        without a compiler).
    """
    from ..util.casadi_compile import cached_functions, find_compiler, signature
    cc = find_compiler() if compile_mode != "vm" else None
    key = functions = None
    if cc is not None:
        key = _point_key(rec, free, cc)
        shapes = _SIGNATURES.get(key)
        if shapes is None:       # the inputs and outputs each library must have
            functions = _symbolic_point_functions(rec, free)
            shapes = {f.name(): signature(f) for f in functions}
            with _SIGNATURES_LOCK:
                if len(_SIGNATURES) >= 64:
                    _SIGNATURES.clear()
                _SIGNATURES[key] = shapes
        funs = cached_functions("pyomo_lap_point", _POINT_FUNCTIONS, key, reference=shapes)
        if funs is not None:
            return _described(funs, key, free)
        if on_compile is not None:
            on_compile()
    from ..util.casadi_compile import compile_functions
    return _described(compile_functions(functions or _symbolic_point_functions(rec, free),
                                        "pyomo_lap_point", mode=compile_mode, key=key,
                                        quiet=quiet), key, free)


_SIGNATURES: Dict[str, dict] = {}
"""``cache key -> {function name -> signature}`` of the point functions
(:func:`pyomo_lap.util.casadi_compile.signature`: plain tuples, shared by threads)."""
_SIGNATURES_LOCK = threading.Lock()


def _point_symbols(rec, free: bool):
    """``(w, t, c, out)``: the SX arguments of the point functions and the rows; with ``free``
    ``w`` holds the point's variables and the car's parameters and ``c`` is empty."""
    import casadi as ca
    F = rec.casadi_function("point_rows")
    nw, nt, nv = F.size1_in(0), F.size1_in(1), F.size1_in(2)
    t = ca.SX.sym("t", nt)
    if free:
        w = ca.SX.sym("w", nw + nv)
        c = ca.SX.sym("c", 0)
        out = F(w[:nw], t, w[nw:])
    else:
        w = ca.SX.sym("w", nw)
        c = ca.SX.sym("c", nv)
        out = F(w, t, c)
    return w, t, c, out


def _symbolic_point_functions(rec, free=False) -> list:
    """The point functions ``point_f``, ``point_fj``, ``point_h`` of :func:`point_functions`
    as CasADi SX functions (traced and differentiated here, not compiled)."""
    import casadi as ca
    w, t, c, out = _point_symbols(rec, free)
    lam = ca.SX.sym("lam", out.numel())
    H = ca.tril(ca.hessian(ca.dot(lam, out), w)[0])
    return [ca.Function("point_f", [w, t, c], [out]),
            ca.Function("point_fj", [w, t, c], [out, ca.jacobian(out, w)]),
            ca.Function("point_h", [w, t, c, lam], [H])]


def _described(funs, key, free) -> dict:
    """:func:`point_functions`'s answer for the functions ``funs``."""
    fj = funs["point_fj"]
    jr, jc = (np.asarray(a, dtype=np.int64) for a in fj.sparsity_out(1).get_triplet())
    hr, hc = (np.asarray(a, dtype=np.int64) for a in funs["point_h"].sparsity_out(0).get_triplet())
    return {"functions": funs, "n_in": fj.size1_in(0), "n_out": fj.size1_out(0),
            "jac_sparsity": (jr, jc), "hess_sparsity": (hr, hc), "free": free, "key": key}


def prefetch_point_functions(record):
    """Compile, in a background thread, the per-point functions of recorded rows, so that the
    C compiler runs while Pyomo builds the model (the solve then finds the libraries in the
    cache). The libraries serve every car of the same structure (:func:`point_functions`):
    after the first car of a sweep nothing is compiled. Nothing happens without a C compiler,
    or without rows (``record`` None: a model whose rows are not recorded, such as the
    point-mass example).

    Parameters
    ----------
    record : callable or None
        ``record() -> PointRows``, called in the thread: the rows the build will record
        (:func:`pyomo_lap.ocp.build.point_rows_recorder`, which knows the models).

    Returns
    -------
    threading.Thread or None
    """
    import threading

    from ..util.casadi_compile import find_compiler
    if find_compiler() is None or record is None:
        return None

    def work():
        # quiet: a fall-back to the virtual machine is reported by the solve; the warnings
        # about damaged cache files are given here (the entry is repaired here, once)
        try:
            t0 = time.perf_counter()
            point_functions(record(), "auto", quiet=True,
                            on_compile=lambda: setattr(thread, "compiling", True))
            if thread.compiling:
                thread.compile_s = time.perf_counter() - t0
            else:
                thread.compiling = False
        except Exception:   # the solve will compile (and report) for itself
            pass

    thread = threading.Thread(target=work, name="pyomo_lap-compile", daemon=True)
    thread.compiling, thread.compile_s = None, None   # set by the thread: a cache miss, seconds
    thread.start()
    return thread


def point_functions_cached(rec, free: bool = False) -> bool:
    """Whether :func:`point_functions` finds the compiled libraries of ``rec`` in the cache
    (False without a C compiler: nothing is compiled then)."""
    from ..util.casadi_compile import cached_functions, find_compiler
    cc = find_compiler()
    return cc is not None and cached_functions("pyomo_lap_point", _POINT_FUNCTIONS,
                                               _point_key(rec, free, cc)) is not None


def _point_key(rec, free: bool, cc: str) -> str:
    """The cache key of the point functions of ``rec``: the rows' structure, ``free``, the
    compiler, its flags and CasADi's version."""
    import casadi as ca

    from ..util.casadi_compile import COMPILER_FLAGS
    return rec.structure_key(f"vehicle-v3 free={free} {cc} {' '.join(COMPILER_FLAGS)} "
                             f"{ca.__version__}")


# --------------------------------------------------------------------------------------------
# the NLP
# --------------------------------------------------------------------------------------------

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


class LapNLP:
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
        (:func:`pyomo_lap.solvers.car_blocks.recorded_rows`: the model itself, or a block of a
        user's model) if they can be used, else ``(None, why)``. With more than one car, the
        first car's rows are compiled and the others' translated."""
        from .car_blocks import recorded_rows
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
        import casadi as ca

        from .casadi_expr import pyomo_to_casadi
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
        import casadi as ca
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
        pf = point_functions(rec, compile_mode, free=free)
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

    # ---- the checks before a solve -----------------------------------------------------------
    def _verify(self, verify_points) -> None:
        """The check before a solve, at the current values of the variables (not clipped to
        their bounds): first every compiled per-point function against CasADi's virtual
        machine (:meth:`_check_libraries`: a damaged or replaced library is rebuilt, or
        CasADi's virtual machine used); then the recorded rows against the Pyomo
        expressions at a sample of points (:class:`RecordedRowsMismatch`), both with
        :func:`_first_mismatch`."""
        P = self._point
        pts = P["points_sampled"]
        if verify_points != "all":
            k = max(2, int(verify_points))
            pts = np.unique(pts[np.linspace(0, pts.size - 1, min(k, pts.size)).round().astype(int)])
        cur = np.array([vd.value if vd.value is not None else 0.0 for vd in self.variables], float)
        self._point_inputs(cur)
        if P["functions"].compiled:
            tl = time.perf_counter()
            # three of the sampled points (the first, the middle one, the last), or all of them
            self._check_libraries(pts if verify_points == "all"
                                  else pts[np.unique([0, pts.size // 2, pts.size - 1])])
            self.report.library_verify_s = time.perf_counter() - tl
        out = P["F"]()[0]
        self._cache_x = None
        sample = set(pts.tolist())
        rows = sorted(((i, r) for r, (_, i, _) in enumerate(P["recorded"]) if i in sample),
                      key=lambda ir: ir[0])
        r = np.array([r for _, r in rows], dtype=np.int64)
        memo: dict = {}
        want = np.array([evaluate_expression(P["recorded"][k][0].body, memo) for k in r.tolist()])
        got = out[P["rows_pt"][r], P["rows_out"][r]]
        typical = 1.0 / self.g_scaling[r] if self.g_scaling is not None else np.ones(r.size)
        worst, k = _first_mismatch(got, want, typical, ROWS_TOLERANCE)
        if k is not None:
            raise RecordedRowsMismatch(
                f"row {P['recorded'][r[k]][0].name}: the model's expression gives "
                f"{float(want[k])!r}, the recorded rows {float(got[k])!r} (relative difference "
                f"{_relative_difference(got, want, typical)[k]:.2e} > 1e-9) at the "
                "current values; the fast path will not solve a model it cannot reproduce (solve "
                "with the 'ipopt' solver, or rebuild the model)")
        self.report.verified_points = int(len(pts))
        self.report.max_verify_error = worst

    def _verify_library(self, points) -> dict:
        r"""Compare the compiled point functions with CasADi's virtual machine.

        The compiled ``point_f``, ``point_fj`` and ``point_h`` against the function traced
        from the same tape
        (:func:`_reference_function`) at ``points``, at the current values of the variables
        (already in ``W``):

        * the rows of ``point_f`` and of ``point_fj``;
        * the Jacobian of ``point_fj`` times a random vector :math:`v`, against the
          directional derivative :math:`J v` by CasADi's forward mode;
        * the Hessian of the Lagrangian :math:`\sum_j \lambda_j \nabla^2 r_j` of ``point_h``
          (lower triangle, made symmetric) times :math:`v`, with random multipliers
          :math:`\lambda`, against forward-over-reverse mode.

        The differences are relative to the magnitude of the terms (:math:`\sum_j |J_{ij}
        v_j|`, :math:`\sum_j |J_{ij} w_j|` for the rows) and must be at most
        :data:`LIBRARY_TOLERANCE`; a random direction sees a changed entry of :math:`J` or
        :math:`H` with probability one. Every library is checked (none is skipped after a
        difference); the answer is ``function name -> the first difference, in words`` of
        those that differ (empty when none does). Cost on the default job: 25-30 ms for
        the first solve of a process (the trace 20 ms, the derivatives 5 ms, three evaluations
        2 ms), 2-3 ms for a later solve of the same structure (the traced function is kept);
        the differences found on the default job are below 1e-13.
        """
        P = self._point
        funs = P["functions"]
        ref = _reference_function(P["rec"], P["key"], P["free"])
        jr, jc = P["jac_sparsity"]
        hr, hc = P["hess_sparsity"]
        n_in, n_out = P["W"].shape[1], P["n_out"]
        off = hr != hc
        rng = np.random.default_rng(23)
        worst, found = 0.0, {}

        def dense(a):
            return np.asarray(a, dtype=float).ravel()
        for i in np.asarray(points).tolist():
            w, t, lit = P["W"][i].copy(), P["T"][i].copy(), P["C"][i].copy()
            v = rng.uniform(0.5, 1.0, n_in) * rng.choice((-1.0, 1.0), n_in) * np.maximum(np.abs(w), 1.0)
            lam = rng.uniform(0.5, 1.0, n_out) * rng.choice((-1.0, 1.0), n_out)
            r_ref, jv_ref, hv_ref = (dense(a) for a in ref(w, t, lit, lam, v))
            f = dense(funs["point_f"](w, t, lit))
            r, jval = funs["point_fj"](w, t, lit)
            r, jval = dense(r), np.asarray(jval.nonzeros(), dtype=float)
            hval = np.asarray(funs["point_h"](w, t, lit, lam).nonzeros(), dtype=float)
            with np.errstate(all="ignore"):
                jv = np.bincount(jr, weights=jval * v[jc], minlength=n_out)
                jv_s = np.bincount(jr, weights=np.abs(jval * v[jc]), minlength=n_out)
                rows_s = np.bincount(jr, weights=np.abs(jval * w[jc]), minlength=n_out)
                hv = (np.bincount(hr, weights=hval * v[hc], minlength=n_in)
                      + np.bincount(hc[off], weights=hval[off] * v[hr[off]], minlength=n_in))
                hv_s = (np.bincount(hr, weights=np.abs(hval * v[hc]), minlength=n_in)
                        + np.bincount(hc[off], weights=np.abs(hval[off] * v[hr[off]]), minlength=n_in))
            for name, what, got, want, scale in (
                    ("point_f", "row", f, r_ref, rows_s),
                    ("point_fj", "row", r, r_ref, rows_s),
                    ("point_fj", "Jacobian times a random vector, entry", jv, jv_ref, jv_s),
                    ("point_h", "Hessian of the Lagrangian (random multipliers) times a random "
                                "vector, entry", hv, hv_ref, hv_s)):
                err, k = _first_mismatch(got, want, scale, LIBRARY_TOLERANCE)
                if k is not None and name not in found:
                    found[name] = _mismatch_words(name, what, k, got, want, scale,
                                                  P["rec"].points[i])
                worst = max(worst, err)
        self.report.library_points = len(points)
        self.report.max_library_error = worst
        return found

    def _check_libraries(self, points) -> None:
        """The compiled point functions against CasADi's virtual machine
        (:meth:`_verify_library`). The libraries that differ are removed from the cache and
        said so in one warning (:func:`pyomo_lap.util.casadi_compile.discard_damaged`),
        compiled again (:func:`point_functions`) and checked again; if a rebuilt one differs
        still (or cannot be rebuilt), the points are evaluated in CasADi's virtual machine and
        a warning says so. Never more than one rebuild."""
        from ..util.casadi_compile import discard_damaged
        P = self._point
        for attempt in (0, 1):
            found = self._verify_library(points)
            if not found:
                return
            funs = P["functions"]
            problems = {funs.paths[n]: why for n, why in found.items() if n in funs.paths}
            with contextlib.suppress(OSError):       # a read-only cache: the check below
                discard_damaged(problems, entry=f"pyomo_lap_point-{P['key']}")
            if attempt == 0:
                tc = time.perf_counter()
                pf = point_functions(P["rec"], P["compile_mode"], free=P["free"])
                self.report.compile_s += time.perf_counter() - tc
                if not pf["functions"].compiled:       # compiling failed: it said why
                    self._use_vm(pf["functions"], pf["functions"].reason)
                    return
                if _same_sparsity(pf, P):
                    self._bind(pf["functions"])
                    continue
            break
        detail = "; ".join(f"{lib.name}: {why}" for lib, why in problems.items())
        reason = f"the compiled libraries differ from the model's functions after a rebuild ({detail})"
        warnings.warn(f"pyomo_lap: {reason}; the model functions run in CasADi's virtual "
                      "machine (slower)", RuntimeWarning, stacklevel=4)
        self._use_vm(_vm_point_functions(P["rec"], P["free"]), reason)

    def _use_vm(self, funs, reason: str) -> None:
        """Evaluate the points in CasADi's virtual machine with ``funs`` (not compiled),
        ``reason`` saying why."""
        funs.reason = reason
        self._bind(funs)
        self.report.compiled, self.report.compile_reason = False, reason

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


_REFERENCE: Dict[str, object] = {}


def _reference_function(rec, key, free=False):
    """``(w, track, vehicle, lam, v) -> (rows, J v, (sum_j lam_j Hess r_j) v)``: the
    function traced from the tape (:meth:`pyomo_lap.ocp.build.PointRows.casadi_function`) with
    its directional derivatives by CasADi's automatic differentiation (forward, and forward
    over reverse), evaluated in CasADi's virtual machine (never compiled); kept per cache key
    in this process (the same key, the same function)."""
    import casadi as ca
    found = _REFERENCE.get(key) if key is not None else None
    if found is not None:
        return found
    w, t, c, out = _point_symbols(rec, free)
    lam = ca.SX.sym("lam", out.numel())
    v = ca.SX.sym("v", w.numel())
    jv = ca.jtimes(out, w, v)
    hv = ca.jtimes(ca.jtimes(out, w, lam, True), w, v)
    ref = ca.Function("point_reference", [w, t, c, lam, v], [out, jv, hv])
    if key is not None:
        if len(_REFERENCE) >= 8:
            _REFERENCE.clear()
        _REFERENCE[key] = ref
    return ref


def _relative_difference(a, b, scale) -> np.ndarray:
    """``|a - b| / max(|a|, |b|, scale)`` elementwise; 0 where ``a == b`` (infinities too) or
    both are NaN, infinite where only one is NaN or infinite."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(all="ignore"):
        den = np.maximum(np.maximum(np.abs(a), np.abs(b)),
                         np.maximum(np.nan_to_num(scale, nan=0.0), np.finfo(float).tiny))
        err = np.abs(a - b) / den
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    err[same] = 0.0
    err[np.isnan(err)] = np.inf
    return err


def _first_mismatch(got, want, scale, tolerance):
    """``(largest relative difference, index of the first one above tolerance or None)``
    (:func:`_relative_difference`): the comparison of both checks before a solve."""
    err = _relative_difference(got, want, scale)
    bad = np.flatnonzero(~(err <= tolerance))
    return (float(err.max()) if err.size else 0.0), (int(bad[0]) if bad.size else None)


def _mismatch_words(name, what, k, got, want, scale, s) -> str:
    """Entry ``k`` of ``what`` of the compiled function ``name`` differs from CasADi's virtual
    machine at the point ``s`` [m], in words (one line)."""
    err = _relative_difference(got, want, scale)[k]
    return (f"{name} gives {float(got[k])!r} for {what} {k} at the point s = {float(s):g} m, "
            f"CasADi's virtual machine on the same function {float(want[k])!r} (relative "
            f"difference {err:.2e} > {LIBRARY_TOLERANCE:g}): damaged or replaced after it was "
            "built")


def _same_sparsity(pf, P) -> bool:
    """Whether the point functions ``pf`` (:func:`point_functions`) have the Jacobian and
    Hessian sparsity the NLP ``P`` was built with."""
    return all(np.array_equal(a, b) for key in ("jac_sparsity", "hess_sparsity")
               for a, b in zip(pf[key], P[key]))


def _vm_point_functions(rec, free):
    """The point functions of ``rec`` in CasADi's virtual machine (never compiled)."""
    from ..util.casadi_compile import compile_functions
    return compile_functions(_symbolic_point_functions(rec, free), "pyomo_lap_point", mode="vm")


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
    from pyomo.repn import generate_standard_repn
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
    import casadi as ca
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


# --------------------------------------------------------------------------------------------
# presolve: the derivative variables of pyomo.dae eliminated
# --------------------------------------------------------------------------------------------

class ReducedNLP:
    r"""A :class:`LapNLP` with pyomo.dae's derivative variables eliminated.

    pyomo.dae writes the collocation of a state :math:`x` as a variable :math:`dx/ds` per point
    and a linear equation per point defining it from the state values of the element,
    :math:`dx/ds(s_i) = \sum_j a_{ij} x_j / h`. Such a variable (an entry of a
    ``DerivativeVar`` without bounds, defined by exactly one linear equality) is replaced by
    that combination everywhere: ``x_full = T x + c`` with a constant sparse ``T``. The NLP
    IPOPT sees then has 12 variables and 12 equations fewer per point (a third of the KKT
    system of the OCP), the same solutions and the same multipliers for the other rows; the
    eliminated rows' multipliers are recovered from the stationarity of the Lagrangian in the
    eliminated variable (:meth:`full_multipliers`).

    Attributes, callbacks and conventions are those of :class:`LapNLP` (for the reduced
    problem); :attr:`full` is the original.
    """

    def __init__(self, nlp: "LapNLP"):
        t0 = time.perf_counter()
        self.full = nlp
        self.sense = nlp.sense
        lin, chosen_row, elim = self._eliminated(nlp)
        kept = np.flatnonzero(~np.isin(np.arange(nlp.n), elim))
        self._kept, self._elim = kept, elim
        self._elim_rows = chosen_row + nlp._lin_slice.start
        self._substitution(nlp, lin, chosen_row)
        rows_kept = np.setdiff1d(np.arange(nlp.m), self._elim_rows)
        self._rows_kept = rows_kept
        self.n, self.m = int(kept.size), int(rows_kept.size)
        self.variables = [nlp.variables[k] for k in kept]
        self.constraints = [nlp.constraints[r] for r in rows_kept]
        self.x0, self.x_lb, self.x_ub = nlp.x0[kept], nlp.x_lb[kept], nlp.x_ub[kept]
        self.g_lb, self.g_ub = nlp.g_lb[rows_kept], nlp.g_ub[rows_kept]
        self.x_scaling = nlp.x_scaling[kept] if nlp.x_scaling is not None else None
        self.g_scaling = nlp.g_scaling[rows_kept] if nlp.g_scaling is not None else None
        self.obj_scaling = nlp.obj_scaling
        self._jacobian_map(nlp)
        self._hessian_map(nlp)
        self._jf = np.empty(nlp.jac_rows.size)
        self._hf = np.empty(nlp.hess_rows.size)
        self._gf = np.empty(nlp.m)
        self._gradf = np.empty(nlp.n)
        self._lam = np.zeros(nlp.m)
        self.report = nlp.report
        self.report.eliminated = int(elim.size)
        self.report.presolve_s = time.perf_counter() - t0
        self.report.n_variables, self.report.n_constraints = self.n, self.m
        self.report.jac_nnz, self.report.hess_nnz = int(self.jac_rows.size), int(self.hess_rows.size)

    @staticmethod
    def _eliminated(nlp):
        """``(lin, rows, variables)``: the linear rows' matrix, the rows (positions in it) that
        define an eliminated variable, and those variables, in row order. A candidate is an unbounded
        entry of a ``DerivativeVar``; its row a linear equality with exactly one candidate
        column; a candidate defined by several rows goes with the first of them."""
        from pyomo.dae import DerivativeVar
        lin = nlp._lin.tocsr(copy=True)
        lin.sum_duplicates()
        cand = ((nlp.x_lb <= -_INF / 2) & (nlp.x_ub >= _INF / 2)
                & np.array([isinstance(v.parent_component(), DerivativeVar)
                            for v in nlp.variables], dtype=bool))
        eq = nlp.g_lb[nlp._lin_slice] == nlp.g_ub[nlp._lin_slice]
        row_of_nz = np.repeat(np.arange(lin.shape[0]), np.diff(lin.indptr))
        is_cand = cand[lin.indices]
        n_cand = np.bincount(row_of_nz[is_cand], minlength=lin.shape[0])
        pick = is_cand & eq[row_of_nz] & (n_cand[row_of_nz] == 1)
        var_of, first = np.unique(lin.indices[pick], return_index=True)
        chosen_row = row_of_nz[pick][first]
        order = np.argsort(chosen_row, kind="stable")
        return lin, chosen_row[order].astype(np.int64), var_of[order].astype(np.int64)

    def _substitution(self, nlp, lin, chosen_row) -> None:
        """``_T``, ``_c`` with ``x_full = T x_red + c``: the row of the k-th eliminated ``v``
        reads ``a_v v + sum_j a_j x_j + const = g``, so ``v = (g - const - sum_j a_j x_j) / a_v``;
        ``_elim_coef`` holds the ``a_v``."""
        n, kept, elim = nlp.n, self._kept, self._elim
        red = np.full(n, -1, dtype=np.int64)
        red[kept] = np.arange(kept.size)
        S = lin[chosen_row].tocoo()
        k_of, cols, vals = S.row.astype(np.int64), S.col.astype(np.int64), S.data
        own = cols == elim[k_of]
        a = np.zeros(elim.size)
        a[k_of[own]] = vals[own]
        oth = ~own
        Ti = np.concatenate([kept, elim[k_of[oth]]])
        Tj = np.concatenate([np.arange(kept.size), red[cols[oth]]])
        Tv = np.concatenate([np.ones(kept.size), -vals[oth] / a[k_of[oth]]])
        c = np.zeros(n)
        r0 = nlp._lin_slice.start
        c[elim] = (nlp.g_lb[r0 + chosen_row] - nlp._lin_const[chosen_row]) / a
        self._elim_coef = a
        self._T = sp.csr_matrix((Tv, (Ti, Tj)), shape=(n, kept.size))
        self._TT = self._T.T.tocsr()
        self._c = c

    def _jacobian_map(self, nlp) -> None:
        """``J_red = J_full[kept rows] T`` as a linear map ``_MJ`` of the full Jacobian's values,
        and its structure."""
        T = self._T
        newrow = np.full(nlp.m, -1, dtype=np.int64)
        newrow[self._rows_kept] = np.arange(self._rows_kept.size)
        jr, jc = nlp.jac_rows.astype(np.int64), nlp.jac_cols.astype(np.int64)
        e = np.flatnonzero(newrow[jr] >= 0)
        rr, cc = newrow[jr[e]], jc[e]
        cnt = np.diff(T.indptr)[cc]
        src = np.repeat(e, cnt)
        tr = np.repeat(rr, cnt)
        pos = np.repeat(T.indptr[cc], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        keys = tr * self.n + T.indices[pos].astype(np.int64)
        uniq, dest = np.unique(keys, return_inverse=True)
        self.jac_rows = (uniq // self.n).astype(np.int32)
        self.jac_cols = (uniq % self.n).astype(np.int32)
        self._MJ = sp.csr_matrix((T.data[pos], (dest, src)), shape=(uniq.size, jr.size))

    def _hessian_map(self, nlp) -> None:
        """``H_red = T^T H_full T`` (lower triangles) as a linear map ``_MH`` of the full
        Hessian's values, and its structure: the pairs of the ``T`` rows of the entry's row
        ``k`` and column ``l``; for ``k == l`` every ordered pair ``(i, j)`` with ``i >= j``
        once, for ``k != l`` each pair once into the lower triangle, twice on the diagonal."""
        T = self._T
        hr, hc = nlp.hess_rows.astype(np.int64), nlp.hess_cols.astype(np.int64)
        nk, nl = np.diff(T.indptr)[hr], np.diff(T.indptr)[hc]
        npairs = nk * nl
        E = np.repeat(np.arange(hr.size), npairs)
        within = np.arange(npairs.sum()) - np.repeat(np.cumsum(npairs) - npairs, npairs)
        pk = T.indptr[hr[E]] + within // np.repeat(nl, npairs)
        pl = T.indptr[hc[E]] + within % np.repeat(nl, npairs)
        i_, j_ = T.indices[pk].astype(np.int64), T.indices[pl].astype(np.int64)
        ww = T.data[pk] * T.data[pl]
        diag_e = hr[E] == hc[E]
        keep = ~diag_e | (i_ >= j_)
        ww = np.where(~diag_e & (i_ == j_), 2.0 * ww, ww)
        keys = np.maximum(i_, j_)[keep] * self.n + np.minimum(i_, j_)[keep]
        uniq, dest = np.unique(keys, return_inverse=True)
        self.hess_rows = (uniq // self.n).astype(np.int32)
        self.hess_cols = (uniq % self.n).astype(np.int32)
        self._MH = sp.csr_matrix((ww[keep], (dest, E[keep])), shape=(uniq.size, hr.size))

    # ------------------------------------------------------------------------------------------
    def full_x(self, x) -> np.ndarray:
        """The values of every variable of :attr:`full` (n_full,) for reduced ``x``."""
        return self._T @ np.asarray(x, dtype=float) + self._c

    def objective(self, x) -> float:
        """The objective at the full point of reduced ``x``."""
        return self.full.objective(self.full_x(x))

    def gradient(self, x, out) -> None:
        """The objective's gradient in the reduced variables (chain rule) into ``out``."""
        self.full.gradient(self.full_x(x), self._gradf)
        out[:] = self._TT @ self._gradf

    def constraints_eval(self, x, out) -> None:
        """The kept rows' values into ``out``."""
        self.full.constraints_eval(self.full_x(x), self._gf)
        out[:] = self._gf[self._rows_kept]

    def jacobian(self, x, out) -> None:
        """The kept rows' Jacobian values in the reduced variables into ``out``."""
        self.full.jacobian(self.full_x(x), self._jf)
        out[:] = self._MJ @ self._jf

    def hessian(self, x, obj_factor, lam, out) -> None:
        """The reduced Lagrangian's Hessian values (lower triangle) into ``out``."""
        self._lam[self._rows_kept] = lam
        self.full.hessian(self.full_x(x), obj_factor, self._lam, self._hf)
        out[:] = self._MH @ self._hf

    def full_multipliers(self, x, mult_g, mult_x_L, mult_x_U):
        r"""Multipliers of the full problem: the kept rows' as given, the eliminated rows'
        from :math:`\partial L/\partial v = 0` in each eliminated variable :math:`v`
        (which has no bounds), i.e. :math:`\lambda_r = -(\partial f/\partial v +
        \sum_{k \ne r} \lambda_k \partial g_k/\partial v) / a_{rv}`.

        Returns
        -------
        (x_full, mult_g_full, mult_x_L_full, mult_x_U_full)
        """
        nlp = self.full
        xf = self.full_x(x)
        lam = np.zeros(nlp.m)
        lam[self._rows_kept] = mult_g
        grad = np.empty(nlp.n)
        nlp.gradient(xf, grad)
        jv = np.empty(nlp.jac_rows.size)
        nlp.jacobian(xf, jv)
        J = sp.csc_matrix((jv, (nlp.jac_rows, nlp.jac_cols)), shape=(nlp.m, nlp.n))
        jt_lam = J.T @ lam               # the eliminated rows' lambdas are still 0 here
        lam[self._elim_rows] = -(grad[self._elim] + jt_lam[self._elim]) / self._elim_coef
        zl = np.zeros(nlp.n)
        zu = np.zeros(nlp.n)
        zl[self._kept] = mult_x_L
        zu[self._kept] = mult_x_U
        return xf, lam, zl, zu
