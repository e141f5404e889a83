"""A solve started from an earlier result (the job option ``warm_start_from``, ``pyomo-lap
solve --warm-start``, the warm starts of ``pyomo-lap sweep``): the same optimum as from the
usual initial guess on another car, another mesh and another sector; the interpolation onto
another mesh against closed forms; clear errors for another track or vehicle model before any
solve; a failed warm start solved again from the usual start."""
from __future__ import annotations

import numpy as np
import pytest

from pyomo_lap import load_vehicle, solve_sector
from pyomo_lap.results.table import read_summary

JOB = {"length": 300.0, "nfe": 30, "echo": lambda *_: None, "progress": lambda *_: None}
DEFAULT_JOB = {"echo": lambda *_: None, "progress": lambda *_: None}   # 2 km, 200 elements


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    out = tmp_path_factory.mktemp("warm") / "a"
    solve_sector(vehicle=load_vehicle("fsae"), out_dir=out, **JOB)
    return out


@pytest.mark.integration
def test_a_warm_start_reaches_the_same_optimum_in_fewer_iterations(default_job, tmp_path):
    """The default job (2 km): a car 5 kg heavier with 0.04 more drag, from the first car's
    solution (the session's ``pyomo-lap solve``, tests/_shared.py; read, not written). (On
    short sectors the usual start is often as good: the sweep keeps warm starts only where
    they help, tests/test_sweep.py.)"""
    first = default_job
    mesh = read_summary(first)["mesh"]["element_boundaries_m"]
    car = load_vehicle("fsae").replace(m=245.0, Cx=0.88)
    # both on the first car's mesh (a warm start otherwise takes the job's own adaptive mesh)
    cold = solve_sector(vehicle=car, out_dir=tmp_path / "cold", ocp_options={
        "element_boundaries": mesh}, **DEFAULT_JOB).summary
    warm = solve_sector(vehicle=car, out_dir=tmp_path / "warm", warm_start_from=first,
                        ocp_options={"element_boundaries": mesh}, **DEFAULT_JOB).summary
    assert warm["mesh"]["element_boundaries_m"] == mesh
    assert warm["warm_start_source"]["same_mesh"] and warm["warm_start_source"][
        "covered_share"] == pytest.approx(1.0)
    # two starts end at two points within IPOPT's tolerance (tol 1e-5 on the scaled NLP), not
    # at the same rounding: the lap times agreed to about 1e-9 with w_force_rate 0.25 and to
    # 1.1e-6 with 0.1 (issue 33: 53.125882 against 53.125941 s), within that tolerance
    assert warm["lap_time_s"] == pytest.approx(cold["lap_time_s"], rel=1e-5)
    assert warm["iterations"] < cold["iterations"]
    assert warm["warm_start_from"] == str(first) and cold["warm_start_from"] is None
    assert "warm_start_failed" not in warm


@pytest.mark.integration
def test_the_solution_file_holds_every_variable(first, tmp_path):
    """Loading a solve's solution.npz into the same solved model changes nothing."""
    from pyomo_lap.results.table import load_solution, solution_arrays
    m = solve_sector(vehicle=load_vehicle("fsae"), out_dir=None, **JOB).model
    before = solution_arrays(m)
    assert load_solution(m, first) > 1000
    after = solution_arrays(m)
    assert set(before) == set(after) and len(before) > 30
    for k in before:
        np.testing.assert_allclose(after[k], before[k], rtol=1e-7, atol=1e-7, err_msg=k)


@pytest.mark.integration
def test_another_track_or_model_is_refused_before_the_solve(first):
    """Another track (its name and file differ), another vehicle model, no results folder:
    one line each, before anything is solved."""
    with pytest.raises(ValueError, match=r"warm start: .* another track file \('nordschleife', "
                                         r".*expected this job's track 'monza'"):
        solve_sector(vehicle=load_vehicle("fsae"), out_dir=None, warm_start_from=first,
                     **{**JOB, "track": "monza"})
    with pytest.raises(ValueError, match=r"with model 'full': expected a solve of this "
                                         r"job's vehicle model 'single-track'"):
        solve_sector(vehicle=load_vehicle("fsae"), out_dir=None, warm_start_from=first,
                     **{**JOB, "model": "single-track"})
    with pytest.raises(ValueError, match="holds no solution.npz"):
        solve_sector(vehicle=load_vehicle("fsae"), out_dir=None,
                     warm_start_from=first.parent / "nothing", **JOB)


@pytest.mark.unit
def test_another_car_schema_is_refused():
    """A source sharing less than half of the model's variables along the mesh (another car
    schema: another set of variables) is refused in one line."""
    from pyomo_lap.api.warm_start import WarmStartError, apply_warm_start
    from pyomo_lap.ocp.build import build_model
    from pyomo_lap import load_track
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), length=60.0, nfe=3)
    s = np.array(sorted(m.s))
    src = {"data": {"s": s, "var:x_other": s.copy(), "var:y_other": s.copy()}, "start": 0.0,
           "breaks": np.array(sorted(m.s.get_finite_elements())), "scheme": "LAGRANGE-RADAU",
           "periodic": False, "model": "full", "car": "x", "folder": "RUN"}
    with pytest.raises(WarmStartError, match=r"RUN has 0 of this model's \d+ variables"):
        apply_warm_start(m, src)


@pytest.mark.integration
def test_a_failed_warm_start_is_solved_again_from_the_usual_start(first, monkeypatch):
    """The warm-started solve stopped by an iteration limit of 2 (its own option, mu_init is
    the warm start's): the case is solved again from the usual initial guess, as without the
    warm start, and the summary says so."""
    import pyomo_lap.api.job as api
    real = api.solve_model
    calls = []

    def limited(m, solver=None, options=None, tee=False, **kwargs):
        calls.append(dict(options or {}))
        if len(calls) == 1:       # the warm-started solve (solve_model's warm start options)
            return real(m, solver=solver, options={**(options or {}), "max_iter": 2}, tee=tee)
        return real(m, solver=solver, options=options, tee=tee)

    monkeypatch.setattr(api, "solve_model", limited)
    car = load_vehicle("fsae").replace(m=250.0)
    s = solve_sector(vehicle=car, out_dir=None, warm_start_from=first, **JOB).summary
    assert len(calls) == 2 and "max_iter" not in calls[1]
    assert s["warm_start_failed"]["iterations"] == 2
    assert s["optimal"] and s["lap_time_s"] > 0
    monkeypatch.setattr(api, "solve_model", real)
    cold = solve_sector(vehicle=car, out_dir=None, **JOB).summary
    assert s["lap_time_s"] == pytest.approx(cold["lap_time_s"], rel=1e-12)
