r"""The multibody car: the chassis on the six joints of the chain plus four wheel carriers on
suspension joints, its tyre forces from the wheel states (issue 14, parts 3-4).

The journal version of the Lie-group model (Bartali, Gabiccini, Grabovic, Guiggiani,
Meccanica 58 (2023), seed ``003``, sec. 4.2.1) validates the reduced model against the
multibody car of its reference [15]: M. Domenighini, L. Bartali, M. Gabiccini, E. Grabovic,
*Minimum-lap-time planning of multibody vehicle models via the articulated-body algorithm*,
Designs 7(3):65 (2023), doi:10.3390/designs7030065 (54.3 s against 53.9 s on a 2 km sector,
36,000 against 18,000 NLP variables). That paper's equations are not among the project's
sources; the tree below is this project's reduced reading of such a car, chosen so that the
comparison isolates what the journal says the reduced model lacks (the vertical dynamics of
the four corners: "the different stiffness opposed by the front and rear axle to the roll
motion, and the consequent variation of pitch angle"):

====  ===========================  =======================  ==================================
body  joint                        coordinate               mass
====  ===========================  =======================  ==================================
0     track (sec. 2.1)             ``q1`` (arc length)      --
1     prismatic, lateral (+ left)  ``q2``                   --
2     revolute, yaw                ``q3``                   -- (frame {B3}, the road plane)
3     prismatic, heave             ``q4``                   -- (placed at the VIP, ``h_vip``)
4     revolute, pitch (+ nose dn)  ``q5``                   --
5     revolute, roll (+ right dn)  ``q6``                   sprung mass ``m_s`` at ``G6``
6-9   prismatic along the chassis  ``z11, z12, z21, z22``   wheel carrier ``ij``: a point
      z axis at the corner                                  mass at the wheel centre
====  ===========================  =======================  ==================================

Differences from the reduced model (:mod:`pyomo_lap.vehicle.car`):

* joints 4-6 carry no springs; each carrier's joint carries the wheel's spring and damper
  (``k_i``, ``c_i`` of Table 1), preloaded with the static sprung load of its corner so
  that the design ride height (all coordinates 0) is the static equilibrium on flat ground
  (the reduced model's heave ``q4`` is measured from the unloaded springs instead);
* the vertical load of each tyre is a state function, the tyre's vertical spring and damper
  (vehicle file, ``[multibody]``):
  :math:`f_{ijz} = k_t (r_{0i} - z_{c,ij}) - c_t \dot z_{c,ij}`, with :math:`z_{c,ij}` the
  height of the wheel centre above the road plane {B3} and :math:`r_{0i}` the free radius
  (loaded radius + static wheel load / k_t); no algebraic load equations, no algebraic
  in-plane resultant: the model is an ODE;
* the tyre forces act on the carriers: the vertical force at the wheel centre along the
  road normal, the in-plane forces (eqs 31-34, the same slip angles (33) and Magic Formula
  (32) as the reduced model, with the loads above) at the contact point, in the road plane;
* a carrier's prismatic joint passes every force and moment but the one along its axis to
  the chassis, which would put the roll and pitch centres of the suspension at the ground.
  The joint force along the axis therefore holds, besides the spring and damper, the
  *jacking* force of a linkage whose no-roll centre is at height ``hq_i`` above the axle's
  centre and whose pitch centre is the VIP (a lateral force through a no-roll centre does
  not roll the body: Guiggiani's no-roll centres, *The science of vehicle dynamics*, 2018,
  reference [4] of seed ``003``, which eq (30) of the preprint follows):
  :math:`\tau_{ij} = -P_i - k_i z_{ij} - c_i \dot z_{ij} + F_{y,ij}\, h_{qi}/y_{ij}
  + F_{x,ij}\, h_{VIP}/x_{ij}` with :math:`F_{x,ij}, F_{y,ij}` the tyre's in-plane force in
  {B3} and :math:`(x_{ij}, y_{ij})` the corner. With it the load transfer of the stiff limit
  is the reduced model's (eq 30: geometric part :math:`Y_i h_{qi}/t_i` and elastic part
  split by roll stiffness; longitudinal transfer by statics; tested), and the multibody car
  adds what the journal says the reduced model lacks: the four corners' own vertical
  dynamics, the roll-pitch coupling of the different front and rear wheel rates, the tyres'
  compliance and the unsprung masses' own motion;
* no wheel spin: the longitudinal forces stay the controls' eq (34), as in the reduced
  model (a spinning wheel would add four states and a longitudinal slip model, which the
  reduced model has not, so the comparison would no longer isolate the vertical dynamics);
* the aerodynamic wrench of eq (20) acts on the chassis, as in the reduced model.

Everything evaluates on floats, Pyomo expressions and CasADi symbols (:mod:`pyomo_lap.spatial.backend`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from ..spatial import lie
from ..spatial.backend import add, cos, mul, neg, sin, sub, total
from ..spatial.dynamics import aba
from ..spatial.tree import PRISMATIC, KinematicTree, TrackJoint, forward_kinematics
from .car import SPRUNG, aero_forces, chain_parts, kinematic_tree, longitudinal_forces
from .schema import SymbolicVehicle, VehicleParameters
from .tyres import tyre_model_of

__all__ = ["WHEELS", "SUSPENSION", "build_tree", "carrier_mass", "free_radius", "spring_preload",
           "MultibodyEquations", "multibody_equations", "require_multibody_parameters"]

WHEELS = ("11", "12", "21", "22")
"""Corners ``ij``: axle ``i`` (1 front, 2 rear), side ``j`` (1 left, 2 right)."""
SUSPENSION = tuple(f"z{w}" for w in WHEELS)
"""Names of the carrier travels (suspension joints), + up relative to the chassis [m]."""

CHASSIS = SPRUNG
"""Index of the sprung body in :func:`build_tree`."""
ROAD = 2
"""Index of the body with the frame {B3} (road plane, at road level under the VIP)."""


def require_multibody_parameters(p: VehicleParameters) -> None:
    """Raise ``ValueError`` naming the missing ``[multibody]`` keys of the vehicle.

    Raises
    ------
    ValueError
        If ``p.tyre_kz`` or ``p.tyre_cz`` is None (a vehicle file without ``[multibody]``).
    """
    missing = [k for k, a in (("tyre_stiffness", "tyre_kz"), ("tyre_damping", "tyre_cz"))
               if getattr(p, a) is None]
    if missing:
        raise ValueError(f"vehicle {p.name!r}: the multibody model needs the section [multibody] "
                         f"with {', '.join(missing)} (see models/fsae.toml)")


def carrier_mass(p: VehicleParameters, axle: int) -> float:
    """Mass of one wheel carrier of axle 1 or 2 [kg]: the unsprung mass split front/rear as
    a2:a1 (its centre above O3, as :attr:`VehicleParameters.unsprung_inertia`)."""
    share = p.a2 if axle == 1 else p.a1
    return p.m_u * share / p.l / 2


def spring_preload(p: VehicleParameters, axle: int) -> float:
    """Force of one corner spring at zero travel [N]: the static sprung load of the corner,
    ``m_s g (l - a_i) / (2 l)`` (the design ride height is the static equilibrium)."""
    share = p.a2 if axle == 1 else p.a1
    return p.m_s * p.gravity * share / p.l / 2


def free_radius(p: VehicleParameters, axle: int) -> float:
    """Free (unloaded) tyre radius of axle 1 or 2 [m]: the loaded radius plus the static
    wheel load over the tyre's vertical stiffness."""
    return p.wheel_radius + p.static_loads[axle - 1] / p.tyre_kz


def _corner(p: VehicleParameters, w: str):
    axle, side = int(w[0]), int(w[1])
    x = p.a1 if axle == 1 else -p.a2
    t = p.t1 if axle == 1 else p.t2
    y = t / 2 if side == 1 else -t / 2
    return axle, x, y


def build_tree(p: VehicleParameters) -> KinematicTree:
    """The kinematic tree of the multibody car (module docstring), 10 degrees of freedom:
    ``q = (q1, q2, q3, q4, q5, q6, z11, z12, z21, z22)``. For a
    :class:`~pyomo_lap.vehicle.schema.SymbolicVehicle` (the car's parameters as symbols of a
    recording) the tree of its numbers with its symbols
    (:func:`pyomo_lap.vehicle.car.kinematic_tree`).

    Raises
    ------
    ValueError
        Without the ``[multibody]`` parameters (:func:`require_multibody_parameters`).
    """
    require_multibody_parameters(p.numbers if isinstance(p, SymbolicVehicle) else p)
    return kinematic_tree(p, _tree_parts)


def _tree_parts(p) -> dict:
    """The fields of :func:`build_tree`'s tree for the car ``p`` (numbers or symbols): the
    chassis chain of :func:`pyomo_lap.vehicle.car.chain_parts` without the unsprung mass,
    and the four carriers."""
    eye = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    parts = chain_parts(p, unsprung=False)
    for w in WHEELS:
        axle, x, y = _corner(p, w)
        parts["parent"].append(CHASSIS)
        parts["joint_type"].append(PRISMATIC)
        parts["axis"].append((0, 0, 1))
        parts["placement"].append((eye, (x, y, p.wheel_radius - p.h_vip)))
        parts["inertia"].append(lie.spatial_inertia(carrier_mass(p, axle), [0.0, 0.0, 0.0],
                                                    [[0.0] * 3, [0.0] * 3, [0.0] * 3]))
        parts["names"].append(f"carrier_{w}")
    return parts


@dataclasses.dataclass
class MultibodyEquations:
    """The multibody car at one point (:func:`multibody_equations`).

    Attributes
    ----------
    qdd : list of 10
        Accelerations of ``q1..q6, z11..z22`` [m/s^2 or rad/s^2].
    channels : dict
        Named quantities: ``v_3x, v_3y, omega_3z`` [m/s, rad/s], ``alpha_1, alpha_2`` [rad],
        ``f_ijx, f_ijy, f_ijz`` [N], ``zc_ij`` (wheel-centre height above the road) [m],
        ``D_ij, theta_ij`` (Magic Formula), ``f_drag, f_down`` [N], ``spring_ij`` (force of the suspension joint on the carrier,
        + up; the spring and damper) [N],
        ``power`` [W].
    """

    qdd: list
    channels: dict


def multibody_equations(p: VehicleParameters, tree: KinematicTree, track: TrackJoint,
                        q: Sequence, qd: Sequence, u: Sequence,
                        namer: Optional[Callable] = None) -> MultibodyEquations:
    r"""The accelerations of the multibody car and its tyre forces at one point.

    Parameters
    ----------
    p : VehicleParameters
        With the ``[multibody]`` parameters.
    tree : KinematicTree
        From :func:`build_tree`.
    track : TrackJoint
        The track joint at the current ``q1``.
    q, qd : sequences of 10 scalars
        ``q1..q6, z11..z22`` [m, rad] and their rates (``q[0]`` is not read).
    u : sequence of 3 scalars
        Controls ``(f_xa [N] >= 0, f_xb [N] <= 0, delta [rad])``.
    namer : callable, optional
        ``namer(tag, value)`` (tags of :func:`pyomo_lap.spatial.dynamics.aba` and ``alpha_*``,
        ``f_*``, ``zc_*``, ``aero_q``).

    Returns
    -------
    MultibodyEquations

    Notes
    -----
    Wheel-centre height and its rate in {B3}: with :math:`g_{3c} = (R, p)` the carrier's
    posture in {B3} and the body twists :math:`V_3 = [v_3; \omega_3]`,
    :math:`V_c = [v_c; \omega_c]`,
    :math:`\dot p = R v_c - v_3 - \omega_3 \times p` and :math:`z_c = p_z`.
    """
    nm = namer or (lambda tag, v: v)
    f_xa, f_xb, delta = u
    kin = forward_kinematics(tree, q, qd, track={0: track}, namer=nm)
    V3 = kin.V[ROAD]
    v3x, v3y, w3z = V3[0], V3[1], V3[5]
    g36 = lie.compose(kin.g[3], lie.compose(kin.g[4], kin.g[5]))
    # eq (33), (34), the same as the reduced model
    inv_vx = 1 / v3x
    alpha1 = nm("alpha_1", sub(delta, mul(add(v3y, mul(p.a1, w3z)), inv_vx)))
    alpha2 = nm("alpha_2", mul(sub(mul(p.a2, w3z), v3y), inv_vx))
    f1x, f2x = longitudinal_forces(p, f_xa, f_xb, 0.5)          # eq (34)
    cd, sd = cos(delta), sin(delta)
    ch = {"v_3x": v3x, "v_3y": v3y, "omega_3z": w3z, "alpha_1": alpha1, "alpha_2": alpha2}
    f_ext = {}
    tau = [0] * 6
    tyre = tyre_model_of(p)      # the Magic Formula (ocp.full_model.unsupported_tyre refuses others)
    for k, w in enumerate(WHEELS):
        axle = int(w[0])
        body = 6 + k
        R, pos = lie.compose(g36, kin.g[body])
        zc = nm(f"zc_{w}", pos[2])
        Vc = kin.V[body]
        # z component of R v_c - v_3 - w_3 x p
        zc_dot = total([mul(R[2][0], Vc[0]), mul(R[2][1], Vc[1]), mul(R[2][2], Vc[2]), neg(V3[2]),
                        neg(sub(mul(V3[3], pos[1]), mul(V3[4], pos[0])))])
        fz = nm(f"f_{w}z", sub(mul(p.tyre_kz, sub(free_radius(p, axle), zc)), mul(p.tyre_cz, zc_dot)))
        D, th, fy = tyre.lateral(p, alpha1 if axle == 1 else alpha2, fz)
        fy = nm(f"f_{w}y", fy)
        fx = f1x if axle == 1 else f2x
        if axle == 1:      # the front wheels are steered: forces in {B3}
            Fx, Fy = sub(mul(fx, cd), mul(fy, sd)), add(mul(fx, sd), mul(fy, cd))
        else:
            Fx, Fy = fx, fy
        # the tyre's wrench at the carrier origin (wheel centre) in {B3}: the vertical force
        # through it, the in-plane forces at the contact point, zc below it
        W3 = [Fx, Fy, fz, mul(zc, Fy), neg(mul(zc, Fx)), 0]
        f_ext[body] = lie.Ad_T_apply((R, [0, 0, 0]), W3)    # rotated into the carrier frame
        _, x, y = _corner(p, w)
        hq = p.hq1 if axle == 1 else p.hq2
        # joint force on the carrier along +z: the compressed spring pushes it down, the
        # damper, and the jacking force of the linkage (module docstring)
        jack = add(mul(hq / y, Fy), mul(p.h_vip / x, Fx))
        spring = neg(total([spring_preload(p, axle), mul(p.k1 if axle == 1 else p.k2, q[6 + k]),
                            mul(p.c1 if axle == 1 else p.c2, qd[6 + k])]))
        tau.append(add(spring, jack))
        ch.update({f"f_{w}x": fx, f"f_{w}y": fy, f"f_{w}z": fz, f"zc_{w}": zc, f"D_{w}": D,
                   f"{tyre.measure}_{w}": th, f"spring_{w}": spring, f"jack_{w}": jack})
    # eq (20): aerodynamic wrench at O3 in {B3}, moved to the chassis
    f_drag, f_down, m_aero = aero_forces(p, v3x, nm)
    f_ext[CHASSIS] = lie.Ad_T_apply(g36, [f_drag, 0, f_down, 0, m_aero, 0])
    qdd = aba(tree, q, qd, tau, f_ext=f_ext, track={0: track}, namer=nm)
    ch.update({"f_drag": f_drag, "f_down": f_down, "power": mul(f_xa, v3x)})
    return MultibodyEquations(qdd=list(qdd), channels=ch)
