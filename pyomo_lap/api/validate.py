"""``pyomo-lap validate``: a-posteriori checks of a results folder, and a verdict.

:func:`validate_results` replays the optimal controls in the time-domain simulation with
path-following steering (and, optionally, open loop), measures the collocation defects, the
model's own limits and the smoothness and consistency of the channels, from ``summary.json``
and the trajectory table alone (no re-solve), and writes ``validation.json``, ``defects.csv``
and its figures (:mod:`pyomo_lap.plots.validation`) into the folder. Every vehicle model whose
``VehicleModel`` has ``dynamics`` is checked the same way, through them
(:class:`pyomo_lap.verify.defects.SolvedTable`, :class:`pyomo_lap.ocp.vehicle_model.ModelDynamics`).
The checks, their thresholds (and where they come from) and the verdict are those of
:mod:`pyomo_lap.verify.verdict`.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from ..folders.writer import ResultsWriter
from ..ocp.build import vehicle_model
from ..plots.validation import plot_defects, plot_replay
from ..results.summary import Summary
from ..results.table import read_trajectory
from ..verify.defects import SolvedTable, collocation_defects
from ..verify.replay import replay, replay_segments
from ..verify.verdict import (
    REPLAY_DRIVER,
    REPLAY_SEGMENT_S,
    _clean,
    _defect_checks,
    _energy_checks,
    _inputs,
    _quality_checks,
    format_check,
    interpolation_of,
    lap_time_cost_text,
    limit_checks,
    overall_verdict,
    regularization_text,
    replay_checks,
)

__all__ = ["validate_results"]



def validate_results(folder, feedback: bool = True, shooting: bool = False,
                     open_loop: bool = False, plots: bool = True, plots_dir=None,
                     echo=print) -> dict:
    """Replay, defect, limit and channel checks of a solved sector of any vehicle model with
    ``dynamics`` (the full, single-track and multibody cars, dymos's racecar), and a verdict.

    Parameters
    ----------
    folder : str or Path
        A results folder written by ``pyomo-lap solve`` (``summary.json`` and
        ``trajectory.parquet`` or ``trajectory.csv``).
    feedback : bool
        Replay with the path-following steering feedback (the replay checks; without it they
        are left out of the verdict).
    shooting : bool
        Also the local error of every element by shooting (about 10-20 ms per element;
        reported, not judged).
    open_loop : bool
        Also replay open loop (as long as the feedback replay, and more to explain where it
        parts; reported, not judged).
    plots : bool
        Write ``validation_defects.png`` and, with ``feedback``, ``validation_replay.png``.
    plots_dir : str or Path, optional
        Where (default: ``folder``).
    echo : callable

    Returns
    -------
    dict
        ``checks`` (list of :func:`make_check` dicts), ``verdict`` (the worst), ``interpolation``
        (of the controls: ``'state'`` or ``'auto'``, :func:`interpolation_of`),
        ``replay_feedback``, ``replay_open_loop`` (:meth:`ReplayReport.summary`, when run),
        ``defects`` (:meth:`DefectReport.summary`), ``channel_quality``, ``plots`` (files),
        ``wall_time_s``; also written to ``<folder>/validation.json`` (and the defects per
        element to ``<folder>/defects.csv``).

    Raises
    ------
    ValueError
        The folder lacks the files, or holds a result of a model that is not registered or
        has no ``dynamics``.
    FolderNotReplaceableError (a ValueError)
        Before any work (nothing touched): the folder is a link or holds one, or holds a file
        of a name validate writes that is not the one validate wrote there (not in the
        folder's manifest with its SHA-256: the user's), :func:`_claim_folder`.
    OutputBusyError (a ValueError)
        Another pyomo-lap run is writing into the folder (its lock is held throughout).
    FolderWriteError (an OSError)
        A file could not be written (a full disk): none was, the earlier ones are kept.
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    summary = _read_summary(folder)
    writers = _claim_folder(folder, summary, feedback, plots, plots_dir)
    own = list({id(w): w for w in writers if w is not None}.values())
    try:
        return _validate(folder, summary, feedback, shooting, open_loop, writers, echo, t0)
    except BaseException:
        for w in own:
            w.abort()
        raise
    finally:
        for w in own:
            w.release()


def _validate(folder: Path, summary: Summary, feedback: bool, shooting: bool, open_loop: bool,
              writers: tuple, echo, t0: float) -> dict:
    """:func:`validate_results` once the folder is claimed (:func:`_claim_folder`: the
    writers of its files and of its figures, None without figures): the solved table (the summary's model, sector start, ``ncp``, scheme and controls' form),
    the model's equations for the car, the replays, the defects, the limits, the channels."""
    tr, p = _inputs(summary)
    df = read_trajectory(folder, mesh=True)     # the mesh rows, also of a fixed-step folder
    sol = SolvedTable(table=df, model=vehicle_model(summary.model),
                      start=float(summary.start_m if summary.start_m is not None
                                  else df["s"].iloc[0]),
                      ncp=int(summary.ncp if summary.ncp is not None else 3),
                      scheme=summary.scheme, interpolation=interpolation_of(summary))
    run = _ValidationRun(folder=folder, solved=sol, track=tr, vehicle=p, dyn=sol.dynamics(p),
                         echo=echo)
    out = {"results": str(folder), "model": sol.model.name,
           "lap_time_s": summary.lap_time_s, "interpolation": sol.interpolation}
    checks, rf = _replay_steps(run, out, feedback, open_loop)
    d = _defect_step(run, out, shooting)
    checks = _defect_checks(d, sol.start, tr.length if tr.closed else None) + checks
    checks += limit_checks(sol, run.dyn, tr, d, rf)
    qc, quality = _quality_checks(df, run.dyn)
    checks += qc + _energy_checks(df, tr, p)
    out["channel_quality"] = quality
    if summary.regularization:
        out["regularization"] = summary.regularization
    if summary.self_check:
        out["self_check_of_the_solve"] = summary.self_check["verdict"]
    out["checks"] = checks
    out["verdict"] = overall_verdict(checks)
    files = []
    if writers[1] is not None:
        files.append(plot_defects(d, sol.start, writers[1], "validation_defects.png",
                                  folder.name))
        if rf is not None:
            files.append(plot_replay(rf, df, sol.start, writers[1], "validation_replay.png",
                                     folder.name, run.dyn))
    return _write_validation(writers, out, d, files, t0, echo)


def _figure_names(summary: Summary, feedback: bool) -> list:
    """The figures :func:`validate_results` writes (``validation_defects.png``, and with the
    feedback replay ``validation_replay.png``)."""
    names = ["validation_defects.png"]
    if feedback:
        names.append("validation_replay.png")
    return names


def _claim_folder(folder: Path, summary: Summary, feedback: bool, plots: bool, plots_dir) -> tuple:
    """Before any work of :func:`validate_results`: the writers of its files
    (:class:`pyomo_lap.folders.writer.ResultsWriter`, add mode, ``by = "validate"``),
    claimed: the results folder's lock taken (refusing at once while another run writes into
    it), the folder no link and holding none, and each file validate writes (``validation.json``,
    ``defects.csv`` and the figures, :func:`_figure_names`) missing or the one validate wrote
    (listed in the folder's manifest with its SHA-256). The figures go into the folder, or
    into ``plots_dir`` (a second writer, checked alike).

    Returns
    -------
    (ResultsWriter, ResultsWriter or None)
        The writer of the folder's files and that of the figures (the same one when they go
        into the folder; None without ``plots``), both claimed.

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        One line naming the link or the file of the user's (nothing was touched).
    OutputBusyError (a ValueError)
        Another run holds the lock.
    """
    figures = _figure_names(summary, feedback) if plots else []
    into = plots and plots_dir is None
    names = ["validation.json", "defects.csv", *(figures if into else [])]
    main = ResultsWriter.adding(folder, "validate", names=names)
    main.claim()
    if not plots:
        return main, None
    if into:
        return main, main
    try:
        return main, ResultsWriter.adding(plots_dir, "validate", names=figures).claim()
    except BaseException:
        main.release()
        raise


def _write_validation(writers: tuple, out: dict, d, files: list, t0: float, echo) -> dict:
    """The end of :func:`validate_results` (either model): the plots' names and the wall time
    into ``out``, ``validation.json`` and ``defects.csv`` (``d``'s elements) written through
    the folder's writer and committed with the figures (each to a temporary file renamed
    onto its name, never through a link, and recorded in the folder's manifest, ``by =
    "validate"``: the next solve replaces them), the checks, the penalties (when the solve
    reported them) and the verdict said; returns ``out`` as written."""
    main, figures = writers
    out["plots"] = [str(f) for f in files]
    out["wall_time_s"] = time.perf_counter() - t0
    out = _clean(out)
    text = json.dumps(out, indent=2, default=float)
    json_path = main.write_text("validation.json", text)
    csv_path = main.write_csv("defects.csv", d.elements)
    if figures is not None and figures is not main:
        figures.commit()
    main.commit()
    echo("")
    for c in out["checks"]:
        echo(format_check(c))
    reg = out.get("regularization")
    if reg:
        echo(regularization_text(reg))
        echo(lap_time_cost_text(reg))
    echo(f"verdict: {out['verdict'].upper()}")
    echo(f"written {json_path}, {csv_path}" + "".join(f", {f}" for f in files))
    return out


def _read_summary(folder: Path) -> Summary:
    """The ``summary.json`` of a results folder (:func:`validate_results`), typed (:meth:`pyomo_lap.results.summary.Summary.read`).

    Raises
    ------
    ValueError
        No such folder, no ``summary.json`` or trajectory in it, a ``summary.json`` that is
        not a JSON object, or the result of a model that is not registered or has no
        ``dynamics``.
    """
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder; expected a results folder of `pyomo-lap solve`")
    if not (folder / "summary.json").exists():
        raise ValueError(f"{folder}: no summary.json; expected a results folder of `pyomo-lap solve`")
    if not any((folder / f).exists() for f in ("trajectory.parquet", "trajectory.csv")):
        raise ValueError(f"{folder}: no trajectory.parquet or trajectory.csv; expected a results "
                         "folder of `pyomo-lap solve`")
    summary = Summary.read(folder / "summary.json")      # one line when it is not JSON
    try:
        vm = vehicle_model(summary.model)
    except ValueError as exc:
        raise ValueError(f"{folder} holds a result of an unknown vehicle model: {exc}") from None
    if vm.dynamics is None:
        raise ValueError(f"{folder} holds a {vm.name!r} result, whose VehicleModel has no "
                         "dynamics: replay and defects cannot check it")
    return summary


@dataclasses.dataclass
class _ValidationRun:
    """What the steps of :func:`validate_results` share: the result (folder, solved table,
    track, car, the model's equations for the car) and the output callable."""

    folder: Path
    solved: SolvedTable
    track: object
    vehicle: object
    dyn: object
    echo: object


def _replay_steps(run: _ValidationRun, out: dict, feedback: bool, open_loop: bool) -> tuple:
    """The replays of :func:`validate_results` (open loop: reported; with feedback: judged),
    their summaries put into ``out``. Returns the replay checks and the feedback replay's
    :class:`~pyomo_lap.verify.replay.SegmentReplays` (None without feedback)."""
    sol, echo = run.solved, run.echo
    checks, rf = [], None
    if open_loop:
        echo("replaying the optimal controls open loop (information, not judged) ...")
        r = replay(sol, run.track, run.vehicle, car=run.dyn)
        out["replay_open_loop"] = r.summary()
        echo(f"  states agree within tolerance up to s = {r.agree_until_s:.1f} m "
             f"(t = {r.agree_until_t:.2f} s); {r.reason}")
    if feedback:
        echo(f"replaying with path-following steering, in segments of {REPLAY_SEGMENT_S:g} s ...")
        rf = replay_segments(sol, run.track, run.vehicle, REPLAY_SEGMENT_S, car=run.dyn,
                             feedback=REPLAY_DRIVER, path_reference="polynomial")
        out["replay_feedback"] = rf.summary()
        lateral = run.dyn.path.lateral
        echo(f"  {len(rf.segments)} segments, max |{lateral} dev| {rf.max_deviation[lateral]:.4f} m, "
             f"steering correction RMS {rf.steer_correction_rms:.2e} rad (max "
             f"{rf.steer_correction_max:.2e} rad), time {rf.time_dev_s * 1e3:.1f} ms")
        df = sol.table
        checks += replay_checks(rf, df, sol.start + float(df["s_sector"].iloc[-1]), run.dyn,
                                sol.start)
    return checks, rf


def _defect_step(run: _ValidationRun, out: dict, shooting: bool):
    """The collocation defects of :func:`validate_results`, their summary put into ``out``.
    Returns the :class:`~pyomo_lap.verify.defects.DefectReport`."""
    run.echo("collocation defects ...")
    d = collocation_defects(run.solved, run.track, run.vehicle, shooting=shooting, car=run.dyn)
    ds = out["defects"] = d.summary()
    run.echo(f"  scaled defect max {ds['eps_max']:.3g} (element at s_sector = "
             f"{ds['eps_max_at_s_m']:.0f} m, {ds['eps_max_state']}), 95th percentile "
             f"{ds['eps_p95']:.3g}, median {ds['eps_median']:.3g}")
    return d
