"""The registry of track formats (pyomo_lap.track.loading.TRACK_FORMATS): a format registered
at run time is read by load_track and by ``pyomo-lap check --track``, and listed by the message
for an unknown type and by the table of formats; every built-in format's files reach its loader
through the registry; docs/tracks.md holds the registry's table (docs/architecture.md, "Add a
track format")."""
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pyomo_lap.track import loading
from pyomo_lap.track.csv_files import refuse_lat_lon_order
from pyomo_lap.track.geometry import Track
from pyomo_lap.track.loading import (TRACK_FORMATS, TrackFormat, load_track,
                                     register_track_format, track_format_for,
                                     track_formats_table)

DOCS = Path(__file__).resolve().parents[1] / "docs"
R = 150.0          # [m] radius of the toy track
WIDTH = 12.0       # [m] its total width


@pytest.fixture
def registry():
    """TRACK_FORMATS as it was before the test, restored after it."""
    saved = list(TRACK_FORMATS)
    yield TRACK_FORMATS
    TRACK_FORMATS[:] = saved


def _load_xyzw(path, *, repair=False, max_grade=0.35, track_width=None, flat=False,
               lat_lon_order="auto"):
    """The toy format: one row ``x y z width`` [m] per point, whitespace separated."""
    refuse_lat_lon_order(lat_lon_order, f"track file {path}")
    rows = np.loadtxt(path, ndmin=2)
    P = rows[:, :3].copy()
    if flat:
        P[:, 2] = 0.0
    half = rows[:, 3] / 2 if track_width is None else track_width / 2
    return Track.from_points(P, closed=True, width_left=half, width_right=half,
                             name=Path(path).stem, repair=repair, max_grade=max_grade)


XYZW = TrackFormat("xyzw", (".xyzw",), _load_xyzw, "x y z width rows [m] (a test's toy format)")


def _ring(tmp_path, n=360) -> Path:
    """A circle of radius R, counter-clockwise, at z = 3 m, WIDTH wide, as a .xyzw file."""
    a = 2 * np.pi * np.arange(n) / n
    rows = np.column_stack([R * np.cos(a), R * np.sin(a), np.full(n, 3.0), np.full(n, WIDTH)])
    path = tmp_path / "ring.xyzw"
    np.savetxt(path, rows, fmt="%.9f")
    return path


@pytest.mark.unit
def test_a_registered_format_is_read_by_load_track(registry, tmp_path):
    """A circle of radius R read through the new entry: curvature Omega_z = 1/R (closed form),
    length 2 pi R, the widths of the file; the same file without the entry is refused."""
    path = _ring(tmp_path)
    with pytest.raises(ValueError, match=r"unknown type '\.xyzw'"):
        load_track(path)
    register_track_format(XYZW)
    assert track_format_for(path) is XYZW
    tr = load_track(path)
    s = np.linspace(0.0, tr.length, 200, endpoint=False)
    tp = tr.evaluate(s)
    np.testing.assert_allclose(tp.omega[:, 2], 1.0 / R, rtol=2e-3)
    np.testing.assert_allclose(tp.omega[:, :2], 0.0, atol=1e-6)
    assert tr.length == pytest.approx(2 * math.pi * R, rel=1e-3)
    np.testing.assert_allclose(tp.width_left, WIDTH / 2, rtol=1e-6)
    np.testing.assert_allclose(tp.position[:, 2], 3.0, atol=1e-6)
    assert load_track(path, track_width=8.0).evaluate(0.0).width_right[0] == pytest.approx(4.0)
    with pytest.raises(ValueError, match="lat_lon_order"):
        load_track(path, lat_lon_order="lon,lat")


@pytest.mark.unit
def test_a_registered_format_is_listed_in_the_message_and_the_table(registry, tmp_path):
    """The message for a file of an unknown type and the table of formats name the new format
    once it is registered (and not before)."""
    bad = tmp_path / "route.gpx"
    bad.write_text("<gpx/>")
    with pytest.raises(ValueError) as before:
        load_track(bad)
    assert "xyzw" not in str(before.value) and "xyzw" not in track_formats_table()
    register_track_format(XYZW)
    with pytest.raises(ValueError) as after:
        load_track(bad)
    msg = str(after.value)
    assert "route.gpx" in msg and "unknown type '.gpx'" in msg and "\n" not in msg
    assert ".xyzw: x y z width rows" in msg
    for f in TRACK_FORMATS:                  # every registered format, the built-in ones too
        assert f"{f.suffixes[0]}: {f.description}" in msg
    assert "| `xyzw` | `.xyzw` | x y z width rows" in track_formats_table()
    with pytest.raises(ValueError, match="registered already"):
        register_track_format(XYZW)
    with pytest.raises(ValueError, match="reads every .csv file already"):
        register_track_format(TrackFormat("other-csv", (".csv",), _load_xyzw, "another CSV"))


@pytest.mark.component
def test_the_check_command_reads_a_registered_format(registry, tmp_path):
    """``pyomo-lap check --track ring.xyzw`` (in process) loads the file through the registry:
    exit 0 and the track's length, 2 pi R."""
    from pyomo_lap.cli import main
    path = _ring(tmp_path)
    register_track_format(XYZW)
    r = CliRunner().invoke(main, ["check", "--track", str(path), "--vehicle", "fsae"])
    assert r.exit_code == 0, r.output
    assert f"track ring: {2 * math.pi * R:.1f} m, closed: ok" in r.output


_HEADS = {"csv": "x,y,z\n0,0,0\n", "csv-tum": "# x_m,y_m,w_tr_right_m,w_tr_left_m\n0,0,1,1\n",
          "csv-gps": "time,lat,lon\n0,48.1,11.5\n", "zaggy-json": "{}", "kml": "<kml/>",
          "fastest-lap-xml": "<circuit/>", "arcs-toml": "[track]\n"}
"""A file's first lines for each built-in format (enough for the choice; not loadable)."""


@pytest.mark.unit
def test_every_file_reaches_its_loader_through_the_registry(registry, tmp_path):
    """Each built-in format's loader replaced in the registry by a recorder: load_track of a
    file of that format calls the recorder with the options given, so no file is read past the
    registry (a suffix if-chain left somewhere would call the real loader and fail here)."""
    assert [f.name for f in TRACK_FORMATS] == list(_HEADS)
    called = []
    for f in list(TRACK_FORMATS):
        register_track_format(TrackFormat(
            f.name, f.suffixes, lambda p, _n=f.name, **o: called.append((_n, Path(p).name, o)),
            f.description, f.sniff), replace=True)
    for name, text in _HEADS.items():
        suffix = next(f.suffixes[0] for f in TRACK_FORMATS if f.name == name)
        path = tmp_path / f"{name}{suffix}"
        path.write_text(text)
        load_track(path, flat=True)
        assert called[-1] == (name, path.name, dict(repair=False, max_grade=loading.MAX_GRADE,
                                                     track_width=None, flat=True,
                                                     lat_lon_order="auto"))
    assert len(called) == len(_HEADS)


@pytest.mark.unit
def test_the_docs_table_of_formats_is_the_registry():
    """docs/tracks.md holds :func:`track_formats_table` between its markers, so a format added
    to the registry without its row (or a row without a format) fails here."""
    text = (DOCS / "tracks.md").read_text(encoding="utf-8")
    start = text.index("| format | file | what it holds | read by |")
    end = text.index("<!-- end of track formats -->")
    assert text[start:end] == track_formats_table()
