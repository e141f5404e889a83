"""What a vehicle model can do besides being built and checked, declared once on its
VehicleModel (issue 45, item 3) and read by the job with no model's name compared: the lap
time's sensitivities (``lap_time_sensitivities``), the models its solution starts
(``initial_guess_for``), the job's mesh refinement (every model whose results are checked:
``trajectory`` and ``dynamics``); the messages that list models take them from the registry."""
import dataclasses
from types import SimpleNamespace as NS

import numpy as np
import pytest

from pyomo_lap.ocp.build import VEHICLE_MODELS, models_with
from pyomo_lap.ocp.full_model import FULL_MODEL
from pyomo_lap.ocp.point_mass import POINT_MASS_MODEL
from pyomo_lap.ocp.single_track import SINGLE_TRACK_MODEL, warm_start_full


def _quiet(*_args, **_kwargs):
    pass


@pytest.mark.unit
def test_models_with_names_the_registered_models_that_declare_a_capability():
    """The full model alone gives the lap time's sensitivities, the single-track model alone
    starts another, and every registered model has dynamics (the models' documentation,
    docs/vehicle_models.md); a name that is no field of VehicleModel is refused."""
    assert models_with("lap_time_sensitivities") == ["full"]
    assert models_with("initial_guess_for") == ["single-track"]
    assert models_with("dynamics") == list(VEHICLE_MODELS)
    with pytest.raises(ValueError, match="sensitivities_please"):
        models_with("sensitivities_please")


@pytest.mark.unit
@pytest.mark.parametrize("name", ["single-track", "multibody", "racecar"])
def test_a_job_refuses_sensitivities_of_a_model_without_them(name):
    """sensitivities = True with a model that does not declare them is refused before anything
    is built, the message naming the models that do (from the registry)."""
    from pyomo_lap.api import solve_sector
    with pytest.raises(ValueError, match=r"sensitivities need one of the models 'full'$"):
        solve_sector(model=name, length=100.0, sensitivities=True, out_dir=None, echo=_quiet)


@pytest.mark.unit
def test_the_sensitivities_read_the_capability_not_the_name():
    """A model named "full" whose VehicleModel does not declare the sensitivities is refused,
    as the message says, naming the registered models that have them."""
    from pyomo_lap.analysis.sensitivities import _checked_model
    vm = dataclasses.replace(FULL_MODEL, lap_time_sensitivities=False)
    m = NS(problem=NS(vehicle_model=vm, options=NS(lift=())),
           vehicle=NS(point_rows=object()))
    with pytest.raises(NotImplementedError, match=r"model 'full': they need one of the models 'full'"):
        _checked_model(m)


@pytest.mark.unit
def test_the_initial_guess_option_offers_the_models_that_start_another():
    """The job option ``initial_guess`` takes 'cold' and the name of every registered model
    that starts another; each model started is a registered one."""
    from pyomo_lap.api import SOLVE_CONFIG
    assert SOLVE_CONFIG.get("initial_guess")._domain.values == ("cold", "single-track")
    assert SINGLE_TRACK_MODEL.initial_guess_for == {"full": warm_start_full}
    for vm in VEHICLE_MODELS.values():
        assert set(vm.initial_guess_for) <= set(VEHICLE_MODELS)
    with pytest.raises(ValueError, match="'cold', 'single-track'"):
        SOLVE_CONFIG({"initial_guess": "multibody"})


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(VEHICLE_MODELS))
@pytest.mark.parametrize("guess", ["cold", "single-track"])
def test_the_job_starts_a_model_from_the_one_the_option_names(name, guess, monkeypatch):
    """initial_guess = 'single-track' starts the full model from the single-track model's
    solution (warm_start_full) and leaves every other model at its cold start; 'cold' starts
    none."""
    from pyomo_lap.api import job as job_module
    calls = []
    monkeypatch.setattr(job_module, "initialize_model", lambda m: {"estimated_time_s": 1.0})
    monkeypatch.setattr(job_module, "_start_from_model",
                        lambda job, start: calls.append(start) or {"started": True})
    job = NS(cfg=NS(initial_guess=guess, warm_start_from=None, free=None, sensitivities=False),
             echo=_quiet, m=object(), model=name)
    job_module._initial_guess(job)
    started = guess == "single-track" and name == "full"
    assert calls == ([warm_start_full] if started else [])
    assert job.warm == ({"started": True} if started else None)


@pytest.mark.unit
def test_warm_start_full_refuses_other_models():
    """warm_start_full takes a full model and a solved single-track model, known by their
    VehicleModel, and names the two it was given otherwise."""
    full = NS(problem=NS(vehicle_model=FULL_MODEL))
    single = NS(problem=NS(vehicle_model=SINGLE_TRACK_MODEL))
    with pytest.raises(ValueError, match="got 'single-track' and 'full'"):
        warm_start_full(single, full)
    other = NS(problem=NS(vehicle_model=dataclasses.replace(FULL_MODEL)))
    with pytest.raises(ValueError, match="got 'full' and 'single-track'"):
        warm_start_full(other, single)


def _refine_gate(vm, monkeypatch) -> list:
    """The models :func:`pyomo_lap.api.refine._refine_job` hands to a refinement round: the
    round replaced by a recorder that finds nothing to refine."""
    from pyomo_lap.api import refine
    rounds = []
    monkeypatch.setattr(refine, "_refine_once", lambda job: rounds.append(job.m) and None)
    m = NS(problem=NS(vehicle_model=vm, mesh="adaptive",
                      options=NS(element_boundaries=None, lift=())))
    job = NS(cfg=NS(refine_mesh=True, warm_start_from=None, free=None, sensitivities=False),
             m=m, rep=NS(ok=True))
    refine._refine_job(job)
    assert job.refinement is None
    return rounds


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(VEHICLE_MODELS))
def test_the_job_refines_the_mesh_of_every_registered_model(name, monkeypatch):
    """Every registered model has a channel table and dynamics: its solved job goes to the
    mesh refinement's check."""
    assert len(_refine_gate(VEHICLE_MODELS[name], monkeypatch)) == 1


@pytest.mark.unit
def test_a_model_without_checks_is_not_refined(monkeypatch):
    """The point mass (no channel table, no dynamics) is neither checked nor refined, and
    refine_mesh refuses it by the hooks it lacks."""
    from pyomo_lap.api.refine import refine_mesh
    assert _refine_gate(POINT_MASS_MODEL, monkeypatch) == []
    with pytest.raises(ValueError, match="'point-mass'.*no channel table or no dynamics"):
        refine_mesh(NS(problem=NS(vehicle_model=POINT_MASS_MODEL)), 1.0)


def _oval_racecar():
    """dymos's racecar on the first 300 m of its oval (elements ending at the junctions),
    solved."""
    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
    m = build_model(load_track("dymos_oval"), load_vehicle("dymos_racecar"), model="racecar",
                    start=0.0, length=300.0)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return m.problem.track, m.vehicle.built_for, m, rep


@pytest.mark.integration
@pytest.mark.parametrize("name", ["single-track", "multibody", "racecar"])
def test_refine_mesh_serves_every_model(name):
    """The refinement of a model other than the full one, as the job runs it (its barrier
    parameter for a start from a solution): the worst three elements split, the refined model
    started from the solution (the algebraic loop solved where the model has one) solves to
    optimality, its worst defect lower and its time within 0.3 %."""
    import _solved_sector as sector
    from pyomo_lap.api.config import WARM_START_MU_INIT
    from pyomo_lap.api.refine import refine_mesh
    from pyomo_lap.verify.defects import collocation_defects
    if name == "racecar":
        tr, p, m, rep = _oval_racecar()
    else:
        tr, p, m, rep, _ = sector.solved(name)
    d = collocation_defects(m, tr, p)
    eps = d.elements["eps"].to_numpy()
    tol = float(np.sort(eps)[-3]) * 0.999
    res = refine_mesh(m, tol, defects=d, solver="lap_ipopt",
                      solver_options={"mu_init": WARM_START_MU_INIT})
    assert set(res.split) == set(d.elements["element"][eps > tol])
    assert res.model.problem.vehicle_model is VEHICLE_MODELS[name]
    assert res.solve_report.ok, res.solve_report.termination_condition
    assert res.after.elements["eps"].max() < eps.max()
    assert res.lap_time_after == pytest.approx(res.lap_time_before, rel=3e-3)
