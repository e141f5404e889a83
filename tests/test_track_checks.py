"""Track data: every kind of bad input is detected before any solve, with a message naming the
file, the rows (lines) or the arc length, the values and what was expected; the repairs are
applied only when asked, reported, and give the track an independent computation expects."""
import json
import math
import warnings

import numpy as np
import pytest

from pyomo_lap import Track, load_track, load_vehicle
from pyomo_lap.track import checks as tc
from pyomo_lap.track.checks import TrackDataError, TrackRepairWarning
from pyomo_lap.track.built_checks import _segments_crossing

R = 100.0           # [m] test circle radius
N = 200             # points on it (3.14 m apart)


def circle(n=N, r=R, z0=300.0, dz=5.0):
    """A closed circle, counter-clockwise, gently undulating (grade <= dz/r = 5 %)."""
    u = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.c_[r * np.cos(u), r * np.sin(u), z0 + dz * np.sin(u)]


def write_csv(path, P, extra=None, cells=None, header=None):
    """CSV of points P (n,3) with extra columns; cells = {(row index, column index): text}."""
    extra = extra or {}
    cols = header or (["x", "y", "z"] + list(extra))
    with open(path, "w") as fh:
        fh.write(",".join(cols) + "\n")
        for i, p in enumerate(P):
            vals = [repr(float(v)) for v in p] + [repr(float(extra[k][i])) for k in extra]
            for (r, c), txt in (cells or {}).items():
                if r == i:
                    vals[c] = txt
            fh.write(",".join(vals) + "\n")
    return path


def refused(path, **kw) -> TrackDataError:
    """The TrackDataError of loading ``path`` (the message names the file)."""
    with pytest.raises(TrackDataError) as exc:
        Track.from_csv(path, **kw)
    assert str(path) in str(exc.value)
    return exc.value


def repaired(path, kinds, **kw) -> Track:
    """The track loaded with ``repair=True``: the findings are ``kinds``, all repaired, each
    warned once and recorded in the provenance."""
    with pytest.warns(TrackRepairWarning) as rec:
        tr = Track.from_csv(path, repair=True, **kw)
    assert sorted({f.kind for f in tr.findings}) == sorted(kinds)
    assert all(f.repaired for f in tr.findings)
    assert len(rec) == len(tr.findings)
    assert tr.provenance["repairs"] == [str(f) for f in tr.findings]
    return tr


# ------------------------------------------------------------------ good data stay untouched
@pytest.mark.unit
def test_clean_data_have_no_findings(tmp_path):
    """Clean data and the bundled Nordschleife load with no finding and no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr = Track.from_csv(write_csv(tmp_path / "ok.csv", circle()))
        assert tr.findings == [] and tr.closed
        assert tr.length == pytest.approx(2 * np.pi * R, rel=2e-3)
        ns = load_track("nordschleife")
        assert ns.findings == [] and "repairs" not in ns.provenance


# ------------------------------------------------------------------ missing values
@pytest.mark.unit
def test_missing_coordinates_detected_and_repaired(tmp_path):
    """Empty and non-numeric coordinates are refused naming column, row, line and cell; the
    repair interpolates them."""
    P = circle()
    f = write_csv(tmp_path / "gaps.csv", P, cells={(5, 1): "nan", (9, 2): "", (12, 0): "abc"})
    err = refused(f)
    msg = str(err)
    assert "column 'y'" in msg and "row 6 (line 7) 'nan'" in msg
    assert "column 'z'" in msg and "row 10 (line 11) ''" in msg
    assert "column 'x'" in msg and "row 13 (line 14) 'abc'" in msg
    assert "expected a finite number" in msg and "--repair-track" in msg
    assert {fd.kind for fd in err.findings} == {"missing_value"}
    tr = repaired(f, ["missing_value"])
    assert tr.closed and tr.length == pytest.approx(2 * np.pi * R, rel=2e-3)
    # the repair itself: x/y rows dropped, z linear in the chord between its neighbours
    Q = P.copy()
    Q[5, 1] = Q[12, 0] = Q[9, 2] = np.nan
    with pytest.warns(TrackRepairWarning):
        chk = tc.check_points(Q, True, repair=True)
    assert len(chk.points) == N - 2
    k = chk.labels.index("point 9")
    assert chk.points[k, 2] == pytest.approx(0.5 * (P[8, 2] + P[10, 2]), abs=1e-9)


@pytest.mark.unit
def test_missing_widths_and_banking(tmp_path):
    """Missing widths and banking are refused naming them; the repair interpolates them."""
    P = circle()
    ex = {"width_left": np.full(N, 4.0), "width_right": 3.0 + np.arange(N) / N,
          "banking": np.full(N, 0.05)}
    f = write_csv(tmp_path / "w.csv", P, ex, cells={(20, 4): "", (30, 5): "x"})
    msg = str(refused(f))
    assert "column 'width_right'" in msg and "row 21 (line 22) ''" in msg
    assert "column 'banking'" in msg and "row 31 (line 32) 'x'" in msg
    with pytest.warns(TrackRepairWarning, match="width_right"):
        chk = tc.check_points(P, True, attrs={"width_right": np.where(np.arange(N) == 20, np.nan,
                                                                       ex["width_right"])}, repair=True)
    assert chk.attrs["width_right"][20] == pytest.approx(ex["width_right"][20], abs=1e-12)
    # a whole column missing cannot be interpolated
    with pytest.raises(TrackDataError, match="width_left"):
        tc.check_points(P, True, attrs={"width_left": np.full(N, np.nan)}, repair=True)


@pytest.mark.unit
def test_too_few_points(tmp_path):
    """Fewer than 4 usable points are refused, repair or not."""
    f = write_csv(tmp_path / "three.csv", circle(3))
    err = refused(f, repair=True)
    assert "3 usable point(s), expected at least 4 points" in str(err)
    f = write_csv(tmp_path / "nanny.csv", circle(6), cells={(r, 0): "nan" for r in range(3)})
    err = refused(f, repair=True)
    assert [fd.kind for fd in err.findings][-1] == "too_few_points"


# ------------------------------------------------------------------ duplicates and GPS spikes
@pytest.mark.unit
def test_duplicated_points(tmp_path):
    """Repeated points are refused naming their rows; the repair drops them and leaves the
    track's length."""
    P = circle()
    Q = np.insert(P, [10, 40, 40], P[[9, 39, 39]], axis=0)   # one repeat, and a triple
    f = write_csv(tmp_path / "dup.csv", Q)
    err = refused(f)
    assert "3 point(s) repeat the previous point" in str(err)
    assert "row 11 (line 12)" in str(err) and "row 42 (line 43)" in str(err)
    tr = repaired(f, ["duplicate_points"])
    assert tr.length == pytest.approx(Track.from_csv(write_csv(tmp_path / "c.csv", P)).length,
                                      rel=1e-9)
    # the closing point of a loop repeating the first one is not a duplicate
    tr = Track.from_csv(write_csv(tmp_path / "closing.csv", np.vstack([P, P[:1]])))
    assert tr.findings == [] and tr.closed


@pytest.mark.unit
def test_gps_position_spike(tmp_path):
    """A GPS position spike is refused naming its row; the repair drops it and gives the track
    without the point."""
    P = circle()
    Q = P.copy()
    Q[50, :2] += [250.0, -180.0]
    f = write_csv(tmp_path / "spike.csv", Q)
    err = refused(f)
    assert err.findings[0].kind == "position_spike" and "row 51 (line 52)" in str(err)
    tr = repaired(f, ["position_spike"])
    clean = Track.from_csv(write_csv(tmp_path / "c.csv", np.delete(P, 50, axis=0)))
    assert tr.length == pytest.approx(clean.length, rel=1e-9)
    # a hairpin is not a spike: two 200 m legs 20 m apart, densely sampled
    t = np.linspace(0, 1, 100)
    leg = np.c_[200 * t, np.zeros_like(t)]
    turn = np.c_[200 + 10 * np.sin(np.linspace(0, np.pi, 15)[1:-1]),
                 10 - 10 * np.cos(np.linspace(0, np.pi, 15)[1:-1])]
    hair = np.vstack([leg, turn, np.c_[200 - 200 * t, np.full_like(t, 20.0)]])
    tr = Track.from_points(np.c_[hair, np.zeros(len(hair))], closed=False)
    assert tr.findings == []


# ------------------------------------------------------------------ loops that do not close
@pytest.mark.unit
def test_unclosed_loop(tmp_path):
    """A loop asked to close with a gap is refused with the gap's length; the repair bridges it
    by a chord."""
    P = circle()
    f = write_csv(tmp_path / "open.csv", P[:195])            # 6 spacings missing: 18.8 m
    err = refused(f, closed=True)
    assert err.findings[0].kind == "unclosed_loop"
    assert "row 195 (line 196)" in str(err) and "row 1 (line 2)" in str(err)
    assert "18.8" in str(err)
    tr = repaired(f, ["unclosed_loop"], closed=True)
    # bridged by a straight chord: the circle minus its arc plus the chord
    gap_angle = 6 * 2 * np.pi / N
    expected = R * (2 * np.pi - gap_angle) + 2 * R * np.sin(gap_angle / 2)
    assert tr.length == pytest.approx(expected, rel=5e-3)
    # without closed=True the same file is an open track (nothing to complain about)
    assert not Track.from_csv(f).closed
    # a half circle is not a loop: no repair
    f = write_csv(tmp_path / "half.csv", P[:100])
    err = refused(f, closed=True, repair=True)
    assert "load it as an open track" in str(err) and not err.findings[0].repairable


# ------------------------------------------------------------------ elevation glitches
@pytest.mark.unit
def test_elevation_zero_written_for_missing(tmp_path):
    """Elevations of 0 written for missing ones are refused naming the rows; the repair
    interpolates them."""
    P = circle()
    Q = P.copy()
    Q[[30, 31, 120], 2] = 0.0
    f = write_csv(tmp_path / "zeros.csv", Q)
    err = refused(f)
    assert err.findings[0].kind == "elevation_zero"
    assert "row 31 (line 32), row 32 (line 33), row 121 (line 122)" in str(err)
    with pytest.warns(TrackRepairWarning, match="elevation z = 0"):
        chk = tc.check_points(Q, True, repair=True)
    np.testing.assert_allclose(chk.points[[30, 31, 120], 2], P[[30, 31, 120], 2], atol=0.02)
    repaired(f, ["elevation_zero"])
    # a flat track at sea level (all z = 0) is fine
    flat = P.copy()
    flat[:, 2] = 0.0
    assert Track.from_csv(write_csv(tmp_path / "flat.csv", flat)).findings == []


@pytest.mark.unit
def test_elevation_spikes_and_steps(tmp_path):
    """Elevation spikes (one and two points) are refused naming the rows and removed by the
    repair; a step is refused and has no repair."""
    P = circle()
    Q = P.copy()
    Q[60, 2] += 40.0                      # one point
    Q[[140, 141], 2] -= 25.0              # two points
    f = write_csv(tmp_path / "zspike.csv", Q)
    err = refused(f)
    assert err.findings[0].kind == "elevation_spike"
    for row in (61, 141, 142):
        assert f"row {row} (line {row + 1})" in str(err)
    with pytest.warns(TrackRepairWarning, match="glitches"):
        chk = tc.check_points(Q, True, repair=True)
    np.testing.assert_allclose(chk.points[[60, 140, 141], 2], P[[60, 140, 141], 2], atol=0.05)
    repaired(f, ["elevation_spike"])
    # a step (all elevations after row 80 shifted): which side is right cannot be told
    S = P.copy()
    S[80:, 2] += 30.0
    err = refused(write_csv(tmp_path / "step.csv", S), repair=True)
    assert err.findings[0].kind == "elevation_step" and not err.findings[0].repairable
    assert "+29.8" in str(err) and "row 80 (line 81) and row 81 (line 82)" in str(err)


@pytest.mark.unit
def test_steep_grade_of_the_built_track(tmp_path):
    # a spiral ramp climbing 50 % over one and a half turns: no single jump (1.6 m
    # spacing), but the road is a wall
    """A built track steeper than max_grade is refused with its grade; the limit is a
    parameter."""
    n = 600
    u = np.linspace(0, 3 * np.pi, n)
    r = 100.0
    P = np.c_[r * np.cos(u), r * np.sin(u), 10.0 + 0.5 * r * u]
    err = refused(write_csv(tmp_path / "wall.csv", P), repair=True)
    assert err.findings[0].kind == "steep_grade" and "+50.0 %" in str(err)
    assert "steeper than 35 %" in str(err)
    # the limit is a parameter
    assert Track.from_csv(tmp_path / "wall.csv", max_grade=0.6).findings == []


# ------------------------------------------------------------------ widths, banking, units
@pytest.mark.unit
def test_bad_widths_and_banking(tmp_path):
    """Negative or huge widths and a banking in degrees are refused, each named."""
    P = circle()
    ex = {"width_left": np.full(N, 4.0), "width_right": np.full(N, 4.0), "banking": np.zeros(N)}
    ex["width_left"][7] = -1.0
    ex["width_right"][8] = 4000.0           # millimetres
    ex["banking"][9] = 5.0                  # degrees
    err = refused(write_csv(tmp_path / "w.csv", P, ex), repair=True)
    kinds = [fd.kind for fd in err.findings]
    assert kinds == ["bad_width", "bad_width", "bad_banking"]
    msg = str(err)
    assert "row 8 (line 9) (-1 m)" in msg and "row 9 (line 10) (4000 m)" in msg
    assert "row 10 (line 11) (5 rad)" in msg and "radians, not degrees" in msg


@pytest.mark.unit
def test_latitude_longitude_instead_of_metres(tmp_path):
    """Degrees or millimetres in place of metres give a track too short or too long, refused
    saying metres."""
    u = np.linspace(0, 2 * np.pi, 100, endpoint=False)
    ll = np.c_[50.3 + 1e-3 * np.cos(u), 6.9 + 1e-3 * np.sin(u), np.full_like(u, 320.0)]
    err = refused(write_csv(tmp_path / "latlon.csv", ll), repair=True)
    assert err.findings[0].kind == "too_short" and "metres" in str(err)
    # millimetres for metres on a 2 km ring: a 2000 km track
    err = refused(write_csv(tmp_path / "mm.csv", circle(r=318e3)), repair=True)
    assert err.findings[0].kind == "too_long" and "at most 200 km" in str(err)


# ------------------------------------------------------------------ self-intersections
@pytest.mark.unit
def test_self_intersecting_centreline(tmp_path):
    """A figure of eight with elevations equal where its branches cross (z = 10 sin 2u: 0 at
    u = 0 and pi) is refused, and the message says what to do (the bridge's height in z, or
    --flat); with a bridge it loads."""
    u = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    eight = np.c_[200 * np.sin(u), 100 * np.sin(2 * u), 10 * np.sin(2 * u)]
    err = refused(write_csv(tmp_path / "eight.csv", eight), repair=True)
    assert err.findings[0].kind == "self_intersection"
    assert "(x, y) = (0.0, 0.0) m" in str(err) and "s = 0.0 m and s = 611.2 m" in str(err)
    assert "give its height in the elevations" in str(err) and "--flat" in str(err)
    # the same figure eight with a bridge (20 m between the branches at the crossing)
    bridge = eight.copy()
    bridge[:, 2] = 10 * np.cos(u)
    tr = Track.from_csv(write_csv(tmp_path / "bridge.csv", bridge))
    assert tr.findings == [] and tr.closed
    # the crossing test against an independent brute-force O(n^2) check on random polylines
    rng = np.random.default_rng(3)
    for _ in range(20):
        Q = rng.uniform(0, 10, (12, 2))
        got = {(min(i, j), max(i, j)) for i, j, _, _ in _segments_crossing(Q, False)}
        want = set()
        for i in range(11):
            for j in range(i + 2, 11):
                a, b, c, d = Q[i], Q[i + 1], Q[j], Q[j + 1]
                o = lambda p, q, r: np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))  # noqa: E731
                if o(a, b, c) != o(a, b, d) and o(c, d, a) != o(c, d, b):
                    want.add((i, j))
        assert got == want


# ------------------------------------------------------------------ the car and the sector
@pytest.mark.unit
def test_track_narrower_than_the_car(tmp_path):
    """A stretch narrower than the car is refused where it is; a sector before it is fine; the
    margin counts."""
    P = circle()
    wl = np.full(N, 4.0)
    wl[100:110] = 0.5                          # a chicane of bollards: 0.5 + 0.6 < 1.40 m
    f = write_csv(tmp_path / "narrow.csv", P, {"width_left": wl, "width_right": np.full(N, 0.6)})
    tr = Track.from_csv(f)
    p = load_vehicle("fsae")
    with pytest.raises(TrackDataError) as exc:
        tc.check_vehicle_fits(tr, p, 0.0, None)
    msg = str(exc.value)
    assert exc.value.findings[0].kind == "narrower_than_car" and "1.40 m wide" in msg
    # where: the narrow part starts at point 100, i.e. s = 100/200 of the lap, roughly
    s0 = float(msg.split("on s = ")[1].split("-")[0])
    assert s0 == pytest.approx(tr.length * 100 / N, abs=10.0)
    tc.check_vehicle_fits(tr, p, 0.0, 200.0)      # a sector before it is fine
    with pytest.raises(TrackDataError, match="margin"):
        tc.check_vehicle_fits(tr, p, 0.0, 200.0, margin=2.0)


@pytest.mark.unit
def test_sector_past_the_end_of_an_open_track():
    """A sector past the end of an open track is refused, or shortened with repair; bad starts
    and lengths are refused."""
    t = np.linspace(0, 300, 151)
    tr = Track.from_points(np.c_[t, 0.01 * t ** 1.5, np.zeros_like(t)], closed=False, name="strip")
    L = tr.length
    with pytest.raises(TrackDataError, match=r"past the end of the open track.*expected length <= "):
        tc.check_sector(tr, 100.0, 500.0)
    with pytest.warns(TrackRepairWarning):
        start, length, fixes = tc.check_sector(tr, 100.0, 500.0, repair=True)
    assert (start, length) == (100.0, pytest.approx(L - 100.0)) and fixes[0].repaired
    assert tc.check_sector(tr, 100.0, 50.0) == (100.0, 50.0, [])
    for bad_start in (-1.0, L + 1, math.nan):
        with pytest.raises(TrackDataError, match="start"):
            tc.check_sector(tr, bad_start, 10.0, repair=True)
    for bad_length in (0.0, -5.0, math.inf):
        with pytest.raises(TrackDataError, match="length"):
            tc.check_sector(tr, 0.0, bad_length, repair=True)
    # closed tracks wrap: no limit
    ring = Track.from_points(circle(), closed=True)
    assert tc.check_sector(ring, 600.0, 500.0)[1] == 500.0


# ------------------------------------------------------------------ unreadable files
@pytest.mark.unit
def test_unreadable_track_files(tmp_path):
    """Missing, empty and binary track files are refused naming the file."""
    with pytest.raises(FileNotFoundError, match="nowhere.csv"):
        load_track(tmp_path / "nowhere.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="empty.csv: empty file"):
        load_track(tmp_path / "empty.csv")
    (tmp_path / "bin.csv").write_bytes(b"x,y,z\n\xff\xfe\x00\x01")
    with pytest.raises(ValueError, match="bin.csv"):
        load_track(tmp_path / "bin.csv")
    (tmp_path / "track.gpx").write_text("<gpx/>")
    with pytest.raises(ValueError, match=r"unknown type '\.gpx'"):
        load_track(tmp_path / "track.gpx")
    for name, text in (("bad.json", "{not json"), ("nopts.json", json.dumps({"name": "x"})),
                       ("nolat.json", json.dumps({"pts": [{"lon": 1}] * 5}))):
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            load_track(tmp_path / name)


def _eight(n=300):
    """A figure of eight through (0, 0) twice: at u = 0 (s = 0) and u = pi (half the lap)."""
    u = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return 200 * np.sin(u), 100 * np.sin(2 * u)


def _bridge_step(tr):
    return next(st for st in tr.processing_steps if st["step"] == "crossing_bridge")


@pytest.mark.unit
@pytest.mark.parametrize("layout", ["tum", "xyz"])
def test_a_flat_figure_of_eight_is_a_bridge(tmp_path, layout):
    """A figure of eight without elevation data, in the TUM racetrack database's layout (no z)
    and in the x, y, z layout (z = 0 everywhere): the crossing at (0, 0) is taken as a bridge,
    the later branch (s = L/2) over the earlier (s = 0), reported by one processing step; the
    track stays flat; its length is the curve's (the integral of the parametrisation's speed,
    computed here by quadrature)."""
    from scipy.integrate import quad
    x, y = _eight()
    f = tmp_path / f"eight_{layout}.csv"
    if layout == "tum":
        f.write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n"
                     + "".join(f"{a:.6f},{b:.6f},5.0,5.0\n" for a, b in zip(x, y)))
    else:
        write_csv(f, np.c_[x, y, np.zeros_like(x)])
    tr = Track.from_csv(f)
    L = quad(lambda u: math.hypot(200 * math.cos(u), 200 * math.cos(2 * u)), 0, 2 * math.pi,
             limit=200)[0]
    assert tr.length == pytest.approx(L, rel=1e-4)
    (br,) = tr.provenance["bridges"]
    assert br["xy"] == [0.0, 0.0] and br["s_lower"] == pytest.approx(0.0, abs=0.5)
    assert br["s_upper"] == pytest.approx(L / 2, abs=0.5)
    step = _bridge_step(tr)
    assert step["count"] == 1 and "the later branch in the direction of travel" in step["detail"]
    assert np.all(tr.evaluate(tr.sample_s(5.0)).position[:, 2] == 0.0)
    from pyomo_lap.track.built_checks import check_track      # the other branch on top
    check_track(tr, upper_branch="earlier")
    assert tr.provenance["bridges"][0]["s_upper"] == pytest.approx(0.0, abs=0.5)
    assert [st["step"] for st in tr.processing_steps].count("crossing_bridge") == 1


@pytest.mark.unit
def test_flat_takes_a_crossing_with_equal_elevations_as_a_bridge(tmp_path):
    """The refused figure of eight with elevations (equal at the crossing) loads with flat=True:
    z = 0, the steps `flattened` and `crossing_bridge`."""
    x, y = _eight()
    f = write_csv(tmp_path / "eight.csv", np.c_[x, y, 10 * np.sin(2 * np.linspace(0, 2 * np.pi, 300, endpoint=False))])
    refused(f)
    tr = Track.from_csv(f, flat=True)
    kinds = [st["step"] for st in tr.processing_steps]
    assert "flattened" in kinds and "crossing_bridge" in kinds
    assert any(a["quantity"] == "elevation" and "flat=True" in a["reason"] for a in tr.assumptions)
