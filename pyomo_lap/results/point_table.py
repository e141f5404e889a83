"""The columns of the channel table at any points of the sector: the record's numbers made
columns (:func:`record_dataframe`) and the columns derived from them
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
from .logger import add_logger_channels

__all__ = ["SPINE_RELATIVE", "record_columns", "record_dataframe", "add_derived_channels",
           "tangential_acceleration"]


SPINE_RELATIVE = {"dx_vip": "x_vip", "dy_vip": "y_vip", "dz_vip": "z_vip"}
"""Channels of a record given relative to the track's spine point (the record's track inputs
hold no position), and the column of :func:`trajectory_dataframe` each becomes (the spine's
position added)."""


def record_columns(rec) -> tuple:
    """The columns of :func:`trajectory_dataframe` that a record's channel group gives
    (:attr:`pyomo_lap.ocp.point_rows.PointRows.channels`): one per channel, named as the
    channel (:data:`SPINE_RELATIVE` renamed). Each needs an entry in the channel dictionary
    (:data:`pyomo_lap.results.channels.CHANNELS`)."""
    return tuple(SPINE_RELATIVE.get(k, k) for k in rec.channel_names)


def record_dataframe(numbers: dict, tp, s_sector, breaks) -> pd.DataFrame:
    r"""The record's columns of :func:`trajectory_dataframe` at any points: the numbers of
    :func:`pyomo_lap.ocp.point_functions.record_numbers` there (the variables, the joint
    accelerations, the channel group, ``load_residual_max``), with ``speed``, ``speed_kmh``,
    the global positions (:data:`SPINE_RELATIVE` plus the spine), the track's widths and
    :math:`\Omega` (``tp``, a :class:`~pyomo_lap.track.points.TrackPoints` of the points),
    ``s``, ``q1`` (``tp.s``), ``s_sector`` and ``element`` (from ``breaks``) [SI]. The mesh
    rows and the rows on a fixed step (:mod:`pyomo_lap.results.fixed_step`) are made by it."""
    ch = dict(numbers["channels"])
    s_track = np.asarray(tp.s, dtype=float)
    sigma = np.asarray(s_sector, dtype=float)
    cols = {"s": s_track.copy(), "s_sector": sigma, "q1": s_track.copy()}
    cols.update(numbers["values"])
    cols.update(numbers["qdd"])
    position = np.asarray(tp.position, dtype=float)
    relative = {name: ch.pop(key) for key, name in SPINE_RELATIVE.items() if key in ch}
    acc = {k: ch.pop(k) for k in ("a_x", "a_y", "a_z") if k in ch}
    cols.update(ch)
    if "v_3x" in ch and "v_3y" in ch:
        cols["speed"] = np.hypot(ch["v_3x"], ch["v_3y"])
        cols["speed_kmh"] = 3.6 * cols["speed"]
    cols.update(acc)
    cols.update({name: position[:, "xyz".index(name[0])] + x for name, x in relative.items()})
    cols["x_spine"], cols["y_spine"], cols["z_spine"] = (position[:, k] for k in range(3))
    cols["width_left"] = np.asarray(tp.width_left, dtype=float)
    cols["width_right"] = np.asarray(tp.width_right, dtype=float)
    omega = np.asarray(tp.omega, dtype=float)
    cols["Omega_x"], cols["Omega_y"], cols["Omega_z"] = (omega[:, k] for k in range(3))
    if numbers["load_residual_max"] is not None:
        cols["load_residual_max"] = numbers["load_residual_max"]
    cols["element"] = np.searchsorted(np.asarray(breaks, dtype=float), sigma,
                                      side="left").astype(np.int64)
    return pd.DataFrame(cols)


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
