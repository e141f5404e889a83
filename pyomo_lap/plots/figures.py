"""Plots of a results folder (matplotlib, Agg backend: no display needed).

:func:`plot_results` reads ``trajectory.parquet`` (or ``trajectory.csv``), ``summary.json`` and
the ``vehicle`` sheet of ``results.xlsx`` and writes one PNG per figure, plus, on request, all
figures as pages of one ``plots.pdf``:

=====================  ==========================================================================
file                   content
=====================  ==========================================================================
``track_map``          the sector seen from above: racing line coloured by speed, track edges,
                       centreline, distance markers (:func:`marker_step`), start/finish line
                       of a closed lap (start and end of an open sector), direction of travel
``racing_line``        lateral offset ``q2`` of the racing line from the centreline, with the
                       limits the car's centre can reach and the track edges
``elevation``          height of the centreline and grade along the sector
``speed``              speed, with the quasi-steady point-mass estimate (or a reference run),
                       and the time delta against it
``controls``           ``f_xa``, ``f_xb`` and the steer angle ``delta``
``attitudes``          heave ``q4``, pitch ``q5``, roll ``q6`` (as the paper's Figs. 4-8)
``power``              traction power against its limit ``P_max``
``gg``                 GG diagram: ``a_x`` against ``a_y`` (O3, in the car's frame, without
                       gravity) coloured by speed, with the car's friction envelope at the
                       10th, 50th and 90th percentile of the speed (:func:`friction_envelope`)
``vertical_loads``     the four vertical loads ``f_11z``, ``f_12z``, ``f_21z``, ``f_22z``
``sensitivities``      (runs with ``--sensitivities`` only) tornado chart: the change of the lap
                       time for +1 % of each parameter (:mod:`pyomo_lap.analysis.sensitivities`)
=====================  ==========================================================================

Distances on the horizontal axes are track coordinates ``s`` [m] (``s`` of the run's first
point plus ``s_sector``: past the start line of a closed track they count on). A distance
window ``s_range="1200:1800"`` (``pyomo-lap plot --range 1200:1800``, :func:`parse_range`)
limits every distance-based figure and the GG diagram to it and highlights it on the track
map. Legends are outside the axes (PNGs are saved with ``bbox_inches="tight"``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..analysis.compare import (
    _at_steps,
    _check_formats,
    _comparison_writer,
    _plt,
    _write_comparison,
    channel_differences,
    delta_along_track,
    parse_step,
    run_statistics,
    sector_deltas,
)
from ..folders.writer import ResultsWriter
from ..results.corners import corner_deltas, records_table
from ..results.summary import Summary, as_summary
from ..results.table import read_summary, read_trajectory
from ..vehicle.car import load_vehicle
from ..vehicle.envelope import ENVELOPE_NOTE, friction_envelope
from ..vehicle.schema import FIELD_OF_KEY
from .base import (
    RANGE_HELP,
    _legend_right,
    _literal,
    in_window,
    parse_range,
    resolve_range,
)
from .channels import (
    figure_attitudes,
    figure_controls,
    figure_gg,
    figure_power,
    figure_sensitivities,
    figure_speed,
    figure_vertical_loads,
)
from .sweep import figure_sweep_heatmap, figure_sweep_parameter, sweep_plots
from .track import (
    distance_label,
    edges_xy,
    figure_elevation,
    figure_racing_line,
    figure_track_map,
    marker_step,
)

backend_pdf, backend_pdf_available = attempt_import("matplotlib.backends.backend_pdf")

__all__ = ["plot_results", "compare_runs", "figure_compare", "FIGURES", "figure_track_map", "figure_racing_line",
           "figure_elevation", "figure_speed", "figure_controls", "figure_attitudes",
           "figure_power", "figure_gg", "figure_vertical_loads", "figure_sensitivities", "edges_xy",
           "figure_sweep_parameter", "figure_sweep_heatmap", "sweep_plots", "parse_range",
           "resolve_range", "in_window", "friction_envelope", "marker_step", "distance_label",
           "read_vehicle", "RANGE_HELP", "ENVELOPE_NOTE"]


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
"""Figure name -> function ``f(df, summary, vehicle, s_range=None) -> matplotlib Figure``
(``s_range``: a window [m] of track coordinate ``s``, :func:`parse_range`)."""


def read_vehicle_sheet(results_dir) -> dict:
    """Vehicle parameters from the ``vehicle`` sheet of ``results.xlsx`` (empty if absent)."""
    path = Path(results_dir) / "results.xlsx"
    if not path.exists():
        return {}
    try:
        sheet = pd.read_excel(path, sheet_name="vehicle")
    except ValueError:   # no such sheet
        return {}
    # the sheet names the parameters by their dotted names (mass.total); the figures read the
    # fields (m), as VehicleParameters has them
    return {FIELD_OF_KEY.get(str(k), str(k)): v for k, v in zip(sheet["parameter"], sheet["value"])}


def read_vehicle(results_dir, summary: Optional[Summary] = None) -> dict:
    """The vehicle parameters of a run: the ``vehicle`` sheet of ``results.xlsx``; without
    it, the run's vehicle file (``summary.vehicle_file``) if its parameters still have the
    SHA-256 the summary recorded (``vehicle_parameters_sha256``); else empty."""
    vehicle = read_vehicle_sheet(results_dir)
    summary = as_summary(summary) if summary is not None else None
    if vehicle or not summary or not summary.vehicle_file:
        return vehicle
    try:
        params = load_vehicle(summary.vehicle_file).as_dict()
    except (ValueError, OSError):
        return {}
    sha = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    return params if sha == summary.vehicle_parameters_sha256 else {}


def plot_results(results_dir, out_dir=None, formats: Sequence[str] = ("png",),
                 figures: Optional[Sequence[str]] = None, reference_dir=None, dpi: int = 120,
                 echo=None, s_range=None) -> list:
    """Write the figures of a results folder.

    Parameters
    ----------
    results_dir : str or Path
        A folder written by :func:`pyomo_lap.results.table.write_results`.
    out_dir : str or Path, optional
        Where to write (default ``<results_dir>/plots``). The figures are written by
        :class:`pyomo_lap.folders.writer.ResultsWriter` (add mode, ``by = "plot"``): inside
        ``results_dir`` (or another folder of pyomo_lap's) they are added to its manifest, so
        that the next solve into the folder replaces them with the rest, its lock held
        meanwhile; elsewhere, to the manifest of a folder of kind ``files``. A folder that is
        a link or holds one, a figure's name that is a link, a file of that name that is not
        pyomo_lap's or was edited since: refused before anything is drawn. Every file goes to
        a temporary file, all renamed onto their names at the end, never through a link.
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
    s_range : str or (A, B), optional
        A distance window [m] of track coordinate ``s`` as on the figures' horizontal axes
        (``s`` of the run's first point plus ``s_sector``): ``"1200:1800"``, ``":800"``,
        ``"1200:"`` or ``(1200, None)`` (:func:`parse_range`). Every distance-based figure
        shows the window only, the GG diagram its points, the track map highlights it.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    FileNotFoundError
        ``results_dir`` is not a results folder.
    ValueError
        Unknown figure name or format; a bad window or one not within the run (checked
        before anything is drawn or written); another run is writing into ``results_dir``
        (:class:`pyomo_lap.results.table.OutputBusyError`); a link or a file of the user's
        where a figure goes (:class:`pyomo_lap.folders.links.FolderNotReplaceableError`,
        nothing written).
    FolderWriteError (an OSError)
        A figure could not be written (a full disk): none was, the earlier ones are kept.
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
    parse_range(s_range, "s_range" if not isinstance(s_range, str) else "--range")
    df = read_trajectory(results_dir)
    summary = read_summary(results_dir)
    win = resolve_range(df, s_range, "s_range" if not isinstance(s_range, str) else "--range")
    if figures is None and not summary.sensitivities:
        names.remove("sensitivities")     # only for a run with --sensitivities
    vehicle = read_vehicle(results_dir, summary)
    ref = read_trajectory(reference_dir) if reference_dir is not None else None
    out = Path(out_dir) if out_dir is not None else results_dir / "plots"
    files = ([f"{n}.png" for n in names] if "png" in formats else []) + (
        ["plots.pdf"] if "pdf" in formats else [])
    with ResultsWriter.adding(out, "plot", names=files) as writer:     # before any drawing
        _draw(writer, names, formats, df, summary, vehicle, ref, reference_dir, win, dpi, echo)
    return list(writer.written)


def _within_by_name(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it by its name, links not followed
    (``RESULTS/plots`` is inside ``RESULTS`` even where ``plots`` is a link out of it)."""
    path = Path(os.path.abspath(Path(path).expanduser()))
    folder = Path(os.path.abspath(Path(folder).expanduser()))
    return path == folder or folder in path.parents


def _draw(writer: ResultsWriter, names, formats, df, summary, vehicle, ref, reference_dir, win,
          dpi, echo) -> None:
    """The figures ``names`` of :func:`plot_results` through its claimed writer: each PNG
    written whole (:meth:`pyomo_lap.folders.writer.ResultsWriter.write`), ``plots.pdf`` a page
    per figure, complete at the end; put in place when the writer commits."""
    plt = _plt()
    with contextlib.ExitStack() as stack:    # leaving it: plots.pdf closed, then kept
        pdf = None
        if "pdf" in formats:
            pdf = stack.enter_context(backend_pdf.PdfPages(
                stack.enter_context(writer.writing("plots.pdf"))))
        for name in names:
            if name == "speed" and ref is not None:
                fig = figure_speed(df, summary, vehicle, reference=ref,
                                   reference_label=_literal(Path(reference_dir).name),
                                   s_range=win)
            else:
                fig = FIGURES[name](df, summary, vehicle, s_range=win)
            fig.tight_layout()
            if "png" in formats:
                path = writer.write(f"{name}.png", lambda tmp: fig.savefig(
                    tmp, format="png", dpi=dpi, bbox_inches="tight"))   # legends outside the axes
                echo(f"  wrote {path}")
            if pdf is not None:
                pdf.savefig(fig, bbox_inches="tight")
            plt.close(fig)
    if pdf is not None:
        echo(f"  wrote {writer.written[-1]}")


# --------------------------------------------------------------------------------------------
# comparing two runs (the numbers: pyomo_lap.analysis.compare)
# --------------------------------------------------------------------------------------------

def figure_compare(delta: pd.DataFrame, label_a: str = "A", label_b: str = "B"):
    """Speed of both runs, time delta and lateral offsets along the track (the labels are
    drawn as literal text, :func:`_literal`)."""
    plt = _plt()
    label_a, label_b = _literal(label_a), _literal(label_b)
    s = delta["s [m]"]
    fig, axs = plt.subplots(3, 1, figsize=(10, 8), sharex=True,
                            gridspec_kw={"height_ratios": [2, 1.3, 1]})
    axs[0].plot(s, delta["speed_A [km/h]"], color="tab:blue", label=label_a)
    axs[0].plot(s, delta["speed_B [km/h]"], color="tab:orange", label=label_b)
    axs[0].set_ylabel("speed [km/h]")
    _legend_right(axs[0])
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
                 echo=None, every=None) -> dict:
    """Compare two results folders and write ``compare.csv``, ``compare_sectors.csv`` and
    ``compare.png`` (and ``compare.pdf`` on request).

    Parameters
    ----------
    dir_a, dir_b : str or Path
        Results folders (A is the reference).
    out_dir : str or Path, optional
        Where to write: a folder of its own, neither run's folder nor inside one, nor another
        results folder (default ``compare_<name of A>_vs_<name of B>`` next to ``dir_b``),
        written whole by :class:`pyomo_lap.folders.writer.ResultsWriter` (kind ``compare``:
        checked and locked before anything is read; a link, a file of the user's or one edited
        since is refused).
    n_sectors : int
        Equal parts of the overlap timed in the sector table.
    formats : sequence of str
        ``"png"`` and/or ``"pdf"``.
    echo : callable, optional
        Progress messages.
    every : str, optional
        ``compare.csv`` on a fixed step (:func:`pyomo_lap.analysis.compare.parse_step`:
        ``'1m'``, or ``'0.01s'`` of A's time).

    Returns
    -------
    dict
        ``delta`` (DataFrame of :func:`delta_along_track`), ``sectors`` (DataFrame of
        :func:`sector_deltas`), ``channels`` (:func:`channel_differences`: attitudes, loads,
        speed, line), ``runs`` (:func:`run_statistics`: model, lap time, NLP size,
        iterations, times), ``corners`` (:func:`pyomo_lap.results.corners.corner_deltas`: time
        and minimum speed in each corner both runs hold), ``delta_t_s`` (final delta),
        ``files`` (paths written: ``compare.csv``, ``compare_sectors.csv``,
        ``compare_channels.csv``, ``compare_runs.csv``, ``compare_corners.csv`` when there
        are corners, the figures).

    Raises
    ------
    FileNotFoundError
        A folder is not a results folder.
    ValueError
        The runs are on different tracks or do not overlap; bad ``formats``; ``out_dir`` is
        a run's folder, inside one, or a results folder (checked before anything is read).
    """
    echo = echo or (lambda *_: None)
    formats = _check_formats(formats)
    if every is not None:
        parse_step(every)
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    with _comparison_writer(out_dir, [dir_a, dir_b],
                            f"compare_{dir_a.name}_vs_{dir_b.name}") as writer:
        sum_a, sum_b = read_summary(dir_a), read_summary(dir_b)
        if sum_a.track != sum_b.track:
            raise ValueError(f"the runs are on different tracks: {sum_a.track!r} ({dir_a}) "
                             f"and {sum_b.track!r} ({dir_b})")
        delta = delta_along_track(read_trajectory(dir_a), read_trajectory(dir_b))
        sectors = sector_deltas(delta, n_sectors)
        channels = channel_differences(delta)
        runs = run_statistics(sum_a, sum_b)
        corners = corner_deltas(records_table(sum_a.corners), records_table(sum_b.corners))
        fig = figure_compare(delta, dir_a.name, dir_b.name)
        table = delta if every is None else _at_steps(delta, every, "s [m]", "t_A [s]")
        tables = {"compare.csv": table, "compare_sectors.csv": sectors,
                  "compare_channels.csv": channels, "compare_runs.csv": runs}
        if len(corners):
            tables["compare_corners.csv"] = corners
        files = _write_comparison(writer, tables, fig, "compare", formats, echo)
    return {"delta": delta, "sectors": sectors, "channels": channels, "runs": runs,
            "corners": corners, "delta_t_s": float(delta["delta_t [s]"].iloc[-1]),
            "files": files}
