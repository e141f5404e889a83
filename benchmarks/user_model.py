"""The solver ``lap_ipopt`` on a user's model that holds a pyomo_lap car, against the bundled solve.

The default job's model (``solve_sector()`` with no arguments: the 2 km Nordschleife sector,
fsae) is solved from the cold start twice per round, in turns (A B A B: the machine's load
affects both alike):

* A, bundled: ``solve_model(m, solver="lap_ipopt")`` on the built model;
* B, wrapped: the same model as a block of a user's ``ConcreteModel`` (``u.lap = m``), solved by
  ``pyomo.environ.SolverFactory("lap_ipopt").solve(u)``: the car's recorded rows are found
  through Pyomo's component tree (:mod:`pyomo_lap.solvers.lap.car_blocks`).

Printed per solve: wall time (translation + IPOPT), the translation's and IPOPT's share,
iterations, lap time and how the rows were evaluated; then the ratio of the medians of B to A
(the target of issue 37: at most 1.5).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/user_model.py [--rounds 3]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import pyomo.environ as pyo

import pyomo_lap  # noqa: F401  (registers lap_ipopt)
from pyomo_lap import solve_sector
from pyomo_lap.ocp.initialize import initialize_model
from pyomo_lap.solvers.solve import solve_model


def _bundled(m) -> dict:
    """One cold solve of the built model through ``solve_model``."""
    initialize_model(m)
    t0 = time.perf_counter()
    rep = solve_model(m, solver="lap_ipopt", warm_start=False)
    wall = time.perf_counter() - t0
    tr = rep.details["translation"]
    return {"wall_s": wall, "translate_s": tr.translate_s + tr.verify_s,
            "ipopt_s": rep.details.get("ipopt_s", float("nan")), "iterations": rep.iterations,
            "lap_s": pyo.value(m.lap_time), "evaluation": tr.evaluation}


def _wrapped(u) -> dict:
    """One cold solve of the user's model through ``pyomo.environ.SolverFactory``."""
    initialize_model(u.lap)
    opt = pyo.SolverFactory("lap_ipopt")
    t0 = time.perf_counter()
    opt.solve(u)
    wall = time.perf_counter() - t0
    info = opt.last_results.extra_info
    tr = info.translation
    return {"wall_s": wall, "translate_s": tr.translate_s + tr.verify_s, "ipopt_s": info.ipopt_s,
            "iterations": info.iteration_count, "lap_s": pyo.value(u.lap.lap_time),
            "evaluation": info.evaluation}


def main(rounds: int = 2) -> float:
    """Run the rounds, print every solve and the ratio of the median wall times; return it."""
    m = solve_sector(out_dir=None, echo=lambda *_: None, progress=lambda *_: None).model
    u = pyo.ConcreteModel(name="a user's model")
    u.lap = m                      # the built model as a block of the user's model
    rows = {"bundled": [], "wrapped": []}
    for _ in range(rounds):
        rows["bundled"].append(_bundled(m))
        rows["wrapped"].append(_wrapped(u))
    print(f"{'solve':9s} {'wall s':>7s} {'transl. s':>9s} {'IPOPT s':>8s} {'iter':>5s} "
          f"{'lap time s':>18s}  evaluation")
    for k in range(rounds):
        for name in ("bundled", "wrapped"):
            r = rows[name][k]
            print(f"{name:9s} {r['wall_s']:7.2f} {r['translate_s']:9.2f} {r['ipopt_s']:8.2f} "
                  f"{r['iterations']:5d} {r['lap_s']:18.12f}  {r['evaluation']}")
    a = statistics.median(r["wall_s"] for r in rows["bundled"])
    b = statistics.median(r["wall_s"] for r in rows["wrapped"])
    ratio = b / a
    print(f"median wall time: bundled {a:.2f} s, wrapped {b:.2f} s; ratio {ratio:.2f} "
          f"(target <= 1.5)")
    return ratio


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="A B pairs (default 2)")
    main(ap.parse_args().rounds)
