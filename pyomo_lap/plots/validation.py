"""The figures of ``pyomo-lap validate`` (:func:`pyomo_lap.api.validate.validate_results`): the
scaled collocation defect of every element with the thresholds (:func:`plot_defects`), and the
replay with the path-following driver against the optimum (:func:`plot_replay`: the model's
lateral offset, speed and steering, ``ModelDynamics.path``), each written through
:class:`pyomo_lap.folders.writer.ResultsWriter` (never through a link, never half-written).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..analysis.compare import _plt
from ..verify.quality import rms_curvature
from ..verify.verdict import (
    DEFECT_MAX,
    DEFECT_P95,
    REPLAY_LATERAL,
    REPLAY_STEERING,
    REPLAY_TIME,
)
from .base import _literal

__all__ = ["plot_defects", "plot_replay"]


def plot_defects(d, start: float, writer, name: str, title: str) -> Path:
    """The scaled defect of every element along the track with the thresholds
    (:data:`pyomo_lap.verify.verdict.DEFECT_MAX`, :data:`pyomo_lap.verify.verdict.DEFECT_P95`).

    Parameters
    ----------
    d : DefectReport
        :func:`pyomo_lap.verify.defects.collocation_defects`.
    start : float
        The sector's start on the track [m].
    writer : ResultsWriter
        The claimed writer of the folder the figure goes into
        (:class:`pyomo_lap.folders.writer.ResultsWriter`).
    name : str
        The PNG file's name in it.
    title : str
        The run's name (drawn literally).

    Returns
    -------
    Path
        The file written (renamed into place at the writer's commit).
    """
    plt = _plt()
    el = d.elements
    edges = start + np.r_[el["s_start"].to_numpy(float)[:1], el["s_end"].to_numpy(float)]
    eps = el["eps"].to_numpy(float)
    fig, ax = plt.subplots(figsize=(11, 4.2))
    ax.stairs(np.where(np.isfinite(eps), eps, np.nan), edges, color="C0", lw=1.2,
              label="scaled defect per element")
    ax.set_yscale("log")
    ax.axhline(DEFECT_MAX[0], color="orange", ls="--", lw=1, label=f"defect_max: warn > {DEFECT_MAX[0]:g}")
    ax.axhline(DEFECT_MAX[1], color="red", ls="--", lw=1, label=f"defect_max: fail > {DEFECT_MAX[1]:g}")
    p95 = float(np.nanpercentile(eps, 95))
    ax.axhline(p95, color="C0", ls=":", lw=1, label=f"95th percentile {p95:.3g} "
               f"(warn > {DEFECT_P95[0]:g}, fail > {DEFECT_P95[1]:g})")
    if np.any(np.isfinite(eps)):
        k = int(np.nanargmax(eps))
        ax.annotate(f"{eps[k]:.3g} ({el['worst'].iloc[k]})",
                    (0.5 * (edges[k] + edges[k + 1]), eps[k]), textcoords="offset points",
                    xytext=(6, 4), fontsize=8)
    lo = np.nanmin(eps[eps > 0]) if np.any(eps > 0) else 1e-6
    ax.set_ylim(max(lo / 3, 1e-8), max(DEFECT_MAX[1], np.nanmax(eps)) * 3)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("track coordinate s [m]")
    ax.set_ylabel("scaled defect eps [-]")
    ax.set_title(f"{_literal(title)}: collocation defect per element (max over the states of "
                 "integrated |residual| / (1 + max|state|))", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    try:
        return writer.write(name, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    finally:
        plt.close(fig)


def _steering_panels(axes, rf, df, s_opt, dynamics, replayed) -> None:
    """The steer angle of the optimum and of the replay (``replayed(ax)`` draws the replay),
    and the steering correction with the thresholds in % of the model's steering scale."""
    c, role = rf.comparison, dynamics.path
    ax = axes[0]
    ax.plot(s_opt, np.degrees(df[role.steer]), color="k", lw=1.4, label="optimum")
    replayed(ax)
    ax.set_ylabel(f"{role.steer}, steer angle [deg]")
    ax.set_xlabel("track coordinate s [m]")
    ax = axes[1]
    ax.plot(c["s"], np.degrees(c["steer_correction"]), color="C1", lw=1)
    scale = math.degrees(dynamics.steering_scale(rms_curvature(df)))
    unit = dynamics.steering[1].lstrip("% ")
    for pc, col, lab in ((REPLAY_STEERING[0], "orange", "warn"), (REPLAY_STEERING[1], "red", "fail")):
        v = pc * scale / 100.0
        ax.axhline(v, color=col, ls="--", lw=0.8, label=f"{lab}: {v:.3g} deg ({pc:g} % of {unit})")
        ax.axhline(-v, color=col, ls="--", lw=0.8)
    lim = max(3 * math.degrees(rf.steer_correction_max), REPLAY_STEERING[0] * scale / 100.0 * 1.5)
    ax.set_ylim(-lim, lim)
    ax.set_ylabel("steering correction [deg]")
    ax.set_xlabel("track coordinate s [m]")
    ax.legend(fontsize=7, loc="upper right")


def plot_replay(rf, df, start: float, writer, name: str, title: str, dynamics) -> Path:
    """The replay with the path-following driver against the optimum, along the track: the
    model's lateral offset, speed and steer angle (``dynamics.path``), and their differences
    with the thresholds (:data:`pyomo_lap.verify.verdict.REPLAY_LATERAL`, the steering
    correction's :data:`pyomo_lap.verify.verdict.REPLAY_STEERING` in % of the model's
    steering scale, ``dynamics.steering_scale``).

    Parameters
    ----------
    rf : SegmentReplays or ReplayReport
        :func:`pyomo_lap.verify.replay.replay_segments` (or :func:`pyomo_lap.verify.replay.replay`)
        with feedback.
    df : DataFrame
        The trajectory table.
    start : float
        The sector's start on the track [m].
    writer : ResultsWriter
        The claimed writer of the folder the figure goes into
        (:class:`pyomo_lap.folders.writer.ResultsWriter`).
    name : str
        The PNG file's name in it.
    title : str
        The run's name (drawn literally).
    dynamics : ModelDynamics
        The model's equations (its names and roles).

    Returns
    -------
    Path
        The file written (renamed into place at the writer's commit).
    """
    plt = _plt()
    c = rf.comparison
    role = dynamics.path
    sims = [r.simulation for r in rf.reports] if hasattr(rf, "reports") else [rf.simulation]
    names, controls = list(dynamics.names), list(dynamics.controls)
    lat, spd, steer = names.index(role.lateral), names.index(role.speed), controls.index(role.steer)
    s_opt = start + df["s_sector"].to_numpy(float)
    width = np.interp(c["s"].to_numpy(float), s_opt,
                      df["width_left"].to_numpy(float) + df["width_right"].to_numpy(float))

    def replayed(ax, values, scale=1.0, label="replay"):
        for k, sim in enumerate(sims):      # each segment's simulation
            ax.plot(sim.x[:, 0], scale * values(sim), color="C1", lw=1.0, ls="--",
                    label=label if k == 0 else None)
    fig, axes = plt.subplots(3, 2, figsize=(13, 8.5), sharex=True,
                             gridspec_kw={"width_ratios": [1.6, 1]})
    # lateral position
    ax = axes[0, 0]
    ax.plot(s_opt, df[role.lateral], color="k", lw=1.4, label="optimum")
    replayed(ax, lambda sim: sim.x[:, lat], label="replay (steering feedback)")
    ax.set_ylabel(f"{role.lateral}, lateral position [m]")
    ax.legend(fontsize=8, loc="best")
    ax = axes[0, 1]
    ax.plot(c["s"], 100 * c[f"{role.lateral}_dev"], color="C1", lw=1)
    for frac, col, lab in ((REPLAY_LATERAL[0], "orange", "warn"), (REPLAY_LATERAL[1], "red", "fail")):
        ax.plot(c["s"], frac * width, color=col, ls="--", lw=0.8, label=f"{lab}: {frac:g} % of width")
        ax.plot(c["s"], -frac * width, color=col, ls="--", lw=0.8)
    lim = max(3 * float(np.nanmax(np.abs(100 * c[f"{role.lateral}_dev"]))),
              REPLAY_LATERAL[0] * float(np.min(width)) * 1.5)
    ax.set_ylim(-lim, lim)
    ax.set_ylabel("replay - optimum [cm]")
    ax.legend(fontsize=7, loc="upper right")
    # speed
    ax = axes[1, 0]
    ax.plot(s_opt, 3.6 * df[role.speed], color="k", lw=1.4, label="optimum")
    replayed(ax, lambda sim: sim.x[:, spd], 3.6)
    ax.set_ylabel(f"{role.speed}, speed [km/h]")
    ax = axes[1, 1]
    ax.plot(c["s"], 3.6 * c[f"{role.speed}_dev"], color="C1", lw=1)
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set_ylabel("replay - optimum [km/h]")
    dt = rf.time_dev_s if hasattr(rf, "time_dev_s") else float(c["t_dev"].iloc[-1])
    ax.set_title(f"time {dt * 1e3:+.1f} ms "
                 f"(warn > {REPLAY_TIME[0]:g} %, fail > {REPLAY_TIME[1]:g} % of the sector time)",
                 fontsize=8)
    _steering_panels(axes[2], rf, df, s_opt, dynamics, lambda ax: replayed(
        ax, lambda sim: sim.u[:, steer], 180.0 / math.pi, label="replay (with correction)"))
    for a in axes.ravel():
        a.grid(True, alpha=0.3)
    axes[0, 0].set_xlim(s_opt[0], s_opt[-1])
    fig.suptitle(f"{_literal(title)}: replay with path-following steering against the optimum",
                 fontsize=11)
    fig.tight_layout()
    try:
        return writer.write(name, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    finally:
        plt.close(fig)
