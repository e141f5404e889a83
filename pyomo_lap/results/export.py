"""The contents of the files of an export (:func:`pyomo_lap.results.table.write_results`): the
sheets of ``results.xlsx`` (``vehicle``, ``sensitivities``, ``provenance``, ``lists``; the
summary's rows, :func:`summary_rows`; the large tables written row by row, their numbers in the
format of their unit, :data:`NUMBER_FORMATS`; the speed chart), and ``trajectory.csv`` and
``trajectory.parquet`` with the channels' units (read back: :func:`read_parquet_units`).
:mod:`pyomo_lap.results.table` assembles them into a results folder.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..folders.json_file import parse_json
from ..track.report import provenance_rows
from ..vehicle.schema import PARAMETER_KEYS, VehicleParameters, field_of
from .channels import UNITS
from .summary import Summary, as_summary

xl_utility, xl_utility_available = attempt_import("xlsxwriter.utility")
pacsv, pacsv_available = attempt_import("pyarrow.csv")
pq, pq_available = attempt_import("pyarrow.parquet")

__all__ = ["vehicle_sheet", "summary_rows", "WORKBOOK_UNITS_NOTE", "NUMBER_FORMATS",
           "number_format", "SENSITIVITY_HEADERS", "sensitivity_sheet", "read_parquet_units"]


def vehicle_sheet(vehicle) -> pd.DataFrame:
    """The workbook's ``vehicle`` sheet: one row per parameter, by the dotted name of the
    vehicle file (``mass.total``: the model's ``m.vehicle.mass.total``, ``sweep --set``,
    ``solve --free``, the sensitivity table), with its value, unit and description; the car's
    name and description first.

    Parameters
    ----------
    vehicle : VehicleParameters or dict
        A dict (``{name: value}``) is written as it is.
    """
    if isinstance(vehicle, dict):
        return pd.DataFrame({"parameter": list(vehicle), "value": [_cell(v) for v in vehicle.values()]})
    rows = [{"parameter": "name", "value": vehicle.name, "unit": "", "description": "the car's name"},
            {"parameter": "description", "value": vehicle.description or "", "unit": "",
             "description": "the vehicle file's description"}]
    for key in PARAMETER_KEYS + ("gravity",):
        value = vehicle.value(key)
        if value is None:
            continue
        info = VehicleParameters.model_fields[field_of(key)]
        desc = (info.description or "").rsplit(" [", 1)[0]
        rows.append({"parameter": key, "value": float(value),
                     "unit": (info.json_schema_extra or {}).get("unit", ""), "description": desc})
    return pd.DataFrame(rows, columns=["parameter", "value", "unit", "description"])


_MAX_WIDTH = 60     # [characters] widest column; longer texts wrap (their columns: ``wrap``)


def _width(frame: pd.DataFrame, col) -> int:
    """A column's width in characters: its header and its longest value (of the first 500
    rows; numbers as 12 characters), within 8 and :data:`_MAX_WIDTH`."""
    values = frame[col].head(500)
    longest = 0
    for v in values:
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            longest = max(longest, 12)
        elif v is not None and not (isinstance(v, float) and math.isnan(v)):
            longest = max(longest, len(str(v)))
    return int(min(max(len(str(col)) + 2, longest + 1, 8), _MAX_WIDTH))


def _sheet(xw, name: str, frame: pd.DataFrame, wrap=(), unit_formats: bool = False) -> None:
    """A table as a sheet (``DataFrame.to_excel``), its header row frozen, its columns sized
    (:func:`_width`); the columns ``wrap`` (long texts) wrapped at :data:`_MAX_WIDTH`; with
    ``unit_formats`` each column whose header is ``name [unit]`` shows its numbers in the
    format of its unit (:func:`number_format`, as the ``channels`` sheet)."""
    frame.to_excel(xw, sheet_name=name, index=False)
    ws = xw.sheets[name]
    ws.freeze_panes(1, 0)
    wrapped = xw.book.add_format({"text_wrap": True, "valign": "top"})
    formats = {}
    for j, col in enumerate(frame.columns):
        fmt = wrapped if col in wrap else None
        code = number_format(str(col)) if unit_formats else "General"
        if fmt is None and code != "General":
            fmt = formats.get(code) or formats.setdefault(
                code, xw.book.add_format({"num_format": code}))
        ws.set_column(j, j, _width(frame, col), fmt)


WORKBOOK_UNITS_NOTE = (
    "SI units, but the logger channels' (throttle, brake [%], steering_wheel_angle [deg], "
    "engine_speed [rpm], yaw_rate [deg/s], a_x_g ... [g]). The channels and track sheets give "
    "each column's unit in its header, in brackets ('speed [m/s]', 'f_11z [N]'), and show its "
    "numbers in a format of that unit (m 0.00, s 0.000, km/h 0.0, N 0, rad 0.0000 ...: display "
    "only, every cell keeps its full precision); their header cells carry the channel's meaning "
    "as a comment, and the channel_dictionary sheet lists every column with unit, meaning, sign "
    "and source. The other sheets have a unit column, or the unit in the header.")
"""The ``units`` row of the workbook's ``summary`` sheet: where the units are."""


_UNIT_SUFFIX = (("_kmh", "km/h"), ("_mps", "m/s"), ("_m2", "m^2"), ("_s", "s"), ("_m", "m"),
                ("_deg", "deg"), ("_rad", "rad"), ("_n", "N"), ("_w", "W"))


def _unit_of(key: str) -> str:
    """The unit of a summary entry from its name's suffix (``lap_time_s``: s)."""
    last = key.rsplit(".", 1)[-1].lower()
    return next((u for suffix, u in _UNIT_SUFFIX if last.endswith(suffix)), "")


def summary_rows(prefix: str, value) -> list:
    """A summary entry as rows ``(name, value)`` of single values: a dict's entries under
    ``prefix.key``, a list's items under ``prefix[i]`` (recursively), never a JSON text."""
    if isinstance(value, dict):
        if not value:
            return [(prefix, "(none)")]
        return [row for k, v in value.items() for row in summary_rows(f"{prefix}.{k}", v)]
    if isinstance(value, (list, tuple)):
        if not value:
            return [(prefix, "(none)")]
        return [row for i, v in enumerate(value) for row in summary_rows(f"{prefix}[{i}]", v)]
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return [(prefix, value)]
    return [(prefix, str(value))]


_SUMMARY_GROUPS = (
    ("inputs", ("track", "vehicle", "start_m", "length_m", "nfe", "ncp", "scheme", "n_points",
                "periodic", "initial_speed_mps", "solver", "solver_options", "track_width_m")),
    ("provenance", ("track_file", "track_file_sha256", "vehicle_file", "vehicle_file_sha256",
                    "vehicle_parameters_sha256", "pyomo_lap_version", "pyomo_lap_git_commit",
                    "pyomo_version", "solver_version", "python", "created_utc")),
    ("solver", ("termination_condition", "solver_status", "solver_message", "ipopt_exit",
                "optimal", "partial", "iterations", "n_variables", "n_constraints",
                "build_time_s", "init_time_s", "solve_time_s")),
    ("results", ("lap_time_s", "objective", "penalty_s", "objective_note", "mean_speed_kmh",
                 "max_speed_kmh", "regularization")),
    ("self-check", ("self_check",)),
)


def _write_rows(xw, name: str, frame: pd.DataFrame, comments=None, chart_columns=()) -> None:
    """A sheet of a large table, written row by row with xlsxwriter (a header row of the
    column names, no index; empty cells for missing values, as ``DataFrame.to_excel``):
    ``to_excel`` writes cell by cell through pandas' formatter and took 5 s for a full lap's
    4000 rows and 85 channels, this 1.5 s.

    ``comments``: optional texts, one per column (None or "" for none), put as cell comments
    on the header row (the channels' meanings, :meth:`pyomo_lap.results.channels.Channel.note`;
    one comment per column, so the writing time does not grow with the rows). The header row
    and the first column are frozen; each column is as wide as its header (at least 12) and
    shows its numbers in the format of its unit (:func:`number_format`: display only, the
    values keep full precision); an autofilter covers the table."""
    ws = xw.book.add_worksheet(name)
    ws.write_row(0, 0, [str(c) for c in frame.columns])
    ws.freeze_panes(1, 1)                 # the header row and the first column (s) stay in view
    formats = {}
    for j, c in enumerate(frame.columns):
        code = number_format(str(c))
        if code not in formats:
            formats[code] = xw.book.add_format({"num_format": code})
        ws.set_column(j, j, max(len(str(c)) + 2, 12), formats[code])
    ws.autofilter(0, 0, len(frame), max(len(frame.columns) - 1, 0))
    for j, text in enumerate(comments or ()):
        if text:
            ws.write_comment(0, j, text, {"width": 360, "height": 16 * (len(text) // 48 + 2)})
    if _bulk_rows(ws, frame, keep=chart_columns):
        return
    values = frame.astype(object).where(frame.notna(), None).to_numpy().tolist()
    for i, row in enumerate(values, start=1):
        ws.write_row(i, 0, row)


_XLSX_ROWS = 1048576
"""Rows of an Excel worksheet."""


def _bulk_rows(ws, frame: pd.DataFrame, keep=()) -> bool:
    """The data rows of :func:`_write_rows` (rows 1..n) for a table of numbers only, written
    as the worksheet's XML text at once when the workbook is saved instead of cell by cell
    (xlsxwriter spends ~20 us on each cell: 1.0 s of the default job's 1.2 s workbook, 50 000
    cells). The text is xlsxwriter's own, byte for byte (each row's tag by its ``_write_row``,
    each number as its ``_write_cell``: ``<c r="B2" s="3"><v>%.16G</v></c>``, the column's
    format, no cell for a missing value, the rows' spans per 16 rows), checked against
    xlsxwriter's own writing by tests/test_workbook_rows.py. The columns ``keep`` (positions:
    the chart's data) are also put in the worksheet's cell table, from which xlsxwriter caches
    a chart's values.

    Returns False (nothing done: the caller writes cell by cell) for a table with another
    kind of column (texts, booleans), an infinite value (xlsxwriter refuses it), more rows
    than a worksheet holds, or a worksheet without the xlsxwriter internals used here."""
    n, ncol = frame.shape
    if (n == 0 or n + 1 > _XLSX_ROWS or not all(
            hasattr(ws, a) for a in ("_write_rows", "_write_row", "_xml_end_tag", "fh", "table",
                                     "col_info", "row_info", "comments", "_check_dimensions"))
            or any(ws.row_info) or not all(pd.api.types.is_float_dtype(t)
                                           or pd.api.types.is_integer_dtype(t)
                                           for t in frame.dtypes)):
        return False
    x = frame.to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(x).any():
        return False
    present = ~np.isnan(x)
    rows = np.flatnonzero(present.any(axis=1))
    for j in keep:                              # the chart's cache reads the cell table
        for i in np.flatnonzero(present[:, j]):
            ws.write_number(int(i) + 1, j, float(x[i, j]))
    if len(rows):
        last = present[rows[-1]]
        ws._check_dimensions(int(rows[-1]) + 1, int(np.flatnonzero(last)[0]))
    header = ws._write_rows                     # row 0: the header, its comments

    def write_rows():
        header_only = {r: ws.table[r] for r in list(ws.table) if r > 0}
        for r in header_only:                   # the chart's cells are in the rows below
            del ws.table[r]
        top, ws.dim_rowmax = ws.dim_rowmax, 0
        try:
            header()
        finally:
            ws.dim_rowmax = top
            ws.table.update(header_only)
        _bulk_xml(ws, x, present, rows)
    ws._write_rows = write_rows
    return True


def _bulk_xml(ws, x: np.ndarray, present: np.ndarray, rows: np.ndarray) -> None:
    """The rows ``rows + 1`` of :func:`_bulk_rows` written to the worksheet's XML file."""
    ncol = x.shape[1]
    cols = []
    for j in range(ncol):
        info = ws.col_info.get(j)
        fmt = getattr(info, "column_format", None) if info is not None else None
        s = f' s="{fmt._get_xf_index()}"' if fmt is not None else ""
        cols.append((f'<c r="{xl_utility.xl_col_to_name(j)}', f'"{s}><v>'))
    # spans: per block of 16 rows (row 0 the header, every column), the first and last column
    # with a cell in the block
    spans = {}
    for b in range(0, len(x) + 1, 16):
        block = present[max(b - 1, 0):b + 15]
        cols_in = np.flatnonzero(block.any(axis=0))
        if b == 0:
            cols_in = np.arange(ncol)
        if len(cols_in):
            spans[b // 16] = f"{cols_in[0] + 1}:{cols_in[-1] + 1}"
    fh = ws.fh
    values, have = x.tolist(), present.tolist()      # Python floats: formatted 3x faster
    for i in rows.tolist():
        r = i + 1
        ws._write_row(r, spans.get(r // 16))
        tail = str(r + 1)
        fh.write("".join(f"{a}{tail}{b}{v:.16G}</v></c>"
                         for (a, b), v, h in zip(cols, values[i], have[i]) if h))
        ws._xml_end_tag("row")


NUMBER_FORMATS = {
    "m": "0.00", "s": "0.000", "m/s": "0.00", "km/h": "0.0", "m/s^2": "0.00", "g": "0.000",
    "N": "0", "N m": "0", "N/s": "0", "N/rad": "0", "W": "0", "rad": "0.0000",
    "rad/s": "0.0000", "rad/s^2": "0.000", "1/m": "0.00000", "deg": "0.00", "deg/s": "0.00",
    "%": "0.0", "rpm": "0", "-": "0.000", "J": "0", "kg/s": "0.00000",
}
"""Excel number format of the columns of the workbook's ``channels`` and ``track`` sheets, by
unit (the column's header ``name [unit]``): what is shown, never what is stored (every value
keeps its full double precision; a cell shows more digits when selected). Units not listed,
and headers without a unit, keep Excel's ``General``; :data:`NUMBER_FORMATS_BY_NAME` first."""


NUMBER_FORMATS_BY_NAME = {
    "element": "0", "gear": "0", "q4": "0.0000",
    **{f"{c}{w}": "0.0000" for c in ("z", "zc_") for w in ("11", "12", "21", "22")}}
"""Columns whose format is not their unit's: whole numbers of unit ``-``, and lengths of
millimetres (the heave, the multibody car's wheel travels and wheel-centre heights) to 0.1 mm."""


def number_format(header: str) -> str:
    """The Excel number format of a column of the ``channels`` or ``track`` sheet from its
    header (``"speed_kmh [km/h]"`` -> ``"0.0"``): :data:`NUMBER_FORMATS_BY_NAME`, then
    :data:`NUMBER_FORMATS`, else ``"General"``."""
    name, _, unit = header.partition(" [")
    unit = unit[:-1] if unit.endswith("]") else ""
    return NUMBER_FORMATS_BY_NAME.get(name, NUMBER_FORMATS.get(unit, "General"))


def _speed_chart(xw, columns, n_rows: int, sheet: str = "channels", s_range=None) -> None:
    """A chart sheet ``speed_chart``: speed [km/h] over the track coordinate s [m], a scatter
    chart with straight lines of the columns ``speed_kmh`` and ``s`` of the sheet ``sheet``
    (``columns``: its column names without units; nothing without them); ``s_range`` (first,
    last s [m]) bounds its x axis to the table's (a spreadsheet rounds it up otherwise)."""
    columns = list(columns)
    if "speed_kmh" not in columns or "s" not in columns or n_rows < 2:
        return
    x, y = columns.index("s"), columns.index("speed_kmh")
    chart = xw.book.add_chart({"type": "scatter", "subtype": "straight"})
    chart.add_series({"name": "speed", "categories": [sheet, 1, x, n_rows, x],
                      "values": [sheet, 1, y, n_rows, y], "line": {"width": 1.5}})
    chart.set_title({"name": "Speed over the track coordinate"})
    x_axis = {"name": "s [m]", "major_gridlines": {"visible": True}}
    if s_range is not None and all(np.isfinite(s_range)):
        x_axis.update(min=float(s_range[0]), max=float(s_range[1]))
    chart.set_x_axis(x_axis)
    chart.set_y_axis({"name": "speed [km/h]"})
    chart.set_legend({"none": True})
    cs = xw.book.add_chartsheet("speed_chart")
    cs.set_chart(chart)


_TRACK_DATA_KEYS = ("track_processing", "track_assumptions", "track_repairs", "sensitivities")
"""Summary keys written to sheets of their own (``provenance``, ``sensitivities``), one row
per record."""


SENSITIVITY_HEADERS = {
    "parameter": "parameter", "section": "section", "unit": "unit", "value": "value",
    "dT_dp": "d lap time / d parameter [s per unit]",
    "dT_1pct": "change of the lap time for +1 % of the parameter [s]",
    "dT_dp_entry": "of which through the entry speed [s per unit]",
    "dobj_dp": "d objective / d parameter (sector time + penalties) [s per unit]",
}
"""Headers of the ``sensitivities`` sheet (columns of
:func:`pyomo_lap.analysis.sensitivities.lap_time_sensitivities`)."""


def sensitivity_sheet(records) -> pd.DataFrame:
    """The ``sensitivities`` sheet of ``results.xlsx`` from the summary's ``sensitivities``
    records (or the DataFrame of :func:`pyomo_lap.analysis.sensitivities.lap_time_sensitivities`):
    one row per parameter, the headers of :data:`SENSITIVITY_HEADERS`."""
    frame = pd.DataFrame(records)
    return frame[[c for c in SENSITIVITY_HEADERS if c in frame]].rename(columns=SENSITIVITY_HEADERS)


def _provenance_sheet(summary: Summary) -> pd.DataFrame:
    """The input files and what was done to the track's data, one row each (of a
    :class:`pyomo_lap.results.summary.Summary` or the dict of its keys)."""
    summary = as_summary(summary)
    files = {k: getattr(summary, k) for k in ("track_file", "track_file_sha256", "vehicle_file",
                                              "vehicle_file_sha256") if summary.is_set(k)}
    return provenance_rows(summary.track_processing or [], summary.track_assumptions or [],
                           summary.track_repairs or [], files)


_LONG_LIST = 12
"""Lists of more values than this go to the ``lists`` sheet, one column each."""


def _long_lists(key: str, value) -> dict:
    """``{name: list}`` of the lists of more than :data:`_LONG_LIST` single values in a
    summary entry (``mesh.element_boundaries_m``)."""
    if isinstance(value, dict):
        return {n: x for k, v in value.items() for n, x in _long_lists(f"{key}.{k}", v).items()}
    if isinstance(value, (list, tuple)) and len(value) > _LONG_LIST and all(
            not isinstance(x, (dict, list, tuple)) for x in value):
        return {key: list(value)}
    return {}


def _without_long_lists(value):
    """A summary entry without its long lists (:func:`_long_lists`)."""
    if isinstance(value, dict):
        out = {k: _without_long_lists(v) for k, v in value.items()
               if not _long_lists("", v) or isinstance(v, dict)}
        return out
    return value if not _long_lists("", value) else None


def _lists_sheet(summary: dict) -> pd.DataFrame:
    """The ``lists`` sheet: the summary's long lists, one column each (:func:`_long_lists`)."""
    cols = {}
    for k, v in summary.items():
        if k not in _TRACK_DATA_KEYS and k not in ("sectors", "corners"):
            cols.update(_long_lists(k, v))
    return pd.DataFrame({k: pd.Series(v) for k, v in cols.items()})


def _write_csv(path: Path, table) -> None:
    """``trajectory.csv``: the channels of the Arrow ``table`` (``pyarrow.Table`` of the
    trajectory DataFrame) with their units in the headers (``speed [m/s]``), written by
    pyarrow's CSV writer (C++: 0.05 s for a full lap's 5400 rows, where ``DataFrame.to_csv``
    took 0.5 s): every number as the shortest text that reads back to the same double, missing
    values as empty cells, the headers quoted."""
    names = [f"{c} [{UNITS[c]}]" if c in UNITS else c for c in table.column_names]
    pacsv.write_csv(table.rename_columns(names), path)


def _write_parquet(path: Path, table, summary: dict) -> None:
    """``trajectory.parquet``: the Arrow ``table`` of the trajectory with the units and the
    summary in its schema metadata (``pyomo_lap.units``, ``pyomo_lap.summary``)."""
    meta = dict(table.schema.metadata or {})
    meta[b"pyomo_lap.units"] = json.dumps({c: UNITS[c] for c in table.column_names
                                            if c in UNITS}).encode()
    meta[b"pyomo_lap.summary"] = json.dumps(summary, default=_json_default).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def read_parquet_units(path) -> dict:
    """Units of the channels stored in a ``trajectory.parquet`` (its schema metadata)."""
    meta = pq.read_schema(path).metadata or {}
    return parse_json(meta.get(b"pyomo_lap.units", b"{}"), f"{path} (its pyomo_lap.units)",
                      "an object of the channels' units")


def _cell(v):
    """A value for one cell: a dict or list as ``name=value`` pairs (:func:`summary_rows`),
    never a JSON text."""
    if isinstance(v, (dict, list, tuple)):
        return "; ".join(f"{k.lstrip('.')}={x}" for k, x in summary_rows("", v))
    return v


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def quality_table(quality: dict):
    """:func:`channel_quality` as a table (the workbook's ``quality`` sheet): one row per
    channel with its zig-zag count, threshold, unit and largest residual, and a row for the
    speed consistency."""
    rows = [{"check": f"zig-zags of {ch}", "count": v["count"], "threshold": v["threshold"],
             "unit": v["unit"], "largest": v["max_residual"], "at s [m]": v["max_residual_at_m"]}
            for ch, v in quality.get("zigzags", {}).items()]
    sc = quality.get("speed_consistency")
    if sc:
        rows.append({"check": "speed vs integrated tangential acceleration, per step",
                     "count": sc["count"], "threshold": sc["tol_mps"], "unit": "m/s",
                     "largest": sc["max_error_mps"], "at s [m]": sc["max_error_at"]})
    return pd.DataFrame(rows, columns=["check", "count", "threshold", "unit", "largest", "at s [m]"])
