r"""Lap-time sensitivities from one solve: :math:`dT^*/dp` for every numeric parameter of the
vehicle file and for the track's friction scale, from the optimal solution's multipliers.

Two derivatives come out: of the optimal **objective** :math:`f^*` (sector time plus the
penalties of eq (41)) by the envelope theorem, column ``dobj_dp``, and of the **sector time**
:math:`T` itself at the optimum (column ``dT_dp``), by one adjoint solve of the KKT system
(:func:`~pyomo_lap.analysis.lagrangian._sector_time_adjoint`), which also needs the Hessian of the Lagrangian. They differ by
the penalties' change with the parameter (0.01-3 % of ``dT_dp`` for the parameters that matter
on the default job, more for those that hardly matter: docs/sensitivities.md).

Method for the objective (envelope theorem)
-------------------------------------------
At a local optimum :math:`x^*` of :math:`\min f(x)` s.t. :math:`c(x; p) = b`, bounds
:math:`x_L(p) \le x \le x_U(p)`, with multipliers that satisfy the KKT conditions, the
derivative of the optimal objective with respect to a parameter is the partial derivative of
the Lagrangian at the optimum (x and the multipliers held fixed):

.. math::
    \frac{df^*}{dp} = -\sum_i y_i \frac{\partial (c_i - b_i)}{\partial p}
                      + \sum_j z_{L,j}\frac{\partial x_{L,j}}{\partial p}
                      + \sum_j z_{U,j}\frac{\partial x_{U,j}}{\partial p}
                      + \frac{\partial f^*}{\partial v_0}\,\frac{dv_0}{dp}

in Pyomo's sign conventions (those of :mod:`pyomo_lap.solvers.lap.solver`): the dual
:math:`y_i` of a row is :math:`\partial f^*/\partial b_i`, ``ipopt_zL_out`` :math:`\ge 0` and
``ipopt_zU_out`` :math:`\le 0` are :math:`\partial f^*` over the active lower / upper bound.
It holds where the active set does not change with :math:`p` (strict complementarity) and the
second-order conditions hold; the finite-difference tests (``tests/test_sensitivities.py``)
check it against re-solves.

How each part is computed (nothing is re-solved, nothing is differenced except the entry
speed; the same pieces serve the sector time's adjoint, see "What is and is not counted"):

* **The per-point rows** of the full model (spatial DAE, loads, in-plane equations, power
  limit with its bound :math:`P_{max}`, adherence, minimum speed, settled start:
  :func:`pyomo_lap.ocp.full_model.point_row_list`, the very function the model's tape is
  recorded from) are evaluated once more with the vehicle parameters as CasADi ``SX``
  symbols instead of numbers (the chain's masses, inertias and heights, eq (19)'s
  stiffness and damping, aero, tyre, brake ratio: everything
  :func:`pyomo_lap.vehicle.car.car_equations` uses). The gradient of
  :math:`\sum_i y_i (c_i - b_i)` with respect to the parameters comes by reverse-mode AD at
  every point (one mapped function), exact to rounding.
* **Variable bounds that depend on the car** (:func:`~pyomo_lap.analysis.lagrangian.bound_functions`): steer
  :math:`\pm\delta_{max}`, vertical loads :math:`[f_{z,min}, 20 m g]`, the traction / brake
  force bounds :math:`3 m g \max(\mu_{x0}, \mu_{y0})` (never active), and the track limits
  :math:`|q_2| \le w - \text{width}/2 - \text{margin}`; checked against the model's bounds
  before use.
* **The entry speed** of an open sector (``initial_speed="quasi-steady"``): ``q1_dot`` at
  the start is fixed to the quasi-steady estimate :math:`v_0(p)`
  (:func:`pyomo_lap.ocp.sector.entry_speed`). Its multiplier is the reduced gradient
  :math:`\partial f^*/\partial v_0 = -\sum_i y_i \partial c_i/\partial v_0` over the rows
  that hold it (the first point's rows, by AD, and pyomo.dae's collocation equations of the
  first element, which are linear); :math:`dv_0/dp` is a central difference of
  :func:`~pyomo_lap.ocp.sector.entry_speed` (a point-mass estimate, no solve). Column
  ``dT_dp_entry`` holds this part. A closed lap or a given entry speed has none.
* **The friction scale** ``friction_scale`` (row of section ``track``): the track has no
  friction of its own in this model; a scale :math:`\sigma` of the road's grip multiplies both
  tyre friction coefficients, :math:`\mu_{x0}, \mu_{y0} \to \sigma\mu_{x0}, \sigma\mu_{y0}`, so
  at :math:`\sigma = 1`: :math:`dT/d\sigma = \mu_{x0}\, dT/d\mu_{x0} + \mu_{y0}\, dT/d\mu_{y0}`
  (exact).

What is and is not counted
--------------------------
* The objective is the sector time plus the penalties of eq (41) (steering jumps
  :math:`K_\delta`, complementarity :math:`K_f`): the multipliers are those of this
  objective, so the envelope theorem gives the derivatives of the optimal objective
  (``dobj_dp``), penalties included (they depend on the parameters only through the optimal
  trajectory). ``dT_dp`` is the sector time's: with the active set fixed, the optimum moves by
  :math:`dx = -K^{-1}[\nabla^2_{xp}L; \partial c_A/\partial p]\,dp` (:math:`K` the KKT
  matrix at the solution, active rows and bounds as equalities), and one solve of
  :math:`K[u; v] = [\nabla T; 0]` gives :math:`dT/dp = -(u^T\nabla^2_{xp}L + v^T\partial
  c_A/\partial p)` for every parameter at once (sIPOPT's sensitivity system; Pirnay, Lopez-Negrete,
  Biegler, *Optimal sensitivity based on IPOPT*, Math. Prog. Comp. 4 (2012) 307-331). The
  tests compare both against finite differences of re-solves. The objective's scaling
  (``scaling_factor``, about 1000) is IPOPT's business: the duals Pyomo receives are those of
  the unscaled problem (seconds). Should the KKT matrix be singular (degenerate active set),
  ``dT_dp`` falls back to ``dobj_dp`` with a :class:`RuntimeWarning` (``attrs["method"]``).
* ``gravity`` and ``name``/``description`` are not parameters of the vehicle file
  (:data:`pyomo_lap.vehicle.schema.SECTIONS`) and are not listed.
* The initial guess, the mesh and the scaling depend on the car but not the optimum; they
  are not counted.
* Only the models whose ``VehicleModel.lap_time_sensitivities`` is true (the full model,
  ``model="full"``) are supported; the others' rows are not written as a function of the
  parameters in the layout read here (:class:`NotImplementedError`).
* User rows added to the model after the build are counted only if they do not depend on the
  vehicle parameters (they are not seen here).

Sources: A. V. Fiacco, *Introduction to Sensitivity and Stability Analysis in Nonlinear
Programming* (1983), Thm 3.4.1; J. Nocedal, S. J. Wright, *Numerical Optimization*, 2nd ed.,
sec. 12.8 (the meaning of the multipliers); IPOPT's bound-multiplier convention,
https://coin-or.github.io/Ipopt/ (``ipopt_zL_out``/``ipopt_zU_out``).
"""
from __future__ import annotations

import time
import warnings
from typing import Optional

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ..ocp.build import build_model, models_with
from ..ocp.common import PENALTIES, regularization
from ..ocp.full_model import vehicle_inputs
from ..ocp.initialize import initialize_from_solution
from ..ocp.point_functions import record_of
from ..ocp.sector import entry_speed
from ..solvers.solve import solve_model
from ..solvers.warm_start import WARM_START_IPOPT_OPTIONS
from ..vehicle.schema import KEY_OF_FIELD, SECTIONS, VehicleParameters, field_of
from .lagrangian import (
    _AttributeSpy,
    _bound_gradient,
    _bound_multipliers,
    _check_bounds,
    _collocation_part,
    _point_lagrangian,
    _sector_time_adjoint,
    bound_functions,
)

__all__ = ["PARAMETERS", "parameters_of", "SENSITIVITY_COLUMNS", "SENSITIVITY_SOLVER_OPTIONS",
           "FD_SOLVER_OPTIONS", "finite_difference", "declare_multiplier_suffixes",
           "lap_time_sensitivities", "parameter_unit", "lap_time_cost",
           "PENALTY_COST_FACTOR"]

PARAMETERS = tuple(attr for keys in SECTIONS.values() for attr in keys.values())
"""The numeric parameters of a vehicle file (:data:`pyomo_lap.vehicle.schema.SECTIONS`, in
file order); a car's sensitivity table has those it gives (:func:`parameters_of`)."""


def parameters_of(p) -> tuple:
    """The parameters of the car ``p`` its rows take as symbols (field names, in file order;
    the optional keys the car leaves out and the structural zeros it has are not among them:
    :func:`pyomo_lap.ocp.full_model.vehicle_inputs`): the vehicle rows of its sensitivity
    table."""
    have = {field_of(k) for k in vehicle_inputs(p) if k != "gravity"}
    return tuple(a for a in PARAMETERS if a in have)

SECTION_OF = {attr: sec for sec, keys in SECTIONS.items() for attr in keys.values()}

SENSITIVITY_COLUMNS = {
    "parameter": "name of the parameter (the dotted name of the vehicle file, e.g. mass.total, or friction_scale)",
    "section": "section of the vehicle file ([mass], [tyre] ...) or 'track'",
    "unit": "unit of the parameter",
    "value": "value of the parameter [unit]",
    "dT_dp": "d(lap time)/d(parameter): the sector time at the optimum [s per unit]",
    "dT_1pct": "change of the lap time for +1 % of the parameter, 0.01 value dT/dp [s]",
    "dT_dp_entry": "part of dT_dp through the entry speed of an open sector [s per unit]",
    "dobj_dp": "d(objective)/d(parameter), the objective = sector time + penalties of eq (41), "
               "by the envelope theorem [s per unit]",
}
"""Columns of the sensitivity table and their meaning."""

def parameter_unit(name: str) -> str:
    """Unit of a vehicle parameter (its schema's ``unit``), ``"-"`` for ``friction_scale``."""
    if name == "friction_scale":
        return "-"
    extra = VehicleParameters.model_fields[name].json_schema_extra or {}
    return extra.get("unit", "")


def declare_multiplier_suffixes(m) -> None:
    """Declare the import suffixes the sensitivities need before the solve: ``dual``, ``rc``,
    ``ipopt_zL_out``, ``ipopt_zU_out`` (kept if already there)."""
    for name in ("dual", "rc", "ipopt_zL_out", "ipopt_zU_out"):
        if m.component(name) is None:       # dual also exported: a warm start's row multipliers
            m.add_component(name, pyo.Suffix(direction=pyo.Suffix.IMPORT_EXPORT if name == "dual"
                                             else pyo.Suffix.IMPORT))


def lap_time_sensitivities(m, parameters=None, entry_step: float = 1e-4):
    r""":math:`dT^*/dp` of a solved full model for the parameters of its vehicle file and the
    friction scale, from the multipliers (module docstring: method, what is counted).

    Parameters
    ----------
    m : ConcreteModel
        A full model (:func:`pyomo_lap.ocp.build.build_model`, ``model="full"``) solved to
        optimality with the suffixes ``dual``, ``ipopt_zL_out`` and ``ipopt_zU_out`` declared
        before the solve (:func:`declare_multiplier_suffixes`; ``solve_sector(...,
        sensitivities=True)`` does this).
    parameters : sequence of str, optional
        Subset of :data:`PARAMETERS` (and ``"friction_scale"``); default all.
    entry_step : float
        Relative step of the central difference of the entry speed (absolute for a
        parameter whose value is 0).

    Returns
    -------
    pandas.DataFrame
        One row per parameter, columns :data:`SENSITIVITY_COLUMNS` (``dT_dp``: the sector
        time's derivative, ``dobj_dp``: the objective's); ``attrs`` holds ``objective_s``,
        ``lap_time_s``, ``entry_speed_multiplier`` (:math:`\partial f^*/\partial v_0` [s per
        m/s] or None), ``method`` (``"adjoint"``, or the fallback), ``adjoint`` (KKT size,
        active rows and bounds, residual, time) and ``time_s`` (the computation's wall time).

    Raises
    ------
    NotImplementedError
        A model without ``VehicleModel.lap_time_sensitivities`` (not the full model), or
        built with the option ``lift``.
    ValueError
        The model carries no duals (suffixes not declared before the solve, or not solved)
        or an unknown parameter name.
    RuntimeError
        The model's bounds differ from :func:`bound_functions`.
    """
    t0 = time.perf_counter()
    prob, dual, zl, zu = _checked_model(m)
    cfg, p = prob.options, m.vehicle.built_for
    names = list(parameters_of(p))
    wanted = _wanted_parameters(parameters, names)
    rows = _point_lagrangian(m, names, dual)
    gp, gw, _, _ = rows.F(rows.Wv, rows.Tv, rows.PP, rows.Dv, np.zeros(rows.Wv.shape))
    grad_rows = -np.asarray(gp).sum(axis=1)           # -sum y dc/dp
    # variable bounds that depend on p
    _check_bounds(m, p, cfg)
    bsym = bound_functions(rows.sym, cfg)
    bound_mult = _bound_multipliers(m, zl, zu)
    grad_bounds = _bound_gradient(m, bsym, rows, bound_mult)
    v0_mult, dv0_dp, grad_entry = _entry_speed_part(m, names, gw, dual, entry_step)
    dobj = grad_rows + grad_bounds + grad_entry

    # the sector time itself: one adjoint solve of the KKT system
    method = "adjoint"
    try:
        dT, dT_v0, info = _sector_time_adjoint(
            m, rows, bsym, bound_mult, v0=m.q1_dot[rows.sigma[0]] if v0_mult is not None else None)
        entry = dT_v0 * dv0_dp
        dT = dT + entry
    except (RuntimeError, ValueError, NotImplementedError, np.linalg.LinAlgError) as exc:
        warnings.warn(f"the sector time's derivatives could not be computed ({exc}); dT_dp holds "
                      "the objective's (penalties included)", RuntimeWarning, stacklevel=2)
        dT, entry, info, method = dobj, grad_entry, {}, f"objective (adjoint failed: {exc})"
    df = _sensitivity_table(p, names, wanted, dT, entry, dobj)
    df.attrs.update(objective_s=float(pyo.value(m.objective)), lap_time_s=float(pyo.value(m.lap_time)),
                    entry_speed_multiplier=v0_mult, method=method, adjoint=info,
                    time_s=time.perf_counter() - t0)
    return df


def _checked_model(m) -> tuple:
    """``(m.problem, dual, ipopt_zL_out, ipopt_zU_out)`` of a model
    :func:`lap_time_sensitivities` can take.

    Raises
    ------
    NotImplementedError, ValueError
        As :func:`lap_time_sensitivities`.
    """
    prob = m.problem
    vm = prob.vehicle_model
    if not vm.lap_time_sensitivities or record_of(m) is None:
        raise NotImplementedError(
            f"lap-time sensitivities of the model {vm.name!r}: they need one of the models "
            f"{', '.join(map(repr, models_with('lap_time_sensitivities')))} "
            "(VehicleModel.lap_time_sensitivities)")
    if prob.options.lift:
        raise NotImplementedError("lap-time sensitivities of a model built with the option 'lift'")
    dual = m.component("dual")
    zl, zu = m.component("ipopt_zL_out"), m.component("ipopt_zU_out")
    if dual is None or zl is None or zu is None or len(dual) == 0:
        raise ValueError("the model carries no multipliers: declare the suffixes with "
                         "pyomo_lap.analysis.sensitivities.declare_multiplier_suffixes(m) before "
                         "solving it to optimality")
    return prob, dual, zl, zu


def _wanted_parameters(parameters, names=PARAMETERS) -> list:
    """The field names (``m``) of the parameters asked for by dotted name (``mass.total``) or
    field name, and ``"friction_scale"``; all of :data:`PARAMETERS` and the friction scale
    for None.

    Raises
    ------
    ValueError
        An unknown name.
    """
    wanted = list(names) + ["friction_scale"] if parameters is None else list(parameters)
    for i, name in enumerate(wanted):         # dotted names (mass.total) or field names (m)
        if name != "friction_scale":
            try:
                wanted[i] = field_of(name)
            except ValueError:
                wanted[i] = None
            if wanted[i] not in names:
                raise ValueError(f"unknown parameter {name!r}: expected one of "
                                 f"{', '.join(KEY_OF_FIELD[k] for k in names)}, friction_scale")
    return wanted


def _entry_speed_part(m, names: list, gw, dual, entry_step: float) -> tuple:
    r"""The entry speed of an open sector with ``initial_speed="quasi-steady"``: its multiplier
    :math:`\partial f^*/\partial v_0` [s per m/s] (None without such an entry speed) and
    :math:`dv_0/dp` (zeros without), by central differences of
    :func:`pyomo_lap.ocp.sector.entry_speed` of step ``entry_step`` (relative), and their
    product, the entry speed's part of :math:`df^*/dp`."""
    prob = m.problem
    cfg, p = prob.options, m.vehicle.built_for
    dv0_dp, grad_entry = np.zeros(len(names)), np.zeros(len(names))
    first = record_of(m).points[0]
    if prob.initial_speed is None or cfg.initial_speed != "quasi-steady":
        return None, dv0_dp, grad_entry
    v0_mult = -float(np.asarray(gw)[0, 0])
    v0_mult -= _collocation_part(m, m.q1_dot[first], dual)
    vmax = m.q1_dot[first].ub
    spy = _AttributeSpy(p)      # the fields the estimate reads: the others give 0
    entry_speed(prob.track, spy, cfg, vmax)
    used = set(names) if spy.used - set(names) - {"gravity"} else spy.used
    for i, k in enumerate(names):
        if k not in used:
            continue
        val = getattr(p, k)
        h = entry_step * abs(val) if val != 0 else entry_step
        try:
            vp = entry_speed(prob.track, p.replace(**{k: val + h}), cfg, vmax)
            vm = entry_speed(prob.track, p.replace(**{k: val - h}), cfg, vmax)
        except ValueError:    # at the edge of the schema's range: one-sided
            try:
                vp = entry_speed(prob.track, p.replace(**{k: val + h}), cfg, vmax)
                vm, h = prob.initial_speed, h / 2
            except ValueError:
                vp, h = prob.initial_speed, h / 2
                vm = entry_speed(prob.track, p.replace(**{k: val - h * 2}), cfg, vmax)
        dv0_dp[i] = (vp - vm) / (2 * h)
        grad_entry[i] = v0_mult * dv0_dp[i]
    return v0_mult, dv0_dp, grad_entry


def _sensitivity_table(p, names: list, wanted: list, dT, entry, dobj):
    """The table of :func:`lap_time_sensitivities` (:data:`SENSITIVITY_COLUMNS`), one row per
    name of ``wanted``, from the derivatives over ``names``."""

    def per_name(vec):
        d = dict(zip(names, vec))
        d["friction_scale"] = p.mu_x0 * d["mu_x0"] + p.mu_y0 * d["mu_y0"]
        return d
    by_name, entry_by_name, obj_by_name = per_name(dT), per_name(entry), per_name(dobj)
    records = []
    for name in wanted:
        value = 1.0 if name == "friction_scale" else float(getattr(p, name))
        records.append({"parameter": name if name == "friction_scale" else KEY_OF_FIELD[name],
                        "section": "track" if name == "friction_scale" else SECTION_OF[name],
                        "unit": parameter_unit(name), "value": value,
                        "dT_dp": float(by_name[name]), "dT_1pct": 0.01 * value * float(by_name[name]),
                        "dT_dp_entry": float(entry_by_name[name]),
                        "dobj_dp": float(obj_by_name[name])})
    return pd.DataFrame.from_records(records, columns=list(SENSITIVITY_COLUMNS))


SENSITIVITY_SOLVER_OPTIONS = {"tol": 1e-10, "acceptable_tol": 1e-9}
"""IPOPT options of a solve whose sensitivities are wanted (``solve_sector(...,
sensitivities=True)``, ``pyomo-lap solve --sensitivities``; a solver option given by the user
wins). At the default ``tol = 1e-5`` the active set and the multipliers are those of a barrier
parameter still large enough to shift the sector time's derivatives by up to 1 % for most
parameters (6 % for ``a1``, whose effect is small; docs/sensitivities.md); the
tighter solve costs about 8 more iterations on the default job."""

FD_SOLVER_OPTIONS = {"tol": 1e-10, "acceptable_tol": 1e-9, "acceptable_iter": 0,
                     "mu_init": 1e-6, "bound_push": 1e-8, "bound_frac": 1e-8}
"""IPOPT options of the finite-difference re-solves of :func:`finite_difference`: warm started
(the small barrier parameter and bound push of
:data:`pyomo_lap.solvers.warm_start.WARM_START_IPOPT_OPTIONS`) and converged much tighter than the
default ``tol = 1e-5``, so that the solver's own error stays far below the change of the
lap time over the step (docs/sensitivities.md)."""


def _vehicle_with(p: VehicleParameters, name: str, value: float) -> VehicleParameters:
    if name == "friction_scale":      # relative to the current grip (scale 1)
        return p.replace(mu_x0=p.mu_x0 * value, mu_y0=p.mu_y0 * value)
    return p.replace({name: value})


def finite_difference(m, parameter: str, rel_step: float = 1e-3, solver: str = "lap_ipopt",
                      options: Optional[dict] = None) -> dict:
    """Central finite difference of the optimal objective and the sector time with respect to
    one parameter, by two re-solves warm started from the solved model ``m`` (the reference
    of the multiplier-based :func:`lap_time_sensitivities`; expensive: two solves).

    Parameters
    ----------
    m : ConcreteModel
        A solved model (any vehicle model); its track, options and mesh are kept.
    parameter : str
        A name of :data:`PARAMETERS` or ``"friction_scale"`` (both friction coefficients
        scaled).
    rel_step : float
        Step relative to the parameter's value (absolute for a value of 0) [-].
    solver : str
    options : dict, optional
        Solver options; default :data:`FD_SOLVER_OPTIONS`.

    Returns
    -------
    dict
        ``dobj_dp`` and ``dT_dp`` [s per unit], ``h`` (the step [unit]), ``objective``
        and ``lap_time`` at ``p - h``, ``p + h`` [s], ``iterations`` of both solves.

    Raises
    ------
    RuntimeError
        A re-solve did not reach an optimal solution.
    """
    prob = m.problem
    p = m.vehicle.built_for
    value = 1.0 if parameter == "friction_scale" else float(p.value(parameter))
    h = rel_step * abs(value) if value != 0 else rel_step
    opts = dict(FD_SOLVER_OPTIONS if options is None else options)
    cfg = prob.options.value()
    cfg.pop("model", None)
    # the same mesh: its element boundaries (an adaptive mesh would be placed anew for the
    # perturbed car)
    cfg["nfe"] = None
    cfg["element_boundaries"] = tuple(float(b) for b in sorted(m.s.get_finite_elements()))
    out = {"h": h, "objective": [], "lap_time": [], "iterations": []}
    for sign in (-1, 1):
        mp = build_model(prob.track, _vehicle_with(p, parameter, value + sign * h),
                         model=prob.vehicle_model, **cfg)
        initialize_from_solution(mp, m)
        r = solve_model(mp, solver=solver, options=opts)
        if not r.ok:
            raise RuntimeError(f"finite difference of {parameter}: the re-solve at "
                               f"{value + sign * h} did not converge ({r.describe()})")
        out["objective"].append(float(pyo.value(mp.objective)))
        out["lap_time"].append(float(pyo.value(mp.lap_time)))
        out["iterations"].append(r.iterations)
    out["dobj_dp"] = (out["objective"][1] - out["objective"][0]) / (2 * h)
    out["dT_dp"] = (out["lap_time"][1] - out["lap_time"][0]) / (2 * h)
    return out


PENALTY_COST_FACTOR = 10.0
"""The factor every penalty weight is divided by to measure what the penalties cost in lap
time (:func:`lap_time_cost`). Measured on the default job (FSAE car, Nordschleife 0-2000 m):
the sector time is 20.2 ms shorter with every weight / 10 and 0.29 ms shorter with every
weight / 1.02 (the adjoint's dT/d ln w is 14.4 ms): the cost saturates, and with weights / 10
most of it is counted. Weights of 0 are not tried: without them the controls chatter between
collocation points and the optimum is not unique."""


def lap_time_cost(m, solver: str = "lap_ipopt", options: Optional[dict] = None,
                  factor: float = PENALTY_COST_FACTOR) -> dict:
    r"""What the objective's penalties cost in lap time: the sector time of the solved model
    ``m`` less the sector time of the same problem with every penalty weight divided by
    ``factor``, solved again from ``m``'s optimum (warm start). ``m`` keeps its values, its
    weights and its multipliers (they are put back).

    With :math:`J(\lambda) = \min_x T(x) + \lambda P(x)` (every weight scaled by
    :math:`\lambda`), :math:`J` is concave and :math:`J'(\lambda) = P(x^*_\lambda)`, so the
    lap time :math:`T_\lambda = J(\lambda) - \lambda J'(\lambda)` grows with :math:`\lambda`,
    and between :math:`\lambda = r = 1/\text{factor}` and 1 (:math:`S_\lambda = \lambda
    P(x^*_\lambda)`, the penalties in seconds at each solve):

    .. math::
        S_r - r S_1 \;\le\; T_1 - T_r \;\le\; S_r / r - S_1 .

    The bounds are returned with the cost (``bounds_s``): a cost outside them says that one of
    the two solves is not the optimum of its problem (a test checks it).

    Parameters
    ----------
    m : ConcreteModel
        A model of :func:`pyomo_lap.ocp.build.build_model` solved to optimality.
    solver : str
    options : dict, optional
        The solver options of the first solve; the warm start's
        (:data:`pyomo_lap.solvers.warm_start.WARM_START_IPOPT_OPTIONS`) are added.
    factor : float
        > 1 [-].

    Returns
    -------
    dict
        ``lap_time_cost_s`` (:math:`T_1 - T_r` [s]; None when the re-solve is not optimal),
        ``weights_divided_by``, ``lap_time_s`` (:math:`T_r`), ``penalties_s``
        (:math:`S_r`), ``bounds_s`` ([lower, upper] [s]), ``iterations``, ``optimal``,
        ``termination_condition``, ``time_s`` (the re-solve's wall time).

    Raises
    ------
    ValueError
        ``factor`` not above 1, or a model without penalties.
    """
    if not factor > 1.0:
        raise ValueError(f"factor = {factor!r}: expected a number above 1")
    weights = {K: m.component(K) for _, K, _ in PENALTIES if m.component(K) is not None}
    if not weights:
        raise ValueError("the model has no penalty weights (pyomo_lap.ocp.common.PENALTIES)")
    t0 = time.perf_counter()
    first = regularization(m)
    w0 = {K: float(pyo.value(k)) for K, k in weights.items()}
    values = [(v, v.value) for v in m.component_data_objects(pyo.Var, descend_into=True)]
    suffixes = {s.local_name: list(s.items()) for s in m.component_objects(pyo.Suffix, descend_into=False)}
    try:
        for K, k in weights.items():
            k.set_value(w0[K] / factor)
        rep = solve_model(m, solver=solver, options={**WARM_START_IPOPT_OPTIONS, **(options or {})})
        second = regularization(m) if rep.ok else None
    finally:
        for K, k in weights.items():
            k.set_value(w0[K])
        for v, x in values:
            v.set_value(x, skip_validation=True)
        for name, items in suffixes.items():
            s = m.component(name)
            s.clear()
            for key, value in items:
                s[key] = value
    out = {"lap_time_cost_s": None, "weights_divided_by": float(factor), "lap_time_s": None,
           "penalties_s": None, "bounds_s": None, "iterations": rep.iterations,
           "optimal": bool(rep.ok), "termination_condition": str(rep.termination_condition),
           "time_s": time.perf_counter() - t0}
    if second is not None:
        r, S1, Sr = 1.0 / factor, first["total_s"], second["total_s"]
        out.update(lap_time_cost_s=first["lap_time_s"] - second["lap_time_s"],
                   lap_time_s=second["lap_time_s"], penalties_s=Sr,
                   bounds_s=[Sr - r * S1, Sr / r - S1])
    return out
