"""One compiled point function per model, for every car.

The per-point rows are recorded on a tape with the car's parameters as symbols
(:func:`pyomo_lap.ocp.full_model.record_point_rows`, :data:`~pyomo_lap.ocp.full_model.VEHICLE_INPUTS`):
the tape is the same for every car, the compiled CasADi functions take the car's values as an
argument (:meth:`PointRows.vehicle_values`) and are cached under a hash of the tape
(:meth:`PointRows.structure_key`). Checked here: the key is the same for any two cars (also
with parameters that are zero, one, or equal to each other, which folded operations away when
the car's numbers were constants of the recording) and differs when an option changes the
rows; the function given a car's values gives that car's rows as computed independently (the
same model code run with the car's floats, :func:`pyomo_lap.ocp.full_model.point_row_list`);
every further car is served from the cache without compiling.
"""
from __future__ import annotations

import numpy as np
import pytest

from pyomo_lap import load_vehicle
from pyomo_lap.ocp.build import OCP_CONFIG, record_point_rows
from pyomo_lap.ocp.full_model import point_row_list
from pyomo_lap.vehicle import car as veh


def _rows(p, **options):
    return record_point_rows(p, OCP_CONFIG(options))


def _float_rows(p, w, t, **options):
    """The rows of car ``p`` with floats: the model code run on numbers (no tape)."""
    rows = point_row_list(p, veh.build_chain(p), OCP_CONFIG(options), list(map(float, w)),
                          list(map(float, t)))
    def const(b):       # a bound given per point (the track's edges) is not in the body
        return b is not None and not isinstance(b, str)
    return np.array([float(r[2]) - (float(r[4]) if r[3] is None and const(r[4]) else 0.0)
                     for r in rows])


def _point(rec, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 1.0, len(rec.variables))
    w[rec.variables.index("q1_dot")] = 20.0
    t = np.concatenate([np.eye(3).ravel() + rng.uniform(-0.05, 0.05, 9),
                        rng.uniform(-0.02, 0.02, 6)])
    return w, t


@pytest.fixture(scope="module")
def cars():
    """The bundled cars, loaded once."""
    base = load_vehicle("fsae")
    return {"base": base,
            "heavy": base.replace(m=base.m + 15.0, Cx=base.Cx * 1.1, P_max=base.P_max * 0.9),
            "undamped": base.replace(c1=0.0, c2=0.0),
            "equal_mu": base.replace(mu_y0=base.mu_x0 * 1.03, E=0.0, pD2=0.0)}


@pytest.mark.unit
def test_every_car_has_the_same_rows(cars):
    """The same tape for every car, zeros, ones and equal parameters included (the issue's
    sweep: mass, aero and tyre parameters with mu_x0 = mu_y0 and zeros compiles once)."""
    keys = {name: _rows(p).structure_key() for name, p in cars.items()}
    assert len(set(keys.values())) == 1, keys
    a, b = _rows(cars["base"]), _rows(cars["heavy"])
    assert a.vehicle_inputs == b.vehicle_inputs and len(a.vehicle_inputs) > 30
    assert not np.array_equal(a.vehicle_values(cars["base"]), b.vehicle_values(cars["heavy"]))


@pytest.mark.unit
def test_an_option_that_changes_the_rows_changes_the_key(cars):
    """An option that changes the rows changes the key."""
    base = _rows(cars["base"])
    # an option that adds rows (an open sector's settled start) changes the key
    assert _rows(cars["base"], periodic=True).structure_key() != base.structure_key()
    # and the salt (the compiler, its flags, CasADi's version)
    assert base.structure_key("cc -O1") != base.structure_key("cc -O2")


@pytest.mark.unit
def test_one_function_gives_each_cars_rows(cars):
    """The function traced from the tape, given a car's values, against that car's rows by
    the model code run with its floats (another route: no tape, no symbols); two cars differ."""
    rec = _rows(cars["base"])
    F = rec.casadi_function()
    for name in ("base", "heavy", "undamped", "equal_mu"):
        p = cars[name]
        for seed in range(3):
            w, t = _point(rec, seed)
            got = np.asarray(F(w, t, rec.vehicle_values(p))).ravel()
            np.testing.assert_allclose(got, _float_rows(p, w, t), rtol=1e-11, atol=1e-9,
                                       err_msg=name)
    w, t = _point(rec, 7)
    a = np.asarray(F(w, t, rec.vehicle_values(cars["base"]))).ravel()
    b = np.asarray(F(w, t, rec.vehicle_values(cars["heavy"]))).ravel()
    assert np.max(np.abs(a - b)) > 1e-3


@pytest.mark.component
def test_a_second_car_loads_the_compiled_library_without_compiling(cars, tmp_path, monkeypatch):
    """A second car loads the compiled library without compiling."""
    from pyomo_lap.solvers.lap.compiled import point_functions
    from pyomo_lap.util.casadi_compile import find_compiler
    if find_compiler() is None:
        pytest.fail("no C compiler: the compiled path cannot be checked (install gcc)")
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(tmp_path))
    a, b = _rows(cars["base"]), _rows(cars["heavy"])
    first = point_functions(a)
    assert first["functions"].compiled and first["functions"].compile_s > 0
    files = sorted(p.name for p in tmp_path.iterdir())
    for name in ("heavy", "undamped", "equal_mu"):       # every other car: from the cache
        got = point_functions(_rows(cars[name]))
        assert got["functions"].compiled and got["functions"].compile_s == 0, name
    assert sorted(p.name for p in tmp_path.iterdir()) == files      # nothing compiled
    second = point_functions(b)
    vb = b.vehicle_values(cars["heavy"])
    w, t = _point(b, 3)
    got = np.asarray(second["functions"]["point_f"](w, t, vb)).ravel()
    np.testing.assert_allclose(got, _float_rows(cars["heavy"], w, t), rtol=1e-11, atol=1e-9)
    # the Jacobian: compiled (shared library) against CasADi's AD of the traced function,
    # its values and its sparsity (the pattern the NLP's Jacobian is built from)
    import casadi as ca
    rows, jac = second["functions"]["point_fj"](w, t, vb)
    ws = ca.SX.sym("w", len(w))
    J = ca.Function("J", [ws], [ca.jacobian(b.casadi_function()(ws, t, vb), ws)])(w).full()
    np.testing.assert_allclose(np.asarray(jac), J, rtol=1e-12, atol=1e-10)
    jr, jc = second["jac_sparsity"]
    outside = np.ones(J.shape, dtype=bool)
    outside[jr, jc] = False
    assert np.all(J[outside] == 0.0) and np.count_nonzero(J[jr, jc]) > 0.9 * jr.size


@pytest.mark.component
def test_two_threads_asking_at_once_compile_once(cars, tmp_path, monkeypatch):
    """The compile thread started before a build and the solve ask for the functions of one
    structure at once, on an empty cache: one compiles (under the entry's lock, filelock), the
    other waits and loads the same libraries; both get compiled functions."""
    from concurrent.futures import ThreadPoolExecutor

    from pyomo_lap.solvers.lap.compiled import point_functions
    from pyomo_lap.util.casadi_compile import find_compiler, library_suffix
    if find_compiler() is None:
        pytest.fail("no C compiler: the compiled path cannot be checked (install gcc)")
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(tmp_path))
    recs = [_rows(cars["base"]), _rows(cars["heavy"])]
    with ThreadPoolExecutor(2) as pool:
        got = [f.result() for f in [pool.submit(point_functions, rec) for rec in recs]]
    funs = [g["functions"] for g in got]
    assert all(f.compiled for f in funs), [f.reason for f in funs]
    assert sorted(f.compile_s > 0 for f in funs) == [False, True]
    assert funs[0].paths == funs[1].paths
    assert len(list(tmp_path.glob(f"*{library_suffix()}"))) == 3


@pytest.mark.component
def test_compile_ahead_makes_the_first_solve_find_its_functions(tmp_path, monkeypatch):
    """``pyomo-lap compile`` (the set-up runs it) leaves the libraries a solve's background
    compile would otherwise make: the job's thread then finds them (``compiling`` False), a
    structure it did not make (another adherence form) is compiled and said to be."""
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    from pyomo_lap.ocp.build import point_rows_recorder
    from pyomo_lap.solvers.lap.compiled import point_functions_cached, prefetch_point_functions
    from pyomo_lap.util.casadi_compile import find_compiler
    if find_compiler() is None:
        pytest.fail("no C compiler: the set-up's compile step and this test need one")
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(tmp_path / "cache"))
    import pyomo_lap.solvers.lap.precompile as precompile
    monkeypatch.setattr(precompile, "COMPILE_AHEAD", precompile.COMPILE_AHEAD[:1])   # one job: 4 s
    p = load_vehicle("fsae")
    rec = record_point_rows(p, OCP_CONFIG({"periodic": False}))
    assert not point_functions_cached(rec)
    r = CliRunner().invoke(main, ["compile"])
    assert r.exit_code == 0, r.output
    assert "1 compiled, 0 already there" in r.output
    assert point_functions_cached(rec)
    r = CliRunner().invoke(main, ["compile"])
    assert "0 compiled, 1 already there" in r.output
    t = prefetch_point_functions(point_rows_recorder(p.replace(m=p.m + 20.0),
                                                     {"model": "full", "periodic": False}))
    t.join()
    assert t.compiling is False                       # another car: the same libraries
    t = prefetch_point_functions(point_rows_recorder(p, {"model": "full", "periodic": False,
                                                         "adherence": "squared"}))
    t.join()
    assert t.compiling is True and t.compile_s > 0
