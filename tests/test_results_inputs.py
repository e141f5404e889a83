"""Inputs of the results-folder commands that must end in one line and exit code 2 (issue 46):
a fixed step finer than the run's mesh resolves, a damaged ``solution.npz``, a ``summary.json``
or manifest nested too deep."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from _shared import copy_run
from click.testing import CliRunner

from pyomo_lap.analysis.compare import resample_channels
from pyomo_lap.cli import main
from pyomo_lap.results.solution_file import SolutionFileError, read_solution
from pyomo_lap.util.steps import ROWS_PER_INTERVAL, check_step


def _one_line_exit_2(r, *words):
    """The command refused with exit code 2 and one line holding ``words``, no traceback."""
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    assert "Traceback" not in r.output
    for w in words:
        assert w in lines[0], lines[0]


# ---- item 1: a step finer than the mesh --------------------------------------------------

@pytest.mark.unit
def test_check_step_rule():
    """100 rows per interval at most: 10 intervals over 100 m allow 0.1 m, not 0.09 m."""
    check_step(0.1, 100.0, 10)
    with pytest.raises(ValueError, match="at least 0.1 m"):
        check_step(0.09, 100.0, 10)
    assert ROWS_PER_INTERVAL == 100


@pytest.mark.unit
def test_resample_refuses_a_step_of_a_nanometre():
    """Compare --every 1e-9m: 1.5e11 rows for three points; refused before any is made."""
    df = pd.DataFrame({"s": [0.0, 75.0, 150.0], "t": [0.0, 1.0, 2.0], "v": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="--every 1e-09 m: expected a step of at least"):
        resample_channels(df, "1e-9m")
    with pytest.raises(ValueError, match="--every 1e-09 s: expected a step of at least"):
        resample_channels(df, "1e-9s")
    assert len(resample_channels(df, "1m")) == 151


@pytest.mark.integration
def test_export_refuses_a_step_finer_than_the_mesh(sector_run, tmp_path):
    """`export --every 1e-9`: exit 3 (a 1 TiB MemoryError) before; one line, exit 2, no folder."""
    run = copy_run(sector_run.folder, tmp_path / "run")
    r = CliRunner().invoke(main, ["export", str(run), "--every", "1e-9", "--out",
                                  str(tmp_path / "ex")])
    _one_line_exit_2(r, "--every 1e-09 m", "at least")
    assert not (tmp_path / "ex").exists()


@pytest.mark.integration
def test_compare_refuses_a_step_finer_than_the_mesh(sector_run, tmp_path):
    """`compare --every 1e-9m`: a MemoryError traceback before; one line, exit 2."""
    a = copy_run(sector_run.folder, tmp_path / "a")
    b = copy_run(sector_run.folder, tmp_path / "b")
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--every", "1e-9m", "--out",
                                  str(tmp_path / "cmp")])
    _one_line_exit_2(r, "--every 1e-09 m", "at least")


@pytest.mark.unit
def test_solve_refuses_a_step_finer_than_the_mesh_before_building(tmp_path):
    """150 m at 10 m elements: refused before the model is built (no folder, no solve)."""
    r = CliRunner().invoke(main, ["solve", "--length", "150", "--every", "1e-9", "--out",
                                  str(tmp_path / "run"), "-q"])
    _one_line_exit_2(r, "every = 1e-09 m", "at least")
    assert not (tmp_path / "run").exists()


# ---- item 3: JSON of a results folder nested too deep ------------------------------------

_DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.unit
def test_summary_read_nested_too_deep(tmp_path):
    """A RecursionError before; one line naming the file."""
    from pyomo_lap.folders.json_file import FolderJSONError
    from pyomo_lap.results.summary import Summary
    (tmp_path / "summary.json").write_text(_DEEP)
    with pytest.raises(FolderJSONError, match="summary.json: is nested too deep"):
        Summary.read(tmp_path)


@pytest.mark.integration
@pytest.mark.parametrize("command", ["plot", "report", "validate", "export", "compare", "solve"])
@pytest.mark.parametrize("damaged", ["summary.json", ".pyomo_lap_manifest.json"])
def test_commands_refuse_json_nested_too_deep(sector_run, tmp_path, command, damaged):
    """summary.json or the manifest nested 100 000 deep: one line naming the file, exit 2
    (a RecursionError traceback, or exit 3, before)."""
    run = copy_run(sector_run.folder, tmp_path / "run")
    (run / damaged).write_text(_DEEP)
    args = {"plot": ["plot", str(run)], "report": ["report", str(run)],
            "validate": ["validate", str(run)],
            "export": ["export", str(run), "--every", "1", "--out", str(tmp_path / "ex")],
            "compare": ["compare", str(copy_run(sector_run.folder, tmp_path / "a")), str(run),
                        "--out", str(tmp_path / "cmp")],
            "solve": ["solve", "--length", "300", "--warm-start", str(run), "--out",
                      str(tmp_path / "new"), "-q"]}[command]
    r = CliRunner().invoke(main, args)
    _one_line_exit_2(r, damaged, "nested too deep")


# ---- item 2: a damaged solution.npz -------------------------------------------------------

def _arrays(n=5):
    s = np.linspace(0.0, 40.0, n)
    return {"s": s, "var:t": s / 10.0, "var:vehicle.gravity": np.array([9.81]),
            "dual:ode": np.ones(n - 1), "duals:ode": s[1:], "dualr:ode": np.array(["1"] * (n - 1))}


def _npz(tmp_path, **arrays):
    f = tmp_path / "solution.npz"          # no manifest: the content is checked on its own
    np.savez(f, **arrays)
    return f


@pytest.mark.unit
def test_read_solution_accepts_the_arrays_of_each_kind(tmp_path):
    """One array of each name the writer writes (variables, multipliers, their points, rows)."""
    assert set(read_solution(_npz(tmp_path, **_arrays()))) == set(_arrays())


@pytest.mark.integration
def test_read_solution_accepts_a_solved_run(sector_run):
    """Every array a solve writes passes the checks, with the manifest's SHA-256."""
    with np.load(sector_run.folder / "solution.npz") as d:
        names = set(d.files)
    assert set(read_solution(sector_run.folder)) == names


@pytest.mark.unit
@pytest.mark.parametrize("change, words", [
    ({"s": np.array([])}, "array 's'"),
    ({"s": np.array("abc")}, "array 's'"),
    ({"s": np.full(5, np.nan)}, "not finite and strictly increasing"),
    ({"var:t": np.zeros((5, 3))}, "array 'var:t'"),
    ({"var:t": np.array(["a"] * 5)}, "array 'var:t'"),
    ({"var:t": np.full(5, np.nan), "var:vehicle.gravity": np.array([np.nan])},
     "no variable has a value"),
    ({"big": np.zeros(10)}, "holds an array 'big'"),
    ({"duals:ode": np.ones(7)}, "expected that of 'dual:ode'"),
    ({"var:q": np.zeros(5 * 64 + 1)}, "at most 64 per mesh point"),
])
def test_read_solution_refuses_a_damaged_file(tmp_path, change, words):
    """Each was accepted before (export exit 0) or failed inside numpy."""
    with pytest.raises(SolutionFileError, match=re.escape(words)):
        read_solution(_npz(tmp_path, **{**_arrays(), **change}))


@pytest.mark.unit
def test_read_solution_truncated_is_one_line(tmp_path):
    """A file cut short: BadZipFile, exit 3 'a bug' before."""
    f = _npz(tmp_path, **_arrays())
    f.write_bytes(f.read_bytes()[:200])
    with pytest.raises(SolutionFileError, match="is not a complete .npz file"):
        read_solution(f)


@pytest.mark.integration
@pytest.mark.parametrize("command", ["export", "solve"])
@pytest.mark.parametrize("damage", ["truncated", "empty s", "all NaN"])
def test_commands_refuse_a_damaged_solution(sector_run, tmp_path, command, damage):
    """Export and solve --warm-start: exit 3 (truncated) or exit 0 (empty s, all NaN) before;
    one line naming solution.npz, exit 2 (its SHA-256 is not the manifest's)."""
    run = copy_run(sector_run.folder, tmp_path / "run")
    f = run / "solution.npz"
    if damage == "truncated":
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    else:
        with np.load(f) as d:
            a = {k: d[k] for k in d.files}
        a = ({**a, "s": np.array([])} if damage == "empty s" else
             {k: np.full(v.shape, np.nan) if v.dtype.kind == "f" else v for k, v in a.items()})
        np.savez(f, **a)
    args = (["export", str(run), "--every", "1", "--out", str(tmp_path / "ex")]
            if command == "export" else
            ["solve", "--length", "300", "--warm-start", str(run), "--out", str(tmp_path / "new"),
             "-q"])
    r = CliRunner().invoke(main, args)
    _one_line_exit_2(r, "solution.npz", "SHA-256")
