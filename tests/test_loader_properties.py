"""Property-based tests (hypothesis) of the track loaders: random valid tracks load and keep
their geometry; one random corruption of a random row is detected and named, and repaired
when asked; arbitrary text and arbitrary JSON never crash the loaders (only ValueError or
FileNotFoundError, with the file named)."""
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pyomo_lap import Track, load_track
from pyomo_lap.track.checks import TrackDataError, TrackRepairWarning

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@st.composite
def star_tracks(draw):
    """A simple closed curve r(theta) = R0 (1 + sum a_k cos(k theta + phi_k)), sum |a_k| <= 0.3
    (star-shaped, so it cannot cross itself), with a smooth elevation; as points (n, 3)."""
    R0 = draw(st.floats(60.0, 250.0))
    n = draw(st.integers(60, 200))
    amps = [draw(st.floats(0.0, 0.1)) for _ in range(3)]
    phases = [draw(st.floats(0.0, 2 * np.pi)) for _ in range(3)]
    z0 = draw(st.floats(50.0, 1000.0))
    dz = draw(st.floats(0.0, 0.05)) * R0            # grade <= ~ 5 %
    th = np.linspace(0, 2 * np.pi, n, endpoint=False)
    r = R0 * (1 + sum(a * np.cos((k + 2) * th + p) for k, (a, p) in enumerate(zip(amps, phases))))
    return np.c_[r * np.cos(th), r * np.sin(th), z0 + dz * np.sin(th + phases[0])]


def write(path, P, cells=None):
    lines = ["x,y,z"]
    for i, p in enumerate(P):
        vals = [repr(float(v)) for v in p]
        for (row, col), text in (cells or {}).items():
            if row == i:
                vals[col] = text
        lines.append(",".join(vals))
    path.write_text("\n".join(lines) + "\n")
    return path


def polyline_length(P, closed=True):
    Q = np.vstack([P, P[:1]]) if closed else P
    return float(np.linalg.norm(np.diff(Q, axis=0), axis=1).sum())


@pytest.mark.unit
@settings(max_examples=12, **SETTINGS)
@given(P=star_tracks())
def test_property_valid_tracks_load_unchanged(tmp_path, P):
    tr = Track.from_csv(write(tmp_path / "star.csv", P))
    assert tr.closed and tr.findings == []
    # the smooth curve through the points is a little longer than the chords, and smoothing
    # at 3 x the spacing changes it little
    assert tr.length == pytest.approx(polyline_length(P), rel=0.02)
    # every input point lies close to the track (within a fraction of the spacing)
    spacing = polyline_length(P) / len(P)
    s = tr.sample_s(spacing / 8)
    xy = tr.evaluate(s).position[:, :2]
    d = np.min(np.linalg.norm(P[:, None, :2] - xy[None, ::1, :], axis=2), axis=1)
    assert d.max() < 0.25 * spacing


CORRUPTIONS = ["nan_cell", "empty_cell", "text_cell", "duplicate", "position_spike",
               "elevation_zero", "elevation_spike"]
EXPECTED_KIND = {"nan_cell": "missing_value", "empty_cell": "missing_value",
                 "text_cell": "missing_value", "duplicate": "duplicate_points",
                 "position_spike": "position_spike", "elevation_zero": "elevation_zero",
                 "elevation_spike": "elevation_spike"}


@pytest.mark.unit
@settings(max_examples=14, **SETTINGS)
@given(P=star_tracks(), kind=st.sampled_from(CORRUPTIONS), where=st.floats(0.0, 0.999),
       col=st.integers(0, 2))
def test_property_one_corrupted_row_is_named_and_repaired(tmp_path, P, kind, where, col):
    n = len(P)
    i = int(where * n)
    Q, cells, row = P.copy(), {}, i          # row: index of the bad row in the file
    if kind == "nan_cell":
        cells[(i, col)] = "nan"
    elif kind == "empty_cell":
        cells[(i, col)] = ""
    elif kind == "text_cell":
        cells[(i, col)] = "12m"
    elif kind == "duplicate":
        Q = np.insert(P, i + 1, P[i], axis=0)
        row = i + 1
    elif kind == "position_spike":
        Q[i, :2] *= 1.0 + (200.0 + 2 * np.linalg.norm(P[i, :2])) / np.linalg.norm(P[i, :2])
    elif kind == "elevation_zero":
        Q[i, 2] = 0.0
    elif kind == "elevation_spike":
        Q[i, 2] += 50.0
    f = write(tmp_path / "bad.csv", Q, cells)
    label = f"row {row + 1} (line {row + 2})"
    with pytest.raises(TrackDataError) as exc:
        Track.from_csv(f)
    kinds = [fd.kind for fd in exc.value.findings]
    assert EXPECTED_KIND[kind] in kinds, str(exc.value)
    assert label in str(exc.value) and str(f) in str(exc.value)
    with pytest.warns(TrackRepairWarning):
        tr = Track.from_csv(f, repair=True)
    assert EXPECTED_KIND[kind] in [fd.kind for fd in tr.findings]
    assert tr.closed
    assert tr.length == pytest.approx(polyline_length(P), rel=0.02)
    zr = tr.evaluate(tr.sample_s(5.0)).position[:, 2]
    assert abs(zr.max() - P[:, 2].max()) < 1.0 and abs(zr.min() - P[:, 2].min()) < 1.0  # glitch gone


@pytest.mark.unit
@settings(max_examples=60, **SETTINGS)
@given(text=st.text(alphabet=st.sampled_from(list("xyz,0123456789.-e\n nan#;")), max_size=400))
def test_property_arbitrary_csv_text_never_crashes(tmp_path, text):
    f = tmp_path / "fuzz.csv"
    f.write_text(text)
    try:
        load_track(f)
    except (ValueError, FileNotFoundError) as exc:
        assert "fuzz.csv" in str(exc)


@pytest.mark.unit
@settings(max_examples=30, **SETTINGS)
@given(values=st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                                 st.floats(-1e4, 1e4), st.floats(-1e3, 1e3)),
                       min_size=0, max_size=40))
def test_property_arbitrary_numbers_never_crash(tmp_path, values):
    f = tmp_path / "numbers.csv"
    f.write_text("x,y,z\n" + "\n".join(",".join(repr(v) for v in row) for row in values) + "\n")
    try:
        tr = load_track(f)
    except (ValueError, FileNotFoundError) as exc:
        assert "numbers.csv" in str(exc)
    else:     # accepted: then it is a usable track
        assert math.isfinite(tr.length) and tr.length >= 20.0


_json_values = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 9, 10 ** 9) |
                            st.floats(allow_nan=False) | st.text(max_size=5),
                            lambda inner: st.lists(inner, max_size=5) |
                            st.dictionaries(st.sampled_from(["pts", "lat", "lon", "elev",
                                                             "name", "start_finish"]), inner,
                                            max_size=4), max_leaves=20)


@pytest.mark.unit
@settings(max_examples=60, **SETTINGS)
@given(doc=_json_values)
def test_property_arbitrary_json_never_crashes(tmp_path, doc):
    f = tmp_path / "fuzz.json"
    f.write_text(json.dumps(doc))
    with pytest.raises((ValueError, FileNotFoundError)) as exc:
        load_track(f)
    assert "fuzz.json" in str(exc.value)


@pytest.mark.unit
@settings(max_examples=10, **SETTINGS)
@given(P=star_tracks(), bad=st.integers(0, 3), where=st.floats(0.0, 0.999))
def test_property_zaggy_json_with_a_bad_point(tmp_path, P, bad, where):
    """A zaggyai file (lat/lon in 1e-7 degree) of a random track, with one broken point."""
    lat0, lon0 = 50.3, 6.9
    lat = lat0 + P[:, 1] / 6371000.0 * 180 / np.pi
    lon = lon0 + P[:, 0] / (6371000.0 * np.cos(np.radians(lat0))) * 180 / np.pi
    pts = [{"lat": int(a * 1e7), "lon": int(o * 1e7), "elev": int(z * 1e3)}
           for a, o, z in zip(lat, lon, P[:, 2])]
    i = int(where * len(pts))
    assume(0 < i < len(pts) - 1)
    if bad == 0:
        pts[i] = {"lat": pts[i]["lat"]}                      # no lon
    elif bad == 1:
        pts[i]["lat"] = "fifty"
    elif bad == 2:
        pts[i]["lon"] = None                                  # missing: the point is dropped
    else:
        pts.insert(i, dict(pts[i]))                           # duplicate
    f = tmp_path / "trace.json"
    f.write_text(json.dumps({"name": "random", "pts": pts}))
    if bad < 2:
        with pytest.raises(ValueError, match="trace.json"):
            load_track(f)
        return
    bad_index = i if bad == 2 else i + 1
    with pytest.raises(TrackDataError, match=rf"(?s)trace.json.*point {bad_index}\b"):
        load_track(f)
    with pytest.warns(TrackRepairWarning):
        tr = load_track(f, repair=True)
    assert tr.length == pytest.approx(polyline_length(P), rel=0.03)
