"""The channels on a fixed distance step (pyomo_lap.results.fixed_step, `solve --every`,
`pyomo-lap export`): the collocation polynomials against closed forms, a solved sector's speed
against its mesh values and the Lebesgue bound, a closed lap every metre, and the export of a
folder against the solve that writes the step itself."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from pyomo_lap.ocp.collocation import collocation_interpolate  # noqa: E402
from pyomo_lap.results.fixed_step import (fixed_step_grid,  # noqa: E402
                                       track_coordinate)

# collocation points on [0, 1] in closed form (not pyomo.dae's tables): Radau IIA, Gauss-Legendre
RADAU = {2: [1 / 3, 1.0], 3: [(4 - math.sqrt(6)) / 10, (4 + math.sqrt(6)) / 10, 1.0]}
LEGENDRE = {2: [0.5 - math.sqrt(3) / 6, 0.5 + math.sqrt(3) / 6]}


def _mesh(breaks, tau):
    """Mesh points: the boundaries and the collocation points ``tau`` of every element."""
    pts = [breaks[0]]
    for a, b in zip(breaks[:-1], breaks[1:]):
        pts += [a + (b - a) * x for x in tau]
        if tau[-1] < 1.0:
            pts.append(b)
    return np.array(pts)


def _piecewise(breaks, coeffs, x):
    """The polynomial ``coeffs[j]`` (numpy.polyval order, in x - breaks[j]) on element j."""
    x = np.asarray(x, float)
    j = np.clip(np.searchsorted(breaks, x, side="right") - 1, 0, len(breaks) - 2)
    return np.array([np.polyval(coeffs[k], xi - breaks[k]) for k, xi in zip(j, x)])


@pytest.mark.unit
@pytest.mark.parametrize("scheme,ncp", [("LAGRANGE-RADAU", 3), ("LAGRANGE-RADAU", 2),
                                        ("LAGRANGE-LEGENDRE", 2)])
def test_the_polynomials_of_degree_ncp_are_reproduced_within_each_element(scheme, ncp):
    """A state that is, on each element, its own polynomial of degree ncp (continuous or
    not: the interpolation is element by element) is reproduced exactly between the points;
    an algebraic variable of degree ncp - 1 through the collocation points too; at the mesh
    points the values are the mesh values, bit for bit."""
    rng = np.random.default_rng(7)
    breaks = np.array([0.0, 2.0, 5.5, 6.0, 9.25])
    tau = (RADAU if scheme == "LAGRANGE-RADAU" else LEGENDRE)[ncp]
    nodes = _mesh(breaks, tau)
    q = np.linspace(0.0, breaks[-1], 371)
    for kind, degree in (("state", ncp), ("all", ncp), ("algebraic", ncp - 1)):
        if kind == "all" and scheme == "LAGRANGE-LEGENDRE":
            degree = ncp + 1                  # start, collocation points and end
        coeffs = rng.normal(size=(len(breaks) - 1, degree + 1))
        if kind != "algebraic":   # a state is continuous: each element starts where the last ended
            for k in range(1, len(coeffs)):
                coeffs[k, -1] = np.polyval(coeffs[k - 1], breaks[k] - breaks[k - 1])
        y = _piecewise(breaks, coeffs, nodes)
        # an element's end point is its last collocation point (Radau): the element's value
        ends = np.flatnonzero(np.isin(nodes, breaks[1:]))
        y[ends] = [np.polyval(coeffs[k], breaks[k + 1] - breaks[k]) for k in range(len(coeffs))]
        got = collocation_interpolate(breaks, nodes, y, q, kind=kind, scheme=scheme)
        inner = ~np.isin(q, nodes)
        want = _piecewise(breaks, coeffs, q)
        np.testing.assert_allclose(got[inner], want[inner], rtol=0, atol=1e-11)
        at_nodes = collocation_interpolate(breaks, nodes, y, nodes, kind=kind, scheme=scheme)
        assert np.array_equal(at_nodes, y)
    # several channels at once give the same as one by one
    Y = np.column_stack([np.sin(nodes), nodes ** 2])
    both = collocation_interpolate(breaks, nodes, Y, q, scheme=scheme)
    np.testing.assert_allclose(both[:, 1], collocation_interpolate(breaks, nodes, Y[:, 1], q,
                                                                   scheme=scheme), rtol=1e-13)


@pytest.mark.unit
def test_the_grid_and_the_track_coordinate_in_closed_form():
    np.testing.assert_array_equal(fixed_step_grid(10.0, 3.0), [0, 3, 6, 9, 10])
    np.testing.assert_array_equal(fixed_step_grid(9.0, 3.0), [0, 3, 6, 9])
    g = fixed_step_grid(614.1635, 1.0)
    assert len(g) == 616 and g[-1] == 614.1635 and np.all(np.diff(g)[:-1] == 1.0)
    # a closed lap from the line: 0 .. L increasing; one from 7 m: wraps after the line only
    np.testing.assert_array_equal(track_coordinate(0.0, [0, 5, 10], 10.0), [0, 5, 10])
    np.testing.assert_allclose(track_coordinate(7.0, [0, 3, 4, 10], 10.0), [7, 10, 1, 7])
    np.testing.assert_array_equal(track_coordinate(7.0, [0, 3, 4]), [7, 10, 11])
    for bad, text in ((0.0, "expected a finite step > 0 m"), (math.nan, "finite step"),
                      (11.0, r"at most the sector's length \(10 m\)")):
        with pytest.raises(ValueError, match=text) as e:
            fixed_step_grid(10.0, bad)
        assert "\n" not in str(e.value)


@pytest.mark.component
def test_a_solved_sectors_speed_is_its_polynomial_between_the_mesh_points(solved_sector):
    """Nordschleife 1200-1360 m (Radau, ncp 3): on a 0.1 m step the speed along the track
    q1_dot (a state) and the forward speed v_3x (computed from the states) at the mesh points
    are the mesh's; between them q1_dot differs from straight lines (it is the polynomial) and
    within each element stays within the bound of Lagrange interpolation through the
    element's points (the Lebesgue constant, computed here); the speed is sqrt(v_3x^2 + v_3y^2)
    on every row (computed, not interpolated); the rows were computed with the algebraic loop
    solved at every one; the time increases."""
    from pyomo_lap.results.fixed_step import model_fixed_step
    _, _, m, _, df = solved_sector()
    fx = model_fixed_step(m, df, 0.1)
    info = fx.attrs["fixed_step"]
    assert info["method"] == "computed" and info["algebraic_loop_failed"] == 0
    np.testing.assert_allclose(fx["speed"], np.sqrt(fx["v_3x"] ** 2 + fx["v_3y"] ** 2),
                               rtol=1e-14, atol=0)
    on_mesh = np.isin(np.round(fx["s_sector"], 9), np.round(df["s_sector"], 9))
    np.testing.assert_array_equal(fx["v_3x"][on_mesh], df["v_3x"][np.isin(
        np.round(df["s_sector"], 9), np.round(fx["s_sector"][on_mesh], 9))])
    nodes, v = df["s_sector"].to_numpy(), df["q1_dot"].to_numpy()
    g, vi = fx["s_sector"].to_numpy(), fx["q1_dot"].to_numpy()
    assert np.all(np.diff(fx["t"]) > 0) and np.all(np.diff(fx["s"]) > 0)
    on = np.isin(np.round(g, 9), np.round(nodes, 9))
    assert on.sum() >= 17                          # the element boundaries, every 10 m
    np.testing.assert_array_equal(vi[on], v[np.isin(np.round(nodes, 9), np.round(g[on], 9))])
    assert np.abs(vi - np.interp(g, nodes, v)).max() > 1e-3
    breaks = np.array(list(m.s.get_finite_elements()))
    for a, b in zip(breaks[:-1], breaks[1:]):
        pts = nodes[(nodes >= a - 1e-9) & (nodes <= b + 1e-9)]
        x = np.linspace(a, b, 401)
        lebesgue = max(sum(abs(np.prod([(xi - o) / (pk - o) for o in pts if o != pk]))
                           for pk in pts) for xi in x)
        lo, hi = v[np.isin(nodes, pts)].min(), v[np.isin(nodes, pts)].max()
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        sel = (g >= a) & (g <= b)
        assert np.all(np.abs(vi[sel] - mid) <= lebesgue * half + 1e-9), (a, b)


def _solve(args, out):
    from pyomo_lap.cli import main
    r = CliRunner().invoke(main, ["solve", *args, "-q", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.integration
def test_a_closed_lap_every_metre(tmp_path):
    """`solve --full-lap --every 1` on the stadium oval: rows exactly 1 m apart, distance and
    time strictly increasing, the last row at the lap's length; the mesh rows beside them
    also end at the lap's length (not 0); the manifest lists every file; the self-check
    does not fail (20 m elements: it may warn)."""
    import _stadium

    from pyomo_lap.results.table import read_manifest, read_summary, read_trajectory
    track = _stadium.write("tum", tmp_path)
    run = _solve(["--track", str(track), "--full-lap", "--every", "1",
                  "--ocp-option", "element_length=20"], tmp_path / "lap")
    summary = read_summary(run)
    L = summary["length_m"]
    assert L == pytest.approx(_stadium.LENGTH, abs=0.5)
    d = pd.read_csv(run / "trajectory.csv")
    s = d["s [m]"].to_numpy()
    assert s[0] == 0.0 and s[-1] == pytest.approx(L, abs=1e-9)
    np.testing.assert_allclose(np.diff(s)[:-1], 1.0, rtol=0, atol=1e-9)
    assert 0 < s[-1] - s[-2] <= 1.0 + 1e-9
    assert np.all(np.diff(d["t [s]"]) > 0)
    assert d["t [s]"].iloc[-1] == pytest.approx(summary["lap_time_s"], rel=1e-9)
    mesh = read_trajectory(run, mesh=True)
    assert len(mesh) < len(d) and np.all(np.diff(mesh["s"]) > 0)
    assert mesh["s"].iloc[-1] == pytest.approx(L, abs=1e-9)
    listed = set(read_manifest(run)["files"])
    assert {p.name for p in run.iterdir() if not p.name.startswith(".")} == listed
    assert summary["self_check"]["verdict"] != "fail" and summary["trajectory_step_m"] == 1.0


@pytest.mark.integration
def test_export_of_a_folder_is_the_table_solve_every_writes(sector_run, tmp_path):
    """`pyomo-lap export RUN --every 2` of a 300 m sector gives the same trajectory as `solve
    --every 2` of the same job; validate passes on the --every folder (it reads the mesh
    rows); the export inside RUN is in RUN's manifest, so the next solve into RUN replaces
    it; bad steps stop with one line. RUN: a copy of the session's shared run of the job
    (tests/_shared.py, solved through ``solve_sector``)."""
    from _shared import copy_run
    from pyomo_lap.cli import main
    from pyomo_lap.results.table import read_trajectory
    job = ["--length", "300"]
    every = _solve([*job, "--every", "2"], tmp_path / "every")
    base = copy_run(sector_run.folder, tmp_path / "base")
    r = CliRunner().invoke(main, ["export", str(base), "--every", "2"])
    assert r.exit_code == 0, r.output
    out = base / "export_every_2m"
    a, b = read_trajectory(every), read_trajectory(out)
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(read_trajectory(every, mesh=True), read_trajectory(out, mesh=True))
    assert np.all(np.diff(a["s_sector"])[:-1] == 2.0) and a["s_sector"].iloc[-1] == 300.0
    r = CliRunner().invoke(main, ["validate", str(every), "--no-plots", "--no-feedback"])
    assert r.exit_code == 0 and "verdict: PASS" in r.output, r.output
    _solve(job, base)                                       # replaces RUN, its export with it
    assert not out.exists()
    for bad in ("0", "nan", "-1"):
        r = CliRunner().invoke(main, ["export", str(base), "--every", bad])
        assert r.exit_code == 2 and "expected a finite step > 0 m" in r.output
        assert len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["solve", *job, "--every", "400", "-q", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "at most the sector's length (300 m)" in r.output, r.output
    r = CliRunner().invoke(main, ["solve", *job, "--every", "0", "-q", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--every 0" in r.output, r.output


def _geared_car():
    """The fsae car with a flat-torque engine and four gears: the gear at a speed is the
    shortest one whose engine speed is below the rev limit (tests/test_logger_channels.py)."""
    from pyomo_lap.vehicle.car import load_vehicle
    return load_vehicle("fsae").replace(engine_speed=(100.0, 1300.0), engine_torque=(60.0, 60.0),
                                        gear_ratios=(3.0, 2.0, 1.5, 1.2), final_drive=3.5,
                                        drivetrain_efficiency=0.9)


@pytest.mark.unit
def test_the_logger_channels_are_computed_again_on_the_step_not_interpolated():
    """Mesh rows accelerating through the gears at the power limit (f_xa v = P_max, 100 %
    throttle) then braking: on a 0.1 m step the gear is, at every row, the hand rule's gear at
    the row's speed (a whole number), the throttle and the brake stay within [0, 100] %; the
    polynomial through the mesh values (what the step gave before) leaves both."""
    from pyomo_lap.results.fixed_step import fixed_step_table
    from pyomo_lap.results.logger import add_logger_channels
    p = _geared_car()
    breaks = np.linspace(0.0, 40.0, 9)
    nodes = _mesh(breaks, RADAU[3])
    v = 15.0 + 10.0 * np.tanh((nodes - 20.0) / 6.0) + 0.8 * np.sin(nodes)  # ~5-25 m/s: gears 1-3
    drive = nodes < 30.0
    df = pd.DataFrame({"s": nodes, "s_sector": nodes, "v_3x": v,
                       "f_xa": np.where(drive, p.P_max / v, 0.0),
                       "f_xb": np.where(drive, 0.0, -1500.0 * (1 + np.sin(3 * nodes))),
                       **{f"D_{w}": np.full(len(nodes), 1000.0) for w in ("11", "12", "21", "22")}})
    add_logger_channels(df, p)
    fx = fixed_step_table(df, 0.1, breaks, car=p)
    raw = fixed_step_table(df, 0.1, breaks)                  # no car: interpolated
    R, limit = p.wheel_radius, 1300.0
    by_hand = [1 + next(k for k, g in enumerate((3.0, 2.0, 1.5, 1.2)) if x * 3.5 * g / R <= limit)
               for x in fx["v_3x"]]
    np.testing.assert_array_equal(fx["gear"], by_hand)
    assert fx["throttle"].between(0, 100).all() and fx["brake"].between(0, 100).all()
    assert raw["throttle"].max() > 100 and raw["brake"].min() < 0
    assert np.any(raw["gear"] % 1 != 0)


@pytest.mark.integration
def test_throttle_and_brake_of_a_solved_sector_stay_within_0_and_100_percent_on_the_step(tmp_path):
    """`solve --vehicle f1_2014 --track monza --every 2` into the first chicane (full power on
    the straight, then braking) and its `export --every 2`: throttle and brake within
    [0, 100] % on every row; where the drive force is at the power limit (f_xa v_3x >=
    99.9 % of P_max) the throttle is 100 % within 0.1 %, as its definition says."""
    from pyomo_lap.cli import main
    from pyomo_lap.results.table import read_trajectory
    from pyomo_lap.vehicle.car import load_vehicle
    job = ["--vehicle", "f1_2014", "--track", "monza", "--start", "400", "--length", "500",
           "--ocp-option", "element_length=10"]
    run = _solve([*job, "--every", "2"], tmp_path / "every")
    r = CliRunner().invoke(main, ["export", str(run), "--every", "2"])
    assert r.exit_code == 0, r.output
    p = load_vehicle("f1_2014")
    mesh = read_trajectory(run, mesh=True)
    assert (mesh["throttle"] >= 99.99).sum() >= 3 and (mesh["brake"] > 50).sum() >= 3
    for table in (read_trajectory(run), read_trajectory(run / "export_every_2m")):
        assert table["throttle"].between(0, 100).all(), table["throttle"].agg(["min", "max"])
        assert table["brake"].between(0, 100).all(), table["brake"].agg(["min", "max"])
        limited = (table["f_xa"] * table["v_3x"] >= 0.999 * p.P_max).to_numpy()
        assert limited.sum() >= 10
        assert (table["throttle"][limited] >= 99.9).all()


def _car_file(name):
    import tomllib

    from pyomo_lap.vehicle.car import models_dir
    return tomllib.loads((models_dir() / f"{name}.toml").read_text())


def _element_starts(mesh):
    """Per mesh element j >= 1: its rows and the row of its start (the last row of j - 1)."""
    el = mesh["element"].to_numpy()
    return {j: np.r_[np.flatnonzero(el == j - 1)[-1], np.flatnonzero(el == j)]
            for j in range(1, el.max() + 1)}


@pytest.mark.integration
@pytest.mark.parametrize("car", ["f1_2014_hybrid", "f1_2014"])
def test_every_row_on_the_step_keeps_the_bounds_the_solvers_rows_keep(car, tmp_path):
    """`solve --every 1` of Monza 400-700 m (full power on the straight, then braking into the
    first chicane: the hybrid harvests there) and `export --every 1` of it. On every row of
    both: the drive force f_xa >= 0 and the braking force f_xb <= 0 (within 1 N), the steer
    within the car file's delta_max; for the hybrid the powers within the car file's [hybrid]
    limits (within 1 W) and the harvest within the rear brakes' power -(1 - brake_ratio) f_xb
    v_3x; throttle and brake never both above 1 % in an element whose mesh rows (its start
    and its points) never have both; the rows at the mesh points are the mesh rows."""
    from pyomo_lap.cli import main
    from pyomo_lap.results.table import read_trajectory
    run = _solve(["--vehicle", car, "--track", "monza", "--start", "400", "--length", "300",
                  "--ocp-option", "element_length=10", "--every", "1"], tmp_path / "every")
    r = CliRunner().invoke(main, ["export", str(run), "--every", "1"])
    assert r.exit_code == 0, r.output
    spec = _car_file(car)
    mesh = read_trajectory(run, mesh=True)
    starts = _element_starts(mesh)
    both = (mesh["throttle"] > 1.0) & (mesh["brake"] > 1.0)
    pedals = {j: both.to_numpy()[rows].any() for j, rows in starts.items()}
    assert (mesh["brake"] > 50).sum() >= 3 and (mesh["throttle"] >= 99.99).sum() >= 3
    for table in (read_trajectory(run), read_trajectory(run / "export_every_1m")):
        assert len(table) == 301
        assert table["f_xa"].min() >= -1.0 and table["f_xb"].max() <= 1.0
        assert table["delta"].abs().max() <= spec["steering"]["delta_max"] + 1e-9
        if "hybrid" in spec:
            h, kb = spec["hybrid"], spec["powertrain"]["brake_ratio"]
            assert table["power_harvest"].max() <= h["harvest_power_max"] + 1.0
            assert table["power_deploy"].between(-1.0, h["deploy_power_max"] + 1.0).all()
            rear = -(1.0 - kb) * table["f_xb"] * table["v_3x"]
            assert (table["power_harvest"] <= rear + 1.0).all()
            assert table["harvest"].max() > 1.0         # harvesting, its own channel
        overlap = (table["throttle"] > 1.0) & (table["brake"] > 1.0)
        assert all(pedals[j] for j in table["element"][overlap]), \
            table.loc[overlap, ["s_sector", "throttle", "brake"]]
        at = np.isin(np.round(table["s_sector"], 9), np.round(mesh["s_sector"], 9))
        assert at.sum() >= 30
        rows = mesh.set_index(np.round(mesh["s_sector"], 9)).loc[np.round(table["s_sector"][at], 9)]
        pd.testing.assert_frame_equal(table[at].reset_index(drop=True),
                                      rows.reset_index(drop=True)[table.columns], check_exact=True)
