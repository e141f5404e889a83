"""Reading a logged lap: MoTeC i2 and AiM RaceStudio CSV exports, and a generic CSV.

Three layouts are read, told apart by the file's first cells and the rows that follow, never
by the file's name:

* **MoTeC i2** (*File > Export > CSV*): a header block of ``"key","value"`` rows starting with
  ``"Format","MoTeC CSV File"`` (``Venue``, ``Vehicle``, ``Driver``, ``Device``, ``Log Date``,
  ``Sample Rate``, ``Beacon Markers``, ``Segment Times`` ...), blank lines, the channel-name row
  (``"Time","Distance","Ground Speed","G Force Lat",...``), the unit row (``"s","m","km/h",
  "G",...``), blank lines, then the samples (quoted numbers).
* **AiM RaceStudio** 2/3 (*Export > CSV*): the same shape, the block starting with
  ``"Format","AiM CSV File"`` (``Session``, ``Vehicle``, ``Racer``, ``Track``, ``Date``,
  ``Sample Rate``, ``Beacon Markers``, ``Segment Times`` ...); names such as ``GPS Speed``,
  ``GPS LatAcc``, ``Distance on GPS Speed``.
* **a generic CSV**: one header row, the unit in brackets (``Speed [km/h]``,
  ``Distance (m)``) or a unit row under the names; separator ``,``, ``;`` or tab (a decimal
  comma with ``;``).

The channels are found by their names (:data:`CHANNEL_ALIASES`, case and spaces ignored; the
first alias present wins) and converted to SI with pint from the unit the file gives (``km/h``,
``kph``, ``mph``, ``m/s``; ``G``/``g`` as standard gravity; ``deg``, ``rad``; ``m``, ``km``,
``ft``, ``mi``; ``s``, ``ms``). An outing of several laps (beacon markers, or a lap column)
is cut into laps and one is kept: the fastest complete one, or the one asked for.

Every error is one line naming the file, the line and the column, the value and what was
expected.
"""
from __future__ import annotations

import csv
import functools
import re
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..track.formats import csv_delimiter, split_header

pint, pint_available = attempt_import("pint")

__all__ = ["Alias", "CHANNEL_ALIASES", "FORMATS", "read_telemetry", "alias_markdown",
           "unit_factor", "lap_table"]


class Alias(NamedTuple):
    """One logged quantity: its unit in what :func:`read_telemetry` returns (SI; ``%``,
    ``bar``, ``rpm`` and ``-`` as engineers read them), its meaning and its accepted names."""

    unit: str
    meaning: str
    names: tuple


CHANNEL_ALIASES = {
    "time": Alias("s", "time since the start of the log", (
        "time", "t", "elapsed_time", "elapsed", "session_time", "time_s", "t_s", "lap_time",
        "laptime", "timestamp")),
    "distance": Alias("m", "distance travelled (restarted at 0 on the lap kept)", (
        "distance", "corr_dist", "corr_distance", "distance_on_gps_speed",
        "distance_on_vehicle_speed", "lap_distance", "lap_dist", "lapdist", "gps_distance",
        "dist", "odometer", "s", "distance_m", "dist_m", "s_m")),
    "speed": Alias("m/s", "speed over ground", (
        "ground_speed", "corr_speed", "vehicle_speed", "gps_speed", "speed", "drive_speed",
        "velocity", "v", "speed_kmh", "speed_kph", "speed_mps", "speed_ms", "speed_mph",
        "v_kmh", "v_mps")),
    "a_x": Alias("m/s^2", "longitudinal acceleration, + forward", (
        "g_force_long", "g_long", "longitudinal_g", "long_g", "gps_lonacc", "inlineacc",
        "inline_acc", "longacc", "long_acc", "acc_long", "accel_long", "a_x", "ax")),
    "a_y": Alias("m/s^2", "lateral acceleration, as logged (the run's: "
                 "+ to the left)", (
        "g_force_lat", "g_lat", "lateral_g", "lat_g", "gps_latacc", "lateralacc", "lateral_acc",
        "latacc", "lat_acc", "acc_lat", "accel_lat", "a_y", "ay")),
    "steering_wheel_angle": Alias("rad", "steering-wheel angle (not the road wheels')", (
        "steered_angle", "steering_angle", "steering_wheel_angle", "steering", "steer_angle",
        "swa")),
    "throttle": Alias("%", "throttle position", (
        "throttle_pos", "throttle_position", "throttle", "tps", "pedal_pos", "accel_pedal")),
    "brake_pressure": Alias("bar", "brake pressure (front)", (
        "brake_pressure_front", "brake_pres_front", "brake_press_front", "brake_pressure",
        "brake_press", "brake")),
    "engine_speed": Alias("rpm", "engine speed", (
        "engine_rpm", "engine_speed", "rpm", "n_engine")),
    "gear": Alias("-", "gear engaged", ("gear", "gear_pos", "gear_position")),
    "lap": Alias("-", "lap number (cuts an outing into laps)", (
        "lap", "lap_number", "lap_no", "lapnumber", "lap_num")),
}
"""Each logged quantity (the key: its column in what :func:`read_telemetry` returns) and the
names it is found under in a logger's file, lower case with ``_`` for spaces (``Ground Speed``
is ``ground_speed``). ``time``, ``distance``, ``speed`` place the lap; ``a_x``, ``a_y`` are
compared with the run's channels of those names; the others are kept for the table."""

FORMATS = {"motec": "MoTeC i2 CSV export", "aim": "AiM RaceStudio CSV export",
           "generic": "generic CSV"}
"""The layouts read, as :func:`read_telemetry` names them in ``info['format']``."""

_SIGNATURES = {"motec csv file": "motec", "aim csv file": "aim"}
_UNIT_WORDS = {"g": "g0", "kph": "km/h", "kmh": "km/h", "mps": "m/s", "#": "", "gear": "",
               "%": "percent", "deg": "degree", "°": "degree", "bar": "bar", "rpm": "rpm",
               "kpa": "kPa", "mph": "mph", "-": "", "ft": "ft", "mi": "mile"}
_SUFFIX_UNITS = {"kmh": "km/h", "kph": "km/h", "mps": "m/s", "ms": "m/s", "mph": "mph"}


@functools.lru_cache(maxsize=1)
def _ureg():
    """The unit registry of pint (built once; no disk cache, see
    pyomo_lap.ocp.common.pyomo_units)."""
    return pint.UnitRegistry(cache_folder=None)


def unit_factor(unit: str, target: str) -> Optional[float]:
    """The factor from ``unit`` (as a logger writes it: ``km/h``, ``G``, ``deg``, ``%``) to
    ``target`` (SI, or ``%``, ``bar``, ``rpm``, ``-``), or None when pint does not know the
    unit or it is not of the target's dimension (an angle for ``rad``)."""
    u = unit.strip()
    u = _UNIT_WORDS.get(u.lower(), u)
    if target in ("-", "%"):        # a count or a percentage: no conversion
        return 1.0 if u in ("", "percent" if target == "%" else "") else None
    if not u:
        return None
    try:
        q, to = _ureg().Quantity(1.0, u), _ureg().Quantity(1.0, target.replace("^", "**"))
        if q.dimensionality != to.dimensionality:
            return None
        if target in ("rad", "deg", "degree") and \
                str(q.units) not in ("degree", "radian", "turn", "arcminute"):
            return None             # a percentage or a count is not an angle
        return float(q.to(to.units).magnitude)
    except Exception:   # pint's UndefinedUnitError, DimensionalityError, a syntax error
        return None


def _norm(cell: str):
    """``'Ground Speed'`` -> ``('ground_speed', '')``; ``'Speed [km/h]'`` -> ``('speed',
    'km/h')``: a name (lower case, ``_`` for spaces and dashes) and a unit in brackets."""
    name, unit = split_header(cell)
    return re.sub(r"[\s\-.]+", "_", name).strip("_"), unit


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _trim(row: list) -> list:
    """A row without its trailing empty cells."""
    k = len(row)
    while k and not row[k - 1].strip():
        k -= 1
    return row[:k]


def _records(path: Path):
    """The file's rows ``[(line, cells)]`` (cells stripped, a decimal comma turned into a
    point), the separator and whether numbers had a decimal comma."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"logged lap {path}: not a text (UTF-8) CSV file: {exc.reason}") from None
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    delim = csv_delimiter(first)         # the track files' rule
    reader = csv.reader(lines, delimiter=delim)
    try:
        rows = [(reader.line_num, [c.strip() for c in r]) for r in reader]
    except csv.Error as exc:
        raise ValueError(f"logged lap {path}: not a readable CSV file: {exc}") from None
    comma = delim == ";" and any(re.fullmatch(r"[-+]?\d*,\d+([eE][-+]?\d+)?", c)
                                 for _, r in rows[:200] for c in r)
    if comma:
        rows = [(ln, [c.replace(",", ".") for c in r]) for ln, r in rows]
    return rows, delim, comma


def _layout(rows: list):
    """``(names, units or None, first data)``: indices into ``rows`` of the channel-name row,
    the unit row under it and the first data row; the first row of two or more texts that is
    followed (blank rows skipped) either by a unit row no wider than it and then numbers, or
    directly by numbers, the data no wider than the names."""
    nonblank = [i for i, (_, r) in enumerate(rows) if "".join(r)]
    nxt = {a: b for a, b in zip(nonblank, nonblank[1:])}

    def numeric(i):
        cells = _trim(rows[i][1])
        return len(cells) >= 2 and _is_number(cells[0]) and \
            sum(map(_is_number, cells)) >= 0.5 * len(cells)

    for i in nonblank:
        names = _trim(rows[i][1])
        if len(names) < 2 or any(_is_number(c) for c in names if c):
            continue
        j = nxt.get(i)
        if j is None:
            break
        if numeric(j) and len(_trim(rows[j][1])) <= len(names):
            return i, None, j
        units = _trim(rows[j][1])
        k = nxt.get(j)
        if (k is not None and len(units) <= len(names) and units
                and not any(_is_number(c) for c in units if c)
                and numeric(k) and len(_trim(rows[k][1])) <= len(names)
                and len(_trim(rows[k][1])) > len(names) // 2):
            return i, j, k
    return None


def _seconds(cell: str) -> float:
    """``'1:11.450'`` or ``'71.450'`` -> 71.45 [s] (NaN if neither)."""
    try:
        parts = [float(p) for p in cell.split(":")]
    except ValueError:
        return float("nan")
    return float(sum(p * 60.0 ** k for k, p in enumerate(reversed(parts))))


def _find(names: list, key: str) -> Optional[int]:
    for alias in CHANNEL_ALIASES[key].names:
        if alias in names:
            return names.index(alias)
    return None


def _columns(where, rows, lay, fmt):
    """The columns of the data block: ``(header cells, names, units, values (n, m),
    file lines (n,), bad cells {(row, col): text})``."""
    i, j, k = lay
    header = _trim(rows[i][1])
    if fmt != "generic" and j is None:
        ln = rows[k][0]
        raise ValueError(f"{where}: line {ln}, under the channel names of line {rows[i][0]}, "
                         f"holds numbers ({', '.join(rows[k][1][:3])}, ...); expected the unit "
                         "row (\"s\",\"m\",\"km/h\",...) that the export writes there")
    names, units = zip(*(_norm(c) for c in header))
    units = list(units)
    if j is not None:
        urow = rows[j][1] + [""] * len(header)
        units = [u or urow[c] for c, u in enumerate(units)]
    data = [(ln, r) for ln, r in rows[k:] if "".join(r)]
    vals = np.full((len(data), len(header)), np.nan)
    bad = {}
    for a, (ln, r) in enumerate(data):
        for c in range(min(len(r), len(header))):
            cell = r[c]
            if not cell:
                continue
            try:
                vals[a, c] = float(cell)
            except ValueError:
                bad[(a, c)] = cell
    lines = np.array([ln for ln, _ in data])
    return header, list(names), units, vals, lines, bad


def _convert(where, header, names, units, speed_unit):
    """``{key: (column, factor, unit as written)}`` of every aliased channel found."""
    found = {}
    for key, al in CHANNEL_ALIASES.items():
        c = _find(names, key)
        if c is None:
            continue
        twice = [k + 1 for k, n in enumerate(names) if n == names[c]]
        if len(twice) > 1:
            raise ValueError(f"{where}: columns {' and '.join(map(str, twice))} are both named "
                             f"{header[c]!r}; expected one {al.meaning} channel (rename or "
                             "drop one in the export)")
        unit = units[c]
        if key == "speed" and not unit:
            suffix = names[c].rsplit("_", 1)[-1] if "_" in names[c] else ""
            unit = _SUFFIX_UNITS.get(suffix, speed_unit or "")
            if not unit:
                raise ValueError(f"{where}: the unit of column {header[c]!r} is not known: write "
                                 "it in the header ('speed [km/h]', 'speed [m/s]', 'speed [mph]') "
                                 "or name the column speed_kmh (or speed_mps)")
        if not unit and key in ("time", "distance", "a_x", "a_y"):
            unit = al.unit             # a generic file's bare 'distance': metres, documented
        f = unit_factor(unit, al.unit)
        if f is None:
            if key in ("time", "distance", "speed"):
                raise ValueError(f"{where}: column {c + 1} {header[c]!r}: unit {unit!r} is not a "
                                 f"unit of {al.meaning} (expected e.g. "
                                 f"{ {'time': 's, ms', 'distance': 'm, km, ft, mi', 'speed': 'km/h, mph, m/s'}[key]})")
            continue                   # e.g. a brake in %: kept under its own name
        found[key] = (c, f, unit)
    return found


def lap_table(t: np.ndarray, s: Optional[np.ndarray], markers, lap_col=None) -> pd.DataFrame:
    """The laps of an outing: from beacon ``markers`` [s] (times inside the log) or from the
    values of a lap column; one row per lap: ``lap`` (1 = the first segment of the log),
    ``t_start [s]``, ``t_end [s]``, ``time [s]``, ``distance [m]`` (NaN without distance),
    ``complete`` (between two beacons; with a lap column, every lap but the first and the
    last when there are three or more)."""
    rows = []
    if lap_col is not None:
        ids = lap_col[np.isfinite(lap_col)]
        uniq = list(dict.fromkeys(ids.tolist()))
        for n, v in enumerate(uniq):
            idx = np.flatnonzero(lap_col == v)
            a, b = idx[0], min(idx[-1] + 1, len(t) - 1)
            rows.append((n + 1, t[a], t[b], s[b] - s[a] if s is not None else np.nan,
                         len(uniq) < 3 or 0 < n < len(uniq) - 1, int(v)))
    else:
        inside = [m for m in markers if t[0] < m < t[-1]]
        edges = [t[0]] + inside + [t[-1]]
        for n in range(len(edges) - 1):
            a, b = edges[n], edges[n + 1]
            d = np.nan if s is None else float(np.interp(b, t, s) - np.interp(a, t, s))
            rows.append((n + 1, a, b, d, (0 < n < len(edges) - 2) or not inside, n + 1))
    tab = pd.DataFrame(rows, columns=["lap", "t_start [s]", "t_end [s]", "distance [m]",
                                      "complete", "label"])
    tab.insert(3, "time [s]", tab["t_end [s]"] - tab["t_start [s]"])
    return tab


def _choose(where, laps: pd.DataFrame, lap: Optional[int]) -> int:
    """The row of ``laps`` kept: ``lap`` (1-based), else the fastest complete lap."""
    if lap is not None:
        if not 1 <= lap <= len(laps):
            raise ValueError(f"{where}: lap {lap} asked for; the file has laps 1-{len(laps)} "
                             f"(complete: {', '.join(str(n) for n in laps['lap'][laps['complete']]) or 'none'})")
        return lap - 1
    ok = laps[laps["complete"]]
    if not len(ok):
        ok = laps
    return int(ok["time [s]"].idxmin())


def _cut(t, cols: dict, a: float, b: float) -> dict:
    """Every channel on the lap ``a <= t <= b`` [s], its ends interpolated at ``a`` and ``b``."""
    inner = (t > a) & (t < b)
    out = {}
    for key, x in cols.items():
        ends = np.interp([a, b], t, x)
        out[key] = np.concatenate([[ends[0]], x[inner], [ends[1]]])
    return out


def _header_block(rows, first_names_row: int) -> dict:
    """The ``key: [values]`` rows above the channel names (MoTeC writes two per line)."""
    block = {}
    for _, r in rows[:first_names_row]:
        cells = r + [""]
        for c in range(0, len(r)):
            if cells[c] and not _is_number(cells[c]) and (c == 0 or not cells[c - 1]):
                vals = []
                for v in cells[c + 1:]:
                    if not v:
                        break
                    vals.append(v)
                block.setdefault(cells[c], vals)
    return block


def _bad_cell(where, used, lines, header, bad):
    """Refuse a text cell in a column that places the lap."""
    for (a, c), text in sorted(bad.items()):
        if c in used:
            raise ValueError(f"{where}: line {lines[a]}, column {c + 1} {header[c]!r}: "
                             f"{text!r} is not a number (expected a number in every row of "
                             "the data)")


def read_telemetry(path, speed_unit: Optional[str] = None, lap: Optional[int] = None):
    """Read a logged lap: a MoTeC i2 or AiM RaceStudio CSV export, or a generic CSV (see the
    module docstring), with a speed column and a distance or a time column
    (:data:`CHANNEL_ALIASES`) and any other channels.

    Without a distance column, the distance is the integral of the speed over the time
    (trapezoidal rule); without a time column, the time is the integral of 1 / speed over the
    distance. An outing of several laps (beacon markers or a lap column) is cut at the laps'
    ends (interpolated there) and one lap is kept: ``lap`` (1 = the log's first segment, the
    out lap), else the fastest complete lap.

    Parameters
    ----------
    path : str or Path
    speed_unit : str, optional
        The speed's unit when the file names none (``km/h``, ``mph``, ``m/s``).
    lap : int, optional
        The lap to keep (1-based, as ``info['laps']`` numbers them).

    Returns
    -------
    (DataFrame, dict)
        Columns ``s`` [m] (from 0), ``t`` [s] (from 0), ``speed`` [m/s], the found channels of
        :data:`CHANNEL_ALIASES` in their units (``a_x``, ``a_y`` [m/s^2] ...) and the other
        numeric channels under their names; and ``info``: ``format`` (of :data:`FORMATS`),
        ``how`` it was read, the columns used (``distance``, ``time``, ``speed``),
        ``derived`` (what was computed), ``units`` of the channels, ``laps`` (a DataFrame,
        :func:`lap_table`), ``lap`` (the one kept), ``lap_time_s``, ``header`` (the export's
        header block, ``{key: [values]}``).

    Raises
    ------
    ValueError
        No channel-name row, an export without its unit row, no speed column, no distance and
        no time column, a unit that is not one of its quantity, a text in a column that
        places the lap, a distance or time that does not increase, a lap that is not in the
        file, fewer than two samples with a speed (a speed column of NaN only), two columns of
        one name for a channel, beacon markers that are not increasing times or all outside
        the log, a path that is not a regular file (a FIFO, a device). One line naming the
        file, the line, the column and the value.
    """
    path = Path(path)
    where = f"logged lap {path}"
    if not path.exists():
        raise ValueError(f"{where}: no such file")
    if not path.is_file():
        raise ValueError(f"{where}: not a regular file (a folder, a FIFO or a device); expected "
                         "a CSV file")
    rows, delim, comma = _records(path)
    if not rows:
        raise ValueError(f"{where}: empty file (expected a header row and one row per sample)")
    fmt = _SIGNATURES.get(rows[0][1][1].lower() if rows[0][1][0].lower() == "format" and
                          len(rows[0][1]) > 1 else "", "generic")
    lay = _layout(rows)
    if lay is None:
        raise ValueError(f"{where}: no row of channel names followed by numbers found (expected "
                         f"a header row such as 'Time [s],Speed [km/h]' or, in a {FORMATS[fmt]}, "
                         "the names row and the unit row)")
    header, names, units, vals, lines, bad = _columns(where, rows, lay, fmt)
    found = _convert(where, header, names, units, speed_unit)
    if "speed" not in found:
        raise ValueError(f"{where}: no speed column (accepted names: "
                         f"{', '.join(CHANNEL_ALIASES['speed'].names)}, with the unit in brackets, "
                         f"e.g. 'speed [km/h]', or a unit row); header is {header} "
                         f"(line {rows[lay[0]][0]}, read as a {FORMATS[fmt]})")
    if "distance" not in found and "time" not in found:
        raise ValueError(f"{where}: no distance and no time column (accepted names: "
                         f"{', '.join(CHANNEL_ALIASES['distance'].names)}; "
                         f"{', '.join(CHANNEL_ALIASES['time'].names)}); header is {header}")
    place = [found[k][0] for k in ("time", "distance", "speed", "lap") if k in found]
    _bad_cell(where, place, lines, header, bad)
    cols = {key: vals[:, c] * f for key, (c, f, _) in found.items()}
    used = {c for c, _, _ in found.values()}
    info = {"format": FORMATS[fmt], "how": _how(delim, comma, fmt), "derived": [], "units": {},
            "speed": header[found["speed"][0]], "header": _header_block(rows, lay[0])}
    for key in ("time", "distance"):
        if key in found:
            info[key] = header[found[key][0]]
    for c, name in enumerate(names):
        if c not in used and name not in cols and np.isfinite(vals[:, c]).sum() >= 2 \
                and not any(cc == c for (_, cc) in bad):
            cols[name] = vals[:, c]
            info["units"][name] = units[c]
    for key in found:
        if key not in ("time", "distance", "speed", "lap"):
            info["units"][key] = CHANNEL_ALIASES[key].unit
    ok = np.isfinite(cols["speed"])
    for key in ("time", "distance"):
        if key in cols:
            ok &= np.isfinite(cols[key])
    if ok.sum() < 2:
        placed = " and ".join(repr(info[k]) for k in ("speed", "time", "distance") if k in info)
        raise ValueError(f"{where}: {int(ok.sum())} rows with a number in each of {placed} "
                         "(all else empty or NaN); expected at least two samples of the lap")
    cols = {k: v[ok] for k, v in cols.items()}
    lines = lines[ok]
    _increasing(where, cols, lines, info)
    cols, info = _one_lap(where, cols, info, lap)
    return _finish(where, cols, info)


def _how(delim, comma, fmt) -> str:
    parts = [FORMATS[fmt], "columns separated by " + {",": "','", ";": "';'",
                                                      "\t": "a tab"}[delim]]
    if comma:
        parts.append("numbers with a decimal comma")
    return ", ".join(parts)


def _increasing(where, cols, lines, info):
    """The time must increase; the distance must not decrease (a car standing still: rows of
    the same distance, the later ones dropped when the time is there)."""
    for key in ("time", "distance"):
        if key not in cols:
            continue
        x = cols[key]
        d = np.diff(x)
        wrong = d < 0 if (key == "distance" and "time" in cols) else d <= 0
        if np.any(wrong):
            k = int(np.argmax(wrong))
            raise ValueError(f"{where}: the {key} column {info[key]!r} does not increase (data "
                             f"row {k + 2}: {x[k + 1]:g} after {x[k]:g}, line {lines[k + 1]} of "
                             "the file); expected the samples in order")


def _one_lap(where, cols, info, lap):
    """Cut the outing into laps (beacon markers or a lap column) and keep one."""
    t = cols.get("time")
    markers = [] if t is None else _markers(where, info["header"].get("Beacon Markers", []), t)
    lap_col = cols.pop("lap", None)
    info["units"].pop("lap", None)
    if t is None or (not markers and lap_col is None):
        if lap not in (None, 1):
            raise ValueError(f"{where}: lap {lap} asked for; the file holds one lap (no beacon "
                             "markers, no lap column, or no time column)")
        info["laps"], info["lap"] = None, 1
        return cols, info
    laps = lap_table(t, cols.get("distance"), markers, lap_col)
    k = _choose(where, laps, lap)
    info["laps"], info["lap"] = laps, int(laps["lap"].iloc[k])
    a, b = laps["t_start [s]"].iloc[k], laps["t_end [s]"].iloc[k]
    return _cut(t, cols, a, b), info


def _markers(where, cells: list, t: np.ndarray) -> list:
    """The beacon markers [s] of the header: each a finite time, increasing, at least one
    inside the log's time span ``t[0]..t[-1]``; ValueError naming the first that is not."""
    out = []
    for cell in cells:
        m = _seconds(cell)
        if not np.isfinite(m) or (out and m <= out[-1]):
            after = f" after {out[-1]:g} s" if out and np.isfinite(m) else ""
            raise ValueError(f"{where}: Beacon Markers {cell!r}{after}: expected times [s] "
                             "(e.g. '15.972' or '0:15.972') that increase")
        out.append(m)
    if out and not any(t[0] <= m <= t[-1] for m in out):
        raise ValueError(f"{where}: Beacon Markers {', '.join(map(repr, cells))}: none inside "
                         f"the log's times {t[0]:g}-{t[-1]:g} s; expected the laps' ends in it")
    return out


def _finish(where, cols, info):
    """The distance or the time integrated when missing; both from 0; the DataFrame."""
    v, s, t = cols["speed"], cols.pop("distance", None), cols.pop("time", None)
    if s is not None and t is not None:
        keep = np.concatenate([[True], np.diff(s) > 0])
        if not keep.all():
            info["derived"].append(f"{int((~keep).sum())} samples at a standing distance dropped")
            s, t, v = s[keep], t[keep], v[keep]
            cols = {k: x[keep] for k, x in cols.items()}
    if s is None:
        s = np.concatenate([[0.0], np.cumsum(0.5 * (v[1:] + v[:-1]) * np.diff(t))])
        info["derived"].append("distance = the integral of the speed over the time")
    if t is None:
        if np.any(v <= 0):
            raise ValueError(f"{where}: a speed <= 0 m/s; the time cannot be integrated from the "
                             "distance (give a time column)")
        t = np.concatenate([[0.0], np.cumsum(0.5 * (1 / v[1:] + 1 / v[:-1]) * np.diff(s))])
        info["derived"].append("time = the integral of 1 / speed over the distance")
    info["lap_time_s"] = float(t[-1] - t[0])
    out = {"s": s - s[0], "t": t - t[0], "speed": cols.pop("speed")}
    out.update(cols)
    return pd.DataFrame(out), info


def alias_markdown() -> str:
    """The table of :data:`CHANNEL_ALIASES` in Markdown (docs/telemetry.md holds it; a test
    checks the page is current)."""
    lines = ["| channel | unit | meaning | names accepted (case and spaces ignored) |",
             "|---|---|---|---|"]
    for key, al in CHANNEL_ALIASES.items():
        lines.append(f"| `{key}` | {al.unit} | {al.meaning} | "
                     + ", ".join(f"`{n}`" for n in al.names) + " |")
    return "\n".join(lines) + "\n"
