"""The garbage collector pause (:func:`pyomo_lap.util.gc_pause.gc_paused`) across threads, and
the collection before a build (:func:`pyomo_lap.util.gc_pause.collect_frozen`): the dropped
models freed, the live ones not walked for nothing.

The collector is one per process. A model's build pauses it in the main thread while a
background thread records the car's tape for the compiler (also paused): the background
block must not switch the collector back on while the build still runs.
"""
from __future__ import annotations

import gc
import threading
import weakref

import pytest

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.util.gc_pause import collect_frozen, gc_paused


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


def _job(track, car):
    """A solved 60 m sector, dropped by the caller: a weak reference to it."""
    m = build_model(track, car, length=60.0, nfe=6)
    initialize_model(m)
    assert solve_model(m).ok
    return weakref.ref(m)


@pytest.mark.integration
def test_a_dropped_solved_model_is_freed_by_a_forced_collection():
    """A solved model holds reference cycles (its solution loader and translated NLP) and its
    objects were frozen out of the collector's sight: the collector alone cannot free it,
    ``collect_frozen(force=True)`` does (issue 36: 165 MB more per default job, 2.5 GB per
    full lap kept before)."""
    track, car = load_track("nordschleife"), load_vehicle("fsae")
    dead = _job(track, car)
    gc.collect()
    assert gc.get_freeze_count() > 0 and dead() is not None
    assert collect_frozen(force=True) > 0
    assert dead() is None


@pytest.mark.integration
def test_job_after_job_the_garbage_held_stays_within_what_survives():
    """A script solving job after job and dropping each: the objects frozen (what the process
    keeps alive, the live model, the dropped ones not yet collected) stay within twice what
    the process keeps alive plus two jobs', however many jobs run, and the dropped models are
    freed as it goes. Kept (before issue 36) or never collected, ``ceil(alive / job) + 3``
    jobs make more than that frozen; a process holding more (a test worker: 250 to 700
    thousand objects) waits longer between collections, hence the count of jobs from it."""
    track, car = load_track("nordschleife"), load_vehicle("fsae")
    collect_frozen(force=True)
    gc.collect()
    alive = len(gc.get_objects())                    # what the process keeps alive
    refs = [_job(track, car)]
    frozen = [gc.get_freeze_count()]
    job = frozen[0] - alive                          # one 60 m job's objects
    assert job > 0, (alive, frozen)
    for _ in range(-(-alive // job) + 2):
        refs.append(_job(track, car))
        frozen.append(gc.get_freeze_count())
    assert max(frozen) <= 2 * alive + 2 * job, (alive, job, frozen)
    assert refs[0]() is None, [r() is None for r in refs]


@pytest.mark.integration
def test_a_build_while_the_earlier_model_is_held_walks_nothing(monkeypatch):
    """The caller holds its solved model and builds another (a comparison, a sweep's
    cache): nothing of the first is garbage, and the build does not walk every live object
    for nothing (it did before each build: a third of the test suite's collections freed
    nothing, a quarter of its workers' time)."""
    import pyomo_lap.ocp.build as build
    track, car = load_track("nordschleife"), load_vehicle("fsae")
    collect_frozen(force=True)
    found = []
    monkeypatch.setattr(build, "collect_frozen", lambda: found.append(collect_frozen()) or 0)
    first = build_model(track, car, length=60.0, nfe=6)
    initialize_model(first)
    assert solve_model(first).ok
    second = build_model(track, car, length=60.0, nfe=6)
    assert found == [0, 0], found
    assert first is not second
