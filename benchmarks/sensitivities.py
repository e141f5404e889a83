"""Lap-time sensitivities of a job from the multipliers, checked against central finite
differences of warm-started re-solves (the table of docs/sensitivities.md, "Lap-time
sensitivities").

Usage (from the repository root, with the virtual environment's Python)::

    python benchmarks/sensitivities.py                          # the default job, every parameter
    python benchmarks/sensitivities.py --params P_max m mu_y0   # only these finite differences
    python benchmarks/sensitivities.py --start 1150 --length 400 --markdown
    python benchmarks/sensitivities.py --track zandvoort --full-lap --params P_max mu_y0

The job is solved once as ``pyomo-lap solve --sensitivities`` does (``tol = 1e-10``,
:data:`pyomo_lap.analysis.sensitivities.SENSITIVITY_SOLVER_OPTIONS`: the columns "dT/dp", "ΔT for
+1 %", "d objective/dp", the base of the finite differences) and once with IPOPT's default
``tol = 1e-5`` (the column "dT/dp at tol 1e-5": what the sensitivities would be on the
default solve). Each finite difference is two re-solves at
``p (1 -+ step)`` warm started from the tight solution with
:data:`pyomo_lap.analysis.sensitivities.FD_SOLVER_OPTIONS`; it is given for the sector time (against
the adjoint's ``dT_dp``) and for the optimal objective, sector time plus the penalties of eq
(41) (against the envelope theorem's ``dobj_dp``).
"""
from __future__ import annotations

import argparse
import time

import pyomo.environ as pyo


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--track", default="nordschleife")
    ap.add_argument("--vehicle", default="fsae")
    ap.add_argument("--start", type=float, default=0.0)
    ap.add_argument("--length", type=float, default=2000.0)
    ap.add_argument("--full-lap", action="store_true", help="the closed lap (no --start, --length)")
    ap.add_argument("--params", nargs="*", default=None,
                    help="parameters to check by finite differences (default: all)")
    ap.add_argument("--step", type=float, default=1e-3, help="relative step [-]")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)

    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
    from pyomo_lap.analysis import sensitivities as sens

    tr, car = load_track(args.track), load_vehicle(args.vehicle)
    tables = {}
    for tol in (1e-5, 1e-10):
        where = (dict(periodic=True) if args.full_lap else
                 dict(start=args.start, length=args.length))
        m = build_model(tr, car, named_subexpressions=False, **where)
        initialize_model(m)
        sens.declare_multiplier_suffixes(m)
        t0 = time.perf_counter()
        rep = solve_model(m, options={"tol": tol, "acceptable_tol": 10 * tol})
        t_solve = time.perf_counter() - t0
        assert rep.ok, rep.describe()
        tables[tol] = sens.lap_time_sensitivities(m).set_index("parameter")
        print(f"tol {tol:g}: sector time {pyo.value(m.lap_time):.6f} s, objective "
              f"{pyo.value(m.objective):.6f} s, {rep.iterations} iterations, solve {t_solve:.1f} s, "
              f"sensitivities {tables[tol].attrs['time_s']:.2f} s", flush=True)
    base, tight = tables[1e-5], tables[1e-10]
    names = args.params if args.params is not None else list(base.index)
    rows = []
    for name in base.index:
        row = {"parameter": name, "unit": tight.loc[name, "unit"], "value": tight.loc[name, "value"],
               "dT_1pct": tight.loc[name, "dT_1pct"], "dT_loose": base.loc[name, "dT_dp"],
               "dT_dp_tight": tight.loc[name, "dT_dp"], "dobj_tight": tight.loc[name, "dobj_dp"]}
        if name in names:
            t0 = time.perf_counter()
            fd = sens.finite_difference(m, name, rel_step=args.step)
            row.update(fd_obj=fd["dobj_dp"], fd_T=fd["dT_dp"], fd_s=time.perf_counter() - t0,
                       fd_iter=fd["iterations"])
            print(f"{name:14s} sector time: adjoint {row['dT_dp_tight']:+.6e} FD {fd['dT_dp']:+.6e}"
                  f"  objective: envelope {row['dobj_tight']:+.6e} FD {fd['dobj_dp']:+.6e}  "
                  f"({row['fd_s']:.1f} s, iterations {fd['iterations']})", flush=True)
        rows.append(row)
    if args.markdown:
        print()
        print("| parameter | unit | value | dT/dp [s per unit] | ΔT for +1 % [ms] | FD of the sector "
              "time (rel. diff.) | d objective/dp | FD of the objective (rel. diff.) | dT/dp at "
              "tol 1e-5 |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            def rel(got, ref):
                # relative differences of numbers at the solver's noise mean nothing
                if abs(0.01 * r["value"] * ref) < 1e-7 or ref == 0:
                    return "-"
                return f"{(got / ref - 1):+.1e}"
            fdT = f"{r['fd_T']:.5g} ({rel(r['dT_dp_tight'], r['fd_T'])})" if "fd_T" in r else ""
            fdo = f"{r['fd_obj']:.5g} ({rel(r['dobj_tight'], r['fd_obj'])})" if "fd_obj" in r else ""
            print(f"| `{r['parameter']}` | {r['unit']} | {r['value']:g} | {r['dT_dp_tight']:.5g} | "
                  f"{1e3 * r['dT_1pct']:+.2f} | {fdT} | {r['dobj_tight']:.5g} | {fdo} | "
                  f"{r['dT_loose']:.4g} |")

if __name__ == "__main__":
    main()
