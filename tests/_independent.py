"""Computations the tests check solved trajectories against, independent of the collocation,
the NLP and the solver: they use only the track geometry (``Track.evaluate``), the vehicle's
parameters and the exported channels.

* :func:`time_by_quadrature`: the sector time as the integral of ds / q1_dot by a cubic
  spline through the points (the collocation integrates with its own Radau weights);
* :func:`speed_and_time_bounds`: an upper bound on the car's speed and a lower bound on the
  sector (lap) time from the energy balance: power, drag, gravity and the track's width;
* :func:`friction_ellipse_use`: how much of each tyre's friction ellipse the forces use, with
  the peak force written here from the vehicle file's Magic-Formula data.
"""
import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

BETA_MAX = 0.2
"""[rad] side slip the bounds allow for (v_3y / v_3x <= tan 0.2; a race car at the limit
slides a few degrees: about 0.1 rad on the Nordschleife)."""

SIN_MARGIN = 0.01
"""Added to the steepest effective downhill slope: the centre of mass moves relative to O3
(heave, pitch, roll), so the potential energy the car can gain is that of O3 up to this."""


def time_by_quadrature(s, q1_dot) -> float:
    """Time to travel the track coordinate ``s`` [m] at the rate ``q1_dot`` [m/s]:
    t = integral of ds / q1_dot, by a not-a-knot cubic spline of 1 / q1_dot through the
    points (exact for cubics; the collocation's own quadrature is exact for polynomials of
    degree 2 ncp - 2 and weights only the collocation points)."""
    s, q1_dot = np.asarray(s, float), np.asarray(q1_dot, float)
    return float(CubicSpline(s, 1.0 / q1_dot).integrate(s[0], s[-1]))


def time_along(s, q1_dot) -> np.ndarray:
    """The same integral from s[0] to every point of ``s`` [s] (the spline's antiderivative)."""
    s, q1_dot = np.asarray(s, float), np.asarray(q1_dot, float)
    F = CubicSpline(s, 1.0 / q1_dot).antiderivative()
    return F(s) - F(s[0])


@dataclass
class Bounds:
    v_max: float
    """[m/s] upper bound on v_3x anywhere on the sector"""
    t_min: float
    """[s] lower bound on the sector (lap) time"""
    sin_down: float
    """steepest effective downhill slope used (incl. SIN_MARGIN)"""


def speed_and_time_bounds(p, track, start: float, length: float, step: float = 0.5) -> Bounds:
    r"""Bounds every trajectory of the car must respect, whatever the tyres and the driver.

    Energy: the only sources of energy are the drive, :math:`f_{xa} v_{3x} \le P_{max}`, and
    gravity; drag takes :math:`k_x v_{3x}^3` (:math:`k_x = \tfrac12\rho S C_x`); tyres, brakes
    and dampers only dissipate. The lateral axis of the track frame is horizontal (no
    banking on the Nordschleife), so O3 is at the spine's height z(q1), and gravity gives at
    most :math:`m g \sin\theta_{eff} v` with :math:`\sin\theta_{eff} = \max(-dz/ds / (1 - w
    |\Omega_z|))` (:math:`w`: the largest lateral offset the track limits allow; on the inside
    of a bend the car covers ds in less than ds of path). Where the kinetic energy is largest,
    :math:`0 \le P_{max} - k_x \cos^3\beta\, v^3 + m g \sin\theta_{eff} v`, so
    :math:`v_{3x} \le v \le v_{max}`, the root of :math:`k_x\cos^3\beta_{max} v^3 - m g
    \sin\theta_{eff} v - P_{max} = 0` (on an open sector this needs an entry speed below
    :math:`v_{max}`; on a periodic lap it holds as it stands).

    Time: the in-plane speed of O3 is at least :math:`\dot q_1 (1 - \Omega_z q_2)`, so
    :math:`\dot q_1 \le v_{max} / (\cos\beta_{max} (1 - w|\Omega_z|))` and
    :math:`T \ge \int (1 - w|\Omega_z|)\cos\beta_{max}\, ds / v_{max}`.

    Loose by design (about 20 % below the optimum on the Nordschleife: no grip limit at
    all), but it holds for the full model, the single-track model and any other car model
    with the same power, drag, mass and track.
    """
    s = np.arange(start, start + length + 0.5 * step, step)
    s[-1] = min(s[-1], start + length)
    tp = track.evaluate(np.mod(s, track.length) if track.closed else s)
    assert np.allclose(tp.banking, 0.0), "the gravity term assumes an unbanked track"
    w = np.maximum(tp.width_left, tp.width_right) - p.width / 2
    shrink = 1.0 - w * np.abs(tp.omega[:, 2])
    assert shrink.min() > 0.5, "a bend tighter than the track is wide"
    sin_down = max(float(np.max(-tp.tangent[:, 2] / shrink)), 0.0) + SIN_MARGIN
    kx = 0.5 * p.rho * p.S * p.Cx * math.cos(BETA_MAX) ** 3
    m, g = p.m, p.gravity
    roots = np.roots([kx, 0.0, -m * g * sin_down, -p.P_max])
    v_max = float(max(r.real for r in roots if abs(r.imag) < 1e-9 * abs(r)))
    t_min = float(math.cos(BETA_MAX) * np.trapezoid(shrink, s) / v_max)
    return Bounds(v_max=v_max, t_min=t_min, sin_down=sin_down)


def friction_ellipse_use(p, df) -> np.ndarray:
    r"""Per point and tyre, :math:`((\mu_y/\mu_x) f_x)^2 + f_y^2` over :math:`D(f_z)^2`, the
    friction ellipse of the paper with the Magic-Formula peak
    :math:`D = \mu_{y0}(1 + p_{D2}(f_z - F_{z0})/F_{z0}) f_z` written here from the vehicle
    file's numbers; <= 1 for a tyre within its grip."""
    out = []
    ratio = p.mu_y0 / p.mu_x0
    for w in ("11", "12", "21", "22"):
        fz = df[f"f_{w}z"].to_numpy()
        D = p.mu_y0 * (1.0 + p.pD2 * (fz - p.Fz0) / p.Fz0) * fz
        fx, fy = df[f"f_{w}x"].to_numpy(), df[f"f_{w}y"].to_numpy()
        out.append(((ratio * fx) ** 2 + fy ** 2) / D ** 2)
    return np.column_stack(out)
