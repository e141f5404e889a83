r"""Short solves of the full model checked against closed forms of the new vehicle keys
(the issue's "brake-limited straight, contact-patch limit on a constant-radius corner", and
the drive split out of a slow corner):

* **brake torques** ``brake_torque_front``, ``_rear``: on a flat straight a car whose front
  brakes are weaker than its tyres decelerates from its top speed to a required end speed
  with :math:`f_{xb} = -2 T_{b1}/(k_b R)` (the front brake limit; the rear's is not reached),
  :math:`m\,a = f_{xb} - \tfrac12\rho S C_x v^2`, and the speed profile is the closed-form
  braking curve :math:`v^2(s) + F_b/k = (v_{end}^2 + F_b/k)\,e^{2k(L - s)/m}`
  (:math:`k = \tfrac12\rho S C_x`), i.e. the distance from any speed to the end is
  :math:`\int m v\,dv/(F_b + k v^2)`; without the limits the same car brakes harder, at its
  tyres' limit;
* **tyre widths** and the track limits on the contact patches: steady cornering on a flat
  circle, the inner front patch's outer edge on the track's edge, the patches where the
  closed form :math:`q_2 + x_i\sin q_3 \pm (t_i + w_i)/2\cos q_3` of the solved
  :math:`q_2, q_3` puts them, and wider tyres move the car away from the edge by the
  formula (half the change of width at zero yaw);
* **drive split**: out of a hairpin on low grip the all-wheel-drive car is faster than the
  rear-wheel-drive one, whose rear tyres are at their friction limit.

Each solve takes about a second (two cores).
"""
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from scipy.integrate import quad

from pyomo_lap import Track, build_model, initialize_model, load_vehicle, solve_model
from pyomo_lap.results.table import trajectory_dataframe
from pyomo_lap.track.arcs import ArcTrack, Segment

import _independent as ind


# ------------------------------------------------------------------------------ brake torques
T_B1, T_B2 = 150.0, 100.0        # [N m] a front and a rear wheel's brake torque limits
L_BRAKE, V0, V_END = 100.0, 25.0, 12.0


def straight(length=200.0):
    s = np.linspace(0.0, length, 201)
    return Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], closed=False, name="straight")


def _brake_solve(p):
    """The straight from V0 [m/s], at most V_END at its end (a user constraint): the car
    drives, then brakes as late as it can. Steering held at 0 (and the entry yaw): with the
    brakes limited, the optimizer otherwise weaves to scrub speed with the tyres' side forces,
    legitimately but off the straight-line closed form."""
    m = build_model(straight(), p, start=0.0, length=L_BRAKE, nfe=25, ncp=3, initial_speed=V0,
                    control_form="point")
    m.v_end = pyo.Constraint(expr=m.speed[max(m.s)] <= V_END)
    for s in m.s:
        m.delta[s].fix(0.0)
    m.q3[min(m.s)].fix(0.0)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return trajectory_dataframe(m)


@pytest.fixture(scope="module")
def braking():
    fsae = load_vehicle("fsae")
    limited = fsae.replace(T_b1=T_B1, T_b2=T_B2)
    return {"limited": (limited, _brake_solve(limited)), "tyres": (fsae, _brake_solve(fsae))}


def _phases(df, F):
    """Index of the last driving point and the braking points (f_xb at least 99 % of F)."""
    brake = np.flatnonzero(df["f_xb"].to_numpy() < -0.99 * F)
    return brake[0] - 1, brake


@pytest.mark.integration
def test_brake_limited_straight_follows_the_closed_form(braking):
    r"""The front brake limit :math:`F_b = 2T_{b1}/(k_b R)` = 1442.3 N (the rear's,
    :math:`2T_{b2}/((1 - k_b)R)` = 3846 N, is not reached: its torque stays at 37.5 N m):

    * from the first braking point to the end :math:`f_{xb} = -F_b` (1e-4: IPOPT's interior
      point, measured 3.7e-5), no drive;
    * the speeds there are the closed-form braking curve's (within 1e-3; measured 6e-5);
    * the distance from each braking point to the end equals :math:`\int_{v_{end}}^{v}
      m u\,du/(F_b + k u^2)` (quadrature) within 0.05 m (measured 7 mm);
    * the braking distance from the top speed reached (31.65 m/s),
      :math:`\int_{v_{end}}^{v_{max}}` = 56.57 m, puts the onset of braking between the last
      driving point and the first braking point (the discretization: collocation points
      1.42 m apart there, at most 1.96 m on this mesh);
    * the deceleration of O3 (channel a_x, from the ABA) at its peak, at the onset, is
      :math:`(F_b + k v^2)/m` at that speed within 1 % (measured 8.89 against 8.87 m/s^2,
      0.2 %: the pitch settling), and within 0.1 % from 8 m after the onset on (measured
      0.015 %).
    """
    p, df = braking["limited"]
    kx = 0.5 * p.rho * p.S * p.Cx
    F = 2 * T_B1 / (p.brake_ratio * p.wheel_radius)
    assert 2 * T_B2 / ((1 - p.brake_ratio) * p.wheel_radius) > 2 * F       # rear not limiting
    last_drive, brake = _phases(df, F)
    assert brake[-1] == len(df) - 1 and np.all(np.diff(brake) == 1)     # braking to the end
    fxb = df["f_xb"].to_numpy()[brake]
    assert fxb == pytest.approx(np.full(len(brake), -F), rel=1e-4)
    assert np.abs(df["f_xa"].to_numpy()[brake]).max() < 1e-2
    rear_torque = -(1 - p.brake_ratio) * fxb * p.wheel_radius / 2
    assert rear_torque.max() < T_B2
    s = df["s_sector"].to_numpy()
    v = df["speed"].to_numpy()
    assert v[-1] == pytest.approx(V_END, abs=1e-6)
    # the braking curve, backwards from the end
    C = V_END ** 2 + F / kx
    v_cf = np.sqrt(C * np.exp(2 * kx * (L_BRAKE - s[brake]) / p.m) - F / kx)
    assert v[brake] == pytest.approx(v_cf, rel=1e-3)

    def distance(v_from):
        return quad(lambda u: p.m * u / (F + kx * u * u), V_END, v_from, epsabs=1e-10)[0]

    d_err = [abs((L_BRAKE - s[i]) - distance(v[i])) for i in brake]
    assert max(d_err) < 0.05, max(d_err)
    # the onset: the closed-form distance from the top speed reached
    v_max = v.max()
    assert np.argmax(v) in (last_drive, last_drive + 1)
    onset = L_BRAKE - distance(v_max)
    assert s[last_drive] <= onset <= s[brake[0]], (s[last_drive], onset, s[brake[0]])
    # the deceleration of O3
    decel = -df["a_x"].to_numpy()
    a_cf = (F + kx * v ** 2) / p.m
    assert decel[brake].max() == pytest.approx((F + kx * v_max ** 2) / p.m, rel=1e-2)
    settled = brake[s[brake] >= onset + 8.0]
    assert decel[settled] == pytest.approx(a_cf[settled], rel=1e-3)


@pytest.mark.integration
def test_without_brake_limits_the_car_brakes_harder_at_its_tyres_limit(braking):
    """The same car without brake torque limits: its peak deceleration is more than twice
    the brake-limited one (measured: 22.9 against 8.9 m/s^2), it brakes over a shorter
    distance (29.4 against 57.4 m from the top speed's point), and wherever it brakes hard
    (f_xb < -2 F_b, but at the onset) tyres are at their friction ellipse (>= 99 %, the peak
    D written in tests/_independent.py): the rear ones, which the fixed brake balance
    k_b = 0.8 gives 20 % of the braking force. (Near the end the optimum
    also drives the rear wheels while braking, which moves the balance forward: the
    complementarity f_xa f_xb = 0 is a penalty, not a constraint.)"""
    p, df_lim = braking["limited"]
    fsae, df = braking["tyres"]
    F = 2 * T_B1 / (p.brake_ratio * p.wheel_radius)
    peak_lim = -df_lim["a_x"].min()
    peak = -df["a_x"].min()
    assert peak > 2.0 * peak_lim, (peak, peak_lim)
    assert df["f_xb"].min() < -2.0 * F

    def braking_distance(d):
        return L_BRAKE - d["s_sector"].to_numpy()[np.argmax(d["speed"].to_numpy())]

    assert braking_distance(df) < 0.6 * braking_distance(df_lim)
    hard = np.flatnonzero(df["f_xb"].to_numpy() < -2.0 * F)[1:]   # after the onset point
    use = ind.friction_ellipse_use(fsae, df)[hard]
    assert len(hard) >= 10 and use.max(axis=1).min() >= 0.99
    assert use[:, 2:].min() >= 0.99       # the rear tyres, with 20 % of the braking, lock first


# ------------------------------------------------------------------------ contact patches
R_CIRCLE, WL, WR, MARGIN = 60.0, 3.0, 5.0, 0.1
WIDER = 0.2                   # [m] added to both tyre widths


def _circle_solve(p):
    """A periodic lap of a flat counter-clockwise circle, controls constant per element (the
    steady state: test_ocp.py::test_periodic_lap_on_a_flat_circle)."""
    u = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    pts = np.c_[R_CIRCLE * np.cos(u), R_CIRCLE * np.sin(u), np.zeros_like(u)]
    tr = Track.from_points(pts, closed=True, smoothing=0, name="circle60", width_left=WL,
                           width_right=WR)
    m = build_model(tr, p, nfe=20, ncp=3, periodic=True, piecewise_constant_controls=True,
                    control_form="point", track_margin=MARGIN)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return m, trajectory_dataframe(m)


@pytest.fixture(scope="module")
def circle():
    fsae = load_vehicle("fsae")
    wide = fsae.replace(tw1=fsae.tw1 + WIDER, tw2=fsae.tw2 + WIDER)
    return {"base": (fsae, *_circle_solve(fsae)), "wide": (wide, *_circle_solve(wide))}


def _patch(p, q2, q3, i, j):
    """Outer edge of the contact patch of wheel ij, written here [m]."""
    x, t, tw = (p.a1, p.t1, p.tw1) if i == 1 else (-p.a2, p.t2, p.tw2)
    return q2 + x * np.sin(q3) + (1 if j == 1 else -1) * 0.5 * (t + tw) * np.cos(q3)


@pytest.mark.integration
@pytest.mark.parametrize("car", ["base", "wide"])
def test_contact_patch_sits_on_the_inner_edge(circle, car):
    """Steady cornering to the left: the car hugs the inner (left) edge with its front-left
    contact patch's outer edge on it (width_left - track_margin, within 0.05 mm: IPOPT's
    interior point, measured 0.013 mm) at every
    point; the patch channels equal the closed form of the solved q2, q3 (1e-9 m) and the
    rows' bodies; every patch within its bound (the right ones far from theirs); the car
    yaws into the corner (q3 > 0), which puts the front patch further left than the rear."""
    p, m, df = circle[car]
    q2, q3 = df["q2"].to_numpy(), df["q3"].to_numpy()
    upper, lower = WL - MARGIN, -(WR - MARGIN)
    sigma = sorted(m.s)
    for i in (1, 2):
        for j in (1, 2):
            col = df[f"patch_{i}{j}"].to_numpy()
            assert col == pytest.approx(_patch(p, q2, q3, i, j), abs=1e-9)
            body = np.array([pyo.value(m.track_limit[f"{i}{j}", s].body) for s in sigma])
            assert body == pytest.approx(col, abs=1e-9)
            bound = np.array([pyo.value(m.track_limit[f"{i}{j}", s].upper if j == 1 else
                                        m.track_limit[f"{i}{j}", s].lower) for s in sigma])
            assert bound == pytest.approx(np.full(len(sigma), upper if j == 1 else lower))
            if j == 1:
                assert col.max() <= upper + 1e-6
            else:
                assert col.min() >= lower - 1e-6 and col.min() > lower + 1.0
    assert df["patch_11"].to_numpy() == pytest.approx(np.full(len(df), upper), abs=5e-5)
    assert (q3 > 0).all() and (df["patch_21"] < df["patch_11"]).all()
    assert df["width_left"].to_numpy() == pytest.approx(np.full(len(df), WL))


@pytest.mark.integration
def test_wider_tyres_move_the_line_off_the_edge(circle):
    r"""With both tyres WIDER = 0.2 m wider, the car's reference line q2 moves away from the
    inner edge by :math:`a_1(\sin q_3' - \sin q_3) + \tfrac12(t_1 + w_1')\cos q_3' -
    \tfrac12(t_1 + w_1)\cos q_3` (the front-left patch stays on the edge; solved yaws,
    1e-6 m), which is half the change of width within 1 mm at these small yaws (q3 = 0.028
    rad: measured 0.09997 m); the car is a little faster on the wider circle it drives."""
    p, _, a = circle["base"]
    pw, _, b = circle["wide"]
    q3a, q3b = a["q3"].to_numpy(), b["q3"].to_numpy()
    shift = a["q2"].to_numpy() - b["q2"].to_numpy()
    formula = (p.a1 * (np.sin(q3b) - np.sin(q3a)) + 0.5 * (pw.t1 + pw.tw1) * np.cos(q3b)
               - 0.5 * (p.t1 + p.tw1) * np.cos(q3a))
    assert shift == pytest.approx(formula, abs=1e-6)
    assert shift == pytest.approx(np.full(len(shift), WIDER / 2), abs=1e-3)
    assert b["speed"].mean() > a["speed"].mean()


# ------------------------------------------------------------------------------ drive split
MU_LOW = 0.7
HAIRPIN = 15.0 * math.pi / 2          # [m] a 90-degree left-hander of radius 15 m


def _hairpin_solve(p):
    tr = ArcTrack([Segment.arc(15.0, math.pi / 2, "left"), Segment.straight(120.0)],
                  closed=False, name="hairpin exit")
    m = build_model(tr, p, start=0.0, length=HAIRPIN + 50.0, nfe=15, ncp=3, initial_speed=7.0)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return pyo.value(m.lap_time), trajectory_dataframe(m)


@pytest.mark.integration
def test_all_wheel_drive_leaves_a_slow_corner_faster_on_low_grip():
    r"""Out of a 15 m hairpin onto a straight, from 7 m/s, with mu = 0.7: the rear-wheel-drive
    fsae (47 kW, 240 kg) is traction-limited: on the straight from 15 m after the corner,
    where the power is not the limit (f_xa v < 0.95 P_max), its rear tyres are at their
    friction ellipse (>= 99 %, measured >= 99.5 %: its front tyres have no drive force); the
    same car with half the drive on the front axle (drive_ratio = 0.5) covers the sector at
    least 3 % faster (measured 4.92 s against 5.28 s, 6.8 %) and leaves it faster (26.1
    against 22.4 m/s), its front tyres taking k_d f_xa / 2 each; on the straight (below 90 %
    of P_max) these are at their friction ellipse (>= 99 %) and the rear ones below 60 %
    (measured 46 %): the even split takes the fronts, lighter when accelerating, to their
    limit first (measured: drive_ratio 0.4 and 0.35 take 4.77 and 4.74 s)."""
    fsae = load_vehicle("fsae").replace(mu_x0=MU_LOW, mu_y0=MU_LOW)
    awd = fsae.replace(drive_ratio=0.5)
    T_rwd, rwd = _hairpin_solve(fsae)
    T_awd, df = _hairpin_solve(awd)
    assert T_awd < 0.97 * T_rwd, (T_awd, T_rwd)
    assert df["speed"].iloc[-1] > rwd["speed"].iloc[-1]
    on_straight = (rwd["s_sector"] > HAIRPIN + 15.0) & (rwd["power"] < 0.95 * fsae.P_max)
    assert on_straight.sum() >= 10
    use = ind.friction_ellipse_use(fsae, rwd)[on_straight.to_numpy()]
    assert use[:, 2:].min() >= 0.99
    assert (rwd["f_11x"].abs() < 1e-2).all()            # rear-wheel drive: no front drive
    driving = df["f_xb"] > -1e-2
    assert df["f_11x"][driving].to_numpy() == pytest.approx(0.25 * df["f_xa"][driving].to_numpy(),
                                                            abs=1e-2)
    awd_straight = ((df["s_sector"] > HAIRPIN + 15.0) & (df["power"] < 0.9 * fsae.P_max)).to_numpy()
    use = ind.friction_ellipse_use(fsae, df)[awd_straight]
    assert awd_straight.sum() >= 10 and use[:, :2].min() >= 0.99 and use[:, 2:].max() < 0.6


# ------------------------------------------------------------------------------ engine car
@pytest.mark.integration
def test_engine_car_accelerates_on_its_gear_envelope():
    r"""The power row with an engine (tests/test_powertrain.py's four-gear test engine at a
    quarter of its torque, 40 kW cap): accelerating from 8 m/s along a flat straight, the car
    shifts through three gears (the envelope's gear, computed here from the closed forms), and
    wherever the rear tyres are below 95 % of their friction ellipse (not the grip) the power
    at the wheels is the car's power curve :math:`P(v)` (the PCHIP, within 0.2 %: the blends
    and IPOPT's interior point; measured 0.05 %) and within 3.5 % of the peak of the
    closed-form envelope :math:`\min(\max_k F_k(v)\,v, P_{max})` (the curve's fit,
    tests/test_powertrain.py; measured 2.2 %)."""
    import test_powertrain as tp
    from pyomo_lap.vehicle import powertrain as pt
    e = dict(tp.ENGINES["test engine"], P_max=40e3)
    e["engine_torque"] = tuple(0.25 * x for x in e["engine_torque"])
    p = load_vehicle("fsae").replace(**e)
    m = build_model(straight(), p, start=0.0, length=150.0, nfe=15, ncp=3, initial_speed=8.0)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    df = trajectory_dataframe(m)
    v = df["v_3x"].to_numpy()
    R = p.wheel_radius
    by_gear = np.array([[tp.hand_force(e, k, x, R) for k in range(4)] for x in v])
    gear = np.argmax(by_gear, axis=1)
    assert set(gear) >= {0, 1, 2} and np.all(np.diff(gear) >= 0)
    envelope = np.minimum(by_gear.max(axis=1) * v, e["P_max"])
    free = ind.friction_ellipse_use(p, df)[:, 2:].max(axis=1) < 0.95
    assert free.sum() >= 0.8 * len(df)
    power = df["power"].to_numpy()[free]
    assert power == pytest.approx(pt.wheel_power_curve(p)(v[free]), rel=2e-3)
    assert np.abs(power - envelope[free]).max() < 0.035 * envelope.max()
