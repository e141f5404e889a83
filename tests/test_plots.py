"""The figures of ``pyomo-lap plot`` (``pyomo_lap.plots.figures``) on small synthetic results
folders (no solve): the friction envelope of the GG diagram against its closed form, the
distance window ``--range`` (parsing, refusals, the axes it limits), the track map's markers
and start/finish line, and the legends placed outside the axes."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pyomo_lap.plots import figures as plots
from pyomo_lap.vehicle import envelope
from pyomo_lap.plots.figures import (FIGURES, distance_label, friction_envelope, marker_step,
                                  parse_range, plot_results, resolve_range)

G = 9.81
VEHICLE = {"name": "test", "gravity": G, "m": 240.0, "m_u": 40.0, "mu_x0": 1.4, "mu_y0": 1.6,
           "Cz1": 0.5, "Cz2": 0.8, "rho": 1.2, "S": 1.4, "Cx": 0.9, "P_max": 47e3,
           "a1": 0.765, "a2": 0.815, "h": 0.435, "wheel_radius": 0.26, "hq1": 0.335,
           "hq2": 0.335, "t1": 1.21, "t2": 1.21, "k1": 36e3, "k2": 24e3, "brake_ratio": 0.8,
           "Fz0": 600.0, "pD2": -0.1, "C": 1.4, "E": 0.0, "pK1": 45.4, "pK2": 2.0,
           "width": 1.4, "fz_min": 50.0}
DISTANCE_FIGURES = ("racing_line", "elevation", "speed", "controls", "attitudes", "power",
                    "vertical_loads")


def _run(n=201, radius=100.0, start=0.0, closed=True):
    """A car going round a circle of ``radius`` metres (a closed lap, or an open sector of the
    same length starting at ``start``), with every channel the figures read."""
    length = 2 * math.pi * radius
    ss = np.linspace(0.0, length, n)
    phi = ss / radius
    v = 20.0 + 5.0 * np.sin(2 * phi)
    df = pd.DataFrame({
        "s": start + ss, "s_sector": ss,
        "t": np.concatenate([[0.0], np.cumsum(np.diff(ss) / v[1:])]),
        "x_spine": radius * np.sin(phi), "y_spine": radius * (1 - np.cos(phi)),
        "z_spine": 2.0 * np.sin(phi), "width_left": 5.0, "width_right": 4.0,
        "q2": 2.0 * np.sin(3 * phi), "q4": -0.02 + 0 * phi, "q5": 0.001 * np.sin(phi),
        "q6": 0.01 * np.cos(phi), "f_xa": 800.0 * (1 + np.sin(phi)),
        "f_xb": -300.0 * (1 + np.cos(phi)),
        "delta": 0.05 + 0 * phi, "speed": v, "speed_kmh": 3.6 * v, "a_x": 5.0 * np.cos(2 * phi),
        "a_y": v ** 2 / radius, "power": 30e3 * (1 + np.sin(phi)) / 2,
        "f_11z": 600.0 + 0 * phi, "f_12z": 500.0 + 0 * phi, "f_21z": 650.0 + 0 * phi,
        "f_22z": 550.0 + 0 * phi, "v_point_mass": v * 0.98, "t_point_mass": 0.0 * phi})
    if closed:
        df.loc[df.index[-1], "s"] = 0.0     # a closed lap's last point is the start again
    df["t_point_mass"] = df["t"] * 1.01
    summary = {"track": "circle", "vehicle": "test", "start_m": start, "length_m": length,
               "lap_time_s": float(df["t"].iloc[-1]), "periodic": closed}
    return df, summary


@pytest.fixture
def results(tmp_path):
    """A results folder as ``pyomo-lap solve`` writes it: trajectory, summary, the
    workbook's vehicle sheet."""
    from pyomo_lap.results.table import write_results
    df, summary = _run()
    return write_results(tmp_path / "results", df, summary, vehicle_params=VEHICLE)


# ---- the friction envelope ----------------------------------------------------------------

def _axle_car(**changes):
    """A car for the closed forms: no downforce or drag (rho = 0), no load sensitivity, no
    minimum wheel load, and the given changes."""
    return {**VEHICLE, "rho": 0.0, "pD2": 0.0, "fz_min": 0.0, **changes}


def _h_g(veh, downforce=0.0):
    """Height of the centre of mass [m]: the sprung mass at h lowered by its steady heave
    (m_s g + downforce)/(2 k1 + 2 k2), the unsprung mass at the wheel centres."""
    m_s = veh["m"] - veh["m_u"]
    sag = (m_s * G + downforce) / (2 * veh["k1"] + 2 * veh["k2"])
    return (m_s * (veh["h"] - sag) + veh["m_u"] * veh["wheel_radius"]) / veh["m"]


@pytest.mark.unit
def test_envelope_without_transfer_and_with_the_static_brake_balance_is_mu_g():
    """With h = 0 (unsprung mass at the road, no-roll centres at the road) no load transfer;
    k_b the front share of the static load: both axles saturate together at mu_x g, the
    lateral limit is mu_y g; the rear-driven traction limit is mu_x g a1/l (the rear load),
    P_max/(m v) where the power caps it."""
    l = VEHICLE["a1"] + VEHICLE["a2"]
    veh = _axle_car(h=0.0, wheel_radius=0.0, hq1=0.0, hq2=0.0, brake_ratio=VEHICLE["a2"] / l)
    env = friction_envelope(veh, 10.0)
    assert env["ax_brake"] == pytest.approx(-1.4 * G, rel=1e-9)
    assert env["ay_max"] == pytest.approx(1.6 * G, rel=1e-9)
    assert env["ax_traction"] == pytest.approx(1.4 * G * VEHICLE["a1"] / l, rel=1e-9)
    assert env["traction_limit"] == "rear axle" and env["h_G"] == 0.0
    assert env["drag"] == 0.0 and env["downforce"] == 0.0 and env["g_eff"] == pytest.approx(G)
    # the same with the real heights and load_transfer=False
    off = friction_envelope({**veh, "h": 0.4, "wheel_radius": 0.26, "hq1": 0.3, "hq2": 0.3},
                            10.0, load_transfer=False)
    np.testing.assert_allclose(off["a_x"], env["a_x"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(off["a_y"], env["a_y"], rtol=1e-9, atol=1e-9)
    # a closed curve; every point limited by an axle or the power
    assert env["a_x"][0] == pytest.approx(env["a_x"][-1]) and len(env["a_x"]) == 241
    assert set(env["limit"]) <= set(envelope.ENVELOPE_LIMITS)
    fast = friction_envelope(veh, 40.0)                    # P/(m v) = 4.9 m/s^2 < mu_x g a1/l
    assert fast["ax_traction"] == pytest.approx(47e3 / (240.0 * 40.0), rel=1e-9)
    assert fast["traction_limit"] == "power"
    assert fast["ay_max"] == pytest.approx(1.6 * G, rel=1e-9)


@pytest.mark.unit
def test_braking_on_the_front_axle_only_meets_the_closed_form_with_transfer():
    """k_b = 1: the front axle brakes alone, its load grows by m a h_G / l:
    m a - F_drag = mu (F1 + m a h_G / l), F1 the static front load with its downforce."""
    veh = _axle_car(brake_ratio=0.6)
    m, l, mu = veh["m"], veh["a1"] + veh["a2"], veh["mu_x0"]
    env = friction_envelope(veh, 10.0, brake_ratio=1.0)
    F1 = m * G * veh["a2"] / l
    h_g = _h_g(veh)
    a = mu * F1 / (m - mu * m * h_g / l)
    assert env["ax_brake"] == pytest.approx(-a, rel=1e-9)
    assert env["brake_limit"] == "front axle" and env["brake_ratio"] == 1.0
    assert env["h_G"] == pytest.approx(h_g)
    assert friction_envelope({**veh, "brake_ratio": 1.0}, 10.0)["ax_brake"] == pytest.approx(-a)
    # with downforce and drag: the drag brakes too, the downforce loads the axles and
    # lowers the car
    aero = {**veh, "rho": 1.2, "brake_ratio": 1.0}
    v = 30.0
    q = 0.5 * 1.2 * aero["S"] * v ** 2
    drag, down1 = aero["Cx"] * q, aero["Cz1"] * q
    h_g = _h_g(aero, (aero["Cz1"] + aero["Cz2"]) * q)
    a = (mu * (F1 + down1) + drag) / (m - mu * m * h_g / l)
    env = friction_envelope(aero, v)
    assert env["ax_brake"] == pytest.approx(-a, rel=1e-9)
    assert env["drag"] == pytest.approx(drag) and env["static_loads"][0] == pytest.approx(
        (F1 + down1) / 2)
    # a brake balance must be a share
    with pytest.raises(ValueError, match="brake_ratio"):
        friction_envelope(veh, 10.0, brake_ratio=1.5)


@pytest.mark.unit
def test_rear_driven_traction_meets_the_closed_form_with_transfer():
    """Traction on the rear axle only, its load grown by the transfer:
    m a = mu (F2 + m a h_G / l), a = mu F2 / (m - mu m h_G / l), below the power cap."""
    veh = _axle_car()
    m, l, mu = veh["m"], veh["a1"] + veh["a2"], veh["mu_x0"]
    F2 = m * G * veh["a1"] / l
    a = mu * F2 / (m - mu * m * _h_g(veh) / l)
    assert 47e3 / 5.0 > m * a                               # no power cap at 5 m/s
    env = friction_envelope(veh, 5.0)
    assert env["ax_traction"] == pytest.approx(a, rel=1e-9)
    assert env["traction_limit"] == "rear axle"


@pytest.mark.unit
def test_envelope_reduces_to_the_whole_car_ellipse_without_transfer_and_an_ideal_balance():
    """Equal static loads on the four tyres (a1 = a2, Cz1 = Cz2), no transfer (h = 0),
    k_b = 1/2: the braking half is the old whole-car ellipse, load sensitivity at a quarter
    of the load per tyre, moved by the drag; the power caps the traction at high speed."""
    veh = {**VEHICLE, "a1": 0.8, "a2": 0.8, "Cz1": 0.65, "Cz2": 0.65, "h": 0.0,
           "wheel_radius": 0.0, "hq1": 0.0, "hq2": 0.0, "brake_ratio": 0.5}
    for v, sensitivity in ((30.0, True), (40.0, True), (30.0, False)):
        q = 0.5 * 1.2 * 1.4 * v ** 2
        normal = 240.0 * G + 1.3 * q
        scale = 1 - 0.1 * (normal / 4 - 600.0) / 600.0 if sensitivity else 1.0
        env = friction_envelope(veh, v, load_sensitivity=sensitivity)
        drag = 0.9 * q
        assert env["g_eff"] == pytest.approx(normal / 240.0)
        assert env["mu_x"] == pytest.approx(1.4 * scale)
        assert env["ay_max"] == pytest.approx(1.6 * scale * normal / 240.0, rel=1e-9)
        assert env["ax_brake"] == pytest.approx(-(1.4 * scale * normal + drag) / 240.0, rel=1e-9)
        brake = env["a_x"] <= -drag / 240.0
        r = (((env["a_x"] + drag / 240.0) / (1.4 * scale * normal / 240.0)) ** 2
             + (env["a_y"] / (1.6 * scale * normal / 240.0)) ** 2)
        assert brake.sum() >= 120
        np.testing.assert_allclose(r[brake], 1.0, rtol=1e-9)
    fast = friction_envelope(veh, 40.0)                    # P/v < mu_x N/2 of the rear axle
    assert fast["ax_traction"] == pytest.approx((47e3 / 40.0 - 0.9 * 0.5 * 1.2 * 1.4 * 1600)
                                                / 240.0, rel=1e-9)


def _lateral_transfer(veh, a_y):
    """Per-tyre lateral load transfer [N] of each axle, the model's eqs (26)-(30) written
    out: roll moment m h_G a_y - Y1 hq1 - Y2 hq2 split by the roll stiffness k_i t_i^2/2."""
    m, l = veh["m"], veh["a1"] + veh["a2"]
    y1, y2 = m * a_y * veh["a2"] / l, m * a_y * veh["a1"] / l
    kphi1, kphi2 = veh["k1"] * veh["t1"] ** 2 / 2, veh["k2"] * veh["t2"] ** 2 / 2
    roll = m * _h_g(veh) * a_y - y1 * veh["hq1"] - y2 * veh["hq2"]
    return ((kphi1 * roll / (kphi1 + kphi2) + y1 * veh["hq1"]) / veh["t1"],
            (kphi2 * roll / (kphi1 + kphi2) + y2 * veh["hq2"]) / veh["t2"])


@pytest.mark.unit
def test_lateral_transfer_costs_grip_through_load_sensitivity_and_the_shared_slip_angle():
    """Pure cornering (the point of the curve at zero tyre force along x), no aero.
    Every tyre at its own peak: an axle carries mu0 (1 + pD2 (f - Fz0)/Fz0) f summed over
    its tyres, f = F_i/2 -+ dF_i (a quadratic in a_y). One slip angle per axle (the model):
    less, the lighter tyre at its peak (the Magic Formula of car.py) limits the axle."""
    from scipy.optimize import brentq

    from pyomo_lap.vehicle.car import load_vehicle
    from pyomo_lap.vehicle.tyres import tyre_lateral_angle
    veh = _axle_car(pD2=-0.1)
    m, l, mu0, fz0, pd2 = veh["m"], veh["a1"] + veh["a2"], veh["mu_y0"], veh["Fz0"], -0.1
    n = 241
    assert np.linspace(0.0, 2 * np.pi, n)[60] == pytest.approx(np.pi / 2)

    def axle_margin(a_y, i):
        F = m * G * (veh["a2"] if i == 0 else veh["a1"]) / l
        Y = m * a_y * (veh["a2"] if i == 0 else veh["a1"]) / l
        dF = _lateral_transfer(veh, a_y)[i]
        return sum(mu0 * (1 + pd2 * (f - fz0) / fz0) * f for f in (F / 2 - dF, F / 2 + dF)) - Y

    peak = friction_envelope(veh, 10.0, n=n, shared_slip=False)
    expected = min(brentq(axle_margin, 1.0, 30.0, args=(i,)) for i in (0, 1))
    assert peak["a_y"][60] == pytest.approx(expected, rel=1e-9)
    assert peak["a_x"][60] == pytest.approx(0.0, abs=1e-9)
    no_transfer = friction_envelope(veh, 10.0, n=n, load_transfer=False, shared_slip=False)
    assert peak["a_y"][60] < no_transfer["a_y"][60]

    shared = friction_envelope(veh, 10.0, n=n)
    assert shared["a_y"][60] < peak["a_y"][60]
    # by hand with car.py's Magic Formula: the slip angle at which the lighter tyre of the
    # limiting axle peaks, the axle's lateral force there against its share of m a_y
    p = load_vehicle("fsae").replace(mu_y0=veh["mu_y0"], mu_x0=veh["mu_x0"], pD2=pd2,
                                     Fz0=fz0, C=veh["C"], E=veh["E"], pK1=veh["pK1"],
                                     pK2=veh["pK2"])
    a_y = shared["a_y"][60]
    i = 0 if shared["limit"][60] == "front axle" else 1
    F = m * G * (veh["a2"] if i == 0 else veh["a1"]) / l
    dF = _lateral_transfer(veh, a_y)[i]
    light, heavy = F / 2 - dF, F / 2 + dF
    alpha = brentq(lambda al: tyre_lateral_angle(p, al, light)[1] - np.pi / 2, 1e-6, 1.0)
    force = sum(D * np.sin(th)
                for D, th in (tyre_lateral_angle(p, alpha, f) for f in (light, heavy)))
    assert force == pytest.approx(m * a_y * (veh["a2"] if i == 0 else veh["a1"]) / l, rel=1e-9)
    assert tyre_lateral_angle(p, alpha, heavy)[1] < np.pi / 2        # the heavy one short of it


@pytest.mark.unit
def test_tyre_loads_are_statically_equivalent_to_the_accelerations():
    """The four loads of the envelope sum to the weight and the downforce, their moments
    balance the inertial moments m h_G a_y (roll) and m h_G a_x plus the aerodynamic
    pitch moment (pitch), as the model's loads do (car.py's module docstring)."""
    veh = {**VEHICLE}
    c = envelope._envelope_car(veh, 30.0)
    a_x, a_y = np.array([-12.0, 3.0]), np.array([15.0, -8.0])
    (f11, f12, f21, f22), _ = envelope._envelope_tyre_loads(c, a_x, a_y)
    np.testing.assert_allclose(f11 + f12 + f21 + f22, 240.0 * G + c.down)
    t1, t2 = veh["t1"], veh["t2"]
    np.testing.assert_allclose((f11 - f12) * t1 / 2 + (f21 - f22) * t2 / 2, -c.mh * a_y)
    np.testing.assert_allclose((f11 + f12) * veh["a1"] - (f21 + f22) * veh["a2"],
                               -c.mh * a_x + c.down1 * veh["a1"] - c.down2 * veh["a2"],
                               atol=1e-9)


@pytest.mark.unit
def test_envelope_car_evaluates_the_registry_tyre_and_its_inverse():
    """The envelope's namespace of floats (:func:`_envelope_car`) is a car for the registry's
    NumPy functions: the Magic Formula's force fraction at 0.05 rad is sin(theta) of the
    equations' :func:`tyre_lateral_angle` on the car, and its slip angle at that theta is
    0.05 rad back (bisection for E other than 0 and 1)."""
    from pyomo_lap.vehicle.car import load_vehicle
    from pyomo_lap.vehicle.tyres import MAGIC_FORMULA, tyre_lateral_angle
    p = load_vehicle("fsae")
    for E in (0.0, -0.8, 0.5, 1.0):
        q = p.replace(E=E)
        c = envelope._envelope_car(q, 20.0)
        assert c.tyre is MAGIC_FORMULA
        fz = np.array([300.0, 900.0, 1800.0])
        D = np.array([tyre_lateral_angle(q, 0.05, f)[0] for f in fz])
        th = np.array([tyre_lateral_angle(q, 0.05, f)[1] for f in fz])
        np.testing.assert_allclose(MAGIC_FORMULA.fraction(c, 0.05, fz, D), np.sin(th), rtol=1e-12)
        np.testing.assert_allclose(MAGIC_FORMULA.slip_at(c, fz, D, th), 0.05, rtol=1e-9)


@pytest.mark.unit
def test_fsae_envelope_is_limited_by_the_rear_axle_under_braking_and_near_the_run():
    """The bundled car at 135 km/h: the brake balance 0.8 puts too little on the front for
    a hard stop, so the unloaded rear axle limits the braking; its limit solves
    (1 - k_b)(m a - F_drag)/2 = mu_x(f) f for one rear tyre, f its load with the transfer.
    Far tighter than the whole-car ellipse (2.31 g lateral, 2.73 g braking), its lateral
    limit is close to the largest lateral acceleration of the Zandvoort lap (1.85 g)."""
    from pyomo_lap.vehicle.car import load_vehicle
    p = load_vehicle("fsae")
    v = 135 / 3.6
    env = friction_envelope(p, v)
    assert env["brake_limit"] == "rear axle"
    m, l, kb = p.m, p.l, p.brake_ratio
    q = 0.5 * p.rho * p.S * v ** 2
    drag, down = p.Cx * q, (p.Cz1 + p.Cz2) * q
    sag = (p.m_s * p.gravity + down) / (2 * p.k1 + 2 * p.k2)
    mh = p.m_s * (p.h - sag) + p.m_u * p.wheel_radius
    F2 = m * p.gravity * p.a1 / l + p.Cz2 * q
    # f = F2/2 - mh a/(2 l); (1 - kb)(m a - drag)/2 = mu_x0 (1 + pD2 (f - Fz0)/Fz0) f
    coeffs = np.polynomial.Polynomial([F2 / 2, -mh / (2 * l)])
    mu = p.mu_x0 * (1 + p.pD2 * (coeffs - p.Fz0) / p.Fz0)
    demand = np.polynomial.Polynomial([-(1 - kb) * drag / 2, (1 - kb) * m / 2])
    roots = (mu * coeffs - demand).roots()
    a = min(r.real for r in roots if abs(r.imag) < 1e-9 and r.real > 0)
    assert env["ax_brake"] == pytest.approx(-a, rel=1e-9)
    assert 1.8 * p.gravity < env["ay_max"] < 1.95 * p.gravity
    assert env["ax_brake"] > -2.6 * p.gravity


@pytest.mark.unit
def test_envelope_needs_the_vehicle_parameters():
    """A missing parameter is a KeyError; the tyre model's parameters are needed for the shared slip angle only."""
    with pytest.raises(KeyError):
        friction_envelope({"m": 200.0}, 10.0)
    tyreless = {k: v for k, v in VEHICLE.items() if k not in ("C", "E", "pK1", "pK2")}
    with pytest.raises(KeyError):
        friction_envelope(tyreless, 10.0)
    assert friction_envelope(tyreless, 10.0, shared_slip=False)["ay_max"] > 0


@pytest.mark.unit
def test_gg_diagram_draws_the_envelopes_at_the_speed_percentiles_and_says_its_simplifications():
    """The GG diagram draws one envelope per speed percentile and its legend says the simplifications."""
    df, summary = _run()
    fig = FIGURES["gg"](df, summary, VEHICLE)
    ax = fig.axes[0]
    leg = ax.get_legend()
    labels = [t.get_text() for t in leg.get_texts()]
    env = [t for t in labels if t.startswith("envelope at")]
    assert len(env) == 3 and "10th percentile" in env[0] and "90th percentile" in env[2]
    assert all("braking: " in t and "axle" in t for t in env)
    title = leg.get_title().get_text()
    for words in ("brake balance", "rear drive", "load transfer", "flat road", "steady state",
                  "no yaw acceleration"):
        assert words in title
    # the axes hold the largest envelope: its braking limit is inside the y range
    vmax = np.percentile(df["speed"], 90)
    assert ax.get_ylim()[0] < friction_envelope(VEHICLE, vmax)["ax_brake"] / G
    # points coloured by speed
    assert np.allclose(ax.collections[0].get_array(), df["speed_kmh"])
    _close(fig)
    # no vehicle parameters: no envelope, and the legend says why
    fig = FIGURES["gg"](df, summary, {})
    leg = fig.axes[0].get_legend()
    assert "no friction envelope" in leg.get_title().get_text()
    assert not [t for t in leg.get_texts() if t.get_text().startswith("envelope at")]
    _close(fig)


# ---- the distance window ------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("text, expected", [
    ("1200:1800", (1200.0, 1800.0)), (":800", (None, 800.0)), ("1200:", (1200.0, None)),
    (" 1.2e3 : 1800.5 ", (1200.0, 1800.5)), ("-50:20", (-50.0, 20.0)), (":", None),
    (None, None), ((1200, None), (1200.0, None)), ((None, 800.0), (None, 800.0))])
def test_range_parsing_accepts_both_ends_and_open_ends(text, expected):
    """A:B, A: and :B parse to their ends (None for an open end)."""
    assert parse_range(text) == expected


@pytest.mark.unit
@pytest.mark.parametrize("text, words", [
    ("abc", ["'abc'", "A:B", "metres"]), ("1800:1200", ["'1800:1200'", "A < B"]),
    ("100:100", ["'100:100'", "A < B"]), ("1:2:3", ["'1:2:3'", "A:B"]),
    ("a:5", ["'a:5'", "'a' is not a number"]), ("nan:5", ["'nan:5'", "finite"]),
    ("", ["''", "A:B"]), (("x", 3), ["A:B", "pair"])])
def test_range_parsing_refuses_bad_text_naming_the_value(text, words):
    """Bad ranges are refused in one line naming the option and the value."""
    with pytest.raises(ValueError) as exc:
        parse_range(text)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("--range")
    for w in words:
        assert w in msg, msg


@pytest.mark.unit
def test_a_window_outside_the_run_is_refused_with_its_extent():
    """A window outside the run is refused, naming the run's extent; open ends take the run's."""
    df, _ = _run(start=1000.0, closed=False)           # s from 1000 to 1628.3 m
    assert resolve_range(df, "1200:") == (1200.0, pytest.approx(1000 + 200 * math.pi))
    assert resolve_range(df, ":1100") == (1000.0, 1100.0)
    assert resolve_range(df, None) is None
    for bad in ("1800:1900", "900:1100", "1500:1700", ":999"):
        with pytest.raises(ValueError, match=r"outside the run.*1000\.0:1628\.3 m"):
            resolve_range(df, bad)


@pytest.mark.unit
def test_the_window_limits_every_distance_figure():
    """Every distance figure's axes and lines are limited to the window."""
    df, summary = _run(start=1000.0, closed=False)
    for name in DISTANCE_FIGURES:
        fig = FIGURES[name](df, summary, VEHICLE, s_range="1200:1400")
        for ax in fig.axes:
            assert ax.get_xlim() == pytest.approx((1200.0, 1400.0)), name
            for line in ax.get_lines():
                x = np.asarray(line.get_xdata(), dtype=float)
                if len(x) > 2:    # the data (not axhline), one point more on each side
                    assert x.min() >= 1190.0 and x.max() <= 1410.0, name
        assert "window s = 1200-1400 m" in fig.axes[0].get_title(), name
        _close(fig)
    # the GG diagram shows the points in the window only
    fig = FIGURES["gg"](df, summary, VEHICLE, s_range=(1200, 1400))
    s = df["s"].to_numpy()
    n_window = np.count_nonzero((s >= 1200) & (s <= 1400))
    assert len(fig.axes[0].collections[0].get_offsets()) == n_window
    _close(fig)
    # without a window: the whole run
    fig = FIGURES["speed"](df, summary, VEHICLE)
    assert fig.axes[0].get_xlim()[0] < 1000.0 + 1e-9 and fig.axes[0].get_xlim()[1] > 1628.0
    _close(fig)


@pytest.mark.unit
def test_the_track_map_highlights_the_window_and_greys_the_rest():
    """The track map colours the window's points only."""
    df, summary = _run()
    fig = FIGURES["track_map"](df, summary, VEHICLE, s_range="100:300")
    ax = fig.axes[0]
    colored = [c for c in ax.collections if c.get_array() is not None]
    assert len(colored) == 1
    s = df["s_sector"].to_numpy()
    n_win = np.count_nonzero((s >= 100) & (s <= 300))
    assert n_win <= len(colored[0].get_segments()) + 1 <= n_win + 2      # the window only
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "racing line outside the window" in labels and "track edges in the window" in labels
    _close(fig)


# ---- markers on the track map ------------------------------------------------------------

@pytest.mark.unit
def test_marker_spacing_is_chosen_from_the_length():
    """Marker spacing from the length, and the labels in m or km."""
    assert marker_step(600.0) == 100.0
    assert marker_step(4191.0) == 500.0
    assert marker_step(20724.0) == 2000.0
    assert marker_step(400.0) == 50.0
    assert distance_label(500.0) == "500 m" and distance_label(1000.0) == "1 km"
    assert distance_label(1500.0) == "1.5 km" and distance_label(12000.0) == "12 km"
    assert distance_label(1250.0, step=50.0) == "1250 m"


@pytest.mark.unit
def test_closed_lap_map_has_a_start_finish_line_direction_and_distance_markers():
    """A closed lap's map has its start/finish line, direction and distance markers."""
    df, summary = _run()                         # 628 m: markers every 100 m
    fig = FIGURES["track_map"](df, summary, VEHICLE)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert "start/finish" in texts
    assert [t for t in texts if t.endswith(" m")] == [f"{d} m" for d in range(100, 601, 100)]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "start/finish line" in labels and "direction of travel" in labels
    assert "distance marker, every 100 m of s" in labels
    arrows = [c for c in ax.get_children() if type(c).__name__ == "Annotation"]
    assert len(arrows) == 1
    # the arrow points the way the car goes: from the start towards s > 0
    a, b = np.asarray(arrows[0].xyann), np.asarray(arrows[0].xy)
    tangent = df[["x_spine", "y_spine"]].to_numpy()[1] - df[["x_spine", "y_spine"]].to_numpy()[0]
    assert np.dot(b - a, tangent) > 0
    _close(fig)


@pytest.mark.unit
def test_open_sector_map_has_its_start_and_end():
    """An open sector's map names its start and end, and has no start/finish line."""
    df, summary = _run(start=1000.0, closed=False)
    fig = FIGURES["track_map"](df, summary, VEHICLE)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "start 1000 m" in texts and "end 1628 m" in texts and "start/finish" not in texts
    _close(fig)


# ---- legends ------------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("name", [n for n in FIGURES if n != "sensitivities"])
def test_legends_are_outside_the_axes(name):
    """Every legend of the run's figures lies outside its axes (it never covers the data)."""
    df, summary = _run()
    fig = FIGURES[name](df, summary, VEHICLE)
    fig.canvas.draw()
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        box, frame = leg.get_window_extent(), ax.get_window_extent()
        overlap_x = min(box.x1, frame.x1) - max(box.x0, frame.x0)
        overlap_y = min(box.y1, frame.y1) - max(box.y0, frame.y0)
        assert overlap_x <= 1 or overlap_y <= 1, name
    _close(fig)


# ---- plot_results and the command ---------------------------------------------------------

@pytest.mark.unit
def test_plot_results_with_a_window(results, tmp_path):
    """plot_results draws the chosen figures in a window and refuses a reversed one."""
    files = plot_results(results, out_dir=tmp_path / "p", figures=["speed", "gg"],
                         s_range=(100.0, None), dpi=50)
    assert {f.name for f in files} == {"speed.png", "gg.png"}
    assert all(f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in files)
    with pytest.raises(ValueError, match="s_range"):
        plot_results(results, out_dir=tmp_path / "q", s_range=(300.0, 100.0))
    with pytest.raises(ValueError, match="outside the run"):
        plot_results(results, out_dir=tmp_path / "q", s_range="700:800")
    assert not (tmp_path / "q").exists()          # refused before anything is written


@pytest.mark.unit
def test_vehicle_parameters_come_from_the_workbook(results):
    """The figures' vehicle parameters are read from the workbook's vehicle sheet."""
    vehicle = plots.read_vehicle(results, json.loads((results / "summary.json").read_text()))
    assert vehicle["mu_y0"] == 1.6 and vehicle["P_max"] == 47e3


@pytest.mark.unit
@pytest.mark.parametrize("value, words", [
    ("abc", ["--range 'abc'", "A:B"]), ("1800:1200", ["--range '1800:1200'", "A < B"]),
    ("1200:1800", ["--range '1200:1800'", "outside the run", "0.0:628.3 m"])])
def test_plot_command_refuses_a_bad_range_in_one_line(results, tmp_path, value, words):
    """pyomo-lap plot refuses a bad --range in one line (exit code 2)."""
    from pyomo_lap.cli import main
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["plot", str(results), "--out", str(out), "--range", value])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    for w in words:
        assert w in lines[0], r.output
    assert not out.exists()                        # nothing drawn


@pytest.mark.unit
def test_plot_command_draws_the_window(results, tmp_path):
    """pyomo-lap plot --range draws the chosen figures."""
    from pyomo_lap.cli import main
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["plot", str(results), "--out", str(out), "--range", ":300",
                                  "--figure", "track_map", "--figure", "power"])
    assert r.exit_code == 0, r.output
    assert (out / "track_map.png").stat().st_size > 1000 and (out / "power.png").exists()
    r = CliRunner().invoke(main, ["plot", "--help"])
    assert "--range" in r.output and "track" in r.output


def _close(fig):
    import matplotlib.pyplot as plt
    plt.close(fig)
