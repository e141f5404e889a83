r"""A solution moved between meshes and models, in one home (as Pyomo's ``contrib.mpc`` keeps a
model's data over time and its interpolation in one place).

:class:`Solution` is the data: the values of a solution over the sector coordinate ``s``, by
variable, with its mesh (the points and the element boundaries) and its collocation scheme;
from a built model (:meth:`Solution.from_model`), from the arrays of a results folder's
``solution.npz`` (:meth:`Solution.from_arrays`; the folder itself is read by the layer that
reads folders, :func:`pyomo_lap.api.warm_start.read_source`) or from a trajectory table's mesh
rows (:meth:`Solution.from_table`). :meth:`Solution.at` gives its values anywhere in the sector
by the collocation polynomials (:func:`pyomo_lap.ocp.collocation.collocation_interpolate`):

* **states** (:attr:`Solution.states`: the variables with a derivative variable
  ``d<name>_ds``, among them the controls with ``control_form = "state"``, and the racecar's
  controls made polynomials with continuous rates, :func:`model_states`): the polynomial
  through each element's start and collocation points (degree ``ncp``); their derivative
  variables either by that polynomial's derivative (``derivatives="polynomial"``: a new point
  inside an old element then satisfies the old element's collocation equations) or moved as
  variables of their own (``derivatives="values"``: on the same mesh, the very values);
* **every other variable** (algebraic variables, controls at points, the hybrid's powers): the
  polynomial through the element's collocation points (degree ``ncp - 1``).

At a point of the source's mesh every value is the source's, exactly.

:func:`transfer_solution` writes a solution into a model: every variable indexed by its mesh
that the solution has, clipped to its bounds (a polynomial may overshoot them between its
points; fixed variables and values that are not numbers are left alone,
:func:`set_within_bounds`), the model's multipliers forgotten
(:func:`pyomo_lap.util.suffixes.forget_multipliers`: a new start is not the point they belong
to); with ``solve_loop=True`` the algebraic loop (the loads and the in-plane tyre forces) is
then solved at every point from the interpolated values (:func:`solve_loop_at`, the car's
record: :class:`pyomo_lap.ocp.point_functions.CarFunctions`).

Who moves a solution, all through these: the mesh continuation
(:func:`pyomo_lap.api.continuation.interpolate_solution`), the warm start from a results folder
(:mod:`pyomo_lap.api.warm_start`), the mesh refinement
(:func:`pyomo_lap.api.refine.refine_mesh`, the loop solved), the finite differences of
:mod:`pyomo_lap.analysis.sensitivities` and the single-track start of the full model
(:func:`pyomo_lap.ocp.initialize.initialize_from_solution`), a restart from a table
(:func:`pyomo_lap.ocp.initialize.initialize_from_trajectory`) and the channels on a fixed step
(:mod:`pyomo_lap.results.fixed_step`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Optional

import numpy as np
import pandas as pd
import pyomo.environ as pyo
from pyomo.dae import DerivativeVar

from ..util.suffixes import START_MULTIPLIER_SUFFIXES, forget_multipliers
from .collocation import collocation_interpolate, snap_breaks
from .common import within_bounds
from .point_functions import CarFunctions, record_of, track_vectors

__all__ = ["Solution", "mesh_nodes", "transfer_solution", "solve_loop_at", "set_within_bounds",
           "state_names", "model_states", "mesh_components", "check_same_sector",
           "forget_multipliers", "START_MULTIPLIER_SUFFIXES", "DERIVATIVES"]

DERIVATIVES = ("polynomial", "values")
"""How :meth:`Solution.at` moves the derivative variables ``d<state>_ds``: the derivative of the
state's polynomial, or their own values by the polynomial through the collocation points."""


def mesh_nodes(df) -> np.ndarray:
    """The mesh points ``s_sector`` [m] of a table of mesh rows, shape (n,), checked.

    Parameters
    ----------
    df : DataFrame
        One row per mesh point (:func:`pyomo_lap.results.table.trajectory_dataframe`, or a
        results folder's rows read with ``read_trajectory(folder, mesh=True)``).

    Raises
    ------
    ValueError
        No column ``s_sector``, fewer than two rows, or rows that do not increase.
    """
    if "s_sector" not in df.columns:
        raise ValueError("the trajectory has no column s_sector: expected the mesh rows of "
                         "a pyomo_lap results folder")
    s = df["s_sector"].to_numpy(dtype=float)
    if len(s) < 2 or np.any(np.diff(s) <= 0):
        raise ValueError("the trajectory's s_sector must increase from row to row: expected "
                         "the mesh rows")
    return s

def state_names(names: Iterable[str]) -> tuple:
    """``(states, variables)`` from the names of a model's variable components (or the
    ``var:<name>`` entries of a ``solution.npz``): the states are the names ``X`` with a
    derivative ``dX_ds``, the variables the other names (the derivatives left out)."""
    names = {n[4:] if n.startswith("var:") else n for n in names}
    states = {n for n in names if f"d{n}_ds" in names}
    derivs = {f"d{n}_ds" for n in states}
    return states, names - states - derivs


def mesh_components(m, descend_into: bool = False) -> list:
    """The variable components of a built model indexed by its mesh ``m.s`` (``Var`` and
    ``DerivativeVar``; with ``descend_into`` those of its sub-blocks too), in component
    order."""
    return [c for c in m.component_objects((pyo.Var, DerivativeVar), descend_into=descend_into)
            if c.is_indexed() and c.index_set() is m.s]


def model_states(m) -> set:
    """Names of the variables of a built model that its collocation treats as states: those
    with a derivative ``d<name>_ds`` (the controls among them with ``control_form = "state"``),
    and the controls made polynomials per element with continuous rates (the racecar's
    ``m.control_rate_continuity``)."""
    names = {c.local_name for c in mesh_components(m, descend_into=True)}
    states = {n for n in names if f"d{n}_ds" in names}
    if m.component("control_rate_continuity") is not None:
        states |= set(m.problem.vehicle_model.controls) & names
    return states


def check_same_sector(new, old, what: str = "interpolate_solution") -> None:
    """Refuse two models of different sectors (start, length), schemes or vehicle models.

    Raises
    ------
    ValueError
        One line naming the two values.
    """
    po, pn = old.problem, new.problem
    for name, a, b in (("sector start [m]", po.options.start, pn.options.start),
                       ("sector length [m]", po.sector_length, pn.sector_length)):
        if abs(float(a) - float(b)) > 1e-9 * max(1.0, abs(float(a))):
            raise ValueError(f"{what}: {name} {b!r} of the new model, {a!r} of the solved one: "
                             "expected the same sector")
    if str(pn.options.scheme).upper() != str(po.options.scheme).upper() \
            or po.vehicle_model.name != pn.vehicle_model.name:
        raise ValueError(f"{what}: scheme {pn.options.scheme!r}, model "
                         f"{pn.vehicle_model.name!r} of the new model, {po.options.scheme!r}, "
                         f"{po.vehicle_model.name!r} of the solved one: expected the same")


@dataclasses.dataclass(frozen=True)
class Solution:
    """The values of a solution over the sector, by variable, with its mesh and scheme.

    Attributes
    ----------
    s : ndarray (M,)
        The mesh points [m] from the sector start, increasing.
    breaks : ndarray (N+1,)
        The element boundaries [m], each one of ``s``.
    scheme : str
        pyomo.dae's collocation scheme (``LAGRANGE-RADAU`` or ``LAGRANGE-LEGENDRE``).
    values : dict
        ``{name: ndarray (M,)}``: each variable at the mesh points (NaN where it has none), in
        the order of the source's components.
    states : frozenset of str
        The names interpolated as states (module docstring).
    scalars : dict
        ``{name: float}``: the source's variables that are not indexed by the mesh (a free
        parameter at its optimum).
    """

    s: np.ndarray
    breaks: np.ndarray
    scheme: str = "LAGRANGE-RADAU"
    values: dict = dataclasses.field(default_factory=dict)
    states: frozenset = frozenset()
    scalars: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_model(cls, m, descend_into: bool = False) -> "Solution":
        """The variables of a built model indexed by its mesh (:func:`mesh_components`, named
        by their local names), at its points, with its element boundaries, scheme and states
        (:func:`model_states`)."""
        s = np.array(sorted(float(x) for x in m.s))
        values = {}
        for c in mesh_components(m, descend_into):
            values[c.local_name] = np.array([np.nan if c[x].value is None else float(c[x].value)
                                             for x in sorted(m.s)])
        return cls(s=s, breaks=np.array(sorted(float(x) for x in m.s.get_finite_elements())),
                   scheme=str(m.problem.options.scheme).upper(), values=values,
                   states=frozenset(model_states(m) & set(values)))

    @classmethod
    def from_arrays(cls, arrays: dict, breaks, scheme: str = "LAGRANGE-RADAU") -> "Solution":
        """The entries of a ``solution.npz`` (:func:`pyomo_lap.results.table.solution_arrays`:
        ``"s"`` the mesh points, ``"var:<name>"`` each variable): those with a value at every
        mesh point, and the single values as :attr:`scalars`; the states by
        :func:`state_names`; ``breaks`` snapped to the mesh points
        (:func:`pyomo_lap.ocp.collocation.snap_breaks`).

        Raises
        ------
        ValueError
            No ``"s"`` entry, or a boundary that is no mesh point.
        """
        if "s" not in arrays:
            raise ValueError("the solution's arrays have no 's' (the mesh points): expected "
                             "the entries of a solution.npz")
        s = np.asarray(arrays["s"], dtype=float)
        values = {k[4:]: np.asarray(v, dtype=float) for k, v in arrays.items()
                  if k.startswith("var:") and np.shape(v) == s.shape}
        scalars = {k[4:]: float(np.asarray(v).ravel()[0]) for k, v in arrays.items()
                   if k.startswith("var:") and np.size(v) == 1 and np.shape(v) != s.shape}
        states, _ = state_names(values)
        return cls(s=s, breaks=snap_breaks(s, breaks), scheme=str(scheme).upper(),
                   values=values, states=frozenset(states), scalars=scalars)

    @classmethod
    def from_table(cls, df, breaks=None, scheme: str = "LAGRANGE-RADAU",
                   states: Optional[Iterable[str]] = None) -> "Solution":
        """The numeric columns of a trajectory table's mesh rows
        (:func:`pyomo_lap.results.table.trajectory_dataframe`, or a results folder's rows read
        with ``read_trajectory(folder, mesh=True)``) over ``s_sector``.

        Parameters
        ----------
        df : DataFrame
            One row per mesh point, ``s_sector`` [m] increasing.
        breaks : array_like (N+1,), optional
            The element boundaries [m] (snapped to the rows); default from the table's
            ``element`` column (each element's last row).
        scheme : str
        states : iterable of str, optional
            The columns that are states (default: those with a column ``d<name>_ds``).

        Raises
        ------
        ValueError
            No ``s_sector``, rows that do not increase, no boundaries (neither given nor an
            ``element`` column), or rows that are not a mesh (elements with different numbers
            of points, as a table on a fixed step has).
        """
        s = mesh_nodes(df)
        if breaks is None:
            if "element" not in df.columns:
                raise ValueError("the trajectory has no column element: give the element "
                                 "boundaries (summary.json mesh.element_boundaries_m)")
            el = df["element"].to_numpy().astype(int)
            counts = np.bincount(el)[1:]
            if len(counts) == 0 or np.any(counts != counts[0]):
                raise ValueError("the trajectory's elements hold different numbers of rows: "
                                 "expected the mesh rows (read_trajectory(folder, mesh=True)), "
                                 "not rows on a fixed step")
            breaks = [s[0]] + [s[np.flatnonzero(el == j)[-1]] for j in range(1, el.max() + 1)]
        values = {c: df[c].to_numpy(dtype=float) for c in df.columns
                  if c not in ("s", "s_sector", "q1", "element")
                  and pd.api.types.is_float_dtype(df[c])}
        st = state_names(values)[0] if states is None else set(states) & set(values)
        return cls(s=s, breaks=snap_breaks(s, breaks), scheme=str(scheme).upper(),
                   values=values, states=frozenset(st))

    def at(self, points, names: Optional[Iterable[str]] = None, *,
           derivatives: str = "polynomial", boundary: str = "start") -> dict:
        """The solution's values at ``points`` by its collocation polynomials (module
        docstring).

        Parameters
        ----------
        points : (Q,) array_like
            Positions [m] from the sector start, within the mesh.
        names : iterable of str, optional
            The variables wanted, in this order (default: all); a name the solution does not
            have is left out, but for the derivative variable of a state with
            ``derivatives="polynomial"``. The states among them are evaluated in one product,
            the others in another, each in the order given (a product's rounding depends on
            the columns it holds).
        derivatives : {'polynomial', 'values'}
            :data:`DERIVATIVES`: with ``"polynomial"`` the derivative variable ``d<X>_ds`` of a
            state ``X`` among ``names`` is the derivative of ``X``'s polynomial.
        boundary : {'start', 'end'}
            The element of a point on an inner element boundary, for the derivatives
            (:data:`pyomo_lap.ocp.collocation.BOUNDARY_SIDES`).

        Returns
        -------
        dict
            ``{name: ndarray (Q,)}`` for each name the solution has.

        Raises
        ------
        ValueError
            A bad ``derivatives``, or :func:`pyomo_lap.ocp.collocation.collocation_interpolate`'s
            errors (points outside the mesh ...).
        """
        if derivatives not in DERIVATIVES:
            raise ValueError(f"derivatives = {derivatives!r}: expected one of "
                             f"{', '.join(DERIVATIVES)}")
        q = np.asarray(points, dtype=float)
        names = list(self.values) if names is None else list(names)
        st = [n for n in names if n in self.states and n in self.values]
        moved = {f"d{n}_ds" for n in st if f"d{n}_ds" in names} if derivatives == "polynomial" \
            else set()
        rest = [n for n in names if n not in self.states and n not in moved and n in self.values]
        out = {}
        if st:
            val, der = collocation_interpolate(self.breaks, self.s,
                                               np.column_stack([self.values[n] for n in st]), q,
                                               kind="state", scheme=self.scheme, derivative=True,
                                               boundary=boundary)
            for k, n in enumerate(st):
                out[n] = val[:, k]
                if f"d{n}_ds" in moved:
                    out[f"d{n}_ds"] = der[:, k]
        if rest:
            val = collocation_interpolate(self.breaks, self.s,
                                          np.column_stack([self.values[n] for n in rest]), q,
                                          kind="algebraic", scheme=self.scheme)
            out.update({n: val[:, k] for k, n in enumerate(rest)})
        return {n: out[n] for n in names if n in out}


def set_within_bounds(pairs) -> int:
    """Write values into variables, each clipped to its variable's bounds (an interpolated start
    may overshoot them between its points); fixed variables and values that are not finite
    numbers are left alone. What every move of a solution onto a model writes with.

    Parameters
    ----------
    pairs : iterable of (VarData, float)

    Returns
    -------
    int
        The variables set.
    """
    count = 0
    for vd, v in pairs:
        v = float(v)
        if vd.fixed or not math.isfinite(v):
            continue
        vd.set_value(within_bounds(vd, v), skip_validation=True)
        count += 1
    return count


def solve_loop_at(car, model, values: dict, track: np.ndarray) -> tuple:
    """The algebraic loop of a vehicle model solved at many points (the loads and the in-plane
    tyre forces, :meth:`pyomo_lap.ocp.point_functions.CarFunctions.solve_many`), from the
    algebraic variables of ``values`` as the guess.

    Parameters
    ----------
    car : CarFunctions
    model : VehicleModel
        Its ``states``, ``rates``, ``controls`` and ``algebraics`` name the entries of ``values``.
    values : dict
        ``{name: (n,) array}`` with every state, rate, control and algebraic variable.
    track : ndarray (n, 15)
        The record's track inputs at the points
        (:func:`pyomo_lap.ocp.point_functions.track_vectors`).

    Returns
    -------
    (z dict {algebraic: (n,)}, qdd (n, n_q), ok (n,) bool)
        ``z`` the solution where ``ok``, the guess elsewhere (the loop did not converge, or a
        wheel lifts); ``qdd`` the joint accelerations there.
    """
    n = len(track)
    cols = lambda names: (np.column_stack([values[k] for k in names]) if names  # noqa: E731
                          else np.zeros((n, 0)))
    q = np.hstack([np.zeros((n, 1)), cols(model.states)])
    qd, u = cols(model.rates), cols(model.controls)
    z0 = cols(model.algebraics)
    z, qdd, ok = car.solve_many(track, q, qd, u, z0)
    z = np.where(ok[:, None], z, z0)
    return {k: z[:, i] for i, k in enumerate(model.algebraics)}, qdd, ok


def transfer_solution(m, sol: Solution, *, derivatives: str = "polynomial",
                      boundary: str = "start", solve_loop: bool = False, car=None,
                      names: Optional[Iterable[str]] = None) -> dict:
    """Set the variables of a built model from a solution of the same sector on any mesh
    (module docstring).

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        Built by :func:`pyomo_lap.ocp.build.build_model`.
    sol : Solution
        Over the same sector (its positions are ``m``'s ``s``).
    derivatives, boundary
        As :meth:`Solution.at`.
    solve_loop : bool
        Solve the algebraic loop at every point of ``m`` from the interpolated values
        (:func:`solve_loop_at`; a model whose rows are recorded); where it does not converge
        the interpolated values stay.
    car : CarFunctions, optional
        For ``solve_loop`` (default: the model's record at the parameters of the car it was
        built for).
    names : iterable of str, optional
        The variables moved, in this order (default: every variable of ``m`` indexed by its
        mesh, top block only, that ``sol`` has, in ``sol``'s order).

    Returns
    -------
    dict
        ``{"variables": n}`` (values set) and, with ``solve_loop``, ``"points"`` and
        ``"algebraic_failures"`` (points where the loop did not converge).

    Raises
    ------
    ValueError
        ``solve_loop`` for a model whose rows are not recorded, or :meth:`Solution.at`'s
        errors.
    """
    forget_multipliers(m)
    here = {c.local_name: c for c in mesh_components(m)}
    if names is None:
        names = list(sol.values)
        if derivatives == "polynomial":     # a state's derivative from its polynomial
            names += [f"d{n}_ds" for n in sol.values if n in sol.states
                      and f"d{n}_ds" not in sol.values]
    names = [n for n in names if n in here]
    points = np.array(sorted(float(x) for x in m.s))
    values = sol.at(points, names, derivatives=derivatives, boundary=boundary)
    sigma = sorted(m.s)
    for n, vals in values.items():          # within the bounds before the loop sees them
        lo = np.array([-np.inf if here[n][x].lb is None else here[n][x].lb for x in sigma])
        up = np.array([np.inf if here[n][x].ub is None else here[n][x].ub for x in sigma])
        values[n] = np.where(np.isfinite(vals), np.minimum(np.maximum(vals, lo), up), vals)
    out = {}
    if solve_loop:
        rec, vm = record_of(m), m.problem.vehicle_model
        if rec is None:
            raise ValueError(f"solve_loop: the model {vm.name!r} records no rows (no "
                             "algebraic loop to solve)")
        car = car or CarFunctions(rec, m.vehicle.built_for, vm)
        z, _, ok = solve_loop_at(car, vm, values, track_vectors(m.problem.track_points))
        values.update(z)
        out.update(points=len(points), algebraic_failures=int((~ok).sum()))
    out["variables"] = sum(set_within_bounds(zip((here[n][x] for x in sigma), vals))
                           for n, vals in values.items())
    return out
