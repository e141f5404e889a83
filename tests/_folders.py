"""Helpers of the results-folder tests (tests/test_results_folders.py, tests/test_links.py,
tests/test_solver_failures.py, tests/test_ocp.py): a process id no process has, a small
trajectory table, and the manifest an export writes for files put there by hand."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from pyomo_lap.folders.results_folder import MANIFEST, _file_entry


def dead_pid() -> int:
    """A process id that no process has: above the kernel's largest."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    except OSError:
        return 2 ** 22 + 1


def frame(n: int = 41, length: float = 300.0, v: float = 20.0, q2: float = 0.0) -> pd.DataFrame:
    """A small trajectory table with the channels the figures and the comparison read."""
    s = np.linspace(0.0, length, n)
    speed = v + 2.0 * np.sin(s / 50.0)
    t = np.concatenate([[0.0], np.cumsum(np.diff(s) / speed[1:])])
    return pd.DataFrame({"s": 1000.0 + s, "s_sector": s, "t": t, "q2": q2 + 0.5 * np.sin(s / 30.0),
                         "speed": speed, "speed_kmh": 3.6 * speed, "v_point_mass": speed,
                         "t_point_mass": t, "width_left": 4.0, "width_right": 4.0})


def write_manifest(folder: Path, names) -> Path:
    """The :data:`~pyomo_lap.folders.results_folder.MANIFEST` of ``folder`` listing the files ``names``
    (written by the test) as an export lists its own: earlier results of pyomo_lap."""
    files = {n: _file_entry(folder / n, "solve") for n in names}
    (folder / MANIFEST).write_text(json.dumps({"format": 1, "pyomo_lap_version": "0.1.0",
                                               "files": files}))
    return folder
