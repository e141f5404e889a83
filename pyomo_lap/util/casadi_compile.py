"""Compile CasADi functions to machine code once, and keep them in a cache.

CasADi evaluates an ``SX`` function in its virtual machine; the C code CasADi generates for
the same function, compiled, runs about ten times faster. :func:`compile_functions` generates
that code, compiles it with the machine's C compiler into shared libraries, loads them
(``casadi.external``) and keeps them in a cache folder, so the next solve of the same model
loads them at once (:func:`cached_functions`). Without a C compiler, or when compiling fails,
the functions run in CasADi's virtual machine instead (slower, same results) and a warning
says why.

Cache folder: ``$PYOMO_LAP_CACHE`` if set, else the user's cache folder for ``pyomo_lap``
(:mod:`platformdirs`: ``$XDG_CACHE_HOME/pyomo_lap`` or ``~/.cache/pyomo_lap`` on Linux).
Compiler: ``$CC`` if set, else ``cc``, ``gcc`` or ``clang`` on PATH.

What the cache guarantees (a library is machine code that runs inside the process):

* **only a private folder is used.** The folder must belong to the user and must not be
  writable by group or others (:func:`folder_problem`; it is created with mode 0700);
  otherwise a private folder under the system's temporary folder is used and a warning says
  so once (:func:`cache_dir`).
* **every file is complete or absent.** A file is written under a temporary name, flushed to
  disk (``fsync`` of the file and of the folder) and renamed; then its manifest
  ``<file>.manifest.json`` is written the same way (:func:`store_file`). One process or
  thread compiles an entry at a time (:mod:`filelock` on ``<entry>.lock``); the others wait
  and use its libraries.
* **nothing is loaded that was not verified.** The manifest holds the file's size and
  SHA-256 and what it was built from (the SHA-256 of its C source, the compiler, its flags,
  CasADi's version); before a library is loaded its bytes are checked against the manifest,
  and both files' owner and permissions (:func:`check_file`). A damaged, foreign or
  mismatching entry is removed and rebuilt, and a warning says so once
  (:func:`discard_damaged`); it is never loaded.
* **nothing is used that does not fit.** Every loaded function must have the inputs and
  outputs of the CasADi function it was compiled from: their numbers, sizes and sparsity
  patterns (:func:`signature_problem`); a library that does not fit, or does not load, is
  removed, compiled again and loaded in the same call (one warning); if the new one does not
  fit either, the functions run in CasADi's virtual machine (a warning says why).
* **nothing is left behind.** The C files are generated and compiled in a folder
  ``pyomo_lap_cg_<pid>_<host>_*`` inside the cache folder, removed at the end; those of this
  machine's processes that no longer run (killed while compiling) are removed by the next
  compile (:func:`remove_stale_builds`).

The manifest guards against damage (a power loss, a full disk, an interrupted run) and
against files of other users; anyone who can write the user's own files can also write a
matching manifest, which is why :class:`pyomo_lap.solvers.lap.nlp.LapNLP` also compares the
compiled functions with CasADi's virtual machine before every solve.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Dict, Iterable, Optional, Sequence

import platformdirs
from filelock import FileLock
from pyomo.common.dependencies import attempt_import

from .processes import process_running

ca, ca_available = attempt_import("casadi")

__all__ = ["compile_functions", "cached_functions", "cache_dir", "folder_problem",
           "find_compiler", "CompiledFunctions", "library_suffix", "COMPILER_FLAGS",
           "store_file", "check_file", "discard_files", "discard_damaged", "manifest_path",
           "warn_once", "MISSING", "signature", "signature_problem", "remove_stale_builds",
           "BUILD_PREFIX"]

COMPILER_FLAGS = ("-O1", "-fPIC", "-shared")

MISSING = "missing"
"""What :func:`check_file` says when neither the file nor its manifest exists (not an error:
the entry was never built, or was removed)."""

BUILD_PREFIX = "pyomo_lap_cg_"
"""Prefix of the folders in the cache folder where C code is generated and compiled:
``pyomo_lap_cg_<pid>_<host>_<random>`` (:func:`remove_stale_builds`)."""

_MANIFEST_FORMAT = "pyomo_lap cache entry 1"
_LOCK = threading.Lock()


def library_suffix() -> str:
    """File suffix of a shared library on this platform."""
    return ".dll" if sys.platform == "win32" else ".dylib" if sys.platform == "darwin" else ".so"


# --------------------------------------------------------------------------------------------
# the folder
# --------------------------------------------------------------------------------------------

def folder_problem(folder) -> str:
    """Why ``folder`` (str or Path) must not hold the cache, in words (e.g. ``it is writable
    by others (mode 777)``); '' when it may: an existing folder of this user (the effective
    user id), not writable by group or others, writable by this user (where POSIX owners and
    modes do not exist, Windows, only the last two are checked)."""
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
    (``$PYOMO_LAP_CACHE``, else :func:`platformdirs.user_cache_dir` of ``pyomo_lap``) if it is
    private (:func:`folder_problem`), else a private folder under the system's temporary
    folder, and a warning (once per process and folder) says why the configured one is not
    used."""
    env = os.environ.get("PYOMO_LAP_CACHE")
    folder = Path(env) if env else Path(platformdirs.user_cache_dir("pyomo_lap", appauthor=False))
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
    return path.with_name(path.name + ".manifest.json")


def _write_atomic(path: Path, data: bytes) -> None:
    """``data`` into ``path``: a temporary file in the same folder (mode 0600), flushed to disk,
    renamed over ``path``, and the folder flushed (POSIX): after a crash ``path`` is the old
    file or the new one, whole."""
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
    if os.name == "posix":
        with contextlib.suppress(OSError):
            folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            try:
                os.fsync(folder)
            finally:
                os.close(folder)


def store_file(path, data: bytes, **built_from) -> None:
    """Write the cache file ``path`` with content ``data`` and then its manifest, each
    atomically and durably; ``built_from`` is what the file was made from, kept in the
    manifest (JSON values; for a library ``source_sha256``, of its C source, which
    :func:`check_file` compares). Raises ``OSError`` when writing fails (a partial file is
    removed; the manifest is written last, so a file without one is never used)."""
    path = Path(path)
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


def check_file(path, source_sha256: Optional[str] = None) -> str:
    """Whether a cache file may be used: '' if it may, :data:`MISSING` when neither the file
    nor its manifest exists, else what is wrong. The file and its manifest
    (:func:`manifest_path`) must both exist, be regular files of this user not writable by
    group or others; the manifest must name the file, its size and SHA-256 must be the file's
    and, when ``source_sha256`` is given, the SHA-256 of the C source it was built from must
    be that."""
    path = Path(path)
    mpath = manifest_path(path)
    have_file, have_manifest = os.path.lexists(path), os.path.lexists(mpath)
    if not have_file and not have_manifest:
        return MISSING
    if not have_manifest:
        return ("it has no manifest (an interrupted write, an older pyomo_lap, or a file "
                "pyomo_lap did not write)")
    if not have_file:
        return "its manifest is there but the file is not"
    try:
        for p, what in ((path, "the file"), (mpath, "its manifest")):
            problem = _file_problem(p)
            if problem:
                return f"{what}: {problem}"
        raw, data = mpath.read_bytes(), path.read_bytes()
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    try:
        man = json.loads(raw)
    except ValueError:
        return "its manifest is damaged"
    if not isinstance(man, dict) or man.get("format") != _MANIFEST_FORMAT \
            or man.get("file") != path.name:
        return "its manifest belongs to another file"
    if len(data) != man.get("size"):
        return f"it has {len(data)} bytes, its manifest says {man.get('size')} (truncated or replaced)"
    if hashlib.sha256(data).hexdigest() != man.get("sha256"):
        return "its SHA-256 is not the one in its manifest (damaged or replaced)"
    built = man.get("built_from")
    if source_sha256 is not None and (not isinstance(built, dict)
                                      or built.get("source_sha256") != source_sha256):
        return "it was built from other C code than this model's"
    return ""


def discard_files(paths: Iterable) -> None:
    """Remove cache files and their manifests (those absent are skipped)."""
    for p in paths:
        for q in (Path(p), manifest_path(p)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(q)


def discard_damaged(problems, entry: Optional[str] = None) -> None:
    """Remove damaged, foreign or mismatching cache files (and their manifests) so that they
    are built again, and say so once per entry and set of files (a ``RuntimeWarning``). ``problems``: ``path ->
    problem`` (:func:`check_file`'s answers; '' and :data:`MISSING` are skipped); ``entry``:
    the name of the entry the files belong to (default: the first file's name)."""
    problems = {Path(p): why for p, why in problems.items() if why and why != MISSING}
    if not problems:
        return
    discard_files(problems)
    first = next(iter(problems))
    entry = entry or first.name
    detail = "; ".join(f"{p.name}: {why}" for p, why in problems.items())
    warn_once(("discarded", str(first.parent / entry), tuple(sorted(map(str, problems)))),
              f"pyomo_lap: the cache entry {entry} in {first.parent} was not used ({detail}); "
              "it was removed and rebuilt", stacklevel=4)


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
    """``name -> casadi.Function`` with how they are evaluated: ``compiled`` (True: as
    compiled code, False: in CasADi's virtual machine), ``library`` (the folder of the shared
    libraries, or None), ``paths`` (``name -> Path`` of each function's library, empty when not
    compiled), ``reason`` (why they are not compiled, '' when they are), ``compile_s`` (seconds
    spent compiling, 0 when the libraries came from the cache)."""

    compiled = False
    library = None
    reason = ""
    compile_s = 0.0

    def __init__(self, *args, **kwds):
        super().__init__(*args, **kwds)
        self.paths: Dict[str, Path] = {}


def _library(folder: Path, name: str, function: str, key: str) -> Path:
    return folder / f"{name}-{function}-{key}{library_suffix()}"


def signature(f) -> tuple:
    """The inputs and outputs of CasADi function ``f`` as plain tuples (shared safely between
    threads): ``(inputs, outputs)``, each a tuple of ``(rows, columns, column offsets, row
    indices)`` of every input or output's sparsity pattern."""
    def pattern(sp):
        return (sp.size1(), sp.size2(), tuple(sp.colind()), tuple(sp.row()))
    return (tuple(pattern(f.sparsity_in(i)) for i in range(f.n_in())),
            tuple(pattern(f.sparsity_out(i)) for i in range(f.n_out())))


def signature_problem(f, reference) -> str:
    """What makes the loaded function ``f`` unfit to stand for ``reference`` (the CasADi
    function it was compiled from, or its :func:`signature`), in words; '' when nothing: the
    same numbers of inputs and outputs, and each input and output of the same size and
    sparsity pattern.

    Parameters
    ----------
    f : casadi.Function
    reference : casadi.Function or tuple

    Returns
    -------
    str
        E.g. ``its output 0 is 31x1, the model's function's 34x1``.
    """
    got = signature(f)
    want = reference if isinstance(reference, tuple) else signature(reference)
    if (len(got[0]), len(got[1])) != (len(want[0]), len(want[1])):
        return (f"it has {len(got[0])} inputs and {len(got[1])} outputs, the model's function "
                f"{len(want[0])} and {len(want[1])}")
    for kind, a_all, b_all in (("input", got[0], want[0]), ("output", got[1], want[1])):
        for i, (a, b) in enumerate(zip(a_all, b_all)):
            if a[:2] != b[:2]:
                return (f"its {kind} {i} is {a[0]}x{a[1]}, the model's function's "
                        f"{b[0]}x{b[1]}")
            if a != b:
                return (f"its {kind} {i} has another sparsity pattern ({len(a[3])} nonzeros, "
                        f"the model's function's {len(b[3])})")
    return ""


_LOADED: Dict[str, tuple] = {}
_ALIAS = itertools.count()


def _one_line(exc, limit: int = 300) -> str:
    return " ".join(str(exc).split())[-limit:]


def _external(name: str, lib: Path):
    """``casadi.external(name, lib)``, also for a library that replaced the one this process
    loaded from the same path: the dynamic loader would hand back the old one while it is
    loaded, so the new one is loaded through a link of another name in a build folder."""
    st = os.stat(lib)
    ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _LOCK:
        first = _LOADED.setdefault(str(lib), ident)
    if first == ident:
        return ca.external(name, str(lib))
    with _build_folder(lib.parent) as tmp:
        alias = Path(tmp) / f"{lib.stem}.{next(_ALIAS)}{lib.suffix}"
        try:
            os.link(lib, alias)
        except OSError:
            shutil.copyfile(lib, alias)
        return ca.external(name, str(alias))


def _load(libs: Dict[str, Path], reference: Optional[dict] = None):
    """``(functions, problems)``: ``name -> casadi.Function`` of the libraries ``libs`` that
    load and fit ``reference`` (``name -> casadi.Function`` they were compiled from;
    :func:`signature_problem`), and ``path -> problem`` of the others."""
    funs, problems = {}, {}
    for n, lib in libs.items():
        try:
            f = _external(n, lib)
        except Exception as exc:     # e.g. a file system mounted noexec, another platform
            problems[lib] = f"it does not load ({_one_line(exc)})"
            continue
        problem = signature_problem(f, reference[n]) if reference and n in reference else ""
        if problem:
            problems[lib] = problem
        else:
            funs[n] = f
    return funs, problems


def cached_functions(name: str, functions: Sequence[str], key: str,
                     reference: Optional[dict] = None) -> Optional[CompiledFunctions]:
    """The compiled functions of a cache entry (``<name>-<function>-<key>``) when every library
    passes :func:`check_file`, loads and fits its function of ``reference`` (``name ->
    casadi.Function``, :func:`signature_problem`; not checked without), else None. Nothing is
    repaired here: :func:`compile_functions` does it, under the entry's lock."""
    folder = cache_dir()
    libs = {f: _library(folder, name, f, key) for f in functions}
    if any(check_file(lib) for lib in libs.values()):
        return None
    funs, problems = _load(libs, reference)
    if problems:
        return None
    out = CompiledFunctions(funs)
    out.compiled, out.library, out.paths = True, folder, dict(libs)
    return out


def _not_compiled(out: CompiledFunctions, reason: str, mode: str, quiet: bool):
    """``out`` (the functions in CasADi's virtual machine) with ``reason``; raises for
    ``mode="compile"``, warns unless ``quiet``."""
    out.reason = reason
    if mode == "compile":
        raise RuntimeError(f"cannot compile the model functions: {reason}")
    if not quiet:
        warnings.warn(f"pyomo_lap: {reason}; the model functions run in CasADi's virtual "
                      "machine (slower)", RuntimeWarning, stacklevel=3)
    return out


def _host_tag() -> str:
    """Eight hex digits naming this machine (a process id means something on its own machine
    only: a cache folder may be shared by machines or containers)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def remove_stale_builds(folder) -> list:
    """Remove the build folders (``pyomo_lap_cg_<pid>_<host>_*``) in ``folder`` of processes
    of this machine that no longer run (killed while compiling); a folder of a running
    process, or of another machine, is kept. The removed folders."""
    removed = []
    for p in Path(folder).glob(f"{BUILD_PREFIX}*"):
        m = re.match(re.escape(BUILD_PREFIX) + r"(\d+)_([0-9a-f]{8})_", p.name)
        if m and m.group(2) == _host_tag() and p.is_dir() and not p.is_symlink() \
                and not process_running(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def _build_folder(folder: Path):
    """A new build folder ``pyomo_lap_cg_<pid>_<host>_*`` in ``folder`` (a context manager
    that removes it; :func:`remove_stale_builds`)."""
    return tempfile.TemporaryDirectory(prefix=f"{BUILD_PREFIX}{os.getpid()}_{_host_tag()}_",
                                       dir=folder)


def _generate(f, folder: str) -> Path:
    """The C file of CasADi function ``f`` in ``folder``."""
    src = Path(folder) / f"{f.name()}.c"
    cg = ca.CodeGenerator(src.name, {"with_header": False})
    cg.add(f)
    cg.generate(folder + os.sep)     # never chdir: other threads share the working directory
    return src


def _compile(cc: str, jobs: list, built_with: dict):
    """Compile ``jobs`` (``(C file, library, SHA-256 of the C file)``) in parallel, one
    compiler process each, and store every library with its manifest (:func:`store_file`);
    the first failure, or None."""
    procs, failure = [], None
    for src, lib, sha in jobs:
        tmp_lib = src.with_name(lib.name)
        try:
            procs.append((lib, tmp_lib, sha, subprocess.Popen(
                cc.split() + list(COMPILER_FLAGS) + [str(src), "-o", str(tmp_lib), "-lm"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
        except OSError as exc:
            failure = failure or exc
    for lib, tmp_lib, sha, proc in procs:
        _, err = proc.communicate()
        try:
            if proc.returncode != 0:
                raise RuntimeError(f"{cc} failed: {err.strip()[-500:]}")
            store_file(lib, tmp_lib.read_bytes(), source_sha256=sha, **built_with)
        except (OSError, RuntimeError) as exc:
            failure = failure or exc
    return failure


def compile_functions(functions: Sequence, name: str, mode: str = "auto",
                      key: Optional[str] = None, quiet: bool = False) -> CompiledFunctions:
    """Compiled versions of CasADi functions.

    Each function becomes its own C file and shared library ``<name>-<function>-<key>``; under
    the entry's lock (:mod:`filelock`, across threads and processes) the libraries that do
    not pass :func:`check_file` against the C source generated now are removed (one warning,
    :func:`discard_damaged`) and compiled in parallel, one compiler process each, in a build
    folder of this process in the cache folder (those of processes that no longer run are
    removed first: :func:`remove_stale_builds`). Every library is checked again right before
    it is loaded, and every loaded function against the function it was compiled from
    (:func:`signature_problem`): a library from the cache that does not load or does not fit
    is removed and compiled again in the same call (one warning); one that still does not, or
    one just compiled that does not, leaves the functions to CasADi's virtual machine.

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
        Cache key of the set, e.g. a hash of what the functions were made from; default: a
        hash of each function's C code, the compiler and its flags.
    quiet : bool
        No warning when the functions fall back to the virtual machine (the caller reports
        it); the warnings about damaged cache files are given still.

    Returns
    -------
    CompiledFunctions

    Raises
    ------
    RuntimeError
        ``mode="compile"`` and no compiler was found, compiling failed or the compiled
        libraries cannot be used.
    ValueError
        An unknown ``mode``.
    """
    if mode not in ("auto", "compile", "vm"):
        raise ValueError(f"mode = {mode!r}: expected 'auto', 'compile' or 'vm'")
    out = CompiledFunctions({f.name(): f for f in functions})
    if mode == "vm":
        out.reason = "compilation switched off (mode 'vm')"
        return out
    cc = find_compiler()
    if cc is None:
        return _not_compiled(out, "no C compiler found (set CC or install gcc)", mode, quiet)
    t0 = time.perf_counter()
    folder = cache_dir()
    built_with = {"compiler": cc, "flags": list(COMPILER_FLAGS), "casadi": ca.__version__,
                  "platform": sys.platform}
    entry = f"{name}-{key}" if key else None
    fresh: set = set()
    with FileLock(str(folder / f"{name}-{key or 'functions'}.lock"), mode=0o600):
        remove_stale_builds(folder)
        for attempt in (0, 1):
            libs, sources, failure = _build(functions, name, key, cc, folder, built_with, fresh)
            bad = {libs[n]: p for n in libs for p in [check_file(libs[n], sources[n])] if p}
            if failure is not None or bad:
                discard_damaged(bad)
                why = failure or "; ".join(f"{lib.name}: {p}" for lib, p in bad.items())
                return _not_compiled(out, f"compiling failed ({why})", mode, quiet)
            funs, problems = _load(libs, out)
            # a library from the cache that does not load or fit is built again, once; one
            # just built that does not is not (building it again would not help)
            if not problems or attempt or fresh & set(problems):
                break
            discard_damaged(problems, entry=entry)
    if problems:
        why = "; ".join(f"{lib.name}: {p}" for lib, p in problems.items())
        return _not_compiled(out, f"the compiled libraries cannot be used ({why})", mode, quiet)
    out.compile_s = time.perf_counter() - t0 if fresh else 0.0
    out.update(funs)
    out.compiled, out.library, out.paths = True, folder, dict(libs)
    return out


def _build(functions, name, key, cc, folder: Path, built_with: dict, fresh: set):
    """Generate the C code of ``functions`` in a build folder (:func:`_build_folder`) and
    compile those whose library does not pass :func:`check_file` against it (removed first,
    one warning: :func:`discard_damaged`); ``(libs, sources, failure)``: ``name -> library``,
    ``name -> SHA-256 of its C code`` and the first failure or None. The libraries compiled
    are added to ``fresh``."""
    libs, sources, jobs, problems = {}, {}, [], {}
    with _build_folder(folder) as tmp:
        for f in functions:
            src = _generate(f, tmp)
            code = src.read_bytes()
            sources[f.name()] = sha = hashlib.sha256(code).hexdigest()
            fkey = key or hashlib.sha256(code + " ".join((cc,) + COMPILER_FLAGS).encode()
                                         + sys.platform.encode()).hexdigest()[:20]
            lib = libs[f.name()] = _library(folder, name, f.name(), fkey)
            problems[lib] = check_file(lib, sha)
            if problems[lib]:
                jobs.append((src, lib, sha))
        discard_damaged(problems, entry=f"{name}-{key}" if key else None)
        failure = _compile(cc, jobs, built_with)
    fresh.update(lib for _, lib, _ in jobs)
    return libs, sources, failure
