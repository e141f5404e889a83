"""Write the SYNTHETIC example logger files of data/telemetry/ (they are not real logs).

    python data/telemetry/make_examples.py [--run RUN] [--figure docs/figures/telemetry.png]

1. The source: a solved lap (default: the FSAE car's closed lap of dymos's oval,
   ``solve --track data/tracks/dymos_oval_spline.toml --full-lap``, solved here unless --run
   names a results folder), of which ``source_run.csv`` keeps s, t, speed, a_x, a_y.
2. An outing on it (:func:`outing`): the out lap from 60 % of the lap, two flying laps at
   97 % and 98.5 % of the optimum's speed, the in lap to half the lap at 80 %, the speed
   factor changing smoothly over the 40 m after each line; time integrated on a 5 cm grid,
   sampled at 20 Hz; beacon markers at the lines; noise on speed and accelerations (seeded);
   the logged distance stretched (MoTeC's wheel distance 1.5 % long, AiM's GPS distance
   0.8 % short).
3. ``motec_example.csv`` (MoTeC i2's CSV export layout) and ``aim_example.csv`` (AiM
   RaceStudio's) from the same outing, and ``examples.json`` with the script's numbers (lap
   times, markers, stretches) that the tests and README.md quote.
4. With --figure: ``compare RUN --telemetry motec_example.csv``'s figure copied there.

Everything is deterministic given source_run.csv (the tests regenerate the outing from it).
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
G0 = 9.80665                      # [m/s^2] standard gravity
RATE = 20.0                       # [Hz] the logger's sample rate
START, END_LAPS, IN_LAP = 0.6, 3, 0.5     # out lap from 0.6 L, laps to 3 L, in lap to 3.5 L
FACTORS = (0.85, 0.97, 0.985, 0.80)       # speed / the optimum's: out lap, lap 2, lap 3, in lap
RAMP = 40.0                       # [m] the speed factor's change at each line
STRETCH = {"motec": 1.015, "aim": 0.992}  # the logged distance / the distance driven
NOISE = {"speed_kmh": 0.3, "acc_g": 0.02}  # standard deviations


def source_from_run(run: Path) -> pd.DataFrame:
    """The run's s [m] (from 0), t [s], speed [m/s], a_x, a_y [m/s^2]."""
    from pyomo_lap.results.table import read_trajectory
    df = read_trajectory(run)
    return pd.DataFrame({"s [m]": df["s_sector"], "t [s]": df["t"] - df["t"].iloc[0],
                         "speed [m/s]": df["speed"], "a_x [m/s^2]": df["a_x"],
                         "a_y [m/s^2]": df["a_y"]})


def _factor(x: np.ndarray, L: float) -> np.ndarray:
    """The speed factor at outing position x [m] (0 = the lap's start line of lap 1)."""
    edges = [L, 2 * L, 3 * L]
    f = np.full_like(x, FACTORS[0])
    for e, (a, b) in zip(edges, zip(FACTORS[:-1], FACTORS[1:])):
        w = np.clip((x - e) / RAMP, 0.0, 1.0)     # after the line
        f = f + (b - a) * (0.5 - 0.5 * np.cos(np.pi * w))
    return f


def outing(src: pd.DataFrame) -> dict:
    """The synthetic outing on the source lap: 20 Hz samples of time [s], position x [m]
    (driven, from the out lap's start), speed [m/s], a_x, a_y [m/s^2] before noise; the
    beacon markers [s]; each lap's time [s]."""
    s, v0 = src["s [m]"].to_numpy(), src["speed [m/s]"].to_numpy()
    L = float(s[-1])
    x = np.arange(round(START * L / 0.05), round((END_LAPS + IN_LAP) * L / 0.05) + 1) * 0.05
    x = np.union1d(x, [L, 2 * L, 3 * L])
    f = _factor(x, L)
    v = f * np.interp(np.mod(x, L), s, v0)
    t = np.concatenate([[0.0], np.cumsum(0.5 * (1 / v[1:] + 1 / v[:-1]) * np.diff(x))])
    markers = [float(np.interp(k * L, x, t)) for k in (1, 2, 3)]
    ts = np.arange(0.0, t[-1], 1 / RATE)
    xs = np.interp(ts, t, x)
    vs = np.interp(ts, t, v)
    ay = np.interp(np.mod(xs, L), s, src["a_y [m/s^2]"].to_numpy()) * np.interp(xs, x, f) ** 2
    ax = np.gradient(vs, ts)
    edges = [0.0] + markers + [float(ts[-1])]
    return {"t": ts, "x": xs - xs[0], "speed": vs, "a_x": ax, "a_y": ay, "markers": markers,
            "lap_times": [b - a for a, b in zip(edges[:-1], edges[1:])], "L": L}


def _noisy(out: dict) -> dict:
    rng = np.random.default_rng(35)
    n = len(out["t"])
    return {"speed_kmh": 3.6 * out["speed"] + rng.normal(0, NOISE["speed_kmh"], n),
            "ax_g": out["a_x"] / G0 + rng.normal(0, NOISE["acc_g"], n),
            "ay_g": out["a_y"] / G0 + rng.normal(0, NOISE["acc_g"], n)}


def _driver(out: dict) -> dict:
    """Throttle [%], brake [bar], gear and engine speed [rpm]: plausible, from a_x and speed."""
    ax = out["a_x"]
    throttle = np.clip(100 * (ax + 2.0) / 8.0, 0, 100) * (ax > -1.0)
    brake = np.clip(-ax / G0 * 40.0, 0, None) * (ax < -1.0)
    kmh = 3.6 * out["speed"]
    gear = np.clip(np.ceil(kmh / 30.0), 1, 6)
    rpm = 2000.0 + 9000.0 * (kmh - 30.0 * (gear - 1)) / 30.0
    return {"throttle": throttle, "brake": brake, "gear": gear, "rpm": rpm}


def _lap_clock(sec: float) -> str:
    return f"{int(sec // 60)}:{sec % 60:06.3f}"


def _rows(cells_list) -> str:
    return "".join(",".join(f'"{c}"' if c is not None else "" for c in r) + "\n"
                   for r in cells_list)


def write_motec(out: dict, path: Path) -> None:
    """The MoTeC i2 CSV export layout."""
    nz, dr = _noisy(out), _driver(out)
    m = out["markers"]
    head = [["Format", "MoTeC CSV File", None, None, "Workbook", "Synthetic example"],
            ["Venue", "dymos oval (synthetic)", None, None, "Worksheet", "Lap"],
            ["Vehicle", "fsae", None, None, "Vehicle Desc", "SYNTHETIC - not a real log"],
            ["Driver", "pyomo_lap", None, None, "Engine ID", ""],
            ["Device", "ADL3"],
            ["Comment", "made by data/telemetry/make_examples.py", None, None, "Session", "1"],
            ["Log Date", "01/01/2025", None, None, "Origin Time", "0.000", "s"],
            ["Log Time", "10:00:00", None, None, "Start Time", "0.000", "s"],
            ["Sample Rate", f"{RATE:.3f}", "Hz", None, "End Time", f"{out['t'][-1]:.3f}", "s"],
            ["Duration", f"{out['t'][-1]:.3f}", "s", None, "Start Distance", "0", "m"],
            ["Range", "entire outing", None, None, "End Distance",
             f"{STRETCH['motec'] * out['x'][-1]:.0f}", "m"],
            ["Beacon Markers"] + [f"{x:.3f}" for x in m],
            ["Segment Times"] + [_lap_clock(x) for x in out["lap_times"]]]
    names = ["Time", "Distance", "Ground Speed", "G Force Lat", "G Force Long", "Steered Angle",
             "Throttle Pos", "Brake Pressure Front", "Engine RPM", "Gear"]
    units = ["s", "m", "km/h", "G", "G", "deg", "%", "bar", "rpm", ""]
    steer = np.degrees(np.arctan(1.53 * out["a_y"] / np.maximum(out["speed"], 1.0) ** 2)) * 12.0
    cols = [out["t"], STRETCH["motec"] * out["x"], nz["speed_kmh"], nz["ay_g"], nz["ax_g"],
            steer, dr["throttle"], dr["brake"], dr["rpm"], dr["gear"]]
    fmts = ["{:.3f}", "{:.2f}", "{:.2f}", "{:.3f}", "{:.3f}", "{:.1f}", "{:.1f}", "{:.2f}",
            "{:.0f}", "{:.0f}"]
    data = [[f.format(c[k]) for f, c in zip(fmts, cols)] for k in range(len(out["t"]))]
    path.write_text(_rows(head) + "\n\n\n" + _rows([names, units]) + "\n\n" + _rows(data),
                    encoding="utf-8")


def write_aim(out: dict, path: Path) -> None:
    """The AiM RaceStudio CSV export layout."""
    nz, dr = _noisy(out), _driver(out)
    dist = np.concatenate([[0.0], np.cumsum(0.5 * (nz["speed_kmh"][1:] + nz["speed_kmh"][:-1])
                                            / 3.6 * np.diff(out["t"]))])
    dist = dist * STRETCH["aim"] * out["x"][-1] / dist[-1]
    head = [["Format", "AiM CSV File"], ["Session", "Synthetic example"],
            ["Vehicle", "fsae (SYNTHETIC - not a real log)"], ["Racer", "pyomo_lap"],
            ["Championship", ""], ["Track", "dymos oval (synthetic)"],
            ["Date", "Wednesday, January 1, 2025"], ["Time", "10:00 AM"],
            ["Sample Rate", f"{RATE:.0f}"], ["Duration", f"{out['t'][-1]:.3f}"],
            ["Segment", "Outing"],
            ["Beacon Markers"] + [f"{x:.3f}" for x in out["markers"]],
            ["Segment Times"] + [_lap_clock(x) for x in out["lap_times"]]]
    names = ["Time", "GPS Speed", "GPS Nsat", "GPS LatAcc", "GPS LonAcc",
             "Distance on GPS Speed", "RPM", "Gear", "Throttle", "Brake"]
    units = ["s", "km/h", "#", "g", "g", "m", "rpm", "gear", "%", "bar"]
    cols = [out["t"], nz["speed_kmh"], np.full(len(out["t"]), 12.0), nz["ay_g"], nz["ax_g"],
            dist, dr["rpm"], dr["gear"], dr["throttle"], dr["brake"]]
    fmts = ["{:.3f}", "{:.2f}", "{:.0f}", "{:.3f}", "{:.3f}", "{:.2f}", "{:.0f}", "{:.0f}",
            "{:.1f}", "{:.2f}"]
    data = [[f.format(c[k]) for f, c in zip(fmts, cols)] for k in range(len(out["t"]))]
    path.write_text(_rows(head) + "\n" + _rows([names, units]) + "\n" + _rows(data),
                    encoding="utf-8")


def _solve(folder: Path) -> Path:
    from pyomo_lap import solve_sector
    repo = HERE.parent.parent
    _, rep, _, _ = solve_sector(track=str(repo / "data/tracks/dymos_oval_spline.toml"),
                                vehicle="fsae", periodic=True, length=None, out_dir=str(folder),
                                echo=lambda *a: None)
    if not rep.ok:
        raise SystemExit("the source lap did not solve")
    return folder


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a solved closed lap (default: solve the oval)")
    ap.add_argument("--figure", type=Path, help="write compare's figure of the MoTeC file here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or _solve(Path(tmp) / "oval")
        src = source_from_run(run)
        src.to_csv(HERE / "source_run.csv", index=False, float_format="%.9g")
        src = pd.read_csv(HERE / "source_run.csv")       # the numbers as the tests read them
        out = outing(src)
        write_motec(out, HERE / "motec_example.csv")
        write_aim(out, HERE / "aim_example.csv")
        (HERE / "examples.json").write_text(json.dumps({
            "synthetic": True, "source_lap_time_s": float(src["t [s]"].iloc[-1]),
            "lap_length_m": out["L"], "beacon_markers_s": out["markers"],
            "lap_times_s": out["lap_times"], "speed_factors": FACTORS,
            "distance_stretch": STRETCH, "noise": NOISE, "sample_rate_hz": RATE}, indent=2) + "\n")
        if args.figure:
            from pyomo_lap.analysis.compare import compare_telemetry
            res = compare_telemetry(run, HERE / "motec_example.csv", out_dir=Path(tmp) / "cmp")
            shutil.copyfile(Path(tmp) / "cmp" / "telemetry.png", args.figure)
            print(f"figure: {args.figure} (delta at the end {res['delta_t_s']:+.3f} s)")
    print("lap times [s]:", ", ".join(f"{x:.3f}" for x in out["lap_times"]))


if __name__ == "__main__":
    main()
