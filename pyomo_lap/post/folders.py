"""The results folders of pyomo_lap: what an export wrote (the manifest), the lock that keeps two
runs out of one folder, and the checks before an export replaces a folder (nothing of the
user's is ever removed) or a command reads one.

Kept apart from :mod:`pyomo_lap.post.results` (the channels and the files' contents) so that
a solve checks and locks its folder before the build without importing pandas.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from ..util.processes import process_running

__all__ = ["SOLUTION_FILE", "MANIFEST", "RESULTS_FILES", "VALIDATION_FILES", "read_manifest",
           "record_files", "output_lock", "OutputLock", "OutputBusyError",
           "FolderNotReplaceableError", "check_output_dir", "check_results_folder",
           "is_link", "refuse_links"]

SOLUTION_FILE = "solution.npz"
"""The file of a results folder that holds the values of every variable of the solved model
(:func:`pyomo_lap.post.results.solution_arrays`), to start another solve of the same job from
(:func:`pyomo_lap.post.results.load_solution`, the job option ``warm_start_from``)."""

MANIFEST = ".pyomo_lap_manifest.json"
"""The file of a results folder that lists what pyomo_lap wrote there (JSON): ``format``,
``pyomo_lap_version``, ``created_utc`` and ``files``, ``relative path -> {"sha256", "size",
"by"}`` (``by``: ``"solve"`` for the files of :func:`pyomo_lap.post.results.write_results`, ``"plot"`` for the
figures :func:`pyomo_lap.post.plots.plot_results` wrote into the folder, ``"validate"`` for
those of :func:`pyomo_lap.post.validate.validate_results`). It is written last:
a folder without it is not a finished export. A later export into the folder replaces only
what it lists (:func:`check_output_dir`)."""

RESULTS_FILES = ("summary.json", "trajectory.csv", "trajectory.parquet", "results.xlsx",
                 SOLUTION_FILE)
"""The files :func:`pyomo_lap.post.results.write_results` writes (``solution.npz`` when given a solution)."""

VALIDATION_FILES = ("validation.json", "defects.csv", "validation_defects.png",
                    "validation_replay.png")
"""The files ``pyomo-lap validate`` writes into a results folder, recorded in its manifest
(``by = "validate"``): replaced with the rest by the next solve. A file of one of these
names that the manifest does not list is the user's (a folder without a manifest, of a
pyomo_lap older than it, may hold them)."""

_LEGACY_FILES = RESULTS_FILES + VALIDATION_FILES
"""What a results folder written before the manifest existed may hold to be replaced."""

_STALE_AFTER_S = 3600.0
"""Age [s] after which a temporary folder without a process id in its name (written by a
pyomo_lap older than the manifest) is taken as left by a stopped run."""


class FolderNotReplaceableError(ValueError):
    """The output folder holds something pyomo_lap did not write (nothing was touched)."""


class OutputBusyError(ValueError):
    """Another pyomo-lap run holds the lock on the output folder (nothing was touched)."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _file_entry(path: Path, by: str) -> dict:
    return {"sha256": _sha256(path), "size": path.stat().st_size, "by": by}


def is_link(path) -> bool:
    """Whether ``path`` is a symbolic link (or a Windows junction), tested without following
    it; False when nothing is there.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    bool
    """
    isjunction = getattr(os.path, "isjunction", None)       # Python >= 3.12
    return os.path.islink(path) or bool(isjunction and isjunction(path))


def refuse_links(folder, what: str) -> None:
    """Refuse a folder that is a link or holds one: pyomo_lap never reads, writes, moves or
    deletes through a link out of a folder it owns. Nothing is followed (the folder is walked
    without following links).

    Parameters
    ----------
    folder : str or Path
        The folder (missing: nothing to refuse).
    what : str
        The folder as the message names it (``"results folder '/x/base'"``).

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        One line naming the first link (``folder`` itself, or the first under it: the
        shallowest, by name) and where it points.
    """
    folder = Path(folder)
    found = folder if is_link(folder) else None
    if found is None and folder.is_dir():
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            links = sorted(Path(root) / n for n in dirs + files if is_link(Path(root) / n))
            if links:
                found = links[0]
                break
    if found is None:
        return
    try:
        target = os.readlink(found)
    except OSError:
        target = "?"
    where = "is a link" if found == folder else f"holds a link, {str(found)!r}"
    raise FolderNotReplaceableError(
        f"{what} {where} (to {target!r}); pyomo_lap does not write through links: put the "
        "file or folder itself there, or remove the link (nothing was touched)")


def read_manifest(folder) -> dict | None:
    """The :data:`MANIFEST` of a folder (a dict with ``files``), or None when it has none or
    it cannot be read."""
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return None
    return manifest


def _write_manifest(folder: Path, manifest: dict) -> None:
    """Write the manifest of ``folder`` atomically (a temporary file, then a rename)."""
    tmp = folder / f"{MANIFEST}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, folder / MANIFEST)


def record_files(folder, paths, by: str = "plot") -> list:
    """Add files written into a results folder after the export (the figures of
    :func:`pyomo_lap.post.plots.plot_results`) to its :data:`MANIFEST`, so that the next
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
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    if manifest is None:
        return []
    done = []
    for p in paths:
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
    ``"dir"`` or ``"other"`` (links, sockets ...; links are not followed)."""
    out = []
    for root, dirs, files in os.walk(folder):
        r = Path(root)
        for name in dirs + files:
            p = r / name
            kind = ("other" if p.is_symlink() else "dir" if p.is_dir()
                    else "file" if p.is_file() else "other")
            out.append((p.relative_to(folder).as_posix(), kind))
    return sorted(out)


def _foreign_entry(folder: Path, hashes: bool = True):
    """The first thing in ``folder`` that pyomo_lap did not write, as ``(relative path,
    note)``, or None when the folder may be replaced (missing, empty, or holding only what its
    :data:`MANIFEST` lists, with the recorded SHA-256; without a manifest, only the files of
    a results folder of an earlier pyomo_lap, with a ``summary.json`` naming its version). ``hashes=False``: names
    only."""
    if not folder.exists():
        return None
    entries = _entries(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        for rel, kind in entries:
            if kind != "file" or rel not in _LEGACY_FILES:
                return rel, None
        if not entries:
            return None
        try:
            ok = "pyomo_lap_version" in json.loads((folder / "summary.json").read_text())
        except (OSError, ValueError, TypeError):
            ok = False
        return None if ok else (entries[0][0], f"and no {MANIFEST} nor a summary.json naming "
                                               "a pyomo_lap version")
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
        return rel, None
    return None


def _refuse_foreign(folder: Path, what: str, hashes: bool = True) -> None:
    """Raise :class:`FolderNotReplaceableError` naming ``folder`` and the first thing in it
    that pyomo_lap did not write (:func:`_foreign_entry`)."""
    if folder.exists() and not folder.is_dir():
        raise FolderNotReplaceableError(f"{what} is a file; choose another --out (nothing was "
                                        "touched)")
    found = _foreign_entry(folder, hashes=hashes)
    if found is not None:
        rel, note = found
        raise FolderNotReplaceableError(
            f"{what} holds files that are not pyomo_lap results ({rel!r} first"
            + (f", {note}" if note else "") + "): move them out or choose another --out "
            "(nothing was touched)")


def _remove_results_folder(folder: Path) -> bool:
    """Remove a folder of pyomo_lap's files only (:func:`_foreign_entry`; files first, then
    the folders left empty); True if it is gone, False if it holds something else (kept)."""
    if _foreign_entry(folder, hashes=False) is not None:
        return False
    for rel, kind in reversed(_entries(folder)):
        p = folder / rel
        try:
            p.rmdir() if kind == "dir" else p.unlink()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


def _recover(out_dir: Path, echo) -> None:
    """Clean up after runs into ``out_dir`` that were stopped (SIGKILL, power loss) while
    exporting; called with the lock on ``out_dir`` held.

    For ``out_dir`` and ``<out_dir>.failed``: a ``.NAME.old-PID`` folder (the earlier results,
    moved aside by a run killed before it moved the new ones in) of a process that is not
    running is moved back to ``NAME`` when ``NAME`` is missing, and removed when ``NAME`` holds
    newer results (kept, and named, when it holds anything pyomo_lap did not write);
    ``.NAME.tmp-PID-*`` folders (unfinished exports) of processes that are not running are
    removed (those named without a process id, by a pyomo_lap older than the manifest, once
    they are an hour old). Each action is said through ``echo``.
    """
    parent = out_dir.parent
    removed = []
    for name in (out_dir.name, out_dir.name + ".failed"):
        target = parent / name
        prefix = f".{name}.old-"
        olds = [p for p in parent.glob(glob.escape(prefix) + "*")
                if p.is_dir() and p.name[len(prefix):].isdigit()]
        for old in sorted(olds, key=lambda p: p.stat().st_mtime, reverse=True):
            pid = int(old.name[len(prefix):])
            if process_running(pid):
                continue
            if not target.exists():
                os.replace(old, target)
                echo(f"restored {target} from {old.name}: a pyomo-lap run (pid {pid}) was "
                     "stopped while replacing it and had left the earlier results there")
            elif _remove_results_folder(old):
                removed.append(old.name)
            else:
                found = _foreign_entry(old, hashes=False)
                echo(f"kept {old}: earlier results of {name} moved aside by a stopped "
                     f"pyomo-lap run (pid {pid}), holding {found[0]!r}, which pyomo_lap did "
                     "not write; move out what you need and remove it")
        prefix = f".{name}.tmp-"
        for tmp in parent.glob(glob.escape(prefix) + "*"):
            if not tmp.is_dir() or tmp.is_symlink():
                continue
            m = re.fullmatch(r"(\d+)-.+", tmp.name[len(prefix):])
            if m is not None:
                if process_running(int(m.group(1))):
                    continue
            elif time.time() - tmp.stat().st_mtime < _STALE_AFTER_S:
                continue
            shutil.rmtree(tmp, ignore_errors=True)
            if not tmp.exists():
                removed.append(tmp.name)
    if removed:
        echo(f"removed {len(removed)} folder{'s' if len(removed) > 1 else ''} left next to "
             f"{out_dir} by stopped pyomo-lap runs: {', '.join(sorted(removed))}")


# ---- the lock on an output folder --------------------------------------------------------------

_HELD: dict = {}
"""``lock file path -> [filelock.FileLock, count, thread id]``: the locks this process holds
(taken again by the same thread, a lock is counted, not taken twice)."""
_HELD_GUARD = threading.Lock()


def _lock_file(folder: Path) -> Path:
    """``.NAME.lock`` next to the folder ``NAME`` (the same for ``NAME.failed``)."""
    name = folder.name[:-len(".failed")] if folder.name.endswith(".failed") else folder.name
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

    def _busy(self, pid) -> OutputBusyError:
        todo = ("wait for it to finish or choose another --out" if self.command == "solve"
                else f"wait for it to finish, then run `pyomo-lap {self.command}` again")
        return OutputBusyError(f"another pyomo-lap run is writing into {self.folder} (pid {pid}); "
                               f"{todo} (nothing was touched)")

    def acquire(self) -> "OutputLock":
        """Take the lock (at once, or :class:`OutputBusyError`); returns self.

        Raises
        ------
        OutputBusyError (a ValueError)
            Another process, or another thread of this one, holds it.
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
                return self
            lock = FileLock(key, timeout=0)
            try:
                lock.acquire()
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
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def output_lock(folder, command: str = "solve") -> OutputLock:
    """The :class:`OutputLock` of a results folder (not yet taken), for ``command``
    (``"solve"``, ``"plot"``, ``"validate"``: what its refusal tells to do)."""
    return OutputLock(folder, command)


def check_output_dir(out_dir, echo=None, hold: list | None = None) -> Path:
    """Check before any work that results can be written to ``out_dir``, and clean up after
    earlier runs into it that were stopped (:func:`_recover`).

    ``out_dir`` (and ``<out_dir>.failed``, where a failed run keeps its partial results) may
    be replaced only when missing, empty, or holding only what pyomo_lap wrote there: the
    files its :data:`MANIFEST` lists, unchanged (SHA-256); a folder written before the manifest existed only when it holds
    nothing but the files of a results folder (:data:`RESULTS_FILES`,
    :data:`VALIDATION_FILES`) and a ``summary.json`` naming a pyomo_lap version.

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
        ``out_dir`` or ``<out_dir>.failed`` holds something pyomo_lap did not write (the
        message names the first); it is never touched.
    OutputBusyError (a ValueError)
        Another run is writing into ``out_dir``.
    ValueError
        ``out_dir`` has no name (``.``, ``/``) or is a file.
    OSError
        Its parent folder cannot be created or written (the message names it).
    """
    echo = echo or (lambda *_: None)
    out_dir = Path(out_dir).expanduser().resolve()
    if not out_dir.name:
        raise ValueError(f"output folder {str(out_dir)!r} has no name; give a folder such as 'results'")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"output folder {str(out_dir)!r} is a file; choose another --out "
                         "(nothing was touched)")
    failed = out_dir.with_name(out_dir.name + ".failed")
    what = {out_dir: f"output folder {str(out_dir)!r}",
            failed: f"{str(failed)!r} (where a failed run keeps its partial results)"}
    for folder in (out_dir, failed):      # by name first: said even where nothing can be written
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
        _recover(out_dir, echo)
        for folder in (out_dir, failed):
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
    between the two moves of an export (:func:`pyomo_lap.post.results.write_results`) the
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
    last by :func:`pyomo_lap.post.results.write_results`) and every file of the export it lists. ``pyomo-lap plot``,
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
    manifest = read_manifest(folder)
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
