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
import math
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
    """The closed lap as ``benchmarks/fastest_lap.py`` solves it (``solve_sector``), with
    ``limits``; the energies also by fastest-lap's definitions (:func:`fastest_lap_energies`)."""
    from pyomo_lap import solve_sector
    t0 = time.perf_counter()
    res = solve_sector(track="catalunya_fastest_lap", vehicle=vehicle, periodic=True,
                       length=None, out_dir=None, echo=lambda *a, **k: None, progress=None,
                       ocp_options={"element_length": element_length}, limits=limits)
    s = res.summary
    out = {"lap_s": float(s.lap_time_s), "energy": s.energy, "iterations": s.iterations,
           "wall_s": time.perf_counter() - t0, "nfe": s.nfe,
           "self_check": (s.self_check or {}).get("verdict")}
    out["fl"] = fastest_lap_energies(res.model)
    return out


FL_KAPPA_MAX = ((2000.0, 0.11), (6000.0, 0.10))
"""fastest-lap's tyre (limebeer-2014-f1.xml, both axles): kappa-max at its two reference loads."""
FL_Q = 1.9
"""Its Qx (= this car's C)."""
FL_SMOOTH_THROTTLE = 1e-2
"""The test's smooth_throttle_coeff: the engine's power is P_max smooth_pos(throttle, 1e-2),
smooth_pos(x, e) = (x + sqrt(x^2 + e)) / 2 (lion's), which is 0.05 P_max at no throttle."""
FL_BRAKE_TORQUE = 5000.0
"""[N m] its pedal's full torque, shared by the bias: the braking force f_xb is pedal x 5000 x 2 / R."""


def fl_slip_at_peak(fz):
    """fastest-lap's slip ratio at the peak longitudinal force for the load ``fz`` [N]:
    kappa_max(fz) (linear between its reference loads) times tan(pi / 2Q) / S,
    S = pi / (2 atan Q) (src/core/tire/tire_pacejka.hpp)."""
    (f1, k1), (f2, k2) = FL_KAPPA_MAX
    S = math.pi / (2 * math.atan(FL_Q))
    return (k1 + (k2 - k1) * (fz - f1) / (f2 - f1)) * math.tan(math.pi / 2 / FL_Q) / S


def fl_engine_power(m, s):
    """fastest-lap's engine power at point ``s`` [W]: P_max smooth_pos(throttle, 1e-2), its
    throttle the power at the rear wheels with their slip, f_xa v_3x (1 + kappa), over P_max,
    and minus the brake pedal when braking (its differential's viscous loss left out)."""
    import pyomo.environ as pyo
    from pyomo_lap.ocp.integrals import slip_ratio
    p = m.vehicle.built_for
    kappa = 0.5 * (slip_ratio(m, "21", s, fl_slip_at_peak) + slip_ratio(m, "22", s, fl_slip_at_peak))
    u = (m.f_xa[s] * m.v_3x[s] * (1 + kappa) / p.P_max
         + m.f_xb[s] * p.wheel_radius / (2 * FL_BRAKE_TORQUE))
    return p.P_max * 0.5 * (u + pyo.sqrt(u * u + FL_SMOOTH_THROTTLE))


def fl_engine_energy(m):
    """fastest-lap's engine energy over the lap [J] (:func:`fl_engine_power`), by the same
    quadrature as ``m.energy``."""
    from pyomo_lap.ocp.collocation import CollocationGrid
    return sum(w * fl_engine_power(m, s) / m.q1_dot[s]
               for s, w in CollocationGrid.from_model(m).quadrature().items())


def fastest_lap_energies(m) -> dict:
    """The engine's and the tyres' energies of a solved model by fastest-lap's definitions
    [J]: ``engine`` (:func:`fl_engine_energy`) and ``tyre_<t>`` with the longitudinal slip
    (``add_energy_integrals(m, slip_at_peak=fl_slip_at_peak)``, which replaces ``m.energy``:
    only for a model without limits)."""
    import pyomo.environ as pyo
    from pyomo_lap.ocp.integrals import add_energy_integrals, energy_summary
    out = {"engine_J": float(pyo.value(fl_engine_energy(m)))}
    if m.energy.component("limit_row") is None:
        add_energy_integrals(m, slip_at_peak=fl_slip_at_peak)
        out.update({k: v for k, v in energy_summary(m).items() if k.startswith("tyre_")})
    return out


def solve_fastest_lap_definitions(vehicle, element_length: float, what: str) -> dict:
    """The limited lap with fastest-lap's definitions, as ordinary Pyomo rows on a model built
    as ``solve_sector`` builds it: ``what = "engine"``, its engine energy
    (:func:`fl_engine_energy`) <= 24 MJ; ``"tyre"``, each tyre's energy with the longitudinal
    slip <= 0.8 MJ."""
    import pyomo.environ as pyo
    from pyomo_lap import build_model, initialize_model, load_track, solve_model
    from pyomo_lap.ocp.integrals import add_energy_integrals, energy_summary
    t0 = time.perf_counter()
    m = build_model(load_track("catalunya_fastest_lap"), vehicle, periodic=True,
                    element_length=element_length)
    if what == "engine":
        m.fl_engine_limit = pyo.Constraint(expr=fl_engine_energy(m) / ENGINE_LIMIT_J <= 1.0)
    else:
        add_energy_integrals(m, {"tyre_energy": TYRE_LIMIT_J}, slip_at_peak=fl_slip_at_peak)
    initialize_model(m)
    rep = solve_model(m)
    out = {"lap_s": float(pyo.value(m.lap_time)), "energy": energy_summary(m),
           "iterations": rep.iterations, "wall_s": time.perf_counter() - t0,
           "self_check": _self_check(m, rep, vehicle) if rep.ok else rep.termination_condition}
    out["fl"] = {"engine_J": float(pyo.value(fl_engine_energy(m)))}
    if what == "tyre":
        out["fl"].update({k: v for k, v in out["energy"].items() if k.startswith("tyre_")})
    return out


def _self_check(m, rep, vehicle) -> str:
    """The self-check every solve of the command line runs (:func:`pyomo_lap.verify.verdict.
    self_check`: defects, speed consistency, energy balance, power limit), on a model solved
    here with rows of our own (``rep``: its solve's report), with the summary of that solve
    (:func:`pyomo_lap.api.results.solve_summary`): its verdict."""
    from pyomo_lap import load_vehicle
    from pyomo_lap.results.table import trajectory_dataframe
    from pyomo_lap.verify.verdict import self_check
    p = load_vehicle(vehicle) if isinstance(vehicle, str) else vehicle
    return self_check(df, m.problem.vehicle_model, m.problem.track, p,
                      start=float(cfg.start or 0.0), ncp=cfg.ncp, scheme=cfg.scheme,
                      interpolation="state" if cfg.control_form == "state" else "auto")["verdict"]


def _energies(e: dict) -> str:
    return ", ".join(f"{k[:-2]} {v / 1e6:.3f}" for k, v in e.items() if k.endswith("_J")) + " MJ"


def _line(label: str, r: dict, echo=print) -> None:
    echo(f"{label}: lap {r['lap_s']:.3f} s, {r['iterations']} iterations, {r['wall_s']:.1f} s wall, "
         f"self-check {r['self_check']}")
    echo(f"  energies: {_energies(r['energy'])}")


def fastest_lap_own_engine_energy() -> float:
    """fastest-lap's engine energy on its own unlimited lap [J]: its saved solution's throttle
    (positive part) times P_max, trapezoidal in time over the closed lap."""
    import xml.etree.ElementTree as ET
    import numpy as np
    from fastest_lap import REFERENCE
    root = ET.parse(REFERENCE).getroot()
    t = np.array([float(x) for x in root.find("time").text.split(",")])
    thr = np.array([float(x) for x in root.find("control_variables/chassis.throttle/values").text.split(",")])
    lap = float(root.find("laptime").text)
    P = 735.499e3 * np.maximum(thr, 0.0)
    return float(np.trapezoid(np.r_[P, P[:1]], np.r_[t, lap]))


def _engine_checks(r, free, used, label) -> bool:
    rel = r["lap_s"] / FL_ENGINE_LIMITED_S - 1
    inc, fl_inc = r["lap_s"] - free["lap_s"], FL_ENGINE_LIMITED_S - FL_LAP_S
    return _report(label, [
        ("energy used", f"{used / 1e6:.6f} MJ", abs(used / ENGINE_LIMIT_J - 1) <= TARGETS["energy"],
         "24 MJ to 1e-3"),
        ("lap", f"{r['lap_s']:.3f} s vs fastest-lap {FL_ENGINE_LIMITED_S:.3f} s ({100 * rel:+.2f} %)",
         abs(rel) <= TARGETS["engine_lap"], "within 1.5 %"),
        ("increase", f"{inc:+.3f} s vs fastest-lap {fl_inc:+.3f} s ({100 * (inc / fl_inc - 1):+.1f} %)",
         abs(inc / fl_inc - 1) <= TARGETS["increase"], "within 20 %")])


def _tyre_checks(r, free, tyres: dict, label) -> bool:
    rel = r["lap_s"] / FL_TYRE_LIMITED_S - 1
    worst = max(tyres[f"tyre_{t}_J"] for t in ("fl", "fr", "rl", "rr"))
    return _report(label, [
        ("largest tyre energy", f"{worst / 1e6:.6f} MJ", worst <= TYRE_LIMIT_J * (1 + 1e-6), "<= 0.8 MJ"),
        ("lap", f"{r['lap_s']:.3f} s vs fastest-lap {FL_TYRE_LIMITED_S:.3f} s ({100 * rel:+.2f} %)",
         abs(rel) <= TARGETS["tyre_lap"], "within 3 %"),
        ("increase", f"{r['lap_s'] - free['lap_s']:+.3f} s vs fastest-lap "
         f"{FL_TYRE_LIMITED_S - FL_LAP_S:+.3f} s", True, "(reported)")])


def main(argv=None) -> int:
    """Solve the laps and print the comparison (module docstring); 0 if the targets are met
    with fastest-lap's definitions."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--element-length", type=float, default=10.0, help="element_length [m]")
    ap.add_argument("--only", choices=["engine", "tyre"], default=None,
                    help="only this limited lap (and the unlimited one)")
    args = ap.parse_args(argv)
    from pyomo_lap import load_vehicle
    car = load_vehicle("f1_2014").replace(tw1=0.0, tw2=0.0)   # fastest-lap: tyre centres
    h = args.element_length
    print(f"f1_2014 on catalunya_fastest_lap (tyre centres within the track, element_length "
          f"{h:g} m), each from the cold start")
    free = solve(car, h)
    _line("unlimited", free)
    print(f"  by fastest-lap's definitions: {_energies(free['fl'])}; fastest-lap's own lap "
          f"{FL_LAP_S:.3f} s: engine {fastest_lap_own_engine_energy() / 1e6:.3f} MJ")
    ok = True
    if args.only in (None, "engine"):
        r = solve(car, h, {"engine_energy": ENGINE_LIMIT_J})
        _line("engine energy (this model's: f_xa v_3x) <= 24 MJ", r)
        _engine_checks(r, free, r["energy"]["engine_J"], "this model's definition")
        r = solve_fastest_lap_definitions(car, h, "engine")
        _line("engine energy (fastest-lap's: P_max smooth_pos(throttle, 1e-2), wheel slip) <= 24 MJ", r)
        ok &= _engine_checks(r, free, r["fl"]["engine_J"], "fastest-lap's definition")
    if args.only in (None, "tyre"):
        r = solve(car, h, {"tyre_energy": TYRE_LIMIT_J})
        _line("each tyre's energy (this model's: lateral slip only) <= 0.8 MJ", r)
        _tyre_checks(r, free, r["energy"], "this model's definition")
        r = solve_fastest_lap_definitions(car, h, "tyre")
        _line("each tyre's energy (with fastest-lap's longitudinal slip) <= 0.8 MJ", r)
        ok &= _tyre_checks(r, free, r["fl"], "fastest-lap's definition")
    print(f"targets (fastest-lap's definitions) {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def _report(label, checks) -> bool:
    print(f"  {label}: {'targets met' if all(c[2] for c in checks) else 'targets NOT met'}")
    for name, text, good, target in checks:
        print(f"  {name:20s} {text}   target {target}: {'met' if good else 'NOT met'}")
    return all(good for _, _, good, _ in checks)


if __name__ == "__main__":
    sys.exit(main())
