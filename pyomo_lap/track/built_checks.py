"""Checks of a built track (:func:`check_track`: its length, its grades, a centreline crossing
itself without a bridge, a flat track's crossings taken as bridges) and :func:`finish`, what
every loader does last. The checks of the raw points, of a sector and of the car's width, and
the kinds of findings: :mod:`pyomo_lap.track.checks`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from scipy.spatial import cKDTree

from .checks import (
    BRIDGE_CLEARANCE,
    MAX_GRADE,
    MAX_LISTED,
    MIN_LENGTH,
    Finding,
    TrackDataError,
    _ranges,
    _runs,
)
from .report import step

__all__ = ["check_track", "finish"]


def _segments_crossing(P2: np.ndarray, closed: bool):
    """Pairs of non-adjacent segments of a polyline that cross, with the crossing
    parameters: list of (i, j, t_i, t_j), segment k from P2[k] to P2[k+1] (wrapping)."""
    A = P2
    B = np.roll(P2, -1, axis=0) if closed else P2[1:]
    A = A if closed else P2[:-1]
    n = len(A)
    if n < 3:
        return []
    mid = 0.5 * (A + B)
    half = 0.5 * np.linalg.norm(B - A, axis=1)
    pairs = cKDTree(mid).query_pairs(r=2.0 * float(half.max()) + 1e-9, output_type="ndarray")
    if len(pairs) == 0:
        return []
    i, j = pairs[:, 0], pairs[:, 1]
    adjacent = (np.abs(i - j) <= 1) | (closed & (np.abs(i - j) == n - 1))
    i, j = i[~adjacent], j[~adjacent]
    r = B[i] - A[i]
    s = B[j] - A[j]
    qp = A[j] - A[i]
    den = r[:, 0] * s[:, 1] - r[:, 1] * s[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (qp[:, 0] * s[:, 1] - qp[:, 1] * s[:, 0]) / den
        w = (qp[:, 0] * r[:, 1] - qp[:, 1] * r[:, 0]) / den
    hit = (np.abs(den) > 1e-15) & (t >= 0) & (t <= 1) & (w >= 0) & (w <= 1)
    return list(zip(i[hit], j[hit], t[hit], w[hit]))


def check_track(track, *, source: Optional[str] = None, max_grade: float = MAX_GRADE,
                spacing: float = 2.0, upper_branch: str = "later") -> list:
    """Check a built :class:`~pyomo_lap.track.geometry.Track`: length, grades, self-intersections.

    A flat track (every elevation the same: a file without elevation data, a 2D file, or one
    loaded with ``flat=True``) may cross itself: a figure of eight such as Suzuka in a 2D
    file cannot say which branch is the bridge. Each crossing is taken as a bridge and
    recorded in ``track.provenance``: the processing step ``crossing_bridge`` and
    ``provenance['bridges']`` (``s_lower``, ``s_upper`` [m], ``xy`` [m]); the track stays
    flat (z = 0 both ways: the crossing matters for the drawing only). A track with
    elevations must have its branches at least :data:`BRIDGE_CLEARANCE` apart where they cross.

    Parameters
    ----------
    track : Track
    source : str, optional
        Named in the messages (default: the track's source file or name).
    max_grade : float
        Steepest plausible grade [-].
    spacing : float
        Sampling of the checks [m].
    upper_branch : {"later", "earlier"}
        Which branch of a flat track's crossing is taken as the upper one: the later one in
        the direction of travel (from s = 0), or the earlier.

    Returns
    -------
    list of Finding
        Empty (nothing here is repairable: any finding raises).

    Raises
    ------
    TrackDataError
        Too short, too steep somewhere, or a plan-view self-intersection without a bridge
        on a track with elevations.
    ValueError
        ``upper_branch`` neither 'later' nor 'earlier'.
    """
    if upper_branch not in ("later", "earlier"):
        raise ValueError(f"upper_branch = {upper_branch!r}; expected 'later' or 'earlier'")
    source = source or (track.provenance or {}).get("source_file") or f"track {track.name!r}"
    findings = []
    L = track.length
    if not L >= MIN_LENGTH:
        findings.append(Finding("too_short", f"the track is {L:.4g} m long, expected at least "
                                f"{MIN_LENGTH:g} m (are the coordinates in metres? latitude and "
                                "longitude must be projected, e.g. with Track.from_zaggy_json)"))
        raise TrackDataError(source, findings)
    s = track.sample_s(min(spacing, L / 50.0))
    # spine (re-centred, see Track.origin) and its tangent (cheaper than evaluate)
    position, d1 = track._p(s), track._p(s, 1)
    origin = np.asarray(getattr(track, "origin", np.zeros(3)), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        grade = d1[:, 2] / np.hypot(d1[:, 0], d1[:, 1])
    grade = np.where(np.isfinite(grade), grade, np.inf)
    steep = np.abs(grade) > max_grade
    if steep.any():
        runs = _runs(steep, s)
        k = int(np.argmax(np.abs(grade)))
        findings.append(Finding(
            "steep_grade", f"grade up to {100 * grade[k]:+.1f} % at s = {s[k]:.1f} m "
            f"(steeper than {100 * max_grade:g} % on {_ranges(runs)}); expected a road: "
            "check the elevations there (glitches, a missing value written as 0, a step)"))
    crossings = _low_crossings(track, s, position, origin)
    if crossings and np.ptp(position[:, 2]) < 1e-9:       # a flat track: no elevation data
        _record_bridges(track, crossings, upper_branch)
    elif crossings:
        desc = "; ".join(f"s = {a:.1f} m and s = {b:.1f} m at (x, y) = ({xy[0]:.1f}, {xy[1]:.1f}) m, "
                         f"height difference {dz:.2f} m" for a, b, xy, dz in crossings[:MAX_LISTED])
        more = f" and {len(crossings) - MAX_LISTED} more" if len(crossings) > MAX_LISTED else ""
        findings.append(Finding(
            "self_intersection", f"the centreline crosses itself {len(crossings)} time(s): "
            f"{desc}{more}; expected no crossing, or a bridge (>= {BRIDGE_CLEARANCE:g} m "
            "height difference): check the point order and glitches there; if it is a bridge, "
            f"give its height in the elevations (z of the upper road {BRIDGE_CLEARANCE:g} m or "
            "more above the lower one), or load the track flat (--flat; Python: flat=True): "
            "a crossing of a flat track is taken as a bridge"))
    if findings:
        raise TrackDataError(source, findings)
    return findings


def _low_crossings(track, s, position, origin) -> list:
    """The plan-view crossings of the spine (sampled at ``s``) whose two branches are less than
    :data:`BRIDGE_CLEARANCE` apart in height: (s_a, s_b, (x, y) in the file's frame, dz)."""
    P2 = position[:, :2]
    hits = _segments_crossing(P2, track.closed)
    crossings = []
    if not hits:
        return crossings
    z = position[:, 2]
    n = len(s)
    L_s = np.append(s, track.length) if track.closed else s
    zz = np.append(z, z[0]) if track.closed else z
    for i, j, ti, tj in hits:
        zi = zz[i] + ti * (zz[i + 1] - zz[i])
        zj = zz[j] + tj * (zz[j + 1] - zz[j])
        if abs(zi - zj) < BRIDGE_CLEARANCE:
            si = L_s[i] + ti * (L_s[i + 1] - L_s[i])
            sj = L_s[j] + tj * (L_s[j + 1] - L_s[j])
            if track.closed:          # (a crossing at the start: s = 0, not s = L - 1 mm)
                si, sj = sorted(v % track.length if track.length - v % track.length > 1e-6 *
                                track.length else 0.0 for v in (si, sj))
            xy = P2[i] + ti * (P2[(i + 1) % n] - P2[i]) + origin[:2]   # the file's frame
            xy = np.round(xy, 1) + 0.0   # no "-0.0"
            crossings.append((si, sj, xy, abs(zi - zj)))
    return crossings


def _record_bridges(track, crossings, upper_branch: str) -> None:
    """The crossings of a flat track taken as bridges: the processing step ``crossing_bridge``
    and ``provenance['bridges']`` (once per track, however often it is checked)."""
    bridges = []
    for a, b, xy, _ in crossings:
        lo, up = (a, b) if upper_branch == "later" else (b, a)
        bridges.append(dict(s_lower=float(lo), s_upper=float(up), xy=[float(xy[0]), float(xy[1])]))
    where = "; ".join(f"(x, y) = ({br['xy'][0]:.1f}, {br['xy'][1]:.1f}) m, s = "
                      f"{br['s_lower']:.1f} m under s = {br['s_upper']:.1f} m" for br in bridges[:MAX_LISTED])
    prov = track.provenance
    prov["bridges"] = bridges
    steps = [st for st in prov.get("processing_steps", []) if st.get("step") != "crossing_bridge"]
    steps.append(step(
        "crossing_bridge", f"the centreline crosses itself {len(bridges)} time(s) and the track "
        f"is flat (no elevation data): each crossing is taken as a bridge, the {upper_branch} "
        f"branch in the direction of travel as the upper one ({where}); the track stays flat (z "
        "= 0 both ways: the crossing matters only for the drawing); the other branch on top: "
        "upper_branch='earlier' (pyomo_lap.track.built_checks.check_track)",
        method=f"{len(bridges)} crossing(s) taken as bridges, the {upper_branch} branch upper: "
               + ", ".join(f"s = {br['s_upper']:.0f} m over s = {br['s_lower']:.0f} m"
                           for br in bridges[:MAX_LISTED]),
        count=len(bridges), where_m=[(br["s_lower"], br["s_lower"]) for br in bridges]
        + [(br["s_upper"], br["s_upper"]) for br in bridges]))
    prov["processing_steps"] = steps


def finish(track, findings: list, source: str, max_grade: float):
    """Check the built track and record the repairs made to its points."""
    check_track(track, source=source, max_grade=max_grade)
    track.findings = list(findings)
    if findings:
        track.provenance["repairs"] = [str(f) for f in findings]
    return track
