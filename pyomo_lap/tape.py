r"""Record the car equations once as a tape, replay it at every point of the mesh.

The model code (:mod:`pyomo_lap.lie`, :mod:`pyomo_lap.chain`, :mod:`pyomo_lap.vehicle`) is
written once over "scalars" (:mod:`pyomo_lap.backend`). Run on Pyomo variables it builds an
expression *tree* per point: a subexpression used twice (``cos(q5)`` inside every entry of
an adjoint map, say) is written twice into the NL file and evaluated, differentiated and
twice-differentiated twice by the AMPL solver library, unless it happens to be a named
``Expression``.

This module runs the same code once on :class:`Node` symbols (a small symbolic type that
hash-conses: the same operation on the same arguments returns the same node, so the trace is
a DAG with common subexpressions merged), counts how often every node is used, and then
*replays* the tape at each point with the backend's operations on Pyomo variables and the
numbers of the track at that point:

* a node tagged by the model code's ``namer`` becomes the named ``Expression``
  ``m.car.<tag>[s]`` (as before: ``m.car.qdd1[s]``, ``m.car.W3J_2[s]`` ...);
* any other node used more than once becomes ``m.car.cse[s, k]`` (common subexpression ``k``);
* structural zeros of the point (a flat track has ``Omega_x = 0``) still fold away, because
  the replay goes through :func:`pyomo_lap.backend.mul` and friends.

The same tape evaluates with NumPy arrays over all points at once (:meth:`Tape.evaluate`).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from . import backend as bk

__all__ = ["Node", "Tape", "record"]

_COMMUTATIVE = {"add", "mul"}
_FUNCS = ("sin", "cos", "atan", "sqrt", "tanh")


class Node:
    """A symbol of a recording (see :class:`Tape`). Arithmetic builds new nodes."""

    __slots__ = ("tape", "op", "args", "index", "__weakref__")

    def __init__(self, tape, op, args, index):
        self.tape, self.op, self.args, self.index = tape, op, args, index

    # arithmetic -------------------------------------------------------------------------
    def __add__(self, o):
        return self.tape.op("add", self, o)

    def __radd__(self, o):
        return self.tape.op("add", o, self)

    def __sub__(self, o):
        return self.tape.op("sub", self, o)

    def __rsub__(self, o):
        return self.tape.op("sub", o, self)

    def __mul__(self, o):
        return self.tape.op("mul", self, o)

    def __rmul__(self, o):
        return self.tape.op("mul", o, self)

    def __truediv__(self, o):
        return self.tape.op("div", self, o)

    def __rtruediv__(self, o):
        return self.tape.op("div", o, self)

    def __pow__(self, o):
        return self.tape.op("pow", self, o)

    def __neg__(self):
        return self.tape.op("neg", self)

    def __pos__(self):
        return self

    def tape_function(self, name):
        """Elementary function ``name`` (sin, cos, atan, sqrt, tanh) of this node."""
        return self.tape.op(name, self)

    def __repr__(self):
        return f"Node({self.op}#{self.index})"


def _key(a):
    return ("n", a.index) if isinstance(a, Node) else ("c", float(a))


@dataclass
class Tape:
    """A recorded computation: inputs, operations (a DAG in topological order), outputs.

    Attributes
    ----------
    nodes : list of Node
        Inputs (``op == "input"``) and operations, each after its arguments.
    tags : dict
        ``node index -> tag`` for nodes the model code named (first tag wins).
    uses : list of int
        Number of references to each node (from other nodes and from the outputs).
    """
    nodes: List[Node] = field(default_factory=list)
    memo: Dict[tuple, Node] = field(default_factory=dict)
    tags: Dict[int, str] = field(default_factory=dict)
    uses: List[int] = field(default_factory=list)
    input_names: List[str] = field(default_factory=list)

    def input(self, name: str) -> Node:
        n = Node(self, "input", (name,), len(self.nodes))
        self.nodes.append(n)
        self.input_names.append(name)
        return n

    def op(self, op: str, *args):
        # constant folding and the structural rules of the backend
        if all(isinstance(a, numbers.Number) for a in args):
            return _NUMERIC[op](*args)
        if op == "neg" and isinstance(args[0], Node) and args[0].op == "neg":
            return args[0].args[0]
        if op == "mul":
            a, b = args
            if isinstance(b, numbers.Number):
                a, b = b, a
            if isinstance(a, numbers.Number):
                if a == 0:
                    return 0
                if a == 1:
                    return b
                if a == -1:
                    return self.op("neg", b)
                if b.op == "mul" and isinstance(b.args[0], numbers.Number):
                    return self.op("mul", a * b.args[0], b.args[1])
            args = (a, b)
        elif op == "add":
            a, b = args
            if isinstance(a, numbers.Number) and a == 0:
                return b
            if isinstance(b, numbers.Number) and b == 0:
                return a
        elif op == "sub":
            a, b = args
            if isinstance(b, numbers.Number) and b == 0:
                return a
            if isinstance(a, numbers.Number) and a == 0:
                return self.op("neg", b)
        elif op == "div":
            a, b = args
            if isinstance(a, numbers.Number) and a == 0:
                return 0
            if isinstance(b, numbers.Number):
                return self.op("mul", 1.0 / b, a)
        keys = tuple(_key(a) for a in args)
        if op in _COMMUTATIVE:
            keys = tuple(sorted(keys))
        k = (op,) + keys
        node = self.memo.get(k)
        if node is None:
            node = Node(self, op, tuple(args), len(self.nodes))
            self.nodes.append(node)
            self.memo[k] = node
        return node

    def tag(self, tag: str, value):
        """Namer callback for the model code: remember the tag of a node."""
        if isinstance(value, Node) and value.op != "input":
            self.tags.setdefault(value.index, tag)
        return value

    def count_uses(self, outputs: Sequence) -> None:
        """Count references to every node from the live part of the DAG and the outputs."""
        uses = [0] * len(self.nodes)
        live = [False] * len(self.nodes)
        stack = [o.index for o in outputs if isinstance(o, Node)]
        for i in stack:
            uses[i] += 1
        while stack:
            i = stack.pop()
            if live[i]:
                continue
            live[i] = True
            for a in self.nodes[i].args if self.nodes[i].op != "input" else ():
                if isinstance(a, Node):
                    uses[a.index] += 1
                    if not live[a.index]:
                        stack.append(a.index)
        self.uses = uses
        self.live = live

    # replay --------------------------------------------------------------------------------
    def replay(self, inputs: Dict[str, object], outputs: Sequence,
               name: Optional[Callable] = None, share: Optional[Callable] = None,
               shared: Optional[set] = None) -> list:
        """Evaluate the live part of the tape with the backend's operations.

        Parameters
        ----------
        inputs : dict
            ``input name -> value`` (Pyomo variables, numbers, or NumPy arrays).
        outputs : sequence
            Nodes (or constants) to return.
        name : callable, optional
            ``name(tag, value) -> value``, called for tagged nodes (the namer of the model).
        share : callable, optional
            ``share(index, value) -> value``, called for the untagged nodes in ``shared``
            (default: every untagged node used more than once).
        shared : set of int, optional

        Returns
        -------
        list
            The values of ``outputs``.
        """
        vals = [None] * len(self.nodes)
        for i, node in enumerate(self.nodes):
            if not self.live[i]:
                continue
            if node.op == "input":
                vals[i] = inputs[node.args[0]]
                continue
            args = [vals[a.index] if isinstance(a, Node) else a for a in node.args]
            v = _BACKEND[node.op](*args)
            if not bk.is_number(v):
                tag = self.tags.get(i)
                if tag is not None and name is not None:
                    v = name(tag, v)
                elif share is not None and (i in shared if shared is not None
                                            else self.uses[i] > 1 and node.op != "neg"):
                    v = share(i, v)
            vals[i] = v
        return [vals[o.index] if isinstance(o, Node) else o for o in outputs]

    def evaluate(self, inputs: Dict[str, object], outputs: Sequence, tagged: bool = False):
        """Evaluate with numbers or NumPy arrays (vectorized over points).

        Parameters
        ----------
        inputs : dict
            ``input name -> number or array`` (arrays of one shape, one entry per point).
        outputs : sequence
            Nodes (or constants) to return.
        tagged : bool
            Also return ``{tag: value}`` of the tagged nodes.

        Returns
        -------
        list (and dict if ``tagged``)
        """
        vals = [None] * len(self.nodes)
        for i, node in enumerate(self.nodes):
            if node.op == "input":
                vals[i] = inputs[node.args[0]]
                continue
            args = [vals[a.index] if isinstance(a, Node) else a for a in node.args]
            vals[i] = _NUMPY[node.op](*args)
        out = [vals[o.index] if isinstance(o, Node) else o for o in outputs]
        if tagged:
            return out, {tag: vals[i] for i, tag in self.tags.items()}
        return out

    @property
    def n_operations(self) -> int:
        return sum(1 for i, n in enumerate(self.nodes) if self.live[i] and n.op != "input")


def _div(a, b):
    if bk.is_zero(a):
        return 0
    if bk.is_one(b):
        return a
    return a / b


_BACKEND = {
    "add": bk.add, "sub": bk.sub, "mul": bk.mul, "div": _div, "neg": bk.neg,
    "pow": lambda a, b: a ** b,
    "sin": bk.sin, "cos": bk.cos, "atan": bk.atan, "sqrt": bk.sqrt, "tanh": bk.tanh,
}
_NUMERIC = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "neg": lambda a: -a, "pow": lambda a, b: a ** b,
    "sin": math.sin, "cos": math.cos, "atan": math.atan, "sqrt": math.sqrt, "tanh": math.tanh,
}
_NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "neg": np.negative, "pow": np.power,
    "sin": np.sin, "cos": np.cos, "atan": np.arctan, "sqrt": np.sqrt, "tanh": np.tanh,
}


def record(fn: Callable, input_names: Dict[str, int]):
    """Record ``fn(tape, inputs)`` and return ``(tape, result)``.

    Parameters
    ----------
    fn : callable
        ``fn(namer, inputs) -> result``; ``inputs`` maps each name to a list of Nodes.
    input_names : dict
        ``name -> length`` of each input vector.
    """
    tape = Tape()
    inputs = {k: [tape.input(f"{k}[{i}]") for i in range(n)] for k, n in input_names.items()}
    result = fn(tape.tag, inputs)
    return tape, result
