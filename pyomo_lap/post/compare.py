"""Comparing two runs: the time delta along the track.

Both runs are put on the track coordinate ``s`` where their sectors overlap; each run's time is
interpolated linearly in ``s`` and restarted at zero at the start of the overlap, so that

.. math:: \\Delta t(s) = t_B(s) - t_B(s_0) - \\big(t_A(s) - t_A(s_0)\\big)

is positive where B has lost time on A since ``s_0``. Its value at the end of the overlap is
the difference of the sector times over the overlap.

The numbers only; the figures and the writer of a comparison folder
(:func:`pyomo_lap.post.plots.compare_runs`, ``pyomo-lap compare``) are in :mod:`pyomo_lap.post.plots`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["delta_along_track", "sector_deltas"]


def _s_abs(df: pd.DataFrame) -> np.ndarray:
    """Unwrapped track coordinate [m]."""
    return float(df["s"].iloc[0]) + df["s_sector"].to_numpy(dtype=float)


def delta_along_track(a: pd.DataFrame, b: pd.DataFrame, min_overlap: float = 1.0) -> pd.DataFrame:
    """Time delta of run B against run A along the track where both sectors overlap.

    Parameters
    ----------
    a, b : DataFrame
        Channels of two runs (:func:`pyomo_lap.post.results.read_trajectory`), on the same track.
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


def run_statistics(sum_a: dict, sum_b: dict) -> pd.DataFrame:
    """The two runs' model, lap time, NLP size (after the presolve of ``lap_ipopt``, else as
    Pyomo counts it), iterations and times, from their ``summary.json``.

    Returns
    -------
    DataFrame
        Columns ``quantity``, ``A``, ``B``.
    """
    rows = []
    for key in RUN_STATISTICS[:2]:
        rows.append({"quantity": key, "A": sum_a.get(key), "B": sum_b.get(key)})
    for key in ("n_variables", "n_equalities", "n_inequalities"):
        rows.append({"quantity": f"nlp_{key}", "A": (sum_a.get("nlp") or {}).get(key),
                     "B": (sum_b.get("nlp") or {}).get(key)})
    for key in RUN_STATISTICS[2:]:
        rows.append({"quantity": key, "A": sum_a.get(key), "B": sum_b.get(key)})
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
