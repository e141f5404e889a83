"""After a solve: channels and export (:mod:`.results`), run deltas (:mod:`.compare`),
figures (:mod:`.plots`), time-domain simulation (:mod:`.simulate`), replay (:mod:`.replay`),
collocation defects and mesh refinement (:mod:`.defects`), ``pyomo-lap validate``
(:mod:`.validate`), IDAES diagnostics and units (:mod:`.diagnose`). Imports the solvers layer
and below.
"""
