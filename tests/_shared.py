"""The solved cases the test session shares (fixtures of tests/conftest.py), and how they stay
cheap under pytest-xdist.

A shared case is solved once per test process that needs it. Every test that uses one is put
in the case's ``xdist_group`` (:func:`group_items`), and ``--dist loadgroup`` (setup.cfg's
``addopts``) sends a group to one worker as one unit: the case is solved once per run, not
once per worker. Groups are scheduled first (pytest-xdist orders its units by size), so the
longest work starts early.

A case held in memory (a solved Pyomo model) is released when its group's last test is done
(:func:`release_after`): a live model makes the collections before later builds of the
process slower (:func:`pyomo_lap.util.gc_pause.collect_frozen` walks every live object when
it runs; ~0.4 s per solved sector held) and rarer, so dropped models wait longer.
In one process (``-n 0``) the tests of a group are moved next to each other
(:func:`group_items`), so that a case is solved once there too.

Cases on disk (a results folder in ``tmp_path_factory``'s folder) hold no model. A test
reads them; a test that writes into a results folder copies it first
(:func:`copy_run`): no test changes a shared case.

``solved_sector``
    ``solved(model)``: (track, vehicle, model, report, DataFrame) of tests/_solved_sector.py's
    short sector (Nordschleife 1200-1360 m, 16 elements, 3 points) for a vehicle model.
``sector_run``
    ``pyomo-lap solve --length 300`` (the default job's first 300 m) as ``solve_sector``
    writes it: ``.folder``, ``.summary``, ``.ok``.
``default_job``
    ``pyomo-lap solve`` (the default job: Nordschleife 0-2000 m, FSAE, 200 elements) through
    the command line: its results folder.
``stadium_lap``
    The FSAE car's closed lap of tests/_stadium.py's oval as ``solve_sector`` writes it
    (``tum`` format, 20 m elements): ``.folder``, ``.summary``, ``.ok``, ``.track_file``.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import _solved_sector
from pyomo_lap.cli import main

RELEASE = {"solved_sector": _solved_sector.solved.cache_clear}
"""Group name -> what frees its case held in memory (called after the group's last test)."""

GROUPS = {"solved_sector": "solved_sector", "stadium_lap": "stadium_lap",
          "sector_run": "sector_run", "default_job": "default_job"}
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


@pytest.fixture(scope="session")
def sector_run(tmp_path_factory):
    """``pyomo-lap solve --length 300``: the default job's first 300 m (the Nordschleife from
    its start, the FSAE car, the default mesh) written by ``solve_sector``."""
    from pyomo_lap import solve_sector
    folder = tmp_path_factory.mktemp("sector_run") / "base"
    res = solve_sector(length=300.0, out_dir=folder, echo=lambda *a: None)
    out = SimpleNamespace(folder=folder, summary=res.summary, ok=res.report.ok)
    del res                              # the model is not kept: only the folder and numbers
    return out


@pytest.fixture(scope="session")
def default_job(tmp_path_factory):
    """``pyomo-lap solve --quiet``: the default job (Nordschleife 0-2000 m, the FSAE car, 200
    elements) run through the command line as a user runs it; its results folder."""
    folder = tmp_path_factory.mktemp("default_job") / "default"
    r = CliRunner().invoke(main, ["solve", "--out", str(folder), "--quiet"])
    assert r.exit_code == 0, r.output
    return folder


def copy_run(run: Path, dst: Path) -> Path:
    """A copy of the shared results folder ``run`` at ``dst`` (links copied as links) for a
    test that writes into it."""
    shutil.copytree(run, dst, symlinks=True)
    return dst


WEIGHT = {"performance": 50.0, "integration": 7.0, "component": 2.0, "unit": 0.2}
"""[s] the mean duration of a test of each kind (measured with --durations on the 2-core
machine under load: 46, 7.3, 2.3 and 0.16 s): what orders the units of work, longest first."""


def _group(item):
    if item is None:
        return None
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return mark.args[0] if mark.args else mark.kwargs.get("name")


def unit_of(nodeid: str) -> str:
    """The unit of work a test is sent to a worker in: its group (the ``@GROUP`` that ends its
    node id under ``--dist loadgroup``), else its module, so that a module's fixtures are
    made once (a test at a time, a module's tests went to both workers and its
    module-scoped solves were made twice)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.rsplit("@", 1)[1]
    return nodeid.split("::", 1)[0]


def group_items(items, kinds) -> None:
    """Put each test that uses a shared case in the case's ``xdist_group``, then order the
    tests by unit of work (:func:`unit_of`: a group, else a module), the units longest first
    (the sum of :data:`WEIGHT` over their tests, by the marker of ``kinds`` each carries), each
    unit's tests in their order; in place."""
    for item in items:
        names = [GROUPS[f] for f in getattr(item, "fixturenames", ()) if f in GROUPS]
        if len(set(names)) > 1:
            raise pytest.UsageError(f"{item.nodeid} uses the shared cases of two groups "
                                    f"{sorted(set(names))}: give it one")
        if names and _group(item) is None:
            item.add_marker(pytest.mark.xdist_group(names[0]))
    units, cost = [], {}
    for item in items:
        g = _group(item)
        unit = g if g is not None else item.nodeid.split("::", 1)[0]
        kind = next((k for k in kinds if item.get_closest_marker(k)), "unit")
        units.append(unit)
        cost[unit] = cost.get(unit, 0.0) + WEIGHT[kind]
    first = {}
    for i, unit in enumerate(units):
        first.setdefault(unit, i)
    order = sorted(range(len(items)), key=lambda i: (-cost[units[i]], first[units[i]], i))
    items[:] = [items[i] for i in order]


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


def scheduler(config, log):
    """The scheduler of ``--dist loadgroup`` (pytest-xdist's hook ``pytest_xdist_make_scheduler``
    in tests/conftest.py), or None for the other modes: xdist's ``loadgroup`` with a module as
    the unit of an ungrouped test (:func:`unit_of`) and the units in the collection's order
    (:func:`group_items` put the longest first)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Scheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False           # the collection's order: longest first
    return Scheduling(config, log)
