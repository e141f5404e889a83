"""An interactive report of one run or several: one self-contained HTML file (Plotly).

:func:`write_report` (``pyomo-lap report RUN [RUN ...]``) reads the results folders and writes
``report.html``, which a browser opens without a network (plotly.js is embedded):

- the runs (lap or sector time, car, track, model, self-check) and, for several runs, the
  parameters in which they differ, each with its unit and its value in every run;
- the track map of the first run coloured by a channel chosen in a drop-down (speed,
  longitudinal and lateral acceleration, and throttle or brake when the run has them);
- the channels stacked against the track coordinate ``s`` [m] on one shared axis (speed,
  accelerations, steer angle, controls, vertical loads; for several runs, or a logged lap, the
  time delta against the first run on top): zooming one zooms all, and one cursor follows the
  mouse through every row and onto the track map and the GG diagram;
- the GG diagram with the convex hull of each run's points and the car's friction envelope
  at the first run's median speed (:func:`pyomo_lap.plots.figures.friction_envelope`);
- the per-corner table of a run whose folder has ``corners.csv`` (the section is left out
  otherwise).

Down-sampling (:func:`keep_extremes`): a trace of more than ``max_points`` points
(:data:`MAX_POINTS`) is cut into ``max_points // 2`` runs of consecutive points, and each
keeps its smallest and its largest value (and the trace its first and last point), so that
peaks and dips survive. The full Nordschleife lap (about 4,000 points) is drawn whole.

Where the file goes (:func:`report_path`): one run, by default ``RUN/report.html``; several
runs or a logged lap, by default ``report_<first>_and_<n>_more.html``
(``report_<run>_vs_<file>.html``) next to the first run. It is written by
:class:`pyomo_lap.folders.writer.ResultsWriter` (add mode, ``by = "report"``): inside a
results folder (a run's, or another's given as ``--out``) under the folder's lock and
recorded in its manifest, so the next solve into the folder replaces it with the rest;
elsewhere recorded in the manifest of its folder (kind ``files``). A ``report.html`` of the
user's, or one edited since, is never replaced (refused before anything is read), nor a link
followed; the file goes to a temporary file renamed onto its name: never half-written.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import
from scipy.spatial import ConvexHull, QhullError

from ..analysis.compare import (
    _s_abs,
    deltas_many,
    parameter_differences,
    read_telemetry,
    telemetry_delta,
    unique_run_names,
)
from ..folders.results_folder import check_results_folder
from ..folders.writer import ResultsWriter
from ..results.summary import Summary
from ..results.table import read_summary, read_trajectory
from ..vehicle.schema import FIELD_OF_KEY, VehicleParameters, field_of
from .figures import _within_by_name, edges_xy, friction_envelope, read_vehicle

go, go_available = attempt_import("plotly.graph_objects")
plotly_offline, plotly_offline_available = attempt_import("plotly.offline")

__all__ = ["write_report", "report_html", "report_path", "keep_extremes", "load_run",
           "parameter_table", "MAX_POINTS", "MIN_POINTS", "MAP_CHANNELS", "find_chromium", "chromium_load"]

MAX_POINTS = 20_000
"""Most points drawn per trace; longer traces keep the extremes of each bin
(:func:`keep_extremes`)."""

MIN_POINTS = 4
"""Fewest points per trace :func:`keep_extremes` takes (two bins of two extremes): the one
rule of ``max_points`` (``pyomo-lap report --max-points``)."""

MARKER_POINTS = 2_500
"""Most markers of the track map and of each run in the GG diagram (one marker is one SVG
element: a full lap's 5,400 points would double the load time for nothing a screen shows);
more points are thinned by :func:`keep_extremes` (the track map: on the speed, so the minima
and maxima of the speed are kept; the GG diagram: on a_x and a_y, half as many bins). The
convex hull is taken over all the points."""

WEBGL_FROM = 10_000
"""Traces of at least this many points are drawn with WebGL (``Scattergl``), shorter ones as
SVG (``Scatter``): in headless Chromium (software WebGL) the full lap's report (5,400 points a
trace) loaded in 4.8 s with SVG and 7.3 s with WebGL, on a loaded machine
(benchmarks/report.py); WebGL pays when a trace has tens of thousands of points."""

MAP_CHANNELS = (("speed_kmh", "speed", "km/h", 1.0),
                ("a_x", "longitudinal acceleration a_x", "g", "g"),
                ("a_y", "lateral acceleration a_y", "g", "g"),
                ("throttle", "throttle", "%", 1.0),
                ("brake", "brake", "%", 1.0))
"""The channels of the track map's drop-down: ``(column, label, unit, factor)`` (``"g"``:
divided by the car's gravity); a column the run does not have is left out."""

_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


def keep_extremes(y: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of the points of a trace to draw: all of them when there are at most
    ``max_points``; else, in each of ``max_points // 2`` runs of consecutive points, the
    smallest and the largest value, and the first and the last point of the trace.

    Parameters
    ----------
    y : (n,) or (n, k) array
        The trace's values (k channels drawn on the same points: the extremes of each are kept,
        so a trace may then keep up to ``k * max_points`` points).
    max_points : int
        >= :data:`MIN_POINTS` (4).

    Returns
    -------
    (m,) int array
        Sorted, unique.

    Raises
    ------
    ValueError
        ``max_points`` < :data:`MIN_POINTS`.
    """
    if int(max_points) < MIN_POINTS:
        raise ValueError(f"max_points = {max_points!r}: expected an integer >= {MIN_POINTS}")
    y = np.asarray(y, dtype=float)
    y = y[:, None] if y.ndim == 1 else y
    n = len(y)
    if n <= max_points:
        return np.arange(n)
    edges = np.linspace(0, n, int(max_points) // 2 + 1).astype(int)
    keep = [np.array([0, n - 1])]
    filled = np.where(np.isfinite(y), y, np.nan)
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        block = filled[lo:hi]
        with np.errstate(all="ignore"):
            if np.all(np.isnan(block)):
                continue
            keep.append(lo + np.nanargmin(np.where(np.isnan(block), np.inf, block), axis=0))
            keep.append(lo + np.nanargmax(np.where(np.isnan(block), -np.inf, block), axis=0))
    return np.unique(np.concatenate(keep))


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------
def load_run(folder, name: Optional[str] = None) -> dict:
    """What the report needs of one results folder.

    Returns
    -------
    dict
        ``name``, ``folder`` (Path), ``df`` (channels,
        :func:`pyomo_lap.results.table.read_trajectory`),
        ``s`` (absolute track coordinate [m]), ``summary``
        (:class:`pyomo_lap.results.summary.Summary`), ``vehicle`` (parameters by field,
        :func:`pyomo_lap.plots.figures.read_vehicle`), ``g`` (gravity [m/s^2]), ``corners``
        (``corners.csv`` as a DataFrame, or None).

    Raises
    ------
    ValueError
        Not a complete results folder (:func:`pyomo_lap.folders.results_folder.check_results_folder`).
    """
    folder = check_results_folder(folder)
    df = read_trajectory(folder)
    summary = read_summary(folder)
    vehicle = _vehicle_of(summary) or read_vehicle(folder, summary)
    corners = None
    if (folder / "corners.csv").is_file():
        corners = pd.read_csv(folder / "corners.csv")
    return {"name": name or folder.name, "folder": folder, "df": df, "s": _s_abs(df),
            "summary": summary, "vehicle": vehicle,
            "g": float(vehicle.get("gravity", 9.81) or 9.81), "corners": corners}


def _vehicle_of(summary: Summary) -> dict:
    """The vehicle parameters recorded in ``summary.json`` (dotted names), by field name as
    :func:`pyomo_lap.plots.figures.friction_envelope` reads them; empty when none."""
    params = summary.vehicle_parameters or {}
    return {FIELD_OF_KEY.get(k, k): v for k, v in params.items()}


def _unit_of_parameter(key: str) -> str:
    """The unit of a vehicle parameter (dotted name), '' when unknown or dimensionless."""
    try:
        info = VehicleParameters.model_fields[field_of(key)]
    except (KeyError, ValueError):
        return ""
    return str((info.json_schema_extra or {}).get("unit", ""))


def parameter_table(runs: Sequence[dict]) -> pd.DataFrame:
    """The parameters in which runs differ: one row per parameter, ``parameter``, ``unit``
    and one column per run with its value (:func:`pyomo_lap.analysis.compare.parameter_differences`:
    the car, the track, the model and every vehicle parameter). Empty when all agree."""
    diffs = parameter_differences([r["summary"] for r in runs])
    keys = list(diffs[0]) if diffs else []
    rows = [{"parameter": k, "unit": _unit_of_parameter(k),
             **{r["name"]: d.get(k) for r, d in zip(runs, diffs)}} for k in keys]
    return pd.DataFrame(rows, columns=["parameter", "unit"] + [r["name"] for r in runs])


# ---------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------
def _go():
    return go


def _scatter(n: int):
    """The trace type for ``n`` points (:data:`WEBGL_FROM`)."""
    go = _go()
    return go.Scattergl if n >= WEBGL_FROM else go.Scatter


def _values(run: dict, column: str, factor) -> Optional[np.ndarray]:
    if column not in run["df"].columns:
        return None
    f = 1.0 / run["g"] if factor == "g" else float(factor)
    return run["df"][column].to_numpy(dtype=float) * f


def _fig_map(run: dict, idx: np.ndarray):
    """The track map of a run: edges, racing line coloured by the drop-down's channel, the
    cursor (last trace)."""
    go = _go()
    g = edges_xy(run["df"])
    fig = go.Figure()
    for side in ("left", "right"):
        xy = g[side][idx]
        fig.add_trace(_scatter(len(xy))(x=xy[:, 0], y=xy[:, 1], mode="lines", hoverinfo="skip",
                                   line={"color": "#999", "width": 1}, showlegend=False))
    chans = [(c, label, unit, v[idx]) for c, label, unit, f in MAP_CHANNELS
             if (v := _values(run, c, f)) is not None]
    line = g["line"][idx]
    c0, label0, unit0, v0 = chans[0]
    fig.add_trace(_scatter(len(line))(
        x=line[:, 0], y=line[:, 1], mode="markers", customdata=run["s"][idx],
        marker={"color": v0, "colorscale": "Viridis", "size": 4,
                "colorbar": {"title": {"text": f"{label0} [{unit0}]"}}},
        hovertemplate="s = %{customdata:.0f} m<br>value = %{marker.color:.3g}<extra></extra>",
        name="racing line", showlegend=False))
    fig.add_trace(go.Scatter(x=[line[0, 0]], y=[line[0, 1]], mode="markers", hoverinfo="skip",
                             marker={"color": "red", "size": 12, "symbol": "circle-open",
                                     "line": {"width": 3}}, showlegend=False))
    buttons = [{"label": f"{label} [{unit}]", "method": "restyle",
                "args": [{"marker.color": [v], "marker.colorbar.title.text": f"{label} [{unit}]"},
                         [2]]} for c, label, unit, v in chans]
    fig.update_layout(
        height=620, margin={"l": 50, "r": 20, "t": 60, "b": 40},
        updatemenus=[{"buttons": buttons, "x": 0.0, "y": 1.12, "xanchor": "left",
                      "yanchor": "top", "showactive": True}],
        xaxis={"title": {"text": "x [m]"}, "constrain": "domain"},
        yaxis={"title": {"text": "y [m]"}, "scaleanchor": "x", "scaleratio": 1})
    return fig


def _stack_rows(runs: Sequence[dict], extra: bool) -> list:
    """The rows of the stacked channels: ``(title, [(column, label, factor, dash)])``, only
    those with a column in the first run."""
    have = set(runs[0]["df"].columns)
    rows = [("time delta [s]", [])] if extra else []
    rows += [("speed [km/h]", [("speed_kmh", "speed", 1.0, None)]),
             ("a_x [g]", [("a_x", "a_x", "g", None)]),
             ("a_y [g]", [("a_y", "a_y", "g", None)]),
             ("steer angle delta [deg]", [("delta", "delta", 180.0 / np.pi, None)])]
    ctl = [("f_xa", "f_xa", 1e-3, None), ("f_xb", "f_xb", 1e-3, "dot")]
    rows.append(("controls f_xa, f_xb [kN]", ctl))
    pedals = [(c, c, 1.0, d) for c, d in (("throttle", None), ("brake", "dot")) if c in have]
    if pedals:
        rows.append(("throttle, brake [%]", pedals))
    loads = [(c, c, 1e-3, d) for c, d in (("f_11z", None), ("f_12z", "dot"), ("f_21z", "dash"),
                                            ("f_22z", "dashdot"))]
    rows.append(("vertical loads [kN]", loads))
    return [(t, [c for c in cols if c[0] in have]) for t, cols in rows
            if not cols or any(c[0] in have for c in cols)]


def _fig_stack(runs: Sequence[dict], delta: Optional[pd.DataFrame], log: Optional[dict],
               max_points: int):
    """Channels against ``s`` [m], one row each on ONE x axis (so that the hover and the
    spike line go through every row, and a zoom zooms all); the time delta on top when given
    (``delta``: :func:`pyomo_lap.analysis.compare.deltas_many` or the logged lap's)."""
    go = _go()
    rows = _stack_rows(runs, delta is not None)
    n = len(rows)
    fig = go.Figure()

    def add(r, **kw):
        fig.add_trace(_scatter(len(kw["x"]))(xaxis="x", yaxis="y" if r == 1 else f"y{r}",
                                              mode="lines", **kw))

    k0 = 0
    if delta is not None:
        s = delta["s [m]"].to_numpy()
        for j, name in enumerate(delta.attrs["names"]):
            y = delta[f"delta_{name} [s]"].to_numpy()
            i = keep_extremes(y, max_points)
            add(1, x=s[i], y=y[i], name=name, legendgroup=name, showlegend=False,
                hovertemplate="delta %{y:.3f} s", line={"color": _COLOURS[j % 10], "width": 1.3})
        k0 = 1
    for j, run in enumerate(runs):
        for r, (_, cols) in enumerate(rows[k0:], start=k0 + 1):
            ok = [(c, y) for c in cols if (y := _values(run, c[0], c[2])) is not None]
            if not ok:
                continue
            i = keep_extremes(np.column_stack([y for _, y in ok]), max_points)
            for (c, label, _, dash), y in ok:
                add(r, x=run["s"][i], y=y[i], name=run["name"], legendgroup=run["name"],
                    showlegend=(r == k0 + 1 and c == cols[0][0]),
                    hovertemplate=f"{html.escape(label)} %{{y:.4g}}",
                    line={"color": _COLOURS[j % 10], "width": 1.2, "dash": dash})
    if log is not None:
        _add_log_traces(add, rows[k0:], log, k0, max_points)
    gap, height = 0.012, 190 * n + 120
    layout = {"height": height, "hovermode": "x", "hoversubplots": "axis",
              "margin": {"l": 70, "r": 20, "t": 40, "b": 50},
              "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom"},
              "xaxis": {"anchor": f"y{n}" if n > 1 else "y", "showspikes": True,
                        "spikemode": "across", "spikesnap": "cursor", "spikethickness": 1,
                        "spikecolor": "#444", "spikedash": "solid",
                        "title": {"text": "track coordinate s [m]"}}}
    for r, (title, _) in enumerate(rows, start=1):
        hi = 1.0 - (r - 1) / n
        layout["yaxis" if r == 1 else f"yaxis{r}"] = {
            "domain": [max(hi - 1.0 / n + gap, 0.0), hi - gap if r > 1 else hi],
            "title": {"text": title, "font": {"size": 11}}}
    fig.update_layout(**layout)
    return fig


def _add_log_traces(add, rows, log: dict, k0: int, max_points: int) -> None:
    """The logged lap's speed and channels (those the run has) on their rows, dashed grey
    (``add(row, **trace)`` draws a line on a row)."""
    table, name = log["table"], log["name"]
    s = table["s [m]"].to_numpy()
    first = True
    for r, (_, cols) in enumerate(rows, start=k0 + 1):
        for c, label, f, _ in cols:
            key = "speed_log [km/h]" if c == "speed_kmh" else next(
                (k for k in table.columns if k.startswith(f"{c}_log [")), None)
            if key is None:
                continue
            y = table[key].to_numpy(dtype=float) * (1.0 / log["g"] if f == "g" else float(f))
            i = keep_extremes(y, max_points)
            add(r, x=s[i], y=y[i], name=name, legendgroup=name, showlegend=first,
                hovertemplate=f"{html.escape(label)} %{{y:.4g}}",
                line={"color": "#555", "width": 1.2, "dash": "dash"})
            first = False


def _hull(x: np.ndarray, y: np.ndarray) -> Optional[np.ndarray]:
    """The closed convex hull of the points (x, y), (m + 1, 2); None when they do not span
    an area."""
    pts = np.c_[x, y][np.isfinite(x) & np.isfinite(y)]
    try:
        v = ConvexHull(pts).vertices
    except (QhullError, ValueError, IndexError):
        return None
    return pts[np.r_[v, v[:1]]]


def _fig_gg(runs: Sequence[dict], max_points: int):
    """GG diagram: a_x against a_y [g] of each run, the convex hull of its points, the car's
    friction envelope at the first run's median speed; the cursor (last trace)."""
    go = _go()
    fig = go.Figure()
    one = len(runs) == 1
    for j, run in enumerate(runs):
        ay, ax = _values(run, "a_y", "g"), _values(run, "a_x", "g")
        i = keep_extremes(np.c_[ay, ax], max(min(max_points, MARKER_POINTS) // 2, MIN_POINTS))
        colour = _COLOURS[j % 10]
        marker = ({"color": run["df"]["speed_kmh"].to_numpy()[i], "colorscale": "Viridis",
                   "size": 4, "colorbar": {"title": {"text": "speed [km/h]"}}} if one
                  else {"color": colour, "size": 4})
        fig.add_trace(_scatter(len(i))(x=ay[i], y=ax[i], mode="markers", marker=marker,
                                   name=f"{run['name']}: points", customdata=run["s"][i],
                                   hovertemplate="s = %{customdata:.0f} m<br>a_y %{x:.3f} g"
                                                 "<br>a_x %{y:.3f} g<extra></extra>"))
        hull = _hull(ay, ax)
        if hull is not None:
            fig.add_trace(go.Scatter(x=hull[:, 0], y=hull[:, 1], mode="lines", hoverinfo="skip",
                                     line={"color": colour, "width": 1.5, "dash": "dot"},
                                     name=f"{run['name']}: convex hull of its points"))
    run = runs[0]
    v50 = float(np.median(run["df"]["speed_kmh"]))
    try:
        env = friction_envelope(run["vehicle"], v50 / 3.6)
        fig.add_trace(go.Scatter(x=env["a_y"] / run["g"], y=env["a_x"] / run["g"], mode="lines",
                                 hoverinfo="skip", line={"color": "black", "width": 2},
                                 name=f"the car's friction envelope at {v50:.0f} km/h "
                                      f"(median speed of {run['name']})"))
    except KeyError as exc:
        fig.add_annotation(text=f"no friction envelope: vehicle parameter {exc.args[0]!r} "
                                "missing", showarrow=False, xref="paper", yref="paper", x=0, y=1)
    fig.add_trace(go.Scatter(x=[float(_values(run, "a_y", "g")[0])],
                             y=[float(_values(run, "a_x", "g")[0])], mode="markers",
                             hoverinfo="skip", showlegend=False,
                             marker={"color": "red", "size": 12, "symbol": "circle-open",
                                     "line": {"width": 3}}))
    fig.update_layout(height=640, margin={"l": 60, "r": 20, "t": 30, "b": 40},
                      legend={"orientation": "h", "y": -0.12},
                      xaxis={"title": {"text": "lateral a_y [g] (+ left)"}, "zeroline": True,
                             "constrain": "domain"},
                      yaxis={"title": {"text": "longitudinal a_x [g] (+ forward)"},
                             "scaleanchor": "x", "scaleratio": 1, "zeroline": True})
    return fig


# ---------------------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,Segoe UI,Helvetica,Arial,sans-serif;margin:16px 24px;
color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:12px}
.row{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px}
@media (max-width:1100px){.row{grid-template-columns:minmax(0,1fr)}}"""

_CURSOR_JS = """
window.addEventListener('load', function () {
  var d = %s, st = document.getElementById('report-stack');
  var mp = document.getElementById('report-map'), gg = document.getElementById('report-gg');
  function nearest(s) {
    var lo = 0, hi = d.s.length - 1;
    while (hi - lo > 1) { var m = (lo + hi) >> 1; if (d.s[m] <= s) lo = m; else hi = m; }
    return (s - d.s[lo] <= d.s[hi] - s) ? lo : hi;
  }
  if (st && st.on) st.on('plotly_hover', function (ev) {
    var i = nearest(ev.points[0].x);
    if (mp) Plotly.restyle(mp, {x: [[d.x[i]]], y: [[d.y[i]]]}, [mp.data.length - 1]);
    if (gg) Plotly.restyle(gg, {x: [[d.ay[i]]], y: [[d.ax[i]]]}, [gg.data.length - 1]);
  });
  document.body.setAttribute('data-load-ms', performance.now().toFixed(0));
});
"""


def plain_number(v: float, digits: int = 4) -> str:
    """``v`` to ``digits`` significant digits as a plain number (``20724``, ``3.724``,
    ``0.0125``, trailing zeros dropped as ``g`` drops them; whole digits are never cut:
    ``20724.1`` is ``20724``); below 1e-3 (not 0) ``g`` form."""
    if v != 0 and abs(v) < 1e-3:
        return f"{v:.{digits}g}"
    whole = int(math.floor(math.log10(abs(v)))) + 1 if v != 0 else 1
    text = f"{v:.{max(0, digits - whole)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _table_html(frame: pd.DataFrame, digits: int = 4) -> str:
    """A DataFrame as an HTML table (text escaped, floats to ``digits`` significant digits,
    written as plain numbers: 20724 m, not 2.072e+04; below 1e-3 in exponent form)."""
    def cell(v):
        if isinstance(v, (float, np.floating)):
            return "" if not np.isfinite(v) else plain_number(float(v), digits)
        return "" if v is None else str(v)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _runs_table(runs: Sequence[dict]) -> pd.DataFrame:
    rows = []
    for r in runs:
        sm = r["summary"]
        check = sm.self_check
        rows.append({"run": r["name"], "folder": str(r["folder"]),
                     "lap or sector time [s]": sm.lap_time_s,
                     "closed lap": bool(sm.periodic),
                     "from [m]": float(r["s"][0]), "to [m]": float(r["s"][-1]),
                     "mean speed [km/h]": sm.mean_speed_kmh,
                     "max speed [km/h]": sm.max_speed_kmh, "car": sm.vehicle,
                     "track": sm.track, "model": sm.model,
                     "self-check": check.get("verdict") if isinstance(check, dict) else check})
    return pd.DataFrame(rows)


def _mark(what: str) -> str:
    """A script that records when the page got there (``data-ms-<what>`` on the root
    element, [ms] from the start of the navigation: what benchmarks/report.py reads)."""
    key = re.sub(r"[^a-z0-9]+", "-", what.lower())
    return (f"<script>document.documentElement.setAttribute('data-ms-{key}', "
            "performance.now().toFixed(0));</script>")


def _cursor_data(run: dict, idx: np.ndarray) -> str:
    """The points the linked cursor jumps to (JSON): ``s`` [m], the racing line ``x``, ``y``
    [m], ``ay``, ``ax`` [g] of the first run at the map's points."""
    line = edges_xy(run["df"])["line"][idx]
    d = {"s": run["s"][idx], "x": line[:, 0], "y": line[:, 1],
         "ay": _values(run, "a_y", "g")[idx], "ax": _values(run, "a_x", "g")[idx]}
    return json.dumps({k: [round(float(v), 3) for v in a] for k, a in d.items()})


def report_html(runs: Sequence[dict], telemetry: Optional[dict] = None,
                max_points: int = MAX_POINTS, title: Optional[str] = None) -> str:
    """The report's page (one self-contained HTML document, plotly.js embedded).

    Parameters
    ----------
    runs : sequence of dict
        From :func:`load_run`; the first is the reference (map, cursor, envelope, deltas).
    telemetry : dict, optional
        A logged lap against the single run: ``name``, ``table`` and ``info`` of
        :func:`pyomo_lap.analysis.compare.telemetry_delta`, ``g`` [m/s^2].
    max_points : int
        Most points per trace (:func:`keep_extremes`).
    title : str, optional

    Raises
    ------
    ValueError
        The runs are on different tracks or do not overlap.
    """
    first = runs[0]
    delta = None
    if len(runs) > 1:
        tracks = {r["summary"].track for r in runs}
        if len(tracks) > 1:
            raise ValueError("the runs are on different tracks: " + ", ".join(
                f"{r['summary'].track!r} ({r['folder']})" for r in runs))
        delta = deltas_many([r["df"] for r in runs], [r["name"] for r in runs])
        delta.attrs["names"] = [r["name"] for r in runs]
    elif telemetry is not None:
        tab = telemetry["table"]
        delta = pd.DataFrame({"s [m]": tab["s [m]"], f"delta_{telemetry['name']} [s]":
                              tab["delta_t [s]"]})
        delta.attrs["names"] = [telemetry["name"]]
    idx = keep_extremes(first["df"]["speed_kmh"].to_numpy(dtype=float),
                        min(max_points, MARKER_POINTS))
    figs = [("report-map", _fig_map(first, idx)), ("report-stack", _fig_stack(
        runs, delta, telemetry, max_points)), ("report-gg", _fig_gg(runs, max_points))]
    divs = {}
    for div_id, fig in figs:
        divs[div_id] = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                                   config={"displaylogo": False, "responsive": True})
        divs[div_id] += _mark(div_id)
    return _page(runs, telemetry, delta, divs, _cursor_data(first, idx), title)


def _page(runs, telemetry, delta, divs: dict, cursor: str, title) -> str:
    """Put the sections together."""
    esc = html.escape
    title = title or ("report: " + ", ".join(r["name"] for r in runs)
                      + (f" and the logged lap {telemetry['name']}" if telemetry else ""))
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
             f"<style>{_CSS}</style><script type='text/javascript'>"
             f"{plotly_offline.get_plotlyjs()}</script>"
             f"{_mark('plotly.js')}</head><body><h1>{esc(title)}</h1>",
             "<h2>Runs</h2>", _table_html(_runs_table(runs))]
    if len(runs) > 1:
        params = parameter_table(runs)
        parts.append(f"<h2>Parameters that differ ({len(params)})</h2>")
        parts.append(_table_html(params) if len(params) else
                     "<p class='note'>none: the runs have the same car, track and model</p>")
    if delta is not None:
        names = delta.attrs["names"]
        ends = ", ".join(f"{esc(n)} {float(delta[f'delta_{n} [s]'].iloc[-1]):+.3f} s"
                         for n in names)
        ref = runs[0]["name"] if len(runs) > 1 else f"{runs[0]['name']} (the optimum)"
        parts.append(f"<p class='note'>time delta against {esc(ref)} over "
                     f"{float(delta['s [m]'].iloc[0]):.0f}-{float(delta['s [m]'].iloc[-1]):.0f} m"
                     f" (&gt; 0: behind it): {ends}</p>")
    parts += ["<div class='row'><div><h2>Track map</h2>", divs["report-map"],
              "</div><div><h2>GG diagram</h2>", divs["report-gg"], "</div></div>",
              "<h2>Channels along the track</h2><p class='note'>one shared axis: drag to zoom, "
              "double-click to reset; the cursor shows on the track map and the GG diagram</p>",
              divs["report-stack"]]
    for r in runs:
        if r["corners"] is not None:
            parts.append(f"<h2>Corners of {esc(r['name'])}</h2>")
            parts.append(_table_html(r["corners"]))
    parts.append(f"<script>{_CURSOR_JS % cursor}</script></body></html>")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------
def report_path(runs, out=None, telemetry=None) -> tuple:
    """Where the report goes, and the results folder it is inside (or None).

    Default: ``RUN/report.html`` for one run; ``report_<first>_and_<n>_more.html`` (several
    runs) or ``report_<run>_vs_<file stem>.html`` (a logged lap) next to the first run. An
    ``out`` inside one of the runs' folders (by name, links not followed) counts as inside it.

    Returns
    -------
    (Path, Path or None)

    Raises
    ------
    ValueError
        ``out`` does not end in ``.html`` or ``.htm``, or is a folder.
    """
    runs = [Path(r) for r in runs]
    if out is None:
        if len(runs) == 1 and telemetry is None:
            out = runs[0] / "report.html"
        elif telemetry is not None:
            out = runs[0].parent / f"report_{runs[0].name}_vs_{Path(telemetry).stem}.html"
        else:
            out = runs[0].parent / f"report_{runs[0].name}_and_{len(runs) - 1}_more.html"
    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--out {out}: expected a file name ending in .html")
    if out.is_dir() and not os.path.islink(out):
        raise ValueError(f"--out {out} is a folder: expected a file name ending in .html")
    inside = next((r for r in runs if _within_by_name(out, r)), None)
    return out, inside


def write_report(runs, out=None, telemetry=None, max_points: int = MAX_POINTS,
                 speed_unit: Optional[str] = None, echo=None) -> Path:
    """Write the interactive report of one or more results folders (``pyomo-lap report``).

    Parameters
    ----------
    runs : sequence of str or Path
        Results folders of ``pyomo-lap solve`` on the same track; the first is the reference.
    out : str or Path, optional
        The HTML file (:func:`report_path` for the default), written by
        :class:`pyomo_lap.folders.writer.ResultsWriter` (module docstring): inside a results
        folder under its lock, after :func:`pyomo_lap.folders.links.refuse_links`, and
        recorded in its manifest (``by = "report"``); elsewhere in its folder's.
    telemetry : str or Path, optional
        A logged lap (CSV, :func:`pyomo_lap.analysis.compare.read_telemetry`) to overlay on the
        single run, aligned on distance (:func:`pyomo_lap.analysis.compare.telemetry_delta`).
    max_points : int
        Most points per trace (:func:`keep_extremes`).
    speed_unit : str, optional
        The logged speed's unit when its header does not say.
    echo : callable, optional
        Progress messages.

    Returns
    -------
    Path
        The file written (temporary file, then :func:`os.replace`: never through a link).

    Raises
    ------
    ValueError
        No run; ``telemetry`` with more than one run; not a results folder; runs on different
        tracks or without a common stretch; a bad ``out``; the folder is busy or holds a link;
        a file of that name that is the user's or was edited since (before anything is read).
    FolderWriteError (an OSError)
        It could not be written (a full disk): the earlier file is kept.
    """
    echo = echo or (lambda *_: None)
    runs = [Path(r) for r in runs]
    if not runs:
        raise ValueError("no run given: expected one results folder or more")
    if telemetry is not None and len(runs) != 1:
        raise ValueError(f"telemetry compares one run with a logged lap; {len(runs)} runs given")
    out, _inside = report_path(runs, out, telemetry)
    with ResultsWriter.adding(out.parent, "report", names=[out.name]) as writer:   # before work
        names = unique_run_names(runs)
        loaded = [load_run(r, n) for r, n in zip(runs, names)]
        log = None
        if telemetry is not None:
            frame, info = read_telemetry(telemetry, speed_unit=speed_unit)
            table, ainfo = telemetry_delta(loaded[0]["df"], frame, units=info["units"])
            log = {"name": f"{Path(telemetry).name} (logged)", "table": table,
                   "info": {**info, **ainfo}, "g": loaded[0]["g"]}
        writer.write_text(out.name, report_html(loaded, log, max_points))
    out = writer.written[-1]
    echo(f"  wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return out


# ---------------------------------------------------------------------------------------
# opening it in a browser (tests, benchmarks/report.py, the docs' screenshot)
# ---------------------------------------------------------------------------------------
def find_chromium() -> Optional[str]:
    """The Chromium (or Chrome) executable: ``$PYOMO_LAP_CHROMIUM``, else ``chromium``,
    ``chromium-browser``, ``google-chrome`` on PATH; None when there is none."""
    given = os.environ.get("PYOMO_LAP_CHROMIUM")
    if given:
        return shutil.which(given)
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM_FLAGS = ("--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
                  "--v=0", "--enable-unsafe-swiftshader", "--hide-scrollbars",
                  "--no-first-run", "--disable-extensions")
"""Headless Chromium's flags: no display, no GPU (WebGL by SwiftShader, opted in so that
Chromium does not log its deprecation warning), the page's console messages on stderr."""


def chromium_load(path, screenshot=None, window=(1400, 2400), budget_ms: int = 0,
                  timeout: float = 120.0, chromium: Optional[str] = None) -> dict:
    """Open an HTML file in headless Chromium and dump its DOM once loaded (and a screenshot).

    Parameters
    ----------
    path : str or Path
        The HTML file.
    screenshot : str or Path, optional
        A PNG to write (a second Chromium run, of ``window`` pixels).
    window : (int, int)
        Width, height [px].
    budget_ms : int
        ``--virtual-time-budget`` [ms] (0: none; the DOM is dumped at the load event).
    timeout : float
        [s] per Chromium run.
    chromium : str, optional
        The executable (default :func:`find_chromium`).

    Returns
    -------
    dict
        ``dom`` (str), ``stderr`` (str), ``wall_s`` (of the DOM dump), ``console`` (the
        lines of the page's console messages and uncaught errors in stderr; not the
        "GL Driver Message" lines Chromium logs about its software WebGL).

    Raises
    ------
    FileNotFoundError
        No Chromium.
    subprocess.TimeoutExpired
    """
    exe = chromium or find_chromium()
    if exe is None:
        raise FileNotFoundError("no Chromium: install it (Debian: apt-get install chromium) or "
                                "set PYOMO_LAP_CHROMIUM")
    url = Path(path).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="pyomo_lap_chromium_") as profile:
        flags = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                 f"--window-size={window[0]},{window[1]}"]
        if budget_ms:
            flags.append(f"--virtual-time-budget={int(budget_ms)}")
        t0 = time.perf_counter()
        res = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True,
                             timeout=timeout)
        wall = time.perf_counter() - t0
        err = res.stderr
        if screenshot is not None:
            shot = subprocess.run(flags + [f"--screenshot={Path(screenshot).resolve()}", url],
                                  capture_output=True, text=True, timeout=timeout)
            err += shot.stderr
    console = [ln for ln in err.splitlines() if re.search(r"CONSOLE|Uncaught", ln)
               and "GL Driver Message" not in ln]     # Chromium's own, of its software WebGL
    return {"dom": res.stdout, "stderr": err, "wall_s": wall, "console": console}
