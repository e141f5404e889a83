"""One compiled point function per model structure, not per car.

The per-point rows are recorded on a tape with the car's numbers folded in
(:func:`pyomo_lap.ocp.full_model.record_point_rows`). The compiled CasADi functions take those
numbers as an argument (:meth:`PointRows.literal_values`) and are cached under a hash of the
tape's structure (:meth:`PointRows.structure_key`), so that two cars that differ only in
parameter values share one library. Checked here: the key is the same for such cars and
differs when the structure does; the function with the literals as an argument gives, for
another car's literals, exactly that car's rows as computed independently (the tape evaluated
with floats, and the CasADi function with the constants built in); a second car is served
from the cache without compiling.
"""
from __future__ import annotations

import numpy as np
import pytest

from pyomo_lap import load_vehicle
from pyomo_lap.ocp.build import OCP_CONFIG, record_point_rows
from pyomo_lap.vehicle import car as veh


def _rows(p, **options):
    return record_point_rows(p, veh.build_chain(p), OCP_CONFIG(options))


def _point(rec, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 1.0, len(rec.variables))
    w[rec.variables.index("q1_dot")] = 20.0
    t = np.concatenate([np.eye(3).ravel() + rng.uniform(-0.05, 0.05, 9),
                        rng.uniform(-0.02, 0.02, 6)])
    return w, t


@pytest.fixture(scope="module")
def cars():
    base = load_vehicle("fsae")
    return {"base": base,
            "heavy": base.replace(m=base.m + 15.0, Cx=base.Cx * 1.1, P_max=base.P_max * 0.9),
            "undamped": base.replace(c1=0.0, c2=0.0)}


@pytest.mark.unit
def test_cars_of_one_structure_share_the_key_and_differ_in_literals(cars):
    a, b = _rows(cars["base"]), _rows(cars["heavy"])
    assert a.structure_key() == b.structure_key()
    la, lb = a.literal_values(), b.literal_values()
    assert la.shape == lb.shape and la.size > 50
    assert not np.array_equal(la, lb)            # the car's numbers are in the literals


@pytest.mark.unit
def test_a_change_of_structure_changes_the_key(cars):
    base = _rows(cars["base"])
    # no dampers: the damping products fold away, another structure
    assert _rows(cars["undamped"]).structure_key() != base.structure_key()
    # an option that adds rows (an open sector's settled start) too
    assert _rows(cars["base"], periodic=True).structure_key() != base.structure_key()
    # and the salt (the compiler, its flags, CasADi's version)
    assert base.structure_key("cc -O1") != base.structure_key("cc -O2")


@pytest.mark.unit
def test_one_function_gives_each_cars_rows_exactly(cars):
    """The function with the literals as argument made from car A's tape, given car B's
    literals: the very operations of car B's own function (bit for bit), and B's rows as the
    tape evaluates them with floats and as CasADi computes them with B's numbers built in
    (CasADi simplifies some operations on constants: equal to rounding)."""
    a, b = _rows(cars["base"]), _rows(cars["heavy"])
    F = a.casadi_function(literals=True)          # made from car A's tape
    Fb_lit = b.casadi_function(literals=True)     # made from car B's tape
    Fb = b.casadi_function()                      # car B's numbers built in
    for seed in range(5):
        w, t = _point(b, seed)
        got = np.asarray(F(w, t, b.literal_values())).ravel()
        assert np.array_equal(got, np.asarray(Fb_lit(w, t, b.literal_values())).ravel())
        inputs = dict(zip(b.variables, w)) | dict(zip(b.track_inputs, t))
        floats = np.array([float(v) for v in b.tape.evaluate(inputs, b.outputs)])
        np.testing.assert_allclose(got, floats, rtol=1e-13, atol=1e-10)
        np.testing.assert_allclose(got, np.asarray(Fb(w, t)).ravel(), rtol=1e-13, atol=1e-10)
        # and car A's literals give car A's rows, not B's
        own = np.asarray(F(w, t, a.literal_values())).ravel()
        np.testing.assert_allclose(own, np.asarray(a.casadi_function()(w, t)).ravel(),
                                   rtol=1e-13, atol=1e-10)
        assert np.max(np.abs(own - got)) > 1e-3


@pytest.mark.component
def test_a_second_car_loads_the_compiled_library_without_compiling(cars, tmp_path, monkeypatch):
    from pyomo_lap.solvers.lap_nlp import point_functions
    from pyomo_lap.util.casadi_compile import find_compiler
    if find_compiler() is None:
        pytest.fail("no C compiler: the compiled path cannot be checked (install gcc)")
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(tmp_path))
    a, b = _rows(cars["base"]), _rows(cars["heavy"])
    first = point_functions(a)
    assert first["functions"].compiled and first["functions"].compile_s > 0
    files = sorted(p.name for p in tmp_path.iterdir())
    second = point_functions(b)
    assert second["functions"].compiled and second["functions"].compile_s == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == files      # nothing compiled
    np.testing.assert_array_equal(second["literals"], b.literal_values())
    w, t = _point(b, 3)
    got = np.asarray(second["functions"]["point_f"](w, t, second["literals"])).ravel()
    np.testing.assert_allclose(got, np.asarray(b.casadi_function()(w, t)).ravel(),
                               rtol=1e-13, atol=1e-10)
    # Jacobian values: compiled (shared library) against CasADi's AD of car B's own function
    import casadi as ca
    rows, jac = second["functions"]["point_fj"](w, t, second["literals"])
    ws = ca.SX.sym("w", len(w))
    J = ca.Function("J", [ws], [ca.jacobian(b.casadi_function()(ws, t), ws)])(w).full()
    jr, jc = second["jac_sparsity"]
    np.testing.assert_allclose(np.asarray(jac).ravel(), J[jr, jc], rtol=1e-12, atol=1e-10)
    # a car of another structure compiles its own
    third = point_functions(_rows(cars["undamped"]))
    assert third["functions"].compile_s > 0
