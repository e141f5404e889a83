"""Your own constraint and your own objective, solved with another Pyomo solver interface.

* a speed limit in a zone (e.g. a slow zone after an incident): the car's speed
  ``m.speed[s] <= v_max`` [m/s] for s in [zone_start, zone_end] of the sector (``m.speed`` is
  the speed of the car, not ``q1_dot``, the rate along the centreline);
* a keep-the-tyres-cool objective: the model's objective plus a weight on the sum of the
  squared lateral forces of the front tyres (``m.f_11y``, ``m.f_12y``, named channels of the
  model) - the original objective is deactivated, not deleted;
* a minimum vertical load on the front axle (``m.f_11z``, ``m.f_12z``);
* solved with ``lap_ipopt`` (the default; any other Pyomo solver name works the same way, e.g.
  ``solver="ipopt_v2"`` with an ``ipopt`` executable on the PATH), options passed through.

    .venv/bin/python examples/speed_limit_and_objective.py [--quick]     # from any folder

--quick solves a 150 m sector on 10 elements with the zone at 60-100 m (what the tests run)
instead of 300 m on 30 elements with the zone at 100-200 m.
"""
import argparse

import pyomo.environ as pyo

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model


QUICK = dict(start=1150.0, length=150.0, nfe=10, ncp=2, zone=(60.0, 100.0))
"""The short sector of ``--quick``."""


def main(start=1150.0, length=300.0, nfe=30, ncp=3, zone=(100.0, 200.0), v_max=25.0,
         weight=1e-9, solver="lap_ipopt", tee=False):
    """Returns the model and the solve report."""
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=start, length=length,
                    nfe=nfe, ncp=ncp)
    initialize_model(m)

    zone_points = [s for s in m.s if zone[0] <= s <= zone[1]]
    m.slow_zone = pyo.Constraint(zone_points, rule=lambda m, s: m.speed[s] <= v_max)
    for s in zone_points:                       # a start closer to the zone's speed
        m.q1_dot[s].set_value(min(m.q1_dot[s].value, v_max))

    m.min_front_load = pyo.Constraint(m.s, rule=lambda m, s: m.f_11z[s] + m.f_12z[s] >= 400.0)

    m.objective.deactivate()
    m.tyre_effort = pyo.Expression(expr=sum(m.f_11y[s] ** 2 + m.f_12y[s] ** 2 for s in m.s))
    m.cool_tyres = pyo.Objective(expr=m.objective.expr + weight * m.tyre_effort)
    m.scaling_factor[m.cool_tyres] = m.scaling_factor[m.objective]

    report = solve_model(m, solver=solver, options={"max_iter": 1000}, tee=tee)
    print(f"{report.termination_condition}: sector time {pyo.value(m.lap_time):.3f} s, "
          f"max speed in the zone {max(pyo.value(m.speed[s]) for s in zone_points):.2f} m/s")
    return m, report


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--quick", action="store_true",
                     help="a 150 m sector on 10 elements, the zone at 60-100 m")
    main(tee=True, **(QUICK if cli.parse_args().quick else {}))
