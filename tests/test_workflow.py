"""The engineer's workflow: solver swapping, export, plots, comparing runs, diagnostics, units,
progress and the scripting examples. One short sector is solved once per solver interface
(module-scoped fixtures) and shared by the export, plot and compare tests."""
import hashlib
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import pytest
from click.testing import CliRunner

from _independent import time_by_quadrature
from pyomo_lap import __version__, build_model, load_track, load_vehicle
from pyomo_lap.cli import main
from pyomo_lap.results.export import read_parquet_units
from pyomo_lap.results.table import UNITS, read_summary, read_trajectory

ROOT = Path(__file__).resolve().parents[1]
SECTOR = dict(start=1150.0, length=200.0, nfe=15, ncp=2)   # a left-right sequence, ~10 s to solve
EXAMPLE = dict(start=1150.0, length=150.0, nfe=10, ncp=2)  # the examples, a few seconds each


def _example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same sector solved with each tested solver: through the API with the default
    ('lap_ipopt', the fast path), through the CLI with 'ipopt_v2' (Pyomo's newer ASL interface)
    and a passed-through option, and through the API with 'ipopt' (the classic ASL path)."""
    from pyomo_lap import solve_sector
    base = tmp_path_factory.mktemp("runs")
    solve_sector(out_dir=base / "A", echo=lambda *a: None, **SECTOR)
    r = CliRunner().invoke(main, ["solve", "--start", "1150", "--length", "200", "--nfe", "15",
                                  "--ncp", "2", "--solver", "ipopt_v2", "--solver-option",
                                  "max_iter=400", "--out", str(base / "B"), "--quiet"])
    assert r.exit_code == 0, r.output
    solve_sector(out_dir=base / "C", solver="ipopt", echo=lambda *a: None, **SECTOR)
    return base / "A", base / "B", base / "C"


# ---- solver swapping --------------------------------------------------------------------------

@pytest.mark.integration
def test_tested_solvers_solve_the_same_problem(runs):
    """Every solver of TESTED_SOLVERS reaches the same optimum of the same model: the fast path
    (its own NLP from compiled CasADi functions) and Pyomo's two interfaces to the ASL
    executable (two NL writers)."""
    from pyomo_lap.solvers.solve import DEFAULT_SOLVER, TESTED_SOLVERS
    summaries = [read_summary(x) for x in runs]
    assert [s["solver"] for s in summaries] == ["lap_ipopt", "ipopt_v2", "ipopt"]
    assert set(TESTED_SOLVERS) == {s["solver"] for s in summaries}
    assert DEFAULT_SOLVER == summaries[0]["solver"]             # run A named no solver
    assert all(s["termination_condition"] == "optimal" for s in summaries)
    b = summaries[1]
    assert b["solver_options"] == {"max_iter": 400}            # passed through, as a number
    assert b["iterations"] is not None and 0 < b["iterations"] <= 400
    # one optimum: IPOPT's tol 1e-5 on the scaled problem (objective ~1000) leaves the lap
    # time within ~1e-5 of the optimum; 1e-4 leaves room for the different NLP formulations
    laps = np.array([s["lap_time_s"] for s in summaries])
    assert laps == pytest.approx(laps[0], rel=1e-4)
    # and the same trajectory, not only the same time
    q2 = [read_trajectory(x)["q2"].to_numpy() for x in runs]
    assert np.abs(q2[1] - q2[0]).max() < 0.01 and np.abs(q2[2] - q2[0]).max() < 0.01


@pytest.mark.unit
def test_missing_or_unknown_solver_says_how_to_install(tmp_path):
    from pyomo_lap.solvers.solve import SolverNotFoundError, ensure_solver
    with pytest.raises(SolverNotFoundError, match="not a solver Pyomo knows.*ipopt_v2.*conda install"):
        ensure_solver("no_such_solver")
    with pytest.raises(SolverNotFoundError, match="not available.*install"):
        ensure_solver("conopt")          # known to Pyomo, not installed here
    r = CliRunner().invoke(main, ["solve", "--solver", "no_such_solver", "--length", "100",
                                  "--nfe", "5", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "solver 'no_such_solver'" in r.output and "ipopt" in r.output
    assert "building" not in r.output and not (tmp_path / "x").exists()


@pytest.mark.unit
def test_solver_options_parse_and_bad_ones_are_refused(tmp_path):
    from pyomo_lap.solvers.solve import parse_solver_options
    assert parse_solver_options(["max_iter=5", "tol=1e-6", "linear_solver=mumps", "x= 2 "]) == \
        {"max_iter": 5, "tol": 1e-6, "linear_solver": "mumps", "x": 2}
    with pytest.raises(ValueError, match="'max_iter'.*KEY=VALUE"):
        parse_solver_options(["max_iter"])
    r = CliRunner().invoke(main, ["solve", "--solver-option", "=3", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--solver-option" in r.output


# ---- export -----------------------------------------------------------------------------------

@pytest.mark.integration
def test_export_sheets_formats_sector_times_and_provenance(runs):
    import openpyxl
    a = runs[0]
    summary = read_summary(a)
    wb = openpyxl.load_workbook(a / "results.xlsx", read_only=True)
    assert {"summary", "channels", "sectors", "vehicle", "track"} <= set(wb.sheetnames)
    header = [c.value for c in next(wb["track"].iter_rows(max_row=1))]
    assert header[:4] == ["s [m]", "x_spine [m]", "y_spine [m]", "z_spine [m]"]
    sheet = pd.read_excel(a / "results.xlsx", sheet_name="summary")
    assert {"inputs", "provenance", "solver", "results", "sector times"} <= set(sheet["group"])
    # CSV (units in the headers) and Parquet (units in the metadata) hold the same numbers
    csv = pd.read_csv(a / "trajectory.csv")
    assert "q2 [m]" in csv.columns and "f_11z [N]" in csv.columns
    pq = pd.read_parquet(a / "trajectory.parquet")
    assert np.allclose(pq["q2"], csv["q2 [m]"], rtol=1e-9) and np.allclose(pq["t"], csv["t [s]"], rtol=1e-9)
    units = read_parquet_units(a / "trajectory.parquet")
    assert units["f_11z"] == "N" and units["q1_dot"] == "m/s" and units == {c: UNITS[c] for c in units}
    # sector times: add up to the sector time, and each agrees with an independent quadrature
    # of dt = ds / q1_dot over the points inside it
    sec = summary["sectors"]
    assert len(sec) == 3
    assert sum(x["time_s"] for x in sec) == pytest.approx(summary["lap_time_s"], rel=1e-9)
    df = read_trajectory(a)
    s_track = df["s"].iloc[0] + df["s_sector"]
    for x in sec:
        grid = np.linspace(x["s_start_m"], x["s_end_m"], 400)
        quad = np.trapezoid(np.interp(grid, s_track, 1.0 / df["q1_dot"]), grid)
        assert x["time_s"] == pytest.approx(quad, rel=2e-3)
    # provenance: every number can be traced to the input files and the code
    for kind in ("track", "vehicle"):
        f = Path(summary[f"{kind}_file"])
        assert hashlib.sha256(f.read_bytes()).hexdigest() == summary[f"{kind}_file_sha256"]
    params = load_vehicle("fsae").as_dict()
    assert summary["vehicle_parameters_sha256"] == hashlib.sha256(
        json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    assert summary["pyomo_lap_version"] == __version__
    assert summary["solver_version"].split(".")[0].isdigit() and "created_utc" in summary


# ---- plots ------------------------------------------------------------------------------------

@pytest.mark.integration
def test_plot_command_writes_every_figure(runs, tmp_path):
    from pyomo_lap.plots.figures import FIGURES
    out = tmp_path / "plots"
    r = CliRunner().invoke(main, ["plot", str(runs[0]), "--out", str(out), "--pdf",
                                  "--reference", str(runs[1])])
    assert r.exit_code == 0, r.output
    for name in FIGURES:
        png = out / f"{name}.png"
        if name == "sensitivities":     # only for a run solved with --sensitivities
            assert not png.exists()
            continue
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, name
    assert (out / "plots.pdf").read_bytes()[:5] == b"%PDF-"
    r = CliRunner().invoke(main, ["plot", str(runs[0]), "--figure", "no_such_figure"])
    assert r.exit_code == 2 and "track_map" in r.output


@pytest.mark.unit
def test_plan_view_edges_and_racing_line_are_where_they_should_be():
    """On a straight along x, the left edge is at +width_left in y, the right edge at
    -width_right, and the racing line at q2 (the left normal of the direction of travel)."""
    from pyomo_lap.plots.figures import edges_xy
    s = np.linspace(0.0, 100.0, 11)
    df = pd.DataFrame({"s": s, "s_sector": s, "x_spine": s, "y_spine": 5.0 + 0 * s,
                       "width_left": 4.0, "width_right": 3.0, "q2": np.linspace(-2.0, 2.0, 11)})
    g = edges_xy(df)
    assert np.allclose(g["left"][:, 1], 9.0) and np.allclose(g["right"][:, 1], 2.0)
    assert np.allclose(g["line"][:, 1], 5.0 + df["q2"]) and np.allclose(g["line"][:, 0], s)


# ---- comparing runs ---------------------------------------------------------------------------

@pytest.mark.unit
def test_time_delta_of_two_constant_speed_runs_is_the_closed_form():
    """A at 20 m/s over 0-300 m, B at 25 m/s over 100-400 m: on the overlap 100-300 m,
    delta(s) = (s - 100)/25 - (s - 100)/20."""
    from pyomo_lap.analysis.compare import delta_along_track, sector_deltas

    def run(s0, s1, v, n):
        s = np.linspace(s0, s1, n)
        return pd.DataFrame({"s": s, "s_sector": s - s0, "t": (s - s0) / v, "speed_kmh": 3.6 * v,
                             "q2": 0.0})
    d = delta_along_track(run(0, 300, 20.0, 31), run(100, 400, 25.0, 17))
    x = d["s [m]"].to_numpy()
    assert x[0] == pytest.approx(100.0) and x[-1] == pytest.approx(300.0)
    assert np.allclose(d["delta_t [s]"], (x - 100) / 25 - (x - 100) / 20, atol=1e-12)
    tab = sector_deltas(d, 4)
    assert np.allclose(tab["delta [s]"], 50 / 25 - 50 / 20)
    with pytest.raises(ValueError, match="do not overlap"):
        delta_along_track(run(0, 100, 20.0, 5), run(200, 300, 20.0, 5))


@pytest.mark.integration
def test_compare_command_table_and_plot(runs):
    a, b = runs[:2]
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--sectors", "2"])
    assert r.exit_code == 0, r.output
    out = b.parent / "compare_A_vs_B"            # next to the runs, never inside one
    assert not (b / "compare_A").exists()
    d = pd.read_csv(out / "compare.csv")
    same = read_summary(b)["lap_time_s"] - read_summary(a)["lap_time_s"]
    assert d["delta_t [s]"].iloc[-1] == pytest.approx(same, abs=1e-9)   # same sector: same delta
    assert (out / "compare.png").stat().st_size > 10_000
    assert len(pd.read_csv(out / "compare_sectors.csv")) == 2 and "total" in r.output


# ---- diagnostics and units --------------------------------------------------------------------

def _pynumero_available():
    from pyomo_lap.api.diagnose import pynumero_available
    return pynumero_available()


@pytest.fixture(scope="module")
def diagnosed():
    """The diagnosis of a short sector (the cold start, squared), with the numerical checks
    where PyNumero's ASL library is available."""
    import io
    from pyomo_lap.api.diagnose import diagnose
    return diagnose(start=500.0, length=60.0, nfe=3, ncp=2, numerical=_pynumero_available(),
                    stream=io.StringIO(), echo=lambda *a: None)


def _scaling_factor(c):
    """The component's factor in the nearest enclosing ``scaling_factor`` suffix (1 if none),
    as the IDAES toolbox reads it."""
    b = c.parent_block()
    while b is not None:
        suffix = b.component("scaling_factor")
        if suffix is not None and c in suffix:
            return suffix[c]
        b = b.parent_block()
    return 1.0


def _count(pattern, text):
    import re
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return found.group(1)


@pytest.mark.component
def test_idaes_structural_diagnostics_on_the_squared_model(diagnosed):
    """The toolbox's structural findings against counts made here: a square system, every
    active equation in the partition, and the check finds a singularity when there is one."""
    import io
    from idaes.core.util.diagnostics_tools.diagnostics_toolbox import DiagnosticsToolbox
    from pyomo.core.expr.visitor import identify_variables
    res = diagnosed
    m = res["model"]
    assert res["degrees_of_freedom"] == 0
    assert not any("Structural singularity" in w for w in res["structural_warnings"])
    # the statistics it reports are the model's: active equalities and the free variables in
    # them, counted here
    equalities = [c for c in m.component_data_objects(pyo.Constraint, active=True) if c.equality]
    assert not any(not c.equality for c in m.component_data_objects(pyo.Constraint, active=True))
    free = {id(v) for c in equalities for v in identify_variables(c.body, include_fixed=False)}
    text = res["structural"]
    assert int(_count(r"Activated Equality Constraints: (\d+)", text)) == len(equalities)
    assert int(_count(r"Free Variables in Activated Constraints: (\d+)", text)) == len(free)
    assert len(free) == len(equalities) > 1000
    assert res["deactivated_inequalities"] == int(_count(r"Activated Inequality Constraints: 0 "
                                                         r"\(Deactivated: (\d+)\)", text)) > 0
    # every active equation is in the partition (Pyomo's incidence analysis takes only
    # EqualityExpression objects as equations: the rows written lower <= body <= upper with
    # equal bounds were left out and made the model look singular)
    from pyomo.contrib.incidence_analysis import IncidenceGraphInterface
    assert len(IncidenceGraphInterface(m, include_inequality=False).constraints) == len(equalities)
    assert len(m.loads_eq) > 0 and all(c in set(equalities) for c in m.loads_eq.values())
    # the checks can fail: drop one load equation and the toolbox finds the singularity
    dropped = m.loads_eq[0, sorted(m.s)[2]]
    dropped.deactivate()
    try:
        buf = io.StringIO()
        DiagnosticsToolbox(m).report_structural_issues(stream=buf)
        assert "Structural singularity" in buf.getvalue()
    finally:
        dropped.activate()


@pytest.mark.component
@pytest.mark.skipif(not _pynumero_available(),
                    reason="PyNumero's ASL library (libpynumero_ASL.so) is not available: the "
                           "numerical checks need it (bootstrap with PYOMO_LAP_ASL=1)")
def test_idaes_numerical_diagnostics_match_an_independent_computation(diagnosed):
    """The toolbox's numerical findings on the cold start, recomputed here without PyNumero:
    the constraints with large scaled residuals, the variables at or outside their bounds, and
    the condition number of the scaled Jacobian (Frobenius norms; the Jacobian by Pyomo's
    symbolic differentiation and a dense inverse instead of PyNumero's ASL derivatives and a
    sparse one)."""
    from pyomo.core.expr.calculus.derivatives import Modes, differentiate
    from pyomo.core.expr.visitor import identify_variables
    res = diagnosed
    m, text = res["model"], res["numerical"]
    assert text is not None
    cons = list(m.component_data_objects(pyo.Constraint, active=True))
    # residuals (IDAES: scaled by the constraint's factor, tolerance 1e-5)
    large = sum(_scaling_factor(c) * abs(pyo.value(c.body) - pyo.value(c.upper)) > 1e-5
                for c in cons)
    assert large > 0                                    # the cold start is not a solution
    assert f"WARNING: {large} Constraints with large residuals (>1.0E-05)" in text
    # variables at or outside their bounds (tolerance 0, on the scaled values)
    at_bounds = 0
    for v in m.component_data_objects(pyo.Var):
        f = _scaling_factor(v)
        if v.value is not None and ((v.lb is not None and f * v.value <= f * v.lb)
                                    or (v.ub is not None and f * v.value >= f * v.ub)):
            at_bounds += 1
    assert at_bounds > 0 and f"WARNING: {at_bounds} Variables at or outside bounds" in text
    # the condition number of the scaled Jacobian
    variables = {}
    for c in cons:
        for v in identify_variables(c.body, include_fixed=False):
            variables.setdefault(id(v), v)
    col = {k: j for j, k in enumerate(variables)}
    J = np.zeros((len(cons), len(variables)))
    for i, c in enumerate(cons):
        vs = list(identify_variables(c.body, include_fixed=False))
        for v, d in zip(vs, differentiate(c.body, wrt_list=vs, mode=Modes.reverse_numeric)):
            J[i, col[id(v)]] += d
    row_f = np.array([_scaling_factor(c) for c in cons])
    col_f = np.array([_scaling_factor(v) for v in variables.values()])
    Js = row_f[:, None] * J / col_f[None, :]
    cond = np.linalg.norm(Js) * np.linalg.norm(np.linalg.inv(Js))
    reported = float(_count(r"Jacobian Condition Number: (\S+)", text))
    assert reported == pytest.approx(cond, rel=2e-3)    # printed with 4 digits


@pytest.mark.component
def test_units_are_declared_and_consistent():
    from pyomo.core.base.units_container import UnitsError
    from pyomo.util.check_units import assert_units_equivalent
    from pyomo_lap.api.diagnose import check_units
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=500.0, length=50.0,
                    nfe=3, ncp=2)
    res = check_units(m)
    assert {"ode_q", "ode_t", "objective"} <= set(res["checked"]) and not res["vars_without_units"]
    # the model's units agree with the exported channel units (declared independently)
    ureg = pyo.units._pint_registry
    for name in ("q2", "q3", "q1_dot", "q3_dot", "t", "f_xa", "delta", "f_11z", "m_3z"):
        have = pyo.units.get_units(m.component(name))._get_pint_unit()
        want = ureg.parse_expression(UNITS[name].replace("^", "**").replace("N m", "N*m")).units
        assert have.dimensionality == want.dimensionality, name
    assert_units_equivalent(m.dt_ds, pyo.units.s / pyo.units.m)
    # and the check can fail
    first, last = m.s.first(), m.s.last()
    m.bad = pyo.Constraint(expr=m.q2[first] == m.t[last])
    with pytest.raises(UnitsError):
        check_units(m, components=("bad",))


# ---- progress ---------------------------------------------------------------------------------

@pytest.mark.component
def test_progress_is_reported_while_building():
    from pyomo_lap.util.progress import echo_progress
    calls, lines = [], []
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=500.0, length=50.0,
                    nfe=4, ncp=2, progress=lambda *a: calls.append(a))
    assert [c[1] for c in calls] == list(range(1, len(m.s) + 1))
    assert {c[0] for c in calls} == {"building the model"} and calls[-1][2] == len(m.s)
    prog = echo_progress(lines.append, steps=4)
    for i in range(1, 101):
        prog("step", i, 100)
    assert [ln.split(": ")[1].split(" %")[0] for ln in lines] == ["25", "50", "75", "100"]


# ---- the scripting examples -------------------------------------------------------------------

@pytest.mark.integration
def test_example_quickstart(tmp_path):
    m, rep, df, folder = _example("quickstart").main(out_dir=tmp_path / "qs", tee=False, **EXAMPLE)
    assert rep.ok and (folder / "results.xlsx").exists() and (folder / "plots" / "track_map.png").exists()
    # the written sector time against a quadrature of the written speeds (dt = ds / q1_dot)
    written = read_trajectory(folder)
    t_quad = time_by_quadrature(written["s_sector"], written["q1_dot"])
    assert read_summary(folder)["lap_time_s"] == pytest.approx(t_quad, rel=1e-3)


@pytest.mark.integration
def test_example_energy_budget():
    r = _example("energy_budget").main(**EXAMPLE)
    from pyomo_lap.results.table import trajectory_dataframe
    df = trajectory_dataframe(r["model"])
    # independent of the example's own sums: integrate the exported power channel over time;
    # the budget is below what the free optimum used, so it binds: the energy is the budget
    energy = np.trapezoid(df["power"], df["t"])
    assert energy == pytest.approx(r["e_max"], rel=1e-2)
    assert r["e_budget"] == pytest.approx(r["e_max"], rel=1e-6)
    # and a binding budget costs time: the car must lift somewhere (the free optimum is the
    # unique fastest; 1e-4 is 100 times the solver's accuracy on the sector time)
    assert r["t_budget"] > r["t_free"] * (1 + 1e-4)
    assert pyo.value(r["model"].lap_time) == pytest.approx(r["t_budget"], rel=1e-12)


@pytest.mark.integration
def test_example_speed_limit_and_objective():
    ex = _example("speed_limit_and_objective")
    m, rep = ex.main(zone=(60.0, 100.0), v_max=25.0, **EXAMPLE)
    assert rep.ok and rep.solver == "lap_ipopt"
    from pyomo_lap.results.table import trajectory_dataframe
    df = trajectory_dataframe(m)
    zone = df[(df["s_sector"] >= 60.0) & (df["s_sector"] <= 100.0)]
    # the limit is on the car's speed (the exported speed column, computed from the twist by
    # the channel tape, not from the model's m.speed): it holds in the zone and binds there,
    # and only there: before the zone the car is faster (it brakes for the zone)
    assert zone["speed"].max() == pytest.approx(25.0, abs=1e-3)
    assert zone["speed"].max() <= 25.0 + 1e-6
    assert df.loc[df["s_sector"] < 60.0, "speed"].max() > 25.0 + 5.0
    assert (df["f_11z"] + df["f_12z"]).min() >= 400.0 - 1e-3
    assert m.cool_tyres.active and not m.objective.active
    # the sector time against a quadrature of the speeds (15 m elements and a kink where the
    # car brakes for the zone: the spline's own error is 2e-3 here)
    assert pyo.value(m.lap_time) == pytest.approx(
        time_by_quadrature(df["s_sector"], df["q1_dot"]), rel=5e-3)
