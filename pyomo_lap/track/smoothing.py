"""The smoothers of raw track data: the penalized smoother, the Hampel filter, curve splines,
arc-length resampling, and the robust smoothing of elevations.

The functions here turn noisy, irregularly spaced points (GPS traces, survey
points) into a smooth curve sampled at uniform arc length, which
:mod:`pyomo_lap.track.geometry` then interpolates with a quintic spline.  They are used
both by :func:`pyomo_lap.track.nordschleife.build_nordschleife` (the reproducible
processing behind ``data/tracks/nordschleife.csv``) and by the user-facing loaders
:meth:`pyomo_lap.track.geometry.Track.from_csv` / :meth:`~pyomo_lap.track.geometry.Track.from_zaggy_json`,
through :func:`pyomo_lap.track.build.process_points`.

Smoothing method
----------------
:func:`penalized_smooth` is a discrete smoothing spline (Whittaker-Eilers
smoother, periodic or open) on a uniform grid of the curve parameter ``u``::

    min_f  sum_i w_i |y_i - f(u_i)|^2  +  lam * integral |f'''(u)|^2 du

with ``f(u_i)`` linear interpolation of the grid values, ``w_i`` the Voronoi
length of sample ``i`` in ``u`` [m] (so the data term approximates an integral
and irregular spacing does not bias the fit) and third differences for the
penalty (the continuous analogue is the quintic smoothing spline, so the
result has smooth third derivatives).  For densely sampled data its transfer
function is ``1 / (1 + lam (2 pi / wavelength)^6)``; it is parametrised by the
half-power *cut-off wavelength* ``Lc`` [m], ``lam = (Lc / (2 pi))^6``:
features much longer than ``Lc`` pass unchanged, shorter ones are removed.

References: Eilers, P.H.C. (2003) "A perfect smoother", Anal. Chem. 75;
Hampel, F.R. (1974) JASA 69 (outlier filter).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.interpolate import PchipInterpolator, make_interp_spline

__all__ = ["chord_parameter", "voronoi_weights", "hampel_filter", "penalized_smooth",
           "curve_spline", "resample_arclength", "smooth_elevation"]


def chord_parameter(points: np.ndarray) -> np.ndarray:
    """Cumulative chord length of a polyline (n,d) -> (n,) [m], starting at 0."""
    d = np.linalg.norm(np.diff(points, axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(d)])


def voronoi_weights(u: np.ndarray, closed: bool, period: float | None = None) -> np.ndarray:
    """Voronoi length of each sample on the parameter line (n,) [m].

    Half the distance to the previous plus half to the next sample; for a
    closed curve the neighbours wrap with ``period``.
    """
    u = np.asarray(u, float)
    if closed:
        nxt = np.diff(np.concatenate([u, [u[0] + period]]))
        prv = np.roll(nxt, 1)
    else:
        d = np.diff(u)
        nxt = np.concatenate([d, [0.0]])
        prv = np.concatenate([[0.0], d])
    return 0.5 * (nxt + prv)


def hampel_filter(u, y, half_window: float, n_sigma: float = 3.0, min_threshold: float = 0.0,
                  closed: bool = False, period: float | None = None):
    """Hampel outlier detector in a parameter (arc-length) window.

    A sample is an outlier when ``|y_i - median| > max(n_sigma * 1.4826 * MAD,
    min_threshold)`` over the samples with ``|u_j - u_i| <= half_window``.
    ``nan`` samples are ignored (and never flagged).

    Parameters
    ----------
    u : (n,) sorted parameter [m]
    y : (n,) values
    half_window : float [m]
    n_sigma : float
    min_threshold : float
        Lower bound of the threshold (use it for quantised data, where the MAD
        can be 0 on plateaus) [same unit as y].
    closed, period : wrap the window around for closed curves.

    Returns
    -------
    outlier : (n,) bool
    median : (n,) float, the window medians
    """
    u = np.asarray(u, float)
    y = np.asarray(y, float)
    ok = np.isfinite(y)
    uu, yy = u[ok], y[ok]
    if closed:
        uu = np.concatenate([uu - period, uu, uu + period])
        yy = np.concatenate([yy, yy, yy])
    med = np.full(y.shape, np.nan)
    out = np.zeros(y.shape, bool)
    lo = np.searchsorted(uu, u - half_window, side="left")
    hi = np.searchsorted(uu, u + half_window, side="right")
    for i in np.flatnonzero(ok):
        win = yy[lo[i]:hi[i]]
        m = np.median(win)
        mad = 1.4826 * np.median(np.abs(win - m))
        med[i] = m
        out[i] = abs(y[i] - m) > max(n_sigma * mad, min_threshold)
    return out, med


def penalized_smooth(u, y, weights, cutoff: float, closed: bool, period: float | None = None,
                     grid_spacing: float = 1.0):
    """Discrete smoothing spline (third-difference Whittaker smoother) on a uniform grid.

    Minimises ``sum_i w_i |y_i - f(u_i)|^2 + lam * int |f'''|^2 du`` with
    ``lam = (cutoff / 2 pi)^6`` (see module docstring).

    Parameters
    ----------
    u : (n,) parameter of the samples, increasing, in [0, period) if closed [m]
    y : (n,) or (n,d) values; rows with nan or zero weight do not count
    weights : (n,) non-negative weights [m] (e.g. :func:`voronoi_weights`)
    cutoff : float
        Half-power cut-off wavelength Lc [m] (> 0).
    closed : bool
        Periodic (closed curve, period ``period``) or open on [u[0], u[-1]].
    grid_spacing : float
        Target spacing of the output grid [m].

    Returns
    -------
    ug : (M,) grid parameter; closed: ``k * period / M``, k = 0..M-1; open: from u[0] to u[-1]
    fg : (M,) or (M,d) smoothed values on the grid

    Raises
    ------
    ValueError
        If cutoff <= 0 or fewer than 4 usable samples.
    """
    u = np.asarray(u, float)
    y = np.asarray(y, float)
    vec = y.ndim == 2
    Y = y if vec else y[:, None]
    w = np.asarray(weights, float).copy()
    bad = ~np.all(np.isfinite(Y), axis=1)
    w[bad] = 0.0
    Y = np.where(np.isfinite(Y), Y, 0.0)
    if cutoff <= 0:
        raise ValueError(f"cutoff must be > 0, got {cutoff}")
    if np.count_nonzero(w > 0) < 4:
        raise ValueError("penalized_smooth needs at least 4 samples with positive weight")
    if closed:
        M = max(int(round(period / grid_spacing)), 8)
        h = period / M
        ug = np.arange(M) * h
        t = np.mod(u, period) / h
    else:
        span = u[-1] - u[0]
        M = max(int(np.ceil(span / grid_spacing)) + 1, 8)
        h = span / (M - 1)
        ug = u[0] + np.arange(M) * h
        t = (u - u[0]) / h
    j0 = np.floor(t).astype(int)
    frac = t - j0
    if closed:
        j0 = np.mod(j0, M)
        j1 = np.mod(j0 + 1, M)
    else:
        j0 = np.clip(j0, 0, M - 2)
        frac = t - j0
        j1 = j0 + 1
    n = len(u)
    rows = np.concatenate([np.arange(n), np.arange(n)])
    cols = np.concatenate([j0, j1])
    vals = np.concatenate([1.0 - frac, frac])
    H = sp.csr_matrix((vals, (rows, cols)), shape=(n, M))
    # third differences (forward), periodic wrap for closed curves
    coef = np.array([-1.0, 3.0, -3.0, 1.0])
    if closed:
        r = np.repeat(np.arange(M), 4)
        c = np.mod(np.arange(M)[:, None] + np.arange(4)[None, :], M).ravel()
        D = sp.csr_matrix((np.tile(coef, M), (r, c)), shape=(M, M))
    else:
        m3 = M - 3
        r = np.repeat(np.arange(m3), 4)
        c = (np.arange(m3)[:, None] + np.arange(4)[None, :]).ravel()
        D = sp.csr_matrix((np.tile(coef, m3), (r, c)), shape=(m3, M))
    lam = (cutoff / (2.0 * np.pi)) ** 6
    W = sp.diags(w)
    A = (H.T @ W @ H + (lam / h**5) * (D.T @ D)).tocsc()
    rhs = H.T @ (w[:, None] * Y)
    lu = spla.splu(A)
    F = lu.solve(np.asarray(rhs))
    return ug, (F if vec else F[:, 0])


def curve_spline(u, points, closed: bool, period: float | None = None, k: int = 5):
    """Interpolating spline through points (n,d) at parameters u (n,).

    Closed: periodic spline on [u[0], u[0] + period] (the first point is appended
    at the end). Open: not-a-knot spline.
    """
    u = np.asarray(u, float)
    P = np.asarray(points, float)
    if closed:
        uu = np.concatenate([u, [u[0] + period]])
        PP = np.concatenate([P, P[:1]], axis=0)
        return make_interp_spline(uu, PP, k=k, bc_type="periodic")
    return make_interp_spline(u, P, k=k)


def _arclength_table(spl, u0: float, u1: float, n_int: int):
    """Cumulative arc length of spline curve on a uniform grid of n_int intervals (5-point Gauss)."""
    ub = np.linspace(u0, u1, n_int + 1)
    xg, wg = np.polynomial.legendre.leggauss(5)
    hs = np.diff(ub)
    uq = (ub[:-1, None] + 0.5 * hs[:, None] * (xg[None, :] + 1.0)).ravel()
    sp_ = np.linalg.norm(spl(uq, 1), axis=-1).reshape(n_int, 5)
    seg = 0.5 * hs * (sp_ @ wg)
    return ub, np.concatenate([[0.0], np.cumsum(seg)])


def resample_arclength(spl, u0: float, u1: float, spacing: float, closed: bool,
                       s_start_u: float | None = None):
    """Sample a parametric spline curve at uniform arc length.

    Parameters
    ----------
    spl : callable, ``spl(u, nu)`` returns (m,d) points / derivatives
    u0, u1 : parameter range (closed: one period)
    spacing : target arc-length spacing [m]; adjusted so that the length is an
        integer multiple (closed) or the last sample hits the end (open)
    closed : bool
    s_start_u : parameter value where s = 0 (closed curves only; default u0)

    Returns
    -------
    s : (M,) uniform arc length [m]; closed: ``k L / M``, k = 0..M-1; open: 0..L
    P : (M,d) curve points at s
    length : float, total length L [m]
    """
    n_int = max(int(np.ceil((u1 - u0) / (0.25 * spacing))), 64)
    ub, sb = _arclength_table(spl, u0, u1, n_int)
    L = sb[-1]
    if closed:
        M = max(int(round(L / spacing)), 8)
        s = np.arange(M) * (L / M)
        if s_start_u is not None:
            s0 = np.interp(np.mod(s_start_u - u0, u1 - u0) + u0, ub, sb)
        else:
            s0 = 0.0
        starget = np.mod(s + s0, L)
    else:
        M = max(int(np.ceil(L / spacing)) + 1, 4)
        s = np.linspace(0.0, L, M)
        starget = s
    inv = PchipInterpolator(sb, ub)
    uq = inv(starget)
    # Newton refinement of s(u) = starget using the quadrature table
    for _ in range(3):
        k = np.clip(np.searchsorted(ub, uq, side="right") - 1, 0, n_int - 1)
        xg, wg = np.polynomial.legendre.leggauss(5)
        a = ub[k]
        hs = uq - a
        uqq = a[:, None] + 0.5 * hs[:, None] * (xg[None, :] + 1.0)
        spd = np.linalg.norm(spl(uqq.ravel(), 1), axis=-1).reshape(uqq.shape)
        sq = sb[k] + 0.5 * hs * (spd @ wg)
        du = (sq - starget)
        if closed:
            du = (du + 0.5 * L) % L - 0.5 * L
        uq = uq - du / np.linalg.norm(spl(uq, 1), axis=-1)
    if closed:
        uq = np.mod(uq - u0, u1 - u0) + u0
    P = spl(uq)
    return s, P, L


def _window_median(su, zs, u0, width, closed, period):
    """Median of zs over samples between u0 and u0 + width (width may be negative)."""
    lo, hi = (u0 + width, u0) if width < 0 else (u0, u0 + width)
    d = su - u0
    if closed:
        d = (d + 0.5 * period) % period - 0.5 * period
    sel = (d >= lo - u0 - 1e-9) & (d <= hi - u0 + 1e-9)
    return float(np.median(zs[sel]))


def smooth_elevation(us, z, closed, period, sig_out, cutoff, grid_spacing, hampel=None,
                     max_gap=300.0, gap_end_window=100.0, gap_fill_spacing=10.0,
                     robust_iterations=0, robust_min_scale=1.0):
    """Robust elevation profile z(sigma) from scattered samples.

    Steps: outliers dropped (:func:`_drop_outliers`), long gaps filled
    (:func:`_fill_long_gaps`), the profile smoothed (:func:`_smooth_profile`).

    Parameters
    ----------
    us : (m,) horizontal arc length of the samples [m]
    z : (m,) elevations [m]; nan = missing
    closed, period : periodic profile of period ``period`` [m]
    sig_out : (K,) where to evaluate the result [m]
    cutoff : smoothing cut-off wavelength [m] (0: interpolation)
    grid_spacing : smoothing grid [m]
    hampel : None or (half_window [m], n_sigma, min_threshold [m]); outliers are dropped
    max_gap : gaps between samples longer than this [m] are filled with pseudo-samples
        (every ``gap_fill_spacing`` m) on the straight line between the medians of the
        samples within ``gap_end_window`` m of each end; None: no filling (the smoother
        then bridges the gap with a natural quintic, which can overshoot)
    robust_iterations : number of iteratively reweighted passes of the smoother with
        Tukey bisquare weights ``(1 - (r / 4.685 sigma)^2)^2`` (0 outside), sigma =
        max(1.4826 MAD(residuals), robust_min_scale [m]); 0: plain least squares

    Returns
    -------
    Z : (K,) smoothed elevation at sig_out [m]; zeros if no sample has an elevation
    info : dict
        ``n_z_samples``, ``n_z_outliers``, ``z_longest_gap`` [m], ``z_filled_gaps`` (list of
        dicts ``start``, ``end`` [m of us], ``length`` [m], ``z_start``, ``z_end`` [m]),
        ``z_robust_downweighted``, ``z_residual_rms`` / ``z_residual_max`` [m] (over the
        samples the smoother saw, pseudo-samples included) and, for the report of what was
        done (:mod:`pyomo_lap.track.report`): ``z_outliers`` (list of dicts ``at`` [m of
        us], ``z``, ``median``, ``deviation`` [m]), ``z_downweighted_at`` and
        ``z_downweighted_residual`` (lists, [m]), ``z_change_rms``, ``z_change_max`` and
        ``z_change_max_at`` [m]: how far the result is from the kept samples of the data.
    """
    us = np.asarray(us, float)
    z = np.asarray(z, float)
    ok = np.isfinite(z)
    info = dict(n_z_samples=int(ok.sum()), n_z_outliers=0)
    if ok.sum() == 0:
        return np.zeros(len(sig_out)), info
    order = np.argsort(us[ok])
    su, zs = us[ok][order], z[ok][order]
    su, zs = _drop_outliers(su, zs, hampel, closed, period, info)
    su, zs, real = _fill_long_gaps(su, zs, closed, period, max_gap, gap_end_window,
                                   gap_fill_spacing, info)
    if len(su) < 4:
        return np.interp(sig_out, su, zs, period=period if closed else None), info
    if cutoff and cutoff > 0:
        Z = _smooth_profile(su, zs, real, closed, period, sig_out, cutoff, grid_spacing,
                            robust_iterations, robust_min_scale, info)
    else:
        if closed:
            Z = curve_spline(su, zs, True, period)(np.mod(sig_out, period))
        else:
            Z = make_interp_spline(su, zs, k=5 if len(su) >= 6 else 1)(sig_out)
    return Z, info


def _drop_outliers(su, zs, hampel, closed, period, info):
    """Elevation samples (sorted) without the outliers of the Hampel filter ``hampel`` (None:
    none dropped); ``info`` gets ``n_z_outliers`` and ``z_outliers``."""
    if hampel is None or len(su) < 8:
        return su, zs
    hw, ns, mt = hampel
    out, med = hampel_filter(su, zs, hw, ns, mt, closed, period)
    info["n_z_outliers"] = int(out.sum())
    info["z_outliers"] = [dict(at=float(su[i]), z=float(zs[i]), median=float(med[i]),
                               deviation=float(zs[i] - med[i])) for i in np.flatnonzero(out)]
    return su[~out], zs[~out]


def _fill_long_gaps(su, zs, closed, period, max_gap, gap_end_window, gap_fill_spacing, info):
    """Gaps longer than ``max_gap`` filled with pseudo-samples on the straight line (in s, z)
    between robust end elevations (median of the samples within ``gap_end_window``). Returns
    the samples and which of them are the data's (not pseudo-samples); ``info`` gets
    ``z_longest_gap`` and ``z_filled_gaps``."""
    real = np.ones(len(su), bool)      # samples of the data (not the pseudo-samples of a fill)
    gaps = np.diff(np.concatenate([su, [su[0] + period]])) if closed else np.diff(su)
    info["z_longest_gap"] = float(gaps.max()) if len(gaps) else 0.0
    if max_gap is None or len(su) < 2:
        return su, zs, real
    add_u, add_z = [], []
    for g in np.flatnonzero(gaps > max_gap):
        ua = su[g]
        ub = su[g + 1] if g + 1 < len(su) else su[0] + period
        za = _window_median(su, zs, ua, -gap_end_window, closed, period)
        zb = _window_median(su, zs, ub, +gap_end_window, closed, period)
        k = max(int(np.ceil((ub - ua) / gap_fill_spacing)), 2)
        uu = np.linspace(ua, ub, k + 1)[1:-1]
        add_u.append(uu)
        add_z.append(za + (zb - za) * (uu - ua) / (ub - ua))
        info.setdefault("z_filled_gaps", []).append(
            dict(start=float(ua), end=float(ub), length=float(ub - ua), z_start=float(za),
                 z_end=float(zb)))
    if add_u:
        uu = np.concatenate(add_u)
        if closed:
            uu = np.mod(uu, period)
        su = np.concatenate([su, uu])
        zs = np.concatenate([zs, np.concatenate(add_z)])
        real = np.concatenate([real, np.zeros(len(uu), bool)])
        o = np.argsort(su, kind="stable")
        su, zs, real = su[o], zs[o], real[o]
    return su, zs, real


def _smooth_profile(su, zs, real, closed, period, sig_out, cutoff, grid_spacing,
                    robust_iterations, robust_min_scale, info):
    """The elevation samples smoothed by :func:`penalized_smooth` at ``cutoff`` (with
    ``robust_iterations`` bisquare passes) and evaluated at ``sig_out``; ``info`` gets the
    residuals and how far the result is from the data's samples."""
    w0 = voronoi_weights(su, closed, period)
    w = w0.copy()
    for _ in range(robust_iterations + 1):
        ug, Zg = penalized_smooth(su, zs, w, cutoff, closed, period if closed else None,
                                  grid_spacing)
        if robust_iterations == 0:
            break
        fit = np.interp(su, ug, Zg, period=period) if closed else np.interp(su, ug, Zg)
        r = zs - fit
        scale = max(1.4826 * np.median(np.abs(r - np.median(r))), robust_min_scale)
        q = r / (4.685 * scale)
        w = w0 * np.where(np.abs(q) < 1.0, (1.0 - q**2) ** 2, 0.0)
    low = w < 0.5 * w0
    info["z_robust_downweighted"] = int(np.count_nonzero(low))
    if closed:
        spl = curve_spline(ug, Zg, True, period)
        Z = spl(np.mod(sig_out, period))
        res = zs - spl(np.mod(su, period))
    else:
        spl = make_interp_spline(ug, Zg, k=5)
        Z = spl(np.clip(sig_out, ug[0], ug[-1]))
        res = zs - spl(su)
    info["z_residual_rms"] = float(np.sqrt(np.mean(res**2)))
    info["z_residual_max"] = float(np.max(np.abs(res)))
    sel = low & real
    info["z_downweighted_at"] = [float(v) for v in su[sel]]
    info["z_downweighted_residual"] = [float(v) for v in res[sel]]
    if real.any():
        r_real = np.abs(res[real])
        k = int(np.argmax(r_real))
        info["z_change_rms"] = float(np.sqrt(np.mean(r_real**2)))
        info["z_change_max"] = float(r_real[k])
        info["z_change_max_at"] = float(su[real][k])
    return Z


def _project_on_polyline(Q, sq, pts, idx, closed, period):
    """Arc-length coordinate of the orthogonal projection of pts on polyline Q (samples sq)."""
    M = len(Q)
    best = np.array(sq[idx], float)
    bestd = np.linalg.norm(pts - Q[idx], axis=1)
    for off in (-1, 0):
        a = idx + off
        b = a + 1
        if closed:
            a = np.mod(a, M)
            b = np.mod(b, M)
        else:
            valid = (a >= 0) & (b < M)
            a = np.clip(a, 0, M - 1)
            b = np.clip(b, 0, M - 1)
        d = Q[b] - Q[a]
        dd = np.maximum(np.sum(d * d, axis=1), 1e-300)
        tt = np.clip(np.sum((pts - Q[a]) * d, axis=1) / dd, 0.0, 1.0)
        proj = Q[a] + tt[:, None] * d
        dist = np.linalg.norm(pts - proj, axis=1)
        seglen = np.sqrt(dd)
        sa = sq[a]
        sval = sa + tt * seglen
        if closed:
            sval = np.mod(sval, period)
        else:
            dist = np.where(valid, dist, np.inf)
        upd = dist < bestd
        best[upd] = sval[upd]
        bestd[upd] = dist[upd]
    return best
