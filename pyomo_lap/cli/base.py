"""The command group ``pyomo-lap`` (:func:`main`) and what its commands share: the job's
options as command-line options (:func:`job_options`), their checks, the console
(:class:`_Echo`, the verbosity), signals and the exit codes of failures, and what each
command writes (:func:`writes`: every command is classified; a writing command stops on
SIGINT or SIGTERM with one line and exit code 130 or 143, on a full disk with exit code 1).
"""
from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path

import click

from .. import __version__
from ..api import SOLVE_CONFIG, OptionValueError, job_options as checked_job_options
from ..folders.writer import COMMITTED, FolderWriteError
from ..results.table import check_results_folder
from ..solvers.solve import SolverOptionError, check_solver_options
from ..util.domains import EntrySpeed, FiniteFloat, IntBetween, PathOrNone, number_text

__all__ = ["main", "writes"]


def _fail(msg: str, code: int = 2):
    click.secho(f"error: {msg}", fg="red", err=True)
    sys.exit(code)


def _fail_error(exc: BaseException):
    """A reported error in one line: exit code 1 when files could not be written
    (:class:`pyomo_lap.folders.writer.FolderWriteError`: a full disk), 2 otherwise (the
    input, a folder that cannot be written into)."""
    _fail(str(exc), code=1 if isinstance(exc, FolderWriteError) else 2)


SELF_CHECK_FAILED = 4
"""Exit code of ``pyomo-lap solve`` for a result that was solved (IPOPT: optimal) and written,
but failed its self-check (:func:`pyomo_lap.verify.verdict.self_check`): a script must not take
it for a good result."""


_SIGNAL = {"name": "SIGINT (Ctrl-C)", "code": 130}


def _on_sigterm(signum, frame):
    """SIGTERM (a scheduler's kill, `kill PID`) is handled like Ctrl-C: the solver is
    stopped, temporary files are removed, and nothing existing is touched."""
    _SIGNAL.update(name="SIGTERM", code=143)
    raise KeyboardInterrupt


def _state(folder: Path):
    """What identifies the content of a results folder (its summary), or None."""
    try:
        return (folder / "summary.json").read_bytes()
    except OSError:
        return None


def _complete_results(folder) -> None:
    """Stop (exit 2, one line) unless ``folder`` holds the complete results of a run: its
    manifest and the files it lists (:func:`pyomo_lap.results.table.check_results_folder`)."""
    try:
        check_results_folder(folder)
    except ValueError as exc:
        _fail(str(exc))


def _unexpected(exc: BaseException):
    """An error that is not a reported failure: one line, no traceback (unless asked)."""
    if isinstance(exc, FolderWriteError):
        _fail_error(exc)
    if os.environ.get("PYOMO_LAP_DEBUG"):
        raise exc
    _fail(f"unexpected {type(exc).__name__}: {exc} (this is a bug in pyomo_lap; run again with "
          "PYOMO_LAP_DEBUG=1 to see the traceback and please report it)", code=3)


_VERBOSITY_KEY = "pyomo_lap.verbosity"


def _verbosity() -> int:
    """How much the running command prints: -1 with ``-q/--quiet``, 1 with ``-v/--verbose``,
    0 otherwise (set by :func:`_add_verbosity`)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_VERBOSITY_KEY, 0) if ctx is not None else 0


class _Echo:
    """``click.echo`` by verbosity, for the library's ``echo`` arguments: ``echo(text)`` prints
    what a command says by default (with ``-q`` only the lines starting with one of ``keep``:
    the result), ``echo.detail(text)`` prints only with ``-v`` (e.g. each step done to the
    track data: :func:`pyomo_lap.api.track_data_lines`)."""

    def __init__(self, level: int, keep: tuple = ()):
        self.level, self.keep = level, tuple(keep)

    def __call__(self, text: str = "") -> None:
        if self.level >= 0 or (self.keep and str(text).startswith(self.keep)):
            click.echo(text)

    def detail(self, text: str = "") -> None:
        if self.level > 0:
            click.echo(text)


_SWEEP_RESULT_LINES = tuple(f"{d}" for d in "0123456789")
"""What ``pyomo-lap sweep -q`` prints: the final count (``'16 cases: 16 solved'``)."""


_SOLVE_RESULT_LINES = ("sector time ", "lap time ", "results written to ",
                       "partial results written to ", "the last iterate written to ",
                       "could not write ", "track repaired",
                       "sector repaired", "track warning")
"""What ``pyomo-lap solve -q`` prints: the result, where it was written, and any repair made
to the inputs."""


WRITES_NOTHING = None
"""What :func:`writes` is given for a command that writes no file of the user's."""


def writes(what):
    """Decorator of a command (put above ``@main.command()``): what it writes, recorded as
    the command's ``writes`` attribute; every command of :func:`main` has one
    (tests/test_writers_attacked.py refuses a command without it, and attacks every writing
    one). A writing command (``what`` a text) writes only through
    :class:`pyomo_lap.folders.writer.ResultsWriter`, and stops on SIGINT (Ctrl-C) or SIGTERM
    with one line and exit code 130 or 143 (not click's "Aborted!"), what was being written
    removed; a full disk (:class:`pyomo_lap.folders.writer.FolderWriteError` not reported by
    the command) with one line and exit code 1.

    Parameters
    ----------
    what : str or None
        Where the command writes (``"OUT, a results folder written whole"``), or
        :data:`WRITES_NOTHING` (a listing; ``compile``'s cache of compiled functions, which
        has rules of its own: :mod:`pyomo_lap.util.casadi_compile`).
    """
    def decorate(cmd: click.Command) -> click.Command:
        cmd.writes = what
        if what is not WRITES_NOTHING:
            cmd.callback = _stops_cleanly(cmd.callback)
        return cmd
    return decorate


def _stops_cleanly(callback):
    """``callback`` run with SIGTERM taken as Ctrl-C (:func:`_on_sigterm`): an interrupt ends
    it with one line (whether anything had been written: the writer's
    :data:`pyomo_lap.folders.writer.COMMITTED`) and exit code 130 (SIGINT) or 143 (SIGTERM);
    a :class:`pyomo_lap.folders.writer.FolderWriteError` with one line and exit code 1."""
    @functools.wraps(callback)
    def run(*args, **kwargs):
        _SIGNAL.update(name="SIGINT (Ctrl-C)", code=130)
        before = len(COMMITTED)
        try:
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:                   # not the main thread: signals stay as they are
            previous = None
        try:
            return callback(*args, **kwargs)
        except KeyboardInterrupt:
            done = COMMITTED[before:]
            _fail(f"interrupted by {_SIGNAL['name']}; " + (
                f"{done[-1]} had been written in full, nothing after it" if done else
                "nothing was written: what was being written was removed and the earlier "
                "files are as they were"), code=_SIGNAL["code"])
        except FolderWriteError as exc:
            _fail_error(exc)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    return run


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pyomo-lap")
def main():
    """Minimum-lap-time planning on 3D tracks (Lie-group race-car model, pyomo.dae, IPOPT)."""


_SPELLING = {
    # job option of SOLVE_CONFIG -> how the command line spells it, where not --<name>
    "periodic": (("--full-lap", "periodic"), {"is_flag": True, "help": "the whole closed lap, "
                 "periodic in every state (from the track's start; no --start, --length, "
                 "--initial-speed)"}),
    "refine_mesh": (("--refine-mesh/--no-refine-mesh", "refine_mesh"), {"default": True}),
    "solver_options": (("--solver-option", "solver_options"), {
        "multiple": True, "metavar": "KEY=VALUE",
        "help": "solver option passed through to the solver (repeatable), e.g. max_iter=500"}),
    "ocp_options": (("--ocp-option", "ocp_options"), {
        "multiple": True, "metavar": "KEY=VALUE",
        "help": "another option of the optimal control problem (repeatable), e.g. "
                "adherence=squared, element_length=5, piecewise_constant_controls=true, "
                "K_delta=2; the list with defaults and units: pyomo-lap options, or the "
                "documentation's options page (docs/options.md)"}),
    "free": (("--free", "free"), {"multiple": True, "metavar": "NAME=LOWER:UPPER",
             "help": "optimize this parameter of the car with the trajectory, within the bounds "
                     "(repeatable; setup optimization), e.g. --free aero.Cz1=0.3:0.9 "
                     "--free powertrain.brake_ratio=0.5:0.95; the names: pyomo-lap vehicles "
                     "--template or the workbook's vehicle sheet"}),
    "keep_sum": (("--keep-sum", "keep_sum"), {"multiple": True, "metavar": "A,B[,...]",
                 "help": "hold the sum of these free parameters at its value (repeatable), e.g. "
                         "--keep-sum aero.Cz1,aero.Cz2: a fixed total downforce, a free balance"}),
    "limits": (("--limit", "limits"), {
        "multiple": True, "metavar": "NAME=VALUE",
        "help": "an energy limit over the sector (repeatable), e.g. engine_energy=24MJ, "
                "tyre_energy_fl=0.8MJ (units J, kJ, MJ, Wh, kWh; a bare number is J; names: "
                "docs/energy.md)"}),
    "n_sectors": (("--sectors", "n_sectors"), {}),
    # --warm-start-from: the name before issue 36, kept as an alias
    "warm_start_from": (("--warm-start", "--warm-start-from", "warm_start_from"),
                        {"metavar": "RUN"}),
    "track_width": (("--track-width", "track_width"), {"metavar": "METRES"}),
    "out_dir": (("--out", "out_dir"), {"type": click.Path(file_okay=False)}),
    # the command line streams the solver's iterations with -v/--verbose (added to every
    # command by _add_verbosity, at the end of this module); this entry names it in the tables
    "tee": (("--verbose", "verbose"), {}),
}


_NONE_WORDS = {"length": ("none", "all"), "nfe": ("none", "auto")}
"""The words (any case) the command line takes for an option's ``None``, besides ``none``
(``--length all``: the whole track from --start; ``--nfe auto``: the element length decides)."""


class _OrNone(click.ParamType):
    """The option's own type, or one of ``words`` (any case) for the API's ``None``: the
    command line's spelling of ``None`` (``--length all``, ``--nfe auto``, ``--out none``)."""

    def __init__(self, base, words):
        self.base = click.types.convert_type(base)
        self.words = tuple(words)
        self.name = f"{self.base.name} or {' or '.join(self.words)}"

    def get_metavar(self, param, ctx=None):      # click >= 8.2 passes ctx
        return f"{self.base.name.upper()}|{'|'.join(self.words)}"

    def convert(self, value, param, ctx):
        if value is None or (isinstance(value, str) and value.strip().lower() in self.words):
            return None
        return self.base.convert(value, param, ctx)


def _flag(name: str) -> str:
    return (_SPELLING[name][0][0].split("/")[0] if name in _SPELLING
            else "--" + name.replace("_", "-"))


def _click_type(cv):
    """The click type of a job option, from its domain (choices) or its default."""
    d = cv._domain
    if getattr(d, "cli_type", None) is not None:
        return d.cli_type
    choices = getattr(d, "choices", None) or getattr(d, "values", None)
    if choices:
        return click.Choice(list(choices))
    if isinstance(d, IntBetween):
        return int
    if isinstance(d, FiniteFloat):
        return float
    if isinstance(d, EntrySpeed) or d is str:
        return str
    return None


def job_options(*names, **defaults):
    """Decorator: the click options of the job options ``names``, derived from
    :data:`pyomo_lap.api.SOLVE_CONFIG` (the one declaration: default, type, choices, help);
    ``defaults`` overrides a default for one command (e.g. ``diagnose``'s short sector)."""

    def decorate(f):
        for name in reversed(names):
            cv = SOLVE_CONFIG.get(name)
            decls, extra = _SPELLING.get(name, (("--" + name.replace("_", "-"), name), {}))
            kw = {"help": " ".join((cv._description or "").split()), **extra}
            if isinstance(cv.value(), bool) and "is_flag" not in kw:
                kw["is_flag"] = True
            if not kw.get("is_flag") and not kw.get("multiple"):
                default = defaults.get(name, cv.value())
                kw.setdefault("type", _click_type(cv))
                kw["default"] = None if default is None else (str(default) if kw["type"] is str
                                                              else default)
                kw["show_default"] = default is not None
                if _takes_none(cv) and kw["type"] is not None:
                    words = ("none",) + tuple(w for w in _NONE_WORDS.get(name, ()) if w != "none")
                    kw["type"] = _OrNone(kw["type"], words)
                    kw["help"] += f"; on the command line: {' or '.join(words)}"
            f = click.option(*decls, **kw)(f)
        return f
    return decorate


def _input_files_exist(**given) -> None:
    """A track or vehicle given as a file (a suffix or a folder in its name; bundled ones are
    names) that is not there stops with exit 2 and the absolute path looked at: relative paths
    are the current folder's (``--vehicle mycar.toml``)."""
    for key, value in given.items():
        if not isinstance(value, str) or not value:
            continue
        path = Path(value).expanduser()
        if (path.suffix or "/" in value or os.sep in value) and not path.exists():
            _fail(f"{_flag(key)} {value}: {key} file not found (looked for {path.resolve()})")


def _takes_none(cv) -> bool:
    """Whether a job option's domain takes ``None`` (an optional number, a path or None)."""
    d = cv._domain
    return bool(getattr(d, "optional", False)) or isinstance(d, PathOrNone)


def _shown(value) -> str:
    """A value as the user typed it: numbers bare, other words quoted."""
    if isinstance(value, str):
        try:
            float(value)
            return value
        except ValueError:
            return repr(value)
    return f"{value:g}" if isinstance(value, float) else number_text(value)


def _full_lap_job(ctx, job: dict) -> dict:
    """``--full-lap``: the whole closed lap from the track's start (``start`` 0, no
    ``length``); given together with ``--start``, ``--length`` or ``--initial-speed`` it stops
    with exit 2. Returns ``job`` (changed in place)."""
    if job["periodic"]:
        given = [_flag(n) for n in ("start", "length", "initial_speed")
                 if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
        if given:
            _fail(f"--full-lap solves the whole closed lap; it cannot be combined with "
                  f"{', '.join(given)}")
        job.update(start=0.0, length=None)
    return job


def _solver_options_checked(solver: str, options: dict) -> dict:
    """The solver options checked against the solver's own option list
    (:func:`pyomo_lap.solvers.solve.check_solver_options`); a bad one stops with exit 2 and
    ``--solver-option KEY=VALUE: expected ...``, before anything is loaded or built."""
    try:
        return check_solver_options(solver, options)
    except SolverOptionError as exc:
        _fail(f"--solver-option {exc.key}={exc.value}: {exc.text}")


def _checked(values: dict):
    """The job's options checked one by one against SOLVE_CONFIG; a bad value stops with exit
    2 and ``--flag value: expected ...``."""
    try:
        return checked_job_options(values)
    except OptionValueError as exc:
        _fail(f"{_flag(exc.key)} {_shown(_bad_entry(exc))}: {exc.text}")


def _bad_entry(exc: OptionValueError):
    """The value of a refused option as the user typed it: of a repeatable option (a tuple,
    ``--limit a=1 --limit b=2``), the first entry the option refuses alone, else all of
    them, space-separated."""
    if not isinstance(exc.value, (list, tuple)):
        return exc.value
    for entry in exc.value:
        try:
            checked_job_options({exc.key: [entry]})
        except OptionValueError:
            return str(entry)
    return " ".join(str(v) for v in exc.value)

