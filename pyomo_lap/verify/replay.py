r"""Replay of a solved sector: drive the time-domain simulation (:mod:`pyomo_lap.verify.simulate`)
with the optimal controls and compare the states with the optimum, for every vehicle model
(its ``VehicleModel.dynamics``: the equations in time, the path's roles, the bounds).

The optimum comes from direct collocation: its states satisfy the DAE only at the collocation
points, and its controls are differential states in ``q1`` (OCP option ``control_form =
"state"``, the default: per finite element the polynomial through the element's start and
collocation points, like the other states), values at the collocation points (``control_form
= "point"``: per finite element the polynomial through them) or constants per finite element
(``piecewise_constant_controls=True``), see :func:`pyomo_lap.verify.controls.controls_from_trajectory`.
Integrated in time with those controls (open loop, as functions of the track distance ``q1``),
an exact solution of the DAE follows the optimum as long as (i) the collocation error between
the points is small and (ii) the car does not amplify it. A race car at its limits is
open-loop unstable or close to it (in yaw, and always in the lateral position, which
integrates the heading error), so the replay and the optimum part sooner or later;
:func:`replay` reports when (the first track distance where a state leaves its tolerance), by
how much, and why (which state, how fast the deviation grows, whether the car was unstable
there: :func:`stability_along`).

With ``feedback=True`` (or a dict of :class:`pyomo_lap.verify.simulate.PathFollowing` options) a
path-following steering feedback keeps the car on the optimal path, so a whole sector can be
replayed; the size of the steering correction it needs is then the measure of agreement.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Union

import numpy as np
import pandas as pd

from ..ocp.collocation import element_points
from ..ocp.point_functions import track_vectors
from ..ocp.record_model import as_dynamics
from ..vehicle.tyres import peak_force
from .controls import CollocationControls, controls_from_trajectory
from .defects import SolvedTable
from .simulate import PathFollowing, SimulationResult, TrackLookup, simulate

__all__ = ["replay", "ReplayReport", "DEFAULT_TOLERANCES", "stability_along", "state_polynomials",
           "segment_rows", "replay_segments", "SegmentReplays"]

DEFAULT_TOLERANCES = {
    "q2": 0.05, "q3": 0.005, "q4": 1e-3, "q5": 1e-3, "q6": 1e-3,
    "q1_dot": 0.05, "q2_dot": 0.05, "q3_dot": 0.02, "q4_dot": 0.01, "q5_dot": 0.02,
    "q6_dot": 0.02, "t": 0.01,
}
"""Agreement tolerances of a replay, per state [m, rad, m, rad, rad, m/s, m/s, rad/s, m/s,
rad/s, rad/s, s]: 5 cm of lateral position, 0.3 degree of yaw, 1 mm / 1 mrad of the
suspension, 5 cm/s of speed, 10 ms of time. A state without a tolerance never parts."""


@dataclasses.dataclass
class ReplayReport:
    """Result of :func:`replay`.

    Attributes
    ----------
    simulation : SimulationResult
    comparison : pandas.DataFrame
        At every point of the optimum the simulation reached: ``s`` [m], the optimum's ``t``,
        and for each state ``<name>_opt``, ``<name>_sim``, ``<name>_dev`` (sim minus optimum);
        ``t_dev`` [s]; with feedback also ``steer_correction`` [rad].
    first_exceedance : dict
        State name -> track coordinate [m] where ``|dev|`` first exceeds its tolerance (NaN:
        never within the replayed range).
    tolerances : dict
    agree_until_s, agree_until_t : float
        Track coordinate [m] and time of the optimum [s] up to which *all* states agree within
        tolerance (the sector end if they never part).
    first_to_part : str or None
        The state that leaves its tolerance first.
    max_deviation : dict
        State name -> max |dev| over the replayed range.
    reason : str
        Why they part (or that they do not), in words.
    feedback : bool
    steer_correction_rms, steer_correction_max : float
        With feedback: RMS and max |steering correction| [rad] over the sector.
    """

    simulation: SimulationResult
    comparison: pd.DataFrame
    first_exceedance: dict
    tolerances: dict
    agree_until_s: float
    agree_until_t: float
    first_to_part: Optional[str]
    max_deviation: dict
    reason: str
    feedback: bool
    steer_correction_rms: float = float("nan")
    steer_correction_max: float = float("nan")

    def summary(self) -> dict:
        """Plain numbers for JSON/tables."""
        return {
            "feedback": self.feedback, "status": self.simulation.status,
            "agree_until_s_m": self.agree_until_s, "agree_until_t_s": self.agree_until_t,
            "first_to_part": self.first_to_part,
            "max_deviation": {k: float(v) for k, v in self.max_deviation.items()},
            "first_exceedance_s_m": {k: float(v) for k, v in self.first_exceedance.items()},
            "steer_correction_rms_rad": self.steer_correction_rms,
            "steer_correction_max_rad": self.steer_correction_max,
            "reason": self.reason, "wall_time_s": self.simulation.wall_time_s,
        }


def segment_rows(df, segment_s: float) -> list:
    """Where a trajectory table is cut into the segments of :func:`replay_segments`: the rows
    ``(a, b)`` of each segment, both ends at element ends (a row whose next row is in another
    element), every segment about ``segment_s`` [s] of the optimum's time long (the last one
    takes what is left, at least half a segment)."""
    t = df["t"].to_numpy(float)
    el = df["element"].to_numpy(int)
    ends = [0] + [i for i in range(1, len(df)) if i == len(df) - 1 or el[i + 1] != el[i]]
    cuts, last = [0], t[0]
    for i in ends[1:-1]:
        if t[i] - last >= segment_s and t[-1] - t[i] >= 0.5 * segment_s:
            cuts.append(i)
            last = t[i]
    cuts.append(len(df) - 1)
    return list(zip(cuts[:-1], cuts[1:]))


@dataclasses.dataclass
class SegmentReplays:
    """The replays of :func:`replay_segments`, put together as one (the attributes that
    :func:`pyomo_lap.api.validate.validate_results` reads of a :class:`ReplayReport`).

    Attributes
    ----------
    reports : list of ReplayReport
        Each segment's, in order.
    segments : list of (float, float)
        Each segment's start and end on the track [m].
    comparison : pandas.DataFrame
        The segments' comparisons, one after the other (``t_dev`` each segment's own).
    simulation : SimulationResult
        The first segment's that did not reach its end, else the last segment's.
    shortfall_m : float
        The distance the segments fell short of their ends, summed [m].
    time_dev_s : float
        The segments' differences of time from the optimum, their absolute values summed [s].
    lateral : str
        The model's lateral offset (its column ``<lateral>_dev`` of :attr:`comparison`).
    limits : dict
        ``{name: (largest share, track coordinate [m])}`` of the model's limits along the
        replays (``ModelDynamics.limits``; said, not judged).
    """

    reports: list
    segments: list
    comparison: pd.DataFrame
    simulation: object
    shortfall_m: float
    time_dev_s: float
    max_deviation: dict
    steer_correction_rms: float
    steer_correction_max: float
    feedback: bool = True
    lateral: str = "q2"
    limits: dict = dataclasses.field(default_factory=dict)

    def summary(self) -> dict:
        """Plain numbers for JSON/tables."""
        return {"feedback": True, "segments": len(self.segments),
                "limits_max": {k: {"share": v, "at_m": at} for k, (v, at) in self.limits.items()},
                "status": self.simulation.status, "shortfall_m": self.shortfall_m,
                "time_dev_s": self.time_dev_s,
                "max_deviation": {k: float(v) for k, v in self.max_deviation.items()},
                "steer_correction_rms_rad": self.steer_correction_rms,
                "steer_correction_max_rad": self.steer_correction_max,
                "failed_segments": [(a, b, r.simulation.status, r.reason) for (a, b), r in
                                    zip(self.segments, self.reports) if r.simulation.status != "end"],
                "wall_time_s": float(sum(r.simulation.wall_time_s for r in self.reports))}


def replay_segments(df, track, vehicle, segment_s: float, start: Optional[float] = None,
                    car=None, feedback=True, model=None, **kwargs) -> SegmentReplays:
    r"""Replay a solved sector in segments of about ``segment_s`` [s] of its time, each from
    the optimum's state at its start, with the path-following driver (:func:`replay`).

    A car at the limit of its tyres is open-loop unstable (a real part of 0.1-0.5 1/s in its
    linearized dynamics): over a whole lap a driver's small errors grow by :math:`e^{0.5 t}`
    and whether a replay of several minutes survives is decided by chance more than by the
    plan. Restarted from the plan every few seconds, the replay asks what matters: that the
    plan is dynamically consistent and that a driver can follow it with small corrections,
    everywhere.

    Parameters
    ----------
    df : DataFrame or SolvedTable
        A trajectory table (as :func:`replay` takes it).
    track, vehicle, start, car, model
        As :func:`replay`.
    segment_s : float
        The segments' length in the optimum's time [s] (:func:`segment_rows`).
    feedback : bool or dict
        The driver (:func:`replay`).
    **kwargs
        Passed to :func:`replay` (``scheme``, ``interpolation``, ``path_reference`` ...).

    Returns
    -------
    SegmentReplays
    """
    sol = SolvedTable.of(df, model=model, start=start, scheme=kwargs.pop("scheme", None),
                         interpolation=kwargs.pop("interpolation", None))
    dyn = sol.dynamics(vehicle) if car is None else as_dynamics(car)
    table, start = sol.table, sol.start
    reports, spans, comps, limits = [], [], [], {}
    short = tdev = 0.0
    worst = None
    for a, b in segment_rows(table, segment_s):
        seg = table.iloc[a:b + 1].copy()
        s0, t0, e0 = float(seg["s_sector"].iloc[0]), float(seg["t"].iloc[0]), int(seg["element"].iloc[0])
        seg["s_sector"] = seg["s_sector"] - s0
        seg["t"] = seg["t"] - t0
        seg["element"] = np.maximum(seg["element"].to_numpy(int) - e0, 0)
        seg.iloc[0, seg.columns.get_loc("element")] = 0
        seg = seg.reset_index(drop=True)
        r = replay(dataclasses.replace(sol, table=seg, start=start + s0), track, vehicle,
                   car=dyn, feedback=feedback, explain=False, **kwargs)
        end = start + s0 + float(seg["s_sector"].iloc[-1])
        reached = float(r.simulation.x[-1, 0])
        if r.simulation.status != "end":
            short += max(0.0, end - reached)
            worst = worst or r.simulation
        c = r.comparison.copy()
        tdev += abs(float(c["t_dev"].iloc[-1])) if len(c) else 0.0
        comps.append(c)
        reports.append(r)
        spans.append((start + s0, end))
        _largest_limits(limits, dyn, track, r.simulation)
    comp = pd.concat(comps, ignore_index=True)
    maxdev = {k: max(float(r.max_deviation.get(k, 0.0)) for r in reports)
              for k in reports[0].max_deviation}
    corr = comp["steer_correction"].to_numpy(float) if "steer_correction" in comp else np.zeros(1)
    return SegmentReplays(reports=reports, segments=spans, comparison=comp,
                          simulation=worst or reports[-1].simulation, shortfall_m=short,
                          time_dev_s=tdev, max_deviation=maxdev,
                          steer_correction_rms=float(np.sqrt(np.nanmean(corr ** 2))),
                          steer_correction_max=float(np.nanmax(np.abs(corr))),
                          lateral=dyn.path.lateral, limits=limits)


def _largest_limits(limits: dict, dyn, track, sim: SimulationResult) -> None:
    """The largest share of each of the model's limits along a replay's steps
    (``ModelDynamics.limits`` at its states, controls and algebraic variables) into
    ``limits`` (``{name: (share, track coordinate [m])}``, the larger kept)."""
    ok = np.all(np.isfinite(sim.x), axis=1) & np.all(np.isfinite(sim.z), axis=1)
    if not np.any(ok):
        return
    x = np.column_stack([sim.x[ok, 1:], sim.t[ok]])          # the states in s, the time last
    trk = track_vectors(track.evaluate(sim.x[ok, 0]))
    for name, share in dyn.limits(trk, x, sim.u[ok], sim.z[ok]).items():
        k = int(np.nanargmax(share))
        if name not in limits or share[k] > limits[name][0]:
            limits[name] = (float(share[k]), float(sim.x[ok, 0][k]))


def state_polynomials(df, columns=("q2", "q3", "q1_dot"), start: Optional[float] = None,
                      scheme: str = "LAGRANGE-RADAU"):
    """Three channels of a trajectory table as the collocation polynomials of the OCP's
    states: on element ``j`` the polynomial through its start and collocation points
    (:func:`pyomo_lap.ocp.collocation.element_points`), continuous across the elements.

    Parameters
    ----------
    df : DataFrame
        A trajectory table (``s_sector``, ``element`` and the columns).
    columns : three column names
        States of the OCP (the polynomials are theirs only for states).
    start : float, optional
        Track coordinate of the sector start [m] (default ``s[0]``).
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}

    Returns
    -------
    CollocationControls
        Its ``at(q1)`` [m] gives the three channels (held at the values at the ends outside
        the sector); a control law only in form.
    """
    if start is None:
        start = float(df["s"].iloc[0]) if "s" in df.columns else 0.0
    el = df["element"].to_numpy().astype(int)
    s = df["s_sector"].to_numpy(float)
    groups = element_points(el, s, scheme)
    if len({len(idx) for _, idx in groups}) != 1:
        raise ValueError("elements with different numbers of collocation points")
    sel = np.array([np.r_[i0, idx] for i0, idx in groups])
    ends = [int(np.flatnonzero(el == j)[-1]) for j in range(1, len(groups) + 1)]
    breaks = start + np.r_[s[groups[0][0]], s[ends]]
    vals = df[list(columns)].to_numpy(float)
    return CollocationControls("s", breaks, start + s[sel], vals[sel], restart=False)


def _adherence_use(df, p) -> np.ndarray:
    """Largest friction-ellipse use over the four tyres at each point [-] (1 = at the limit)."""
    ratio = p.mu_y0 / p.mu_x0
    use = np.zeros(len(df))
    for w in ("11", "12", "21", "22"):
        D = np.array([peak_force(p, float(f)) for f in df[f"f_{w}z"]])
        use = np.maximum(use, np.hypot(ratio * df[f"f_{w}x"].to_numpy(), df[f"f_{w}y"].to_numpy()) / D)
    return use


def stability_along(df, track, vehicle, every: int = 1, car=None,
                    start: Optional[float] = None, model=None) -> pd.DataFrame:
    r"""Eigenvalues of the linearized time-domain dynamics along a trajectory, with the
    controls, the algebraic variables' guess and the track point frozen: :math:`A = \partial
    \dot x / \partial x` over the model's states in time other than the track coordinate, at
    each chosen point (central differences of ``ModelDynamics.time_rates``; the algebraic
    equations solved at each perturbed state).

    Parameters
    ----------
    df : DataFrame of a solved model (:func:`pyomo_lap.results.table.trajectory_dataframe`).
    track, vehicle
    every : int
        Use every ``every``-th point.
    car : ModelDynamics or CarFunctions, optional
    start : float, optional
        Track coordinate of the sector start (default ``df['s'][0]``).
    model : str or VehicleModel, optional
        The table's vehicle model (default ``"full"``).

    Returns
    -------
    DataFrame
        ``s`` [m], ``t`` [s], ``max_real`` (largest real part of the eigenvalues [1/s]; > 0:
        an unstable mode, time to grow by e = 1/max_real), ``mode`` (the states that dominate
        that mode's eigenvector), ``adherence_use`` (largest friction-ellipse use of the four
        tyres [-], where the table has the tyre forces of the full car).
    """
    sol = SolvedTable.of(df, model=model, start=start)
    dyn = sol.dynamics(vehicle) if car is None else as_dynamics(car)
    look = TrackLookup(track)
    names = tuple(dyn.names)
    s_abs = sol.start + df["s_sector"].to_numpy(float)
    use = _adherence_use(df, vehicle) if "f_11x" in df.columns else np.full(len(df), np.nan)
    X = sol.columns(names[1:])
    U, Z = sol.columns(dyn.controls), sol.columns(dyn.algebraic)
    rows = []
    ny = len(names)
    for i in range(0, len(df), every):
        x = np.r_[s_abs[i], X[i]]
        trk = look(x[0])[0]

        def f(xx, _u=U[i], _z=Z[i], _trk=trk):
            return dyn.time_rates(_trk, xx, _u, _z)[0]
        idx = list(range(1, ny))             # the track coordinate left out: the point is frozen
        A = np.zeros((ny - 1, ny - 1))
        for c, j in enumerate(idx):
            h = 1e-6 * max(1.0, abs(x[j]))
            e = np.zeros(ny)
            e[j] = h
            A[:, c] = ((f(x + e) - f(x - e)) / (2 * h))[idx]
        lam, vec = np.linalg.eig(A)
        k = int(np.argmax(lam.real))
        v = np.abs(vec[:, k])
        mode = "+".join(names[idx[j]] for j in np.argsort(v)[::-1][:2])
        rows.append({"s": s_abs[i], "t": float(df["t"].iloc[i]), "max_real": float(lam.real[k]),
                     "max_imag": float(abs(lam.imag[k])), "mode": mode,
                     "adherence_use": float(use[i])})
    return pd.DataFrame(rows)


def replay(source, track, vehicle, *, feedback: Union[bool, dict] = False,
           tolerances: Optional[dict] = None, start: Optional[float] = None,
           basis: str = "s", s_end: Optional[float] = None, method: str = "RK45",
           rtol: float = 1e-6, car=None, explain: bool = True,
           initial_offset: Optional[dict] = None, scheme: Optional[str] = None,
           interpolation: Optional[str] = None, path_reference: Optional[str] = None,
           track_step: Optional[float] = 0.25, model=None) -> ReplayReport:
    r"""Drive the simulation with the optimal controls of a solved sector and compare.

    Parameters
    ----------
    source : pyomo model, pandas.DataFrame or SolvedTable
        A solved model of any vehicle model with ``dynamics``
        (:func:`pyomo_lap.ocp.build.build_model`) or its trajectory
        (:func:`pyomo_lap.results.table.trajectory_dataframe`, or ``trajectory.csv`` read with
        :func:`pyomo_lap.results.table.read_trajectory`).
    track : Track
        The track the model was built on.
    vehicle : VehicleParameters or RacecarParameters
    feedback : bool or dict
        False: open loop. True or a dict of :class:`~pyomo_lap.verify.simulate.PathFollowing`
        keyword arguments (``gain`` [rad/m], ``preview_time`` [s], ``preview_min`` [m],
        ``k_v`` [1/s]): steering feedback towards the optimal path.
    tolerances : dict, optional
        Per-state tolerances (default :data:`DEFAULT_TOLERANCES`; missing keys take the
        default; a state without one never parts).
    start : float, optional
        Track coordinate of the sector start [m] (default: ``s`` of the first point).
    basis : {'s', 't'}
        Controls as functions of track distance (default) or of time.
    s_end : float, optional
        Stop there (default: the sector end).
    method, rtol : integrator settings (:func:`pyomo_lap.verify.simulate.simulate`).
    car : ModelDynamics or CarFunctions, optional
        The model's equations, if made already.
    explain : bool
        Compute the eigenvalues of the linearized dynamics around the parting point to say why.
    initial_offset : dict, optional
        Added to the optimum's initial state, e.g. ``{"q2": 0.3}`` (a disturbance, to see the
        feedback at work).
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}, optional
        Collocation scheme of a trajectory table (a model knows its own; default Radau).
    interpolation : {'auto', 'polynomial', 'constant', 'state'}, optional
        How the controls between the collocation points are taken
        (:func:`pyomo_lap.verify.controls.controls_from_trajectory`); a model says it by its options
        ``piecewise_constant_controls`` and ``control_form`` (``'state'``: the polynomial
        through the element's start and collocation points), a table by default ``'auto'``
        (which never means ``'state'``: pass it for a table of an OCP with
        ``control_form = "state"``, as its ``summary.json`` says under ``ocp_options``).
    path_reference : {'polynomial', 'linear'}, optional
        With feedback: the reference path between the points. ``'polynomial'``: the states'
        collocation polynomials (through each element's start and collocation points, as the
        OCP has them; :func:`state_polynomials`); ``'linear'``: straight lines between the
        points (their chords leave the path by centimetres on elements of 10-20 m: on the
        default job a steering correction's RMS of 4.7e-4 rad against 1.6e-4 rad). Default:
        ``'polynomial'`` with ``interpolation='state'``, else ``'linear'``.
    track_step : float or None
        Grid step [m] on which the track is tabulated over the sector for the simulation
        (:class:`pyomo_lap.verify.simulate.TrackLookup`; errors of the order of 1e-9 of the
        track's own evaluation, about twice as fast a replay); None: the track's splines at
        every call.
    model : str or VehicleModel, optional
        A table's vehicle model (:meth:`SolvedTable.of`).

    Returns
    -------
    ReplayReport

    Raises
    ------
    ValueError
        A trajectory without the needed columns, a model without ``dynamics``.
    """
    sol = SolvedTable.of(source, model=model, start=start, scheme=scheme,
                         interpolation=interpolation)
    dyn = sol.dynamics(vehicle) if car is None else as_dynamics(car)
    df, start = sol.table, sol.start
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    s_ref = start + df["s_sector"].to_numpy(float)
    s_stop = s_ref[-1] if s_end is None else float(s_end)
    look = (TrackLookup(track, span=(s_ref[0] - 20.0, s_stop + 20.0), step=track_step)
            if track_step is not None else TrackLookup(track))
    ctl = _replay_controls(sol, dyn, vehicle, s_ref, basis, feedback, path_reference, look)
    x0, z0 = _initial_state(sol, dyn, initial_offset)
    t_span = float(df["t"].iloc[-1] - df["t"].iloc[0])
    sim = simulate(track, vehicle, ctl, x0, t_end=df["t"].iloc[0] + 3.0 * t_span + 10.0,
                   s_end=s_stop, z0=z0, method=method, rtol=rtol, car=dyn, track_lookup=look)
    use_fb = bool(feedback)
    names = tuple(dyn.names)
    comp = _comparison(df, sim, s_ref, s_stop, names, ctl if use_fb else None)
    first, maxdev, who, s_part, agree_s, agree_t = _parting(comp, tol, names)
    reason = _explain(sim, comp, who, s_part, tol, df, track, vehicle, dyn, start, explain)
    rep = ReplayReport(simulation=sim, comparison=comp, first_exceedance=first, tolerances=tol,
                       agree_until_s=agree_s, agree_until_t=agree_t, first_to_part=who,
                       max_deviation=maxdev, reason=reason, feedback=use_fb)
    if use_fb:
        c = comp["steer_correction"].to_numpy()
        rep.steer_correction_rms = float(np.sqrt(np.nanmean(c ** 2)))
        rep.steer_correction_max = float(np.nanmax(np.abs(c)))
    return rep


def _replay_controls(sol: SolvedTable, dyn, vehicle, s_ref, basis, feedback, path_reference,
                     look):
    """The control law of :func:`replay`: the optimum's controls
    (:func:`pyomo_lap.verify.controls.controls_from_trajectory`), with ``feedback`` wrapped in
    :class:`pyomo_lap.verify.simulate.PathFollowing` towards the optimal path (the model's
    lateral offset and heading, ``dyn.path``)."""
    df, interpolation, path = sol.table, sol.interpolation, dyn.path
    ctl = controls_from_trajectory(df, basis=basis, start=sol.start, interpolation=interpolation,
                                   scheme=sol.scheme, columns=dyn.controls)
    if path_reference is None:
        path_reference = "polynomial" if interpolation == "state" else "linear"
    if path_reference not in ("polynomial", "linear"):
        raise ValueError(f"path_reference = {path_reference!r}: expected 'polynomial' or 'linear'")
    if not feedback:
        return ctl
    opts = dict(feedback) if isinstance(feedback, dict) else {}
    if opts.get("k_v", 0) > 0:
        opts.setdefault("v_ref", df[path.speed].to_numpy(float))
    if path_reference == "polynomial":
        opts.setdefault("reference", state_polynomials(
            df, (path.lateral, path.heading, path.speed), start=sol.start, scheme=sol.scheme).at)
    return PathFollowing(ctl, s_ref, df[path.lateral].to_numpy(float),
                         df[path.heading].to_numpy(float), vehicle=vehicle, dynamics=dyn,
                         track_lookup=look, **opts)


def _initial_state(sol: SolvedTable, dyn, initial_offset: Optional[dict]) -> tuple:
    """The optimum's first point as the simulation's initial state ``x0`` (the model's state
    in time) with ``initial_offset`` added, and its algebraic variables ``z0``."""
    names0 = tuple(dyn.names)
    x0 = np.r_[sol.start + float(sol.table["s_sector"].iloc[0]), sol.columns(names0[1:])[0]]
    for k, dv in (initial_offset or {}).items():
        if k not in names0[1:]:
            raise ValueError(f"initial_offset: unknown state {k!r}; expected one of {names0[1:]}")
        x0[names0.index(k)] += float(dv)
    return x0, sol.columns(dyn.algebraic)[0]


def _comparison(df, sim: SimulationResult, s_ref, s_stop: float, names: tuple,
                feedback_law=None) -> pd.DataFrame:
    """:attr:`ReplayReport.comparison`: the optimum and the simulation at the optimum's
    points the simulation reached (with ``feedback_law``, its steering correction)."""
    keep = s_ref <= min(s_stop, sim.x[-1, 0]) + 1e-9
    xs = sim.at_s(s_ref[keep])
    comp = {"s": s_ref[keep], "t_opt": df["t"].to_numpy(float)[keep]}
    for k, name in enumerate(names[1:], start=1):
        opt = df[name].to_numpy(float)[keep]
        comp[f"{name}_opt"] = opt
        comp[f"{name}_sim"] = xs[:, k]
        comp[f"{name}_dev"] = xs[:, k] - opt
    comp["t_sim"] = xs[:, -1] - xs[0, -1] + df["t"].iloc[0]
    comp["t_dev"] = comp["t_sim"] - comp["t_opt"]
    if feedback_law is not None:
        comp["steer_correction"] = np.array([feedback_law.correction(xx[:len(names)])
                                             if np.all(np.isfinite(xx)) else np.nan for xx in xs])
    return pd.DataFrame(comp)


def _parting(comp: pd.DataFrame, tol: dict, names: tuple) -> tuple:
    """Where the replay leaves the optimum: ``(first_exceedance, max_deviation, first_to_part,
    s_part, agree_until_s, agree_until_t)`` (:class:`ReplayReport`; ``s_part`` NaN and
    ``first_to_part`` None when every state stays within its tolerance; a state without a
    tolerance never parts)."""
    first, maxdev = {}, {}
    for name in list(names[1:]) + ["t"]:
        d = np.abs(comp[f"{name}_dev"].to_numpy())
        maxdev[name] = float(np.nanmax(d)) if np.any(np.isfinite(d)) else float("nan")
        over = np.flatnonzero(d > tol.get(name, math.inf))
        first[name] = float(comp["s"].iloc[over[0]]) if len(over) else float("nan")
    parted = {k: v for k, v in first.items() if np.isfinite(v)}
    if parted:
        who = min(parted, key=parted.get)
        s_part = parted[who]
        i_part = int(np.searchsorted(comp["s"].to_numpy(), s_part))
        agree_s = float(comp["s"].iloc[max(i_part - 1, 0)])
        agree_t = float(comp["t_opt"].iloc[max(i_part - 1, 0)])
    else:
        who, s_part = None, float("nan")
        agree_s = float(comp["s"].iloc[-1])
        agree_t = float(comp["t_opt"].iloc[-1])
    return first, maxdev, who, s_part, agree_s, agree_t


def _explain(sim, comp, who, s_part, tol, df, track, vehicle, car, start, explain) -> str:
    parts = []
    if sim.status != "end":
        parts.append(f"the simulation ended early ({sim.status}): {sim.message}")
    if who is None:
        parts.append(f"all states stay within tolerance over the replayed range "
                     f"({comp['s'].iloc[0]:.0f}-{comp['s'].iloc[-1]:.0f} m)")
        return "; ".join(parts)
    d = comp[f"{who}_dev"].abs().to_numpy()
    s = comp["s"].to_numpy()
    i = int(np.searchsorted(s, s_part))
    # growth of the deviation over the 100 m before parting (e-folding length)
    j = int(np.searchsorted(s, s_part - 100.0))
    grow = ""
    if d[j] > 0 and d[i] > d[j]:
        efold = (s[i] - s[j]) / np.log(d[i] / d[j])
        grow = f", growing by a factor e every {efold:.0f} m over the last 100 m"
    parts.append(f"{who} leaves its tolerance {tol[who]:g} first, at s = {s_part:.1f} m "
                 f"(t = {comp['t_opt'].iloc[i]:.2f} s){grow}")
    if explain:
        lo = max(0, i - 40)
        sub = df.iloc[lo:i + 1:4]
        st = stability_along(sub, track, vehicle, car=car, start=start, model=car.model)
        k = int(np.argmax(st["max_real"].to_numpy()))
        lam = st["max_real"].iloc[k]
        use = st["adherence_use"].to_numpy()
        if lam > 1e-3:
            parts.append(f"before it the car is open-loop unstable: largest real eigenvalue "
                         f"{lam:.3g} 1/s at s = {st['s'].iloc[k]:.0f} m (mode {st['mode'].iloc[k]}), "
                         f"tyres used up to {np.nanmax(use):.0%} of their grip")
        else:
            parts.append(f"the linearized car is not unstable there (largest real eigenvalue "
                         f"{lam:.3f} 1/s, tyres used up to {np.nanmax(use):.0%}): the deviation "
                         "is the accumulated collocation error, carried by the neutral lateral "
                         "position and heading")
    return "; ".join(parts)
