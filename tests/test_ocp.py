"""The optimal control problem: structure (component) and a short sector solved by IPOPT
(integration), checked against invariants that do not come from the solver itself."""
import json
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from click.testing import CliRunner

import _independent as ind
from _independent import time_by_quadrature
from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.results.table import read_trajectory, trajectory_dataframe


@pytest.fixture(scope="module")
def setup():
    return load_track("nordschleife"), load_vehicle("fsae")


@pytest.mark.component
def test_model_structure(setup):
    tr, p = setup
    nfe, ncp = 8, 3
    m = build_model(tr, p, start=1000.0, length=80.0, nfe=nfe, ncp=ncp)
    n = nfe * ncp + 1
    assert len(m.s) == n
    assert len(m.loads_eq) == 4 * n and len(m.inplane_eq) == 3 * n
    assert len(m.ode_q) == 5 * (n - 1) and len(m.ode_qdot) == 6 * (n - 1)
    # components are reachable by the field's names
    for name in ("q2", "q3", "q4", "q5", "q6", "q1_dot", "f_xa", "f_xb", "delta",
                 "f_11z", "f_12z", "f_21z", "f_22z", "f_3x", "f_3y", "m_3z", "t"):
        assert m.component(name) is not None
    # track limits: the contact patches within the edges (the rows track_limit, left wheels
    # <= width_left, right wheels >= -width_right), the reference point q2 within the edges
    s = m.s.at(3)
    assert m.q2[s].ub == pytest.approx(4.0) and m.q2[s].lb == pytest.approx(-4.0)
    for w, side in (("11", 1), ("21", 1), ("12", -1), ("22", -1)):
        c = m.track_limit[w, s]
        assert pyo.value(c.upper if side > 0 else -c.lower) == pytest.approx(4.0)
    # at q2 = 0 and no yaw the outer edge of a front patch is (t1 + tw1)/2 = width/2 aside
    m.q2[s].set_value(0.0)
    m.q3[s].set_value(0.0)
    assert pyo.value(m.track_limit["11", s].body) == pytest.approx(p.width / 2)
    m.q3[s].set_value(0.1)      # yawed left: the front patch moves left by a1 sin(q3)
    assert pyo.value(m.track_limit["11", s].body) == pytest.approx(
        p.a1 * math.sin(0.1) + 0.5 * (p.t1 + p.tw1) * math.cos(0.1))
    # the initial guess satisfies the algebraic loop closely
    info = initialize_model(m)
    assert info["max_algebraic_residual"] < 1.0


@pytest.mark.unit
def test_bad_sector_is_refused_before_solving(setup):
    tr, p = setup
    with pytest.raises(ValueError, match="periodic"):
        build_model(tr, p, start=0.0, length=1000.0, nfe=10, periodic=True)
    with pytest.raises(ValueError, match="length"):
        build_model(tr, p, start=0.0, length=-5.0, nfe=10)


@pytest.mark.integration
def test_short_sector_solves_and_is_physical(setup):
    tr, p = setup
    m = build_model(tr, p, start=500.0, length=400.0, nfe=40, ncp=3)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    df = trajectory_dataframe(m)
    T = pyo.value(m.lap_time)
    # time is the integral of ds / q1_dot (a cubic spline through the solved speeds, not the
    # collocation's quadrature)
    assert T == pytest.approx(time_by_quadrature(df["s_sector"], df["q1_dot"]), rel=1e-4)
    # path constraints hold
    assert (df["power"] <= p.P_max * (1 + 1e-6)).all()
    half = 4.0 - p.width / 2
    assert df["q2"].abs().max() <= half + 1e-6
    assert df[["f_11z", "f_12z", "f_21z", "f_22z"]].min().min() >= p.fz_min - 1e-6
    assert df["delta"].abs().max() <= p.delta_max + 1e-9
    # the four loads add up to f3z (static equivalence) and the algebraic loop is closed
    fz_sum = df[["f_11z", "f_12z", "f_21z", "f_22z"]].sum(axis=1)
    assert np.allclose(fz_sum, df["f_3z"], rtol=1e-6, atol=1e-3)
    assert df["load_residual_max"].max() < 1e-3
    # energy: the work of the traction force cannot be smaller than the kinetic energy gained
    # plus drag losses plus potential energy gained (brakes, tyres and dampers only dissipate)
    v = df["speed"].to_numpy()
    z = df["z_vip"].to_numpy()
    s = df["s_sector"].to_numpy()
    dsdt = df["q1_dot"].to_numpy()
    work = np.trapezoid(df["power"].to_numpy() / dsdt, s)
    drag = np.trapezoid(-df["f_drag"].to_numpy() * df["v_3x"].to_numpy() / dsdt, s)
    dE = 0.5 * p.m * (v[-1] ** 2 - v[0] ** 2) + p.m * p.gravity * (z[-1] - z[0])
    assert work >= dE + drag - 0.02 * abs(work)
    # every tyre within its friction ellipse (peak force from the vehicle file's numbers)
    assert ind.friction_ellipse_use(p, df).max() <= 1.0 + 1e-6
    # the energy bounds (power, drag, grades, track width; no grip limit): no faster than
    # the car can go anywhere, no shorter time than that speed allows
    b = ind.speed_and_time_bounds(p, tr, 500.0, 400.0)
    assert df["q1_dot"].iloc[0] <= b.v_max                   # the bound needs the entry below it
    assert df["v_3x"].max() <= b.v_max and T >= b.t_min, (df["v_3x"].max(), T, b)


@pytest.mark.integration
def test_cli_solve_writes_results(tmp_path):
    from pyomo_lap.cli import main
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--nfe", "30", "--ncp", "2",
                                  "--start", "2000", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    for key in ("lap_time_s", "termination_condition", "n_variables", "n_constraints",
                "iterations", "build_time_s", "solve_time_s", "nfe", "ncp", "length_m",
                "track", "vehicle"):
        assert key in summary
    assert summary["termination_condition"] == "optimal"
    assert summary["nfe"] == 30 and summary["ncp"] == 2 and summary["length_m"] == 300.0
    import hashlib
    from pathlib import Path
    for kind in ("track", "vehicle"):   # the inputs can be traced
        f = Path(summary[f"{kind}_file"])
        assert hashlib.sha256(f.read_bytes()).hexdigest() == summary[f"{kind}_file_sha256"]
    df = read_trajectory(out / "trajectory.csv")
    assert len(df) == 30 * 2 + 1                      # the mesh asked for: nfe * ncp + 1 points
    # the summary's sector time against a quadrature of the written speeds
    assert summary["lap_time_s"] == pytest.approx(
        time_by_quadrature(df["s_sector"], df["q1_dot"]), rel=1e-3)
    import openpyxl
    wb = openpyxl.load_workbook(out / "results.xlsx", read_only=True)
    assert {"summary", "channels", "vehicle"} <= set(wb.sheetnames)
    header = [c.value for c in next(wb["channels"].iter_rows(max_row=1))]
    assert "q2 [m]" in header and "f_11z [N]" in header


@pytest.mark.unit
def test_cli_rejects_bad_arguments(tmp_path):
    from pyomo_lap.cli import main
    runner = CliRunner()
    r = runner.invoke(main, ["solve", "--nfe", "0", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--nfe" in r.output
    r = runner.invoke(main, ["solve", "--track", "no_such_track", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "nordschleife" in r.output
    r = runner.invoke(main, ["solve", "--vehicle", "no_such_car", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "fsae" in r.output
    r = runner.invoke(main, ["solve", "--start", "1e9", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "start" in r.output
    r = runner.invoke(main, ["solve", "--length", "inf", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--length" in r.output
    r = runner.invoke(main, ["solve", "--initial-speed", "-3", "--length", "100", "--nfe", "5",
                             "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "initial-speed" in r.output
    assert not (tmp_path / "x").exists()
    # a folder holding other files is refused before anything is built, and left untouched
    foreign = tmp_path / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("keep me")
    r = runner.invoke(main, ["solve", "--length", "100", "--nfe", "5", "--out", str(foreign)])
    assert r.exit_code == 2 and "not pyomo_lap results" in r.output
    assert (foreign / "chapter1.tex").read_text() == "keep me"
    assert "building" not in r.output


@pytest.mark.integration
def test_periodic_lap_on_a_flat_circle():
    """A closed lap on a flat circle (counter-clockwise, radius 60 m).

    With controls constant per element the optimum found is steady cornering on the inner
    (left) edge at constant speed. With a control value at every collocation point (the
    default) the optimizer finds a faster periodic weave instead: the steady state is limited
    by the lightly loaded inner rear tyre, which must carry half the drive force at its
    friction ellipse, and the weave alternates driving and coasting. It is a genuine lap: the
    time-domain simulation (an independent integrator) driven with the optimal controls drives
    the lap on the optimum's path in its time. The free parametrization holds every
    element-constant one (with the same objective), so its objective cannot be worse."""
    from pyomo_lap import Track
    from pyomo_lap.verify.replay import replay
    R = 60.0
    u = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    pts = np.c_[R * np.cos(u), R * np.sin(u), np.zeros_like(u)]
    tr = Track.from_points(pts, closed=True, smoothing=0, name="circle60")
    p = load_vehicle("fsae")
    inner = 4.0 - p.width / 2
    objective = {}
    for constant in (True, False):
        m = build_model(tr, p, nfe=30, ncp=3, periodic=True, piecewise_constant_controls=constant,
                        control_form="point" if constant else "state")
        initialize_model(m)
        rep = solve_model(m)
        assert rep.ok, rep.termination_condition
        objective[constant] = pyo.value(m.objective)
        df = trajectory_dataframe(m)
        first, last = df.iloc[0], df.iloc[-1]
        for k in ("q2", "q3", "q4", "q5", "q6", "q1_dot", "q2_dot", "q3_dot"):
            assert last[k] == pytest.approx(first[k], abs=1e-6)
        # a left turn: positive lateral acceleration and roll to the right (q6 > 0)
        assert (df["a_y"] > 0).all() and (df["q6"] > 0).all()
        assert df["q2"].max() <= inner + 1e-6
        if constant:
            assert df["q2"].min() > inner - 0.05           # hugs the inner edge all the way
            v = df["speed"].to_numpy()
            assert v.std() / v.mean() < 0.01               # steady state
        else:
            # the simulated car drives the weave in the same time; a whole lap open loop drifts
            # (the lateral position integrates heading errors), so with the path-following
            # steering, whose correction stays under a tenth of the kinematic steer angle
            # l / (R - inner) of this circle
            r = replay(m, tr, p, feedback=True, explain=False)
            assert r.simulation.status == "end", r.simulation.message
            assert r.comparison["t_sim"].iloc[-1] == pytest.approx(df["t"].iloc[-1], abs=0.01)
            assert r.max_deviation["q2"] < 0.05 and r.max_deviation["q1_dot"] < 0.05
            assert r.steer_correction_max < 0.1 * p.l / (R - inner)
    assert objective[False] <= objective[True] + 1e-5


@pytest.mark.integration
def test_failed_solve_keeps_earlier_results(tmp_path):
    """An iteration limit is reported, the partial point goes to OUT.failed marked as
    partial, and an earlier OUT is left untouched."""
    from pyomo_lap import solve_sector
    out = tmp_path / "results"
    out.mkdir()
    earlier = '{"lap_time_s": 1.0, "pyomo_lap_version": "0.1.0"}'
    (out / "summary.json").write_text(earlier)
    from _folders import write_manifest
    write_manifest(out, ["summary.json"])               # as an export lists it: earlier results
    with pytest.raises(RuntimeError, match="maxIterations"):
        solve_sector(start=3000.0, length=100.0, nfe=10, ncp=2, solver_options={"max_iter": 2},
                     out_dir=out, echo=lambda *a: None)
    assert (out / "summary.json").read_text() == earlier
    failed = json.loads((tmp_path / "results.failed" / "summary.json").read_text())
    assert failed["partial"] is True and failed["termination_condition"] == "maxIterations"


@pytest.mark.component
def test_mesh_continuation_interpolates_in_s(setup):
    from pyomo_lap.ocp.initialize import initialize_from_solution
    tr, p = setup
    coarse = build_model(tr, p, start=1500.0, length=100.0, nfe=5, ncp=3)
    fine = build_model(tr, p, start=1500.0, length=100.0, nfe=20, ncp=2)
    for s in coarse.s:                       # a known linear profile
        coarse.q2[s].set_value(0.01 * s)
        coarse.q1_dot[s].set_value(20.0 + 0.05 * s)
    initialize_from_solution(fine, coarse)
    for s in fine.s:
        assert fine.q2[s].value == pytest.approx(0.01 * s)
        if not fine.q1_dot[s].fixed:
            assert fine.q1_dot[s].value == pytest.approx(20.0 + 0.05 * s)
    other = build_model(tr, p, start=1000.0, length=100.0, nfe=5)
    with pytest.raises(ValueError, match="sector"):
        initialize_from_solution(other, coarse)


@pytest.mark.component
def test_lifted_intermediates_are_initialized_consistently(setup):
    """OCP option 'lift': the chosen intermediates become variables with defining equations;
    the cold-start guess satisfies those definitions."""
    tr, p = setup
    m = build_model(tr, p, start=1500.0, length=60.0, nfe=4, ncp=3, lift=("qdd", "W3J"))
    assert m.car.qdd1.ctype is pyo.Var and m.car.W3J_2.ctype is pyo.Var
    initialize_model(m)
    for c in (m.car.qdd1_def, m.car.W3J_2_def):
        for s, con in list(c.items())[:2]:   # pyo.value re-walks nested named expressions: slow
            body = pyo.value(con.body)
            assert body == pytest.approx(0.0, abs=1e-6 * max(1.0, abs(pyo.value(con.upper))))


@pytest.mark.unit
@pytest.mark.parametrize("model", ["full", "single-track"])
def test_articulated_body_intermediates_are_named(model):
    """The ABA's intermediates of the recorded rows (articulated inertias IA, bias wrenches pA,
    U = IA S, 1/d, u) are tagged, so each becomes a named Expression of the Pyomo model: written
    out instead, the inertias of each level nest into the next, and walks that do not share
    subexpressions (IDAES's evaluation-error check in `pyomo-lap diagnose`, pyo.value) grow
    with the depth (a 7-point diagnose ran over 15 minutes instead of 3 s)."""
    from pyomo_lap.ocp.build import OCP_CONFIG
    from pyomo_lap.ocp.full_model import record_point_rows
    from pyomo_lap.ocp.single_track import record_single_track_rows
    p = load_vehicle("fsae")
    rec = (record_point_rows(p, OCP_CONFIG()) if model == "full" else
           record_single_track_rows(p, OCP_CONFIG({"model": "single-track"})))
    tape = rec.tape
    live = {tag for i, tag in tape.tags.items() if tape.live[i]}
    for prefix in ("IA", "pA", "U", "Dinv", "u"):
        assert any(t.startswith(prefix) and t[len(prefix):len(prefix) + 1].isdigit() for t in live), prefix
    # the public names as before: the twist of O3 and the structural wrench (eq 24)
    assert {"V3_0", "V3_1", "W3J_2", "qdd1"} <= live
