"""Comparing two runs: the time delta along the track.

Both runs are put on the track coordinate ``s`` where their sectors overlap; each run's time is
interpolated linearly in ``s`` and restarted at zero at the start of the overlap, so that

.. math:: \\Delta t(s) = t_B(s) - t_B(s_0) - \\big(t_A(s) - t_A(s_0)\\big)

is positive where B has lost time on A since ``s_0``. Its value at the end of the overlap is
the difference of the sector times over the overlap.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from .results import read_summary, read_trajectory

__all__ = ["delta_along_track", "compare_runs", "sector_deltas", "figure_compare"]


def _s_abs(df: pd.DataFrame) -> np.ndarray:
    """Unwrapped track coordinate [m]."""
    return float(df["s"].iloc[0]) + df["s_sector"].to_numpy(dtype=float)


def delta_along_track(a: pd.DataFrame, b: pd.DataFrame, min_overlap: float = 1.0) -> pd.DataFrame:
    """Time delta of run B against run A along the track where both sectors overlap.

    Parameters
    ----------
    a, b : DataFrame
        Channels of two runs (:func:`pyomo_lap.results.read_trajectory`), on the same track.
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


def figure_compare(delta: pd.DataFrame, label_a: str = "A", label_b: str = "B"):
    """Speed of both runs, time delta and lateral offsets along the track."""
    from .plots import _plt
    plt = _plt()
    s = delta["s [m]"]
    fig, axs = plt.subplots(3, 1, figsize=(10, 8), sharex=True,
                            gridspec_kw={"height_ratios": [2, 1.3, 1]})
    axs[0].plot(s, delta["speed_A [km/h]"], color="tab:blue", label=label_a)
    axs[0].plot(s, delta["speed_B [km/h]"], color="tab:orange", label=label_b)
    axs[0].set_ylabel("speed [km/h]")
    axs[0].legend(loc="best", fontsize=8)
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
                 echo=None) -> dict:
    """Compare two results folders and write ``compare.csv``, ``compare_sectors.csv`` and
    ``compare.png`` (and ``compare.pdf`` on request).

    Parameters
    ----------
    dir_a, dir_b : str or Path
        Results folders (A is the reference).
    out_dir : str or Path, optional
        Where to write (default ``<dir_b>/compare_<name of A>``).
    n_sectors : int
        Equal parts of the overlap timed in the sector table.
    formats : sequence of str
        ``"png"`` and/or ``"pdf"``.
    echo : callable, optional
        Progress messages.

    Returns
    -------
    dict
        ``delta`` (DataFrame of :func:`delta_along_track`), ``sectors`` (DataFrame of
        :func:`sector_deltas`), ``delta_t_s`` (final delta), ``files`` (paths written).

    Raises
    ------
    FileNotFoundError
        A folder is not a results folder.
    ValueError
        The runs are on different tracks or do not overlap; bad ``formats``.
    """
    echo = echo or (lambda *_: None)
    formats = tuple(formats)
    if not formats or any(f not in ("png", "pdf") for f in formats):
        raise ValueError(f"formats = {formats!r}: expected 'png' and/or 'pdf'")
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    sum_a, sum_b = read_summary(dir_a), read_summary(dir_b)
    if sum_a.get("track") != sum_b.get("track"):
        raise ValueError(f"the runs are on different tracks: {sum_a.get('track')!r} ({dir_a}) and "
                         f"{sum_b.get('track')!r} ({dir_b})")
    delta = delta_along_track(read_trajectory(dir_a), read_trajectory(dir_b))
    sectors = sector_deltas(delta, n_sectors)
    out = Path(out_dir) if out_dir is not None else dir_b / f"compare_{dir_a.name}"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    delta.to_csv(out / "compare.csv", index=False, float_format="%.10g")
    sectors.to_csv(out / "compare_sectors.csv", index=False, float_format="%.10g")
    files += [out / "compare.csv", out / "compare_sectors.csv"]
    fig = figure_compare(delta, dir_a.name, dir_b.name)
    for fmt in formats:
        fig.savefig(out / f"compare.{fmt}", dpi=120)
        files.append(out / f"compare.{fmt}")
    from .plots import _plt
    _plt().close(fig)
    for f in files:
        echo(f"  wrote {f}")
    return {"delta": delta, "sectors": sectors, "delta_t_s": float(delta["delta_t [s]"].iloc[-1]),
            "files": files}
