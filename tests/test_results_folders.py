"""Results folders never lose a user's file (issue 23, items 1, 4, 5, 6, 9).

* a re-solve replaces only what pyomo_lap wrote (the manifest ``.pyomo_lap_manifest.json``:
  relative path and SHA-256 of every file); a folder that holds anything else (a user's
  file or subfolder, a changed file) is refused with one line and kept as it is; the figures
  of ``pyomo-lap plot`` written into the folder are in its manifest, so a re-solve replaces
  them with the rest;
* the swap of the old folder for the new one: an error between the two moves puts the old
  folder back; a run killed between them leaves ``.NAME.old-PID``, which the next run into
  that ``--out`` restores; unfinished ``.NAME.tmp-PID-*`` folders and IPOPT logs of dead
  processes are removed; a folder without a complete manifest is never taken as results by
  ``plot``, ``compare`` or ``validate``;
* a lock on ``--out`` (``.NAME.lock``): a second run into the same folder is refused at once;
* the workbook holds every text of the inputs as text, never as a formula;
* ``compare`` writes into ``--out`` (default ``compare_<A>_vs_<B>`` next to the runs), never
  into a run's folder.

Unit tests call :func:`pyomo_lap.results.table.write_results` on a small synthetic table
(no solve); the integration tests run ``pyomo-lap solve --length 300`` as the tester did.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pyomo_lap.cli import main
from pyomo_lap.folders import writer as writer_mod  # the swap: the writer of every folder
from pyomo_lap.results import table as res_mod
from pyomo_lap.results.table import write_results

MANIFEST = ".pyomo_lap_manifest.json"

from _folders import dead_pid, frame  # noqa: E402


def _summary(lap: float = 15.0, **extra) -> dict:
    return {"lap_time_s": lap, "track": "nordschleife", "vehicle": "fsae", "start_m": 1000.0,
            "length_m": 300.0, **extra}


def _results(folder: Path, lap: float = 15.0, **kw) -> Path:
    return write_results(folder, frame(**kw), _summary(lap))


def _tree(folder: Path) -> dict:
    """Relative path -> bytes of every file under ``folder`` (and the empty folders)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out[rel] = p.read_bytes() if p.is_file() else None
    return out


def _one_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    return lines[0]


# ---- item 1: a re-solve deletes only what pyomo_lap wrote -------------------------------------

@pytest.mark.unit
def test_results_folder_has_a_manifest_of_its_files(tmp_path):
    out = _results(tmp_path / "res")
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["pyomo_lap_version"]
    files = manifest["files"]
    assert {"summary.json", "trajectory.csv", "trajectory.parquet", "results.xlsx"} <= set(files)
    for rel, entry in files.items():
        data = (out / rel).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), rel
        assert entry["size"] == len(data), rel


@pytest.mark.unit
def test_a_results_folder_with_foreign_files_is_refused_and_kept(tmp_path):
    """The tester's item 1 without the solve: notes and a subfolder of the user's next to
    earlier results; a second export is refused, naming the folder and the first foreign
    file, and every file stays as it was."""
    out = _results(tmp_path / "res", lap=15.0)
    (out / "notes.txt").write_text("precious")
    (out / "mine").mkdir()
    (out / "mine" / "data.csv").write_text("1,2\n")
    before = _tree(out)
    with pytest.raises(ValueError) as err:
        write_results(out, frame(), _summary(14.0))
    msg = str(err.value)
    assert str(out) in msg and "'mine'" in msg and "\n" not in msg
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["res"]          # no debris either
    # the check before any build says the same
    with pytest.raises(ValueError, match="mine"):
        res_mod.check_output_dir(out)
    # a changed file of pyomo_lap's is the user's work now
    (out / "mine" / "data.csv").unlink()
    (out / "mine").rmdir()
    (out / "notes.txt").unlink()
    (out / "summary.json").write_text('{"lap_time_s": 15.0, "my": "edit"}')
    with pytest.raises(ValueError, match="summary.json.*changed"):
        write_results(out, frame(), _summary(14.0))
    assert json.loads((out / "summary.json").read_text())["my"] == "edit"


@pytest.mark.unit
def test_cli_solve_refuses_a_folder_with_foreign_files_before_building(tmp_path, monkeypatch):
    out = _results(tmp_path / "res")
    (out / "notes.txt").write_text("precious")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--out", "res", "--quiet"])
    assert r.exit_code == 2, r.output
    line = _one_line(r.stderr)          # stdout: what was done to the track data
    assert str(out) in line and "notes.txt" in line and "building" not in r.output
    assert (out / "notes.txt").read_text() == "precious"


@pytest.mark.unit
def test_a_re_solve_into_a_clean_results_folder_replaces_it(tmp_path):
    out = _results(tmp_path / "res", lap=15.0)
    out2 = _results(tmp_path / "res", lap=14.0)
    assert out2 == out
    assert json.loads((out / "summary.json").read_text())["lap_time_s"] == 14.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]    # no .res.* left
    # a folder without a manifest (a copy made with a plain `cp`, which skips the hidden
    # manifest, perhaps edited since) is never replaced, even holding only the names of a
    # results folder (issue 34, item 5): its files may be the user's
    (out / MANIFEST).unlink()
    (out / "validation.json").write_text("{}")
    before = _tree(out)
    with pytest.raises(ValueError, match=f"has no {MANIFEST}.*cp -a"):
        _results(out, lap=13.0)
    assert _tree(out) == before
    # emptied, it is replaced
    for f in out.iterdir():
        f.unlink()
    _results(out, lap=12.0)
    assert json.loads((out / "summary.json").read_text())["lap_time_s"] == 12.0


@pytest.mark.unit
def test_plots_are_recorded_and_replaced_by_a_re_solve(tmp_path):
    """pyomo-lap plot records its figures in the folder's manifest: a re-solve replaces them
    with the rest (no stale figure of older results survives next to the new ones); a file
    of the user's in plots/ is foreign."""
    from pyomo_lap.plots.figures import plot_results
    out = _results(tmp_path / "res", lap=15.0)
    files = plot_results(out, figures=["speed"])
    assert files == [out / "plots" / "speed.png"]
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert manifest["plots/speed.png"]["sha256"] == hashlib.sha256(files[0].read_bytes()).hexdigest()
    _results(out, lap=14.0)
    assert not (out / "plots").exists()
    assert json.loads((out / "summary.json").read_text())["lap_time_s"] == 14.0
    # figures written elsewhere are not the folder's
    plot_results(out, out_dir=tmp_path / "figs", figures=["speed"])
    assert "figs/speed.png" not in json.loads((out / MANIFEST).read_text())["files"]
    # the user's own file among the figures
    plot_results(out, figures=["speed"])
    (out / "plots" / "my_sketch.png").write_bytes(b"mine")
    with pytest.raises(ValueError, match="my_sketch.png"):
        _results(out, lap=13.0)
    assert (out / "plots" / "my_sketch.png").read_bytes() == b"mine"


# ---- item 6: the swap, its recovery and the debris --------------------------------------------

@pytest.mark.unit
def test_an_error_between_the_two_moves_puts_the_old_folder_back(tmp_path, monkeypatch):
    out = _results(tmp_path / "res", lap=15.0)
    before = _tree(out)
    real = os.replace
    calls = []

    def replace(src, dst):
        calls.append((Path(src).name, Path(dst).name))
        if Path(src).name.startswith(".res.tmp-"):          # the new folder into place
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(writer_mod.os, "replace", replace)
    with pytest.raises(OSError):
        write_results(out, frame(), _summary(14.0))
    monkeypatch.setattr(writer_mod.os, "replace", real)
    moves = [c for c in calls if c[0] == "res" or c[0].startswith(".res.")]
    assert moves[0] == ("res", f".res.old-{os.getpid()}") and moves[1][0].startswith(".res.tmp-")
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


@pytest.mark.unit
def test_a_kill_between_the_two_moves_is_recovered_by_the_next_run(tmp_path, monkeypatch):
    """A run killed between the two moves (simulated: os.replace dies on the second move and
    the process "dies" too: nothing puts the old folder back) leaves OUT missing and the
    earlier results in .OUT.old-PID; the next run into OUT restores them and says so."""
    out = _results(tmp_path / "res", lap=15.0)
    before = _tree(out)
    real = os.replace

    class Killed(BaseException):
        pass

    def replace(src, dst):
        if Path(src).name.startswith((".res.tmp-", ".res.old-")):   # killed: the second move
            raise Killed()                                          # (and the restore) die
        return real(src, dst)

    monkeypatch.setattr(writer_mod.os, "replace", replace)
    monkeypatch.setattr(writer_mod.shutil, "rmtree", lambda *a, **k: None)   # no cleanup either
    with pytest.raises(Killed):
        write_results(out, frame(), _summary(14.0))
    monkeypatch.undo()
    # the dead process's debris, under a process id that no process has
    assert not out.exists()
    dead = dead_pid()
    (tmp_path / ".res.lock").unlink(missing_ok=True)      # SIGKILL: the lock file stays (and
    (tmp_path / ".res.lock").write_text(str(dead))        # does not block: the lock died too)
    debris = sorted(p.name for p in tmp_path.iterdir() if p.name != ".res.lock")
    assert len(debris) == 2 and debris[0] == f".res.old-{os.getpid()}", debris
    assert debris[1].startswith(".res.tmp-"), debris
    (tmp_path / debris[0]).rename(tmp_path / f".res.old-{dead}")
    (tmp_path / debris[1]).rename(tmp_path / f".res.tmp-{dead}-abc")
    said = []
    res_mod.check_output_dir(out, echo=said.append)
    assert _tree(out) == before                       # the earlier results are back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    text = " ".join(said)
    assert f".res.old-{dead}" in text and "restored" in text and ".res.tmp-" in text


@pytest.mark.unit
def test_unfinished_folders_of_dead_runs_are_removed_once_and_never_taken_as_results(tmp_path):
    """Kills during the export left hidden .res.tmp-PID-* folders (one with a 0-byte
    results.xlsx): plot, compare and validate refuse them; the next run removes those of
    dead processes (once, said), and keeps those of a running one."""
    out = _results(tmp_path / "res")
    dead = dead_pid()
    debris = tmp_path / f".res.tmp-{dead}-abc123"
    debris.mkdir()
    (debris / "summary.json").write_text(json.dumps(_summary(pyomo_lap_version="0.1.0")))
    frame().to_csv(debris / "trajectory.csv", index=False)
    (debris / "results.xlsx").write_bytes(b"")
    alive = tmp_path / f".res.tmp-{os.getpid()}-def456"
    alive.mkdir()
    for args in (["plot", str(debris), "--figure", "speed"], ["compare", str(out), str(debris)],
                 ["validate", str(debris), "--no-plots"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output)
        line = _one_line(r.output)
        assert "manifest" in line and str(debris.name) in line, line
    said = []
    res_mod.check_output_dir(out, echo=said.append)
    assert not debris.exists() and alive.exists()
    assert len(said) == 1 and debris.name in said[0], said
    said.clear()
    res_mod.check_output_dir(out, echo=said.append)
    assert said == []
    alive.rmdir()


@pytest.mark.unit
def test_ipopt_logs_of_dead_processes_are_removed(tmp_path):
    from pyomo_lap.solvers.lap.solver import IPOPT_LOG_PREFIX, remove_stale_ipopt_logs
    dead = tmp_path / f"{IPOPT_LOG_PREFIX}{dead_pid()}_abc.log"
    mine = tmp_path / f"{IPOPT_LOG_PREFIX}{os.getpid()}_def.log"
    other = tmp_path / "someone_else.log"
    for f in (dead, mine, other):
        f.write_text("log")
    assert remove_stale_ipopt_logs(tmp_path) == [dead]
    assert not dead.exists() and mine.exists() and other.exists()


# ---- item 5: a lock on --out ------------------------------------------------------------------

@pytest.mark.unit
def test_a_second_run_into_a_locked_folder_is_refused(tmp_path, monkeypatch):
    """Another process holds the lock on res (taken by hand: a lock file .res.lock with its
    process id, locked through another handle): an export and a solve into res are refused
    at once, naming the folder and the process; a stale lock file of a dead process does not
    block and is removed."""
    from filelock import FileLock
    out = _results(tmp_path / "res", lap=15.0)
    lock_path = tmp_path / ".res.lock"
    other = FileLock(str(lock_path), timeout=0)
    other.acquire()
    try:
        lock_path.write_text("4242")
        with pytest.raises(ValueError, match=r"another pyomo-lap run is writing into .*res.* \(pid 4242\)"):
            write_results(out, frame(), _summary(14.0))
        monkeypatch.chdir(tmp_path)
        r = CliRunner().invoke(main, ["solve", "--length", "300", "--out", "res", "--quiet"])
        assert r.exit_code == 2, r.output
        line = _one_line(r.stderr)
        assert "another pyomo-lap run is writing into" in line and "(pid 4242)" in line
        assert "building" not in r.output
    finally:
        other.release()
    assert json.loads((out / "summary.json").read_text())["lap_time_s"] == 15.0
    lock_path.write_text(str(dead_pid()))                        # a SIGKILLed run's lock file
    _results(out, lap=14.0)
    assert json.loads((out / "summary.json").read_text())["lap_time_s"] == 14.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]   # lock file gone


# ---- item 4: texts of the inputs are text in the workbook -------------------------------------

@pytest.mark.unit
def test_formulas_in_the_inputs_are_written_as_text(tmp_path):
    import openpyxl
    evil = '=HYPERLINK("http://example.com/x","click")'
    params = {"name": "=1+1", "description": evil, "m": 240.0}
    summary = _summary(track="=2+2", track_file="=cmd|'/c calc'!A1",
                       vehicle_file="http://example.com/v.toml",
                       track_processing=[{"step": "=SUM(1,2)", "count": 3, "detail": "=A1"}],
                       track_repairs=["@SUM(A1)"])
    out = write_results(tmp_path / "res", frame(), summary, vehicle_params=params)
    wb = openpyxl.load_workbook(out / "results.xlsx")
    found = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)
                assert cell.hyperlink is None, (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value.startswith(("=", "http")):
                    found.setdefault(cell.value, []).append((ws.title, cell.data_type))
    for text in (evil, "=1+1", "=2+2", "=cmd|'/c calc'!A1", "http://example.com/v.toml",
                 "=SUM(1,2)", "=A1"):
        assert text in found, (text, found)
        assert all(kind == "s" for _, kind in found[text]), found[text]
    vehicle = {r[0].value: r[1] for r in wb["vehicle"].iter_rows(min_row=2)}
    assert vehicle["description"].value == evil and vehicle["description"].data_type == "s"


# ---- item 9: compare writes into --out ---------------------------------------------------------

@pytest.mark.unit
def test_compare_writes_next_to_the_runs_never_into_them(tmp_path):
    a = _results(tmp_path / "A", lap=15.0)
    b = _results(tmp_path / "B", lap=15.5, v=19.5, q2=0.1)
    before = {p: _tree(p) for p in (a, b)}
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--sectors", "2"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "compare_A_vs_B"
    assert (out / "compare.csv").is_file() and (out / "compare.png").stat().st_size > 1000
    assert {p: _tree(p) for p in (a, b)} == before                 # the runs untouched
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    assert r.exit_code == 0 and (tmp_path / "cmp" / "compare_sectors.csv").is_file(), r.output
    for inside in (b / "compare_A", b, a / "x"):
        r = CliRunner().invoke(main, ["compare", str(a), str(b), "--out", str(inside)])
        assert r.exit_code == 2, r.output
        assert "results folder" in _one_line(r.output)
    assert {p: _tree(p) for p in (a, b)} == before


# ---- the tester's reproductions, end to end ---------------------------------------------------

def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "pyomo_lap.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.integration
def test_tester_item_1_resolve_keeps_the_users_files(tmp_path):
    """solve; notes.txt, mine/ and plots/ in the folder; solve again: refused (exit 2, one
    line), everything kept. Without the user's files the re-solve replaces the folder,
    the figures included."""
    solve = ["solve", "--length", "300", "--out", "res", "--quiet"]
    p = _cli(*solve, cwd=tmp_path)
    out_, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    res = tmp_path / "res"
    (res / "notes.txt").write_text("precious\n")
    (res / "mine").mkdir()
    r = CliRunner().invoke(main, ["plot", str(res), "--out", str(res / "plots"), "--figure", "speed"])
    assert r.exit_code == 0, r.output
    before = _tree(res)
    p = _cli(*solve, cwd=tmp_path)
    out_, err = p.communicate(timeout=600)
    assert p.returncode == 2, err
    line = _one_line(err)
    assert str(res) in line and "'mine'" in line and "building" not in out_
    assert _tree(res) == before
    (res / "notes.txt").unlink()
    (res / "mine").rmdir()
    p = _cli(*solve, cwd=tmp_path)
    out_, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert not (res / "plots").exists() and (res / "summary.json").is_file()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["res"]


@pytest.mark.integration
def test_a_solve_into_a_folder_another_process_writes_into_is_refused(tmp_path):
    """Two processes and one --out: the first holds the lock on res (as a solve does from
    before its build to the end of its export; here it holds it until told to stop), the
    solve started meanwhile is refused at once, naming the folder and the first process;
    once that one has ended, the same solve writes its results."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pyomo_lap.results.table import output_lock; "
         "lock = output_lock('res').acquire(); print('locked', flush=True); "
         "sys.stdin.readline(); lock.release()"],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    try:
        assert holder.stdout.readline().strip() == "locked"
        solve = ["solve", "--length", "300", "--out", "res", "--quiet"]
        p = _cli(*solve, cwd=tmp_path)
        out_, err = p.communicate(timeout=600)
        assert p.returncode == 2, err
        line = _one_line(err)
        assert line == (f"error: another pyomo-lap run is writing into {tmp_path / 'res'} "
                        f"(pid {holder.pid}); wait for it to finish or choose another --out "
                        "(nothing was touched)")
        assert "building" not in out_ and not (tmp_path / "res").exists()
    finally:
        holder.communicate("\n", timeout=60)
    p = _cli(*solve, cwd=tmp_path)
    out_, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert out_.count("results written to") == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["res"]        # no lock file left


@pytest.mark.unit
def test_the_csv_reads_back_to_the_parquet_values_with_units_and_gaps(tmp_path):
    """trajectory.csv holds every number at full precision (read back equal to the parquet
    file's, a second writer), the units in its headers, a missing value as an empty cell."""
    df = frame()
    df["q2"] = df["q2"] * (1.0 + 1e-13) + 1e-17        # digits beyond %.10g
    df.loc[3, "speed"] = np.nan
    folder = write_results(tmp_path / "r", df, _summary())
    header = (folder / "trajectory.csv").read_text().splitlines()[0]
    assert '"q2 [m]"' in header and '"speed [m/s]"' in header
    back = res_mod.read_trajectory(folder / "trajectory.csv")
    stored = pd.read_parquet(folder / "trajectory.parquet")
    for c in df.columns:
        a, b = back[c].to_numpy(dtype=float), stored[c].to_numpy(dtype=float)
        assert np.array_equal(a, b, equal_nan=True), c
        assert np.array_equal(a, df[c].to_numpy(dtype=float), equal_nan=True), c
    assert np.isnan(back.loc[3, "speed"]) and ",," in (folder / "trajectory.csv").read_text()
