"""Tests of the ``lap_ipopt`` solver (:mod:`pyomo_lap.solvers.lap.solver`, :mod:`pyomo_lap.solvers.lap.nlp`).

The fast path is checked against things computed without it:

* Pyomo's classic ``ipopt`` interface (NL file, AMPL solver library, the IPOPT 3.11 executable
  of the virtual environment) on the same models: primal values, objective, lap time, and the
  suffixes ``dual``, ``ipopt_zL_out``, ``ipopt_zU_out``;
* the sensitivity of the optimal value to a bound (re-solving with the bound moved by
  +-1e-4): the sign convention of the duals and reduced costs, ``dual = d f*/d b``;
* the model's own Pyomo expressions, evaluated with floats by a walker written here, at the
  solution (feasibility) and before a solve (the corrupted tape is really different).

A sector of 150 m with 10 elements solves in well under a second with ``lap_ipopt`` and in
about a second with the classic ``ipopt``; the Ctrl-C test solves a 2 km sector in a
subprocess. The whole file runs in about 15 s.
"""
from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.factory import SolverFactory as NewSolverFactory
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.core.expr import Expr_if
from pyomo.core.expr.numeric_expr import Expr_ifExpression

import pyomo_lap  # noqa: F401  (registers lap_ipopt)
from pyomo_lap import build_model, initialize_model, load_track, load_vehicle
from pyomo_lap.solvers.lap.nlp import LapNLP
from pyomo_lap.solvers.lap.checks import RecordedRowsMismatch
from pyomo_lap.solvers.lap.solver import LapIpopt
from pyomo_lap.solvers.solve import DEFAULT_IPOPT_OPTIONS, SolverNotFoundError, ensure_solver, solve_model

SECTOR = dict(start=500, length=150, nfe=10, ncp=2)
TIGHT = {"tol": 1e-8}
SUFFIXES = ("dual", "rc", "ipopt_zL_out", "ipopt_zU_out")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _sigint_as_in_a_terminal():
    """In the child: Ctrl-C handled as in a terminal, even when this test run was started with
    SIGINT ignored (nohup, a background job), which children would otherwise inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def float_value(expr, memo=None):
    """Value of a Pyomo expression at the current variable values, computed here (not with
    the package's evaluators): an iterative post-order walk that visits each node of the
    expression DAG once (``pyo.value`` re-walks shared subexpressions and takes minutes on
    the car's). ``memo`` (id -> value) may be shared between calls at the same values while
    the expressions are alive."""
    from pyomo.common.numeric_types import native_numeric_types
    memo = {} if memo is None else memo

    def is_expr(e):
        return type(e) not in native_numeric_types and e.is_expression_type()

    if not is_expr(expr):
        return float(pyo.value(expr))
    stack = [[expr, 0, []]]
    while True:
        frame = stack[-1]
        node, k, vals = frame
        args = node.args
        if k < len(args):
            frame[1] += 1
            a = args[k]
            if not is_expr(a):
                vals.append(float(a) if type(a) in native_numeric_types else float(pyo.value(a)))
            elif id(a) in memo:
                vals.append(memo[id(a)])
            else:
                stack.append([a, 0, []])
            continue
        stack.pop()
        if node.is_named_expression_type():
            v = vals[0]
        elif isinstance(node, Expr_ifExpression):
            v = vals[1] if vals[0] else vals[2]
        else:
            v = float(node._apply_operation(vals))
        memo[id(node)] = v
        if not stack:
            return v
        stack[-1][2].append(v)


def classic_ipopt(**options):
    """Pyomo's classic ``ipopt`` (the ASL executable), or skip."""
    try:
        opt = ensure_solver("ipopt")
    except SolverNotFoundError as exc:        # pragma: no cover - environment
        pytest.skip(f"classic ipopt not available: {exc}")
    opt.options.update(options)
    return opt


def suffix_dict(m, name):
    """``{component name: value}`` of the suffix ``name`` of ``m``."""
    return {k.name: v for k, v in m.component(name).items()}


@pytest.fixture(scope="module")
def track():
    """The bundled Nordschleife."""
    return load_track("nordschleife")


@pytest.fixture(scope="module")
def vehicle():
    """The bundled FSAE car."""
    return load_vehicle("fsae")


def sector(track, vehicle, dual=True, named=False):
    """The 150 m sector, initialized. ``named``: shared subexpressions as named Expressions
    (``named_subexpressions=True``, the setting of the ASL path: Pyomo's NL writer, and any
    walker that memoizes only named expressions, would otherwise expand the shared DAG into
    a tree)."""
    m = build_model(track, vehicle, named_subexpressions=named, **SECTOR)
    initialize_model(m)
    if dual:
        m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    return m


@pytest.fixture(scope="module")
def reference(track, vehicle):
    """The untouched 150 m sector solved by lap_ipopt (tol 1e-8): model and report."""
    m = sector(track, vehicle)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok, rep.describe()
    return m, rep


# --------------------------------------------------------------------------------------------
# 1. registration
# --------------------------------------------------------------------------------------------

@pytest.mark.component
def test_registered_with_both_factories_and_reports_ipopt_3_14():
    """Registered with both factories and reports ipopt 3 14."""
    opt = pyo.SolverFactory("lap_ipopt")
    assert opt.available() is True
    version = opt.version()
    assert tuple(version[:2]) == (3, 14), version
    assert isinstance(NewSolverFactory("lap_ipopt"), LapIpopt)
    assert bool(NewSolverFactory("lap_ipopt").available())


# --------------------------------------------------------------------------------------------
# 2. a generic NLP (HS071 and friends): primal, duals, bound multipliers, both senses
# --------------------------------------------------------------------------------------------

def hs_model(sense):
    """HS071 with extras: a ranged row (upper side active), an equality with two non-constant
    sides, a mutable Param in a bound, named Expressions, a fixed variable, an inactive
    constraint, a variable used only by that inactive constraint, and a variable at its
    upper bound (``w``, from the term ``(w - 3)^2`` with ``w <= 2``).

    ``sense=maximize`` maximizes the negated objective (the same optimum)."""
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(1, 4)
    m.x = pyo.Var(m.I, bounds=(1, 5), initialize={1: 1.0, 2: 5.0, 3: 5.0, 4: 1.0})
    m.w = pyo.Var(bounds=(0, 2), initialize=1.0)
    m.z = pyo.Var(initialize=0.5)
    m.z.fix()
    m.u = pyo.Var(bounds=(0, 10), initialize=7.0)            # only in the inactive row
    m.p = pyo.Param(initialize=25.0, mutable=True)
    m.ub = pyo.Param(initialize=1.2, mutable=True)
    m.r = pyo.Param(initialize=40.0, mutable=True)
    m.f = pyo.Expression(expr=m.x[1] * m.x[4] * (m.x[1] + m.x[2] + m.x[3]) + m.x[3]
                         + (m.w - 3) ** 2)
    m.sq12 = pyo.Expression(expr=m.x[1] ** 2 + m.x[2] ** 2)
    m.prod = pyo.Constraint(expr=m.x[1] * m.x[2] * m.x[3] * m.x[4] >= m.p)          # active >=
    m.sumsq = pyo.Constraint(expr=m.sq12 == m.r - m.x[3] ** 2 - m.x[4] ** 2)       # both sides
    m.rng = pyo.Constraint(expr=pyo.inequality(-1.0, m.x[2] - m.x[3] + m.z, m.ub))  # active <=
    m.off = pyo.Constraint(expr=m.u + m.x[1] >= 100)         # infeasible if it were active
    m.off.deactivate()
    if sense == pyo.minimize:
        m.obj = pyo.Objective(expr=m.f, sense=pyo.minimize)
    else:
        m.obj = pyo.Objective(expr=-m.f, sense=pyo.maximize)
    for name in SUFFIXES:
        m.add_component(name, pyo.Suffix(direction=pyo.Suffix.IMPORT))
    return m


def lap_solve(m, **options):
    """Solve ``m`` with lap_ipopt and the given IPOPT options; the results."""
    res = pyo.SolverFactory("lap_ipopt").solve(m, options={"tol": 1e-10, **options})
    assert str(res.solver.termination_condition) == "optimal", res.solver.termination_condition
    return pyo.value(m.obj)


def central_difference(make, perturb, h=1e-4):
    """(f*(b + h) - f*(b - h)) / 2h with lap_ipopt, ``perturb(m, delta)`` moving the bound."""
    vals = []
    for d in (h, -h):
        m = make()
        perturb(m, d)
        vals.append(lap_solve(m))
    return (vals[0] - vals[1]) / (2 * h)


@pytest.mark.component
@pytest.mark.parametrize("sense", ["minimize", "maximize"])
def test_generic_nlp_matches_classic_ipopt_and_sensitivities(sense):
    """Generic nlp matches classic ipopt and sensitivities."""
    sense = pyo.minimize if sense == "minimize" else pyo.maximize
    a = hs_model(sense)
    lap_solve(a)
    b = hs_model(sense)
    res = classic_ipopt(tol=1e-10).solve(b)
    assert str(res.solver.termination_condition) == "optimal"

    # primal values and objective
    for i in a.I:
        assert a.x[i].value == pytest.approx(b.x[i].value, abs=1e-6)
    assert a.w.value == pytest.approx(b.w.value, abs=1e-6)
    assert pyo.value(a.obj) == pytest.approx(pyo.value(b.obj), rel=1e-7)
    assert a.w.value == pytest.approx(2.0, abs=1e-6)                  # at its upper bound
    # the rows whose duals are tested are active, one on each side
    assert pyo.value(a.prod.body) == pytest.approx(25.0, abs=1e-6)
    assert pyo.value(a.rng.body) == pytest.approx(1.2, abs=1e-6)
    assert pyo.value(a.sq12) == pytest.approx(40 - a.x[3].value ** 2 - a.x[4].value ** 2, abs=1e-8)

    # untouched things
    assert a.z.fixed and a.z.value == 0.5
    assert a.u.value == 7.0 and b.u.value == 7.0
    assert not a.off.active
    for name in SUFFIXES:
        assert a.off not in a.component(name) and a.u not in a.component(name)

    # duals: same values as the classic interface, both signs present
    da, db = suffix_dict(a, "dual"), suffix_dict(b, "dual")
    assert set(da) == set(db) == {"prod", "sumsq", "rng"}
    for k in da:
        assert da[k] == pytest.approx(db[k], abs=1e-5, rel=1e-5), k
    s = 1 if sense == pyo.minimize else -1
    assert s * da["prod"] > 1e-2          # active >= row: f* grows with its bound
    assert s * da["rng"] < -1e-2          # active <= row: f* falls as its bound grows

    # bound multipliers: same as the classic interface; rc = zL + zU (the classic ASL
    # interface returns no 'rc' suffix at all, so it is compared with zL + zU there)
    zla, zua = suffix_dict(a, "ipopt_zL_out"), suffix_dict(a, "ipopt_zU_out")
    zlb, zub = suffix_dict(b, "ipopt_zL_out"), suffix_dict(b, "ipopt_zU_out")
    assert set(zla) == set(zlb) and set(zua) == set(zub)
    for k in zla:
        assert zla[k] == pytest.approx(zlb[k], abs=1e-5), k
        assert zua[k] == pytest.approx(zub[k], abs=1e-5), k
    rca = suffix_dict(a, "rc")
    rcb = suffix_dict(b, "rc")
    assert set(rca) == set(zla)
    for k in rca:
        ref = rcb[k] if k in rcb else zlb[k] + zub[k]
        assert rca[k] == pytest.approx(ref, abs=1e-5), k
    # documented signs: zL >= 0, zU <= 0 for a minimization; both flip for a maximization
    # (as in the classic interface)
    assert all(s * v >= -1e-8 for v in zla.values())
    assert all(s * v <= 1e-8 for v in zua.values())
    assert s * zla["x[1]"] > 0.1 and s * zua["w"] < -1.0

    # independent check: dual = d(objective*)/d(bound), by central differences
    make = lambda: hs_model(sense)  # noqa: E731
    fd = central_difference(make, lambda m, d: m.p.set_value(25.0 + d))
    assert da["prod"] == pytest.approx(fd, rel=1e-3)
    fd = central_difference(make, lambda m, d: m.ub.set_value(1.2 + d))
    assert da["rng"] == pytest.approx(fd, rel=1e-3)
    # the equality: its body moves with r by k = d(body)/dr, i.e. its bound by -k
    k = pyo.value(a.sumsq.body)
    a.r.set_value(41.0)
    k = pyo.value(a.sumsq.body) - k
    a.r.set_value(40.0)
    assert abs(k) == pytest.approx(1.0)
    fd = central_difference(make, lambda m, d: m.r.set_value(40.0 + d))
    assert -k * da["sumsq"] == pytest.approx(fd, rel=1e-3)
    # reduced costs = d(objective*)/d(variable bound)
    fd = central_difference(make, lambda m, d: m.x[1].setlb(1.0 + d))
    assert rca["x[1]"] == pytest.approx(fd, rel=1e-3)
    fd = central_difference(make, lambda m, d: m.w.setub(2.0 + d))
    assert rca["w"] == pytest.approx(fd, rel=1e-3)
    assert rca["w"] == pytest.approx(s * 2 * (2.0 - 3.0), rel=1e-5)    # analytic


# --------------------------------------------------------------------------------------------
# 3. the pyomo_lap sector: same lap time as the classic ipopt
# --------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_sector_lap_time_matches_classic_ipopt(track, vehicle, reference):
    """Sector lap time matches classic ipopt."""
    m, rep = reference
    assert rep.exit_message == "Optimal Solution Found."
    b = sector(track, vehicle, named=True)          # the same rows, shared as the NL writer needs
    rep_b = solve_model(b, solver="ipopt", options={**DEFAULT_IPOPT_OPTIONS, "tol": 1e-8})
    assert rep_b.ok, rep_b.describe()
    assert "3.11" in rep_b.log and "3.14" in rep.log      # really two different IPOPTs
    t_lap, t_asl = pyo.value(m.lap_time), pyo.value(b.lap_time)
    assert t_lap == pytest.approx(t_asl, rel=1e-4)
    assert 2.0 < t_lap < 10.0                              # 150 m at 15-75 m/s

    # the lap time is the integral of ds / v along the sector (trapezoidal rule on the mesh)
    S = list(m.s)
    inv_v = [1.0 / m.q1_dot[s].value for s in S]
    trapz = sum(0.5 * (inv_v[k] + inv_v[k + 1]) * (S[k + 1] - S[k]) for k in range(len(S) - 1))
    assert t_lap == pytest.approx(trapz, rel=5e-3)

    # the lap_ipopt solution satisfies the model's Pyomo rows (evaluated here, scaled as
    # IPOPT sees them)
    sf = m.scaling_factor
    memo = {}
    worst = 0.0
    # (the bodies are kept alive: c.body of a row with two variable sides is a new object,
    # whose id a later one could reuse while the memo is shared)
    bodies = [(c, c.body) for c in m.component_data_objects(pyo.Constraint, active=True)]
    for c, body in bodies:
        v = float_value(body, memo)
        lo = -math.inf if c.lb is None else c.lb
        hi = math.inf if c.ub is None else c.ub
        viol = max(lo - v, v - hi, 0.0) * sf.get(c, 1.0)
        worst = max(worst, viol)
    assert worst < 1e-6

    # the duals of the same rows agree where they matter (row order of the recorded rows)
    compared = 0
    for c in m.component_data_objects(pyo.Constraint, active=True):
        da, db = m.dual.get(c), b.dual.get(b.find_component(c.name))
        assert da is not None and db is not None, c.name
        big = max(abs(da), abs(db))
        if big > 1e-2:
            compared += 1
            assert da == pytest.approx(db, rel=5e-2), c.name
    assert compared > 50


# --------------------------------------------------------------------------------------------
# 4. user changes: a constraint on a named expression, the objective, a fixed control
# --------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_user_constraint_objective_and_fixed_control(track, vehicle, reference):
    """User constraint objective and fixed control."""
    ref, _ = reference
    S = list(ref.s)
    s1, s2 = S[4], S[10]
    fy_before = float_value(ref.car.f_11y[s1])
    assert fy_before > 50.0                       # a lateral force worth capping
    delta_fixed = ref.delta[s2].value + 5e-4
    F = vehicle.m * vehicle.gravity / 4

    def changed():
        m = sector(track, vehicle, named=True)      # named: for the NL writer of the ASL path
        m.cap = pyo.Constraint(expr=m.car.f_11y[s1] <= 0.8 * fy_before)
        m.objective.expr = m.objective.expr + 1e-3 * sum((m.f_xa[s] / F) ** 2 for s in S[1:])
        m.delta[s2].fix(delta_fixed)
        return m

    a = changed()
    rep_a = solve_model(a, solver="lap_ipopt", options=TIGHT)
    assert rep_a.ok, rep_a.describe()
    b = changed()
    rep_b = solve_model(b, solver="ipopt", options=TIGHT)
    assert rep_b.ok, rep_b.describe()
    assert pyo.value(a.objective) == pytest.approx(pyo.value(b.objective), rel=1e-5)
    assert pyo.value(a.lap_time) == pytest.approx(pyo.value(b.lap_time), rel=1e-5)
    # the changes took effect: the cap is active, the control stayed fixed, the lap is slower
    assert float_value(a.car.f_11y[s1]) == pytest.approx(0.8 * fy_before, rel=1e-6)
    assert a.delta[s2].fixed and a.delta[s2].value == delta_fixed
    assert pyo.value(a.lap_time) > pyo.value(ref.lap_time)
    assert a.dual[a.cap] == pytest.approx(b.dual[b.cap], rel=1e-2)
    assert a.dual[a.cap] < 0                      # active <= row of a minimization

    tr = rep_a.details["translation"]
    assert tr.generic_families.get("cap") == 1
    assert tr.n_generic_rows >= 1                 # the cap is nonlinear: not a linear row
    n_built = sum(1 for c, _, _, _ in a.problem.point_rows.built if c.active)
    assert tr.n_recorded_rows == n_built          # the recorded rows are still all compiled


@pytest.mark.component
def test_a_users_model_around_the_car_gets_the_compiled_rows(track, vehicle):
    """A user's ConcreteModel holding a built model as a block (its objective replaced by the
    user's, a row of the user's own) is solved by ``pyomo.environ.SolverFactory('lap_ipopt')``
    with the car's recorded rows, found through Pyomo's component tree: the same lap time as
    the bundled solve of the built model alone, and, with an exit-speed cap, the same optimum
    as the cap written into the built model itself (a second way to the same NLP); the cap
    holds and slows the lap."""
    opt = pyo.SolverFactory("lap_ipopt")
    bundled = sector(track, vehicle, dual=False)
    rep = solve_model(bundled, solver="lap_ipopt", options=TIGHT)
    assert rep.ok, rep.describe()
    lap = pyo.value(bundled.lap_time)
    path = rep.details["translation"].evaluation
    assert path in ("compiled", "recorded")           # "recorded": no C compiler here

    u = pyo.ConcreteModel()
    u.lap = sector(track, vehicle, dual=False)
    u.lap.objective.deactivate()
    u.objective = pyo.Objective(expr=u.lap.objective.expr)      # the user's, same value
    sf = u.lap.scaling_factor              # and the same scale (IPOPT's user scaling)
    sf[u.objective] = sf[u.lap.objective]
    opt.solve(u, solver_options=TIGHT)
    info = opt.last_results.extra_info
    assert info.evaluation == path and info.translation.fallback == ""
    n_built = sum(1 for c, _, _, _ in u.lap.problem.point_rows.built if c.active)
    assert info.translation.n_recorded_rows == n_built > 0
    assert pyo.value(u.lap.lap_time) == pytest.approx(lap, rel=1e-6)

    last = max(bundled.s)
    cap = 0.97 * bundled.q1_dot[last].value
    u.exit_cap = pyo.Constraint(expr=u.lap.q1_dot[max(u.lap.s)] <= cap)
    initialize_model(u.lap)              # both from the cold start
    opt.solve(u, solver_options=TIGHT)
    assert opt.last_results.extra_info.evaluation == path
    direct = sector(track, vehicle, dual=False)
    direct.exit_cap = pyo.Constraint(expr=direct.q1_dot[last] <= cap)
    rep_d = solve_model(direct, solver="lap_ipopt", options=TIGHT)
    assert rep_d.ok, rep_d.describe()
    assert u.lap.q1_dot[max(u.lap.s)].value <= cap * (1 + 1e-7)
    assert pyo.value(u.lap.lap_time) > lap
    assert pyo.value(u.lap.lap_time) == pytest.approx(pyo.value(direct.lap_time), rel=1e-6)


@pytest.mark.component
def test_two_cars_in_a_users_model_the_first_compiled_both_refreshed(track, vehicle):
    """Two built models as blocks of one user's model (one objective: the sum of their
    times): the first car block's recorded rows are used, the second's rows translated (said
    in the report); every row of both is in the NLP once; refresh_cars finds both car blocks
    and brings each in line with its own m.vehicle (a steering limit fixed on the second only
    becomes the bound of its delta, the first keeps its own)."""
    from pyomo_lap.solvers.lap.car_blocks import car_blocks, refresh_cars
    u = pyo.ConcreteModel()
    u.a = sector(track, vehicle, dual=False)
    u.b = sector(track, vehicle, dual=False)
    u.a.objective.deactivate()
    u.b.objective.deactivate()
    u.objective = pyo.Objective(expr=u.a.lap_time + u.b.lap_time)
    assert [b.name for b in car_blocks(u)] == ["a.vehicle", "b.vehicle"]
    u.b.vehicle.steering.delta_max.fix(0.5 * vehicle.delta_max)
    assert refresh_cars(u) and not refresh_cars(u)           # once, then nothing to do
    assert all(v.ub == 0.5 * vehicle.delta_max for v in u.b.delta.values())
    assert all(v.ub == vehicle.delta_max for v in u.a.delta.values())
    nlp = LapNLP(u)
    rep = nlp.report
    n_a = sum(1 for c, _, _, _ in u.a.problem.point_rows.built if c.active)
    assert rep.n_recorded_rows == n_a and "2 pyomo_lap cars" in rep.fallback
    n_rows = sum(1 for _ in u.component_data_objects(pyo.Constraint, active=True))
    assert nlp.m == n_rows and len({id(c) for c in nlp.constraints}) == n_rows


# --------------------------------------------------------------------------------------------
# 5. a replaced row and a changed named expression: translated from Pyomo instead
# --------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_replaced_row_and_named_expression_fall_back(track, vehicle, reference):
    """Replaced row and named expression fall back."""
    ref, _ = reference
    # named=True: with the default unnamed shared subexpressions, translating one point's rows
    # from their Pyomo expressions takes about a minute (see the report of these tests)
    m = sector(track, vehicle, named=True)
    S = list(m.s)
    rec = m.problem.point_rows
    point_of = {s: i for i, s in enumerate(rec.points)}
    c = m.ode_qdot[3, S[7]]
    c.set_value((c.lower, c.body * 1.0, c.upper))            # new expression object, same row
    e = m.car.f_11y[S[12]]
    old = e.expr
    e.set_value((old + 1.0) - 1.0)                          # a new, equivalent expression
    assert e.expr is not old
    bad = point_of[S[12]]

    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok, rep.describe()
    tr = rep.details["translation"]
    # expected generic rows of the recorded families, counted from the recorded rows
    expected = {}
    for cd, _, i, _ in rec.built:
        if cd is c or i == bad:
            fam = cd.parent_component().local_name
            expected[fam] = expected.get(fam, 0) + 1
    assert expected["ode_qdot"] >= 2 and len(expected) >= 5
    recorded_families = {f.name for f in rec.families}
    got = {k: v for k, v in tr.generic_families.items() if k in recorded_families}
    assert got == expected
    assert tr.n_recorded_rows == len(rec.built) - sum(expected.values())
    assert "1 point" in tr.fallback and "named expression" in tr.fallback
    assert pyo.value(m.lap_time) == pytest.approx(pyo.value(ref.lap_time), rel=1e-6)


@pytest.mark.component
def test_a_changed_named_expression_is_found_at_its_point_after_an_entry_was_added(track, vehicle):
    """The check of the named expressions maps a changed entry to its point by the keys the
    build had: an entry the user adds to the sparse m.car.cse (iterated in index order, so it
    shifts the later ones) does not move the change to another point."""
    from pyomo_lap.ocp.point_rows import changed_named_points
    m = sector(track, vehicle, named=True)
    rec = m.problem.point_rows
    S = list(rec.points)
    assert changed_named_points(rec) == set()
    cse = m.car.cse
    used = set(cse.keys())
    new = next((S[0], k) for k in m.car.cse_index if (S[0], k) not in used)
    cse[new] = 0.0                                   # added at the first point
    last = next(k for k in cse.keys() if k[0] == S[-1])
    cse[last].set_value(cse[last].expr * 1.0)        # changed at the last point
    assert changed_named_points(rec) == {len(S) - 1}


# --------------------------------------------------------------------------------------------
# 6. a corrupted tape is refused
# --------------------------------------------------------------------------------------------

@pytest.mark.component
def test_corrupted_tape_raises_recorded_rows_mismatch(track, vehicle):
    """Corrupted tape raises recorded rows mismatch."""
    m = sector(track, vehicle, dual=False)
    rec = m.problem.point_rows
    fam = next(f for f in rec.families if f.name == "adherence")
    o1, o2 = fam.outputs[2], fam.outputs[3]                  # ('21', +1) and ('21', -1)
    rows = {(i, o): cd for cd, _, i, o in rec.built if o in (o1, o2)}
    # precondition: the two rows differ at the current values at every point
    for i in range(len(rec.points)):
        v1, v2 = float_value(rows[i, o1].body), float_value(rows[i, o2].body)
        assert abs(v1 - v2) > 1e-3 * max(abs(v1), abs(v2), 1.0)
    rec.outputs[o1], rec.outputs[o2] = rec.outputs[o2], rec.outputs[o1]
    before = {v.name: v.value for v in m.component_data_objects(pyo.Var)}

    with pytest.raises(RecordedRowsMismatch) as info:
        LapNLP(m, compile="vm")                 # vm: no new library in the compile cache
    msg = str(info.value)
    name = re.match(r"row (\S+):", msg).group(1)
    assert name in {cd.name for cd in rows.values()}, msg
    with pytest.raises(RecordedRowsMismatch):
        NewSolverFactory("lap_ipopt").solve(m, compile="vm")
    assert before == {v.name: v.value for v in m.component_data_objects(pyo.Var)}


# --------------------------------------------------------------------------------------------
# 7. Expr_if
# --------------------------------------------------------------------------------------------

def expr_if_model(condition):
    """A one-variable model whose row holds an Expr_if on ``condition``."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0, bounds=(-3, 3))
    m.y = pyo.Var(initialize=1.0, bounds=(-3, 3))
    m.q = pyo.Var(initialize=1.0)
    # (a condition on a mutable Param is not used: Pyomo 6.10's LinearRepnVisitor and NL
    # writer fail on it with AttributeError 'potentially_variable_base_class')
    cond = m.x >= 0 if condition == "variable" else m.q >= 0
    m.c = pyo.Constraint(expr=Expr_if(IF=cond, THEN=m.x ** 2, ELSE=-m.x) + m.y >= 1)
    m.o = pyo.Objective(expr=(m.x - 0.5) ** 2 + m.y ** 2)
    return m


@pytest.mark.component
def test_expr_if_on_a_variable_is_refused_naming_the_constraint():
    """Expr if on a variable is refused naming the constraint."""
    m = expr_if_model("variable")
    with pytest.raises(NotImplementedError, match=r"constraint c\b"):
        LapNLP(m)
    with pytest.raises(NotImplementedError, match=r"constraint c\b"):
        pyo.SolverFactory("lap_ipopt").solve(m)
    rep = solve_model(m, solver="lap_ipopt")
    assert not rep.ok and "constraint c" in rep.message
    assert m.x.value == 1.0 and m.y.value == 1.0


@pytest.mark.component
@pytest.mark.parametrize("p", [1.0, -1.0])
def test_expr_if_on_a_fixed_variable_is_translated_correctly(p):
    """Expr if on a fixed variable is translated correctly."""
    a, b = expr_if_model("fixed"), expr_if_model("fixed")
    a.q.fix(p)
    b.q.fix(p)
    rep = LapNLP(a).report
    assert rep.n_generic_rows + rep.n_linear_rows == 1
    lap_solve_plain = pyo.SolverFactory("lap_ipopt").solve(a, options={"tol": 1e-10})
    assert str(lap_solve_plain.solver.termination_condition) == "optimal"
    classic_ipopt(tol=1e-10).solve(b)
    assert a.x.value == pytest.approx(b.x.value, abs=1e-6)
    assert a.y.value == pytest.approx(b.y.value, abs=1e-6)
    # the branch taken: x^2 + y >= 1 (q >= 0) or -x + y >= 1, active at the optimum
    g = a.x.value ** 2 + a.y.value if p >= 0 else -a.x.value + a.y.value
    assert g == pytest.approx(1.0, abs=1e-7)
    if p < 0:   # min (x - 1/2)^2 + y^2 on y = 1 + x: x = -1/4, y = 3/4
        assert (a.x.value, a.y.value) == pytest.approx((-0.25, 0.75), abs=1e-6)


# --------------------------------------------------------------------------------------------
# 8. solve_model with lap_ipopt
# --------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_solve_model_reports_and_loads_duals(track, vehicle):
    """Solve model reports and loads duals."""
    m = sector(track, vehicle)
    stale = m.speed_min[m.s.first()]
    m.dual[stale] = 12345.0                       # a stale value is replaced
    rep = solve_model(m, solver="lap_ipopt")
    assert rep.ok and rep.kind == "optimal", rep.describe()
    assert rep.exit_message == "Optimal Solution Found."
    assert rep.iterations > 0
    n_log = int(re.findall(r"Number of Iterations\.*:\s*(\d+)", rep.log)[-1])
    assert rep.iterations == n_log
    n_active = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True))
    assert len(m.dual) == n_active                # every row, also any the solver eliminated
    assert m.dual[stale] != 12345.0
    # signs of the duals of a minimization: >= rows >= 0, <= rows <= 0
    n_ineq = 0
    for c in m.component_data_objects(pyo.Constraint, active=True):
        d = m.dual[c]
        if c.equality:
            continue
        n_ineq += 1
        if c.has_lb() and not c.has_ub():
            assert d >= -1e-6, (c.name, d)
        if c.has_ub() and not c.has_lb():
            assert d <= 1e-6, (c.name, d)
    assert n_ineq > 100


# --------------------------------------------------------------------------------------------
# 9. Ctrl-C
# --------------------------------------------------------------------------------------------

CTRL_C_SCRIPT = textwrap.dedent("""
    import sys
    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle
    from pyomo_lap.solvers.solve import SolveInterrupted, solve_model
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=0, length=2000,
                    nfe=400, ncp=2)
    initialize_model(m)
    before = [v.value for v in m.q1_dot.values()]
    print("BUILT", flush=True)
    try:
        rep = solve_model(m, solver="lap_ipopt", tee=True)
    except SolveInterrupted as exc:
        sys.stdout.flush()
        same = before == [v.value for v in m.q1_dot.values()]
        print("\\nINTERRUPTED-MARKER", exc.report.kind, exc.report.iterations, same, flush=True)
        sys.exit(0)
    print("\\nNOT-INTERRUPTED", rep.ok, flush=True)
    sys.exit(3)
""")

HANG_GUARD_S = 600.0
"""[s] a child process that takes longer has hung: no test asserts how fast anything is."""

ITERATION_ROW = re.compile(r"^\s*\d+r?\s+[-+]?\d\.\d+e[-+]\d+\s")


@pytest.mark.integration
def test_ctrl_c_stops_the_solve_cleanly():
    """Ctrl c stops the solve cleanly."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=_sigint_as_in_a_terminal)
    watchdog = threading.Timer(HANG_GUARD_S, proc.kill)    # only if something hangs
    watchdog.start()
    lines, sent, marker = [], False, None
    try:
        for line in proc.stdout:
            lines.append(line)
            if not sent and ITERATION_ROW.match(line):
                proc.send_signal(signal.SIGINT)
                sent = True
            if line.startswith("INTERRUPTED-MARKER"):
                marker = line.split()
        rc = proc.wait(timeout=HANG_GUARD_S)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    out = "".join(lines)
    assert sent, out[-3000:]
    assert marker is not None, out[-3000:]
    assert rc == 0, out[-3000:]
    _, kind, iterations, unchanged = marker
    assert kind == "interrupted"
    assert unchanged == "True"                   # the model kept its values
    # stopped long before convergence (the uninterrupted solve takes 40 iterations); that
    # IPOPT stops at the iteration after the signal is tested in-process, without a child
    # process or a clock: test_ipopt_lib.py::test_sigint_during_solve_stops_cleanly
    rows = [ln for ln in out.splitlines() if ITERATION_ROW.match(ln)]
    assert iterations != "None" and int(iterations) < 20
    assert int(ITERATION_ROW.match(rows[-1]).group(0).split()[0].rstrip("r")) == int(iterations)
    assert "EXIT: Optimal" not in out


# --------------------------------------------------------------------------------------------
# 10. verify_points="all", through the new solver interface
# --------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_verify_all_points_and_results_object(track, vehicle, reference):
    """Verify all points and results object."""
    ref, _ = reference
    m = sector(track, vehicle)
    res = NewSolverFactory("lap_ipopt").solve(m, verify_points="all", solver_options=TIGHT)
    assert res.termination_condition == TerminationCondition.convergenceCriteriaSatisfied
    assert res.solution_status == SolutionStatus.optimal
    tr = res.extra_info.translation
    points_with_rows = {i for c, _, i, _ in m.problem.point_rows.built if c.active}
    assert len(points_with_rows) == len(m.s) == 21
    assert tr.verified_points == len(points_with_rows)
    assert tr.max_verify_error <= 1e-9
    assert "EXIT: Optimal Solution Found." in res.solver_log
    n_log = int(re.findall(r"Number of Iterations\.*:\s*(\d+)", res.solver_log)[-1])
    assert res.extra_info.iteration_count == n_log > 0
    assert res.incumbent_objective == pytest.approx(pyo.value(m.objective), rel=1e-12)
    assert set(res.extra_info.function_s) == {"f", "grad_f", "g", "jac_g", "h"}
    assert pyo.value(m.lap_time) == pytest.approx(pyo.value(ref.lap_time), rel=1e-6)
    # the default samples fewer points
    assert LapNLP(m).report.verified_points == 8


@pytest.mark.integration
def test_eliminated_derivatives_give_the_same_solution_and_duals():
    """ReducedNLP (pyomo.dae's derivative variables and their collocation rows eliminated
    before IPOPT) solves the same NLP: the same point and, for every row, the same dual as
    the unreduced problem; the eliminated rows' duals are recovered from the stationarity of
    the Lagrangian, so they are checked against the unreduced problem's own multipliers."""
    from pyomo.contrib.solver.common.factory import SolverFactory as NewSolverFactory
    results = {}
    for eliminate in (False, True):
        m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=500.0,
                        length=150.0, nfe=10, ncp=2)
        initialize_model(m)
        m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
        res = NewSolverFactory("lap_ipopt").solve(
            m, eliminate_derivatives=eliminate, solver_options={"tol": 1e-10})
        assert res.extra_info.ipopt_status == "Solve_Succeeded"
        results[eliminate] = (m, res.extra_info.translation)
    (a, ta), (b, tb) = results[False], results[True]
    # 11 states and the time, and the 3 controls (control_form = "state"): one derivative
    # variable each per collocation point
    assert tb.eliminated == (12 + 3) * (len(b.s) - 1) and ta.eliminated == 0
    assert tb.n_variables == ta.n_variables - tb.eliminated
    assert pyo.value(b.lap_time) == pytest.approx(pyo.value(a.lap_time), rel=1e-9)
    for name in ("dq2_ds", "dq1_dot_ds", "dt_ds"):
        va = np.array([v.value for v in a.component(name).values()][1:])
        vb = np.array([v.value for v in b.component(name).values()][1:])
        assert np.abs(va - vb).max() <= 1e-6 * (1 + np.abs(va).max())
    worst = 0.0
    for ca in a.component_data_objects(pyo.Constraint, active=True):
        cb = b.find_component(ca.name)
        scale = 1.0 + abs(a.dual[ca])
        worst = max(worst, abs(a.dual[ca] - b.dual[cb]) / scale)
    assert worst < 1e-5, worst
    # the collocation rows (eliminated) do carry multipliers: the check is not vacuous
    assert max(abs(a.dual[c]) for c in a.dq2_dot_ds_disc_eq.values()) > 1e-3


@pytest.mark.unit
def test_quadratic_objectives_are_read_exactly_and_others_refused():
    """The quadratic reader of the objective (pyomo.repn's standard representation, as
    sparse products instead of a CasADi call per node) against Pyomo's own evaluation at
    random points; non-quadratic shapes give None (they go through the general translation)."""
    from pyomo_lap.solvers.lap.nlp import _quadratic
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4))
    m.z = pyo.Var(initialize=0.3)
    m.z.fix()
    m.p = pyo.Param(initialize=1.5, mutable=True)
    x = m.x
    quadratic = [
        (x[0] - 2 * x[1]) ** 2 / m.p + 3 * x[0] * x[1] - x[2] + m.z * x[3] ** 2,
        -(x[0] + 1) * (x[1] - 2) + 4.0,
        m.p ** 2 * x[0] - x[0] * x[0] + sum((x[k + 1] - x[k]) ** 2 for k in range(3)),
        m.z ** 3 + (x[3] * m.z) * x[2],
    ]
    others = [x[0] ** 3, pyo.exp(x[0]), x[0] / x[1], x[0] * x[1] * x[2], x[0] ** m.z, x[0] ** 0.5]
    rng = np.random.default_rng(3)
    for e in quadratic:
        c, lin, pairs = _quadratic(e)
        for _ in range(3):
            for k in range(4):
                x[k].set_value(float(rng.normal()))
            got = (c + sum(a * v.value for v, a in lin)
                   + sum(q * vi.value * vj.value for (vi, vj), q in pairs))
            assert got == pytest.approx(pyo.value(e), rel=1e-12, abs=1e-12)
    for e in others:
        assert _quadratic(e) is None, str(e)


@pytest.mark.component
def test_quadratic_objective_path_matches_the_general_translation(track, vehicle, monkeypatch):
    """The objective read as a quadratic and the objective walked into CasADi give the same
    value, gradient and Hessian of the Lagrangian at a random point."""
    import scipy.sparse as sps

    import pyomo_lap.solvers.lap.nlp as ln
    m = build_model(track, vehicle, **SECTOR, named_subexpressions=False)
    initialize_model(m)
    a = LapNLP(m)
    monkeypatch.setattr(ln, "_quadratic", lambda e: None)
    b = LapNLP(m)
    rng = np.random.default_rng(5)
    x = a.x0 + 0.05 * rng.normal(size=a.n)
    assert a.objective(x) == pytest.approx(b.objective(x), rel=1e-13)
    ga, gb = np.zeros(a.n), np.zeros(b.n)
    a.gradient(x, ga)
    b.gradient(x, gb)
    assert np.allclose(ga, gb, rtol=1e-12, atol=1e-14)
    lam = rng.normal(size=a.m)
    ha, hb = np.zeros(a.hess_rows.size), np.zeros(b.hess_rows.size)
    a.hessian(x, 0.7, lam, ha)
    b.hessian(x, 0.7, lam, hb)
    Ha = sps.coo_matrix((ha, (a.hess_rows, a.hess_cols)), shape=(a.n, a.n)).toarray()
    Hb = sps.coo_matrix((hb, (b.hess_rows, b.hess_cols)), shape=(b.n, b.n)).toarray()
    assert np.allclose(Ha, Hb, rtol=1e-12, atol=1e-9)
