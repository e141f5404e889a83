"""The figures of a parameter sweep (:func:`pyomo_lap.sweep`, :mod:`pyomo_lap.sweeps`): the lap
time over each swept parameter and, for two, a heat map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis.compare import _plt
from ..folders.writer import ResultsWriter
from ..vehicle.schema import SECTIONS, VehicleParameters
from .base import _legend_right

__all__ = ["figure_sweep_parameter", "figure_sweep_heatmap", "sweep_plots", "sweep_plot_names"]


# ---------------------------------------------------------------------------------------
# sweeps (pyomo_lap.sweep)
# ---------------------------------------------------------------------------------------
def _swept(table: pd.DataFrame) -> list:
    """The swept vehicle parameters of a sweep table (``section.key`` columns) that vary."""
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
    """Write the sweep's figures: ``lap_time_vs_<parameter>.png`` for each swept parameter
    and, for two or more, ``lap_time_heatmap.png`` over the first two.

    Parameters
    ----------
    table : DataFrame
        The sweep's table (one row per case).
    out_dir : ResultsWriter, str or Path
        The sweep folder's claimed writer (:class:`pyomo_lap.folders.writer.ResultsWriter`,
        committed by the caller), or a folder: then written by a writer of their own (add
        mode, ``by = "sweep"``) and committed.

    Returns
    -------
    list of Path
        The files written (their final names).
    """
    if not isinstance(out_dir, ResultsWriter):
        with ResultsWriter.adding(out_dir, "sweep", names=sweep_plot_names(table)) as writer:
            files = sweep_plots(table, writer)
        return files
    writer = out_dir
    plt = _plt()
    files = []
    if "status" not in table or not (table["status"] == "solved").any():
        return files
    swept = _swept(table)
    figures = [(f"lap_time_vs_{p}.png", lambda p=p: figure_sweep_parameter(table, p))
               for p in swept]
    if len(swept) >= 2:
        figures.append(("lap_time_heatmap.png",
                        lambda: figure_sweep_heatmap(table, swept[0], swept[1])))
    for name, draw in figures:
        fig = draw()
        try:
            files.append(writer.write(name, lambda path: fig.savefig(
                path, format="png", dpi=120, bbox_inches="tight")))
        finally:
            plt.close(fig)
    return files


def sweep_plot_names(table_or_axes) -> list:
    """The names of the figures :func:`sweep_plots` may write for a sweep table or its axes
    (the swept names): what the sweep folder's writer checks before anything runs."""
    names = (_swept(table_or_axes) if isinstance(table_or_axes, pd.DataFrame)
             else [k for k in table_or_axes if "." in k])
    return [f"lap_time_vs_{p}.png" for p in names] + ["lap_time_heatmap.png"]
