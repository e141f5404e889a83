r"""The numbers of a model's recorded rows after the build: one record, evaluated everywhere.

A vehicle model whose rows are recorded (:class:`pyomo_lap.ocp.point_rows.PointRows`, from its
``VehicleModel.point_rows``) carries with them its *channel group* (accelerations, tyre
quantities, loads). Everything numeric after the build evaluates that one record, through its
CasADi function (:meth:`~pyomo_lap.ocp.point_rows.PointRows.point_function`, the car's
parameters an argument):

* the channels of a solved model (:func:`record_channels`, the columns of
  ``trajectory.csv``), vectorised over the points with CasADi's ``map``;
* the joint accelerations: the rows ``ode_qdot[k]`` of the spatial DAE,
  :math:`\dot q_1\, d\dot q_k/ds - \ddot q_k`, at :math:`d\dot q_k/ds = 0` are
  :math:`-\ddot q_k` exactly (:func:`acceleration_names`);
* the algebraic residuals: the rows of the families that are equalities at every point
  (``loads_eq``, ``inplane_eq``), as many as the model has algebraic variables;
* :class:`CarFunctions`: the car at fixed parameters as fast float functions of one point
  (``q, qd, u, z`` and the track numbers), the algebraic loop solved by Newton's method
  (:func:`pyomo_lap.vehicle.car.solve_loop`): the simulation, the defects, the replay and the
  initial guesses.

The track at a point is the record's track inputs, the 15 numbers of
:data:`~pyomo_lap.ocp.point_rows.TRACK_INPUTS` (:func:`track_vector`, :func:`track_vectors`).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pyomo.environ as pyo
from pyomo.common.dependencies import attempt_import

from ..vehicle import car as veh
from .common import entries_at, vehicle_var
from .point_rows import TRACK_INPUTS, track_numbers

ca, ca_available = attempt_import("casadi")

__all__ = ["CarFunctions", "AlgebraicLoopError", "track_vector", "track_vectors", "track_vectors_at",
           "record_of", "record_channels", "record_numbers", "evaluate_record", "acceleration_names",
           "algebraic_rows",
           "vehicle_values_of"]

N_TRACK = len(TRACK_INPUTS)
"""Length of a point's track vector: :data:`~pyomo_lap.ocp.point_rows.TRACK_INPUTS`."""


class AlgebraicLoopError(RuntimeError):
    """The algebraic loop (loads and in-plane tyre forces) has no solution near the guess:
    typically a wheel that lifts (a vertical load would have to be negative) or a speed
    ``v_3x`` near zero (slip angles divide by it)."""


def track_vector(tj) -> np.ndarray:
    """The record's track inputs (:data:`~pyomo_lap.ocp.point_rows.TRACK_INPUTS`) of a
    :class:`~pyomo_lap.spatial.tree.TrackJoint` of a track parametrised by its arc length
    (``J = [1, 0, 0, Omega]``, ``dJ = [0, 0, 0, dOmega/ds]``); the inverse is
    :func:`pyomo_lap.ocp.point_rows.track_joint`.

    Returns
    -------
    ndarray (15,)
        ``R_{0,1}`` row by row [-], ``Omega`` [1/m], ``dOmega/ds`` [1/m^2].

    Raises
    ------
    ValueError
        A joint not parametrised by arc length.
    """
    J, dJ = np.asarray(tj.J, float), np.asarray(tj.dJ, float)
    if not (np.array_equal(J[:3], [1.0, 0.0, 0.0]) and not np.any(dJ[:3])):
        raise ValueError("the track joint is not parametrised by arc length "
                         f"(J[0:3] = {J[:3].tolist()}, dJ[0:3] = {dJ[:3].tolist()})")
    return np.concatenate([np.asarray(tj.R, float).reshape(9), J[3:], dJ[3:]])


def track_vectors(tp, start: int = 0, stop: Optional[int] = None) -> np.ndarray:
    """The track vectors (:func:`track_vector`) of the points of a
    :class:`~pyomo_lap.track.points.TrackPoints` (:func:`~pyomo_lap.ocp.point_rows.track_numbers`).

    Returns
    -------
    ndarray (n, 15)
    """
    nums = track_numbers(tp)
    return np.stack([nums[k] for k in TRACK_INPUTS], axis=1)[start:stop]


def track_vectors_at(track, s, omega: Optional[dict] = None) -> np.ndarray:
    """The track vectors (:func:`track_vector`) of ``track`` at the track coordinates ``s`` [m],
    with its angular velocity ``Omega`` replaced by ``omega`` where given: ``{k: (n,) array}``
    for the components ``k`` (0, 1, 2) a model's equations took otherwise at those points (the
    racecar's element-end points take their element's curvature,
    :func:`pyomo_lap.ocp.racecar.racecar_trajectory`'s ``Omega_z``).

    Returns
    -------
    ndarray (n, 15)
    """
    tv = track_vectors(track.evaluate(s))
    first = TRACK_INPUTS.index("Om[0]")
    for k, values in (omega or {}).items():
        tv[:, first + k] = values
    return tv


def record_of(m):
    """The recorded rows of a built model (its :class:`~pyomo_lap.ocp.point_rows.PointRows`),
    or None for a model whose rows are not recorded: the one place that knows where a built
    model keeps its record."""
    return getattr(getattr(m, "problem", None), "point_rows", None)


def vehicle_values_of(rec, m) -> np.ndarray:
    """The current values of the car's parameters of a built model ``m`` (``m.vehicle.*``:
    a free parameter at its optimum) in the order of ``rec.vehicle_inputs``."""
    return np.array([float(vehicle_var(m, k).value) for k in rec.vehicle_inputs], dtype=float)


def acceleration_names(rec, rates: Sequence[str]) -> tuple:
    """The names of the joint accelerations (``q1_ddot`` ..., ``z11_ddot`` ...) of the rows
    ``ode_qdot[k]`` of ``rec``, from the model's ``rates`` (``q1_dot`` ...)."""
    fam = next(f for f in rec.families if f.name == "ode_qdot")
    return tuple(rates[k - 1][:-len("_dot")] + "_ddot" for k in fam.keys)


def algebraic_rows(rec) -> list:
    """The positions among ``rec.outputs`` of the algebraic equations: the rows of the
    families that are equalities (bounds 0) at every point, in family order (``loads_eq``,
    ``inplane_eq``: the residuals of the algebraic variables)."""
    out = []
    for fam in rec.families:
        if fam.where == "all" and all(lo == 0.0 and up == 0.0 for lo, up in zip(fam.lower, fam.upper)):
            out.extend(fam.outputs)
    return out


def evaluate_record(rec, values: dict, track: np.ndarray, vehicle: np.ndarray) -> tuple:
    r"""The record's rows and channel group at ``n`` points at once (CasADi's ``map`` of
    :meth:`~pyomo_lap.ocp.point_rows.PointRows.point_function`).

    Parameters
    ----------
    rec : PointRows
    values : dict
        ``variable name -> (n,) array``; a variable of ``rec.variables`` not given is 0 (the
        derivative variables: the rows ``ode_qdot[k]`` are then :math:`-\ddot q_k`).
    track : ndarray (n, 15)
        The track inputs at the points.
    vehicle : ndarray (k,)
        The car's parameters (``rec.vehicle_inputs``).

    Returns
    -------
    (rows (n, n_rows), channels {name: (n,) array})
    """
    track = np.asarray(track, dtype=float)
    n = track.shape[0]
    W = np.zeros((len(rec.variables), n))
    for i, name in enumerate(rec.variables):
        if name in values:
            W[i] = values[name]
    F = rec.point_function()
    rows, ch = F.map(n)(W, track.T, np.asarray(vehicle, dtype=float).reshape(-1, 1))
    rows, ch = np.asarray(rows, dtype=float).T, np.asarray(ch, dtype=float)
    return rows, {k: ch[i].copy() for i, k in enumerate(rec.channel_names)}


def record_numbers(rec, values: dict, track: np.ndarray, vehicle: np.ndarray, rates) -> dict:
    """The record's numbers at given values of its variables at ``n`` points: the joint
    accelerations, the channel group and the largest residual of the load equations (the
    channels of a solved model's points, :func:`record_channels`, and of any other points:
    the channels on a fixed step, :mod:`pyomo_lap.results.fixed_step`).

    Parameters
    ----------
    rec : PointRows
    values : dict
        ``{variable: (n,) array}`` (:func:`evaluate_record`: a variable not given is 0).
    track : ndarray (n, 15)
        The track inputs at the points (:func:`track_vectors`).
    vehicle : ndarray (k,)
        The car's parameters (``rec.vehicle_inputs``).
    rates : sequence of str
        The model's rates (``q1_dot`` ...), naming the accelerations.

    Returns
    -------
    dict
        ``{"values": values, "qdd": {name: (n,)}, "channels": {name: (n,)},
        "load_residual_max": (n,) or None, "rows": (n, n_rows)}`` (``rows``: every row's body,
        in the order of ``rec.outputs``).
    """
    rows, ch = evaluate_record(rec, values, track, vehicle)
    fam = next(f for f in rec.families if f.name == "ode_qdot")
    qdd = {name: -rows[:, out] for name, out in zip(acceleration_names(rec, rates), fam.outputs)}
    loads = [f for f in rec.families if f.name == "loads_eq"]
    res = (np.max(np.abs(rows[:, list(loads[0].outputs)]), axis=1) if loads else None)
    return {"values": values, "qdd": qdd, "channels": ch, "load_residual_max": res, "rows": rows}


def record_channels(m) -> dict:
    """The record's numbers at the current values of a built model, every point of ``m.s``
    (:func:`record_numbers`): the point's variables, the joint accelerations, the channel
    group and the largest residual of the load equations (``load_residual_max``, where the
    model has them).

    Returns
    -------
    dict
        ``{"values": {variable: (n,)}, "qdd": {name: (n,)}, "channels": {name: (n,)},
        "load_residual_max": (n,) or None}``.
    """
    rec = record_of(m)
    vm = m.problem.vehicle_model
    sigma = sorted(m.s)
    values = {}
    for name in vm.variables:
        data = entries_at(m.component(name), sigma)
        vals = [d.value for d in data]
        if any(v is None for v in vals):
            pyo.value(next(d for d, v in zip(data, vals) if v is None))   # Pyomo's message
        values[name] = np.array(vals, dtype=float)
    return record_numbers(rec, values, track_vectors(m.problem.track_points),
                          vehicle_values_of(rec, m), vm.rates)


class CarFunctions:
    """The car of a record at fixed parameters as fast float functions of one point.

    Parameters
    ----------
    rec : PointRows
        The record (``m.problem.point_rows``, or ``VehicleModel.point_rows(car, cfg)``).
    vehicle : VehicleParameters
        The car (its values of ``rec.vehicle_inputs``; its static loads for the guess).
    model : VehicleModel
        The record's model: its ``states``, ``rates``, ``controls``, ``algebraics`` give the
        layout of ``q`` (``q1`` first: it enters through the track vector only), ``qd``,
        ``u`` and ``z``.
    tyres : bool
        False: the in-plane tyre wrench is switched off (``f_3x = f_3y = m_3z = 0`` are
        imposed instead of the rows ``inplane_eq``); the loads are still solved.
    values : ndarray, optional
        The car's parameters (default: ``vehicle``'s, ``rec.vehicle_values``).

    Attributes
    ----------
    n_q, n_z : int
        Number of joints and of algebraic variables.
    algebraic : tuple of str
        Names of the algebraic variables.
    channel_names : tuple of str
        The record's channel group.
    model : str
        The model's name.
    """

    def __init__(self, rec, vehicle, model, tyres: bool = True, values=None):
        self.p, self.rec, self.tyres = vehicle, rec, bool(tyres)
        self.model, self.vehicle_model = model.name, model
        self.n_q, self.algebraic = len(model.rates), tuple(model.algebraics)
        self.n_z = len(self.algebraic)
        res_rows = algebraic_rows(rec)
        if len(res_rows) != self.n_z:
            raise ValueError(f"model {model.name!r}: {len(res_rows)} algebraic equations for "
                             f"{self.n_z} algebraic variables")
        n, nu, m = self.n_q, len(model.controls), self.n_z
        args = ca.SX.sym("x", 2 * n + nu + m + N_TRACK)
        where = dict(zip(model.states, [args[k] for k in range(1, n)]))
        where.update(zip(model.rates, [args[n + k] for k in range(n)]))
        where.update(zip(model.controls, [args[2 * n + k] for k in range(nu)]))
        where.update(zip(self.algebraic, [args[2 * n + nu + k] for k in range(m)]))
        w = ca.vertcat(*[where.get(name, ca.SX(0.0)) for name in rec.variables])
        trk = args[2 * n + nu + m:]
        vals = rec.vehicle_values(vehicle) if values is None else np.asarray(values, float)
        rows, ch = rec.point_function()(w, trk, ca.DM(vals))
        fam = next(f for f in rec.families if f.name == "ode_qdot")
        qdd = ca.vertcat(*[-rows[k] for k in fam.outputs])
        res = [rows[k] for k in res_rows]
        if not self.tyres:   # in-plane tyre wrench off: impose it to be zero
            inplane = [f for f in rec.families if f.name == "inplane_eq"]
            n_in = len(inplane[0].outputs) if inplane else 0
            res = res[:m - n_in] + [args[2 * n + nu + m - n_in + k] for k in range(n_in)]
        res = ca.vertcat(*res) if res else ca.SX(0, 1)
        z = args[2 * n + nu:2 * n + nu + m]
        jac = ca.jacobian(res, z)
        self._n_in = args.shape[0]
        # one packed input and one dense packed output, evaluated through a FunctionBuffer on
        # preallocated arrays: about 10 us a call instead of about 150 us through the
        # ordinary call with its argument conversions
        self._fj = ca.Function("car_jac", [args],
                               [ca.densify(ca.vertcat(qdd, res, ca.vec(ca.densify(jac))))])
        self._f = ca.Function("car", [args], [ca.densify(ca.vertcat(qdd, res))])
        self._fc = ca.Function("car_channels", [args], [ca.densify(ch)])
        self.channel_names = rec.channel_names
        self._in = np.zeros(self._n_in)
        self._out = np.zeros(n + m + m * m)
        self._buf, self._eval = self._fj.buffer()
        self._buf.set_arg(0, memoryview(self._in))
        self._buf.set_res(0, memoryview(self._out))
        loads = [f for f in rec.families if f.name == "loads_eq"]
        self.n_loads = len(loads[0].outputs) if loads else 0
        self.static_guess = self._static_guess()

    def _static_guess(self) -> np.ndarray:
        """The loads at the car's static loads (split equally among the loads of an axle,
        ``f_1..`` front, ``f_2..`` rear), the in-plane forces zero."""
        z = np.zeros(self.n_z)
        if self.n_loads:
            s1, s2 = self.p.static_loads
            loads = self.algebraic[:self.n_loads]
            front = [k for k, name in enumerate(loads) if name.startswith("f_1")]
            rear = [k for k in range(self.n_loads) if k not in front]
            z[front] = 2 * s1 / max(len(front), 1)
            z[rear] = 2 * s2 / max(len(rear), 1)
        return z

    # ------------------------------------------------------------------ evaluation
    def _pack(self, trk, q, qd, u, z):
        n, m = self.n_q, self.n_z
        x = self._in
        nu = len(u)
        x[0:n] = q
        x[n:2 * n] = qd
        x[2 * n:2 * n + nu] = u
        x[2 * n + nu:2 * n + nu + m] = z
        x[2 * n + nu + m:] = trk
        return x

    def evaluate_with_jacobian(self, trk, q, qd, u, z):
        """q̈, the algebraic residuals and their Jacobian at given z.

        Parameters
        ----------
        trk : (15,)
            The track vector (:func:`track_vector`).
        q, qd : (n_q,)
            Joint coordinates and rates (q1 itself enters only through ``trk``).
        u : (3,)
            ``f_xa, f_xb [N], delta [rad]``.
        z : (n_z,)
            Algebraic variables.

        Returns
        -------
        (qdd (n_q,), res (n_z,), jac (n_z, n_z))
            [m/s^2 or rad/s^2], [N or N m], d res / d z. Fresh arrays.
        """
        self._pack(trk, q, qd, u, z)
        self._eval()
        n, m = self.n_q, self.n_z
        out = self._out
        return (out[:n].copy(), out[n:n + m].copy(),
                out[n + m:].reshape(m, m, order="F").copy())

    def evaluate(self, trk, q, qd, u, z):
        """q̈ and the algebraic residuals at given z (see :meth:`evaluate_with_jacobian`)."""
        qdd, res, _ = self.evaluate_with_jacobian(trk, q, qd, u, z)
        return qdd, res

    def evaluate_many(self, trk, q, qd, u, z):
        """:meth:`evaluate` at many points in one call (CasADi's ``map`` of the same function:
        the same numbers as point by point, without a Python call per point).

        Parameters
        ----------
        trk : (n, 15)
        q, qd : (n, n_q)
        u : (n, 3)
        z : (n, n_z)

        Returns
        -------
        (qdd (n, n_q), res (n, n_z))
            [m/s^2 or rad/s^2], [N or N m].
        """
        k = len(trk)
        args = np.hstack([np.asarray(a, float).reshape(k, -1) if np.size(a) else np.zeros((k, 0))
                          for a in (q, qd, u, z, trk)])
        out = np.asarray(self._f.map(args.shape[0])(args.T)).reshape(-1, args.shape[0])
        return out[:self.n_q].T.copy(), out[self.n_q:self.n_q + self.n_z].T.copy()

    _CHUNK = 512
    """Points per call of the mapped Jacobian function (:meth:`_evaluate_many_with_jacobian`):
    one map of a fixed size, so that no new map is made for each size of a batch."""

    def _evaluate_many_with_jacobian(self, args: np.ndarray) -> tuple:
        """q̈ (k, n_q), residuals (k, n_z) and Jacobians (k, n_z, n_z) at the packed inputs
        ``args`` (k, n_in): CasADi's ``map`` of the Jacobian function over chunks of
        :attr:`_CHUNK` points, on two threads (the points are independent), through a buffer
        on preallocated arrays."""
        n, m = self.n_q, self.n_z
        C = self._CHUNK
        if "_chunk_eval" not in self.__dict__:
            fm = self._fj.map(C, "thread", 2)
            self._chunk_in = np.zeros((C, args.shape[1]))     # column-major (n_in, C)
            self._chunk_out = np.zeros((C, n + m + m * m))
            buf, ev = fm.buffer()
            buf.set_arg(0, memoryview(self._chunk_in))
            buf.set_res(0, memoryview(self._chunk_out))
            self._chunk_map, self._chunk_buf, self._chunk_eval = fm, buf, ev
        k = args.shape[0]
        out = np.empty((k, n + m + m * m))
        for i in range(0, k, C):
            j = min(k, i + C)
            self._chunk_in[:j - i] = args[i:j]
            self._chunk_eval()
            out[i:j] = self._chunk_out[:j - i]
        jac = out[:, n + m:].reshape(k, m, m).transpose(0, 2, 1)   # column-major per point
        return out[:, :n], out[:, n:n + m], jac

    def solve_many(self, trk, q, qd, u, z0, tol: float = 1e-7, max_iter: int = 30) -> tuple:
        """:meth:`solve` at many points at once: the same Newton steps, line search and load
        floor (:func:`pyomo_lap.vehicle.car.solve_loop`) on every point, the model evaluated
        for all the points still iterating in one call.

        Parameters
        ----------
        trk : (k, 15)
        q, qd : (k, n_q)
        u : (k, 3)
        z0 : (k, n_z)
            Initial guesses.
        tol, max_iter
            As :meth:`solve` (the residual's 2-norm [N]).

        Returns
        -------
        (z (k, n_z), qdd (k, n_q), ok (k,) bool)
            ``ok`` False where the loop did not converge (2-norm above ``1e3 tol``) or a
            wheel lifts (what :meth:`solve` raises :class:`AlgebraicLoopError` for); their
            ``z`` and ``qdd`` are the last iterate's.
        """
        n_loads = self.n_loads
        floor = 1.0 if self.tyres else -np.inf
        fixed = np.hstack([np.asarray(a, float) for a in (q, qd, u)])
        trk = np.asarray(trk, float)
        z = np.array(z0, dtype=float, copy=True).reshape(len(fixed), self.n_z)
        if self.n_z == 0:              # no algebraic loop (the multibody car)
            qdd, _ = self.evaluate_many(trk, q, qd, u, z)
            return z, qdd, np.ones(len(z), dtype=bool)
        k = len(z)

        def pack(idx, zz):
            return np.hstack([fixed[idx], zz, trk[idx]])

        qdd, r, jac = self._evaluate_many_with_jacobian(pack(np.arange(k), z))
        qdd = qdd.copy()
        norm = np.linalg.norm(r, axis=1)
        active = np.flatnonzero(norm >= tol)
        for _ in range(max_iter):
            if active.size == 0:
                break
            step = np.linalg.solve(jac[active], -r[active][:, :, None])[:, :, 0]
            lam = np.ones(active.size)
            todo = np.arange(active.size)             # positions in `active` still searching
            zn = np.empty((active.size, z.shape[1]))
            rn = np.empty_like(zn)
            qn = np.empty((active.size, qdd.shape[1]))
            jn = np.empty((active.size, z.shape[1], z.shape[1]))
            for _ in range(20):
                idx = active[todo]
                zt = z[idx] + lam[todo, None] * step[todo]
                zt[:, :n_loads] = np.maximum(zt[:, :n_loads], floor)
                qt, rt, jt = self._evaluate_many_with_jacobian(pack(idx, zt))
                zn[todo], rn[todo], qn[todo], jn[todo] = zt, rt, qt, jt
                worse = np.linalg.norm(rt, axis=1) >= norm[idx]
                if not np.any(worse):
                    break
                todo = todo[worse]
                lam[todo] *= 0.5
            z[active], r[active], qdd[active], jac[active] = zn, rn, qn, jn
            norm[active] = np.linalg.norm(rn, axis=1)
            active = active[norm[active] >= tol]
        ok = norm < tol * 1e3
        if self.tyres:
            ok &= np.all(z[:, :n_loads] > 1.0 + 1e-9, axis=1)
        return z, qdd, ok

    def channels(self, trk, q, qd, u, z) -> dict:
        """The record's channel group at one point (slip angles, tyre forces, W3J, speeds,
        power, accelerations ...)."""
        x = self._pack(trk, q, qd, u, z).copy()
        vals = np.asarray(self._fc(x)).ravel()
        return dict(zip(self.channel_names, (float(v) for v in vals)))

    def solve(self, trk, q, qd, u, z0: Optional[Sequence] = None, tol: float = 1e-7,
              max_iter: int = 30):
        """Solve the algebraic loop for z and return ``(z, qdd)``.

        Parameters
        ----------
        trk, q, qd, u : as :meth:`evaluate`
        z0 : (n_z,), optional
            Initial guess (default: static loads, zero in-plane forces).
        tol : float
            Tolerance on the residual's infinity norm [N, N m].
        max_iter : int

        Returns
        -------
        (z (n_z,), qdd (n_q,))

        Raises
        ------
        AlgebraicLoopError
            No convergence, or a vertical load at or below zero at the solution (wheel lift:
            outside the model; not checked with ``tyres=False``, where the loads do not act
            back on the motion).
        """
        if self.n_z == 0:              # no algebraic loop (the multibody car)
            qdd, _ = self.evaluate(trk, q, qd, u, np.zeros(0))
            return np.zeros(0), qdd
        z0 = self.static_guess if z0 is None else np.asarray(z0, float)
        n_loads = self.n_loads
        cache = {}

        def residual(zz):
            qdd, r, j = self.evaluate_with_jacobian(trk, q, qd, u, zz)
            cache.update(z=zz, qdd=qdd, jac=j)
            return r

        def jacobian(zz):
            if cache.get("z") is not zz:
                residual(zz)
            return cache["jac"]

        # without tyres the loads do not act back on the motion: no floor, no lift check
        floor = 1.0 if self.tyres else -np.inf
        try:
            z = veh.solve_loop(residual, z0, jacobian, tol=tol, max_iter=max_iter,
                               n_loads=n_loads, floor=floor)
        except RuntimeError as exc:
            raise AlgebraicLoopError(str(exc)) from None
        if cache.get("z") is not z:
            residual(z)
        if self.tyres and np.any(z[:n_loads] <= 1.0 + 1e-9):
            raise AlgebraicLoopError(f"a wheel lifts: vertical loads {np.round(z[:n_loads], 1)} N")
        return z, cache["qdd"]
