r"""SE(3) and se(3) for the race-car chain, written once for floats, Pyomo and CasADi.

Conventions (Bartali et al. 2021, preprint ``000``; Murray-Li-Sastry):

* a twist is :math:`V = [v;\ \omega]` (linear part first), a wrench :math:`W = [f;\ m]`;
* a posture is :math:`g = (R, p) \in SE(3)`, stored as a pair ``(R, p)`` with ``R`` a
  3x3 nested list (rows) and ``p`` a 3-list;
* :math:`\mathrm{Ad}_g = \begin{bmatrix} R & \hat p R \\ 0 & R\end{bmatrix}` maps a twist
  from the frame of ``g``'s target to that of its origin (eq 2),
  :math:`\mathrm{Ad}^*_g = \mathrm{Ad}_g^{-T}` maps wrenches (eq 6);
* :math:`\mathrm{ad}_V = \begin{bmatrix}\hat\omega & \hat v\\ 0 & \hat\omega\end{bmatrix}`
  (eq 15), :math:`\mathrm{ad}^*_V = -\mathrm{ad}_V^T`;
* the spatial inertia about a frame origin with centre of mass at ``c`` is
  :math:`M = \begin{bmatrix} mI & -m\hat c\\ m\hat c & I_c - m\hat c\hat c\end{bmatrix}`.

All entries are "scalars" in the sense of :mod:`pyomo_lap.spatial.backend`: literal zeros are
structural and are never multiplied into an expression. Vectors are lists, matrices are
lists of rows. Nothing here inverts a 6x6 matrix.
"""
from __future__ import annotations

from .backend import add, cos, is_zero, mul, neg, sin, sub, total

__all__ = [
    "hat", "vee", "cross", "matvec3", "matmul3", "transpose", "rot_axis", "exp_twist",
    "compose", "inverse", "Ad", "Ad_inv", "ad", "ad_star", "Ad_star",
    "Ad_apply", "Ad_inv_apply", "Ad_T_apply", "Ad_inv_T_apply", "ad_apply", "ad_star_apply",
    "spatial_inertia", "matvec", "matmul", "dot", "congruence_to_parent", "IDENTITY",
]

_I3 = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
IDENTITY = (_I3, (0, 0, 0))
"""The identity posture ``(I, 0)``."""


# --------------------------------------------------------------------------- 3D helpers
def hat(w):
    """Skew-symmetric matrix of a 3-vector, ``hat(w) @ x = w x x``.

    Parameters
    ----------
    w : sequence of 3 scalars

    Returns
    -------
    list of 3 lists of 3 scalars
    """
    return [[0, neg(w[2]), w[1]], [w[2], 0, neg(w[0])], [neg(w[1]), w[0], 0]]


def vee(W):
    """Inverse of :func:`hat` for a 3x3 skew-symmetric matrix."""
    return [W[2][1], W[0][2], W[1][0]]


def cross(a, b):
    """Cross product ``a x b`` of two 3-vectors."""
    return [
        sub(mul(a[1], b[2]), mul(a[2], b[1])),
        sub(mul(a[2], b[0]), mul(a[0], b[2])),
        sub(mul(a[0], b[1]), mul(a[1], b[0])),
    ]


def transpose(A):
    """Transpose of a nested-list matrix."""
    return [list(col) for col in zip(*A)]


def matvec3(R, x):
    """``R @ x`` for a 3x3 matrix and a 3-vector."""
    return [total(mul(R[i][j], x[j]) for j in range(3)) for i in range(3)]


def matTvec3(R, x):
    """``R.T @ x`` for a 3x3 matrix and a 3-vector."""
    return [total(mul(R[j][i], x[j]) for j in range(3)) for i in range(3)]


def matmul3(A, B):
    """``A @ B`` for 3x3 matrices."""
    return [[total(mul(A[i][k], B[k][j]) for k in range(3)) for j in range(3)] for i in range(3)]


def rot_axis(axis, c, s):
    """Rotation about a unit coordinate axis, from the cosine and sine of the angle.

    Parameters
    ----------
    axis : int
        0, 1 or 2 for x, y, z.
    c, s : scalar
        cos and sin of the angle [rad].

    Returns
    -------
    list of 3 lists of 3 scalars, with exact structural zeros and ones.

    Raises
    ------
    ValueError
        If ``axis`` is not 0, 1 or 2.
    """
    if axis == 0:
        return [[1, 0, 0], [0, c, neg(s)], [0, s, c]]
    if axis == 1:
        return [[c, 0, s], [0, 1, 0], [neg(s), 0, c]]
    if axis == 2:
        return [[c, neg(s), 0], [s, c, 0], [0, 0, 1]]
    raise ValueError(f"axis must be 0, 1 or 2 (x, y, z), got {axis!r}")


def _unit_axis(w):
    """Index of ``w`` if it is a unit coordinate vector, else None."""
    nz = [i for i in range(3) if not is_zero(w[i])]
    if len(nz) == 1 and w[nz[0]] == 1:
        return nz[0]
    return None


def exp_twist(X, q):
    r"""Exponential :math:`e^{\hat X q}` of a joint twist times a joint coordinate.

    Parameters
    ----------
    X : sequence of 6 numbers
        Joint twist ``[v; w]`` in the joint's own frame: ``w = 0`` and ``|v| = 1`` for a
        prismatic joint, ``|w| = 1`` for a revolute joint (``v = -w x r`` for an axis through
        ``r``).
    q : scalar
        Joint coordinate [m or rad].

    Returns
    -------
    (R, p) : posture

    Raises
    ------
    ValueError
        If ``X`` is neither a unit translation nor a unit rotation twist.

    Notes
    -----
    Product-of-exponentials formula, eq (1). Coordinate axes give exact structural zeros.
    """
    v, w = list(X[:3]), list(X[3:])
    if all(is_zero(wi) for wi in w):
        if abs(sum(float(vi) ** 2 for vi in v) - 1.0) > 1e-12:
            raise ValueError(f"prismatic joint twist must have a unit direction, got {X!r}")
        return [list(r) for r in _I3], [mul(vi, q) for vi in v]
    if abs(sum(float(wi) ** 2 for wi in w) - 1.0) > 1e-12:
        raise ValueError(f"revolute joint twist must have a unit axis, got {X!r}")
    c, s = cos(q), sin(q)
    k = _unit_axis(w)
    if k is not None:
        R = rot_axis(k, c, s)
    else:  # Rodrigues, R = I + s w^ + (1 - c) w^ w^
        W = hat(w)
        W2 = matmul3(W, W)
        omc = 1 - c
        R = [[total([_I3[i][j], mul(s, W[i][j]), mul(omc, W2[i][j])]) for j in range(3)]
             for i in range(3)]
    if all(is_zero(vi) for vi in v):
        return R, [0, 0, 0]
    # p = (I - R)(w x v) + w w^T v q   (Murray, Li, Sastry eq 2.36)
    wxv = cross(w, v)
    ImR = [[sub(_I3[i][j], R[i][j]) for j in range(3)] for i in range(3)]
    wv = total(mul(w[i], v[i]) for i in range(3))
    t = matvec3(ImR, wxv)
    return R, [add(t[i], mul(mul(w[i], wv), q)) for i in range(3)]


def compose(g1, g2):
    """Product ``g1 g2`` of two postures."""
    R1, p1 = g1
    R2, p2 = g2
    return matmul3(R1, R2), [add(a, b) for a, b in zip(matvec3(R1, p2), p1)]


def inverse(g):
    """Inverse posture ``(R^T, -R^T p)``."""
    R, p = g
    Rt = transpose(R)
    return Rt, [neg(x) for x in matvec3(Rt, p)]


# --------------------------------------------------------------------------- 6x6 matrices
def Ad(g):
    """Adjoint matrix ``Ad_g = [[R, p^ R], [0, R]]`` (6x6), eq (2)."""
    R, p = g
    pR = matmul3(hat(p), R)
    top = [list(R[i]) + list(pR[i]) for i in range(3)]
    bot = [[0, 0, 0] + list(R[i]) for i in range(3)]
    return top + bot


def Ad_inv(g):
    """``Ad_g^{-1} = Ad_{g^{-1}}`` (6x6)."""
    return Ad(inverse(g))


def Ad_star(g):
    """Coadjoint ``Ad*_g = Ad_g^{-T}`` (6x6), eq (6): maps wrenches like Ad_g maps twists."""
    return transpose(Ad(inverse(g)))


def ad(V):
    """Lie bracket matrix ``ad_V = [[w^, v^], [0, w^]]`` (6x6), eq (15)."""
    W, Vh = hat(V[3:]), hat(V[:3])
    return [list(W[i]) + list(Vh[i]) for i in range(3)] + [[0, 0, 0] + list(W[i]) for i in range(3)]


def ad_star(V):
    """``ad*_V = -ad_V^T`` (6x6)."""
    return [[neg(x) for x in row] for row in transpose(ad(V))]


def matvec(A, x):
    """``A @ x`` for nested-list matrices, skipping structural zeros."""
    return [total(mul(a, b) for a, b in zip(row, x)) for row in A]


def matmul(A, B):
    """``A @ B`` for nested-list matrices, skipping structural zeros."""
    Bt = transpose(B)
    return [[total(mul(a, b) for a, b in zip(row, col)) for col in Bt] for row in A]


def dot(a, b):
    """Inner product of two vectors, skipping structural zeros."""
    return total(mul(x, y) for x, y in zip(a, b))


# --------------------------------------------------------------------------- applied forms
def Ad_apply(g, V):
    """``Ad_g V`` without forming the matrix: ``[R v + p x (R w); R w]``."""
    R, p = g
    Rw = matvec3(R, V[3:])
    Rv = matvec3(R, V[:3])
    pxRw = cross(p, Rw)
    return [add(a, b) for a, b in zip(Rv, pxRw)] + Rw


def Ad_inv_apply(g, V):
    """``Ad_g^{-1} V = [R^T (v - p x w); R^T w]``: a twist moved to the target frame of g."""
    R, p = g
    w = list(V[3:])
    v = [sub(a, b) for a, b in zip(V[:3], cross(p, w))]
    return matTvec3(R, v) + matTvec3(R, w)


def Ad_T_apply(g, W):
    """``Ad_g^T W = [R^T f; R^T (m - p x f)]``: a wrench moved from the origin frame of g
    to its target frame (``W^j = Ad_{g_{ij}}^T W^i``)."""
    R, p = g
    f, m = list(W[:3]), list(W[3:])
    mm = [sub(a, b) for a, b in zip(m, cross(p, f))]
    return matTvec3(R, f) + matTvec3(R, mm)


def Ad_inv_T_apply(g, W):
    """``Ad_{g^{-1}}^T W = [R f; p x (R f) + R m]``: a wrench moved from the target frame of
    ``g = g_{ij}`` to its origin frame (child to parent: ``W^i = Ad_{g_ij^{-1}}^T W^j``)."""
    R, p = g
    Rf = matvec3(R, W[:3])
    Rm = matvec3(R, W[3:])
    return Rf + [add(a, b) for a, b in zip(cross(p, Rf), Rm)]


def ad_apply(V, Y):
    """``ad_V Y = [w x y_v + v x y_w; w x y_w]`` (the Lie bracket [V, Y])."""
    v, w = V[:3], V[3:]
    yv, yw = Y[:3], Y[3:]
    return [add(a, b) for a, b in zip(cross(w, yv), cross(v, yw))] + cross(w, yw)


def ad_star_apply(V, W):
    """``ad*_V W = -ad_V^T W = [w x f; v x f + w x m]`` for a wrench ``W = [f; m]``."""
    v, w = V[:3], V[3:]
    f, m = W[:3], W[3:]
    return cross(w, f) + [add(a, b) for a, b in zip(cross(v, f), cross(w, m))]


# --------------------------------------------------------------------------- inertia
def spatial_inertia(mass, com, inertia_com):
    """Spatial inertia (6x6) about a frame origin, eq (13).

    Parameters
    ----------
    mass : float
        Mass [kg].
    com : sequence of 3 floats
        Centre of mass in the body frame [m].
    inertia_com : 3x3 nested sequence
        Inertia tensor about the centre of mass, body axes [kg m^2].

    Returns
    -------
    list of 6 lists of 6 scalars
        ``[[m I, -m c^], [m c^, I_c - m c^ c^]]``.
    """
    C = hat(com)
    CC = matmul3(C, C)
    mC = [[mul(mass, x) for x in row] for row in C]
    top = [[mass if i == j else 0 for j in range(3)] + [neg(x) for x in mC[i]] for i in range(3)]
    bot = [list(mC[i]) + [sub(inertia_com[i][j], mul(mass, CC[i][j])) for j in range(3)]
           for i in range(3)]
    return top + bot


def congruence_to_parent(g, M):
    """``A^T M A`` with ``A = Ad_{g^{-1}}``: a symmetric 6x6 inertia of a child body moved to
    its parent frame, ``g = g_{parent, child}`` (Step 2, line 7: ``A*_{kl} M A_{lk}``).

    Only the upper triangle is computed; the result is symmetric by construction.
    """
    A = Ad(inverse(g))
    MA = matmul(M, A)
    At = transpose(A)
    out = [[0] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            out[i][j] = total(mul(At[i][k], MA[k][j]) for k in range(6))
            out[j][i] = out[i][j]
    return out
