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
        ``speed_A [km/h]``, ``speed_B [km/h]``, ``q2_A [m]``, ``q2_B [m]``.

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
    return pd.DataFrame(out)


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
