"""The suffixes a warm start sends IPOPT its starting multipliers in, and forgetting them.

Pyomo's ``ipopt`` convention (the `Pyomo recipe
<https://pyomo.readthedocs.io/en/stable/explanation/solvers/ipopt.html>`_): ``m.dual`` the rows'
multipliers, ``m.ipopt_zL_in`` and ``m.ipopt_zU_in`` the bounds' multipliers the next solve
starts from. Written once here, below both layers that use them: the solvers' warm re-solves
(:mod:`pyomo_lap.solvers.warm_start`, which keeps the multipliers after an optimal solve) and
every new initial guess of the ocp layer (:mod:`pyomo_lap.ocp.initialize`,
:mod:`pyomo_lap.ocp.transfer`, :func:`pyomo_lap.results.table.load_solution`), which empties
them: a new start is not the point those multipliers belong to.

Layer: util (imports Pyomo only).
"""
from __future__ import annotations

from pyomo.core.base.suffix import Suffix

__all__ = ["START_MULTIPLIER_SUFFIXES", "forget_multipliers"]

START_MULTIPLIER_SUFFIXES = ("dual", "ipopt_zL_in", "ipopt_zU_in")
"""The suffixes a warm start sends IPOPT its starting multipliers in (Pyomo's ``ipopt``
convention): the rows' duals and the bounds' multipliers."""


def forget_multipliers(m) -> None:
    """Empty the starting-multiplier suffixes of ``m`` (:data:`START_MULTIPLIER_SUFFIXES`):
    the next :func:`pyomo_lap.solvers.solve.solve_model` starts cold. A component of one of
    these names that is not a suffix is left alone.

    Parameters
    ----------
    m : pyomo.environ.Block
    """
    for name in START_MULTIPLIER_SUFFIXES:
        suffix = m.component(name)
        if isinstance(suffix, Suffix):
            suffix.clear()
