"""A-posteriori checks of a results folder: replay the optimal controls in the time-domain
simulation (open loop and with path-following steering) and measure the collocation defects,
from ``summary.json`` and ``trajectory.csv`` alone (no re-solve). Used by
``pyomo-lap validate``.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

__all__ = ["validate_results"]


def _inputs(summary: dict):
    from ..track.geometry import load_track
    from ..vehicle.car import load_vehicle
    track = summary.get("track_file") or summary["track"]
    vehicle = summary.get("vehicle_file") or summary["vehicle"]
    width = summary.get("track_width_m")     # --track-width of the run, if given
    try:
        tr = load_track(track, track_width=width)
    except (ValueError, FileNotFoundError):
        tr = load_track(summary["track"], track_width=width)
    try:
        p = load_vehicle(vehicle)
    except ValueError:
        p = load_vehicle(summary["vehicle"])
    return tr, p


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def validate_results(folder, feedback: bool = True, shooting: bool = False,
                     echo=print) -> dict:
    """Replay and defect checks of a solved full-model sector.

    Parameters
    ----------
    folder : str or Path
        A results folder written by ``pyomo-lap solve`` (``summary.json``,
        ``trajectory.csv``).
    feedback : bool
        Also replay with the path-following steering feedback.
    shooting : bool
        Also the local error of every element by shooting (about 10-20 ms per element).
    echo : callable

    Returns
    -------
    dict
        ``replay_open_loop``, ``replay_feedback`` (:meth:`ReplayReport.summary`), ``defects``
        (:meth:`DefectReport.summary`); also written to ``<folder>/validation.json``.

    Raises
    ------
    ValueError
        The folder lacks the files, or holds a single-track result (replay and defects are
        for the full model).
    """
    from .defects import collocation_defects
    from ..vehicle.numeric import CarFunctions
    from .replay import replay
    from .results import read_trajectory
    folder = Path(folder)
    for f in ("summary.json", "trajectory.csv"):
        if not (folder / f).exists():
            raise ValueError(f"{folder}: no {f}; expected a results folder of `pyomo-lap solve`")
    summary = json.loads((folder / "summary.json").read_text())
    if summary.get("model", "full") != "full":
        raise ValueError(f"{folder} holds a {summary.get('model')!r} result; replay and defects "
                         "check the full model")
    tr, p = _inputs(summary)
    df = read_trajectory(folder / "trajectory.csv")
    start = float(summary.get("start_m", df["s"].iloc[0]))
    car = CarFunctions(p)
    scheme = summary.get("scheme", "LAGRANGE-RADAU")
    out = {"results": str(folder), "lap_time_s": summary.get("lap_time_s")}
    t0 = time.perf_counter()
    echo("replaying the optimal controls open loop ...")
    r = replay(df, tr, p, start=start, car=car, scheme=scheme)
    out["replay_open_loop"] = r.summary()
    echo(f"  states agree within tolerance up to s = {r.agree_until_s:.1f} m "
         f"(t = {r.agree_until_t:.2f} s); {r.reason}")
    if feedback:
        echo("replaying with path-following steering ...")
        rf = replay(df, tr, p, start=start, car=car, feedback=True, explain=False, scheme=scheme)
        out["replay_feedback"] = rf.summary()
        echo(f"  max |q2 dev| {rf.max_deviation['q2']:.4f} m, steering correction RMS "
             f"{rf.steer_correction_rms:.2e} rad (max {rf.steer_correction_max:.2e} rad), "
             f"sector time {rf.comparison['t_dev'].iloc[-1]:+.4f} s")
    echo("collocation defects ...")
    d = collocation_defects(df, tr, p, ncp=int(summary.get("ncp", 3)),
                            scheme=scheme, start=start,
                            shooting=shooting, car=car)
    out["defects"] = d.summary()
    echo(f"  scaled defect max {d.summary()['eps_max']:.3g} (element at s = "
         f"{d.summary()['eps_max_at_s_m']:.0f} m, {d.summary()['eps_max_state']}), median "
         f"{d.summary()['eps_median']:.3g}")
    out["wall_time_s"] = time.perf_counter() - t0
    out = _clean(out)
    (folder / "validation.json").write_text(json.dumps(out, indent=2, default=float))
    d.elements.to_csv(folder / "defects.csv", index=False)
    echo(f"written {folder / 'validation.json'} and {folder / 'defects.csv'}")
    return out
