"""Plots of a results folder (matplotlib, Agg backend: no display needed).

:func:`plot_results` reads ``trajectory.parquet`` (or ``trajectory.csv``), ``summary.json`` and
the ``vehicle`` sheet of ``results.xlsx`` and writes one PNG per figure, plus, on request, all
figures as pages of one ``plots.pdf``:

=====================  ==========================================================================
file                   content
=====================  ==========================================================================
``track_map``          the sector seen from above: racing line coloured by speed, track edges,
                       centreline, distance markers (:func:`marker_step`), start/finish line
                       of a closed lap (start and end of an open sector), direction of travel
``racing_line``        lateral offset ``q2`` of the racing line from the centreline, with the
                       limits the car's centre can reach and the track edges
``elevation``          height of the centreline and grade along the sector
``speed``              speed, with the quasi-steady point-mass estimate (or a reference run),
                       and the time delta against it
``controls``           ``f_xa``, ``f_xb`` and the steer angle ``delta``
``attitudes``          heave ``q4``, pitch ``q5``, roll ``q6`` (as the paper's Figs. 4-8)
``power``              traction power against its limit ``P_max``
``gg``                 GG diagram: ``a_x`` against ``a_y`` (O3, in the car's frame, without
                       gravity) coloured by speed, with the car's friction envelope at the
                       10th, 50th and 90th percentile of the speed (:func:`friction_envelope`)
``vertical_loads``     the four vertical loads ``f_11z``, ``f_12z``, ``f_21z``, ``f_22z``
``sensitivities``      (runs with ``--sensitivities`` only) tornado chart: the change of the lap
                       time for +1 % of each parameter (:mod:`pyomo_lap.post.sensitivities`)
=====================  ==========================================================================

Distances on the horizontal axes are track coordinates ``s`` [m] (``s`` of the run's first
point plus ``s_sector``: past the start line of a closed track they count on). A distance
window ``s_range="1200:1800"`` (``pyomo-lap plot --range 1200:1800``, :func:`parse_range`)
limits every distance-based figure and the GG diagram to it and highlights it on the track
map. Legends are outside the axes (PNGs are saved with ``bbox_inches="tight"``).
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .compare import (_check_formats, _out_folder, _plt, _within, _write_comparison,
                      channel_differences, delta_along_track, run_statistics, sector_deltas)
from .results import read_summary, read_trajectory

__all__ = ["plot_results", "compare_runs", "figure_compare", "FIGURES", "figure_track_map", "figure_racing_line",
           "figure_elevation", "figure_speed", "figure_controls", "figure_attitudes",
           "figure_power", "figure_gg", "figure_vertical_loads", "figure_sensitivities", "edges_xy",
           "figure_sweep_parameter", "figure_sweep_heatmap", "sweep_plots", "parse_range",
           "resolve_range", "in_window", "friction_envelope", "marker_step", "distance_label",
           "read_vehicle", "RANGE_HELP", "ENVELOPE_NOTE"]


def _literal(name) -> str:
    """A name (of a vehicle, a track, a folder) as text to draw literally in a title or a
    legend: its ``$`` escaped, so that matplotlib does not parse it as mathtext (a name such as
    ``car $\\frac{1}{$`` would stop the figure)."""
    return str(name).replace("$", r"\$")


def _title(ax, summary: dict, what: str) -> None:
    run = (f"{_literal(summary.get('vehicle', '?'))} on {_literal(summary.get('track', '?'))}, "
           f"{summary.get('start_m', 0):.0f}+{summary.get('length_m', 0):.0f} m, "
           f"t = {summary.get('lap_time_s', float('nan')):.3f} s")
    ax.set_title(f"{what}\n{run}", fontsize=10)


def _s(df: pd.DataFrame) -> np.ndarray:
    """Unwrapped track coordinate [m] (a sector may pass the start line of a closed track):
    ``s`` at the run's start plus ``s_sector`` (for the rows of a window, :func:`in_window`,
    the run's start is kept in ``df.attrs["s_origin"]``)."""
    origin = df.attrs.get("s_origin")
    if origin is None:
        origin = float(df["s"].iloc[0]) - float(df["s_sector"].iloc[0])
    return origin + df["s_sector"].to_numpy(dtype=float)


# --------------------------------------------------------------------------------------------
# a distance window (--range A:B)
# --------------------------------------------------------------------------------------------

RANGE_HELP = ("A:B in metres of track coordinate s, as on the figures' horizontal axes "
              "(e.g. 1200:1800, :800 or 1200:)")


def parse_range(text, name: str = "--range") -> Optional[tuple]:
    """Read a distance window ``"A:B"`` [m] of track coordinate ``s``.

    Parameters
    ----------
    text : str, (A, B) or None
        ``"1200:1800"``, with open ends ``":800"`` (from the start of the run) and
        ``"1200:"`` (to its end); or a pair of numbers or None. None (or ``":"``): no window.
    name : str
        How the value is named in an error message (``--range`` on the command line,
        ``s_range`` in Python).

    Returns
    -------
    (A, B) or None
        The window's ends [m] (None for an open end), or None for no window.

    Raises
    ------
    ValueError
        Not ``A:B`` with numbers, a value that is not finite, or ``A >= B``; one line naming
        the value and what was expected.
    """
    if text is None:
        return None
    if isinstance(text, str):
        parts = text.strip().split(":")
        if len(parts) != 2:
            raise ValueError(f"{name} {text!r}: expected {RANGE_HELP}")
        ends = []
        for part in parts:
            part = part.strip()
            if not part:
                ends.append(None)
                continue
            try:
                ends.append(float(part))
            except ValueError:
                raise ValueError(f"{name} {text!r}: {part!r} is not a number; expected "
                                 f"{RANGE_HELP}") from None
        a, b = ends
    else:
        try:
            a, b = text
            a = None if a is None else float(a)
            b = None if b is None else float(b)
        except (TypeError, ValueError):
            raise ValueError(f"{name} = {text!r}: expected {RANGE_HELP}, or a pair (A, B) of "
                             "numbers or None") from None
        text = f"{'' if a is None else f'{a:g}'}:{'' if b is None else f'{b:g}'}"
    for v in (a, b):
        if v is not None and not np.isfinite(v):
            raise ValueError(f"{name} {text!r}: expected finite distances, {RANGE_HELP}")
    if a is not None and b is not None and not a < b:
        raise ValueError(f"{name} {text!r}: expected A:B with A < B (the window's start "
                         "before its end), in metres of track coordinate s")
    if a is None and b is None:
        return None
    return (a, b)


def resolve_range(df: pd.DataFrame, s_range, name: str = "--range") -> Optional[tuple]:
    """The window ``s_range`` (see :func:`parse_range`) checked against a run.

    Parameters
    ----------
    df : DataFrame
        The run's channels (``s``, ``s_sector``).
    s_range : str, (A, B) or None
        The window [m] of track coordinate ``s`` as on the horizontal axes (``s`` of the
        first point plus ``s_sector``: past the start line of a closed track it counts on).
    name : str
        How the value is named in an error message.

    Returns
    -------
    (A, B) or None
        Both ends [m], open ends replaced by the run's first and last ``s``.

    Raises
    ------
    ValueError
        Bad text (:func:`parse_range`), or a window that is not within the run (the
        message gives the run's extent).
    """
    win = parse_range(s_range, name)
    if win is None:
        return None
    s = _s(df)
    lo, hi = float(s[0]), float(s[-1])
    a = lo if win[0] is None else win[0]
    b = hi if win[1] is None else win[1]
    tol = 1e-6 * max(1.0, hi - lo)
    if a < lo - tol or b > hi + tol or not a < b:
        shown = s_range if isinstance(s_range, str) else f"{win[0]}:{win[1]}"
        raise ValueError(f"{name} {shown!r}: outside the run; expected a window within its "
                         f"{lo:.1f}:{hi:.1f} m of track coordinate s")
    return (max(a, lo), min(b, hi))


def in_window(df: pd.DataFrame, s_range) -> tuple:
    """The rows of ``df`` in the window, with one point more on each side (so that the lines
    reach the window's edges), and the window.

    Returns
    -------
    (DataFrame, (A, B) or None)
        The whole ``df`` and None when there is no window.
    """
    win = resolve_range(df, s_range)
    if win is None:
        return df, None
    s = _s(df)
    lo = max(int(np.searchsorted(s, win[0], side="right")) - 1, 0)
    hi = min(int(np.searchsorted(s, win[1], side="left")) + 1, len(s))
    sub = df.iloc[lo:hi]
    if len(sub) < 2:
        sub = df.iloc[max(lo - 1, 0):max(lo - 1, 0) + 2]
    sub = sub.copy()
    sub.attrs["s_origin"] = float(s[0] - df["s_sector"].iloc[0])
    return sub, win


def _xlim(ax, win) -> None:
    """Limit a distance axis to the window [m] (nothing without one)."""
    if win is not None:
        ax.set_xlim(*win)


def _window_text(win) -> str:
    return "" if win is None else f", window s = {win[0]:.0f}-{win[1]:.0f} m"


def _colorbar_beside(fig, ax, mappable, label: str):
    """A colour bar as tall as the axes (also of an axes drawn to an equal aspect)."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable
    cax = make_axes_locatable(ax).append_axes("right", size="3%", pad=0.1)
    return fig.colorbar(mappable, cax=cax, label=label)


def _legend_right(ax, **kw):
    """A legend outside the axes, to their right (it never covers the data)."""
    kw.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                     framealpha=0.9, **kw)


# --------------------------------------------------------------------------------------------
# the friction envelope of the car (GG diagram): two axles, load transfer, brake balance
# --------------------------------------------------------------------------------------------

ENVELOPE_KEYS = ("m", "m_u", "mu_x0", "mu_y0", "Cz1", "Cz2", "rho", "S", "Cx", "P_max",
                 "a1", "a2", "h", "wheel_radius", "hq1", "hq2", "t1", "t2", "k1", "k2",
                 "brake_ratio")
"""Vehicle parameters :func:`friction_envelope` needs (``gravity``, ``pD2``, ``fz_min`` are
optional: 9.81 m/s^2, no load sensitivity and no minimum wheel load without them), with
:data:`ENVELOPE_TYRE_KEYS` unless ``shared_slip=False``."""

ENVELOPE_TYRE_KEYS = ("Fz0", "C", "E", "pK1", "pK2")
"""The Magic Formula parameters :func:`friction_envelope` needs for one slip angle per axle
(``shared_slip=True``, the default; else ``Fz0`` is optional, with ``pD2``)."""

ENVELOPE_NOTE = ("two axles: fixed brake balance k_b, rear drive, traction <= P_max/v, drag;\n"
                 "load transfer (longitudinal; lateral split by roll stiffness), tyre load "
                 "sensitivity,\none slip angle per axle (the lighter tyre peaks first); "
                 "steady state, flat road,\nno yaw acceleration, no pitch/roll dynamics")
"""The simplifications of :func:`friction_envelope`, as the GG diagram's legend says them."""

ENVELOPE_LIMITS = ("front axle", "rear axle", "power")
"""What limits a point of the envelope (``friction_envelope(...)["limit"]``)."""


def _param(vehicle, key, default=None):
    if isinstance(vehicle, dict):
        v = vehicle.get(key, default)
    else:
        v = getattr(vehicle, key, default)
    if v is None:
        raise KeyError(key)
    return float(v)


def _envelope_car(vehicle, speed: float, brake_ratio=None, load_transfer: bool = True,
                  load_sensitivity: bool = True, shared_slip: bool = True):
    """The parameters of :func:`friction_envelope` at one speed (a namespace of floats):
    static axle loads with the downforce, drag, the roll-stiffness split, the brake balance.

    Raises
    ------
    KeyError
        A required parameter (:data:`ENVELOPE_KEYS`) is missing.
    """
    from types import SimpleNamespace

    from ..vehicle.car import aero_forces
    c = SimpleNamespace(**{k: _param(vehicle, k) for k in ENVELOPE_KEYS})
    c.gravity = _param(vehicle, "gravity", 9.81)
    c.fz_min = _param(vehicle, "fz_min", 0.0)
    c.shared_slip = bool(shared_slip)
    if c.shared_slip:                     # the Magic Formula's cornering stiffness
        for key in ENVELOPE_TYRE_KEYS:
            setattr(c, key, _param(vehicle, key))
        c.pD2 = _param(vehicle, "pD2", 0.0)
    else:
        c.Fz0, c.pD2 = _param(vehicle, "Fz0", 1.0), _param(vehicle, "pD2", 0.0)
    if not load_sensitivity:
        c.pD2 = 0.0
    if not c.Fz0 > 0:
        c.Fz0, c.pD2 = 1.0, 0.0
    if brake_ratio is not None:
        c.brake_ratio = float(brake_ratio)
    if not 0.0 <= c.brake_ratio <= 1.0:
        raise ValueError(f"brake_ratio = {c.brake_ratio!r}: expected the front share of the "
                         "braking force, in [0, 1]")
    c.speed = float(speed)
    c.l = c.a1 + c.a2
    # eq (20), the model's aerodynamic wrench at O3 (drag along x3, downforce, pitch moment)
    f_drag, f_down, m_aero = aero_forces(c, c.speed)
    c.drag, c.down = -float(f_drag), -float(f_down)
    # axle loads of the downforce: F_1 = (a2 f_3z - m_3y)/l as in car_equations
    c.down1 = (c.a2 * c.down - (-float(m_aero))) / c.l
    c.down2 = c.down - c.down1
    g, m = c.gravity, c.m
    c.F1 = m * g * c.a2 / c.l + c.down1          # static axle loads with downforce [N]
    c.F2 = m * g * c.a1 / c.l + c.down2
    # steady heave of the sprung mass under its weight and the downforce, eqs (18)-(19):
    # q4 = -(m_s g + F_down)/(2 k1 + 2 k2); h is the height of G6 at zero heave
    c.sag = ((c.m - c.m_u) * g + c.down) / (2 * c.k1 + 2 * c.k2)
    # m h_G: sprung mass at h + q4, unsprung mass at the wheel centres [kg m]
    c.mh = ((c.m - c.m_u) * max(c.h - c.sag, 0.0) + c.m_u * c.wheel_radius
            if load_transfer else 0.0)
    c.hq1, c.hq2 = (c.hq1, c.hq2) if load_transfer else (0.0, 0.0)
    # roll stiffness of each axle, k_phi_i = 2 k_i (t_i/2)^2 (VehicleParameters.suspension)
    kphi1, kphi2 = c.k1 * c.t1 ** 2 / 2, c.k2 * c.t2 ** 2 / 2
    c.share1 = kphi1 / (kphi1 + kphi2)
    c.power_cap = c.P_max / c.speed if c.speed > 0 else np.inf
    return c


def _envelope_tyre_loads(c, a_x, a_y):
    """Vertical loads [N] of the four tyres (11, 12, 21, 22: front left, front right, rear
    left, rear right) at accelerations ``a_x``, ``a_y`` [m/s^2] (arrays): the static axle loads
    with the downforce, the longitudinal transfer ``m h_G a_x / l`` and the lateral transfer of
    eqs (26)-(30) as :func:`pyomo_lap.vehicle.car.car_equations` builds it (roll moment
    ``m h_G a_y - Y_1 h_q1 - Y_2 h_q2`` split by roll stiffness, plus ``Y_i h_qi``), with the
    axle lateral forces ``Y_1 = m a_y a_2/l``, ``Y_2 = m a_y a_1/l`` (no yaw acceleration)."""
    d_long = c.mh * a_x / c.l
    F1, F2 = c.F1 - d_long, c.F2 + d_long
    Y1, Y2 = c.m * a_y * c.a2 / c.l, c.m * a_y * c.a1 / c.l
    roll = c.mh * a_y - Y1 * c.hq1 - Y2 * c.hq2
    dF1 = (c.share1 * roll + Y1 * c.hq1) / c.t1
    dF2 = ((1.0 - c.share1) * roll + Y2 * c.hq2) / c.t2
    return (F1 / 2 - dF1, F1 / 2 + dF1, F2 / 2 - dF2, F2 / 2 + dF2), (Y1, Y2)


def _mf_stiffness(c, fz, D):
    """``B`` of the Magic Formula, eq (32) (:func:`pyomo_lap.vehicle.car.tyre_lateral_angle`
    on arrays): ``pK1 Fz0 sin(2 atan(f_z/(pK2 Fz0))) / (C D)`` [1/rad]."""
    c_alpha = c.pK1 * c.Fz0 * np.sin(2.0 * np.arctan(fz / (c.pK2 * c.Fz0)))
    return c_alpha / (c.C * np.where(D > 0, D, 1.0))


def _mf_theta(c, B, alpha):
    """The Magic Formula's angle ``theta = C atan(B alpha - E (B alpha - atan(B alpha)))``
    [rad], eq (32): ``f_y = D sin(theta)``."""
    x = B * alpha
    return c.C * np.arctan(x - c.E * (x - np.arctan(x)))


def _mf_slip(c, B, theta):
    """The slip angle ``alpha >= 0`` [rad] at which :func:`_mf_theta` is ``theta`` (arrays,
    ``0 <= theta``); ``inf`` where the Formula never reaches it (``theta >= C pi/2``)."""
    reach = theta < c.C * np.pi / 2 * (1 - 1e-12)
    T = np.tan(np.where(reach, theta, 0.0) / c.C)      # x - E (x - atan x) = T, x = B alpha
    if c.E == 0:
        x = T
    elif c.E == 1:                                   # atan(x) = T
        reach &= T < np.pi / 2
        x = np.tan(np.where(reach, T, 0.0))
    else:                                            # increasing in x for E < 1: bisection
        lo, hi = np.zeros_like(T), T / (1.0 - c.E) if c.E > 0 else T.copy()
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            below = mid - c.E * (mid - np.arctan(mid)) < T
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x = 0.5 * (lo + hi)
    return np.where(reach, x / B, np.inf)


def _envelope_feasible(c, a_x, a_y) -> dict:
    r"""Whether each axle and the power can give the accelerations ``a_x``, ``a_y`` [m/s^2]
    (arrays): ``{"front axle", "rear axle", "power"}`` -> bool arrays.

    The two tyres of an axle carry the same longitudinal force :math:`f_x` (eq 34: half the
    axle's), each at most the model's :math:`\mu_{x0}/\mu_{y0}\, D(f_z)\cos\theta` (its
    ``adherence = "below-peak"`` rows: the friction ellipse below the peak of the Magic
    Formula), :math:`D` the peak force of :func:`pyomo_lap.vehicle.car.peak_force`, and carry
    a load of at least ``fz_min``. ``shared_slip``: both tyres of the axle have one slip
    angle (eq 33), so the axle's lateral force is at most
    :math:`\sum_j D_j \sin\theta_j(\alpha^*)` with :math:`\alpha^*` the largest slip angle
    that keeps both tyres below their peak and within the ellipse for :math:`f_x` (the
    lighter tyre reaches its peak first); otherwise every tyre may reach its own peak,
    :math:`\sum_j \sqrt{D_j^2 - (\mu_{y0}/\mu_{x0} f_x)^2}`.
    """
    from ..vehicle.car import peak_force
    a_x, a_y = np.asarray(a_x, float), np.asarray(a_y, float)
    X = c.m * a_x + c.drag                                  # tyre forces along x [N]
    brake, drive = np.minimum(X, 0.0), np.maximum(X, 0.0)
    X1 = c.brake_ratio * brake                              # eq (34), summed over the axle
    X2 = (1.0 - c.brake_ratio) * brake + drive              # rear drive
    (f11, f12, f21, f22), (Y1, Y2) = _envelope_tyre_loads(c, a_x, a_y)
    ratio = c.mu_y0 / c.mu_x0

    def axle(Xi, Yi, loads):
        ok = np.ones(np.broadcast(Xi, Yi).shape, bool)
        fx = ratio * np.abs(Xi) / 2                          # per tyre, in lateral units [N]
        tyres = []
        for fz in loads:
            ok &= (fz >= c.fz_min) & (fz > 0)
            fz = np.maximum(fz, 1e-9)
            D = np.maximum(peak_force(c, fz), 0.0)
            ok &= fx <= D * (1 + 1e-12)
            theta = np.arccos(np.clip(fx / np.where(D > 0, D, 1.0), 0.0, 1.0))
            tyres.append((fz, D, theta))
        if c.shared_slip:
            Bs = [_mf_stiffness(c, fz, D) for fz, D, _ in tyres]
            alpha = np.minimum.reduce([_mf_slip(c, B, th) for B, (_, _, th) in zip(Bs, tyres)])
            cap = sum(D * np.sin(np.where(np.isfinite(alpha), _mf_theta(c, B, alpha),
                                          c.C * np.pi / 2))
                      for B, (_, D, _) in zip(Bs, tyres))
        else:
            cap = sum(D * np.sin(th) for _, D, th in tyres)
        return ok & (np.abs(Yi) <= cap * (1 + 1e-12))

    return {"front axle": axle(X1, Y1, (f11, f12)), "rear axle": axle(X2, Y2, (f21, f22)),
            "power": drive <= c.power_cap}


def friction_envelope(vehicle, speed: float, n: int = 241, load_sensitivity: bool = True,
                      brake_ratio: Optional[float] = None, load_transfer: bool = True,
                      shared_slip: bool = True, iterations: int = 60) -> dict:
    r"""The accelerations the car can reach at one speed (the GG diagram's envelope).

    Each axle carries its share of the forces the accelerations ask for, with the loads the
    accelerations transfer, and must stay within the grip of its two tyres; the envelope is
    where the first axle (or the power) saturates, found by bisection in ``n`` directions
    (:func:`_envelope_radii`, with the closed forms it meets).

    Forces (flat road, steady state, no yaw acceleration; :math:`a_x`, :math:`a_y` the
    acceleration of the car [m/s^2], + forward, + left):

    * tyre force along x: :math:`X = m a_x + F_D`, :math:`F_D = \tfrac12\rho S C_x v^2` the
      drag [N]; braking (:math:`X < 0`) is split by the fixed brake balance, eq (34):
      :math:`X_1 = k_b X`, :math:`X_2 = (1 - k_b) X`; traction (:math:`X > 0`) is on the
      rear axle only, :math:`X_2 = X \le P_{max}/v`;
    * lateral: :math:`Y_1 = m a_y a_2/l`, :math:`Y_2 = m a_y a_1/l` (moments about G
      balance: no yaw acceleration);
    * axle loads: :math:`F_1 = m g a_2/l + F_{a1} - m h_G a_x/l`,
      :math:`F_2 = m g a_1/l + F_{a2} + m h_G a_x/l`, the downforce :math:`F_{ai}` split by
      ``Cz1``, ``Cz2`` (the model's aerodynamic wrench, :func:`pyomo_lap.vehicle.car.aero_forces`,
      eq 20), :math:`m h_G = (m - m_u)(h + q_4) + m_u r_w`: the sprung mass at ``h`` lowered
      by its steady heave :math:`q_4 = -((m - m_u) g + F_{a1} + F_{a2})/(2k_1 + 2k_2)`
      (eqs 18-19), the unsprung mass at the wheel centres (``wheel_radius``);
    * lateral load transfer of each axle as in the model's eqs (26)-(30):
      :math:`\Delta F_i = [\frac{k_{\phi i}}{k_\phi}(m h_G a_y - Y_1 h_{q1} - Y_2 h_{q2})
      + Y_i h_{qi}]/t_i`, :math:`k_{\phi i} = k_i t_i^2/2` (the wheel rates), tyre loads
      :math:`F_i/2 \mp \Delta F_i`, each at least ``fz_min`` (the model's bound);
    * each tyre: the model's friction ellipse below the peak of the Magic Formula
      (``adherence = "below-peak"``): :math:`\mu_{y0}/\mu_{x0}\,|f_x| \le D\cos\theta`,
      :math:`f_y = D\sin\theta`, with the peak force :math:`D = \mu_{y0}(1 + p_{D2}(f_z -
      F_{z0})/F_{z0}) f_z` (load sensitivity, :func:`pyomo_lap.vehicle.car.peak_force`); the
      two tyres of an axle carry the same :math:`f_x = X_i/2` (eq 34), so the lighter one
      limits the axle's longitudinal force; with ``shared_slip`` they also share one slip
      angle (eq 33), so the axle's lateral force is largest when the lighter tyre reaches its
      peak, the heavier one short of its own (eq 32's cornering stiffness
      :math:`p_{K1}F_{z0}\sin(2\arctan(f_z/(p_{K2}F_{z0})))`): lateral load transfer costs
      grip through that and through :math:`p_{D2} < 0`.

    Simplifications that remain: flat road (no grade, banking or vertical curvature), steady
    state (no pitch or roll dynamics, no yaw acceleration: the lateral force is shared by
    the axles as :math:`a_2 : a_1`), loads from the accelerations of the car as one rigid
    body (the sprung mass's pitch and roll do not move its centre), the axle forces taken
    along the car's axes (the steer angle's rotation of the front forces, and the yaw moment
    :math:`\tfrac{t_1}{2}(f_{11y} - f_{12y})\sin\delta` it adds, ignored), no limit on the
    braking force but the friction. It is the model's friction limit under those
    assumptions, not a bound: a run's points may lie slightly outside it where a transient
    (pitch, roll, yaw acceleration), the road's shape or the steer angle helps (up to about
    4 % on the bundled FSAE car's Zandvoort lap, in corners limited by the front axle).

    Parameters
    ----------
    vehicle : dict or VehicleParameters
        The parameters :data:`ENVELOPE_KEYS`: ``m``, ``m_u`` [kg], ``mu_x0``, ``mu_y0`` [-],
        ``Cz1``, ``Cz2``, ``Cx`` [-], ``rho`` [kg/m^3], ``S`` [m^2], ``P_max`` [W], ``a1``, ``a2``,
        ``h``, ``wheel_radius``, ``hq1``, ``hq2``, ``t1``, ``t2`` [m], ``k1``, ``k2`` [N/m],
        ``brake_ratio`` [-]; with ``shared_slip`` :data:`ENVELOPE_TYRE_KEYS`: ``Fz0`` [N], ``C``,
        ``E`` [-], ``pK1`` [1/rad], ``pK2`` [-]; optional ``gravity`` [m/s^2] (9.81), ``pD2`` [-]
        (the load sensitivity; none without it), ``fz_min`` [N] (0).
    speed : float
        Speed [m/s], >= 0.
    n : int
        Points (directions) on the curve, the first and the last at :math:`\theta = 0`
        (the traction limit).
    load_sensitivity : bool
        False: the friction coefficients ``mu_x0``, ``mu_y0`` at every load (``pD2`` = 0).
    brake_ratio : float, optional
        The front share :math:`k_b` of the braking force [-], in [0, 1]; None: the vehicle's.
    load_transfer : bool
        False: no load transfer, longitudinal or lateral (as ``h`` = ``wheel_radius`` =
        ``hq1`` = ``hq2`` = 0): the static axle loads with the downforce.
    shared_slip : bool
        True: the two tyres of an axle share a slip angle (the model's tyres); False: each
        may reach its own peak (the axle's grip is the sum of its tyres' friction ellipses).
    iterations : int
        Bisection steps per direction (60: the limit to about 1e-15 of its bracket).

    Returns
    -------
    dict
        ``a_x``, ``a_y``: (n,) arrays [m/s^2], the closed curve; ``limit``: (n,) array of
        str, what limits each point (:data:`ENVELOPE_LIMITS`); ``ax_brake`` (< 0),
        ``ax_traction``, ``ay_max`` [m/s^2]: the braking limit (straight line), the traction
        limit and the largest lateral acceleration on the curve; ``brake_limit``,
        ``traction_limit``, ``lateral_limit``: what limits them; ``g_eff`` [m/s^2]
        (static load with downforce over mass); ``mu_x``, ``mu_y`` [-] (at a quarter of that
        load per tyre); ``static_loads`` (front, rear) [N] per tyre; ``brake_ratio`` [-];
        ``h_G`` [m] (the height of the centre of mass with the steady heave, 0 without
        load transfer); ``drag``, ``downforce`` [N]; ``speed`` [m/s].

    Raises
    ------
    KeyError
        A required parameter is missing.
    ValueError
        ``brake_ratio`` outside [0, 1].
    """
    c = _envelope_car(vehicle, speed, brake_ratio, load_transfer, load_sensitivity, shared_slip)
    return _envelope_curve(c, int(n), iterations)


def _envelope_radii(c, centre: float, normal: float, th, iterations: int) -> tuple:
    r"""How far the car ``c`` (:func:`_envelope_car`) can accelerate in each direction ``th``
    [rad] from the point of zero tyre force ``(centre, 0)`` [m/s^2] (``normal``: the weight
    with the downforce [N]), the step of :func:`friction_envelope` that finds its curve.

    For each of ``n`` directions :math:`\theta` from the point of zero tyre force,
    :math:`(a_x, a_y) = (-\tfrac12\rho S C_x v^2/m, 0) + r(\cos\theta, \sin\theta)`, a
    bisection on :math:`r` finds the largest acceleration both axles and the power allow
    (vectorised over the directions). Closed forms it meets (tests, without load
    sensitivity): with no load transfer and :math:`k_b` the front share of the static load,
    the braking limit is :math:`\mu_x g_{eff}` plus the drag; with :math:`k_b = 1` it solves
    :math:`m a - F_D = \mu_x (F_1 + m a h_G/l)`; the rear-driven traction limit solves
    :math:`m a = \mu_x (F_2 + m a h_G/l)`; with no transfer, equal static loads on all four
    tyres and :math:`k_b = 1/2`, its braking half is the whole-car ellipse
    :math:`(a_x + F_D/m)^2/(\mu_x g_{eff})^2 + a_y^2/(\mu_y g_{eff})^2 = 1`.

    Returns
    -------
    (ndarray, ndarray)
        The largest feasible radius ``r`` [m/s^2] in each direction, and what limits it
        (:data:`ENVELOPE_LIMITS`, ``"none"`` where nothing fails).
    """
    m = c.m
    cos_t, sin_t = np.cos(th), np.sin(th)

    def feasible(r):
        ok = _envelope_feasible(c, centre + r * cos_t, r * sin_t)
        return ok, ok["front axle"] & ok["rear axle"] & ok["power"]

    # a bracket: no tyre gives more than its peak force at the whole load
    mu_top = max(c.mu_x0, c.mu_y0) * max(1.0, 1.0 + c.pD2 * (normal - c.Fz0) / c.Fz0)
    hi = np.full(th.shape, 2.0 * mu_top * normal / m + 1.0)
    for _ in range(30):
        still = feasible(hi)[1]
        if not still.any():
            break
        hi = np.where(still, 2.0 * hi, hi)
    lo = np.zeros_like(hi)
    if feasible(lo)[1].all():
        for _ in range(int(iterations)):
            mid = 0.5 * (lo + hi)
            ok = feasible(mid)[1]
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    else:                                   # no tyre force is possible (a wheel below fz_min)
        lo = np.where(feasible(lo)[1], lo, 0.0)
    checks = feasible(hi)[0]                # just outside: what fails first
    limit = np.select([~checks[k] for k in ENVELOPE_LIMITS], list(ENVELOPE_LIMITS),
                      default="none").astype(object)
    return lo, limit


def _envelope_curve(c, n: int, iterations: int) -> dict:
    """The return of :func:`friction_envelope` for the car ``c`` of :func:`_envelope_car`: the
    curve through ``n`` directions and, in three more, the traction, lateral and braking
    limits."""
    m, g = c.m, c.gravity
    normal = m * g + c.down
    centre = -c.drag / m                   # a_x with no tyre force
    th_curve = np.linspace(0.0, 2.0 * np.pi, n)
    th = np.concatenate([th_curve, [0.0, 0.5 * np.pi, np.pi]])
    lo, limit = _envelope_radii(c, centre, normal, th, iterations)
    cos_t, sin_t = np.cos(th), np.sin(th)
    a_x, a_y = centre + lo * cos_t, lo * sin_t
    k = th_curve.size
    ay_curve = np.abs(a_y[:k])
    j = int(np.argmax(ay_curve))
    if abs(a_y[k + 1]) >= ay_curve[j]:
        ay_max, lat_limit = abs(float(a_y[k + 1])), limit[k + 1]
    else:
        ay_max, lat_limit = float(ay_curve[j]), limit[j]
    scale = max(1.0 + c.pD2 * (0.25 * normal - c.Fz0) / c.Fz0, 0.0)
    return {"a_x": a_x[:k], "a_y": a_y[:k], "limit": limit[:k],
            "ax_brake": float(a_x[k + 2]), "ax_traction": float(a_x[k]), "ay_max": ay_max,
            "brake_limit": str(limit[k + 2]), "traction_limit": str(limit[k]),
            "lateral_limit": str(lat_limit), "g_eff": normal / m,
            "mu_x": c.mu_x0 * scale, "mu_y": c.mu_y0 * scale,
            "static_loads": (c.F1 / 2, c.F2 / 2), "brake_ratio": c.brake_ratio,
            "h_G": c.mh / m, "drag": c.drag, "downforce": c.down, "speed": c.speed}


# --------------------------------------------------------------------------------------------
# distance markers, start and finish on the track map
# --------------------------------------------------------------------------------------------

def marker_step(length: float) -> float:
    """Spacing [m] of the distance markers on a track map of ``length`` metres: the round
    number (1, 2 or 5 times a power of ten) that gives closest to 8 markers (100 m on 600 m,
    500 m on a 4.2 km lap, 2 km on the 20.7 km Nordschleife)."""
    length = max(float(length), 1.0)
    k = np.floor(np.log10(length / 8.0))
    steps = [f * 10.0 ** e for e in (k - 1, k, k + 1) for f in (1.0, 2.0, 5.0)]
    return float(min(steps, key=lambda st: (abs(length / st - 8.0), -st)))


def distance_label(s: float, step: Optional[float] = None) -> str:
    """A marker's label: ``s`` [m] -> ``500 m``, ``1 km``, ``1.5 km``, ``12 km``; in metres
    (``1250 m``) when the markers' spacing ``step`` [m] is below 500 m."""
    if abs(s) < 1000.0 or (step is not None and step < 500.0):
        return f"{s:.0f} m"
    return f"{s / 1000.0:.3g} km" if abs(s) < 1e4 else f"{s / 1000.0:.4g} km"


def _frame_at(s, xy, sq):
    """Point and unit left normal (plan view) at track coordinates ``sq`` [m]."""
    x, y = np.interp(sq, s, xy[:, 0]), np.interp(sq, s, xy[:, 1])
    h = max(1e-3, 1e-4 * (s[-1] - s[0]))
    tx = np.interp(sq + h, s, xy[:, 0]) - np.interp(sq - h, s, xy[:, 0])
    ty = np.interp(sq + h, s, xy[:, 1]) - np.interp(sq - h, s, xy[:, 1])
    nrm = np.hypot(tx, ty)
    nrm = np.where(nrm == 0, 1.0, nrm)
    return np.c_[x, y], np.c_[-ty / nrm, tx / nrm], np.c_[tx / nrm, ty / nrm]


def edges_xy(df: pd.DataFrame):
    """Plan-view centreline, track edges and racing line [m].

    The left normal of the centreline is taken in the horizontal plane, from the tangent of
    ``(x_spine, y_spine)`` along ``s`` (banking and grade are ignored in the plan view).

    Returns
    -------
    dict
        ``centre``, ``left``, ``right``, ``line``: (n, 2) arrays; ``line`` is the centreline
        moved by ``q2`` along the left normal.
    """
    xy = df[["x_spine", "y_spine"]].to_numpy(dtype=float)
    s = df["s_sector"].to_numpy(dtype=float)
    tx, ty = np.gradient(xy[:, 0], s), np.gradient(xy[:, 1], s)
    norm = np.hypot(tx, ty)
    norm[norm == 0] = 1.0
    nl = np.c_[-ty / norm, tx / norm]
    wl = df["width_left"].to_numpy(dtype=float)[:, None]
    wr = df["width_right"].to_numpy(dtype=float)[:, None]
    q2 = df["q2"].to_numpy(dtype=float)[:, None]
    return {"centre": xy, "left": xy + wl * nl, "right": xy - wr * nl, "line": xy + q2 * nl}


def figure_track_map(df, summary, vehicle=None, s_range=None):
    """Plan view: racing line coloured by speed [km/h], track edges, centreline, distance
    markers, start and finish.

    Parameters
    ----------
    df : DataFrame
        The run's channels.
    summary : dict
        Its summary (``periodic``: a closed lap, drawn with a start/finish line).
    vehicle : dict, optional
        Not used.
    s_range : str or (A, B), optional
        A window [m] of track coordinate ``s`` (:func:`parse_range`): drawn in colour, the
        rest of the run in grey.

    Notes
    -----
    Distance markers every :func:`marker_step` metres of ``s`` (the distances of the other
    figures' horizontal axes), labelled in m or km; a closed lap has a start/finish line, an
    open sector a start and an end line; an arrow beside the start gives the direction of
    travel.
    """
    plt = _plt()
    sub, win = in_window(df, s_range)
    g = edges_xy(df)
    s = _s(df)
    closed = bool(summary.get("periodic"))
    fig, ax = plt.subplots(figsize=(8.5, 8))
    _draw_track_and_line(fig, ax, df, sub, g, win)
    # distance markers, start/finish, direction of travel
    xy = g["centre"]
    span = float(np.ptp(xy, axis=0).max()) or 1.0
    widths = (df["width_left"].to_numpy(dtype=float), df["width_right"].to_numpy(dtype=float))
    step = marker_step(s[-1] - s[0])
    _draw_distance_markers(ax, s, xy, widths, step, span)
    _draw_start_finish(ax, s, xy, widths, step, span, closed)
    _draw_direction(ax, s, xy, widths[0], span)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.margins(0.1)     # room for the labels beside the track
    ax.legend(*_track_map_legend(ax, step, closed), loc="upper center",
              bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8, framealpha=0.9,
              borderaxespad=4.5)   # below the axis label
    _title(ax, summary, "Track map, racing line coloured by speed" + _window_text(win))
    return fig


def _draw_track_and_line(fig, ax, df, sub, g, win) -> None:
    """The track map's edges, centreline and racing line coloured by speed (in a window
    ``win``: the window's edges and line in colour, the rest in grey)."""
    from matplotlib.collections import LineCollection
    context = "0.75" if win is not None else "k"
    ax.plot(*g["left"].T, color=context, lw=1.0, label="track edges" if win is None else
            "track edges (outside the window)")
    ax.plot(*g["right"].T, color=context, lw=1.0)
    ax.plot(*g["centre"].T, color="0.6", lw=0.8, ls="--", label="centreline")
    if win is not None:
        gw = edges_xy(sub)
        ax.plot(*g["line"].T, color="0.6", lw=1.5, label="racing line outside the window")
        ax.plot(*gw["left"].T, color="k", lw=1.2, label="track edges in the window")
        ax.plot(*gw["right"].T, color="k", lw=1.2)
        line, v = gw["line"], sub["speed_kmh"].to_numpy(dtype=float)
    else:
        line, v = g["line"], df["speed_kmh"].to_numpy(dtype=float)
    pts = line.reshape(-1, 1, 2)
    segs = np.concatenate([pts[:-1], pts[1:]], axis=1)
    lc = LineCollection(segs, cmap="viridis", linewidths=3.0, zorder=3)
    lc.set_array(0.5 * (v[1:] + v[:-1]))
    ax.add_collection(lc)
    _colorbar_beside(fig, ax, lc, "speed [km/h]" + (" in the window" if win else ""))


def _draw_distance_markers(ax, s, xy, widths, step: float, span: float) -> None:
    """Red lines across the track every ``step`` metres of ``s`` [m], labelled beside it
    (``xy``: the centreline; ``widths``: left and right widths [m]; ``span``: the map's
    size [m])."""
    width_l, width_r = widths
    first = np.ceil((s[0] + 0.25 * step) / step) * step
    marks = np.arange(first, s[-1] - 0.25 * step, step)
    if not len(marks):
        return
    p, nl, _ = _frame_at(s, xy, marks)
    # across the track, and long enough to be seen on the map of a long lap
    left = p + nl * np.maximum(np.interp(marks, s, width_l), 0.012 * span)[:, None]
    right = p - nl * np.maximum(np.interp(marks, s, width_r), 0.012 * span)[:, None]
    for a, b in zip(left, right):
        ax.plot([a[0], b[0]], [a[1], b[1]], color="tab:red", lw=1.2, zorder=4)
    lab = left + nl * 0.025 * span
    for (x, y), d, n_ in zip(lab, marks, nl):
        ax.text(x, y, distance_label(d, step), fontsize=7.5, color="tab:red",
                ha="left" if n_[0] >= 0 else "right", va="bottom" if n_[1] >= 0 else "top",
                zorder=5, bbox={"facecolor": "w", "alpha": 0.7, "lw": 0, "pad": 0.5})


def _draw_start_finish(ax, s, xy, widths, step: float, span: float, closed: bool) -> None:
    """The start/finish line of a closed lap (chequered), or the start and end lines of an
    open sector, with their labels (arguments as :func:`_draw_distance_markers`)."""
    width_l, width_r = widths
    ends = [(s[0], "start/finish" if closed else f"start {distance_label(s[0], step)}", "k")]
    if not closed:
        ends.append((s[-1], f"end {distance_label(s[-1], step)}", "tab:purple"))
    for sq, text, color in ends:
        p, nl, _ = _frame_at(s, xy, np.array([sq]))
        a = p[0] + nl[0] * max(np.interp(sq, s, width_l) + 0.01 * span, 0.025 * span)
        b = p[0] - nl[0] * max(np.interp(sq, s, width_r) + 0.01 * span, 0.025 * span)
        ax.plot([a[0], b[0]], [a[1], b[1]], color=color, lw=4.0, solid_capstyle="butt",
                zorder=6)
        if closed:      # a chequered line: white dashes on the black one
            ax.plot([a[0], b[0]], [a[1], b[1]], color="w", lw=2.0, ls=(0, (1, 1)), zorder=7)
        t = b - nl[0] * 0.03 * span
        ax.text(t[0], t[1], text, fontsize=8.5, fontweight="bold", color=color, zorder=8,
                ha="left" if nl[0][0] <= 0 else "right", va="top" if nl[0][1] <= 0 else "bottom",
                bbox={"facecolor": "w", "alpha": 0.8, "lw": 0, "pad": 1})


def _draw_direction(ax, s, xy, width_l, span: float) -> None:
    """The direction of travel: an arrow beside the track's left edge, just after the start."""
    run_len = s[-1] - s[0]
    d0 = s[0] + min(0.02 * run_len, 0.04 * span)
    d1 = s[0] + min(0.12 * run_len, 0.16 * span)
    p, nl, _ = _frame_at(s, xy, np.array([d0, d1]))
    off = (np.array([np.interp(d0, s, width_l), np.interp(d1, s, width_l)]) + 0.03 * span)[:, None]
    q = p + nl * off
    ax.annotate("", xy=q[1], xytext=q[0], zorder=8,
                arrowprops={"arrowstyle": "-|>", "lw": 2.0, "color": "k", "mutation_scale": 16})


def _track_map_legend(ax, step: float, closed: bool) -> tuple:
    """The track map's legend entries ``(handles, labels)``: those of the axes, then the
    distance markers, the start/finish (or start and end) lines and the direction."""
    from matplotlib.lines import Line2D
    handles, labels = ax.get_legend_handles_labels()
    extra = [(Line2D([], [], color="tab:red", lw=1.2), f"distance marker, every "
              f"{distance_label(step)} of s"),
             (Line2D([], [], color="k", marker=r"$\rightarrow$", ms=14, ls="none"),
              "direction of travel")]
    if closed:
        extra.insert(1, (Line2D([], [], color="k", lw=4), "start/finish line"))
    else:
        extra.insert(1, (Line2D([], [], color="k", lw=4), "start"))
        extra.insert(2, (Line2D([], [], color="tab:purple", lw=4), "end"))
    handles += [h for h, _ in extra]
    labels += [t for _, t in extra]
    return handles, labels


def figure_racing_line(df, summary, vehicle=None, s_range=None):
    """Lateral offset q2 [m] of the racing line against the centreline, with the edges
    (``s_range``: a window [m] of ``s``, :func:`parse_range`)."""
    plt = _plt()
    df, win = in_window(df, s_range)
    s = _s(df)
    fig, ax = plt.subplots(figsize=(10, 4))
    wl, wr = df["width_left"].to_numpy(), df["width_right"].to_numpy()
    ax.fill_between(s, -wr, wl, color="0.92", label="track")
    ax.plot(s, wl, "k", lw=1.0, label="track edges")
    ax.plot(s, -wr, "k", lw=1.0)
    if vehicle and "width" in vehicle:
        half = 0.5 * float(vehicle["width"])
        ax.plot(s, wl - half, color="0.5", lw=0.8, ls=":", label="limit of the car's centre")
        ax.plot(s, -wr + half, color="0.5", lw=0.8, ls=":")
    ax.axhline(0.0, color="0.6", lw=0.8, ls="--", label="centreline")
    ax.plot(s, df["q2"], color="tab:blue", lw=1.8, label="racing line q2")
    ax.set_xlabel("s [m]")
    ax.set_ylabel("lateral offset q2 [m] (+ left)")
    _xlim(ax, win)
    _legend_right(ax)
    _title(ax, summary, "Racing line against the centreline" + _window_text(win))
    return fig


def figure_elevation(df, summary, vehicle=None, s_range=None):
    """Height of the centreline [m] and grade [%] (``s_range``: a window [m] of ``s``)."""
    plt = _plt()
    df, win = in_window(df, s_range)
    s = _s(df)
    z = df["z_spine"].to_numpy(dtype=float)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 5), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    ax.plot(s, z, color="tab:brown")
    ax.set_ylabel("z of the centreline [m]")
    grade = 100.0 * np.gradient(z, df["s_sector"].to_numpy(dtype=float))
    ax2.plot(s, grade, color="tab:brown", lw=1.0)
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax2.set_ylabel("grade [%]")
    ax2.set_xlabel("s [m]")
    _xlim(ax2, win)
    _title(ax, summary, "Elevation profile" + _window_text(win))
    return fig


def figure_speed(df, summary, vehicle=None, reference: Optional[pd.DataFrame] = None,
                 reference_label: str = "reference", s_range=None):
    """Speed [km/h] and time delta [s] against the point-mass estimate or a reference run.

    With a window ``s_range`` [m] (:func:`parse_range`) the time delta is still counted
    from the start of the run (or of the overlap with the reference): its slope in the
    window is the time gained or lost there.
    """
    plt = _plt()
    full = df
    df, win = in_window(df, s_range)
    s = _s(df)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    ax.plot(s, df["speed_kmh"], color="tab:blue", lw=1.8, label="this run")
    if reference is not None:
        d = delta_along_track(reference, full)
        if win is not None:
            ds = d["s [m]"].to_numpy(dtype=float)
            lo = max(int(np.searchsorted(ds, win[0], side="right")) - 1, 0)
            hi = min(int(np.searchsorted(ds, win[1], side="left")) + 1, len(ds))
            d = d.iloc[lo:hi]
        ax.plot(d["s [m]"], d["speed_A [km/h]"], color="tab:orange", lw=1.2, label=reference_label)
        ax2.plot(d["s [m]"], d["delta_t [s]"], color="tab:purple")
        ax2.set_ylabel(f"t - t({reference_label}) [s]")
    elif "v_point_mass" in df.columns:
        ax.plot(s, 3.6 * df["v_point_mass"], color="tab:orange", lw=1.0, ls="--",
                label="quasi-steady point mass\n(initial guess)")
        ax2.plot(s, df["t"] - df["t_point_mass"], color="tab:purple")
        ax2.set_ylabel("t - t(point mass) [s]")
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax.set_ylabel("speed [km/h]")
    ax2.set_xlabel("s [m]")
    _xlim(ax2, win)
    _legend_right(ax)
    _title(ax, summary, "Speed and time delta (< 0: this run is ahead)" + _window_text(win))
    return fig


def figure_controls(df, summary, vehicle=None, s_range=None):
    """Controls: traction f_xa and braking f_xb [kN], steer angle delta [deg]
    (``s_range``: a window [m] of ``s``)."""
    plt = _plt()
    df, win = in_window(df, s_range)
    s = _s(df)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    ax.plot(s, df["f_xa"] / 1e3, color="tab:green", label="f_xa (traction)")
    ax.plot(s, df["f_xb"] / 1e3, color="tab:red", label="f_xb (braking)")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_ylabel("force [kN]")
    _legend_right(ax)
    ax2.plot(s, np.degrees(df["delta"]), color="tab:blue")
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax2.set_ylabel("steer angle delta [deg] (+ left)")
    ax2.set_xlabel("s [m]")
    _xlim(ax2, win)
    _title(ax, summary, "Controls" + _window_text(win))
    return fig


def figure_attitudes(df, summary, vehicle=None, s_range=None):
    """Heave q4 [mm], pitch q5 [deg] (+ nose down), roll q6 [deg] (+ right side down)
    (``s_range``: a window [m] of ``s``)."""
    plt = _plt()
    df, win = in_window(df, s_range)
    s = _s(df)
    fig, axs = plt.subplots(3, 1, figsize=(10, 7), sharex=True)
    axs[0].plot(s, 1e3 * df["q4"], color="tab:blue")
    axs[0].set_ylabel("heave q4 [mm]")
    axs[1].plot(s, np.degrees(df["q5"]), color="tab:orange")
    axs[1].set_ylabel("pitch q5 [deg]")
    axs[2].plot(s, np.degrees(df["q6"]), color="tab:green")
    axs[2].set_ylabel("roll q6 [deg]")
    axs[2].set_xlabel("s [m]")
    for a in axs:
        a.axhline(0.0, color="0.6", lw=0.8)
    _xlim(axs[2], win)
    _title(axs[0], summary, "Attitudes (as Figs. 4-8 of the paper)" + _window_text(win))
    return fig


def figure_power(df, summary, vehicle=None, s_range=None):
    """Traction power [kW] against its limit P_max (``s_range``: a window [m] of ``s``)."""
    plt = _plt()
    df, win = in_window(df, s_range)
    s = _s(df)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(s, df["power"] / 1e3, color="tab:red", label="power f_xa v_3x")
    if vehicle and "P_max" in vehicle:
        ax.axhline(float(vehicle["P_max"]) / 1e3, color="k", ls="--", lw=1.0, label="P_max")
    ax.set_ylabel("power [kW]")
    ax.set_xlabel("s [m]")
    _xlim(ax, win)
    _legend_right(ax)
    _title(ax, summary, "Power against its limit" + _window_text(win))
    return fig


def figure_gg(df, summary, vehicle=None, s_range=None, percentiles=(10, 50, 90)):
    """GG diagram: longitudinal a_x against lateral a_y of O3 [g] (in the car's frame,
    without gravity), coloured by speed [km/h], with the friction envelope of the car.

    The envelope (:func:`friction_envelope`, from the vehicle parameters: the tyres, mass
    and its distribution, brake balance, rear drive, load transfer, downforce, drag, power)
    is drawn at the given percentiles of the run's speed (those closer than 3 km/h to another
    are drawn once), each in the colour of its speed; the legend gives its limits, which
    axle (or the power) sets the braking and traction limits, and its simplifications
    (steady state, flat road, no yaw acceleration).

    Parameters
    ----------
    df : DataFrame
        The run's channels (``a_x``, ``a_y`` [m/s^2], ``speed_kmh``).
    summary : dict
        Its summary (the title).
    vehicle : dict or VehicleParameters, optional
        The parameters (the ``vehicle`` sheet of ``results.xlsx``); without them, or
        without one that :func:`friction_envelope` needs, no envelope is drawn (the legend
        says so).
    s_range : str or (A, B), optional
        A window [m] of track coordinate ``s`` (:func:`parse_range`): only its points.
    percentiles : sequence of float
        Speeds of the envelopes, as percentiles [%] of the points' speeds.
    """
    plt = _plt()
    import matplotlib.patheffects as pe
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D
    df, win = in_window(df, s_range)
    if win is not None:     # only the points in the window (no neighbour outside it)
        s = _s(df)
        df = df[(s >= win[0] - 1e-9) & (s <= win[1] + 1e-9)]
    if isinstance(vehicle, dict) or vehicle is None:
        g0 = float(vehicle["gravity"]) if vehicle and "gravity" in vehicle else 9.81
    else:
        g0 = float(getattr(vehicle, "gravity", 9.81))
    v = df["speed_kmh"].to_numpy(dtype=float)
    norm = Normalize(vmin=float(v.min()), vmax=float(max(v.max(), v.min() + 1e-6)))
    cmap = plt.get_cmap("viridis")
    fig, ax = plt.subplots(figsize=(7, 7.6))
    sc = ax.scatter(df["a_y"] / g0, df["a_x"] / g0, c=v, cmap=cmap, norm=norm, s=10, zorder=3)
    _colorbar_beside(fig, ax, sc, "speed [km/h]")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.axvline(0.0, color="0.6", lw=0.8)
    ry = float(np.abs(df["a_y"]).max()) / g0                  # the extent of points and envelopes
    x_lo, x_hi = float(df["a_x"].min()) / g0, float(df["a_x"].max()) / g0
    handles = [Line2D([], [], marker="o", ls="none", color=cmap(0.5), ms=4,
                      label="points of the run (colour: speed)")]
    speeds = []             # (speed [km/h], the percentiles it stands for)
    for pc in percentiles:
        vk = float(np.percentile(v, pc))
        near = [entry for entry in speeds if abs(vk - entry[0]) < 3.0]
        if near:
            near[0][1].append(pc)
        else:
            speeds.append((vk, [pc]))
    try:
        for vk, pc in speeds:
            env = friction_envelope(vehicle if vehicle is not None else {}, vk / 3.6)
            color = cmap(norm(vk))
            (ln,) = ax.plot(env["a_y"] / g0, env["a_x"] / g0, color=color, lw=1.8, zorder=2,
                            path_effects=[pe.Stroke(linewidth=2.8, foreground="0.2"), pe.Normal()],
                            label=f"envelope at {vk:.0f} km/h "
                                  f"({', '.join(f'{p:g}th' for p in pc)} percentile): "
                                  f"a_y <= {env['ay_max'] / g0:.2f} g, "
                                  f"a_x {env['ax_brake'] / g0:.2f}.."
                                  f"{env['ax_traction'] / g0:.2f} g (braking: "
                                  f"{env['brake_limit']}, traction: "
                                  f"{env['traction_limit']})")
            handles.append(ln)
            ry = max(ry, env["ay_max"] / g0)
            x_lo, x_hi = min(x_lo, env["ax_brake"] / g0), max(x_hi, env["ax_traction"] / g0)
        title = "friction envelope: " + ENVELOPE_NOTE
    except KeyError as exc:
        title = (f"no friction envelope: the vehicle parameter {exc.args[0]!r} is missing "
                 "(results.xlsx, sheet 'vehicle')")
    ax.set_xlabel("lateral a_y [g] (+ left)")
    ax.set_ylabel("longitudinal a_x [g]")
    pad = 0.08 * max(ry, x_hi - x_lo, 0.1)
    ax.set_xlim(-ry - pad, ry + pad)
    ax.set_ylim(min(x_lo, 0.0) - pad, max(x_hi, 0.0) + pad)
    ax.set_aspect("equal")      # 1 g is as long on both axes
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8,
              title=title, title_fontsize=8, framealpha=0.9, borderaxespad=4.5)
    _title(ax, summary, "GG diagram" + _window_text(win))
    return fig


def figure_vertical_loads(df, summary, vehicle=None, s_range=None):
    """The four vertical loads f_ijz [kN] (i axle 1 front, 2 rear; j side 1 left, 2 right)
    (``s_range``: a window [m] of ``s``)."""
    plt = _plt()
    df, win = in_window(df, s_range)
    s = _s(df)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name, color in (("f_11z", "tab:blue"), ("f_12z", "tab:cyan"), ("f_21z", "tab:red"),
                        ("f_22z", "tab:orange")):
        ax.plot(s, df[name] / 1e3, color=color, label=name)
    if vehicle and "fz_min" in vehicle:
        ax.axhline(float(vehicle["fz_min"]) / 1e3, color="0.5", ls=":", lw=0.8, label="f_z,min")
    ax.set_ylabel("vertical load [kN]")
    ax.set_xlabel("s [m]")
    _xlim(ax, win)
    _legend_right(ax)
    _title(ax, summary, "Vertical loads" + _window_text(win))
    return fig


def figure_sensitivities(df, summary, vehicle=None, n: int = 20, s_range=None):
    """Tornado chart of the lap-time sensitivities: the change of the lap time for +1 % of
    each parameter [s] (the summary's ``sensitivities``, :mod:`pyomo_lap.post.sensitivities`),
    the ``n`` largest in magnitude, largest on top; red slows the car down, green speeds it
    up. ``friction_scale`` is the track's grip (both friction coefficients scaled).
    ``s_range`` is accepted and ignored (the sensitivities are those of the whole run).

    Raises
    ------
    ValueError
        The summary has no sensitivities (solve with ``--sensitivities``).
    """
    records = summary.get("sensitivities")
    if not records:
        raise ValueError("the results have no sensitivities: solve with --sensitivities "
                         "(solve_sector(..., sensitivities=True))")
    tab = pd.DataFrame(records)
    tab = tab.reindex(tab["dT_1pct"].abs().sort_values(ascending=True).index).tail(n)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(tab) + 1.6))
    vals = 1e3 * tab["dT_1pct"].to_numpy()
    colors = ["tab:red" if v > 0 else "tab:green" for v in vals]
    ax.barh(range(len(tab)), vals, color=colors)
    ax.set_yticks(range(len(tab)))
    ax.set_yticklabels([f"{r.parameter} ({r.value:g} {r.unit})" for r in tab.itertuples()],
                       fontsize=8)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_xlabel("change of the lap time for +1 % of the parameter [ms]")
    ax.grid(axis="x", alpha=0.3)
    _title(ax, summary, "lap-time sensitivities (from the multipliers)")
    return fig


FIGURES = {
    "track_map": figure_track_map,
    "racing_line": figure_racing_line,
    "elevation": figure_elevation,
    "speed": figure_speed,
    "controls": figure_controls,
    "attitudes": figure_attitudes,
    "power": figure_power,
    "gg": figure_gg,
    "vertical_loads": figure_vertical_loads,
    "sensitivities": figure_sensitivities,
}
"""Figure name -> function ``f(df, summary, vehicle, s_range=None) -> matplotlib Figure``
(``s_range``: a window [m] of track coordinate ``s``, :func:`parse_range`)."""


def read_vehicle_sheet(results_dir) -> dict:
    """Vehicle parameters from the ``vehicle`` sheet of ``results.xlsx`` (empty if absent)."""
    path = Path(results_dir) / "results.xlsx"
    if not path.exists():
        return {}
    try:
        sheet = pd.read_excel(path, sheet_name="vehicle")
    except ValueError:   # no such sheet
        return {}
    from ..vehicle.schema import FIELD_OF_KEY
    # the sheet names the parameters by their dotted names (mass.total); the figures read the
    # fields (m), as VehicleParameters has them
    return {FIELD_OF_KEY.get(str(k), str(k)): v for k, v in zip(sheet["parameter"], sheet["value"])}


def read_vehicle(results_dir, summary: Optional[dict] = None) -> dict:
    """The vehicle parameters of a run: the ``vehicle`` sheet of ``results.xlsx``; without
    it, the run's vehicle file (``summary["vehicle_file"]``) if its parameters still have the
    SHA-256 the summary recorded (``vehicle_parameters_sha256``); else empty."""
    vehicle = read_vehicle_sheet(results_dir)
    if vehicle or not summary or not summary.get("vehicle_file"):
        return vehicle
    import hashlib
    import json
    from ..vehicle.car import load_vehicle
    try:
        params = load_vehicle(summary["vehicle_file"]).as_dict()
    except (ValueError, OSError):
        return {}
    sha = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    return params if sha == summary.get("vehicle_parameters_sha256") else {}


def plot_results(results_dir, out_dir=None, formats: Sequence[str] = ("png",),
                 figures: Optional[Sequence[str]] = None, reference_dir=None, dpi: int = 120,
                 echo=None, s_range=None) -> list:
    """Write the figures of a results folder.

    Parameters
    ----------
    results_dir : str or Path
        A folder written by :func:`pyomo_lap.post.results.write_results`.
    out_dir : str or Path, optional
        Where to write (default ``<results_dir>/plots``). Figures written inside
        ``results_dir`` are added to its manifest
        (:func:`pyomo_lap.post.results.record_files`): they count as pyomo_lap's, and the
        next solve into the folder replaces them with the rest; meanwhile the folder's lock
        (:class:`pyomo_lap.post.results.OutputLock`) is held. A results folder that is a
        link or holds one is refused (:func:`pyomo_lap.post.links.refuse_links`); every
        file is written to a temporary file and moved onto its name, never through a link.
    formats : sequence of str
        ``"png"`` (one file per figure) and/or ``"pdf"`` (all figures in ``plots.pdf``).
    figures : sequence of str, optional
        Names from :data:`FIGURES` (default: all).
    reference_dir : str or Path, optional
        A second results folder: the speed figure then shows it and the time delta against it
        (instead of the point-mass estimate).
    dpi : int
        PNG resolution.
    echo : callable, optional
        Progress messages (one per file).
    s_range : str or (A, B), optional
        A distance window [m] of track coordinate ``s`` as on the figures' horizontal axes
        (``s`` of the run's first point plus ``s_sector``): ``"1200:1800"``, ``":800"``,
        ``"1200:"`` or ``(1200, None)`` (:func:`parse_range`). Every distance-based figure
        shows the window only, the GG diagram its points, the track map highlights it.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    FileNotFoundError
        ``results_dir`` is not a results folder.
    ValueError
        Unknown figure name or format; a bad window or one not within the run (checked
        before anything is drawn or written); another run is writing into ``results_dir``
        (:class:`pyomo_lap.post.results.OutputBusyError`); figures to be written into
        ``results_dir``, which is a link or holds one
        (:class:`pyomo_lap.post.results.FolderNotReplaceableError`, nothing written).
    """
    echo = echo or (lambda *_: None)
    results_dir = Path(results_dir)
    formats = tuple(formats)
    bad = [f for f in formats if f not in ("png", "pdf")]
    if bad or not formats:
        raise ValueError(f"formats = {formats!r}: expected 'png' and/or 'pdf'")
    names = list(FIGURES) if figures is None else list(figures)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}: expected some of {list(FIGURES)}")
    parse_range(s_range, "s_range" if not isinstance(s_range, str) else "--range")
    df = read_trajectory(results_dir)
    summary = read_summary(results_dir)
    win = resolve_range(df, s_range, "s_range" if not isinstance(s_range, str) else "--range")
    if figures is None and not summary.get("sensitivities"):
        names.remove("sensitivities")     # only for a run with --sensitivities
    vehicle = read_vehicle(results_dir, summary)
    ref = read_trajectory(reference_dir) if reference_dir is not None else None
    out = Path(out_dir) if out_dir is not None else results_dir / "plots"
    from .links import refuse_links
    from .results import output_lock, record_files
    inside = out_dir is None or _within(out, results_dir) or _within_by_name(out, results_dir)
    lock = output_lock(results_dir, "plot").acquire() if inside else None
    written = []
    try:
        if inside:           # no figure is written through a link out of the results folder
            refuse_links(results_dir, f"results folder {str(results_dir)!r}")
        out.mkdir(parents=True, exist_ok=True)
        _draw(out, names, formats, df, summary, vehicle, ref, reference_dir, win, dpi, echo,
              written)
    finally:
        try:
            if inside:       # also what was written before an error: pyomo_lap's files
                record_files(results_dir, written, by="plot")
        finally:
            if lock is not None:
                lock.release()
    return written


def _within_by_name(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it by its name, links not followed
    (``RESULTS/plots`` is inside ``RESULTS`` even where ``plots`` is a link out of it)."""
    path = Path(os.path.abspath(Path(path).expanduser()))
    folder = Path(os.path.abspath(Path(folder).expanduser()))
    return path == folder or folder in path.parents


def _draw(out: Path, names, formats, df, summary, vehicle, ref, reference_dir, win, dpi,
          echo, written: list) -> None:
    """The figures ``names`` of :func:`plot_results` into ``out``; each file is appended to
    ``written`` once it is there (``plots.pdf`` once complete, at the end). Every file is
    written to a temporary file, then moved onto its name (:func:`_write_replacing`): never
    through a link, and never left half-written."""
    from .results import _replacing, _write_replacing
    plt = _plt()
    with contextlib.ExitStack() as stack:    # leaving it: plots.pdf closed, then moved in
        pdf = None
        if "pdf" in formats:
            from matplotlib.backends.backend_pdf import PdfPages
            pdf = stack.enter_context(PdfPages(stack.enter_context(_replacing(out / "plots.pdf"))))
        for name in names:
            if name == "speed" and ref is not None:
                fig = figure_speed(df, summary, vehicle, reference=ref,
                                   reference_label=_literal(Path(reference_dir).name),
                                   s_range=win)
            else:
                fig = FIGURES[name](df, summary, vehicle, s_range=win)
            fig.tight_layout()
            if "png" in formats:
                path = _write_replacing(out / f"{name}.png", lambda tmp: fig.savefig(
                    tmp, format="png", dpi=dpi, bbox_inches="tight"))   # legends outside the axes
                written.append(path)
                echo(f"  wrote {path}")
            if pdf is not None:
                pdf.savefig(fig, bbox_inches="tight")
            plt.close(fig)
    if pdf is not None:
        written.append(out / "plots.pdf")
        echo(f"  wrote {out / 'plots.pdf'}")


# --------------------------------------------------------------------------------------------
# comparing two runs (the numbers: pyomo_lap.post.compare)
# --------------------------------------------------------------------------------------------

def figure_compare(delta: pd.DataFrame, label_a: str = "A", label_b: str = "B"):
    """Speed of both runs, time delta and lateral offsets along the track (the labels are
    drawn as literal text, :func:`_literal`)."""
    plt = _plt()
    label_a, label_b = _literal(label_a), _literal(label_b)
    s = delta["s [m]"]
    fig, axs = plt.subplots(3, 1, figsize=(10, 8), sharex=True,
                            gridspec_kw={"height_ratios": [2, 1.3, 1]})
    axs[0].plot(s, delta["speed_A [km/h]"], color="tab:blue", label=label_a)
    axs[0].plot(s, delta["speed_B [km/h]"], color="tab:orange", label=label_b)
    axs[0].set_ylabel("speed [km/h]")
    _legend_right(axs[0])
    axs[1].plot(s, delta["delta_t [s]"], color="tab:purple")
    axs[1].axhline(0.0, color="0.6", lw=0.8)
    axs[1].set_ylabel(f"t({label_b}) - t({label_a}) [s]")
    axs[2].plot(s, delta["q2_A [m]"], color="tab:blue")
    axs[2].plot(s, delta["q2_B [m]"], color="tab:orange")
    axs[2].set_ylabel("q2 [m]")
    axs[2].set_xlabel("s [m]")
    final = float(delta["delta_t [s]"].iloc[-1])
    axs[0].set_title(f"{label_b} against {label_a}: {final:+.3f} s over "
                     f"{float(s.iloc[0]):.0f}-{float(s.iloc[-1]):.0f} m (> 0: {label_b} is behind)",
                     fontsize=10)
    fig.tight_layout()
    return fig


def compare_runs(dir_a, dir_b, out_dir=None, n_sectors: int = 3, formats=("png",),
                 echo=None) -> dict:
    """Compare two results folders and write ``compare.csv``, ``compare_sectors.csv`` and
    ``compare.png`` (and ``compare.pdf`` on request).

    Parameters
    ----------
    dir_a, dir_b : str or Path
        Results folders (A is the reference).
    out_dir : str or Path, optional
        Where to write: a folder of its own, neither run's folder nor inside one, nor another
        results folder (default ``compare_<name of A>_vs_<name of B>`` next to ``dir_b``).
    n_sectors : int
        Equal parts of the overlap timed in the sector table.
    formats : sequence of str
        ``"png"`` and/or ``"pdf"``.
    echo : callable, optional
        Progress messages.

    Returns
    -------
    dict
        ``delta`` (DataFrame of :func:`delta_along_track`), ``sectors`` (DataFrame of
        :func:`sector_deltas`), ``channels`` (:func:`channel_differences`: attitudes, loads,
        speed, line), ``runs`` (:func:`run_statistics`: model, lap time, NLP size,
        iterations, times), ``corners`` (:func:`pyomo_lap.post.corners.corner_deltas`: time
        and minimum speed in each corner both runs hold), ``delta_t_s`` (final delta),
        ``files`` (paths written: ``compare.csv``, ``compare_sectors.csv``,
        ``compare_channels.csv``, ``compare_runs.csv``, ``compare_corners.csv`` when there
        are corners, the figures).

    Raises
    ------
    FileNotFoundError
        A folder is not a results folder.
    ValueError
        The runs are on different tracks or do not overlap; bad ``formats``; ``out_dir`` is
        a run's folder, inside one, or a results folder (checked before anything is read).
    """
    echo = echo or (lambda *_: None)
    formats = _check_formats(formats)
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    out = _out_folder(out_dir, [dir_a, dir_b], f"compare_{dir_a.name}_vs_{dir_b.name}")
    sum_a, sum_b = read_summary(dir_a), read_summary(dir_b)
    if sum_a.get("track") != sum_b.get("track"):
        raise ValueError(f"the runs are on different tracks: {sum_a.get('track')!r} ({dir_a}) and "
                         f"{sum_b.get('track')!r} ({dir_b})")
    delta = delta_along_track(read_trajectory(dir_a), read_trajectory(dir_b))
    sectors = sector_deltas(delta, n_sectors)
    channels = channel_differences(delta)
    runs = run_statistics(sum_a, sum_b)
    from .corners import corner_deltas, records_table
    corners = corner_deltas(records_table(sum_a.get("corners")),
                            records_table(sum_b.get("corners")))
    fig = figure_compare(delta, dir_a.name, dir_b.name)
    tables = {"compare.csv": delta, "compare_sectors.csv": sectors,
              "compare_channels.csv": channels, "compare_runs.csv": runs}
    if len(corners):
        tables["compare_corners.csv"] = corners
    files = _write_comparison(out, tables, fig, "compare", formats, echo)
    return {"delta": delta, "sectors": sectors, "channels": channels, "runs": runs,
            "corners": corners, "delta_t_s": float(delta["delta_t [s]"].iloc[-1]),
            "files": files}


# ---------------------------------------------------------------------------------------
# sweeps (pyomo_lap.sweep)
# ---------------------------------------------------------------------------------------
def _swept(table: pd.DataFrame) -> list:
    """The swept vehicle parameters of a sweep table (``section.key`` columns) that vary."""
    from ..vehicle.schema import SECTIONS
    return [c for c in table.columns if "." in c and c.split(".")[0] in SECTIONS
            and table[c].nunique(dropna=True) > 1]


def figure_sweep_parameter(table: pd.DataFrame, parameter: str):
    """Lap time of the solved cases against one swept parameter; one line per combination of
    the other swept values (and track, vehicle) when there are several."""
    plt = _plt()
    solved = table[table["status"] == "solved"]
    others = [c for c in _swept(table) if c != parameter]
    others += [c for c in ("track", "vehicle") if c in table and table[c].nunique() > 1]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = list(solved.groupby(others)) if others else [((), solved)]
    for key, g in groups[:12]:
        g = g.sort_values(parameter)
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{o}={_short(k)}" for o, k in zip(others, key)) or None
        ax.plot(g[parameter], g["lap_time_s"], "o-", ms=4, label=label)
    if len(groups) > 12:
        rest = pd.concat([g for _, g in groups[12:]])
        ax.plot(rest[parameter], rest["lap_time_s"], ".", color="0.6", label="others")
    bad = table[(table["status"] != "solved") & table[parameter].notna()]
    for x in bad[parameter]:
        ax.axvline(x, color="tab:red", lw=0.8, ls=":")
    ax.set_xlabel(_parameter_label(parameter))
    ax.set_ylabel("lap time [s]")
    ax.set_title(f"lap time against {parameter}" + (f" ({len(bad)} cases not solved: dotted)"
                                                     if len(bad) else ""), fontsize=10)
    ax.grid(alpha=0.3)
    if others:
        _legend_right(ax, fontsize=7)
    fig.tight_layout()
    return fig


def _parameter_label(name: str) -> str:
    """``'mass.total'`` -> ``'mass.total [kg]'`` (the unit from the vehicle schema)."""
    from ..vehicle.schema import SECTIONS, VehicleParameters
    sec, _, key = name.partition(".")
    info = VehicleParameters.model_fields.get(SECTIONS.get(sec, {}).get(key, ""))
    unit = ((info.json_schema_extra or {}).get("unit") if info is not None else None) or ""
    return f"{name} [{unit}]" if unit else name


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return Path(str(v)).stem if len(str(v)) > 30 else str(v)


def figure_sweep_heatmap(table: pd.DataFrame, x: str, y: str):
    """Lap time of the solved cases over two swept parameters (mean over any other axis;
    cases not solved are blank)."""
    plt = _plt()
    solved = table[table["status"] == "solved"]
    grid = solved.pivot_table(index=y, columns=x, values="lap_time_s", aggfunc="mean")
    grid = grid.reindex(index=sorted(table[y].dropna().unique()),
                        columns=sorted(table[x].dropna().unique()))
    fig, ax = plt.subplots(figsize=(7, 5))
    im = ax.imshow(grid.to_numpy(dtype=float), origin="lower", aspect="auto", cmap="viridis_r")
    ax.set_xticks(range(grid.shape[1]), [f"{v:g}" for v in grid.columns], rotation=45)
    ax.set_yticks(range(grid.shape[0]), [f"{v:g}" for v in grid.index])
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid.iat[i, j]
            if np.isfinite(v) and grid.size <= 144:
                ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=7, color="k",
                        bbox={"facecolor": "w", "alpha": 0.6, "lw": 0, "pad": 1})
    ax.set_xlabel(_parameter_label(x))
    ax.set_ylabel(_parameter_label(y))
    fig.colorbar(im, ax=ax, label="lap time [s]")
    ax.set_title(f"lap time over {x} and {y}", fontsize=10)
    fig.tight_layout()
    return fig


def sweep_plots(table: pd.DataFrame, out_dir) -> list:
    """Write the sweep's figures to ``out_dir``: ``lap_time_vs_<parameter>.png`` for each
    swept parameter and, for two or more, ``lap_time_heatmap.png`` over the first two.
    Returns the paths written."""
    plt = _plt()
    out_dir = Path(out_dir)
    files = []
    if "status" not in table or not (table["status"] == "solved").any():
        return files
    swept = _swept(table)
    for p in swept:
        fig = figure_sweep_parameter(table, p)
        files.append(out_dir / f"lap_time_vs_{p}.png")
        fig.savefig(files[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    if len(swept) >= 2:
        fig = figure_sweep_heatmap(table, swept[0], swept[1])
        files.append(out_dir / "lap_time_heatmap.png")
        fig.savefig(files[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return files
