"""Results of a solved model: a pandas DataFrame of channels and the export to
``trajectory.csv``, ``trajectory.parquet``, ``results.xlsx`` (sheets ``summary``, ``channels``,
``sectors``, ``vehicle``, ``track``) and ``summary.json``.

Channels are recomputed from the solved variables through the same model code
(:func:`pyomo_lap.vehicle.car.car_equations`), never by ``pyomo.value`` of the nested named
expressions (which Pyomo would evaluate without sharing them): the model code is recorded once
per car on a :class:`pyomo_lap.spatial.tape.Tape` and the tape is evaluated with NumPy over all the
points at once (:meth:`pyomo_lap.spatial.tape.Tape.evaluate`).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ..spatial import lie
from ..vehicle import car as veh
from ..ocp.build import RATE_NAMES, STATE_NAMES

__all__ = ["trajectory_dataframe", "UNITS", "write_results", "read_trajectory", "check_output_dir",
           "sector_times", "TRACK_COLUMNS", "read_summary", "read_parquet_units",
           "sensitivity_sheet", "read_sensitivities", "SENSITIVITY_HEADERS",
           "solution_arrays", "load_solution", "SOLUTION_FILE"]

SOLUTION_FILE = "solution.npz"
"""The file of a results folder that holds the values of every variable of the solved model
(:func:`solution_arrays`), to start another solve of the same job from
(:func:`load_solution`, the job option ``warm_start_from``)."""

UNITS = {
    "s": "m", "s_sector": "m", "t": "s", "q1": "m", "q2": "m", "q3": "rad", "q4": "m",
    "q5": "rad", "q6": "rad", "q1_dot": "m/s", "q2_dot": "m/s", "q3_dot": "rad/s",
    "q4_dot": "m/s", "q5_dot": "rad/s", "q6_dot": "rad/s",
    "q1_ddot": "m/s^2", "q2_ddot": "m/s^2", "q3_ddot": "rad/s^2", "q4_ddot": "m/s^2",
    "q5_ddot": "rad/s^2", "q6_ddot": "rad/s^2",
    "f_xa": "N", "f_xb": "N", "delta": "rad",
    "f_11z": "N", "f_12z": "N", "f_21z": "N", "f_22z": "N", "f_3x": "N", "f_3y": "N", "m_3z": "N m",
    "v_3x": "m/s", "v_3y": "m/s", "omega_3z": "rad/s", "speed": "m/s", "speed_kmh": "km/h",
    "a_x": "m/s^2", "a_y": "m/s^2", "a_z": "m/s^2", "a_t": "m/s^2",
    "delta_rate": "rad/s", "f_xa_rate": "N/s", "f_xb_rate": "N/s",
    "alpha_1": "rad", "alpha_2": "rad",
    "f_11x": "N", "f_12x": "N", "f_21x": "N", "f_22x": "N",
    "f_11y": "N", "f_12y": "N", "f_21y": "N", "f_22y": "N",
    "f_3z": "N", "m_3x": "N m", "m_3y": "N m", "f_drag": "N", "f_down": "N", "power": "W",
    "x_vip": "m", "y_vip": "m", "z_vip": "m", "x_spine": "m", "y_spine": "m", "z_spine": "m",
    "width_left": "m", "width_right": "m", "Omega_x": "1/m", "Omega_y": "1/m", "Omega_z": "1/m",
    "load_residual_max": "N", "element": "-",
    "v_point_mass": "m/s", "t_point_mass": "s",
    # the multibody car (pyomo_lap.ocp.multibody): carrier travels, wheel-centre heights,
    # suspension joint forces, Magic Formula peak and angle
    **{f"z{w}{k}": u for w in ("11", "12", "21", "22")
       for k, u in (("", "m"), ("_dot", "m/s"), ("_ddot", "m/s^2"))},
    **{f"{c}_{w}": u for w in ("11", "12", "21", "22")
       for c, u in (("zc", "m"), ("spring", "N"), ("jack", "N"), ("D", "N"), ("theta", "rad"))},
}
"""Unit of every channel of :func:`trajectory_dataframe`."""


_VALUE_NAMES = STATE_NAMES + RATE_NAMES + ("t",) + veh.CONTROLS + veh.ALGEBRAIC
"""Model variables read at every point by :func:`trajectory_dataframe` (in column order)."""

_CHANNEL_TAPES: dict = {}
"""``(vehicle parameters, repr(chain), general) -> _ChannelTape``: the recorded channels of a
car (a few entries; no model is referenced)."""
_CHANNEL_TAPES_MAX = 8


class _ChannelTape:
    """The numbers of one row of :func:`trajectory_dataframe` recorded once on a
    :class:`pyomo_lap.spatial.tape.Tape` (see :func:`_channel_tape`).

    Attributes
    ----------
    tape : pyomo_lap.spatial.tape.Tape
        Holding only the nodes the outputs need (uses counted).
    outputs : list
        Tape nodes or constants.
    slots : dict
        ``name -> slice`` of :attr:`outputs`: ``channels`` (in the order of
        :attr:`channel_names`), ``qdd`` (6), ``acc`` (3), ``vip`` (3), ``load_residuals``.
    channel_names : list of str
        Keys of ``CarEquations.channels``, in their order.
    general : bool
        The track joint's ``J[0:3]`` and ``dJ[0:3]`` are inputs (otherwise the constants
        ``[1, 0, 0]`` and ``[0, 0, 0]`` of a track parametrised by arc length).
    """

    def __init__(self, tape, outputs, slots, channel_names, general):
        self.tape, self.outputs, self.slots = tape, outputs, slots
        self.channel_names, self.general = channel_names, general


def _channel_tape(p, chain, general: bool = False) -> _ChannelTape:
    """Record :func:`pyomo_lap.vehicle.car.car_equations` once on tape symbols and return the
    numbers of a row of :func:`trajectory_dataframe` (cached per car).

    Inputs of the tape: ``x[k]`` the point's variables (:data:`_VALUE_NAMES` minus ``t``),
    ``R[k]`` (row by row), ``Om[k]``, ``dOm[k]``, ``p[k]`` and, when ``general``, ``J[k]``
    and ``dJ[k]`` (k = 0..2) of the track joint.
    """
    from ..spatial import tape as tape_mod
    from ..spatial.backend import add, mul, sub
    from ..spatial.chain import TrackJoint

    try:
        key = (p, repr(chain), bool(general))
        hash(key)
    except TypeError:       # unhashable parameters: record every time
        key = None
    hit = _CHANNEL_TAPES.get(key) if key is not None else None
    if hit is not None:
        return hit

    names = STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC
    sizes = {"x": len(names), "R": 9, "Om": 3, "dOm": 3, "p": 3}
    if general:
        sizes.update({"J": 3, "dJ": 3})
    info = {}

    def fn(namer, x):
        v = dict(zip(names, x["x"]))
        R = x["R"]
        J = list(x["J"]) if general else [1.0, 0, 0]
        dJ = list(x["dJ"]) if general else [0, 0, 0]
        tj = TrackJoint(R=[R[0:3], R[3:6], R[6:9]], J=J + list(x["Om"]),
                        dJ=dJ + list(x["dOm"]), p=list(x["p"]))
        q = [0.0] + [v[k] for k in STATE_NAMES]
        qd = [v[k] for k in RATE_NAMES]
        u = [v[k] for k in veh.CONTROLS]
        z = [v[k] for k in veh.ALGEBRAIC]
        e = veh.car_equations(p, chain, tj, q, qd, u, z)
        # acceleration of O3 without gravity: vdot + w x v - R03^T g (g = [0, 0, gravity])
        V3, Vd3 = e.kin.V[3], e.aba.Vdot[3]
        wxv = lie.cross(V3[3:], V3[:3])
        R03 = e.kin.posture(0, 3)[0]
        acc = [sub(add(Vd3[k], wxv[k]), mul(R03[2][k], p.gravity)) for k in range(3)]
        info["channel_names"] = list(e.channels)
        groups = {"channels": list(e.channels.values()), "qdd": list(e.qdd[:6]), "acc": acc,
                  "vip": list(e.kin.posture(0, 6)[1]), "load_residuals": list(e.load_residuals)}
        return groups

    tape, groups = tape_mod.record(fn, sizes)
    outputs, slots = [], {}
    for g, values in groups.items():
        slots[g] = slice(len(outputs), len(outputs) + len(values))
        outputs.extend(values)
    tape.count_uses(outputs)
    # keep only the live nodes (Tape.evaluate evaluates every node of the tape)
    tape, outputs, _ = tape_mod.specialize(tape, outputs, {})
    out = _ChannelTape(tape, outputs, slots, info["channel_names"], general)
    if key is not None:
        if len(_CHANNEL_TAPES) >= _CHANNEL_TAPES_MAX:
            _CHANNEL_TAPES.pop(next(iter(_CHANNEL_TAPES)))
        _CHANNEL_TAPES[key] = out
    return out


def _point_values(m, name: str, sigma: list) -> np.ndarray:
    """Values of ``m.<name>[s]`` at every ``s`` of ``sigma`` (float array)."""
    comp = m.component(name)
    if comp is None:
        raise AttributeError(f"the model has no component {name!r}")
    if comp.ctype is pyo.Var:
        data = [comp[s] for s in sigma]
        vals = [d.value for d in data]
        for d, x in zip(data, vals):
            if x is None:
                # the message of pyomo.value for a variable without a value
                pyo.value(d)
        return np.array(vals, dtype=float)
    return np.array([float(pyo.value(comp[s])) for s in sigma], dtype=float)


def _full_dataframe(m, progress=None) -> pd.DataFrame:
    """:func:`trajectory_dataframe` of the full model, all points at once (NumPy over the tape
    of :func:`_channel_tape`)."""
    p = m.problem.vehicle
    tp = m.problem.track_points
    joints = m.problem.track_joints
    sigma = sorted(m.s)
    n = len(sigma)
    if progress is not None:
        progress("evaluating the channels", 0, n)
    elems = list(m.s.get_finite_elements())
    val = {name: _point_values(m, name, sigma) for name in _VALUE_NAMES}
    R = np.array([j.R for j in joints], dtype=float).reshape(n, 9)
    J = np.array([j.J for j in joints], dtype=float).reshape(n, 6)
    dJ = np.array([j.dJ for j in joints], dtype=float).reshape(n, 6)
    pos = np.array([j.p for j in joints], dtype=float).reshape(n, 3)
    general = not (np.all(J[:, :3] == [1.0, 0.0, 0.0]) and np.all(dJ[:, :3] == 0.0))
    ct = _channel_tape(p, m.problem.chain, general)
    inputs = {}
    for k, name in enumerate(STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC):
        inputs[f"x[{k}]"] = val[name]
    for k in range(9):
        inputs[f"R[{k}]"] = R[:, k]
    for k in range(3):
        inputs[f"Om[{k}]"] = J[:, 3 + k]
        inputs[f"dOm[{k}]"] = dJ[:, 3 + k]
        inputs[f"p[{k}]"] = pos[:, k]
        if general:
            inputs[f"J[{k}]"] = J[:, k]
            inputs[f"dJ[{k}]"] = dJ[:, k]
    raw = ct.tape.evaluate(inputs, ct.outputs)
    # constants (structural zeros ...) broadcast to a column
    out = [np.array(np.broadcast_to(np.asarray(x, dtype=float), (n,))) for x in raw]

    def group(g):
        return out[ct.slots[g]]

    s_track = np.asarray(tp.s, dtype=float)
    cols = {"s": s_track.copy(), "s_sector": np.asarray(sigma, dtype=float), "q1": s_track.copy()}
    cols.update(val)
    cols.update({f"q{k + 1}_ddot": x for k, x in enumerate(group("qdd"))})
    ch = dict(zip(ct.channel_names, group("channels")))
    cols.update(ch)
    cols["speed"] = np.hypot(ch["v_3x"], ch["v_3y"])
    cols["speed_kmh"] = 3.6 * cols["speed"]
    cols["a_x"], cols["a_y"], cols["a_z"] = group("acc")
    cols["x_vip"], cols["y_vip"], cols["z_vip"] = group("vip")
    position = np.asarray(tp.position, dtype=float)
    cols["x_spine"], cols["y_spine"], cols["z_spine"] = (position[:, k] for k in range(3))
    cols["width_left"] = np.asarray(tp.width_left, dtype=float)
    cols["width_right"] = np.asarray(tp.width_right, dtype=float)
    omega = np.asarray(tp.omega, dtype=float)
    cols["Omega_x"], cols["Omega_y"], cols["Omega_z"] = (omega[:, k] for k in range(3))
    res = group("load_residuals")
    cols["load_residual_max"] = np.max(np.abs(np.vstack(res)), axis=0)
    cols["element"] = np.searchsorted(np.asarray(elems, dtype=float), np.asarray(sigma, dtype=float),
                                      side="left").astype(np.int64)
    if progress is not None:
        progress("evaluating the channels", n, n)
    return pd.DataFrame(cols)


def trajectory_dataframe(m, progress=None) -> pd.DataFrame:
    """One row per collocation point of a solved model.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        From :func:`pyomo_lap.ocp.build.build_model`, with a solution loaded.
    progress : callable, optional
        ``progress(label, done, total)``, called before (``done = 0``) and after the
        evaluation of all points at once (see :mod:`pyomo_lap.util.progress`).

    Returns
    -------
    pandas.DataFrame
        Columns listed in :data:`UNITS`: track coordinate ``s`` (and ``s_sector`` from the
        sector start), time, ``q1..q6`` and rates, joint accelerations, controls, the seven
        algebraic variables, speeds, accelerations of O3 in {B3} without gravity (``a_x``,
        ``a_y``, ``a_z``), slip angles, tyre forces, W3J, aero forces, power, the global
        position of the vehicle invariant point and of the spine, track data, and the
        quasi-steady point-mass estimate of the initial guess (``v_point_mass``,
        ``t_point_mass``, :func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`) as a reference
        for time-delta plots.
    """
    vm = getattr(getattr(m, "problem", None), "vehicle_model", None)
    if vm is not None and vm.trajectory is not None:   # the model's own table (single-track)
        return vm.trajectory(m)
    from ..util.gc_pause import gc_paused
    from ..vehicle.speed_profile import quasi_steady_speed
    # the collector's full passes walk every object of the model (~1.3 s per pass for 600
    # points), and recording the tape allocates enough to trigger one
    with gc_paused():
        df = _full_dataframe(m, progress)
        p = m.problem.vehicle
        tp = m.problem.track_points
        sigma = sorted(m.s)
        sig = np.asarray(sigma, dtype=float)
        v_pm = quasi_steady_speed(p, sig, tp.omega, tp.rotation, closed=bool(m.problem.options.periodic),
                                  v_start=m.problem.initial_speed, v_min=m.problem.options.v_min)
    _add_derived_channels(m, df)
    df["v_point_mass"] = v_pm
    df["t_point_mass"] = np.concatenate([[0.0], np.cumsum(0.5 * (1 / v_pm[1:] + 1 / v_pm[:-1]) * np.diff(sig))])
    cols = [c for c in UNITS if c in df.columns] + [c for c in df.columns if c not in UNITS]
    return df[cols]


def _add_derived_channels(m, df: pd.DataFrame) -> None:
    r"""Columns derived from others: the tangential acceleration ``a_t`` of O3 (along its
    velocity, :func:`pyomo_lap.post.quality.tangential_acceleration`) and, when the controls
    are states (``control_form = "state"``), their time rates ``<control>_rate``
    :math:`= \dot q_1\, du/dq_1` [rad/s, N/s]."""
    from .quality import tangential_acceleration
    if all(c in df.columns for c in ("v_3x", "v_3y", "a_x", "a_y")):
        df["a_t"] = tangential_acceleration(df)
    sigma = sorted(m.s)
    for c in ("delta", "f_xa", "f_xb"):
        dv = m.component(f"d{c}_ds")
        if dv is None or "q1_dot" not in df.columns:
            continue
        rate = np.array([dv[x].value if dv[x].value is not None else np.nan for x in sigma], dtype=float)
        # the derivative at s = 0 is not collocated: the control's rate there is its value
        # at the first collocation point
        if len(rate) > 1:
            rate[0] = rate[1]
        df[f"{c}_rate"] = rate * df["q1_dot"].to_numpy(float)


TRACK_COLUMNS = ("s", "x_spine", "y_spine", "z_spine", "width_left", "width_right",
                 "Omega_x", "Omega_y", "Omega_z")
"""Channels that describe the track itself (sheet ``track`` of ``results.xlsx``)."""


def sector_times(df: pd.DataFrame, n_sectors: int = 3) -> pd.DataFrame:
    """Split the sector into ``n_sectors`` parts of equal length and time each one.

    The time at each boundary is interpolated linearly in ``s`` between the collocation
    points (the time state ``t`` is continuous).

    Parameters
    ----------
    df : DataFrame
        From :func:`trajectory_dataframe` (columns ``s``, ``s_sector``, ``t``).
    n_sectors : int
        Number of sectors (>= 1).

    Returns
    -------
    DataFrame
        One row per sector: ``sector``, ``s_start [m]``, ``s_end [m]`` (track coordinate),
        ``length [m]``, ``t_start [s]``, ``time [s]``, ``mean_speed [km/h]``.

    Raises
    ------
    ValueError
        ``n_sectors`` < 1.
    """
    if int(n_sectors) != n_sectors or n_sectors < 1:
        raise ValueError(f"n_sectors = {n_sectors!r}: expected an integer >= 1")
    s = df["s_sector"].to_numpy(dtype=float)
    t = df["t"].to_numpy(dtype=float)
    edges = np.linspace(s[0], s[-1], int(n_sectors) + 1)
    t_edges = np.interp(edges, s, t)
    s0 = float(df["s"].iloc[0]) - float(s[0])
    rows = []
    for k in range(int(n_sectors)):
        length = edges[k + 1] - edges[k]
        dt = t_edges[k + 1] - t_edges[k]
        rows.append({"sector": k + 1, "s_start [m]": s0 + edges[k], "s_end [m]": s0 + edges[k + 1],
                     "length [m]": length, "t_start [s]": t_edges[k], "time [s]": dt,
                     "mean_speed [km/h]": 3.6 * length / dt if dt > 0 else float("nan")})
    return pd.DataFrame(rows)


def sector_records(sectors: pd.DataFrame) -> list:
    """:func:`sector_times` as a JSON-ready list of dicts (``sector``, ``s_start_m``,
    ``s_end_m``, ``time_s``)."""
    return [{"sector": int(r["sector"]), "s_start_m": float(r["s_start [m]"]),
             "s_end_m": float(r["s_end [m]"]), "time_s": float(r["time [s]"])}
            for _, r in sectors.iterrows()]


def _with_units(df: pd.DataFrame) -> pd.DataFrame:
    return df.rename(columns={c: f"{c} [{UNITS[c]}]" for c in df.columns if c in UNITS})


def read_trajectory(path) -> pd.DataFrame:
    """Read the channels back, with plain column names (units stripped).

    Parameters
    ----------
    path : str or Path
        A ``trajectory.csv``, a ``trajectory.parquet`` or a results folder (its parquet file
        if present, else its CSV file).

    Raises
    ------
    FileNotFoundError
        No such file, or a folder without a trajectory file.
    """
    path = Path(path)
    if path.is_dir():
        for name in ("trajectory.parquet", "trajectory.csv"):
            if (path / name).exists():
                path = path / name
                break
        else:
            raise FileNotFoundError(f"{str(path)!r} holds no trajectory.parquet or trajectory.csv: "
                                    "is it a pyomo_lap results folder?")
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return df.rename(columns={c: c.split(" [")[0] for c in df.columns})


def read_summary(path) -> dict:
    """The ``summary.json`` of a results folder (``path`` is the folder or the file).

    Raises
    ------
    FileNotFoundError
        No summary.json there.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.exists():
        raise FileNotFoundError(f"no summary.json at {str(path)!r}: is it a pyomo_lap results folder?")
    return json.loads(path.read_text())


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


def solution_arrays(m) -> dict:
    """The values of every variable of a model, for :data:`SOLUTION_FILE`.

    Returns
    -------
    dict
        ``"s"``: the mesh points [m] (ndarray (n,)); for every ``Var`` component, its values
        in index order (ndarray; NaN where a variable has no value).
    """
    import pyomo.environ as pyo
    out = {"s": np.array(list(m.s), dtype=float)}
    for comp in m.component_objects(pyo.Var, descend_into=True):
        vals = [vd.value for vd in comp.values()]
        out[f"var:{comp.name}"] = np.array([np.nan if v is None else v for v in vals], dtype=float)
    return out


def load_solution(m, path) -> int:
    """Set the variables of a model from a :data:`SOLUTION_FILE` (or the results folder that
    holds it) of a solve of the same job (same track, sector and mesh; the car may differ):
    the initial point of a warm start.

    Every variable component of the model found in the file with the same number of entries
    gets the file's values, clipped into its bounds; fixed variables and missing values are
    left as they are.

    Returns
    -------
    int
        The number of variables set.

    Raises
    ------
    ValueError
        No such file, or the file's mesh differs from the model's (another track, sector or
        mesh: the message gives both).
    """
    import pyomo.environ as pyo
    path = Path(path)
    f = path / SOLUTION_FILE if path.is_dir() else path
    if not f.is_file():
        raise ValueError(f"warm start: {str(f)!r} does not exist (a results folder written by "
                         f"this version of pyomo_lap holds {SOLUTION_FILE})")
    with np.load(f) as d:
        data = {k: d[k] for k in d.files}
    s = np.array(list(m.s), dtype=float)
    if data["s"].shape != s.shape or not np.allclose(data["s"], s, rtol=0, atol=1e-9):
        raise ValueError(f"warm start: the mesh of {str(f)!r} ({data['s'].size} points, "
                         f"{data['s'][-1] if data['s'].size else 0:.1f} m) differs from this "
                         f"model's ({s.size} points, {s[-1]:.1f} m): expected a solve of the same "
                         "track, sector and mesh")
    n = 0
    for comp in m.component_objects(pyo.Var, descend_into=True):
        vals = data.get(f"var:{comp.name}")
        if vals is None or vals.size != len(comp):
            continue
        for vd, v in zip(comp.values(), vals.tolist()):
            if vd.fixed or v != v:
                continue
            lb, ub = vd.lb, vd.ub
            if lb is not None and v < lb:
                v = lb
            if ub is not None and v > ub:
                v = ub
            vd.set_value(v, skip_validation=True)
            n += 1
    return n


def write_results(out_dir, df: pd.DataFrame, summary: dict, vehicle_params: dict | None = None,
                  partial: bool = False, n_sectors: int = 3, echo=None,
                  solution: dict | None = None) -> Path:
    """Write ``trajectory.csv``, ``trajectory.parquet``, ``results.xlsx``, ``summary.json`` (and
    ``solution.npz``, given ``solution``)
    atomically.

    The files are written into a temporary folder next to ``out_dir`` and moved into place
    only when complete; an existing ``out_dir`` is replaced only then, and only if it is empty
    or holds earlier pyomo_lap results (anything else is refused, never deleted). With
    ``partial=True`` (a failed solve) nothing existing is touched: the files go to
    ``<out_dir>.failed`` and the summary says ``"partial": true``.

    ``results.xlsx`` has the sheets ``summary`` (one row per quantity, grouped as inputs,
    provenance, solver, results, with the sector times), ``channels`` (one row per point, units
    in the headers), ``sectors`` (:func:`sector_times`), ``vehicle`` (all parameters),
    ``track`` (the track at every point: :data:`TRACK_COLUMNS`), ``quality`` (when the summary
    has ``channel_quality``: the zig-zag counts and the speed consistency of the channels,
    :func:`pyomo_lap.post.quality.quality_table`), ``sensitivities`` (when the
    summary has ``sensitivities``: :func:`sensitivity_sheet`) and ``provenance`` (the input
    files, then one row per step of the track data's processing, assumed value and repair:
    the summary's ``track_processing``, ``track_assumptions``, ``track_repairs``, see
    :func:`pyomo_lap.track.report.provenance_rows`). ``trajectory.parquet`` holds
    the channels with plain names and their units in the schema metadata (key
    ``pyomo_lap.units``, JSON), and the summary under ``pyomo_lap.summary``.

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
    n_sectors : int
        Sectors for :func:`sector_times` (added to the summary unless it has ``sectors``).
    echo : callable, optional
        Progress messages (one per file).
    solution : dict, optional
        :func:`solution_arrays` of the model, written as :data:`SOLUTION_FILE`.

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
    echo = echo or (lambda *_: None)
    out_dir = check_output_dir(out_dir)
    target = out_dir.with_name(out_dir.name + ".failed") if partial else out_dir
    if target.exists() and not _is_replaceable(target):
        raise ValueError(f"{str(target)!r} exists and holds files that are not pyomo_lap results; "
                         "nothing was written")
    parent = target.parent
    summary = dict(summary, partial=bool(partial))
    from .. import __version__
    summary.setdefault("pyomo_lap_version", __version__)   # marks the folder as pyomo_lap results
    # a table without the track coordinate and time (a partial export) has no sector times
    sectors = (sector_times(df, n_sectors) if {"s_sector", "t"} <= set(df.columns)
               else pd.DataFrame())
    if "sectors" not in summary and len(sectors):
        summary["sectors"] = sector_records(sectors)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=parent))
    try:
        os.chmod(tmp, 0o755)
        echo("  writing trajectory.csv")
        _with_units(df).to_csv(tmp / "trajectory.csv", index=False, float_format="%.10g")
        echo("  writing trajectory.parquet")
        _write_parquet(tmp / "trajectory.parquet", df, summary)
        with open(tmp / "summary.json", "w") as fh:
            json.dump(summary, fh, indent=2, default=_json_default)
        if solution is not None:
            np.savez(tmp / SOLUTION_FILE, **solution)
        echo("  writing results.xlsx")
        with pd.ExcelWriter(tmp / "results.xlsx", engine="xlsxwriter") as xw:
            _summary_sheet(summary).to_excel(xw, sheet_name="summary", index=False)
            _write_rows(xw, "channels", _with_units(df))
            sectors.to_excel(xw, sheet_name="sectors", index=False)
            if vehicle_params:
                pd.DataFrame({"parameter": list(vehicle_params),
                              "value": [_cell(v) for v in vehicle_params.values()]}
                             ).to_excel(xw, sheet_name="vehicle", index=False)
            tcols = [c for c in TRACK_COLUMNS if c in df.columns]
            _write_rows(xw, "track", _with_units(df[tcols]))
            _provenance_sheet(summary).to_excel(xw, sheet_name="provenance", index=False)
            if summary.get("channel_quality"):
                from .quality import quality_table
                quality_table(summary["channel_quality"]).to_excel(xw, sheet_name="quality",
                                                                   index=False)
            if summary.get("sensitivities"):
                sensitivity_sheet(summary["sensitivities"]).to_excel(
                    xw, sheet_name="sensitivities", index=False)
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


_SUMMARY_GROUPS = (
    ("inputs", ("track", "vehicle", "start_m", "length_m", "nfe", "ncp", "scheme", "n_points",
                "periodic", "initial_speed_mps", "solver", "solver_options", "track_width_m")),
    ("provenance", ("track_file", "track_file_sha256", "vehicle_file", "vehicle_file_sha256",
                    "vehicle_parameters_sha256", "pyomo_lap_version", "pyomo_lap_git_commit",
                    "pyomo_version", "solver_version", "python", "created_utc")),
    ("solver", ("termination_condition", "solver_status", "solver_message", "ipopt_exit",
                "optimal", "partial", "iterations", "n_variables", "n_constraints",
                "build_time_s", "init_time_s", "solve_time_s")),
    ("results", ("lap_time_s", "objective", "mean_speed_kmh", "max_speed_kmh")),
)


def _write_rows(xw, name: str, frame: pd.DataFrame) -> None:
    """A sheet of a large table, written row by row with xlsxwriter (a header row of the
    column names, no index; empty cells for missing values, as ``DataFrame.to_excel``):
    ``to_excel`` writes cell by cell through pandas' formatter and took 5 s for a full lap's
    4000 rows and 85 channels, this 1.5 s."""
    ws = xw.book.add_worksheet(name)
    ws.write_row(0, 0, [str(c) for c in frame.columns])
    values = frame.astype(object).where(frame.notna(), None).to_numpy().tolist()
    for i, row in enumerate(values, start=1):
        ws.write_row(i, 0, row)


_TRACK_DATA_KEYS = ("track_processing", "track_assumptions", "track_repairs", "sensitivities")
"""Summary keys written to sheets of their own (``provenance``, ``sensitivities``), one row
per record."""

SENSITIVITY_HEADERS = {
    "parameter": "parameter", "section": "section", "unit": "unit", "value": "value",
    "dT_dp": "d lap time / d parameter [s per unit]",
    "dT_1pct": "change of the lap time for +1 % of the parameter [s]",
    "dT_dp_entry": "of which through the entry speed [s per unit]",
    "dobj_dp": "d objective / d parameter (sector time + penalties) [s per unit]",
}
"""Headers of the ``sensitivities`` sheet (columns of
:func:`pyomo_lap.post.sensitivities.lap_time_sensitivities`)."""


def sensitivity_sheet(records) -> pd.DataFrame:
    """The ``sensitivities`` sheet of ``results.xlsx`` from the summary's ``sensitivities``
    records (or the DataFrame of :func:`pyomo_lap.post.sensitivities.lap_time_sensitivities`):
    one row per parameter, the headers of :data:`SENSITIVITY_HEADERS`."""
    frame = pd.DataFrame(records)
    return frame[[c for c in SENSITIVITY_HEADERS if c in frame]].rename(columns=SENSITIVITY_HEADERS)


def read_sensitivities(results_dir) -> pd.DataFrame | None:
    """The sensitivity table of a results folder (from ``summary.json``), with the columns of
    :func:`pyomo_lap.post.sensitivities.lap_time_sensitivities`; None if the run had none."""
    records = read_summary(results_dir).get("sensitivities")
    return pd.DataFrame(records) if records else None


def _provenance_sheet(summary: dict) -> pd.DataFrame:
    """The input files and what was done to the track's data, one row each."""
    from ..track.report import provenance_rows
    files = {k: summary[k] for k in ("track_file", "track_file_sha256", "vehicle_file",
                                     "vehicle_file_sha256") if k in summary}
    return provenance_rows(summary.get("track_processing", []),
                           summary.get("track_assumptions", []),
                           summary.get("track_repairs", []), files)


def _summary_sheet(summary: dict) -> pd.DataFrame:
    """The summary as rows (group, quantity, value), sector times as rows of their own (the
    track data's records are on the ``provenance`` sheet)."""
    rows, seen = [], set(_TRACK_DATA_KEYS)
    for group, keys in _SUMMARY_GROUPS:
        for k in keys:
            if k in summary:
                rows.append((group, k, _cell(summary[k])))
                seen.add(k)
    for sec in summary.get("sectors", []):
        rows.append(("sector times", f"sector {sec['sector']} time [s] "
                     f"({sec['s_start_m']:.0f}-{sec['s_end_m']:.0f} m)", sec["time_s"]))
    seen.add("sectors")
    rows += [("other", k, _cell(v)) for k, v in summary.items() if k not in seen]
    return pd.DataFrame(rows, columns=["group", "quantity", "value"])


def _write_parquet(path: Path, df: pd.DataFrame, summary: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"pyomo_lap.units"] = json.dumps({c: UNITS[c] for c in df.columns if c in UNITS}).encode()
    meta[b"pyomo_lap.summary"] = json.dumps(summary, default=_json_default).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def read_parquet_units(path) -> dict:
    """Units of the channels stored in a ``trajectory.parquet`` (its schema metadata)."""
    import pyarrow.parquet as pq
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(b"pyomo_lap.units", b"{}"))


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
