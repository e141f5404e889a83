"""Parameter sweeps on Dask: many cases of one job, each one solve (``pyomo-lap sweep``,
:func:`sweep`).

The package: :mod:`pyomo_lap.sweeps.cases` (the cases: parameter names, ``--set`` grids, CSV
files of cases, case ids, their checks), :mod:`pyomo_lap.sweeps.worker` (one case in a worker
process, its row), :mod:`pyomo_lap.sweeps.run` (the sweep: folder, client, order and warm
starts of the cases, table and plots).

A sweep's cases come from a grid of values of vehicle parameters (``--set mass.total=250:300:10
--set Cx=0.8,0.9``; ``track`` and ``vehicle`` are axes too: ``--set track=monza,silverstone``),
or from a CSV file of cases (one row per case, one column per parameter; ``track`` and
``vehicle`` columns optional). Parameters are named as in the vehicle file, ``section.key``
(``mass.total``, ``aero.Cx``), or by the key alone where only one section has it (``total``,
``Cx``); the schema's attribute names (``m``) are accepted too.

Each case runs :func:`pyomo_lap.api.solve_sector` in a Dask worker process (by default a
``LocalCluster`` with one single-threaded worker per core; or the scheduler of a real cluster)
and writes, as soon as it finishes, its results folder ``cases/<case id>/`` and its row
``rows/<case id>.parquet`` (written to a temporary name, then renamed: a killed worker never
leaves half a row). Case ids are the hash of what defines the case (track, vehicle, parameter
values, job options), so ``resume=True`` finds the finished ones and runs only the others.

The sweep folder::

    sweep.json              the specification: job options, axes, every case and its id
    rows/<id>.parquet       one row per finished case (solved or not)
    cases/<id>/             the case's results (summary.json, trajectory.*, results.xlsx)
    sweep.parquet, sweep.xlsx   the table of all cases (written at the end)
    lap_time_vs_<parameter>.png, lap_time_heatmap.png   the plots

A row's ``status`` is ``solved``, ``failed`` (the solver did not find an optimum),
``invalid`` (the combination of values is refused by the vehicle schema, e.g. an unsprung
mass above the total), ``error`` (any other error of the case, with its message) or ``lost``
(the worker running it died more often than Dask retries; ``resume`` runs these again).

Warm starts (``warm_start=True``, default): the first cases, one per worker, start from the
usual initial guess, chosen spread out over the parameter space (the one nearest the middle of
the ranges, then each the farthest from those started); every later case is the waiting case
nearest to a solved one and starts from the solution of the nearest solved case of
the same track and vehicle file (distance: the swept parameters, each scaled by its range in
the sweep), its primal values and IPOPT's multipliers
(:mod:`pyomo_lap.solvers.warm_start`), through the job option ``warm_start_from`` (its
``solution.npz``), as long as warm
starts help: fewer iterations on average than the usual start, judged from two warm-started
cases on (on the 2 km default job they take 15-25 iterations against 25-36; on a 300 m sector
often more than the usual start's 10-12). A warm start that does not reach an optimum is
solved again from the usual initial guess. The row says where a case started
(``warm_start_from``: the case number, -1 for the usual start; ``warm_start_failed``: True
where the warm start was solved again from the usual start). Lap times agree with those of
the cases solved one by one to IPOPT's tolerance (about 1e-9 relative on the default job).

Each worker keeps the model of its last case: the next case of the same job (track, sector,
mesh, options) whose car has the same structure (parameters that differ only in value) puts
its car into that model (:func:`pyomo_lap.ocp.build.set_vehicle`, 0.06 s on the default job)
instead of building one (0.4-0.6 s): the same NLP, row for row. The row says so
(``model_reused``) and gives the build's, or the change's, time (``build_time_s``).
"""
from .cases import (
                    STATUSES,
                    SweepSpecError,
                    parameter_names,
                    parse_set,
                    resolve_parameter,
                    sweep_cases,
)
from .run import read_rows, sweep
from .worker import run_case

__all__ = ["sweep", "parse_set", "parameter_names", "resolve_parameter", "sweep_cases",
           "run_case", "read_rows", "SweepSpecError", "STATUSES"]
