"""The single-track model (item 5): its equations against the seed's planar bicycle with a
Fiala tyre written here, a crest's load against the closed form, the OCP on a 3D sector next
to the full model, the warm start of the full model, the CLI."""
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import fsolve

import _solved_sector as sector
from pyomo_lap import Track, build_model, load_track, load_vehicle, solve_model
from pyomo_lap.verify.simulate import car_functions
from pyomo_lap.verify.simulate import TrackLookup

G = 9.81


def fiala_seed(alpha, fz_axle, p):
    """Seed 004's Fiala polynomial for a force positive with alpha, written here, with the
    axle's cornering stiffness and peak of two tyres of eq (32) at half the axle load."""
    fw = fz_axle / 2
    C = 2 * p.pK1 * p.Fz0 * math.sin(2 * math.atan(fw / (p.pK2 * p.Fz0)))
    D = 2 * p.mu_y0 * (1 + p.pD2 * (fw - p.Fz0) / p.Fz0) * fw
    ta = math.tan(alpha)
    if abs(ta) >= 3 * D / C:
        return math.copysign(D, ta)
    return C * ta - C ** 2 * ta * abs(ta) / (3 * D) + C ** 3 * ta ** 3 / (27 * D ** 2)


@pytest.mark.unit
def test_equations_are_the_seed_bicycle_on_a_flat_road():
    """On a flat straight the model's accelerations, turned into body-frame Ux', Uy', r', obey
    Ux' = Fx/m + r Uy, Uy' = Fy/m - r Ux, Izz r' = a Fyf - b Fyr (seed 004, with the sign of
    r Uy in Ux' corrected), where the axle loads follow from the rigid body's pitch balance with
    the centre of mass at h_G and the downforce split Cz1 : Cz2."""
    p = load_vehicle("fsae")
    cf = car_functions(p, model="single-track")
    s = np.linspace(0, 300, 61)
    look = TrackLookup(Track(s, np.c_[s, 0 * s, 0 * s], closed=False))
    m = p.m
    h_G = (p.m_s * p.h + p.m_u * p.wheel_radius) / m
    Izz = p.Izz + p.unsprung_inertia[2]
    rng = np.random.default_rng(11)
    for _ in range(5):
        q = [50.0, rng.uniform(-1, 1), rng.uniform(-0.1, 0.1)]
        qd = [rng.uniform(15, 35), rng.uniform(-1, 1), rng.uniform(-0.3, 0.3)]
        u = [rng.uniform(0, 1500), rng.uniform(-1500, 0), rng.uniform(-0.05, 0.05)]
        z, qdd = cf.solve(look(q[0])[0], q, qd, u)
        c3, s3 = math.cos(q[2]), math.sin(q[2])
        Ux, Uy, r = qd[0] * c3 + qd[1] * s3, -qd[0] * s3 + qd[1] * c3, qd[2]
        dUx = qdd[0] * c3 + qdd[1] * s3 + r * (-qd[0] * s3 + qd[1] * c3)
        dUy = -qdd[0] * s3 + qdd[1] * c3 - r * (qd[0] * c3 + qd[1] * s3)
        d = u[2]
        af = d - math.atan((Uy + p.a1 * r) / Ux)
        ar = math.atan((p.a2 * r - Uy) / Ux)
        fxf, fxr = p.brake_ratio * u[1], (1 - p.brake_ratio) * u[1] + u[0]
        qa = 0.5 * p.rho * p.S * Ux * Ux

        def eqs(y):
            F1, F2, ax, ay, rd = y
            fyf, fyr = fiala_seed(af, F1, p), fiala_seed(ar, F2, p)
            Fx = fxf * math.cos(d) - fyf * math.sin(d) + fxr - p.Cx * qa
            Fy = fxf * math.sin(d) + fyf * math.cos(d) + fyr
            Mz = p.a1 * (fyf * math.cos(d) + fxf * math.sin(d)) - p.a2 * fyr
            return [F1 - (m * G * p.a2 + p.Cz1 * qa * p.l - m * h_G * (ax - r * Uy)) / p.l,
                    F2 - (m * G * p.a1 + p.Cz2 * qa * p.l + m * h_G * (ax - r * Uy)) / p.l,
                    ax - (Fx / m + r * Uy), ay - (Fy / m - r * Ux), rd - Mz / Izz]
        F1, F2, ax, ay, rd = fsolve(eqs, [1000, 1200, 0, 0, 0], xtol=1e-13)
        assert z[:2] == pytest.approx([F1, F2], rel=1e-8)
        assert [dUx, dUy, qdd[2]] == pytest.approx([ax, ay, rd], rel=1e-7, abs=1e-9)


@pytest.mark.unit
def test_crest_load_of_the_rigid_car():
    """3D: over the top of a crest of radius Rv the two axle loads add up to
    m (g - v^2 (Rv + h_G)/Rv^2) + downforce (the centre of mass on its circle)."""
    p = load_vehicle("fsae")
    cf = car_functions(p, model="single-track")
    Rv, v = 120.0, 25.0
    th = np.linspace(-0.3, 0.3, 401)
    tr = Track(Rv * (th - th[0]), np.c_[Rv * np.sin(th), 0 * th, Rv * (np.cos(th) - 1)], closed=False)
    s_top = 0.5 * tr.length
    z, qdd = cf.solve(TrackLookup(tr)(s_top)[0], [s_top, 0, 0], [v, 0, 0],
                      [0.5 * p.rho * p.S * p.Cx * v * v, 0, 0])
    h_G = (p.m_s * p.h + p.m_u * p.wheel_radius) / p.m
    expected = p.m * (G - v * v * (Rv + h_G) / Rv ** 2) + 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2) * v * v
    assert z[0] + z[1] == pytest.approx(expected, rel=1e-9)


@pytest.mark.integration
def test_single_track_ocp_next_to_the_full_model(solved_sector):
    """The single-track OCP on the same 3D sector: it solves, respects its constraints, and is
    a little faster than the full model, whose axles lose grip to lateral load transfer
    (pD2 < 0: a tyre's friction falls with its load) and which has to roll and pitch."""
    tr, p, ms, reps, dfs = solved_sector("single-track")
    _, _, mf, repf, dff = solved_sector("full")
    import pyomo.environ as pyo
    t_st, t_full = pyo.value(ms.lap_time), pyo.value(mf.lap_time)
    assert 0.85 * t_full < t_st < t_full
    assert (dfs["power"] <= p.P_max * (1 + 1e-6)).all()
    assert (dfs[["upsilon_1", "upsilon_2"]].abs() <= 1 + 1e-6).all().all()
    ratio = p.mu_y0 / p.mu_x0
    use = [np.hypot(ratio * dfs[f"f_{k}x"], dfs[f"f_{k}y"]) / dfs[f"D_{k}"] for k in (1, 2)]
    assert max(u.max() for u in use) <= 1 + 1e-6
    assert max(u.max() for u in use) > 0.95                          # it uses the grip
    # same sector, same mesh, same entry speed (the lines may differ: the track is 8 m wide)
    assert dfs["q1_dot"].iloc[0] == pytest.approx(dff["q1_dot"].iloc[0])
    assert len(dfs) == len(dff) and reps.n_variables < repf.n_variables


@pytest.mark.integration
def test_single_track_solution_warm_starts_the_full_model(solved_sector):
    """Initialized from the single-track optimum (suspension settled, loads solved at every
    point) the full model solves to the same optimum as from its cold start."""
    import pyomo.environ as pyo
    from pyomo_lap.ocp.single_track import warm_start_full
    tr, p, ms, reps, dfs = solved_sector("single-track")
    _, _, mf, repf, dff = solved_sector("full")
    m = build_model(tr, p, start=sector.START, length=sector.LENGTH, nfe=sector.NFE, ncp=3)
    info = warm_start_full(m, ms)
    assert info["unsettled"] == 0
    assert pyo.value(m.lap_time) == pytest.approx(pyo.value(ms.lap_time), rel=1e-9)
    rep = solve_model(m)
    assert rep.ok
    assert pyo.value(m.lap_time) == pytest.approx(pyo.value(mf.lap_time), rel=2e-3)


@pytest.mark.integration
def test_cli_single_track(tmp_path):
    """The CLI solves the single-track model and writes its results."""
    from pyomo_lap.cli import main
    out = tmp_path / "st"
    r = CliRunner().invoke(main, ["solve", "--model", "single-track", "--start", "2000",
                                  "--length", "150", "--nfe", "15", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "single-track" and summary["termination_condition"] == "optimal"
    r = CliRunner().invoke(main, ["solve", "--model", "bicycle", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "single-track" in r.output
    with pytest.raises(ValueError, match="lift"):
        build_model(load_track("nordschleife"), load_vehicle("fsae"), start=0.0,
                    length=100.0, nfe=5, model="single-track", lift=("qdd",))
