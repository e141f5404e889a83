"""Every bundled car on every bundled circuit's closed lap, checked: the table of the docs'
"Every car on every circuit" (docs/validation.md).

For each car (fsae, f1_2014, bmw_320i) and each closed bundled circuit (``pyomo-lap
tracks``), and dymos's racecar on its oval: ``pyomo-lap solve --full-lap`` (the CLI as a
user runs it, defaults only) into ``OUT/<car>/<track>``, then ``pyomo-lap validate`` of the
folder; the table gives the lap time, the NLP's size, IPOPT's iterations, the wall time of the
solve, the penalties' share of the objective (``summary.json``: ``regularization``) and the
verdicts (the solve's self-check and validate's), with the checks that did not pass.

Usage::

    python benchmarks/laps.py [--out DIR] [--cars fsae,f1_2014,bmw_320i] [--tracks monza,...]
                              [--no-validate] [--penalty-cost] [--markdown FILE]

Prints one line per lap as it is done and the table at the end (``--markdown FILE`` also
writes it as a Markdown table). Exit code 0 when every lap solved and validate passed, else 1.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYOMO_LAP = [sys.executable, "-m", "pyomo_lap.cli"]
CARS = ("fsae", "f1_2014", "bmw_320i")


def closed_tracks() -> list:
    """The bundled closed tracks made of points (not the arc tracks), by name."""
    sys.path.insert(0, str(ROOT))
    from pyomo_lap.track.loading import bundled_tracks
    return [t["name"] for t in bundled_tracks() if t.get("closed") and t.get("kind") == "centreline"]


def run(cmd: list, log: Path) -> tuple:
    """Run a command, its output to ``log``; returns (exit code, wall time [s])."""
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
    return rc, time.perf_counter() - t0


def one_lap(car: str, track: str, out: Path, validate: bool, penalty_cost: bool = False) -> dict:
    """Solve one closed lap and validate it; the row of the table."""
    folder = out / car / track
    folder.parent.mkdir(parents=True, exist_ok=True)
    rc, wall = run(PYOMO_LAP + ["solve", "--track", track, "--vehicle", car, "--full-lap",
                                "--out", str(folder), "-q"]
                   + (["--penalty-cost"] if penalty_cost else []), out / car / f"{track}.solve.log")
    row = {"car": car, "track": track, "exit": rc, "wall_s": round(wall, 1)}
    summary = folder / "summary.json"
    if not summary.is_file():
        failed = folder.parent / f"{folder.name}.failed" / "summary.json"
        row["verdict"] = "no result"
        if failed.is_file():
            s = json.loads(failed.read_text())
            row.update(termination=s.get("termination_condition"), iterations=s.get("iterations"))
        return row
    s = json.loads(summary.read_text())
    reg = s.get("regularization") or {}
    if not reg and s.get("objective") and s.get("lap_time_s"):     # from the objective itself
        reg = {"total_s": s["objective"] - s["lap_time_s"],
               "share": (s["objective"] - s["lap_time_s"]) / s["objective"]}
    row.update(lap_s=s.get("lap_time_s"), iterations=s.get("iterations"),
               n_variables=s.get("n_variables"), nfe=s.get("nfe"),
               solve_s=(s.get("timing") or {}).get("solve_s"),
               penalty_share=reg.get("share"), penalty_s=reg.get("total_s"),
               penalty_cost_s=reg.get("lap_time_cost_s"),
               penalty_cost_wall_s=(s.get("timing") or {}).get("penalty_cost_s"),
               self_check=(s.get("self_check") or {}).get("verdict"))
    if validate:
        rc, vwall = run(PYOMO_LAP + ["validate", str(folder)], out / car / f"{track}.validate.log")
        v = folder / "validation.json"
        if v.is_file():
            val = json.loads(v.read_text())
            row["verdict"] = val.get("verdict")
            row["not_passed"] = [f"{c['name']} {c['value']:.3g} {c.get('unit', '')}".strip()
                                 for c in val.get("checks", []) if c.get("verdict") != "pass"]
        else:
            row["verdict"] = f"validate exit {rc}"
        row["validate_s"] = round(vwall, 1)
    return row


def line(row: dict) -> str:
    share = row.get("penalty_share")
    return (f"{row['car']:<9} {row['track']:<22} "
            + (f"lap {row['lap_s']:9.3f} s  {row.get('iterations', '?'):>4} it  "
               f"{row['wall_s']:6.1f} s wall  penalties "
               + (f"{100 * share:.3f} %" if share is not None else "?")
               + (f"  cost {1e3 * row['penalty_cost_s']:.1f} ms"
                  if row.get("penalty_cost_s") is not None else "")
               + f"  self-check {row.get('self_check')}  validate {row.get('verdict')}"
               if row.get("lap_s") is not None else f"NO RESULT (exit {row['exit']}, "
               f"{row.get('termination')}, {row.get('iterations')} it)")
            + ("  [" + "; ".join(row.get("not_passed", [])) + "]" if row.get("not_passed") else ""))


def markdown(rows: list) -> str:
    cost = any(r.get("penalty_cost_s") is not None for r in rows)
    head = ("| car | circuit | lap [s] | iterations | variables | wall [s] | penalties [% of objective] "
            + ("| their lap-time cost [ms] " if cost else "")
            + "| self-check | validate | checks not passed |\n|"
            + "---|" * (11 if cost else 10) + "\n")
    out = []
    for r in rows:
        share = r.get("penalty_share")
        wall = r["wall_s"] - (r.get("penalty_cost_wall_s") or 0.0)
        out.append(f"| {r['car']} | {r['track']} | "
                   + (f"{r['lap_s']:.3f}" if r.get("lap_s") is not None else "no result")
                   + f" | {r.get('iterations', '')} | {r.get('n_variables', '')} | {wall:.1f} | "
                   + (f"{100 * share:.3f}" if share is not None else "")
                   + ((f" | {1e3 * r['penalty_cost_s']:.1f}" if r.get("penalty_cost_s") is not None
                       else " | ") if cost else "")
                   + f" | {r.get('self_check') or ''} | {r.get('verdict') or ''} | "
                   + "; ".join(r.get("not_passed", [])) + " |")
    return head + "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmark_laps"), help="results folder")
    ap.add_argument("--cars", default=",".join(CARS))
    ap.add_argument("--tracks", default=None, help="comma-separated (default: every closed bundled track)")
    ap.add_argument("--no-validate", action="store_true")
    ap.add_argument("--penalty-cost", action="store_true",
                    help="solve with --penalty-cost: the penalties' lap-time cost (a second solve "
                         "from the optimum, not counted in the wall time of the table)")
    ap.add_argument("--no-racecar", action="store_true", help="leave out dymos's racecar on its oval")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tracks = args.tracks.split(",") if args.tracks else closed_tracks()
    cases = [(c, t) for c in args.cars.split(",") if c for t in tracks]
    if not args.no_racecar:
        cases.append(("dymos_racecar", "dymos_oval"))
    rows = []
    for car, track in cases:
        row = one_lap(car, track, out, not args.no_validate, args.penalty_cost)
        rows.append(row)
        print(line(row), flush=True)
        (out / "laps.json").write_text(json.dumps(rows, indent=1, default=str))
    table = markdown(rows)
    print()
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    good = all(r.get("lap_s") is not None and (args.no_validate or r.get("verdict") == "pass")
               for r in rows)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
