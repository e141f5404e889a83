"""Mesh continuation (pyomo_lap.api.continuation, the job option ``mesh_continuation``): the
interpolation onto another mesh reproduces polynomials it can represent exactly (closed
forms), the coarse meshes' element lengths, the curvature steps a mesh straddles, and a
continuation ending at the optimum of a direct solve."""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest

from pyomo_lap import build_model, load_track, load_vehicle


@pytest.fixture(scope="module")
def oval_models():
    """The racecar on dymos's oval: a coarse and a finer mesh of the lap (not solved)."""
    tr = load_track("dymos_oval")
    car = load_vehicle("dymos_racecar")
    coarse = build_model(tr, car, model="racecar", periodic=True, nfe=12, ncp=3)
    fine = build_model(tr, car, model="racecar", periodic=True, nfe=31, ncp=3)
    return coarse, fine


@pytest.mark.unit
def test_interpolation_reproduces_polynomials_of_the_collocation_degree(oval_models):
    """States (degree ncp = 3 per element) and the controls made states (the racecar's C1
    controls, no derivative variables) given cubics in s (within their bounds): the values
    and derivatives interpolated onto another mesh are the cubics' and their derivatives',
    to rounding (closed form)."""
    from pyomo_lap.api.continuation import interpolate_solution
    coarse, fine = oval_models
    L = coarse.problem.sector_length

    def f(s, k):
        x = s / L
        return 0.05 * (k + 1) * (0.2 + 0.7 * x - 1.3 * x ** 2 + 0.9 * x ** 3)

    def df(s, k):
        x = s / L
        return 0.05 * (k + 1) * (0.7 - 2.6 * x + 2.7 * x ** 2) / L

    names = ("n", "alpha", "omega", "delta", "thrust", "V")
    for k, name in enumerate(names):
        var = coarse.component(name)
        for s in coarse.s:
            var[s].set_value(f(s, k) + (10.0 if name == "V" else 0.0), skip_validation=True)
    interpolate_solution(fine, coarse)
    for k, name in enumerate(names):
        off = 10.0 if name == "V" else 0.0
        for s in fine.s:
            assert fine.component(name)[s].value == pytest.approx(f(s, k) + off, abs=1e-10)
        if name in ("n", "alpha", "omega", "V"):
            dv = fine.component(f"d{name}_ds")
            for s in list(fine.s)[1:]:
                assert dv[s].value == pytest.approx(df(s, k), abs=1e-10)


@pytest.mark.unit
def test_interpolation_clips_to_bounds_and_keeps_fixed_values(oval_models):
    """A polynomial past a variable's bound (the steer, |delta| <= 1 rad) is clipped to it;
    a fixed variable (t at the start) keeps its value."""
    from pyomo_lap.api.continuation import interpolate_solution
    coarse, fine = oval_models
    for s in coarse.s:
        coarse.delta[s].set_value(5.0, skip_validation=True)
        coarse.t[s].set_value(3.0 + s, skip_validation=True)
    interpolate_solution(fine, coarse)
    assert all(fine.delta[s].value == 1.0 for s in fine.s)
    assert fine.t[fine.s.first()].value == 0.0 and fine.t[fine.s.first()].fixed


@pytest.mark.unit
def test_interpolation_refuses_another_sector():
    from pyomo_lap.api.continuation import interpolate_solution
    tr, car = load_track("dymos_oval"), load_vehicle("dymos_racecar")
    a = build_model(tr, car, model="racecar", start=0.0, length=300.0, nfe=6)
    b = build_model(tr, car, model="racecar", start=0.0, length=400.0, nfe=6)
    with pytest.raises(ValueError, match="sector length"):
        interpolate_solution(b, a)


@pytest.mark.unit
def test_stage_element_lengths_halve_from_the_default_element():
    """element_length 10 m, fine elements of 1 m: 10, 5, 2.5 m (each at least twice the fine
    one); a fine mesh coarser than half the default: one mesh of twice its element."""
    from pyomo_lap.api.continuation import stage_element_lengths
    assert stage_element_lengths(1.0, 10.0) == [10.0, 5.0, 2.5]
    assert stage_element_lengths(2.5, 10.0) == [10.0, 5.0]
    assert stage_element_lengths(12.0, 10.0) == [24.0]
    with pytest.raises(ValueError, match="fine_element_m"):
        stage_element_lengths(0.0, 10.0)


@pytest.mark.unit
def test_continuation_meshes_merge_whole_elements():
    from pyomo_lap.api.continuation import continuation_meshes
    b = np.linspace(0.0, 100.0, 17)            # 16 elements
    out = continuation_meshes(b, 4)
    assert [len(x) - 1 for x in out] == [4, 8]
    for x in out:                               # every coarse boundary is a fine one
        assert np.all(np.min(np.abs(x[:, None] - b[None, :]), axis=1) < 1e-12)
        assert x[0] == 0.0 and x[-1] == 100.0


@pytest.mark.unit
def test_straddled_junctions_counts_curvature_steps_inside_elements(oval_models):
    """The oval has 9 segments, 8 junctions inside the lap: 50 uniform elements of 24.9 m
    leave them inside elements except where a junction falls on an end (counted
    independently here); the default mesh puts every one on an element end."""
    from pyomo_lap.api.job import _straddled_junctions
    tr = load_track("dymos_oval")
    car = load_vehicle("dymos_racecar")
    m = build_model(tr, car, model="racecar", periodic=True, nfe=50)
    junctions = np.cumsum([150, 50 * np.pi / 2, 100, 90 * np.pi / 2, 300, 50 * np.pi / 2, 100,
                           90 * np.pi / 2])
    ends = np.linspace(0.0, tr.length, 51)
    inside = sum(np.min(np.abs(ends - j)) > 1e-6 for j in junctions)
    assert inside == 8 and _straddled_junctions(m) == inside
    assert _straddled_junctions(build_model(tr, car, model="racecar", periodic=True)) == 0


@pytest.mark.integration
def test_continuation_lands_on_the_optimum_of_a_direct_solve():
    """A short Nordschleife sector on 5 m elements, solved directly and by continuation
    (10 m elements first): the same sector time to IPOPT's tolerance, the same speed along
    it; the summary records the coarse mesh."""
    from pyomo_lap import solve_sector
    job = dict(length=150.0, nfe=30, out_dir=None, refine_mesh=False, echo=lambda t: None,
               solver_options={"tol": 1e-9})
    direct = solve_sector(**job, mesh_continuation="off")
    cont = solve_sector(**job, mesh_continuation="on")
    assert direct.report.ok and cont.report.ok
    assert direct.summary["mesh_continuation"] is None
    stages = cont.summary["mesh_continuation"]["stages"]
    assert len(stages) == 1 and stages[0]["optimal"] and stages[0]["nfe"] < 30
    assert cont.summary["lap_time_s"] == pytest.approx(direct.summary["lap_time_s"], rel=1e-7)
    v1 = direct.trajectory["speed"].to_numpy()
    v2 = cont.trajectory["speed"].to_numpy()
    assert np.max(np.abs(v1 - v2)) < 1e-4 * np.max(v1)
    # the continuation's fine solve started from the coarse solution, not the cold guess
    assert pyo.value(cont.model.lap_time) == pytest.approx(cont.summary["lap_time_s"])
