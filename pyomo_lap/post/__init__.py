"""After a solve: channels and export (:mod:`.results`; the files' contents :mod:`.export`), the channel dictionary
(:mod:`.channels`), the channels on a fixed distance step (:mod:`.fixed_step`), results folders
(:mod:`.folders`; the rule for links :mod:`.links`), run deltas and logged laps (:mod:`.compare`), logger files
(:mod:`.telemetry`) and logger channels (:mod:`.logger`), per-corner tables (:mod:`.corners`),
figures (:mod:`.plots`; :mod:`.plots_base`, :mod:`.plots_track`, :mod:`.plots_channels`, :mod:`.plots_sweep`; the friction envelope :mod:`.envelope`), the interactive report (:mod:`.report`), lap-time sensitivities
(:mod:`.sensitivities`; their parts from the multipliers :mod:`.lagrangian`), warm starts from a results folder (:mod:`.warm_start`), mesh
continuation (:mod:`.continuation`), time-domain simulation (:mod:`.simulate`) and its control laws (:mod:`.controls`), replay
(:mod:`.replay`), collocation defects and mesh refinement (:mod:`.defects`), the trust in the
channels (:mod:`.quality`), the energy balance (:mod:`.energy`), a stint of laps on one model (:mod:`.stint`), ``pyomo-lap validate``
(:mod:`.validate`; its thresholds, checks and verdict :mod:`.verdict`) and its checks of a racecar result (:mod:`.racecar_checks`), IDAES
diagnostics and units (:mod:`.diagnose`). Imports the solvers layer and below.
"""
