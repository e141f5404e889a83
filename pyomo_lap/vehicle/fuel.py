r"""The fuel an engine burns (issue 38): the ``[fuel]`` section of a car file and the fuel
mass flow at an engine power.

Two ways to give it (``[fuel]`` of the car file, docs/energy.md "Stints and fuel"):

* a brake thermal efficiency :math:`\eta_{th}` and the fuel's lower heating value
  :math:`LHV` (default :data:`DEFAULT_LHV`, petrol):
  :math:`\dot m_f = P_{engine} / (\eta_{th}\,LHV)`;
* a fuel-flow map, the mass flow [kg/s] at engine powers [W] (``map_power``, ``map_flow``):
  interpolated linearly between its points, extended by the end segments' slopes; its kinks
  rounded over :math:`\epsilon` = :data:`MAP_ROUNDING` times the map's smallest power step (a
  smooth function for IPOPT): at a distance :math:`x` from a point where the slope changes by
  :math:`\Delta k` it is above the polygon by
  :math:`\Delta k(\sqrt{x^2+\epsilon^2}-|x|)/2 \le \Delta k\,\epsilon^2/(4|x|)`, at the point
  by :math:`\Delta k\,\epsilon/2` (:math:`\Delta k > 0`: a convex map).

:func:`fuel_flow` takes a number, a NumPy array or a Pyomo expression of the engine power
(:mod:`pyomo_lap.ocp.integrals` integrates it: ``m.energy.fuel`` [kg]); the channel
``fuel_flow`` of a trajectory is the same function of its ``power_engine``.
"""
from __future__ import annotations

__all__ = ["DEFAULT_LHV", "MAP_ROUNDING", "has_fuel", "fuel_flow", "fuel_problems", "map_problems",
           "FUEL_FIELDS"]

DEFAULT_LHV = 43.0e6
"""Lower heating value of petrol [J/kg] (the default of ``[fuel] lower_heating_value``)."""

MAP_ROUNDING = 0.02
"""Width of the rounded kinks of a fuel-flow map, a share of its smallest power step [-]."""

FUEL_FIELDS = ("fuel_lhv", "fuel_efficiency", "fuel_map_power", "fuel_map_flow", "fuel_mass")
"""The :class:`~pyomo_lap.vehicle.schema.VehicleParameters` fields of ``[fuel]``."""


def has_fuel(car) -> bool:
    """Whether the car has a ``[fuel]`` section (its fuel mass at the start given)."""
    return getattr(car, "fuel_mass", None) is not None


def fuel_flow(car, power):
    r"""The fuel mass flow [kg/s] at the engine power ``power`` [W] (a number, an array or a
    Pyomo expression), for a car with ``[fuel]`` (module docstring).

    With a map of points :math:`(P_i, \dot m_i)`: :math:`\dot m_0 + k_0 (P - P_0) +
    \sum_{i \ge 1} (k_i - k_{i-1})\,h(P - P_i)`, :math:`k_i` the slope after point
    :math:`i`, :math:`h(x) = (x + \sqrt{x^2 + \epsilon^2})/2` a rounded :math:`\max(x, 0)`.

    Raises
    ------
    ValueError
        The car has no ``[fuel]``.
    """
    if not has_fuel(car):
        raise ValueError(f"vehicle {getattr(car, 'name', '?')!r} has no [fuel] section")
    if car.fuel_efficiency is not None:
        return power / (car.fuel_efficiency * (car.fuel_lhv or DEFAULT_LHV))
    P, F = [float(x) for x in car.fuel_map_power], [float(x) for x in car.fuel_map_flow]
    k = [(F[i + 1] - F[i]) / (P[i + 1] - P[i]) for i in range(len(P) - 1)]
    eps = MAP_ROUNDING * min(b - a for a, b in zip(P[:-1], P[1:]))
    out = F[0] + k[0] * (power - P[0])
    for i in range(1, len(P) - 1):
        x = power - P[i]
        out = out + (k[i] - k[i - 1]) * (x + (x * x + eps * eps) ** 0.5) / 2
    return out


def fuel_problems(car) -> list:
    """What is wrong with a car's ``[fuel]`` (one text each, naming ``[fuel] key``): the fuel
    mass at the start missing or not below the sprung mass; neither or both of the thermal
    efficiency and the map; a lower heating value without the efficiency."""
    given = [f for f in FUEL_FIELDS if getattr(car, f, None) is not None]
    if not given:
        return []
    out = []
    if car.fuel_mass is None:
        out.append("[fuel] mass_start: missing (the fuel mass at the stint's start [kg], part "
                   "of [mass] total)")
    elif car.fuel_mass >= car.m - car.m_u:
        out.append(f"[fuel] mass_start = {car.fuel_mass!r}: expected a mass below the sprung "
                   f"mass ([mass] total - unsprung = {car.m - car.m_u:g} kg): [mass] total "
                   "includes the fuel at the start")
    has_map = car.fuel_map_power is not None or car.fuel_map_flow is not None
    if (car.fuel_efficiency is None) == (not has_map):
        out.append("[fuel]: expected thermal_efficiency or the fuel-flow map (map_power and "
                   "map_flow), one of them" + (" (both given)" if has_map else ""))
    if car.fuel_lhv is not None and car.fuel_efficiency is None:
        out.append("[fuel] lower_heating_value: only with thermal_efficiency (a map gives the "
                   "flow itself)")
    return out


def map_problems(car) -> list:
    r"""What is wrong with a well-formed fuel-flow map as :func:`fuel_flow` evaluates it (one
    text, naming ``[fuel] map_power``): the map must give back its own points, within the
    rounding of its kinks (:math:`\sum|\Delta k|\,\epsilon/2`) and a millionth of its largest
    flow; a power step too small for floating point (``1e-300`` W) makes slopes so steep that
    their differences cancel to nothing (zero flow everywhere)."""
    if car.fuel_efficiency is not None or car.fuel_map_power is None:
        return []
    P, F = [float(x) for x in car.fuel_map_power], [float(x) for x in car.fuel_map_flow]
    if len(P) < 2:
        return []
    k = [(F[i + 1] - F[i]) / (P[i + 1] - P[i]) for i in range(len(P) - 1)]
    eps = MAP_ROUNDING * min(b - a for a, b in zip(P[:-1], P[1:]))
    tol = sum(abs(b - a) for a, b in zip(k[:-1], k[1:])) * eps / 2 + 1e-6 * max(map(abs, F))
    for p_i, f_i in zip(P, F):
        got = float(fuel_flow(car, p_i))
        if not abs(got - f_i) <= tol:
            step = min(b - a for a, b in zip(P[:-1], P[1:]))
            return [f"[fuel] map_power = {P!r}: the map gives {got:g} kg/s at {p_i:g} W, not its "
                    f"{f_i:g} kg/s (a power step of {step:g} W is too small to evaluate): "
                    "expected steps that floating point resolves against the map's powers"]
    return []
