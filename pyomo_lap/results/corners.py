"""Per-corner table of a result and the comparison of two runs corner by corner
(``docs/corners.md``).

The corners themselves (where they are, their numbers and names) come from the track:
:mod:`pyomo_lap.track.corners`. Here a result's channels are cut at each corner's entry and
exit: the time in the corner is the difference of the time state ``t`` at exit and entry, each
interpolated linearly in the track coordinate (as the sector times,
:func:`pyomo_lap.results.table.sector_times`); speeds are the car's ``speed_kmh``; the lateral
acceleration is ``a_y`` (the acceleration of O3 along the car's y axis) in units of
:data:`G0`. A corner is in the table only when the solved stretch holds it whole (on a closed
lap solved periodically, a corner across the start line is timed in its two pieces).

Layer: results (imports numpy, pandas).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["corner_table", "corner_records", "corner_deltas", "CORNER_COLUMNS", "G0"]

G0 = 9.80665
"""Standard gravity [m/s^2]: the unit ``g`` of the lateral acceleration."""

CORNER_COLUMNS = ("number", "name", "direction", "s_entry [m]", "s_apex [m]", "s_exit [m]",
                  "length [m]", "min_radius [m]", "entry_speed [km/h]", "min_speed [km/h]",
                  "exit_speed [km/h]", "s_min_speed [m]", "time [s]", "t_entry [s]",
                  "max_lateral_acc [g]")
"""Columns of :func:`corner_table` (units in brackets; ``s_*`` track coordinates)."""


def _pieces(a: float, b: float, sig0: float, sig1: float, periodic: bool):
    """The stretches ``[(lo, hi), ...]`` of sector coordinate a corner from ``a`` to ``b``
    covers within ``[sig0, sig1]``, or None when the solved stretch does not hold it whole."""
    eps = 1e-9 * max(1.0, abs(sig1))
    if a <= b:
        return [(a, b)] if sig0 - eps <= a and b <= sig1 + eps else None
    return [(a, sig1), (sig0, b)] if periodic else None


def corner_table(df: pd.DataFrame, corners, track_length: float, closed: bool) -> pd.DataFrame:
    """One row per corner of the solved stretch: where it is and how the car took it.

    Parameters
    ----------
    df : DataFrame
        Channels of a result (:func:`pyomo_lap.results.table.trajectory_dataframe` or
        ``read_trajectory``): ``s`` (track coordinate), ``s_sector`` (from the sector's start,
        increasing), ``t`` [s], ``speed_kmh``; ``a_y`` [m/s^2] when there.
    corners : sequence of Corner or of dicts
        :class:`pyomo_lap.track.corners.Corner` (or their ``record()``): number, name,
        direction, ``s_entry``/``s_apex``/``s_exit`` [m].
    track_length : float
        Length of the track [m] (the period of ``s`` on a closed track).
    closed : bool

    Returns
    -------
    DataFrame
        Columns :data:`CORNER_COLUMNS`; the corners the solved stretch holds whole, in order.
    """
    sig = df["s_sector"].to_numpy(float)
    t = df["t"].to_numpy(float)
    v = df["speed_kmh"].to_numpy(float)
    ay = df["a_y"].to_numpy(float) if "a_y" in df.columns else np.full(len(df), np.nan)
    start = float(df["s"].iloc[0]) - float(sig[0])
    periodic = bool(closed) and abs((sig[-1] - sig[0]) - track_length) < 1e-6 * track_length
    rows = []
    for c in corners:
        c = c if isinstance(c, dict) else c.record()
        a, b = ((x - start) % track_length if closed else x - start
                for x in (c["s_entry_m"], c["s_exit_m"]))
        pieces = _pieces(a, b, sig[0], sig[-1], periodic)
        if pieces is None:
            continue
        time = sum(float(np.interp(hi, sig, t) - np.interp(lo, sig, t)) for lo, hi in pieces)
        xs = np.concatenate([np.concatenate([[lo], sig[(sig > lo) & (sig < hi)], [hi]])
                             for lo, hi in pieces])
        vs = np.interp(xs, sig, v)
        k = int(np.argmin(vs))
        s_min = (xs[k] + start) % track_length if closed else xs[k] + start
        ays = np.abs(np.interp(xs, sig, ay))
        length = sum(hi - lo for lo, hi in pieces)
        rows.append({"number": int(c["number"]), "name": c["name"], "direction": c["direction"],
                     "s_entry [m]": c["s_entry_m"], "s_apex [m]": c["s_apex_m"],
                     "s_exit [m]": c["s_exit_m"], "length [m]": length,
                     "min_radius [m]": c.get("min_radius_m", np.nan),
                     "entry_speed [km/h]": float(np.interp(a, sig, v)),
                     "min_speed [km/h]": float(vs[k]),
                     "exit_speed [km/h]": float(np.interp(b, sig, v)),
                     "s_min_speed [m]": float(s_min), "time [s]": time,
                     "t_entry [s]": float(np.interp(a, sig, t)),
                     "max_lateral_acc [g]": float(np.nanmax(ays) / G0) if np.any(
                         np.isfinite(ays)) else float("nan")})
    return pd.DataFrame(rows, columns=list(CORNER_COLUMNS))


_RECORD_KEYS = {c: c.replace(" [", "_").replace("]", "").replace("/", "").replace("km_h", "kmh")
                for c in CORNER_COLUMNS}


def corner_records(table: pd.DataFrame) -> list:
    """:func:`corner_table` as a JSON-ready list of dicts (``s_entry_m``, ``time_s``,
    ``min_speed_kmh``, ``max_lateral_acc_g`` ...)."""
    out = []
    for _, r in table.iterrows():
        rec = {}
        for col, key in _RECORD_KEYS.items():
            x = r[col]
            rec[key] = (int(x) if col == "number" else str(x) if col in ("name", "direction")
                        else float(x))
        out.append(rec)
    return out


def records_table(records) -> pd.DataFrame:
    """The inverse of :func:`corner_records`: a summary's ``corners`` as a :func:`corner_table`."""
    back = {v: k for k, v in _RECORD_KEYS.items()}
    frame = pd.DataFrame([{back.get(k, k): v for k, v in r.items()} for r in records or []])
    return frame.reindex(columns=list(CORNER_COLUMNS))


def corner_deltas(table_a: pd.DataFrame, table_b: pd.DataFrame, tol_m: float = 1.0) -> pd.DataFrame:
    """Two runs corner by corner: the corners both tables have (same number, entry and exit
    within ``tol_m`` [m]).

    Returns
    -------
    DataFrame
        ``number``, ``name``, ``direction``, ``s_entry [m]``, ``s_exit [m]``, ``time_A [s]``,
        ``time_B [s]``, ``delta_time [s]`` (= B - A, > 0: B lost time in the corner),
        ``min_speed_A [km/h]``, ``min_speed_B [km/h]``, ``delta_min_speed [km/h]`` (= B - A).
    """
    cols = ["number", "name", "direction", "s_entry [m]", "s_exit [m]", "time_A [s]",
            "time_B [s]", "delta_time [s]", "min_speed_A [km/h]", "min_speed_B [km/h]",
            "delta_min_speed [km/h]"]
    rows = []
    b_by_number = {int(r["number"]): r for _, r in table_b.iterrows()}
    for _, ra in table_a.iterrows():
        rb = b_by_number.get(int(ra["number"]))
        if rb is None or abs(rb["s_entry [m]"] - ra["s_entry [m]"]) > tol_m or abs(
                rb["s_exit [m]"] - ra["s_exit [m]"]) > tol_m:
            continue
        rows.append({"number": int(ra["number"]), "name": ra["name"],
                     "direction": ra["direction"], "s_entry [m]": ra["s_entry [m]"],
                     "s_exit [m]": ra["s_exit [m]"], "time_A [s]": ra["time [s]"],
                     "time_B [s]": rb["time [s]"],
                     "delta_time [s]": rb["time [s]"] - ra["time [s]"],
                     "min_speed_A [km/h]": ra["min_speed [km/h]"],
                     "min_speed_B [km/h]": rb["min_speed [km/h]"],
                     "delta_min_speed [km/h]": rb["min_speed [km/h]"] - ra["min_speed [km/h]"]})
    return pd.DataFrame(rows, columns=cols)
