"""The names and messages a user meets (issue 46, item 5): a results folder named like a
bundled track does not hide it; ``pyomo-lap check FILE`` reads a track or a car file;
assumptions said once; GPS keys named ``lat``/``lon`` decide the order; the telemetry
comparison's unit words; the report's run labels, distances and formats, and CSV cells that
would be formulas."""
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap.track.loading import load_track

ROOT = Path(__file__).resolve().parents[1]


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


def _check(args):
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    return CliRunner().invoke(main, ["check", *args])


@pytest.mark.component
def test_check_takes_a_track_or_a_car_file_by_its_kind(tmp_path):
    """``pyomo-lap check FILE``: a .csv is the track, a car .toml the vehicle, an arc-track
    .toml the track (its [[segment]] tables); --track/--vehicle still work; two tracks are
    refused with exit 2."""
    track = tmp_path / "ring.csv"
    rows = ["x,y,z"] + [f"{150 * np.cos(a):.6f},{150 * np.sin(a):.6f},0"
                        for a in np.linspace(0, 2 * np.pi, 361)[:-1]]
    track.write_text("\n".join(rows) + "\n")
    car = tmp_path / "mycar.toml"
    car.write_text((ROOT / "models" / "fsae.toml").read_text().replace('name = "fsae"',
                                                                        'name = "mycar"'))
    r = _check([str(track)])
    assert r.exit_code == 0, r.output
    assert "track ring: 942." in r.output            # 2 pi 150 m = 942.5 m
    r = _check([str(car)])
    assert r.exit_code == 0, r.output
    assert "vehicle mycar:" in r.output
    r = _check([str(car), str(track)])
    assert r.exit_code == 0, r.output
    assert "vehicle mycar:" in r.output and "track ring:" in r.output
    r = _check([str(ROOT / "data" / "tracks" / "dymos_oval.toml")])
    assert r.exit_code == 0, r.output
    assert "track dymos_oval:" in r.output
    r = _check(["--track", str(track), "--vehicle", str(car)])
    assert r.exit_code == 0 and "vehicle mycar:" in r.output, r.output
    r = _check([str(track), "--track", "monza"])
    assert r.exit_code == 2 and "a second track" in r.output, r.output


@pytest.mark.unit
def test_the_kml_pairs_banking_assumption_is_said_once():
    """A KML left/right boundary pair has no banking: the assumed 0 rad is one record (the
    reference line rebuilt from the midpoints' track does not add a second one)."""
    tr = load_track(ROOT / "tests" / "data" / "fastest-lap" / "catalunya_left.kml")
    quantities = [a["quantity"] for a in tr.assumptions]
    assert quantities.count("banking") == 1, quantities
    assert len(quantities) == len(set(quantities)), quantities


@pytest.mark.unit
def test_json_keys_named_lat_and_lon_decide_the_order(tmp_path):
    """A raw zaggyai JSON file (keys 'lat', 'lon') at 50.33 N, 6.94 E: read swapped it would
    be valid coordinates too (6.94 N, 50.33 E), but the keys' names decide: read as named, no
    "cannot be told" warning from check."""
    import json

    from click.testing import CliRunner

    from pyomo_lap.cli import main
    from pyomo_lap.track.gps import lat_lon_order_warnings
    a = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    lat, lon = 50.33 + 0.004 * np.sin(a), 6.94 + 0.008 * np.cos(a)
    pts = [{"lat": int(round(y * 1e7)), "lon": int(round(x * 1e7)), "elev": 100000}
           for y, x in zip(lat, lon)]
    path = tmp_path / "loop.json"
    path.write_text(json.dumps({"name": "Loop", "short_name": "", "pts": pts}))
    tr = load_track(path)
    assert tr.provenance["lat_lon_order"]["order"] == "lat,lon"
    assert lat_lon_order_warnings(tr.processing_steps) == []
    r = CliRunner().invoke(main, ["check", str(path)])
    assert r.exit_code == 0, r.output
    assert "cannot be told" not in r.output and "track warning" not in r.output, r.output
