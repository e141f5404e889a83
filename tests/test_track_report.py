"""Say what was done to the user's data: every step of the processing of a raw track file
and every assumed value is reported (by `pyomo-lap check`, by `pyomo-lap solve` and in the
results' provenance), a track width can be given, and a whole run says and stores it all
(with the exact words: one 'written to' line, 'lap time', a decoded solver message).

The raw file is written here from a geometry known exactly (a stadium: two straights and two
half circles) with a missing first elevation (0), a 300 m elevation jump, a stretch of
360 m without elevations and no widths; every expected figure comes from that geometry or
from the loaded track evaluated independently, never from a number the report printed."""
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from _tracks import write_ring_csv
from pyomo_lap import Track, load_track
from pyomo_lap.track import checks as tc
from pyomo_lap.cli import main
from pyomo_lap.track.gps import display_name

# ------------------------------------------------------------------ the raw file's geometry
LAT0, LON0 = 47.3, 8.5          # [deg] where the test track lies
R = 100.0                       # [m] radius of the half circles
STRAIGHT = 400.0                # [m] length of the straights
LENGTH = 2 * STRAIGHT + 2 * math.pi * R        # 1428.3 m
N = 143                         # points, about 10 m apart
H = LENGTH / N                  # [m] spacing
S = np.arange(N) * H            # [m] arc length of each point
JUMP_AT, JUMP = 50, 300.0       # point 50 (on a half circle) is 300 m too high
GAP = range(90, 125)            # points without elevation (0 in the file): 360 m of road
Z_RIPPLE = 0.4                  # [m] alternating noise on the elevations (removed by smoothing)
XY_RIPPLE = 0.25                # [m] alternating noise across the road (removed by smoothing)


def stadium(s):
    """Plan-view point (x, y) [m] and unit tangent at arc length s (counter-clockwise)."""
    s = float(np.mod(s, LENGTH))
    a1, a2, a3 = STRAIGHT, STRAIGHT + math.pi * R, 2 * STRAIGHT + math.pi * R
    if s < a1:
        return np.array([s, -R]), np.array([1.0, 0.0])
    if s < a2:
        th = -math.pi / 2 + (s - a1) / R
        return np.array([STRAIGHT + R * math.cos(th), R * math.sin(th)]), \
            np.array([-math.sin(th), math.cos(th)])
    if s < a3:
        return np.array([STRAIGHT - (s - a2), R]), np.array([-1.0, 0.0])
    th = math.pi / 2 + (s - a3) / R
    return np.array([R * math.cos(th), R * math.sin(th)]), np.array([-math.sin(th), math.cos(th)])


def terrain(s):
    """The road's true elevation [m]: a gentle hill (grade <= 1.8 %)."""
    return 120.0 + 4.0 * np.sin(2 * np.pi * np.asarray(s) / LENGTH)


def raw_points():
    """(x, y) [m] and elevation [m] of the file's points (nan: written as 0, missing)."""
    xy = np.empty((N, 2))
    for i, s in enumerate(S):
        p, t = stadium(s)
        xy[i] = p + XY_RIPPLE * (-1) ** i * np.array([-t[1], t[0]])
    z = terrain(S) + Z_RIPPLE * (-1.0) ** np.arange(N)
    z[JUMP_AT] += JUMP
    z[0] = np.nan
    z[list(GAP)] = np.nan
    return xy, z


def to_latlon(x, y):
    """Latitudes and longitudes [deg] of points x, y [m] in the azimuthal projection centred at
    (lat0, lon0)."""
    import pyproj
    tr = pyproj.Transformer.from_crs(
        f"+proj=aeqd +lat_0={LAT0} +lon_0={LON0} +datum=WGS84 +units=m +no_defs", "EPSG:4326",
        always_xy=True)
    lon, lat = tr.transform(x, y)
    return np.asarray(lat), np.asarray(lon)


def write_raw_json(path, name="Test Raceway Laguna Seca", short_name="Laguna Seca Raceway"):
    """A zaggyai-format file: lat/lon in 1e-7 degree, elevation in mm (0 = missing), no widths."""
    xy, z = raw_points()
    lat, lon = to_latlon(xy[:, 0], xy[:, 1])
    elev = np.where(np.isfinite(z), np.round(np.nan_to_num(z) * 1000), 0).astype(int)
    pts = [{"lat": int(round(a * 1e7)), "lon": int(round(b * 1e7)), "elev": int(e)}
           for a, b, e in zip(lat, lon, elev)]
    path.write_text(json.dumps({"name": name, "short_name": short_name,
                                "start_finish": {"lat": pts[0]["lat"], "lon": pts[0]["lon"],
                                                 "elev": 0},
                                "pts": pts}))
    return path


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """The raw stadium file (missing elevations, an outlier, a gap), written once for the
    module."""
    return write_raw_json(tmp_path_factory.mktemp("raw") / "stadium.json")


@pytest.fixture(scope="module")
def stadium_track(raw):
    """The stadium track loaded from the raw file."""
    return load_track(raw)


def by_step(track):
    """The track's processing steps by kind."""
    return {r["step"]: r for r in track.processing_steps}


def in_track_frame(track):
    """The raw points' plan view in the loaded track's coordinates (its projection)."""
    import pyproj
    xy, z = raw_points()
    lat, lon = to_latlon(xy[:, 0], xy[:, 1])
    tr = pyproj.Transformer.from_crs("EPSG:4326", track.provenance["projection"], always_xy=True)
    x, y = tr.transform(lon, lat)
    return np.column_stack([x, y]), z


def dense(track, step=0.05):
    """Arc lengths every ``step`` metres and the track evaluated there."""
    s = np.arange(0.0, track.length, step)
    return s, track.evaluate(s)


# ------------------------------------------------------------------ the raw file's processing
@pytest.mark.unit
def test_every_processing_step_of_a_raw_file_is_recorded_where_and_how_large(stadium_track):
    """Every step the loader took on the raw file (missing elevations, outlier dropped, gap
    filled, smoothing) is recorded with where it was and how large, against the planted
    defects."""
    tr = stadium_track
    steps = by_step(tr)
    assert {"elevation_missing", "outliers_dropped", "gap_filled", "smoothing_plan_view",
            "smoothing_elevation"} <= set(steps)
    # the missing elevations: the first point (s = 0) and the 35 of the stretch
    miss = steps["elevation_missing"]
    assert miss["count"] == 1 + len(GAP)
    where = np.array(miss["where_m"])[:, 0]
    assert where[0] == pytest.approx(0.0, abs=1.0)
    np.testing.assert_allclose(where[1:], S[list(GAP)], atol=3.0)
    # the 300 m jump: dropped, at its point, about 300 m from the elevations around it
    out = steps["outliers_dropped"]
    assert out["count"] == 1
    assert out["where_m"][0][0] == pytest.approx(S[JUMP_AT], abs=3.0)
    assert out["size"] == pytest.approx(JUMP, abs=3.0) and out["unit"] == "m"
    assert out["size_at_m"] == pytest.approx(S[JUMP_AT], abs=3.0)
    # the stretch without elevation: from the last elevation before it to the first after
    gap = steps["gap_filled"]
    a, b = S[GAP.start - 1], S[GAP.stop]
    assert gap["count"] == 1
    assert gap["where_m"][0] == [pytest.approx(a, abs=3.0), pytest.approx(b, abs=3.0)]
    assert gap["size"] == pytest.approx(b - a, abs=2.0) and b - a > 300.0
    # filled between the elevations of its ends: no zeros, no overshoot of a free spline
    _, tp = dense(tr, 1.0)
    inside = (tp.s > a) & (tp.s < b)
    z_in = tp.position[inside, 2]
    assert z_in.min() > min(terrain(a), terrain(b)) - 1.0
    assert z_in.max() < max(terrain(a), terrain(b)) + 1.0


@pytest.mark.unit
def test_smoothing_is_reported_by_how_much_it_moved_the_data(stadium_track):
    """The largest change reported equals the largest distance between a raw point and the
    loaded track, measured here on the track itself (dense samples, nearest point)."""
    from scipy.spatial import cKDTree
    tr = stadium_track
    steps = by_step(tr)
    xy, z = in_track_frame(tr)
    s, tp = dense(tr)
    d, j = cKDTree(tp.position[:, :2]).query(xy)
    pv = steps["smoothing_plan_view"]
    assert pv["count"] == N
    assert pv["size"] == pytest.approx(d.max(), abs=0.01)
    assert pv["size"] >= XY_RIPPLE * 0.8           # the noise across the road was removed
    kept = np.isfinite(z)
    kept[JUMP_AT] = False                             # the dropped outlier is reported apart
    dz = np.abs(z[kept] - tp.position[j[kept], 2])
    el = steps["smoothing_elevation"]
    assert el["count"] == kept.sum()
    assert el["size"] == pytest.approx(dz.max(), abs=0.01)
    at = np.argmin(np.abs(s[j[kept]] - el["size_at_m"]))     # the raw point reported
    assert dz[at] == pytest.approx(dz.max(), abs=0.01)
    assert Z_RIPPLE * 0.8 < el["size"] < 1.5          # the ripple went, the hill stayed


@pytest.mark.unit
def test_assumed_widths_and_banking_are_recorded_and_the_name_does_not_repeat(stadium_track):
    """The assumed widths and banking are recorded with how to set them; the display name does
    not repeat words."""
    tr = stadium_track
    q = {a["quantity"]: a for a in tr.assumptions}
    assert q["width"]["value"] == 4.0 and "--track-width" in q["width"]["set_with"]
    assert q["banking"]["value"] == 0.0 and "banking_rad" in q["banking"]["set_with"]
    tp = tr.evaluate([0.0, 700.0])
    assert np.all(tp.width_left == pytest.approx(4.0)) and np.all(tp.width_right == pytest.approx(4.0))
    assert tr.name == "Test Raceway Laguna Seca"


@pytest.mark.unit
def test_display_names_have_no_repeated_words():
    """display_name joins name and short name without repeating a word (abbreviations
    included)."""
    assert display_name("WeatherTech Raceway Laguna Seca", "Laguna Seca WeatherTech") == \
        "WeatherTech Raceway Laguna Seca"
    assert display_name("Nürburgring", "Nurburgr GP") == "Nürburgring GP"     # an abbreviation
    assert display_name("Nürburgring BTG", "Nurburn BTG") == "Nürburgring BTG"
    assert display_name("Spa", "") == "Spa" and display_name("", "Monza") == "Monza"
    assert display_name("Laguna Seca Laguna Seca", "") == "Laguna Seca"
    assert display_name("Circuit de la Sarthe", "Le Mans") == "Circuit de la Sarthe Le Mans"


@pytest.mark.unit
def test_csv_smoothing_is_recorded(tmp_path):
    """A CSV without an s column is smoothed: the change is reported and equals the largest
    distance of the file's points from the loaded track."""
    from scipy.spatial import cKDTree
    rng = np.random.default_rng(3)
    u = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    x = 100 * np.cos(u) + rng.normal(0, 0.05, u.size)
    y = 100 * np.sin(u) + rng.normal(0, 0.05, u.size)
    f = tmp_path / "noisy.csv"
    pd.DataFrame(dict(x=x, y=y, z=300 + 3 * np.sin(u))).to_csv(f, index=False)
    tr = load_track(f)
    steps = by_step(tr)
    assert {"smoothing_plan_view", "smoothing_elevation"} <= set(steps)
    _, tp = dense(tr)
    d, _ = cKDTree(tp.position[:, :2]).query(np.c_[x, y])
    assert steps["smoothing_plan_view"]["size"] == pytest.approx(d.max(), abs=0.005)


# ------------------------------------------------------------------ widths
@pytest.mark.unit
@pytest.mark.parametrize("bad", [0.0, -3.0, math.nan, math.inf, 500.0, "wide", True])
def test_a_bad_track_width_is_refused_naming_it(bad):
    """A track_width that is not a positive width in metres is refused naming it."""
    with pytest.raises(ValueError, match=r"track_width = .*expected the track's total width in "
                                         r"metres, > 0 m and at most 200 m"):
        tc.check_track_width(bad)


@pytest.mark.unit
def test_track_width_replaces_or_completes_the_widths(tmp_path, raw):
    # no widths in the file: 4 m each side, said
    """track_width replaces the file's widths (a step, no longer assumed) or completes missing
    ones."""
    tr = load_track(write_ring_csv(tmp_path / "plain.csv"))
    assert [a["quantity"] for a in tr.assumptions] == ["width", "banking"]
    # the total width given: half each side, said as a step, no longer assumed
    tr = load_track(tmp_path / "plain.csv", track_width=10.0)
    tp = tr.evaluate([0.0, 300.0])
    assert np.allclose(tp.width_left, 5.0) and np.allclose(tp.width_right, 5.0)
    assert [a["quantity"] for a in tr.assumptions] == ["banking"]
    ws = by_step(tr)["widths_set"]
    assert ws["size"] == 5.0 and "the data have none" in ws["detail"]
    # one side in the file: the other is assumed (and said)
    tr = load_track(write_ring_csv(tmp_path / "left.csv", {"width_left": 3.0}))
    assert [a["quantity"] for a in tr.assumptions] == ["width_right", "banking"]
    tp = tr.evaluate([10.0])
    assert tp.width_left[0] == pytest.approx(3.0) and tp.width_right[0] == pytest.approx(4.0)
    # both sides and the banking in the file: nothing assumed; the option wins when given
    f = write_ring_csv(tmp_path / "both.csv", {"width_left": 3.0, "width_right": 2.5,
                                                 "banking": 0.02})
    assert load_track(f).assumptions == []
    tr = load_track(f, track_width=9.0)
    assert np.allclose(tr.evaluate([5.0]).width_right, 4.5)
    assert "replacing the file's width_left and width_right" in by_step(tr)["widths_set"]["detail"]
    # raw JSON files have no widths
    tr = load_track(raw, track_width=12.0)
    assert np.allclose(tr.evaluate([100.0]).width_left, 6.0)
    assert "width" not in [a["quantity"] for a in tr.assumptions]
    with pytest.raises(ValueError, match="expected one of them"):
        Track.from_zaggy_json(raw, half_width=5.0, track_width=10.0)


@pytest.mark.unit
def test_bundled_track_says_what_its_build_assumed():
    """A bundled track says what its build assumed (its .json's notes), unless track_width
    replaces it."""
    ns = load_track("nordschleife")
    meta = json.loads((Path(__file__).resolve().parents[1] / "data" / "tracks" /
                       "nordschleife.json").read_text())
    q = {a["quantity"]: a for a in ns.assumptions}
    assert q["width"]["value"] == pytest.approx(meta["processing"]["half_width_m"])
    assert meta["width_note"] in q["width"]["reason"] and "banking" in q
    ns10 = load_track("nordschleife", track_width=10.0)
    assert "width" not in [a["quantity"] for a in ns10.assumptions]
    assert np.allclose(ns10.evaluate([0.0, 5000.0]).width_left, 5.0)


# ------------------------------------------------------------------ check and solve say it
def _row(output, title):
    line = next(ln for ln in output.splitlines() if ln.strip().startswith(title))
    nums = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", line.strip()[len(title):])]
    return line, nums


@pytest.mark.unit
def test_check_prints_the_steps_and_the_assumptions(raw):
    """pyomo-lap check prints the table of steps (count, where, size) and the assumed values."""
    r = CliRunner().invoke(main, ["check", "--track", str(raw)])
    assert r.exit_code == 0, r.output
    out = r.output
    assert "track Test Raceway Laguna Seca:" in out and "what was done to the track data" in out
    count, where, size, size_at = _row(out, "elevation outliers dropped")[1][:4]
    assert count == 1 and where == pytest.approx(S[JUMP_AT], abs=3)
    assert size == pytest.approx(JUMP, abs=3) and size_at == pytest.approx(S[JUMP_AT], abs=3)
    _, nums = _row(out, "elevation gaps filled")
    assert nums[0] == 1 and nums[1] == pytest.approx(S[GAP.start - 1], abs=3)
    assert nums[2] == pytest.approx(S[GAP.stop], abs=3)
    assert nums[3] == pytest.approx(S[GAP.stop] - S[GAP.start - 1], abs=3)
    assert _row(out, "elevations missing")[1][0] == 1 + len(GAP)
    for title in ("plan view smoothed", "elevation smoothed"):
        assert title in out
    assert "track: width = 4 m each side assumed: the data have no widths" in out
    assert "--track-width METRES" in out and "banking = 0 rad assumed" in out
    assert "fits the track everywhere (with the assumed widths above)" in out
    # the same without --repair-track or with it (nothing here needs a repair)
    r2 = CliRunner().invoke(main, ["check", "--track", str(raw), "--repair-track"])
    assert r2.exit_code == 0 and "elevation outliers dropped" in r2.output
    assert "track repaired" not in r2.output
    # a width given: said as a step, no longer assumed
    r3 = CliRunner().invoke(main, ["check", "--track", str(raw), "--track-width", "12"])
    assert r3.exit_code == 0, r3.output
    assert "widths set" in r3.output and "6 m each side" in r3.output
    assert "width = 4 m" not in r3.output and "fits the track everywhere\n" in r3.output
    r4 = CliRunner().invoke(main, ["check", "--track", str(raw), "--track-width", "-2"])
    assert r4.exit_code == 2 and "--track-width -2: expected the track's total width" in r4.output


@pytest.mark.unit
def test_solve_says_the_steps_and_assumptions_before_building(raw, tmp_path):
    """pyomo-lap solve says the steps and assumptions in one line each before building."""
    r = CliRunner().invoke(main, ["solve", "--track", str(raw), "--length", "500", "-v",
                                  "--solver", "no_such_solver", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2                          # stopped at the missing solver
    lines = r.output.splitlines()
    out = next(ln for ln in lines if ln.startswith("track data: elevation outliers dropped"))
    s_at = float(re.search(r"1 at s = (\d+) m", out).group(1))
    assert s_at == pytest.approx(S[JUMP_AT], abs=3) and "(largest 3" in out
    assert any(ln.startswith("track data: elevation gaps filled: 1 at s = ") for ln in lines)
    assert any(ln.startswith("track: width = 4 m each side") for ln in lines)
    assert "building the model" not in r.output
    r = CliRunner().invoke(main, ["solve", "--track-width", "0", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--track-width 0: expected the track's total width" in r.output


@pytest.mark.unit
def test_results_provenance_sheet_lists_every_step_and_assumption(tmp_path, stadium_track):
    """The results' summary and provenance sheet list every step and assumption of the track."""
    from pyomo_lap.results.table import read_summary, write_results
    tr = stadium_track
    summary = dict(lap_time_s=1.0, track_file=tr.provenance["source_file"],
                   track_processing=tr.processing_steps, track_assumptions=tr.assumptions,
                   track_repairs=["row 3: dropped"])
    where = write_results(tmp_path / "res", pd.DataFrame({"s": [0.0, 1.0]}), summary)
    back = read_summary(where)
    assert back["track_processing"] == tr.processing_steps
    assert back["track_assumptions"] == tr.assumptions
    sheet = pd.read_excel(where / "results.xlsx", sheet_name="provenance")
    steps = sheet[sheet["category"] == "processing step"]
    assert len(steps) == len(tr.processing_steps)
    row = steps[steps["item"] == "elevation outliers dropped"].iloc[0]
    assert row["count"] == 1 and row["value"] == pytest.approx(JUMP, abs=3)
    assert float(row["where [m]"]) == pytest.approx(S[JUMP_AT], abs=3)
    assumed = sheet[sheet["category"] == "assumed value"]
    assert set(assumed["item"]) == {"width", "banking"}
    assert sheet[sheet["category"] == "repair"]["detail"].tolist() == ["row 3: dropped"]
    assert sheet[sheet["item"] == "track_file"]["detail"].iloc[0] == str(Path(tr.provenance["source_file"]))
    summ = pd.read_excel(where / "results.xlsx", sheet_name="summary")
    assert "track_processing" not in set(summ["quantity"])       # not a JSON blob in a cell


# ------------------------------------------------------------------ a whole run
@pytest.mark.integration
def test_a_lap_of_the_raw_file_reports_everything(raw, tmp_path):
    """The raw file solved for a whole lap (single-track model, IPOPT's ASL executable, whose
    message has an escaped colon): one 'written to' line naming every file, 'lap time',
    the steps and assumptions said and stored, decoded message, absolute paths."""
    from pyomo_lap import solve_sector
    said = []
    out = tmp_path / "lap"
    solve_sector(track=raw, periodic=True, start=0.0, length=None, model="single-track",
                 solver="ipopt", out_dir=out, echo=said.append)
    written = [s for s in said if "written to" in s]
    assert len(written) == 1
    files = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert files == ["corners.csv", "results.xlsx", "solution.npz", "summary.json",
                     "trajectory.csv", "trajectory.parquet"]
    assert all(f in written[0] for f in files)
    assert said[-1].startswith("lap time ") and not any(s.startswith("sector time") for s in said)
    assert any(s.startswith("track data: elevation outliers dropped: 1 at s = ") for s in said)
    assert any(s.startswith("track: width = 4 m each side") for s in said)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["optimal"] and summary["periodic"]
    assert "\\x" not in summary["solver_message"] and ":" in summary["solver_message"]
    assert summary["track_file"] == str(raw.resolve())
    assert Path(summary["vehicle_file"]).is_absolute()
    assert summary["track"] == "Test Raceway Laguna Seca"
    assert {r["step"] for r in summary["track_processing"]} >= {"outliers_dropped", "gap_filled"}
    assert {a["quantity"] for a in summary["track_assumptions"]} == {"width", "banking"}
    sheet = pd.read_excel(out / "results.xlsx", sheet_name="provenance")
    assert "elevation outliers dropped" in set(sheet["item"])
    summ = pd.read_excel(out / "results.xlsx", sheet_name="summary")
    msg = summ[summ["quantity"] == "solver_message"]["value"].iloc[0]
    assert msg == summary["solver_message"]
