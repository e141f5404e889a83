"""The folders pyomo_lap writes, below every layer that writes one: the one writer every
command writes through (:mod:`.writer`, :class:`~pyomo_lap.folders.writer.ResultsWriter`), the
manifest of what pyomo_lap wrote (file, SHA-256, command; the folder's kind: :mod:`.manifest`),
the lock (:mod:`.lock`), the checks before a folder is replaced or read and the clean-up after
stopped runs (:mod:`.results_folder`), and the rule for links: never follow one out of a
folder pyomo_lap owns (:mod:`.links`), the one reader of a results folder's JSON
(:mod:`.json_file`). Imports the util layer only (no pandas: a solve locks
its folder before the build without importing it).
"""
