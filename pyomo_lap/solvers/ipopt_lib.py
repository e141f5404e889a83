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
banner, :meth:`IpoptProblem.set_output_file` writes a log at its own level. Like the ``ipopt``
executable, IPOPT reads ``ipopt.opt`` from the current directory at every solve, overriding the
options given (``option_file_name=""`` turns this off).

The options' documentation comes from the library itself (``print_options_documentation``):
:func:`ipopt_options_documentation`; :func:`check_ipopt_option` checks one option before any
problem is built (the library decides, the documentation says what was expected).

The first exception raised in a callback is kept, IPOPT stopped at its next iteration (the
evaluations report failures meanwhile) and freed, and the exception re-raised by
:meth:`IpoptProblem.solve` with the partial :class:`IpoptResult` as ``exc.ipopt_result``.
Ctrl-C (and a SIGTERM handled by a Python function) during a solve in the main thread only
sets a flag: IPOPT stops at its next iteration, then :class:`KeyboardInterrupt` (or the
handler's exception) is raised the same way.

Assumes IPOPT >= 3.14 built with ``ipnumber = double`` and a 32-bit ``ipindex`` (the default,
and the casadi build); a library built with ``IPOPT_SINGLE`` or ``IPOPT_INT64`` cannot be
detected from its C interface and must not be used.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import importlib.util
import math
import numbers
import os
import pathlib
import re
import signal
import sys
import tempfile
import threading
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


# --------------------------------------------------------------------------- option values
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


# --------------------------------------------------------------------------- documentation
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
        As IPOPT states it (``"0 < tol"``, ``"0 <= print_level <= 12"``); ``""`` for a number
        without bounds and for strings.
    default : str
        As IPOPT prints it (``"1e-08"``, ``"mumps"``).
    values : tuple of str
        The values of a string option (empty for numbers and for any-text options).
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
        """What a value must be, in words (``'an integer with 0 <= max_iter'``)."""
        if self.kind in ("integer", "real"):
            what = "an integer" if self.kind == "integer" else "a finite number"
            return what + (f" with {self.valid_range}" if self.valid_range else "")
        if self.values:
            return "one of " + ", ".join(repr(v) for v in self.values)
        return "a string"

    def described(self) -> str:
        """``' (IPOPT: "<description>")'``, or ``''`` for an option without one."""
        return f' (IPOPT: "{self.description}")' if self.description else ""


def _doc_number(text: str) -> str:
    """``10<sup>-08</sup>`` -> ``1e-08``, ``2.22045 &middot; 10<sup>-16</sup>`` ->
    ``2.22045e-16`` (numbers of IPOPT's doxygen output)."""
    m = re.fullmatch(r"(?:([-+]?[\d.]+)\s*&middot;\s*)?([-+]?)10<sup>([-+]?\d+)</sup>",
                     text.strip())
    return f"{m.group(2)}{m.group(1) or '1'}e{m.group(3)}" if m else text.strip()


def _parse_option_entry(chunk: str, category: str) -> Optional[IpoptOptionDoc]:
    r"""One ``\anchor OPT_<name>`` entry of IPOPT's doxygen option documentation."""
    lines = chunk.split("\n")
    name = lines[0][len("\\anchor OPT_"):].strip()
    head = re.match(r"<strong>(.*?)</strong>(?: \(<em>advanced</em>\))?(?::\s*(.*))?$",
                    lines[1] if len(lines) > 1 else "")
    body = chunk.split("<blockquote>", 1)[-1].split("</blockquote>", 1)[0]
    body = body.replace("&le;", "<=").replace("&ge;", ">=")
    kind = re.search(r"for this (real|integer|string) option", body)
    if not name or head is None or head.group(1) != name or kind is None:
        return None
    valid_range, default, values = "", "", ()
    if kind.group(1) == "string":
        d = re.search(r'The default value for this string option is "(.*?)"\.', body)
        default = d.group(1) if d else ""
        listed = body.split("Possible values:", 1)[1] if "Possible values:" in body else ""
        if listed.strip() and not listed.lstrip().startswith("-"):   # "yes, no"
            values = tuple(v.strip() for v in listed.strip().split(",") if v.strip())
        else:
            values = tuple(re.findall(r"^\s*- (\S+?):", listed, flags=re.M))
        values = () if "*" in values else values                     # any text
    else:
        r = re.search(r"The valid range for this \w+ option is (.*?) and its default value "
                      r"is (.*?)\.(?:\s|$)", body, flags=re.S)
        if r:
            rng = " ".join(r.group(1).split())
            valid_range = "" if rng == "unrestricted" else " ".join(
                _doc_number(w) if "sup>" in w else w for w in rng.split(" "))
            default = _doc_number(" ".join(r.group(2).split()))
    return IpoptOptionDoc(name=name, kind=kind.group(1),
                          description=" ".join((head.group(2) or "").split()),
                          valid_range=valid_range, default=default, values=values,
                          category=category)


def _parse_options_doxygen(text: str) -> Dict[str, IpoptOptionDoc]:
    """What IPOPT prints with ``print_options_documentation = yes`` and
    ``print_options_mode = doxygen``: name -> :class:`IpoptOptionDoc`."""
    out: Dict[str, IpoptOptionDoc] = {}
    category = ""
    for chunk in re.split(r"(?=^\\anchor OPT_|^\\subsection )", text, flags=re.M):
        if chunk.startswith("\\subsection "):
            parts = chunk.split("\n", 1)[0].split(" ", 2)
            category = parts[2].strip() if len(parts) > 2 else ""
        elif chunk.startswith("\\anchor OPT_"):
            doc = _parse_option_entry(chunk, category)
            if doc is not None:
                out[doc.name] = doc
    return out


_DOCS: Dict[str, Dict[str, IpoptOptionDoc]] = {}


def ipopt_options_documentation() -> Dict[str, IpoptOptionDoc]:
    """The options of the IPOPT library, as the library itself documents them.

    IPOPT prints the documentation of its options when asked (``print_options_documentation
    = yes``; ``print_options_mode = doxygen`` states each option's type, valid range, default
    and values in fixed sentences): a one-variable problem is solved once with ``max_iter = 0``
    and that documentation written to a temporary file (no console output, no ``ipopt.opt``
    read), parsed and kept for the process.

    Returns
    -------
    dict
        Option name -> :class:`IpoptOptionDoc` (about 290 for IPOPT 3.14, with the advanced
        ones). IPOPT leaves a few out (``sb``); :func:`check_ipopt_option` still accepts them.

    Raises
    ------
    IpoptLibraryNotFound
        See :func:`load_ipopt_library`.
    """
    key = str(find_ipopt_library())
    with _LOCK:
        if key in _DOCS:
            return _DOCS[key]
    prob = IpoptProblem(1, 0, [-1.0], [1.0], [], [], [], [], [0], [0],
                        objective=lambda x: float(x[0] * x[0]),
                        gradient=lambda x, out: out.__setitem__(slice(None), 2.0 * x),
                        hessian=lambda x, sigma, lam, out: out.__setitem__(0, 2.0 * sigma))
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
        os.unlink(path)
    with _LOCK:
        return _DOCS.setdefault(key, _parse_options_doxygen(text))


class IpoptOptionError(ValueError):
    """An option IPOPT refuses: ``name``, ``value``, ``text`` (what was expected) and, for an
    unknown name, ``suggestions`` (the closest known names; else None). The message is
    ``"<name> = <value>: <text>"``."""

    def __init__(self, name: str, value, text: str, suggestions=None):
        super().__init__(f"{name} = {value!r}: {text}")
        self.name, self.value, self.text = name, value, text
        self.suggestions = None if suggestions is None else list(suggestions)


def close_matches(name: str, names, n: int = 3) -> List[str]:
    """The names most like ``name`` (:func:`difflib.get_close_matches`, and the names that
    contain it or that it contains, for abbreviations like ``max_it``)."""
    import difflib
    names = sorted(set(names))
    out = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    if len(name) >= 4:
        out += [k for k in names if (name in k or k in name) and k not in out and len(k) >= 4]
    return out[:n]


def check_ipopt_option(name: str, value, extra_names=()) -> Tuple[str, Any]:
    """Check one option against the IPOPT library, before any problem is built.

    The library decides (the value is set on a never-solved one-variable problem, as
    :meth:`IpoptProblem.add_option` does); :func:`ipopt_options_documentation` says what was
    expected. Non-finite numbers are refused too (IPOPT takes ``nan`` and ``inf`` for most).

    Parameters
    ----------
    name : str
        IPOPT option name.
    value : str, bool, int or float
        As :meth:`IpoptProblem.add_option` takes it.
    extra_names : iterable of str
        Other valid names, only offered as close matches of an unknown name.

    Returns
    -------
    (kind, value)
        How IPOPT takes it: ``"str"``, ``"int"`` or ``"num"`` and the typed value.

    Raises
    ------
    IpoptOptionError (a ValueError)
        Unknown name (with the closest names), a value of the wrong type, outside the option's
        range, not among its values, or not finite: naming the option, the value and what
        was expected.
    """
    docs = ipopt_options_documentation()
    doc = docs.get(name)
    expected = f"expected {doc.expected()}{doc.described()}" if doc else ""
    try:
        typed, reasons = _try_option(load_ipopt_library(), name, value)
    except TypeError:
        raise IpoptOptionError(name, value, f"{expected or 'expected a str, bool, int or float'}"
                               f", not a {type(value).__name__}") from None
    nonfinite = any(k == "num" and not math.isfinite(v) for k, v in _option_candidates(value))
    if doc is not None and doc.kind != "string" and nonfinite:
        raise IpoptOptionError(name, value, f"not finite; {expected}")
    if typed is not None:
        return typed
    if doc is None:
        if not reasons or any("It is not a valid option" in r for r in reasons):
            near = close_matches(name, list(docs) + list(extra_names))
            hint = (f"did you mean {' or '.join(map(repr, near))}?" if near else
                    f"IPOPT's options: {OPTIONS_URL}")
            v = ".".join(map(str, ipopt_version()))
            raise IpoptOptionError(name, value, f"unknown option: IPOPT {v} has no option "
                                   f"{name!r}; {hint}", suggestions=near)
        why = next((r for r in reasons if ", but it is of type" not in r), reasons[0])
        raise IpoptOptionError(name, value, f"refused by IPOPT: {why}")
    try:
        fraction = doc.kind == "integer" and not isinstance(value, bool) and \
            not float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        fraction = False
    raise IpoptOptionError(name, value, f"not an integer; {expected}" if fraction else expected)


# --------------------------------------------------------------------------- problem
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
        handle = _create(lib, self.n, x_lb, x_ub, self.m, g_lb, g_ub, self.jac[0].size,
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
            _free_problem(lib, handle)
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
            _free_problem(self._lib, self._handle)
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
