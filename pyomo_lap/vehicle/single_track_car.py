r"""The single-track (bicycle) car's equations with Fiala tyres, written once over the scalar
backend (:mod:`pyomo_lap.spatial.backend`: floats, Pyomo, CasADi): the chain of joints 1-3 with one
rigid body (:func:`build_chain`, a :class:`~pyomo_lap.spatial.tree.KinematicTree`), the Fiala
axle force (:func:`fiala_axle`) and all equations at one point (:func:`single_track_equations`). The model is described in
:mod:`pyomo_lap.ocp.single_track`, which builds its OCP from these equations; this module holds
no OCP code (the OCP's recorded rows, :mod:`pyomo_lap.ocp.single_track`, call them).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from ..spatial import lie
from ..spatial.backend import add, atan, cos, mul, sin, sub, total
from ..spatial.dynamics import hybrid_dynamics
from ..spatial.tree import KinematicTree, TrackJoint, forward_kinematics
from . import car as veh
from .tyres import FIALA, _clip_unit, cornering_stiffness  # noqa: F401 - _clip_unit: ocp.single_track's

__all__ = ["ALGEBRAIC", "STATE_NAMES", "RATE_NAMES", "build_chain", "fiala_axle",
           "single_track_equations"]

ALGEBRAIC = ("f_1z", "f_2z", "f_3x", "f_3y", "m_3z")
"""Algebraic variables: front and rear axle loads [N], in-plane tyre wrench on the car
[N, N, N m]."""
STATE_NAMES = ("q2", "q3")
RATE_NAMES = ("q1_dot", "q2_dot", "q3_dot")
_ABS_EPS2 = 1e-10   # |v| ~ sqrt(v^2 + eps^2): a smooth absolute value for the NLP


def build_chain(p: veh.VehicleParameters) -> KinematicTree:
    """Joints 1-3 of the car's chain (bodies 0-2 of
    :func:`pyomo_lap.vehicle.car.build_chain`) with one rigid body, body 2: the whole car at
    zero suspension deflection (sprung mass at ``h``, unsprung at wheel-centre height,
    inertias added about O3). A :class:`~pyomo_lap.vehicle.schema.SymbolicVehicle` gives the
    tree of its numbers with its symbols (:func:`pyomo_lap.vehicle.car.kinematic_tree`).

    Raises
    ------
    ValueError
        If the inertia is not that of a rigid body.
    """
    return veh.kinematic_tree(p, _parts)


def _parts(p) -> dict:
    """The fields of :func:`build_chain`'s tree for the car ``p`` (numbers or symbols)."""
    def diag(v):
        return [[v[0], 0, 0], [0, v[1], 0], [0, 0, v[2]]]
    Ms = lie.spatial_inertia(p.m_s, (0, 0, p.h), diag((p.Ixx, p.Iyy, p.Izz)))
    Mu = lie.spatial_inertia(p.m_u, (0, 0, p.wheel_radius), diag(p.unsprung_inertia))
    parts = veh.chain_parts(p)
    for k in ("parent", "joint_type", "axis", "placement", "names"):
        parts[k] = parts[k][:3]
    parts["inertia"] = [None, None, [[Ms[i][j] + Mu[i][j] for j in range(6)] for i in range(6)]]
    return parts


def fiala_axle(p: veh.VehicleParameters, alpha, fz_axle):
    r"""Fiala lateral force of an axle (seed ``004``) with the full model's tyre data: twice
    the force of one tyre at half the load (:data:`pyomo_lap.vehicle.tyres.FIALA`, its law
    evaluated at :math:`\upsilon` clipped to [-1, 1] for numbers and CasADi symbols). The
    single-track car has Fiala tyres whatever the car's ``tyre_model``.

    Parameters
    ----------
    p : VehicleParameters
    alpha : scalar
        Slip angle [rad] (positive: positive force).
    fz_axle : scalar
        Axle load [N], > 0.

    Returns
    -------
    (f_y [N], C [N/rad], D [N], upsilon [-])
        Force, cornering stiffness :math:`2 C_\alpha(f_z/2)`, peak force :math:`2 D(f_z/2)`
        and the sliding measure :math:`\upsilon = C\tan\alpha / (3D)` (the tyre slides at
        :math:`|\upsilon| = 1`; beyond, the force stays :math:`\pm D`).
    """
    fw = mul(0.5, fz_axle)
    D, ups, fy = FIALA.lateral(p, alpha, fw, clip=True, abs_eps2=_ABS_EPS2)   # one tyre
    return mul(2.0, fy), mul(2.0, cornering_stiffness(p, fw)), mul(2.0, D), ups


def single_track_equations(p: veh.VehicleParameters, chain: KinematicTree,
                           track: TrackJoint, q: Sequence, qd: Sequence, u: Sequence,
                           z: Sequence, namer: Optional[Callable] = None) -> veh.CarEquations:
    r"""All equations of the single-track car at one point (the analogue of
    :func:`pyomo_lap.vehicle.car.car_equations`).

    Parameters
    ----------
    p : VehicleParameters
    chain : KinematicTree
        From :func:`build_chain`.
    track : TrackJoint
    q, qd : sequences of 3 scalars
        q1..q3 [m, m, rad] and rates (q1 enters only through ``track``).
    u : sequence of 3 scalars
        ``(f_xa [N] >= 0, f_xb [N] <= 0, delta [rad])``; front axle force ``k_b f_xb``, rear
        ``(1 - k_b) f_xb + f_xa`` (eq 34 summed over each axle).
    z : sequence of 5 scalars
        ``(f_1z, f_2z [N], f_3x, f_3y [N], m_3z [N m])``.
    namer : callable, optional

    Returns
    -------
    CarEquations
        ``qdd`` (3), ``load_residuals`` (2), ``inplane_residuals`` (3), ``channels``.
    """
    nm = namer or (lambda tag, v: v)
    f_xa, f_xb, delta = u
    f1z, f2z, f3x, f3y, m3z = z
    tree_nm, tj, body = veh.chain_namer(namer), {0: track}, veh.UNSPRUNG
    kin = forward_kinematics(chain, q, qd, track=tj, namer=tree_nm)
    V3 = kin.V[body]
    v3x, v3y, w3z = V3[0], V3[1], V3[5]
    f_drag, f_down, m_aero = veh.aero_forces(p, v3x, nm)    # eq (20), as the full car
    W3E = [add(f3x, f_drag), f3y, f_down, 0, m_aero, m3z]
    res = hybrid_dynamics(chain, q, qd, [None] * 3, [0, 0, 0], (), f_ext={body: W3E}, track=tj,
                          namer=tree_nm, kin=kin, wrenches=(body,))
    inv_vx = 1 / v3x
    alpha1 = nm("alpha_1", sub(delta, atan(mul(add(v3y, mul(p.a1, w3z)), inv_vx))))
    alpha2 = nm("alpha_2", atan(mul(sub(mul(p.a2, w3z), v3y), inv_vx)))
    f1x, f2x = veh.longitudinal_forces(p, f_xa, f_xb, 1.0)     # eq (34) for the axles
    fy1, C1, D1, u1 = fiala_axle(p, alpha1, f1z)
    fy2, C2, D2, u2 = fiala_axle(p, alpha2, f2z)
    fy1, fy2 = nm("f_1y", fy1), nm("f_2y", fy2)
    cd, sd = cos(delta), sin(delta)
    Y1 = nm("Y_1", add(mul(fy1, cd), mul(f1x, sd)))
    X1 = sub(mul(f1x, cd), mul(fy1, sd))
    inplane = [sub(f3x, add(X1, f2x)), sub(f3y, add(Y1, fy2)),
               sub(m3z, total([mul(p.a1, Y1), mul(-p.a2, fy2)]))]
    W3J = res.F[body]
    fz3, mx3, my3 = W3J[2], W3J[3], W3J[4]
    l = p.l
    F1 = add(mul(p.a2 / l, fz3), mul(-1.0 / l, my3))
    F2 = add(mul(p.a1 / l, fz3), mul(1.0 / l, my3))
    loads = [sub(f1z, F1), sub(f2z, F2)]
    channels = {
        "v_3x": v3x, "v_3y": v3y, "omega_3z": w3z, "alpha_1": alpha1, "alpha_2": alpha2,
        "f_1x": f1x, "f_2x": f2x, "f_1y": fy1, "f_2y": fy2, "Y_1": Y1, "Y_2": fy2,
        "C_1": C1, "C_2": C2, "D_1": D1, "D_2": D2, "upsilon_1": u1, "upsilon_2": u2,
        "f_3z": fz3, "m_3x": mx3, "m_3y": my3, "f_drag": f_drag, "f_down": f_down,
        "power": mul(f_xa, v3x),
    }
    return veh.CarEquations(qdd=res.qdd, load_residuals=loads, inplane_residuals=inplane,
                            channels=channels, kin=kin, aba=res)
