r"""The powertrain (:mod:`pyomo_lap.vehicle.powertrain`) against closed forms written here.

An engine chosen for the tests: a piecewise-linear full-load torque curve (each segment's
:math:`T(\omega) = a + b\,\omega` written out below, not interpolated), four gears. In gear
:math:`k` at road speed :math:`v` the drive force is

.. math:: F_k(v) = \eta\, g_k g_f\, T(\omega_e)/R,\qquad \omega_e = g_k g_f v/R

while :math:`\omega_e` is within the curve's speeds, the force of the lowest engine speed below
it (a slipping clutch) and none above the highest (the rev limiter); the car uses the best
gear. The shift from first to second gear is where the two gears' lines cross, solved here as
a linear equation on the two segments the gears are on.
"""
import math

import numpy as np
import pytest

from pyomo_lap import load_vehicle
from pyomo_lap.vehicle import powertrain as pt
from pyomo_lap.vehicle.files import VehicleFileError, read_vehicle_file

# the engine: speeds [rad/s], torques [N m]; segments (a, b): T = a + b w on [w_i, w_i+1]
W = (100.0, 300.0, 500.0, 700.0)
TQ = (200.0, 300.0, 280.0, 100.0)
SEGMENTS = [(200.0 - 0.5 * 100.0, 0.5), (300.0 + 0.1 * 300.0, -0.1), (280.0 + 0.9 * 500.0, -0.9)]
GEARS = (3.0, 2.0, 1.4, 1.0)
FINAL = 4.0
ETA = 0.9
P_CAP = 110.0e3          # [W] below the envelope's peak (0.9 x 280 N m x 500 rad/s = 126 kW)


def torque(w: float) -> float:
    """The full-load torque at the engine speed ``w`` (within [W[0], W[-1]]) from the
    segments' lines."""
    assert W[0] <= w <= W[-1]
    for (a, b), lo, hi in zip(SEGMENTS, W[:-1], W[1:]):
        if lo <= w <= hi:
            return a + b * w
    raise AssertionError(w)


def gear_force(k: int, v: float, R: float) -> float:
    """F_k(v) of the module docstring [N]."""
    r = GEARS[k] * FINAL
    w = r * v / R
    if w > W[-1]:
        return 0.0
    return ETA * r * torque(max(w, W[0])) / R


@pytest.fixture(scope="module")
def car():
    """fsae with the test engine (its own P_max replaced by the cap)."""
    return load_vehicle("fsae").replace(engine_speed=W, engine_torque=TQ, gear_ratios=GEARS,
                                        final_drive=FINAL, drivetrain_efficiency=ETA,
                                        P_max=P_CAP)


def envelope(p, v):
    return pt.engine_envelope(v, W, TQ, GEARS, FINAL, ETA, p.wheel_radius)


@pytest.mark.unit
def test_segments_are_the_torque_curve():
    """The lines written for the closed forms pass through the curve's points."""
    for (a, b), lo, hi, t_lo, t_hi in zip(SEGMENTS, W[:-1], W[1:], TQ[:-1], TQ[1:]):
        assert a + b * lo == pytest.approx(t_lo) and a + b * hi == pytest.approx(t_hi)


@pytest.mark.unit
def test_envelope_is_the_best_gear(car):
    """At 400 speeds from 0 to past the top gear's redline the envelope's force is the largest
    of the four gears' forces written here, and its gear is the one that gives it."""
    R = car.wheel_radius
    v_top = W[-1] * R / (GEARS[-1] * FINAL)
    v = np.linspace(0.0, 1.1 * v_top, 400)
    F, gear = envelope(car, v)
    by_gear = np.array([[gear_force(k, x, R) for k in range(len(GEARS))] for x in v])
    best = by_gear.max(axis=1)
    assert F == pytest.approx(best, rel=1e-12, abs=1e-9)
    has = best > 0
    assert np.all(by_gear[np.flatnonzero(has), gear[has]] == pytest.approx(best[has], rel=1e-12))
    assert np.all(gear[~has] == -1)


@pytest.mark.unit
def test_shift_point_from_first_to_second_gear(car):
    r"""The crossing of first and second gear: first on the falling segment 500-700 rad/s,
    second on 300-500 rad/s, :math:`r_1 T_A(r_1 v/R) = r_2 T_B(r_2 v/R)` is linear in
    :math:`v`: :math:`v^* = R (r_2 a_B - r_1 a_A)/(r_1^2 b_A - r_2^2 b_B)`. Just below it
    the envelope is in first gear, just above in second, and at it both forces are equal."""
    R = car.wheel_radius
    r1, r2 = GEARS[0] * FINAL, GEARS[1] * FINAL
    (aA, bA), (aB, bB) = SEGMENTS[2], SEGMENTS[1]
    v_star = R * (r2 * aB - r1 * aA) / (r1 ** 2 * bA - r2 ** 2 * bB)
    assert 500.0 < r1 * v_star / R < 700.0 and 300.0 < r2 * v_star / R < 500.0   # on those segments
    F_star = ETA * r1 * (aA + bA * r1 * v_star / R) / R
    assert F_star == pytest.approx(ETA * r2 * (aB + bB * r2 * v_star / R) / R, rel=1e-12)
    F, gear = envelope(car, np.array([v_star * (1 - 1e-3), v_star, v_star * (1 + 1e-3)]))
    assert list(gear[[0, 2]]) == [0, 1]
    assert F[1] == pytest.approx(F_star, rel=1e-9)
    # second gear would also be the better one well above the crossing, before first's redline
    v_red1 = W[-1] * R / r1
    assert v_star < v_red1 and envelope(car, np.array([0.5 * (v_star + v_red1)]))[1][0] == 1


@pytest.mark.unit
def test_redline_and_clutch_slip(car):
    """No force above the top gear's redline W[-1] R / (g_top g_f); below first gear's lowest
    engine speed the force of that speed in first gear, eta g_1 g_f T(W[0]) / R, at every
    speed down to 0."""
    R = car.wheel_radius
    v_top = W[-1] * R / (GEARS[-1] * FINAL)
    F, gear = envelope(car, np.array([v_top * (1 - 1e-9), v_top * (1 + 1e-6), 2 * v_top]))
    assert F[0] == pytest.approx(ETA * GEARS[-1] * FINAL * TQ[-1] / R)
    assert list(F[1:]) == [0.0, 0.0] and list(gear[1:]) == [-1, -1]
    v_low = W[0] * R / (GEARS[0] * FINAL)
    v = np.linspace(0.0, v_low, 7)
    F, gear = envelope(car, v)
    assert F == pytest.approx(np.full(7, ETA * GEARS[0] * FINAL * TQ[0] / R), rel=1e-12)
    assert np.all(gear == 0)


# a second engine, closer to a real one: a smooth torque curve on 14 points, five gears
# whose shifts are at the redline (the lower gear is still the better one there: the
# envelope drops), and a cap above the envelope's peak
W2 = tuple(np.linspace(100.0, 750.0, 14))
TQ2 = tuple(300.0 - 300.0 * ((w - 450.0) / 450.0) ** 2 for w in W2)
ENGINES = {
    "test engine": dict(engine_speed=W, engine_torque=TQ, gear_ratios=GEARS, final_drive=FINAL,
                        drivetrain_efficiency=ETA, P_max=P_CAP),
    "smooth engine": dict(engine_speed=W2, engine_torque=TQ2, gear_ratios=(3.2, 2.2, 1.7, 1.35, 1.1),
                          final_drive=3.9, drivetrain_efficiency=0.9, P_max=200e3),
}


def hand_force(e: dict, k: int, v: float, R: float) -> float:
    """F_k(v) of the module docstring for the engine ``e`` [N], the torque on the line
    through the two points of the curve around the engine speed."""
    ws, tq = e["engine_speed"], e["engine_torque"]
    r = e["gear_ratios"][k] * e["final_drive"]
    w = max(r * v / R, ws[0])
    if w > ws[-1]:
        return 0.0
    i = max(j for j in range(len(ws) - 1) if ws[j] <= w)
    T = tq[i] + (tq[i + 1] - tq[i]) * (w - ws[i]) / (ws[i + 1] - ws[i])
    return e["drivetrain_efficiency"] * r * T / R


@pytest.mark.unit
@pytest.mark.parametrize("name", list(ENGINES))
def test_wheel_power_curve_follows_the_envelope(name):
    r"""The smooth wheel-power curve (PCHIP on at most 16 knots) is within 3.5 % of P_max of
    :math:`\min(\max_k F_k v, P_{max})` from the closed forms at speeds more than 0.5 m/s from
    a shift, within 5 % everywhere up to the top speed (measured: 2.70 % and 3.26 % of P_max:
    the knots cannot follow every corner of a four- or five-gear envelope, the 0.1 % the knot
    placement aims at is not reached), 0 from 1.02 times the top speed on, and its top speed
    is the top gear's redline. (Before the fix of wheel_power_curve, whose knots were chosen
    without the zero-power knot past the top speed that bends PCHIP's last pieces: 5.2 % and
    3.2 %.)"""
    e = ENGINES[name]
    p = load_vehicle("fsae").replace(**e)
    R = p.wheel_radius
    n_gears = len(e["gear_ratios"])
    curve = pt.wheel_power_curve(p)
    v_top = e["engine_speed"][-1] * R / (e["gear_ratios"][-1] * e["final_drive"])
    assert curve.v_top == pytest.approx(v_top)
    assert len(curve.speed) <= pt.KNOTS
    v = np.linspace(0.0, v_top, 2001)
    by_gear = np.array([[hand_force(e, k, x, R) for k in range(n_gears)] for x in v])
    exact = np.minimum(by_gear.max(axis=1) * v, e["P_max"])
    best = np.argmax(by_gear, axis=1)
    shifts = v[np.flatnonzero(np.diff(best))]
    assert len(shifts) == n_gears - 1                 # each gear in its turn
    away = np.min(np.abs(v[:, None] - shifts[None, :]), axis=1) > 0.5
    err = np.abs(curve(v) - exact) / e["P_max"]
    assert err[away].max() < 0.035, err[away].max()
    assert err.max() < 0.05, err.max()
    assert curve(np.array([1.02 * v_top, 1.5 * v_top])) == pytest.approx([0.0, 0.0], abs=1e-6)
    assert curve(v).max() <= e["P_max"] * (1 + 1e-3)


CURVES = {**ENGINES, "power curve": dict(power_curve_speed=(10.0, 20.0, 30.0, 40.0),
                                         power_curve_power=(20e3, 40e3, 47e3, 30e3))}


@pytest.mark.unit
@pytest.mark.parametrize("name", list(CURVES))
def test_blended_power_equals_the_pchip(name):
    """The tanh-blended pieces (power_expression, on floats) agree with the PCHIP interpolant
    (PowerCurve.__call__) within 0.1 % of the largest power at 3000 speeds from v_min = 5 m/s
    (the OCP's lower bound on v_3x) to 1.1 times the top speed and at 61 speeds across each
    blend (measured: 0.002 %, 0.011 %, 0.003 %), and are never below 0 (no band of speeds
    where the power row cannot hold): before the fix of wheel_power_curve the blend dipped to
    -82, -350 and -55 W just past the last knot, 0.25 % of the peak off for the smooth
    engine. At 0 m/s the blend is half the first piece, 0 here: P(0) = 0."""
    curve = pt.wheel_power_curve(load_vehicle("fsae").replace(**CURVES[name]))
    eps = pt.BLEND_FRACTION * np.diff(curve.speed).min()        # the blends' half-width
    near_knots = (curve.speed[:, None] + eps * np.linspace(-6, 6, 61)[None, :]).ravel()
    v = np.concatenate([np.linspace(5.0, 1.1 * curve.v_top, 3000), near_knots[near_knots >= 5.0]])
    smooth = np.array([pt.power_expression(curve, float(x)) for x in v])
    assert np.abs(smooth - curve(v)).max() <= 1e-3 * curve.power.max()
    assert smooth.min() >= -1e-6 * curve.power.max()
    assert pt.power_expression(curve, 0.0) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.component
def test_blended_power_through_pyomo_and_casadi_symbols(car):
    """power_expression written on a Pyomo variable and on a CasADi symbol gives the float
    evaluation's numbers (to 1e-9 relative) and so the PCHIP's within 0.1 % of the peak, at
    200 speeds; power_available on a numpy array is the PCHIP itself."""
    import casadi as ca
    import pyomo.environ as pyo
    curve = pt.wheel_power_curve(car)
    v = np.linspace(5.0, 1.05 * curve.v_top, 200)
    m = pyo.ConcreteModel()
    m.v = pyo.Var()
    e_pyo = pt.power_expression(curve, m.v)
    x = ca.SX.sym("v")
    f_ca = ca.Function("P", [x], [pt.power_expression(curve, x)])
    tol = 1e-3 * curve.power.max()
    for val in v:
        m.v.set_value(float(val))
        ref = pt.power_expression(curve, float(val))
        assert pyo.value(e_pyo) == pytest.approx(ref, rel=1e-9, abs=1e-6)
        assert float(f_ca(val)) == pytest.approx(ref, rel=1e-9, abs=1e-6)
        assert abs(ref - float(curve(np.array([val]))[0])) <= tol
    assert pt.power_available(car, v) == pytest.approx(curve(v))


@pytest.mark.unit
def test_constant_power_curve_gives_p_max(car):
    """A power curve flat at or above P_max gives P_max (within 0.1 %) at every speed from
    v_min to its last speed; P_max alone (no curve) gives P_max exactly."""
    fsae = load_vehicle("fsae")
    for level in (fsae.P_max, 2 * fsae.P_max):
        p = fsae.replace(power_curve_speed=(0.0, 20.0, 60.0), power_curve_power=(level,) * 3)
        curve = pt.wheel_power_curve(p)
        v = np.linspace(5.0, 60.0, 500)
        smooth = np.array([pt.power_available(p, float(x)) for x in v])
        assert smooth == pytest.approx(np.full(500, fsae.P_max), rel=1e-3)
        assert curve(v) == pytest.approx(np.full(500, fsae.P_max), rel=1e-9)
    assert pt.wheel_power_curve(fsae) is None
    assert pt.power_available(fsae, 33.0) == fsae.P_max
    assert pt.power_available(fsae, np.array([5.0, 50.0])) == pytest.approx([fsae.P_max] * 2)


# ------------------------------------------------------------------------------- the schema
FSAE_TEXT = (load_vehicle.__globals__["models_dir"]() / "fsae.toml").read_text()


def _file(tmp_path, extra: str):
    f = tmp_path / "car.toml"
    f.write_text(FSAE_TEXT + "\n" + extra)
    return f


@pytest.mark.unit
@pytest.mark.parametrize("extra, words", [
    ("[power_curve]\nspeed = [0.0, 10.0, 20.0]\npower = [0.0, 1.0e4]\n",
     ["[power_curve] speed (3 values), power (2 values)"]),
    ("[power_curve]\nspeed = [0.0, 20.0, 10.0]\npower = [0.0, 1.0e4, 2.0e4]\n",
     ["[power_curve] speed = [0.0, 20.0, 10.0]", "increasing"]),
    ("[power_curve]\nspeed = [0.0, 10.0, 10.0]\npower = [0.0, 1.0e4, 2.0e4]\n",
     ["[power_curve] speed", "increasing"]),
    ("[power_curve]\nspeed = [0.0, 10.0, 20.0]\npower = [0.0, -1.0e4, 2.0e4]\n",
     ["[power_curve] power", ">= 0"]),
    ("[power_curve]\nspeed = [0.0, 10.0]\n", ["[power_curve]", "speed and power together"]),
    ("[engine]\nspeed = [100.0, 700.0]\ntorque = [200.0, -5.0]\ngear_ratios = [3.0]\n"
     "final_drive = 4.0\n", ["[engine] torque", ">= 0"]),
    ("[engine]\nspeed = [700.0, 100.0]\ntorque = [200.0, 100.0]\ngear_ratios = [3.0]\n"
     "final_drive = 4.0\n", ["[engine] speed", "increasing"]),
    ("[engine]\nspeed = [100.0, 700.0]\ntorque = [200.0, 100.0]\n", ["[engine]", "gear_ratios"]),
    ("[power_curve]\nspeed = [0.0, 10.0]\npower = [0.0, 1.0e4]\n"
     "[engine]\nspeed = [100.0, 700.0]\ntorque = [200.0, 100.0]\ngear_ratios = [3.0]\n"
     "final_drive = 4.0\n", ["[power_curve] and [engine] both given"]),
], ids=["unequal lengths", "decreasing speeds", "repeated speed", "negative power",
        "speed without power", "negative torque", "decreasing engine speeds",
        "engine without gears", "curve and engine together"])
def test_schema_refuses_bad_curves_naming_the_key(tmp_path, extra, words):
    with pytest.raises(VehicleFileError) as exc:
        read_vehicle_file(_file(tmp_path, extra))
    text = str(exc.value)
    for w in words:
        assert w in text, text


@pytest.mark.unit
def test_schema_reads_good_curves(tmp_path):
    """The same sections with good values are read into the fields (the control for the
    refusals above)."""
    p = read_vehicle_file(_file(tmp_path, "[engine]\nspeed = [100.0, 300.0, 500.0, 700.0]\n"
                                "torque = [200.0, 300.0, 280.0, 100.0]\n"
                                "gear_ratios = [3.0, 2.0, 1.4, 1.0]\nfinal_drive = 4.0\n"
                                "efficiency = 0.9\n"))
    assert p.engine_speed == W and p.engine_torque == TQ and p.gear_ratios == GEARS
    assert p.final_drive == FINAL and p.drivetrain_efficiency == ETA
