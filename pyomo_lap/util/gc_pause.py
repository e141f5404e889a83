"""Pausing Python's cyclic garbage collector while a large model is built or solved.

A pyomo_lap model holds millions of small Python objects (expression nodes, variables,
constraints). While they are created, the collector's full passes walk all of them again and
again: building the default 2 km model took 8.5 s with the collector running and 2.5 s with it
paused. None of these objects are garbage while the model lives, so nothing is lost by pausing;
the collector is switched back on (if it was on) when the block ends, after moving the objects
made in the block out of its sight (``gc.freeze``).

Not :class:`pyomo.common.gc_manager.PauseGC`: it counts its blocks per thread, so a block
ending in a background thread switches the collector back on in the middle of a build in the
main thread (``tests/test_gc_pause.py`` fails with it), and it does not freeze the objects.
"""
from __future__ import annotations

import contextlib
import gc
import threading

__all__ = ["gc_paused", "collect_frozen"]

_LOCK = threading.Lock()
_DEPTH = 0              # blocks inside gc_paused, in every thread
_WAS_ENABLED = False    # the collector's state when the first of them began
_MADE = 0               # the objects frozen by the blocks since the last collect_frozen
_SURVIVORS = 0          # the objects that survived it


@contextlib.contextmanager
def gc_paused():
    """Context manager: the cyclic garbage collector is off inside the block (reference
    counting still frees memory) and back to its previous state after it.

    The collector is one per process: the blocks of all threads are counted, and the collector
    is switched back on only when the last one ends. (A block in a background thread, e.g. the
    tape recorded by :func:`pyomo_lap.solvers.lap.compiled.prefetch_point_functions`, must not
    switch it back on in the middle of a model's build in the main thread: that made every
    build after the first of a process three times slower, 2.5 s instead of 0.8 s.)
    """
    global _DEPTH, _WAS_ENABLED, _MADE
    with _LOCK:
        if _DEPTH == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _WAS_ENABLED:
                # the objects made in the blocks go to the collector's permanent generation:
                # left in the youngest one, the first collection after this block would walk
                # them all (3.8 s after building a full lap). They are still freed by
                # reference counting when no longer used (a model holds no reference cycles
                # of its own). The youngest generation's count is the objects made since
                # the collector last ran (it was off): what collect_frozen weighs.
                _MADE += gc.get_count()[0]
                gc.freeze()
                gc.enable()


def collect_frozen(force: bool = False) -> int:
    """Give the objects :func:`gc_paused` froze back to the collector and collect once, when
    that is worth it: the models a process no longer uses are freed. Called before every new
    build (:func:`pyomo_lap.ocp.build.build_model`).

    Frozen objects are never collected, and a model is not free of reference cycles once it
    was solved (its solution loader and translated NLP refer to it and to each other), so
    without this a script that solves one job after another kept every model: 165 MB more per
    default job, 2.5 GB per full lap (16 full laps one after another ran out of the machine's
    23 GB; issue 36).

    A collection walks every live object of the process, about 0.4 us each on the 2-core
    machine, whatever it finds: 0.1 s for what ``import pyomo_lap`` keeps alive, a few
    seconds with a full lap still held. So it runs when the objects frozen since the last
    one are at least as many as survived it (a generational collector's rule: the walks'
    work stays proportional to the objects made): before every build after a default job or
    a lap in a script that holds nothing else; after a few short sectors; not again and again
    while the caller holds its earlier models (the test suite's workers, holding 250 to 700
    thousand objects of their own, spent a quarter of their time in collections of which a
    third freed nothing). A dropped model is freed by the next build, or, when it is smaller
    than what the process keeps alive, within the next few; the garbage held meanwhile is at
    most what survived the last collection. Nothing is done when nothing is frozen. It may
    run while a background thread is inside a paused block (the compiled functions
    prefetched for the next build): that block's objects are walked too, and frozen again
    when it ends.

    Parameters
    ----------
    force : bool
        Collect whenever something is frozen (a script that must give the memory of a dropped
        model back now).

    Returns
    -------
    int
        The objects the collection found unreachable (:func:`gc.collect`), 0 when it did not run.
    """
    global _MADE, _SURVIVORS
    with _LOCK:
        if _MADE == 0 or (not force and _MADE < _SURVIVORS):
            return 0
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        _MADE = 0
    found = gc.collect()
    with _LOCK:
        _SURVIVORS = max(frozen - found, 0)
    return found
