"""The car as a Pyomo object: the parameters ``m.vehicle.<section>.<key>`` and changing the car
of a built model (``pyomo_lap.ocp.build.set_vehicle``, ``m.vehicle.refresh()``): the model becomes the
one a new build gives for the other car (checked against that build, row by row: bodies at the
same point, bounds, fixed values, scaling factors, objective), whether the car is given as a
whole or one parameter is changed by hand (``m.vehicle.mass.total.fix(250)``); the change is
refused without touching the model when the track is too narrow for the car; a solve after it
ends where a solve of a new build ends, and ``solve_sector(model_cache=...)`` reuses the kept
model.

The global nodes of the replay (the car's parameters alone, built once per model) are checked
against the float replay of the tape (a second method)."""
import numpy as np
import pyomo.environ as pyo
import pytest

from pyomo_lap import load_track, load_vehicle
from pyomo_lap.ocp.build import build_model, set_vehicle
from pyomo_lap.ocp.initialize import initialize_model
from pyomo_lap.solvers.lap.checks import evaluate_expression

SECTOR = {"start": 1200.0, "length": 300.0, "nfe": 30}


def _other_car(p):
    """Every kind of number the model takes from the car changed: the masses (loads,
    inertia, scaling), aero, power (a row bound), steering (a control bound), width (the
    track limits), a spring rate."""
    return p.replace(m=p.m + 15.0, Cx=p.Cx * 1.1, width=p.width * 1.02, P_max=p.P_max * 0.9,
                     delta_max=p.delta_max * 0.95, k1=p.k1 * 1.2, gravity=9.80665)


def _same_model(ma, mb):
    """Assert that two models are the same NLP: the same variables (bounds, fixed, values),
    the same rows in the same order with the same bounds and the same body values at a
    perturbed point, the same scaling factors and objective."""
    va = list(ma.component_data_objects(pyo.Var))
    vb = list(mb.component_data_objects(pyo.Var))
    assert [v.name for v in va] == [v.name for v in vb]
    for a, b in zip(va, vb):
        assert (a.bounds, a.fixed, a.value) == (b.bounds, b.fixed, b.value), a.name
    rng = np.random.default_rng(1)
    for a, b in zip(va, vb):
        if not a.fixed:
            x = (a.value or 0.0) * (1 + 0.01 * rng.standard_normal()) + 1e-3 * rng.standard_normal()
            a.set_value(x, skip_validation=True)
            b.set_value(x, skip_validation=True)
    ca = list(ma.component_data_objects(pyo.Constraint, active=True))
    cb = list(mb.component_data_objects(pyo.Constraint, active=True))
    assert [c.name for c in ca] == [c.name for c in cb]
    memo_a, memo_b = {}, {}
    for a, b in zip(ca, cb):
        assert (a.lb, a.ub, a.equality) == (b.lb, b.ub, b.equality), a.name
        assert evaluate_expression(a.body, memo_a) == evaluate_expression(b.body, memo_b), a.name
    sa = {c.name: v for c, v in ma.scaling_factor.items()}
    sb = {c.name: v for c, v in mb.scaling_factor.items()}
    assert sa == sb
    assert pyo.value(ma.objective) == pyo.value(mb.objective)
    assert ma.vehicle.built_for == mb.vehicle.built_for
    assert ma.problem.initial_speed == mb.problem.initial_speed


@pytest.fixture(scope="module")
def track():
    """The bundled Nordschleife."""
    return load_track("nordschleife")


@pytest.mark.component
@pytest.mark.parametrize("named", [False, True])
def test_the_changed_model_is_the_new_build_of_the_other_car(track, named):
    """The changed model is the new build of the other car."""
    a = load_vehicle("fsae")
    b = _other_car(a)
    ma = build_model(track, a, named_subexpressions=named, **SECTOR)
    mb = build_model(track, b, named_subexpressions=named, **SECTOR)
    n_components = len(list(ma.component_objects()))
    assert set_vehicle(ma, b) is ma
    assert ma.vehicle.mass.total.value == b.m and ma.vehicle.aero.Cx.value == b.Cx
    assert len(list(ma.component_objects())) == n_components        # nothing added or removed
    initialize_model(ma)
    initialize_model(mb)
    _same_model(ma, mb)
    # and back: the first car's model again
    mc = build_model(track, a, named_subexpressions=named, **SECTOR)
    set_vehicle(ma, a)
    initialize_model(ma)
    initialize_model(mc)
    _same_model(ma, mc)


@pytest.mark.component
def test_the_multibody_car_changed_in_place_is_the_new_build(track):
    """The multibody model's rows take the car's parameters as m.vehicle.* too (its
    [multibody] section among them): set_vehicle gives the new build of the other car."""
    a = load_vehicle("fsae")
    b = _other_car(a).replace({"multibody.tyre_stiffness": a.tyre_kz * 1.3})
    ma = build_model(track, a, model="multibody", **SECTOR)
    mb = build_model(track, b, model="multibody", **SECTOR)
    assert set_vehicle(ma, b) is ma
    assert ma.vehicle.multibody.tyre_stiffness.value == b.tyre_kz
    initialize_model(ma)
    initialize_model(mb)
    _same_model(ma, mb)


@pytest.mark.component
def test_the_single_track_car_changed_in_place_is_the_new_build(track):
    """The single-track model's rows take the car's parameters as m.vehicle.* (the same
    recording machinery): set_vehicle gives the new build of the other car, and a parameter
    of the axle's tyre (pK1) reaches its rows by name."""
    a = load_vehicle("fsae")
    b = _other_car(a).replace(pK1=a.pK1 * 0.9, mu_y0=a.mu_y0 * 1.05)
    ma = build_model(track, a, model="single-track", **SECTOR)
    mb = build_model(track, b, model="single-track", **SECTOR)
    assert ma.vehicle.mass.total.value == a.m
    sf = ma.scaling_factor
    assert set_vehicle(ma, b) is ma
    assert ma.scaling_factor is sf                     # changed in place, not replaced
    initialize_model(ma)
    initialize_model(mb)
    _same_model(ma, mb)


@pytest.mark.component
def test_a_parameter_changed_by_name_is_the_new_build(track):
    """``m.vehicle.<section>.<key>.fix(value)`` and the sync every solve makes (bounds, entry
    speed, scaling follow): the model of a new build with that car; any two cars share the
    rows (zeros and equal parameters included), so nothing is refused for its values."""
    a = load_vehicle("fsae")
    m = build_model(track, a, **SECTOR)
    assert a.mu_x0 == a.mu_y0
    for key, value in (("mass.total", 250.0), ("tyre.mu_y0", a.mu_y0 * 1.03), ("tyre.E", 0.0),
                       ("geometry.width", 1.45), ("steering.delta_max", 0.4)):
        m.vehicle.component(key.split(".")[0]).component(key.split(".")[1]).fix(value)
    assert m.vehicle.refresh() and not m.vehicle.refresh()        # once, then nothing to do
    b = a.replace({"mass.total": 250.0, "tyre.mu_y0": a.mu_y0 * 1.03, "tyre.E": 0.0,
                   "geometry.width": 1.45, "steering.delta_max": 0.4})
    assert m.vehicle.built_for == b
    mb = build_model(track, b, **SECTOR)
    initialize_model(m)
    initialize_model(mb)
    _same_model(m, mb)
    # units and the schema's range on every parameter
    assert str(pyo.units.get_units(m.vehicle.mass.Izz)) == "kg*m**2"
    assert m.vehicle.powertrain.brake_ratio.bounds == (0.0, 1.0)
    # a value the schema refuses: said before anything changes
    m.vehicle.mass.unsprung.fix(300.0)          # above the total mass
    with pytest.raises(ValueError, match="unsprung"):
        m.vehicle.refresh()
    assert m.vehicle.built_for == b


def _same_numbers(m, mb):
    """The car-dependent numbers of two models are the same, entry by entry in component
    order (names may differ: ``m`` may be a block of a user's model): the variables' bounds,
    which are fixed and at what value, the rows' bounds, the scaling factors."""
    va = list(m.component_data_objects(pyo.Var))
    vb = list(mb.component_data_objects(pyo.Var))
    assert len(va) == len(vb)
    for a, b in zip(va, vb):
        assert (a.bounds, a.fixed) == (b.bounds, b.fixed), a.name
        if a.fixed:
            assert a.value == b.value, a.name
    ca = list(m.component_data_objects(pyo.Constraint))
    cb = list(mb.component_data_objects(pyo.Constraint))
    assert [(c.lb, c.ub) for c in ca] == [(c.lb, c.ub) for c in cb]
    assert list(m.scaling_factor.values()) == list(mb.scaling_factor.values())


@pytest.mark.component
@pytest.mark.parametrize("how", ["solve_model", "SolverFactory"])
def test_a_parameter_fixed_by_hand_is_solved_with_the_new_cars_bounds(track, how):
    """After ``m.vehicle.<section>.<key>.fix(new)``, a solve through ``solve_model``, or through
    ``pyomo.environ.SolverFactory('lap_ipopt')`` on a user's model holding the built model as a
    block, uses the bounds, the entry speed and the scaling factors of a new build for that
    car (found through the car block's ``refresh``); the steering bound is the new
    ``delta_max`` (closed form). ``m.problem`` keeps no car."""
    from pyomo_lap.solvers.solve import solve_model
    a = load_vehicle("fsae")
    short = dict(SECTOR, length=150.0, nfe=10)
    m = build_model(track, a, **short)
    assert not hasattr(m.problem, "vehicle")
    initialize_model(m)
    m.vehicle.steering.delta_max.fix(0.8 * a.delta_max)
    m.vehicle.mass.total.fix(a.m + 30.0)
    b = a.replace({"steering.delta_max": 0.8 * a.delta_max, "mass.total": a.m + 30.0})
    mb = build_model(track, b, **short)
    if how == "solve_model":
        assert solve_model(m).ok
    else:
        u = pyo.ConcreteModel()
        u.lap = m
        res = pyo.SolverFactory("lap_ipopt").solve(u)
        assert str(res.solver.termination_condition) == "optimal"
    assert m.vehicle.built_for == b
    assert all(v.bounds == (-b.delta_max, b.delta_max) for v in m.delta.values())
    _same_numbers(m, mb)


@pytest.mark.component
def test_a_car_the_track_cannot_take_is_refused_and_the_model_is_unchanged(track):
    """A car the track cannot take is refused and the model is unchanged."""
    a = load_vehicle("fsae")
    # too wide for the track: refused with the build's message, nothing changed
    narrow = dict(SECTOR, track_margin=2.2)       # 4 m each side: 0.7 + 2.2 fits, 1.86 + 2.2 not
    m = build_model(track, a, **narrow)
    ub = [v.ub for v in m.q2.values()]
    with pytest.raises(ValueError, match="narrower"):     # contact patches 1.21 + 2.5 m apart
        set_vehicle(m, a.replace(tw1=2.5, tw2=2.5))
    assert m.vehicle.built_for == a and [v.ub for v in m.q2.values()] == ub
    # a vehicle model without set_vehicle (the point-mass example: its rows hold numbers)
    from pyomo_lap.ocp.point_mass import POINT_MASS_MODEL
    mp = build_model(track, a, model=POINT_MASS_MODEL, **SECTOR)
    with pytest.raises(ValueError, match="cannot change its car"):
        set_vehicle(mp, a.replace(m=250.0))


@pytest.mark.unit
def test_global_nodes_are_built_once_and_give_the_tapes_values():
    """PyomoReplay with global inputs (the car's parameters): the nodes of the parameters
    alone are built once (the same expression objects at every point) and the point
    expressions evaluate as the float evaluation of the tape (a second method)."""
    from pyomo_lap.spatial.tape import PyomoReplay, record

    def fn(namer, x):
        v, tr, c = x["x"], x["track"], x["car"]
        k = c[0] * c[1] / (c[2] + c[3])            # the car's parameters alone
        a = k * v[0] * v[1] - c[1] / v[2] + tr[0] * c[2]
        return [a * tr[1] - v[0] + c[3], (v[1] - k * tr[0]) ** 2 / (c[1] + v[0] ** 2),
                v[2] * k - tr[1] / c[3]]
    tape, outs = record(fn, {"x": 3, "track": 2, "car": 4})
    tape.count_uses(outs)
    m = pyo.ConcreteModel()
    m.v = pyo.Var(range(3), initialize={0: 1.3, 1: -0.7, 2: 2.1})
    m.c = pyo.Var(range(4), initialize={0: 2.0, 1: 3.0, 2: 5.0, 3: 7.0})
    names = [f"x[{k}]" for k in range(3)]
    cars = [f"car[{k}]" for k in range(4)]
    track = {"track[0]": np.array([0.4, -1.2]), "track[1]": np.array([2.0, 0.3])}
    r = PyomoReplay(tape, outs, names, global_inputs=cars)
    assert r.used_globals
    gl = r.build_globals([m.c[k] for k in range(4)], lambda t, e: e, None)
    nums = r.numeric_values(track, 2)
    exprs = [r.build([m.v[0], m.v[1], m.v[2]], nums[i].tolist(), lambda t, e: e,
                     lambda k, e: e, gl) for i in range(2)]
    for i in range(2):
        inputs = {**{n: m.v[k].value for k, n in enumerate(names)},
                  **{n: m.c[k].value for k, n in enumerate(cars)},
                  **{k: v[i] for k, v in track.items()}}
        want = [float(x) for x in tape.evaluate(inputs, outs)]
        assert [pyo.value(e) for e in exprs[i]] == pytest.approx(want, rel=1e-14)
    m.c[0].set_value(2.5)                       # another car: the same expressions
    inputs = {**{n: m.v[k].value for k, n in enumerate(names)},
              **{n: m.c[k].value for k, n in enumerate(cars)},
              **{k: v[1] for k, v in track.items()}}
    assert [pyo.value(e) for e in exprs[1]] == pytest.approx(
        [float(x) for x in tape.evaluate(inputs, outs)], rel=1e-14)


@pytest.mark.integration
def test_a_solve_after_the_change_ends_where_a_new_build_ends(tmp_path):
    """A solve after the change ends where a new build ends."""
    from pyomo_lap import solve_sector
    a = load_vehicle("fsae")
    b = _other_car(a)
    job = dict(SECTOR, echo=lambda *_: None, progress=lambda *_: None)
    _, _, _, fresh = solve_sector(vehicle=b, out_dir=None, **job)
    cache = {}
    _, _, _, first = solve_sector(vehicle=a, out_dir=tmp_path / "a", model_cache=cache, **job)
    m, _, _, again = solve_sector(vehicle=b, out_dir=tmp_path / "b", model_cache=cache, **job)
    assert not first["model_reused"] and again["model_reused"]
    assert m.vehicle.built_for == b and len(cache) == 2          # the model and its track
    assert m.problem.track is next(v for k, v in cache.items() if k.startswith("track "))
    assert again["build_time_s"] < first["build_time_s"]
    assert again["iterations"] == fresh["iterations"]
    # the fast path used the recorded rows after the change, as for the new build
    from pyomo_lap.solvers.lap.nlp import LapNLP
    nlp = LapNLP(m, compile="vm")
    assert nlp.report.fallback == "" and nlp.report.n_recorded_rows > 0
    assert again["lap_time_s"] == pytest.approx(fresh["lap_time_s"], rel=1e-10)
    assert again["lap_time_s"] > first["lap_time_s"]          # heavier, more drag, less power
    # another job: a new build, the kept model replaced
    _, _, _, other = solve_sector(vehicle=b, out_dir=None, model_cache=cache,
                                  **{**job, "length": 200.0})
    assert not other["model_reused"] and len(cache) == 2
