"""`pyomo-lap validate` on results of dymos's racecar (pyomo_lap.post.racecar_checks): the
equations the checks evaluate are the OCP's (the residual at the collocation points is the
solver's tolerance), a lap whose elements end where the curvature jumps (just before each
junction of straight and arc) passes every check but the friction along the replay (a warning),
the default job (uniform 10 m elements, 22.377 s) is flagged where its elements straddle the
junctions, and a coarse uniform mesh (40 m elements) fails on its defects, its replay and its
speed consistency; the command's exit codes follow the verdict."""
import json
import math

import numpy as np
import pytest

pytestmark = pytest.mark.integration

JUNCTION_TOL_M = 12.0
"""A check's worst point is "at a junction" within about one element of 10 m."""


def _quiet(*_args, **_kwargs):
    pass


def _solve(out, **options):
    from pyomo_lap.api import solve_sector
    solve_sector(track="dymos_oval", vehicle="dymos_racecar", periodic=True, start=0.0,
                 length=None, out_dir=out, echo=_quiet, **options)
    return out


def _junctions():
    from pyomo_lap.track.geometry import load_track
    tr = load_track("dymos_oval")
    return tr, np.cumsum([sg.length for sg in tr.segments])[:-1]


def _validate(folder):
    from pyomo_lap.post.validate import validate_results
    res = validate_results(folder, plots=False, echo=_quiet)
    return res, {c["name"]: c for c in res["checks"]}


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    """The racecar job of docs/racecar.md (uniform 10 m elements, ncp = 2)."""
    return _solve(tmp_path_factory.mktemp("racecar") / "default")


@pytest.fixture(scope="module")
def junction(tmp_path_factory):
    """Elements of at most 10 m on every straight and arc, each ending 0.1 mm before a
    junction: the track gives a junction the curvature of the segment that starts there, so an
    element ending exactly on it would see the next segment's curvature at its last
    collocation point."""
    tr, ends = _junctions()
    bounds, s0 = [0.0], 0.0
    for sg in tr.segments:
        k = max(1, math.ceil(sg.length / 10.0 - 1e-9))
        bounds.extend(s0 + sg.length * np.arange(1, k + 1) / k - 1e-4)
        s0 += sg.length
    bounds[-1] = tr.length
    return _solve(tmp_path_factory.mktemp("racecar") / "junction",
                  ocp_options={"element_boundaries": [float(b) for b in bounds]})


@pytest.fixture(scope="module")
def coarse(tmp_path_factory):
    """The same lap on uniform 40 m elements: under-resolved dynamics."""
    return _solve(tmp_path_factory.mktemp("racecar") / "coarse",
                  ocp_options={"element_length": 40.0})


def test_the_checks_evaluate_the_ocps_equations(junction):
    """At the collocation points the racecar's ODE, evaluated by the checks on NumPy arrays,
    holds to the solver's tolerance: the checks and the OCP have the same equations."""
    from pyomo_lap.post.racecar_checks import racecar_defects
    from pyomo_lap.post.results import read_trajectory
    from pyomo_lap.post.validate import _inputs
    summary = json.loads((junction / "summary.json").read_text())
    tr, p = _inputs(summary)
    d = racecar_defects(read_trajectory(junction), tr, p, shooting=False)
    assert max(d.node_residual.values()) < 1e-6
    assert len(d.elements) == summary["nfe"]


def test_a_lap_meshed_at_its_junctions_passes(junction):
    res, c = _validate(junction)
    assert res["model"] == "racecar"
    assert res["verdict"] in ("pass", "warn"), [x for x in res["checks"] if x["verdict"] != "pass"]
    for name in ("defect_max", "defect_p95", "replay_shortfall", "replay_lateral", "replay_time",
                 "replay_steering", "power_limit", "zigzags", "speed_consistency"):
        assert c[name]["verdict"] == "pass", c[name]
    assert c["friction_limit"]["verdict"] != "fail", c["friction_limit"]
    assert c["replay_steering"]["value"] < 6.0


def test_the_default_job_is_flagged_at_the_junctions_it_straddles(default):
    """22.377 s; defects, channels and power pass, but the driver following the plan needs
    more steering than the plan's own at a junction inside an element."""
    summary = json.loads((default / "summary.json").read_text())
    assert summary["lap_time_s"] == pytest.approx(22.3770647, abs=1e-6)
    res, c = _validate(default)
    for name in ("defect_max", "defect_p95", "replay_shortfall", "power_limit", "zigzags",
                 "speed_consistency"):
        assert c[name]["verdict"] == "pass", c[name]
    assert c["replay_steering"]["verdict"] == "fail"
    _, ends = _junctions()
    assert np.min(np.abs(ends - c["replay_steering"]["at_m"])) < JUNCTION_TOL_M
    assert res["verdict"] == "fail"


def test_a_coarse_mesh_fails(coarse):
    res, c = _validate(coarse)
    assert res["verdict"] == "fail"
    for name in ("defect_max", "defect_p95", "replay_lateral", "replay_time",
                 "speed_consistency"):
        assert c[name]["verdict"] == "fail", c[name]


def test_cli_exit_codes_follow_the_verdict(junction, coarse):
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    r = CliRunner().invoke(main, ["validate", str(coarse), "--no-plots"])
    assert r.exit_code == 1, r.output
    assert "verdict: FAIL" in r.output
    r = CliRunner().invoke(main, ["validate", str(junction), "--no-plots"])
    assert r.exit_code == 0, r.output
