"""The 2014 Formula One hybrid lap of Catalunya (issue 38, item 3; docs/energy.md, "Hybrid
powertrain"): ``f1_2014`` with and without the MGU-K.

Solved as ``benchmarks/fastest_lap.py`` solves fastest-lap's lap (the bundled track
``catalunya_fastest_lap``, a closed lap, tyre centres within the track: tyre widths 0,
element_length 10 m, everything else the defaults), once with ``f1_2014`` and once with
``f1_2014_hybrid`` (the same car with the 2014 rules' ``[hybrid]``: MGU-K 120 kW, at most 4 MJ
per lap out of the energy store and 2 MJ into it, a periodic state of charge), each from the
usual cold start. Printed: both laps and the gain, the energies deployed and harvested, the
battery's balance (``|dE_b - (eta_h int P_h - int P_d / eta_d)|`` over the larger battery
energy; target 1e-6), the iterations and wall times. Written: the deployment map (deploy
and harvest power, state of charge against distance) to ``docs/figures/hybrid_deployment.png``.

Usage::

    python benchmarks/hybrid.py [--element-length 10] [--figure PATH]

Exit code 0 when the balance closes to 1e-6 and the hybrid lap is faster, else 1.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIGURE = ROOT / "docs" / "figures" / "hybrid_deployment.png"
BALANCE_TARGET = 1e-6


def solve(vehicle, element_length: float) -> dict:
    """The closed lap as ``benchmarks/fastest_lap.py`` solves it (``solve_sector``)."""
    from pyomo_lap import solve_sector
    t0 = time.perf_counter()
    res = solve_sector(track="catalunya_fastest_lap", vehicle=vehicle, periodic=True,
                       length=None, out_dir=None, echo=lambda *a, **k: None, progress=None,
                       ocp_options={"element_length": element_length})
    s = res.summary
    return {"lap_s": float(s["lap_time_s"]), "iterations": s.get("iterations"),
            "wall_s": time.perf_counter() - t0, "nfe": s.get("nfe"), "hybrid": s.get("hybrid"),
            "df": res.trajectory, "self_check": (s.get("self_check") or {}).get("verdict")}


def figure(df, path) -> None:
    """The deployment map: deploy and harvest power [kW] and the battery's energy [MJ]
    against the distance [m], over the speed [km/h]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = df["s"].to_numpy(float)
    fig, ax = plt.subplots(3, 1, figsize=(10, 7), sharex=True)
    ax[0].plot(s, df["speed"].to_numpy(float) * 3.6, "k", lw=0.8)
    ax[0].set_ylabel("speed [km/h]")
    ax[1].plot(s, df["power_deploy"].to_numpy(float) / 1e3, "tab:red", lw=1.0, label="deploy P_d")
    ax[1].plot(s, -df["power_harvest"].to_numpy(float) / 1e3, "tab:blue", lw=1.0,
               label="harvest -P_h")
    ax[1].set_ylabel("MGU-K power [kW]")
    ax[1].legend(loc="lower right", fontsize=8)
    ax[2].plot(s, df["soc_energy"].to_numpy(float) / 1e6, "tab:green", lw=1.0)
    ax[2].set_ylabel("battery energy [MJ]")
    ax[2].set_xlabel("distance s [m]")
    ax[0].set_title("f1_2014_hybrid on catalunya_fastest_lap: optimal MGU-K deployment "
                    "(benchmarks/hybrid.py)", fontsize=10)
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    """Solve both laps and print the comparison (module docstring); 0 if the balance closes
    and the hybrid lap is faster."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--element-length", type=float, default=10.0, help="element_length [m]")
    ap.add_argument("--figure", default=str(FIGURE), help="where to write the deployment map")
    args = ap.parse_args(argv)
    from pyomo_lap import load_vehicle
    h = args.element_length
    print(f"f1_2014 with and without the MGU-K on catalunya_fastest_lap (closed lap, periodic "
          f"state of charge, tyre centres within the track, element_length {h:g} m)")
    runs = {}
    for name in ("f1_2014", "f1_2014_hybrid"):
        runs[name] = r = solve(load_vehicle(name).replace(tw1=0.0, tw2=0.0), h)
        print(f"  {name:15s} lap {r['lap_s']:8.3f} s   {r['nfe']} elements, {r['iterations']} "
              f"iterations, {r['wall_s']:.1f} s wall; self-check {r['self_check']}")
    base, hyb = runs["f1_2014"], runs["f1_2014_hybrid"]
    gain = base["lap_s"] - hyb["lap_s"]
    e = hyb["hybrid"]
    print(f"  lap gain of the MGU-K: {gain:.3f} s ({100 * gain / base['lap_s']:.2f} %)")
    print(f"  deployed at the wheels {e['deployed_J'] / 1e6:.4f} MJ (battery out "
          f"{e['battery_out_J'] / 1e6:.4f} MJ, limit 4 MJ); harvested {e['harvested_J'] / 1e6:.4f} "
          f"MJ (battery in {e['battery_in_J'] / 1e6:.4f} MJ, limit 2 MJ)")
    print(f"  state of charge {e['soc_start_J'] / 1e6:.4f} MJ -> {e['soc_end_J'] / 1e6:.4f} MJ "
          f"(delta {e['delta_soc_J']:.3e} J)")
    ok = e["balance_residual"] <= BALANCE_TARGET and gain > 0.0
    print(f"  balance residual {e['balance_residual']:.2e} relative (target {BALANCE_TARGET:g}): "
          f"{'met' if e['balance_residual'] <= BALANCE_TARGET else 'NOT met'}")
    figure(hyb["df"], args.figure)
    print(f"  deployment map: {args.figure}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
