"""fastest-lap's track files (issue 33): its XML read as the track it describes, checked against
what the file says of itself (its curvature ``yaw_dot``, its ``track_length``, its boundaries),
against the KML boundaries it was made from (geography: which side, which direction) and
against closed forms (a synthetic circle in its format, 2D and 3D); the bundled Catalunya
built from it."""
from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.spatial import cKDTree

from pyomo_lap.track.loading import load_track

from _tracks import assert_same_track_files

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "data" / "tracks" / "raw" / "fastest-lap" / "catalunya.xml"
KML = ROOT / "tests" / "data" / "fastest-lap"


def _fields(path):
    """The file's fields, read here with the standard library only (not the package's reader)."""
    root = ET.parse(path).getroot()
    d = root.find("data")
    out = {e: np.array([float(v) for v in d.find(e).text.split(",")])
           for e in ("arclength", "centerline/x", "centerline/y", "left_boundary/x",
                     "left_boundary/y", "right_boundary/x", "right_boundary/y", "yaw_dot",
                     "nl", "nr")}
    out["track_length"] = float(root.find("header/track_length").text)
    out["gps"] = {c.tag: float(c.text) for c in root.find("GPS_parameters")}
    return out


def _s_of(tr, xy, step=0.05):
    """The arc length of the track's spine point nearest to each point ``xy`` (n, 2)
    (a dense sampling searched with a k-d tree: independent of the loader's maps)."""
    s = np.arange(0.0, tr.length, step)
    P = tr.evaluate(s).position[:, :2]
    d, i = cKDTree(P).query(xy)
    return s[i], d


def _compare_with_yaw_dot(tr, f):
    """Omega_z of the track at the file's centreline points against the file's -yaw_dot
    (fastest-lap's y points south: see Track.from_fastest_lap_xml). Returns the error's rms and
    max over the largest |yaw_dot|, and the largest |Omega_z| of the last chicane and the
    file's there (4250 m < s < 4400 m)."""
    xy = np.column_stack([f["centerline/x"], -f["centerline/y"]])
    s, dist = _s_of(tr, xy)
    assert dist.max() < 0.05          # the spine goes through the file's points
    om = tr.evaluate(s).omega[:, 2]
    k = -f["yaw_dot"]
    scale = np.abs(k).max()
    err = om - k
    chicane = (f["arclength"] > 4250) & (f["arclength"] < 4400)
    dense = np.arange(4250.0, 4400.0, 0.25) * tr.length / f["track_length"]
    return (np.sqrt(np.mean(err ** 2)) / scale, np.abs(err).max() / scale,
            np.abs(tr.evaluate(dense).omega[:, 2]).max(), np.abs(k[chicane]).max())


@pytest.mark.unit
def test_catalunya_xml_curvature_length_and_sides():
    """Catalunya.xml (2D, closed, 500 points every 9.27 m): the plan-view curvature of the
    loaded track agrees with the file's -yaw_dot at its points to 0.65 % (rms) and 5.1 % (max,
    in the last chicane, where a sample turns the track by 0.48 rad) of the largest |yaw_dot|;
    the file's own heading differences, (yaw[i+1] - yaw[i-1]) / 2 ds, differ from its yaw_dot
    by up to 8.8 % there (the resolution of the data). Length within 0.1 % of track_length
    (the points come from a trapezoidal rule whose chords are ds cos(dyaw/2): -0.09 %). The
    tightest radius of the last chicane within 6 % of the file's (19.2 m); the file's
    boundaries lie at width_left / width_right along our normal n (left positive), within
    0.2 m (0.12 m found: our normal and the file's yaw differ by up to 0.02 rad)."""
    f = _fields(RAW)
    tr = load_track(RAW)
    assert tr.closed and tr.length == pytest.approx(f["track_length"], rel=1e-3)
    rms, mx, om_chicane, k_chicane = _compare_with_yaw_dot(tr, f)
    assert rms < 0.01 and mx < 0.06, (rms, mx)
    assert k_chicane == pytest.approx(0.0522, abs=5e-4)
    assert 1 / om_chicane == pytest.approx(1 / k_chicane, rel=0.06)
    # the boundaries: left = p + width_left n, right = p - width_right n, with y north
    xy = np.column_stack([f["centerline/x"], -f["centerline/y"]])
    tp = tr.evaluate(_s_of(tr, xy)[0])
    n = tp.rotation[:, :2, 1]
    for side, w, sign in (("left", tp.width_left, 1.0), ("right", tp.width_right, -1.0)):
        b = np.column_stack([f[f"{side}_boundary/x"], -f[f"{side}_boundary/y"]])
        assert np.abs(b - (tp.position[:, :2] + sign * w[:, None] * n)).max() < 0.2, side
    assert np.allclose(tp.width_left, f["nl"], atol=0.01)
    steps = {st["step"]: st for st in tr.processing_steps}
    assert "as labelled" in steps["boundary_sides"]["method"]
    assert "y and z negated" in steps["file_read"]["method"] and "interpolated" in steps


@pytest.mark.unit
def test_catalunya_xml_is_where_its_kml_boundaries_are():
    """Geography, from the KML boundaries fastest-lap made the file from (latitude, longitude;
    not from the XML): the loaded track runs clockwise, as the circuit does, and every point of
    catalunya_left.kml lies left of it (lateral offset > 0, with z up), every point of
    catalunya_right.kml right of it, within 1.5 m of the track's edges."""
    import re
    f = _fields(RAW)
    g = f["gps"]
    tr = load_track(RAW)
    P = tr.evaluate(tr.sample_s(2.0)).position
    area = 0.5 * np.sum(P[:, 0] * np.roll(P[:, 1], -1) - np.roll(P[:, 0], -1) * P[:, 1])
    assert area < 0                                   # clockwise
    for side, sign in (("left", 1.0), ("right", -1.0)):
        text = (KML / f"catalunya_{side}.kml").read_text()
        nums = re.search(r"<coordinates>(.*?)</coordinates>", text, re.S).group(1)
        lon, lat = np.array([float(v) for v in re.split(r"[,\s]+", nums.strip()) if v]).reshape(-1, 3)[:, :2].T
        deg = math.pi / 180
        x = g["earth_radius"] * math.cos(g["reference_latitude"] * deg) * (lon - g["origin_longitude"]) * deg
        y = g["earth_radius"] * (lat - g["origin_latitude"]) * deg          # north
        s, _ = _s_of(tr, np.column_stack([x, y]), step=0.25)
        tp = tr.evaluate(s)
        q = np.sum((np.column_stack([x, y]) - tp.position[:, :2]) * tp.rotation[:, :2, 1], axis=1)
        assert np.all(sign * q > 0), side
        w = tp.width_left if side == "left" else tp.width_right
        assert np.abs(np.abs(q) - w).max() < 1.5, side


def _circle_xml(path, r=100.0, n=200, dims=2, z0=0.0, roll=0.0, nl=5.0, nr=6.0, label_swap=False):
    """A circle of radius r in fastest-lap's format and frame (x east, y south, z down): counter-
    clockwise seen from above with y north, so clockwise in the file's (x, y); its left boundary
    at nl, right at nr; 3D: altitude z0 (written -z0), banking ``roll``."""
    th = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    x, y_north = r * np.cos(th), r * np.sin(th)
    nx, ny = np.cos(th), np.sin(th)                    # outward = right of a ccw circle
    left = (x - nl * nx, y_north - nl * ny)
    right = (x + nr * nx, y_north + nr * ny)
    if label_swap:
        left, right = right, left

    def lst(a):
        return ", ".join(f"{v:.12g}" for v in a)

    z = "" if dims == 2 else f"<z>{lst(np.full(n, -z0))}</z>"
    yaw = -(th + np.pi / 2)
    extra = "" if dims == 2 else f"<pitch>{lst(0 * th)}</pitch><roll>{lst(np.full(n, roll))}</roll>"
    path.write_text(
        f'<circuit format="discrete" type="closed" dimensions="{dims}"><header>'
        f"<track_length>{2 * math.pi * r!r}</track_length></header><data number_of_points=\"{n}\">"
        f"<arclength>{lst(th * r)}</arclength>"
        f"<centerline><x>{lst(x)}</x><y>{lst(-y_north)}</y>{z}</centerline>"
        f"<left_boundary><x>{lst(left[0])}</x><y>{lst(-left[1])}</y>{z}</left_boundary>"
        f"<right_boundary><x>{lst(right[0])}</x><y>{lst(-right[1])}</y>{z}</right_boundary>"
        f"<yaw>{lst(yaw)}</yaw><yaw_dot>{lst(np.full(n, -1 / r))}</yaw_dot>{extra}"
        f"<nl>{lst(np.full(n, nl if not label_swap else nr))}</nl>"
        f"<nr>{lst(np.full(n, nr if not label_swap else nl))}</nr></data></circuit>")
    return path


@pytest.mark.unit
@pytest.mark.parametrize("dims", [2, 3])
def test_circle_in_fastest_lap_format(tmp_path, dims):
    """A circle of radius 100 m written in fastest-lap's frame: length 2 pi R, curvature +1/R
    (counter-clockwise with y north), widths 5 m left and 6 m right; 3D: the elevation 120 m
    (written -120 m, z down) and the banking 0.05 rad (roll) come back; flat=True drops the
    elevation and keeps the banking (reported)."""
    f = _circle_xml(tmp_path / "ring.xml", dims=dims, z0=120.0, roll=0.05)
    tr = load_track(f)
    assert tr.length == pytest.approx(2 * math.pi * 100.0, rel=1e-6)
    tp = tr.evaluate(np.linspace(0, tr.length, 97, endpoint=False))
    assert np.allclose(tp.omega[:, 2] / np.cos(tp.banking), 1 / 100.0, rtol=1e-4)   # psi' cos(nu)
    assert np.allclose(tp.width_left, 5.0) and np.allclose(tp.width_right, 6.0)
    if dims == 3:
        assert np.allclose(tp.position[:, 2], 120.0) and np.allclose(tp.banking, 0.05)
        flat = load_track(f, flat=True)
        tq = flat.evaluate(np.linspace(0, flat.length, 13, endpoint=False))
        assert np.allclose(tq.position[:, 2], 0.0) and np.allclose(tq.banking, 0.05)
        assert "flattened" in [st["step"] for st in flat.processing_steps]
    else:
        assert np.allclose(tp.position[:, 2], 0.0) and np.allclose(tp.banking, 0.0)


@pytest.mark.unit
def test_labels_are_not_trusted(tmp_path):
    """A file whose left_boundary lies right of travel: the widths go to the sides where the
    boundaries are, and the processing step says the labels were swapped."""
    tr = load_track(_circle_xml(tmp_path / "swapped.xml", label_swap=True))
    tp = tr.evaluate(np.linspace(0, tr.length, 11, endpoint=False))
    assert np.allclose(tp.width_left, 5.0) and np.allclose(tp.width_right, 6.0)
    step = next(st for st in tr.processing_steps if st["step"] == "boundary_sides")
    assert step["method"].startswith("swapped")


@pytest.mark.unit
@pytest.mark.parametrize("edit, match", [
    (lambda t: t.replace('format="discrete"', 'format="polynomial"'), r'expected <circuit format="discrete">'),
    (lambda t: t.replace("<nl>", "<nl_>").replace("</nl>", "</nl_>"), r"no <data>/nl"),
    (lambda t: t.replace('type="closed"', 'type="loop"'), r"type 'closed' or 'open'"),
    (lambda t: t.replace("<nr>5", "<nr>five").replace("<nr>6", "<nr>six"), r"<nr>.*'six' is not a number"),
])
def test_bad_fastest_lap_files_are_named(tmp_path, edit, match):
    """Bad fastest-lap files are refused naming the file and what is wrong."""
    f = _circle_xml(tmp_path / "ring.xml")
    f.write_text(edit(f.read_text()))
    with pytest.raises(ValueError, match=match):
        load_track(f)


@pytest.mark.unit
def test_bundled_catalunya_fastest_lap():
    """The bundled catalunya_fastest_lap (the CSV every 2 m written by make_tracks.py from the
    raw file): the same curvature agreement with the file's yaw_dot as the raw file, its .json
    names the source repository, the commit and the raw file's SHA-256 (checked here), and
    `pyomo-lap tracks` lists it."""
    import hashlib
    f = _fields(RAW)
    tr = load_track("catalunya_fastest_lap")
    rms, mx, om_chicane, k_chicane = _compare_with_yaw_dot(tr, f)
    assert rms < 0.01 and mx < 0.06 and 1 / om_chicane == pytest.approx(1 / k_chicane, rel=0.06)
    meta = json.loads((ROOT / "data" / "tracks" / "catalunya_fastest_lap.json").read_text())
    src = meta["source"]
    assert src["repository"] == "https://github.com/juanmanzanero/fastest-lap"
    assert src["commit"] == "0660208aaeea956c9d833cb32a0ae6b4d959ecb9"
    assert src["files"]["track"]["sha256"] == hashlib.sha256(RAW.read_bytes()).hexdigest()
    assert (RAW.parent / "LICENSE").read_text().startswith("MIT License")
    from pyomo_lap.cli import main
    out = CliRunner().invoke(main, ["tracks"]).output
    line = next(ln for ln in out.splitlines() if ln.startswith("catalunya_fastest_lap "))
    assert "4630.0" in line and "juanmanzanero/fastest-lap @ 0660208aaeea" in line


@pytest.mark.component
def test_make_tracks_rebuilds_catalunya_fastest_lap(tmp_path):
    """make_tracks.py rebuilds the bundled files (to the rounding of the libraries,
    tests/_tracks.py)."""
    import runpy
    script = runpy.run_path(str(ROOT / "data" / "tracks" / "make_tracks.py"))
    script["main"](["--out", str(tmp_path), "catalunya_fastest_lap"])
    assert_same_track_files(tmp_path, ROOT / "data" / "tracks", "catalunya_fastest_lap")


def _xml_in_frame_of(tr, f):
    """The file's centreline points in the frame of a track loaded from the KML boundaries
    (the azimuthal equidistant projection of its provenance): fastest-lap's x east, y south
    about GPS_parameters' origin -> latitude, longitude -> that projection (pyproj)."""
    import pyproj
    g, deg = f["gps"], math.pi / 180
    lat = g["origin_latitude"] - f["centerline/y"] / g["earth_radius"] / deg
    lon = g["origin_longitude"] + f["centerline/x"] / (
        g["earth_radius"] * math.cos(g["reference_latitude"] * deg)) / deg
    to = pyproj.Transformer.from_crs("EPSG:4326", tr.provenance["projection"], always_xy=True)
    return np.column_stack(to.transform(lon, lat))


@pytest.mark.component
def test_kml_boundaries_give_fastest_laps_chicane_radii():
    """The catalunya_left.kml + catalunya_right.kml of fastest-lap (about 2.5 s): the centreline
    made from them against fastest-lap's own processing of the same boundaries.

    (catalunya.xml's -yaw_dot at its points, located on our centreline by the nearest point):

    * the tightest radius of the last chicane (fastest-lap: 19.2 m) and of the corner at
      s = 3661 m (16.7 m) within 10 % (found: 18.7 m and 15.3 m; before: 10.5 m and 14.2 m);
    * the curvature error over the lap: rms 2.3 %, max 16 % of the largest |yaw_dot| (before:
      5.1 % and 46 %): asked below 3 % and 20 %;
    * the track's edges, centreline +- width along n, through the boundaries' drawn points:
      99 % of the 774 points within 3 cm of them, all within 10 cm (found: 1.5 cm and 6 cm;
      before: 0.52 m and 1.73 m, the widths being the midpoints' distances to cubic splines
      that loop at the kinks, and the centreline smoothed away from the midpoints)."""
    import re
    f = _fields(RAW)
    tr = load_track(KML / "catalunya_left.kml")
    xy = _xml_in_frame_of(tr, f)
    s, dist = _s_of(tr, xy, step=0.1)
    assert dist.max() < 3.0                       # two reference lines of the same road
    om, k = tr.evaluate(s).omega[:, 2], -f["yaw_dot"]
    scale = np.abs(k).max()
    err = om - k
    assert np.sqrt(np.mean(err ** 2)) / scale < 0.03 and np.abs(err).max() / scale < 0.20
    for a, b in ((4250.0, 4400.0), (3600.0, 3720.0)):
        sel = (f["arclength"] > a) & (f["arclength"] < b)
        dense = np.arange(s[sel].min(), s[sel].max(), 0.25)
        ours = 1 / np.abs(tr.evaluate(dense).omega[:, 2]).max()
        theirs = 1 / np.abs(k[sel]).max()
        assert ours == pytest.approx(theirs, rel=0.10), (a, ours, theirs)
    # the edges through the boundaries' drawn points (the KML points, projected as the loader
    # does): the distance of each point to the edge line, centreline +- width along n
    tp = tr.evaluate(np.arange(0.0, tr.length, 0.02))
    import pyproj
    to = pyproj.Transformer.from_crs("EPSG:4326", tr.provenance["projection"], always_xy=True)
    for side, sign, w in (("left", 1.0, tp.width_left), ("right", -1.0, tp.width_right)):
        text = (KML / f"catalunya_{side}.kml").read_text()
        nums = re.search(r"<coordinates>(.*?)</coordinates>", text, re.S).group(1)
        lon, lat = np.array([float(v) for v in re.split(r"[,\s]+", nums.strip()) if v]).reshape(-1, 3)[:, :2].T
        edge = tp.position[:, :2] + sign * w[:, None] * tp.rotation[:, :2, 1]
        d, _ = cKDTree(edge).query(np.column_stack(to.transform(lon, lat)))
        assert np.percentile(d, 99) < 0.03 and d.max() < 0.1, (side, np.percentile(d, 99), d.max())


@pytest.mark.unit
def test_reference_solution_is_the_one_its_readme_names():
    """data/reference/fastest-lap holds fastest-lap's saved solution unchanged: the SHA-256 its
    README states, the MIT licence beside it, and the lap time fastest-lap's test asserts
    (77.791438 s, f1_optimal_laptime_test.cpp) in its <laptime>; its 500 points are the
    raw track file's arc lengths."""
    import hashlib
    ref = ROOT / "data" / "reference" / "fastest-lap"
    xml = ref / "f1_optimal_laptime_catalunya_discrete.xml"
    readme = (ref / "README.md").read_text()
    assert hashlib.sha256(xml.read_bytes()).hexdigest() in readme
    assert (ref / "LICENSE").read_text().startswith("MIT License")
    root = ET.parse(xml).getroot()
    assert float(root.find("laptime").text) == 77.791438
    s = np.array([float(v) for v in root.find("road.arclength").text.split(",")])
    np.testing.assert_allclose(s, _fields(RAW)["arclength"], atol=1e-9)
