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


# ------------------------------------------------------------- report labels, tables, CSV cells
@pytest.mark.unit
def test_the_same_run_twice_is_two_labels_none_with_a_bare_slash(tmp_path, monkeypatch):
    """``report base base`` from the folder holding ``base``: the labels are ``base`` and
    ``base (2)`` (they were ``/base`` twice: the relative path's parent has no name); two
    folders ``a/base`` and ``b/base`` keep their parents' names."""
    from pyomo_lap.analysis.compare import unique_run_names
    monkeypatch.chdir(tmp_path)
    assert unique_run_names(["base", "base"]) == ["base", "base (2)"]
    assert unique_run_names([tmp_path / "a" / "base", tmp_path / "b" / "base"]) == \
        ["a/base", "b/base"]
    assert unique_run_names(["x", "y"]) == ["x", "y"]


@pytest.mark.unit
def test_the_reports_tables_write_distances_as_plain_numbers():
    """The Runs table's 'to [m]' of a 20724.1 m lap reads 20724, not 2.072e+04; other values
    keep 4 significant digits."""
    import pandas as pd

    from pyomo_lap.plots.report import _table_html
    html = _table_html(pd.DataFrame({"to [m]": [20724.1], "time [s]": [3.7243], "x": [0.5]}))
    assert "<td>20724</td>" in html and "e+" not in html
    assert "<td>3.724</td>" in html and "<td>0.5</td>" in html


def _corner(name):
    return {"number": 1, "name": name, "direction": "left", "s_entry_m": 149.44,
            "s_apex_m": 189.21, "s_exit_m": 228.98, "length_m": 79.54, "min_radius_m": 50.0,
            "entry_speed_kmh": 156.2271, "min_speed_kmh": 140.1066, "exit_speed_kmh": 140.37,
            "s_min_speed_m": 221.99, "time_s": 1.9035, "t_entry_s": 2.2441,
            "max_lateral_acc_g": 1.51234}


@pytest.mark.unit
def test_the_corners_sheet_has_unit_formats_and_corners_csv_no_formulas(tmp_path):
    """results.xlsx's ``corners`` sheet shows its numbers in their unit's format (m 0.00,
    km/h 0.0, s 0.000, g 0.000, as the channels sheet), not General; a corner named
    ``=HYPERLINK(...)`` is text in corners.csv (a leading '), its numbers as they were."""
    import csv

    import openpyxl
    import pandas as pd

    from pyomo_lap.results.table import write_results
    n = 21
    s = np.linspace(0.0, 200.0, n)
    df = pd.DataFrame({"s": s, "s_sector": s, "t": s / 20.0, "speed": np.full(n, 20.0),
                       "speed_kmh": np.full(n, 72.0)})
    evil = '=HYPERLINK("http://example.com","x")'
    out = write_results(tmp_path / "r", df, {"lap_time_s": 10.0, "track": "ring",
                                             "vehicle": "fsae", "corners": [_corner(evil)]})
    ws = openpyxl.load_workbook(out / "results.xlsx")["corners"]
    header = [c.value for c in ws[1]]
    want = {"s_entry [m]": "0.00", "entry_speed [km/h]": "0.0", "time [s]": "0.000",
            "max_lateral_acc [g]": "0.000"}
    for name, code in want.items():
        assert ws.cell(2, header.index(name) + 1).number_format == code, name
    with open(out / "corners.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["name"] == "'" + evil
    assert float(rows[0]["entry_speed [km/h]"]) == 156.2271
    assert rows[0]["direction"] == "left"


@pytest.mark.unit
def test_csv_safe_neutralizes_only_formula_texts():
    """The one rule (pyomo_lap.folders.writer.csv_safe): = + - @ starting texts get a ',
    numbers and numeric texts do not."""
    import pandas as pd

    from pyomo_lap.folders.writer import csv_safe
    f = pd.DataFrame({"t": ["=1+1", "+A1", "-cmd", "@SUM(A1)", "-1.5", "-", "ok"],
                      "x": [-1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    out = csv_safe(f)
    assert out["t"].tolist() == ["'=1+1", "'+A1", "'-cmd", "'@SUM(A1)", "-1.5", "-", "ok"]
    assert out["x"].tolist() == f["x"].tolist()
