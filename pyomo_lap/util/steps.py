"""The finest fixed step a table of channels may be written on: one rule for ``solve
--every``, ``export --every`` and ``compare --every`` (:func:`check_step`).

A step far below the spacing of the points a run was solved on adds no information (the
channels between two points are interpolated from the same few values) but makes rows without
bound: ``--every 1e-9`` on a 150 m sector asks for 1.5e11 rows (1 TiB for one column). The
rule: at most :data:`ROWS_PER_INTERVAL` rows per interval of the run's mesh (per element for
``solve`` and ``export``, per row of the trajectory for ``compare``), i.e. a step of at least
``span / (ROWS_PER_INTERVAL * intervals)``.
"""
from __future__ import annotations

import math

__all__ = ["ROWS_PER_INTERVAL", "finest_step", "check_step"]

ROWS_PER_INTERVAL = 100
"""The most rows of a fixed-step table per interval of the mesh it is interpolated from [-]."""


def finest_step(span: float, intervals: int) -> float:
    """The finest step allowed on ``intervals`` intervals covering ``span``.

    Parameters
    ----------
    span : float
        The length [m] (or duration [s]) covered.
    intervals : int
        The number of intervals of the mesh over it (elements, or rows minus one).

    Returns
    -------
    float
        ``span / (ROWS_PER_INTERVAL * intervals)``, in the unit of ``span``.
    """
    return float(span) / (ROWS_PER_INTERVAL * max(int(intervals), 1))


def check_step(step: float, span: float, intervals: int, *, option: str = "--every",
               unit: str = "m", of: str = "the run's mesh") -> None:
    """Refuse a step finer than :func:`finest_step` (or not finite and positive).

    Parameters
    ----------
    step : float
        The step asked for [m] (or [s]).
    span, intervals :
        As :func:`finest_step`.
    option : str
        The option named in the message.
    unit : str
        The unit of ``step`` and ``span`` in the message (``m`` or ``s``).
    of : str
        What the intervals are, for the message.

    Raises
    ------
    ValueError
        One line: the option, the value and the finest step allowed.
    """
    if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise ValueError(f"{option} {step!r}: expected a finite step > 0 {unit}")
    low = finest_step(span, intervals)
    if step < low * (1 - 1e-9):
        raise ValueError(f"{option} {step:g} {unit}: expected a step of at least {low:.3g} {unit} "
                         f"(at most {ROWS_PER_INTERVAL} rows per interval of {of}: "
                         f"{int(intervals)} intervals over {span:g} {unit}); a finer step adds "
                         f"no information, only rows")
