"""The bundled circuits (``pyomo_lap.track.circuits``, ``data/tracks/<name>.csv`` and ``.json``)
against their raw files.

Each circuit is checked against what is computed here from the raw zaggyai file, not against
figures copied from the build's output:

* the raw file's SHA-256 (hashlib) equals the table's, the metadata's and the README's;
* the track loads, passes the checks, the car fits, and the repairs it reports are those the
  raw file calls for: a repair of the missing elevations exactly where the file has an
  elevation of 0, and Suzuka's bridge (whose raw file the checks refuse);
* its length agrees with the geodesic length (pyproj.Geod, WGS84) of the raw polyline: the
  smooth spine is longer than the chords, which cut the corners between raw points (spacing
  up to 540 m on straights, 5-20 m in bends), and slightly longer in 3D (grades below 13 %:
  at most 0.8 %, much less on average); the plan-view smoother (30 m cut-off) moves the
  points by less than 0.4 m. Tolerance: 0 to +0.5 %;
* its elevations agree with the raw ones after the repair of the missing values: the range,
  within what the smoothing takes off (cut-off 400 m, outliers dropped by the Hampel filter:
  the range shrinks by at most 20 % or 3 m, and no end moves out by more than 3 m, the
  overshoot of the smoother), and the median distance from the raw elevations at the raw
  points (quantised to 1 m) is at most 2 m;
* rebuilding one track (Zandvoort, the shortest) gives the same bytes;
* ``pyomo-lap tracks`` lists every bundled track with its figures (in process);
* one closed lap (Interlagos, counter-clockwise, with a repaired elevation) is solved end to
  end and checked against the independent computations of ``tests/_independent.py``.
"""
import hashlib
import json
import math
import re
import runpy
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pyomo_lap.cli import main
from pyomo_lap.track.checks import TrackDataError, check_vehicle_fits
from pyomo_lap.track.circuits import CIRCUITS, bridge_correction
from pyomo_lap.track.loading import available_tracks, bundled_tracks, load_track
from pyomo_lap.vehicle.car import load_vehicle

from _tracks import assert_same_track_files

REPO = Path(__file__).resolve().parents[1]
TRACKS = REPO / "data" / "tracks"
RAW = TRACKS / "raw" / "zaggyai"
NAMES = list(CIRCUITS)

LENGTH_REL_TOL = (0.0, 0.005)   # built length / geodesic polyline length - 1
Z_END_OVERSHOOT_M = 3.0         # an end of the built range beyond the raw one
Z_SHRINK = (0.20, 3.0)          # the built range is at least raw range - max(20 %, 3 m)
Z_MEDIAN_M = 2.0                # median |z_built - z_raw| at the raw points
XY_MAX_M = 1.0                  # plan-view distance of every raw point from the spine
BRIDGE_M = 6.0                  # Suzuka's bridge (the table's value)


def _raw(name):
    """The raw file read here with json only: lat, lon [deg], elev [m] (0 kept) of every point."""
    d = json.loads((RAW / CIRCUITS[name]["file"]).read_text(encoding="utf-8"))
    lat = np.array([p["lat"] for p in d["pts"]], float) * 1e-7
    lon = np.array([p["lon"] for p in d["pts"]], float) * 1e-7
    elev = np.array([p["elev"] for p in d["pts"]], float) * 1e-3
    return lat, lon, elev


def _elev_repaired(x, y, elev):
    """The raw elevations with the 0s (missing) interpolated along the loop's chords."""
    d = np.hypot(np.diff(x, append=x[0]), np.diff(y, append=y[0]))
    u = np.concatenate([[0.0], np.cumsum(d)[:-1]])
    ok = elev != 0.0
    z = elev.copy()
    z[~ok] = np.interp(u[~ok], u[ok], elev[ok], period=float(np.sum(d)))
    return z


def _projected(track, lat, lon):
    import pyproj
    tr = pyproj.Transformer.from_crs("EPSG:4326", track.provenance["projection"], always_xy=True)
    x, y = tr.transform(lon, lat)
    return np.asarray(x), np.asarray(y)


@pytest.fixture(scope="module")
def fsae():
    """The bundled fsae car."""
    return load_vehicle("fsae")


# ----------------------------------------------------------------------------- provenance
@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_raw_file_hash_matches_the_table_metadata_and_readme(name):
    """Each circuit's raw file has the SHA-256 of the table, its metadata and the README."""
    digest = hashlib.sha256((RAW / CIRCUITS[name]["file"]).read_bytes()).hexdigest()
    assert digest == CIRCUITS[name]["sha256"]
    meta = json.loads((TRACKS / f"{name}.json").read_text(encoding="utf-8"))
    assert meta["source"]["files"]["loop"] == {"file": CIRCUITS[name]["file"], "sha256": digest}
    assert meta["source"]["commit"] == "a8b7ba4a434bccdb9bf5e7d548f9b0cb9c7c05ce"
    readme = (TRACKS / "README.md").read_text(encoding="utf-8")
    row = next(ln for ln in readme.splitlines() if CIRCUITS[name]["file"] in ln and digest in ln)
    assert f"`{name}`" in row


@pytest.mark.unit
def test_every_circuit_is_a_bundled_name():
    """Every circuit of the table is a bundled track with its CSV and metadata."""
    assert set(NAMES) | {"nordschleife"} <= set(available_tracks())
    for name in NAMES:
        assert (TRACKS / f"{name}.csv").is_file() and (TRACKS / f"{name}.json").is_file()


# ----------------------------------------------------------------------------- checks and repairs
@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_loads_passes_the_checks_and_reports_its_repairs(name, fsae):
    """Each circuit loads, passes the checks, fits the car, and reports the widths assumed and
    the repairs its raw file calls for."""
    tr = load_track(name)          # check_points and check_track run on loading; they raise
    assert tr.closed and not tr.findings
    check_vehicle_fits(tr, fsae)
    widths = {a["quantity"]: a for a in tr.assumptions}
    assert widths["width"]["value"] == pytest.approx(6.0) and "FIA" in widths["width"]["reason"]
    assert np.allclose(tr.evaluate([0.0, tr.length / 2]).width_left, 6.0)
    # the repairs are those the raw file calls for
    _, _, elev = _raw(name)
    zeros = [f"pts[{i}]" for i in np.flatnonzero(elev == 0.0)]
    missing = [r for r in tr.build_repairs if r.startswith("elevation missing")]
    if zeros:
        assert len(missing) == 1 and all(p in missing[0] for p in zeros), tr.build_repairs
        assert tr.provenance["repairs"] == tr.repairs == tr.build_repairs
    else:
        assert not missing
    bridges = [r for r in tr.build_repairs if "a bridge of" in r]
    assert len(bridges) == ("bridge" in CIRCUITS[name])
    assert len(tr.build_repairs) == bool(zeros) + len(bridges)


@pytest.mark.unit
@pytest.mark.parametrize("name", [n for n in NAMES if (_raw(n)[2] == 0).any()])
def test_missing_elevation_is_interpolated_between_its_neighbours(name):
    """The repaired value lies between the neighbouring raw elevations, and the built track
    follows it (within the smoothing) at s = 0, the start/finish where the 0s are."""
    meta = json.loads((TRACKS / f"{name}.json").read_text(encoding="utf-8"))
    rec = next(r for r in meta["repair_records"] if r["kind"] == "elevation_missing")
    _, _, elev = _raw(name)
    for p in rec["points"]:
        lo, hi = sorted((p["before"]["z_m"], p["after"]["z_m"]))
        assert lo <= p["z_m"] <= hi
        assert {p["before"]["z_m"], p["after"]["z_m"]} <= set(elev[elev != 0.0])
    tr = load_track(name)
    assert rec["where_m"][0][0] == pytest.approx(0.0, abs=1.0)
    assert tr.evaluate(0.0).position[0, 2] == pytest.approx(rec["points"][0]["z_m"], abs=5.0)


@pytest.mark.unit
def test_suzuka_bridge_raw_refused_bundled_a_bridge():
    """The raw file is refused (a crossing with less than 2 m between the roads); the bundled
    track crosses itself once, with the bridge's height between the two roads (found here
    from the spine: the closest plan-view pair of points far apart along the track)."""
    with pytest.raises(TrackDataError, match="crosses itself"):
        load_track(RAW / CIRCUITS["suzuka"]["file"])
    tr = load_track("suzuka")
    s = np.arange(0.0, tr.length, 0.5)
    P = tr.evaluate(s).position
    from scipy.spatial import cKDTree
    pairs = cKDTree(P[:, :2]).query_pairs(r=1.0, output_type="ndarray")
    far = np.abs(s[pairs[:, 0]] - s[pairs[:, 1]])
    pairs = pairs[np.minimum(far, tr.length - far) > 500.0]
    assert len(pairs)
    d = np.linalg.norm(P[pairs[:, 0], :2] - P[pairs[:, 1], :2], axis=1)
    i, j = pairs[np.argmin(d)]
    lower, upper = sorted((i, j))            # the second pass (back straight) is the upper road
    assert P[upper, 2] - P[lower, 2] == pytest.approx(BRIDGE_M, abs=0.1)
    assert 2000.0 < s[lower] < 3000.0 and 4500.0 < s[upper] < 5300.0
    rec = next(r for r in tr.provenance["repair_records"] if r["kind"] == "bridge")
    assert rec["shift_m"] == pytest.approx((BRIDGE_M - rec["height_before_m"]) / 2)
    assert abs(rec["height_before_m"]) < 2.0 and rec["max_added_grade"] < 0.05


@pytest.mark.unit
def test_bridge_correction_on_a_figure_of_eight():
    """A flat lemniscate of Gerono: the correction gives the stated height at the crossing,
    is zero outside the tapers, and refuses bad arguments and curves without one crossing."""
    t = 0.3 + np.linspace(0.0, 2 * np.pi, 4001, endpoint=False)   # crossings at t = pi, 2 pi
    P = np.column_stack([500 * np.sin(t), 250 * np.sin(2 * t), np.zeros_like(t)])
    seg = np.linalg.norm(np.diff(P, axis=0, append=P[:1]), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)[:-1]])
    L = float(seg.sum())
    dz, info = bridge_correction(s, P, L, 5.0, 1, 100.0)
    assert info["height_after_m"] == 5.0 and info["shift_m"] == pytest.approx(2.5)
    k_up = np.argmin(np.abs(s - info["s_upper_m"]))
    k_lo = np.argmin(np.abs(s - info["s_lower_m"]))
    assert dz[k_up] - dz[k_lo] == pytest.approx(5.0, abs=0.01)
    assert info["s_upper_m"] < info["s_lower_m"]          # upper_pass=1: the first
    def along(c):                                         # distance along the loop
        d = np.abs(s - c)
        return np.minimum(d, L - d)

    near = np.minimum(along(info["s_upper_m"]), along(info["s_lower_m"]))
    assert np.all(dz[near > 100.0] == 0.0)
    assert np.max(np.abs(np.diff(dz) / seg[:-1])) <= info["max_added_grade"] * 1.001
    with pytest.raises(ValueError, match="upper_pass = 3"):
        bridge_correction(s, P, L, 5.0, 3, 100.0)
    with pytest.raises(ValueError, match="height_m = -1"):
        bridge_correction(s, P, L, -1.0, 1, 100.0)
    circle = np.column_stack([100 * np.cos(t), 100 * np.sin(t), np.zeros_like(t)])
    with pytest.raises(ValueError, match="crosses itself 0 time"):
        bridge_correction(s, circle, L, 5.0, 1, 100.0)


# ----------------------------------------------------------------------------- figures vs raw data
@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_length_agrees_with_the_geodesic_length_of_the_raw_points(name):
    """Each circuit's length agrees with the geodesic length of its raw points (pyproj's
    Geod)."""
    from pyproj import Geod
    lat, lon, _ = _raw(name)
    assert (lat[0], lon[0]) == (lat[-1], lon[-1])           # the file closes the loop itself
    geodesic = Geod(ellps="WGS84").line_length(lon, lat)
    tr = load_track(name)
    lo, hi = LENGTH_REL_TOL
    assert lo <= tr.length / geodesic - 1.0 <= hi, (tr.length, geodesic)


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_elevations_agree_with_the_raw_data(name):
    """Each circuit's elevation range and its elevations at the raw points agree with the
    raw data's; s = 0 at the start/finish."""
    from scipy.spatial import cKDTree
    lat, lon, elev = _raw(name)
    tr = load_track(name)
    x, y = _projected(tr, lat, lon)
    z_raw = _elev_repaired(x, y, elev)
    s = np.arange(0.0, tr.length, 0.5)
    P = tr.evaluate(s).position
    zmin, zmax = P[:, 2].min(), P[:, 2].max()
    rmin, rmax = z_raw.min(), z_raw.max()
    assert zmin >= rmin - Z_END_OVERSHOOT_M and zmax <= rmax + Z_END_OVERSHOOT_M, \
        ((zmin, zmax), (rmin, rmax))
    frac, floor = Z_SHRINK
    assert zmax - zmin >= (rmax - rmin) - max(frac * (rmax - rmin), floor), \
        ((zmin, zmax), (rmin, rmax))
    meta = tr.provenance
    assert (meta["elevation_min_m"], meta["elevation_max_m"]) == pytest.approx((zmin, zmax), abs=0.05)
    # at the raw points: plan view within XY_MAX_M, elevation within Z_MEDIAN_M in the median
    dist, j = cKDTree(P[:, :2]).query(np.column_stack([x, y]))
    assert dist.max() <= XY_MAX_M
    assert np.median(np.abs(z_raw - P[j, 2])) <= Z_MEDIAN_M
    assert np.hypot(P[0, 0] - x[0], P[0, 1] - y[0]) <= XY_MAX_M      # s = 0 at the start/finish


# ----------------------------------------------------------------------------- rebuild, listing
@pytest.mark.unit
def test_rebuilding_zandvoort_gives_the_bundled_files(tmp_path, capsys):
    """data/tracks/make_tracks.py, run in this process (so that it uses this checkout): the
    bundled files again, to the rounding of the libraries (tests/_tracks.py)."""
    script = runpy.run_path(str(TRACKS / "make_tracks.py"), run_name="make_tracks")
    assert script["main"](["--out", str(tmp_path), "zandvoort"]) == 0
    assert "zandvoort: built in" in capsys.readouterr().out
    assert_same_track_files(tmp_path, TRACKS, "zandvoort")
    with pytest.raises(SystemExit):
        script["main"](["--out", str(tmp_path), "monaco"])
    assert "unknown track(s) monaco" in capsys.readouterr().err


@pytest.mark.unit
def test_tracks_command_lists_every_track_with_its_figures():
    """pyomo-lap tracks lists every bundled track with its kind, length and elevations."""
    r = CliRunner().invoke(main, ["tracks"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["name", "track", "kind", "length", "[m]", "elevation", "[m]",
                                "loop", "source"]
    rows = {ln.split()[0]: ln for ln in lines[1:]}
    arcs = {p.stem for p in TRACKS.glob("*.toml")}
    assert arcs >= {"dymos_oval", "dymos_oval_spline", "dymos_barcelona"}
    assert set(rows) == set(available_tracks()) | arcs and set(NAMES) <= set(rows)
    info = {r["name"]: r for r in bundled_tracks()}
    for name in arcs:       # the arc tracks (straights and arcs, TOML), with their kind
        assert " straights and arcs " in rows[name] and "OpenMDAO/dymos @ 5bfbe394d251" in rows[name]
    # dymos's lengths (Track.get_total_length: straights + sweep * radius of tracks.py)
    assert "1244.8" in rows["dymos_oval"] and "1244.8" in rows["dymos_oval_spline"]
    assert "4785.3" in rows["dymos_barcelona"]     # 3073.84 m + 1711.48 m
    for name, line in rows.items():
        if name in arcs or name == "catalunya_fastest_lap":   # (tests/test_track_fastest_lap.py)
            continue
        assert " centreline " in line
        meta = json.loads((TRACKS / f"{name}.json").read_text(encoding="utf-8"))
        assert meta["display_name"] in line and meta["country"] in line
        assert f"{meta['length_m']:.1f}" in line
        assert f"{meta['elevation_min_m']:.1f}-{meta['elevation_max_m']:.1f}" in line
        assert " closed " in line
        assert re.search(r"https://github\.com/zaggyai/track_data @ a8b7ba4a434b\s*$", line)
        assert info[name]["length_m"] == meta["length_m"]


@pytest.mark.unit
@pytest.mark.parametrize("name", ["suzuka", "zandvoort"])
def test_check_command_reports_repairs_and_assumptions(name):
    """pyomo-lap check on a circuit reports its build's repairs and the assumed widths."""
    r = CliRunner().invoke(main, ["check", "--track", name])
    assert r.exit_code == 0, r.output
    out = r.output
    assert f"track {name}: " in out and "closed: ok" in out
    assert "track: width = 6 m each side assumed" in out and "FIA" in out
    built = [ln for ln in out.splitlines() if ln.startswith("track repaired when its bundled file was built:")]
    _, _, elev = _raw(name)
    assert len(built) == bool((elev == 0).any()) + ("bridge" in CIRCUITS[name])
    if name == "suzuka":
        assert any("a bridge of 6 m" in ln for ln in built)


# ----------------------------------------------------------------------------- one closed lap
@pytest.mark.integration
def test_interlagos_closed_lap_end_to_end(tmp_path, fsae):
    """A closed lap of Interlagos solves end to end: the lap time is the quadrature of ds/v,
    within independent bounds; the car stays on the track and within its friction ellipse."""
    import _independent as ind
    from pyomo_lap.results.table import read_summary, read_trajectory

    out = tmp_path / "lap"
    r = CliRunner().invoke(main, ["solve", "--track", "interlagos", "--full-lap", "--quiet",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "track repaired when its bundled file was built: elevation missing" in r.output
    summary, df = read_summary(out), read_trajectory(out)
    tr = load_track("interlagos")
    assert summary["termination_condition"] == "optimal" and summary["periodic"]
    assert summary["length_m"] == pytest.approx(tr.length, rel=1e-9)
    assert summary["track_repairs"] == tr.build_repairs
    T = summary["lap_time_s"]
    s, q1_dot = df["s_sector"].to_numpy(), df["q1_dot"].to_numpy()
    assert ind.time_by_quadrature(s, q1_dot) == pytest.approx(T, rel=1e-4)
    b = ind.speed_and_time_bounds(fsae, tr, 0.0, tr.length)
    assert T >= b.t_min and df["v_3x"].max() <= b.v_max
    assert ind.friction_ellipse_use(fsae, df).max() <= 1.0 + 1e-6
    assert (df["q2"] <= df["width_left"] - fsae.width / 2 + 1e-6).all()
    assert (df["q2"] >= -(df["width_right"] - fsae.width / 2) - 1e-6).all()
    first, last = df.iloc[0], df.iloc[-1]
    for k in ("q2", "q3", "q4", "q5", "q6", "q1_dot", "q2_dot", "q6_dot"):
        assert last[k] == pytest.approx(first[k], abs=1e-6), k
    # plausibility: the quasi-steady point mass on the centreline, within 10 %
    from pyomo_lap.vehicle.speed_profile import quasi_steady_speed
    s_pm = np.linspace(0.0, tr.length, int(tr.length / 2.0) + 1)
    tp = tr.evaluate(np.mod(s_pm, tr.length))
    v_pm = quasi_steady_speed(fsae, s_pm, tp.omega, tp.rotation, True, v_start=None)
    t_pm = float(np.trapezoid(1.0 / v_pm, s_pm))
    assert 0.9 < T / t_pm < 1.1, (T, t_pm)
    assert math.isfinite(summary["max_speed_kmh"])
