"""The job option ``refine_mesh``: a finer mesh where the collocation defects or the speed
consistency of a solution are large, solved again from the solution (:func:`_refine_job`,
:data:`MESH_REFINEMENTS` rounds at most).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np
import pyomo.environ as pyo

from ..ocp.build import build_model
from ..ocp.common import vehicle_of_model
from ..ocp.point_functions import CarFunctions, record_of
from ..ocp.transfer import Solution, transfer_solution
from ..results.table import trajectory_dataframe
from ..solvers.solve import solve_model
from ..solvers.warm_start import WARM_START_IPOPT_OPTIONS
from ..verify.defects import DefectReport, collocation_defects
from ..verify.quality import _distinct, channel_scales, speed_step_errors
from ..verify.verdict import DEFECT_MAX, DEFECT_P95, SPEED_CONSISTENCY
from .config import WARM_START_MU_INIT
from .results import model_size
from .state import Job

__all__ = ["MESH_REFINEMENTS", "refine_mesh", "refinable", "RefinementResult"]


MESH_REFINEMENTS = 2
"""Most rounds of the job option ``refine_mesh`` (:func:`_refine_job`): a refined solution
moves, and a throttle applied within one element elsewhere can take the defects above the
warning again (the Formula One car at Barcelona, issue 33: 0.163 before, 0.165 at another
element after one round)."""


def _refine_job(job: Job) -> None:
    """The job option ``refine_mesh``: a model solved to optimality whose collocation
    defects or speed consistency (:func:`pyomo_lap.verify.quality.speed_consistency`) are above
    the self-check's warning is solved again on a mesh refined where they are
    (:func:`refine_mesh`: elements above half the warning that is passed split, the largest
    defect's or, when only the 95th percentile is above its own, that one's; the
    speed error of a step falls with its length, so an element is split in as many parts as
    its error is multiples of that), from its solution, up to :data:`MESH_REFINEMENTS` times;
    each refined model replaces ``job.m``, its report ``job.rep``, if it is optimal (else the
    last optimal one stands). ``job.refinement`` says what was done (``rounds``: each one).
    Every vehicle model whose results are checked (:func:`refinable`) is refined."""
    cfg, m, rep = job.cfg, job.m, job.rep
    job.refinement = None
    opts = m.problem.options
    given = (opts.element_boundaries is not None or m.problem.mesh == "uniform"
             or cfg.warm_start_from is not None or cfg.free or cfg.sensitivities
             or opts.lift)
    if not (cfg.refine_mesh and rep.ok and refinable(m.problem.vehicle_model)) or given:
        return
    rounds = []
    for _ in range(MESH_REFINEMENTS):
        r = _refine_once(job)
        if r is None:
            break
        rounds.append(r)
        if not r["optimal"]:
            break
    if rounds:
        job.refinement = {"elements_split": sum(r["elements_split"] for r in rounds),
                          "nfe_before": rounds[0]["nfe_before"],
                          "nfe_after": rounds[-1]["nfe_after"] if rounds[-1]["optimal"]
                          else rounds[-1]["nfe_before"],
                          "defect_max_before": rounds[0]["defect_max_before"],
                          "lap_time_before_s": rounds[0]["lap_time_before_s"],
                          "iterations": sum(r["iterations"] or 0 for r in rounds),
                          "optimal": all(r["optimal"] for r in rounds),
                          "time_s": sum(r["time_s"] for r in rounds), "rounds": rounds}


def refinable(vm) -> bool:
    """Whether :func:`refine_mesh` serves the vehicle model ``vm`` (a ``VehicleModel``): its
    solved model gives its channel table (``trajectory``) and its equations as the checks take
    them (``dynamics``), the collocation defects the refinement measures; the checks of a
    result need the same two."""
    return vm.trajectory is not None and vm.dynamics is not None


def _refine_once(job: Job):
    """One round of :func:`_refine_job` on ``job.m``: None when its defects and speed
    consistency are within the warnings, else what was done (and ``job.m``, ``job.rep``
    replaced by the refined model's if it is optimal)."""
    m = job.m
    t0 = time.perf_counter()
    speed_split, speed_max = _speed_consistency_split(m, job)     # keeps job.result_df
    opts = m.problem.options
    d = collocation_defects(job.result_df[1], m.problem.track, m.vehicle.built_for, ncp=opts.ncp,
                            scheme=opts.scheme, start=opts.start, node_residuals=False,
                            interpolation="state" if opts.control_form == "state" else "polynomial",
                            model=m.problem.vehicle_model)
    eps = d.elements["eps"].to_numpy(float)
    if not np.all(np.isfinite(eps)):
        return None
    max_high, p95 = eps.max() > DEFECT_MAX[0], float(np.percentile(eps, 95))
    p95_high = p95 > DEFECT_P95[0]
    # elements above half the warning that is passed split: the largest defect's, else the
    # 95th percentile's (the largest within its warning: the elements that make the percentile)
    tol = 0.5 * (DEFECT_P95[0] if p95_high and not max_high else DEFECT_MAX[0])
    if not (max_high or p95_high or speed_split):
        job.result_defects = (m, d)  # of job.m as it stands: the self-check takes them
        return None
    why = []
    if max_high:
        why.append(f"the collocation defects reach {eps.max():.3g} (warning above {DEFECT_MAX[0]:g})")
    if p95_high:
        why.append(f"the collocation defects' 95th percentile is {p95:.3g} (warning above "
                   f"{DEFECT_P95[0]:g})")
    if speed_split:
        why.append(f"the speed consistency reaches {speed_max:.3g} % of the top speed (warning "
                   f"above {SPEED_CONSISTENCY[0]:g} %)")
    job.echo(f"  {' and '.join(why)}: refining the mesh where they are large and solving again ...")
    options = {"mu_init": WARM_START_MU_INIT, **(job.solver_options or {})}
    res = refine_mesh(m, tol=tol, defects=d, max_split=3, solver=job.cfg.solver,
                      solver_options=options, also_split=speed_split)
    new_rep = res.solve_report
    out = {"elements_split": len(res.split), "nfe_before": len(eps),
           "nfe_after": len(res.boundaries) - 1, "defect_max_before": float(eps.max()),
           "speed_consistency_before_pct": float(speed_max),
           "lap_time_before_s": res.lap_time_before,
           "iterations": None if new_rep is None else new_rep.iterations,
           "optimal": bool(new_rep is not None and new_rep.ok),
           "time_s": time.perf_counter() - t0}
    if out["optimal"]:
        job.echo(f"  {len(res.split)} elements split ({len(eps)} -> {len(res.boundaries) - 1}); "
                 f"{new_rep.termination_condition} after {new_rep.iterations} iterations, "
                 f"{new_rep.solve_time_s:.1f} s")
        job.m, job.rep = res.model, new_rep
        job.size = model_size(res.model)
    else:
        job.echo("  the solve on the refined mesh did not end optimal: the result before it stands")
    return out


def _speed_consistency_split(m, job: Optional[Job] = None) -> tuple:
    """The elements of a solved model whose speed consistency
    (:func:`pyomo_lap.verify.quality.speed_step_errors`) is above half the self-check's warning
    (:data:`pyomo_lap.verify.verdict.SPEED_CONSISTENCY`), ``{element: parts}`` (the error of a
    step falls with its length: as many parts as the error is multiples of that half), and the
    largest error [% of the car's top speed]. With ``job``, the table is kept as
    ``job.result_df`` (the channels of ``job.m``, if it is not refined)."""
    df = trajectory_dataframe(m)
    if job is not None:
        job.result_df = (m, df)
    need = {"t", "speed", "v_3x", "v_3y", "a_x", "a_y", "element"}
    if not need <= set(df.columns) or len(df) < 3:
        return {}, 0.0
    v_ref = channel_scales(vehicle_of_model(m), df).get("speed")
    if not v_ref:
        return {}, 0.0
    keep = _distinct(df["s_sector" if "s_sector" in df.columns else "s"].to_numpy(float))
    _, err = speed_step_errors(df)
    rel = 100.0 * np.abs(err) / v_ref                   # [% of the top speed]
    element = df["element"].to_numpy(int)[keep][1:]     # a step lies in its end point's element
    tol = 0.5 * SPEED_CONSISTENCY[0]
    split = {}
    for j, r in zip(element, rel):
        if r > tol:
            split[int(j)] = max(split.get(int(j), 1), int(min(3, max(2, np.ceil(r / tol)))))
    return (split if rel.max() > SPEED_CONSISTENCY[0] else {}), float(rel.max())


@dataclasses.dataclass
class RefinementResult:
    """Result of :func:`refine_mesh`.

    Attributes
    ----------
    model : pyomo model
        The model on the refined mesh (solved when ``solve=True``).
    boundaries : ndarray
        Its element boundaries in the sector [m].
    split : dict
        Element (1-based, old mesh) -> number of parts it was split into.
    before : DefectReport
    after : DefectReport or None
    lap_time_before, lap_time_after : float
        Sector times [s].
    solve_report : SolveReport or None
    """

    model: object
    boundaries: np.ndarray
    split: dict
    before: DefectReport
    after: Optional[DefectReport]
    lap_time_before: float
    lap_time_after: float
    solve_report: object

    def summary(self) -> dict:
        """Headline numbers before and after (JSON-friendly)."""
        out = {
            "n_elements_before": int(len(self.before.elements)),
            "n_elements_after": int(len(self.boundaries) - 1),
            "elements_split": len(self.split),
            "eps_max_before": float(self.before.elements["eps"].max()),
            "lap_time_before_s": self.lap_time_before,
            "lap_time_after_s": self.lap_time_after,
        }
        if self.after is not None:
            out["eps_max_after"] = float(self.after.elements["eps"].max())
        if self.solve_report is not None:
            r = self.solve_report
            out.update(solve_ok=r.ok, iterations=r.iterations, solve_time_s=r.solve_time_s,
                       termination=r.termination_condition)
        return out


def _split_elements(elements, tol: float, ncp: int, max_split: int, also_split: dict,
                    length: float) -> tuple:
    """``(boundaries (n + 1,) [m], {element: parts})`` of the mesh :func:`refine_mesh` makes
    from a defect report's ``elements`` (its rule on ``tol``, ``ncp``, ``max_split`` and
    ``also_split``); the last boundary is the sector's ``length`` [m]."""
    bounds = [0.0]
    split = {}
    for row in elements.itertuples():
        k = 1
        if np.isfinite(row.eps) and row.eps > tol:
            k = int(min(max_split, max(2, np.ceil((row.eps / tol) ** (1.0 / (ncp + 1))))))
        k = int(min(max_split, max(k, also_split.get(int(row.element), 1))))
        if k > 1:
            split[int(row.element)] = k
        for i in range(1, k + 1):
            bounds.append(row.s_start + (row.s_end - row.s_start) * i / k)
    bounds = np.array(bounds)
    bounds[-1] = length
    return bounds, split


def refine_mesh(m, tol: Optional[float] = None, *, defects: Optional[DefectReport] = None,
                max_split: int = 4, solve: bool = True, solver: str = "ipopt",
                solver_options: Optional[dict] = None, tee: bool = False,
                also_split: Optional[dict] = None) -> RefinementResult:
    r"""Re-solve on a mesh refined where the dynamics residual is large (warm-started).

    Each element with scaled error :math:`\varepsilon_j > tol` is split into
    :math:`k_j = \min(\text{max\_split}, \max(2, \lceil (\varepsilon_j/tol)^{1/(n_{cp}+1)}\rceil))`
    equal parts (the local error of a degree-:math:`n_{cp}` polynomial falls as
    :math:`h^{n_{cp}+1}`). The new model has the same options; it is initialized from the
    solved one's collocation polynomials (:func:`pyomo_lap.ocp.transfer.transfer_solution`:
    states and their derivative variables from the old polynomials, so that on a split element
    the new collocation equations hold exactly and the dynamics residual at the new points is
    the old solution's defect, a derivative on an old element boundary from the element that
    ends there; controls within their bounds; the algebraic loop solved at every new point)
    and solved with :data:`WARM_START_IPOPT_OPTIONS`. A model without algebraic variables
    (``VehicleModel.algebraics`` empty: the multibody car, the racecar) has no loop to solve.

    Parameters
    ----------
    m : pyomo model
        A solved model (:func:`pyomo_lap.ocp.build.build_model`) of a vehicle model that
        :func:`refinable` serves.
    tol : float, optional
        Threshold on the scaled error (default: 10 x the median over the elements, i.e. the
        outliers).
    defects : DefectReport, optional
        Reuse a report of ``m`` (else computed).
    max_split : int
        Most parts an element is split into.
    solve : bool
        False: build and initialize only.
    solver, solver_options, tee : passed to :func:`pyomo_lap.solvers.solve.solve_model`; for IPOPT
        :data:`WARM_START_IPOPT_OPTIONS` apply unless ``solver_options`` overrides them.
    also_split : dict, optional
        Elements split for another reason, ``{element (1..N): parts}`` (e.g. the speed
        consistency of the channels, ``pyomo_lap.api``): an element is split into the larger of
        these parts and those of its error (at most ``max_split``).

    Returns
    -------
    RefinementResult

    Raises
    ------
    ValueError
        ``tol`` not positive, ``max_split < 2``, or a vehicle model that :func:`refinable`
        does not serve.
    """
    if max_split < 2:
        raise ValueError(f"max_split = {max_split!r}: expected >= 2")
    vm = m.problem.vehicle_model
    if not refinable(vm):
        raise ValueError(f"model {vm.name!r}: its VehicleModel has no channel table or no "
                         "dynamics (trajectory, dynamics): its defects cannot be measured")
    also_split = dict(also_split or {})
    bad = {j: k for j, k in also_split.items() if not (isinstance(k, (int, np.integer)) and k >= 1)}
    if bad:
        raise ValueError(f"also_split = {bad!r}: expected element -> parts (an integer >= 1)")
    before = defects or collocation_defects(m, m.problem.track, m.vehicle.built_for)
    eps = before.elements["eps"].to_numpy()
    if tol is None:
        tol = 10.0 * float(np.median(eps))
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol = {tol!r}: expected a positive number")
    bounds, split = _split_elements(before.elements, tol, m.problem.options.ncp, max_split,
                                    also_split, m.problem.sector_length)
    opts = {k: m.problem.options[k] for k in m.problem.options}
    opts["element_boundaries"] = tuple(bounds)
    new = build_model(m.problem.track, m.vehicle.built_for, **opts)
    loop = bool(vm.algebraics)
    transfer_solution(new, Solution.from_model(m), boundary="end", solve_loop=loop,
                      car=CarFunctions(record_of(m), m.vehicle.built_for, vm) if loop else None)
    lap_before = float(pyo.value(m.lap_time))
    rep, after, lap_after = None, None, float("nan")
    if solve:
        opts = dict(WARM_START_IPOPT_OPTIONS) if solver == "ipopt" else {}
        opts.update(solver_options or {})
        rep = solve_model(new, solver=solver, options=opts, tee=tee)
        lap_after = float(pyo.value(new.lap_time))
        if rep.ok:
            after = collocation_defects(new, new.problem.track, new.vehicle.built_for)
    return RefinementResult(model=new, boundaries=bounds, split=split, before=before, after=after,
                            lap_time_before=lap_before, lap_time_after=lap_after,
                            solve_report=rep)
