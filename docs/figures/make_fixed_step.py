"""docs/figures/fixed_step.png: the speed around a corner as the solver's mesh rows and as the
rows every metre (`pyomo-lap solve --every 1`), read from the collocation polynomials.

Run from the repository:  python docs/figures/make_fixed_step.py   (a 3 s solve)
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pyomo_lap import solve_sector  # noqa: E402
from pyomo_lap.results.fixed_step import model_fixed_step  # noqa: E402

START, LENGTH = 1200.0, 160.0      # Nordschleife: a straight, then a corner at the limit


def main(out=Path(__file__).with_name("fixed_step.png")):
    m, rep, df, _ = solve_sector(start=START, length=LENGTH, out_dir=None, echo=lambda *a: None)
    assert rep.ok, rep.termination_condition
    every = model_fixed_step(m, df, 1.0)
    fine = model_fixed_step(m, df, 0.05)       # the polynomials themselves
    bounds = START + np.array(list(m.s.get_finite_elements()))
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(8, 5.6), dpi=120, sharex=True,
                                 gridspec_kw={"height_ratios": [2, 1]})
    for b in bounds:
        ax.axvline(b, color="0.88", lw=0.8, zorder=0)
        bx.axvline(b, color="0.88", lw=0.8, zorder=0)
    ax.plot(fine["s"], fine["speed_kmh"], color="C0", lw=1.0,
            label="collocation polynomials (per element)")
    ax.plot(df["s"], df["speed_kmh"], "--", color="C3", lw=0.9,
            label="straight lines between the mesh rows")
    ax.plot(df["s"], df["speed_kmh"], "o", color="C3", ms=4, label=f"mesh rows ({len(df)})")
    ax.plot(every["s"], every["speed_kmh"], ".", color="C0", ms=2.5,
            label=f"--every 1: rows every metre ({len(every)})")
    lin = np.interp(fine["s_sector"], df["s_sector"], df["speed_kmh"])
    bx.plot(fine["s"], fine["speed_kmh"] - lin, color="C0", lw=1.0)
    lin1 = np.interp(every["s_sector"], df["s_sector"], df["speed_kmh"])
    bx.plot(every["s"], every["speed_kmh"] - lin1, ".", color="C0", ms=2.5)
    bx.plot(df["s"], 0 * df["s"], "o", color="C3", ms=3)
    bx.set_ylabel("polynomial - straight\nlines [km/h]")
    bx.set_xlabel("track coordinate s [m] (grey: element boundaries)")
    ax.set_ylabel("speed [km/h]")
    ax.set_title("Nordschleife 1200-1360 m, FSAE car: braking into a corner")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(out)
    print(f"written {out}")


if __name__ == "__main__":
    main()
