"""Vehicle model: static equilibrium, sag, static equivalence of the loads with W3J, tyre,
aerodynamics, and the vehicle-file loader."""
import math

import numpy as np
import pytest
from scipy.optimize import fsolve

from pyomo_lap.vehicle import car as veh
from pyomo_lap.vehicle import tyres
from pyomo_lap.spatial.tree import TrackJoint

FLAT = TrackJoint(R=np.eye(3).tolist(), J=[1.0, 0, 0, 0, 0, 0], dJ=[0] * 6)


@pytest.fixture(scope="module")
def car():
    """The bundled FSAE car and its chain."""
    p = veh.load_vehicle("fsae")
    return p, veh.build_chain(p)


def _xy(p):
    """Contact points (x, y) of wheels 11, 12, 21, 22 in {B3}."""
    return [(p.a1, p.t1 / 2), (p.a1, -p.t1 / 2), (-p.a2, p.t2 / 2), (-p.a2, -p.t2 / 2)]


@pytest.mark.unit
def test_static_equilibrium_loads_and_sag(car):
    """At rest the static sag and axle loads of the closed forms balance the car."""
    p, ch = car
    g = p.gravity
    sag = -p.m_s * g / (2 * p.k1 + 2 * p.k2)       # closed form: m_s g / k
    z, e = veh.solve_algebraic(p, ch, FLAT, [0, 0, 0, sag, 0, 0], [1e-9, 0, 0, 0, 0, 0], [0, 0, 0])
    assert np.allclose([float(x) for x in e.qdd], 0.0, atol=1e-9)
    front = p.m * g * (p.l - p.a1) / (2 * p.l)
    rear = p.m * g * (p.l - p.a2) / (2 * p.l)
    assert z[:4] == pytest.approx([front, front, rear, rear], rel=1e-10)
    assert z[4:] == pytest.approx([0, 0, 0], abs=1e-9)
    # any other heave is not an equilibrium
    e2 = veh.car_equations(p, ch, FLAT, [0, 0, 0, 0.9 * sag, 0, 0], [1e-9] + [0] * 5, [0, 0, 0], z)
    assert float(e2.qdd[3]) == pytest.approx(0.1 * sag * (2 * p.k1 + 2 * p.k2) / p.m_s, rel=1e-9)
    assert float(e2.qdd[3]) == pytest.approx(-0.1 * g, rel=1e-9)


def _random_state(rng):
    """A state near quasi-static driving (random spring deflections far from equilibrium
    would lift wheels, which the model does not represent)."""
    q = [0.0, rng.uniform(-2, 2), rng.uniform(-0.02, 0.02), rng.uniform(-0.03, -0.01),
         rng.uniform(-0.004, 0.004), rng.uniform(-0.004, 0.004)]
    qd = [rng.uniform(15, 40), rng.uniform(-0.2, 0.2), rng.uniform(-0.05, 0.05),
          rng.uniform(-0.01, 0.01), rng.uniform(-0.01, 0.01), rng.uniform(-0.01, 0.01)]
    u = [rng.uniform(0, 800), rng.uniform(-800, 0), rng.uniform(-0.02, 0.02)]
    om = rng.uniform(-0.003, 0.003, 3)
    th = rng.uniform(-0.15, 0.15)
    R = np.array([[math.cos(th), 0, -math.sin(th)], [0, 1, 0], [math.sin(th), 0, math.cos(th)]])
    tj = TrackJoint(R=R.tolist(), J=[1.0, 0, 0, *om], dJ=[0, 0, 0, *rng.uniform(-1e-3, 1e-3, 3)])
    return q, qd, u, tj


@pytest.mark.unit
def test_loads_statically_equivalent_to_structural_wrench(car):
    """MODEL_NOTES item 3: sum f = f3z, sum f y = m3x, -sum f x = m3y, and the lateral transfer
    of each axle follows Guiggiani's split by roll stiffness and no-roll-centre heights."""
    p, ch = car
    rng = np.random.default_rng(7)
    susp = p.suspension
    for _ in range(8):
        q, qd, u, tj = _random_state(rng)
        z, e = veh.solve_algebraic(p, ch, tj, q, qd, u)
        W = [float(x) for x in e.aba.F[veh.UNSPRUNG]]
        fz = np.array(z[:4])
        xy = np.array(_xy(p))
        assert fz.sum() == pytest.approx(W[2], rel=1e-9)
        assert (fz * xy[:, 1]).sum() == pytest.approx(W[3], rel=1e-8, abs=1e-6)
        assert -(fz * xy[:, 0]).sum() == pytest.approx(W[4], rel=1e-8, abs=1e-6)
        c = {k: float(v) for k, v in e.channels.items()}
        Y = [c["Y_1"], c["Y_2"]]
        hq, t = [p.hq1, p.hq2], [p.t1, p.t2]
        kphi = [susp["k_phi1"], susp["k_phi2"]]
        total_moment = -W[3]
        for i in range(2):
            transfer = (fz[2 * i + 1] - fz[2 * i]) / 2 * t[i]      # right minus left, times t/2*2
            expected = kphi[i] / sum(kphi) * (total_moment - Y[0] * hq[0] - Y[1] * hq[1]) + Y[i] * hq[i]
            assert transfer == pytest.approx(expected, rel=1e-8, abs=1e-6)
        # the in-plane resultant (36) equals the sum of the four tyre forces rotated into {B3}
        d = u[2]
        fx = [c["f_11x"], c["f_12x"], c["f_21x"], c["f_22x"]]
        fy = [c["f_11y"], c["f_12y"], c["f_21y"], c["f_22y"]]
        ang = [d, d, 0.0, 0.0]
        F = np.array([[fx[k] * math.cos(ang[k]) - fy[k] * math.sin(ang[k]),
                       fx[k] * math.sin(ang[k]) + fy[k] * math.cos(ang[k])] for k in range(4)])
        assert z[4] == pytest.approx(F[:, 0].sum(), rel=1e-9, abs=1e-7)
        assert z[5] == pytest.approx(F[:, 1].sum(), rel=1e-9, abs=1e-7)
        mz = sum(xy[k, 0] * F[k, 1] - xy[k, 1] * F[k, 0] for k in range(4))
        assert z[6] == pytest.approx(mz, rel=1e-9, abs=1e-7)


@pytest.mark.unit
def test_steady_straight_with_aero_closed_form(car):
    """Flat straight at constant speed with traction equal to drag: the front axle carries
    m g a2/l + 1/2 rho S Cz1 v^2, the rear m g a1/l + 1/2 rho S Cz2 v^2 (eq 20, 28)."""
    p, ch = car
    v = 35.0
    qa = 0.5 * p.rho * p.S * v * v
    drag = qa * p.Cx

    def residual(x):
        q4, q5 = x
        z, e = veh.solve_algebraic(p, ch, FLAT, [0, 0, 0, q4, q5, 0], [v, 0, 0, 0, 0, 0], [drag, 0, 0])
        return [float(e.qdd[3]), float(e.qdd[4])]

    q4, q5 = fsolve(residual, [-0.03, 0.0], xtol=1e-12)
    z, e = veh.solve_algebraic(p, ch, FLAT, [0, 0, 0, q4, q5, 0], [v, 0, 0, 0, 0, 0], [drag, 0, 0])
    assert np.allclose([float(x) for x in e.qdd], 0, atol=1e-7)
    g = p.gravity
    # pitch q5 moves G6 forward by (h - h_vip) sin q5 (nose down positive)
    shift = p.m_s * g * (p.h - p.h_vip) * math.sin(q5) / p.l
    assert z[0] + z[1] == pytest.approx(p.m * g * p.a2 / p.l + qa * p.Cz1 + shift, rel=1e-9)
    assert z[2] + z[3] == pytest.approx(p.m * g * p.a1 / p.l + qa * p.Cz2 - shift, rel=1e-9)
    # heave sag grows by the downforce over the heave stiffness
    k = 2 * p.k1 + 2 * p.k2
    assert -q4 == pytest.approx((p.m_s * g + qa * (p.Cz1 + p.Cz2)) / k, rel=2e-3)


@pytest.mark.unit
def test_tyre_lateral_force(car):
    """Magic Formula: zero at zero slip, odd, slope the cornering stiffness, peak D."""
    p, _ = car
    for fz in (300.0, 600.0, 1200.0):
        assert tyres.tyre_lateral_force(p, 0.0, fz) == 0.0
        a = 0.05
        assert tyres.tyre_lateral_force(p, -a, fz) == pytest.approx(-tyres.tyre_lateral_force(p, a, fz))
        # slope at zero slip = cornering stiffness pK1 Fz0 sin(2 atan(fz / (pK2 Fz0)))
        h = 1e-6
        slope = (tyres.tyre_lateral_force(p, h, fz) - tyres.tyre_lateral_force(p, -h, fz)) / (2 * h)
        c_alpha = p.pK1 * p.Fz0 * math.sin(2 * math.atan(fz / (p.pK2 * p.Fz0)))
        assert slope == pytest.approx(c_alpha, rel=1e-6)
        # the peak over slip angles is D = mu(fz) fz
        peak = max(tyres.tyre_lateral_force(p, a, fz) for a in np.linspace(0, 0.5, 5001))
        D = p.mu_y0 * (1 + p.pD2 * (fz - p.Fz0) / p.Fz0) * fz
        assert peak == pytest.approx(D, rel=1e-6)


@pytest.mark.unit
def test_suspension_equivalent_coefficients(car):
    """The equivalent heave, pitch and roll stiffness and damping of the wheel rates."""
    p, _ = car
    s = p.suspension
    assert s["k"] == pytest.approx(2 * 36e3 + 2 * 24e3)
    assert s["k_phi"] == pytest.approx((2 * 36e3) / 4 * 1.21 ** 2 + (2 * 24e3) / 4 * 1.21 ** 2)
    assert s["k_theta"] == pytest.approx(2 * 36e3 * 0.765 ** 2 + 2 * 24e3 * 0.815 ** 2)
    assert s["c_phi"] == pytest.approx((2 * 3.28e3) / 4 * 1.21 ** 2 + (2 * 2.2e3) / 4 * 1.21 ** 2)


@pytest.mark.unit
@pytest.mark.parametrize("edit, field", [
    (("[mass]", "total = 240.0", "total = -1.0"), "m"),
    (("[mass]", "Izz = 110.0", "Izz = 500.0"), "triangle"),
    (("[aero]", "rho = 1.167", "rho = 1.167\nrhoo = 1.2"), "rhoo"),
    (("[tyre]", "mu_y0 = 1.5", "mu_y0 = \"high\""), "mu_y0"),
    (("[tyre]", "fz_min = 50.0", ""), "fz_min"),
])
def test_vehicle_file_errors(tmp_path, edit, field):
    """A bad value in a vehicle file is refused naming its field."""
    text = (veh.models_dir() / "fsae.toml").read_text()
    _, old, new = edit
    old_line = next(line for line in text.splitlines() if line.strip().startswith(old))
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old_line, new))
    with pytest.raises(ValueError) as exc:
        veh.load_vehicle(bad)
    assert field in str(exc.value) and "bad.toml" in str(exc.value)


@pytest.mark.unit
def test_unknown_vehicle_lists_known():
    """An unknown vehicle name lists the known ones."""
    with pytest.raises(ValueError, match="fsae"):
        veh.load_vehicle("no_such_car")
