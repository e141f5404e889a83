"""Makes docs/figures/corners_monza.png (a bundled circuit with its detected, numbered corners)
and prints the corner counts of every bundled track for docs/corners.md.

    python docs/figures/make_corners.py [TRACK]
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pyomo_lap.track.corners import detect_corners  # noqa: E402
from pyomo_lap.track.loading import available_tracks, load_track  # noqa: E402

HERE = Path(__file__).resolve().parent


def figure(name: str) -> Path:
    tr = load_track(name)
    s = tr.sample_s(2.0)
    P = tr.evaluate(s).position
    fig, ax = plt.subplots(figsize=(8, 6.5))
    ax.plot(P[:, 0], P[:, 1], color="0.75", lw=3, zorder=1)
    corners = detect_corners(tr)
    for c in corners:
        span = (c.s_exit - c.s_entry) % tr.length if tr.closed else c.s_exit - c.s_entry
        cs = c.s_entry + np.linspace(0.0, span, 100)
        Q = tr.evaluate(cs).position
        ax.plot(Q[:, 0], Q[:, 1], color="tab:blue" if c.direction == "left" else "tab:red",
                lw=3, zorder=2)
        tp = tr.evaluate(c.s_apex)
        a, n = tp.position[0], tp.normal[0]
        off = -1 if c.direction == "left" else 1          # the label outside the corner
        ax.annotate(c.name, a[:2], a[:2] + off * 90.0 * n[:2], fontsize=9, ha="center",
                    va="center", arrowprops={"arrowstyle": "-", "color": "0.4", "lw": 0.6})
    p0, t0 = P[0], tr.evaluate(0.0).tangent[0]
    ax.plot(*p0[:2], marker=(3, 0, np.degrees(np.arctan2(t0[1], t0[0])) - 90), ms=12,
            color="k", zorder=3)
    ax.plot([], [], color="tab:blue", lw=3, label="left-hand corner")
    ax.plot([], [], color="tab:red", lw=3, label="right-hand corner")
    ax.plot([], [], "k^", label="start line, driving direction")
    ax.legend(loc="best", fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlabel("x east [m]")
    ax.set_ylabel("y north [m]")
    ax.set_title(f"{name}: {len(corners)} corners found from the curvature "
                 "(pyomo_lap.track.corners, defaults)", fontsize=10)
    out = HERE / f"corners_{name}.png"
    fig.savefig(out, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return out


def counts() -> None:
    print("| track | length [m] | corners | left | right |")
    print("|---|---|---|---|---|")
    for name in available_tracks():
        tr = load_track(name)
        cs = detect_corners(tr)
        left = sum(c.direction == "left" for c in cs)
        print(f"| `{name}` | {tr.length:.0f} | {len(cs)} | {left} | {len(cs) - left} |")


if __name__ == "__main__":
    print(figure(sys.argv[1] if len(sys.argv) > 1 else "monza"))
    counts()
