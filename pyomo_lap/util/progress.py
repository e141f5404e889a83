"""Progress reporting for the long steps (model build, channel evaluation, export).

A *progress callback* is any callable ``progress(label, done, total)``: ``label`` names the
step (``"building the model"``, ``"evaluating the channels"``), ``done`` of ``total`` items
are finished. :func:`pyomo_lap.ocp.build.build_model`, :func:`pyomo_lap.post.results.trajectory_dataframe`
and :func:`pyomo_lap.api.solve_sector` accept one. The solver's iterations are streamed by the
solver itself (``tee=True``).

Two ready-made callbacks:

* :func:`echo_progress` - a line at every quarter through any ``echo`` function (``print``,
  a logger), for scripts and notebooks;
* :func:`click_progress` - a terminal progress bar (click), used by the ``pyomo-lap`` command.
"""
from __future__ import annotations

import time
from typing import Callable

__all__ = ["echo_progress", "click_progress"]


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
    import click
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
