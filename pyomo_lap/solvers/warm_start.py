r"""Warm re-solves: a model that holds a solution is solved again from it.

After an optimal solve, :func:`pyomo_lap.solvers.solve.solve_model` keeps IPOPT's multipliers
in the model, in the suffixes Pyomo's ``ipopt`` interface uses for a warm start (the
`Pyomo recipe <https://pyomo.readthedocs.io/en/stable/explanation/solvers/ipopt.html>`_):

* ``m.dual`` (import and export) - the rows' multipliers;
* ``m.ipopt_zL_out``, ``m.ipopt_zU_out`` (import) - the bounds' multipliers IPOPT returned;
* ``m.ipopt_zL_in``, ``m.ipopt_zU_in`` (export) - the bounds' multipliers the next solve
  starts from (a copy of the ``_out`` ones).

The next :func:`~pyomo_lap.solvers.solve.solve_model` starts from the model's primal point
and these multipliers, with IPOPT's warm-start options (:func:`warm_start_options`): the
barrier parameter starts low (100 times the tolerance) and the point is pushed into the
bounds' interior by IPOPT's warm-start default, so that a change of the problem (a car
parameter fixed to another value, :func:`pyomo_lap.ocp.build.set_vehicle`, a parameter freed
or a constraint added) costs fewer iterations than a cold solve (20 against 27 on the default job after ``Cz1``
0.536 -> 0.6; docs/warm_start.md). ``lap_ipopt`` reads
the suffixes itself (:func:`pyomo_lap.solvers.lap.solver.start_multipliers`); the classic
``ipopt`` executable gets them through the NL file. A constraint added since has no
multiplier yet and starts at 0. Every new initial guess (:mod:`pyomo_lap.ocp.initialize`,
every move of a solution, :mod:`pyomo_lap.ocp.transfer`,
:func:`pyomo_lap.results.table.load_solution`) and a failed solve empty the suffixes
(:func:`pyomo_lap.util.suffixes.forget_multipliers`, the one home of their names, which this
module uses): the next solve is cold.

Sources: Wächter and Biegler (2006), *On the implementation of an interior-point filter
line-search algorithm for large-scale nonlinear programming*, Math. Program. 106, §3.6
(initialization) and IPOPT's options ``warm_start_*``.
"""
from __future__ import annotations

from typing import Optional

import pyomo.environ as pyo
from pyomo.core.base.suffix import Suffix

from ..util.suffixes import START_MULTIPLIER_SUFFIXES, forget_multipliers  # noqa: F401  (the one home)

__all__ = ["START_MULTIPLIER_SUFFIXES", "forget_multipliers", "WARM_START_SOLVERS", "WARM_START_PUSH", "WARM_START_MU_FACTOR", "PRIMAL_START_MU_INIT", "holds_multipliers", "warm_start_options",
           "declare_multiplier_suffixes", "keep_multipliers", "primal_snapshot"]

WARM_START_SOLVERS = ("lap_ipopt", "ipopt")
"""Solvers that take starting multipliers from the suffixes (``ipopt_v2`` does not send them)."""

WARM_START_PUSH = 1e-3
"""IPOPT's ``warm_start_bound_push``, ``_bound_frac``, ``_slack_bound_push``,
``_slack_bound_frac`` and ``_mult_bound_push`` of a warm start: how far the start is moved
into the bounds' interior, relative (dimensionless; IPOPT's own warm-start default; its cold
value is 1e-2). Measured on the default job re-solved after ``Cz1`` 0.536 -> 0.6
(docs/warm_start.md): pushes of 1e-9 with ``mu_init`` 1e-6 took 79 iterations (the start sits
on the old active bounds and the fraction-to-boundary rule cuts every step to 1e-4..1e-2 of
the Newton step), 1e-4..1e-2 with ``mu_init`` 1e-3 took 20-22."""

WARM_START_MU_FACTOR = 100.0
"""``mu_init`` of a warm start as a multiple of the solve's ``tol`` (dimensionless; IPOPT's
barrier parameter and ``tol`` are both of the scaled problem): 1e-3 at the default tol 1e-5.
Measured as :data:`WARM_START_PUSH`: ``mu_init`` = tol/10 took 25-79 iterations, 100 tol 20,
1000 tol 21; the same problem re-solved takes 3 with ``mu_init`` = tol/10 and pushes 1e-9,
but any change of the car makes that start crawl."""


PRIMAL_START_MU_INIT = 1e-3
"""IPOPT's initial barrier parameter of a start from a solution's primal values alone (no
multipliers: a results folder read by a solver that takes none, or a coarse mesh's solution in
a mesh continuation). On the default job, starting from the solution of a car 5 kg and 0.04 Cx
away took 15-21 iterations against 25-36 from the usual initial guess (the default 0.1 took
25-33: the barrier pushes the start back into the interior); a mesh continuation on
Nordschleife 1200 + 500 m (150 elements onto 200) took 14 iterations for ``fsae`` with 1e-3
against 19 (1e-2), 15 (1e-4), 21 (1e-5), 29 (1e-6), ``f1_2014`` 24 with 1e-3."""


def holds_multipliers(m) -> bool:
    """Whether ``m`` holds starting multipliers for a warm start: a non-empty
    ``m.ipopt_zL_in``, ``m.ipopt_zU_in`` or ``m.dual`` suffix (module docstring)."""
    for name in START_MULTIPLIER_SUFFIXES:
        suffix = m.component(name)
        if isinstance(suffix, Suffix) and suffix.export_enabled() and len(suffix) > 0:
            return True
    return False


def warm_start_options(options: dict) -> dict:
    """IPOPT's options of a warm start from a solution solved to ``options["tol"]``.

    The barrier parameter starts at :data:`WARM_START_MU_FACTOR` ``tol`` (a cold start's
    ``mu_init`` is 0.1): low enough to keep most of the previous optimum's complementarity,
    high enough that the bounds and inequalities the changed problem makes active or inactive
    do not block the steps.

    Parameters
    ----------
    options : dict
        The solve's IPOPT options (``tol`` read, default IPOPT's 1e-8).

    Returns
    -------
    dict
        ``warm_start_init_point``, ``mu_init`` and the pushes (:data:`WARM_START_PUSH`).
    """
    tol = float(options.get("tol", 1e-8))
    push = WARM_START_PUSH
    return {"warm_start_init_point": "yes", "mu_init": WARM_START_MU_FACTOR * tol,
            "warm_start_bound_push": push, "warm_start_bound_frac": push,
            "warm_start_slack_bound_push": push, "warm_start_slack_bound_frac": push,
            "warm_start_mult_bound_push": push}


def declare_multiplier_suffixes(m) -> None:
    """Declare, where missing, the suffixes a solve loads its multipliers into (``dual``
    import-export, ``ipopt_zL_out`` and ``ipopt_zU_out`` import) and those the next solve
    starts from (``ipopt_zL_in``, ``ipopt_zU_in``, export).

    Raises
    ------
    ValueError
        A component of one of these names that is not a suffix (naming it).
    """
    wanted = {"dual": Suffix.IMPORT_EXPORT, "ipopt_zL_out": Suffix.IMPORT,
              "ipopt_zU_out": Suffix.IMPORT, "ipopt_zL_in": Suffix.EXPORT,
              "ipopt_zU_in": Suffix.EXPORT}
    for name, direction in wanted.items():
        comp = m.component(name)
        if comp is None:
            m.add_component(name, Suffix(direction=direction))
        elif isinstance(comp, Suffix):
            if name == "dual" and not comp.export_enabled():
                comp.set_direction(Suffix.IMPORT_EXPORT)   # declared for the duals only
        else:
            raise ValueError(f"warm start: m.{name} is a {type(comp).__name__}, expected a "
                             "Suffix (its name is Pyomo's for IPOPT's multipliers); rename "
                             "it or solve with warm_start=False")


def keep_multipliers(m) -> bool:
    """After an optimal solve: copy the bound multipliers IPOPT returned (``ipopt_zL_out``,
    ``ipopt_zU_out``) into the suffixes the next solve starts from (``ipopt_zL_in``,
    ``ipopt_zU_in``); ``m.dual`` is both. Returns whether there were any."""
    kept = False
    for out, into in (("ipopt_zL_out", "ipopt_zL_in"), ("ipopt_zU_out", "ipopt_zU_in")):
        src, dst = m.component(out), m.component(into)
        if isinstance(src, Suffix) and isinstance(dst, Suffix):
            dst.clear()
            dst.update(src.items())
            kept = kept or len(src) > 0
    return kept


def primal_snapshot(m) -> "Optional[callable]":
    """The values of every unfixed variable of ``m`` now, as a function that writes them
    back (the start of a warm solve, restored when it fails and the solve is repeated cold)."""
    saved = [(v, v.value) for v in m.component_data_objects(pyo.Var, descend_into=True)
             if not v.fixed]

    def restore() -> None:
        for v, val in saved:
            v.set_value(val, skip_validation=True)
    return restore


WARM_START_IPOPT_OPTIONS = {"mu_init": 1e-6, "bound_push": 1e-8, "bound_frac": 1e-8}
"""IPOPT options of a warm-started solve (:func:`pyomo_lap.api.refine.refine_mesh`): a small initial barrier
parameter and bound push keep IPOPT from moving the interpolated solution into the interior
first. Measured on Nordschleife 1200-1500 m, 30 -> 32 elements: 15 iterations instead of 55
with IPOPT's defaults (and 31 from a cold start)."""
