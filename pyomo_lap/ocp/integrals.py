r"""Energy integrals on a built model (issue 38): the energy the car spends and dissipates over
the sector, as named Pyomo components, and limits on them.

:func:`add_energy_integrals` puts on the model a block ``m.energy`` with, for each quantity,
its power at every point ``m.energy.<name>_power[s]`` [W] and its integral over the sector
``m.energy.<name>`` [J]. The powers are written once, over numbers, arrays and Pyomo
expressions (:func:`pyomo_lap.vehicle.energy.energy_powers`): the model's powers here and the
trajectory's columns (:func:`energy_channels`) are the same function of the same forces:

=============  ===========================================================================
name           power [W] (every term >= 0)
=============  ===========================================================================
``traction``   at the driven wheels, :math:`f_{xa}\,v_{3x}` (the model's power row;
               :math:`f_{xa} \ge 0`, the drive force's positive part)
``engine``     at the engine: the traction power over the drivetrain's efficiency
               (``[engine] efficiency`` of the car file; 1 without one). fastest-lap's
               ``engine-energy`` is its throttle times the maximum power, the power its
               engine gives the rear axle (``src/core/actuators/engine.hpp``)
``braking``    taken by the brakes, :math:`-f_{xb}\,v_{3x}` (:math:`f_{xb} \le 0`)
``drag``       against the drag, :math:`-f_{drag}\,v_{3x} = C_x \tfrac12\rho S v_{3x}^3`
``tyre_fl``    dissipated by each tyre (``fl`` front-left = wheel 11, ``fr`` = 12, ``rl`` =
``tyre_fr``    21, ``rr`` = 22): force times slip velocity, fastest-lap's definition
``tyre_rl``    (``Tire::get_dissipation``, :math:`F_x (v_x - \omega R) + F_y v_y` of the
``tyre_rr``    contact point in the tyre's frame, with the sign turned)
=============  ===========================================================================

**The tyres' dissipation in this model.** Laterally, the slip velocity of a tyre is the
lateral velocity of its axle's centre in the tyre's frame; the model's slip angle (eq 33, in
its small-angle form) is that velocity over :math:`v_{3x}`, :math:`\alpha_i = -v_{sy}/v_{3x}`,
so the lateral part is :math:`f_{ijy}\,\alpha_i\,v_{3x}` (the same sign as the force for a
tyre at or below its peak: :math:`\ge 0`). Longitudinally the model has no slip: a wheel rolls
at the road speed and its longitudinal force is a control (eq 34), so the longitudinal part is
**zero** by default. fastest-lap's wheels slip (its ``kappa`` states), and its longitudinal
part :math:`F_x \kappa v_x` counts: ``add_energy_integrals(m, slip_at_peak=...)`` adds an
estimate of it (:func:`slip_power`: the slip ratio that gives the tyre's longitudinal force
on a characteristic of the lateral one's shape); ``benchmarks/energy_limited.py`` reports what
that part is worth on fastest-lap's tyre-energy-limited lap (docs/energy.md).

**The integral.** :math:`E = \int P\,dt = \int_0^L P/\dot q_1\,ds` (:math:`dt = ds/\dot q_1`),
by the quadrature of the collocation itself: in each finite element, the weights of the
interpolating polynomial through its collocation points (Radau: the last row of the
collocation matrix). It is exactly the value at the sector's end of a state :math:`E(s)` with
:math:`dE/ds = P/\dot q_1`, :math:`E(0) = 0`, collocated as the model collocates its states
(the time ``m.t`` among them), without the state's rows: the expressions add nothing to the
NLP. A limit (:func:`add_energy_limits`) adds one row each, :math:`E / E_{max} \le 1`,
dimensionless.

Limits by name (:data:`LIMIT_NAMES`): ``<name>_energy`` for the sums and ``tyre_energy_fl`` ...
``tyre_energy_rr`` for the tyres, ``tyre_energy`` for each of the four; values in J, kJ, MJ, Wh
or kWh (:func:`parse_energy`), a bare number in J; ``fuel`` the fuel used [kg] (kg or g), for
a car with ``[fuel]`` (``m.energy.fuel_flow[s]`` [kg/s] and ``m.energy.fuel`` [kg],
:mod:`pyomo_lap.vehicle.fuel`). The names and parsers live in :mod:`pyomo_lap.vehicle.limits`.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Optional

import numpy as np
import pyomo.environ as pyo

__all__ = ["ENERGY_NAMES", "LIMIT_NAMES", "TYRES", "add_energy_integrals", "add_energy_limits",
           "energy_summary", "parse_energy", "parse_limits", "EnergyLimits", "slip_power", "slip_ratio", "ENERGY_CHANNELS",
           "energy_channels"]

from ..vehicle.energy import energy_powers
from ..vehicle.fuel import fuel_flow, has_fuel
from ..vehicle.limits import (  # noqa: F401
    ENERGY_NAMES,
    ENERGY_UNITS,
    LIMIT_NAMES,
    TYRES,
    parse_energy,
    parse_limits,
)
from ..vehicle.tyres import peak_force
from .collocation import CollocationGrid
from .common import vehicle_var

ENERGY_CHANNELS = ("power_engine", "power_braking", "power_drag") + tuple(f"power_tyre_{t}" for t in TYRES) + ("fuel_flow",)
"""The trajectory's columns of the powers (:func:`energy_channels`; the traction power is the
column ``power``) and the fuel flow [kg/s] of a car with ``[fuel]``."""


class EnergyLimits:
    """Domain of the job and OCP option ``limits`` (:func:`parse_limits`)."""

    def __call__(self, x) -> dict:
        """The limits ``{name: joules}``; raises ValueError as :func:`parse_limits`."""
        return parse_limits(x)

    def domain_name(self) -> str:
        """The domain's description in the option tables."""
        return "{name: energy} or NAME=VALUE texts"






def _powers(m, slip_at_peak=None) -> dict:
    """``{s: {name: expression}}``: the power of each integral at every point [W]
    (:func:`pyomo_lap.vehicle.energy.energy_powers` of the model's forces and speed, the tyres
    with the slip estimate :func:`slip_power` when ``slip_at_peak`` is given), for the
    quantities the model has."""
    v = m.v_3x
    # a setting of the [engine] section (the same for every car a model takes: set_vehicle)
    eta = getattr(m.vehicle.built_for, "drivetrain_efficiency", None)
    car = m.component("car")
    aero_q = car.component("aero_q") if car is not None else None
    Cx = vehicle_var(m, "aero.Cx") if aero_q is not None else None
    tyres = {t: (w, m.component(f"f_{w}y"), m.component(f"alpha_{w[0]}")) for t, w in TYRES.items()}
    tyres = {t: x for t, x in tyres.items() if x[1] is not None and x[2] is not None}
    out = {}
    for s in m.s:
        out[s] = energy_powers(v[s], f_xa=m.f_xa[s], f_xb=m.f_xb[s],
                               f_drag=None if aero_q is None else -Cx * aero_q[s],
                               tyres={t: (fy[s], alpha[s]) for t, (w, fy, alpha) in tyres.items()},
                               drivetrain_efficiency=eta)
        if slip_at_peak is not None:
            for t, (w, _, _) in tyres.items():
                out[s][f"tyre_{t}"] = out[s][f"tyre_{t}"] + slip_power(m, w, s, slip_at_peak)
    return out


def slip_ratio(m, w: str, s, slip_at_peak):
    r"""An estimate of the longitudinal slip ratio of tyre ``w`` (``"11"`` ...) at ``s`` [-].

    For a model without longitudinal slip: the :math:`\kappa` that gives the tyre's force
    on a pure-slip characteristic of the lateral one's shape,
    :math:`f_x = D_x \sin(C \arctan(B_x \kappa))`, peaking at ``slip_at_peak`` :math:`\kappa_p`
    (:math:`B_x \kappa_p = \tan(\pi/2C)`):

    .. math::
        \kappa = \kappa_p \frac{\tan(\arcsin(r)/C)}{\tan(\pi/2C)},\qquad
        r = \frac{f_x}{D_x} = \frac{\mu_y}{\mu_x}\frac{f_x}{D},

    :math:`D` the tyre's lateral peak of its load (:func:`pyomo_lap.vehicle.tyres.peak_force`),
    :math:`\arcsin r` written :math:`\arctan(r/\sqrt{1 - r^2 + 10^{-6}})` (a finite slope at
    the peak). ``slip_at_peak`` is a number or ``slip_at_peak(f_z)`` (a Pyomo expression of the
    load [N]). fastest-lap's tyre (tire-pacejka-simple) is this characteristic with
    :math:`C = Q_x`, its peak at :math:`\kappa_p = \kappa_{max}(f_z)\tan(\pi/2Q_x)/S_x`."""
    mu_y0, mu_x0 = vehicle_var(m, "tyre.mu_y0"), vehicle_var(m, "tyre.mu_x0")
    pD2, Fz0, C = vehicle_var(m, "tyre.pD2"), vehicle_var(m, "tyre.Fz0"), vehicle_var(m, "tyre.C")
    fz = m.component(f"f_{w}z")[s]
    D = peak_force(SimpleNamespace(mu_y0=mu_y0, pD2=pD2, Fz0=Fz0), fz)
    r = mu_y0 / mu_x0 * m.component(f"f_{w}x")[s] / D
    kp = slip_at_peak(fz) if callable(slip_at_peak) else slip_at_peak
    return kp * pyo.tan(pyo.atan(r / pyo.sqrt(1.0 - r * r + 1e-6)) / C) / pyo.tan(math.pi / 2 / C)


def slip_power(m, w: str, s, slip_at_peak):
    r"""The power tyre ``w`` dissipates by its longitudinal slip at point ``s``, estimated:
    :math:`f_x \kappa\,v_{3x}` [W] with :func:`slip_ratio` (:math:`\ge 0`)."""
    return m.component(f"f_{w}x")[s] * slip_ratio(m, w, s, slip_at_peak) * m.v_3x[s]


def add_energy_integrals(m, limits: Optional[dict] = None, slip_at_peak=None):
    """Put the block ``m.energy`` on a built model (module docstring): per point the powers
    ``m.energy.<name>_power[s]`` [W], and the integrals ``m.energy.<name>`` [J] (Expressions:
    nothing is added to the NLP), for the names of :data:`ENERGY_NAMES` the model has
    (traction, engine and braking need ``m.f_xa``, ``m.f_xb``, ``m.v_3x``, ``m.q1_dot``; drag
    ``m.car.aero_q``; the tyres ``m.f_<ij>y`` and ``m.alpha_<i>``); then the ``limits``
    (:func:`add_energy_limits`). A model without those variables is returned unchanged.

    Parameters
    ----------
    m : ConcreteModel
        Built by :func:`pyomo_lap.ocp.build.build_model`.
    limits : dict, optional
        ``{limit name: joules}`` (:data:`LIMIT_NAMES`).
    slip_at_peak : float or callable, optional
        The tyres' longitudinal slip ratio at their peak force [-] (or a function of the load
        [N]): the tyres' energies then add the estimate of :func:`slip_power` (the model has
        no longitudinal slip; module docstring). An ``m.energy`` without limits is replaced.

    Returns
    -------
    ConcreteModel
        ``m``.

    Raises
    ------
    ValueError
        A limit on an integral the model does not have.
    """
    if any(m.component(c) is None for c in ("f_xa", "f_xb", "v_3x", "q1_dot")):
        if limits:
            raise ValueError(f"model {m.problem.vehicle_model.name!r} has no energy integrals "
                             "(no f_xa, f_xb, v_3x, q1_dot): no limits on it")
        return m
    if slip_at_peak is not None and m.component("energy") is not None:
        if m.energy.component("limit_row") is not None:
            raise ValueError("slip_at_peak on a model whose energies are limited already: "
                             "give it with the limits")
        m.del_component("energy")
    if m.component("energy") is None:
        powers = _powers(m, slip_at_peak)
        w = CollocationGrid.from_model(m).quadrature()
        m.energy = pyo.Block(doc="energy integrals over the sector (pyomo_lap.ocp.integrals)")
        m.energy.slip_estimate = slip_at_peak is not None    # not in a results table's powers
        for name in powers[m.s.first()]:
            P = pyo.Expression(m.s, rule=lambda b, s, n=name: powers[s][n],
                               doc=f"{name} power [W] (pyomo_lap.vehicle.energy)")
            m.energy.add_component(f"{name}_power", P)
            m.energy.add_component(name, pyo.Expression(
                expr=sum(wj * P[s] / m.q1_dot[s] for s, wj in w.items()),
                doc=f"{name} energy over the sector [J], integral of {name}_power dt"))
        _add_fuel(m, w)
    if limits:
        add_energy_limits(m, limits)
    return m


def _add_fuel(m, w: dict) -> None:
    r"""For a car with ``[fuel]`` (:mod:`pyomo_lap.vehicle.fuel`): ``m.energy.fuel_flow[s]``
    [kg/s], the fuel flow at the engine power, and ``m.energy.fuel`` [kg], its integral over
    time :math:`\int \dot m_f\,dt` by the same quadrature ``w`` (Expressions: no rows)."""
    car = m.vehicle.built_for
    if not has_fuel(car) or m.energy.component("engine_power") is None:
        return
    e = m.energy
    e.fuel_flow = pyo.Expression(m.s, rule=lambda b, s: fuel_flow(car, e.engine_power[s]),
                                 doc="fuel mass flow [kg/s] (pyomo_lap.vehicle.fuel)")
    e.fuel = pyo.Expression(expr=sum(wj * e.fuel_flow[s] / m.q1_dot[s] for s, wj in w.items()),
                            doc="fuel used over the sector [kg], integral of fuel_flow dt")


def _add_fuel_limit(m, kg: float) -> None:
    r"""The row ``m.energy.fuel_limit_row``: :math:`m_f / m_{f,max} \le 1`, the limit in the
    mutable Param ``m.energy.fuel_limit`` [kg]. ValueError: the car has no ``[fuel]``."""
    e = m.energy
    if e.component("fuel") is None:
        raise ValueError(f"limit fuel: the car {getattr(m.vehicle.built_for, 'name', '?')!r} has "
                         "no [fuel] section (the fuel used is not on the model)")
    if e.component("fuel_limit") is None:
        e.fuel_limit = pyo.Param(mutable=True, initialize=kg, units=pyo.units.kg,
                                 doc="the limit of the fuel used [kg]")
        e.fuel_limit_row = pyo.Constraint(expr=e.fuel / e.fuel_limit <= 1.0)
    e.fuel_limit = kg


def add_energy_limits(m, limits: dict):
    r"""The rows ``m.energy.limit_row[name]``: :math:`E/E_{max} \le 1` for each integral a limit
    names (:data:`LIMIT_NAMES`), with :math:`E_{max}` the mutable Param
    ``m.energy.limit[name]`` [J] (change it and solve again). The same as the user's own
    ``m.c = pyo.Constraint(expr=m.energy.engine <= 24e6)``, scaled by the limit.

    Raises
    ------
    ValueError
        An unknown name or value (:func:`parse_limits`), or an integral the model lacks.
    """
    limits = parse_limits(limits)
    if "fuel" in limits:
        _add_fuel_limit(m, limits.pop("fuel"))
    bound = {}
    for name, joules in limits.items():
        for integral in LIMIT_NAMES[name]:
            if m.energy.component(integral) is None:
                raise ValueError(f"limit {name}: the model {m.problem.vehicle_model.name!r} "
                                 f"has no {integral} energy")
            bound[integral] = min(joules, bound.get(integral, math.inf))
    e = m.energy
    if not bound:
        return m
    if e.component("limit") is None:
        e.limit = pyo.Param(list(ENERGY_NAMES), mutable=True, initialize=math.inf,
                            units=pyo.units.J, doc="the limits of the integrals [J]")
        e.limit_row = pyo.Constraint(list(ENERGY_NAMES), rule=lambda b, n: pyo.Constraint.Skip)
    for integral, joules in bound.items():
        e.limit[integral] = joules
        if integral in e.limit_row:
            continue
        e.limit_row[integral] = e.component(integral) / e.limit[integral] <= 1.0
    return m


def energy_summary(m, table=None) -> dict:
    """summary.json's ``energy``: each integral's value [J] (``<name>_J``), ``fuel_kg`` (a car with
    ``[fuel]``) and, for the limited
    ones, ``limits`` ``{name: {"limit_J", "used_J", "share"}}``; ``{}`` without ``m.energy``.

    With ``table`` (the model's :func:`pyomo_lap.results.table.trajectory_dataframe`, a row per
    point of ``m.s``) the integrals are the same quadrature of the table's powers
    (:func:`energy_channels`) in NumPy, not Pyomo's evaluation of the expressions (0.5 s on
    the default job); without it, or for energies with the slip estimate, the expressions."""
    e = m.component("energy")
    if e is None:
        return {}
    out = _table_energies(m, table) if table is not None else {}
    for name in ENERGY_NAMES:
        comp = e.component(name)
        if comp is not None and f"{name}_J" not in out:
            value = pyo.value(comp, exception=False)
            out[f"{name}_J"] = None if value is None else float(value)
    if e.component("limit_row") is not None:
        out["limits"] = {n: {"limit_J": float(pyo.value(e.limit[n])), "used_J": out[f"{n}_J"],
                             "share": (None if out[f"{n}_J"] is None
                                       else out[f"{n}_J"] / float(pyo.value(e.limit[n])))}
                         for n in e.limit_row}
    if e.component("fuel") is not None:
        value = out.get("fuel_kg", pyo.value(e.fuel, exception=False) if "fuel_kg" not in out
                        else None)
        out["fuel_kg"] = None if value is None else float(value)
        if e.component("fuel_limit") is not None and value is not None:
            limit = float(pyo.value(e.fuel_limit))
            out.setdefault("limits", {})["fuel"] = {"limit_kg": limit, "used_kg": float(value),
                                                    "share": float(value) / limit}
    return out


def _table_energies(m, table) -> dict:
    """``{<name>_J: value}`` of the energies of ``m.energy`` whose powers the table has
    (:func:`energy_channels`; the traction :math:`f_{xa} v_{3x}`), by the quadrature of
    :meth:`pyomo_lap.ocp.collocation.CollocationGrid.quadrature` over the table's rows (one per point of ``m.s``, in order);
    ``{}`` when the table does not match the model's points or the energies carry the slip
    estimate (:func:`slip_power`, not in the table)."""
    e = m.energy
    sigma = sorted(m.s)
    if getattr(e, "slip_estimate", False) or len(table) != len(sigma) or "q1_dot" not in table:
        return {}
    if "s" in table and not np.allclose(np.asarray(table["s"], dtype=float), sigma):
        return {}
    w = CollocationGrid.from_model(m).quadrature()
    weights = np.array([w.get(s, 0.0) for s in sigma])
    channels = energy_channels(table, m.vehicle.built_for)
    powers = {k[len("power_"):]: v for k, v in channels.items() if k.startswith("power_")}
    if {"f_xa", "v_3x"} <= set(table.columns):
        powers["traction"] = energy_powers(np.asarray(table["v_3x"], dtype=float),
                                           f_xa=np.asarray(table["f_xa"], dtype=float))["traction"]
    rate = np.asarray(table["q1_dot"], dtype=float)
    out = {f"{name}_J": float(weights @ (P / rate)) for name, P in powers.items()
           if e.component(name) is not None}
    flow = channels.get("fuel_flow")
    if flow is not None and e.component("fuel") is not None:
        out["fuel_kg"] = float(weights @ (flow / rate))
    return out


def energy_channels(df, vehicle) -> dict:
    """The powers of :func:`add_energy_integrals` [W] from a trajectory's columns (``f_xa``,
    ``f_xb``, ``v_3x``, ``f_drag``, ``f_<ij>y``, ``alpha_<i>``), by the same function of the
    same forces (:func:`pyomo_lap.vehicle.energy.energy_powers`): ``{"power_<name>": array}``
    (``power_engine``, ``power_braking``, ``power_drag``, ``power_tyre_fl`` ...; the traction
    power is the table's ``power``) for the columns the table has (a DataFrame or a dict of
    arrays); ``vehicle`` for the drivetrain's efficiency (the tyres' lateral slip only) and,
    with ``[fuel]``, ``fuel_flow`` [kg/s] (:func:`pyomo_lap.vehicle.fuel.fuel_flow`)."""
    names = set(df.columns) if hasattr(df, "columns") else set(df)

    def col(c):
        return np.asarray(df[c], dtype=float) if c in names else None
    if "v_3x" not in names:
        return {}
    tyres = {t: (col(f"f_{w}y"), col(f"alpha_{w[0]}")) for t, w in TYRES.items()
             if {f"f_{w}y", f"alpha_{w[0]}"} <= names}
    powers = energy_powers(col("v_3x"), f_xa=col("f_xa"), f_xb=col("f_xb"), f_drag=col("f_drag"),
                           tyres=tyres,
                           drivetrain_efficiency=getattr(vehicle, "drivetrain_efficiency", None))
    out = {f"power_{k}": v for k, v in powers.items() if k != "traction"}
    if "power_engine" in out and has_fuel(vehicle):
        out["fuel_flow"] = np.asarray(fuel_flow(vehicle, out["power_engine"]), dtype=float)
    return out
