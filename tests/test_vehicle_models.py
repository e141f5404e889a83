"""The vehicle-model interface (issue 12, item 2): the registry, a model given as an object,
the initial guess through the model stored on the built model, and imports that run one way."""
import ast
import dataclasses
from pathlib import Path

import pytest

import pyomo_lap
from pyomo_lap.full_model import FULL_MODEL
from pyomo_lap.ocp import OCP_CONFIG, VEHICLE_MODELS, vehicle_model
from pyomo_lap.single_track import SINGLE_TRACK_MODEL
from pyomo_lap.vehicle_model import VehicleModel

PACKAGE = Path(pyomo_lap.__file__).parent


@pytest.mark.unit
def test_registry_and_option_domain():
    assert VEHICLE_MODELS == {"full": FULL_MODEL, "single-track": SINGLE_TRACK_MODEL}
    assert vehicle_model("single-track") is SINGLE_TRACK_MODEL
    assert OCP_CONFIG({"model": SINGLE_TRACK_MODEL}).model == "single-track"  # registered: its key
    other = dataclasses.replace(SINGLE_TRACK_MODEL, name="my-bicycle")
    assert OCP_CONFIG({"model": other}).model is other          # unregistered: the object
    with pytest.raises(ValueError):
        OCP_CONFIG({"model": "bogus"})
    with pytest.raises(ValueError, match="expected one of"):
        vehicle_model("bogus")
    for vm in VEHICLE_MODELS.values():
        assert isinstance(vm, VehicleModel) and vm.rates[0] == "q1_dot"
        assert vm.controls == ("f_xa", "f_xb", "delta")


def _edges(names):
    """Imports among the given modules of the package, module-level and function-level."""
    edges = {}
    for name in names:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyomo_lap."):
                targets = [node.module.split(".")[1]]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[1] for a in node.names if a.name.startswith("pyomo_lap.")]
            edges.setdefault(name, set()).update(t for t in targets if t in names and t != name)
    return edges


@pytest.mark.unit
def test_imports_run_one_way():
    # lower layers first: a module imports only modules before it in this list
    layers = ["vehicle_model", "ocp_common", "initialize", "single_track_car", "numeric",
              "full_model", "single_track", "ocp"]
    edges = _edges(layers)
    for name, targets in edges.items():
        for t in targets:
            assert layers.index(t) < layers.index(name), f"{name} imports {t}, a higher layer"


@pytest.mark.component
def test_model_given_as_an_object_builds_and_initializes():
    track, p = pyomo_lap.load_track("nordschleife"), pyomo_lap.load_vehicle("fsae")
    other = dataclasses.replace(SINGLE_TRACK_MODEL, name="my-bicycle")
    m = pyomo_lap.build_model(track, p, start=0.0, length=60.0, nfe=3, model=other)
    assert m.vehicle_model is other and m.options.model is other
    assert m.component("f_1z") is not None and m.component("f_11z") is None
    res = pyomo_lap.initialize_model(m)
    assert res["status"] == "ok" and res["estimated_time_s"] > 0
    m2 = pyomo_lap.build_model(track, p, start=0.0, length=60.0, nfe=3, model="single-track")
    assert m2.vehicle_model is SINGLE_TRACK_MODEL and m2.options.model == "single-track"
    m3 = pyomo_lap.build_model(track, p, start=0.0, length=60.0, nfe=3)
    assert m3.vehicle_model is FULL_MODEL and m3.point_rows.built
