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
:mod:`pyomo_lap.track.formats` and the loaders here (:func:`load_track`, ``docs/tracks.md``).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
from scipy.interpolate import make_interp_spline

from . import checks as track_checks
from . import formats
from .checks import MAX_GRADE, TrackDataError
from .points import TrackBase, TrackPoints

__all__ = ["TrackPoints", "Track", "load_track", "available_tracks", "bundled_tracks", "data_dir",
           "TrackDataError"]

DEFAULT_HALF_WIDTH = 4.0  # [m], used when the data have no widths
DEFAULT_BANKING = 0.0     # [rad], used when the data have no banking
RECENTRE_ABOVE = 1.0e4    # [m], see _recentre_shift

SET_WIDTH = ("--track-width METRES (the total, half each side; Python: track_width=...) or "
             "width_left_m, width_right_m columns in a CSV track file")
SET_BANKING = "a banking_rad column in a CSV track file (Track.to_csv writes one)"

_COLUMN_ALIASES = {k: formats.COLUMNS[k] for k in ("s", "x", "y", "z", "width_left",
                                                   "width_right", "banking")}
"""Accepted names of a centreline file's columns (:data:`pyomo_lap.track.formats.COLUMNS`)."""


# ---------------------------------------------------------------------------
# ---------------------------------------------------------------------------
def _as_1d(s) -> np.ndarray:
    a = np.asarray(s, dtype=float)
    return a.reshape(-1) if a.ndim != 1 else a


class Track(TrackBase):
    """A 3D ribbon track parametrised by spine arc length ``s`` in [0, length].

    Construct with :meth:`from_arclength_samples` (already smooth points at
    uniform arc length), :meth:`from_points` (arbitrary points, smoothed and
    resampled), :meth:`from_csv` or :meth:`from_zaggy_json`; or with
    :func:`load_track`.

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
        assumed = _default_assumptions(width_left is None, width_right is None, banking is None)
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
        from . import build as tb

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

    @classmethod
    def from_csv(cls, path, name: str | None = None, closed: bool | None = None,
                 smoothing: float | None = None, provenance: dict | None = None,
                 repair: bool = False, max_grade: float = MAX_GRADE,
                 track_width: float | None = None, flat: bool = False,
                 lat_lon_order: str = "auto") -> "Track":
        """Load a track from a CSV file: a centreline (``x, y, z``, optional widths, banking
        and ``s``) or a GPS logger's trace (``lat, lon``, optional altitude).

        Columns (header row, case-insensitive, an optional unit in brackets: ``x [m]``):
        ``x, y, z`` [m] required (``x_m``, ``x_spine`` of the tool's ``trajectory.csv`` ...);
        optional ``width_left, width_right`` [m] (the TUM racetrack database's
        ``w_tr_left_m, w_tr_right_m`` ...), ``banking`` [rad], ``s`` [m]; every accepted name:
        :data:`pyomo_lap.track.formats.COLUMNS`. The columns may be separated by ``,``,
        ``;`` (numbers with a decimal comma then too) or a tab. Lines starting with ``#`` are
        comments, but a first comment line that names the columns is the header (the TUM
        racetrack database's ``# x_m,y_m,w_tr_right_m,w_tr_left_m``); in that layout ``z``
        may be missing: the track is then flat (an assumed value). How the file was read,
        when it is not the plain ``x,y,z`` layout, is the processing step ``file_read``.

        A file with latitude and longitude columns (``lat``/``latitude``, ``lon``/``lng``/
        ``longitude``, optional ``alt``/``altitude``/``elevation``; every name:
        :data:`~pyomo_lap.track.formats.COLUMNS`) and no ``x, y`` is a GPS logger's trace: it
        is processed as :meth:`from_geodetic` processes raw GPS data (projection, smoothing,
        elevation outliers), ``smoothing`` as its plan-view cut-off (default 30 m);
        ``lat_lon_order`` says which column is the latitude
        (:func:`pyomo_lap.track.build.check_geodetic`; a centreline file refuses any but
        ``'auto'``).

        The points are checked (:func:`pyomo_lap.track.checks.check_points`), then the built
        track (:func:`~pyomo_lap.track.checks.check_track`).

        An ``s`` column at uniform arc length (a processed file such as
        ``data/tracks/nordschleife.csv``) with ``smoothing`` None: the points are interpolated
        as they are; otherwise they go through :meth:`from_points` (light smoothing).

        ``x`` and ``y`` are re-centred on their first value in whole metres, exactly, before
        anything else (:func:`_read_csv_columns`); the offset is :attr:`Track.origin`.

        Parameters
        ----------
        path : str or Path
        name : str, optional (default: file stem)
        closed : bool, optional
            True: a closed loop (it must close); False: open; None: closed if the last
            point repeats the first (within 1e-6 of the track extent) or the closing gap is
            at most 2.5 x the median point spacing.
        smoothing : float, optional
            See :meth:`from_points`.
        repair : bool
            Repair the problems where a repair is well defined (reported).
        max_grade : float
            Steepest plausible grade [-].
        track_width : float, optional
            Total width of the track [m], half of it each side of the centreline; it
            replaces the file's widths (recorded as the processing step ``widths_set``).
            Without it the file's ``width_left`` / ``width_right`` are used, and a missing
            one is 4.0 m (recorded in ``provenance['assumptions']``).
        flat : bool
            Ignore the file's elevations: z = 0 before the checks, banking as given (step
            ``flattened``, an assumed value).

        What the loader did: ``provenance['processing_steps']`` (:mod:`pyomo_lap.track.report`).

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            Unreadable file, missing required column (the message says how the file was
            read), a column in another unit, a bad ``track_width``, a ``lat_lon_order`` other
            than ``'auto'`` for a centreline (x, y) file, or not one of
            :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS`.
        TrackDataError (a ValueError)
            Bad data; every problem is listed with the file, the rows (and lines), the
            values and what was expected.
        """
        path = Path(path)
        half = track_checks.check_track_width(track_width)
        table = formats.read_table(path)
        if _is_gps_table(table):
            return cls._from_gps_table(path, table, name=name, closed=closed, repair=repair,
                                       max_grade=max_grade, track_width=track_width,
                                       smoothing=smoothing, provenance=provenance, flat=flat,
                                       lat_lon_order=lat_lon_order)
        _refuse_lat_lon_order(lat_lon_order, f"track file {path}")
        return cls._from_xyz_table(path, table, name=name, closed=closed, repair=repair,
                                   max_grade=max_grade, track_width=track_width, half=half,
                                   smoothing=smoothing, provenance=provenance, flat=flat)

    @classmethod
    def _from_xyz_table(cls, path: Path, table, *, name, closed, repair, max_grade, track_width,
                        half, smoothing, provenance, flat) -> "Track":
        """:meth:`from_csv` of a centreline file (x, y, z columns)."""
        source = f"track file {path}"
        offsets, read = {}, {}  # x, y re-centred exactly (see the reader)
        _, data, cells, labels = _read_csv_columns(path, origin=offsets, table=table, info=read)
        origin = np.array([offsets.get("x", 0.0), offsets.get("y", 0.0), 0.0])
        if flat:                   # the elevations ignored: z = 0 before the checks
            cells.pop("z", None), data.update(z=np.zeros(len(data["x"])), **(
                {"s": None} if "s" in data else {}))     # (s, the 3D arc length, no longer is)
        P = np.column_stack([data["x"], data["y"], data["z"]])
        attrs = {k: data[k] for k in ("width_left", "width_right", "banking", "s")
                 if data.get(k) is not None}
        chk = track_checks.check_points(P, closed, attrs=attrs, labels=labels, cells=cells,
                                        source=source, repair=repair, max_grade=max_grade)
        P, closed, data = chk.points, chk.closed, chk.attrs
        name = name or path.stem
        prov = _flat_provenance(_csv_provenance(provenance, path, read), len(P), "z", flat)
        wl, wr = _csv_widths(data, prov, half, track_width)
        s = data.get("s")
        if s is not None and smoothing is None and len(P) >= 6 and _arc_length_samples(s, P, closed):
            tr = cls(s, P, wl, wr, data.get("banking"), closed, name, prov, origin=origin)
            return _finish(tr, chk.findings, source, max_grade)
        tr = cls._build_from_points(P, closed, wl, wr, data.get("banking"), smoothing=smoothing,
                                    name=name, provenance=prov, origin=origin)
        return _finish(tr, chk.findings, source, max_grade)

    @classmethod
    def _from_gps_table(cls, path: Path, table, *, name=None, closed=None, repair=False,
                        max_grade=MAX_GRADE, track_width=None, smoothing=None,
                        provenance=None, flat=False, lat_lon_order="auto") -> "Track":
        """:meth:`from_csv` of a GPS logger's CSV file (latitude, longitude and optional
        altitude columns), through :meth:`from_geodetic`."""
        from . import build as tb
        from .report import step
        j = {q: formats.column_index(table.names, q) for q in ("lat", "lon", "alt")}
        for q, k in j.items():
            if k is not None and table.units[k] and table.units[k].lower() not in formats.UNITS[q]:
                raise ValueError(f"track file {path}: column {table.header[k].strip()!r} is in "
                                 f"{table.units[k]!r}; expected {' or '.join(formats.UNITS[q])}")
        lat, bad_lat, _ = formats.column_values(table, j["lat"])
        lon, bad_lon, _ = formats.column_values(table, j["lon"])
        if j["alt"] is not None and not flat:
            alt, bad_alt, _ = formats.column_values(table, j["alt"])
        else:
            alt, bad_alt = np.full(len(lat), np.nan), {}
        shown = [table.header[k].strip() if k is not None else "(no altitude)"
                 for k in (j["lat"], j["lon"], j["alt"])]
        detail = (f"read as a GPS logger's trace: latitude from column {shown[0]!r}, longitude "
                  f"from {shown[1]!r}, "
                  + (f"altitude from {shown[2]!r}" if j["alt"] is not None else "no altitude")
                  + f"; {table.how}")
        first = [step("file_read", detail, method=f"GPS trace; {table.how}",
                      count=len(table.rows))] + ([_flattened_step(len(table.rows))] if flat else [])
        prov = dict(provenance or {})
        prov.update(source_file=str(path.resolve()), sha256=tb.sha256_file(path))
        return cls.from_geodetic(
            lat, lon, alt, name=name or path.stem, closed=closed,
            smoothing=30.0 if smoothing is None else smoothing, track_width=track_width,
            repair=repair, max_grade=max_grade, source=f"track file {path}",
            lat_lon_order=lat_lon_order, labels=table.labels(), columns=tuple(shown), cells={"x": bad_lon, "y": bad_lat,
                                                                 "z": bad_alt},
            provenance=prov, steps=first,
            no_elevation=("flat=True: the file's altitudes are ignored" if flat else
                          "the file has no altitude column" if j["alt"] is None else
                          "the file's altitude column has no value"),
            elevation_hint="flat=False (no --flat)" if flat else
                           "an altitude column (alt, altitude, elevation) in metres")

    @classmethod
    def from_geodetic(cls, lat, lon, elev=None, *, name: str = "track",
                      closed: bool | None = None, start_finish=None,
                      start_finish_given: bool | None = None, origin=None,
                      smoothing: float = 30.0, z_smoothing: float = 400.0, spacing: float = 2.0,
                      hampel=(250.0, 3.0, 8.0), robust_iterations: int = 5,
                      track_width: float | None = None, repair: bool = False,
                      max_grade: float = MAX_GRADE, source: str = "GPS data", labels=None,
                      columns=("lat", "lon", "elev"), cells=None, provenance: dict | None = None,
                      steps=(), no_elevation: str = "the data have no elevation",
                      elevation_hint: str = "elevations in the data",
                      lat_lon_order: str = "auto") -> "Track":
        """A track from raw GPS points: latitude, longitude [deg] and elevation [m] (NaN:
        missing) in driving order (the processing of :meth:`from_zaggy_json`, which calls
        this, and of a GPS logger's CSV file, :meth:`from_csv`).

        Latitude and longitude are checked first (:func:`pyomo_lap.track.build.check_geodetic`:
        swapped columns refused, or read swapped with ``repair``; ``lat_lon_order`` (``'auto'``,
        ``'lat,lon'``, ``'lon,lat'``): which is which, the order used in
        ``provenance['lat_lon_order']``); they are projected (azimuthal equidistant, centred
        at ``origin``, else ``start_finish``, else the first point); the points are checked (:func:`pyomo_lap.track.checks.check_points`, without the elevation
        glitch checks, which the processing replaces) and processed by
        :func:`pyomo_lap.track.build.process_points` (plan view smoothed at ``smoothing``,
        elevations through a Hampel filter ``hampel``, gaps longer than 300 m filled, robust
        smoothing at ``z_smoothing``, resampled every ``spacing``); the built track is checked
        (:func:`~pyomo_lap.track.checks.check_track`).

        Parameters
        ----------
        lat, lon : array_like (n,)
            [deg].
        elev : array_like (n,), optional
            [m]; NaN where missing; None: no elevation (a flat track, an assumed value).
        name, closed, repair, max_grade
            As :meth:`from_zaggy_json`.
        start_finish, origin : (lat, lon), optional
            [deg]; the projection's centre is ``origin``, else ``start_finish``, else the
            first point; ``start_finish_given``: whether the data gave the start/finish.
        smoothing, z_smoothing, spacing : float
            Cut-off wavelengths of the plan-view and elevation smoothers, spacing [m].
        hampel, robust_iterations
            See :func:`pyomo_lap.track.build.smooth_elevation`.
        track_width : float, optional
            Total width [m], split evenly (default 4.0 m each side, an assumed value).
        source, labels, columns, cells
            For the messages: the data's name, where each point is, the names of latitude,
            longitude and elevation, ``{'x' (lon), 'y' (lat), 'z': {point: text}}`` of
            cells that were not numbers.
        provenance : dict, optional
            Recorded first (``source_file``, ``sha256``); ``steps``: processing steps
            recorded before this processing's.
        no_elevation, elevation_hint : str
            Why the track is flat when no elevation is given, and how to give one.

        Raises
        ------
        ValueError
            A ``track_width`` that is not a positive width in metres; a start/finish (or
            ``origin``) that is no position on Earth; a bad ``lat_lon_order``.
        TrackDataError (a ValueError)
            Bad data; latitude and longitude swapped (without ``repair``) or not valid in
            either order."""
        from . import build as tb
        half = track_checks.check_track_width(track_width)
        lat = np.asarray(lat, dtype=float)
        elev_none = elev is None and any(st["step"] == "flattened" for st in steps)
        elev = np.full(len(lat), np.nan) if elev is None else np.asarray(elev, dtype=float)
        cl, co, ce = columns
        x, y, (lat0, lon0), geo_findings, geo_steps, order = _projected_geodetic(
            lat, lon, start_finish, start_finish_given, origin, source, labels, (cl, co), repair,
            lat_lon_order)
        swapped, P, cells = order["order"] == "lon,lat", np.column_stack([x, y, elev]), cells or {}
        if swapped:
            cells = {"x": cells.get("y", {}), "y": cells.get("x", {}), "z": cells.get("z", {})}
        chk = track_checks.check_points(P, closed, source=source, repair=repair,
                                        max_grade=max_grade, z_missing_ok=True,
                                        elevation_checks=False, closed_abs_tol=1.0,
                                        labels=labels, cells=cells,
                                        columns=(cl, co, ce) if swapped else (co, cl, ce))
        P, closed = chk.points, chk.closed
        s_new, Pn, L, info = tb.process_points(
            P, closed, smoothing, z_smoothing, spacing=spacing, hampel=hampel,
            robust_iterations=robust_iterations)
        info.pop("sigma_of_raw_points", None)
        steps = [st for st in list(steps) + geo_steps + info.pop("steps", []) if not (
            st["step"] == "elevation_missing" and elev_none)] + (   # (ignored: not "missing")
            [_widths_set_step(track_width, [])] if half is not None else [])
        prov = dict(provenance or {})
        prov.update(projection=tb.projection_string(lat0, lon0), lat_lon_order=order,
                    processing=dict(smoothing_cutoff_m=smoothing, z_smoothing_cutoff_m=z_smoothing,
                                    spacing_m=spacing, hampel=list(hampel),
                                    robust_iterations=robust_iterations,
                                    **{k: v for k, v in info.items()
                                       if not isinstance(v, np.ndarray)}),
                    processing_steps=steps)
        if info.get("n_z_samples", 0) == 0:
            prov["assumptions"] = [_flat_assumption(f"{no_elevation}: the track is flat",
                                                    f"{elevation_hint} or a CSV track file "
                                                    "with a z column")]
        tr = cls(s_new, Pn, half, half, None, closed, name, prov)
        return _finish(tr, geo_findings + chk.findings, source, max_grade)

    @classmethod
    def from_zaggy_json(cls, path, name: str | None = None, closed: bool | None = None,
                        smoothing: float = 30.0, z_smoothing: float = 400.0,
                        spacing: float = 2.0, origin=None,
                        hampel=(250.0, 3.0, 8.0), robust_iterations: int = 5,
                        half_width: float | None = None, repair: bool = False,
                        max_grade: float = MAX_GRADE, track_width: float | None = None,
                        flat: bool = False, lat_lon_order: str = "auto") -> "Track":
        """Load a raw zaggyai/track_data JSON file (lat/lon in 1e-7 deg, elev in mm).

        Processing (same functions and defaults as the bundled Nordschleife, see
        ``data/tracks/README.md``; :meth:`from_geodetic`): azimuthal equidistant projection
        centred at ``origin`` (default: the file's start/finish) with pyproj; plan-view
        smoothing at cut-off ``smoothing`` [m]; elevations of 0 treated as missing,
        Hampel filter ``hampel = (half window [m], n_sigma, min threshold [m])``,
        robust (bisquare IRLS) smoothing at cut-off ``z_smoothing`` [m], gaps longer
        than 300 m filled linearly; resampling at uniform 3D arc length ``spacing``.
        Constant widths (the format has none), banking 0. The points are checked before
        (:func:`pyomo_lap.track.checks.check_points`, without the elevation-glitch checks,
        which the processing replaces) and the built track after
        (:func:`~pyomo_lap.track.checks.check_track`).

        Latitude and longitude are checked first (:func:`pyomo_lap.track.build.check_geodetic`):
        swapped columns (a latitude beyond 90 deg, every longitude a valid latitude) are
        refused with the hint, or read swapped with ``repair``; values valid in neither order
        are refused; when both orders are valid the file is read as named and the processing
        step ``lat_lon_order`` says so, with the length of the points both ways;
        ``lat_lon_order='lon,lat'`` reads the keys swapped (``'lat,lon'``: as named), the
        user's word: no ambiguity reported.

        Every step of the processing that changed the data (missing elevations, outliers
        dropped, gaps filled, elevations down-weighted, smoothing) is recorded in
        ``provenance['processing_steps']`` and every assumed value (widths, banking, a flat
        track when the file has no elevation) in ``provenance['assumptions']``
        (:mod:`pyomo_lap.track.report`).

        Parameters
        ----------
        path : str or Path
        name : str, optional (default: the file's ``name`` followed by the words of its
            ``short_name`` that do not repeat it, :func:`pyomo_lap.track.build.display_name`)
        closed : bool, optional (None: closed if first and last point coincide
            within 1 m or the gap is at most 2.5 x the median spacing)
        origin : (lat, lon) in degrees, optional
        half_width : float, optional
            Half-width each side [m]; or
        track_width : float, optional
            Total width [m], split evenly. Neither given: 4.0 m each side, an assumed value.
        repair : bool
            Repair the problems where a repair is well defined (reported).
        max_grade : float
            Steepest plausible grade of the result [-].
        flat : bool
            Ignore the file's elevations: a flat track (step ``flattened``, an assumed value).
        lat_lon_order : {'auto', 'lat,lon', 'lon,lat'}
            Which key holds the latitude (:func:`pyomo_lap.track.build.check_geodetic`).

        Raises
        ------
        ValueError
            Malformed file; ``half_width`` and ``track_width`` both given, or not a positive
            width in metres; a ``lat_lon_order`` not in
            :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS`; a start/finish (or ``origin``) that is no position on Earth (the
            message names it and its value; never pyproj's ``CRSError``).
        TrackDataError (a ValueError)
            Bad data (see :meth:`from_csv`); latitude and longitude swapped (without
            ``repair``) or not valid in either order.
        """
        from . import build as tb

        path = Path(path)
        if half_width is not None and track_width is not None:
            raise ValueError(f"half_width = {half_width!r} m and track_width = {track_width!r} m: "
                             "expected one of them (track_width = 2 x half_width)")
        if half_width is not None:
            track_width = 2.0 * track_checks.check_track_width(half_width, "half_width",
                                                               per_side=True)
        track_checks.check_track_width(track_width)
        d = tb.read_zaggy_json(path)
        return cls.from_geodetic(
            d["lat"], d["lon"], None if flat else d["elev"],
            name=name or tb.display_name(d["name"], d["short_name"]),
            closed=closed, start_finish=d["start_finish"],
            start_finish_given=d.get("start_finish_given"), origin=origin, smoothing=smoothing,
            z_smoothing=z_smoothing, spacing=spacing, hampel=hampel,
            robust_iterations=robust_iterations, track_width=track_width, repair=repair,
            max_grade=max_grade, source=f"track file {path}", lat_lon_order=lat_lon_order,
            provenance=dict(source_file=str(path.resolve()), sha256=tb.sha256_file(path)),
            steps=[_flattened_step(len(d["lat"]))] if flat else (),
            no_elevation=("flat=True: the file's elevations are ignored" if flat else
                          "the file has no elevation (every elev is 0, which means missing)"),
            elevation_hint="flat=False (no --flat)" if flat else "elevations in the file (elev in mm)")

    @classmethod
    def from_boundaries(cls, left, right, closed: bool | None = None, *,
                        smoothing: float | None = None, z_smoothing: float | None = 200.0,
                        spacing: float | None = None, name: str = "track",
                        provenance: dict | None = None, repair: bool = False,
                        max_grade: float = MAX_GRADE, source: str | None = None,
                        labels=(None, None), min_jacobian: float | None = 0.5) -> "Track":
        """A track from its left and right boundaries (in the direction of travel).

        The centreline is the set of midpoints between each point of one boundary and the
        nearest point of the other (both ways, ordered along the left boundary,
        :func:`pyomo_lap.track.build.centreline_from_boundaries`), smoothed into a regular
        reference line (``min_jacobian``); the half-widths are the distances from it to the
        two boundaries; the elevation is the mean of the
        two boundaries'. The boundaries are checked first
        (:func:`pyomo_lap.track.checks.check_points`: missing values, duplicates, spikes,
        closure), the midpoints then go through the checks and the smoothing of
        :meth:`from_points` (with their widths), and the built track through
        :func:`~pyomo_lap.track.checks.check_track`. The processing step
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
        from . import build as tb
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
        mid, wl, wr, side = tb.centreline_from_boundaries(L, R, closed)
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
            mid, wl, wr, side = tb.centreline_from_boundaries(L, R, closed)
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
                 flat: bool = False, lat_lon_order: str = "auto") -> "Track":
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

        Latitude and longitude are checked (:func:`pyomo_lap.track.build.check_geodetic`,
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
        from . import build as tb
        from .report import step
        path = Path(path)
        (left_c, right_c), how, files = _kml_boundaries(path, right)
        name = name or _SIDE_TOKEN.sub("", path.stem) or path.stem
        source = f"track file {path}"
        sides, geo = [], [[], []]
        for c, side in ((left_c, "left"), (right_c, "right")):
            lat, lon, _, f, st = tb.check_geodetic(
                c[:, 1], c[:, 0], source=f"{source}, {side} boundary", repair=repair,
                columns=("latitude", "longitude"), order=lat_lon_order)
            track_checks._warn(source, f)
            geo[0] += f
            geo[1] += st
            sides.append((lat, lon, np.full(len(c), np.nan) if flat else c[:, 2]))
        lat0, lon0 = float(sides[0][0][0]), float(sides[0][1][0])
        pts = []
        for lat, lon, alt in sides:
            x, y = tb.project_geodetic(lat, lon, lat0, lon0)
            pts.append(np.column_stack([x, y, alt]))
        prov = dict(source_file=str(path.resolve()), sha256=tb.sha256_file(path),
                    source_files=[str(Path(f).resolve()) for f in files],
                    projection=tb.projection_string(lat0, lon0),
                    lat_lon_order=tb.lat_lon_record(lat_lon_order, *geo),
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
                             repair: bool = False, max_grade: float = MAX_GRADE) -> "Track":
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
            :func:`~pyomo_lap.track.checks.check_track`).

        Raises
        ------
        FileNotFoundError, ValueError
            See :func:`~pyomo_lap.track.formats.read_fastest_lap_xml`; a bad ``track_width``;
            a boundary that lies on neither side consistently.
        TrackDataError (a ValueError)
            A bad track (too steep, crossing itself without a bridge).
        """
        from . import build as tb
        from .report import step
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


# ---------------------------------------------------------------------------
def _arc_length_samples(s, P, closed: bool) -> bool:
    """Whether points (n, 3) with an ``s`` column are samples at uniform arc length (a
    processed file: ``s`` uniformly spaced, the chords within 1 % of the spacing, the closing
    chord of a loop too: the constructor takes its period as the last ``s`` plus one spacing)."""
    ds = np.diff(s)
    chord = np.linalg.norm(np.diff(P, axis=0), axis=1)
    h = float(np.median(ds)) if len(ds) else 0.0
    closing = float(np.linalg.norm(P[0] - P[-1])) if closed else h
    return bool(h > 0 and np.all(np.abs(ds - h) <= 1e-6 * max(h, 1.0) + 1e-6)
                and np.all(np.abs(chord - ds) <= 0.01 * h) and abs(closing - h) <= 0.01 * h)


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
    from . import build as tb
    from .report import step
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


def _midpoints_provenance(provenance, L, R, mid, wl, wr) -> dict:
    """The provenance of :meth:`Track.from_boundaries` after the midpoints: the step
    ``centreline_from_boundaries`` and, when the boundaries have no elevation (``mid``'s z
    all NaN: set to 0 here), the assumed flat track."""
    from .report import assumption, step
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
    (:func:`pyomo_lap.track.build.distance_along_normal`). The steps say the
    cut-off used, why, and how far the widths moved."""
    from . import build as tb
    from .report import step
    Ld = tb._dense_boundary(np.asarray(left, float), closed, 0.5)[:, :2]   # as the midpoints'
    Rd = tb._dense_boundary(np.asarray(right, float), closed, 0.5)[:, :2]
    cut = smoothing
    for k in range(tries + 1):
        tr = build(cut)
        s = tr._s_samples
        tp = tr.evaluate(s)
        c, n = tp.position[:, :2] - tr.origin[:2], tp.rotation[:, :2, 1]
        wl = tb.distance_along_normal(c, n, Ld, closed)
        wr = tb.distance_along_normal(c, -n, Rd, closed)
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
    from .report import step
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


def _csv_widths(data: dict, prov: dict, half, track_width):
    """The half-widths of a CSV track: the file's, or ``half`` each side when ``track_width``
    is given (the step ``widths_set`` added to ``prov``)."""
    if half is None:
        return data.get("width_left"), data.get("width_right")
    had = [k for k in ("width_left", "width_right") if k in data]
    prov["processing_steps"] = list(prov.get("processing_steps", [])) + [
        _widths_set_step(track_width, had)]
    return half, half

def _flat_provenance(prov: dict, n: int, column: str, flat: bool = True) -> dict:
    """``prov`` with the step ``flattened`` and the assumed flat elevation (``flat``; else
    ``prov`` as it is)."""
    if not flat:
        return prov
    prov = dict(prov)
    prov["processing_steps"] = list(prov.get("processing_steps", [])) + [_flattened_step(n)]
    prov["assumptions"] = [a for a in prov.get("assumptions", []) if a.get("quantity") != "elevation"]
    prov["assumptions"].append(_flat_assumption(
        f"flat=True: the file's elevations ({column}) are ignored", "flat=False"))
    return prov


def _flattened_step(n: int) -> dict:
    """The record of elevations ignored (``flat=True``): z = 0, banking kept."""
    from .report import step
    return step("flattened", f"the file's elevations ignored (flat=True): z = 0 at all {n} "
                "points; banking as given", method="flat=True: z = 0, banking as given", count=n)


def _projected_geodetic(lat, lon, start_finish, start_finish_given, origin, source, labels,
                        columns, repair, lat_lon_order="auto"):
    """Latitudes and longitudes checked (:func:`pyomo_lap.track.build.check_geodetic`: in
    degrees, in the order decided (``lat_lon_order``); swapped columns refused, or read swapped
    with ``repair``; both orders valid or the order given: said in a processing step) and
    projected, centred at ``origin``, else ``start_finish``, else the first point. Returns
    x, y [m], the centre (lat0, lon0) [deg], the findings (repaired), the processing steps and
    the order used (:func:`pyomo_lap.track.build.lat_lon_record`)."""
    from . import build as tb
    lat, lon, start_finish, geo_findings, geo_steps = tb.check_geodetic(
        lat, np.asarray(lon, dtype=float), start_finish=start_finish, source=source,
        labels=labels, columns=columns, repair=repair, order=lat_lon_order)
    order = tb.lat_lon_record(lat_lon_order, geo_findings, geo_steps)
    track_checks._warn(source, geo_findings)
    if start_finish is None:
        ok = np.flatnonzero(np.isfinite(lat) & np.isfinite(lon))
        start_finish = (float(lat[ok[0]]), float(lon[ok[0]])) if len(ok) else (0.0, 0.0)
    lat0, lon0 = origin if origin is not None else start_finish
    try:
        x, y = tb.project_geodetic(lat, lon, lat0, lon0)
    except ValueError as exc:
        where = "origin" if origin is not None else (
            "start_finish" if start_finish_given else
            "the first point (no start_finish)") + " (the projection's centre)"
        raise ValueError(f"{source}: {where}: {exc}") from None
    return x, y, (lat0, lon0), geo_findings, geo_steps, order


def _refuse_lat_lon_order(order, what: str) -> None:
    """The option ``lat_lon_order`` checked (:func:`pyomo_lap.track.checks.check_lat_lon_order`)
    for a track that has no latitudes and longitudes (``what``: e.g. ``'track file X'``).

    Raises
    ------
    ValueError
        A value not in :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS`, or any but ``'auto'``:
        one line naming the option, its value and the track.
    """
    from .checks import check_lat_lon_order
    if check_lat_lon_order(order) != "auto":
        raise ValueError(f"lat_lon_order={order!r} applies to GPS files (lat/lon); {what} has "
                         "x/y coordinates: expected lat_lon_order='auto' (no --lat-lon-order)")


def _flat_assumption(reason: str, set_with: str) -> dict:
    """The assumed value of a track without elevations: 0 m, flat."""
    from .report import assumption
    return assumption("elevation", 0.0, "m", reason, set_with)


def _is_gps_table(table) -> bool:
    """Whether a CSV file is a GPS logger's trace: latitude and longitude columns, no x, y."""
    names = table.names
    return (formats.column_index(names, "lat") is not None
            and formats.column_index(names, "lon") is not None
            and formats.column_index(names, "x") is None
            and formats.column_index(names, "y") is None)


def _csv_provenance(provenance, path: Path, read: dict) -> dict:
    """The provenance of a centreline CSV file: the file, and, when it is not read as the plain
    ``x,y,z`` layout (another separator, a decimal comma, the header in a comment line, the
    tool's own export, units in the header), the processing step ``file_read`` saying how;
    a file without ``z`` (TUM layout) is flat, an assumed value."""
    prov = dict(provenance or {})
    prov.setdefault("source_file", str(path.resolve()))
    table = read.get("table")
    if table is None:
        return prov
    own = any(n in ("x_spine", "y_spine", "z_spine") for n in table.names)
    tum = table.comment_header or any(n.startswith("w_tr_") for n in table.names)
    if (table.delimiter != "," or table.decimal_comma or table.comment_header or own or tum
            or read.get("z_missing") or any(table.units)):
        from .report import step
        layout = ("the TUM racetrack database's layout (x_m, y_m, w_tr_right_m, w_tr_left_m)"
                  if tum else "a pyomo_lap trajectory.csv (x_spine, y_spine, z_spine, widths)"
                  if own else "a centreline (x, y, z)")
        used = {a for k in _COLUMN_ALIASES for a in _COLUMN_ALIASES[k]}
        units = [h.strip() for h, u, n in zip(table.header, table.units, table.names)
                 if u and n in used]
        detail = (f"read as {layout}; {table.how}"
                  + (f"; units from the header: {', '.join(units[:6])}"
                     + (" ..." if len(units) > 6 else "") if units else "")
                  + ("; no z column: the track is flat (z = 0)" if read.get("z_missing") else ""))
        prov["processing_steps"] = list(prov.get("processing_steps", [])) + [
            step("file_read", detail, method=f"{layout.split(' (')[0]}; {table.how}",
                 count=len(table.rows))]
    if read.get("z_missing"):
        from .report import assumption
        prov["assumptions"] = list(prov.get("assumptions", [])) + [assumption(
            "elevation", 0.0, "m", "the file has no z column: the track is flat",
            "a z_m column (elevation in metres)")]
    return prov


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
    from .report import step
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
    from .report import assumption
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


def _widths_set_step(track_width: float, replaced: list) -> dict:
    """The record of widths set by ``track_width`` (replacing the file's, if it has some)."""
    from .report import step
    what = (f"replacing the file's {' and '.join(replaced)}" if replaced else
            "the data have none")
    return step("widths_set", f"widths set by track_width = {track_width:g} m: "
                f"{track_width / 2:g} m each side of the centreline ({what})",
                method=f"track_width = {track_width:g} m", size=track_width / 2,
                unit="m each side")


def _detect_closed(P: np.ndarray, abs_tol: float | None = None) -> bool:
    return track_checks.detect_closed(P, abs_tol)


def _finish(track: "Track", findings: list, source: str, max_grade: float) -> "Track":
    """Check the built track and record the repairs made to its points."""
    track_checks.check_track(track, source=source, max_grade=max_grade)
    track.findings = list(findings)
    if findings:
        track.provenance["repairs"] = [str(f) for f in findings]
    return track


def _read_csv_columns(path: Path, origin: dict | None = None, table=None,
                      info: dict | None = None):
    """Read a track CSV into float arrays keyed by canonical column names.

    The file is read by :func:`pyomo_lap.track.formats.read_table`: separator ``,``, ``;`` or
    tab (a ``;`` file may use a decimal comma), a header in a comment line (``# x_m,y_m,
    w_tr_right_m,w_tr_left_m``, the TUM racetrack database), column names with a unit in
    brackets (``x_spine [m]``, the tool's own ``trajectory.csv``); the accepted names are
    :data:`pyomo_lap.track.formats.COLUMNS`. ``z`` may be missing in the TUM layout (a header
    in a comment line, or ``w_tr_*`` columns): it is then 0 (``info['z_missing']``).

    Parameters
    ----------
    path : Path
    origin : dict, optional
        If given, the ``x`` and ``y`` columns are re-centred on their first value in whole
        metres (when it is not 0), taken off each cell *in decimal arithmetic on the cell's
        text* before the conversion to float: a track 1e12 m from the origin keeps every
        digit of the file, and the same track anywhere gives the same numbers. The offsets
        [m] are stored in ``origin`` (``{'x': ..., 'y': ...}``, the columns re-centred).
    table : pyomo_lap.track.formats.Table, optional
        The file already read.
    info : dict, optional
        Gets ``table`` (how the file was read) and ``z_missing``.

    Returns
    -------
    header : list of str
    data : dict of (n,) float arrays, NaN where a cell is empty or not a number
    cells : dict ``{column: {row index: cell text}}`` of those cells
    labels : list of str, ``'row k (line l)'`` for each data row

    Raises
    ------
    FileNotFoundError, ValueError
        No file; not a text file; empty; a required column missing (accepted names listed,
        and how the file was read); a column in another unit than expected.
    """
    from . import formats
    table = table if table is not None else formats.read_table(path)
    names = table.names
    idx = {}
    for key in _COLUMN_ALIASES:
        j = formats.column_index(names, key)
        if j is not None:
            idx[key] = j
    for key, j in idx.items():
        unit = table.units[j]
        if unit and unit.lower() not in formats.UNITS[key]:
            raise ValueError(f"track file {path}: column {table.header[j].strip()!r} is in "
                             f"{unit!r}; expected {' or '.join(formats.UNITS[key])} (the "
                             f"{key} column, SI units)")
    tum = table.comment_header or any(n.startswith("w_tr_") for n in names)
    z_missing = "z" not in idx and tum and "x" in idx and "y" in idx
    for req in ("x", "y", "z"):
        if req not in idx and not (req == "z" and z_missing):
            raise ValueError(f"track file {path}: missing required column {req!r} "
                             f"(accepted names: {', '.join(_COLUMN_ALIASES[req])}); "
                             f"header is {table.header}{_header_hint(table)}")
    out, cells = {}, {}
    texts = {}
    for k, j in idx.items():
        out[k], bad, texts[k] = formats.column_values(table, j)
        if bad:
            cells[k] = bad
    if z_missing:
        out["z"] = np.zeros(len(table.rows))
    if origin is not None and len(table.rows):
        ok = np.isfinite(out["x"]) & np.isfinite(out["y"])
        if ok.any():
            first = int(np.argmax(ok))
            for k in ("x", "y"):
                if abs(out[k][first]) >= 0.5:
                    out[k], origin[k] = _recentred_column(out[k], texts[k], first)
    if info is not None:
        info.update(table=table, z_missing=bool(z_missing))
    header = [h.strip().lower() for h in table.header]
    return header, out, cells, table.labels()


def _header_hint(table) -> str:
    """Why a header may not have been understood: how the file was read, one column only
    (another separator?), latitude without longitude or the reverse."""
    from . import formats
    hint = f" (read with {table.how}"
    if len(table.header) == 1:
        hint += "; the header is one column: separate the columns with ',', ';' or a tab"
    has = {q for q in ("lat", "lon") if formats.column_index(table.names, q) is not None}
    if len(has) == 1:
        hint += (f"; a GPS file needs both a latitude and a longitude column (accepted names: "
                 f"{', '.join(formats.COLUMNS['lat'])}; {', '.join(formats.COLUMNS['lon'])})")
    return hint + "; the formats: docs/tracks.md)"


def _recentred_column(values: np.ndarray, texts: list, first: int):
    """``values`` minus the value of row ``first`` in whole metres, computed exactly from the
    cells' text (:class:`decimal.Decimal`); NaN cells stay NaN. Returns (values, offset [m])."""
    import decimal
    ctx = decimal.Context(prec=80)
    try:
        offset = ctx.to_integral_value(decimal.Decimal(texts[first]))
    except (decimal.InvalidOperation, ValueError):
        offset = decimal.Decimal(round(float(values[first])))
    out = values.copy()
    for i, t in enumerate(texts):
        if not math.isfinite(values[i]):
            continue
        try:
            out[i] = float(ctx.subtract(decimal.Decimal(t), offset))
        except (decimal.InvalidOperation, ValueError):   # a form float() reads but Decimal not
            out[i] = values[i] - float(offset)
    return out, float(offset)


def _write_track_csv(path, s, P, wl, wr, nu) -> None:
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write("s_m,x_m,y_m,z_m,width_left_m,width_right_m,banking_rad\n")
        for k in range(len(s)):
            fh.write(f"{s[k]:.6f},{P[k, 0]:.6f},{P[k, 1]:.6f},{P[k, 2]:.6f},"
                     f"{wl[k]:.4f},{wr[k]:.4f},{nu[k]:.6f}\n")


# ---------------------------------------------------------------------------
def data_dir() -> Path:
    """Data directory (holds ``tracks/``): ``$PYOMO_LAP_DATA``, the checkout's ``data/`` or,
    after ``pip install .``, its installed copy (:func:`pyomo_lap.util.paths.data_dir`)."""
    from ..util.paths import data_dir as _data_dir
    return _data_dir()


def available_tracks() -> list[str]:
    """Names of the bundled tracks (``<data>/tracks/<name>.csv``), sorted."""
    d = data_dir() / "tracks"
    return sorted(p.stem for p in d.glob("*.csv")) if d.is_dir() else []


def bundled_tracks() -> list[dict]:
    """Every bundled track: those of :func:`available_tracks` (a centreline ``<name>.csv``,
    from its metadata, the ``.json`` next to it; without one, the CSV's ``s_m`` and ``z_m``
    columns) and the arc tracks (``<name>.toml``: straights and arcs,
    :mod:`pyomo_lap.track.arcs`), one dict per track.

    Returns
    -------
    list of dict
        Sorted by name; keys ``name``, ``kind`` (``'centreline'`` or ``'straights and
        arcs'``), ``display_name``, ``country``, ``length_m`` [m], ``elevation_min_m``,
        ``elevation_max_m`` [m], ``closed`` (bool or None: not said), ``repository``,
        ``commit`` (the source's, '' if unknown), ``licence``.

    Raises
    ------
    ValueError
        A metadata file that is not valid JSON, a CSV without ``s_m`` and ``z_m`` columns,
        a bad arc-track file (the message names the file).
    """
    out = [_bundled_csv_row(name) for name in available_tracks()]
    d = data_dir() / "tracks"
    for f in (sorted(d.glob("*.toml")) if d.is_dir() else []):
        from . import arcs
        tr = arcs.load_arc_track(f)
        src = tr.provenance.get("source") or {}
        out.append(dict(name=f.stem, kind="straights and arcs",
                        display_name=(str(tr.provenance.get("description") or f.stem)
                                      .split(":")[0] + f", curvature {tr.provenance['curvature']}"),
                        country="", length_m=float(tr.length), elevation_min_m=0.0,
                        elevation_max_m=0.0, closed=bool(tr.closed),
                        repository=src.get("repository", ""), commit=src.get("commit", ""),
                        licence=src.get("licence", "")))
    return sorted(out, key=lambda r: r["name"])


def _bundled_csv_row(name: str) -> dict:
    """The row of :func:`bundled_tracks` of the bundled centreline ``<name>.csv``."""
    csv_path = data_dir() / "tracks" / f"{name}.csv"
    meta_path = csv_path.with_suffix(".json")
    meta = {}
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"track metadata {meta_path}: not valid JSON ({exc})") from None
    if "length_m" in meta and "elevation_min_m" in meta and "elevation_max_m" in meta:
        length, zmin, zmax = meta["length_m"], meta["elevation_min_m"], meta["elevation_max_m"]
    else:
        _, data, _, _ = _read_csv_columns(csv_path)
        if "s" not in data:
            raise ValueError(f"track file {csv_path}: no 's_m' column and no metadata "
                             f"({meta_path.name}) giving length_m; expected one of them")
        s, z = data["s"], data["z"]
        length = float(np.nanmax(s))
        zmin, zmax = float(np.nanmin(z)), float(np.nanmax(z))
    src = meta.get("source") or {}
    return dict(name=name, kind="centreline", display_name=meta.get("display_name", name),
                country=meta.get("country", ""), length_m=float(length),
                elevation_min_m=float(zmin), elevation_max_m=float(zmax),
                closed=meta.get("closed"), repository=src.get("repository", ""),
                commit=src.get("commit", ""), licence=src.get("licence", ""))


TRACK_FORMATS = (
    ("bundled name", "a track shipped with the package (pyomo-lap tracks lists them)"),
    (".csv", "a centreline x, y, z [m] (optional width_left, width_right [m], banking [rad], "
             "s [m]; separators , ; or tab)"),
    (".csv", "the TUM racetrack database's layout (# x_m,y_m,w_tr_right_m,w_tr_left_m, "
             "optional z_m)"),
    (".csv", "a GPS logger's trace (lat, lon, optional altitude)"),
    (".json", "a raw zaggyai/track_data file (latitude, longitude, elevation)"),
    (".kml", "left and right boundaries (one file with two LineStrings, or NAME_left.kml + "
             "NAME_right.kml; fastest-lap's database)"),
    (".xml", "a fastest-lap track file (<circuit format=\"discrete\">, 2D or 3D)"),
    (".toml", "straights and arcs (like the bundled dymos_oval)"),
)
"""What ``--track`` / :func:`load_track` accept: (suffix, what) (``docs/tracks.md``)."""


def track_formats_text() -> str:
    """:data:`TRACK_FORMATS` in one line (the ``--track`` help and messages)."""
    return "; ".join(f"{k}: {v}" for k, v in TRACK_FORMATS)


def load_track(name_or_path, repair: bool = False, max_grade: float = MAX_GRADE,
               track_width: float | None = None, flat: bool = False,
               lat_lon_order: str = "auto"):
    """Load a bundled track by name or a track file by path, checked (see
    :mod:`pyomo_lap.track.checks`).

    Parameters
    ----------
    name_or_path : str or Path
        A bundled name (:func:`available_tracks`, e.g. ``'nordschleife'``, or an arc track
        such as ``'dymos_oval'``: :func:`bundled_tracks` lists both) or a file
        (:data:`TRACK_FORMATS`):

        * ``.csv``: a centreline ``x, y, z`` [m] with optional widths, banking and ``s``; the
          TUM racetrack database's layout (``# x_m,y_m,w_tr_right_m,w_tr_left_m``); a
          pyomo_lap ``trajectory.csv``; a GPS logger's trace (``lat, lon[, alt]``)
          (:meth:`Track.from_csv`);
        * ``.json``: a raw zaggyai/track_data file (:meth:`Track.from_zaggy_json`);
        * ``.kml``: left and right boundaries (:meth:`Track.from_kml`; no ``track_width``);
        * ``.xml``: a fastest-lap track file (:meth:`Track.from_fastest_lap_xml`);
        * ``.toml``: straights and arcs (:func:`pyomo_lap.track.arcs.load_arc_track`).
    repair : bool
        Repair the problems of the data where a repair is well defined; the repairs are
        reported (a :class:`~pyomo_lap.track.checks.TrackRepairWarning` each, and
        ``track.findings``, ``track.provenance['repairs']``).
    max_grade : float
        Steepest plausible grade [-].
    track_width : float, optional
        Total width of the track [m], half each side of the centreline, replacing the
        widths of the data (see :meth:`Track.from_csv`). Without it, data without widths get
        4.0 m each side, recorded in ``track.assumptions``.
    flat : bool
        Ignore the data's elevations (noisy ones): z = 0, banking as given; recorded as the
        processing step ``flattened`` and an assumed value. Arc tracks are flat already.
    lat_lon_order : {'auto', 'lat,lon', 'lon,lat'}
        GPS files (a ``lat, lon`` CSV file, ``.json``, ``.kml``): which column (key) holds the
        latitude (:func:`pyomo_lap.track.build.check_geodetic`): ``'auto'`` as named (read
        swapped only when latitudes beyond 90 deg force it, with ``repair``; both orders valid
        coordinates: said in the processing step ``lat_lon_order``), ``'lat,lon'`` as named,
        ``'lon,lat'`` swapped; the order used: ``track.provenance['lat_lon_order']``.

    Returns
    -------
    Track (or :class:`~pyomo_lap.track.arcs.ArcTrack` for a ``.toml`` arc track)
        ``track.processing_steps`` and ``track.assumptions`` say what the loader did to the
        data and which values it assumed (:mod:`pyomo_lap.track.report`); for a bundled
        track also what was assumed when it was built (its ``.json``: ``width_note``,
        ``banking_note``) and, in ``track.build_repairs``, what was repaired then (its
        ``repairs``); ``track.repairs`` lists those and the loader's repairs.

    Raises
    ------
    ValueError
        Unknown name (the message lists the known names), a file of another type (the
        message lists the accepted ones), a ``track_width`` that is not a positive width in
        metres, a ``lat_lon_order`` not in :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS` or
        other than ``'auto'`` for a track without latitudes and longitudes.
    FileNotFoundError
        A path that does not exist.
    TrackDataError (a ValueError)
        Bad data; every problem is listed.
    """
    from . import arcs  # straights and arcs: a .toml file or a bundled <name>.toml (pyomo_lap/track/arcs.py)
    from .checks import check_lat_lon_order
    check_lat_lon_order(lat_lon_order)
    p = Path(name_or_path)
    if arcs.is_arc_track(name_or_path):
        _refuse_lat_lon_order(lat_lon_order, f"track {str(name_or_path)!r} (straights and arcs)")
        return arcs.load_arc_track(name_or_path, track_width=track_width)
    if p.suffix.lower() in (".csv", ".json", ".kml", ".xml") or p.exists():
        return _load_track_file(p, dict(repair=repair, max_grade=max_grade, flat=flat),
                                track_width, lat_lon_order)
    key = str(name_or_path).strip().lower()
    known = available_tracks()
    if key not in known:
        arcs_dir = data_dir() / "tracks"
        known = sorted(known + [f.stem for f in arcs_dir.glob("*.toml")]) if arcs_dir.is_dir() else known
        raise ValueError(f"unknown track {name_or_path!r}; known tracks: {', '.join(known) or '(none)'}"
                         f" (or pass a file: {', '.join(dict.fromkeys(k for k, _ in TRACK_FORMATS[1:]))})")
    _refuse_lat_lon_order(lat_lon_order, f"the bundled track {key!r}")
    csv_path = data_dir() / "tracks" / f"{key}.csv"
    meta_path = csv_path.with_suffix(".json")
    meta = {}
    closed = None
    if meta_path.is_file():
        with open(meta_path, encoding="utf-8") as fh:
            meta = json.load(fh)
        closed = meta.get("closed")
    tr = Track.from_csv(csv_path, name=meta.get("name", key), closed=closed, provenance=meta,
                        repair=repair, max_grade=max_grade, track_width=track_width, flat=flat)
    return _with_build_notes(tr, meta, track_width, flat)


def _load_track_file(p: Path, kw: dict, track_width, lat_lon_order: str):
    """:func:`load_track` of a file (``kw``: ``repair``, ``max_grade``, ``flat``), by its
    suffix."""
    suffix = p.suffix.lower()
    if not p.exists():
        raise FileNotFoundError(f"track file not found: {p}")
    if p.is_dir():
        raise ValueError(f"track {str(p)!r} is a folder; expected a file: {track_formats_text()}")
    if suffix == ".json":
        return Track.from_zaggy_json(p, track_width=track_width, lat_lon_order=lat_lon_order, **kw)
    if suffix == ".xml":
        _refuse_lat_lon_order(lat_lon_order, f"track file {p} (fastest-lap XML)")
        return Track.from_fastest_lap_xml(p, track_width=track_width, **kw)
    if suffix == ".kml":
        if track_width is not None:
            raise ValueError(f"track file {p}: the widths of a KML track come from its "
                             f"boundaries; track_width = {track_width!r} cannot replace them")
        return Track.from_kml(p, lat_lon_order=lat_lon_order, **kw)
    if suffix != ".csv":
        raise ValueError(f"track file {p}: unknown type {suffix or '(no suffix)'!r}; "
                         f"expected {track_formats_text()}")
    return Track.from_csv(p, track_width=track_width, lat_lon_order=lat_lon_order, **kw)


def _with_build_notes(tr: Track, meta: dict, track_width, flat: bool) -> Track:
    """A bundled track with what was assumed (``width_note``, ``elevation_note``,
    ``banking_note`` of its ``.json``) and repaired (``repairs``) when its file was built."""
    # the values assumed when the bundled file was built (its widths and banking are columns)
    from .report import assumption
    notes = []
    if track_width is None and meta.get("width_note"):
        w = tr.evaluate(0.0)
        notes.append(assumption("width", float(w.width_left[0]), "m each side",
                                f"when the bundled file was built: {meta['width_note']}", SET_WIDTH))
    if meta.get("elevation_note") and not flat:
        notes.append(_flat_assumption(f"when the bundled file was built: {meta['elevation_note']}",
                                      "a 3D source file"))
    if meta.get("banking_note"):
        notes.append(assumption("banking", DEFAULT_BANKING, "rad",
                                f"when the bundled file was built: {meta['banking_note']}",
                                SET_BANKING))
    if notes:
        tr.provenance["assumptions"] = tr.assumptions + notes
    # the repairs made when the bundled file was built (its .json), then the loader's
    tr.build_repairs = [str(r) for r in meta.get("repairs", [])]
    if tr.build_repairs:
        tr.provenance["repairs"] = tr.repairs
    return tr
