r"""A stint (issue 38): several laps of a closed circuit solved one after the other on ONE
model, the state carried over from lap to lap, the car lighter by the fuel it burned. A stint
is a job (issue 45, item 7): its options are those of the full-lap job
(:func:`pyomo_lap.api.config.job_options`: ``solve_sector(track, vehicle, start=0,
length=None, periodic=True, ...)``), checked and loaded by that job's own steps, and each
lap's results go through the job's steps after a solve
(:func:`pyomo_lap.api.results.results_of_solve`: the summary, the channels, the self-check,
the files).

:func:`solve_stint` loads the track and the car as the job does
(:func:`pyomo_lap.api.job._check_job`, :func:`~pyomo_lap.api.job._load_inputs`), builds the
closed lap once (:func:`pyomo_lap.ocp.build.build_model`, ``periodic=True``, with the first
lap's limits), starts it as the job does (:func:`~pyomo_lap.api.job._initial_guess`) and then,
for lap :math:`k = 1 \dots N`:

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
  what makes a lap of a stint several times cheaper than the first;
* the solved lap goes through :func:`~pyomo_lap.api.results.results_of_solve` with a
  :class:`~pyomo_lap.api.state.Job` of its own (the stint's, with the lap's car, report and
  folder): the lap's ``summary.json`` is a solve's, with the stint's fields ``lap``,
  ``mass_start_kg``, ``periodic`` (lap 1 only), ``warm_start`` and ``limits``, and its
  ``self_check`` (:func:`pyomo_lap.verify.verdict.self_check`), whose verdict ends the lap's
  line and fills the table's ``self_check`` column (``PASS``, ``WARN``, ``FAIL``).

Limits. ``limits`` (``--limit``; merged over the car file's ``[limits]``, the job's win) hold
**per lap**. ``stint_limits`` (``--stint-limit``) are budgets for the whole stint (a tyre
energy, the fuel, an engine energy: the names of :data:`pyomo_lap.vehicle.limits.LIMIT_NAMES`)
split over the laps by what is left: lap :math:`k` may use
:math:`(B - \sum_{j<k} E_j) / (N - k + 1)` of each integral the budget bounds (an equal split
when every lap uses its share; what a lap leaves is spread over the laps after it). With
both, the smaller holds.

Results in ``out_dir``: ``lap_01/`` ... (each a results folder as ``pyomo-lap solve`` writes
one, :func:`pyomo_lap.results.table.write_results`: ``trajectory.csv``, ``.parquet``,
``results.xlsx``, ``corners.csv``, ``summary.json`` with the self-check, ``solution.npz``),
``stint.csv`` and ``stint.xlsx`` (sheet ``stint``, one row per lap: :data:`STINT_COLUMNS`),
``stint.json``. The folder is written whole
(:class:`pyomo_lap.folders.writer.ResultsWriter`, kind ``stint``: checked and locked before
the model is built, written aside lap by lap and swapped in at the end), so a 1-lap stint
into an earlier 5-lap stint's folder leaves no ``lap_02`` ... of the earlier one, and a
folder of the user's (``lap_02`` of theirs, an edited ``stint.csv``) is refused before the
first lap.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from typing import Callable, Optional

import pandas as pd
import pyomo.environ as pyo

from ..folders.writer import ResultsWriter
from ..ocp.build import build_model, set_vehicle
from ..ocp.integrals import add_energy_limits, energy_summary
from ..ocp.options import CLI_OWNED
from ..solvers.solve import DEFAULT_SOLVER, solve_model
from ..vehicle.fuel import has_fuel
from ..vehicle.limits import LIMIT_NAMES, LIMIT_OF, merge_limits, parse_limits
from ..verify.verdict import self_check_text
from .config import job_options
from .job import _check_job, _initial_guess, _load_inputs
from .results import results_of_solve
from .state import Job

__all__ = ["solve_stint", "StintError", "STINT_COLUMNS", "FUEL_TOL", "lap_limits", "carry_state",
           "stint_table"]

STINT_COLUMNS = {
    "lap": "-", "lap_time_s": "s", "mass_start_kg": "kg", "fuel_kg": "kg",
    "fuel_left_kg": "kg", "entry_speed_mps": "m/s", "exit_speed_mps": "m/s",
    "engine_J": "J", "traction_J": "J", "braking_J": "J", "drag_J": "J",
    "tyre_fl_J": "J", "tyre_fr_J": "J", "tyre_rl_J": "J", "tyre_rr_J": "J",
    "iterations": "-", "solve_time_s": "s", "warm_start": "-", "self_check": "-",
}
"""The stint table's columns and their units (one row per lap); ``self_check`` is the
verdict of the lap's self-check in capitals (``PASS``, ``WARN``, ``FAIL``; ``NOT RUN`` for a
vehicle model without dynamics), as the lap's line ends."""


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
    """One row of the stint table from the solved model (the self-check's column set after
    the lap's results are made)."""
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


def _lap_results(job: Job, row: dict, rep, car, limits: dict,
                 writer: Optional[ResultsWriter]) -> Job:
    """Lap ``row["lap"]``'s results by the job's steps after a solve
    (:func:`pyomo_lap.api.results.results_of_solve`: summary, channels, self-check, and the
    files into ``lap_NN`` of the stint's folder, ``writer.nested``; none without a writer),
    with the stint's own fields in the summary. Returns the lap's Job (``summary``,
    ``self_check``, ``df`` ...): the stint's ``job`` with the lap's car (``car``: the mass at
    its start), report and folder; its lines go to ``job.echo.detail`` (``-v``) only."""
    k = row["lap"]
    lap = dataclasses.replace(
        job, p=car, rep=rep, used_options=job.solver_options,
        init_s=job.init_s if k == 1 else None,
        echo=getattr(job.echo, "detail", None) or (lambda *_: None),
        writer=None if writer is None else writer.nested(f"lap_{k:02d}"))
    results_of_solve(lap, own={"lap": k, "mass_start_kg": row["mass_start_kg"],
                               "periodic": k == 1, "warm_start": row["warm_start"],
                               "limits": limits})
    row["self_check"] = (lap.self_check or {}).get("verdict", "not run").upper()
    return lap


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
    writer.write_csv("stint.csv", table)
    writer.write("stint.xlsx", workbook)
    writer.write_text("stint.json", json.dumps({**meta, "laps": rows}, indent=1, default=str))
    if commit:
        writer.commit()


def _stint_job(track, vehicle, laps: int, limits, stint_limits, solver: Optional[str],
               solver_options: Optional[dict], ocp_options: Optional[dict],
               echo: Callable[[str], None]) -> Job:
    """The stint's :class:`~pyomo_lap.api.state.Job` (before anything is loaded, built or
    written): the options of the full-lap job
    (:func:`pyomo_lap.api.config.job_options` with ``start=0``, ``length=None``,
    ``periodic=True``, the mesh options of ``ocp_options`` at the job's top level as
    ``solve_sector`` takes them, the others as its ``ocp_options``; nothing written by the job
    itself), checked by the job's own step (:func:`pyomo_lap.api.job._check_job`); nothing
    loaded or built.

    Raises
    ------
    ValueError
        ``laps`` < 1; ``start``, ``length``, ``periodic`` or ``limits`` in ``ocp_options`` (a
        stint's sector is the closed lap; its limits are ``limits`` and ``stint_limits``);
        a bad limit of ``limits`` or ``stint_limits``
        (:func:`pyomo_lap.vehicle.limits.parse_limits`); an option the job refuses (named).
    """
    if int(laps) < 1:
        raise ValueError(f"laps = {laps!r}: expected a whole number >= 1")
    parse_limits(limits)
    parse_limits(stint_limits)            # a bad limit said before anything is loaded
    opts = dict(ocp_options or {})
    fixed = sorted(set(opts) & {"start", "length", "periodic", "limits"})
    if fixed:
        raise ValueError(f"ocp_options {', '.join(fixed)}: a stint's sector is the whole closed "
                         "lap, its limits are limits= and stint_limits=")
    own = {k: opts.pop(k) for k in list(opts) if k in CLI_OWNED}
    cfg = job_options(track=track, vehicle=vehicle, solver=solver or DEFAULT_SOLVER,
                      solver_options=solver_options, ocp_options=opts or None, start=0.0,
                      length=None, periodic=True, limits=limits or None, out_dir=None, **own)
    job = Job(cfg=cfg, echo=echo)
    _check_job(job)
    return job


def _prepare(job: Job, limits, stint_limits, laps: int):
    """The track and the car loaded and checked by the job's step
    (:func:`pyomo_lap.api.job._load_inputs`: the sector, the car fits, the solver, the
    corners), the parsed limits, and the model built (lap 1, periodic, with its limits) into
    ``job.m``. Returns ``(per_lap, stint)``, the parsed limits.

    Raises
    ------
    ValueError
        An open track, a bad limit (named), a limit the car lacks.
    """
    _load_inputs(job)
    tr, car, cfg = job.tr, job.p, job.cfg
    if not tr.closed:
        raise ValueError(f"track {tr.name!r} is open: a stint needs a closed circuit")
    per_lap = merge_limits(getattr(car, "limits", None), limits)
    stint = parse_limits(stint_limits)
    first = lap_limits(per_lap, stint, {}, int(laps))
    job.m = build_model(tr, car, **{**job.ocp_options, "nfe": cfg.nfe, "ncp": cfg.ncp,
                                    "scheme": cfg.scheme, "initial_speed": cfg.initial_speed,
                                    "model": job.model, "start": 0.0, "length": None,
                                    "periodic": True, "limits": first or None})
    return per_lap, stint


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
        Where to write ``lap_NN/`` (each a results folder of a solve) and the stint table;
        None: nothing written. Written whole (module docstring): checked and locked before
        the model is built.
    solver, solver_options : optional
        As :func:`pyomo_lap.solvers.solve.solve_model` (default ``lap_ipopt``).
    ocp_options : dict, optional
        Options of :data:`pyomo_lap.ocp.build.OCP_CONFIG` (``nfe``, ``ncp``, ``element_length``
        ...); the sector is the whole lap.
    echo : callable
        Progress lines: one per lap, ending with the lap's self-check (``echo.detail``, when
        it has one, also gets the job's lines of each lap's results).

    Returns
    -------
    dict
        ``laps`` (the rows, :data:`STINT_COLUMNS`), ``table`` (a DataFrame), ``model``,
        ``self_checks`` (each lap's self-check, ``summary.json``'s ``self_check``: its
        ``verdict`` and ``checks``), ``wall_s``, ``out_dir``.

    Raises
    ------
    ValueError
        An open track, ``laps`` < 1, a bad option or limit (named), a limit the car lacks
        (``fuel`` without ``[fuel]``); ``out_dir`` holds something that is not a stint of
        pyomo_lap's (:class:`pyomo_lap.folders.links.FolderNotReplaceableError`, before
        anything is built).
    StintError
        A lap not solved to optimality, or the fuel or a stint budget used up (the laps
        before are written).
    FolderWriteError (an OSError)
        The folder could not be written (a full disk): the earlier one is as it was.
    """
    t0 = time.perf_counter()
    job = _stint_job(track, vehicle, laps, limits, stint_limits, solver, solver_options,
                     ocp_options, echo)
    writer = (ResultsWriter.replacing(out_dir, "stint", kind="stint", echo=echo)
              if out_dir is not None else None)
    with writer if writer is not None else contextlib.nullcontext():   # before the first lap
        per_lap, stint = _prepare(job, limits, stint_limits, laps)
        tr, car, m = job.tr, job.p, job.m
        echo(f"stint of {laps} laps: {car.name} on {tr.name} ({tr.length:.0f} m); model built "
             f"in {time.perf_counter() - t0:.1f} s, {len(m.s)} points")
        _initial_guess(job)
        rows, checks = _run_laps(job, writer, per_lap, stint, int(laps))
        result = {"laps": rows, "table": stint_table(rows), "model": m, "self_checks": checks,
                  "out_dir": writer.folder if writer is not None else None,
                  "wall_s": time.perf_counter() - t0}
        _write_stint(writer, rows, {"track": tr.name, "vehicle": car.name, "n_laps": laps,
                                    "limits_per_lap": per_lap, "stint_limits": stint,
                                    "wall_s": result["wall_s"]})
    return result


def _run_laps(job: Job, writer: Optional[ResultsWriter], per_lap: dict, stint: dict,
              laps: int) -> tuple:
    """The laps on ``job.m``, started (module docstring): each solved, its row and results
    (:func:`_lap_results`), the fuel and budgets carried on; ``(rows, self_checks)``.

    Raises
    ------
    StintError
        A lap not solved to optimality, the fuel or a budget used up (the rows so far
        written, the folder committed).
    """
    m, car, echo = job.m, job.p, job.echo
    mass, fuel_left = float(car.m), (float(car.fuel_mass) if has_fuel(car) else None)
    used, rows, checks = {}, [], []
    for k in range(1, laps + 1):
        lim = lap_limits(per_lap, stint, used, laps - k + 1)
        if lim:
            add_energy_limits(m, lim)
        rep = solve_model(m, solver=job.cfg.solver, options=job.solver_options)
        if not rep.ok:
            if rows:
                _write_stint(writer, rows, {"track": job.tr.name, "vehicle": car.name,
                                            "laps": laps}, commit=True)
            raise StintError(f"lap {k} of the stint: {rep.describe()}", rows)
        row = _lap_row(m, k, mass, fuel_left, rep)
        lap = _lap_results(job, row, rep, car.replace(m=mass), lim, writer)
        rows.append(row)
        checks.append(lap.self_check)
        echo(f"  lap {k}: {row['lap_time_s']:.3f} s, mass {mass:.2f} kg"
             + (f", fuel {row['fuel_kg']:.3f} kg" if row["fuel_kg"] is not None else "")
             + f", {rep.iterations} iterations, {rep.solve_time_s:.1f} s"
             + (f"; {self_check_text(lap.self_check)}" if lap.self_check else ""))
        _add_used(used, energy_summary(m))
        if fuel_left is not None:
            _check_fuel(writer, rows, row, fuel_left, job.tr.name, car.name)
            fuel_left = row["fuel_left_kg"]
        if k == laps:
            break
        if fuel_left is not None:
            mass -= row["fuel_kg"]
            set_vehicle(m, car.replace(m=mass))
        carry_state(m) if m.periodic.active else _carry_again(m)
    return rows, checks


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
