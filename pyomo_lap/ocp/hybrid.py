r"""Hybrid powertrain (issue 38, item 3): a battery whose energy is a state in the track
coordinate, and a motor-generator on the driven (rear) axle that deploys power to the wheels
and harvests it from the rear brakes. Built by :func:`add_hybrid` for a car with a
``[hybrid]`` section (:data:`pyomo_lap.vehicle.schema.SETTINGS`); a car without one builds
today's NLP unchanged (no component of this module).

The block ``m.hybrid`` (docs/energy.md, "Hybrid powertrain"):

==========================  ==================================================================
``deploy_power[s]``         :math:`P_d \ge 0` [W], at most ``deploy_power_max``: the motor's
                            power at the driven wheels
``harvest_power[s]``        :math:`P_h \ge 0` [W], at most ``harvest_power_max``
``soc[s]``                  the battery's energy :math:`E_b` [J], within ``[0, capacity]``
``power_row[s]``            the model's traction row with the motor:
                            :math:`f_{xa} v_{3x} - P(v_{3x}) - P_d \le 0` (replaces the
                            model's ``power_limit[s]``, deactivated)
``harvest_row[s]``          :math:`P_h \le -(1 - k_b) f_{xb} v_{3x}`: at most the power of the
                            rear brakes (:math:`k_b` the front share ``brake_ratio``; the
                            generator replaces part of the rear brakes' torque, the car
                            decelerates as before)
``soc_row[s]``              the collocation of :math:`dE_b/ds = (\eta_h P_h - P_d/\eta_d) /
                            \dot q_1` (:meth:`pyomo_lap.ocp.collocation.CollocationGrid.integration_rows`)
``end_row``                 periodic :math:`E_b(L) = E_b(0)`, or the given start/end values
``deploy_limit``            :math:`\int P_d/\eta_d\,dt \le` ``deploy_energy_per_lap``
                            (out of the battery, the regulations' ES -> MGU-K)
``harvest_limit``           :math:`\eta_h\int P_h\,dt \le` ``harvest_energy_per_lap``
                            (into the battery, MGU-K -> ES)
``deployed``, ``harvested`` :math:`\int P_d\,dt`, :math:`\int P_h\,dt` [J] at the wheels
                            (Expressions, the quadrature of
                            :meth:`pyomo_lap.ocp.collocation.CollocationGrid.quadrature`)
==========================  ==================================================================

**The state's collocation.** :math:`E_b` is collocated as the model collocates its states,
written here because the model is discretized when this runs: in a finite element
:math:`[a, a + h]` with collocation points :math:`\tau_j` (Radau: its end among them), the value
at a point :math:`\tau_i` is :math:`E_b(a) + h\sum_j A_{ij} f_j`, :math:`A_{ij} = \int_0^{\tau_i}
\ell_j(\tau)\,d\tau` (:math:`\ell_j` the Lagrange polynomials through the :math:`\tau_j`), which
is exactly pyomo.dae's collocation of a state whose derivative does not depend on itself. At
the element's end the row of :math:`A` is the quadrature's weights: the sum of the rows over
the sector is :math:`E_b(L) - E_b(0) = \eta_h \int P_h dt - \int P_d/\eta_d\,dt` with the
integrals of the same quadrature, so the energy balance closes to the rows' tolerance.

**The recorded traction row.** The fast solver (``lap_ipopt``, its NLP's ``_split_rows``) takes
from the compiled per-point functions only the *active* recorded rows; the
deactivated ``power_limit[s]`` is left out and ``power_row[s]``, an ordinary Pyomo constraint
(its body the recorded row's body minus :math:`P_d`), is translated from its expression.

The energy limits apply to the sector built (a lap on a closed lap). With a periodic state of
charge the battery gives out what it takes in: :math:`\int P_d/\eta_d = \eta_h \int P_h`, so
on a closed lap the harvest limit bounds the deployment (the 2014 rules' 4 MJ of deployment
need the MGU-H, not modelled: the heat recovery's 2 MJ more).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pyomo.environ as pyo

from ..vehicle.schema import SETTINGS
from .collocation import CollocationGrid
from .common import vehicle_var

__all__ = ["HYBRID_CHANNELS", "add_hybrid", "hybrid_settings", "hybrid_summary",
           "hybrid_channels", "rear_share"]

HYBRID_CHANNELS = ("power_deploy", "power_harvest", "soc_energy")
"""The trajectory's columns of a hybrid car (:func:`hybrid_channels`): ``power_deploy`` [W],
``power_harvest`` [W], ``soc_energy`` (the battery's energy) [J]."""


def hybrid_settings(p) -> Optional[dict]:
    """The ``[hybrid]`` section of the car ``p`` with its defaults, ``{key: value}`` (keys of
    :data:`pyomo_lap.vehicle.schema.SETTINGS` ``["hybrid"]``; efficiencies 1, limits and
    capacity None: none), or None for a car without one."""
    if getattr(p, "hybrid_deploy_power_max", None) is None:
        return None
    h = {key: getattr(p, attr, None) for key, attr in SETTINGS["hybrid"].items()}
    for key in ("deploy_efficiency", "harvest_efficiency"):
        h[key] = 1.0 if h[key] is None else float(h[key])
    return h




def rear_share(m, p):
    """The rear brakes' share of the braking force, :math:`1 - k_b` (the model's parameter
    ``m.vehicle.powertrain.brake_ratio`` when it has one, else the car's number)."""
    try:
        return 1.0 - vehicle_var(m, "powertrain.brake_ratio")
    except (AttributeError, KeyError, ValueError, TypeError):
        return 1.0 - float(p.brake_ratio)


def add_hybrid(m, p=None):
    """Put the block ``m.hybrid`` on a built model for a car with a ``[hybrid]`` section
    (module docstring); a car without one leaves the model unchanged.

    Parameters
    ----------
    m : ConcreteModel
        Built and discretized (:func:`pyomo_lap.ocp.build.build_model`), with ``m.f_xa``,
        ``m.f_xb``, ``m.v_3x``, ``m.q1_dot`` and ``m.power_limit[s]``.
    p : VehicleParameters, optional
        The car (default: the model's, ``m.vehicle.built_for``).

    Returns
    -------
    ConcreteModel
        ``m``.

    Raises
    ------
    ValueError
        The model lacks those components (a hybrid car on a model without a power row).
    """
    p = m.vehicle.built_for if p is None else p
    h = hybrid_settings(p)
    if h is None:
        return m
    missing = [c for c in ("f_xa", "f_xb", "v_3x", "q1_dot", "power_limit") if m.component(c) is None]
    if missing:
        raise ValueError(f"[hybrid]: the model {m.problem.vehicle_model.name!r} has no "
                         f"{', '.join(missing)}: no hybrid powertrain on it")
    u = pyo.units
    cap = h["capacity"]
    e0 = h["soc_start"] if h["soc_start"] is not None else (
        h["soc_end"] if h["soc_end"] is not None else (0.5 * cap if cap else 0.0))
    b = m.hybrid = pyo.Block(doc="hybrid powertrain: battery and motor-generator (pyomo_lap.ocp.hybrid)")
    b.deploy_power = pyo.Var(m.s, bounds=(0.0, h["deploy_power_max"]), initialize=0.0, units=u.W,
                             doc="power the motor deploys at the driven wheels [W]")
    b.harvest_power = pyo.Var(m.s, bounds=(0.0, h["harvest_power_max"]), initialize=0.0, units=u.W,
                              doc="power the generator harvests from the rear brakes [W]")
    b.soc = pyo.Var(m.s, bounds=(0.0, cap), initialize=e0, units=u.J,
                    doc="the battery's energy (state of charge) [J]")
    _add_rows(m, b, h, p)
    _scale(m, b, h)
    return m


def _add_rows(m, b, h, p) -> None:
    """The rows of ``m.hybrid`` (module docstring)."""
    eta_d, eta_h = h["deploy_efficiency"], h["harvest_efficiency"]
    for c in m.power_limit.values():
        c.deactivate()
    pl = m.power_limit
    b.power_row = pyo.Constraint(m.s, rule=lambda _, s: (
        None, pl[s].body - b.deploy_power[s], pl[s].upper),
        doc="traction power f_xa v_3x - P(v_3x) - P_deploy <= 0 [W] (replaces power_limit)")
    rear = rear_share(m, p)
    b.harvest_row = pyo.Constraint(m.s, rule=lambda _, s: b.harvest_power[s] <= -rear * m.f_xb[s] * m.v_3x[s],
                                   doc="harvest <= the rear brakes' power -(1 - k_b) f_xb v_3x [W]")

    def rate(s):        # dE_b/ds [J/m]
        return (eta_h * b.harvest_power[s] - b.deploy_power[s] / eta_d) / m.q1_dot[s]
    rows = CollocationGrid.from_model(m).integration_rows()
    b.soc_row = pyo.Constraint([r[0] for r in rows], rule=lambda _, s: pyo.Constraint.Skip)
    for point, start, coef in rows:
        b.soc_row[point] = b.soc[point] - b.soc[start] - sum(c * rate(x) for x, c in coef.items()) == 0.0
    first, last = min(m.s), max(m.s)
    if h["soc_start"] is None and h["soc_end"] is None:
        b.end_row = pyo.Constraint(expr=b.soc[last] - b.soc[first] == 0.0, doc="periodic state of charge")
    else:
        ends = [(first, h["soc_start"]), (last, h["soc_end"])]
        b.end_row = pyo.Constraint([0, 1], rule=lambda _, k: (
            b.soc[ends[k][0]] == ends[k][1] if ends[k][1] is not None else pyo.Constraint.Skip),
            doc="the state of charge at the start (0) and the end (1) [J]")
    w = CollocationGrid.from_model(m).quadrature()
    b.deployed = pyo.Expression(expr=sum(wj * b.deploy_power[s] / m.q1_dot[s] for s, wj in w.items()),
                                doc="energy deployed at the wheels over the sector [J]")
    b.harvested = pyo.Expression(expr=sum(wj * b.harvest_power[s] / m.q1_dot[s] for s, wj in w.items()),
                                 doc="energy harvested at the rear brakes over the sector [J]")
    if h["deploy_energy_per_lap"] is not None:
        b.deploy_limit = pyo.Constraint(expr=b.deployed / eta_d / h["deploy_energy_per_lap"] <= 1.0,
                                        doc="energy out of the battery per lap / its limit")
    if h["harvest_energy_per_lap"] is not None:
        b.harvest_limit = pyo.Constraint(expr=eta_h * b.harvested / h["harvest_energy_per_lap"] <= 1.0,
                                         doc="energy into the battery per lap / its limit")


def _scale(m, b, h) -> None:
    """IPOPT's user scaling of the block (``m.scaling_factor``, when the model has one): the
    powers by their limits, the energy and its rows by the capacity (or the energy limits)."""
    sf = m.component("scaling_factor")
    if sf is None:
        return
    Pd, Ph = h["deploy_power_max"], max(h["harvest_power_max"], 1.0)
    E = h["capacity"] or h["deploy_energy_per_lap"] or h["harvest_energy_per_lap"] or 1e6
    P_max = float(getattr(m.vehicle.built_for, "P_max", Pd))
    for s in m.s:
        sf[b.deploy_power[s]] = 1.0 / Pd
        sf[b.harvest_power[s]] = 1.0 / Ph
        sf[b.soc[s]] = 1.0 / E
        sf[b.power_row[s]] = 1.0 / P_max
        sf[b.harvest_row[s]] = 1.0 / Ph
    for c in b.soc_row.values():
        sf[c] = 1.0 / E
    for c in b.end_row.values():
        sf[c] = 1.0 / E


def hybrid_summary(m) -> dict:
    r"""summary.json's ``hybrid``: ``deployed_J``, ``harvested_J`` (at the wheels),
    ``battery_out_J`` (:math:`\int P_d/\eta_d`), ``battery_in_J`` (:math:`\eta_h\int P_h`),
    ``soc_start_J``, ``soc_end_J``, ``delta_soc_J`` and ``balance_residual`` (the relative
    error of :math:`\Delta E_b = \eta_h\int P_h - \int P_d/\eta_d`, over the larger of the
    battery's energies in and out); ``{}`` without ``m.hybrid``."""
    b = m.component("hybrid")
    if b is None:
        return {}
    h = hybrid_settings(m.vehicle.built_for) or {"deploy_efficiency": 1.0, "harvest_efficiency": 1.0}
    dep, har = pyo.value(b.deployed, exception=False), pyo.value(b.harvested, exception=False)
    if dep is None or har is None:
        return {}
    e_out, e_in = dep / h["deploy_efficiency"], h["harvest_efficiency"] * har
    first, last = min(m.s), max(m.s)
    e0, e1 = b.soc[first].value, b.soc[last].value
    delta = e1 - e0
    scale = max(e_out, e_in, 1e-9)
    return {"deployed_J": float(dep), "harvested_J": float(har), "battery_out_J": float(e_out),
            "battery_in_J": float(e_in), "soc_start_J": float(e0), "soc_end_J": float(e1),
            "delta_soc_J": float(delta),
            "balance_residual": float(abs(delta - (e_in - e_out)) / scale)}


def hybrid_channels(m) -> dict:
    """The columns :data:`HYBRID_CHANNELS` at the points ``sorted(m.s)`` (arrays), ``{}``
    without ``m.hybrid``."""
    b = m.component("hybrid")
    if b is None:
        return {}
    sigma = sorted(m.s)

    def col(var):
        return np.array([math.nan if var[s].value is None else float(var[s].value) for s in sigma])
    return {"power_deploy": col(b.deploy_power), "power_harvest": col(b.harvest_power),
            "soc_energy": col(b.soc)}
