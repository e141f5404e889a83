"""Plots of a results folder (matplotlib, Agg backend: no display needed).

:func:`plot_results` reads ``trajectory.parquet`` (or ``trajectory.csv``), ``summary.json`` and
the ``vehicle`` sheet of ``results.xlsx`` and writes one PNG per figure, plus, on request, all
figures as pages of one ``plots.pdf``:

=====================  ==========================================================================
file                   content
=====================  ==========================================================================
``track_map``          the sector seen from above: racing line coloured by speed, track edges,
                       centreline
``racing_line``        lateral offset ``q2`` of the racing line from the centreline, with the
                       limits the car's centre can reach and the track edges
``elevation``          height of the centreline and grade along the sector
``speed``              speed, with the quasi-steady point-mass estimate (or a reference run),
                       and the time delta against it
``controls``           ``f_xa``, ``f_xb`` and the steer angle ``delta``
``attitudes``          heave ``q4``, pitch ``q5``, roll ``q6`` (as the paper's Figs. 4-8)
``power``              traction power against its limit ``P_max``
``gg``                 GG diagram: ``a_x`` against ``a_y`` (O3, in the car's frame, without
                       gravity) coloured by speed
``vertical_loads``     the four vertical loads ``f_11z``, ``f_12z``, ``f_21z``, ``f_22z``
``sensitivities``      (runs with ``--sensitivities`` only) tornado chart: the change of the lap
                       time for +1 % of each parameter (:mod:`pyomo_lap.post.sensitivities`)
=====================  ==========================================================================

Distances on the horizontal axes are track coordinates ``s`` [m].
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .compare import channel_differences, delta_along_track, run_statistics, sector_deltas
from .results import read_summary, read_trajectory

__all__ = ["plot_results", "compare_runs", "figure_compare", "FIGURES", "figure_track_map", "figure_racing_line",
           "figure_elevation", "figure_speed", "figure_controls", "figure_attitudes",
           "figure_power", "figure_gg", "figure_vertical_loads", "figure_sensitivities", "edges_xy",
           "figure_sweep_parameter", "figure_sweep_heatmap", "sweep_plots"]


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _title(ax, summary: dict, what: str) -> None:
    run = (f"{summary.get('vehicle', '?')} on {summary.get('track', '?')}, "
           f"{summary.get('start_m', 0):.0f}+{summary.get('length_m', 0):.0f} m, "
           f"t = {summary.get('lap_time_s', float('nan')):.3f} s")
    ax.set_title(f"{what}\n{run}", fontsize=10)


def _s(df: pd.DataFrame) -> np.ndarray:
    """Unwrapped track coordinate [m] (a sector may pass the start line of a closed track)."""
    return float(df["s"].iloc[0]) + df["s_sector"].to_numpy(dtype=float)


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


def figure_track_map(df, summary, vehicle=None):
    """Plan view: racing line coloured by speed [km/h], track edges, centreline."""
    plt = _plt()
    from matplotlib.collections import LineCollection
    g = edges_xy(df)
    fig, ax = plt.subplots(figsize=(8, 7))
    ax.plot(*g["left"].T, color="k", lw=1.0, label="track edges")
    ax.plot(*g["right"].T, color="k", lw=1.0)
    ax.plot(*g["centre"].T, color="0.6", lw=0.8, ls="--", label="centreline")
    pts = g["line"].reshape(-1, 1, 2)
    segs = np.concatenate([pts[:-1], pts[1:]], axis=1)
    v = df["speed_kmh"].to_numpy(dtype=float)
    lc = LineCollection(segs, cmap="viridis", linewidths=2.5)
    lc.set_array(0.5 * (v[1:] + v[:-1]))
    ax.add_collection(lc)
    fig.colorbar(lc, ax=ax, label="speed [km/h]", shrink=0.8)
    ax.plot(*g["line"][0], "o", color="tab:green", label="start")
    ax.plot(*g["line"][-1], "s", color="tab:red", label="end")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(loc="best", fontsize=8)
    _title(ax, summary, "Track map, racing line coloured by speed")
    return fig


def figure_racing_line(df, summary, vehicle=None):
    """Lateral offset q2 [m] of the racing line against the centreline, with the edges."""
    plt = _plt()
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
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    _title(ax, summary, "Racing line against the centreline")
    return fig


def figure_elevation(df, summary, vehicle=None):
    """Height of the centreline [m] and grade [%]."""
    plt = _plt()
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
    _title(ax, summary, "Elevation profile")
    return fig


def figure_speed(df, summary, vehicle=None, reference: Optional[pd.DataFrame] = None,
                 reference_label: str = "reference"):
    """Speed [km/h] and time delta [s] against the point-mass estimate or a reference run."""
    plt = _plt()
    s = _s(df)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    ax.plot(s, df["speed_kmh"], color="tab:blue", lw=1.8, label="this run")
    if reference is not None:
        d = delta_along_track(reference, df)
        ax.plot(d["s [m]"], d["speed_A [km/h]"], color="tab:orange", lw=1.2, label=reference_label)
        ax2.plot(d["s [m]"], d["delta_t [s]"], color="tab:purple")
        ax2.set_ylabel(f"t - t({reference_label}) [s]")
    elif "v_point_mass" in df.columns:
        ax.plot(s, 3.6 * df["v_point_mass"], color="tab:orange", lw=1.0, ls="--",
                label="quasi-steady point mass (initial guess)")
        ax2.plot(s, df["t"] - df["t_point_mass"], color="tab:purple")
        ax2.set_ylabel("t - t(point mass) [s]")
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax.set_ylabel("speed [km/h]")
    ax2.set_xlabel("s [m]")
    ax.legend(loc="best", fontsize=8)
    _title(ax, summary, "Speed and time delta (< 0: this run is ahead)")
    return fig


def figure_controls(df, summary, vehicle=None):
    """Controls: traction f_xa and braking f_xb [kN], steer angle delta [deg]."""
    plt = _plt()
    s = _s(df)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    ax.plot(s, df["f_xa"] / 1e3, color="tab:green", label="f_xa (traction)")
    ax.plot(s, df["f_xb"] / 1e3, color="tab:red", label="f_xb (braking)")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_ylabel("force [kN]")
    ax.legend(loc="best", fontsize=8)
    ax2.plot(s, np.degrees(df["delta"]), color="tab:blue")
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax2.set_ylabel("steer angle delta [deg] (+ left)")
    ax2.set_xlabel("s [m]")
    _title(ax, summary, "Controls")
    return fig


def figure_attitudes(df, summary, vehicle=None):
    """Heave q4 [mm], pitch q5 [deg] (+ nose down), roll q6 [deg] (+ right side down)."""
    plt = _plt()
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
    _title(axs[0], summary, "Attitudes (as Figs. 4-8 of the paper)")
    return fig


def figure_power(df, summary, vehicle=None):
    """Traction power [kW] against its limit P_max."""
    plt = _plt()
    s = _s(df)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(s, df["power"] / 1e3, color="tab:red", label="power f_xa v_3x")
    if vehicle and "P_max" in vehicle:
        ax.axhline(float(vehicle["P_max"]) / 1e3, color="k", ls="--", lw=1.0, label="P_max")
    ax.set_ylabel("power [kW]")
    ax.set_xlabel("s [m]")
    ax.legend(loc="best", fontsize=8)
    _title(ax, summary, "Power against its limit")
    return fig


def figure_gg(df, summary, vehicle=None):
    """GG diagram: longitudinal a_x against lateral a_y of O3 [g], coloured by speed."""
    plt = _plt()
    g0 = float(vehicle["gravity"]) if vehicle and "gravity" in vehicle else 9.81
    fig, ax = plt.subplots(figsize=(6, 6))
    sc = ax.scatter(df["a_y"] / g0, df["a_x"] / g0, c=df["speed_kmh"], cmap="viridis", s=10)
    fig.colorbar(sc, ax=ax, label="speed [km/h]", shrink=0.8)
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.axvline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel("lateral a_y [g] (+ left)")
    ax.set_ylabel("longitudinal a_x [g]")
    r = 1.1 * max(float(np.abs(df["a_x"]).max()), float(np.abs(df["a_y"]).max())) / g0
    ax.set_xlim(-r, r)
    ax.set_ylim(-r, r)
    ax.set_aspect("equal")
    _title(ax, summary, "GG diagram")
    return fig


def figure_vertical_loads(df, summary, vehicle=None):
    """The four vertical loads f_ijz [kN] (i axle 1 front, 2 rear; j side 1 left, 2 right)."""
    plt = _plt()
    s = _s(df)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name, color in (("f_11z", "tab:blue"), ("f_12z", "tab:cyan"), ("f_21z", "tab:red"),
                        ("f_22z", "tab:orange")):
        ax.plot(s, df[name] / 1e3, color=color, label=name)
    if vehicle and "fz_min" in vehicle:
        ax.axhline(float(vehicle["fz_min"]) / 1e3, color="0.5", ls=":", lw=0.8, label="f_z,min")
    ax.set_ylabel("vertical load [kN]")
    ax.set_xlabel("s [m]")
    ax.legend(loc="best", fontsize=8, ncol=5)
    _title(ax, summary, "Vertical loads")
    return fig


def figure_sensitivities(df, summary, vehicle=None, n: int = 20):
    """Tornado chart of the lap-time sensitivities: the change of the lap time for +1 % of
    each parameter [s] (the summary's ``sensitivities``, :mod:`pyomo_lap.post.sensitivities`),
    the ``n`` largest in magnitude, largest on top; red slows the car down, green speeds it
    up. ``friction_scale`` is the track's grip (both friction coefficients scaled).

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
"""Figure name -> function ``f(df, summary, vehicle) -> matplotlib Figure``."""


def read_vehicle_sheet(results_dir) -> dict:
    """Vehicle parameters from the ``vehicle`` sheet of ``results.xlsx`` (empty if absent)."""
    path = Path(results_dir) / "results.xlsx"
    if not path.exists():
        return {}
    try:
        sheet = pd.read_excel(path, sheet_name="vehicle")
    except ValueError:   # no such sheet
        return {}
    return dict(zip(sheet["parameter"], sheet["value"]))


def plot_results(results_dir, out_dir=None, formats: Sequence[str] = ("png",),
                 figures: Optional[Sequence[str]] = None, reference_dir=None, dpi: int = 120,
                 echo=None) -> list:
    """Write the figures of a results folder.

    Parameters
    ----------
    results_dir : str or Path
        A folder written by :func:`pyomo_lap.post.results.write_results`.
    out_dir : str or Path, optional
        Where to write (default ``<results_dir>/plots``).
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

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    FileNotFoundError
        ``results_dir`` is not a results folder.
    ValueError
        Unknown figure name or format.
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
    df = read_trajectory(results_dir)
    summary = read_summary(results_dir)
    if figures is None and not summary.get("sensitivities"):
        names.remove("sensitivities")     # only for a run with --sensitivities
    vehicle = read_vehicle_sheet(results_dir)
    ref = read_trajectory(reference_dir) if reference_dir is not None else None
    out = Path(out_dir) if out_dir is not None else results_dir / "plots"
    out.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    written = []
    pdf = None
    if "pdf" in formats:
        from matplotlib.backends.backend_pdf import PdfPages
        pdf = PdfPages(out / "plots.pdf")
    try:
        for name in names:
            if name == "speed" and ref is not None:
                fig = figure_speed(df, summary, vehicle, reference=ref,
                                   reference_label=Path(reference_dir).name)
            else:
                fig = FIGURES[name](df, summary, vehicle)
            fig.tight_layout()
            if "png" in formats:
                path = out / f"{name}.png"
                fig.savefig(path, dpi=dpi)
                written.append(path)
                echo(f"  wrote {path}")
            if pdf is not None:
                pdf.savefig(fig)
            plt.close(fig)
    finally:
        if pdf is not None:
            pdf.close()
    if pdf is not None:
        written.append(out / "plots.pdf")
        echo(f"  wrote {out / 'plots.pdf'}")
    return written


# --------------------------------------------------------------------------------------------
# comparing two runs (the numbers: pyomo_lap.post.compare)
# --------------------------------------------------------------------------------------------

def figure_compare(delta: pd.DataFrame, label_a: str = "A", label_b: str = "B"):
    """Speed of both runs, time delta and lateral offsets along the track."""
    plt = _plt()
    s = delta["s [m]"]
    fig, axs = plt.subplots(3, 1, figsize=(10, 8), sharex=True,
                            gridspec_kw={"height_ratios": [2, 1.3, 1]})
    axs[0].plot(s, delta["speed_A [km/h]"], color="tab:blue", label=label_a)
    axs[0].plot(s, delta["speed_B [km/h]"], color="tab:orange", label=label_b)
    axs[0].set_ylabel("speed [km/h]")
    axs[0].legend(loc="best", fontsize=8)
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
        Where to write (default ``<dir_b>/compare_<name of A>``).
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
        iterations, times), ``delta_t_s`` (final delta), ``files`` (paths written:
        ``compare.csv``, ``compare_sectors.csv``, ``compare_channels.csv``,
        ``compare_runs.csv``, the figures).

    Raises
    ------
    FileNotFoundError
        A folder is not a results folder.
    ValueError
        The runs are on different tracks or do not overlap; bad ``formats``.
    """
    echo = echo or (lambda *_: None)
    formats = tuple(formats)
    if not formats or any(f not in ("png", "pdf") for f in formats):
        raise ValueError(f"formats = {formats!r}: expected 'png' and/or 'pdf'")
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    sum_a, sum_b = read_summary(dir_a), read_summary(dir_b)
    if sum_a.get("track") != sum_b.get("track"):
        raise ValueError(f"the runs are on different tracks: {sum_a.get('track')!r} ({dir_a}) and "
                         f"{sum_b.get('track')!r} ({dir_b})")
    delta = delta_along_track(read_trajectory(dir_a), read_trajectory(dir_b))
    sectors = sector_deltas(delta, n_sectors)
    channels = channel_differences(delta)
    runs = run_statistics(sum_a, sum_b)
    out = Path(out_dir) if out_dir is not None else dir_b / f"compare_{dir_a.name}"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    delta.to_csv(out / "compare.csv", index=False, float_format="%.10g")
    sectors.to_csv(out / "compare_sectors.csv", index=False, float_format="%.10g")
    channels.to_csv(out / "compare_channels.csv", index=False, float_format="%.10g")
    runs.to_csv(out / "compare_runs.csv", index=False, float_format="%.10g")
    files += [out / "compare.csv", out / "compare_sectors.csv", out / "compare_channels.csv",
              out / "compare_runs.csv"]
    fig = figure_compare(delta, dir_a.name, dir_b.name)
    for fmt in formats:
        fig.savefig(out / f"compare.{fmt}", dpi=120)
        files.append(out / f"compare.{fmt}")
    _plt().close(fig)
    for f in files:
        echo(f"  wrote {f}")
    return {"delta": delta, "sectors": sectors, "channels": channels, "runs": runs,
            "delta_t_s": float(delta["delta_t [s]"].iloc[-1]), "files": files}


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
        ax.legend(fontsize=7)
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
        fig.savefig(files[-1], dpi=120)
        plt.close(fig)
    if len(swept) >= 2:
        fig = figure_sweep_heatmap(table, swept[0], swept[1])
        files.append(out_dir / "lap_time_heatmap.png")
        fig.savefig(files[-1], dpi=120)
        plt.close(fig)
    return files
