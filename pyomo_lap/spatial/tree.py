r"""Kinematic trees on SE(3) and their kinematics, written once for floats, Pyomo and CasADi.

The recursive algorithms of J. Kim, *Lie group formulation of articulated rigid body
dynamics* (2012, seed ``001``), for a tree of rigid bodies connected by 1-DoF joints:

=========================================  ==========================================
:class:`KinematicTree`                    the tree: parents, joints, placements, inertias
:class:`TrackJoint`                       the race car's track joint at one ``q1``
:func:`forward_kinematics`                 poses, twists and accelerations, eqs (37), (41)
=========================================  ==========================================

This module holds the trees, their joints and kinematics, and the first forward recursion
the algorithms share; the dynamics algorithms (RNEA, ABA, hybrid dynamics, CRBA) are in
:mod:`pyomo_lap.spatial.dynamics`, the analytic RNEA derivatives in
:mod:`pyomo_lap.spatial.derivatives`.

Conventions (MODEL_NOTES, :mod:`pyomo_lap.spatial.lie`; Kim writes the same objects angular part
first, ``V = (w, v)``, and ``ad*_V = ad_V^T`` with ``F = I dV - ad*_V I V``):

* a twist is :math:`V = [v;\ \omega]` [m/s, rad/s], a wrench :math:`F = [f;\ m]` [N, N m],
  both in the frame of the body they belong to (body twists, Kim eq 9);
* body ``i`` has the frame of joint ``i`` (as in Pinocchio): its pose relative to the parent
  body is :math:`T_{\lambda(i),i}(q_i) = P_i\, e^{\hat S_i q_i}` with the constant placement
  :math:`P_i` (the joint frame in the parent frame at ``q_i = 0``) and the joint screw
  :math:`S_i` in the joint frame: :math:`[0;\ a]` for a revolute joint about the unit axis
  ``a`` through the joint origin, :math:`[a;\ 0]` for a prismatic joint along ``a``;
* :math:`\mathrm{ad}^*_V = -\mathrm{ad}_V^T` (:func:`pyomo_lap.spatial.lie.ad_star_apply`), so the
  Newton-Euler equation of one body, Kim eq (42), reads
  :math:`F_i = I_i\dot V_i + \mathrm{ad}^*_{V_i} I_i V_i - F^{ext}_i
  + \sum_{k\in\mu(i)} \mathrm{Ad}^T_{T_{i,k}^{-1}} F_k`;
* gravity enters as the fictitious acceleration of the ground,
  :math:`\dot V_0 = [-g;\ 0]` with ``g`` the gravity vector in the ground frame (Kim,
  footnote 6; preprint eq 23): body accelerations returned by the dynamics include it,
  :func:`forward_kinematics` returns the physical ones.

Every entry is a "scalar" of :mod:`pyomo_lap.spatial.backend`: a literal ``0`` is a structural zero
that is never multiplied or added (a revolute joint about ``z`` has a screw with five of
them), so the same code gives floats, Pyomo expressions and CasADi ``SX`` symbols with small
expression graphs. An optional ``namer(tag, value)`` callback may replace intermediate
quantities by named stand-ins (Pyomo ``Expression`` components, say); it is never called on
a plain number. Vectors are lists, matrices lists of rows; nothing inverts a 6x6 matrix
(1-DoF joints divide by a scalar).

The track joint of the race car (:class:`TrackJoint`, preprint sec. 2.1) is a joint type of
its own: its motion :math:`(R_{0,1}, C)(q_1)`, twist :math:`J_1^1(q_1)` and
:math:`dJ_1^1/dq_1` are numbers computed from the track spline, passed per call in ``track``.
The race car's chain of sec. 2.2 is such a tree (:func:`pyomo_lap.vehicle.car.build_chain`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional, Sequence, Tuple

import numpy as np

from .backend import add, is_number, mul, neg, sub, total
from .lie import Ad_inv_apply, ad_apply, ad_star_apply, compose, exp_twist, matvec

__all__ = [
    "REVOLUTE", "PRISMATIC", "FIXED", "TRACK", "JOINT_TYPES", "GRAVITY", "STANDARD_GRAVITY",
    "TrackJoint", "KinematicTree", "TreeKinematics", "HybridResult", "forward_kinematics",
]

REVOLUTE = "revolute"
PRISMATIC = "prismatic"
FIXED = "fixed"
TRACK = "track"
JOINT_TYPES = (REVOLUTE, PRISMATIC, FIXED, TRACK)
"""The joint types of :class:`KinematicTree`."""

GRAVITY = 9.81
"""Gravity acceleration a_g [m/s^2], preprint eq (23a)."""

STANDARD_GRAVITY = (0.0, 0.0, -GRAVITY)
"""Default gravity vector in the ground frame, z up [m/s^2]."""

Namer = Callable[[str, object], object]

_TOL = 1e-9
"""Relative tolerance of the checks of a tree's numbers (unit axes, rotations, inertias)."""

_IDENTITY_FLOAT = (((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), (0.0, 0.0, 0.0))


# --------------------------------------------------------------------------- the model
@dataclasses.dataclass(frozen=True)
class TrackJoint:
    r"""The track joint at one value of ``q1`` (numbers computed from the track spline, or any
    scalars), preprint sec. 2.1.

    Attributes
    ----------
    R : 3x3 nested sequence
        :math:`R_{0,1}(q_1) = [t\ n\ m]`, eq (9) [-].
    J : sequence of 6
        :math:`J_1^1 = |p_{,q_1}| [t^S; \Omega^S]`, eq (12b); ``[1,0,0,Ωx,Ωy,Ωz]`` when
        ``q1`` is the arc length [-, 1/m].
    dJ : sequence of 6
        :math:`J^1_{1,q_1} = dJ_1^1/dq_1` [1/m, 1/m^2].
    p : sequence of 3, optional
        Spine point :math:`C(q_1)` [m] (only for global positions).
    """

    R: Sequence
    J: Sequence
    dJ: Sequence
    p: Sequence = (0.0, 0.0, 0.0)


def _fail(field: str, i: Optional[int], value, expected: str):
    where = f"KinematicTree.{field}" + ("" if i is None else f"[{i}]")
    raise ValueError(f"{where} must be {expected}, got {value!r}")


def _float_array(field, i, value, shape, what):
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        _fail(field, i, value, what)
    if a.shape != shape or not np.all(np.isfinite(a)):
        _fail(field, i, value, what)
    return a


def _check_placement(i, value):
    what = "a pair (R, p): R a 3x3 rotation matrix, p 3 finite numbers [m]"
    try:
        R, p = value
    except (TypeError, ValueError):
        _fail("placement", i, value, what)
    R = _float_array("placement", i, R, (3, 3), what)
    p = _float_array("placement", i, p, (3,), what)
    if np.max(np.abs(R.T @ R - np.eye(3))) > _TOL or np.linalg.det(R) < 0:
        _fail("placement", i, value, f"{what} (R^T R = I within {_TOL:g}, det R = +1)")
    return tuple(tuple(float(x) for x in row) for row in R), tuple(float(x) for x in p)


def _check_inertia(i, value):
    what = ("None (massless) or a symmetric positive semi-definite 6x6 spatial inertia "
            "[[m I, -m c^], [m c^, I_c - m c^ c^]] [kg, kg m, kg m^2] (linear part first)")
    if value is None:
        return tuple(tuple(0.0 for _ in range(6)) for _ in range(6))
    M = _float_array("inertia", i, value, (6, 6), what)
    tol = _TOL * max(1.0, float(np.max(np.abs(M))))
    m = M[0, 0]
    mc_hat = -M[:3, 3:]                      # m c^ is skew-symmetric
    problems = [
        (np.max(np.abs(M - M.T)) > tol, "it is not symmetric"),
        (m < 0 or np.max(np.abs(M[:3, :3] - m * np.eye(3))) > tol,
         "its linear block is not m I with m >= 0"),
        (np.max(np.abs(mc_hat + mc_hat.T)) > tol, "its coupling block is not skew-symmetric"),
    ]
    bad = [why for cond, why in problems if cond]
    M = 0.5 * (M + M.T)
    if not bad and np.min(np.linalg.eigvalsh(M)) < -tol:
        bad.append("it is not positive semi-definite")
    if bad:
        _fail("inertia", i, value, f"{what}; {', '.join(bad)}")
    return tuple(tuple(float(x) for x in row) for row in M)


def _exact(x: float):
    """A float with the structural values 0 and 1 made literal ints."""
    return 0 if x == 0.0 else (1 if x == 1.0 else x)


@dataclasses.dataclass(frozen=True)
class KinematicTree:
    r"""The constant model of a tree of rigid bodies with 1-DoF joints.

    Bodies are numbered ``0 .. n-1``; body ``i`` is attached to its parent ``parent[i]``
    (``-1``: the ground) by joint ``i``, and the frame of body ``i`` is the frame of joint ``i``
    (Pinocchio's convention, Kim sec. 2.1).

    Parameters
    ----------
    parent : sequence of n ints
        ``parent[i]`` in ``[-1, i-1]``: parents come before their children.
    joint_type : sequence of n str
        ``'revolute'``, ``'prismatic'``, ``'fixed'`` or ``'track'`` (the race car's track
        joint, whose motion and twist are given per call, see :func:`forward_kinematics`).
    axis : sequence of n (3-sequences or None)
        Unit axis ``a`` of a revolute or prismatic joint in the joint frame [-] (normalised
        after a check to 1e-9); ``None`` for fixed and track joints. The joint screw is
        ``S = [0; a]`` (revolute, axis through the joint origin) or ``[a; 0]`` (prismatic).
    placement : sequence of n postures ``(R, p)``
        :math:`P_i`: the joint frame in the parent body's frame (the ground frame for a root)
        at ``q_i = 0``; ``R`` 3x3 rotation [-], ``p`` [m].
    inertia : sequence of n (6x6 or None)
        Spatial inertia :math:`I_i` of body ``i`` about its frame origin, in its frame, linear
        part first (as :func:`pyomo_lap.spatial.lie.spatial_inertia` and Pinocchio's
        ``Inertia.matrix()``) [kg, kg m, kg m^2]; ``None`` for a massless body.
    gravity : 3 floats, optional
        Gravity vector in the ground frame [m/s^2]; default :data:`STANDARD_GRAVITY`
        (``(0, 0, -9.81)``). ``(0, 0, 0)`` for none.
    names : sequence of n str, optional
        Body names (for messages).

    Attributes
    ----------
    n_bodies : int
    nv : int
        Number of degrees of freedom (joints that are not fixed); ``q``, ``qd``, ``qdd`` and
        ``tau`` have ``nv`` entries, in the order of the bodies.
    dof : tuple of n (int or None)
        Index of body ``i``'s joint coordinate in ``q``; ``None`` for a fixed joint.
    body_of_dof : tuple of nv ints
    children : tuple of n tuples of ints
    screw : tuple of n (6-tuples or None)
        Joint screws ``S_i`` (exact zeros as int 0); ``None`` for fixed and track joints.

    Raises
    ------
    ValueError
        Naming the field, the index, the value and what was expected, when the lengths
        differ, a parent does not come before its child, a joint type is unknown, an axis is
        missing, not a unit vector or given for a fixed or track joint, a placement is not a
        rigid transformation, an inertia is not a symmetric positive semi-definite rigid-body
        inertia, or gravity is not 3 finite numbers.
    """

    parent: Tuple[int, ...]
    joint_type: Tuple[str, ...]
    axis: Tuple[Optional[Tuple[float, float, float]], ...]
    placement: Tuple[tuple, ...]
    inertia: Tuple[tuple, ...]
    gravity: Tuple[float, float, float] = STANDARD_GRAVITY
    names: Optional[Tuple[str, ...]] = None
    nv: int = dataclasses.field(init=False)
    dof: Tuple[Optional[int], ...] = dataclasses.field(init=False)
    body_of_dof: Tuple[int, ...] = dataclasses.field(init=False)
    children: Tuple[Tuple[int, ...], ...] = dataclasses.field(init=False)
    screw: Tuple[Optional[tuple], ...] = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        """Check the tree's numbers and derive its structure (children, screws)."""
        def seq(field, value):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
                _fail(field, None, value, "a sequence with one entry per body")
            return tuple(value)

        parent = seq("parent", self.parent)
        n = len(parent)
        if n == 0:
            _fail("parent", None, self.parent, "a non-empty sequence (one entry per body)")
        fields = {"joint_type": self.joint_type, "axis": self.axis,
                  "placement": self.placement, "inertia": self.inertia}
        if self.names is not None:
            fields["names"] = self.names
        for field, value in fields.items():
            v = seq(field, value)
            if len(v) != n:
                _fail(field, None, value, f"a sequence of {n} entries (one per body, as parent)")
        for i, p in enumerate(parent):
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not -1 <= p < i:
                _fail("parent", i, p, f"an int in [-1, {i - 1}] (-1: the ground; a parent "
                                      "comes before its children)")
        parent = tuple(int(p) for p in parent)
        for i, jt in enumerate(self.joint_type):
            if not isinstance(jt, str) or jt not in JOINT_TYPES:
                _fail("joint_type", i, jt, f"one of {', '.join(map(repr, JOINT_TYPES))}")
        jtypes = tuple(str(jt) for jt in self.joint_type)
        axes, screws = [], []
        for i, (jt, a) in enumerate(zip(jtypes, self.axis)):
            if jt in (FIXED, TRACK):
                if a is not None:
                    _fail("axis", i, a, f"None for a {jt} joint")
                axes.append(None)
                screws.append(None)
                continue
            what = f"a unit 3-vector (|a| = 1 within {_TOL:g}) for a {jt} joint"
            if a is None:
                _fail("axis", i, a, what)
            av = _float_array("axis", i, a, (3,), what)
            nrm = float(np.linalg.norm(av))
            if abs(nrm - 1.0) > _TOL:
                _fail("axis", i, a, what)
            unit = tuple(_exact(float(x) / nrm) for x in av)
            axes.append(tuple(float(x) for x in unit))
            screws.append((0, 0, 0) + unit if jt == REVOLUTE else unit + (0, 0, 0))
        placements = tuple(_check_placement(i, P) for i, P in enumerate(self.placement))
        inertias = tuple(_check_inertia(i, M) for i, M in enumerate(self.inertia))
        grav = _float_array("gravity", None, self.gravity, (3,), "3 finite numbers [m/s^2]")
        names = None
        if self.names is not None:
            names = tuple(str(s) for s in self.names)
            if len(set(names)) != n:
                _fail("names", None, self.names, f"{n} distinct names")
        dof, body_of_dof = [], []
        for i, jt in enumerate(jtypes):
            if jt == FIXED:
                dof.append(None)
            else:
                dof.append(len(body_of_dof))
                body_of_dof.append(i)
        children = [[] for _ in range(n)]
        for i, p in enumerate(parent):
            if p >= 0:
                children[p].append(i)
        setattr_ = object.__setattr__
        setattr_(self, "parent", parent)
        setattr_(self, "joint_type", jtypes)
        setattr_(self, "axis", tuple(axes))
        setattr_(self, "placement", placements)
        setattr_(self, "inertia", inertias)
        setattr_(self, "gravity", tuple(float(x) for x in grav))
        setattr_(self, "names", names)
        setattr_(self, "nv", len(body_of_dof))
        setattr_(self, "dof", tuple(dof))
        setattr_(self, "body_of_dof", tuple(body_of_dof))
        setattr_(self, "children", tuple(tuple(c) for c in children))
        setattr_(self, "screw", tuple(screws))
        setattr_(self, "_placement_is_identity",
                 tuple(P == _IDENTITY_FLOAT for P in placements))
        setattr_(self, "_exact_placement",
                 tuple(((tuple(tuple(_exact(x) for x in r) for r in P[0]),
                         tuple(_exact(x) for x in P[1]))) for P in placements))
        setattr_(self, "_exact_inertia",
                 tuple(tuple(tuple(_exact(x) for x in r) for r in M) for M in inertias))

    def with_symbols(self, placement, inertia, gravity) -> "KinematicTree":
        """Return this tree (checked on numbers) with its placements, inertias and gravity replaced by
        objects of any scalar type of :mod:`pyomo_lap.spatial.backend` (tape symbols of the
        car's parameters): the structure (parents, joints, axes, screws) is this tree's; the
        literal numbers 0 and 1 among the new entries stay structural. The numbers' checks
        are not repeated (they were made on this tree, the same car's values).

        Parameters
        ----------
        placement : sequence of n pairs (3x3, 3)
        inertia : sequence of n (6x6 or None)
        gravity : 3 scalars

        Returns
        -------
        KinematicTree
        """
        def exact(x):
            return _exact(float(x)) if isinstance(x, (int, float)) else x

        def numbers(P):
            return all(isinstance(x, (int, float)) for r in P[0] for x in r) and all(
                isinstance(x, (int, float)) for x in P[1])
        zero6 = tuple(tuple(0 for _ in range(6)) for _ in range(6))
        place = tuple((tuple(tuple(exact(x) for x in r) for r in R), tuple(exact(x) for x in p))
                      for R, p in placement)
        inert = tuple(zero6 if M is None else tuple(tuple(exact(x) for x in r) for r in M)
                      for M in inertia)
        new = object.__new__(KinematicTree)
        setattr_ = object.__setattr__
        for name in ("parent", "joint_type", "axis", "names", "nv", "dof", "body_of_dof",
                     "children", "screw"):
            setattr_(new, name, getattr(self, name))
        setattr_(new, "placement", place)
        setattr_(new, "inertia", inert)
        setattr_(new, "gravity", tuple(exact(x) for x in gravity))
        setattr_(new, "_placement_is_identity", tuple(
            numbers(P) and tuple(tuple(float(x) for x in r) for r in P[0]) == _IDENTITY_FLOAT[0]
            and tuple(float(x) for x in P[1]) == _IDENTITY_FLOAT[1] for P in place))
        setattr_(new, "_exact_placement", place)
        setattr_(new, "_exact_inertia", inert)
        return new

    @property
    def n_bodies(self) -> int:
        """Number of bodies n."""
        return len(self.parent)

    def body_name(self, i: int) -> str:
        """Name of body ``i`` (``'body i'`` without names)."""
        return self.names[i] if self.names is not None else f"body {i}"


# --------------------------------------------------------------------------- results
@dataclasses.dataclass
class TreeKinematics:
    r"""Result of :func:`forward_kinematics`.

    Attributes
    ----------
    g : list of n postures
        ``g[i] = T_{parent(i), i}(q)``: body ``i`` in its parent's frame (the ground's for a
        root) [-, m].
    pose : list of n postures
        ``pose[i] = T_{0, i}(q)``: body ``i`` in the ground frame [-, m].
    V : list of n twists or None
        Body twists :math:`V_i` in frame ``i`` [m/s, rad/s], Kim eq (37); None without ``qd``.
    Vdot : list of n twists or None
        Component-wise time derivatives :math:`\dot V_i` in frame ``i`` [m/s^2, rad/s^2],
        Kim eq (41), with the ground at rest (no gravity term); None without ``qdd``.
    motion : object
        The per-body quantities of the first forward recursion (joint screws, twists, the
        bias accelerations :math:`\eta_i`), which
        :func:`~pyomo_lap.spatial.dynamics.hybrid_dynamics` reuses when it is given this
        result as ``kin``.
    """

    g: list
    pose: list
    V: Optional[list]
    Vdot: Optional[list]
    motion: object = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass
class HybridResult:
    """Result of :func:`pyomo_lap.spatial.dynamics.hybrid_dynamics`.

    Attributes
    ----------
    qdd : list of nv scalars
        All joint accelerations: the prescribed ones as given, the others computed
        [m/s^2 or rad/s^2].
    tau : list of nv scalars
        All joint forces/torques: the given ones as given, those of the prescribed joints
        computed [N or N m].
    Vdot : list of n twists
        Body accelerations in the body frames, including the fictitious gravity acceleration
        of the ground [m/s^2, rad/s^2].
    F : list of n wrenches
        :math:`F_i`: the wrench transmitted to body ``i`` from its parent through joint ``i``,
        in frame ``i`` [N, N m] (Kim eq 42); ``tau = S^T F``; None for a body not asked for
        (``wrenches``). For the race car, ``F`` of the unsprung body is the structural wrench
        :math:`W_{3J}^3` of the preprint's eq (24).
    """

    qdd: list
    tau: list
    Vdot: list
    F: list


# --------------------------------------------------------------------------- helpers
def _named_vec(nm: Optional[Namer], tag: str, v):
    if nm is None:
        return v
    return [x if is_number(x) else nm(f"{tag}_{k}", x) for k, x in enumerate(v)]


def _named_sym(nm: Optional[Namer], tag: str, M):
    if nm is None:
        return M
    out = [[0] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            x = M[i][j]
            out[i][j] = out[j][i] = x if is_number(x) else nm(f"{tag}_{i}{j}", x)
    return out


def _named(nm: Optional[Namer], tag: str, x):
    return x if nm is None or is_number(x) else nm(tag, x)


def _check_len(name: str, v, n: int):
    if v is None or not hasattr(v, "__len__") or len(v) != n:
        got = "None" if v is None else (f"{len(v)} entries" if hasattr(v, "__len__") else repr(v))
        raise ValueError(f"{name} must have {n} entries (one per degree of freedom, "
                         f"KinematicTree.nv), got {got}")


def _check_track(tree: KinematicTree, track):
    track = dict(track or {})
    for i, jt in enumerate(tree.joint_type):
        if jt == TRACK and i not in track:
            raise ValueError(f"track must give the TrackJoint of {tree.body_name(i)} (joint "
                             f"type 'track'), got keys {sorted(track)!r}")
    for k, tj in track.items():
        if not (isinstance(k, (int, np.integer)) and 0 <= k < tree.n_bodies
                and tree.joint_type[k] == TRACK):
            raise ValueError(f"track keys must be bodies with a track joint, got {k!r}")
        for attr, n in (("J", 6), ("dJ", 6), ("p", 3)):
            if len(getattr(tj, attr)) != n:
                raise ValueError(f"track[{k}].{attr} must have {n} entries, got "
                                 f"{getattr(tj, attr)!r}")
    return track


def _check_wrenches(tree: KinematicTree, f_ext):
    f_ext = dict(f_ext or {})
    for k, w in f_ext.items():
        if not (isinstance(k, (int, np.integer)) and 0 <= k < tree.n_bodies):
            raise ValueError(f"f_ext keys must be body indices in [0, {tree.n_bodies - 1}], "
                             f"got {k!r}")
        if len(w) != 6:
            raise ValueError(f"f_ext[{k}] must be a wrench [f; m] of 6 entries in the frame "
                             f"of body {k}, got {w!r}")
    return f_ext


def _ground_acceleration(tree: KinematicTree, gravity):
    r""":math:`\dot V_0 = [-g; 0]` (Kim footnote 6, preprint eq 23)."""
    g = tree.gravity if gravity is None else gravity
    if len(g) != 3:
        raise ValueError(f"gravity must be a 3-vector in the ground frame [m/s^2], got {g!r}")
    return [neg(_exact(x) if isinstance(x, float) else x) for x in g] + [0, 0, 0]


def _symmetric_add(A, B):
    return [[add(a, b) for a, b in zip(ra, rb)] for ra, rb in zip(A, B)]


@dataclasses.dataclass
class _Motion:
    """Per-body quantities of the first forward recursion (Kim Tables 2-4, first loop)."""

    g: list        # T_{parent(i), i}
    S: list        # joint screw (track: J), None for a fixed joint
    V: list        # V_i, eq (37); None without qd
    Vpar: list     # Ad_{T^-1} V_parent: the part of V_i carried from the parent
    c: list        # eta_i = ad_{V_i} S_i qd_i + dS_i qd_i, eq (41)


def _motion(tree: KinematicTree, q, qd, track, nm: Optional[Namer]) -> _Motion:
    n = tree.n_bodies
    g, S, V, Vpar, c = [None] * n, [None] * n, [None] * n, [None] * n, [None] * n
    for i in range(n):
        jt, k, p = tree.joint_type[i], tree.dof[i], tree.parent[i]
        P = tree._exact_placement[i]
        if jt == FIXED:
            gi = P
        else:
            if jt == TRACK:
                tj = track[i]
                motion = ([list(r) for r in tj.R], list(tj.p))
                S[i] = list(tj.J)
            else:
                motion = exp_twist(tree.screw[i], q[k])
                S[i] = list(tree.screw[i])
            gi = motion if tree._placement_is_identity[i] else compose(P, motion)
        g[i] = gi
        if qd is None:
            continue
        vp = [0] * 6 if p < 0 else Ad_inv_apply(gi, V[p])
        if jt == FIXED:
            Vi, ci = vp, [0] * 6
        else:
            Sqd = [mul(s, qd[k]) for s in S[i]]
            Vi = [add(a, b) for a, b in zip(vp, Sqd)]
            # eq (39): ad_{Ad V_parent} S qd, the same as (41)'s ad_{V_i} S qd since
            # ad_{S qd} S qd = 0, without the terms that cancel
            ci = ad_apply(vp, Sqd)
            if jt == TRACK:
                qd2 = mul(qd[k], qd[k])
                ci = [add(a, mul(b, qd2)) for a, b in zip(ci, track[i].dJ)]
        Vpar[i] = vp
        V[i] = _named_vec(nm, f"V{i}", Vi)
        c[i] = _named_vec(nm, f"c{i}", ci)
    return _Motion(g=g, S=S, V=V, Vpar=Vpar, c=c)


def _bias(tree: KinematicTree, mo: _Motion, f_ext) -> Tuple[list, list]:
    r"""``I_i V_i`` and the bias wrench :math:`\mathrm{ad}^*_{V_i} I_i V_i - F^{ext}_i`."""
    IV, b = [], []
    for i in range(tree.n_bodies):
        IVi = matvec(tree._exact_inertia[i], mo.V[i])
        bi = ad_star_apply(mo.V[i], IVi)
        if i in f_ext:
            bi = [sub(a, w) for a, w in zip(bi, f_ext[i])]
        IV.append(IVi)
        b.append(bi)
    return IV, b


def _parent_acceleration(mo: _Motion, i: int, p: int, Vdot, a0):
    r""":math:`\mathrm{Ad}_{T^{-1}_{\lambda(i),i}} \dot V_{\lambda(i)}` (ground: ``a0``)."""
    return Ad_inv_apply(mo.g[i], a0 if p < 0 else Vdot[p])


# --------------------------------------------------------------------------- kinematics
def forward_kinematics(tree: KinematicTree, q: Sequence, qd: Optional[Sequence] = None,
                       qdd: Optional[Sequence] = None, *,
                       track: Optional[Mapping[int, TrackJoint]] = None,
                       namer: Optional[Namer] = None) -> TreeKinematics:
    r"""Poses, body twists and body accelerations of every body, Kim eqs (35)-(41).

    .. math::
        T_{0,i} = T_{0,\lambda(i)} P_i e^{\hat S_i q_i},\quad
        V_i = \mathrm{Ad}_{T_{\lambda(i),i}^{-1}} V_{\lambda(i)} + S_i \dot q_i\ (37),\quad
        \dot V_i = \mathrm{Ad}_{T_{\lambda(i),i}^{-1}} \dot V_{\lambda(i)}
                   + \mathrm{ad}_{V_i} S_i \dot q_i + \dot S_i \dot q_i + S_i \ddot q_i\ (41)

    Parameters
    ----------
    tree : KinematicTree
    q : sequence of nv scalars
        Joint coordinates [rad or m] (a track joint's entry is not read: its motion is
        ``track[i]``).
    qd, qdd : sequences of nv scalars, optional
        Joint rates and accelerations; without them ``V`` / ``Vdot`` are None.
    track : mapping body index -> :class:`TrackJoint`, optional
        For every track joint: ``T = P (R, p)``, ``S = J``, :math:`\dot S \dot q = dJ\,\dot q^2`.
    namer : callable, optional
        ``namer(tag, value)`` for the twists (tags ``V{i}_{k}``, ``c{i}_{k}``,
        ``Vd{i}_{k}``).

    Returns
    -------
    TreeKinematics
        Accelerations with the ground at rest (no gravity).

    Raises
    ------
    ValueError
        If a vector does not have ``nv`` entries or a track joint's data is missing.
    """
    _check_len("q", q, tree.nv)
    if qdd is not None and qd is None:
        raise ValueError("qdd needs qd (the accelerations depend on the twists)")
    if qd is not None:
        _check_len("qd", qd, tree.nv)
    if qdd is not None:
        _check_len("qdd", qdd, tree.nv)
    track = _check_track(tree, track)
    mo = _motion(tree, q, qd, track, namer)
    pose = []
    for i in range(tree.n_bodies):
        p = tree.parent[i]
        pose.append(mo.g[i] if p < 0 else compose(pose[p], mo.g[i]))
    Vdot = None
    if qdd is not None:
        Vdot = _accelerations(tree, mo, qdd, [0] * 6, namer)
    return TreeKinematics(g=mo.g, pose=pose, V=mo.V if qd is not None else None, Vdot=Vdot,
                          motion=mo if qd is not None else None)


def _accelerations(tree, mo, qdd, a0, nm):
    """Eq (41) for every body, from the ground's acceleration ``a0``."""
    Vdot = [None] * tree.n_bodies
    for i in range(tree.n_bodies):
        ai = _parent_acceleration(mo, i, tree.parent[i], Vdot, a0)
        if mo.S[i] is not None:
            qddk = qdd[tree.dof[i]]
            ai = [total([x, ci, mul(s, qddk)]) for x, ci, s in zip(ai, mo.c[i], mo.S[i])]
        Vdot[i] = _named_vec(nm, f"Vd{i}", ai)
    return Vdot
