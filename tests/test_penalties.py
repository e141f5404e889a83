"""The objective's penalties without constants of one car (issue 33): their weights follow
from dimensionless options and the car's and the sector's scales, they stay a small share of
the objective on cars of very different size, and they no longer hold back an F1 car's
braking; the results do not depend on how densely a track file is sampled.

References are independent of the code under test: the weights by hand from their formulas,
the F1 car's braking limit from its brake torques and drag in closed form, a circle's sector
time from two samplings of the same circle."""
import math

import numpy as np
import pytest

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
from pyomo_lap.ocp.build import OCP_CONFIG
from pyomo_lap.ocp.common import force_scale, penalty_weights, regularization, rounded_scale
from pyomo_lap.analysis.sensitivities import lap_time_cost


@pytest.mark.unit
def test_rounded_scale_is_a_power_of_the_step_near_the_value():
    step = 2 ** 0.25
    for x in (0.013, 1.0, 6275.0, 57227.0, 153.2):
        r = rounded_scale(x)
        k = math.log(r) / math.log(step)
        assert abs(k - round(k)) < 1e-9                  # on the grid
        assert step ** -0.5 <= r / x <= step ** 0.5      # the nearest grid point
        assert rounded_scale(r) == pytest.approx(r)      # idempotent
    assert rounded_scale(1000.0) == rounded_scale(1000.0 * 1.0001)   # a small change: the same


@pytest.mark.unit
def test_force_scale_is_the_largest_tyre_force_in_closed_form():
    for name in ("fsae", "f1_2014", "bmw_320i"):
        p = load_vehicle(name)
        drag = 0.5 * p.rho * p.S * p.Cx
        v_top = min(150.0, (p.P_max / drag) ** (1 / 3))
        down = 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2) * v_top ** 2
        assert force_scale(p) == pytest.approx(max(p.mu_x0, p.mu_y0) * (p.m * p.gravity + down))
    # an F1 car's scale is about nine times an FSAE car's (downforce), a road car's about two
    ratio = force_scale(load_vehicle("f1_2014")) / force_scale(load_vehicle("fsae"))
    assert 8.0 < ratio < 10.0


class _Problem:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Model:
    """What :func:`penalty_weights` reads of a model: ``problem``, the car block ``vehicle`` and
    the points ``s``."""

    def __init__(self, p, T, L, n):
        self.problem = _Problem(time_scale=T, sector_length=L)
        self.vehicle = _Problem(built_for=p)
        self.s = list(range(n + 1))


@pytest.mark.unit
def test_penalty_weights_by_hand():
    """Each weight = its dimensionless option times T / (L u_ref^2) (rates) or T / (N u_ref^2)
    (jumps) or T / F^2 (complementarity), with T, F and the steer scale rounded to the grid;
    the steer scale: the wheelbase times the track's RMS curvature, at least 2 pi / L."""
    p = load_vehicle("f1_2014")
    cfg = OCP_CONFIG(dict(w_steer_rate=2.0, w_force_rate=3.0, w_steer_jump=0.7, w_force_jump=0.4,
                          w_complementarity=5.0))
    T, L, n = 81.3, 4630.0, 1504
    K = penalty_weights(_Model(p, T, L, n), cfg)
    Tr, Fr = rounded_scale(T), rounded_scale(force_scale(p))
    d = rounded_scale((p.a1 + p.a2) * 2 * math.pi / L)      # no track points: the floor
    assert K["K_delta_rate"] == pytest.approx(2.0 * Tr / (L * d ** 2))
    assert K["K_force_rate"] == pytest.approx(3.0 * Tr / (L * Fr ** 2))
    assert K["K_delta"] == pytest.approx(0.7 * Tr / (n * d ** 2))
    # with the track's curvature: its RMS (above the floor)
    mm = _Model(p, T, L, n)
    mm.problem.track_points = _Problem(omega=np.array([[0, 0, 0.02], [0, 0, -0.04], [0, 0, 0.0]]))
    dk = rounded_scale((p.a1 + p.a2) * math.sqrt((0.02 ** 2 + 0.04 ** 2) / 3))
    assert penalty_weights(mm, cfg)["K_delta_rate"] == pytest.approx(2.0 * Tr / (L * dk ** 2))
    assert K["K_force"] == pytest.approx(0.4 * Tr / (n * Fr ** 2))
    assert K["K_f"] == pytest.approx(5.0 * Tr / Fr ** 2)
    # a car twice as heavy (forces four times the square) has a force weight 4x smaller
    q = p.replace(m=2 * p.m, m_u=2 * p.m_u, rho=0.0)
    K1, K2 = penalty_weights(_Model(p.replace(rho=0.0), T, L, n), cfg), penalty_weights(_Model(q, T, L, n), cfg)
    assert K1["K_force_rate"] / K2["K_force_rate"] == pytest.approx(4.0, rel=0.2)


def _solved(track, car, **options):
    m = build_model(load_track(track), car if not isinstance(car, str) else load_vehicle(car), **options)
    initialize_model(m)
    rep = solve_model(m, solver="lap_ipopt")
    assert rep.ok, rep.termination_condition
    return m


@pytest.mark.integration
def test_the_penalties_are_a_small_share_on_two_cars_of_very_different_size():
    """The same dimensionless defaults on the 240 kg FSAE car and the 660 kg, 25 kN-downforce
    F1 car: the penalties stay below 0.1 % of the objective on both (with absolute weights
    sized on the FSAE car they were 0.11 % on it and 1-2 % on the F1 car), and what they cost
    in lap time is below 0.1 % too. These are 400-600 m sectors; on the FSAE car's, the
    Nordschleife's twisty 1150-1550 m, the penalties are 0.15 % of the objective (measured) and
    cost 0.07 % of the time: the share allowed here is 0.2 %, the target of 0.1 % is for the
    closed laps (benchmarks/laps.py: 0.04-0.08 % on every FSAE lap)."""
    for track, car, start, length in (("nordschleife", "fsae", 1150.0, 400.0),
                                      ("catalunya_fastest_lap", "f1_2014", 2100.0, 600.0)):
        m = _solved(track, car, start=start, length=length)
        reg = regularization(m)
        assert 0.0 < reg["share"] < 2e-3, (car, reg)
        assert reg["total_s"] == pytest.approx(reg["objective_s"] - reg["lap_time_s"])
        # their cost in lap time, by a second solve with every weight / 10: within the bounds
        # that the concavity of the optimal objective in the weights' scale gives (an
        # independent principle: a cost outside them means a solve missed its optimum), and
        # below 0.1 % of the sector time
        cost = lap_time_cost(m, "lap_ipopt")
        lo, hi = cost["bounds_s"]
        assert cost["optimal"] and lo - 1e-5 <= cost["lap_time_cost_s"] <= hi + 1e-5, (car, cost)
        assert 0.0 <= cost["lap_time_cost_s"] < 1e-3 * reg["lap_time_s"], (car, cost)
        # the model keeps its result and its weights
        again = regularization(m)
        assert (again["lap_time_s"], again["total_s"]) == pytest.approx((reg["lap_time_s"], reg["total_s"]), rel=1e-12)


@pytest.mark.integration
def test_the_f1_car_brakes_as_hard_as_its_brakes_allow():
    """On the straight into Catalunya's first corner the F1 car's peak deceleration is set by
    its brake torques and its drag (closed form: 2 T_b1/R + 2 T_b2/R at the fixed bias, plus the
    drag at that speed, over the mass): the penalties no longer halve it (with the FSAE-sized
    absolute weights it was 2.6 g against 5.3 g)."""
    p = load_vehicle("f1_2014")
    m = _solved("catalunya_fastest_lap", p, start=500.0, length=600.0)
    # the channels from the results table (the record's compiled functions): Pyomo's own
    # evaluation of the named Expression m.a_x walks its whole tree, about 25 s a point here
    from pyomo_lap.results.table import trajectory_dataframe
    df = trajectory_dataframe(m)
    v, ax = df["speed"].to_numpy(), df["a_x"].to_numpy()
    i = int(np.argmin(ax))
    brakes = 2 * p.T_b1 / (p.brake_ratio * p.wheel_radius)      # the total force at the limit
    assert 2 * p.T_b2 / ((1 - p.brake_ratio) * p.wheel_radius) == pytest.approx(brakes)
    drag = 0.5 * p.rho * p.S * p.Cx * v[i] ** 2
    closed = (brakes + drag) / p.m
    assert -ax[i] == pytest.approx(closed, rel=0.05), (-ax[i] / 9.81, closed / 9.81)
    f_xb = df["f_xb"].to_numpy()
    assert f_xb.min() == pytest.approx(-brakes, rel=1e-3)     # the brake limit is reached


@pytest.mark.integration
def test_the_sector_time_does_not_depend_on_how_densely_the_file_is_sampled(tmp_path):
    """A flat R = 300 m circle written every 20 cm and every 2 m: the same 150 m sector time
    within 0.1 % (it was 3.560 s against 3.638 s, with a speed the power could not reach)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from circle import circle_csv
    times = []
    for spacing in (0.2, 2.0):
        f = circle_csv(tmp_path / f"c{spacing}.csv", spacing)
        m = _solved(str(f), "fsae", start=0.0, length=150.0)
        import pyomo.environ as pyo
        times.append(pyo.value(m.lap_time))
        # the speed never exceeds what the power allows against the drag alone
        p = m.vehicle.built_for
        v_top = (p.P_max / (0.5 * p.rho * p.S * p.Cx)) ** (1 / 3)
        assert max(pyo.value(m.speed[s]) for s in m.s) <= v_top * 1.001
    assert times[0] == pytest.approx(times[1], rel=1e-3)
