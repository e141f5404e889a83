"""Diagnostics of the built model: the IDAES diagnostics toolbox and a units check.

:func:`diagnose` builds a model for diagnosis, makes it square and runs the IDAES
``DiagnosticsToolbox`` on it:

* *structural* checks (degrees of freedom, structural singularity by the Dulmage-Mendelsohn
  partition, units, potential evaluation errors) and
* *numerical* checks (residuals at the current point, variables at bounds, Jacobian condition
  number, extreme and parallel Jacobian rows/columns), which need PyNumero's ASL library
  (``libpynumero_ASL.so``: ``bash scripts/install_pynumero.sh .venv/bin/python .venv/lib``,
  run by the bootstrap, or ``idaes get-extensions``).

Two choices make the toolbox usable on this model:

1. **Lifted intermediates.** The toolbox walks every constraint expression without sharing
   named subexpressions, which is exponential in the nesting depth of the ABA expressions
   (minutes for a single point). The model for diagnosis is therefore built with the OCP
   option ``lift=("",)``: every tagged intermediate of the ABA and of the car becomes a
   variable of the block ``m.car`` with its defining equation (the same equations, written
   flat; see :data:`pyomo_lap.ocp.build.OCP_CONFIG`).
2. **Square system.** An optimal control problem has degrees of freedom (the controls and the
   free entry state); the structural checks report them as an under-constrained set.
   :func:`square_up` fixes the controls of every finite element and the free entry
   position/yaw at their current values, so what remains is the DAE and the algebraic loop
   that must be well-posed for any control. The inequality (path) constraints are
   deactivated for the toolbox: they are not part of that square system of equations (and
   would make the Jacobian rectangular).
3. **Equations as equations.** :func:`pyomo_lap.ocp.build.build_model` writes every row as
   ``lower <= body <= upper``, the equalities with ``lower == upper`` (a ``RangedExpression``
   that Pyomo treats as an equality). Pyomo's incidence analysis, which the toolbox's
   structural checks use, takes only ``EqualityExpression`` objects as equations and leaves
   the others out of the Dulmage-Mendelsohn partition: the dynamics, the load and in-plane
   equations would look missing and the model structurally singular.
   :func:`equalities_as_equations` rewrites them as ``body == value`` first.

:func:`check_units` checks the units of the model's optimal-control layer with Pyomo's
``assert_units_consistent`` (see its docstring for what it covers and what it cannot).
"""
from __future__ import annotations

import io
import logging
import sys
from pathlib import Path
from typing import Optional

import pyomo.environ as pyo
from pyomo.common.dependencies import attempt_import
from pyomo.contrib.pynumero.asl import AmplInterface
from pyomo.core.expr.relational_expr import EqualityExpression
from pyomo.util.check_units import assert_units_consistent

from ..ocp.build import RATE_NAMES, STATE_NAMES, build_model
from ..ocp.common import control_states
from ..ocp.initialize import initialize_model
from ..solvers.solve import solve_model
from ..track.geometry import Track
from ..track.loading import load_track
from ..vehicle.car import ALGEBRAIC, CONTROLS, VehicleParameters, load_vehicle

diagnostics_toolbox, diagnostics_toolbox_available = attempt_import(
    "idaes.core.util.diagnostics_tools.diagnostics_toolbox")
model_statistics, model_statistics_available = attempt_import("idaes.core.util.model_statistics")

__all__ = ["diagnose", "square_up", "equalities_as_equations", "check_units", "pynumero_available",
           "UNIT_CHECKED_COMPONENTS", "PYNUMERO_HINT"]

PYNUMERO_HINT = ("the numerical checks need PyNumero's ASL library (libpynumero_ASL.so): build it "
                 "with `bash scripts/install_pynumero.sh .venv/bin/python .venv/lib` (the bootstrap "
                 "does) or get it with `idaes get-extensions`")

UNIT_CHECKED_COMPONENTS = ("ode_q", "ode_t", "controls_at_start", "periodic", "lap_time",
                           "steer_rate_penalty", "force_rate_penalty", "force_penalty",
                           "steer_penalty", "complementarity_penalty", "objective")
"""Components of the model whose units :func:`check_units` asserts consistent."""


def pynumero_available() -> bool:
    """True when PyNumero's ASL interface can be loaded (looks in ``<venv>/lib`` first)."""
    lib = Path(sys.prefix) / "lib" / "libpynumero_ASL.so"
    if lib.exists() and not AmplInterface.available():
        AmplInterface.libname = str(lib)
    try:
        return bool(AmplInterface.available())
    except Exception:  # a library of another interface version
        return False


def square_up(m) -> list:
    """Fix the degrees of freedom of an OCP at their current values.

    Fixes the controls ``f_xa``, ``f_xb``, ``delta`` at the first collocation point of every
    finite element (with piecewise-constant controls the other points follow by Pyomo's
    interpolation constraints, the value at ``s = 0`` by ``controls_at_start``) or, when the
    controls are states (``control_form = "state"``), their rates ``d<c>_ds`` at every
    collocation point and their values at ``s = 0``; and, on an open sector, the entry position
    ``q2`` and yaw ``q3`` that the optimizer may choose.

    Returns
    -------
    list of VarData
        The variables that were fixed (unfix them to undo).
    """
    sigma = sorted(m.s)
    idx = {s: i for i, s in enumerate(sigma)}
    elems = sorted(m.s.get_finite_elements())
    ctrl_pts = [sigma[idx[e] + 1] for e in elems[:-1]]
    if not m.problem.options.piecewise_constant_controls:
        ctrl_pts = sigma[1:]
    fixed = []
    for name in ("f_xa", "f_xb", "delta"):
        var = m.component(name)
        pts = ctrl_pts
        if control_states(m.problem.options, m):
            var, pts = m.component(f"d{name}_ds"), sigma[1:]
            if not m.problem.options.periodic and not m.component(name)[sigma[0]].fixed:
                m.component(name)[sigma[0]].fix()
                fixed.append(m.component(name)[sigma[0]])
        for s in pts:
            if not var[s].fixed:
                var[s].fix()
                fixed.append(var[s])
    if not m.problem.options.periodic:
        for name in ("q2", "q3"):
            v = m.component(name)[sigma[0]]
            if not v.fixed:
                v.fix()
                fixed.append(v)
    return fixed


def equalities_as_equations(m) -> int:
    """Rewrite the active equality constraints written as ``lower <= body <= upper`` with
    ``lower == upper`` as ``body == upper``.

    Pyomo reports such a constraint as an equality (``equality`` is True), but its incidence
    analysis (``pyomo.contrib.incidence_analysis``, used by the IDAES toolbox for degrees of
    freedom and the Dulmage-Mendelsohn partition) keeps only constraints whose expression is
    an ``EqualityExpression`` when inequalities are excluded. The rows of
    :func:`pyomo_lap.ocp.build.build_model` are written with both bounds, so without this the
    toolbox leaves every dynamics, load and in-plane equation out of its partition.

    Returns
    -------
    int
        The number of constraints rewritten.
    """
    count = 0
    for c in m.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        if c.equality and not isinstance(c.expr, EqualityExpression):
            c.set_value(c.body == pyo.value(c.upper))
            count += 1
    return count


def check_units(m, components=UNIT_CHECKED_COMPONENTS) -> dict:
    """Assert with Pyomo that the units of the model's optimal-control layer are consistent.

    What is checked: every variable that the OCP declares (states, rates, time, controls,
    algebraic variables, the derivative variables ``d<state>_ds`` in ``<state unit>/m``) and the
    parameters ``K_delta`` [s/rad^2], ``K_f`` [s/N^2] carry units; the spatial kinematics
    ``q1_dot dq_k/ds = q_k_dot`` (``ode_q``), ``q1_dot dt/ds = 1`` (``ode_t``), the boundary
    conditions and the objective (41) (a time [s]) are dimensionally consistent.

    What is not: the equations that contain the car's physics (``ode_qdot``, ``loads_eq``,
    ``inplane_eq``, ``power_limit``, ``adherence``, ``speed_min`` and the named expressions of
    ``m.car``) are built from the vehicle parameters and the track data as plain floats in SI
    units (:mod:`pyomo_lap.vehicle.car`, written once for floats, Pyomo and CasADi), so Pyomo sees
    them as dimensionless; and pyomo.dae writes the collocation equations with the element
    length as a plain number. Those are listed under ``not_checked``.

    Parameters
    ----------
    m : ConcreteModel
        From :func:`pyomo_lap.ocp.build.build_model`.
    components : sequence of str
        Names of the components to check (those absent from the model are skipped).

    Returns
    -------
    dict
        ``checked`` (names), ``vars_without_units`` (names, should be empty), ``not_checked``
        (name -> reason).

    Raises
    ------
    pyomo.core.base.units_container.UnitsError
        A checked component is inconsistent (the message names it).
    ValueError
        A declared variable or parameter has no units.
    """
    u = pyo.units
    missing = []
    declared = STATE_NAMES + RATE_NAMES + ("t",) + CONTROLS + ALGEBRAIC
    for name in declared + tuple(f"d{k}_ds" for k in STATE_NAMES + RATE_NAMES + ("t",)) + ("K_delta", "K_f"):
        comp = m.component(name)
        if comp is not None and u.get_units(comp) is None:
            missing.append(name)
    if missing:
        raise ValueError(f"variables/parameters without units: {missing}")
    checked = []
    for name in components:
        comp = m.component(name)
        if comp is None:
            continue
        assert_units_consistent(comp)
        checked.append(name)
    reason_phys = ("car physics built from float parameters in SI units (dimensionless to Pyomo)")
    not_checked = {n: reason_phys for n in ("ode_qdot", "loads_eq", "inplane_eq", "power_limit",
                                             "adherence", "speed_min", "settled_start", "car")
                   if m.component(n) is not None}
    for c in m.component_objects(pyo.Constraint, descend_into=False):
        if c.local_name.endswith("_disc_eq") or c.local_name.endswith("_interpolation_constraints"):
            not_checked[c.local_name] = "pyomo.dae discretization (element length as a plain number)"
    return {"checked": checked, "vars_without_units": missing, "not_checked": not_checked}


def diagnose(track="nordschleife", vehicle="fsae", start: float = 500.0, length: float = 100.0,
             nfe: int = 5, ncp: int = 2, numerical: bool = True, solve: bool = False,
             solver: str = "ipopt", stream=None, echo=print) -> dict:
    """Build a short sector for diagnosis and run the IDAES diagnostics toolbox on it.

    Parameters
    ----------
    track, vehicle : name, path or object
        As for :func:`pyomo_lap.api.solve_sector`.
    start, length : float
        Sector [m]; keep it short (the lifted model has ~330 variables per point).
    nfe, ncp : int
        Mesh.
    numerical : bool
        Also run the numerical checks (needs PyNumero's ASL library, see
        :data:`PYNUMERO_HINT`; skipped with a message when it is missing).
    solve : bool
        Solve the (lifted) OCP first and diagnose the optimum; otherwise the cold-start
        initial guess is diagnosed.
    solver : str
        Pyomo solver name for ``solve=True``.
    stream : file-like, optional
        Where the toolbox writes its reports (default: ``sys.stdout``).
    echo : callable
        Progress messages.

    Returns
    -------
    dict
        ``model`` (the squared model), ``toolbox`` (the ``DiagnosticsToolbox``), ``structural``
        and ``numerical`` (report text, ``None`` when not run), ``structural_warnings`` and
        ``numerical_warnings`` (warning lines), ``degrees_of_freedom`` (after squaring),
        ``units`` (:func:`check_units`), ``fixed`` (names fixed by :func:`square_up`),
        ``deactivated_inequalities`` (count), ``solve`` (SolveReport or None).

    Raises
    ------
    ValueError
        Bad track, vehicle or sector.
    """
    m, rep = _diagnosis_model(track, vehicle, start, length, nfe, ncp, solve, solver, echo)
    units, fixed, dof, n_ineq = _square_system(m, model_statistics.degrees_of_freedom, echo)
    dt, structural, numerical_txt = _run_toolbox(
        m, diagnostics_toolbox.DiagnosticsToolbox, numerical, stream or sys.stdout, echo)
    return {"model": m, "toolbox": dt, "structural": structural, "numerical": numerical_txt,
            "structural_warnings": _warnings(structural),
            "numerical_warnings": _warnings(numerical_txt) if numerical_txt else [],
            "degrees_of_freedom": dof, "units": units, "fixed": [v.name for v in fixed],
            "deactivated_inequalities": n_ineq, "solve": rep}


def _diagnosis_model(track, vehicle, start, length, nfe, ncp, solve, solver, echo) -> tuple:
    """Step 1 of :func:`diagnose`: the model with lifted intermediates, initialized (and
    solved with ``solve``). Returns it and the SolveReport (None without ``solve``)."""
    tr = track if isinstance(track, Track) else load_track(track)
    p = vehicle if isinstance(vehicle, VehicleParameters) else load_vehicle(vehicle)
    echo(f"building {tr.name} {start:.0f}+{length:.0f} m, nfe={nfe}, ncp={ncp}, "
         "intermediates lifted to variables ...")
    m = build_model(tr, p, start=start, length=length, nfe=nfe, ncp=ncp, lift=("",))
    initialize_model(m)
    rep = None
    if solve:
        echo(f"solving with {solver} ...")
        rep = solve_model(m, solver=solver)
        echo(f"  {rep.termination_condition} after {rep.iterations} iterations")
    return m, rep


def _square_system(m, degrees_of_freedom, echo) -> tuple:
    """Step 2 of :func:`diagnose`: check the units, then make the model the square system of
    equations the toolbox checks (:func:`square_up`, inequalities deactivated,
    :func:`equalities_as_equations`). Returns the units report, the fixed variables, the
    degrees of freedom left (by IDAES's ``degrees_of_freedom``) and the number of
    inequalities deactivated."""
    echo("checking units of the optimal-control layer ...")
    units = check_units(m)
    echo(f"  consistent: {', '.join(units['checked'])}")
    fixed = square_up(m)
    dof = degrees_of_freedom(m)
    echo(f"fixed {len(fixed)} degrees of freedom (the control values, entry q2 and q3): "
         f"{dof} left")
    inequalities = [c for c in m.component_data_objects(pyo.Constraint, active=True, descend_into=True)
                    if not c.equality]
    for c in inequalities:   # path constraints: not part of the square DAE system
        c.deactivate()
    echo(f"deactivated {len(inequalities)} inequality (path) constraints: the toolbox checks the "
         "square system of equations")
    n_eq = equalities_as_equations(m)
    echo(f"wrote {n_eq} equality rows as equations (Pyomo's incidence analysis sees only those)")
    return units, fixed, dof, len(inequalities)


def _run_toolbox(m, DiagnosticsToolbox, numerical: bool, stream, echo) -> tuple:
    """Step 3 of :func:`diagnose`: IDAES's ``DiagnosticsToolbox`` on ``m``, its structural
    and (with ``numerical`` and PyNumero) numerical reports written to ``stream``. Returns the
    toolbox and the two reports (the numerical one None when not run)."""
    # the toolbox logs every inconsistent-units expression of the physics at ERROR level: keep
    # them out of the terminal (its report counts them)
    quiet = [logging.getLogger(n) for n in ("pyomo.core", "pyomo.util", "pyomo.core.base.units_container")]
    old = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.CRITICAL)
    try:
        dt = DiagnosticsToolbox(m)
        echo("structural checks ...")
        buf = io.StringIO()
        dt.report_structural_issues(stream=buf)
        structural = buf.getvalue()
        stream.write(structural)
        numerical_txt = None
        if numerical:
            if pynumero_available():
                echo("numerical checks ...")
                buf = io.StringIO()
                dt.report_numerical_issues(stream=buf)
                numerical_txt = buf.getvalue()
                stream.write(numerical_txt)
            else:
                echo(f"skipping the numerical checks: {PYNUMERO_HINT}")
    finally:
        for lg, lv in zip(quiet, old):
            lg.setLevel(lv)
    return dt, structural, numerical_txt


def _warnings(report: Optional[str]) -> list:
    return [line.strip() for line in (report or "").splitlines() if line.strip().startswith("WARNING:")]
