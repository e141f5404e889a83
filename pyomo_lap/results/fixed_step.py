r"""The channels on a fixed distance step, computed at the rows from the collocation
polynomials.

The rows of :func:`pyomo_lap.results.table.trajectory_dataframe` are the solver's mesh: the
element boundaries and the collocation points of pyomo.dae's orthogonal collocation
(Lagrange-Radau or Lagrange-Legendre), 1-13 m apart. Data tools (MoTeC i2, AiM RaceStudio, a
spreadsheet) want rows on an equal step of distance. Between the mesh points the solution
is not a straight line: within each finite element :math:`[e_j, e_{j+1}]` it is the
polynomial the collocation solved for.

For the full model (a table that is its record's) every channel is **computed** at the rows
(:mod:`pyomo_lap.results.fixed_step_points`): the states and controls from their collocation
polynomials, the controls within their bounds and the rows' limits, the algebraic loop solved
from the record's equations there, every derived channel by the code that makes the mesh
rows'. For the other vehicle models the columns are **interpolated** by their kind
(:func:`column_kinds`, :func:`pyomo_lap.ocp.collocation.collocation_interpolate`):

* **states** (the model's differential variables, those with a derivative ``d<name>_ds``:
  ``q2..q6``, the rates, the time ``t``, and the controls when they are states,
  ``control_form = "state"``): the Lagrange polynomial through the element's start point
  :math:`e_j` and its collocation points (degree ``ncp``; for Radau these are all the
  element's points, the last one :math:`e_{j+1}`; for Legendre the end point is left out,
  its value is the polynomial's by the continuity equation);
* **algebraic variables** (model variables without a derivative: the loads, the contact
  forces, controls with ``control_form = "point"``): the Lagrange polynomial through the
  element's collocation points only (degree ``ncp - 1``; a constant for piecewise-constant
  controls), as pyomo.dae's ``reduce_collocation_points`` and
  :class:`pyomo_lap.verify.controls.CollocationControls` read them; such a variable may jump
  at an element boundary;
* **derived channels** of the car's equations: by the polynomial through all the element's
  points (start, collocation points and end; degree ``ncp`` for Radau);
* **channels of other channels** (:func:`derive_channels`): ``speed``, ``speed_kmh``, ``a_t``
  and the logger channels (:mod:`pyomo_lap.results.logger`: throttle, brake, gear, engine speed
  ...) are computed again on the rows from the interpolated channels, by the functions that
  make them on the mesh, never interpolated.

At a mesh point the value is the mesh's value, exactly. :func:`fixed_step_table` puts every
column of a trajectory table on the grid ``0, STEP, 2 STEP, ...`` of the sector coordinate
``s_sector``, ending at the sector's length ``L`` (a last, shorter step when ``STEP`` does not
divide ``L``), and checks that the time increases along it.

The track coordinate ``s`` (:func:`track_coordinate`) increases along a sector: on a closed
track a point lies in ``(0, L_track]`` once the sector has left its start, so a closed lap from
the start line ends at ``s = L_track``, never wraps to 0.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import time
from pathlib import Path
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from ..folders.results_folder import check_results_folder
from ..folders.writer import ResultsWriter
from ..ocp.build import RATE_NAMES, STATE_NAMES
from ..ocp.collocation import INTERPOLATION_KINDS, collocation_interpolate, snap_breaks
from ..ocp.transfer import mesh_components, mesh_nodes, model_states, state_names
from ..util.steps import check_step
from ..vehicle.car import ALGEBRAIC, CONTROLS, load_vehicle
from ..vehicle.schema import VehicleParameters, field_of
from .fixed_step_points import PointModel, computed_columns
from .logger import LOGGER_CHANNELS, add_logger_channels
from .solution_file import read_solution
from .summary import Summary, as_summary
from .table import (
    SOLUTION_FILE,
    _car_of,
    read_summary,
    read_trajectory,
    tangential_acceleration,
    track_coordinate,
    write_results,
)

__all__ = ["fixed_step_grid", "fixed_step_table", "track_coordinate", "fixed_step_lines",
           "column_kinds", "derive_channels", "folder_car", "EXPORT_FOLDER", "MESH_FILES"]

MESH_FILES = ("trajectory_mesh.csv", "trajectory_mesh.parquet")
"""The mesh rows of a results folder written on a fixed step (``solve --every``): the same
columns as ``trajectory.csv``, one row per point of the solver's mesh."""

EXPORT_FOLDER = "export_every_{step}m"
"""The folder of ``pyomo-lap export RUN --every STEP`` inside ``RUN`` (``{step}``: the step in
metres as ``%g``, ``export_every_1m``, ``export_every_0.5m``)."""



def fixed_step_grid(length: float, every: float) -> np.ndarray:
    """``0, every, 2 every, ..., length`` [m]: the multiples of ``every`` below ``length`` and
    ``length`` itself (a last, shorter step when ``every`` does not divide it; a multiple
    within 1e-9 of ``length`` is ``length``).

    Raises
    ------
    ValueError
        ``every`` not a finite number > 0, or above ``length``.
    """
    every, length = float(every), float(length)
    if not (math.isfinite(every) and every > 0):
        raise ValueError(f"every = {every!r} m: expected a finite step > 0 m")
    if every > length * (1 + 1e-12):
        raise ValueError(f"every = {every:g} m: expected at most the sector's length "
                         f"({length:g} m)")
    n = int(math.floor(length / every + 1e-9))
    grid = every * np.arange(n + 1, dtype=float)
    if length - grid[-1] <= 1e-9 * max(1.0, length):
        grid[-1] = length
    else:
        grid = np.append(grid, length)
    return grid






def _mesh_rows_at_mesh_points(table: pd.DataFrame, mesh: pd.DataFrame, grid, nodes) -> None:
    """The rows of ``table`` at a mesh point (within 1e-9 of the sector's length) take the mesh
    row's values, exactly (but their ``s_sector``, ``s``, ``q1``, ``element``: the grid's,
    made by the same formulas)."""
    tol = 1e-9 * max(1.0, float(abs(nodes[-1] - nodes[0])))
    i = np.clip(np.searchsorted(nodes, grid), 0, len(nodes) - 1)
    i = np.where((i > 0) & (np.abs(nodes[i - 1] - grid) < np.abs(nodes[i] - grid)), i - 1, i)
    hit = np.abs(nodes[i] - grid) <= tol
    for c in table.columns:
        if c in mesh.columns and c not in ("s_sector", "s", "q1", "element"):
            x = table[c].to_numpy().copy()
            x[hit] = mesh[c].to_numpy()[i[hit]]
            table[c] = x


def column_kinds(columns: Iterable[str], states: Iterable[str], variables: Iterable[str]) -> dict:
    """``{column: kind}`` for :func:`pyomo_lap.ocp.collocation.collocation_interpolate`: ``"state"`` for the model's
    differential variables ``states``, ``"algebraic"`` for its other variables ``variables``,
    ``"all"`` for every other (derived) channel."""
    states, variables = set(states), set(variables)
    return {c: "state" if c in states else "algebraic" if c in variables else "all"
            for c in columns}


DERIVED_CHANNELS = ("speed", "speed_kmh", "a_t") + LOGGER_CHANNELS
"""The channels :func:`derive_channels` computes again on the fixed-step rows."""


def derive_channels(table: pd.DataFrame, car=None) -> pd.DataFrame:
    r"""Compute again, in place, the columns of ``table`` among :data:`DERIVED_CHANNELS` from
    the table's other columns, by the functions that make them on the mesh: ``speed``
    :math:`= \sqrt{v_{3x}^2 + v_{3y}^2}` [m/s] and ``speed_kmh`` (as
    :func:`pyomo_lap.results.table.trajectory_dataframe`), ``a_t``
    (:func:`pyomo_lap.results.table.tangential_acceleration`) and the logger channels
    (:func:`pyomo_lap.results.logger.add_logger_channels` with ``car``). Only the columns the
    table has are written (no column is added); a channel whose inputs are missing, or that
    needs a car when ``car`` is None (throttle, brake, steering-wheel angle, gear, engine
    speed, the accelerations in g), keeps its value.

    Parameters
    ----------
    table : DataFrame
        Rows of channels (SI, the column names of :data:`pyomo_lap.results.channels.UNITS`).
    car : VehicleParameters, optional
        The car as solved.

    Returns
    -------
    DataFrame
        ``table``.
    """
    have = set(table.columns)
    if {"v_3x", "v_3y"} <= have and have & {"speed", "speed_kmh"}:
        speed = np.hypot(table["v_3x"].to_numpy(float), table["v_3y"].to_numpy(float))
        for c, x in (("speed", speed), ("speed_kmh", 3.6 * speed)):
            if c in have:
                table[c] = x
    if "a_t" in have and {"v_3x", "v_3y", "a_x", "a_y"} <= have:
        table["a_t"] = tangential_acceleration(table)
    inputs = [c for c in table.columns if c not in LOGGER_CHANNELS]
    logged = add_logger_channels(table[inputs].copy(), car)
    for c in LOGGER_CHANNELS:
        if c in have and c in logged.columns:
            table[c] = logged[c].to_numpy()
    return table


def fixed_step_table(df: pd.DataFrame, every: float, breaks, *, states: Iterable[str] = (),
                     variables: Iterable[str] = (), scheme: str = "LAGRANGE-RADAU",
                     start: Optional[float] = None,
                     track_length: Optional[float] = None, car=None,
                     points: Optional[PointModel] = None) -> pd.DataFrame:
    """The channels of a trajectory table every ``every`` metres of the sector.

    With ``points`` (the car's record, functions and track: :class:`PointModel`) every
    channel is computed at the rows (:func:`computed_columns`; at a mesh point the mesh row
    itself); without, every column is interpolated by its kind and the channels of
    :func:`derive_channels` computed again from those (a model whose table is not its
    record's: the single-track, multibody and racecar models).

    Parameters
    ----------
    df : DataFrame
        Mesh rows (:func:`pyomo_lap.results.table.trajectory_dataframe`, or a results folder's
        ``trajectory_mesh.parquet`` / mesh-row ``trajectory.parquet``): ``s_sector`` [m]
        increasing from 0, one row per mesh point.
    every : float
        The step [m], > 0, at most the sector's length.
    breaks : array_like (N+1,)
        The element boundaries [m] from the sector start (``summary.json``
        ``mesh.element_boundaries_m``, rounded there to 1e-6 m: each is snapped to its mesh
        point).
    states, variables : iterables of str
        The columns that are differential states of the model, and its other variables
        (:func:`column_kinds`); the rest are derived channels.
    scheme : str
        The collocation scheme (``summary.json`` ``scheme``).
    start : float, optional
        Track coordinate of the sector start [m] (default: the table's first ``s``).
    track_length : float, optional
        A closed track's length [m] (:func:`track_coordinate`); None for an open track.
    car : VehicleParameters, optional
        The car as solved, for the logger channels of :func:`derive_channels` (None: those
        that need a car are interpolated).
    points : PointModel, optional
        What computing the channels at the rows needs (:meth:`PointModel.from_model`,
        :meth:`PointModel.from_folder`).

    Returns
    -------
    DataFrame
        ``attrs["fixed_step"]`` says how it was made (:func:`computed_columns`' record, or
        ``{"method": "interpolated"}``). The same columns in the same order: ``s_sector`` on :func:`fixed_step_grid`, ``s`` (and
        ``q1``) its track coordinate, ``element`` the element holding each row (as in the mesh
        rows: 0 at the start, ``j`` in :math:`(e_{j-1}, e_j]`), the channels of
        :func:`derive_channels` computed again from the others, every other numeric column by
        :func:`pyomo_lap.ocp.collocation.collocation_interpolate` of its kind; other columns the value of the mesh point
        at or before the row.

    Raises
    ------
    ValueError
        A bad step, no ``s_sector`` column, mesh points that do not increase, element boundaries
        that are not mesh points, a time ``t`` that does not increase on the grid.
    """
    nodes = mesh_nodes(df)
    b = snap_breaks(nodes, breaks)
    grid = fixed_step_grid(b[-1] - b[0], every) + b[0]
    kinds = column_kinds(df.columns, states, variables)
    start = float(df["s"].iloc[0]) - nodes[0] if start is None and "s" in df.columns else (
        float(start or 0.0))
    s_track = track_coordinate(start, grid, track_length)
    cols = {}
    numeric = [c for c in df.columns if pd.api.types.is_float_dtype(df[c])
               and c not in ("s", "s_sector", "q1")]
    for kind in INTERPOLATION_KINDS:
        group = [c for c in numeric if kinds[c] == kind]
        if group:
            vals = collocation_interpolate(b, nodes, df[group].to_numpy(dtype=float), grid,
                                           kind=kind, scheme=scheme)
            cols.update({c: vals[:, i] for i, c in enumerate(group)})
    before = np.clip(np.searchsorted(nodes, grid + 1e-9, side="right") - 1, 0, len(nodes) - 1)
    out = {}
    for c in df.columns:
        if c == "s_sector":
            out[c] = grid
        elif c in ("s", "q1"):
            out[c] = s_track
        elif c == "element":
            out[c] = np.searchsorted(b, grid - 1e-9 * max(1.0, b[-1]), side="left").astype(np.int64)
        elif c in cols:
            out[c] = cols[c]
        else:
            out[c] = df[c].to_numpy()[before]
    return _finish(pd.DataFrame(out, columns=list(df.columns)), df, grid, b, scheme, every, car,
                   points)


def _finish(table: pd.DataFrame, df: pd.DataFrame, grid, b, scheme: str, every: float, car,
            points) -> pd.DataFrame:
    """The rows of :func:`fixed_step_table` from its interpolated ``table``: the channels
    computed at the rows (``points``) or derived again from the interpolated ones; the time
    checked to increase."""
    if points is None:
        table = derive_channels(table, car)
        table.attrs["fixed_step"] = {"method": "interpolated", "points": len(grid)}
    else:
        computed, info = computed_columns(df, grid, b, scheme, points)
        keep = [c for c in table.columns if c in computed]
        table[keep] = pd.DataFrame({c: computed[c] for c in keep}, index=table.index)
        _mesh_rows_at_mesh_points(table, df, grid, df["s_sector"].to_numpy(dtype=float))
        table.attrs["fixed_step"] = info
    if "t" in table.columns and not np.all(np.diff(table["t"].to_numpy(dtype=float)) > 0):
        k = int(np.argmin(np.diff(table["t"].to_numpy(dtype=float))))
        raise ValueError(f"the time interpolated on the {every:g} m step does not increase at "
                         f"s_sector = {grid[k]:g} m: the trajectory is not a solution "
                         "(a partial result?)")
    return table


def model_variable_names(m) -> tuple:
    """``(states, variables)`` of a built model: its states
    (:func:`pyomo_lap.ocp.transfer.model_states`) and its other variables indexed by the mesh
    ``m.s`` (the derivative variables left out)."""
    names = {c.local_name for c in mesh_components(m, descend_into=True)}
    states = model_states(m)
    return states, names - states - {f"d{n}_ds" for n in states}


def model_fixed_step(m, df: pd.DataFrame, every: float) -> pd.DataFrame:
    """:func:`fixed_step_table` of a solved model's mesh rows ``df``
    (:func:`pyomo_lap.results.table.trajectory_dataframe` of ``m``): the elements, scheme,
    states and track of the model; every channel computed at the rows
    (:meth:`pyomo_lap.results.fixed_step_points.PointModel.from_model`) for a model whose table
    is its record's (the full model), interpolated for the others (``attrs["fixed_step"]``
    says which)."""
    states, variables = model_variable_names(m)
    prob = m.problem
    track = getattr(prob, "track", None)
    closed = track is not None and bool(getattr(track, "closed", False))
    return fixed_step_table(df, every, list(m.s.get_finite_elements()), states=states,
                            variables=variables,
                            scheme=str(prob.options.scheme).upper(),
                            start=float(prob.options.start),
                            track_length=float(track.length) if closed else None,
                            car=_car_of(m), points=PointModel.from_model(m))


def fixed_step_lines(info: dict) -> list:
    """The console's lines about a table on a fixed step (its ``attrs["fixed_step"]``): the
    cost of rebuilding a folder's equations, the rows whose algebraic loop did not converge
    (their loads and tyre forces the polynomials'), or that the channels were interpolated."""
    out = []
    if info.get("rebuilt_s") is not None:
        out.append(f"  the car's equations and the track rebuilt from the folder in "
                   f"{info['rebuilt_s']:.1f} s (for the channels on the step)")
    if info.get("method") == "interpolated":
        out.append("  the channels on the step are interpolated (this vehicle model's table is "
                   "not its record's: docs/fixed_step.md)")
    failed = int(info.get("algebraic_loop_failed") or 0)
    if failed:
        at = ", ".join(f"{x:g}" for x in info.get("algebraic_loop_failed_at_m", [])[:5])
        out.append(f"  the algebraic loop did not converge at {failed} of {info['points']} "
                   f"rows on the step (s_sector = {at} m ...): their loads and tyre forces are "
                   "the collocation polynomials'")
    return out


def _wrap_length(df: pd.DataFrame, start: float) -> Optional[float]:
    """The length of a closed track [m] as mesh rows show it where their ``s`` wraps
    (``start + s_sector - s``), None if it never does."""
    if "s" not in df.columns:
        return None
    gap = start + df["s_sector"].to_numpy(float) - df["s"].to_numpy(float)
    big = gap[gap > 1e-6 * max(1.0, float(np.max(np.abs(gap))))]
    return float(np.median(big)) if big.size else None


def folder_car(run, summary: Summary):
    """The car a results folder was solved with, for :func:`derive_channels`: the vehicle file
    its ``summary.json`` names (``vehicle_file``, the same bytes: ``vehicle_file_sha256``) with
    the parameters as solved (``vehicle_parameters``: a free parameter at its optimum); for a
    car given as an object (no ``vehicle_file``), a car of the summary's parameters alone
    (without a power curve, engine or steering ratio, which the summary does not hold), None
    when they do not make one (the dymos racecar's).

    Raises
    ------
    ValueError
        The vehicle file is missing or its contents changed since the solve.
    """
    summary = as_summary(summary)
    params = dict(summary.vehicle_parameters or {})
    file = summary.vehicle_file
    where = Path(run) / "summary.json"
    if file:
        path = Path(file)
        if not path.is_file():
            raise ValueError(f"{where}: vehicle_file {path} does not exist: expected the vehicle "
                             "file the run was solved with (for the throttle, brake, gear ... "
                             "on the step)")
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        if summary.vehicle_file_sha256 not in (None, sha):
            raise ValueError(f"{where}: vehicle_file {path} has sha256 {sha}: expected "
                             f"{summary.vehicle_file_sha256}, the file the run was solved "
                             "with (it has changed since)")
        car = load_vehicle(path)
        return car.replace(params) if isinstance(car, VehicleParameters) and params else car
    try:
        return VehicleParameters(name=str(summary.vehicle or "car"),
                                 **{field_of(k): v for k, v in params.items()})
    except (ValueError, TypeError):
        return None


def folder_fixed_step(run, every: float) -> tuple:
    """The fixed-step table of a results folder, from its mesh rows
    (``read_trajectory(run, mesh=True)``), its ``summary.json`` (``scheme``,
    ``mesh.element_boundaries_m``, ``start_m``), its ``solution.npz`` (which columns are
    states and variables; without it, those of the full model with the summary's
    ``control_form``) and its car (:func:`folder_car`). For the full model every channel is
    computed at the rows, from the car, the track and the record of the equations rebuilt
    from the folder once (:meth:`pyomo_lap.results.fixed_step_points.PointModel.from_folder`;
    ``attrs["fixed_step"]["rebuilt_s"]`` its cost [s]).

    Returns
    -------
    (table DataFrame, mesh rows DataFrame, Summary)

    Raises
    ------
    ValueError
        No usable mesh in the summary, the vehicle or track file missing or changed
        (:func:`folder_car`, :func:`pyomo_lap.results.fixed_step_points.folder_track`), or
        :func:`fixed_step_table`'s errors.
    FileNotFoundError
        No trajectory or summary in ``run``.
    """
    run = Path(run)
    summary = read_summary(run)
    mesh = read_trajectory(run, mesh=True)
    breaks = (summary.mesh or {}).get("element_boundaries_m")
    if not breaks:
        raise ValueError(f"{run / 'summary.json'} has no mesh.element_boundaries_m: expected "
                         "the summary of a solved run")
    check_step(float(every), float(breaks[-1]) - float(breaks[0]), len(mesh) - 1,
               of=f"{run}'s mesh points")
    sol = run / SOLUTION_FILE
    if sol.is_file():
        d = read_solution(sol)      # the variables with a value at every mesh point
        states, variables = state_names(k for k in d if k != "s" and d[k].shape == d["s"].shape)
    else:
        form = (summary.ocp_options or {}).get("control_form", "point")
        states = set(STATE_NAMES + RATE_NAMES + ("t",)) | (set(CONTROLS) if form == "state" else set())
        variables = (set(CONTROLS) - states) | set(ALGEBRAIC)
    start = float(summary.start_m if summary.start_m is not None
                  else mesh["s"].iloc[0] if "s" in mesh.columns else 0.0)
    car = folder_car(run, summary)
    t0 = time.perf_counter()
    points = PointModel.from_folder(run, summary, mesh, car)
    rebuilt = time.perf_counter() - t0
    table = fixed_step_table(mesh, every, breaks, states=states, variables=variables,
                             scheme=str(summary.scheme).upper(),
                             start=start, track_length=_wrap_length(mesh, start),
                             car=car, points=points)
    if points is not None:
        table.attrs["fixed_step"]["rebuilt_s"] = rebuilt
    return table, mesh, summary


def export_fixed_step(run, every: float, out=None, echo=None, say=None):
    """``pyomo-lap export RUN --every STEP``: the results of ``run`` again, the channels every
    ``every`` metres (:func:`folder_fixed_step`), as a results folder of their own: the same
    files as ``solve --every`` writes (``trajectory.csv`` / ``.parquet`` and the workbook on
    the step, ``trajectory_mesh.*`` the mesh rows, ``summary.json``, ``solution.npz``),
    through :func:`pyomo_lap.results.table.write_results` (a manifest, an atomic swap, never
    through a link). The folder is checked and locked before the channels are computed
    (:class:`pyomo_lap.folders.writer.ResultsWriter`).

    Parameters
    ----------
    run : str or Path
        A complete results folder (:func:`pyomo_lap.folders.results_folder.check_results_folder`).
    every : float
        The step [m].
    out : str or Path, optional
        The folder to write; default ``run/export_every_<STEP>m`` (:data:`EXPORT_FOLDER`), a
        folder of its own listed in ``run``'s manifest (``folders``, ``by = "export"``:
        replaced with the rest by the next solve into ``run``), ``run`` locked meanwhile.
    echo : callable, optional
        Progress messages (one per file).
    say : callable, optional
        What the export says by default (:func:`fixed_step_lines`: the cost of rebuilding the
        folder's equations, rows whose algebraic loop did not converge); default ``echo``.

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    ValueError
        Not a complete results folder, a bad step, a folder that cannot be replaced
        (:func:`pyomo_lap.results.table.write_results`).
    FolderWriteError (an OSError)
        A file could not be written (a full disk): nothing was, the earlier folder is kept.
    """
    run = check_results_folder(run)
    with contextlib.ExitStack() as stack:
        if out is None:       # a folder of its own inside run, listed in run's manifest
            name = EXPORT_FOLDER.format(step=f"{float(every):g}")
            outer = stack.enter_context(ResultsWriter.adding(run, "export", names=[name],
                                                             echo=echo))
            writer = outer.nested(name)
        else:
            writer = ResultsWriter.replacing(out, "export", echo=echo)
        stack.enter_context(writer)               # checked and locked before the work
        solution = read_solution(run) if (Path(run) / SOLUTION_FILE).is_file() else None
        table, mesh, summary = folder_fixed_step(run, every)
        info = dict(table.attrs.get("fixed_step") or {})
        say = say or echo
        if say is not None:
            for line in fixed_step_lines(info):
                say(line)
        summary.trajectory_step_m = float(every)
        summary.exported_from = str(Path(run).resolve())
        summary.fixed_step = info
        return write_results(writer, table, summary, summary.vehicle_parameters,
                             n_sectors=len(summary.sectors or []) or 3, echo=echo,
                             solution=solution, mesh_df=mesh)
