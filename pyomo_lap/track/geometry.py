"""3D ribbon track: spine, track frame {S} and its geometric angular velocity.

Implements the track parametrisation of Bartali, Gabiccini, Grabovic, Guiggiani,
"A Lie group-based race car model ...", sec. 2.1, eqs. (7)-(12):

* spine ``C(s) = p(s)`` in the ground frame {G} (x east, y north, z up) [m],
  parametrised by arc length ``s`` (so ``|p'| = 1`` and ``J_1^1 =
  [1, 0, 0, Omega_x, Omega_y, Omega_z]``, eq. 12b);
* intermediate frame {H} = [t v w]: ``t = p'/|p'|``, ``v = unit(k_G x t_h)``
  (horizontal, pointing left), ``w = t x v``;
* track frame {S} = [t n m]: {H} rotated about ``t`` by the banking ``nu``:
  ``n = cos(nu) v + sin(nu) w``, ``m = -sin(nu) v + cos(nu) w``;
  ``R_{G,S} = [t n m]`` (eq. 9);
* geometric angular velocity ``hat(Omega) = R^T dR/ds`` (eq. 11).  With heading
  ``psi`` (angle of the horizontal tangent from east, counter-clockwise) and
  slope ``theta = asin(t_z)``, ``R_{G,S} = Rz(psi) Ry(-theta) Rx(nu)`` and::

      Omega_x = psi' sin(theta) + nu'                                  (geodesic torsion)
      Omega_y = -theta' cos(nu) + psi' cos(theta) sin(nu)              (-normal curvature)
      Omega_z = theta' sin(nu) + psi' cos(theta) cos(nu)               (geodesic curvature)

  ``psi', theta', psi'', theta''`` are computed analytically from ``p', p'', p'''``
  of the quintic spline, so ``dOmega/ds`` is analytic too.

The spine is a quintic (C^4) interpolating B-spline of points sampled at
uniform arc length (periodic for closed tracks); widths and banking are quintic
splines of ``s`` as well.  Raw or user data are smoothed and resampled by
:mod:`pyomo_lap.track.build`; the files users bring (CSV dialects, the TUM racetrack
database's centreline with widths, GPS logger traces, KML boundaries) are read by
:mod:`pyomo_lap.track.formats` and the constructors of :mod:`pyomo_lap.track.csv_files`,
:mod:`pyomo_lap.track.gps` and :mod:`pyomo_lap.track.boundaries` (base classes of :class:`Track`);
:func:`pyomo_lap.track.loading.load_track` finds the one of a file in the registry of track
formats (``docs/tracks.md``).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.interpolate import make_interp_spline

from . import build as tb, checks as track_checks
from .boundaries import BoundaryLoaders
from .built_checks import finish as _finish
from .checks import MAX_GRADE
from .csv_files import CsvLoaders
from .gps import GpsLoaders
from .points import TrackBase, TrackPoints
from .report import assumption, step

__all__ = ["TrackPoints", "Track"]

DEFAULT_HALF_WIDTH = 4.0  # [m], used when the data have no widths
DEFAULT_BANKING = 0.0     # [rad], used when the data have no banking
RECENTRE_ABOVE = 1.0e4    # [m], see _recentre_shift

SET_WIDTH = ("--track-width METRES (the total, half each side; Python: track_width=...) or "
             "width_left_m, width_right_m columns in a CSV track file")
SET_BANKING = "a banking_rad column in a CSV track file (Track.to_csv writes one)"


class Track(CsvLoaders, GpsLoaders, BoundaryLoaders, TrackBase):
    """A 3D ribbon track parametrised by spine arc length ``s`` in [0, length].

    Construct with :meth:`from_arclength_samples` (already smooth points at
    uniform arc length), :meth:`from_points` (arbitrary points, smoothed and
    resampled), or from a file: :meth:`from_csv` (:mod:`~pyomo_lap.track.csv_files`),
    :meth:`from_geodetic`, :meth:`from_zaggy_json` (:mod:`~pyomo_lap.track.gps`),
    :meth:`from_boundaries`, :meth:`from_kml`, :meth:`from_fastest_lap_xml`
    (:mod:`~pyomo_lap.track.boundaries`); or with
    :func:`~pyomo_lap.track.loading.load_track` (any registered format).

    Attributes
    ----------
    name : str
    length : float
        Spine length L [m].
    closed : bool
        Closed loop (all quantities periodic in s with period L) or open.
    provenance : dict
        Where the data came from and how they were processed.
    origin : ndarray (3,)
        Where the frame of the fitted spline sits in the data's frame [m] (0 unless the data
        were re-centred: see the constructor's Notes); :meth:`evaluate` adds it to the positions.
    """

    def __init__(self, s, points, width_left=None, width_right=None, banking=None,
                 closed: bool = True, name: str = "track", provenance: dict | None = None,
                 origin=None):
        """Build a track from samples of an arc-length parametrised spine.

        Parameters
        ----------
        s : array_like (M,)
            Strictly increasing arc length of the samples [m], starting at 0.  Closed
            tracks: the last sample must *not* repeat the first; the period is
            ``L = s[-1] + (s[-1] - s[-2])`` unless a repeated closing sample is given
            (then it is dropped and ``L`` is its ``s``).  Open tracks: ``L = s[-1]``.
        points : array_like (M, 3)
            Spine points in {G} [m], smooth (they are interpolated, not smoothed).
        width_left, width_right : array_like (M,) or float, optional
            Half-widths [m] (default 4.0 m each, recorded in ``provenance['assumptions']``).
        banking : array_like (M,) or float, optional
            Banking nu [rad] (default 0, recorded in ``provenance['assumptions']``).
        closed : bool
        name : str
        provenance : dict, optional
        origin : array_like (3,), optional
            Where the frame of ``points`` sits in the data's frame [m] (default 0: the points
            are in the data's frame). The loaders give it when they re-centred the data's
            coordinates before (exactly, from the text of a CSV file).

        Notes
        -----
        Points far from the origin (an axis beyond ``max(1e4 m, 10 x the track's extent)``:
        national grid or UTM coordinates, a file shifted by 1e12 m) are re-centred on the
        first point, in whole metres, before the splines are fitted: the splines' coefficients
        then carry the track's shape, not the offset, whose rounding (1.2e-4 m at 1e12 m) the
        second and third derivatives would amplify (``pyomo_lap.track.geometry._recentre_shift``).
        The offset is :attr:`origin` (far from 0: also ``provenance['origin_m']`` and a
        processing step ``recentred``); :meth:`evaluate` adds it back to the positions, which
        are then exact only to a float's precision at that distance. Everything else (length,
        frame, curvature and their derivatives) does not depend on it.

        Raises
        ------
        ValueError
            On shape mismatch, fewer than 6 samples, non-increasing s, non-finite values.
        """
        s = np.asarray(s, float)
        P = np.asarray(points, float)
        if P.ndim != 2 or P.shape[1] != 3 or len(s) != len(P):
            raise ValueError(f"points must be (M,3) with M = len(s); got {P.shape} and {s.shape}")
        if len(s) < 6:
            raise ValueError(f"need at least 6 samples, got {len(s)}")
        if not (np.all(np.isfinite(s)) and np.all(np.isfinite(P))):
            raise ValueError("s and points must be finite")
        if np.any(np.diff(s) <= 0):
            raise ValueError("s must be strictly increasing")

        wl = _sample_column(width_left, DEFAULT_HALF_WIDTH, s)
        wr = _sample_column(width_right, DEFAULT_HALF_WIDTH, s)
        nu = _sample_column(banking, 0.0, s)
        base = np.zeros(3) if origin is None else np.asarray(origin, float).reshape(-1)
        if base.shape != (3,) or not np.all(np.isfinite(base)):
            raise ValueError(f"origin must be 3 finite numbers [m], got {origin!r}")
        shift = _recentre_shift(P)
        if np.any(shift != 0.0):
            P = P - shift
        self.origin = base + shift
        """Position [m] of the frame of the fitted points in the data's frame (see Notes)."""
        s, L = self._fit_splines(s - s[0], P, wl, wr, nu, closed)
        self.length = float(L)
        self.closed = bool(closed)
        self.name = str(name)
        self.provenance = dict(provenance or {})
        # a track rebuilt from another (from_boundaries' reference line) has its records already
        said = {a.get("quantity") for a in self.provenance.get("assumptions", [])}
        assumed = [a for a in _default_assumptions(width_left is None, width_right is None,
                                                   banking is None) if a["quantity"] not in said]
        if assumed:
            self.provenance["assumptions"] = list(self.provenance.get("assumptions", [])) + assumed
        extent = float(np.ptp(P[:, :2], axis=0).max())
        if np.any(np.abs(self.origin) > max(RECENTRE_ABOVE, 10.0 * extent)):   # reported
            self.provenance["origin_m"] = [float(v) for v in self.origin]
            steps = list(self.provenance.get("processing_steps", []))
            steps = [st for st in steps if st.get("step") != "recentred"]
            self.provenance["processing_steps"] = steps + [_recentred_step(self.origin)]
        self.findings = []   # repairs made by the loader (pyomo_lap.track.checks.Finding)
        self.build_repairs = []   # repairs made when a bundled file was built (its .json)
        self._s_samples = s

    def _fit_splines(self, s, P, wl, wr, nu, closed: bool):
        """The quintic splines of the spine (``self._p``) and of the widths and banking
        (``self._aux``), periodic when ``closed`` (a repeated closing sample is dropped).
        Returns the samples' arc length (without the closing sample) and the length [m]."""
        if closed:
            if np.linalg.norm(P[-1] - P[0]) < 1e-9 * max(1.0, s[-1]):
                L = s[-1]
                s, P, wl, wr, nu = s[:-1], P[:-1], wl[:-1], wr[:-1], nu[:-1]
            else:
                L = s[-1] + (s[-1] - s[-2])
            ss = np.concatenate([s, [L]])
            close = lambda a: np.concatenate([a, a[:1]], axis=0)  # noqa: E731
            self._p = make_interp_spline(ss, close(P), k=5, bc_type="periodic")
            self._aux = make_interp_spline(ss, close(np.column_stack([wl, wr, nu])), k=5,
                                           bc_type="periodic")
        else:
            L = s[-1]
            self._p = make_interp_spline(s, P, k=5)
            self._aux = make_interp_spline(s, np.column_stack([wl, wr, nu]), k=5)
        return s, L

    def __repr__(self) -> str:
        """Name, length, closed and the number of samples."""
        return (f"Track(name={self.name!r}, length={self.length:.3f} m, closed={self.closed}, "
                f"samples={len(self._s_samples)})")

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, s) -> TrackPoints:
        """Evaluate spine, frame and angular velocity at arc lengths ``s``.

        Parameters
        ----------
        s : array_like, scalar or (n,)
            Arc length [m].  Closed track: wrapped modulo ``length``.

        Returns
        -------
        TrackPoints
            All arrays with leading dimension n.

        Raises
        ------
        ValueError
            Open track and some ``s`` outside ``[0, length]``; non-finite ``s``.

        Notes
        -----
        ``Omega`` follows eq. (11) via the closed form in the module docstring;
        derivatives are with respect to the spline parameter, which equals the
        arc length up to ``| |p'| - 1 |`` (about 1e-6 for the bundled tracks).
        """
        s = self._wrap(s)
        d1 = self._p(s, 1)
        d2 = self._p(s, 2)
        d3 = self._p(s, 3)
        P = self._p(s)
        if np.any(self.origin != 0.0):
            P = P + self.origin          # the data's frame (see the constructor's Notes)
        aux = self._aux(s)
        aux1 = self._aux(s, 1)
        aux2 = self._aux(s, 2)
        wl, wr, nu = aux[:, 0], aux[:, 1], aux[:, 2]
        nu1, nu2 = aux1[:, 2], aux2[:, 2]

        x1, y1, z1 = d1.T
        x2, y2, z2 = d2.T
        x3, y3, z3 = d3.T
        r2 = x1 * x1 + y1 * y1
        if np.any(r2 <= 1e-24):
            raise ValueError("vertical spine tangent: heading undefined")
        r = np.sqrt(r2)
        speed2 = r2 + z1 * z1
        speed = np.sqrt(speed2)
        # heading psi and derivatives
        psi = np.arctan2(y1, x1)
        cr = x1 * y2 - y1 * x2          # cross
        dt = x1 * x2 + y1 * y2          # r r'
        psi1 = cr / r2
        psi2 = (x1 * y3 - y1 * x3) / r2 - 2.0 * cr * dt / (r2 * r2)
        # slope theta = atan2(z', r) and derivatives
        theta = np.arctan2(z1, r)
        r_1 = dt / r
        r_2 = (x2 * x2 + y2 * y2 + x1 * x3 + y1 * y3) / r - dt * dt / (r2 * r)
        num = r * z2 - z1 * r_1
        num1 = r * z3 - z1 * r_2
        den1 = 2.0 * (x1 * x2 + y1 * y2 + z1 * z2)
        theta1 = num / speed2
        theta2 = (num1 * speed2 - num * den1) / (speed2 * speed2)

        st, ct = np.sin(theta), np.cos(theta)
        sn, cn = np.sin(nu), np.cos(nu)
        sp_, cp_ = np.sin(psi), np.cos(psi)
        om = np.column_stack([
            psi1 * st + nu1,
            -theta1 * cn + psi1 * ct * sn,
            theta1 * sn + psi1 * ct * cn,
        ])
        dom = np.column_stack([
            psi2 * st + psi1 * ct * theta1 + nu2,
            -theta2 * cn + theta1 * sn * nu1 + psi2 * ct * sn - psi1 * st * theta1 * sn
            + psi1 * ct * cn * nu1,
            theta2 * sn + theta1 * cn * nu1 + psi2 * ct * cn - psi1 * st * theta1 * cn
            - psi1 * ct * sn * nu1,
        ])
        t = d1 / speed[:, None]
        v = np.column_stack([-sp_, cp_, np.zeros_like(psi)])
        w = np.column_stack([-st * cp_, -st * sp_, ct])
        nvec = cn[:, None] * v + sn[:, None] * w
        mvec = -sn[:, None] * v + cn[:, None] * w
        R = np.stack([t, nvec, mvec], axis=2)
        return TrackPoints(s=s, position=P, rotation=R, omega=om, domega_ds=dom,
                           width_left=wl, width_right=wr, banking=nu,
                           heading=psi, slope=theta, speed=speed)

    def to_csv(self, path, spacing: float = 2.0) -> None:
        """Write ``s_m,x_m,y_m,z_m,width_left_m,width_right_m,banking_rad`` samples (1e-6 m)."""
        s = self.sample_s(spacing)
        tp = self.evaluate(s)
        _write_track_csv(path, s, tp.position, tp.width_left, tp.width_right, tp.banking)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_arclength_samples(cls, s, points, width_left=None, width_right=None, banking=None,
                               closed: bool = True, name: str = "track",
                               provenance: dict | None = None, origin=None) -> "Track":
        """Alias of the constructor (samples already smooth and at arc length)."""
        return cls(s, points, width_left, width_right, banking, closed, name, provenance, origin)

    @classmethod
    def from_points(cls, points, closed: bool, width_left=None, width_right=None, banking=None,
                    smoothing: float | None = None, z_smoothing: float | None = None,
                    spacing: float | None = None, name: str = "track",
                    provenance: dict | None = None, repair: bool = False,
                    max_grade: float = MAX_GRADE) -> "Track":
        """Check, smooth and resample arbitrary spine points into an arc-length parametrised
        track.

        Parameters
        ----------
        points : array_like (n, 3)
            Spine points x, y, z in {G} [m], in driving order.  Closed: the last point
            may repeat the first.
        closed : bool or None
            True: a closed loop (it must close); False: open; None: detected.
        width_left, width_right, banking : scalar or (n,) arrays, optional
            Per-point values [m, m, rad], mapped to the new s by the arc length of
            the points (linear, then the quintic spline of the track).
        smoothing : float, optional
            Cut-off wavelength [m] of the plan-view smoother (see
            :mod:`pyomo_lap.track.build`); ``0`` = interpolate exactly (quintic
            spline through the points); ``None`` = light: 3 x the median spacing.
        z_smoothing : float, optional
            Same for the elevation (default: ``smoothing``).
        spacing : float, optional
            Arc-length spacing of the internal samples [m] (default: min(2, median
            spacing / 2), at least 0.05).
        repair : bool
            Repair the problems of the points where a repair is well defined (see
            :mod:`pyomo_lap.track.checks`); the repairs are reported.
        max_grade : float
            Steepest plausible grade [-].

        Raises
        ------
        TrackDataError (a ValueError)
            Bad points (missing values, duplicates, glitches, a loop that does not close,
            fewer than 4 points, ...) or a bad result (too steep, self-intersecting);
            every problem is listed (see :mod:`pyomo_lap.track.checks`).
        """
        chk = track_checks.check_points(
            points, closed, attrs=dict(width_left=width_left, width_right=width_right,
                                       banking=banking),
            source=f"track {name!r}", repair=repair, max_grade=max_grade)
        a = chk.attrs
        tr = cls._build_from_points(chk.points, chk.closed, a.get("width_left"), a.get("width_right"),
                                    a.get("banking"), smoothing, z_smoothing, spacing, name, provenance)
        return _finish(tr, chk.findings, f"track {name!r}", max_grade)

    @classmethod
    def _build_from_points(cls, points, closed: bool, width_left=None, width_right=None,
                           banking=None, smoothing: float | None = None,
                           z_smoothing: float | None = None, spacing: float | None = None,
                           name: str = "track", provenance: dict | None = None,
                           origin=None) -> "Track":
        """:meth:`from_points` without the checks (points already checked); ``origin`` as the
        constructor takes it. Points far from the origin are re-centred before the smoothing
        (whose linear solves, like the splines, would lose the offset's rounding)."""
        P = np.asarray(points, float)
        if P.ndim != 2 or P.shape[1] != 3:
            raise ValueError(f"points must have shape (n,3), got {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ValueError("points must be finite")
        shift = _recentre_shift(P)
        if np.any(shift != 0.0):
            P = P - shift
        origin = (np.zeros(3) if origin is None else np.asarray(origin, float).reshape(3)) + shift
        if closed and len(P) > 1 and np.linalg.norm(P[-1] - P[0]) < 1e-9:
            P = P[:-1]
            trim = True
        else:
            trim = False
        if len(P) < 4:
            raise ValueError(f"need at least 4 points, got {len(P)}")
        dd = np.linalg.norm(np.diff(P, axis=0), axis=1)
        med = float(np.median(dd[dd > 0])) if np.any(dd > 0) else 1.0
        noise_steps = []
        if smoothing is None:     # light smoothing, from the data's spacing and noise
            smoothing, noise_steps = _light_cutoff(P, closed, med)
        if spacing is None:
            spacing = float(np.clip(min(2.0, max(med, smoothing / 3.0) / 2.0), 0.05, None))
        s_new, Pn, L, info = tb.process_points(P, closed, smoothing, z_smoothing, spacing=spacing,
                                               grid_spacing=_grid_spacing(min(spacing, 1.0), med))
        # map per-point attributes via the horizontal arc length of the raw points
        sig = info.pop("sigma_of_raw_points")
        steps = info.pop("steps", [])
        Lh = info["horizontal_length"]

        def remap(v, default):
            if v is None:
                return default
            a = np.asarray(v, float)
            if a.ndim == 0:
                return float(a)
            if trim:
                a = a[:-1]
            if a.shape != (len(P),):
                raise ValueError(f"per-point attribute has shape {a.shape}, expected ({len(P)},)")
            frac = s_new / L
            o = np.argsort(sig)
            if closed:
                return np.interp(frac * Lh, sig[o], a[o], period=Lh)
            return np.interp(frac * Lh, sig[o], a[o])

        prov = dict(provenance or {})
        prov.setdefault("processing", {}).update(
            dict(smoothing_cutoff_m=smoothing, z_smoothing_cutoff_m=z_smoothing, spacing_m=spacing,
                 **{k: v for k, v in info.items() if not isinstance(v, np.ndarray)}))
        prov["processing_steps"] = list(prov.get("processing_steps", [])) + noise_steps + steps
        return cls(s_new, Pn, remap(width_left, None), remap(width_right, None),
                   remap(banking, None), closed, name, prov, origin=origin)


def _grid_spacing(target: float, med: float) -> float:
    """The smoother's grid spacing [m]: the multiple of the points' median spacing ``med``
    nearest to ``target`` (dense points), or the whole fraction of it nearest to ``target`` from
    below, so that evenly spaced points sit at
    the same places between the grid's nodes all along the line (at other ratios the linear
    interpolation between the nodes, which lies inside a curve by up to h^2 / 8R, beats with
    the points and leaves a ripple in the curvature: 2 % of 1/R for points every 0.2 m on a
    0.25 m grid, R = 300 m)."""
    if not med > 0 or not target > 0:
        return target
    if med <= target:       # (not much finer than target: the elevation's long cut-off on a
        return med * max(round(target / med), 1)     # fine grid is ill-conditioned)
    return med / math.ceil(med / target)


def _light_cutoff(P, closed: bool, med: float):
    """The cut-off wavelength [m] of the light smoothing of :meth:`Track.from_points`
    (``smoothing`` None), from the data: the largest of 3 point spacings, 3 x
    :data:`pyomo_lap.track.build.MIN_SPACING` and the cut-off that leaves a curvature noise of
    at most :data:`~pyomo_lap.track.build.KAPPA_NOISE` from the points' own noise
    (:func:`~pyomo_lap.track.build.position_noise`, :func:`~pyomo_lap.track.build.noise_cutoff`).
    The smoother weighs each point by its length along the line (Voronoi weights) and fits a
    grid of a tenth of the cut-off or finer, so dense points are resampled on it and the track
    does not depend on how densely the line was sampled.

    Returns
    -------
    cutoff : float
        [m]
    steps : list
        The processing step ``resampled`` when the cut-off is not 3 spacings (dense or noisy
        points), else [].
    """
    sigma = tb.position_noise(P, closed)
    lam = tb.noise_cutoff(sigma, med)
    cutoff = max(3.0 * med, 3.0 * tb.MIN_SPACING, lam)
    if cutoff <= 3.0 * med:
        return cutoff, []
    why = (f"their noise ({1e3 * sigma:.3g} mm, from the points' deviations from their "
           f"neighbours' chords) asks for {lam:.3g} m to leave a curvature noise below "
           f"{tb.KAPPA_NOISE:g} 1/m" if lam >= 3.0 * tb.MIN_SPACING else
           f"they are closer than {tb.MIN_SPACING:g} m, the finest spacing resolved (their "
           f"noise, {1e3 * sigma:.2g} mm, asks for less)")
    n = len(P)
    rec = step("resampled", f"{n} points every {med:.3g} m (median): the plan view is smoothed "
               f"at a cut-off of {cutoff:.3g} m, not 3 spacings ({3 * med:.3g} m): {why}; the "
               f"points, weighted by their length along the line, are fitted on a grid of "
               f"{min(1.0, cutoff / 6):.3g} m or finer, so the track does not depend on how "
               "densely the file was sampled", method=f"{n} points every {med:.2g} m, noise "
               f"{1e3 * sigma:.2g} mm: cut-off {cutoff:.3g} m", count=n)
    return cutoff, [rec]


def _sample_column(v, default: float, s: np.ndarray) -> np.ndarray:
    """A per-sample column of the constructor (widths, banking): ``v`` (a scalar or one value
    per sample; None: ``default``) as a float array like ``s``."""
    if v is None:
        v = default
    a = np.asarray(v, float)
    if a.ndim == 0:
        a = np.full(len(s), float(a))
    if a.shape != s.shape or not np.all(np.isfinite(a)):
        raise ValueError("width_left/width_right/banking must be scalars or finite (M,) arrays")
    return a


def _recentre_shift(P) -> np.ndarray:
    """What to take off points (n, 3) [m] before fitting splines or smoothing them: on each
    axis whose values reach beyond ``max(RECENTRE_ABOVE, 10 x the horizontal extent)`` (the
    track is far from the origin for its size: grid coordinates, a shifted file), the first
    point's value rounded to whole metres (exactly representable, so the subtraction adds no
    error of its own); 0 on the others (every bundled track: it starts at its origin)."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[1] != 3 or not len(P) or not np.all(np.isfinite(P)):
        return np.zeros(3)
    extent = float(np.ptp(P[:, :2], axis=0).max())
    far = np.max(np.abs(P), axis=0) > max(RECENTRE_ABOVE, 10.0 * extent)
    return np.where(far, np.round(P[0]), 0.0)


def _recentred_step(origin) -> dict:
    """The record of coordinates re-centred on ``origin`` [m] (a processing step)."""
    o = np.asarray(origin, dtype=float)
    ulp = float(np.spacing(np.max(np.abs(o))))
    where = f"({o[0]:.12g}, {o[1]:.12g}, {o[2]:.12g}) m"
    return step("recentred", f"the coordinates were re-centred on {where} (the first point, in "
                f"whole metres, on each axis whose values reach beyond "
                f"max({RECENTRE_ABOVE:g} m, 10 x the track's extent)) before the splines were "
                "fitted: length, frame, curvature and the lap are computed from the re-centred "
                "numbers, which keep their precision; positions given in the file's frame "
                "(Track.evaluate().position, x_spine, x_vip ... of the results) have the offset "
                f"added back and are exact to a float's precision there, about {ulp:.2g} m",
                method=f"on {where}; positions in the file's frame to ~{ulp:.1g} m",
                size=float(np.linalg.norm(o)), unit="m")


def _default_assumptions(no_left: bool, no_right: bool, no_banking: bool) -> list:
    """Records of the defaults the constructor used (:func:`pyomo_lap.track.report.assumption`)."""
    out = []
    if no_left and no_right:
        out.append(assumption("width", DEFAULT_HALF_WIDTH, "m each side", "the data have no "
                              f"widths (total {2 * DEFAULT_HALF_WIDTH:g} m)", SET_WIDTH))
    elif no_left or no_right:
        side = "width_left" if no_left else "width_right"
        out.append(assumption(side, DEFAULT_HALF_WIDTH, "m", f"the data have no {side}",
                              SET_WIDTH))
    if no_banking:
        out.append(assumption("banking", DEFAULT_BANKING, "rad", "the data have no banking "
                              "(a flat cross-section)", SET_BANKING))
    return out


def _write_track_csv(path, s, P, wl, wr, nu) -> None:
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write("s_m,x_m,y_m,z_m,width_left_m,width_right_m,banking_rad\n")
        for k in range(len(s)):
            fh.write(f"{s[k]:.6f},{P[k, 0]:.6f},{P[k, 1]:.6f},{P[k, 2]:.6f},"
                     f"{wl[k]:.4f},{wr[k]:.4f},{nu[k]:.6f}\n")
