"""The energy integrals on the model and their limits (pyomo_lap.ocp.integrals, issue 38):
the quadrature against polynomials, each integral against a closed form on a flat straight,
the energy balance of the solved car (what the tyres dissipate closes it at steady cornering
and on a straight), the parsing of the limits, and a limited solve reaching its limit."""
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from click.testing import CliRunner

from pyomo_lap import Track, build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.ocp.collocation import CollocationGrid
from pyomo_lap.ocp.integrals import (ENERGY_NAMES, LIMIT_NAMES, 
                                     energy_channels, parse_energy, parse_limits)


def straight(length=200.0):
    """A flat, straight open track of ``length`` [m]."""
    s = np.linspace(0.0, length, 201)
    return Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], closed=False, name="straight")


# ---------------------------------------------------------------------------- parsing
@pytest.mark.unit
def test_energy_units_are_parsed():
    """J, kJ, MJ, Wh, kWh and bare numbers (J); anything else one line."""
    assert parse_energy("24MJ") == 24e6
    assert parse_energy("0.8 MJ") == pytest.approx(8e5)
    assert parse_energy("1.5kWh") == pytest.approx(1.5 * 3.6e6)
    assert parse_energy("2 Wh") == 7200.0
    assert parse_energy("350kJ") == 3.5e5
    assert parse_energy("1e5") == 1e5 and parse_energy(42) == 42.0   # bare numbers: J
    for bad in ("24GJ", "24 mj", "abc", "-3MJ", "0", "inf", "1e400"):
        with pytest.raises(ValueError) as exc:
            parse_energy(bad)
        assert "\n" not in str(exc.value)


@pytest.mark.unit
def test_limit_names_are_checked_before_the_build():
    """Known names only (the message lists them), in the API's job options too."""
    assert parse_limits(["engine_energy=24MJ", "tyre_energy_fl=0.8MJ"]) == {
        "engine_energy": 24e6, "tyre_energy_fl": 8e5}
    assert parse_limits({"tyre_energy": "800kJ"}) == {"tyre_energy": 8e5}
    assert parse_limits(None) == {} and parse_limits(()) == {}
    with pytest.raises(ValueError) as exc:
        parse_limits(["brake_wear=3MJ"])
    text = str(exc.value)
    assert "'brake_wear'" in text and all(n in text for n in LIMIT_NAMES) and "\n" not in text
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_limits(["engine_energy"])
    from pyomo_lap.api import job_options
    assert job_options(limits={"engine_energy": "24MJ"}).limits == {"engine_energy": 24e6}
    with pytest.raises(ValueError, match="unknown unit"):
        job_options(limits={"engine_energy": "24 GJ"})


@pytest.mark.unit
def test_cli_refuses_a_bad_limit_in_one_line(tmp_path):
    """``--limit`` with an unknown name or unit: exit 2, one line, nothing written."""
    from pyomo_lap.cli import main
    for arg, words in (("brake_energy=1MJ", "known: traction_energy"), ("engine_energy=3 MW", "unknown unit")):
        r = CliRunner().invoke(main, ["solve", "--length", "100", "--limit", arg,
                                      "--out", str(tmp_path / "x")])
        assert r.exit_code == 2, r.output
        assert words in r.output and len(r.output.strip().splitlines()) == 1
        assert not (tmp_path / "x").exists()


@pytest.mark.unit
def test_the_powers_are_one_function_of_numbers_arrays_and_pyomo_expressions():
    """energy_powers (pyomo_lap.vehicle.energy): the closed forms on numbers; the same numbers,
    bit for bit, element by element of arrays and as Pyomo expressions of variables holding
    them (the model's integrals and the table's columns are that one function); drag in one
    form, -f_drag v with f_drag = -Cx q S."""
    from pyomo_lap.vehicle.energy import energy_powers
    v, fa, fb, Cx, qS, fy, alpha, eta = 30.0, 400.0, -250.0, 1.2, 540.0, 900.0, 0.02, 0.9
    p = energy_powers(v, f_xa=fa, f_xb=fb, f_drag=-Cx * qS, tyres={"fl": (fy, alpha)},
                      drivetrain_efficiency=eta)
    assert list(p) == ["traction", "engine", "braking", "drag", "tyre_fl"]
    assert p == {"traction": 12000.0, "engine": 12000.0 / eta, "braking": 7500.0,
                 "drag": Cx * qS * v, "tyre_fl": fy * alpha * v}
    arr = energy_powers(np.array([v, 2 * v]), f_xa=np.array([fa, fa]), f_xb=np.array([fb, 0.0]))
    assert arr["traction"].tolist() == [12000.0, 24000.0] and arr["braking"][1] == 0.0
    m = pyo.ConcreteModel()
    m.v, m.fa, m.fb, m.fy, m.al = (pyo.Var(initialize=x) for x in (v, fa, fb, fy, alpha))
    m.Cx, m.q = pyo.Var(initialize=Cx), pyo.Var(initialize=qS)
    e = energy_powers(m.v, f_xa=m.fa, f_xb=m.fb, f_drag=-m.Cx * m.q, tyres={"fl": (m.fy, m.al)},
                      drivetrain_efficiency=eta)
    assert {k: pyo.value(x) for k, x in e.items()} == p
    assert energy_powers(v) == {} and energy_powers(v, f_xb=fb) == {"braking": 7500.0}


# ---------------------------------------------------------------------------- quadrature
@pytest.mark.component
@pytest.mark.parametrize("scheme, ncp", [("LAGRANGE-RADAU", 3), ("LAGRANGE-LEGENDRE", 2)])
def test_quadrature_integrates_polynomials_exactly(scheme, ncp):
    """Radau with ncp points is exact to degree 2 ncp - 2, Gauss-Legendre to 2 ncp - 1: the
    weights against the integrals of s^k on a non-uniform mesh."""
    L = 120.0
    bounds = np.r_[0.0, np.cumsum([30.0, 10.0, 45.0, 35.0])]
    m = build_model(straight(), load_vehicle("fsae"), length=L, element_boundaries=bounds,
                    ncp=ncp, scheme=scheme)
    w = CollocationGrid.from_model(m).quadrature()
    s, wj = np.array(list(w)), np.array(list(w.values()))
    degree = 2 * ncp - 2 if scheme.endswith("RADAU") else 2 * ncp - 1
    for k in range(degree + 1):
        # (pyomo.dae's points carry about 10 digits)
        assert wj @ (s / L) ** k == pytest.approx(L / (k + 1), rel=1e-9)
    assert abs(wj @ (s / L) ** (degree + 1) / (L / (degree + 2)) - 1) > 1e-6


# ---------------------------------------------------------------------------- closed forms
@pytest.mark.component
@pytest.mark.parametrize("car", ["fsae", "f1_2014"])
def test_integrals_at_constant_speed_on_a_flat_straight(car):
    """The car held at v on a flat straight of length L (values set, no solve): drag energy
    0.5 rho S Cx v^2 L; traction energy F L for a drive force F, engine the same (no
    drivetrain efficiency), braking F_b L; no slip, no tyre energy."""
    p = load_vehicle(car)
    L, v, F, Fb = 150.0, 30.0, 400.0, -250.0
    m = build_model(straight(), p, length=L, nfe=8, ncp=3)
    for s in m.s:
        m.q1_dot[s].set_value(v)
        m.f_xa[s].set_value(F)
        m.f_xb[s].set_value(Fb)
        for name in ("q2", "q3", "q4", "q5", "q6", "q2_dot", "q3_dot", "q4_dot", "q5_dot",
                     "q6_dot", "delta"):
            m.component(name)[s].set_value(0.0)
    e = m.energy
    assert pyo.value(e.drag) == pytest.approx(0.5 * p.rho * p.S * p.Cx * v ** 2 * L, rel=1e-9)
    assert pyo.value(e.traction) == pytest.approx(F * L, rel=1e-12)
    assert pyo.value(e.engine) == pytest.approx(F * L / (p.drivetrain_efficiency or 1.0), rel=1e-12)
    assert pyo.value(e.braking) == pytest.approx(-Fb * L, rel=1e-12)
    for t in ("fl", "fr", "rl", "rr"):
        assert abs(pyo.value(e.component(f"tyre_{t}"))) < 1e-9
    assert set(ENERGY_NAMES) <= {c.local_name for c in e.component_objects(pyo.Expression)}


def _circle_solve(p, radius=60.0):
    u = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    pts = np.c_[radius * np.cos(u), radius * np.sin(u), np.zeros_like(u)]
    tr = Track.from_points(pts, closed=True, smoothing=0, name="circle", width_left=3.0,
                           width_right=5.0)
    m = build_model(tr, p, nfe=20, ncp=3, periodic=True, piecewise_constant_controls=True,
                    control_form="point")
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return m


@pytest.mark.integration
def test_steady_cornering_balance_closes_with_the_tyres_dissipation():
    """Steady cornering on a flat circle (a periodic lap, constant controls): the kinetic
    energy does not change, so the drive power goes into the drag and the tyres' slip,
    traction = drag + sum of the tyres' energies (+ braking); and each tyre's energy is its
    lateral force times its slip velocity v tan(alpha) times the lap time (the car at one
    state all round)."""
    m = _circle_solve(load_vehicle("fsae"))
    e = m.energy
    tyres = sum(pyo.value(e.component(f"tyre_{t}")) for t in ("fl", "fr", "rl", "rr"))
    traction, drag, braking = (pyo.value(e.traction), pyo.value(e.drag), pyo.value(e.braking))
    assert tyres > 0.1 * traction            # the slip is a good part of the power
    assert traction == pytest.approx(drag + braking + tyres, rel=0.01)
    T = pyo.value(m.lap_time)
    s0 = sorted(m.s)[len(m.s) // 2]
    v = pyo.value(m.v_3x[s0])
    for t, w in (("fl", "11"), ("rr", "22")):
        fy, alpha = pyo.value(m.component(f"f_{w}y")[s0]), pyo.value(m.component(f"alpha_{w[0]}")[s0])
        assert pyo.value(e.component(f"tyre_{t}")) == pytest.approx(fy * v * math.tan(alpha) * T, rel=0.01)


# ---------------------------------------------------------------------------- limits
QUICK = dict(start=1150.0, length=150.0, nfe=10, ncp=2)


@pytest.fixture(scope="module")
def nordschleife():
    """The bundled Nordschleife, loaded once."""
    return load_track("nordschleife")


@pytest.mark.integration
def test_a_limited_solve_reaches_its_limit_and_is_slower(nordschleife):
    """The engine's energy limited to 85 % of what the unlimited sector uses: the row is
    active (the energy at the limit to 1e-6) and the car slower; the energy balance of the
    open sector (traction - braking - drag - tyres = the kinetic energy gained, to 2 % of the
    traction energy) holds in both."""
    p = load_vehicle("fsae")
    m = build_model(nordschleife, p, **QUICK)
    initialize_model(m)
    assert solve_model(m).ok
    t_free, e_free = pyo.value(m.lap_time), pyo.value(m.energy.engine)
    assert m.energy.component("limit_row") is None        # no row without a limit
    limit = 0.85 * e_free
    ml = build_model(nordschleife, p, limits={"engine_energy": limit}, **QUICK)
    initialize_model(ml)
    assert solve_model(ml).ok
    assert pyo.value(ml.energy.engine) == pytest.approx(limit, rel=1e-6)
    assert pyo.value(ml.lap_time) > t_free + 1e-3
    for model in (m, ml):
        e = model.energy
        s = sorted(model.s)
        ke = 0.5 * p.m * (pyo.value(model.speed[s[-1]]) ** 2 - pyo.value(model.speed[s[0]]) ** 2)
        lost = sum(pyo.value(e.component(n)) for n in ("braking", "drag", "tyre_fl", "tyre_fr",
                                                       "tyre_rl", "tyre_rr"))
        # the climb: the sector is not flat; m g dz from the track's elevations
        z = nordschleife.evaluate(np.array([QUICK["start"], QUICK["start"] + QUICK["length"]])).position[:, 2]
        climb = p.m * p.gravity * float(z[1] - z[0])
        assert pyo.value(e.traction) - lost == pytest.approx(ke + climb, abs=0.02 * pyo.value(e.traction))
    # the summary's integrals from the results table (NumPy) are the model's expressions
    from pyomo_lap.ocp.integrals import energy_summary
    from pyomo_lap.results.table import trajectory_dataframe
    table, expressions = energy_summary(ml, trajectory_dataframe(ml)), energy_summary(ml)
    assert set(table) == set(expressions)
    for key, value in expressions.items():
        if key.endswith("_J"):
            assert table[key] == pytest.approx(value, rel=1e-9, abs=1e-6)
    assert table["limits"]["engine"]["share"] == pytest.approx(1.0, rel=1e-6)


@pytest.mark.unit
def test_channels_integrate_to_the_integrals_by_a_second_rule():
    """The power channels of a table, integrated over time by the trapezoidal rule, against
    closed forms of constant powers."""
    import pandas as pd
    n = 50
    df = pd.DataFrame({"f_xa": np.full(n, 500.0), "f_xb": np.zeros(n), "v_3x": np.full(n, 20.0),
                       "f_drag": np.full(n, -100.0), "f_11y": np.full(n, 1000.0),
                       "alpha_1": np.full(n, 0.02)})
    ch = energy_channels(df, load_vehicle("fsae"))
    assert ch["power_engine"][0] == 1e4 and ch["power_drag"][0] == 2e3
    assert ch["power_tyre_fl"][0] == pytest.approx(1000.0 * 0.02 * 20.0)
    assert "power_tyre_rl" not in ch


@pytest.mark.component
def test_slip_estimate_inverts_the_longitudinal_characteristic():
    """The slip ratio of :func:`slip_ratio` put back into the characteristic
    f_x = D_x sin(C atan(B_x kappa)) (B_x kappa_p = tan(pi / 2C), D_x = mu_x/mu_y D(f_z))
    gives the tyre's longitudinal force back (to the 1e-6 of the smoothing of arcsin at the
    peak); the slip energy is f_x kappa v over the time, >= 0 under traction."""
    from pyomo_lap.ocp.integrals import add_energy_integrals, slip_ratio
    from pyomo_lap.vehicle.tyres import peak_force
    p = load_vehicle("f1_2014")
    L, v, kp = 100.0, 40.0, 0.08
    m = build_model(straight(), p, length=L, nfe=5, ncp=2)
    for s in m.s:
        m.q1_dot[s].set_value(v)
        m.f_xa[s].set_value(6000.0)
        m.f_xb[s].set_value(0.0)
        for w in ("11", "12", "21", "22"):
            m.component(f"f_{w}z")[s].set_value(3000.0)
        for name in ("q2", "q3", "q4", "q5", "q6", "q2_dot", "q3_dot", "q4_dot", "q5_dot",
                     "q6_dot", "delta"):
            m.component(name)[s].set_value(0.0)
    s = sorted(m.s)[3]
    Dx = p.mu_x0 / p.mu_y0 * peak_force(p, 3000.0)
    fx = pyo.value(m.f_21x[s])
    assert fx == pytest.approx(3000.0)
    kappa = pyo.value(slip_ratio(m, "21", s, kp))
    Bx = math.tan(math.pi / 2 / p.C) / kp
    assert Dx * math.sin(p.C * math.atan(Bx * kappa)) == pytest.approx(fx, rel=1e-6)
    assert 0 < kappa < kp
    lateral = pyo.value(m.energy.tyre_rl)
    add_energy_integrals(m, slip_at_peak=kp)
    assert pyo.value(m.energy.tyre_rl) - lateral == pytest.approx(fx * kappa * L, rel=1e-9)
    assert pyo.value(m.energy.tyre_fl) == pytest.approx(lateral, abs=1e-6)   # front: no drive


@pytest.mark.integration
def test_solve_sector_takes_limits_and_reports_the_energies(nordschleife):
    """``solve_sector(limits=...)``: summary.json's ``energy`` holds the integrals and the
    limit reached; the trajectory's power channels integrate over its time (trapezoid, a
    second rule) to the integrals within 1 %."""
    from pyomo_lap import solve_sector
    res = solve_sector(track=nordschleife, vehicle="fsae", out_dir=None, echo=lambda *a: None,
                       limits={"tyre_energy_fl": "1kJ", "engine_energy": "0.04 kWh"}, **QUICK)
    e = res.summary["energy"]
    assert e["limits"]["tyre_fl"]["limit_J"] == 1000.0
    assert e["limits"]["engine"]["used_J"] == pytest.approx(0.04 * 3.6e6, rel=1e-6)
    assert e["tyre_fl_J"] <= 1000.0 * (1 + 1e-6)
    df = res.trajectory
    keep = np.r_[True, np.diff(df["t"].to_numpy()) > 0]
    t = df["t"].to_numpy()[keep]
    for col, name in (("power", "traction"), ("power_drag", "drag"), ("power_tyre_rr", "tyre_rr")):
        assert np.trapezoid(df[col].to_numpy()[keep], t) == pytest.approx(e[f"{name}_J"], rel=0.01)


@pytest.mark.component
def test_a_limit_on_an_integral_the_model_lacks_is_refused(nordschleife):
    """The single-track car has no tyre energies: a tyre limit is refused by the build, naming
    the limit and the model; an engine limit is a row on its own integral."""
    p = load_vehicle("fsae")
    with pytest.raises(ValueError, match="tyre_energy.*single-track"):
        build_model(nordschleife, p, model="single-track", limits={"tyre_energy": 1e3}, **QUICK)
    m = build_model(nordschleife, p, model="single-track", limits={"engine_energy": 1e5}, **QUICK)
    assert list(m.energy.limit_row) == ["engine"] and pyo.value(m.energy.limit["engine"]) == 1e5
