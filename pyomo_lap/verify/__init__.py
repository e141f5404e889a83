"""Is the result right: time-domain simulation (:mod:`.simulate`) and its control laws
(:mod:`.controls`), the replay of the optimal controls (:mod:`.replay`), collocation defects
(:mod:`.defects`), zig-zags and speed consistency of the channels (:mod:`.quality`), the energy
balance (:mod:`.energy_balance`), the thresholds, the self-check and the verdict
(:mod:`.verdict`), the racecar's checks (:mod:`.racecar_checks`). Imports the results layer and
below (not :mod:`pyomo_lap.analysis`, its peer).
"""
