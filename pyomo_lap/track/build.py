"""Processing of raw track data into a smooth arc-length parametrised spine:
:func:`process_points` (plan view and elevation smoothed, resampled at uniform 3D arc length),
:func:`interpolate_arclength` (smooth data resampled without smoothing), the points' noise
and the cut-off it asks for (:func:`position_noise`, :func:`noise_cutoff`), distances to a
polyline, and the figures of a bundled track's metadata.

The smoothers themselves are :mod:`pyomo_lap.track.smoothing`; :mod:`pyomo_lap.track.geometry`
interpolates the result with a quintic spline. These are used both by the builds of the
bundled tracks (:func:`pyomo_lap.track.nordschleife.build_nordschleife`,
:mod:`pyomo_lap.track.circuits`) and by the loaders of the files users bring
(:mod:`pyomo_lap.track.csv_files`, :mod:`pyomo_lap.track.gps`,
:mod:`pyomo_lap.track.boundaries`).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
from scipy.spatial import cKDTree

from .report import step
from .smoothing import (
    _arclength_table,
    _project_on_polyline,
    chord_parameter,
    curve_spline,
    penalized_smooth,
    resample_arclength,
    smooth_elevation,
    voronoi_weights,
)

__all__ = [
    "interpolate_arclength",
    "position_noise",
    "noise_cutoff",
    "process_points",
    "sha256_file",
    "nearest_on_polyline",
    "track_figures",
    "TRACK_CSV_COLUMNS",
]


def sha256_file(path) -> str:
    """SHA-256 hex digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


KAPPA_NOISE = 2.0e-6
"""[1/m] Standard deviation of the curvature that noise in the points may leave after the
smoothing (:func:`noise_cutoff`): a radius of 500 km; at 80 m/s it moves the lateral
acceleration by 0.013 m/s^2, and a 300 m corner's curvature by 0.06 %."""

MIN_SPACING = 0.5
"""[m] The finest spacing the light smoothing of dense points resolves (its cut-off is at least
3 x this): more points add no geometry a car can feel (a wheelbase is 1.5-3.6 m; at 0.5 m a
corner of radius 10 m is sampled every 2.9 degrees), only noise."""


def position_noise(points, closed: bool) -> float:
    """The standard deviation [m] of the noise in a polyline's positions, from the data.

    Each point's signed distance ``e_i`` from the chord of its two neighbours (plan view) is
    the sagitta ``h^2 kappa / 2`` of the curve plus ``n_i - (n_{i-1} + n_{i+1}) / 2`` of the
    noise; the differences ``d_i = e_{i+1} - e_i`` keep the noise with variance ``5 sigma^2``
    (white noise) and of the curve ``h^3 kappa' / 2``, which is 8 times larger at twice the
    spacing. With ``m1``, ``m2`` the median |d| of the points and of every other point,
    ``sigma^2 = (1.4826^2 / 5) (64 m1^2 - m2^2) / 63`` takes the curve out. Where ``m2 >= 4
    m1`` the curve dominates (points too far apart for their noise to show, e.g. every 10 m on
    a circuit): the noise cannot be told from the geometry and 0 is returned.

    Parameters
    ----------
    points : ndarray (n, 2 or 3)
        [m], in order (a closed loop's last point not repeating the first).
    closed : bool

    Returns
    -------
    float
        sigma [m] (0 for fewer than 12 points, or when the curve dominates).
    """
    P = np.asarray(points, float)[:, :2]
    if len(P) < 12:
        return 0.0
    m1 = float(np.median(np.abs(_sagitta_differences(P, closed))))
    m2 = float(np.median(np.abs(np.concatenate([_sagitta_differences(P[::2], closed),
                                                 _sagitta_differences(P[1::2], closed)]))))
    if not m1 > 0 or m2 >= 4.0 * m1:
        return 0.0
    return float(1.4826 * math.sqrt(max(64.0 * m1 ** 2 - m2 ** 2, 0.0) / 63.0 / 5.0))


def _sagitta_differences(P: np.ndarray, closed: bool) -> np.ndarray:
    """``e_{i+1} - e_i``, ``e_i`` the signed distance of point i from the chord of its
    neighbours (:func:`position_noise`)."""
    if closed:
        a, b, c = np.roll(P, 1, axis=0), P, np.roll(P, -1, axis=0)
    else:
        a, b, c = P[:-2], P[1:-1], P[2:]
    chord = c - a
    L = np.maximum(np.linalg.norm(chord, axis=1), 1e-300)
    e = (chord[:, 0] * (b - a)[:, 1] - chord[:, 1] * (b - a)[:, 0]) / L
    return np.diff(np.concatenate([e, e[:1]])) if closed else np.diff(e)


def noise_cutoff(sigma: float, spacing: float, kappa_noise: float = KAPPA_NOISE) -> float:
    """The shortest cut-off wavelength [m] of :func:`penalized_smooth` that leaves a
    curvature noise of at most ``kappa_noise`` [1/m] (standard deviation) from white position
    noise ``sigma`` [m] at ``spacing`` [m].

    The noise's spectral density is ``sigma^2 spacing / (2 pi)``; the smoother's transfer
    function is ``1 / (1 + (k / kc)^6)`` with ``kc = 2 pi / cutoff``; the curvature noise is
    the second derivative: ``var = (sigma^2 spacing / pi) kc^5 int_0^inf x^4 / (1 + x^6)^2 dx
    = sigma^2 spacing kc^5 / 18`` (the integral is pi / 18). Hence ``kc = (18 kappa_noise^2 /
    (sigma^2 spacing))^(1/5)``.

    Returns
    -------
    float
        [m]; 0 when ``sigma`` is 0.
    """
    if not sigma > 0 or not spacing > 0:
        return 0.0
    kc = (18.0 * kappa_noise ** 2 / (sigma ** 2 * spacing)) ** 0.2
    return float(2.0 * math.pi / kc)


def interpolate_arclength(u, points, extra, closed: bool, period: float | None,
                          spacing: float = 1.0):
    """Smooth samples of a curve interpolated (not smoothed) and resampled at uniform 3D arc
    length, with per-point values carried along (widths, banking).

    A quintic spline through ``points`` and ``extra`` in the parameter ``u`` (periodic with
    ``period`` when ``closed``, :func:`curve_spline`), sampled every ``spacing`` of the arc
    length of its first three columns (:func:`resample_arclength`).

    Parameters
    ----------
    u : ndarray (n,)
        Increasing parameter of the samples [m] (e.g. the file's arc length); closed: in
        ``[0, period)``, the last sample not repeating the first.
    points : ndarray (n, 3)
        x, y, z [m].
    extra : ndarray (n, k)
        Values carried along (k may be 0).
    closed : bool
    period : float or None
        The parameter's period [m] (closed curves).
    spacing : float
        Target arc-length spacing [m].

    Returns
    -------
    s : ndarray (M,)
        Uniform 3D arc length [m].
    P : ndarray (M, 3)
        Points [m].
    E : ndarray (M, k)
        The carried values at the points.
    length : float
        Length of the interpolated curve [m].
    u_to_s : callable
        The map from the parameter ``u`` to the arc length ``s`` (for comparisons at the
        samples).
    """
    u = np.asarray(u, float)
    data = np.column_stack([np.asarray(points, float), np.asarray(extra, float).reshape(len(u), -1)])
    full = curve_spline(u, data, closed, period)
    u0, u1 = (float(u[0]), float(u[0] + period)) if closed else (float(u[0]), float(u[-1]))

    def spl(x, nu=0):                 # the arc length is that of x, y, z only
        v = full(x, nu)
        return v if nu == 0 else v[..., :3]

    s, PE, L = resample_arclength(spl, u0, u1, spacing, closed)
    ub, sb = _arclength_table(spl, u0, u1, max(int(np.ceil((u1 - u0) / (0.25 * spacing))), 64))

    def u_to_s(x):
        x = np.asarray(x, float)
        if closed:
            return np.interp(np.mod(x - u0, u1 - u0) + u0, ub, sb)
        return np.interp(x, ub, sb)

    return s, PE[:, :3], PE[:, 3:], float(L), u_to_s


def process_points(points, closed: bool, xy_cutoff: float, z_cutoff: float | None = None,
                   spacing: float = 2.0, grid_spacing: float | None = None,
                   z_points=None, z_points_max_distance: float = 15.0, hampel=None,
                   max_gap: float | None = 300.0, robust_iterations: int = 0):
    """Smooth and resample a 3D polyline into uniform arc-length samples.

    Steps: consecutive points at the same plan-view position merged
    (:func:`_merge_repeated`); chord-length parameter; horizontal (x, y) smoothing with
    :func:`penalized_smooth` at cut-off ``xy_cutoff`` (0: quintic interpolation instead,
    :func:`_plan_view`); horizontal arc length sigma of the smoothed plan view; z in sigma by
    :func:`smooth_elevation` at cut-off ``z_cutoff`` (default: ``xy_cutoff``; samples whose z
    is nan ignored, optional Hampel filter, gaps longer than ``max_gap`` filled, optional
    robust passes; :func:`_elevation_samples`); 3D quintic spline in sigma; resampling at
    uniform 3D arc length.

    Parameters
    ----------
    points : (n,3) array [m] (z may contain nan)
    closed : bool (closed: the last point must not repeat the first)
    xy_cutoff, z_cutoff : float [m], cut-off wavelengths (0 = interpolate)
    spacing : output arc-length spacing [m]
    grid_spacing : smoothing grid spacing [m] (default min(1, spacing/2, median spacing/2), >= 0.05)
    z_points : (m,3) array [m], optional
        Elevations from other points (e.g. another survey of the same road), matched to the
        plan view by nearest distance; farther than ``z_points_max_distance`` [m]: not used.
    hampel, max_gap, robust_iterations : see :func:`smooth_elevation`

    Returns
    -------
    s : (M,) [m]
    P : (M,3) [m]
    length : float [m]
    info : dict
        Figures of the processing (see :func:`smooth_elevation`), ``sigma_of_raw_points``
        (an array) and ``steps``: what was done to the data, as records of
        :func:`pyomo_lap.track.report.step` located on the arc length ``s`` of the result.
    """
    P = np.asarray(points, float)
    if P.ndim != 2 or P.shape[1] != 3:
        raise ValueError(f"points must have shape (n,3), got {P.shape}")
    n_in = len(P)
    P, merged_into = _merge_repeated(P, closed)
    xy = P[:, :2]
    if closed:
        u = chord_parameter(np.concatenate([xy, xy[:1]]))
        period = u[-1]
        u = u[:-1]
    else:
        u = chord_parameter(xy)
        period = None
    du = np.diff(u)
    med = float(np.median(du))
    if grid_spacing is None:
        grid_spacing = float(np.clip(min(1.0, spacing / 2.0, med / 2.0), 0.05, None))
    # 1. plan view, and its horizontal arc length sigma
    spl_xy, ua, ub_ = _plan_view(u, xy, closed, period, xy_cutoff, grid_spacing)
    sig, XYs, Lh = resample_arclength(spl_xy, ua, ub_, grid_spacing, closed)
    # horizontal arc length of each raw point, through its curve parameter u
    # (not by nearest-point projection, which is ambiguous where the plan view crosses itself)
    utab, stab = _arclength_table(spl_xy, ua, ub_, max(int(np.ceil((ub_ - ua) / (0.25 * grid_spacing))), 64))
    sig_pts = np.interp(u, utab, stab)
    dist = np.linalg.norm(xy - spl_xy(u), axis=1)
    off_line = _distance_to_polyline(XYs, xy, closed)   # how far smoothing moved each point
    # 2. elevation
    zsig, z, far, missing = _elevation_samples(P, sig_pts, XYs, sig, closed, Lh, z_points,
                                               z_points_max_distance)
    zc = xy_cutoff if z_cutoff is None else z_cutoff
    Zs, zinfo = smooth_elevation(zsig, z, closed, Lh, sig, zc, grid_spacing, hampel, max_gap,
                                  robust_iterations=robust_iterations)
    # 3. 3D curve in sigma, resampled at 3D arc length
    P3 = np.column_stack([XYs, Zs])
    spl3 = curve_spline(sig, P3, closed, Lh)
    send = Lh if closed else sig[-1]
    s, Pout, L = resample_arclength(spl3, 0.0, send, spacing, closed)
    to_s = _sigma_to_s(spl3, send, spacing, closed, Lh)   # (for the report, located on s)
    steps = _processing_steps(
        to_s, L, closed, n_in=n_in, merged_at=sig_pts[merged_into] if len(merged_into) else [],
        missing_at=zsig[missing], n_z=len(z), far_at=zsig[far], z_max_distance=z_points_max_distance,
        xy_cutoff=xy_cutoff, xy_at=sig_pts, z_cutoff=zc, zinfo=zinfo, hampel=hampel,
        max_gap=max_gap, robust_iterations=robust_iterations, off_line=off_line)
    info = dict(
        n_raw=int(len(P)),
        raw_length=float(period if closed else u[-1]),
        median_raw_spacing=float(med),
        max_raw_spacing=float(du.max()),
        horizontal_length=float(Lh),
        xy_residual_rms=float(np.sqrt(np.mean(dist**2))),
        xy_residual_max=float(np.max(dist)),
        grid_spacing=float(grid_spacing),
    )
    info.update({k: v for k, v in zinfo.items()
                 if k not in ("z_outliers", "z_downweighted_at", "z_downweighted_residual")})
    info["n_z_missing"] = int(missing.sum())
    if z_points is not None:
        info["n_z_too_far"] = int(far.sum())
    info["sigma_of_raw_points"] = sig_pts
    info["steps"] = steps
    return s, Pout, L, info


def _sigma_to_s(spl3, send: float, spacing: float, closed: bool, Lh: float):
    """The map from the horizontal arc length sigma [m] to the 3D arc length s [m] of the
    result of :func:`process_points` (``spl3``: the 3D curve in sigma), periodic when
    ``closed`` (period ``Lh``)."""
    ub3, sb3 = _arclength_table(spl3, 0.0, send, max(int(np.ceil(send / (0.25 * spacing))), 64))

    def to_s(g):
        g = np.asarray(g, float)
        if not closed:
            return np.interp(g, ub3, sb3)
        k = np.floor(g / Lh)
        return np.interp(g - k * Lh, ub3, sb3) + k * sb3[-1]

    return to_s


def _merge_repeated(P: np.ndarray, closed: bool):
    """Step 0 of :func:`process_points`: consecutive points at the same plan-view position
    merged (and a loop's last point repeating its first). Returns the points and, for each
    merged point, the index among the kept points it was merged into."""
    keep = np.concatenate([[True], np.linalg.norm(np.diff(P[:, :2], axis=0), axis=1) > 1e-9])
    merged_into = np.cumsum(keep)[~keep] - 1      # index (among the kept points) of each merge
    P = P[keep]
    if closed and np.linalg.norm(P[-1, :2] - P[0, :2]) < 1e-9:
        P = P[:-1]
        merged_into = np.append(np.where(merged_into >= len(P), 0, merged_into), 0)
    if len(P) < 4:
        raise ValueError(f"need at least 4 distinct points, got {len(P)}")
    return P, merged_into


def _plan_view(u, xy, closed, period, xy_cutoff, grid_spacing):
    """Step 1 of :func:`process_points`: the plan view as a spline of the chord parameter
    ``u``, smoothed at cut-off ``xy_cutoff`` [m] (0: interpolated). Returns the spline and its
    parameter range."""
    if xy_cutoff and xy_cutoff > 0:
        w = voronoi_weights(u, closed, period)
        ug, XY = penalized_smooth(u, xy, w, xy_cutoff, closed, period, grid_spacing)
        spl_xy = curve_spline(ug, XY, closed, period) if closed else curve_spline(ug, XY, False)
        ua, ub_ = (0.0, period) if closed else (ug[0], ug[-1])
    else:
        spl_xy = curve_spline(u, xy, closed, period)
        ua, ub_ = (0.0, period) if closed else (u[0], u[-1])
    return spl_xy, ua, ub_


def _elevation_samples(P, sig_pts, XYs, sig, closed, Lh, z_points, z_points_max_distance):
    """Step 2 of :func:`process_points`: where the elevation samples sit on the horizontal arc
    length sigma and their values (the points' own, or ``z_points`` matched to the plan view
    by nearest distance; those farther than ``z_points_max_distance`` [m] are NaN). Returns
    (sigma, z, far, missing)."""
    if z_points is None:
        z = P[:, 2].copy()
        return sig_pts, z, np.zeros(len(z), bool), ~np.isfinite(z)
    ZP = np.asarray(z_points, float)
    tree = cKDTree(XYs)
    _, zidx = tree.query(ZP[:, :2])
    zsig = _project_on_polyline(XYs, sig, ZP[:, :2], zidx, closed, Lh)
    zdist = np.linalg.norm(ZP[:, :2] - XYs[zidx], axis=1)
    far = np.isfinite(ZP[:, 2]) & (zdist > z_points_max_distance)
    z = np.where(far, np.nan, ZP[:, 2])
    return zsig, z, far, ~np.isfinite(ZP[:, 2])


def _distance_to_polyline(Q: np.ndarray, pts: np.ndarray, closed: bool) -> np.ndarray:
    """Distance [m] of each point (n,2) from the polyline Q (M,2) (closed: Q[-1] -> Q[0] too),
    through the two segments at the nearest vertex (:func:`nearest_on_polyline`)."""
    near, _, _ = nearest_on_polyline(Q, pts, closed)
    return np.linalg.norm(np.asarray(pts, float) - near, axis=1)


def _processing_steps(to_s, L, closed, *, n_in, merged_at, missing_at, n_z, far_at,
                      z_max_distance, xy_cutoff, off_line, xy_at, z_cutoff, zinfo, hampel,
                      max_gap, robust_iterations) -> list:
    """The records of what :func:`process_points` did (:func:`pyomo_lap.track.report.step`),
    each located on the arc length s of the result (``to_s`` maps sigma to s)."""

    def pts(at):
        sv = np.mod(to_s(at), L) if closed else to_s(at)
        return [(v, v) for v in np.sort(sv)]

    out = []
    if len(merged_at):
        out.append(step("points_merged", f"{len(merged_at)} of {n_in} points at the plan-view "
                        "position of the previous one (or a loop's last point repeating its "
                        "first) merged with it", method="same plan-view position",
                        count=len(merged_at), where_m=pts(merged_at)))
    if len(missing_at):
        out.append(step("elevation_missing", f"{len(missing_at)} of {n_z} points have no "
                        "elevation (an empty value, or 0 in a zaggyai file, which means "
                        "missing): their elevation comes from the neighbouring ones",
                        method="no value, or 0 in a zaggyai file", count=len(missing_at),
                        where_m=pts(missing_at)))
    if len(far_at):
        out.append(step("elevation_unmatched", f"{len(far_at)} of {n_z} elevation points "
                        f"farther than {z_max_distance:g} m from the plan view are not used",
                        method=f"> {z_max_distance:g} m off the plan view", count=len(far_at),
                        where_m=pts(far_at)))
    outl = zinfo.get("z_outliers", [])
    if outl:
        hw, ns_, mt = hampel
        k = int(np.argmax([abs(o["deviation"]) for o in outl]))
        out.append(step(
            "outliers_dropped", f"{len(outl)} of {zinfo['n_z_samples']} elevations dropped: "
            f"farther from the median of the elevations within {hw:g} m than max({ns_:g} x "
            f"1.4826 x their median absolute deviation, {mt:g} m) (Hampel filter); the "
            "largest is the distance from that median",
            method=f"Hampel: +-{hw:g} m, {ns_:g} sigma, >= {mt:g} m", count=len(outl),
            where_m=pts([o["at"] for o in outl]), size=abs(outl[k]["deviation"]),
            size_at_m=float(pts([outl[k]["at"]])[0][0])))
    gaps = zinfo.get("z_filled_gaps", [])
    if gaps:
        a = to_s([g["start"] for g in gaps])
        b = to_s([g["end"] for g in gaps])
        lengths = b - a
        k = int(np.argmax(lengths))
        where = [(x % L if closed else x, y % L if closed else y) for x, y in zip(a, b)]
        out.append(step(
            "gap_filled", f"{len(gaps)} stretch(es) without elevation longer than {max_gap:g} m "
            "filled with points every 10 m on the straight line between the medians of the "
            "elevations within 100 m of each end; the largest is the longest stretch",
            method=f"straight line over gaps > {max_gap:g} m", count=len(gaps), where_m=where, size=lengths[k], size_at_m=where[k][0]))
    dw = zinfo.get("z_downweighted_at", [])
    if dw:
        r = np.abs(zinfo["z_downweighted_residual"])
        k = int(np.argmax(r))
        out.append(step(
            "outliers_downweighted", f"{len(dw)} elevations count less than half in the robust "
            f"smoother ({robust_iterations} bisquare passes): about 3 x the scale of the "
            "residuals or more from the smooth profile; the largest is the distance from it",
            method=f"robust smoother, {robust_iterations} passes", count=len(dw), where_m=pts(dw), size=r[k], size_at_m=float(pts([dw[k]])[0][0])))
    if xy_cutoff and xy_cutoff > 0 and len(off_line):
        k = int(np.argmax(off_line))
        out.append(step(
            "smoothing_plan_view", f"plan view smoothed (cut-off wavelength {xy_cutoff:g} m): "
            f"the {len(off_line)} points are {np.sqrt(np.mean(off_line ** 2)):.3g} m (rms) from "
            "the centreline; the largest is the farthest",
            method=f"cut-off {xy_cutoff:.3g} m, rms {np.sqrt(np.mean(off_line ** 2)):.2g} m",
            count=len(off_line),
            where_m=[(0.0, L)], size=off_line[k], size_at_m=float(pts([xy_at[k]])[0][0])))
    if z_cutoff and z_cutoff > 0 and "z_change_max" in zinfo:
        out.append(step(
            "smoothing_elevation", f"elevation smoothed (cut-off wavelength {z_cutoff:g} m): "
            f"it moved the kept elevations by {zinfo['z_change_rms']:.3g} m (rms); the largest "
            "is the largest change",
            method=f"cut-off {z_cutoff:.3g} m, rms {zinfo['z_change_rms']:.2g} m",
            count=zinfo["n_z_samples"] - len(outl),
            where_m=[(0.0, L)], size=zinfo["z_change_max"],
            size_at_m=float(pts([zinfo["z_change_max_at"]])[0][0])))
    return out


# ---------------------------------------------------------------------------
# the bundled tracks' metadata
# ---------------------------------------------------------------------------


TRACK_CSV_COLUMNS = dict(s_m="arc length [m]", x_m="east [m]", y_m="north [m]",
                         z_m="elevation [m] (as in the source: height above sea level)",
                         width_left_m="[m]", width_right_m="[m]", banking_rad="[rad]")
"""The columns of a bundled track's CSV and their units (its ``.json``'s ``columns``)."""


def track_figures(track, s, points, length: float) -> dict:
    """Figures of a built track for its metadata (``<name>.json``): length, samples, spacing,
    elevation range and value at the start, grades, tightest radius and where, the spline's
    largest deviation from unit speed, the start point's distance from the origin.

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
    s : ndarray, shape (n,)
        Arc length of the samples [m].
    points : ndarray, shape (n, 3)
        The samples x, y, z [m].
    length : float
        Length of the loop [m].

    Returns
    -------
    dict
        ``length_m`` ... ``start_point_offset_m`` (grades [-], lengths [m]); the track is
        evaluated every 0.25 m.
    """
    L, P = float(length), np.asarray(points, dtype=float)
    ss = np.linspace(0.0, L, int(L / 0.25), endpoint=False)
    tp = track.evaluate(ss)
    grade, rad = tp.grade, tp.curvature_radius
    return dict(
        length_m=float(L),
        n_samples=int(len(s)),
        spacing_m=float(L / len(s)),
        elevation_min_m=float(P[:, 2].min()),
        elevation_max_m=float(P[:, 2].max()),
        elevation_at_start_m=float(P[0, 2]),
        max_abs_grade=float(np.max(np.abs(grade))),
        max_uphill_grade=float(grade.max()),
        max_downhill_grade=float(grade.min()),
        min_curvature_radius_m=float(rad.min()),
        s_at_min_radius_m=float(ss[np.argmin(rad)]),
        max_abs_speed_error=float(np.max(np.abs(tp.speed - 1.0))),
        start_point_offset_m=float(np.hypot(P[0, 0], P[0, 1])),
    )


# ---------------------------------------------------------------------------
# distances to a polyline
# ---------------------------------------------------------------------------
def nearest_on_polyline(Q: np.ndarray, pts: np.ndarray, closed: bool):
    """The nearest point of the polyline ``Q`` (M, 2) (closed: ``Q[-1] -> Q[0]`` too) to each
    point of ``pts`` (n, 2), searched on the two segments at the nearest vertex (exact for a
    polyline whose segments are short against its curvature radius).

    Returns
    -------
    near : ndarray (n, 2)
        The nearest points [m].
    seg : ndarray (n,) of int
        The segment they lie on (from ``Q[seg]`` to ``Q[seg + 1]``, wrapped when closed).
    frac : ndarray (n,)
        Where on the segment, 0 to 1.
    """
    Q = np.asarray(Q, float)
    pts = np.asarray(pts, float)
    M = len(Q)
    _, idx = cKDTree(Q).query(pts)
    near, seg, frac = Q[idx].copy(), np.minimum(idx, M - 1 if closed else M - 2), np.zeros(len(pts))
    if not closed:
        frac = np.where(idx == M - 1, 1.0, 0.0)
    best = np.linalg.norm(pts - near, axis=1)
    for a in (idx - 1, idx):
        b = a + 1
        if closed:
            a, b = np.mod(a, M), np.mod(b, M)
            ok = np.ones(len(pts), bool)
        else:
            ok = (a >= 0) & (b < M)
            a, b = np.clip(a, 0, M - 1), np.clip(b, 0, M - 1)
        d = Q[b] - Q[a]
        dd = np.maximum(np.sum(d * d, axis=1), 1e-300)
        t = np.clip(np.sum((pts - Q[a]) * d, axis=1) / dd, 0.0, 1.0)
        X = Q[a] + t[:, None] * d
        dist = np.where(ok, np.linalg.norm(pts - X, axis=1), np.inf)
        upd = dist < best
        near[upd], seg[upd], frac[upd], best[upd] = X[upd], a[upd], t[upd], dist[upd]
    return near, seg, frac
