"""One writer for every folder pyomo_lap writes: :class:`ResultsWriter`.

Every command that writes files (``solve``, ``export``, ``compare``, ``stint``, ``sweep``,
``validate``, ``plot``, ``report``, ``diagnose --report``) writes them through it, in one of
two modes:

replace (:meth:`ResultsWriter.replacing`)
    A whole folder written aside, in ``.NAME.tmp-PID-*`` next to it (a new folder of a unique
    name), its manifest last, every file and folder flushed to the disk, then swapped in by
    two renames (the earlier folder to ``.NAME.old-PID``, the new one to ``NAME``) and the
    earlier one removed: ``solve``, ``export``, ``compare``, ``stint`` (with its ``lap_NN``
    folders, :meth:`ResultsWriter.nested`). The folder may be replaced only when missing,
    empty, or holding nothing but what its manifest lists, unchanged, of the same kind
    (:func:`pyomo_lap.folders.results_folder.check_output_dir`).
add (:meth:`ResultsWriter.adding`)
    Files added to a folder under its lock, each written to a temporary file of a unique name
    next to it (``.NAME.tmp-PID-*``, created exclusively), then all renamed onto their names
    at :meth:`ResultsWriter.commit` and recorded in the folder's manifest with their SHA-256
    and the command: ``validate``, ``plot``, ``report`` into a results folder, ``export`` into
    ``RUN/export_every_STEPm``, a sweep's table and figures. A file goes into the nearest
    folder of pyomo_lap's it is in (a results folder, a comparison, a stint, a sweep); outside
    any, into a folder of kind ``files`` (its own manifest listing only pyomo_lap's files, its
    lock ``.pyomo_lap.lock`` inside: the home folder, where ``report --out`` may go).

Both modes alike:

* links are refused and never followed: the folder itself, the ``--out`` given, every file and
  folder it would write or replace, and every folder under a folder of pyomo_lap's
  (:func:`pyomo_lap.folders.links.refuse_links`); the temporary names are unique
  (:func:`tempfile.mkstemp`, :func:`tempfile.mkdtemp`: ``O_EXCL | O_NOFOLLOW``, so a link
  planted at one is passed by, never written through);
* a file the manifest does not list, or whose SHA-256 no longer matches (edited since), is
  never replaced: refused with one line naming it, what was found and what to do, when the
  writer is claimed (:meth:`ResultsWriter.claim`), before any work;
* one lock per folder (:class:`pyomo_lap.folders.lock.OutputLock`) from the claim to the end;
* on an error, a full disk (:class:`FolderWriteError`), Ctrl-C or SIGTERM: what was being
  written is removed (no ``.NAME.tmp-*``, no ``.NAME.lock`` left), the earlier files are as
  they were; SIGINT and SIGTERM arriving during the renames of a commit are held until they
  are done (:func:`_signals_held`).

A sweep's workers write their rows with :meth:`ResultsWriter.write_file` (whole, renamed,
never through a link), the sweep holding the folder's lock.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import tempfile
import threading
from pathlib import Path

from .links import (
    FolderNotReplaceableError,
    _link_target,
    is_link,
    is_real_dir,
    refuse_links,
)
from .lock import output_lock
from .manifest import (
    KINDS,
    MANIFEST,
    ManifestError,
    _file_entry,
    _fsync_dir,
    _fsync_file,
    _fsync_tree,
    _manifest_file,
    _sha256,
    manifest_kind,
    new_manifest,
    read_manifest,
)
from .results_folder import (
    _aside,
    _foreign_entry,
    _remove_results_folder,
    check_output_dir,
    remove_dead_temporaries,
)

__all__ = ["ResultsWriter", "FolderWriteError", "COMMITTED", "DISK_FULL", "FORMULA_STARTS",
           "csv_safe"]

COMMITTED: list = []
"""The folders this process wrote (each :meth:`ResultsWriter.commit`, in order): the command
line says, when a run is interrupted, whether anything had been written."""

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a full disk or quota: a :class:`FolderWriteError` says to free some space."""


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a CSV cell as a formula (CSV
injection): :func:`csv_safe` writes such text cells with a leading ``'``."""


def csv_safe(frame):
    """``frame`` (a DataFrame) with every text cell starting with one of
    :data:`FORMULA_STARTS` prefixed with ``'`` (a corner named ``=HYPERLINK(...)`` stays
    text in a spreadsheet); numbers, and texts that are numbers (``-1.5``) or a lone ``-``,
    as they are. The one rule of every CSV file written (:meth:`ResultsWriter.write_csv`);
    the workbooks write no formulas at all (xlsxwriter's ``strings_to_formulas`` off)."""
    def safe(v):
        if not isinstance(v, str) or not v.startswith(FORMULA_STARTS) or v == "-":
            return v
        try:
            float(v)
            return v
        except ValueError:
            return "'" + v
    text = [c for c in frame.columns if frame[c].dtype.kind not in "biufcmMb"]
    if not text:
        return frame
    out = frame.copy()
    for c in text:
        out[c] = out[c].map(safe)
    return out


class FolderWriteError(OSError):
    """A file could not be written (a full disk, a folder removed or made read-only ...): what
    was being written was removed, the earlier files are as they were. ``str()`` is one line
    naming the file, the reason and what to do; ``errno`` is the system's."""

    def __init__(self, message: str, code=None):
        super().__init__(code, message)
        self.message = message

    def __str__(self) -> str:
        """The one line (no ``[Errno N]``)."""
        return self.message


def _os_error_in(exc: BaseException):
    """The OSError ``exc`` is, or was raised from (a library's own error wrapping a full
    disk: xlsxwriter's ``FileCreateError``), or None."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM while the renames of a commit run (in the main thread, where
    Python runs its handlers): a signal arriving meanwhile is delivered again once they are
    done, so a commit is never cut between its renames and its manifest."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got, kept = [], {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler is None:                 # set outside Python: left alone
            continue
        kept[sig] = handler
        signal.signal(sig, lambda s, _f: got.append(s))
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)
        if got:
            signal.raise_signal(got[0])


def _plain_mode(path) -> None:
    """The permissions of an ordinary new file (``0666`` less the umask; ``mkstemp``: 0600)."""
    umask = os.umask(0o22)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


class ResultsWriter:
    """The one writer of every folder pyomo_lap writes (module docstring): made by
    :meth:`replacing` (a whole folder) or :meth:`adding` (files added to a folder), claimed
    before any work (:meth:`claim`: the checks and the lock), filled by :meth:`write`,
    finished by :meth:`commit`. As a context manager: claimed on entering; on leaving,
    committed (no exception) or aborted (:meth:`abort`: nothing left behind), and released.

    Attributes
    ----------
    folder : Path
        The folder written (its final name; in add mode, the folder given).
    by : str
        The command (``"solve"``, ``"plot"`` ...), recorded in the manifest for each file.
    kind : str
        The kind of the folder (:data:`pyomo_lap.folders.manifest.KINDS`).
    mode : str
        ``"replace"``, ``"add"`` or ``"nested"`` (a folder inside one written aside).
    written : list of Path
        The files written so far (final names), in order.
    """

    def __init__(self, folder, by: str, mode: str, kind: str = "results", names=(), echo=None,
                 partial: str = "", parent=None):
        """Use :meth:`replacing`, :meth:`adding` or :meth:`nested`."""
        if mode not in ("replace", "add", "nested"):
            raise ValueError(f"mode = {mode!r}: expected 'replace', 'add' or 'nested'")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind = {kind!r}: expected one of {sorted(KINDS)}")
        self.by, self.mode, self.kind = str(by), mode, kind
        self.echo = echo or (lambda *_: None)
        self._given = Path(folder).expanduser()
        self.folder = Path(os.path.abspath(self._given))
        self._partial, self._parent = partial, parent
        self._names = [self._rel(n) for n in names]
        self._held, self._staged, self._files, self._folders = [], {}, {}, {}
        self._stage = self._home = self._manifest = self._outer_rel = None
        self._checked = set()
        self._claimed = self._done = False
        self.written = []

    # ---- the two modes ----------------------------------------------------------------------

    @classmethod
    def replacing(cls, out_dir, by: str, kind: str = "results", partial: str = "",
                  echo=None) -> "ResultsWriter":
        """A writer of a whole folder (replace mode), not yet claimed.

        Parameters
        ----------
        out_dir : str or Path
            The folder (``--out``).
        by : str
            The command that writes it.
        kind : str
            What it is (:data:`pyomo_lap.folders.manifest.KINDS`): an existing folder of
            pyomo_lap's of another kind is refused.
        partial : str
            ``""``, or ``".failed"`` / ``".interrupted"``: the folder written is
            ``out_dir + partial`` (a failed or interrupted solve), checked with ``out_dir``.
        echo : callable, optional
            What the clean-up after stopped runs did (one line each).
        """
        return cls(out_dir, by, "replace", kind=kind, echo=echo, partial=partial)

    @classmethod
    def adding(cls, folder, by: str, names=(), kind=None, echo=None) -> "ResultsWriter":
        """A writer adding files to a folder (add mode), not yet claimed.

        Parameters
        ----------
        folder : str or Path
            Where the files go. They are recorded in the manifest of the nearest folder of
            pyomo_lap's that holds them (``folder`` or one above it, by name: links are not
            followed) or, outside any, in that of ``folder`` (kind ``files``, made if
            missing).
        by : str
            The command.
        names : sequence of str
            The files (or folders, :meth:`nested`) it will write, relative to ``folder``:
            each checked when claimed (missing, or pyomo_lap's and unchanged).
        kind : str, optional
            ``folder`` must be a folder of this kind, or missing or empty (then made, with a
            manifest of this kind): a sweep's folder.
        echo : callable, optional
        """
        return cls(folder, by, "add", kind=kind, names=names, echo=echo)

    def nested(self, rel: str, kind: str = "results") -> "ResultsWriter":
        """A folder of its own inside this one, with its own manifest (a stint's ``lap_01``,
        ``RUN/export_every_5m``), listed in this folder's manifest (``folders``) when it is
        committed; its files are recorded as written by this writer's command.

        Returns
        -------
        ResultsWriter
            Replace mode here: written straight into this folder's temporary folder (no lock
            of its own). Add mode: a replace-mode writer of ``folder/rel`` (``rel`` among the
            names checked when this one was claimed).
        """
        rel = self._rel(rel)
        self._require_claimed()
        if self.mode == "add":
            inner = ResultsWriter(self._home / self._home_rel(rel), self.by, "replace", kind=kind,
                                  echo=self.echo, parent=self)
            inner._outer_rel = self._home_rel(rel)
            return inner
        if self.mode == "nested":
            raise ValueError("a folder inside a nested folder is not written by pyomo_lap")
        inner = ResultsWriter(self.folder / rel, self.by, "nested", kind=kind, echo=self.echo,
                              parent=self)
        inner._stage = self._stage / rel
        if os.path.lexists(inner._stage):
            raise ValueError(f"{self.folder / rel} is written twice")
        inner._stage.mkdir(parents=True)
        inner._claimed = True
        return inner

    # ---- claim, write, commit -------------------------------------------------------------

    def claim(self) -> "ResultsWriter":
        """Check that the files can be written and take the folder's lock, before any work
        (a second call does nothing); returns self.

        Raises
        ------
        FolderNotReplaceableError (a ValueError)
            A link (the folder, ``--out``, a file or folder it would write), a file of the
            user's or one edited since pyomo_lap wrote it, a folder of another kind, a folder
            without a usable manifest that is not empty: one line naming it and what to do
            (nothing was touched).
        OutputBusyError (a ValueError)
            Another run holds the lock.
        ValueError, OSError
            The folder cannot be made (a file in the way, no permission: named).
        """
        if self._claimed:
            return self
        try:
            if self.mode == "replace":
                self._claim_replace()
            else:
                self._claim_add()
        except BaseException:
            self.release()
            raise
        self._claimed = True
        return self

    def write(self, rel: str, fill) -> Path:
        """Write the file ``rel`` (relative to :attr:`folder`) whole: ``fill(path)`` writes it
        to ``path`` (a str: a temporary file of the writer, with the file's suffix), then it
        is flushed to the disk and kept for :meth:`commit` (:meth:`writing`).

        Returns
        -------
        Path
            The file's final name.

        Raises
        ------
        FolderWriteError (an OSError)
            It could not be written (a full disk: ``errno`` ENOSPC): one line; nothing of it
            is left once the writer is aborted (leaving the ``with`` block does it).
        FolderNotReplaceableError (a ValueError)
            (add mode) a name not checked when claimed that is a link or the user's file.
        """
        with self.writing(rel) as path:
            fill(path)
        return self.written[-1]

    @contextlib.contextmanager
    def writing(self, rel: str):
        """Context: yields the path (a str) to write the file ``rel`` to, over several steps
        (``plots.pdf``, a page per figure); on leaving, the file is flushed to the disk and
        kept for :meth:`commit`, its final name appended to :attr:`written`. An error of the
        disk inside (or a library's error caused by one) becomes :class:`FolderWriteError`."""
        rel = self._rel(rel)
        self._require_claimed()
        final = self.folder / rel
        try:
            tmp = self._temporary(rel)
            yield str(tmp)
            if not stat.S_ISREG(os.lstat(tmp).st_mode):
                raise OSError(errno.EINVAL, "it was not written as a file")
            _fsync_file(tmp)
        except (FolderWriteError, FolderNotReplaceableError):
            raise
        except Exception as exc:            # noqa: BLE001 - a library's error of the disk
            failure = _os_error_in(exc)
            if failure is None:
                raise
            raise self._failed(final, failure) from None
        if self.mode != "add":
            self._files[rel] = _file_entry(tmp, self.by)
        self.written.append(final)

    def write_bytes(self, rel: str, data: bytes) -> Path:
        """Write the file ``rel`` with ``data`` (:meth:`write`)."""
        def fill(path):
            with open(path, "wb") as fh:
                fh.write(data)
        return self.write(rel, fill)

    def write_text(self, rel: str, text: str) -> Path:
        """Write the file ``rel`` with ``text`` in UTF-8 (:meth:`write`)."""
        return self.write_bytes(rel, text.encode("utf-8"))

    def write_csv(self, rel: str, frame, **options) -> Path:
        """Write the DataFrame ``frame`` as the CSV file ``rel`` (``frame.to_csv(path,
        index=False, **options)``, :meth:`write`), its text cells that a spreadsheet would
        take for a formula neutralized (:func:`csv_safe`)."""
        safe = csv_safe(frame)
        return self.write(rel, lambda path: safe.to_csv(path, index=False, **options))

    def commit(self) -> Path:
        """Put what was written in place, its manifest written (replace mode: last, then the
        swap; add mode: the files renamed onto their names and the manifest with them) and
        flushed to the disk. Add mode: the writer stays claimed, to write and commit again
        (a sweep); replace mode: once. Returns :attr:`folder`.

        Raises
        ------
        FolderWriteError (an OSError)
            The manifest could not be written (a full disk): nothing was put in place.
        """
        self._require_claimed()
        if self.mode == "add":
            self._commit_add()
            return self.folder
        if self._done:
            return self.folder
        try:
            if self.mode == "nested":
                self._commit_nested()
            else:
                self._commit_replace()
        except (FolderWriteError, FolderNotReplaceableError, KeyboardInterrupt):
            raise
        except OSError as exc:
            raise self._failed(self.folder, exc) from None
        self._done = True
        return self.folder

    def abort(self) -> None:
        """Remove what was written and not committed (the temporary files and folder); the
        earlier files are untouched. Safe to call at any time, and again."""
        with _signals_held():
            for tmp in self._staged.values():
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            self._staged.clear()
            if self.mode == "replace" and self._stage is not None and not self._done:
                shutil.rmtree(self._stage, ignore_errors=True)
                self._stage = None

    def release(self) -> None:
        """Give the lock back (the last release removes the lock file)."""
        while self._held:
            self._held.pop().release()

    def __enter__(self) -> "ResultsWriter":
        """Claim the writer (:meth:`claim`)."""
        return self.claim()

    def __exit__(self, exc_type, exc, tb) -> None:
        """Commit (no exception) or abort, then release the lock."""
        try:
            if exc_type is None:
                self.commit()
            else:
                self.abort()
        except BaseException:
            self.abort()
            raise
        finally:
            self.release()

    @staticmethod
    def write_file(path, fill) -> Path:
        """Write one file whole by a process that does not hold its folder's lock (a sweep's
        worker writing its row while the sweep holds the folder): ``fill(tmp)`` writes a
        temporary file of a unique name next to it (created exclusively), flushed, renamed onto
        ``path``; a link at ``path`` or in its place is refused, never followed; on an error
        the temporary file is removed.

        Raises
        ------
        FolderNotReplaceableError (a ValueError)
            ``path`` or its folder is a link.
        FolderWriteError (an OSError)
            It could not be written.
        """
        path = Path(path)
        for p in (path.parent, path):
            if is_link(p):
                raise FolderNotReplaceableError(
                    f"{p} is a symbolic link (to {_link_target(p)}); pyomo_lap never follows a "
                    "link out of a folder it writes: remove the link (nothing was touched)")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-{os.getpid()}-", dir=path.parent)
        os.close(fd)
        try:
            fill(tmp)
            _fsync_file(tmp)
            _plain_mode(tmp)
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            failure = _os_error_in(exc) if isinstance(exc, Exception) else None
            if failure is not None and not isinstance(failure, FolderWriteError):
                raise FolderWriteError(f"cannot write {path}: {failure.strerror or failure}",
                                       failure.errno) from None
            raise
        _fsync_dir(path.parent)
        return path

    # ---- replace mode ------------------------------------------------------------------

    def _claim_replace(self) -> None:
        base = check_output_dir(self._given, echo=self.echo, hold=self._held, kind=self.kind,
                                command=self.by)
        self.folder = base.with_name(base.name + self._partial)
        self._stage = Path(tempfile.mkdtemp(prefix=f".{self.folder.name}.tmp-{os.getpid()}-",
                                            dir=self.folder.parent))
        os.chmod(self._stage, 0o755)

    def _manifest_of_stage(self) -> dict:
        manifest = new_manifest(self.kind, self.by)
        manifest["files"] = dict(self._files)
        if self._folders:
            manifest["folders"] = dict(self._folders)
        return manifest

    def _commit_nested(self) -> None:
        _manifest_file(self._stage, self._manifest_of_stage(), final=True)
        _fsync_dir(self._stage)
        rel = self._stage.relative_to(self._parent._stage).as_posix()
        self._parent._folders[rel] = {"kind": self.kind, "by": self.by}

    def _commit_replace(self) -> None:
        """The manifest last, every folder flushed, then the swap (the earlier folder moved
        aside, the new one moved in, the earlier one removed); a failure between the two
        renames puts the earlier folder back."""
        if self._stage is None:
            raise ValueError(f"the writer of {self.folder} was aborted")
        _manifest_file(self._stage, self._manifest_of_stage(), final=True)
        _fsync_tree(self._stage)        # every folder on the disk before the swap (files: written)
        target, parent = self.folder, self.folder.parent
        with _signals_held():
            old = _aside(target)
            try:
                if os.path.lexists(target):
                    os.replace(target, old)
                os.replace(self._stage, target)
            except BaseException:       # an error between the two moves
                if os.path.lexists(old) and not os.path.lexists(target):
                    os.replace(old, target)   # put the earlier folder back
                raise
            finally:
                _fsync_dir(parent)      # the renames on the disk
            self._stage = None
            COMMITTED.append(target)
            outer = self._parent
            if outer is not None and outer.mode == "add":
                outer._folders[self._outer_rel] = {"kind": self.kind, "by": self.by}
        if os.path.lexists(old) and not _remove_results_folder(old):
            self.echo(f"kept {old}: the earlier files of {target.name}, since it now holds "
                      "something pyomo_lap did not write; move out what you need and remove it")

    # ---- add mode ----------------------------------------------------------------------

    def _claim_add(self) -> None:
        home, kind = self._find_home()
        if is_link(self._given) and (kind == "files" or self.kind is not None):
            refuse_links(self._given, f"{str(self._given)!r}",     # (in a folder of pyomo_lap's:
                         todo="remove the link (only the link)")   # said with the folder's links)
        _make_folder(home if kind == "files" else home.parent)
        lock = output_lock(home, self.by, inside=kind == "files").acquire()
        self._held.append(lock)
        try:
            manifest = read_manifest(home, strict=True) if is_real_dir(home) else None
        except ManifestError as exc:
            raise FolderNotReplaceableError(
                f"{home} cannot take pyomo_lap's files: its {MANIFEST} {exc.problem}; move it "
                "away (or the folder) and run again (nothing was touched)") from None
        has, by = manifest_kind(manifest)
        if self.kind is not None and has not in (None, self.kind):
            raise FolderNotReplaceableError(
                f"{home} is {KINDS[has]} (written by `pyomo-lap {by}`), not {KINDS[self.kind]}: "
                "choose another --out (nothing was touched)")
        if manifest is None:
            self._refuse_without_manifest(home, kind)
            manifest = new_manifest(kind, self.by)
        elif kind != "files":
            what = "results folder" if kind == "results" else f"{kind} folder"
            refuse_links(home, f"{what} {str(home)!r}")
            remove_dead_temporaries(home, self.echo)
        self._home, self._manifest = home, manifest
        for rel in self._names:
            self._check_name(self._home_rel(rel))
            self._checked.add(self._home_rel(rel))
        if self.kind is not None:
            _make_folder(home)

    def _find_home(self):
        """``(home, kind)``: the folder whose manifest records the files (module docstring)."""
        if self.kind is not None:
            return self.folder, self.kind
        for folder in (self.folder, *self.folder.parents):
            if is_link(folder) and os.path.lexists(folder / MANIFEST):
                self._refuse_link(folder)           # a folder of pyomo_lap's given as a link
            if is_real_dir(folder) and os.path.lexists(folder / MANIFEST):
                kind, _ = manifest_kind(read_manifest(folder))
                if kind != "files":
                    return folder, kind or "results"
        return self.folder, "files"

    def _refuse_without_manifest(self, home: Path, kind: str) -> None:
        """A folder without a manifest takes the files of a kind ``files`` writer (only its
        own names are checked), or a folder of its kind when empty; refused otherwise."""
        if kind == "files" or not is_real_dir(home):
            return
        with os.scandir(home) as it:
            if next(it, None) is None:
                return
        raise FolderNotReplaceableError(
            f"{home} is not {KINDS[kind]}: it holds files and has no {MANIFEST}, the list of "
            "what pyomo_lap wrote there; choose another --out (nothing was touched)")

    def _home_rel(self, rel: str) -> str:
        """``rel`` (relative to :attr:`folder`) relative to the folder of the manifest."""
        return Path(os.path.relpath(self.folder / rel, self._home)).as_posix()

    def _check_name(self, rel: str) -> None:
        """Refuse (one line) to write ``home/rel`` where a link is on the way, or where it is
        a file or folder the manifest does not list, or one changed since it was written."""
        home, target = self._home, self._home / rel
        where = home
        for part in Path(rel).parts[:-1]:
            where = where / part
            if is_link(where):
                self._refuse_link(where)
            if os.path.lexists(where) and not is_real_dir(where):
                raise FolderNotReplaceableError(
                    f"{where} is a file, and `pyomo-lap {self.by}` writes into a folder of that "
                    "name: move or rename it, then run again (nothing was touched)")
        if not os.path.lexists(target):
            return
        if is_link(target):
            self._refuse_link(target)
        listed = self._manifest["files"]
        if is_real_dir(target):
            own = rel in (self._manifest.get("folders") or {}) or read_manifest(target) is not None
            found = _foreign_entry(target) if own else self._unlisted_under(rel)
            if found is None:
                return
            rel_found, note = found
            why = (note if rel_found is None else f"holds {rel_found!r}, {note}" if note
                   else f"holds {rel_found!r}, which pyomo_lap did not write")
        else:
            entry = listed.get(rel)
            if (isinstance(entry, dict) and os.lstat(target).st_size == entry.get("size")
                    and _sha256(target) == entry.get("sha256")):
                return
            why = (f"was changed since `pyomo-lap {entry.get('by', 'solve')}` wrote it"
                   if isinstance(entry, dict) else
                   f"is not a file pyomo_lap wrote (its folder's {MANIFEST} does not list it)")
        raise FolderNotReplaceableError(
            f"{target} {why}, and `pyomo-lap {self.by}` writes a file of that name: move or "
            "rename it, then run again (nothing was touched)")

    def _unlisted_under(self, rel: str):
        """A folder written before its manifest listed folders (every file of it listed in
        this manifest, ``rel/...``): the first file not listed or changed, else None."""
        listed = self._manifest["files"]
        for root, dirs, files in os.walk(self._home / rel, followlinks=False):
            for name in sorted(dirs + files):
                p = Path(root) / name
                sub = p.relative_to(self._home).as_posix()
                if is_link(p):
                    return sub, "a symbolic link"
                if is_real_dir(p):
                    continue
                entry = listed.get(sub)
                if not isinstance(entry, dict) or _sha256(p) != entry.get("sha256"):
                    return sub, None
        return None

    def _refuse_link(self, path: Path) -> None:
        raise FolderNotReplaceableError(
            f"{path} is a symbolic link (to {_link_target(path)}), and `pyomo-lap {self.by}` "
            "writes there; pyomo_lap never follows a link out of a folder it writes: remove the "
            "link (only the link) or choose another place (nothing was touched)")

    def _commit_add(self) -> None:
        """The staged files renamed onto their names and the manifest with them (written to a
        temporary file first: a full disk stops the commit before anything is renamed)."""
        if not self._staged and not self._folders:
            return
        home = self._home
        on_disk = read_manifest(home) if is_real_dir(home) else None
        manifest = on_disk if on_disk is not None else self._manifest
        for rel in self._folders:
            for listed in [k for k in manifest["files"] if k.startswith(rel + "/")]:
                del manifest["files"][listed]
        if self._folders:
            manifest.setdefault("folders", {}).update(self._folders)
        for rel, tmp in self._staged.items():
            manifest["files"][rel] = _file_entry(tmp, self.by)
        _make_folder(home)
        try:
            tmp_manifest = _manifest_file(home, manifest)
        except OSError as exc:
            raise self._failed(home / MANIFEST, exc) from None
        with _signals_held():
            for rel, tmp in self._staged.items():
                _plain_mode(tmp)
                os.replace(tmp, home / rel)
            os.replace(tmp_manifest, home / MANIFEST)
            for folder in {(home / rel).parent for rel in self._staged} | {home}:
                _fsync_dir(folder)
            self._staged.clear()
            self._folders.clear()
            self._manifest = manifest
            COMMITTED.append(home)

    # ---- helpers ----------------------------------------------------------------------

    def _rel(self, rel) -> str:
        """A relative path of a file to write (posix), refused when it leaves the folder or
        is the manifest."""
        p = Path(rel)
        if p.is_absolute():
            p = Path(os.path.relpath(os.path.abspath(p), self.folder))
        if not p.parts or ".." in p.parts or p.name == MANIFEST:
            raise ValueError(f"{rel}: not a file pyomo_lap writes into {self.folder}")
        return p.as_posix()

    def _require_claimed(self) -> None:
        if not self._claimed:
            raise RuntimeError(f"the writer of {self.folder} is used before it is claimed")

    def _temporary(self, rel: str) -> Path:
        """Where ``rel`` is written: in a folder written aside, its own name there (the
        folder is new and the writer's); in add mode, a new temporary file next to it."""
        if self.mode != "add":
            path = self._stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path):
                raise ValueError(f"{self.folder / rel} is written twice")
            return path
        hrel = self._home_rel(rel)
        if hrel not in self._checked:               # a name not checked when claimed
            self._check_name(hrel)
            self._checked.add(hrel)
        target = self._home / hrel
        where = self._home
        for part in Path(hrel).parts[:-1]:
            where = where / part
            if is_link(where):
                self._refuse_link(where)
            if not os.path.lexists(where):
                where.mkdir()
        old = self._staged.pop(hrel, None)
        if old is not None:
            with contextlib.suppress(OSError):
                os.unlink(old)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-{os.getpid()}-",
                                   suffix=target.suffix, dir=target.parent)
        os.close(fd)
        self._staged[hrel] = tmp
        return Path(tmp)

    def _failed(self, path: Path, exc: OSError) -> FolderWriteError:
        """The one line of a file that could not be written (what to do)."""
        reason = exc.strerror or str(exc)
        where = self._home if self.mode == "add" else self.folder
        hint = ("free some space (or choose another --out) and run again"
                if exc.errno in DISK_FULL else "check the folder and run again")
        return FolderWriteError(f"cannot write {path}: {reason}; {where} was left as it was and "
                                f"nothing was left behind: {hint}", exc.errno)


def _make_folder(folder: Path) -> None:
    """Make ``folder`` (and the folders above it); a link in its place is refused."""
    if is_link(folder):
        refuse_links(folder, f"{str(folder)!r}", todo="remove the link (only the link)")
    if os.path.lexists(folder) and not is_real_dir(folder):
        raise FolderNotReplaceableError(f"{folder} is a file, not a folder: choose another "
                                        "place (nothing was touched)")
    folder.mkdir(parents=True, exist_ok=True)
