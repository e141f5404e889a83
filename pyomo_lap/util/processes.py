"""Whether a process still runs: the files a process leaves (an IPOPT log, a results folder's
swap debris) are removed only when it is gone."""
from __future__ import annotations

import os

__all__ = ["process_running"]


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` exists (on Windows: always taken as running).

    Parameters
    ----------
    pid : int

    Returns
    -------
    bool
        False for a pid no process has (or one out of range), True when it exists, also one
        of another user's (``PermissionError``).
    """
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError, ValueError):
        return False
    return True
