"""Compile CasADi functions to machine code once, and keep them in a cache.

CasADi evaluates an ``SX`` function in its virtual machine; the C code CasADi generates for
the same function, compiled, runs about ten times faster. :func:`compile_functions` generates
that code for a set of functions, compiles it with the machine's C compiler into a shared
library, loads it back (``casadi.external``) and keeps the library in a cache folder keyed by
a hash of the code, so the next solve of the same model (same car equations, same vehicle
parameters) loads it at once. Without a C compiler, or when compiling fails, the functions are
evaluated in CasADi's virtual machine instead (slower, same results) and a warning says why.

Cache folder: ``$PYOMO_LAP_CACHE`` if set, else ``$XDG_CACHE_HOME/pyomo_lap`` or
``~/.cache/pyomo_lap``. Compiler: ``$CC`` if set, else ``cc``, ``gcc`` or ``clang`` on PATH.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Dict, Optional, Sequence

__all__ = ["compile_functions", "cache_dir", "find_compiler", "CompiledFunctions",
           "library_suffix", "COMPILER_FLAGS"]

_FLAGS = ("-O1", "-fPIC", "-shared")
_LOCK = threading.Lock()


COMPILER_FLAGS = _FLAGS


def library_suffix() -> str:
    """File suffix of a shared library on this platform."""
    return ".dll" if sys.platform == "win32" else ".dylib" if sys.platform == "darwin" else ".so"


def cache_dir() -> Path:
    """Folder of the compiled libraries (created on first use)."""
    env = os.environ.get("PYOMO_LAP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyomo_lap"


def find_compiler() -> Optional[str]:
    """The C compiler to use, or None."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc.split()[0]) and cc
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


class CompiledFunctions(dict):
    """``name -> casadi.Function`` with how they are evaluated.

    Attributes
    ----------
    compiled : bool
        True when the functions run as compiled code, False in CasADi's virtual machine.
    library : Path or None
        The shared library.
    reason : str
        Why they are not compiled (empty when they are).
    compile_s : float
        Seconds spent compiling (0 when the library came from the cache).
    """

    compiled = False
    library = None
    reason = ""
    compile_s = 0.0


_IN_FLIGHT: Dict[Path, threading.Event] = {}


def compile_functions(functions: Sequence, name: str, mode: str = "auto",
                      key: Optional[str] = None) -> CompiledFunctions:
    """Compiled versions of CasADi functions.

    Each function becomes its own C file and shared library ``<name>-<function>-<hash>``; the
    libraries missing from the cache are compiled in parallel (one compiler process each), and a
    library that another thread of this process is compiling is waited for.

    Parameters
    ----------
    functions : sequence of casadi.Function
        SX functions with distinct names.
    name : str
        Prefix of the library files.
    mode : {"auto", "compile", "vm"}
        ``auto``: compile when a C compiler is found, else the virtual machine (with a
        warning); ``compile``: compile or raise; ``vm``: never compile.
    key : str, optional
        Cache key of the set (``<name>-<function>-<key>``), e.g. a hash of what the functions
        were made from; default: a hash of each function's C code.

    Returns
    -------
    CompiledFunctions

    Raises
    ------
    RuntimeError
        ``mode="compile"`` and no compiler was found or compiling failed.
    ValueError
        An unknown ``mode``.
    """
    import time

    import casadi as ca

    if mode not in ("auto", "compile", "vm"):
        raise ValueError(f"mode = {mode!r}: expected 'auto', 'compile' or 'vm'")
    out = CompiledFunctions({f.name(): f for f in functions})
    if mode == "vm":
        out.reason = "compilation switched off (mode 'vm')"
        return out
    cc = find_compiler()
    if cc is None:
        out.reason = "no C compiler found (set CC or install gcc)"
        if mode == "compile":
            raise RuntimeError(f"cannot compile the model functions: {out.reason}")
        warnings.warn(f"pyomo_lap: {out.reason}; the model functions run in CasADi's virtual "
                      "machine (slower)", RuntimeWarning, stacklevel=2)
        return out
    t0 = time.perf_counter()
    suffix = ".dll" if sys.platform == "win32" else ".dylib" if sys.platform == "darwin" else ".so"
    folder = cache_dir()
    libs, jobs, waits = {}, [], []
    with tempfile.TemporaryDirectory(prefix="pyomo_lap_cg_") as tmp:
        for f in functions:
            src = Path(tmp) / f"{f.name()}.c"
            cg = ca.CodeGenerator(src.name, {"with_header": False})
            cg.add(f)
            cg.generate(tmp + os.sep)     # never chdir: other threads share the working directory
            fkey = key or hashlib.sha256(src.read_bytes() + " ".join((cc,) + _FLAGS).encode()
                                         + sys.platform.encode()).hexdigest()[:20]
            lib = folder / f"{name}-{f.name()}-{fkey}{suffix}"
            libs[f.name()] = lib
            with _LOCK:
                if lib.exists():
                    continue
                event = _IN_FLIGHT.get(lib)
                if event is not None:
                    waits.append(event)
                    continue
                _IN_FLIGHT[lib] = threading.Event()
            tmp_lib = Path(tmp) / lib.name
            jobs.append((lib, tmp_lib, subprocess.Popen(
                cc.split() + list(_FLAGS) + [str(src), "-o", str(tmp_lib), "-lm"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
        failure = None
        for lib, tmp_lib, proc in jobs:
            _, err = proc.communicate()
            try:
                if proc.returncode != 0:
                    raise RuntimeError(f"{cc} failed: {err.strip()[-500:]}")
                folder.mkdir(parents=True, exist_ok=True)
                part = folder / f".{lib.name}.{os.getpid()}.part"
                shutil.copyfile(tmp_lib, part)
                os.replace(part, lib)
            except (OSError, RuntimeError) as exc:
                failure = failure or exc
            finally:
                with _LOCK:
                    _IN_FLIGHT.pop(lib).set()
        for event in waits:
            event.wait()
    missing = [n for n, lib in libs.items() if not lib.exists()]
    if failure is not None or missing:
        out.reason = f"compiling failed ({failure or 'no library for ' + ', '.join(missing)})"
        if mode == "compile":
            raise RuntimeError(f"cannot compile the model functions: {out.reason}")
        warnings.warn(f"pyomo_lap: {out.reason}; the model functions run in CasADi's virtual "
                      "machine (slower)", RuntimeWarning, stacklevel=2)
        return out
    if jobs:
        out.compile_s = time.perf_counter() - t0
    for fname, lib in libs.items():
        out[fname] = ca.external(fname, str(lib))
    out.compiled = True
    out.library = folder
    return out
