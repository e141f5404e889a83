"""Reproduce dymos's racecar lap on its oval and compare: ``python benchmarks/racecar.py``.

The racecar example of dymos (OpenMDAO; ``dymos/examples/racecar``, its test asserts a lap of
22.2657 s with relative tolerance 1e-2) solved with this project's vehicle model ``racecar``
(:mod:`pyomo_lap.ocp.racecar`) on ``data/tracks/dymos_oval.toml`` (exact arcs) and
``dymos_oval_spline.toml`` (dymos's curvature: a spline looked up by position). Prints

1. the curvature treatment: peak curvature over 1/R and the lag of each corner;
2. dymos's discretization and tolerances (50 elements, its IPOPT options) with the
   collocation schemes of pyomo.dae, the track limits at every point or only at the
   elements' ends (Gauss-Lobatto's state nodes), against dymos's 22.2658 s;
3. a mesh study with converged tolerances (tol 1e-7), both curvature treatments;
4. what each remaining modelling choice moves (throttle/brake smoothing, control form,
   solver path).

Options: ``--quick`` leaves out the 400-element solves; ``--json FILE`` writes every row.
Takes about 10 minutes on the 2-core reference machine (``--quick``: 3). The solve times it
prints are from a machine that may be busy: see ``docs/racecar.md`` for the conditions of the
published ones.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import pyomo.environ as pyo

from pyomo_lap import build_model, initialize_model, load_vehicle, solve_model
from pyomo_lap.ocp.racecar import DYMOS_IPOPT_OPTIONS, racecar_model
from pyomo_lap.track.arcs import load_arc_track

DYMOS_50 = 22.2658        # dymos 1.15, Gauss-Lobatto, 50 segments of order 3, tol 1e-3 (issue 27)
DYMOS_PUBLISHED = 22.2657  # the assertion of dymos/examples/racecar/test/test_racecar.py
DYMOS_CONVERGED = (22.34, 22.35)   # dymos, tol 1e-5..1e-6: 22.352 (100 segments), 22.335 (400)
TIGHT = {"tol": 1e-7, "acceptable_tol": 1e-7, "constr_viol_tol": 1e-7, "compl_inf_tol": 1e-7,
         "max_iter": 3000}
ASL_FILE_ONLY = ("acceptable_iter", "bound_mult_init_method")   # not on ipopt's command line


def dymos_options(solver: str) -> dict:
    """dymos's IPOPT options for a solver path: ``lap_ipopt`` scales the NLP itself (the
    model's scaling factors, dymos's refs); the ASL executable takes two of them only through
    an options file (``OF_`` prefix)."""
    if solver == "ipopt":
        return {("OF_" + k if k in ASL_FILE_ONLY else k): v for k, v in DYMOS_IPOPT_OPTIONS.items()}
    return {k: v for k, v in DYMOS_IPOPT_OPTIONS.items() if k != "nlp_scaling_method"}


def junction_mesh(track, h: float) -> list:
    """Element boundaries [m]: every segment's ends, each segment cut into elements of at
    most ``h`` m (the curvature is then smooth inside every element)."""
    out = [0.0]
    for s0, sg in zip(track._s0, track.segments):
        k = max(1, math.ceil(sg.length / h - 1e-9))
        out.extend(s0 + sg.length * np.arange(1, k + 1) / k)
    out[-1] = track.length
    return [float(x) for x in out]


def solve(track, car, *, nfe=None, ncp=3, scheme="LAGRANGE-RADAU", limits_at="all",
          control_form=None, thrust_eps=1e-4, solver="lap_ipopt", tight=False, bounds=None):
    model = racecar_model(thrust_eps=thrust_eps, control_form=control_form, limits_at=limits_at)
    kw = dict(element_boundaries=bounds) if bounds is not None else dict(nfe=nfe)
    m = build_model(track, car, model=model, periodic=True, ncp=ncp, scheme=scheme, **kw)
    initialize_model(m)
    opts = dymos_options(solver)
    if tight:
        opts.update(TIGHT)
    t0 = time.perf_counter()
    rep = solve_model(m, solver=solver, options=opts)
    wall = time.perf_counter() - t0
    n = np.array([pyo.value(m.n[s]) for s in m.s])
    power = np.array([pyo.value(m.power[s]) for s in m.s])
    return {"lap_s": float(pyo.value(m.lap_time)), "ok": bool(rep.ok),
            "status": rep.termination_condition, "iterations": rep.iterations,
            "solve_s": float(rep.solve_time_s), "wall_s": wall, "points": len(m.s),
            "elements": m.problem.options.nfe, "max_abs_n_m": float(np.abs(n).max()),
            "max_power_W": float(power.max())}


def curvature_report(exact, spline) -> list:
    """Per corner: radius, peak looked-up curvature x R, and the lag [m] of the looked-up
    curvature behind the arc (the shift that best matches the two, to 0.05 m)."""
    s = np.arange(0.0, exact.length, 0.05)
    ke, kl = exact.exact_curvature(s), spline.lookup_curvature(s)
    rows = []
    for s0, sg in zip(exact._s0, exact.segments):
        if not sg.is_arc:
            continue
        win = (s > s0 - 40) & (s < s0 + sg.length + 40)
        shifts = np.arange(-200, 201)          # x 0.05 m
        err = [np.sum((np.roll(ke, k)[win] - kl[win]) ** 2) for k in shifts]
        rows.append({"start_m": float(s0), "radius_m": sg.radius,
                     "peak_over_1_R": float(np.max(np.abs(kl[win])) * sg.radius),
                     "lag_m": float(shifts[int(np.argmin(err))] * 0.05)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave out the 400-element solves")
    ap.add_argument("--json", help="write every row to this file")
    a = ap.parse_args(argv)
    car = load_vehicle("dymos_racecar")
    exact = load_arc_track("dymos_oval")
    spline = load_arc_track("dymos_oval", curvature="spline-lookup")
    out = {"curvature": curvature_report(exact, spline), "rows": []}
    print("1. dymos's curvature (spline looked up by position) against the arcs")
    print("   corner at s [m] | R [m] | peak kappa x R | lag [m]")
    for r in out["curvature"]:
        print(f"   {r['start_m']:15.1f} | {r['radius_m']:5.0f} | {r['peak_over_1_R']:14.3f} | "
              f"{r['lag_m']:7.2f}")

    def row(group, label, track, ref=None, **kw):
        r = solve(track, car, **kw)
        r.update(group=group, label=label, track=track.name)
        if ref is not None:
            r["vs_ref_pct"] = 100 * (r["lap_s"] / ref - 1)
        out["rows"].append(r)
        flag = "" if r["ok"] else f"  ({r['status']})"
        vs = f" {r['vs_ref_pct']:+7.3f} %" if ref is not None else ""
        print(f"   {label:52s} {r['lap_s']:9.4f} s{vs}  {r['iterations']:4d} it "
              f"{r['solve_s']:6.1f} s  max|n| {r['max_abs_n_m']:.2f} m{flag}", flush=True)
        return r

    print(f"\n2. dymos's discretization and tolerances: 50 elements, tol 1e-3, spline curvature "
          f"(dymos, Gauss-Lobatto 50 x 3: {DYMOS_50} s)")
    for scheme, ncp, lim in (("LAGRANGE-RADAU", 3, "all"), ("LAGRANGE-RADAU", 3, "element-ends"),
                             ("LAGRANGE-LEGENDRE", 3, "element-ends"),
                             ("LAGRANGE-LEGENDRE", 2, "element-ends"),
                             ("LAGRANGE-RADAU", 2, "element-ends"),
                             ("LAGRANGE-LEGENDRE", 2, "all")):
        row("dymos-setting", f"{scheme[9:].lower()} ncp={ncp}, limits at {lim}", spline,
            DYMOS_50, nfe=50, ncp=ncp, scheme=scheme, limits_at=lim)
    row("dymos-setting", "legendre ncp=3, limits at element-ends, ASL ipopt", spline, DYMOS_50,
        nfe=50, scheme="LAGRANGE-LEGENDRE", limits_at="element-ends", solver="ipopt")
    row("dymos-setting", "legendre ncp=3, limits at element-ends, tol 1e-7", spline, DYMOS_50,
        nfe=50, scheme="LAGRANGE-LEGENDRE", limits_at="element-ends", tight=True)

    mid = sum(DYMOS_CONVERGED) / 2
    sizes = (50, 100, 200) if a.quick else (50, 100, 200, 400)
    print(f"\n3. mesh study, tol 1e-7, radau ncp=3, limits at every point "
          f"(dymos converged: {DYMOS_CONVERGED[0]}-{DYMOS_CONVERGED[1]} s; % against {mid})")
    for nfe in sizes:
        row("mesh-spline", f"spline curvature, {nfe} elements", spline, mid, nfe=nfe, tight=True)
    print(f"   exact arcs (% against dymos's published {DYMOS_PUBLISHED} s); the curvature jumps at "
          "the junctions, so the elements end there (uniform elements that straddle a jump "
          "converge slowly: 50 elements 163 iterations, 100 elements not in 3000):")
    row("mesh-exact", "exact arcs, 50 uniform elements", exact, DYMOS_PUBLISHED, nfe=50, tight=True)
    for h in (25.0, 12.5, 6.25) if a.quick else (25.0, 12.5, 6.25, 3.125):
        row("mesh-exact", f"exact arcs, elements <= {h} m, junctions on element ends", exact,
            DYMOS_PUBLISHED, bounds=junction_mesh(exact, h), tight=True)

    print("\n4. the other choices, 100 elements, tol 1e-7, spline curvature")
    base = row("choices", "radau ncp=3, C1 controls, thrust_eps 1e-4 (as above)", spline, None,
               nfe=100, tight=True)
    for label, kw in (("thrust_eps 1e-6", dict(thrust_eps=1e-6)),
                      ("controls free at every point (control_form point)", dict(control_form="point")),
                      ("ASL path (ipopt executable)", dict(solver="ipopt"))):
        r = row("choices", label, spline, base["lap_s"], nfe=100, tight=True, **kw)
        r["vs_base_pct"] = r.pop("vs_ref_pct")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
