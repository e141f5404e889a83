"""Fuel, limits from the car file and stints (issue 38, items 1, 2, 4): the fuel integral
against its closed form, the fuel-flow map against a linear interpolation, the [fuel] and
[limits] sections of a car file (errors naming the field, the command line winning), and a
stint of two laps whose physics is checked (lighter car not slower, the mass carried over,
the state carried over)."""
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest
from click.testing import CliRunner

from pyomo_lap import Track, build_model, load_vehicle
from pyomo_lap.cli import main
from pyomo_lap.vehicle.fuel import DEFAULT_LHV, fuel_flow
from pyomo_lap.vehicle.limits import merge_limits, parse_limits
from pyomo_lap.vehicle.files import VehicleFileError, read_vehicle_file

FSAE = Path(__file__).resolve().parents[1] / "models" / "fsae.toml"


def car_file(tmp_path, extra: str, name="fsae_fuel") -> Path:
    """models/fsae.toml with ``extra`` appended (sections [fuel], [limits])."""
    path = tmp_path / f"{name}.toml"
    path.write_text(FSAE.read_text() + "\n" + extra)
    return path


def straight(length=200.0):
    """A flat, straight open track of ``length`` [m]."""
    s = np.linspace(0.0, length, 201)
    return Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], closed=False, name="straight")


# ------------------------------------------------------------------------------- fuel
@pytest.mark.component
def test_fuel_at_constant_power_on_a_straight_is_its_closed_form(tmp_path):
    """Constant drive force F at constant speed v on a straight of length L: engine power
    P = F v, time L / v, fuel = P L / (v eta LHV) (the values set, no solve); no row added."""
    p = read_vehicle_file(car_file(tmp_path, "[fuel]\nthermal_efficiency = 0.3\n"
                                             "lower_heating_value = 44.0e6\nmass_start = 4.0\n"))
    L, v, F = 150.0, 25.0, 800.0
    m = build_model(straight(), p, length=L, nfe=8, ncp=3)
    n_rows = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True))
    for s in m.s:
        m.q1_dot[s].set_value(v)
        m.f_xa[s].set_value(F)
        m.f_xb[s].set_value(0.0)
    expected = F * v * L / (v * 0.3 * 44.0e6)
    assert pyo.value(m.energy.fuel) == pytest.approx(expected, rel=1e-12)
    assert pyo.value(m.energy.fuel_flow[L]) == pytest.approx(F * v / (0.3 * 44.0e6), rel=1e-12)
    m2 = build_model(straight(), load_vehicle("fsae"), length=L, nfe=8, ncp=3)
    assert m2.energy.component("fuel") is None                # no [fuel], no fuel
    assert n_rows == sum(1 for _ in m2.component_data_objects(pyo.Constraint, active=True))


@pytest.mark.unit
def test_fuel_map_is_the_linear_interpolation_away_from_its_kinks(tmp_path):
    """A fuel-flow map is its polygon (numpy's interpolation) away from the points, and
    continuous through them; one segment: exactly linear."""
    p = read_vehicle_file(car_file(tmp_path, "[fuel]\nmap_power = [0.0, 20e3, 47e3]\n"
                                             "map_flow = [2e-4, 1.6e-3, 5.0e-3]\n"
                                             "mass_start = 4.0\n"))
    from pyomo_lap.vehicle.fuel import MAP_ROUNDING
    P = np.array([5e3, 15e3, 19.9e3, 20e3, 25e3, 40e3])
    dk = 3.4e-3 / 27e3 - 1.4e-3 / 20e3               # the change of slope at 20 kW
    eps = MAP_ROUNDING * 20e3
    x = P - 20e3                                      # above the polygon by dk (hypot - |x|)/2
    polygon = np.interp(P, p.fuel_map_power, p.fuel_map_flow)
    assert fuel_flow(p, P) - polygon == pytest.approx(dk * (np.hypot(x, eps) - abs(x)) / 2,
                                                      rel=1e-6, abs=1e-15)
    assert np.all(fuel_flow(p, P) - polygon <= dk * eps / 2 + 1e-15)
    one = p.replace(fuel_map_power=(0.0, 47e3), fuel_map_flow=(0.0, 4.7e-3))
    assert fuel_flow(one, 33e3) == pytest.approx(3.3e-3, rel=1e-12)
    thermal = p.replace(fuel_map_power=None, fuel_map_flow=None, fuel_efficiency=0.25)
    assert fuel_flow(thermal, 43e3) == pytest.approx(43e3 / (0.25 * DEFAULT_LHV), rel=1e-12)


@pytest.mark.unit
@pytest.mark.parametrize("section, words", [
    ("[fuel]\nthermal_efficiency = 0.3\n", "[fuel] mass_start: missing"),
    ("[fuel]\nmass_start = 3.0\n", "thermal_efficiency or the fuel-flow map"),
    ("[fuel]\nthermal_efficiency = 3.0\nmass_start = 3.0\n", "[fuel] thermal_efficiency = 3.0"),
    ("[fuel]\nthermal_efficiency = 0.3\nmass_start = 300.0\n", "[fuel] mass_start = 300.0"),
    ("[fuel]\nmap_power = [0.0, 1e3]\nmap_flow = [1e-4]\nmass_start = 1.0\n",
     "[fuel] map_power (2 values), map_flow (1 values)"),
    ("[fuel]\nthermal_efficiency = 0.3\nmass_start = 3.0\nburn = 1.0\n", "[fuel] burn"),
    ('[limits]\nengine_energy = "24XJ"\n', "[limits] engine_energy = '24XJ'"),
    ('[limits]\nbrake_wear = "1MJ"\n', "[limits] brake_wear"),
    ('[limits]\nfuel = "3MJ"\n', "[limits] fuel = '3MJ'"),
    # issue 46: a fuel limit on a car without [fuel]; a map step floating point cannot resolve
    ('[limits]\nfuel = "1kg"\n', "[limits] fuel = 1 kg: the car 'fsae' has no [fuel] section"),
    ("[fuel]\nmap_power = [0.0, 1e-300, 47e3]\nmap_flow = [2e-4, 1.6e-3, 5.0e-3]\n"
     "mass_start = 4.0\n", "[fuel] map_power = [0.0, 1e-300, 47000.0]: the map gives"),
])
def test_fuel_and_limits_sections_name_the_field(tmp_path, section, words):
    """A wrong [fuel] or [limits] key: VehicleFileError whose message names it."""
    with pytest.raises(VehicleFileError) as exc:
        read_vehicle_file(car_file(tmp_path, section))
    assert words in str(exc.value)


@pytest.mark.unit
def test_a_fuel_limit_without_fuel_is_refused_by_check_and_before_the_build(tmp_path):
    """``[limits] fuel`` on a car without ``[fuel]``: ``check`` refuses the car file, and
    ``solve --limit fuel=...`` on such a car stops before "building the model" (issue 46)."""
    car = car_file(tmp_path, '[limits]\nfuel = "1kg"\n')
    r = CliRunner().invoke(main, ["check", "--vehicle", str(car)])
    assert r.exit_code == 2 and "[limits] fuel = 1 kg" in r.output, r.output
    r = CliRunner().invoke(main, ["solve", "--length", "150", "--limit", "fuel=1kg",
                                  "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and "limit fuel = 1 kg: the car 'fsae' has no [fuel]" in r.output
    assert "building the model" not in r.output, r.output


@pytest.mark.unit
def test_car_file_limits_merge_with_the_command_line(tmp_path):
    """[limits] in SI; the job's limits win for a name in both, the others are kept."""
    p = read_vehicle_file(car_file(tmp_path, '[limits]\nengine_energy = "2MJ"\n'
                                             'tyre_energy = "50kJ"\n'))
    assert p.limits == {"engine_energy": 2e6, "tyre_energy": 5e4}
    assert merge_limits(p.limits, ["engine_energy=1.5MJ", "fuel=800g"]) == {
        "engine_energy": 1.5e6, "tyre_energy": 5e4, "fuel": pytest.approx(0.8)}
    assert parse_limits({"fuel": 2}) == {"fuel": 2.0}
    with pytest.raises(ValueError, match="limit fuel: .*unknown unit 'MJ'"):
        parse_limits(["fuel=3MJ"])


@pytest.mark.integration
def test_cli_limit_beats_the_car_file_and_the_fuel_limit_holds(tmp_path):
    """A 100 m sector: the car file limits the engine energy loosely and the fuel to 2 g;
    --limit fuel=1g wins: the fuel used is 1 g (the row active), the engine energy then
    eta LHV times it (an independent product), the summary says so."""
    import json

    from pyomo_lap.cli import main
    car = car_file(tmp_path, "[fuel]\nthermal_efficiency = 0.25\nmass_start = 4.0\n"
                             '[limits]\nengine_energy = "1MJ"\nfuel = "2g"\n')
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["solve", "--length", "100", "-q", "--vehicle", str(car),
                                  "--limit", "fuel=1g", "--out", str(out)])
    assert r.exit_code == 0, r.output
    e = json.loads((out / "summary.json").read_text())["energy"]
    assert e["fuel_kg"] == pytest.approx(1e-3, rel=1e-5)
    assert e["engine_J"] == pytest.approx(1e-3 * 0.25 * DEFAULT_LHV, rel=1e-5)
    assert e["limits"]["fuel"]["limit_kg"] == pytest.approx(1e-3)
    assert e["limits"]["engine"]["limit_J"] == pytest.approx(1e6)


# ------------------------------------------------------------------------------ stint
@pytest.mark.integration
def test_two_lap_stint_lighter_car_is_not_slower(tmp_path):
    """Two laps of the dymos oval (coarse mesh): lap 2 starts with the mass less lap 1's fuel
    and in lap 1's exit state; a lighter car that may choose its exit is not slower (to the
    solver's tolerance); the stint table and the lap folders are written."""
    from pyomo_lap.api.stint import solve_stint
    car = car_file(tmp_path, "[fuel]\nthermal_efficiency = 0.1\nmass_start = 20.0\n")
    res = solve_stint("dymos_oval", car, 2, ocp_options={"nfe": 30}, out_dir=tmp_path / "st",
                      echo=lambda *_: None)
    lap1, lap2 = res["laps"]
    assert lap1["mass_start_kg"] == 240.0
    assert lap2["mass_start_kg"] == pytest.approx(240.0 - lap1["fuel_kg"], rel=1e-12)
    assert lap1["fuel_kg"] > 0.05                                 # a lap burns fuel
    assert lap2["lap_time_s"] <= lap1["lap_time_s"] * (1 + 1e-6)
    assert lap2["entry_speed_mps"] == pytest.approx(lap1["exit_speed_mps"], rel=1e-9)
    assert lap1["entry_speed_mps"] == pytest.approx(lap1["exit_speed_mps"], rel=1e-6)  # periodic
    assert pyo.value(res["model"].vehicle.mass.total) == pytest.approx(lap2["mass_start_kg"])
    table = (tmp_path / "st" / "stint.csv").read_text().splitlines()
    assert len(table) == 3 and table[0].startswith("lap,lap_time_s")
    assert (tmp_path / "st" / "stint.xlsx").is_file()
    assert (tmp_path / "st" / "lap_02" / "trajectory.csv").is_file()


@pytest.mark.unit
def test_stint_budget_is_split_by_what_is_left():
    """A stint budget B over N laps: B / N for the first, (B - used) / laps left after."""
    from pyomo_lap.api.stint import StintError, lap_limits
    per_lap = parse_limits(["tyre_energy_fl=30kJ"])
    stint = parse_limits(["tyre_energy=100kJ", "fuel=1kg"])
    first = lap_limits(per_lap, stint, {}, 4)
    assert first["tyre_energy_fl"] == 25e3 and first["tyre_energy_rr"] == 25e3
    assert first["fuel"] == 0.25
    later = lap_limits(per_lap, stint, {"tyre_fl": 10e3, "tyre_rr": 40e3, "fuel": 0.4}, 2)
    assert later["tyre_energy_fl"] == 30e3                     # the per-lap limit is smaller
    assert later["tyre_energy_rr"] == 30e3 and later["fuel"] == pytest.approx(0.3)
    with pytest.raises(StintError, match="fuel used up"):
        lap_limits({}, stint, {"fuel": 1.0}, 1)


@pytest.mark.unit
def test_stint_cli_refuses_bad_limits_in_one_line(tmp_path):
    """``pyomo-lap stint``: a wrong unit for the fuel budget, a fuel limit for a car without
    [fuel]: exit 2, one line naming the limit, nothing written; an open track refused."""
    from pyomo_lap.cli import main
    for args, words in ((["--stint-limit", "fuel=3MJ"], "limit fuel"),
                        (["--limit", "fuel=1kg", "--track", "dymos_oval"], "no [fuel] section")):
        r = CliRunner().invoke(main, ["stint", "--laps", "2", "--out", str(tmp_path / "x"),
                                      *args])
        assert r.exit_code == 2, r.output
        assert words in r.output and len(r.output.strip().splitlines()) == 1, r.output
        assert not (tmp_path / "x").exists()
    from pyomo_lap.api.stint import solve_stint
    with pytest.raises(ValueError, match="is open"):
        solve_stint(straight(), "fsae", 2)


@pytest.mark.integration
def test_stint_tyre_budget_holds_over_the_stint(tmp_path):
    """A tyre-energy budget for a 2-lap stint below what two free laps use: lap 1 keeps each
    tyre within half of it, the stint within all of it, and the busiest tyre's budget is
    spent (the limit binds: the laps are slower than the free lap)."""
    from pyomo_lap.api.stint import solve_stint
    opts = {"nfe": 30}
    free = solve_stint("dymos_oval", "fsae", 1, ocp_options=opts, echo=lambda *_: None)["laps"][0]
    tyres = ("tyre_fl_J", "tyre_fr_J", "tyre_rl_J", "tyre_rr_J")
    budget = 1.6 * max(free[t] for t in tyres)             # 80 % of two free laps' busiest tyre
    res = solve_stint("dymos_oval", "fsae", 2, ocp_options=opts, echo=lambda *_: None,
                      stint_limits={"tyre_energy": budget})
    lap1, lap2 = res["laps"]
    assert all(lap1[t] <= budget / 2 * (1 + 1e-6) for t in tyres)
    assert all(lap1[t] + lap2[t] <= budget * (1 + 1e-6) for t in tyres)
    busiest = max(tyres, key=lambda t: lap1[t] + lap2[t])
    assert lap1[busiest] + lap2[busiest] == pytest.approx(budget, rel=1e-4)
    assert lap1["lap_time_s"] > free["lap_time_s"]


@pytest.mark.integration
def test_stint_out_of_fuel_stops_and_a_fuel_budget_shares_the_tank(tmp_path):
    """A tank of 1.5 free laps' fuel: StintError in lap 2, both laps in its table and
    written; with the tank as the stint's fuel budget both laps are solved and burn at most
    the tank, the first at most half of it."""
    from pyomo_lap.api.stint import StintError, solve_stint
    opts = {"nfe": 30}
    big = car_file(tmp_path, "[fuel]\nthermal_efficiency = 0.25\nmass_start = 10.0\n", "big")
    fuel = solve_stint("dymos_oval", big, 1, ocp_options=opts,
                       echo=lambda *_: None)["laps"][0]["fuel_kg"]
    tank = 1.5 * fuel
    car = car_file(tmp_path, f"[fuel]\nthermal_efficiency = 0.25\nmass_start = {tank!r}\n")
    with pytest.raises(StintError, match="out of fuel in lap 2") as exc:
        solve_stint("dymos_oval", car, 2, ocp_options=opts, out_dir=tmp_path / "a",
                    echo=lambda *_: None)
    assert len(exc.value.laps) == 2 and exc.value.laps[0]["fuel_kg"] < tank
    assert len((tmp_path / "a" / "stint.csv").read_text().splitlines()) == 3
    res = solve_stint("dymos_oval", car, 2, ocp_options=opts, stint_limits={"fuel": tank},
                      echo=lambda *_: None)
    lap1, lap2 = res["laps"]
    assert lap1["fuel_kg"] <= tank / 2 * (1 + 1e-6)
    assert lap1["fuel_kg"] + lap2["fuel_kg"] <= tank * (1 + 1e-6)
    assert lap2["fuel_left_kg"] >= -1e-6 * tank              # the tank holds (to the solver)
