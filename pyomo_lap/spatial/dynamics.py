r"""The dynamics algorithms of kinematic trees (:mod:`pyomo_lap.spatial.tree`), Kim (2012).

=========================================  ==========================================
:func:`rnea`                               inverse dynamics, Table 2 (eqs 37, 41, 42)
:func:`aba`                                forward dynamics, Table 3 (eqs 43-50)
:func:`hybrid_dynamics`                    hybrid dynamics, Table 4 (eqs 51-53)
:func:`crba`                               joint-space inertia matrix ``M(q)`` of eq (32)
=========================================  ==========================================

The trees, their joints, the conventions (twists :math:`[v;\ \omega]`, wrenches
:math:`[f;\ m]` in body frames, gravity as the fictitious acceleration of the ground) and the
first forward recursion the algorithms share are those of :mod:`pyomo_lap.spatial.tree`;
like it, every algorithm is written once over the scalars of
:mod:`pyomo_lap.spatial.backend` (floats, Pyomo expressions, CasADi symbols).
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, List, Mapping, Optional, Sequence

import numpy as np

from .backend import add, is_number, is_zero, mul, sub, total
from .lie import Ad_inv_apply, Ad_inv_T_apply, congruence_to_parent, dot, matvec
from .tree import (
    HybridResult,
    KinematicTree,
    Namer,
    TrackJoint,
    TreeKinematics,
    _accelerations,
    _bias,
    _check_len,
    _check_track,
    _check_wrenches,
    _ground_acceleration,
    _Motion,
    _motion,
    _named,
    _named_sym,
    _named_vec,
    _parent_acceleration,
    _symmetric_add,
)

__all__ = ["rnea", "aba", "hybrid_dynamics", "crba"]


# --------------------------------------------------------------------------- RNEA
def _rnea(tree, q, qd, qdd, f_ext, gravity, track, nm):
    mo = _motion(tree, q, qd, track, nm)
    a0 = _ground_acceleration(tree, gravity)
    Vdot = _accelerations(tree, mo, qdd, a0, nm)
    IV, b = _bias(tree, mo, f_ext)
    F = [None] * tree.n_bodies
    for i in range(tree.n_bodies):
        F[i] = [add(x, y) for x, y in zip(matvec(tree._exact_inertia[i], Vdot[i]), b[i])]
    tau = [None] * tree.nv
    for i in reversed(range(tree.n_bodies)):
        F[i] = _named_vec(nm, f"F{i}", F[i])
        p = tree.parent[i]
        if p >= 0:
            F[p] = [add(x, y) for x, y in zip(F[p], Ad_inv_T_apply(mo.g[i], F[i]))]
        if mo.S[i] is not None:
            tau[tree.dof[i]] = _named(nm, f"tau{tree.dof[i]}", dot(mo.S[i], F[i]))
    return tau, mo, a0, Vdot, IV, F


def rnea(tree: KinematicTree, q: Sequence, qd: Sequence, qdd: Sequence, *,
         f_ext: Optional[Mapping[int, Sequence]] = None, gravity: Optional[Sequence] = None,
         track: Optional[Mapping[int, TrackJoint]] = None,
         namer: Optional[Namer] = None) -> list:
    r"""Inverse dynamics by the recursive Newton-Euler algorithm, Kim Table 2.

    Forward recursion: eqs (37) and (41) from :math:`\dot V_0 = [-g; 0]`; backward
    recursion: eq (42),
    :math:`F_i = I_i \dot V_i + \mathrm{ad}^*_{V_i} I_i V_i - F^{ext}_i
    + \sum_{k \in \mu(i)} \mathrm{Ad}^T_{T_{i,k}^{-1}} F_k`, and :math:`\tau_i = S_i^T F_i`.

    Parameters
    ----------
    tree : KinematicTree
    q, qd, qdd : sequences of nv scalars
        Joint coordinates, rates and accelerations [rad, m; /s; /s^2].
    f_ext : mapping body index -> 6 scalars, optional
        External wrench :math:`F^{ext}_i = [f; m]` acting on body ``i``, in frame ``i``
        [N, N m] (the moment about the frame origin).
    gravity : 3 scalars, optional
        Gravity vector in the ground frame [m/s^2]; default ``tree.gravity``.
    track : mapping body index -> TrackJoint, optional
        Required for trees with a track joint (see
        :func:`~pyomo_lap.spatial.tree.forward_kinematics`).
    namer : callable, optional
        ``namer(tag, value)`` for intermediates (tags ``V``, ``c``, ``Vd``, ``F{i}_{k}``,
        ``tau{k}``).

    Returns
    -------
    list of nv scalars
        Joint forces/torques ``tau`` [N or N m].

    Raises
    ------
    ValueError
        If a vector does not have ``nv`` entries, a track joint's data is missing, or an
        external wrench is not 6 entries on an existing body.
    """
    for name, v in (("q", q), ("qd", qd), ("qdd", qdd)):
        _check_len(name, v, tree.nv)
    tau, *_ = _rnea(tree, q, qd, qdd, _check_wrenches(tree, f_ext), gravity,
                    _check_track(tree, track), namer)
    return tau


# --------------------------------------------------------------------------- ABA
def _check_d(tree, i, d):
    if is_number(d) and not d > 0:
        raise ValueError(
            f"the articulated inertia of {tree.body_name(i)} along its joint screw is {d!r} "
            "(S^T IA S must be > 0: the joint must move some mass)")


def aba(tree: KinematicTree, q: Sequence, qd: Sequence, tau: Sequence, *,
        f_ext: Optional[Mapping[int, Sequence]] = None, gravity: Optional[Sequence] = None,
        track: Optional[Mapping[int, TrackJoint]] = None,
        namer: Optional[Namer] = None) -> list:
    r"""Forward dynamics by the articulated-body algorithm, Kim Table 3 (eqs 43-50).

    With the articulated-body inertia ``IA`` (:math:`\hat I`) and bias wrench ``pA``
    (:math:`\hat B`) of eq (43), :math:`F_i = \hat I_i \dot V_i + \hat B_i`, and
    spatial_v2's names :math:`U = \hat I S`, :math:`d = S^T U` (Kim's :math:`\Psi^{-1}`),
    :math:`u = \tau - S^T \hat B`:

    * backward (eqs 49, 50): :math:`\Pi = \hat I - U U^T / d`,
      :math:`\beta = \hat B + \Pi \eta + U u / d`,
      :math:`\hat I_{\lambda} \mathrel{+}= \mathrm{Ad}^T_{T^{-1}} \Pi \mathrm{Ad}_{T^{-1}}`,
      :math:`\hat B_{\lambda} \mathrel{+}= \mathrm{Ad}^T_{T^{-1}} \beta`,
      starting from :math:`\hat I_i = I_i`,
      :math:`\hat B_i = \mathrm{ad}^*_{V_i} I_i V_i - F^{ext}_i`;
    * forward (eqs 45, 41): :math:`a = \mathrm{Ad}_{T^{-1}} \dot V_\lambda + \eta`,
      :math:`\ddot q = (u - U^T a) / d`, :math:`\dot V = a + S \ddot q`.

    A fixed joint passes :math:`\Pi = \hat I`, :math:`\beta = \hat B` on. (Every joint as
    written here: the lean root of :func:`hybrid_dynamics` is not used.)

    With Pyomo, pass a ``namer`` that makes named ``Expression`` components: written out as
    plain expression trees, the articulated inertias of each level nest into the next and
    the trees grow geometrically with the depth (Pyomo evaluates and writes a shared
    subexpression once per use). CasADi ``SX`` graphs share their nodes and need none.

    Parameters
    ----------
    tree : KinematicTree
    q, qd, tau : sequences of nv scalars
        Joint coordinates, rates [rad, m; /s] and forces/torques [N, N m].
    f_ext, gravity, track, namer
        As in :func:`rnea` (tags ``IA{i}_{jk}``, ``pA{i}_{k}``, ``U{i}_{k}``, ``Dinv{i}``,
        ``u{i}``, ``a{i}_{k}``, ``qdd{k}``).

    Returns
    -------
    list of nv scalars
        Joint accelerations ``qdd`` [rad/s^2 or m/s^2].

    Raises
    ------
    ValueError
        As :func:`rnea`; also, with float data, if a joint moves no mass
        (:math:`S^T \hat I S \le 0`).
    """
    for name, v in (("q", q), ("qd", qd), ("tau", tau)):
        _check_len(name, v, tree.nv)
    f_ext = _check_wrenches(tree, f_ext)
    track = _check_track(tree, track)
    nm = namer
    n = tree.n_bodies
    mo = _motion(tree, q, qd, track, nm)
    art = _articulated_bodies(tree, mo, tau, None, [S is not None for S in mo.S], f_ext, {}, nm)
    a0 = _ground_acceleration(tree, gravity)
    qdd = [None] * tree.nv
    Vdot = [None] * n
    for i in range(n):
        a = _parent_acceleration(mo, i, tree.parent[i], Vdot, a0)
        if mo.S[i] is None:
            Vdot[i] = a
            continue
        a = _named_vec(nm, f"a{i}", [add(x, y) for x, y in zip(a, mo.c[i])])
        k = tree.dof[i]
        qdd[k] = _named(nm, f"qdd{k}", mul(sub(art.u[i], dot(art.U[i], a)), art.Dinv[i]))
        Vdot[i] = [add(x, mul(s, qdd[k])) for x, s in zip(a, mo.S[i])]
    return qdd


# --------------------------------------------------------------------------- hybrid
def hybrid_dynamics(tree: KinematicTree, q: Sequence, qd: Sequence, qdd: Sequence,
                    tau: Sequence, prescribed: Iterable[int], *,
                    f_ext: Optional[Mapping[int, Sequence]] = None,
                    gravity: Optional[Sequence] = None,
                    track: Optional[Mapping[int, TrackJoint]] = None,
                    namer: Optional[Namer] = None, kin: Optional[TreeKinematics] = None,
                    wrenches: Optional[Iterable[int]] = None) -> HybridResult:
    r"""Hybrid dynamics: prescribed accelerations on some joints, torques on the others,
    Kim sec. 2.3, Table 4 (eqs 51-53).

    With ``u`` the joints whose accelerations are prescribed and ``v`` the others, it returns
    :math:`(\tau_u, \ddot q_v)` from :math:`(\ddot q_u, \tau_v)` for
    :math:`M \ddot q + b = \tau` (eq 33), in O(n). The backward recursion is that of
    :func:`aba`, except that a prescribed joint passes :math:`\Pi = \hat I`,
    :math:`\beta = \hat B + \hat I(\eta + S \ddot q)` on (eqs 52, 53); the forward recursion
    computes :math:`\dot V = \mathrm{Ad}_{T^{-1}} \dot V_\lambda + \eta + S \ddot q`,
    :math:`F = \hat I \dot V + \hat B` and, for a prescribed joint,
    :math:`\tau = S^T F`. With no joint prescribed it is the ABA, with all of them the RNEA.
    With Pyomo, use a ``namer`` (see :func:`aba`).

    A root ``r`` that is massless, has a free joint, no external wrench, one child ``c`` and
    whose joint wrench is not asked for (``wrenches``; the race car's track joint, preprint
    Step 3) never gets an articulated inertia: with :math:`A = \mathrm{Ad}_{T_{r,c}^{-1}}`,
    :math:`\hat I_r = A^T \Pi_c A` and :math:`\hat B_r = A^T \beta_c`, so its row of
    eq (45) is evaluated in the child's frame with :math:`S' = A S_r`:
    :math:`U = \Pi_c S'`, :math:`d = S'^T U`, :math:`u = \tau_r - S'^T \beta_c`,
    :math:`\ddot q_r = (u - U^T A a_r)/d`.

    Parameters
    ----------
    tree : KinematicTree
    q, qd : sequences of nv scalars
    qdd : sequence of nv (scalars or None)
        Read only at the prescribed degrees of freedom [rad/s^2, m/s^2].
    tau : sequence of nv (scalars or None)
        Read only at the other degrees of freedom [N m, N].
    prescribed : iterable of ints
        Indices (into ``q``) of the degrees of freedom with prescribed acceleration.
    f_ext, gravity, track, namer
        As in :func:`rnea` and :func:`aba` (extra tags ``F{i}_{k}``, ``tau{k}``).
    kin : TreeKinematics, optional
        :func:`~pyomo_lap.spatial.tree.forward_kinematics` of the same ``q``, ``qd`` and
        ``track`` (with ``qd``): its twists are used instead of being computed again.
    wrenches : iterable of body indices, optional
        The bodies whose joint wrench ``F`` is computed (always those with a prescribed
        joint); default all.

    Returns
    -------
    HybridResult
        Complete ``qdd`` and ``tau``, body accelerations (with gravity) and joint wrenches
        (None for a body not in ``wrenches``).

    Raises
    ------
    ValueError
        If an index is out of range, a value that is read is None, ``kin`` has no twists,
        or as :func:`aba`.
    """
    for name, v in (("q", q), ("qd", qd), ("qdd", qdd), ("tau", tau)):
        _check_len(name, v, tree.nv)
    pres = _prescribed_dofs(tree, prescribed, qdd, tau)
    f_ext = _check_wrenches(tree, f_ext)
    track = _check_track(tree, track)
    if kin is not None and kin.motion is None:
        raise ValueError("kin must be a forward_kinematics result with twists (qd given)")
    mo = _motion(tree, q, qd, track, namer) if kin is None else kin.motion
    free = [mo.S[i] is not None and tree.dof[i] not in pres for i in range(tree.n_bodies)]
    want = set(range(tree.n_bodies)) if wrenches is None else _bodies("wrenches", tree, wrenches)
    want.update(i for i in range(tree.n_bodies) if mo.S[i] is not None and not free[i])
    lean = {r: tree.children[r][0] for r in range(tree.n_bodies)
            if tree.parent[r] < 0 and free[r] and len(tree.children[r]) == 1
            and r not in f_ext and r not in want
            and all(is_zero(x) for row in tree._exact_inertia[r] for x in row)}
    art = _articulated_bodies(tree, mo, tau, qdd, free, f_ext, lean, namer)
    a0 = _ground_acceleration(tree, gravity)
    return _hybrid_forward(tree, mo, art, free, qdd, tau, pres, a0, want, namer)


def _bodies(name: str, tree: KinematicTree, bodies) -> set:
    """``bodies`` as a set of body indices.

    Raises
    ------
    ValueError
        An entry that is not a body index.
    """
    out = set()
    for i in bodies:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < tree.n_bodies:
            raise ValueError(f"{name} must hold body indices in [0, {tree.n_bodies - 1}], "
                             f"got {i!r}")
        out.add(int(i))
    return out


def _prescribed_dofs(tree: KinematicTree, prescribed, qdd, tau) -> set:
    """The degrees of freedom of ``prescribed`` as a set, checked against ``qdd`` and ``tau``
    (:func:`hybrid_dynamics`).

    Raises
    ------
    ValueError
        An index out of range, or a value that is read but None.
    """
    pres = set()
    for k in prescribed:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < tree.nv:
            raise ValueError(f"prescribed must hold degree-of-freedom indices in "
                             f"[0, {tree.nv - 1}], got {k!r}")
        pres.add(int(k))
    for k in range(tree.nv):
        if k in pres and qdd[k] is None:
            raise ValueError(f"qdd[{k}] is prescribed (k in prescribed) but None")
        if k not in pres and tau[k] is None:
            raise ValueError(f"tau[{k}] is given (k not in prescribed) but None")
    return pres


@dataclasses.dataclass
class _ArticulatedBodies:
    """Result of the backward recursion of :func:`aba` and :func:`hybrid_dynamics`, per body
    (``None`` where a joint is fixed or prescribed, and for ``IA``, ``pA`` of a lean root)."""

    IA: list     # articulated-body inertias
    pA: list     # articulated bias wrenches
    U: list      # IA S (of a lean root: Pi S' in its child's frame)
    d: list      # S^T U
    Dinv: list   # 1 / d (not formed for a lean root: its qdd divides by d)
    u: list      # tau - S^T pA
    lean: dict   # lean root -> its child (hybrid_dynamics)


def _articulated_bodies(tree: KinematicTree, mo: _Motion, tau, qdd, free: list, f_ext,
                        lean: dict, nm: Optional[Namer]) -> _ArticulatedBodies:
    """The backward recursion (Kim eqs 49, 50; a prescribed joint by eqs 52, 53): from the
    leaves to the root, ``free[i]``: joint ``i`` moves by its torque (else it is fixed, or its
    acceleration ``qdd`` is prescribed); the lean roots ``lean`` (root -> child) in their
    child's frame.

    Raises
    ------
    ValueError
        A free joint that moves no mass (float data).
    """
    n = tree.n_bodies
    _, pA = _bias(tree, mo, f_ext)
    IA = [[list(r) for r in tree._exact_inertia[i]] for i in range(n)]
    U, d, Dinv, u = [None] * n, [None] * n, [None] * n, [None] * n
    to_root = {}                                        # lean root -> (Pi, beta) of its child
    for i in reversed(range(n)):
        S = mo.S[i]
        if i in lean:                                   # S' = A S, U = Pi S', in the child's frame
            Pi, beta = to_root[i]
            S = Ad_inv_apply(mo.g[lean[i]], S)
            IA[i] = pA[i] = None
            U[i] = _named_vec(nm, f"U{i}", matvec(Pi, S))
        else:
            IA[i] = _named_sym(nm, f"IA{i}", IA[i])
            pA[i] = _named_vec(nm, f"pA{i}", pA[i])
            if free[i]:
                U[i] = _named_vec(nm, f"U{i}", matvec(IA[i], S))
        p = tree.parent[i]
        if free[i]:
            d[i] = dot(S, U[i])
            _check_d(tree, i, d[i])
            if i not in lean:
                Dinv[i] = _named(nm, f"Dinv{i}", 1.0 / d[i])
            bias = beta if i in lean else pA[i]
            u[i] = _named(nm, f"u{i}", sub(tau[tree.dof[i]], dot(S, bias)))
        if p < 0:
            continue
        if S is None:                                   # fixed joint
            Pi, beta = IA[i], pA[i]
        elif not free[i]:                               # prescribed: Pi = IA
            Pi = IA[i]
            k = tree.dof[i]
            eta = [add(ci, mul(s, qdd[k])) for ci, s in zip(mo.c[i], S)]
            beta = [add(x, y) for x, y in zip(pA[i], matvec(IA[i], eta))]
        else:
            Ui = U[i]
            Pi = [[0] * 6 for _ in range(6)]
            for r in range(6):                          # symmetric: the upper triangle
                for s in range(r, 6):
                    Pi[r][s] = Pi[s][r] = sub(IA[i][r][s], mul(mul(Ui[r], Ui[s]), Dinv[i]))
            uD = mul(u[i], Dinv[i])
            Pc = matvec(Pi, mo.c[i])
            beta = [total([pA[i][r], Pc[r], mul(Ui[r], uD)]) for r in range(6)]
        if p in lean:
            to_root[p] = (Pi, beta)
            continue
        IA[p] = _symmetric_add(IA[p], congruence_to_parent(mo.g[i], Pi))
        pA[p] = [add(x, y) for x, y in zip(pA[p], Ad_inv_T_apply(mo.g[i], beta))]
    return _ArticulatedBodies(IA=IA, pA=pA, U=U, d=d, Dinv=Dinv, u=u, lean=lean)


def _hybrid_forward(tree: KinematicTree, mo: _Motion, art: _ArticulatedBodies, free: list,
                    qdd, tau, pres: set, a0, want: set, nm: Optional[Namer]) -> HybridResult:
    """The forward recursion of :func:`hybrid_dynamics`: accelerations of the free joints,
    body accelerations, the joint wrenches of the bodies ``want`` and the torques of the
    prescribed joints."""
    n = tree.n_bodies
    IA, pA, U, Dinv, u = art.IA, art.pA, art.U, art.Dinv, art.u
    qdd_out = [qdd[k] if k in pres else None for k in range(tree.nv)]
    tau_out = [None if k in pres else tau[k] for k in range(tree.nv)]
    Vdot, F = [None] * n, [None] * n
    for i in range(n):
        a = _parent_acceleration(mo, i, tree.parent[i], Vdot, a0)
        S = mo.S[i]
        if S is not None:
            a = [add(x, y) for x, y in zip(a, mo.c[i])]
            k = tree.dof[i]
            if free[i]:
                a = _named_vec(nm, f"a{i}", a)
                aU = Ad_inv_apply(mo.g[art.lean[i]], a) if i in art.lean else a
                num = sub(u[i], dot(U[i], aU))
                qdd_out[k] = _named(nm, f"qdd{k}", num / art.d[i] if i in art.lean
                                    else mul(num, Dinv[i]))
            a = [add(x, mul(s, qdd_out[k])) for x, s in zip(a, S)]
        Vdot[i] = _named_vec(nm, f"Vd{i}", a)
        if i not in want:
            continue
        F[i] = _named_vec(nm, f"F{i}", [add(x, y) for x, y in zip(matvec(IA[i], Vdot[i]), pA[i])])
        if S is not None and not free[i]:
            k = tree.dof[i]
            tau_out[k] = _named(nm, f"tau{k}", dot(S, F[i]))
    return HybridResult(qdd=qdd_out, tau=tau_out, Vdot=Vdot, F=F)


# --------------------------------------------------------------------------- CRBA
def crba(tree: KinematicTree, q: Sequence, *,
         track: Optional[Mapping[int, TrackJoint]] = None,
         namer: Optional[Namer] = None) -> List[list]:
    r"""Joint-space inertia matrix :math:`M(q)` of eq (32) (Kim), by composite rigid bodies.

    Composite inertias :math:`I^c_i = I_i + \sum_{k \in \mu(i)} \mathrm{Ad}^T_{T_{i,k}^{-1}}
    I^c_k \mathrm{Ad}_{T_{i,k}^{-1}}` (the rigid-body case of eq 49), then for every joint
    :math:`F = I^c_i S_i`, :math:`M_{ii} = S_i^T F`, and along the ancestors ``j`` of ``i``
    :math:`F \leftarrow \mathrm{Ad}^T F`, :math:`M_{ji} = M_{ij} = S_j^T F` (Featherstone,
    *Rigid Body Dynamics Algorithms*, Table 6.2, in Lie-group notation).

    Parameters
    ----------
    tree : KinematicTree
    q : sequence of nv scalars
    track, namer
        As in :func:`rnea` (tags ``Ic{i}_{jk}``, ``M{j}_{k}``).

    Returns
    -------
    nv x nv nested list
        Symmetric positive (semi-)definite :math:`M(q)`, so that
        ``rnea(q, 0, qdd) - rnea(q, 0, 0) = M qdd`` [kg, kg m, kg m^2].
    """
    _check_len("q", q, tree.nv)
    track = _check_track(tree, track)
    nm = namer
    n = tree.n_bodies
    mo = _motion(tree, q, None, track, nm)
    Ic = [[list(r) for r in tree._exact_inertia[i]] for i in range(n)]
    for i in reversed(range(n)):
        Ic[i] = _named_sym(nm, f"Ic{i}", Ic[i])
        p = tree.parent[i]
        if p >= 0:
            Ic[p] = _symmetric_add(Ic[p], congruence_to_parent(mo.g[i], Ic[i]))
    M = [[0] * tree.nv for _ in range(tree.nv)]
    for i in range(n):
        if mo.S[i] is None:
            continue
        ki = tree.dof[i]
        F = matvec(Ic[i], mo.S[i])
        M[ki][ki] = _named(nm, f"M{ki}_{ki}", dot(mo.S[i], F))
        j = i
        while tree.parent[j] >= 0:
            F = Ad_inv_T_apply(mo.g[j], F)
            j = tree.parent[j]
            if mo.S[j] is not None:
                kj = tree.dof[j]
                M[kj][ki] = M[ki][kj] = _named(nm, f"M{kj}_{ki}", dot(mo.S[j], F))
    return M
