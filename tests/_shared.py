"""The solved cases the test session shares (fixtures of tests/conftest.py), and how they stay
cheap under pytest-xdist.

A shared case is solved once per test process that needs it. Every test that uses one is put
in the case's ``xdist_group`` (:func:`group_items`), and ``--dist loadgroup`` (setup.cfg's
``addopts``) sends a group to one worker as one unit: the case is solved once per run, not
once per worker. Groups are scheduled first (pytest-xdist orders its units by size), so the
longest work starts early.

A case held in memory (a solved Pyomo model) is released when its group's last test is done
(:func:`release_after`): a live model makes every later build of the process slower, since
:func:`pyomo_lap.util.gc_pause.collect_frozen` walks every live object before each build
(measured: ~0.4 s per solved sector held, at every one of the ~150 builds of a worker).
In one process (``-n 0``) the tests of a group are moved next to each other
(:func:`group_items`), so that a case is solved once there too.

Cases on disk (a results folder in ``tmp_path_factory``'s folder) hold no model. A test
reads them; a test that writes into a results folder copies it first
(:func:`copy_run`): no test changes a shared case.

``solved_sector``
    ``solved(model)``: (track, vehicle, model, report, DataFrame) of tests/_solved_sector.py's
    short sector (Nordschleife 1200-1360 m, 16 elements, 3 points) for a vehicle model.
``stadium_lap``
    The FSAE car's closed lap of tests/_stadium.py's oval as ``solve_sector`` writes it
    (``tum`` format, 20 m elements): ``.folder``, ``.summary``, ``.ok``, ``.track_file``.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import _solved_sector

RELEASE = {"solved_sector": _solved_sector.solved.cache_clear}
"""Group name -> what frees its case held in memory (called after the group's last test)."""

GROUPS = {"solved_sector": "solved_sector", "stadium_lap": "stadium_lap"}
"""Fixture name -> the xdist group of the tests that use it."""


@pytest.fixture(scope="session")
def solved_sector():
    """``solved(model="full")`` -> (track, vehicle, model, SolveReport, trajectory DataFrame) of
    the short sector (tests/_solved_sector.py), solved once per model and group run."""
    return _solved_sector.solved


@pytest.fixture(scope="session")
def stadium_lap(tmp_path_factory):
    """The FSAE car's closed lap of the stadium oval (tests/_stadium.py, ``tum`` format, 20 m
    elements), solved by ``solve_sector`` into a results folder."""
    import _stadium
    from pyomo_lap import solve_sector
    base = tmp_path_factory.mktemp("stadium_lap")
    track = _stadium.write("tum", base)
    res = solve_sector(track=str(track), vehicle="fsae", periodic=True, length=None,
                       ocp_options={"element_length": 20.0}, out_dir=base / "run",
                       echo=lambda *a: None)
    out = SimpleNamespace(folder=base / "run", summary=res.summary, ok=res.report.ok,
                          termination=res.report.termination_condition, track_file=track)
    del res                              # the model is not kept: only the folder and numbers
    return out


def copy_run(run: Path, dst: Path) -> Path:
    """A copy of the shared results folder ``run`` at ``dst`` (links copied as links) for a
    test that writes into it."""
    shutil.copytree(run, dst, symlinks=True)
    return dst


def _group(item):
    if item is None:
        return None
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return mark.args[0] if mark.args else mark.kwargs.get("name")


def group_items(items) -> None:
    """Put each test that uses a shared case in the case's ``xdist_group``, and move the tests
    of each group next to the group's first test (stable otherwise), in place."""
    for item in items:
        names = [GROUPS[f] for f in getattr(item, "fixturenames", ()) if f in GROUPS]
        if len(set(names)) > 1:
            raise pytest.UsageError(f"{item.nodeid} uses the shared cases of two groups "
                                    f"{sorted(set(names))}: give it one")
        if names and _group(item) is None:
            item.add_marker(pytest.mark.xdist_group(names[0]))
    first, order = {}, []
    for i, item in enumerate(items):
        g = _group(item)
        key = first.setdefault(g, i) if g is not None else i
        order.append((key, i))
    ranked = [items[i] for _, i in sorted(order)]
    items[:] = ranked


def name_groups(config, items) -> None:
    """Under ``--dist loadgroup``, end each grouped test's node id with ``@GROUP``, which is how
    pytest-xdist's scheduler finds the groups. pytest-xdist 3.8 does it by setting
    ``item._nodeid``, which pytest 9.2 no longer reads (its node ids are structured:
    pytest-dev/pytest-xdist#1386): the groups were ignored and every case solved on each
    worker. Nothing is done where xdist's own suffix took effect."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:                  # pytest < 9.2: xdist's own suffix works
        return
    for item in items:
        g = _group(item)
        if g is not None and not item.nodeid.endswith(f"@{g}"):
            item._id = NodeId.parse(f"{item.nodeid}@{g}")


def release_after(item, nextitem) -> None:
    """Free the case held in memory of ``item``'s group when the next test is of another group
    (the group's last test on this worker)."""
    g = _group(item)
    if g in RELEASE and _group(nextitem) != g:
        RELEASE[g]()
