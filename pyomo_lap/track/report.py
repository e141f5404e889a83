"""What was done to a track's data and which values were assumed: the records, and their
table (``pyomo-lap check``), their one-line summaries (``pyomo-lap solve``) and their rows in
the results' provenance.

The track loaders (:mod:`pyomo_lap.track.csv_files`, :mod:`~pyomo_lap.track.gps`, :mod:`~pyomo_lap.track.boundaries`) keep two lists in ``track.provenance`` (also
:attr:`pyomo_lap.track.geometry.Track.processing_steps` and :attr:`~pyomo_lap.track.geometry.Track.assumptions`):

``processing_steps``
    One dict per kind of transformation of the input data (:func:`step`, kinds
    :data:`STEPS`): elevations missing in the file, elevation outliers dropped, elevations
    down-weighted by the robust smoother, gaps filled, plan view and elevation smoothed,
    points merged, widths set by the user, the order of latitude and longitude in a GPS file
    when both orders are valid coordinates, coordinates re-centred far from the origin, how
    a file was read (its separator, layout, units), a centreline made from boundaries, which
    side each boundary of a file lies on (decided geometrically), data interpolated without
    smoothing, dense or noisy points resampled before the fit, elevations ignored
    (``flat=True``) and a crossing of a flat file taken as a bridge.
    Keys: ``step`` (the kind), ``count`` (how many
    points or gaps, or None), ``where_m`` (list of ``[s_from, s_to]`` ranges on the built
    track's arc length [m]; a single point has ``s_from == s_to``), ``size`` (the largest
    magnitude: outlier distance from the local median, gap length, change made by the
    smoother, in ``unit``), ``size_at_m`` (where that largest one is [m]), ``unit``,
    ``method`` (a few words: how, with its parameters) and ``detail`` (one sentence: what was
    done and how).
``assumptions``
    One dict per value that the data do not give and a default replaces (:func:`assumption`):
    keys ``quantity``, ``value``, ``unit``, ``reason`` and ``set_with`` (how to give it).

Repairs of bad data (``--repair-track``) stay :class:`pyomo_lap.track.checks.Finding`
objects (``track.findings``, ``provenance['repairs']``).
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import pandas as pd

__all__ = ["STEPS", "step", "assumption", "steps_table", "format_steps_table",
           "step_lines", "assumption_lines", "provenance_rows", "where_text",
           "flattened_step", "flat_assumption", "widths_set_step"]

STEPS = {
    "points_merged": "points merged",
    "elevation_missing": "elevations missing",
    "elevation_unmatched": "elevations too far off",
    "outliers_dropped": "elevation outliers dropped",
    "gap_filled": "elevation gaps filled",
    "outliers_downweighted": "elevations down-weighted",
    "smoothing_plan_view": "plan view smoothed",
    "smoothing_elevation": "elevation smoothed",
    "widths_set": "widths set",
    "lat_lon_order": "latitude/longitude order",
    "recentred": "coordinates re-centred",
    "file_read": "file read as",
    "centreline_from_boundaries": "centreline from boundaries",
    "boundary_sides": "boundary sides",
    "interpolated": "interpolated",
    "resampled": "points resampled",
    "flattened": "elevation ignored",
    "crossing_bridge": "crossing taken as a bridge",
}
"""Kinds of processing steps and their titles in tables and lines."""

MAX_PLACES = 4     # positions written out in a table cell or a line
WHOLE_TRACK = ("smoothing_plan_view", "smoothing_elevation", "lat_lon_order", "recentred",
               "file_read", "centreline_from_boundaries", "boundary_sides", "interpolated",
               "resampled", "flattened")
"""Kinds of steps applied to the whole track (their ``where_m`` is ``[[0, length]]``)."""
SAID_BY_METHOD = ("lat_lon_order", "recentred", "file_read", "centreline_from_boundaries",
                  "boundary_sides", "interpolated", "resampled", "flattened", "crossing_bridge")
"""Kinds of steps whose one-line summary is their ``method`` (a decision, not a count)."""


def _f(v) -> Optional[float]:
    return None if v is None else float(v)


def step(kind: str, detail: str, *, method: str = "", count: Optional[int] = None,
         where_m: Iterable[Sequence[float]] = (), size: Optional[float] = None,
         size_at_m: Optional[float] = None, unit: str = "m") -> dict:
    """A processing-step record (JSON-serialisable dict, see the module docstring).

    Parameters
    ----------
    kind : str
        One of :data:`STEPS`.
    detail : str
        What was done, with its parameters (one sentence).
    method : str
        How, in a few words (the table of ``pyomo-lap check``).
    count : int, optional
        Points (or gaps) concerned.
    where_m : iterable of (s_from, s_to)
        Ranges of arc length on the built track [m].
    size : float, optional
        The largest magnitude [unit].
    size_at_m : float, optional
        Arc length of the largest [m].
    unit : str

    Raises
    ------
    ValueError
        Unknown ``kind``.
    """
    if kind not in STEPS:
        raise ValueError(f"unknown processing step {kind!r}; expected one of {', '.join(STEPS)}")
    return {"step": kind, "count": None if count is None else int(count),
            "where_m": [[float(a), float(b)] for a, b in where_m],
            "size": _f(size), "size_at_m": _f(size_at_m), "unit": unit, "method": str(method),
            "detail": str(detail)}


def assumption(quantity: str, value, unit: str, reason: str, set_with: str) -> dict:
    """An assumed-value record: ``quantity`` took ``value`` [``unit``] because ``reason``;
    ``set_with`` says how to give it instead."""
    return {"quantity": str(quantity), "value": value, "unit": unit, "reason": str(reason),
            "set_with": str(set_with)}


def _num(v: float) -> str:
    """Metres as written in tables: whole metres from 10 m on, else 3 significant digits."""
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.3g}"


def where_text(where_m, limit: int = MAX_PLACES, unit: str = " m") -> str:
    """``'s = 0, 1200-1450 m and 3 more'`` (places and ranges of s in metres), or ``''``."""
    parts = [_num(a) if abs(b - a) < 0.5 else f"{_num(a)}-{_num(b)}" for a, b in where_m]
    if not parts:
        return ""
    more = f" and {len(parts) - limit} more" if len(parts) > limit else ""
    return "s = " + ", ".join(parts[:limit]) + unit + more


def _size_text(rec: dict) -> str:
    if rec.get("size") is None:
        return ""
    at = f" at s = {_num(rec['size_at_m'])} m" if rec.get("size_at_m") is not None else ""
    return f"{rec['size']:.3g} {rec['unit']}{at}".strip()


def steps_table(steps: Sequence[dict]):
    """The processing steps as a pandas DataFrame: ``step`` (title), ``count``,
    ``where [m]`` (the first few places), ``largest``, ``method``."""
    rows = [(STEPS.get(r["step"], r["step"]), "" if r.get("count") is None else r["count"],
             ("whole track" if r["step"] in WHOLE_TRACK else
              where_text(r.get("where_m", []), unit="").removeprefix("s = ")), _size_text(r),
             r.get("method", ""))
            for r in steps]
    return pd.DataFrame(rows, columns=["step", "count", "where [m]", "largest", "method"])


def format_steps_table(steps: Sequence[dict], indent: str = "  ") -> str:
    """:func:`steps_table` as left-aligned text lines (``''`` when there are no steps)."""
    if not steps:
        return ""
    df = steps_table(steps).astype(str)
    width = {c: max(len(c), int(df[c].str.len().max())) for c in df.columns}
    text = df.to_string(index=False, justify="left",
                        formatters={c: (lambda x, n=width[c]: str(x).ljust(n)) for c in df.columns})
    return "\n".join(indent + line.rstrip() for line in text.splitlines())


def step_lines(steps: Sequence[dict]) -> list:
    """One short line per step: ``'elevation outliers dropped: 3 at s = 1200, 1210, 1220 m
    (largest 312 m at s = 1210 m)'``, ``'elevation smoothed: 250 points, the whole track
    (largest 2.1 m at s = 830 m)'``."""
    out = []
    for r in steps:
        title = STEPS.get(r["step"], r["step"])
        count = r.get("count")
        if r["step"] in SAID_BY_METHOD:
            out.append(f"{title}: {r.get('method', '')}")
            continue
        if r["step"] in WHOLE_TRACK:
            at = f"{count} points, the whole track" if count is not None else "the whole track"
        else:
            where = where_text(r.get("where_m", []))
            at = " ".join(x for x in ("" if count is None else str(count),
                                      f"at {where}" if where else "") if x)
        size = f" (largest {_size_text(r)})" if r.get("size") is not None else ""
        out.append(f"{title}: {at}{size}" if at else f"{title}{size}")
    return out


def assumption_lines(assumptions: Sequence[dict]) -> list:
    """One sentence per assumed value: ``'width = 4 m each side assumed: the data have no
    widths (total 8 m); set with ...'``."""
    out = []
    for a in assumptions:
        v = a["value"]
        val = f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
        unit = f" {a['unit']}" if a.get("unit") else ""
        out.append(f"{a['quantity']} = {val}{unit} assumed: {a['reason']}; set with {a['set_with']}")
    return out


def provenance_rows(steps: Sequence[dict] = (), assumptions: Sequence[dict] = (),
                    repairs: Sequence[str] = (), files: Optional[dict] = None):
    """Rows of the workbook's ``provenance`` sheet (a pandas DataFrame with the columns
    ``category``, ``item``, ``count``, ``where [m]``, ``value``, ``unit``, ``detail``): the
    input files, every processing step (``value``: its largest magnitude), every assumed
    value (``value``: the value) and every repair."""
    rows = []
    for k, v in (files or {}).items():
        rows.append(("input file", k, None, "", None, "", str(v)))
    for r in steps:
        rows.append(("processing step", STEPS.get(r["step"], r["step"]), r.get("count"),
                     "; ".join(f"{a:.1f}-{b:.1f}" if b != a else f"{a:.1f}"
                               for a, b in r.get("where_m", [])),
                     r.get("size"), r.get("unit", ""), r["detail"]))
    for a in assumptions:
        v = a["value"]
        rows.append(("assumed value", a["quantity"], None, "",
                     v if isinstance(v, (int, float)) and math.isfinite(v) else None,
                     a.get("unit", ""), f"{a['reason']}; set with {a['set_with']}"))
    for text in repairs:
        rows.append(("repair", "repair", None, "", None, "", str(text)))
    return pd.DataFrame(rows, columns=["category", "item", "count", "where [m]", "value",
                                       "unit", "detail"])


def flattened_step(n: int) -> dict:
    """The record of elevations ignored (``flat=True``): z = 0, banking kept."""
    return step("flattened", f"the file's elevations ignored (flat=True): z = 0 at all {n} "
                "points; banking as given", method="flat=True: z = 0, banking as given", count=n)


def flat_assumption(reason: str, set_with: str) -> dict:
    """The assumed value of a track without elevations: 0 m, flat."""
    return assumption("elevation", 0.0, "m", reason, set_with)


def widths_set_step(track_width: float, replaced: list) -> dict:
    """The record of widths set by ``track_width`` (replacing the file's, if it has some)."""
    what = (f"replacing the file's {' and '.join(replaced)}" if replaced else
            "the data have none")
    return step("widths_set", f"widths set by track_width = {track_width:g} m: "
                f"{track_width / 2:g} m each side of the centreline ({what})",
                method=f"track_width = {track_width:g} m", size=track_width / 2,
                unit="m each side")
