"""Results of a solved model: a pandas DataFrame of channels and the export to
``trajectory.csv``, ``results.xlsx`` and ``summary.json``.

Channels are recomputed with floats from the solved variables through the same model code
(:func:`pyomo_lap.vehicle.car_equations`), never by ``pyomo.value`` of the nested named
expressions (which Pyomo would evaluate without sharing them).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from . import lie
from . import vehicle as veh
from .ocp import RATE_NAMES, STATE_NAMES

__all__ = ["trajectory_dataframe", "UNITS", "write_results", "read_trajectory", "check_output_dir"]

UNITS = {
    "s": "m", "s_sector": "m", "t": "s", "q1": "m", "q2": "m", "q3": "rad", "q4": "m",
    "q5": "rad", "q6": "rad", "q1_dot": "m/s", "q2_dot": "m/s", "q3_dot": "rad/s",
    "q4_dot": "m/s", "q5_dot": "rad/s", "q6_dot": "rad/s",
    "q1_ddot": "m/s^2", "q2_ddot": "m/s^2", "q3_ddot": "rad/s^2", "q4_ddot": "m/s^2",
    "q5_ddot": "rad/s^2", "q6_ddot": "rad/s^2",
    "f_xa": "N", "f_xb": "N", "delta": "rad",
    "f_11z": "N", "f_12z": "N", "f_21z": "N", "f_22z": "N", "f_3x": "N", "f_3y": "N", "m_3z": "N m",
    "v_3x": "m/s", "v_3y": "m/s", "omega_3z": "rad/s", "speed": "m/s", "speed_kmh": "km/h",
    "a_x": "m/s^2", "a_y": "m/s^2", "a_z": "m/s^2",
    "alpha_1": "rad", "alpha_2": "rad",
    "f_11x": "N", "f_12x": "N", "f_21x": "N", "f_22x": "N",
    "f_11y": "N", "f_12y": "N", "f_21y": "N", "f_22y": "N",
    "f_3z": "N", "m_3x": "N m", "m_3y": "N m", "f_drag": "N", "f_down": "N", "power": "W",
    "x_vip": "m", "y_vip": "m", "z_vip": "m", "x_spine": "m", "y_spine": "m", "z_spine": "m",
    "width_left": "m", "width_right": "m", "Omega_x": "1/m", "Omega_y": "1/m", "Omega_z": "1/m",
    "load_residual_max": "N", "element": "-",
}
"""Unit of every channel of :func:`trajectory_dataframe`."""


def trajectory_dataframe(m) -> pd.DataFrame:
    """One row per collocation point of a solved model.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        From :func:`pyomo_lap.ocp.build_model`, with a solution loaded.

    Returns
    -------
    pandas.DataFrame
        Columns listed in :data:`UNITS`: track coordinate ``s`` (and ``s_sector`` from the
        sector start), time, ``q1..q6`` and rates, joint accelerations, controls, the seven
        algebraic variables, speeds, accelerations of O3 in {B3} without gravity (``a_x``,
        ``a_y``, ``a_z``), slip angles, tyre forces, W3J, aero forces, power, the global
        position of the vehicle invariant point and of the spine, track data.
    """
    if m.options.model == "single-track":
        from .single_track import trajectory_dataframe as single_track_dataframe
        return single_track_dataframe(m)
    p = m.vehicle
    tp = m.track_points
    chain, joints = m.chain, m.track_joints
    sigma = sorted(m.s)
    elems = list(m.s.get_finite_elements())
    rows = []
    for i, s in enumerate(sigma):
        val = {n: float(pyo.value(m.component(n)[s])) for n in
               STATE_NAMES + RATE_NAMES + ("t",) + veh.CONTROLS + veh.ALGEBRAIC}
        q = [0.0] + [val[n] for n in STATE_NAMES]
        qd = [val[n] for n in RATE_NAMES]
        u = [val[n] for n in veh.CONTROLS]
        z = [val[n] for n in veh.ALGEBRAIC]
        e = veh.car_equations(p, chain, joints[i], q, qd, u, z)
        ch = {k: float(v) for k, v in e.channels.items()}
        # acceleration of O3 without gravity: vdot + w x v - R03^T g
        V3 = [float(x) for x in e.kin.V[3]]
        Vd3 = [float(x) for x in e.aba.Vdot[3]]
        wxv = lie.cross(V3[3:], V3[:3])
        R03 = np.array(e.kin.posture(0, 3)[0], dtype=float)
        g3 = R03.T @ np.array([0.0, 0.0, p.gravity])
        acc = [Vd3[k] + float(wxv[k]) - g3[k] for k in range(3)]
        g06 = e.kin.posture(0, 6)
        row = {"s": float(tp.s[i]), "s_sector": float(s), "q1": float(tp.s[i])}
        row.update(val)
        row.update({f"q{k + 1}_ddot": float(e.qdd[k]) for k in range(6)})
        row.update(ch)
        row["speed"] = math.hypot(ch["v_3x"], ch["v_3y"])
        row["speed_kmh"] = 3.6 * row["speed"]
        row["a_x"], row["a_y"], row["a_z"] = acc
        row["x_vip"], row["y_vip"], row["z_vip"] = (float(x) for x in g06[1])
        row["x_spine"], row["y_spine"], row["z_spine"] = (float(x) for x in tp.position[i])
        row["width_left"], row["width_right"] = float(tp.width_left[i]), float(tp.width_right[i])
        row["Omega_x"], row["Omega_y"], row["Omega_z"] = (float(x) for x in tp.omega[i])
        row["load_residual_max"] = max(abs(float(r)) for r in e.load_residuals)
        row["element"] = int(np.searchsorted(elems, s, side="left"))
        rows.append(row)
    df = pd.DataFrame(rows)
    cols = [c for c in UNITS if c in df.columns] + [c for c in df.columns if c not in UNITS]
    return df[cols]


def _with_units(df: pd.DataFrame) -> pd.DataFrame:
    return df.rename(columns={c: f"{c} [{UNITS[c]}]" for c in df.columns if c in UNITS})


def read_trajectory(path) -> pd.DataFrame:
    """Read a ``trajectory.csv`` back, with plain column names (units stripped)."""
    df = pd.read_csv(path)
    return df.rename(columns={c: c.split(" [")[0] for c in df.columns})


def _is_replaceable(folder: Path) -> bool:
    """A folder may be replaced only if it is empty or holds earlier pyomo_lap results."""
    if not folder.exists():
        return True
    if not folder.is_dir():
        return False
    entries = list(folder.iterdir())
    if not entries:
        return True
    summary = folder / "summary.json"
    if not summary.exists():
        return False
    try:
        return "pyomo_lap_version" in json.loads(summary.read_text())
    except (OSError, ValueError):
        return False


def check_output_dir(out_dir) -> Path:
    """Check before any work that results can be written to ``out_dir``.

    Raises
    ------
    ValueError
        ``out_dir`` (or ``<out_dir>.failed``) has no name (``.``, ``/``), or exists and
        holds files that are not pyomo_lap results (they are never deleted).
    OSError
        Its parent folder cannot be created or written (the message names it).
    """
    out_dir = Path(out_dir).expanduser().resolve()
    if not out_dir.name:
        raise ValueError(f"output folder {str(out_dir)!r} has no name; give a folder such as 'results'")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"output folder {str(out_dir)!r} is a file; choose another --out "
                         "(nothing was touched)")
    if out_dir.exists() and not _is_replaceable(out_dir):
        raise ValueError(f"output folder {str(out_dir)!r} exists and holds files that are not "
                         "pyomo_lap results; choose another --out (nothing was touched)")
    failed = out_dir.with_name(out_dir.name + ".failed")
    if failed.exists() and not _is_replaceable(failed):
        raise ValueError(f"{str(failed)!r} (where a failed run keeps its partial results) exists "
                         "and holds files that are not pyomo_lap results; move it or choose "
                         "another --out (nothing was touched)")
    parent = out_dir.parent
    blocker = next((a for a in [parent, *parent.parents] if a.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ValueError(f"cannot write results to {str(out_dir)!r}: {str(blocker)!r} is a file, "
                         "not a folder; choose another --out (nothing was touched)")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.probe-", dir=parent))
        probe.rmdir()
    except OSError as exc:
        raise OSError(f"cannot write results next to {str(out_dir)!r}: {exc.strerror or exc}") from None
    return out_dir


def write_results(out_dir, df: pd.DataFrame, summary: dict, vehicle_params: dict | None = None,
                  partial: bool = False) -> Path:
    """Write ``trajectory.csv``, ``results.xlsx`` and ``summary.json`` atomically.

    The files are written into a temporary folder next to ``out_dir`` and moved into place
    only when complete; an existing ``out_dir`` is replaced only then, and only if it is empty
    or holds earlier pyomo_lap results (anything else is refused, never deleted). With
    ``partial=True`` (a failed solve) nothing existing is touched: the files go to
    ``<out_dir>.failed`` and the summary says ``"partial": true``.

    Parameters
    ----------
    out_dir : str or Path
    df : DataFrame
        From :func:`trajectory_dataframe`.
    summary : dict
        JSON-serialisable summary.
    vehicle_params : dict, optional
        Written as a sheet of the workbook.
    partial : bool

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    ValueError
        The destination exists and is not a pyomo_lap results folder.
    OSError
        The destination cannot be written (the message names it).
    """
    out_dir = check_output_dir(out_dir)
    target = out_dir.with_name(out_dir.name + ".failed") if partial else out_dir
    if target.exists() and not _is_replaceable(target):
        raise ValueError(f"{str(target)!r} exists and holds files that are not pyomo_lap results; "
                         "nothing was written")
    parent = target.parent
    summary = dict(summary, partial=bool(partial))
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=parent))
    try:
        os.chmod(tmp, 0o755)
        _with_units(df).to_csv(tmp / "trajectory.csv", index=False, float_format="%.10g")
        with open(tmp / "summary.json", "w") as fh:
            json.dump(summary, fh, indent=2, default=_json_default)
        with pd.ExcelWriter(tmp / "results.xlsx", engine="openpyxl") as xw:
            pd.DataFrame({"quantity": list(summary), "value": [_cell(v) for v in summary.values()]}
                         ).to_excel(xw, sheet_name="summary", index=False)
            _with_units(df).to_excel(xw, sheet_name="channels", index=False)
            if vehicle_params:
                pd.DataFrame({"parameter": list(vehicle_params),
                              "value": [_cell(v) for v in vehicle_params.values()]}
                             ).to_excel(xw, sheet_name="vehicle", index=False)
        old = parent / f".{target.name}.old-{os.getpid()}"
        try:
            if target.exists():
                os.replace(target, old)
            os.replace(tmp, target)
        except BaseException:   # an error or Ctrl-C between the two moves
            if old.exists() and not target.exists():
                os.replace(old, target)   # put the earlier results back
            raise
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _cell(v):
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=_json_default)
    return v


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    return str(o)
