r"""The full model's channels as named Pyomo ``Expression`` s, for users' constraints and
objectives.

:func:`add_channel_expressions` adds ``m.speed``, ``m.a_x``, ``m.a_y``, the slip angles and
the tyre forces (:data:`CHANNEL_EXPRESSIONS`) to a built full model
(:mod:`pyomo_lap.ocp.full_model`), from the named expressions of its rows; :data:`WHEELS`
are the keys of the full car's four wheels in the names of its rows and channels.
"""
from __future__ import annotations

import pyomo.environ as pyo

from ..spatial import lie
from ..spatial.backend import cos, mul, sin, sqrt, total
from ..vehicle import car as veh
from .common import vehicle_var

__all__ = ["CHANNEL_EXPRESSIONS", "add_channel_expressions", "WHEELS"]

WHEELS = ("11", "12", "21", "22")
"""The full car's wheels ``ij``: axle ``i`` (1 front, 2 rear), side ``j`` (1 left, 2 right)."""


CHANNEL_EXPRESSIONS = ("speed", "a_x", "a_y", "alpha_1", "alpha_2", "f_11x", "f_12x", "f_21x",
                       "f_22x", "f_11y", "f_12y", "f_21y", "f_22y")
"""The named channels on a full model, ``m.<name>[s]`` (:func:`add_channel_expressions`); the
vertical loads are the variables ``m.f_11z`` ... ``m.f_22z``."""


def add_channel_expressions(m) -> None:
    r"""The channels a user writes constraints and objectives on, as named ``Expression`` s.

    Indexed by ``m.s``: the same quantities, in SI units, as the columns of the same name of
    ``trajectory.csv`` (``pyomo-lap channels`` describes each):

    * ``m.speed`` [m/s]: speed of O3, :math:`\sqrt{v_{3x}^2 + v_{3y}^2}` (not ``q1_dot``, the
      rate along the centreline, which differs from it by the lateral offset and yaw);
    * ``m.a_x``, ``m.a_y`` [m/s^2]: acceleration of O3 in {B3} without gravity, + forward,
      + left (:func:`pyomo_lap.vehicle.car.o3_acceleration`);
    * ``m.alpha_1``, ``m.alpha_2`` [rad]: slip angles of the front and rear axle, eq (33);
    * ``m.f_11x`` ... ``m.f_22x``, ``m.f_11y`` ... ``m.f_22y`` [N]: longitudinal and lateral
      tyre forces (wheel ``ij``: axle ``i`` = 1 front, 2 rear; side ``j`` = 1 left, 2 right),
      eqs (32), (34).

    They reuse the named expressions of the rows (``m.car.V3_k``, ``m.car.a3_k``,
    ``m.car.alpha_1`` ...): no equation is written twice. The brake split and the gravity are
    the model's ``m.vehicle.powertrain.brake_ratio`` and ``m.vehicle.gravity``.
    """
    rotation = m.problem.track_points.rotation     # R_01 at the points (the record's R[k])
    sigma = sorted(m.s)
    idx = {s: i for i, s in enumerate(sigma)}
    car = m.car

    def named(prefix, k, s):
        comp = car.component(f"{prefix}_{k}")
        return comp[s] if comp is not None and s in comp else 0.0

    def v3(s):
        return [named("V3", k, s) for k in range(6)]

    def acc(s):
        R = rotation[idx[s]].tolist()
        q3 = m.q3[s]
        Rz = lie.rot_axis(2, cos(q3), sin(q3))
        # the third row of R03 = R01 Rz(q3) (the ground's z axis in {B3}): only it is used
        row_z = [total(mul(R[2][k], Rz[k][j]) for k in range(3)) for j in range(3)]
        a3 = [named("a3", k, s) for k in range(3)]
        return veh.o3_acceleration(v3(s), a3, row_z, vehicle_var(m, "gravity"))

    a_xyz = {s: acc(s) for s in sigma}         # a_x and a_y of a point from one evaluation
    m.speed = pyo.Expression(m.s, rule=lambda m, s: sqrt(named("V3", 0, s) ** 2 + named("V3", 1, s) ** 2),
                             doc="speed of O3, sqrt(v_3x^2 + v_3y^2) [m/s]")
    m.a_x = pyo.Expression(m.s, rule=lambda m, s: a_xyz[s][0],
                           doc="longitudinal acceleration of O3 in {B3} without gravity, + forward [m/s^2]")
    m.a_y = pyo.Expression(m.s, rule=lambda m, s: a_xyz[s][1],
                           doc="lateral acceleration of O3 in {B3} without gravity, + left [m/s^2]")
    for axle in ("1", "2"):
        m.add_component(f"alpha_{axle}", pyo.Expression(
            m.s, rule=lambda m, s, a=axle: car.component(f"alpha_{a}")[s],
            doc=f"slip angle of the {'front' if axle == '1' else 'rear'} axle, eq (33) [rad]"))
    k_b = vehicle_var(m, "powertrain.brake_ratio")
    # the drive split k_d of an all- or front-wheel-drive car (a structural zero: no variable
    # for rear-wheel drive); before, the front wheels were written as braking only, whatever
    # k_d (tests/test_vehicle_physics.py)
    try:
        k_d = vehicle_var(m, "powertrain.drive_ratio")
    except ValueError:
        k_d = 0.0
    for w in WHEELS:
        where = f"{'front' if w[0] == '1' else 'rear'}-{'left' if w[1] == '1' else 'right'}"
        if w[0] == "1":
            rule = (lambda m, s: 0.5 * k_b * m.f_xb[s] + 0.5 * k_d * m.f_xa[s])
        else:
            rule = (lambda m, s: 0.5 * (1.0 - k_b) * m.f_xb[s] + 0.5 * (1.0 - k_d) * m.f_xa[s])
        m.add_component(f"f_{w}x", pyo.Expression(
            m.s, rule=rule, doc=f"longitudinal tyre force, {where} wheel, eq (34) [N]"))
        m.add_component(f"f_{w}y", pyo.Expression(
            m.s, rule=lambda m, s, w=w: car.component(f"f_{w}y")[s],
            doc=f"lateral tyre force, {where} wheel, eq (32) [N]"))
