"""Presentation: the figures (:mod:`.figures`: the figure table, ``plot_results``,
``compare_runs``; what they share :mod:`.base`; the track :mod:`.track`; the channels
:mod:`.channels`; a sweep's :mod:`.sweep`; those of ``pyomo-lap validate`` :mod:`.validation`)
and the interactive HTML report (:mod:`.report`).
Imports the verify, analysis and results layers and below.
"""
