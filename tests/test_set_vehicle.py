"""Changing the car of a built model (``pyomo_lap.ocp.build.set_vehicle``): the model becomes
the one a new build gives for the other car (checked against that build, row by row: bodies at
the same point, bounds, fixed values, scaling factors, objective), the change is refused
without touching the model when the car's equations differ in structure or the track is too
narrow for it, a solve after it ends where a solve of a new build ends, and
``solve_sector(model_cache=...)`` reuses the kept model.

The literal parameters underneath (``PyomoReplay(parameters=True)``) are checked against the
float replay of the other car's tape (a second method)."""
import numpy as np
import pyomo.environ as pyo
import pytest

from pyomo_lap import load_track, load_vehicle
from pyomo_lap.ocp.build import VehicleStructureError, build_model, set_vehicle
from pyomo_lap.ocp.initialize import initialize_model
from pyomo_lap.solvers.lap_nlp import evaluate_expression

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
    assert ma.problem.vehicle == mb.problem.vehicle
    assert ma.problem.initial_speed == mb.problem.initial_speed
    np.testing.assert_array_equal(ma.problem.point_rows.literal_values(),
                                  mb.problem.point_rows.literal_values())


@pytest.fixture(scope="module")
def track():
    return load_track("nordschleife")


@pytest.mark.component
@pytest.mark.parametrize("named", [False, True])
def test_the_changed_model_is_the_new_build_of_the_other_car(track, named):
    a = load_vehicle("fsae")
    b = _other_car(a)
    ma = build_model(track, a, named_subexpressions=named, **SECTOR)
    mb = build_model(track, b, named_subexpressions=named, **SECTOR)
    n_components = len(list(ma.component_objects()))
    numeric = [p.value for p in ma.car.numeric.values()]
    assert set_vehicle(ma, b) is ma
    # the numbers that combine the car's with the track's (g R[k]) changed too
    assert all(x != y for x, y in zip(numeric, [p.value for p in ma.car.numeric.values()]))
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
def test_a_car_of_another_structure_is_refused_and_the_model_is_unchanged(track):
    a = load_vehicle("fsae")
    assert a.mu_x0 == a.mu_y0      # equal: their products merge on the tape; apart they do not
    m = build_model(track, a, **SECTOR)
    before = {c.name: pyo.value(c) for c in m.car.literal.values()}
    with pytest.raises(VehicleStructureError, match="differ in structure"):
        set_vehicle(m, a.replace(mu_y0=a.mu_y0 * 1.03))
    assert {c.name: pyo.value(c) for c in m.car.literal.values()} == before
    assert m.problem.vehicle == a
    # too wide for the track: refused with the build's message, nothing changed
    narrow = dict(SECTOR, track_margin=1.6)       # 4 m each side: 0.7 + 1.6 fits, 2.5 + 1.6 not
    m = build_model(track, a, **narrow)
    ub = [v.ub for v in m.q2.values()]
    with pytest.raises(ValueError, match="narrower"):
        set_vehicle(m, a.replace(width=5.0))
    assert m.problem.vehicle == a and [v.ub for v in m.q2.values()] == ub
    ms = build_model(track, a, model="single-track", **SECTOR)
    with pytest.raises(ValueError, match="cannot change its car"):
        set_vehicle(ms, a.replace(m=250.0))


@pytest.mark.unit
def test_literal_parameters_give_the_other_tapes_expressions():
    """PyomoReplay with parameters, given the literal and numeric values of another tape of the
    same structure, evaluates as the float replay of that tape."""
    from pyomo_lap.spatial.tape import PyomoReplay, record, structure_key

    def rows(c):
        def fn(namer, x):
            v, tr = x["x"], x["track"]
            a = c[0] * v[0] * v[1] - c[1] / v[2] + tr[0] * c[2]
            return [a * tr[1] - v[0] + c[3], (v[1] - c[0] * tr[0]) ** 2 / (c[1] + v[0] ** 2),
                    v[2] * c[2] - tr[1] / c[3]]
        tape, outs = record(fn, {"x": 3, "track": 2})
        tape.count_uses(outs)
        return tape, outs

    ta, oa = rows([2.0, 3.0, 5.0, 7.0])
    tb, ob = rows([2.5, 3.5, 5.5, 7.5])
    names = [f"x[{k}]" for k in range(3)]
    assert structure_key(ta, oa, names) == structure_key(tb, ob, names)
    m = pyo.ConcreteModel()
    m.v = pyo.Var(range(3), initialize={0: 1.3, 1: -0.7, 2: 2.1})
    track = {"track[0]": np.array([0.4, -1.2]), "track[1]": np.array([2.0, 0.3])}
    pa = PyomoReplay(ta, oa, names, parameters=True)
    assert pa.literal_slots and pa.parameter_columns      # both kinds of parameter occur
    m.lit = pyo.Param(range(len(pa.literal_slots)), mutable=True, initialize=0.0)
    m.num = pyo.Param(range(2), range(len(pa._columns)), mutable=True, initialize=0.0)
    exprs = []
    for i in range(2):
        row = pa.numeric_values(track, 2)[i].tolist()
        for k in pa.parameter_columns:
            row[k] = m.num[i, k]
        exprs.append(pa.build([m.v[0], m.v[1], m.v[2]], row, lambda t, e: e, lambda k, e: e,
                              [m.lit[k] for k in range(len(pa.literal_slots))]))
    for k, v in enumerate(pa.literal_values()):
        m.lit[k] = v
    na = pa.numeric_values(track, 2)
    for i in range(2):
        for k in pa.parameter_columns:
            m.num[i, k] = na[i, k]
    values_a = [[pyo.value(e) for e in exprs[i]] for i in range(2)]
    # the values of car b into the parameters
    for k, v in enumerate(pa.literal_values(tb)):
        m.lit[k] = v
    nb = pa.numeric_values(track, 2, tape=tb)
    for i in range(2):
        for k in pa.parameter_columns:
            m.num[i, k] = nb[i, k]
    fb = PyomoReplay(tb, ob, names)
    for i in range(2):
        want = fb.build([m.v[0], m.v[1], m.v[2]], fb.numeric_values(track, 2)[i].tolist(),
                        lambda t, e: e, lambda k, e: e)
        got = [pyo.value(e) for e in exprs[i]]
        assert got == pytest.approx([pyo.value(e) for e in want], rel=1e-15)
        assert all(abs(x - y) > 1e-3 for x, y in zip(got, values_a[i]))   # car a's differ


@pytest.mark.integration
def test_a_solve_after_the_change_ends_where_a_new_build_ends(tmp_path):
    from pyomo_lap import solve_sector
    a = load_vehicle("fsae")
    b = _other_car(a)
    job = dict(SECTOR, echo=lambda *_: None, progress=lambda *_: None)
    _, _, _, fresh = solve_sector(vehicle=b, out_dir=None, **job)
    cache = {}
    _, _, _, first = solve_sector(vehicle=a, out_dir=tmp_path / "a", model_cache=cache, **job)
    m, _, _, again = solve_sector(vehicle=b, out_dir=tmp_path / "b", model_cache=cache, **job)
    assert not first["model_reused"] and again["model_reused"]
    assert m.problem.vehicle == b and len(cache) == 2          # the model and its track
    assert m.problem.track is next(v for k, v in cache.items() if k.startswith("track "))
    assert again["build_time_s"] < first["build_time_s"]
    assert again["iterations"] == fresh["iterations"]
    # the fast path used the recorded rows after the change, as for the new build
    assert not m.problem.point_rows.parameter_values == {}
    from pyomo_lap.solvers.lap_nlp import LapNLP
    nlp = LapNLP(m, compile="vm")
    assert nlp.report.fallback == "" and nlp.report.n_recorded_rows > 0
    # a number changed by hand (not by set_vehicle): the rows are translated from their
    # expressions instead, and the row bounds are read from the model
    m.car.literal[0, 0] = m.car.literal[0, 0].value * 1.5
    m.car.row_bound["power_limit", 0, "upper"] = 1000.0
    nlp = LapNLP(m, compile="vm")
    assert "m.car.literal" in nlp.report.fallback and nlp.report.n_recorded_rows == 0
    assert 1000.0 in nlp.g_ub
    assert again["lap_time_s"] == pytest.approx(fresh["lap_time_s"], rel=1e-10)
    assert again["lap_time_s"] > first["lap_time_s"]          # heavier, more drag, less power
    # another job: a new build, the kept model replaced
    _, _, _, other = solve_sector(vehicle=b, out_dir=None, model_cache=cache,
                                  **{**job, "length": 200.0})
    assert not other["model_reused"] and len(cache) == 2
