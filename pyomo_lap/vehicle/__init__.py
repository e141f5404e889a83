"""The vehicle: parameters and their schema (:mod:`.schema`) and the vehicle-file reader (:mod:`.files`), the full Lie-group car's
equations (:mod:`.car`), the tyre models and their registry (:mod:`.tyres`), the single-track car's (:mod:`.single_track_car`), the multibody car's
(:mod:`.multibody_car`), the power at the driven wheels and the drive-force limit
(:mod:`.powertrain`), dymos's racecar: its parameters and file reader (:mod:`.racecar`) and its
equations (:mod:`.racecar_equations`), the quasi-steady point-mass speed (:mod:`.speed_profile`), the
fuel flow of a car with ``[fuel]`` (:mod:`.fuel`), the powers of the energy integrals
(:mod:`.energy`), the limits' names and units (:mod:`.limits`) and the
friction envelope of the GG diagram (:mod:`.envelope`).
Imports :mod:`pyomo_lap.spatial` and :mod:`pyomo_lap.util` only.
"""
from .car import VehicleFileError, VehicleParameters, available_vehicles, load_vehicle  # noqa: F401
