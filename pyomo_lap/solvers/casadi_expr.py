"""Pyomo expressions converted into CasADi expressions (or evaluated with floats).

:func:`pyomo_to_casadi` is the walker the fast solver path (:mod:`pyomo_lap.solvers.lap.nlp`) uses for
every row and objective it does not take from the recorded per-point functions, and that the
CasADi twin (:mod:`pyomo_lap.solvers.casadi_ocp`) uses for the same rows. CasADi is imported only
inside the functions of this module.
"""
from __future__ import annotations

from typing import Optional

import pyomo.environ as pyo
from pyomo.common.dependencies import attempt_import
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.expr import numeric_expr as ne

casadi, casadi_available = attempt_import("casadi")

__all__ = ["pyomo_to_casadi", "walk_dag"]


def _casadi():
    """The :mod:`casadi` module (a dependency of pyomo_lap), imported on first use.

    Raises
    ------
    ImportError
        casadi is not installed (the message says what to install).
    """
    if not casadi_available:
        raise ImportError("this needs casadi, a dependency of pyomo_lap: pip install casadi")
    return casadi


# --------------------------------------------------------------------------------------------
# Pyomo expression -> CasADi (or float) conversion
# --------------------------------------------------------------------------------------------

def pyomo_to_casadi(expr, leaf, cache: Optional[dict] = None, functions=None):
    """Convert a Pyomo expression into a CasADi expression (or a float).

    Walks the expression without recursion; each node (a named ``Expression`` or a
    subexpression object shared by several parents) is converted once and reused
    (``cache``), so the expression DAG costs linear time (Pyomo's own ``value()`` re-evaluates
    a shared node at each use).

    Parameters
    ----------
    expr : Pyomo expression, variable or number
    leaf : callable
        ``leaf(var_data)`` returning the stand-in of an (unfixed or fixed) variable.
    cache : dict, optional
        ``id(expression node) -> (node, converted value)``, shared between calls.
    functions : module, optional
        Where the intrinsic functions (``sin``, ``cos``, ``atan``, ``sqrt``, ``exp`` ...) are
        taken from: ``casadi`` (default) or :mod:`math` (float evaluation).

    Returns
    -------
    casadi.SX, casadi.MX or float

    Raises
    ------
    NotImplementedError
        For an expression node without a CasADi counterpart (e.g. ``Expr_if``).
    """
    if functions is None:
        functions = _casadi()
    cache = {} if cache is None else cache
    fabs = getattr(functions, "fabs", abs)
    if getattr(functions, "__name__", "") != "casadi":
        def add_all(vals):
            return sum(vals)
    else:
        ca = functions

        def add_all(vals):
            sym = [v for v in vals if not isinstance(v, (int, float))]
            const = sum(v for v in vals if isinstance(v, (int, float)))
            if not sym:
                return const
            out = ca.sum1(ca.vertcat(*sym)) if len(sym) > 1 else sym[0]
            return out + const if const else out

    binary = {ne.ProductExpression: lambda a: a[0] * a[1],
              ne.MonomialTermExpression: lambda a: a[0] * a[1],
              ne.DivisionExpression: lambda a: a[0] / a[1],
              ne.PowExpression: lambda a: a[0] ** a[1],
              ne.NegationExpression: lambda a: -a[0],
              ne.SumExpression: add_all, ne.LinearExpression: add_all}

    def convert(node, vals):
        t = type(node)
        f = binary.get(t)
        if f is not None:
            return f(vals)
        if node.is_named_expression_type():
            return vals[0]
        if isinstance(node, ne.AbsExpression):
            return fabs(vals[0])
        if isinstance(node, ne.UnaryFunctionExpression):
            name = node.getname()
            fn = getattr(functions, name, None)
            if fn is None:
                raise NotImplementedError(f"function {name!r} has no counterpart in "
                                          f"{getattr(functions, '__name__', functions)}")
            return fn(vals[0])
        try:
            return node._apply_operation(vals)
        except Exception as exc:
            raise NotImplementedError(f"cannot convert the Pyomo node {type(node).__name__} "
                                      f"({node}) : {exc}") from exc

    def leaf_value(e):
        if type(e) in native_numeric_types:
            return e
        if e.is_variable_type():
            return leaf(e)
        return pyo.value(e)    # Param, constant component

    return walk_dag(expr, leaf_value, convert, cache)


def walk_dag(expr, leaf_value, convert, cache: dict):
    """Post-order walk of a Pyomo expression DAG that visits each node once.

    Parameters
    ----------
    expr : Pyomo expression, variable, parameter or number
    leaf_value : callable
        ``leaf_value(x)`` for a number, variable or parameter (a non-expression).
    convert : callable
        ``convert(node, values of its arguments)`` for an expression node.
    cache : dict
        ``id(node) -> (node, value)``, shared between calls at the same leaf values; every
        node is kept with its value (a temporary node, such as a constraint body built on
        access, could otherwise be freed and its id reused).

    Returns
    -------
    The value of ``expr``. Iterative (no recursion limit on deep expressions).
    """
    if type(expr) in native_numeric_types or not expr.is_expression_type():
        return leaf_value(expr)
    hit = cache.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    stack = [[expr, expr.args, []]]      # a frame: [node, its arguments, values so far]
    while True:
        node, args, vals = stack[-1]
        k = len(vals)
        if k < len(args):
            child = args[k]
            if type(child) in native_numeric_types or not child.is_expression_type():
                vals.append(leaf_value(child))
                continue
            hit = cache.get(id(child))
            if hit is not None and hit[0] is child:
                vals.append(hit[1])
            else:
                stack.append([child, child.args, []])
            continue
        stack.pop()
        result = convert(node, vals)
        cache[id(node)] = (node, result)
        if not stack:
            return result
        stack[-1][2].append(result)
