"""Inputs of the results-folder commands that must end in one line and exit code 2 (issue 46):
a fixed step finer than the run's mesh resolves, a damaged ``solution.npz``, a ``summary.json``
or manifest nested too deep."""
from __future__ import annotations

import pandas as pd
import pytest
from _shared import copy_run
from click.testing import CliRunner

from pyomo_lap.analysis.compare import resample_channels
from pyomo_lap.cli import main
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
    if command == "solve" and damaged != "summary.json":
        pytest.skip("a warm start reads the manifest with solution.npz (item 2)")
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
