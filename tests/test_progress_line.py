"""The progress line while IPOPT works (:class:`pyomo_lap.util.progress.IterationProgress`,
``pyomo-lap solve --progress``) and Ctrl-C keeping the last iterate in ``OUT.interrupted``
for a warm start (docs/progress.md, docs/failures.md)."""
import hashlib
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap.folders.results_folder import MANIFEST, check_output_dir
from pyomo_lap.folders.links import FolderNotReplaceableError
from pyomo_lap.results.table import check_results_folder
from pyomo_lap.util.progress import IterationProgress

HANG_GUARD_S = 600.0
"""[s] a child process that takes longer has hung: no test asserts how fast anything is."""
ROOT = Path(__file__).resolve().parents[1]


def info(k, obj=7.5, inf_pr=1e-2, inf_du=2e-3, **more):
    return dict(iter_count=k, obj_value=obj, inf_pr=inf_pr, inf_du=inf_du, alg_mod=0, **more)


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


# ------------------------------------------------------------------ the line itself
@pytest.mark.unit
def test_updates_at_most_once_per_interval_and_the_last_iteration_at_the_end():
    """Iterations at the times below, with an interval of 1 s: shown are iteration 0 (the
    first), the first iteration at least 1 s after the one shown before (4 at 1.0 s, 6 at
    2.1 s), and the last one at finish (7)."""
    clock, out = FakeClock(), []
    line = IterationProgress(write=out.append, tty=False, interval_s=1.0, clock=clock)
    for k, t in enumerate([0.0, 0.3, 0.6, 0.99, 1.0, 1.2, 2.1, 2.2]):
        clock.t = t
        assert line(info(k)) is True             # never stops the solve
    line.finish()
    shown = [int(re.search(r"iteration (\d+)", o).group(1)) for o in out]
    assert shown == [0, 4, 6, 7]
    times = [float(re.search(r", ([0-9.]+) s$", o.strip()).group(1)) for o in out]
    assert times == [0.0, 1.0, 2.1, 2.2]


@pytest.mark.unit
def test_on_a_terminal_one_line_is_rewritten_and_ended_once():
    clock, out = FakeClock(), []
    line = IterationProgress(write=out.append, tty=True, interval_s=0.5, clock=clock)
    for k in range(5):
        clock.t = 0.5 * k
        line(info(k, obj=7.45123456, inf_pr=3.14e-4, inf_du=2.0e-2, inf_pr_unscaled=0.5))
    line.finish()
    updates, end = out[:-1], out[-1]
    assert end == "\n" and len(updates) == 5
    for u in updates:                 # carriage return, the text, clear to the end of the line
        assert u.startswith("\r") and u.endswith("\x1b[K") and "\n" not in u
    assert updates[2] == ("\r  IPOPT iteration 2: objective 7.45123, primal inf. 5.0e-01, "
                          "dual inf. 2.0e-02, 1.0 s\x1b[K")


@pytest.mark.unit
def test_a_new_solve_starts_a_line_of_its_own():
    clock, out = FakeClock(), []
    line = IterationProgress(write=out.append, tty=True, interval_s=10.0, clock=clock)
    line(info(0))
    clock.t = 1.0
    line(info(1))                          # within the interval: not shown yet
    clock.t = 2.0
    line(info(0, obj=3.0))                 # the next solve: the first one's line is ended
    line.finish()
    text = "".join(out)
    assert text.count("\n") == 2 and "iteration 1:" in text.split("\n")[0]
    assert "objective 3" in text.split("\n")[1] and text.split("\n")[1].endswith("0.0 s\x1b[K")
    with pytest.raises(ValueError, match="interval_s = 0"):
        IterationProgress(interval_s=0)


@pytest.mark.unit
def test_a_foreign_file_in_the_interrupted_folder_is_refused(tmp_path):
    """``OUT.interrupted`` is checked like ``OUT`` and ``OUT.failed``: a file pyomo_lap did not
    write (no manifest) stops the run before anything is built, and is not touched."""
    out = tmp_path / "results"
    (tmp_path / "results.interrupted").mkdir()
    mine = tmp_path / "results.interrupted" / "notes.txt"
    mine.write_text("mine")
    with pytest.raises(FolderNotReplaceableError, match=r"results\.interrupted.*last iterate"):
        check_output_dir(out)
    assert mine.read_text() == "mine"


# ------------------------------------------------------------------ the command
def _env():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYOMO_LAP_DEBUG", None)
    return env


def _solve_args(out, *more):
    return [sys.executable, "-m", "pyomo_lap.cli", "solve", "--length", "300", "--out", str(out),
            *more]


def _run_with_stderr_on_a_terminal(args, cwd):
    """Run ``args`` with standard error on a pseudo-terminal (standard output a pipe): what
    was written to each."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=_env(), cwd=cwd)
    os.close(slave)
    err, t0 = b"", time.time()
    while True:
        assert time.time() - t0 < HANG_GUARD_S, "hung"
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:           # the child closed the terminal (Linux: EIO)
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    out = proc.communicate(timeout=HANG_GUARD_S)[0]
    os.close(master)
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.integration
def test_the_progress_line_is_shown_on_a_terminal_only(tmp_path):
    """On a terminal: the line, rewritten in place (carriage returns), ended by a newline,
    never on standard output; with -q none; with standard error a pipe none, unless asked
    (--progress: one line per update)."""
    rc, out, err = _run_with_stderr_on_a_terminal(_solve_args(tmp_path / "a"), tmp_path)
    assert rc == 0, err
    updates = re.findall(r"\r  IPOPT iteration (\d+): objective ([-0-9.e+]+), primal inf\. "
                         r"[0-9.e+-]+, dual inf\. [0-9.e+-]+, [0-9.]+ s\x1b\[K", err)
    assert updates and updates[0][0] == "0"
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    # the line as it stands at the end of the solve: IPOPT's last iteration and objective (the
    # summary's, to the 6 digits shown), then the line's end (the terminal's "\r\n")
    assert int(updates[-1][0]) == summary["iterations"]
    assert float(updates[-1][1]) == pytest.approx(summary["objective"], rel=1e-5)
    last = err[err.rindex("\r  IPOPT iteration"):]
    assert re.match(r"\r  IPOPT iteration [^\r\n]*\x1b\[K\r?\n", last)
    assert "IPOPT iteration" not in out
    iters = [int(k) for k, _ in updates]
    assert iters == sorted(set(iters))

    # the other cases say nothing of the sector: a shorter one (the last option wins)
    short = ("--length", "100", "--nfe", "10")
    rc, out, err = _run_with_stderr_on_a_terminal(_solve_args(tmp_path / "b", "-q", *short),
                                                  tmp_path)
    assert rc == 0 and "IPOPT iteration" not in out + err and "sector time" in out

    plain = subprocess.run(_solve_args(tmp_path / "c", *short), capture_output=True, text=True,
                           env=_env(), cwd=tmp_path, timeout=HANG_GUARD_S)
    assert plain.returncode == 0 and "IPOPT iteration" not in plain.stdout + plain.stderr
    forced = subprocess.run(_solve_args(tmp_path / "d", "--progress", *short),
                            capture_output=True, text=True, env=_env(), cwd=tmp_path,
                            timeout=HANG_GUARD_S)
    assert forced.returncode == 0 and "\r" not in forced.stderr
    assert re.search(r"^  IPOPT iteration 0: .* s$", forced.stderr, re.M)


EARLIER = '{"lap_time_s": 51.0, "pyomo_lap_version": "0.1.0", "note": "yesterday"}'


def _earlier_results(folder: Path) -> dict:
    """A results folder of an earlier good run; returns its files' bytes."""
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(EARLIER)
    data = (folder / "summary.json").read_bytes()
    (folder / MANIFEST).write_text(json.dumps({"format": 1, "pyomo_lap_version": "0.1.0", "files": {
        "summary.json": {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                         "by": "solve"}}}))
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.integration
def test_ctrl_c_keeps_the_last_iterate_and_a_warm_start_from_it_converges_sooner(tmp_path):
    """Ctrl-C at IPOPT's iteration 8 or later (of 17 from the usual start): ``OUT`` keeps the
    earlier results, ``OUT.interrupted`` holds the last iterate (a complete export with
    solution.npz, marked partial and interrupted), the message names it and the command to
    continue, and that solve from it needs fewer iterations than the cold one and ends at the
    same sector time."""
    mesh = ["--nfe", "300"]
    cold = subprocess.run(_solve_args(tmp_path / "cold", "-q", *mesh), capture_output=True,
                          text=True, env=_env(), cwd=tmp_path, timeout=HANG_GUARD_S)
    assert cold.returncode == 0, cold.stderr
    cold_summary = json.loads((tmp_path / "cold" / "summary.json").read_text())

    out = tmp_path / "results"
    before = _earlier_results(out)
    proc = subprocess.Popen([*_solve_args(out, *mesh), "--verbose"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
                            start_new_session=True, preexec_fn=lambda: signal.signal(
                                signal.SIGINT, signal.SIG_DFL))
    try:
        seen, t0 = "", time.time()
        while True:               # IPOPT's iteration table (-v) on standard output
            row = proc.stdout.readline()
            assert row or proc.poll() is None, seen[-3000:]
            seen += row
            m = re.match(r"\s*(\d+)r?\s+[-0-9.]+e[-+]\d+\s", row)
            if m and int(m.group(1)) >= 8:
                break
            assert time.time() - t0 < HANG_GUARD_S, "hung"
        os.killpg(proc.pid, signal.SIGINT)       # Ctrl-C: the whole process group
        stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:   # pragma: no cover - only if the test fails
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stdout + stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before     # untouched
    kept = tmp_path / "results.interrupted"
    check_results_folder(kept)
    summary = json.loads((kept / "summary.json").read_text())
    assert summary["partial"] is True and summary["interrupted"] is True
    assert summary["termination_condition"] == "userInterrupt"
    assert 8 <= summary["interrupted_at_iteration"] == summary["iterations"] \
        < cold_summary["iterations"]
    with np.load(kept / "solution.npz") as d:
        assert d["s"].size == cold_summary["n_points"]
    assert f"the last iterate was kept in {kept}/" in stderr
    command = stderr.split("To continue from it: ")[1].strip()
    assert command.endswith(f"--warm-start {kept}") and "--nfe 300" in command
    assert not (tmp_path / "results.failed").exists()

    warm = subprocess.run(_solve_args(tmp_path / "warm", "-q", *mesh, "--warm-start-from",
                                      str(kept)), capture_output=True, text=True, env=_env(),
                          cwd=tmp_path, timeout=HANG_GUARD_S)
    assert warm.returncode == 0, warm.stderr
    warm_summary = json.loads((tmp_path / "warm" / "summary.json").read_text())
    assert warm_summary["optimal"] and "warm_start_failed" not in warm_summary
    assert warm_summary["iterations"] < cold_summary["iterations"]
    assert warm_summary["lap_time_s"] == pytest.approx(cold_summary["lap_time_s"], rel=1e-4)
