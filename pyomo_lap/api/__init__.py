"""The scripting API: build, initialize, solve, results — and the whole job in one call.

:func:`solve_sector` (:mod:`pyomo_lap.api.job`) runs a job; its options are
:data:`SOLVE_CONFIG` (:mod:`pyomo_lap.api.config`); what it makes of a solve (summary,
channels, export) is :mod:`pyomo_lap.api.results`, the refinement of the mesh
:mod:`pyomo_lap.api.refine`. The other solve pipelines: ``pyomo-lap validate``
(:mod:`pyomo_lap.api.validate`), a stint of laps (:mod:`pyomo_lap.api.stint`), mesh
continuation (:mod:`pyomo_lap.api.continuation`), warm starts from a results folder
(:mod:`pyomo_lap.api.warm_start`), IDAES diagnostics (:mod:`pyomo_lap.api.diagnose`). The
state a job's steps share is a :class:`~pyomo_lap.api.state.Job` (:mod:`.state`). This
package re-exports their public names.

Example
-------
>>> from pyomo_lap import load_track, load_vehicle, build_model, initialize_model, solve_model
>>> m = build_model(load_track("nordschleife"), load_vehicle("fsae"), length=300, nfe=30)
>>> initialize_model(m)                                          # doctest: +SKIP
>>> report = solve_model(m)                                      # doctest: +SKIP
>>> df = trajectory_dataframe(m)                                 # doctest: +SKIP
"""
from .config import (
                     OWN_OCP_OPTIONS,
                     SOLVE_CONFIG,
                     OptionValueError,
                     job_mesh,
                     job_model,
                     job_options,
                     prefetch_options,
)
from .job import SectorResults, solve_sector
from .results import (
                     ResultsNotWrittenError,
                     SolveFailedError,
                     model_size,
                     result_line,
                     solve_summary,
                     track_data_lines,
)

__all__ = ["job_mesh", "solve_sector", "SectorResults", "SOLVE_CONFIG", "job_options",
           "OptionValueError", "model_size", "SolveFailedError", "ResultsNotWrittenError",
           "track_data_lines", "result_line", "prefetch_options", "job_model", "OWN_OCP_OPTIONS",
           "solve_summary"]
