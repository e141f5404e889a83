"""The columns of the channel table at any points of the sector: the record's numbers made
columns (:func:`pyomo_lap.ocp.record_model.record_dataframe`) and the columns derived from them
(:func:`add_derived_channels`: a hybrid's powers, the logger channels, the energies' powers,
the controls' rates). The mesh rows of a solved model
(:func:`pyomo_lap.results.table.trajectory_dataframe`) and the rows on a fixed distance step
(:mod:`pyomo_lap.results.fixed_step`) are both made by these, so a channel is computed the same
way on either.

Layer: results (imports numpy, pandas, the logger channels and the ocp layer's energies).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..ocp.integrals import energy_channels
from ..ocp.record_model import SPINE_RELATIVE, record_columns, record_dataframe  # noqa: F401
from .logger import add_logger_channels

__all__ = ["SPINE_RELATIVE", "record_columns", "record_dataframe", "add_derived_channels",
           "tangential_acceleration"]








def add_derived_channels(df: pd.DataFrame, car, hybrid: dict = None, slopes: dict = None) -> None:
    r"""Columns derived from others, in place (the mesh rows and the rows on a fixed step are
    made by it): a hybrid's ``power_deploy``, ``power_harvest``, ``soc_energy`` (``hybrid``,
    :data:`pyomo_lap.ocp.hybrid.HYBRID_CHANNELS`), the tangential acceleration ``a_t`` of O3
    (along its velocity, :func:`tangential_acceleration`), the logger channels
    (:func:`pyomo_lap.results.logger.add_logger_channels`: throttle, brake, harvest,
    steering-wheel angle, gear, engine speed, yaw rate, accelerations in g), the energies'
    powers (:func:`pyomo_lap.ocp.integrals.energy_channels`) and, for each control with a
    derivative in ``slopes`` (``control_form = "state"``), its time rate ``<control>_rate``
    :math:`= \dot q_1\, du/dq_1` [rad/s, N/s]. ``car`` is the car as solved."""
    for name, values in (hybrid or {}).items():     # the logger's brake and harvest read them
        df[name] = values if len(values) == len(df) else np.nan
    if all(c in df.columns for c in ("v_3x", "v_3y", "a_x", "a_y")):
        df["a_t"] = tangential_acceleration(df)
    add_logger_channels(df, car)
    new = dict(energy_channels(df, car))
    if "q1_dot" in df.columns:
        for c, slope in (slopes or {}).items():
            new[f"{c}_rate"] = slope * df["q1_dot"].to_numpy(float)
    if new:     # one block of columns, not one insert each (a fragmented frame is slow)
        df[list(new)] = pd.DataFrame(new, index=df.index)


def tangential_acceleration(df) -> np.ndarray:
    """Acceleration of O3 along its velocity [m/s^2], :math:`(v_{3x} a_x + v_{3y} a_y)/|v|`
    (``a_x``, ``a_y``: the acceleration of O3 in {B3} without gravity)."""
    vx, vy = df["v_3x"].to_numpy(float), df["v_3y"].to_numpy(float)
    ax, ay = df["a_x"].to_numpy(float), df["a_y"].to_numpy(float)
    return (vx * ax + vy * ay) / np.maximum(np.hypot(vx, vy), 1e-9)
