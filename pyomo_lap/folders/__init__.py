"""Results folders, below every layer that writes one: the manifest of what pyomo_lap wrote
(file, SHA-256, command), the lock, the checks before a folder is replaced or read
(:mod:`.results_folder`), and the rule for links: never follow one out of a folder pyomo_lap owns
(:mod:`.links`). Imports the util layer only (no pandas: a solve locks its folder before the
build without importing it).
"""
