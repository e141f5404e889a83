"""Tests of pyomo_lap.track.geometry (spine, frames, Omega) and the bundled Nordschleife.

Every expected value is a closed form or an independent computation (finite
differences, pyproj directly, the raw files), never a number printed by the code.
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap.track.geometry import Track, TrackPoints
from pyomo_lap.track.loading import available_tracks, load_track

REPO = Path(__file__).resolve().parents[1]
RAW = Path(__file__).resolve().parents[1] / "data" / "tracks" / "raw" / "zaggyai"
GP_FILE = RAW / "9273312051716dfa2493534ddf9c03e3--n-rburgring.json"
LOOP_FILE = RAW / "fb7dff20890fd8af44d0a7cf8538cbae--n-rburgring.json"
BTG_FILE = RAW / "1faf22819f42e158cda4a10763939bb0--n-rburgring-btg.json"
needs_raw = pytest.mark.skipif(not RAW.is_dir(), reason="raw zaggyai files not available")


# ----------------------------------------------------------------------------- helpers
def write_csv(path, header, rows):
    """Write ``rows`` under the ``header`` to a CSV file at ``path``."""
    with open(path, "w") as fh:
        fh.write(",".join(header) + "\n")
        for r in rows:
            fh.write(",".join(str(v) for v in r) + "\n")


def fd_omega(track, s, h=1e-3):
    """Omega from central differences of R: vee(R^T dR/ds)."""
    R = track.evaluate(s).rotation
    dR = (track.evaluate(s + h).rotation - track.evaluate(s - h).rotation) / (2 * h)
    W = np.einsum("nji,njk->nik", R, dR)
    return np.column_stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]]), W


def circle_track(R, nu=0.0, nu_fun=None, n=2000, direction=1):
    """Flat circle sampled at exact arc length (ccw for direction=+1)."""
    L = 2 * math.pi * R
    s = np.arange(n) * L / n
    a = direction * s / R
    P = np.column_stack([R * np.cos(a), R * np.sin(a), np.zeros(n)])
    bank = nu_fun(s) if nu_fun is not None else nu
    return Track(s, P, banking=bank, closed=True, name="circle"), L


@pytest.fixture(scope="module")
def ns():
    """The bundled Nordschleife, loaded once for the module."""
    return load_track("nordschleife")


# ----------------------------------------------------------------------------- synthetic
@pytest.mark.unit
@pytest.mark.parametrize("direction", [1, -1])
def test_circle_from_csv(tmp_path, direction):
    """A circle of x, y, z points read from CSV, in both directions: closed, length 2 pi R,
    curvature +-1/R, z as written."""
    R = 100.0
    u = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    rows = [(R * np.cos(direction * a), R * np.sin(direction * a), 12.5) for a in u]
    f = tmp_path / "circle.csv"
    write_csv(f, ["x", "y", "z"], rows)
    tr = Track.from_csv(f)
    assert tr.closed
    assert tr.length == pytest.approx(2 * np.pi * R, rel=2e-5)
    tp = tr.evaluate(np.linspace(0, tr.length, 500))
    np.testing.assert_allclose(tp.omega[:, 2], direction / R, rtol=2e-4)
    np.testing.assert_allclose(tp.omega[:, :2], 0.0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(tp.position[:, :2], axis=1), R, atol=2e-3)
    np.testing.assert_allclose(tp.position[:, 2], 12.5, atol=1e-9)
    np.testing.assert_allclose(tp.domega_ds, 0.0, atol=1e-6)
    assert np.max(np.abs(tp.speed - 1)) < 1e-5
    np.testing.assert_allclose(tp.width_left + tp.width_right, 8.0)


@pytest.mark.unit
def test_helix_open_track():
    """A helix interpolated exactly (smoothing 0): open, its length in closed form, and Omega
    equal to the helix's curvature and torsion."""
    R, c, umax = 30.0, 4.0, 3 * np.pi
    u = np.linspace(0, umax, 1501)
    P = np.column_stack([R * np.cos(u), R * np.sin(u), c * u])
    tr = Track.from_points(P, closed=False, smoothing=0)
    assert not tr.closed
    assert tr.length == pytest.approx(np.hypot(R, c) * umax, rel=1e-7)
    s = np.linspace(0.05 * tr.length, 0.95 * tr.length, 300)
    tp = tr.evaluate(s)
    k = R**2 + c**2
    np.testing.assert_allclose(tp.omega[:, 0], c / k, rtol=1e-5)
    np.testing.assert_allclose(tp.omega[:, 1], 0.0, atol=1e-8)
    np.testing.assert_allclose(tp.omega[:, 2], R / k, rtol=1e-5)
    np.testing.assert_allclose(tp.grade, c / R, rtol=1e-6)
    # the point of the helix at arc length s
    np.testing.assert_allclose(tp.position, np.column_stack(
        [R * np.cos(s / np.sqrt(k)), R * np.sin(s / np.sqrt(k)), c * s / np.sqrt(k)]), atol=1e-4)


@pytest.mark.unit
def test_open_track_out_of_range():
    """An open straight of 100 m evaluates on [0, 100] and refuses an s outside it, naming the
    value and the range."""
    P = np.column_stack([np.linspace(0, 100, 21), np.zeros(21), np.zeros(21)])
    tr = Track.from_points(P, closed=False, smoothing=0)
    assert tr.length == pytest.approx(100.0, rel=1e-9)
    tr.evaluate([0.0, 100.0])
    with pytest.raises(ValueError, match=r"s = 100\.5.*\[0, 100"):
        tr.evaluate([50.0, 100.5])
    with pytest.raises(ValueError, match=r"s = -1"):
        tr.evaluate(-1.0)


@pytest.mark.unit
def test_constant_banking_circle():
    """A circle banked by nu: Omega = (0, sin(nu)/R, cos(nu)/R) and dOmega/ds = 0 (closed
    form)."""
    R, nu = 50.0, 0.12
    tr, L = circle_track(R, nu=nu)
    assert tr.length == pytest.approx(L, rel=1e-12)
    tp = tr.evaluate(np.linspace(0, L, 200))
    np.testing.assert_allclose(tp.omega[:, 0], 0.0, atol=1e-10)
    np.testing.assert_allclose(tp.omega[:, 1], np.sin(nu) / R, rtol=1e-7)
    np.testing.assert_allclose(tp.omega[:, 2], np.cos(nu) / R, rtol=1e-7)
    np.testing.assert_allclose(tp.banking, nu)
    # n tilted by nu out of the horizontal plane: n_z = sin(nu)
    np.testing.assert_allclose(tp.normal[:, 2], np.sin(nu), atol=1e-12)


@pytest.mark.unit
def test_varying_banking_picks_up_dnu_ds():
    """A circle whose banking varies as a sine: Omega_x is dnu/ds and Omega_y, Omega_z follow
    the closed form."""
    R, a, k = 80.0, 0.1, 3
    L = 2 * np.pi * R
    nu_f = lambda s: a * np.sin(2 * np.pi * k * s / L)  # noqa: E731
    tr, _ = circle_track(R, nu_fun=nu_f, n=4000)
    s = np.linspace(0, L, 333, endpoint=False)
    tp = tr.evaluate(s)
    w = 2 * np.pi * k / L
    nu = nu_f(s)
    np.testing.assert_allclose(tp.banking, nu, atol=1e-9)
    np.testing.assert_allclose(tp.omega[:, 0], a * w * np.cos(w * s), atol=1e-8)
    np.testing.assert_allclose(tp.omega[:, 1], np.sin(nu) / R, atol=1e-8)
    np.testing.assert_allclose(tp.omega[:, 2], np.cos(nu) / R, atol=1e-8)
    np.testing.assert_allclose(tp.domega_ds[:, 0], -a * w * w * np.sin(w * s), atol=1e-8)
    # and against finite differences of R
    om_fd, _ = fd_omega(tr, s)
    np.testing.assert_allclose(tp.omega, om_fd, atol=1e-8)


@pytest.mark.unit
def test_global_position_offsets():
    """Points at lateral n and normal m on a ccw circle lie at radius R - n and height m."""
    R = 60.0
    tr, L = circle_track(R)
    s = np.linspace(0, L, 50)
    q = tr.global_position(s, 3.0, 0.5)
    # ccw circle: left = inward, m = up
    np.testing.assert_allclose(np.linalg.norm(q[:, :2], axis=1), R - 3.0, atol=1e-6)
    np.testing.assert_allclose(q[:, 2], 0.5, atol=1e-12)
    assert tr.global_position(s, np.zeros(50)).shape == (50, 3)


# ----------------------------------------------------------------------------- frames on a real track
@pytest.mark.unit
def test_rotation_orthonormal_and_n_horizontal(ns):
    """The Nordschleife's frames are rotations (orthonormal, det 1) and, with no banking, n is
    horizontal."""
    s = np.linspace(0, ns.length, 3001)
    tp = ns.evaluate(s)
    assert isinstance(tp, TrackPoints)
    R = tp.rotation
    np.testing.assert_allclose(np.einsum("nji,njk->nik", R, R), np.broadcast_to(np.eye(3), R.shape),
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
    np.testing.assert_allclose(tp.normal[:, 2], 0.0, atol=1e-14)        # banking 0
    assert np.all(tp.binormal[:, 2] > 0.97)                            # m points up
    # t is the unit tangent of the positions (central differences)
    h = 1e-3
    t_fd = (ns.evaluate(s + h).position - ns.evaluate(s - h).position) / (2 * h)
    np.testing.assert_allclose(tp.tangent, t_fd, atol=1e-5)
    assert tp.J1.shape == (3001, 6) and tp.dJ1_ds.shape == (3001, 6)
    np.testing.assert_array_equal(tp.J1[:, :3], np.tile([1.0, 0, 0], (3001, 1)))
    np.testing.assert_array_equal(tp.J1[:, 3:], tp.omega)


@pytest.mark.unit
def test_omega_matches_RtdR_and_domega_fd(ns):
    """The Nordschleife's Omega equals R^T dR/ds and dOmega/ds its finite difference (a second
    method)."""
    s = np.linspace(1.0, ns.length - 1.0, 2500)
    tp = ns.evaluate(s)
    om_fd, W = fd_omega(ns, s)
    np.testing.assert_allclose(W + np.transpose(W, (0, 2, 1)), 0.0, atol=1e-8)
    np.testing.assert_allclose(tp.omega, om_fd, atol=1e-8)
    h = 1e-3
    dom_fd = (ns.evaluate(s + h).omega - ns.evaluate(s - h).omega) / (2 * h)
    np.testing.assert_allclose(tp.domega_ds, dom_fd, atol=1e-8)


@pytest.mark.unit
def test_omega_fd_on_banked_3d_track():
    # a 3D closed curve with varying banking, sampled densely (non-arc-length input)
    """On a banked 3D track Omega and dOmega/ds equal their finite differences."""
    u = np.linspace(0, 2 * np.pi, 3000, endpoint=False)
    P = np.column_stack([300 * np.cos(u), 200 * np.sin(u) + 30 * np.sin(3 * u), 10 * np.sin(2 * u)])
    bank = 0.08 * np.cos(u)
    tr = Track.from_points(P, closed=True, banking=bank, smoothing=0)
    s = np.linspace(0, tr.length, 777, endpoint=False)
    tp = tr.evaluate(s)
    assert np.max(np.abs(tp.banking)) > 0.07
    om_fd, _ = fd_omega(tr, s)
    np.testing.assert_allclose(tp.omega, om_fd, atol=1e-8)
    h = 1e-3
    dom_fd = (tr.evaluate(s + h).omega - tr.evaluate(s - h).omega) / (2 * h)
    np.testing.assert_allclose(tp.domega_ds, dom_fd, atol=1e-8)
    np.testing.assert_allclose(np.linalg.det(tp.rotation), 1.0, atol=1e-12)


# ----------------------------------------------------------------------------- Nordschleife
@pytest.mark.unit
def test_nordschleife_closes_and_is_plausible(ns):
    """The bundled Nordschleife closes smoothly (positions, tangents, Omega across the line);
    its length, elevations, grades and tightest radius (from positions) are plausible."""
    assert ns.closed and "nordschleife" in available_tracks()
    assert 20600.0 < ns.length < 20900.0
    eps = 1e-4
    a, b = ns.evaluate([ns.length - eps, 0.0, ns.length]), ns.evaluate([eps])
    np.testing.assert_allclose(a.position[0], b.position[0], atol=1e-3)
    np.testing.assert_allclose(a.position[1], a.position[2], atol=1e-9)
    np.testing.assert_allclose(a.tangent[0], b.tangent[0], atol=1e-6)
    np.testing.assert_allclose(a.omega[0], b.omega[0], atol=1e-6)
    s = np.arange(0.0, ns.length, 0.5)
    tp = ns.evaluate(s)
    z = tp.position[:, 2]
    assert 300.0 < z.min() < 380.0 and 590.0 < z.max() < 650.0
    assert 230.0 < np.ptp(z) < 330.0
    # grade from positions (independent of the slope formula)
    dz = np.diff(z)
    dxy = np.linalg.norm(np.diff(tp.position[:, :2], axis=0), axis=1)
    assert np.max(np.abs(dz / dxy)) < 0.20
    assert np.max(np.abs(tp.grade)) < 0.20
    # minimum radius of the plan view from three-point circles, independent of Omega
    P = tp.position[::4, :2]
    A, B, C = P[:-2], P[1:-1], P[2:]
    cross = np.abs((B - A)[:, 0] * (C - A)[:, 1] - (B - A)[:, 1] * (C - A)[:, 0])
    rad = (np.linalg.norm(B - A, axis=1) * np.linalg.norm(C - B, axis=1)
           * np.linalg.norm(C - A, axis=1)) / np.maximum(2 * cross, 1e-300)
    assert rad.min() > 10.0
    assert np.min(1 / np.abs(tp.omega[:, 2])) > 10.0
    # driven clockwise: total heading change -2 pi
    hd = np.unwrap(np.arctan2(np.diff(tp.position[:, 1]), np.diff(tp.position[:, 0])))
    assert hd[-1] - hd[0] == pytest.approx(-2 * np.pi, abs=0.05)
    # arc-length parametrisation: chord of 0.5 m steps ~ 0.5 m
    chord = np.linalg.norm(np.diff(tp.position, axis=0), axis=1)
    np.testing.assert_allclose(chord, 0.5, rtol=1e-4)
    assert np.max(np.abs(tp.speed - 1)) < 1e-5


@needs_raw
@pytest.mark.unit
def test_nordschleife_metadata(ns):
    """The metadata describe the bundled track, and the SHA-256 it records for each source
    file is the hash of that file as it is in data/tracks/raw (computed here)."""
    import hashlib
    meta = json.loads((REPO / "data" / "tracks" / "nordschleife.json").read_text())
    assert meta["length_m"] == pytest.approx(ns.length, rel=1e-6)
    assert meta["closed"] is True
    files = meta["source"]["files"]
    assert set(files) == {"loop", "btg", "gp"}
    for f in files.values():
        data = (RAW / f["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f["file"]
    assert {files["loop"]["file"], files["btg"]["file"], files["gp"]["file"]} == \
        {LOOP_FILE.name, BTG_FILE.name, GP_FILE.name}
    assert ns.provenance.get("projection", "").startswith("+proj=aeqd")


@needs_raw
@pytest.mark.unit
def test_nordschleife_matches_raw_data(ns):
    """The bundled Nordschleife lies within 3 m of every raw GPS point (projected
    independently), starts at the start/finish, and its elevations follow the BTG file's."""
    import pyproj

    meta = ns.provenance
    tr = pyproj.Transformer.from_crs("EPSG:4326", meta["projection"], always_xy=True)

    def xy(path):
        d = json.loads(Path(path).read_text())
        lat = np.array([p["lat"] for p in d["pts"]]) * 1e-7
        lon = np.array([p["lon"] for p in d["pts"]]) * 1e-7
        x, y = tr.transform(lon, lat)
        return np.column_stack([x, y]), np.array([p["elev"] for p in d["pts"]]) * 1e-3, d

    s = np.arange(0.0, ns.length, 0.5)
    tp = ns.evaluate(s)
    loop, _, d = xy(LOOP_FILE)
    from scipy.spatial import cKDTree

    tree = cKDTree(tp.position[:, :2])
    dist, _ = tree.query(loop)
    assert np.max(dist) < 3.0              # spine within 3 m of every raw point (GPS smoothing)
    # s = 0 at the start/finish
    sf = d["start_finish"]
    x0, y0 = tr.transform(sf["lon"] * 1e-7, sf["lat"] * 1e-7)
    assert np.hypot(tp.position[0, 0] - x0, tp.position[0, 1] - y0) < 3.0
    # elevations follow the BTG file (which is quantised, has glitches) in the median
    btg, zb, _ = xy(BTG_FILE)
    _, j = tree.query(btg)
    err = zb - tp.position[j, 2]
    assert np.median(np.abs(err)) < 4.0
    assert np.mean(np.abs(err) < 15.0) > 0.9


# ----------------------------------------------------------------------------- loaders
@pytest.mark.unit
def test_csv_round_trip(tmp_path, ns):
    """Track.to_csv then Track.from_csv gives back the same track (length, positions,
    Omega)."""
    f = tmp_path / "ns.csv"
    ns.to_csv(f, spacing=2.0)
    tr = Track.from_csv(f)
    assert tr.closed
    assert tr.length == pytest.approx(ns.length, abs=1e-5)
    s = np.linspace(0, ns.length, 1234)
    a, b = ns.evaluate(s), tr.evaluate(s)
    np.testing.assert_allclose(a.position, b.position, atol=1e-5)
    np.testing.assert_allclose(a.omega, b.omega, atol=1e-5)


@pytest.mark.unit
def test_csv_user_file_with_widths_and_banking(tmp_path):
    """A user's CSV with widths and banking columns (mixed names): the widths and banking as
    written."""
    R = 200.0
    u = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    rows = [(R * np.cos(a), R * np.sin(a), 5.0, 5.0 + np.cos(a), 3.0, 0.05) for a in u]
    f = tmp_path / "user.csv"
    write_csv(f, ["x_m", "y_m", "z_m", "width_left", "width_right_m", "banking"], rows)
    tr = Track.from_csv(f, name="user")
    assert tr.name == "user" and tr.closed
    tp = tr.evaluate(np.linspace(0, tr.length, 100, endpoint=False))
    ang = np.arctan2(tp.position[:, 1], tp.position[:, 0])
    np.testing.assert_allclose(tp.width_left, 5.0 + np.cos(ang), atol=2e-3)
    np.testing.assert_allclose(tp.width_right, 3.0, atol=1e-9)
    np.testing.assert_allclose(tp.banking, 0.05, atol=1e-9)


@pytest.mark.unit
def test_csv_errors(tmp_path):
    """Bad cells and missing columns of a CSV file are refused naming the file, the column, the
    row and the value."""
    f = tmp_path / "bad.csv"
    # (points 10 m apart: a track shorter than 20 m is refused as well)
    write_csv(f, ["x", "y", "z"], [(0, 0, 0), (10, 0, 0), (20, "nan", 0), (30, 10, 0), (40, 20, 0)])
    with pytest.raises(ValueError, match=r"bad\.csv.*'y'.*row 3.*'nan'"):
        Track.from_csv(f)
    write_csv(f, ["x", "y", "z"], [(0, 0, 0), (10, 0, 0), (20, "", 0), (30, 10, 0), (40, 20, 0)])
    with pytest.raises(ValueError, match=r"'y'.*row 3"):
        Track.from_csv(f)
    write_csv(f, ["x", "y"], [(0, 0), (1, 0), (2, 1), (3, 1)])
    with pytest.raises(ValueError, match=r"bad\.csv.*missing required column 'z'"):
        Track.from_csv(f)
    write_csv(f, ["x", "y", "z"], [(0, 0, 0), (1, 0, 0), (2, 1, 0)])
    with pytest.raises(ValueError, match=r"at least 4 points"):
        Track.from_csv(f)


@needs_raw
@pytest.mark.unit
def test_zaggy_json_loader_gp_circuit():
    """A raw zaggyai file with missing elevations loads: closed, a plausible length, the
    elevations within the nonzero raw ones (the zeros not used), s = 0 at the start/finish."""
    tr = Track.from_zaggy_json(GP_FILE)
    assert tr.closed
    # raw polyline length 5087 m (chords); smoothing shortens corners slightly
    raw = json.loads(GP_FILE.read_text())["pts"]
    assert raw[0]["elev"] == 0                  # the file has missing elevations
    assert 4950.0 < tr.length < 5250.0
    tp = tr.evaluate(np.arange(0.0, tr.length, 1.0))
    z = tp.position[:, 2]
    zr = np.array([p["elev"] for p in raw if p["elev"] != 0]) * 1e-3
    assert z.min() > zr.min() - 10 and z.max() < zr.max() + 10   # zeros were not used
    assert np.max(np.abs(tp.grade)) < 0.2
    assert np.min(1 / np.abs(tp.omega[:, 2])) > 8.0
    assert np.linalg.norm(tp.position[0, :2]) < 3.0             # s = 0 at start/finish (origin)
    assert load_track(GP_FILE).length == pytest.approx(tr.length, rel=1e-12)


@pytest.mark.unit
def test_unknown_track_name():
    """An unknown track name is refused listing the known ones."""
    with pytest.raises(ValueError, match=r"unknown track 'monaco'.*known tracks:.*nordschleife"):
        load_track("monaco")


@pytest.mark.unit
def test_data_dir_override(tmp_path, monkeypatch):
    """PYOMO_LAP_DATA points the bundled tracks at another folder."""
    (tmp_path / "tracks").mkdir()
    R = 50.0
    u = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    write_csv(tmp_path / "tracks" / "ring.csv", ["x", "y", "z"],
              [(R * np.cos(a), R * np.sin(a), 0.0) for a in u])
    monkeypatch.setenv("PYOMO_LAP_DATA", str(tmp_path))
    assert available_tracks() == ["ring"]
    tr = load_track("ring")
    assert tr.length == pytest.approx(2 * np.pi * R, rel=1e-4)
    with pytest.raises(ValueError, match="known tracks: ring"):
        load_track("nordschleife")


@pytest.mark.unit
def test_bundled_track_is_read_not_built_and_evaluated_vectorized():
    """What makes loading and evaluating the bundled track cheap, checked by counting
    calls instead of timing them (no wall-clock assertion): load_track reads the processed
    CSV and never runs the build from the raw files (pyomo_lap.track.build, the zaggyai
    loader), and evaluate makes the same Python calls for 2000 points as for 10 (the
    per-point work is NumPy's). The vectorized values equal those of single points."""
    import collections
    import sys

    calls = collections.Counter()

    def profile(frame, event, arg):
        if event == "call" and "pyomo_lap" in frame.f_code.co_filename:
            calls["/".join(Path(frame.f_code.co_filename).parts[-2:]), frame.f_code.co_name] += 1

    def counted(f, *args):
        calls.clear()
        sys.setprofile(profile)
        try:
            out = f(*args)
        finally:
            sys.setprofile(None)
        return out, dict(calls)

    tr, loading = counted(load_track, "nordschleife")
    assert ("track/csv_files.py", "from_csv") in loading
    assert not any(name == "track/build.py" or fn == "from_zaggy_json" for name, fn in loading)
    _, few = counted(tr.evaluate, np.linspace(0.0, tr.length, 10))
    s = np.linspace(0.0, tr.length, 2000)
    many_points, many = counted(tr.evaluate, s)
    assert many == few and sum(many.values()) < 20
    for i in (0, 777, 1999):
        one = tr.evaluate(np.array([s[i]]))
        np.testing.assert_allclose(one.position[0], many_points.position[i], rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(one.omega[0], many_points.omega[i], rtol=1e-12, atol=1e-15)
