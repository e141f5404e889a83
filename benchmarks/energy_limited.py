"""fastest-lap's energy-limited laps of Catalunya, reproduced (issue 38, docs/energy.md).

fastest-lap (github juanmanzanero/fastest-lap, MIT) asserts in
``src/test/applications/f1_optimal_laptime_test.cpp`` two limited laps of its flat Catalunya
with the Formula One car ``f1_2014`` transcribes:

* ``Catalunya_engine_energy_limited``: the engine's energy (its integral ``engine-energy``,
  throttle times the maximum power, ``src/core/vehicles/limebeer2014f1.h``) at most 24 MJ per
  lap: **79.733713 s** (its unlimited lap, ``Catalunya_discrete``: 77.791438 s, +1.942 s);
* ``Catalunya_tire_energy_limited``: each tyre's dissipated energy (``tire-fl-energy`` ...,
  force times slip velocity, ``Tire::get_dissipation``) at most 0.8 MJ: **82.366723 s**.

Solved here as ``benchmarks/fastest_lap.py`` solves the unlimited lap (``f1_2014`` on
``catalunya_fastest_lap``, a closed lap, tyre centres within the track, element_length 10 m,
everything else the defaults): unlimited, then with ``limits={"engine_energy": "24MJ"}``, then
with ``limits={"tyre_energy": "0.8MJ"}`` (each tyre), each from the usual cold start. Printed:
the energies, laps, the differences to fastest-lap's, iterations, wall times, and whether each
target of issue 38 is met (engine: energy 24 MJ to 1e-3, lap within 1.5 % of 79.733713 s, the
increase over the unlimited lap within 20 % of +1.942 s; tyres: lap within 3 % of 82.366723 s).

Usage::

    python benchmarks/energy_limited.py [--element-length 10] [--only engine|tyre]

Exit code 0 when the targets are met, else 1.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fastest_lap import FL_LAP_S  # noqa: E402  (the same comparison's constants)

FL_ENGINE_LIMITED_S = 79.733713     # Catalunya_engine_energy_limited
FL_TYRE_LIMITED_S = 82.366723       # Catalunya_tire_energy_limited
ENGINE_LIMIT_J, TYRE_LIMIT_J = 24e6, 0.8e6
TARGETS = {"energy": 1e-3, "engine_lap": 0.015, "increase": 0.20, "tyre_lap": 0.03}


def solve(vehicle, element_length: float, limits=None) -> dict:
    """The closed lap as ``benchmarks/fastest_lap.py`` solves it, with ``limits``."""
    from pyomo_lap import solve_sector
    t0 = time.perf_counter()
    res = solve_sector(track="catalunya_fastest_lap", vehicle=vehicle, periodic=True,
                       length=None, out_dir=None, echo=lambda *a, **k: None, progress=None,
                       ocp_options={"element_length": element_length}, limits=limits)
    s = res.summary
    return {"lap_s": float(s["lap_time_s"]), "energy": s["energy"], "iterations": s["iterations"],
            "wall_s": time.perf_counter() - t0, "nfe": s["nfe"],
            "self_check": (s.get("self_check") or {}).get("verdict")}


def _energies(e: dict) -> str:
    return ", ".join(f"{k[:-2]} {v / 1e6:.3f}" for k, v in e.items() if k.endswith("_J")) + " MJ"


def _line(label: str, r: dict, echo=print) -> None:
    echo(f"{label}: lap {r['lap_s']:.3f} s, {r['iterations']} iterations, {r['wall_s']:.1f} s wall, "
         f"self-check {r['self_check']}")
    echo(f"  energies: {_energies(r['energy'])}")


def main(argv=None) -> int:
    """Solve the three laps and print the comparison (module docstring); 0 if the targets
    are met."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--element-length", type=float, default=10.0, help="element_length [m]")
    ap.add_argument("--only", choices=["engine", "tyre"], default=None,
                    help="only this limited lap (and the unlimited one)")
    args = ap.parse_args(argv)
    from pyomo_lap import load_vehicle
    car = load_vehicle("f1_2014").replace(tw1=0.0, tw2=0.0)   # fastest-lap: tyre centres
    print(f"f1_2014 on catalunya_fastest_lap (tyre centres within the track, element_length "
          f"{args.element_length:g} m), each from the cold start")
    free = solve(car, args.element_length)
    _line("unlimited", free)
    print(f"  lap {free['lap_s']:.3f} s against fastest-lap's {FL_LAP_S:.3f} s "
          f"({100 * (free['lap_s'] / FL_LAP_S - 1):+.2f} %)")
    ok = True
    if args.only in (None, "engine"):
        r = solve(car, args.element_length, {"engine_energy": ENGINE_LIMIT_J})
        _line("engine energy <= 24 MJ", r)
        used = r["energy"]["engine_J"]
        rel = r["lap_s"] / FL_ENGINE_LIMITED_S - 1
        inc, fl_inc = r["lap_s"] - free["lap_s"], FL_ENGINE_LIMITED_S - FL_LAP_S
        checks = [("energy used", f"{used / 1e6:.6f} MJ", abs(used / ENGINE_LIMIT_J - 1) <= TARGETS["energy"],
                   "24 MJ to 1e-3"),
                  ("lap", f"{r['lap_s']:.3f} s vs fastest-lap {FL_ENGINE_LIMITED_S:.3f} s ({100 * rel:+.2f} %)",
                   abs(rel) <= TARGETS["engine_lap"], "within 1.5 %"),
                  ("increase", f"{inc:+.3f} s vs fastest-lap {fl_inc:+.3f} s ({100 * (inc / fl_inc - 1):+.1f} %)",
                   abs(inc / fl_inc - 1) <= TARGETS["increase"], "within 20 %")]
        ok &= _report(checks)
    if args.only in (None, "tyre"):
        r = solve(car, args.element_length, {"tyre_energy": TYRE_LIMIT_J})
        _line("each tyre's energy <= 0.8 MJ", r)
        rel = r["lap_s"] / FL_TYRE_LIMITED_S - 1
        worst = max(r["energy"][f"tyre_{t}_J"] for t in ("fl", "fr", "rl", "rr"))
        checks = [("largest tyre energy", f"{worst / 1e6:.6f} MJ", worst <= TYRE_LIMIT_J * (1 + 1e-6),
                   "<= 0.8 MJ"),
                  ("lap", f"{r['lap_s']:.3f} s vs fastest-lap {FL_TYRE_LIMITED_S:.3f} s ({100 * rel:+.2f} %)",
                   abs(rel) <= TARGETS["tyre_lap"], "within 3 %"),
                  ("increase", f"{r['lap_s'] - free['lap_s']:+.3f} s vs fastest-lap "
                   f"{FL_TYRE_LIMITED_S - FL_LAP_S:+.3f} s", True, "(reported)")]
        ok &= _report(checks)
    print(f"targets {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def _report(checks) -> bool:
    for name, text, good, target in checks:
        print(f"  {name:20s} {text}   target {target}: {'met' if good else 'NOT met'}")
    return all(good for _, _, good, _ in checks)


if __name__ == "__main__":
    sys.exit(main())
