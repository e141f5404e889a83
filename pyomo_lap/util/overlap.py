"""Work that runs while the solver factorizes: a thread started when the solver enters its
native code.

IPOPT's iterations (the factorizations of MUMPS, the step computations) run in C without
Python's global interpreter lock; Python work started on a thread of its own at that moment
runs on the machine's second core instead of after the solve. Started earlier (before the
model's translation, say), the same work would only take turns with the Python code of the
solve. :func:`pyomo_lap.api.solve_sector` uses it for the imports of the channels and the
export; the solver interface :class:`pyomo_lap.solvers.lap.solver.LapIpopt` calls
:func:`solver_starts` right before IPOPT's iterations.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator

__all__ = ["while_solver_runs", "solver_starts"]

_PENDING = threading.local()


@contextlib.contextmanager
def while_solver_runs(work: Callable[[], None], name: str = "pyomo_lap-while-solving") -> Iterator[None]:
    """Within the block, the next solve of this thread runs ``work()`` on a daemon thread
    named ``name`` when its solver starts (:func:`solver_starts`); nothing runs when no solver
    starts (a solve that fails before IPOPT, a solver that does not call it). ``work`` must
    not touch the model being solved and must catch its own errors (they would otherwise
    only be printed by the thread)."""
    _PENDING.work = (work, name)
    try:
        yield
    finally:
        _PENDING.work = None


def solver_starts() -> None:
    """Called by a solver interface just before it enters its native iterations: start the
    work of :func:`while_solver_runs` of this thread, once."""
    pending = getattr(_PENDING, "work", None)
    if pending is not None:
        _PENDING.work = None
        threading.Thread(target=pending[0], name=pending[1], daemon=True).start()
