"""What a result says: lap-time sensitivities from the multipliers (:mod:`.sensitivities`; their
parts from the Lagrangian :mod:`.lagrangian`), run deltas and logged laps (:mod:`.compare`),
logger files (:mod:`.telemetry`). Imports the results layer and below (not
:mod:`pyomo_lap.verify`, its peer).
"""
