"""A sweep's run (:func:`sweep`, ``pyomo-lap sweep``): the sweep folder, the Dask client, the
order of the cases and their warm starts, the table and plots at the end; the cases'
specification is :mod:`pyomo_lap.sweeps.cases`, one case in a worker
:mod:`pyomo_lap.sweeps.worker` (the package's docstring describes a sweep).
"""
from __future__ import annotations

import json
import logging
import math
import os
import socket
import sys
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urlparse

import pandas as pd
from pyomo.common.dependencies import attempt_import

from .. import api  # noqa: F401  (imported before the local cluster forks its workers)
from ..api import job_model, job_options, prefetch_options
from ..folders.json_file import read_json
from ..folders.links import is_link
from ..folders.writer import ResultsWriter
from ..ocp.build import OCP_CONFIG, vehicle_model
from ..plots.sweep import sweep_plot_names, sweep_plots
from ..results.table import _XLSX_OPTIONS
from ..solvers.lap import solver as _lap_solver  # noqa: F401  (registers lap_ipopt)
from ..solvers.lap.compiled import point_functions
from ..util.casadi_compile import find_compiler
from ..vehicle.schema import SECTIONS, VehicleParameters
from .cases import (
    _NOT_SWEPT,
    AXES,
    STATUSES,
    SweepSpecError,
    _base_vehicles,
    _case_vehicle,
    _jsonable,
    _where,
    check_cases,
    parse_set,
    read_cases_csv,
    resolve_parameter,
    sweep_cases,
)
from .worker import _row, _shared_meshes, _write_row, run_case

distributed, distributed_available = attempt_import("distributed")
dask, dask_available = attempt_import("dask")

__all__ = ["sweep", "read_rows", "compile_ahead"]


# ---------------------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------------------
def read_rows(folder) -> pd.DataFrame:
    """The rows written so far in a sweep folder (``rows/*.parquet``), ordered by case."""
    files = sorted(f for f in (Path(folder) / "rows").glob("*.parquet")
                   if not f.name.startswith("."))        # a writer's temporary file: not a row
    if not files:
        return pd.DataFrame()
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    return df.sort_values("case").reset_index(drop=True)


def _job(job: dict) -> dict:
    """The job's options as the cases get them (checked, JSON-ready, without what a sweep
    sets per case)."""
    try:
        cfg = job_options({k: v for k, v in job.items() if k not in ("track", "vehicle")})
    except ValueError as exc:
        raise SweepSpecError(str(exc)) from None
    return {k: _jsonable(v) for k, v in cfg.value().items() if k not in _NOT_SWEPT}


def _prepare_folder(out: Path, resume: bool) -> None:
    """The sweep's own checks of its folder before anything runs (a link, a file, an earlier
    sweep without ``--resume``, a folder that is no sweep's); the writer's follow when it is
    claimed (:class:`pyomo_lap.folders.writer.ResultsWriter`)."""
    if is_link(out):
        raise SweepSpecError(f"sweep folder {str(out)!r} is a symbolic link (to "
                             f"{os.readlink(out)}); pyomo_lap never follows a link out of a "
                             "folder it writes: give the real path or remove the link (only the "
                             "link; nothing was touched)")
    if out.exists() and not out.is_dir():
        raise SweepSpecError(f"sweep folder {str(out)!r} is a file; choose another --out")
    if resume and out.is_dir() and any(out.iterdir()) and not (out / "sweep.json").exists():
        raise SweepSpecError(f"--resume: {str(out)!r} is not a sweep folder (no sweep.json); "
                             "choose another --out (nothing was touched)")
    if out.is_dir() and any(out.iterdir()) and not resume:
        if (out / "sweep.json").exists():
            raise SweepSpecError(f"sweep folder {str(out)!r} holds an earlier sweep: --resume "
                                 "to finish it (finished cases are kept), or choose another --out")
        raise SweepSpecError(f"sweep folder {str(out)!r} exists and is not a sweep folder; "
                             "choose another --out (nothing was touched)")


def _shown_value(value, width: int = 80) -> str:
    """A value of sweep.json for a message: its JSON, cut at ``width`` characters."""
    text = "(absent)" if value is _ABSENT else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= width else text[:width - 3] + "..."


_ABSENT = object()


def _resumed_spec(out: Path, spec: dict) -> str:
    """Check a resumed sweep's specification against the folder's ``sweep.json``, before
    anything runs: the job's options, the base track and vehicle, the cases file and the swept
    parameters must be the same, and every earlier case must still be a case (the sweep may
    grow: new values, new rows of the cases file). Returns '' for the same cases, else the line
    saying how the sweep grows.

    Raises
    ------
    SweepSpecError
        One line: what differs, the old and the new value, and what to do.
    """
    where = f"--resume: the sweep in {str(out)!r}"
    todo = "give the same arguments as that sweep, or another --out for this one"
    try:
        old = read_json(out / "sweep.json", "a sweep's specification (a JSON object)")
    except (OSError, ValueError) as exc:
        raise SweepSpecError(f"{where}: its sweep.json cannot be read ({type(exc).__name__}: "
                             f"{str(exc)[:120]}); choose another --out") from None
    if not isinstance(old, dict):
        raise SweepSpecError(f"{where}: its sweep.json is not a sweep's specification; choose "
                             "another --out")
    new = json.loads(json.dumps(spec, default=str))
    pairs = [(f"job option {k!r}", (old.get("job") or {}).get(k, _ABSENT),
              new["job"].get(k, _ABSENT))
             for k in sorted(set(old.get("job") or {}) | set(new["job"]))]
    pairs += [(f"base {k}", (old.get("base") or {}).get(k, _ABSENT), new["base"][k])
              for k in ("track", "vehicle")]
    pairs += [("cases file (--cases)", old.get("cases_file", _ABSENT), new["cases_file"]),
              ("swept parameters (--set)", sorted(old.get("axes") or {}), sorted(new["axes"]))]
    for what, a, b in pairs:
        if a != b:
            raise SweepSpecError(f"{where} has {what} = {_shown_value(a)}, this one "
                                 f"{_shown_value(b)}; {todo}")
    old_ids = [c.get("id") for c in old.get("cases") or [] if isinstance(c, dict)]
    new_ids = {c["id"] for c in new["cases"]}
    dropped = [i for i in old_ids if i not in new_ids]
    if dropped:
        kept = {c.get("id"): c for c in old.get("cases") or [] if isinstance(c, dict)}
        first = kept[dropped[0]]
        raise SweepSpecError(
            f"{where} has {len(dropped)} case{'s' if len(dropped) > 1 else ''} that this one "
            f"has not (case {first.get('index')}: {_shown_value(first.get('params'))}; values "
            f"(--set) {_shown_value(old.get('axes'))}, now {_shown_value(new['axes'])}); {todo} "
            "(a resumed sweep may add cases, not leave any out)")
    added = len(new_ids) - len(old_ids)
    return (f"--resume: the sweep grows from {len(old_ids)} to {len(new_ids)} cases ({added} "
            "new; the earlier ones kept, sweep.json updated)") if added else ""


def _client(scheduler, workers):
    """A Dask client of the scheduler at ``scheduler``, or of a new local cluster of
    ``workers`` processes, and that cluster (None for a scheduler's).

    Raises
    ------
    ImportError
        Dask's ``distributed`` is not installed.
    OSError
        The scheduler cannot be reached.
    """
    if not distributed_available:   # imports it now: its defaults join dask's settings before
        raise ImportError("a sweep needs Dask's distributed (pip install distributed)")  # set()
    if scheduler:
        try:
            return distributed.Client(scheduler), None
        except OSError as exc:
            raise OSError(f"cannot reach the Dask scheduler {scheduler}: {exc} (start one with "
                          "`dask scheduler` and workers with `dask worker ADDRESS`, or leave out "
                          "--scheduler for a local cluster); nothing ran, --resume continues "
                          "the sweep") from None

    # no dashboard, so none of its statistical profiler either: sampling the running case's
    # stack every 10 ms (and waking the event loop every 20 ms) made every case 9 % slower.
    # On Linux, from a process with no other thread (the CLI), the workers are forked from
    # it with the package imported: they start in 0.1 s instead of importing it again (3 s
    # of both cores). Otherwise (threads of a notebook or of a test runner, or macOS, where
    # fork is unsafe) they are new processes.
    fork = sys.platform.startswith("linux") and threading.active_count() == 1
    config = {**LOCAL_CLUSTER_CONFIG,
              "distributed.worker.multiprocessing-method": "fork" if fork else "spawn"}
    with dask.config.set(config):
        cluster = distributed.LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
            dashboard_address=None, silence_logs=logging.ERROR)
    return distributed.Client(cluster), cluster


LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False,
                        "distributed.admin.tick.interval": "1s"}
"""Dask settings of the LocalCluster a sweep starts (its workers receive them): the workers'
statistical profiler off (it feeds the dashboard, which this cluster does not have) and the
event loop's health tick at 1 s instead of 20 ms. For the workers of a real cluster, set them
where the workers start (``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False``)."""


def sweep(set_values=None, cases_file=None, *, out="sweep", resume: bool = False,
          scheduler: Optional[str] = None, workers: Optional[int] = None, client=None,
          warm_start: bool = True, echo: Callable[[str], None] = print, plots: bool = True,
          _crash_once=(), **job):
    """Run a parameter sweep on Dask and write the sweep folder (module docstring).

    Parameters
    ----------
    set_values : list of str or dict, optional
        The grid: ``['mass.total=250:300:10', 'Cx=0.8,0.9']`` or
        ``{'mass.total': [250, 260], 'track': ['nordschleife']}``.
    cases_file : str or Path, optional
        A CSV of cases instead of a grid.
    out : str or Path
        The sweep folder.
    resume : bool
        Keep the finished cases of an earlier sweep in ``out`` (rows of status ``lost`` are
        run again) and run the others.
    scheduler : str, optional
        ``tcp://HOST:PORT`` of a running Dask scheduler (its workers must import pyomo_lap
        and see ``out``); default: a LocalCluster with ``workers`` processes (default: one
        per core), closed at the end.
    client : distributed.Client, optional
        An existing client to use (not closed).
    warm_start : bool
        Start each case after the first ones from the nearest solved case (module docstring);
        False: every case from the usual initial guess, all submitted at once.
    echo : callable
        Progress lines.
    plots : bool
        Write the plots at the end.
    **job
        The job's options (:data:`pyomo_lap.api.SOLVE_CONFIG`, except ``out_dir``, ``tee``);
        ``track`` and ``vehicle`` are the base of every case that does not set them.

    Returns
    -------
    DataFrame
        One row per case (the table of ``sweep.parquet``).

    Raises
    ------
    SweepSpecError (a ValueError)
        A bad specification, before anything runs.
    """
    track = job.pop("track", "nordschleife")
    vehicle = job.pop("vehicle", "fsae")
    if isinstance(vehicle, VehicleParameters):
        raise SweepSpecError("vehicle: give a name or a .toml file (a sweep's workers read it)")
    job = _job(job)
    if not isinstance(set_values, dict):
        axes = parse_set(set_values)
    else:
        axes = {}
        for k, v in set_values.items():
            key = k if k in AXES else resolve_parameter(k)[0]
            v = list(v)
            if not v:
                raise SweepSpecError(f"{key}: no values")
            axes[key] = v
    file_cases = read_cases_csv(cases_file) if cases_file is not None else None
    cases = sweep_cases(axes, file_cases, track=track, vehicle=vehicle, job=job)
    check_cases(cases, job)
    out = Path(os.path.abspath(Path(out).expanduser()))       # a link is not resolved: refused
    _prepare_folder(out, resume)
    spec = {"job": job, "axes": {k: list(v) for k, v in axes.items()},
            "cases_file": str(cases_file) if cases_file is not None else None,
            "base": {"track": _where(track), "vehicle": _where(vehicle)}, "cases": cases}
    grows = _resumed_spec(out, spec) if resume and (out / "sweep.json").exists() else ""
    names = ["sweep.json", "sweep.parquet", "sweep.xlsx", *sweep_plot_names(axes)]
    with ResultsWriter.adding(out, "sweep", names=names, kind="sweep", echo=echo) as writer:
        writer.write_text("sweep.json", json.dumps(spec, indent=1, default=str))
        writer.commit()
        done = read_rows(out) if resume else pd.DataFrame()
        finished = set(done.loc[done["status"] != "lost", "case_id"]) if len(done) else set()
        todo = [c for c in cases if c["id"] not in finished]
        n = len(cases)
        echo(f"sweep of {n} cases ({n - len(todo)} already finished, {len(todo)} to run) "
             f"into {out}/")
        if grows:
            echo(grows)
        if todo:
            _run_cases(client, scheduler, workers, todo, job, out, n, _crash_once, echo,
                       warm_start, done)
        table = _table(out, cases)
        _write_outputs(writer, table, echo, plots)
    return table


def _run_cases(client, scheduler, workers, todo, job, out, n, crash_once, echo, warm_start,
               done) -> None:
    """The cases ``todo`` on the client given, or on a cluster of its own (closed after)."""
    own = client is None
    cluster = None
    if own:
        client, cluster = _client(scheduler, workers)
    meshes = _shared_meshes(todo, job)
    run_job = {**job, "_meshes": meshes} if meshes else job
    try:
        _run(client, todo, run_job, out, n, n - len(todo), set(crash_once), echo, warm_start,
             done)
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()


def compile_ahead(cases: list, job: dict) -> dict:
    """Compile the per-point functions of every structure among the cases' cars
    (:func:`pyomo_lap.solvers.lap.compiled.point_functions`: cars that differ only in parameter
    values share one, so a parameter sweep has one), once, into this machine's cache.

    A sweep runs it as its first task, on a worker, while the other workers start their
    first cases: they build their models and then wait for it (a lock in the cache folder)
    instead of each compiling the same functions.

    Returns
    -------
    dict
        ``structures`` (number compiled or found in the cache), ``cars``, ``time_s``; zeros
        when nothing is to be compiled (another solver, ``compile=vm``, a model without
        recorded rows, no C compiler).
    """
    t0 = time.perf_counter()
    none = {"structures": 0, "cars": 0, "time_s": 0.0}
    cfg = job_options({k: v for k, v in job.items() if k != "_meshes"})
    options = prefetch_options(cfg)
    if options is None or find_compiler() is None:
        return none
    bases = _base_vehicles(cases)
    structures, cars = {}, set()
    for c in cases:
        car = (str(c["vehicle"]), tuple(sorted(c["params"].items())))
        if car in cars:
            continue
        cars.add(car)
        try:    # the model of the case's vehicle file (the job's model is None unless given)
            model = job_model(cfg.model, c["vehicle"])
            rows = vehicle_model(model).point_rows
            if rows is None:
                continue
            rec = rows(_case_vehicle(bases[c["vehicle"]], c["params"]),
                       OCP_CONFIG({**options, "model": model}))
        except Exception:   # noqa: BLE001 - an invalid case is the case's row, not this
            continue
        structures.setdefault(rec.structure_key(), rec)
    for rec in structures.values():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                point_functions(rec, "auto")
        except Exception:   # noqa: BLE001 - the cases compile (and report) for themselves
            pass
    return {"structures": len(structures), "cars": len(cars),
            "time_s": time.perf_counter() - t0}


def _eval_threads(client) -> Optional[int]:
    """Threads for each worker's compiled functions: this machine's cores over the sweep's
    worker processes on this machine (None for workers elsewhere: a real cluster's machines
    differ; ``--solver-option eval_threads=N`` sets it for every case)."""
    local = {"127.0.0.1", "localhost", "::1"}
    try:
        local |= {socket.gethostname(), socket.gethostbyname(socket.gethostname())}
    except OSError:
        pass
    workers = client.scheduler_info().get("workers", {})
    here = sum(1 for addr in workers if (urlparse(addr).hostname or "") in local
               or addr.startswith("inproc://"))
    if not here or here != len(workers):
        return None
    return max(1, (os.cpu_count() or 1) // here)


def _nearest(case: dict, solved: list, scale: dict) -> Optional[dict]:
    """The solved case (``{"index", "id", "params"}``) nearest to ``case`` among those of its
    track and vehicle file: the smallest sum of squared parameter differences, each over its
    range in the sweep; None if there is none."""
    best, dist = None, math.inf
    for s in solved:
        d = _distance(case, s, scale)      # infinite for another track, car file or parameters
        if d < dist:
            best, dist = s, d
    return best


def _distance(a: dict, b: dict, scale: dict) -> float:
    """Squared distance of two cases' parameters (``params``), each over its range in the
    sweep (:func:`_nearest`); infinite for cases of another track, vehicle file or set of
    parameters (no warm start between them)."""
    if (str(a["track"]) != str(b["track"]) or str(a["vehicle"]) != str(b["vehicle"])
            or set(a["params"]) != set(b["params"])):
        return math.inf
    return sum(((a["params"][k] - b["params"][k]) / scale.get(k, 1.0)) ** 2 for k in a["params"])


def _next_case(waiting: list, solved: list, started: list, scale: dict) -> dict:
    """The case to start next (taken out of ``waiting``), the order chosen for warm starts:
    while nothing is solved, the first seeds spread out (the case farthest from those started,
    the first the one nearest the middle of the sweep's ranges), so that each worker's region
    of the parameter space has a solved case early; then the waiting case nearest to a solved
    one (its warm start comes from closest by; ties: the sweep's order)."""
    if not waiting:
        raise IndexError("no case waiting")
    if solved:
        key = [min((_distance(c, s, scale) for s in solved), default=math.inf) for c in waiting]
    elif started:
        key = [-min(_distance(c, s, scale) for s in started) for c in waiting]
    else:
        mid = {k: sum(c["params"][k] for c in waiting if k in c["params"]) / len(waiting)
               for k in waiting[0]["params"]}
        key = [sum(((c["params"].get(k, v) - v) / scale.get(k, 1.0)) ** 2 for k, v in mid.items())
               for c in waiting]
    best = min(range(len(waiting)), key=lambda i: (key[i], i))
    return waiting.pop(best)


def _solved_before(done_rows) -> list:
    """The solved cases of an earlier run of the sweep (``resume``), to warm start from."""
    solved = []
    if done_rows is not None and len(done_rows):
        for _, r in done_rows[done_rows["status"] == "solved"].iterrows():
            params = {k: float(r[k]) for k in r.index if _is_parameter(k) and r[k] == r[k]}
            solved.append({"index": int(r["case"]), "id": r["case_id"], "track": r["track"],
                           "vehicle": r["vehicle"], "params": params})
    return solved


def _ranges(todo) -> dict:
    """Each swept parameter's range over the cases (1 where it does not vary): the scale of
    the distances between cases (:func:`_distance`)."""
    scale = {}
    for c in todo:
        for k, v in c["params"].items():
            lo, hi = scale.get(k, (v, v))
            scale[k] = (min(lo, v), max(hi, v))
    return {k: (hi - lo) or 1.0 for k, (lo, hi) in scale.items()}


def _run(client, todo, job, out, n, n_done, crash_ids, echo, warm_start=False, done_rows=None):
    futures = {}
    eval_threads = _eval_threads(client)
    slots = max(1, len(client.nthreads()))     # a worker process runs one case at a time
    # the compiled functions first, on one worker (the others start their cases meanwhile)
    ahead = client.submit(compile_ahead, todo, job, key=f"compile-ahead-{uuid.uuid4().hex[:8]}",
                          pure=False, priority=10)
    ac = distributed.as_completed([ahead])
    solved, scale = _solved_before(done_rows), _ranges(todo)
    waiting = list(todo)
    its = {"cold": [], "warm": []}      # iterations of the solved cases, by start
    verdict = {"on": bool(warm_start)}

    def warm_helps() -> bool:
        """Warm starts are kept while they take fewer iterations on average than the usual
        start (judged from two warm-started cases on; on short sectors the usual start is
        often as good)."""
        if verdict["on"] and len(its["warm"]) >= 2 and its["cold"]:
            w, c = (sum(v) / len(v) for v in (its["warm"], its["cold"]))
            if w >= c:
                verdict["on"] = False
                echo(f"warm starts stopped: {w:.1f} iterations on average against {c:.1f} "
                     "from the usual initial guess; the other cases start from it")
        return verdict["on"]

    def submit(c):
        src = _nearest(c, solved, scale) if warm_helps() else None
        fut = client.submit(run_case, c, job, str(out), c["id"] in crash_ids, eval_threads,
                            {"index": src["index"], "id": src["id"]} if src else None,
                            key=f"case-{c['id']}-{uuid.uuid4().hex[:8]}", pure=False)
        futures[fut] = c
        ac.add(fut)

    # without warm starts every case at once; with them, one per worker, then one at a time
    # as cases finish (each from the nearest case solved by then), in the order _next_case
    # chooses for it
    started = []

    def submit_next():
        c = _next_case(waiting, solved, started, scale) if warm_start else waiting.pop(0)
        started.append({"track": str(c["track"]), "vehicle": str(c["vehicle"]),
                        "params": dict(c["params"])})
        submit(c)

    while waiting and (not warm_start or len(futures) < slots):
        submit_next()
    done, failed = n_done, 0
    width = len(str(n))
    for fut in ac:
        if fut is ahead:
            try:
                info = fut.result()
            except Exception:  # noqa: BLE001 - the cases compile for themselves then
                continue
            if info["structures"]:
                echo(f"compiled functions ready: {info['structures']} structure"
                     f"{'s' if info['structures'] > 1 else ''} for {info['cars']} car"
                     f"{'s' if info['cars'] > 1 else ''} ({info['time_s']:.1f} s; found in the "
                     "cache if compiled before)")
            continue
        case = futures[fut]
        try:
            row = fut.result()
        except Exception as exc:  # noqa: BLE001 - the worker died (KilledWorker) or similar
            row = _row(case, "lost", f"{type(exc).__name__}: {exc}")
            _write_row(out, row)
        if row["status"] == "solved":
            solved.append({"index": case["index"], "id": case["id"], "track": str(case["track"]),
                           "vehicle": str(case["vehicle"]), "params": dict(case["params"])})
            if not row.get("warm_start_failed"):
                its["warm" if row.get("warm_start_from", -1) != -1 else "cold"].append(
                    row["iterations"])
        if waiting:
            submit_next()
        done += 1
        if row["status"] != "solved":
            failed += 1
        pending = sum(not f.done() for f in futures) + len(waiting)
        running = min(pending, slots)
        params = ", ".join(f"{k}={v:g}" for k, v in case["params"].items())
        where = ", ".join(x for x in (Path(case["track"]).stem if len(case["track"]) > 40
                                      else case["track"], params) if x)
        start = (f", from case {row['warm_start_from']}"
                 if row.get("warm_start_from", -1) not in (-1, None) else "")
        what = (f"{row['lap_time_s']:.3f} s ({row.get('iterations')} iterations{start}, "
                f"{row.get('wall_time_s', 0):.1f} s)" if row["status"] == "solved"
                else f"{row['status']}: {str(row['reason']).splitlines()[0][:120]}")
        echo(f"{_bar(done, failed, n)} [{done:>{width}}/{n}] done {done - failed}, failed "
             f"{failed}, running {running}, waiting {pending - running} | "
             f"case {case['index']} ({where}): {what}")


def _bar(done: int, failed: int, n: int, width: int = 20) -> str:
    """A drawn progress bar: ``#`` solved, ``x`` failed, ``.`` to do (``[######x.....]``)."""
    k_failed = round(width * failed / n) if n else 0
    k_done = round(width * done / n) - k_failed if n else 0
    return "[" + "#" * max(0, k_done) + "x" * k_failed + "." * max(0, width - k_done - k_failed) + "]"


def _table(out: Path, cases: list) -> pd.DataFrame:
    rows = read_rows(out)
    ids = {c["id"] for c in cases}
    if len(rows):
        rows = rows[rows["case_id"].isin(ids)].copy()
        # a row kept by --resume takes its case's place in this specification
        rows["case"] = rows["case_id"].map({c["id"]: c["index"] for c in cases})
        rows = rows.sort_values("case").reset_index(drop=True)
    first = ["case", "case_id", "track", "vehicle"]
    params = [c for c in rows.columns if _is_parameter(c)]
    rest = [c for c in rows.columns if c not in first + params]
    return rows[first + params + rest] if len(rows) else rows


def _is_parameter(column: str) -> bool:
    """Whether a column of the rows is a vehicle parameter (``section.key``)."""
    return "." in column and column.split(".")[0] in SECTIONS


def _write_outputs(writer: ResultsWriter, table: pd.DataFrame, echo, plots: bool) -> None:
    """``sweep.parquet``, ``sweep.xlsx`` and the figures through the sweep folder's writer,
    committed together (each written to a temporary file of its own, renamed at the end)."""
    if not len(table):
        return

    def workbook(path):
        with pd.ExcelWriter(path, engine="xlsxwriter",
                            engine_kwargs={"options": dict(_XLSX_OPTIONS)}) as xw:
            table.to_excel(xw, sheet_name="cases", index=False)
    writer.write("sweep.parquet", lambda path: table.to_parquet(path, index=False))
    writer.write("sweep.xlsx", workbook)
    files = ["sweep.parquet", "sweep.xlsx"]
    if plots:
        files += [f.name for f in sweep_plots(table, writer)]
    writer.commit()
    counts = table["status"].value_counts().to_dict()
    echo(f"{len(table)} cases: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES if s in counts)
         + f"; written to {writer.folder}/ ({', '.join(files)})")
