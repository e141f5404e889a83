"""The hybrid powertrain (pyomo_lap.ocp.hybrid, issue 38 item 3): the battery's state of
charge against closed forms (a polynomial rate, constant deployment and harvest at constant
speed), the energy balance and the per-lap limits of a solved sector, the traction row that
takes the motor's power, a car without [hybrid] building the same NLP, the schema's errors."""
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.util.calc_var_value import calculate_variable_from_constraint

from pyomo_lap import Track, build_model, load_vehicle, solve_sector
from pyomo_lap.ocp.collocation import CollocationGrid
from pyomo_lap.ocp.hybrid import hybrid_summary
from pyomo_lap.vehicle.files import VehicleFileError, read_vehicle_file


def straight(length=200.0):
    """A flat, straight open track of ``length`` [m]."""
    s = np.linspace(0.0, length, 201)
    return Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], closed=False, name="straight")


def hybrid_car(**changes):
    """f1_2014_hybrid with some [hybrid] keys changed (``deploy_efficiency=0.9`` ...)."""
    return load_vehicle("f1_2014_hybrid").replace({f"hybrid.{k}": v for k, v in changes.items()})


def count(m):
    """(variables, active constraints) of a model."""
    nv = sum(1 for _ in m.component_data_objects(pyo.Var, descend_into=True))
    nc = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True, descend_into=True))
    return nv, nc


# ---------------------------------------------------------------------------- the collocation
@pytest.mark.component
@pytest.mark.parametrize("scheme, ncp", [("LAGRANGE-RADAU", 3), ("LAGRANGE-LEGENDRE", 2)])
def test_integration_matrix_integrates_polynomials_exactly(scheme, ncp):
    """The state's collocation at every point is the integral of a rate that is a polynomial
    of degree ncp - 1 (exact for it: the interpolation through ncp nodes), on a non-uniform
    mesh: E(s) - E(0) = int_0^s f against the antiderivative."""
    L = 120.0
    bounds = np.r_[0.0, np.cumsum([30.0, 10.0, 45.0, 35.0])]
    m = build_model(straight(), load_vehicle("fsae"), length=L, element_boundaries=bounds,
                    ncp=ncp, scheme=scheme)
    k = ncp - 1
    E = {0.0: 0.0}
    for point, start, coef in CollocationGrid.from_model(m).integration_rows():     # points increase: starts known
        E[point] = E[start] + sum(c * (x / L) ** k for x, c in coef.items())
    for point, value in E.items():
        assert value == pytest.approx(L * (point / L) ** (k + 1) / (k + 1), rel=1e-9, abs=1e-9)


@pytest.mark.component
@pytest.mark.parametrize("eta", [1.0, 0.8])
def test_constant_deploy_and_harvest_closed_form(eta):
    """At constant speed v on a flat straight of length L, the motor deploying P_d (no
    harvest) empties the battery by P_d L / (eta_d v); harvesting P_h (no deployment) fills it
    by eta_h P_h L / v. The state of charge from the model's rows alone (each solved for its
    point's value, pyomo's calculate_variable_from_constraint), start 3 MJ."""
    L, v, P = 150.0, 40.0, 80e3
    p = hybrid_car(deploy_efficiency=eta, harvest_efficiency=eta, soc_start=3e6)
    m = build_model(straight(), p, length=L, nfe=8, ncp=3)
    b = m.hybrid
    s0 = min(m.s)
    for case, (pd, ph, want) in {"deploy": (P, 0.0, -P * L / (eta * v)),
                                 "harvest": (0.0, P, eta * P * L / v)}.items():
        for s in m.s:
            m.q1_dot[s].set_value(v)
            b.deploy_power[s].set_value(pd)
            b.harvest_power[s].set_value(ph)
        b.soc[s0].set_value(3e6)
        for point in sorted(b.soc_row):
            calculate_variable_from_constraint(b.soc[point], b.soc_row[point])
        assert b.soc[max(m.s)].value - 3e6 == pytest.approx(want, rel=1e-9), case
        assert pyo.value(b.deployed) == pytest.approx(pd * L / v, rel=1e-12)
        assert pyo.value(b.harvested) == pytest.approx(ph * L / v, rel=1e-12)


# ---------------------------------------------------------------------------- the NLP
@pytest.mark.component
def test_given_start_and_end_values_replace_the_periodic_row():
    """soc_start and soc_end given: two rows fixing the battery's energy at the sector's first
    and last point (no periodic row); the state bounded by [0, capacity]; only soc_start: the
    end is free (one row)."""
    tr = straight()
    m = build_model(tr, hybrid_car(soc_start=3e6, soc_end=1e6), length=100.0, nfe=4, ncp=3)
    b, first, last = m.hybrid, min(m.s), max(m.s)
    rows = {k: c for k, c in b.end_row.items()}
    assert set(rows) == {0, 1}
    for k, (s, value) in enumerate(((first, 3e6), (last, 1e6))):
        b.soc[s].set_value(value)
        assert abs(pyo.value(rows[k].body) - pyo.value(rows[k].upper)) < 1e-9
        b.soc[s].set_value(value + 1.0)
        assert abs(pyo.value(rows[k].body) - pyo.value(rows[k].upper)) == pytest.approx(1.0)
    assert b.soc[first].bounds == (0.0, 4e6)
    m1 = build_model(tr, hybrid_car(soc_start=3e6), length=100.0, nfe=4, ncp=3)
    assert list(m1.hybrid.end_row) == [0]


@pytest.mark.component
def test_car_without_hybrid_builds_todays_nlp():
    """f1_2014 has no m.hybrid and every power_limit row active; f1_2014_hybrid on the same
    mesh has 3 more variables a point (P_d, P_h, E_b) and, per point, the power row replaced
    (power_limit deactivated) plus the harvest row, a state row at every point but the first,
    the periodic row and the two per-lap limits."""
    tr = straight()
    m0 = build_model(tr, load_vehicle("f1_2014"), length=100.0, nfe=5, ncp=3)
    m1 = build_model(tr, load_vehicle("f1_2014_hybrid"), length=100.0, nfe=5, ncp=3)
    assert m0.component("hybrid") is None
    assert all(c.active for c in m0.power_limit.values())
    assert not any(c.active for c in m1.power_limit.values())
    N = len(m0.s)
    (v0, c0), (v1, c1) = count(m0), count(m1)
    assert v1 - v0 == 3 * N
    assert c1 - c0 == -N + N + N + (N - 1) + 1 + 2


@pytest.mark.integration
def test_solved_sector_balance_limits_and_traction_row():
    """A 600 m open sector of Catalunya (a straight into turn 1), periodic state of charge,
    per-lap limits small enough to be reached (0.03 MJ out, 0.03 MJ in, efficiencies 0.9),
    solved by lap_ipopt: the energy balance closes to 1e-6, both limits hold (and bind), the
    harvest is at most the rear brakes' power at every point, the traction power exceeds the
    engine's P_max where the motor deploys (the deactivated recorded row left out) and stays
    within P_max + P_d, and the sector is faster than the same car without the motor."""
    eta, lim = 0.9, 0.03e6
    p = hybrid_car(deploy_efficiency=eta, harvest_efficiency=eta, deploy_energy_per_lap=lim,
                   harvest_energy_per_lap=lim)
    kw = dict(track="catalunya_fastest_lap", periodic=False, length=600.0, out_dir=None,
              echo=lambda *a, **k: None, progress=None, ocp_options={"element_length": 10.0})
    res = solve_sector(vehicle=p, **kw)
    m, h = res.model, res.summary["hybrid"]
    assert h["balance_residual"] < 1e-6
    # the self-check's power row and energy balance count the motor's power (verify/energy_balance.py)
    assert res.summary["self_check"]["checks"]["power_limit"]["verdict"] == "pass"
    assert h == hybrid_summary(m)
    assert abs(h["delta_soc_J"]) < 1e-6 * lim                  # periodic
    dep = sum(w * m.hybrid.deploy_power[s].value / m.q1_dot[s].value
              for s, w in CollocationGrid.from_model(m).quadrature().items())
    assert h["deployed_J"] == pytest.approx(dep, rel=1e-12)
    assert h["battery_out_J"] == pytest.approx(h["deployed_J"] / eta, rel=1e-12)
    assert h["battery_out_J"] <= lim * (1 + 1e-6) and h["battery_in_J"] <= lim * (1 + 1e-6)
    assert h["battery_in_J"] == pytest.approx(lim, rel=1e-4)        # the harvest limit binds
    k_rear = 1.0 - p.brake_ratio
    over = 0.0
    for s in m.s:
        ph, pd = m.hybrid.harvest_power[s].value, m.hybrid.deploy_power[s].value
        fxb, fxa, v = m.f_xb[s].value, m.f_xa[s].value, pyo.value(m.v_3x[s])
        assert ph <= -k_rear * fxb * v + 1e-3 * p.hybrid_harvest_power_max
        assert fxa * v <= p.P_max + pd + 1e-4 * p.P_max
        over = max(over, fxa * v - p.P_max)
    assert over > 0.5 * p.hybrid_deploy_power_max           # the motor's power at the wheels
    df = res.trajectory
    assert {"power_deploy", "power_harvest", "soc_energy"} <= set(df.columns)
    assert not math.isnan(df["soc_energy"].iloc[-1])
    base = solve_sector(vehicle=load_vehicle("f1_2014"), **kw)
    assert "hybrid" not in base.summary
    assert res.summary["lap_time_s"] < base.summary["lap_time_s"] - 1e-3


# ---------------------------------------------------------------------------- the schema
@pytest.mark.unit
@pytest.mark.parametrize("section, words", [
    ("deploy_power_max = 120e3\n", "[hybrid] harvest_power_max: expected"),
    ("deploy_power_max = 120e3\nharvest_power_max = 120e3\ncapacity = 4e6\nsoc_start = 5e6\n",
     "[hybrid] soc_start = 5000000.0: expected at most capacity"),
    ("deploy_power_max = -5.0\nharvest_power_max = 120e3\n", "deploy_power_max"),
    ("deploy_power = 120e3\nharvest_power_max = 120e3\n", "deploy_power"),
    ("deploy_power_max = 120e3\nharvest_power_max = 120e3\ndeploy_efficiency = 1.5\n",
     "deploy_efficiency"),
])
def test_schema_errors_name_the_field(tmp_path, section, words):
    """f1_2014 with a bad [hybrid] section: the error names the section and the key (a
    missing power, a start above the capacity, a value out of range, an unknown key)."""
    from pyomo_lap.vehicle.car import models_dir
    text = (models_dir() / "f1_2014.toml").read_text() + "\n[hybrid]\n" + section
    f = tmp_path / "car.toml"
    f.write_text(text)
    with pytest.raises(VehicleFileError) as err:
        read_vehicle_file(f)
    assert words in str(err.value)
    assert "hybrid" in str(err.value)


@pytest.mark.unit
def test_a_hybrid_power_written_in_kw_is_warned_about(tmp_path):
    """``[hybrid] deploy_power_max = 120.0`` (120 kW written as W) on a 735 kW car: ``check``
    still accepts the car (exit 0) but warns, naming the key, the value and the engine's
    P_max; the bundled car (120e3 W) gets no warning (issue 46)."""
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    from pyomo_lap.vehicle.car import models_dir
    text = (models_dir() / "f1_2014_hybrid.toml").read_text()
    assert "deploy_power_max = 120.0e3" in text
    car = tmp_path / "kw.toml"
    car.write_text(text.replace("deploy_power_max = 120.0e3", "deploy_power_max = 120.0"))
    r = CliRunner().invoke(main, ["check", "--vehicle", str(car)])
    assert r.exit_code == 0, r.output
    warned = [ln for ln in r.output.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 1 and "[hybrid] deploy_power_max = 120 W" in warned[0], r.output
    assert "P_max = 735499 W" in warned[0]
    r = CliRunner().invoke(main, ["check", "--vehicle", "f1_2014_hybrid"])
    assert r.exit_code == 0 and "warning:" not in r.output, r.output
