"""Tracks from their boundaries: the centreline between a left and a right boundary
(:func:`centreline_from_boundaries`, the half-widths along its normal,
:func:`distance_along_normal`), and the track constructors
:meth:`~pyomo_lap.track.geometry.Track.from_boundaries`,
:meth:`~pyomo_lap.track.geometry.Track.from_kml` (boundaries in KML) and
:meth:`~pyomo_lap.track.geometry.Track.from_fastest_lap_xml` (fastest-lap's files: a
centreline, its boundaries decided left or right geometrically): :class:`BoundaryLoaders`, a
base class of :class:`~pyomo_lap.track.geometry.Track`.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
from scipy.interpolate import Akima1DInterpolator

from . import build as tb, checks as track_checks, formats
from .build import _distance_to_polyline, nearest_on_polyline
from .built_checks import finish as _finish
from .checks import MAX_GRADE, TrackDataError
from .gps import check_geodetic, lat_lon_record, project_geodetic, projection_string
from .report import (
    assumption,
    flat_assumption as _flat_assumption,
    flattened_step as _flattened_step,
    step,
    widths_set_step as _widths_set_step,
)
from .smoothing import chord_parameter

__all__ = ["BoundaryLoaders", "centreline_from_boundaries", "distance_along_normal"]


def _dense_boundary(B: np.ndarray, closed: bool, spacing: float) -> np.ndarray:
    """A boundary (n, 3) resampled every ``spacing`` [m] of its plan-view chord length on a
    modified Akima interpolant through its points (the elevation linearly; NaN where not
    given), so that the nearest points of :func:`centreline_from_boundaries` do not fall on
    chords. Unlike a cubic spline it makes no loop or overshoot at a kink (a boundary drawn on
    a map turns by up to 86 deg at one point: fastest-lap's Catalunya, where a cubic spline
    swings 1.8 m off the drawn line) and follows smooth curves (a circle of radius 94 m drawn
    with 3.3 m segments: within 1 mm). A segment longer than 4 times the median is a straight
    as drawn (a curve is drawn with short segments): interpolated linearly. Points closer than
    5 % of the median spacing to the previous one are merged first."""
    seg = np.linalg.norm(np.diff(B[:, :2], axis=0), axis=1)
    near = 0.05 * float(np.median(seg))       # points this close to the previous one: merged
    keep, last = [0], B[0, :2]
    for i in range(1, len(B)):                 # (a spline through them would make a loop)
        if np.linalg.norm(B[i, :2] - last) >= near:
            keep.append(i)
            last = B[i, :2]
    if closed and len(keep) > 1 and np.linalg.norm(B[keep[-1], :2] - B[0, :2]) < near:
        keep.pop()
    B = B[keep]
    xy = B[:, :2]
    if closed:
        u = chord_parameter(np.concatenate([xy, xy[:1]]))
        uu = np.linspace(0.0, u[-1], max(int(np.ceil(u[-1] / spacing)), len(B)), endpoint=False)
        z = np.interp(uu, u, np.concatenate([B[:, 2], B[:1, 2]]))
        k = min(3, len(B) - 1)            # a few points of the other end on each side
        uw = np.concatenate([u[-1 - k:-1] - u[-1], u, u[-1] + u[1:k + 1]])
        xyw = np.concatenate([xy[-k:], xy, xy[:1], xy[1:k + 1]])
    else:
        u = chord_parameter(xy)
        uu = np.linspace(0.0, u[-1], max(int(np.ceil(u[-1] / spacing)) + 1, len(B)))
        z = np.interp(uu, u, B[:, 2])
        uw, xyw = u, xy
    if len(uw) < 5:
        return np.column_stack([np.interp(uu, u, xy[:len(u), 0] if not closed else np.append(xy[:, 0], xy[0, 0])),
                                np.interp(uu, u, xy[:len(u), 1] if not closed else np.append(xy[:, 1], xy[0, 1])), z])
    spl = Akima1DInterpolator(uw, xyw, axis=0, method="makima")
    out = spl(uu)
    # a segment much longer than the boundary's typical one is a straight as drawn (a curve is
    # drawn with short segments): linear there, not bowed by the curve at its ends
    ue = np.concatenate([u, [u[-1]]]) if not closed else u
    seg = np.diff(ue)
    xy_closed = np.concatenate([xy, xy[:1]]) if closed else xy
    long = np.flatnonzero(seg > 4.0 * float(np.median(seg[seg > 0])))
    for j in long:
        sel = (uu >= ue[j]) & (uu <= ue[j + 1])
        f = (uu[sel] - ue[j]) / seg[j]
        out[sel] = xy_closed[j] + f[:, None] * (xy_closed[j + 1] - xy_closed[j])
    return np.column_stack([out, z])


def centreline_from_boundaries(left, right, closed: bool, spacing: float = 0.5):
    """Centreline points between two track boundaries, with their half-widths.

    Both boundaries are resampled every ``spacing`` [m] on cubic splines through their points
    (:func:`_dense_boundary`); each point of the left one and the nearest point of the right
    one (plan view) give a midpoint. The half-widths are the midpoints' (plan-view) distances
    to the two resampled boundaries; the elevation is the mean of the two boundaries' (one of
    them where the other has none; NaN where neither has).

    Parameters
    ----------
    left, right : ndarray (n, 3), (m, 3)
        x, y, z [m] (z NaN: not given), in the direction of travel.
    closed : bool
    spacing : float
        [m].

    Returns
    -------
    mid : ndarray (k, 3)
        The centreline points [m].
    width_left, width_right : ndarray (k,)
        [m].
    side : float
        +1 when the left boundary lies left of the direction of travel (the median over the
        midpoints), -1 when it lies right.
    """
    L = _dense_boundary(np.asarray(left, float), closed, spacing)
    R = _dense_boundary(np.asarray(right, float), closed, spacing)
    nr, sr, fr = nearest_on_polyline(R[:, :2], L[:, :2], closed)
    nxt = (sr + 1) % len(R) if closed else np.minimum(sr + 1, len(R) - 1)
    zr = R[sr, 2] + fr * (R[nxt, 2] - R[sr, 2])
    both = np.isfinite(L[:, 2]) & np.isfinite(zr)
    z = np.where(both, 0.5 * (L[:, 2] + zr), np.where(np.isfinite(L[:, 2]), L[:, 2], zr))
    mid = np.column_stack([(L[:, :2] + nr) / 2, z])
    keep = np.concatenate([[True], np.linalg.norm(np.diff(mid[:, :2], axis=0), axis=1) >= 1e-3])
    mid = mid[keep]
    if closed and len(mid) > 1 and np.linalg.norm(mid[-1, :2] - mid[0, :2]) < 1e-3:
        mid = mid[:-1]
    wl = _distance_to_polyline(L[:, :2], mid[:, :2], closed)
    wr = _distance_to_polyline(R[:, :2], mid[:, :2], closed)
    # which side the left boundary is on: the tangent of the midpoints x (left - midpoint)
    t = np.roll(mid[:, :2], -1, axis=0) - np.roll(mid[:, :2], 1, axis=0)
    if not closed:
        t[0], t[-1] = mid[1, :2] - mid[0, :2], mid[-1, :2] - mid[-2, :2]
    v = nearest_on_polyline(L[:, :2], mid[:, :2], closed)[0] - mid[:, :2]
    cross = t[:, 0] * v[:, 1] - t[:, 1] * v[:, 0]
    side = 1.0 if np.median(np.sign(cross)) >= 0 else -1.0
    return mid, wl, wr, side


def distance_along_normal(C, N, B, closed: bool, reach: int = 3) -> np.ndarray:
    """How far from each point ``C`` (n, 2) along its unit normal ``N`` (n, 2) the line
    crosses the polyline ``B`` (m, 2) (closed: ``B[-1] -> B[0]`` too): the half-width of a
    track whose boundary is ``B`` (the edge ``C + t N`` lies on it).

    The crossing is searched on the segments within ``reach`` of the one nearest to the point
    ``C + d N``, d the distance from ``C`` to ``B`` (iterated twice); where the line crosses none
    of them (a kink it passes by), the distance to ``B`` is taken.

    Returns
    -------
    ndarray (n,)
        |t| [m].
    """
    C, N, B = (np.asarray(a, float) for a in (C, N, B))
    M = len(B)
    near, seg, _ = nearest_on_polyline(B, C, closed)
    d = np.linalg.norm(near - C, axis=1)
    sign = np.sign(np.sum((near - C) * N, axis=1))
    sign[sign == 0] = 1.0
    t = sign * d
    found = np.zeros(len(C), bool)
    for _ in range(2):
        _, seg, _ = nearest_on_polyline(B, C + t[:, None] * N, closed)
        best = np.full(len(C), np.inf)
        tn = t.copy()
        for off in range(-reach, reach + 1):
            a = seg + off
            if closed:
                a = np.mod(a, M)
                b = np.mod(a + 1, M)
                ok = np.ones(len(C), bool)
            else:
                ok = (a >= 0) & (a + 1 < M)
                a = np.clip(a, 0, M - 2)
                b = a + 1
            e = B[b] - B[a]
            den = N[:, 0] * e[:, 1] - N[:, 1] * e[:, 0]
            w = B[a] - C
            with np.errstate(divide="ignore", invalid="ignore"):
                tt = (w[:, 0] * e[:, 1] - w[:, 1] * e[:, 0]) / den
                u = (w[:, 0] * N[:, 1] - w[:, 1] * N[:, 0]) / den
            hit = ok & (np.abs(den) > 1e-12) & (u >= -1e-9) & (u <= 1 + 1e-9) & (np.sign(tt) == sign)
            closer = hit & (np.abs(tt - t) < best)
            tn[closer], best[closer] = tt[closer], np.abs(tt - t)[closer]
        found |= np.isfinite(best)
        t = tn
    return np.where(found, np.abs(t), d)


class BoundaryLoaders:
    """The constructors of :class:`~pyomo_lap.track.geometry.Track` from boundaries (a base
    class of it: call them as ``Track.from_boundaries``, ``Track.from_kml``,
    ``Track.from_fastest_lap_xml``)."""

    @classmethod
    def from_boundaries(cls, left, right, closed: bool | None = None, *,
                        smoothing: float | None = None, z_smoothing: float | None = 200.0,
                        spacing: float | None = None, name: str = "track",
                        provenance: dict | None = None, repair: bool = False,
                        max_grade: float = MAX_GRADE, source: str | None = None,
                        labels=(None, None), min_jacobian: float | None = 0.5):
        """A track from its left and right boundaries (in the direction of travel).

        The centreline is the set of midpoints between each point of one boundary and the
        nearest point of the other (both ways, ordered along the left boundary,
        :func:`pyomo_lap.track.boundaries.centreline_from_boundaries`), smoothed into a regular
        reference line (``min_jacobian``); the half-widths are the distances from it to the
        two boundaries; the elevation is the mean of the
        two boundaries'. The boundaries are checked first
        (:func:`pyomo_lap.track.checks.check_points`: missing values, duplicates, spikes,
        closure), the midpoints then go through the checks and the smoothing of
        :meth:`from_points` (with their widths), and the built track through
        :func:`~pyomo_lap.track.built_checks.check_track`. The processing step
        ``centreline_from_boundaries`` records it.

        Parameters
        ----------
        left, right : array_like (n, 3), (m, 3)
            Boundary points x, y, z [m] in the direction of travel (z NaN: not given). The
            left boundary must lie left of the direction of travel that its points' order
            gives (finding ``boundary_side``; ``repair`` swaps them).
        closed : bool, optional
            None: detected on the left boundary.
        smoothing, z_smoothing, spacing : float, optional
            As :meth:`from_points` (the elevation's cut-off defaults to 200 m: boundaries
            drawn on maps carry the terrain's heights, with steps; the spacing to 1 m).
            ``smoothing`` is the cut-off the reference line starts from (see
            ``min_jacobian``).
        min_jacobian : float or None
            The centreline is a reference line for the lateral coordinate n (left positive):
            the point at n is at ``1 - n Omega_z`` times the centreline's speed, which must
            stay positive across the track. Where the boundaries have a kinked apex, their
            midline turns about the kink with half the track's width as radius (fastest-lap's
            Catalunya: 10.5 m in the last chicane at a 30 m cut-off, 4.3 m with light
            smoothing), and ``1 - n Omega_z`` reaches 0.3 on the inside edge. The cut-off is
            raised by factors 2^(1/4) (up to 24 times) until ``1 - n Omega_z >= min_jacobian``
            over the whole width (step ``centreline_from_boundaries``; None: not raised); the
            half-widths are then measured from the smoothed centreline to the boundaries, so
            the track's edges stay on them whatever the smoothing.
        name, provenance, repair, max_grade
            As :meth:`from_points`.
        source : str, optional
            Named in the messages (default ``track NAME``).
        labels : (list, list), optional
            Where each point of the two boundaries comes from (messages).

        Raises
        ------
        TrackDataError (a ValueError)
            Bad boundary points, the boundaries on the wrong sides (without ``repair``), a bad
            centreline or a bad track; every problem is listed.
        """
        source = source or f"track {name!r}"
        if closed is None:
            closed = _boundary_closes(left)
        chk_l = track_checks.check_points(left, closed, labels=labels[0], repair=repair,
                                          source=f"{source}, left boundary", z_missing_ok=True,
                                          elevation_checks=False)
        chk_r = track_checks.check_points(right, chk_l.closed, labels=labels[1], repair=repair,
                                          source=f"{source}, right boundary", z_missing_ok=True,
                                          elevation_checks=False)
        closed = chk_l.closed
        L, R = chk_l.points, chk_r.points
        mid, wl, wr, side = centreline_from_boundaries(L, R, closed)
        findings = chk_l.findings + chk_r.findings
        if side < 0:
            f = track_checks.Finding(
                "boundary_side", "the left boundary lies right of the direction of travel "
                "that the order of its points gives (and the right boundary left of it); "
                "expected the left boundary on the left: swap the two boundaries (or reverse "
                "the order of both)", "the two boundaries are swapped", repaired=bool(repair))
            if not repair:
                raise TrackDataError(source, [f])
            track_checks._warn(source, [f])
            findings.append(f)
            L, R = R, L
            mid, wl, wr, side = centreline_from_boundaries(L, R, closed)
        prov = _midpoints_provenance(provenance, L, R, mid, wl, wr)
        chk = track_checks.check_points(mid, closed, attrs=dict(width_left=wl, width_right=wr),
                                        source=f"{source}, centreline", repair=repair,
                                        max_grade=max_grade, z_missing_ok=True,
                                        elevation_checks=False)
        a = chk.attrs
        build = lambda cut: cls._build_from_points(  # noqa: E731
            chk.points, chk.closed, a["width_left"], a["width_right"], None, cut, z_smoothing,
            1.0 if spacing is None else spacing, name, dict(prov))
        tr = _regular_reference_line(cls, build, smoothing, L, R, chk.closed, min_jacobian)
        return _finish(tr, findings + chk.findings, source, max_grade)

    @classmethod
    def from_kml(cls, path, right=None, name: str | None = None, closed: bool | None = None,
                 smoothing: float | None = 30.0, z_smoothing: float | None = 200.0,
                 repair: bool = False, max_grade: float = MAX_GRADE,
                 flat: bool = False, lat_lon_order: str = "auto"):
        """A track from its boundaries in KML (longitude, latitude, altitude, as Google Earth
        and fastest-lap's track database write them), through :meth:`from_boundaries`.

        Where the two boundaries come from:

        * ``right`` given: the first LineString of ``path`` is the left boundary, the first of
          ``right`` the right one;
        * ``path`` holds two LineStrings or more: those whose Placemark names contain
          ``left`` and ``right``, else the first two, in that order (said in the step
          ``file_read``);
        * ``path`` holds one LineString and is named ``*_left.kml`` (or ``*_right.kml``):
          the other boundary is the file ``*_right.kml`` (``*_left.kml``) beside it
          (fastest-lap's ``catalunya_left.kml``, ``catalunya_right.kml``).

        Latitude and longitude are checked (:func:`pyomo_lap.track.gps.check_geodetic`,
        ``lat_lon_order``: ``'lon,lat'`` reads KML's second value, its latitude, as the
        longitude) and projected (azimuthal equidistant, centred at the left boundary's first
        point).

        Parameters
        ----------
        path, right : str or Path
        name : str, optional
            Default: the file's stem without ``_left``/``_right``.
        smoothing : float, optional
            Cut-off wavelength of the plan-view smoother [m]: 30 m by default, as for raw
            GPS data (:meth:`from_geodetic`); the cut-off the reference line starts from:
            it is raised until the lateral coordinate is regular across the track
            (``min_jacobian`` of :meth:`from_boundaries`; fastest-lap's Catalunya: 76 m,
            18.7 m in the last chicane where fastest-lap has 19.2 m).
        closed, z_smoothing, repair, max_grade
            As :meth:`from_boundaries`.
        flat : bool
            Ignore the boundaries' altitudes: a flat track (step ``flattened``).

        Raises
        ------
        FileNotFoundError
            A file that does not exist (the missing ``*_right.kml`` too).
        ValueError
            Not a KML file, no LineString, one LineString and no second file.
        TrackDataError (a ValueError)
            Bad data (see :meth:`from_boundaries`).
        """
        path = Path(path)
        (left_c, right_c), how, files = _kml_boundaries(path, right)
        name = name or _SIDE_TOKEN.sub("", path.stem) or path.stem
        source = f"track file {path}"
        sides, geo = [], [[], []]
        for c, side in ((left_c, "left"), (right_c, "right")):
            lat, lon, _, f, st = check_geodetic(
                c[:, 1], c[:, 0], source=f"{source}, {side} boundary", repair=repair,
                columns=("latitude", "longitude"), order=lat_lon_order)
            track_checks._warn(source, f)
            geo[0] += f
            geo[1] += st
            sides.append((lat, lon, np.full(len(c), np.nan) if flat else c[:, 2]))
        lat0, lon0 = float(sides[0][0][0]), float(sides[0][1][0])
        pts = []
        for lat, lon, alt in sides:
            x, y = project_geodetic(lat, lon, lat0, lon0)
            pts.append(np.column_stack([x, y, alt]))
        prov = dict(source_file=str(path.resolve()), sha256=tb.sha256_file(path),
                    source_files=[str(Path(f).resolve()) for f in files],
                    projection=projection_string(lat0, lon0),
                    lat_lon_order=lat_lon_record(lat_lon_order, *geo),
                    processing_steps=[step("file_read", f"KML boundaries: {how}",
                                           method=how, count=len(left_c) + len(right_c))]
                    + ([_flattened_step(len(left_c) + len(right_c))] if flat else []))
        return cls.from_boundaries(
            pts[0], pts[1], closed, smoothing=smoothing, z_smoothing=z_smoothing, name=name,
            provenance=prov, repair=repair, max_grade=max_grade, source=source,
            labels=([f"left point {i}" for i in range(len(left_c))],
                    [f"right point {i}" for i in range(len(right_c))]))

    @classmethod
    def from_fastest_lap_xml(cls, path, name: str | None = None, *, spacing: float = 1.0,
                             flat: bool = False, track_width: float | None = None,
                             repair: bool = False, max_grade: float = MAX_GRADE):
        """A track from a fastest-lap track file (github juanmanzanero/fastest-lap,
        ``database/tracks/<circuit>/<circuit>.xml``, MIT licence; read by
        :func:`pyomo_lap.track.formats.read_fastest_lap_xml`).

        * **Frame.** fastest-lap's x is east, its y *south* and its z *down* (its
          ``Circuit_preprocessor::transform_coordinates`` negates latitude and altitude; the
          comment in the 2D files' ``GPS_parameters`` says otherwise, but their
          ``left_measured_boundary`` is fastest-lap's ``catalunya_left.kml`` projected with y
          south to 5e-10 m). Ours is x east, y north, z up: y and z are negated (a rotation by
          pi about x, no mirror), so the track keeps its real direction (Catalunya clockwise)
          and our ``Omega_z`` is the file's ``-yaw_dot``. Banking is the file's ``roll`` (a
          right-handed rotation about the tangent in both frames: left edge up).
        * **Sides.** Which boundary lies left of the direction of travel is decided
          geometrically, not by the labels: the sign of the cross product of the tangent and
          the offset from the centreline to each boundary point (processing step
          ``boundary_sides`` says what was found); the widths are ``nl`` / ``nr`` of the
          boundary found on each side (in metres; the files label them "rad").
        * **Interpolation.** The data are already smooth (fastest-lap fitted them by optimal
          control): a quintic spline through the centreline, widths and banking in the
          file's arc length, resampled at uniform 3D arc length every ``spacing`` (step
          ``interpolated``, with the length found against the file's ``track_length``); no
          smoothing.

        Parameters
        ----------
        path : str or Path
        name : str, optional
            Default: the file's stem.
        spacing : float
            Arc-length spacing of the resampled spine [m].
        flat : bool
            Ignore the file's elevations (3D files): z = 0, banking as given (step
            ``flattened``).
        track_width : float, optional
            Total width [m], half each side, replacing the file's widths.
        repair, max_grade
            As :meth:`from_csv` (the built track is checked by
            :func:`~pyomo_lap.track.built_checks.check_track`).

        Raises
        ------
        FileNotFoundError, ValueError
            See :func:`~pyomo_lap.track.formats.read_fastest_lap_xml`; a bad ``track_width``;
            a boundary that lies on neither side consistently.
        TrackDataError (a ValueError)
            A bad track (too steep, crossing itself without a bridge).
        """
        path = Path(path)
        half = track_checks.check_track_width(track_width)
        d = formats.read_fastest_lap_xml(path)
        closed, dims = d["closed"], d["dimensions"]
        s = d["arclength"]
        C, Bl, Br = (_fl_line(d, line, dims) for line in ("centerline", "left_boundary",
                                                          "right_boundary"))
        wl, wr, sides = _fl_sides(C, Bl, Br, d["nl"], d["nr"], closed, path)
        nu = d.get("roll", np.zeros(len(s))) if dims == 3 else np.zeros(len(s))
        period = float(d["track_length"]) if closed else None
        if closed and not (period > s[-1]):
            period = float(s[-1] + (s[-1] - s[-2]))
        steps = [step("file_read", f"fastest-lap XML track (dimensions {dims}, {'closed' if closed else 'open'}, "
                      f"{len(s)} points every {float(np.median(np.diff(s))):.4g} m, track_length "
                      f"{d['track_length']:.6g} m): fastest-lap's frame is x east, y south, z down; "
                      "y and z negated to x east, y north, z up (the plan-view curvature "
                      "Omega_z is the file's -yaw_dot)", method=f"fastest-lap XML, {dims}D, "
                      "y and z negated (y south, z down in the file)", count=len(s)), sides]
        if flat and dims == 3:
            C[:, 2] = 0.0
            steps.append(_flattened_step(len(s)))
        sn, P, E, L, _ = tb.interpolate_arclength(s - s[0], C, np.column_stack([wl, wr, nu]),
                                                  closed, period, spacing)
        steps.append(step("interpolated", f"centreline, widths and banking interpolated (quintic "
                          f"spline in the file's arc length, no smoothing: the file's data are "
                          f"smooth) and resampled every {spacing:g} m of 3D arc length; length "
                          f"{L:.2f} m, the file's track_length {d['track_length']:.2f} m "
                          f"({100 * (L / d['track_length'] - 1):+.3f} %)",
                          method=f"quintic spline, every {spacing:g} m; length {L:.1f} m "
                          f"(file {d['track_length']:.1f} m)", count=len(s)))
        if half is not None:
            steps.append(_widths_set_step(track_width, ["width_left", "width_right"]))
            E[:, 0] = E[:, 1] = half
        prov = dict(source_file=str(path.resolve()), sha256=tb.sha256_file(path),
                    source_format="fastest-lap XML", gps_parameters=d["gps"],
                    processing_steps=steps)
        if dims == 2 or flat:
            prov["assumptions"] = [_flat_assumption(
                "the file is 2D (dimensions=\"2\"): the track is flat" if dims == 2 else
                "flat=True: the file's elevations are ignored",
                "a 3D fastest-lap file (dimensions=\"3\")" if dims == 2 else "flat=False")]
        tr = cls(sn, P, E[:, 0], E[:, 1], E[:, 2] if dims == 3 else None, closed,
                 name or path.stem, prov)
        return _finish(tr, [], f"track file {path}", max_grade)


def _midpoints_provenance(provenance, L, R, mid, wl, wr) -> dict:
    """The provenance of :meth:`Track.from_boundaries` after the midpoints: the step
    ``centreline_from_boundaries`` and, when the boundaries have no elevation (``mid``'s z
    all NaN: set to 0 here), the assumed flat track."""
    flat = not np.any(np.isfinite(mid[:, 2]))
    if flat:
        mid[:, 2] = 0.0
    rec = step("centreline_from_boundaries",
               f"centreline from the left ({len(L)} points) and right ({len(R)} points) "
               f"boundaries: {len(mid)} midpoints between each point of one and the nearest "
               f"point of the other; half-widths {float(np.min(wl)):.3g}-"
               f"{float(np.max(wl)):.3g} m left, {float(np.min(wr)):.3g}-"
               f"{float(np.max(wr)):.3g} m right (distances of the midpoints to the "
               "boundaries); elevation the mean of the two boundaries'",
               method=f"midpoints to the nearest boundary point; half-widths "
                      f"{float(min(wl.min(), wr.min())):.3g}-{float(max(wl.max(), wr.max())):.3g} m",
               count=len(mid))
    prov = dict(provenance or {})
    prov["processing_steps"] = list(prov.get("processing_steps", [])) + [rec]
    if flat:
        prov["assumptions"] = list(prov.get("assumptions", [])) + [assumption(
            "elevation", 0.0, "m", "the boundaries have no elevation: the track is flat",
            "altitudes in the boundaries' coordinates, or a CSV track file with a z column")]
    return prov

def _regular_reference_line(cls, build, smoothing, left, right, closed: bool,
                            min_jacobian: float | None, factor: float = 2 ** 0.25,
                            tries: int = 24):
    """The track of :meth:`Track.from_boundaries`: ``build(cutoff)`` (the midpoints smoothed at
    ``cutoff``) with the cut-off raised by ``factor`` until ``1 - n Omega_z >= min_jacobian``
    for n across the track (at most ``tries`` times), then the half-widths measured from the
    smoothed centreline along its normal to the boundaries ``left``, ``right`` (n, 3) [m], on
    the cubic splines through their points that the midpoints were made from
    (:func:`pyomo_lap.track.boundaries.distance_along_normal`). The steps say the
    cut-off used, why, and how far the widths moved."""
    Ld = _dense_boundary(np.asarray(left, float), closed, 0.5)[:, :2]   # as the midpoints'
    Rd = _dense_boundary(np.asarray(right, float), closed, 0.5)[:, :2]
    cut = smoothing
    for k in range(tries + 1):
        tr = build(cut)
        s = tr._s_samples
        tp = tr.evaluate(s)
        c, n = tp.position[:, :2] - tr.origin[:2], tp.rotation[:, :2, 1]
        wl = distance_along_normal(c, n, Ld, closed)
        wr = distance_along_normal(c, -n, Rd, closed)
        om = tp.omega[:, 2]
        jac = np.minimum(1.0 - om * wl, 1.0 + om * wr)
        used = tr.provenance["processing"]["smoothing_cutoff_m"]
        if min_jacobian is None or jac.min() >= min_jacobian or k == tries:
            break
        # the next of the cut-offs factor^j m above this one (the same ladder from any start)
        cut = factor ** (math.floor(math.log(used) / math.log(factor) + 1e-9) + 1)
    moved = max(float(np.abs(wl - tp.width_left).max()), float(np.abs(wr - tp.width_right).max()))
    i = int(np.argmin(jac))
    why = (f"raised from {smoothing if smoothing is not None else 'the light cut-off'} m along "
           f"2^(j/4) m until 1 - n Omega_z >= {min_jacobian:g} across the track"
           if k else "as given") if min_jacobian is not None else "as given"
    rec = step("centreline_from_boundaries", f"reference line: the midpoints smoothed at a "
               f"cut-off of {used:.3g} m ({why}); 1 - n Omega_z is at least {jac[i]:.2f} (at s = "
               f"{s[i]:.0f} m, radius {1 / max(abs(om[i]), 1e-12):.1f} m); the half-widths "
               f"measured from it to the boundaries ({wl.min():.3g}-{wl.max():.3g} m left, "
               f"{wr.min():.3g}-{wr.max():.3g} m right; up to {moved:.2g} m from the "
               "midpoints' distances)", method=f"reference line at cut-off {used:.3g} m, "
               f"1 - n Omega_z >= {jac[i]:.2f}; widths from it", count=len(s))
    prov = dict(tr.provenance)
    prov["processing_steps"] = list(prov.get("processing_steps", [])) + [rec]
    return cls(s, tr._p(s), wl, wr, None, closed, tr.name, prov, origin=tr.origin)


def _fl_line(d: dict, line: str, dims: int) -> np.ndarray:
    """A line of a fastest-lap file (``centerline``, ``left_boundary``, ``right_boundary``) as
    (n, 3) points in our frame: x east, y north, z up (the file's y and z negated)."""
    z = -d[f"{line}/z"] if dims == 3 else np.zeros(len(d[f"{line}/x"]))
    return np.column_stack([d[f"{line}/x"], -d[f"{line}/y"], z])


def _fl_sides(C, Bl, Br, nl, nr, closed: bool, path: Path):
    """Which boundary of a fastest-lap file lies left of the direction of travel, decided by
    the sign of ``t x (b - c)`` (z up) at every point: the left and right half-widths [m] and
    the processing step ``boundary_sides`` saying what was found.

    Raises
    ------
    ValueError
        A boundary that lies left at some points and right at others, or both on one side.
    """
    t = np.roll(C, -1, axis=0) - np.roll(C, 1, axis=0)
    if not closed:
        t[0], t[-1] = C[1] - C[0], C[-1] - C[-2]

    def side(B):
        v = B - C
        return np.sign(t[:, 0] * v[:, 1] - t[:, 1] * v[:, 0])

    a, b = side(Bl), side(Br)
    n = len(C)
    if not ((np.all(a > 0) and np.all(b < 0)) or (np.all(a < 0) and np.all(b > 0))):
        raise ValueError(
            f"track file {path}: the boundary labelled left lies left of the direction of "
            f"travel at {int(np.sum(a > 0))} and right at {int(np.sum(a < 0))} of {n} points "
            f"(the one labelled right: {int(np.sum(b > 0))} left, {int(np.sum(b < 0))} right); "
            "expected each boundary on one side everywhere")
    if a[0] > 0:
        found = ("left_boundary lies left of the direction of travel at all "
                 f"{n} points (right_boundary right): nl is the left width, as labelled")
        return np.asarray(nl, float), np.asarray(nr, float), step(
            "boundary_sides", found, method="as labelled: left_boundary left (nl), "
            "right_boundary right (nr)", count=n)
    found = ("left_boundary lies RIGHT of the direction of travel at all "
             f"{n} points (right_boundary left), with x east, y north, z up: nl is taken as the "
             "right width, nr as the left one")
    return np.asarray(nr, float), np.asarray(nl, float), step(
        "boundary_sides", found, method="swapped: left_boundary lies right (nl right, nr "
        "left)", count=n)


_SIDE_TOKEN = re.compile(r"(^|[_\-. ])(left|right)(?=[_\-. ]|$)", re.IGNORECASE)
"""``left`` or ``right`` as a word of a file name (``catalunya_left``, ``arezzo_right_3d``)."""


def _boundary_closes(points) -> bool:
    """Whether a boundary (n, 3) drawn as a loop closes: its last point is at most
    max(3 x the median spacing, the longest segment) from its first in plan view (the rule of
    a loop asked to close, :func:`pyomo_lap.track.checks.check_points`; boundaries drawn on a
    map often have long segments on the straights and an open end)."""
    P = np.asarray(points, float)[:, :2]
    P = P[np.all(np.isfinite(P), axis=1)]
    if len(P) < 4:
        return False
    seg = np.linalg.norm(np.diff(P, axis=0), axis=1)
    gap = float(np.linalg.norm(P[-1] - P[0]))
    return gap <= max(track_checks.CLOSE_FACTOR * float(np.median(seg)), float(seg.max()))


def _kml_boundaries(path: Path, right=None):
    """The left and right boundaries of :meth:`Track.from_kml` as (n, 3) longitude,
    latitude, altitude arrays, how they were found (words) and the files read."""
    lines = formats.read_kml_lines(path)
    if right is not None:
        other = formats.read_kml_lines(right)
        return ((lines[0]["coordinates"], other[0]["coordinates"]),
                f"the first LineString of {path.name} (left) and of {Path(right).name} (right)",
                [path, Path(right)])
    if len(lines) >= 2:
        names = [ln["name"].lower() for ln in lines]
        il = next((i for i, n in enumerate(names) if "left" in n), None)
        ir = next((i for i, n in enumerate(names) if "right" in n), None)
        if il is not None and ir is not None and il != ir:
            how = (f"LineStrings {lines[il]['name']!r} (left) and {lines[ir]['name']!r} "
                   f"(right) of {path.name}")
        else:
            il, ir = 0, 1
            how = (f"the first two LineStrings of {path.name} ({len(lines)} in the file), the "
                   "first taken as the left boundary (their names do not say left and right)")
        return (lines[il]["coordinates"], lines[ir]["coordinates"]), how, [path]
    m = _SIDE_TOKEN.search(path.stem)
    if m is not None:
        mine = m.group(2)
        other = {"left": "right", "right": "left"}[mine.lower()]
        other = other.upper() if mine.isupper() else other.capitalize() if mine[0].isupper() else other
        sibling = path.with_name(path.stem[:m.start(2)] + other + path.stem[m.end(2):] + path.suffix)
        if not sibling.is_file():
            raise FileNotFoundError(
                f"track file {path}: one LineString (the {mine.lower()} boundary, by its name); "
                f"expected the {other.lower()} boundary in {sibling}, which does not exist")
        pair = (lines[0]["coordinates"], formats.read_kml_lines(sibling)[0]["coordinates"])
        files = [path, sibling]
        if mine.lower() == "right":
            pair, files = pair[::-1], files[::-1]
        return pair, f"{files[0].name} (left) and {files[1].name} (right)", files
    raise ValueError(f"track file {path}: one LineString; expected the track's left and right "
                     "boundaries: two LineStrings (Placemarks named left and right), or files "
                     "NAME_left.kml and NAME_right.kml side by side")
