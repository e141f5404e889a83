"""Memory: the heap's free pages given back (:mod:`pyomo_lap.util.memory`) and the check of the
named expressions keeping no copy of their keys (:attr:`pyomo_lap.ocp.point_rows.PointRows.named`).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from pyomo_lap.util.memory import release_free_memory, resident_set_size

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or resident_set_size() is None,
                           reason="malloc_trim and /proc/self/status: Linux with glibc")


@pytest.mark.unit
@glibc
def test_freed_heap_blocks_leave_the_resident_set_when_released():
    """80 MB in 100 kB blocks (below glibc's mmap threshold: in the heap), all freed but the
    last one, which pins the heap's top: glibc keeps the pages (the resident set falls by less
    than half of them) until release_free_memory hands them back (by at least 60 MB)."""
    release_free_memory()
    blocks = [np.ones(12_500) for _ in range(800)]          # 800 x 100 kB, touched
    last = np.ones(12_500)                                    # allocated after: the top
    before = resident_set_size()
    del blocks
    freed = resident_set_size()
    assert before - freed < 40e6                              # still resident
    assert release_free_memory()
    after = resident_set_size()
    assert freed - after > 60e6
    assert last.sum() == 12_500.0                             # the live block untouched


@pytest.mark.unit
def test_resident_set_size_grows_with_touched_memory():
    """The resident set grows by about the size of a touched 50 MB array (a second reading of
    the same figure: ``ru_maxrss`` can only rise, and does with it)."""
    import resource
    size = resident_set_size()
    if size is None:
        pytest.skip("no /proc/self/status")
    a = np.ones(50_000_000 // 8)
    grown = resident_set_size() - size
    assert 40e6 < grown < 80e6
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 >= resident_set_size() - 1e6
    del a


@pytest.mark.component
def test_a_changed_named_expression_is_found_without_stored_keys():
    """The build keeps, per m.car.* component, only the entries and their argument tuples:
    a change is mapped to its point through the entry's own index (the point ``s`` of
    ``m.car.<tag>[s]`` and of ``m.car.cse[s, k]``), for a scalar-indexed tag and a cse entry."""
    import pyomo.environ as pyo

    from pyomo_lap import build_model, load_track, load_vehicle
    from pyomo_lap.ocp.point_rows import changed_named_points
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=0.0, length=60.0,
                    nfe=6)
    rec = m.problem.point_rows
    assert all(len(item) == 2 for item in rec.named)         # (entries, argument tuples)
    S = list(rec.points)
    assert changed_named_points(rec) == set()
    tags = [c for c in m.car.component_objects(pyo.Expression) if c.local_name != "cse"
            and not isinstance(next(iter(c.keys())), tuple)]
    tag = tags[0]
    tag[S[2]].set_value(tag[S[2]].expr * 1.0)
    k = next(k for k in m.car.cse.keys() if k[0] == S[4])
    m.car.cse[k].set_value(m.car.cse[k].expr + 0.0)
    assert changed_named_points(rec) == {2, 4}
