"""Robustness of the solver paths: many jobs from the cold start, each through the CLI.

Usage (from the repository root; ``bash scripts/benchmark.sh`` runs ``speed.py``, this one is
run the same way with the virtual environment's Python)::

    python benchmarks/robustness.py                     # everything below (about 15 min)
    python benchmarks/robustness.py --no-asl            # only lap_ipopt (about 4 min)
    python benchmarks/robustness.py --csv robust.csv

Jobs:

* 2 km sectors of the Nordschleife starting every 3 km (0, 3000, ... 18000 m);
* the first 2 km of every other circuit in ``data/tracks/raw/zaggyai/`` (raw files of the
  same source as the Nordschleife, read by ``Track.from_zaggy_json`` with its default
  processing: no widths in the files, so the default 8 m);
* the closed lap of every bundled circuit (``pyomo-lap tracks``: the same files built by
  ``pyomo_lap.track.circuits``, 12 m wide), with ``lap_ipopt``.

Every sector is solved with ``lap_ipopt`` (the default) and, unless ``--no-asl``, with the ASL
path (``ipopt``, the same IPOPT options as ``lap_ipopt``: see ``speed.py``), from the same cold
start; the table gives each run's exit, iterations, lap or sector time, wall time, and the
relative difference of the two paths' times. Each run is ``pyomo-lap solve ... --quiet`` in a
child process, as a user types it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
from speed import ROOT, _cli, _run

RAW = ROOT / "data" / "tracks" / "raw" / "zaggyai"
NORDSCHLEIFE_RAW = {"fb7dff20890fd8af44d0a7cf8538cbae", "1faf22819f42e158cda4a10763939bb0",
                    "9273312051716dfa2493534ddf9c03e3"}


def jobs(asl: bool):
    for start in range(0, 19000, 3000):
        yield "nordschleife", f"sector {start}+2000", ["--start", str(start), "--length", "2000"], asl
    for f in sorted(RAW.glob("*.json")):
        if f.name.split("--")[0] in NORDSCHLEIFE_RAW:
            continue
        name = f.name.split("--")[1][:-5]
        yield name, "sector 0+2000", ["--track", str(f), "--length", "2000"], asl
    from pyomo_lap.track.loading import available_tracks
    for name in available_tracks():
        if name != "nordschleife":
            yield name, "closed lap", ["--track", name, "--full-lap"], False


def run(track_args, solver, options=()):
    out = Path(tempfile.mkdtemp(prefix="pyomo_lap_robust_")) / "run"
    cmd = _cli() + ["solve", *track_args, "--solver", solver, "--quiet", "--out", str(out)]
    for o in options:
        cmd += ["--solver-option", o]
    try:
        wall, cpu, rss, rc, text = _run(cmd)
        where = out if (out / "summary.json").exists() else Path(str(out) + ".failed")
        s = json.loads((where / "summary.json").read_text()) if (where / "summary.json").exists() else {}
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
    return {"exit": rc, "status": s.get("ipopt_exit") or s.get("outcome") or text.strip()[-200:],
            "iters": s.get("iterations"), "time_s": s.get("lap_time_s"), "wall_s": wall,
            "points": s.get("n_points"), "length_m": s.get("length_m")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-asl", action="store_true", help="only the default path (lap_ipopt)")
    ap.add_argument("--csv", default=None, help="also write the table to this CSV file")
    a = ap.parse_args(argv)
    import pandas as pd

    from pyomo.contrib.solver.solvers.ipopt import ipopt_command_line_options

    from pyomo_lap.solvers.lap.solver import LAP_IPOPT_OPTIONS
    same = [f"{'' if k in ipopt_command_line_options else 'OF_'}{k}={v}"
            for k, v in LAP_IPOPT_OPTIONS.items()]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start",
          flush=True)
    rows = []
    for track, case, args, with_asl in jobs(not a.no_asl):
        r = run(args, "lap_ipopt")
        row = {"track": track, "job": case, **{f"lap_ipopt_{k}": v for k, v in r.items()}}
        if with_asl:
            q = run(args, "ipopt", same)
            row.update({f"ipopt_{k}": v for k, v in q.items() if k not in ("points", "length_m")})
            if r["time_s"] and q["time_s"]:
                row["rel_diff"] = (q["time_s"] - r["time_s"]) / r["time_s"]
        rows.append(row)
        print(f"  {track:32s} {case:18s} lap_ipopt: exit {r['exit']} {r['iters']} it "
              f"{r['time_s']} s wall {r['wall_s']:.1f} s"
              + (f" | ipopt: exit {row['ipopt_exit']} {row['ipopt_iters']} it {row['ipopt_time_s']} s"
                 f" wall {row['ipopt_wall_s']:.1f} s | rel. diff {row.get('rel_diff', float('nan')):.1e}"
                 if with_asl else ""), flush=True)
    df = pd.DataFrame(rows)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    ok = (df["lap_ipopt_exit"] == 0).sum()
    print(f"lap_ipopt: {ok} of {len(df)} jobs optimal; median wall "
          f"{df['lap_ipopt_wall_s'].median():.1f} s, max {df['lap_ipopt_wall_s'].max():.1f} s; "
          f"iterations max {df['lap_ipopt_iters'].max()}")
    if "rel_diff" in df:
        print(f"lap_ipopt vs ipopt: largest relative difference of the times "
              f"{df['rel_diff'].abs().max():.1e} over {df['rel_diff'].notna().sum()} sectors")
    if a.csv:
        df.to_csv(a.csv, index=False)
    return df


if __name__ == "__main__":
    main()
