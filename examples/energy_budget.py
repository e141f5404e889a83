"""Your own constraint: an energy budget for the sector, E = integral of P dt <= E_max.

The traction power is P = f_xa v_3x (``m.f_xa``, ``m.v_3x``). With time as a function of the
track coordinate, dt = ds / q1_dot, so the energy is the integral over s of
f_xa v_3x / q1_dot, here by the trapezoidal rule over the collocation points.

The example solves the sector once without the budget, then allows 85 % of the energy that
run used and solves again from the first solution: the car must lift somewhere and the
sector time goes up.

    .venv/bin/python examples/energy_budget.py [--quick]     # from any folder

Solved with lap_ipopt (the default solver); --quick solves a 150 m sector on 10 elements (what
the tests run) instead of 300 m on 30.
"""
import argparse

import numpy as np
import pyomo.environ as pyo

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model


def energy_expression(m):
    """Traction energy over the sector [J] as a Pyomo expression (trapezoidal rule in s)."""
    s = sorted(m.s)
    power_per_speed = [m.f_xa[x] * m.v_3x[x] / m.q1_dot[x] for x in s]   # dE/ds [J/m]
    return sum(0.5 * (s[i + 1] - s[i]) * (power_per_speed[i] + power_per_speed[i + 1])
               for i in range(len(s) - 1))


def energy_of_solution(m):
    """The same integral evaluated with numbers [J]."""
    s = np.array(sorted(m.s))
    dEds = np.array([m.f_xa[x].value * pyo.value(m.v_3x[x]) / m.q1_dot[x].value for x in s])
    return float(np.trapezoid(dEds, s))


QUICK = dict(start=1150.0, length=150.0, nfe=10, ncp=2)
"""The short sector of ``--quick``."""


def main(start=1150.0, length=300.0, nfe=30, ncp=3, fraction=0.85, solver="lap_ipopt", tee=False):
    """Returns the sector times and energies without and with the budget."""
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=start, length=length,
                    nfe=nfe, ncp=ncp)
    initialize_model(m)
    rep = solve_model(m, solver=solver, tee=tee)
    assert rep.ok, rep.termination_condition
    t_free, e_free = pyo.value(m.lap_time), energy_of_solution(m)
    print(f"no budget:   t = {t_free:.3f} s, E = {e_free / 1e3:.1f} kJ")

    m.E_max = pyo.Param(initialize=fraction * e_free, mutable=True, units=pyo.units.J,
                        doc="energy budget [J]")
    m.energy_budget = pyo.Constraint(expr=energy_expression(m) <= m.E_max)
    m.scaling_factor[m.energy_budget] = 1.0 / e_free          # IPOPT user scaling
    rep = solve_model(m, solver=solver, tee=tee)              # starts from the first solution
    assert rep.ok, rep.termination_condition
    t_budget, e_budget = pyo.value(m.lap_time), energy_of_solution(m)
    print(f"with budget: t = {t_budget:.3f} s, E = {e_budget / 1e3:.1f} kJ "
          f"(budget {pyo.value(m.E_max) / 1e3:.1f} kJ)")
    return {"t_free": t_free, "e_free": e_free, "t_budget": t_budget, "e_budget": e_budget,
            "e_max": pyo.value(m.E_max), "model": m}


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--quick", action="store_true", help="a 150 m sector on 10 elements")
    main(tee=True, **(QUICK if cli.parse_args().quick else {}))
