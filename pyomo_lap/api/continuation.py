r"""Mesh continuation: a fine mesh solved from the solution of a coarse one.

A fine mesh (many short elements) gives IPOPT a large NLP started from the cold initial
guess, far from the optimum: on dymos's Barcelona arcs (racecar model, 400 uniform elements,
tol 1e-7) IPOPT stalled for hundreds of iterations with its barrier parameter stuck near
:math:`10^{-5.7}`. Solved first on a coarse mesh, the same problem lands near the optimum,
and the fine mesh starts there: its solve is the last few digits only.

:func:`interpolate_solution` carries a solved model onto another mesh of the same sector
with the collocation polynomials (:func:`pyomo_lap.ocp.transfer.transfer_solution`, the one
home of every move of a solution):

* the states (the variables with a derivative ``d<name>_ds``, and the controls when they are
  states: ``control_form = "state"``) by the polynomial through each old element's start and
  collocation points (degree ``ncp``); their derivative variables by the derivative of that
  polynomial, so a new point inside an old element satisfies the old element's
  collocation equations exactly;
* the other variables (algebraic variables, controls at points) by the polynomial through the
  old element's collocation points (degree ``ncp - 1``);
* values beyond a variable's bounds (a polynomial may overshoot between its points) are
  clipped to them; fixed variables are left alone.

:func:`stage_element_lengths` says which coarser meshes a job solves first, and
:func:`solve_by_continuation` solves them and the fine one; the job option
``mesh_continuation`` (:func:`pyomo_lap.solve_sector`, ``pyomo-lap solve``) decides when
(docs/solvers.md, "Mesh continuation").

Layer: api (imports numpy, Pyomo, the moves of :mod:`pyomo_lap.ocp.transfer` and the barrier
parameter of :mod:`pyomo_lap.solvers.warm_start`).
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pyomo.environ as pyo

from ..ocp.transfer import Solution, check_same_sector, model_states, transfer_solution
from ..solvers.warm_start import PRIMAL_START_MU_INIT

__all__ = ["interpolate_solution", "continuation_meshes", "stage_element_lengths",
           "solve_by_continuation", "MESH_CONTINUATION", "COARSENING",
           "CONTINUATION_IPOPT_OPTIONS"]

MESH_CONTINUATION = ("auto", "on", "off")
"""Values of the job option ``mesh_continuation``."""

COARSENING = 2
"""Each mesh of a continuation has this many times fewer elements than the next (the fine
mesh's elements merged in pairs, then again ...): a coarse element is the union of whole fine
elements, so an element boundary of the fine mesh that a junction of an arc track needs stays
one of the coarse mesh."""

CONTINUATION_IPOPT_OPTIONS = {"mu_init": PRIMAL_START_MU_INIT}
"""IPOPT options of the solve of a mesh started from a coarser one's solution (the solver
options of the job override them): the initial barrier parameter of a start from primal
values (:data:`pyomo_lap.solvers.warm_start.PRIMAL_START_MU_INIT`, measured there); a bound
push of 1e-8 or 1e-5 changed nothing (14 iterations, ``fsae``) or added three (27,
``f1_2014``)."""


def interpolate_solution(new, old) -> dict:
    """Set the variables of ``new`` from the solved model ``old`` of the same sector on
    another mesh, by ``old``'s collocation polynomials (module docstring): the states shared as
    states by both models (:func:`pyomo_lap.ocp.transfer.model_states`) with their derivative
    variables by the polynomials' derivatives, every other variable through the collocation
    points, clipped to the bounds (:func:`pyomo_lap.ocp.transfer.transfer_solution`, the one
    home of such moves; this name is kept for scripts).

    Parameters
    ----------
    new, old : pyomo.environ.ConcreteModel
        Built by :func:`pyomo_lap.ocp.build.build_model` with the same vehicle model, sector
        and scheme; any meshes (``nfe``, ``ncp``, element boundaries).

    Returns
    -------
    dict
        ``{"variables": n}``: how many variable values were set.

    Raises
    ------
    ValueError
        The two models differ in sector, scheme or vehicle model (one line naming both).
    """
    check_same_sector(new, old)
    sol = Solution.from_model(old)
    states = sol.states & model_states(new)
    sol = dataclasses.replace(sol, states=frozenset(states))
    names = sorted(states) + [n for n in sol.values if n not in states]
    return {"variables": transfer_solution(new, sol, names=names)["variables"]}


def continuation_meshes(boundaries, min_elements: int, coarsening: int = COARSENING) -> list:
    """The coarser meshes a continuation solves before ``boundaries``: each one the previous
    with its elements merged in groups of ``coarsening`` (its boundaries every
    ``coarsening``-th of the finer one's, the sector's end kept), down to the first with at
    most ``min_elements`` elements (or at most 2).

    Parameters
    ----------
    boundaries : array_like (N+1,)
        The fine mesh's element boundaries [m], increasing.
    min_elements : int
        The coarsest mesh has at most this many elements (>= 2).
    coarsening : int
        Elements merged into one per step (>= 2).

    Returns
    -------
    list of ndarray
        Coarsest first; empty when the fine mesh has at most ``min_elements`` elements.

    Raises
    ------
    ValueError
        ``coarsening < 2``, ``min_elements < 2``, or boundaries that do not increase.
    """
    b = np.asarray(boundaries, float)
    if coarsening < 2 or min_elements < 2:
        raise ValueError(f"coarsening = {coarsening!r}, min_elements = {min_elements!r}: "
                         "expected integers >= 2")
    if len(b) < 3 or np.any(np.diff(b) <= 0):
        raise ValueError("continuation_meshes: expected increasing boundaries of >= 2 elements")
    out = []
    while len(b) - 1 > min_elements and len(b) - 1 > 2:
        idx = np.arange(0, len(b), coarsening)
        if idx[-1] != len(b) - 1:
            if len(b) - 1 - idx[-1] < coarsening / 2 and len(idx) > 2:
                idx = idx[:-1]            # a short last element merged into the one before
            idx = np.append(idx, len(b) - 1)
        b = b[idx]
        out.append(b)
    return out[::-1]


def stage_element_lengths(fine_element_m: float, default_element_m: float,
                          coarsening: int = COARSENING) -> list:
    """The element lengths [m] of the meshes a continuation solves before the fine one,
    coarsest first: the default mesh's ``default_element_m`` (the OCP option
    ``element_length``), halved (``coarsening``) while it stays at least ``coarsening``
    times the fine mesh's mean element ``fine_element_m``; a fine mesh not that much finer
    than the default one starts from a single mesh of ``coarsening x fine_element_m``.

    Raises
    ------
    ValueError
        A length that is not a positive number.
    """
    for name, x in (("fine_element_m", fine_element_m), ("default_element_m", default_element_m)):
        if not (math.isfinite(x) and x > 0):
            raise ValueError(f"{name} = {x!r} m: expected a positive element length")
    out, h = [], float(default_element_m)
    while h >= coarsening * fine_element_m * (1 - 1e-9):
        out.append(h)
        h /= coarsening
    return out or [coarsening * float(fine_element_m)]


def solve_by_continuation(m, build, lengths, *, solve, warm_options: dict,
                          echo=lambda text: None) -> tuple:
    """Solve ``m`` (built, any initial point) by mesh continuation: for each element length
    of ``lengths`` (coarsest first) ``build(h)`` returns a model of the same problem on that
    mesh (initialized cold); the first is solved from its cold start, each next one from the
    previous solution (:func:`interpolate_solution`), and ``m`` last from the finest one's.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model on the fine mesh.
    build : callable
        ``build(h)`` -> a built, initialized model with elements of about ``h`` m.
    lengths : sequence of float
        Element lengths of the coarse meshes [m], coarsest first
        (:func:`stage_element_lengths`).
    solve : callable
        ``solve(model, options)`` -> a :class:`~pyomo_lap.solvers.solve.SolveReport`
        (``options`` None: the job's own; else the job's updated by ``warm_options``).
    warm_options : dict
        Solver options of a solve from a coarser solution
        (:data:`CONTINUATION_IPOPT_OPTIONS`, the job's options over them).
    echo : callable

    Returns
    -------
    (SolveReport, list of dict)
        The fine solve's report, and per coarse mesh ``{"element_length_m", "nfe",
        "iterations", "solve_time_s", "build_time_s", "termination_condition",
        "lap_time_s", "optimal"}``. A coarse mesh whose solve does not end optimal stops the
        sequence: the fine mesh starts from the last optimal one (from its own initial point
        if none was).
    """
    stages, last = [], None
    for h in lengths:
        t0 = time.perf_counter()
        mc = build(h)
        built = time.perf_counter() - t0
        if last is not None:
            interpolate_solution(mc, last)
        rep = solve(mc, None if last is None else warm_options)
        lap = pyo.value(mc.lap_time, exception=False)
        stages.append({"element_length_m": float(h), "nfe": int(mc.problem.options.nfe),
                       "iterations": rep.iterations, "solve_time_s": rep.solve_time_s,
                       "build_time_s": built, "termination_condition": rep.termination_condition,
                       "lap_time_s": None if lap is None else float(lap), "optimal": bool(rep.ok)})
        echo(f"  mesh continuation: {mc.problem.options.nfe} elements of about {h:.3g} m: "
             f"{rep.termination_condition} after {rep.iterations} iterations, "
             f"{rep.solve_time_s:.1f} s" + ("" if lap is None else f", time {lap:.3f} s"))
        if not rep.ok:
            break
        last = mc
    if last is not None:
        interpolate_solution(m, last)
    rep = solve(m, None if last is None else warm_options)
    return rep, stages
