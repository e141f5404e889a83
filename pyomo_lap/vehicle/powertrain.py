r"""The powertrain's limit on the drive force: the power available at the driven wheels as a
function of the road speed, :math:`P(v)`, and the longitudinal force limits of the brakes.

A car file gives its powertrain in one of three ways (:class:`~pyomo_lap.vehicle.schema.VehicleParameters`):

* ``[powertrain] P_max`` alone: a constant power at the wheels (the papers' ``f_xa v <= P_max``);
* ``[power_curve] speed, power``: the power at the driven wheels over the road speed (a
  dynamometer's wheel-power curve, or the output of a lap-time tool), capped at ``P_max``;
* ``[engine] speed, torque, gear_ratios, final_drive, efficiency``: the engine's full-load
  torque curve and the gearbox. The drive force in gear :math:`k` at road speed :math:`v` is

  .. math::
      F_k(v) = \frac{\eta\, g_k g_f\, T_e(\omega_e)}{R},\qquad
      \omega_e = \frac{g_k g_f\, v}{R}

  (:math:`R` the wheel radius, :math:`\omega_e` within the curve's speeds), and the car uses
  the best gear at every speed: :math:`F(v) = \max_k F_k(v)`, the envelope lap-time tools
  use (the driver shifts at the crossing of two gears' curves; shift times are not modelled).
  Below the first gear's lowest engine speed the force is that of the lowest speed (a
  slipping clutch); above the top gear's highest engine speed there is none (the rev
  limiter). :math:`P(v) = F(v)\,v`, capped at ``P_max``.

In the optimal control problem the power limit is the row
:math:`f_{xa} v_{3x} - P(v_{3x}) \le 0`. :math:`P` must be smooth in :math:`v` for IPOPT: it is
the shape-preserving piecewise-cubic Hermite interpolant (PCHIP, :mod:`scipy.interpolate`) of
the curve on a few knots, whose pieces are joined by :math:`\tanh` blends narrower than
:data:`BLEND_FRACTION` of the knots' spacing (:func:`power_expression`), written on any
scalars (floats, the tape's symbols, Pyomo, CasADi).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from scipy.interpolate import PchipInterpolator, PPoly

from ..spatial.backend import add, mul, tanh

__all__ = ["PowerCurve", "engine_envelope", "gear_and_engine_speed", "wheel_power_curve",
           "power_expression", "power_available", "BLEND_FRACTION", "KNOTS"]

BLEND_FRACTION = 0.02
"""Half-width of the blends between the pieces of :func:`power_expression`, as a fraction of
the shortest spacing of the knots [-]: the blended function is within about 0.1 % of the
PCHIP interpolant (tests/test_powertrain.py)."""

KNOTS = 16
"""Most knots of the smooth power curve (its pieces cost about ten operations each at every
point of the mesh)."""


@dataclasses.dataclass(frozen=True)
class PowerCurve:
    r"""The power at the driven wheels on its knots, and its PCHIP coefficients.

    Attributes
    ----------
    speed : ndarray (n,)
        Road speeds of the knots, increasing, the first 0 [m/s].
    power : ndarray (n,)
        Power at the driven wheels [W].
    coefficients : ndarray (4, n - 1)
        Of each piece, :math:`\sum_j c_j (v - v_i)^{3 - j}` (scipy's ``PPoly`` layout).
    v_top : float
        The highest speed at which there is power (the rev limit in top gear, or the curve's
        last speed) [m/s].
    """

    speed: np.ndarray
    power: np.ndarray
    coefficients: np.ndarray
    v_top: float

    def __call__(self, v):
        """The PCHIP interpolant at the speeds ``v`` (array) [W]; 0 beyond :attr:`v_top`."""
        v = np.asarray(v, dtype=float)
        out = PPoly(self.coefficients, self.speed, extrapolate=False)(np.clip(v, 0.0, None))
        return np.where(np.isfinite(out), out, 0.0)


def engine_envelope(v, engine_speed, engine_torque, gear_ratios, final_drive: float,
                    efficiency: float, wheel_radius: float) -> tuple:
    r"""The drive force of the best gear at each road speed, :math:`F(v) = \max_k F_k(v)`
    (module docstring).

    Parameters
    ----------
    v : (n,) array
        Road speeds [m/s], >= 0.
    engine_speed, engine_torque : (k,) arrays
        The full-load torque curve: engine speeds, increasing [rad/s], and torques [N m]
        (linear between the points).
    gear_ratios : (g,) array
        Gearbox ratios [-]; ``final_drive`` [-]; ``efficiency`` from the crankshaft to the
        wheels [-]; ``wheel_radius`` [m].

    Returns
    -------
    (force (n,) [N], gear (n,) int, the gear index of the envelope (-1: none))
    """
    v = np.asarray(v, dtype=float)
    ws = np.asarray(engine_speed, dtype=float)
    tq = np.asarray(engine_torque, dtype=float)
    forces = []
    for g in np.asarray(gear_ratios, dtype=float):
        ratio = g * final_drive
        we = ratio * v / wheel_radius
        torque = np.interp(np.maximum(we, ws[0]), ws, tq)   # clutch slip below the lowest
        forces.append(np.where(we <= ws[-1], efficiency * ratio * torque / wheel_radius, 0.0))
    F = np.array(forces)
    best = np.argmax(F, axis=0)
    force = F[best, np.arange(len(v))]
    return force, np.where(force > 0, best, -1)


def gear_and_engine_speed(p, v) -> Optional[tuple]:
    r"""The gear the car is in and its engine speed at the road speeds ``v``, by the rule of the
    power limit: the gear of :func:`engine_envelope` (the one of the largest drive force), and
    :math:`\omega_e = \max(g_k g_f v / R, \omega_{e,min})` (the clutch slips below the curve's
    lowest engine speed, where the envelope takes that speed's torque).

    Parameters
    ----------
    p : VehicleParameters
        A car with an ``[engine]`` section (``engine_speed``, ``gear_ratios`` ...).
    v : (n,) array
        Road speeds [m/s] (the power limit's: ``v_3x``).

    Returns
    -------
    (gear (n,) float, engine speed (n,) [rad/s]) or None
        Gear 1 (first) ... len(gear_ratios); both NaN above the top gear's rev limit (no
        gear gives a force). None for a car without a gearbox (``P_max`` or a power curve).
    """
    if getattr(p, "engine_speed", None) is None or getattr(p, "gear_ratios", None) is None:
        return None
    v = np.clip(np.asarray(v, dtype=float), 0.0, None)
    eff = 1.0 if p.drivetrain_efficiency is None else p.drivetrain_efficiency
    _, best = engine_envelope(v, p.engine_speed, p.engine_torque, p.gear_ratios, p.final_drive,
                              eff, p.wheel_radius)
    ratio = np.asarray(p.gear_ratios, dtype=float)[np.maximum(best, 0)] * p.final_drive
    omega = np.maximum(ratio * v / p.wheel_radius, float(p.engine_speed[0]))
    none = best < 0
    return np.where(none, np.nan, best + 1.0), np.where(none, np.nan, omega)


def wheel_power_curve(p) -> Optional[PowerCurve]:
    """The car's power at the driven wheels over the road speed, as a :class:`PowerCurve` on
    at most :data:`KNOTS` knots, capped at ``P_max``; None for a car with ``P_max`` alone.

    The knots: from 0 to the top speed of the curve, placed where the curve bends (the
    points of a fine grid where the PCHIP of the knots so far is farthest from the curve are
    added one by one), then two knots of zero power just above the top speed (1.02 and 1.04
    times it)."""
    if p.power_curve_speed is not None:
        vs = np.asarray(p.power_curve_speed, dtype=float)
        grid = np.linspace(0.0, vs[-1], 600)
        P = np.interp(grid, vs, np.asarray(p.power_curve_power, dtype=float), left=0.0)
        P = np.where(grid < vs[0], np.interp(vs[0], vs, p.power_curve_power) * grid / max(vs[0], 1e-9), P)
        v_top = float(vs[-1])
    elif p.engine_speed is not None:
        eff = 1.0 if p.drivetrain_efficiency is None else p.drivetrain_efficiency
        v_top = float(p.engine_speed[-1] * p.wheel_radius / (min(p.gear_ratios) * p.final_drive))
        grid = np.linspace(0.0, v_top, 600)
        F, _ = engine_envelope(grid, p.engine_speed, p.engine_torque, p.gear_ratios,
                               p.final_drive, eff, p.wheel_radius)
        P = F * grid
    else:
        return None
    P = np.minimum(P, p.P_max)
    # past the top speed two knots of zero power: PCHIP's slope is 0 at the first of them
    # (a change of sign), so the last piece is 0 and the blends of power_expression do not
    # dip below 0 there (with one zero knot, the last piece went on falling and the blended
    # curve dipped 0.17 % of its peak below 0 just past it: an infeasible band of speeds;
    # tests/test_powertrain.py)
    tail_v, tail_p = v_top * np.array([1.02, 1.04]), np.zeros(2)
    knots = [0, len(grid) - 1]
    for _ in range(KNOTS - 4):
        k = sorted(knots)
        # with the knots past the top speed the interpolant will have: they change PCHIP's
        # slope at the top speed and so the last piece (without them, 5 % of P_max off below
        # the redline of a test engine, tests/test_powertrain.py)
        approx = PchipInterpolator(np.append(grid[k], tail_v), np.append(P[k], tail_p))(grid)
        err = np.abs(approx - P)
        worst = int(np.argmax(err))
        if err[worst] <= 1e-3 * max(P.max(), 1.0) or worst in knots:
            break
        knots.append(worst)
    k = sorted(knots)
    speeds = np.append(grid[k], tail_v)
    powers = np.append(P[k], tail_p)
    pc = PchipInterpolator(speeds, powers)
    return PowerCurve(speed=speeds, power=powers, coefficients=np.asarray(pc.c), v_top=v_top)


def power_expression(curve: PowerCurve, v):
    r"""The smooth power curve at the speed ``v`` (a float or a symbol: the tape's, Pyomo,
    CasADi) [W]: the pieces of the PCHIP interpolant joined by blends.

    .. math::
        P(v) = \sum_i \big[\sigma(v - v_i) - \sigma(v - v_{i+1})\big]\, p_i(v),\quad
        \sigma(x) = \tfrac12\big(1 + \tanh(x/\varepsilon)\big),

    :math:`\varepsilon` = :data:`BLEND_FRACTION` times the shortest knot spacing; zero above
    the last knot (module docstring)."""
    vs, c = curve.speed, curve.coefficients
    eps = BLEND_FRACTION * float(np.min(np.diff(vs)))

    def sigma(x0):
        return add(0.5, mul(0.5, tanh(mul(1.0 / eps, add(v, -float(x0))))))

    steps = [sigma(x) for x in vs]
    total = 0.0
    for i in range(len(vs) - 1):
        x = add(v, -float(vs[i]))
        piece = add(mul(add(mul(add(mul(float(c[0, i]), x), float(c[1, i])), x), float(c[2, i])), x),
                    float(c[3, i]))
        weight = add(steps[i], mul(-1.0, steps[i + 1]))
        total = add(total, mul(weight, piece))
    return total


def power_available(p, v):
    """The power the car can deliver at its driven wheels at the speed ``v`` [W]: ``P_max``,
    or its curve (:func:`wheel_power_curve`, :func:`power_expression`) on any scalars; numpy
    arrays are evaluated with the PCHIP interpolant directly."""
    curve = wheel_power_curve(p) if not hasattr(p, "numbers") else wheel_power_curve(p.numbers)
    if curve is None:
        return p.P_max if np.ndim(v) == 0 else np.full(np.shape(v), float(p.P_max))
    if isinstance(v, np.ndarray):
        return curve(v)
    return power_expression(curve, v)
