r"""The checks before a solve of the fast path: the recorded rows against the model.

Before it uses a car's recorded rows, :class:`~pyomo_lap.solvers.lap.nlp.LapNLP` checks that
they compute what the model's Pyomo expressions compute (at a sample of points, at the current
values: :class:`RecordedRowsMismatch` otherwise) and that each compiled library computes what
the function it was compiled from computes (CasADi's virtual machine on the function traced
from the same tape): a library that differs is compiled again, and the points are evaluated in
the virtual machine when the rebuilt one differs still (the fall-back). :class:`RowChecks`
holds these steps (a base class of the NLP); :func:`evaluate_expression` evaluates a Pyomo
expression DAG with floats.
"""
from __future__ import annotations

import contextlib
import math
import time
import warnings
from typing import Dict, Optional

import numpy as np
from pyomo.common.dependencies import attempt_import

from ...util.casadi_compile import discard_damaged
from ..casadi_expr import pyomo_to_casadi
from . import compiled

ca, ca_available = attempt_import("casadi")

__all__ = ["RecordedRowsMismatch", "CompiledLibraryMismatch", "evaluate_expression",
           "RowChecks", "LIBRARY_TOLERANCE", "ROWS_TOLERANCE"]

LIBRARY_TOLERANCE = 1e-7
"""Largest relative difference accepted between a compiled point function and CasADi's
virtual machine on the same function, before a solve. Measured: below 1e-13 for the rows and
their derivatives of the default job; up to 6e-9 for the Hessian of the setup optimization
(the car's parameters free: sums of many terms that cancel, evaluated in another order by the
compiled code); a library with constants changed by 5 % differs by 1e-2."""

ROWS_TOLERANCE = 1e-9
"""Largest relative difference accepted between a recorded row and its Pyomo expression."""


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
        What happened and what to do, in words (:class:`pyomo_lap.solvers.report.SolveReport`).
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

    def leaf(v):
        if v.value is None:
            raise ValueError(f"{v.name} has no value")
        return float(v.value)
    return float(pyomo_to_casadi(expr, leaf, {} if memo is None else memo, functions=math))


class RowChecks:
    """The checks of :class:`~pyomo_lap.solvers.lap.nlp.LapNLP` before a solve (module
    docstring): the recorded rows against the Pyomo expressions, the compiled libraries against
    CasADi's virtual machine, the rebuild and the fall-back."""

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
                pf = compiled.point_functions(P["rec"], P["compile_mode"], free=P["free"])
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
        self._use_vm(compiled._vm_point_functions(P["rec"], P["free"]), reason)

    def _use_vm(self, funs, reason: str) -> None:
        """Evaluate the points in CasADi's virtual machine with ``funs`` (not compiled),
        ``reason`` saying why."""
        funs.reason = reason
        self._bind(funs)
        self.report.compiled, self.report.compile_reason = False, reason


_REFERENCE: Dict[str, object] = {}


def _reference_function(rec, key, free=False):
    """``(w, track, vehicle, lam, v) -> (rows, J v, (sum_j lam_j Hess r_j) v)``: the
    function traced from the tape (:meth:`pyomo_lap.ocp.build.PointRows.casadi_function`) with
    its directional derivatives by CasADi's automatic differentiation (forward, and forward
    over reverse), evaluated in CasADi's virtual machine (never compiled); kept per cache key
    in this process (the same key, the same function)."""
    found = _REFERENCE.get(key) if key is not None else None
    if found is not None:
        return found
    w, t, c, out = compiled._point_symbols(rec, free)
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
