r"""The per-point functions of a pyomo_lap car's recorded rows, compiled to machine code.

One CasADi function of a point's variables, the track's numbers and the car's parameters,
traced from the tape the rows were recorded on (:meth:`pyomo_lap.ocp.point_rows.PointRows.casadi_function`),
with its Jacobian and the Hessian of its Lagrangian: compiled once per structure of the rows
and cached (:mod:`pyomo_lap.util.casadi_compile`), in the background while the model is built
(:func:`prefetch_point_functions`). The NLP (:mod:`pyomo_lap.solvers.lap.nlp`) maps them over
the points.
"""
from __future__ import annotations

import threading
import time
from typing import Dict

import numpy as np
from pyomo.common.dependencies import attempt_import

from ...util.casadi_compile import (
    COMPILER_FLAGS,
    cached_functions,
    compile_functions,
    find_compiler,
    signature,
)

ca, ca_available = attempt_import("casadi")

__all__ = ["point_functions", "prefetch_point_functions", "point_functions_cached"]

_POINT_FUNCTIONS = ("point_f", "point_fj", "point_h")


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
    cc = find_compiler()
    return cc is not None and cached_functions("pyomo_lap_point", _POINT_FUNCTIONS,
                                               _point_key(rec, free, cc)) is not None


def _point_key(rec, free: bool, cc: str) -> str:
    """The cache key of the point functions of ``rec``: the rows' structure, ``free``, the
    compiler, its flags and CasADi's version."""
    return rec.structure_key(f"vehicle-v3 free={free} {cc} {' '.join(COMPILER_FLAGS)} "
                             f"{ca.__version__}")


def _vm_point_functions(rec, free):
    """The point functions of ``rec`` in CasADi's virtual machine (never compiled)."""
    return compile_functions(_symbolic_point_functions(rec, free), "pyomo_lap_point", mode="vm")
