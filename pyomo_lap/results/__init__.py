"""The results of a solve: the channel table of a solved model and reading a results folder
(:mod:`.table`), its columns at any points, the mesh rows' and a fixed step's
(:mod:`.point_table`), the contents of the export's files (:mod:`.export`), the channel dictionary
(:mod:`.channels`), the logger channels (:mod:`.logger`), the per-corner tables
(:mod:`.corners`), the channels on a fixed distance step (:mod:`.fixed_step`), computed at its
points (:mod:`.fixed_step_points`), ``summary.json`` typed (:mod:`.summary`:
:class:`~pyomo_lap.results.summary.Summary`, read and written in one place each), the checked reader of ``solution.npz``
(:mod:`.solution_file`). Imports the
solvers layer and below.
"""
