r"""Logger channels: the quantities a data logger records (MoTeC i2, AiM RaceStudio), in its
units, computed from the model's own channels of :func:`pyomo_lap.results.table.trajectory_dataframe`.

=========================  ======  ============================================================
channel                    unit    definition
=========================  ======  ============================================================
``throttle``               %       :math:`100\, f_{xa} v_{3x} / P(v_{3x})`: the drive force as a
                                   share of the drive force the powertrain can give at that
                                   speed, :math:`P(v)/v` (:func:`pyomo_lap.vehicle.powertrain.power_available`:
                                   ``P_max``, the power curve or the engine's envelope, the
                                   power limit's :math:`P`), within [0, 100]
``brake``                  %       :math:`100\,(-f_{xb} - P_h/v_{3x}) / F_{x,max}`,
                                   :math:`F_{x,max} = (\mu_{x0}/\mu_{y0}) \sum D`: the
                                   friction brakes' force as a share of the four tyres'
                                   longitudinal friction limit at their present loads (the
                                   friction ellipse's x semi-axis of each tyre, load
                                   sensitivity included), within [0, 100]; the braking force
                                   :math:`f_{xb}` less what a hybrid's generator takes,
                                   :math:`P_h/v_{3x}` (``power_harvest``; 0 without one)
``harvest``                %       :math:`100\, P_h / (v_{3x} F_{x,max})`: the generator's
                                   braking force as a share of the same limit (a car with
                                   ``[hybrid]``); ``brake + harvest`` is the whole braking
``steering_wheel_angle``   deg     :math:`\delta` times the car's ``[steering] steering_ratio``
                                   (absent for a car without one)
``gear``                   \-      the gear of the power limit's envelope (1 = first; absent
                                   for a car without ``[engine]``)
``engine_speed``           rpm     :math:`g_k g_f v_{3x}/R` in that gear, at least the torque
                                   curve's lowest speed (clutch slip)
``yaw_rate``               deg/s   ``omega_3z`` in deg/s
``a_x_g``, ``a_y_g``,      g       ``a_x``, ``a_y``, ``a_z`` divided by the car's ``gravity``
``a_z_g``
=========================  ======  ============================================================

The paper's channels keep their names; these are added beside them, where the columns they
need are present (the dymos racecar's table has none of them).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..vehicle.powertrain import gear_and_engine_speed, power_available

__all__ = ["add_logger_channels", "LOGGER_CHANNELS", "generator_force"]

LOGGER_CHANNELS = ("throttle", "brake", "harvest", "steering_wheel_angle", "gear",
                   "engine_speed", "yaw_rate", "a_x_g", "a_y_g", "a_z_g")
"""The logger channels, in their column order (:data:`pyomo_lap.results.channels.UNITS`)."""

_WHEEL_PEAKS = (("D_11", "D_12", "D_21", "D_22"), ("D_1", "D_2"))
_LOADS = (("f_11z", "f_12z", "f_21z", "f_22z"), ("f_1z", "f_2z"))


def _columns(df, groups):
    """The first group of columns all present in ``df``, summed (None if none is)."""
    for names in groups:
        if all(n in df.columns for n in names):
            return sum(df[n].to_numpy(float) for n in names)
    return None


def _throttle(df, p):
    """Throttle [%]: the traction power as a share of the power available at the speed."""
    v = np.clip(df["v_3x"].to_numpy(float), 0.0, None)
    available = np.asarray(power_available(p, v), dtype=float)
    power = df["f_xa"].to_numpy(float) * v
    share = np.divide(power, available, out=np.zeros_like(power), where=available > 0)
    return 100.0 * np.clip(share, 0.0, 1.0)


def _friction_limit(df, p):
    """The four tyres' longitudinal friction limit [N] at their present loads (None without
    the columns it needs)."""
    peaks = _columns(df, _WHEEL_PEAKS)
    if peaks is not None:
        return peaks * (p.mu_x0 / p.mu_y0)
    loads = _columns(df, _LOADS)
    return None if loads is None else p.mu_x0 * np.clip(loads, 0.0, None)


def _share(force, limit):
    """100 ``force / limit`` within [0, 100] [%] (0 where there is no limit)."""
    share = np.divide(force, limit, out=np.zeros_like(force), where=limit > 0)
    return 100.0 * np.clip(share, 0.0, 1.0)


def generator_force(df):
    r"""The braking force a hybrid's generator takes at the driven wheels [N], :math:`P_h /
    v_{3x}` (``power_harvest``; zeros without the column), :math:`\ge 0`."""
    f_xb = df["f_xb"].to_numpy(float)
    if "power_harvest" not in df.columns or "v_3x" not in df.columns:
        return np.zeros_like(f_xb)
    v = df["v_3x"].to_numpy(float)
    ph = np.nan_to_num(df["power_harvest"].to_numpy(float))
    return np.divide(ph, v, out=np.zeros_like(ph), where=v > 0)


def _brake(df, p):
    """Brake [%] and harvest [%] (None without a hybrid's harvest): the friction brakes' and
    the generator's braking forces as shares of the tyres' longitudinal friction limit."""
    limit = _friction_limit(df, p)
    if limit is None:
        return None, None
    harvest = generator_force(df)
    brake = _share(-df["f_xb"].to_numpy(float) - harvest, limit)
    return brake, (_share(harvest, limit) if "power_harvest" in df.columns else None)


def add_logger_channels(df: pd.DataFrame, p) -> pd.DataFrame:
    """Add the logger channels (module docstring) to a trajectory table, in place.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`pyomo_lap.results.table.trajectory_dataframe` (columns ``f_xa``,
        ``f_xb``, ``v_3x``, ``delta``, ``omega_3z``, ``a_x`` ..., ``D_ij`` or the loads, a
        hybrid's ``power_harvest``; a channel whose inputs are missing is left out).
    p : VehicleParameters
        The car (``gravity``, ``mu_x0``, ``mu_y0``, the powertrain, ``steering_ratio``);
        another kind of car (the dymos racecar) gets the channels its fields allow.

    Returns
    -------
    pandas.DataFrame
        ``df``, with the channels added.
    """
    have = set(df.columns)
    if {"f_xa", "v_3x"} <= have and hasattr(p, "P_max"):
        df["throttle"] = _throttle(df, p)
    if "f_xb" in have and hasattr(p, "mu_x0"):
        brake, harvest = _brake(df, p)
        if brake is not None:
            df["brake"] = brake
        if harvest is not None:
            df["harvest"] = harvest
    ratio = getattr(p, "steering_ratio", None)
    if ratio is not None and "delta" in have:
        df["steering_wheel_angle"] = np.degrees(df["delta"].to_numpy(float) * ratio)
    if "v_3x" in have:
        geared = gear_and_engine_speed(p, df["v_3x"].to_numpy(float))
        if geared is not None:
            df["gear"] = geared[0]
            df["engine_speed"] = geared[1] * 30.0 / math.pi
    if "omega_3z" in have:
        df["yaw_rate"] = np.degrees(df["omega_3z"].to_numpy(float))
    g = getattr(p, "gravity", None)
    for axis in "xyz" if g else ():
        if f"a_{axis}" in have:
            df[f"a_{axis}_g"] = df[f"a_{axis}"].to_numpy(float) / g
    return df
