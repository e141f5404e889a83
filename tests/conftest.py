"""Test kinds: every test carries exactly one of the four markers below (registered, with the
same definitions, in the ``[tool:pytest]`` section of setup.cfg). A test with none, or with
more than one, stops the collection with a list of the offenders, whatever ``-m`` selects.

``unit``
    Numbers in, numbers out: no solve, no Pyomo model of the car (nor its equations as Pyomo
    expressions), no C compilation, no IPOPT library or executable, no child process;
    in-process calls of the command line that stop before anything is built are fine. Each
    well under 2 s on the 2-core reference machine (measured with ``--durations``, not
    asserted: no test asserts a wall-clock time). ``-m unit`` is the quick run (< 30 s).
``component``
    One piece of the machinery with its real dependencies, but never a solve of the car's
    optimal control problem: builds the car's Pyomo model or its equations as Pyomo
    expressions, compiles C code, calls the IPOPT library or executable on small textbook
    NLPs, runs a child process, or is a numerical check slower than 2 s.
``integration``
    Solves the car's optimal control problem end to end (any solver path, in-process or in a
    child process) on short sectors or small closed tracks, and checks the result against
    independent computations.
``performance``
    The golden-value jobs: the default job and the full Nordschleife lap solved as the user
    runs them, checked against the lap times recorded in ``tests/golden/lap_times.json`` (with
    their provenance) and against independent bounds. The slowest tests (about a minute);
    part of the full suite that ``scripts/test.sh`` and CI run.
"""
import pytest

import _shared
from _shared import (default_job, sector_run, solved_sector,  # noqa: F401 (fixtures of
                     stadium_lap)                                   # the session)

KINDS = ("unit", "component", "integration", "performance")


@pytest.hookimpl(tryfirst=True)         # before ``-m`` deselects anything, before xdist reads
def pytest_collection_modifyitems(config, items):   # the groups
    _check_kinds(items)
    _shared.group_items(items, KINDS)


@pytest.hookimpl(tryfirst=True)         # before pytest-xdist sends the node ids
def pytest_collection_finish(session):
    _shared.name_groups(session.config, session.items)


@pytest.hookimpl(optionalhook=True)     # pytest-xdist's hook: the units of work and their order
def pytest_xdist_make_scheduler(config, log):
    return _shared.scheduler(config, log)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    _shared.release_after(item, nextitem)


def _check_kinds(items):
    offenders = []
    for item in items:
        kinds = sorted({m.name for m in item.iter_markers()} & set(KINDS))
        if len(kinds) != 1:
            offenders.append(f"  {item.nodeid}: {', '.join(kinds) if kinds else 'no kind'}")
    if offenders:
        raise pytest.UsageError(
            f"every test needs exactly one of the markers {', '.join(KINDS)} "
            f"(definitions: tests/conftest.py, setup.cfg); {len(offenders)} do not:\n"
            + "\n".join(offenders))
