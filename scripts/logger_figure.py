"""The figure of docs/logger.md: the logger channels of a solved job over the distance.

Usage::

    python scripts/logger_figure.py [RESULTS_FOLDER] [--out docs/figures/logger_channels.png]

Without a folder it solves the default job (the FSAE car, Nordschleife 0-2000 m, about 10 s)
into a temporary folder. Reads the channels back with pyomo_lap.results.table.read_trajectory.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", default=None, help="a results folder (default: solve)")
    ap.add_argument("--out", default="docs/figures/logger_channels.png")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pyomo_lap import solve_sector
    from pyomo_lap.results.table import read_trajectory
    folder = args.results
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="logger_fig_")) / "job"
        solve_sector(out_dir=folder, echo=lambda *a, **k: None)
    df = read_trajectory(folder)
    s = df["s"].to_numpy()
    rows = [("speed_kmh", "speed [km/h]", "k"), (("throttle", "brake"), "[%]", ("tab:green", "tab:red")),
            ("steering_wheel_angle", "steering wheel [deg]", "tab:blue"),
            ("yaw_rate", "yaw rate [deg/s]", "tab:purple"),
            (("a_x_g", "a_y_g"), "acceleration [g]", ("tab:orange", "tab:cyan"))]
    rows = [r for r in rows if all(c in df for c in ((r[0],) if isinstance(r[0], str) else r[0]))]
    fig, axes = plt.subplots(len(rows), 1, sharex=True, figsize=(9, 1.8 * len(rows)))
    for ax, (cols, label, colours) in zip(axes, rows):
        cols = (cols,) if isinstance(cols, str) else cols
        colours = (colours,) if isinstance(colours, str) else colours
        for c, colour in zip(cols, colours):
            ax.plot(s, df[c], color=colour, lw=1.0, label=c)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if len(cols) > 1:
            ax.legend(loc="upper right", fontsize=8, ncol=len(cols))
    axes[-1].set_xlabel("s [m]")
    fig.suptitle("Logger channels, FSAE car, Nordschleife 0-2000 m")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
