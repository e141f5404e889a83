"""The lock on a folder pyomo_lap writes (:class:`OutputLock`): one run at a time writes into a
results folder ``NAME`` (and ``NAME.failed``, ``NAME.interrupted``), by an OS file lock on
``.NAME.lock`` next to it; the lock of a folder of kind ``files`` (a folder of the user's that
pyomo_lap only adds files to) is ``.pyomo_lap.lock`` inside it.
"""
from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from filelock import FileLock, Timeout

from .links import FolderNotReplaceableError, _link_target, is_link

__all__ = ["OutputLock", "OutputBusyError", "output_lock", "PARTIAL_SUFFIXES", "FILES_LOCK"]


class OutputBusyError(ValueError):
    """Another pyomo-lap run holds the lock on the output folder (nothing was touched)."""


_OUT_COMMANDS = ("solve", "compare", "stint", "sweep")
"""The commands whose lock is on the folder they write (``--out``): a refusal says to wait or
choose another ``--out``; the others write into a folder that is given (to wait)."""

FILES_LOCK = ".pyomo_lap.lock"
"""The lock file inside a folder of kind ``files`` (:data:`pyomo_lap.folders.manifest.KINDS`:
a folder of the user's, whose parent may not be writable: the home folder)."""


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
    inside : bool
        The lock file is :data:`FILES_LOCK` inside ``folder`` (a folder of kind ``files``),
        not ``.NAME.lock`` next to it.
    """

    def __init__(self, folder, command: str = "solve", inside: bool = False):
        self.folder = Path(folder).expanduser().resolve()
        self.path = self.folder / FILES_LOCK if inside else _lock_file(self.folder)
        self.command = command
        self._count = 0
        self.taken_now = False
        """Whether the last :meth:`acquire` took the lock (False: held already by this
        thread, counted)."""

    def _busy(self, pid) -> OutputBusyError:
        todo = ("wait for it to finish or choose another --out" if self.command in _OUT_COMMANDS
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


def output_lock(folder, command: str = "solve", inside: bool = False) -> OutputLock:
    """The :class:`OutputLock` of a results folder (not yet taken), for ``command``
    (``"solve"``, ``"plot"``, ``"validate"``: what its refusal tells to do); ``inside``: the
    lock of a folder of kind ``files`` (:data:`FILES_LOCK`)."""
    return OutputLock(folder, command, inside)

