"""The optimal control problem in Pyomo/pyomo.dae: the options and ``build_model``
(:mod:`.build`), the vehicle-model interface (:mod:`.vehicle_model`) and its models
(:mod:`.full_model`, :mod:`.single_track`, the worked example :mod:`.point_mass`), the pieces
they share (:mod:`.common`), initial guesses (:mod:`.initialize`), option checks and table
(:mod:`.options`). Imports the vehicle, track, spatial and util layers.
"""
from .build import OCP_CONFIG, VEHICLE_MODELS, build_model  # noqa: F401
