"""Comparing with data (issue 25): a logged lap against a run (aligned on distance, the time
gained or lost along the lap, the channels both have), more than two runs with the parameters
in which they differ, channels on a fixed step of distance or time. The run here is synthetic
(a speed profile whose lap time is integrated independently); the logged lap is the run's own
speed times 0.98, so the time lost at the end is T (1/0.98 - 1) = T/49 by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pyomo_lap.analysis.compare import (parse_step, parameter_differences,
                                    read_telemetry, resample_channels, run_labels,
                                    telemetry_delta)

L = 1500.0                       # [m] the lap


def _v(s):
    """The run's speed [m/s] along the lap: 40 +- 12 m/s, two slow corners."""
    return 40.0 + 12.0 * np.cos(4 * np.pi * s / L)


def _t_of_s(s):
    """The time [s] to reach s at speed _v: the integral of 1/v, in closed form:
    int ds / (a + b cos(k s)) = 2/(k sqrt(a^2 - b^2)) atan(sqrt((a - b)/(a + b)) tan(k s / 2)),
    written with atan2 and continued over its branches (the angle stays within pi/2 of x)."""
    a, b, k = 40.0, 12.0, 4 * np.pi / L
    c = np.sqrt(a * a - b * b)
    x = k * np.asarray(s, dtype=float) / 2
    theta = np.arctan2(np.sqrt((a - b) / (a + b)) * np.sin(x), np.cos(x))
    theta = theta + 2 * np.pi * np.round((x - theta) / (2 * np.pi))
    return 2 / (k * c) * theta


def _run(n=751):
    s = np.linspace(0.0, L, n)
    v = _v(s)
    return pd.DataFrame({"s": s, "s_sector": s, "t": _t_of_s(s), "speed_kmh": 3.6 * v,
                         "q2": np.zeros(n), "a_y": 10 * np.sin(4 * np.pi * s / L)})


T = float(_t_of_s(L))            # the run's lap time [s]


@pytest.mark.unit
def test_closed_form_lap_time_is_right():
    """The closed-form time of _t_of_s against the trapezoidal rule on a fine grid, at the
    end of the lap and on the way (at the branch points of tan too)."""
    for end in (L, 0.25 * L, 0.5 * L, 0.61 * L, 0.75 * L):
        s = np.linspace(0, end, 200001)
        assert float(_t_of_s(end)) == pytest.approx(np.trapezoid(1 / _v(s), s), rel=1e-9)


@pytest.mark.unit
def test_logged_lap_with_distance_is_2_percent_slower_everywhere(tmp_path):
    """A logged lap with a distance column, its speed 0.98 x the run's and in km/h: the time
    lost grows as t(s)/49 and is T/49 at the end; the logged a_y is compared, its 'steer' is
    not (the run has none)."""
    s = np.linspace(0.0, L, 3001)
    f = tmp_path / "lap.csv"
    pd.DataFrame({"Distance [m]": s, "Speed [km/h]": 3.6 * 0.98 * _v(s),
                  "a_y [m/s^2]": 10 * np.sin(4 * np.pi * s / L), "steer": 0.0}).to_csv(f, index=False)
    log, info = read_telemetry(f)
    assert info["derived"] == ["time = the integral of 1 / speed over the distance"]
    d, ainfo = telemetry_delta(_run(), log, units=info["units"])
    assert ainfo["scale"] == 1.0 and ainfo["compared"] == ["a_y"]
    assert d["delta_t [s]"].iloc[-1] == pytest.approx(T / 49, rel=2e-4)
    x = d["s [m]"].to_numpy()
    assert np.allclose(d["delta_t [s]"], _t_of_s(x) / 49, atol=2e-3)
    assert np.allclose(d["a_y_run [m/s^2]"], d["a_y_log [m/s^2]"], atol=1e-3)   # (the run: every 2 m)


@pytest.mark.unit
def test_logged_lap_with_time_only_integrates_the_speed(tmp_path):
    """A logger at 100 Hz with time and speed only (';' and decimal commas): the distance is
    the integral of the speed; the delta at the end is T/49 to the integration's error, the
    logged distance (its error included) stretched to the run's length."""
    tl = np.arange(0.0, T / 0.98, 0.01)
    # s_log(t) = S(0.98 t), S the inverse of _t_of_s: by interpolation on a fine grid
    sg = np.linspace(0.0, L, 400001)
    s_log = np.interp(0.98 * tl, _t_of_s(sg), sg)
    v_log = 0.98 * _v(s_log)
    f = tmp_path / "logger.csv"
    f.write_text("time [s];speed [m/s]\n" + "".join(
        f"{a:.2f};{b:.6f}\n".replace(".", ",") for a, b in zip(tl, v_log)))
    log, info = read_telemetry(f)
    assert "distance = the integral of the speed over the time" in info["derived"]
    assert log["s"].iloc[-1] == pytest.approx(s_log[-1], rel=1e-5)
    d, ainfo = telemetry_delta(_run(), log)
    assert ainfo["scale"] == pytest.approx(L / log["s"].iloc[-1], rel=1e-9)
    assert d["delta_t [s]"].iloc[-1] == pytest.approx(T / 49, abs=0.012)   # one 0.01 s sample


@pytest.mark.unit
def test_telemetry_errors_say_what_is_missing(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("distance,rpm\n0,1000\n10,2000\n")
    with pytest.raises(ValueError, match=r"no speed column.*speed \[km/h\]"):
        read_telemetry(f)
    f.write_text("distance,speed\n0,10\n10,20\n")
    with pytest.raises(ValueError, match=r"unit of column 'speed' is not known"):
        read_telemetry(f)
    assert read_telemetry(f, speed_unit="km/h")[0]["speed"].iloc[1] == pytest.approx(20 / 3.6)
    f.write_text("distance,speed_kmh\n0,10\n10,20\n5,20\n")
    with pytest.raises(ValueError, match=r"does not increase \(data row 3: 5 after 10, line 4 of the file\)"):
        read_telemetry(f)


@pytest.mark.unit
def test_resampling_on_a_fixed_step():
    """Every numeric channel on a 1 m (or 0.5 s) grid; linear channels exactly; the last
    sample kept; a bad step refused."""
    df = pd.DataFrame({"s": [0.0, 2.5, 10.2], "t": [0.0, 1.0, 4.0], "x": [1.0, 6.0, 21.4],
                       "name": ["a", "b", "c"]})
    r = resample_channels(df, "1m")
    assert list(r.columns) == ["s", "t", "x"]
    assert np.allclose(r["s"], list(range(11)) + [10.2])
    assert np.allclose(r["x"], 1 + 2 * r["s"])
    r = resample_channels(df, "0.5s")
    assert np.allclose(r["t"], np.arange(0, 4.01, 0.5)) and r["s"].iloc[2] == pytest.approx(2.5)
    assert parse_step("100Hz") == ("time", pytest.approx(0.01)) and parse_step("2 km") == ("distance", 2000.0)
    for bad in ("1x", "-1m", "0s", "m"):
        with pytest.raises(ValueError, match="expected a distance step"):
            parse_step(bad)


@pytest.mark.unit
def test_parameters_that_differ_are_in_the_labels():
    base = {"mass.total": 240.0, "aero.Cz1": 0.536, "powertrain.P_max": 47e3}
    sums = [{"vehicle": "fsae", "lap_time_s": 50.0, "vehicle_parameters": base},
            {"vehicle": "fsae", "lap_time_s": 49.5, "vehicle_parameters": {**base, "aero.Cz1": 0.7}},
            {"vehicle": "fsae", "lap_time_s": 49.0,
             "vehicle_parameters": {**base, "aero.Cz1": 0.7, "powertrain.P_max": 60e3}}]
    assert parameter_differences(sums)[2] == {"aero.Cz1": 0.7, "powertrain.P_max": 60e3}
    labels = run_labels(["a", "b", "c"], sums)
    assert labels == ["a (50.000 s): aero.Cz1=0.536, powertrain.P_max=4.7e+04",
                      "b (49.500 s): aero.Cz1=0.7, powertrain.P_max=4.7e+04",
                      "c (49.000 s): aero.Cz1=0.7, powertrain.P_max=6e+04"]


def _results(folder, df, summary):
    """A results folder as `pyomo-lap solve` writes it, of a synthetic run (no solve)."""
    from pyomo_lap.results.table import write_results
    write_results(folder, df, summary)
    return folder


BASE = {"track": "synthetic", "vehicle": "car", "periodic": True,
        "vehicle_parameters": {"mass.total": 240.0, "aero.Cz1": 0.5}}


def _runs(folder, cases=(("A", 1.0, 0.5), ("B", 1.01, 0.6), ("C", 0.99, 0.4))):
    """Results folders of the synthetic run at ``factor`` x its speed, with aero.Cz1 = cz."""
    runs = []
    for name, factor, cz in cases:
        df = _run(301)
        df["speed_kmh"] *= factor
        df["t"] /= factor
        sm = dict(BASE, lap_time_s=T / factor,
                  vehicle_parameters=dict(BASE["vehicle_parameters"], **{"aero.Cz1": cz}))
        runs.append(str(_results(folder / name, df, sm)))
    return runs


@pytest.mark.unit
def test_compare_command_with_telemetry(tmp_path):
    """`compare RUN --telemetry lap.csv --every 5m`: the table every 5 m, the delta at the end
    T/49; one run without --telemetry, or a bad step, is refused."""
    from pyomo_lap.cli import main
    runs = _runs(tmp_path, (("A", 1.0, 0.5),))
    s = np.linspace(0.0, L, 1001)
    lap = tmp_path / "lap.csv"
    pd.DataFrame({"s [m]": s, "speed [m/s]": 0.98 * _v(s)}).to_csv(lap, index=False)
    r = CliRunner().invoke(main, ["compare", runs[0], "--telemetry", str(lap), "--every", "5m",
                                  "--out", str(tmp_path / "cmp_tel")])
    assert r.exit_code == 0, r.output
    d = pd.read_csv(tmp_path / "cmp_tel" / "telemetry.csv")
    assert np.allclose(np.diff(d["s [m]"]), 5.0)
    assert d["delta_t [s]"].iloc[-1] == pytest.approx(T / 49, rel=1e-3)
    assert (tmp_path / "cmp_tel" / "telemetry.png").stat().st_size > 10_000
    assert "loses time" in r.output
    r = CliRunner().invoke(main, ["compare", runs[0]])
    assert r.exit_code == 2 and "one run given" in r.output
    r = CliRunner().invoke(main, ["compare", runs[0], runs[0], "--every", "1 parsec"])
    assert r.exit_code == 2 and "--every" in r.output


@pytest.mark.unit
def test_compare_command_with_three_runs(tmp_path):
    """`compare A B C`: each run against A, with the parameter that differs (aero.Cz1) in the
    table and the legend; `compare A B --every 10m`: the two-run table on a 10 m step."""
    from pyomo_lap.cli import main
    runs = _runs(tmp_path)
    r = CliRunner().invoke(main, ["compare", *runs, "--out", str(tmp_path / "cmp3")])
    assert r.exit_code == 0, r.output
    tab = pd.read_csv(tmp_path / "cmp3" / "compare_runs.csv")
    assert list(tab["aero.Cz1"]) == [0.5, 0.6, 0.4]
    assert tab["delta to the first [s]"].tolist() == pytest.approx([0.0, T / 1.01 - T, T / 0.99 - T],
                                                                    rel=1e-6)
    assert "aero.Cz1=0.6" in r.output
    assert (tmp_path / "cmp3" / "compare.png").stat().st_size > 10_000
    # two runs, the table every 10 m: B's delta at the end as before
    r = CliRunner().invoke(main, ["compare", *runs[:2], "--every", "10m", "--out",
                                  str(tmp_path / "cmp2")])
    assert r.exit_code == 0, r.output
    d = pd.read_csv(tmp_path / "cmp2" / "compare.csv")
    assert np.allclose(np.diff(d["s [m]"]), 10.0)
    assert d["delta_t [s]"].iloc[-1] == pytest.approx(T / 1.01 - T, rel=1e-6)


@pytest.mark.integration
def test_a_solved_lap_against_its_own_speed_times_0_98(stadium_lap, tmp_path):
    """The FSAE car's closed lap of the stadium oval (the session's shared lap,
    tests/_shared.py), and a logged lap made of its own time and speed at 98 %: `compare RUN
    --telemetry` finds the logged lap T/49 behind at the end (its distance, the integral of
    the speed, is the car's path: stretched to the run's centreline length)."""
    from _shared import copy_run
    from pyomo_lap.cli import main
    from pyomo_lap.results.table import read_trajectory
    run = copy_run(stadium_lap.folder, tmp_path / "run")
    summary = stadium_lap.summary
    assert stadium_lap.ok
    df = read_trajectory(run)
    pd.DataFrame({"time [s]": df["t"] / 0.98, "speed [m/s]": 0.98 * df["speed"],
                  "a_y [m/s^2]": df["a_y"]}).to_csv(tmp_path / "lap.csv", index=False)
    r = CliRunner().invoke(main, ["compare", str(run), "--telemetry", str(tmp_path / "lap.csv"),
                                  "--out", str(tmp_path / "cmp")])
    assert r.exit_code == 0, r.output
    d = pd.read_csv(tmp_path / "cmp" / "telemetry.csv")
    assert d["delta_t [s]"].iloc[-1] == pytest.approx(summary["lap_time_s"] / 49, abs=1e-6)
    assert "a_y" in r.output


@pytest.mark.unit
def test_a_logged_steered_angle_in_degrees_is_compared_in_degrees(tmp_path):
    """A logged 'Steered Angle [deg]' (read as the steering-wheel angle, in rad) against a
    run whose steering_wheel_angle is in deg: compared, in deg, equal to the logged degrees
    (not skipped as "logged in rad, the run's in deg": the log was in degrees)."""
    s = np.linspace(0.0, L, 3001)
    swa = 90.0 * np.sin(4 * np.pi * s / L)                  # [deg]
    f = tmp_path / "lap.csv"
    pd.DataFrame({"Distance [m]": s, "Speed [km/h]": 3.6 * _v(s),
                  "Steered Angle [deg]": swa}).to_csv(f, index=False)
    log, info = read_telemetry(f)
    run = _run().assign(steering_wheel_angle=lambda r: 90.0 * np.sin(4 * np.pi * r["s"] / L))
    d, ainfo = telemetry_delta(run, log, units=info["units"])
    assert "steering_wheel_angle" in ainfo["compared"], ainfo
    assert not ainfo["skipped"]
    assert np.allclose(d["steering_wheel_angle_log [deg]"], d["steering_wheel_angle_run [deg]"],
                       atol=1e-2)
    assert np.abs(d["steering_wheel_angle_log [deg]"]).max() == pytest.approx(90.0, rel=1e-3)
