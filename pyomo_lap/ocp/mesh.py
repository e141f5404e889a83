r"""The finite-element mesh of a sector, placed before the solve from the track and the car.

A minimum-time trajectory has short transients that a uniform 10 m mesh does not resolve:
the flick through an S-bend (the lateral acceleration of an FSAE car goes from -11 to
+12 m/s^2 within about 17 m on the Nordschleife at s = 1333-1350 m, a length that does not
shrink when the mesh is refined: it is the car's yaw response), the brake application at
the end of a straight, the corner exit. With 10 m elements (collocation points 3.3 m and
6.7 m apart) such a transient falls on three points and the channels read between them zig-zag
(docs/formulation.md); on long straights and constant-radius corners the same elements are
finer than needed.

:func:`adaptive_boundaries` places the elements by an indicator computed from the quasi-steady
speed profile of the car on the centreline, :math:`v(s)`
(:func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`, the initial guess's):

.. math::
    g(s) = \max\Big(\frac{h_0 |d(v^2\kappa)/ds|}{c_y a_{ref}},\
    \frac{h_0 |d(v\,dv/ds)/ds|}{c_x a_{ref}},\ \frac{h_0^2 |d\kappa/ds|}{c_\kappa}\Big),

the changes of the quasi-steady lateral (:math:`v^2\kappa`, :math:`\kappa = \Omega_z`) and
longitudinal accelerations over an element of length :math:`h_0` (``element_length``),
relative to the car's acceleration scale :math:`a_{ref} = F/m`
(:func:`pyomo_lap.ocp.common.force_scale`: the largest tyre force, downforce at top speed
included, over the mass) and to the dimensionless OCP options ``mesh_lateral_change``
:math:`c_y` and ``mesh_longitudinal_change`` :math:`c_x`, and the change of the track's
curvature over an element times :math:`h_0` relative to ``mesh_curvature_change``
:math:`c_\kappa`; taken as the largest value within one element length (the optimal path
moves a transient by about that much). No constant of one car: an F1 car, whose accelerations
are three times an FSAE car's, is split where its own accelerations change fast. Where :math:`g > 1` the element is :math:`h / k` long with
:math:`k = \lceil\sqrt{g}\,\rceil \le` ``mesh_max_split`` (the residual of a channel between
collocation points falls as :math:`h^2`); where :math:`g < 1/2` everywhere within 30 m
and the track is straight (curvature below :data:`STRAIGHT_CURVATURE`) within 30 m ("calm":
straights; never a corner, where the optimal car brakes, turns in and accelerates out tens of
metres away from where the quasi-steady profile does) it is :math:`h \cdot` ``mesh_coarsen``; elsewhere
:math:`h` (``element_length``). On the default job this gives 198 elements where the
uniform mesh has 200; the zig-zag count of every checked channel falls to zero
(docs/formulation.md).

The mesh depends on the car through :math:`v(s)`. A sweep solves all its cases on the mesh of
its first case (:mod:`pyomo_lap.sweeps`), so that lap-time differences are not mesh
differences; a script comparing cars can do the same by passing one run's
``element_boundaries`` (``summary.json``) to the others.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.ndimage import maximum_filter1d

from ..vehicle.car import force_scale
from ..vehicle.speed_profile import quasi_steady_speed

__all__ = ["adaptive_boundaries", "mesh_indicator", "CALM_WINDOW", "SPREAD",
           "STRAIGHT_CURVATURE"]

SPREAD = 1.0
"""Half-width of the window over which the indicator takes its largest value, in element
lengths [-] (10 m with the default element_length)."""

CALM_WINDOW = 3.0
"""Half-width of the window that must be calm (indicator below 1/2, track straight) for a
coarse element, in element lengths [-]."""

STRAIGHT_CURVATURE = 0.01
"""Curvature times the element length below which the track counts as straight for a coarse
element [-] (a radius of 1 km with 10 m elements); the calm measure is ``|kappa| h_0`` over
this, times 1/2."""


def mesh_indicator(track, vehicle, start: float, length: float, closed: bool, cfg,
                   v_start=None) -> tuple:
    """The indicator :math:`g(s)` of the module docstring on a 1 m grid of the sector.

    Parameters
    ----------
    track : Track
    vehicle : VehicleParameters
    start, length : float
        The sector [m] (track coordinate of its start, its length).
    closed : bool
        A whole closed lap (the profile and the windows wrap around).
    cfg : OCP options (``element_length``, ``mesh_lateral_change``,
        ``mesh_longitudinal_change``, ``mesh_curvature_change``, ``v_min``)
    v_start : float, optional
        The speed fixed at the start of an open sector [m/s].

    Returns
    -------
    (grid, g, g_calm) : three (n,) arrays
        The grid [m] from the sector start, the indicator (largest within :data:`SPREAD`
        element lengths) and its largest value within :data:`CALM_WINDOW` element lengths [-].
    """
    h0 = float(cfg.element_length)
    a_ref = force_scale(vehicle) / vehicle.m
    n = max(3, int(math.ceil(length)) + 1)
    grid = np.linspace(0.0, length, n)
    s_track = np.mod(start + grid, track.length) if track.closed else start + grid
    tp = track.evaluate(s_track)
    v = quasi_steady_speed(vehicle, grid, tp.omega, tp.rotation, closed=closed, v_start=v_start,
                           v_min=cfg.v_min)
    a_y = v ** 2 * tp.omega[:, 2]
    a_x = v * np.gradient(v, grid)
    g = np.maximum.reduce([np.abs(np.gradient(a_y, grid)) * h0 / (cfg.mesh_lateral_change * a_ref),
                           np.abs(np.gradient(a_x, grid)) * h0 / (cfg.mesh_longitudinal_change * a_ref),
                           np.abs(np.gradient(tp.omega[:, 2], grid)) * h0 ** 2 / cfg.mesh_curvature_change])
    step = grid[1] - grid[0]
    mode = "wrap" if closed else "nearest"
    near = maximum_filter1d(g, 2 * int(round(SPREAD * h0 / step)) + 1, mode=mode)
    # calm: the indicator small and the track straight (|kappa| h0 below STRAIGHT_CURVATURE)
    # all within CALM_WINDOW elements; a corner is never calm: where the optimal car brakes,
    # turns in and accelerates out of it differs from the quasi-steady profile by tens of metres
    window = 2 * int(round(CALM_WINDOW * h0 / step)) + 1
    curved = maximum_filter1d(np.abs(tp.omega[:, 2]) * h0, window, mode=mode) / STRAIGHT_CURVATURE
    calm = np.maximum(maximum_filter1d(near, window, mode=mode), 0.5 * curved)
    return grid, near, calm


def adaptive_boundaries(track, vehicle, start: float, length: float, closed: bool, cfg,
                        v_start=None) -> np.ndarray:
    """Element boundaries of the sector placed by :func:`mesh_indicator` (module docstring).

    Parameters
    ----------
    track, vehicle, start, length, closed, cfg, v_start
        As :func:`mesh_indicator`; ``cfg`` also gives ``element_length`` [m],
        ``mesh_max_split`` and ``mesh_coarsen``.

    Returns
    -------
    (N + 1,) ndarray
        From 0 to ``length`` [m], increasing; no element shorter than 0.4 of the shortest
        the indicator asks for (the last element is merged into the one before if it
        would be).
    """
    grid, near, calm = mesh_indicator(track, vehicle, start, length, closed, cfg, v_start)
    h0 = float(cfg.element_length)
    k = np.clip(np.ceil(np.sqrt(np.maximum(near, 1e-12))), 1, cfg.mesh_max_split)
    h = np.where(k > 1, h0 / k, h0)
    h = np.where((k == 1) & (calm < 0.5), h0 * cfg.mesh_coarsen, h)
    # march along the sector: each element as long as the smallest length asked for within it
    # (a running minimum over a window of the longest element, from the right)
    bounds = [0.0]
    step = grid[1] - grid[0]
    while bounds[-1] < length - 1e-9:
        x = bounds[-1]
        i0 = int(x / step)
        hh = float(np.interp(x, grid, h))
        i1 = min(len(grid), int(math.ceil((x + hh) / step)) + 1)
        hh = min(hh, float(h[i0:i1].min()))
        bounds.append(min(length, x + hh))
    b = np.asarray(bounds)
    if len(b) > 2 and b[-1] - b[-2] < 0.4 * float(h.min()):
        b = np.delete(b, -2)
    b[0], b[-1] = 0.0, length
    return b
