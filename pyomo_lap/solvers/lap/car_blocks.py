"""The pyomo_lap cars in a Pyomo model, found through Pyomo's component tree.

A built pyomo_lap model keeps its car in one block, ``m.vehicle``
(:func:`pyomo_lap.ocp.vehicle_model.car_block`): the recorded rows of the car's equations
(``m.vehicle.point_rows``, what the solver ``lap_ipopt`` compiles) and ``m.vehicle.refresh()``
(the car-dependent bounds, entry speed and scaling brought in line with the values of the
car's parameters). The solvers find both by walking the blocks of the model they are given,
so that a user's model holding a built pyomo_lap model as one of its blocks
(``u.lap = build_model(track, car)``) is solved as the bundled job is. Nothing here imports the
``ocp`` layer: the car blocks are recognized by these attributes (duck typing).
"""
from __future__ import annotations

import pyomo.environ as pyo
from pyomo.core.base.component import Component

__all__ = ["car_blocks", "refresh_cars", "recorded_rows"]


def car_blocks(model) -> list:
    """The active blocks of ``model`` (itself included) that are a pyomo_lap car block: those
    with a ``point_rows`` or ``refresh`` attribute of their own (not a component).

    Parameters
    ----------
    model : pyomo.environ.Block
        Any Pyomo model or block.

    Returns
    -------
    list of pyomo.environ.Block
        In the order of Pyomo's walk of the model.
    """
    blocks = [model] + list(model.component_data_objects(pyo.Block, active=True,
                                                          descend_into=True))
    out = []
    for b in blocks:
        own = vars(b)
        if any(k in own and not isinstance(own[k], Component) for k in ("point_rows", "refresh")):
            out.append(b)
    return out


def refresh_cars(model) -> bool:
    """Call ``refresh()`` of every car block of ``model`` (:func:`car_blocks`): each pyomo_lap
    model in it takes the car its ``m.vehicle`` variables hold now
    (:class:`pyomo_lap.ocp.build.CarRefresh`). Called by the solvers before every solve.

    Returns
    -------
    bool
        Whether any model changed.

    Raises
    ------
    ValueError
        From a refresh (values the vehicle schema refuses, a track too narrow for the car).
    """
    changed = False
    for b in car_blocks(model):
        refresh = vars(b).get("refresh")
        if callable(refresh) and not isinstance(refresh, Component):
            changed = bool(refresh()) or changed
    return changed


def recorded_rows(model) -> list:
    """``[(owner, rec), ...]``: the recorded rows of every car block of ``model`` that has
    them (``rec``, a :class:`~pyomo_lap.ocp.point_rows.PointRows`), each with the block of the
    pyomo_lap model they belong to (``owner``: the car block's parent block, the built model,
    whose components the record names).

    Parameters
    ----------
    model : pyomo.environ.Block

    Returns
    -------
    list of tuple
    """
    out = []
    for b in car_blocks(model):
        rec = vars(b).get("point_rows")
        if rec is not None and not isinstance(rec, Component):
            out.append((b.parent_block() if b.parent_block() is not None else b, rec))
    return out
