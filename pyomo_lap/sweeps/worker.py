"""One case of a sweep in a Dask worker process (:func:`run_case`): its job, the solve
(:func:`pyomo_lap.api.solve_sector`, the worker's last model reused), its row written
atomically.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Optional

import pandas as pd

from ..api import SolveFailedError, job_mesh, solve_sector
from ..folders.writer import ResultsWriter
from ..solvers.solve import DEFAULT_SOLVER
from .cases import _base_vehicles, _case_vehicle, _schema_message

__all__ = ["run_case"]

_WORKER_MODEL: dict = {}
"""The model of the worker's last case (``model_cache`` of :func:`pyomo_lap.api.solve_sector`):
the next case of the same job and a car of the same structure puts its car into it instead of
building a model (the model's car numbers are parameters; the rows, bounds, entry speed and
scaling are those a new build gives, ``tests/test_set_vehicle.py``)."""


# ---------------------------------------------------------------------------------------
# one case (runs in a worker process)
# ---------------------------------------------------------------------------------------
def _write_row(folder: Path, row: dict) -> Path:
    """``rows/<id>.parquet``, whole (:meth:`pyomo_lap.folders.writer.ResultsWriter.write_file`:
    a temporary file of a unique name, flushed, renamed; never through a link): a worker
    writes it while the sweep holds the folder's lock."""
    final = Path(folder) / "rows" / f"{row['case_id']}.parquet"
    return ResultsWriter.write_file(final, lambda tmp: pd.DataFrame([row]).to_parquet(
        tmp, index=False))


def _row(case: dict, status: str, reason: str = "") -> dict:
    row = {"case": case["index"], "case_id": case["id"], "track": str(case["track"]),
           "vehicle": str(case["vehicle"]), **case["params"], "status": status,
           "reason": reason, "lap_time_s": float("nan"),
           "warm_start_from": case.get("warm_start_from", -1)}
    return row


def run_case(case: dict, job: dict, folder: str, crash_once: bool = False,
             eval_threads: Optional[int] = None, warm_from: Optional[dict] = None) -> dict:
    """Solve one case and write its results folder and its row; returns the row. Every
    failure of the case (schema, solver, track, anything raised) is a row with its reason.

    ``eval_threads``: threads of the compiled per-point functions (``lap_ipopt``'s solver
    option of that name, unless the job sets it): the cores of this machine shared among the
    sweep's worker processes on it (two workers on two cores: one each; two threads each
    made every case 20 % slower). It does not change the results, nor the case's id.

    ``warm_from``: the solved case (its ``index`` and ``id``) to start from (the job option
    ``warm_start_from``, its results folder in this sweep); None: the usual initial guess.

    ``crash_once`` (a test hook): the first attempt of the case ends the worker process
    (``os._exit``) before solving, as a killed worker would."""
    job = _case_job(case, job)
    if warm_from is not None:
        job = {**job, "warm_start_from": str(Path(folder) / "cases" / warm_from["id"])}
        case = {**case, "warm_start_from": warm_from["index"]}
    if eval_threads and job.get("solver", DEFAULT_SOLVER) == DEFAULT_SOLVER:
        opts = dict(job.get("solver_options") or {})
        if "eval_threads" not in opts:
            job = {**job, "solver_options": {**opts, "eval_threads": int(eval_threads)}}
    with _ONE_CASE_AT_A_TIME:
        return _run_case(case, job, folder, crash_once)


def _shared_meshes(cases: list, job: dict) -> dict:
    """The adaptive mesh of each (track, base vehicle) of the cases, placed for the base car
    (:func:`pyomo_lap.api.job_mesh`): every case of a sweep on that track is solved on it, so
    that the lap-time differences between cases are the parameters', not the mesh's (and the
    workers keep their model from case to case). ``{"track|vehicle": boundaries}``; empty when
    the job's mesh is not adaptive."""
    out = {}
    for c in cases:
        key = f"{c['track']}|{c['vehicle']}"
        if key in out:
            continue
        try:
            mesh = job_mesh({**job, "track": c["track"], "vehicle": c["vehicle"]})
        except Exception:   # noqa: BLE001 - the case reports its own error
            mesh = None
        if mesh is not None:
            out[key] = mesh
    return out


def _case_job(case: dict, job: dict) -> dict:
    """The job of one case: the shared mesh of its track and base car (``job["_meshes"]``,
    :func:`_shared_meshes`) as the OCP option ``element_boundaries``."""
    meshes = job.get("_meshes")
    job = {k: v for k, v in job.items() if k != "_meshes"}
    mesh = (meshes or {}).get(f"{case['track']}|{case['vehicle']}")
    if mesh is not None:
        job["ocp_options"] = {**(job.get("ocp_options") or {}), "element_boundaries": mesh}
    return job


_ONE_CASE_AT_A_TIME = threading.Lock()
"""A worker process with several threads runs one case at a time (a solve is not
thread-safe, and uses the process's cores itself)."""


def _run_case(case: dict, job: dict, folder: str, crash_once: bool) -> dict:
    folder = Path(folder)
    if crash_once:
        marker = folder / "rows" / f".{case['id']}.crashed"
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(str(os.getpid()))
            os._exit(17)
    t0 = time.perf_counter()
    row = None
    summary = None
    try:
        base = _base_vehicles([case])[case["vehicle"]]
        try:
            p = _case_vehicle(base, case["params"])
        except ValueError as exc:
            row = _row(case, "invalid", _schema_message(exc))
        if row is None:
            vehicle = case["vehicle"] if not case["params"] else p
            _, rep, _, summary = solve_sector(
                {**job, "track": case["track"], "vehicle": vehicle,
                 "out_dir": folder / "cases" / case["id"], "tee": False},
                echo=lambda *_: None, progress=lambda *_: None, model_cache=_WORKER_MODEL)
            row = _row(case, "solved")
    except SolveFailedError as exc:
        row = _row(case, "failed", str(exc))
        rep = exc.report
        if exc.partial_dir is not None:     # the last iterate, marked "partial": true
            row["results"] = os.path.relpath(exc.partial_dir, folder)
        if rep is not None:
            row.update(termination_condition=str(rep.termination_condition),
                       iterations=rep.iterations)
    except Exception as exc:  # noqa: BLE001 - a case's failure is a row, never the sweep's end
        row = _row(case, "error", f"{type(exc).__name__}: {exc}")
    if summary is not None:
        row.update(lap_time_s=summary.lap_time_s,
                   termination_condition=str(summary.termination_condition),
                   iterations=summary.iterations, solve_time_s=summary.solve_time_s,
                   warm_start_failed=bool(summary.warm_start_failed),
                   model_reused=bool(summary.model_reused),
                   build_time_s=summary.build_time_s,
                   n_variables=summary.n_variables, n_constraints=summary.n_constraints)
        for s in summary.sectors or []:
            row[f"sector_{s['sector']}_s"] = s["time_s"]
        row["results"] = f"cases/{case['id']}"
    row["wall_time_s"] = time.perf_counter() - t0
    row["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    _write_row(folder, row)
    return row
