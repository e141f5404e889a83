r"""Unit tests of the race car's chain (:func:`pyomo_lap.vehicle.car.build_chain`, a
:class:`pyomo_lap.spatial.tree.KinematicTree` with a track joint): forward kinematics and the
Articulated-Body Algorithm (:func:`pyomo_lap.spatial.dynamics.hybrid_dynamics`) as the car uses
them (:func:`pyomo_lap.vehicle.car.car_equations`).

The reference dynamics here is written from scratch in plain NumPy and shares nothing with
``pyomo_lap.spatial.lie`` / ``pyomo_lap.spatial.tree`` except the *description* of the chain
(bodies numbered 1..6 as in the preprint; the tree's body ``k - 1`` is body ``k``):

* poses ``g_{0,k}(q)`` are 4x4 homogeneous matrices of an analytic 3D test track (a climbing
  helix with variable banking, parametrised by arc length) and of the joints of the chain
  (2 prismatic y, 3 revolute z, 4 prismatic z above ``h_vip``, 5 revolute y, 6 revolute x);
* body Jacobians ``J_k(q)`` (body frame) are 4th-order central finite differences of the poses,
  ``J_k[:, i] = vee(g^-1 dg/dq_i)``;
* body twists and accelerations along a motion ``q(t) = q + qd t + qdd t^2 / 2`` are finite
  differences in time of the poses (``g^-1 g'' = dV^ + V^ V^``);
* the Newton-Euler equations of each body are written about its centre of mass
  (``f = m a_G``, ``n_G = I_G dw + w x I_G w``), gravity is a real force ``-m g e_z``
  (not the fictitious base acceleration the ABA uses);
* ``M(q) = sum_k J_k^T M_k J_k``, ``b(q, qd) = sum_k J_k^T (W_in,k(qdd = 0) - W_grav,k)``,
  ``qdd = M^-1 (tau + sum_k J_k^T W_ext,k - b)``.
"""
from __future__ import annotations

import numbers
from types import SimpleNamespace

import numpy as np
import pytest

import pyomo.environ as pyo
from pyomo.core.expr.visitor import replace_expressions

from pyomo_lap.spatial import tree as tr
from pyomo_lap.spatial import dynamics as dyn
from pyomo_lap.vehicle.car import UNSPRUNG, build_chain

G_ACC = 9.81

# vehicle data (FSAE-like, chosen only to be generic: distinct inertias, com off the VIP)
H_VIP = 0.30
M_U, H_U, I_U = 45.0, 0.28, (12.0, 6.0, 14.0)
M_S, H_S, I_S = 230.0, 0.14, (35.0, 85.0, 100.0)

# test track: helix C(th) = (r cos th, r sin th, c th), th = s / L, L = sqrt(r^2 + c^2),
# banked about the tangent by nu(s) = NU0 + NU1 sin(KAP s + PHI)
TR_R, TR_C = 35.0, 3.0
TR_L = np.hypot(TR_R, TR_C)
NU0, NU1, KAP, PHI = 0.15, 0.10, 2 * np.pi / 60.0, 0.4


# --------------------------------------------------------------------------- numpy helpers
def np_hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def twist_vee(T):
    return np.array([T[0, 3], T[1, 3], T[2, 3], T[2, 1], T[0, 2], T[1, 0]])


def twist_matrix(V):
    T = np.zeros((4, 4))
    T[:3, :3] = np_hat(V[3:])
    T[:3, 3] = V[:3]
    return T


def hom(R=None, p=(0.0, 0.0, 0.0)):
    G = np.eye(4)
    if R is not None:
        G[:3, :3] = R
    G[:3, 3] = p
    return G


def rot(axis, a):
    c, s = np.cos(a), np.sin(a)
    if axis == 0:
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == 1:
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def ginv(G):
    R, p = G[:3, :3], G[:3, 3]
    return hom(R.T, -R.T @ p)


# --------------------------------------------------------------------------- the test track
def nu(s):
    return NU0 + NU1 * np.sin(KAP * s + PHI)


def nu_s(s):
    return NU1 * KAP * np.cos(KAP * s + PHI)


def nu_ss(s):
    return -NU1 * KAP ** 2 * np.sin(KAP * s + PHI)


def track_pose(s):
    """R_{0,1}(s) = [t n m] and C(s), straight from the definitions of sec. 2.1."""
    th = s / TR_L
    C = np.array([TR_R * np.cos(th), TR_R * np.sin(th), TR_C * th])
    t = np.array([-TR_R * np.sin(th), TR_R * np.cos(th), TR_C]) / TR_L
    th_h = np.array([t[0], t[1], 0.0]) / np.hypot(t[0], t[1])
    v = np.cross([0.0, 0.0, 1.0], th_h)          # horizontal, points left
    w = np.cross(t, v)
    n = np.cos(nu(s)) * v + np.sin(nu(s)) * w    # {H} rotated about t by the banking
    m = -np.sin(nu(s)) * v + np.cos(nu(s)) * w
    return np.column_stack([t, n, m]), C


def track_joint(s):
    """TrackJoint from closed forms: Omega^ = R^T dR/ds of the banked helix, and d/ds of it."""
    R, C = track_pose(s)
    k = TR_R / TR_L ** 2
    a = nu(s)
    Om = [TR_C / TR_L ** 2 + nu_s(s), k * np.sin(a), k * np.cos(a)]
    dOm = [nu_ss(s), k * np.cos(a) * nu_s(s), -k * np.sin(a) * nu_s(s)]
    return tr.TrackJoint(R=R.tolist(), J=[1.0, 0.0, 0.0] + Om, dJ=[0.0, 0.0, 0.0] + dOm,
                         p=C.tolist())


FLAT = tr.TrackJoint(R=np.eye(3).tolist(), J=[1.0, 0, 0, 0, 0, 0], dJ=[0.0] * 6)


def flat_pose(s):
    return np.eye(3), np.array([s, 0.0, 0.0])


# --------------------------------------------------------------------------- reference model
def make_chain():
    """The car's tree (:func:`pyomo_lap.vehicle.car.build_chain`) of the data above."""
    return build_chain(SimpleNamespace(h_vip=H_VIP, m_u=M_U, wheel_radius=H_U, unsprung_inertia=I_U,
                                       m_s=M_S, h=H_VIP + H_S, Ixx=I_S[0], Iyy=I_S[1], Izz=I_S[2],
                                       gravity=G_ACC))


# body -> (mass, com in body frame, inertia about com)
BODIES = {3: (M_U, np.array([0.0, 0.0, H_U]), np.diag(I_U)),
          6: (M_S, np.array([0.0, 0.0, H_S]), np.diag(I_S))}


def poses(q, pose1):
    """[g_{0,1}, ..., g_{0,6}] as 4x4 matrices."""
    R1, C1 = pose1(q[0])
    rel = [hom(R1, C1),
           hom(p=(0.0, q[1], 0.0)),
           hom(rot(2, q[2])),
           hom(p=(0.0, 0.0, H_VIP + q[3])),
           hom(rot(1, q[4])),
           hom(rot(0, q[5]))]
    out, G = [], np.eye(4)
    for Gk in rel:
        G = G @ Gk
        out.append(G)
    return out


D1 = np.array([1.0, -8.0, 0.0, 8.0, -1.0]) / 12.0           # 4th-order first derivative
D2 = np.array([-1.0, 16.0, -30.0, 16.0, -1.0]) / 12.0       # 4th-order second derivative
OFFS = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


def body_jacobians(q, pose1, h=1e-3):
    """J_k (6 x 6, body frame) for k = 1..6 by central differences of g_{0,k}(q)."""
    q = np.asarray(q, dtype=float)
    G0 = poses(q, pose1)
    Gi = [ginv(G) for G in G0]
    Js = [np.zeros((6, 6)) for _ in range(6)]
    for i in range(6):
        samples = [poses(q + o * h * np.eye(6)[i], pose1) for o in OFFS]
        for k in range(6):
            dG = sum(c * s[k] for c, s in zip(D1, samples)) / h
            Js[k][:, i] = twist_vee(Gi[k] @ dG)
    return Js


def body_motion(q, qd, qdd, pose1, h=4e-4):
    """Body twists V_k and accelerations dV_k along q(t) = q + qd t + qdd t^2/2."""
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    samples = [poses(q + qd * (o * h) + 0.5 * qdd * (o * h) ** 2, pose1) for o in OFFS]
    V, Vd = [], []
    for k in range(6):
        G = samples[2][k]
        Gi = ginv(G)
        Gd = sum(c * s[k] for c, s in zip(D1, samples)) / h
        Gdd = sum(c * s[k] for c, s in zip(D2, samples)) / h ** 2
        Vh = Gi @ Gd
        Vk = twist_vee(Vh)
        Vd.append(twist_vee(Gi @ Gdd - Vh @ Vh))
        V.append(Vk)
    return V, Vd


def newton_euler(k, V, Vd):
    """Inertial wrench [f; n about the body origin] of body k in its frame (about the com)."""
    m, c, Ic = BODIES[k]
    v, w = V[:3], V[3:]
    vd, wd = Vd[:3], Vd[3:]
    a_c = vd + np.cross(wd, c) + np.cross(w, v + np.cross(w, c))
    f = m * a_c
    n = Ic @ wd + np.cross(w, Ic @ w) + np.cross(c, f)
    return np.concatenate([f, n])


def inertia_matrix(k):
    """Spatial inertia of body k: the part of newton_euler linear in dV at rest."""
    return np.column_stack([newton_euler(k, np.zeros(6), e) for e in np.eye(6)])


def gravity_wrench(k, G0k):
    m, c, _ = BODIES[k]
    f = m * G0k[:3, :3].T @ np.array([0.0, 0.0, -G_ACC])
    return np.concatenate([f, np.cross(c, f)])


def reference_dynamics(q, qd, tau, wext, pose1):
    """qdd = M^-1 (tau + Q_ext - b) with M by CRBA-style sums and b by Newton-Euler."""
    G0 = poses(q, pose1)
    Js = body_jacobians(q, pose1)
    V, Vd0 = body_motion(q, qd, np.zeros(6), pose1)
    M = np.zeros((6, 6))
    rhs = np.asarray(tau, dtype=float).copy()
    for k in BODIES:
        Jk = Js[k - 1]
        M += Jk.T @ inertia_matrix(k) @ Jk
        rhs -= Jk.T @ (newton_euler(k, V[k - 1], Vd0[k - 1]) - gravity_wrench(k, G0[k - 1]))
    for k, W in wext.items():
        rhs += Js[k - 1].T @ np.asarray(W, dtype=float)
    return np.linalg.solve(M, rhs), M, Js


def wrench_to_frame3(G3k, W):
    """Move a wrench [f; n] from frame k (about O_k) to frame 3 (about O_3)."""
    R, p = G3k[:3, :3], G3k[:3, 3]
    f = R @ W[:3]
    return np.concatenate([f, R @ W[3:] + np.cross(p, f)])


def reference_W3J(q, qd, qdd, wext, pose1):
    """Wrench on body 3 through joint 3 from the Newton-Euler of the subtree 3..6, in {B3}."""
    G0 = poses(q, pose1)
    V, Vd = body_motion(q, qd, qdd, pose1)
    G3i = ginv(G0[2])
    W = np.zeros(6)
    for k in range(3, 7):
        Wk = -np.asarray(wext.get(k, np.zeros(6)), dtype=float)
        if k in BODIES:
            Wk = Wk + newton_euler(k, V[k - 1], Vd[k - 1]) - gravity_wrench(k, G0[k - 1])
        W += wrench_to_frame3(G3i @ G0[k - 1], Wk)
    return W


# --------------------------------------------------------------------------- code under test
def run_aba(chn, track, q, qd, tau, wext, namer=None, wrenches=(UNSPRUNG,)):
    """The route of :func:`pyomo_lap.vehicle.car.car_equations`: the forward kinematics, then
    the ABA on them with the joint wrench of the unsprung body only (the track joint's body
    is then treated in frame 2); ``wext`` by the preprint's body numbers 1..6. Returns the
    kinematics and the ABA's result, both indexed by tree body (``k - 1`` for body ``k``)."""
    tj = {0: track}
    kin = tr.forward_kinematics(chn, list(q), list(qd), track=tj, namer=namer)
    res = dyn.hybrid_dynamics(chn, list(q), list(qd), [None] * 6, list(tau), (),
                             f_ext={k - 1: list(w) for k, w in wext.items()}, track=tj,
                             namer=namer, kin=kin, wrenches=wrenches)
    return kin, res


def as_float(v):
    return np.array([float(pyo.value(x)) for x in v])


def random_state(rng, s_range=(0.0, 200.0)):
    q = np.array([rng.uniform(*s_range), rng.uniform(-2.0, 2.0), rng.uniform(-0.4, 0.4),
                  rng.uniform(-0.05, 0.05), rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)])
    qd = np.array([rng.uniform(8.0, 40.0), rng.uniform(-2.0, 2.0), rng.uniform(-0.8, 0.8),
                   rng.uniform(-0.3, 0.3), rng.uniform(-0.6, 0.6), rng.uniform(-0.6, 0.6)])
    tau = np.array([rng.uniform(-500, 500), rng.uniform(-300, 300), rng.uniform(-200, 200),
                    M_S * G_ACC + rng.uniform(-800, 800), rng.uniform(-300, 300),
                    rng.uniform(-300, 300)])
    wext = {3: np.concatenate([rng.uniform(-2000, 2000, 3), rng.uniform(-500, 500, 3)]),
            6: np.concatenate([rng.uniform(-500, 500, 3), rng.uniform(-200, 200, 3)])}
    return q, qd, tau, wext


# --------------------------------------------------------------------------- tests
@pytest.mark.unit
def test_test_track_closed_forms_match_finite_differences():
    """Guard for the reference itself: J and dJ of the analytic track are R^T dR/ds etc."""
    for s in (0.0, 17.3, 61.0, 140.5):
        tj = track_joint(s)
        h = 1e-3
        Js = [twist_vee(ginv(hom(*track_pose(s))) @ sum(
            c * hom(*track_pose(s + o * h)) for c, o in zip(D1, OFFS)) / h)
            for s in (s + o * h for o in OFFS)]
        np.testing.assert_allclose(Js[2], tj.J, rtol=0, atol=1e-10)
        dJ = sum(c * J for c, J in zip(D1, Js)) / h
        np.testing.assert_allclose(dJ, tj.dJ, rtol=0, atol=1e-7)
        R = np.asarray(tj.R)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-14)
        assert np.max(np.abs(tj.dJ)) > 1e-4  # the track really varies


@pytest.mark.unit
def test_forward_kinematics_twists_match_pose_derivatives():
    rng = np.random.default_rng(10)
    chn = make_chain()
    for _ in range(4):
        q, qd, _, _ = random_state(rng)
        kin = tr.forward_kinematics(chn, list(q), list(qd), track={0: track_joint(q[0])})
        G0 = poses(q, track_pose)
        Js = body_jacobians(q, track_pose)
        for k in range(1, 7):
            np.testing.assert_allclose(as_float(kin.V[k - 1]), Js[k - 1] @ qd, rtol=1e-8,
                                       atol=1e-8)
            R, p = kin.pose[k - 1]
            np.testing.assert_allclose(hom(np.array(R, dtype=float), np.array(p, dtype=float)),
                                       G0[k - 1], rtol=1e-12, atol=1e-12)


@pytest.mark.unit
@pytest.mark.parametrize("seed", [11, 12, 13, 14, 15, 16])
def test_aba_equals_inverse_mass_matrix_solution(seed):
    rng = np.random.default_rng(seed)
    chn = make_chain()
    q, qd, tau, wext = random_state(rng)
    _, res = run_aba(chn, track_joint(q[0]), q, qd, tau, wext)
    qdd = as_float(res.qdd)
    qdd_ref, M, _ = reference_dynamics(q, qd, tau, wext, track_pose)
    # the reference mass matrix is a proper one
    np.testing.assert_allclose(M, M.T, rtol=1e-9, atol=1e-9)
    assert np.linalg.eigvalsh(M).min() > 0
    np.testing.assert_allclose(qdd, qdd_ref, rtol=1e-6, atol=1e-6 * np.max(np.abs(qdd_ref)))


@pytest.mark.unit
def test_aba_with_wrenches_on_every_body():
    """Massless bodies 1, 2, 4, 5 may carry external wrenches too."""
    rng = np.random.default_rng(17)
    chn = make_chain()
    q, qd, tau, _ = random_state(rng)
    wext = {k: rng.uniform(-400, 400, 6) for k in range(1, 7)}
    _, res = run_aba(chn, track_joint(q[0]), q, qd, tau, wext)
    qdd_ref, _, _ = reference_dynamics(q, qd, tau, wext, track_pose)
    qdd = as_float(res.qdd)
    np.testing.assert_allclose(qdd, qdd_ref, rtol=1e-6, atol=1e-6 * np.max(np.abs(qdd_ref)))
    W3J_ref = reference_W3J(q, qd, qdd_ref, wext, track_pose)
    np.testing.assert_allclose(as_float(res.F[UNSPRUNG]), W3J_ref, rtol=1e-6,
                               atol=1e-6 * np.max(np.abs(W3J_ref)))


@pytest.mark.unit
@pytest.mark.parametrize("seed", [21, 22, 23, 24])
@pytest.mark.parametrize("wrenches", [(UNSPRUNG,), None], ids=["lean-root", "all-wrenches"])
def test_aba_accelerations_and_structural_wrench(seed, wrenches):
    """Both routes of the track joint: in frame 2 (the car's, only W3J asked for) and with
    the articulated inertia of body 1 formed (every joint wrench asked for)."""
    rng = np.random.default_rng(seed)
    chn = make_chain()
    q, qd, tau, wext = random_state(rng)
    _, res = run_aba(chn, track_joint(q[0]), q, qd, tau, wext, wrenches=wrenches)
    qdd = as_float(res.qdd)
    G0 = poses(q, track_pose)
    # body accelerations: the ABA's include the fictitious base acceleration [0, 0, g, 0, 0, 0]
    _, Vd = body_motion(q, qd, qdd, track_pose)
    for k in range(1, 7):
        grav = np.concatenate([G0[k - 1][:3, :3].T @ np.array([0.0, 0.0, G_ACC]), np.zeros(3)])
        ref = Vd[k - 1] + grav
        np.testing.assert_allclose(as_float(res.Vdot[k - 1]), ref, rtol=1e-6,
                                   atol=1e-6 * np.max(np.abs(ref)))
    # W3J from the Newton-Euler of the subtree 3..6, with the reference accelerations
    qdd_ref, _, _ = reference_dynamics(q, qd, tau, wext, track_pose)
    np.testing.assert_allclose(qdd, qdd_ref, rtol=1e-6, atol=1e-6 * np.max(np.abs(qdd_ref)))
    W3J_ref = reference_W3J(q, qd, qdd_ref, wext, track_pose)
    W3J = as_float(res.F[UNSPRUNG])
    np.testing.assert_allclose(W3J, W3J_ref, rtol=1e-6, atol=1e-6 * np.max(np.abs(W3J_ref)))
    # the joint-3 (yaw) component of the transmitted wrench is the joint torque
    assert W3J[5] == pytest.approx(tau[2], rel=1e-9, abs=1e-9)


@pytest.mark.unit
def test_flat_track_reference_agrees_as_well():
    rng = np.random.default_rng(31)
    chn = make_chain()
    q, qd, tau, wext = random_state(rng)
    _, res = run_aba(chn, FLAT, q, qd, tau, wext)
    qdd_ref, _, _ = reference_dynamics(q, qd, tau, wext, flat_pose)
    np.testing.assert_allclose(as_float(res.qdd), qdd_ref, rtol=1e-6,
                               atol=1e-6 * np.max(np.abs(qdd_ref)))


@pytest.mark.unit
@pytest.mark.parametrize("q2,q3,q4", [(0.0, 0.0, 0.0), (1.3, -0.7, -0.02)])
def test_flat_ground_static_equilibrium(q2, q3, q4):
    chn = make_chain()
    q = [12.0, q2, q3, q4, 0.0, 0.0]
    qd = [0.0] * 6
    tau = [0.0, 0.0, 0.0, M_S * G_ACC, 0.0, 0.0]
    _, res = run_aba(chn, FLAT, q, qd, tau, {})
    np.testing.assert_allclose(as_float(res.qdd), np.zeros(6), rtol=0, atol=1e-10)
    np.testing.assert_allclose(as_float(res.F[UNSPRUNG]), [0, 0, (M_S + M_U) * G_ACC, 0, 0, 0],
                               rtol=1e-12, atol=1e-9)


@pytest.mark.unit
def test_flat_ground_free_fall_of_the_sprung_mass():
    chn = make_chain()
    q = [3.0, 0.4, 0.2, 0.01, 0.0, 0.0]
    _, res = run_aba(chn, FLAT, q, [0.0] * 6, [0.0] * 6, {})
    np.testing.assert_allclose(as_float(res.qdd), [0, 0, 0, -G_ACC, 0, 0], rtol=0, atol=1e-10)
    # the ground then carries only the unsprung weight
    np.testing.assert_allclose(as_float(res.F[UNSPRUNG]), [0, 0, M_U * G_ACC, 0, 0, 0],
                               rtol=1e-12, atol=1e-9)


class ExpressionNamer:
    """``namer`` callback that turns intermediates into named Pyomo ``Expression`` components
    (as the OCP builder does), plus a memoised evaluation of them.

    ``pyo.value()`` walks named expressions as trees without caching; the ABA outputs are deep
    DAGs (each q''_l reuses a_l, which reuses q''_{l-1}, ...), so plain ``value(qdd6)`` takes
    minutes. :meth:`value` evaluates every named expression once, in creation order, with
    ``pyo.value`` on its own body (the named expressions it refers to replaced by their values).
    """

    def __init__(self, model):
        self.model = model
        self.named = []

    def __call__(self, tag, value):
        self.model.add_component(tag, pyo.Expression(expr=value))
        comp = self.model.component(tag)
        self.named.append(comp)
        return comp

    def _eval(self, expr, subs):
        if isinstance(expr, numbers.Number):
            return float(expr)
        return float(pyo.value(replace_expressions(expr, subs,
                                                   descend_into_named_expressions=False,
                                                   remove_named_expressions=False)))

    def value(self, exprs):
        subs = {}
        for comp in self.named:
            subs[id(comp)] = self._eval(comp.expr, subs)
        return np.array([self._eval(e, subs) for e in exprs])


@pytest.mark.component
def test_aba_with_pyomo_variables_matches_float_evaluation():
    rng = np.random.default_rng(41)
    chn = make_chain()
    q, qd, tau, wext = random_state(rng)
    track = track_joint(q[0])
    mdl = pyo.ConcreteModel()
    mdl.q = pyo.Var(range(6))
    mdl.qd = pyo.Var(range(6))
    mdl.tau = pyo.Var(range(6))
    for i in range(6):
        mdl.q[i].set_value(float(q[i]))
        mdl.qd[i].set_value(float(qd[i]))
        mdl.tau[i].set_value(float(tau[i]))
    qv = [mdl.q[i] for i in range(6)]
    qdv = [mdl.qd[i] for i in range(6)]
    tauv = [mdl.tau[i] for i in range(6)]
    kin_f, res_f = run_aba(chn, track, q, qd, tau, wext)

    # without a namer: plain expressions; the twists are shallow enough for pyo.value()
    kin0, res0 = run_aba(chn, track, qv, qdv, tauv, wext)
    for k in range(6):
        np.testing.assert_allclose(as_float(kin0.V[k]), as_float(kin_f.V[k]), rtol=1e-12,
                                   atol=1e-12)
    assert pyo.value(res0.qdd[0]) == pytest.approx(float(res_f.qdd[0]), rel=1e-12)

    # with named Expressions (the OCP route)
    namer = ExpressionNamer(mdl)
    _, res = run_aba(chn, track, qv, qdv, tauv, wext, namer=namer)
    assert all(not isinstance(x, numbers.Number) for x in res.qdd)
    assert len(namer.named) > 50
    np.testing.assert_allclose(namer.value(res.qdd), as_float(res_f.qdd), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(namer.value(res.F[UNSPRUNG]), as_float(res_f.F[UNSPRUNG]),
                               rtol=1e-12, atol=1e-9)
    # the symbolic model follows a change of the variables' values
    mdl.qd[0].set_value(float(qd[0]) + 5.0)
    mdl.q[5].set_value(float(q[5]) - 0.1)
    mdl.tau[3].set_value(float(tau[3]) + 100.0)
    q2, qd2, tau2 = q.copy(), qd.copy(), tau.copy()
    qd2[0] += 5.0
    q2[5] -= 0.1
    tau2[3] += 100.0
    _, res_f2 = run_aba(chn, track, q2, qd2, tau2, wext)
    np.testing.assert_allclose(namer.value(res.qdd), as_float(res_f2.qdd), rtol=1e-12,
                               atol=1e-12)
    assert np.max(np.abs(as_float(res_f2.qdd) - as_float(res_f.qdd))) > 1e-3
