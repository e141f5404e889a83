r"""A-posteriori checks of a solved ``racecar`` result (dymos's racecar, :mod:`pyomo_lap.ocp.racecar`):
the collocation defects, a segmented replay with the path-following driver, the channels'
zig-zags and speed consistency, and the friction ellipses and the power along the replay;
the racecar's part of ``pyomo-lap validate`` (:func:`pyomo_lap.api.validate.validate_results`).

The checks are those of the full model, measured the same way and judged against the same
thresholds (:mod:`pyomo_lap.verify.verdict`), on the racecar's states and equations:

* **defects** (:func:`racecar_defects`): on element :math:`j` the states (``t`` and
  :data:`~pyomo_lap.vehicle.racecar_equations.STATE_NAMES`) are the Lagrange polynomial
  :math:`x_j(s)` through the element's start and collocation points (pyomo.dae's), the
  controls the polynomial the OCP has (``control_form = "state"``: through the same points;
  ``"point"``: through the collocation points). At Gauss points between them the residual of
  the spatial ODE, :math:`r_i = dx_i/ds - \dot x_i/\dot s` (the racecar's OCP is in
  :math:`s`, ``m.ode``), is integrated over the element: :math:`\eta_{j,i} = \int |r_i|\,ds`,
  and :math:`\varepsilon_j = \max_i \eta_{j,i}/(1 + \max_k|x_i(s_k)|)`, the scaled defect of
  the full model (:func:`pyomo_lap.verify.defects.collocation_defects`, Betts), judged by
  :data:`~pyomo_lap.verify.verdict.DEFECT_MAX` and :data:`~pyomo_lap.verify.verdict.DEFECT_P95`.
  With ``shooting`` also the local error: :func:`scipy.integrate.solve_ivp` of
  :math:`dx/ds = \dot x/\dot s` from the element's start state with the element's control
  polynomial to its end, the difference from the collocation state there over the same
  weights (reported, not judged, as for the full model);
* **replay** (:func:`racecar_replay`): segments of
  :data:`~pyomo_lap.verify.verdict.REPLAY_SEGMENT_S` of the optimum's time
  (:func:`pyomo_lap.verify.replay.segment_rows`), each integrated in time with ``solve_ivp``
  from the optimum's state at its start, with the optimum's controls
  (:func:`pyomo_lap.verify.controls.controls_from_trajectory`) and the look-ahead driver
  :data:`~pyomo_lap.verify.verdict.REPLAY_DRIVER` on the steering
  (:func:`pyomo_lap.verify.simulate.preview_steering` towards the states' collocation
  polynomials of ``n`` and ``alpha``, :func:`pyomo_lap.verify.replay.state_polynomials`). Judged
  as the full model's: shortfall, lateral deviation (% of the track's width), time (% of the
  sector time), the steering correction (% of the car's steering scale, the wheelbase times
  the track's RMS curvature, :func:`racecar_scales`; the racecar has no steer limit); and, on
  the replay's states and applied controls, the friction ellipses :math:`c_{ij} \le 1` and the
  power :math:`V S_{all} \le P_{max}` (their excess in % of the limit, judged by
  :data:`~pyomo_lap.verify.verdict.POWER_LIMIT`, the OCP's rows' tolerance);
* **channels** (:func:`racecar_channel_quality`): the zig-zags of
  :data:`pyomo_lap.verify.quality.SMOOTHNESS_CHECKS` on the racecar's columns
  (:data:`RACECAR_SMOOTHNESS_CHECKS`: the same fractions of the same scales) and the speed
  consistency with the tangential acceleration :math:`\dot V` of the racecar's equations.

Every equation is evaluated by :func:`pyomo_lap.vehicle.racecar_equations.racecar_equations`
(the one the OCP is built with), on NumPy arrays. Source of the equations: dymos,
``dymos/examples/racecar`` (``carODE.py``, ``tireODE.py``, ``tireConstraintODE.py``,
``normalForceODE.py``, ``accelerationODE.py``, ``timeODE.py``).

Units: SI. Layer: verify (imports vehicle, ocp-free).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Optional

import numpy as np
import pandas as pd

from ..ocp.collocation import element_points, lagrange_basis
from ..vehicle.racecar_equations import (CONTROLS, STATE_NAMES, THRUST_EPS, WHEELS,
                                         racecar_equations, state_rates)

__all__ = ["racecar_scales", "racecar_channel_quality", "racecar_defects", "racecar_replay",
           "RACECAR_SMOOTHNESS_CHECKS", "RACECAR_DEFECT_STATES", "COLUMN_OF", "RacecarReplay",
           "table_states", "KappaLookup"]

RACECAR_DEFECT_STATES = ("t",) + STATE_NAMES
"""The states of the racecar's spatial ODE whose defects are measured (``lam`` is the table's
column ``lambda``)."""

COLUMN_OF = {k: ("lambda" if k == "lam" else k) for k in RACECAR_DEFECT_STATES}
"""The trajectory table's column of each state (:func:`pyomo_lap.ocp.racecar.racecar_trajectory`)."""

_CHANNEL_OF = {"f_11z": "N_fl", "f_12z": "N_fr", "f_21z": "N_rl", "f_22z": "N_rr",
               "a_x": "ax", "a_y": "ay"}


def _racecar_smoothness_checks() -> tuple:
    from .quality import SMOOTHNESS_CHECKS
    out = []
    for chk in SMOOTHNESS_CHECKS:
        if chk.channel in ("delta", "speed"):
            out.append(chk)
        elif chk.channel in _CHANNEL_OF:
            out.append(dataclasses.replace(chk, channel=_CHANNEL_OF[chk.channel]))
    return tuple(out)


RACECAR_SMOOTHNESS_CHECKS = _racecar_smoothness_checks()
"""The zig-zag checks of :data:`pyomo_lap.verify.quality.SMOOTHNESS_CHECKS` on the racecar's
columns, with the same fractions of the same scales: ``delta`` (steer), ``speed``, the tyre
loads ``N_fl .. N_rr`` (for ``f_11z .. f_22z``), the lagged accelerations ``ax``, ``ay``
(for ``a_x``, ``a_y``). The slip angles are not columns of the racecar's table."""


def racecar_scales(p, df=None) -> dict:
    r"""The racecar's scales of the channels, as :func:`pyomo_lap.verify.quality.channel_scales`
    gives them for the full model's cars, from the racecar's parameters (SI units).

    Parameters
    ----------
    p : RacecarParameters
    df : DataFrame, optional
        A trajectory table with ``Omega_z`` (the track's curvature [1/m]) and ``s_sector`` or
        ``s`` [m], for the steering scale.

    Returns
    -------
    dict
        ``steer``: the wheelbase :math:`a + b` times the RMS curvature of the table's track
        (:func:`pyomo_lap.verify.quality.rms_curvature`) [rad]; ``speed``: the top speed where
        the power equals the drag, :math:`(P_{max}/(\tfrac12\rho C_dA))^{1/3}`, at most
        :data:`pyomo_lap.verify.quality.SPEED_CAP_MPS` [m/s]; ``force``: the largest tyre
        force, :math:`\max(\mu_{0x}, \mu_{0y})(M g + \tfrac12\rho C_lA v_{top}^2)` [N]
        (:func:`pyomo_lap.vehicle.car.force_scale`'s definition); ``acceleration``: the
        force scale over the mass [m/s^2].
    """
    from .quality import SPEED_CAP_MPS, rms_curvature
    drag = 0.5 * p.rho * p.CdA
    v_top = min(SPEED_CAP_MPS, (p.P_max / drag) ** (1.0 / 3.0)) if drag > 0 else SPEED_CAP_MPS
    force = max(p.mu0_x, p.mu0_y) * (p.M * p.g + 0.5 * p.rho * p.ClA * v_top ** 2)
    return {"steer": float(p.wheelbase * rms_curvature(df)), "speed": float(v_top),
            "force": float(force), "acceleration": float(force / p.M)}


def table_states(df) -> dict:
    """The states :data:`RACECAR_DEFECT_STATES` and controls of a racecar trajectory table, as
    arrays by name (``lam`` from the column ``lambda``).

    Raises
    ------
    ValueError
        A missing column (named).
    """
    need = [COLUMN_OF[k] for k in RACECAR_DEFECT_STATES] + list(CONTROLS) + ["s_sector", "element"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"the trajectory lacks the racecar's column(s) {missing} (a table of "
                         "pyomo_lap.ocp.racecar.racecar_trajectory expected)")
    out = {k: df[COLUMN_OF[k]].to_numpy(float) for k in RACECAR_DEFECT_STATES}
    out.update({c: df[c].to_numpy(float) for c in CONTROLS})
    return out


def racecar_channel_quality(df, p, eps: float = THRUST_EPS) -> dict:
    r"""The zig-zags and the speed consistency of a racecar table
    (:func:`pyomo_lap.verify.quality.channel_quality` with :data:`RACECAR_SMOOTHNESS_CHECKS`,
    :func:`racecar_scales` and the tangential acceleration :math:`\dot V` of the racecar's
    equations at the table's points; the OCP's ``thrust_eps`` is ``eps``)."""
    from .quality import channel_quality
    x = table_states(df)
    rates = state_rates(p, x, {c: x[c] for c in CONTROLS}, df["Omega_z"].to_numpy(float), eps)
    return channel_quality(df, p, checks=RACECAR_SMOOTHNESS_CHECKS, scales=racecar_scales(p, df),
                           a_t=np.asarray(rates["V"], float))


class KappaLookup:
    """The track's curvature (``omega_z`` of the centre line [1/m]) at a track coordinate,
    tabulated on a grid of ``step`` [m] over ``span`` and interpolated linearly (a step of the
    curvature, straight to arc, is smeared over one step); outside ``span`` the track itself.
    Closed tracks wrap at their length (:func:`pyomo_lap.ocp.sector._sector_points` does so
    for the OCP)."""

    def __init__(self, track, span: tuple, step: float = 0.05):
        self.track = track
        a, b = float(span[0]), float(span[1])
        n = max(int(math.ceil((b - a) / step)), 2)
        self.grid = np.linspace(a, b, n + 1)
        self.values = self.exact(self.grid)

    def exact(self, s) -> np.ndarray:
        """The track's curvature at ``s`` [m] (array), evaluated."""
        s = np.atleast_1d(np.asarray(s, float))
        if self.track.closed:
            s = np.mod(s, self.track.length)
        else:
            s = np.clip(s, 0.0, self.track.length)
        return self.track.evaluate(s).omega[:, 2]

    def __call__(self, s: float) -> float:
        """The curvature at ``s`` [m]: interpolated on the grid, evaluated outside it [1/m]."""
        if self.grid[0] <= s <= self.grid[-1]:
            return float(np.interp(s, self.grid, self.values))
        return float(self.exact(s)[0])


# ------------------------------------------------------------------------------ defects
def _spatial_rates(p, x: dict, u: dict, kappa, eps: float) -> np.ndarray:
    """``dx/ds = x_dot / s_dot`` for :data:`RACECAR_DEFECT_STATES` (rows), on arrays."""
    return _spatial_of(state_rates(p, x, u, kappa, eps))


def _spatial_of(r: dict) -> np.ndarray:
    """``dx/ds`` (rows :data:`RACECAR_DEFECT_STATES`) from :func:`state_rates`' result."""
    sd = np.asarray(r["s"], float)
    return np.array([np.broadcast_to(np.asarray(r[k], float), sd.shape) / sd
                     for k in RACECAR_DEFECT_STATES])


def plan_limits(p, x: dict, u: dict, kappa, eps: float = THRUST_EPS) -> dict:
    """The largest friction-ellipse use of the four tyres ``c_max`` [-] (<= 1 within the
    ellipses) and the tractive power ``power`` [W] (<= ``P_max``) at states ``x`` and
    controls ``u`` (arrays of one shape; :func:`pyomo_lap.vehicle.racecar_equations.racecar_equations`,
    dymos's ``tireConstraintODE`` and ``carODE``)."""
    return _limits_of(racecar_equations(p, x, u, kappa, eps))


def _limits_of(q: dict) -> dict:
    """:func:`plan_limits` from :func:`racecar_equations`' result."""
    c = np.max(np.array([np.asarray(q["c"][w], float) for w in q["c"]]), axis=0)
    return {"c_max": c, "power": np.asarray(q["power"], float) * np.ones_like(c)}


def racecar_defects(df, track, p, *, start: float = 0.0, scheme: str = "LAGRANGE-RADAU",
                    interpolation: str = "state", n_gauss: Optional[int] = None,
                    shooting: bool = True, eps: float = THRUST_EPS):
    r"""The collocation defects of a racecar result (module docstring), as the full model's
    :class:`pyomo_lap.verify.defects.DefectReport`.

    Parameters
    ----------
    df : DataFrame
        The trajectory table (:func:`pyomo_lap.ocp.racecar.racecar_trajectory`: ``s_sector``,
        ``element``, ``t``, the states, ``delta``, ``thrust``).
    track : Track
        The track of the solve.
    p : RacecarParameters
    start : float
        The sector's start on the track [m].
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
    interpolation : {'state', 'polynomial', 'auto', 'constant'}
        The controls between the points: ``'state'`` (OCP option ``control_form = "state"``,
        the racecar's default), the polynomial through the element's start and collocation
        points; otherwise the polynomial through the collocation points.
    n_gauss : int, optional
        Gauss-Legendre points per element (default: the element's nodes + 1).
    shooting : bool
        Also the local error of each element by ``solve_ivp`` (columns ``shoot_<state>``
        [state unit] and ``shoot_eps`` [-], scaled as ``eps``).
    eps : float
        The model's ``thrust_eps`` [-].

    Returns
    -------
    DefectReport
        ``elements``: ``element``, ``s_start``, ``s_end``, ``h`` [m], ``eta_<state>``,
        ``eps``, ``worst``; ``points``: the residuals at the Gauss points and the plan's
        friction use ``c_max`` [-] and power [W] there (:func:`plan_limits`); ``node_residual``:
        the largest |residual| at the collocation points [state unit / m] (the solver's
        tolerance); ``weights``: ``1 + max|x_i|``.

    Raises
    ------
    ValueError
        Missing columns, an unknown scheme, elements without points.
    """
    from .defects import DefectReport
    t0 = time.perf_counter()
    if scheme not in ("LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"):
        raise ValueError(f"scheme = {scheme!r}: expected 'LAGRANGE-RADAU' or 'LAGRANGE-LEGENDRE'")
    x = table_states(df)
    s = df["s_sector"].to_numpy(float)
    el = df["element"].to_numpy().astype(int)
    X = np.column_stack([x[k] for k in RACECAR_DEFECT_STATES])
    U = np.column_stack([x[c] for c in CONTROLS])
    wvec = 1.0 + np.max(np.abs(X), axis=0)
    groups = element_points(el, s, scheme)
    nodes = [np.r_[i0, idx] for i0, idx in groups]
    ng = n_gauss or len(nodes[0]) + 1
    gx, gw = np.polynomial.legendre.leggauss(ng)
    gx, gw = 0.5 * (gx + 1.0), 0.5 * gw
    ends = [int(np.flatnonzero(el == j)[-1]) for j in range(1, len(groups) + 1)]
    a = s[[nd[0] for nd in nodes]]
    b = s[ends]
    h = b - a
    kap = KappaLookup(track, (start + s[0] - 1.0, start + s[-1] + 1.0))
    xs, dxs, us, sg = _at_gauss_points(X, U, s, nodes, a, h, gx, interpolation)
    # once at the Gauss points: the rates (the residual), the friction use and the power
    eq = racecar_equations(p, {k: xs[:, i] for i, k in enumerate(RACECAR_DEFECT_STATES)},
                           {c: us[:, i] for i, c in enumerate(CONTROLS)}, kap.exact(start + sg), eps)
    f = _spatial_of({"s": eq["s_dot"], **eq["rates"]})
    res = dxs - f.T                                           # (N ng, 8)
    eta = h[:, None] * np.einsum("g,jgi->ji", gw, np.abs(res).reshape(len(nodes), ng, -1))
    scaled = eta / wvec
    k = np.argmax(np.where(np.isfinite(scaled), scaled, np.inf), axis=1)
    rows = {"element": np.arange(1, len(nodes) + 1), "s_start": a, "s_end": b, "h": h}
    rows.update({f"eta_{st}": eta[:, i] for i, st in enumerate(RACECAR_DEFECT_STATES)})
    rows["eps"] = scaled[np.arange(len(nodes)), k]
    rows["worst"] = [RACECAR_DEFECT_STATES[i] for i in k]
    elements = pd.DataFrame(rows)
    points = pd.DataFrame({"s_sector": sg, "element": np.repeat(np.arange(1, len(nodes) + 1), ng),
                           **{f"res_{st}": res[:, i] for i, st in enumerate(RACECAR_DEFECT_STATES)},
                           **_limits_of(eq)})
    node_res = _node_residuals(p, X, U, s, nodes, a, h, df["Omega_z"].to_numpy(float)
                               if "Omega_z" in df.columns else kap.exact(start + s), eps)
    if shooting:
        _shooting(elements, X, U, s, nodes, ends, p, kap, start, interpolation, eps, wvec)
    return DefectReport(elements=elements, points=points,
                        node_residual=dict(zip(RACECAR_DEFECT_STATES, node_res)),
                        weights=dict(zip(RACECAR_DEFECT_STATES, wvec)),
                        wall_time_s=time.perf_counter() - t0)


def _at_gauss_points(X, U, s, nodes, a, h, gx, interpolation: str) -> tuple:
    """The states, their derivatives in ``s``, the controls (the polynomial through the
    element's start and collocation points for ``interpolation = "state"``, else through the
    collocation points) and the positions [m], at the Gauss points ``gx`` (on [0, 1]) of
    every element, element after element."""
    xs, dxs, us, sg = [], [], [], []
    for j, nd in enumerate(nodes):
        xi = (s[nd] - a[j]) / h[j]
        L, dL = lagrange_basis(xi, gx, derivative=True)
        xs.append(L @ X[nd])
        dxs.append(dL @ X[nd] / h[j])
        if interpolation == "state":
            us.append(L @ U[nd])
        else:
            Lu = lagrange_basis(xi[1:], gx)
            us.append(Lu @ U[nd[1:]])
        sg.append(a[j] + h[j] * gx)
    return tuple(np.concatenate(v) for v in (xs, dxs, us, sg))


def _node_residuals(p, X, U, s, nodes, a, h, kappa, eps: float) -> np.ndarray:
    """The largest |residual| of each state at the collocation points [state unit / m]: the
    ODE as the solver satisfied it (``nodes``: each element's rows, its start first; ``a``,
    ``h``: the elements' starts and lengths [m]; ``kappa``: the curvature at the table's rows,
    as the OCP had it, its column ``Omega_z``: at an element's last point the curvature
    before a junction, :func:`pyomo_lap.ocp.racecar._curvature_in_elements`)."""
    node_res = np.zeros(len(RACECAR_DEFECT_STATES))
    pts = np.concatenate([nd[1:] for nd in nodes])
    fn = _spatial_rates(p, {k2: X[pts, i] for i, k2 in enumerate(RACECAR_DEFECT_STATES)},
                        {c: U[pts, i] for i, c in enumerate(CONTROLS)},
                        np.asarray(kappa, float)[pts], eps).T
    row = 0
    for j, nd in enumerate(nodes):
        xi = (s[nd] - a[j]) / h[j]
        _, dLn = lagrange_basis(xi, xi[1:], derivative=True)
        dx = dLn @ X[nd] / h[j]
        node_res = np.maximum(node_res, np.max(np.abs(dx - fn[row:row + len(nd) - 1]), axis=0))
        row += len(nd) - 1
    return node_res


def _shooting(elements, X, U, s, nodes, ends, p, kap, start, interpolation, eps, wvec) -> None:
    """The local error of each element by ``solve_ivp`` in ``s`` (columns ``shoot_<state>``,
    ``shoot_eps``), NaN where the integration failed."""
    from scipy.integrate import solve_ivp

    out = np.full((len(nodes), len(RACECAR_DEFECT_STATES)), np.nan)
    for j, nd in enumerate(nodes):
        cn = nd if interpolation == "state" else nd[1:]
        sn, Un = s[cn], U[cn]

        def rhs(ss, y, _sn=sn, _Un=Un):
            u = (lagrange_basis(_sn, ss) @ _Un)[0]
            xx = dict(zip(RACECAR_DEFECT_STATES, y))
            return _spatial_rates(p, xx, dict(zip(CONTROLS, u)), kap(start + ss), eps)
        try:
            sol = solve_ivp(rhs, (s[nd[0]], s[ends[j]]), X[nd[0]], rtol=1e-9, atol=1e-9)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            continue
        if sol.success:
            out[j] = sol.y[:, -1] - X[ends[j]]
    for i, st in enumerate(RACECAR_DEFECT_STATES):
        elements[f"shoot_{st}"] = out[:, i]
    elements["shoot_eps"] = np.max(np.abs(out) / wvec, axis=1)


# ------------------------------------------------------------------------------ replay
@dataclasses.dataclass
class RacecarReplay:
    """The segmented replay of :func:`racecar_replay`.

    Attributes
    ----------
    segments : list of (float, float)
        Each segment's start and end on the track [m].
    status : list of str
        Each segment's end: ``"end"`` (reached), ``"spin"`` (``|alpha|`` or ``|lambda|`` at
        the OCP's bounds), ``"stopped"`` (``V`` below the OCP's ``v_min``), ``"time"`` (three
        times the optimum's time and 10 s), ``"failed"`` (the integrator).
    comparison : DataFrame
        At the optimum's points each replay reached: ``s`` [m], ``n_opt``, ``n_sim``,
        ``n_dev`` [m], ``V_opt``, ``V_sim``, ``V_dev`` [m/s], ``alpha_dev`` [rad],
        ``steer_correction`` [rad], ``width`` [m].
    trace : DataFrame
        The replays on a fine time grid: ``s``, ``t`` (from each segment's start) [s], the
        states, the applied ``delta``, ``thrust``, ``steer_correction``, ``c_max`` (the
        largest friction-ellipse use of the four tyres [-]) and ``power`` [W].
    shortfall_m, time_dev_s : float
        The distance the segments fell short of their ends, summed [m]; the sizes of the
        segments' time differences from the optimum, summed [s].
    steer_correction_max, steer_correction_rms : float
        At the comparison's points [rad].
    c_max, c_max_at, power_max, power_max_at : float
        The largest friction use [-] and power [W] along the replay and where [m].
    wall_time_s : float
    """

    segments: list
    status: list
    comparison: pd.DataFrame
    trace: pd.DataFrame
    shortfall_m: float
    time_dev_s: float
    steer_correction_max: float
    steer_correction_rms: float
    c_max: float
    c_max_at: float
    power_max: float
    power_max_at: float
    wall_time_s: float

    def summary(self) -> dict:
        """Headline numbers (JSON-friendly)."""
        c = self.comparison
        return {"segments": [[float(a), float(b)] for a, b in self.segments],
                "status": list(self.status), "shortfall_m": self.shortfall_m,
                "time_dev_s": self.time_dev_s,
                "max_deviation": {"n": float(np.nanmax(np.abs(c["n_dev"]))) if len(c) else None,
                                  "V": float(np.nanmax(np.abs(c["V_dev"]))) if len(c) else None},
                "steer_correction_max_rad": self.steer_correction_max,
                "steer_correction_rms_rad": self.steer_correction_rms,
                "c_max": self.c_max, "c_max_at_m": self.c_max_at,
                "power_max_W": self.power_max, "power_max_at_m": self.power_max_at,
                "wall_time_s": self.wall_time_s}


def racecar_replay(df, track, p, segment_s: float, driver: dict, *, start: float = 0.0,
                   scheme: str = "LAGRANGE-RADAU", interpolation: str = "state",
                   v_min: float = 1.0, rtol: float = 1e-6, eps: float = THRUST_EPS,
                   ) -> RacecarReplay:
    r"""Replay a racecar result in segments with the path-following driver (module docstring).

    The car's states :math:`(s, n, V, \alpha, \lambda, \omega, a_x, a_y)` are integrated in
    time (:func:`scipy.integrate.solve_ivp`, RK45) with :math:`\dot s` and :math:`\dot x` of
    :func:`pyomo_lap.vehicle.racecar_equations.state_rates`; the controls are the optimum's at
    the car's :math:`s`, the steer angle plus the driver's correction
    :func:`pyomo_lap.verify.simulate.preview_steering` (:math:`e_y = n^* - n`, :math:`e_\psi =
    \alpha^* - \alpha`, the speed :math:`\dot s`).

    Parameters
    ----------
    df : DataFrame
        The trajectory table.
    track : Track
    p : RacecarParameters
    segment_s : float
        The segments' length in the optimum's time [s] (:func:`pyomo_lap.verify.replay.segment_rows`).
    driver : dict
        ``gain`` [rad/m], ``preview_time`` [s], ``preview_min`` [m].
    start : float
        The sector's start on the track [m].
    scheme, interpolation
        Of the OCP (as :func:`racecar_defects`).
    v_min : float
        A replay whose speed falls below this [m/s] stopped.
    rtol : float
        The integrator's relative tolerance.
    eps : float
        The model's ``thrust_eps`` [-].

    Returns
    -------
    RacecarReplay
    """
    from .replay import segment_rows
    t0 = time.perf_counter()
    x = table_states(df)
    s_tab = start + df["s_sector"].to_numpy(float)
    car = _DrivenCar(df, track, p, driver, start, scheme, interpolation, eps)
    width = df["width_left"].to_numpy(float) + df["width_right"].to_numpy(float)
    segments, status, comps, traces = [], [], [], []
    short = tdev = 0.0
    for a, b in segment_rows(df, segment_s):
        y0 = [s_tab[a]] + [x[k][a] for k in STATE_NAMES]
        T_opt = x["t"][b] - x["t"][a]
        st, sol = car.drive(y0, s_tab[b], T_opt, rtol, v_min)
        segments.append((float(s_tab[a]), float(s_tab[b])))
        status.append(st)
        if sol is None or len(sol.t) < 2:
            short += s_tab[b] - s_tab[a]
            continue
        if st == "end":
            tdev += abs(sol.t[-1] - T_opt)
        else:
            short += max(0.0, s_tab[b] - sol.y[0, -1])
        tr = car.trace(sol)
        traces.append(tr)
        rows = np.arange(a, b + 1)
        comps.append(_compared(tr, x, s_tab, width, rows))
    return _replay_result(segments, status, comps, traces, short, tdev, t0)


def _compared(tr: pd.DataFrame, x: dict, s_tab, width, rows) -> pd.DataFrame:
    """:attr:`RacecarReplay.comparison` of one segment: the replay's trace ``tr`` against the
    optimum ``x`` at the table's ``rows`` it reached."""
    ss = tr["s"].to_numpy(float)
    rows = rows[s_tab[rows] <= ss[-1] + 1e-9]
    sim = {k: np.interp(s_tab[rows], ss, tr[k].to_numpy(float)) for k in STATE_NAMES}
    return pd.DataFrame({
        "s": s_tab[rows], "n_opt": x["n"][rows], "n_sim": sim["n"],
        "n_dev": sim["n"] - x["n"][rows], "V_opt": x["V"][rows], "V_sim": sim["V"],
        "V_dev": sim["V"] - x["V"][rows], "alpha_dev": sim["alpha"] - x["alpha"][rows],
        "steer_correction": np.interp(s_tab[rows], ss, tr["steer_correction"].to_numpy(float)),
        "width": width[rows]})


def _replay_result(segments, status, comps, traces, short, tdev, t0) -> RacecarReplay:
    """The segments' replays put together (:class:`RacecarReplay`)."""
    comp = pd.concat(comps, ignore_index=True) if comps else pd.DataFrame(
        columns=["s", "n_dev", "V_dev", "steer_correction", "width"])
    trace = pd.concat(traces, ignore_index=True) if traces else pd.DataFrame(
        columns=["s", "c_max", "power"])
    corr = comp["steer_correction"].to_numpy(float)
    nan = float("nan")
    kc = int(np.nanargmax(trace["c_max"])) if len(trace) else 0
    kp = int(np.nanargmax(trace["power"])) if len(trace) else 0
    return RacecarReplay(
        segments=segments, status=status, comparison=comp, trace=trace, shortfall_m=float(short),
        time_dev_s=float(tdev),
        steer_correction_max=float(np.nanmax(np.abs(corr))) if len(corr) else nan,
        steer_correction_rms=float(np.sqrt(np.nanmean(corr ** 2))) if len(corr) else nan,
        c_max=float(trace["c_max"].iloc[kc]) if len(trace) else nan,
        c_max_at=float(trace["s"].iloc[kc]) if len(trace) else nan,
        power_max=float(trace["power"].iloc[kp]) if len(trace) else nan,
        power_max_at=float(trace["s"].iloc[kp]) if len(trace) else nan,
        wall_time_s=time.perf_counter() - t0)


class _DrivenCar:
    """The racecar driven along a result (:func:`racecar_replay`): the optimum's controls at
    the car's ``s`` (:func:`pyomo_lap.verify.controls.controls_from_trajectory`), the steer
    angle plus the look-ahead driver's correction towards the states' collocation
    polynomials of ``n`` and ``alpha``; the state ``y = (s, n, V, alpha, lam, omega, ax,
    ay)`` [SI], integrated in time."""

    NAMES = ("s",) + STATE_NAMES

    def __init__(self, df, track, p, driver: dict, start: float, scheme: str,
                 interpolation: str, eps: float):
        from .replay import state_polynomials
        from .controls import controls_from_trajectory
        s_tab = start + df["s_sector"].to_numpy(float)
        self.p, self.eps = p, eps
        self.ctl = controls_from_trajectory(
            df, basis="s", start=start, scheme=scheme, columns=CONTROLS,
            interpolation="state" if interpolation == "state" else "auto")
        self.ref = state_polynomials(df, ("n", "alpha", "V"), start=start, scheme=scheme).at
        self.kap = KappaLookup(track, (s_tab[0] - 50.0, s_tab[-1] + 50.0))
        self.gain, self.preview_time = driver["gain"], driver["preview_time"]
        self.preview_min = driver["preview_min"]

    def controls(self, y) -> tuple:
        """Applied ``(delta [rad], thrust [-], the steering correction [rad])`` at ``y``."""
        from .simulate import preview_steering
        s, n, V, alpha, lam = y[0], y[1], y[2], y[3], y[4]
        u = self.ctl.at(s)
        r = self.ref(s)
        sd = V * math.cos(alpha - lam) / (1.0 - n * self.kap(s))
        corr = preview_steering(r[0] - n, r[1] - alpha, sd, self.gain, self.preview_time,
                                self.preview_min)
        return u[0] + corr, u[1], corr

    def rhs(self, t, y):
        d, th, _ = self.controls(y)
        r = state_rates(self.p, dict(zip(self.NAMES, y)), {"delta": d, "thrust": th},
                        self.kap(y[0]), self.eps)
        return [r["s"]] + [r[k] for k in STATE_NAMES]

    def drive(self, y0, s_end: float, T_opt: float, rtol: float, v_min: float) -> tuple:
        """From ``y0`` until ``s = s_end``, a spin (``|alpha| = pi/2`` or ``|lam| = 0.5``, the
        OCP's bounds), a stop (``V < v_min``) or ``3 T_opt + 10`` s; returns (status, the
        ``solve_ivp`` solution with dense output, or None)."""
        from scipy.integrate import solve_ivp

        def ev(fun):
            fun.terminal = True
            return fun
        events = [ev(lambda t, y: y[0] - s_end), ev(lambda t, y: math.pi / 2 - abs(y[3])),
                  ev(lambda t, y: 0.5 - abs(y[4])), ev(lambda t, y: y[2] - v_min)]
        try:
            sol = solve_ivp(self.rhs, (0.0, 3.0 * T_opt + 10.0), y0, rtol=rtol, atol=1e-8,
                            events=events, dense_output=True)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return "failed", None
        hit = [len(e) > 0 for e in sol.t_events]
        st = ("end" if hit[0] else "spin" if hit[1] or hit[2] else "stopped" if hit[3]
              else "time" if sol.success else "failed")
        return st, sol

    def trace(self, sol) -> pd.DataFrame:
        """A segment's replay every 5 ms (at least 200 points): :attr:`RacecarReplay.trace`."""
        T = sol.t[-1]
        tt = np.linspace(0.0, T, max(200, int(T / 0.005)))
        Y = sol.sol(tt)
        U = np.array([self.controls(Y[:, i]) for i in range(len(tt))])
        kk = np.array([self.kap(v) for v in Y[0]])
        eq = racecar_equations(self.p, dict(zip(STATE_NAMES, Y[1:])),
                               {"delta": U[:, 0], "thrust": U[:, 1]}, kk, self.eps)
        return pd.DataFrame({"s": Y[0], "t": tt, **dict(zip(STATE_NAMES, Y[1:])),
                             "delta": U[:, 0], "thrust": U[:, 1], "steer_correction": U[:, 2],
                             "c_max": np.max([eq["c"][w] for w in WHEELS], axis=0),
                             "power": eq["power"]})
