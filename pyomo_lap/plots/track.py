"""The figures of the track (:mod:`pyomo_lap.plots.figures`): the track map (racing line coloured
by speed, edges, distance markers, start/finish line, direction), the racing line's lateral
offset and the elevation along the sector."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..analysis.compare import _plt
from ..results.summary import as_summary
from .base import (
    _colorbar_beside,
    _legend_right,
    _s,
    _title,
    _window_text,
    _xlim,
    in_window,
)

mcollections, mcollections_available = attempt_import("matplotlib.collections")
mlines, mlines_available = attempt_import("matplotlib.lines")

__all__ = ["figure_track_map", "figure_racing_line", "figure_elevation", "edges_xy", "marker_step", "distance_label"]


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
    summary : Summary or dict
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
    closed = bool(as_summary(summary).periodic)
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
    lc = mcollections.LineCollection(segs, cmap="viridis", linewidths=3.0, zorder=3)
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
    handles, labels = ax.get_legend_handles_labels()
    extra = [(mlines.Line2D([], [], color="tab:red", lw=1.2), f"distance marker, every "
              f"{distance_label(step)} of s"),
             (mlines.Line2D([], [], color="k", marker=r"$\rightarrow$", ms=14, ls="none"),
              "direction of travel")]
    if closed:
        extra.insert(1, (mlines.Line2D([], [], color="k", lw=4), "start/finish line"))
    else:
        extra.insert(1, (mlines.Line2D([], [], color="k", lw=4), "start"))
        extra.insert(2, (mlines.Line2D([], [], color="tab:purple", lw=4), "end"))
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
