"""Domains of configuration values (Pyomo ``ConfigValue(domain=...)``) with the messages a
user reads: each raises ``ValueError("expected ...")``, which the API and the CLI prefix with
the option's name and value (``--nfe 1: expected an integer between 2 and 100000``), and has a
``domain_name()`` for the generated option tables.
"""
from __future__ import annotations

import math
import numbers
from pathlib import Path

__all__ = ["IntBetween", "FloatBetween", "FiniteFloat", "EntrySpeed", "OneOf", "Anything", "DictOrNone", "PathOrNone",
           "error_text", "number_text"]


class IntBetween:
    """An integer ``lo <= x <= hi`` (``None`` too if ``optional``); a bool or a float with a
    fraction is refused."""

    def __init__(self, lo: int, hi: int, optional: bool = False):
        self.lo, self.hi, self.optional = lo, hi, optional

    def __call__(self, x):
        """The value ``x`` as an ``int`` (an integral float converted), or None if allowed.

        Raises
        ------
        ValueError
            ``expected an integer between LO and HI`` for anything else.
        """
        if x is None and self.optional:
            return None
        if isinstance(x, numbers.Integral) and not isinstance(x, bool) and self.lo <= x <= self.hi:
            return int(x)
        if isinstance(x, float) and x.is_integer() and self.lo <= x <= self.hi:
            return int(x)
        raise ValueError(f"expected an integer between {self.lo} and {self.hi}")

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md): ``int in [lo, hi]``."""
        return f"int in [{self.lo}, {self.hi}]" + (" or None" if self.optional else "")


def number_text(x, decimals: int = 1) -> str:
    """A number for a message, compact at any magnitude: fixed-point with ``decimals`` places
    below 1e9 (``1234.5``), else six significant digits (``1e+308``, not a 309-digit figure);
    an integer as it is up to 15 digits; anything else as ``repr``.

    Parameters
    ----------
    x : int, float or other
    decimals : int
        Places of the fixed-point form.
    """
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return repr(x)
    if isinstance(x, numbers.Integral):
        return str(int(x)) if abs(int(x)) < 10 ** 15 else f"{float(x):.6g}"
    v = float(x)
    return f"{v:.{decimals}f}" if math.isfinite(v) and abs(v) < 1e9 else f"{v:.6g}"


def _number(x, expected: str) -> float:
    """``float(x)``; a ValueError ``expected ...`` for what is not a number (a bool is one to
    Python: the domains refuse it themselves)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"expected {expected}") from None


class FloatBetween:
    """A number ``lo <= x < hi`` (a bool is refused), ``None`` too if ``optional``;
    ``expected`` is the message's text."""

    def __init__(self, lo: float, hi: float, expected: str, optional: bool = False):
        self.lo, self.hi, self.expected, self.optional = lo, hi, expected, optional

    def __call__(self, x):
        """The value ``x`` as a ``float`` (a number or its text), or None if allowed.

        Raises
        ------
        ValueError
            ``expected <expected>`` for a bool, a non-number or a number outside ``[lo, hi)``.
        """
        if x is None and self.optional:
            return None
        v = _number(x, self.expected)
        if isinstance(x, bool) or not (self.lo <= v < self.hi):
            raise ValueError(f"expected {self.expected}")
        return v

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md): ``float in [lo, hi)``."""
        return f"float in [{self.lo:g}, {self.hi:g})" + (" or None" if self.optional else "")


class FiniteFloat:
    """A finite number ``>= lo`` (``> lo`` if ``strict``), ``None`` too if ``optional``;
    ``expected`` is the message's text (e.g. ``"a positive, finite length in metres"``)."""

    def __init__(self, lo: float, strict: bool, expected: str, optional: bool = False):
        self.lo, self.strict, self.expected, self.optional = lo, strict, expected, optional

    def __call__(self, x):
        """The value ``x`` as a ``float`` (a number or its text), or None if allowed.

        Raises
        ------
        ValueError
            ``expected <expected>`` for a bool, a non-number, an infinite or NaN value, or one
            below ``lo`` (or equal to it if ``strict``).
        """
        if x is None and self.optional:
            return None
        v = _number(x, self.expected)
        if isinstance(x, bool) or not math.isfinite(v) or v < self.lo or (self.strict and v == self.lo):
            raise ValueError(f"expected {self.expected}")
        return v

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md): ``finite float >= lo``."""
        op = ">" if self.strict else ">="
        return f"finite float {op} {self.lo:g}" + (" or None" if self.optional else "")


class EntrySpeed:
    """``'quasi-steady'``, ``'free'`` or a positive, finite speed [m/s] (a number or its text)."""

    WORDS = ("quasi-steady", "free")

    def __call__(self, x):
        """One of :attr:`WORDS` as it is, or the speed as a ``float`` [m/s].

        Raises
        ------
        ValueError
            For another word, a bool, or a speed that is not positive and finite.
        """
        if isinstance(x, str) and x in self.WORDS:
            return x
        try:
            v = float(x)
        except (TypeError, ValueError):
            raise ValueError("expected a speed in m/s, 'quasi-steady' or 'free'") from None
        if isinstance(x, bool) or not (math.isfinite(v) and v > 0):
            raise ValueError("expected a positive speed in m/s, 'quasi-steady' or 'free'")
        return v

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md)."""
        return "'quasi-steady', 'free' or float > 0"


class OneOf:
    """One of the given values (a word list for the CLI's choices)."""

    def __init__(self, values):
        self.values = tuple(values)

    def __call__(self, x):
        """The value ``x`` if it is one of :attr:`values`.

        Raises
        ------
        ValueError
            ``expected one of 'a', 'b', ...`` otherwise.
        """
        if x in self.values:
            return x
        raise ValueError(f"expected one of {', '.join(map(repr, self.values))}")

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md): ``In[...]`` as Pyomo's ``In``."""
        return f"In{list(self.values)}"


class Anything:
    """Any value, checked later by the code that uses it (``what`` says what it may be)."""

    def __init__(self, what: str):
        self.what = what

    def __call__(self, x):
        """The value ``x`` unchanged."""
        return x

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md): the text ``what``."""
        return self.what


class DictOrNone:
    """A mapping ``{name: value}`` (copied) or None."""

    def __call__(self, x):
        """A copy of the dict ``x``, or None.

        Raises
        ------
        ValueError
            For anything that is not a ``dict`` or None.
        """
        if x is None:
            return None
        if not isinstance(x, dict):
            raise ValueError(f"expected a dict {{name: value}}, not {type(x).__name__}")
        return dict(x)

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md)."""
        return "dict or None"


class PathOrNone:
    """A filesystem path (``str`` or ``Path``, returned as ``Path``) or None."""

    def __call__(self, x):
        """The path ``x`` as a ``Path``, or None.

        Raises
        ------
        ValueError
            For an empty string or anything that is not a ``str`` or ``Path``.
        """
        if x is None:
            return None
        if not isinstance(x, (str, Path)) or not str(x):
            raise ValueError(f"expected a folder path, not {x!r}")
        return Path(x)

    def domain_name(self) -> str:
        """The domain in the option tables (docs/options.md)."""
        return "Path or None"


def error_text(exc: BaseException) -> str:
    """The domain's own message out of the ``ValueError`` Pyomo's ``ConfigValue`` raises
    (which wraps it in several lines: ``invalid value for configuration ... Error: <text>``)."""
    text = str(exc).strip().splitlines()[-1].strip() if str(exc).strip() else type(exc).__name__
    return text[len("Error:"):].strip() if text.startswith("Error:") else text
