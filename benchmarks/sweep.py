"""A 16-case sweep of the default job on Dask against the same cases one after another.

Usage (from the repository root, with the virtual environment's Python)::

    python benchmarks/sweep.py                     # cold cache, sweep and serial in turn
    python benchmarks/sweep.py --warm-cache        # both with the compiled functions cached
    python benchmarks/sweep.py --rounds 2          # serial, sweep, sweep, serial (ABBA)
    python benchmarks/sweep.py --no-warm-start     # every case of the sweep from the usual start
    python benchmarks/sweep.py --length 300 --nfe 30   # a quick look (short sector)
    python benchmarks/sweep.py --full-lap --warm-cache # 16 full laps (about 20 minutes)

The cases: the default job (Nordschleife 0-2000 m, 200 elements, Radau ncp = 2, lap_ipopt)
with ``mass.total`` 240, 245, 250, 255 kg times ``aero.Cx`` 0.80, 0.84, 0.88, 0.92: 16 cars,
all of one structure, so one compiled set of point functions serves them all.

Each run is a fresh Python process (``--phase serial`` or ``--phase sweep`` of this script),
timed from after its imports to its end:

* **one after another**: :func:`pyomo_lap.solve_sector` for each case in that process (the
  model built, solved and written as ``pyomo-lap solve`` does; the imports paid once, where 16
  ``pyomo-lap solve`` commands would pay them 16 times), every case on the mesh the sweep
  uses (the adaptive mesh placed for the base car, :func:`pyomo_lap.api.job_mesh`), so that
  both runs solve the same 16 NLPs;
* **sweep**: :func:`pyomo_lap.sweep` exactly as ``pyomo-lap sweep`` runs it: its own
  ``LocalCluster`` (one worker process per core, started and closed inside the timing), the
  compiled functions made ahead, every case's results folder and row, the table, the
  workbook and the plots at the end; the cases after the first two warm-started from the
  nearest solved case (its default), or, with ``--no-warm-start``, every case from the
  usual initial guess as one after another (the same start for both runs).

By default each run starts with an empty cache of compiled functions (``PYOMO_LAP_CACHE`` a
fresh folder), as the first sweep of a new model does on a new machine; ``--warm-cache``
fills one cache first and gives every run that cache. Prints, per run, the wall time, the CPU
time of the process and its children (workers, compilers), and the load average before and
after; then the ratio sweep / one after another, the NLP's size and the largest difference of
the lap times between the runs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRID = ["mass.total=240:255:5", "aero.Cx=0.80:0.92:0.04"]


def _cpu() -> float:
    """CPU seconds of this process and its finished children (workers, compilers)."""
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def _phase(args) -> None:
    """One timed run in this process; prints one JSON line."""
    import pyomo_lap
    from pyomo_lap import load_vehicle, solve_sector
    from pyomo_lap.sweeps import parse_set, resolve_parameter, sweep_cases
    job = ({"periodic": True, "start": 0.0, "length": None, "nfe": args.nfe} if args.full_lap
           else {"length": args.length, "nfe": args.nfe})
    out = Path(args.out)
    cases = sweep_cases(parse_set(GRID))
    load = os.getloadavg()
    t0, c0 = time.perf_counter(), _cpu()
    laps, nlp, iters = {}, {}, {}
    if args.phase == "serial":
        # the sweep's mesh (placed for the base car, pyomo_lap.sweeps.worker._shared_meshes): the same
        # NLP of every case in both runs
        mesh = pyomo_lap.api.job_mesh({**job, "vehicle": "fsae"})
        opts = {"ocp_options": {"element_boundaries": mesh}} if mesh is not None else {}
        for c in cases:
            p = load_vehicle("fsae").replace(**{resolve_parameter(k)[1]: v
                                                for k, v in c["params"].items()})
            _, _, _, s = solve_sector(vehicle=p, out_dir=out / c["id"], echo=lambda *_: None,
                                      progress=lambda *_: None, **job, **opts)
            laps[c["index"]], iters[c["index"]] = s["lap_time_s"], s["iterations"]
        nlp = s.get("nlp", {})
    else:
        table = pyomo_lap.sweep(GRID, out=out, echo=lambda *_: None,
                                warm_start=not args.no_warm_start, **job)
        for _, r in table.iterrows():
            laps[int(r["case"])], iters[int(r["case"])] = r["lap_time_s"], int(r["iterations"])
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    print(json.dumps({"phase": args.phase, "wall_s": wall, "cpu_s": cpu, "load_before": load,
                      "load_after": os.getloadavg(), "laps": laps, "iterations": iters,
                      "nlp": {k: nlp.get(k) for k in ("n_variables", "n_equalities",
                                                      "n_inequalities")}}))


def _run(phase: str, args, work: Path, cache: Path, k: int) -> dict:
    cmd = [sys.executable, __file__, "--phase", phase, "--out", str(work / f"{phase}{k}"),
           "--length", str(args.length)] + (["--nfe", str(args.nfe)] if args.nfe else []) \
        + (["--no-warm-start"] if args.no_warm_start else []) \
        + (["--full-lap"] if args.full_lap else [])
    env = {**os.environ, "PYOMO_LAP_CACHE": str(cache)}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{phase} run failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=float, default=2000.0)
    ap.add_argument("--nfe", type=int, default=None)
    ap.add_argument("--full-lap", action="store_true",
                    help="every case the full closed lap of the Nordschleife (issue 36's target)")
    ap.add_argument("--warm-cache", action="store_true",
                    help="every run with a filled cache of compiled functions")
    ap.add_argument("--rounds", type=int, default=1,
                    help="pairs of runs, in the order serial, sweep, sweep, serial, ...")
    ap.add_argument("--no-warm-start", action="store_true",
                    help="the sweep's cases from the usual initial guess (as one after another)")
    ap.add_argument("--phase", choices=("serial", "sweep"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        return _phase(args)

    work = Path(tempfile.mkdtemp(prefix="pyomo_lap-bench-sweep-"))
    print(f"{os.cpu_count()} cores; work folder {work}; 16 cases {', '.join(GRID)}; "
          f"job {'the full lap' if args.full_lap else f'length {args.length} m'}, nfe {args.nfe or 'auto'}; sweep "
          f"{'without' if args.no_warm_start else 'with'} warm starts; "
          f"{'warm' if args.warm_cache else 'empty'} cache of compiled functions")
    if args.warm_cache:
        warm = work / "cache"
        r = _run("serial", args, work, warm, 0)
        print(f"cache filled by one run one after another ({r['wall_s']:.1f} s): {warm}")
    order = []
    for k in range(args.rounds):
        order += ["serial", "sweep"] if k % 2 == 0 else ["sweep", "serial"]
    runs = {"serial": [], "sweep": []}
    for k, phase in enumerate(order, start=1):
        cache = work / "cache" if args.warm_cache else work / f"cache{k}"
        r = _run(phase, args, work, cache, k)
        runs[phase].append(r)
        print(f"run {k}: {'one after another' if phase == 'serial' else 'sweep':<17} "
              f"{r['wall_s']:6.1f} s wall, {r['cpu_s']:5.0f} CPU-s, "
              f"{sum(r['iterations'].values())} iterations; load average before "
              f"{r['load_before'][0]:.2f}, after {r['load_after'][0]:.2f}")
    s = sorted(r["wall_s"] for r in runs["serial"])
    w = sorted(r["wall_s"] for r in runs["sweep"])
    med = lambda v: v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])
    nlp = runs["serial"][0]["nlp"]
    laps = [r["laps"] for r in runs["serial"] + runs["sweep"]]
    diff = max(abs(l[c] - laps[0][c]) for l in laps for c in laps[0])
    its = list(runs["sweep"][0]["iterations"].values())
    its_s = list(runs["serial"][0]["iterations"].values())
    print(f"NLP {nlp['n_variables']} variables, {nlp['n_equalities']} equalities, "
          f"{nlp['n_inequalities']} inequalities; iterations one after another "
          f"{min(its_s)}-{max(its_s)} (sum {sum(its_s)}), sweep {min(its)}-{max(its)} (sum "
          f"{sum(its)}, {'usual start' if args.no_warm_start else 'warm starts'}); lap times "
          f"{min(laps[0].values()):.3f}-{max(laps[0].values()):.3f} s, largest difference "
          f"between runs {diff:.1e} s")
    # the ratio of each sweep to the run of the other kind next to it (ABBA: 1-2, 3-4, 6-5 ...)
    pairs = [runs["sweep"][k]["wall_s"] / runs["serial"][k]["wall_s"]
             for k in range(min(len(runs["sweep"]), len(runs["serial"])))]
    print(f"median wall: one after another {med(s):.1f} s, sweep {med(w):.1f} s; "
          f"ratio sweep / one after another: {med(w) / med(s):.3f} (of the medians); pair by pair "
          f"{', '.join(f'{r:.3f}' for r in pairs)}, median {med(sorted(pairs)):.3f}")


if __name__ == "__main__":
    main()
