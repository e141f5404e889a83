r"""Corners of a track: found from the curvature, numbered T1, T2, ... from the start line,
named and bounded by a small file beside the track (``docs/corners.md``).

**Detection** (:func:`detect_corners`). The geodesic curvature :math:`\kappa(s) = \Omega_z(s)`
[1/m] (positive: the road turns left, counter-clockwise seen from above; negative: right) is
sampled every :data:`SPACING_M` of arc length. A *corner* is a maximal stretch where the road
turns one way with :math:`\pm\kappa \ge \kappa_{off}` that somewhere reaches
:math:`\pm\kappa \ge \kappa_{on}` (hysteresis: :math:`\kappa_{on} = 1/R_{on}`,
:math:`\kappa_{off} = 1/R_{off}`, defaults :data:`R_ON_M` and :data:`R_OFF_M`). Two stretches
of the same direction separated by less than :data:`MERGE_GAP_M` (a double apex) are one
corner; a change of direction always starts a new corner (a chicane is two corners). A
stretch that turns the car through less than :data:`MIN_ANGLE_DEG` (integral of
:math:`|\kappa|`) or is shorter than :data:`MIN_LENGTH_M` is not a corner (a kink). Entry and
exit are where :math:`|\kappa|` crosses :math:`\kappa_{off}` (linear interpolation between the
samples); the apex is the point of largest :math:`|\kappa|` (the middle of an arc of constant
radius). Corners are numbered in driving
direction by their apex's distance from the start line (``s = 0``).

**Corner file** (:func:`read_corner_file`; ``<track file stem>.corners.csv`` beside the track
file, found by :func:`corner_file_for`): one row per corner, columns ``number`` (optional,
default the row's position), ``name`` (optional, default ``T<number>``), ``s_apex_m``
(required), ``s_entry_m`` and ``s_exit_m`` (optional, both or neither). When the file is there
it *is* the list of corners: a row with entry and exit is taken as given; a row without them
takes them from the detected corner whose stretch holds its apex (an error when none does).
**Sector file** (:func:`read_sector_file`; ``<stem>.sectors.csv``): column ``s_start_m`` (the
track coordinate where each sector starts, increasing) and an optional ``name``.

Layer: track (imports numpy and :mod:`csv`).
"""
from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["Corner", "CornerFileError", "detect_corners", "detect_from_curvature",
           "read_corner_file", "read_sector_file", "corner_file_for", "sector_file_for",
           "track_corners", "track_sectors", "R_ON_M", "R_OFF_M", "MERGE_GAP_M",
           "MIN_ANGLE_DEG", "MIN_LENGTH_M", "SPACING_M"]

R_ON_M = 250.0
"""Radius [m] below which a bend is a corner (:math:`\\kappa_{on} = 1/R_{on}`). At 1.5 g of
lateral acceleration a 250 m radius is taken at 218 km/h; bends wider than this are taken flat
by most racing cars, and on the bundled circuits this gives corner counts close to their
usual turn numbering (``docs/corners.md``)."""

R_OFF_M = 500.0
"""Radius [m] above which a corner ends (:math:`\\kappa_{off} = 1/R_{off}`, the hysteresis:
half of :math:`\\kappa_{on}`)."""

MERGE_GAP_M = 20.0
"""Two same-direction stretches closer than this [m] are one corner (a double apex)."""

MIN_ANGLE_DEG = 15.0
"""A stretch turning through less than this [deg] is a kink, not a corner."""

MIN_LENGTH_M = 5.0
"""A stretch shorter than this [m] is not a corner."""

SPACING_M = 1.0
"""Arc-length step [m] at which the curvature is sampled (finer on tracks under 2 km)."""


class CornerFileError(ValueError):
    """A corner or sector file that cannot be used (the message names the file, row and field)."""


@dataclasses.dataclass
class Corner:
    """One corner of a track.

    Attributes
    ----------
    number : int
        T-number (1, 2, ... from the start line, or the corner file's ``number``).
    name : str
        ``T<number>`` unless a corner file names it.
    direction : str
        ``"left"`` (curvature > 0, counter-clockwise seen from above) or ``"right"``.
    s_entry, s_apex, s_exit : float
        Track coordinate [m] of the entry, apex (largest ``|curvature|``) and exit. On a closed
        track a corner across the start line has ``s_entry > s_exit`` (all in [0, L)).
    min_radius : float
        ``1/|curvature|`` at the apex [m].
    angle_deg : float
        Heading change through the corner, integral of ``|curvature| ds`` [deg].
    source : str
        ``"detected"`` or the corner file's path.
    """

    number: int
    name: str
    direction: str
    s_entry: float
    s_apex: float
    s_exit: float
    min_radius: float = float("nan")
    angle_deg: float = float("nan")
    source: str = "detected"

    def record(self) -> dict:
        """JSON-ready dict (keys with units: ``s_entry_m`` ...)."""
        return {"number": self.number, "name": self.name, "direction": self.direction,
                "s_entry_m": self.s_entry, "s_apex_m": self.s_apex, "s_exit_m": self.s_exit,
                "min_radius_m": self.min_radius, "angle_deg": self.angle_deg,
                "source": self.source}


def _grid(track, spacing: Optional[float]) -> np.ndarray:
    h = spacing if spacing is not None else min(SPACING_M, track.length / 2000.0)
    return track.sample_s(h)


def detect_corners(track, r_on: float = R_ON_M, r_off: float = R_OFF_M,
                   merge_gap: float = MERGE_GAP_M, min_angle_deg: float = MIN_ANGLE_DEG,
                   min_length: float = MIN_LENGTH_M, spacing: Optional[float] = None) -> list:
    """The corners of ``track`` found from its curvature (the rule in the module docstring).

    Parameters
    ----------
    track : Track or ArcTrack
        Anything with ``length`` [m], ``closed``, ``sample_s`` and ``evaluate`` (``omega[:, 2]``
        is the geodesic curvature [1/m]).
    r_on, r_off : float
        Radii [m] of the hysteresis, ``0 < r_on <= r_off``.
    merge_gap : float
        Same-direction stretches closer than this [m] are merged.
    min_angle_deg, min_length : float
        Smallest heading change [deg] and length [m] of a corner.
    spacing : float, optional
        Sampling step [m] (default :data:`SPACING_M`, at most ``length / 2000``).

    Returns
    -------
    list of Corner
        Numbered 1..n by apex position from ``s = 0``.

    Raises
    ------
    ValueError
        ``r_on`` not in (0, ``r_off``].
    """
    s = _grid(track, spacing)
    kappa = track.evaluate(s).omega[:, 2]
    return detect_from_curvature(s, kappa, track.length, track.closed, r_on=r_on, r_off=r_off,
                                 merge_gap=merge_gap, min_angle_deg=min_angle_deg,
                                 min_length=min_length)


def detect_from_curvature(s, kappa, length: float, closed: bool, r_on: float = R_ON_M,
                          r_off: float = R_OFF_M, merge_gap: float = MERGE_GAP_M,
                          min_angle_deg: float = MIN_ANGLE_DEG,
                          min_length: float = MIN_LENGTH_M) -> list:
    """:func:`detect_corners` on samples: ``s`` (n,) uniform and increasing [m], ``kappa`` (n,)
    the signed curvature there [1/m], ``length`` the track's length [m] (closed: the period)."""
    if not (0.0 < r_on <= r_off):
        raise ValueError(f"r_on = {r_on!r} m, r_off = {r_off!r} m: expected 0 < r_on <= r_off")
    s, kappa = np.asarray(s, float), np.asarray(kappa, float)
    k_on, k_off = 1.0 / r_on, 1.0 / r_off
    n = len(s)
    shift = 0
    if closed:          # start the scan where the road is straight, so no run wraps
        quiet = np.nonzero(np.abs(kappa) < k_off)[0]
        if len(quiet) == 0:
            return []   # turns all the way round (a circle): no entry or exit
        shift = int(quiet[0])
    order = (np.arange(n) + shift) % n
    k = kappa[order]
    h = length / n if closed else float(s[1] - s[0])
    x = np.arange(n) * h + (s[shift] if closed else s[0])     # unwrapped coordinate
    runs = _runs(k, k_off, k_on)
    runs = _merge(runs, k, x, merge_gap)
    corners = []
    for i, j, d in runs:
        e0, e1 = _crossing(x, d * k, k_off, i, -1), _crossing(x, d * k, k_off, j, +1)
        ang = float(np.degrees(np.sum(np.abs(k[i:j + 1])) * h))
        if ang < min_angle_deg or e1 - e0 < min_length:
            continue
        a = i + _apex(d * k[i:j + 1])
        wrap = (lambda v: v % length) if closed else (lambda v: v)
        corners.append(Corner(0, "", "left" if d > 0 else "right", float(wrap(e0)),
                              float(wrap(x[a])), float(wrap(e1)), float(1.0 / abs(k[a])), ang))
    corners.sort(key=lambda c: c.s_apex)
    for num, c in enumerate(corners, 1):
        c.number, c.name = num, f"T{num}"
    return corners


def _apex(dk) -> int:
    """Index of the largest curvature; of a stretch of constant largest curvature (an arc), its
    middle."""
    top = int(np.argmax(dk))
    at_top = np.nonzero(dk >= dk[top] * (1.0 - 1e-9))[0]
    run = at_top[(at_top >= top) & (at_top - top == np.arange(np.sum(at_top >= top)))]
    return int((top + run[-1]) // 2)


def _runs(k, k_off: float, k_on: float) -> list:
    """``(first, last, direction)`` of the maximal one-direction stretches with ``d k >= k_off``
    that reach ``k_on`` somewhere, in order."""
    out = []
    for d in (1, -1):
        m = np.concatenate([[0], (d * k >= k_off).astype(int), [0]])
        e = np.diff(m)
        for i, j in zip(np.nonzero(e == 1)[0], np.nonzero(e == -1)[0] - 1):
            if np.max(d * k[i:j + 1]) >= k_on:
                out.append((int(i), int(j), d))
    return sorted(out)


def _merge(runs: list, k, x, gap: float) -> list:
    """Neighbouring runs of the same direction less than ``gap`` [m] apart (no run the other
    way between them) as one."""
    out = []
    for r in runs:
        if out and out[-1][2] == r[2] and x[r[0]] - x[out[-1][1]] < gap:
            out[-1] = (out[-1][0], r[1], r[2])
        else:
            out.append(r)
    return out


def _crossing(x, dk, level: float, i: int, step: int) -> float:
    """Where ``dk`` crosses ``level`` next to sample ``i`` (towards ``i + step``), interpolated;
    ``x[i]`` at the end of the samples."""
    j = i + step
    if j < 0 or j >= len(x):
        return float(x[i])
    a, b = dk[i], dk[j]
    f = (a - level) / (a - b) if a != b else 0.0
    return float(x[i] + f * (x[j] - x[i]))


# ---------------------------------------------------------------------------- files
def corner_file_for(track) -> Optional[Path]:
    """``<stem>.corners.csv`` beside the track's file (``provenance['source_file']``), if there."""
    return _beside(track, ".corners.csv")


def sector_file_for(track) -> Optional[Path]:
    """``<stem>.sectors.csv`` beside the track's file, if there."""
    return _beside(track, ".sectors.csv")


def _beside(track, suffix: str) -> Optional[Path]:
    src = (getattr(track, "provenance", None) or {}).get("source_file")
    if not src:
        return None
    p = Path(src)
    cand = p.with_name(p.name.split(".")[0] + suffix)
    return cand if cand.is_file() else None


def _rows(path: Path, required: tuple, known: tuple) -> list:
    """The rows of a small CSV file as dicts of stripped texts; one-line errors."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            lines = [ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    except OSError as exc:
        raise CornerFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    reader = csv.DictReader(lines)
    cols = [c.strip() for c in (reader.fieldnames or [])]
    for c in required:
        if c not in cols:
            raise CornerFileError(f"{path}: no column {c!r} (columns {cols}; expected "
                                  f"{', '.join(known)})")
    bad = [c for c in cols if c not in known]
    if bad:
        raise CornerFileError(f"{path}: unknown column {bad[0]!r} (expected {', '.join(known)})")
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]


def _number(path: Path, row: int, key: str, text: str, length: float) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or not (0.0 <= v <= length):
        raise CornerFileError(f"{path}: row {row}, {key} = {text!r}: expected a number of "
                              f"metres in [0, {length:.3f}]")
    return v


def read_corner_file(path, track, detected: Optional[list] = None) -> list:
    """The corners a corner file lists (format in the module docstring).

    Parameters
    ----------
    path : str or Path
    track : Track or ArcTrack
        For the length and the direction (curvature) of corners the file bounds.
    detected : list of Corner, optional
        :func:`detect_corners` of the track (computed when needed and not given).

    Returns
    -------
    list of Corner
        In the file's order; ``source`` the file's path.

    Raises
    ------
    CornerFileError
        Unreadable file, missing ``s_apex_m``, a value not a number within the track, only one
        of ``s_entry_m``/``s_exit_m``, a repeated number, or an apex outside every detected
        corner in a row without entry and exit.
    """
    path = Path(path)
    known = ("number", "name", "s_entry_m", "s_apex_m", "s_exit_m")
    rows = _rows(path, ("s_apex_m",), known)
    out, seen = [], set()
    for r, row in enumerate(rows, 1):
        num = _row_number(path, r, row.get("number", ""), seen)
        apex = _number(path, r, "s_apex_m", row["s_apex_m"], track.length)
        given = [row.get(k, "") for k in ("s_entry_m", "s_exit_m")]
        if any(given) and not all(given):
            raise CornerFileError(f"{path}: row {r}: s_entry_m and s_exit_m go together "
                                  f"(got {given[0]!r} and {given[1]!r})")
        if all(given):
            e0 = _number(path, r, "s_entry_m", given[0], track.length)
            e1 = _number(path, r, "s_exit_m", given[1], track.length)
            c = _bounded_corner(track, e0, apex, e1)
        else:
            if detected is None:
                detected = detect_corners(track)
            c = _containing(detected, apex, track.length)
            if c is None:
                raise CornerFileError(f"{path}: row {r}, s_apex_m = {apex:g}: no detected corner "
                                      "holds it; give s_entry_m and s_exit_m")
            c = dataclasses.replace(c, s_apex=apex)
        c.number = num if num is not None else r
        c.name = row.get("name") or f"T{c.number}"
        c.source = str(path)
        out.append(c)
    return out


def _row_number(path: Path, r: int, text: str, seen: set) -> Optional[int]:
    if not text:
        return None
    try:
        num = int(text)
    except ValueError:
        raise CornerFileError(f"{path}: row {r}, number = {text!r}: expected an integer") from None
    if num in seen:
        raise CornerFileError(f"{path}: row {r}, number = {num}: given twice")
    seen.add(num)
    return num


def _span(e0: float, e1: float, length: float) -> float:
    return (e1 - e0) % length if e1 < e0 else e1 - e0


def _containing(corners: list, s: float, length: float):
    for c in corners:
        if (s - c.s_entry) % length <= _span(c.s_entry, c.s_exit, length):
            return c
    return None


def _bounded_corner(track, e0: float, apex: float, e1: float) -> Corner:
    """A corner from given entry, apex and exit: direction from the curvature's integral."""
    span = _span(e0, e1, track.length)
    s = e0 + np.linspace(0.0, span, max(int(span / 0.5), 2) + 1)
    k = track.evaluate(s if track.closed else np.clip(s, 0, track.length)).omega[:, 2]
    turn = float(np.trapezoid(k, s))
    ka = float(track.evaluate(apex).omega[0, 2])
    return Corner(0, "", "left" if turn >= 0 else "right", e0, apex, e1,
                  1.0 / abs(ka) if ka else float("inf"), abs(math.degrees(turn)))


def read_sector_file(path, length: float) -> list:
    """Sector starts from a sector file: ``[(s_start_m, name), ...]``, increasing.

    Raises
    ------
    CornerFileError
        Unreadable file, no ``s_start_m``, a value not a number in ``[0, length]``, not
        increasing, or no row.
    """
    path = Path(path)
    rows = _rows(path, ("s_start_m",), ("s_start_m", "name"))
    out = []
    for r, row in enumerate(rows, 1):
        v = _number(path, r, "s_start_m", row["s_start_m"], length)
        if out and v <= out[-1][0]:
            raise CornerFileError(f"{path}: row {r}, s_start_m = {v:g}: expected more than the "
                                  f"row before ({out[-1][0]:g})")
        out.append((v, row.get("name") or f"S{r}"))
    if not out:
        raise CornerFileError(f"{path}: no sector (expected one row per sector, s_start_m)")
    return out


def track_corners(track, corner_file=None) -> list:
    """The corners of ``track``: those of ``corner_file`` (default: :func:`corner_file_for`)
    when there is one, else :func:`detect_corners`."""
    path = corner_file if corner_file is not None else corner_file_for(track)
    if path is not None:
        return read_corner_file(path, track)
    return detect_corners(track)


def track_sectors(track, sector_file=None) -> Optional[list]:
    """The sector starts of ``sector_file`` (default: :func:`sector_file_for`), or None."""
    path = sector_file if sector_file is not None else sector_file_for(track)
    return read_sector_file(path, track.length) if path is not None else None
