"""Your own constraint and your own objective, solved with another Pyomo solver interface.

* a speed limit in a zone (e.g. a slow zone after an incident): q1_dot <= v_max for
  s in [zone_start, zone_end] of the sector;
* a keep-the-tyres-cool objective: the sector time plus a weight on the sum of the squared
  lateral forces of the front tyres (``m.car.f_11y``, ``m.car.f_12y``, named expressions of the
  model) - the original objective is deactivated, not deleted;
* a minimum vertical load on the inner front tyre (``m.f_11z``, ``m.f_12z``);
* solved with ``ipopt_v2`` (Pyomo's newer IPOPT interface), options passed through.

    python examples/speed_limit_and_objective.py
"""
import pyomo.environ as pyo

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model


def main(start=1150.0, length=300.0, nfe=30, ncp=3, zone=(100.0, 200.0), v_max=25.0,
         weight=1e-9, solver="ipopt_v2", tee=False):
    """Returns the model and the solve report."""
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=start, length=length,
                    nfe=nfe, ncp=ncp)
    initialize_model(m)

    zone_points = [s for s in m.s if zone[0] <= s <= zone[1]]
    m.slow_zone = pyo.Constraint(zone_points, rule=lambda m, s: m.q1_dot[s] <= v_max)
    for s in zone_points:                       # a feasible start inside the zone
        m.q1_dot[s].set_value(min(m.q1_dot[s].value, v_max))

    m.min_front_load = pyo.Constraint(m.s, rule=lambda m, s: m.f_11z[s] + m.f_12z[s] >= 400.0)

    m.objective.deactivate()
    m.tyre_effort = pyo.Expression(expr=sum(m.car.f_11y[s] ** 2 + m.car.f_12y[s] ** 2 for s in m.s))
    m.cool_tyres = pyo.Objective(expr=m.lap_time + weight * m.tyre_effort + m.K_delta * m.steer_penalty
                                 + m.K_f * m.complementarity_penalty)
    m.scaling_factor[m.cool_tyres] = m.scaling_factor[m.objective]

    report = solve_model(m, solver=solver, options={"max_iter": 1000}, tee=tee)
    print(f"{report.termination_condition}: sector time {pyo.value(m.lap_time):.3f} s, "
          f"max speed in the zone {max(m.q1_dot[s].value for s in zone_points):.2f} m/s")
    return m, report


if __name__ == "__main__":
    main(tee=True)
