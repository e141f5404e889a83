"""Is the result right: time-domain simulation (:mod:`.simulate`) and its control laws
(:mod:`.controls`), the replay of the optimal controls (:mod:`.replay`), the solved table every
check reads and its collocation defects (:mod:`.defects`), zig-zags and speed consistency of
the channels (:mod:`.quality`), the energy balance (:mod:`.energy_balance`), the thresholds,
the model's limits, the self-check and the verdict (:mod:`.verdict`): every vehicle model
through its ``VehicleModel.dynamics``, no model named. Imports the results layer and below
(not :mod:`pyomo_lap.analysis`, its peer).
"""
