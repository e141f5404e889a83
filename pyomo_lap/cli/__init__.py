"""Command-line interface: ``pyomo-lap solve | sweep | plot | compare | diagnose | channels |
tracks | vehicles``.

Built on click. Errors in the inputs are reported as one clear line and a non-zero exit
code, before any model is built.

The group :func:`main` and what the commands share are in :mod:`pyomo_lap.cli.base`; the
commands in :mod:`pyomo_lap.cli.run` (solve, sweep, stint, check, validate, export),
:mod:`pyomo_lap.cli.results` (plot, compare, report) and :mod:`pyomo_lap.cli.info` (diagnose,
options, channels, compile, tracks, vehicles); importing them registers them on the group,
then every command gets ``-q``/``-v`` (:mod:`pyomo_lap.cli.verbosity`); ``python -m
pyomo_lap.cli`` runs :mod:`.__main__`.
"""
from . import info, results, run  # noqa: F401  (their commands register on the group
from .base import SELF_CHECK_FAILED, main
from .info import vehicle_template
from .verbosity import _add_verbosity

__all__ = ["main", "SELF_CHECK_FAILED", "vehicle_template"]

for _command in main.commands.values():     # keep this after every command module's import
    _add_verbosity(_command)
