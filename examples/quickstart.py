"""Quick start: build, initialize, solve, look at the results.

Solves a short sector of the Nordschleife (a left-right sequence at 1150 m) with lap_ipopt,
writes the results folder (CSV, Parquet, Excel, JSON) and its figures. Runs from any folder
(the results go to the folder you are in) with the environment of scripts/bootstrap.sh:

    .venv/bin/python examples/quickstart.py [OUT_DIR] [--quick]   # OUT_DIR: results_quickstart
    python /path/to/pyomo_lap/examples/quickstart.py               # with the environment active

--quick solves a 150 m sector on 10 elements (what the tests run) instead of 300 m on 30.
"""
import argparse

import pyomo.environ as pyo

from pyomo_lap import (build_model, initialize_model, load_track, load_vehicle, solve_model,
                       trajectory_dataframe, write_results)
from pyomo_lap.api.results import solve_summary
from pyomo_lap.plots.figures import plot_results


QUICK = dict(start=1150.0, length=150.0, nfe=10, ncp=2)
"""The short sector of ``--quick``."""


def main(out_dir="results_quickstart", start=1150.0, length=300.0, nfe=30, ncp=3,
         solver="lap_ipopt", tee=True):
    """Run the example; returns the model, the solve report, the channels and the folder."""
    track = load_track("nordschleife")
    car = load_vehicle("fsae")
    m = build_model(track, car, start=start, length=length, nfe=nfe, ncp=ncp)   # a Pyomo model
    initialize_model(m)                                                          # cold start
    report = solve_model(m, solver=solver, tee=tee)
    if not report.ok:
        raise RuntimeError(f"not solved: {report.termination_condition}")
    print(f"sector time {pyo.value(m.lap_time):.3f} s, {report.iterations} iterations")

    # components carry the field's names
    s_mid = sorted(m.s)[len(m.s) // 2]
    print(f"at s = {s_mid:.1f} m: q2 = {m.q2[s_mid].value:.2f} m, f_xa = {m.f_xa[s_mid].value:.0f} N, "
          f"delta = {m.delta[s_mid].value:.4f} rad, f_11z = {m.f_11z[s_mid].value:.0f} N")

    df = trajectory_dataframe(m)          # pandas, one row per collocation point
    summary = solve_summary(m, report)    # summary.json's keys of this solve: lap time, mesh ...
    summary.track, summary.vehicle, summary.solver = track.name, car.name, solver
    folder = write_results(out_dir, df, summary, car.as_dict())
    figures = plot_results(folder)
    print(f"results in {folder}/, figures in {figures[0].parent}/")
    return m, report, df, folder


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("out_dir", nargs="?", default="results_quickstart",
                     help="results folder (default: results_quickstart in this folder)")
    cli.add_argument("--quick", action="store_true", help="a 150 m sector on 10 elements")
    args = cli.parse_args()
    main(args.out_dir, **(QUICK if args.quick else {}))
