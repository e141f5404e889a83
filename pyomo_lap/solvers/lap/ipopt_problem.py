r"""A nonlinear program solved by IPOPT through its C interface (:class:`IpoptProblem`), the
binding of :mod:`pyomo_lap.solvers.lap.ipopt_c`: the callbacks get NumPy arrays that are
zero-copy views on IPOPT's buffers; :class:`IpoptResult` is the outcome.

The first exception raised in a callback is kept, IPOPT stopped at its next iteration (the
evaluations report failures meanwhile) and freed, and the exception re-raised by
:meth:`IpoptProblem.solve` with the partial :class:`IpoptResult` as ``exc.ipopt_result``.
Ctrl-C (and a SIGTERM handled by a Python function) during a solve in the main thread only
sets a flag: IPOPT stops at its next iteration, then :class:`KeyboardInterrupt` (or the
handler's exception) is raised the same way.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import math
import numbers
import os
import pathlib
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from . import ipopt_c
from .ipopt_c import (
    _EVAL_F,
    _EVAL_G,
    _EVAL_H,
    _EVAL_JAC,
    _INTERMEDIATE,
    RETURN_STATUS,
    _num,
    _setters,
    _try_option,
    load_ipopt_library,
)

__all__ = ["IpoptResult", "IpoptProblem"]

@dataclasses.dataclass
class IpoptResult:
    r"""Outcome of :meth:`IpoptProblem.solve`.

    Attributes
    ----------
    status : int
        IPOPT's ``ApplicationReturnStatus`` (:data:`RETURN_STATUS`). In the partial result
        attached to an exception re-raised by :meth:`IpoptProblem.solve`, the status at which
        IPOPT stopped (``User_Requested_Stop``, or ``Invalid_Number_Detected`` when the
        failed callback was one IPOPT cannot recover from).
    status_name : str
    x : ndarray (n,)
        Final (or last accepted) primal point.
    obj : float
        ``f(x)`` (unscaled).
    g : ndarray (m,)
        ``g(x)``.
    mult_g : ndarray (m,)
        :math:`\lambda` of :math:`L = f + g^T \lambda`.
    mult_x_L, mult_x_U : ndarray (n,)
        :math:`z_L, z_U \ge 0`.
    iterations : int
        Last ``iter_count`` seen by the intermediate callback (-1 if none).
    interrupted : bool
        True when stopped by a :class:`KeyboardInterrupt` (Ctrl-C, or raised in a callback).
    """

    status: int
    status_name: str
    x: np.ndarray
    obj: float
    g: np.ndarray
    mult_g: np.ndarray
    mult_x_L: np.ndarray
    mult_x_U: np.ndarray
    iterations: int
    interrupted: bool

    @property
    def success(self) -> bool:
        """True for ``Solve_Succeeded`` and ``Solved_To_Acceptable_Level``."""
        return self.status in (0, 1)


def _vector(a, length: int, what: str, dtype=np.float64) -> np.ndarray:
    """A fresh contiguous copy of ``a``, of shape (length,)."""
    arr = np.array(a, dtype=dtype, copy=True, order="C")
    if arr.shape != (length,):
        raise ValueError(f"{what}: expected shape ({length},), got {arr.shape}")
    return arr


def _indices(rows, cols, n_rows: int, n_cols: int, what: str):
    """0-based int32 index pairs within ``[0, n_rows) x [0, n_cols)``."""
    r = _vector(rows, np.size(rows), f"{what}_rows", np.int64)
    c = _vector(cols, r.size, f"{what}_cols", np.int64)
    for idx, upper, name in ((r, n_rows, f"{what}_rows"), (c, n_cols, f"{what}_cols")):
        bad = np.flatnonzero((idx < 0) | (idx >= upper))
        if bad.size:
            raise ValueError(f"{name}[{bad[0]}] = {idx[bad[0]]} is outside [0, {upper})")
    return r.astype(np.int32), c.astype(np.int32)


def _viewer(length: int, readonly: bool) -> Callable[[int], np.ndarray]:
    """Map an address to a (length,) float64 view on that memory; views cached by address
    (IPOPT uses a few buffers)."""
    cache: Dict[int, np.ndarray] = {}
    ctype = _num * length

    def view(addr: int) -> np.ndarray:
        arr = cache.get(addr)
        if arr is None:
            if len(cache) >= 64:
                cache.clear()
            arr = np.frombuffer(ctype.from_address(addr), dtype=np.float64) if length else \
                np.zeros(0)
            arr.flags.writeable = not readonly
            cache[addr] = arr
        return arr

    view.cache = cache  # type: ignore[attr-defined]
    return view


class IpoptProblem:
    r"""A nonlinear program solved by IPOPT through its C interface.

    Parameters
    ----------
    n, m : int
        Number of variables (>= 1) and of constraints (>= 0).
    x_lb, x_ub, g_lb, g_ub : array_like (n,), (n,), (m,), (m,)
        Bounds (``-inf``/``+inf`` for none; ``g_lb[i] == g_ub[i]`` for an equality).
    jac_rows, jac_cols : array_like of int (nnz_jac,)
        0-based sparsity pattern of the constraint Jacobian (duplicates are summed); at least
        one entry when m > 0 (a structural zero will do).
    hess_rows, hess_cols : array_like of int (nnz_hess,)
        0-based pattern of the Hessian of the Lagrangian, lower triangle (``row >= col``).
    objective : ``objective(x) -> float``
    gradient : ``gradient(x, out)``
        Fills ``out`` (n,) with :math:`\nabla f(x)`.
    constraints : ``constraints(x, out)``, optional when m == 0
        Fills ``out`` (m,) with :math:`g(x)`.
    jacobian : ``jacobian(x, out)``, optional when m == 0
        Fills ``out`` (nnz_jac,) in the order of ``(jac_rows, jac_cols)``.
    hessian : ``hessian(x, obj_factor, lam, out)`` or None
        Fills ``out`` (nnz_hess,) with :math:`\sigma_f \nabla^2 f + \sum_i \lambda_i
        \nabla^2 g_i`; None: IPOPT's limited-memory quasi-Newton approximation.
    intermediate : ``intermediate(info) -> bool | None``, optional
        Called at each iteration with a dict (``alg_mod``, ``iter_count``, ``obj_value``,
        ``inf_pr``, ``inf_du``, ``mu``, ``d_norm``, ``regularization_size``, ``alpha_du``,
        ``alpha_pr``, ``ls_trials``: IPOPT's ``Intermediate_CB``, whose ``inf_pr`` and
        ``inf_du`` are those of the scaled problem; and ``inf_pr_unscaled``, the constraint
        violation of the unscaled problem, the ``inf_pr`` column of IPOPT's iteration table,
        from ``GetIpoptCurrentViolations``); False stops IPOPT (``User_Requested_Stop``:
        :meth:`solve` returns the last iterate as ``x``). :meth:`current_iterate` may be
        called from it.

    Notes
    -----
    The arrays given to the callbacks are zero-copy views on IPOPT's memory, valid during the
    call only: ``x`` and ``lam`` are read-only (copy ``x`` to keep it), ``out`` must be filled
    in place. An evaluation callback may return False (exactly) to report a failed
    evaluation (IPOPT shortens its step); any exception stops the solve (:meth:`solve`). Each
    :meth:`solve` creates the IPOPT problem with the options, scaling and output file set so
    far and frees it afterwards, so the object can be solved again (warm starts); it is not
    thread-safe.

    Raises
    ------
    ValueError
        On inconsistent sizes, bounds or sparsity patterns.
    TypeError
        When a required callback is not callable.
    IpoptLibraryNotFound
        When no IPOPT library can be loaded.
    """

    def __init__(self, n: int, m: int, x_lb, x_ub, g_lb, g_ub, jac_rows, jac_cols, hess_rows,
                 hess_cols, *, objective: Callable, gradient: Callable,
                 constraints: Optional[Callable] = None, jacobian: Optional[Callable] = None,
                 hessian: Optional[Callable] = None, intermediate: Optional[Callable] = None):
        for k, what in ((n, "n"), (m, "m")):
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < (what == "n"):
                raise ValueError(f"{what} = {k!r}: expected an integer >= {int(what == 'n')}")
        self.n, self.m = int(n), int(m)
        self.bounds = [_vector(a, k, w) for a, k, w in ((x_lb, n, "x_lb"), (x_ub, n, "x_ub"),
                                                         (g_lb, m, "g_lb"), (g_ub, m, "g_ub"))]
        for lo, up, what in ((*self.bounds[:2], "x"), (*self.bounds[2:], "g")):
            bad = np.flatnonzero(np.isnan(lo) | np.isnan(up) | (lo > up) | (lo == np.inf)
                                 | (up == -np.inf))
            if bad.size:
                raise ValueError(f"bounds of {what}[{bad[0]}]: [{lo[bad[0]]}, {up[bad[0]]}] is "
                                 f"not a valid interval ({bad.size} invalid in all)")
        self.jac = _indices(jac_rows, jac_cols, max(self.m, 1), self.n, "jac")
        self.hess = _indices(hess_rows, hess_cols, self.n, self.n, "hess")
        if (self.m == 0) != (self.jac[0].size == 0):
            raise ValueError("the Jacobian needs at least one entry when m > 0 (a structural "
                             "zero will do) and none when m == 0")
        if np.any(self.hess[0] < self.hess[1]):
            raise ValueError("a Hessian entry is in the upper triangle: give the lower "
                             "triangle only (row >= col)")
        if hessian is None and self.hess[0].size:
            raise ValueError("hess_rows/hess_cols must be empty when hessian is None")
        if not (callable(objective) and callable(gradient)) or (self.m and not (
                callable(constraints) and callable(jacobian))):
            raise TypeError("objective and gradient (and constraints and jacobian when m > 0) "
                            "must be callables")
        self._lib = load_ipopt_library()
        self.intermediate = intermediate
        self._options: Dict[str, Tuple[str, Any]] = {}
        self._scaling: Optional[tuple] = None
        self._handle: Optional[int] = None
        self._exc: Optional[BaseException] = None
        self._sigint, self._iterations, self._previous_handlers = False, -1, {}
        self._make_callbacks(objective, gradient, constraints, jacobian, hessian)
        if hessian is None:
            self.add_option("hessian_approximation", "limited-memory")

    # ----------------------------------------------------------------- options, scaling, output
    def add_option(self, name: str, value) -> None:
        """Set an IPOPT option for every later :meth:`solve`.

        A bool becomes ``"yes"``/``"no"``; an int is tried as an Integer option, then as a
        Number option; a float as a Number, then (if integral) an Integer option; a string as
        a String option, then as a number if it reads as one.

        Raises
        ------
        ValueError
            When IPOPT refuses it (unknown, wrong type, out of range), with IPOPT's reason.
        TypeError
            When ``value`` has another type.
        """
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"IPOPT option name must be a non-empty str, got {name!r}")
        typed, reasons = _try_option(self._lib, name.strip(), value)
        if typed is None:
            why = ([r for r in reasons if ", but it is of type" not in r] or reasons)[:1]
            raise ValueError(f"IPOPT option {name!r} = {value!r} was refused (unknown option, "
                             f"wrong type or value out of range){': ' + why[0] if why else ''}")
        self._options[name.strip()] = typed

    @property
    def options(self) -> Dict[str, Any]:
        """The options set so far: name -> value as given to IPOPT (str, int or float)."""
        return {k: v for k, (_, v) in self._options.items()}

    def set_scaling(self, obj_scaling: float, x_scaling=None, g_scaling=None) -> None:
        """User scaling: IPOPT works on ``obj_scaling * f``, ``x_scaling * x``,
        ``g_scaling * g`` (results stay unscaled; a negative ``obj_scaling`` maximizes); the x
        and g factors are used only with ``nlp_scaling_method = "user-scaling"``, to be set
        as well.

        Raises
        ------
        ValueError
            On a wrong shape, or a zero or non-finite factor.
        """
        arrays = [np.array([obj_scaling], dtype=float)]
        arrays += [None if a is None else _vector(a, k, w) for a, k, w in
                   ((x_scaling, self.n, "x_scaling"), (g_scaling, self.m, "g_scaling"))]
        for arr, what in zip(arrays, ("obj_scaling", "x_scaling", "g_scaling")):
            if arr is not None and not np.all(np.isfinite(arr) & (arr != 0.0)):
                raise ValueError(f"{what}: factors must be finite and non-zero")
        self._scaling = (float(arrays[0][0]), arrays[1], arrays[2] if self.m else None)

    def set_output_file(self, path: "str | os.PathLike", print_level: int = 5) -> None:
        """Write IPOPT's log to ``path`` (rewritten at each solve) at ``print_level`` 0..12,
        independently of the console's ``print_level`` (IPOPT's ``output_file`` and
        ``file_print_level``).

        Raises
        ------
        ValueError
            When ``print_level`` is not in 0..12.
        FileNotFoundError
            When the directory of ``path`` does not exist.
        """
        if isinstance(print_level, bool) or not isinstance(print_level, numbers.Integral) \
                or not 0 <= print_level <= 12:
            raise ValueError(f"print_level = {print_level!r}: expected an integer in 0..12")
        if not pathlib.Path(path).parent.is_dir():
            raise FileNotFoundError(f"directory of the IPOPT output file {path} does not exist")
        self._options["output_file"] = ("str", os.fspath(path))
        self._options["file_print_level"] = ("int", int(print_level))

    # ----------------------------------------------------------------- callbacks
    def _make_callbacks(self, objective, gradient, constraints, jacobian, hessian) -> None:
        """The C callbacks: views on IPOPT's buffers; the first exception kept, IPOPT told
        that the evaluation failed (and every later one) and stopped at its next iteration."""
        n, m = self.n, self.m
        x_view, lam_view = _viewer(n, True), _viewer(m, True)
        out = {k: _viewer(size, False) for k, size in (("grad", n), ("g", m),
               ("jac", self.jac[0].size), ("h", self.hess[0].size))}
        self._views = (x_view, lam_view, *out.values())

        def guarded(body):
            def call(*args):
                if self._exc is not None:
                    return False
                try:
                    return body(*args) is not False
                except BaseException as exc:  # noqa: BLE001 - re-raised by solve()
                    self._exc = exc
                    return False
            return call

        def structure(pattern, i_row, j_col):
            for src, dst in zip(pattern, (i_row, j_col)):
                ctypes.memmove(dst, src.ctypes.data, src.nbytes)
            return True

        def eval_f(_n, x, _new, obj, _u):
            _num.from_address(obj).value = float(objective(x_view(x)))

        def eval_jac(_n, x, _new, _m, _nnz, i_row, j_col, values, _u):
            if values is None:
                return structure(self.jac, i_row, j_col)
            return jacobian(x_view(x), out["jac"](values)) if m else True

        def eval_h(_n, x, _new, sigma, _m, lam, _new_lam, _nnz, i_row, j_col, values, _u):
            if values is None:
                return structure(self.hess, i_row, j_col)
            return hessian is not None and hessian(x_view(x), sigma, lam_view(lam),
                                                   out["h"](values))
        # the ctypes function objects must live as long as IPOPT may call them: kept here
        self._c_callbacks = (
            _EVAL_F(guarded(eval_f)),
            _EVAL_G(guarded(lambda _n, x, _new, _m, g, _u:
                            constraints(x_view(x), out["g"](g)) if m else True)),
            _EVAL_F(guarded(lambda _n, x, _new, grad, _u: gradient(x_view(x), out["grad"](grad)))),
            _EVAL_JAC(guarded(eval_jac)), _EVAL_H(guarded(eval_h)))
        self._c_intermediate = _INTERMEDIATE(self._on_iteration)

    def _on_iteration(self, alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm,
                      regularization_size, alpha_du, alpha_pr, ls_trials, _user) -> bool:
        self._iterations = iter_count
        if self._exc is not None or self._sigint:
            return False
        if self.intermediate is None:
            return True
        info = dict(alg_mod=alg_mod, iter_count=iter_count, obj_value=obj_value, inf_pr=inf_pr,
                    inf_du=inf_du, mu=mu, d_norm=d_norm, alpha_du=alpha_du, alpha_pr=alpha_pr,
                    regularization_size=regularization_size, ls_trials=ls_trials)
        try:
            info["inf_pr_unscaled"] = self._unscaled_violation()
            answer = self.intermediate(info)
        except BaseException as exc:  # noqa: BLE001 - re-raised by solve()
            self._exc = exc
            return False
        return answer is None or bool(answer)

    def _unscaled_violation(self) -> float:
        """The constraint violation of the unscaled problem at the current iterate (max-norm
        over the rows and the variables' bounds: the ``inf_pr`` of IPOPT's iteration table,
        where the intermediate callback gets the scaled problem's), from
        ``GetIpoptCurrentViolations``; NaN when IPOPT cannot give it."""
        x_l, x_u, c_l, c_u, grad = (np.zeros(self.n) for _ in range(5))
        g_viol, g_compl = np.zeros(self.m), np.zeros(self.m)
        if self._handle is None or not self._lib.GetIpoptCurrentViolations(
                self._handle, False, self.n, *(a.ctypes.data for a in (x_l, x_u, c_l, c_u, grad)),
                self.m, *(a.ctypes.data if self.m else None for a in (g_viol, g_compl))):
            return math.nan
        return float(max(np.max(np.abs(a), initial=0.0) for a in (x_l, x_u, g_viol)))

    def current_iterate(self, scaled: bool = False) -> Dict[str, np.ndarray]:
        """The current iterate (copies of ``x``, ``mult_x_L``, ``mult_x_U``, ``g``,
        ``mult_g``; of the scaled problem with ``scaled``), from inside the ``intermediate``
        callback only (``GetIpoptCurrentIterate``).

        Raises
        ------
        RuntimeError
            Outside a solve, or when IPOPT cannot provide it.
        """
        out = {k: np.zeros(self.n) for k in ("x", "mult_x_L", "mult_x_U")}
        out.update({k: np.zeros(self.m) for k in ("g", "mult_g")})
        if self._handle is None or not self._lib.GetIpoptCurrentIterate(
                self._handle, bool(scaled), self.n, *(out[k].ctypes.data for k in
                                                      ("x", "mult_x_L", "mult_x_U")),
                self.m, *(out[k].ctypes.data if self.m else None for k in ("g", "mult_g"))):
            raise RuntimeError("current_iterate() can only be called during solve(), from the "
                               "intermediate callback")
        return out

    # ----------------------------------------------------------------- solving
    @contextmanager
    def _signals_as_flag(self, enabled: bool) -> Iterator[List[int]]:
        """While IPOPT runs (in the main thread), Ctrl-C (SIGINT with Python's default handler)
        and a signal handled by a Python function (a SIGTERM handler that raises) only set a
        flag, checked at each iteration; yields the list of the signals received."""
        received: List[int] = []
        previous = {}

        def on_signal(signum, frame):
            self._sigint = True
            received.append(signum)
        if enabled and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)):
                handler = signal.getsignal(sig) if sig is not None else None
                if handler is signal.default_int_handler or (
                        callable(handler) and sig != signal.SIGINT):
                    previous[sig] = signal.signal(sig, on_signal)
        self._previous_handlers = dict(previous)
        try:
            yield received
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _create(self) -> int:
        """A fresh IPOPT problem with the options, scaling and intermediate callback."""
        lib, (x_lb, x_ub, g_lb, g_ub) = self._lib, self.bounds
        handle = ipopt_c._create(lib, self.n, x_lb, x_ub, self.m, g_lb, g_ub, self.jac[0].size,
                         self.hess[0].size, self._c_callbacks)
        set_option = _setters(lib)
        try:
            for name, (kind, value) in self._options.items():
                if not set_option[kind](handle, name, value):   # checked by add_option
                    raise ValueError(f"IPOPT option {name!r} = {value!r} was refused")
            if self._scaling is not None:
                obj, x_s, g_s = self._scaling
                lib.SetIpoptProblemScaling(handle, obj, *(None if s is None else s.ctypes.data
                                                          for s in (x_s, g_s)))
            lib.SetIntermediateCallback(handle, self._c_intermediate)
        except BaseException:
            ipopt_c._free_problem(lib, handle)
            raise
        return handle

    def solve(self, x0, mult_g=None, mult_x_L=None, mult_x_U=None, *,
              catch_sigint: bool = True) -> IpoptResult:
        """Solve from ``x0`` (``IpoptSolve``); ``mult_g``, ``mult_x_L``, ``mult_x_U`` are
        starting multipliers, used by IPOPT with ``warm_start_init_point = "yes"`` (zeros when
        None). ``catch_sigint`` turns Ctrl-C into a clean stop (module docstring).

        Returns
        -------
        IpoptResult
            Also when IPOPT fails or stops early: check ``status`` / ``success``.

        Raises
        ------
        KeyboardInterrupt
            Ctrl-C during the solve, or raised in a callback; ``exc.ipopt_result`` is the
            partial result.
        Exception
            The first exception raised by a callback (or by a deferred signal's handler),
            re-raised after IPOPT stopped and was freed, with ``exc.ipopt_result``.
        ValueError
            On a wrong shape or a non-finite value of ``x0`` or of the multipliers.
        RuntimeError
            When IPOPT refuses the problem, or ``solve`` is called from a callback.
        """
        if self._handle is not None:
            raise RuntimeError("IpoptProblem.solve() called again from one of its callbacks")
        x, lam, z_l, z_u = arrays = [
            _vector(a if a is not None else np.zeros(k), k, w) for a, k, w in
            ((x0, self.n, "x0"), (mult_g, self.m, "mult_g"), (mult_x_L, self.n, "mult_x_L"),
             (mult_x_U, self.n, "mult_x_U"))]
        for arr, what in zip(arrays, ("x0", "mult_g", "mult_x_L", "mult_x_U")):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{what} contains non-finite values")
        g, obj = np.zeros(self.m), _num(math.nan)
        self._exc, self._sigint, self._iterations = None, False, -1
        self._handle = self._create()
        try:
            with self._signals_as_flag(catch_sigint) as received:
                status = self._lib.IpoptSolve(
                    self._handle, x.ctypes.data, g.ctypes.data if self.m else None,
                    ctypes.byref(obj), lam.ctypes.data if self.m else None, z_l.ctypes.data,
                    z_u.ctypes.data, None)
        finally:
            ipopt_c._free_problem(self._lib, self._handle)
            self._handle = None
            for view in self._views:
                view.cache.clear()
        return self._result(IpoptResult(
            status=status, status_name=RETURN_STATUS.get(status, f"Unknown({status})"), x=x,
            obj=obj.value, g=g, mult_g=lam, mult_x_L=z_l, mult_x_U=z_u,
            iterations=self._iterations,
            interrupted=self._sigint or isinstance(self._exc, KeyboardInterrupt)), received)

    def _result(self, result: IpoptResult, received: List[int]) -> IpoptResult:
        """``result``, or the kept exception (or the deferred signal's) raised with it."""
        exc, self._exc = self._exc, None
        if exc is None and self._sigint:
            exc = KeyboardInterrupt()
            for signum in dict.fromkeys(received):   # a deferred signal's own handler runs now
                handler = self._previous_handlers.get(signum)
                if callable(handler) and handler is not signal.default_int_handler:
                    try:
                        handler(signum, None)
                    except BaseException as raised:  # noqa: BLE001 - passed on below
                        exc = raised
                    break
        if exc is not None:
            exc.ipopt_result = result
            raise exc
        return result
