"""The results folders of pyomo_lap: what an export wrote (the manifest), the lock that keeps two
runs out of one folder, and the checks before an export replaces a folder (nothing of the
user's is ever removed) or a command reads one. The rule for links (never follow one out of
a folder pyomo_lap owns) and the error of a refused folder are in :mod:`pyomo_lap.folders.links`.

Kept apart from :mod:`pyomo_lap.results.table` (the channels and the files' contents) so that
a solve checks and locks its folder before the build without importing pandas.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

from ..util.processes import process_running
from .links import FolderNotReplaceableError, _link_target, is_link, is_real_dir, refuse_links

__all__ = ["SOLUTION_FILE", "MANIFEST", "RESULTS_FILES",
           "VALIDATION_FILES", "read_manifest",
           "ManifestError", "record_files", "output_lock", "OutputLock", "OutputBusyError",
           "check_output_dir", "check_results_folder",
           "PARTIAL_SUFFIXES"]

SOLUTION_FILE = "solution.npz"
"""The file of a results folder that holds the values of every variable of the solved model
(:func:`pyomo_lap.results.table.solution_arrays`), to start another solve of the same job from
(:func:`pyomo_lap.results.table.load_solution`, the job option ``warm_start_from``)."""

MANIFEST = ".pyomo_lap_manifest.json"
"""The file of a results folder that lists what pyomo_lap wrote there (JSON): ``format``,
``pyomo_lap_version``, ``created_utc`` and ``files``, ``relative path -> {"sha256", "size",
"by"}`` (``by``: ``"solve"`` for the files of :func:`pyomo_lap.results.table.write_results`, ``"plot"`` for the
figures :func:`pyomo_lap.plots.figures.plot_results` wrote into the folder, ``"validate"`` for
those of :func:`pyomo_lap.api.validate.validate_results`). It is written last:
a folder without it is not a finished export. A later export into the folder replaces only
what it lists (:func:`check_output_dir`)."""

RESULTS_FILES = ("summary.json", "trajectory.csv", "trajectory.parquet", "results.xlsx",
                 SOLUTION_FILE, "corners.csv", "trajectory_mesh.csv", "trajectory_mesh.parquet")
"""The files :func:`pyomo_lap.results.table.write_results` writes (``solution.npz`` when given a
solution, ``corners.csv`` when the summary has ``corners``; ``trajectory_mesh.*``, the mesh
rows, when the trajectory is on a fixed distance step: ``solve --every``, ``pyomo-lap
export``)."""

VALIDATION_FILES = ("validation.json", "defects.csv", "validation_defects.png",
                    "validation_replay.png")
"""The files ``pyomo-lap validate`` writes into a results folder, recorded in its manifest
(``by = "validate"``): replaced with the rest by the next solve. A file of one of these
names that the manifest does not list is the user's. A folder without a manifest is never
replaced (only an empty one): its files may be the user's (a copy made with a plain ``cp``,
which skips the hidden manifest, then edited)."""

_STALE_AFTER_S = 3600.0
"""Age [s] after which a temporary folder without a process id in its name (written by a
pyomo_lap older than the manifest) is taken as left by a stopped run."""


class OutputBusyError(ValueError):
    """Another pyomo-lap run holds the lock on the output folder (nothing was touched)."""


class ManifestError(ValueError):
    """A folder's :data:`MANIFEST` is there but cannot be used (not JSON, not a list of files,
    a symbolic link, unreadable).

    Attributes
    ----------
    folder : Path
    problem : str
        What is wrong, to follow the manifest's name (``"is not valid JSON (line 1 col 1)"``).
    """

    def __init__(self, folder, problem: str):
        self.folder, self.problem = Path(folder), problem
        super().__init__(f"{Path(folder) / MANIFEST} {problem}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _file_entry(path: Path, by: str) -> dict:
    return {"sha256": _sha256(path), "size": path.stat().st_size, "by": by}


def _manifest_problem(path: Path):
    """``(manifest, None)`` or ``(None, problem)`` for the manifest file ``path``; ``(None,
    None)`` when there is none. A link is not followed."""
    if is_link(path):
        return None, f"is a symbolic link (to {_link_target(path)}), which pyomo_lap never follows"
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        manifest = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"is not valid JSON (line {exc.lineno} col {exc.colno})"
    except ValueError as exc:
        return None, f"is not valid JSON ({exc})"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return None, "is not a manifest of pyomo_lap (no table 'files')"
    return manifest, None


def read_manifest(folder, strict: bool = False) -> dict | None:
    """The :data:`MANIFEST` of a folder.

    Parameters
    ----------
    folder : str or Path
    strict : bool
        Raise :class:`ManifestError` for a manifest that is there but cannot be used, instead
        of returning None.

    Returns
    -------
    dict or None
        The manifest (``files``: relative path -> entry); None when the folder has none (or,
        unless ``strict``, when it cannot be used: not JSON, not a manifest, a symbolic link,
        which is never followed, unreadable).

    Raises
    ------
    ManifestError (a ValueError)
        ``strict``: the manifest is there but cannot be used; ``problem`` says why (``"is not
        valid JSON (line L col C)"``).
    """
    manifest, problem = _manifest_problem(Path(folder) / MANIFEST)
    if problem is not None and strict:
        raise ManifestError(folder, problem)
    return manifest


def _fsync_dir(path) -> None:
    """Flush a folder's entries (the names created or renamed in it) to the disk; POSIX only
    (elsewhere, or on a file system that cannot, nothing is done). A link is not followed."""
    if os.name != "posix":
        return
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:             # EINVAL: a file system without fsync of folders
        pass
    finally:
        os.close(fd)


def _fsync_file(path) -> None:
    """Flush a file's contents to the disk (a link is not followed)."""
    flags = (os.O_RDWR if os.name == "nt" else os.O_RDONLY) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(folder) -> None:
    """Flush every file under ``folder`` and every folder, ``folder`` last, to the disk (before
    a rename makes them the results: a power loss after it finds them whole). Links are
    neither followed nor flushed.

    Raises
    ------
    OSError
        A file cannot be flushed (the disk failed).
    """
    for root, _dirs, files in os.walk(folder, topdown=False, followlinks=False):
        for name in files:
            p = os.path.join(root, name)
            if not is_link(p):
                _fsync_file(p)
        _fsync_dir(root)


def _write_manifest(folder: Path, manifest: dict) -> None:
    """Write the manifest of ``folder`` atomically (a new temporary file, flushed, then a
    rename); a link in the temporary file's place is not followed."""
    tmp = folder / f"{MANIFEST}.tmp-{os.getpid()}"
    if is_link(tmp):
        tmp.unlink()                     # a link named like pyomo_lap's own temporary file
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(tmp, flags, 0o644), "w") as fh:
        fh.write(json.dumps(manifest, indent=1, sort_keys=True))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / MANIFEST)
    _fsync_dir(folder)


def record_files(folder, paths, by: str = "plot") -> list:
    """Add files written into a results folder after the export (the figures of
    :func:`pyomo_lap.plots.figures.plot_results`) to its :data:`MANIFEST`, so that the next
    export into the folder replaces them with the rest.

    Parameters
    ----------
    folder : str or Path
        A results folder with a manifest (without one, nothing is recorded).
    paths : iterable of str or Path
        Files inside ``folder`` (others are skipped).
    by : str
        Who wrote them (``"plot"``, ``"validate"``).

    Returns
    -------
    list of str
        The relative paths recorded. A link is never recorded, nor followed (the folders
        above a file are resolved, the file's own name is not).
    """
    if is_link(folder):
        return []
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    if manifest is None:
        return []
    done = []
    for p in paths:
        if is_link(p):
            continue                     # a link is not pyomo_lap's file
        p = Path(p).expanduser().absolute()
        p = p.parent.resolve() / p.name
        try:
            rel = p.relative_to(folder).as_posix()
        except ValueError:
            continue
        if not is_link(p) and p.is_file():
            manifest["files"][rel] = _file_entry(p, by)
            done.append(rel)
    if done:
        _write_manifest(folder, manifest)
    return done


def _entries(folder: Path) -> list:
    """``(relative path, kind)`` of everything under ``folder``, sorted; kind is ``"file"``,
    ``"dir"``, ``"link"`` (a symbolic link, not followed) or ``"other"`` (sockets ...). A
    ``folder`` that is a link or no folder has none."""
    if not is_real_dir(folder):
        return []
    out = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        r = Path(root)
        for name in dirs + files:
            p = r / name
            kind = ("link" if is_link(p) else "dir" if is_real_dir(p)
                    else "file" if p.is_file() else "other")
            out.append((p.relative_to(folder).as_posix(), kind))
    return sorted(out)


def _foreign_entry(folder: Path, hashes: bool = True):
    """The first thing in ``folder`` that pyomo_lap did not write, as ``(relative path,
    note)`` (``(None, note)`` when the folder as a whole cannot be taken as pyomo_lap's: a
    symbolic link, no :data:`MANIFEST`, a manifest that cannot be used), or None when the
    folder may be replaced: missing, empty, or holding only what its manifest lists, with the
    recorded SHA-256 (``pyomo-lap validate``'s files included, :data:`VALIDATION_FILES`).
    A non-empty folder without a manifest is never pyomo_lap's (a copy made with a plain
    ``cp`` skips the hidden manifest: its files may be edited). Links are never followed. ``hashes=False``: names only."""
    if is_link(folder):
        return None, (f"is a symbolic link (to {_link_target(folder)}), which pyomo_lap never "
                      "follows")
    if not os.path.lexists(folder):
        return None
    try:
        manifest = read_manifest(folder, strict=True)
    except ManifestError as exc:
        return None, f"cannot be checked: its {MANIFEST} {exc.problem}"
    if manifest is None:
        with os.scandir(folder) as it:        # no walk of a folder that is not pyomo_lap's
            if next(it, None) is None:
                return None
        return None, (f"has no {MANIFEST}, the list of what pyomo_lap wrote there (a plain `cp` "
                      "skips it, `cp -a` keeps it)")
    entries = _entries(folder)
    listed = manifest["files"]
    dirs = {parent.as_posix() for rel in listed for parent in Path(rel).parents} - {"."}
    for rel, kind in entries:
        if rel == MANIFEST or (kind == "file" and rel.startswith(MANIFEST + ".tmp-")):
            continue
        if kind == "dir" and rel in dirs:
            continue
        if kind == "file" and rel in listed:
            entry = listed[rel]
            if hashes and (not isinstance(entry, dict)
                           or (folder / rel).stat().st_size != entry.get("size")
                           or _sha256(folder / rel) != entry.get("sha256")):
                return rel, "changed since pyomo_lap wrote it"
            continue
        return rel, ("a symbolic link, which pyomo_lap never follows" if kind == "link"
                     else None)
    return None


def _refuse_foreign(folder: Path, what: str, hashes: bool = True) -> None:
    """Raise :class:`FolderNotReplaceableError` naming ``folder`` and the first thing in it
    that pyomo_lap did not write (:func:`_foreign_entry`): a link (the folder itself or
    anything under it, :func:`refuse_links`), a folder without a usable manifest, a file of
    the user's, a changed file."""
    todo = "remove the link (only the link: it is a name, not the folder) or choose another --out"
    if is_link(folder):
        refuse_links(folder, what, todo=todo)
    if os.path.lexists(folder) and not is_real_dir(folder):
        raise FolderNotReplaceableError(f"{what} is a file; choose another --out (nothing was "
                                        "touched)")
    found = _foreign_entry(folder, hashes=hashes)    # no manifest: said before any walk
    if found is not None and found[0] is None:
        raise FolderNotReplaceableError(
            f"{what} may hold files that are not pyomo_lap results: it {found[1]}; move them "
            "out or choose another --out (nothing was touched)")
    refuse_links(folder, what, todo=todo)
    if found is not None:
        rel, note = found
        raise FolderNotReplaceableError(
            f"{what} holds files that are not pyomo_lap results ({rel!r} first"
            + (f", {note}" if note else "") + "): move them out or choose another --out "
            "(nothing was touched)")


def _remove_results_folder(folder: Path) -> bool:
    """Remove a folder of pyomo_lap's files only (:func:`_foreign_entry`; files first, then
    the folders left empty); True if it is gone, False if it holds something else or is a
    link (kept: nothing is deleted through a link)."""
    if not is_real_dir(folder) or _foreign_entry(folder, hashes=False) is not None:
        return False
    for rel, kind in reversed(_entries(folder)):
        p = folder / rel
        try:
            if kind == "dir":
                p.rmdir()
            elif kind == "file":
                p.unlink()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


def _debris(parent: Path, prefix: str) -> list:
    """The entries of ``parent`` whose names start with ``prefix``, sorted (listed, never
    followed: links and dangling links included)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [parent / n for n in sorted(names) if n.startswith(prefix)]


def _recover(out_dir: Path, echo) -> None:
    """Clean up after runs into ``out_dir`` that were stopped (SIGKILL, power loss) while
    exporting; called with the lock on ``out_dir`` held.

    For ``out_dir``, ``<out_dir>.failed`` and ``<out_dir>.interrupted``: a ``.NAME.old-PID``
    folder (the earlier results, moved aside by a run killed before it moved the new ones in) of a process that is not
    running is moved back to ``NAME`` when ``NAME`` is missing, and removed when ``NAME`` holds
    newer results (kept, and named, when it holds anything pyomo_lap did not write);
    ``.NAME.tmp-PID-*`` folders (unfinished exports) of processes that are not running are
    removed (those named without a process id, by a pyomo_lap older than the manifest, once
    they are an hour old). A symbolic link named like either is left alone (never followed,
    moved or deleted through) and said. Each action is said through ``echo``.
    """
    parent = out_dir.parent
    removed, links = [], []
    for name in (out_dir.name, *(out_dir.name + t for t in PARTIAL_SUFFIXES)):
        target = parent / name
        prefix = f".{name}.old-"
        olds = []
        for p in _debris(parent, prefix):
            if not p.name[len(prefix):].isdigit():
                continue
            if is_link(p):
                links.append(p.name)
            elif is_real_dir(p):
                olds.append(p)
        for old in sorted(olds, key=lambda p: os.lstat(p).st_mtime, reverse=True):
            pid = int(old.name[len(prefix):])
            if process_running(pid):
                continue
            if not os.path.lexists(target):
                os.replace(old, target)
                echo(f"restored {target} from {old.name}: a pyomo-lap run (pid {pid}) was "
                     "stopped while replacing it and had left the earlier results there")
            elif _remove_results_folder(old):
                removed.append(old.name)
            else:
                found = _foreign_entry(old, hashes=False)
                why = ("it is not empty" if found is None else found[1] if found[0] is None
                       else f"it holds {found[0]!r}, which pyomo_lap did not write")
                echo(f"kept {old}: earlier results of {name} moved aside by a stopped "
                     f"pyomo-lap run (pid {pid}), but {why}; move out what you need and remove it")
        prefix = f".{name}.tmp-"
        for tmp in _debris(parent, prefix):
            if is_link(tmp):
                links.append(tmp.name)
                continue
            if not is_real_dir(tmp):
                continue
            m = re.fullmatch(r"(\d+)-.+", tmp.name[len(prefix):])
            if m is not None:
                if process_running(int(m.group(1))):
                    continue
            elif time.time() - os.lstat(tmp).st_mtime < _STALE_AFTER_S:
                continue
            shutil.rmtree(tmp, ignore_errors=True)       # links inside: removed, not followed
            if not os.path.lexists(tmp):
                removed.append(tmp.name)
    if removed:
        echo(f"removed {len(removed)} folder{'s' if len(removed) > 1 else ''} left next to "
             f"{out_dir} by stopped pyomo-lap runs: {', '.join(sorted(removed))}")
    if links:
        one = len(links) == 1
        echo(f"left {', '.join(links)} in {parent} alone: "
             + ("a symbolic link, not a folder" if one else "symbolic links, not folders")
             + " pyomo_lap moved aside or was writing into (never followed); remove "
             + ("it" if one else "them") + " if it is not yours")


# ---- the lock on an output folder --------------------------------------------------------------

_HELD: dict = {}
"""``lock file path -> [filelock.FileLock, count, thread id]``: the locks this process holds
(taken again by the same thread, a lock is counted, not taken twice)."""
_HELD_GUARD = threading.Lock()


PARTIAL_SUFFIXES = (".failed", ".interrupted")
"""The folders next to a results folder ``NAME`` where partial results go: ``NAME.failed``
(a failed solve's last point) and ``NAME.interrupted`` (the last iterate of a solve stopped by
Ctrl-C or SIGTERM, to start again from); each checked, locked and recovered with ``NAME``."""


def _lock_file(folder: Path) -> Path:
    """``.NAME.lock`` next to the folder ``NAME`` (the same for ``NAME.failed`` and
    ``NAME.interrupted``)."""
    name = folder.name
    for tail in PARTIAL_SUFFIXES:
        if name.endswith(tail) and len(name) > len(tail):
            name = name[:-len(tail)]
            break
    return folder.parent / f".{name}.lock"


class OutputLock:
    """The lock on a results folder ``NAME`` (and ``NAME.failed``) held while a run writes
    into it: an OS file lock (:mod:`filelock`, ``flock``) on ``.NAME.lock`` next to it, which
    holds the process id of its holder. A lock is released when its process ends, however it
    ends: the lock file of a killed run does not block (it is taken over and removed).

    Taken again by the thread that holds it, the lock is counted (reentrant); another thread
    or process is refused at once (:class:`OutputBusyError`). Use as a context manager, or
    :meth:`acquire` / :meth:`release`.

    Parameters
    ----------
    folder : str or Path
        The results folder.
    command : str
        What takes the lock: ``"solve"`` (an export into ``--out``: the refusal says to wait
        or choose another ``--out``), ``"plot"`` or ``"validate"`` (writing into a results
        folder that is given: the refusal says to wait).
    """

    def __init__(self, folder, command: str = "solve"):
        self.folder = Path(folder).expanduser().resolve()
        self.path = _lock_file(self.folder)
        self.command = command
        self._count = 0
        self.taken_now = False
        """Whether the last :meth:`acquire` took the lock (False: held already by this
        thread, counted)."""

    def _busy(self, pid) -> OutputBusyError:
        todo = ("wait for it to finish or choose another --out" if self.command == "solve"
                else f"wait for it to finish, then run `pyomo-lap {self.command}` again")
        return OutputBusyError(f"another pyomo-lap run is writing into {self.folder} (pid {pid}); "
                               f"{todo} (nothing was touched)")

    def _refuse_odd_lock_file(self) -> None:
        """Refuse a lock file that is a symbolic link or not a file (it is never followed)."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError:
            return                          # said by the lock's own error
        if is_link(self.path):
            kind = f"a symbolic link (to {_link_target(self.path)}), which pyomo_lap never follows"
        elif not stat.S_ISREG(st.st_mode):
            kind = "not a file"
        else:
            return
        raise FolderNotReplaceableError(
            f"the lock file {self.path} of {self.folder} is {kind}: remove it (only it: it is "
            "not pyomo_lap's) and run again (nothing was touched)")

    def acquire(self) -> "OutputLock":
        """Take the lock (at once, or :class:`OutputBusyError`); returns self.

        Raises
        ------
        OutputBusyError (a ValueError)
            Another process, or another thread of this one, holds it.
        FolderNotReplaceableError (a ValueError)
            The lock file is a symbolic link (never followed: opening it would create or empty
            the file it points to) or not a file.
        OSError
            The lock file cannot be created (the folder's parent is missing or read-only).
        """
        from filelock import FileLock, Timeout
        key, me = str(self.path), threading.get_ident()
        with _HELD_GUARD:
            held = _HELD.get(key)
            if held is not None:
                if held[2] != me:
                    raise self._busy(os.getpid())
                held[1] += 1
                self._count += 1
                self.taken_now = False
                return self
            self._refuse_odd_lock_file()
            lock = FileLock(key, timeout=0)
            try:
                lock.acquire()
                self._refuse_odd_lock_file()         # made a link meanwhile
            except FolderNotReplaceableError:
                lock.release()
                raise
            except Timeout:
                try:
                    pid = int(self.path.read_text().strip())
                except (OSError, ValueError):
                    pid = "unknown"
                raise self._busy(pid) from None
            try:
                self.path.write_text(f"{os.getpid()}\n")
            except OSError:
                pass
            _HELD[key] = [lock, 1, me]
            self._count += 1
            self.taken_now = True
        return self

    def release(self) -> None:
        """Give back one :meth:`acquire`; the last one removes the lock file and unlocks."""
        if self._count <= 0:
            return
        key = str(self.path)
        with _HELD_GUARD:
            self._count -= 1
            held = _HELD.get(key)
            if held is None:
                return
            held[1] -= 1
            if held[1] > 0:
                return
            del _HELD[key]
            try:
                self.path.unlink()       # while still locked: no other run holds this file
            except OSError:
                pass
            held[0].release()

    def __enter__(self) -> "OutputLock":
        """Take the lock (:meth:`acquire`)."""
        return self.acquire()

    def __exit__(self, *exc) -> None:
        """Give the lock back (:meth:`release`)."""
        self.release()


def output_lock(folder, command: str = "solve") -> OutputLock:
    """The :class:`OutputLock` of a results folder (not yet taken), for ``command``
    (``"solve"``, ``"plot"``, ``"validate"``: what its refusal tells to do)."""
    return OutputLock(folder, command)


def check_output_dir(out_dir, echo=None, hold: list | None = None) -> Path:
    """Check before any work that results can be written to ``out_dir``, and clean up after
    earlier runs into it that were stopped (:func:`_recover`).

    The clean-up runs when the lock is taken, not again while this thread holds it (the
    export of a solve that took it before the build).

    ``out_dir`` (and ``<out_dir>.failed``, where a failed run keeps its partial results, and
    ``<out_dir>.interrupted``, where a run stopped by Ctrl-C keeps its last iterate) may
    be replaced only when missing, empty, or holding only what pyomo_lap wrote there: the
    files its :data:`MANIFEST` lists, unchanged (SHA-256), ``pyomo-lap validate``'s files
    included. A non-empty folder without a usable manifest is refused (a copy
    made with a plain ``cp`` has none: its files may be the user's), and so is a folder that
    is a symbolic link or holds one (:func:`refuse_links`: no link is ever followed, moved or
    deleted through); so is ``out_dir`` given as a link (give the real path).

    Parameters
    ----------
    out_dir : str or Path
    echo : callable, optional
        What was cleaned up or restored (one line each).
    hold : list, optional
        Given, the lock on ``out_dir`` (:class:`OutputLock`) is taken before the folder is
        looked at and kept: appended to ``hold``, for the caller to release. Without it, the
        lock is taken for the check only.

    Returns
    -------
    Path
        ``out_dir``, absolute.

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        ``out_dir``, ``<out_dir>.failed`` or ``<out_dir>.interrupted`` holds something
        pyomo_lap did not write (the
        message names the first), has no usable manifest, is or holds a symbolic link, or
        the lock file is a link; it is never touched.
    OutputBusyError (a ValueError)
        Another run is writing into ``out_dir``.
    ValueError
        ``out_dir`` has no name (``.``, ``/``) or is a file.
    OSError
        Its parent folder cannot be created or written (the message names it).
    """
    echo = echo or (lambda *_: None)
    given = Path(out_dir).expanduser()
    out_dir = given.resolve()
    if not out_dir.name:
        raise ValueError(f"output folder {str(out_dir)!r} has no name; give a folder such as 'results'")
    if is_link(given):              # the name as given: links higher up the path are the user's
        refuse_links(given, f"output folder {str(given)!r}", todo="remove the link (only the link)")
    if os.path.lexists(out_dir) and not is_real_dir(out_dir):
        raise ValueError(f"output folder {str(out_dir)!r} is a file; choose another --out "
                         "(nothing was touched)")
    failed = out_dir.with_name(out_dir.name + ".failed")
    interrupted = out_dir.with_name(out_dir.name + ".interrupted")
    what = {out_dir: f"output folder {str(out_dir)!r}",
            failed: f"{str(failed)!r} (where a failed run keeps its partial results)",
            interrupted: f"{str(interrupted)!r} (where an interrupted run keeps its last "
                         "iterate)"}
    for folder in what:      # by name first: said even where nothing can be written
        _refuse_foreign(folder, what[folder], hashes=False)
    parent = out_dir.parent
    blocker = next((a for a in [parent, *parent.parents] if a.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ValueError(f"cannot write results to {str(out_dir)!r}: {str(blocker)!r} is a file, "
                         "not a folder; choose another --out (nothing was touched)")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.probe-", dir=parent))
        probe.rmdir()
    except OSError as exc:
        raise OSError(f"cannot write results next to {str(out_dir)!r}: {exc.strerror or exc}") from None
    lock = output_lock(out_dir).acquire()
    try:
        if lock.taken_now:           # held already: recovered when it was taken
            _recover(out_dir, echo)
        for folder in what:
            _refuse_foreign(folder, what[folder])
    except BaseException:
        lock.release()
        raise
    if hold is not None:
        hold.append(lock)
    else:
        lock.release()
    return out_dir


def _missing_folder_text(folder: Path) -> str:
    """Why a results folder ``NAME`` given to ``plot``, ``compare`` or ``validate`` is missing:
    between the two moves of an export (:func:`pyomo_lap.results.table.write_results`) the
    earlier results are in ``.NAME.old-PID`` (the newest is named, with whether its run still
    runs); else no such folder."""
    prefix = f".{folder.name}.old-"
    olds = []
    if folder.name and folder.parent.is_dir():
        olds = [p for p in folder.parent.glob(glob.escape(prefix) + "*")
                if p.name[len(prefix):].isdigit() and p.is_dir() and not is_link(p)]
    if not olds:
        return f"{folder}: no such folder; expected a results folder of `pyomo-lap solve`"
    old = max(olds, key=lambda p: p.stat().st_mtime)
    pid = int(old.name[len(prefix):])
    if process_running(pid):
        return (f"{folder}: no such folder for now: a pyomo-lap run (pid {pid}) is replacing it "
                f"and has moved the earlier results to {old}; wait for it to finish, then try "
                "again")
    return (f"{folder}: no such folder: a pyomo-lap run (pid {pid}) was stopped while replacing "
            f"it and left the earlier results in {old}; to restore them, move that folder back "
            f"to {folder.name}, or run `pyomo-lap solve --out {folder}` again (it restores them "
            "first, then replaces them with its own)")


def check_results_folder(folder) -> Path:
    """Check that ``folder`` holds the complete results of a run: a :data:`MANIFEST` (written
    last by :func:`pyomo_lap.results.table.write_results`) and every file of the export it lists. ``pyomo-lap plot``,
    ``compare`` and ``validate`` take nothing else (an unfinished export, a folder of an
    earlier pyomo_lap, a folder made by hand).

    Returns
    -------
    Path
        ``folder``.

    Raises
    ------
    ValueError
        One line naming the folder and what is missing (a folder that a run is replacing,
        or was stopped while replacing: the ``.NAME.old-PID`` folder of the earlier results,
        and what to do).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(_missing_folder_text(folder))
    try:
        manifest = read_manifest(folder, strict=True)
    except ManifestError as exc:
        raise ValueError(f"{folder} is not a usable results folder of `pyomo-lap solve`: its "
                         f"{MANIFEST} {exc.problem}; solve again into it or another --out") from None
    if manifest is None:
        raise ValueError(f"{folder} is not a complete results folder of `pyomo-lap solve`: it has "
                         f"no {MANIFEST}, the list of the files of a finished export (summary.json, "
                         "trajectory.*, results.xlsx), which this version writes last; solve again")
    missing = [rel for rel, e in manifest["files"].items()
               if (e.get("by", "solve") if isinstance(e, dict) else "solve") == "solve"
               and not (folder / rel).is_file()]
    if missing:
        raise ValueError(f"{folder} is not a complete results folder of `pyomo-lap solve`: "
                         f"{missing[0]}, listed in its {MANIFEST}, is missing; solve again")
    return folder
