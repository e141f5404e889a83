"""pyomo_lap: minimum-lap-time planning of race cars on 3D tracks with Pyomo.

The Lie-group race-car model of Bartali, Gabiccini, Grabovic and Guiggiani: a serial chain
(track joint, lateral and yaw joints, heave, pitch, roll) embedded in a 3D track, dynamics from
the Articulated-Body Algorithm, tyre forces and load transfers as algebraic equations, written
in the track parameter q1 and solved by direct collocation (pyomo.dae) and IPOPT.
"""
__version__ = "0.1.0"

from .api import SolveFailedError, solve_sector
from .ocp.build import OCP_CONFIG, build_model
from .ocp.initialize import initialize_model
from .plots.figures import compare_runs, plot_results
from .results.table import read_trajectory, trajectory_dataframe, write_results
from .solvers.lap import solver as _lap_solver  # noqa: F401  (registers 'lap_ipopt' with Pyomo
from .solvers.solve import (
    SolveInterrupted,
    SolveReport,
    SolverNotFoundError,
    solve_model,
)
from .sweeps import SweepSpecError, sweep
from .track.checks import TrackDataError
from .track.geometry import Track, TrackPoints
from .track.loading import available_tracks, load_track
from .vehicle.car import (
    VehicleFileError,
    VehicleParameters,
    available_vehicles,
    load_vehicle,
)

__all__ = [
    "Track", "TrackPoints", "load_track", "available_tracks", "TrackDataError",
    "VehicleParameters", "VehicleFileError", "load_vehicle", "available_vehicles",
    "build_model", "OCP_CONFIG", "initialize_model", "solve_model", "SolveReport",
    "SolverNotFoundError", "SolveInterrupted", "SolveFailedError", "trajectory_dataframe",
    "write_results", "read_trajectory", "solve_sector", "plot_results", "compare_runs", "sweep",
    "SweepSpecError", "__version__",
]
