r"""Rigid-body dynamics of kinematic trees on SE(3), written once for floats, Pyomo and CasADi.

The recursive algorithms of J. Kim, *Lie group formulation of articulated rigid body
dynamics* (2012, seed ``001``), for a tree of rigid bodies connected by 1-DoF joints:

=========================================  ==========================================
:func:`forward_kinematics`                 poses, twists and accelerations, eqs (37), (41)
:func:`rnea`                               inverse dynamics, Table 2 (eqs 37, 41, 42)
:func:`aba`                                forward dynamics, Table 3 (eqs 43-50)
:func:`hybrid_dynamics`                    hybrid dynamics, Table 4 (eqs 51-53)
:func:`crba`                               joint-space inertia matrix ``M(q)`` of eq (32)
:func:`rnea_directional_derivative`        first-order derivative of Table 2 along a direction
:func:`rnea_derivatives`                   ``dtau/dq`` and ``dtau/dqd`` (its unit directions)
=========================================  ==========================================

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
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .backend import add, is_number, is_zero, mul, neg, sub, total
from .lie import (
    Ad_inv_apply, Ad_inv_T_apply, ad_apply, ad_star_apply, compose,
    congruence_to_parent, dot, exp_twist, matvec,
)

__all__ = [
    "REVOLUTE", "PRISMATIC", "FIXED", "TRACK", "JOINT_TYPES", "GRAVITY", "STANDARD_GRAVITY",
    "TrackJoint", "KinematicTree", "TreeKinematics", "HybridResult",
    "forward_kinematics", "rnea", "aba", "crba", "hybrid_dynamics",
    "rnea_directional_derivative", "rnea_derivatives",
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
        """This tree (checked on numbers) with its placements, inertias and gravity replaced by
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
    """Result of :func:`forward_kinematics`.

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
        Component-wise time derivatives :math:`\\dot V_i` in frame ``i`` [m/s^2, rad/s^2],
        Kim eq (41), with the ground at rest (no gravity term); None without ``qdd``.
    motion : object
        The per-body quantities of the first forward recursion (joint screws, twists, the
        bias accelerations :math:`\\eta_i`), which :func:`hybrid_dynamics` reuses when it
        is given this result as ``kin``.
    """

    g: list
    pose: list
    V: Optional[list]
    Vdot: Optional[list]
    motion: object = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass
class HybridResult:
    """Result of :func:`hybrid_dynamics`.

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
    """:math:`\\dot V_0 = [-g; 0]` (Kim footnote 6, preprint eq 23)."""
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
    """``I_i V_i`` and the bias wrench :math:`\\mathrm{ad}^*_{V_i} I_i V_i - F^{ext}_i`."""
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
    """:math:`\\mathrm{Ad}_{T^{-1}_{\\lambda(i),i}} \\dot V_{\\lambda(i)}` (ground: ``a0``)."""
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
        Required for trees with a track joint (see :func:`forward_kinematics`).
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
        :func:`forward_kinematics` of the same ``q``, ``qd`` and ``track`` (with ``qd``):
        its twists are used instead of being computed again.
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

    Returns :math:`	au(q, \dot q, \ddot q)` and
    :math:`d	au = \partial_q	au\, dq + \partial_{\dot q}	au\, d\dot q
    + \partial_{\ddot q}	au\, d\ddot q` in one O(n) pass. With
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
                  (dF_k + \mathrm{ad}^*_{S_k dq_k} F_k),\qquad d	au_i = S_i^T dF_i

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
    r"""Partial derivatives :math:`\partial	au/\partial q` and
    :math:`\partial	au/\partial\dot q` of the inverse dynamics (Kim Table 2), analytically.

    One nominal pass of :func:`rnea` and one tangent pass of
    :func:`rnea_directional_derivative` per unit direction (2 nv of them); the unit
    directions are structural (ints 0 and 1), so the pass for joint ``j`` only computes the
    subtree of ``j`` and the path from it to the root. :math:`\partial	au/\partial\ddot q`
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
