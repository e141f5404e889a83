"""The collocation's arithmetic (pyomo_lap/ocp/collocation.py) against closed forms: the
Lagrange basis reproduces polynomials of its degree and their derivatives, the quadrature of
Radau and Gauss nodes is exact to degree 2K-2 and 2K-1, the integration weights integrate
polynomials exactly, and the grid of a pyomo.dae ContinuousSet has pyomo.dae's points."""
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.dae import ContinuousSet

from pyomo_lap.ocp.collocation import (CollocationGrid, barycentric_value, barycentric_weights,
                                       collocation_interpolate, element_points,
                                       integration_weights, lagrange_basis, quadrature_weights)

RADAU3 = np.array([(4 - math.sqrt(6)) / 10, (4 + math.sqrt(6)) / 10, 1.0])   # Radau IIA, 3 stages
GAUSS2 = np.array([0.5 - math.sqrt(3) / 6, 0.5 + math.sqrt(3) / 6])


@pytest.mark.unit
def test_the_basis_reproduces_polynomials_and_their_derivatives():
    rng = np.random.default_rng(3)
    nodes = np.r_[0.0, RADAU3]
    coef = rng.normal(size=4)                      # degree 3 through 4 nodes
    x = np.linspace(-0.2, 1.3, 17)
    L, dL = lagrange_basis(nodes, x, derivative=True)
    np.testing.assert_allclose(L @ np.polyval(coef, nodes), np.polyval(coef, x), atol=1e-12)
    np.testing.assert_allclose(dL @ np.polyval(coef, nodes), np.polyval(np.polyder(coef), x),
                               atol=1e-11)
    np.testing.assert_allclose(L.sum(axis=1), 1.0, atol=1e-13)     # partition of unity
    np.testing.assert_allclose(lagrange_basis(nodes, nodes), np.eye(4), atol=1e-15)
    with pytest.raises(ValueError, match="distinct"):
        lagrange_basis([0.0, 0.5, 0.5], 0.1)


@pytest.mark.unit
def test_barycentric_form_agrees_with_the_basis():
    nodes = np.array([[0.1, 0.4, 0.9], [1.0, 1.5, 3.0]])
    y = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 1.0]])
    w = barycentric_weights(nodes)
    for k in range(2):
        for x in (0.0, 0.25, 0.4, 2.0):
            want = lagrange_basis(nodes[k], x)[0] @ y[k]
            assert barycentric_value(nodes[k], w[k], y[k], x) == pytest.approx(want, abs=1e-12)


@pytest.mark.unit
@pytest.mark.parametrize("nodes, exact_degree", [(RADAU3, 4), (GAUSS2, 3)])
def test_radau_and_gauss_quadrature_are_exact_to_their_degree(nodes, exact_degree):
    b = quadrature_weights(nodes)
    for k in range(exact_degree + 1):
        assert b @ nodes ** k == pytest.approx(1.0 / (k + 1), abs=1e-14)
    assert abs(b @ nodes ** (exact_degree + 1) - 1.0 / (exact_degree + 2)) > 1e-6


@pytest.mark.unit
def test_integration_weights_integrate_polynomials_from_zero():
    t = np.array([0.0, 0.3, RADAU3[0], 1.0])
    C = integration_weights(RADAU3, t)
    coef = np.array([2.0, -1.0, 0.5])             # degree 2 through 3 nodes
    np.testing.assert_allclose(C @ np.polyval(coef, RADAU3), np.polyval(np.polyint(coef), t),
                               atol=1e-14)


def _discretized(scheme: str, ncp: int, breaks):
    m = pyo.ConcreteModel()
    m.s = ContinuousSet(initialize=breaks)
    m.x = pyo.Var(m.s)
    pyo.TransformationFactory("dae.collocation").apply_to(m, wrt=m.s, nfe=len(breaks) - 1,
                                                          ncp=ncp, scheme=scheme)
    return m


@pytest.mark.unit
@pytest.mark.parametrize("scheme", ["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"])
def test_the_grid_of_a_pyomo_dae_set(scheme):
    breaks = [0.0, 2.0, 5.0, 6.0]
    m = _discretized(scheme, 3, breaks)
    grid = CollocationGrid.from_set(m.s)
    assert grid.scheme == scheme and len(grid.elements) == 3
    for e, (a, b) in zip(grid.elements, zip(breaks[:-1], breaks[1:])):
        assert (e.a, e.b) == (a, b)
        assert len(e.nodes) == 3                         # ncp collocation points
        tau = grid.tau(e, e.nodes)
        want = RADAU3 if scheme == "LAGRANGE-RADAU" else np.sort(
            np.polynomial.legendre.leggauss(3)[0] + 1) / 2
        np.testing.assert_allclose(tau, want, atol=1e-6)        # pyomo.dae rounds them to 1e-6
    w = grid.quadrature()
    assert sum(w.values()) == pytest.approx(6.0, abs=1e-12)               # int 1 ds
    # exact for s^3 up to pyomo.dae's rounding of the collocation points to 1e-6
    assert sum(wk * s ** 3 for s, wk in w.items()) == pytest.approx(6.0 ** 4 / 4, rel=1e-7)
    rows = grid.integration_rows()
    for point, start, coef in rows:                   # int_start^point 2 s ds
        assert sum(c * 2 * s for s, c in coef.items()) == pytest.approx(point ** 2 - start ** 2,
                                                                         abs=1e-12)
    assert grid.lengths()[0.0] == 2.0 and grid.lengths()[6.0] == 1.0


@pytest.mark.unit
def test_a_boundary_that_is_no_point_is_refused():
    with pytest.raises(ValueError, match="not a point"):
        CollocationGrid([0.0, 1.0, 2.0], [0.0, 1.5, 2.0])
    with pytest.raises(ValueError, match="scheme"):
        CollocationGrid([0.0, 1.0], [0.0, 1.0], scheme="RADAU")


@pytest.mark.unit
@pytest.mark.parametrize("scheme", ["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"])
def test_interpolation_reproduces_piecewise_polynomials(scheme):
    m = _discretized(scheme, 3, [0.0, 1.0, 3.0])
    grid = CollocationGrid.from_set(m.s)
    s = grid.points
    # a state: one cubic per element, continuous (x = s^3 on both)
    q = np.linspace(0.0, 3.0, 31)
    val, der = collocation_interpolate(grid.breaks, s, s ** 3, q, kind="state", scheme=scheme,
                                       derivative=True)
    np.testing.assert_allclose(val, q ** 3, atol=1e-10)
    np.testing.assert_allclose(der, 3 * q ** 2, atol=1e-9)
    # an algebraic variable: a quadratic through the collocation points of each element
    y = np.where(s <= 1.0, s ** 2, 5.0 - s ** 2)
    inner = q[(q > 0.05) & (q < 0.95)]
    got = collocation_interpolate(grid.breaks, s, y, inner, kind="algebraic", scheme=scheme)
    np.testing.assert_allclose(got, inner ** 2, atol=1e-10)
    with pytest.raises(ValueError, match="kind"):
        collocation_interpolate(grid.breaks, s, y, inner, kind="control")


@pytest.mark.unit
def test_element_points_of_a_table():
    el = np.array([0, 1, 1, 1, 2, 2, 2])
    s = np.array([0.0, 0.2, 0.6, 1.0, 1.2, 1.6, 2.0])
    assert [(i0, list(idx)) for i0, idx in element_points(el, s)] == [(0, [1, 2, 3]), (3, [4, 5, 6])]
    legendre = element_points(el, s, "LAGRANGE-LEGENDRE")
    assert [list(idx) for _, idx in legendre] == [[1, 2], [4, 5]]
    with pytest.raises(ValueError, match="no start point"):
        element_points(el[1:], s[1:])
