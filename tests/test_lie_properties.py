"""Property-based tests (hypothesis) of every function of :mod:`pyomo_lap.spatial.lie`, against
references built here from the definitions in plain NumPy / SciPy (never from the module's
block formulas):

* posture ``g = (R, p)`` <-> 4x4 ``[[R, p], [0, 1]]``; twist ``[v; w]`` <-> ``[[w^, v], [0, 0]]``;
* ``Ad_g V = (g V^ g^-1)^v``, ``ad_V Y = [V^, Y^]^v``, ``exp_twist(X, q) = expm(X^ q)``;
* the spatial inertia is the metric of the kinetic energy of point masses.

(test_lie.py holds the fixed-seed and structural-zero tests; the two hypothesis tests there
cover exp_twist on screws and the Ad homomorphism.)
"""
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from pyomo_lap.spatial import lie

PROPS = settings(max_examples=40, deadline=None, derandomize=True, database=None)


def fl(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


vec3 = st.tuples(fl(-3, 3), fl(-3, 3), fl(-3, 3)).map(np.array)
vec6 = st.tuples(*[fl(-3, 3)] * 6).map(np.array)
quats = st.tuples(fl(-1, 1), fl(-1, 1), fl(-1, 1), fl(-1, 1)).filter(
    lambda q: 0.2 < np.linalg.norm(q)).map(lambda q: np.array(q) / np.linalg.norm(q))


def quat_to_R(q):
    a, b, c, d = q
    return np.array([[a*a + b*b - c*c - d*d, 2*(b*c - a*d), 2*(b*d + a*c)],
                     [2*(b*c + a*d), a*a - b*b + c*c - d*d, 2*(c*d - a*b)],
                     [2*(b*d - a*c), 2*(c*d + a*b), a*a - b*b - c*c + d*d]])


postures = st.tuples(quats, vec3).map(lambda t: (quat_to_R(t[0]).tolist(), t[1].tolist()))


def np_hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def tw(V):
    T = np.zeros((4, 4))
    T[:3, :3] = np_hat(V[3:])
    T[:3, 3] = V[:3]
    return T


def untw(T):
    return np.array([T[0, 3], T[1, 3], T[2, 3], T[2, 1], T[0, 2], T[1, 0]])


def hom(g):
    G = np.eye(4)
    G[:3, :3] = np.asarray(g[0], float)
    G[:3, 3] = np.asarray(g[1], float)
    return G


def Ad_ref(g):
    G = hom(g)
    Gi = np.linalg.inv(G)
    return np.column_stack([untw(G @ tw(e) @ Gi) for e in np.eye(6)])


def ad_ref(V):
    A = tw(V)
    return np.column_stack([untw(A @ tw(e) - tw(e) @ A) for e in np.eye(6)])


def arr(x):
    return np.array(x, dtype=float)


TOL = dict(rtol=1e-10, atol=1e-10)


@pytest.mark.unit
@PROPS
@given(w=vec3, x=vec3)
def test_hat_vee_cross(w, x):
    W = arr(lie.hat(w.tolist()))
    np.testing.assert_array_equal(W, -W.T)
    np.testing.assert_allclose(W @ x, np.cross(w, x), **TOL)
    np.testing.assert_array_equal(arr(lie.vee(lie.hat(w.tolist()))), w)
    np.testing.assert_allclose(arr(lie.cross(w.tolist(), x.tolist())), np.cross(w, x), **TOL)


@pytest.mark.unit
@PROPS
@given(g1=postures, g2=postures, x=vec3)
def test_compose_inverse_and_3x3_helpers(g1, g2, x):
    np.testing.assert_allclose(hom(lie.compose(g1, g2)), hom(g1) @ hom(g2), **TOL)
    np.testing.assert_allclose(hom(lie.inverse(g1)), np.linalg.inv(hom(g1)), **TOL)
    np.testing.assert_allclose(hom(lie.compose(g1, lie.inverse(g1))), np.eye(4), **TOL)
    R, S = arr(g1[0]), arr(g2[0])
    np.testing.assert_allclose(arr(lie.matmul3(g1[0], g2[0])), R @ S, **TOL)
    np.testing.assert_allclose(arr(lie.matvec3(g1[0], x.tolist())), R @ x, **TOL)
    np.testing.assert_allclose(arr(lie.matTvec3(g1[0], x.tolist())), R.T @ x, **TOL)


@pytest.mark.unit
@PROPS
@given(g=postures)
def test_Ad_inverse_and_dual(g):
    A = Ad_ref(g)
    np.testing.assert_allclose(arr(lie.Ad(g)), A, **TOL)
    np.testing.assert_allclose(arr(lie.Ad_inv(g)), np.linalg.inv(A), **TOL)
    np.testing.assert_allclose(arr(lie.Ad_star(g)), np.linalg.inv(A).T, **TOL)
    np.testing.assert_allclose(arr(lie.Ad(lie.inverse(g))), np.linalg.inv(A), **TOL)


@pytest.mark.unit
@PROPS
@given(V=vec6, Y=vec6, Z=vec6, g=postures)
def test_ad_bracket_identities(V, Y, Z, g):
    adV = arr(lie.ad(V.tolist()))
    np.testing.assert_allclose(adV, ad_ref(V), **TOL)
    np.testing.assert_array_equal(arr(lie.ad_star(V.tolist())), -adV.T)
    br = lambda a, b: ad_ref(a) @ b  # noqa: E731  (reference bracket)
    np.testing.assert_allclose(adV @ Y, -(arr(lie.ad(Y.tolist())) @ V), **TOL)   # antisymmetry
    jacobi = br(V, br(Y, Z)) + br(Y, br(Z, V)) + br(Z, br(V, Y))
    np.testing.assert_allclose(jacobi, 0.0, atol=1e-9)
    np.testing.assert_allclose(                       # module bracket satisfies Jacobi too
        arr(lie.ad_apply(V.tolist(), lie.ad_apply(Y.tolist(), Z.tolist())))
        + arr(lie.ad_apply(Y.tolist(), lie.ad_apply(Z.tolist(), V.tolist())))
        + arr(lie.ad_apply(Z.tolist(), lie.ad_apply(V.tolist(), Y.tolist()))), 0.0, atol=1e-9)
    A = Ad_ref(g)
    np.testing.assert_allclose(A @ adV @ np.linalg.inv(A), arr(lie.ad((A @ V).tolist())), **TOL)


@pytest.mark.unit
@PROPS
@given(g=postures, V=vec6, W=vec6)
def test_apply_variants_and_power_pairing(g, V, W):
    A = Ad_ref(g)
    Ai = np.linalg.inv(A)
    Vl, Wl = V.tolist(), W.tolist()
    np.testing.assert_allclose(arr(lie.Ad_apply(g, Vl)), A @ V, **TOL)
    np.testing.assert_allclose(arr(lie.Ad_inv_apply(g, Vl)), Ai @ V, **TOL)
    np.testing.assert_allclose(arr(lie.Ad_T_apply(g, Wl)), A.T @ W, **TOL)
    np.testing.assert_allclose(arr(lie.Ad_inv_T_apply(g, Wl)), Ai.T @ W, **TOL)
    np.testing.assert_allclose(arr(lie.ad_apply(Vl, Wl)), ad_ref(V) @ W, **TOL)
    np.testing.assert_allclose(arr(lie.ad_star_apply(Vl, Wl)), -ad_ref(V).T @ W, **TOL)
    # a wrench moved with Ad* and a twist moved with Ad deliver the same power
    assert np.dot(arr(lie.Ad_inv_T_apply(g, Wl)), arr(lie.Ad_apply(g, Vl))) == \
        pytest.approx(W @ V, rel=1e-9, abs=1e-9)


@pytest.mark.unit
@PROPS
@given(M=st.lists(fl(-2, 2), min_size=36, max_size=36), N=st.lists(fl(-2, 2), min_size=36, max_size=36),
       x=vec6)
def test_6x6_helpers(M, N, x):
    A, B = np.reshape(M, (6, 6)), np.reshape(N, (6, 6))
    np.testing.assert_allclose(arr(lie.matmul(A.tolist(), B.tolist())), A @ B, **TOL)
    np.testing.assert_allclose(arr(lie.matvec(A.tolist(), x.tolist())), A @ x, **TOL)
    np.testing.assert_array_equal(arr(lie.transpose(A.tolist())), A.T)
    assert lie.dot(x.tolist(), x.tolist()) == pytest.approx(x @ x, rel=1e-12)


unit3 = vec3.filter(lambda v: np.linalg.norm(v) > 0.1).map(lambda v: v / np.linalg.norm(v))


@pytest.mark.unit
@PROPS
@given(w=unit3, r=vec3, q1=fl(-4, 4), q2=fl(-4, 4), revolute=st.booleans())
def test_exp_twist_is_a_one_parameter_subgroup(w, r, q1, q2, revolute):
    X = (np.concatenate([-np.cross(w, r), w]) if revolute else np.concatenate([w, np.zeros(3)]))
    G1, G2 = hom(lie.exp_twist(X.tolist(), q1)), hom(lie.exp_twist(X.tolist(), q2))
    np.testing.assert_allclose(G1 @ G2, hom(lie.exp_twist(X.tolist(), q1 + q2)), **TOL)
    np.testing.assert_allclose(G1, scipy.linalg.expm(tw(X) * q1), **TOL)
    # derivative: d/dq exp(X q) = exp(X q) X^ (central difference)
    h = 1e-6
    dG = (hom(lie.exp_twist(X.tolist(), q1 + h)) - hom(lie.exp_twist(X.tolist(), q1 - h))) / (2 * h)
    np.testing.assert_allclose(dG, G1 @ tw(X), atol=1e-7)


@pytest.mark.unit
@PROPS
@given(masses=st.lists(fl(0.1, 5.0), min_size=1, max_size=6),
       pts=st.lists(vec3, min_size=6, max_size=6), g=postures, V=vec6)
def test_spatial_inertia_and_congruence_from_kinetic_energy(masses, pts, g, V):
    m = np.array(masses)
    r = np.array(pts[:len(m)])
    mass = m.sum()
    c = (m[:, None] * r).sum(axis=0) / mass
    Ic = sum(mi * ((ri - c) @ (ri - c) * np.eye(3) - np.outer(ri - c, ri - c)) for mi, ri in zip(m, r))
    M = arr(lie.spatial_inertia(float(mass), c.tolist(), Ic.tolist()))
    # kinetic energy of the point masses for the twist V = [v; w] of the frame
    T = 0.5 * sum(mi * np.sum((V[:3] + np.cross(V[3:], ri)) ** 2) for mi, ri in zip(m, r))
    assert 0.5 * V @ M @ V == pytest.approx(T, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > -1e-9
    # the same body seen from a parent frame: g = g_{parent, child}
    Mp = arr(lie.congruence_to_parent(g, M.tolist()))
    G = hom(g)
    r_par = (G[:3, :3] @ r.T).T + G[:3, 3]
    T_par = 0.5 * sum(mi * np.sum((V[:3] + np.cross(V[3:], ri)) ** 2) for mi, ri in zip(m, r_par))
    assert 0.5 * V @ Mp @ V == pytest.approx(T_par, rel=1e-9, abs=1e-9)
    np.testing.assert_array_equal(Mp, Mp.T)


@pytest.mark.unit
@PROPS
@given(axis=st.integers(0, 2), th=fl(-7, 7))
def test_rot_axis_is_a_rotation_about_the_axis(axis, th):
    R = arr(lie.rot_axis(axis, np.cos(th), np.sin(th)))
    e = np.eye(3)[axis]
    np.testing.assert_allclose(R, scipy.linalg.expm(np_hat(e) * th), **TOL)
    with pytest.raises(ValueError):
        lie.rot_axis(axis + 3, 1.0, 0.0)
