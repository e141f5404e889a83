r"""Vehicle parameters and the car's equations: suspension, aerodynamics, tyres, loads.

The tyres' lateral forces are the car's tyre model of :mod:`pyomo_lap.vehicle.tyres` (its
registry ``TYRE_MODELS``, :func:`~pyomo_lap.vehicle.tyres.tyre_forces`).

Everything here evaluates on floats, Pyomo expressions or CasADi symbols (see
:mod:`pyomo_lap.spatial.backend`). Equation numbers refer to Bartali et al., *A Lie group-based race
car model ...* (preprint ``000``).

Vertical loads (eqs 26-30, rederived)
-------------------------------------
The printed eqs (26)-(29) add the longitudinal transfer to all four wheels and count the
downforce twice (MODEL_NOTES, inconsistencies 1-2). Here the four loads are built so that they
are *statically equivalent* to the structural wrench :math:`W_{3J}^3 = [\cdot,\cdot,f_{3z},
m_{3x}, m_{3y},\cdot]` of eq (24), which already contains gravity, inertia and the
aerodynamic wrench, with contact points at :math:`x = a_1, -a_2`, :math:`y = \pm t_i/2`:

.. math::

    F_1 = \frac{a_2 f_{3z} - m_{3y}}{l},\quad F_2 = \frac{a_1 f_{3z} + m_{3y}}{l},\quad
    \Delta F_i = \frac{1}{t_i}\Big[\frac{k_{\phi i}}{k_\phi}\big(-m_{3x} - Y_1 h_{q1}
    - Y_2 h_{q2}\big) + Y_i h_{qi}\Big],

    f_{i1z} = F_i/2 - \Delta F_i \ (\text{left}),\qquad f_{i2z} = F_i/2 + \Delta F_i\ (\text{right}).

:math:`\Delta F_i` is Guiggiani's lateral load transfer of eq (30) (the split between axles by
roll stiffness and no-roll-centre heights); summed over the axles it gives back
:math:`m_{3x}`. So :math:`\sum f_{ijz} = f_{3z}`, :math:`\sum f_{ijz} y_{ij} = m_{3x}`,
:math:`-\sum f_{ijz} x_{ij} = m_{3y}` hold exactly.

The structural wrench is taken as :math:`[0,0,f_{3z},m_{3x},m_{3y},0]` (eq 22a): on a track
with :math:`\Omega_x, \Omega_y \neq 0` the constraint wrench of joints 1-3 also has small
in-plane parts, which the paper neglects and so does this model (MODEL_NOTES, item 4).
"""
from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..spatial import lie
from ..spatial.backend import add, cos, mul, sin, sub, total
from ..spatial.dynamics import hybrid_dynamics
from ..spatial.tree import (
    PRISMATIC,
    REVOLUTE,
    TRACK,
    KinematicTree,
    TrackJoint,
    forward_kinematics,
)
from ..util.paths import models_dir as _models_dir
from .files import VehicleFileError, read_vehicle_file
from .racecar import RACECAR_MODEL_NAMES, read_racecar_file
from .schema import SymbolicVehicle, VehicleParameters
from .tyres import cornering_stiffness, peak_force, tyre_forces, tyre_model_of

__all__ = ["VehicleParameters", "VehicleFileError", "load_vehicle", "vehicle_file_model", "available_vehicles", "models_dir",
           "CarEquations", "car_equations", "contact_patch_offsets",
           "longitudinal_forces", "force_scale", "speed_scale", "slip_scale", "car_scales",
           "SPEED_CAP_MPS", "top_speed", "grip_force",
           "build_chain", "chain_parts", "chain_namer", "kinematic_tree", "UNSPRUNG", "SPRUNG", "aero_forces",
           "ALGEBRAIC", "CONTROLS", "solve_loop", "solve_algebraic", "o3_acceleration"]

ALGEBRAIC = ("f_11z", "f_12z", "f_21z", "f_22z", "f_3x", "f_3y", "m_3z")
"""Names of the seven algebraic variables z of sec. 4 (N, N, N, N, N, N, N m)."""
CONTROLS = ("f_xa", "f_xb", "delta")
"""Names of the controls u of sec. 4: traction force [N] >= 0, braking force [N] <= 0,
road-wheel steer angle [rad]."""
UNSPRUNG = 2
"""Index in :func:`build_chain` of the unsprung body, the preprint's body 3 (frame {B3}: the
road plane at road level under the VIP)."""
SPRUNG = 5
"""Index in :func:`build_chain` of the sprung body, the preprint's body 6."""


def models_dir() -> Path:
    """Folder holding the bundled vehicle files: the checkout's ``models/`` or, after
    ``pip install .``, its installed copy (:func:`pyomo_lap.util.paths.models_dir`)."""
    return _models_dir()


def available_vehicles() -> list:
    """Names of the vehicle files shipped in :func:`models_dir`."""
    return sorted(p.stem for p in models_dir().glob("*.toml"))


def load_vehicle(name_or_path) -> VehicleParameters:
    """Read a vehicle file (TOML, the layout of ``models/fsae.toml``), validated by the
    schema of :mod:`pyomo_lap.vehicle.schema`; a file whose top-level ``model`` names the
    vehicle model ``"racecar"`` (``models/dymos_racecar.toml``) is read by
    :func:`pyomo_lap.vehicle.racecar.read_racecar_file` instead
    (:func:`vehicle_file_model`).

    Parameters
    ----------
    name_or_path : str or Path
        A name from :func:`available_vehicles` or a path to a ``.toml`` file.

    Returns
    -------
    VehicleParameters (or RacecarParameters for a racecar file)

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones).
    VehicleFileError (a ValueError)
        A missing file, invalid TOML, a missing or unknown section or key, a value that is not
        a finite number, out of its range or inconsistent with another value; every problem
        is listed, naming the file, the ``[section] key``, the value and what was expected.
    """
    path = Path(name_or_path)
    if path.suffix.lower() != ".toml":
        path = models_dir() / f"{name_or_path}.toml"
        if not path.exists():
            raise ValueError(f"unknown vehicle {str(name_or_path)!r}: known vehicles are "
                             f"{', '.join(available_vehicles()) or '(none)'} "
                             "(or give the path to a .toml file)")
    if vehicle_file_model(path) in RACECAR_MODEL_NAMES:   # the file names its vehicle model
        return read_racecar_file(path)
    return read_vehicle_file(path)


def vehicle_file_model(vehicle):
    """The vehicle model a car is for: a vehicle file's top-level ``model = "..."`` (by name
    or path, as :func:`load_vehicle` takes it) or a parameters object's ``model`` attribute;
    None when it names none (the files of the built-in cars: any of the models ``full``,
    ``single-track``, ``multibody``) or the file cannot be read (:func:`load_vehicle` then
    says why)."""
    if not isinstance(vehicle, (str, Path)):
        return getattr(vehicle, "model", None)
    path = Path(vehicle)
    if path.suffix.lower() != ".toml":
        path = models_dir() / f"{vehicle}.toml"
    try:
        model = tomllib.loads(path.read_text(encoding="utf-8")).get("model")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None     # (the vehicle file's reader says what is wrong)
    return model if isinstance(model, str) else None


def build_chain(p: VehicleParameters) -> KinematicTree:
    r"""The six-joint chain of the car (sec. 2.2) as a kinematic tree.

    Body ``k - 1`` is the preprint's body ``k``:

    ====  ======================  ===================  =======================================
    body  joint                   coordinate           placement, mass
    ====  ======================  ===================  =======================================
    0     track (eq 12)           ``q1``, arc length   massless
    1     prismatic along y       ``q2``, + left       massless
    2     revolute about z        ``q3``, yaw          unsprung mass at wheel-centre height
    3     prismatic along z       ``q4``, heave        at the VIP height ``h_vip``; massless
    4     revolute about y        ``q5``, pitch        massless
    5     revolute about x        ``q6``, roll         sprung mass, G6 at ``h`` above the road
                                                       at zero heave
    ====  ======================  ===================  =======================================

    For a :class:`~pyomo_lap.vehicle.schema.SymbolicVehicle` the tree of its numbers with
    its symbols (:func:`kinematic_tree`).

    Parameters
    ----------
    p : VehicleParameters or SymbolicVehicle
        Or an object with their fields and derived quantities (``h_vip``, ``m_s``, ``m_u``,
        ``unsprung_inertia``, ``wheel_radius``, ``h``, ``Ixx``, ``Iyy``, ``Izz``,
        ``gravity``).

    Returns
    -------
    KinematicTree

    Raises
    ------
    ValueError
        If an inertia is not that of a rigid body (:class:`~pyomo_lap.spatial.tree.KinematicTree`).
    """
    return kinematic_tree(p, chain_parts)


def kinematic_tree(p, parts: Callable[..., dict]) -> KinematicTree:
    """The :class:`~pyomo_lap.spatial.tree.KinematicTree` of the fields ``parts(p)`` (its
    arguments but the gravity, as a dict) and the car's gravity (``-p.gravity`` along z) for
    the car ``p``; for a
    :class:`~pyomo_lap.vehicle.schema.SymbolicVehicle` (the car's parameters as symbols of a
    recording) the tree of its numbers, checked, with the placements, inertias and gravity of
    the symbols (:meth:`pyomo_lap.spatial.tree.KinematicTree.with_symbols`). What the full,
    single-track and multibody cars' trees share (:func:`build_chain`,
    :func:`pyomo_lap.vehicle.single_track_car.build_chain`,
    :func:`pyomo_lap.vehicle.multibody_car.build_tree`).

    Raises
    ------
    ValueError
        As :class:`~pyomo_lap.spatial.tree.KinematicTree`, checked on the numbers.
    """
    if isinstance(p, SymbolicVehicle):
        sym = parts(p)
        return kinematic_tree(p.numbers, parts).with_symbols(sym["placement"], sym["inertia"],
                                                             (0.0, 0.0, -p.gravity))
    return KinematicTree(**parts(p), gravity=(0.0, 0.0, -p.gravity))


def chain_parts(p, unsprung: bool = True) -> dict:
    """The fields of :func:`build_chain`'s tree for the car ``p`` (numbers or symbols): the
    arguments of :class:`~pyomo_lap.spatial.tree.KinematicTree` but the gravity, as a dict
    (:func:`kinematic_tree` adds it). Without
    ``unsprung`` the unsprung body is massless (the chassis of the multibody car,
    :func:`pyomo_lap.vehicle.multibody_car.build_tree`)."""
    eye = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    origin = (0.0, 0.0, 0.0)

    def body(mass, height, moments):
        Ixx, Iyy, Izz = moments
        return lie.spatial_inertia(mass, [0.0, 0.0, height],
                                   [[Ixx, 0.0, 0.0], [0.0, Iyy, 0.0], [0.0, 0.0, Izz]])
    inertia = [None] * 6
    inertia[SPRUNG] = body(p.m_s, p.h - p.h_vip, (p.Ixx, p.Iyy, p.Izz))
    if unsprung:
        inertia[UNSPRUNG] = body(p.m_u, p.wheel_radius, p.unsprung_inertia)
    place = [(eye, origin)] * 6
    place[3] = (eye, (0.0, 0.0, p.h_vip))
    return dict(parent=[-1, 0, 1, 2, 3, 4],
                joint_type=[TRACK, PRISMATIC, REVOLUTE, PRISMATIC, REVOLUTE, REVOLUTE],
                axis=[None, (0, 1, 0), (0, 0, 1), (0, 0, 1), (0, 1, 0), (1, 0, 0)],
                placement=place, inertia=inertia,
                names=["track", "lateral", "yaw", "heave", "pitch", "chassis"])


_TREE_TAG = re.compile(r"([A-Za-z]+?)(\d+)(_\d+)?")


def chain_namer(namer: Optional[Callable]) -> Callable:
    """A ``namer`` for the tree's algorithms on :func:`build_chain` (or the single-track
    car's three bodies) that names the tree's intermediates with the preprint's numbering of
    the chain (bodies and joints from 1): the tree's ``V{i}_{k}``, ``a{i}_{k}``, ``IA{i}_{jk}``,
    ``pA{i}_{k}``, ``U{i}_{k}``, ``Dinv{i}``, ``u{i}``, ``c{i}_{k}`` and ``qdd{k}`` become
    ``V{i+1}_{k}`` ... ``qdd{k+1}`` (twists from body 3 on, accelerations from body 2 on, as
    the chain's ABA named them), the joint wrench ``F{2}_{k}`` of the unsprung body is the
    structural wrench ``W3J_{k}`` of eq (24); the other joint wrenches and the body
    accelerations stay unnamed (all of them for ``namer=None``).

    Every articulated-body quantity stays a named ``Expression`` in the Pyomo model, as the
    chain's ABA had them: unnamed, the nested inertias of each level are written out into the
    next, and walks over the expressions that do not share subexpressions (IDAES's check of
    evaluation errors, Pyomo's ``value``) grow with the depth (``pyomo-lap diagnose`` of a 7-point
    sector: 3 s named, over 2 minutes unnamed)."""
    def name(tag, value):
        m = _TREE_TAG.fullmatch(tag)
        if namer is None or m is None:
            return value
        kind, i, k = m.group(1), int(m.group(2)), m.group(3) or ""
        if kind == "F":
            return namer(f"W3J{k}", value) if i == UNSPRUNG else value
        if kind in ("Vd", "tau") or (kind == "V" and i < 2) or (kind == "a" and i < 1):
            return value     # (the twists of bodies 1-2 are body 3's before the yaw: one name)
        return namer(f"{kind}{i + 1}{k}", value)
    return name


SPEED_CAP_MPS = 150.0
"""The top speed of :func:`speed_scale` is at most this [m/s] (a car without drag has none)."""


def top_speed(power: float, drag: float) -> float:
    r"""Where a power ``power`` [W] equals the drag :math:`D v^2` (``drag`` = :math:`D`
    [N s^2/m^2]): :math:`v = (P/D)^{1/3}`, at most :data:`SPEED_CAP_MPS` [m/s] (every car's
    speed scale: :func:`speed_scale`, the racecar's)."""
    return min(SPEED_CAP_MPS, (power / drag) ** (1.0 / 3.0)) if drag > 0 else SPEED_CAP_MPS


def grip_force(mu: float, weight: float, lift: float, speed: float) -> float:
    r"""The largest tyre force of a car [N]: :math:`\mu\,(W + L v^2)`, its friction
    coefficient ``mu`` [-] times its weight ``weight`` [N] and its downforce at ``speed``
    [m/s] (``lift`` = :math:`L` [N s^2/m^2]) (every car's force scale: :func:`force_scale`, the
    racecar's)."""
    return mu * (weight + lift * speed ** 2)


def speed_scale(p) -> float:
    r"""The car's top speed, the scale of its speeds [m/s]: where the power ``P_max`` equals
    the drag, :math:`v_{top} = (P_{max}/(\tfrac12\rho S C_x))^{1/3}`, at most
    :data:`SPEED_CAP_MPS` (:func:`top_speed`). FSAE car 40.9 m/s, Formula One car of 2014
    96.8 m/s, BMW 320i 59.3 m/s."""
    return top_speed(p.P_max, 0.5 * p.rho * p.S * p.Cx)


def force_scale(p) -> float:
    r"""The car's largest tyre force, the scale of its forces in the objective's penalties
    [N]: :math:`\max(\mu_{x0}, \mu_{y0})\,(m g + F_{down}(v_{top}))`, the downforce at its top
    speed (:func:`speed_scale`, :func:`grip_force`). Forces over it are alike for a 240 kg
    FSAE car (6.3 kN) and a Formula One car with 25 kN of downforce (56 kN)."""
    return grip_force(max(p.mu_x0, p.mu_y0), p.m * p.gravity, 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2),
                      speed_scale(p))


def slip_scale(p) -> float:
    r"""The slip angle at which a tyre at the static load (:math:`f_z = m g / 4`) would reach
    its peak force :math:`D` along its cornering stiffness :math:`C_\alpha` (eq 32), :math:`D /
    C_\alpha` [rad]: the scale of the slip angles. FSAE car 2.35 deg, Formula One car of 2014
    3.32 deg, BMW 320i 2.74 deg."""
    fz = p.m * p.gravity / 4.0
    return float(peak_force(p, fz)) / float(cornering_stiffness(p, fz))


def car_scales(p, curvature: float) -> dict:
    """The scales of the car's channels in SI units (the thresholds of
    :data:`pyomo_lap.verify.quality.SMOOTHNESS_CHECKS` are fractions of them): ``steer`` (the
    wheelbase times ``curvature``, a sector's RMS curvature [1/m]: the steering the sector
    asks [rad]), ``slip`` (:func:`slip_scale` [rad]), ``force`` (:func:`force_scale` [N]),
    ``speed`` (:func:`speed_scale` [m/s]), ``acceleration`` (the force scale over the mass
    [m/s^2])."""
    return {"steer": float((p.a1 + p.a2) * curvature), "slip": float(slip_scale(p)),
            "force": float(force_scale(p)), "speed": float(speed_scale(p)),
            "acceleration": float(force_scale(p) / p.m)}


def vertical_loads(p: VehicleParameters, fz3, mx3, my3, Y1, Y2, nm) -> tuple:
    r"""The four vertical loads statically equivalent to the structural wrench :math:`W_{3J}`
    (module docstring): the axle loads :math:`F_i` from :math:`f_{3z}, m_{3y}`, the lateral
    transfers :math:`\Delta F_i` of eq (30) from :math:`m_{3x}` and the axle forces
    :math:`Y_i` split by roll stiffness and no-roll-centre heights.

    Returns
    -------
    (loads [f_11, f_12, f_21, f_22] [N], delta_F1 [N], delta_F2 [N])
    """
    susp = p.suspension
    l = p.l
    F1 = add(mul(p.a2 / l, fz3), mul(-1.0 / l, my3))
    F2 = add(mul(p.a1 / l, fz3), mul(1.0 / l, my3))
    share1 = susp["k_phi1"] / susp["k_phi"]
    share2 = susp["k_phi2"] / susp["k_phi"]
    roll_moment = nm("roll_moment", total([mul(-1.0, mx3), mul(-p.hq1, Y1), mul(-p.hq2, Y2)]))
    dF1 = add(mul(share1 / p.t1, roll_moment), mul(p.hq1 / p.t1, Y1))
    dF2 = add(mul(share2 / p.t2, roll_moment), mul(p.hq2 / p.t2, Y2))
    loads = [sub(mul(0.5, F1), dF1), add(mul(0.5, F1), dF1),
             sub(mul(0.5, F2), dF2), add(mul(0.5, F2), dF2)]
    return loads, dF1, dF2


def longitudinal_forces(p: VehicleParameters, f_xa, f_xb, share: float = 0.5) -> tuple:
    r"""The longitudinal force of a front and of a rear tyre, eq (34) with the drive force
    split between the axles: :math:`f_{1x} = s\,(k_b f_{xb} + k_d f_{xa})`,
    :math:`f_{2x} = s\,((1 - k_b) f_{xb} + (1 - k_d) f_{xa})` [N], :math:`k_d` the front share
    ``drive_ratio`` of the drive force (0, rear-wheel drive: eq 34), :math:`s` the tyre's
    share of its axle (1/2 for a tyre of the four-wheeled car, 1 for an axle of the
    single-track car). An open differential: both tyres of an axle take the same force."""
    k_d = getattr(p, "drive_ratio", 0.0)
    f1x = add(mul(share * p.brake_ratio, f_xb), mul(share * k_d, f_xa))
    f2x = add(mul(share * (1 - p.brake_ratio), f_xb), mul(share * (1 - k_d), f_xa))
    return f1x, f2x


def contact_patch_offsets(p: VehicleParameters, q2, q3) -> dict:
    r"""Lateral offsets from the spine of the outer edges of the four contact patches [m]
    (``patch_11`` ... ``patch_22``; + left): the patch of wheel ``ij`` at :math:`x_i` (:math:`a_1`,
    :math:`-a_2`) and :math:`y_{ij} = \pm(t_i + w_i)/2` in {B3} (:math:`w_i` the tyre widths
    ``tw1``, ``tw2``), yawed by :math:`q_3`:
    :math:`q_2 + x_i \sin q_3 \pm \tfrac12(t_i + w_i)\cos q_3`. Measured along the spine's
    normal at the car's :math:`q_1`: the spine's curvature :math:`\kappa` moves a point
    :math:`x` ahead by about :math:`\kappa x^2/2` more, which is neglected (as fastest-lap's
    track limits neglect it)."""
    s3, c3 = sin(q3), cos(q3)
    half = {1: mul(0.5, add(p.t1, p.tw1)), 2: mul(0.5, add(p.t2, p.tw2))}
    x = {1: p.a1, 2: mul(-1.0, p.a2)}
    out = {}
    for i in (1, 2):
        for j, sign in ((1, 1.0), (2, -1.0)):
            out[f"patch_{i}{j}"] = add(add(q2, mul(x[i], s3)), mul(mul(sign, half[i]), c3))
    return out


@dataclasses.dataclass
class CarEquations:
    """The car's dynamics at one point, from :func:`car_equations`.

    Attributes
    ----------
    qdd : list of 6
        q̈1..q̈6 from the ABA [m/s^2, m/s^2, rad/s^2, m/s^2, rad/s^2, rad/s^2].
    load_residuals : list of 4
        ``f_ijz - f~_ijz`` for (11, 12, 21, 22), eq (35) as rederived above [N].
    inplane_residuals : list of 3
        ``f_3x - (X1+X2)``, ``f_3y - (Y1+Y2)``, ``m_3z - m_z(tyres)``, eq (36) [N, N, N m].
    channels : dict
        Named intermediate quantities (slip angles, tyre forces, W3J, speeds, aero...).
    kin : pyomo_lap.spatial.tree.TreeKinematics
        Postures and twists of the bodies of :func:`build_chain` (body ``k - 1`` is the
        preprint's body ``k``).
    aba : pyomo_lap.spatial.tree.HybridResult
        The ABA's body accelerations ``Vdot`` (with gravity, eq 23a) and the structural
        wrench :math:`W_{3J}^3` of eq (24), ``F[UNSPRUNG]`` (the other ``F`` are None).
    """

    qdd: list
    load_residuals: list
    inplane_residuals: list
    channels: dict
    kin: object
    aba: object


def aero_forces(p: VehicleParameters, v3x, namer: Optional[Callable] = None):
    """Drag, downforce and aerodynamic pitch moment at O3 in {B3}, eq (20), with drag and
    downforce acting at the height ``h_cp`` of the centre of pressure (0 in eq 20: drag at
    road level; the drag's moment :math:`h_{cp} f_{drag}` about y3 takes load off the front).

    Parameters
    ----------
    p : VehicleParameters
    v3x : scalar
        Longitudinal speed of O3 in {B3} [m/s] (float, Pyomo or CasADi).
    namer : callable, optional
        ``namer(tag, value)``; the dynamic pressure times the reference area is tagged
        ``"aero_q"`` [N].

    Returns
    -------
    (f_drag [N] along x3, f_down [N] along z3, m_aero [N m] about y3)
    """
    nm = namer or (lambda tag, v: v)
    qdyn = nm("aero_q", mul(0.5 * p.rho * p.S, mul(v3x, v3x)))
    h_cp = getattr(p, "h_cp", 0.0)
    return (mul(-p.Cx, qdyn), mul(-(p.Cz1 + p.Cz2), qdyn),
            mul(sub(mul(-1.0, sub(mul(p.Cz2, p.a2), mul(p.Cz1, p.a1))), mul(h_cp, p.Cx)), qdyn))


def car_equations(p: VehicleParameters, chain: KinematicTree, track: TrackJoint,
                  q: Sequence, qd: Sequence, u: Sequence, z: Sequence,
                  namer: Optional[Callable] = None) -> CarEquations:
    r"""All equations of the car at one point of the track.

    Parameters
    ----------
    p : VehicleParameters
    chain : KinematicTree
        From :func:`build_chain`.
    track : TrackJoint
        Track joint at the current q1.
    q, qd : sequences of 6 scalars
        q1..q6 and q̇1..q̇6.
    u : sequence of 3 scalars
        Controls ``(f_xa [N] >= 0, f_xb [N] <= 0, delta [rad])``.
    z : sequence of 7 scalars
        Algebraic variables ``(f_11z, f_12z, f_21z, f_22z [N], f_3x, f_3y [N], m_3z [N m])``.
    namer : callable, optional
        ``namer(tag, value)``, a named stand-in (Pyomo ``Expression``; :func:`chain_namer`).

    Returns
    -------
    CarEquations

    Notes
    -----
    Suspension torques eq (18)-(19); aerodynamic wrench eq (20) in {B3} moved to {B6} with
    :math:`W^6 = \mathrm{Ad}_{g_{3,6}}^T W^3`; slip angles eq (33) (small-angle form);
    longitudinal forces eq (34); lateral forces eq (32); axle forces eq (31); in-plane
    resultant eq (36) with the exact yaw moment of the four tyre forces about O3 (the paper's
    eq 36c drops the term :math:`(t_1/2)(f_{11y}-f_{12y})\sin\delta`); vertical loads as in the
    module docstring.
    """
    nm = namer or (lambda tag, v: v)
    f_xa, f_xb, delta = u
    f11z, f12z, f21z, f22z, f3x, f3y, m3z = z
    susp = p.suspension
    # eq (18)
    tau = [0, 0, 0,
           sub(mul(-susp["k"], q[3]), mul(susp["c"], qd[3])),
           sub(mul(-susp["k_theta"], q[4]), mul(susp["c_theta"], qd[4])),
           sub(mul(-susp["k_phi"], q[5]), mul(susp["c_phi"], qd[5]))]
    tree_nm, tj = chain_namer(namer), {0: track}
    kin = forward_kinematics(chain, q, qd, track=tj, namer=tree_nm)
    V3 = kin.V[UNSPRUNG]
    v3x, v3y, w3z = V3[0], V3[1], V3[5]
    # eq (20): aerodynamic wrench at O3 in {B3}, moved to {B6}
    f_drag, f_down, m_aero = aero_forces(p, v3x, nm)
    g36 = lie.compose(lie.compose(kin.g[3], kin.g[4]), kin.g[SPRUNG])
    f_ext = {UNSPRUNG: [f3x, f3y, 0, 0, 0, m3z],
             SPRUNG: lie.Ad_T_apply(g36, [f_drag, 0, f_down, 0, m_aero, 0])}
    res = hybrid_dynamics(chain, q, qd, [None] * 6, tau, (), f_ext=f_ext, track=tj,
                          namer=tree_nm, kin=kin, wrenches=(UNSPRUNG,))
    # eq (33): slip angles (small-angle form; v3x is kept away from zero by the OCP)
    inv_vx = 1 / v3x
    alpha1 = nm("alpha_1", sub(delta, mul(add(v3y, mul(p.a1, w3z)), inv_vx)))
    alpha2 = nm("alpha_2", mul(sub(mul(p.a2, w3z), v3y), inv_vx))
    f1x, f2x = longitudinal_forces(p, f_xa, f_xb, 0.5)      # eq (34)
    # eq (32) (or the car's tyre model, vehicle/tyres.py), scaled for the longitudinal force with
    # combined_slip = ellipse
    tyres = tyre_forces(p, {"11": (alpha1, f11z, f1x), "12": (alpha1, f12z, f1x),
                            "21": (alpha2, f21z, f2x), "22": (alpha2, f22z, f2x)})
    f11y, f12y, f21y, f22y = (nm(f"f_{w}y", t["f_y"]) for w, t in tyres.items())
    cd, sd = cos(delta), sin(delta)
    # eq (31) and (36)
    Y1 = nm("Y_1", add(mul(add(f11y, f12y), cd), mul(mul(2.0, f1x), sd)))
    Y2 = nm("Y_2", add(f21y, f22y))
    X1 = sub(mul(mul(2.0, f1x), cd), mul(add(f11y, f12y), sd))
    X2 = mul(2.0, f2x)
    mz_tyres = total([mul(p.a1, Y1), mul(-p.a2, Y2), mul(0.5 * p.t1, mul(sub(f11y, f12y), sd))])
    inplane = [sub(f3x, add(X1, X2)), sub(f3y, add(Y1, Y2)), sub(m3z, mz_tyres)]
    W3J = res.F[UNSPRUNG]
    fz3, mx3, my3 = W3J[2], W3J[3], W3J[4]
    loads, dF1, dF2 = vertical_loads(p, fz3, mx3, my3, Y1, Y2, nm)
    load_res = [sub(fz, ld) for fz, ld in zip((f11z, f12z, f21z, f22z), loads)]
    channels = {
        "v_3x": v3x, "v_3y": v3y, "omega_3z": w3z, "alpha_1": alpha1, "alpha_2": alpha2,
        "f_11x": f1x, "f_12x": f1x, "f_21x": f2x, "f_22x": f2x,
        "f_11y": f11y, "f_12y": f12y, "f_21y": f21y, "f_22y": f22y, "Y_1": Y1, "Y_2": Y2,
        "f_3z": fz3, "m_3x": mx3, "m_3y": my3, "f_drag": f_drag, "f_down": f_down,
        "tau_4": tau[3], "tau_5": tau[4], "tau_6": tau[5],
        "delta_F1": dF1, "delta_F2": dF2, "power": mul(f_xa, v3x),
    }
    measure = tyre_model_of(p).measure       # "theta" (Magic Formula), "upsilon" (Fiala), ...
    for w, t in tyres.items():
        channels[f"D_{w}"] = t["D"]
        channels[f"{measure}_{w}"] = t[measure]
    channels.update(contact_patch_offsets(p, q[1], q[2]))
    return CarEquations(qdd=res.qdd, load_residuals=load_res, inplane_residuals=inplane,
                        channels=channels, kin=kin, aba=res)


def o3_acceleration(V3, Vdot3, R03_row_z, gravity) -> list:
    r"""Acceleration of O3 (origin of body 3, the unsprung body at road level) in {B3}, without
    gravity: :math:`\dot v + \omega \times v - R_{0,3}^T\,[0, 0, g]^T`, the kinematic
    acceleration (``a_x``, ``a_y``, ``a_z`` of the trajectory; + forward, + left, + up in
    {B3}; 0 at rest: an accelerometer there would read this plus :math:`R_{0,3}^T [0,0,g]^T`).

    The body acceleration :math:`\dot V_3` of the ABA (eq 23) carries gravity as the
    fictitious base acceleration :math:`\dot V_0 = [0, 0, g, 0, 0, 0]`; the last term takes it
    out. Written on any scalars (floats, Pyomo expressions, CasADi or tape symbols).

    Parameters
    ----------
    V3 : sequence of 6
        Twist of body 3 in {B3}, :math:`[v; \omega]` [m/s, rad/s].
    Vdot3 : sequence of at least 3
        Linear part of :math:`\dot V_3` [m/s^2] (the ABA's ``Vdot[UNSPRUNG][:3]``).
    R03_row_z : sequence of 3
        Third row of :math:`R_{0,3}` (the ground's z axis in {B3}) [-].
    gravity : float or scalar
        [m/s^2].

    Returns
    -------
    list of 3 scalars
        ``[a_x, a_y, a_z]`` [m/s^2].
    """
    wxv = lie.cross(V3[3:6], V3[0:3])
    return [sub(add(Vdot3[k], wxv[k]), mul(R03_row_z[k], gravity)) for k in range(3)]


def solve_loop(residual: Callable, z0, jacobian: Optional[Callable] = None, *, tol: float = 1e-9,
               max_iter: int = 50, n_loads: int = 4, floor: float = 1.0, line_search: bool = True,
               raise_on_failure: bool = True):
    """Newton's method for an algebraic loop ``r(z) = 0`` whose first ``n_loads`` unknowns are
    vertical loads (kept above ``floor``). Shared by :func:`solve_algebraic`, the float
    evaluation of :mod:`pyomo_lap.ocp.point_functions` and the cold-start guess of
    :mod:`pyomo_lap.ocp.initialize`.

    Parameters
    ----------
    residual : callable
        ``residual(z) -> r``, (n,) [N, N m].
    z0 : sequence of n floats
        Initial guess.
    jacobian : callable, optional
        ``jacobian(z) -> J`` (n, n), called at the accepted iterates only. None: fixed-point
        (Picard) steps ``z <- z - r``, which suit residuals of the form ``z - F(z)`` such as
        eqs (35)-(36) when the loop gain is small.
    tol : float
        Tolerance on the residual's 2-norm [N].
    max_iter : int
        Most steps.
    n_loads : int
        Number of leading unknowns that are vertical loads [N].
    floor : float
        Lower bound imposed on the loads after each step [N].
    line_search : bool
        Halve the step until the residual norm decreases (at most 20 times).
    raise_on_failure : bool
        False: return the last iterate when not converged.

    Returns
    -------
    ndarray (n,)

    Raises
    ------
    RuntimeError
        If ``raise_on_failure`` and the 2-norm of the residual is not below ``1e3 tol`` after
        ``max_iter`` steps.
    """
    z = np.array(z0, dtype=float)
    r = np.asarray(residual(z), float)
    for _ in range(max_iter):
        if np.linalg.norm(r) < tol:
            return z
        step = -r if jacobian is None else np.linalg.solve(jacobian(z), -r)
        lam = 1.0
        for _ in range(20 if line_search else 1):
            zn = z + lam * step
            zn[:n_loads] = np.maximum(zn[:n_loads], floor)
            rn = np.asarray(residual(zn), float)
            if not line_search or np.linalg.norm(rn) < np.linalg.norm(r):
                break
            lam *= 0.5
        z, r = zn, rn
    if np.linalg.norm(r) < tol * 1e3 or not raise_on_failure:
        return z
    raise RuntimeError(f"algebraic loop did not converge: |residual| = {np.linalg.norm(r):.3g} N")


def solve_algebraic(p: VehicleParameters, chain: KinematicTree, track: TrackJoint,
                    q, qd, u, z0=None, tol: float = 1e-9, max_iter: int = 50):
    """Solve the seven algebraic equations (35)-(36) for z with floats (Newton with a
    finite-difference Jacobian, from a static guess). For many evaluations use the much faster
    :class:`pyomo_lap.ocp.point_functions.CarFunctions` (same equations, exact Jacobian).

    Parameters
    ----------
    p, chain, track, q, qd, u
        As in :func:`car_equations` (floats).
    z0 : sequence of 7 floats, optional
        Initial guess; default static loads and zero in-plane forces.
    tol : float
        Tolerance on the residual norm [N].
    max_iter : int

    Returns
    -------
    (z, CarEquations)

    Raises
    ------
    RuntimeError
        If Newton does not converge.
    """
    if z0 is None:
        s1, s2 = p.static_loads
        z0 = [s1, s1, s2, s2, 0.0, 0.0, 0.0]

    def F(zz):
        e = car_equations(p, chain, track, q, qd, u, list(zz))
        return np.array([float(x) for x in e.load_residuals + e.inplane_residuals])

    def jac(zz):   # forward differences
        r = F(zz)
        Jm = np.empty((7, 7))
        for j in range(7):
            dz = np.zeros(7)
            dz[j] = 1e-4 * max(1.0, abs(zz[j]))
            Jm[:, j] = (F(zz + dz) - r) / dz[j]
        return Jm

    z = solve_loop(F, z0, jac, tol=tol, max_iter=max_iter)
    return list(z), car_equations(p, chain, track, q, qd, u, list(z))
