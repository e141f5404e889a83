"""--flat (issue 33): a file's noisy elevations ignored, in Python (load_track, solve_sector)
and on the command line (solve, sweep, check); --track's help and the error for an unknown
file type list every format the loader reads."""
from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from pyomo_lap.cli import main
from pyomo_lap.track.checks import TrackDataError
from pyomo_lap.track.loading import load_track

R = 150.0


def _glitchy_ring(path, n=300):
    """A ring of radius 150 m at 320 m whose elevation jumps by 40 m for 20 points (a DEM
    step: refused as an elevation step, which has no repair)."""
    th = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    z = np.full(n, 320.0)
    z[100:120] += 40.0
    path.write_text("x,y,z\n" + "".join(f"{R * math.cos(a):.6f},{R * math.sin(a):.6f},{h:.3f}\n"
                                          for a, h in zip(th, z)))
    return path


@pytest.mark.unit
def test_flat_ignores_the_elevations(tmp_path):
    """The glitchy ring is refused as it is and with --repair-track; flat=True loads it as the
    flat ring (z = 0, length 2 pi R, curvature 1/R), with the step `flattened` and the assumed
    elevation; the 2D length is the circle's, not the 3D one's."""
    f = _glitchy_ring(tmp_path / "ring.csv")
    with pytest.raises(TrackDataError, match="elevation"):
        load_track(f)
    with pytest.raises(TrackDataError):
        load_track(f, repair=True)
    tr = load_track(f, flat=True)
    tp = tr.evaluate(np.linspace(0.0, tr.length, 90, endpoint=False))
    assert np.all(tp.position[:, 2] == 0.0) and np.allclose(tp.omega[:, 2], 1 / R, rtol=1e-4)
    assert tr.length == pytest.approx(2 * math.pi * R, rel=1e-5)
    assert [st["step"] for st in tr.processing_steps][0] == "flattened"
    (a,) = [a for a in tr.assumptions if a["quantity"] == "elevation"]
    assert a["value"] == 0.0 and "flat=True" in a["reason"]


@pytest.mark.unit
def test_flat_on_a_bundled_track_and_a_processed_file(tmp_path):
    """A bundled track with elevations (Zandvoort, 3.8-7.6 m) loads flat: z = 0 and its length
    the plan view's (shorter than the 3D spine's, by no more than the grades allow), the
    widths as they were."""
    tr3 = load_track("zandvoort")
    tr = load_track("zandvoort", flat=True)
    tp = tr.evaluate(tr.sample_s(5.0))
    assert np.all(tp.position[:, 2] == 0.0) and np.allclose(tp.width_left, 6.0)
    assert tr.length < tr3.length and tr.length > tr3.length * (1 - 0.021 ** 2)
    assert "flattened" in [st["step"] for st in tr.processing_steps]


@pytest.mark.unit
def test_flat_from_the_command_line(tmp_path):
    """`pyomo-lap check --track FILE --flat`: the refused file is ok, the step and the assumed
    elevation are printed; `solve`, `sweep` and `check` all take --flat."""
    f = _glitchy_ring(tmp_path / "ring.csv")
    r = CliRunner().invoke(main, ["check", "--track", str(f)])
    assert r.exit_code == 2 and "elevation" in r.output
    r = CliRunner().invoke(main, ["check", "--track", str(f), "--flat"])
    assert r.exit_code == 0, r.output
    assert "elevation ignored" in r.output and "elevation = 0 m assumed" in r.output
    for cmd in ("solve", "sweep", "check"):
        assert "--flat" in CliRunner().invoke(main, [cmd, "--help"]).output, cmd


@pytest.mark.unit
def test_solve_sector_passes_flat_to_the_loader(tmp_path, monkeypatch):
    """solve_sector(flat=True) loads the track with flat=True (the loader is stopped there:
    no solve), and flat with a Track object is refused."""
    import pyomo_lap.api.job as api
    seen = {}

    class Stop(Exception):
        pass

    def fake(track, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(api, "load_track", fake)
    with pytest.raises(Stop):
        api.solve_sector(track=str(_glitchy_ring(tmp_path / "ring.csv")), flat=True,
                         out_dir=None, length=50.0, nfe=5)
    assert seen.get("flat") is True
    tr = load_track("zandvoort")
    with pytest.raises(ValueError, match="flat = True with a Track object"):
        api.solve_sector(track=tr, flat=True, out_dir=None, length=50.0, nfe=5)
    assert api._model_key("a.csv", False, None, {}, True) != api._model_key("a.csv", False, None, {}, False)


@pytest.mark.unit
def test_every_format_is_listed():
    """`pyomo-lap solve --help` names every file type the loader reads (and the arc tracks),
    and so does the message for a file of another type."""
    out = " ".join(CliRunner().invoke(main, ["solve", "--help"]).output.split())
    for what in (".csv", "TUM", "GPS", ".json", "zaggyai", ".kml", ".xml", "fastest-lap",
                 ".toml", "dymos_oval"):
        assert what in out, what
    with pytest.raises(ValueError, match=r"expected .*\.xml: a fastest-lap.*\.toml: straights"):
        load_track(__file__)          # a .py file


@pytest.mark.unit
def test_suzukas_raw_file_loads_flat_with_its_bridge():
    """The raw Suzuka of zaggyai (a figure of eight whose ground heights differ by 0.70 m where the
    roads cross) is refused as it is, with what to do; with flat=True it loads, its crossing
    (s = 2536 m under s = 4894 m, the later branch on top) taken as a bridge, and no
    'elevations missing' step for the ignored ones."""
    from pathlib import Path
    raw = (Path(__file__).resolve().parents[1] / "data" / "tracks" / "raw" / "zaggyai"
           / "12bd4b0b4d4a04030c1b3f5e65c94f0a--suzuka-circuit.json")
    with pytest.raises(TrackDataError, match=r"height difference 0\.70 m.*--flat"):
        load_track(raw)
    tr = load_track(raw, flat=True)
    kinds = [st["step"] for st in tr.processing_steps]
    assert "flattened" in kinds and "crossing_bridge" in kinds and "elevation_missing" not in kinds
    (br,) = tr.provenance["bridges"]
    assert br["s_lower"] == pytest.approx(2536, abs=5) and br["s_upper"] == pytest.approx(4894, abs=5)
