"""Setup optimization benchmark: the car's parameters optimized with the trajectory in one
solve, against a sweep over the same box, with the sensitivities at the optimum, and the
structure of the compiled functions across a sweep of cars.

Usage (from the repository root)::

    .venv/bin/python benchmarks/setup.py              # everything, printed
    .venv/bin/python benchmarks/setup.py --grid 3     # a coarser sweep (quick look)

What it runs (the default job: Nordschleife 0-2000 m, the fsae car; one solve at a time, in
this process, timed after the imports):

1. **Setup optimization**: ``pyomo-lap solve --free powertrain.brake_ratio=0.5:0.95 --free
   aero.Cz1=0.3:0.9 --free aero.Cz2=0.0:2.0 --keep-sum aero.Cz1,aero.Cz2`` (the total downforce
   coefficient held, the balance free) as :func:`pyomo_lap.solve_sector` runs it, and the
   fixed-setup solve; both solve times.
2. **The sweep over the same box**: a ``--grid`` x ``--grid`` grid (default 7 x 7) of
   brake_ratio in [0.5, 0.95] and Cz1 in [0.3, 0.9] with Cz2 = total - Cz1, each case solved on
   the mesh of the base car (as ``pyomo-lap sweep`` does); its best lap time against the
   optimized one (the optimum must be no slower).
3. **Sensitivities at the optimum**: the free setup solved to ``tol=1e-10`` (the optimum to
   the precision the check needs), then that setup fixed, solved again to ``tol=1e-10``
   (:data:`pyomo_lap.analysis.sensitivities.SENSITIVITY_SOLVER_OPTIONS`), and the derivatives of
   the optimal objective: along the free direction of the balance (dCz1 = -dCz2) the reduced
   derivative ``d obj/dCz1 - d obj/dCz2`` is zero at an interior optimum; a parameter at its
   bound has a derivative whose sign pushes it out of the box.
4. **One compile for every car**: the structure key of the recorded rows of 16 cars that differ
   in mass, aero and tyre parameters (equal ``mu_x0``/``mu_y0``, zero ``E`` and ``pD2``,
   zero damping among them): the number of different keys (1 means one compile serves all).
"""
from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", type=int, default=7)
    a = ap.parse_args(argv)
    import pyomo.environ as pyo

    from pyomo_lap import load_vehicle, solve_sector
    from pyomo_lap.ocp.build import OCP_CONFIG, record_point_rows
    print(f"# load average before: {os.getloadavg()}")
    base = load_vehicle("fsae")
    total = base.Cz1 + base.Cz2
    quiet = {"echo": lambda *_: None, "progress": lambda *_: None, "out_dir": None}
    free = {"powertrain.brake_ratio": (0.5, 0.95), "aero.Cz1": (0.3, 0.9), "aero.Cz2": (0.0, 2.0)}
    keep = [("aero.Cz1", "aero.Cz2")]

    # 1. fixed and free
    t0 = time.perf_counter()
    solve_sector(free=free, keep_sum=keep, **quiet)       # compiles the free-setup functions
    first = time.perf_counter() - t0                       # when no earlier run did
    fixed = solve_sector(**quiet).summary
    mesh = fixed["mesh"]["element_boundaries_m"]
    t0 = time.perf_counter()
    res = solve_sector(free=free, keep_sum=keep, **quiet)
    wall_free = time.perf_counter() - t0
    opt = res.summary
    print(f"first free-setup call: {first:.2f} s (includes compiling its point functions when "
          "the cache has none)")
    print(f"fixed setup: lap {fixed['lap_time_s']:.4f} s, {fixed['iterations']} iterations, "
          f"solve {fixed['solve_time_s']:.2f} s, NLP {fixed['nlp']['n_variables']} variables")
    print(f"free setup:  lap {opt['lap_time_s']:.4f} s, {opt['iterations']} iterations, "
          f"solve {opt['solve_time_s']:.2f} s ({opt['solve_time_s'] / fixed['solve_time_s']:.2f} "
          f"x the fixed), whole call {wall_free:.2f} s")
    for k, v in opt["setup"].items():
        print(f"  {k} = {v['value']:.6f} (from {v['start']:g}, box [{v['lower']:g}, "
              f"{v['upper']:g}]{', at its ' + v['at_bound'] + ' bound' if v['at_bound'] else ''})")

    # 2. the sweep over the same box, on the base car's mesh
    best = (np.inf, None)
    t0 = time.perf_counter()
    grid = list(itertools.product(np.linspace(0.5, 0.95, a.grid), np.linspace(0.3, 0.9, a.grid)))
    for kb, cz1 in grid:
        car = base.replace({"powertrain.brake_ratio": kb, "aero.Cz1": cz1, "aero.Cz2": total - cz1})
        s = solve_sector(vehicle=car, ocp_options={"element_boundaries": mesh}, **quiet).summary
        if s["optimal"] and s["lap_time_s"] < best[0]:
            best = (s["lap_time_s"], (kb, cz1))
    print(f"sweep {a.grid} x {a.grid}: best lap {best[0]:.4f} s at brake_ratio {best[1][0]:.4f}, "
          f"Cz1 {best[1][1]:.4f} ({time.perf_counter() - t0:.1f} s for {len(grid)} solves); "
          f"optimized - best = {opt['lap_time_s'] - best[0]:+.5f} s "
          f"({'no slower' if opt['lap_time_s'] <= best[0] + 1e-6 else 'SLOWER'})")

    # 3. sensitivities at the optimum (tight solve of the fixed optimal setup)
    from pyomo_lap.analysis.sensitivities import SENSITIVITY_SOLVER_OPTIONS
    tight = solve_sector(free=free, keep_sum=keep, solver_options=SENSITIVITY_SOLVER_OPTIONS,
                         **quiet).summary
    vals = {k: v["value"] for k, v in tight["setup"].items()}
    print(f"free setup solved to tol 1e-10: lap {tight['lap_time_s']:.6f} s, " + ", ".join(
        f"{k} = {v:.8f}" for k, v in vals.items()))
    car = base.replace(vals)
    sens = solve_sector(vehicle=car, sensitivities=True,
                        ocp_options={"element_boundaries": mesh}, **quiet).sensitivities
    d = sens.set_index("parameter")["dobj_dp"]
    reduced = d["aero.Cz1"] - d["aero.Cz2"]
    print(f"at the optimum (tol 1e-10): d obj/d Cz1 = {d['aero.Cz1']:+.6e}, d obj/d Cz2 = "
          f"{d['aero.Cz2']:+.6e} s per unit; along the balance d obj/dCz1 - d obj/dCz2 = "
          f"{reduced:+.3e} s per unit (interior: zero to 1e-6: "
          f"{'yes' if abs(reduced) <= 1e-6 else 'NO'}); d obj/d brake_ratio = "
          f"{d['powertrain.brake_ratio']:+.4e} s per unit (at its lower bound: > 0 pushes it out)")

    # 4. one structure for every car
    cars = []
    for m_, cx, mu in itertools.product((230.0, 260.0), (0.8, 0.9), (1.4, 1.5)):
        cars.append(base.replace({"mass.total": m_, "aero.Cx": cx, "tyre.mu_x0": mu, "tyre.mu_y0": mu}))
        cars.append(base.replace({"mass.total": m_, "aero.Cx": cx, "tyre.mu_x0": mu,
                                  "tyre.mu_y0": mu * 1.05, "tyre.E": 0.0, "tyre.pD2": 0.0,
                                  "suspension.c1": 0.0, "suspension.c2": 0.0}))
    keys = {record_point_rows(c, OCP_CONFIG()).structure_key() for c in cars}
    print(f"{len(cars)} cars (mass, aero, tyre; equal and unequal mu, zeros): {len(keys)} "
          f"structure(s) of the compiled functions")
    del pyo


if __name__ == "__main__":
    main()
