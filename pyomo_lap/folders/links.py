"""The rule for links of pyomo_lap's folders: never follow a symbolic link out of a folder
pyomo_lap owns (a results folder it reads, writes, moves or deletes).

:func:`is_link` and :func:`is_real_dir` look without following a link, :func:`refuse_links`
refuses a folder that is a link or holds one, with :class:`FolderNotReplaceableError`, the
error of every refusal of a folder (:mod:`pyomo_lap.folders.results_folder` raises it too).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["is_link", "is_real_dir", "refuse_links", "FolderNotReplaceableError"]


class FolderNotReplaceableError(ValueError):
    """The output folder holds something pyomo_lap did not write (nothing was touched)."""


def is_link(path) -> bool:
    """True when ``path`` is a symbolic link (or a Windows junction), without following it.

    The one test for links of pyomo_lap's folders: whatever pyomo_lap reads, writes, moves or
    deletes in a folder it owns (a results folder, its ``.failed`` twin, the ``.NAME.old-PID``
    and ``.NAME.tmp-PID-*`` folders of the swap, the lock file ``.NAME.lock``, the manifest) is
    first tested with this, and a link is refused or reported, never followed.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    bool
        False too when ``path`` does not exist.
    """
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return False
    if stat.S_ISLNK(st.st_mode):
        return True
    junction = getattr(os.path, "isjunction", None)       # Windows, Python >= 3.12
    return bool(junction is not None and junction(path))


def is_real_dir(path) -> bool:
    """True when ``path`` is a folder itself, not a link to one (nor a file, nor missing):
    the ``is_dir()`` of pyomo_lap's own folders, which never follows a link
    (:func:`is_link`)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode) and not is_link(path)
    except (OSError, ValueError):
        return False


def _first_link(folder: Path):
    """The first symbolic link under ``folder`` (relative path, sorted walk), or None; no link
    is followed (``os.walk(followlinks=False)``; a link to a folder is not entered)."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        r = Path(root)
        for name in sorted(dirs + files):
            if is_link(r / name):
                return (r / name).relative_to(folder).as_posix()
    return None


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def refuse_links(folder, what: str, todo: str = "replace the link by the real file or folder") -> None:
    """Refuse a folder pyomo_lap is about to read, write, move or delete when it is a symbolic
    link or holds one anywhere under it (no link is followed to find out).

    Parameters
    ----------
    folder : str or Path
        A folder pyomo_lap owns (a results folder ...); a missing one passes.
    what : str
        How the messages name it (``"output folder '/x/res'"``).
    todo : str
        What the user should do, said in the message.

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        One line naming ``folder`` or its first link (and where it points), ending
        "(nothing was touched)".
    """
    folder = Path(folder)
    if is_link(folder):
        raise FolderNotReplaceableError(
            f"{what} is a symbolic link (to {_link_target(folder)}); pyomo_lap never follows a "
            f"link out of a folder it writes: give the real path or {todo} (nothing was touched)")
    if not is_real_dir(folder):
        return
    rel = _first_link(folder)
    if rel is not None:
        raise FolderNotReplaceableError(
            f"{what} holds a symbolic link, {rel!r} (to {_link_target(folder / rel)}); pyomo_lap "
            f"never follows a link out of a folder it writes: {todo} (nothing was touched)")
