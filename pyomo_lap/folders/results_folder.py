"""The checks of the folders pyomo_lap writes: before a folder is replaced (nothing of the
user's is ever removed, :func:`check_output_dir`) or read (:func:`check_results_folder`), and
the clean-up after runs into it that were stopped (:func:`_recover`).

The manifest is :mod:`pyomo_lap.folders.manifest`, the lock :mod:`pyomo_lap.folders.lock`, the
rule for links (never follow one out of a folder pyomo_lap owns) and the error of a refused
folder :mod:`pyomo_lap.folders.links`; the one object that writes every folder is
:class:`pyomo_lap.folders.writer.ResultsWriter`. Their names are re-exported here (the names of
this module before it was split).

Kept apart from :mod:`pyomo_lap.results.table` (the channels and the files' contents) so that
a solve checks and locks its folder before the build without importing pandas.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from ..util.processes import process_running
from .links import (
    FolderNotReplaceableError,
    _link_target,
    is_link,
    is_real_dir,
    refuse_links,
)
from .lock import FILES_LOCK, PARTIAL_SUFFIXES, OutputBusyError, OutputLock, output_lock
from .manifest import (  # noqa: F401
    KINDS,
    MANIFEST,
    ManifestError,
    _file_entry,
    _fsync_dir,
    _fsync_file,
    _fsync_tree,
    _sha256,
    manifest_kind,
    read_manifest,
)

__all__ = ["SOLUTION_FILE", "MANIFEST", "RESULTS_FILES", "VALIDATION_FILES", "read_manifest",
           "ManifestError", "output_lock", "OutputLock", "OutputBusyError",
           "check_output_dir", "check_results_folder", "PARTIAL_SUFFIXES",
           "remove_dead_temporaries"]

SOLUTION_FILE = "solution.npz"
"""The file of a results folder that holds the values of every variable of the solved model
(:func:`pyomo_lap.results.table.solution_arrays`), to start another solve of the same job from
(:func:`pyomo_lap.results.table.load_solution`, the job option ``warm_start_from``)."""

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

_TEMPORARY = re.compile(r"\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[^/]+")
"""The name of a temporary file or folder of the writer, ``.NAME.tmp-PID-*``
(:class:`pyomo_lap.folders.writer.ResultsWriter`): whose process id says which run wrote it."""


def _nested(manifest: dict) -> set:
    """The relative paths of the folders a manifest lists as having their own (``folders``)."""
    return set((manifest.get("folders") or {}))


def _under(rel: str, nested: set):
    """The folder of ``nested`` that the relative path ``rel`` is (or is inside), or None."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        head = "/".join(parts[:i])
        if head in nested:
            return head
    return None


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
    recorded SHA-256 (``pyomo-lap validate``'s files included, :data:`VALIDATION_FILES`), and
    the folders it lists with a manifest of their own (``folders``), each checked against its
    own. A non-empty folder without a manifest is never pyomo_lap's (a copy made with a plain
    ``cp`` skips the hidden manifest: its files may be edited). Links are never followed.
    ``hashes=False``: names only."""
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
    listed, nested = manifest["files"], _nested(manifest)
    dirs = {parent.as_posix() for rel in (*listed, *nested) for parent in Path(rel).parents}
    dirs -= {"."}
    for rel, kind in entries:
        if rel == MANIFEST or (kind == "file" and rel.startswith(MANIFEST + ".tmp-")):
            continue
        if _under(rel, nested) is not None:
            continue                                 # checked against its own manifest below
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
    for sub in sorted(nested):
        if not os.path.lexists(folder / sub):
            continue
        found = _foreign_entry(folder / sub, hashes=hashes)
        if found is not None:
            return (sub if found[0] is None else f"{sub}/{found[0]}"), found[1]
    return None


def _refuse_foreign(folder: Path, what: str, hashes: bool = True, kind: str = "results") -> None:
    """Raise :class:`FolderNotReplaceableError` naming ``folder`` and the first thing in it
    that pyomo_lap did not write (:func:`_foreign_entry`): a link (the folder itself or
    anything under it, :func:`refuse_links`), a folder without a usable manifest, a file of
    the user's, a changed file; or a folder of pyomo_lap's of another ``kind``
    (:data:`pyomo_lap.folders.manifest.KINDS`: a comparison does not replace results)."""
    todo = "remove the link (only the link: it is a name, not the folder) or choose another --out"
    if is_link(folder):
        refuse_links(folder, what, todo=todo)
    if os.path.lexists(folder) and not is_real_dir(folder):
        raise FolderNotReplaceableError(f"{what} is a file; choose another --out (nothing was "
                                        "touched)")
    has, by = manifest_kind(read_manifest(folder)) if is_real_dir(folder) else (None, None)
    if has is not None and has != kind:
        raise FolderNotReplaceableError(
            f"{what} is {KINDS[has]} (written by `pyomo-lap {by}`), not {KINDS[kind]}: "
            "choose another --out (nothing was touched)")
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


def _aside(target: Path) -> Path:
    """``.NAME.old-PID``, where the swap of :class:`pyomo_lap.folders.writer.ResultsWriter`
    moves the earlier ``target``: cleared of an earlier swap of this process; ``target`` and it
    never links (nothing is moved or deleted through one).

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        ``target`` became a link since it was checked, or ``.NAME.old-PID`` is a link or holds
        files that are not pyomo_lap's (nothing was touched).
    """
    refuse_links(target, f"{str(target)!r}", todo="remove the link (only the link)")
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if os.path.lexists(old):                # left by an earlier swap of this process
        _remove_results_folder(old)
    if os.path.lexists(old):
        why = "a symbolic link" if is_link(old) else "holding files pyomo_lap did not write"
        raise FolderNotReplaceableError(
            f"cannot move the earlier results of {target} aside: {old} is in the way ({why}); "
            "move it away and run again (nothing was touched)")
    return old


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
    for name in (out_dir.name, *(out_dir.name + t for t in PARTIAL_SUFFIXES)):
        remove_dead_temporaries(parent / name, echo)
    if links:
        one = len(links) == 1
        echo(f"left {', '.join(links)} in {parent} alone: "
             + ("a symbolic link, not a folder" if one else "symbolic links, not folders")
             + " pyomo_lap moved aside or was writing into (never followed); remove "
             + ("it" if one else "them") + " if it is not yours")


def remove_dead_temporaries(folder, echo=None) -> list:
    """Remove what runs that were killed (SIGKILL, power loss) left inside a folder of
    pyomo_lap's (one with a usable manifest; any other folder is not looked into): the
    temporary files and folders of the writer, ``.NAME.tmp-PID-*``, and the lock files
    ``.NAME.lock`` or ``.pyomo_lap.lock`` holding the process id, of processes that are no
    longer running. A link is never removed nor followed. Called with the folder's lock held.

    Parameters
    ----------
    folder : str or Path
    echo : callable, optional
        One line saying what was removed.

    Returns
    -------
    list of str
        The relative paths removed.
    """
    folder = Path(folder)
    if not is_real_dir(folder) or read_manifest(folder) is None:
        return []
    removed = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(root) / name
            pid = _dead_pid_of(p, name)
            if pid is None or is_link(p):
                continue
            if is_real_dir(p):
                shutil.rmtree(p, ignore_errors=True)     # links inside: removed, not followed
                dirs.remove(name)
            else:
                try:
                    p.unlink()
                except OSError:
                    continue
            if not os.path.lexists(p):
                removed.append(p.relative_to(folder).as_posix())
    if removed and echo is not None:
        echo(f"removed {', '.join(removed)} from {folder}: left by stopped pyomo-lap runs")
    return removed


def _dead_pid_of(path: Path, name: str):
    """The process id of a temporary name or lock file of the writer whose process is not
    running (:func:`remove_dead_temporaries`), else None."""
    m = _TEMPORARY.fullmatch(name)
    if m is not None:
        pid = int(m.group("pid"))
    elif name == FILES_LOCK or (name.startswith(".") and name.endswith(".lock")):
        try:
            if not _is_file(path) or os.lstat(path).st_size > 32:
                return None
            pid = int(path.read_text().strip())
        except (OSError, ValueError):
            return None
    else:
        return None
    return None if process_running(pid) else pid


def _is_file(path) -> bool:
    """Whether ``path`` is a file itself (not a link, nor a folder)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def check_output_dir(out_dir, echo=None, hold: list | None = None, kind: str = "results",
                     command: str = "solve") -> Path:
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
    kind : str
        The kind of folder that will be written (:data:`pyomo_lap.folders.manifest.KINDS`): a
        folder of pyomo_lap's of another kind is refused (a comparison never replaces results).
    command : str
        The command that writes (what a refusal of the lock says to do).

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
        _refuse_foreign(folder, what[folder], hashes=False, kind=kind)
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
    lock = output_lock(out_dir, command).acquire()
    try:
        if lock.taken_now:           # held already: recovered when it was taken
            _recover(out_dir, echo)
        for folder in what:
            _refuse_foreign(folder, what[folder], kind=kind)
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
    last by :func:`pyomo_lap.results.table.write_results`) of kind ``results`` and every file
    of the export it lists (those of the command that wrote the folder: ``solve``,
    ``export``, ``stint`` ...). ``pyomo-lap plot``, ``compare``, ``validate``, ``report`` and
    ``export`` take nothing else (an unfinished export, a folder of an earlier pyomo_lap, a
    folder made by hand, a comparison or a stint).

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
    kind, by = manifest_kind(manifest)
    if kind != "results":
        raise ValueError(f"{folder} is not a results folder of `pyomo-lap solve`: it is "
                         f"{KINDS[kind]} (written by `pyomo-lap {by}`)")
    missing = [rel for rel, e in manifest["files"].items()
               if (e.get("by", "solve") if isinstance(e, dict) else "solve") == by
               and not (folder / rel).is_file()]
    if missing:
        raise ValueError(f"{folder} is not a complete results folder of `pyomo-lap solve`: "
                         f"{missing[0]}, listed in its {MANIFEST}, is missing; solve again")
    return folder
