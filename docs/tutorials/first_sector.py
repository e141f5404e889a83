# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tutorial: a first sector
#
# A 300 m sector of the Nürburgring Nordschleife (a left-right sequence from 1150 m), the
# Formula SAE car of the paper's Table 1, solved with `lap_ipopt`, the default solver: build
# the Pyomo model, start it, solve it, read the channels and plot them. This page is executed
# every time the documentation is built, so what you see below is what this code gives today.
# To run it yourself: `.venv/bin/python docs/tutorials/first_sector.py`, or open it as a
# notebook with [jupytext](https://jupytext.readthedocs.io).
#
# The same in one line of the command line:
# `pyomo-lap solve --start 1150 --length 300 --out first_sector`.

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pyomo.environ as pyo

from pyomo_lap import (build_model, initialize_model, load_track, load_vehicle, solve_model,
                       trajectory_dataframe, write_results)
from pyomo_lap.plots.figures import plot_results

track = load_track("nordschleife")    # a bundled track (pyomo-lap tracks), or a .csv / .json file
car = load_vehicle("fsae")            # a bundled car (pyomo-lap vehicles), or a .toml file
print(f"{track.name}: {track.length:.0f} m, {'closed' if track.closed else 'open'}; "
      f"{car.name}: {car.m:g} kg, {car.P_max / 1e3:g} kW")

# %% [markdown]
# ## Build, start and solve
#
# `build_model` writes the optimal control problem as an ordinary Pyomo model on a pyomo.dae
# `ContinuousSet` in the track coordinate (finite elements of about 10 m here, two Radau
# collocation points each); `initialize_model` puts the quasi-steady point-mass estimate into
# it; `solve_model` solves it with IPOPT through `lap_ipopt`.

# %%
m = build_model(track, car, start=1150.0, length=300.0)
info = initialize_model(m)
report = solve_model(m, solver="lap_ipopt")
print(report.termination_condition, f"after {report.iterations} iterations")
print(f"sector time {pyo.value(m.lap_time):.3f} s "
      f"(the quasi-steady estimate: {info['estimated_time_s']:.3f} s)")

# %% [markdown]
# ## The channels
#
# `trajectory_dataframe` evaluates every channel at every collocation point into a pandas
# DataFrame (`pyomo-lap channels` says what each column is: unit, sign, source). The car's
# speed, its lateral position on the track `q2` (+ left of the centreline) and the steer
# angle `delta`:

# %%
df = trajectory_dataframe(m)
print(df[["s", "speed_kmh", "q2", "delta", "f_11z"]].describe().loc[["min", "max"]].round(3))

fig, ax = plt.subplots(3, 1, sharex=True, figsize=(8, 6))
ax[0].plot(df["s"], df["speed_kmh"])
ax[0].set_ylabel("speed [km/h]")
ax[1].plot(df["s"], df["q2"], label="racing line")
ax[1].plot(df["s"], df["width_left"] - car.width / 2, "k--", lw=0.8, label="track limits")
ax[1].plot(df["s"], -df["width_right"] + car.width / 2, "k--", lw=0.8)
ax[1].set_ylabel("q2 [m]")
ax[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
ax[2].plot(df["s"], df["delta"])
ax[2].set_ylabel("delta [rad]")
ax[2].set_xlabel("s [m]")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Export and the standard figures
#
# `write_results` writes the results folder `pyomo-lap solve` writes (CSV, Parquet, the Excel
# workbook, `summary.json`); `plot_results` draws the figures of `pyomo-lap plot`. Here into a
# temporary folder:

# %%
out = Path(tempfile.mkdtemp()) / "first_sector"
folder = write_results(out, df, {"lap_time_s": pyo.value(m.lap_time),
                                 "termination_condition": report.termination_condition},
                       car.as_dict())
figures = plot_results(folder, figures=["track_map"])
print(sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")))
plt.figure(figsize=(7, 5))
plt.imshow(plt.imread(figures[0]))
plt.axis("off")
plt.show()
