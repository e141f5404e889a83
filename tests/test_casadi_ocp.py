"""The CasADi twin of the OCP (pyomo_lap.solvers.casadi_ocp): the same NLP as the Pyomo model, row by
row at the initial guess (unit), and the same optimum as the Pyomo route through IPOPT
(integration).

The reference values of the Pyomo constraints come from Pyomo's own expression trees (the
named ``m.car`` expressions built by car_equations on Pyomo scalars), evaluated with floats;
the CasADi values from car_equations evaluated on casadi.SX symbols, mapped over the points.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pyomo.environ as pyo
import pytest

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.solvers.casadi_ocp import build_casadi_nlp, load_solution, pyomo_to_casadi, solve_casadi

CAR_FAMILIES = {"ode_qdot", "loads_eq", "inplane_eq", "power_limit", "adherence", "speed_min",
                "settled_start"}


@pytest.fixture(scope="module")
def setup():
    return load_track("nordschleife"), load_vehicle("fsae")


def _circle(R=60.0):
    from pyomo_lap import Track
    u = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    pts = np.c_[R * np.cos(u), R * np.sin(u), np.zeros_like(u)]
    return Track.from_points(pts, closed=True, smoothing=0, name="circle60")


def _pyomo_bodies(m, constraints):
    """Bodies of the Pyomo constraints at the current values, from Pyomo's expression trees.

    pyo.value() re-evaluates a nested named Expression at each use (minutes per car
    equation), so the trees are evaluated with a cache of the named expressions; the cache-free
    pyo.value() is used where it is cheap (bodies without m.car expressions) and for a sample
    of car rows, to check that evaluator."""
    cache = {}
    out = np.array([pyomo_to_casadi(c.body, lambda v: v.value, cache, functions=math)
                    for c in constraints])
    cheap = [i for i, c in enumerate(constraints)
             if c.parent_component().local_name not in CAR_FAMILIES]
    direct = np.array([pyo.value(constraints[i].body) for i in cheap])
    assert np.allclose(out[cheap], direct, rtol=1e-13, atol=1e-12)
    for fam in ("adherence", "power_limit", "speed_min"):   # car rows with a shallow tree
        i = next(i for i, c in enumerate(constraints) if c.parent_component().local_name == fam)
        assert out[i] == pytest.approx(pyo.value(constraints[i].body), rel=1e-13, abs=1e-12)
    return out


def _check_same_nlp(m, nlp):
    # the same variables: every unfixed variable that is in a constraint, nothing else
    cols = {id(v) for v in nlp.variables}
    assert len(cols) == nlp.n_variables
    used, cache = set(), {}
    for c in m.component_data_objects(pyo.Constraint, active=True):
        used.update(id(v) for v in pyo.expr.identify_variables(
            c.body, include_fixed=False, named_expression_cache=cache))
    assert cols == used
    # same bounds, initial values and scaling
    sf = m.scaling_factor
    for k, v in enumerate(nlp.variables):
        d = sf.get(v, 1.0)
        assert nlp.x_scale[k] == d
        assert nlp.x0[k] == pytest.approx(d * v.value, rel=1e-15)
        assert nlp.lbx[k] == (d * v.lb if v.lb is not None else -np.inf)
        assert nlp.ubx[k] == (d * v.ub if v.ub is not None else np.inf)
    # the same constraints: every active constraint once, same bounds and scaling
    cons = list(m.component_data_objects(pyo.Constraint, active=True))
    assert len(nlp.constraints) == len(cons)
    assert {id(c) for c in nlp.constraints} == {id(c) for c in cons}
    for k, c in enumerate(nlp.constraints):
        d = sf.get(c, 1.0)
        assert nlp.g_scale[k] == d
        assert nlp.lbg[k] == (d * c.lb if c.lb is not None else -np.inf)
        assert nlp.ubg[k] == (d * c.ub if c.ub is not None else np.inf)
    # the same bodies at the initial guess
    g = nlp.constraint_values()
    ref = _pyomo_bodies(m, nlp.constraints)
    # relative to the size of the row's terms (residuals at the guess can be ~0)
    size = np.maximum(1.0, np.abs(ref))
    bad = np.flatnonzero(np.abs(g - ref) > 1e-9 * size)
    assert bad.size == 0, [(nlp.constraints[i].name, g[i], ref[i]) for i in bad[:5]]
    # the physics rows are far from trivially equal: they are not all ~0 at the guess
    assert np.abs(g).max() > 1.0
    # the same objective
    assert nlp.objective_value() == pytest.approx(pyo.value(m.objective), rel=1e-13)
    assert nlp.f_scale == sf.get(m.objective, 1.0)


@pytest.mark.component
@pytest.mark.parametrize("mode", ["SX", "MX"])
def test_same_nlp_as_pyomo_open_sector(setup, mode):
    tr, p = setup
    m = build_model(tr, p, start=0.0, length=200.0, nfe=10, ncp=3)
    initialize_model(m)
    nlp = build_casadi_nlp(m, mode=mode)
    _check_same_nlp(m, nlp)
    # t at s = 0 and the entry rates are fixed: constants, not variables
    assert id(m.t[m.s.first()]) not in {id(v) for v in nlp.variables}
    assert nlp.lap_time(np.array([v.value for v in nlp.variables])) == \
        pytest.approx(pyo.value(m.lap_time), rel=1e-14)


@pytest.mark.component
def test_same_nlp_as_pyomo_legendre_free_entry_speed(setup):
    tr, p = setup
    m = build_model(tr, p, start=1500.0, length=150.0, nfe=8, ncp=2,
                    scheme="LAGRANGE-LEGENDRE", initial_speed="free")
    initialize_model(m)
    assert any(c.local_name.endswith("_cont_eq") for c in m.component_objects(pyo.Constraint))
    _check_same_nlp(m, build_casadi_nlp(m, mode="SX"))


@pytest.mark.component
def test_same_nlp_as_pyomo_periodic_lap_and_user_constraint():
    m = build_model(_circle(), load_vehicle("fsae"), nfe=10, ncp=3, periodic=True)
    initialize_model(m)
    # a constraint added by a user goes through the expression converter
    m.speed_cap = pyo.Constraint(expr=m.q1_dot[m.s.at(5)] ** 2 <= 30.0 ** 2)
    nlp = build_casadi_nlp(m, mode="MX")
    assert "periodic" in {c.parent_component().local_name for c in nlp.constraints}
    _check_same_nlp(m, nlp)


@pytest.mark.component
def test_package_imports_without_casadi():
    """CasADi is optional: pyomo_lap (and this module) import without it, and building the
    twin says what to install."""
    code = ("import sys; sys.modules['casadi'] = None\n"
            "import pyomo_lap, pyomo_lap.solvers.casadi_ocp as c\n"
            "try:\n    c.build_casadi_nlp(None)\nexcept ImportError as e:\n    print('ERR', e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)  # a hang guard, not a speed check
    assert out.returncode == 0, out.stderr
    assert "ERR" in out.stdout and "casadi" in out.stdout


@pytest.mark.integration
def test_same_optimum_as_pyomo_ipopt(setup):
    """Solved tightly by both routes, the two IPOPTs reach the same point: the sector time
    agrees far inside the issue's 0.1 %, and so do the trajectories."""
    tr, p = setup
    m = build_model(tr, p, start=500.0, length=200.0, nfe=20, ncp=3)
    initialize_model(m)
    nlp = build_casadi_nlp(m, mode="SX")
    tight = {"tol": 1e-9, "acceptable_tol": 1e-8}
    rep = solve_model(m, solver="ipopt", options=tight)      # the ASL path: Pyomo's NL file
    assert rep.ok, rep.termination_condition
    res = solve_casadi(nlp, options=tight)
    assert res.ok, res.return_status
    # the CasADi NLP has the size IPOPT reported for Pyomo's NL file
    assert (res.n_variables, res.n_constraints) == (rep.n_variables, rep.n_constraints)
    t_pyomo = pyo.value(m.lap_time)
    assert abs(res.lap_time_s / t_pyomo - 1) < 1e-3          # the criterion
    assert res.lap_time_s == pytest.approx(t_pyomo, rel=1e-6)
    # time is the quadrature of ds / q1_dot of the CasADi solution (independent of IPOPT)
    x_pyomo = {name: np.array([v.value for v in m.component(name).values()])
               for name in ("q1_dot", "q2", "q3", "q6", "t", "delta")}
    load_solution(m, nlp, res)
    x_cas = {name: np.array([v.value for v in m.component(name).values()]) for name in x_pyomo}
    s = np.array(list(m.s))
    assert x_cas["t"][-1] == pytest.approx(np.trapezoid(1 / x_cas["q1_dot"], s), rel=2e-3)
    assert np.abs(x_cas["q1_dot"] - x_pyomo["q1_dot"]).max() < 1e-3    # m/s
    assert np.abs(x_cas["q2"] - x_pyomo["q2"]).max() < 1e-3            # m
    assert np.abs(x_cas["q3"] - x_pyomo["q3"]).max() < 1e-4            # rad
    assert np.abs(x_cas["q6"] - x_pyomo["q6"]).max() < 1e-4            # rad
    assert np.abs(x_cas["delta"] - x_pyomo["delta"]).max() < 1e-4      # rad
    assert np.abs(x_cas["t"] - x_pyomo["t"]).max() < 1e-5              # s
    assert pyo.value(m.lap_time) == pytest.approx(res.lap_time_s, rel=1e-14)
