"""`pyomo-lap validate` on results of dymos's racecar, through the checks every vehicle model
shares (the racecar's own equations reach them as its VehicleModel.dynamics,
pyomo_lap.ocp.racecar.RacecarDynamics): the equations the checks evaluate are the OCP's (the residual at the collocation points is the
solver's tolerance); the default job, whose elements end at the junctions of straights and
arcs (pyomo_lap.ocp.racecar.junction_boundaries), passes every check; the same lap on uniform
10 m elements, which straddle the junctions, is flagged there; a coarse uniform mesh (40 m
elements) fails on its defects, its replay and its speed consistency; the command's exit codes
follow the verdict."""
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
    from pyomo_lap.track.loading import load_track
    tr = load_track("dymos_oval")
    return tr, np.cumsum([sg.length for sg in tr.segments])[:-1]


def _validate(folder):
    from pyomo_lap.api.validate import validate_results
    res = validate_results(folder, plots=False, echo=_quiet)
    return res, {c["name"]: c for c in res["checks"]}


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    """The racecar job of docs/racecar.md: elements of at most 10 m ending at the junctions."""
    return _solve(tmp_path_factory.mktemp("racecar") / "default")


@pytest.fixture(scope="module")
def straddle(tmp_path_factory):
    """The same lap on 125 uniform elements (9.96 m), which straddle the junctions: inside such
    an element the curvature steps and the polynomial bends where the track does not."""
    return _solve(tmp_path_factory.mktemp("racecar") / "straddle", nfe=125)


@pytest.fixture(scope="module")
def coarse(tmp_path_factory):
    """The same lap on uniform 40 m elements: under-resolved dynamics, as solved (the job's
    mesh refinement off)."""
    return _solve(tmp_path_factory.mktemp("racecar") / "coarse",
                  ocp_options={"element_length": 40.0}, refine_mesh=False)


def test_the_job_refines_a_coarse_mesh(coarse, default, tmp_path):
    """The same coarse job with the mesh refinement on (the default): the racecar's result
    is refined where its defects are large (more elements, solved optimal), its self-check no
    longer fails, and its lap comes within 0.5 % of the default mesh's, from the coarse
    mesh's 0.7 % slower one."""
    refined = _solve(tmp_path / "refined", ocp_options={"element_length": 40.0})
    summary = json.loads((refined / "summary.json").read_text())
    before = json.loads((coarse / "summary.json").read_text())
    lap = json.loads((default / "summary.json").read_text())["lap_time_s"]
    rounds = summary["mesh_refinement"]
    assert rounds is not None and rounds["optimal"]
    assert rounds["nfe_before"] == before["nfe"] < summary["nfe"] == rounds["nfe_after"]
    assert summary["self_check"]["verdict"] != "fail"
    assert summary["self_check"]["checks"]["defect_max"]["verdict"] == "pass"
    assert summary["lap_time_s"] == pytest.approx(lap, rel=5e-3)
    assert abs(before["lap_time_s"] / lap - 1) > 5e-3


def test_the_checks_evaluate_the_ocps_equations(default):
    """At the collocation points the racecar's ODE, evaluated by the checks on NumPy arrays,
    holds to the solver's tolerance: the checks and the OCP have the same equations."""
    from pyomo_lap.verify.defects import collocation_defects
    from pyomo_lap.results.table import read_trajectory
    from pyomo_lap.verify.verdict import _inputs
    summary = json.loads((default / "summary.json").read_text())
    tr, p = _inputs(summary)
    d = collocation_defects(read_trajectory(default), tr, p, model="racecar",
                            start=summary["start_m"], interpolation="state")
    assert d.states == ("n", "V", "alpha", "lambda", "omega", "ax", "ay", "t")
    assert max(d.node_residual.values()) < 1e-6
    assert len(d.elements) == summary["nfe"]


def test_the_default_job_ends_its_elements_at_the_junctions_and_passes(default):
    """Every junction is an element boundary, no element is longer than 10 m, the lap is
    within 0.5 % of the 22.377 s of the former uniform mesh (issue 33's target), and every
    check passes."""
    summary = json.loads((default / "summary.json").read_text())
    tr, ends = _junctions()
    b = np.asarray(summary["mesh"]["element_boundaries_m"], float)
    assert np.min(np.abs(b[:, None] - ends[None, :]), axis=0).max() < 1e-6
    assert np.diff(b).max() <= 10.0 + 1e-6
    assert summary["nfe"] == sum(max(1, math.ceil(sg.length / 10.0 - 1e-9)) for sg in tr.segments)
    assert summary["lap_time_s"] == pytest.approx(22.377, rel=5e-3)
    res, c = _validate(default)
    assert res["model"] == "racecar"
    assert res["verdict"] == "pass", [x for x in res["checks"] if x["verdict"] != "pass"]
    assert c["replay_steering"]["value"] < 6.0


def test_the_junction_boundaries_from_the_segments():
    """Closed form: each segment cut into ceil(length / h) equal elements; a sector starting
    inside a segment starts its first element there."""
    from pyomo_lap.ocp.racecar import junction_boundaries
    tr, ends = _junctions()
    b = junction_boundaries(tr, 0.0, tr.length, 10.0)
    assert b[0] == 0.0 and b[-1] == tr.length
    assert len(b) - 1 == sum(max(1, math.ceil(sg.length / 10.0 - 1e-9)) for sg in tr.segments)
    assert np.min(np.abs(b[:, None] - ends[None, :]), axis=0).max() < 1e-9
    b = junction_boundaries(tr, 100.0, 100.0, 10.0)     # 50 m of straight, then the arc
    assert b[0] == 0.0 and b[-1] == 100.0 and np.any(np.abs(b - (ends[0] - 100.0)) < 1e-9)
    from pyomo_lap import load_track
    assert junction_boundaries(load_track("monza"), 0.0, 500.0, 10.0) is None


def test_uniform_elements_straddling_the_junctions_are_flagged_there(straddle):
    """Defects, channels and power pass, but the driver following the plan needs more
    steering than the plan's own at a junction inside an element."""
    res, c = _validate(straddle)
    for name in ("defect_max", "defect_p95", "replay_shortfall", "power_limit", "zigzags",
                 "speed_consistency"):
        assert c[name]["verdict"] == "pass", c[name]
    assert c["replay_steering"]["verdict"] == "fail"
    _, ends = _junctions()
    assert np.min(np.abs(ends - c["replay_steering"]["at_m"])) < JUNCTION_TOL_M
    assert res["verdict"] == "fail"


def test_a_coarse_mesh_fails(coarse, default):
    # the solve's own self-check (the racecar's defects, speed consistency, friction and power
    # of the plan) fails it already, and passes the default job, having run its checks
    summary = json.loads((coarse / "summary.json").read_text())
    assert summary["self_check"]["verdict"] == "fail"
    assert summary["self_check"]["checks"]["defect_max"]["verdict"] == "fail"
    ok = json.loads((default / "summary.json").read_text())["self_check"]
    assert ok["verdict"] == "pass" and {"defect_max", "defect_p95", "speed_consistency",
                                         "friction_limit", "power_limit"} <= set(ok["checks"])
    res, c = _validate(coarse)
    assert res["verdict"] == "fail"
    for name in ("defect_max", "defect_p95", "replay_steering", "friction_limit",
                 "speed_consistency"):
        assert c[name]["verdict"] == "fail", c[name]
    for name in ("replay_lateral", "replay_time"):
        assert c[name]["verdict"] != "pass", c[name]


def test_cli_exit_codes_follow_the_verdict(default, coarse):
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    r = CliRunner().invoke(main, ["validate", str(coarse), "--no-plots"])
    assert r.exit_code == 1, r.output
    assert "verdict: FAIL" in r.output
    r = CliRunner().invoke(main, ["validate", str(default), "--no-plots"])
    assert r.exit_code == 0, r.output
