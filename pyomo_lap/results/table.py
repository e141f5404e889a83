"""Results of a solved model: a pandas DataFrame of channels and the export to
``trajectory.csv``, ``trajectory.parquet``, ``results.xlsx`` (sheets ``summary``, ``channels``,
``sectors``, ``vehicle``, ``track``) and ``summary.json``.

Channels are recomputed from the solved variables through the model's one record of its
equations (the channel group of its recorded rows, :class:`pyomo_lap.ocp.point_rows.PointRows`,
with the car's parameters at the values of ``m.vehicle``), never by ``pyomo.value`` of the
nested named expressions (which Pyomo would evaluate without sharing them): the record's
CasADi function is evaluated over all the points at once
(:func:`pyomo_lap.ocp.point_functions.record_channels`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyomo.environ as pyo
from pyomo.common.dependencies import attempt_import

from .. import __version__

# re-exported: the folder names of this module before the split
from ..folders.results_folder import (
    MANIFEST,
    SOLUTION_FILE,
    FolderNotReplaceableError,
    OutputBusyError,
    OutputLock,
    check_output_dir,
    check_results_folder,
    output_lock,
    read_manifest,
)
from ..folders.writer import ResultsWriter
from ..ocp.common import vehicle_of_model
from ..ocp.record_model import SPINE_RELATIVE, record_columns  # noqa: F401  (re-exported)
from ..ocp.sector import track_coordinate  # noqa: F401  (re-exported)
from ..solvers.lap.solver import LAP_IPOPT_OPTIONS
from ..solvers.solve import DEFAULT_IPOPT_OPTIONS
from ..util.suffixes import forget_multipliers
from . import channels as _channels
from .corners import records_table
from .export import (
    _SUMMARY_GROUPS,
    _TRACK_DATA_KEYS,
    WORKBOOK_UNITS_NOTE,
    _json_default,
    _lists_sheet,
    _long_lists,
    _provenance_sheet,
    _sheet,
    _speed_chart,
    _unit_of,
    _without_long_lists,
    _write_csv,
    _write_parquet,
    _write_rows,
    quality_table,
    sensitivity_sheet,
    summary_rows,
    vehicle_sheet,
)
from .point_table import add_derived_channels, tangential_acceleration  # noqa: F401
from .solution_file import read_solution
from .summary import SUMMARY_FORMAT, Summary, as_summary

pa, pa_available = attempt_import("pyarrow")

__all__ = ["trajectory_dataframe", "UNITS", "write_results", "read_trajectory", "check_output_dir",
           "sector_times", "TRACK_COLUMNS", "read_summary", "read_sensitivities",
           "solution_arrays", "load_solution", "SOLUTION_FILE", "MANIFEST", "read_manifest",
           "check_results_folder", "output_lock", "OutputLock",
           "OutputBusyError", "FolderNotReplaceableError", "effective_solver_options",
           "track_coordinate", "record_columns", "SPINE_RELATIVE",
           "add_derived_channels"]

# the unit of every channel lives with its meaning in the channel dictionary (one table;
# pyomo_lap.results.channels imports nothing from here, so the workbook can use it)
UNITS = _channels.UNITS
"""Unit of every channel of :func:`trajectory_dataframe` (the same object as
:data:`pyomo_lap.results.channels.UNITS`, where the units are declared with the meanings)."""


def trajectory_dataframe(m, progress=None) -> pd.DataFrame:
    """One row per collocation point of a solved model: the model's channel table
    (``VehicleModel.trajectory``, in one call: :func:`pyomo_lap.ocp.record_model.record_table`
    for the families whose rows are recorded) with the columns derived from its own columns
    (:func:`pyomo_lap.results.point_table.add_derived_channels`), in the order of :data:`UNITS`.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        From :func:`pyomo_lap.ocp.build.build_model`, with a solution loaded.
    progress : callable, optional
        ``progress(label, done, total)``, called before (``done = 0``) and after the
        evaluation of all points at once (see :mod:`pyomo_lap.util.progress`).

    Returns
    -------
    pandas.DataFrame
        Columns listed in :data:`UNITS`: track coordinate ``s`` (and ``s_sector`` from the
        sector start), time, ``q1..q6`` and rates, joint accelerations, controls, the seven
        algebraic variables, speeds, accelerations of O3 in {B3} without gravity (``a_x``,
        ``a_y``, ``a_z``), slip angles, tyre forces, W3J, aero forces, power, the global
        position of the vehicle invariant point and of the spine, track data, and the
        quasi-steady point-mass estimate of the initial guess (``v_point_mass``,
        ``t_point_mass``, :func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`) as a reference
        for time-delta plots.

    Raises
    ------
    ValueError
        A model whose vehicle model has no table (``trajectory`` None), or a variable without
        a value.
    """
    vm = m.problem.vehicle_model
    if vm.trajectory is None:
        raise ValueError(f"model {vm.name!r}: its VehicleModel has no channel table (trajectory)")
    n = len(m.s)
    if progress is not None:
        progress("evaluating the channels", 0, n)
    df = vm.trajectory(m)
    add_derived_channels(df, _car_of(m))     # a_t, the logger channels, the energies' powers
    if progress is not None:
        progress("evaluating the channels", n, n)
    cols = [c for c in UNITS if c in df.columns] + [c for c in df.columns if c not in UNITS]
    return df[cols]




def _car_of(m):
    """The car as solved (:func:`pyomo_lap.ocp.common.vehicle_of_model`), or the problem's car
    for a model without the ``m.vehicle`` variables of the six-joint car's schema."""
    try:
        return vehicle_of_model(m)
    except (AttributeError, ValueError, TypeError):
        return m.vehicle.built_for


TRACK_COLUMNS = ("s", "x_spine", "y_spine", "z_spine", "width_left", "width_right",
                 "Omega_x", "Omega_y", "Omega_z")
"""Channels that describe the track itself (sheet ``track`` of ``results.xlsx``)."""


def sector_times(df: pd.DataFrame, n_sectors: int = 3, boundaries=None) -> pd.DataFrame:
    """Split the sector into ``n_sectors`` parts of equal length (or at ``boundaries``) and time
    each one.

    The time at each boundary is interpolated linearly in ``s`` between the collocation
    points (the time state ``t`` is continuous).

    Parameters
    ----------
    df : DataFrame
        From :func:`trajectory_dataframe` (columns ``s``, ``s_sector``, ``t``).
    n_sectors : int
        Number of sectors (>= 1).
    boundaries : dict, optional
        Sector starts of a sector file (:func:`pyomo_lap.track.corners.read_sector_file`):
        ``{"s_start_m": [...], "track_length_m": L, "closed": bool}``; those inside the solved
        stretch split it (``n_sectors`` is then not used).

    Returns
    -------
    DataFrame
        One row per sector: ``sector``, ``s_start [m]``, ``s_end [m]`` (track coordinate),
        ``length [m]``, ``t_start [s]``, ``time [s]``, ``mean_speed [km/h]``.

    Raises
    ------
    ValueError
        ``n_sectors`` < 1.
    """
    if int(n_sectors) != n_sectors or n_sectors < 1:
        raise ValueError(f"n_sectors = {n_sectors!r}: expected an integer >= 1")
    s = df["s_sector"].to_numpy(dtype=float)
    t = df["t"].to_numpy(dtype=float)
    s0 = float(df["s"].iloc[0]) - float(s[0])
    edges = (np.linspace(s[0], s[-1], int(n_sectors) + 1) if not boundaries
             else _edges_at(s, s0, boundaries))
    t_edges = np.interp(edges, s, t)
    rows = []
    for k in range(len(edges) - 1):
        length = edges[k + 1] - edges[k]
        dt = t_edges[k + 1] - t_edges[k]
        rows.append({"sector": k + 1, "s_start [m]": s0 + edges[k], "s_end [m]": s0 + edges[k + 1],
                     "length [m]": length, "t_start [s]": t_edges[k], "time [s]": dt,
                     "mean_speed [km/h]": 3.6 * length / dt if dt > 0 else float("nan")})
    return pd.DataFrame(rows)


def _edges_at(s: np.ndarray, s0: float, boundaries: dict) -> np.ndarray:
    """Sector coordinates of the solved stretch's ends and of the sector starts inside it."""
    L, closed = float(boundaries["track_length_m"]), bool(boundaries["closed"])
    x = np.asarray(boundaries["s_start_m"], float) - s0
    x = np.mod(x, L) if closed else x
    inner = np.sort(x[(x > s[0] + 1e-6) & (x < s[-1] - 1e-6)])
    return np.concatenate([[s[0]], inner, [s[-1]]])


def sector_records(sectors: pd.DataFrame) -> list:
    """:func:`sector_times` as a JSON-ready list of dicts (``sector``, ``s_start_m``,
    ``s_end_m``, ``time_s``)."""
    return [{"sector": int(r["sector"]), "s_start_m": float(r["s_start [m]"]),
             "s_end_m": float(r["s_end [m]"]), "time_s": float(r["time [s]"])}
            for _, r in sectors.iterrows()]


def _with_units(df: pd.DataFrame) -> pd.DataFrame:
    return df.rename(columns={c: f"{c} [{UNITS[c]}]" for c in df.columns if c in UNITS})


def read_trajectory(path, mesh: bool = False) -> pd.DataFrame:
    """Read the channels back, with plain column names (units stripped).

    Parameters
    ----------
    path : str or Path
        A ``trajectory.csv``, a ``trajectory.parquet`` or a results folder (its parquet file
        if present, else its CSV file).
    mesh : bool
        For a folder: its rows on the solver's mesh (one per collocation point): those of
        ``trajectory_mesh.parquet`` (or ``.csv``) in a folder written on a fixed step
        (``solve --every``), else its trajectory (mesh rows already).

    Raises
    ------
    FileNotFoundError
        No such file, or a folder without a trajectory file.
    """
    path = Path(path)
    if path.is_dir():
        names = ("trajectory.parquet", "trajectory.csv")
        for name in (("trajectory_mesh.parquet", "trajectory_mesh.csv") if mesh else ()) + names:
            if (path / name).exists():
                path = path / name
                break
        else:
            raise FileNotFoundError(f"{str(path)!r} holds no trajectory.parquet or trajectory.csv: "
                                    "is it a pyomo_lap results folder?")
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return df.rename(columns={c: c.split(" [")[0] for c in df.columns})


def read_summary(path) -> Summary:
    """The ``summary.json`` of a results folder (``path`` is the folder or the file), typed:
    :meth:`pyomo_lap.results.summary.Summary.read` (a file of any version; FileNotFoundError
    when there is none, ValueError when it is no JSON object)."""
    return Summary.read(path)


def solution_arrays(m) -> dict:
    """The values of every variable of a model, for :data:`SOLUTION_FILE`.

    Returns
    -------
    dict
        ``"s"``: the mesh points [m] (ndarray (n,)); for every ``Var`` component, its values
        in index order (ndarray; NaN where a variable has no value).
    """
    out = {"s": np.array(list(m.s), dtype=float)}
    for comp in m.component_objects(pyo.Var, descend_into=True):
        vals = [vd.value for vd in comp.values()]
        out[f"var:{comp.name}"] = np.array([np.nan if v is None else v for v in vals], dtype=float)
    return out


def load_solution(m, path) -> int:
    """Set the variables of a model from a :data:`SOLUTION_FILE` (or the results folder that
    holds it) of a solve of the same job (same track, sector and mesh; the car may differ):
    the initial point of a warm start.

    Every variable component of the model found in the file with the same number of entries
    gets the file's values, clipped into its bounds; fixed variables and missing values are
    left as they are.

    Returns
    -------
    int
        The number of variables set.

    Raises
    ------
    ValueError
        No such file, or the file's mesh differs from the model's (another track, sector or
        mesh: the message gives both).
    """
    path = Path(path)
    f = path / SOLUTION_FILE if path.is_dir() else path
    if not f.is_file():
        raise ValueError(f"warm start: {str(f)!r} does not exist (a results folder written by "
                         f"this version of pyomo_lap holds {SOLUTION_FILE})")
    data = read_solution(f)
    s = np.array(list(m.s), dtype=float)
    if data["s"].shape != s.shape or not np.allclose(data["s"], s, rtol=0, atol=1e-9):
        raise ValueError(f"warm start: the mesh of {str(f)!r} ({data['s'].size} points, "
                         f"{data['s'][-1] if data['s'].size else 0:.1f} m) differs from this "
                         f"model's ({s.size} points, {s[-1]:.1f} m): expected a solve of the same "
                         "track, sector and mesh")
    forget_multipliers(m)              # a new start: the model's multipliers are not its
    n = 0
    for comp in m.component_objects(pyo.Var, descend_into=True):
        vals = data.get(f"var:{comp.name}")
        if vals is None or vals.size != len(comp):
            continue
        for vd, v in zip(comp.values(), vals.tolist()):
            if vd.fixed or v != v:
                continue
            lb, ub = vd.lb, vd.ub
            if lb is not None and v < lb:
                v = lb
            if ub is not None and v > ub:
                v = ub
            vd.set_value(v, skip_validation=True)
            n += 1
    return n


def write_results(out_dir, df: pd.DataFrame, summary: Summary | dict,
                  vehicle_params: dict | None = None, partial: bool = False, n_sectors: int = 3,
                  echo=None, solution: dict | None = None, mesh_df: pd.DataFrame | None = None,
                  by: str = "solve") -> Path:
    """Write ``trajectory.csv``, ``trajectory.parquet``, ``results.xlsx``, ``summary.json`` (and
    ``solution.npz``, given ``solution``) atomically: written whole by
    :class:`pyomo_lap.folders.writer.ResultsWriter` (replace mode: in ``.NAME.tmp-PID-*`` next
    to ``out_dir``, the :data:`MANIFEST` last, swapped in; an existing ``out_dir`` replaced
    only if it holds nothing but what pyomo_lap wrote there, :func:`check_output_dir`; its
    lock held throughout). With ``partial=True`` (a failed solve) nothing existing is
    touched: the files go to ``<out_dir>.failed`` and the summary says ``"partial": true``;
    with ``partial="interrupted"`` (the last iterate of a solve stopped by Ctrl-C or SIGTERM,
    given with its ``solution`` to start a later solve from) they go to
    ``<out_dir>.interrupted``, the summary saying ``"partial": true, "interrupted": true``.

    Every text in the workbook (names, descriptions and paths from the input files included)
    is a text cell, never a formula or a link.

    ``results.xlsx`` has the sheets ``summary`` (one row per value, with its unit: grouped as
    inputs, provenance, solver, results, the solver's effective options
    (:func:`effective_solver_options`), the sector times; dicts and lists flattened into rows,
    :func:`pyomo_lap.results.export.summary_rows`, never a JSON text; where the other sheets' units are,
    :data:`pyomo_lap.results.export.WORKBOOK_UNITS_NOTE`), ``channels`` (one row per point, units
    in the headers; each header cell carries a comment with the channel's meaning, sign and
    source; numbers shown in the format of their unit, :data:`pyomo_lap.results.export.NUMBER_FORMATS`; an
    autofilter), ``speed_chart`` (a chart sheet: speed over s), ``channel_dictionary`` (the
    entry of every column present,
    :func:`pyomo_lap.results.channels.channel_table`: name, unit, meaning, sign, source, wheel),
    ``sectors`` (:func:`sector_times`, at the summary's ``sector_boundaries`` when it has
    them), ``corners`` (when the summary has ``corners``, the per-corner table of
    :func:`pyomo_lap.results.corners.corner_table`, also written as ``corners.csv``),
    ``vehicle`` (all parameters), ``track`` (the track at every point: :data:`TRACK_COLUMNS`), ``quality`` (when the summary
    has ``channel_quality``: the zig-zag counts and the speed consistency of the channels,
    :func:`pyomo_lap.results.export.quality_table`), ``sensitivities`` (when the
    summary has ``sensitivities``: :func:`pyomo_lap.results.export.sensitivity_sheet`) and ``provenance`` (the input
    files, then one row per step of the track data's processing, assumed value and repair:
    the summary's ``track_processing``, ``track_assumptions``, ``track_repairs``, see
    :func:`pyomo_lap.track.report.provenance_rows`) and ``lists`` (the summary's lists of more
    than 12 values, one column each: the mesh's element boundaries). Every sheet has its header
    row frozen (the wide ``channels`` and ``track`` their first column too) and its columns sized
    to their contents. ``trajectory.parquet`` holds the channels with plain names and their
    units in the schema metadata (key ``pyomo_lap.units``, JSON), and the summary under
    ``pyomo_lap.summary``.

    Parameters
    ----------
    out_dir : str, Path or ResultsWriter
        The folder; or a writer of a folder inside another being written (a stint's
        ``lap_01``, :meth:`pyomo_lap.folders.writer.ResultsWriter.nested`), claimed.
    df : DataFrame
        From :func:`trajectory_dataframe`.
    summary : Summary or dict
        :class:`pyomo_lap.results.summary.Summary` (a dict of its keys is read as one), left
        unchanged: ``partial``, ``summary_format`` ... are set on the copy written.
    vehicle_params : VehicleParameters or dict, optional
        The workbook's ``vehicle`` sheet (:func:`pyomo_lap.results.export.vehicle_sheet`).
    partial : bool or "interrupted"
    n_sectors : int
        Sectors for :func:`sector_times` (added to the summary unless it has ``sectors``).
    echo : callable, optional
        Progress messages (one per file).
    solution : dict, optional
        :func:`solution_arrays` of the model, written as :data:`SOLUTION_FILE`.
    mesh_df : DataFrame, optional
        The mesh rows when ``df`` is on a fixed distance step
        (:func:`pyomo_lap.results.fixed_step.fixed_step_table`, ``solve --every``): written as
        ``trajectory_mesh.csv`` and ``trajectory_mesh.parquet`` (read back with
        ``read_trajectory(folder, mesh=True)``), the workbook and ``trajectory.*`` holding ``df``.
    by : str
        The command, recorded in the manifest (``"solve"``, ``"export"``, ``"stint"``).

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        The destination holds something pyomo_lap did not write (nothing was written).
    OutputBusyError (a ValueError)
        Another run is writing into ``out_dir``.
    OSError
        The destination cannot be written (the message names it;
        :class:`pyomo_lap.folders.writer.FolderWriteError` for a full disk: nothing of it is
        left, the earlier folder is as it was).
    """
    summary = as_summary(summary)        # typed here: a dict of summary.json's keys too
    echo = echo or (lambda *_: None)
    if partial not in (True, False, "interrupted"):
        raise ValueError(f"partial = {partial!r}: expected True, False or 'interrupted'")
    if isinstance(out_dir, ResultsWriter):
        writer = out_dir
    else:
        suffix = ".interrupted" if partial == "interrupted" else ".failed" if partial else ""
        writer = ResultsWriter.replacing(out_dir, by, partial=suffix, echo=echo)
    with writer:                  # checked and locked; committed (swapped in) or removed
        _write_files(writer, df, summary, vehicle_params, partial, n_sectors, echo, solution,
                     mesh_df)
    return writer.folder


_XLSX_OPTIONS = {"strings_to_formulas": False, "strings_to_urls": False,
                 "strings_to_numbers": False, "in_memory": True}
"""xlsxwriter's workbook options for ``results.xlsx``: every string a text cell (a vehicle
description ``=HYPERLINK(...)`` stays text); the parts of the file assembled in memory, not
in temporary files (the same file, 0.1 s less)."""


def _write_files(writer: ResultsWriter, df, summary, vehicle_params, partial, n_sectors, echo,
                 solution, mesh_df=None) -> None:
    """The files of :func:`write_results`, through its claimed writer."""
    summary = summary.copy()
    summary.partial = bool(partial)
    if partial == "interrupted":
        summary.interrupted = True
    if not summary.is_set("pyomo_lap_version"):    # marks the folder as pyomo_lap results
        summary.pyomo_lap_version = __version__
    if not summary.is_set("summary_format"):
        summary.summary_format = SUMMARY_FORMAT
    # a table without the track coordinate and time (a partial export) has no sector times
    sectors = (sector_times(df, n_sectors, summary.sector_boundaries)
               if {"s_sector", "t"} <= set(df.columns) else pd.DataFrame())
    if not summary.is_set("sectors") and len(sectors):
        summary.sectors = sector_records(sectors)
    summary = summary.to_dict()     # JSON's dict: what the files below hold
    table = pa.Table.from_pandas(df, preserve_index=False)     # one table for both files
    echo("  writing trajectory.csv")
    writer.write("trajectory.csv", lambda p: _write_csv(p, table))
    echo("  writing trajectory.parquet")
    writer.write("trajectory.parquet", lambda p: _write_parquet(p, table, summary))
    if mesh_df is not None:
        _write_mesh_rows(writer, mesh_df, summary, echo)
    writer.write_text("summary.json", json.dumps(summary, indent=2, default=_json_default))
    if solution is not None:
        writer.write(SOLUTION_FILE, lambda p: np.savez(p, **solution))
    corners = _corners_of(summary)
    if corners is not None:
        writer.write_csv("corners.csv", corners, float_format="%.10g")
    echo("  writing results.xlsx")
    writer.write("results.xlsx", lambda p: _write_workbook(p, df, summary, sectors, vehicle_params))


def _write_mesh_rows(writer: ResultsWriter, mesh_df: pd.DataFrame, summary: dict, echo) -> None:
    """``trajectory_mesh.csv`` and ``trajectory_mesh.parquet`` (the mesh rows of a folder
    written on a fixed step), through the writer of :func:`write_results`."""
    table = pa.Table.from_pandas(mesh_df, preserve_index=False)
    echo("  writing trajectory_mesh.csv")
    writer.write("trajectory_mesh.csv", lambda p: _write_csv(p, table))
    writer.write("trajectory_mesh.parquet", lambda p: _write_parquet(p, table, summary))


def _corners_of(summary: dict):
    """The summary's per-corner table (``corners``, :func:`pyomo_lap.results.corners.corner_table`)
    as a DataFrame, or None when it has none (``corners.csv`` and the ``corners`` sheet)."""
    if not isinstance(summary.get("corners"), list):
        return None
    return records_table(summary["corners"])


def _write_workbook(path: Path, df, summary: dict, sectors, vehicle_params) -> None:
    """``results.xlsx`` (see :func:`write_results`): every sheet with its header row frozen
    (and the first column on the wide ones), its columns sized to their contents, numbers as
    numbers and texts as text, never a formula, a link or a JSON text."""
    with pd.ExcelWriter(path, engine="xlsxwriter",
                        engine_kwargs={"options": dict(_XLSX_OPTIONS)}) as xw:
        _sheet(xw, "summary", _summary_sheet(summary, bool(vehicle_params)),
               wrap=("value", "note"))
        known = [c for c in df.columns if c in _channels.CHANNELS]
        _write_rows(xw, "channels", _with_units(df),
                    comments=[_channels.CHANNELS[c].note() if c in _channels.CHANNELS
                              else None for c in df.columns],
                    chart_columns=[j for j, c in enumerate(df.columns) if c in ("s", "speed_kmh")])
        _speed_chart(xw, df.columns, len(df),
                     s_range=(df["s"].min(), df["s"].max()) if "s" in df.columns else None)
        _sheet(xw, "channel_dictionary", _channels.channel_table(known),
               wrap=("meaning", "sign", "source"))
        _sheet(xw, "sectors", sectors)
        corners = _corners_of(summary)
        if corners is not None:
            _sheet(xw, "corners", corners, unit_formats=True)
        if vehicle_params:
            _sheet(xw, "vehicle", vehicle_sheet(vehicle_params), wrap=("description",))
        tcols = [c for c in TRACK_COLUMNS if c in df.columns]
        _write_rows(xw, "track", _with_units(df[tcols]))
        _sheet(xw, "provenance", _provenance_sheet(summary), wrap=("detail",))
        if summary.get("channel_quality"):
            _sheet(xw, "quality", quality_table(summary["channel_quality"]))
        if summary.get("sensitivities"):
            _sheet(xw, "sensitivities", sensitivity_sheet(summary["sensitivities"]))
        lists = _lists_sheet(summary)
        if len(lists.columns):
            _sheet(xw, "lists", lists)


def effective_solver_options(solver: str, given: dict | None = None) -> dict:
    """The options the solver ran with: its defaults in pyomo_lap (``lap_ipopt``:
    :data:`pyomo_lap.solvers.lap.solver.LAP_IPOPT_OPTIONS`; ``ipopt``, ``ipopt_v2``:
    :data:`pyomo_lap.solvers.solve.DEFAULT_IPOPT_OPTIONS`; another solver: none) updated by
    the options given (``summary['solver_options']``: the user's, and those pyomo_lap added
    for a warm start or the sensitivities), in that order; IPOPT's own defaults apply to the
    rest.

    Returns
    -------
    dict
        ``{option: (value, source)}``, source ``'pyomo_lap default'`` or ``'given'``.
    """
    defaults = {}
    if solver == "lap_ipopt":
        defaults = LAP_IPOPT_OPTIONS
    elif solver in ("ipopt", "ipopt_v2"):
        defaults = DEFAULT_IPOPT_OPTIONS
    out = {k: (v, "pyomo_lap default") for k, v in defaults.items()}
    out.update({k: (v, "given") for k, v in (given or {}).items()})
    return out


def read_sensitivities(results_dir) -> pd.DataFrame | None:
    """The sensitivity table of a results folder (from ``summary.json``), with the columns of
    :func:`pyomo_lap.analysis.sensitivities.lap_time_sensitivities`; None if the run had none."""
    records = read_summary(results_dir).sensitivities
    return pd.DataFrame(records) if records else None


def _summary_sheet(summary: dict, vehicle_sheet: bool = False) -> pd.DataFrame:
    """The summary as rows (group, quantity, value, unit, note): one value per row (dicts and
    lists flattened, :func:`pyomo_lap.results.export.summary_rows`), the solver's effective options
    (:func:`effective_solver_options`), sector times as rows of their own (the track data's
    records are on the ``provenance`` sheet, the vehicle's parameters on the ``vehicle``
    sheet) and where the units of the other sheets are (:data:`pyomo_lap.results.export.WORKBOOK_UNITS_NOTE`)."""
    rows = [("about", "units", "SI", "", WORKBOOK_UNITS_NOTE)]
    seen = set(_TRACK_DATA_KEYS) | {"solver_options", "solver_options_effective", "sectors",
                                    "corners"}

    def add(group, key, value, note=""):
        for name, v in summary_rows(key, value):
            rows.append((group, name, v, _unit_of(name), note))

    for group, keys in _SUMMARY_GROUPS:
        for k in keys:
            if k in summary and k not in ("solver_options",):
                add(group, k, summary[k])
                seen.add(k)
    effective = summary.get("solver_options_effective")
    if isinstance(effective, dict):
        options = {k: (v, "effective") for k, v in effective.items()}
    else:
        options = effective_solver_options(str(summary.get("solver", "")),
                                           summary.get("solver_options") or {})
    for k, (v, source) in options.items():
        add("solver options", f"solver_options.{k}", v,
            f"{source}; IPOPT's own defaults for the options not listed")
    for sec in summary.get("sectors", []):
        rows.append(("sector times", f"sector {sec['sector']} time "
                     f"({sec['s_start_m']:.0f}-{sec['s_end_m']:.0f} m)", sec["time_s"], "s", ""))
    if isinstance(summary.get("corners"), list):
        rows.append(("results", "corners", f"{len(summary['corners'])} corners: the corners "
                     "sheet", "", ""))
    if "vehicle_parameters" in summary and vehicle_sheet:
        seen.add("vehicle_parameters")
        rows.append(("vehicle", "vehicle_parameters", f"{len(summary['vehicle_parameters'])} "
                     "values: the vehicle sheet", "", ""))
    if summary.get("channel_quality"):
        seen.add("channel_quality")
        rows.append(("results", "channel_quality", "the quality sheet", "", ""))
    for k, v in summary.items():
        if k not in seen:
            for name, x in _long_lists(k, v).items():
                rows.append(("other", name, f"{len(x)} values: column {name!r} of the lists "
                             "sheet", _unit_of(name), ""))
            add("other", k, _without_long_lists(v))
    return pd.DataFrame(rows, columns=["group", "quantity", "value", "unit", "note"])


