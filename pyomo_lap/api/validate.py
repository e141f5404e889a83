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
import os
import time
from pathlib import Path

from ..ocp.build import vehicle_model
from ..plots.validation import plot_defects, plot_replay
from ..results.table import read_trajectory
from ..verify.defects import SolvedTable, collocation_defects
from ..verify.replay import replay, replay_segments
from ..verify.verdict import (REPLAY_DRIVER, REPLAY_SEGMENT_S, _clean, _defect_checks,
                              _energy_checks, _inputs, _quality_checks, format_check,
                              interpolation_of, lap_time_cost_text, limit_checks,
                              overall_verdict, regularization_text, replay_checks)

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
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    summary = _read_summary(folder)
    lock = _claim_folder(folder, summary, feedback, plots, plots_dir)
    try:
        return _validate(folder, summary, feedback, shooting, open_loop, plots, plots_dir, echo,
                         t0)
    finally:
        lock.release()


def _validate(folder: Path, summary: dict, feedback: bool, shooting: bool, open_loop: bool,
              plots: bool, plots_dir, echo, t0: float) -> dict:
    """:func:`validate_results` once the folder is claimed (:func:`_claim_folder`): the
    solved table (the summary's model, sector start, ``ncp``, scheme and controls' form),
    the model's equations for the car, the replays, the defects, the limits, the channels."""
    tr, p = _inputs(summary)
    df = read_trajectory(folder, mesh=True)     # the mesh rows, also of a fixed-step folder
    sol = SolvedTable(table=df, model=vehicle_model(summary.get("model", "full")),
                      start=float(summary.get("start_m", df["s"].iloc[0])),
                      ncp=int(summary.get("ncp", 3)),
                      scheme=summary.get("scheme", "LAGRANGE-RADAU"),
                      interpolation=interpolation_of(summary))
    run = _ValidationRun(folder=folder, solved=sol, track=tr, vehicle=p, dyn=sol.dynamics(p),
                         echo=echo)
    out = {"results": str(folder), "model": sol.model.name,
           "lap_time_s": summary.get("lap_time_s"), "interpolation": sol.interpolation}
    checks, rf = _replay_steps(run, out, feedback, open_loop)
    d = _defect_step(run, out, shooting)
    checks = _defect_checks(d, sol.start, tr.length if tr.closed else None) + checks
    checks += limit_checks(sol, run.dyn, tr, d, rf)
    qc, quality = _quality_checks(df, run.dyn)
    checks += qc + _energy_checks(df, tr, p)
    out["channel_quality"] = quality
    if summary.get("regularization"):
        out["regularization"] = summary["regularization"]
    if summary.get("self_check"):
        out["self_check_of_the_solve"] = summary["self_check"]["verdict"]
    out["checks"] = checks
    out["verdict"] = overall_verdict(checks)
    files = []
    if plots:
        pdir = Path(plots_dir) if plots_dir is not None else folder
        pdir.mkdir(parents=True, exist_ok=True)
        files.append(plot_defects(d, sol.start, pdir / "validation_defects.png", folder.name))
        if rf is not None:
            files.append(plot_replay(rf, df, sol.start, pdir / "validation_replay.png",
                                     folder.name, run.dyn))
    return _write_validation(folder, out, d, files, t0, echo)


def _validation_files(folder: Path, summary: dict, feedback: bool, plots: bool,
                      plots_dir) -> list:
    """The files :func:`validate_results` will write (``validation.json``, ``defects.csv``,
    and with ``plots`` the figures, in ``plots_dir`` or ``folder``)."""
    files = [folder / "validation.json", folder / "defects.csv"]
    if plots:
        pdir = Path(plots_dir) if plots_dir is not None else folder
        files.append(pdir / "validation_defects.png")
        if feedback:
            files.append(pdir / "validation_replay.png")
    return files


def _claim_folder(folder: Path, summary: dict, feedback: bool, plots: bool, plots_dir):
    """Before any work of :func:`validate_results`: take the lock of the results folder
    (:class:`pyomo_lap.folders.results_folder.OutputLock`, refusing at once while another run writes
    into it) and check that validate may write its files there: the folder is no link and
    holds none (:func:`pyomo_lap.folders.links.refuse_links`), and each file of
    :func:`_validation_files` inside it is missing or the one validate wrote (listed in the
    folder's manifest with its SHA-256). Returns the lock, held.

    Raises
    ------
    FolderNotReplaceableError (a ValueError)
        One line naming the link or the file of the user's (nothing was touched).
    OutputBusyError (a ValueError)
        Another run holds the lock.
    """
    from ..folders.results_folder import MANIFEST, _sha256, output_lock, read_manifest
    from ..folders.links import FolderNotReplaceableError, refuse_links
    from ..plots.figures import _within_by_name
    lock = output_lock(folder, "validate").acquire()
    try:
        refuse_links(folder, f"results folder {str(folder)!r}")
        listed = (read_manifest(folder) or {"files": {}})["files"]
        for path in _validation_files(folder, summary, feedback, plots, plots_dir):
            if not _within_by_name(path, folder) or not os.path.lexists(path):
                continue
            entry = listed.get(Path(os.path.relpath(path, folder)).as_posix())
            if (isinstance(entry, dict) and path.is_file()
                    and _sha256(path) == entry.get("sha256")):
                continue
            why = ("was changed since `pyomo-lap validate` wrote it" if entry else
                   f"is not a file `pyomo-lap validate` wrote (its {MANIFEST} does not list it)")
            raise FolderNotReplaceableError(
                f"{path} {why}, and validate writes a file of that name: move or rename it, "
                "then validate again (nothing was touched)")
    except BaseException:
        lock.release()
        raise
    return lock


def _write_validation(folder: Path, out: dict, d, files: list, t0: float, echo) -> dict:
    """The end of :func:`validate_results` (either model): the plots' names and the wall time
    into ``out``, ``validation.json`` and ``defects.csv`` (``d``'s elements) written (each to
    a temporary file moved onto its name, never through a link) and recorded with the
    figures in the folder's manifest (``by = "validate"``: the next solve replaces them), the
    checks, the penalties (when the solve reported them) and the verdict said; returns
    ``out`` as written."""
    from ..folders.results_folder import record_files
    from ..results.table import _write_replacing
    out["plots"] = [str(f) for f in files]
    out["wall_time_s"] = time.perf_counter() - t0
    out = _clean(out)
    text = json.dumps(out, indent=2, default=float)
    _write_replacing(folder / "validation.json", lambda tmp: Path(tmp).write_text(text))
    _write_replacing(folder / "defects.csv", lambda tmp: d.elements.to_csv(tmp, index=False))
    record_files(folder, [folder / "validation.json", folder / "defects.csv", *files],
                 by="validate")
    echo("")
    for c in out["checks"]:
        echo(format_check(c))
    reg = out.get("regularization")
    if reg:
        echo(regularization_text(reg))
        echo(lap_time_cost_text(reg))
    echo(f"verdict: {out['verdict'].upper()}")
    echo(f"written {folder / 'validation.json'}, {folder / 'defects.csv'}"
         + "".join(f", {f}" for f in files))
    return out


def _read_summary(folder: Path) -> dict:
    """The ``summary.json`` of a results folder (:func:`validate_results`).

    Raises
    ------
    ValueError
        No such folder, no ``summary.json`` or trajectory in it, a ``summary.json`` that is
        not JSON, or the result of a model that is not registered or has no ``dynamics``.
    """
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder; expected a results folder of `pyomo-lap solve`")
    if not (folder / "summary.json").exists():
        raise ValueError(f"{folder}: no summary.json; expected a results folder of `pyomo-lap solve`")
    if not any((folder / f).exists() for f in ("trajectory.parquet", "trajectory.csv")):
        raise ValueError(f"{folder}: no trajectory.parquet or trajectory.csv; expected a results "
                         "folder of `pyomo-lap solve`")
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{folder / 'summary.json'} is not JSON: {exc}") from None
    try:
        vm = vehicle_model(summary.get("model", "full"))
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
