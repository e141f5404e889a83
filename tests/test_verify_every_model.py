"""One verification path for every vehicle model (issue 45, item 3): every registered model
reaches the checks of a result through its VehicleModel (its channel table, its dynamics, its
defect states) and no module of the package outside the registry compares a model's name;
the racecar's equations as the checks take them meet closed forms of dymos's racecar; validate
and the self-check run on the single-track and multibody cars' results too."""
import ast
import math
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap import load_vehicle
from pyomo_lap.ocp.build import VEHICLE_MODELS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pyomo_lap"

REGISTRY = ("ocp/build.py", "ocp/vehicle_model.py")
"""The registry (VEHICLE_MODELS, the VehicleModel it holds): the only modules that may choose
by a model's name. Each model's own module names it once, in its ``VehicleModel(name=...)``,
which no rule below takes for a choice."""

ON_PURPOSE = {
    ("vehicle/files.py", "FILE_MODELS"):
        "the vehicle file's schema: the values its top-level `model` may take (the vehicle "
        "layer lies below the registry; test_the_vehicle_files_name_the_registered_models "
        "ties the two)",
    ("vehicle/racecar.py", "RACECAR_MODEL_NAMES"):
        "the racecar file's schema: the value of its top-level `model` that selects its reader "
        "(tied to the registry as FILE_MODELS)",
}
"""Top-level names (an assignment, a function, a class) outside the registry that may still
name a model, each with why; the test fails when one names none any more, so the list never
keeps a name that left."""

STRAIGHT = np.r_[np.eye(3).ravel(), np.zeros(6)]
"""The track inputs of a point of a flat straight along x (TRACK_INPUTS: R, Omega, dOmega)."""


def _car(name):
    return load_vehicle("dymos_racecar" if name == "racecar" else "fsae")


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(VEHICLE_MODELS))
def test_every_registered_model_has_the_hooks_the_checks_read(name):
    """Each model of the registry gives its channel table and its dynamics; the states in s
    end with the time, the state in time is the track coordinate and those states but the
    time, and the driver's roles are among its states and controls."""
    from pyomo_lap.verify.simulate import model_dynamics
    vm = VEHICLE_MODELS[name]
    assert vm.trajectory is not None and vm.dynamics is not None
    dyn = model_dynamics(_car(name), name)
    assert dyn.model is vm and dyn.states == vm.defect_states and dyn.states[-1] == "t"
    assert tuple(dyn.names[1:]) == tuple(dyn.states[:-1])
    assert {dyn.path.lateral, dyn.path.heading, dyn.path.speed} <= set(dyn.names)
    assert dyn.path.steer in dyn.controls and set(dyn.bounds) <= set(dyn.names)
    assert len(dyn.magnitudes) == len(dyn.names)


def _top_level_name(node) -> str:
    """The name a top-level statement defines (a function, a class, an assignment's first
    target), or ''."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    target = (node.targets[0] if isinstance(node, ast.Assign) else
              node.target if isinstance(node, ast.AnnAssign) else None)
    return target.id if isinstance(target, ast.Name) else ""


def _choices_by_name(tree, names) -> list:
    """``(line, top-level name, constant)`` of every place in a module's tree that chooses by a
    model's name: a comparison with one (``==``, ``!=``, ``in`` a literal collection), a
    literal collection holding one, a fall-back to one (``x or "full"``), one given as a
    ``model`` (a keyword argument, a dict entry, a parameter's default)."""
    found = []

    def named(node):
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names

    for top in tree.body:
        owner = _top_level_name(top)
        for node in ast.walk(top):
            hits = []
            if isinstance(node, ast.Compare):
                hits = [node.left, *node.comparators]
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                hits = node.elts
            elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
                hits = node.values
            elif isinstance(node, ast.Dict):
                hits = [v for k, v in zip(node.keys, node.values)
                        if isinstance(k, ast.Constant) and k.value == "model"]
            elif isinstance(node, ast.keyword) and node.arg in ("model", "model_name"):
                hits = [node.value]
            elif isinstance(node, ast.arguments):
                args = node.posonlyargs + node.args
                pairs = list(zip(args[len(args) - len(node.defaults):], node.defaults))
                pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
                hits = [d for a, d in pairs if a.arg in ("model", "model_name")]
            found += [(getattr(node, "lineno", top.lineno), owner, c.value)
                      for c in hits if named(c)]
    return found


@pytest.mark.unit
def test_no_module_compares_a_model_name():
    """No module of the package outside the registry chooses by a registered model's name
    (compares a value with one, lists one, falls back to one, passes one as a model): what a
    model can do is declared on its VehicleModel (``trajectory``, ``dynamics``,
    ``lap_time_sensitivities``, ``initial_guess_for`` ...), so a model added later declares
    it in one place. The scanner itself sees each kind of choice."""
    names = set(VEHICLE_MODELS)
    probe = ast.parse('def f(m, model="full"):\n'
                      '    a = m.name != "racecar" or m.x in ("multibody",)\n'
                      '    b = build(model="single-track") or {"model": "full"}\n'
                      '    return (m.model or "full"), m.name == "point-mass"\n')
    assert sorted(c for _, _, c in _choices_by_name(probe, names)) == sorted(
        ["full", "racecar", "multibody", "single-track", "full", "full"])
    found, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in REGISTRY:
            continue
        for line, owner, name in _choices_by_name(ast.parse(path.read_text(encoding="utf-8")), names):
            if (rel, owner) in ON_PURPOSE:
                used.add((rel, owner))
            else:
                found.append(f"{rel}:{line} ({owner}) {name!r}")
    assert not found, found
    assert used == set(ON_PURPOSE), f"names no model any more: {set(ON_PURPOSE) - used}"
    assert not (PACKAGE / "verify" / "racecar_checks.py").exists()


@pytest.mark.unit
def test_the_vehicle_files_name_the_registered_models():
    """The values a vehicle file's top-level ``model`` may take (the car's schema and the
    racecar's, below the registry) are the registered models, each read by one schema."""
    from pyomo_lap.vehicle.files import FILE_MODELS
    from pyomo_lap.vehicle.racecar import RACECAR_MODEL_NAMES
    assert sorted(FILE_MODELS + RACECAR_MODEL_NAMES) == sorted(VEHICLE_MODELS)


@pytest.mark.unit
def test_the_racecar_dynamics_meet_closed_forms():
    """dymos's racecar as the checks take it (its VehicleModel.dynamics), against the closed
    forms of its equations (docs/racecar.md): on a straight, centred and aligned, at 30 m/s
    with a thrust of 0.3 and no steering, the rear tyres drive with M g/2 times the smoothed
    throttle each (less the smoothed brake's remainder, split by the brake bias), the speed changes by (S_all - drag)/M, dt/ds = 1/V, and the rear tyres
    use S/(N mu_x) of their friction ellipses (the loads: the static share and the rear's
    share of the downforce); the power is V S_all. On an arc the speed along the centre line
    is V cos(alpha - lambda)/(1 - n kappa), and the equations in s are those in time over it."""
    from pyomo_lap.verify.simulate import model_dynamics
    p = load_vehicle("dymos_racecar")
    dyn = model_dynamics(p, "racecar")
    V, thrust, eps = 30.0, 0.3, 1e-4
    x = np.array([[0.0, V, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])     # n V alpha lambda omega ax ay t
    u = np.array([[0.0, thrust]])
    dxds, z, ok = dyn.spatial_rhs(STRAIGHT[None], x, u)
    throttle = 0.5 * (thrust + math.sqrt(thrust ** 2 + eps ** 2))     # max(x, 0), smoothed
    brake = 0.5 * (-thrust + math.sqrt(thrust ** 2 + eps ** 2))
    S_front = -p.M * p.g / 2 * brake * p.beta
    S_rear = p.M * p.g / 2 * (throttle - brake * (1 - p.beta))
    S_all = 2 * (S_front + S_rear)
    drag = 0.5 * p.rho * p.CdA * V ** 2
    assert ok.all() and z.shape == (1, 0)
    i = {k: dyn.states.index(k) for k in ("n", "V", "alpha", "t")}
    assert dxds[0, i["V"]] == pytest.approx((S_all - drag) / p.M / V, rel=1e-12)
    assert dxds[0, i["t"]] == pytest.approx(1.0 / V, rel=1e-12)
    assert dxds[0, i["n"]] == 0.0 and dxds[0, i["alpha"]] == 0.0
    l = p.a + p.b
    N_rear = p.M * p.g / 2 * p.a / l + p.CoP / l / 2 * 0.5 * p.rho * p.ClA * V ** 2
    mu_x = p.mu0_x + p.k_mu * N_rear / (p.M * p.g / 2 * p.a / l)
    lim = dyn.limits(STRAIGHT[None], x, u, z)
    assert lim["power"][0] == pytest.approx(V * S_all / p.P_max, rel=1e-12)
    assert lim["friction"][0] == pytest.approx(S_rear / (N_rear * mu_x), rel=1e-12)
    arc = STRAIGHT.copy()
    arc[11] = kappa = 0.02
    y = np.array([500.0, 0.5, V, 0.1, 0.01, 0.2, 1.0, 2.0])       # s, then the states but t
    assert dyn.path_speed(arc, y) == pytest.approx(V * math.cos(0.1 - 0.01) / (1 - 0.5 * kappa),
                                                   rel=1e-12)
    ydot, _ = dyn.time_rates(arc, y, np.array([0.05, 0.3]))
    f, _, _ = dyn.spatial_rhs(arc[None], np.r_[y[1:], 0.0][None], np.array([[0.05, 0.3]]))
    assert ydot[0] == pytest.approx(dyn.path_speed(arc, y), rel=1e-12)
    np.testing.assert_allclose(f[0, :-1], ydot[1:] / ydot[0], rtol=1e-12)
    assert f[0, -1] == pytest.approx(1.0 / ydot[0], rel=1e-12)


@pytest.mark.unit
def test_the_chain_dynamics_are_the_cars_equations_in_s_and_in_time():
    """A car on the chain as the checks take it: at a state of the full car in a corner the
    right-hand side in s is the one in time, (q_dot, q_ddot, 1) over q1_dot, with the
    algebraic loop solved in both; its speed along the centre line is q1_dot."""
    from pyomo_lap.verify.simulate import model_dynamics
    dyn = model_dynamics(load_vehicle("fsae"), "full")
    trk = STRAIGHT.copy()
    trk[11] = 0.01
    y = np.array([100.0, 0.3, 0.02, -0.02, 0.001, 0.002, 25.0, 0.1, 0.05, 0.0, 0.0, 0.0])
    u = np.array([500.0, 0.0, 0.03])
    ydot, z = dyn.time_rates(trk, y, u)
    f, z2, ok = dyn.spatial_rhs(trk[None], np.r_[y[1:], 7.0][None], u[None], z[None])
    assert ok.all() and ydot[0] == y[6] == dyn.path_speed(trk, y)
    np.testing.assert_allclose(f[0, :-1], ydot[1:] / y[6], rtol=1e-9)
    assert f[0, -1] == pytest.approx(1.0 / y[6], rel=1e-15)
    np.testing.assert_allclose(z2[0], z, rtol=1e-6, atol=1e-3)


def _quiet(*_args, **_kwargs):
    pass


@pytest.mark.integration
@pytest.mark.parametrize("name", ["single-track", "multibody"])
def test_validate_and_the_self_check_run_on_the_model(name, tmp_path):
    """A short sector of the single-track and the multibody car (Nordschleife 1200-1360 m):
    the solve's self-check measures its collocation defects, and ``pyomo-lap validate`` gives
    a verdict with the defects and the replay. The checks evaluate the model's own equations
    (at the collocation points the spatial DAE holds to the solver's tolerance, from the
    table read back), and the car driven by the path-following driver finishes every
    segment within a small fraction of the track's width."""
    from pyomo_lap.api import solve_sector
    from pyomo_lap.api.validate import validate_results
    from pyomo_lap.results.table import read_trajectory
    from pyomo_lap.verify.defects import collocation_defects
    from pyomo_lap.verify.verdict import _inputs
    out = tmp_path / name
    res = solve_sector(track="nordschleife", vehicle="fsae", start=1200.0, length=160.0,
                       model=name, out_dir=out, echo=_quiet)
    assert {"defect_max", "defect_p95"} <= set(res.self_check["checks"])
    v = validate_results(out, plots=False, echo=_quiet)
    c = {x["name"]: x for x in v["checks"]}
    assert v["model"] == name and v["verdict"] in ("pass", "warn", "fail")
    assert {"defect_max", "defect_p95", "replay_shortfall", "replay_lateral", "replay_time",
            "replay_steering", "zigzags"} <= set(c)
    assert c["replay_shortfall"]["value"] == 0.0
    assert c["replay_lateral"]["value"] < 4.0                  # % of the width (fail above)
    tr, p = _inputs(v_summary := res.summary)
    d = collocation_defects(read_trajectory(out), tr, p, model=name,
                            start=v_summary["start_m"], interpolation="state")
    node = np.array([d.node_residual[k] / d.weights[k] for k in d.states])
    assert d.states == VEHICLE_MODELS[name].defect_states
    assert node.max() < 1e-6, dict(zip(d.states, node))
