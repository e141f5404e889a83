"""Compile CasADi functions to machine code once, and keep them in a cache.

CasADi evaluates an ``SX`` function in its virtual machine; the C code CasADi generates for
the same function, compiled, runs about ten times faster. :func:`compile_functions` generates
that code for a set of functions, compiles it with the machine's C compiler into a shared
library, loads it back (``casadi.external``) and keeps the library in a cache folder keyed by
a hash of the code, so the next solve of the same model (same car equations, same vehicle
parameters) loads it at once. Without a C compiler, or when compiling fails, the functions are
evaluated in CasADi's virtual machine instead (slower, same results) and a warning says why.

Cache folder: ``$PYOMO_LAP_CACHE`` if set, else ``$XDG_CACHE_HOME/pyomo_lap`` or
``~/.cache/pyomo_lap`` (:func:`configured_cache_dir`). Compiler: ``$CC`` if set, else ``cc``,
``gcc`` or ``clang`` on PATH.

What the cache guarantees (a library is machine code that runs inside the process):

* **only a private folder is used.** The folder must belong to the user and must not be
  writable by group or others (:func:`folder_problem`; it is created with mode 0700).
  Otherwise it is not used, a warning says so once, and the cache goes to a private folder
  under the system's temporary folder (``<tmp>/pyomo_lap-<uid>``, or a new one for the
  process) instead (:func:`cache_dir`).
* **every file is complete or absent.** A file is written under a temporary name in the
  folder, flushed to disk (``fsync`` of the file and of the folder) and renamed
  (:func:`store_file`); then its manifest ``<file>.manifest.json`` is written the same way.
* **nothing is loaded that was not verified.** The manifest holds the file's size and SHA-256
  and what it was built from (for a library the SHA-256 of its C source, the compiler, its
  flags, CasADi's version); before a file is used its bytes are checked against the manifest,
  the manifest against the expected name and source, and both files' owner and permissions
  (:func:`check_file`). A damaged, foreign or mismatching entry is removed and built again,
  and a warning says so once (:func:`discard_files`); it is never loaded.

The manifest guards against damage (a power loss, a full disk, an interrupted run) and
against files of other users; anyone who can write the user's own files can also write a
matching manifest, which is why :class:`pyomo_lap.solvers.lap_nlp.LapNLP` also compares the
compiled functions with CasADi's virtual machine before every solve.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Dict, Iterable, Optional, Sequence

__all__ = ["compile_functions", "cache_dir", "configured_cache_dir", "folder_problem",
           "find_compiler", "CompiledFunctions", "library_suffix", "COMPILER_FLAGS",
           "store_file", "check_file", "read_verified", "discard_files", "discard_damaged",
           "manifest_path", "warn_once", "CacheEntryError", "MISSING"]

_FLAGS = ("-O1", "-fPIC", "-shared")
_LOCK = threading.Lock()


COMPILER_FLAGS = _FLAGS

MISSING = "missing"
"""What :func:`check_file` says when neither the file nor its manifest exists (not an error:
the entry was never built, or was removed)."""

_MANIFEST_SUFFIX = ".manifest.json"
_MANIFEST_FORMAT = "pyomo_lap cache entry 1"


class CacheEntryError(OSError):
    """A cache file that must not be used (:func:`read_verified`); the message says why."""


def library_suffix() -> str:
    """File suffix of a shared library on this platform."""
    return ".dll" if sys.platform == "win32" else ".dylib" if sys.platform == "darwin" else ".so"


# --------------------------------------------------------------------------------------------
# the folder
# --------------------------------------------------------------------------------------------

def configured_cache_dir() -> Path:
    """The cache folder as configured: ``$PYOMO_LAP_CACHE`` if set, else
    ``$XDG_CACHE_HOME/pyomo_lap`` or ``~/.cache/pyomo_lap`` (not checked, maybe absent; the
    folder used is :func:`cache_dir`'s)."""
    env = os.environ.get("PYOMO_LAP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyomo_lap"


def folder_problem(folder) -> str:
    """Why ``folder`` must not hold the cache, '' when it may.

    It must be an existing folder of this user (the effective user id), not writable by
    group or others, and writable by this user. (Where POSIX owners and modes do not exist,
    Windows, only the last two are checked.)

    Parameters
    ----------
    folder : str or Path

    Returns
    -------
    str
        '' or the reason, in words (e.g. ``it is writable by others (mode 777)``).
    """
    try:
        st = os.stat(folder)
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if hasattr(os, "geteuid"):
        uid = os.geteuid()
        if st.st_uid != uid:
            return f"it belongs to user id {st.st_uid}, not to this user (id {uid})"
        if st.st_mode & 0o022:
            who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002))
                               if st.st_mode & bit)
            return f"it is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return "this user cannot write to it"
    return ""


def _private_folder(folder: Path) -> str:
    """Create ``folder`` (mode 0700) if missing; :func:`folder_problem` of it."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return f"it cannot be created ({exc.strerror or exc})"
    return folder_problem(folder)


_OWN_FOLDER: Dict[str, Path] = {}


def _fallback_dir() -> Path:
    """A private folder when the configured one may not be used: ``<tmp>/pyomo_lap-<uid>``
    (shared by this user's processes, so still a cache) if it is private, else a new folder
    of this process, removed when it ends."""
    uid = os.geteuid() if hasattr(os, "geteuid") else "user"
    shared = Path(tempfile.gettempdir()) / f"pyomo_lap-{uid}"
    if not _private_folder(shared):
        return shared
    with _LOCK:
        own = _OWN_FOLDER.get("dir")
        if own is None or folder_problem(own):
            own = _OWN_FOLDER["dir"] = Path(tempfile.mkdtemp(prefix="pyomo_lap-"))
            atexit.register(shutil.rmtree, own, True)
    return own


def cache_dir() -> Path:
    """The folder of the cache, created on first use: the configured one
    (:func:`configured_cache_dir`) if it is private (:func:`folder_problem`), else a private
    folder under the system's temporary folder, and a warning (once per process and folder)
    says why the configured one is not used.

    Returns
    -------
    Path
    """
    folder = configured_cache_dir()
    problem = _private_folder(folder)
    if not problem:
        return folder
    fallback = _fallback_dir()
    warn_once(("folder", str(folder), problem),
              f"pyomo_lap: the cache folder {folder} is not used: {problem}; compiled functions "
              f"are kept in the private folder {fallback} instead (make the folder private, "
              "e.g. `chmod go-w`, or set PYOMO_LAP_CACHE to a folder of your own)")
    return fallback


_SAID: set = set()


def warn_once(key, message: str, stacklevel: int = 3) -> None:
    """``warnings.warn(message, RuntimeWarning)`` the first time ``key`` is given in this
    process, nothing after."""
    with _LOCK:
        if key in _SAID:
            return
        _SAID.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


# --------------------------------------------------------------------------------------------
# files and their manifests
# --------------------------------------------------------------------------------------------

def manifest_path(path) -> Path:
    """The manifest of a cache file: ``<file>.manifest.json`` next to it."""
    path = Path(path)
    return path.with_name(path.name + _MANIFEST_SUFFIX)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    """``data`` into ``path``: a temporary file in the same folder (mode 0600), flushed to disk,
    renamed over ``path``, and the folder flushed: after a crash ``path`` is the old file or
    the new one, whole."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(path.parent)


def store_file(path, data: Optional[bytes] = None, source=None, **built_from) -> None:
    """Write a cache file and then its manifest, each atomically and durably.

    Parameters
    ----------
    path : str or Path
        The file, in the cache folder.
    data : bytes, optional
        Its content; or
    source : str or Path, optional
        a file to copy (e.g. a library the compiler wrote elsewhere).
    **built_from
        What the file was made from, kept in the manifest (JSON values): for a library
        ``source_sha256`` (of its C source), which :func:`check_file` compares.

    Raises
    ------
    OSError
        Writing failed (a partial file is removed; the manifest is written last, so a file
        without one is never used).
    """
    path = Path(path)
    if (data is None) == (source is None):
        raise ValueError("store_file: give exactly one of data and source")
    if data is None:
        data = Path(source).read_bytes()
    _write_atomic(path, data)
    manifest = {"format": _MANIFEST_FORMAT, "file": path.name, "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "built_from": built_from}
    _write_atomic(manifest_path(path), json.dumps(manifest, indent=1, sort_keys=True).encode())


def _file_problem(path: Path) -> str:
    """'' if ``path`` is a regular file (not a link) of this user, not writable by group or
    others."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if hasattr(os, "geteuid"):
        if st.st_uid != os.geteuid():
            return f"it belongs to user id {st.st_uid}"
        if st.st_mode & 0o022:
            return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def _verify(path: Path, source_sha256: Optional[str], keep: bool):
    """``(bytes or None, problem)``: the checks of :func:`check_file`."""
    mpath = manifest_path(path)
    have_file, have_manifest = os.path.lexists(path), os.path.lexists(mpath)
    if not have_file and not have_manifest:
        return None, MISSING
    if not have_manifest:
        return None, ("it has no manifest (an interrupted write, an older pyomo_lap, or a file "
                      "pyomo_lap did not write)")
    if not have_file:
        return None, "its manifest is there but the file is not"
    try:
        for p, what in ((path, "the file"), (mpath, "its manifest")):
            problem = _file_problem(p)
            if problem:
                return None, f"{what}: {problem}"
        raw = mpath.read_bytes()
        data = path.read_bytes()
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror or exc})"
    try:
        man = json.loads(raw)
    except ValueError:
        return None, "its manifest is damaged"
    if not isinstance(man, dict) or man.get("format") != _MANIFEST_FORMAT \
            or man.get("file") != path.name:
        return None, "its manifest belongs to another file"
    if len(data) != man.get("size"):
        return None, (f"it has {len(data)} bytes, its manifest says {man.get('size')} "
                      "(truncated or replaced)")
    if hashlib.sha256(data).hexdigest() != man.get("sha256"):
        return None, "its SHA-256 is not the one in its manifest (damaged or replaced)"
    built = man.get("built_from")
    if source_sha256 is not None and (not isinstance(built, dict)
                                      or built.get("source_sha256") != source_sha256):
        return None, "it was built from other C code than this model's"
    return (data if keep else None), ""


def check_file(path, source_sha256: Optional[str] = None) -> str:
    """Whether a cache file may be used: '' if it may.

    The file and its manifest (:func:`manifest_path`) must both exist, be regular files of
    this user not writable by group or others; the manifest must name the file, its size and
    SHA-256 must be the file's and, when ``source_sha256`` is given, the SHA-256 of the C
    source it was built from must be that.

    Parameters
    ----------
    path : str or Path
    source_sha256 : str, optional

    Returns
    -------
    str
        '', :data:`MISSING` (neither the file nor its manifest exists), or what is wrong.
    """
    return _verify(Path(path), source_sha256, keep=False)[1]


def read_verified(path, source_sha256: Optional[str] = None) -> bytes:
    """The bytes of a cache file, read once and checked (:func:`check_file`) before they are
    returned.

    Raises
    ------
    CacheEntryError
        The file may not be used (its message is :func:`check_file`'s answer).
    """
    data, problem = _verify(Path(path), source_sha256, keep=True)
    if problem:
        raise CacheEntryError(problem)
    return data


def discard_files(paths: Iterable) -> None:
    """Remove cache files and their manifests (those absent are skipped)."""
    for p in paths:
        for q in (Path(p), manifest_path(p)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(q)


def discard_damaged(problems, entry: Optional[str] = None) -> None:
    """Remove damaged, foreign or mismatching cache files (and their manifests) so that they
    are built again, and say so once per entry (a ``RuntimeWarning``).

    Parameters
    ----------
    problems : dict
        ``path -> problem`` (:func:`check_file`'s answers; '' and :data:`MISSING` are skipped).
    entry : str, optional
        The name of the entry the files belong to (default: the first file's name).
    """
    problems = {Path(p): why for p, why in problems.items() if why and why != MISSING}
    if not problems:
        return
    discard_files(problems)
    first = next(iter(problems))
    entry = entry or first.name
    detail = "; ".join(f"{p.name}: {why}" for p, why in problems.items())
    warn_once(("discarded", str(first.parent / entry)),
              f"pyomo_lap: the cache entry {entry} in {first.parent} was not used ({detail}); "
              "it was removed and is built again", stacklevel=4)


# --------------------------------------------------------------------------------------------
# compiling
# --------------------------------------------------------------------------------------------

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
        The folder of the shared libraries.
    paths : dict
        ``name -> Path`` of each function's shared library (empty when not compiled).
    reason : str
        Why they are not compiled (empty when they are).
    compile_s : float
        Seconds spent compiling (0 when the library came from the cache).
    """

    compiled = False
    library = None
    reason = ""
    compile_s = 0.0

    def __init__(self, *args, **kwds):
        super().__init__(*args, **kwds)
        self.paths: Dict[str, Path] = {}


_IN_FLIGHT: Dict[Path, threading.Event] = {}


def compile_functions(functions: Sequence, name: str, mode: str = "auto",
                      key: Optional[str] = None, quiet: bool = False) -> CompiledFunctions:
    """Compiled versions of CasADi functions.

    Each function becomes its own C file and shared library ``<name>-<function>-<hash>``; the
    libraries missing from the cache are compiled in parallel (one compiler process each), and a
    library that another thread of this process is compiling is waited for. A library is
    written with its manifest (:func:`store_file`: the SHA-256 of the library and of its C
    source) and loaded only after :func:`check_file` passed against the C source generated
    now; a cached library that fails the check is removed and compiled again
    (:func:`discard_damaged`). Processes that may compile the same library at the same time
    should hold a lock across the call (as :func:`pyomo_lap.solvers.lap_nlp.point_functions`
    does).

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
    quiet : bool
        No warning when the functions fall back to the virtual machine (the caller reports
        it); the warnings about damaged cache files are given still.

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
        if not quiet:
            warnings.warn(f"pyomo_lap: {out.reason}; the model functions run in CasADi's "
                          "virtual machine (slower)", RuntimeWarning, stacklevel=2)
        return out
    t0 = time.perf_counter()
    suffix = library_suffix()
    folder = cache_dir()
    built_with = {"compiler": cc, "flags": list(_FLAGS), "casadi": ca.__version__,
                  "platform": sys.platform}
    libs, sources, jobs, waits = {}, {}, [], []
    failure = None
    with tempfile.TemporaryDirectory(prefix="pyomo_lap_cg_") as tmp:
        for f in functions:
            src = Path(tmp) / f"{f.name()}.c"
            cg = ca.CodeGenerator(src.name, {"with_header": False})
            cg.add(f)
            cg.generate(tmp + os.sep)     # never chdir: other threads share the working directory
            code = src.read_bytes()
            fkey = key or hashlib.sha256(code + " ".join((cc,) + _FLAGS).encode()
                                         + sys.platform.encode()).hexdigest()[:20]
            lib = folder / f"{name}-{f.name()}-{fkey}{suffix}"
            libs[f.name()] = lib
            sources[f.name()] = source_sha256 = hashlib.sha256(code).hexdigest()
            with _LOCK:
                event = _IN_FLIGHT.get(lib)
                if event is not None:
                    waits.append(event)
                    continue
                problem = check_file(lib, source_sha256)
                if not problem:
                    continue
                _IN_FLIGHT[lib] = threading.Event()
            tmp_lib = Path(tmp) / lib.name
            try:
                discard_damaged({lib: problem})
                proc = subprocess.Popen(
                    cc.split() + list(_FLAGS) + [str(src), "-o", str(tmp_lib), "-lm"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            except OSError as exc:
                failure = failure or exc
                with _LOCK:
                    _IN_FLIGHT.pop(lib).set()
                continue
            jobs.append((lib, tmp_lib, source_sha256, proc))
        for lib, tmp_lib, source_sha256, proc in jobs:
            _, err = proc.communicate()
            try:
                if proc.returncode != 0:
                    raise RuntimeError(f"{cc} failed: {err.strip()[-500:]}")
                store_file(lib, source=tmp_lib, source_sha256=source_sha256, **built_with)
            except (OSError, RuntimeError) as exc:
                failure = failure or exc
            finally:
                with _LOCK:
                    _IN_FLIGHT.pop(lib).set()
        for event in waits:
            event.wait()
    # every library is checked right before it is loaded: a library is machine code
    problems = {n: check_file(lib, sources[n]) for n, lib in libs.items()}
    bad = {n: p for n, p in problems.items() if p}
    if failure is not None or bad:
        discard_damaged({libs[n]: p for n, p in bad.items()})
        why = failure or "; ".join(f"{libs[n].name}: {p}" for n, p in bad.items())
        out.reason = f"compiling failed ({why})"
        if mode == "compile":
            raise RuntimeError(f"cannot compile the model functions: {out.reason}")
        if not quiet:
            warnings.warn(f"pyomo_lap: {out.reason}; the model functions run in CasADi's "
                          "virtual machine (slower)", RuntimeWarning, stacklevel=2)
        return out
    if jobs:
        out.compile_s = time.perf_counter() - t0
    try:
        loaded = {fname: ca.external(fname, str(lib)) for fname, lib in libs.items()}
    except Exception as exc:     # e.g. a folder on a file system mounted noexec
        out.reason = f"loading the compiled library failed ({str(exc).strip()[-300:]})"
        if mode == "compile":
            raise RuntimeError(f"cannot compile the model functions: {out.reason}") from None
        if not quiet:
            warnings.warn(f"pyomo_lap: {out.reason}; the model functions run in CasADi's "
                          "virtual machine (slower)", RuntimeWarning, stacklevel=2)
        return out
    out.update(loaded)
    out.compiled = True
    out.library = folder
    out.paths = dict(libs)
    return out
