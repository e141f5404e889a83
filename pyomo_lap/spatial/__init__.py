"""Spatial algebra written once over scalars (floats, Pyomo expressions, CasADi symbols).

:mod:`.backend` (scalar arithmetic with structural zeros), :mod:`.lie` (SE(3), se(3): exp,
``Ad``, ``ad``, ``Ad*``, ``ad*``, spatial inertia), :mod:`.tree` (kinematic trees with the race
car's track joint among their joints, forward kinematics), :mod:`.dynamics` (their RNEA, ABA,
hybrid dynamics, CRBA), :mod:`.derivatives` (analytic RNEA derivatives),
:mod:`.tape` (one point's equations recorded once and replayed).
Imports nothing else of :mod:`pyomo_lap`.
"""
