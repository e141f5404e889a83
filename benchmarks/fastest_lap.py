"""fastest-lap's Formula One lap of Catalunya, reproduced: ``f1_2014`` on fastest-lap's own
Catalunya, solved as fastest-lap's regression test solves it, against fastest-lap's saved
solution (docs/fastest_lap.md).

fastest-lap (github juanmanzanero/fastest-lap, MIT) ships the car ``f1_2014`` transcribes
(``database/vehicles/f1/limebeer-2014-f1.xml``) and asserts, in
``src/test/applications/f1_optimal_laptime_test.cpp`` (test ``Catalunya_discrete``), its lap
of ``database/tracks/catalunya/catalunya.xml`` (flat, closed, 500 points): **77.791438 s**,
with the brake bias fixed at 0.6; the test's saved solution, every channel at its 500 points,
is ``data/reference/fastest-lap/f1_optimal_laptime_catalunya_discrete.xml`` (the same commit).

Solved here as that test does: the bundled track ``catalunya_fastest_lap`` (that file), a
closed lap, the bundled car ``f1_2014`` (brake bias 0.6 as in its file) with fastest-lap's
track limits, which hold the tyres' centres within the track: tyre widths 0. Everything else is
the car file's and the defaults. Compared with the saved solution: the lap time, the peak
braking and traction, the top speed, the minimum speeds of the corners, the RMS difference of
the speed profiles (fastest-lap's 500 points, at the same fraction of the lap: the two
centrelines' lengths differ by 0.09 %).

With ``--differences`` it also solves the variants that each remove one difference from
fastest-lap's model (or add one), one at a time, and prints the lap time of each: what each
difference is worth (docs/fastest_lap.md, "What remains").

Usage::

    python benchmarks/fastest_lap.py [--element-length 10] [--differences] [--out DIR]
                                     [--no-validate]

Exit code 0 when the targets are met (lap within 1.0 %, peak braking within 5 %, speed RMS
within 2 % of the mean speed) and ``pyomo-lap validate`` passes the lap, else 1.
"""
from __future__ import annotations

import argparse
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REFERENCE = ROOT / "data" / "reference" / "fastest-lap" / "f1_optimal_laptime_catalunya_discrete.xml"
FL_LAP_S = 77.791438          # f1_optimal_laptime_test.cpp, Catalunya_discrete
FL_TRACK_LENGTH = 4634.1501076379418   # catalunya.xml <track_length>
G = 9.81
TARGETS = {"lap": 0.01, "braking": 0.05, "rms": 0.02}


def fastest_lap_solution(path=REFERENCE) -> dict:
    """fastest-lap's saved solution: arc length s [m], time t [s], speed v [m/s] (of the
    centre of mass, from its body velocities u, v), and its accelerations along and across
    the car's path a_t, a_n [m/s^2] (from u, v and the yaw rate), at its 500 points."""
    root = ET.parse(path).getroot()

    def get(tag):
        return np.array([float(x) for x in root.find(tag).text.split(",")])
    s, t = get("road.arclength"), get("time")
    u, v, w = get("chassis.velocity.x"), get("chassis.velocity.y"), get("chassis.omega.z")
    speed = np.hypot(u, v)
    # body accelerations: du/dt - v w, dv/dt + u w (central differences in time, periodic)
    period = float(root.find("laptime").text)
    tt = np.concatenate([t[-1:] - period, t, t[:1] + period])

    def ddt(x):
        xx = np.concatenate([x[-1:], x, x[:1]])
        return (xx[2:] - xx[:-2]) / (tt[2:] - tt[:-2])
    ax, ay = ddt(u) - v * w, ddt(v) + u * w
    a_t = (u * ax + v * ay) / speed
    return {"s": s, "t": t, "v": speed, "a_t": a_t, "lap_s": period}


def corners(s, v, v_max: float = 70.0) -> list:
    """Indices of the local minima of a speed profile below ``v_max`` [m/s] (the corners)."""
    return [i for i in range(1, len(v) - 1) if v[i] < v[i - 1] and v[i] <= v[i + 1] and v[i] < v_max]


def solve(vehicle, element_length: float, out, label: str, ocp_options=None) -> dict:
    """Solve the lap as the CLI does (``solve_sector``); returns the trajectory and figures."""
    from pyomo_lap import solve_sector
    t0 = time.perf_counter()
    res = solve_sector(track="catalunya_fastest_lap", vehicle=vehicle, periodic=True,
                       length=None, out_dir=out, echo=lambda *a, **k: None, progress=None,
                       ocp_options={"element_length": element_length, **(ocp_options or {})})
    wall = time.perf_counter() - t0
    df = res.trajectory
    return {"label": label, "df": df, "lap_s": float(res.summary["lap_time_s"]),
            "iterations": res.summary.get("iterations"), "wall_s": wall,
            "n_variables": res.summary.get("n_variables"), "nfe": res.summary.get("nfe"),
            "regularization": res.summary.get("regularization"),
            "self_check": (res.summary.get("self_check") or {}).get("verdict")}


def compare(run: dict, ref: dict) -> dict:
    """The figures of the comparison (module docstring)."""
    df = run["df"]
    s = df["s"].to_numpy()
    keep = np.r_[True, np.diff(s) > 0]
    s, v = s[keep], df["speed"].to_numpy()[keep]
    a_t = df["a_t"].to_numpy()[keep] if "a_t" in df else np.gradient(v, s) * v
    L = float(s.max())
    at = ref["s"] * L / FL_TRACK_LENGTH
    vi = np.interp(at, s, v)
    d = vi - ref["v"]
    cs = corners(ref["s"], ref["v"])
    return {"lap_s": run["lap_s"], "lap_rel": run["lap_s"] / FL_LAP_S - 1.0,
            "braking_g": float(a_t.min() / G), "braking_ref_g": float(ref["a_t"].min() / G),
            "braking_rel": float(a_t.min() / ref["a_t"].min() - 1.0),
            "traction_g": float(a_t.max() / G), "traction_ref_g": float(ref["a_t"].max() / G),
            "top_kmh": float(v.max() * 3.6), "top_ref_kmh": float(ref["v"].max() * 3.6),
            "rms_mps": float(np.sqrt(np.mean(d ** 2))),
            "rms_rel": float(np.sqrt(np.mean(d ** 2)) / ref["v"].mean()),
            "corners": [(float(ref["s"][i]), float(ref["v"][i] * 3.6), float(vi[i] * 3.6)) for i in cs]}


def report(run: dict, c: dict, echo=print) -> bool:
    """Print the comparison; returns whether the targets are met."""
    ok = (abs(c["lap_rel"]) <= TARGETS["lap"] and abs(c["braking_rel"]) <= TARGETS["braking"]
          and c["rms_rel"] <= TARGETS["rms"])
    reg = run.get("regularization") or {}
    echo(f"{run['label']}: {run['nfe']} elements, {run['n_variables']} variables, "
         f"{run['iterations']} iterations, {run['wall_s']:.1f} s wall; self-check {run['self_check']}; "
         f"penalties {100 * reg.get('share', float('nan')):.3f} % of the objective")
    echo(f"  lap            {c['lap_s']:9.3f} s   fastest-lap {FL_LAP_S:9.3f} s   "
         f"{100 * c['lap_rel']:+.2f} %   (target within {100 * TARGETS['lap']:.0f} %)")
    echo(f"  peak braking   {c['braking_g']:9.2f} g   fastest-lap {c['braking_ref_g']:9.2f} g   "
         f"{100 * c['braking_rel']:+.1f} %   (target within {100 * TARGETS['braking']:.0f} %)")
    echo(f"  peak traction  {c['traction_g']:9.2f} g   fastest-lap {c['traction_ref_g']:9.2f} g")
    echo(f"  top speed      {c['top_kmh']:9.1f} km/h fastest-lap {c['top_ref_kmh']:9.1f} km/h")
    echo(f"  speed RMS      {c['rms_mps']:9.2f} m/s = {100 * c['rms_rel']:.2f} % of fastest-lap's "
         f"mean speed   (target <= {100 * TARGETS['rms']:.0f} %)")
    echo("  corners (s [m]: fastest-lap / here, minimum km/h): "
         + ", ".join(f"{s:.0f}: {a:.0f}/{b:.0f}" for s, a, b in c["corners"]))
    echo(f"  targets {'met' if ok else 'NOT met'}")
    return ok


def variants(base) -> list:
    """One difference from fastest-lap's model at a time: (label, car, OCP options)."""
    return [
        ("the bundled car's contact patches (Pirelli 2014 widths) instead of tyre centres",
         base.replace(tw1=0.245, tw2=0.325), {}),
        ("the tyres at the very peak (stiffness_reserve = 0 instead of 0.1)", base,
         {"stiffness_reserve": 0.0}),
        ("the paper's tyre: friction ellipse as a constraint, at or below the peak",
         base.replace(combined_slip="constraint"), {}),
        ("tyres past their peak up to 9.5 deg (fastest-lap's slip_angle_max)",
         base.replace(alpha_max=0.16581), {}),
        ("no brake torque limit", base.replace(T_b1=None, T_b2=None), {}),
        ("drag at road level (h_cp = 0)", base.replace(h_cp=0.0), {}),
        ("the inertias of the file as the sprung body's (fastest-lap's as the whole car's)",
         base.replace(Ixx=112.5, Iyy=425.0, Izz=450.0), {}),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--element-length", type=float, default=10.0,
                    help="element_length of the mesh [m] (default: the OCP's default)")
    ap.add_argument("--differences", action="store_true", help="also solve each variant")
    ap.add_argument("--out", default=None, help="results folder of the main run (default: a "
                    "temporary folder)")
    ap.add_argument("--no-validate", action="store_true",
                    help="do not run pyomo-lap validate on the main run")
    args = ap.parse_args(argv)
    import tempfile
    from pyomo_lap import load_vehicle
    ref = fastest_lap_solution()
    car = load_vehicle("f1_2014").replace(tw1=0.0, tw2=0.0)   # fastest-lap: tyre centres
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "lap"
        run = solve(car, args.element_length, out, f"f1_2014 on catalunya_fastest_lap "
                    f"(tyre centres within the track, element_length {args.element_length:g} m)")
        ok = report(run, compare(run, ref))
        if not args.no_validate:
            from pyomo_lap.api.validate import validate_results
            t0 = time.perf_counter()
            v = validate_results(out, plots=False, echo=lambda *a, **k: None)
            bad = [f"{c['name']} {c['value']:.3g} {c.get('unit', '')}".strip()
                   for c in v["checks"] if c["verdict"] != "pass"]
            print(f"  pyomo-lap validate: {v['verdict'].upper()} ({time.perf_counter() - t0:.0f} s)"
                  + (f": {'; '.join(bad)}" if bad else ""))
            ok = ok and v["verdict"] == "pass"
    if args.differences:
        print("\nEach difference, one at a time (lap time, change against the run above):")
        for label, variant, options in variants(car):
            r = solve(variant, args.element_length, None, label, options)
            c = compare(r, ref)
            print(f"  {r['lap_s']:8.3f} s  {r['lap_s'] - run['lap_s']:+7.3f} s  "
                  f"({100 * c['lap_rel']:+.2f} % against fastest-lap; speed RMS "
                  f"{100 * c['rms_rel']:.2f} %; {r['iterations']} it)  {label}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
