r"""The car equations of the new vehicle keys, each against a closed form written here.

The keys of :mod:`pyomo_lap.vehicle.car` and :mod:`pyomo_lap.vehicle.tyres`:

* the drive split ``drive_ratio`` (eq 34 for :math:`k_d = 0`, the split otherwise), in
  :func:`longitudinal_forces`, in the traced car equations and in the model's channel
  expressions ``m.f_11x`` ...;
* drag at the centre of pressure ``h_cp``: the aerodynamic pitch moment, and at a steady
  straight-line state the axle loads moved by :math:`h_{cp} f_{drag} / l`;
* combined slip ``combined_slip = "ellipse"``: the factor :math:`G(r)`, the forces on the
  friction ellipse, the cornering stiffness kept, the reduced peak; the Fiala law;
* the contact patches' offsets;
* the settings and their structure: the schema's, ``set_vehicle``'s and the multibody
  model's refusals, each naming the key.

The solves (brake-limited straight, contact patches on a circle, drive split out of a
hairpin) are in tests/test_physics_solves.py.
"""
import math

import numpy as np
import pyomo.environ as pyo
import pytest
from scipy.optimize import fsolve

from pyomo_lap import Track, load_vehicle
from pyomo_lap.vehicle import car as veh
from pyomo_lap.verify.simulate import car_functions
from pyomo_lap.vehicle import tyres
from pyomo_lap.vehicle.files import VehicleFileError, read_vehicle_file

FLAT = np.r_[np.eye(3).ravel(), np.zeros(6)]
"""Track-joint vector of a flat straight (R = I, J = [1, 0, 0, 0, 0, 0], dJ = 0)."""


@pytest.fixture(scope="module")
def fsae():
    """The bundled FSAE car."""
    return load_vehicle("fsae")


def straight(length=300.0):
    """A flat straight of ``length`` metres."""
    s = np.linspace(0.0, length, 301)
    return Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], closed=False, name="straight")


# ------------------------------------------------------------------------------ drive split
@pytest.mark.unit
@pytest.mark.parametrize("k_d", [0.0, 0.3, 0.5, 1.0])
def test_longitudinal_forces_split_the_drive(fsae, k_d):
    r"""Per tyre (share 1/2) and per axle (share 1, the single-track car):
    :math:`f_{1x} = s(k_b f_{xb} + k_d f_{xa})`, :math:`f_{2x} = s((1 - k_b) f_{xb} +
    (1 - k_d) f_{xa})`; for :math:`k_d = 0` eq (34): the front tyres only brake. The four
    tyres together give :math:`f_{xa} + f_{xb}`."""
    p = fsae.replace(drive_ratio=k_d)
    k_b = p.brake_ratio
    for f_xa, f_xb in ((1200.0, 0.0), (0.0, -2500.0), (700.0, -300.0)):
        for share in (0.5, 1.0):
            f1x, f2x = veh.longitudinal_forces(p, f_xa, f_xb, share)
            assert f1x == pytest.approx(share * (k_b * f_xb + k_d * f_xa), abs=1e-12)
            assert f2x == pytest.approx(share * ((1 - k_b) * f_xb + (1 - k_d) * f_xa), abs=1e-12)
        f1x, f2x = veh.longitudinal_forces(p, f_xa, f_xb, 0.5)
        assert 2 * f1x + 2 * f2x == pytest.approx(f_xa + f_xb)
        if k_d == 0.0:          # eq (34) of the paper
            assert f1x == pytest.approx(0.5 * k_b * f_xb, abs=1e-12)
            assert f2x == pytest.approx(0.5 * (1 - k_b) * f_xb + 0.5 * f_xa)


@pytest.mark.unit
def test_car_equations_carry_the_drive_split(fsae):
    """In the traced car equations (CarFunctions) of an all-wheel-drive car on a flat
    straight, the front tyres' longitudinal force is k_d f_xa / 2, and the in-plane force
    balance closes with f_3x = f_xa."""
    p = fsae.replace(drive_ratio=0.4)
    cf = car_functions(p)
    q, qd, u = [0, 0, 0, -0.02, 0, 0], [20.0, 0, 0, 0, 0, 0], [1500.0, 0.0, 0.0]
    z, _ = cf.solve(FLAT, q, qd, u)
    ch = cf.channels(FLAT, q, qd, u, z)
    assert ch["f_11x"] == pytest.approx(0.5 * 0.4 * 1500.0) and ch["f_12x"] == ch["f_11x"]
    assert ch["f_21x"] == pytest.approx(0.5 * 0.6 * 1500.0)
    assert z[4] == pytest.approx(1500.0, rel=1e-9)


@pytest.mark.component
@pytest.mark.parametrize("k_d", [0.0, 0.4])
def test_model_channel_expressions_carry_the_drive_split(fsae, k_d):
    """The model's named channels m.f_11x ... are the forces of the rows.

    What users write constraints on: (k_b f_xb + k_d f_xa)/2 front, ((1 - k_b) f_xb + (1 - k_d) f_xa)/2
    rear, at values set by hand. (They wrote the front tyres as braking only, whatever
    k_d, before the fix of add_channel_expressions.)"""
    p = fsae.replace(drive_ratio=k_d)
    from pyomo_lap import build_model
    m = build_model(straight(), p, start=0.0, length=40.0, nfe=2, ncp=2, initial_speed=20.0)
    k_b = p.brake_ratio
    for s in m.s:
        m.f_xa[s].set_value(1000.0 + s)
        m.f_xb[s].set_value(-200.0 - s)
        f_xa, f_xb = 1000.0 + s, -200.0 - s
        for w in ("11", "12"):
            assert pyo.value(m.component(f"f_{w}x")[s]) == pytest.approx(
                0.5 * (k_b * f_xb + k_d * f_xa))
        for w in ("21", "22"):
            assert pyo.value(m.component(f"f_{w}x")[s]) == pytest.approx(
                0.5 * ((1 - k_b) * f_xb + (1 - k_d) * f_xa))


# ----------------------------------------------------------------- drag at the centre of pressure
@pytest.mark.unit
@pytest.mark.parametrize("h_cp", [0.0, 0.25, 0.6])
def test_aero_pitch_moment_has_the_drag_at_its_height(fsae, h_cp):
    r"""At O3: drag :math:`-C_x q`, downforce :math:`-(C_{z1} + C_{z2}) q`, pitch moment
    :math:`-(C_{z2} a_2 - C_{z1} a_1) q + h_{cp} f_{drag}` (the moment about y3 of the drag
    at the height :math:`h_{cp}`: :math:`(0, 0, h) \times (f_{drag}, 0, 0) = (0, h f_{drag},
    0)`), :math:`q = \tfrac12 \rho S v^2`."""
    p = fsae.replace(h_cp=h_cp)
    for v in (5.0, 30.0, 70.0):
        q = 0.5 * p.rho * p.S * v * v
        f_drag, f_down, m_aero = veh.aero_forces(p, v)
        assert f_drag == pytest.approx(-p.Cx * q)
        assert f_down == pytest.approx(-(p.Cz1 + p.Cz2) * q)
        assert m_aero == pytest.approx(-(p.Cz2 * p.a2 - p.Cz1 * p.a1) * q + h_cp * f_drag)


def _steady_straight(p, v):
    """The car at constant speed v on a flat straight: the heave, pitch and drive force with
    q1'' = q4'' = q5'' = 0 (roll and the lateral motion 0 by symmetry), its loads."""
    cf = car_functions(p)

    def accelerations(x):
        q4, q5, f_xa = x
        _, qdd = cf.solve(FLAT, [0, 0, 0, q4, q5, 0], [v, 0, 0, 0, 0, 0], [f_xa, 0, 0])
        return [qdd[0], qdd[3], qdd[4]]

    x, _, ok, msg = fsolve(accelerations, [-0.02, 0.0, 600.0], full_output=True, xtol=1e-13)
    assert ok == 1, msg
    z, qdd = cf.solve(FLAT, [0, 0, 0, x[0], x[1], 0], [v, 0, 0, 0, 0, 0], [x[2], 0, 0], tol=1e-10)
    assert np.abs(qdd).max() < 1e-9
    return {"q4": x[0], "q5": x[1], "f_xa": x[2], "front": z[0] + z[1], "rear": z[2] + z[3]}


@pytest.mark.unit
@pytest.mark.parametrize("v", [20.0, 35.0])
def test_drag_height_moves_load_to_the_rear_at_steady_speed(fsae, v):
    r"""Steady straight-line running (the drive force equals the drag :math:`D = \tfrac12
    \rho S C_x v^2`): raising the centre of pressure from 0 to :math:`h_{cp}` = 0.3 m takes
    :math:`h_{cp} D / l` off the front axle and puts it on the rear (the moment balance of
    the whole car about the road: the drive force acts at road level). Within 0.5 % of that
    (measured 0.27 %); exactly (1e-9 relative) once the sprung mass's own moment arm, which
    the pitch changes, :math:`m_s g (h - h_{vip})(\sin q_5' - \sin q_5)`, is counted."""
    h_cp = 0.3
    a = _steady_straight(fsae, v)
    b = _steady_straight(fsae.replace(h_cp=h_cp), v)
    D = 0.5 * fsae.rho * fsae.S * fsae.Cx * v * v
    assert a["f_xa"] == pytest.approx(D, rel=1e-9) and b["f_xa"] == pytest.approx(D, rel=1e-9)
    l = fsae.l  # noqa: E741
    shift = h_cp * D / l
    assert b["front"] - a["front"] == pytest.approx(-shift, rel=5e-3)
    assert b["rear"] - a["rear"] == pytest.approx(shift, rel=5e-3)
    pitch = fsae.m_s * fsae.gravity * (fsae.h - fsae.h_vip) * (math.sin(b["q5"]) - math.sin(a["q5"]))
    assert b["rear"] - a["rear"] == pytest.approx((h_cp * D - pitch) / l, rel=1e-9)
    assert b["q5"] < a["q5"]            # the drag up high pitches the nose up (q5 > 0: down)
    assert b["front"] + b["rear"] == pytest.approx(a["front"] + a["rear"], rel=1e-12)


# ------------------------------------------------------------------------------ combined slip
EPS = tyres.COMBINED_SMOOTHING


@pytest.mark.unit
def test_combined_slip_factor_is_a_smoothed_ellipse():
    r""":math:`G(0) = 1`; :math:`G^2 + r^2 - 1` is at least 0 and at most
    :math:`\epsilon/(1 + \sqrt{1 + \epsilon^2})` (= 0.025 at :math:`|r| = 1`), below 1e-3 for
    :math:`|r| \le 0.72` and 6.0e-3 at :math:`|r| = 0.95` (measured on 3801 points; the
    brief's 1e-3 at :math:`|r| \le 0.95` would need :math:`\epsilon \approx 0.02`), even in
    :math:`r` and decreasing in :math:`|r|`."""
    G = tyres.combined_slip_factor
    assert G(0.0) == pytest.approx(1.0, abs=1e-15)
    r = np.linspace(-1.0, 1.0, 4001)
    g = np.array([G(x) for x in r])
    excess = g ** 2 + r ** 2 - 1
    bound = EPS / (1 + math.sqrt(1 + EPS ** 2))
    assert excess.min() >= -1e-15 and excess.max() <= bound + 1e-15
    assert excess[-1] == pytest.approx(bound, rel=1e-9)
    assert excess[np.abs(r) <= 0.72].max() < 1e-3
    assert excess[np.abs(r) <= 0.95].max() == pytest.approx(5.97e-3, abs=1e-5)
    assert g == pytest.approx(g[::-1], rel=1e-15)
    half = g[r >= 0]
    assert np.all(np.diff(half) < 0)


def _ellipse_car(fsae, model="magic-formula", **kw):
    return fsae.replace(combined_slip="ellipse", tyre_model=model, **kw)


def _c_alpha(p, fz):
    """Cornering stiffness of the load, written here: pK1 Fz0 sin(2 atan(fz / (pK2 Fz0)))."""
    return p.pK1 * p.Fz0 * math.sin(2 * math.atan(fz / (p.pK2 * p.Fz0)))


def _peak(p, fz):
    """Peak lateral force of the load, written here: mu_y0 (1 + pD2 (fz - Fz0)/Fz0) fz."""
    return p.mu_y0 * (1 + p.pD2 * (fz - p.Fz0) / p.Fz0) * fz


@pytest.mark.unit
@pytest.mark.parametrize("model", ["magic-formula", "fiala"])
def test_combined_forces_stay_within_the_ellipse(fsae, model):
    r"""On a grid of loads, slip angles and longitudinal forces :math:`|f_x| \le D_x`
    (:math:`D_x = \mu_x/\mu_y D`, what the adherence rows allow), the tyre's forces satisfy
    :math:`(f_x/D_x)^2 + (f_y/D)^2 \le 1 + \epsilon/(1 + \sqrt{1 + \epsilon^2})` (1.025) with
    the peak D written here; the Fiala tyre below its sliding limit :math:`|\upsilon| \le 1`
    (the OCP's slip rows). The largest value on the grid is at the bound (r = +-1)."""
    p = _ellipse_car(fsae, model, mu_x0=1.7)
    bound = 1 + EPS / (1 + math.sqrt(1 + EPS ** 2))
    worst = 0.0
    for fz in (150.0, 600.0, 1500.0):
        D = _peak(p, fz)
        Dx = p.mu_x0 / p.mu_y0 * D
        alpha_sl = math.atan(3 * D / _c_alpha(p, fz))      # Fiala: sliding at upsilon = 1
        top = alpha_sl if model == "fiala" else 0.4
        for fx in np.linspace(-Dx, Dx, 41):
            for alpha in np.linspace(-top, top, 61):
                t = tyres.tyre_forces(p, {"w": (float(alpha), fz, float(fx))})["w"]
                assert t["D"] == pytest.approx(D, rel=1e-12)
                if model == "fiala" and abs(t["upsilon"]) > 1:
                    continue        # sliding: the slip rows keep the OCP out of it
                use = (fx / Dx) ** 2 + (t["f_y"] / D) ** 2
                worst = max(worst, use)
                assert use <= bound + 1e-12, (fz, fx, alpha, use)
    assert worst == pytest.approx(bound, rel=1e-3)


@pytest.mark.unit
@pytest.mark.parametrize("model, E", [("magic-formula", 0.0), ("magic-formula", -1.0),
                                      ("fiala", 0.0)])
def test_longitudinal_force_keeps_the_cornering_stiffness_and_lowers_the_peak(fsae, model, E):
    r"""combined_slip = "ellipse": at :math:`r = f_x/D_x` = 0, 0.5, 0.9 the slope
    :math:`df_y/d\alpha` at :math:`\alpha = 0` (central difference, step 1e-6 rad) is the
    cornering stiffness of the load written here, as without a longitudinal force (rel 2e-4:
    the Fiala law's smoothed :math:`|\upsilon|` takes 1e-4 off), and the peak over
    :math:`\alpha` (a fine scan, then refined) is :math:`D G(r)`, within 0.1 % of
    :math:`D\sqrt{1 - r^2}` at r = 0.5 and 1 % at r = 0.9 (:math:`G`'s smoothing, measured
    0.024 % and 0.82 %; at r = 0 the Fiala peak is 1.5e-8 below D, its smoothed
    :math:`|\upsilon|`)."""
    p = _ellipse_car(fsae, model, E=E)
    fz = 900.0
    D, Ca = _peak(p, fz), _c_alpha(p, fz)
    Dx = p.mu_x0 / p.mu_y0 * D

    def fy(alpha, r):
        return tyres.tyre_forces(p, {"w": (alpha, fz, r * Dx)})["w"]["f_y"]

    h = 1e-6
    for r, tol in ((0.0, 1e-7), (0.5, 1e-3), (0.9, 1e-2)):
        slope = (fy(h, r) - fy(-h, r)) / (2 * h)
        assert slope == pytest.approx(Ca, rel=2e-4 if model == "fiala" else 1e-6)
        top = math.atan(3 * D / Ca) * 1.2 if model == "fiala" else 0.6
        a = np.linspace(0.0, top, 4001)
        f = np.array([fy(float(x), r) for x in a])
        if model == "fiala":          # the law holds up to sliding (|upsilon| <= 1)
            ups = np.array([tyres.tyre_forces(p, {"w": (float(x), fz, r * Dx)})["w"]["upsilon"]
                            for x in a])
            f = f[ups <= 1.0]
        from scipy.optimize import minimize_scalar
        i = int(np.argmax(f))
        best = -minimize_scalar(lambda x: -fy(x, r), bounds=(a[max(i - 1, 0)], a[i + 1]),
                                method="bounded", options={"xatol": 1e-12}).fun
        assert best == pytest.approx(D * tyres.combined_slip_factor(r), rel=1e-6)
        assert best == pytest.approx(D * math.sqrt(1 - r * r), rel=tol)


@pytest.mark.unit
def test_fiala_law_peaks_at_sliding_with_the_cornering_stiffness(fsae):
    r"""Fiala: :math:`f_y(\alpha_{sl}) = D` at :math:`\tan\alpha_{sl} = 3D/C_\alpha`
    (:math:`\upsilon = 1`), where its slope is 0, and below it :math:`f_y < D`; slope
    :math:`C_\alpha` at 0 (within 2e-4: the smoothed :math:`|\upsilon|`); odd in
    :math:`\alpha`. D, C_alpha written here."""
    p = _ellipse_car(fsae, "fiala")
    for fz in (300.0, 900.0, 2000.0):
        D, Ca = _peak(p, fz), _c_alpha(p, fz)
        a_sl = math.atan(3 * D / Ca)
        Dm, ups, f = tyres.fiala_force(p, a_sl, fz)
        assert Dm == pytest.approx(D) and ups == pytest.approx(1.0, rel=1e-12)
        assert f == pytest.approx(D, rel=1e-7)
        h = 1e-6
        assert (tyres.fiala_force(p, a_sl + h, fz)[2] - tyres.fiala_force(p, a_sl - h, fz)[2]) / (2 * h) \
            == pytest.approx(0.0, abs=1e-3 * Ca)
        below = np.linspace(0.0, a_sl * (1 - 1e-3), 200)
        assert max(tyres.fiala_force(p, float(x), fz)[2] for x in below) < D
        slope = (tyres.fiala_force(p, h, fz)[2] - tyres.fiala_force(p, -h, fz)[2]) / (2 * h)
        assert slope == pytest.approx(Ca, rel=2e-4)
        assert tyres.fiala_force(p, -0.05, fz)[2] == pytest.approx(-tyres.fiala_force(p, 0.05, fz)[2])


# ------------------------------------------------------------------------------ contact patches
@pytest.mark.unit
def test_contact_patch_offsets_closed_form(fsae):
    r"""Outer edge of the patch of wheel ij: :math:`q_2 + x_i \sin q_3 \pm (t_i + w_i)/2\,
    \cos q_3` (+ left wheels, - right), :math:`x_1 = a_1`, :math:`x_2 = -a_2`, with the tyre
    widths of a car whose front and rear tyres differ."""
    p = fsae.replace(tw1=0.2, tw2=0.3)
    rng = np.random.default_rng(3)
    for q2, q3 in zip(rng.uniform(-3, 3, 20), rng.uniform(-0.4, 0.4, 20)):
        out = veh.contact_patch_offsets(p, float(q2), float(q3))
        for (i, x, t, w) in ((1, p.a1, p.t1, 0.2), (2, -p.a2, p.t2, 0.3)):
            for j, sign in ((1, 1.0), (2, -1.0)):
                assert out[f"patch_{i}{j}"] == pytest.approx(
                    q2 + x * math.sin(q3) + sign * 0.5 * (t + w) * math.cos(q3), abs=1e-12)


@pytest.mark.component
def test_track_limit_rows_take_the_widths_at_each_point(fsae):
    """On a straight whose half-widths change along it, the bounds of the track_limit rows at
    each point are width_left(s) - margin (left wheels, upper) and -(width_right(s) - margin)
    (right wheels, lower), the track's own widths at that s; and the rows' bodies are the
    patches' closed form at values set by hand."""
    s = np.linspace(0.0, 300.0, 301)
    wl, wr = 4.0 + 0.5 * np.sin(s / 20.0), 3.5 + 0.5 * np.cos(s / 15.0)
    tr = Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], width_left=wl, width_right=wr,
               closed=False, name="varying")
    from pyomo_lap import build_model
    margin = 0.15
    m = build_model(tr, fsae, start=50.0, length=60.0, nfe=6, ncp=2, initial_speed=20.0,
                    track_margin=margin)
    sigma = sorted(m.s)
    tp = tr.evaluate(50.0 + np.array(sigma))
    for k, x in enumerate(sigma):
        for w in ("11", "21"):
            c = m.track_limit[w, x]
            assert c.lower is None and pyo.value(c.upper) == pytest.approx(tp.width_left[k] - margin)
        for w in ("12", "22"):
            c = m.track_limit[w, x]
            assert c.upper is None and pyo.value(c.lower) == pytest.approx(-(tp.width_right[k] - margin))
        m.q2[x].set_value(0.3)
        m.q3[x].set_value(-0.05)
        for i, xi, t, tw in ((1, fsae.a1, fsae.t1, fsae.tw1), (2, -fsae.a2, fsae.t2, fsae.tw2)):
            for j, sign in ((1, 1.0), (2, -1.0)):
                assert pyo.value(m.track_limit[f"{i}{j}", x].body) == pytest.approx(
                    0.3 + xi * math.sin(-0.05) + sign * 0.5 * (t + tw) * math.cos(-0.05))
    assert np.ptp(tp.width_left) > 0.3          # the widths do change along the sector


# ------------------------------------------------------------------------- settings, structure
def _file(tmp_path, extra: str):
    text = (veh.models_dir() / "fsae.toml").read_text()
    f = tmp_path / "car.toml"
    f.write_text(text.replace("fz_min = 50.0", "fz_min = 50.0\n" + extra))
    return f


@pytest.mark.unit
@pytest.mark.parametrize("extra, key", [
    ('model = "fiala"', "[tyre] model = 'fiala'"),
    ("slip_angle_max = 0.15", "[tyre] slip_angle_max = 0.15"),
    ('model = "fiala"\ncombined_slip = "constraint"', "[tyre] model = 'fiala'"),
])
def test_schema_refuses_fiala_or_slip_limit_with_the_constraint(tmp_path, extra, key):
    """The Fiala tyre and a slip-angle limit need combined_slip = "ellipse" (with the
    paper's friction-ellipse constraint the tyre is held at or below the peak): refused
    naming the key; accepted with "ellipse"."""
    with pytest.raises(VehicleFileError) as exc:
        read_vehicle_file(_file(tmp_path, extra))
    assert key in str(exc.value) and 'combined_slip = "ellipse"' in str(exc.value)
    p = read_vehicle_file(_file(tmp_path, extra.replace('"constraint"', '"ellipse"')
                                + ('' if "combined_slip" in extra else '\ncombined_slip = "ellipse"')))
    assert p.combined_slip == "ellipse"


@pytest.fixture(scope="module")
def built(fsae):
    """A model of fsae on a short flat straight (the rows' structure is that of any track)."""
    from pyomo_lap import build_model
    return build_model(straight(), fsae, start=0.0, length=40.0, nfe=2, ncp=2, initial_speed=20.0)


@pytest.mark.component
@pytest.mark.parametrize("change, named", [
    (dict(combined_slip="ellipse"), "combined_slip"),
    (dict(combined_slip="ellipse", tyre_model="fiala"), "tyre_model"),
    (dict(power_curve_speed=(0.0, 40.0), power_curve_power=(47e3, 47e3)), "power_curve_speed"),
    (dict(T_b1=300.0), "powertrain.brake_torque_front"),
    (dict(T_b2=300.0), "powertrain.brake_torque_rear"),
    (dict(combined_slip="ellipse", alpha_max=0.2), "tyre.slip_angle_max"),
    (dict(h_cp=0.2), "aero.h_cp"),
    (dict(drive_ratio=0.3), "powertrain.drive_ratio"),
], ids=["combined slip", "tyre model", "power curve", "front brake torque", "rear brake torque",
        "slip angle limit", "h_cp", "drive split"])
def test_set_vehicle_refuses_other_settings_and_keys(built, fsae, change, named):
    """A car with other settings, or with an optional key (or a structural zero made
    nonzero) the model's car lacks, has other rows: set_vehicle refuses it with a
    VehicleStructureError naming the key, and the model keeps its car."""
    from pyomo_lap.ocp.build import set_vehicle
    from pyomo_lap.ocp.full_model import VehicleStructureError
    m = built
    with pytest.raises(VehicleStructureError) as exc:
        set_vehicle(m, fsae.replace(**change))
    assert named in str(exc.value)
    assert m.vehicle.built_for == fsae


@pytest.mark.component
def test_set_vehicle_takes_new_brake_torques_and_drops_none(fsae):
    """The control: a model of a car with brake torques takes another car with other
    torques (the brake_limit rows' bodies follow), but not the car without them."""
    from pyomo_lap import build_model
    from pyomo_lap.ocp.build import set_vehicle
    from pyomo_lap.ocp.full_model import VehicleStructureError
    a = fsae.replace(T_b1=300.0, T_b2=150.0)
    m = build_model(straight(), a, start=0.0, length=40.0, nfe=2, ncp=2, initial_speed=20.0)
    s = sorted(m.s)[1]
    m.f_xb[s].set_value(-1000.0)
    # the front wheel's brake torque k_b |f_xb| R / 2 minus its limit
    assert pyo.value(m.brake_limit["1", s].body) == pytest.approx(
        0.5 * a.brake_ratio * a.wheel_radius * 1000.0 - 300.0)
    set_vehicle(m, a.replace(T_b1=250.0, T_b2=120.0))
    assert pyo.value(m.brake_limit["1", s].body) == pytest.approx(
        0.5 * a.brake_ratio * a.wheel_radius * 1000.0 - 250.0)
    assert pyo.value(m.brake_limit["2", s].body) == pytest.approx(
        0.5 * (1 - a.brake_ratio) * a.wheel_radius * 1000.0 - 120.0)
    with pytest.raises(VehicleStructureError, match="brake_torque_front"):
        set_vehicle(m, fsae)


@pytest.mark.component
@pytest.mark.parametrize("change, named", [
    (dict(combined_slip="ellipse"), "[tyre] combined_slip = 'ellipse'"),
    (dict(combined_slip="ellipse", tyre_model="fiala"), "[tyre] model = 'fiala'"),
    (dict(combined_slip="ellipse", alpha_max=0.2), "[tyre] slip_angle_max = 0.2"),
])
def test_multibody_model_refuses_the_new_tyre_settings(fsae, change, named):
    """The multibody car has the paper's tyre only: building it for a car with combined
    slip, the Fiala law or a slip-angle limit is refused, naming the setting."""
    from pyomo_lap import build_model
    with pytest.raises(ValueError) as exc:
        build_model(straight(), fsae.replace(**change), model="multibody", start=0.0,
                    length=40.0, nfe=2, ncp=2, initial_speed=20.0)
    assert named in str(exc.value) and "multibody" in str(exc.value)
