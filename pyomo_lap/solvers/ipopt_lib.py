r"""A thin ctypes binding to IPOPT's C interface (``IpStdCInterface.h``, IPOPT >= 3.14).

Nothing is compiled: the binding loads the ``libipopt`` shared library that ships inside the
``casadi`` wheel (or any IPOPT 3.14 library, see :func:`find_ipopt_library`) and calls it with
:mod:`ctypes`; the user's callbacks get NumPy arrays that are zero-copy views on IPOPT's buffers.

The problem solved is

.. math::

    \min_x f(x) \quad\text{s.t.}\quad g_L \le g(x) \le g_U, \quad x_L \le x \le x_U,

with ``n`` variables and ``m`` constraints; an equality constraint has ``g_L = g_U``.

Sign conventions (IPOPT's, checked against the KKT conditions in ``tests/test_ipopt_lib.py``)
------------------------------------------------------------------------------------------------
The Lagrangian is :math:`L(x, \lambda) = f(x) + g(x)^T \lambda` (the Hessian callback returns
:math:`\sigma_f \nabla^2 f(x) + \sum_i \lambda_i \nabla^2 g_i(x)`, lower triangle) and at a
solution

.. math::

    \nabla f(x) + J_g(x)^T \lambda - z_L + z_U = 0, \qquad z_L \ge 0, \quad z_U \ge 0,

where ``mult_g`` is :math:`\lambda`, ``mult_x_L`` is :math:`z_L` and ``mult_x_U`` is
:math:`z_U` (both bound multipliers are non-negative). Hence ``mult_g[i] <= 0`` when the
*lower* bound ``g_L[i]`` is active, ``mult_g[i] >= 0`` when the *upper* bound ``g_U[i]`` is
active, free for an equality. All multipliers returned are those of the *unscaled* problem,
also when user scaling (:meth:`IpoptProblem.set_scaling`) is active.

Infinite bounds
---------------
Bounds may be ``-inf``/``+inf``: they are passed to IPOPT unchanged, and IPOPT treats any lower
bound ``<= nlp_lower_bound_inf`` (default -1e19) and any upper bound ``>= nlp_upper_bound_inf``
(default 1e19) as absent. Beware that finite bounds beyond +-1e19 are absent too.

Output
------
IPOPT prints its banner and iteration log on the *C* ``stdout`` (file descriptor 1), not on
Python's :data:`sys.stdout`: ``contextlib.redirect_stdout`` does not catch it, and the order
with Python's own (buffered) prints may differ. ``print_level=0`` silences the log and
``sb="yes"`` the banner; :meth:`IpoptProblem.set_output_file` writes a log at its own level
independently of ``print_level``.

Options and their documentation
-------------------------------
:func:`ipopt_options_documentation` asks the library for the documentation of all its options
(IPOPT prints it with ``print_options_documentation = yes``) and parses it: name, type, valid
range, default, the values of string options. :func:`check_ipopt_option` checks one option
before any problem is built: the library decides (the value is set on a never-solved problem),
the documentation says what was expected, and non-finite numbers are refused too.

Options file
------------
Like the ``ipopt`` executable and CasADi, IPOPT reads an options file ``ipopt.opt`` from the
current directory at every solve if one exists, and its values *override* those set with
:meth:`IpoptProblem.add_option`. ``add_option("option_file_name", "")`` turns this off
(another name reads that file instead).

Interrupting
------------
Exceptions raised by a callback are never lost: the first one is stored, IPOPT is stopped at
its next intermediate callback (evaluation callbacks report a failed evaluation meanwhile), the
IPOPT problem is freed, and :meth:`IpoptProblem.solve` re-raises it with the partial
:class:`IpoptResult` attached as ``exc.ipopt_result``. Ctrl-C during a solve (when the solve
runs in the main thread and Python's default SIGINT handler is in place) is caught by a
temporary SIGINT handler that only sets a flag; IPOPT stops at its next iteration and
:meth:`~IpoptProblem.solve` raises :class:`KeyboardInterrupt` with ``ipopt_result`` attached.
Ctrl-C is noticed only when IPOPT calls back into Python, so not in the middle of a long
sparse factorisation.

Assumptions on the library
--------------------------
IPOPT >= 3.14 (``bool`` callbacks), built with ``ipnumber = double`` and a 32-bit
``ipindex`` (the default, and the casadi build); a library built with ``IPOPT_SINGLE`` or
``IPOPT_INT64`` cannot be detected from its C interface and must not be used.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import atexit
import importlib.util
import math
import numbers
import os
import pathlib
import signal
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

__all__ = [
    "ENV_VAR", "RETURN_STATUS", "STATUS_CODE", "IpoptLibraryNotFound", "IpoptResult",
    "IpoptProblem", "find_ipopt_library", "load_ipopt_library", "ipopt_version",
    "IpoptOptionDoc", "IpoptOptionError", "ipopt_options_documentation", "check_ipopt_option",
    "OPTIONS_URL",
]

ENV_VAR = "PYOMO_LAP_IPOPT_LIBRARY"
"""Environment variable naming the IPOPT shared library to load (a path to the file)."""

RETURN_STATUS: Dict[int, str] = {
    0: "Solve_Succeeded",
    1: "Solved_To_Acceptable_Level",
    2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small",
    4: "Diverging_Iterates",
    5: "User_Requested_Stop",
    6: "Feasible_Point_Found",
    -1: "Maximum_Iterations_Exceeded",
    -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation",
    -4: "Maximum_CpuTime_Exceeded",
    -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom",
    -11: "Invalid_Problem_Definition",
    -12: "Invalid_Option",
    -13: "Invalid_Number_Detected",
    -100: "Unrecoverable_Exception",
    -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory",
    -199: "Internal_Error",
}
"""``enum ApplicationReturnStatus`` of ``IpReturnCodes_inc.h`` (IPOPT 3.14): value -> name."""

STATUS_CODE: Dict[str, int] = {name: code for code, name in RETURN_STATUS.items()}
"""Inverse of :data:`RETURN_STATUS`: name -> value."""

_USER_REQUESTED_STOP = STATUS_CODE["User_Requested_Stop"]
_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


class IpoptLibraryNotFound(RuntimeError):
    """No usable IPOPT shared library (not found, not loadable, or not IPOPT >= 3.14)."""


# --------------------------------------------------------------------------- C types
_ipnumber = ctypes.c_double          # ipnumber (IPOPT built without IPOPT_SINGLE)
_ipindex = ctypes.c_int32            # ipindex (IPOPT built without IPOPT_INT64)
_bool = ctypes.c_bool                # C99 bool (IPOPT >= 3.14)
_ptr = ctypes.c_void_p               # pointers: received as int or None, passed as int
_INDEX_DTYPE = np.int32

_EVAL_F_CB = ctypes.CFUNCTYPE(_bool, _ipindex, _ptr, _bool, _ptr, _ptr)
_EVAL_GRAD_F_CB = ctypes.CFUNCTYPE(_bool, _ipindex, _ptr, _bool, _ptr, _ptr)
_EVAL_G_CB = ctypes.CFUNCTYPE(_bool, _ipindex, _ptr, _bool, _ipindex, _ptr, _ptr)
_EVAL_JAC_G_CB = ctypes.CFUNCTYPE(_bool, _ipindex, _ptr, _bool, _ipindex, _ipindex, _ptr, _ptr,
                                  _ptr, _ptr)
_EVAL_H_CB = ctypes.CFUNCTYPE(_bool, _ipindex, _ptr, _bool, _ipnumber, _ipindex, _ptr, _bool,
                              _ipindex, _ptr, _ptr, _ptr, _ptr)
_INTERMEDIATE_CB = ctypes.CFUNCTYPE(_bool, _ipindex, _ipindex, _ipnumber, _ipnumber, _ipnumber,
                                    _ipnumber, _ipnumber, _ipnumber, _ipnumber, _ipnumber,
                                    _ipindex, _ptr)

_SIGNATURES = {
    # name: (restype, argtypes)
    "CreateIpoptProblem": (_ptr, [_ipindex, _ptr, _ptr, _ipindex, _ptr, _ptr, _ipindex, _ipindex,
                                  _ipindex, _EVAL_F_CB, _EVAL_G_CB, _EVAL_GRAD_F_CB,
                                  _EVAL_JAC_G_CB, _EVAL_H_CB]),
    "FreeIpoptProblem": (None, [_ptr]),
    "AddIpoptStrOption": (_bool, [_ptr, ctypes.c_char_p, ctypes.c_char_p]),
    "AddIpoptNumOption": (_bool, [_ptr, ctypes.c_char_p, _ipnumber]),
    "AddIpoptIntOption": (_bool, [_ptr, ctypes.c_char_p, _ipindex]),
    "OpenIpoptOutputFile": (_bool, [_ptr, ctypes.c_char_p, ctypes.c_int]),
    "SetIpoptProblemScaling": (_bool, [_ptr, _ipnumber, _ptr, _ptr]),
    "SetIntermediateCallback": (_bool, [_ptr, _INTERMEDIATE_CB]),
    "IpoptSolve": (ctypes.c_int, [_ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr]),
    "GetIpoptCurrentIterate": (_bool, [_ptr, _bool, _ipindex, _ptr, _ptr, _ptr, _ipindex, _ptr,
                                       _ptr]),
    "GetIpoptVersion": (None, [ctypes.POINTER(ctypes.c_int)] * 3),
}


# --------------------------------------------------------------------------- finding, loading
def _library_patterns() -> Tuple[List[str], List[str]]:
    """(preferred file names, glob patterns) of the IPOPT library on this platform."""
    if sys.platform.startswith("win"):
        return (["libipopt-3.dll", "ipopt-3.dll"], ["libipopt*.dll", "ipopt*.dll"])
    if sys.platform == "darwin":
        return (["libipopt.3.dylib"], ["libipopt*.dylib"])
    # the file named as the SONAME first: it is the one casadi's own plugin loads
    return (["libipopt.so.3"], ["libipopt.so*"])


def _casadi_library() -> Tuple[Optional[pathlib.Path], str]:
    """The IPOPT library inside the installed casadi package (without importing casadi)."""
    try:
        spec = importlib.util.find_spec("casadi")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None, "the casadi package is not installed"
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [os.path.dirname(spec.origin)]
    preferred, patterns = _library_patterns()
    for d in dirs:
        d = pathlib.Path(d)
        for name in preferred:
            if (d / name).is_file():
                return d / name, ""
        found = sorted({p for pat in patterns for p in d.glob(pat) if p.is_file()},
                       key=lambda p: (len(p.name), p.name))
        if found:
            return found[0], ""
    return None, (f"no {' or '.join(patterns)} in the casadi package directory "
                  f"{', '.join(map(str, dirs))}")


def find_ipopt_library() -> pathlib.Path:
    """Locate the IPOPT (>= 3.14) shared library.

    Looked for in this order:

    1. the environment variable ``PYOMO_LAP_IPOPT_LIBRARY`` (a path to the library file);
    2. the library shipped inside the installed ``casadi`` package (``libipopt.so*`` on Linux,
       ``libipopt*.dylib`` on macOS, ``libipopt*.dll``/``ipopt*.dll`` on Windows), found
       without importing casadi;
    3. ``ctypes.util.find_library("ipopt")`` (the system's library search path).

    Returns
    -------
    pathlib.Path
        Path of the library file; in case 3 possibly a bare library name (``libipopt.so.3``)
        that the dynamic loader resolves.

    Raises
    ------
    IpoptLibraryNotFound
        When ``PYOMO_LAP_IPOPT_LIBRARY`` is set but is not a file, or nothing was found.
    """
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        path = pathlib.Path(env).expanduser()
        if not path.is_file():
            raise IpoptLibraryNotFound(
                f"{ENV_VAR}={env!r} is not a file: set it to the path of an IPOPT >= 3.14 "
                f"shared library (e.g. the libipopt inside the casadi package), or unset it to "
                f"use the library of the installed casadi package")
        return path
    path, why_not = _casadi_library()
    if path is not None:
        return path
    name = ctypes.util.find_library("ipopt")
    if name:
        return pathlib.Path(name)
    raise IpoptLibraryNotFound(
        "IPOPT shared library not found: looked for the environment variable "
        f"{ENV_VAR} (not set), for the library inside the casadi package ({why_not}), and for "
        "a system library 'ipopt' (ctypes.util.find_library found none). Fix: `pip install "
        f"casadi` (its wheel ships libipopt), or set {ENV_VAR} to the path of an IPOPT >= 3.14 "
        "shared library (libipopt.so / libipopt.dylib / ipopt.dll).")


_LOAD_LOCK = threading.Lock()
_LIBRARIES: Dict[str, ctypes.CDLL] = {}
_DLL_DIRECTORIES: list = []          # keep Windows os.add_dll_directory handles alive


def load_ipopt_library(path: "str | os.PathLike | None" = None) -> ctypes.CDLL:
    """Load the IPOPT shared library once (cached per path) and declare its C signatures.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The library file; default :func:`find_ipopt_library`.

    Returns
    -------
    ctypes.CDLL
        The library with ``argtypes``/``restype`` set for every function of
        ``IpStdCInterface.h`` that this module uses.

    Raises
    ------
    IpoptLibraryNotFound
        When the library cannot be found or loaded, lacks a function of the C interface, or
        is older than IPOPT 3.14.
    """
    path = find_ipopt_library() if path is None else pathlib.Path(path)
    key = str(path)
    with _LOAD_LOCK:
        lib = _LIBRARIES.get(key)
        if lib is not None:
            return lib
        if sys.platform.startswith("win") and path.parent != pathlib.Path("."):
            try:   # the dependencies (MUMPS, BLAS, gfortran) sit next to the DLL
                _DLL_DIRECTORIES.append(os.add_dll_directory(str(path.parent.resolve())))
            except (AttributeError, OSError):
                pass
        try:
            lib = ctypes.CDLL(key)
        except OSError as exc:
            raise IpoptLibraryNotFound(
                f"the IPOPT library {key} could not be loaded ({exc}). Fix: reinstall casadi "
                f"(`pip install --force-reinstall casadi`) or point {ENV_VAR} to a working "
                "IPOPT >= 3.14 shared library") from exc
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                func = getattr(lib, name)
            except AttributeError:
                raise IpoptLibraryNotFound(
                    f"{key} has no function {name}: not the C interface of IPOPT >= 3.14. Fix: "
                    f"`pip install casadi`, or point {ENV_VAR} to libipopt of IPOPT >= 3.14"
                ) from None
            func.restype = restype
            func.argtypes = argtypes
        version = _version_of(lib)
        if version < (3, 14, 0):
            raise IpoptLibraryNotFound(
                f"{key} is IPOPT {'.'.join(map(str, version))}; this binding needs IPOPT >= 3.14 "
                f"(C bool callbacks). Fix: `pip install casadi` or point {ENV_VAR} elsewhere")
        _LIBRARIES[key] = lib
        return lib


def _version_of(lib: ctypes.CDLL) -> Tuple[int, int, int]:
    major, minor, release = ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_int(-1)
    lib.GetIpoptVersion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(release))
    return (major.value, minor.value, release.value)


def ipopt_version(path: "str | os.PathLike | None" = None) -> Tuple[int, int, int]:
    """Version ``(major, minor, release)`` of the IPOPT library (``GetIpoptVersion``).

    Raises
    ------
    IpoptLibraryNotFound
        See :func:`load_ipopt_library`.
    """
    return _version_of(load_ipopt_library(path))


def _free_problem(lib: ctypes.CDLL, handle: int) -> None:
    """``FreeIpoptProblem`` (a module-level function so that tests can count the calls)."""
    lib.FreeIpoptProblem(handle)


# --------------------------------------------------------------------------- option checking
@contextmanager
def _captured_c_stdout() -> Iterator[List[str]]:
    """Capture what C code prints on file descriptor 1 during the block (POSIX only).

    Yields a list that receives the captured text (one string) at exit; on platforms or in
    situations where fd 1 cannot be redirected, nothing is captured and output passes. The
    block must be short: what another thread prints meanwhile is captured too (and dropped).
    """
    out: List[str] = []
    if sys.platform.startswith("win"):
        yield out
        return
    try:
        libc = ctypes.CDLL(None)
        fflush = libc.fflush
        fflush.argtypes, fflush.restype = [ctypes.c_void_p], ctypes.c_int
        for stream in (sys.stdout, sys.__stdout__):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or odd stream: nothing to flush
                pass
        fflush(None)
        tmp = tempfile.TemporaryFile(mode="w+b")
    except (OSError, AttributeError):
        yield out
        return
    try:
        saved = os.dup(1)
    except OSError:   # no fd 1 (e.g. pythonw)
        tmp.close()
        yield out
        return
    try:
        os.dup2(tmp.fileno(), 1)
        try:
            yield out
        finally:
            fflush(None)
            os.dup2(saved, 1)
        tmp.seek(0)
        out.append(tmp.read().decode("utf-8", "replace"))
    finally:
        os.close(saved)
        tmp.close()


class _OptionChecker:
    """A never-solved 1-variable IPOPT problem on which option values are tried, so that
    :meth:`IpoptProblem.add_option` refuses a bad option at once (and learns its type)."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.lock = threading.Lock()
        self.callbacks = (_EVAL_F_CB(lambda *a: False), _EVAL_G_CB(lambda *a: False),
                          _EVAL_GRAD_F_CB(lambda *a: False), _EVAL_JAC_G_CB(lambda *a: False),
                          _EVAL_H_CB(lambda *a: False))
        bounds = np.array([-1.0, 1.0])
        self.handle = lib.CreateIpoptProblem(1, bounds[:1].ctypes.data, bounds[1:].ctypes.data,
                                             0, None, None, 0, 0, 0, *self.callbacks)
        if not self.handle:
            raise RuntimeError("IPOPT refused to create the 1-variable problem used to check "
                               "options (CreateIpoptProblem returned NULL)")

    def free(self) -> None:
        if self.handle:
            self.lib.FreeIpoptProblem(self.handle)
            self.handle = None

    def attempt(self, kind: str, name: bytes, value) -> Tuple[bool, str]:
        """Try one typed value; (accepted, what IPOPT printed)."""
        func = {"str": self.lib.AddIpoptStrOption, "num": self.lib.AddIpoptNumOption,
                "int": self.lib.AddIpoptIntOption}[kind]
        with self.lock, _captured_c_stdout() as text:
            ok = bool(func(self.handle, name, value))
        return ok, " ".join((text[0] if text else "").split())


_CHECKERS: Dict[int, _OptionChecker] = {}


def _checker(lib: ctypes.CDLL) -> _OptionChecker:
    with _LOAD_LOCK:
        checker = _CHECKERS.get(id(lib))
        if checker is None:
            checker = _CHECKERS[id(lib)] = _OptionChecker(lib)
        return checker


def _free_checkers() -> None:  # at interpreter exit
    for checker in _CHECKERS.values():
        checker.free()
    _CHECKERS.clear()


atexit.register(_free_checkers)


def _option_candidates(value) -> List[Tuple[str, Any]]:
    """The typed values to try, in order, for a Python option value."""
    if isinstance(value, (bool, np.bool_)):
        return [("str", b"yes" if value else b"no")]
    if isinstance(value, numbers.Integral):
        value = int(value)
        out: List[Tuple[str, Any]] = []
        if _INT32_MIN <= value <= _INT32_MAX:
            out.append(("int", value))
        return out + [("num", float(value))]
    if isinstance(value, numbers.Real):
        value = float(value)
        out = [("num", value)]
        if math.isfinite(value) and value.is_integer() and _INT32_MIN <= value <= _INT32_MAX:
            out.append(("int", int(value)))
        return out
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        out = [("str", text.encode())]
        try:
            number = float(text)
        except ValueError:
            return out
        return out + _option_candidates(int(number) if number.is_integer()
                                        and text.strip().lstrip("+-").isdigit() else number)
    raise TypeError(f"IPOPT option value must be str, bool, int or float, not "
                    f"{type(value).__name__} ({value!r})")


# --------------------------------------------------------------------------- option documentation
OPTIONS_URL = "https://coin-or.github.io/Ipopt/OPTIONS.html"
"""IPOPT's documentation of its options on the web (the latest release's)."""


@dataclasses.dataclass(frozen=True)
class IpoptOptionDoc:
    """One option as the IPOPT library documents it (:func:`ipopt_options_documentation`).

    Attributes
    ----------
    name : str
    kind : str
        ``"real"``, ``"integer"`` or ``"string"``.
    description : str
        IPOPT's one-line description.
    valid_range : str
        The valid range as IPOPT states it, e.g. ``"0 < tol"``, ``"0 <= print_level <= 12"``;
        ``""`` for a number without bounds and for strings.
    default : str
        The default value as IPOPT prints it (``"1e-08"``, ``"mumps"``).
    values : tuple of str
        The possible values of a string option (empty for numbers; empty too for the few
        string options that take any text, e.g. file names).
    category : str
        IPOPT's category (``"Termination"``, ``"Linear Solver"`` ...).
    """

    name: str
    kind: str
    description: str
    valid_range: str = ""
    default: str = ""
    values: Tuple[str, ...] = ()
    category: str = ""

    def expected(self) -> str:
        """What a value must be, in words: ``'an integer with 0 <= max_iter'``,
        ``'a finite number with 0 < tol'``, ``"one of 'yes', 'no'"``."""
        if self.kind == "integer":
            return "an integer" + (f" with {self.valid_range}" if self.valid_range else "")
        if self.kind == "real":
            return "a finite number" + (f" with {self.valid_range}" if self.valid_range else "")
        if self.values:
            return "one of " + ", ".join(repr(v) for v in self.values)
        return "a string"

    def described(self) -> str:
        """``' (IPOPT: "<description>")'``, or ``''`` for an option without one."""
        return f' (IPOPT: "{self.description}")' if self.description else ""


def _doc_number(text: str) -> str:
    """A number of IPOPT's doxygen output as plain text: ``10<sup>-08</sup>`` -> ``1e-08``,
    ``2.22045 &middot; 10<sup>-16</sup>`` -> ``2.22045e-16``."""
    import re
    text = text.strip()
    m = re.fullmatch(r"(?:([-+]?[\d.]+)\s*&middot;\s*)?([-+]?)10<sup>([-+]?\d+)</sup>", text)
    if m:
        return f"{m.group(2)}{m.group(1) or '1'}e{m.group(3)}"
    return text


def _parse_options_doxygen(text: str) -> Dict[str, IpoptOptionDoc]:
    """Parse what IPOPT prints with ``print_options_documentation = yes`` and
    ``print_options_mode = doxygen`` (IPOPT 3.14): one ``\\anchor OPT_<name>`` entry per
    option, with its type, range, default and possible values in fixed sentences."""
    import re
    out: Dict[str, IpoptOptionDoc] = {}
    category = ""
    for chunk in re.split(r"(?=^\\anchor OPT_|^\\subsection )", text, flags=re.M):
        if chunk.startswith("\\subsection "):
            parts = chunk.split("\n", 1)[0].split(" ", 2)
            category = parts[2].strip() if len(parts) > 2 else ""
            continue
        if not chunk.startswith("\\anchor OPT_"):
            continue
        lines = chunk.split("\n")
        name = lines[0][len("\\anchor OPT_"):].strip()
        head = re.match(r"<strong>(.*?)</strong>(?: \(<em>advanced</em>\))?(?::\s*(.*))?$",
                        lines[1] if len(lines) > 1 else "")
        if not name or head is None or head.group(1) != name:
            continue
        body = chunk.split("<blockquote>", 1)[-1].split("</blockquote>", 1)[0]
        body = body.replace("&le;", "<=").replace("&ge;", ">=")
        kind = re.search(r"for this (real|integer|string) option", body)
        if kind is None:
            continue
        valid_range, default, values = "", "", ()
        if kind.group(1) == "string":
            d = re.search(r'The default value for this string option is "(.*?)"\.', body)
            default = d.group(1) if d else ""
            listed = body.split("Possible values:", 1)[1] if "Possible values:" in body else ""
            if listed.strip() and not listed.lstrip().startswith("-"):   # "yes, no"
                values = tuple(v.strip() for v in listed.strip().split(",") if v.strip())
            else:
                values = tuple(re.findall(r"^\s*- (\S+?):", listed, flags=re.M))
            if "*" in values:            # any text (a file name)
                values = ()
        else:
            r = re.search(r"The valid range for this \w+ option is (.*?) and its default value "
                          r"is (.*?)\.(?:\s|$)", body, flags=re.S)
            if r:
                rng = " ".join(r.group(1).split())
                valid_range = "" if rng == "unrestricted" else " ".join(
                    _doc_number(w) if "sup>" in w else w for w in rng.split(" "))
                default = _doc_number(" ".join(r.group(2).split()))
        out[name] = IpoptOptionDoc(name=name, kind=kind.group(1),
                                   description=" ".join((head.group(2) or "").split()),
                                   valid_range=valid_range, default=default, values=values,
                                   category=category)
    return out


_DOCS: Dict[str, Dict[str, IpoptOptionDoc]] = {}


def ipopt_options_documentation(library: "str | os.PathLike | None" = None
                                ) -> Dict[str, IpoptOptionDoc]:
    """The options of the IPOPT library, as the library itself documents them.

    IPOPT prints the documentation of all its registered options when it is asked to
    (option ``print_options_documentation = yes``; ``print_options_mode = doxygen`` gives
    each option's type, valid range, default and possible values in fixed sentences):
    this solves a one-variable problem with ``max_iter = 0`` once, with that documentation
    written to a temporary output file (no console output, no ``ipopt.opt`` read), parses it
    and keeps the result for the process (a few milliseconds).

    Parameters
    ----------
    library : str or os.PathLike, optional
        The IPOPT library; default :func:`find_ipopt_library`.

    Returns
    -------
    dict
        Option name -> :class:`IpoptOptionDoc` (about 290 options for IPOPT 3.14.19, with
        the advanced ones). IPOPT leaves a few options out of its documentation (``sb``,
        the banner); :func:`check_ipopt_option` still accepts them when the library does.

    Raises
    ------
    IpoptLibraryNotFound
        See :func:`load_ipopt_library`.
    """
    lib_path = find_ipopt_library() if library is None else pathlib.Path(library)
    key = str(lib_path)
    with _LOAD_LOCK:
        docs = _DOCS.get(key)
    if docs is not None:
        return docs
    def gradient(x, out):
        out[:] = 2.0 * x

    def hessian(x, sigma, lam, out):
        out[:] = 2.0 * sigma

    prob = IpoptProblem(1, 0, [-1.0], [1.0], [], [], [], [], [0], [0],
                        objective=lambda x: float(x[0] * x[0]), gradient=gradient,
                        hessian=hessian, library=lib_path)
    for name, value in (("option_file_name", ""), ("print_level", 0), ("sb", "yes"),
                        ("max_iter", 0), ("print_options_documentation", "yes"),
                        ("print_options_mode", "doxygen"), ("print_advanced_options", "yes")):
        prob.add_option(name, value)
    fd, path = tempfile.mkstemp(prefix="pyomo_lap_ipopt_options_", suffix=".txt")
    os.close(fd)
    try:
        prob.set_output_file(path, print_level=3)
        prob.solve([0.5], catch_sigint=False)
        text = pathlib.Path(path).read_text(errors="replace")
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    docs = _parse_options_doxygen(text)
    with _LOAD_LOCK:
        _DOCS[key] = docs
    return docs


class IpoptOptionError(ValueError):
    """An option IPOPT refuses: ``name``, ``value`` and ``text`` (what was expected). The
    message is ``"<name> = <value>: <text>"``."""

    def __init__(self, name: str, value, text: str, suggestions=None):
        super().__init__(f"{name} = {value!r}: {text}")
        self.name, self.value, self.text = name, value, text
        self.suggestions = None if suggestions is None else list(suggestions)
        """For an unknown name, the closest known names (a list, maybe empty); else None."""


def close_matches(name: str, names, n: int = 3) -> List[str]:
    """The names most like ``name`` (:func:`difflib.get_close_matches`, and the names that
    contain it or that it contains, for abbreviations like ``max_it``)."""
    import difflib
    names = sorted(set(names))
    out = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    if len(name) >= 4:
        out += [k for k in names if (name in k or k in name) and k not in out and len(k) >= 4]
    return out[:n]


def check_ipopt_option(name: str, value, library: "str | os.PathLike | None" = None,
                       extra_names=()) -> Tuple[str, Any]:
    """Check one option against the IPOPT library, before any problem is built.

    The library decides (the value is set on a never-solved one-variable problem, as
    :meth:`IpoptProblem.add_option` does); :func:`ipopt_options_documentation` says what was
    expected. Non-finite numbers are refused too (IPOPT itself takes ``nan`` and ``inf``
    for most number options).

    Parameters
    ----------
    name : str
        IPOPT option name.
    value : str, bool, int or float
        As :meth:`IpoptProblem.add_option` takes it (a string that reads as a number is
        tried as one).
    library : str or os.PathLike, optional
        The IPOPT library; default :func:`find_ipopt_library`.
    extra_names : iterable of str
        Other valid names, only offered as close matches of an unknown name.

    Returns
    -------
    (kind, value)
        How IPOPT takes it: ``"str"``, ``"int"`` or ``"num"`` and the typed value.

    Raises
    ------
    IpoptOptionError (a ValueError)
        Unknown name (with the closest names, also in ``exc.suggestions``), a value of the
        wrong type, outside the option's range or not among its values, or not finite: the
        message names the option, the value and what was expected.
    IpoptLibraryNotFound
        See :func:`load_ipopt_library`.
    """
    docs = ipopt_options_documentation(library)
    doc = docs.get(name)
    try:
        candidates = _option_candidates(value)
    except TypeError:
        expected = doc.expected() if doc else "a str, bool, int or float"
        raise IpoptOptionError(name, value, f"expected {expected}, not a "
                               f"{type(value).__name__}") from None
    if doc is not None and doc.kind != "string":
        nonfinite = [v for k, v in candidates if k == "num" and not math.isfinite(v)]
        if nonfinite or (isinstance(value, numbers.Real) and not isinstance(value, bool)
                         and not math.isfinite(float(value))):
            raise IpoptOptionError(name, value, f"not finite; expected {doc.expected()}"
                                   f"{doc.described()}")
    checker = _checker(load_ipopt_library(library))
    key = name.strip().encode()
    reasons = []
    for kind, typed in candidates:
        ok, reason = checker.attempt(kind, key, typed)
        if ok:
            return kind, typed
        reasons.append(reason)
    if doc is None:
        if not reasons or any("It is not a valid option" in r for r in reasons):
            near = close_matches(name, list(docs) + list(extra_names))
            hint = (f"did you mean {' or '.join(map(repr, near))}?" if near else
                    f"IPOPT's options: {OPTIONS_URL}")
            v = ".".join(map(str, ipopt_version(library)))
            raise IpoptOptionError(name, value, f"unknown option: IPOPT {v} has no option "
                                   f"{name!r}; {hint}", suggestions=near)
        why = next((r for r in reasons if ", but it is of type" not in r), reasons[0])
        raise IpoptOptionError(name, value, f"refused by IPOPT: {why}")
    text = f"expected {doc.expected()}{doc.described()}"
    if doc.kind == "integer" and isinstance(value, (numbers.Real, str)) \
            and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            number = None
        if number is not None and math.isfinite(number) and not number.is_integer():
            text = f"not an integer; {text}"
    raise IpoptOptionError(name, value, text)


# --------------------------------------------------------------------------- results
@dataclasses.dataclass
class IpoptResult:
    """Outcome of :meth:`IpoptProblem.solve`.

    Attributes
    ----------
    status : int
        IPOPT's ``ApplicationReturnStatus`` (:data:`RETURN_STATUS`). In the partial result
        attached to an exception re-raised by :meth:`IpoptProblem.solve`, the status at which
        IPOPT stopped: ``User_Requested_Stop``, or ``Invalid_Number_Detected`` when the
        callback that failed was one IPOPT cannot recover from (gradient, Jacobian, Hessian,
        or any evaluation at the starting point).
    status_name : str
        Its name (``Solve_Succeeded``, ``User_Requested_Stop``, ...).
    x : ndarray (n,)
        Final (or, if stopped early, last accepted) primal point.
    obj : float
        Objective ``f(x)`` (unscaled).
    g : ndarray (m,)
        Constraint values ``g(x)``.
    mult_g : ndarray (m,)
        Constraint multipliers :math:`\\lambda` of :math:`L = f + g^T \\lambda`
        (<= 0 at an active lower bound, >= 0 at an active upper bound).
    mult_x_L, mult_x_U : ndarray (n,)
        Bound multipliers :math:`z_L, z_U \\ge 0`, with
        :math:`\\nabla f + J^T \\lambda - z_L + z_U = 0` at a solution.
    iterations : int
        Last ``iter_count`` seen by the intermediate callback (-1 if none was seen).
    interrupted : bool
        True when the solve was stopped by a :class:`KeyboardInterrupt` (Ctrl-C).
    wall_time_s : float
        Wall-clock time of ``IpoptSolve`` [s].
    evaluations : dict
        Number of calls of each callback (``f``, ``grad_f``, ``g``, ``jac_g``, ``h``;
        structure queries not counted).
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
    wall_time_s: float
    evaluations: Dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def success(self) -> bool:
        """True for ``Solve_Succeeded`` and ``Solved_To_Acceptable_Level``."""
        return self.status in (0, 1)


# --------------------------------------------------------------------------- problem
def _float_vector(a, length: int, what: str) -> np.ndarray:
    """A fresh contiguous float64 copy of ``a``, which must have shape (length,)."""
    arr = np.array(a, dtype=np.float64, copy=True, order="C")
    if arr.shape != (length,):
        raise ValueError(f"{what}: expected shape ({length},), got {arr.shape}")
    return arr


def _index_vector(a, length: Optional[int], upper: int, what: str) -> np.ndarray:
    raw = np.asarray(a)
    if raw.size == 0:
        raw = raw.astype(np.int64)
    if raw.ndim != 1 or (length is not None and raw.shape[0] != length):
        raise ValueError(f"{what}: expected a 1-D integer array"
                         + (f" of length {length}" if length is not None else "")
                         + f", got shape {raw.shape}")
    if raw.size and not np.issubdtype(raw.dtype, np.integer):
        if not (np.issubdtype(raw.dtype, np.floating) and np.all(raw == np.round(raw))):
            raise ValueError(f"{what}: expected integer indices, got dtype {raw.dtype}")
    idx = raw.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= upper):
        bad = int(np.flatnonzero((idx < 0) | (idx >= upper))[0])
        raise ValueError(f"{what}[{bad}] = {idx[bad]} is outside [0, {upper}) (0-based indices)")
    return np.ascontiguousarray(idx, dtype=_INDEX_DTYPE)


def _viewer(length: int, readonly: bool) -> Callable[[int], np.ndarray]:
    """A function: address -> (length,) float64 NumPy view on that memory (views are cached
    by address, a few dozen at most; an address with a length always means the same view)."""
    if length == 0:
        empty = np.zeros(0)
        empty.flags.writeable = not readonly
        return lambda addr: empty
    ctype = _ipnumber * length
    cache: Dict[int, np.ndarray] = {}

    def view(addr: int) -> np.ndarray:
        arr = cache.get(addr)
        if arr is None:
            if len(cache) >= 64:
                cache.clear()
            arr = np.frombuffer(ctype.from_address(addr), dtype=np.float64)
            if readonly:
                arr.flags.writeable = False
            cache[addr] = arr
        return arr

    view.cache = cache  # type: ignore[attr-defined]
    return view


class IpoptProblem:
    """A nonlinear program solved by IPOPT through its C interface.

    Parameters
    ----------
    n, m : int
        Number of variables (>= 1) and of constraints (>= 0).
    x_lb, x_ub : array_like (n,)
        Variable bounds (``-inf``/``+inf`` for none).
    g_lb, g_ub : array_like (m,)
        Constraint bounds (``g_lb[i] == g_ub[i]`` for an equality).
    jac_rows, jac_cols : array_like of int (nnz_jac,)
        0-based sparsity pattern of the constraint Jacobian ``J[i, j] = dg_i/dx_j`` (row
        ``i`` < m, column ``j`` < n). IPOPT needs ``nnz_jac >= 1`` when ``m > 0`` (list a
        structural zero if need be). Duplicate entries are summed by IPOPT.
    hess_rows, hess_cols : array_like of int (nnz_hess,)
        0-based sparsity pattern of the Hessian of the Lagrangian, lower triangle only
        (``row >= col``; an entry of the upper triangle raises ValueError since IPOPT would
        add it to its mirror image). Empty when ``hessian`` is None.
    objective : callable ``objective(x) -> float``
        :math:`f(x)`.
    gradient : callable ``gradient(x, out)``
        Fills ``out`` (n,) with :math:`\\nabla f(x)`.
    constraints : callable ``constraints(x, out)``
        Fills ``out`` (m,) with :math:`g(x)`. May be None when ``m == 0``.
    jacobian : callable ``jacobian(x, out)``
        Fills ``out`` (nnz_jac,) with the Jacobian values in the order of
        ``(jac_rows, jac_cols)``. May be None when ``m == 0``.
    hessian : callable ``hessian(x, obj_factor, lam, out)`` or None
        Fills ``out`` (nnz_hess,) with the values of
        :math:`\\sigma_f \\nabla^2 f(x) + \\sum_i \\lambda_i \\nabla^2 g_i(x)`
        (``obj_factor`` is :math:`\\sigma_f`, ``lam`` (m,) is :math:`\\lambda`) in the order
        of ``(hess_rows, hess_cols)``. None: IPOPT's limited-memory quasi-Newton
        approximation is used (the option ``hessian_approximation=limited-memory`` is set).
    intermediate : callable ``intermediate(info) -> bool | None``, optional
        Called once per IPOPT iteration with a dict ``info`` (keys ``alg_mod`` (0 regular,
        1 restoration), ``iter_count``, ``obj_value``, ``inf_pr``, ``inf_du``, ``mu``,
        ``d_norm``, ``regularization_size``, ``alpha_du``, ``alpha_pr``, ``ls_trials``).
        Returning False stops IPOPT (status ``User_Requested_Stop``); None or True go on.
        :meth:`current_iterate` may be called from it. Also the attribute
        :attr:`intermediate`, which may be replaced between solves.
    library : str or os.PathLike, optional
        IPOPT shared library to use; default :func:`find_ipopt_library`.

    Notes
    -----
    The arrays given to the callbacks are zero-copy views on IPOPT's memory, valid during the
    call only: ``x`` (n,) and ``lam`` (m,) are read-only, ``out`` must be filled in place
    (``out[:] = ...``, never rebound). Copy ``x`` (``x.copy()``) to keep it: the same memory
    holds the next iterate. IPOPT's ``new_x`` flag (False when ``x`` is the same point as at
    the previous call of any callback) is available as :attr:`last_new_x` during a call.

    An evaluation callback may return False (exactly) to report a failed evaluation (e.g. a
    point outside the domain); IPOPT then shortens its step. The objective may return NaN for
    the same purpose. Any exception stops the solve (see :meth:`solve`).

    The object holds no IPOPT memory between solves: each :meth:`solve` creates the IPOPT
    problem, applies the options, scaling and output file recorded so far, solves and frees
    it, so the object can be solved again (warm starts) and is not thread-safe.

    Raises
    ------
    ValueError
        On inconsistent sizes, bounds (NaN, lower > upper) or sparsity patterns.
    TypeError
        When a required callback is not callable.
    IpoptLibraryNotFound
        When no IPOPT library can be loaded.
    """

    def __init__(self, n: int, m: int, x_lb, x_ub, g_lb, g_ub, jac_rows, jac_cols, hess_rows,
                 hess_cols, *, objective: Callable, gradient: Callable,
                 constraints: Optional[Callable] = None, jacobian: Optional[Callable] = None,
                 hessian: Optional[Callable] = None, intermediate: Optional[Callable] = None,
                 library: "str | os.PathLike | None" = None):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n = {n!r}: IPOPT needs at least one variable")
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 0:
            raise ValueError(f"m = {m!r}: expected a number of constraints >= 0")
        self.n, self.m = int(n), int(m)
        self.x_lb = _float_vector(x_lb, self.n, "x_lb")
        self.x_ub = _float_vector(x_ub, self.n, "x_ub")
        self.g_lb = _float_vector(g_lb, self.m, "g_lb") if self.m else np.zeros(0)
        self.g_ub = _float_vector(g_ub, self.m, "g_ub") if self.m else np.zeros(0)
        for lo, up, what in ((self.x_lb, self.x_ub, "x"), (self.g_lb, self.g_ub, "g")):
            bad = np.flatnonzero(np.isnan(lo) | np.isnan(up) | (lo > up) | (lo == np.inf)
                                 | (up == -np.inf))
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"bounds of {what}[{i}]: [{lo[i]}, {up[i]}] is not a valid "
                                 f"interval ({bad.size} invalid in all)")
        self.jac_rows = _index_vector(jac_rows, None, max(self.m, 1), "jac_rows")
        self.jac_cols = _index_vector(jac_cols, self.jac_rows.size, self.n, "jac_cols")
        self.hess_rows = _index_vector(hess_rows, None, self.n, "hess_rows")
        self.hess_cols = _index_vector(hess_cols, self.hess_rows.size, self.n, "hess_cols")
        self.nnz_jac, self.nnz_hess = int(self.jac_rows.size), int(self.hess_rows.size)
        if self.m == 0 and self.nnz_jac:
            raise ValueError("jac_rows/jac_cols must be empty when m == 0")
        if self.m > 0 and self.nnz_jac == 0:
            raise ValueError("IPOPT's C interface needs at least one Jacobian entry when m > 0: "
                             "list one structural zero (and fill it with 0.0)")
        upper = np.flatnonzero(self.hess_rows < self.hess_cols)
        if upper.size:
            i = int(upper[0])
            raise ValueError(f"Hessian entry {i} = ({self.hess_rows[i]}, {self.hess_cols[i]}) is "
                             "in the upper triangle: give the lower triangle only (row >= col)")
        if hessian is None and self.nnz_hess:
            raise ValueError("hess_rows/hess_cols must be empty when hessian is None")
        for name, func in (("objective", objective), ("gradient", gradient)):
            if not callable(func):
                raise TypeError(f"{name} must be callable, got {func!r}")
        if self.m and not (callable(constraints) and callable(jacobian)):
            raise TypeError("constraints and jacobian must be callables when m > 0")
        for name, func in (("hessian", hessian), ("intermediate", intermediate)):
            if func is not None and not callable(func):
                raise TypeError(f"{name} must be callable or None, got {func!r}")

        self._lib = load_ipopt_library(library)
        self._objective, self._gradient = objective, gradient
        self._constraints, self._jacobian = constraints, jacobian
        self._hessian, self.intermediate = hessian, intermediate
        self._options: Dict[str, Tuple[str, Any]] = {}
        self._scaling: Optional[Tuple[float, Optional[np.ndarray], Optional[np.ndarray]]] = None
        self._output: Optional[Tuple[bytes, int]] = None
        self._handle: Optional[int] = None
        self._solving = False
        self.last_new_x: bool = True
        """IPOPT's ``new_x`` flag of the callback being (or last) called."""
        self._reset_run_state()
        self._make_callbacks()
        if hessian is None:
            self.add_option("hessian_approximation", "limited-memory")

    # ----------------------------------------------------------------- options, scaling, output
    def add_option(self, name: str, value) -> None:
        """Set an IPOPT option (applied at every later :meth:`solve`).

        Parameters
        ----------
        name : str
            IPOPT option name (``tol``, ``max_iter``, ``print_level``, ``linear_solver``, ...).
        value : str, bool, int or float
            A bool becomes ``"yes"``/``"no"``; an int is tried as an Integer option, then as a
            Number option (``tol=1`` works); a float as a Number option, then (if integral) as
            an Integer option; a string as a String option, then as a number if it reads as
            one.

        Raises
        ------
        ValueError
            When IPOPT refuses the option (unknown name, wrong type, value out of range or
            not among the allowed strings); the message names the option and repeats
            IPOPT's reason.
        TypeError
            When ``value`` has another type.
        """
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"IPOPT option name must be a non-empty str, got {name!r}")
        key = name.strip().encode()
        reasons = []
        checker = _checker(self._lib)
        for kind, typed in _option_candidates(value):
            ok, reason = checker.attempt(kind, key, typed)
            if ok:
                self._options[name.strip()] = (kind, typed)
                return
            if reason:
                reasons.append(reason)
        informative = [r for r in reasons if ", but it is of type" not in r] or reasons
        why = f": {informative[0]}" if informative else ""
        raise ValueError(f"IPOPT option {name!r} = {value!r} was refused (unknown option, wrong "
                         f"type or value out of range){why}")

    @property
    def options(self) -> Dict[str, Any]:
        """The options set so far: name -> value as given to IPOPT (str, int or float)."""
        return {k: (v.decode() if kind == "str" else v) for k, (kind, v) in self._options.items()}

    def set_scaling(self, obj_scaling: float, x_scaling=None, g_scaling=None) -> None:
        """User scaling of the NLP (``SetIpoptProblemScaling``).

        IPOPT solves the problem in the scaled quantities ``obj_scaling * f``,
        ``x_scaling * x`` and ``g_scaling * g``; results and multipliers returned by
        :meth:`solve` are unscaled. IPOPT uses these factors only with the option
        ``nlp_scaling_method = "user-scaling"``, which must be set as well
        (``add_option("nlp_scaling_method", "user-scaling")``); otherwise only
        ``obj_scaling`` is applied (on top of the automatic scaling).

        Parameters
        ----------
        obj_scaling : float
            Objective factor (non-zero; negative maximises).
        x_scaling : array_like (n,), optional
            Variable factors (non-zero), None for none.
        g_scaling : array_like (m,), optional
            Constraint factors (non-zero), None for none.

        Raises
        ------
        ValueError
            On a wrong shape, or a zero or non-finite factor.
        """
        obj = float(obj_scaling)
        if not math.isfinite(obj) or obj == 0.0:
            raise ValueError(f"obj_scaling = {obj_scaling!r}: expected a finite non-zero number")
        arrays = []
        for a, length, what in ((x_scaling, self.n, "x_scaling"), (g_scaling, self.m,
                                                                      "g_scaling")):
            if a is None:
                arrays.append(None)
                continue
            arr = _float_vector(a, length, what)
            if not np.all(np.isfinite(arr) & (arr != 0.0)):
                raise ValueError(f"{what}: factors must be finite and non-zero")
            arrays.append(arr)
        if self.m == 0:
            arrays[1] = None
        self._scaling = (obj, arrays[0], arrays[1])

    def set_output_file(self, path: "str | os.PathLike", print_level: int = 5) -> None:
        """Write IPOPT's log to a file at every later solve (``OpenIpoptOutputFile``).

        The file is rewritten at each :meth:`solve`. Its level is independent of the console
        option ``print_level`` (``print_level=0`` with a file at level 5 logs only to the
        file).

        Parameters
        ----------
        path : str or os.PathLike
            Log file; its directory must exist.
        print_level : int
            IPOPT print level of the file, 0 (nothing) to 12 (everything); 5 is the usual
            iteration log.

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
        p = pathlib.Path(path)
        if not p.parent.is_dir():
            raise FileNotFoundError(f"directory of the IPOPT output file {p} does not exist")
        self._output = (os.fsencode(p), int(print_level))

    # ----------------------------------------------------------------- callbacks
    def _reset_run_state(self) -> None:
        self._exc: Optional[BaseException] = None
        self._failed = False
        self._sigint = False
        self._iterations = -1
        self._counts = {"f": 0, "grad_f": 0, "g": 0, "jac_g": 0, "h": 0}

    def _record(self, exc: BaseException) -> None:
        """Keep the first exception raised in a callback; IPOPT will be stopped."""
        if self._exc is None:
            self._exc = exc
        self._failed = True

    def _make_callbacks(self) -> None:
        n, m, nnz_j, nnz_h = self.n, self.m, self.nnz_jac, self.nnz_hess
        x_view, lam_view = _viewer(n, True), _viewer(m, True)
        grad_view, g_view = _viewer(n, False), _viewer(m, False)
        jac_view, hess_view = _viewer(nnz_j, False), _viewer(nnz_h, False)
        self._views = (x_view, lam_view, grad_view, g_view, jac_view, hess_view)
        objective, gradient = self._objective, self._gradient
        constraints, jacobian, hessian = self._constraints, self._jacobian, self._hessian
        jac_rows, jac_cols = self.jac_rows, self.jac_cols
        hess_rows, hess_cols = self.hess_rows, self.hess_cols
        c_double_at = _ipnumber.from_address
        memmove = ctypes.memmove
        record = self._record

        def structure(rows, cols, i_row, j_col, nnz):
            if nnz:
                memmove(i_row, rows.ctypes.data, nnz * rows.itemsize)
                memmove(j_col, cols.ctypes.data, nnz * cols.itemsize)
            return True

        def eval_f(_n, x, new_x, obj_value, _user):
            if self._failed:
                return False
            try:
                self.last_new_x = new_x
                self._counts["f"] += 1
                c_double_at(obj_value).value = float(objective(x_view(x)))
                return True
            except BaseException as exc:  # noqa: BLE001 - re-raised by solve()
                record(exc)
                return False

        def eval_grad_f(_n, x, new_x, grad_f, _user):
            if self._failed:
                return False
            try:
                self.last_new_x = new_x
                self._counts["grad_f"] += 1
                return gradient(x_view(x), grad_view(grad_f)) is not False
            except BaseException as exc:  # noqa: BLE001
                record(exc)
                return False

        def eval_g(_n, x, new_x, _m, g, _user):
            if self._failed:
                return False
            if m == 0:
                return True
            try:
                self.last_new_x = new_x
                self._counts["g"] += 1
                return constraints(x_view(x), g_view(g)) is not False
            except BaseException as exc:  # noqa: BLE001
                record(exc)
                return False

        def eval_jac_g(_n, x, new_x, _m, _nele, i_row, j_col, values, _user):
            if values is None:
                return structure(jac_rows, jac_cols, i_row, j_col, nnz_j)
            if self._failed:
                return False
            if m == 0:
                return True
            try:
                self.last_new_x = new_x
                self._counts["jac_g"] += 1
                return jacobian(x_view(x), jac_view(values)) is not False
            except BaseException as exc:  # noqa: BLE001
                record(exc)
                return False

        def eval_h(_n, x, new_x, obj_factor, _m, lam, _new_lam, _nele, i_row, j_col, values,
                   _user):
            if values is None:
                return structure(hess_rows, hess_cols, i_row, j_col, nnz_h)
            if self._failed or hessian is None:
                return False
            try:
                self.last_new_x = new_x
                self._counts["h"] += 1
                return hessian(x_view(x), obj_factor, lam_view(lam),
                               hess_view(values)) is not False
            except BaseException as exc:  # noqa: BLE001
                record(exc)
                return False

        def intermediate(alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm,
                         regularization_size, alpha_du, alpha_pr, ls_trials, _user):
            try:
                self._iterations = iter_count
                if self._failed or self._sigint:
                    return False
                user = self.intermediate
                if user is None:
                    return True
                answer = user({"alg_mod": alg_mod, "iter_count": iter_count,
                               "obj_value": obj_value, "inf_pr": inf_pr, "inf_du": inf_du,
                               "mu": mu, "d_norm": d_norm,
                               "regularization_size": regularization_size,
                               "alpha_du": alpha_du, "alpha_pr": alpha_pr,
                               "ls_trials": ls_trials})
                return answer is None or bool(answer)
            except BaseException as exc:  # noqa: BLE001
                record(exc)
                return False

        # the ctypes function objects must live as long as IPOPT may call them: keep them here
        self._c_callbacks = (_EVAL_F_CB(eval_f), _EVAL_G_CB(eval_g), _EVAL_GRAD_F_CB(eval_grad_f),
                             _EVAL_JAC_G_CB(eval_jac_g), _EVAL_H_CB(eval_h))
        self._c_intermediate = _INTERMEDIATE_CB(intermediate)

    # ----------------------------------------------------------------- solving
    def current_iterate(self, scaled: bool = False) -> Dict[str, np.ndarray]:
        """The current iterate, from inside the ``intermediate`` callback only
        (``GetIpoptCurrentIterate``).

        Parameters
        ----------
        scaled : bool
            True for the quantities of the scaled problem IPOPT works on.

        Returns
        -------
        dict
            Copies: ``x`` (n,), ``mult_x_L`` (n,), ``mult_x_U`` (n,), ``g`` (m,),
            ``mult_g`` (m,). In the restoration phase, the iterate mapped back to the
            original problem.

        Raises
        ------
        RuntimeError
            When called outside a solve, or when IPOPT cannot provide the iterate.
        """
        if self._handle is None:
            raise RuntimeError("current_iterate() can only be called during solve(), from the "
                               "intermediate callback")
        n, m = self.n, self.m
        out = {k: np.zeros(n) for k in ("x", "mult_x_L", "mult_x_U")}
        out.update({k: np.zeros(m) for k in ("g", "mult_g")})
        ok = self._lib.GetIpoptCurrentIterate(
            self._handle, bool(scaled), n, out["x"].ctypes.data, out["mult_x_L"].ctypes.data,
            out["mult_x_U"].ctypes.data, m, out["g"].ctypes.data if m else None,
            out["mult_g"].ctypes.data if m else None)
        if not ok:
            raise RuntimeError("IPOPT could not provide the current iterate "
                               "(GetIpoptCurrentIterate returned false)")
        return out

    @contextmanager
    def _sigint_as_flag(self, enabled: bool) -> Iterator[None]:
        """While IPOPT runs, Ctrl-C (SIGINT with Python's default handler) and a signal whose
        handler is a Python function (e.g. a SIGTERM handler that raises KeyboardInterrupt)
        only set a flag, checked at each iteration, instead of raising at a random point of a
        callback; the original handler of such a signal is called once IPOPT has stopped
        (:meth:`solve`)."""
        previous = {}
        self._deferred = []
        if enabled and threading.current_thread() is threading.main_thread():
            def on_signal(signum, frame):
                self._sigint = True
                self._deferred.append(signum)
            for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)):
                if sig is None:
                    continue
                try:
                    handler = signal.getsignal(sig)
                    if handler is signal.default_int_handler or (
                            callable(handler) and sig != signal.SIGINT):
                        previous[sig] = signal.signal(sig, on_signal)
                except (ValueError, OSError):  # pragma: no cover - no signals here
                    pass
        self._previous_handlers = dict(previous)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def solve(self, x0, mult_g=None, mult_x_L=None, mult_x_U=None, *,
              catch_sigint: bool = True) -> IpoptResult:
        """Solve the problem from ``x0`` (``IpoptSolve``).

        Parameters
        ----------
        x0 : array_like (n,)
            Starting point (IPOPT moves it strictly inside the bounds, option ``bound_push``).
        mult_g : array_like (m,), optional
            Starting constraint multipliers; used by IPOPT only with the option
            ``warm_start_init_point = "yes"`` (zeros when None).
        mult_x_L, mult_x_U : array_like (n,), optional
            Starting bound multipliers (>= 0), same condition (zeros when None).
        catch_sigint : bool
            Turn Ctrl-C into a clean stop (see the module documentation); False leaves the
            SIGINT handler alone.

        Returns
        -------
        IpoptResult
            Also when IPOPT fails or stops early: check ``status`` / ``success``.

        Raises
        ------
        KeyboardInterrupt
            Ctrl-C during the solve, or raised in a callback; IPOPT was stopped and freed,
            and the partial :class:`IpoptResult` is ``exc.ipopt_result``.
        Exception
            The first exception raised by a callback, re-raised after IPOPT stopped and was
            freed (with ``exc.ipopt_result`` attached).
        ValueError
            On a wrong shape or a non-finite value of ``x0`` or of the multipliers.
        RuntimeError
            When IPOPT cannot create the problem, an output file cannot be opened, or
            ``solve`` is called from one of this problem's callbacks.
        """
        if self._solving:
            raise RuntimeError("IpoptProblem.solve() called again from one of its callbacks")
        n, m = self.n, self.m
        x = _float_vector(x0, n, "x0")
        bufs = []
        for start, length, what in ((mult_g, m, "mult_g"), (mult_x_L, n, "mult_x_L"),
                                    (mult_x_U, n, "mult_x_U")):
            bufs.append(np.zeros(length) if start is None else _float_vector(start, length, what))
        for arr, what in ((x, "x0"), (bufs[0], "mult_g"), (bufs[1], "mult_x_L"),
                          (bufs[2], "mult_x_U")):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{what} contains non-finite values")
        lam, z_l, z_u = bufs
        g = np.zeros(m)
        obj = _ipnumber(math.nan)
        lib = self._lib
        self._reset_run_state()
        for view in self._views:
            getattr(view, "cache", {}).clear()
        self._solving = True
        status = None
        t_wall = 0.0
        try:
            handle = lib.CreateIpoptProblem(
                n, self.x_lb.ctypes.data, self.x_ub.ctypes.data, m,
                self.g_lb.ctypes.data if m else None, self.g_ub.ctypes.data if m else None,
                self.nnz_jac, self.nnz_hess, 0, *self._c_callbacks)
            if not handle:
                raise RuntimeError("IPOPT refused the problem definition (CreateIpoptProblem "
                                   "returned NULL)")
            self._handle = handle
            try:
                self._configure(lib, handle)
                with self._sigint_as_flag(catch_sigint):
                    t0 = time.perf_counter()
                    status = lib.IpoptSolve(handle, x.ctypes.data, g.ctypes.data if m else None,
                                            ctypes.byref(obj), lam.ctypes.data if m else None,
                                            z_l.ctypes.data, z_u.ctypes.data, None)
                    t_wall = time.perf_counter() - t0
            finally:
                self._handle = None
                _free_problem(lib, handle)
        finally:
            self._solving = False
            for view in self._views:
                getattr(view, "cache", {}).clear()
        interrupted = self._sigint or isinstance(self._exc, KeyboardInterrupt)
        result = IpoptResult(
            status=int(status), status_name=RETURN_STATUS.get(int(status), f"Unknown({status})"),
            x=x, obj=float(obj.value), g=g, mult_g=lam, mult_x_L=z_l, mult_x_U=z_u,
            iterations=int(self._iterations), interrupted=bool(interrupted),
            wall_time_s=t_wall, evaluations=dict(self._counts))
        exc, self._exc = self._exc, None
        if exc is None and self._sigint:
            exc = KeyboardInterrupt()
            # a deferred signal: its own handler runs now (the CLI's SIGTERM handler raises)
            for signum in dict.fromkeys(getattr(self, "_deferred", [])):
                handler = getattr(self, "_previous_handlers", {}).get(signum)
                if callable(handler) and handler is not signal.default_int_handler:
                    try:
                        handler(signum, None)
                    except BaseException as raised:  # noqa: BLE001 - passed on below
                        exc = raised
                    break
        if exc is not None:
            try:
                exc.ipopt_result = result  # type: ignore[attr-defined]
            except AttributeError:  # pragma: no cover - exotic exception classes
                pass
            raise exc
        return result

    def _configure(self, lib: ctypes.CDLL, handle: int) -> None:
        """Options, scaling, output file and intermediate callback of a fresh IPOPT problem."""
        setters = {"str": lib.AddIpoptStrOption, "num": lib.AddIpoptNumOption,
                   "int": lib.AddIpoptIntOption}
        for name, (kind, value) in self._options.items():
            if not setters[kind](handle, name.encode(), value):   # checked by add_option
                raise ValueError(f"IPOPT option {name!r} = {value!r} was refused")
        if self._scaling is not None:
            obj_s, x_s, g_s = self._scaling
            lib.SetIpoptProblemScaling(handle, obj_s, None if x_s is None else x_s.ctypes.data,
                                       None if g_s is None else g_s.ctypes.data)
        if self._output is not None:
            path, level = self._output
            if not lib.OpenIpoptOutputFile(handle, path, level):
                raise RuntimeError(f"IPOPT could not open its output file {os.fsdecode(path)}")
        lib.SetIntermediateCallback(handle, self._c_intermediate)
