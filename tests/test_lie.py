"""Unit tests of :mod:`pyomo_lap.spatial.lie` (SE(3)/se(3) with twists ``[v; w]``, linear part first).

The reference values are built independently in plain NumPy from the *definitions*:

* a posture ``g = (R, p)`` is the 4x4 matrix ``[[R, p], [0, 1]]``;
* a twist ``V = [v; w]`` is the 4x4 matrix ``V^ = [[w^, v], [0, 0]]``;
* ``Ad_g V = (g V^ g^-1)^v`` and ``ad_V Y = [V^, Y^]^v`` (matrix commutator);
* ``exp_twist(X, q) = expm(X^ q)`` (scipy);
* the spatial inertia is the kinetic-energy metric ``T = 1/2 V^T M V``.

None of the reference code uses the block formulas of the module under test.
"""
from __future__ import annotations

import numbers

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import pyomo.environ as pyo

from pyomo_lap.spatial import lie

RTOL = 1e-12
ATOL = 1e-12


# --------------------------------------------------------------------------- numpy reference
def np_hat(w):
    w = np.asarray(w, dtype=float)
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def twist_matrix(V):
    """4x4 se(3) matrix of a twist ``[v; w]``."""
    V = np.asarray(V, dtype=float)
    T = np.zeros((4, 4))
    T[:3, :3] = np_hat(V[3:])
    T[:3, 3] = V[:3]
    return T


def twist_vee(T):
    """Inverse of :func:`twist_matrix`."""
    return np.array([T[0, 3], T[1, 3], T[2, 3], T[2, 1], T[0, 2], T[1, 0]])


def hom(g):
    """4x4 homogeneous matrix of a posture ``(R, p)`` (nested lists or arrays)."""
    R, p = g
    G = np.eye(4)
    G[:3, :3] = np.asarray(R, dtype=float)
    G[:3, 3] = np.asarray(p, dtype=float)
    return G


def Ad_ref(G):
    """Adjoint from its definition ``Ad_g V = (g V^ g^-1)^v``, column by column."""
    Gi = np.linalg.inv(G)
    return np.column_stack([twist_vee(G @ twist_matrix(e) @ Gi) for e in np.eye(6)])


def ad_ref(V):
    """``ad_V`` from the matrix commutator ``ad_V Y = [V^, Y^]^v``."""
    A = twist_matrix(V)
    return np.column_stack([twist_vee(A @ twist_matrix(e) - twist_matrix(e) @ A)
                            for e in np.eye(6)])


def arr(x):
    """Nested lists (possibly with int structural zeros) -> float array."""
    return np.array(x, dtype=float)


def random_rotation(rng):
    Q, Rr = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(Rr)))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def random_posture(rng, scale=2.0):
    """A random posture as nested lists (the representation the module uses)."""
    R = random_rotation(rng)
    p = scale * rng.standard_normal(3)
    return R.tolist(), p.tolist()


def is_literal_zero(x):
    """A structural zero: a plain number equal to 0, not a (Pyomo) expression."""
    return isinstance(x, numbers.Number) and x == 0


# --------------------------------------------------------------------------- hat / vee / SE(3)
@pytest.mark.unit
def test_hat_vee_cross():
    rng = np.random.default_rng(1)
    for _ in range(10):
        w, x = rng.standard_normal(3), rng.standard_normal(3)
        W = arr(lie.hat(w.tolist()))
        np.testing.assert_allclose(W, -W.T, rtol=0, atol=0)
        np.testing.assert_allclose(W @ x, np.cross(w, x), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(arr(lie.vee(lie.hat(w.tolist()))), w, rtol=0, atol=0)
        np.testing.assert_allclose(arr(lie.cross(w.tolist(), x.tolist())), np.cross(w, x),
                                   rtol=RTOL, atol=ATOL)


@pytest.mark.unit
def test_compose_inverse_match_homogeneous_matrices():
    rng = np.random.default_rng(2)
    for _ in range(10):
        g1, g2 = random_posture(rng), random_posture(rng)
        np.testing.assert_allclose(hom(lie.compose(g1, g2)), hom(g1) @ hom(g2),
                                   rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(hom(lie.inverse(g1)), np.linalg.inv(hom(g1)),
                                   rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- Ad / ad identities
@pytest.mark.unit
def test_Ad_matches_definition_and_homomorphism():
    rng = np.random.default_rng(3)
    for _ in range(10):
        g1, g2 = random_posture(rng), random_posture(rng)
        A1, A2 = arr(lie.Ad(g1)), arr(lie.Ad(g2))
        np.testing.assert_allclose(A1, Ad_ref(hom(g1)), rtol=1e-12, atol=1e-12)
        # Ad(g1 g2) = Ad(g1) Ad(g2)
        np.testing.assert_allclose(arr(lie.Ad(lie.compose(g1, g2))), A1 @ A2,
                                   rtol=1e-12, atol=1e-11)
        # Ad(g^-1) = Ad(g)^-1, and Ad_inv is the same thing
        np.testing.assert_allclose(arr(lie.Ad(lie.inverse(g1))), np.linalg.inv(A1),
                                   rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(arr(lie.Ad_inv(g1)), np.linalg.inv(A1),
                                   rtol=1e-10, atol=1e-11)
        # Ad*(g) = Ad(g)^-T
        np.testing.assert_allclose(arr(lie.Ad_star(g1)), np.linalg.inv(A1).T,
                                   rtol=1e-10, atol=1e-11)


@pytest.mark.unit
def test_ad_identities():
    rng = np.random.default_rng(4)
    for _ in range(10):
        V, W = rng.standard_normal(6), rng.standard_normal(6)
        adV, adW = arr(lie.ad(V.tolist())), arr(lie.ad(W.tolist()))
        np.testing.assert_allclose(adV, ad_ref(V), rtol=RTOL, atol=ATOL)
        # antisymmetry of the bracket
        np.testing.assert_allclose(adV @ W, -adW @ V, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(adV @ V, np.zeros(6), rtol=0, atol=ATOL)
        # ad* = -ad^T
        np.testing.assert_allclose(arr(lie.ad_star(V.tolist())), -adV.T, rtol=0, atol=0)
        # Ad_g ad_V Ad_g^-1 = ad_{Ad_g V}
        g = random_posture(rng)
        A = arr(lie.Ad(g))
        np.testing.assert_allclose(A @ adV @ np.linalg.inv(A), arr(lie.ad((A @ V).tolist())),
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.unit
def test_apply_variants_equal_matrix_forms():
    rng = np.random.default_rng(5)
    for _ in range(10):
        g = random_posture(rng)
        V, W = rng.standard_normal(6), rng.standard_normal(6)
        A = Ad_ref(hom(g))
        Ai = np.linalg.inv(A)
        Vl, Wl = V.tolist(), W.tolist()
        np.testing.assert_allclose(arr(lie.Ad_apply(g, Vl)), A @ V, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(arr(lie.Ad_inv_apply(g, Vl)), Ai @ V, rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(arr(lie.Ad_T_apply(g, Wl)), A.T @ W, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(arr(lie.Ad_inv_T_apply(g, Wl)), Ai.T @ W,
                                   rtol=1e-10, atol=1e-11)
        adV = ad_ref(V)
        np.testing.assert_allclose(arr(lie.ad_apply(Vl, Wl)), adV @ W, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(arr(lie.ad_star_apply(Vl, Wl)), -adV.T @ W,
                                   rtol=1e-12, atol=1e-12)
        # and against the module's own matrix forms
        np.testing.assert_allclose(arr(lie.Ad_apply(g, Vl)), arr(lie.matvec(lie.Ad(g), Vl)),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(arr(lie.ad_star_apply(Vl, Wl)),
                                   arr(lie.matvec(lie.ad_star(Vl), Wl)), rtol=1e-12, atol=1e-12)
        # power pairing: <Ad*_g W, Ad_g V> = <W, V>
        np.testing.assert_allclose(np.dot(arr(lie.Ad_inv_T_apply(g, Wl)),
                                          arr(lie.Ad_apply(g, Vl))), W @ V, rtol=1e-10)


@pytest.mark.unit
def test_matrix_helpers():
    rng = np.random.default_rng(6)
    A, B = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    x = rng.standard_normal(6)
    np.testing.assert_allclose(arr(lie.matmul(A.tolist(), B.tolist())), A @ B, rtol=1e-12)
    np.testing.assert_allclose(arr(lie.matvec(A.tolist(), x.tolist())), A @ x, rtol=1e-12)
    np.testing.assert_allclose(lie.dot(x.tolist(), x.tolist()), x @ x, rtol=1e-12)
    np.testing.assert_allclose(arr(lie.transpose(A.tolist())), A.T, rtol=0, atol=0)
    R, S = random_rotation(rng), random_rotation(rng)
    np.testing.assert_allclose(arr(lie.matmul3(R.tolist(), S.tolist())), R @ S, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(arr(lie.matvec3(R.tolist(), x[:3].tolist())), R @ x[:3],
                               rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- exp_twist
def _expm(X, q):
    return scipy.linalg.expm(twist_matrix(X) * q)


@pytest.mark.unit
@pytest.mark.parametrize("X", [
    (0, 1, 0, 0, 0, 0),                                # prismatic y
    (0, 0, 1, 0, 0, 0),                                # prismatic z
    (0.6, 0.0, -0.8, 0, 0, 0),                         # prismatic, oblique unit direction
    (0, 0, 0, 1, 0, 0),                                # revolute x
    (0, 0, 0, 0, 1, 0),                                # revolute y
    (0, 0, 0, 0, 0, 1),                                # revolute z
    (0, 0, 0, 2 / 3, -1 / 3, 2 / 3),                   # revolute, generic unit axis
], ids=["prism_y", "prism_z", "prism_oblique", "rev_x", "rev_y", "rev_z", "rev_generic"])
@pytest.mark.parametrize("q", [-2.3, -0.4, 0.0, 0.7, 3.0])
def test_exp_twist_against_expm(X, q):
    np.testing.assert_allclose(hom(lie.exp_twist(X, q)), _expm(X, q), rtol=1e-12, atol=1e-13)


@pytest.mark.unit
@pytest.mark.parametrize("pitch", [0.0, 0.35])
def test_exp_twist_screw_through_offset_point(pitch):
    """Revolute (pitch 0) / screw about an axis w through r: X = [-w x r + pitch w; w]."""
    w = np.array([1.0, 2.0, -2.0]) / 3.0
    r = np.array([0.4, -1.2, 0.9])
    X = np.concatenate([-np.cross(w, r) + pitch * w, w])
    for q in (-1.1, 0.3, 2.5):
        G = hom(lie.exp_twist(X.tolist(), q))
        np.testing.assert_allclose(G, _expm(X, q), rtol=1e-12, atol=1e-13)
        # points of the axis move only along it (by pitch * q)
        np.testing.assert_allclose(G[:3, :3] @ r + G[:3, 3], r + pitch * q * w,
                                   rtol=1e-12, atol=1e-13)


@pytest.mark.unit
def test_exp_twist_rejects_non_unit_twists():
    with pytest.raises(ValueError):
        lie.exp_twist((0, 2, 0, 0, 0, 0), 0.3)
    with pytest.raises(ValueError):
        lie.exp_twist((0, 0, 0, 0, 0, 0.5), 0.3)
    with pytest.raises(ValueError):
        lie.rot_axis(3, 1.0, 0.0)


unit_vectors = st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 3).filter(
    lambda v: 0.1 < np.linalg.norm(v)).map(lambda v: np.asarray(v) / np.linalg.norm(v))
points = st.tuples(*[st.floats(-3.0, 3.0, allow_nan=False)] * 3).map(np.asarray)
angles = st.floats(-2 * np.pi, 2 * np.pi, allow_nan=False)


@pytest.mark.unit
@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(w=unit_vectors, r=points, q=angles, pitch=st.floats(-1.0, 1.0, allow_nan=False))
def test_exp_twist_property_random_screws(w, r, q, pitch):
    X = np.concatenate([-np.cross(w, r) + pitch * w, w])
    G = hom(lie.exp_twist(X.tolist(), q))
    np.testing.assert_allclose(G, _expm(X, q), rtol=1e-10, atol=1e-10)
    R = G[:3, :3]
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.unit
@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(w1=unit_vectors, w2=unit_vectors, r1=points, r2=points, q1=angles, q2=angles,
       V=st.tuples(*[st.floats(-5.0, 5.0, allow_nan=False)] * 6).map(np.asarray))
def test_Ad_property_random_postures(w1, w2, r1, r2, q1, q2, V):
    g1 = lie.exp_twist(np.concatenate([-np.cross(w1, r1), w1]).tolist(), q1)
    g2 = lie.exp_twist(np.concatenate([-np.cross(w2, r2), w2]).tolist(), q2)
    g12 = lie.compose(g1, g2)
    np.testing.assert_allclose(arr(lie.Ad(g12)), arr(lie.Ad(g1)) @ arr(lie.Ad(g2)),
                               rtol=1e-10, atol=1e-10)
    # moving a twist to a frame and back is the identity
    np.testing.assert_allclose(arr(lie.Ad_inv_apply(g12, lie.Ad_apply(g12, V.tolist()))), V,
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(arr(lie.Ad_apply(g12, V.tolist())), Ad_ref(hom(g12)) @ V,
                               rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------- inertia
def _point_masses(rng, n=7):
    m = rng.uniform(0.5, 3.0, n)
    r = rng.standard_normal((n, 3)) * 0.6 + np.array([0.2, -0.1, 0.4])
    return m, r


def _inertia_from_point_masses(m, r):
    """Spatial inertia about the frame origin from T = 1/2 sum m_i |v + w x r_i|^2."""
    M = np.zeros((6, 6))
    for mi, ri in zip(m, r):
        Ji = np.hstack([np.eye(3), -np_hat(ri)])  # velocity of point i = Ji @ [v; w]
        M += mi * Ji.T @ Ji
    return M


@pytest.mark.unit
def test_spatial_inertia_equals_point_mass_sum():
    rng = np.random.default_rng(7)
    m, r = _point_masses(rng)
    mass = m.sum()
    c = (m[:, None] * r).sum(axis=0) / mass
    Ic = sum(mi * ((ri - c) @ (ri - c) * np.eye(3) - np.outer(ri - c, ri - c))
             for mi, ri in zip(m, r))
    M = arr(lie.spatial_inertia(float(mass), c.tolist(), Ic.tolist()))
    np.testing.assert_allclose(M, _inertia_from_point_masses(m, r), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-14)
    assert np.linalg.eigvalsh(M).min() > 1e-6


@pytest.mark.unit
def test_spatial_inertia_structural_zeros_for_com_on_z():
    M = lie.spatial_inertia(230.0, (0, 0, 0.13), [[30.0, 0, 0], [0, 80.0, 0], [0, 0, 95.0]])
    Ma = arr(M)
    np.testing.assert_allclose(Ma, Ma.T, rtol=0, atol=0)
    assert np.linalg.eigvalsh(Ma).min() > 0
    # entries that are zero by structure are literal zeros, not 0.0 * something
    for i, j in [(0, 1), (0, 2), (0, 3), (0, 5), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5),
                 (3, 4), (3, 5), (4, 5), (5, 0), (5, 1), (5, 2)]:
        assert is_literal_zero(M[i][j]), (i, j, M[i][j])
    # momentum of w = e_y with the com at h e_z: m (e_y x h e_z) = +m h e_x
    assert Ma[0, 4] == pytest.approx(230.0 * 0.13)
    assert Ma[1, 3] == pytest.approx(-230.0 * 0.13)
    assert Ma[3, 3] == pytest.approx(30.0 + 230.0 * 0.13 ** 2)


@pytest.mark.unit
def test_congruence_to_parent_and_kinetic_energy_invariance():
    rng = np.random.default_rng(8)
    m, r = _point_masses(rng)
    Mc = _inertia_from_point_masses(m, r)  # child inertia in the child frame
    for _ in range(5):
        g = random_posture(rng)  # g_{parent, child}
        A = np.linalg.inv(Ad_ref(hom(g)))  # Ad_{g^-1}: parent twist -> child frame
        Mp = arr(lie.congruence_to_parent(g, Mc.tolist()))
        np.testing.assert_allclose(Mp, A.T @ Mc @ A, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(Mp, Mp.T, rtol=0, atol=0)
        # same body, same motion: the kinetic energy does not depend on the frame
        Vp = rng.standard_normal(6)
        Vc = arr(lie.Ad_inv_apply(g, Vp.tolist()))
        assert 0.5 * Vp @ Mp @ Vp == pytest.approx(0.5 * Vc @ Mc @ Vc, rel=1e-10)
        # and equals the point-mass kinetic energy computed with parent-frame positions
        G = hom(g)
        r_par = (G[:3, :3] @ r.T).T + G[:3, 3]
        T_pts = 0.5 * sum(mi * np.sum((Vp[:3] + np.cross(Vp[3:], ri)) ** 2)
                          for mi, ri in zip(m, r_par))
        assert 0.5 * Vp @ Mp @ Vp == pytest.approx(T_pts, rel=1e-10)


# --------------------------------------------------------------------------- Pyomo expressions
def _pyomo_model(rng, n=12):
    mdl = pyo.ConcreteModel()
    mdl.x = pyo.Var(range(n))
    vals = rng.uniform(-1.5, 1.5, n)
    for i in range(n):
        mdl.x[i].set_value(float(vals[i]))
    return mdl, vals


def _values(nested):
    if isinstance(nested, (list, tuple)):
        return np.array([_values(x) for x in nested], dtype=float)
    return pyo.value(nested)


@pytest.mark.unit
def test_functions_accept_pyomo_expressions():
    rng = np.random.default_rng(9)
    mdl, x = _pyomo_model(rng)
    xv = [mdl.x[i] for i in range(12)]
    # postures built from Pyomo variables through the exponential map
    w_gen = [2 / 3, -1 / 3, 2 / 3]
    gv = lie.compose(lie.exp_twist((0, 0, 0, 0, 0, 1), xv[0]),
                     lie.compose(lie.exp_twist((0, 1, 0, 0, 0, 0), xv[1]),
                                 lie.exp_twist((0.1, -0.2, 0.3) + tuple(w_gen), xv[2])))
    gf = lie.compose(lie.exp_twist((0, 0, 0, 0, 0, 1), x[0]),
                     lie.compose(lie.exp_twist((0, 1, 0, 0, 0, 0), x[1]),
                                 lie.exp_twist((0.1, -0.2, 0.3) + tuple(w_gen), x[2])))
    Vv, Vf = xv[3:9], list(x[3:9])
    Wv = [xv[9], xv[10], xv[11], xv[3], xv[0], xv[5]]
    Wf = [x[9], x[10], x[11], x[3], x[0], x[5]]
    M = lie.spatial_inertia(12.0, (0.1, -0.05, 0.3), [[2.0, 0.1, 0], [0.1, 3.0, 0], [0, 0, 4.0]])
    pairs = [
        (lie.hat(Vv[3:]), lie.hat(Vf[3:])),
        (gv[0], gf[0]), (gv[1], gf[1]),
        (lie.inverse(gv)[1], lie.inverse(gf)[1]),
        (lie.Ad(gv), lie.Ad(gf)),
        (lie.Ad_inv(gv), lie.Ad_inv(gf)),
        (lie.Ad_star(gv), lie.Ad_star(gf)),
        (lie.ad(Vv), lie.ad(Vf)),
        (lie.ad_star(Vv), lie.ad_star(Vf)),
        (lie.Ad_apply(gv, Vv), lie.Ad_apply(gf, Vf)),
        (lie.Ad_inv_apply(gv, Vv), lie.Ad_inv_apply(gf, Vf)),
        (lie.Ad_T_apply(gv, Wv), lie.Ad_T_apply(gf, Wf)),
        (lie.Ad_inv_T_apply(gv, Wv), lie.Ad_inv_T_apply(gf, Wf)),
        (lie.ad_apply(Vv, Wv), lie.ad_apply(Vf, Wf)),
        (lie.ad_star_apply(Vv, Wv), lie.ad_star_apply(Vf, Wf)),
        (lie.matvec(M, Vv), lie.matvec(M, Vf)),
        (lie.congruence_to_parent(gv, M), lie.congruence_to_parent(gf, M)),
    ]
    n_symbolic = 0
    for sym, num in pairs:
        np.testing.assert_allclose(_values(sym), arr(num), rtol=1e-12, atol=1e-12)
        n_symbolic += sum(not isinstance(e, numbers.Number)
                          for e in np.asarray(sym, dtype=object).ravel())
    assert n_symbolic > 100  # the Pyomo route really built expressions
    # the float route agrees with the independent reference too
    np.testing.assert_allclose(_values(lie.Ad(gv)), Ad_ref(hom(gf)), rtol=1e-12, atol=1e-12)


@pytest.mark.unit
def test_structural_zeros_stay_literal_with_pyomo():
    mdl = pyo.ConcreteModel()
    mdl.th = pyo.Var(initialize=0.4)
    mdl.s = pyo.Var(initialize=-0.7)
    # rotation about z: R = [[c, -s, 0], [s, c, 0], [0, 0, 1]], p = 0
    g = lie.exp_twist((0, 0, 0, 0, 0, 1), mdl.th)
    A = lie.Ad(g)
    nonzero = {(0, 0), (0, 1), (1, 0), (1, 1), (2, 2), (3, 3), (3, 4), (4, 3), (4, 4), (5, 5)}
    for i in range(6):
        for j in range(6):
            if (i, j) not in nonzero:
                assert is_literal_zero(A[i][j]), (i, j, A[i][j])
    assert A[2][2] == 1 and A[5][5] == 1
    assert not isinstance(A[0][0], numbers.Number)
    c, s = np.cos(0.4), np.sin(0.4)
    np.testing.assert_allclose(_values(A)[:2, :2], [[c, -s], [s, c]], rtol=1e-14)
    # prismatic joint: R is the literal identity and p has literal zeros off the axis
    R, p = lie.exp_twist((0, 1, 0, 0, 0, 0), mdl.s)
    assert all(R[i][j] == (1 if i == j else 0) and isinstance(R[i][j], numbers.Number)
               for i in range(3) for j in range(3))
    assert is_literal_zero(p[0]) and is_literal_zero(p[2])
    assert pyo.value(p[1]) == pytest.approx(-0.7)
    # ad of a pure rotation rate about z: only the w^ blocks survive
    adV = lie.ad([0, 0, 0, 0, 0, mdl.th])
    for i in range(6):
        for j in range(6):
            if (i, j) not in {(0, 1), (1, 0), (3, 4), (4, 3)}:
                assert is_literal_zero(adV[i][j]), (i, j, adV[i][j])
    # translation offset composed with a rotation about x keeps row/column structure
    up = (lie.IDENTITY[0], (0, 0, 0.3))
    gx = lie.compose(up, lie.exp_twist((0, 0, 0, 1, 0, 0), mdl.th))
    assert is_literal_zero(gx[0][0][1]) and is_literal_zero(gx[0][1][0])
    assert is_literal_zero(gx[1][0]) and is_literal_zero(gx[1][1]) and gx[1][2] == 0.3
    Ax = lie.Ad(gx)  # p^ R with p = h e_z, R = Rx: row 2 of the top-right block is zero
    assert all(is_literal_zero(Ax[2][j]) for j in range(3, 6))
    assert all(is_literal_zero(Ax[i][j]) for i in range(3, 6) for j in range(3))
