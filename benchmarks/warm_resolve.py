"""A re-solve in a script after a car parameter changed, warm against cold, in one run.

Usage (from the repository root, with the virtual environment's Python)::

    python benchmarks/warm_resolve.py                    # the default job (Nordschleife 0-2000 m)
    python benchmarks/warm_resolve.py --full-lap         # the full Nordschleife lap
    python benchmarks/warm_resolve.py --vehicle f1_2014 --track monza --full-lap

The job is built and solved as ``pyomo-lap solve`` does (:func:`pyomo_lap.solve_sector`, no
results written); then ``m.vehicle.aero.Cz1`` is fixed to ``--cz1`` (default 0.6, as in the
README, "Quick start: Python") and the same NLP is solved three times from the same state of
the model (its solution and multipliers put back before each):

* **cold**: from the usual initial guess (:func:`pyomo_lap.initialize_model`), as a new solve
  of that car, ``warm_start=False``;
* **re-solve, no multipliers**: from the earlier optimum's primal values, ``warm_start=False``
  (what :func:`pyomo_lap.solve_model` did before issue 36);
* **warm**: ``solve_model(m)`` as a user's loop calls it (the default ``warm_start=True``).

Each row: IPOPT iterations, wall time of the ``solve_model`` call [s] (translation, IPOPT,
loading the solution: every second the user waits), its translation and IPOPT parts, the lap
or sector time and its difference from the cold solve's. Prints the load average before and
after.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import pyomo.environ as pyo


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full-lap", action="store_true")
    ap.add_argument("--vehicle", default="fsae")
    ap.add_argument("--track", default="nordschleife")
    ap.add_argument("--cz1", type=float, default=0.6)
    args = ap.parse_args(argv)
    from pyomo_lap import initialize_model, solve_model, solve_sector
    from pyomo_lap.solvers.warm_start import primal_snapshot
    print(f"load average before: {os.getloadavg()}")
    t0 = time.perf_counter()
    job = {"track": args.track, "vehicle": args.vehicle, "out_dir": None}
    if args.full_lap:
        job.update(periodic=True, start=0.0, length=None)
    r = solve_sector(job, echo=lambda s: None)
    m = r.model
    print(f"job: {args.vehicle} on {args.track}{' (full lap)' if args.full_lap else ''}: "
          f"{len(m.s)} points, {r.report.n_variables} variables; {r.report.iterations} "
          f"iterations; job wall time {time.perf_counter() - t0:.1f} s; Cz1 "
          f"{m.vehicle.aero.Cz1.value} -> {args.cz1}")
    restore = primal_snapshot(m)
    kept = {n: list(m.component(n).items()) for n in ("dual", "ipopt_zL_in", "ipopt_zU_in")
            if m.component(n) is not None}

    def back():
        restore()
        for n, items in kept.items():
            m.component(n).clear()
            m.component(n).update(items)

    m.vehicle.aero.Cz1.fix(args.cz1)
    rows = []
    for what in ("cold", "re-solve, no multipliers", "warm"):
        back()
        if what == "cold":
            initialize_model(m)
        t = time.perf_counter()
        rep = solve_model(m, solver="lap_ipopt", warm_start=(what == "warm"))
        wall = time.perf_counter() - t
        rows.append((what, rep.warm_start, rep.ok, rep.iterations, wall,
                     rep.details.get("translate_s", 0.0), rep.details.get("ipopt_s", 0.0),
                     float(pyo.value(m.lap_time))))
    cold_wall, cold_lap = rows[0][4], rows[0][7]
    print(f"{'start':28s} {'report':6s} {'ok':>3s} {'iter':>5s} {'wall s':>7s} {'transl s':>8s} "
          f"{'IPOPT s':>8s} {'% cold':>7s} {'time s':>11s} {'d cold s':>9s}")
    for what, ws, ok, it, wall, tr, ip, lap in rows:
        print(f"{what:28s} {ws[:6]:6s} {str(ok):>3s} {it:5d} {wall:7.2f} {tr:8.2f} {ip:8.2f} "
              f"{100 * wall / cold_wall:6.0f}% {lap:11.6f} {lap - cold_lap:+9.2e}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
