"""The vehicle-model interface (issue 12, item 2): the registry, a model given as an object,
the initial guess through the model stored on the built model, and imports that run one way."""
import dataclasses
from pathlib import Path

import pyomo.environ as pyo
import pytest

import pyomo_lap
from pyomo_lap.ocp.full_model import FULL_MODEL
from pyomo_lap.ocp.multibody import MULTIBODY_MODEL
from pyomo_lap.ocp.build import OCP_CONFIG, VEHICLE_MODELS, vehicle_model
from pyomo_lap.ocp.single_track import SINGLE_TRACK_MODEL
from pyomo_lap.ocp.vehicle_model import ProblemData, VehicleModel



@pytest.mark.unit
def test_registry_and_option_domain():
    from pyomo_lap.ocp.racecar import RACECAR_MODEL
    assert VEHICLE_MODELS == {"full": FULL_MODEL, "single-track": SINGLE_TRACK_MODEL,
                              "multibody": MULTIBODY_MODEL, "racecar": RACECAR_MODEL}
    assert vehicle_model("single-track") is SINGLE_TRACK_MODEL
    assert OCP_CONFIG({"model": SINGLE_TRACK_MODEL}).model == "single-track"  # registered: its key
    other = dataclasses.replace(SINGLE_TRACK_MODEL, name="my-bicycle")
    assert OCP_CONFIG({"model": other}).model is other          # unregistered: the object
    with pytest.raises(ValueError):
        OCP_CONFIG({"model": "bogus"})
    with pytest.raises(ValueError, match="expected one of"):
        vehicle_model("bogus")
    for name, vm in VEHICLE_MODELS.items():
        assert isinstance(vm, VehicleModel)
        if name == "racecar":     # dymos's racecar: states t, n, V, alpha, ...; delta, thrust
            assert vm.rates == () and vm.controls == ("delta", "thrust")
            continue
        assert vm.rates[0] == "q1_dot" and vm.controls == ("f_xa", "f_xb", "delta")


@pytest.mark.component
def test_model_given_as_an_object_builds_and_initializes():
    track, p = pyomo_lap.load_track("nordschleife"), pyomo_lap.load_vehicle("fsae")
    other = dataclasses.replace(SINGLE_TRACK_MODEL, name="my-bicycle")
    m = pyomo_lap.build_model(track, p, start=0.0, length=60.0, nfe=3, model=other)
    assert m.problem.vehicle_model is other and m.problem.options.model is other
    assert m.component("f_1z") is not None and m.component("f_11z") is None
    res = pyomo_lap.initialize_model(m)
    assert res["status"] == "ok" and res["estimated_time_s"] > 0
    m2 = pyomo_lap.build_model(track, p, start=0.0, length=60.0, nfe=3, model="single-track")
    assert m2.problem.vehicle_model is SINGLE_TRACK_MODEL and m2.problem.options.model == "single-track"
    m3 = pyomo_lap.build_model(track, p, start=0.0, length=60.0, nfe=3)
    assert m3.problem.vehicle_model is FULL_MODEL and m3.problem.point_rows.built
    # the model's own state is one frozen, typed object; none of the former loose attributes
    for mdl in (m, m2, m3):
        assert isinstance(mdl.problem, ProblemData)
        assert mdl.problem.sector_length == pytest.approx(60.0) and mdl.problem.options.nfe == 3
        assert mdl.problem.track is track and mdl.vehicle.built_for is p
        assert len(mdl.problem.track_points.s) == len(mdl.s)
        assert 0 < mdl.problem.dae_time_s < mdl.problem.build_time_s
        for name in ("options", "track", "sector_length", "track_points",
                     "chain", "point_rows", "initial_speed", "build_time_s", "dae_time_s",
                     "vehicle_model"):
            assert name not in vars(mdl), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            mdl.problem.sector_length = 1.0
    # the full model's car is a Block of its parameters, m.vehicle.<section>.<key>
    assert isinstance(m3.vehicle, pyo.Block) and m3.vehicle.mass.total.value == p.m


@pytest.mark.integration
def test_point_mass_model_solves_a_sector_faster_than_the_single_track_car():
    """The third model of docs/vehicle_models.md, written only against the interface: a
    point mass with a friction circle has no yaw dynamics and no slip, so on the same sector
    it is faster than the single-track car, but not by much (the same grip and power)."""
    import pyomo.environ as pyo

    from pyomo_lap.ocp.point_mass import POINT_MASS_MODEL
    track, p = pyomo_lap.load_track("nordschleife"), pyomo_lap.load_vehicle("fsae")
    times = {}
    for model in (POINT_MASS_MODEL, "single-track"):
        m = pyomo_lap.build_model(track, p, start=0.0, length=1000.0, model=model)
        assert pyomo_lap.initialize_model(m)["status"] == "ok"
        rep = pyomo_lap.solve_model(m)
        assert rep.ok, rep.message
        times[m.problem.vehicle_model.name] = pyo.value(m.lap_time)
        if m.problem.vehicle_model is POINT_MASS_MODEL:
            t = [pyo.value(m.t[s]) for s in sorted(m.s)]
            assert all(b > a for a, b in zip(t, t[1:]))
            for s in m.s:      # within the track limits
                assert m.q2[s].lb - 1e-6 <= pyo.value(m.q2[s]) <= m.q2[s].ub + 1e-6
    assert 0.95 * times["single-track"] < times["point-mass"] < times["single-track"]
