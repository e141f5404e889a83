"""Shared infrastructure of the optimal control problem, used by every vehicle model.

The pieces of :func:`pyomo_lap.ocp.build.build_model` that do not depend on the vehicle model
nor on the sector: the objective (41) and its penalties (:func:`add_objective`,
:func:`penalty_weights`, :func:`regularization`, :data:`OBJECTIVE_SCALE`), the time scale
(:func:`reference_time`), the scaling of the variables (:func:`scale_variables`), named
per-point expressions (:class:`_Namer`, :func:`_set_new`), Pyomo's units
(:func:`pyomo_units`), the car's controls and its parameters as model components
(:func:`add_car_controls`, :func:`add_vehicle_block`, :func:`vehicle_var`,
:func:`vehicle_of_model`). The sector, its mesh, the boundary conditions and the start and end
of every build are in :mod:`pyomo_lap.ocp.sector`.

This module imports no vehicle model (:mod:`pyomo_lap.ocp.full_model`,
:mod:`pyomo_lap.ocp.single_track`), no builder (:mod:`pyomo_lap.ocp.build`) and not
:mod:`pyomo_lap.ocp.sector`: they import it.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
import pyomo.environ as pyo
from pydantic import ValidationError
from pyomo.dae import DerivativeVar

from ..spatial.backend import is_number
from ..vehicle.car import force_scale  # noqa: F401  (re-exported: the penalties' force scale)
from ..vehicle.files import field_bounds
from ..vehicle.schema import (
    KEY_OF_FIELD,
    OPTIONAL_SECTIONS,
    PARAMETER_KEYS,
    SECTIONS,
    SymbolicVehicle,
    VehicleParameters,
    absent,
    field_of,
)
from ..vehicle.speed_profile import quasi_steady_speed
from .collocation import CollocationGrid
from .vehicle_model import car_block

__all__ = ["force_scale", "reference_time", "penalty_weights", "set_penalty_weights",
           "regularization", "PENALTIES", "add_vehicle_block", "vehicle_var", "vehicle_of_model",
           "scale_variables", "add_objective", "OBJECTIVE_SCALE", "pyomo_units", "within_bounds",
           "set_within_bounds", "add_joint_variables", "add_tyre_wrench_variables", "JOINT_VARIABLES"]


CAR_CONTROLS = ("f_xa", "f_xb", "delta")
"""The controls of :func:`add_car_controls` (every built-in car model has these three)."""


class _Namer:
    """Turns tagged intermediates into entries of IndexedExpressions on a block."""

    def __init__(self, block, index_set, lift=()):
        self.block = block
        self.index_set = index_set
        self.pending = {}
        self.comps = {}
        self.lift = tuple(lift)

    def at(self, s):
        def name(tag, value):
            if self.lift and not is_number(value) and tag.startswith(self.lift):
                var = self.block.component(tag)
                if var is None:
                    var = pyo.Var(self.index_set, initialize=0.0)
                    self.block.add_component(tag, var)
                    self.block.add_component(f"{tag}_def", pyo.Constraint(self.index_set))
                self.block.component(f"{tag}_def")[s] = var[s] == value
                return var[s]
            comp = self.comps.get(tag)
            if is_number(value):
                if comp is None:
                    self.pending.setdefault(tag, {})[s] = value
                else:
                    comp[s] = value
                return value
            if comp is None:
                comp = self.comps[tag] = pyo.Expression(self.index_set)
                self.block.add_component(tag, comp)
                for ss, v in self.pending.pop(tag, {}).items():
                    comp[ss] = v
            return _set_new(comp, s, value)
        return name


def entries_at(comp, points) -> list:
    """The entries of a component indexed by ``m.s`` at ``points`` (a list of ``s``), in that
    order: its items taken as they are when they are exactly those points in that order (no
    lookup per point; 5400 points x 30 variables on a lap), else one lookup per point.

    Raises
    ------
    KeyError
        A point the component has no entry for.
    """
    if len(comp) == len(points):
        keys, entries = zip(*comp.items()) if len(points) else ((), ())
        if list(keys) == list(points):
            return list(entries)
    return [comp[s] for s in points]


def expression_setter(comp):
    """A function ``set(index, value) -> entry`` that adds new entries to the IndexedExpression
    ``comp``, the fast way: what Pyomo's ``_setitem_when_not_present`` does for an
    ``ExpressionData`` (a new data object holding ``value``, owned by ``comp``, stored under
    ``index``) without its per-entry checks, for values known to be numeric expressions and
    indices known to be new and valid (the common subexpressions ``m.car.cse[s, k]``: about 50
    per point, 0.1-1.3 million entries on a lap, 3.7 s per million the checked way).
    Checked against the public route by the tests (``tests/test_named_model.py``)."""
    data = comp._data
    cls = comp._ComponentDataClass
    ref = weakref.ref(comp)
    new = cls.__new__

    def set_new(index, value):
        obj = new(cls)
        obj._args_ = (value,)
        obj._component = ref
        obj._index = index
        data[index] = obj
        return obj
    return set_new


def _set_new(comp, index, value):
    """``comp[index] = value`` for a new entry of an indexed component, returning the entry
    (Pyomo's ``_setitem_when_not_present`` does both in one step: a model has about 40 such
    entries per point; the public route looks the index up twice)."""
    setter = getattr(comp, "_setitem_when_not_present", None)
    if setter is not None:
        return setter(index, value)
    comp[index] = value
    return comp[index]


def pyomo_units():
    """Pyomo's units (``pyomo.environ.units``), backed by pint's default registry, which Pyomo
    creates on first use.

    No disk cache of pint's parsed definitions is used. pint's cache (``cache_folder``)
    pickles into a folder and loads whatever pickle it finds there: a file cut short by an
    interrupted run broke every later run, and a pickle planted there runs code. It saved
    0.11 s once per process (building the registry: 0.13 s without the cache, 0.02 s with
    it, measured on the development machine), about 15 % of building the default job's model
    with a warm cache and 3 % of its whole run: not worth a pickle loaded from disk. Pickles
    that earlier versions left in ``<cache>/pint`` are never read."""
    return pyo.units


def reference_time(track, vehicle, cfg, length: float) -> float:
    """The sector time of the car's quasi-steady speed profile on the centreline
    (:func:`pyomo_lap.vehicle.speed_profile.quasi_steady_speed`, 2 m grid) [s]: the time scale
    of the objective's penalties and of its scaling (``m.problem.time_scale``)."""
    n = max(3, int(math.ceil(length / 2.0)) + 1)
    grid = np.linspace(0.0, length, n)
    s_track = np.mod(cfg.start + grid, track.length) if track.closed else cfg.start + grid
    tp = track.evaluate(s_track)
    v = quasi_steady_speed(vehicle, grid, tp.omega, tp.rotation, closed=bool(cfg.periodic),
                           v_min=cfg.v_min)
    return float(np.sum(np.diff(grid) * 2.0 / (v[1:] + v[:-1])))


SCALE_STEP = 2.0 ** 0.25
"""The grid the penalties' scales are rounded to (:func:`rounded_scale`): a factor of about
1.19 between neighbours."""


def rounded_scale(x: float) -> float:
    """``x`` (> 0) rounded to the nearest power of :data:`SCALE_STEP`: the scales of the
    penalties are the car's and the sector's to within 9 %, and the same for two cars that
    differ a little (a finite difference of a sensitivity, a sweep's neighbouring cases), so
    that their lap times differ by the physics, not by the weights of the penalties."""
    return SCALE_STEP ** round(math.log(x) / math.log(SCALE_STEP)) if x > 0 else x


def steer_scale(m) -> float:
    r"""The steering the sector asks of the car [rad]: :math:`l\,\kappa_{ref}`, the wheelbase
    times the root mean square of the track's curvature over the points of the sector (at
    least :math:`2\pi/L`, a full turn over the sector's length :math:`L`): the kinematic steer
    angle of a typical corner. The steering penalties' scale: a car twice as long steers
    twice as much through the same corners (a steering-rack limit ``delta_max`` is no measure
    of that)."""
    p = m.vehicle.built_for
    tp = getattr(m.problem, "track_points", None)
    L = float(m.problem.sector_length)
    kappa = np.asarray(tp.omega, dtype=float)[:, 2] if tp is not None else np.zeros(0)
    k_rms = float(np.sqrt(np.mean(kappa ** 2))) if kappa.size else 0.0
    return (p.a1 + p.a2) * max(k_rms, 2.0 * math.pi / max(L, 1.0))


def penalty_weights(m, cfg) -> dict:
    r"""The weights of the objective's penalties in SI units.

    From the dimensionless OCP options and the car's and the sector's scales (no constant of
    one car: :math:`T` the sector's quasi-steady time ``m.problem.time_scale``, :math:`L` its
    length, :math:`F` :func:`force_scale`, :math:`\delta_{max}` the steer limit,
    :math:`N` the number of control values; :math:`T` and :math:`F` rounded by
    :func:`rounded_scale`):

    * ``K_delta_rate`` :math:`= w_{\dot\delta} T/(L \delta_{max}^2)` [s/(m rad^2)] and
      ``K_force_rate`` :math:`= w_{\dot f} T/(L F^2)` [s/(m N^2)]: the rate penalties are
      :math:`w\,\frac{T}{L}\int (h\,\frac{d}{ds}\frac{u}{u_{ref}})^2 ds`, the time times the
      mean square of the control's change over an element (length :math:`h`), relative to its
      range (:func:`_add_rate_penalties`);
    * ``K_delta`` :math:`= w_{\Delta\delta} T/(N \delta_{max}^2)` [s/rad^2] and ``K_force``
      :math:`= w_{\Delta f} T/(N F^2)` [s/N^2]: the jumps of eq (41), :math:`w T` times the
      mean square jump relative to the range;
    * ``K_f`` :math:`= w_f T / F^2` [s/N^2]: the complementarity penalty, :math:`w_f T` times
      the mean of :math:`-f_{xa} f_{xb} / F^2`.
    """
    p = m.vehicle.built_for
    T = rounded_scale(float(m.problem.time_scale) or 1.0)
    L = float(m.problem.sector_length)
    F = rounded_scale(force_scale(p))
    d_ref = rounded_scale(steer_scale(m))
    n = max(1, len(m.s) - 1)
    return {"K_delta_rate": cfg.w_steer_rate * T / (L * d_ref ** 2),
            "K_force_rate": cfg.w_force_rate * T / (L * F ** 2),
            "K_delta": cfg.w_steer_jump * T / (n * d_ref ** 2),
            "K_force": cfg.w_force_jump * T / (n * F ** 2),
            "K_f": cfg.w_complementarity * T / F ** 2}


PENALTIES = (("steer_jump", "K_delta", "steer_penalty"), ("complementarity", "K_f", "complementarity_penalty"),
             ("force_jump", "K_force", "force_penalty"), ("steer_rate", "K_delta_rate", "steer_rate_penalty"),
             ("force_rate", "K_force_rate", "force_rate_penalty"))
"""The penalties of the objective: (name, weight Param, penalty Expression) on the model."""


def regularization(m) -> dict:
    """The objective's penalties at the model's values, in seconds and as a share of the
    objective: ``{"terms": {name: s}, "total_s": s, "share": -, "lap_time_s": s,
    "objective_s": s}`` (:data:`PENALTIES`; absent ones are left out)."""
    terms = {}
    for name, K, P in PENALTIES:
        k, pen = m.component(K), m.component(P)
        if k is not None and pen is not None:
            terms[name] = float(pyo.value(k)) * float(pyo.value(pen))
    T = float(pyo.value(m.lap_time))
    total = sum(terms.values())
    J = T + total
    return {"terms": terms, "total_s": total, "share": total / J if J else 0.0,
            "lap_time_s": T, "objective_s": J}


def add_objective(m, cfg) -> None:
    r"""The sector time and the penalties of eq (41), shared by the car models.

    Adds ``m.lap_time`` (:math:`t(L) - t(0)` [s]), ``m.steer_penalty``
    (:math:`\sum (\delta_{k+1} - \delta_k)^2` over consecutive control values [rad^2]),
    ``m.complementarity_penalty`` (the mean of :math:`-f_{xa} f_{xb}` over the sector
    [N^2]), their weights ``m.K_delta`` [s/rad^2] and ``m.K_f`` [s/N^2], and
    ``m.objective``. With piecewise-constant controls a control value is the element's;
    otherwise every collocation point has one (the point ``s = 0`` copies the first). The
    weights are mutable ``Param`` s set from the dimensionless OCP options by
    :func:`penalty_weights` (and again when the car changes, :func:`set_penalty_weights`).
    """
    u = pyo.units
    sigma = sorted(m.s)
    first, last = sigma[0], sigma[-1]
    if cfg.piecewise_constant_controls and cfg.ncp > 1:
        elems = sorted(m.s.get_finite_elements())
        pos = {s: i for i, s in enumerate(sigma)}
        ctrl_pts = [sigma[pos[e] + 1] for e in elems[:-1]]
        h = np.diff(elems)
    else:
        ctrl_pts = sigma[1:]
        h = np.diff(sigma)
    L = m.problem.sector_length
    m.lap_time = pyo.Expression(expr=m.t[last] - m.t[first], doc="sector (lap) time [s]")
    m.steer_penalty = pyo.Expression(expr=sum((m.delta[b] - m.delta[a]) ** 2
                                              for a, b in zip(ctrl_pts[:-1], ctrl_pts[1:])),
                                     doc="steering jumps between control values [rad^2], eq (41)")
    m.complementarity_penalty = pyo.Expression(expr=sum(-m.f_xa[c] * m.f_xb[c] * hh / L
                                                        for c, hh in zip(ctrl_pts, h)),
                                               doc="mean of -f_xa f_xb [N^2], eq (41)")
    K = penalty_weights(m, cfg)
    m.K_delta = pyo.Param(initialize=K["K_delta"], mutable=True, units=u.s / u.rad ** 2,
                          doc="weight of the steering-jump penalty [s/rad^2], eq (41): from "
                              "the OCP option w_steer_jump (penalty_weights)")
    m.K_f = pyo.Param(initialize=K["K_f"], mutable=True, units=u.s / u.N ** 2,
                      doc="weight of the complementarity penalty [s/N^2], eq (41): from the "
                          "OCP option w_complementarity (penalty_weights)")
    total = m.lap_time + m.K_delta * m.steer_penalty + m.K_f * m.complementarity_penalty
    if cfg.w_force_jump > 0:
        m.force_penalty = pyo.Expression(
            expr=sum((m.f_xa[b] - m.f_xa[a]) ** 2 + (m.f_xb[b] - m.f_xb[a]) ** 2
                     for a, b in zip(ctrl_pts[:-1], ctrl_pts[1:])),
            doc="force jumps between control values [N^2], eq (41)")
        m.K_force = pyo.Param(initialize=K["K_force"], mutable=True, units=u.s / u.N ** 2,
                              doc="weight of the force-jump penalty [s/N^2], eq (41): from the "
                                  "OCP option w_force_jump (penalty_weights)")
        total = total + m.K_force * m.force_penalty
    if control_states(cfg, m):
        total = total + _add_rate_penalties(m, cfg, K)
    m.objective = pyo.Objective(expr=total, sense=pyo.minimize)


def set_penalty_weights(m) -> None:
    """The penalties' weights (``m.K_*``) of :func:`penalty_weights` for the model's car and
    options now (after :func:`pyomo_lap.ocp.build.set_vehicle`)."""
    K = penalty_weights(m, m.problem.options)
    for name, value in K.items():
        comp = m.component(name)
        if comp is not None:
            comp.set_value(value)






def _add_rate_penalties(m, cfg, K: dict):
    r"""The penalties on the controls' rates along the track (``control_form = "state"``), on
    the scale of the mesh: ``m.steer_rate_penalty`` :math:`\int (h\,d\delta/ds)^2 ds`
    [rad^2 m] and ``m.force_rate_penalty`` :math:`\int (h\,df_{xa}/ds)^2 + (h\,df_{xb}/ds)^2
    ds` [N^2 m], :math:`h(s)` the length of the element (the change of the control over an
    element: an oscillation from one collocation point to the next costs as much as a jump,
    a transient longer than the element far less), by the collocation quadrature
    (:meth:`pyomo_lap.ocp.collocation.CollocationGrid.quadrature`); their weights ``m.K_delta_rate`` [s/(m rad^2)] and
    ``m.K_force_rate`` [s/(m N^2)] (:func:`penalty_weights`); returns their weighted sum [s]."""
    u = pyo.units
    grid = CollocationGrid.from_model(m)
    w = grid.quadrature()
    h = grid.lengths()
    m.quadrature_weight = pyo.Param(list(w), initialize=w, units=u.m,
                                    doc="weight of each collocation point in the quadrature of "
                                        "an integral over the sector [m]")
    m.element_length = pyo.Param(list(w), initialize={s_: h[s_] for s_ in w}, units=u.m,
                                 doc="length of the finite element of each collocation point [m]")
    wq, he = m.quadrature_weight, m.element_length
    m.steer_rate_penalty = pyo.Expression(
        expr=sum(wq[s_] * he[s_] ** 2 * m.ddelta_ds[s_] ** 2 for s_ in w),
        doc="integral of (h d delta/ds)^2 over the sector, h the element length [rad^2 m]")
    m.force_rate_penalty = pyo.Expression(
        expr=sum(wq[s_] * he[s_] ** 2 * (m.df_xa_ds[s_] ** 2 + m.df_xb_ds[s_] ** 2) for s_ in w),
        doc="integral of (h d f_xa/ds)^2 + (h d f_xb/ds)^2 over the sector [N^2 m]")
    m.K_delta_rate = pyo.Param(initialize=K["K_delta_rate"], mutable=True,
                               units=u.s / u.m / u.rad ** 2,
                               doc="weight of the steering-rate penalty [s/(m rad^2)]: from the "
                                   "OCP option w_steer_rate (penalty_weights)")
    m.K_force_rate = pyo.Param(initialize=K["K_force_rate"], mutable=True,
                               units=u.s / u.m / u.N ** 2,
                               doc="weight of the force-rate penalty [s/(m N^2)]: from the OCP "
                                   "option w_force_rate (penalty_weights)")
    return m.K_delta_rate * m.steer_rate_penalty + m.K_force_rate * m.force_rate_penalty


OBJECTIVE_SCALE = 1000.0
"""The scaled objective is about this number (see :func:`pyomo_lap.ocp.full_model._set_scaling`)."""


def scale_variables(m, sf, typical: dict) -> None:
    """Scaling factors of the variables from their typical magnitudes, shared by the vehicle
    models: ``sf[v] = typical[name]`` for every unfixed entry of ``m.<name>``, and for the
    derivative ``m.d<name>_ds`` (a state's change over a few metres; the entry at the first
    point is not used by the collocation) ``typical[name] * 10`` (``dt/ds``: 1, its
    typical value ``T/L`` scaled by ``typical["t"] = 1/T`` times ``L``).

    Parameters
    ----------
    m : ConcreteModel
        A built model (``m.s``, ``m.problem.sector_length`` [m]).
    sf : Suffix
        The model's ``scaling_factor`` suffix.
    typical : dict
        ``{variable name: scaling factor}`` (1 / the typical magnitude in SI units).
    """
    L = m.problem.sector_length
    first = m.s.first()
    for name, f in typical.items():
        for v in m.component(name).values():
            if not v.fixed:
                sf[v] = f
        dv = m.component(f"d{name}_ds")
        if dv is not None:
            for s, v in dv.items():
                if s != first:
                    sf[v] = f * (L if name == "t" else 10.0)


def scale_control_rates(m, controls) -> None:
    """Scaling factors of the collocation equations of the controls' derivatives
    (``control_form = "state"``): those of the derivatives themselves (set by the model's
    scaling from the controls' typical magnitudes, :func:`scale_variables`)."""
    sf = m.scaling_factor
    for c in controls:
        dv = m.component(f"d{c}_ds")
        eq = m.component(f"d{c}_ds_disc_eq")
        if dv is None or eq is None:
            continue
        for s, con in eq.items():
            f = sf.get(dv[s])
            if f is not None:
                sf[con] = f


def initialize_control_rates(m, controls=CAR_CONTROLS) -> None:
    """Values of the controls' derivatives ``m.d<c>_ds`` (``control_form = "state"``) from the
    controls' values at the points (second-order finite differences in ``s``); nothing when
    the controls are not states."""
    if not control_states(m.problem.options, m):
        return
    sigma = np.array(sorted(m.s))
    for c in controls:
        dv = m.component(f"d{c}_ds")
        if dv is None:
            continue
        var = m.component(c)
        vals = np.array([var[s].value if var[s].value is not None else 0.0 for s in sigma])
        for s, d in zip(sigma, np.gradient(vals, sigma)):
            dv[s].set_value(float(d), skip_validation=True)


def within_bounds(var, value: float) -> float:
    """``value`` clipped to the bounds of the variable ``var`` (a ``VarData``): the one rule of
    every initial value (this module's :func:`set_within_bounds`,
    :func:`pyomo_lap.ocp.transfer.set_within_bounds`)."""
    if var.lb is not None:
        value = max(value, var.lb)
    if var.ub is not None:
        value = min(value, var.ub)
    return value


def set_within_bounds(m, s, values: dict) -> None:
    """Initial values ``{name: value}`` of the variables ``m.<name>[s]``, each clipped to its
    bounds (:func:`within_bounds`); fixed variables keep their values."""
    for name, val in values.items():
        var = m.component(name)[s]
        if not var.fixed:
            var.set_value(within_bounds(var, val), skip_validation=True)


JOINT_VARIABLES = {
    "q2": (None, "m", "lateral offset of O3 from the spine, + left [m]"),
    "q3": ((-1.0, 1.0), "rad", "yaw relative to the track frame [rad]"),
    "q4": ((-0.2, 0.2), "m", "heave of the VIP from the design ride height [m]"),
    "q5": ((-0.3, 0.3), "rad", "pitch [rad], + nose down"),
    "q6": ((-0.3, 0.3), "rad", "roll [rad], + right side down"),
    **{f"z{w}": ((-0.1, 0.1), "m", f"travel of wheel carrier {w} relative to the chassis, + up [m]")
       for w in ("11", "12", "21", "22")},
}
"""The joint coordinates of the cars on the kinematic chain, ``{name: (bounds, unit, doc)}``:
the lateral offset ``q2`` (bounded by the track limits, set with the sector), the relative
yaw ``q3``, heave, pitch and roll ``q4..q6`` of the sprung body and the four wheel carriers'
travels ``z_ij`` of the multibody car (:func:`add_joint_variables`)."""


def add_joint_variables(m, vehicle_model, cfg) -> None:
    """The joint coordinates, their rates and the time of a car on the kinematic chain, indexed
    by ``m.s``, in this order: ``vehicle_model.states`` (each as :data:`JOINT_VARIABLES`
    declares it, initial value 0), ``vehicle_model.rates`` (``q1_dot`` in ``(cfg.v_min, 150)``
    m/s from 20 m/s, the others free from 0, in their coordinate's unit per second) and ``t``
    [s]. The one declaration of the full, single-track and multibody models' states.

    Raises
    ------
    KeyError
        A state that :data:`JOINT_VARIABLES` does not declare.
    """
    u = pyo.units
    units = {"m": u.m, "rad": u.rad}
    for name in vehicle_model.states:
        bounds, unit, doc = JOINT_VARIABLES[name]
        m.add_component(name, pyo.Var(m.s, initialize=0.0, bounds=bounds, units=units[unit], doc=doc))
    for rate in vehicle_model.rates:
        if rate == "q1_dot":
            var = pyo.Var(m.s, initialize=20.0, bounds=(cfg.v_min, 150.0), units=u.m / u.s,
                          doc="dq1/dt [m/s]")
        else:
            q = rate[:-len("_dot")]
            unit = JOINT_VARIABLES[q][1]
            var = pyo.Var(m.s, initialize=0.0, units=units[unit] / u.s, doc=f"d{q}/dt [{unit}/s]")
        m.add_component(rate, var)
    m.t = pyo.Var(m.s, initialize=0.0, units=u.s, doc="time [s]")


def add_tyre_wrench_variables(m, body: str, equations=("", "", "")) -> None:
    """The in-plane tyre wrench on ``body``, indexed by ``m.s``, initial value 0: the forces
    ``f_3x``, ``f_3y`` [N] along x3, y3 and the yaw moment ``m_3z`` [N m] about O3 (Bartali et
    al., eq. (36a-c)). The one declaration of the full and single-track models' tyre wrench.

    Parameters
    ----------
    m : ConcreteModel
        With the set ``m.s``.
    body : str
        What the wrench acts on, for the variables' docs (``"body 3"``, ``"the car"``).
    equations : tuple of 3 str
        What each doc cites after the unit (``", eq (36a)"``), default nothing.
    """
    u = pyo.units
    fx, fy, mz = equations
    m.f_3x = pyo.Var(m.s, initialize=0.0, units=u.N, doc=f"in-plane tyre force on {body}, x3 [N]{fx}")
    m.f_3y = pyo.Var(m.s, initialize=0.0, units=u.N, doc=f"in-plane tyre force on {body}, y3 [N]{fy}")
    m.m_3z = pyo.Var(m.s, initialize=0.0, units=u.N * u.m, doc=f"tyre yaw moment about O3 [N m]{mz}")


def add_car_controls(m, vehicle, cfg=None) -> None:
    """The controls the car models share, indexed by ``m.s``: traction ``f_xa`` >= 0 [N] on the
    rear axle, braking ``f_xb`` <= 0 [N] split by ``k_b`` (eq. 34), both within three times the
    car's weight times its larger friction coefficient, and the road-wheel steer angle
    ``delta`` within ``delta_max`` [rad]; the objective (41) penalizes them
    (:func:`add_objective`).

    With ``cfg.control_form == "state"`` (:data:`pyomo_lap.ocp.build.OCP_CONFIG`) the three are
    differential states in ``q1`` and their derivatives ``m.df_xa_ds`` [N/m], ``m.df_xb_ds``
    [N/m], ``m.ddelta_ds`` [rad/m] are the decision variables the penalties act on (declared
    here, before pyomo.dae's transformation)."""
    u = pyo.units
    b = car_control_bounds(vehicle)
    m.f_xa = pyo.Var(m.s, initialize=0.0, bounds=b["f_xa"], units=u.N, doc="traction force, rear axle, eq (34) [N]")
    m.f_xb = pyo.Var(m.s, initialize=0.0, bounds=b["f_xb"], units=u.N, doc="braking force, split by k_b, eq (34) [N]")
    m.delta = pyo.Var(m.s, initialize=0.0, bounds=b["delta"], units=u.rad, doc="road-wheel steer angle [rad]")
    if cfg is not None and control_states(cfg):
        add_derivative_vars(m, CAR_CONTROLS)


def _pyomo_unit(text: str):
    """The Pyomo unit of a schema unit string (``"kg m^2"``, ``"N s/m"``, ``"kg/m^3"``,
    ``"1/rad"``, ``"-"`` dimensionless)."""
    u = pyo.units
    if text in ("-", ""):
        return u.dimensionless
    num, _, den = text.partition("/")

    def product(part):
        out = u.dimensionless
        for tok in part.split():
            base, _, power = tok.partition("^")
            if base == "1":
                continue
            unit = getattr(u, base)
            out = out * (unit ** int(power) if power else unit)
        return out
    return product(num) / product(den) if den else product(num)


def _schema_bounds(field: str) -> tuple:
    """The range of a :class:`pyomo_lap.vehicle.schema.VehicleParameters` field (``(lo, up)``,
    None for an open side; a strict bound is given as the bound itself)."""
    return tuple(None if b is None else float(b[1])
                 for b in field_bounds(VehicleParameters.model_fields[field]))


def add_vehicle_block(m, vehicle) -> None:
    """The car's parameters as named model components, the IDAES way for design parameters:
    ``m.vehicle.<section>.<key>`` (``m.vehicle.mass.total``, ``m.vehicle.aero.Cz1``,
    ``m.vehicle.powertrain.brake_ratio`` ...), a ``Var`` per parameter of the vehicle file
    (:data:`pyomo_lap.vehicle.schema.PARAMETER_KEYS`) with its unit, the schema's range as
    bounds, its description, fixed at the car's value. The rows of the car refer to them: a
    changed value (``m.vehicle.mass.total.fix(250)``) is the model of that car
    (:func:`pyomo_lap.ocp.build.set_vehicle` brings the bounds and the entry speed along), an
    unfixed one (``.unfix()``, with bounds) a design variable of the setup optimization.
    Derived quantities are named ``Expression`` s of them on ``m.vehicle`` (``sprung_mass``,
    ``wheelbase``, ``static_load_front``, ``static_load_rear``, written once by the schema's
    property code).

    Parameters
    ----------
    m : ConcreteModel
    vehicle : VehicleParameters
    """
    u = pyo.units
    car_block(m, vehicle)            # m.vehicle, the car's block (made by new_sector_model)
    symbols = {}
    for sec, keys in {**SECTIONS, **OPTIONAL_SECTIONS}.items():
        block = None
        for key, field in keys.items():
            value = getattr(vehicle, field)
            if value is None or (sec in SECTIONS and absent(vehicle, f"{sec}.{key}")):
                continue       # not given, or a structural zero (no term in the rows)
            if block is None:
                block = pyo.Block(doc=f"[{sec}] of the vehicle file")
                m.vehicle.add_component(sec, block)
            info = VehicleParameters.model_fields[field]
            unit = (info.json_schema_extra or {}).get("unit", "-")
            var = pyo.Var(initialize=float(value), bounds=_schema_bounds(field),
                          units=_pyomo_unit(unit), doc=info.description)
            block.add_component(key, var)
            var.fix()
            symbols[field] = var
    m.vehicle.gravity = pyo.Var(initialize=float(vehicle.gravity), bounds=_schema_bounds("gravity"),
                                units=u.m / u.s ** 2, doc=VehicleParameters.model_fields["gravity"].description)
    m.vehicle.gravity.fix()
    symbols["gravity"] = m.vehicle.gravity
    sym = SymbolicVehicle(vehicle, symbols)
    m.vehicle.sprung_mass = pyo.Expression(expr=sym.m_s, doc="sprung mass m - m_u [kg]")
    m.vehicle.wheelbase = pyo.Expression(expr=sym.l, doc="wheelbase a1 + a2 [m]")
    front, rear = sym.static_loads
    m.vehicle.static_load_front = pyo.Expression(expr=front, doc="static load per front wheel [N]")
    m.vehicle.static_load_rear = pyo.Expression(expr=rear, doc="static load per rear wheel [N]")


def vehicle_var(m, name: str):
    """The model's variable of a car parameter by its dotted name (``"mass.total"``) or field
    name (``"m"``): ``m.vehicle.mass.total``.

    Raises
    ------
    ValueError
        An unknown name, or a parameter the model does not have (an optional section the car
        leaves out).
    """
    field = field_of(name)
    if field == "gravity":
        return m.vehicle.gravity
    key = KEY_OF_FIELD[field]
    sec, k = key.split(".")
    block = m.vehicle.component(sec)
    var = block.component(k) if block is not None else None
    if var is None:
        raise ValueError(f"vehicle parameter {key!r}: the model's car has no value for it")
    return var


def vehicle_of_model(m):
    """The car as the model's ``m.vehicle`` variables hold it now (their values, solved or
    set by hand): a :class:`~pyomo_lap.vehicle.schema.VehicleParameters`, validated.

    Raises
    ------
    ValueError
        Values the schema refuses (a cross-field rule, say), naming them.
    """
    p = m.vehicle.built_for
    if m.component("vehicle") is None:
        return p
    changes = {}
    for key in PARAMETER_KEYS + ("gravity",):
        sec, _, k = key.rpartition(".")
        block = m.vehicle.component(sec) if sec else m.vehicle
        var = block.component(k) if block is not None else None
        if var is not None and var.value is not None and var.value != getattr(p, field_of(key)):
            changes[key] = float(var.value)
    if not changes:
        return p
    try:
        return p.replace(changes)
    except ValidationError as exc:
        said = "; ".join(f"{KEY_OF_FIELD.get(str(e['loc'][0]), e['loc'][0])} = "
                         f"{e.get('input')!r}: {e['msg'].removeprefix('Value error, ')}"
                         for e in exc.errors())
        raise ValueError(f"the car's parameters in m.vehicle are refused by the vehicle "
                         f"schema: {said}") from None


def control_states(cfg, m=None) -> bool:
    """Whether the controls are differential states in ``q1``: ``cfg.control_form == "state"``
    and, given a model ``m``, the model declared their derivatives ``m.d<c>_ds`` (a vehicle model
    that declares its own controls without them, such as the worked example
    :mod:`pyomo_lap.ocp.point_mass`, keeps a value at every point)."""
    if getattr(cfg, "control_form", "point") != "state":
        return False
    return m is None or all(m.component(f"d{c}_ds") is not None for c in CAR_CONTROLS
                            if m.component(c) is not None)


def car_control_bounds(vehicle) -> dict:
    """The bounds of the controls of :func:`add_car_controls`: ``{name: (lower, upper)}``
    (``f_xa``, ``f_xb`` [N]: twice the car's largest tyre force :func:`force_scale`, downforce
    included: never active, a box for the solver; ``delta`` [rad]: ``delta_max``)."""
    p = vehicle
    fmax = 2.0 * force_scale(p)
    return {"f_xa": (0.0, fmax), "f_xb": (-fmax, 0.0), "delta": (-p.delta_max, p.delta_max)}


def set_bounds(m, bounds: dict) -> None:
    """``m.<name>[s].setlb/setub`` for every entry of each ``{name: (lower, upper)}``."""
    for name, (lo, up) in bounds.items():
        for v in m.component(name).values():
            v.setlb(lo)
            v.setub(up)


def add_derivative_vars(m, names) -> None:
    """``m.d<name>_ds``, the pyomo.dae derivative of ``m.<name>`` with respect to ``q1`` (``m.s``),
    in the variable's units per metre, for each of ``names``."""
    u = pyo.units
    for name in names:
        var = m.component(name)
        m.add_component(f"d{name}_ds", DerivativeVar(var, wrt=m.s, units=u.get_units(var) / u.m,
                                                     doc=f"d{name}/dq1"))
