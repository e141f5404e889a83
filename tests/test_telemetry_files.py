"""Logger files (issue 35): MoTeC i2 and AiM RaceStudio CSV exports as they come, and the
generic CSV with its aliases. The example files of data/telemetry/ are synthetic, written by
data/telemetry/make_examples.py from source_run.csv; the tests regenerate the script's outing
(its numbers, before the file's rounding and noise) and compare what the reader finds with it."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pyomo_lap.analysis.telemetry import CHANNEL_ALIASES, alias_markdown, read_telemetry

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "telemetry"
G0 = 9.80665


def _script():
    spec = importlib.util.spec_from_file_location("make_examples", DATA / "make_examples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def outing():
    """The script's outing (noise-free numbers) and its module."""
    mod = _script()
    return mod.outing(pd.read_csv(DATA / "source_run.csv")), mod


def _lap_samples(out, k):
    """The script's samples strictly inside lap k (1-based) of the outing."""
    edges = [0.0] + out["markers"] + [out["t"][-1]]
    a, b = edges[k - 1], edges[k]
    return (out["t"] > a) & (out["t"] < b), a


@pytest.mark.unit
@pytest.mark.parametrize("name, speed_col, stretch_key", [
    ("motec_example.csv", "Ground Speed", "motec"), ("aim_example.csv", "GPS Speed", "aim")])
def test_export_read_back_to_the_scripts_channels(outing, name, speed_col, stretch_key):
    """Each export: its format found from its first cells; the four laps of the outing cut at
    the beacon markers (the first and last partial); the fastest complete lap (3) kept, its
    time the script's to the file's 1 ms; speed, a_x, a_y in SI against the script's
    noise-free channels within 5 standard deviations of the noise (speed in km/h, the
    accelerations in G in the file); the distance at the lap's end the script's lap length
    times its stretch."""
    out, mod = outing
    log, info = read_telemetry(DATA / name)
    assert info["format"] == {"motec": "MoTeC i2 CSV export", "aim": "AiM RaceStudio CSV export"}[stretch_key]
    assert info["speed"] == speed_col
    laps = info["laps"]
    assert list(laps["complete"]) == [False, True, True, False]
    assert np.allclose(laps["time [s]"], out["lap_times"], atol=1.5e-3)
    assert info["lap"] == 3 and info["lap_time_s"] == pytest.approx(out["lap_times"][2], abs=1.5e-3)
    inside, t0 = _lap_samples(out, 3)
    ts = out["t"][inside] - t0
    # the log's samples inside the lap are the script's (the ends interpolated at the markers)
    assert len(log) == inside.sum() + 2
    assert np.allclose(log["t"].to_numpy()[1:-1], ts, atol=1.5e-3)
    sd_v, sd_a = mod.NOISE["speed_kmh"] / 3.6, mod.NOISE["acc_g"] * G0
    assert np.max(np.abs(log["speed"].to_numpy()[1:-1] - out["speed"][inside])) < 5 * sd_v
    assert np.max(np.abs(log["a_y"].to_numpy()[1:-1] - out["a_y"][inside])) < 5 * sd_a + 0.01
    assert np.max(np.abs(log["a_x"].to_numpy()[1:-1] - out["a_x"][inside])) < 5 * sd_a + 0.01
    L = out["L"]
    if stretch_key == "motec":      # the wheel distance: the driven distance x 1.015
        assert log["s"].iloc[-1] == pytest.approx(mod.STRETCH["motec"] * L, abs=0.05)
    else:                           # the GPS distance: the integral of the noisy speed
        assert log["s"].iloc[-1] == pytest.approx(mod.STRETCH["aim"] * L, rel=2e-3)
    assert info["units"]["a_y"] == "m/s^2" and "derived" in info


@pytest.mark.unit
def test_examples_json_holds_the_scripts_numbers_and_says_synthetic(outing):
    """examples.json (quoted by the docs) is the script's output for the committed
    source_run.csv, and every example file says it is synthetic."""
    out, _ = outing
    meta = json.loads((DATA / "examples.json").read_text())
    assert meta["synthetic"] is True
    assert np.allclose(meta["lap_times_s"], out["lap_times"], rtol=1e-12)
    assert meta["source_lap_time_s"] == pytest.approx(pd.read_csv(DATA / "source_run.csv")["t [s]"].iloc[-1])
    for name in ("motec_example.csv", "aim_example.csv"):
        assert "SYNTHETIC" in (DATA / name).read_text()[:1000]
    assert "synthetic" in (DATA / "README.md").read_text().lower()


@pytest.mark.unit
def test_units_are_converted(tmp_path):
    """mph -> m/s is 1609.344 m / 3600 s, ft -> m 0.3048, G -> 9.80665 m/s^2, deg -> pi/180:
    a generic file with a unit row, and a MoTeC export rewritten in mph, read alike."""
    f = tmp_path / "mph.csv"
    f.write_text("Time,Speed,Lap Distance,Lateral G,Steering\ns,mph,ft,G,deg\n"
                 "0,60,0,0.5,90\n1,61,88,1.0,-45\n2,62,177.5,1.5,0\n")
    log, info = read_telemetry(f)
    assert info["format"] == "generic CSV"
    assert np.allclose(log["speed"], np.array([60, 61, 62]) * 1609.344 / 3600, rtol=1e-12)
    assert np.allclose(log["s"], np.array([0, 88, 177.5]) * 0.3048, rtol=1e-12)
    assert np.allclose(log["a_y"], np.array([0.5, 1.0, 1.5]) * 9.80665, rtol=1e-12)
    assert np.allclose(log["steering_wheel_angle"], [np.pi / 2, -np.pi / 4, 0.0], rtol=1e-12)
    # the MoTeC example with its speed in mph: the same speeds in m/s
    text = (DATA / "motec_example.csv").read_text().splitlines()
    k = next(i for i, ln in enumerate(text) if ln.startswith('"s","m","km/h"'))
    text[k] = text[k].replace('"km/h"', '"mph"', 1)
    rows = [ln.split(",") for ln in text[k + 3:]]
    for r in rows:
        r[2] = f'"{float(r[2].strip(chr(34))) / 1.609344:.6f}"'
    g = tmp_path / "motec_mph.csv"
    g.write_text("\n".join(text[:k + 3] + [",".join(r) for r in rows]) + "\n")
    a, _ = read_telemetry(DATA / "motec_example.csv")
    b, _ = read_telemetry(g)
    assert np.allclose(a["speed"], b["speed"], atol=1e-6)


def _run_folder(folder: Path) -> float:
    """A results folder of the script's source lap (no solve); its lap time [s]."""
    from pyomo_lap.results.table import write_results
    src = pd.read_csv(DATA / "source_run.csv")
    n = len(src)
    df = pd.DataFrame({"s": src["s [m]"], "s_sector": src["s [m]"], "t": src["t [s]"],
                       "speed_kmh": 3.6 * src["speed [m/s]"], "speed": src["speed [m/s]"],
                       "q2": np.zeros(n), "a_x": src["a_x [m/s^2]"], "a_y": src["a_y [m/s^2]"]})
    T = float(src["t [s]"].iloc[-1])
    write_results(folder, df, {"track": "dymos_oval_spline", "vehicle": "fsae", "periodic": True,
                               "lap_time_s": T})
    return T


@pytest.mark.unit
@pytest.mark.parametrize("name", ["motec_example.csv", "aim_example.csv"])
def test_compare_command_on_the_examples(tmp_path, name):
    """`compare RUN --telemetry <example>`: exit 0; the time delta at the end of the overlay
    is the logged lap's time (the script's, lap 3) minus the run's; with --lap 2 that lap's;
    a lap not in the file refused in one line."""
    from pyomo_lap.cli import main
    meta = json.loads((DATA / "examples.json").read_text())
    T = _run_folder(tmp_path / "run")
    for lap, args in ((3, []), (2, ["--lap", "2"])):
        out = tmp_path / f"cmp{lap}"
        r = CliRunner().invoke(main, ["compare", str(tmp_path / "run"), "--telemetry",
                                      str(DATA / name), "--out", str(out), *args])
        assert r.exit_code == 0, r.output
        d = pd.read_csv(out / "telemetry.csv")
        assert d["delta_t [s]"].iloc[-1] == pytest.approx(meta["lap_times_s"][lap - 1] - T, abs=2e-3)
        assert "a_x, a_y" in r.output and f"lap {lap} overlaid" in r.output
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "run"), "--telemetry",
                                  str(DATA / name), "--lap", "9", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "lap 9 asked for; the file has laps 1-4 (complete: 2, 3)" in r.output


@pytest.mark.unit
def test_malformed_exports_are_refused_in_one_line(tmp_path):
    """A MoTeC export without its unit row, and one with a text in Ground Speed: one line
    naming the file's line, the column and the value."""
    text = (DATA / "motec_example.csv").read_text().splitlines()
    k = next(i for i, ln in enumerate(text) if ln.startswith('"s","m","km/h"'))
    f = tmp_path / "no_units.csv"
    f.write_text("\n".join(text[:k] + text[k + 1:]) + "\n")
    with pytest.raises(ValueError) as e:
        read_telemetry(f)
    msg = str(e.value)
    assert "\n" not in msg and f"line {k + 3}, under the channel names of line {k}" in msg
    assert "expected the unit row" in msg and "0.000" in msg
    bad = list(text)
    j = k + 3 + 100                  # a data row (line j + 1 of the file)
    cells = bad[j].split(",")
    cells[2] = '"12O.5"'
    bad[j] = ",".join(cells)
    f = tmp_path / "text_cell.csv"
    f.write_text("\n".join(bad) + "\n")
    with pytest.raises(ValueError) as e:
        read_telemetry(f)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"line {j + 1}, column 3 'Ground Speed': '12O.5' is not a number" in msg
    f.write_text("Time [s],Speed [furlong]\n0,1\n1,2\n")
    with pytest.raises(ValueError, match=r"column 2 'Speed \[furlong\]': unit 'furlong' is not a "
                                         r"unit of speed over ground"):
        read_telemetry(f)


@pytest.mark.unit
def test_alias_table_in_the_docs_is_current():
    """docs/telemetry.md holds the table :func:`alias_markdown` makes from the code's
    aliases; every alias is a normalised name (lower case, no spaces) and no alias names two
    channels."""
    assert alias_markdown() in (ROOT / "docs" / "telemetry.md").read_text(), (
        "regenerate the table in docs/telemetry.md: python -c 'from pyomo_lap.analysis.telemetry "
        "import alias_markdown; print(alias_markdown())'")
    seen = {}
    for key, al in CHANNEL_ALIASES.items():
        for n in al.names:
            assert n == n.lower().strip() and " " not in n
            assert seen.setdefault(n, key) == key, f"{n} names {seen[n]} and {key}"


@pytest.mark.unit
def test_a_lap_column_cuts_the_outing(tmp_path):
    """A generic file with a lap column (values 0..3 changing at 5, 15, 24 s) at a constant
    20 m/s: four laps, the first and last partial; the fastest complete one is the 9 s lap
    (15-24 s), its distance 20 m/s x 9 s = 180 m integrated from the speed."""
    t = np.round(np.arange(0.0, 30.0, 0.1), 10)
    lap = np.searchsorted([5.0, 15.0, 24.0], t, side="right")
    f = tmp_path / "laps.csv"
    pd.DataFrame({"Time [s]": t, "Speed [m/s]": 20.0, "Lap": lap}).to_csv(f, index=False)
    log, info = read_telemetry(f)
    assert list(info["laps"]["complete"]) == [False, True, True, False]
    assert np.allclose(info["laps"]["time [s]"], [5.0, 10.0, 9.0, 29.9 - 24.0])
    assert info["lap"] == 3 and info["lap_time_s"] == pytest.approx(9.0)
    assert log["s"].iloc[-1] == pytest.approx(180.0) and "lap" not in log.columns
    assert read_telemetry(f, lap=2)[1]["lap_time_s"] == pytest.approx(10.0)


@pytest.mark.unit
def test_a_motec_export_in_another_writers_layout_is_read(tmp_path):
    """The layout of a MoTeC CSV written by another converter than this project's example
    script (a header block of 11 rows with a second key/value pair on most rows, two blank
    rows, the names row, the units row, the data right after it, no beacon markers): a car at
    a constant 72 km/h for 10 s, read back as 20 m/s over 200 m (closed form)."""
    from pyomo_lap.analysis.telemetry import read_telemetry
    head = ['"Format","MoTeC CSV File",,,"Workbook","w"',
            '"Venue","v",,,"Worksheet","s"', '"Vehicle","c",,,"",""',
            '"Driver","d",,,"Engine ID",""', '"Device","ADL"',
            '"Comment","",,,"Session","1"', '"Log Date","01/02/2024",,,"Origin Time","0.000","s"',
            '"Log Time","10:00:00",,,"Start Time","0.000","s"',
            '"Sample Rate","20.000","Hz",,"End Time","10.000","s"',
            '"Duration","10.000","s",,"Start Distance","0","m"',
            '"Range","entire outing",,,"End Distance","200","m"', "", "",
            '"Time","Distance","Ground Speed","G Force Lat"', '"s","m","km/h","G"']
    rows = [f'"{0.05 * i:.3f}","{1.0 * i:.2f}","72.00","0.500"' for i in range(201)]
    path = tmp_path / "other_writer.csv"
    path.write_text("\n".join(head + rows) + "\n")
    df, info = read_telemetry(path)
    assert info["format"].lower().startswith("motec")
    assert np.allclose(df["speed"], 20.0)
    assert df["s"].iloc[-1] == pytest.approx(200.0) and df["t"].iloc[-1] == pytest.approx(10.0)
    assert np.allclose(df["a_y"], 0.5 * 9.80665)


def _edited(tmp_path, name, markers=None, speed_nan=False, second_speed=False) -> Path:
    """data/telemetry/motec_example.csv with its Beacon Markers row, its Ground Speed values
    (all NaN) or its G Force Lat name (a second 'Ground Speed') changed."""
    text = (DATA / "motec_example.csv").read_text().splitlines()
    k = next(i for i, ln in enumerate(text) if ln.startswith('"Time","Distance"'))
    if markers is not None:
        m = next(i for i, ln in enumerate(text) if ln.startswith('"Beacon Markers"'))
        text[m] = ",".join(['"Beacon Markers"'] + [f'"{v}"' for v in markers])
    if second_speed:
        text[k] = text[k].replace('"G Force Lat"', '"Ground Speed"')
    if speed_nan:
        for i in range(k + 2, len(text)):
            cells = text[i].split(",")
            if len(cells) > 2:
                cells[2] = '"nan"'
                text[i] = ",".join(cells)
    f = tmp_path / name
    f.write_text("\n".join(text) + "\n")
    return f


@pytest.mark.unit
@pytest.mark.parametrize("edit, words", [
    ({"speed_nan": True}, "0 rows with a number in each of 'Ground Speed'"),
    ({"markers": ["nan", "50.386", "84.215"]}, "Beacon Markers 'nan': expected times"),
    ({"markers": ["-5", "1e308"]}, "Beacon Markers '-5', '1e308': none inside the log's times"),
    ({"markers": ["84.215", "50.386", "15.972"]}, "Beacon Markers '50.386' after 84.215 s"),
    ({"second_speed": True}, "columns 3 and 4 are both named 'Ground Speed'"),
])
def test_a_broken_log_is_refused_in_one_line(tmp_path, edit, words):
    """Issue 46: a speed column of NaN only (was an IndexError), beacon markers that are not
    increasing times inside the log (were dropped, then 'no common stretch' or a wrong lap),
    two channels of one name (the first was taken silently): one line naming the value, and
    ``compare --telemetry`` exits 2 with it."""
    f = _edited(tmp_path, "edited.csv", **edit)
    with pytest.raises(ValueError) as e:
        read_telemetry(f)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert read_telemetry(_edited(tmp_path, "as_is.csv"))[1]["lap"] == 3   # the edit alone
    from pyomo_lap.cli import main
    _run_folder(tmp_path / "run")
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "run"), "--telemetry", str(f),
                                  "--out", str(tmp_path / "cmp")])
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "cmp").exists()


@pytest.mark.unit
def test_a_fifo_or_a_device_is_not_called_missing(tmp_path):
    """A FIFO, /dev/zero or a folder given as the log: 'not a regular file', not 'no such
    file' (and nothing is read from it: a FIFO would block)."""
    import os
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(ValueError, match="not a regular file"):
            read_telemetry(path)
    with pytest.raises(ValueError, match="no such file"):
        read_telemetry(tmp_path / "absent.csv")
