r"""Comparing runs with each other and with a logged lap: the time delta along the track.

Both runs are put on the track coordinate ``s`` where their sectors overlap; each run's time is
interpolated linearly in ``s`` and restarted at zero at the start of the overlap, so that

.. math:: \Delta t(s) = t_B(s) - t_B(s_0) - \big(t_A(s) - t_A(s_0)\big)

is positive where B has lost time on A since ``s_0``. Its value at the end of the overlap is
the difference of the sector times over the overlap.

The numbers of two runs are here; their figures and the writer of their comparison folder
(:func:`pyomo_lap.plots.figures.compare_runs`, ``pyomo-lap compare A B``) are in
:mod:`pyomo_lap.plots.figures`. Here too: more than two runs (:func:`compare_many`, with the
vehicle parameters in which they differ in the legend), a logged lap against a run
(:func:`read_telemetry`, :func:`telemetry_delta`, :func:`compare_telemetry`: aligned on
distance, the time gained or lost along the lap, the channels both have), and channels on a
fixed step of distance or time (:func:`parse_step`, :func:`resample_channels`).
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..folders.writer import ResultsWriter
from ..results.corners import corner_deltas, records_table
from ..results.summary import Summary, as_summary
from ..results.table import UNITS, read_summary, read_trajectory
from ..util.steps import check_step
from .telemetry import CHANNEL_ALIASES, read_telemetry, unit_factor

matplotlib, matplotlib_available = attempt_import("matplotlib")
plt, plt_available = attempt_import("matplotlib.pyplot")

__all__ = ["delta_along_track", "sector_deltas", "channel_differences", "run_statistics",
           "parse_step", "resample_channels", "parameter_differences", "run_labels",
           "deltas_many", "compare_many", "read_telemetry", "telemetry_delta",
           "compare_telemetry", "TELEMETRY_COLUMNS", "corners_many", "unique_run_names"]


def _s_abs(df: pd.DataFrame) -> np.ndarray:
    """Unwrapped track coordinate [m]."""
    return float(df["s"].iloc[0]) + df["s_sector"].to_numpy(dtype=float)


def delta_along_track(a: pd.DataFrame, b: pd.DataFrame, min_overlap: float = 1.0) -> pd.DataFrame:
    """Time delta of run B against run A along the track where both sectors overlap.

    Parameters
    ----------
    a, b : DataFrame
        Channels of two runs (:func:`pyomo_lap.results.table.read_trajectory`), on the same track.
    min_overlap : float
        Shortest overlap accepted [m].

    Returns
    -------
    DataFrame
        On the union of both runs' points inside the overlap: ``s [m]``, ``t_A [s]``,
        ``t_B [s]`` (from the overlap start), ``delta_t [s]`` (= t_B - t_A, > 0: B is behind),
        ``speed_A [km/h]``, ``speed_B [km/h]``, ``q2_A [m]``, ``q2_B [m]``, and
        ``<name>_A [unit]``, ``<name>_B [unit]`` for each of :data:`COMPARED_CHANNELS` that both
        runs have (attitudes and vertical loads).

    Raises
    ------
    ValueError
        The sectors overlap by less than ``min_overlap``.
    """
    sa, sb = _s_abs(a), _s_abs(b)
    lo, hi = max(sa[0], sb[0]), min(sa[-1], sb[-1])
    if not hi - lo >= min_overlap:
        raise ValueError(f"the runs do not overlap: A covers {sa[0]:.1f}-{sa[-1]:.1f} m, "
                         f"B covers {sb[0]:.1f}-{sb[-1]:.1f} m of the track")
    grid = np.union1d(sa[(sa >= lo) & (sa <= hi)], sb[(sb >= lo) & (sb <= hi)])
    grid = np.union1d(grid, [lo, hi])
    out = {"s [m]": grid}
    for tag, df, s in (("A", a, sa), ("B", b, sb)):
        t = np.interp(grid, s, df["t"].to_numpy(dtype=float))
        out[f"t_{tag} [s]"] = t - t[0]
    out["delta_t [s]"] = out["t_B [s]"] - out["t_A [s]"]
    for tag, df, s in (("A", a, sa), ("B", b, sb)):
        out[f"speed_{tag} [km/h]"] = np.interp(grid, s, df["speed_kmh"].to_numpy(dtype=float))
    for tag, df, s in (("A", a, sa), ("B", b, sb)):
        out[f"q2_{tag} [m]"] = np.interp(grid, s, df["q2"].to_numpy(dtype=float))
    for name, unit in COMPARED_CHANNELS.items():
        if name in a.columns and name in b.columns:
            for tag, df, s in (("A", a, sa), ("B", b, sb)):
                out[f"{name}_{tag} [{unit}]"] = np.interp(grid, s, df[name].to_numpy(dtype=float))
    return pd.DataFrame(out)


COMPARED_CHANNELS = {"q4": "m", "q5": "rad", "q6": "rad", "f_11z": "N", "f_12z": "N",
                     "f_21z": "N", "f_22z": "N"}
"""Channels put side by side by :func:`delta_along_track` when both runs have them: heave,
pitch, roll and the four vertical loads (besides time, speed and ``q2``)."""


def channel_differences(delta: pd.DataFrame) -> pd.DataFrame:
    """Mean of each compared channel in both runs and their difference along the track.

    Parameters
    ----------
    delta : DataFrame
        From :func:`delta_along_track`.

    Returns
    -------
    DataFrame
        One row per channel present in both runs (``speed``, ``q2`` and
        :data:`COMPARED_CHANNELS`): ``channel``, ``unit``, ``mean_A``, ``mean_B``, ``rms_diff``
        (root mean square of B - A over the points), ``max_abs_diff`` and ``s_at_max [m]``.
    """
    rows = []
    s = delta["s [m]"].to_numpy()
    names = {"speed": "km/h", "q2": "m", **COMPARED_CHANNELS}
    for name, unit in names.items():
        ca, cb = f"{name}_A [{unit}]", f"{name}_B [{unit}]"
        if ca not in delta.columns or cb not in delta.columns:
            continue
        xa, xb = delta[ca].to_numpy(), delta[cb].to_numpy()
        d = xb - xa
        k = int(np.argmax(np.abs(d)))
        rows.append({"channel": name, "unit": unit, "mean_A": float(np.mean(xa)),
                     "mean_B": float(np.mean(xb)), "rms_diff": float(np.sqrt(np.mean(d ** 2))),
                     "max_abs_diff": float(abs(d[k])), "s_at_max [m]": float(s[k])})
    return pd.DataFrame(rows)


RUN_STATISTICS = ("model", "lap_time_s", "iterations", "build_time_s", "solve_time_s")
"""Entries of ``summary.json`` that :func:`run_statistics` puts side by side."""


def run_statistics(sum_a: Summary, sum_b: Summary) -> pd.DataFrame:
    """The two runs' model, lap time, NLP size (after the presolve of ``lap_ipopt``, else as
    Pyomo counts it), iterations and times, from their ``summary.json``
    (:class:`pyomo_lap.results.summary.Summary`, or the dicts of its keys).

    Returns
    -------
    DataFrame
        Columns ``quantity``, ``A``, ``B``.
    """
    sum_a, sum_b = as_summary(sum_a), as_summary(sum_b)
    rows = []
    for key in RUN_STATISTICS[:2]:
        rows.append({"quantity": key, "A": getattr(sum_a, key), "B": getattr(sum_b, key)})
    for key in ("n_variables", "n_equalities", "n_inequalities"):
        rows.append({"quantity": f"nlp_{key}", "A": (sum_a.nlp or {}).get(key),
                     "B": (sum_b.nlp or {}).get(key)})
    for key in RUN_STATISTICS[2:]:
        rows.append({"quantity": key, "A": getattr(sum_a, key), "B": getattr(sum_b, key)})
    return pd.DataFrame(rows)


def sector_deltas(delta: pd.DataFrame, n_sectors: int = 3) -> pd.DataFrame:
    """Times of both runs over ``n_sectors`` equal parts of the overlap and their difference.

    Returns
    -------
    DataFrame
        ``sector``, ``s_start [m]``, ``s_end [m]``, ``time_A [s]``, ``time_B [s]``,
        ``delta [s]`` (= time_B - time_A).

    Raises
    ------
    ValueError
        ``n_sectors`` < 1.
    """
    if int(n_sectors) != n_sectors or n_sectors < 1:
        raise ValueError(f"n_sectors = {n_sectors!r}: expected an integer >= 1")
    s = delta["s [m]"].to_numpy()
    edges = np.linspace(s[0], s[-1], int(n_sectors) + 1)
    ta = np.interp(edges, s, delta["t_A [s]"].to_numpy())
    tb = np.interp(edges, s, delta["t_B [s]"].to_numpy())
    rows = [{"sector": k + 1, "s_start [m]": edges[k], "s_end [m]": edges[k + 1],
             "time_A [s]": ta[k + 1] - ta[k], "time_B [s]": tb[k + 1] - tb[k],
             "delta [s]": (tb[k + 1] - tb[k]) - (ta[k + 1] - ta[k])} for k in range(int(n_sectors))]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# fixed-step resampling
# ---------------------------------------------------------------------------------------
_STEP = {"m": ("distance", 1.0), "km": ("distance", 1000.0), "s": ("time", 1.0),
         "ms": ("time", 1e-3)}


def parse_step(text) -> tuple:
    """A resampling step: ``'1m'``, ``'0.5 m'``, ``'2 km'`` (distance) or ``'0.01s'``,
    ``'10 ms'``, ``'100Hz'`` (time).

    Returns
    -------
    (kind, step) : ('distance', metres) or ('time', seconds)

    Raises
    ------
    ValueError
        Not a positive step with one of the units m, km, s, ms, Hz.
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(m|km|s|ms|hz|Hz)\s*", str(text))
    value = float(m.group(1)) if m else 0.0
    if not m or not value > 0:
        raise ValueError(f"{text!r}: expected a distance step such as 1m or 0.5m, or a time step "
                         "such as 0.01s, 10ms or 100Hz")
    unit = m.group(2).lower()
    if unit == "hz":
        return "time", 1.0 / value
    kind, factor = _STEP[unit]
    return kind, value * factor


def resample_channels(df: pd.DataFrame, every, s: str = "s", t: str = "t") -> pd.DataFrame:
    """Every numeric column of ``df`` on a fixed step of distance or time, by linear
    interpolation.

    Parameters
    ----------
    df : DataFrame
        Channels along a lap or sector, with a distance column ``s`` [m] and a time column
        ``t`` [s] (both increasing; column names with a unit in brackets, ``s [m]``, are
        found too).
    every : str or (str, float)
        ``'1m'``, ``'0.01s'`` ... (:func:`parse_step`) or ``('distance', 1.0)``.
    s, t : str
        The names of the distance and time columns.

    Returns
    -------
    DataFrame
        The same columns (non-numeric ones left out) on the grid from the first value of the
        distance (or time) to the last, every step (the last sample kept when the step does not
        divide the span).

    Raises
    ------
    ValueError
        A bad step; no such column; a column that does not increase.
    """
    kind, step = parse_step(every) if isinstance(every, str) else every
    cols = {c.split(" [")[0]: c for c in df.columns}
    key = cols.get(s if kind == "distance" else t)
    if key is None:
        raise ValueError(f"resampling every {step:g} {'m' if kind == 'distance' else 's'}: no "
                         f"{'distance' if kind == 'distance' else 'time'} column "
                         f"{s if kind == 'distance' else t!r} among {', '.join(map(str, df.columns))}")
    x = df[key].to_numpy(dtype=float)
    if not np.all(np.diff(x) > 0):
        raise ValueError(f"column {key!r} does not increase: cannot resample on it")
    check_step(step, float(x[-1] - x[0]), len(x) - 1, unit="m" if kind == "distance" else "s",
               of=f"the run's {'distance' if kind == 'distance' else 'time'} rows")
    grid = np.arange(x[0], x[-1] + 1e-9 * max(1.0, abs(x[-1])), step)
    if grid[-1] < x[-1] - 1e-9 * max(1.0, abs(x[-1])):
        grid = np.append(grid, x[-1])
    out = {}
    for c in df.columns:
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
            out[c] = grid if c == key else np.interp(grid, x, df[c].to_numpy(dtype=float))
    return pd.DataFrame(out)


def _at_steps(table: pd.DataFrame, every, s_col: str, t_col: str) -> pd.DataFrame:
    """A comparison table on a fixed step: of distance along ``s_col``, or of time along the
    reference's time ``t_col`` (:func:`resample_channels`)."""
    return resample_channels(table, every, s=s_col.split(" [")[0], t=t_col.split(" [")[0])


# ---------------------------------------------------------------------------------------
# more than two runs
# ---------------------------------------------------------------------------------------
def parameter_differences(summaries: Sequence[Summary]) -> list:
    """The vehicle parameters (dotted names, ``summary.vehicle_parameters``), the vehicle,
    the track and the model that differ between runs (summaries, or the dicts of their
    keys), one dict per run ``{name: value}`` (only those that differ; empty when all
    agree)."""
    summaries = [as_summary(sm) for sm in summaries]
    params = [{**{k: getattr(sm, k) for k in ("vehicle", "track", "model")
                  if getattr(sm, k) is not None},
               **(sm.vehicle_parameters or {})} for sm in summaries]
    keys = []
    for p in params:
        keys += [k for k in p if k not in keys]
    differ = [k for k in keys if len({repr(p.get(k)) for p in params}) > 1]
    return [{k: p.get(k) for k in differ} for p in params]


def _value_text(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def run_labels(names: Sequence[str], summaries: Sequence[Summary]) -> list:
    """Legend labels: the run's name, its lap (or sector) time and the parameters in which it
    differs from the others (``aero.Cz1=0.6``; at most four, then how many more; runs of
    different cars: the car's name and how many parameters differ)."""
    out = []
    for name, sm, diff in zip(names, summaries, parameter_differences(summaries)):
        lap = as_summary(sm).lap_time_s
        text = f"{name}" + (f" ({lap:.3f} s)" if isinstance(lap, (int, float)) else "")
        whole = [k for k in ("vehicle", "track", "model") if k in diff]
        if "vehicle" in diff:          # another car: its name says it, not its 36 values
            n = len(diff) - len(whole)
            items = [f"{k}={_value_text(diff[k])}" for k in whole] + (
                [f"{n} parameters differ"] if n else [])
        else:
            items = [f"{k}={_value_text(v)}" for k, v in diff.items()]
            items = items[:4] + ([f"+{len(items) - 4} more"] if len(items) > 4 else [])
        if items:
            text += ": " + ", ".join(items)
        out.append(text)
    return out


def unique_run_names(dirs) -> list:
    """The runs' labels: each folder's name; names shared by folders of different parents
    with the parent's name (``a/base``, ``b/base``: the absolute path's, so ``base`` given
    from its own parent folder is not ``/base``); a label still shared (the same folder
    given twice) numbered from its second time (``base``, ``base (2)``)."""
    names = [Path(d).name for d in dirs]
    full = [Path(d).resolve() for d in dirs]
    labels = [f"{p.parent.name}/{n}" if names.count(n) > 1 and p.parent.name and
              len({q.parent for q, m in zip(full, names) if m == n}) > 1 else n
              for p, n in zip(full, names)]
    out = []
    for label in labels:
        seen = sum(1 for x in out if x == label or x.startswith(f"{label} ("))
        out.append(label if not seen else f"{label} ({seen + 1})")
    return out


def deltas_many(frames: Sequence[pd.DataFrame], names: Sequence[str],
                min_overlap: float = 1.0) -> pd.DataFrame:
    """Time of each run along the track where all overlap, and its delta against the first.

    Returns
    -------
    DataFrame
        ``s [m]``; for each run ``t_<name> [s]`` (from the overlap's start),
        ``delta_<name> [s]`` (= its time - the first run's, > 0: behind it) and
        ``speed_<name> [km/h]``.

    Raises
    ------
    ValueError
        The runs overlap by less than ``min_overlap``.
    """
    ss = [_s_abs(f) for f in frames]
    lo, hi = max(s[0] for s in ss), min(s[-1] for s in ss)
    if not hi - lo >= min_overlap:
        raise ValueError("the runs do not overlap: " + "; ".join(
            f"{n} covers {s[0]:.1f}-{s[-1]:.1f} m" for n, s in zip(names, ss)))
    grid = np.unique(np.concatenate([s[(s >= lo) & (s <= hi)] for s in ss] + [[lo, hi]]))
    out = {"s [m]": grid}
    times = []
    for name, df, s in zip(names, frames, ss):
        t = np.interp(grid, s, df["t"].to_numpy(dtype=float))
        times.append(t - t[0])
        out[f"t_{name} [s]"] = times[-1]
    for name, t in zip(names, times):
        out[f"delta_{name} [s]"] = t - times[0]
    for name, df, s in zip(names, frames, ss):
        out[f"speed_{name} [km/h]"] = np.interp(grid, s, df["speed_kmh"].to_numpy(dtype=float))
    return pd.DataFrame(out)


def _plt():
    """The pyplot of matplotlib on the Agg backend (files only; as :mod:`pyomo_lap.plots.figures`,
    which imports this module, so the figures here are drawn without it)."""
    matplotlib.use("Agg", force=True)
    return plt


def _legend_right(ax, **kw):
    """A legend outside the axes, to their right."""
    kw.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                     framealpha=0.9, **kw)


def _within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both made absolute)."""
    path, folder = Path(path).expanduser().resolve(), Path(folder).expanduser().resolve()
    return path == folder or folder in path.parents


def _figure_many(delta: pd.DataFrame, names, labels, title: str):
    plt = _plt()
    s = delta["s [m]"]
    fig, axs = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True,
                            gridspec_kw={"height_ratios": [2, 1.3]})
    for name, label in zip(names, labels):
        axs[0].plot(s, delta[f"speed_{name} [km/h]"], lw=1.2,
                    label="\n  ".join(textwrap.wrap(label, 48)))
        axs[1].plot(s, delta[f"delta_{name} [s]"], lw=1.2)
    axs[0].set_ylabel("speed [km/h]")
    _legend_right(axs[0], fontsize=7)
    axs[1].axhline(0.0, color="0.6", lw=0.8)
    axs[1].set_ylabel(f"t - t({names[0]}) [s]")
    axs[1].set_xlabel("s [m]")
    axs[0].set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _comparison_writer(out_dir, dirs, default: str):
    """The writer of a comparison's folder (:class:`pyomo_lap.folders.writer.ResultsWriter`,
    replace mode, kind ``compare``; not yet claimed): a folder of its own, never a run's
    folder nor inside one (ValueError), nor a folder of pyomo_lap's of another kind, nor one
    holding files of the user's (refused when it is claimed, before anything is read)."""
    out = Path(out_dir) if out_dir is not None else Path(dirs[-1]).parent / default
    for run in dirs:
        if _within(out, run):
            raise ValueError(f"--out {out} is {'the' if _within(run, out) else 'inside the'} "
                             f"results folder {run}: a comparison is written into a folder of "
                             f"its own (default {default} next to the runs), never into a run's")
    return ResultsWriter.replacing(out, "compare", kind="compare")


def _check_formats(formats) -> tuple:
    """The figure formats of a comparison (ValueError unless 'png' and/or 'pdf')."""
    formats = tuple(formats)
    if not formats or any(f not in ("png", "pdf") for f in formats):
        raise ValueError(f"formats = {formats!r}: expected 'png' and/or 'pdf'")
    return formats


def _write_comparison(writer, tables: dict, fig, stem: str, formats, echo) -> list:
    """Write a comparison through its claimed writer: each table (``{file name: DataFrame}``)
    as CSV, then the figure as ``<stem>.<format>``; every file said through ``echo``. Returns
    the paths written (their final names), in that order."""
    files = []
    for name, frame in tables.items():
        files.append(writer.write_csv(name, frame, float_format="%.10g"))
    for fmt in formats:
        files.append(writer.write(f"{stem}.{fmt}", lambda p, fmt=fmt: fig.savefig(
            p, format=fmt, dpi=120, bbox_inches="tight")))
    _plt().close(fig)
    for f in files:
        echo(f"  wrote {f}")
    return files


def compare_many(dirs, out_dir=None, n_sectors: int = 3, every=None, formats=("png",),
                 echo=None) -> dict:
    """Compare two or more results folders: the time of each along the track against the
    first, the sector times, and the parameters in which they differ (in the legend).

    Writes ``compare_runs.csv`` (one row per run: name, lap time, delta to the first, the
    parameters that differ), ``compare.csv`` (:func:`deltas_many`, or on a fixed step with
    ``every``), ``compare_sectors.csv`` (the sector times of each run over the common
    stretch), ``compare_corners.csv`` (:func:`corners_many`, when the runs have corners) and
    ``compare.png`` (speed and delta; ``compare.pdf`` on request).

    Parameters
    ----------
    dirs : sequence of str or Path
        Results folders; the first is the reference.
    out_dir : str or Path, optional
        Default ``compare_<name of the first>_and_<n - 1>_more`` next to the last run.
    n_sectors : int
    every : str, optional
        A fixed step for ``compare.csv`` (:func:`parse_step`: ``'1m'``, or ``'0.01s'`` of the
        first run's time).
    formats : sequence of str
    echo : callable, optional

    Returns
    -------
    dict
        ``delta``, ``sectors``, ``runs``, ``corners`` (DataFrames), ``labels``, ``files``.

    Raises
    ------
    ValueError
        Fewer than two runs; runs on different tracks or without a common stretch; bad
        ``every`` or ``formats``; ``out_dir`` a run's folder.
    """
    echo = echo or (lambda *_: None)
    dirs = [Path(d) for d in dirs]
    if len(dirs) < 2:
        raise ValueError(f"{len(dirs)} run given: expected two results folders or more")
    formats = _check_formats(formats)
    if every is not None:
        parse_step(every)
    names = unique_run_names(dirs)
    with _comparison_writer(out_dir, dirs, f"compare_{names[0].replace('/', '_')}_and_"
                                           f"{len(dirs) - 1}_more") as writer:
        summaries = [read_summary(d) for d in dirs]
        tracks = {sm.track for sm in summaries}
        if len(tracks) > 1:
            raise ValueError("the runs are on different tracks: " + ", ".join(
                f"{sm.track!r} ({d})" for sm, d in zip(summaries, dirs)))
        delta = deltas_many([read_trajectory(d) for d in dirs], names)
        labels = run_labels(names, summaries)
        diffs = parameter_differences(summaries)
        final = {n: float(delta[f"delta_{n} [s]"].iloc[-1]) for n in names}
        runs = pd.DataFrame([{"run": n, "folder": str(d), "lap_time [s]": sm.lap_time_s,
                              "time over the common stretch [s]":
                                  float(delta[f"t_{n} [s]"].iloc[-1]),
                              "delta to the first [s]": final[n], **{k: v for k, v in df.items()}}
                             for n, d, sm, df in zip(names, dirs, summaries, diffs)])
        edges = np.linspace(delta["s [m]"].iloc[0], delta["s [m]"].iloc[-1], int(n_sectors) + 1)
        rows = []
        for k in range(int(n_sectors)):
            row = {"sector": k + 1, "s_start [m]": edges[k], "s_end [m]": edges[k + 1]}
            for n in names:
                t = np.interp(edges[k:k + 2], delta["s [m]"], delta[f"t_{n} [s]"])
                row[f"time_{n} [s]"] = t[1] - t[0]
            rows.append(row)
        sectors = pd.DataFrame(rows)
        corners = corners_many(summaries, names)
        table = delta if every is None else _at_steps(delta, every, "s [m]", f"t_{names[0]} [s]")
        span = f"{delta['s [m]'].iloc[0]:.0f}-{delta['s [m]'].iloc[-1]:.0f} m"
        fig = _figure_many(delta, names, labels, f"{len(names)} runs against {names[0]}, {span} "
                                                 "(> 0: behind it)")
        tables = {"compare.csv": table, "compare_sectors.csv": sectors, "compare_runs.csv": runs}
        if len(corners):
            tables["compare_corners.csv"] = corners
        files = _write_comparison(writer, tables, fig, "compare", formats, echo)
        return {"delta": delta, "sectors": sectors, "runs": runs, "labels": labels, "files": files,
                "table": table, "corners": corners}


def corners_many(summaries: Sequence[Summary], names: Sequence[str]) -> pd.DataFrame:
    """Corner by corner, every run against the first: the corners all runs hold
    (:func:`pyomo_lap.results.corners.corner_deltas` of each against the first), with
    ``time_<name> [s]``, ``delta_<name> [s]``, ``min_speed_<name> [km/h]`` per run."""
    summaries = [as_summary(sm) for sm in summaries]
    first = records_table(summaries[0].corners)
    out = None
    for n, sm in zip(names[1:], summaries[1:]):
        d = corner_deltas(first, records_table(sm.corners))
        d = d.rename(columns={"time_A [s]": f"time_{names[0]} [s]", "time_B [s]": f"time_{n} [s]",
                              "delta_time [s]": f"delta_{n} [s]",
                              "min_speed_A [km/h]": f"min_speed_{names[0]} [km/h]",
                              "min_speed_B [km/h]": f"min_speed_{n} [km/h]"}).drop(
            columns=["delta_min_speed [km/h]"])
        out = d if out is None else out.merge(
            d.drop(columns=["name", "direction", "s_entry [m]", "s_exit [m]",
                            f"time_{names[0]} [s]", f"min_speed_{names[0]} [km/h]"]),
            on="number", how="inner")
    return out if out is not None else pd.DataFrame()


# ---------------------------------------------------------------------------------------
# a logged lap
# ---------------------------------------------------------------------------------------
TELEMETRY_COLUMNS = {k: CHANNEL_ALIASES[k].names for k in ("distance", "time", "speed")}
"""The accepted names of a logged lap's distance, time and speed columns (lower case, a unit in
brackets allowed: ``Speed [km/h]``, ``Distance (m)``); all of them in
:data:`pyomo_lap.analysis.telemetry.CHANNEL_ALIASES`."""


def telemetry_delta(run: pd.DataFrame, log: pd.DataFrame, scale: Optional[bool] = None,
                    units: Optional[dict] = None) -> tuple:
    """A logged lap against a run, aligned on distance.

    The logged distance starts at the run's start. With ``scale`` (None: when the two cover
    between 90 % and 110 % of each other's length) it is stretched to the run's length (a GPS
    distance is not the centreline's).

    Parameters
    ----------
    run : DataFrame
        The run's channels (:func:`pyomo_lap.results.table.read_trajectory`).
    log : DataFrame
        From :func:`read_telemetry` (``s``, ``t``, ``speed`` [m/s] and channels).
    scale : bool, optional
    units : dict, optional
        The logged channels' units (``read_telemetry``'s ``info['units']``): a channel in
        another unit than the run's is converted to the run's (a steering angle read in rad,
        the run's in deg), one whose unit has no conversion to the run's is not compared
        (``info['skipped']`` says both units).

    Returns
    -------
    (DataFrame, dict)
        On the union of both laps' points over the common stretch: ``s [m]``, ``t_run [s]``,
        ``t_log [s]`` (from the stretch's start), ``delta_t [s]`` (= t_log - t_run, > 0: time
        lost by the logged lap), ``speed_run [km/h]``, ``speed_log [km/h]``, and
        ``<name>_run [unit]``, ``<name>_log [unit]`` for each logged channel the run has by name;
        and ``info``: ``scale`` (the factor), ``compared`` and ``skipped`` channels.

    Raises
    ------
    ValueError
        No common stretch.
    """
    sa = _s_abs(run)
    L_run = sa[-1] - sa[0]
    d = log["s"].to_numpy(dtype=float)
    factor = 1.0
    if scale is None:
        scale = d[-1] > 0 and 0.9 <= L_run / d[-1] <= 1.1
    if scale and d[-1] > 0:
        factor = L_run / d[-1]
    sl = sa[0] + d * factor
    lo, hi = max(sa[0], sl[0]), min(sa[-1], sl[-1])
    if not hi - lo >= 1.0:
        raise ValueError(f"the logged lap ({sl[0]:.1f}-{sl[-1]:.1f} m once aligned) and the run "
                         f"({sa[0]:.1f}-{sa[-1]:.1f} m) have no common stretch")
    grid = np.union1d(sa[(sa >= lo) & (sa <= hi)], sl[(sl >= lo) & (sl <= hi)])
    grid = np.union1d(grid, [lo, hi])
    tr = np.interp(grid, sa, run["t"].to_numpy(dtype=float))
    tl = np.interp(grid, sl, log["t"].to_numpy(dtype=float))
    out = {"s [m]": grid, "t_run [s]": tr - tr[0], "t_log [s]": tl - tl[0]}
    out["delta_t [s]"] = out["t_log [s]"] - out["t_run [s]"]
    out["speed_run [km/h]"] = np.interp(grid, sa, run["speed_kmh"].to_numpy(dtype=float))
    out["speed_log [km/h]"] = 3.6 * np.interp(grid, sl, log["speed"].to_numpy(dtype=float))
    compared, skipped = [], []
    for name in log.columns:
        if name in ("s", "t", "speed") or name not in run.columns:
            continue
        unit = UNITS.get(name, "")
        given = (units or {}).get(name, "")
        factor_log = 1.0           # the log's values (in ``given``) to the run's unit
        if given and unit and given.replace(" ", "") != unit.replace(" ", ""):
            factor_log = unit_factor(given, unit)
            if factor_log is None:
                skipped.append(f"{name} (the log's values are in {given}, the run's in {unit}: "
                               "no conversion between them)")
                continue
        out[f"{name}_run [{unit}]"] = np.interp(grid, sa, run[name].to_numpy(dtype=float))
        out[f"{name}_log [{unit}]"] = factor_log * np.interp(grid, sl,
                                                             log[name].to_numpy(dtype=float))
        compared.append(name)
    return pd.DataFrame(out), {"scale": factor, "compared": compared, "skipped": skipped}


def _figure_telemetry(delta: pd.DataFrame, run_name: str, log_name: str, compared):
    plt = _plt()
    s = delta["s [m]"]
    n = 2 + min(len(compared), 3)
    fig, axs = plt.subplots(n, 1, figsize=(11, 2.2 * n + 1.5), sharex=True)
    axs[0].plot(s, delta["speed_run [km/h]"], color="tab:blue", label=f"{run_name} (optimum)")
    axs[0].plot(s, delta["speed_log [km/h]"], color="tab:orange", label=f"{log_name} (logged)")
    axs[0].set_ylabel("speed [km/h]")
    _legend_right(axs[0])
    axs[1].plot(s, delta["delta_t [s]"], color="tab:purple")
    axs[1].axhline(0.0, color="0.6", lw=0.8)
    axs[1].set_ylabel("t(logged) - t(run) [s]")
    for ax, name in zip(axs[2:], compared):
        run_col = next(c for c in delta.columns if c.startswith(f"{name}_run ["))
        ax.plot(s, delta[run_col], color="tab:blue")
        ax.plot(s, delta[run_col.replace("_run [", "_log [")], color="tab:orange")
        ax.set_ylabel(run_col.replace("_run", ""))
    axs[-1].set_xlabel("s [m]")
    final = float(delta["delta_t [s]"].iloc[-1])
    axs[0].set_title(f"{log_name} against {run_name}: {final:+.3f} s over "
                     f"{float(s.iloc[0]):.0f}-{float(s.iloc[-1]):.0f} m (> 0: time lost by the "
                     "logged lap)", fontsize=10)
    fig.tight_layout()
    return fig


def compare_telemetry(run_dir, telemetry, out_dir=None, n_sectors: int = 3, every=None,
                      scale: Optional[bool] = None, speed_unit: Optional[str] = None,
                      formats=("png",), echo=None, lap: Optional[int] = None) -> dict:
    """Overlay a logged lap on a run: speed, the time gained or lost along the lap and the
    channels both have, aligned on distance (:func:`read_telemetry`,
    :func:`telemetry_delta`). ``lap``: the lap of a logged outing to overlay (1-based;
    default the fastest complete one, :func:`pyomo_lap.analysis.telemetry.read_telemetry`).

    Writes ``telemetry.csv`` (the comparison on the union of both laps' points, or on a fixed
    step with ``every``: ``'1m'``, or ``'0.01s'`` of the run's time), ``telemetry_sectors.csv``
    (both laps' sector times) and ``telemetry.png`` (``.pdf`` on request) into ``out_dir``
    (default ``compare_<run>_vs_<logged file>`` next to the run).

    Returns
    -------
    dict
        ``delta``, ``sectors`` (DataFrames), ``delta_t_s`` (at the end of the common stretch,
        > 0: the logged lap is behind), ``info`` (of the reading and the alignment), ``files``.

    Raises
    ------
    ValueError
        See :func:`read_telemetry` and :func:`telemetry_delta`; bad ``every`` or ``formats``;
        ``out_dir`` a run's folder.
    """
    echo = echo or (lambda *_: None)
    formats = _check_formats(formats)
    if every is not None:
        parse_step(every)
    run_dir, telemetry = Path(run_dir), Path(telemetry)
    with _comparison_writer(out_dir, [run_dir],
                             f"compare_{run_dir.name}_vs_{telemetry.stem}") as writer:
        log, info = read_telemetry(telemetry, speed_unit=speed_unit, lap=lap)
        info["lap_asked"] = lap is not None
        delta, ainfo = telemetry_delta(read_trajectory(run_dir), log, scale=scale,
                                       units=info["units"])
        info.update(ainfo)
        s = delta["s [m]"].to_numpy()
        edges = np.linspace(s[0], s[-1], int(n_sectors) + 1)
        tr = np.interp(edges, s, delta["t_run [s]"])
        tl = np.interp(edges, s, delta["t_log [s]"])
        sectors = pd.DataFrame([{"sector": k + 1, "s_start [m]": edges[k],
                                 "s_end [m]": edges[k + 1],
                                 "time_run [s]": tr[k + 1] - tr[k],
                                 "time_log [s]": tl[k + 1] - tl[k],
                                 "delta [s]": (tl[k + 1] - tl[k]) - (tr[k + 1] - tr[k])}
                                for k in range(int(n_sectors))])
        table = delta if every is None else _at_steps(delta, every, "s [m]", "t_run [s]")
        fig = _figure_telemetry(delta, run_dir.name, telemetry.name, info["compared"])
        files = _write_comparison(writer, {"telemetry.csv": table,
                                           "telemetry_sectors.csv": sectors},
                                  fig, "telemetry", formats, echo)
        return {"delta": delta, "sectors": sectors, "table": table, "info": info, "files": files,
                "delta_t_s": float(delta["delta_t [s]"].iloc[-1])}
