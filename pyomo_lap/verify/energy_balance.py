r"""The energy balance of a trajectory: no acceleration that the power and the drag do not
allow, and no drive force above the power available.

Along its velocity the car is pushed by its drive force and pulled back by its drag, the
grade and whatever its tyres dissipate (brakes, slip, the lateral forces' work at the contact
patches, the dampers; all :math:`\le 0`). So at every point

.. math::
    m\,a_t \le \frac{P(v_x)}{v_x} + f_{drag}\,\frac{v_x}{v} - m g\,(\hat z \cdot \hat v)

(:math:`a_t` the tangential acceleration of O3 without gravity, channel ``a_t``; :math:`P(v)`
the power available at the driven wheels, :func:`pyomo_lap.vehicle.powertrain.power_available`;
:math:`f_{drag} \le 0` the drag along :math:`x_3`, channel ``f_drag``, its share along the
velocity :math:`v_x/v`; :math:`\hat z` the ground's vertical in {B3} from the track's rotation
and the heading :math:`q_3`, :math:`\hat v = (v_{3x}, v_{3y}, 0)/v`). The drive force's share
along the velocity, :math:`f_{xa} v_x / v`, is at most :math:`f_{xa}`, and :math:`f_{xa} v_x
\le P(v_x)` is the power row of the OCP. :func:`energy_balance` measures the excess of the
left side over the right, as power relative to the car's :math:`P_{max}`:

.. math::
    e_i = \frac{\big(m a_t - P/v_x - f_{drag} v_x/v + m g\,\hat z\cdot\hat v\big)\,v}{P_{max}},

and the power row's excess :math:`(f_{xa} v_x - P(v_x))/P_{max}`. Both are dimensionless and
negative for a car that is not at full power. The yaw's kinetic energy exchanged with the
forward motion is counted: :math:`m a_t v + I_z \omega_z \dot\omega_z` on the left (a flick
through a chicane turns yaw energy into speed: a road car swinging its yaw rate from -0.84
to +0.64 rad/s through Monza's first chicane gains 0.1 m/s^2 that way). What the inequality
leaves out: the energy the heave exchanges with the forward motion (the pitch and roll of the
sprung body about the VIP and the turning of {B3} with the track, which carry the centre of
mass above O3, are counted, :func:`_frame_rotation_terms`); measured on good results it is below 1 % of
:math:`P_{max}` (:data:`pyomo_lap.verify.verdict.ENERGY_BALANCE`).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..vehicle.powertrain import power_available

__all__ = ["energy_balance", "ground_vertical", "ENERGY_COLUMNS"]

ENERGY_COLUMNS = ("t", "q3", "v_3x", "v_3y", "a_x", "a_y", "f_drag", "f_xa")
"""The trajectory columns :func:`energy_balance` needs (and ``s``, ``speed``)."""


def ground_vertical(track, s, q3) -> np.ndarray:
    r"""The ground's vertical :math:`\hat z` in {B3} at track coordinates ``s`` [m] and
    headings ``q3`` [rad] relative to the track frame: the third row of the track's rotation
    (:meth:`pyomo_lap.track.geometry.Track.evaluate`, columns tangent, lateral, normal)
    turned by :math:`-q_3` about the track's normal. Returns (n, 3)."""
    R = np.asarray(track.evaluate(np.asarray(s, dtype=float)).rotation, dtype=float)
    ez = R[:, 2, :]                           # e_z of the ground in the track frame
    c, sn = np.cos(q3), np.sin(q3)
    return np.column_stack([c * ez[:, 0] + sn * ez[:, 1], -sn * ez[:, 0] + c * ez[:, 1], ez[:, 2]])


def energy_balance(df, vehicle, track=None, zhat: Optional[np.ndarray] = None) -> dict:
    """The excess acceleration and the power row of a trajectory (module docstring); a hybrid's
    deployed power (the column ``power_deploy``, :mod:`pyomo_lap.ocp.hybrid`) is added to the
    power available.

    Parameters
    ----------
    df : DataFrame
        A trajectory table (columns :data:`ENERGY_COLUMNS`, ``s``; ``speed`` optional).
    vehicle : VehicleParameters
    track : Track, optional
        The track of the table's ``s`` (for the grade); or ``zhat``.
    zhat : (n, 3) array, optional
        The ground's vertical in {B3} at the table's points (:func:`ground_vertical`).

    Returns
    -------
    dict
        ``excess`` (the largest :math:`e_i` [-], relative to ``P_max``), ``excess_at`` (its
        ``s`` [m]), ``excess_accel_mps2`` (there, the excess as an acceleration
        [m/s^2]), ``speed_at_mps`` (the speed there), ``power_row`` (the largest
        :math:`(f_{xa} v_x - P(v_x))/P_{max}` [-]), ``power_row_at`` (its ``s``), ``e``
        (every point's :math:`e_i`, an array).

    Raises
    ------
    ValueError
        A column missing, or neither ``track`` nor ``zhat``.
    """
    missing = [c for c in ENERGY_COLUMNS + ("s",) if c not in df.columns]
    if missing:
        raise ValueError(f"the trajectory has no column(s) {', '.join(missing)}")
    p = vehicle
    s = df["s"].to_numpy(float)
    vx, vy = df["v_3x"].to_numpy(float), df["v_3y"].to_numpy(float)
    v = np.maximum(np.hypot(vx, vy), 1e-6)
    vxp = np.maximum(vx, 1e-6)
    ax = df["a_x"].to_numpy(float)
    if "q5_ddot" in df.columns and hasattr(p, "h_vip"):
        # the centre of mass's acceleration, not O3's: the sprung body pitching about the
        # VIP moves its centre fore and aft of O3 by (h - h_vip) sin(q5) (+ nose down), so a
        # squatting car's O3 runs ahead of its centre of mass
        ax = ax + (p.m_s / p.m) * (p.h - p.h_vip) * df["q5_ddot"].to_numpy(float)
    ay = df["a_y"].to_numpy(float)
    if "q6_ddot" in df.columns and hasattr(p, "h_vip"):     # and rolling (+ right side down)
        ay = ay - (p.m_s / p.m) * (p.h - p.h_vip) * df["q6_ddot"].to_numpy(float)
    ax, ay = _frame_rotation_terms(df, p, ax, ay)
    at = (vx * ax + vy * ay) / v
    if zhat is None:
        if track is None:
            raise ValueError("energy_balance needs the track (or zhat) for the grade")
        zhat = ground_vertical(track, s, df["q3"].to_numpy(float))
    grade = (zhat[:, 0] * vx + zhat[:, 1] * vy) / v          # sine of the climb along v
    P = np.asarray(power_available(p, vxp), dtype=float)
    if "power_deploy" in df.columns:        # a hybrid's motor (pyomo_lap.ocp.hybrid)
        P = P + np.nan_to_num(df["power_deploy"].to_numpy(float))
    drive = P / vxp
    drag_t = df["f_drag"].to_numpy(float) * vx / v
    excess_force = p.m * at - drive - drag_t + p.m * p.gravity * grade
    # the yaw's kinetic energy, I_z omega^2 / 2, exchanged with the forward motion (a flick
    # through a chicane gives some back): its rate I_z omega d(omega)/dt [W], I_z the car's
    # (the sprung body's and the unsprung body's about z)
    if "omega_3z" in df.columns and "t" in df.columns and len(df) > 2:
        w = df["omega_3z"].to_numpy(float)
        dw = _time_derivative(w, df["t"].to_numpy(float))
        Iz = p.Izz + p.unsprung_inertia[2]
        excess_force = excess_force + Iz * w * dw / v
    e = excess_force * v / p.P_max
    i = int(np.argmax(e))
    row = (df["f_xa"].to_numpy(float) * vx - P) / p.P_max
    k = int(np.argmax(row))
    return {"excess": float(e[i]), "excess_at": float(s[i]),
            "excess_accel_mps2": float(excess_force[i] / p.m), "speed_at_mps": float(v[i]),
            "power_row": float(row[k]), "power_row_at": float(s[k]), "e": e,
            "grade": grade}


def _frame_rotation_terms(df, p, ax, ay) -> tuple:
    r"""The centre of mass's acceleration [m/s^2] along x3 and y3 from O3's (``ax``, ``ay``):
    the car's centre of mass lies :math:`h_G` above O3 (the sprung body's at ``h``, the
    unsprung body's at the wheel radius), and the frame {B3} turns with the track, at
    :math:`\omega = R_z(q_3)^T \Omega\,\dot q_1 + \dot q_3 \hat z` (``Omega_x``, ``Omega_y``
    [1/m] per metre of ``s``), so :math:`a_G = a_{O3} + \dot\omega \times h_G\hat z + \omega
    \times (\omega \times h_G\hat z)`, in components the two rows below.

    .. math::
        a_{G,x} = a_x + h_G(\dot\omega_y + \omega_x\omega_z), \qquad
        a_{G,y} = a_y + h_G(-\dot\omega_x + \omega_y\omega_z).

    Over a crest whose curvature grows (Suzuka at 4770 m: ``Omega_y`` from 0.0004 to 0.0009
    1/m in 20 m at 53 m/s) the frame's pitch rate grows and the centre of mass, above O3,
    loses speed relative to it: about 0.03 m/s^2 for the BMW 320i there, which O3's
    acceleration alone showed as an excess over its power. Unchanged (``ax``, ``ay``) for a
    table without the columns (``t``, ``q1_dot``, ``q3``, ``q3_dot``, ``Omega_x``,
    ``Omega_y``) or a car without the fields."""
    need = ("t", "q1_dot", "q3", "q3_dot", "Omega_x", "Omega_y")
    if (len(df) < 3 or not all(c in df.columns for c in need)
            or not all(hasattr(p, a) for a in ("m_s", "m_u", "h", "wheel_radius"))):
        return ax, ay
    hG = (p.m_s * p.h + p.m_u * p.wheel_radius) / p.m
    q1d = df["q1_dot"].to_numpy(float)
    q3 = df["q3"].to_numpy(float)
    Ox, Oy = df["Omega_x"].to_numpy(float), df["Omega_y"].to_numpy(float)
    wx = (np.cos(q3) * Ox + np.sin(q3) * Oy) * q1d
    wy = (-np.sin(q3) * Ox + np.cos(q3) * Oy) * q1d
    wz = df["omega_3z"].to_numpy(float) if "omega_3z" in df.columns else \
        df["Omega_z"].to_numpy(float) * q1d + df["q3_dot"].to_numpy(float)
    t = df["t"].to_numpy(float)
    dwx, dwy = _time_derivative(wx, t), _time_derivative(wy, t)
    return ax + hG * (dwy + wx * wz), ay + hG * (-dwx + wy * wz)


def _time_derivative(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The derivative dx/dt at a table's points (second-order differences, ``np.gradient``); a
    point at the same time as the one before it (an element boundary repeated) gets 0."""
    keep = np.r_[True, np.diff(t) > 1e-9]
    out = np.zeros_like(x)
    out[keep] = np.gradient(x[keep], t[keep])
    return out


def _finite(x) -> bool:
    return x is not None and math.isfinite(x)
