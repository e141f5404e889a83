"""The options ``-q/--quiet`` and ``-v/--verbose`` of every command (:func:`_add_verbosity`,
given to each command by :mod:`pyomo_lap.cli` once they are all registered).
"""
from __future__ import annotations

import functools

import click

from .base import _VERBOSITY_KEY, _fail

_QUIET_VERBOSE_HELP = {
    # command: (help of -q, help of -v); the others print a listing or a table, which is
    # their result: -q and -v are accepted and change nothing there
    "solve": ("print only the result line, where the results went and any repair",
              "also each step done to the track data (where, how much) and the solver's "
              "iterations"),
    "sweep": ("print only the final count of cases (no line per finished case)",
              "the same as the default: a line per finished case"),
    "check": ("print only whether the track and the vehicle can be used (no table of what "
              "was done to the track data, no assumed values)",
              "the same as the default: every step and assumed value"),
    "validate": ("print only the verdict and the checks that warn or fail",
                 "the same as the default: the progress and every check"),
    "plot": ("print nothing (errors only; the exit code says how it went)",
             "also every file written"),
    "compare": ("accepted on every command; compare prints its tables, which are its result "
                "(the files: compare.csv, compare.png), and -q does not shorten them",
                "accepted on every command; the tables are printed in full without it"),
    "stint": ("print only the stint's result line, not each lap's",
              "the same as the default: a line per lap"),
    "diagnose": ("print only the final count of warnings, not the toolbox's reports",
                 "the same as the default: the toolbox's reports"),
}


def _add_verbosity(cmd: click.Command) -> None:
    """Give ``cmd`` the options ``-q/--quiet`` and ``-v/--verbose`` (taken out of the
    callback's keywords; the command reads them with :func:`_verbosity`)."""
    names = {p.name for p in cmd.params}
    if "quiet" in names or "verbose" in names:
        return
    quiet_help, verbose_help = _QUIET_VERBOSE_HELP.get(cmd.name, (
        "accepted on every command; this one prints its listing, which -q does not shorten",
        "accepted on every command; this one prints its listing, which -v does not lengthen"))
    cmd.params.append(click.Option(["-q", "--quiet"], is_flag=True, help=quiet_help))
    cmd.params.append(click.Option(["-v", "--verbose"], is_flag=True, help=verbose_help))
    callback = cmd.callback

    @functools.wraps(callback)
    def run(*args, quiet=False, verbose=False, **kwargs):
        if quiet and verbose:
            _fail("-q/--quiet and -v/--verbose: give one of them")
        click.get_current_context().meta[_VERBOSITY_KEY] = -1 if quiet else (1 if verbose else 0)
        return callback(*args, **kwargs)

    cmd.callback = run
