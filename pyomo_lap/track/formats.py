"""Reading the track files users bring: CSV tables in their many dialects, and KML lines.

:func:`read_table` reads a CSV file of any of the layouts :meth:`pyomo_lap.track.geometry.Track.from_csv`
accepts, and says how it read it:

* the separator: ``,``, ``;`` or a tab, found from the header line (a ``;`` file with a
  decimal comma, ``48,1234``, has its numbers read with the comma as the decimal mark);
* the header: the first line that is not empty, or, when the file starts with comment lines
  (``#``) and the first of them names columns (the TUM racetrack database writes
  ``# x_m,y_m,w_tr_right_m,w_tr_left_m``), that comment line;
* the column names, case-insensitive, with an optional unit in brackets, ``x [m]``,
  ``lat (deg)``: the tool's own ``trajectory.csv`` (``x_spine [m]``, ``width_left [m]``)
  and ``Track.to_csv`` files (``x_m``) read alike. :data:`COLUMNS` lists the accepted names
  of each quantity and :data:`UNITS` the units accepted for it.

:func:`read_kml_lines` reads the LineStrings of a KML file (longitude, latitude and, if given,
altitude per point), whatever the spacing of their coordinate lists (fastest-lap's files
separate every number by ``", "``).

:func:`read_fastest_lap_xml` reads the track files of fastest-lap (github
juanmanzanero/fastest-lap, ``database/tracks/<circuit>/<circuit>.xml``): the fields of its
``<data>`` as arrays, in the file's frame.

Nothing here checks the data: that is :mod:`pyomo_lap.track.checks`, after the loaders
(:mod:`pyomo_lap.track.csv_files`, :mod:`~pyomo_lap.track.gps`,
:mod:`~pyomo_lap.track.boundaries`) have put the columns together. Which loader reads which
file: the registry of track formats, :mod:`pyomo_lap.track.loading`. :func:`parse_table` reads
a file's text (also its first lines: the CSV dialects' ``sniff``).
"""
from __future__ import annotations

import csv
import dataclasses
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["COLUMNS", "UNITS", "Table", "read_table", "split_header", "read_kml_lines",
           "column_index", "read_fastest_lap_xml", "FASTEST_LAP_FIELDS", "csv_delimiter",
           "parse_table"]

COLUMNS = {
    "s": ("s_m", "s"),
    "x": ("x_m", "x", "x_spine"),
    "y": ("y_m", "y", "y_spine"),
    "z": ("z_m", "z", "z_spine"),
    "width_left": ("width_left_m", "width_left", "w_left", "wl", "w_tr_left_m", "w_tr_left"),
    "width_right": ("width_right_m", "width_right", "w_right", "wr", "w_tr_right_m",
                    "w_tr_right"),
    "banking": ("banking_rad", "banking", "bank", "nu"),
    "lat": ("lat", "latitude", "lat_deg", "latitude_deg", "gps_lat", "gps_latitude", "lat_dd"),
    "lon": ("lon", "lng", "long", "longitude", "lon_deg", "longitude_deg", "gps_lon",
            "gps_long", "gps_lng", "gps_longitude", "lon_dd"),
    "alt": ("alt", "altitude", "elevation", "elev", "ele", "height", "alt_m", "altitude_m",
            "elevation_m", "gps_alt", "gps_altitude", "height_m"),
}
"""The accepted column names of each quantity (lower case; the first match in this order is
used). ``x, y, z, s, width_left, width_right`` [m] and ``banking`` [rad] make a centreline
file; ``lat, lon`` [deg] and ``alt`` [m] a GPS logger's file."""

UNITS = {"s": ("m",), "x": ("m",), "y": ("m",), "z": ("m",), "width_left": ("m",),
         "width_right": ("m",), "banking": ("rad",), "lat": ("deg", "degree", "degrees", "°"),
         "lon": ("deg", "degree", "degrees", "°"), "alt": ("m",)}
"""Units accepted in a header's brackets for each quantity (a column without a unit is taken
in the unit of :data:`COLUMNS`: metres, radians, degrees)."""

_UNIT = re.compile(r"^(?P<name>.*?)\s*[\[(]\s*(?P<unit>[^\])]*?)\s*[\])]\s*$")
_DELIMITERS = {",": "','", ";": "';'", "\t": "a tab"}


def split_header(cell: str):
    """``'x [m]'`` -> ``('x', 'm')``, ``'Lat (deg)'`` -> ``('lat', 'deg')``, ``'x_m'`` ->
    ``('x_m', '')``: the column's name (lower case, spaces as ``_``) and unit."""
    text = cell.strip().lstrip("\ufeff").strip()
    m = _UNIT.match(text)
    name, unit = (m.group("name"), m.group("unit")) if m else (text, "")
    name = re.sub(r"\s+", "_", name.strip().lower())
    return name, unit.strip()


def column_index(names: list, quantity: str) -> Optional[int]:
    """The index of the first column named as :data:`COLUMNS` lists for ``quantity``, or
    None."""
    for alias in COLUMNS[quantity]:
        if alias in names:
            return names.index(alias)
    return None


@dataclasses.dataclass
class Table:
    """A CSV file as :func:`read_table` read it.

    Attributes
    ----------
    header : list of str
        The header cells as written.
    names, units : list of str
        Each column's name (lower case) and unit ('' if none), :func:`split_header`.
    rows : list of list of str
        The data rows' cells (a decimal comma already turned into a point).
    lines : list of int
        The file's line number of each data row.
    delimiter : str
        The separator found.
    decimal_comma : bool
        The numbers were written with a decimal comma.
    comment_header : bool
        The header was a comment line (``# x_m,y_m,...``).
    """

    header: list
    names: list
    units: list
    rows: list
    lines: list
    delimiter: str = ","
    decimal_comma: bool = False
    comment_header: bool = False

    @property
    def how(self) -> str:
        """How the file was read, in words: ``"columns separated by ';', decimal comma"``."""
        parts = [f"columns separated by {_DELIMITERS.get(self.delimiter, repr(self.delimiter))}"]
        if self.decimal_comma:
            parts.append("numbers with a decimal comma")
        if self.comment_header:
            parts.append("the header in a comment line")
        return ", ".join(parts)

    def labels(self) -> list:
        """``'row k (line l)'`` for each data row."""
        return [f"row {i + 1} (line {ln})" for i, ln in enumerate(self.lines)]


def csv_delimiter(line: str) -> str:
    """The separator of a CSV file's first (header) line: the most frequent of ``,``, ``;`` and tab (``,`` when
    none is there)."""
    counts = {d: line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _names_columns(cells: list) -> bool:
    """Whether a comment line's cells name known columns (two or more of them)."""
    known = {a for aliases in COLUMNS.values() for a in aliases}
    return sum(split_header(c)[0] in known for c in cells) >= 2


def _numeric(cells: list) -> bool:
    """Whether a row's first two cells are numbers (with a decimal point or comma)."""
    try:
        [float(c.strip().replace(",", ".")) for c in cells[:2]]
    except ValueError:
        return False
    return len(cells) >= 2


def read_table(path) -> Table:
    """Read a CSV track file (see the module docstring for what is recognised).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Table

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a text (UTF-8) file, not readable as CSV, or empty; the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"track file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"track file {path}: not a text (UTF-8) CSV file: {exc.reason}") from None
    return parse_table(text, path)


def parse_table(text: str, path="text") -> Table:
    """:func:`read_table` of a CSV file's text (also of its first lines only: what a track
    format's ``sniff`` sees, :mod:`pyomo_lap.track.loading`).

    Parameters
    ----------
    text : str
    path : str or Path
        Named in the messages.

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        Not readable as CSV, or empty.
    """
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    head = first.lstrip()[1:] if first.lstrip().startswith("#") else first
    delim = csv_delimiter(head)
    try:
        reader = csv.reader(lines, delimiter=delim)
        records = [(reader.line_num, r) for r in reader]
    except csv.Error as exc:
        raise ValueError(f"track file {path}: not a readable CSV file: {exc}") from None
    header, candidate, comment_header, rows, numbers = None, None, False, [], []
    for ln, r in records:
        if not r or not "".join(r).strip():
            continue
        if r[0].lstrip().startswith("#"):
            if header is None and candidate is None and _names_columns([r[0].lstrip()[1:]] + r[1:]):
                candidate = [r[0].lstrip()[1:].strip()] + r[1:]
            continue
        if header is None:
            if candidate is not None and _numeric(r):     # '# x_m,y_m,...' then numbers
                header, comment_header = candidate, True
            else:
                header = r
                continue
        rows.append(r)
        numbers.append(ln)
    if header is None:
        raise ValueError(f"track file {path}: empty file (expected a header row x,y,z and one "
                         "row per point)")
    decimal_comma = False
    if delim == ";" and rows:
        cells = [c.strip() for r in rows[:50] for c in r if c.strip()]
        if cells and any(re.fullmatch(r"[-+]?\d*,\d+([eE][-+]?\d+)?", c) for c in cells):
            decimal_comma = True
            rows = [[c.replace(",", ".") for c in r] for r in rows]
    names, units = zip(*(split_header(h) for h in header)) if header else ((), ())
    return Table(list(header), list(names), list(units), rows, numbers, delim, decimal_comma,
                 comment_header)


def column_values(table: Table, j: int):
    """Column ``j`` of the table as floats (NaN where a cell is empty or not a finite
    number), the texts of those bad cells ``{row index: text}``, and every cell's text."""
    out = np.empty(len(table.rows))
    bad, texts = {}, []
    for i, row in enumerate(table.rows):
        cell = row[j].strip() if j < len(row) else ""
        try:
            v = float(cell)
        except ValueError:
            v = math.nan
        if not math.isfinite(v):
            bad[i] = cell
            v = math.nan
        out[i] = v
        texts.append(cell)
    return out, bad, texts


# ---------------------------------------------------------------------------------------
# KML
# ---------------------------------------------------------------------------------------
def _coordinates(text: str, where: str) -> np.ndarray:
    """A KML ``<coordinates>`` text as (n, 3) longitude, latitude [deg], altitude [m] (NaN
    when the file gives none). Tuples are ``lon,lat[,alt]`` separated by white space (the
    standard); a list of numbers all separated by commas (``lon, lat, alt, lon, ...``) is read
    three at a time."""
    tokens = text.split()
    if tokens and all(re.fullmatch(r"[^,]+(,[^,]+){1,2}", t) for t in tokens):
        tuples = [t.split(",") for t in tokens]
    else:
        numbers = [t for t in re.split(r"[\s,]+", text.strip()) if t]
        if len(numbers) % 3:
            raise ValueError(f"{where}: {len(numbers)} numbers in <coordinates>, expected "
                             "longitude,latitude,altitude triples (or longitude,latitude "
                             "pairs separated by white space)")
        tuples = [numbers[k:k + 3] for k in range(0, len(numbers), 3)]
    out = np.full((len(tuples), 3), np.nan)
    for i, t in enumerate(tuples):
        try:
            out[i, :len(t)] = [float(v) for v in t]
        except ValueError:
            raise ValueError(f"{where}: point {i} of <coordinates> is {','.join(t)!r}; expected "
                             "numbers longitude,latitude[,altitude]") from None
    return out


def read_kml_lines(path) -> list:
    """The LineStrings of a KML file, in the file's order.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    list of dict
        ``name`` (of the enclosing Placemark, '' if none) and ``coordinates`` (n, 3):
        longitude, latitude [deg], altitude [m] (NaN where not given).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a KML (XML) file, no LineString, or coordinates that are not numbers.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"track file not found: {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"track file {path}: not a valid KML (XML) file: {exc}") from None

    def local(tag):
        return tag.rsplit("}", 1)[-1]

    out = []

    def walk(node, name):
        if local(node.tag) == "Placemark":
            nm = next((c.text or "" for c in node if local(c.tag) == "name"), "")
            name = nm.strip()
        if local(node.tag) == "LineString":
            coords = next((c for c in node.iter() if local(c.tag) == "coordinates"), None)
            if coords is not None and (coords.text or "").strip():
                where = f"track file {path}, LineString {len(out) + 1}" + (f" ({name!r})" if name else "")
                out.append({"name": name, "coordinates": _coordinates(coords.text, where)})
            return
        for child in node:
            walk(child, name)

    walk(root, "")
    if not out:
        raise ValueError(f"track file {path}: no LineString with coordinates; expected the "
                         "track's boundaries as LineStrings (left and right)")
    return out


# ---------------------------------------------------------------------------------------
# fastest-lap XML
# ---------------------------------------------------------------------------------------
FASTEST_LAP_FIELDS = {
    "arclength": "arc length s of the centreline [m], from 0, uniform",
    "centerline/x": "centreline, east [m]",
    "centerline/y": "centreline, SOUTH [m] (fastest-lap's y = -R (latitude - origin))",
    "centerline/z": "centreline, DOWN [m] (-altitude; 3D files only)",
    "left_boundary/x": "boundary labelled left [m]",
    "left_boundary/y": "", "left_boundary/z": "",
    "right_boundary/x": "boundary labelled right [m]",
    "right_boundary/y": "", "right_boundary/z": "",
    "yaw": "heading, angle of the tangent from x towards y [rad]",
    "yaw_dot": "plan-view curvature d(yaw)/ds in the file's frame [1/m]",
    "nl": "distance from the centreline to the left boundary [m] (labelled 'rad')",
    "nr": "distance from the centreline to the right boundary [m] (labelled 'rad')",
    "pitch": "3D files: pitch [rad]", "roll": "3D files: roll (banking) [rad]",
}
"""The fields of fastest-lap's ``<data>`` read by :func:`read_fastest_lap_xml` (what each
means: fastest-lap's ``src/core/applications/circuit_preprocessor.hpp``, the constructor from
an XML document and ``transform_coordinates``)."""

_FL_REQUIRED = ("arclength", "centerline/x", "centerline/y", "left_boundary/x",
                "left_boundary/y", "right_boundary/x", "right_boundary/y", "yaw_dot", "nl", "nr")


def read_fastest_lap_xml(path) -> dict:
    """A fastest-lap track file (``<circuit format="discrete" type="closed|open"
    dimensions="2|3">``), its fields as they are in the file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        ``closed`` (bool), ``dimensions`` (2 or 3), ``track_length`` [m] (the header's),
        ``number_of_points``, ``gps`` (the ``GPS_parameters``: ``origin_longitude``,
        ``origin_latitude`` [deg], ``earth_radius`` [m], ``reference_latitude`` [deg]; {} if
        absent) and one (n,) float array per field of :data:`FASTEST_LAP_FIELDS` found
        (keys as there: ``'centerline/x'`` ...), in the file's frame: x east, y south, z down.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not XML; not a ``<circuit format="discrete">``; a ``type`` other than closed/open or
        ``dimensions`` other than 2/3; a required field missing (arclength, centreline,
        both boundaries, yaw_dot, nl, nr; z of the three lines in a 3D file); a value that
        is not a number; a field whose length is not ``number_of_points``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"track file not found: {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"track file {path}: not a valid XML file: {exc}") from None
    where = f"track file {path}"
    if root.tag != "circuit" or root.get("format") != "discrete":
        raise ValueError(f"{where}: root <{root.tag} format={root.get('format')!r}>; expected "
                         '<circuit format="discrete"> (a fastest-lap track file)')
    kind, dims = root.get("type"), root.get("dimensions", "2")
    if kind not in ("closed", "open") or dims not in ("2", "3"):
        raise ValueError(f"{where}: <circuit type={kind!r} dimensions={dims!r}>; expected type "
                         "'closed' or 'open' and dimensions '2' or '3'")
    data = root.find("data")
    if data is None:
        raise ValueError(f"{where}: no <data>; expected the track's fields in <data>")
    out = dict(closed=kind == "closed", dimensions=int(dims))
    n = data.get("number_of_points")
    required = _FL_REQUIRED + (("centerline/z", "left_boundary/z", "right_boundary/z")
                               if dims == "3" else ())
    for key in FASTEST_LAP_FIELDS:
        node = data.find(key)
        if node is None:
            if key in required:
                raise ValueError(f"{where}: no <data>/{key}; expected it ({FASTEST_LAP_FIELDS[key] or key})")
            continue
        out[key] = _fl_numbers(node.text or "", f"{where}, <{key}>")
    lengths = {k: len(v) for k, v in out.items() if isinstance(v, np.ndarray)}
    n = int(n) if n is not None and n.strip().isdigit() else lengths["arclength"]
    bad = {k: m for k, m in lengths.items() if m != n}
    if bad:
        raise ValueError(f"{where}: fields with a number of values other than "
                         f"number_of_points = {n}: {bad}")
    head = root.find("header/track_length")
    out["number_of_points"] = n
    out["track_length"] = (_fl_numbers(head.text or "", f"{where}, <track_length>")[0]
                           if head is not None else math.nan)
    gps = root.find("GPS_parameters")
    out["gps"] = {} if gps is None else {
        c.tag: float(_fl_numbers(c.text or "", f"{where}, <{c.tag}>")[0]) for c in gps
        if isinstance(c.tag, str)}
    return out


def _fl_numbers(text: str, where: str) -> np.ndarray:
    """A comma-separated list of numbers (fastest-lap's fields) as a float array."""
    cells = [c for c in re.split(r"[\s,]+", text.strip()) if c]
    try:
        a = np.array([float(c) for c in cells], dtype=float)
    except ValueError:
        bad = next(c for c in cells if not _is_number(c))
        raise ValueError(f"{where}: {bad!r} is not a number; expected comma-separated "
                         "numbers") from None
    if not len(a) or not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: {len(a)} values, {int(np.sum(~np.isfinite(a)))} not finite; "
                         "expected finite numbers")
    return a


def _is_number(c: str) -> bool:
    try:
        float(c)
        return True
    except ValueError:
        return False
