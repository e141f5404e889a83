"""Mesh continuation against a direct solve of a fine mesh: ``python benchmarks/continuation.py``.

Each row solves one job twice through :func:`pyomo_lap.solve_sector`, with the job option
``mesh_continuation = "off"`` (the fine mesh from the usual initial guess) and ``"on"``
(coarse meshes first, :mod:`pyomo_lap.api.continuation`), and prints the IPOPT iterations
(coarse meshes + the fine one), the wall time of the whole job, the outcome and the lap time:

1. dymos's racecar on dymos's Barcelona arcs (``dymos_barcelona``), 400 uniform elements,
   dymos's IPOPT options with tol 1e-7 (``benchmarks/racecar.py`` ``TIGHT``);
2. the full model on Nordschleife 1200 + 500 m, 200 elements (2.5 m), cars ``fsae`` and
   ``f1_2014``.

Options: ``--quick`` leaves out row 1 (its direct solve runs up to 3000 iterations);
``--json FILE`` writes every row. Wall times are from a machine that may be busy: compare
the two solves of a row only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from racecar import TIGHT, dymos_options  # noqa: E402

from pyomo_lap import solve_sector  # noqa: E402
from pyomo_lap.api import SolveFailedError  # noqa: E402

JOBS = {
    "racecar Barcelona, 400 elements, tol 1e-7": dict(
        track="dymos_barcelona", vehicle="dymos_racecar", periodic=True, length=None, nfe=400,
        solver_options={**dymos_options("lap_ipopt"), **TIGHT}),
    "fsae Nordschleife 1200+500 m, 200 elements": dict(
        vehicle="fsae", start=1200.0, length=500.0, nfe=200, refine_mesh=False),
    "f1_2014 Nordschleife 1200+500 m, 200 elements": dict(
        vehicle="f1_2014", start=1200.0, length=500.0, nfe=200, refine_mesh=False),
}


def run(job: dict, mode: str) -> dict:
    """One solve of ``job`` with ``mesh_continuation = mode``: iterations, wall time [s],
    outcome, lap time [s]."""
    t0 = time.perf_counter()
    try:
        res = solve_sector(dict(job), mesh_continuation=mode, out_dir=None, echo=lambda t: None)
        rep, summary = res.report, res.summary
    except SolveFailedError as exc:
        rep, summary = exc.report, None
    wall = time.perf_counter() - t0
    cont = (summary or {}).get("mesh_continuation") or {}
    return {"mode": mode, "ok": bool(rep.ok), "status": rep.termination_condition,
            "iterations_fine": rep.iterations, "iterations_coarse": cont.get("iterations", 0),
            "stages": [(s["nfe"], s["iterations"]) for s in cont.get("stages", [])],
            "wall_s": wall, "lap_s": None if summary is None else summary["lap_time_s"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave out the racecar row")
    ap.add_argument("--json", help="write every row to this file")
    a = ap.parse_args(argv)
    rows = []
    print(f"{'job':48s} {'mode':4s} {'outcome':22s} {'coarse it':>9s} {'fine it':>7s} "
          f"{'wall [s]':>8s} {'time [s]':>9s}")
    for label, job in JOBS.items():
        if a.quick and job["vehicle"] == "dymos_racecar":
            continue
        for mode in ("off", "on"):
            r = run(job, mode)
            r["job"] = label
            rows.append(r)
            lap = "-" if r["lap_s"] is None else f"{r['lap_s']:.4f}"
            print(f"{label:48s} {mode:4s} {r['status']:22s} {r['iterations_coarse']:9d} "
                  f"{r['iterations_fine'] or 0:7d} {r['wall_s']:8.1f} {lap:>9s}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
