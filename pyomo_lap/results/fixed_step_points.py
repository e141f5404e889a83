r"""The channels at the points of a fixed distance step computed, not interpolated
(``solve --every``, ``pyomo-lap export RUN --every``; :mod:`pyomo_lap.results.fixed_step`
makes the rows and writes them).

At each point of the step (:func:`computed_columns`):

1. the **states** (the joint coordinates and rates, the time, the controls when they are
   states, a hybrid's battery energy) are their collocation polynomials through the element's
   start and collocation points, the **other controls** and a hybrid's **powers** their
   polynomials through the collocation points
   (:meth:`pyomo_lap.ocp.transfer.Solution.at`, the one home of such moves);
2. the controls are kept within their **bounds** (``f_xa >= 0``, ``f_xb <= 0``,
   :math:`|\delta| \le \delta_{max}`), a hybrid's powers within theirs
   (``[hybrid] deploy_power_max``, ``harvest_power_max``); where the element's mesh rows never
   drive and brake at once (throttle and brake both above :data:`PEDALS_APART`), the drive and
   braking forces' polynomials, which overlap between the points where one hands over to the
   other, are made one net force again (:math:`f_{xa} + f_{xb}` given to the one whose sign it
   has: what the solver's points do, by the complementarity penalty of eq (41));
3. the **limits** of the rows the solver's points keep: the traction row
   :math:`f_{xa} v_{3x} \le P(v_{3x}) + P_d` (the model's own row, evaluated by its record) and
   a hybrid's harvest row :math:`P_h \le -(1 - k_b) f_{xb} v_{3x}`;
4. the **algebraic variables** (the loads and the in-plane tyre forces) are solved from the
   record's equations there (:func:`pyomo_lap.ocp.transfer.solve_loop_at`), from their
   polynomials; where the loop does not converge they stay the polynomials, and the record
   says where (``algebraic_loop_failed``, ``algebraic_loop_failed_at_m``);
5. every **derived channel** is computed from those by the code that makes the mesh rows'
   (:func:`pyomo_lap.results.point_table.record_dataframe`: the record's channel group, the
   accelerations; :func:`pyomo_lap.results.point_table.add_derived_channels`: the hybrid's
   powers, the logger channels, the energies' powers, the controls' rates, these from the
   derivatives of the controls' polynomials).

Only the quasi-steady reference ``v_point_mass``, ``t_point_mass`` (the initial guess's
profile, no solution) is interpolated. :class:`PointModel` holds what this needs besides the
mesh rows: from a solved model (:meth:`PointModel.from_model`) or rebuilt once from a results
folder (:meth:`PointModel.from_folder`: its car, track and the record of its equations).
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ..ocp.build import DEFAULT_MODEL, VEHICLE_MODELS, record_rows
from ..ocp.collocation import CollocationGrid
from ..ocp.common import car_control_bounds, control_states
from ..ocp.hybrid import hybrid_settings, rear_share
from ..ocp.point_functions import (
    CarFunctions,
    record_numbers,
    record_of,
    track_vectors,
    vehicle_values_of,
)
from ..ocp.record_model import record_table
from ..ocp.sector import sector_track_points
from ..ocp.transfer import Solution, solve_loop_at
from ..track.loading import load_track
from .point_table import add_derived_channels, record_dataframe
from .table import _car_of

__all__ = ["PointModel", "computed_columns", "folder_track", "PEDALS_APART", "REFERENCE_COLUMNS"]

PEDALS_APART = 1.0
"""[%] Throttle and brake both above this in a mesh row of an element: the solver drives and
brakes at once there (a hybrid harvesting at full throttle), and the element's rows on the step
keep both forces as their polynomials give them; elsewhere a row on the step never has both
(:func:`computed_columns`, step 2)."""

REFERENCE_COLUMNS = ("v_point_mass", "t_point_mass")
"""The columns that are interpolated on the step: the initial guess's quasi-steady profile, a
reference computed on the mesh, no solution."""


@dataclasses.dataclass
class PointModel:
    """What the channels at any point of a solved sector need besides its mesh rows.

    Attributes
    ----------
    rec : PointRows
        The record of the car's equations, with its channel group.
    model : VehicleModel
        Its names of the states, rates, controls and algebraic variables.
    car : VehicleParameters
        The car as solved (a free parameter at its optimum).
    vehicle : ndarray
        The values of ``rec.vehicle_inputs`` as solved.
    functions : CarFunctions
        The algebraic loop at fixed parameters.
    track : Track
    start, length : float
        The sector's start on the track and its length [m].
    bounds : dict
        ``{control: (lower, upper)}`` as the model's variables have them.
    state_controls : bool
        The controls are states (``control_form = "state"``).
    hybrid : dict or None
        ``{"deploy_max": W, "harvest_max": W, "rear_share": 1 - k_b}`` of a car with
        ``[hybrid]``.
    """

    rec: object
    model: object
    car: object
    vehicle: np.ndarray
    functions: object
    track: object
    start: float
    length: float
    bounds: dict
    state_controls: bool
    hybrid: Optional[dict] = None

    def track_points(self, s_sector):
        """The track at points of the sector [m] (:func:`pyomo_lap.ocp.sector.sector_track_points`,
        as the build evaluates it)."""
        return sector_track_points(self.track, self.start, self.length, s_sector)

    @classmethod
    def from_model(cls, m) -> Optional["PointModel"]:
        """The point model of a solved model, or None for a model whose table is not its
        record's (``VehicleModel.trajectory`` other than
        :func:`pyomo_lap.ocp.record_model.record_table`: the racecar; its rows on the step are
        interpolated)."""
        rec, vm = record_of(m), m.problem.vehicle_model
        if rec is None or vm.trajectory is not record_table or not rec.channels:
            return None
        car, vehicle = _car_of(m), vehicle_values_of(rec, m)
        x = sorted(m.s)[-1]
        bounds = {c: (m.component(c)[x].lb, m.component(c)[x].ub) for c in vm.controls}
        hybrid = None
        if m.component("hybrid") is not None:
            b = m.hybrid
            hybrid = {"deploy_max": b.deploy_power[x].ub, "harvest_max": b.harvest_power[x].ub,
                      "rear_share": float(_value(rear_share(m, m.vehicle.built_for)))}
        return cls(rec=rec, model=vm, car=car, vehicle=vehicle,
                   functions=CarFunctions(rec, car, vm, values=vehicle), track=m.problem.track,
                   start=float(m.problem.options.start), length=float(m.problem.sector_length),
                   bounds=bounds, state_controls=control_states(m.problem.options, m),
                   hybrid=hybrid)

    @classmethod
    def from_folder(cls, run, summary: dict, mesh: pd.DataFrame, car) -> Optional["PointModel"]:
        """The point model of a results folder, rebuilt from it once: its car (``car``, from
        :func:`pyomo_lap.results.fixed_step.folder_car`), its track (:func:`folder_track`,
        checked against the mesh rows), the record of its vehicle model's equations for that
        car and its OCP options (:func:`pyomo_lap.ocp.build.record_rows`) and their CasADi
        functions: about what the first part of a build costs, no NLP. None for a vehicle
        model whose table is not its record's, or without a car.

        Raises
        ------
        ValueError
            The track file is missing or changed, or the track does not give the mesh rows'
            (:func:`folder_track`).
        """
        vm = VEHICLE_MODELS.get(str(summary.get("model") or DEFAULT_MODEL))
        if car is None or vm is None or vm.trajectory is not record_table or vm.point_rows is None:
            return None
        options = dict(summary.get("ocp_options") or {})
        config = {k: v for k, v in options.items() if k not in ("element_boundaries", "lift")}
        rec = record_rows(car, {**config, "model": vm.name,
                                "periodic": bool(summary.get("periodic"))})
        if rec is None or not rec.channels:
            return None
        h = hybrid_settings(car)
        hybrid = None if h is None else {"deploy_max": h["deploy_power_max"],
                                         "harvest_max": h["harvest_power_max"],
                                         "rear_share": 1.0 - float(car.brake_ratio)}
        vehicle = rec.vehicle_values(car)
        return cls(rec=rec, model=vm, car=car, vehicle=vehicle,
                   functions=CarFunctions(rec, car, vm, values=vehicle),
                   track=folder_track(run, summary, mesh),
                   start=float(summary.get("start_m") or 0.0),
                   length=float(summary.get("length_m") or mesh["s_sector"].iloc[-1]),
                   bounds=car_control_bounds(car),
                   state_controls=options.get("control_form", "point") == "state", hybrid=hybrid)


def _value(x) -> float:
    """A number or a Pyomo expression's value."""
    return float(pyo.value(x))


def folder_track(run, summary: dict, mesh: pd.DataFrame):
    """The track a results folder was solved on: the track file its ``summary.json`` names
    (``track_file``, the same bytes: ``track_file_sha256``), else the bundled track of its
    name, loaded with the run's options (``track_width_m``, ``track_flat``,
    ``track_lat_lon_order``), and checked against the folder's mesh rows (the curvature
    ``Omega_z`` and the spine's position at every mesh point).

    Raises
    ------
    ValueError
        The track file changed since the solve, or the track loaded does not give the mesh
        rows' numbers (naming where).
    """
    where = Path(run) / "summary.json"
    file, name = summary.get("track_file"), summary.get("track")
    if file and Path(file).is_file():
        sha = hashlib.sha256(Path(file).read_bytes()).hexdigest()
        if summary.get("track_file_sha256") not in (None, sha):
            raise ValueError(f"{where}: track_file {file} has sha256 {sha}: expected "
                             f"{summary['track_file_sha256']}, the file the run was solved on "
                             "(it has changed since)")
    elif not name:
        raise ValueError(f"{where}: no track_file or track: expected the track the run was "
                         "solved on (for the channels on the step)")
    order = (summary.get("track_lat_lon_order") or {}).get("option") or "auto"
    kw = {"track_width": summary.get("track_width_m"), "flat": bool(summary.get("track_flat"))}
    source = file if file and Path(file).is_file() else name
    tr = load_track(source, lat_lon_order=order, **kw) if order != "auto" else load_track(source, **kw)
    s = mesh["s_sector"].to_numpy(float)
    tp = sector_track_points(tr, float(summary.get("start_m") or 0.0), float(s[-1]), s)
    for col, got in (("Omega_z", tp.omega[:, 2]), ("x_spine", tp.position[:, 0]),
                     ("y_spine", tp.position[:, 1])):
        if col in mesh.columns:
            err = np.abs(mesh[col].to_numpy(float) - got)
            if err.max() > 1e-6 * max(1.0, float(np.abs(got).max())):
                k = int(np.argmax(err))
                raise ValueError(f"{where}: the track {source} gives {col} = {got[k]:.9g} at "
                                 f"s_sector = {s[k]:g} m, the mesh rows {mesh[col].iloc[k]:.9g}: "
                                 "expected the track the run was solved on")
    return tr


def _state_names(pm: PointModel, mesh: pd.DataFrame) -> set:
    """The columns interpolated as states (module docstring, step 1)."""
    vm = pm.model
    states = set(vm.states) | set(vm.rates) | {"t"}
    if pm.state_controls:
        states |= set(vm.controls)
    return states | ({"soc_energy"} & set(mesh.columns))


def _pedals_apart(vals: dict, mesh: pd.DataFrame, grid, breaks, scheme, pm) -> int:
    """Step 2's net longitudinal force where the element's mesh rows never drive and brake at
    once; the rows changed."""
    if not {"throttle", "brake"} <= set(mesh.columns):
        return 0
    nodes = mesh["s_sector"].to_numpy(float)
    g = CollocationGrid(nodes, breaks, scheme)
    both = ((mesh["throttle"] > PEDALS_APART) & (mesh["brake"] > PEDALS_APART)).to_numpy()
    exempt = np.array([both[e.state_points if pm.state_controls else e.nodes].any()
                       for e in g.elements])
    fa, fb = vals["f_xa"], vals["f_xb"]
    apart = ~exempt[g.element_of(grid)] & (fa > 0.0) & (fb < 0.0)
    net = fa + fb
    vals["f_xa"] = np.where(apart, np.maximum(net, 0.0), fa)
    vals["f_xb"] = np.where(apart, np.minimum(net, 0.0), fb)
    return int((apart & (np.minimum(fa, -fb) > 1.0)).sum())


def _within_limits(vals: dict, numbers: dict, pm: PointModel) -> dict:
    """Step 3: the traction row and a hybrid's harvest row at the points (the rows changed)."""
    rec, v = pm.rec, numbers["channels"]["v_3x"]
    out = {"power_limited": 0, "harvest_limited": 0}
    fam = [f for f in rec.families if f.name == "power_limit"]
    deploy = vals.get("power_deploy", 0.0)
    if fam and "f_xa" in vals:
        excess = numbers["rows"][:, fam[0].outputs[0]] - deploy      # f_xa v - P(v) - P_d
        over = (excess > 0.0) & (v > 0.0)
        vals["f_xa"] = np.where(over, vals["f_xa"] - np.divide(excess, v, where=v > 0,
                                                               out=np.zeros_like(v)), vals["f_xa"])
        out["power_limited"] = int((over & (excess > 1.0)).sum())
    if pm.hybrid is not None and "power_harvest" in vals:
        cap = np.maximum(-pm.hybrid["rear_share"] * vals["f_xb"] * v, 0.0)
        over = vals["power_harvest"] > cap
        out["harvest_limited"] = int((vals["power_harvest"] > cap + 1.0).sum())
        vals["power_harvest"] = np.where(over, cap, vals["power_harvest"])
    return out


def _clip(vals: dict, name: str, lo, up) -> int:
    """``vals[name]`` within ``[lo, up]`` (None: no bound); the rows moved by more than 1e-6
    of the bounds' span (or at all, without a span)."""
    x = vals[name]
    lo, up = -np.inf if lo is None else lo, np.inf if up is None else up
    y = np.clip(x, lo, up)
    vals[name] = y
    span = up - lo if np.isfinite(up - lo) else 0.0
    return int(np.sum(np.abs(y - x) > 1e-6 * span))


def computed_columns(mesh: pd.DataFrame, grid, breaks, scheme: str, pm: PointModel) -> tuple:
    """The channels at the points ``grid`` computed from the mesh rows (module docstring).

    Parameters
    ----------
    mesh : DataFrame
        The mesh rows of the solution (:func:`pyomo_lap.results.table.trajectory_dataframe`).
    grid : (Q,) array_like
        The points [m] from the sector start.
    breaks : (N+1,) array_like
        The element boundaries [m], mesh points.
    scheme : str
    pm : PointModel

    Returns
    -------
    (dict, dict)
        ``{column: (Q,) array}`` of every column the mesh rows' code makes, and the record of
        what was done: ``method`` ("computed"), ``points``, the rows changed by steps 2-3
        (``controls_clipped``: a control moved by more than 1e-6 of its bounds' span;
        ``pedals_apart``: both forces above 1 N made one; ``power_limited``,
        ``harvest_limited``: a row exceeded by more than 1 W),
        ``algebraic_loop_failed`` (rows where the loop did not converge: their loads and tyre
        forces are the polynomials') and ``algebraic_loop_failed_at_m`` (their ``s_sector``,
        the first 20).
    """
    vm, grid = pm.model, np.asarray(grid, dtype=float)
    hybrid = [c for c in ("power_deploy", "power_harvest") if pm.hybrid and c in mesh.columns]
    sol = Solution.from_table(mesh, breaks, scheme, states=_state_names(pm, mesh))
    slopes = [f"d{c}_ds" for c in vm.controls] if pm.state_controls else []
    vals = sol.at(grid, list(vm.variables) + hybrid + ["soc_energy"] + slopes)
    info = {"method": "computed", "points": int(len(grid))}
    clipped = [_clip(vals, c, *pm.bounds[c]) for c in vm.controls if c in pm.bounds]
    info["controls_clipped"] = int(max(clipped, default=0))
    info["pedals_apart"] = (_pedals_apart(vals, mesh, grid, np.asarray(breaks, float), scheme, pm)
                            if {"f_xa", "f_xb"} <= set(vals) else 0)
    for c, key in zip(hybrid, ("deploy_max", "harvest_max")):
        _clip(vals, c, 0.0, pm.hybrid[key])
    tp = pm.track_points(grid)
    trk = track_vectors(tp)
    point = {k: vals[k] for k in vm.variables}
    info.update(_within_limits(vals, record_numbers(pm.rec, point, trk, pm.vehicle, vm.rates), pm))
    z, _, ok = solve_loop_at(pm.functions, vm, vals, trk)
    vals.update(z)
    info["algebraic_loop_failed"] = int((~ok).sum())
    info["algebraic_loop_failed_at_m"] = [float(x) for x in grid[~ok][:20]]
    numbers = record_numbers(pm.rec, {k: vals[k] for k in vm.variables}, trk, pm.vehicle, vm.rates)
    table = record_dataframe(numbers, tp, grid, breaks)
    add_derived_channels(table, pm.car, {c: vals[c] for c in
                                         ("power_deploy", "power_harvest", "soc_energy")
                                         if c in vals and pm.hybrid},
                         {c: vals[f"d{c}_ds"] for c in vm.controls if f"d{c}_ds" in vals})
    return {c: table[c].to_numpy() for c in table.columns
            if c not in ("s", "q1", "s_sector", "element")}, info
