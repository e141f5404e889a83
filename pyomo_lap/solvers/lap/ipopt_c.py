r"""A thin ctypes binding to IPOPT's C interface (``IpStdCInterface.h``, IPOPT >= 3.14).

Nothing is compiled: the binding loads the ``libipopt`` shared library that ships inside the
``casadi`` wheel (or the one named by ``PYOMO_LAP_IPOPT_LIBRARY``) and calls it with
:mod:`ctypes`, which releases the GIL while IPOPT works; the callbacks get NumPy arrays that
are zero-copy views on IPOPT's buffers. The problem solved is

.. math::

    \min_x f(x) \quad\text{s.t.}\quad g_L \le g(x) \le g_U, \quad x_L \le x \le x_U .

Sign conventions (IPOPT's, checked against the KKT conditions in ``tests/test_ipopt_lib.py``):
:math:`L = f + g^T\lambda` and at a solution :math:`\nabla f + J^T\lambda - z_L + z_U = 0`
with :math:`z_L, z_U \ge 0`; ``mult_g`` is :math:`\lambda` (<= 0 at an active lower bound of a
row, >= 0 at an active upper bound), ``mult_x_L``/``mult_x_U`` are :math:`z_L`/:math:`z_U`.
Results and multipliers are those of the unscaled problem, also with user scaling. Bounds may
be ``-inf``/``+inf``; IPOPT takes any bound beyond +-1e19 as absent.

IPOPT prints its log on the *C* ``stdout`` (file descriptor 1), which
``contextlib.redirect_stdout`` does not catch; ``print_level=0`` silences it, ``sb="yes"`` the
banner, :meth:`~pyomo_lap.solvers.lap.ipopt_problem.IpoptProblem.set_output_file` writes a log at its own level. Like the ``ipopt``
executable, IPOPT reads ``ipopt.opt`` from the current directory at every solve, overriding the
options given (``option_file_name=""`` turns this off).

This module holds the binding (the library found and loaded, the C functions' signatures,
an option set on a problem); :mod:`pyomo_lap.solvers.lap.ipopt_problem` the problem solved
through it (:class:`~pyomo_lap.solvers.lap.ipopt_problem.IpoptProblem`: callbacks, results);
:mod:`pyomo_lap.solvers.lap.ipopt_options` the options' documentation and checks.

Assumes IPOPT >= 3.14 built with ``ipnumber = double`` and a 32-bit ``ipindex`` (the default,
and the casadi build); a library built with ``IPOPT_SINGLE`` or ``IPOPT_INT64`` cannot be
detected from its C interface and must not be used.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import math
import numbers
import os
import pathlib
import sys
import tempfile
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

__all__ = ["ENV_VAR", "RETURN_STATUS", "STATUS_CODE", "IpoptLibraryNotFound", "find_ipopt_library",
           "load_ipopt_library", "ipopt_version"]

ENV_VAR = "PYOMO_LAP_IPOPT_LIBRARY"
"""Environment variable naming the IPOPT shared library to load (a path to the file)."""

RETURN_STATUS: Dict[int, str] = {
    0: "Solve_Succeeded", 1: "Solved_To_Acceptable_Level", 2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small", 4: "Diverging_Iterates", 5: "User_Requested_Stop",
    6: "Feasible_Point_Found", -1: "Maximum_Iterations_Exceeded", -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation", -4: "Maximum_CpuTime_Exceeded",
    -5: "Maximum_WallTime_Exceeded", -10: "Not_Enough_Degrees_Of_Freedom",
    -11: "Invalid_Problem_Definition", -12: "Invalid_Option", -13: "Invalid_Number_Detected",
    -100: "Unrecoverable_Exception", -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory", -199: "Internal_Error",
}
"""``enum ApplicationReturnStatus`` of ``IpReturnCodes_inc.h`` (IPOPT 3.14): value -> name."""

STATUS_CODE: Dict[str, int] = {name: code for code, name in RETURN_STATUS.items()}
"""Inverse of :data:`RETURN_STATUS`: name -> value."""

OPTIONS_URL = "https://coin-or.github.io/Ipopt/OPTIONS.html"
"""IPOPT's documentation of its options on the web (the latest release's)."""

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_LOCK = threading.Lock()


class IpoptLibraryNotFound(RuntimeError):
    """No usable IPOPT shared library (not found, not loadable, or not IPOPT >= 3.14)."""


# --------------------------------------------------------------------------- C interface
_num, _idx, _bool, _ptr = ctypes.c_double, ctypes.c_int32, ctypes.c_bool, ctypes.c_void_p
_EVAL_F = ctypes.CFUNCTYPE(_bool, _idx, _ptr, _bool, _ptr, _ptr)
_EVAL_G = ctypes.CFUNCTYPE(_bool, _idx, _ptr, _bool, _idx, _ptr, _ptr)
_EVAL_JAC = ctypes.CFUNCTYPE(_bool, _idx, _ptr, _bool, _idx, _idx, _ptr, _ptr, _ptr, _ptr)
_EVAL_H = ctypes.CFUNCTYPE(_bool, _idx, _ptr, _bool, _num, _idx, _ptr, _bool, _idx, _ptr, _ptr,
                           _ptr, _ptr)
_INTERMEDIATE = ctypes.CFUNCTYPE(_bool, _idx, _idx, *[_num] * 8, _idx, _ptr)
_SIGNATURES = {   # name: (restype, argtypes)
    "CreateIpoptProblem": (_ptr, [_idx, _ptr, _ptr, _idx, _ptr, _ptr, _idx, _idx, _idx,
                                  _EVAL_F, _EVAL_G, _EVAL_F, _EVAL_JAC, _EVAL_H]),
    "FreeIpoptProblem": (None, [_ptr]),
    "AddIpoptStrOption": (_bool, [_ptr, ctypes.c_char_p, ctypes.c_char_p]),
    "AddIpoptNumOption": (_bool, [_ptr, ctypes.c_char_p, _num]),
    "AddIpoptIntOption": (_bool, [_ptr, ctypes.c_char_p, _idx]),
    "SetIpoptProblemScaling": (_bool, [_ptr, _num, _ptr, _ptr]),
    "SetIntermediateCallback": (_bool, [_ptr, _INTERMEDIATE]),
    "IpoptSolve": (ctypes.c_int, [_ptr] * 8),
    "GetIpoptCurrentIterate": (_bool, [_ptr, _bool, _idx, _ptr, _ptr, _ptr, _idx, _ptr, _ptr]),
    "GetIpoptCurrentViolations": (_bool, [_ptr, _bool, _idx, _ptr, _ptr, _ptr, _ptr, _ptr, _idx,
                                          _ptr, _ptr]),
    "GetIpoptVersion": (None, [ctypes.POINTER(ctypes.c_int)] * 3),
}


def _casadi_library() -> Tuple[Optional[pathlib.Path], str]:
    """The IPOPT library in the installed casadi package (found without importing casadi)."""
    try:
        spec = importlib.util.find_spec("casadi")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None, "the casadi package is not installed"
    names = {"win32": ("libipopt-3.dll", "libipopt*.dll", "ipopt*.dll"),
             "darwin": ("libipopt.3.dylib", "libipopt*.dylib")}.get(
        sys.platform, ("libipopt.so.3", "libipopt.so*"))   # the SONAME first: casadi's own
    for folder in map(pathlib.Path, spec.submodule_search_locations or []):
        found = [p for pattern in names for p in sorted(folder.glob(pattern)) if p.is_file()]
        if found:
            return found[0], ""
    return None, f"no {' or '.join(names)} in the casadi package"


def find_ipopt_library() -> pathlib.Path:
    """The IPOPT (>= 3.14) shared library: the file named by ``PYOMO_LAP_IPOPT_LIBRARY``, else
    the one in the installed ``casadi`` package, else the system's
    (``ctypes.util.find_library("ipopt")``, maybe a bare name the loader resolves).

    Raises
    ------
    IpoptLibraryNotFound
        When ``PYOMO_LAP_IPOPT_LIBRARY`` is not a file, or nothing was found (with the fix).
    """
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        if not pathlib.Path(env).expanduser().is_file():
            raise IpoptLibraryNotFound(
                f"{ENV_VAR}={env!r} is not a file: set it to the path of an IPOPT >= 3.14 "
                "shared library, or unset it to use the library of the casadi package")
        return pathlib.Path(env).expanduser()
    path, why_not = _casadi_library()
    name = path or ctypes.util.find_library("ipopt")
    if not name:
        raise IpoptLibraryNotFound(
            f"IPOPT shared library not found: {ENV_VAR} is not set, {why_not}, and there is no "
            f"system library 'ipopt'. Fix: `pip install casadi` (its wheel ships libipopt), or "
            f"set {ENV_VAR} to the path of an IPOPT >= 3.14 shared library")
    return pathlib.Path(name)


@functools.lru_cache(maxsize=None)
def _load(key: str) -> ctypes.CDLL:
    path = pathlib.Path(key)
    if sys.platform.startswith("win") and path.parent != pathlib.Path("."):
        os.add_dll_directory(str(path.parent.resolve()))   # MUMPS, BLAS, gfortran beside it
    fix = f"Fix: `pip install --force-reinstall casadi`, or point {ENV_VAR} to IPOPT >= 3.14"
    try:
        lib = ctypes.CDLL(key)
    except OSError as exc:
        raise IpoptLibraryNotFound(f"the IPOPT library {key} could not be loaded ({exc}). "
                                   f"{fix}") from exc
    for name, (restype, argtypes) in _SIGNATURES.items():
        if not hasattr(lib, name):
            raise IpoptLibraryNotFound(f"{key} has no function {name}: not the C interface of "
                                       f"IPOPT >= 3.14. {fix}")
        getattr(lib, name).restype, getattr(lib, name).argtypes = restype, argtypes
    version = [ctypes.c_int(-1) for _ in range(3)]
    lib.GetIpoptVersion(*map(ctypes.byref, version))
    lib.version = tuple(v.value for v in version)
    if lib.version < (3, 14, 0):
        raise IpoptLibraryNotFound(f"{key} is IPOPT {'.'.join(map(str, lib.version))}; this "
                                   f"binding needs IPOPT >= 3.14 (C bool callbacks). {fix}")
    return lib


def load_ipopt_library(path: "str | os.PathLike | None" = None) -> ctypes.CDLL:
    """The IPOPT library (default :func:`find_ipopt_library`), loaded once, with the C
    signatures of the functions used declared.

    Raises
    ------
    IpoptLibraryNotFound
        When it cannot be found or loaded, lacks a function, or is older than IPOPT 3.14.
    """
    return _load(str(find_ipopt_library() if path is None else pathlib.Path(path)))


def ipopt_version() -> Tuple[int, int, int]:
    """Version ``(major, minor, release)`` of the IPOPT library (``GetIpoptVersion``)."""
    return load_ipopt_library().version


def _free_problem(lib: ctypes.CDLL, handle: int) -> None:
    """``FreeIpoptProblem`` (a module-level function so that tests can count the calls)."""
    lib.FreeIpoptProblem(handle)


_NO_EVAL = (_EVAL_F(lambda *a: False), _EVAL_G(lambda *a: False), _EVAL_F(lambda *a: False),
            _EVAL_JAC(lambda *a: False), _EVAL_H(lambda *a: False))
_ONE_VARIABLE = np.array([-1.0, 1.0])


def _create(lib, n, x_lb, x_ub, m, g_lb, g_ub, nnz_jac, nnz_hess, callbacks) -> int:
    """``CreateIpoptProblem`` (0-based indices)."""
    handle = lib.CreateIpoptProblem(n, x_lb.ctypes.data, x_ub.ctypes.data, m,
                                    g_lb.ctypes.data if m else None,
                                    g_ub.ctypes.data if m else None,
                                    nnz_jac, nnz_hess, 0, *callbacks)
    if not handle:
        raise RuntimeError("IPOPT refused the problem definition (CreateIpoptProblem returned "
                           "NULL)")
    return handle


@contextmanager
def _captured_c_stdout() -> Iterator[List[str]]:
    """Capture what C code prints on file descriptor 1 during the (short) block (POSIX only):
    IPOPT prints why it refuses an option there. The list receives the text at exit."""
    out: List[str] = []
    if sys.platform.startswith("win"):
        yield out
        return
    fflush = ctypes.CDLL(None).fflush
    fflush.argtypes, fflush.restype = [ctypes.c_void_p], ctypes.c_int
    for stream in (sys.stdout, sys.__stdout__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or odd stream: nothing to flush
            pass
    fflush(None)
    try:
        saved = os.dup(1)
    except OSError:   # no fd 1 (pythonw)
        yield out
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        try:
            os.dup2(tmp.fileno(), 1)
            try:
                yield out
            finally:
                fflush(None)
                os.dup2(saved, 1)
        finally:
            os.close(saved)
        tmp.seek(0)
        out.append(" ".join(tmp.read().decode("utf-8", "replace").split()))


def _option_candidates(value) -> List[Tuple[str, Any]]:
    """The typed values to try, in order, for a Python option value: ``("str", str)``,
    ``("int", int)`` or ``("num", float)``."""
    if isinstance(value, (bool, np.bool_)):
        return [("str", "yes" if value else "no")]
    if isinstance(value, numbers.Integral):
        value = int(value)
        return ([("int", value)] if _INT32_MIN <= value <= _INT32_MAX else []) + \
            [("num", float(value))]
    if isinstance(value, numbers.Real):
        value = float(value)
        integral = math.isfinite(value) and value.is_integer() and \
            _INT32_MIN <= value <= _INT32_MAX
        return [("num", value)] + ([("int", int(value))] if integral else [])
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        try:
            number = float(text)
        except ValueError:
            return [("str", text)]
        whole = number.is_integer() and text.strip().lstrip("+-").isdigit()
        return [("str", text)] + _option_candidates(int(number) if whole else number)
    raise TypeError(f"IPOPT option value must be str, bool, int or float, not "
                    f"{type(value).__name__} ({value!r})")


def _setters(lib) -> Dict[str, Callable]:
    return {"str": lambda h, k, v: lib.AddIpoptStrOption(h, k.encode(), v.encode()),
            "num": lambda h, k, v: lib.AddIpoptNumOption(h, k.encode(), v),
            "int": lambda h, k, v: lib.AddIpoptIntOption(h, k.encode(), v)}


@functools.lru_cache(maxsize=None)
def _checker(lib: ctypes.CDLL) -> int:
    """A never-solved one-variable problem on which option values are tried."""
    return _create(lib, 1, _ONE_VARIABLE[:1], _ONE_VARIABLE[1:], 0, None, None, 0, 0, _NO_EVAL)


def _try_option(lib, name: str, value) -> Tuple[Optional[Tuple[str, Any]], List[str]]:
    """Set ``name = value`` on a never-solved problem: ((kind, typed value) or None, IPOPT's
    reasons for refusing the candidates tried). Raises TypeError for a value of another type."""
    reasons = []
    set_option = _setters(lib)
    with _LOCK:
        for kind, typed in _option_candidates(value):
            with _captured_c_stdout() as text:
                ok = set_option[kind](_checker(lib), name, typed)
            if ok:
                return (kind, typed), reasons
            if text and text[0]:
                reasons.append(text[0])
    return None, reasons
