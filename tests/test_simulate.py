"""The direct simulation model and the replay of a solved sector (items 1-2): the traced float
evaluation against the Python one, control laws, replay agreement, the parting report and the
path-following feedback."""
import math

import numpy as np
import pytest

import _solved_sector as sector
from pyomo_lap import load_vehicle
from pyomo_lap.vehicle import car as veh
from pyomo_lap.spatial.tree import TrackJoint
from pyomo_lap.ocp.point_functions import track_vector
from pyomo_lap.ocp.point_rows import track_joint
from pyomo_lap.verify.replay import replay
from pyomo_lap.verify.controls import CollocationControls, PiecewiseControls, controls_from_trajectory
from pyomo_lap.verify.simulate import car_functions, simulate


@pytest.mark.unit
def test_traced_equations_equal_the_python_evaluation():
    """CarFunctions (the full model's record, evaluated by CasADi) gives the same q-double-dot, residuals and
    algebraic solution as car_equations / solve_algebraic evaluated on Python floats."""
    p = load_vehicle("fsae")
    chain = veh.build_chain(p)
    cf = car_functions(p)
    rng = np.random.default_rng(3)
    for _ in range(4):
        th, ps, nu = rng.uniform(-0.1, 0.1, 3)
        R = (np.array([[math.cos(ps), -math.sin(ps), 0], [math.sin(ps), math.cos(ps), 0], [0, 0, 1]])
             @ np.array([[math.cos(th), 0, -math.sin(th)], [0, 1, 0], [math.sin(th), 0, math.cos(th)]])
             @ np.array([[1, 0, 0], [0, math.cos(nu), -math.sin(nu)], [0, math.sin(nu), math.cos(nu)]]))
        tj = TrackJoint(R=R.tolist(), J=[1.0, 0, 0, *rng.uniform(-0.01, 0.01, 3)],
                        dJ=[0, 0, 0, *rng.uniform(-1e-3, 1e-3, 3)])
        q = [0.0, rng.uniform(-2, 2), rng.uniform(-0.03, 0.03), rng.uniform(-0.03, -0.01),
             rng.uniform(-0.005, 0.005), rng.uniform(-0.005, 0.005)]
        qd = [rng.uniform(15, 40), *rng.uniform(-0.1, 0.1, 5)]
        u = [rng.uniform(0, 800), rng.uniform(-800, 0), rng.uniform(-0.03, 0.03)]
        z_py, e = veh.solve_algebraic(p, chain, tj, q, qd, u)
        z_ca, qdd = cf.solve(track_vector(tj), q, qd, u)
        assert z_ca == pytest.approx(z_py, rel=1e-8, abs=1e-6)
        assert qdd == pytest.approx([float(x) for x in e.qdd], rel=1e-8, abs=1e-9)
        ch = cf.channels(track_vector(tj), q, qd, u, z_ca)
        assert ch["alpha_1"] == pytest.approx(float(e.channels["alpha_1"]), rel=1e-9)



@pytest.mark.unit
def test_many_points_at_once_equal_point_by_point():
    """CarFunctions.evaluate_many (the cold start's evaluation of all points at once) gives the
    numbers of car_equations on Python floats at each point, and exactly those of
    CarFunctions.evaluate point by point."""
    p = load_vehicle("fsae")
    chain = veh.build_chain(p)
    cf = car_functions(p)
    rng = np.random.default_rng(11)
    n = 7
    trk, Q, QD, U, Z = [], [], [], [], []
    for _ in range(n):
        tj = TrackJoint(R=np.eye(3).tolist(), J=[1.0, 0, 0, *rng.uniform(-0.01, 0.01, 3)],
                        dJ=[0, 0, 0, *rng.uniform(-1e-3, 1e-3, 3)])
        trk.append(track_vector(tj))
        Q.append([0.0, rng.uniform(-2, 2), rng.uniform(-0.03, 0.03), rng.uniform(-0.03, -0.01),
                  rng.uniform(-0.005, 0.005), rng.uniform(-0.005, 0.005)])
        QD.append([rng.uniform(15, 40), *rng.uniform(-0.1, 0.1, 5)])
        U.append([rng.uniform(0, 800), rng.uniform(-800, 0), rng.uniform(-0.03, 0.03)])
        Z.append([*rng.uniform(300, 900, 4), *rng.uniform(-500, 500, 3)])
    qdd, res = cf.evaluate_many(np.array(trk), np.array(Q), np.array(QD), np.array(U), np.array(Z))
    assert qdd.shape == (n, 6) and res.shape == (n, 7)
    for i in range(n):
        one = cf.evaluate(trk[i], Q[i], QD[i], U[i], Z[i])
        assert np.array_equal(qdd[i], one[0]) and np.array_equal(res[i], one[1])
        e = veh.car_equations(p, chain, track_joint(trk[i]), Q[i], QD[i], U[i], Z[i])
        assert qdd[i] == pytest.approx([float(x) for x in e.qdd], rel=1e-9, abs=1e-9)
        assert res[i] == pytest.approx([float(x) for x in list(e.load_residuals) + list(e.inplane_residuals)],
                                       rel=1e-9, abs=1e-6)

@pytest.mark.unit
def test_control_laws_and_inputs_are_checked():
    """Control laws and the simulation's inputs are checked."""
    with pytest.raises(ValueError, match="basis"):
        PiecewiseControls("x", [0, 1], [[0, 0, 0]])
    with pytest.raises(ValueError, match="N\\+1"):
        PiecewiseControls("s", [0, 1, 2], [[0, 0, 0]])
    with pytest.raises(ValueError, match="increase"):
        PiecewiseControls("t", [0, 2, 1], [[0, 0, 0], [1, 0, 0]])
    pc = PiecewiseControls("s", [0, 10, 20], [[1, 0, 0], [2, 0, 0]])
    assert [pc.segment(b) for b in (-5, 0, 9.9, 10, 25)] == [0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="shape"):
        CollocationControls("s", [0, 1], [[0.5, 1.0]], [[[0, 0, 0]]])
    with pytest.raises(ValueError, match="distinct"):
        CollocationControls("s", [0, 1], [[0.5, 0.5]], [[[0, 0, 0], [1, 0, 0]]])
    # a linear law on [0, 10], a constant one on [10, 20]; held outside [0, 20]
    cc = CollocationControls("s", [0, 10, 20], [[5, 10], [15, 20]],
                             [[[0, 0, 0], [10, -1, 0.1]], [[3, 0, 0], [3, 0, 0]]])
    x = np.zeros(12)
    for b, seg, want in ((2.5, 0, [-5, 0.5, -0.05]), (10.0, 0, [10, -1, 0.1]), (10.0, 1, [3, 0, 0]),
                         (-3.0, 0, [-10, 1, -0.1]), (30.0, 1, [3, 0, 0])):
        x[0] = b
        assert cc(0.0, x, seg) == pytest.approx(want)
    assert [cc.segment(b) for b in (-5, 0, 9.9, 10, 25)] == [0, 0, 0, 1, 1]
    p = load_vehicle("fsae")
    s = np.linspace(0, 500, 101)
    from pyomo_lap import Track
    tr = Track(s, np.c_[s, 0 * s, 0 * s], closed=False)
    with pytest.raises(ValueError, match="x0 must be 12"):
        simulate(tr, p, lambda t, x: (0, 0, 0), [0.0] * 11, t_end=1.0)
    with pytest.raises(ValueError, match="t_end"):
        simulate(tr, p, lambda t, x: (0, 0, 0), [0.0] * 6 + [10.0] + [0.0] * 5, t_end=0.0)


@pytest.mark.integration
def test_controls_from_trajectory_follow_the_elements(solved_sector):
    """Controls at every collocation point (the default OCP): on each element the control law is
    the polynomial through the element's collocation values (degree ncp - 1 = 2 here, checked
    against numpy's polyfit), and it may jump at the element boundaries; element-constant
    controls give the element-constant law of before."""
    tr, p, m, rep, df = solved_sector("full")
    assert not m.problem.options.piecewise_constant_controls and m.problem.options.ncp == 3
    pc = controls_from_trajectory(df, "s", start=sector.START)
    assert isinstance(pc, CollocationControls)
    elems = sorted(m.s.get_finite_elements())
    assert pc.breaks == pytest.approx(sector.START + np.array(elems))
    cols = ["f_xa", "f_xb", "delta"]
    varied = 0
    for j, (a, b) in enumerate(zip(elems[:-1], elems[1:])):
        inside = df[(df["s_sector"] > a) & (df["s_sector"] <= b)]
        s_abs = sector.START + inside["s_sector"].to_numpy()
        u = inside[cols].to_numpy()
        assert len(inside) == 3
        for sk, uk in zip(s_abs, u):                         # through the collocation values
            assert pc(0.0, np.r_[sk, np.zeros(11)], j) == pytest.approx(uk, rel=1e-9, abs=1e-9)
        for frac in (0.0, 0.3, 0.8):                          # between them: the quadratic
            sq = sector.START + a + frac * (b - a)
            want = [np.polyval(np.polyfit(s_abs - sector.START - a, u[:, k], 2), sq - sector.START - a)
                    for k in range(3)]
            got = pc(0.0, np.r_[sq, np.zeros(11)], pc.segment(sq) if frac > 0 else j)
            assert got == pytest.approx(want, rel=1e-6, abs=1e-6 * np.abs(u).max())
        varied += np.ptp(u[:, 2]) > 1e-4
    assert varied >= 8                   # the steering does vary within the elements
    pt = controls_from_trajectory(df, "t")
    assert isinstance(pt, CollocationControls)
    assert pt.breaks[-1] == pytest.approx(df["t"].iloc[-1])
    k = len(df) // 2
    j = int(df["element"].iloc[k]) - 1
    assert pt(df["t"].iloc[k], None, j) == pytest.approx(df[cols].iloc[k].to_numpy(), rel=1e-9, abs=1e-9)
    # element-constant controls (as piecewise_constant_controls=True makes them): constant law
    dc = df.copy()
    first = dc.groupby("element")[cols].transform("first")
    dc[cols] = first.to_numpy()
    pcc = controls_from_trajectory(dc, "s", start=sector.START)
    assert isinstance(pcc, PiecewiseControls)
    for j, (a, b) in enumerate(zip(elems[:-1], elems[1:])):
        row = df[df["s_sector"] > a].iloc[0]
        assert pcc.values[j] == pytest.approx(row[cols].to_numpy(float))
    poly = controls_from_trajectory(dc, "s", start=sector.START, interpolation="polynomial")
    sq = sector.START + 0.5 * (elems[3] + elems[4])
    assert poly(0.0, np.r_[sq, np.zeros(11)], 3) == pytest.approx(pcc.values[3], rel=1e-12, abs=1e-12)
    # Legendre: the element end is not a collocation point and stays out of the polynomial
    leg = controls_from_trajectory(df, "s", start=sector.START, scheme="LAGRANGE-LEGENDRE")
    assert leg.nodes.shape == (sector.NFE, 2)
    with pytest.raises(ValueError, match="interpolation"):
        controls_from_trajectory(df, "s", interpolation="linear")


@pytest.mark.integration
def test_open_loop_replay_agrees_with_the_optimum(solved_sector):
    """The optimal controls, integrated in time (as functions of distance, and of time), keep
    every state within the default tolerances over the short sector."""
    tr, p, m, rep, df = solved_sector("full")
    for basis in ("s", "t"):
        r = replay(df, tr, p, basis=basis, explain=False)
        assert r.simulation.status == "end", r.simulation.message
        assert r.first_to_part is None, r.reason
        assert r.agree_until_s == pytest.approx(sector.START + sector.LENGTH)
        assert r.max_deviation["q2"] < 0.05 and abs(r.comparison["t_dev"].iloc[-1]) < 0.01
        # the sector time of the simulation is the optimum's
        assert r.comparison["t_sim"].iloc[-1] == pytest.approx(df["t"].iloc[-1], abs=0.01)


@pytest.mark.integration
def test_replay_reports_when_and_why_states_part(solved_sector):
    """With a tight lateral tolerance the report names the first state to part, where, and the
    reason; the table agrees with it."""
    tr, p, m, rep, df = solved_sector("full")
    r = replay(df, tr, p, tolerances={"q2": 2e-3}, explain=True)
    assert r.first_to_part == "q2"
    s_part = r.first_exceedance["q2"]
    c = r.comparison
    before = c[c["s"] < s_part]
    assert (before["q2_dev"].abs() <= 2e-3).all()
    assert abs(c.loc[c["s"] == s_part, "q2_dev"].iloc[0]) > 2e-3
    assert r.agree_until_s < s_part <= sector.START + sector.LENGTH
    assert "q2" in r.reason and "eigenvalue" in r.reason


@pytest.mark.integration
def test_path_following_feedback_recovers_a_disturbance(solved_sector):
    """Started with a heading error of 0.02 rad, the open-loop car drifts off the optimal line
    (nothing steers it back: the lateral position integrates the heading); with the steering
    feedback it comes back to within a few centimetres by the sector end."""
    tr, p, m, rep, df = solved_sector("full")
    ol = replay(df, tr, p, initial_offset={"q3": 0.02}, explain=False)
    fb = replay(df, tr, p, initial_offset={"q3": 0.02}, feedback=True, explain=False)
    assert abs(ol.comparison["q2_dev"].iloc[-1]) > 0.3
    assert abs(fb.comparison["q2_dev"].iloc[-1]) < 0.05
    assert fb.steer_correction_max > 0.005                  # it did steer
    assert fb.simulation.status == "end"
    with pytest.raises(ValueError, match="unknown state"):
        replay(df, tr, p, initial_offset={"q9": 1.0})


@pytest.mark.integration
def test_cli_validate_a_results_folder(solved_sector, tmp_path):
    """`pyomo-lap validate` replays and measures the defects of a results folder."""
    import json
    from click.testing import CliRunner
    from pyomo_lap.cli import main
    from pyomo_lap.results.table import write_results
    tr, p, m, rep, df = solved_sector("full")
    summary = {"lap_time_s": float(df["t"].iloc[-1]), "track": "nordschleife", "vehicle": "fsae",
               "start_m": sector.START, "ncp": 3, "scheme": "LAGRANGE-RADAU", "model": "full",
               "pyomo_lap_version": "test"}
    out = write_results(tmp_path / "res", df, summary)
    r = CliRunner().invoke(main, ["validate", "--out", str(out), "--no-feedback", "--open-loop"])
    assert r.exit_code == 0, r.output
    v = json.loads((out / "validation.json").read_text())
    assert v["replay_open_loop"]["first_to_part"] is None
    assert v["defects"]["n_elements"] == sector.NFE and (out / "defects.csv").exists()
    summary["model"] = "single-track"
    (out / "summary.json").write_text(json.dumps(summary))
    r = CliRunner().invoke(main, ["validate", "--out", str(out)])
    assert r.exit_code == 2 and "single-track" in r.output
