"""Progress reporting for the long steps (model build, channel evaluation, export).

A *progress callback* is any callable ``progress(label, done, total)``: ``label`` names the
step (``"building the model"``, ``"evaluating the channels"``), ``done`` of ``total`` items
are finished. :func:`pyomo_lap.ocp.build.build_model`, :func:`pyomo_lap.results.table.trajectory_dataframe`
and :func:`pyomo_lap.api.solve_sector` accept one. The solver's iterations are streamed by the
solver itself (``tee=True``), or summed up in one line by :class:`IterationProgress`.

Two ready-made callbacks:

* :func:`echo_progress` - a line at every quarter through any ``echo`` function (``print``,
  a logger), for scripts and notebooks;
* :func:`click_progress` - a terminal progress bar (click), used by the ``pyomo-lap`` command.
"""
from __future__ import annotations

import sys
import time
from typing import Callable

import click

__all__ = ["echo_progress", "click_progress", "IterationProgress"]


def echo_progress(echo: Callable[[str], None] = print, steps: int = 4):
    """A progress callback that reports every ``1/steps`` of each step through ``echo``.

    Parameters
    ----------
    echo : callable
        Receives one string per report, e.g. ``"  building the model: 50 % (61/121 points, 1.2 s)"``.
    steps : int
        Reports per step (>= 1).

    Raises
    ------
    ValueError
        ``steps`` < 1.
    """
    if steps < 1:
        raise ValueError(f"steps = {steps!r}: expected an integer >= 1")
    state = {}

    def progress(label: str, done: int, total: int) -> None:
        t0, last = state.get(label, (time.perf_counter(), -1))
        if done <= 1 or label not in state:
            t0, last = time.perf_counter(), -1
        quarter = (done * steps) // max(total, 1)
        if quarter > last:
            if quarter > 0:
                echo(f"  {label}: {100 * done // max(total, 1)} % ({done}/{total} points, "
                     f"{time.perf_counter() - t0:.1f} s)")
            last = quarter
        state[label] = (t0, last)

    return progress


def click_progress():
    """A progress callback drawing one click progress bar per step (on a terminal; elsewhere
    click prints the label once)."""
    bars = {}

    def progress(label: str, done: int, total: int) -> None:
        bar = bars.get(label)
        if bar is None or done <= 1 and bar.pos > 1:
            bar = click.progressbar(length=total, label=f"  {label}", show_pos=True, show_eta=True)
            bar.__enter__()
            bars[label] = bar
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    return progress


class IterationProgress:
    """One line about the solver's progress, updated at most every ``interval_s`` seconds:
    the iteration, the objective, the primal infeasibility (of the unscaled problem, where
    given: ``inf_pr_unscaled``) and dual infeasibility (of the scaled problem), as the columns
    ``inf_pr`` and ``inf_du`` of IPOPT's iteration table, and the time since IPOPT's iteration
    0, e.g. ``"  IPOPT iteration 12: objective 7.4512, primal inf. 3.1e-04, dual
    inf. 2.0e-02, 1.3 s"``.

    Give it as the ``intermediate`` callback of a solve (``solve_sector(...,
    on_iteration=IterationProgress())``; :class:`pyomo_lap.solvers.lap.solver.LapIpopt`'s
    ``intermediate``): it is called with IPOPT's ``info`` dict at every iteration
    (``iter_count``, ``obj_value``, ``inf_pr``, ``inf_du``, ...) and :meth:`finish` when the
    solve ends; it never stops the solve (returns True).

    On a terminal (``tty=True``) the line is rewritten in place (a carriage return, the text,
    ``ESC[K`` to clear the rest of the line) and ends with a newline at :meth:`finish`; else
    each update is a line of its own (a log file).

    Parameters
    ----------
    write : callable, optional
        Receives the text to print (default: ``sys.stderr.write``, flushed: standard output
        stays the command's).
    tty : bool, optional
        Rewrite one line in place (default: whether ``sys.stderr`` is a terminal).
    interval_s : float
        Fewest seconds between two updates (> 0); the first iteration is always shown.
    clock : callable
        The time in seconds (default :func:`time.monotonic`; a test gives a fake one).

    Raises
    ------
    ValueError
        ``interval_s`` <= 0.
    """

    def __init__(self, write: Callable[[str], None] | None = None, tty: bool | None = None,
                 interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        if not interval_s > 0:
            raise ValueError(f"interval_s = {interval_s!r}: expected a number of seconds > 0")
        if write is None:
            def write(text: str, _stream=sys.stderr) -> None:
                _stream.write(text)
                _stream.flush()
        self.write, self.interval_s, self.clock = write, float(interval_s), clock
        self.tty = bool(sys.stderr.isatty()) if tty is None else bool(tty)
        self.t0 = self.shown_at = self.shown_iter = None
        self.last = None          # the last iteration's info (shown or not)
        self.lines = 0            # updates written

    @staticmethod
    def text(info: dict, elapsed_s: float) -> str:
        """The line for one iteration's ``info`` at ``elapsed_s`` seconds (no line end)."""
        restoration = " (restoration)" if info.get("alg_mod") == 1 else ""
        return (f"  IPOPT iteration {info['iter_count']}{restoration}: objective "
                f"{info['obj_value']:.6g}, primal inf. "
                f"{info.get('inf_pr_unscaled', info['inf_pr']):.1e}, dual inf. "
                f"{info['inf_du']:.1e}, {elapsed_s:.1f} s")

    def _show(self, now: float) -> None:
        line = self.text(self.last, now - self.t0)
        self.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        self.shown_at, self.shown_iter, self.lines = now, self.last["iter_count"], self.lines + 1

    def __call__(self, info: dict) -> bool:
        """Take one IPOPT iteration's ``info`` (the intermediate callback's dict: ``iter_count``,
        ``obj_value``, ``inf_pr``, ``inf_du``, ``alg_mod`` ...) and show it if
        :attr:`interval_s` seconds have passed since the last line shown (always the first
        iteration of a solve; an iteration count that falls starts a new solve on a new line).

        Returns
        -------
        bool
            True: the solve goes on.
        """
        now = self.clock()
        if self.t0 is None or (self.last is not None
                               and info["iter_count"] < self.last["iter_count"]):
            self.finish()                     # a new solve: a line of its own
            self.t0, self.shown_at = now, None
        self.last = dict(info)
        if self.shown_at is None or now - self.shown_at >= self.interval_s:
            self._show(now)
        return True

    def finish(self) -> None:
        """The solve ended: show its last iteration (if not shown yet) and end the line."""
        if self.last is None:
            return
        if self.shown_iter != self.last["iter_count"]:
            self._show(self.clock())
        if self.tty:
            self.write("\n")
        self.last = self.t0 = self.shown_at = self.shown_iter = None
