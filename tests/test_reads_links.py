"""``pyomo-lap plot`` and ``validate`` writing into a results folder (issue 34, items 3, 4 and
parts of 11).

* item 3: ``plot`` never writes through a link: a results folder holding a link (a figure
  ``plots/speed.png`` or the folder ``plots/`` linked out of it) is refused with one line,
  and nothing outside is touched; every figure is written to a temporary file moved onto its
  name (a link there is replaced itself, never written through);
* item 4: ``validate`` refuses a linked ``validation.json`` and a ``defects.csv`` of the
  user's (not in the folder's manifest with its SHA-256), touching nothing; what it writes is
  recorded in the manifest (``by = "validate"``), so the next solve replaces it, and a
  validation file the manifest does not list is the user's, kept by a solve;
* item 11: (a) a vehicle, track or folder name with malformed mathtext is drawn as text;
  (b) ``plot`` and ``validate`` refused by another run's lock say to wait (not to choose
  another ``--out``); (c) a results folder missing between the two moves of an export is
  named with the ``.NAME.old-PID`` folder of its earlier results and what to do.

Unit tests use a small synthetic results folder (:func:`pyomo_lap.results.table.write_results`,
no solve); the integration tests solve 300 m as the tester did (``solve --length 300``).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_plots import VEHICLE, _run  # noqa: E402 - the synthetic run of the figures' tests

from pyomo_lap.cli import main  # noqa: E402
from pyomo_lap.results.table import write_results  # noqa: E402

MANIFEST = ".pyomo_lap_manifest.json"
MATHTEXT = r"car $\frac{1}{$"
"""A name whose two dollar signs make matplotlib parse it as (malformed) mathtext."""


def _quiet(*_args, **_kwargs):
    pass


def _dead_pid() -> int:
    """A process id that no process has: above the kernel's largest."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    except OSError:
        return 2 ** 22 + 1


def _one_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    return lines[0]


@pytest.fixture
def results(tmp_path):
    """A results folder as ``pyomo-lap solve`` writes it (synthetic run, with a manifest)."""
    df, summary = _run(n=81)
    return write_results(tmp_path / "base", df, summary, vehicle_params=VEHICLE)


@pytest.fixture
def solved(sector_run):
    """``pyomo-lap solve --length 300 --out base``: the session's shared run
    (tests/_shared.py), copied by each test that changes it."""
    return sector_run.folder


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


class _Defects:
    """What :func:`pyomo_lap.api.validate._write_validation` and ``plot_defects`` read of a
    DefectReport: the elements' table."""

    elements = pd.DataFrame({"element": [1, 2], "s_start": [0.0, 10.0], "s_end": [10.0, 20.0],
                             "eps": [1e-3, 2e-3], "worst": ["q1", "q2"]})


# ---- the two functions of the rule for links ----------------------------------------------------

@pytest.mark.unit
def test_refuse_links_names_the_first_link_without_following_it(tmp_path):
    from pyomo_lap.folders.links import FolderNotReplaceableError, is_link, refuse_links
    folder = tmp_path / "res"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "f.txt").write_text("x")
    refuse_links(folder, "results folder 'res'")              # no link: nothing said
    refuse_links(tmp_path / "missing", "results folder 'missing'")
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "a" / "b" / "deep").symlink_to(outside)
    (folder / "z").symlink_to(outside / "nothing")             # dangling, shallower
    assert is_link(folder / "z") and not is_link(folder / "a") and not is_link(tmp_path / "none")
    with pytest.raises(FolderNotReplaceableError) as e:
        refuse_links(folder, "results folder 'res'")
    line = str(e.value)
    assert "\n" not in line and "'z'" in line and "nothing was touched" in line
    link = tmp_path / "link"
    link.symlink_to(folder)
    with pytest.raises(FolderNotReplaceableError, match="is a symbolic link"):
        refuse_links(link, "results folder 'link'")


# ---- item 3: plot never writes through a link -----------------------------------------------------

@pytest.mark.unit
def test_plot_refuses_a_figure_linked_out_of_the_results_folder(results, tmp_path):
    """plots/speed.png linked to a file outside: refused (one line naming the link), the file
    outside keeps its bytes, no figure is written."""
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file")
    (results / "plots").mkdir()
    (results / "plots" / "speed.png").symlink_to(outside)
    r = CliRunner().invoke(main, ["plot", str(results), "--figure", "speed"])
    assert r.exit_code == 2, r.output
    line = _one_line(r.output)
    assert "link" in line and "plots/speed.png" in line and "nothing was touched" in line, line
    assert outside.read_bytes() == b"the user's file"
    assert sorted(p.name for p in (results / "plots").iterdir()) == ["speed.png"]


@pytest.mark.unit
def test_plot_refuses_a_plots_folder_linked_out_of_the_results_folder(results, tmp_path):
    from pyomo_lap.plots.figures import plot_results
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (results / "plots").symlink_to(outside)
    with pytest.raises(ValueError, match="holds a symbolic link.*plots"):
        plot_results(results, figures=["speed"], dpi=40)
    r = CliRunner().invoke(main, ["plot", str(results), "--figure", "speed"])
    assert r.exit_code == 2 and "link" in _one_line(r.output), r.output
    assert list(outside.iterdir()) == []                      # no figure went there
    manifest = json.loads((results / MANIFEST).read_text())["files"]
    assert not any(rel.startswith("plots/") for rel in manifest)


@pytest.mark.unit
def test_figures_replace_a_link_in_their_folder_never_write_through_it(results, tmp_path):
    """A figure is written to a temporary file and moved onto its name: in a folder of the
    user's (--out), a link named speed.png is refused (issue 45: a link is the user's, never
    replaced nor followed), its target untouched, nothing written; once it is gone, the
    figures are written and recorded in the folder's manifest (kind ``files``); no temporary
    file is left."""
    from pyomo_lap.folders.links import FolderNotReplaceableError
    from pyomo_lap.plots.figures import plot_results
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "speed.png").symlink_to(target)
    with pytest.raises(FolderNotReplaceableError, match="speed.png is a symbolic link"):
        plot_results(results, out_dir=figs, figures=["speed"], formats=("png", "pdf"), dpi=40)
    assert target.read_bytes() == b"keep me"
    assert sorted(p.name for p in figs.iterdir()) == ["speed.png"]
    (figs / "speed.png").unlink()
    files = plot_results(results, out_dir=figs, figures=["speed"], formats=("png", "pdf"), dpi=40)
    assert files == [figs / "speed.png", figs / "plots.pdf"]
    assert target.read_bytes() == b"keep me"
    assert (figs / "speed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (figs / "plots.pdf").read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in figs.iterdir()) == [MANIFEST, "plots.pdf", "speed.png"]
    listed = json.loads((figs / MANIFEST).read_text())
    assert listed["kind"] == "files" and set(listed["files"]) == {"plots.pdf", "speed.png"}


# ---- item 4: validate writes no file through a link and replaces none of the user's -------------

@pytest.mark.integration
def test_validate_refuses_a_linked_validation_json(solved, tmp_path):
    folder = _copy(solved, tmp_path / "base")
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (folder / "validation.json").symlink_to(outside)
    r = CliRunner().invoke(main, ["validate", str(folder)])
    assert r.exit_code == 2, r.output
    line = _one_line(r.output)
    assert "link" in line and "validation.json" in line and "nothing was touched" in line, line
    assert outside.read_text() == "{}"
    assert not (folder / "defects.csv").exists()


@pytest.mark.integration
def test_validate_keeps_a_users_defects_csv_and_records_its_own_files(solved, tmp_path):
    """A defects.csv of the user's is refused (one line, nothing touched); once it is moved
    out, validate writes its files and records them in the manifest (by = "validate"); the
    next solve replaces them, and a validation file the manifest does not list is the user's:
    a solve refuses to replace the folder and keeps it."""
    folder = _copy(solved, tmp_path / "base")
    (folder / "defects.csv").write_text("my,own\n1,2\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = CliRunner().invoke(main, ["validate", str(folder)])
    assert r.exit_code == 2, r.output
    line = _one_line(r.output)
    assert "defects.csv" in line and "nothing was touched" in line, line
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    (folder / "defects.csv").unlink()
    r = CliRunner().invoke(main, ["validate", str(folder), "-q"])
    assert r.exit_code == 0, r.output
    listed = json.loads((folder / MANIFEST).read_text())["files"]
    for name in ("validation.json", "defects.csv", "validation_defects.png",
                 "validation_replay.png"):
        assert listed[name]["by"] == "validate", name
    r = CliRunner().invoke(main, ["validate", str(folder), "-q", "--no-plots"])   # its own: again
    assert r.exit_code == 0, r.output
    from pyomo_lap.api import solve_sector
    solve_sector(length=300.0, out_dir=folder, echo=_quiet)           # replaces them
    assert not (folder / "defects.csv").exists() and not (folder / "validation.json").exists()
    (folder / "defects.csv").write_text("my,own\n")
    with pytest.raises(ValueError, match="defects.csv"):
        solve_sector(length=300.0, out_dir=folder, echo=_quiet)
    assert (folder / "defects.csv").read_text() == "my,own\n"


@pytest.mark.unit
def test_a_validation_file_the_manifest_does_not_list_is_the_users(results):
    """Without a solve: the manifest's rule. validate's files written through
    _write_validation are recorded and replaced by the next export; a validation.json of the
    user's is kept by it."""
    from pyomo_lap.api.validate import _claim_folder, _write_validation
    writers = _claim_folder(results, {}, False, False, None)
    try:
        _write_validation(writers, {"checks": [], "verdict": "pass"}, _Defects(), [], 0.0,
                          _quiet)
    finally:
        writers[0].release()
    listed = json.loads((results / MANIFEST).read_text())["files"]
    assert listed["validation.json"]["by"] == listed["defects.csv"]["by"] == "validate"
    df, summary = _run(n=81)
    write_results(results, df, summary, vehicle_params=VEHICLE)
    assert not (results / "validation.json").exists()
    (results / "validation.json").write_text("mine")
    with pytest.raises(ValueError, match="validation.json"):
        write_results(results, df, summary, vehicle_params=VEHICLE)
    assert (results / "validation.json").read_text() == "mine"


# ---- item 11 (a): names drawn as text -------------------------------------------------------------

@pytest.mark.unit
def test_names_with_dollar_signs_are_drawn_as_text(tmp_path):
    """A vehicle and a track named with malformed mathtext, a reference folder and a folder
    under validation named so: every figure is drawn, the names as written."""
    import matplotlib.pyplot as plt
    from pyomo_lap.plots import figures as plots
    from pyomo_lap.plots.figures import plot_results
    from pyomo_lap.plots.validation import plot_defects
    df, summary = _run(n=81)
    summary.update(vehicle=MATHTEXT, track="oval $1$ $x^$")
    folder = write_results(tmp_path / "res", df, summary, vehicle_params=VEHICLE)
    ref = write_results(tmp_path / "ref $\\x$", df, summary, vehicle_params=VEHICLE)
    files = plot_results(folder, figures=["speed", "gg"], reference_dir=ref, dpi=40)
    assert [f.name for f in files] == ["speed.png", "gg.png"]
    fig = plots.figure_speed(df, summary, VEHICLE)
    fig.canvas.draw()
    title = fig.axes[0].title
    text, mathtext = title._preprocess_math(title.get_text())    # what matplotlib draws
    assert MATHTEXT in text and "oval $1$ $x^$" in text and not mathtext
    plt.close(fig)
    from pyomo_lap.folders.writer import ResultsWriter
    with ResultsWriter.adding(tmp_path / "d", "validate") as writer:
        path = plot_defects(_Defects(), 0.0, writer, "d.png", MATHTEXT)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- item 11 (b): the lock's refusal fits the command ---------------------------------------------

@pytest.mark.unit
def test_plot_and_validate_refused_by_a_lock_say_to_wait(results):
    from filelock import FileLock
    lock_path = results.parent / ".base.lock"
    other = FileLock(str(lock_path), timeout=0)
    other.acquire()
    try:
        lock_path.write_text("4242")
        for cmd in ("plot", "validate"):
            r = CliRunner().invoke(main, [cmd, str(results)])
            assert r.exit_code == 2, (cmd, r.output)
            line = _one_line(r.output)
            assert "another pyomo-lap run is writing into" in line and "(pid 4242)" in line, line
            assert "wait for it to finish" in line and "--out" not in line, line
            assert f"pyomo-lap {cmd}" in line and "nothing was touched" in line, line
    finally:
        other.release()
    assert not (results / "plots").exists() and not (results / "validation.json").exists()


# ---- item 11 (c): a results folder that a run is replacing ----------------------------------------

@pytest.mark.unit
def test_a_folder_missing_between_the_two_moves_is_named_with_its_earlier_results(results):
    """NAME missing, .NAME.old-PID there: plot and validate name the .old folder, say whether
    its run still runs, and what to do."""
    parent = results.parent
    dead = _dead_pid()
    old = parent / f".base.old-{dead}"
    results.rename(old)
    for cmd in ("plot", "validate"):
        r = CliRunner().invoke(main, [cmd, str(results)])
        assert r.exit_code == 2, (cmd, r.output)
        line = _one_line(r.output)
        assert old.name in line and f"pid {dead}" in line and "stopped" in line, line
        assert "pyomo-lap solve" in line and "move" in line, line
    running = parent / f".base.old-{os.getpid()}"
    old.rename(running)
    r = CliRunner().invoke(main, ["plot", str(results)])
    line = _one_line(r.output)
    assert r.exit_code == 2 and running.name in line and "wait for it to finish" in line, line
    assert "stopped" not in line
    running.rename(results)
    r = CliRunner().invoke(main, ["plot", str(parent / "nothing")])
    assert r.exit_code == 2 and "no such folder" in _one_line(r.output), r.output
