r"""The six-joint serial chain of the race car and its Articulated-Body Algorithm.

The chain of Bartali et al. (preprint ``000``, sec. 2.2, Fig. 2; MODEL_NOTES "Chain"):

=====  ==========================  ===============================  =======================
joint  type                        axis :math:`X_k` in :math:`\{B_k\}`  :math:`g_{k-1,k}(0)`
=====  ==========================  ===============================  =======================
1      track joint                 :math:`J_1^1(q_1)` (eq 12b)       :math:`g_{0,1}(q_1)` (eq 12a)
2      prismatic, lateral ``q2``   ``[0,1,0, 0,0,0]``                identity
3      revolute, yaw ``q3``        ``[0,0,0, 0,0,1]``                identity
4      prismatic, heave ``q4``     ``[0,0,1, 0,0,0]``                up to the VIP height
5      revolute, pitch ``q5``      ``[0,0,0, 0,1,0]``                identity
6      revolute, roll ``q6``       ``[0,0,0, 1,0,0]``                identity
=====  ==========================  ===============================  =======================

Only body 3 (unsprung mass, "axle plane", origin at road level) and body 6 (sprung mass)
carry inertia. The functions evaluate on floats, Pyomo expressions or CasADi symbols (see
:mod:`pyomo_lap.spatial.backend`); an optional ``namer(tag, value)`` callback lets the Pyomo builder
turn shared intermediates into named ``Expression`` components.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Mapping, Optional, Sequence

from . import lie
from .backend import add, is_number, is_zero, mul, neg, sub, total

__all__ = ["Joint", "Chain", "TrackJoint", "Kinematics", "ABAResult",
           "vehicle_chain", "forward_kinematics", "aba", "GRAVITY"]

GRAVITY = 9.81
"""Gravity acceleration a_g [m/s^2], eq (23a)."""

Namer = Callable[[str, object], object]


def _identity_namer(tag, value):
    return value


@dataclasses.dataclass(frozen=True)
class Joint:
    """A 1-DoF joint of the chain (joints 2..6).

    Attributes
    ----------
    name : str
        Joint coordinate name, ``'q2'`` .. ``'q6'``.
    axis : tuple of 6 floats
        Joint twist :math:`X_k` in its own frame {B_k} (linear part first).
    offset : (R, p)
        Initial posture :math:`g_{k-1,k}(0)` [-, m].
    """

    name: str
    axis: tuple
    offset: tuple


@dataclasses.dataclass(frozen=True)
class Chain:
    """The constant model of the vehicle chain.

    Attributes
    ----------
    joints : dict int -> Joint
        Joints 2..6 (joint 1, the track joint, is described per point by
        :class:`TrackJoint`).
    inertia : dict int -> 6x6 nested list
        Spatial inertias :math:`M_k^k` [kg, kg m, kg m^2] of the bodies that carry mass
        (3 and 6) about their frame origins; the other bodies are massless.
    gravity : float
        a_g [m/s^2].
    """

    joints: Dict[int, Joint]
    inertia: Dict[int, list]
    gravity: float = GRAVITY

    @property
    def n_joints(self) -> int:
        """Number of joints n, the track joint included (6 for the car of sec. 2.2; 3 for a
        rigid car on the road, joints 1-3 only)."""
        return max(self.joints)


@dataclasses.dataclass(frozen=True)
class TrackJoint:
    r"""The track joint at one value of ``q1`` (numbers computed from the track spline).

    Attributes
    ----------
    R : 3x3 nested sequence of floats
        :math:`R_{0,1}(q_1) = [t\ n\ m]`, eq (9).
    J : sequence of 6 floats
        :math:`J_1^1 = |p_{,q_1}| [t^S; \Omega^S]`, eq (12b); ``[1,0,0,Ωx,Ωy,Ωz]`` when
        ``q1`` is the arc length [-, 1/m].
    dJ : sequence of 6 floats
        :math:`J^1_{1,q_1} = dJ_1^1/dq_1` [1/m, 1/m^2].
    p : sequence of 3 floats, optional
        Spine point :math:`C(q_1)` [m] (only for global positions).
    """

    R: Sequence
    J: Sequence
    dJ: Sequence
    p: Sequence = (0.0, 0.0, 0.0)


@dataclasses.dataclass
class Kinematics:
    """Result of ABA step 1: relative postures and body twists.

    Attributes
    ----------
    g : dict int -> (R, p)
        ``g[k] = g_{k-1,k}(q_k)`` for k = 1..6 (``g[1] = g_{0,1}``).
    V : dict int -> list of 6
        Body twists :math:`V_k^k` [m/s, rad/s] for k = 1..6.
    """

    g: dict
    V: dict

    def posture(self, k_from: int, k_to: int):
        """Posture :math:`g_{i,j}` for ``0 <= i < j <= n`` as a product of relative postures."""
        n = len(self.g)
        if not 0 <= k_from < k_to <= n:
            raise ValueError(f"need 0 <= k_from < k_to <= {n}, got {k_from}, {k_to}")
        g = self.g[k_from + 1]
        for k in range(k_from + 2, k_to + 1):
            g = lie.compose(g, self.g[k])
        return g


@dataclasses.dataclass
class ABAResult:
    """Result of ABA steps 2-3 and of eq (24).

    Attributes
    ----------
    qdd : list of 6
        Joint accelerations q̈1..q̈6 [m/s^2 or rad/s^2] (index 0 is q̈1).
    Vdot : dict int -> list of 6
        Body accelerations :math:`\\dot V_k^k` including the fictitious gravity
        acceleration of eq (23a).
    M_hat, b_hat : dict int -> 6x6 / 6
        Articulated-body inertias and bias forces (Step 2) of bodies 2..6 (and of body 1
        when it carries inertia or an external wrench; otherwise only the products with
        J_1^1 are needed and they are evaluated in frame 2).
    W3J : list of 6
        Structural wrench on body 3 through joint 3, in {B3} [N, N m], eq (24).
    """

    qdd: list
    Vdot: dict
    M_hat: dict
    b_hat: dict
    W3J: list


def _scalar(x):
    """``float(x)`` for a number; a symbol (CasADi, for the parameter sensitivities of
    :mod:`pyomo_lap.post.sensitivities`) is kept as it is."""
    return float(x) if is_number(x) else x


def vehicle_chain(*, h_vip: float, unsprung_mass: float, unsprung_com_height: float,
                  unsprung_inertia: Sequence[float], sprung_mass: float,
                  sprung_com_height: float, sprung_inertia: Sequence[float],
                  gravity: float = GRAVITY) -> Chain:
    """Build the chain of sec. 2.2 from geometric and inertial data.

    Parameters
    ----------
    h_vip : float
        Height of the vehicle invariant point O4 = O5 = O6 above O3 (road level) [m]; on the
        no-roll axis (MODEL_NOTES, "Chain").
    unsprung_mass : float
        Mass of body 3 [kg].
    unsprung_com_height : float
        Height of its centre of mass above O3 (wheel-centre height) [m].
    unsprung_inertia : 3 floats
        Principal moments (Ixx, Iyy, Izz) of body 3 about its centre of mass [kg m^2].
    sprung_mass : float
        Mass of body 6 [kg].
    sprung_com_height : float
        Height of G6 above O6 at zero heave [m] (``h - h_vip``).
    sprung_inertia : 3 floats
        Principal moments of body 6 about G6 [kg m^2] (Table 1).
    gravity : float
        a_g [m/s^2].

    Returns
    -------
    Chain

    Raises
    ------
    ValueError
        If a mass or a principal moment is not positive.
    """
    for name, val in [("unsprung_mass", unsprung_mass), ("sprung_mass", sprung_mass)]:
        if is_number(val) and not val > 0:
            raise ValueError(f"{name} must be > 0 kg, got {val!r}")
    for name, vals in [("unsprung_inertia", unsprung_inertia), ("sprung_inertia", sprung_inertia)]:
        if len(vals) != 3 or not all(v > 0 for v in vals if is_number(v)):
            raise ValueError(f"{name} must be 3 positive moments [kg m^2], got {vals!r}")
    I = lie.IDENTITY
    joints = {
        2: Joint("q2", (0, 1, 0, 0, 0, 0), I),
        3: Joint("q3", (0, 0, 0, 0, 0, 1), I),
        4: Joint("q4", (0, 0, 1, 0, 0, 0), (lie.IDENTITY[0], (0, 0, _scalar(h_vip)))),
        5: Joint("q5", (0, 0, 0, 0, 1, 0), I),
        6: Joint("q6", (0, 0, 0, 1, 0, 0), I),
    }

    def diag(v):
        return [[_scalar(v[0]), 0, 0], [0, _scalar(v[1]), 0], [0, 0, _scalar(v[2])]]

    inertia = {
        3: lie.spatial_inertia(_scalar(unsprung_mass), (0, 0, _scalar(unsprung_com_height)),
                               diag(unsprung_inertia)),
        6: lie.spatial_inertia(_scalar(sprung_mass), (0, 0, _scalar(sprung_com_height)),
                               diag(sprung_inertia)),
    }
    return Chain(joints=joints, inertia=inertia, gravity=_scalar(gravity))


def _name_vec(nm: Namer, tag: str, v):
    return [nm(f"{tag}_{i}", x) for i, x in enumerate(v)]


def _name_sym(nm: Namer, tag: str, M):
    out = [[0] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            out[i][j] = nm(f"{tag}_{i}{j}", M[i][j])
            out[j][i] = out[i][j]
    return out


def forward_kinematics(chain: Chain, track: TrackJoint, q: Sequence, qd: Sequence,
                       namer: Optional[Namer] = None) -> Kinematics:
    """ABA Step 1: postures and body twists, preprint Step 1 and eq (12).

    Parameters
    ----------
    chain : Chain
    track : TrackJoint
        Track joint at the current ``q1``.
    q, qd : sequences of n scalars (n = ``chain.n_joints``, 6 for the car)
        Joint coordinates q1..q6 [m, m, rad, m, rad, rad] and their rates (q1 itself is
        only used through ``track``).
    namer : callable, optional
        ``namer(tag, value)`` returning a named stand-in for ``value``.

    Returns
    -------
    Kinematics
    """
    nm = namer or _identity_namer
    n = chain.n_joints
    if len(q) != n or len(qd) != n:
        raise ValueError(f"q and qd must have {n} entries (q1..q{n}), got {len(q)} and {len(qd)}")
    g = {1: ([list(r) for r in track.R], list(track.p))}
    V = {1: [mul(j, qd[0]) for j in track.J]}
    for k in range(2, n + 1):
        jt = chain.joints[k]
        gk = lie.compose(jt.offset, lie.exp_twist(jt.axis, q[k - 1]))
        g[k] = gk
        Vk = lie.Ad_inv_apply(gk, V[k - 1])
        Vk = [add(a, mul(x, qd[k - 1])) for a, x in zip(Vk, jt.axis)]
        V[k] = _name_vec(nm, f"V{k}", Vk) if k >= 3 else Vk
    return Kinematics(g=g, V=V)


def aba(chain: Chain, track: TrackJoint, kin: Kinematics, qd: Sequence, tau: Sequence,
        wrench_ext: Mapping[int, Sequence], namer: Optional[Namer] = None) -> ABAResult:
    r"""ABA Steps 2 and 3 with the tailored track joint, and the structural wrench (24).

    Parameters
    ----------
    chain : Chain
    track : TrackJoint
    kin : Kinematics
        Output of :func:`forward_kinematics` for the same state.
    qd : sequence of n scalars
        Joint rates q̇1..q̇n (n = ``chain.n_joints``, 6 for the car).
    tau : sequence of n scalars
        Joint forces/torques τ1..τn [N, N, N m, N, N m, N m] (τ1 = τ2 = τ3 = 0 for the car;
        τ4..τ6 from springs and dampers, eq 18).
    wrench_ext : mapping int -> 6 scalars
        External wrenches :math:`W_{kE}^k` on the bodies, each in its own frame [N, N m]
        (the car: body 3 tyre in-plane wrench (22b), body 6 aerodynamics (20)).
    namer : callable, optional

    Returns
    -------
    ABAResult

    Notes
    -----
    Step 2 (articulated-body inertia and bias force, eq 17): with
    :math:`U = \hat M_l X_l`, :math:`d = X_l^T U`, :math:`u = \tau_l - X_l^T \hat b_l`,
    :math:`\bar M_l = \hat M_l - U U^T/d`, :math:`c_l = -\mathrm{ad}_{X_l\dot q_l} V_l`,
    :math:`\hat M_k = M_k + A^T \bar M_l A`,
    :math:`\hat b_k = b_k + A^T(\hat b_l + \bar M_l c_l + U u/d)`, with
    :math:`A = \mathrm{Ad}_{g_{k,l}}^{-1}` and :math:`b_k = \mathrm{ad}^*_{V_k} M_k V_k - W_{kE}`
    (eq 14). Step 3: :math:`\ddot q_l = (u - U^T a_l)/d`, :math:`\dot V_l = a_l + X_l\ddot q_l`
    with :math:`a_l = A \dot V_k + c_l`; the track joint uses :math:`J_1^1` and
    :math:`J^1_{1,q_1}\dot q_1^2`, gravity enters as :math:`\dot V_0^0 = [0,0,a_g,0,0,0]`
    (eq 23a). Finally :math:`W_{3J}^3 = \hat M_3 \dot V_3 + \hat b_3` (eq 24).
    """
    nm = namer or _identity_namer
    b = _bias_forces(chain, kin.V, wrench_ext)
    art = _articulated_bodies(chain, kin, qd, tau, wrench_ext, b, nm)
    qdd, Vdot = _accelerations(chain, track, kin, qd, tau, art, nm)
    W3J = [add(x, y) for x, y in zip(lie.matvec(art.M_hat[3], Vdot[3]), art.b_hat[3])]
    W3J = _name_vec(nm, "W3J", W3J)
    return ABAResult(qdd=qdd, Vdot=Vdot, M_hat=art.M_hat, b_hat=art.b_hat, W3J=W3J)


def _bias_forces(chain: Chain, V: dict, wrench_ext: Mapping[int, Sequence]) -> dict:
    """Bias forces of the bodies, eq (14): :math:`b_k = \\mathrm{ad}^*_{V_k} M_k V_k - W_{kE}`."""
    b = {}
    for k in range(1, chain.n_joints + 1):
        Mk = chain.inertia.get(k)
        bk = [0] * 6
        if Mk is not None:
            bk = lie.ad_star_apply(V[k], lie.matvec(Mk, V[k]))
        if k in wrench_ext:
            bk = [sub(a, w) for a, w in zip(bk, wrench_ext[k])]
        b[k] = bk
    return b


@dataclasses.dataclass
class _ArticulatedBodies:
    """Result of ABA Step 2 (:func:`_articulated_bodies`), per joint ``l`` = n .. 2."""

    M_hat: dict      # articulated-body inertias
    b_hat: dict      # and bias forces
    U: dict          # M_hat_l X_l
    inv_d: dict      # 1 / (X_l^T U_l)
    u: dict          # tau_l - X_l^T b_hat_l
    c: dict          # -ad_{X_l qd_l} V_l
    Mbar: dict       # M_hat_l - U U^T / d
    bbar: dict       # b_hat_l + Mbar_l c_l + U u / d
    lean_root: bool  # body 1 massless and free of wrenches: only needed in frame 2


def _articulated_bodies(chain: Chain, kin: Kinematics, qd, tau, wrench_ext, b: dict,
                        nm: Namer) -> _ArticulatedBodies:
    """ABA Step 2: articulated-body inertias and bias forces, eq (17), from body n down."""
    n = chain.n_joints
    V = kin.V
    M_hat = {n: chain.inertia.get(n) or [[0] * 6 for _ in range(6)]}
    b_hat = {n: _name_vec(nm, f"b_hat{n}", b[n])}
    U, d, inv_d, u, c, Mbar, bbar = {}, {}, {}, {}, {}, {}, {}
    # body 1 (massless, no external wrench) is only needed through J^T M_hat1 J and
    # J^T b_hat1, which are evaluated in frame 2 (Step 3) instead of forming M_hat1
    lean_root = 1 not in chain.inertia and 1 not in wrench_ext
    for l in range(n, 1, -1):
        k = l - 1
        X = chain.joints[l].axis
        Ml, bl = M_hat[l], b_hat[l]
        U[l] = _name_vec(nm, f"U{l}", lie.matvec(Ml, X))
        dl = lie.dot(X, U[l])
        d[l] = nm(f"d{l}", dl)
        inv_d[l] = nm(f"inv_d{l}", 1.0 / d[l])
        u[l] = nm(f"u{l}", sub(tau[l - 1], lie.dot(X, bl)))
        Xq = [mul(x, qd[l - 1]) for x in X]
        c[l] = _name_vec(nm, f"c{l}", [neg(x) for x in lie.ad_apply(Xq, V[l])])
        Mb = [[sub(Ml[i][j], mul(mul(U[l][i], U[l][j]), inv_d[l])) for j in range(6)]
              for i in range(6)]
        Mbar[l] = _name_sym(nm, f"Mbar{l}", Mb)
        Mbc = lie.matvec(Mbar[l], c[l])
        ud = mul(u[l], inv_d[l])
        bbar[l] = [total([bl[i], Mbc[i], mul(U[l][i], ud)]) for i in range(6)]
        if k == 1 and lean_root:
            bbar[l] = _name_vec(nm, f"b_bar{l}", bbar[l])
            break
        Mk = lie.congruence_to_parent(kin.g[l], Mbar[l])
        if k in chain.inertia:
            Mk = [[add(a, bb) for a, bb in zip(ra, rb)] for ra, rb in zip(Mk, chain.inertia[k])]
        M_hat[k] = _name_sym(nm, f"M_hat{k}", Mk)
        bk = [add(a, bb) for a, bb in zip(b[k], lie.Ad_inv_T_apply(kin.g[l], bbar[l]))]
        b_hat[k] = _name_vec(nm, f"b_hat{k}", bk)
    return _ArticulatedBodies(M_hat=M_hat, b_hat=b_hat, U=U, inv_d=inv_d, u=u, c=c, Mbar=Mbar,
                              bbar=bbar, lean_root=lean_root)


def _accelerations(chain: Chain, track: TrackJoint, kin: Kinematics, qd, tau,
                   art: _ArticulatedBodies, nm: Namer) -> tuple:
    """ABA Step 3: joint accelerations (list, q̈1 first) and body accelerations (dict), from
    the track joint (with :math:`J_1^1`, :math:`J^1_{1,q_1}\\dot q_1^2` and gravity, eq 23a)
    up to body n."""
    n = chain.n_joints
    R = track.R
    g = chain.gravity
    a0 = [mul(R[2][0], g), mul(R[2][1], g), mul(R[2][2], g), 0, 0, 0]  # Ad_{g10} Vdot_0^0
    qd1sq = mul(qd[0], qd[0])
    a1 = [add(x, mul(dj, qd1sq)) for x, dj in zip(a0, track.dJ)]
    J = list(track.J)
    if art.lean_root:
        # J^T M_hat1 y = (A J)^T Mbar2 (A y) and J^T b_hat1 = (A J)^T bbar2, A = Ad_{g12}^-1
        J2 = lie.Ad_inv_apply(kin.g[2], J)
        MJ2 = lie.matvec(art.Mbar[2], J2)
        a12 = lie.Ad_inv_apply(kin.g[2], a1)
        num = sub(tau[0], add(lie.dot(MJ2, a12), lie.dot(J2, art.bbar[2])))
        den = lie.dot(J2, MJ2)
    else:
        MJ = lie.matvec(art.M_hat[1], J)
        num = sub(tau[0], add(lie.dot(MJ, a1), lie.dot(J, art.b_hat[1])))
        den = lie.dot(J, MJ)
    qdd = [0] * n
    qdd[0] = nm("qdd1", num / den)
    Vdot = {1: [add(x, mul(j, qdd[0])) for x, j in zip(a1, J)]}
    for l in range(2, n + 1):
        k = l - 1
        al = [add(x, y) for x, y in zip(lie.Ad_inv_apply(kin.g[l], Vdot[k]), art.c[l])]
        al = _name_vec(nm, f"a{l}", al)
        ql = mul(sub(art.u[l], lie.dot(art.U[l], al)), art.inv_d[l])
        qdd[l - 1] = nm(f"qdd{l}", ql)
        X = chain.joints[l].axis
        Vdot[l] = [add(x, mul(xx, qdd[l - 1])) for x, xx in zip(al, X)]
    return qdd, Vdot
