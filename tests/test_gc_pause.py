"""The garbage collector pause (:func:`pyomo_lap.util.gc_pause.gc_paused`) across threads.

The collector is one per process. A model's build pauses it in the main thread while a
background thread records the car's tape for the compiler (also paused): the background
block must not switch the collector back on while the build still runs.
"""
from __future__ import annotations

import gc
import threading

import pytest

from pyomo_lap.util.gc_pause import gc_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.unit
def test_a_block_ending_in_another_thread_leaves_the_collector_off(collector_on):
    """The background thread's block begins first and ends in the middle of the main
    thread's block (the prefetch of the compiled functions and the model's build)."""
    inside, leave, done = threading.Event(), threading.Event(), threading.Event()

    def background():
        with gc_paused():
            inside.set()
            leave.wait(5)
        done.set()

    t = threading.Thread(target=background)
    t.start()
    inside.wait(5)
    with gc_paused():
        leave.set()
        done.wait(5)
        t.join(5)
        assert not gc.isenabled(), "the background block switched the collector on"
    assert gc.isenabled(), "the collector stayed off after the last block"


@pytest.mark.unit
def test_the_state_before_is_restored(collector_on):
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()          # it was off: it stays off
    gc.enable()


@pytest.mark.integration
def test_a_dropped_solved_model_is_freed_by_the_next_build():
    """A solved model holds reference cycles (its solution loader and translated NLP) and its
    objects were frozen out of the collector's sight: dropped, it is freed before the next
    build, so a script solving job after job keeps one model, not all (issue 36: 165 MB more
    per default job, 2.5 GB per full lap before)."""
    import gc
    import weakref
    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
    track, car = load_track("nordschleife"), load_vehicle("fsae")
    m = build_model(track, car, length=60.0, nfe=6)
    initialize_model(m)
    assert solve_model(m).ok
    dead = weakref.ref(m)
    del m
    gc.collect()                         # the collector alone cannot: the model is frozen
    assert gc.get_freeze_count() > 0 and dead() is not None
    build_model(track, car, length=60.0, nfe=6)
    assert dead() is None
