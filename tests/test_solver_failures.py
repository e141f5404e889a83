"""Solver failures are reported plainly (what happened, the solver's status, a hint), partial
results are kept only marked as such, an interruption stops the solver and leaves nothing
behind but lap_ipopt's last iterate in OUT.interrupted, and no result is ever lost: an earlier results folder is never touched by a failed
or interrupted run, and a solved result that cannot be written where asked is saved
elsewhere."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import pytest
from click.testing import CliRunner

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.folders import writer as writer_mod  # the swap: the writer of every folder
from pyomo_lap.results import table as res_mod
from pyomo_lap.folders.results_folder import MANIFEST
from pyomo_lap.api.results import ResultsNotWrittenError, _write_or_fallback
from pyomo_lap.cli import main
from pyomo_lap.solvers.report import SolveReport
from pyomo_lap.solvers.solve import SolverNotFoundError

from _folders import write_manifest  # noqa: E402 (tests/_folders.py)

EARLIER = '{"lap_time_s": 51.0, "pyomo_lap_version": "0.1.0", "note": "yesterday"}'
VENV_BIN = Path(sys.executable).parent
HANG_GUARD_S = 600.0
"""[s] a child process that takes longer has hung: no test asserts how fast anything is."""


def _sigint_as_in_a_terminal():
    """In the child: Ctrl-C handled as in a terminal, even when this test run was started with
    SIGINT ignored (nohup, a background job), which children would otherwise inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def earlier_results(folder: Path) -> Path:
    """A results folder of an earlier good run."""
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(EARLIER)
    (folder / "trajectory.csv").write_text("s [m],t [s]\n0,0\n")
    return write_manifest(folder, ["summary.json", "trajectory.csv"])   # as an export lists them


def assert_untouched(folder: Path):
    """Assert that a results folder still holds what was there before, with no leftovers."""
    assert (folder / MANIFEST).is_file()
    assert (folder / "summary.json").read_text() == EARLIER
    assert (folder / "trajectory.csv").read_text() == "s [m],t [s]\n0,0\n"
    leftovers = [p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}")]
    assert leftovers == [], leftovers          # no temporary or moved-away folders


def tiny_model():
    """A two-variable model with one row: min (x - 2)^2 s.t. x + y = 1."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.5)
    m.y = pyo.Var(initialize=0.5)
    m.c = pyo.Constraint(expr=m.x + m.y == 1)
    m.o = pyo.Objective(expr=(m.x - 2) ** 2)
    return m


# ------------------------------------------------------------------ iteration limit (CLI)
@pytest.mark.integration
@pytest.mark.parametrize("solver", ["lap_ipopt", "ipopt"])
def test_iteration_limit_is_reported_and_partial_results_are_marked(tmp_path, solver):
    """Iteration limit is reported and partial results are marked."""
    out = earlier_results(tmp_path / "results")
    r = CliRunner().invoke(main, ["solve", "--start", "3000", "--length", "60", "--nfe", "6",
                                  "--ncp", "2", "--max-iter", "3", "--out", str(out), "--quiet",
                                  "--solver", solver])
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit)                # no traceback
    msg = r.output
    for words in ("iteration limit", "termination condition maxIterations",
                  "solver status warning", "Maximum Number of Iterations Exceeded",
                  "3 iterations", "Hint: raise the limit (--max-iter", '"partial": true',
                  "was left untouched"):
        assert words in msg, words
    assert_untouched(out)
    failed = tmp_path / "results.failed"
    summary = json.loads((failed / "summary.json").read_text())
    assert summary["partial"] is True and summary["outcome"] == "iteration_limit"
    assert summary["termination_condition"] == "maxIterations" and summary["iterations"] == 3
    assert "max-iter" in summary["solver_hint"]
    xl = pd.read_excel(failed / "results.xlsx", sheet_name="summary")
    assert bool(xl.set_index("quantity").loc["partial", "value"]) is True
    # a second failed run replaces the partial results (they are pyomo_lap's), not OUT
    r = CliRunner().invoke(main, ["solve", "--start", "3000", "--length", "60", "--nfe", "6",
                                  "--ncp", "2", "--max-iter", "2", "--out", str(out), "--quiet",
                                  "--solver", solver])
    assert r.exit_code == 1
    assert json.loads((failed / "summary.json").read_text())["iterations"] == 2
    assert_untouched(out)


# ------------------------------------------------------------------ infeasible, restoration failure
@pytest.mark.integration
@pytest.mark.parametrize("solver", ["lap_ipopt", "ipopt"])
def test_infeasible_car_model_is_reported(solver):
    """Infeasible car model is reported."""
    tr, p = load_track("nordschleife"), load_vehicle("fsae")
    m = build_model(tr, p, start=3000.0, length=60.0, nfe=6, ncp=2)
    initialize_model(m)
    # an impossible constraint: the exit speed below the model's minimum speed
    m.impossible = pyo.Constraint(expr=m.q1_dot[m.s.last()] <= 0.5 * m.problem.options.v_min)
    rep = solve_model(m, solver=solver)
    assert not rep.ok and rep.kind == "infeasible"
    assert rep.termination_condition == "infeasible"
    assert "local infeasibility" in rep.exit_message
    text = rep.describe()
    assert "local infeasibility" in text and "termination condition infeasible" in text
    assert "solver status warning" in text and f"{rep.iterations} iterations" in text
    assert "--initial-speed" in text and "any constraint you added" in text


@pytest.mark.component
def test_step_computation_error_is_reported_by_lap_ipopt():
    """IPOPT 3.14 asked to start in its restoration phase at a feasible point stops at once:
    EXIT: Error in step computation! (3.11 fails the restoration instead, below)."""
    rep = solve_model(tiny_model(), solver="lap_ipopt", options={"start_with_resto": "yes"})
    assert not rep.ok and rep.kind == "solver_error"
    assert rep.exit_message == "Error in step computation!"
    text = rep.describe()
    assert "stopped with an error" in text and "solver status error" in text
    assert "Hint:" in text and "--nfe" in text


@pytest.mark.component
def test_restoration_failure_is_reported():
    """IPOPT 3.11 asked to start in its restoration phase at a feasible point fails it.

    ("Restoration phase is called at almost feasible point"): EXIT: Restoration Failed!
    (The AMPL executable takes this option only through an options file: prefix OF_.)"""
    rep = solve_model(tiny_model(), solver="ipopt", options={"OF_start_with_resto": "yes"})
    assert not rep.ok and rep.kind == "restoration_failed"
    assert rep.exit_message == "Restoration Failed!"
    text = rep.describe()
    assert "restoration phase failed" in text and "solver status error" in text
    assert "Hint:" in text and "--nfe" in text


# ------------------------------------------------------------------ other failures, real IPOPT
@pytest.mark.component
def test_evaluation_error_and_bad_options_are_reported():
    """Evaluation error and bad options are reported."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0)
    m.c = pyo.Constraint(expr=pyo.sqrt(m.x) == -1.0)     # IPOPT steps to x < 0: sqrt NaN
    m.o = pyo.Objective(expr=m.x)
    rep = solve_model(m, solver="ipopt", options={"nlp_scaling_method": "gradient-based"})
    assert rep.kind == "evaluation_error" and "NaN" in rep.describe()
    for opts, words in (({"no_such_option": 1}, 'Unknown keyword "no_such_option"'),
                        ({"OF_no_such_option": 1}, '"no_such_option". It is not a valid option'),
                        ({"OF_max_iter": "many"}, 'Integer value expected')):
        rep = solve_model(tiny_model(), solver="ipopt", options=opts)
        assert not rep.ok and rep.kind == "bad_option", rep.log
        assert words in rep.describe() and "OF_" in rep.hint


@pytest.mark.component
def test_evaluation_error_and_bad_options_are_reported_by_lap_ipopt():
    """Evaluation error and bad options are reported by lap ipopt."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0)
    m.c = pyo.Constraint(expr=pyo.sqrt(m.x) == -1.0)     # IPOPT steps to x < 0: sqrt NaN
    m.o = pyo.Objective(expr=m.x)
    rep = solve_model(m, solver="lap_ipopt", options={"nlp_scaling_method": "gradient-based"})
    assert not rep.ok and rep.kind in ("evaluation_error", "restoration_failed", "infeasible"), rep
    for opts, words in (({"no_such_option": 1}, "'no_such_option'"),
                        ({"max_iter": "many"}, "'max_iter'")):
        rep = solve_model(tiny_model(), solver="lap_ipopt", options=opts)
        assert not rep.ok and rep.kind == "bad_option", rep
        assert words in rep.describe() and "refused" in rep.describe()


@pytest.mark.unit
def test_every_kind_has_a_plain_explanation_and_a_hint():
    """diagnose() on IPOPT's exit messages (the real solver produces most of them in the tests
    above; a CPU-time limit is not reproducible: IPOPT's clock is too coarse for a small
    model)."""
    cases = [
        ("optimal", "Optimal Solution Found.", "optimal"),
        ("optimal", "Solved To Acceptable Level.", "acceptable"),
        ("maxIterations", "Maximum Number of Iterations Exceeded.", "iteration_limit"),
        ("infeasible", "Converged to a point of local infeasibility. Problem may be infeasible.",
         "infeasible"),
        ("internalSolverError", "Restoration Failed!", "restoration_failed"),
        ("internalSolverError", "Invalid number in NLP function or derivative detected.",
         "evaluation_error"),
        ("userInterrupt", "Stopping optimization at current point as requested by user.",
         "interrupted"),
        ("maxIterations", "Maximum CPU time exceeded.", "time_limit"),
        ("error", "Search Direction is becoming Too Small.", "solver_error"),
        ("other", "", "failed"),
    ]
    for tc, ex, kind in cases:
        ok = tc == "optimal"
        rep = SolveReport(ok, tc, "ok" if ok else "warning", "", 7, 1.0, "ipopt", "", None, None, ex)
        assert rep.kind == kind, (tc, ex)
        text = rep.describe()
        assert f"termination condition {tc}" in text and "7 iterations" in text
        if ok:
            assert rep.hint == "" and "Hint" not in text
        else:
            assert rep.hint and f"Hint: {rep.hint}" in text


# ------------------------------------------------------------------ missing solver
@pytest.fixture
def no_ipopt(tmp_path, monkeypatch):
    """A PATH without an ipopt executable."""
    from pyomo.common import Executable
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr("pyomo_lap.solvers.solve._venv_bin", lambda: empty)
    Executable.rehash()
    yield
    monkeypatch.undo()
    Executable.rehash()


@pytest.mark.unit
def test_missing_solver_is_reported_before_building(tmp_path, no_ipopt):
    """Missing solver is reported before building."""
    out = earlier_results(tmp_path / "results")
    r = CliRunner().invoke(main, ["solve", "--length", "100", "--nfe", "5", "--out", str(out),
                                  "--solver", "ipopt"])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert "solver 'ipopt' is not available" in r.output
    assert "conda install -c conda-forge ipopt" in r.output and "bootstrap.sh" in r.output
    assert "building" not in r.output
    assert_untouched(out)
    with pytest.raises(SolverNotFoundError):
        solve_model(tiny_model(), solver="ipopt")


@pytest.mark.unit
def test_missing_ipopt_library_is_reported_before_building(tmp_path, monkeypatch):
    """Missing ipopt library is reported before building."""
    from pyomo.contrib.solver.common.base import Availability
    monkeypatch.setattr("pyomo_lap.solvers.lap.solver.LapIpopt.available", lambda self: Availability.NotFound)
    out = earlier_results(tmp_path / "results")
    r = CliRunner().invoke(main, ["solve", "--length", "100", "--nfe", "5", "--out", str(out)])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert "solver 'lap_ipopt' is not available" in r.output and "casadi" in r.output
    assert "--solver ipopt" in r.output and "building" not in r.output
    assert_untouched(out)


@pytest.mark.component
def test_unknown_solver_name(tmp_path):
    """Unknown solver name."""
    r = CliRunner().invoke(main, ["solve", "--solver", "no_such_solver", "--length", "100",
                                  "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "solver 'no_such_solver' is not a solver Pyomo knows" in r.output
    assert "Traceback" not in r.output and "building" not in r.output


# ------------------------------------------------------------------ Ctrl-C and SIGTERM
FAKE_IPOPT = textwrap.dedent("""\
    #!{python}
    # A stand-in for ipopt that reports its version like the real one and then "solves"
    # forever: the test interrupts it. It marks the start of the solve in a file.
    import os, subprocess, sys, time
    if "-v" in sys.argv[1:2]:
        sys.exit(subprocess.call([{real!r}, "-v"]))
    open(os.environ["FAKE_IPOPT_MARKER"], "w").close()
    try:
        time.sleep(120)
    except KeyboardInterrupt:   # like ipopt: stop quietly on Ctrl-C
        sys.exit(1)
    sys.exit(1)
""")


def _interrupted_solve(tmp_path, sig, whole_group):
    """Run `pyomo-lap solve` in a subprocess whose ipopt hangs, send ``sig`` once the solve
    has started, and return (returncode, stdout, stderr, out folder, temp dir, pid)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ipopt"
    fake.write_text(FAKE_IPOPT.format(python=sys.executable, real=str(VENV_BIN / "ipopt")))
    fake.chmod(0o755)
    marker = tmp_path / "solving"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = earlier_results(tmp_path / "results")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", TMPDIR=str(tmpdir),
               FAKE_IPOPT_MARKER=str(marker),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                           os.environ.get("PYTHONPATH", "")]))
    env.pop("PYOMO_LAP_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "pyomo_lap.cli", "solve", "--start", "3000",
                             "--length", "60", "--nfe", "4", "--ncp", "2", "--out", str(out),
                             "--solver", "ipopt"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path, start_new_session=True,
                            preexec_fn=_sigint_as_in_a_terminal)
    try:
        t0 = time.time()
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.time() - t0 < HANG_GUARD_S, "the solve did not start (hung)"
            time.sleep(0.05)
        time.sleep(0.2)
        (os.killpg if whole_group else os.kill)(proc.pid, sig)
        stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:   # pragma: no cover - only if the test fails
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, stdout, stderr, out, tmpdir, proc.pid


def _assert_clean_interruption(rc, stdout, stderr, out, tmpdir, pid, code, name):
    assert rc == code, (rc, stdout, stderr)
    assert f"interrupted by {name} while ipopt was solving" in stderr
    assert "termination condition userInterrupt" in stderr
    assert "the solver was stopped, nothing was written" in stderr and "left untouched" in stderr
    assert "Traceback" not in stdout + stderr
    assert_untouched(out)
    assert not (out.parent / "results.failed").exists()
    assert list(tmpdir.iterdir()) == []            # the NL, solution and log files are removed
    with pytest.raises(ProcessLookupError):        # no solver process is left running
        os.killpg(pid, 0)


@pytest.mark.integration
def test_ctrl_c_stops_the_solver_and_keeps_earlier_results(tmp_path):
    """Ctrl-C in a terminal sends SIGINT to the whole foreground process group."""
    rc, stdout, stderr, out, tmpdir, pid = _interrupted_solve(tmp_path, signal.SIGINT, True)
    _assert_clean_interruption(rc, stdout, stderr, out, tmpdir, pid, 130, "SIGINT (Ctrl-C)")


@pytest.mark.integration
def test_sigterm_stops_the_solver_and_keeps_earlier_results(tmp_path):
    """A scheduler's `kill PID` reaches only the Python process: the solver must be stopped."""
    rc, stdout, stderr, out, tmpdir, pid = _interrupted_solve(tmp_path, signal.SIGTERM, False)
    _assert_clean_interruption(rc, stdout, stderr, out, tmpdir, pid, 143, "SIGTERM")


def _interrupted_lap_ipopt(tmp_path, sig, whole_group):
    """`pyomo-lap solve --verbose` (default solver lap_ipopt, IPOPT in this process: its
    iterations streamed) on a sector long enough to take a few seconds; ``sig`` is sent once
    IPOPT's iteration table appears."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = earlier_results(tmp_path / "results")
    env = dict(os.environ, TMPDIR=str(tmpdir),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                           os.environ.get("PYTHONPATH", "")]))
    env.pop("PYOMO_LAP_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-u", "-m", "pyomo_lap.cli", "solve", "--length",
                             "2000", "--nfe", "400", "--out", str(out), "--verbose"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path, start_new_session=True,
                            preexec_fn=_sigint_as_in_a_terminal)
    try:
        t0 = time.time()
        seen = ""
        while "iter    objective" not in seen:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, seen
            seen += line
            assert time.time() - t0 < HANG_GUARD_S, "the solve did not start (hung)"
        time.sleep(0.3)
        (os.killpg if whole_group else os.kill)(proc.pid, sig)
        stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:   # pragma: no cover - only if the test fails
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, seen + stdout, stderr, out, tmpdir


@pytest.mark.integration
@pytest.mark.parametrize("sig, whole_group, code, name", [
    (signal.SIGINT, True, 130, "SIGINT (Ctrl-C)"), (signal.SIGTERM, False, 143, "SIGTERM")])
def test_interrupted_lap_ipopt_keeps_earlier_results(tmp_path, sig, whole_group, code, name):
    """Interrupted lap ipopt keeps earlier results."""
    rc, stdout, stderr, out, tmpdir = _interrupted_lap_ipopt(tmp_path, sig, whole_group)
    assert rc == code, (rc, stdout[-2000:], stderr)
    assert f"interrupted by {name} while lap_ipopt was solving" in stderr
    assert "termination condition userInterrupt" in stderr and "left untouched" in stderr
    assert "Traceback" not in stdout + stderr
    assert_untouched(out)
    assert not (out.parent / "results.failed").exists()
    assert list(tmpdir.iterdir()) == []            # IPOPT's log file is removed
    # IPOPT's last iterate is kept beside, in a folder of its own, to start again from
    kept = out.parent / "results.interrupted"
    assert f"the last iterate was kept in {kept}/" in stderr and "--warm-start " in stderr
    assert (kept / "solution.npz").is_file() and (kept / MANIFEST).is_file()
    summary = json.loads((kept / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["partial"] is True


# ------------------------------------------------------------------ no result is ever lost
def _frame():
    return pd.DataFrame({"s": [0.0, 1.0], "t": [0.0, 0.1]})


def _summary():
    return {"lap_time_s": 0.1, "pyomo_lap_version": "0.1.0"}


@pytest.mark.unit
def test_ctrl_c_between_the_two_moves_puts_the_earlier_results_back(tmp_path, monkeypatch):
    """Ctrl c between the two moves puts the earlier results back."""
    out = earlier_results(tmp_path / "results")
    real_replace = os.replace
    calls = []

    def replace(a, b):
        calls.append((a, b))
        if len(calls) == 2:            # after moving the old folder away, before moving in
            raise KeyboardInterrupt
        return real_replace(a, b)

    monkeypatch.setattr(writer_mod.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        res_mod.write_results(out, _frame(), _summary())
    monkeypatch.undo()
    assert len(calls) == 3 and calls[2] == (calls[0][1], calls[0][0])   # moved back
    assert_untouched(out)
    # and a disk error at the same place
    calls.clear()

    def replace_oserror(a, b):
        calls.append((a, b))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_replace(a, b)

    monkeypatch.setattr(writer_mod.os, "replace", replace_oserror)
    with pytest.raises(OSError, match="No space"):
        res_mod.write_results(out, _frame(), _summary())
    monkeypatch.undo()
    assert_untouched(out)


@pytest.mark.unit
def test_results_that_cannot_be_written_are_saved_elsewhere(tmp_path, monkeypatch):
    """Results that cannot be written are saved elsewhere."""
    out = tmp_path / "results"
    real_write = res_mod.write_results

    def failing(folder, *a, **k):
        if Path(folder).parent == tmp_path:
            raise OSError(28, "No space left on device")
        return real_write(folder, *a, **k)

    monkeypatch.setattr("pyomo_lap.api.results.write_results", failing)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    said = []
    ok = SolveReport(True, "optimal", "ok", "", 10, 1.0, "ipopt", "", None, None,
                     "Optimal Solution Found.")
    with pytest.raises(ResultsNotWrittenError) as exc:
        _write_or_fallback(out, _frame(), _summary(), {}, ok, said.append)
    saved = Path(str(exc.value).split("saved to ")[1].split("/ instead")[0])
    assert saved.parent.parent == tmp_path / "spare" and str(out) in str(exc.value)
    assert json.loads((saved / "summary.json").read_text())["lap_time_s"] == 0.1
    assert np.allclose(res_mod.read_trajectory(saved / "trajectory.csv")["t"], [0.0, 0.1])
    # a failed solve's partial results go the same way, marked partial, and are announced
    bad = SolveReport(False, "maxIterations", "warning", "", 3, 1.0, "ipopt", "", None, None,
                      "Maximum Number of Iterations Exceeded.")
    where = _write_or_fallback(out, _frame(), _summary(), {}, bad, said.append)
    assert where.name == "results.failed" and "could not write" in said[-1]
    assert json.loads((where / "summary.json").read_text())["partial"] is True
