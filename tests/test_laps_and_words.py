"""A sector on a closed loop is at most one lap (refused with the loop's length, before
anything is built), and the words of `pyomo-lap solve`: decoded solver messages, 'lap time'
for a lap and 'sector time' for a sector, absolute paths of the input files."""
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from _tracks import write_ring_csv
from pyomo_lap import load_track, load_vehicle
from pyomo_lap.track import checks as tc
from pyomo_lap.cli import main
from pyomo_lap.track.checks import TrackDataError


# ------------------------------------------------------------------ a sector is at most one lap
@pytest.mark.unit
def test_a_sector_longer_than_the_loop_is_refused(tmp_path):
    from pyomo_lap import build_model, solve_sector
    f = write_ring_csv(tmp_path / "ring.csv", {"width_left": 4.0, "width_right": 4.0})
    ring = load_track(f)
    assert ring.closed and ring.length == pytest.approx(2 * math.pi * 100.0, rel=2e-3)
    L = ring.length
    with pytest.raises(TrackDataError, match=rf"longer than one lap.*{L:.1f} m long.*--full-lap") as e:
        tc.check_sector(ring, 100.0, 2.2 * L)
    assert e.value.findings[0].kind == "longer_than_lap"
    with pytest.raises(TrackDataError, match="longer than one lap"):
        tc.check_sector(ring, 0.0, L + 0.01, repair=True)      # never "repaired"
    assert tc.check_sector(ring, 300.0, L) == (300.0, L, [])    # one lap, from anywhere
    with pytest.raises(ValueError, match=rf"longer than one lap.*{L:.1f} m long"):
        build_model(ring, load_vehicle("fsae"), start=0.0, length=1.5 * L, nfe=10)
    said = []
    with pytest.raises(TrackDataError, match="longer than one lap"):
        solve_sector(track=f, length=8000.0, out_dir=None, echo=said.append)
    assert not any("building" in s for s in said)
    r = CliRunner().invoke(main, ["solve", "--track", str(f), "--length", "8000",
                                  "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and f"{L:.1f} m long" in r.output and "--full-lap" in r.output
    assert "default" not in r.output and not (tmp_path / "x").exists()
    r = CliRunner().invoke(main, ["solve", "--track", str(f), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--length was not given: its default is 2000 m" in r.output


# ------------------------------------------------------------------ words
@pytest.mark.unit
def test_solver_messages_are_decoded():
    from pyomo_lap.solvers.report import SolveReport, decode_solver_message
    assert decode_solver_message("Ipopt 3.11.9\\x3a Optimal Solution Found") == \
        "Ipopt 3.11.9: Optimal Solution Found"
    assert decode_solver_message("a\\x3ab\\x2C c") == "a:b, c"
    assert decode_solver_message("plain: text \\n kept") == "plain: text \\n kept"
    assert decode_solver_message(None) == ""
    rep = SolveReport(True, "optimal", "ok", "Ipopt 3.14.19\\x3a Optimal Solution Found", 10,
                      1.0, "ipopt", exit_message="Optimal Solution Found.")
    assert rep.message == "Ipopt 3.14.19: Optimal Solution Found"


@pytest.mark.unit
def test_the_last_line_says_lap_time_for_a_lap_and_sector_time_for_a_sector():
    from pyomo_lap.api import result_line
    summary = dict(lap_time_s=61.25, length_m=1428.3, mean_speed_kmh=83.9, max_speed_kmh=101.2,
                   sectors=[dict(time_s=20.0), dict(time_s=21.0), dict(time_s=20.25)])
    lap = result_line(summary, periodic=True)
    assert lap.startswith("lap time 61.250 s over 1428 m") and "sector time" not in lap
    assert result_line(summary, periodic=False).startswith("sector time 61.250 s over 1428 m")


@pytest.mark.unit
def test_input_files_are_absolute_resolved_paths(tmp_path, monkeypatch):
    from pyomo_lap.api.results import _input_files
    from pyomo_lap.vehicle.car import models_dir
    (tmp_path / "sub").mkdir()
    write_ring_csv(tmp_path / "ring.csv")
    (tmp_path / "car.toml").write_text((models_dir() / "fsae.toml").read_text())
    monkeypatch.chdir(tmp_path / "sub")
    tr = load_track("../ring.csv")
    files = _input_files(tr, "../car.toml")
    assert files["track_file"] == str((tmp_path / "ring.csv").resolve())
    assert files["vehicle_file"] == str((tmp_path / "car.toml").resolve())
    assert Path(_input_files(tr, "fsae")["vehicle_file"]).is_absolute()
