r"""How far the exported channels can be trusted: zig-zags between neighbouring points and the
consistency of the speed with the acceleration.

Both measures read a trajectory table (:func:`pyomo_lap.results.table.trajectory_dataframe`,
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

The thresholds are fractions of the car's scales (:func:`channel_scales`: its steer limit,
slip scale, largest tyre force, top speed, largest acceleration), not numbers of one car.

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

from ..results.table import tangential_acceleration
from ..vehicle.car import (  # noqa: F401  (re-exported)
    SPEED_CAP_MPS,
    car_scales,
    load_vehicle,
    slip_scale,
    speed_scale,
)

__all__ = ["SmoothnessCheck", "SMOOTHNESS_CHECKS", "zigzag_residuals", "zigzag_count",
           "speed_consistency", "channel_quality",
           "SPEED_CONSISTENCY_TOL", "smoothness_table", "channel_scales",
           "speed_scale", "slip_scale", "steer_scale", "rms_curvature", "speed_step_errors",
           "model_quality", "SPEED_CAP_MPS"]


@dataclasses.dataclass(frozen=True)
class SmoothnessCheck:
    r"""The zig-zag threshold of one channel, a fraction of one of the car's scales
    (:func:`channel_scales`).

    Attributes
    ----------
    channel : str
        Column of the trajectory table (SI units).
    fraction : float
        The threshold over the scale [-].
    scale : str
        A key of :func:`channel_scales`: ``"steer"`` (the steer limit
        :math:`\delta_{max}`), ``"slip"`` (the slip angle at which the tyre's linear force
        reaches its peak, :math:`D/C_\alpha` at the static load), ``"force"`` (the largest
        tyre force, :func:`pyomo_lap.ocp.common.force_scale`), ``"speed"`` (the top speed
        of power and drag, :func:`speed_scale`), ``"acceleration"`` (the force scale over
        the mass).
    display_unit : str
        The unit the threshold is stated in for people (``"deg"``, ``"N"``, ``"km/h"`` ...).
    display_factor : float
        SI value times this is the value in ``display_unit``.
    """

    channel: str
    fraction: float
    scale: str
    display_unit: str
    display_factor: float = 1.0

    def threshold(self, scales: dict) -> float:
        """The threshold in the column's SI unit for a car's :func:`channel_scales`."""
        return self.fraction * scales[self.scale]

    def display_threshold(self, scales: dict) -> float:
        """The threshold in :attr:`display_unit`."""
        return self.threshold(scales) * self.display_factor


_DEG = 180.0 / math.pi

SMOOTHNESS_CHECKS: tuple = (
    SmoothnessCheck("delta", 0.12, "steer", "deg", _DEG),
    SmoothnessCheck("alpha_1", 0.045, "slip", "deg", _DEG),
    SmoothnessCheck("alpha_2", 0.045, "slip", "deg", _DEG),
    SmoothnessCheck("f_11z", 0.0032, "force", "N"),
    SmoothnessCheck("f_12z", 0.0032, "force", "N"),
    SmoothnessCheck("f_21z", 0.0032, "force", "N"),
    SmoothnessCheck("f_22z", 0.0032, "force", "N"),
    SmoothnessCheck("speed", 0.0021, "speed", "km/h", 3.6),
    SmoothnessCheck("a_x", 0.04, "acceleration", "m/s^2"),
    SmoothnessCheck("a_y", 0.04, "acceleration", "m/s^2"),
)
"""The channels whose zig-zags are counted, with their thresholds as fractions of the car's
scales (:func:`channel_scales`): steer angle 12 % of the steering the sector asks of the car
(:func:`steer_scale`: the wheelbase times the track's RMS curvature; 0.1 deg on the FSAE car's
default job, where it was 0.4 % of the steer limit before the steering penalties were scaled
by the same measure, issue 33), slip angles 4.5 % of
the tyre's peak slip scale, vertical loads 0.32 % of the largest tyre force, speed 0.21 % of
the top speed, accelerations 4 % of the largest acceleration. They were the absolute
thresholds of issue 22 (0.1 deg, 0.1 deg, 20 N, 0.3 km/h, 1 m/s^2: below what a logger
channel resolves at race speeds), measured on the FSAE car, made relative to its scales
(steer limit 25.8 deg, slip scale 2.35 deg, force scale 6280 N, top speed 40.9 m/s,
acceleration scale 26.2 m/s^2) and rounded up: on the FSAE car they are 0.103 deg, 0.106
deg, 20.1 N, 0.31 km/h and 1.05 m/s^2; on the Formula One car of 2014 0.080 deg, 0.149 deg,
183 N, 0.73 km/h, 3.5 m/s^2; on the BMW 320i 0.119 deg, 0.123 deg, 40 N, 0.45 km/h,
0.46 m/s^2."""

SPEED_CONSISTENCY_TOL = 0.0012
"""Largest accepted difference between the change of speed from one point to the next and
the integral of the tangential acceleration over the time between them, as a fraction of the
car's top speed (:func:`speed_scale`) [-]: the steps above it are counted. It was 0.05 m/s
on the FSAE car (top speed 40.9 m/s; 0.049 m/s now; a trapezoid over 7 m at 30 m/s with the
tangential acceleration changing by 10 m/s^2 over the step errs by about 0.01 m/s); 0.12
m/s on the Formula One car of 2014, 0.07 m/s on the BMW 320i."""

REFERENCE_CURVATURE = 0.02
"""The curvature [1/m] of the steer scale where a table has no track (the docs' table of the
thresholds): corners of 50 m radius."""


def steer_scale(p, df=None) -> float:
    r"""The steering a sector asks of the car [rad]: the wheelbase times the root mean square
    of the track's curvature over the table's points (column ``Omega_z``; at least
    :math:`2\pi/L`, a full turn over the sector's length), as the objective's steering
    penalties take it (:func:`pyomo_lap.ocp.common.steer_scale`); without a table, corners of
    :data:`REFERENCE_CURVATURE`. A car twice as long steers twice as much through the same
    corners: its steering is judged against that, not against its steering rack's limit."""
    return float((p.a1 + p.a2) * rms_curvature(df))


def rms_curvature(df=None) -> float:
    r"""The root mean square of the track's curvature over a table's points [1/m] (column
    ``Omega_z``), at least :math:`2\pi/L` (a full turn over the sector's length); without a
    table (or the column), :data:`REFERENCE_CURVATURE`. The curvature of :func:`steer_scale`."""
    kappa = REFERENCE_CURVATURE
    if df is not None and "Omega_z" in df.columns and len(df) > 1:
        om = df["Omega_z"].to_numpy(float)
        s = df["s_sector"].to_numpy(float) if "s_sector" in df.columns else df["s"].to_numpy(float)
        L = float(s[-1] - s[0])
        kappa = max(float(np.sqrt(np.mean(om ** 2))), 2.0 * math.pi / max(L, 1.0))
    return kappa


def channel_scales(p, df=None) -> dict:
    """The car's scales of the channels (:class:`SmoothnessCheck`), in SI units
    (:func:`pyomo_lap.vehicle.car.car_scales` at the RMS curvature of the table ``df``,
    :func:`rms_curvature`): ``steer`` (:func:`steer_scale` [rad]), ``slip``
    (:func:`slip_scale` [rad]), ``force`` (:func:`pyomo_lap.vehicle.car.force_scale` [N]),
    ``speed`` (:func:`speed_scale` [m/s]), ``acceleration`` (the force scale over the mass
    [m/s^2]). A car file of another schema (the ``racecar`` model's) has none here: its
    model's dynamics give its own (:func:`model_quality`)."""
    try:
        return car_scales(p, rms_curvature(df))
    except AttributeError:
        return {}


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




def speed_consistency(df, v_ref: float, tol: float = SPEED_CONSISTENCY_TOL,
                      a_t: Optional[np.ndarray] = None) -> dict:
    r"""The change of speed between neighbouring points against the integrated tangential
    acceleration (module docstring), relative to the car's speed scale.

    Parameters
    ----------
    df : DataFrame
        Columns ``s`` (or ``s_sector``), ``t``, ``speed``, and, without ``a_t``, ``v_3x``,
        ``v_3y``, ``a_x``, ``a_y`` (SI).
    v_ref : float
        The car's speed scale [m/s] (:func:`speed_scale`), > 0.
    tol : float
        Accepted difference per step, a fraction of ``v_ref`` [-].
    a_t : (n,) array, optional
        The rate of change of ``speed`` at the table's points [m/s^2], for a table without
        the columns ``v_3x, v_3y, a_x, a_y`` (the racecar's: its ``dV/dt`` from its equations,
        :func:`model_quality`). Default: the
        tangential acceleration of those columns (:func:`tangential_acceleration`).

    Returns
    -------
    dict
        ``max_error_mps`` (largest :math:`|\Delta v - \int a_t dt|`), ``max_error_rel``
        (over ``v_ref`` [-]), ``max_error_at`` (``s`` of the step's first point [m]),
        ``rms_error_mps``, ``count`` (steps above ``tol``), ``tol`` [-], ``tol_mps``,
        ``v_ref_mps``; with a column ``Omega_z``, ``curvature_step`` (the track's curvature
        steps within the worst step: a track of straights and arcs).

    Raises
    ------
    ValueError
        ``v_ref`` not a positive number.
    """
    if not (v_ref > 0 and math.isfinite(v_ref)):
        raise ValueError(f"v_ref = {v_ref!r} m/s: expected a positive speed")
    s, err = speed_step_errors(df, a_t)
    keep = _distinct(df["s_sector" if "s_sector" in df.columns else "s"].to_numpy(float))
    out = {"max_error_mps": 0.0, "max_error_rel": 0.0, "max_error_at": None,
           "rms_error_mps": 0.0, "count": 0, "tol": tol, "tol_mps": tol * v_ref,
           "v_ref_mps": float(v_ref)}
    if err.size == 0:
        return out
    i = int(np.argmax(np.abs(err)))
    out.update(max_error_mps=float(abs(err[i])), max_error_rel=float(abs(err[i]) / v_ref),
               max_error_at=float(s[i]), rms_error_mps=float(np.sqrt(np.mean(err ** 2))),
               count=int(np.sum(np.abs(err) > tol * v_ref)))
    if "Omega_z" in df.columns and err.size > 2:
        # a step of the track's curvature within the worst step: the speed of O3,
        # q1_dot (1 - kappa q2), jumps with kappa while q1_dot is continuous
        # (a jump against its neighbouring steps, not a chicane's fast but smooth change)
        dk = np.abs(np.diff(df["Omega_z"].to_numpy(float)[keep]))
        around = max(dk[i - 1] if i > 0 else 0.0, dk[i + 1] if i + 1 < dk.size else 0.0)
        out["curvature_step"] = bool(dk[i] > 1e-4 and dk[i] > 10.0 * around)
    return out


def speed_step_errors(df, a_t: Optional[np.ndarray] = None) -> tuple:
    r"""The error of every step of :func:`speed_consistency`: the change of speed from one point
    to the next minus the trapezoid integral of the tangential acceleration over the time
    between them.

    Parameters
    ----------
    df : DataFrame
        Columns ``s`` (or ``s_sector``), ``t``, ``speed`` and, without ``a_t``, ``v_3x``,
        ``v_3y``, ``a_x``, ``a_y`` (SI). Points repeated at the same ``s`` count once.
    a_t : (n,) array, optional
        The rate of change of ``speed`` at the table's points [m/s^2] (:func:`speed_consistency`).

    Returns
    -------
    s : ndarray (n - 1,)
        The step's first point, in the table's distance column [m] (``s_sector`` if it has
        one, else ``s``).
    err : ndarray (n - 1,)
        :math:`\Delta v - \tfrac12 (a_{t,k} + a_{t,k+1}) \Delta t` [m/s].
    """
    col = "s_sector" if "s_sector" in df.columns else "s"
    s = df[col].to_numpy(float)
    keep = _distinct(s)
    t = df["t"].to_numpy(float)[keep]
    v = df["speed"].to_numpy(float)[keep]
    at = (tangential_acceleration(df) if a_t is None else np.asarray(a_t, float))[keep]
    err = np.diff(v) - 0.5 * (at[1:] + at[:-1]) * np.diff(t)
    return s[keep][:-1], err


def channel_quality(df, vehicle, checks: Optional[Sequence[SmoothnessCheck]] = None,
                    scales: Optional[dict] = None, a_t: Optional[np.ndarray] = None) -> dict:
    """The smoothness and consistency of a trajectory table, for ``summary.json``.

    Parameters
    ----------
    df : DataFrame
        A trajectory table of the full or multibody model (channels missing from it are
        skipped; the single-track table has no per-wheel loads).
    vehicle : VehicleParameters
        The car of the table: its scales (:func:`channel_scales`) give the thresholds.
    checks : sequence of SmoothnessCheck, optional
        Default :data:`SMOOTHNESS_CHECKS`.
    scales : dict, optional
        The car's scales (default :func:`channel_scales`; a car of another schema gives its
        own, ``ModelDynamics.scales``: :func:`model_quality`).
    a_t : (n,) array, optional
        The rate of change of the speed at the points, for the speed consistency of a table
        without the full model's velocity and acceleration columns (:func:`speed_consistency`).

    Returns
    -------
    dict
        ``zigzags``: ``{channel: {"count", "threshold", "unit", "fraction", "scale",
        "max_residual", "at"}}`` (threshold and residual in ``unit``, the threshold as a
        fraction of the car's scale, at most 20 positions in ``at``), ``zigzag_total``,
        ``speed_consistency`` (:func:`speed_consistency`, when the table has the columns it
        needs), ``scales`` (:func:`channel_scales`).
    """
    scales = channel_scales(vehicle, df) if scales is None else scales
    col = "s_sector" if "s_sector" in df.columns else "s"
    s = df[col].to_numpy(float)
    offset = (df["s"].to_numpy(float)[0] - s[0]) if col == "s_sector" and "s" in df.columns else 0.0
    out = {}
    for chk in checks or SMOOTHNESS_CHECKS:
        if chk.channel not in df.columns or chk.scale not in scales:
            continue
        z = zigzag_count(s, df[chk.channel].to_numpy(float), chk.threshold(scales))
        f = chk.display_factor
        out[chk.channel] = {"count": z["count"], "threshold": chk.display_threshold(scales),
                            "unit": chk.display_unit, "fraction": chk.fraction,
                            "scale": chk.scale, "max_residual": z["max_residual"] * f,
                            "max_residual_at_m": (None if z["max_residual_at"] is None
                                                  else z["max_residual_at"] + offset),
                            "at_m": [a + offset for a in z["at"][:20]]}
    res = {"zigzags": out, "zigzag_total": int(sum(v["count"] for v in out.values()))}
    need = ("t", "speed") + (("v_3x", "v_3y", "a_x", "a_y") if a_t is None else ())
    if "speed" in scales and all(c in df.columns for c in need):
        sc = speed_consistency(df, scales["speed"], a_t=a_t)
        if sc["max_error_at"] is not None:
            sc["max_error_at"] += offset
        res["speed_consistency"] = sc
    res["scales"] = scales
    return res




def model_quality(df, dynamics) -> dict:
    r""":func:`channel_quality` of a table of any vehicle model, through its
    :class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics`: the zig-zags of
    :data:`SMOOTHNESS_CHECKS` on the model's columns (``dynamics.channel_columns``: the
    racecar's tyre loads ``N_fl .. N_rr`` for ``f_11z .. f_22z``, its lagged accelerations
    ``ax``, ``ay`` for ``a_x``, ``a_y``), the thresholds from the model's scales
    (``dynamics.scales`` at the table's :func:`rms_curvature`), the speed consistency with the
    table's ``a_t`` where it has one (the racecar's :math:`\dot V`), else the tangential
    acceleration of ``v_3x, v_3y, a_x, a_y``.

    Parameters
    ----------
    df : DataFrame
        The trajectory table.
    dynamics : ModelDynamics
        The model's equations for the table's car (``VehicleModel.dynamics``).

    Returns
    -------
    dict
        As :func:`channel_quality`.
    """
    columns = dynamics.channel_columns
    checks = [dataclasses.replace(c, channel=columns.get(c.channel, c.channel))
              for c in SMOOTHNESS_CHECKS]
    a_t = df["a_t"].to_numpy(float) if "a_t" in df.columns else None
    return channel_quality(df, None, checks=checks, scales=dynamics.scales(rms_curvature(df)),
                           a_t=a_t)


SCALE_NAMES = {"steer": "steer scale l kappa_rms (here kappa 0.02 1/m)", "slip": "slip scale D/C_alpha",
               "force": "force scale", "speed": "top speed",
               "acceleration": "force scale / mass"}
"""How :func:`smoothness_table` names the scales of :func:`channel_scales`."""


def smoothness_table(cars=("fsae", "f1_2014", "bmw_320i")) -> str:
    """:data:`SMOOTHNESS_CHECKS` and :data:`SPEED_CONSISTENCY_TOL` as a Markdown table: the
    channel, the fraction of which scale, and the threshold for each of ``cars`` (bundled
    vehicle names) in the channel's display unit."""
    scales = {c: channel_scales(load_vehicle(c)) for c in cars}
    head = "| channel | threshold | of | " + " | ".join(cars) + " |"
    lines = [head, "|---|---|---|" + "---|" * len(cars)]
    for chk in SMOOTHNESS_CHECKS:
        vals = " | ".join(f"{chk.display_threshold(scales[c]):.3g} {chk.display_unit}" for c in cars)
        lines.append(f"| `{chk.channel}` zig-zags | {100 * chk.fraction:g} % | "
                     f"{SCALE_NAMES[chk.scale]} | {vals} |")
    vals = " | ".join(f"{SPEED_CONSISTENCY_TOL * scales[c]['speed']:.3g} m/s" for c in cars)
    lines.append(f"| speed consistency, steps counted above | {100 * SPEED_CONSISTENCY_TOL:g} % | "
                 f"{SCALE_NAMES['speed']} | {vals} |")
    return "\n".join(lines)
