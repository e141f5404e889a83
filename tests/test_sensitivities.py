"""Lap-time sensitivities from the multipliers (pyomo_lap.analysis.sensitivities).

The integration test compares them with central finite differences of two warm-started
re-solves on a short sector with a corner (Nordschleife 1150-1550 m, 10 m elements).

Tolerances. The envelope theorem gives the derivative of the optimal *objective* (sector time
plus the penalties of eq (41), column ``dobj_dp``), the adjoint KKT solve that of the sector
time (``dT_dp``), both exact up to the solver's tolerance. The reference solves run with
``tol = 1e-10`` (:data:`FD_SOLVER_OPTIONS`; IPOPT's default 1e-5 on the scaled problem leaves
errors of ~1e-7 s in the objective, as large as its change over a small step) and a relative
step of 1e-3: the central difference's truncation error is then O(1e-6) relative and the
re-solves' error ~1e-11 s / (2 h dT/dp), so each must agree with its finite difference to 1e-4
(measured: 1e-6 and better). The objective's derivative differs from the sector time's by
the penalties' own response (0.3-2.5 % on this sector), which the test also shows.
"""
import numpy as np
import pytest
from _shared import copy_run

from pyomo_lap.analysis import lagrangian
from pyomo_lap.analysis import sensitivities as sens

START, LENGTH = 1150.0, 400.0


@pytest.mark.unit
def test_parameters_are_the_vehicle_file_keys_with_units():
    from pyomo_lap import load_vehicle
    from pyomo_lap.vehicle.schema import OPTIONAL_KEYS, SECTIONS, field_of
    keys = [a for sec in SECTIONS.values() for a in sec.values()]
    assert list(sens.PARAMETERS) == keys and len(keys) == 42
    # a car's table: its file's keys; of the optional ones, those it gives (not 0 for the
    # height of the centre of pressure and the drive split, terms its rows leave out)
    absent = {field_of(k) for k in OPTIONAL_KEYS} - {"width", "tw1", "tw2"}
    assert list(sens.parameters_of(load_vehicle("fsae"))) == [k for k in keys if k not in absent]
    f1 = load_vehicle("f1_2014")
    assert {"T_b1", "T_b2", "h_cp"} <= set(sens.parameters_of(f1)) and "alpha_max" not in set(sens.parameters_of(f1))
    assert sens.parameter_unit("P_max") == "W"
    assert sens.parameter_unit("k1") == "N/m"
    assert sens.parameter_unit("friction_scale") == "-"


@pytest.mark.unit
def test_symbolic_rows_equal_the_numeric_rows():
    """The rows with the vehicle parameters as CasADi symbols, evaluated at the car's values,
    are the rows the model is built from (point_row_list with floats), and their derivative
    in a parameter matches a central difference of the numeric rows."""
    import casadi as ca
    from pyomo_lap.ocp.build import OCP_CONFIG
    from pyomo_lap.ocp.full_model import POINT_VARIABLES, TRACK_INPUTS, point_row_list
    from pyomo_lap.vehicle.car import build_chain, load_vehicle

    p = load_vehicle("fsae")
    cfg = OCP_CONFIG()
    rng = np.random.default_rng(1)
    w = dict(zip(POINT_VARIABLES, rng.uniform(-0.1, 0.1, len(POINT_VARIABLES))))
    w.update(q1_dot=25.0, f_xa=800.0, f_xb=-200.0, delta=0.05, f_11z=700.0, f_12z=500.0,
             f_21z=750.0, f_22z=550.0, f_3x=300.0, f_3y=900.0, m_3z=50.0, dt_ds=0.04)
    x = [w[k] for k in POINT_VARIABLES]
    R = np.eye(3)
    track = list(R.ravel()) + [0.001, -0.002, 0.01] + [0.0, 1e-5, -2e-4]
    assert len(track) == len(TRACK_INPUTS)

    def numeric(q):
        rows = point_row_list(q, build_chain(q), cfg, x, track)
        return np.array([float(r[2]) - (float(r[4]) if r[0] == "power_limit" else 0.0)
                         for r in rows])

    names = list(sens.parameters_of(p))
    P = ca.SX.sym("p", len(names))
    from pyomo_lap.vehicle.schema import SymbolicVehicle
    sym = SymbolicVehicle(p, {k: P[i] for i, k in enumerate(names)})
    rows = point_row_list(sym, build_chain(sym), cfg, x, track)
    g = ca.vertcat(*[r[2] - (r[4] if r[0] == "power_limit" else 0) for r in rows])
    f = ca.Function("g", [P], [g, ca.jacobian(g, P)])
    p0 = np.array([getattr(p, k) for k in names])
    val, jac = (np.asarray(a) for a in f(p0))
    ref = numeric(p)
    np.testing.assert_allclose(val.ravel(), ref, rtol=1e-12, atol=1e-9)
    for k in ("m", "h", "Cz2", "mu_y0", "k1", "pK1", "E", "P_max"):
        i = names.index(k)
        h = 1e-6 * max(1.0, abs(p0[i]))
        fd = (numeric(p.replace(**{k: p0[i] + h})) - numeric(p.replace(**{k: p0[i] - h}))) / (2 * h)
        np.testing.assert_allclose(jac[:, i], fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max()),
                                   err_msg=k)


@pytest.mark.component
def test_bounds_follow_the_builder_and_errors():
    import pyomo.environ as pyo
    from pyomo_lap import build_model, load_track, load_vehicle
    tr, p = load_track("nordschleife"), load_vehicle("fsae")
    m = build_model(tr, p, start=START, length=100.0, named_subexpressions=False)
    lagrangian._check_bounds(m, p, m.problem.options)          # the builder's bounds
    with pytest.raises(ValueError, match="no multipliers"):
        sens.lap_time_sensitivities(m)                   # suffixes not declared
    sens.declare_multiplier_suffixes(m)
    with pytest.raises(ValueError, match="no multipliers"):
        sens.lap_time_sensitivities(m)                   # declared but not solved
    first = sorted(m.s)[3]
    m.delta[first].setub(0.3)
    with pytest.raises(RuntimeError, match="does not follow the builder"):
        lagrangian._check_bounds(m, p, m.problem.options)
    ms = build_model(tr, p, start=START, length=100.0, model="single-track")
    with pytest.raises(NotImplementedError, match="need one of the models 'full'"):
        sens.lap_time_sensitivities(ms)
    assert isinstance(m.dual, pyo.Suffix)


@pytest.fixture(scope="module")
def solved_with_multipliers():
    import pyomo.environ as pyo
    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=START, length=LENGTH,
                    named_subexpressions=False)
    initialize_model(m)
    sens.declare_multiplier_suffixes(m)
    rep = solve_model(m, options={"tol": 1e-10, "acceptable_tol": 1e-9})
    assert rep.ok, rep.termination_condition
    table = sens.lap_time_sensitivities(m)
    # the table names the parameters by their dotted names; here by field for brevity
    from pyomo_lap.vehicle.schema import FIELD_OF_KEY
    table["parameter"] = [FIELD_OF_KEY.get(k, k) for k in table["parameter"]]
    table = table.set_index("parameter")
    assert pyo.value(m.objective) == pytest.approx(table.attrs["objective_s"])
    assert table.attrs["method"] == "adjoint" and table.attrs["adjoint"]["residual"] < 1e-10
    return m, table


@pytest.mark.integration
@pytest.mark.parametrize("name", ["P_max", "m", "friction_scale", "tw1", "h"])
def test_sensitivities_match_finite_differences(solved_with_multipliers, name):
    m, table = solved_with_multipliers
    # a step of 1e-4: the sector time's response to the parameters is curved enough that a
    # central difference over 1e-3 is off by 5e-4 (P_max) to 4e-3 (friction) relative, while
    # the re-solves at tol 1e-10 leave the difference over 1e-4 accurate to about 1e-8
    fd = sens.finite_difference(m, name, rel_step=1e-4)
    dT, dobj = table.loc[name, "dT_dp"], table.loc[name, "dobj_dp"]
    assert dT == pytest.approx(fd["dT_dp"], rel=1e-4), (name, dT, fd)
    assert dobj == pytest.approx(fd["dobj_dp"], rel=1e-4), (name, dobj, fd)
    # the penalties' response: the two derivatives differ, by less than 10 % here (the rate
    # penalties of controls that are states, OCP options w_steer_rate and w_force_rate)
    assert dobj == pytest.approx(dT, rel=0.1) and dobj != pytest.approx(dT, rel=1e-4)


@pytest.mark.integration
def test_sensitivity_table(solved_with_multipliers):
    m, table = solved_with_multipliers
    assert len(table) == len(sens.parameters_of(m.vehicle.built_for)) + 1
    assert list(table.reset_index().columns) == list(sens.SENSITIVITY_COLUMNS)
    # physics: more power, grip, downforce: faster; more mass, drag: slower
    assert table.loc["P_max", "dT_dp"] < 0 and table.loc["mu_y0", "dT_dp"] < 0
    assert table.loc["Cz2", "dT_dp"] < 0 and table.loc["friction_scale", "dT_dp"] < 0
    assert table.loc["m", "dT_dp"] > 0 and table.loc["Cx", "dT_dp"] > 0
    used = table.drop(index="width")     # the overall width: not in the full model's rows
    assert table.loc["width", "dT_dp"] == 0.0 == table.loc["width", "dobj_dp"]
    assert (used["dT_dp"] != used["dobj_dp"]).all()
    # rho and S enter only as their product (drag and downforce): the same relative effect
    assert table.loc["rho", "dT_1pct"] == pytest.approx(table.loc["S", "dT_1pct"], rel=1e-6)
    np.testing.assert_allclose(table["dT_1pct"], 0.01 * table["value"] * table["dT_dp"])
    # the friction scale is the chain rule over both friction coefficients
    for col in ("dT_dp", "dobj_dp"):
        assert table.loc["friction_scale", col] == pytest.approx(
            1.5 * table.loc["mu_x0", col] + 1.5 * table.loc["mu_y0", col], rel=1e-12)
    # only the fields the entry speed estimate reads have an entry-speed part
    entry = table["dT_dp_entry"]
    assert set(entry[entry != 0].index) <= {"m", "mu_x0", "mu_y0", "Cz1", "Cz2", "S", "Cx",
                                            "rho", "P_max", "friction_scale"}



@pytest.mark.integration
def test_a_failed_adjoint_falls_back_to_the_objective(solved_with_multipliers, monkeypatch):
    m, table = solved_with_multipliers

    def singular(*args, **kwargs):
        raise RuntimeError("the KKT matrix is singular (test)")
    monkeypatch.setattr(sens, "_sector_time_adjoint", singular)
    with pytest.warns(RuntimeWarning, match="singular"):
        fallback = sens.lap_time_sensitivities(m, parameters=["P_max", "m"]).set_index("parameter")
    assert fallback.attrs["method"].startswith("objective")
    np.testing.assert_allclose(fallback["dT_dp"], table.loc[["P_max", "m"], "dobj_dp"], rtol=1e-12)


@pytest.mark.integration
def test_solve_sector_and_cli_write_the_sensitivities(tmp_path, sector_run):
    import pandas as pd
    from click.testing import CliRunner
    from pyomo_lap import solve_sector
    from pyomo_lap.cli import main
    from pyomo_lap.results.export import SENSITIVITY_HEADERS
    from pyomo_lap.results.table import read_sensitivities
    res = solve_sector(start=START, length=200.0, sensitivities=True, out_dir=tmp_path / "r",
                       echo=lambda *_: None, progress=None)
    m, rep, df, summary = res                          # still unpacks as before
    assert res.model is m and res.summary is summary
    table = res.sensitivities
    assert list(table.columns) == list(sens.SENSITIVITY_COLUMNS)
    assert len(table) == len(sens.parameters_of(m.vehicle.built_for)) + 1 == 38
    assert table.attrs["method"] == "adjoint"
    sheet = pd.read_excel(tmp_path / "r" / "results.xlsx", sheet_name="sensitivities")
    assert list(sheet.columns) == list(SENSITIVITY_HEADERS.values())
    np.testing.assert_allclose(sheet["d lap time / d parameter [s per unit]"], table["dT_dp"])
    pd.testing.assert_frame_equal(read_sensitivities(tmp_path / "r"), table, check_like=True)
    assert (tmp_path / "r" / "plots" / "sensitivities.png").stat().st_size > 1000
    assert "sensitivities_s" in summary["timing"]
    assert summary["solver_options"] == sens.SENSITIVITY_SOLVER_OPTIONS     # solved tighter
    assert table.attrs["method"] == "adjoint"
    # without the option: no table, no sheet; the CLI has the flag
    # (the session's solve without the option, tests/_shared.py)
    plain = copy_run(sector_run.folder, tmp_path / "n")
    assert "sensitivities" not in sector_run.summary
    assert "sensitivities" not in pd.ExcelFile(plain / "results.xlsx").sheet_names
    # pyomo-lap plot: the tornado chart among the figures of a run that has sensitivities only
    from pyomo_lap.plots.figures import plot_results
    names = {f.stem for f in plot_results(plain, figures=None)}
    assert "speed" in names and "sensitivities" not in names
    with pytest.raises(ValueError, match="--sensitivities"):
        plot_results(plain, figures=["sensitivities"])
    assert "sensitivities" in {f.stem for f in plot_results(tmp_path / "r", out_dir=tmp_path / "p")}
    out = CliRunner().invoke(main, ["solve", "--start", "1150", "--length", "200",
                                    "--sensitivities", "--out", str(tmp_path / "c")])
    assert out.exit_code == 0, out.output
    assert "sensitivities in" in out.output
    assert "sensitivities" in pd.ExcelFile(tmp_path / "c" / "results.xlsx").sheet_names
    with pytest.raises(ValueError, match="need one of the models 'full'"):
        solve_sector(start=START, length=200.0, model="single-track", sensitivities=True,
                     out_dir=None, echo=lambda *_: None)


@pytest.mark.integration
def test_the_asl_paths_give_the_same_sensitivities():
    """Independent solver paths: Pyomo's classic ``ipopt`` (NL file, the AMPL library's
    duals and bound multipliers, no presolve) and ``ipopt_v2`` (whose bound multipliers are
    those of the scaled problem: its unscaled reduced costs are used) give the same table as
    ``lap_ipopt`` (whose duals of the eliminated collocation rows are recovered from
    stationarity): measured 1e-6 of the largest entry."""
    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
    from pyomo_lap.solvers.solve import SolverNotFoundError, ensure_solver
    try:
        ensure_solver("ipopt")
    except SolverNotFoundError as exc:
        pytest.skip(f"classic ipopt not available: {exc}")
    tr, car = load_track("nordschleife"), load_vehicle("fsae")
    tables = []
    for solver, named in (("lap_ipopt", False), ("ipopt", True), ("ipopt_v2", True)):
        m = build_model(tr, car, start=START, length=120.0, named_subexpressions=named)
        initialize_model(m)
        sens.declare_multiplier_suffixes(m)
        rep = solve_model(m, solver=solver, options={"tol": 1e-10, "acceptable_tol": 1e-9})
        assert rep.ok, (solver, rep.termination_condition)
        t = sens.lap_time_sensitivities(m)
        assert t.attrs["method"] == "adjoint", (solver, t.attrs["method"])
        tables.append(t[["dT_dp", "dobj_dp"]].to_numpy())
    a = tables[0]
    for b in tables[1:]:
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * np.abs(a).max())
