r"""How far the exported channels can be trusted: zig-zags between neighbouring points and the
consistency of the speed with the acceleration.

Both measures read a trajectory table (:func:`pyomo_lap.post.results.trajectory_dataframe`,
``trajectory.parquet``) and nothing else; :func:`channel_quality` gathers them for
``summary.json`` (key ``channel_quality``), the workbook's ``quality`` sheet and
``pyomo-lap validate``.

**Zig-zag count.** For each interior point :math:`i` of a channel :math:`x(s)` the residual
against the straight line through its two neighbours,

.. math::
    r_i = x_i - \big[(1 - w_i)\,x_{i-1} + w_i\,x_{i+1}\big],\qquad
    w_i = \frac{s_i - s_{i-1}}{s_{i+1} - s_{i-1}},

is about :math:`\tfrac12 x''(s)\,(s_i - s_{i-1})(s_{i+1} - s_i)` on a smooth channel. A
*zig-zag* is a pair of neighbouring points whose residuals have opposite signs and both
exceed the channel's threshold in magnitude (:data:`SMOOTHNESS_CHECKS`): a point that jumps
away from its neighbours and back (chatter of a control between collocation points) counts,
and so does a transient too short for the mesh (the inflection of a lateral-acceleration
flick that falls on three points). A channel sampled finely enough for its variations has
none.

**Speed consistency.** Between neighbouring points the change of speed must equal the
integral of the tangential acceleration :math:`a_t = (v_{3x} a_x + v_{3y} a_y)/|v|` over the
time between them; :func:`speed_consistency` compares :math:`v_{i+1} - v_i` with the
trapezoidal :math:`\tfrac12 (a_{t,i} + a_{t,i+1})(t_{i+1} - t_i)` (second-order accurate on
a smooth solution).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

import numpy as np

__all__ = ["SmoothnessCheck", "SMOOTHNESS_CHECKS", "zigzag_residuals", "zigzag_count",
           "speed_consistency", "tangential_acceleration", "channel_quality",
           "SPEED_CONSISTENCY_TOL_MPS", "quality_table"]


@dataclasses.dataclass(frozen=True)
class SmoothnessCheck:
    """The zig-zag threshold of one channel.

    Attributes
    ----------
    channel : str
        Column of the trajectory table (SI units).
    threshold : float
        In the column's SI unit (rad, N, m/s, m/s^2).
    display_unit : str
        The unit the threshold is stated in for people (``"deg"``, ``"N"``, ``"km/h"`` ...).
    display_factor : float
        SI value times this is the value in ``display_unit``.
    """

    channel: str
    threshold: float
    display_unit: str
    display_factor: float = 1.0

    @property
    def display_threshold(self) -> float:
        """The threshold in :attr:`display_unit`."""
        return self.threshold * self.display_factor


_DEG = 180.0 / math.pi

SMOOTHNESS_CHECKS: tuple = (
    SmoothnessCheck("delta", math.radians(0.1), "deg", _DEG),
    SmoothnessCheck("alpha_1", math.radians(0.1), "deg", _DEG),
    SmoothnessCheck("alpha_2", math.radians(0.1), "deg", _DEG),
    SmoothnessCheck("f_11z", 20.0, "N"),
    SmoothnessCheck("f_12z", 20.0, "N"),
    SmoothnessCheck("f_21z", 20.0, "N"),
    SmoothnessCheck("f_22z", 20.0, "N"),
    SmoothnessCheck("speed", 0.3 / 3.6, "km/h", 3.6),
    SmoothnessCheck("a_x", 1.0, "m/s^2"),
    SmoothnessCheck("a_y", 1.0, "m/s^2"),
)
"""The channels whose zig-zags are counted, with their thresholds: steer and slip angles
0.1 deg, vertical loads 20 N, speed 0.3 km/h, accelerations 1 m/s^2 (below what a logger
channel resolves at race speeds; the thresholds of issue 22 of the project)."""

SPEED_CONSISTENCY_TOL_MPS = 0.05
"""Largest accepted difference [m/s] between the change of speed from one point to the next and
the integral of the tangential acceleration over the time between them (0.18 km/h; a
trapezoid over 7 m at 30 m/s with the tangential acceleration changing by 10 m/s^2 over
the step errs by about 0.01 m/s)."""


def _distinct(s: np.ndarray) -> np.ndarray:
    """Mask of the points kept: the first of points with the same ``s`` (a table may repeat
    an element boundary)."""
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = np.diff(s) > 1e-9
    return keep


def zigzag_residuals(s: Sequence[float], x: Sequence[float]) -> np.ndarray:
    """Residual of each interior point against the straight line through its neighbours.

    Parameters
    ----------
    s : (n,) array_like
        Strictly increasing positions [m].
    x : (n,) array_like
        The channel at ``s``.

    Returns
    -------
    (n - 2,) ndarray
        ``r_i`` for ``i = 1 .. n-2`` (module docstring), in the unit of ``x``.

    Raises
    ------
    ValueError
        ``s`` and ``x`` of different lengths, or ``s`` not strictly increasing.
    """
    s = np.asarray(s, dtype=float)
    x = np.asarray(x, dtype=float)
    if s.shape != x.shape or s.ndim != 1:
        raise ValueError(f"s and x must be 1-D arrays of one length, got {s.shape} and {x.shape}")
    if s.size < 3:
        return np.zeros(0)
    if np.any(np.diff(s) <= 0):
        raise ValueError("s must be strictly increasing")
    w = (s[1:-1] - s[:-2]) / (s[2:] - s[:-2])
    return x[1:-1] - ((1.0 - w) * x[:-2] + w * x[2:])


def zigzag_count(s, x, threshold: float) -> dict:
    """Zig-zags of a channel (module docstring).

    Parameters
    ----------
    s : (n,) array_like
        Positions [m] (repeated positions: the first is kept).
    x : (n,) array_like
        The channel.
    threshold : float
        In the unit of ``x``; > 0.

    Returns
    -------
    dict
        ``count`` (pairs of neighbouring points with residuals of opposite sign both above
        the threshold), ``max_residual`` (largest :math:`|r_i|`, unit of ``x``),
        ``max_residual_at`` (its ``s``), ``at`` (``s`` of the first point of each pair).

    Raises
    ------
    ValueError
        ``threshold`` not positive, or bad ``s`` / ``x`` (:func:`zigzag_residuals`).
    """
    if not (threshold > 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold = {threshold!r}: expected a positive number")
    s = np.asarray(s, dtype=float)
    x = np.asarray(x, dtype=float)
    keep = _distinct(s)
    s, x = s[keep], x[keep]
    r = zigzag_residuals(s, x)
    if r.size < 2:
        return {"count": 0, "max_residual": 0.0, "max_residual_at": None, "at": []}
    big = np.abs(r) > threshold
    flip = np.sign(r[1:]) * np.sign(r[:-1]) < 0
    pairs = np.flatnonzero(flip & big[1:] & big[:-1])
    i_max = int(np.argmax(np.abs(r)))
    return {"count": int(pairs.size), "max_residual": float(np.abs(r[i_max])),
            "max_residual_at": float(s[i_max + 1]), "at": [float(v) for v in s[pairs + 1]]}


def tangential_acceleration(df) -> np.ndarray:
    """Acceleration of O3 along its velocity [m/s^2], :math:`(v_{3x} a_x + v_{3y} a_y)/|v|`
    (``a_x``, ``a_y``: the acceleration of O3 in {B3} without gravity)."""
    vx, vy = df["v_3x"].to_numpy(float), df["v_3y"].to_numpy(float)
    ax, ay = df["a_x"].to_numpy(float), df["a_y"].to_numpy(float)
    return (vx * ax + vy * ay) / np.maximum(np.hypot(vx, vy), 1e-9)


def speed_consistency(df, tol: float = SPEED_CONSISTENCY_TOL_MPS) -> dict:
    """The change of speed between neighbouring points against the integrated tangential
    acceleration (module docstring).

    Parameters
    ----------
    df : DataFrame
        Columns ``s`` (or ``s_sector``), ``t``, ``speed``, ``v_3x``, ``v_3y``, ``a_x``,
        ``a_y`` (SI).
    tol : float
        Accepted difference per step [m/s].

    Returns
    -------
    dict
        ``max_error_mps`` (largest :math:`|\\Delta v - \\int a_t dt|`), ``max_error_at``
        (``s`` of the step's first point [m]), ``rms_error_mps``, ``count`` (steps above
        ``tol``), ``tol_mps``.
    """
    col = "s_sector" if "s_sector" in df.columns else "s"
    s = df[col].to_numpy(float)
    keep = _distinct(s)
    t = df["t"].to_numpy(float)[keep]
    v = df["speed"].to_numpy(float)[keep]
    at = tangential_acceleration(df)[keep]
    err = np.diff(v) - 0.5 * (at[1:] + at[:-1]) * np.diff(t)
    if err.size == 0:
        return {"max_error_mps": 0.0, "max_error_at": None, "rms_error_mps": 0.0, "count": 0,
                "tol_mps": tol}
    i = int(np.argmax(np.abs(err)))
    return {"max_error_mps": float(abs(err[i])), "max_error_at": float(s[keep][i]),
            "rms_error_mps": float(np.sqrt(np.mean(err ** 2))),
            "count": int(np.sum(np.abs(err) > tol)), "tol_mps": tol}


def channel_quality(df, checks: Optional[Sequence[SmoothnessCheck]] = None) -> dict:
    """The smoothness and consistency of a trajectory table, for ``summary.json``.

    Parameters
    ----------
    df : DataFrame
        A trajectory table of the full or multibody model (channels missing from it are
        skipped; the single-track table has no per-wheel loads).
    checks : sequence of SmoothnessCheck, optional
        Default :data:`SMOOTHNESS_CHECKS`.

    Returns
    -------
    dict
        ``zigzags``: ``{channel: {"count", "threshold", "unit", "max_residual", "at"}}``
        (threshold and residual in ``unit``, at most 20 positions in ``at``),
        ``zigzag_total``, ``speed_consistency`` (:func:`speed_consistency`, when the table
        has the columns it needs).
    """
    col = "s_sector" if "s_sector" in df.columns else "s"
    s = df[col].to_numpy(float)
    offset = (df["s"].to_numpy(float)[0] - s[0]) if col == "s_sector" and "s" in df.columns else 0.0
    out = {}
    for chk in checks or SMOOTHNESS_CHECKS:
        if chk.channel not in df.columns:
            continue
        z = zigzag_count(s, df[chk.channel].to_numpy(float), chk.threshold)
        f = chk.display_factor
        out[chk.channel] = {"count": z["count"], "threshold": chk.display_threshold,
                            "unit": chk.display_unit, "max_residual": z["max_residual"] * f,
                            "max_residual_at_m": (None if z["max_residual_at"] is None
                                                  else z["max_residual_at"] + offset),
                            "at_m": [a + offset for a in z["at"][:20]]}
    res = {"zigzags": out, "zigzag_total": int(sum(v["count"] for v in out.values()))}
    if all(c in df.columns for c in ("t", "speed", "v_3x", "v_3y", "a_x", "a_y")):
        sc = speed_consistency(df)
        if sc["max_error_at"] is not None:
            sc["max_error_at"] += offset
        res["speed_consistency"] = sc
    return res


def quality_table(quality: dict):
    """:func:`channel_quality` as a table (the workbook's ``quality`` sheet): one row per
    channel with its zig-zag count, threshold, unit and largest residual, and a row for the
    speed consistency."""
    import pandas as pd
    rows = [{"check": f"zig-zags of {ch}", "count": v["count"], "threshold": v["threshold"],
             "unit": v["unit"], "largest": v["max_residual"], "at s [m]": v["max_residual_at_m"]}
            for ch, v in quality.get("zigzags", {}).items()]
    sc = quality.get("speed_consistency")
    if sc:
        rows.append({"check": "speed vs integrated tangential acceleration, per step",
                     "count": sc["count"], "threshold": sc["tol_mps"], "unit": "m/s",
                     "largest": sc["max_error_mps"], "at s [m]": sc["max_error_at"]})
    return pd.DataFrame(rows, columns=["check", "count", "threshold", "unit", "largest", "at s [m]"])
