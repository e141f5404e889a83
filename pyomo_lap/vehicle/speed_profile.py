"""Quasi-steady speed profile of a point mass with the car's grip, aero and power.

Used for the initial guess of the OCP and for the entry speed of an open sector. It is an
estimate, not the model: a point mass on the centreline whose grip is ``mu`` times the normal
load (gravity along the road normal, normal-curvature effect, downforce), whose lateral
demand is ``v^2 Omega_z`` (the lateral component of gravity on banked roads is neglected:
an estimate on the safe side for well-banked curves), and whose longitudinal
acceleration is limited by power, drag, grade and the friction ellipse. Forward and backward
passes as in the classic "GGV" lap simulators.
"""
from __future__ import annotations

import math

import numpy as np

from .car import VehicleParameters

__all__ = ["quasi_steady_speed"]


def quasi_steady_speed(p: VehicleParameters, s: np.ndarray, omega: np.ndarray,
                       rotation: np.ndarray, closed: bool, v_start: float | None = None,
                       grip_factor: float = 0.85, v_min: float = 5.0) -> np.ndarray:
    """Speed along the centreline [m/s].

    Parameters
    ----------
    p : VehicleParameters
    s : (n,) ndarray
        Increasing arc lengths [m].
    omega : (n, 3) ndarray
        Track Omega [1/m] at ``s``.
    rotation : (n, 3, 3) ndarray
        R_{G,S} at ``s``.
    closed : bool
        True: the profile is periodic (s covers a whole lap, last point = first point).
    v_start : float, optional
        Speed at s[0] [m/s] (open profiles), e.g. the fixed entry speed of a sector; the
        rest of the profile follows from it. None: the grip limit there.
    grip_factor : float
        Fraction of the tyres' peak friction used (margin for load transfer) [-].
    v_min : float
        Lower clip [m/s].

    Returns
    -------
    (n,) ndarray
    """
    g = p.gravity
    m = p.m
    mu = grip_factor * min(p.mu_x0, p.mu_y0)
    kd = 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2)   # downforce / v^2
    kx = 0.5 * p.rho * p.S * p.Cx              # drag / v^2
    g_loc = g * rotation[:, 2, :]               # gravity components along t, n, m (R^T k)
    g_n = g_loc[:, 2]
    kappa_n = -omega[:, 1]
    kappa = omega[:, 2]
    v_top = (p.P_max / kx) ** (1 / 3)
    # cornering limit: m (v^2 |kappa| ) <= mu (m g_n + m v^2 kappa_n + kd v^2)
    den = m * np.abs(kappa) - mu * (m * kappa_n + kd)
    with np.errstate(divide="ignore", invalid="ignore"):
        v_lat = np.where(den > 1e-9, np.sqrt(np.maximum(mu * m * g_n, 0) / den), v_top)
    v_lat = np.clip(v_lat, v_min, v_top)

    # the passes are a scalar recurrence: Python floats and lists (numpy scalars cost ~10x)
    gn, kn, ka, gt = g_n.tolist(), kappa_n.tolist(), np.abs(kappa).tolist(), g_loc[:, 0].tolist()
    P_max, sqrt = float(p.P_max), math.sqrt

    def ax_limit(v, i, sign):
        v2 = v * v
        normal = m * (gn[i] + v2 * kn[i]) + kd * v2
        lat = m * v2 * ka[i]
        grip = mu * max(normal, 0.0)
        rem = grip * sqrt(max(0.0, 1 - min(1.0, (lat / grip) ** 2))) if grip > 0 else 0.0
        if sign > 0:   # accelerating: power and rear-axle grip (about half the load)
            fx = min(P_max / max(v, 1.0), 0.6 * rem)
            return (fx - kx * v2) / m - gt[i]
        return (rem + kx * v2) / m + gt[i]   # braking (positive deceleration)

    n = len(s)
    ds = np.diff(s).tolist()
    v = v_lat.tolist()
    vmin2 = v_min ** 2
    passes = 2 if closed else 1
    for _ in range(passes):
        if v_start is not None and not closed:
            v[0] = float(v_start)
        for i in range(n - 1):   # forward
            a = ax_limit(v[i], i, +1)
            v[i + 1] = min(v[i + 1], sqrt(max(v[i] ** 2 + 2 * a * ds[i], vmin2)))
        if closed:
            v[0] = min(v[0], v[-1])
    for _ in range(passes):
        for i in range(n - 1, 0, -1):   # backward
            a = ax_limit(v[i], i, -1)
            v[i - 1] = min(v[i - 1], sqrt(max(v[i] ** 2 + 2 * a * ds[i - 1], vmin2)))
        if closed:
            v[-1] = min(v[-1], v[0])
    v = np.asarray(v, dtype=float)
    return np.maximum(v, v_min)
