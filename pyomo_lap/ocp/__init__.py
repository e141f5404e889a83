"""The optimal control problem in Pyomo/pyomo.dae: the options, the registry of vehicle models
and ``build_model`` (:mod:`.build`), the vehicle-model interface (:mod:`.vehicle_model`) and
its models (:mod:`.full_model`, :mod:`.single_track`, :mod:`.multibody`, :mod:`.racecar`, the
worked example :mod:`.point_mass`), the pieces they share (:mod:`.common`; the sector, its mesh and boundary conditions
:mod:`.sector`; the full model's named channels :mod:`.channel_expressions`), the rows of one
point recorded once and replayed at every point (:mod:`.point_rows`), the record evaluated
with numbers after the build: channels and the car's functions (:mod:`.point_functions`), what a
family gets from its record for the checks of a result: its channel table and dynamics
(:mod:`.record_model`), the placement of the
finite elements (:mod:`.mesh`), the collocation's arithmetic: Lagrange bases, element nodes,
quadrature, the collocation polynomials' values (:mod:`.collocation`), the energy integrals and their limits (:mod:`.integrals`), the hybrid powertrain (:mod:`.hybrid`),
initial guesses (:mod:`.initialize`), a solution moved between meshes and models
(:mod:`.transfer`), option checks and the
option table (:mod:`.options`). Imports the vehicle, track, spatial and util layers.
"""
from .build import OCP_CONFIG, VEHICLE_MODELS, build_model  # noqa: F401
