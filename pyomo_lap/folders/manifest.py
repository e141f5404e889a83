"""The manifest of a folder pyomo_lap writes (:data:`MANIFEST`): what it wrote there, each file
with its SHA-256 and the command that wrote it, and what kind of folder it is; and the flushes
to the disk every file and folder gets before it counts as written.

Read by the checks before a folder is replaced or read (:mod:`pyomo_lap.folders.results_folder`)
and written only by the writer (:mod:`pyomo_lap.folders.writer`).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .. import __version__
from .json_file import FolderJSONError, parse_json
from .links import _link_target, is_link

__all__ = ["MANIFEST", "FORMAT", "KINDS", "ManifestError", "read_manifest", "manifest_kind",
           "new_manifest"]

MANIFEST = ".pyomo_lap_manifest.json"
"""The file of a folder pyomo_lap wrote that lists what it wrote there (JSON):

``format``
    2 (1: the manifests before issue 45, without ``kind``, ``by`` and ``folders``: read as
    ``kind = "results"``, ``by = "solve"``);
``pyomo_lap_version``, ``created_utc``
    Who wrote the folder, and when;
``kind``
    What the folder is (:data:`KINDS`);
``by``
    The command that wrote the folder (``"solve"``, ``"export"``, ``"compare"``, ``"stint"``,
    ``"sweep"``; ``"plot"``, ``"report"``, ``"diagnose"`` ... for a folder of kind ``files``);
``files``
    ``relative path -> {"sha256", "size", "by"}``: every file pyomo_lap wrote there and the
    command that wrote it (``"solve"`` for the files of
    :func:`pyomo_lap.results.table.write_results`, ``"plot"`` for the figures of
    :func:`pyomo_lap.plots.figures.plot_results`, ``"validate"``, ``"report"``, ``"export"``
    ...);
``folders`` (optional)
    ``relative path -> {"kind", "by"}``: folders inside it that have a manifest of their own
    (a stint's ``lap_01``, ``RUN/export_every_5m``), checked against it.

It is written last: a folder without it is not a finished one. Whatever pyomo_lap writes into
the folder later is added to it (:class:`pyomo_lap.folders.writer.ResultsWriter`); a file it
does not list, or whose SHA-256 no longer matches, is never replaced."""

FORMAT = 2
"""The manifest's ``format`` this version writes (:data:`MANIFEST`)."""

KINDS = {
    "results": "a results folder of `pyomo-lap solve` or `export` (summary.json, trajectory.*, "
               "results.xlsx ...)",
    "compare": "a comparison of `pyomo-lap compare`",
    "stint": "a stint of `pyomo-lap stint` (stint.csv, lap_NN/ ...)",
    "sweep": "a sweep folder of `pyomo-lap sweep`",
    "files": "a folder of yours into which pyomo_lap wrote single files (a report, figures, "
             "diagnose's report): only those are listed",
}
"""The kinds of folder pyomo_lap writes (the manifest's ``kind``) and what they are. A folder
is replaced only by a command that writes a folder of its kind; files are added to any kind
but ``files`` only by the command's own rules (:class:`pyomo_lap.folders.writer.ResultsWriter`)."""


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


def _sha256(path) -> str:
    """The SHA-256 of a file (hex), read in chunks of 1 MiB."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _file_entry(path: Path, by: str) -> dict:
    """The manifest's entry of a file: ``{"sha256", "size", "by"}``."""
    return {"sha256": _sha256(path), "size": os.lstat(path).st_size, "by": by}


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
        manifest = parse_json(data, path, "a manifest of pyomo_lap (a JSON object)")
    except FolderJSONError as exc:
        return None, exc.problem
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return None, "is not a manifest of pyomo_lap (no table 'files')"
    if not isinstance(manifest.get("folders", {}), dict):
        return None, "is not a manifest of pyomo_lap (its 'folders' is not a table)"
    if manifest.get("kind", "results") not in KINDS:
        return None, f"names a kind of folder this version does not know ({manifest['kind']!r})"
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


def manifest_kind(manifest: dict | None):
    """``(kind, by)`` of a manifest (:data:`MANIFEST`; a manifest of format 1 is a results
    folder of ``solve``), or ``(None, None)`` for no manifest."""
    if manifest is None:
        return None, None
    return manifest.get("kind", "results"), manifest.get("by", "solve")


def new_manifest(kind: str, by: str) -> dict:
    """An empty manifest of a folder of ``kind`` (:data:`KINDS`) written by the command ``by``."""
    if kind not in KINDS:
        raise ValueError(f"kind = {kind!r}: expected one of {sorted(KINDS)}")
    return {"format": FORMAT, "pyomo_lap_version": __version__, "kind": kind, "by": by,
            "files": {}, "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


# ---- flushes to the disk ----------------------------------------------------------------------

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
    """Flush a file's contents to the disk (a link is not followed).

    Raises
    ------
    OSError
        The file cannot be flushed (the disk is full or failed: ``ENOSPC``, ``EIO``).
    """
    flags = (os.O_RDWR if os.name == "nt" else os.O_RDONLY) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(folder) -> None:
    """Flush every folder under ``folder``, ``folder`` last, to the disk (the files were
    flushed as they were written); links are neither followed nor flushed."""
    for root, _dirs, _files in os.walk(folder, topdown=False, followlinks=False):
        _fsync_dir(root)


def _manifest_file(folder: Path, manifest: dict, final: bool = False) -> Path:
    """Write the manifest of ``folder`` and flush it to the disk: to a new temporary file of a
    unique name (``.pyomo_lap_manifest.json.tmp-PID-*``, created exclusively: a link in its
    place is never followed), for the caller to rename onto :data:`MANIFEST`; ``final`` (a
    folder written aside, not yet in place): straight to its name, created exclusively.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    OSError
        It cannot be written (a full disk); nothing of it is left.
    """
    data = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
    if final:
        path = folder / MANIFEST
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o644)
    else:
        fd, name = tempfile.mkstemp(prefix=f"{MANIFEST}.tmp-{os.getpid()}-", dir=folder)
        path = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(path, 0o644)
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    return path
