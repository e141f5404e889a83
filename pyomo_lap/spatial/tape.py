r"""Record the car equations once as a tape, replay it at every point of the mesh.

The model code (:mod:`pyomo_lap.spatial.lie`, :mod:`pyomo_lap.spatial.chain`, :mod:`pyomo_lap.vehicle.car`) is
written once over "scalars" (:mod:`pyomo_lap.spatial.backend`). Run on Pyomo variables it builds an
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
  the replay goes through :func:`pyomo_lap.spatial.backend.mul` and friends.

The same tape evaluates with NumPy arrays over all points at once (:meth:`Tape.evaluate`).
"""
from __future__ import annotations

import math
import numbers
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from . import backend as bk

__all__ = ["Node", "Tape", "record", "specialize", "PyomoReplay", "casadi_function",
           "literal_arguments", "structure_key"]

_COMMUTATIVE = {"add", "mul"}
_FUNCS = ("sin", "cos", "atan", "sqrt", "tanh")


class Node:
    """A symbol of a recording (see :class:`Tape`). Arithmetic builds new nodes."""

    __slots__ = ("_tape", "op", "args", "index", "__weakref__")

    def __init__(self, tape, op, args, index):
        # the tape is held weakly: no Node <-> Tape reference cycle, so a tape is freed by
        # reference counting alone (pyomo_lap.util.gc_pause)
        self._tape, self.op, self.args, self.index = weakref.ref(tape), op, args, index

    @property
    def tape(self):
        """The :class:`Tape` this node was recorded on."""
        return self._tape()

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
    live: List[bool] = field(default_factory=list)

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
        live = self.live if len(self.live) == len(self.nodes) else None
        for i, node in enumerate(self.nodes):
            if live is not None and not live[i]:
                continue       # dead node (uses counted): not needed by any output
            if node.op == "input":
                vals[i] = inputs[node.args[0]]
                continue
            args = [vals[a.index] if isinstance(a, Node) else a for a in node.args]
            vals[i] = _NUMPY[node.op](*args)
        out = [vals[o.index] if isinstance(o, Node) else o for o in outputs]
        if tagged:
            return out, {tag: vals[i] for i, tag in self.tags.items() if vals[i] is not None}
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
    from ..util.gc_pause import gc_paused
    with gc_paused():     # thousands of cyclic Node <-> Tape objects: no full collections
        tape = Tape()
        inputs = {k: [tape.input(f"{k}[{i}]") for i in range(n)] for k, n in input_names.items()}
        result = fn(tape.tag, inputs)
    return tape, result


# ------------------------------------------------------------------------------------------
# specialization, fast replay into Pyomo expressions, CasADi functions
# ------------------------------------------------------------------------------------------

def specialize(tape: "Tape", outputs: Sequence, constants: Dict[str, float]):
    """Re-record the live part of a tape with some inputs replaced by constants.

    The operations fold as during recording (:meth:`Tape.op`): a product with an input that
    is 0 at some points of the mesh (say ``R[7]`` on a track without banking) disappears
    from the specialized tape, so the expressions replayed from it carry no such term.

    Parameters
    ----------
    tape : Tape
        With uses counted (:meth:`Tape.count_uses`).
    outputs : sequence
        Nodes (or constants) of ``tape`` to keep.
    constants : dict
        ``input name -> value`` of the inputs to replace.

    Returns
    -------
    (Tape, list, list)
        The new tape (uses counted), its outputs, and ``origin``: for each node of the new
        tape the index of the first node of ``tape`` that maps onto it.
    """
    new = Tape()
    mapping: Dict[int, object] = {}
    origin: List[int] = []
    for i, node in enumerate(tape.nodes):
        if not tape.live[i]:
            continue
        if node.op == "input":
            name = node.args[0]
            if name in constants:
                mapping[i] = float(constants[name])
            else:
                mapping[i] = new.input(name)
                origin.append(i)
            continue
        args = [mapping[a.index] if isinstance(a, Node) else a for a in node.args]
        n_before = len(new.nodes)
        v = new.op(node.op, *args)
        if len(new.nodes) > n_before:
            origin.extend([i] * (len(new.nodes) - n_before))
        tag = tape.tags.get(i)
        if tag is not None:
            new.tag(tag, v)
        mapping[i] = v
    outs = [mapping[o.index] if isinstance(o, Node) else o for o in outputs]
    new.count_uses(outs)
    return new, outs, origin


class PyomoReplay:
    """A tape compiled into a Python function that builds the Pyomo expressions of one point.

    The tape's nodes fall into two kinds: *numeric* nodes depend only on the inputs given as
    numbers (the track at the point) and are evaluated with NumPy for all points at once
    (:meth:`numeric_values`); *symbolic* nodes depend on a Pyomo variable and become one
    expression node each, built by straight-line generated code that calls Pyomo's
    expression classes directly (``ProductExpression``, ``SumExpression``, ...), without the
    operator dispatch of ``a * b`` (the dispatch is most of the cost of building a model).
    The expressions are the ones :meth:`Tape.replay` builds through :mod:`pyomo_lap.spatial.backend`,
    except that constants are not folded any further than in the tape (specialize the tape
    first, :func:`specialize`, to drop the terms of inputs that are zero).

    With ``parameters``, the numbers that come from the tape's literals (the car's and the
    options' numbers: :func:`literal_arguments`) enter the expressions as objects the caller
    gives (Pyomo mutable ``Param`` entries) instead of floats: the literal arguments of the
    symbolic operations (:attr:`literal_slots`, the ``literals`` of :meth:`build`) and the
    numeric values that depend on a literal (:attr:`parameter_columns` of the ``numbers``).
    Their values for another tape of the same structure (another car) come from
    :meth:`literal_values` and :meth:`numeric_values` with that tape: the expressions stay,
    the parameters change.

    Parameters
    ----------
    tape : Tape
        With uses counted.
    outputs : sequence
        Nodes (or constants) whose expressions :meth:`build` returns.
    symbolic_inputs : sequence of str
        Names of the inputs given as Pyomo variables (in the order :meth:`build` takes them);
        every other input is numeric.
    shared : dict, optional
        ``node index -> key`` of untagged nodes to pass through ``share(key, expr)``.
    parameters : bool
        Literals as parameters (above); default: as floats in the generated code.
    """

    def __init__(self, tape: "Tape", outputs: Sequence, symbolic_inputs: Sequence[str],
                 shared: Optional[Dict[int, object]] = None, parameters: bool = False):
        self.tape = tape
        self.outputs = list(outputs)
        self.symbolic_inputs = list(symbolic_inputs)
        self.parameters = parameters
        shared = shared or {}
        sym_pos = {n: k for k, n in enumerate(self.symbolic_inputs)}
        nodes = tape.nodes
        numeric = [False] * len(nodes)
        literal_dep = [False] * len(nodes)      # a numeric node whose value uses a literal
        self.numeric_inputs: List[str] = []
        for i, node in enumerate(nodes):
            if not tape.live[i]:
                continue
            if node.op == "input":
                numeric[i] = node.args[0] not in sym_pos
                if numeric[i]:
                    self.numeric_inputs.append(node.args[0])
            else:
                numeric[i] = all(not isinstance(a, Node) or numeric[a.index] for a in node.args)
                if numeric[i]:
                    literal_dep[i] = any(_is_literal(node, j) or literal_dep[node.args[j].index]
                                         for j in range(len(node.args))
                                         if _is_literal(node, j) or isinstance(node.args[j], Node))
        self._numeric = numeric
        # the columns of N: (numeric node, transform) in order of first use
        self._columns: List[tuple] = []
        col: Dict[tuple, int] = {}
        #: (node index, argument position, transform) of the literals of symbolic operations
        self.literal_slots: List[tuple] = []

        def ref(a, tf=None, at=None):
            """Code for argument ``a`` (``at``: (node index, position) when it is a literal),
            ``tf``: ``"neg"`` / ``"inv"`` for -a / 1/a of a number."""
            if not isinstance(a, Node):
                if parameters and at is not None:
                    self.literal_slots.append((at[0], at[1], tf))
                    return f"L[{len(self.literal_slots) - 1}]"
                return repr(_TRANSFORMS[tf](float(a)))
            if numeric[a.index]:
                key = (a.index, tf)
                k = col.get(key)
                if k is None:
                    k = col[key] = len(self._columns)
                    self._columns.append(key)
                return f"N[{k}]"
            assert tf is None
            return f"n{a.index}"

        def is_var(a):
            return isinstance(a, Node) and a.op == "input" and not numeric[a.index]

        def is_num(a):
            return not isinstance(a, Node) or numeric[a.index]

        def neg(a):
            return f"M((-1.0, {ref(a)}))" if is_var(a) else f"G(({ref(a)},))"

        lines = ["def _build(V, N, L, name, share):"]
        for k, n in enumerate(self.symbolic_inputs):
            for i, node in enumerate(nodes):
                if node.op == "input" and node.args[0] == n and tape.live[i]:
                    lines.append(f"    n{i} = V[{k}]")
        for i, node in enumerate(nodes):
            if not tape.live[i] or node.op == "input" or numeric[i]:
                continue
            op, args = node.op, node.args
            at = [(i, j) for j in range(len(args))]
            if op == "mul":
                ja, jb = 0, 1
                if is_num(args[0]):
                    ja, jb = 1, 0
                a, b = args[ja], args[jb]
                if is_num(b):      # symbolic * number
                    e = (f"M(({ref(b, at=at[jb])}, {ref(a)}))" if is_var(a)
                         else f"P(({ref(b, at=at[jb])}, {ref(a)}))")
                else:
                    e = f"P(({ref(a)}, {ref(b)}))"
            elif op == "add":
                e = f"S([{ref(args[0], at=at[0])}, {ref(args[1], at=at[1])}])"
            elif op == "sub":
                a, b = args
                if is_num(b):
                    e = f"S([{ref(a, at=at[0])}, {ref(b, 'neg', at=at[1])}])"
                else:
                    e = f"S([{ref(a, at=at[0])}, {neg(b)}])"
            elif op == "neg":
                e = neg(args[0])
            elif op == "div":
                a, b = args
                if is_num(b):
                    e = f"P(({ref(b, 'inv', at=at[1])}, {ref(a)}))"
                else:
                    e = f"D(({ref(a, at=at[0])}, {ref(b)}))"
            elif op == "pow":      # the exponent is part of the structure: a float
                e = f"W(({ref(args[0], at=at[0])}, {ref(args[1])}))"
            else:
                e = f"U(({ref(args[0])},), {op!r}, _{op})"
            lines.append(f"    n{i} = {e}")
            tag = tape.tags.get(i)
            if tag is not None:
                lines.append(f"    n{i} = name({tag!r}, n{i})")
            elif i in shared:
                lines.append(f"    n{i} = share({shared[i]!r}, n{i})")
        # a numeric output (a row without variables: not a constraint) stays a float
        lines.append("    return [" + ", ".join(ref(o, "const") if is_num(o) else ref(o)
                                                for o in self.outputs) + "]")
        #: positions in the ``numbers`` of :meth:`build` whose values depend on a literal
        self.parameter_columns: List[int] = ([k for k, (i, tf) in enumerate(self._columns)
                                              if literal_dep[i] and tf != "const"]
                                             if parameters else [])
        from pyomo.core.expr.numeric_expr import (
            DivisionExpression, MonomialTermExpression, NegationExpression, PowExpression,
            ProductExpression, SumExpression, UnaryFunctionExpression)
        env = {"P": ProductExpression, "M": MonomialTermExpression, "S": SumExpression,
               "G": NegationExpression, "D": DivisionExpression, "W": PowExpression,
               "U": UnaryFunctionExpression}
        env.update({f"_{f}": getattr(math, f) for f in _FUNCS})
        self.source = "\n".join(lines)
        exec(compile(self.source, "<pyomo_lap.spatial.tape.PyomoReplay>", "exec"), env)
        self._build = env["_build"]

    def literal_values(self, tape: Optional["Tape"] = None) -> List[float]:
        """The values of :attr:`literal_slots` (the ``literals`` of :meth:`build`) for this
        tape or another one of the same structure (:func:`structure_key`; same node indices)."""
        nodes = (self.tape if tape is None else tape).nodes
        return [_TRANSFORMS[tf](float(nodes[i].args[j])) for i, j, tf in self.literal_slots]

    def numeric_values(self, inputs: Dict[str, np.ndarray], n: int,
                       tape: Optional["Tape"] = None) -> np.ndarray:
        """Values of the numeric nodes the expressions need, for ``n`` points.

        Parameters
        ----------
        inputs : dict
            ``input name -> (n,) array`` for every numeric input.
        n : int
            Number of points.
        tape : Tape, optional
            Another tape of the same structure (:func:`structure_key`: another car) to take
            the literals from; default: this one's.

        Returns
        -------
        ndarray (n, k)
            One row per point, to pass to :meth:`build`.
        """
        tape = self.tape if tape is None else tape
        vals: Dict[int, np.ndarray] = {}
        for i, node in enumerate(tape.nodes):
            if not self.tape.live[i] or not self._numeric[i]:
                continue
            if node.op == "input":
                vals[i] = np.broadcast_to(np.asarray(inputs[node.args[0]], dtype=float), (n,))
                continue
            args = [vals[a.index] if isinstance(a, Node) else a for a in node.args]
            vals[i] = _NUMPY[node.op](*args)
        out = np.empty((n, len(self._columns)))
        for k, (i, tf) in enumerate(self._columns):
            out[:, k] = _NUMPY_TRANSFORMS[tf](vals[i])
        return out

    def build(self, variables: Sequence, numbers: Sequence, name: Callable,
              share: Callable, literals: Sequence = ()) -> list:
        """The outputs' Pyomo expressions at one point.

        Parameters
        ----------
        variables : sequence
            Pyomo variables, in the order of ``symbolic_inputs``.
        numbers : sequence
            The point's row of :meth:`numeric_values` (as Python floats; with ``parameters``,
            the entries :attr:`parameter_columns` may be parameters holding those values).
        name : callable
            ``name(tag, expr) -> expr``, called for tagged nodes.
        share : callable
            ``share(key, expr) -> expr``, called for the nodes in ``shared``.
        literals : sequence
            With ``parameters``: one object per :attr:`literal_slots` (a parameter holding
            :meth:`literal_values`).
        """
        return self._build(variables, numbers, literals, name, share)


_TRANSFORMS = {None: lambda x: x, "const": lambda x: x, "neg": lambda x: -x,
               "inv": lambda x: 1.0 / x}
_NUMPY_TRANSFORMS = {None: lambda x: x, "const": lambda x: x, "neg": np.negative,
                     "inv": lambda x: 1.0 / x}


_CASADI_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "neg": lambda a: -a, "pow": lambda a, b: a ** b,
}


def _is_literal(node: Node, j: int) -> bool:
    """Whether argument ``j`` of ``node`` is one of the literals of :func:`literal_arguments`:
    a number, except the exponent of ``pow`` (part of the structure)."""
    return not isinstance(node.args[j], Node) and not (node.op == "pow" and j == 1)


def literal_arguments(tape: "Tape") -> List[float]:
    """The literal numbers among the arguments of the tape's live operations, in tape order
    (operations in order, arguments in order), except the exponents of ``pow``.

    These are the numbers the recording folded into the operations: the car's parameters and
    the options' constants, and the numbers of the model code (``0.5 * x``). Two tapes with the
    same :func:`structure_key` differ at most in these numbers, so one function of them
    (:func:`casadi_function` with ``literals``) evaluates both.

    Parameters
    ----------
    tape : Tape
        With uses counted (:meth:`Tape.count_uses`).

    Returns
    -------
    list of float
    """
    out: List[float] = []
    for i, node in enumerate(tape.nodes):
        if not tape.live[i] or node.op == "input":
            continue
        out.extend(float(a) for j, a in enumerate(node.args) if _is_literal(node, j))
    return out


def structure_key(tape: "Tape", outputs: Sequence, inputs: Sequence[str], salt: str = "") -> str:
    """A hash of the tape's structure: its live operations, their arguments, the outputs and the
    inputs' names, with every literal argument but ``pow``'s exponents
    (:func:`literal_arguments`) replaced by a placeholder.

    Two cars whose recordings differ only in the values of their parameters have the same
    key; a parameter that becomes 0 or 1 (a product folds away) or equal to another one (two
    operations merge) changes the structure and the key.

    Parameters
    ----------
    tape : Tape
        With uses counted.
    outputs : sequence
        Nodes or constants (a constant output is part of the structure).
    inputs : sequence of str
        The inputs' names, in the order of the function's arguments.
    salt : str
        Anything else the key must depend on.

    Returns
    -------
    str
        20 hexadecimal digits.
    """
    import hashlib
    h = hashlib.sha256(salt.encode())
    parts = []
    for i, node in enumerate(tape.nodes):
        if not tape.live[i]:
            continue
        if node.op == "input":
            parts.append(f"{i}:input({node.args[0]})")
            continue
        args = ",".join("c" if _is_literal(node, j) else f"n{a.index}" if isinstance(a, Node)
                        else repr(float(a)) for j, a in enumerate(node.args))
        parts.append(f"{i}:{node.op}({args})")
    parts.append("out:" + ",".join(f"n{o.index}" if isinstance(o, Node) else repr(float(o))
                                   for o in outputs))
    parts.append("in:" + ",".join(inputs))
    h.update(";".join(parts).encode())
    return h.hexdigest()[:20]


def casadi_function(tape: "Tape", outputs: Sequence, groups: Dict[str, Sequence[str]],
                    name: str = "tape", literals: Optional[str] = None):
    """The tape as a ``casadi.Function`` of SX symbols, one vector argument per group of
    inputs, one vector output (the ``outputs`` in order).

    Parameters
    ----------
    tape : Tape
    outputs : sequence
        Nodes or constants.
    groups : dict
        ``argument name -> input names`` (ordered); every live input of the tape must be in
        one group.
    name : str
    literals : str, optional
        Name of one more vector argument, last, that takes the place of the literal numbers of
        the operations (:func:`literal_arguments`, in that order): the function then serves
        every tape of the same :func:`structure_key` (every car whose parameters differ only
        in value), given that tape's literals. Default: the numbers are built into the function.

    Returns
    -------
    casadi.Function
    """
    import casadi as ca
    syms = {g: ca.SX.sym(g, len(names)) for g, names in groups.items()}
    lit = None
    if literals is not None:
        lit = ca.SX.sym(literals, len(literal_arguments(tape)))
        syms[literals] = lit
        k_lit = 0
    where = {}
    for g, names in groups.items():
        for k, n in enumerate(names):
            where[n] = syms[g][k]
    vals: Dict[int, object] = {}
    for i, node in enumerate(tape.nodes):
        if not tape.live[i]:
            continue
        if node.op == "input":
            vals[i] = where[node.args[0]]
            continue
        args = [vals[a.index] if isinstance(a, Node) else a for a in node.args]
        if lit is not None:
            for j in range(len(node.args)):
                if _is_literal(node, j):
                    args[j] = lit[k_lit]
                    k_lit += 1
        f = _CASADI_OPS.get(node.op)
        vals[i] = f(*args) if f is not None else getattr(ca, node.op)(*args)
    out = [vals[o.index] if isinstance(o, Node) else ca.SX(float(o)) for o in outputs]
    names = list(groups) + ([literals] if lit is not None else [])
    return ca.Function(name, [syms[g] for g in names], [ca.vertcat(*out)], names, ["out"])
