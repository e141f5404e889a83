r"""Tests of :mod:`pyomo_lap.spatial.tree`: kinematic-tree RNEA, ABA, CRBA, hybrid dynamics, derivatives.

Independent references:

* Pinocchio (``pin``, a test-only dependency) on random trees: the same model is built with
  ``JointModelRevoluteUnaligned`` / ``JointModelPrismaticUnaligned`` and
  ``appendBodyToJoint`` from the *generating data* (``pin.SE3`` placements, ``pin.Inertia``
  objects), not from the tree's stored numbers. Pinocchio needs its joints in depth-first
  order (each subtree a contiguous block of ``v``: its CRBA and derivatives rely on it), so
  the model is built in the depth-first order of the tree and compared through the
  permutation of the degrees of freedom. A fixed joint is merged into the nearest movable
  ancestor (its inertia appended with the accumulated placement, its children placed with it).
* For the race car's chain with its track joint (:func:`pyomo_lap.vehicle.car.build_chain`):
  the finite-difference Newton-Euler reference of ``tests/test_aba.py`` (mass matrix,
  accelerations, structural wrench) on the analytic banked helix of that file.
* CasADi's automatic differentiation for the analytic RNEA derivatives.
* Identities: ``ABA(RNEA(qdd)) = qdd``, ``RNEA(q, 0, qdd) - RNEA(q, 0, 0) = M qdd``, ``M``
  symmetric positive definite, the hybrid dynamics against the partitioned equations of
  motion (Kim eq 34), and the time derivative of the inverse dynamics against a central
  difference along a motion.

Relative errors are ``max |x - x_ref| / max |x_ref|`` over a vector or matrix.
"""
from __future__ import annotations

import numbers

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import pyomo.environ as pyo

from pyomo_lap.spatial import derivatives as der
from pyomo_lap.spatial import dynamics as dyn
from pyomo_lap.spatial import tree as tr
from pyomo_lap.vehicle.car import UNSPRUNG

import test_aba as chain_ref      # the car's chain, its analytic test track, the reference, a namer

TOL_PIN = 1e-10
MAX_DEPTH = 6


# --------------------------------------------------------------------------- random trees
def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return pin.Quaternion(q[0], q[1], q[2], q[3]).toRotationMatrix()


def random_inertia(rng):
    """A physical rigid-body inertia: mass, centre of mass, I_c with the triangle inequality."""
    m = rng.uniform(0.3, 5.0)
    c = rng.normal(size=3) * 0.2
    d = rng.uniform(0.05, 1.0, 3)                   # principal moments from point masses
    R = random_rotation(rng)
    Ic = R @ np.diag([d[1] + d[2], d[0] + d[2], d[0] + d[1]]) @ R.T
    return pin.Inertia(m, c, Ic)


def random_spec(rng, n, *, max_depth=MAX_DEPTH):
    """Generating data of a random tree: parents (random, not depth-first), joints, pin data.

    About a third of the axes are coordinate axes and a third of the placements are pure
    translations or identities, so that the structural-zero paths run too; bodies with
    children may be massless, leaves never are.
    """
    parent, depth = [], []
    for i in range(n):
        cands = [-1] + [j for j in range(i) if depth[j] < max_depth]
        # favour deep trees: the last body is a likely parent
        p = -1 if i == 0 else int(cands[-1] if rng.random() < 0.4 else rng.choice(cands))
        parent.append(p)
        depth.append(1 if p < 0 else depth[p] + 1)
    jtype = [str(rng.choice([tr.REVOLUTE, tr.PRISMATIC, tr.FIXED], p=[0.5, 0.3, 0.2]))
             for _ in range(n)]
    axis = []
    for t in jtype:
        if t == tr.FIXED:
            axis.append(None)
        elif rng.random() < 0.35:
            axis.append(np.eye(3)[rng.integers(3)])
        else:
            a = rng.normal(size=3)
            axis.append(a / np.linalg.norm(a))
    placement = []
    for _ in range(n):
        r = rng.random()
        R = np.eye(3) if r < 0.3 else random_rotation(rng)
        p = np.zeros(3) if r < 0.1 else rng.normal(size=3) * 0.5
        placement.append(pin.SE3(R, p))
    has_child = {p for p in parent if p >= 0}
    inertia = [None if (i in has_child and rng.random() < 0.25) else random_inertia(rng)
               for i in range(n)]
    return dict(parent=parent, joint_type=jtype, axis=axis, placement=placement,
                inertia=inertia)


def tree_from_spec(spec, gravity):
    return tr.KinematicTree(
        parent=spec["parent"], joint_type=spec["joint_type"], axis=spec["axis"],
        placement=[(M.rotation, M.translation) for M in spec["placement"]],
        inertia=[None if I is None else I.matrix() for I in spec["inertia"]],
        gravity=gravity)


def pinocchio_model(spec, gravity):
    """The same tree in Pinocchio, joints in depth-first order; fixed joints merged.

    Returns the model, the pin joint of every body, the placement of every body's frame in
    that joint's frame, and ``perm`` with ``perm[k]`` = Pinocchio's v index of our dof ``k``.
    """
    n = len(spec["parent"])
    children = [[j for j in range(n) if spec["parent"][j] == i] for i in range(n)]
    order, stack = [], [i for i in reversed(range(n)) if spec["parent"][i] < 0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(gravity, dtype=float), np.zeros(3))
    joint, in_joint = {}, {}
    for i in order:
        p = spec["parent"][i]
        pj = 0 if p < 0 else joint[p]
        M = (pin.SE3.Identity() if p < 0 else in_joint[p]) * spec["placement"][i]
        t = spec["joint_type"][i]
        if t == tr.FIXED:
            joint[i], in_joint[i] = pj, M
        else:
            a = np.asarray(spec["axis"][i], dtype=float)
            jm = (pin.JointModelRevoluteUnaligned(a) if t == tr.REVOLUTE
                  else pin.JointModelPrismaticUnaligned(a))
            joint[i] = model.addJoint(pj, jm, M, f"joint{i}")
            in_joint[i] = pin.SE3.Identity()
        if spec["inertia"][i] is not None:
            model.appendBodyToJoint(joint[i], spec["inertia"][i], in_joint[i])
    movable = [i for i in range(n) if spec["joint_type"][i] != tr.FIXED]
    perm = np.array([model.joints[joint[i]].idx_v for i in movable])
    return model, joint, in_joint, perm


def rel_err(x, ref):
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300))


def random_state(rng, nv):
    return rng.normal(size=nv), rng.normal(size=nv) * 2.0, rng.normal(size=nv) * 3.0


def random_wrenches(rng, n):
    return {i: rng.normal(size=6) * 5.0 for i in range(n) if rng.random() < 0.5}


def pin_fext(model, joint, in_joint, f_ext):
    """Our body-frame wrenches as Pinocchio's per-joint local forces."""
    fext = [pin.Force.Zero() for _ in range(model.njoints)]
    for i, w in f_ext.items():
        fext[joint[i]] += in_joint[i].act(pin.Force(np.asarray(w[:3]), np.asarray(w[3:])))
    return fext


SEEDS = range(8)


def case(seed):
    rng = np.random.default_rng(1000 + seed)
    spec = random_spec(rng, int(rng.integers(8, 14)))
    gravity = (rng.normal(), rng.normal(), -9.81)
    tree = tree_from_spec(spec, gravity)
    model, joint, in_joint, perm = pinocchio_model(spec, gravity)
    return rng, spec, tree, model, joint, in_joint, perm


# --------------------------------------------------------------------------- Pinocchio
@pytest.mark.unit
def test_random_trees_cover_depth_branching_and_joint_types():
    """Guard for the generator: the trees compared below are deep, branched and mixed."""
    depths, branched, types = [], 0, set()
    for seed in SEEDS:
        _, _, tree, *_ = case(seed)
        depth = []
        for p in tree.parent:
            depth.append(1 if p < 0 else depth[p] + 1)
        depths.append(max(depth))
        branched += any(len(c) > 1 for c in tree.children) or tree.parent.count(-1) > 1
        types |= set(tree.joint_type)
    assert max(depths) == MAX_DEPTH
    assert branched == len(SEEDS)
    assert types == {tr.REVOLUTE, tr.PRISMATIC, tr.FIXED}


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS)
def test_rnea_aba_crba_match_pinocchio(seed):
    rng, _, tree, model, joint, in_joint, perm = case(seed)
    data = model.createData()
    nv = tree.nv
    for trial in range(2):
        q, qd, qdd = random_state(rng, nv)
        f_ext = random_wrenches(rng, tree.n_bodies) if trial else {}
        qp, qdp, qddp = (np.empty(nv) for _ in range(3))
        qp[perm], qdp[perm], qddp[perm] = q, qd, qdd
        fext = pin_fext(model, joint, in_joint, f_ext)

        tau_pin = pin.rnea(model, data, qp, qdp, qddp, fext)[perm]
        tau = dyn.rnea(tree, list(q), list(qd), list(qdd), f_ext=f_ext)
        assert rel_err(tau, tau_pin) < TOL_PIN

        tau_in = rng.normal(size=nv) * 10.0
        taup = np.empty(nv)
        taup[perm] = tau_in
        qdd_pin = pin.aba(model, data, qp, qdp, taup, fext)[perm]
        assert rel_err(dyn.aba(tree, list(q), list(qd), list(tau_in), f_ext=f_ext),
                       qdd_pin) < TOL_PIN

        M_pin = pin.crba(model, data, qp).copy()
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T          # Pinocchio fills the upper part
        assert rel_err(dyn.crba(tree, list(q)), M_pin[np.ix_(perm, perm)]) < TOL_PIN


@pytest.mark.unit
@pytest.mark.parametrize("seed", [3, 4, 6])
def test_aba_of_a_massless_root_with_one_child_matches_pinocchio(seed):
    """A massless root on a free joint with one child and no external wrench (the race car's
    track joint) is handled in its child's frame by hybrid_dynamics when its joint wrench is
    not asked for: Pinocchio's accelerations, as with every wrench asked for and as aba
    (which both form its articulated inertia)."""
    _, spec, tree, *_ = case(seed)
    lean = [r for r in range(tree.n_bodies) if tree.parent[r] < 0
            and len(tree.children[r]) == 1 and tree.joint_type[r] != tr.FIXED]
    assert lean
    for r in lean:
        spec["inertia"][r] = None
    tree = tree_from_spec(spec, tree.gravity)
    model, joint, in_joint, perm = pinocchio_model(spec, tree.gravity)
    rng = np.random.default_rng(seed)
    q, qd, _ = random_state(rng, tree.nv)
    tau = rng.normal(size=tree.nv) * 10.0
    f_ext = {i: w for i, w in random_wrenches(rng, tree.n_bodies).items() if i not in lean}
    qp, qdp, taup = (np.empty(tree.nv) for _ in range(3))
    qp[perm], qdp[perm], taup[perm] = q, qd, tau
    qdd_pin = pin.aba(model, model.createData(), qp, qdp, taup,
                      pin_fext(model, joint, in_joint, f_ext))[perm]
    args = (tree, list(q), list(qd))
    assert rel_err(dyn.aba(*args, list(tau), f_ext=f_ext), qdd_pin) < TOL_PIN
    for wrenches in ([], None):
        h = dyn.hybrid_dynamics(*args, [None] * tree.nv, list(tau), [], f_ext=f_ext,
                               wrenches=wrenches)
        assert rel_err(h.qdd, qdd_pin) < TOL_PIN
        assert (h.F[lean[0]] is None) == (wrenches == [])


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_forward_kinematics_matches_pinocchio(seed):
    """Poses in the ground frame, body twists and accelerations (ground at rest, local frames;
    a fixed body is its pin joint's frame moved by the accumulated placement)."""
    rng, _, tree, model, joint, in_joint, perm = case(seed)
    data = model.createData()
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    qp, qdp, qddp = (np.empty(nv) for _ in range(3))
    qp[perm], qdp[perm], qddp[perm] = q, qd, qdd
    pin.forwardKinematics(model, data, qp, qdp, qddp)
    fk = tr.forward_kinematics(tree, list(q), list(qd), list(qdd))
    for i in range(tree.n_bodies):
        oMi = data.oMi[joint[i]] * in_joint[i]
        np.testing.assert_allclose(np.array(fk.pose[i][0], dtype=float), oMi.rotation,
                                   rtol=0, atol=1e-13)
        np.testing.assert_allclose(np.array(fk.pose[i][1], dtype=float), oMi.translation,
                                   rtol=0, atol=1e-12)
        if joint[i] == 0:                          # fixed to the ground
            assert not np.any(np.array(fk.V[i], dtype=float))
            assert not np.any(np.array(fk.Vdot[i], dtype=float))
            continue
        v = in_joint[i].actInv(data.v[joint[i]]).vector
        a = in_joint[i].actInv(data.a[joint[i]]).vector
        assert rel_err(fk.V[i], v) < TOL_PIN
        assert rel_err(fk.Vdot[i], a) < TOL_PIN


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_rnea_derivatives_match_pinocchio(seed):
    rng, _, tree, model, joint, in_joint, perm = case(seed)
    data = model.createData()
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    f_ext = random_wrenches(rng, tree.n_bodies)
    qp, qdp, qddp = (np.empty(nv) for _ in range(3))
    qp[perm], qdp[perm], qddp[perm] = q, qd, qdd
    d_q, d_v, _ = pin.computeRNEADerivatives(model, data, qp, qdp, qddp,
                                             pin_fext(model, joint, in_joint, f_ext))
    dq, dqd = der.rnea_derivatives(tree, list(q), list(qd), list(qdd), f_ext=f_ext)
    assert rel_err(dq, d_q[np.ix_(perm, perm)]) < TOL_PIN
    assert rel_err(dqd, d_v[np.ix_(perm, perm)]) < TOL_PIN


# --------------------------------------------------------------------------- identities
@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS)
def test_aba_inverts_rnea_and_crba_is_the_mass_matrix(seed):
    rng, _, tree, *_ = case(seed)
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    f_ext = random_wrenches(rng, tree.n_bodies)
    tau = dyn.rnea(tree, list(q), list(qd), list(qdd), f_ext=f_ext)
    assert rel_err(dyn.aba(tree, list(q), list(qd), tau, f_ext=f_ext), qdd) < 1e-11
    M = np.array(dyn.crba(tree, list(q)), dtype=float)
    assert np.array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 1e-9 * np.abs(M).max()
    b0 = np.array(dyn.rnea(tree, list(q), [0] * nv, [0] * nv, f_ext=f_ext))
    Mq = np.array(dyn.rnea(tree, list(q), [0] * nv, list(qdd), f_ext=f_ext)) - b0
    assert rel_err(Mq, M @ qdd) < 1e-11
    # gravity is the fictitious ground acceleration: g -> 0 changes only the bias
    b_nog = np.array(dyn.rnea(tree, list(q), [0] * nv, [0] * nv, f_ext=f_ext, gravity=(0, 0, 0)))
    assert np.max(np.abs(b0 - b_nog)) > 1e-3


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS)
def test_hybrid_dynamics_is_aba_rnea_and_the_partitioned_equations(seed):
    rng, _, tree, *_ = case(seed)
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    f_ext = random_wrenches(rng, tree.n_bodies)
    tau = rng.normal(size=nv) * 10.0
    args = (tree, list(q), list(qd))
    # nothing prescribed: the ABA; the torques come back as given
    h = dyn.hybrid_dynamics(*args, [None] * nv, list(tau), [], f_ext=f_ext)
    assert rel_err(h.qdd, dyn.aba(*args, list(tau), f_ext=f_ext)) < 1e-12
    assert list(h.tau) == list(tau)
    # everything prescribed: the RNEA
    h = dyn.hybrid_dynamics(*args, list(qdd), [None] * nv, range(nv), f_ext=f_ext)
    assert rel_err(h.tau, dyn.rnea(*args, list(qdd), f_ext=f_ext)) < 1e-12
    assert list(h.qdd) == list(qdd)
    # a random split: Kim eq (34) from M (CRBA) and b = RNEA(q, qd, 0)
    M = np.array(dyn.crba(tree, list(q)), dtype=float)
    b = np.array(dyn.rnea(*args, [0] * nv, f_ext=f_ext))
    for _ in range(3):
        pres = sorted(int(k) for k in rng.choice(nv, size=int(rng.integers(1, nv)),
                                                   replace=False))
        free = [k for k in range(nv) if k not in pres]
        qdd_in = [qdd[k] if k in pres else None for k in range(nv)]
        tau_in = [None if k in pres else tau[k] for k in range(nv)]
        h = dyn.hybrid_dynamics(*args, qdd_in, tau_in, pres, f_ext=f_ext)
        qdd_v = np.linalg.solve(M[np.ix_(free, free)],
                                tau[free] - b[free] - M[np.ix_(free, pres)] @ qdd[pres])
        full = np.empty(nv)
        full[pres], full[free] = qdd[pres], qdd_v
        tau_u = M[pres] @ full + b[pres]
        assert rel_err(np.array(h.qdd)[free], qdd_v) < 1e-10
        assert rel_err(np.array(h.tau)[pres], tau_u) < 1e-10
        # the joint wrenches carry the torques: tau = S^T F on every joint
        for i, k in enumerate(tree.dof):
            if k is not None:
                S = tree.screw[i]
                assert float(np.dot(S, np.array(h.F[i], dtype=float))) == pytest.approx(
                    float(h.tau[k]), rel=1e-10, abs=1e-10)


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_time_derivative_of_the_inverse_dynamics_along_a_motion(seed):
    """(dq, dqd, dqdd) = (qd, qdd, qddd) gives d tau / dt (the first order of seed 002):
    against a 4th-order central difference of RNEA along q(t) = q + qd t + ... + qddd t^3/6."""
    rng, _, tree, *_ = case(seed)
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    qddd = rng.normal(size=nv)
    f_ext = random_wrenches(rng, tree.n_bodies)
    tau, dtau = der.rnea_directional_derivative(tree, list(q), list(qd), list(qdd), list(qd),
                                               list(qdd), list(qddd), f_ext=f_ext)
    assert rel_err(tau, dyn.rnea(tree, list(q), list(qd), list(qdd), f_ext=f_ext)) < 1e-14

    def tau_at(t):
        return np.array(dyn.rnea(tree, list(q + qd * t + qdd * t ** 2 / 2 + qddd * t ** 3 / 6),
                                list(qd + qdd * t + qddd * t ** 2 / 2), list(qdd + qddd * t),
                                f_ext=f_ext))

    h = 1e-3
    fd = (tau_at(-2 * h) - 8 * tau_at(-h) + 8 * tau_at(h) - tau_at(2 * h)) / (12 * h)
    assert rel_err(dtau, fd) < 1e-8


# --------------------------------------------------------------------------- the car's chain
def car_reference(seed):
    """The car's tree, a random state on the banked helix and the Newton-Euler reference of
    ``tests/test_aba.py`` (``qdd``, mass matrix, structural wrench), body ``k`` of the
    reference being body ``k - 1`` of the tree."""
    rng = np.random.default_rng(seed)
    q, qd, tau, wext = chain_ref.random_state(rng)
    qdd_ref, M_ref, _ = chain_ref.reference_dynamics(q, qd, tau, wext, chain_ref.track_pose)
    W3J_ref = chain_ref.reference_W3J(q, qd, qdd_ref, wext, chain_ref.track_pose)
    f_ext = {k - 1: list(w) for k, w in wext.items()}
    return (chain_ref.make_chain(), q, qd, tau, f_ext, {0: chain_ref.track_joint(q[0])},
            qdd_ref, M_ref, W3J_ref)


@pytest.mark.unit
@pytest.mark.parametrize("seed", [21, 22, 23, 24])
def test_car_tree_with_its_track_joint_against_newton_euler(seed):
    """ABA, hybrid dynamics, RNEA and CRBA of the car's tree with its track joint against the
    finite-difference Newton-Euler reference of tests/test_aba.py."""
    tree, q, qd, tau, f_ext, tj, qdd_ref, M_ref, W3J_ref = car_reference(seed)
    args = (tree, list(q), list(qd))
    assert rel_err(dyn.aba(*args, list(tau), f_ext=f_ext, track=tj), qdd_ref) < 1e-6
    # the structural wrench of eq (24) is the joint wrench of body 3 (index 2)
    h = dyn.hybrid_dynamics(*args, [None] * 6, list(tau), [], f_ext=f_ext, track=tj)
    assert rel_err(h.qdd, qdd_ref) < 1e-6
    assert rel_err(h.F[UNSPRUNG], W3J_ref) < 1e-6
    # RNEA and CRBA with the track joint: M = the reference's, RNEA(qdd) = tau
    M = np.array(dyn.crba(tree, list(q), track=tj), dtype=float)
    assert rel_err(M, M_ref) < 1e-7
    assert rel_err(dyn.rnea(*args, list(qdd_ref), f_ext=f_ext, track=tj), tau) < 1e-6
    # the joints of the chain with prescribed accelerations (the reference's): their torques
    h = dyn.hybrid_dynamics(*args, list(qdd_ref), [None, None, None] + list(tau[3:]), [0, 1, 2],
                           f_ext=f_ext, track=tj)
    assert rel_err(h.tau, tau) < 1e-6


# --------------------------------------------------------------------------- symbolic backends
def sx_vector(name, n):
    x = ca.SX.sym(name, n)
    return x, [x[i] for i in range(n)]


def sx_function(inputs, outputs):
    return ca.Function("f", inputs, [ca.vertcat(*[ca.SX(o) for o in outputs])])


def as_floats(v):
    return np.array(v, dtype=float).ravel()


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_casadi_symbols_give_the_float_results(seed):
    rng, _, tree, *_ = case(seed)
    nv, n = tree.nv, tree.n_bodies
    q, qd, qdd = random_state(rng, nv)
    tau = rng.normal(size=nv) * 10.0
    f_ext = random_wrenches(rng, n)
    Q, q_s = sx_vector("q", nv)
    QD, qd_s = sx_vector("qd", nv)
    A, a_s = sx_vector("a", nv)          # qdd for RNEA, tau for ABA
    vals = (q, qd, qdd)
    f = sx_function([Q, QD, A], dyn.rnea(tree, q_s, qd_s, a_s, f_ext=f_ext))
    assert rel_err(as_floats(f(*vals)), dyn.rnea(tree, list(q), list(qd), list(qdd),
                                                f_ext=f_ext)) < 1e-12
    f = sx_function([Q, QD, A], dyn.aba(tree, q_s, qd_s, a_s, f_ext=f_ext))
    assert rel_err(as_floats(f(q, qd, tau)), dyn.aba(tree, list(q), list(qd), list(tau),
                                                    f_ext=f_ext)) < 1e-12
    M = dyn.crba(tree, q_s)
    f = sx_function([Q], [x for row in M for x in row])
    assert rel_err(as_floats(f(q)), np.ravel(dyn.crba(tree, list(q)))) < 1e-12
    pres = list(range(0, nv, 2))
    h = dyn.hybrid_dynamics(tree, q_s, qd_s, a_s, [tau[k] for k in range(nv)], pres,
                           f_ext=f_ext)
    hf = dyn.hybrid_dynamics(tree, list(q), list(qd), list(qdd), list(tau), pres, f_ext=f_ext)
    f = sx_function([Q, QD, A], list(h.qdd) + list(h.tau))
    assert rel_err(as_floats(f(*vals)), np.concatenate([hf.qdd, hf.tau])) < 1e-12


@pytest.mark.unit
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_analytic_rnea_derivatives_match_casadi_automatic_differentiation(seed):
    rng, _, tree, *_ = case(seed)
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    f_ext = random_wrenches(rng, tree.n_bodies)
    Q, q_s = sx_vector("q", nv)
    QD, qd_s = sx_vector("qd", nv)
    A, a_s = sx_vector("a", nv)
    tau = ca.vertcat(*[ca.SX(t) for t in dyn.rnea(tree, q_s, qd_s, a_s, f_ext=f_ext)])
    jac = ca.Function("rnea_jacobians", [Q, QD, A], [ca.jacobian(tau, Q), ca.jacobian(tau, QD),
                                          ca.jacobian(tau, A)])
    J_q, J_qd, J_a = (np.array(x) for x in jac(q, qd, qdd))
    dq, dqd = der.rnea_derivatives(tree, list(q), list(qd), list(qdd), f_ext=f_ext)
    assert rel_err(dq, J_q) < 1e-10
    assert rel_err(dqd, J_qd) < 1e-10
    assert rel_err(dyn.crba(tree, list(q)), J_a) < 1e-10
    # the recursion itself runs on symbols too
    dq_s, dqd_s = der.rnea_derivatives(tree, q_s, qd_s, a_s, f_ext=f_ext)
    f = sx_function([Q, QD, A], [x for row in dq_s + dqd_s for x in row])
    assert rel_err(as_floats(f(q, qd, qdd)), np.concatenate([np.ravel(dq), np.ravel(dqd)])) \
        < 1e-12


class Traced:
    """A scalar that computes with floats and fails on any product with a literal 0, 1 or -1
    or any sum with a literal 0: the backend helpers must have dropped those. Counts the
    arithmetic operations that reach it."""

    ops = 0

    def __init__(self, v):
        self.v = float(v)

    @staticmethod
    def _val(o, forbidden):
        if isinstance(o, Traced):
            return o.v
        assert isinstance(o, numbers.Number), o
        if o in forbidden:
            raise AssertionError(f"structural constant {o!r} reached the arithmetic")
        return float(o)

    def _op(self, o, f, forbidden):
        Traced.ops += 1
        return Traced(f(self.v, self._val(o, forbidden)))

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b, (0, 1, -1))

    __rmul__ = __mul__

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b, (0,))

    __radd__ = __add__

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b, (0,))

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a, (0,))

    def __truediv__(self, o):
        return self._op(o, lambda a, b: a / b, (0, 1))

    def __rtruediv__(self, o):
        return self._op(o, lambda a, b: b / a, (0,))

    def __neg__(self):
        Traced.ops += 1
        return Traced(-self.v)

    def tape_function(self, name):          # pyomo_lap.spatial.backend's hook for sin, cos, ...
        Traced.ops += 1
        import math
        return Traced(getattr(math, name)(self.v))


def traced_values(v):
    return np.array([x.v if isinstance(x, Traced) else float(x) for x in np.ravel(v)])


def all_algorithms(tree, q, qd, qdd, tau, f_ext, wrap):
    nv = tree.nv
    qs, qds, qdds, taus = ([wrap(x) for x in v] for v in (q, qd, qdd, tau))
    pres = list(range(0, nv, 2))
    h = dyn.hybrid_dynamics(tree, qs, qds, qdds, taus, pres, f_ext=f_ext)
    fk = tr.forward_kinematics(tree, qs, qds, qdds)
    return [dyn.rnea(tree, qs, qds, qdds, f_ext=f_ext), dyn.aba(tree, qs, qds, taus, f_ext=f_ext),
            dyn.crba(tree, qs), h.qdd, h.tau, *der.rnea_derivatives(tree, qs, qds, qdds,
                                                                  f_ext=f_ext),
            [x for V in fk.Vdot for x in V]]


@pytest.mark.unit
def test_structural_zeros_never_reach_the_arithmetic():
    rng, _, tree, *_ = case(0)
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    tau = rng.normal(size=nv)
    f_ext = random_wrenches(rng, tree.n_bodies)
    traced = all_algorithms(tree, q, qd, qdd, tau, f_ext, Traced)
    plain = all_algorithms(tree, q, qd, qdd, tau, f_ext, float)
    for t, p in zip(traced, plain):
        assert rel_err(traced_values(t), np.array(p, dtype=float).ravel()) < 1e-14


@pytest.mark.unit
def test_axis_aligned_joints_cost_fewer_operations():
    """A chain of revolute joints about z with placements along x, and the same chain with
    every body frame turned by a generic rotation H (axes H^T z, placements H^-1 P H,
    inertias Ad_H^T I Ad_H: full matrices, the same torques). The structural zeros of the
    first are exploited: it costs about a quarter of the operations."""
    rng = np.random.default_rng(5)
    n = 6
    H = random_rotation(rng)
    AdH = np.kron(np.eye(2), H)                       # Ad of a pure rotation
    inertia = [random_inertia(rng).matrix() for _ in range(n)]
    p = np.array([0.4, 0.0, 0.0])
    common = dict(parent=[-1] + list(range(n - 1)), joint_type=[tr.REVOLUTE] * n,
                  gravity=(0.0, -9.81, 0.0))
    aligned = tr.KinematicTree(axis=[(0, 0, 1)] * n, placement=[(np.eye(3), p)] * n,
                               inertia=inertia, **common)
    generic = tr.KinematicTree(axis=[H.T @ (0, 0, 1)] * n,
                               placement=[(H, p)] + [(np.eye(3), H.T @ p)] * (n - 1),
                               inertia=[AdH.T @ I @ AdH for I in inertia], **common)
    q, qd, qdd = random_state(rng, n)
    counts, taus = [], []
    for t in (aligned, generic):
        Traced.ops = 0
        tau = dyn.rnea(t, [Traced(x) for x in q], [Traced(x) for x in qd],
                      [Traced(x) for x in qdd])
        counts.append(Traced.ops)
        taus.append(traced_values(tau))
    assert rel_err(taus[1], taus[0]) < 1e-12
    assert counts[0] < 0.4 * counts[1]          # 508 and 1908 operations when written


def pyomo_vector(m, name, values):
    var = pyo.Var(range(len(values)), initialize=dict(enumerate(float(v) for v in values)))
    m.add_component(name, var)
    return [var[i] for i in range(len(values))]


def pyomo_values(v):
    return np.array([pyo.value(x) for x in np.ravel(np.array(v, dtype=object))], dtype=float)


@pytest.mark.component
def test_pyomo_expressions_give_the_float_results():
    """Pyomo variables in, Pyomo expressions out, on a random tree: evaluated with the
    variables' values they equal the float results, and they follow a change of the values.
    RNEA and CRBA are plain expressions; ABA and hybrid dynamics go through named Expression
    components (as the car's ABA in the OCP): written out as plain trees, their articulated
    inertias nest every level into the next (33 s for pyo.value of this 6-body ABA)."""
    rng = np.random.default_rng(77)
    spec = random_spec(rng, 6, max_depth=4)
    tree = tree_from_spec(spec, (0.0, 0.5, -9.81))
    nv = tree.nv
    q, qd, qdd = random_state(rng, nv)
    tau = rng.normal(size=nv) * 5.0
    f_ext = random_wrenches(rng, tree.n_bodies)
    m = pyo.ConcreteModel()
    qv, qdv, qddv, tauv = (pyomo_vector(m, name, v) for name, v in
                           (("q", q), ("qd", qd), ("qdd", qdd), ("tau", tau)))
    pres = [0, nv - 1]
    namer = chain_ref.ExpressionNamer(m)
    exprs = {
        "rnea": (dyn.rnea(tree, qv, qdv, qddv, f_ext=f_ext), None),
        "crba": (dyn.crba(tree, qv), None),
        "aba": (dyn.aba(tree, qv, qdv, tauv, f_ext=f_ext,
                       namer=lambda tag, x: namer(f"aba_{tag}", x)), namer),
        "hybrid": (dyn.hybrid_dynamics(tree, qv, qdv, qddv, tauv, pres, f_ext=f_ext,
                                      namer=lambda tag, x: namer(f"hyb_{tag}", x)).qdd,
                   namer),
    }

    def floats(q, qd):
        return {"rnea": dyn.rnea(tree, list(q), list(qd), list(qdd), f_ext=f_ext),
                "crba": dyn.crba(tree, list(q)),
                "aba": dyn.aba(tree, list(q), list(qd), list(tau), f_ext=f_ext),
                "hybrid": dyn.hybrid_dynamics(tree, list(q), list(qd), list(qdd), list(tau),
                                             pres, f_ext=f_ext).qdd}

    def values(e, named):
        flat = list(np.ravel(np.array(e, dtype=object)))
        return pyomo_values(flat) if named is None else named.value(flat)

    ref = floats(q, qd)
    for key, (e, named) in exprs.items():
        assert any(not isinstance(x, numbers.Number) for x in np.ravel(np.array(e, dtype=object)))
        assert rel_err(values(e, named), np.ravel(np.array(ref[key], dtype=float))) < 1e-12, key
    q2, qd2 = q + 0.3, qd - 0.5
    for i in range(nv):
        m.q[i].set_value(float(q2[i]))
        m.qd[i].set_value(float(qd2[i]))
    ref2 = floats(q2, qd2)
    for key, (e, named) in exprs.items():
        assert rel_err(values(e, named), np.ravel(np.array(ref2[key], dtype=float))) < 1e-12, key
        assert rel_err(ref2[key], ref[key]) > 1e-3


@pytest.mark.component
def test_pyomo_named_expressions_on_the_car_tree():
    """The car's tree with its track joint, Pyomo variables and named Expression components
    (the route of the OCP): the accelerations and the structural wrench of the Newton-Euler
    reference of tests/test_aba.py."""
    tree, q, qd, tau, f_ext, tj, qdd_ref, _, W3J_ref = car_reference(31)
    m = pyo.ConcreteModel()
    qv, qdv, tauv = (pyomo_vector(m, name, v) for name, v in
                     (("q", q), ("qd", qd), ("tau", tau)))
    namer = chain_ref.ExpressionNamer(m)
    h = dyn.hybrid_dynamics(tree, qv, qdv, [None] * 6, tauv, [], f_ext=f_ext, track=tj,
                           namer=namer, wrenches=[UNSPRUNG])
    assert len(namer.named) > 50
    assert all(c.is_named_expression_type() for c in namer.named)
    assert rel_err(namer.value(h.qdd), qdd_ref) < 1e-6
    assert rel_err(namer.value(h.F[UNSPRUNG]), W3J_ref) < 1e-6


# --------------------------------------------------------------------------- input errors
def small_tree(**changes):
    I = random_inertia(np.random.default_rng(3)).matrix()
    kw = dict(parent=[-1, 0, 1], joint_type=[tr.REVOLUTE, tr.PRISMATIC, tr.FIXED],
              axis=[(0, 0, 1), (1, 0, 0), None],
              placement=[(np.eye(3), (0, 0, 0))] * 3, inertia=[I, None, I])
    kw.update(changes)
    return tr.KinematicTree(**kw)


@pytest.mark.unit
@pytest.mark.parametrize("changes, message", [
    (dict(parent=[-1, 1, 1]), r"KinematicTree\.parent\[1\] must be an int in \[-1, 0\].*got 1"),
    (dict(parent=[-1, 0]), r"KinematicTree\.joint_type must be a sequence of 2 entries"),
    (dict(joint_type=[tr.REVOLUTE, "ball", tr.FIXED]),
     r"KinematicTree\.joint_type\[1\] must be one of 'revolute'.*got 'ball'"),
    (dict(axis=[(0, 0, 2), (1, 0, 0), None]),
     r"KinematicTree\.axis\[0\] must be a unit 3-vector .* revolute joint, got \(0, 0, 2\)"),
    (dict(axis=[(0, 0, 1), None, None]),
     r"KinematicTree\.axis\[1\] must be a unit 3-vector .* prismatic joint, got None"),
    (dict(axis=[(0, 0, 1), (1, 0, 0), (1, 0, 0)]),
     r"KinematicTree\.axis\[2\] must be None for a fixed joint, got \(1, 0, 0\)"),
    (dict(placement=[(np.eye(3), (0, 0, 0)), (2 * np.eye(3), (0, 0, 0)),
                     (np.eye(3), (0, 0, 0))]),
     r"KinematicTree\.placement\[1\] must be a pair \(R, p\).*det R = \+1"),
    (dict(placement=[(np.eye(3), (0, 0, 0)), (np.eye(3), (0, 0)), (np.eye(3), (0, 0, 0))]),
     r"KinematicTree\.placement\[1\] must be a pair \(R, p\)"),
    (dict(inertia=[np.diag([1, 1, 1, -1, 1, 1.0]), None, None]),
     r"KinematicTree\.inertia\[0\] must be None \(massless\) or a symmetric positive.*"
     r"it is not positive semi-definite"),
    (dict(inertia=[np.diag([1, 2, 1, 1, 1, 1.0]), None, None]),
     r"KinematicTree\.inertia\[0\] must be .*\[\[m I, -m c\^\].*its linear block is not m I"),
    (dict(gravity=(0, -9.81)), r"KinematicTree\.gravity must be 3 finite numbers"),
    (dict(names=["a", "b", "a"]), r"KinematicTree\.names must be 3 distinct names"),
])
def test_tree_errors_name_the_field_the_value_and_the_expectation(changes, message):
    with pytest.raises(ValueError, match=message):
        small_tree(**changes)


@pytest.mark.unit
def test_call_errors():
    t = small_tree()
    with pytest.raises(ValueError, match=r"qd must have 2 entries .*got 3 entries"):
        dyn.rnea(t, [0, 0], [0, 0, 0], [0, 0])
    with pytest.raises(ValueError, match=r"f_ext\[2\] must be a wrench \[f; m\] of 6 entries"):
        dyn.rnea(t, [0, 0], [0, 0], [0, 0], f_ext={2: [1, 2, 3]})
    with pytest.raises(ValueError, match=r"f_ext keys must be body indices in \[0, 2\], got 3"):
        dyn.aba(t, [0, 0], [0, 0], [0, 0], f_ext={3: [0] * 6})
    with pytest.raises(ValueError, match=r"prescribed must hold .* got 2"):
        dyn.hybrid_dynamics(t, [0, 0], [0, 0], [0, 0], [0, 0], [2])
    with pytest.raises(ValueError, match=r"qdd\[1\] is prescribed .* but None"):
        dyn.hybrid_dynamics(t, [0, 0], [0, 0], [0, None], [0, 0], [1])
    with pytest.raises(ValueError, match=r"wrenches must hold body indices in \[0, 2\], got 3"):
        dyn.hybrid_dynamics(t, [0, 0], [0, 0], [0, 0], [0, 0], [], wrenches=[3])
    with pytest.raises(ValueError, match=r"kin must be a forward_kinematics result with twists"):
        dyn.hybrid_dynamics(t, [0, 0], [0, 0], [0, 0], [0, 0], [],
                           kin=tr.forward_kinematics(t, [0, 0]))
    car = chain_ref.make_chain()
    with pytest.raises(ValueError, match=r"track must give the TrackJoint of track \(joint type"):
        dyn.aba(car, [0] * 6, [0] * 6, [0] * 6)
    with pytest.raises(ValueError, match=r"has a track joint"):
        der.rnea_derivatives(car, [0] * 6, [0] * 6, [0] * 6)
    # a joint that moves no mass: the leaf is massless
    massless = small_tree(inertia=[None, None, None])
    with pytest.raises(ValueError, match=r"articulated inertia of body 1 along its joint "
                                         r"screw is 0"):
        dyn.aba(massless, [0, 0], [0, 0], [0, 0])
