"""The names and messages a user meets (issue 46, item 5): a results folder named like a
bundled track does not hide it; ``pyomo-lap check FILE`` reads a track or a car file;
assumptions said once; GPS keys named ``lat``/``lon`` decide the order; the telemetry
comparison's unit words; the report's run labels, distances and formats, and CSV cells that
would be formulas."""
from pathlib import Path

import pytest

from pyomo_lap.track.loading import load_track


@pytest.mark.unit
def test_a_local_folder_named_like_a_bundled_track_does_not_hide_it(tmp_path, monkeypatch):
    """After ``--out monza`` the folder ``monza`` is in the current folder: ``monza`` is
    still the bundled track (docs/tracks.md), ``./monza`` the local folder (not a track)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "monza").mkdir()
    tr = load_track("monza")
    assert tr.name == "monza"
    assert tr.provenance.get("display_name") == "Autodromo Nazionale di Monza"
    with pytest.raises(ValueError, match="is a folder"):
        load_track("./monza")


@pytest.mark.component
def test_check_from_a_folder_holding_a_results_folder_of_a_bundled_name(tmp_path, monkeypatch):
    """``pyomo-lap check --track monza`` run beside a folder ``monza``: exit 0."""
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "monza").mkdir()
    r = CliRunner().invoke(main, ["check", "--track", "monza"])
    assert r.exit_code == 0, r.output
    assert "is a folder" not in r.output
