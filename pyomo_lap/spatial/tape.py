r"""Record the car equations once as a tape, replay it at every point of the mesh.

The model code (:mod:`pyomo_lap.spatial.lie`, :mod:`pyomo_lap.spatial.tree`, :mod:`pyomo_lap.vehicle.car`) is
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

import hashlib
import math
import numbers
import operator
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
from pyomo.common.dependencies import attempt_import
from pyomo.core.expr.numeric_expr import (
    DivisionExpression,
    MonomialTermExpression,
    NegationExpression,
    PowExpression,
    ProductExpression,
    SumExpression,
    UnaryFunctionExpression,
)

from ..util.gc_pause import gc_paused
from . import backend as bk

ca, ca_available = attempt_import("casadi")

__all__ = ["Node", "Tape", "record", "specialize", "PyomoReplay", "casadi_function",
           "structure_key"]

_COMMUTATIVE = {"add", "mul"}
_FUNCS = ("sin", "cos", "atan", "sqrt", "tanh")


def _binary(op):
    """The methods ``self op o`` and ``o op self`` of :class:`Node` for operation ``op``."""
    return (lambda self, o: self.tape.op(op, self, o)), (lambda self, o: self.tape.op(op, o, self))


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

    # arithmetic: ``self op o`` and the reflected ``o op self`` record operation ``op``
    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __truediv__, __rtruediv__ = _binary("div")
    __pow__ = _binary("pow")[0]

    def __neg__(self):
        """``-self``."""
        return self.tape.op("neg", self)

    def __pos__(self):
        """``+self``: the node itself."""
        return self

    def tape_function(self, name):
        """Elementary function ``name`` (sin, cos, atan, sqrt, tanh) of this node."""
        return self.tape.op(name, self)

    def __repr__(self):
        """``Node(op#index)``."""
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
        """A new input node named ``name``."""
        n = Node(self, "input", (name,), len(self.nodes))
        self.nodes.append(n)
        self.input_names.append(name)
        return n

    def op(self, op: str, *args):
        """The node of operation ``op`` on ``args`` (nodes or numbers): folded on numbers,
        simplified by the backend's structural rules, one node per distinct operation."""
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
               name: Optional[Callable] = None, share: Optional[Callable] = None) -> list:
        """The values of ``outputs`` (nodes or constants): the live part of the tape evaluated
        with the backend's operations on ``inputs`` (``input name -> value``: Pyomo variables,
        numbers or NumPy arrays). ``name(tag, value) -> value`` is called for the tagged nodes
        (the namer of the model), ``share(index, value) -> value`` for the other nodes used
        more than once."""
        def apply(i, node, args):
            v = _BACKEND[node.op](*args)
            if not bk.is_number(v):
                tag = self.tags.get(i)
                if tag is not None and name is not None:
                    v = name(tag, v)
                elif share is not None and self.uses[i] > 1 and node.op != "neg":
                    v = share(i, v)
            return v
        return _pick(self.forward(inputs.__getitem__, apply), outputs)

    def evaluate(self, inputs: Dict[str, object], outputs: Sequence) -> list:
        """The values of ``outputs`` (nodes or constants) for ``inputs`` (``input name ->
        number or array``; arrays of one shape, one entry per point: vectorized over points)."""
        return _pick(self.forward(inputs.__getitem__,
                                  lambda i, node, args: _NUMPY[node.op](*args)), outputs)

    def reach(self, outputs: Sequence) -> List[bool]:
        """The nodes that ``outputs`` (nodes or constants) depend on, as a mask (what
        :meth:`count_uses` marks live, without changing :attr:`live` or :attr:`uses`): the
        live part of another group of outputs of the same recording."""
        mask = [False] * len(self.nodes)
        stack = [o.index for o in outputs if isinstance(o, Node)]
        while stack:
            i = stack.pop()
            if mask[i]:
                continue
            mask[i] = True
            if self.nodes[i].op != "input":
                stack.extend(a.index for a in self.nodes[i].args
                             if isinstance(a, Node) and not mask[a.index])
        return mask

    def forward(self, input_value: Callable, apply: Callable, select=None, live=None) -> list:
        """The values of the live nodes (every node before :meth:`count_uses`; ``live``, a
        mask such as :meth:`reach`'s, instead of :attr:`live` when given), in order:
        ``input_value(name)`` of an input, ``apply(index, node, values of its arguments)`` of
        an operation; a node with ``select[index]`` false is skipped (None)."""
        vals = [None] * len(self.nodes)
        if live is None:
            live = self.live if len(self.live) == len(self.nodes) else [True] * len(self.nodes)
        for i, node in enumerate(self.nodes):
            if not live[i] or (select is not None and not select[i]):
                continue
            if node.op == "input":
                vals[i] = input_value(node.args[0])
            else:
                vals[i] = apply(i, node, [vals[a.index] if isinstance(a, Node) else a
                                          for a in node.args])
        return vals


def _pick(vals: list, outputs: Sequence) -> list:
    """The values of ``outputs`` (nodes or constants) among the node values ``vals``."""
    return [vals[o.index] if isinstance(o, Node) else o for o in outputs]


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
_ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
               "div": operator.truediv, "neg": operator.neg, "pow": operator.pow}
_NUMERIC = {**_ARITHMETIC, **{f: getattr(math, f) for f in _FUNCS}}
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
    origin: List[int] = []
    index_of = {node.args[0]: i for i, node in enumerate(tape.nodes) if node.op == "input"}

    def input_value(name):
        if name in constants:
            return float(constants[name])
        origin.append(index_of[name])
        return new.input(name)

    def apply(i, node, args):
        n_before = len(new.nodes)
        v = new.op(node.op, *args)
        origin.extend([i] * (len(new.nodes) - n_before))
        if i in tape.tags:
            new.tag(tape.tags[i], v)
        return v
    outs = _pick(tape.forward(input_value, apply), outputs)
    new.count_uses(outs)
    return new, outs, origin


class PyomoReplay:
    """A tape compiled into a Python function that builds the Pyomo expressions of one point.

    The tape's nodes fall into three kinds: *numeric* nodes depend only on the inputs given as
    numbers (the track at the point) and are evaluated with NumPy for all points at once
    (:meth:`numeric_values`); *global* nodes depend only on the inputs that are the same at
    every point (the car's parameters, ``global_inputs``) and are built once for the whole
    model (:meth:`build_globals`); the other, *symbolic* nodes depend on a point's variables
    and become one expression node each, built by straight-line generated code that calls
    Pyomo's expression classes directly (``ProductExpression``, ``SumExpression``, ...),
    without the operator dispatch of ``a * b`` (the dispatch is most of the cost of building a
    model). The expressions are the ones :meth:`Tape.replay` builds through
    :mod:`pyomo_lap.spatial.backend`, except that constants are not folded any further than in
    the tape (specialize the tape first, :func:`specialize`, to drop the terms of inputs that
    are zero).

    Parameters
    ----------
    tape : Tape
        With uses counted.
    outputs : sequence
        Nodes (or constants) whose expressions :meth:`build` returns.
    symbolic_inputs : sequence of str
        Names of the inputs given as Pyomo variables at each point (in the order :meth:`build`
        takes them).
    shared : dict, optional
        ``node index -> key`` of untagged nodes to pass through ``share(key, expr)``.
    global_inputs : sequence of str
        Names of the inputs given once for all points (in the order :meth:`build_globals`
        takes them); every input in neither list is numeric.
    global_keys : dict, optional
        ``node index -> key`` of the global nodes (default: the index): the key under which
        :meth:`build_globals` returns a node and :meth:`build` looks it up, so that the
        replays of several specialized tapes of one recording share the global expressions
        (key them by the node of the recording, :func:`specialize`'s ``origin``).
    """

    def __init__(self, tape: "Tape", outputs: Sequence, symbolic_inputs: Sequence[str],
                 shared: Optional[Dict[int, object]] = None, global_inputs: Sequence[str] = (),
                 global_keys: Optional[Dict[int, object]] = None):
        self.tape = tape
        self.outputs = list(outputs)
        self.symbolic_inputs = list(symbolic_inputs)
        self.global_inputs = list(global_inputs)
        self._kinds(tape)
        self.global_keys = {i: (global_keys or {}).get(i, i) for i in range(len(tape.nodes))
                            if self._global[i]}
        self._columns: List[tuple] = []
        self.used_globals: set = set()
        self.source = self._point_source(shared or {})
        self._build = self._compile(self.source, "_build")
        self.globals_source = self._globals_source()
        self._build_globals = self._compile(self.globals_source, "_build_globals")

    def _input_lines(self, names: Sequence[str]) -> list:
        """``n<i> = V[k]`` for the live input node ``i`` of each of ``names`` (k-th)."""
        return [f"    n{i} = V[{k}]" for k, n in enumerate(names)
                for i, node in enumerate(self.tape.nodes)
                if node.op == "input" and node.args[0] == n and self.tape.live[i]]

    def _point_source(self, shared: Dict[int, object]) -> str:
        """The code of :meth:`build`: the symbolic nodes of a point, straight-line (fills
        ``_columns``, the numeric values it reads, and ``used_globals``)."""
        tape = self.tape
        col: Dict[tuple, int] = {}

        def ref(a, tf=None):
            """Code for argument ``a`` of a symbolic node (``tf``: ``"neg"`` / ``"inv"`` for
            -a / 1/a of a number)."""
            if not isinstance(a, Node):
                return repr(_TRANSFORMS[tf](float(a)))
            if self._numeric[a.index]:
                key = (a.index, tf)
                k = col.get(key)
                if k is None:
                    k = col[key] = len(self._columns)
                    self._columns.append(key)
                return f"N[{k}]"
            if self._global[a.index] and tf is None:
                self.used_globals.add(a.index)
                return f"GL[{self.global_keys[a.index]!r}]"
            assert tf is None
            return f"n{a.index}"

        lines = ["def _build(V, N, GL, name, share):"] + self._input_lines(self.symbolic_inputs)
        for i, node in enumerate(tape.nodes):
            if not tape.live[i] or node.op == "input" or self._numeric[i] or self._global[i]:
                continue
            lines += self._node_code(i, node, ref, tape.tags.get(i), shared.get(i))
        # a numeric output (a row without variables: not a constraint) stays a float
        lines.append("    return [" + ", ".join(ref(o, "const") if self._is_num(o) else ref(o)
                                                for o in self.outputs) + "]")
        return "\n".join(lines)

    def _globals_source(self) -> str:
        """The code of :meth:`build_globals`: the global nodes, straight-line, on the global
        inputs; it returns those the point code uses."""
        tape = self.tape

        def gref(a, tf=None):
            if not isinstance(a, Node):
                return repr(_TRANSFORMS[tf](float(a)))
            assert tf is None
            return f"n{a.index}"
        glines = ["def _build_globals(V, name, share):", "    GL = {}"]
        glines += self._input_lines(self.global_inputs)
        for i, node in enumerate(tape.nodes):
            if tape.live[i] and node.op != "input" and self._global[i]:
                glines += self._node_code(i, node, gref, tape.tags.get(i), None)
        for i in sorted(self.used_globals):
            glines.append(f"    GL[{self.global_keys[i]!r}] = n{i}")
        glines.append("    return GL")
        return "\n".join(glines)

    def _kinds(self, tape) -> None:
        """Mark every live node numeric (track numbers only), global (global inputs only) or
        neither; an operation on constants alone is folded at recording, so it has none."""
        sym, glob = set(self.symbolic_inputs), set(self.global_inputs)
        numeric = [False] * len(tape.nodes)
        global_ = [False] * len(tape.nodes)
        self.numeric_inputs: List[str] = []
        for i, node in enumerate(tape.nodes):
            if not tape.live[i]:
                continue
            if node.op == "input":
                name = node.args[0]
                global_[i] = name in glob
                numeric[i] = name not in sym and name not in glob
                if numeric[i]:
                    self.numeric_inputs.append(name)
                continue
            nodes = [a for a in node.args if isinstance(a, Node)]
            numeric[i] = all(numeric[a.index] for a in nodes)
            global_[i] = all(global_[a.index] for a in nodes)
        self._numeric, self._global = numeric, global_

    def _is_num(self, a) -> bool:
        return not isinstance(a, Node) or self._numeric[a.index]

    def _node_code(self, i, node, ref, tag, share_key) -> list:
        """The lines that build node ``i`` (and name or share it)."""
        op, args = node.op, node.args

        def is_var(a):
            return (isinstance(a, Node) and a.op == "input" and not self._numeric[a.index]
                    and not self._global[a.index])

        def neg(a):
            return f"M((-1.0, {ref(a)}))" if is_var(a) else f"G(({ref(a)},))"
        if op == "mul":
            a, b = (args[1], args[0]) if self._is_num(args[0]) else args
            if self._is_num(b):      # symbolic * number
                e = f"M(({ref(b)}, {ref(a)}))" if is_var(a) else f"P(({ref(b)}, {ref(a)}))"
            else:
                e = f"P(({ref(a)}, {ref(b)}))"
        elif op == "add":
            e = f"S([{ref(args[0])}, {ref(args[1])}])"
        elif op == "sub":
            a, b = args
            e = f"S([{ref(a)}, {ref(b, 'neg')}])" if self._is_num(b) else f"S([{ref(a)}, {neg(b)}])"
        elif op == "neg":
            e = neg(args[0])
        elif op == "div":
            a, b = args
            e = f"P(({ref(b, 'inv')}, {ref(a)}))" if self._is_num(b) else f"D(({ref(a)}, {ref(b)}))"
        elif op == "pow":      # the exponent is part of the structure: a float
            e = f"W(({ref(args[0])}, {ref(args[1])}))"
        else:
            e = f"U(({ref(args[0])},), {op!r}, _{op})"
        lines = [f"    n{i} = {e}"]
        if tag is not None:
            lines.append(f"    n{i} = name({tag!r}, n{i})")
        elif share_key is not None:
            lines.append(f"    n{i} = share({share_key!r}, n{i})")
        return lines

    @staticmethod
    def _compile(source: str, fname: str):
        env = {"P": ProductExpression, "M": MonomialTermExpression, "S": SumExpression,
               "G": NegationExpression, "D": DivisionExpression, "W": PowExpression,
               "U": UnaryFunctionExpression}
        env.update({f"_{f}": getattr(math, f) for f in _FUNCS})
        exec(compile(source, f"<pyomo_lap.spatial.tape.PyomoReplay.{fname}>", "exec"), env)
        return env[fname]

    def numeric_values(self, inputs: Dict[str, np.ndarray], n: int) -> np.ndarray:
        """Values of the numeric nodes the expressions need, for ``n`` points.

        Parameters
        ----------
        inputs : dict
            ``input name -> (n,) array`` for every numeric input.
        n : int
            Number of points.

        Returns
        -------
        ndarray (n, k)
            One row per point, to pass to :meth:`build`.
        """
        vals = self.tape.forward(
            lambda name: np.broadcast_to(np.asarray(inputs[name], dtype=float), (n,)),
            lambda i, node, args: _NUMPY[node.op](*args), select=self._numeric)
        out = np.empty((n, len(self._columns)))
        for k, (i, tf) in enumerate(self._columns):
            out[:, k] = _NUMPY_TRANSFORMS[tf](vals[i])
        return out

    def build_globals(self, values: Sequence, name: Callable, share: Callable) -> dict:
        """The global nodes' expressions (once for all points): ``{key: expression}`` of those
        the point expressions use (pass it to :meth:`build`; merge the dicts of the replays
        of one recording).

        Parameters
        ----------
        values : sequence
            The global inputs (Pyomo variables), in the order of ``global_inputs``.
        name, share : callable
            As in :meth:`build` (``share`` is not called for global nodes).
        """
        return self._build_globals(values, name, share)

    def build(self, variables: Sequence, numbers: Sequence, name: Callable,
              share: Callable, globals_: Optional[dict] = None) -> list:
        """The outputs' Pyomo expressions at one point.

        Parameters
        ----------
        variables : sequence
            Pyomo variables, in the order of ``symbolic_inputs``.
        numbers : sequence
            The point's row of :meth:`numeric_values` (as Python floats).
        name : callable
            ``name(tag, expr) -> expr``, called for tagged nodes.
        share : callable
            ``share(key, expr) -> expr``, called for the nodes in ``shared``.
        globals_ : dict
            :meth:`build_globals` (the same dict at every point).
        """
        return self._build(variables, numbers, globals_ or {}, name, share)


_TRANSFORMS = {None: lambda x: x, "const": lambda x: x, "neg": lambda x: -x,
               "inv": lambda x: 1.0 / x}
_NUMPY_TRANSFORMS = {None: lambda x: x, "const": lambda x: x, "neg": np.negative,
                     "inv": lambda x: 1.0 / x}


def structure_key(tape: "Tape", outputs: Sequence, inputs: Sequence[str], salt: str = "") -> str:
    """A hash (20 hexadecimal digits) of the tape (uses counted): its live operations with
    their arguments, the ``outputs`` (nodes or constants: a constant output is part of the
    structure), the ``inputs``' names in the order of the function's arguments, and ``salt``
    (anything else the key must depend on). With the car's parameters as inputs of the
    recording (the full model's rows), every car has the same tape: the key names the
    compiled functions of a model, not of a car."""
    h = hashlib.sha256(salt.encode())
    parts = []
    for i, node in enumerate(tape.nodes):
        if not tape.live[i]:
            continue
        if node.op == "input":
            parts.append(f"{i}:input({node.args[0]})")
            continue
        args = ",".join(f"n{a.index}" if isinstance(a, Node) else repr(float(a)) for a in node.args)
        parts.append(f"{i}:{node.op}({args})")
    parts.append("out:" + ",".join(f"n{o.index}" if isinstance(o, Node) else repr(float(o))
                                   for o in outputs))
    parts.append("in:" + ",".join(inputs))
    h.update(";".join(parts).encode())
    return h.hexdigest()[:20]


def casadi_function(tape: "Tape", outputs, groups: Dict[str, Sequence[str]],
                    name: str = "tape"):
    """The tape as a ``casadi.Function`` ``name`` of SX symbols: one vector argument per
    entry of ``groups`` (``argument name -> input names``, ordered; every input the outputs
    depend on must be in one group), one vector output ``out`` (the ``outputs``, nodes or
    constants, in order) or, for a dict ``{output name: sequence of nodes or constants}``,
    one vector output per entry (an output group of the recording besides the live one:
    the nodes evaluated are those the outputs reach, :meth:`Tape.reach`)."""
    named = dict(outputs) if isinstance(outputs, dict) else {"out": list(outputs)}
    syms = {g: ca.SX.sym(g, len(names)) for g, names in groups.items()}
    where = {n: syms[g][k] for g, names in groups.items() for k, n in enumerate(names)}
    live = tape.reach([o for outs in named.values() for o in outs])
    vals = tape.forward(where.__getitem__, lambda i, node, args: (
        _ARITHMETIC.get(node.op) or getattr(ca, node.op))(*args), live=live)
    res = [ca.vertcat(*[vals[o.index] if isinstance(o, Node) else ca.SX(float(o)) for o in outs])
           if outs else ca.SX(0, 1) for outs in named.values()]
    return ca.Function(name, [syms[g] for g in groups], res, list(groups), list(named))
