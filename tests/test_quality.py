"""The channel-quality measures (pyomo_lap.verify.quality) on signals with known answers, and on
a solved sector: the zig-zag count, the speed consistency, and the named channels of the model
against the exported columns."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.results.export import quality_table
from pyomo_lap.verify.quality import (speed_step_errors, SMOOTHNESS_CHECKS, channel_quality,
                                    speed_consistency, zigzag_count, zigzag_residuals)


def _radau_mesh(n_elements: int, h: float = 10.0) -> np.ndarray:
    """Points of a Radau ncp = 2 mesh (s = 0, then h/3 and h in each element): spacing
    alternates 3.33 and 6.67 m, as the default job's."""
    pts = [0.0]
    for j in range(n_elements):
        pts += [j * h + h / 3.0, (j + 1) * h]
    return np.array(pts)


@pytest.mark.unit
def test_residual_of_a_parabola_is_the_closed_form():
    """x = a s^2: the line through the neighbours misses by exactly -a h1 h2 (interpolation
    error of a quadratic), whatever the spacing; no sign change, no zig-zag."""
    s = _radau_mesh(20)
    a = 0.37
    r = zigzag_residuals(s, a * s ** 2)
    h1, h2 = np.diff(s)[:-1], np.diff(s)[1:]
    np.testing.assert_allclose(r, -a * h1 * h2, rtol=1e-12)
    assert zigzag_count(s, a * s ** 2, 1e-6)["count"] == 0


@pytest.mark.unit
def test_alternating_signal_counts_every_pair_above_the_threshold():
    """x_i = A (-1)^i on a uniform grid: r_i = 2 A (-1)^i, every pair of neighbours flips; n
    points give n - 3 pairs when 2A exceeds the threshold, none when it does not."""
    s = np.arange(50.0)
    A = 0.3
    x = A * (-1.0) ** np.arange(50)
    np.testing.assert_allclose(zigzag_residuals(s, x), 2 * A * (-1.0) ** np.arange(1, 49))
    assert zigzag_count(s, x, 0.59)["count"] == 47
    assert zigzag_count(s, x, 0.61)["count"] == 0
    assert zigzag_count(s, x, 0.59)["max_residual"] == pytest.approx(0.6)


@pytest.mark.unit
def test_a_single_spike_is_two_pairs_and_its_position():
    """One point B above a flat channel: residuals -B/2, B, -B/2 around it: two pairs above a
    threshold below B/2, none above it."""
    s = np.linspace(0.0, 100.0, 41)
    x = np.zeros_like(s)
    x[20] = 1.0
    z = zigzag_count(s, x, 0.4)
    assert z["count"] == 2 and z["at"] == [s[19], s[20]]
    assert z["max_residual_at"] == s[20]
    assert zigzag_count(s, x, 0.6)["count"] == 0


@pytest.mark.unit
def test_steep_smooth_step_counts_its_inflection_only_when_undersampled():
    """A tanh step of width w sampled at spacing d: one flip at the inflection when d is
    comparable to w and the inflection falls between two points (residuals of about +-2.4
    there), none when finely sampled (residuals below 0.04)."""
    def step(d, w=5.0):
        s = np.arange(0.0, 200.0, d)
        return s, 10.0 * np.tanh((s - 102.5) / w)
    assert zigzag_count(*step(5.0), 1.0)["count"] == 1
    assert zigzag_count(*step(0.5), 1.0)["count"] == 0


@pytest.mark.unit
def test_repeated_points_and_bad_input():
    s = np.array([0.0, 0.0, 1.0, 2.0, 3.0])
    x = np.array([0.0, 0.0, 1.0, 0.0, 1.0])
    assert zigzag_count(s, x, 0.1)["count"] == 1       # the repeated s = 0 is dropped
    with pytest.raises(ValueError, match="strictly increasing"):
        zigzag_residuals([0.0, 2.0, 1.0], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="threshold"):
        zigzag_count(s, x, 0.0)


def _uniform_acceleration_table(a=2.0, v0=20.0, n=200, dt=0.05, yaw=0.1):
    """A car accelerating at a along its velocity, which makes the constant angle ``yaw``
    with the car's x axis (a sideslip): v = v0 + a t exactly."""
    t = np.arange(n) * dt
    v = v0 + a * t
    s = v0 * t + 0.5 * a * t ** 2
    return pd.DataFrame({"s": s, "s_sector": s, "t": t, "speed": v,
                         "v_3x": v * math.cos(yaw), "v_3y": v * math.sin(yaw),
                         "a_x": np.full(n, a * math.cos(yaw)), "a_y": np.full(n, a * math.sin(yaw))})


@pytest.mark.unit
def test_speed_consistency_of_an_exact_trajectory_and_of_a_perturbed_one():
    """The tangential acceleration (a_x, a_y projected on the velocity, sideslip included)
    integrates to the speed exactly; a speed point moved by 0.2 m/s is found, with both steps
    around it."""
    df = _uniform_acceleration_table()
    sc = speed_consistency(df, 40.0)
    assert sc["max_error_mps"] < 1e-12 and sc["count"] == 0
    bad = df.copy()
    bad.loc[100, "speed"] += 0.2
    sc = speed_consistency(bad, 40.0)
    assert sc["max_error_mps"] == pytest.approx(0.2, rel=1e-9)
    assert sc["max_error_rel"] == pytest.approx(0.2 / 40.0, rel=1e-9)     # of the top speed
    assert sc["count"] == 2 and sc["max_error_at"] == pytest.approx(df["s"][99])
    # the count's tolerance is a fraction of the car's top speed: 0.2 m/s is within it
    # for a car of 200 m/s
    assert speed_consistency(bad, 200.0)["count"] == 0
    with pytest.raises(ValueError, match="v_ref"):
        speed_consistency(df, 0.0)
    # the worst step on a step of the track's curvature (straight to arc) is said to be one
    bad["Omega_z"] = np.where(np.arange(len(bad)) >= 100, 1.0 / 90.0, 0.0)
    assert speed_consistency(bad, 40.0)["curvature_step"] is True
    bad["Omega_z"] = 1.0 / 90.0
    assert speed_consistency(bad, 40.0)["curvature_step"] is False
    # a fast but continuous change of curvature (a chicane's) is not a step
    bad["Omega_z"] = np.linspace(-0.06, 0.06, len(bad))
    assert speed_consistency(bad, 40.0)["curvature_step"] is False
    # every step's error: +0.2 m/s into the moved point, -0.2 m/s out of it, none elsewhere
    s, err = speed_step_errors(bad)
    assert len(s) == len(err) == len(bad) - 1 and s[99] == pytest.approx(df["s"][99])
    assert err[99] == pytest.approx(0.2, rel=1e-9) and err[100] == pytest.approx(-0.2, rel=1e-9)
    assert np.abs(np.delete(err, [99, 100])).max() < 1e-12


@pytest.mark.unit
def test_channel_quality_and_its_table():
    from pyomo_lap.vehicle.car import load_vehicle
    df = _uniform_acceleration_table()
    df["delta"] = 0.01 * (-1.0) ** np.arange(len(df))     # 0.57 deg chatter
    q = channel_quality(df, load_vehicle("fsae"))
    assert q["zigzags"]["delta"]["count"] == len(df) - 3
    assert q["zigzags"]["delta"]["unit"] == "deg"
    assert q["zigzags"]["delta"]["max_residual"] == pytest.approx(math.degrees(0.02))
    assert q["zigzags"]["speed"]["count"] == 0
    assert "f_11z" not in q["zigzags"]                     # absent channels are skipped
    assert q["zigzag_total"] == len(df) - 3
    table = quality_table(q)
    assert list(table["check"])[-1].startswith("speed vs integrated")
    assert {c.channel for c in SMOOTHNESS_CHECKS} >= {"delta", "alpha_1", "f_11z", "speed", "a_y"}


@pytest.mark.integration
def test_named_channels_equal_the_exported_columns_and_the_summary_has_the_quality(tmp_path):
    """m.speed, m.a_x, m.a_y, the slip angles and the tyre forces (named Expressions of the
    model) against the columns of trajectory_dataframe, which computes them by another route
    (the channel tape of the car equations, evaluated with NumPy); the summary and the
    workbook carry the channel quality."""
    import json

    import openpyxl

    from pyomo_lap import solve_sector
    from pyomo_lap.ocp.channel_expressions import CHANNEL_EXPRESSIONS
    from pyomo_lap.solvers.lap.checks import evaluate_expression
    m, rep, df, summary = solve_sector(start=1300, length=200, out_dir=tmp_path / "r",
                                       echo=lambda *_: None)
    assert rep.ok
    sigma = sorted(m.s)
    memo = {}
    for name in CHANNEL_EXPRESSIONS:
        got = np.array([evaluate_expression(m.component(name)[s], memo) for s in sigma])
        np.testing.assert_allclose(got, df[name].to_numpy(), rtol=1e-9, atol=1e-9, err_msg=name)
    # the loads are variables of the model: the same numbers
    np.testing.assert_allclose([m.f_11z[s].value for s in sigma], df["f_11z"], rtol=0, atol=0)
    saved = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert saved["channel_quality"]["zigzags"]["delta"]["count"] == \
        channel_quality(df, m.vehicle.built_for)["zigzags"]["delta"]["count"]
    assert saved["mesh"]["n_elements"] == len(saved["mesh"]["element_boundaries_m"]) - 1
    wb = openpyxl.load_workbook(tmp_path / "r" / "results.xlsx", read_only=True)
    assert "quality" in wb.sheetnames
