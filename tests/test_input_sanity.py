"""Bad input refused before anything is built (issue 23, items 7 and 8).

* Solver options are checked against the solver's own option list (for IPOPT: the library's
  own documentation and its acceptance of the value) before the track is loaded: a bad name,
  type or value is one line and exit code 2, no folder, no model.
* GPS data with latitude and longitude swapped are detected (refused with the hint, or read
  swapped with ``--repair-track``), never a ``CRSError``; when both orders are valid
  coordinates the loader says which one it took.
* Coordinates far from the origin are re-centred before any arithmetic that loses precision:
  a CSV track shifted by 1e12 m is the same track as the one at the origin.
"""
import csv
import decimal
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import pyomo_lap.api.job as api
from pyomo_lap.api.config import OptionValueError
from pyomo_lap.api.results import _lat_lon_summary, track_data_lines
from pyomo_lap.cli import main
from pyomo_lap.track.checks import TrackDataError, TrackRepairWarning
from pyomo_lap.track.geometry import Track
from pyomo_lap.track.loading import load_track

from _tracks import write_ring_csv

ROOT = Path(__file__).resolve().parents[1]
TRACKS = ROOT / "data" / "tracks"
RAW = TRACKS / "raw" / "zaggyai"
ZANDVOORT_RAW = RAW / "9dcb49390c2037f6ae83f19d99124d35--circuit-park-zandvoort.json"
SHIFT = 10 ** 12        # [m]


class Reached(Exception):
    """Raised by a patched loader or builder: the checks let the job through to there."""


@pytest.fixture
def nothing_built(monkeypatch):
    """Neither the track may be loaded nor the model built (each raises AssertionError)."""
    def forbidden(*a, **k):
        raise AssertionError("the track was loaded or the model built despite a bad option")
    monkeypatch.setattr(api, "load_track", forbidden)
    monkeypatch.setattr(api, "build_model", forbidden)


@pytest.fixture
def reach_load(monkeypatch):
    """Loading the track raises :class:`Reached` (the options were accepted)."""
    def reached(*a, **k):
        raise Reached("the options were accepted: the track is being loaded")
    monkeypatch.setattr(api, "load_track", reached)


# ----------------------------------------------------------------------- solver options
BAD_OPTIONS = [
    ("max_iter=abc", ["max_iter=abc", "expected an integer with 0 <= max_iter"]),
    ("max_iter=1.5", ["max_iter=1.5", "not an integer"]),
    ("tol=-1", ["tol=-1", "expected a finite number with 0 < tol"]),
    ("tol=inf", ["tol=inf", "not finite"]),
    ("tol=nan", ["tol=nan", "not finite"]),
    ("foo_bar=3", ["foo_bar=3", "unknown option of lap_ipopt", "IPOPT 3.14"]),
    ("max_iters=30", ["max_iters=30", "unknown option", "did you mean 'max_iter'"]),
    ("linear_solver=foo", ["linear_solver=foo", "expected one of", "'mumps'", "'ma27'", "'spral'"]),
    ("print_level=13", ["print_level=13", "0 <= print_level <= 12"]),
    ("mu_strategy=fast", ["mu_strategy=fast", "'monotone', 'adaptive'"]),
    ("eval_threads=-1", ["eval_threads=-1", "lap_ipopt's option eval_threads"]),
    ("compile=fast", ["compile=fast", "'auto', 'compile', 'vm'"]),
    ("verify_points=some", ["verify_points=some", "'all' or an integer"]),
    ("tune_process=maybe", ["tune_process=maybe", "Boolean"]),
]


@pytest.mark.component
@pytest.mark.parametrize("option, words", BAD_OPTIONS, ids=[o for o, _ in BAD_OPTIONS])
def test_bad_solver_option_is_refused_by_the_cli_before_anything_is_built(
        tmp_path, nothing_built, option, words):
    """Exit 2, one line naming the option, the value and what was expected; no folder, no
    track loaded, no model built (it used to build the model, fail with exit 1 and write
    a .failed folder)."""
    out = tmp_path / "results"
    r = CliRunner().invoke(main, ["solve", "--solver-option", option, "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit), r.exception
    line = r.output.strip()
    assert "\n" not in line and line.startswith("error: --solver-option "), line
    for w in words:
        assert w in line, (w, line)
    assert not out.exists() and not (tmp_path / "results.failed").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.component
def test_bad_solver_option_is_refused_by_sweep(tmp_path, nothing_built):
    """pyomo-lap sweep refuses a bad solver option before anything runs (exit 2, no folder)."""
    out = tmp_path / "sweep"
    r = CliRunner().invoke(main, ["sweep", "--set", "total=240,250", "--solver-option", "tol=-1",
                                  "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert "--solver-option tol=-1" in r.output and "0 < tol" in r.output
    assert not out.exists()


@pytest.mark.component
def test_good_solver_options_are_still_accepted(tmp_path, reach_load):
    """Options IPOPT and lap_ipopt take pass the check (the job reaches the track's loading)."""
    good = ["max_iter=500", "tol=1e-6", "acceptable_tol=1e-4", "linear_solver=mumps",
            "mumps_pivot_order=5", "mu_strategy=adaptive", "print_level=3",
            "obj_scaling_factor=0.001", "max_wall_time=100", "compile=vm", "eval_threads=1",
            "verify_points=all", "eliminate_derivatives=false", "tune_process=no", "sb=yes"]
    args = ["solve", "--out", str(tmp_path / "res")]
    for g in good:
        args += ["--solver-option", g]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 3 and "the options were accepted" in r.output, r.output
    with pytest.raises(Reached):
        api.solve_sector(solver_options={"max_iter": 500, "tol": 1e-6, "hessian_approximation":
                                         "limited-memory", "warm_start_init_point": True,
                                         "eval_threads": 2, "compile": "auto"},
                         out_dir=None, echo=lambda *a: None)


@pytest.mark.component
@pytest.mark.parametrize("options", [{"max_iter": "abc"}, {"tol": -1}, {"foo_bar": 3},
                                     {"linear_solver": "foo"}, {"max_iter": 1.5},
                                     {"tol": math.nan}, {"eval_threads": 1.5}])
def test_solve_sector_refuses_bad_solver_options_before_loading(nothing_built, options):
    """solve_sector refuses a bad solver option (a ValueError naming key and value) before
    loading anything."""
    from pyomo_lap.solvers.solve import SolverOptionError
    key, value = next(iter(options.items()))
    with pytest.raises(SolverOptionError) as exc:
        api.solve_sector(solver_options=options, out_dir=None, echo=lambda *a: None)
    assert isinstance(exc.value, ValueError)
    assert exc.value.key == key and str(exc.value).startswith(f"solver option {key} = {value!r}: ")


@pytest.mark.component
def test_ipopt_option_list_comes_from_the_library():
    """The names, types, ranges and values are IPOPT's own documentation of its options,
    printed by the library of the casadi wheel (print_options_documentation)."""
    from pyomo_lap.solvers.lap.ipopt_options import ipopt_options_documentation
    from pyomo_lap.solvers.lap.ipopt_c import ipopt_version
    docs = ipopt_options_documentation()
    assert ipopt_version() >= (3, 14, 0)
    assert len(docs) > 250
    assert docs["tol"].kind == "real" and docs["tol"].valid_range == "0 < tol"
    assert docs["tol"].default == "1e-08"
    assert docs["max_iter"].kind == "integer" and docs["max_iter"].valid_range == "0 <= max_iter"
    assert docs["print_level"].valid_range == "0 <= print_level <= 12"
    assert docs["bound_frac"].valid_range == "0 < bound_frac <= 0.5"
    assert docs["linear_solver"].kind == "string" and "mumps" in docs["linear_solver"].values
    assert docs["mu_strategy"].values == ("monotone", "adaptive")
    assert docs["file_append"].values == ("yes", "no")
    assert docs["output_file"].values == ()          # any file name
    assert docs["s_max"].category == "Termination"   # an advanced option
    assert ipopt_options_documentation() is docs     # once per process


@pytest.mark.component
def test_solver_options_of_the_asl_paths_and_other_solvers():
    """The solver options of the executable's paths: plain AMPL keywords, OF_ options, and their
    types checked."""
    from pyomo_lap.solvers.solve import SolverOptionError, check_solver_options
    # the classic interface passes plain names on the executable's command line (its AMPL
    # keywords); the other IPOPT options only with the prefix OF_ (an options file)
    assert check_solver_options("ipopt", {"max_iter": 5, "OF_mumps_pivot_order": 6,
                                          "maxit": 3, "halt_on_ampl_error": "yes"})
    with pytest.raises(SolverOptionError, match="OF_mumps_pivot_order"):
        check_solver_options("ipopt", {"mumps_pivot_order": 6})
    with pytest.raises(SolverOptionError, match="expected an integer"):
        check_solver_options("ipopt", {"OF_max_iter": "many"})
    with pytest.raises(SolverOptionError, match="an option of lap_ipopt, not of ipopt"):
        check_solver_options("ipopt", {"eval_threads": 2})
    assert check_solver_options("ipopt_v2", {"mumps_pivot_order": 6, "outlev": 3})
    for bad in ({"wantsol": 1}, {"OF_tol": 1e-6}, {"tol": 0}, {"outlev": 20}):
        with pytest.raises(SolverOptionError):
            check_solver_options("ipopt_v2", bad)
    # any other solver: not checked
    assert check_solver_options("highs", {"foo": "bar"}) == {"foo": "bar"}
    assert check_solver_options("lap_ipopt", None) == {}


# ----------------------------------------------------------------------- GPS order
def zaggy_loop(path, lat0, lon0, radius=300.0, n=120, swap=False):
    """A closed, gently undulating loop in the zaggyai format (lat/lon in 1e-7 degree, elev in
    mm) centred at (lat0, lon0) [deg]; ``swap`` writes the latitudes under 'lon' and the
    longitudes under 'lat'."""
    u = np.linspace(0, 2 * np.pi, n, endpoint=False)
    R = 6371000.0
    lat = lat0 + radius * np.sin(u) / R * 180 / np.pi
    east = radius * (1 + 0.3 * np.cos(2 * u)) * np.cos(u)           # [m]
    lon = lon0 + east / (R * np.cos(np.radians(lat0))) * 180 / np.pi
    elev = 100.0 + 2.0 * np.sin(u)
    a, b = ("lon", "lat") if swap else ("lat", "lon")
    pts = [{a: int(round(x * 1e7)), b: int(round(y * 1e7)), "elev": int(round(z * 1e3))}
           for x, y, z in zip(lat, lon, elev)]
    path.write_text(json.dumps({"name": "Loop", "short_name": "Loop", "pts": pts}))
    return path


def swapped_copy(src, dst):
    """A raw zaggyai file with the keys lat and lon swapped (points and start/finish)."""
    d = json.loads(Path(src).read_text(encoding="utf-8"))
    for p in d["pts"] + ([d["start_finish"]] if d.get("start_finish") else []):
        p["lat"], p["lon"] = p["lon"], p["lat"]
    dst.write_text(json.dumps(d))
    return dst


@pytest.mark.unit
def test_swapped_lat_lon_beyond_90_is_refused_with_the_hint(tmp_path):
    """Read as named, the latitudes exceed 90 deg: the columns are swapped. Refused with the
    hint (it used to end in 'unexpected CRSError ... bug in pyomo_lap', exit 3); read swapped
    with --repair-track, and reported."""
    good = zaggy_loop(tmp_path / "loop.json", 34.84, 136.54)               # Suzuka's place
    bad = zaggy_loop(tmp_path / "loop_swapped.json", 34.84, 136.54, swap=True)
    with pytest.raises(TrackDataError) as exc:
        load_track(bad)
    msg = str(exc.value)
    assert "loop_swapped.json" in msg and "latitude and longitude look swapped" in msg
    assert "column 'lat'" in msg and "136.5" in msg and "repairable" in msg
    assert "CRSError" not in msg
    with pytest.warns(TrackRepairWarning, match="look swapped"):
        tr = load_track(bad, repair=True)
    ref = load_track(good)
    assert tr.length == pytest.approx(ref.length, rel=1e-12)
    assert [f.kind for f in tr.findings] == ["lat_lon_swapped"] and tr.findings[0].repaired
    assert any("look swapped" in r for r in tr.provenance["repairs"])
    # the command line: one line, exit 2, never "a bug"
    r = CliRunner().invoke(main, ["check", "--track", str(bad)])
    assert r.exit_code == 2, r.output
    assert "look swapped" in r.output and "CRSError" not in r.output and "bug" not in r.output
    r = CliRunner().invoke(main, ["check", "--track", str(bad), "--repair-track"])
    assert r.exit_code == 0, r.output
    assert "look swapped" in r.output


@pytest.mark.unit
def test_a_bundled_raw_file_swapped_is_refused(tmp_path):
    """Suzuka (34.8 N, 136.5 E) with its keys swapped: a latitude of 136.5 deg."""
    bad = swapped_copy(RAW / "12bd4b0b4d4a04030c1b3f5e65c94f0a--suzuka-circuit.json",
                       tmp_path / "suzuka_swapped.json")
    with pytest.raises(TrackDataError, match="latitude and longitude look swapped"):
        load_track(bad)
    r = CliRunner().invoke(main, ["check", "--track", str(bad)])
    assert r.exit_code == 2 and "look swapped" in r.output and "CRSError" not in r.output


@pytest.mark.unit
def test_both_orders_valid_the_loader_says_which_it_took(tmp_path):
    """Zandvoort (52.4 N, 4.5 E) with its keys swapped is valid coordinates too (4.5 N,
    52.4 E): the data cannot tell; the loader reads as named and says so, with the length
    of both readings (it used to accept the 5.63 km loop silently)."""
    swapped = swapped_copy(ZANDVOORT_RAW, tmp_path / "zandvoort_swapped.json")
    tr = load_track(swapped)
    step = [s for s in tr.processing_steps if s["step"] == "lat_lon_order"]
    assert len(step) == 1
    import re
    m = re.fullmatch(r"as named, (\d+) m long; read swapped \(both are valid\) it would be "
                     r"(\d+) m", step[0]["method"])
    assert m, step[0]["method"]
    named, other = float(m.group(1)), float(m.group(2))    # the polylines of the points
    assert named == pytest.approx(tr.length, rel=2e-3)       # 5.63 km
    assert other == pytest.approx(load_track(ZANDVOORT_RAW).length, rel=2e-3)   # 4.19 km
    assert "the names decide the order" in step[0]["detail"]
    lines = track_data_lines(tr)
    assert any(f"latitude/longitude order: as named, {m.group(1)} m" in line for line in lines)
    r = CliRunner().invoke(main, ["check", "--track", str(swapped)])
    assert r.exit_code == 0, r.output
    assert "latitude/longitude order" in r.output and f"{m.group(2)} m" in r.output
    # a file whose other reading is no coordinates (a longitude of 136.5 deg read as a
    # latitude): nothing to say
    tr = load_track(zaggy_loop(tmp_path / "loop.json", 34.84, 136.54))
    assert not [s for s in tr.processing_steps if s["step"] == "lat_lon_order"]


@pytest.mark.unit
def test_coordinates_valid_in_neither_order_are_refused(tmp_path):
    """Latitudes in 1e-6 degree read as 1e-7 (503 deg): no reading is valid."""
    f = zaggy_loop(tmp_path / "units.json", 50.34, 6.96)
    d = json.loads(f.read_text())
    for p in d["pts"]:
        p["lat"] *= 10
    f.write_text(json.dumps(d))
    with pytest.raises(TrackDataError) as exc:
        load_track(f)
    msg = str(exc.value)
    assert "units.json" in msg and "column 'lat'" in msg and "beyond +-90 deg" in msg
    assert "point 0 (503." in msg and "CRSError" not in msg
    with pytest.raises(TrackDataError):
        load_track(f, repair=True)                       # nothing to repair


@pytest.mark.unit
def test_a_bad_start_finish_is_one_clear_line(tmp_path):
    """Valid points, a start/finish with a latitude beyond 90 deg: named, never a CRSError."""
    f = zaggy_loop(tmp_path / "sf.json", 50.34, 6.96)
    d = json.loads(f.read_text())
    d["start_finish"] = {"lat": 1365386449, "lon": 348450312}
    f.write_text(json.dumps(d))
    with pytest.raises(ValueError) as exc:
        load_track(f)
    msg = str(exc.value)
    assert "sf.json" in msg and "start_finish" in msg and "136.5386449" in msg
    assert "CRSError" not in msg


# ----------------------------------------------------------------------- far from the origin
def shifted_csv(src, dst, columns, shift=SHIFT):
    """A copy of a CSV track with ``shift`` [m] added to ``columns``, exactly (in decimal, on
    the text: the shifted file holds every digit of the original)."""
    with open(src, newline="") as fh:
        rows = list(csv.reader(fh))
    head = [h.strip().lower() for h in rows[0]]
    idx = [head.index(c) for c in columns]
    for r in rows[1:]:
        for j in idx:
            r[j] = str(decimal.Decimal(r[j]) + shift)
    with open(dst, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return dst


def same_track(a: Track, b: Track, shift):
    """Length, frame, curvature (Omega) and its derivative at sampled points to 1e-9
    relative; positions differ by the shift (to a float's precision there)."""
    assert b.length == pytest.approx(a.length, rel=1e-9)
    s = np.linspace(0.0, a.length, 997, endpoint=False)
    pa, pb = a.evaluate(s), b.evaluate(s)
    scale = np.abs(pa.omega).max()
    assert np.abs(pb.omega - pa.omega).max() <= 1e-9 * scale
    kz = np.abs(pa.omega[:, 2]) > 0.1 * scale              # the curvature, point by point
    assert np.all(np.abs(pb.omega[kz, 2] / pa.omega[kz, 2] - 1.0) <= 1e-9)
    assert np.abs(pb.domega_ds - pa.domega_ds).max() <= 1e-9 * np.abs(pa.domega_ds).max()
    assert np.abs(pb.rotation - pa.rotation).max() <= 1e-9
    off = np.asarray(shift, float)
    assert np.abs(pb.position - pa.position - off).max() <= 4 * np.spacing(np.abs(off).max()) + 1e-9


@pytest.mark.unit
def test_a_csv_track_shifted_by_1e12_m_is_the_same_track(tmp_path):
    """A ring of x, y, z points (smoothed and resampled by the loader) and a processed track
    with an s column (interpolated as it is), each shifted by 1e12 m in x and y: the same
    length, curvature and frame (it used to be 86 % off in curvature for the ring, 1 % for
    the processed track: the smoother's linear solves and the splines' coefficients carried the
    offset, whose rounding, 1.2e-4 m at 1e12 m, the second and third derivatives amplify)."""
    ring = write_ring_csv(tmp_path / "ring.csv")
    far = shifted_csv(ring, tmp_path / "ring_far.csv", ["x", "y"])
    a, b = load_track(ring), load_track(far)
    same_track(a, b, (SHIFT, SHIFT, 0.0))
    origin = [SHIFT + 100.0, SHIFT, 0.0]            # the first point (100, 0), whole metres
    assert list(b.origin) == origin and b.provenance["origin_m"] == origin
    steps = [s["step"] for s in b.processing_steps]
    assert steps.count("recentred") == 1
    assert "recentred" not in [s["step"] for s in a.processing_steps]
    assert "origin_m" not in a.provenance
    rec = [s for s in b.processing_steps if s["step"] == "recentred"][0]
    assert "0.00012 m" in rec["detail"] and "file's frame" in rec["detail"]

    zand = shifted_csv(TRACKS / "zandvoort.csv", tmp_path / "zandvoort_far.csv", ["x_m", "y_m"])
    a, b = load_track("zandvoort"), load_track(zand)
    same_track(a, b, (SHIFT, SHIFT, 0.0))


@pytest.mark.unit
def test_pyomo_lap_check_on_the_shifted_and_the_unshifted_track(tmp_path):
    """pyomo-lap check says the same of a ring and of the ring shifted far from the origin, and
    says the re-centring."""
    ring = write_ring_csv(tmp_path / "ring.csv")
    far = shifted_csv(ring, tmp_path / "ring_far.csv", ["x", "y"])
    out = {}
    for f in (ring, far):
        r = CliRunner().invoke(main, ["check", "--track", str(f)])
        assert r.exit_code == 0, r.output
        out[f.name] = r.output
    first = {k: v.splitlines()[0] for k, v in out.items()}
    assert first["ring.csv"].replace("ring", "") == first["ring_far.csv"].replace("ring_far", "")
    assert "coordinates re-centred" in out["ring_far.csv"]
    assert "coordinates re-centred" not in out["ring.csv"]


@pytest.mark.unit
def test_points_far_from_the_origin_are_recentred_before_the_fit():
    """Points in an array (Track.from_points, the constructor) at grid coordinates: the same
    curvature as at the origin; the offset is kept and added back to the positions."""
    u = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    P = np.c_[150 * np.cos(u) * (1 + 0.2 * np.cos(3 * u)), 150 * np.sin(u), 200 + np.sin(u)]
    P = np.round(P * 2.0 ** 20) / 2.0 ** 20      # P + off below is exact: the same points
    off = np.array([4.5e5, 5.6e6, 0.0])                  # UTM-like
    for make in (lambda Q: Track.from_points(Q, closed=True),
                 lambda Q: Track(np.arange(len(Q)) * 3.0, Q, closed=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TrackRepairWarning)
            a, b = make(P), make(P + off)
        assert np.array_equal(b.origin, np.round(P[0] + off) * [1, 1, 0])   # x, y far
        s = np.linspace(0, a.length, 500, endpoint=False)
        assert b.length == pytest.approx(a.length, rel=1e-9)
        oa, ob = a.evaluate(s).omega, b.evaluate(s).omega
        assert np.abs(ob - oa).max() <= 1e-9 * np.abs(oa).max()
        assert np.abs(b.evaluate(s).position - a.evaluate(s).position - off).max() < 1e-8


@pytest.mark.unit
def test_a_crossing_is_located_in_the_files_frame(tmp_path):
    """Messages give positions in the file's coordinates, also for a re-centred track: a
    figure eight with elevations equal where it crosses (refused), and flat (the crossing taken
    as a bridge, recorded where it is)."""
    u = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    for z, name in ((50 + 10 * np.sin(2 * u), "eight.csv"), (np.full(len(u), 50.0), "flat.csv")):
        rows = ["x,y,z"] + [f"{1e6 + 200 * np.sin(t):.6f},{2e6 + 100 * np.sin(2 * t):.6f},{h:.6f}"
                            for t, h in zip(u, z)]                      # a figure eight
        f = tmp_path / name
        f.write_text("\n".join(rows) + "\n")
    where = r"crosses itself .*\(x, y\) = \(1000000\.0, 2000000\.0\) m"
    with pytest.raises(TrackDataError, match=where):
        load_track(tmp_path / "eight.csv")
    tr = load_track(tmp_path / "flat.csv")
    assert tr.provenance["bridges"][0]["xy"] == [1e6, 2e6]


@pytest.mark.integration
def test_the_lap_time_on_a_shifted_track_is_the_same(tmp_path):
    """The lap time on the ring shifted by 1e12 m equals the one at the origin (it was 1-3 %
    faster: the curvature was computed from the rounding of the offset)."""
    ring = write_ring_csv(tmp_path / "ring.csv")
    far = shifted_csv(ring, tmp_path / "ring_far.csv", ["x", "y"])
    times = []
    for f in (ring, far):
        _, rep, df, summary = api.solve_sector(track=f, start=0.0, length=60.0, nfe=6,
                                               out_dir=None, echo=lambda *a: None,
                                               progress=lambda *a: None)
        assert rep.ok
        times.append(summary["lap_time_s"])
    assert times[1] == pytest.approx(times[0], rel=1e-9)
    assert df["x_spine"].iloc[0] == pytest.approx(SHIFT + 100.0, abs=1e-3)   # the file's frame


# ----------------------------------------------------------------------- nesting
DEEP = 100_000


@pytest.mark.unit
@pytest.mark.parametrize("kind, name, text", [
    ("track", "deep.json", "[" * DEEP + "]" * DEEP),
    ("track", "deep_obj.json", '{"a": ' * DEEP + "1" + "}" * DEEP),
    ("track", "deep_arcs.toml", "a = " + "[" * DEEP + "]" * DEEP + "\n"),
    ("vehicle", "deep_car.toml", "a = " + "[" * DEEP + "]" * DEEP + "\n"),
    ("vehicle", "deep_inline.toml", "a = " + "{b = " * DEEP + "1" + "}" * DEEP + "\n"),
], ids=["track-json-array", "track-json-object", "arc-track-toml", "vehicle-toml",
        "vehicle-toml-inline"])
def test_a_file_nested_too_deep_is_bad_input_not_a_bug(tmp_path, kind, name, text):
    """A JSON or TOML file nested 100 000 deep: one line naming the file, 'nested too deep'
    and the structure expected, exit 2 (it was 'unexpected RecursionError ... this is a bug',
    exit 3: issue 34, item 11a)."""
    f = tmp_path / name
    f.write_text(text)
    for command in (["check"], ["solve", "--out", str(tmp_path / "out")]):
        r = CliRunner().invoke(main, [*command, f"--{kind}", str(f)])
        assert r.exit_code == 2, r.output
        line = [t for t in r.output.splitlines() if t.startswith("error:")]
        assert len(line) == 1, r.output
        assert name in line[0] and "nested too deep" in line[0] and "expected" in line[0]
        assert "RecursionError" not in r.output and "bug" not in r.output
    if kind == "vehicle":
        from pyomo_lap.vehicle.car import load_vehicle
        with pytest.raises(ValueError, match="nested too deep"):
            load_vehicle(f)


@pytest.mark.unit
def test_both_orders_valid_named_keys_decide_and_no_warning(tmp_path):
    """A GPS file whose two orders are both valid coordinates and give lengths more than 1 %
    apart, its keys named 'lat' and 'lon': the names decide the order (issue 46, item 5), so
    `solve` and `check` print no "cannot be told" warning; `check`'s table of what was done
    still gives both lengths (the step "latitude/longitude order")."""
    swapped = swapped_copy(ZANDVOORT_RAW, tmp_path / "zandvoort_swapped.json")
    for args in (["check", "--track", str(swapped)],
                 ["solve", "--track", str(swapped), "--solver", "no_such_solver",
                  "--out", str(tmp_path / "out")]):
        r = CliRunner().invoke(main, args)
        assert "track warning" not in r.output and "cannot be told" not in r.output, r.output
    r = CliRunner().invoke(main, ["check", "--track", str(swapped)])
    assert "latitude/longitude order" in r.output, r.output
    from pyomo_lap.track.gps import lat_lon_order_warnings
    near = [{"step": "lat_lon_order", "lengths_m": [1000.0, 1005.0], "columns": ["lat", "lon"]}]
    assert lat_lon_order_warnings(near) == []                        # within 1 %: no warning
    # columns whose names do not say which is which: the data cannot tell, a warning
    unnamed = [{"step": "lat_lon_order", "lengths_m": [5630.0, 4190.0], "columns": ["a", "b"],
                "named": False}]
    (line,) = lat_lon_order_warnings(unnamed)
    assert line.startswith("track warning: latitude/longitude order cannot be told") and \
        "read the other way 4190 m" in line and "--lat-lon-order lon,lat" in line
    assert lat_lon_order_warnings([dict(unnamed[0], named=True)]) == []


# ----------------------------------------------------------------------- lat_lon_order
NUR = (50.33, 6.94)        # both orders valid coordinates (issue 34, item 9)


def gps_csv(path, json_file):
    """The points of a zaggyai file (:func:`zaggy_loop`) as a GPS logger's CSV file, its
    'lat' and 'lon' keys as the columns 'lat' and 'lon' (in degrees) and 'alt' [m]."""
    pts = json.loads(Path(json_file).read_text())["pts"]
    path.write_text("lat,lon,alt\n" + "".join(
        f"{p['lat'] / 1e7:.7f},{p['lon'] / 1e7:.7f},{p['elev'] / 1e3:.3f}\n" for p in pts))
    return path


@pytest.mark.unit
@pytest.mark.parametrize("kind", ["json", "csv"])
def test_lat_lon_order_reads_a_swapped_gps_file_at_its_true_length(tmp_path, kind):
    """A GPS file whose columns are swapped, both orders valid coordinates (lat 50.33, lon
    6.94): lat_lon_order='lon,lat' reads it as the same points written in the right order
    and read as named (an independent reading), with no ambiguity warning; the order used
    and why are recorded (issue 34, item 9)."""
    from pyomo_lap.track.gps import lat_lon_order_warnings
    good = zaggy_loop(tmp_path / "loop.json", *NUR)
    swapped = zaggy_loop(tmp_path / "loop_swapped.json", *NUR, swap=True)
    if kind == "csv":
        good, swapped = gps_csv(tmp_path / "loop.csv", good), gps_csv(tmp_path / "sw.csv", swapped)
    ref = load_track(good)
    as_named = load_track(swapped)
    assert abs(as_named.length - ref.length) > 0.2 * ref.length          # the wrong reading
    assert lat_lon_order_warnings(as_named.processing_steps) == []       # named: they decide
    tr = load_track(swapped, lat_lon_order="lon,lat")
    assert tr.length == pytest.approx(ref.length, rel=1e-6)
    assert tr.closed == ref.closed
    assert lat_lon_order_warnings(tr.processing_steps) == []
    step = [s for s in tr.processing_steps if s["step"] == "lat_lon_order"]
    assert len(step) == 1 and step[0]["given"] and step[0]["order"] == "lon,lat"
    assert "lat_lon_order='lon,lat'" in step[0]["method"]
    rec = tr.provenance["lat_lon_order"]
    assert rec["option"] == "lon,lat" and rec["order"] == "lon,lat" and rec["given"]
    assert _lat_lon_summary(tr, "lon,lat") == rec            # summary.json's record
    # 'lat,lon': the user's word for the order as named: the same track, no warning
    named = load_track(swapped, lat_lon_order="lat,lon")
    assert named.length == pytest.approx(as_named.length, rel=1e-12)
    assert lat_lon_order_warnings(named.processing_steps) == []
    assert named.provenance["lat_lon_order"]["order"] == "lat,lon"
    assert named.provenance["lat_lon_order"]["given"]
    assert load_track(good, lat_lon_order="lat,lon").length == pytest.approx(ref.length,
                                                                              rel=1e-12)


@pytest.mark.unit
def test_lat_lon_order_on_the_command_line_silences_the_warning(tmp_path):
    """`check` and `solve` with --lat-lon-order lon,lat read the swapped file the other way
    and print no warning; without it the keys' names decide (no warning either), and the
    step in check's table names the option."""
    swapped = zaggy_loop(tmp_path / "loop_swapped.json", *NUR, swap=True)
    ref = load_track(zaggy_loop(tmp_path / "loop.json", *NUR))
    r = CliRunner().invoke(main, ["check", "--track", str(swapped)])
    assert "track warning" not in r.output, r.output
    step = [s for s in load_track(swapped).processing_steps if s["step"] == "lat_lon_order"]
    assert len(step) == 1 and "lat_lon_order='lon,lat'" in step[0]["detail"]
    r = CliRunner().invoke(main, ["check", "--track", str(swapped), "--lat-lon-order", "lon,lat"])
    assert r.exit_code == 0, r.output
    assert "track warning" not in r.output
    assert f"track Loop: {ref.length:.1f} m, closed: ok" in r.output
    r = CliRunner().invoke(main, ["solve", "--track", str(swapped), "--lat-lon-order", "lon,lat",
                                  "--solver", "no_such_solver", "--out", str(tmp_path / "out")])
    assert "track data:" in r.output and "track warning" not in r.output, r.output


@pytest.mark.unit
def test_a_bad_lat_lon_order_is_one_line(tmp_path, nothing_built):
    """A value not in ('auto', 'lat,lon', 'lon,lat'): one line naming the option, the value
    and the values allowed (Python and command line), nothing loaded."""
    swapped = zaggy_loop(tmp_path / "loop_swapped.json", *NUR, swap=True)
    with pytest.raises(ValueError) as exc:
        load_track(swapped, lat_lon_order="lonlat")
    assert str(exc.value) == ("lat_lon_order = 'lonlat': expected one of 'auto', 'lat,lon', "
                              "'lon,lat'")
    with pytest.raises(OptionValueError) as exc:
        api.solve_sector(track=str(swapped), lat_lon_order="lonlat", out_dir=None)
    assert "lat_lon_order = 'lonlat'" in str(exc.value) and "'lon,lat'" in str(exc.value)
    assert "\n" not in str(exc.value)
    for cmd in ("check", "solve"):
        r = CliRunner().invoke(main, [cmd, "--track", str(swapped), "--lat-lon-order", "lonlat"])
        assert r.exit_code == 2 and "--lat-lon-order" in r.output and "lonlat" in r.output
        assert "lon,lat" in r.output, r.output


@pytest.mark.unit
def test_lat_lon_order_for_a_track_without_lat_lon_is_refused(tmp_path, monkeypatch):
    """A track with x/y coordinates (a CSV centreline, a bundled track, an arc track) and an
    order other than 'auto': refused in one line before anything is built."""
    ring = write_ring_csv(tmp_path / "ring.csv")
    for track in (ring, "nordschleife", "dymos_oval"):
        for order in ("lat,lon", "lon,lat"):
            with pytest.raises(ValueError) as exc:
                load_track(track, lat_lon_order=order)
            msg = str(exc.value)
            assert msg.startswith(f"lat_lon_order={order!r} applies to GPS files (lat/lon)")
            assert str(track) in msg and "x/y coordinates" in msg and "\n" not in msg
        assert load_track(track, lat_lon_order="auto").length > 0
    def forbidden(*a, **k):
        raise AssertionError("the model was built despite the refusal")
    monkeypatch.setattr(api, "build_model", forbidden)
    with pytest.raises(ValueError, match="applies to GPS files"):
        api.solve_sector(track=str(ring), lat_lon_order="lon,lat", out_dir=None)
    with pytest.raises(ValueError, match="lat_lon_order = 'lon,lat' with a Track object"):
        api.solve_sector(track=load_track(ring), lat_lon_order="lon,lat", out_dir=None)
    r = CliRunner().invoke(main, ["check", "--track", str(ring), "--lat-lon-order", "lon,lat"])
    assert r.exit_code == 2
    line = [t for t in r.output.splitlines() if t.startswith("error:")]
    assert len(line) == 1 and "applies to GPS files" in line[0] and "ring.csv" in line[0]
