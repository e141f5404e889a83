"""The job option ``refine_mesh``: a finer mesh where the collocation defects or the speed
consistency of a solution are large, solved again from the solution (:func:`_refine_job`,
:data:`MESH_REFINEMENTS` rounds at most).
"""
from __future__ import annotations

import time

from .config import WARM_START_MU_INIT
from .results import model_size

__all__ = ["MESH_REFINEMENTS"]


MESH_REFINEMENTS = 2
"""Most rounds of the job option ``refine_mesh`` (:func:`_refine_job`): a refined solution
moves, and a throttle applied within one element elsewhere can take the defects above the
warning again (the Formula One car at Barcelona, issue 33: 0.163 before, 0.165 at another
element after one round)."""


def _refine_job(job) -> None:
    """The job option ``refine_mesh``: a full model solved to optimality whose collocation
    defects or speed consistency (:func:`pyomo_lap.post.quality.speed_consistency`) are above
    the self-check's warning is solved again on a mesh refined where they are
    (:func:`pyomo_lap.post.defects.refine_mesh`: elements above half the warning split; the
    speed error of a step falls with its length, so an element is split in as many parts as
    its error is multiples of that), from its solution, up to :data:`MESH_REFINEMENTS` times;
    each refined model replaces ``job.m``, its report ``job.rep``, if it is optimal (else the
    last optimal one stands). ``job.refinement`` says what was done (``rounds``: each one)."""
    cfg, m, rep = job.cfg, job.m, job.rep
    job.refinement = None
    opts = m.problem.options
    given = (opts.element_boundaries is not None or m.problem.mesh == "uniform"
             or cfg.warm_start_from is not None or cfg.free or cfg.sensitivities
             or opts.lift)
    if not (cfg.refine_mesh and rep.ok and m.problem.vehicle_model.name == "full") or given:
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


def _refine_once(job):
    """One round of :func:`_refine_job` on ``job.m``: None when its defects and speed
    consistency are within the warnings, else what was done (and ``job.m``, ``job.rep``
    replaced by the refined model's if it is optimal)."""
    import numpy as np
    from ..post.defects import collocation_defects, refine_mesh
    from ..post.verdict import DEFECT_MAX, DEFECT_P95, SPEED_CONSISTENCY
    m = job.m
    t0 = time.perf_counter()
    speed_split, speed_max = _speed_consistency_split(m, job)     # keeps job.result_df
    opts = m.problem.options
    d = collocation_defects(job.result_df[1], m.problem.track, m.vehicle.built_for, ncp=opts.ncp,
                            scheme=opts.scheme, start=opts.start, node_residuals=False,
                            interpolation="state" if opts.control_form == "state" else "polynomial")
    eps = d.elements["eps"].to_numpy(float)
    if not np.all(np.isfinite(eps)):
        return None
    defects_high = eps.max() > DEFECT_MAX[0] or np.percentile(eps, 95) > DEFECT_P95[0]
    if not (defects_high or speed_split):
        job.result_defects = (m, d)  # of job.m as it stands: the self-check takes them
        return None
    why = []
    if defects_high:
        why.append(f"the collocation defects reach {eps.max():.3g} (warning above {DEFECT_MAX[0]:g})")
    if speed_split:
        why.append(f"the speed consistency reaches {speed_max:.3g} % of the top speed (warning "
                   f"above {SPEED_CONSISTENCY[0]:g} %)")
    job.echo(f"  {' and '.join(why)}: refining the mesh where they are large and solving again ...")
    options = {"mu_init": WARM_START_MU_INIT, **(job.solver_options or {})}
    res = refine_mesh(m, tol=0.5 * DEFECT_MAX[0], defects=d, max_split=3, solver=job.cfg.solver,
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


def _speed_consistency_split(m, job=None) -> tuple:
    """The elements of a solved full model whose speed consistency
    (:func:`pyomo_lap.post.quality.speed_step_errors`) is above half the self-check's warning
    (:data:`pyomo_lap.post.verdict.SPEED_CONSISTENCY`), ``{element: parts}`` (the error of a
    step falls with its length: as many parts as the error is multiples of that half), and the
    largest error [% of the car's top speed]. With ``job``, the table is kept as
    ``job.result_df`` (the channels of ``job.m``, if it is not refined)."""
    import numpy as np
    from ..ocp.common import vehicle_of_model
    from ..post.quality import _distinct, channel_scales, speed_step_errors
    from ..post.results import trajectory_dataframe
    from ..post.verdict import SPEED_CONSISTENCY
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
