"""``pyomo-lap solve --warm-start RUN`` against the usual (cold) start, paired in one run.

Usage (from the repository root, with the virtual environment's Python)::

    python benchmarks/warm_start.py                         # fsae mass +10 %, Cz +12 %
    python benchmarks/warm_start.py --vehicle f1_2014        # another bundled car
    python benchmarks/warm_start.py --vehicle my_car.toml --length 600 --rounds 2
    python benchmarks/warm_start.py --start 300 --length 1500   # another, overlapping sector

First the source: the default job (Nordschleife 0-2000 m, fsae) solved and written to a
temporary results folder, as ``pyomo-lap solve --out RUN`` does. Then, ``--rounds`` times, the
target job (another car, and the sector given) solved cold and warm (``warm_start_from=RUN``),
in the order cold, warm, warm, cold, ... (ABBA), each on the target car's own mesh, in this
one process (the compiled point functions cached after the first solve of a car: the first
round's cold solve pays the compile, so its time is printed but the medians use the later
rounds when there are any). Prints for each solve the IPOPT iterations, the solve time and
the sector time, and the medians; the warm start's coverage and whether multipliers were
used. Timings on a shared machine are noisy: compare the paired figures of one run only.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def _car(name: str):
    from pyomo_lap import load_vehicle
    if name != "fsae+":
        return load_vehicle(name)
    car = load_vehicle("fsae")
    return car.replace(m=1.1 * car.m, Cz1=1.12 * car.Cz1, Cz2=1.12 * car.Cz2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vehicle", default="fsae+",
                    help="the target car: a name, a .toml, or fsae+ (fsae, mass +10 %%, Cz +12 %%)")
    ap.add_argument("--start", type=float, default=0.0, help="the target sector's start [m]")
    ap.add_argument("--length", type=float, default=2000.0, help="the target sector's length [m]")
    ap.add_argument("--rounds", type=int, default=1, help="pairs cold/warm (ABBA order)")
    args = ap.parse_args()
    from pyomo_lap import load_vehicle, solve_sector
    quiet = {"echo": lambda *_: None, "progress": lambda *_: None}
    with tempfile.TemporaryDirectory(prefix="pyomo_lap_warm_") as tmp:
        src = Path(tmp) / "source"
        t0 = time.perf_counter()
        s = solve_sector(vehicle=load_vehicle("fsae"), out_dir=src, **quiet).summary
        print(f"source: default job, fsae: {s['iterations']} iterations, "
              f"{s['solve_time_s']:.2f} s solve, {time.perf_counter() - t0:.1f} s in all")
        car = _car(args.vehicle)
        job = {"vehicle": car, "start": args.start, "length": args.length, "out_dir": None, **quiet}
        rows = {"cold": [], "warm": []}
        for r in range(args.rounds):
            for kind in (("cold", "warm") if r % 2 == 0 else ("warm", "cold")):
                more = {"warm_start_from": src} if kind == "warm" else {}
                t = time.perf_counter()
                out = solve_sector(**job, **more).summary
                wall = time.perf_counter() - t
                rows[kind].append((out["iterations"], out["solve_time_s"], wall))
                ws = out.get("warm_start_source") or {}
                extra = (f"; covered {100 * ws['covered_share']:.0f} %, multipliers "
                         f"{'used' if ws['multipliers_used'] else 'not used'}, same mesh "
                         f"{ws['same_mesh']}" if ws else "")
                print(f"round {r + 1} {kind}: {out['iterations']} iterations, solve "
                      f"{out['solve_time_s']:.2f} s, job {wall:.1f} s, sector time "
                      f"{out['lap_time_s']:.4f} s{extra}"
                      + (" (the warm start failed: solved again)" if out.get("warm_start_failed")
                         else ""))
        use = slice(1, None) if args.rounds > 1 else slice(None)
        for kind in ("cold", "warm"):
            its = [x[0] for x in rows[kind][use]]
            sol = [x[1] for x in rows[kind][use]]
            print(f"median {kind}: {statistics.median(its):g} iterations, "
                  f"{statistics.median(sol):.2f} s solve")


if __name__ == "__main__":
    main()
