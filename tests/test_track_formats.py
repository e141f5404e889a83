"""The track formats users bring (issue 25): the TUM racetrack database's centreline with
widths, a ';'-separated file with a decimal comma, the tool's own exported columns, a GPS
logger's CSV, left and right boundaries in KML. Each file holds a known circle (or, for the
solves, a stadium oval); its length, curvature and widths are checked against the closed form,
and each goes through the same checks and repair reports as the other loaders."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pyomo_lap.track.checks import TrackDataError, TrackRepairWarning
from pyomo_lap.track.geometry import Track
from pyomo_lap.track.loading import load_track

R = 100.0                  # [m] radius of the circles
LAT0, LON0 = 47.2195, 14.7647


def _circle(n, r=R, phase=0.0):
    th = phase + np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    return r * np.cos(th), r * np.sin(th), th


def _to_lat_lon(x, y):
    """Latitude, longitude [deg] of points x, y [m] east/north of (LAT0, LON0), by pyproj's
    inverse azimuthal equidistant projection (distances from the centre exact)."""
    import pyproj
    inv = pyproj.Transformer.from_crs(
        f"+proj=aeqd +lat_0={LAT0} +lon_0={LON0} +datum=WGS84 +units=m", "EPSG:4326",
        always_xy=True)
    lon, lat = inv.transform(x, y)
    return np.asarray(lat), np.asarray(lon)


def _curvature_ok(tr, kappa, tol):
    """The geodesic curvature Omega_z along the lap: its mean is 1/R to 1e-4 (the integral of
    the curvature of a closed plane curve is 2 pi), every value within ``tol`` of it."""
    s = np.linspace(0.0, tr.length, 400, endpoint=False)
    om = tr.evaluate(s).omega[:, 2]
    assert np.mean(om) == pytest.approx(kappa, rel=1e-4)
    assert np.max(np.abs(om - kappa)) < tol, (om.min(), om.max(), kappa)


# The light smoothing of Track.from_points (cut-off 3 x the point spacing, points every 2-2.5 m
# here) leaves a ripple of about 2 % in the curvature at the points' spacing: the tolerance of
# the centreline files' curvature. The GPS and KML loaders smooth more (30 m cut-off) or
# resample densely first: 0.2 %.
RIPPLE = 0.03 / R


# ---- the TUM racetrack database's layout ---------------------------------------------------------

@pytest.mark.unit
def test_tum_centreline_with_widths_reads_as_a_flat_circle(tmp_path):
    """'# x_m,y_m,w_tr_right_m,w_tr_left_m' (the header in a comment line, no z), points every
    2.1 m, the last not repeating the first: a closed, flat loop 2 pi R long, curvature 1/R
    (counter-clockwise: positive), the widths as given."""
    x, y, _ = _circle(300)
    f = tmp_path / "Circle.csv"
    f.write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n"
                 + "".join(f"{a:.6f},{b:.6f},5.250,4.100\n" for a, b in zip(x, y)))
    tr = load_track(f)
    assert tr.closed and tr.length == pytest.approx(2 * math.pi * R, rel=3e-5)
    _curvature_ok(tr, 1.0 / R, RIPPLE)
    tp = tr.evaluate(np.linspace(0.0, tr.length, 50))
    assert np.allclose(tp.width_right, 5.25, atol=1e-9) and np.allclose(tp.width_left, 4.1, atol=1e-9)
    assert np.allclose(tp.position[:, 2], 0.0)
    assert any(a["quantity"] == "elevation" and a["value"] == 0.0 for a in tr.assumptions)
    step = next(s for s in tr.processing_steps if s["step"] == "file_read")
    assert "TUM racetrack database" in step["detail"] and "comment line" in step["detail"]


@pytest.mark.unit
def test_tum_layout_with_z_keeps_the_elevation(tmp_path):
    """The optional z_m column: an undulating circle z = 300 + 3 sin(theta); its 3D length is
    the integral of sqrt(R^2 + (3 cos theta)^2) d theta."""
    x, y, th = _circle(400)
    z = 300 + 3 * np.sin(th)
    f = tmp_path / "hill.csv"
    f.write_text("# x_m,y_m,z_m,w_tr_right_m,w_tr_left_m\n"
                 + "".join(f"{a:.6f},{b:.6f},{c:.6f},6,6\n" for a, b, c in zip(x, y, z)))
    tr = load_track(f)
    t = np.linspace(0, 2 * np.pi, 200001)
    exact = np.trapezoid(np.sqrt(R ** 2 + (3 * np.cos(t)) ** 2), t)
    assert tr.length == pytest.approx(exact, rel=1e-5)
    tp = tr.evaluate(np.linspace(0.0, tr.length, 100, endpoint=False))
    assert tp.position[:, 2].max() == pytest.approx(303.0, abs=0.01)
    assert not any(a["quantity"] == "elevation" for a in tr.assumptions)


@pytest.mark.unit
def test_tum_layout_goes_through_the_same_checks(tmp_path):
    """A negative width and a position glitch: refused with the rows named (the checks of
    every loader); the glitch is repaired with repair=True and reported."""
    x, y, _ = _circle(200)
    rows = [f"{a:.6f},{b:.6f},5,5\n" for a, b in zip(x, y)]
    rows[17] = f"{x[17]:.6f},{y[17]:.6f},-5,5\n"
    f = tmp_path / "bad.csv"
    f.write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n" + "".join(rows))
    with pytest.raises(TrackDataError, match=r"width_right.*row 18 \(line 19\).*-5"):
        load_track(f)
    rows[17] = f"{x[17]:.6f},{y[17]:.6f},5,5\n"
    rows[40] = f"{x[40] + 300:.6f},{y[40]:.6f},5,5\n"
    f.write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n" + "".join(rows))
    with pytest.raises(TrackDataError, match=r"far off the line.*row 41"):
        load_track(f)
    with pytest.warns(TrackRepairWarning):
        tr = load_track(f, repair=True)
    assert [g.kind for g in tr.findings] == ["position_spike"]
    assert tr.length == pytest.approx(2 * math.pi * R, rel=1e-4)


# ---- separators, decimal comma, units in the header -----------------------------------------------

@pytest.mark.unit
def test_semicolon_file_with_decimal_comma(tmp_path):
    """x;y;z with 48,5-style numbers: read with ';' and the decimal comma, said in the step
    file_read; the numbers are those written."""
    x, y, th = _circle(250)
    z = 10 + np.cos(th)
    f = tmp_path / "semi.csv"
    f.write_text("x;y;z\n" + "".join(f"{a:.6f};{b:.6f};{c:.4f}\n".replace(".", ",")
                                      for a, b, c in zip(x, y, z)))
    tr = load_track(f)
    assert tr.length == pytest.approx(np.trapezoid(
        np.sqrt(R ** 2 + np.sin(np.linspace(0, 2 * np.pi, 100001)) ** 2),
        np.linspace(0, 2 * np.pi, 100001)), rel=3e-5)
    _curvature_ok(tr, 1.0 / R, RIPPLE)
    step = next(s for s in tr.processing_steps if s["step"] == "file_read")
    assert "';'" in step["method"] and "decimal comma" in step["method"]


@pytest.mark.unit
def test_units_in_the_header_and_the_tools_own_columns(tmp_path):
    """'x [m]' (the tool's output style, refused before) and the columns of trajectory.csv
    (x_spine [m], width_left [m], ...; an s [m] column that wraps to 0 at the end of a lap, as
    a closed lap's last point) read as a centreline; a unit other than metres is refused."""
    x, y, th = _circle(360)
    f = tmp_path / "units.csv"
    f.write_text("x [m],y [m],z [m]\n" + "".join(f"{a},{b},0\n" for a, b in zip(x, y)))
    assert load_track(f).length == pytest.approx(2 * math.pi * R, rel=3e-5)
    f = tmp_path / "trajectory.csv"
    s = R * th
    lines = [f"{si:.6f},{a:.6f},{b:.6f},5.0,3.0,4.0,0.1\n" for si, a, b in zip(s, x, y)]
    lines.append(f"0,{x[0]:.6f},{y[0]:.6f},5.0,3.0,4.0,0.1\n")       # the lap's end: s wraps
    f.write_text("s [m],x_spine [m],y_spine [m],z_spine [m],width_left [m],width_right [m],"
                 "q2 [m]\n" + "".join(lines))
    tr = load_track(f)
    assert tr.closed and tr.length == pytest.approx(2 * math.pi * R, rel=3e-5)
    _curvature_ok(tr, 1.0 / R, RIPPLE)
    tp = tr.evaluate([0.0, 100.0])
    assert np.allclose(tp.width_left, 3.0) and np.allclose(tp.width_right, 4.0)
    assert "trajectory.csv" in next(s for s in tr.processing_steps if s["step"] == "file_read")["detail"]
    f.write_text("x [km],y [km],z [km]\n0,0,0\n1,0,0\n1,1,0\n0,1,0\n")
    with pytest.raises(ValueError, match=r"'x \[km\]' is in 'km'; expected m"):
        load_track(f)


@pytest.mark.unit
def test_a_header_that_is_not_understood_says_how_the_file_was_read(tmp_path):
    """A header that is not understood is refused saying how the file was read and the accepted
    names."""
    f = tmp_path / "pipes.csv"
    f.write_text("x|y|z\n0|0|0\n10|0|0\n10|10|0\n0|10|0\n")
    with pytest.raises(ValueError, match=r"missing required column 'x'.*read with columns "
                                         r"separated by ','.*header is one column"):
        load_track(f)
    f = tmp_path / "east.csv"
    f.write_text("east;north;height\n0;0;0\n10;0;0\n10;10;0\n0;10;0\n")
    with pytest.raises(ValueError, match=r"missing required column 'x' \(accepted names: x_m, x, "
                                         r"x_spine\).*separated by ';'.*docs/tracks.md"):
        load_track(f)


# ---- a GPS logger's CSV ---------------------------------------------------------------------------

@pytest.mark.unit
def test_gps_logger_csv_with_common_names_semicolons_and_altitude(tmp_path):
    """Time;Latitude;Longitude;Altitude (m);Speed with decimal commas: a circle of radius
    150 m around (LAT0, LON0) at 600 m. Processed as raw GPS data (projection, 30 m
    plan-view cut-off): length 2 pi R, curvature 1/R; the elevation stays 600 m."""
    r = 150.0
    x, y, th = _circle(300, r)
    lat, lon = _to_lat_lon(x, y)
    f = tmp_path / "logger.csv"
    f.write_text("Time;Latitude;Longitude;Altitude (m);Speed\n" + "".join(
        f"{0.1 * i:.1f};{lat[i]:.9f};{lon[i]:.9f};600.00;42\n".replace(".", ",")
        for i in range(len(x))))
    tr = load_track(f)
    assert tr.closed and tr.length == pytest.approx(2 * math.pi * r, rel=1e-5)
    _curvature_ok(tr, 1.0 / r, 2e-5)
    # (the elevation smoother, 400 m cut-off, keeps a constant to a few cm: 599.97 m)
    assert np.allclose(tr.evaluate(np.linspace(0, tr.length, 20)).position[:, 2], 600.0, atol=0.1)
    step = tr.processing_steps[0]
    assert step["step"] == "file_read" and "GPS" in step["detail"] and "'Latitude'" in step["detail"]
    assert tr.provenance["projection"].startswith("+proj=aeqd")


@pytest.mark.unit
def test_gps_csv_without_altitude_is_flat_and_swapped_columns_are_refused(tmp_path):
    """A GPS CSV file without altitude loads flat (an assumed value); swapped latitude and
    longitude are refused."""
    x, y, _ = _circle(200)
    lat, lon = _to_lat_lon(x, y)
    f = tmp_path / "flat.csv"
    f.write_text("lat,lng\n" + "".join(f"{a:.9f},{b:.9f}\n" for a, b in zip(lat, lon)))
    tr = load_track(f)
    assert tr.length == pytest.approx(2 * math.pi * R, rel=1e-5)
    flat = [a for a in tr.assumptions if a["quantity"] == "elevation"]
    assert flat and "no altitude column" in flat[0]["reason"]
    # latitude 147 deg: the columns are swapped (lon = 147, lat = -33: Sydney's)
    f.write_text("latitude,longitude\n" + "".join(
        f"{151.2 + a / 1e5:.9f},{-33.9 + b / 1e5:.9f}\n" for a, b in zip(x, y)))
    with pytest.raises(TrackDataError, match=r"latitude and longitude look swapped.*'latitude'"):
        load_track(f)


# ---- boundaries in KML -------------------------------------------------------------------------------

def _kml(lines):
    body = "".join(f"<Placemark><name>{name}</name><LineString><tessellate>1</tessellate>"
                   f"<coordinates>{coords}</coordinates></LineString></Placemark>"
                   for name, coords in lines)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2">'
            f"<Document>{body}</Document></kml>")


def _ring(r, n, alt=None, sep=" ", phase=0.0):
    x, y, _ = _circle(n, r, phase)
    lat, lon = _to_lat_lon(x, y)
    if alt is None:
        return sep.join(f"{b:.9f},{a:.9f}" for a, b in zip(lat, lon))
    return sep.join(f"{b:.9f},{a:.9f},{alt:.2f}" for a, b in zip(lat, lon))


@pytest.mark.unit
def test_kml_with_two_named_linestrings(tmp_path):
    """Left and right boundaries of a counter-clockwise ring (left: the inner circle, 94 m;
    right: the outer, 106 m; 180 and 330 points, the right one first in the file): the
    centreline is the 100 m circle, 6 m each side."""
    f = tmp_path / "ring.kml"
    f.write_text(_kml([("Right edge", _ring(R + 6, 330, 250.0)),
                       ("Left edge", _ring(R - 6, 180, 250.0, phase=0.01))]))
    tr = load_track(f)
    assert tr.closed and tr.length == pytest.approx(2 * math.pi * R, rel=2e-5)
    _curvature_ok(tr, 1.0 / R, 2e-5)
    tp = tr.evaluate(np.linspace(0.0, tr.length, 60, endpoint=False))
    assert np.allclose(tp.width_left, 6.0, atol=2e-3) and np.allclose(tp.width_right, 6.0, atol=2e-3)
    assert np.allclose(tp.position[:, 2], 250.0, atol=1e-6)
    kinds = [s["step"] for s in tr.processing_steps]
    assert kinds[:2] == ["file_read", "centreline_from_boundaries"]
    assert "'Left edge' (left)" in tr.processing_steps[0]["detail"]


@pytest.mark.unit
def test_kml_pair_of_files_as_fastest_lap_writes_them(tmp_path):
    """NAME_left.kml and NAME_right.kml beside it, each one LineString whose numbers are all
    separated by ', ' (fastest-lap's catalunya_left.kml), no altitude: the same ring, flat;
    loading either file finds the other."""
    x, y, _ = _circle(240, R - 5)
    lat, lon = _to_lat_lon(x, y)
    left = ", ".join(f"{b:.9f}, {a:.9f}, 0" for a, b in zip(lat, lon))
    (tmp_path / "ring_left.kml").write_text(_kml([("ring_left", left)]))
    (tmp_path / "ring_right.kml").write_text(_kml([("ring_right", _ring(R + 5, 260, 0.0))]))
    tr = load_track(tmp_path / "ring_right.kml")
    assert tr.name == "ring" and tr.length == pytest.approx(2 * math.pi * R, rel=2e-5)
    tp = tr.evaluate(np.linspace(0.0, tr.length, 40, endpoint=False))
    assert np.allclose(tp.width_left, 5.0, atol=4e-3) and np.allclose(tp.width_right, 5.0, atol=4e-3)
    assert np.allclose(tp.position[:, 2], 0.0)
    from pyomo_lap.track.boundaries import _kml_boundaries       # from the left file: the same pair
    (lc, rc), how, files = _kml_boundaries(tmp_path / "ring_left.kml")
    assert [f.name for f in files] == ["ring_left.kml", "ring_right.kml"] and len(lc) == 240
    (tmp_path / "ring_right.kml").unlink()
    with pytest.raises(FileNotFoundError, match=r"right boundary in .*ring_right\.kml"):
        load_track(tmp_path / "ring_left.kml")


@pytest.mark.unit
def test_kml_boundaries_on_the_wrong_sides(tmp_path):
    """The outer circle named left of a counter-clockwise ring: refused (boundary_side), read
    swapped with repair=True (reported)."""
    f = tmp_path / "swapped.kml"
    f.write_text(_kml([("left", _ring(R + 6, 200, 100.0)), ("right", _ring(R - 6, 200, 100.0))]))
    with pytest.raises(TrackDataError, match=r"left boundary lies right of the direction"):
        load_track(f)
    with pytest.warns(TrackRepairWarning):
        tr = load_track(f, repair=True)
    assert [g.kind for g in tr.findings] == ["boundary_side"]
    assert tr.length == pytest.approx(2 * math.pi * R, rel=2e-5)


@pytest.mark.unit
def test_from_boundaries_in_metres_open_road():
    """Two parallel straight boundaries 8 m apart with a bend (an open road): the centreline
    is midway, 4 m each side, and as long as the middle line."""
    s = np.linspace(0.0, 300.0, 151)
    mid = np.column_stack([s, 20 * np.tanh((s - 150) / 40), np.zeros_like(s)])
    d = np.gradient(mid[:, :2], s, axis=0)
    n = np.column_stack([-d[:, 1], d[:, 0]]) / np.linalg.norm(d, axis=1)[:, None]
    left = mid.copy()
    right = mid.copy()
    left[:, :2] += 4 * n
    right[:, :2] -= 4 * n
    tr = Track.from_boundaries(left, right, closed=False, name="bend")
    exact = np.trapezoid(np.hypot(1.0, np.gradient(mid[:, 1], s)), s)
    assert not tr.closed and tr.length == pytest.approx(exact, rel=2e-3)
    tp = tr.evaluate(np.linspace(10.0, tr.length - 10.0, 30))
    assert np.allclose(tp.width_left, 4.0, atol=0.02) and np.allclose(tp.width_right, 4.0, atol=0.02)


# ---- each format solves a closed lap ---------------------------------------------------------------

@pytest.mark.integration
def test_each_format_solves_the_same_closed_lap(stadium_lap, tmp_path):
    """The stadium oval (two 150 m straights, two 50 m half circles, 12 m wide) in each format:
    the FSAE car's closed lap solves to optimality on each (coarse mesh, 20 m elements), over
    the oval's length, and the lap times agree within 0.5 % (the GPS and KML loaders smooth the
    plan view at 30 m, which rounds the steps of curvature between straights and bends). The
    ``tum`` file's lap is the session's shared one (tests/_shared.py: the same call)."""
    import _stadium
    from pyomo_lap import solve_sector
    laps = {}
    for fmt in ("tum", "semicolon", "own", "gps", "kml"):
        if fmt == "tum":
            ok, termination, summary = (stadium_lap.ok, stadium_lap.termination,
                                        stadium_lap.summary)
        else:
            f = _stadium.write(fmt, tmp_path)
            _, rep, _, summary = solve_sector(
                track=str(f), vehicle="fsae", periodic=True, length=None,
                track_width=12.0 if fmt == "gps" else None,
                ocp_options={"element_length": 20.0}, out_dir=None, echo=lambda *a: None)
            ok, termination = rep.ok, rep.termination_condition
        assert ok, (fmt, termination)
        assert summary["length_m"] == pytest.approx(_stadium.LENGTH, rel=1e-4), fmt
        laps[fmt] = summary["lap_time_s"]
    ref = laps["tum"]
    assert all(abs(t / ref - 1) < 5e-3 for t in laps.values()), laps
