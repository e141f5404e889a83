"""dymos's racecar on its oval (issue 27): the arc track, the racecar's parameters and vehicle
file, its model, and the lap against dymos's published figure.

Independent references: the closed forms of straights and circular arcs (length, heading,
curvature, positions on a circle), statics (the four tyre loads carry the weight and the
downforce), and the lap asserted by dymos's own test, ``dymos/examples/racecar/test/
test_racecar.py`` in https://github.com/OpenMDAO/dymos (``assert_near_equal(..., 22.2657,
tolerance=1.0E-2)``).
"""
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap.track.arcs import ArcTrack, ArcTrackFileError, Segment, load_arc_track
from pyomo_lap.vehicle.racecar import RacecarFileError, read_racecar_file

ROOT = Path(__file__).resolve().parents[1]
OVAL = ROOT / "data" / "tracks" / "dymos_oval.toml"
RACECAR = ROOT / "models" / "dymos_racecar.toml"


# ----------------------------------------------------------------------------- the arc track
@pytest.mark.unit
def test_oval_length_heading_and_end_from_closed_forms():
    tr = load_arc_track("dymos_oval")
    # 150 + 100 + 300 + 100 + 155 m of straights, four quarter circles of 50, 90, 50, 90 m
    assert tr.length == pytest.approx(805.0 + math.pi / 2 * (50 + 90 + 50 + 90), rel=1e-14)
    assert tr.closed and tr.width_left == 4.0 and tr.width_right == 4.0
    # heading after each corner: +pi/2 each (all left); the end lies 5 m past the start
    ends = np.cumsum([150, 25 * math.pi, 100, 45 * math.pi, 300, 25 * math.pi, 100, 45 * math.pi])
    tp = tr.evaluate(ends - 1e-9)
    np.testing.assert_allclose(np.unwrap(tp.heading)[[1, 3, 5, 7]],
                               [math.pi / 2, math.pi, 1.5 * math.pi, 2 * math.pi], atol=1e-8)
    # corners by hand: (150, 0) -> R 50 -> (200, 50) -> 100 m -> (200, 150) -> R 90 -> (110, 240)
    np.testing.assert_allclose(tp.position[[0, 1, 2, 3], :2],
                               [[150, 0], [200, 50], [200, 150], [110, 240]], atol=1e-6)
    assert tr.provenance["closure"]["gap_m"] == pytest.approx([5.0, 0.0], abs=1e-9)


@pytest.mark.unit
def test_arc_curvature_and_points_on_the_circle():
    tr = ArcTrack([Segment.straight(20.0), Segment.arc(30.0, math.pi / 3, "right"),
                   Segment.arc(10.0, math.pi / 2, "left"), Segment.straight(5.0)],
                  closed=False, name="t")
    s = np.linspace(0.0, tr.length, 401)
    tp = tr.evaluate(s)
    k = tp.omega[:, 2]
    L1, L2 = 20.0, 30.0 * math.pi / 3
    on1 = (s > 20.0 + 1e-9) & (s < 20 + L1 - 1e-9 + L2 - L1)   # inside the right-hand arc
    assert np.allclose(k[s < 20.0 - 1e-9], 0.0)
    assert np.allclose(k[(s > 20.0) & (s < 20.0 + L2)], -1.0 / 30.0)
    assert np.allclose(k[(s > 20.0 + L2) & (s < 20.0 + L2 + 5 * math.pi)], 1.0 / 10.0)
    # the right-hand arc's points are 30 m from its centre (30 m to the right of (20, 0))
    d = np.hypot(tp.position[on1, 0] - 20.0, tp.position[on1, 1] + 30.0)
    np.testing.assert_allclose(d, 30.0, atol=1e-9)
    # frame: t = (cos psi, sin psi), n to its left, flat
    np.testing.assert_allclose(tp.tangent[:, 0], np.cos(tp.heading), atol=1e-12)
    np.testing.assert_allclose(tp.normal[:, 1], np.cos(tp.heading), atol=1e-12)
    assert np.all(tp.binormal[:, 2] == 1.0) and np.all(tp.domega_ds == 0.0)


@pytest.mark.unit
def test_spline_lookup_curvature_turns_once_and_overshoots():
    tr = load_arc_track("dymos_oval", curvature="spline-lookup")
    s = (np.arange(10000) + 0.5) * tr.length / 10000
    k = tr.evaluate(s).omega[:, 2]
    # the spline turns the heading through about one full turn (the entries are L/N apart in
    # s, but the spline's own step differs by its chord-length parameter: 1 %)
    assert np.sum(k) * tr.length / 10000 == pytest.approx(2 * math.pi, rel=0.01)
    # peaks above 1/R at the corners (issue 27: 10-13 % above)
    assert 1.05 < k.max() * 50 < 1.2


@pytest.mark.unit
def test_arc_file_refusals_name_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('width_left = -1.0\n[[segment]]\nstraight = 10.0\n[[segment]]\nradius = 5.0\n'
                   'angle_deg = 90.0\nturn = "up"\n[[segment]]\nradius = 0.0\nangle = 1.0\nturn = "left"\n')
    with pytest.raises(ArcTrackFileError) as exc:
        load_arc_track(bad)
    msg = str(exc.value)
    assert "width_left = -1.0" in msg and "segment[1].turn = 'up'" in msg
    assert "segment[2].radius = 0.0" in msg


@pytest.mark.unit
def test_load_track_dispatches_arc_tracks():
    from pyomo_lap.track.loading import load_track
    assert isinstance(load_track("dymos_oval"), ArcTrack)
    assert load_track(str(OVAL)).length == pytest.approx(1244.8229715, abs=1e-6)
    assert load_track("dymos_oval", track_width=6.0).width_left == 3.0
    sp = load_track("dymos_oval_spline")
    assert sp.curvature_treatment == "spline-lookup" and len(sp.segments) == 9


# ----------------------------------------------------------------------- the car's parameters
@pytest.mark.unit
def test_racecar_file_values_and_units():
    p = read_racecar_file(RACECAR)
    assert (p.M, p.ClA, p.CdA, p.P_max, p.beta, p.CoP, p.h, p.chi) == (
        800.0, 4.0, 2.0, 960e3, 0.62, 1.6, 0.3, 0.5)
    assert "[kg]" in type(p).model_fields["M"].description
    assert p.value("powertrain.P_max") == 960e3 and p.model == "racecar"


@pytest.mark.unit
@pytest.mark.parametrize("edit, named", [
    (("M = 800.0", "M = -800.0"), "[mass] M = -800.0"),
    (("P_max = 960000.0", "P_max = 960.0"), "[powertrain] P_max = 960.0"),
    (("beta = 0.62", "beta = 62.0"), "[powertrain] beta = 62.0"),
    (("CoP = 1.6", "CoP = 4.0"), "CoP = 4.0"),
    (("k_lambda = 44.0", "k_lamda = 44.0"), "[tyre] k_lamda"),
    (("tau_x = 0.2", "tau_x = \"0.2\""), "[load_transfer] tau_x = '0.2'"),
])
def test_racecar_schema_refusals_name_the_field(tmp_path, edit, named):
    text = RACECAR.read_text(encoding="utf-8")
    assert edit[0] in text
    f = tmp_path / "car.toml"
    f.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    with pytest.raises(RacecarFileError) as exc:
        read_racecar_file(f)
    assert named in str(exc.value)


@pytest.mark.unit
def test_vehicle_file_names_its_model(tmp_path):
    from pyomo_lap.api import job_model
    from pyomo_lap.vehicle.car import load_vehicle, vehicle_file_model
    assert vehicle_file_model("dymos_racecar") == "racecar"
    assert vehicle_file_model("fsae") is None
    assert type(load_vehicle("dymos_racecar")).__name__ == "RacecarParameters"
    copy = tmp_path / "mine.toml"
    shutil.copy(RACECAR, copy)
    assert job_model(None, str(copy)) == "racecar"
    assert job_model("racecar", str(copy)) == "racecar"
    assert job_model(None, "fsae") == "full" and job_model("single-track", "fsae") == "single-track"
    with pytest.raises(ValueError, match="is for the model 'racecar'"):
        job_model("full", str(copy))


@pytest.mark.unit
def test_a_car_of_the_main_schema_names_its_model_too(tmp_path):
    """``model = "single-track"`` at the top of an FSAE-type file picks that model; a name
    that is no model is refused naming the file, the value and the choices."""
    from pyomo_lap.api import job_model
    from pyomo_lap.vehicle.car import load_vehicle, models_dir
    from pyomo_lap.vehicle.files import VehicleFileError
    text = (models_dir() / "fsae.toml").read_text(encoding="utf-8")
    mine = tmp_path / "mine.toml"
    mine.write_text('model = "single-track"\n' + text, encoding="utf-8")
    assert load_vehicle(str(mine)).m == load_vehicle("fsae").m
    assert job_model(None, str(mine)) == "single-track"
    with pytest.raises(ValueError, match="is for the model 'single-track'"):
        job_model("full", str(mine))
    mine.write_text('model = "point_mass"\n' + text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"model = 'point_mass': expected one of full, single-track"):
        job_model(None, str(mine))
    with pytest.raises(VehicleFileError, match="model = 'point_mass'"):
        load_vehicle(str(mine))


@pytest.mark.unit
def test_cli_refuses_a_model_the_vehicle_file_is_not_for(tmp_path):
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    r = CliRunner().invoke(main, ["solve", "--track", "dymos_oval", "--vehicle", "dymos_racecar",
                                  "--full-lap", "--model", "single-track", "--out",
                                  str(tmp_path / "out"), "--quiet"])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "'racecar'" in lines[0] and "single-track" in lines[0]
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------ the model
@pytest.mark.component
def test_tyre_loads_carry_weight_and_downforce():
    import pyomo.environ as pyo

    from pyomo_lap import build_model, load_vehicle
    car = load_vehicle("dymos_racecar")
    m = build_model(load_arc_track("dymos_oval"), car, model="racecar", periodic=True, nfe=4, ncp=2)
    s = sorted(m.s)[2]
    m.V[s].set_value(50.0)
    m.ax[s].set_value(-12.0)
    m.ay[s].set_value(20.0)
    total = sum(pyo.value(m.N[w, s]) for w in ("fl", "fr", "rl", "rr"))
    assert total == pytest.approx(800 * 9.8 + 0.5 * 1.2 * 4.0 * 50.0 ** 2, rel=1e-12)
    # longitudinal transfer under braking (ax < 0): dymos's normalForceODE moves (M/4) ax h / l
    # per wheel, M ax h / (2 l) per axle: half the rigid-body statics' M ax h / l (kept as
    # dymos writes it: the reproduction solves dymos's problem; docs/racecar.md)
    front = pyo.value(m.N["fl", s] + m.N["fr", s])
    static_front = 800 * 9.8 * 1.6 / 3.4 + 0.5 * 1.2 * 4.0 * 2500 * (1 - 1.6 / 3.4)
    assert front - static_front == pytest.approx(0.5 * 800 * 12.0 * 0.3 / 3.4, rel=1e-12)
    # lateral transfer: with ay > 0 (a left turn) the tyres dymos labels "l" gain (its "l"
    # tyres are those whose forward force yaws the car to the left, so they sit on the right:
    # the outside of a left turn), per wheel (M/4) ay h / tw split by chi: again half of the
    # rigid-body M ay h / (2 tw)
    l_gain = pyo.value(m.N["fl", s] + m.N["rl", s] - m.N["fr", s] - m.N["rr", s]) / 2
    assert l_gain == pytest.approx(0.5 * 800 * 20.0 * 0.3 / (2 * 0.73), rel=1e-12)
    # braking: the front tyres take the bias beta of the command
    m.thrust[s].set_value(-1.0)
    S = {w: pyo.value(m.S[w, s]) for w in ("fl", "fr", "rl", "rr")}
    assert (S["fl"] + S["fr"]) / sum(S.values()) == pytest.approx(0.62, abs=1e-6)


@pytest.mark.integration
def test_oval_lap_against_dymos_published_figure():
    """dymos/examples/racecar/test/test_racecar.py (OpenMDAO dymos) asserts
    ``assert_near_equal(time[-1], 22.2657, tolerance=1.0E-2)``: the same problem, its curvature
    treatment (spline looked up by position), 50 elements, its IPOPT options."""
    import pyomo.environ as pyo

    from pyomo_lap import build_model, initialize_model, load_vehicle, solve_model
    from pyomo_lap.ocp.racecar import DYMOS_IPOPT_OPTIONS
    car = load_vehicle("dymos_racecar")
    m = build_model(load_arc_track("dymos_oval_spline"), car, model="racecar", periodic=True,
                    nfe=50, ncp=3)
    initialize_model(m)
    opts = {k: v for k, v in DYMOS_IPOPT_OPTIONS.items() if k != "nlp_scaling_method"}
    rep = solve_model(m, options=opts)
    assert rep.ok
    lap = pyo.value(m.lap_time)
    assert lap == pytest.approx(22.2657, rel=1e-2)
    # the car uses its power (the limit binds on the straights) and stays on the track
    power = max(pyo.value(m.power[s]) for s in m.s)
    assert power == pytest.approx(960e3, rel=5e-3)
    assert max(abs(pyo.value(m.n[s])) for s in m.s) <= 4.0 + 1e-6
    # the lap is closed: speed and offset at the end are those at the start
    first, last = m.s.first(), m.s.last()
    assert pyo.value(m.V[last]) == pytest.approx(pyo.value(m.V[first]), abs=1e-6)


@pytest.mark.integration
def test_cli_full_lap_both_solver_paths(tmp_path):
    """``pyomo-lap solve --track dymos_oval --vehicle dymos_racecar --full-lap`` picks the model
    from the vehicle file and gives the same lap through lap_ipopt and the ASL path."""
    import json

    from click.testing import CliRunner

    from pyomo_lap.cli import main
    from pyomo_lap.solvers.solve import ensure_solver
    laps = {}
    for solver in ("lap_ipopt", "ipopt"):
        if solver == "ipopt":
            try:
                ensure_solver("ipopt")
            except Exception:
                continue
        out = tmp_path / solver
        # the default mesh (elements ending at the junctions): 50 uniform elements straddle
        # them and the result fails its self-check (exit 4), as validate fails it
        r = CliRunner().invoke(main, ["solve", "--track", "dymos_oval", "--vehicle", "dymos_racecar",
                                      "--full-lap", "--solver", solver, "--out",
                                      str(out), "--quiet"])
        assert r.exit_code == 0, r.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["model"] == "racecar" and summary["optimal"]
        assert summary["self_check"]["verdict"] == "pass"
        assert {"defect_max", "speed_consistency", "friction_limit"} <= set(summary["self_check"]["checks"])
        laps[solver] = summary["lap_time_s"]
    assert laps["lap_ipopt"] == pytest.approx(22.2657, rel=2e-2)   # exact arcs: issue 27's 2 %
    if "ipopt" in laps:
        assert laps["ipopt"] == pytest.approx(laps["lap_ipopt"], rel=1e-5)


# ------------------------------------------------- the racecar through compiled point functions
def _short_oval_model(nfe=12):
    from pyomo_lap import build_model, initialize_model, load_vehicle
    m = build_model(load_arc_track("dymos_oval"), load_vehicle("dymos_racecar"), model="racecar",
                    periodic=True, nfe=nfe, ncp=3)
    initialize_model(m)
    return m


@pytest.mark.component
def test_recorded_rows_reproduce_every_row_of_the_model():
    """The racecar's rows recorded on a tape (evaluated by the fast path's compiled point
    functions) against the model's own constraint expressions at every point, at a
    state away from the initial guess (every state, both controls and the derivatives
    non-zero, the power and the friction rows active): LapNLP raises RecordedRowsMismatch on a
    relative difference above 1e-9 (``verify_points="all"``)."""
    import pyomo.environ as pyo

    from pyomo_lap.solvers.lap.nlp import LapNLP
    m = _short_oval_model(nfe=6)
    rng = np.random.default_rng(36)
    for name, scale in (("n", 2.0), ("V", 10.0), ("alpha", 0.1), ("lam", 0.05), ("omega", 0.3),
                        ("ax", 5.0), ("ay", 8.0), ("delta", 0.05), ("thrust", 0.8)):
        for s in m.s:
            v = m.component(name)[s]
            v.set_value(pyo.value(v) + scale * rng.uniform(-1, 1), skip_validation=True)
    for v in m.component_data_objects(pyo.Var):
        if v.parent_component().local_name.startswith("d") and v.value is not None:
            v.set_value(rng.uniform(-0.1, 0.1), skip_validation=True)
    rep = LapNLP(m, verify_points="all").report
    n_points = len(m.s)
    # 8 ode rows (t and the 7 states) at every point but the first, 4 friction + power at all
    assert rep.n_recorded_rows == 8 * (n_points - 1) + 5 * n_points
    assert rep.fallback == "" and rep.verified_points == n_points
    assert "ode" not in rep.generic_families and "friction" not in rep.generic_families
    # changing one of the model's named quantities sends that point's rows back to the
    # translation of their expressions (the recorded rows no longer describe them)
    s = sorted(m.s)[3]
    m.N["fl", s] = 1.1 * m.N["fl", s].expr
    rep2 = LapNLP(m, verify_points="all").report
    assert "changed at 1 point" in rep2.fallback
    assert rep2.n_recorded_rows == rep.n_recorded_rows - 13


@pytest.mark.integration
def test_recorded_rows_give_the_lap_of_the_generic_translation():
    """The same short-mesh oval lap solved twice with lap_ipopt: through the recorded rows
    (compiled point functions) and with them removed (every row translated from its Pyomo
    expression, the path before issue 36): the same lap to 1e-8 relative."""
    import pyomo.environ as pyo

    from pyomo_lap import solve_model
    from pyomo_lap.ocp.vehicle_model import update_problem
    laps, reports = {}, {}
    for path in ("recorded", "generic"):
        m = _short_oval_model()
        if path == "generic":
            update_problem(m, point_rows=None)
        rep = solve_model(m, solver="lap_ipopt", options={"tol": 1e-9})
        assert rep.ok, rep.termination_condition
        laps[path], reports[path] = pyo.value(m.lap_time), rep
    tr, tg = (reports[k].details["translation"] for k in ("recorded", "generic"))
    assert tr.n_recorded_rows > 0 and tr.fallback == ""
    assert tg.n_recorded_rows == 0 and "no recorded rows" in tg.fallback
    assert tg.n_generic_rows > tr.n_generic_rows
    assert laps["recorded"] == pytest.approx(laps["generic"], rel=1e-8)
    assert 20.0 < laps["recorded"] < 26.0        # dymos's 22.2657 s, coarse mesh


@pytest.mark.component
def test_the_quasi_steady_estimate_is_near_dymos_lap():
    """The racecar model's quasi-steady estimate (``estimated_time_s``, printed as the
    "quasi-steady estimate") is an estimate of this car's lap: within 10 % of dymos's
    22.2657 s on the oval (its test_racecar.py), not the 62 s of the guess's 20 m/s."""
    from pyomo_lap import build_model, initialize_model, load_vehicle
    m = build_model(load_arc_track("dymos_oval"), load_vehicle("dymos_racecar"), model="racecar",
                    periodic=True, nfe=60, ncp=3)
    est = initialize_model(m)["estimated_time_s"]
    assert est == pytest.approx(22.2657, rel=0.10)
