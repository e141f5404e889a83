r"""A stint (issue 38): several laps of a closed circuit solved one after the other on ONE
model, the state carried over from lap to lap, the car lighter by the fuel it burned.

:func:`solve_stint` builds the closed lap once (:func:`pyomo_lap.ocp.build.build_model`,
``periodic=True``) and then, for lap :math:`k = 1 \dots N`:

* lap 1 is the flying lap of ``pyomo-lap solve --full-lap`` at the stint's starting mass
  (periodic: it ends in the state it starts in; cold start, as the CLI's);
* lap :math:`k \ge 2` starts in lap :math:`k-1`'s exit state: the periodic rows
  ``m.periodic`` are deactivated once and every state and rate they tie (the speed, lateral
  offset, heading, heave, pitch, roll and their rates; the controls when they are states) is
  fixed at ``s = 0`` to its value at the end of the lap before; the exit is free (the last
  lap ends as an open sector ends);
* a car with ``[fuel]`` (:mod:`pyomo_lap.vehicle.fuel`): lap :math:`k`'s mass is the
  starting mass ``[mass] total`` (which holds ``[fuel] mass_start``) less the fuel
  ``m.energy.fuel`` burned in laps :math:`1 \dots k-1`, put in with
  :func:`pyomo_lap.ocp.build.set_vehicle` (the inertias and the unsprung mass are kept; the
  fuel is taken from the sprung mass). A lap that burns more than is left:
  :class:`StintError` (``stint_limits={"fuel": mass_start}`` shares the tank instead);
* the solve is a warm re-solve of the same model (:func:`pyomo_lap.solvers.solve.solve_model`
  keeps IPOPT's multipliers: the previous lap's primal and dual point is the start), which is
  what makes a lap of a stint several times cheaper than the first.

Limits. ``limits`` (``--limit``; merged over the car file's ``[limits]``, the job's win) hold
**per lap**. ``stint_limits`` (``--stint-limit``) are budgets for the whole stint (a tyre
energy, the fuel, an engine energy: the names of :data:`pyomo_lap.vehicle.limits.LIMIT_NAMES`)
split over the laps by what is left: lap :math:`k` may use
:math:`(B - \sum_{j<k} E_j) / (N - k + 1)` of each integral the budget bounds (an equal split
when every lap uses its share; what a lap leaves is spread over the laps after it). With
both, the smaller holds.

Results in ``out_dir``: ``lap_01/`` ... (each a results folder of
:func:`pyomo_lap.results.table.write_results`: trajectory, workbook, summary with the lap's
``energy``), ``stint.csv`` and ``stint.xlsx`` (sheet ``stint``, one row per lap:
:data:`STINT_COLUMNS`), ``stint.json``. The folder is written whole
(:class:`pyomo_lap.folders.writer.ResultsWriter`, kind ``stint``: checked and locked before
the model is built, written aside lap by lap and swapped in at the end), so a 1-lap stint
into an earlier 5-lap stint's folder leaves no ``lap_02`` ... of the earlier one, and a
folder of the user's (``lap_02`` of theirs, an edited ``stint.csv``) is refused before the
first lap.
"""
from __future__ import annotations

import contextlib
import json
import math
import time
from typing import Callable, Optional

import pandas as pd
import pyomo.environ as pyo

from ..folders.writer import ResultsWriter
from ..ocp.build import build_model, set_vehicle
from ..ocp.initialize import initialize_model
from ..ocp.integrals import add_energy_limits, energy_summary
from ..results.summary import Summary
from ..results.table import trajectory_dataframe, write_results
from ..solvers.solve import DEFAULT_SOLVER, solve_model
from ..track.geometry import Track
from ..track.loading import load_track
from ..vehicle.car import load_vehicle
from ..vehicle.fuel import has_fuel
from ..vehicle.limits import LIMIT_NAMES, LIMIT_OF, merge_limits, parse_limits

__all__ = ["solve_stint", "StintError", "STINT_COLUMNS", "FUEL_TOL", "lap_limits", "carry_state",
           "stint_table"]

STINT_COLUMNS = {
    "lap": "-", "lap_time_s": "s", "mass_start_kg": "kg", "fuel_kg": "kg",
    "fuel_left_kg": "kg", "entry_speed_mps": "m/s", "exit_speed_mps": "m/s",
    "engine_J": "J", "traction_J": "J", "braking_J": "J", "drag_J": "J",
    "tyre_fl_J": "J", "tyre_fr_J": "J", "tyre_rl_J": "J", "tyre_rr_J": "J",
    "iterations": "-", "solve_time_s": "s", "warm_start": "-",
}
"""The stint table's columns and their units (one row per lap)."""


FUEL_TOL = 1e-4
"""A lap may burn this share of its fuel more than is left, dimensionless: room for the
solver's tolerance on a fuel budget's row (``--stint-limit fuel=`` the tank), which lets the
last lap end a hair past the budget (within 1e-6 of it in tests/test_stint_fuel.py)."""


class StintError(RuntimeError):
    """A stint that cannot go on: a lap not solved to optimality, or the fuel used up. The
    laps solved before are written; ``laps`` holds their rows."""

    def __init__(self, message: str, laps: Optional[list] = None):
        super().__init__(message)
        self.laps = laps or []


def lap_limits(per_lap: dict, stint: dict, used: dict, laps_left: int) -> dict:
    """The limits of the next lap ``{name: value}`` (J, kg; single-integral names
    ``tyre_energy_fl``, ``fuel``, ...): the per-lap ``limits`` and, for each stint budget,
    what is left of it over the laps left (module docstring), the smaller of the two.

    Parameters
    ----------
    per_lap, stint : dict
        Parsed limits (:func:`pyomo_lap.vehicle.limits.parse_limits`).
    used : dict
        ``{integral: value}`` used by the laps before (``"tyre_fl"``, ``"fuel"``, ...).
    laps_left : int
        This lap and the ones after it (>= 1).

    Raises
    ------
    StintError
        A budget used up before this lap.
    """
    out = {}
    for name, value in per_lap.items():
        for integral in LIMIT_NAMES[name]:
            key = LIMIT_OF[integral]
            out[key] = min(value, out.get(key, math.inf))
    for name, budget in stint.items():
        for integral in LIMIT_NAMES[name]:
            left = budget - used.get(integral, 0.0)
            if left <= 0.0:
                raise StintError(f"stint limit {name}: {integral} used up "
                                 f"({used.get(integral, 0.0):g} of {budget:g}) with "
                                 f"{laps_left} lap(s) to go")
            key = LIMIT_OF[integral]
            out[key] = min(left / laps_left, out.get(key, math.inf))
    return out


def carry_state(m) -> dict:
    """Lap to lap: deactivate ``m.periodic`` (once) and fix every variable it ties at
    ``s = 0`` to its value at the end of the lap; ``{name: value}`` fixed."""
    sigma = sorted(m.s)
    first, last = sigma[0], sigma[-1]
    out = {}
    for name in list(m.periodic.keys()):
        var = m.component(name)
        out[name] = float(var[last].value)
    m.periodic.deactivate()
    for name, value in out.items():
        m.component(name)[first].fix(value)
    return out


def _lap_row(m, k: int, mass: float, fuel_left, rep) -> dict:
    """One row of the stint table from the solved model."""
    sigma = sorted(m.s)
    e = energy_summary(m)
    row = {"lap": k, "lap_time_s": float(pyo.value(m.lap_time)), "mass_start_kg": mass,
           "fuel_kg": e.get("fuel_kg"), "fuel_left_kg": None,
           "entry_speed_mps": float(m.q1_dot[sigma[0]].value),
           "exit_speed_mps": float(m.q1_dot[sigma[-1]].value)}
    if fuel_left is not None and row["fuel_kg"] is not None:
        row["fuel_left_kg"] = fuel_left - row["fuel_kg"]
    for name in ("engine", "traction", "braking", "drag", "tyre_fl", "tyre_fr", "tyre_rl",
                 "tyre_rr"):
        row[f"{name}_J"] = e.get(f"{name}_J")
    row.update(iterations=rep.iterations, solve_time_s=round(rep.solve_time_s, 3),
               warm_start=str(getattr(rep, "warm_start", "") or ""))
    return row


def stint_table(rows: list):
    """The stint table (a DataFrame, :data:`STINT_COLUMNS`) of the laps' rows."""
    return pd.DataFrame(rows, columns=list(STINT_COLUMNS))


def _write_lap(writer: ResultsWriter, m, row: dict, car, track_name: str, rep,
               limits: dict) -> None:
    """The lap's results folder ``lap_NN`` inside the stint's, through its writer
    (:func:`pyomo_lap.results.table.write_results`)."""
    df = trajectory_dataframe(m)
    summary = Summary(track=track_name, vehicle=car.name, lap=row["lap"],
                      lap_time_s=row["lap_time_s"], periodic=row["lap"] == 1,
                      mass_start_kg=row["mass_start_kg"], solver=rep.solver,
                      iterations=rep.iterations, solve_time_s=rep.solve_time_s,
                      warm_start=row["warm_start"], limits=limits, energy=energy_summary(m))
    write_results(writer.nested(f"lap_{row['lap']:02d}"), df, summary, car)


def _write_stint(writer: Optional[ResultsWriter], rows: list, meta: dict,
                 commit: bool = False) -> None:
    """``stint.csv``, ``stint.xlsx`` (sheets ``stint``, ``units``) and ``stint.json``
    through the stint's writer (none: nothing written); ``commit``: the folder put in place
    now (a stint that stops, the laps before written)."""
    if writer is None:
        return
    table = stint_table(rows)

    def workbook(path):
        with pd.ExcelWriter(path, engine="xlsxwriter") as xw:
            table.to_excel(xw, sheet_name="stint", index=False)
            pd.DataFrame({"column": list(STINT_COLUMNS), "unit": list(STINT_COLUMNS.values())}
                         ).to_excel(xw, sheet_name="units", index=False)
    writer.write("stint.csv", lambda path: table.to_csv(path, index=False))
    writer.write("stint.xlsx", workbook)
    writer.write_text("stint.json", json.dumps({**meta, "laps": rows}, indent=1, default=str))
    if commit:
        writer.commit()


def _prepare(track, vehicle, ocp_options: Optional[dict], limits, stint_limits, laps: int):
    """The loaded track and car, the parsed limits and the built model (lap 1, periodic)."""
    if int(laps) < 1:
        raise ValueError(f"laps = {laps!r}: expected a whole number >= 1")
    tr = track if isinstance(track, Track) else load_track(track)
    if not tr.closed:
        raise ValueError(f"track {tr.name!r} is open: a stint needs a closed circuit")
    car = load_vehicle(vehicle) if not hasattr(vehicle, "fuel_mass") else vehicle
    per_lap = merge_limits(getattr(car, "limits", None), limits)
    stint = parse_limits(stint_limits)
    first = lap_limits(per_lap, stint, {}, int(laps))
    m = build_model(tr, car, **{**(ocp_options or {}), "start": 0.0, "length": None,
                                "periodic": True, "limits": first or None})
    return tr, car, per_lap, stint, m


def solve_stint(track="red_bull_ring", vehicle="fsae", laps: int = 5, *, limits=None,
                stint_limits=None, out_dir=None, solver: Optional[str] = None,
                solver_options: Optional[dict] = None, ocp_options: Optional[dict] = None,
                echo: Callable[[str], None] = print) -> dict:
    """Solve a stint of ``laps`` laps on one model (module docstring).

    Parameters
    ----------
    track : str, Path or Track
        A closed circuit (``pyomo-lap tracks``).
    vehicle : str, Path or VehicleParameters
        The car at the stint's start (``[fuel]`` for a mass that falls lap by lap).
    laps : int
        Number of laps, >= 1.
    limits : dict or list of str, optional
        Limits per lap (``{"tyre_energy": "150kJ"}``, ``["fuel=0.3kg"]``), over the car
        file's ``[limits]`` (the ones given here win).
    stint_limits : dict or list of str, optional
        Budgets for the whole stint, split over the laps by what is left.
    out_dir : str or Path, optional
        Where to write ``lap_NN/`` and the stint table; None: nothing written. Written whole
        (module docstring): checked and locked before the model is built.
    solver, solver_options : optional
        As :func:`pyomo_lap.solvers.solve.solve_model` (default ``lap_ipopt``).
    ocp_options : dict, optional
        Options of :data:`pyomo_lap.ocp.build.OCP_CONFIG` (``nfe``, ``ncp``, ``element_length``
        ...); the sector is the whole lap.
    echo : callable
        Progress lines.

    Returns
    -------
    dict
        ``laps`` (the rows, :data:`STINT_COLUMNS`), ``table`` (a DataFrame), ``model``,
        ``wall_s``, ``out_dir``.

    Raises
    ------
    ValueError
        An open track, ``laps`` < 1, a bad limit (named), a limit the car lacks (``fuel``
        without ``[fuel]``); ``out_dir`` holds something that is not a stint of pyomo_lap's
        (:class:`pyomo_lap.folders.links.FolderNotReplaceableError`, before anything is built).
    StintError
        A lap not solved to optimality, or the fuel or a stint budget used up (the laps
        before are written).
    FolderWriteError (an OSError)
        The folder could not be written (a full disk): the earlier one is as it was.
    """
    t0 = time.perf_counter()
    writer = (ResultsWriter.replacing(out_dir, "stint", kind="stint", echo=echo)
              if out_dir is not None else None)
    with writer if writer is not None else contextlib.nullcontext():   # before the first lap
        tr, car, per_lap, stint, m = _prepare(track, vehicle, ocp_options, limits, stint_limits,
                                              laps)
        echo(f"stint of {laps} laps: {car.name} on {tr.name} ({tr.length:.0f} m); model built "
             f"in {time.perf_counter() - t0:.1f} s, {len(m.s)} points")
        initialize_model(m)
        mass, fuel_left = float(car.m), (float(car.fuel_mass) if has_fuel(car) else None)
        used, rows = {}, []
        for k in range(1, int(laps) + 1):
            lim = lap_limits(per_lap, stint, used, int(laps) - k + 1)
            if lim:
                add_energy_limits(m, lim)
            rep = solve_model(m, solver=solver or DEFAULT_SOLVER, options=solver_options)
            if not rep.ok:
                if rows:
                    _write_stint(writer, rows, {"track": tr.name, "vehicle": car.name,
                                                "laps": laps}, commit=True)
                raise StintError(f"lap {k} of the stint: {rep.describe()}", rows)
            row = _lap_row(m, k, mass, fuel_left, rep)
            rows.append(row)
            echo(f"  lap {k}: {row['lap_time_s']:.3f} s, mass {mass:.2f} kg"
                 + (f", fuel {row['fuel_kg']:.3f} kg" if row["fuel_kg"] is not None else "")
                 + f", {rep.iterations} iterations, {rep.solve_time_s:.1f} s")
            if writer is not None:
                _write_lap(writer, m, row, car.replace(m=mass), tr.name, rep, lim)
            _add_used(used, energy_summary(m))
            if fuel_left is not None:
                _check_fuel(writer, rows, row, fuel_left, tr.name, car.name)
                fuel_left = row["fuel_left_kg"]
            if k == int(laps):
                break
            if fuel_left is not None:
                mass -= row["fuel_kg"]
                set_vehicle(m, car.replace(m=mass))
            carry_state(m) if m.periodic.active else _carry_again(m)
        result = {"laps": rows, "table": stint_table(rows), "model": m,
                  "out_dir": writer.folder if writer is not None else None,
                  "wall_s": time.perf_counter() - t0}
        _write_stint(writer, rows, {"track": tr.name, "vehicle": car.name, "n_laps": laps,
                                    "limits_per_lap": per_lap, "stint_limits": stint,
                                    "wall_s": result["wall_s"]})
    return result


def _add_used(used: dict, energy: dict) -> None:
    """Add a lap's energies and fuel (:func:`pyomo_lap.ocp.integrals.energy_summary`) to what
    the laps before used (``{integral: value}``: ``"tyre_fl"``, ``"fuel"`` ...)."""
    for name, value in energy.items():
        if name.endswith("_J") or name == "fuel_kg":
            key = name[:-2] if name.endswith("_J") else "fuel"
            used[key] = used.get(key, 0.0) + (value or 0.0)


def _check_fuel(writer: Optional[ResultsWriter], rows: list, row: dict, fuel_left: float,
                track: str, car: str) -> None:
    """StintError (the laps so far written) when lap ``row`` burned more than ``fuel_left``."""
    if row["fuel_kg"] <= fuel_left + FUEL_TOL * row["fuel_kg"]:
        return
    _write_stint(writer, rows, {"track": track, "vehicle": car, "out_of_fuel": row["lap"]},
                 commit=True)
    raise StintError(f"out of fuel in lap {row['lap']}: it burns {row['fuel_kg']:.3f} kg with "
                     f"{fuel_left:.3f} kg left ([fuel] mass_start; a budget --stint-limit "
                     "fuel=<mass_start>kg shares the tank over the laps)", rows)


def _carry_again(m) -> None:
    """Lap ``k >= 3``: the entry values (fixed) set to lap ``k - 1``'s exit."""
    sigma = sorted(m.s)
    for name in list(m.periodic.keys()):
        var = m.component(name)
        var[sigma[0]].fix(float(var[sigma[-1]].value))
