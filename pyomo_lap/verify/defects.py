r"""A-posteriori checks of a collocation solution: the dynamics residual between collocation
points, the local error of each element by shooting, and mesh refinement; the solved sector as
every check reads it (:class:`SolvedTable`).

Direct collocation imposes the DAE only at the collocation points. Between them the solution
is the interpolating polynomial of each finite element, and nothing makes it satisfy the
dynamics. Two measures of how far it is from doing so, for every vehicle model, through its
:class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics` (``VehicleModel.dynamics``):

* **residual** (:func:`collocation_defects`): in element :math:`j` the states (the model's
  ``defect_states``, the time last) are the Lagrange polynomial :math:`x_j(s)` through the
  element's start and its collocation points (exactly the polynomial pyomo.dae's Lagrange
  collocation uses). At Gauss points between the collocation points the model's equations
  are evaluated at :math:`x_j(s)` with the element's controls :math:`u_j(s)` (controls that
  are states, OCP option ``control_form = "state"``: the polynomial through the element's
  start and collocation points, like the states; ``control_form = "point"``: the polynomial
  of degree ``ncp - 1`` through the controls at the element's collocation points,
  :class:`pyomo_lap.verify.controls.CollocationControls`, a constant for piecewise-constant
  controls), the algebraic equations solved where the model has them, and the residual of
  the ODE in :math:`s`

  .. math::
      r_i(s) = \frac{dx_{j,i}}{ds}(s) - f_i(s, x_j(s), u_j(s))

  (``ModelDynamics.spatial_rhs``; for a car on the chain the spatial DAE (39),
  :math:`f = (\dot q_2..\dot q_6, \ddot q_1..\ddot q_6, 1)/\dot q_1`) is integrated over the
  element: :math:`\eta_{j,i} = \int_{e_j} |r_i|\,ds` is the error the element's polynomial
  makes in state :math:`i` [state unit]. The scaled error of the element is
  :math:`\varepsilon_j = \max_i \eta_{j,i} / (1 + \max_k |x_i(s_k)|)` (Betts, *Practical
  Methods for Optimal Control*, sec. 4.7). The model's limits (``ModelDynamics.limits``: the
  racecar's friction ellipses and power) are evaluated at the same Gauss points;
* **shooting** (``shooting=True``): from the state at each element's start the time-domain
  simulation (:mod:`pyomo_lap.verify.simulate`) with the element's controls :math:`u_j(s)` is
  integrated to the element's end; the difference from the collocation state there is the
  element's local error [state unit] (and the time difference, [s]).

:func:`pyomo_lap.api.refine.refine_mesh` splits the elements whose scaled error exceeds a tolerance, builds the
model on the new mesh (OCP option ``element_boundaries``), initializes it from the solved one
(:func:`pyomo_lap.ocp.transfer.transfer_solution`, the algebraic loop solved at the new points)
and solves it.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np
import pandas as pd

from ..ocp.build import DEFAULT_MODEL, OCP_CONFIG, vehicle_model
from ..ocp.collocation import element_polynomials
from ..ocp.point_functions import track_vectors, track_vectors_at
from ..ocp.record_model import as_dynamics
from ..ocp.vehicle_model import VehicleModel
from .simulate import shoot_elements

__all__ = ["collocation_defects", "DefectReport", "DEFECT_STATES",
           "defect_states", "SolvedTable"]


DEFECT_STATES = ("q2", "q3", "q4", "q5", "q6", "q1_dot", "q2_dot", "q3_dot", "q4_dot",
                 "q5_dot", "q6_dot", "t")
"""States of the spatial DAE whose residual is measured, full model (any model's:
``VehicleModel.defect_states``)."""

SCHEMES = ("LAGRANGE-RADAU", "LAGRANGE-LEGENDRE")
INTERPOLATIONS = ("auto", "polynomial", "constant", "state")


def defect_states(car) -> tuple:
    """The states of the spatial DAE of the car functions' model (``car.vehicle_model``'s
    ``defect_states``: its joint coordinates besides ``q1``, its rates, and the time;
    :data:`DEFECT_STATES` for the full model)."""
    return tuple(car.vehicle_model.defect_states)


@dataclasses.dataclass(frozen=True)
class SolvedTable:
    """A solved sector as every check reads it: its channel table, its vehicle model and how
    it was collocated (:meth:`of`: from a solved model, its table in one call through the
    model's ``trajectory``, or from a table).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per point (``s``, ``s_sector``, ``element``, ``t``, the model's
        ``defect_states``, controls and algebraic variables ...).
    model : VehicleModel
    start : float
        Track coordinate of the sector start [m].
    ncp : int
        Collocation points per element.
    scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}
    interpolation : {'state', 'polynomial', 'constant', 'auto'}
        How the controls are taken between the points
        (:func:`pyomo_lap.verify.controls.controls_from_trajectory`): ``'state'`` for controls
        that are states (OCP option ``control_form = "state"``).
    """

    table: pd.DataFrame
    model: VehicleModel
    start: float
    ncp: int
    scheme: str = "LAGRANGE-RADAU"
    interpolation: str = "auto"

    @classmethod
    def of(cls, source, *, model=None, start: Optional[float] = None, ncp: Optional[int] = None,
           scheme: Optional[str] = None, interpolation: Optional[str] = None) -> "SolvedTable":
        """The solved sector of a solved model or of its table.

        Parameters
        ----------
        source : pyomo model, DataFrame or SolvedTable
            A model built by :func:`pyomo_lap.ocp.build.build_model` and solved (its table is
            its ``VehicleModel.trajectory``; the other fields its options, where not given),
            a solved table (returned as it is), or a trajectory table (:func:`pyomo_lap.results.table.trajectory_dataframe`, or
            read with :func:`pyomo_lap.results.table.read_trajectory`: every number at full
            precision).
        model : str or VehicleModel, optional
            For a table: its vehicle model (a key of :data:`pyomo_lap.ocp.build.VEHICLE_MODELS`;
            default :data:`pyomo_lap.ocp.build.DEFAULT_MODEL`, the full model).
        start : float, optional
            For a table: the sector's start on the track [m] (default its first ``s``).
        ncp : int, optional
            For a table: collocation points per element (default: from its points per element).
        scheme : {'LAGRANGE-RADAU', 'LAGRANGE-LEGENDRE'}, optional
            For a table (default Radau).
        interpolation : {'state', 'polynomial', 'constant', 'auto'}, optional
            Default: a model's ``control_form`` (``'constant'`` for piecewise-constant controls),
            ``'auto'`` for a table (which never means ``'state'``; its ``summary.json`` says it
            under ``ocp_options``).

        Raises
        ------
        ValueError
            An unknown scheme, interpolation or model, a model without a channel table
            (``VehicleModel.trajectory``), a table without the columns ``s_sector`` and
            ``element``.
        """
        if scheme is not None and scheme not in SCHEMES:
            raise ValueError(f"scheme = {scheme!r}: expected 'LAGRANGE-RADAU' or 'LAGRANGE-LEGENDRE'")
        if interpolation is not None and interpolation not in INTERPOLATIONS:
            raise ValueError(f"interpolation = {interpolation!r}: expected 'auto', 'polynomial', "
                             "'constant' or 'state'")
        if isinstance(source, SolvedTable):
            return source
        if isinstance(source, pd.DataFrame):
            return cls._of_table(source, vehicle_model(model or DEFAULT_MODEL), start, ncp, scheme,
                                 interpolation)
        vm, opts = source.problem.vehicle_model, source.problem.options
        if vm.trajectory is None:
            raise ValueError(f"model {vm.name!r}: its VehicleModel has no channel table "
                             "(trajectory): its results cannot be checked")
        if interpolation is None:
            interpolation = ("constant" if getattr(opts, "piecewise_constant_controls", False) else
                             "state" if getattr(opts, "control_form", "point") == "state"
                             else "polynomial")
        return cls(table=vm.trajectory(source), model=vm,
                   start=float(opts.start if start is None else start), ncp=int(opts.ncp),
                   scheme=scheme or opts.scheme, interpolation=interpolation)

    @classmethod
    def _of_table(cls, df, vm, start, ncp, scheme, interpolation) -> "SolvedTable":
        """:meth:`of` a table."""
        missing = [c for c in ("s_sector", "element") if c not in df.columns]
        if missing:
            raise ValueError(f"the trajectory lacks the column(s) {missing}")
        scheme = scheme or SCHEMES[0]
        if start is None:
            start = float(df["s"].iloc[0]) if "s" in df.columns else 0.0
        if ncp is None:         # the points of the first element (of a part of a table: 0)
            counts = np.bincount(df["element"].to_numpy().astype(int))
            first = int(counts[1]) if len(counts) > 1 else 0
            ncp = first if scheme == SCHEMES[0] else max(first - 1, 0)
        return cls(table=df, model=vm, start=float(start), ncp=int(ncp), scheme=scheme,
                   interpolation=interpolation or "auto")

    @property
    def state_controls(self) -> bool:
        """Whether the controls are states (:attr:`interpolation` ``'state'``): the polynomial
        through each element's start and collocation points."""
        return self.interpolation == "state"

    def dynamics(self, vehicle):
        """The model's :class:`~pyomo_lap.ocp.vehicle_model.ModelDynamics` for ``vehicle``
        (``VehicleModel.dynamics``, the rows recorded with the default OCP options).

        Raises
        ------
        ValueError
            A model without ``dynamics``: its results are not checked.
        """
        vm = self.model
        if vm.dynamics is None:
            raise ValueError(f"model {vm.name!r}: its VehicleModel has no dynamics, so its "
                             "results cannot be checked")
        return vm.dynamics(vehicle, vm, OCP_CONFIG())

    def columns(self, names) -> np.ndarray:
        """The table's columns ``names`` as a (n, len(names)) array (named in the error when
        missing).

        Raises
        ------
        ValueError
            A missing column.
        """
        missing = [c for c in names if c not in self.table.columns]
        if missing:
            raise ValueError(f"the {self.model.name!r} trajectory lacks the column(s) {missing}")
        return self.table[list(names)].to_numpy(float).reshape(len(self.table), len(names))

    def omega(self) -> dict:
        """The track's angular velocity [1/m] at the table's points as the model's equations
        took it, ``{k: (n,) array}`` for each component ``k`` (0, 1, 2: ``x, y, z``) the table
        has as a column ``Omega_x .. Omega_z`` (the racecar's element-end points take their
        element's curvature, :func:`pyomo_lap.ocp.racecar.racecar_trajectory`)."""
        return {k: self.table[f"Omega_{c}"].to_numpy(float) for k, c in enumerate("xyz")
                if f"Omega_{c}" in self.table.columns}

    def track_at_points(self, track) -> np.ndarray:
        """The track inputs (:func:`pyomo_lap.ocp.point_functions.track_vectors_at`, (n, 15))
        at the table's points as the model's equations took them: the track at ``start +
        s_sector``, its ``Omega`` the table's own (:meth:`omega`) where it has it."""
        return track_vectors_at(track, self.start + self.table["s_sector"].to_numpy(float),
                                self.omega())


@dataclasses.dataclass
class DefectReport:
    """Result of :func:`collocation_defects`.

    Attributes
    ----------
    elements : DataFrame
        One row per finite element: ``element`` (1..N), ``s_start``, ``s_end``, ``h`` [m],
        ``eta_<state>`` (integrated |residual| [state unit]), ``eps`` (scaled error, the
        refinement criterion [-]), ``worst`` (state giving ``eps``); with shooting also
        ``shoot_<state>`` (local error at the element's end [state unit]; ``shoot_t`` [s]).
    points : DataFrame
        One row per evaluation point: ``s_sector``, ``element``, ``res_<state>``
        [state unit / m], and ``limit_<name>``, the share of each of the model's limits the
        collocation polynomials use there (``ModelDynamics.limits``; 1 at the limit).
    node_residual : dict
        Largest |residual| at the collocation points per state [state unit / m]: the DAE as the
        solver satisfied it (tolerance-level; a check of this function against the model).
    weights : dict
        ``1 + max |x_i|`` per state.
    wall_time_s : float
    states : tuple of str
        The states measured (the model's ``defect_states``).
    """

    elements: pd.DataFrame
    points: pd.DataFrame
    node_residual: dict
    weights: dict
    wall_time_s: float
    states: tuple = DEFECT_STATES

    def summary(self) -> dict:
        """Headline numbers (JSON-friendly): the scaled defect's largest value, 95th percentile
        and median, where and in which state the largest is, the largest integrated residual
        and node residual per state, with shooting its largest local error per state."""
        el = self.elements
        k = int(el["eps"].idxmax())
        out = {
            "n_elements": int(len(el)),
            "eps_max": float(el["eps"].max()),
            "eps_p95": float(np.percentile(el["eps"].to_numpy(float), 95)),
            "eps_median": float(el["eps"].median()),
            "eps_max_element": int(el["element"].iloc[k]),
            "eps_max_at_s_m": float(0.5 * (el["s_start"].iloc[k] + el["s_end"].iloc[k])),
            "eps_max_state": str(el["worst"].iloc[k]),
            "eta_max": {st: float(el[f"eta_{st}"].max()) for st in self.states},
            "node_residual_max": {k2: float(v) for k2, v in self.node_residual.items()},
            "wall_time_s": self.wall_time_s,
        }
        if f"shoot_{self.states[0]}" in el.columns:
            out["shoot_max"] = {st: float(np.nanmax(np.abs(el[f"shoot_{st}"])))
                                for st in self.states}
            out["shoot_time_sum_s"] = float(np.nansum(el["shoot_t"]))
        return out


def collocation_defects(source, track, vehicle, *, ncp: Optional[int] = None,
                        scheme: Optional[str] = None, start: Optional[float] = None,
                        n_gauss: Optional[int] = None, shooting: bool = False, car=None,
                        interpolation: Optional[str] = None, node_residuals: bool = True,
                        model=None) -> DefectReport:
    r"""Residual of the dynamics of a collocation solution between its collocation points.

    Parameters
    ----------
    source : pyomo model, DataFrame or SolvedTable
        A solved model of any vehicle model whose ``VehicleModel`` has ``dynamics``
        (:func:`pyomo_lap.ocp.build.build_model`), its trajectory
        (:func:`pyomo_lap.results.table.trajectory_dataframe`, or ``trajectory.csv`` read with
        :func:`pyomo_lap.results.table.read_trajectory`: every number at full precision), or
        a :class:`SolvedTable`.
    track, vehicle
        Those the model was built with.
    ncp, scheme, start, interpolation, model
        For a table, as :meth:`SolvedTable.of` (a model knows its own). ``interpolation``:
        ``'state'``, the controls are the polynomial through the element's start and
        collocation points (``control_form = "state"``); any other value, the polynomial
        through the collocation points only (a constant for constant controls).
    n_gauss : int, optional
        Gauss-Legendre points per element for the integral (default ``ncp + 2``).
    shooting : bool
        Also integrate each element in time from its start (local error by shooting; about
        10-20 ms per element).
    car : ModelDynamics or CarFunctions, optional
        The model's equations for the car, if made already (:meth:`SolvedTable.dynamics`).
    node_residuals : bool
        Also the residual at the collocation points (:attr:`DefectReport.node_residual`, the
        solver's tolerance; a third of the time). False: zeros (the self-check of a solve).

    Returns
    -------
    DefectReport

    Raises
    ------
    ValueError
        Unknown scheme, interpolation or model, a model without ``dynamics``, or a trajectory
        whose elements do not have the expected points or that lacks the model's columns.
    """
    t0 = time.perf_counter()
    sol = SolvedTable.of(source, model=model, start=start, ncp=ncp, scheme=scheme,
                         interpolation=interpolation)
    dyn = sol.dynamics(vehicle) if car is None else as_dynamics(car)
    d = _element_defects(sol, dyn, track, n_gauss or sol.ncp + 2, node_residuals)
    if shooting:
        shot = shoot_elements(track, vehicle, dyn, d.s_track, d.X, d.U, d.Z, d.poly.nodes,
                              d.poly.ends, sol.state_controls)
        for i, st in enumerate(dyn.states):
            d.elements[f"shoot_{st}"] = shot[:, i]
    return DefectReport(elements=d.elements, points=d.points,
                        node_residual=dict(zip(dyn.states, d.node_residual)),
                        weights=dict(zip(dyn.states, map(float, d.weights))),
                        wall_time_s=time.perf_counter() - t0, states=tuple(dyn.states))


@dataclasses.dataclass
class _ElementDefects:
    """What :func:`_element_defects` measured, and the table's arrays the shooting takes."""

    elements: pd.DataFrame
    points: pd.DataFrame
    node_residual: np.ndarray
    weights: np.ndarray
    poly: object                     # ElementPolynomials
    s_track: np.ndarray
    X: np.ndarray
    U: np.ndarray
    Z: np.ndarray


def _element_defects(sol: SolvedTable, dyn, track, ng: int, node_residuals: bool) -> _ElementDefects:
    """The rows of :attr:`DefectReport.elements` and :attr:`DefectReport.points` of every
    element, and the largest residual at the collocation points (zeros without
    ``node_residuals``): the states' and controls' polynomials at ``ng`` Gauss points of every
    element (:func:`pyomo_lap.ocp.collocation.element_polynomials`), the model's equations at
    all of them in one batch (``dyn.spatial_rhs``: the algebraic loop of each started from its
    element's first collocation point) against the polynomials' derivatives, integrated over
    each element and scaled by ``1 + max|x|``; the model's limits there (``dyn.limits``)."""
    states = tuple(dyn.states)
    s = sol.table["s_sector"].to_numpy(float)
    X, U, Z = sol.columns(states), sol.columns(dyn.controls), sol.columns(dyn.algebraic)
    omega = sol.omega()
    gx, gw = np.polynomial.legendre.leggauss(ng)
    gx, gw = 0.5 * (gx + 1.0), 0.5 * gw
    poly = element_polynomials(sol.table["element"], s, X, U, gx, sol.scheme, sol.ncp,
                               sol.state_controls)
    s_track = sol.start + s
    tv_eval = track_vectors(track.evaluate(sol.start + poly.s))
    n_el, _, ns = poly.states.shape
    first = np.array([nodes[1] for nodes in poly.nodes])
    x_all, u_all = poly.states.reshape(-1, ns), poly.controls.reshape(n_el * ng, -1)
    f, z, ok = dyn.spatial_rhs(tv_eval, x_all, u_all, np.repeat(Z[first], ng, axis=0))
    res = poly.derivatives.reshape(-1, ns) - f
    res[~ok] = np.nan
    limits = dyn.limits(tv_eval, x_all, u_all, z) if dyn.limit_names else {}
    node_res = np.zeros(ns)
    if node_residuals:
        tv_nodes = track_vectors_at(track, s_track, omega)    # the track as the model took it
        rows = poly.node_rows
        fn, _, okn = dyn.spatial_rhs(tv_nodes[rows], X[rows], U[rows], Z[rows])
        rn = np.abs(poly.node_derivatives - fn)[okn]
        if rn.size:
            node_res = rn.max(axis=0)
    weights = 1.0 + np.max(np.abs(X), axis=0)
    eta = poly.h[:, None] * np.einsum("g,jgi->ji", gw, np.abs(res.reshape(n_el, ng, ns)))
    scaled = eta / weights
    worst = np.argmax(np.where(np.isfinite(scaled), scaled, -np.inf), axis=1)
    elements = pd.DataFrame({"element": np.arange(1, n_el + 1), "s_start": poly.a,
                             "s_end": poly.b, "h": poly.h,
                             **{f"eta_{st}": eta[:, i] for i, st in enumerate(states)},
                             "eps": scaled[np.arange(n_el), worst],
                             "worst": [states[i] for i in worst]})
    points = pd.DataFrame({"s_sector": poly.s, "element": np.repeat(np.arange(1, n_el + 1), ng),
                           **{f"res_{st}": res[:, i] for i, st in enumerate(states)},
                           **{f"limit_{k}": v for k, v in limits.items()}})
    return _ElementDefects(elements=elements, points=points, node_residual=node_res,
                           weights=weights, poly=poly, s_track=s_track, X=X, U=U, Z=Z)






