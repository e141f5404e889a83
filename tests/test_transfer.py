"""A solution moved between meshes (pyomo_lap.ocp.transfer, the one home of such moves) against
closed forms: piecewise polynomials of the collocation's degree and their derivatives come back
exactly on any points, a derivative on an element boundary from the element asked for, the
derivative variables as values of their own, a table's mesh rows (and the refusal of rows on a
fixed step), and the one rule of the start-multiplier suffixes."""
import math

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.ocp.transfer import Solution, state_names

RADAU2 = (1 / 3, 1.0)                                   # Radau IIA, 2 stages (closed form)


def _mesh(breaks, tau=RADAU2):
    return np.array([breaks[0]] + [a + t * (b - a) for a, b in zip(breaks[:-1], breaks[1:])
                                   for t in tau])


def _piecewise(breaks, coeffs, x, der=False):
    """Polynomial ``coeffs[j]`` (numpy.polyval order, in x - breaks[j]) on element j (a
    boundary belongs to the element that ends there)."""
    x = np.asarray(x, float)
    j = np.clip(np.searchsorted(breaks, x, side="left") - 1, 0, len(breaks) - 2)
    return np.array([np.polyval(np.polyder(coeffs[k]) if der else coeffs[k], xi - breaks[k])
                     for k, xi in zip(j, x)])


@pytest.fixture
def solution():
    """A continuous state ``q`` quadratic on each element (ncp = 2: the collocation's own
    degree), its derivative variable ``dq_ds`` (the derivative of the element ending at each
    point, as Radau's collocation makes it), and an algebraic ``z`` linear on each element and
    jumping at the boundaries."""
    rng = np.random.default_rng(11)
    breaks = np.array([0.0, 3.0, 7.5, 8.0, 12.0])
    s = _mesh(breaks)
    cq = rng.normal(size=(4, 3))
    for k in range(1, 4):                                # continuous at the boundaries
        cq[k, -1] = np.polyval(cq[k - 1], breaks[k] - breaks[k - 1])
    cz = rng.normal(size=(4, 2))
    z = _piecewise(breaks, cz, s)
    z[0] = np.nan                                        # no algebraic value at s = 0
    values = {"q": _piecewise(breaks, cq, s), "dq_ds": _piecewise(breaks, cq, s, der=True),
              "z": z}
    return Solution(s=s, breaks=breaks, values=values, states=frozenset({"q"})), breaks, cq, cz


@pytest.mark.unit
def test_piecewise_polynomials_come_back_on_any_points(solution):
    sol, breaks, cq, cz = solution
    x = np.linspace(0.0, 12.0, 97)
    got = sol.at(x)
    np.testing.assert_allclose(got["q"], _piecewise(breaks, cq, x), atol=1e-12)
    inner = ~np.isin(x, breaks)
    np.testing.assert_allclose(got["dq_ds"][inner], _piecewise(breaks, cq, x, der=True)[inner],
                               atol=1e-11)
    np.testing.assert_allclose(got["z"][inner], _piecewise(breaks, cz, x)[inner], atol=1e-12)
    # at the mesh points: the mesh's values, bit for bit
    at_mesh = sol.at(sol.s, derivatives="values")
    for n in ("q", "dq_ds"):
        assert np.array_equal(at_mesh[n], sol.values[n])


@pytest.mark.unit
def test_a_derivative_on_a_boundary_comes_from_the_element_asked_for(solution):
    """On an inner boundary the derivative of the element that ends there (Radau's collocation
    equation there) or of the one that starts there: the closed forms' two slopes."""
    sol, breaks, cq, _ = solution
    b = breaks[1:-1]
    end = sol.at(b, ["q", "dq_ds"], boundary="end")["dq_ds"]
    start = sol.at(b, ["q", "dq_ds"], boundary="start")["dq_ds"]
    np.testing.assert_allclose(end, [np.polyval(np.polyder(cq[k]), breaks[k + 1] - breaks[k])
                                     for k in range(3)], atol=1e-11)
    np.testing.assert_allclose(start, [np.polyder(cq[k + 1])[-1] for k in range(3)], atol=1e-11)
    assert np.all(np.abs(end - start) > 1e-6)            # the polynomials are continuous only
    with pytest.raises(ValueError, match="boundary"):
        sol.at(b, boundary="middle")
    with pytest.raises(ValueError, match="derivatives"):
        sol.at(b, derivatives="spline")


@pytest.mark.unit
def test_derivative_variables_moved_as_values_of_their_own(solution):
    """``derivatives="values"``: dq_ds is the polynomial through its own values at the
    collocation points (degree 1 here: the derivative of a quadratic, exactly)."""
    sol, breaks, cq, _ = solution
    x = np.linspace(0.5, 11.5, 23)
    got = sol.at(x, derivatives="values")["dq_ds"]
    inner = ~np.isin(x, breaks)
    np.testing.assert_allclose(got[inner], _piecewise(breaks, cq, x, der=True)[inner], atol=1e-11)


@pytest.mark.unit
def test_a_tables_mesh_rows_and_the_refusal_of_rows_on_a_step(solution):
    sol, breaks, cq, _ = solution
    el = np.searchsorted(breaks, sol.s, side="left")
    df = pd.DataFrame({"s_sector": sol.s, "element": el, "q": sol.values["q"], "z": sol.values["z"]})
    from_table = Solution.from_table(df, states=["q"])
    np.testing.assert_array_equal(from_table.breaks, breaks)   # each element's last row
    x = np.linspace(0.0, 12.0, 41)
    np.testing.assert_allclose(from_table.at(x)["q"], _piecewise(breaks, cq, x), atol=1e-12)
    step = pd.DataFrame({"s_sector": np.arange(13.0), "q": np.zeros(13),
                         "element": np.searchsorted(breaks, np.arange(13.0), side="left")})
    with pytest.raises(ValueError, match="fixed step"):
        Solution.from_table(step)
    with pytest.raises(ValueError, match="not a mesh point"):
        Solution.from_table(df, breaks=[0.0, 3.1, 12.0])


@pytest.mark.unit
def test_arrays_of_a_solution_file():
    """A ``solution.npz``'s entries: the variables along the mesh, the states by their
    derivatives, the single values as scalars; boundaries rounded to 1e-6 m snapped."""
    s = _mesh(np.array([0.0, 2.0, 5.0]))
    arrays = {"s": s, "var:q2": s ** 2, "var:dq2_ds": 2 * s, "var:f_11z": s + 1.0,
              "var:vehicle.mass.total": np.array([250.0])}
    sol = Solution.from_arrays(arrays, [0.0, 2.0000004, 5.0])
    assert sol.states == {"q2"} and sol.scalars == {"vehicle.mass.total": 250.0}
    assert sol.breaks[1] == s[2]
    assert state_names(["var:q2", "var:dq2_ds", "var:t"]) == ({"q2"}, {"t"})
    got = sol.at([1.0, 3.5])
    assert got["q2"] == pytest.approx([1.0, 12.25], abs=1e-12)
    assert math.isclose(got["dq2_ds"][1], 7.0, abs_tol=1e-12)


@pytest.mark.unit
def test_where_the_loop_fails_the_guess_stays_and_it_is_said():
    """solve_loop_at keeps the interpolated algebraic values where the loop does not converge
    (a stand-in car whose second point fails) and says where; the fixed step's console lines
    name those rows."""
    from types import SimpleNamespace

    from pyomo_lap.ocp.transfer import solve_loop_at
    from pyomo_lap.results.fixed_step import fixed_step_lines

    class Car:
        def solve_many(self, trk, q, qd, u, z0):
            assert q.shape == (3, 2) and np.all(q[:, 0] == 0.0)     # q1 through the track only
            return z0 + 1.0, np.zeros((3, 2)), np.array([True, False, True])

    vm = SimpleNamespace(states=("q2",), rates=("q1_dot", "q2_dot"), controls=("f_xa",),
                         algebraics=("f_11z",))
    values = {"q2": np.zeros(3), "q1_dot": np.ones(3), "q2_dot": np.zeros(3),
              "f_xa": np.zeros(3), "f_11z": np.array([10.0, 20.0, 30.0])}
    z, _, ok = solve_loop_at(Car(), vm, values, np.zeros((3, 15)))
    assert z["f_11z"].tolist() == [11.0, 20.0, 31.0] and ok.tolist() == [True, False, True]
    lines = fixed_step_lines({"method": "computed", "points": 3, "algebraic_loop_failed": 1,
                              "algebraic_loop_failed_at_m": [1.0], "rebuilt_s": 0.5})
    assert any("rebuilt from the folder in 0.5 s" in x for x in lines)
    assert any("did not converge at 1 of 3 rows" in x and "s_sector = 1 m" in x for x in lines)
    assert fixed_step_lines({"method": "interpolated"}) and not fixed_step_lines({"method": "computed"})
