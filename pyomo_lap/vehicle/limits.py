"""The names and values of the limits on a sector's integrals (issue 38): energies [J] and the
fuel used [kg], as ``--limit NAME=VALUE``, ``solve_sector(limits=...)`` and a car file's
``[limits]`` section give them.

The vocabulary lives here, below :mod:`pyomo_lap.ocp` (the vehicle schema reads a car file's
``[limits]`` with it); :mod:`pyomo_lap.ocp.integrals` builds the integrals and rows they name
(docs/energy.md).
"""
from __future__ import annotations

import math
import re

from .fuel import has_fuel

__all__ = ["TYRES", "ENERGY_NAMES", "LIMIT_NAMES", "ENERGY_UNITS", "MASS_UNITS", "LIMIT_OF",
           "parse_energy", "parse_mass", "parse_limits", "merge_limits", "limits_car_problems"]

TYRES = {"fl": "11", "fr": "12", "rl": "21", "rr": "22"}
"""The tyres' names in the energies -> the model's wheel ``ij`` (axle, side)."""

ENERGY_NAMES = ("traction", "engine", "braking", "drag") + tuple(f"tyre_{t}" for t in TYRES)
"""The energy integrals of ``m.energy`` [J] (:mod:`pyomo_lap.ocp.integrals`), in order."""

LIMIT_NAMES = {**{f"{n}_energy": (n,) for n in ENERGY_NAMES[:4]},
               **{f"tyre_energy_{t}": (f"tyre_{t}",) for t in TYRES},
               "tyre_energy": tuple(f"tyre_{t}" for t in TYRES),
               "fuel": ("fuel",)}
"""A limit's name (``--limit NAME=VALUE``) -> the integrals of ``m.energy`` it bounds
(``tyre_energy``: each of the four tyres; ``fuel``: the fuel used [kg], a car with
``[fuel]``)."""

LIMIT_OF = {integrals[0]: name for name, integrals in LIMIT_NAMES.items() if len(integrals) == 1}
"""An integral of ``m.energy`` -> the limit name that bounds it alone (``"tyre_fl"`` ->
``"tyre_energy_fl"``)."""

ENERGY_UNITS = {"J": 1.0, "kJ": 1e3, "MJ": 1e6, "Wh": 3600.0, "kWh": 3.6e6}
"""The units an energy limit's value may carry -> joules."""

MASS_UNITS = {"kg": 1.0, "g": 1e-3}
"""The units a mass limit's value (``fuel``) may carry -> kilograms."""


def _parse(text, units: dict, what: str, example: str) -> float:
    """A positive finite quantity in SI from a number (the first unit) or a text with a unit of
    ``units``; ValueError (one line) otherwise."""
    first = next(iter(units))
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), first
    else:
        match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*([A-Za-z]*)\s*", str(text))
        if match is None:
            raise ValueError(f"{text!r}: expected {what}, a number and a unit "
                             f"({', '.join(units)}), e.g. {example}")
        unit = match.group(2) or first
        if unit not in units:
            raise ValueError(f"{text!r}: unknown unit {unit!r}; expected one of "
                             f"{', '.join(units)} (a bare number is {first})")
        try:
            value = float(match.group(1)) * units[unit]
        except ValueError:
            raise ValueError(f"{text!r}: {match.group(1)!r} is not a number") from None
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{text!r}: expected a positive, finite {what.split()[-1]}")
    return value


def parse_energy(text) -> float:
    """An energy [J] from a number (J) or a text ``"24MJ"``, ``"0.8 MJ"``, ``"6.5kWh"``, ``"1e5"``
    (units :data:`ENERGY_UNITS`, case as written there).

    Raises
    ------
    ValueError
        Not a finite positive number, or a unit not in :data:`ENERGY_UNITS` (one line).
    """
    return _parse(text, ENERGY_UNITS, "an energy", "24MJ")


def parse_mass(text) -> float:
    """A mass [kg] from a number (kg) or a text ``"2.5kg"``, ``"800 g"`` (units
    :data:`MASS_UNITS`).

    Raises
    ------
    ValueError
        Not a finite positive number, or a unit not in :data:`MASS_UNITS` (one line).
    """
    return _parse(text, MASS_UNITS, "a mass", "2.5kg")


def parse_limits(x) -> dict:
    """Limits ``{name: value}`` (energies in J, ``fuel`` in kg) from ``{"engine_energy":
    "24MJ"}`` or a list of texts ``["engine_energy=24MJ", "fuel=2.5kg", ...]`` (the CLI's
    ``--limit``); None -> ``{}``.

    Raises
    ------
    ValueError
        A name not in :data:`LIMIT_NAMES` (the message lists them), a bad value or unit, a text
        without ``=``.
    """
    if x is None:
        return {}
    if isinstance(x, dict):
        items = list(x.items())
    else:
        items = []
        for text in ([x] if isinstance(x, str) else x):
            name, sep, value = str(text).partition("=")
            if not sep:
                raise ValueError(f"{text!r}: expected NAME=VALUE, e.g. engine_energy=24MJ")
            items.append((name, value))
    out = {}
    for name, value in items:
        name = str(name).strip()
        if name not in LIMIT_NAMES:
            raise ValueError(f"unknown limit {name!r}; known: {', '.join(LIMIT_NAMES)}")
        try:
            out[name] = parse_mass(value) if name == "fuel" else parse_energy(value)
        except ValueError as exc:
            raise ValueError(f"limit {name}: {exc}") from None
    return out


def limits_car_problems(car, limits, field: str = "[limits] fuel") -> list:
    """What a car cannot be held to among ``limits`` (parsed, ``{name: value}``), one text
    each, naming ``field``: a ``fuel`` limit on a car without ``[fuel]`` (its fuel used is not
    on the model)."""
    if limits and "fuel" in limits and not has_fuel(car):
        return [f"{field} = {limits['fuel']:g} kg: the car {getattr(car, 'name', '?')!r} "
                "has no [fuel] section (its fuel used is not on the model): expected a [fuel] "
                "section (docs/energy.md) or no fuel limit"]
    return []


def merge_limits(car_limits, given) -> dict:
    """The limits of a job: the car file's ``[limits]`` (``car_limits``) updated by the ones
    the job gives (``--limit``, ``limits=``): for a name in both, the job's value wins.

    Raises
    ------
    ValueError
        As :func:`parse_limits`.
    """
    return {**parse_limits(car_limits), **parse_limits(given)}
