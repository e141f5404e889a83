"""The track evaluated at points: :class:`TrackPoints`, what every track kind's ``evaluate``
returns (:class:`pyomo_lap.track.geometry.Track`, :class:`pyomo_lap.track.arcs.ArcTrack`).

Layer: track (imports numpy only)."""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["TrackPoints"]


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
