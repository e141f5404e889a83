"""pyomo_lap: minimum-lap-time planning of race cars on 3D tracks with Pyomo.

The Lie-group race-car model of Bartali, Gabiccini, Grabovic and Guiggiani: a serial chain
(track joint, lateral and yaw joints, heave, pitch, roll) embedded in a 3D track, dynamics from
the Articulated-Body Algorithm, tyre forces and load transfers as algebraic equations, written
in the track parameter q1 and solved by direct collocation (pyomo.dae) and IPOPT.
"""
__version__ = "0.1.0"


def _scipy_without_pyomo_callback() -> None:
    """Pyomo (``pyomo.common.dependencies``) registers a post-import callback on scipy that
    imports ``scipy.stats``, ``scipy.integrate``, ``scipy.sparse`` and ``scipy.spatial`` as soon
    as anything imports scipy: 0.25-0.3 s of every run, for modules a job does not use (the
    track needs ``scipy.interpolate``). Pyomo's own deferred ``scipy`` still runs the callback
    when Pyomo uses it. Nothing happens when scipy is already imported or Pyomo changes."""
    import sys
    if "scipy" in sys.modules:
        return
    from pyomo.common import dependencies
    callbacks = getattr(getattr(dependencies, "DeferredImportCallbackFinder", None), "_callbacks", None)
    if isinstance(callbacks, dict):
        callbacks.pop("scipy", None)


_scipy_without_pyomo_callback()

from .track.geometry import Track, TrackPoints  # noqa: E402
from .track.loading import load_track, available_tracks  # noqa: E402
from .track.checks import TrackDataError  # noqa: E402
from .vehicle.car import VehicleParameters, VehicleFileError, load_vehicle, available_vehicles  # noqa: E402
from .ocp.build import build_model, OCP_CONFIG  # noqa: E402
from .ocp.initialize import initialize_model  # noqa: E402
from .solvers.solve import solve_model, SolveReport, SolverNotFoundError, SolveInterrupted  # noqa: E402
from .solvers.lap import solver as _lap_solver  # noqa: E402, F401  (registers the solver 'lap_ipopt' with Pyomo
from .api import solve_sector, SolveFailedError  # noqa: E402

_LAZY = {"trajectory_dataframe": "results.table", "write_results": "results.table",
         "read_trajectory": "results.table", "plot_results": "plots.figures",
         "compare_runs": "plots.figures", "sweep": "sweeps", "SweepSpecError": "sweeps"}
"""Names of the package imported on first use (PEP 562): their modules need pandas (0.2 s of
every run's start), which a solve imports while IPOPT works (:func:`pyomo_lap.api.solve_sector`);
matplotlib and Dask are imported when plotting or sweeping."""


def __getattr__(name):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Track", "TrackPoints", "load_track", "available_tracks", "TrackDataError",
    "VehicleParameters", "VehicleFileError", "load_vehicle", "available_vehicles",
    "build_model", "OCP_CONFIG", "initialize_model", "solve_model", "SolveReport",
    "SolverNotFoundError", "SolveInterrupted", "SolveFailedError", "trajectory_dataframe",
    "write_results", "read_trajectory", "solve_sector", "plot_results", "compare_runs", "sweep",
    "SweepSpecError", "__version__",
]
