r"""The racecar of dymos's example as a vehicle model of this project (``model = "racecar"``).

The optimal control problem of ``dymos/examples/racecar`` (OpenMDAO dymos; its ODE in
``carODE.py``, ``normalForceODE.py``, ``tireODE.py``, ``tireConstraintODE.py``,
``accelerationODE.py``, ``timeODE.py``; the problem in ``test/test_racecar.py``), written
through the vehicle-model interface (:class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`,
``docs/vehicle_models.md``) on a flat track with curvature :math:`\kappa(s) = \Omega_z` in the
Frenet frame of its centre line. Parameters: :class:`pyomo_lap.vehicle.racecar.RacecarParameters`
(``models/dymos_racecar.toml``). The reproduction and the comparison with dymos's published
lap: ``docs/racecar.md``.

States over the distance :math:`s`: time ``t``, lateral offset ``n`` (+ left), speed ``V``,
heading relative to the centre line ``alpha``, body slip angle ``lam`` (:math:`\lambda`),
yaw rate ``omega``, the lagged accelerations ``ax``, ``ay``. Controls: steer angle ``delta``
and the signed longitudinal command ``thrust`` (positive: rear-axle traction; negative:
braking, split front/rear by the brake bias :math:`\beta`). With :math:`\dot s = V\cos(\alpha -
\lambda)/(1 - n\kappa)` every state obeys :math:`dx/ds = \dot x / \dot s`, written here as
:math:`V\cos(\alpha - \lambda)\, dx/ds = (1 - n\kappa)\,\dot x` (``m.ode``), with

.. math::
    \dot n &= V\sin(\alpha - \lambda), \qquad
    \dot\alpha = \omega - \kappa\dot s,\\
    \dot V &= (S_{all} - \delta F_f - \tfrac12\rho C_dA V^2)/M - \omega V\lambda,\\
    \dot\lambda &= \omega - \dot V\lambda/V - \delta S_f/(MV) - F_{all}/(MV),\\
    \dot\omega &= \big(a F_f - b F_r + t_w(-S_{rr} + S_{rl} - S_{fr} + S_{fl})\big)/I_z,\\
    \dot a_x &= (\dot V + \omega V\lambda - a_x)/\tau_x, \qquad
    \dot a_y = (\omega V - (V\dot\lambda + \dot V\lambda) - a_y)/\tau_y,\qquad \dot t = 1,

tyre loads :math:`N_{ij}` (static share, load transfer through :math:`a_x, a_y`, downforce
split at the centre of pressure), longitudinal forces :math:`S_{fj} = -\tfrac{Mg}{2}\beta
b_r`, :math:`S_{rj} = \tfrac{Mg}{2}(t_h - (1-\beta) b_r)` with throttle
:math:`t_h = \max(\text{thrust}, 0)` and brake :math:`b_r = \max(-\text{thrust}, 0)`, lateral
forces :math:`F_{ij} = N_{ij} k_\lambda \times` (the tyre's slip angle), path constraints
``c_ij`` :math:`= (S_{ij}/(N_{ij}\mu_x))^2 + (F_{ij}/(N_{ij}\mu_y))^2 \le 1` (four friction
ellipses) and ``power`` :math:`= V S_{all} \le P_{max}`; the track limits bound ``n``. These
equations are written once, in :func:`pyomo_lap.vehicle.racecar_equations.racecar_equations`
(with the ODE over the distance as residuals,
:func:`~pyomo_lap.vehicle.racecar_equations.spatial_ode_residuals`, the recorded rows' form),
which builds the model's named Expressions here and evaluates the car on floats for the
simulation and the checks of ``pyomo-lap validate``, which reach them as the model's dynamics
(:class:`RacecarDynamics`).
The lap is closed by periodicity of ``n, V, alpha, lam, omega, ax, ay`` (not ``t``, not the controls:
dymos links exactly these), ``t(0) = 0``, and the objective is ``t`` at the end.

Differences from dymos, each an option here so that its effect can be measured
(``docs/racecar.md``):

* ``max(x, 0)`` of the throttle/brake split (dymos: ``numpy.sign``, not differentiable at 0)
  is :math:`(x + \sqrt{x^2 + \epsilon^2})/2` with ``thrust_eps`` (default 1e-4, the command is
  of order 1);
* the controls (OCP option ``control_form``): ``"state"`` (default) gives each control one
  polynomial per finite element through its values at the element's start and its
  collocation points, continuous with a continuous first derivative at the elements' ends, as
  dymos's ``add_control(..., rate_continuity=True)`` (no penalty on the rates: the options
  ``K_delta_rate``, ``K_force_rate`` do not apply); ``"point"`` leaves an independent value
  at every collocation point;
* the collocation of pyomo.dae (Radau or Legendre with ``ncp`` points per element) in place
  of dymos's Gauss-Lobatto or Radau (``docs/racecar.md`` measures the choices);
* the curvature: exact arcs, or dymos's spline looked up by position (a property of the
  track, :mod:`pyomo_lap.track.arcs`).

Layer: ocp (imports :mod:`pyomo_lap.ocp.common`, :mod:`pyomo_lap.ocp.vehicle_model`, the
racecar's parameters and its equations).
"""
from __future__ import annotations

import dataclasses
import math
import time
import types
from typing import Optional

import numpy as np
import pandas as pd
import pyomo.environ as pyo
from pyomo.dae import ContinuousSet, DerivativeVar

from ..vehicle.car import grip_force, top_speed
from ..vehicle.racecar import RacecarParameters, check_racecar
from ..vehicle.racecar_equations import (
    CONTROLS,
    QUANTITIES,
    QUANTITY_DOCS,
    STATE_NAMES,
    THRUST_EPS,
    WHEELS,
    centre_line_speed,
    racecar_equations,
    spatial_ode_residuals,
    state_rates,
)
from ..vehicle.speed_profile import quasi_steady_speed
from .collocation import CollocationGrid, lagrange_basis
from .point_rows import TRACK_INPUTS, PointRows, rows_on_tape, track_numbers
from .sector import _sector_points, fast_element_lookup, sector_mesh, track_limits
from .vehicle_model import (
    PathRoles,
    ProblemData,
    VehicleModel,
    car_block,
    update_problem,
)

__all__ = ["RACECAR_MODEL", "racecar_model", "build_racecar_model", "initialize_racecar",
           "racecar_trajectory", "STATE_NAMES", "CONTROLS", "WHEELS", "DYMOS_IPOPT_OPTIONS",
           "record_racecar_rows", "POINT_VARIABLES", "RacecarDynamics", "DEFECT_STATES",
           "COLUMN_OF"]

COLUMN_OF = {k: ("lambda" if k == "lam" else k) for k in STATE_NAMES}
"""The table's column of each state (:func:`racecar_trajectory`: ``lam`` is dymos's
``lambda``)."""

DEFECT_STATES = tuple(COLUMN_OF[k] for k in STATE_NAMES) + ("t",)
"""The racecar's states in ``s`` as the checks take them (``VehicleModel.defect_states``): its
states by their table columns, the time last."""


DYMOS_IPOPT_OPTIONS = {
    "mu_init": 1e-3, "max_iter": 500, "acceptable_tol": 1e-3, "constr_viol_tol": 1e-3,
    "compl_inf_tol": 1e-3, "acceptable_iter": 0, "tol": 1e-3,
    "nlp_scaling_method": "gradient-based", "alpha_for_y": "safer-min-dual-infeas",
    "mu_strategy": "monotone", "bound_mult_init_method": "mu-based"}
"""The IPOPT options of dymos's racecar test (``p.driver.opt_settings`` in
``test/test_racecar.py``, print_level left out)."""

REF = {"t": 100.0, "n": 4.0, "V": 35.0, "alpha": 0.15, "lam": 0.01, "omega": 0.3, "ax": 8.0,
       "ay": 8.0, "delta": 0.04, "thrust": 1.0}
"""Typical magnitudes of the variables (dymos's ``ref``; ``V``: ``ref - ref0`` = 40 - 5); the
scaling factors are their inverses."""


@dataclasses.dataclass(frozen=True)
class _Options:
    thrust_eps: float = THRUST_EPS
    control_form: Optional[str] = None     # None: the OCP option control_form
    limits_at: str = "all"                 # or "element-ends" (Gauss-Lobatto's state nodes)


def build_racecar_model(track, vehicle, cfg, t0: Optional[float] = None, progress=None,
                        options: _Options = _Options()):
    """The ``build`` of :data:`RACECAR_MODEL` (see
    :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel`): the discretized OCP on the sector of
    ``cfg`` (a whole closed lap with ``cfg.periodic``).

    Raises
    ------
    ValueError
        A car that is not a racecar (another vehicle file), options the model does not have
        (``lift``, ``piecewise_constant_controls``), a sector or mesh that
        :func:`pyomo_lap.ocp.sector.sector_mesh` refuses, a track narrower than the car.
    """
    t0 = time.perf_counter() if t0 is None else t0
    check_racecar(vehicle)
    if cfg.lift:
        raise ValueError("option 'lift' is not available for the racecar model")
    if cfg.piecewise_constant_controls:
        raise ValueError("piecewise_constant_controls = True is not available for the racecar "
                         "model: control_form 'state' (continuous controls with continuous "
                         "rates, dymos's) or 'point'")
    form = options.control_form or cfg.control_form
    p = vehicle
    placement = ("given" if cfg.element_boundaries is not None else
                 "uniform" if cfg.nfe is not None or cfg.mesh != "adaptive" else "uniform-10m")
    L, bounds = sector_mesh(track, cfg, None)       # no adaptive mesh: element_length
    if placement == "uniform-10m":
        junctions = junction_boundaries(track, cfg.start, L, cfg.element_length)
        if junctions is not None:        # an arc track: elements end at its junctions
            bounds, placement = junctions, "junctions"
            cfg.nfe = len(bounds) - 1
    m = pyo.ConcreteModel(name=f"pyomo_lap racecar {track.name} {cfg.start:.0f}+{L:.0f} m")
    m.problem = ProblemData(vehicle_model=RACECAR_MODEL, options=cfg, track=track,
                            sector_length=L,
                            mesh=placement if placement in ("given", "junctions") else "uniform")
    car_block(m, p)          # m.vehicle: the car (pyomo_lap.ocp.vehicle_model.car_block)
    m.s = ContinuousSet(bounds=(0.0, L), initialize=None if bounds is None else bounds.tolist(),
                        doc="distance along the centre line from the sector start [m]")
    fast_element_lookup(m.s)
    u = pyo.units
    m.t = pyo.Var(m.s, initialize=0.0, units=u.s, doc="time [s]")
    m.n = pyo.Var(m.s, initialize=0.0, units=u.m, doc="lateral offset of the centre of gravity, + left [m]")
    m.V = pyo.Var(m.s, initialize=20.0, bounds=(max(cfg.v_min, 1.0), 150.0), units=u.m / u.s,
                  doc="speed [m/s]")
    m.alpha = pyo.Var(m.s, initialize=0.0, bounds=(-math.pi / 2, math.pi / 2), units=u.rad,
                      doc="heading relative to the centre line [rad]")
    m.lam = pyo.Var(m.s, initialize=0.0, bounds=(-0.5, 0.5), units=u.rad,
                    doc="body slip angle lambda [rad]")
    m.omega = pyo.Var(m.s, initialize=0.0, units=u.rad / u.s, doc="yaw rate [rad/s]")
    m.ax = pyo.Var(m.s, initialize=0.0, units=u.m / u.s ** 2, doc="lagged longitudinal acceleration [m/s^2]")
    m.ay = pyo.Var(m.s, initialize=0.0, units=u.m / u.s ** 2, doc="lagged lateral acceleration [m/s^2]")
    m.delta = pyo.Var(m.s, initialize=0.0, bounds=(-1.0, 1.0), units=u.rad, doc="steer angle [rad]")
    m.thrust = pyo.Var(m.s, initialize=0.1, bounds=(-5.0, 5.0), units=u.dimensionless,
                       doc="longitudinal command [-]: x M g/2 per rear tyre (traction), "
                           "braking split by the brake bias")
    for name in ("t",) + STATE_NAMES:
        var = m.component(name)
        m.add_component(f"d{name}_ds", DerivativeVar(var, wrt=m.s, units=u.get_units(var) / u.m,
                                                     doc=f"d{name}/ds"))
    disc = pyo.TransformationFactory("dae.collocation")
    t_dae = time.perf_counter()
    disc.apply_to(m, wrt=m.s, nfe=cfg.nfe, ncp=cfg.ncp, scheme=cfg.scheme)
    dae_time_s = time.perf_counter() - t_dae
    sigma = np.array(sorted(m.s))
    tp = _sector_points(track, cfg.start, L, sigma)
    kappa = _curvature_in_elements(track, cfg.start, L, sigma,
                                   np.array(sorted(m.s.get_finite_elements())), tp.omega[:, 2])
    update_problem(m, dae_time_s=dae_time_s, track_points=tp)
    lower, upper = track_limits(track, tp, sigma, p, cfg)
    ends = set(float(x) for x in m.s.get_finite_elements())
    for i, s in enumerate(sigma):
        if options.limits_at == "all" or float(s) in ends:
            m.n[s].setlb(float(lower[i]))
            m.n[s].setub(float(upper[i]))
    m.kappa = pyo.Param(m.s, initialize={float(s): float(kappa[i]) for i, s in enumerate(sigma)},
                        units=1 / u.m, doc="curvature of the centre line, + left [1/m]")
    _add_equations(m, p, options.thrust_eps)
    _attach_recorded_rows(m, p, cfg, tp, sigma, kappa, options.thrust_eps)
    first, last = sigma[0], sigma[-1]
    _add_control_form(m, form, cfg.scheme)
    m.t[first].fix(0.0)
    if cfg.periodic:
        m.periodic = pyo.Constraint(STATE_NAMES, rule=lambda m, k:
                                    m.component(k)[last] == m.component(k)[first],
                                    doc="closed lap: the states (not t, not the controls) at "
                                        "the end equal those at the start")
    else:
        _open_sector_start(m, track, p, cfg)
    m.lap_time = pyo.Expression(expr=m.t[last] - m.t[first], doc="sector (lap) time [s]")
    m.objective = pyo.Objective(expr=m.lap_time, sense=pyo.minimize)
    _set_scaling(m)
    update_problem(m, build_time_s=time.perf_counter() - t0)
    return m


def junction_boundaries(track, start: float, length: float, element_length: float):
    """Element boundaries [m from the sector start] at the junctions of an arc track's segments
    (:class:`pyomo_lap.track.arcs.ArcTrack`), each segment's part of the sector cut into equal
    elements of at most ``element_length``: the curvature, which steps at a junction, is then
    constant within every element, as a polynomial can follow. None for a track of points
    (its curvature is smooth).

    Parameters
    ----------
    track : Track or ArcTrack
    start, length : float
        The sector [m] (on a closed track ``start + length`` may pass the lap's end).
    element_length : float
        Longest element [m], > 0.

    Returns
    -------
    ndarray or None
        Increasing from 0 to ``length``.
    """
    s0 = getattr(track, "_s0", None)
    if s0 is None or not hasattr(track, "segments"):
        return None
    junctions = np.asarray(s0, float)
    if track.closed:                     # the junctions of as many laps as the sector spans
        laps = np.arange(0, int(math.ceil((start + length) / track.length)) + 1)
        junctions = (junctions[None, :] + track.length * laps[:, None]).ravel()
    inner = junctions - start
    inner = inner[(inner > 0.1) & (inner < length - 0.1)]     # elements of at least 0.1 m
    knots = np.concatenate([[0.0], np.unique(inner), [length]])
    out = [0.0]
    for a, b in zip(knots[:-1], knots[1:]):
        k = max(1, int(math.ceil((b - a) / element_length - 1e-9)))
        out.extend(a + (b - a) * np.arange(1, k + 1) / k)
    out = np.array(out)
    out[-1] = length
    return out


def _curvature_in_elements(track, start: float, length: float, sigma, ends, kappa):
    """The curvature [1/m] at the points ``sigma`` [m from the sector start] as each point's
    element sees it: an element's last point takes the curvature just before it (the track
    gives a junction the curvature of the segment that starts there, which belongs to the
    next element). ``kappa`` is the curvature at the points; a track whose curvature does not
    step (a track of points) is returned unchanged."""
    if getattr(track, "_s0", None) is None:
        return kappa
    kappa = np.array(kappa, float)
    last = np.isin(np.asarray(sigma, float), np.asarray(ends, float)[1:])
    if np.any(last):
        ends_before = np.asarray(sigma, float)[last] - 1e-7 * max(1.0, length)
        s_track = start + ends_before
        if track.closed:
            s_track = np.mod(s_track, track.length)
        kappa[last] = track.evaluate(s_track).omega[:, 2]
    return kappa


def _add_equations(m, p: RacecarParameters, eps: float) -> None:
    """The racecar's ODE (``m.ode``), tyre loads and forces (named Expressions on ``m``, one
    per quantity of :data:`pyomo_lap.vehicle.racecar_equations.QUANTITIES`) and path
    constraints (``m.friction[wheel, s]`` <= 1, ``m.power_limit``), from
    :func:`~pyomo_lap.vehicle.racecar_equations.racecar_equations` (the equations the
    simulation evaluates on floats) with every quantity stored in its named Expression."""
    for key, per_wheel in QUANTITIES.items():
        m.add_component(key, pyo.Expression(WHEELS, m.s, doc=QUANTITY_DOCS[key])
                        if per_wheel else pyo.Expression(m.s, doc=QUANTITY_DOCS[key]))
    rates = {}
    for s in m.s:
        def name(key, wheel, value, _s=s):
            comp = m.component(key)
            index = _s if wheel is None else (wheel, _s)
            comp[index] = value
            return comp[index]
        eq = racecar_equations(p, {k: m.component(k)[s] for k in STATE_NAMES},
                               {"delta": m.delta[s], "thrust": m.thrust[s]}, m.kappa[s], eps, name)
        rates[s] = eq["rates"]
    m.friction = pyo.Constraint(WHEELS, m.s, rule=lambda m, w, s: m.c[w, s] <= 1.0,
                                doc="friction ellipses c_ij <= 1")
    m.power_limit = pyo.Constraint(m.s, rule=lambda m, s: m.power[s] <= p.P_max,
                                   doc="power <= P_max")
    first = m.s.first()
    m.ode = pyo.Constraint(("t",) + STATE_NAMES, m.s, rule=lambda m, k, s: pyo.Constraint.Skip
                           if s == first else
                           m.V[s] * m.cos_heading[s] * m.component(f"d{k}_ds")[s]
                           == (1 - m.n[s] * m.kappa[s]) * rates[s][k],
                           doc="spatial ODE: ds/dt dx/ds = dx/dt, times (1 - n kappa)")


POINT_VARIABLES = STATE_NAMES + CONTROLS + tuple(f"d{k}_ds" for k in ("t",) + STATE_NAMES)
"""The variables of one point the recorded rows depend on (17 names, the tape's inputs)."""

_KAPPA = TRACK_INPUTS.index("Om[2]")


def record_racecar_rows(p: RacecarParameters, cfg=None, eps: float = THRUST_EPS) -> PointRows:
    r"""Record the racecar's rows at one point on a tape (:func:`pyomo_lap.ocp.point_rows.rows_on_tape`),
    the same equations as the model's constraints (:func:`_add_equations`, both from
    :func:`~pyomo_lap.vehicle.racecar_equations.racecar_equations`), so that the fast solver path
    evaluates them with compiled point functions instead of translating every row's expression.

    Rows, in this order: ``ode[k]`` (k = ``t`` and :data:`STATE_NAMES`, at every point but the
    first) :math:`V\cos(\alpha - \lambda)\, dk/ds - (1 - n\kappa)\,\dot k = 0`,
    ``friction[w]`` (w in :data:`WHEELS`) :math:`c_w \le 1`, ``power_limit``
    :math:`V S_{all} \le P_{max}` [W]. The curvature :math:`\kappa` [1/m] is the track input
    ``Om[2]``; the car's numbers are constants of the tape (``vehicle_inputs`` empty: one
    compiled function per car, cached under its structure key).

    Parameters
    ----------
    p : RacecarParameters
    cfg : ConfigDict, optional
        Not used (the signature of ``VehicleModel.point_rows``).
    eps : float
        Smoothing of ``max(thrust, 0)`` [-] (the model's ``thrust_eps``).

    Returns
    -------
    PointRows
        With ``variables = POINT_VARIABLES``.

    Raises
    ------
    ValueError
        ``p`` is not a racecar.
    """
    check_racecar(p)

    def point_rows(_, v, track, namer):
        eq = racecar_equations(p, {k: v[k] for k in STATE_NAMES}, {k: v[k] for k in CONTROLS},
                               track[_KAPPA], eps)
        ode = spatial_ode_residuals(v, eq, track[_KAPPA], v)
        rows = [("ode", k, ode[k], 0.0, 0.0, "interior") for k in ("t",) + STATE_NAMES]
        rows += [("friction", w, eq["c"][w], None, 1.0, "all") for w in WHEELS]
        rows.append(("power_limit", None, eq["power"], None, float(p.P_max), "all"))
        return rows
    return rows_on_tape(point_rows, p, POINT_VARIABLES, ())


def _attach_recorded_rows(m, p, cfg, tp, sigma, kappa, eps: float) -> None:
    """Record the rows (:func:`record_racecar_rows`) and tie them to the model's constraints
    ``m.ode``, ``m.friction``, ``m.power_limit`` as built (``m.problem.point_rows``, what
    :class:`pyomo_lap.solvers.lap.nlp.LapNLP` checks and evaluates: the track numbers with the
    curvature as each point's element sees it, ``kappa``; the named Expressions of
    :data:`QUANTITIES`, whose change sends their points' rows back to the generic translation)."""
    rec = record_racecar_rows(p, cfg, eps)
    numbers = track_numbers(tp)
    numbers["Om[2]"] = np.asarray(kappa, float)
    rec.track_values = np.stack([numbers[k] for k in TRACK_INPUTS], axis=1)
    rec.points = [float(s) for s in sigma]
    idx = {s: i for i, s in enumerate(rec.points)}
    built = rec.built = []
    for fam in rec.families:
        con = m.component(fam.name)
        for key, out in zip(fam.keys, fam.outputs):
            for s in (rec.points[1:] if fam.where == "interior" else rec.points):
                c = con[s] if key is None else con[key, s]
                built.append((c, c.expr, idx[s], out))
    rec.components = {name: m.component(name) for name in POINT_VARIABLES}
    rec.vehicle_components = {}
    rec.named = []
    for key, per_wheel in QUANTITIES.items():
        comp = m.component(key)
        keys = list(comp.keys())
        entries = [comp[k] for k in keys]
        rec.named.append((entries, [e._args_ for e in entries],
                          [k[1] if per_wheel else k for k in keys]))
    update_problem(m, point_rows=rec)








def _add_control_form(m, form: str, scheme: str) -> None:
    """``form = "state"``: each control a polynomial per element through its values at the
    element's start and collocation points, continuous (shared end points; Legendre: the end
    value is the polynomial's, ``m.control_end``) with a continuous derivative at the
    elements' inner ends (``m.control_rate_continuity``): dymos's controls with
    ``rate_continuity=True``. ``form = "point"``: a value at every collocation point; at a
    point that is none (``s = 0``, Legendre's element ends) it equals the next point's."""
    sigma = sorted(m.s)
    grid = CollocationGrid.from_set(m.s, scheme)
    if form == "state":
        rows_end, rows_rate = [], []
        elems = grid.elements
        for k, e in enumerate(elems):
            nodes = [float(x) for x in grid.points[e.state_points]]
            L, dL = lagrange_basis(grid.tau(e, e.state_points), 1.0, derivative=True)
            if scheme == "LAGRANGE-LEGENDRE":
                rows_end.append((e.b, nodes, L[0]))
            if k + 1 < len(elems):
                e2 = elems[k + 1]
                nodes2 = [float(x) for x in grid.points[e2.state_points]]
                _, dL2 = lagrange_basis(grid.tau(e2, e2.state_points), 0.0, derivative=True)
                rows_rate.append((e.b, nodes, dL[0] / e.h, nodes2, dL2[0] / e2.h))
        m.control_rate_continuity = pyo.Constraint(
            CONTROLS, range(len(rows_rate)), rule=lambda m, c, i: (
                sum(w * m.component(c)[x] for x, w in zip(rows_rate[i][1], rows_rate[i][2]))
                == sum(w * m.component(c)[x] for x, w in zip(rows_rate[i][3], rows_rate[i][4]))),
            doc="d(control)/ds continuous at the elements' inner ends [1/m]")
        if rows_end:
            m.control_end = pyo.Constraint(
                CONTROLS, range(len(rows_end)), rule=lambda m, c, i: m.component(c)[rows_end[i][0]]
                == sum(w * m.component(c)[x] for x, w in zip(rows_end[i][1], rows_end[i][2])),
                doc="the control at an element's end: its polynomial's value")
        return
    colloc = set(float(s) for s in m.dV_ds_disc_eq) if hasattr(m, "dV_ds_disc_eq") else set(sigma[1:])
    pairs = []
    for i, s in enumerate(sigma):
        if s not in colloc:
            nxt = next((x for x in sigma[i + 1:] if x in colloc), None)
            if nxt is not None:
                pairs.append((s, nxt))
    m.controls_at_start = pyo.Constraint(CONTROLS, range(len(pairs)), rule=lambda m, c, i:
                                         m.component(c)[pairs[i][0]] == m.component(c)[pairs[i][1]],
                                         doc="a control at a point that is no collocation point: "
                                             "the next point's value")


def _open_sector_start(m, track, p, cfg) -> None:
    """An open sector: the car enters at the given speed (``initial_speed`` a number; the
    default 'quasi-steady' and 'free' leave it free), on the centre line, aligned, settled."""
    first = m.s.first()
    if cfg.initial_speed not in ("free", "quasi-steady"):
        v0 = float(cfg.initial_speed)
        m.V[first].fix(v0)
        update_problem(m, initial_speed=v0)
    for k in ("alpha", "lam", "omega", "ax", "ay"):
        m.component(k)[first].fix(0.0)


def _set_scaling(m) -> None:
    """``m.scaling_factor``: the variables by :data:`REF`, their derivatives by ``REF / 10 m``,
    the ODE rows by the states' change over about 10 m at 40 m/s, the path constraints by
    their bounds (dymos: ``ref = 1`` and ``ref = 1e5`` for the power), the objective by
    ``1/100 s`` (dymos: ``ref = 100`` of ``t``)."""
    sf = m.scaling_factor = pyo.Suffix(direction=pyo.Suffix.EXPORT)
    first = m.s.first()
    for name, ref in REF.items():
        for v in m.component(name).values():
            if not v.fixed:
                sf[v] = 1.0 / ref
        dv = m.component(f"d{name}_ds")
        if dv is not None:
            for s, v in dv.items():
                if s != first:
                    sf[v] = 10.0 / ref
    for (k, s), c in m.ode.items():
        sf[c] = 10.0 / (40.0 * REF[k])
    for c in m.friction.values():
        sf[c] = 1.0
    for c in m.power_limit.values():
        sf[c] = 1.0e-5
    sf[m.objective] = 1.0 / REF["t"]


def quasi_steady_time(m) -> float:
    """The quasi-steady estimate of the sector's time [s] for the racecar model: the point
    mass of :func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed` with this car's mass
    ``M``, friction ``mu0_x``, ``mu0_y`` (the whole of it: the model's friction ellipses have
    no load sensitivity here), downforce ``ClA``, drag ``CdA``, air density and power, on the
    sector's points (``m.problem.track_points``), integrated as ``int ds / v``."""
    p = m.vehicle.built_for
    tp = m.problem.track_points
    sigma = np.array(sorted(m.s), dtype=float)
    point_mass = types.SimpleNamespace(gravity=p.g, m=p.M, mu_x0=p.mu0_x, mu_y0=p.mu0_y,
                                       rho=p.rho, S=1.0, Cz1=p.ClA, Cz2=0.0, Cx=p.CdA,
                                       P_max=p.P_max)
    v = quasi_steady_speed(point_mass, sigma, tp.omega, tp.rotation,
                           closed=bool(m.problem.options.periodic),
                           v_start=m.problem.initial_speed, grip_factor=1.0)
    inv = 1.0 / v
    return float(np.sum(0.5 * (inv[1:] + inv[:-1]) * np.diff(sigma)))


def initialize_racecar(m, guess: str = "dymos", **kwargs) -> dict:
    """The ``initialize`` of :data:`RACECAR_MODEL`: dymos's initial guess (its test: ``V``
    20 m/s, the other states and ``delta`` 0, ``thrust`` 0.1, ``t`` linear from 0 to 100 s)
    with consistent derivatives (0; ``dt/ds = 100 s / L``). Returns as ``estimated_time_s``
    the quasi-steady estimate of the sector's time (:func:`quasi_steady_time`; not the guess's
    time at 20 m/s, which says nothing of the car); other keywords are ignored."""
    L = m.problem.sector_length
    t_end = 100.0 if m.problem.options.periodic else L / 20.0
    for s in m.s:
        vals = {"n": 0.0, "V": 20.0 if m.problem.initial_speed is None else m.problem.initial_speed,
                "alpha": 0.0, "lam": 0.0, "omega": 0.0, "ax": 0.0, "ay": 0.0,
                "delta": 0.0, "thrust": 0.1, "t": t_end * s / L}
        for k, v in vals.items():
            var = m.component(k)[s]
            if not var.fixed:
                var.set_value(v, skip_validation=True)
        for k in ("t",) + STATE_NAMES:
            m.component(f"d{k}_ds")[s].set_value(t_end / L if k == "t" else 0.0, skip_validation=True)
    return {"status": "ok", "estimated_time_s": quasi_steady_time(m)}


def racecar_trajectory(m):
    """One row per point of a solved racecar model: ``s`` (track), ``s_sector``, ``t``, the
    states (``lambda`` for ``lam``), controls, ``speed`` (= ``V``), ``speed_kmh``, ``s_dot``,
    the tyre loads ``N_<wheel>``, forces ``S_<wheel>``, ``F_<wheel>``, friction use
    ``c_<wheel>``, ``power``, the curvature ``Omega_z``, the centre line ``x_spine``,
    ``y_spine`` and the car's position ``x``, ``y`` [m], ``element``."""
    tp = m.problem.track_points
    sigma = sorted(m.s)
    elems = list(m.s.get_finite_elements())
    v = pyo.value
    rows = []
    for i, s in enumerate(sigma):
        row = {"s": float(tp.s[i]), "s_sector": float(s), "t": v(m.t[s])}
        for k in STATE_NAMES:
            row["lambda" if k == "lam" else k] = v(m.component(k)[s])
        row["delta"], row["thrust"] = v(m.delta[s]), v(m.thrust[s])
        row["speed"] = row["V"]
        row["speed_kmh"] = 3.6 * row["V"]
        row["a_t"] = v(m.V_dot[s])
        row["s_dot"] = v(m.s_dot[s])
        for w in WHEELS:
            row[f"N_{w}"] = v(m.N[w, s])
            row[f"S_{w}"] = v(m.S[w, s])
            row[f"F_{w}"] = v(m.F[w, s])
            row[f"c_{w}"] = v(m.c[w, s])
        row["power"] = v(m.power[s])
        row["Omega_z"] = float(pyo.value(m.kappa[s]))     # as the point's element saw it
        row["x_spine"], row["y_spine"] = float(tp.position[i, 0]), float(tp.position[i, 1])
        row["x"] = row["x_spine"] + row["n"] * float(tp.normal[i, 0])
        row["y"] = row["y_spine"] + row["n"] * float(tp.normal[i, 1])
        row["width_left"], row["width_right"] = float(tp.width_left[i]), float(tp.width_right[i])
        row["element"] = int(np.searchsorted(elems, s, side="left"))
        rows.append(row)
    return pd.DataFrame(rows)


def racecar_model(thrust_eps: float = 1e-4, control_form: Optional[str] = None,
                  limits_at: str = "all") -> VehicleModel:
    """A racecar :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` with other numerical
    choices than :data:`RACECAR_MODEL`'s (for measuring them, ``docs/racecar.md``).

    Parameters
    ----------
    thrust_eps : float
        Smoothing of ``max(thrust, 0)`` [-] (> 0).
    control_form : {"state", "point"}, optional
        Overrides the OCP option ``control_form``.
    limits_at : {"all", "element-ends"}
        Where the track limits bound ``n``: at every point, or only at the finite elements'
        ends (as dymos's Gauss-Lobatto transcription bounds a state only at its state
        nodes, the segments' ends for order 3; between them the car may leave the track).
    """
    if not (math.isfinite(thrust_eps) and thrust_eps > 0):
        raise ValueError(f"thrust_eps = {thrust_eps!r}: expected a positive number")
    if control_form not in (None, "state", "point"):
        raise ValueError(f"control_form = {control_form!r}: expected 'state', 'point' or None")
    if limits_at not in ("all", "element-ends"):
        raise ValueError(f"limits_at = {limits_at!r}: expected 'all' or 'element-ends'")
    opts = _Options(thrust_eps=float(thrust_eps), control_form=control_form, limits_at=limits_at)

    def build(track, vehicle, cfg, t0=None, progress=None):
        return build_racecar_model(track, vehicle, cfg, t0, progress, options=opts)
    return VehicleModel(
        name="racecar",
        description="dymos's racecar example: two-track car, linear tyres in friction ellipses, "
                    "lagged load transfer (pyomo_lap.ocp.racecar)",
        states=STATE_NAMES, rates=(), controls=CONTROLS, algebraics=(),
        build=build, initialize=initialize_racecar, trajectory=racecar_trajectory,
        point_rows=lambda vehicle, cfg: record_racecar_rows(vehicle, cfg, opts.thrust_eps),
        dynamics=lambda vehicle, model, cfg: RacecarDynamics(vehicle, model, opts.thrust_eps),
        defect_states=DEFECT_STATES)


class RacecarDynamics:
    r"""The racecar's equations as the checks of a result use them
    (:class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics`, the ``dynamics`` of
    :data:`RACECAR_MODEL`), on NumPy arrays from
    :func:`~pyomo_lap.vehicle.racecar_equations.racecar_equations` (the equations the OCP is
    built with): in ``s``, :math:`dx/ds = \dot x/\dot s` for :data:`DEFECT_STATES` (no
    algebraic variables); in time ``y = (s, n, V, alpha, lambda, omega, ax, ay)``; the limits the
    OCP's rows hold, the friction ellipses :math:`\sqrt{c_{ij}} \le 1` (the largest of the four
    tyres) and the power :math:`V S_{all} \le P_{max}`; the path's roles ``n``, ``alpha``,
    ``V``, ``delta``; a replayed car that reaches the OCP's bounds of ``alpha`` or ``lambda``
    has spun. The curvature is the track input ``Om[2]``.

    Parameters
    ----------
    vehicle : RacecarParameters
    model : VehicleModel
        The racecar model (:func:`racecar_model`).
    eps : float
        Its smoothing of ``max(thrust, 0)`` [-] (``thrust_eps``).
    """

    path = PathRoles(lateral="n", heading="alpha", speed="V", steer="delta")
    channel_columns = {"f_11z": "N_fl", "f_12z": "N_fr", "f_21z": "N_rl", "f_22z": "N_rr",
                       "a_x": "ax", "a_y": "ay"}
    steering = ("the steering scale, wheelbase x RMS curvature", "% steer scale")
    bounds = {"alpha": (-math.pi / 2, math.pi / 2), "lambda": (-0.5, 0.5)}
    control_bounds = {"delta": (-1.0, 1.0)}
    algebraic = ()
    limit_names = ("friction", "power")

    def __init__(self, vehicle, model, eps: float = THRUST_EPS):
        check_racecar(vehicle)
        self.vehicle, self.model, self.eps = vehicle, model, float(eps)
        self.states = tuple(model.defect_states)
        self.names = ("s",) + self.states[:-1]
        self.controls = tuple(model.controls)
        self.magnitudes = np.array([1.0] + [REF[k] for k in STATE_NAMES])

    def _equations(self, trk, x, u) -> dict:
        """:func:`racecar_equations` at states ``x`` (columns :data:`DEFECT_STATES`, the time
        not used), controls ``u``, track inputs ``trk`` (last axis)."""
        trk = np.asarray(trk, float)
        xs = {k: x[..., i] for i, k in enumerate(STATE_NAMES)}
        us = {c: u[..., i] for i, c in enumerate(CONTROLS)}
        return racecar_equations(self.vehicle, xs, us, trk[..., _KAPPA], self.eps)

    def time_rates(self, trk, y, u, z0=None) -> tuple:
        r"""``(dy/dt, z)`` at one point: :math:`(\dot s, \dot n, .., \dot a_y)`
        (:func:`~pyomo_lap.vehicle.racecar_equations.state_rates`), no algebraic variables."""
        r = state_rates(self.vehicle, dict(zip(("s",) + STATE_NAMES, y)),
                        dict(zip(CONTROLS, u)), float(trk[_KAPPA]), self.eps)
        return np.array([r["s"]] + [r[k] for k in STATE_NAMES], dtype=float), np.zeros(0)

    def spatial_rhs(self, trk, x, u, z0=None) -> tuple:
        r"""``(dx/ds (k, 8), z (k, 0), ok (k,))``: :math:`\dot x_i / \dot s` for
        :data:`DEFECT_STATES` (the time's :math:`1/\dot s`)."""
        x, u = np.asarray(x, float), np.asarray(u, float)
        eq = self._equations(trk, x, u)
        sd = np.asarray(eq["s_dot"], float)
        f = np.column_stack([np.broadcast_to(np.asarray(eq["rates"][k], float), sd.shape)
                             for k in STATE_NAMES + ("t",)]) / sd[:, None]
        return f, np.zeros((len(x), 0)), np.all(np.isfinite(f), axis=1)

    def limits(self, trk, x, u, z) -> dict:
        r"""``friction``: the largest :math:`\sqrt{c_{ij}}` of the four tyres (dymos's
        ``tireConstraintODE``), ``power``: :math:`V S_{all} / P_{max}` (``carODE``) [-]."""
        eq = self._equations(trk, np.asarray(x, float), np.asarray(u, float))
        c = np.max(np.array([np.asarray(eq["c"][w], float) for w in WHEELS]), axis=0)
        return {"friction": np.sqrt(np.maximum(c, 0.0)),
                "power": np.asarray(eq["power"], float) / self.vehicle.P_max}

    def path_speed(self, trk, y) -> float:
        r""":math:`\dot s` [m/s] (:func:`~pyomo_lap.vehicle.racecar_equations.centre_line_speed`)."""
        return float(centre_line_speed(dict(zip(("s",) + STATE_NAMES, y)), float(trk[_KAPPA])))

    def scales(self, curvature: float) -> dict:
        r"""``steer``: the wheelbase :math:`a + b` times ``curvature`` [rad]; ``speed``: the top
        speed where the power equals the drag, :math:`(P_{max}/(\tfrac12\rho C_dA))^{1/3}`, at
        most :data:`pyomo_lap.vehicle.car.SPEED_CAP_MPS` [m/s] (:func:`pyomo_lap.vehicle.car.top_speed`);
        ``force``: the largest tyre force :math:`\max(\mu_{0x}, \mu_{0y})(M g + \tfrac12\rho
        C_lA v_{top}^2)` [N] (:func:`pyomo_lap.vehicle.car.grip_force`, as the other cars');
        ``acceleration``: the force over the mass [m/s^2]. No tyre characteristic: no ``slip``."""
        p = self.vehicle
        v_top = top_speed(p.P_max, 0.5 * p.rho * p.CdA)
        force = grip_force(max(p.mu0_x, p.mu0_y), p.M * p.g, 0.5 * p.rho * p.ClA, v_top)
        return {"steer": float(p.wheelbase * curvature), "speed": float(v_top),
                "force": float(force), "acceleration": float(force / p.M)}

    def steering_scale(self, curvature: float) -> float:
        """The wheelbase times ``curvature`` [rad]: the racecar has no steer limit."""
        return float(self.vehicle.wheelbase * curvature)


RACECAR_MODEL = racecar_model()
"""The racecar model (registered as ``"racecar"``); vehicle files with ``model = "racecar"``."""
