"""Checks (and, where a repair is well defined, repairs) of track data, before any solve.

Users bring GPS traces with glitches, missing elevations and loops that do not close. The
loaders (:mod:`pyomo_lap.track.csv_files`, :mod:`~pyomo_lap.track.gps`,
:mod:`~pyomo_lap.track.boundaries`) pass the raw points through :func:`check_points` and the
built track through :func:`pyomo_lap.track.built_checks.check_track`; :func:`check_sector` and :func:`check_vehicle_fits`
check a sector and a car against a track. Every problem found is a :class:`Finding` whose
message names the source (file), the rows or the arc length, the values and what was
expected. Without ``repair`` any finding raises :class:`TrackDataError` listing them all;
with ``repair=True`` the repairable ones are repaired (and reported: :class:`Finding.repair`,
a :class:`TrackRepairWarning`, ``track.provenance['repairs']``), the others still raise.

Kinds of findings (:data:`KINDS`) and their repairs:

=====================  ==============================================================  =====================================================
kind                   detected when                                                   repair
=====================  ==============================================================  =====================================================
``missing_value``      a coordinate, width or banking cell is empty, NaN or not a      x or y: the point is dropped; z, widths, banking:
                       number                                                          linear interpolation along the track
``too_few_points``     fewer than 4 usable points                                      none
``lat_lon_swapped``    GPS data (lat, lon): a latitude beyond +-90 deg while every     read swapped (the latitudes from the lon column)
                       longitude is a valid latitude (the columns are swapped)
``bad_coordinate``     GPS data: a latitude beyond +-90 deg or a longitude beyond      none
                       +-180 deg, read either way (another unit?)
``duplicate_points``   a point repeats the previous one (horizontal distance < 1 mm)   the repeat is dropped
``position_spike``     a point far off the line (both its segments > 5 x the median    the point is dropped
                       spacing and > 3 x the distance between its neighbours)
``unclosed_loop``      a closed loop is asked for but the last point is farther from   the gap is bridged by a straight line, if it is at
                       the first than max(3 x median spacing, longest segment)         most 5 % of the loop's length
``elevation_zero``     z = 0 next to elevations that would make the grade absurd       treated as missing (interpolated)
                       (a missing value written as 0)
``elevation_spike``    up to 5 points whose elevation jumps away from their            treated as missing (interpolated)
                       neighbours and back (steeper than max_grade, + 1 m noise)
``elevation_step``     any other jump steeper than max_grade (+ 1 m noise)             none (which side is right cannot be told)
``boundary_side``      track boundaries: the left one lies right of the direction of   the two boundaries are swapped
                       travel its points give
``bad_width``          a half-width <= 0 or > 100 m                                    none
``bad_banking``        |banking| > pi/4 rad (degrees given for radians?)               none
``too_short``          the track is shorter than 20 m (coordinates not in metres?)     none
``too_long``           the points' polyline is longer than 200 km                      none
``steep_grade``        |grade| of the built track > max_grade (default 35 %)           none
``self_intersection``  the centreline crosses itself in plan view with less than 2 m   none (a flat track's crossing, no elevation data, is
                       of height between the two branches (no bridge) on a track with  taken as a bridge: processing step ``crossing_bridge``)
                       elevations
``narrower_than_car``  left + right width < car width + 2 margins (per sector)         none
``sector_past_end``    start + length beyond the end of an open track                  the sector is shortened to end at the track's end
``longer_than_lap``    a sector longer than one lap of a closed loop                   none (a whole lap: ``--full-lap``, ``periodic=True``)
=====================  ==============================================================  =====================================================
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Optional, Sequence

import numpy as np

from ..util.domains import number_text

__all__ = ["Finding", "TrackDataError", "TrackRepairWarning", "CheckedPoints", "KINDS",
           "MAX_GRADE", "check_points", "check_sector", "check_vehicle_fits",
           "check_track_width", "detect_closed", "LAT_LON_ORDERS", "check_lat_lon_order"]

KINDS = ("missing_value", "too_few_points", "lat_lon_swapped", "bad_coordinate",
         "duplicate_points", "position_spike",
         "unclosed_loop", "elevation_zero", "elevation_spike", "elevation_step", "boundary_side",
         "bad_width", "bad_banking",
         "too_short", "too_long", "steep_grade", "self_intersection", "narrower_than_car", "sector_past_end",
         "longer_than_lap")
"""Kinds of :class:`Finding`."""

MAX_GRADE = 0.35
"""Steepest accepted road grade |dz/dh| [-] (35 %; the Nordschleife reaches 17 %)."""
MIN_POINTS = 4
DUPLICATE_TOL = 1e-3        # [m] horizontal distance under which a point repeats the previous
SPIKE_SPACING_FACTOR = 5.0  # a position spike's segments are longer than this x median spacing
SPIKE_DETOUR = 3.0          # ... and their sum longer than this x the distance between neighbours
CLOSE_FACTOR = 3.0          # a loop closes if its gap <= this x the median spacing (or the longest segment)
MAX_BRIDGE_FRACTION = 0.05  # longest gap (fraction of the length) a repair may bridge
Z_NOISE = 1.0               # [m] elevation noise allowed on top of the grade in the jump test
MAX_GLITCH_RUN = 5          # longest run of points between an up- and a down-jump taken as a glitch
MAX_HALF_WIDTH = 100.0      # [m]
MAX_BANKING = math.pi / 4   # [rad]
MIN_LENGTH = 20.0           # [m]
MAX_LENGTH = 2.0e5          # [m] (the Isle of Man TT course is 60.7 km)
BRIDGE_CLEARANCE = 2.0      # [m] height difference that makes a plan-view crossing a bridge
MAX_LISTED = 5              # rows listed per finding


class TrackRepairWarning(UserWarning):
    """Emitted for every repair made to track data."""


@dataclasses.dataclass
class Finding:
    """One problem found in track data.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    message : str
        What is wrong, naming the rows or the arc length, the values and what was expected.
    repair_action : str
        What ``repair=True`` does about it ('' if it cannot be repaired).
    repaired : bool
        True if the repair was applied.
    """

    kind: str
    message: str
    repair_action: str = ""
    repaired: bool = False

    @property
    def repairable(self) -> bool:
        """Whether the finding has a repair (``--repair-track`` makes it)."""
        return bool(self.repair_action)

    def __str__(self) -> str:
        """The message, and the repair made or available."""
        if self.repaired:
            return f"{self.message} -> repaired: {self.repair_action}"
        if self.repairable:
            return f"{self.message} [repairable: {self.repair_action}]"
        return self.message


class TrackDataError(ValueError):
    """Track data that cannot be used as they are. ``findings`` lists every problem."""

    def __init__(self, source: str, findings: Sequence[Finding]):
        self.source = str(source)
        self.findings = list(findings)
        bad = [f for f in self.findings if not f.repaired]
        if len(bad) == 1:
            msg = f"{self.source}: {bad[0]}"
        else:
            msg = f"{self.source}: {len(bad)} problems:\n" + "\n".join(f"  - {f}" for f in bad)
        if any(f.repairable for f in bad):
            msg += ("\nThe problems marked 'repairable' are repaired with --repair-track "
                    "(Python: repair=True); the repairs are reported.")
        super().__init__(msg)


@dataclasses.dataclass
class CheckedPoints:
    """Result of :func:`check_points`.

    Attributes
    ----------
    points : ndarray (n, 3)
        The points after the repairs [m].
    attrs : dict
        The per-point attributes after the repairs (same keys as given).
    labels : list of str
        Where each point came from (``'row 3 (line 4)'`` or ``'point 2'``).
    closed : bool
        Closed loop (as asked, or detected when ``closed=None``).
    findings : list of Finding
        All repaired findings (an unrepaired one raises).
    """

    points: np.ndarray
    attrs: dict
    labels: list
    closed: bool
    findings: list


# ---------------------------------------------------------------------------------------
def _list(labels, idx, values=None, unit="", prefix="") -> str:
    idx = list(idx)
    parts = []
    for k in idx[:MAX_LISTED]:
        if values is None:
            parts.append(f"{labels[k]}")
        else:
            v = values[k]
            parts.append(f"{labels[k]} {v!r}" if isinstance(v, str) else f"{labels[k]} ({prefix}{v:.6g}{unit})")
    more = f" and {len(idx) - MAX_LISTED} more" if len(idx) > MAX_LISTED else ""
    return ", ".join(parts) + more


def _chord(P2: np.ndarray, closed: bool):
    """Cumulative horizontal chord length of the points (n,) and the period (closed)."""
    d = np.linalg.norm(np.diff(P2, axis=0), axis=1)
    u = np.concatenate([[0.0], np.cumsum(d)])
    period = u[-1] + float(np.linalg.norm(P2[-1] - P2[0])) if closed else None
    return u, period


def _interp_missing(u, y, closed, period):
    """Fill NaNs of y by linear interpolation in u (periodic for closed curves)."""
    y = np.array(y, float)
    ok = np.isfinite(y)
    if ok.all() or ok.sum() == 0:
        return y
    if ok.sum() == 1:
        y[~ok] = y[ok][0]
        return y
    if closed and period:
        y[~ok] = np.interp(u[~ok], u[ok], y[ok], period=period)
    else:
        y[~ok] = np.interp(u[~ok], u[ok], y[ok])
    return y


def detect_closed(P: np.ndarray, abs_tol: Optional[float] = None) -> bool:
    """True if the polyline's last point is within ``abs_tol`` (default 1e-6 of the extent)
    of the first, or the closing gap is at most 2.5 x the median spacing, in plan view
    (an elevation glitch at an end does not open a loop)."""
    P = np.asarray(P, float)[:, :2]
    d = np.linalg.norm(np.diff(P, axis=0), axis=1)
    med = float(np.median(d)) if len(d) else 0.0
    gap = float(np.linalg.norm(P[-1] - P[0]))
    extent = float(np.ptp(P, axis=0).max()) if len(P) else 0.0
    tol = 1e-6 * max(extent, 1.0) if abs_tol is None else abs_tol
    return gap <= tol or gap <= 2.5 * med


class _Work:
    """Points, attributes and labels being checked; repairs drop or change entries."""

    def __init__(self, P, attrs, labels):
        self.P = P
        self.attrs = attrs
        self.labels = labels

    def keep(self, mask):
        self.P = self.P[mask]
        self.attrs = {k: (v[mask] if isinstance(v, np.ndarray) else v) for k, v in self.attrs.items()}
        self.labels = [lab for lab, k in zip(self.labels, mask) if k]

    def insert(self, at, newP, new_attrs, label):
        self.P = np.concatenate([self.P[:at], newP, self.P[at:]])
        for k, v in self.attrs.items():
            if isinstance(v, np.ndarray):
                self.attrs[k] = np.concatenate([v[:at], new_attrs[k], v[at:]])
        self.labels = self.labels[:at] + [label] * len(newP) + self.labels[at:]


def check_points(points, closed: Optional[bool] = None, *, attrs: Optional[dict] = None,
                 labels: Optional[Sequence[str]] = None, cells: Optional[dict] = None,
                 source: str = "track points", repair: bool = False,
                 max_grade: float = MAX_GRADE, z_missing_ok: bool = False,
                 elevation_checks: bool = True, closed_abs_tol: Optional[float] = None,
                 columns: Optional[Sequence[str]] = None) -> CheckedPoints:
    """Check raw spine points (and repair them where a repair is well defined).

    The steps, in this order (each a function of its own): missing values
    (:func:`_check_missing`), the points' extent (:func:`_check_extent`), duplicated points
    (:func:`_check_duplicates`), position spikes (:func:`_check_spikes`), the loop's closure
    (:func:`_check_closure`), elevation glitches (:func:`_check_elevations`), the filling of
    the values marked missing (:func:`_fill_missing`), widths and banking
    (:func:`_check_widths_banking`).

    Parameters
    ----------
    points : array_like (n, 3)
        x, y, z [m] in driving order; NaN marks a missing value.
    closed : bool or None
        True: a closed loop is asked for (it must close); False: open; None: detect (after
        the repairs) with :func:`detect_closed`.
    attrs : dict, optional
        Per-point arrays (n,) or scalars: ``width_left``, ``width_right`` [m], ``banking``
        [rad], others (e.g. ``s``) carried along.
    labels : sequence of str, optional
        Where each point came from, for the messages (default ``'point i'``).
    cells : dict, optional
        ``{column: {point index: original cell text}}`` of cells that were not numbers.
    source : str
        Named in the messages (the file).
    repair : bool
        Apply the repairs (see the module docstring).
    max_grade : float
        Steepest plausible grade [-].
    z_missing_ok : bool
        NaN elevations are expected (the format has missing elevations and the loader
        smooths over them): not a finding.
    elevation_checks : bool
        Run the elevation-glitch checks (off for loaders that filter outliers themselves).
    closed_abs_tol : float, optional
        Passed to :func:`detect_closed`.
    columns : (str, str, str), optional
        Names of the file's columns behind x, y, z for the messages (e.g. ``('lon', 'lat',
        'elev')``).

    Returns
    -------
    CheckedPoints

    Raises
    ------
    TrackDataError
        Any finding that was not repaired (all of them are listed).
    """
    W = _work_points(points, attrs, labels, source)
    ck = _Findings(source, repair)
    _check_missing(ck, W, cells or {}, columns, z_missing_ok)
    _check_extent(ck, W)
    closed = _check_duplicates(ck, W, closed)
    _check_spikes(ck, W, closed, closed_abs_tol)
    closed = _check_closure(ck, W, closed, closed_abs_tol)
    if elevation_checks:
        _check_elevations(ck, W, closed, max_grade)
    _fill_missing(W, closed, z_missing_ok)
    _check_widths_banking(ck, W)
    if any(not f.repaired for f in ck.findings):
        ck.stop()
    _warn(source, ck.findings)
    return CheckedPoints(W.P, W.attrs, W.labels, bool(closed), ck.findings)


class _Findings:
    """The findings of one :func:`check_points` call: ``add`` one (repaired if ``repair`` and
    it has a repair), ``stop`` with all of them."""

    def __init__(self, source: str, repair: bool):
        self.source = source
        self.repair = repair
        self.findings: list = []

    def add(self, kind, message, action=""):
        self.findings.append(Finding(kind, message, action, repaired=bool(self.repair and action)))

    def stop(self):
        raise TrackDataError(self.source, self.findings)


def _work_points(points, attrs, labels, source) -> _Work:
    """The points (n, 3) and per-point attributes as float arrays in a :class:`_Work`; a shape
    that is not (n, 3), or an attribute that is not one value per point, raises."""
    P = np.array(points, dtype=float)
    if P.ndim != 2 or P.shape[1] != 3:
        raise TrackDataError(source, [Finding("missing_value", f"points must have shape (n, 3) "
                                                                f"(x, y, z), got {P.shape}")])
    n = len(P)
    labels = list(labels) if labels is not None else [f"point {i}" for i in range(n)]
    A = {}
    for k, v in (attrs or {}).items():
        if v is None:
            continue
        a = np.asarray(v, dtype=float)
        if a.ndim == 0:
            a = np.full(n, float(a))
        if a.shape != (n,):
            raise TrackDataError(source, [Finding("missing_value", f"{k} has shape {a.shape}, "
                                                                   f"expected ({n},) (one value per point)")])
        A[k] = a.copy()
    return _Work(P, A, labels)


def _check_missing(ck: _Findings, W: _Work, cells: dict, columns, z_missing_ok: bool) -> None:
    """Step 1: missing or non-numeric coordinates (x or y: the point is dropped; z: filled
    later), widths and banking (filled later). Stops when a missing value cannot be repaired or
    fewer than :data:`MIN_POINTS` points are left."""
    shown = dict(zip("xyz", columns or ("x", "y", "z")))   # column names as the file has them
    bad_x, bad_y = ~np.isfinite(W.P[:, 0]), ~np.isfinite(W.P[:, 1])
    groups = [(bad_x & bad_y, ("x", "y")), (bad_x & ~bad_y, ("x",)), (bad_y & ~bad_x, ("y",))]
    if not z_missing_ok:
        groups.append((~np.isfinite(W.P[:, 2]), ("z",)))
    for bad, cols in groups:
        if not bad.any():
            continue
        idx = np.flatnonzero(bad)
        raw = cells.get(cols[0], {})
        vals = {i: raw.get(i, "nan") for i in idx}
        names = " and ".join(repr(shown[c]) for c in cols)
        what = (f"column{'s' if len(cols) > 1 else ''} {names}: missing or invalid value in "
                f"{len(idx)} row(s): {_list(W.labels, idx, vals)}; expected a finite number"
                f"{' in metres' if columns is None else ''}")
        if cols != ("z",):
            ck.add("missing_value", what, "the point is dropped")
        else:
            ok = np.isfinite(W.P[:, 2])
            ck.add("missing_value", what, "interpolated along the track" if ok.sum() >= 2 else "")
    lost_xy = bad_x | bad_y
    for k, a in W.attrs.items():
        bad = ~np.isfinite(a)
        if not bad.any() or k not in ("width_left", "width_right", "banking"):
            continue
        idx = np.flatnonzero(bad)
        raw = cells.get(k, {})
        vals = {i: raw.get(i, "nan") for i in idx}
        ck.add("missing_value", f"column {k!r}: missing or invalid value in {len(idx)} row(s): "
               f"{_list(W.labels, idx, vals)}; expected a finite number",
               "interpolated along the track" if np.isfinite(a).sum() >= 2 else "")
    if lost_xy.any():
        W.keep(~lost_xy)
    if len(W.P) < MIN_POINTS:
        ck.add("too_few_points", f"{len(W.P)} usable point(s), expected at least {MIN_POINTS} points")
        ck.stop()
    if any(not f.repairable for f in ck.findings):
        ck.stop()   # cannot go on without the missing values


def _check_extent(ck: _Findings, W: _Work) -> None:
    """Step 1b: the points' polyline is at most :data:`MAX_LENGTH` long and spans at least
    :data:`MIN_LENGTH` / pi (coordinates in metres); stops otherwise."""
    with np.errstate(over="ignore", invalid="ignore"):   # absurd coordinates: inf, refused
        extent = float(np.ptp(W.P[:, :2], axis=0).max())
        polyline = float(np.linalg.norm(np.diff(W.P[:, :2], axis=0), axis=1).sum())
    if not polyline <= MAX_LENGTH:
        ck.add("too_long", f"the points span {extent:.4g} m and their polyline is {polyline:.4g} m "
               f"long; expected a track of at most {MAX_LENGTH / 1e3:g} km (coordinates in metres? "
               "a glitch far away?)")
        ck.stop()
    if extent < MIN_LENGTH / math.pi:
        ck.add("too_short", f"the points span only {extent:.3g} m; expected a track of at least "
               f"{MIN_LENGTH:g} m in metres (latitude and longitude must be projected, e.g. with "
               "Track.from_zaggy_json)")
        ck.stop()


def _check_duplicates(ck: _Findings, W: _Work, closed):
    """Step 2: a loop's closing point (the last repeating the first) is dropped (a convention:
    ``closed`` None becomes True); points repeating the previous one are a finding. Returns
    ``closed``."""
    ends = W.P[[0, -1]] if np.all(np.isfinite(W.P[[0, -1], 2])) else W.P[[0, -1], :2]
    if closed is not False and float(np.linalg.norm(ends[1] - ends[0])) < DUPLICATE_TOL:
        W.keep(np.arange(len(W.P)) < len(W.P) - 1)   # the closing point of a loop: a convention
        closed = True if closed is None else closed
    step = np.linalg.norm(np.diff(W.P[:, :2], axis=0), axis=1)
    dup = np.concatenate([[False], step < DUPLICATE_TOL])
    if dup.any():
        idx = np.flatnonzero(dup)
        ck.add("duplicate_points", f"{len(idx)} point(s) repeat the previous point (horizontal "
               f"distance < {DUPLICATE_TOL * 1e3:g} mm): {_list(W.labels, idx)}; expected "
               "distinct consecutive points", "the repeated points are dropped")
        W.keep(~dup)
    if len(W.P) < MIN_POINTS:
        ck.add("too_few_points", f"{len(W.P)} distinct point(s), expected at least {MIN_POINTS} points")
        ck.stop()
    return closed


def _check_spikes(ck: _Findings, W: _Work, closed, closed_abs_tol) -> None:
    """Step 3: points far off the line in plan view (GPS glitches) are a finding."""
    P2 = W.P[:, :2]
    # (a loop whose first or last point is a spike does not look closed until it is removed)
    is_closed_guess = bool(closed) if closed is not None else any(
        detect_closed(Q, closed_abs_tol) for Q in (W.P, W.P[1:], W.P[:-1]))
    if len(W.P) < 5:
        return
    prv, nxt = np.roll(P2, 1, axis=0), np.roll(P2, -1, axis=0)
    d1 = np.linalg.norm(P2 - prv, axis=1)           # segment before each point
    d2 = np.linalg.norm(nxt - P2, axis=1)           # segment after
    d0 = np.linalg.norm(nxt - prv, axis=1)          # neighbour to neighbour
    if not is_closed_guess:                         # no wrap-around segment
        d1[0] = d2[-1] = 0.0
    local = np.maximum(np.roll(d1, 1), np.roll(d2, -1))   # the segments around those two
    med = float(np.median(np.linalg.norm(np.diff(P2, axis=0), axis=1)))
    spike = (np.minimum(d1, d2) > SPIKE_SPACING_FACTOR * np.maximum(local, med)) & \
            (d1 + d2 > SPIKE_DETOUR * np.maximum(d0, 1e-12))
    if spike.any():
        idx = np.flatnonzero(spike)
        off = {i: float(min(d1[i], d2[i])) for i in idx}
        ck.add("position_spike", f"{len(idx)} point(s) far off the line (a GPS glitch?): "
               f"{_list(W.labels, idx, off, ' m from its neighbours')}; expected a spacing "
               f"like the median, {med:.3g} m", "the points are dropped")
        W.keep(~spike)


def _check_closure(ck: _Findings, W: _Work, closed, closed_abs_tol):
    """Step 4: ``closed`` None is detected; a closed loop asked for must close (a gap of at
    most 5 % of the length is bridged by a straight line on repair). Returns ``closed``."""
    if closed is None:
        return detect_closed(W.P, closed_abs_tol)
    if not closed:
        return closed
    P2 = W.P[:, :2]
    seg = np.linalg.norm(np.diff(P2, axis=0), axis=1)
    med = float(np.median(seg))
    gap = float(np.linalg.norm(P2[-1] - P2[0]))
    tol = max(CLOSE_FACTOR * med, float(seg.max()))
    length = float(seg.sum()) + gap
    if gap > tol:
        ok = gap <= MAX_BRIDGE_FRACTION * length
        ck.add("unclosed_loop", f"a closed loop was asked for, but the last point "
               f"({W.labels[-1]}) is {gap:.4g} m from the first ({W.labels[0]}); expected at "
               f"most {tol:.4g} m (max of {CLOSE_FACTOR:g} x the median spacing and the longest "
               f"segment){'' if ok else f'; the gap is {100 * gap / length:.1f} % of the length: load it as an open track'}",
               f"the {gap:.4g} m gap is bridged by a straight line" if ok else "")
        if ok:
            k = max(int(math.ceil(gap / max(med, 1e-9))), 2)
            f = np.linspace(0.0, 1.0, k + 1)[1:-1]
            newP = W.P[-1] + f[:, None] * (W.P[0] - W.P[-1])
            na = {key: (v[-1] + f * (v[0] - v[-1])) for key, v in W.attrs.items()}
            W.insert(len(W.P), newP, na, "bridge")
    return closed


def _check_elevations(ck: _Findings, W: _Work, closed: bool, max_grade: float) -> None:
    """Step 5: elevations of 0 that stand for missing values (:func:`_elevation_zeros`) and
    jumps steeper than ``max_grade`` (:func:`_elevation_jumps`); the glitches are marked
    missing (NaN), to be filled by :func:`_fill_missing`."""
    z = W.P[:, 2]
    u, period = _chord(W.P[:, :2], closed)
    bad = np.zeros(len(z), bool)
    _elevation_zeros(ck, W, z, u, period, closed, max_grade, bad)
    _elevation_jumps(ck, W, z, u, period, closed, max_grade, bad)
    if bad.any():
        W.P[bad, 2] = np.nan


def _elevation_zeros(ck, W, z, u, period, closed, max_grade, bad) -> None:
    """Zeros next to elevations that would make the grade absurd (missing values written as
    0): a finding, marked in ``bad``."""
    zero = z == 0.0
    nonzero = np.isfinite(z) & ~zero
    if not (zero.any() and nonzero.any()):
        return
    iz = np.flatnonzero(zero)
    inz = np.flatnonzero(nonzero)
    flagged = []
    for i in iz:
        # nearest non-zero elevation before and after (wrapping for loops)
        pos = np.searchsorted(inz, i)
        cand = []
        if pos > 0 or closed:
            cand.append(inz[pos - 1])
        if pos < len(inz) or closed:
            cand.append(inz[pos % len(inz)])
        for j in cand:
            dist = abs(u[j] - u[i])
            if closed:
                dist = min(dist, period - dist)
            if abs(z[j]) > max_grade * dist + Z_NOISE:
                flagged.append(i)
                break
    if flagged:
        flagged = np.array(flagged)
        ck.add("elevation_zero", f"elevation z = 0 at {len(flagged)} point(s) next to "
               f"elevations around {np.median(z[nonzero]):.4g} m (a missing value written "
               f"as 0?): {_list(W.labels, flagged)}; expected the road's elevation "
               f"(a grade of at most {100 * max_grade:g} %)",
               "treated as missing and interpolated along the track")
        bad[flagged] = True


def _elevation_jumps(ck, W, z, u, period, closed, max_grade, bad) -> None:
    """Jumps between consecutive points steeper than ``max_grade`` (+ noise): an up-jump
    followed within :data:`MAX_GLITCH_RUN` points by a down-jump back to a consistent elevation
    brackets a glitch (repairable, marked in ``bad``); any other jump is a step (not)."""
    f = np.flatnonzero(np.isfinite(z) & ~bad)
    if len(f) < 3:
        return
    zf, uf = z[f], u[f]
    nf = len(f)
    if closed:       # two laps, so that runs across the closure are seen
        zf = np.concatenate([zf, zf])
        uf = np.concatenate([uf, uf + period])
    dz, dh = np.diff(zf), np.diff(uf)
    limit = max_grade * dh + Z_NOISE
    jump = np.abs(dz) > limit
    if not closed:
        jump_idx = np.flatnonzero(jump)
    else:            # pairs of the first lap, and the closing pair
        jump_idx = np.flatnonzero(jump[:nf])
    glitch, used = set(), set()
    for k in jump_idx:
        if k % nf in used:
            continue
        for m_ in range(k + 1, min(k + 1 + MAX_GLITCH_RUN, len(dz))):
            if jump[m_] and np.sign(dz[m_]) != np.sign(dz[k]) and \
                    abs(zf[m_ + 1] - zf[k]) <= max_grade * (uf[m_ + 1] - uf[k]) + Z_NOISE:
                glitch.update(int(f[j % nf]) for j in range(k + 1, m_ + 1))
                used.update({k % nf, m_ % nf})
                break
    steps = [k for k in jump_idx if k % nf not in used]
    if glitch:
        idx = np.array(sorted(glitch))
        ck.add("elevation_spike", f"{len(idx)} elevation(s) jump away from their neighbours "
               f"and back (glitches): {_list(W.labels, idx, z, ' m', 'z = ')}; expected at most "
               f"{100 * max_grade:g} % grade (+{Z_NOISE:g} m noise) to the neighbours",
               "treated as missing and interpolated along the track")
        bad[idx] = True
    if steps:
        desc = ", ".join(
            f"{dz[k]:+.4g} m between {W.labels[f[k % nf]]} and {W.labels[f[(k + 1) % nf]]} "
            f"({dh[k]:.3g} m apart)" for k in steps[:MAX_LISTED])
        more = f" and {len(steps) - MAX_LISTED} more" if len(steps) > MAX_LISTED else ""
        ck.add("elevation_step", f"{len(steps)} elevation step(s): {desc}{more}; expected at "
               f"most {100 * max_grade:g} % grade (+{Z_NOISE:g} m noise): which side is right "
               "cannot be told, correct the elevations")


def _fill_missing(W: _Work, closed: bool, z_missing_ok: bool) -> None:
    """Step 6: the values marked missing (repairs of steps 1 and 5) filled by linear
    interpolation along the track."""
    u, period = _chord(W.P[:, :2], closed)
    if not z_missing_ok:
        W.P[:, 2] = _interp_missing(u, W.P[:, 2], closed, period)
    for k in ("width_left", "width_right", "banking"):
        if k in W.attrs:
            W.attrs[k] = _interp_missing(u, W.attrs[k], closed, period)


def _check_widths_banking(ck: _Findings, W: _Work) -> None:
    """Step 7: half-widths in (0, :data:`MAX_HALF_WIDTH`] m, banking within
    +-:data:`MAX_BANKING` rad."""
    for k in ("width_left", "width_right"):
        a = W.attrs.get(k)
        if a is None:
            continue
        low = np.flatnonzero(a <= 0)
        high = np.flatnonzero(a > MAX_HALF_WIDTH)
        if len(low):
            ck.add("bad_width", f"column {k!r}: {len(low)} value(s) <= 0: "
                   f"{_list(W.labels, low, a, ' m')}; expected a half-width > 0 m (spine to edge)")
        if len(high):
            ck.add("bad_width", f"column {k!r}: {len(high)} value(s) > {MAX_HALF_WIDTH:g} m: "
                   f"{_list(W.labels, high, a, ' m')}; expected a half-width in metres")
    a = W.attrs.get("banking")
    if a is not None:
        high = np.flatnonzero(np.abs(a) > MAX_BANKING)
        if len(high):
            ck.add("bad_banking", f"column 'banking': {len(high)} value(s) beyond +-{MAX_BANKING:.3f} "
                   f"rad: {_list(W.labels, high, a, ' rad')}; expected radians, not degrees")


def check_track_width(value, name: str = "track_width", per_side: bool = False):
    """Check a track width given by the user (``--track-width``, ``track_width=``).

    Parameters
    ----------
    value : float or None
        The total width [m] (``per_side``: the width on each side of the centreline).
    name : str
        Named in the message (e.g. ``'--track-width'``).
    per_side : bool

    Returns
    -------
    float or None
        The half-width each side [m] (None if ``value`` is None).

    Raises
    ------
    ValueError
        Not a finite number, not > 0, or a half-width above 100 m; the message names ``name``,
        the value and what was expected.
    """
    if value is None:
        return None
    limit = MAX_HALF_WIDTH if per_side else 2 * MAX_HALF_WIDTH
    what, note = (("the width each side of the centreline", "") if per_side else
                  ("the track's total width", " (half of it each side of the centreline)"))
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not (math.isfinite(v) and 0 < v <= limit):
        raise ValueError(f"{name} = {value!r}: expected {what} in metres, > 0 m and at most "
                         f"{limit:g} m{note}")
    return v if per_side else v / 2.0


def _warn(source, findings):
    for f in findings:
        if f.repaired:
            warnings.warn(f"{source}: {f}", TrackRepairWarning, stacklevel=3)


def _runs(mask: np.ndarray, s: np.ndarray) -> list:
    """Contiguous runs of True in mask as (s_start, s_end)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return []
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate([[idx[0]], idx[breaks + 1]])
    ends = np.concatenate([idx[breaks], [idx[-1]]])
    return [(float(s[a]), float(s[b])) for a, b in zip(starts, ends)]


def _ranges(runs) -> str:
    txt = ", ".join(f"s = {a:.0f}-{b:.0f} m" if b > a else f"s = {a:.0f} m" for a, b in runs[:MAX_LISTED])
    return txt + (f" and {len(runs) - MAX_LISTED} more" if len(runs) > MAX_LISTED else "")


# ---------------------------------------------------------------------------------------
def check_sector(track, start: float, length: Optional[float], *, repair: bool = False):
    """Check a sector ``[start, start + length]`` against a track.

    Parameters
    ----------
    track : Track
    start : float
        Sector start [m], ``0 <= start < track.length``.
    length : float or None
        Sector length [m] (None: to the end of the track).
    repair : bool
        On an open track, shorten a sector that runs past the end to end there.

    Returns
    -------
    (start, length, findings)
        ``length`` possibly shortened; ``findings`` holds the repair made, if any.

    Raises
    ------
    TrackDataError
        ``start`` outside the track, a non-positive or non-finite length, a sector longer
        than one lap of a closed loop (the message gives the loop's length; never repaired),
        or (without ``repair``) a sector past the end of an open track.
    """
    src = f"track {track.name!r}"
    L = track.length
    if not (isinstance(start, (int, float)) and math.isfinite(start) and 0 <= start < L):
        raise TrackDataError(src, [Finding("sector_past_end", f"start = {start!r} m: expected "
                                                              f"0 <= start < {L:.1f} m (the track's length)")])
    if length is None:
        return start, L - start, []
    if not (math.isfinite(length) and length > 0):
        raise TrackDataError(src, [Finding("sector_past_end", f"length = {length!r} m: expected "
                                                              "a positive, finite sector length")])
    if track.closed and length > L + 1e-6 * max(1.0, L):
        raise TrackDataError(src, [Finding(
            "longer_than_lap", f"sector length {number_text(length)} m: longer than one lap of "
            f"the closed loop, which is {L:.1f} m long; expected a length <= {L:.1f} m (a sector "
            "is at most one lap; the whole lap: --full-lap, Python: periodic=True, length=None)")])
    if not track.closed and start + length > L + 1e-6:
        f = Finding("sector_past_end",
                    f"the sector {number_text(start)} m + {number_text(length)} m ends at "
                    f"{number_text(start + length)} m, past the end of the open track "
                    f"({L:.1f} m); expected length <= {L - start:.1f} m",
                    f"the sector is shortened to {L - start:.1f} m", repaired=repair)
        if not repair:
            raise TrackDataError(src, [f])
        _warn(src, [f])
        return start, L - start, [f]
    return start, length, []


def check_vehicle_fits(track, vehicle, start: float = 0.0, length: Optional[float] = None,
                       margin: float = 0.0, spacing: float = 1.0) -> None:
    """Check that the car fits between the track's edges on a sector.

    Parameters
    ----------
    track : Track
    vehicle : VehicleParameters
        Its ``width`` [m].
    start, length : float
        The sector [m] (length None: to the end).
    margin : float
        Distance kept from each edge [m] (``track_margin`` of the OCP).
    spacing : float
        Sampling [m].

    Raises
    ------
    TrackDataError
        Where ``width_left + width_right < vehicle.width + 2 margin`` (ranges of s listed).
    """
    L = track.length - start if length is None else length
    n = max(int(math.ceil(L / spacing)), 1)
    s = start + np.linspace(0.0, L, n + 1)
    if track.closed:
        s = np.mod(s, track.length)
    else:
        s = np.clip(s, 0.0, track.length)
    tp = track.evaluate(s)
    total = tp.width_left + tp.width_right
    need = vehicle.width + 2 * margin
    narrow = total < need
    if narrow.any():
        k = int(np.argmin(total))
        raise TrackDataError(f"track {track.name!r}", [Finding(
            "narrower_than_car", f"narrower than the car {vehicle.name!r} ({vehicle.width:.2f} m wide"
            f"{f', plus {margin:g} m margin each side' if margin else ''}) on {_ranges(_runs(narrow, s))}: "
            f"{total[k]:.2f} m at s = {s[k]:.1f} m; expected width_left + width_right >= {need:.2f} m")])


LAT_LON_ORDERS = ("auto", "lat,lon", "lon,lat")
"""The values of the option ``lat_lon_order`` (:func:`pyomo_lap.track.gps.check_geodetic`): ``'auto'`` reads a GPS
file as named (swapped only when latitudes beyond 90 deg force it, with ``repair``),
``'lat,lon'`` what the file names latitude is the latitude, ``'lon,lat'`` what the file names
latitude is the longitude (read swapped)."""


def check_lat_lon_order(order, name: str = "lat_lon_order") -> str:
    """The option ``lat_lon_order`` checked: one of :data:`LAT_LON_ORDERS`.

    Raises
    ------
    ValueError
        Another value (one line: the option, the value, the values allowed).
    """
    if isinstance(order, str) and order in LAT_LON_ORDERS:
        return order
    raise ValueError(f"{name} = {order!r}: expected one of "
                     f"{', '.join(map(repr, LAT_LON_ORDERS))}")
