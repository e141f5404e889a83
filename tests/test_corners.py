"""Corners: found on tracks of straights and arcs whose corners are known by construction,
named by a corner file, timed on a result (against closed forms and an independent
integration of ds / v), and compared run against run."""
from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.results.corners import corner_deltas, corner_table
from pyomo_lap.track.arcs import ArcTrack, Segment
from pyomo_lap.track.corners import (CornerFileError, detect_corners, read_corner_file,
                                     read_sector_file, track_corners, track_sectors)

S, A = Segment.straight, Segment.arc
TOL = 0.6   # [m]: the curvature is sampled every <= 0.5 m and jumps at an arc's ends


def _ends(segments):
    """Start and end [m] of every segment, summed from the lengths (independent of the code)."""
    s0 = np.concatenate([[0.0], np.cumsum([sg.length for sg in segments])])
    return s0[:-1], s0[1:]


@pytest.mark.unit
def test_arcs_give_exactly_their_corners():
    """The corners found on straights and arcs are exactly the arcs: number, direction, entry
    and exit."""
    segs = [S(200), A(50, math.pi / 2, "right"), S(150), A(30, math.radians(120), "left"),
            S(100), A(120, math.pi / 3, "right"), S(250)]
    tr = ArcTrack(segs, closed=False)
    corners = detect_corners(tr)
    start, end = _ends(segs)
    arcs = [i for i, sg in enumerate(segs) if sg.is_arc]
    assert [c.number for c in corners] == [1, 2, 3]
    assert [c.direction for c in corners] == ["right", "left", "right"]
    for c, i in zip(corners, arcs):
        assert abs(c.s_entry - start[i]) < TOL and abs(c.s_exit - end[i]) < TOL
        assert abs(c.s_apex - (start[i] + end[i]) / 2) < TOL    # the middle of the arc
        assert c.min_radius == pytest.approx(segs[i].radius, rel=1e-9)
        assert c.angle_deg == pytest.approx(math.degrees(segs[i].angle), abs=1.0)
        assert c.name == f"T{c.number}"


@pytest.mark.unit
def test_chicane_is_two_corners_and_kinks_and_wide_bends_none():
    """A chicane is two corners; a kink and a wide bend are none."""
    segs = [S(100), A(25, math.radians(60), "left"), A(25, math.radians(60), "right"), S(100),
            A(100, math.radians(5), "left"),        # a kink: 5 deg
            S(100), A(600, math.radians(40), "right"),   # wider than R_ON_M
            S(100)]
    tr = ArcTrack(segs, closed=False)
    corners = detect_corners(tr)
    start, end = _ends(segs)
    assert [c.direction for c in corners] == ["left", "right"]
    assert abs(corners[0].s_exit - end[1]) < TOL and abs(corners[1].s_entry - start[2]) < TOL


@pytest.mark.unit
def test_double_apex_merged_below_the_gap_and_split_above():
    """A double apex is one corner when its straight is short, two when it is long."""
    def two(gap):
        return ArcTrack([S(100), A(40, math.pi / 4, "right"), S(gap), A(40, math.pi / 4, "right"),
                         S(100)], closed=False)
    assert len(detect_corners(two(10.0))) == 1
    assert len(detect_corners(two(60.0))) == 2
    one = detect_corners(two(10.0))[0]
    assert abs(one.s_entry - 100.0) < TOL
    assert abs(one.s_exit - (100 + 2 * 40 * math.pi / 4 + 10)) < TOL


@pytest.mark.unit
def test_closed_track_corner_across_the_start_line():
    """On a closed track a corner across the start line is one corner wrapping round."""
    R, L1 = 40.0, 300.0
    segs = [A(R, math.pi / 2, "left"), S(L1), A(R, math.pi, "left"), S(L1),
            A(R, math.pi / 2, "left")]
    tr = ArcTrack(segs, closed=True)
    corners = detect_corners(tr)
    q = R * math.pi / 2
    assert len(corners) == 2
    wrap = [c for c in corners if c.s_entry > c.s_exit]
    assert len(wrap) == 1
    assert abs(wrap[0].s_entry - (tr.length - q)) < TOL and abs(wrap[0].s_exit - q) < TOL
    assert all(c.direction == "left" for c in corners)
    # numbered by the apex from the start line
    assert [c.number for c in sorted(corners, key=lambda c: c.s_apex)] == [1, 2]


def _arc_file(folder, segs_toml: str, stem="circuit"):
    p = folder / f"{stem}.toml"
    p.write_text('closed = false\nwidth_left = 4.0\nwidth_right = 4.0\n' + segs_toml)
    return p


_SEGS = "".join(f"[[segment]]\n{x}\n" for x in (
    "straight = 100.0", 'radius = 30.0\nangle_deg = 90.0\nturn = "left"', "straight = 100.0",
    'radius = 50.0\nangle_deg = 60.0\nturn = "right"', "straight = 100.0"))


@pytest.mark.unit
def test_corner_file_beside_the_track_names_and_bounds_them(tmp_path):
    """A corner file beside the track gives the corners' names and bounds, and a sector file
    the sectors."""
    from pyomo_lap.track.loading import load_track
    path = _arc_file(tmp_path, _SEGS)
    q = 30 * math.pi / 2
    (tmp_path / "circuit.corners.csv").write_text(
        "# the corners of circuit.toml\n"
        "number,name,s_apex_m,s_entry_m,s_exit_m\n"
        f"7,Hairpin,{100 + q / 2},,\n"
        f"8,Esses,{200 + q + 20},{200 + q},{200 + q + 40}\n")
    (tmp_path / "circuit.sectors.csv").write_text("s_start_m,name\n0,first\n150,second\n")
    tr = load_track(path)
    corners = track_corners(tr)
    assert [(c.number, c.name, c.direction) for c in corners] == [(7, "Hairpin", "left"),
                                                                  (8, "Esses", "right")]
    assert abs(corners[0].s_entry - 100) < TOL and abs(corners[0].s_exit - (100 + q)) < TOL
    assert (corners[1].s_entry, corners[1].s_exit) == (200 + q, 200 + q + 40)
    assert corners[1].angle_deg == pytest.approx(40 / 50 * 180 / math.pi, rel=1e-3)
    assert track_sectors(tr) == [(0.0, "first"), (150.0, "second")]


@pytest.mark.unit
@pytest.mark.parametrize("text, words", [
    ("name,s_entry_m\nA,1\n", "no column 's_apex_m'"),
    ("s_apex_m,turn\n10,1\n", "unknown column 'turn'"),
    ("s_apex_m\nfar\n", "row 1, s_apex_m = 'far'"),
    ("s_apex_m\n9999\n", "row 1, s_apex_m = '9999'"),
    ("s_apex_m,s_entry_m,s_exit_m\n130,120,\n", "s_entry_m and s_exit_m go together"),
    ("s_apex_m\n50\n", "row 1, s_apex_m = 50: no detected corner holds it"),
    ("number,s_apex_m\n1,120\n1,120\n", "row 2, number = 1: given twice"),
])
def test_corner_file_errors_are_one_line(tmp_path, text, words):
    """Errors of a corner file are one line naming the file and what is wrong."""
    from pyomo_lap.track.loading import load_track
    tr = load_track(_arc_file(tmp_path, _SEGS))
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(CornerFileError) as exc:
        read_corner_file(f, tr)
    assert words in str(exc.value) and str(f) in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.unit
def test_sector_file_must_increase(tmp_path):
    """A sector file whose starts do not increase is refused naming the row."""
    f = tmp_path / "x.sectors.csv"
    f.write_text("s_start_m\n0\n500\n400\n")
    with pytest.raises(CornerFileError, match="row 3, s_start_m = 400: expected more"):
        read_sector_file(f, 1000.0)


def _synthetic_run(v0, c, sigma, start, L):
    """Channels of a run whose speed grows linearly along the track, v = v0 + c sigma [m/s],
    so the time is t = ln(1 + c sigma / v0) / c in closed form."""
    return pd.DataFrame({"s": (start + sigma) % L, "s_sector": sigma,
                         "t": np.log1p(c * sigma / v0) / c, "speed_kmh": 3.6 * (v0 + c * sigma),
                         "a_y": np.full_like(sigma, 9.80665 * 1.25)})


@pytest.mark.unit
def test_corner_time_is_the_closed_form_integral_also_across_the_line():
    """The time in a corner is the closed-form integral of ds/v, also across the line."""
    L, v0, c = 1000.0, 20.0, 0.01
    sigma = np.linspace(0.0, L, 20001)
    df = _synthetic_run(v0, c, sigma, 0.0, L)
    t = lambda x: math.log1p(c * x / v0) / c   # noqa: E731
    corners = [{"number": 1, "name": "T1", "direction": "left", "s_entry_m": 100.0,
                "s_apex_m": 150.0, "s_exit_m": 230.0},
               {"number": 2, "name": "T2", "direction": "right", "s_entry_m": 950.0,
                "s_apex_m": 990.0, "s_exit_m": 40.0}]
    tab = corner_table(df, corners, L, closed=True)
    assert tab["time [s]"].iloc[0] == pytest.approx(t(230) - t(100), rel=1e-7)
    assert tab["time [s]"].iloc[1] == pytest.approx(t(1000) - t(950) + t(40), rel=1e-7)
    assert tab["min_speed [km/h]"].iloc[0] == pytest.approx(3.6 * (v0 + c * 100), rel=1e-9)
    assert tab["s_min_speed [m]"].iloc[1] == pytest.approx(0.0, abs=1e-9)
    assert tab["max_lateral_acc [g]"].iloc[0] == pytest.approx(1.25)
    # a sector that does not hold a corner whole leaves it out
    part = corner_table(df[df.s_sector <= 200].reset_index(drop=True), corners, L, closed=True)
    assert len(part) == 0


@pytest.mark.unit
def test_corner_deltas_of_a_run_with_itself_are_zero_and_of_a_slower_run_positive():
    """Corner deltas of a run with itself are zero, and those of a slower run positive."""
    L = 1000.0
    sigma = np.linspace(0.0, L, 2001)
    corners = [{"number": 1, "name": "T1", "direction": "left", "s_entry_m": 100.0,
                "s_apex_m": 150.0, "s_exit_m": 230.0}]
    a = corner_table(_synthetic_run(20.0, 0.01, sigma, 0.0, L), corners, L, True)
    b = corner_table(_synthetic_run(18.0, 0.01, sigma, 0.0, L), corners, L, True)
    same = corner_deltas(a, a)
    assert len(same) == 1 and (same[["delta_time [s]", "delta_min_speed [km/h]"]] == 0).all().all()
    slower = corner_deltas(a, b)
    assert slower["delta_time [s]"].iloc[0] > 0 and slower["delta_min_speed [km/h]"].iloc[0] == \
        pytest.approx(-3.6 * 2.0)


@pytest.mark.integration
def test_solved_run_corners_written_and_timed_as_the_integral_of_ds_over_v(tmp_path):
    """A solved run writes its corners, timed as the integral of ds/v of its trajectory."""
    from pyomo_lap.api import solve_sector
    from pyomo_lap.plots.figures import compare_runs
    from pyomo_lap.results.table import read_manifest, read_trajectory
    out = tmp_path / "run"
    res = solve_sector(track="nordschleife", length=300.0, start=1150.0, out_dir=out,
                       echo=lambda *_: None)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["corners"] and summary["corners_source"] == "detected"
    csv = pd.read_csv(out / "corners.csv")
    sheet = pd.read_excel(out / "results.xlsx", sheet_name="corners")
    assert len(csv) == len(sheet) == len(summary["corners"]) >= 1
    assert "corners.csv" in read_manifest(out)["files"]
    df = read_trajectory(out)
    sig, q1d = df["s_sector"].to_numpy(), df["q1_dot"].to_numpy()
    for _, r in csv.iterrows():
        a, b = r["s_entry [m]"] - 1150.0, r["s_exit [m]"] - 1150.0
        x = np.concatenate([[a], sig[(sig > a) & (sig < b)], [b]])
        integral = np.trapezoid(1.0 / np.interp(x, sig, q1d), x)   # t' = 1 / q1_dot
        assert r["time [s]"] == pytest.approx(integral, rel=2e-3)
        assert r["min_speed [km/h]"] <= min(r["entry_speed [km/h]"], r["exit_speed [km/h]"])
        assert r["max_lateral_acc [g]"] == pytest.approx(
            np.abs(df["a_y"][(sig >= a) & (sig <= b)]).max() / 9.80665, rel=0.05)
    twin = tmp_path / "twin"
    shutil.copytree(out, twin)
    cmp = compare_runs(out, twin, out_dir=tmp_path / "cmp")
    assert len(cmp["corners"]) == len(csv)
    assert (cmp["corners"]["delta_time [s]"] == 0).all()
    assert (tmp_path / "cmp" / "compare_corners.csv").exists()
    assert res.summary["corners"] == summary["corners"]
