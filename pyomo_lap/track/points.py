"""The track evaluated at points: :class:`TrackPoints`, what every track kind's ``evaluate``
returns (:class:`pyomo_lap.track.geometry.Track`, :class:`pyomo_lap.track.arcs.ArcTrack`), and
:class:`TrackBase`, what those kinds share.

Layer: track (imports numpy only)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["TrackPoints", "TrackBase"]


@dataclasses.dataclass(frozen=True)
class TrackPoints:
    """The track evaluated at ``n`` values of the arc length ``s``.

    Attributes
    ----------
    s : ndarray (n,)
        Arc length along the spine [m] (wrapped to [0, length) on closed tracks).
    position : ndarray (n, 3)
        Spine point ``C(s)`` in {G} [m].
    rotation : ndarray (n, 3, 3)
        ``R_{G,S} = [t n m]`` (columns t, n, m in {G}), eq. (9).
    omega : ndarray (n, 3)
        ``Omega^S = [Omega_x, Omega_y, Omega_z]`` [1/m], ``hat(Omega) = R^T dR/ds``, eq. (11).
    domega_ds : ndarray (n, 3)
        ``dOmega/ds`` [1/m^2].
    width_left, width_right : ndarray (n,)
        Distance from the spine to the left / right edge along ``n`` [m].
    banking : ndarray (n,)
        Banking angle ``nu`` [rad] (positive: rotation about ``t``, left edge up).
    heading : ndarray (n,)
        ``psi``, angle of the horizontal tangent from east, counter-clockwise [rad].
    slope : ndarray (n,)
        ``theta = asin(t_z)`` [rad] (positive uphill).
    speed : ndarray (n,)
        ``|dp/ds|`` (1 up to the arc-length parametrisation error) [-].
    """

    s: np.ndarray
    position: np.ndarray
    rotation: np.ndarray
    omega: np.ndarray
    domega_ds: np.ndarray
    width_left: np.ndarray
    width_right: np.ndarray
    banking: np.ndarray
    heading: np.ndarray
    slope: np.ndarray
    speed: np.ndarray

    @property
    def tangent(self) -> np.ndarray:
        """(n,3) unit tangent t in {G}."""
        return self.rotation[:, :, 0]

    @property
    def normal(self) -> np.ndarray:
        """(n,3) lateral unit vector n in {G} (points left)."""
        return self.rotation[:, :, 1]

    @property
    def binormal(self) -> np.ndarray:
        """(n,3) unit vector m = t x n in {G} (points 'up' out of the road surface)."""
        return self.rotation[:, :, 2]

    @property
    def grade(self) -> np.ndarray:
        """(n,) road grade dz/d(horizontal distance) = tan(theta) [-]."""
        return np.tan(self.slope)

    @property
    def J1(self) -> np.ndarray:
        """(n,6) track-joint Jacobian ``J_1^1 = [1, 0, 0, Omega_x, Omega_y, Omega_z]`` (eq. 12b, |p'| = 1)."""
        n = len(self.s)
        out = np.zeros((n, 6))
        out[:, 0] = 1.0
        out[:, 3:] = self.omega
        return out

    @property
    def dJ1_ds(self) -> np.ndarray:
        """(n,6) ``dJ_1^1/ds = [0, 0, 0, dOmega/ds]`` [1/m^2]."""
        out = np.zeros((len(self.s), 6))
        out[:, 3:] = self.domega_ds
        return out

    @property
    def curvature_radius(self) -> np.ndarray:
        """(n,) horizontal-plane-free radius ``1/|Omega_z|`` of geodesic curvature [m] (inf if straight)."""
        with np.errstate(divide="ignore"):
            return 1.0 / np.abs(self.omega[:, 2])


class TrackBase:
    """What every kind of track shares (:class:`pyomo_lap.track.geometry.Track`,
    :class:`pyomo_lap.track.arcs.ArcTrack`): the records of what was done to the data, the
    arc length wrapped (closed) or checked (open), points offset from the spine and uniform
    grids of ``s``. A subclass has ``length`` [m], ``closed``, ``name``, ``provenance``,
    ``findings``, ``build_repairs`` and ``evaluate(s) -> TrackPoints``."""

    @property
    def processing_steps(self) -> list:
        """What the loader did to the data: records of
        :func:`pyomo_lap.track.report.step` (``provenance['processing_steps']``)."""
        return list(self.provenance.get("processing_steps", []))

    @property
    def repairs(self) -> list:
        """Every repair made to the data, one sentence each: those made when a bundled file
        was built (:attr:`build_repairs`, from its ``.json``) and those made by the loader
        (``repair=True``: :attr:`findings`)."""
        return list(self.build_repairs) + [str(f) for f in self.findings]

    @property
    def assumptions(self) -> list:
        """Values the data do not give and a default replaced: records of
        :func:`pyomo_lap.track.report.assumption` (``provenance['assumptions']``)."""
        return list(self.provenance.get("assumptions", []))

    # ------------------------------------------------------------------ evaluation
    def _wrap(self, s) -> np.ndarray:
        s = np.atleast_1d(np.asarray(s, dtype=float)).reshape(-1)
        if not np.all(np.isfinite(s)):
            raise ValueError("s must be finite")
        if self.closed:
            return np.mod(s, self.length)
        tol = 1e-9 * max(1.0, self.length)
        bad = (s < -tol) | (s > self.length + tol)
        if np.any(bad):
            v = s[bad][0]
            raise ValueError(f"s = {float(v):.9g} m is outside [0, {self.length:.6f}] m of open "
                             f"track {self.name!r}")
        return np.clip(s, 0.0, self.length)

    def global_position(self, s, lateral_offset, vertical_offset=0.0) -> np.ndarray:
        """Point ``C(s) + q2 n(s) + h m(s)`` in {G}.

        Parameters
        ----------
        s : array_like (n,) [m]
        lateral_offset : array_like (n,) or scalar
            ``q2``, offset along n (positive left) [m].
        vertical_offset : array_like (n,) or scalar
            ``h``, offset along m [m].

        Returns
        -------
        ndarray (n, 3) [m]

        Raises
        ------
        ValueError
            As :meth:`evaluate`.
        """
        tp = self.evaluate(s)
        q2 = np.broadcast_to(np.asarray(lateral_offset, float), tp.s.shape)
        h = np.broadcast_to(np.asarray(vertical_offset, float), tp.s.shape)
        return tp.position + q2[:, None] * tp.normal + h[:, None] * tp.binormal

    def sample_s(self, spacing: float) -> np.ndarray:
        """Uniform grid of s with about ``spacing`` [m]: [0, L) closed, [0, L] open."""
        if self.closed:
            M = max(int(round(self.length / spacing)), 1)
            return np.arange(M) * (self.length / M)
        M = max(int(math.ceil(self.length / spacing)), 1)
        return np.linspace(0.0, self.length, M + 1)
