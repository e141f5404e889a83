"""A 16-case sweep of the default job on Dask against the same cases one after another.

Usage (from the repository root, with the virtual environment's Python)::

    python benchmarks/sweep.py                      # 16 cases, a LocalCluster, one worker per core
    python benchmarks/sweep.py --workers 2 --warm-cache
    python benchmarks/sweep.py --length 300 --nfe 30    # a quick look (short sector)

The cases: the default job (Nordschleife 0-2000 m, 200 elements, Radau ncp = 2, lap_ipopt)
with ``mass.total`` 240, 245, 250, 255 kg times ``aero.Cx`` 0.80, 0.84, 0.88, 0.92: 16
different cars, so each case compiles its own point functions. By default both runs start
with an empty cache of compiled functions (``PYOMO_LAP_CACHE`` set to a fresh folder for each
run), as a sweep of new cars does; ``--warm-cache`` fills one cache first and gives both runs
the same filled cache (the solves alone).

"One after another" is :func:`pyomo_lap.solve_sector` called for each case in this process
(the model built, solved and written as ``pyomo-lap solve`` does); the sweep is
:func:`pyomo_lap.sweep` (cluster start included). Prints both wall times, their ratio, the
NLP's size, the lap times of both runs and their largest difference, the CPU time each run
used (processes, workers and compilers; the same work, so a sweep is slower than ideal only
through what else the machine runs) and the load average of the machine before and after.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:       # the checkout's package, wherever this is started from
    sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the C compiler)."""
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=None, help="default: one per core")
    ap.add_argument("--length", type=float, default=2000.0)
    ap.add_argument("--nfe", type=int, default=None)
    ap.add_argument("--warm-cache", action="store_true",
                    help="both runs with a filled cache of compiled functions")
    ap.add_argument("--skip-serial", action="store_true", help="only the sweep")
    args = ap.parse_args()

    import pyomo_lap
    from pyomo_lap import load_vehicle, solve_sector
    grid = ["mass.total=240:255:5", "aero.Cx=0.80:0.92:0.04"]
    job = {"length": args.length, "nfe": args.nfe}
    work = Path(tempfile.mkdtemp(prefix="pyomo_lap-bench-sweep-"))
    print(f"pyomo_lap {pyomo_lap.__file__}; {os.cpu_count()} cores; work folder {work}")
    print(f"load average before: {os.getloadavg()}")

    from pyomo_lap.sweeps import parse_set, sweep_cases
    from pyomo_lap.vehicle.schema import SECTIONS
    attr = {f"{s}.{k}": a for s, keys in SECTIONS.items() for k, a in keys.items()}
    cases = sweep_cases(parse_set(grid))
    print(f"{len(cases)} cases: {', '.join(grid)}; job {job}")

    if args.warm_cache:
        cache = work / "cache"
        os.environ["PYOMO_LAP_CACHE"] = str(cache)
        from pyomo_lap.solvers.lap_nlp import prefetch_point_functions
        threads = [prefetch_point_functions(load_vehicle("fsae").replace(
            **{attr[k]: v for k, v in c["params"].items()})) for c in cases]
        for t in threads:
            t and t.join()
        print(f"cache filled: {cache}")

    serial = {}
    t_serial = None
    cpu_serial = None
    if not args.skip_serial:
        if not args.warm_cache:
            os.environ["PYOMO_LAP_CACHE"] = str(work / "cache_serial")
        t0, c0 = time.perf_counter(), _cpu()
        for c in cases:
            p = load_vehicle("fsae").replace(**{attr[k]: v for k, v in c["params"].items()})
            t1 = time.perf_counter()
            _, _, _, s = solve_sector(vehicle=p, out_dir=work / "serial" / c["id"],
                                      echo=lambda *_: None, progress=lambda *_: None, **job)
            serial[c["index"]] = s["lap_time_s"]
            print(f"  one by one: case {c['index']:>2} {c['params']}: {s['lap_time_s']:.4f} s, "
                  f"{s['iterations']} iterations, {time.perf_counter() - t1:.1f} s")
        t_serial, cpu_serial = time.perf_counter() - t0, _cpu() - c0
        nlp = s.get("nlp", {})
        print(f"one after another: {t_serial:.1f} s wall; NLP {nlp.get('n_variables')} variables, "
              f"{nlp.get('n_equalities')} equalities, {nlp.get('n_inequalities')} inequalities")
        print(f"load average: {os.getloadavg()}")

    if not args.warm_cache:
        os.environ["PYOMO_LAP_CACHE"] = str(work / "cache_sweep")
    import logging

    from distributed import Client, LocalCluster
    t0, c0 = time.perf_counter(), _cpu()
    # the cluster pyomo_lap.sweep starts by default, started here to read its workers' CPU time
    cluster = LocalCluster(n_workers=args.workers or os.cpu_count(), threads_per_worker=1,
                           processes=True, dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    table = pyomo_lap.sweep(grid, out=work / "sweep", client=client, **job)
    t_sweep = time.perf_counter() - t0
    cpu_sweep = _cpu() - c0 + sum(client.run(_cpu).values())
    client.close()
    cluster.close()
    print(f"sweep: {t_sweep:.1f} s wall ({args.workers or os.cpu_count()} workers, cluster start "
          f"included), {cpu_sweep:.0f} CPU-s (this process, the workers and their compilers)")
    if cpu_serial:
        print(f"one after another: {cpu_serial:.0f} CPU-s (this process and its compilers)")
    print(f"load average after: {os.getloadavg()}")
    if t_serial:
        diff = max(abs(r["lap_time_s"] - serial[r["case"]]) for _, r in table.iterrows())
        print(f"ratio sweep / one after another: {t_sweep / t_serial:.3f}")
        print(f"largest difference of the lap times: {diff:.2e} s")
    print(table[["case", "mass.total", "aero.Cx", "status", "lap_time_s", "iterations",
                 "wall_time_s"]].to_string(index=False))


if __name__ == "__main__":
    main()
