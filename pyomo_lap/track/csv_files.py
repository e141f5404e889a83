"""Track constructors from CSV files: a centreline in any of the dialects
:func:`pyomo_lap.track.formats.read_table` reads (``x, y, z`` with optional widths, banking and
``s``; the TUM racetrack database's layout; pyomo_lap's own ``trajectory.csv`` and
``Track.to_csv`` files) and a GPS logger's trace (``lat, lon[, alt]``).

:class:`CsvLoaders` holds :meth:`~pyomo_lap.track.geometry.Track.from_csv` (a base class of
:class:`~pyomo_lap.track.geometry.Track`); the helpers read the columns (re-centring far
coordinates exactly, from the cells' text) and record how the file was read. Which file goes
to which loader: the registry of track formats, :mod:`pyomo_lap.track.loading`.
"""
from __future__ import annotations

import decimal
import math
from pathlib import Path

import numpy as np

from . import build as tb, checks as track_checks, formats
from .built_checks import finish as _finish
from .checks import MAX_GRADE, check_lat_lon_order
from .report import (
    assumption,
    flat_assumption as _flat_assumption,
    flattened_step as _flattened_step,
    step,
    widths_set_step as _widths_set_step,
)

__all__ = ["CsvLoaders", "read_csv_columns", "is_gps_table", "refuse_lat_lon_order"]

_COLUMN_ALIASES = {k: formats.COLUMNS[k] for k in ("s", "x", "y", "z", "width_left",
                                                   "width_right", "banking")}
"""Accepted names of a centreline file's columns (:data:`pyomo_lap.track.formats.COLUMNS`)."""


class CsvLoaders:
    """The constructors of :class:`~pyomo_lap.track.geometry.Track` from CSV files (a base
    class of it: call them as ``Track.from_csv``)."""

    @classmethod
    def from_csv(cls, path, name: str | None = None, closed: bool | None = None,
                 smoothing: float | None = None, provenance: dict | None = None,
                 repair: bool = False, max_grade: float = MAX_GRADE,
                 track_width: float | None = None, flat: bool = False,
                 lat_lon_order: str = "auto"):
        """Load a track from a CSV file: a centreline (``x, y, z``, optional widths, banking
        and ``s``) or a GPS logger's trace (``lat, lon``, optional altitude).

        Columns (header row, case-insensitive, an optional unit in brackets: ``x [m]``):
        ``x, y, z`` [m] required (``x_m``, ``x_spine`` of the tool's ``trajectory.csv`` ...);
        optional ``width_left, width_right`` [m] (the TUM racetrack database's
        ``w_tr_left_m, w_tr_right_m`` ...), ``banking`` [rad], ``s`` [m]; every accepted name:
        :data:`pyomo_lap.track.formats.COLUMNS`. The columns may be separated by ``,``,
        ``;`` (numbers with a decimal comma then too) or a tab. Lines starting with ``#`` are
        comments, but a first comment line that names the columns is the header (the TUM
        racetrack database's ``# x_m,y_m,w_tr_right_m,w_tr_left_m``); in that layout ``z``
        may be missing: the track is then flat (an assumed value). How the file was read,
        when it is not the plain ``x,y,z`` layout, is the processing step ``file_read``.

        A file with latitude and longitude columns (``lat``/``latitude``, ``lon``/``lng``/
        ``longitude``, optional ``alt``/``altitude``/``elevation``; every name:
        :data:`~pyomo_lap.track.formats.COLUMNS`) and no ``x, y`` is a GPS logger's trace: it
        is processed as :meth:`from_geodetic` processes raw GPS data (projection, smoothing,
        elevation outliers), ``smoothing`` as its plan-view cut-off (default 30 m);
        ``lat_lon_order`` says which column is the latitude
        (:func:`pyomo_lap.track.gps.check_geodetic`; a centreline file refuses any but
        ``'auto'``).

        The points are checked (:func:`pyomo_lap.track.checks.check_points`), then the built
        track (:func:`~pyomo_lap.track.built_checks.check_track`).

        An ``s`` column at uniform arc length (a processed file such as
        ``data/tracks/nordschleife.csv``) with ``smoothing`` None: the points are interpolated
        as they are; otherwise they go through :meth:`from_points` (light smoothing).

        ``x`` and ``y`` are re-centred on their first value in whole metres, exactly, before
        anything else (:func:`read_csv_columns`); the offset is :attr:`Track.origin`.

        Parameters
        ----------
        path : str or Path
        name : str, optional (default: file stem)
        closed : bool, optional
            True: a closed loop (it must close); False: open; None: closed if the last
            point repeats the first (within 1e-6 of the track extent) or the closing gap is
            at most 2.5 x the median point spacing.
        smoothing : float, optional
            See :meth:`from_points`.
        repair : bool
            Repair the problems where a repair is well defined (reported).
        max_grade : float
            Steepest plausible grade [-].
        track_width : float, optional
            Total width of the track [m], half of it each side of the centreline; it
            replaces the file's widths (recorded as the processing step ``widths_set``).
            Without it the file's ``width_left`` / ``width_right`` are used, and a missing
            one is 4.0 m (recorded in ``provenance['assumptions']``).
        flat : bool
            Ignore the file's elevations: z = 0 before the checks, banking as given (step
            ``flattened``, an assumed value).

        What the loader did: ``provenance['processing_steps']`` (:mod:`pyomo_lap.track.report`).

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            Unreadable file, missing required column (the message says how the file was
            read), a column in another unit, a bad ``track_width``, a ``lat_lon_order`` other
            than ``'auto'`` for a centreline (x, y) file, or not one of
            :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS`.
        TrackDataError (a ValueError)
            Bad data; every problem is listed with the file, the rows (and lines), the
            values and what was expected.
        """
        path = Path(path)
        half = track_checks.check_track_width(track_width)
        table = formats.read_table(path)
        if is_gps_table(table):
            return cls._from_gps_table(path, table, name=name, closed=closed, repair=repair,
                                       max_grade=max_grade, track_width=track_width,
                                       smoothing=smoothing, provenance=provenance, flat=flat,
                                       lat_lon_order=lat_lon_order)
        refuse_lat_lon_order(lat_lon_order, f"track file {path}")
        return cls._from_xyz_table(path, table, name=name, closed=closed, repair=repair,
                                   max_grade=max_grade, track_width=track_width, half=half,
                                   smoothing=smoothing, provenance=provenance, flat=flat)

    @classmethod
    def _from_xyz_table(cls, path: Path, table, *, name, closed, repair, max_grade, track_width,
                        half, smoothing, provenance, flat):
        """:meth:`from_csv` of a centreline file (x, y, z columns)."""
        source = f"track file {path}"
        offsets, read = {}, {}  # x, y re-centred exactly (see the reader)
        _, data, cells, labels = read_csv_columns(path, origin=offsets, table=table, info=read)
        origin = np.array([offsets.get("x", 0.0), offsets.get("y", 0.0), 0.0])
        if flat:                   # the elevations ignored: z = 0 before the checks
            cells.pop("z", None), data.update(z=np.zeros(len(data["x"])), **(
                {"s": None} if "s" in data else {}))     # (s, the 3D arc length, no longer is)
        P = np.column_stack([data["x"], data["y"], data["z"]])
        attrs = {k: data[k] for k in ("width_left", "width_right", "banking", "s")
                 if data.get(k) is not None}
        chk = track_checks.check_points(P, closed, attrs=attrs, labels=labels, cells=cells,
                                        source=source, repair=repair, max_grade=max_grade)
        P, closed, data = chk.points, chk.closed, chk.attrs
        name = name or path.stem
        prov = _flat_provenance(_csv_provenance(provenance, path, read), len(P), "z", flat)
        wl, wr = _csv_widths(data, prov, half, track_width)
        s = data.get("s")
        if s is not None and smoothing is None and len(P) >= 6 and _arc_length_samples(s, P, closed):
            tr = cls(s, P, wl, wr, data.get("banking"), closed, name, prov, origin=origin)
            return _finish(tr, chk.findings, source, max_grade)
        tr = cls._build_from_points(P, closed, wl, wr, data.get("banking"), smoothing=smoothing,
                                    name=name, provenance=prov, origin=origin)
        return _finish(tr, chk.findings, source, max_grade)

    @classmethod
    def _from_gps_table(cls, path: Path, table, *, name=None, closed=None, repair=False,
                        max_grade=MAX_GRADE, track_width=None, smoothing=None,
                        provenance=None, flat=False, lat_lon_order="auto"):
        """:meth:`from_csv` of a GPS logger's CSV file (latitude, longitude and optional
        altitude columns), through :meth:`from_geodetic`."""
        j = {q: formats.column_index(table.names, q) for q in ("lat", "lon", "alt")}
        for q, k in j.items():
            if k is not None and table.units[k] and table.units[k].lower() not in formats.UNITS[q]:
                raise ValueError(f"track file {path}: column {table.header[k].strip()!r} is in "
                                 f"{table.units[k]!r}; expected {' or '.join(formats.UNITS[q])}")
        lat, bad_lat, _ = formats.column_values(table, j["lat"])
        lon, bad_lon, _ = formats.column_values(table, j["lon"])
        if j["alt"] is not None and not flat:
            alt, bad_alt, _ = formats.column_values(table, j["alt"])
        else:
            alt, bad_alt = np.full(len(lat), np.nan), {}
        shown = [table.header[k].strip() if k is not None else "(no altitude)"
                 for k in (j["lat"], j["lon"], j["alt"])]
        detail = (f"read as a GPS logger's trace: latitude from column {shown[0]!r}, longitude "
                  f"from {shown[1]!r}, "
                  + (f"altitude from {shown[2]!r}" if j["alt"] is not None else "no altitude")
                  + f"; {table.how}")
        first = [step("file_read", detail, method=f"GPS trace; {table.how}",
                      count=len(table.rows))] + ([_flattened_step(len(table.rows))] if flat else [])
        prov = dict(provenance or {})
        prov.update(source_file=str(path.resolve()), sha256=tb.sha256_file(path))
        return cls.from_geodetic(
            lat, lon, alt, name=name or path.stem, closed=closed,
            smoothing=30.0 if smoothing is None else smoothing, track_width=track_width,
            repair=repair, max_grade=max_grade, source=f"track file {path}",
            lat_lon_order=lat_lon_order, labels=table.labels(), columns=tuple(shown), cells={"x": bad_lon, "y": bad_lat,
                                                                 "z": bad_alt},
            provenance=prov, steps=first,
            no_elevation=("flat=True: the file's altitudes are ignored" if flat else
                          "the file has no altitude column" if j["alt"] is None else
                          "the file's altitude column has no value"),
            elevation_hint="flat=False (no --flat)" if flat else
                           "an altitude column (alt, altitude, elevation) in metres")


def _arc_length_samples(s, P, closed: bool) -> bool:
    """Whether points (n, 3) with an ``s`` column are samples at uniform arc length (a
    processed file: ``s`` uniformly spaced, the chords within 1 % of the spacing, the closing
    chord of a loop too: the constructor takes its period as the last ``s`` plus one spacing)."""
    ds = np.diff(s)
    chord = np.linalg.norm(np.diff(P, axis=0), axis=1)
    h = float(np.median(ds)) if len(ds) else 0.0
    closing = float(np.linalg.norm(P[0] - P[-1])) if closed else h
    return bool(h > 0 and np.all(np.abs(ds - h) <= 1e-6 * max(h, 1.0) + 1e-6)
                and np.all(np.abs(chord - ds) <= 0.01 * h) and abs(closing - h) <= 0.01 * h)


def _csv_widths(data: dict, prov: dict, half, track_width):
    """The half-widths of a CSV track: the file's, or ``half`` each side when ``track_width``
    is given (the step ``widths_set`` added to ``prov``)."""
    if half is None:
        return data.get("width_left"), data.get("width_right")
    had = [k for k in ("width_left", "width_right") if k in data]
    prov["processing_steps"] = list(prov.get("processing_steps", [])) + [
        _widths_set_step(track_width, had)]
    return half, half

def _flat_provenance(prov: dict, n: int, column: str, flat: bool = True) -> dict:
    """``prov`` with the step ``flattened`` and the assumed flat elevation (``flat``; else
    ``prov`` as it is)."""
    if not flat:
        return prov
    prov = dict(prov)
    prov["processing_steps"] = list(prov.get("processing_steps", [])) + [_flattened_step(n)]
    prov["assumptions"] = [a for a in prov.get("assumptions", []) if a.get("quantity") != "elevation"]
    prov["assumptions"].append(_flat_assumption(
        f"flat=True: the file's elevations ({column}) are ignored", "flat=False"))
    return prov


def refuse_lat_lon_order(order, what: str) -> None:
    """The option ``lat_lon_order`` checked (:func:`pyomo_lap.track.checks.check_lat_lon_order`)
    for a track that has no latitudes and longitudes (``what``: e.g. ``'track file X'``).

    Raises
    ------
    ValueError
        A value not in :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS`, or any but ``'auto'``:
        one line naming the option, its value and the track.
    """
    if check_lat_lon_order(order) != "auto":
        raise ValueError(f"lat_lon_order={order!r} applies to GPS files (lat/lon); {what} has "
                         "x/y coordinates: expected lat_lon_order='auto' (no --lat-lon-order)")


def is_gps_table(table) -> bool:
    """Whether a CSV file is a GPS logger's trace: latitude and longitude columns, no x, y."""
    names = table.names
    return (formats.column_index(names, "lat") is not None
            and formats.column_index(names, "lon") is not None
            and formats.column_index(names, "x") is None
            and formats.column_index(names, "y") is None)


def _csv_provenance(provenance, path: Path, read: dict) -> dict:
    """The provenance of a centreline CSV file: the file, and, when it is not read as the plain
    ``x,y,z`` layout (another separator, a decimal comma, the header in a comment line, the
    tool's own export, units in the header), the processing step ``file_read`` saying how;
    a file without ``z`` (TUM layout) is flat, an assumed value."""
    prov = dict(provenance or {})
    prov.setdefault("source_file", str(path.resolve()))
    table = read.get("table")
    if table is None:
        return prov
    own = any(n in ("x_spine", "y_spine", "z_spine") for n in table.names)
    tum = table.comment_header or any(n.startswith("w_tr_") for n in table.names)
    if (table.delimiter != "," or table.decimal_comma or table.comment_header or own or tum
            or read.get("z_missing") or any(table.units)):
        layout = ("the TUM racetrack database's layout (x_m, y_m, w_tr_right_m, w_tr_left_m)"
                  if tum else "a pyomo_lap trajectory.csv (x_spine, y_spine, z_spine, widths)"
                  if own else "a centreline (x, y, z)")
        used = {a for k in _COLUMN_ALIASES for a in _COLUMN_ALIASES[k]}
        units = [h.strip() for h, u, n in zip(table.header, table.units, table.names)
                 if u and n in used]
        detail = (f"read as {layout}; {table.how}"
                  + (f"; units from the header: {', '.join(units[:6])}"
                     + (" ..." if len(units) > 6 else "") if units else "")
                  + ("; no z column: the track is flat (z = 0)" if read.get("z_missing") else ""))
        prov["processing_steps"] = list(prov.get("processing_steps", [])) + [
            step("file_read", detail, method=f"{layout.split(' (')[0]}; {table.how}",
                 count=len(table.rows))]
    if read.get("z_missing"):
        prov["assumptions"] = list(prov.get("assumptions", [])) + [assumption(
            "elevation", 0.0, "m", "the file has no z column: the track is flat",
            "a z_m column (elevation in metres)")]
    return prov


def read_csv_columns(path: Path, origin: dict | None = None, table=None,
                      info: dict | None = None):
    """Read a track CSV into float arrays keyed by canonical column names.

    The file is read by :func:`pyomo_lap.track.formats.read_table`: separator ``,``, ``;`` or
    tab (a ``;`` file may use a decimal comma), a header in a comment line (``# x_m,y_m,
    w_tr_right_m,w_tr_left_m``, the TUM racetrack database), column names with a unit in
    brackets (``x_spine [m]``, the tool's own ``trajectory.csv``); the accepted names are
    :data:`pyomo_lap.track.formats.COLUMNS`. ``z`` may be missing in the TUM layout (a header
    in a comment line, or ``w_tr_*`` columns): it is then 0 (``info['z_missing']``).

    Parameters
    ----------
    path : Path
    origin : dict, optional
        If given, the ``x`` and ``y`` columns are re-centred on their first value in whole
        metres (when it is not 0), taken off each cell *in decimal arithmetic on the cell's
        text* before the conversion to float: a track 1e12 m from the origin keeps every
        digit of the file, and the same track anywhere gives the same numbers. The offsets
        [m] are stored in ``origin`` (``{'x': ..., 'y': ...}``, the columns re-centred).
    table : pyomo_lap.track.formats.Table, optional
        The file already read.
    info : dict, optional
        Gets ``table`` (how the file was read) and ``z_missing``.

    Returns
    -------
    header : list of str
    data : dict of (n,) float arrays, NaN where a cell is empty or not a number
    cells : dict ``{column: {row index: cell text}}`` of those cells
    labels : list of str, ``'row k (line l)'`` for each data row

    Raises
    ------
    FileNotFoundError, ValueError
        No file; not a text file; empty; a required column missing (accepted names listed,
        and how the file was read); a column in another unit than expected.
    """
    table = table if table is not None else formats.read_table(path)
    names = table.names
    idx = {}
    for key in _COLUMN_ALIASES:
        j = formats.column_index(names, key)
        if j is not None:
            idx[key] = j
    for key, j in idx.items():
        unit = table.units[j]
        if unit and unit.lower() not in formats.UNITS[key]:
            raise ValueError(f"track file {path}: column {table.header[j].strip()!r} is in "
                             f"{unit!r}; expected {' or '.join(formats.UNITS[key])} (the "
                             f"{key} column, SI units)")
    tum = table.comment_header or any(n.startswith("w_tr_") for n in names)
    z_missing = "z" not in idx and tum and "x" in idx and "y" in idx
    for req in ("x", "y", "z"):
        if req not in idx and not (req == "z" and z_missing):
            raise ValueError(f"track file {path}: missing required column {req!r} "
                             f"(accepted names: {', '.join(_COLUMN_ALIASES[req])}); "
                             f"header is {table.header}{_header_hint(table)}")
    out, cells = {}, {}
    texts = {}
    for k, j in idx.items():
        out[k], bad, texts[k] = formats.column_values(table, j)
        if bad:
            cells[k] = bad
    if z_missing:
        out["z"] = np.zeros(len(table.rows))
    if origin is not None and len(table.rows):
        ok = np.isfinite(out["x"]) & np.isfinite(out["y"])
        if ok.any():
            first = int(np.argmax(ok))
            for k in ("x", "y"):
                if abs(out[k][first]) >= 0.5:
                    out[k], origin[k] = _recentred_column(out[k], texts[k], first)
    if info is not None:
        info.update(table=table, z_missing=bool(z_missing))
    header = [h.strip().lower() for h in table.header]
    return header, out, cells, table.labels()


def _header_hint(table) -> str:
    """Why a header may not have been understood: how the file was read, one column only
    (another separator?), latitude without longitude or the reverse."""
    hint = f" (read with {table.how}"
    if len(table.header) == 1:
        hint += "; the header is one column: separate the columns with ',', ';' or a tab"
    has = {q for q in ("lat", "lon") if formats.column_index(table.names, q) is not None}
    if len(has) == 1:
        hint += (f"; a GPS file needs both a latitude and a longitude column (accepted names: "
                 f"{', '.join(formats.COLUMNS['lat'])}; {', '.join(formats.COLUMNS['lon'])})")
    return hint + "; the formats: docs/tracks.md)"


def _recentred_column(values: np.ndarray, texts: list, first: int):
    """``values`` minus the value of row ``first`` in whole metres, computed exactly from the
    cells' text (:class:`decimal.Decimal`); NaN cells stay NaN. Returns (values, offset [m])."""
    ctx = decimal.Context(prec=80)
    try:
        offset = ctx.to_integral_value(decimal.Decimal(texts[first]))
    except (decimal.InvalidOperation, ValueError):
        offset = decimal.Decimal(round(float(values[first])))
    out = values.copy()
    for i, t in enumerate(texts):
        if not math.isfinite(values[i]):
            continue
        try:
            out[i] = float(ctx.subtract(decimal.Decimal(t), offset))
        except (decimal.InvalidOperation, ValueError):   # a form float() reads but Decimal not
            out[i] = values[i] - float(offset)
    return out, float(offset)
