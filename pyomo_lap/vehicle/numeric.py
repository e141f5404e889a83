r"""Fast float evaluation of a vehicle model: the *same* equations that build the Pyomo model,
traced once into CasADi functions, and the algebraic loop solved by Newton's method.

:func:`pyomo_lap.vehicle.car.car_equations` (and the ABA of :mod:`pyomo_lap.spatial.tree` under it) is
written once over "scalars" (:mod:`pyomo_lap.spatial.backend`). Called with plain floats it takes a few
milliseconds per point, far too slow inside an ODE integrator that needs tens of thousands of
evaluations. :class:`CarFunctions` calls it once with CasADi ``SX`` symbols for the state, the
controls, the algebraic variables and the track-joint data, and keeps the resulting expression
graph as compiled-in-memory CasADi functions: a call then costs tens of microseconds, and the
Jacobian of the algebraic residuals comes exactly from automatic differentiation. Nothing of
the model is written a second time.

Track-joint data enter as 21 numbers (:func:`track_vector`): :math:`R_{0,1}` row by row, the
Jacobian :math:`J_1^1` and its derivative :math:`J^1_{1,q_1}` (eq 12).

The algebraic loop (the seven equations (35)-(36) of the full model, five of the single-track
model) is solved by :func:`pyomo_lap.vehicle.car.solve_loop`, the same Newton routine that
:func:`pyomo_lap.vehicle.car.solve_algebraic` and the cold-start guess use.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from . import single_track_car as st
from . import car as veh
from ..spatial.tree import TrackJoint

__all__ = ["CarFunctions", "track_vector", "joint_from_vector", "AlgebraicLoopError"]

N_TRACK = 21
"""Length of the track-joint vector: R (9, row-major), J (6), dJ (6)."""


class AlgebraicLoopError(RuntimeError):
    """The algebraic loop (loads and in-plane tyre forces) has no solution near the guess:
    typically a wheel that lifts (a vertical load would have to be negative) or a speed
    ``v_3x`` near zero (slip angles divide by it)."""


def track_vector(tj: TrackJoint) -> np.ndarray:
    """The 21 numbers of a :class:`~pyomo_lap.spatial.tree.TrackJoint` that the dynamics use.

    Returns
    -------
    ndarray (21,)
        ``R_{0,1}`` row by row [-], ``J_1^1`` [-, 1/m], ``dJ_1^1/dq1`` [1/m, 1/m^2].
    """
    return np.concatenate([np.asarray(tj.R, float).reshape(9), np.asarray(tj.J, float),
                           np.asarray(tj.dJ, float)])


def joint_from_vector(v) -> TrackJoint:
    """Inverse of :func:`track_vector` (``p`` set to zero: the dynamics do not use it)."""
    v = list(v)
    return TrackJoint(R=[v[0:3], v[3:6], v[6:9]], J=v[9:15], dJ=v[15:21])


def track_vectors(tp, start: int = 0, stop: Optional[int] = None) -> np.ndarray:
    """Track-joint vectors of the points of a :class:`~pyomo_lap.track.points.TrackPoints`
    (arc-length parametrisation: ``J = [1, 0, 0, Omega]``, ``dJ = [0, 0, 0, dOmega/ds]``).

    Returns
    -------
    ndarray (n, 21)
    """
    n = len(tp.s)
    out = np.zeros((n, N_TRACK))
    out[:, :9] = tp.rotation.reshape(n, 9)
    out[:, 9] = 1.0
    out[:, 12:15] = tp.omega
    out[:, 18:21] = tp.domega_ds
    return out[start:stop]


class CarFunctions:
    """CasADi functions of one vehicle model, traced from its equations.

    Parameters
    ----------
    p : VehicleParameters
    model : {'full', 'single-track'}
        ``'full'``: :func:`pyomo_lap.vehicle.car.car_equations` on the six-joint chain
        (q, q̇ of length 6, z of length 7). ``'single-track'``:
        :func:`pyomo_lap.vehicle.single_track_car.single_track_equations` (q, q̇ of length 3, z of
        length 5).
    tyres : bool
        False: the in-plane tyre wrench is switched off (``f_3x = f_3y = m_3z = 0`` are
        imposed instead of the in-plane equations (36)); the loads are still solved.

    Attributes
    ----------
    n_q, n_z : int
        Number of joints and of algebraic variables.
    algebraic : tuple of str
        Names of the algebraic variables.
    channel_names : tuple of str
    """

    def __init__(self, p: veh.VehicleParameters, model: str = "full", tyres: bool = True):
        import casadi as ca

        if model == "full":
            chain = veh.build_chain(p)
            eqs, n_q, algebraic = veh.car_equations, 6, veh.ALGEBRAIC
        elif model == "single-track":
            chain = st.build_chain(p)
            eqs, n_q, algebraic = st.single_track_equations, 3, st.ALGEBRAIC
        else:
            raise ValueError(f"model = {model!r}: expected 'full' or 'single-track'")
        self.p, self.model, self.chain, self.tyres = p, model, chain, bool(tyres)
        self.n_q, self.n_z, self.algebraic = n_q, len(algebraic), tuple(algebraic)
        q = ca.SX.sym("q", n_q)
        qd = ca.SX.sym("qd", n_q)
        u = ca.SX.sym("u", 3)
        z = ca.SX.sym("z", self.n_z)
        trk = ca.SX.sym("trk", N_TRACK)
        el = lambda v: [v[i] for i in range(v.shape[0])]  # noqa: E731
        tj = joint_from_vector(el(trk))
        e = eqs(p, chain, tj, el(q), el(qd), el(u), el(z))
        qdd = ca.vertcat(*[ca.SX(x) if isinstance(x, (int, float)) else x for x in e.qdd])
        res_list = list(e.load_residuals) + list(e.inplane_residuals)
        if not tyres:   # in-plane tyre wrench off: impose it to be zero
            n_in = len(e.inplane_residuals)
            res_list = list(e.load_residuals) + [z[self.n_z - n_in + k] for k in range(n_in)]
        res = ca.vertcat(*[ca.SX(x) if isinstance(x, (int, float)) else x for x in res_list])
        jac = ca.jacobian(res, z)
        args = ca.vertcat(q, qd, u, z, trk)
        # one packed input and one dense packed output, evaluated through a FunctionBuffer on
        # preallocated arrays: about 10 us a call instead of about 150 us through the
        # ordinary call with its argument conversions
        self._fj = ca.Function("car_jac", [args],
                               [ca.densify(ca.vertcat(qdd, res, ca.vec(ca.densify(jac))))])
        self._f = ca.Function("car", [args], [ca.densify(ca.vertcat(qdd, res))])
        self._in = np.zeros(args.shape[0])
        self._out = np.zeros(n_q + self.n_z + self.n_z ** 2)
        self._buf, self._eval = self._fj.buffer()
        self._buf.set_arg(0, memoryview(self._in))
        self._buf.set_res(0, memoryview(self._out))
        ch = dict(e.channels)
        self.channel_names = tuple(ch)
        self._fc = ca.Function("car_channels", [args],
                               [ca.vertcat(*[ca.SX(v) if isinstance(v, (int, float)) else v
                                             for v in ch.values()])])
        self.static_guess = self._static_guess()

    def _static_guess(self) -> np.ndarray:
        p = self.p
        if self.model == "full":
            s1, s2 = p.static_loads
            return np.array([s1, s1, s2, s2, 0.0, 0.0, 0.0])
        s1, s2 = p.static_loads
        return np.array([2 * s1, 2 * s2, 0.0, 0.0, 0.0])

    # ------------------------------------------------------------------ evaluation
    def _pack(self, trk, q, qd, u, z):
        n, m = self.n_q, self.n_z
        x = self._in
        x[0:n] = q
        x[n:2 * n] = qd
        x[2 * n:2 * n + 3] = u
        x[2 * n + 3:2 * n + 3 + m] = z
        x[2 * n + 3 + m:] = trk
        return x

    def evaluate_with_jacobian(self, trk, q, qd, u, z):
        """q̈, the algebraic residuals and their Jacobian at given z.

        Parameters
        ----------
        trk : (21,) track vector (:func:`track_vector`)
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
        trk : (n, 21)
        q, qd : (n, n_q)
        u : (n, 3)
        z : (n, n_z)

        Returns
        -------
        (qdd (n, n_q), res (n, n_z))
            [m/s^2 or rad/s^2], [N or N m].
        """
        args = np.hstack([np.asarray(a, float) for a in (q, qd, u, z, trk)])
        out = np.asarray(self._f.map(args.shape[0])(args.T))
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
        trk : (k, 21)
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
        n_loads = 4 if self.model == "full" else 2
        floor = 1.0 if self.tyres else -np.inf
        fixed = np.hstack([np.asarray(a, float) for a in (q, qd, u)])
        trk = np.asarray(trk, float)
        z = np.array(z0, dtype=float, copy=True)
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
        """Named channels of the model (slip angles, tyre forces, W3J, speeds, power ...)."""
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
        z0 = self.static_guess if z0 is None else np.asarray(z0, float)
        n_loads = 4 if self.model == "full" else 2
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
