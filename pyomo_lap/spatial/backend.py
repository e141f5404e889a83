"""Scalar arithmetic shared by the float, Pyomo and CasADi evaluations of the model.

Every algorithm of :mod:`pyomo_lap.spatial.lie`, :mod:`pyomo_lap.spatial.tree` and :mod:`pyomo_lap.vehicle.car`
is written once over "scalars" that may be Python/NumPy floats, Pyomo expressions or CasADi
symbols. The helpers below keep the expression trees small: a literal ``0`` is a
*structural zero* that is never multiplied or added into an expression, and a literal
``1`` is never multiplied.

Elementary functions (:func:`sin`, :func:`cos`, :func:`atan`, :func:`sqrt`) dispatch on
the type of their argument: :mod:`math` for numbers, NumPy for NumPy arrays (many points at
once), CasADi for CasADi symbols, Pyomo's intrinsic functions otherwise.
"""
from __future__ import annotations

import math
import numbers

import numpy
import pyomo.environ as pyo
from pyomo.common.dependencies import attempt_import

casadi, casadi_available = attempt_import("casadi")

__all__ = [
    "is_zero", "is_one", "is_number", "mul", "add", "sub", "neg", "total",
    "sin", "cos", "atan", "sqrt", "tanh",
]


_NUMERIC_TYPE = {int: True, float: True, bool: True}
"""Cache ``type -> isinstance(x, numbers.Number)``: the ABC check is slow and these helpers
run hundreds of thousands of times per float evaluation of the car (simulation, defects)."""


def is_number(x) -> bool:
    """True for a plain numeric constant (Python or NumPy scalar)."""
    t = type(x)
    r = _NUMERIC_TYPE.get(t)
    if r is None:
        r = _NUMERIC_TYPE[t] = isinstance(x, numbers.Number)
    return r


def is_zero(x) -> bool:
    """True for a numeric constant equal to zero (a structural zero)."""
    return is_number(x) and x == 0


def is_one(x) -> bool:
    """True for a numeric constant equal to one."""
    return is_number(x) and x == 1


def mul(a, b):
    """Product that skips structural zeros and unit factors."""
    if is_zero(a) or is_zero(b):
        return 0
    if is_one(a):
        return b
    if is_one(b):
        return a
    if is_number(a) and a == -1:
        return -b
    if is_number(b) and b == -1:
        return -a
    return a * b


def add(a, b):
    """Sum that skips structural zeros."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return a + b


def neg(a):
    """Negation that keeps a structural zero a zero."""
    return 0 if is_zero(a) else -a


def sub(a, b):
    """Difference that skips structural zeros."""
    if is_zero(b):
        return a
    if is_zero(a):
        return -b
    return a - b


def total(terms):
    """Sum of an iterable, skipping structural zeros; ``0`` when nothing is left."""
    nz = [t for t in terms if not is_zero(t)]
    if not nz:
        return 0
    numeric = [t for t in nz if is_number(t)]
    symbolic = [t for t in nz if not is_number(t)]
    c = float(sum(numeric)) if numeric else 0.0
    if not symbolic:
        return c
    out = symbolic[0]
    for t in symbolic[1:]:
        out = out + t
    return out + c if c != 0.0 else out


def _dispatch(name, x):
    if is_number(x):
        return getattr(math, name)(x)
    tape_function = getattr(x, "tape_function", None)
    if tape_function is not None:      # a pyomo_lap.spatial.tape.Node being recorded
        return tape_function(name)
    mod = type(x).__module__
    if mod == "numpy":                 # an array: elementwise

        return getattr(numpy, {"atan": "arctan"}.get(name, name))(x)
    if mod.startswith("casadi"):

        return getattr(casadi, name)(x)

    return getattr(pyo, name)(x)


def sin(x):
    """Sine of a number, NumPy array, Pyomo expression or CasADi symbol."""
    return _dispatch("sin", x)


def cos(x):
    """Cosine of a number, NumPy array, Pyomo expression or CasADi symbol."""
    return _dispatch("cos", x)


def atan(x):
    """Arc tangent of a number, NumPy array, Pyomo expression or CasADi symbol."""
    return _dispatch("atan", x)


def sqrt(x):
    """Square root of a number, NumPy array, Pyomo expression or CasADi symbol."""
    return _dispatch("sqrt", x)


def tanh(x):
    """Hyperbolic tangent of a number, NumPy array, Pyomo expression or CasADi symbol."""
    return _dispatch("tanh", x)
