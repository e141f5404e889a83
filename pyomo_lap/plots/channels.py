"""The figures of a run's channels along the track (:mod:`pyomo_lap.plots.figures`): speed, controls,
attitudes, power, the GG diagram with the friction envelope (:mod:`pyomo_lap.vehicle.envelope`),
the vertical loads and the lap-time sensitivities."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..analysis.compare import _plt, delta_along_track
from ..results.summary import as_summary
from ..vehicle.envelope import ENVELOPE_NOTE, friction_envelope
from .base import (
    _colorbar_beside,
    _legend_right,
    _s,
    _title,
    _window_text,
    _xlim,
    in_window,
)

pe, pe_available = attempt_import("matplotlib.patheffects")
mcolors, mcolors_available = attempt_import("matplotlib.colors")
mlines, mlines_available = attempt_import("matplotlib.lines")

__all__ = ["figure_speed", "figure_controls", "figure_attitudes", "figure_power", "figure_gg", "figure_vertical_loads", "figure_sensitivities"]


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
    summary : Summary or dict
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
    df, win = in_window(df, s_range)
    if win is not None:     # only the points in the window (no neighbour outside it)
        s = _s(df)
        df = df[(s >= win[0] - 1e-9) & (s <= win[1] + 1e-9)]
    if isinstance(vehicle, dict) or vehicle is None:
        g0 = float(vehicle["gravity"]) if vehicle and "gravity" in vehicle else 9.81
    else:
        g0 = float(getattr(vehicle, "gravity", 9.81))
    v = df["speed_kmh"].to_numpy(dtype=float)
    norm = mcolors.Normalize(vmin=float(v.min()), vmax=float(max(v.max(), v.min() + 1e-6)))
    cmap = plt.get_cmap("viridis")
    fig, ax = plt.subplots(figsize=(7, 7.6))
    sc = ax.scatter(df["a_y"] / g0, df["a_x"] / g0, c=v, cmap=cmap, norm=norm, s=10, zorder=3)
    _colorbar_beside(fig, ax, sc, "speed [km/h]")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.axvline(0.0, color="0.6", lw=0.8)
    ry = float(np.abs(df["a_y"]).max()) / g0                  # the extent of points and envelopes
    x_lo, x_hi = float(df["a_x"].min()) / g0, float(df["a_x"].max()) / g0
    handles = [mlines.Line2D([], [], marker="o", ls="none", color=cmap(0.5), ms=4,
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
    each parameter [s] (the summary's ``sensitivities``, :mod:`pyomo_lap.analysis.sensitivities`),
    the ``n`` largest in magnitude, largest on top; red slows the car down, green speeds it
    up. ``friction_scale`` is the track's grip (both friction coefficients scaled).
    ``s_range`` is accepted and ignored (the sensitivities are those of the whole run).

    Raises
    ------
    ValueError
        The summary has no sensitivities (solve with ``--sensitivities``).
    """
    records = as_summary(summary).sensitivities
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
