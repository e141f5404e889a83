"""Infrastructure with no physics: where the bundled data are (:mod:`.paths`), progress bars
(:mod:`.progress`), the garbage collector paused during builds (:mod:`.gc_pause`), memory given
back to the operating system (:mod:`.memory`), work overlapped with the solver's native code
(:mod:`.overlap`), CasADi functions compiled to C and cached (:mod:`.casadi_compile`), the
domains of configuration values (:mod:`.domains`), the error of an input file with every
problem listed (:mod:`.errors`), whether a process still runs (:mod:`.processes`), the suffixes of a warm start's multipliers
(:mod:`.suffixes`), the finest fixed step of ``--every`` (:mod:`.steps`). Imports
nothing else of :mod:`pyomo_lap`.
"""
