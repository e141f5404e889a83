r"""Analytic derivatives of the inverse dynamics of kinematic trees, Kim (2012) sec. 4.

=========================================  ==========================================
:func:`rnea_directional_derivative`        first-order derivative of Table 2 along a direction
:func:`rnea_derivatives`                   ``dtau/dq`` and ``dtau/dqd`` (its unit directions)
=========================================  ==========================================

Kim's Table 2 (:func:`pyomo_lap.spatial.dynamics.rnea`) differentiated line by line, on the
trees of :mod:`pyomo_lap.spatial.tree` with constant joint screws (no track joint).
"""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Tuple

from .backend import add, is_zero, mul, total
from .dynamics import _rnea
from .lie import Ad_inv_apply, Ad_inv_T_apply, ad_apply, ad_star_apply, dot, matvec
from .tree import (
    TRACK,
    KinematicTree,
    _check_len,
    _check_wrenches,
    _parent_acceleration,
)

__all__ = ["rnea_directional_derivative", "rnea_derivatives"]


# --------------------------------------------------------------------------- derivatives
def _check_no_track(tree, what):
    for i, jt in enumerate(tree.joint_type):
        if jt == TRACK:
            raise ValueError(
                f"{what} needs constant joint screws; {tree.body_name(i)} has a track joint, "
                "whose twist J_1^1(q1) would need the second derivative of the track frame")


def _add_vec(a, b):
    """Sum of two 6-vectors where ``None`` stands for a zero vector."""
    if a is None:
        return b
    if b is None:
        return a
    return [add(x, y) for x, y in zip(a, b)]


def _rnea_tangent(tree, mo, qd, a0, Vdot, IV, F, dq, dqd, dqdd):
    """Directional derivative of Kim's Table 2 (see :func:`rnea_directional_derivative`).

    ``None`` stands for a zero vector, so that a unit direction skips the bodies it does not
    reach (outside the joint's subtree going up, off the path to the root coming down).
    """
    n = tree.n_bodies
    dV, dVdot, dF, Sdq = [None] * n, [None] * n, [None] * n, [None] * n
    for i in range(n):
        p = tree.parent[i]
        gi = mo.g[i]
        dvp = None if p < 0 or dV[p] is None else Ad_inv_apply(gi, dV[p])
        dap = None if p < 0 or dVdot[p] is None else Ad_inv_apply(gi, dVdot[p])
        S = mo.S[i]
        if S is None:
            dV[i], dVdot[i] = dvp, dap
            continue
        k = tree.dof[i]
        dqk, dqdk, dqddk = dq[k], dqd[k], dqdd[k]
        if not is_zero(dqk):
            # d Ad_{T^-1} = -ad_{S dq} Ad_{T^-1}: d(Ad_{T^-1} X) = Ad_{T^-1} dX + ad_{Ad X} S dq
            Sdq[i] = [mul(s, dqk) for s in S]
            ap = _parent_acceleration(mo, i, p, Vdot, a0)
            dvp = _add_vec(dvp, ad_apply(mo.Vpar[i], Sdq[i]))
            dap = _add_vec(dap, ad_apply(ap, Sdq[i]))
        # eta = ad_{Vpar} S qd  ->  d eta = ad_{d Vpar} S qd + ad_{Vpar} S dqd
        dc = None
        if dvp is not None:
            dc = ad_apply(dvp, [mul(s, qd[k]) for s in S])
        Sdqd = None
        if not is_zero(dqdk):
            Sdqd = [mul(s, dqdk) for s in S]
            dc = _add_vec(dc, ad_apply(mo.Vpar[i], Sdqd))
        dV[i] = _add_vec(dvp, Sdqd)
        dVdot[i] = _add_vec(_add_vec(dap, dc),
                            None if is_zero(dqddk) else [mul(s, dqddk) for s in S])
    for i in range(n):
        if dV[i] is None and dVdot[i] is None:
            continue
        Ii = tree._exact_inertia[i]
        terms = []
        if dVdot[i] is not None:
            terms.append(matvec(Ii, dVdot[i]))
        if dV[i] is not None:
            terms.append(ad_star_apply(dV[i], IV[i]))
            terms.append(ad_star_apply(mo.V[i], matvec(Ii, dV[i])))
        dF[i] = [total(col) for col in zip(*terms)]
    dtau = [0] * tree.nv
    for i in reversed(range(n)):
        p = tree.parent[i]
        if p >= 0:
            # d(Ad_{T^-1}^T F) = Ad_{T^-1}^T (dF + ad*_{S dq} F)   (ad* = -ad^T)
            w = dF[i]
            if Sdq[i] is not None:
                w = _add_vec(w, ad_star_apply(Sdq[i], F[i]))
            if w is not None:
                dF[p] = _add_vec(dF[p], Ad_inv_T_apply(mo.g[i], w))
        if mo.S[i] is not None and dF[i] is not None:
            dtau[tree.dof[i]] = dot(mo.S[i], dF[i])
    return dtau


def rnea_directional_derivative(tree: KinematicTree, q: Sequence, qd: Sequence,
                                qdd: Sequence, dq: Sequence, dqd: Sequence, dqdd: Sequence, *,
                                f_ext: Optional[Mapping[int, Sequence]] = None,
                                gravity: Optional[Sequence] = None) -> Tuple[list, list]:
    r"""Inverse dynamics and its derivative along a direction, by differentiating Kim's
    Table 2 line by line (forward mode; the approach of Kim sec. 4).

    Returns :math:`\tau(q, \dot q, \ddot q)` and
    :math:`d\tau = \partial_q\tau\, dq + \partial_{\dot q}\tau\, d\dot q
    + \partial_{\ddot q}\tau\, d\ddot q` in one O(n) pass. With
    ``(dq, dqd, dqdd) = (qd, qdd, qddd)`` it is the first time derivative of the inverse
    dynamics along a motion (the first-order case of Ali, Gabellieri, Franchi, seed ``002``,
    for a fixed base). The recursion, with :math:`\mathrm{d}\,\mathrm{Ad}_{T^{-1}_{\lambda(i),i}}
    = -\mathrm{ad}_{S_i dq_i} \mathrm{Ad}_{T^{-1}_{\lambda(i),i}}`:

    .. math::
        dV_i &= \mathrm{Ad}_{T^{-1}} dV_\lambda + \mathrm{ad}_{\mathrm{Ad}_{T^{-1}}V_\lambda}
                S_i dq_i + S_i d\dot q_i\
        d\dot V_i &= \mathrm{Ad}_{T^{-1}} d\dot V_\lambda
                + \mathrm{ad}_{\mathrm{Ad}_{T^{-1}}\dot V_\lambda} S_i dq_i
                + \mathrm{ad}_{dV_i - S_i d\dot q_i} S_i \dot q_i
                + \mathrm{ad}_{\mathrm{Ad}_{T^{-1}}V_\lambda} S_i d\dot q_i + S_i d\ddot q_i\
        dF_i &= I_i d\dot V_i + \mathrm{ad}^*_{dV_i} I_i V_i + \mathrm{ad}^*_{V_i} I_i dV_i
                + \sum_{k \in \mu(i)} \mathrm{Ad}^T_{T^{-1}_{i,k}}
                  (dF_k + \mathrm{ad}^*_{S_k dq_k} F_k),\qquad d\tau_i = S_i^T dF_i

    External wrenches are taken as fixed in the body frames (their derivative is zero).

    Parameters
    ----------
    tree : KinematicTree
        Revolute, prismatic and fixed joints only.
    q, qd, qdd : sequences of nv scalars
    dq, dqd, dqdd : sequences of nv scalars
        The direction; literal zeros are structural (a unit direction touches only the
        subtree of its joint and the path to the root).
    f_ext, gravity
        As in :func:`rnea`.

    Returns
    -------
    (tau, dtau) : two lists of nv scalars [N or N m]

    Raises
    ------
    ValueError
        If the tree has a track joint, or as :func:`rnea`.
    """
    for name, v in (("q", q), ("qd", qd), ("qdd", qdd), ("dq", dq), ("dqd", dqd),
                    ("dqdd", dqdd)):
        _check_len(name, v, tree.nv)
    _check_no_track(tree, "rnea_directional_derivative")
    tau, mo, a0, Vdot, IV, F = _rnea(tree, q, qd, qdd, _check_wrenches(tree, f_ext),
                                     gravity, {}, None)
    return tau, _rnea_tangent(tree, mo, qd, a0, Vdot, IV, F, dq, dqd, dqdd)


def rnea_derivatives(tree: KinematicTree, q: Sequence, qd: Sequence, qdd: Sequence, *,
                     f_ext: Optional[Mapping[int, Sequence]] = None,
                     gravity: Optional[Sequence] = None) -> Tuple[List[list], List[list]]:
    r"""Partial derivatives :math:`\partial\tau/\partial q` and
    :math:`\partial\tau/\partial\dot q` of the inverse dynamics (Kim Table 2), analytically.

    One nominal pass of :func:`rnea` and one tangent pass of
    :func:`rnea_directional_derivative` per unit direction (2 nv of them); the unit
    directions are structural (ints 0 and 1), so the pass for joint ``j`` only computes the
    subtree of ``j`` and the path from it to the root. :math:`\partial\tau/\partial\ddot q`
    is :func:`crba`.

    Parameters
    ----------
    tree : KinematicTree
        Revolute, prismatic and fixed joints only.
    q, qd, qdd : sequences of nv scalars
    f_ext, gravity
        As in :func:`rnea`.

    Returns
    -------
    (dtau_dq, dtau_dqd) : two nv x nv nested lists
        ``dtau_dq[i][j] = d tau_i / d q_j`` [N/m, N m/rad, ...], ``dtau_dqd[i][j] =
        d tau_i / d qd_j``.

    Raises
    ------
    ValueError
        If the tree has a track joint, or as :func:`rnea`.
    """
    for name, v in (("q", q), ("qd", qd), ("qdd", qdd)):
        _check_len(name, v, tree.nv)
    _check_no_track(tree, "rnea_derivatives")
    _, mo, a0, Vdot, IV, F = _rnea(tree, q, qd, qdd, _check_wrenches(tree, f_ext),
                                   gravity, {}, None)
    nv = tree.nv
    zero = [0] * nv
    dq_cols, dqd_cols = [], []
    for j in range(nv):
        e = [0] * nv
        e[j] = 1
        dq_cols.append(_rnea_tangent(tree, mo, qd, a0, Vdot, IV, F, e, zero, zero))
        dqd_cols.append(_rnea_tangent(tree, mo, qd, a0, Vdot, IV, F, zero, e, zero))
    transpose = lambda cols: [[cols[j][i] for j in range(nv)] for i in range(nv)]  # noqa: E731
    return transpose(dq_cols), transpose(dqd_cols)
