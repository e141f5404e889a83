"""Warm re-solves in a script (pyomo_lap.solvers.warm_start): solve_model on a model that holds
a solution starts from it, with IPOPT's multipliers kept in Pyomo's suffixes."""
from __future__ import annotations

import pyomo.environ as pyo
import pytest

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.solvers.warm_start import holds_multipliers

TIGHT = {"tol": 1e-8, "acceptable_tol": 1e-8}


@pytest.mark.unit
def test_the_start_multipliers_are_ipopts_of_the_closed_form_optimum():
    """Minimize x + 2 y s.t. x >= 1 (a row), y >= 2 (a bound): the row's multiplier is
    d f*/d b = 1 (Pyomo's dual), y's bound multiplier 2. Given back to IPOPT they are its own
    signs: mult_g = -1 (its Lagrangian f + lambda g), mult_x_L = 2 on y, 0 on x."""
    from pyomo_lap.solvers.lap.nlp import LapNLP
    from pyomo_lap.solvers.lap.solver import start_multipliers
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=3.0)
    m.y = pyo.Var(bounds=(2.0, None), initialize=3.0)
    m.row = pyo.Constraint(expr=m.x >= 1.0)
    m.obj = pyo.Objective(expr=m.x + 2.0 * m.y)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok and rep.warm_start == "cold"
    assert m.dual[m.row] == pytest.approx(1.0, abs=1e-6)
    assert m.ipopt_zL_in[m.y] == pytest.approx(2.0, abs=1e-6)
    nlp = LapNLP(m)
    mult_g, z_l, z_u = start_multipliers(m, nlp, {"warm_start_init_point": "yes"})
    assert mult_g.tolist() == pytest.approx([-1.0], abs=1e-6)
    assert dict(zip([v.name for v in nlp.variables], z_l)) == pytest.approx({"x": 0.0, "y": 2.0},
                                                                             abs=1e-6)
    assert z_u.tolist() == pytest.approx([0.0, 0.0], abs=1e-6)
    assert start_multipliers(m, nlp, {}) is None          # IPOPT reads them only when told


@pytest.mark.unit
def test_the_solver_and_the_initial_guesses_forget_the_same_multipliers():
    """The start-multiplier suffixes and their forgetting live in one place
    (pyomo_lap.util.suffixes, below both layers): the solvers' warm re-solves and the moves of
    a solution use the very same objects; after an optimal solve the suffixes hold
    multipliers, and forget_multipliers empties them all."""
    from pyomo_lap.ocp import transfer
    from pyomo_lap.solvers import warm_start as ws
    from pyomo_lap.util import suffixes
    for mod in (ws, transfer):
        assert mod.START_MULTIPLIER_SUFFIXES is suffixes.START_MULTIPLIER_SUFFIXES
        assert mod.forget_multipliers is suffixes.forget_multipliers
    assert suffixes.START_MULTIPLIER_SUFFIXES == ("dual", "ipopt_zL_in", "ipopt_zU_in")
    for forget in (suffixes.forget_multipliers,):
        m = pyo.ConcreteModel()
        m.x = pyo.Var(bounds=(1.0, None), initialize=3.0)
        m.row = pyo.Constraint(expr=m.x ** 2 >= 2.0)
        m.obj = pyo.Objective(expr=m.x)
        assert solve_model(m, solver="lap_ipopt", options=TIGHT).ok
        assert holds_multipliers(m)
        forget(m)
        assert not holds_multipliers(m)
        assert all(len(m.component(n)) == 0 for n in ws.START_MULTIPLIER_SUFFIXES)


@pytest.fixture(scope="module")
def sector():
    """A solved 200 m sector of the default car and its cold solve's figures."""
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=1150.0,
                    length=200.0, nfe=20)
    initialize_model(m)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok and rep.warm_start == "cold" and holds_multipliers(m)
    return m


def _cold_lap(car, cz1=None):
    """The same sector solved cold with warm_start=False (nothing kept)."""
    m = build_model(load_track("nordschleife"), car, start=1150.0, length=200.0, nfe=20)
    if cz1 is not None:
        m.vehicle.aero.Cz1.fix(cz1)
    initialize_model(m)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT, warm_start=False)
    assert rep.ok and rep.warm_start == "cold" and not holds_multipliers(m)
    assert m.component("ipopt_zL_in") is None            # warm_start=False declares nothing
    return pyo.value(m.lap_time), rep.iterations


@pytest.mark.integration
def test_a_changed_car_parameter_is_solved_warm_to_the_cold_optimum(sector):
    """Cz1 raised by 12 %: the re-solve starts warm and ends at the optimum a cold solve of
    that car finds (to IPOPT's tolerance), in fewer iterations."""
    m = sector
    cz1 = 1.12 * m.vehicle.aero.Cz1.value
    m.vehicle.aero.Cz1.fix(cz1)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok and rep.warm_start == "warm"
    assert "started warm" in rep.describe()
    lap_cold, it_cold = _cold_lap(load_vehicle("fsae"), cz1)
    assert pyo.value(m.lap_time) == pytest.approx(lap_cold, rel=1e-7)
    assert rep.iterations < it_cold


@pytest.mark.integration
def test_set_vehicle_and_an_added_constraint_are_solved_warm(sector):
    """Another car put in by set_vehicle, then a speed cap added (a row without a multiplier):
    both re-solves start warm and reach the optimum of a cold solve of the same problem."""
    from pyomo_lap.ocp.build import set_vehicle
    m = sector
    heavy = load_vehicle("fsae").replace(m=load_vehicle("fsae").m * 1.1)
    set_vehicle(m, heavy)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok and rep.warm_start == "warm"
    lap_cold, _ = _cold_lap(heavy)
    assert pyo.value(m.lap_time) == pytest.approx(lap_cold, rel=1e-7)
    zone = [s for s in m.s if 80.0 <= s <= 120.0]          # the README's slow zone
    vmax = 0.95 * min(pyo.value(m.speed[s]) for s in zone)
    m.cap = pyo.Constraint(zone, rule=lambda m, s: m.speed[s] <= vmax)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok and rep.warm_start == "warm"
    assert max(pyo.value(m.speed[s]) for s in zone) <= vmax * (1 + 1e-6)
    assert pyo.value(m.lap_time) > lap_cold          # a slower zone costs time
    m.del_component("cap")


@pytest.mark.integration
def test_a_new_initial_guess_forgets_the_multipliers(sector):
    """initialize_model writes a new start: the multipliers are dropped and the next solve is
    cold."""
    m = sector
    assert holds_multipliers(m)
    initialize_model(m)
    assert not holds_multipliers(m)
    rep = solve_model(m, solver="lap_ipopt", options=TIGHT)
    assert rep.ok and rep.warm_start == "cold" and holds_multipliers(m)


@pytest.mark.integration
def test_a_failed_warm_start_is_solved_again_cold_from_the_same_point(sector):
    """A warm start stopped by an iteration limit of 1: solve_model restores the start and
    solves cold (the limit lifted by a later solve is not needed: the cold solve gets the
    same options), and says so in the report."""
    m = sector
    assert holds_multipliers(m)
    m.vehicle.aero.Cz1.fix(0.9 * m.vehicle.aero.Cz1.value)
    rep = solve_model(m, solver="lap_ipopt", options={**TIGHT, "max_iter": 1})
    assert not rep.ok
    assert rep.warm_start.startswith("cold after a failed warm start")
    assert not holds_multipliers(m)             # a failed solve's point has no multipliers
