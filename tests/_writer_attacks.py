"""The commands that write, as tests/test_writers_attacked.py attacks them: for each, where it
writes, the names it writes, how to run it (small and fast: a synthetic results folder, a
200 m sector, one lap of dymos's oval on 30 elements, a sweep whose cases are rows made up
without a solve), and the patches that make it so, shared by the in-process runs and the
child processes that are sent SIGTERM.

Run as a script (``python tests/_writer_attacks.py WORKSPACE COMMAND ARGS...``) it is such a
child: the command's patches, and ``os.fsync`` of the first file under WORKSPACE says
``WRITING`` on standard error and sleeps, so that the parent's SIGTERM lands while the files
are being written.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

MANIFEST = ".pyomo_lap_manifest.json"
VICTIM_BYTES = b"the user's own file, outside every folder pyomo_lap writes\n"
USER_BYTES = b"a file of the user's, named like one the command writes\n"

SWEEP_JOB = ["--start", "1200", "--length", "160", "--nfe", "16", "--solver-option",
             "compile=vm", "--solver-option", "eval_threads=1"]


class Recipe:
    """How one writing command is run and attacked.

    ``data``: the runs it reads (``"synthetic"``: ``a`` and ``b`` written from a made-up table,
    no solve; ``"solved"``: ``a`` a copy of the module's one small solve; ``None``).
    ``target(ws)``: the folder it writes; ``home(ws)``: the folder whose manifest records it
    (a results folder the files are added to). ``args(ws, out)``: the command line, ``out`` the
    folder it writes given as a link (the linked ``--out`` case) or None. ``names``: files it
    writes, relative to ``target``. ``fixed_tmp``: temporary names of the code before issue 45
    (planted as links). ``kind``: the marker of its cases that stop before any work, of
    those that run it, of its SIGTERM case. ``out_is_run``: the folder it writes is the run
    it reads (validate): its linked ``--out`` points at a results folder elsewhere. ``done``:
    the exit code of a run that wrote everything (``stint``: 4, its laps on 30 elements of the
    oval fail their self-check, written all the same)."""

    def __init__(self, name, data, target, args, names, home=None, fixed_tmp=(),
                 kinds=("unit", "unit", "component"), out_is_run=False, done=0):
        self.name, self.data, self.target, self.args = name, data, target, args
        self.done = done
        self.out_is_run = out_is_run
        self.names, self.fixed_tmp = tuple(names), tuple(fixed_tmp)
        self.home = home or target
        self.refusal_kind, self.run_kind, self.sigterm_kind = kinds


def _s(p) -> str:
    return str(p)


RECIPES = {r.name: r for r in [
    Recipe("solve", None, lambda ws: ws / "out",
           lambda ws, out=None: ["solve", "--length", "200", "--nfe", "20", "-q",
                                 "--out", _s(out or ws / "out")],
           ["summary.json", "trajectory.csv"], kinds=("unit", "integration", "integration")),
    Recipe("compare", "synthetic", lambda ws: ws / "cmp",
           lambda ws, out=None: ["compare", _s(ws / "a"), _s(ws / "b"), "-q",
                                 "--out", _s(out or ws / "cmp")],
           ["compare.csv", "compare.png", "compare_sectors.csv"]),
    Recipe("plot", "synthetic", lambda ws: ws / "a" / "plots",
           lambda ws, out=None: ["plot", _s(ws / "a"), "--figure", "speed", "-q"]
           + (["--out", _s(out)] if out else []),
           ["speed.png"], home=lambda ws: ws / "a"),
    Recipe("report", "synthetic", lambda ws: ws / "a",
           lambda ws, out=None: ["report", _s(ws / "a"), "-q"]
           + (["--out", _s(out / "report.html")] if out else []),
           ["report.html"]),
    Recipe("validate", "solved", lambda ws: ws / "a",
           lambda ws, out=None: ["validate", _s(out or ws / "a"), "-q"],
           ["validation.json", "defects.csv", "validation_defects.png"],
           kinds=("integration", "integration", "integration"), out_is_run=True),
    Recipe("export", "solved", lambda ws: ws / "a" / "export_every_5m",
           lambda ws, out=None: ["export", _s(ws / "a"), "--every", "5", "-q"]
           + (["--out", _s(out)] if out else []),
           ["summary.json", "trajectory.csv"], home=lambda ws: ws / "a",
           kinds=("integration", "integration", "integration")),
    Recipe("stint", None, lambda ws: ws / "st",
           lambda ws, out=None: ["stint", "--track", "dymos_oval", "--laps", "1", "-q",
                                 "--out", _s(out or ws / "st")],
           ["stint.csv", "stint.json", "stint.xlsx"],
           kinds=("integration", "integration", "integration"), done=4),
    Recipe("sweep", None, lambda ws: ws / "sw",
           lambda ws, out=None: ["sweep", "--set", "total=240,250", "--resume", "-q",
                                 "--out", _s(out or ws / "sw"), *SWEEP_JOB],
           ["sweep.parquet", "sweep.xlsx", "sweep.json"],
           fixed_tmp=(".sweep.parquet.tmp", ".sweep.xlsx.tmp", ".sweep.json.tmp")),
    Recipe("diagnose", None, lambda ws: ws / "diag",
           lambda ws, out=None: ["diagnose", "--no-numerical", "--length", "20", "--nfe", "2",
                                 "-q", "--report", _s((out or ws / "diag") / "diag.txt")],
           ["diag.txt"], kinds=("component", "component", "component")),
]}
"""Every command of ``pyomo-lap`` that writes (its ``writes`` attribute is not None) has one:
tests/test_writers_attacked.py fails for a writing command without a recipe."""


# ---- the patches that keep the runs small --------------------------------------------------

def _small_stint(real):
    """``solve_stint`` on 30 elements (the command line has no mesh option)."""
    @functools.wraps(real)
    def run(*args, **kwargs):
        return real(*args, **{**kwargs, "ocp_options": {"nfe": 30}})
    return run


class _NoClient:
    def close(self):
        pass


def _made_up_rows(client, todo, job, out, *args, **kwargs):
    """The sweep's cases as rows written without a solve (status solved, a lap time from the
    mass), through the worker's own writer of rows."""
    from pyomo_lap.sweeps.worker import _row, _write_row
    for case in todo:
        row = _row(case, "solved")
        row.update(lap_time_s=50.0 + 0.01 * float(next(iter(case["params"].values()), 0.0)),
                   iterations=10, wall_time_s=0.1)
        _write_row(out, row)


def patches(command: str) -> list:
    """``(object, attribute, value)`` of the patches of ``command``'s runs."""
    if command == "stint":
        import pyomo_lap.api.stint as stint
        return [(stint, "solve_stint", _small_stint(stint.solve_stint))]
    if command == "sweep":
        import pyomo_lap.sweeps.run as run
        return [(run, "_run", _made_up_rows), (run, "_shared_meshes", lambda *a, **k: None),
                (run, "_client", lambda *a, **k: (_NoClient(), None))]
    return []


# ---- the workspace ----------------------------------------------------------------------

def synthetic_runs(ws: Path) -> None:
    """``ws/a`` and ``ws/b``: results folders written by write_results from a made-up lap
    (tests/test_plots.py's), no solve."""
    from test_plots import VEHICLE, _run

    from pyomo_lap.results.table import write_results
    df, summary = _run(n=81)
    for name in ("a", "b"):
        write_results(ws / name, df, summary, vehicle_params=VEHICLE)


def tree(root: Path) -> dict:
    """Everything under ``root``, links not followed: ``{relative path: ("file", sha256) |
    ("link", target) | ("dir",)}``."""
    out = {}
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def copy(src: Path, dst: Path) -> Path:
    """A copy of a workspace (links copied as links; manifests kept)."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def path_of_fd(fd: int):
    """The path an open file descriptor names (Linux ``/proc``), or None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def disk_full_after(ws: Path, files_ok: int = 1):
    """An ``os.fsync`` for which the disk holding ``ws`` is full: the flush of a file under
    ``ws`` raises ``OSError(ENOSPC)`` after ``files_ok`` of them went through (what a full
    disk does to the last write; elsewhere, the temporary folder, the disk is not full)."""
    import errno
    real = os.fsync
    seen = []

    def fsync(fd):
        path = path_of_fd(fd)
        if path is not None and path.startswith(str(ws)) and os.path.isfile(path):
            seen.append(path)
            if len(seen) > files_ok:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)
    return fsync


def _child() -> None:
    """The child process of the SIGTERM case (module docstring)."""
    ws, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    for obj, attr, value in patches(command):
        setattr(obj, attr, value)
    real = os.fsync
    said = []

    def fsync(fd):
        real(fd)
        path = path_of_fd(fd)
        if not said and path and path.startswith(ws) and os.path.isfile(path):
            said.append(path)
            sys.stderr.write("WRITING\n")
            sys.stderr.flush()
            time.sleep(300)                  # SIGTERM lands here, in the middle of the writing
    os.fsync = fsync
    from pyomo_lap.cli import main
    main(args, prog_name="pyomo-lap")


if __name__ == "__main__":
    _child()
