"""Setup optimization: the car's parameters as decision variables of the lap (``free=``,
``keep_sum=``, ``pyomo-lap solve --free NAME=LO:HI --keep-sum A,B``).

Independent checks: the optimum is no slower than any car of a sweep over the same box (each
a fixed-setup solve on the same mesh), and at the optimum the sensitivities (a second method:
the multipliers of the fixed-setup problem) say the same: along the free direction the reduced
derivative is zero at an interior optimum, and points out of the box at a bound. Errors are
said before anything is built."""
import numpy as np
import pytest

from pyomo_lap import load_vehicle, solve_sector

SECTOR = {"track": "nordschleife", "start": 1150.0, "length": 300.0}
QUIET = {"echo": lambda *_: None, "progress": lambda *_: None, "out_dir": None}


@pytest.mark.unit
def test_unusable_free_parameters_are_refused_before_the_build(monkeypatch):
    import pyomo_lap.api.job as api

    def no_build(*a, **k):
        raise AssertionError("built before the check")
    monkeypatch.setattr(api, "build_model", no_build, raising=False)
    monkeypatch.setattr("pyomo_lap.ocp.build.build_model", no_build)
    cases = {
        "the car's equations do not use it": {"free": {"geometry.width": (1.2, 1.5)}},
        "outside the vehicle schema's range": {"free": {"powertrain.brake_ratio": (0.5, 1.5)}},
        "aero.Cz2 not free": {"free": {"aero.Cz1": (0.3, 0.9)},
                              "keep_sum": [("aero.Cz1", "aero.Cz2")]},
        "'aero.Cz3': unknown (did you mean aero.Cz2": {"free": {"aero.Cz3": (0.0, 1.0)}},
        "its equations hold the car's numbers": {"free": {"aero.Cz1": (0.3, 0.9)},
                                                 "vehicle": "dymos_racecar"},
    }
    for words, kw in cases.items():
        with pytest.raises(ValueError) as exc:
            solve_sector(**SECTOR, **QUIET, **kw)
        assert words.lower() in str(exc.value).lower(), (words, str(exc.value))


@pytest.mark.unit
def test_cli_free_and_keep_sum_are_parsed_and_checked(tmp_path):
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--free", "aero.Cz1=0.9:0.3",
                                  "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2 and "aero.Cz1" in r.output
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--free", "geometry.width=1:2",
                                  "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2 and "do not use it" in r.output
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def balance():
    """The aero balance free (Cz1 + Cz2 held) on a 300 m sector, a sweep of Cz1 over the box
    on the same mesh, and the sensitivities of the fixed optimal car."""
    base = load_vehicle("fsae")
    total = base.Cz1 + base.Cz2
    box = (0.3, 0.9)
    free = {"aero.Cz1": box, "aero.Cz2": (0.0, 2.0)}
    opt = solve_sector(**SECTOR, **QUIET, free=free, keep_sum=[("aero.Cz1", "aero.Cz2")]).summary
    mesh = opt["mesh"]["element_boundaries_m"]
    sweep, kept = {}, {}
    for cz1 in np.linspace(*box, 7):
        car = base.replace({"aero.Cz1": float(cz1), "aero.Cz2": float(total - cz1)})
        # one build, each car put into it (model_cache: the new build's NLP, as a setup study
        # runs; tests/test_set_vehicle.py checks it row by row)
        s = solve_sector(**SECTOR, **QUIET, vehicle=car, model_cache=kept,
                         ocp_options={"element_boundaries": mesh}).summary
        assert s["optimal"]
        sweep[float(cz1)] = s["lap_time_s"]
    kept.clear()
    car = base.replace({k: v["value"] for k, v in opt["setup"].items()})
    sens = solve_sector(**SECTOR, **QUIET, vehicle=car, sensitivities=True,
                        ocp_options={"element_boundaries": mesh})
    return {"opt": opt, "sweep": sweep, "sens": sens, "total": total, "box": box}


@pytest.mark.integration
def test_free_balance_is_no_slower_than_the_best_of_a_sweep(balance):
    opt, sweep = balance["opt"], balance["sweep"]
    assert opt["optimal"]
    setup = opt["setup"]
    cz1, cz2 = setup["aero.Cz1"]["value"], setup["aero.Cz2"]["value"]
    assert cz1 + cz2 == pytest.approx(balance["total"], abs=1e-8)       # the sum held
    assert balance["box"][0] - 1e-8 <= cz1 <= balance["box"][1] + 1e-8
    assert opt["lap_time_s"] <= min(sweep.values()) + 1e-6
    # the sweep's best neighbour brackets the optimum (a coarse grid of a smooth function)
    xs = sorted(sweep)
    best = min(xs, key=sweep.get)
    k = xs.index(best)
    lo, hi = xs[max(k - 1, 0)], xs[min(k + 1, len(xs) - 1)]
    assert lo - 1e-8 <= cz1 <= hi + 1e-8, (cz1, lo, hi)


@pytest.mark.integration
def test_the_baseline_is_the_car_as_given_and_the_gain_is_against_it(balance):
    """summary["setup_baseline"]: the lap time of a separate solve of the car as given on the
    same mesh, and the gain baseline - optimum in s and %; the objective's note and penalty_s
    (objective - lap time, equal to the penalties recomputed in regularization.total_s)."""
    opt = balance["opt"]
    b = opt["setup_baseline"]
    mesh = opt["mesh"]["element_boundaries_m"]
    given = solve_sector(**SECTOR, **QUIET, ocp_options={"element_boundaries": mesh}).summary
    assert b["lap_time_s"] == pytest.approx(given["lap_time_s"], rel=1e-6)
    assert b["gain_s"] == pytest.approx(b["lap_time_s"] - opt["lap_time_s"], abs=1e-12)
    assert b["gain_s"] >= -1e-6       # the optimum is no slower than the car as given
    assert b["gain_pct"] == pytest.approx(100 * b["gain_s"] / b["lap_time_s"], rel=1e-12)
    assert opt["penalty_s"] == pytest.approx(opt["objective"] - opt["lap_time_s"], abs=1e-12)
    assert opt["penalty_s"] == pytest.approx(opt["regularization"]["total_s"], rel=1e-4, abs=1e-7)
    assert "objective = lap_time_s + penalty_s" in opt["objective_note"]
    assert all(t in opt["objective_note"] for t in opt["regularization"]["terms"])


@pytest.mark.integration
def test_the_single_track_car_optimizes_its_setup_too():
    """The single-track model's rows take the car's parameters as symbols: its aero balance
    free (the sum held) is no slower than any of a 5-point sweep on the same mesh, and lies
    between the sweep's best neighbours."""
    base = load_vehicle("fsae")
    total = base.Cz1 + base.Cz2
    box = (0.3, 0.9)
    kw = {**SECTOR, **QUIET, "model": "single-track"}
    opt = solve_sector(**kw, free={"aero.Cz1": box, "aero.Cz2": (0.0, 2.0)},
                       keep_sum=[("aero.Cz1", "aero.Cz2")]).summary
    assert opt["optimal"]
    cz1 = opt["setup"]["aero.Cz1"]["value"]
    assert cz1 + opt["setup"]["aero.Cz2"]["value"] == pytest.approx(total, abs=1e-8)
    mesh = {"element_boundaries": opt["mesh"]["element_boundaries_m"]}
    sweep, kept = {}, {}
    for x in np.linspace(*box, 5):
        car = base.replace({"aero.Cz1": float(x), "aero.Cz2": float(total - x)})
        s = solve_sector(**kw, vehicle=car, ocp_options=mesh, model_cache=kept).summary
        assert s["optimal"]
        sweep[float(x)] = s["lap_time_s"]
    assert opt["lap_time_s"] <= min(sweep.values()) + 1e-6, (opt["lap_time_s"], sweep)
    xs = sorted(sweep)
    k = xs.index(min(xs, key=sweep.get))
    assert xs[max(k - 1, 0)] - 1e-8 <= cz1 <= xs[min(k + 1, len(xs) - 1)] + 1e-8, (cz1, sweep)


@pytest.mark.integration
def test_sensitivities_at_the_optimum_agree(balance):
    opt, sens = balance["opt"], balance["sens"]
    d = sens.sensitivities.set_index("parameter")["dobj_dp"]
    reduced = d["aero.Cz1"] - d["aero.Cz2"]      # along dCz1 = -dCz2, the free direction
    at = opt["setup"]["aero.Cz1"]["at_bound"]
    scale = max(abs(d["aero.Cz1"]), abs(d["aero.Cz2"]), 1e-3)
    if not at:
        assert abs(reduced) <= 1e-3 * scale + 1e-6, (reduced, d["aero.Cz1"], d["aero.Cz2"])
    elif at == "lower":
        assert reduced >= -1e-6          # more Cz1 would be slower: the bound holds it
    else:
        assert reduced <= 1e-6


@pytest.mark.unit
def test_the_model_is_the_same_whichever_solver_is_named(monkeypatch):
    """``solve_sector`` asks ``build_model`` for the same model for ``lap_ipopt``, the ASL
    ``ipopt`` and any other Pyomo solver (no option depends on the solver)."""
    import pyomo_lap.api.job as api
    import pyomo_lap.solvers.solve as solve_mod

    class Stop(Exception):
        pass
    asked = {}

    def record(track, vehicle, progress=None, **kw):
        asked[current] = kw
        raise Stop
    monkeypatch.setattr(api, "build_model", record)
    monkeypatch.setattr(solve_mod, "ensure_solver", lambda name: None)
    for current in ("lap_ipopt", "ipopt", "ipopt_v2"):
        with pytest.raises(Stop):
            solve_sector(**SECTOR, **QUIET, solver=current)
    assert asked["lap_ipopt"] == asked["ipopt"] == asked["ipopt_v2"]
    assert asked["ipopt"].get("named_subexpressions", True) is True
