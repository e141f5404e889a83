"""The channel dictionary (pyomo_lap.results.channels): an entry for every column of every model's
trajectory table, the wheels in words, `pyomo-lap channels`, docs/channels.md and the
workbook's sheet ``channel_dictionary`` and header comments."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pyomo_lap.results import channels as chan
from pyomo_lap.results.channels import (AXLE_WORDS, CHANNELS, UNITS, WHEEL_WORDS, channel_markdown,
                                     channel_table, describe)

ROOT = Path(__file__).resolve().parents[1]


# ---- every column has an entry -----------------------------------------------------------------

@pytest.mark.unit
def test_every_unit_has_an_entry_and_the_units_have_one_source():
    from pyomo_lap.results import table as results
    assert results.UNITS is UNITS                        # one table of units
    assert list(CHANNELS) and set(CHANNELS) == set(UNITS)
    for name, ch in CHANNELS.items():
        assert ch.name == name and ch.unit == UNITS[name], name
        assert ch.meaning.endswith(".") and len(ch.meaning) > 15, name
        assert ch.source, name


def _flat_track_joint():
    from pyomo_lap.spatial.tree import TrackJoint
    eye = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    return TrackJoint(R=eye, J=[1.0, 0.0, 0.0, 0.0, 0.0, 0.002], dJ=[0.0] * 6)


@pytest.mark.unit
def test_the_models_variables_and_channels_have_entries():
    """The names the models' own code gives its columns (variables, accelerations, the
    channels of the three cars' equations, evaluated on floats) are all in the dictionary."""
    from pyomo_lap.ocp.build import RATE_NAMES, STATE_NAMES
    from pyomo_lap.vehicle import car as veh
    from pyomo_lap.vehicle import multibody_car as mbc
    from pyomo_lap.vehicle import single_track_car as stc
    p = veh.load_vehicle("fsae")
    tj = _flat_track_joint()
    s1, s2 = p.static_loads
    full = veh.car_equations(p, veh.build_chain(p), tj, [0.0] * 6, [20.0, 0, 0.1, 0, 0, 0],
                             [100.0, 0.0, 0.02], [s1, s1, s2, s2, 0.0, 0.0, 0.0])
    single = stc.single_track_equations(p, stc.build_chain(p), tj, [0.0] * 3, [20.0, 0, 0.1],
                                        [100.0, 0.0, 0.02], [2 * s1, 2 * s2, 0.0, 0.0, 0.0])
    multi = mbc.multibody_equations(p, mbc.build_tree(p), tj, [0.0] * 10, [20.0] + [0.0] * 9,
                                    [100.0, 0.0, 0.02])
    names = set(full.channels) | set(single.channels) | set(multi.channels)
    names |= set(STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC + stc.ALGEBRAIC)
    names |= {f"{z}{k}" for z in mbc.SUSPENSION for k in ("", "_dot", "_ddot")}
    names |= {f"q{k}_ddot" for k in range(1, 7)} | {f"{c}_rate" for c in veh.CONTROLS}
    missing = sorted(n for n in names if n not in CHANNELS)
    assert not missing, missing


@pytest.mark.integration
@pytest.mark.parametrize("model", ["full", "single-track", "multibody"])
def test_every_column_of_a_solved_table_has_an_entry(solved_sector, model):
    df = solved_sector(model)[-1]
    missing = [c for c in df.columns if c not in CHANNELS]
    assert not missing, missing
    table = channel_table(df.columns)
    assert list(table["name"]) == list(df.columns)
    assert list(table["unit"]) == [UNITS[c] for c in df.columns]


@pytest.mark.integration
def test_the_signs_hold_on_a_solved_sector(solved_sector):
    """The sign conventions of the dictionary, on the full model's solution of Nordschleife
    1200-1360 m: a left-hand bend (Omega_z > 0) taken at the friction limit, then a right-hand
    one; the straight at about 140 km/h."""
    df = solved_sector("full")[-1]
    assert "+ up" in describe("q4").sign and (df["q4"] < -0.02).all()       # sits lower
    assert (df["f_xa"] >= -1e-6).all() and (df["f_xb"] <= 1e-6).all()
    assert (df["f_drag"] <= 0).all() and (df["f_down"] <= 0).all()
    assert (df["tau_4"] > 0).all()                                          # springs compressed
    for bend, side in ((df["a_y"] > 8.0, 1.0), (df["a_y"] < -8.0, -1.0)):   # left, right
        b = df[bend]
        assert len(b) >= 3
        assert (side * b["omega_3z"] > 0).all() and (side * b["delta"] > 0).all()
        assert (side * b["alpha_1"] > 0).all() and (side * b["f_11y"] > 0).all()
        assert (side * b["q6"] > 0).all()                    # left bend: right side down
        assert (side * b["delta_F1"] > 0).all() and (side * (b["f_12z"] - b["f_11z"]) > 0).all()
        assert (side * b["m_3x"] < 0).all()                  # left wheels lighter in a left bend
        assert (side * b["v_3y"] < 0).all()
    assert (df["Omega_z"].iloc[:5] > 0).all() and (df["a_y"].iloc[:5] > 0).all()
    # pitch: + nose down when slowing down, nose up when speeding up
    slow, fast = df[df["a_t"] < -2.0], df[df["a_t"] > 1.0]
    assert len(slow) and len(fast) and (slow["q5"] > 0).all() and (fast["q5"] < 0).all()
    assert (fast["m_3y"] > 0).all()                          # load to the rear
    # a_t is the rate of change of speed
    dv_dt = np.gradient(df["speed"].to_numpy(), df["t"].to_numpy())
    assert np.corrcoef(dv_dt, df["a_t"])[0, 1] > 0.9


# ---- the wheels in words -----------------------------------------------------------------------

@pytest.mark.unit
def test_the_wheels_in_words():
    assert WHEEL_WORDS == {"11": "front-left", "12": "front-right", "21": "rear-left",
                           "22": "rear-right"}
    assert AXLE_WORDS == {"1": "front axle", "2": "rear axle"}
    assert describe("f_11z").wheel == "front-left" and describe("f_12z").wheel == "front-right"
    assert describe("f_21z").wheel == "rear-left" and describe("f_22z").wheel == "rear-right"
    for w, words in WHEEL_WORDS.items():
        for name in (f"f_{w}z", f"f_{w}x", f"f_{w}y", f"D_{w}", f"theta_{w}", f"z{w}",
                     f"z{w}_dot", f"z{w}_ddot", f"zc_{w}", f"spring_{w}", f"jack_{w}"):
            ch = describe(name)
            assert ch.wheel == words and words in ch.meaning, name
    for i, words in AXLE_WORDS.items():
        for name in (f"alpha_{i}", f"Y_{i}", f"delta_F{i}", f"f_{i}z", f"f_{i}x", f"f_{i}y",
                     f"C_{i}", f"D_{i}", f"upsilon_{i}"):
            assert describe(name).wheel == words, name
    assert describe("q4").wheel == "" and describe("speed").wheel == ""


@pytest.mark.unit
def test_signs_and_sources_as_the_code_computes_them():
    assert "+ left" in describe("q2").sign
    assert "nose down" in describe("q5").sign and "right side down" in describe("q6").sign
    assert "<= 0" in describe("f_xb").sign and ">= 0" in describe("f_xa").sign
    assert "to the left" in describe("a_y").sign and "to the left" in describe("alpha_1").sign
    assert "<= 0" in describe("f_down").sign and "<= 0" in describe("f_drag").sign
    assert "right wheel" in describe("delta_F1").sign
    assert "(18c)" in describe("tau_4").source and "(18a)" in describe("tau_6").source
    assert "(33a)" in describe("alpha_1").source and "(30)" in describe("delta_F2").source
    assert "(31a)" in describe("Y_1").source and "(32)" in describe("D_11").source
    assert "not in the paper" in describe("a_t").source
    for name in ("a_t", "delta_rate", "f_xa_rate", "f_xb_rate"):
        assert name in CHANNELS
    assert describe("delta_rate").unit == "rad/s" and describe("f_xb_rate").unit == "N/s"


# ---- lookups -----------------------------------------------------------------------------------

@pytest.mark.unit
def test_describe_names_the_column_and_suggests_close_names():
    assert describe("q4 [m]") is describe("q4") is CHANNELS["q4"]      # a CSV header
    with pytest.raises(KeyError) as err:
        describe("f11z")
    msg = err.value.args[0]
    assert "'f11z'" in msg and "f_11z" in msg
    with pytest.raises(KeyError) as err:
        describe("omega_z")
    assert "Omega_z" in err.value.args[0] and "omega_3z" in err.value.args[0]
    with pytest.raises(KeyError) as err:
        describe("no_such_thing_at_all")
    assert "no_such_thing_at_all" in err.value.args[0] and "pyomo-lap channels" in err.value.args[0]
    with pytest.raises(KeyError):
        channel_table(["q4", "nope"])


@pytest.mark.unit
def test_table_and_markdown():
    table = channel_table()
    assert list(table.columns) == ["name", "unit", "meaning", "sign", "source", "wheel"]
    assert list(table["name"]) == list(CHANNELS) and len(table) == len(UNITS)
    sub = channel_table(["f_22z", "q4 [m]"])
    assert list(sub["name"]) == ["f_22z", "q4"] and sub["wheel"].tolist() == ["rear-right", ""]
    md = channel_markdown()
    lines = md.splitlines()
    assert md.endswith("\n") and len(lines) == len(CHANNELS) + 2
    assert all(line.count(" | ") - line.count("\\|") == 5 for line in lines[2:])
    assert "| `theta_11` | rad |" in md


# ---- the command line --------------------------------------------------------------------------

@pytest.mark.unit
def test_cli_lists_all_one_and_refuses_an_unknown_name():
    from pyomo_lap.cli import main
    r = CliRunner().invoke(main, ["channels"])
    assert r.exit_code == 0, r.output
    starts = {line.split()[0] for line in r.output.splitlines() if line and not line.startswith(" ")}
    assert set(CHANNELS) <= starts
    assert r.output == chan.channel_text()
    r = CliRunner().invoke(main, ["channels", "f_21z"])
    assert r.exit_code == 0
    assert r.output.startswith("channel") and "rear-left" in r.output and "Vertical load" in r.output
    assert "q4" not in {line.split()[0] for line in r.output.splitlines()}
    r = CliRunner().invoke(main, ["channels", "q4", "f_xb", "--markdown"])
    assert r.exit_code == 0 and r.output == channel_markdown(["q4", "f_xb"])
    r = CliRunner().invoke(main, ["channels", "q4", "f11z"])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert r.stdout == ""                                    # nothing printed but the error
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "'f11z'" in err and "f_11z" in err


# ---- docs/channels.md --------------------------------------------------------------------------

@pytest.mark.unit
def test_docs_hold_the_generated_table():
    text = (ROOT / "docs" / "channels.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- channels-table:start -->\n(.*?)<!-- channels-table:end -->", text, re.S)
    assert m, "docs/channels.md lacks the channels-table markers"
    assert m.group(1) == channel_markdown()
    head = text[:m.start()]
    for words in ("front-left", "front-right", "rear-left", "rear-right", "{B3}", "nose down",
                  "right side down"):
        assert words in head


# ---- the workbook ------------------------------------------------------------------------------

@pytest.mark.unit
def test_workbook_has_the_dictionary_sheet_and_header_comments(tmp_path):
    import openpyxl

    from pyomo_lap.results.table import write_results
    n = 5
    df = pd.DataFrame({"s": np.linspace(100.0, 140.0, n), "s_sector": np.linspace(0.0, 40.0, n),
                       "t": np.linspace(0.0, 1.0, n), "q4": -0.03 * np.ones(n),
                       "f_21z": 800.0 * np.ones(n), "a_y": np.zeros(n), "extra": np.ones(n)})
    out = write_results(tmp_path / "r", df, {"lap_time_s": 1.0})
    wb = openpyxl.load_workbook(out / "results.xlsx")
    assert "channel_dictionary" in wb.sheetnames and "channels" in wb.sheetnames
    sheet = pd.read_excel(out / "results.xlsx", sheet_name="channel_dictionary").fillna("")
    assert list(sheet.columns) == ["name", "unit", "meaning", "sign", "source", "wheel"]
    assert sheet["name"].tolist() == ["s", "s_sector", "t", "q4", "f_21z", "a_y"]
    assert sheet.set_index("name").loc["f_21z", "wheel"] == "rear-left"
    ws = wb["channels"]
    headers = [ws.cell(1, j + 1).value for j in range(len(df.columns))]
    assert headers[:4] == ["s [m]", "s_sector [m]", "t [s]", "q4 [m]"] and headers[-1] == "extra"
    for j, name in enumerate(df.columns):
        comment = ws.cell(1, j + 1).comment
        if name == "extra":                      # a column without an entry: no comment
            assert comment is None
            continue
        assert comment is not None and describe(name).meaning in comment.text
    assert "rear-left" in ws.cell(1, 5).comment.text and "+ up" in ws.cell(1, 4).comment.text
    assert ws.max_row == n + 1                   # the comments add no rows
