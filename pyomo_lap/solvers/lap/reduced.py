r"""The presolve of the fast path: pyomo.dae's derivative variables eliminated
(:class:`ReducedNLP`, on a :class:`~pyomo_lap.solvers.lap.nlp.LapNLP`)."""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from pyomo.dae import DerivativeVar

_INF = 1e20

__all__ = ["ReducedNLP"]


class ReducedNLP:
    r"""A :class:`LapNLP` with pyomo.dae's derivative variables eliminated.

    pyomo.dae writes the collocation of a state :math:`x` as a variable :math:`dx/ds` per point
    and a linear equation per point defining it from the state values of the element,
    :math:`dx/ds(s_i) = \sum_j a_{ij} x_j / h`. Such a variable (an entry of a
    ``DerivativeVar`` without bounds, defined by exactly one linear equality) is replaced by
    that combination everywhere: ``x_full = T x + c`` with a constant sparse ``T``. The NLP
    IPOPT sees then has 12 variables and 12 equations fewer per point (a third of the KKT
    system of the OCP), the same solutions and the same multipliers for the other rows; the
    eliminated rows' multipliers are recovered from the stationarity of the Lagrangian in the
    eliminated variable (:meth:`full_multipliers`).

    Attributes, callbacks and conventions are those of :class:`LapNLP` (for the reduced
    problem); :attr:`full` is the original.
    """

    def __init__(self, nlp):
        t0 = time.perf_counter()
        self.full = nlp
        self.sense = nlp.sense
        lin, chosen_row, elim = self._eliminated(nlp)
        kept = np.flatnonzero(~np.isin(np.arange(nlp.n), elim))
        self._kept, self._elim = kept, elim
        self._elim_rows = chosen_row + nlp._lin_slice.start
        self._substitution(nlp, lin, chosen_row)
        rows_kept = np.setdiff1d(np.arange(nlp.m), self._elim_rows)
        self._rows_kept = rows_kept
        self.n, self.m = int(kept.size), int(rows_kept.size)
        self.variables = [nlp.variables[k] for k in kept]
        self.constraints = [nlp.constraints[r] for r in rows_kept]
        self.x0, self.x_lb, self.x_ub = nlp.x0[kept], nlp.x_lb[kept], nlp.x_ub[kept]
        self.g_lb, self.g_ub = nlp.g_lb[rows_kept], nlp.g_ub[rows_kept]
        self.x_scaling = nlp.x_scaling[kept] if nlp.x_scaling is not None else None
        self.g_scaling = nlp.g_scaling[rows_kept] if nlp.g_scaling is not None else None
        self.obj_scaling = nlp.obj_scaling
        self._jacobian_map(nlp)
        self._hessian_map(nlp)
        self._jf = np.empty(nlp.jac_rows.size)
        self._hf = np.empty(nlp.hess_rows.size)
        self._gf = np.empty(nlp.m)
        self._gradf = np.empty(nlp.n)
        self._lam = np.zeros(nlp.m)
        self.report = nlp.report
        self.report.eliminated = int(elim.size)
        self.report.presolve_s = time.perf_counter() - t0
        self.report.n_variables, self.report.n_constraints = self.n, self.m
        self.report.jac_nnz, self.report.hess_nnz = int(self.jac_rows.size), int(self.hess_rows.size)

    @staticmethod
    def _eliminated(nlp):
        """``(lin, rows, variables)``: the linear rows' matrix, the rows (positions in it) that
        define an eliminated variable, and those variables, in row order. A candidate is an unbounded
        entry of a ``DerivativeVar``; its row a linear equality with exactly one candidate
        column; a candidate defined by several rows goes with the first of them."""
        lin = nlp._lin.tocsr(copy=True)
        lin.sum_duplicates()
        cand = ((nlp.x_lb <= -_INF / 2) & (nlp.x_ub >= _INF / 2)
                & np.array([isinstance(v.parent_component(), DerivativeVar)
                            for v in nlp.variables], dtype=bool))
        eq = nlp.g_lb[nlp._lin_slice] == nlp.g_ub[nlp._lin_slice]
        row_of_nz = np.repeat(np.arange(lin.shape[0]), np.diff(lin.indptr))
        is_cand = cand[lin.indices]
        n_cand = np.bincount(row_of_nz[is_cand], minlength=lin.shape[0])
        pick = is_cand & eq[row_of_nz] & (n_cand[row_of_nz] == 1)
        var_of, first = np.unique(lin.indices[pick], return_index=True)
        chosen_row = row_of_nz[pick][first]
        order = np.argsort(chosen_row, kind="stable")
        return lin, chosen_row[order].astype(np.int64), var_of[order].astype(np.int64)

    def _substitution(self, nlp, lin, chosen_row) -> None:
        """``_T``, ``_c`` with ``x_full = T x_red + c``: the row of the k-th eliminated ``v``
        reads ``a_v v + sum_j a_j x_j + const = g``, so ``v = (g - const - sum_j a_j x_j) / a_v``;
        ``_elim_coef`` holds the ``a_v``."""
        n, kept, elim = nlp.n, self._kept, self._elim
        red = np.full(n, -1, dtype=np.int64)
        red[kept] = np.arange(kept.size)
        S = lin[chosen_row].tocoo()
        k_of, cols, vals = S.row.astype(np.int64), S.col.astype(np.int64), S.data
        own = cols == elim[k_of]
        a = np.zeros(elim.size)
        a[k_of[own]] = vals[own]
        oth = ~own
        Ti = np.concatenate([kept, elim[k_of[oth]]])
        Tj = np.concatenate([np.arange(kept.size), red[cols[oth]]])
        Tv = np.concatenate([np.ones(kept.size), -vals[oth] / a[k_of[oth]]])
        c = np.zeros(n)
        r0 = nlp._lin_slice.start
        c[elim] = (nlp.g_lb[r0 + chosen_row] - nlp._lin_const[chosen_row]) / a
        self._elim_coef = a
        self._T = sp.csr_matrix((Tv, (Ti, Tj)), shape=(n, kept.size))
        self._TT = self._T.T.tocsr()
        self._c = c

    def _jacobian_map(self, nlp) -> None:
        """``J_red = J_full[kept rows] T`` as a linear map ``_MJ`` of the full Jacobian's values,
        and its structure."""
        T = self._T
        newrow = np.full(nlp.m, -1, dtype=np.int64)
        newrow[self._rows_kept] = np.arange(self._rows_kept.size)
        jr, jc = nlp.jac_rows.astype(np.int64), nlp.jac_cols.astype(np.int64)
        e = np.flatnonzero(newrow[jr] >= 0)
        rr, cc = newrow[jr[e]], jc[e]
        cnt = np.diff(T.indptr)[cc]
        src = np.repeat(e, cnt)
        tr = np.repeat(rr, cnt)
        pos = np.repeat(T.indptr[cc], cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        keys = tr * self.n + T.indices[pos].astype(np.int64)
        uniq, dest = np.unique(keys, return_inverse=True)
        self.jac_rows = (uniq // self.n).astype(np.int32)
        self.jac_cols = (uniq % self.n).astype(np.int32)
        self._MJ = sp.csr_matrix((T.data[pos], (dest, src)), shape=(uniq.size, jr.size))

    def _hessian_map(self, nlp) -> None:
        """``H_red = T^T H_full T`` (lower triangles) as a linear map ``_MH`` of the full
        Hessian's values, and its structure: the pairs of the ``T`` rows of the entry's row
        ``k`` and column ``l``; for ``k == l`` every ordered pair ``(i, j)`` with ``i >= j``
        once, for ``k != l`` each pair once into the lower triangle, twice on the diagonal."""
        T = self._T
        hr, hc = nlp.hess_rows.astype(np.int64), nlp.hess_cols.astype(np.int64)
        nk, nl = np.diff(T.indptr)[hr], np.diff(T.indptr)[hc]
        npairs = nk * nl
        E = np.repeat(np.arange(hr.size), npairs)
        within = np.arange(npairs.sum()) - np.repeat(np.cumsum(npairs) - npairs, npairs)
        pk = T.indptr[hr[E]] + within // np.repeat(nl, npairs)
        pl = T.indptr[hc[E]] + within % np.repeat(nl, npairs)
        i_, j_ = T.indices[pk].astype(np.int64), T.indices[pl].astype(np.int64)
        ww = T.data[pk] * T.data[pl]
        diag_e = hr[E] == hc[E]
        keep = ~diag_e | (i_ >= j_)
        ww = np.where(~diag_e & (i_ == j_), 2.0 * ww, ww)
        keys = np.maximum(i_, j_)[keep] * self.n + np.minimum(i_, j_)[keep]
        uniq, dest = np.unique(keys, return_inverse=True)
        self.hess_rows = (uniq // self.n).astype(np.int32)
        self.hess_cols = (uniq % self.n).astype(np.int32)
        self._MH = sp.csr_matrix((ww[keep], (dest, E[keep])), shape=(uniq.size, hr.size))

    # ------------------------------------------------------------------------------------------
    def full_x(self, x) -> np.ndarray:
        """The values of every variable of :attr:`full` (n_full,) for reduced ``x``."""
        return self._T @ np.asarray(x, dtype=float) + self._c

    def objective(self, x) -> float:
        """The objective at the full point of reduced ``x``."""
        return self.full.objective(self.full_x(x))

    def gradient(self, x, out) -> None:
        """The objective's gradient in the reduced variables (chain rule) into ``out``."""
        self.full.gradient(self.full_x(x), self._gradf)
        out[:] = self._TT @ self._gradf

    def constraints_eval(self, x, out) -> None:
        """The kept rows' values into ``out``."""
        self.full.constraints_eval(self.full_x(x), self._gf)
        out[:] = self._gf[self._rows_kept]

    def jacobian(self, x, out) -> None:
        """The kept rows' Jacobian values in the reduced variables into ``out``."""
        self.full.jacobian(self.full_x(x), self._jf)
        out[:] = self._MJ @ self._jf

    def hessian(self, x, obj_factor, lam, out) -> None:
        """The reduced Lagrangian's Hessian values (lower triangle) into ``out``."""
        self._lam[self._rows_kept] = lam
        self.full.hessian(self.full_x(x), obj_factor, self._lam, self._hf)
        out[:] = self._MH @ self._hf

    def full_multipliers(self, x, mult_g, mult_x_L, mult_x_U):
        r"""Multipliers of the full problem: the kept rows' as given, the eliminated rows'
        from :math:`\partial L/\partial v = 0` in each eliminated variable :math:`v`
        (which has no bounds), i.e. :math:`\lambda_r = -(\partial f/\partial v +
        \sum_{k \ne r} \lambda_k \partial g_k/\partial v) / a_{rv}`.

        Returns
        -------
        (x_full, mult_g_full, mult_x_L_full, mult_x_U_full)
        """
        nlp = self.full
        xf = self.full_x(x)
        lam = np.zeros(nlp.m)
        lam[self._rows_kept] = mult_g
        grad = np.empty(nlp.n)
        nlp.gradient(xf, grad)
        jv = np.empty(nlp.jac_rows.size)
        nlp.jacobian(xf, jv)
        J = sp.csc_matrix((jv, (nlp.jac_rows, nlp.jac_cols)), shape=(nlp.m, nlp.n))
        jt_lam = J.T @ lam               # the eliminated rows' lambdas are still 0 here
        lam[self._elim_rows] = -(grad[self._elim] + jt_lam[self._elim]) / self._elim_coef
        zl = np.zeros(nlp.n)
        zu = np.zeros(nlp.n)
        zl[self._kept] = mult_x_L
        zu[self._kept] = mult_x_U
        return xf, lam, zl, zu
