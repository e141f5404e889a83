"""What the figures of :mod:`pyomo_lap.plots.figures` share: names drawn as literal text, titles,
the track coordinate ``s`` of a run, the distance window ``--range A:B`` (:func:`parse_range`,
:func:`resolve_range`, :func:`in_window`), axis limits, colour bars and legends outside the
axes."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from pyomo.common.dependencies import attempt_import

from ..results.summary import Summary, as_summary

# matplotlib is imported when a figure is drawn, not with the package: `import pyomo_lap`
# 2.5 s -> 2.15 s, for every command that draws nothing
axes_grid1, axes_grid1_available = attempt_import("mpl_toolkits.axes_grid1")

__all__ = ["RANGE_HELP", "parse_range", "resolve_range", "in_window"]


def _literal(name) -> str:
    r"""A name (of a vehicle, a track, a folder) as text to draw literally in a title or a
    legend: its ``$`` escaped, so that matplotlib does not parse it as mathtext (a name such as
    ``car $\frac{1}{$`` would stop the figure)."""
    return str(name).replace("$", r"\$")


def _title(ax, summary: Summary, what: str) -> None:
    """``what`` over the run's car, track, sector and time (a summary not holding them:
    ``?``, 0 m, NaN s)."""
    s = as_summary(summary)
    run = (f"{_literal(_or(s.vehicle, '?'))} on {_literal(_or(s.track, '?'))}, "
           f"{_or(s.start_m, 0):.0f}+{_or(s.length_m, 0):.0f} m, "
           f"t = {_or(s.lap_time_s, float('nan')):.3f} s")
    ax.set_title(f"{what}\n{run}", fontsize=10)


def _or(value, default):
    """``value``, or ``default`` when it is None (a key the summary does not hold)."""
    return default if value is None else value


def _s(df: pd.DataFrame) -> np.ndarray:
    """Unwrapped track coordinate [m] (a sector may pass the start line of a closed track):
    ``s`` at the run's start plus ``s_sector`` (for the rows of a window, :func:`in_window`,
    the run's start is kept in ``df.attrs["s_origin"]``)."""
    origin = df.attrs.get("s_origin")
    if origin is None:
        origin = float(df["s"].iloc[0]) - float(df["s_sector"].iloc[0])
    return origin + df["s_sector"].to_numpy(dtype=float)


# --------------------------------------------------------------------------------------------
# a distance window (--range A:B)
# --------------------------------------------------------------------------------------------

RANGE_HELP = ("A:B in metres of track coordinate s, as on the figures' horizontal axes "
              "(e.g. 1200:1800, :800 or 1200:)")


def parse_range(text, name: str = "--range") -> Optional[tuple]:
    """Read a distance window ``"A:B"`` [m] of track coordinate ``s``.

    Parameters
    ----------
    text : str, (A, B) or None
        ``"1200:1800"``, with open ends ``":800"`` (from the start of the run) and
        ``"1200:"`` (to its end); or a pair of numbers or None. None (or ``":"``): no window.
    name : str
        How the value is named in an error message (``--range`` on the command line,
        ``s_range`` in Python).

    Returns
    -------
    (A, B) or None
        The window's ends [m] (None for an open end), or None for no window.

    Raises
    ------
    ValueError
        Not ``A:B`` with numbers, a value that is not finite, or ``A >= B``; one line naming
        the value and what was expected.
    """
    if text is None:
        return None
    if isinstance(text, str):
        parts = text.strip().split(":")
        if len(parts) != 2:
            raise ValueError(f"{name} {text!r}: expected {RANGE_HELP}")
        ends = []
        for part in parts:
            part = part.strip()
            if not part:
                ends.append(None)
                continue
            try:
                ends.append(float(part))
            except ValueError:
                raise ValueError(f"{name} {text!r}: {part!r} is not a number; expected "
                                 f"{RANGE_HELP}") from None
        a, b = ends
    else:
        try:
            a, b = text
            a = None if a is None else float(a)
            b = None if b is None else float(b)
        except (TypeError, ValueError):
            raise ValueError(f"{name} = {text!r}: expected {RANGE_HELP}, or a pair (A, B) of "
                             "numbers or None") from None
        text = f"{'' if a is None else f'{a:g}'}:{'' if b is None else f'{b:g}'}"
    for v in (a, b):
        if v is not None and not np.isfinite(v):
            raise ValueError(f"{name} {text!r}: expected finite distances, {RANGE_HELP}")
    if a is not None and b is not None and not a < b:
        raise ValueError(f"{name} {text!r}: expected A:B with A < B (the window's start "
                         "before its end), in metres of track coordinate s")
    if a is None and b is None:
        return None
    return (a, b)


def resolve_range(df: pd.DataFrame, s_range, name: str = "--range") -> Optional[tuple]:
    """The window ``s_range`` (see :func:`parse_range`) checked against a run.

    Parameters
    ----------
    df : DataFrame
        The run's channels (``s``, ``s_sector``).
    s_range : str, (A, B) or None
        The window [m] of track coordinate ``s`` as on the horizontal axes (``s`` of the
        first point plus ``s_sector``: past the start line of a closed track it counts on).
    name : str
        How the value is named in an error message.

    Returns
    -------
    (A, B) or None
        Both ends [m], open ends replaced by the run's first and last ``s``.

    Raises
    ------
    ValueError
        Bad text (:func:`parse_range`), or a window that is not within the run (the
        message gives the run's extent).
    """
    win = parse_range(s_range, name)
    if win is None:
        return None
    s = _s(df)
    lo, hi = float(s[0]), float(s[-1])
    a = lo if win[0] is None else win[0]
    b = hi if win[1] is None else win[1]
    tol = 1e-6 * max(1.0, hi - lo)
    if a < lo - tol or b > hi + tol or not a < b:
        shown = s_range if isinstance(s_range, str) else f"{win[0]}:{win[1]}"
        raise ValueError(f"{name} {shown!r}: outside the run; expected a window within its "
                         f"{lo:.1f}:{hi:.1f} m of track coordinate s")
    return (max(a, lo), min(b, hi))


def in_window(df: pd.DataFrame, s_range) -> tuple:
    """The rows of ``df`` in the window, with one point more on each side (so that the lines
    reach the window's edges), and the window.

    Returns
    -------
    (DataFrame, (A, B) or None)
        The whole ``df`` and None when there is no window.
    """
    win = resolve_range(df, s_range)
    if win is None:
        return df, None
    s = _s(df)
    lo = max(int(np.searchsorted(s, win[0], side="right")) - 1, 0)
    hi = min(int(np.searchsorted(s, win[1], side="left")) + 1, len(s))
    sub = df.iloc[lo:hi]
    if len(sub) < 2:
        sub = df.iloc[max(lo - 1, 0):max(lo - 1, 0) + 2]
    sub = sub.copy()
    sub.attrs["s_origin"] = float(s[0] - df["s_sector"].iloc[0])
    return sub, win


def _xlim(ax, win) -> None:
    """Limit a distance axis to the window [m] (nothing without one)."""
    if win is not None:
        ax.set_xlim(*win)


def _window_text(win) -> str:
    return "" if win is None else f", window s = {win[0]:.0f}-{win[1]:.0f} m"


def _colorbar_beside(fig, ax, mappable, label: str):
    """A colour bar as tall as the axes (also of an axes drawn to an equal aspect)."""
    cax = axes_grid1.make_axes_locatable(ax).append_axes("right", size="3%", pad=0.1)
    return fig.colorbar(mappable, cax=cax, label=label)


def _legend_right(ax, **kw):
    """A legend outside the axes, to their right (it never covers the data)."""
    kw.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                     framealpha=0.9, **kw)
