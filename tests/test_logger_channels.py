"""Logger channels (pyomo_lap.results.logger): throttle and brake [%], steering-wheel angle [deg],
gear and engine speed [rpm], yaw rate [deg/s], accelerations in g, checked against hand
computations on made-up tables and against the physics of a solved sector (full power on the
straight, no throttle under braking, no brake on full throttle)."""
from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.results.channels import CHANNELS, UNITS
from pyomo_lap.results.logger import LOGGER_CHANNELS, add_logger_channels
from pyomo_lap.vehicle.car import load_vehicle

# a flat-torque engine: the drive force in gear k is proportional to its ratio, so the best
# gear at a speed is the shortest (largest ratio) one still below the rev limit
W = (100.0, 1300.0)           # [rad/s]
TQ = (60.0, 60.0)             # [N m]
GEARS = (3.0, 2.0, 1.5, 1.2)
FINAL = 3.5


def _geared():
    return load_vehicle("fsae").replace(engine_speed=W, engine_torque=TQ, gear_ratios=GEARS,
                                        final_drive=FINAL, drivetrain_efficiency=0.9)


def _table(p, n=5):
    rng = np.random.default_rng(3)
    D = {f"D_{w}": rng.uniform(800.0, 1500.0, n) for w in ("11", "12", "21", "22")}
    return pd.DataFrame({
        "v_3x": np.linspace(10.0, 30.0, n), "f_xa": np.zeros(n), "f_xb": np.zeros(n),
        "delta": rng.uniform(-0.1, 0.1, n), "omega_3z": rng.uniform(-1.0, 1.0, n),
        "a_x": rng.uniform(-15, 10, n), "a_y": rng.uniform(-20, 20, n),
        "a_z": rng.uniform(-3, 3, n), **D})


@pytest.mark.unit
def test_gear_and_engine_speed_against_a_hand_computation():
    """At each speed the shortest gear whose engine speed v fd g / (2 pi R) 60 is below the
    rev limit (flat torque), and that engine speed in rpm; none above top gear's limit."""
    p = _geared()
    R = p.wheel_radius
    speeds = np.array([8.0, 20.0, 30.0, 40.0, 50.0, 79.0, 90.0])
    df = add_logger_channels(pd.DataFrame({"v_3x": speeds}), p)
    limit_rpm = W[1] * 30 / math.pi
    for v, gear, rpm in zip(speeds, df["gear"], df["engine_speed"]):
        by_hand = [v * FINAL * g / (2 * math.pi * R) * 60 for g in GEARS]
        usable = [k for k, r in enumerate(by_hand) if r <= limit_rpm]
        if not usable:
            assert math.isnan(gear) and math.isnan(rpm), v
            continue
        k = usable[0]
        assert gear == k + 1, v
        assert rpm == pytest.approx(max(by_hand[k], W[0] * 30 / math.pi), rel=1e-12), v
    assert df["gear"].iloc[0] == 1 and math.isnan(df["gear"].iloc[-1])   # 90 m/s: past the limit (80.5)
    # a car without a gearbox has no such channels (not zeros)
    plain = add_logger_channels(pd.DataFrame({"v_3x": speeds}), load_vehicle("fsae"))
    assert "gear" not in plain and "engine_speed" not in plain


@pytest.mark.unit
def test_conversions_are_exact():
    """g = m/s^2 / gravity, deg/s = rad/s 180/pi, steering wheel = delta ratio 180/pi."""
    p = load_vehicle("f1_2014")
    df = add_logger_channels(_table(p), p)
    for ax in "xyz":
        assert np.array_equal(df[f"a_{ax}_g"], df[f"a_{ax}"] / p.gravity)
    np.testing.assert_allclose(df["yaw_rate"], df["omega_3z"] * 180 / math.pi, rtol=1e-15)
    np.testing.assert_allclose(df["steering_wheel_angle"], df["delta"] * 11.0 * 180 / math.pi,
                               rtol=1e-15)
    assert p.steering_ratio == 11.0
    # without a steering ratio the channel is absent, not zero
    bare = p.replace(steering_ratio=None)
    assert "steering_wheel_angle" not in add_logger_channels(_table(bare), bare)


@pytest.mark.unit
def test_throttle_and_brake_against_their_references():
    """Throttle 100 % at f_xa = P_max/v (the power limit), 50 % at half of it, 0 without
    drive force; brake 100 % at the tyres' longitudinal friction limit (mu_x0/mu_y0) sum D,
    a quarter of it 25 %, 0 without braking; both clipped to [0, 100]."""
    p = load_vehicle("fsae")
    df = _table(p)
    v = df["v_3x"].to_numpy()
    limit = p.mu_x0 / p.mu_y0 * sum(df[f"D_{w}"] for w in ("11", "12", "21", "22")).to_numpy()
    df["f_xa"] = p.P_max / v * np.array([1.0, 0.5, 0.0, 0.0, 1.2])
    df["f_xb"] = -limit * np.array([0.0, 0.0, 1.0, 0.25, 0.0])
    out = add_logger_channels(df, p)
    np.testing.assert_allclose(out["throttle"], [100.0, 50.0, 0.0, 0.0, 100.0], atol=1e-12)
    np.testing.assert_allclose(out["brake"], [0.0, 0.0, 100.0, 25.0, 0.0], atol=1e-12)
    # the single-track model's axle peaks D_1, D_2
    axles = pd.DataFrame({"f_xb": [-1500.0], "D_1": [1000.0], "D_2": [2000.0]})
    assert add_logger_channels(axles, p)["brake"].iloc[0] == pytest.approx(
        100 * 1500.0 / (p.mu_x0 / p.mu_y0 * 3000.0))
    # without the tyres' peaks: mu_x0 times the loads
    loads = pd.DataFrame({"f_xb": [-p.mu_x0 * 3000.0], "f_1z": [1000.0], "f_2z": [2000.0]})
    assert add_logger_channels(loads, p)["brake"].iloc[0] == pytest.approx(100.0)


@pytest.mark.unit
def test_the_brake_is_the_friction_brakes_and_the_harvest_its_own_channel():
    """A hybrid braking at 50 m/s with f_xb = -3000 N while its generator harvests 60 kW
    (1200 N at the wheels): brake = the friction brakes' 1800 N, harvest the generator's
    1200 N, each over the friction limit (mu_x0/mu_y0) sum D; together the whole braking. At
    full throttle with harvest (f_xa > 0): the throttle is not touched. A car without a
    harvest column has no harvest channel, its brake the whole -f_xb."""
    p = load_vehicle("f1_2014_hybrid")
    D = 4000.0
    limit = 4 * D * p.mu_x0 / p.mu_y0
    df = pd.DataFrame({"f_xa": [0.0, 5000.0], "f_xb": [-3000.0, -1000.0], "v_3x": [50.0, 50.0],
                       "power_harvest": [60e3, 20e3],
                       **{f"D_{w}": [D, D] for w in ("11", "12", "21", "22")}})
    out = add_logger_channels(df.copy(), p)
    assert out["brake"].tolist() == pytest.approx([100 * 1800 / limit, 100 * 600 / limit], rel=1e-12)
    assert out["harvest"].tolist() == pytest.approx([100 * 1200 / limit, 100 * 400 / limit], rel=1e-12)
    assert (out["brake"] + out["harvest"]).tolist() == pytest.approx(
        [100 * 3000 / limit, 100 * 1000 / limit], rel=1e-12)
    plain = add_logger_channels(df.drop(columns="power_harvest"), p)
    assert "harvest" not in plain and plain["brake"][0] == pytest.approx(100 * 3000 / limit)


@pytest.mark.unit
def test_every_logger_channel_has_its_entry_and_unit():
    units = {"throttle": "%", "brake": "%", "harvest": "%", "steering_wheel_angle": "deg", "gear": "-",
             "engine_speed": "rpm", "yaw_rate": "deg/s", "a_x_g": "g", "a_y_g": "g", "a_z_g": "g"}
    assert set(LOGGER_CHANNELS) == set(units)
    for name, unit in units.items():
        assert UNITS[name] == unit and CHANNELS[name].unit == unit
    assert "of the drive force the powertrain can give" in CHANNELS["throttle"].meaning
    assert "longitudinal friction limit" in CHANNELS["brake"].meaning


@functools.lru_cache(maxsize=None)
def _braking_sector(model: str):
    """Nordschleife 1500-1800 m (fsae): full power, then braking for a corner at 1670 m."""
    from pyomo_lap import build_model, initialize_model, load_track, solve_model
    from pyomo_lap.results.table import trajectory_dataframe
    p = load_vehicle("fsae")
    m = build_model(load_track("nordschleife"), p, start=1500.0, length=300.0, nfe=40, ncp=3,
                    model=model)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return p, trajectory_dataframe(m)


@pytest.mark.integration
def test_a_solved_sector_full_throttle_on_the_straight_no_throttle_under_braking():
    """The power limit f_xa v_3x = P_max (within 0.1 %) reads 100 % throttle and no brake;
    braking (f_xb below -1 % of m g) reads no throttle; the channels are present in the
    solved table, within [0, 100]."""
    model = "full"       # the single-track car takes this corner without braking
    p, df = _braking_sector(model)
    for c in ("throttle", "brake", "steering_wheel_angle", "yaw_rate"):
        assert c in df.columns, c
    for ax in "xyz":        # the single-track table has no accelerations of O3
        assert (f"a_{ax}_g" in df.columns) == (f"a_{ax}" in df.columns) == (model == "full")
    assert df["throttle"].between(0, 100).all() and df["brake"].between(0, 100).all()
    power_limited = (df["f_xa"] * df["v_3x"] >= 0.999 * p.P_max).to_numpy()
    braking = (df["f_xb"] < -0.01 * p.m * p.gravity).to_numpy()
    assert power_limited.sum() >= 5 and braking.sum() >= 3
    assert (df["throttle"][power_limited] >= 99.9).all()
    assert (df["brake"][power_limited] <= 0.1).all()
    assert (df["throttle"][braking] <= 1.0).all()
    assert (df["brake"][braking] > 1.0).all()
