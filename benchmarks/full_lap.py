"""Benchmark: the closed Nordschleife lap (or an open sector) with pyomo_lap, and the same
model through CasADi.

Usage (from the repository root, after `bash scripts/bootstrap.sh`)::

    .venv/bin/python benchmarks/full_lap.py                       # full lap, N = 2000, ncp = 2
    .venv/bin/python benchmarks/full_lap.py --nfe 1000 2000 4000  # mesh study
    .venv/bin/python benchmarks/full_lap.py --sector              # default sector 0-2000 m, N = 400
    .venv/bin/python benchmarks/full_lap.py --casadi              # also the CasADi twin

Prints one row per run with: nfe, ncp, n_variables, n_constraints, jacobian nnz, hessian nnz,
build_s (pyomo.dae model + physics expressions), init_s (cold-start guess), nl_write_s,
ipopt_s (the IPOPT process: its own work + function evaluations), ipopt_internal_s,
ipopt_eval_s, iterations, lap_time_s, peak_rss_mb (this process and IPOPT's), and for
``--casadi`` the CasADi build/solve, lap time and the Pyomo/CasADi ratios. Also writes the
table as CSV (``--csv``).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import sys
import time

import pandas as pd
import pyomo.environ as pyo

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle  # noqa: E402
from pyomo_lap.solve import DEFAULT_IPOPT_OPTIONS, ensure_solver  # noqa: E402


def _grab(pattern, text, cast=float, default=float("nan")):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else default


def _rss_mb():
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return self_kb / 1024.0, child_kb / 1024.0


def run_pyomo(track, car, nfe, ncp, full_lap, start, length, tee=False, max_iter=3000):
    """Build, initialize and solve one case with Pyomo + IPOPT (AMPL interface); returns a dict."""
    from pyomo.common.timing import HierarchicalTimer
    from pyomo.contrib.solver.solvers.ipopt import Ipopt

    t0 = time.perf_counter()
    if full_lap:
        m = build_model(track, car, start=0.0, length=None, nfe=nfe, ncp=ncp, periodic=True)
    else:
        m = build_model(track, car, start=start, length=length, nfe=nfe, ncp=ncp)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    initialize_model(m)
    init_s = time.perf_counter() - t0
    opt = Ipopt(executable=ensure_solver("ipopt").executable())
    opts = {k: v for k, v in DEFAULT_IPOPT_OPTIONS.items() if k not in ("nlp_scaling_method",)}
    opts.update(max_iter=max_iter, print_timing_statistics="yes")
    timer = HierarchicalTimer()
    t0 = time.perf_counter()
    res = opt.solve(m, timer=timer, tee=tee, load_solutions=False, solver_options=opts,
                    raise_exception_on_nonoptimal_result=False)
    wall = time.perf_counter() - t0
    log = res.solver_log or ""
    ok = "Optimal Solution Found" in log or "Solved To Acceptable Level" in log
    if res.solution_loader is not None:
        try:
            res.solution_loader.load_vars()
        except Exception:  # no solution to load (e.g. an early IPOPT failure)
            pass
    nl_write = timer.timers["write_nl_file"].total_time if "write_nl_file" in timer.timers else float("nan")
    ipopt_s = timer.timers["subprocess"].total_time if "subprocess" in timer.timers else float("nan")
    rss_self, rss_child = _rss_mb()
    row = {
        "engine": "pyomo", "nfe": nfe, "ncp": ncp, "points": len(m.s),
        "n_variables": _grab(r"Total number of variables\.+:\s+(\d+)", log, int, -1),
        "n_constraints": _grab(r"Total number of equality constraints\.+:\s+(\d+)", log, int, 0)
        + _grab(r"Total number of inequality constraints\.+:\s+(\d+)", log, int, 0),
        "jac_nnz": _grab(r"nonzeros in equality constraint Jacobian\.+:\s+(\d+)", log, int, 0)
        + _grab(r"nonzeros in inequality constraint Jacobian\.+:\s+(\d+)", log, int, 0),
        "hess_nnz": _grab(r"nonzeros in Lagrangian Hessian\.+:\s+(\d+)", log, int, -1),
        "build_s": build_s, "init_s": init_s, "nl_write_s": nl_write, "ipopt_s": ipopt_s,
        "ipopt_internal_s": _grab(r"Total CPU secs in IPOPT \(w/o function evaluations\)\s+=\s+([\d.]+)", log),
        "ipopt_eval_s": _grab(r"Total CPU secs in NLP function evaluations\s+=\s+([\d.]+)", log),
        "total_s": build_s + init_s + wall,
        "iterations": _grab(r"Number of Iterations\.+:\s+(\d+)", log, int, -1),
        "status": "ok" if ok else (_grab(r"EXIT: (.*)", log, str, "no EXIT line")),
        "lap_time_s": pyo.value(m.lap_time) if ok else float("nan"),
        "peak_rss_mb": rss_self, "ipopt_peak_rss_mb": rss_child,
    }
    return row, m


def run_casadi(m):
    """The CasADi twin of a built and initialized pyomo_lap model (same mesh, scaling and
    initial guess): :mod:`pyomo_lap.casadi_ocp`."""
    from pyomo_lap.casadi_ocp import build_casadi_nlp, solve_casadi

    t0 = time.perf_counter()
    nlp = build_casadi_nlp(m)
    build_s = time.perf_counter() - t0
    rep = solve_casadi(nlp)
    return {"build_s": build_s, "solve_s": rep.solve_s, "iterations": rep.iterations,
            "lap_time_s": rep.lap_time_s, "return_status": rep.return_status,
            "eval_s": (rep.t_proc or {}).get("functions"), "n_variables": rep.n_variables}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nfe", type=int, nargs="+", default=None, help="mesh sizes N (default 2000; sector 400)")
    ap.add_argument("--ncp", type=int, default=None, help="collocation points per element (default 2 lap, 3 sector)")
    ap.add_argument("--sector", action="store_true", help="the default open sector 0-2000 m instead of the lap")
    ap.add_argument("--start", type=float, default=0.0)
    ap.add_argument("--length", type=float, default=2000.0)
    ap.add_argument("--casadi", action="store_true", help="also build and solve the CasADi twin")
    ap.add_argument("--tee", action="store_true", help="stream IPOPT's output")
    ap.add_argument("--max-iter", type=int, default=3000)
    ap.add_argument("--csv", default=None, help="also write the table to this CSV file")
    a = ap.parse_args(argv)
    full_lap = not a.sector
    nfes = a.nfe or ([2000] if full_lap else [400])
    ncp = a.ncp or (2 if full_lap else 3)
    track, car = load_track("nordschleife"), load_vehicle("fsae")
    rows = []
    for nfe in nfes:
        row, m = run_pyomo(track, car, nfe, ncp, full_lap, a.start, a.length, tee=a.tee, max_iter=a.max_iter)
        if a.casadi:
            c = run_casadi(m)
            row.update({
                "casadi_build_s": c.get("build_s"), "casadi_solve_s": c.get("solve_s"),
                "casadi_iterations": c.get("iterations"), "casadi_lap_time_s": c.get("lap_time_s"),
                "casadi_status": c.get("return_status"),
            })
            row["casadi_eval_cpu_s"] = c.get("eval_s")
            pyomo_build = row["build_s"] + row["init_s"]
            pyomo_solve = row["nl_write_s"] + row["ipopt_s"]
            row["ratio_build"] = pyomo_build / row["casadi_build_s"]
            row["ratio_solve"] = pyomo_solve / row["casadi_solve_s"]
            row["ratio_total"] = (pyomo_build + pyomo_solve) / (row["casadi_build_s"] + row["casadi_solve_s"])
            row["lap_time_diff_pct"] = 100 * (row["lap_time_s"] - row["casadi_lap_time_s"]) / row["casadi_lap_time_s"]
        rows.append(row)
        print(pd.DataFrame([row]).T.to_string(header=False), flush=True)
        del m
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_columns", 50, "display.float_format", "{:.3f}".format):
        print(df.to_string(index=False))
    if a.csv:
        df.to_csv(a.csv, index=False)


if __name__ == "__main__":
    main()
