"""``pyomo-lap validate``: a-posteriori checks of a results folder, and a verdict.

:func:`validate_results` replays the optimal controls in the time-domain simulation with
path-following steering (and, optionally, open loop), measures the collocation defects and
the smoothness and consistency of the channels, from ``summary.json`` and the trajectory
table alone (no re-solve), and writes ``validation.json``, ``defects.csv`` and its figures
into the folder. The checks, their thresholds (and where they come from) and the verdict are
those of :mod:`pyomo_lap.verify.verdict`; a racecar result's own checks are in
:mod:`pyomo_lap.verify.racecar_checks`.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
import numpy as np

from ..folders.writer import ResultsWriter
from ..results.summary import Summary
from ..verify.verdict import (DEFECT_MAX, DEFECT_P95, REPLAY_DRIVER, REPLAY_LATERAL,
                      REPLAY_SEGMENT_S, REPLAY_SHORTFALL, REPLAY_STEERING, REPLAY_TIME,
                      VALIDATED_MODELS, _clean, _defect_checks, _energy_checks, _inputs,
                      _quality_checks, _racecar_limit_checks, _replay_checks, _speed_check,
                      _table_length, _zigzag_check, format_check, interpolation_of,
                      lap_time_cost_text, make_check, overall_verdict, regularization_text)

__all__ = ["validate_results"]


def validate_results(folder, feedback: bool = True, shooting: bool = False,
                     open_loop: bool = False, plots: bool = True, plots_dir=None,
                     echo=print) -> dict:
    """Replay, defect and channel checks of a solved sector of the full model or of dymos's
    racecar (``model = "racecar"``: :func:`_validate_racecar`), and a verdict.

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
        The folder lacks the files, or holds a result of a model other than those of
        :data:`VALIDATED_MODELS` (a ``racecar`` result is checked by
        :func:`_validate_racecar`).
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
    writers of its files and of its figures, None without figures)."""
    from ..results.table import read_trajectory
    from ..verify.simulate import car_functions
    tr, p = _inputs(summary)
    df = read_trajectory(folder, mesh=True)     # the mesh rows, also of a fixed-step folder
    if summary.model == "racecar":
        return _validate_racecar(folder, summary, df, tr, p, feedback=feedback,
                                 shooting=shooting, writers=writers,
                                 echo=echo, t0=t0)
    run = _ValidationRun(folder=folder, df=df, track=tr, vehicle=p, car=car_functions(p),
                         start=float(summary.start_m if summary.start_m is not None
                                     else df["s"].iloc[0]),
                         scheme=summary.scheme, interpolation=interpolation_of(summary),
                         echo=echo)
    out = {"results": str(folder), "lap_time_s": summary.lap_time_s,
           "interpolation": run.interpolation}
    checks, rf = _replay_steps(run, out, feedback, open_loop)
    d = _defect_step(run, out, int(summary.ncp if summary.ncp is not None else 3), shooting)
    checks = _defect_checks(d, run.start, tr.length if tr.closed else None) + checks
    qc, quality = _quality_checks(df, p)
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
        files.append(_plot_defects(d, run.start, writers[1], folder.name))
        if rf is not None:
            files.append(_plot_replay(rf, df, run.start, writers[1], folder.name,
                                      float(p.delta_max)))
    return _write_validation(writers, out, d, files, t0, echo)



def _figure_names(summary: Summary, feedback: bool) -> list:
    """The figures :func:`validate_results` writes (``validation_defects.png``, and with the
    feedback replay of the full model ``validation_replay.png``)."""
    names = ["validation_defects.png"]
    if feedback and summary.model != "racecar":
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
    csv_path = main.write("defects.csv", lambda tmp: d.elements.to_csv(tmp, index=False))
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


def _validate_racecar(folder: Path, summary: Summary, df, track, p, *, feedback: bool,
                      shooting: bool, writers: tuple, echo, t0: float) -> dict:
    """:func:`validate_results` for a result of dymos's racecar (``model = "racecar"``,
    :mod:`pyomo_lap.verify.racecar_checks`): the collocation defects, the segmented replay with
    the path-following driver, the friction ellipses and the power along it, the zig-zags and
    the speed consistency, against the thresholds of the full model's checks (module
    docstring). Writes ``validation.json``, ``defects.csv`` and (``plots``)
    ``validation_defects.png``; returns what :func:`validate_results` returns (with
    ``model = "racecar"``; no ``interpolation``-dependent open-loop replay)."""
    from ..verify.racecar_checks import racecar_channel_quality, racecar_defects, racecar_scales
    start = float(summary.start_m if summary.start_m is not None else df["s"].iloc[0])
    scheme = summary.scheme
    interp = "state" if interpolation_of(summary) == "state" else "polynomial"
    out = {"results": str(folder), "model": "racecar", "lap_time_s": summary.lap_time_s,
           "interpolation": interp}
    echo("collocation defects (racecar) ...")
    d = racecar_defects(df, track, p, start=start, scheme=scheme, interpolation=interp,
                        shooting=shooting)
    ds = _racecar_defect_summary(d)
    out["defects"] = ds
    echo(f"  scaled defect max {ds['eps_max']:.3g} (element at s_sector = "
         f"{ds['eps_max_at_s_m']:.0f} m, {ds['eps_max_state']}), 95th percentile "
         f"{ds['eps_p95']:.3g}, median {ds['eps_median']:.3g}")
    checks = _defect_checks(d, start, track.length if track.closed else None)
    rf = None
    if feedback:
        more, rf = _racecar_replay_step(df, track, p, summary, out, start, scheme, interp,
                                        racecar_scales(p, df)["steer"], echo)
        checks += more
    checks += _racecar_limit_checks(df, d, p, start, rf)
    quality = racecar_channel_quality(df, p)
    out["channel_quality"] = quality
    checks += _zigzag_check(quality, _table_length(df)) + _speed_check(quality.get("speed_consistency"))
    out["checks"] = checks
    out["verdict"] = overall_verdict(checks)
    files = []
    if writers[1] is not None:
        files.append(_plot_defects(d, start, writers[1], folder.name))
    return _write_validation(writers, out, d, files, t0, echo)


def _racecar_defect_summary(d) -> dict:
    """The headline numbers of a racecar :class:`~pyomo_lap.verify.defects.DefectReport`
    (JSON-friendly; :meth:`DefectReport.summary` names the full model's states)."""
    el = d.elements
    eps = el["eps"].to_numpy(float)
    k = int(np.nanargmax(eps)) if np.any(np.isfinite(eps)) else 0
    states = [c[4:] for c in el.columns if c.startswith("eta_")]
    out = {"n_elements": int(len(el)), "eps_max": float(np.nanmax(eps)),
           "eps_p95": float(np.percentile(eps, 95)), "eps_median": float(np.median(eps)),
           "eps_max_element": int(el["element"].iloc[k]),
           "eps_max_at_s_m": float(0.5 * (el["s_start"].iloc[k] + el["s_end"].iloc[k])),
           "eps_max_state": str(el["worst"].iloc[k]),
           "eta_max": {st: float(el[f"eta_{st}"].max()) for st in states},
           "node_residual_max": {k2: float(v) for k2, v in d.node_residual.items()},
           "wall_time_s": d.wall_time_s}
    if "shoot_eps" in el.columns:
        out["shoot_eps_max"] = float(np.nanmax(el["shoot_eps"]))
        out["shoot_eps_p95"] = float(np.nanpercentile(el["shoot_eps"], 95))
    return out


def _racecar_replay_step(df, track, p, summary: Summary, out: dict, start: float, scheme: str,
                         interp: str, steer_scale: float, echo) -> list:
    r"""The racecar's segmented replay (:func:`pyomo_lap.verify.racecar_checks.racecar_replay`,
    segments of :data:`REPLAY_SEGMENT_S`, driver :data:`REPLAY_DRIVER`), its summary put into
    ``out["replay_feedback"]``; returns its checks: ``replay_shortfall``, ``replay_lateral``,
    ``replay_time``, ``replay_steering`` (in % of the steering scale ``steer_scale`` [rad]:
    the racecar has no steer limit), ``friction_limit`` (the largest tyre force over its
    friction ellipse, :math:`\sqrt{c_{ij}} - 1`, and ``power_limit`` (the power over
    ``P_max``), both in % of the limit and judged by :data:`POWER_LIMIT`)."""
    from ..verify.racecar_checks import racecar_replay
    v_min = max(float((summary.ocp_options or {}).get("v_min", 1.0)), 1.0)
    echo(f"replaying with path-following steering, in segments of {REPLAY_SEGMENT_S:g} s ...")
    rf = racecar_replay(df, track, p, REPLAY_SEGMENT_S, REPLAY_DRIVER, start=start, scheme=scheme,
                        interpolation=interp, v_min=v_min)
    out["replay_feedback"] = rf.summary()
    c = rf.comparison
    echo(f"  {len(rf.segments)} segments, max |n dev| {np.nanmax(np.abs(c['n_dev'])):.4f} m, "
         f"steering correction RMS {rf.steer_correction_rms:.2e} rad (max "
         f"{rf.steer_correction_max:.2e} rad), time {rf.time_dev_s * 1e3:.1f} ms")
    failed = [f"{a:.0f}-{b:.0f} m {st}" for (a, b), st in zip(rf.segments, rf.status) if st != "end"]
    checks = [make_check("replay_shortfall", rf.shortfall_m, "m", REPLAY_SHORTFALL,
                         f"{len(rf.segments)} segments of {REPLAY_SEGMENT_S:g} s replayed from the "
                         "optimum's state; " + (f"not finished: {', '.join(failed[:4])}"
                                                if failed else "every one finished"))]
    rel = 100.0 * np.abs(c["n_dev"].to_numpy(float)) / c["width"].to_numpy(float)
    ok = np.any(np.isfinite(rel))
    k = int(np.nanargmax(rel)) if ok else 0
    checks.append(make_check("replay_lateral", float(np.nanmax(rel)) if ok else None, "% width",
                             REPLAY_LATERAL,
                             f"{abs(c['n_dev'].iloc[k]):.3f} m of {c['width'].iloc[k]:.1f} m at "
                             f"s = {c['s'].iloc[k]:.0f} m" if ok else "no point reached",
                             at=float(c["s"].iloc[k]) if ok else None))
    t_opt = float(df["t"].iloc[-1] - df["t"].iloc[0])
    checks.append(make_check("replay_time", 100.0 * rf.time_dev_s / t_opt if t_opt > 0 else None,
                             "%", REPLAY_TIME,
                             f"{rf.time_dev_s * 1e3:.1f} ms (the segments' differences, their "
                             f"sizes summed) over {t_opt:.3f} s"))
    corr = c["steer_correction"].to_numpy(float)
    k = int(np.nanargmax(np.abs(corr))) if np.any(np.isfinite(corr)) else 0
    checks.append(make_check("replay_steering", 100.0 * rf.steer_correction_max / steer_scale,
                             "% steer scale", REPLAY_STEERING,
                             f"{math.degrees(rf.steer_correction_max):.3f} deg of the steering "
                             f"scale {math.degrees(steer_scale):.2f} deg (wheelbase x RMS "
                             f"curvature) at s = {c['s'].iloc[k]:.0f} m; RMS "
                             f"{math.degrees(rf.steer_correction_rms):.3f} deg",
                             at=float(c["s"].iloc[k]) if len(c) else None))
    return checks, rf


def _read_summary(folder: Path) -> Summary:
    """The ``summary.json`` of a results folder of the full model (:func:`validate_results`),
    typed (:meth:`pyomo_lap.results.summary.Summary.read`).

    Raises
    ------
    ValueError
        No such folder, no ``summary.json`` or trajectory in it, a ``summary.json`` that is
        not a JSON object, or the result of a model not in :data:`VALIDATED_MODELS`.
    """
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder; expected a results folder of `pyomo-lap solve`")
    if not (folder / "summary.json").exists():
        raise ValueError(f"{folder}: no summary.json; expected a results folder of `pyomo-lap solve`")
    if not any((folder / f).exists() for f in ("trajectory.parquet", "trajectory.csv")):
        raise ValueError(f"{folder}: no trajectory.parquet or trajectory.csv; expected a results "
                         "folder of `pyomo-lap solve`")
    try:
        summary = Summary.read(folder / "summary.json")
    except json.JSONDecodeError as exc:
        raise ValueError(f"{folder / 'summary.json'} is not JSON: {exc}") from None
    if summary.model not in VALIDATED_MODELS:
        raise ValueError(f"{folder} holds a {summary.model!r} result; replay and defects "
                         f"check the models {', '.join(VALIDATED_MODELS)}")
    return summary


@dataclasses.dataclass
class _ValidationRun:
    """What the steps of :func:`validate_results` share: the result (folder, trajectory,
    track, car, sector start [m], collocation scheme, the controls' interpolation) and the
    output callable."""

    folder: Path
    df: object
    track: object
    vehicle: object
    car: object
    start: float
    scheme: str
    interpolation: str
    echo: object


def _replay_steps(run: _ValidationRun, out: dict, feedback: bool, open_loop: bool) -> tuple:
    """The replays of :func:`validate_results` (open loop: reported; with feedback: judged),
    their summaries put into ``out``. Returns the replay checks and the feedback replay's
    :class:`ReplayReport` (None without feedback)."""
    from ..verify.replay import replay
    df, echo = run.df, run.echo
    checks, rf = [], None
    if open_loop:
        echo("replaying the optimal controls open loop (information, not judged) ...")
        r = replay(df, run.track, run.vehicle, start=run.start, car=run.car, scheme=run.scheme,
                   interpolation=run.interpolation)
        out["replay_open_loop"] = r.summary()
        echo(f"  states agree within tolerance up to s = {r.agree_until_s:.1f} m "
             f"(t = {r.agree_until_t:.2f} s); {r.reason}")
    if feedback:
        from ..verify.replay import replay_segments
        echo(f"replaying with path-following steering, in segments of {REPLAY_SEGMENT_S:g} s ...")
        rf = replay_segments(df, run.track, run.vehicle, REPLAY_SEGMENT_S, start=run.start,
                             car=run.car, feedback=REPLAY_DRIVER, scheme=run.scheme,
                             interpolation=run.interpolation, path_reference="polynomial")
        out["replay_feedback"] = rf.summary()
        echo(f"  {len(rf.segments)} segments, max |q2 dev| {rf.max_deviation['q2']:.4f} m, "
             f"steering correction RMS {rf.steer_correction_rms:.2e} rad (max "
             f"{rf.steer_correction_max:.2e} rad), time {rf.time_dev_s * 1e3:.1f} ms")
        checks += _replay_checks(rf, df, run.start + float(df["s_sector"].iloc[-1]),
                                 float(run.vehicle.delta_max), run.start)
    return checks, rf


def _defect_step(run: _ValidationRun, out: dict, ncp: int, shooting: bool):
    """The collocation defects of :func:`validate_results`, their summary put into ``out``
    (with the 95th percentile of the scaled defect). Returns the :class:`DefectReport`."""
    from ..verify.defects import collocation_defects
    run.echo("collocation defects ...")
    d = collocation_defects(run.df, run.track, run.vehicle, ncp=ncp,
                            scheme=run.scheme, start=run.start,
                            shooting=shooting, car=run.car,
                            interpolation="state" if run.interpolation == "state" else "polynomial")
    ds = d.summary()
    out["defects"] = ds
    eps = d.elements["eps"].to_numpy(float)
    ds["eps_p95"] = float(np.percentile(eps, 95))
    run.echo(f"  scaled defect max {ds['eps_max']:.3g} (element at s_sector = "
             f"{ds['eps_max_at_s_m']:.0f} m, {ds['eps_max_state']}), 95th percentile "
             f"{ds['eps_p95']:.3g}, median {ds['eps_median']:.3g}")
    return d


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _literal(name) -> str:
    """A name drawn as literal text (:func:`pyomo_lap.plots.figures._literal`)."""
    from ..plots.figures import _literal as literal
    return literal(name)


def _save(writer, name: str, fig) -> Path:
    """A figure of validate written through its writer as ``name`` (PNG, 110 dpi) and closed;
    its final name."""
    try:
        return writer.write(name, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    finally:
        _pyplot().close(fig)


def _plot_defects(d, start: float, writer, title: str) -> Path:
    """The scaled defect of every element along the track with the thresholds."""
    plt = _pyplot()
    el = d.elements
    edges = start + np.r_[el["s_start"].to_numpy(float)[:1], el["s_end"].to_numpy(float)]
    eps = el["eps"].to_numpy(float)
    fig, ax = plt.subplots(figsize=(11, 4.2))
    ax.stairs(np.where(np.isfinite(eps), eps, np.nan), edges, color="C0", lw=1.2,
              label="scaled defect per element")
    ax.set_yscale("log")
    ax.axhline(DEFECT_MAX[0], color="orange", ls="--", lw=1, label=f"defect_max: warn > {DEFECT_MAX[0]:g}")
    ax.axhline(DEFECT_MAX[1], color="red", ls="--", lw=1, label=f"defect_max: fail > {DEFECT_MAX[1]:g}")
    p95 = float(np.nanpercentile(eps, 95))
    ax.axhline(p95, color="C0", ls=":", lw=1, label=f"95th percentile {p95:.3g} "
               f"(warn > {DEFECT_P95[0]:g}, fail > {DEFECT_P95[1]:g})")
    if np.any(np.isfinite(eps)):
        k = int(np.nanargmax(eps))
        ax.annotate(f"{eps[k]:.3g} ({el['worst'].iloc[k]})",
                    (0.5 * (edges[k] + edges[k + 1]), eps[k]), textcoords="offset points",
                    xytext=(6, 4), fontsize=8)
    lo = np.nanmin(eps[eps > 0]) if np.any(eps > 0) else 1e-6
    ax.set_ylim(max(lo / 3, 1e-8), max(DEFECT_MAX[1], np.nanmax(eps)) * 3)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("track coordinate s [m]")
    ax.set_ylabel("scaled defect eps [-]")
    ax.set_title(f"{_literal(title)}: collocation defect per element (max over the states of "
                 "integrated |residual| / (1 + max|state|))", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    return _save(writer, "validation_defects.png", fig)


def _plot_replay(rf, df, start: float, writer, title: str, delta_max: float) -> Path:
    """The feedback replay's lateral position, speed and steering against the optimum's,
    and their differences, along the track."""
    plt = _pyplot()
    c = rf.comparison
    sims = [r.simulation for r in rf.reports] if hasattr(rf, "reports") else [rf.simulation]
    s_opt = start + df["s_sector"].to_numpy(float)
    n = sims[0].n_q
    width = np.interp(c["s"].to_numpy(float), s_opt,
                      df["width_left"].to_numpy(float) + df["width_right"].to_numpy(float))

    def replayed(ax, column, scale=1.0, label="replay"):
        for k, sim in enumerate(sims):      # each segment's simulation
            y = sim.u[:, 2] if column == "u2" else sim.x[:, column]
            ax.plot(sim.x[:, 0], scale * y, color="C1", lw=1.0, ls="--",
                    label=label if k == 0 else None)
    fig, axes = plt.subplots(3, 2, figsize=(13, 8.5), sharex=True,
                             gridspec_kw={"width_ratios": [1.6, 1]})
    # lateral position
    ax = axes[0, 0]
    ax.plot(s_opt, df["q2"], color="k", lw=1.4, label="optimum")
    replayed(ax, 1, label="replay (steering feedback)")
    ax.set_ylabel("q2, lateral position [m]")
    ax.legend(fontsize=8, loc="best")
    ax = axes[0, 1]
    ax.plot(c["s"], 100 * c["q2_dev"], color="C1", lw=1)
    w = width
    for frac, col, lab in ((REPLAY_LATERAL[0], "orange", "warn"), (REPLAY_LATERAL[1], "red", "fail")):
        ax.plot(c["s"], frac * w, color=col, ls="--", lw=0.8, label=f"{lab}: {frac:g} % of width")
        ax.plot(c["s"], -frac * w, color=col, ls="--", lw=0.8)
    lim = max(3 * float(np.nanmax(np.abs(100 * c["q2_dev"]))), REPLAY_LATERAL[0] * float(np.min(w)) * 1.5)
    ax.set_ylim(-lim, lim)
    ax.set_ylabel("replay - optimum [cm]")
    ax.legend(fontsize=7, loc="upper right")
    # speed
    ax = axes[1, 0]
    ax.plot(s_opt, 3.6 * df["q1_dot"], color="k", lw=1.4, label="optimum")
    replayed(ax, n, 3.6)
    ax.set_ylabel("q1_dot, speed [km/h]")
    ax = axes[1, 1]
    ax.plot(c["s"], 3.6 * c["q1_dot_dev"], color="C1", lw=1)
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set_ylabel("replay - optimum [km/h]")
    dt = rf.time_dev_s if hasattr(rf, "time_dev_s") else float(c["t_dev"].iloc[-1])
    ax.set_title(f"time {dt * 1e3:+.1f} ms "
                 f"(warn > {REPLAY_TIME[0]:g} %, fail > {REPLAY_TIME[1]:g} % of the sector time)",
                 fontsize=8)
    # steering
    ax = axes[2, 0]
    ax.plot(s_opt, np.degrees(df["delta"]), color="k", lw=1.4, label="optimum")
    replayed(ax, "u2", 180.0 / math.pi, label="replay (with correction)")
    ax.set_ylabel("delta, steer angle [deg]")
    ax.set_xlabel("track coordinate s [m]")
    ax = axes[2, 1]
    ax.plot(c["s"], np.degrees(c["steer_correction"]), color="C1", lw=1)
    dmax = math.degrees(delta_max)
    for pc, col, lab in ((REPLAY_STEERING[0], "orange", "warn"), (REPLAY_STEERING[1], "red", "fail")):
        v = pc * dmax / 100.0
        ax.axhline(v, color=col, ls="--", lw=0.8, label=f"{lab}: {v:.3g} deg ({pc:g} % of delta_max)")
        ax.axhline(-v, color=col, ls="--", lw=0.8)
    lim = max(3 * math.degrees(rf.steer_correction_max), REPLAY_STEERING[0] * dmax / 100.0 * 1.5)
    ax.set_ylim(-lim, lim)
    ax.set_ylabel("steering correction [deg]")
    ax.set_xlabel("track coordinate s [m]")
    ax.legend(fontsize=7, loc="upper right")
    for a in axes.ravel():
        a.grid(True, alpha=0.3)
    axes[0, 0].set_xlim(s_opt[0], s_opt[-1])
    fig.suptitle(f"{_literal(title)}: replay with path-following steering against the optimum",
                 fontsize=11)
    fig.tight_layout()
    return _save(writer, "validation_replay.png", fig)
