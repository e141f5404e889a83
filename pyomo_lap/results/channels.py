r"""The channel dictionary: what every column of ``trajectory.csv`` is.

One entry (:class:`Channel`) for every column that
:func:`pyomo_lap.results.table.trajectory_dataframe` can produce, for the full model, the
multibody car (``--model multibody``) and the single-track model (``--model single-track``):
its name, unit (:data:`UNITS`, the one table of units; :data:`pyomo_lap.results.table.UNITS`
is the same object), meaning, sign convention, source (the equation of the paper, or the
code that computes it) and, for the channels of one wheel or one axle, which one in words.
``pyomo-lap channels [NAME ...]`` prints it, ``docs/channels.md`` holds
:func:`channel_markdown`, and ``results.xlsx`` has it as the sheet ``channel_dictionary``
and as comments on the headers of the sheet ``channels``.

The paper is L. Bartali, M. Gabiccini, E. Grabovic, M. Guiggiani, *A Lie group-based race car
model for systematic trajectory optimization on 3D tracks* (preprint); "eq (N)" is the
preprint's numbering (``../shared/MODEL_NOTES.md``). Every sign below was checked against the
code that computes the column (:func:`pyomo_lap.vehicle.car.car_equations`,
:mod:`pyomo_lap.spatial.tree`, :mod:`pyomo_lap.results.table`,
:mod:`pyomo_lap.vehicle.multibody_car`, :mod:`pyomo_lap.vehicle.single_track_car`); where the
code departs from the printed equations, the entry describes what the column holds.

Conventions
-----------
* Wheels ``ij``: axle ``i`` = 1 front, 2 rear; side ``j`` = 1 left, 2 right (``11``
  front-left, ``12`` front-right, ``21`` rear-left, ``22`` rear-right); contact points at
  :math:`x = a_1` (front), :math:`-a_2` (rear), :math:`y = +t_i/2` (left), :math:`-t_i/2`
  (right) in {B3}.
* Frames, all right-handed: {G} the ground frame of the track data (z up); {B1} the track
  frame at ``q1``, x along the centreline's tangent, y to the left in the (banked) road
  plane, z the road normal, up; {B3} the car's road-plane frame, origin O3 on the road under
  the vehicle invariant point (VIP), x forward along the car's heading, y to the left, z up
  along the road normal; {B6} the sprung body, origin at the VIP.
* Positive rotations are right-handed: yaw ``q3`` + counter-clockwise seen from above (nose
  to the left), pitch ``q5`` + nose down, roll ``q6`` + right side down, steer ``delta`` + to
  the left. Lateral quantities (``q2``, ``v_3y``, ``a_y``, tyre lateral forces) are + to the
  left, vertical ones (``q4``, ``a_z``, loads) + up.
"""
from __future__ import annotations

import dataclasses
import difflib
import string
import textwrap
from typing import Iterable, NamedTuple, Optional

import pandas as pd

__all__ = ["Channel", "CHANNELS", "UNITS", "WHEEL_WORDS", "AXLE_WORDS", "COLUMNS", "channel_table",
           "channel_markdown", "channel_text", "describe"]

UNITS = {
    "s": "m", "s_sector": "m", "t": "s", "q1": "m", "q2": "m", "q3": "rad", "q4": "m",
    "q5": "rad", "q6": "rad", "q1_dot": "m/s", "q2_dot": "m/s", "q3_dot": "rad/s",
    "q4_dot": "m/s", "q5_dot": "rad/s", "q6_dot": "rad/s",
    "q1_ddot": "m/s^2", "q2_ddot": "m/s^2", "q3_ddot": "rad/s^2", "q4_ddot": "m/s^2",
    "q5_ddot": "rad/s^2", "q6_ddot": "rad/s^2",
    "f_xa": "N", "f_xb": "N", "delta": "rad",
    "f_11z": "N", "f_12z": "N", "f_21z": "N", "f_22z": "N", "f_3x": "N", "f_3y": "N", "m_3z": "N m",
    "v_3x": "m/s", "v_3y": "m/s", "omega_3z": "rad/s", "speed": "m/s", "speed_kmh": "km/h",
    "a_x": "m/s^2", "a_y": "m/s^2", "a_z": "m/s^2", "a_t": "m/s^2",
    # logger channels (pyomo_lap.results.logger): a data logger's quantities in its units
    "throttle": "%", "brake": "%", "harvest": "%", "steering_wheel_angle": "deg", "gear": "-",
    "engine_speed": "rpm", "yaw_rate": "deg/s", "a_x_g": "g", "a_y_g": "g", "a_z_g": "g",
    "delta_rate": "rad/s", "f_xa_rate": "N/s", "f_xb_rate": "N/s",
    "alpha_1": "rad", "alpha_2": "rad",
    "f_11x": "N", "f_12x": "N", "f_21x": "N", "f_22x": "N",
    "f_11y": "N", "f_12y": "N", "f_21y": "N", "f_22y": "N",
    "f_3z": "N", "m_3x": "N m", "m_3y": "N m", "f_drag": "N", "f_down": "N", "power": "W",
    # the powers of the energy integrals (pyomo_lap.ocp.integrals, docs/energy.md)
    "power_engine": "W", "power_braking": "W", "power_drag": "W",
    "power_tyre_fl": "W", "power_tyre_fr": "W", "power_tyre_rl": "W", "power_tyre_rr": "W",
    "power_deploy": "W", "power_harvest": "W", "soc_energy": "J",     # [hybrid] (ocp/hybrid.py)
    "fuel_flow": "kg/s",
    "x_vip": "m", "y_vip": "m", "z_vip": "m", "x_spine": "m", "y_spine": "m", "z_spine": "m",
    "width_left": "m", "width_right": "m", "Omega_x": "1/m", "Omega_y": "1/m", "Omega_z": "1/m",
    "load_residual_max": "N", "element": "-",
    "v_point_mass": "m/s", "t_point_mass": "s",
    # the multibody car (pyomo_lap.ocp.multibody): carrier travels, wheel-centre heights,
    # suspension joint forces, Magic Formula peak and angle
    **{f"z{w}{k}": u for w in ("11", "12", "21", "22")
       for k, u in (("", "m"), ("_dot", "m/s"), ("_ddot", "m/s^2"))},
    **{f"{c}_{w}": u for w in ("11", "12", "21", "22")
       for c, u in (("zc", "m"), ("spring", "N"), ("jack", "N"), ("D", "N"), ("theta", "rad"))},
    # the full model's other channels (pyomo_lap.vehicle.car.car_equations): axle lateral
    # forces, suspension forces and torques, lateral load transfers
    "Y_1": "N", "Y_2": "N", "tau_4": "N", "tau_5": "N m", "tau_6": "N m",
    "delta_F1": "N", "delta_F2": "N",
    # the contact patches' outer edges (track limits) and a Fiala tyre's sliding measure
    **{f"patch_{w}": "m" for w in ("11", "12", "21", "22")},
    **{f"upsilon_{w}": "-" for w in ("11", "12", "21", "22")},
    # the single-track model (pyomo_lap.ocp.single_track): axle loads and forces, Fiala tyres
    "f_1z": "N", "f_2z": "N", "f_1x": "N", "f_2x": "N", "f_1y": "N", "f_2y": "N",
    "C_1": "N/rad", "C_2": "N/rad", "D_1": "N", "D_2": "N", "upsilon_1": "-", "upsilon_2": "-",
}
"""Unit of every channel of :func:`pyomo_lap.results.table.trajectory_dataframe` (SI; ``-``:
dimensionless). Re-exported as :data:`pyomo_lap.results.table.UNITS`; its order is the column
order of the full model's table."""

WHEEL_WORDS = {"11": "front-left", "12": "front-right", "21": "rear-left", "22": "rear-right"}
"""Wheel ``ij`` in words: axle ``i`` (1 front, 2 rear), side ``j`` (1 left, 2 right)."""
AXLE_WORDS = {"1": "front axle", "2": "rear axle"}
"""Axle ``i`` in words."""

COLUMNS = ("name", "unit", "meaning", "sign", "source", "wheel")
"""Columns of :func:`channel_table`."""


@dataclasses.dataclass(frozen=True)
class Channel:
    """One column of the trajectory table.

    Attributes
    ----------
    name : str
        Column name (``trajectory.parquet``; ``trajectory.csv`` adds `` [unit]``).
    unit : str
        Its unit, from :data:`UNITS`.
    meaning : str
        What it is, one sentence.
    sign : str
        Its sign convention ("" where there is none to state).
    source : str
        The paper's equation or section ("paper eq (33a)"), or the code that computes it.
    wheel : str
        ``"front-left"`` ... for the channels of one wheel, ``"front axle"`` / ``"rear axle"``
        for those of one axle, else "".
    """

    name: str
    unit: str
    meaning: str
    sign: str = ""
    source: str = ""
    wheel: str = ""

    def note(self) -> str:
        """The entry as one paragraph (the comment on a header of the workbook's
        ``channels`` sheet): ``name [unit] (wheel): meaning Sign: ... Source: ...``."""
        head = f"{self.name} [{self.unit}]" + (f" ({self.wheel})" if self.wheel else "")
        text = f"{head}: {self.meaning}"
        if self.sign:
            text += f" Sign: {self.sign}."
        if self.source:
            text += f" Source: {self.source}."
        return text


class _Each(NamedTuple):
    """Records written once for every wheel, axle, joint or axis of :data:`_EACH`: their
    fields are :class:`string.Template` strings (``$w``/``$where``, ``$i``/``$axle``, ``$k``,
    ``$ax``), filled in that order (all templates of the group for the first wheel, then the
    second ...)."""

    over: str
    templates: tuple


_EACH = {
    "wheel": tuple({"w": w, "where": where} for w, where in WHEEL_WORDS.items()),
    "axle": tuple({"i": i, "axle": axle} for i, axle in AXLE_WORDS.items()),
    "joint": tuple({"k": str(k)} for k in range(1, 7)),
    "axis": tuple({"ax": ax} for ax in "xyz"),
}
"""What an :class:`_Each` group runs over, and the names its templates may use."""

_SRC_LOGGER = "not in the paper: results/logger.py add_logger_channels"
_SRC_RATE = "not in the paper: control_form 'state' (ocp/record_model.py record_table)"
_O3_ACC = ("Acceleration of O3 in {B3} without gravity (the kinematic acceleration v_dot + "
           "omega x v of the ABA's body acceleration minus the fictitious gravity of eq (23a); 0 "
           "standing on flat ground)")
_SRC_O3_ACC = "not in the paper: vehicle/car.py o3_acceleration (eq (23a))"
_SRC_MB = "not in the preprint: the multibody car (vehicle/multibody_car.py; journal sec. 4.2.1)"
_SRC_ST = "not in the paper: the single-track model (vehicle/single_track_car.py; seed 004)"
_SLIP_SIGN = "+ gives a lateral force to the left (positive in a left-hand corner)"
_SRC_TRACK_FRAME = "paper eqs (11), (12b)"
_SRC_LOADS = "paper eqs (22a), (24)"
_SRC_ENERGY = "not in the paper: ocp/integrals.py (issue 38, docs/energy.md)"
_SRC_HYBRID = "not in the paper: ocp/hybrid.py (issue 38, docs/energy.md)"

_RECORDS = (
    # ---- where and when
    ("s", "Track coordinate of the point: arc length of the track's centreline from the "
     "track's start.", "", "paper sec. 2.1, eqs (9)-(12) (arc length of the spine C)"),
    ("s_sector", "Distance along the centreline from the sector's start (s minus the "
     "sector's start): the independent variable of the optimal control problem.", "",
     "paper eq (39) (q1, counted from the sector's start)"),
    ("t", "Time since the sector's start, the state t with dt/dq1 = 1/q1_dot.", "",
     "paper eqs (39), (41) (sector time = integral of dq1/q1_dot)"),
    # ---- joint coordinates, rates, accelerations
    ("q1", "The track joint's coordinate: arc length of the centreline at the car's "
     "projection point (equal to s).", "", "paper sec. 2.2, joint 1, eq (12)"),
    ("q2", "The lateral offset of O3 (the road-level point under the VIP) from the "
     "centreline, along the road plane's lateral axis y1.",
     "+ left of the centreline", "paper sec. 2.2, Fig. 2, joint 2 (prismatic along j1)"),
    ("q3", "The yaw of the car relative to the centreline's tangent, about the road normal.",
     "+ counter-clockwise seen from above: nose pointing left of the tangent",
     "paper sec. 2.2, Fig. 2, joint 3 (revolute about k2)"),
    ("q4", "The heave of the sprung body: displacement of the VIP (O4 = O5 = O6) along the "
     "road normal z3; full model: measured from unloaded springs (tau_4 = -k q4 - "
     "c q4_dot), so the static sag m_s g/k (16 mm for the FSAE car) and the downforce "
     "make it negative (about -30 mm at 140 km/h); multibody: measured from the design "
     "ride height (the static equilibrium).",
     "+ up: a negative q4 is the car sitting lower",
     "paper sec. 2.2, joint 4 (prismatic along k3), eq (18c)"),
    ("q5", "The pitch of the sprung body about its lateral axis y4 through the VIP.",
     "+ nose down (braking), - nose up (accelerating)",
     "paper sec. 2.2, joint 5 (revolute about j4), eq (18b)"),
    ("q6", "The roll of the sprung body about its longitudinal axis x5 through the VIP.",
     "+ right side down (a left-hand corner rolls the body to the right)",
     "paper sec. 2.2, joint 6 (revolute about i5), eq (18a)"),
    ("q1_dot", "Rate of the track coordinate: the speed of the car's projection point along "
     "the centreline (differs from speed by the lateral offset, the yaw and the curvature).",
     "> 0 (at least v_min)", "paper eq (39), state vector x (sec. 4)"),
    ("q2_dot", "Rate of the lateral offset q2.", "+ moving to the left",
     "paper eq (39), state vector x (sec. 4)"),
    ("q3_dot", "Rate of the relative yaw q3 (the car's yaw rate minus the track frame's).",
     "+ counter-clockwise seen from above", "paper eq (39), state vector x (sec. 4)"),
    ("q4_dot", "Rate of the heave q4.", "+ moving up", "paper eq (39), state vector x (sec. 4)"),
    ("q5_dot", "Rate of the pitch q5.", "+ pitching nose down",
     "paper eq (39), state vector x (sec. 4)"),
    ("q6_dot", "Rate of the roll q6.", "+ rolling right side down",
     "paper eq (39), state vector x (sec. 4)"),
    _Each("joint", (("q${k}_ddot", "Acceleration of the joint coordinate q$k (time derivative "
                     "of q${k}_dot) from the Articulated-Body Algorithm.", "as q${k}_dot",
                     "paper sec. 3.1.3 (ABA step 3), eq (39)"),)),
    # ---- controls and their rates
    ("f_xa", "Traction force: the total drive force of the rear wheels (rear-wheel drive, "
     "open differential: half on each rear wheel).", ">= 0",
     "paper sec. 4 (control u), eq (34b)"),
    ("f_xb", "Braking force: the total braking force of the four wheels, split front/rear by "
     "the brake ratio k_b.", "<= 0 when braking, 0 otherwise",
     "paper sec. 4 (control u), eq (34)"),
    ("delta", "Road-wheel steer angle of the front wheels.",
     "+ steering to the left (counter-clockwise seen from above)",
     "paper sec. 4 (control u), eqs (31a), (33a)"),
    ("delta_rate", "Time rate of the steer angle, q1_dot d(delta)/dq1 (control_form "
     "'state', the default: the controls are states in q1; at the sector's first point the "
     "rate of the first collocation point).", "+ steering towards the left", _SRC_RATE),
    ("f_xa_rate", "Time rate of the traction force, q1_dot d(f_xa)/dq1 (control_form "
     "'state').", "+ traction increasing", _SRC_RATE),
    ("f_xb_rate", "Time rate of the braking force, q1_dot d(f_xb)/dq1 (control_form "
     "'state').", "+ releasing the brakes (f_xb <= 0 rising towards 0), - braking harder",
     _SRC_RATE),
    # ---- algebraic variables: loads and the tyres' in-plane resultant
    _Each("wheel", (("f_${w}z", "Vertical load of the $where tyre, the road's force on it "
                     "along the road normal; full model: algebraic variable, the four loads "
                     "statically equivalent to the structural wrench (f_3z, m_3x, m_3y) with "
                     "the lateral transfer of eq (30); multibody: the tyre's vertical spring "
                     "and damper, k_t (r0 - zc) - c_t zc_dot.",
                     "+ pushing the car up (> 0 while the wheel touches the road)",
                     "paper eqs (26)-(30), (35), rederived (vehicle/car.py; MODEL_NOTES items "
                     "1-3)", "$where"),)),
    ("f_3x", "Longitudinal resultant of the four tyres' in-plane forces on the car (body 3), "
     "along x3: X1 + X2.", "+ forward (driving), - backwards (braking)", "paper eqs (22b), (36a)"),
    ("f_3y", "Lateral resultant of the four tyres' in-plane forces on the car, along y3: "
     "Y_1 + Y_2.", "+ to the left", "paper eqs (22b), (36b)"),
    ("m_3z", "Yaw moment of the four tyres' in-plane forces about the road normal through "
     "O3, with the term (t1/2)(f_11y - f_12y) sin(delta) that the paper's eq (36c) drops.",
     "+ counter-clockwise seen from above (turning the nose left)",
     "paper eqs (22b), (36c), completed (vehicle/car.py car_equations)"),
    # ---- motion of O3
    ("v_3x", "Velocity of O3 along x3, the car's longitudinal axis in the road plane.",
     "+ forward (kept >= v_min)", "paper twist V_3^3 (ABA step 1); eqs (20), (33)"),
    ("v_3y", "Velocity of O3 along y3: the lateral (sideslip) velocity at O3.",
     "+ to the left (at speed, negative in a left-hand corner)",
     "paper twist V_3^3 (ABA step 1); eq (33)"),
    ("omega_3z", "Yaw rate of the car's road-plane frame {B3} about the road normal z3.",
     "+ counter-clockwise seen from above (left-hand corner)",
     "paper twist V_3^3 (ABA step 1); eq (33)"),
    ("speed", "Speed of O3, sqrt(v_3x^2 + v_3y^2) (not q1_dot, the rate along the "
     "centreline).", ">= 0", "not in the paper: results/table.py"),
    ("speed_kmh", "Speed of O3 in km/h, 3.6 speed.", ">= 0", "not in the paper: results/table.py"),
    ("a_x", f"{_O3_ACC}, along x3.", "+ forward (speeding up on a straight), - braking",
     _SRC_O3_ACC),
    ("a_y", f"{_O3_ACC}, along y3.", "+ to the left (the centripetal acceleration of a "
     "left-hand corner)", _SRC_O3_ACC),
    ("a_z", f"{_O3_ACC}, along the road normal z3.", "+ up (negative over a crest, positive "
     "in a compression)", _SRC_O3_ACC),
    ("a_t", "Tangential acceleration of O3: the component of (a_x, a_y) along the velocity of "
     "O3, (v_3x a_x + v_3y a_y)/speed, the rate of change of speed.",
     "+ speeding up, - slowing down", "not in the paper: results/table.py tangential_acceleration"),
    # ---- logger channels (results/logger.py)
    ("throttle", "Throttle: the drive force as a share of the drive force the powertrain can "
     "give at that speed, 100 f_xa v_3x / P(v_3x), P the power limit's power at the driven "
     "wheels (P_max, the [power_curve] or the [engine]'s best-gear envelope: "
     "vehicle/powertrain.py power_available); 100 where the power limit is reached, a "
     "traction-limited start reads less.", "0 to 100", _SRC_LOGGER),
    ("brake", "Brake: the friction brakes' force as a share of the four tyres' longitudinal "
     "friction limit at their present loads, 100 (-f_xb - power_harvest/v_3x) / ((mu_x0/mu_y0) "
     "(D_11 + D_12 + D_21 + D_22)) (single-track: D_1 + D_2; without D: mu_x0 times the sum of "
     "the loads); the braking force f_xb less what a hybrid's generator takes (the channel "
     "harvest); the brake balance k_b locks one axle first, so the hardest braking reads "
     "below 100.", "0 to 100", _SRC_LOGGER),
    ("harvest", "Harvest (a car with [hybrid]): the braking force of the rear axle's "
     "generator, power_harvest / v_3x, as a share of the same friction limit as brake; "
     "brake + harvest is the share of the whole braking force -f_xb.", "0 to 100",
     _SRC_LOGGER),
    ("steering_wheel_angle", "Steering-wheel angle: the road-wheel angle delta times the "
     "car's [steering] steering_ratio, in degrees (absent for a car without a "
     "steering_ratio).", "+ steering to the left", _SRC_LOGGER),
    ("gear", "Gear of the powertrain model at the speed v_3x: the gear of the largest drive "
     "force, the one the power limit's envelope uses (1 = first; NaN above the top gear's "
     "rev limit; absent for a car without [engine]).", "1 .. number of gears",
     "not in the paper: vehicle/powertrain.py gear_and_engine_speed"),
    ("engine_speed", "Engine speed in that gear, gear_ratio final_drive v_3x / wheel_radius, "
     "at least the torque curve's lowest speed (the clutch slips below it), in rpm (the car "
     "file's [engine] speed is in rad/s).", ">= 0",
     "not in the paper: vehicle/powertrain.py gear_and_engine_speed"),
    ("yaw_rate", "Yaw rate omega_3z in deg/s (180/pi omega_3z).",
     "+ counter-clockwise seen from above (left-hand corner)", _SRC_LOGGER),
    _Each("axis", (("a_${ax}_g", "Acceleration a_$ax in g: a_$ax divided by the car's gravity "
                    "(without gravity, as a_$ax: a logger's accelerometer on level ground reads "
                    "a_z_g + 1 vertically).", "as a_$ax", _SRC_LOGGER),)),
    # ---- tyres
    ("alpha_1", "Slip angle of the front tyres (both the same), delta - (v_3y + a1 "
     "omega_3z)/v_3x (small-angle form; single-track model: with arctan).", _SLIP_SIGN,
     "paper eq (33a)", AXLE_WORDS["1"]),
    ("alpha_2", "Slip angle of the rear tyres (both the same), (a2 omega_3z - v_3y)/v_3x "
     "(small-angle form; single-track model: with arctan).", _SLIP_SIGN,
     "paper eq (33b)", AXLE_WORDS["2"]),
    ("f_11x", "Longitudinal force of the front-left tyre in the wheel's plane (the front "
     "wheels are steered by delta), (k_b f_xb + k_d f_xa)/2 (k_d the drive split drive_ratio; 0, rear-wheel drive: the front wheels only brake).",
     "+ forward (driving), - braking", "paper eq (34a)", WHEEL_WORDS["11"]),
    ("f_12x", "Longitudinal force of the front-right tyre in the wheel's plane (the front "
     "wheels are steered by delta), (k_b f_xb + k_d f_xa)/2 (k_d the drive split drive_ratio; 0, rear-wheel drive: the front wheels only brake).",
     "+ forward (driving), - braking", "paper eq (34a)", WHEEL_WORDS["12"]),
    ("f_21x", "Longitudinal force of the rear-left tyre in the wheel's plane (the front "
     "wheels are steered by delta), ((1 - k_b) f_xb + (1 - k_d) f_xa)/2.",
     "+ forward (driving), - braking", "paper eq (34b)", WHEEL_WORDS["21"]),
    ("f_22x", "Longitudinal force of the rear-right tyre in the wheel's plane (the front "
     "wheels are steered by delta), ((1 - k_b) f_xb + (1 - k_d) f_xa)/2.",
     "+ forward (driving), - braking", "paper eq (34b)", WHEEL_WORDS["22"]),
    _Each("wheel", (("f_${w}y", "Lateral force of the $where tyre, perpendicular to the "
                     "wheel's plane in the road plane: the Magic Formula D sin(theta) of its "
                     "slip angle and load.", "+ to the left (the sign of the slip angle)",
                     "paper eq (32)", "$where"),)),
    # ---- structural wrench, aerodynamics, power
    ("f_3z", "Normal force of the road on the car at O3, the z component of the structural "
     "wrench W3J in {B3} (weight, inertia and downforce carried by the road; the sum of the "
     "vertical loads).", "+ up (about m g + downforce on a flat road)", _SRC_LOADS),
    ("m_3x", "Moment about x3 through O3 of the road's normal forces, the x component of W3J: "
     "the sum of f_ijz y_ij with the left wheels at y = +t_i/2.",
     "+ when the left wheels carry more load than the right ones (a right-hand corner), "
     "- in a left-hand corner", _SRC_LOADS),
    ("m_3y", "Moment about y3 through O3 of the road's normal forces, the y component of W3J: "
     "minus the sum of f_ijz x_ij with the front wheels at x = a1, the rear at -a2.",
     "+ load shifted to the rear axle (accelerating, rear downforce), - to the front "
     "(braking)", _SRC_LOADS),
    ("f_drag", "Aerodynamic drag, -rho S C_x v_3x^2/2, along x3 (applied to the sprung body).",
     "<= 0 (pointing backwards)", "paper eq (20)"),
    ("f_down", "Aerodynamic downforce, -rho S (C_z1 + C_z2) v_3x^2/2, along the road normal "
     "z3 (applied to the sprung body).",
     "<= 0: pointing down (its magnitude is the downforce)", "paper eq (20)"),
    ("power", "Traction power f_xa v_3x, bounded by P_max.", ">= 0",
     "paper sec. 4.1 (power limit)"),
    ("power_engine", "Engine power: the traction power over the drivetrain's efficiency "
     "([engine] efficiency; 1 without one); its integral over time is m.energy.engine.", ">= 0",
     _SRC_ENERGY),
    ("power_braking", "Power taken by the brakes, -f_xb v_3x; its integral is m.energy.braking.",
     ">= 0", _SRC_ENERGY),
    ("power_drag", "Power against the drag, -f_drag v_3x; its integral is m.energy.drag.",
     ">= 0", _SRC_ENERGY),
    *((f"power_tyre_{t}", f"Power dissipated by the {where} tyre: its lateral force times its "
       f"slip velocity, f_{w}y alpha_{w[0]} v_3x (no longitudinal slip in the model); its "
       f"integral is m.energy.tyre_{t}.", ">= 0 (at or below the tyre's peak)", _SRC_ENERGY)
      for t, w, where in (("fl", "11", "front-left"), ("fr", "12", "front-right"),
                          ("rl", "21", "rear-left"), ("rr", "22", "rear-right"))),
    ("power_deploy", "Hybrid: power the motor-generator deploys at the driven wheels, "
     "m.hybrid.deploy_power (a car with [hybrid] only); the traction row is f_xa v_3x <= "
     "P(v_3x) + power_deploy.", "0 to [hybrid] deploy_power_max", _SRC_HYBRID),
    ("power_harvest", "Hybrid: power the generator harvests from the rear brakes, "
     "m.hybrid.harvest_power, at most -(1 - brake_ratio) f_xb v_3x (a car with [hybrid] only).",
     "0 to [hybrid] harvest_power_max", _SRC_HYBRID),
    ("soc_energy", "Hybrid: the battery's energy (state of charge), m.hybrid.soc, "
     "dE/dt = harvest_efficiency power_harvest - power_deploy / deploy_efficiency (a car with "
     "[hybrid] only).", "0 to [hybrid] capacity", _SRC_HYBRID),
    ("fuel_flow", "Fuel mass flow at the engine power (a car with [fuel]: power_engine / "
     "(thermal_efficiency lower_heating_value), or its fuel-flow map); its integral over time "
     "is m.energy.fuel.", ">= 0", _SRC_ENERGY),
    # ---- positions, the track
    _Each("axis", (("${ax}_vip", "$ax of the vehicle invariant point (VIP, O4 = O5 = O6: h_vip "
                    "above O3 on the no-roll axis, moved by the heave) in the ground frame {G}.",
                    "{G} of the track data, z up", "paper sec. 2.2 (posture g_{0,6})"),)),
    _Each("axis", (("${ax}_spine", "$ax of the centreline point C(q1) in the ground frame {G}.",
                    "{G} of the track data, z up", "paper eqs (9), (12a)"),)),
    ("width_left", "Distance from the centreline to the track's left edge along y1 (the track "
     "limits bound q2 by it, less half the car's width and the track margin).", ">= 0",
     "not in the paper: track data (track/geometry.py)"),
    ("width_right", "Distance from the centreline to the track's right edge along -y1 (the "
     "track limits bound -q2 by it, less half the car's width and the track margin).", ">= 0",
     "not in the paper: track data (track/geometry.py)"),
    ("Omega_x", "Geodesic torsion of the track: the rotation of the track frame about the "
     "tangent per metre of s (carries the change of banking).",
     "+ right-handed about the tangent (left edge rising relative to the right)",
     _SRC_TRACK_FRAME),
    ("Omega_y", "Minus the normal curvature of the centreline: the rotation of the track "
     "frame about its lateral axis y1 per metre of s.",
     "+ over a crest, - in a dip (compression)", _SRC_TRACK_FRAME),
    ("Omega_z", "Geodesic curvature of the centreline: the rotation of the track frame about "
     "the road normal per metre of s.", "+ left-hand bend, - right-hand bend", _SRC_TRACK_FRAME),
    # ---- checks and references
    ("load_residual_max", "Largest absolute residual of the vertical-load equations at the "
     "point (four wheels; single-track: two axles): a check of the solution, about 0.", ">= 0",
     "paper eq (35), as rederived (results/table.py)"),
    ("element", "Index of the finite element holding the point: 0 for the sector's first "
     "point, then 1..N (a point at an element's end belongs to that element).", "",
     "not in the paper: the pyomo.dae mesh (results/table.py)"),
    ("v_point_mass", "Quasi-steady point-mass speed estimate of the initial guess, the "
     "reference of the time-delta plot.", ">= 0",
     "not in the paper: vehicle/speed_profile.py quasi_steady_speed"),
    ("t_point_mass", "Time of the point-mass estimate from the sector's start (trapezoidal "
     "integral of 1/v_point_mass).", "", "not in the paper: results/table.py"),
    # ---- full model: Magic Formula, axle forces, suspension, load transfer
    _Each("wheel", (("D_$w", "Peak lateral force of the $where tyre at its load, the Magic "
                     "Formula's D = mu_y0 (1 + pD2 (f_z - Fz0)/Fz0) f_z.", "> 0",
                     "paper eq (32)", "$where"),)),
    _Each("wheel", (("theta_$w", "Argument of the sine of the $where tyre's Magic Formula, "
                     "f_y = D sin(theta): the tyre is below its peak while abs(theta) < pi/2 "
                     "(what the 'below-peak' adherence rows keep).",
                     "the sign of the slip angle (+ force to the left)", "paper eq (32)",
                     "$where"),)),
    _Each("wheel", (("upsilon_$w", "Sliding measure of the $where tyre's Fiala law (tyre model "
                     "'fiala'), C_alpha tan(alpha) / (3 D): the tyre slides (its peak) at "
                     "abs(upsilon) = 1.", "the sign of the slip angle",
                     "not in the paper: vehicle/car.py fiala_force (seed 004)", "$where"),)),
    _Each("wheel", (("patch_$w", "Lateral offset from the spine of the outer edge of the "
                     "$where tyre's contact patch, q2 + x_i sin(q3) +- (t_i + tw_i)/2 cos(q3): the "
                     "full model keeps it within the track (rows track_limit).",
                     "+ to the left", "not in the paper: vehicle/car.py contact_patch_offsets",
                     "$where"),)),
    ("Y_1", "Lateral force of the front axle in {B3}: (f_11y + f_12y) cos(delta) + (f_11x + "
     "f_12x) sin(delta) (single-track: f_1y cos(delta) + f_1x sin(delta)).", "+ to the left",
     "paper eq (31a)", AXLE_WORDS["1"]),
    ("Y_2", "Lateral force of the rear axle in {B3}: f_21y + f_22y (single-track: f_2y).",
     "+ to the left", "paper eq (31b)", AXLE_WORDS["2"]),
    ("tau_4", "Force of the suspension's heave spring and damper on joint 4, -k q4 - c q4_dot "
     "(k, c: the sum of the four wheel rates).",
     "+ pushing the sprung body up (positive while the springs are compressed, q4 < 0)",
     "paper eqs (18c), (19c)"),
    ("tau_5", "Pitch torque of the suspension's springs and dampers on joint 5, -k_theta q5 - "
     "c_theta q5_dot.", "+ in the nose-down direction (positive when the body is pitched "
     "nose up, q5 < 0)", "paper eqs (18b), (19b)"),
    ("tau_6", "Roll torque of the suspension's springs and dampers on joint 6, -k_phi q6 - "
     "c_phi q6_dot.", "+ in the right-side-down direction (positive when the body is rolled "
     "right side up, q6 < 0)", "paper eqs (18a), (19a)"),
    _Each("axle", (("delta_F$i", "Lateral load transfer of the $axle, eq (30): f_${i}2z = "
                    "F_$i/2 + delta_F$i, f_${i}1z = F_$i/2 - delta_F$i (F_$i the axle's load).",
                    "+ load moved to the right wheel (a left-hand corner), - to the left wheel",
                    "paper eq (30); the loads rederived (vehicle/car.py)", "$axle"),)),
    # ---- multibody car
    _Each("wheel", (
        ("z$w", "Travel of the $where wheel carrier along the chassis' z axis, from the "
         "design ride height.", "+ up relative to the chassis (bump, spring compressed), - "
         "rebound", _SRC_MB, "$where"),
        ("z${w}_dot", "Rate of the $where wheel carrier's travel z$w.",
         "+ moving up relative to the chassis", _SRC_MB, "$where"),
        ("z${w}_ddot", "Acceleration of the $where wheel carrier's travel z$w, from the "
         "ABA of the ten-joint tree.", "+ up relative to the chassis", _SRC_MB, "$where"))),
    _Each("wheel", (("zc_$w", "Height of the $where wheel centre above the road plane {B3} "
                     "(the tyre's loaded radius; the load is k_t (r0 - zc) - c_t zc_dot).",
                     "+ above the road (smaller: tyre more compressed)", _SRC_MB, "$where"),)),
    _Each("wheel", (("spring_$w", "Force of the $where suspension spring and damper on the "
                     "wheel carrier along the chassis' z axis, -(P_i + k_i z$w + c_i "
                     "z${w}_dot) with the static preload P_i.", "+ up on the carrier: "
                     "normally negative (the compressed spring pushes the wheel down and the "
                     "chassis up)", _SRC_MB, "$where"),)),
    _Each("wheel", (("jack_$w", "Jacking force of the $where suspension linkage on the wheel "
                     "carrier along the chassis' z axis, F_y h_qi/y_ij + F_x h_vip/x_ij (F: "
                     "the tyre's in-plane force in {B3}): the no-roll centre at h_qi, the "
                     "pitch centre at the VIP.", "+ up on the carrier (in a left-hand corner "
                     "positive on the left wheels, negative on the right)", _SRC_MB,
                     "$where"),)),
    # ---- single-track model
    ("f_1z", "Vertical load of the front axle (both wheels), statically equivalent with the "
     "other axle's to W3J: (a2 f_3z - m_3y)/l (no lateral load transfer).",
     "+ pushing the car up (> 0)", _SRC_ST, AXLE_WORDS["1"]),
    ("f_2z", "Vertical load of the rear axle (both wheels), statically equivalent with the "
     "other axle's to W3J: (a1 f_3z + m_3y)/l (no lateral load transfer).",
     "+ pushing the car up (> 0)", _SRC_ST, AXLE_WORDS["2"]),
    ("f_1x", "Longitudinal force of the front axle in the wheel's plane, k_b f_xb (the front "
     "wheels only brake).", "+ forward (driving), - braking",
     _SRC_ST + ", eq (34) summed over the axle", AXLE_WORDS["1"]),
    ("f_2x", "Longitudinal force of the rear axle in the wheel's plane, (1 - k_b) f_xb + f_xa.",
     "+ forward (driving), - braking", _SRC_ST + ", eq (34) summed over the axle",
     AXLE_WORDS["2"]),
    _Each("axle", (("f_${i}y", "Lateral force of the $axle, perpendicular to the wheel's plane: "
                    "the Fiala force D_$i (3 u - 3 u abs(u) + u^3) with u = upsilon_$i.",
                    "+ to the left (the sign of the slip angle)", _SRC_ST, "$axle"),)),
    _Each("axle", (("C_$i", "Cornering stiffness of the $axle: twice the full model's tyre "
                    "stiffness at half the axle load, 2 C_alpha(f_${i}z/2).", "> 0",
                    _SRC_ST + ", with eq (32)'s data", "$axle"),)),
    _Each("axle", (("D_$i", "Peak lateral force of the $axle: twice the Magic Formula's D at "
                    "half the axle load, 2 D(f_${i}z/2).", "> 0",
                    _SRC_ST + ", with eq (32)'s data", "$axle"),)),
    _Each("axle", (("upsilon_$i", "Sliding measure of the $axle's Fiala tyre, C_$i "
                    "tan(alpha_$i)/(3 D_$i): the tyre slides at abs(upsilon) = 1, which the "
                    "model's constraint keeps it within.", "the sign of the slip angle",
                    _SRC_ST, "$axle"),)),
)
"""The entries, in the order of the tables: ``(name, meaning, sign, source[, wheel])`` as the
fields of :class:`Channel` (its unit from :data:`UNITS`), and :class:`_Each` groups of such
records written once for every wheel, axle, joint or axis."""


def _expand(records) -> list:
    """The records of :data:`_RECORDS` with every :class:`_Each` group written out."""
    out = []
    for rec in records:
        if isinstance(rec, _Each):
            out += [tuple(string.Template(f).substitute(subs) for f in t)
                    for subs in _EACH[rec.over] for t in rec.templates]
        else:
            out.append(rec)
    return out


CHANNELS = {r[0]: Channel(r[0], UNITS[r[0]], *r[1:]) for r in _expand(_RECORDS)}
"""``name -> Channel`` for every column of every model's trajectory table, in the order of
:func:`channel_table`."""


def describe(name: str) -> Channel:
    """The entry of one column.

    Parameters
    ----------
    name : str
        A column name (``"q4"``), also as a ``trajectory.csv`` header with its unit
        (``"q4 [m]"``).

    Returns
    -------
    Channel

    Raises
    ------
    KeyError
        No column has that name; the message names it and suggests close names.
    """
    key = str(name).strip()
    if key not in CHANNELS and key.endswith("]") and " [" in key:
        key = key.rsplit(" [", 1)[0]
    hit = CHANNELS.get(key)
    if hit is not None:
        return hit
    same_case = [n for n in CHANNELS if n.lower() == key.lower()]
    close = same_case + [n for n in difflib.get_close_matches(key, list(CHANNELS), n=4, cutoff=0.6)
                         if n not in same_case]
    hint = (f"; did you mean {', '.join(close[:4])}?" if close
            else "; `pyomo-lap channels` lists every column")
    raise KeyError(f"unknown channel {str(name)!r}: no column of the trajectory table has that "
                   f"name{hint}")


def _entries(columns: Optional[Iterable[str]]) -> list:
    return list(CHANNELS.values()) if columns is None else [describe(c) for c in columns]


def channel_table(columns: Optional[Iterable[str]] = None):
    """The dictionary as a table.

    Parameters
    ----------
    columns : iterable of str, optional
        Column names (e.g. ``df.columns`` of a trajectory table), in the order wanted;
        None: every entry.

    Returns
    -------
    pandas.DataFrame
        One row per channel, columns ``name, unit, meaning, sign, source, wheel``.

    Raises
    ------
    KeyError
        A name without an entry (:func:`describe`).
    """
    rows = [dataclasses.astuple(ch) for ch in _entries(columns)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def channel_markdown(columns: Optional[Iterable[str]] = None) -> str:
    """The dictionary as a Markdown table (``docs/channels.md`` holds the whole one;
    ``pyomo-lap channels --markdown``), ending with a newline.

    Parameters
    ----------
    columns : iterable of str, optional
        As :func:`channel_table`.
    """
    def cell(text):
        return " ".join(str(text).split()).replace("|", "\\|")

    rows = ["| channel | unit | meaning | sign | source | wheel |", "|---|---|---|---|---|---|"]
    for ch in _entries(columns):
        rows.append(f"| `{ch.name}` | {cell(ch.unit)} | {cell(ch.meaning)} | {cell(ch.sign)} | "
                    f"{cell(ch.source)} | {cell(ch.wheel)} |")
    return "\n".join(rows) + "\n"


def channel_text(columns: Optional[Iterable[str]] = None, width: int = 100) -> str:
    """The dictionary as an aligned text table for the terminal (``pyomo-lap channels``):
    columns channel, unit, wheel, then the meaning, the sign and the source wrapped in the
    last column.

    Parameters
    ----------
    columns : iterable of str, optional
        As :func:`channel_table`.
    width : int
        Line width [characters] (the last column gets at least 40).

    Returns
    -------
    str
        Ending with a newline.
    """
    entries = _entries(columns)
    heads = ("channel", "unit", "wheel")
    w = [max([len(h)] + [len(getattr(ch, a)) for ch in entries])
         for h, a in zip(heads, ("name", "unit", "wheel"))]
    indent = sum(w) + 2 * len(w)
    text_width = max(40, width - indent)
    lines = ["  ".join(h.ljust(n) for h, n in zip(heads + ("description",), w + [0])).rstrip(),
             "  ".join("-" * n for n in w + [text_width])]
    for ch in entries:
        body = textwrap.wrap(ch.meaning, text_width)
        if ch.sign:
            body += textwrap.wrap(f"sign: {ch.sign}", text_width, subsequent_indent="  ")
        if ch.source:
            body += textwrap.wrap(f"source: {ch.source}", text_width, subsequent_indent="  ")
        first = "  ".join(v.ljust(n) for v, n in zip((ch.name, ch.unit, ch.wheel), w))
        lines.append(f"{first}  {body[0]}")
        lines += [" " * indent + b for b in body[1:]]
    return "\n".join(line.rstrip() for line in lines) + "\n"
