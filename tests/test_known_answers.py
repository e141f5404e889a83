r"""Cases with known answers for the full model.

Each is computed independently of the code under test (the ABA, the load equations as wired
in the model, the simulation):

* power-limited straight-line acceleration against the scalar ODE
  :math:`m\dot v = \min(P/v, F_{grip}) - \tfrac12\rho S C_x v^2`;
* steady cornering on a flat circle and on a banked circle against a steady-state solve of the
  whole car written here from Newton-Euler in the rotating frame (the same tyre formula and
  load-transfer rule, nothing of the chain or the ABA);
* crest and dip: the total vertical load against the centripetal closed form;
* energy conservation without damping, tyres and aerodynamics on a 3D track;
* the static sag and loads reached by simulation from an undeflected suspension.
"""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, fsolve

from pyomo_lap import Track, load_vehicle
from pyomo_lap.spatial.tree import TrackJoint, forward_kinematics
from pyomo_lap.verify.simulate import car_functions
from pyomo_lap.verify.controls import FunctionControls
from pyomo_lap.verify.simulate import TrackLookup, simulate
from pyomo_lap.vehicle.car import build_chain

G = 9.81


@pytest.fixture(scope="module")
def car():
    """The FSAE car and its car functions."""
    p = load_vehicle("fsae")
    return p, car_functions(p)


def straight(length=800.0):
    """A flat straight track of ``length`` metres."""
    s = np.linspace(0.0, length, 401)
    return Track(s, np.c_[s, np.zeros_like(s), np.zeros_like(s)], closed=False, name="straight")


def circle(R, banking=0.0, n=720):
    """Counter-clockwise circle of radius R, exact arc-length samples."""
    s = np.arange(n) * (2 * np.pi * R / n)
    u = s / R
    return Track(s, np.c_[R * np.cos(u), R * np.sin(u), np.zeros_like(u)], banking=banking,
                 closed=True, name="circle")


def vertical_arc(Rv, half_angle, crest=True, n=401):
    """Open track along +x whose spine is a vertical circular arc of radius Rv (crest or dip)."""
    th = np.linspace(-half_angle, half_angle, n)
    sgn = 1.0 if crest else -1.0
    s = Rv * (th - th[0])
    return Track(s, np.c_[Rv * np.sin(th), np.zeros_like(th), sgn * Rv * (np.cos(th) - 1.0)],
                 closed=False, name="crest" if crest else "dip")


def peak(p, fz):
    """Magic-Formula peak force D(fz), written from eq (32) here."""
    return p.mu_y0 * (1 + p.pD2 * (fz - p.Fz0) / p.Fz0) * fz


def mf_lateral(p, alpha, fz):
    """Eq (32) written here: D sin(C atan(B alpha)), E = 0 in fsae.toml."""
    assert p.E == 0
    D = peak(p, fz)
    c_alpha = p.pK1 * p.Fz0 * math.sin(2 * math.atan(fz / (p.pK2 * p.Fz0)))
    B = c_alpha / (p.C * D)
    return D * math.sin(p.C * math.atan(B * alpha))


# ------------------------------------------------------------------------------ straight line
@pytest.mark.unit
def test_power_limited_acceleration_matches_scalar_ode(car):
    """From 8 m/s on a flat straight with f_xa = min(P/v, F_grip(v)): the speed follows
    m v' = f_xa - 1/2 rho S Cx v^2 (both masses move with q1), and in the grip-limited phase
    the rear tyres work at the friction limit estimated here from a quasi-static load transfer
    (h_G from the two masses' heights)."""
    p, cf = car
    m = p.m
    kx = 0.5 * p.rho * p.S * p.Cx
    h_G = (p.m_s * p.h + p.m_u * p.wheel_radius) / m

    def rear_wheel_load(v, a):
        return 0.5 * (m * G * p.a1 / p.l + m * a * h_G / p.l + 0.5 * p.rho * p.S * p.Cz2 * v * v)

    def grip_force(v):   # traction at the limit of both rear tyres, with its own load transfer
        f = lambda F: F - 0.97 * 2 * peak(p, rear_wheel_load(v, (F - kx * v * v) / m)) * p.mu_x0 / p.mu_y0  # noqa: E731
        return brentq(f, 100.0, 20000.0)

    v_grid = np.linspace(5.0, 60.0, 221)
    F_grid = np.array([grip_force(v) for v in v_grid])

    def traction(v):
        return min(p.P_max / v, float(np.interp(v, v_grid, F_grid)))

    v0, T = 10.0, 4.0
    ref = solve_ivp(lambda t, v: [(traction(v[0]) - kx * v[0] ** 2) / m], (0, T), [v0],
                    rtol=1e-10, atol=1e-10, dense_output=True)
    tr = straight()
    sag = -p.m_s * G / p.suspension["k"]
    x0 = [10.0, 0, 0, sag, 0, 0, v0, 0, 0, 0, 0, 0]
    ctl = FunctionControls(lambda t, x: (traction(x[6]), 0.0, 0.0))
    sim = simulate(tr, p, ctl, x0, t_end=T, car=cf, rtol=1e-8)
    assert sim.status == "t_end", sim.message
    v_ref = ref.sol(sim.t)[0]
    err = np.abs(sim.x[:, 6] - v_ref)
    assert err.max() < 0.01 * 1.0 + 2e-3 * v_ref.max()       # < 0.2 % (+1 cm/s): the pitch motion
    assert sim.x[-1, 6] == pytest.approx(ref.sol(T)[0], rel=5e-4)
    # distance travelled: the integral of the reference speed
    dist = solve_ivp(lambda t, y: [ref.sol(t)[0]], (0, T), [0.0], rtol=1e-10).y[0, -1]
    assert sim.x[-1, 0] - 10.0 == pytest.approx(dist, rel=5e-4)
    # the grip-limited phase: rear tyres at 90-100 % of the friction limit of the model's loads
    grip_phase = np.array([traction(v) < p.P_max / v for v in sim.x[:, 6]]) & (sim.t > 0.3)
    assert grip_phase.sum() > 10 and (~grip_phase).sum() > 10     # both phases are covered
    f2x = 0.5 * sim.u[grip_phase, 0]
    use = f2x / np.array([peak(p, fz) for fz in sim.z[grip_phase, 2]])
    use_r = f2x / np.array([peak(p, fz) for fz in sim.z[grip_phase, 3]])
    assert 0.9 < use.min() and max(use.max(), use_r.max()) < 1.0
    assert np.all(sim.x[1:, 4] < 0.0)              # nose up (q5 < 0) under traction


# ------------------------------------------------------------------------------ steady cornering
def steady_state(p, R, v, nu=0.0):
    r"""Steady cornering of the full car on a circle of radius R (CCW, left turn), O3 on the
    spine (q2 = 0), spine speed v, banking nu, written from Newton-Euler of the two bodies in
    rigid rotation :math:`\Omega = v/R` about the circle's vertical axis.

    Unknowns: q3, delta, f_xa, q4, q5, q6 and the four loads. Equations: the tyres' in-plane
    wrench equals the one the motion needs; heave, pitch and roll joints in equilibrium with
    their springs; the loads from the needed normal force and moments by the load-transfer
    rule of the model (static equivalence and the roll-stiffness split of eq 30)."""
    Om = v / R
    kvec = np.array([0.0, 0.0, 1.0])
    # track frame at s = 0 (point (R, 0, 0)): t, n (left, banked), m
    t = np.array([0.0, 1.0, 0.0])
    vin = np.array([-1.0, 0.0, 0.0])                    # horizontal, towards the centre (left)
    w = np.cross(t, vin)
    n = math.cos(nu) * vin + math.sin(nu) * w
    mm = -math.sin(nu) * vin + math.cos(nu) * w
    O3 = np.array([R, 0.0, 0.0])
    susp = p.suspension
    h_vip = (p.a2 * p.hq1 + p.a1 * p.hq2) / p.l
    Ixx_u = 2 * (p.m_u * p.a2 / p.l / 2) * (p.t1 / 2) ** 2 + 2 * (p.m_u * p.a1 / p.l / 2) * (p.t2 / 2) ** 2
    Iyy_u = 2 * (p.m_u * p.a2 / p.l / 2) * p.a1 ** 2 + 2 * (p.m_u * p.a1 / p.l / 2) * p.a2 ** 2
    I_u = np.diag([Ixx_u, Iyy_u, Ixx_u + Iyy_u])
    I_s = np.diag([p.Ixx, p.Iyy, p.Izz])
    g = np.array([0.0, 0.0, -G])
    omega = Om * kvec

    def rot(axis, a):
        c, s = math.cos(a), math.sin(a)
        if axis == "x":
            return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])

    def acc(r):   # centripetal acceleration of a point rotating about the vertical axis
        return np.cross(omega, np.cross(omega, r))

    def kinematics(q3, q4, q5, q6):
        x3 = math.cos(q3) * t + math.sin(q3) * n
        y3 = -math.sin(q3) * t + math.cos(q3) * n
        R3 = np.column_stack([x3, y3, mm])
        O5 = O3 + (h_vip + q4) * mm
        R6 = R3 @ rot("y", q5) @ rot("x", q6)
        G6 = O5 + R6 @ np.array([0.0, 0.0, p.h - h_vip])
        Gu = O3 + p.wheel_radius * mm
        return R3, O5, R6, G6, Gu

    def loads_rule(fz3, mx3, my3, Y1, Y2):
        F1 = (p.a2 * fz3 - my3) / p.l
        F2 = (p.a1 * fz3 + my3) / p.l
        kp1, kp2 = susp["k_phi1"], susp["k_phi2"]
        roll = -mx3 - Y1 * p.hq1 - Y2 * p.hq2
        d1 = (kp1 / (kp1 + kp2) * roll + Y1 * p.hq1) / p.t1
        d2 = (kp2 / (kp1 + kp2) * roll + Y2 * p.hq2) / p.t2
        return np.array([F1 / 2 - d1, F1 / 2 + d1, F2 / 2 - d2, F2 / 2 + d2])

    def equations(y):
        q3, delta, f_xa, q4, q5, q6 = y[:6]
        fz = y[6:]
        R3, O5, R6, G6, Gu = kinematics(q3, q4, q5, q6)
        v3 = R3.T @ np.cross(omega, O3)                 # velocity of O3 in {B3}
        w3z = omega @ mm
        q_aero = 0.5 * p.rho * p.S * v3[0] ** 2
        F_aero = R3 @ np.array([-p.Cx * q_aero, 0.0, -(p.Cz1 + p.Cz2) * q_aero])   # at O3
        M_aero = R3 @ np.array([0.0, -(p.Cz2 * p.a2 - p.Cz1 * p.a1) * q_aero, 0.0])
        # whole car: the contact wrench (about O3) the motion needs
        F_need = p.m_s * (acc(G6) - g) + p.m_u * (acc(Gu) - g) - F_aero
        I6 = R6 @ I_s @ R6.T
        Iu = R3 @ I_u @ R3.T
        M_need = (np.cross(G6 - O3, p.m_s * (acc(G6) - g)) + np.cross(omega, I6 @ omega)
                  + np.cross(Gu - O3, p.m_u * (acc(Gu) - g)) + np.cross(omega, Iu @ omega) - M_aero)
        f3 = R3.T @ F_need
        m3 = R3.T @ M_need
        # tyres (eq 33 small-angle slip, eq 32, eq 34 with f_xb = 0)
        a1 = delta - (v3[1] + p.a1 * w3z) / v3[0]
        a2 = (p.a2 * w3z - v3[1]) / v3[0]
        fy = [mf_lateral(p, a1, fz[0]), mf_lateral(p, a1, fz[1]),
              mf_lateral(p, a2, fz[2]), mf_lateral(p, a2, fz[3])]
        fx = [0.0, 0.0, 0.5 * f_xa, 0.5 * f_xa]
        ang = [delta, delta, 0.0, 0.0]
        pos = [(p.a1, p.t1 / 2), (p.a1, -p.t1 / 2), (-p.a2, p.t2 / 2), (-p.a2, -p.t2 / 2)]
        X = Y = Mz = 0.0
        for k in range(4):
            Fx = fx[k] * math.cos(ang[k]) - fy[k] * math.sin(ang[k])
            Fy = fx[k] * math.sin(ang[k]) + fy[k] * math.cos(ang[k])
            X, Y = X + Fx, Y + Fy
            Mz += pos[k][0] * Fy - pos[k][1] * Fx
        Y1 = (fy[0] + fy[1]) * math.cos(delta)
        Y2 = fy[2] + fy[3]
        # joints 4 (heave along m), 5 (pitch about y3 through O5), 6 (roll about x5 through O5)
        a6 = acc(G6)
        M5 = (np.cross(G6 - O5, p.m_s * (a6 - g)) + np.cross(omega, I6 @ omega)
              - (M_aero + np.cross(O3 - O5, F_aero)))
        x5 = R3 @ rot("y", q5) @ np.array([1.0, 0.0, 0.0])
        heave = mm @ (p.m_s * (a6 - g) - F_aero) + susp["k"] * q4
        pitch = R3[:, 1] @ M5 + susp["k_theta"] * q5
        roll = x5 @ M5 + susp["k_phi"] * q6
        res = [X - f3[0], Y - f3[1], Mz - m3[2], heave, pitch, roll]
        res += list(fz - loads_rule(f3[2], m3[0], m3[1], Y1, Y2))
        return np.array(res) / np.array([100, 100, 100, 100, 100, 100, 100, 100, 100, 100])

    s1 = p.m * G * p.a2 / (2 * p.l)
    s2 = p.m * G * p.a1 / (2 * p.l)
    y0 = [0.0, p.l / R, 100.0, -0.02, 0.0, 0.01, s1, s1, s2, s2]
    y, info, ok, msg = fsolve(equations, y0, xtol=1e-13, full_output=True)
    assert ok == 1, msg
    assert np.abs(equations(y)).max() < 1e-9
    q3, delta, f_xa, q4, q5, q6 = y[:6]
    return {"q3": q3, "delta": delta, "f_xa": f_xa, "q4": q4, "q5": q5, "q6": q6, "fz": y[6:]}


@pytest.mark.unit
@pytest.mark.parametrize("R, v, nu", [(50.0, 15.0, 0.0), (50.0, 15.0, -0.15)],
                         ids=["flat circle", "banked circle"])
def test_steady_cornering_matches_independent_steady_state(car, R, v, nu):
    """At the independent steady state the model's accelerations vanish, its loads and
    in-plane forces agree, and a time-domain run stays on the circle. On the banked circle the
    model neglects the small in-plane part of the track joint's constraint wrench (vehicle.py,
    MODEL_NOTES item 4): about -Omega_y m_3y, a fraction of a newton here."""
    p, cf = car
    ss = steady_state(p, R, v, nu)
    tr = circle(R, banking=nu)
    look = TrackLookup(tr)
    x = np.array([0.0, 0.0, ss["q3"], ss["q4"], ss["q5"], ss["q6"], v, 0, 0, 0, 0, 0])
    u = np.array([ss["f_xa"], 0.0, ss["delta"]])
    z, qdd = cf.solve(look(0.0)[0], x[:6], x[6:], u)
    tol = 1e-5 if nu == 0 else 5e-3
    assert np.abs(qdd).max() < tol, qdd
    assert z[:4] == pytest.approx(ss["fz"], abs=1e-3 if nu == 0 else 0.5)
    # a left turn: the right wheels carry more, the car rolls right (q6 > 0), steers left
    assert z[1] > z[0] and z[3] > z[2] and ss["q6"] > 0 and ss["delta"] > 0
    sim = simulate(tr, p, FunctionControls(lambda t, xx: u), x, t_end=1.0, car=cf, rtol=1e-8)
    assert sim.status == "t_end"
    assert abs(sim.x[-1, 1]) < 2e-3                       # stays on the spine (q2)
    assert sim.x[-1, 6] == pytest.approx(v, abs=2e-3)     # at the same speed
    assert np.abs(sim.x[:, 2:6] - x[2:6]).max() < 2e-4    # same attitude


@pytest.mark.unit
def test_banked_curve_neutral_speed(car):
    """At v^2 = g R tan|nu| a point mass needs no side force on a banked curve; the car's
    tyres give almost none (the masses sit at different heights and radii)."""
    p, cf = car
    R, nu = 50.0, -0.15
    v = math.sqrt(G * R * math.tan(-nu))
    ss = steady_state(p, R, v, nu)
    tr = circle(R, banking=nu)
    x = np.array([0.0, 0.0, ss["q3"], ss["q4"], ss["q5"], ss["q6"], v, 0, 0, 0, 0, 0])
    z, qdd = cf.solve(TrackLookup(tr)(0.0)[0], x[:6], x[6:], np.array([ss["f_xa"], 0.0, ss["delta"]]))
    assert abs(z[5]) < 0.01 * p.m * G
    # the normal load: m (g cos nu + v^2/R sin|nu|) (point mass), within the height effects
    assert sum(z[:4]) == pytest.approx(p.m * (G * math.cos(nu) + v * v / R * math.sin(-nu))
                                       + 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2) * v * v, rel=2e-3)


# ------------------------------------------------------------------------------ crest and dip
def settled_at(cf, tr, s, v, f_xa):
    """State at s with speed v and heave and pitch settled (zero heave and pitch accelerations)."""
    look = TrackLookup(tr)

    def r(y):
        x = np.array([s, 0, 0, y[0], y[1], 0, v, 0, 0, 0, 0, 0])
        _, qdd = cf.solve(look(s)[0], x[:6], x[6:], np.array([f_xa, 0.0, 0.0]))
        return [qdd[3], qdd[4]]
    y = fsolve(r, [-0.02, 0.0], xtol=1e-12)
    x = np.array([s, 0, 0, y[0], y[1], 0, v, 0, 0, 0, 0, 0])
    z, qdd = cf.solve(look(s)[0], x[:6], x[6:], np.array([f_xa, 0.0, 0.0]))
    return x, z, qdd


@pytest.mark.unit
@pytest.mark.parametrize("crest", [True, False], ids=["crest", "dip"])
def test_crest_and_dip_vertical_load(car, crest):
    """At the top of a crest (bottom of a dip) of radius Rv, at spine speed v, with the
    suspension settled: sum f_ijz = sum_b m_b (g -+ v^2 (Rv +- h_b)/Rv^2) + downforce, each
    mass on its own circle (h_b: height of its centre above the road)."""
    p, cf = car
    Rv, v = 120.0, 25.0
    tr = vertical_arc(Rv, 0.3, crest=crest)
    s_top = 0.5 * tr.length
    assert tr.evaluate([s_top]).omega[0, 1] == pytest.approx((1 if crest else -1) / Rv, rel=1e-6)
    drag = 0.5 * p.rho * p.S * p.Cx * v * v
    x, z, qdd = settled_at(cf, tr, s_top, v, drag)
    h_vip = (p.a2 * p.hq1 + p.a1 * p.hq2) / p.l
    h6 = h_vip + x[3] + (p.h - h_vip) * math.cos(x[4])       # G6 above the road
    sgn = 1.0 if crest else -1.0
    expected = (p.m_s * (G - sgn * v * v * (Rv + sgn * h6) / Rv ** 2)
                + p.m_u * (G - sgn * v * v * (Rv + sgn * p.wheel_radius) / Rv ** 2)
                + 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2) * v * v)
    assert sum(z[:4]) == pytest.approx(expected, rel=1e-6)
    flat = p.m * G + 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2) * v * v
    assert (sum(z[:4]) < flat) == crest          # lighter over the crest, heavier in the dip


@pytest.mark.unit
def test_driving_over_a_crest(car):
    """Time domain over a crest at constant speed (traction balancing drag and grade): at the
    top the loads agree with the closed form within the heave transient."""
    p, cf = car
    Rv, v = 120.0, 25.0
    tr = vertical_arc(Rv, 0.25, crest=True)
    kx = 0.5 * p.rho * p.S * p.Cx
    look = TrackLookup(tr)

    def law(t, x):
        grade = look(x[0])[0][6]            # R[2][0] = t_z: sin of the slope
        return (max(0.0, kx * x[6] ** 2 + p.m * G * grade + 50.0 * p.m * (v - x[6])), 0.0, 0.0)
    drag = kx * v * v + p.m * G * math.sin(0.25)
    x0, z0, _ = settled_at(cf, tr, 0.0, v, drag)
    s_top = 0.5 * tr.length
    sim = simulate(tr, p, FunctionControls(law), x0, t_end=10.0, s_end=s_top, z0=z0, car=cf, rtol=1e-8)
    assert sim.status == "end", sim.message
    h_vip = (p.a2 * p.hq1 + p.a1 * p.hq2) / p.l
    h6 = h_vip + sim.x[-1, 3] + (p.h - h_vip) * math.cos(sim.x[-1, 4])
    expected = (p.m_s * (G - v * v * (Rv + h6) / Rv ** 2) + p.m_u * (G - v * v * (Rv + p.wheel_radius) / Rv ** 2)
                + 0.5 * p.rho * p.S * (p.Cz1 + p.Cz2) * sim.x[-1, 6] ** 2)
    assert sum(sim.z[-1, :4]) == pytest.approx(expected, rel=5e-3)
    assert sim.x[-1, 6] == pytest.approx(v, abs=0.05)


# ------------------------------------------------------------------------------ energy
@pytest.mark.unit
def test_energy_conserved_without_damping_tyres_and_aero():
    """No dampers, no tyre forces, no air: the chain on a 3D piece of the Nordschleife keeps
    kinetic + gravitational + spring energy; kinetic energy from the body twists of the forward
    kinematics, heights from the postures (nothing of the ABA)."""
    from pyomo_lap import load_track
    p = load_vehicle("fsae").replace(c1=0.0, c2=0.0, rho=0.0)
    cf = car_functions(p, tyres=False)
    tr = load_track("nordschleife")
    s0 = 1280.0
    tp0 = tr.evaluate([s0])
    assert abs(tp0.slope[0]) > 0.05 and abs(tp0.omega[0, 2]) > 0.01   # a 3D, curved place
    x0 = np.array([s0, 0.5, 0.02, -0.01, 0.005, -0.01, 25.0, 0.3, 0.05, 0.05, -0.02, 0.05])
    sim = simulate(tr, p, FunctionControls(lambda t, x: (0.0, 0.0, 0.0)), x0, t_end=1.2,
                   tyres=False, car=cf, method="DOP853", rtol=1e-10)
    assert sim.status == "t_end", sim.message
    chain = build_chain(p)
    susp = p.suspension
    com = {3: np.array([0, 0, p.wheel_radius]),
           6: np.array([0, 0, p.h - (p.a2 * p.hq1 + p.a1 * p.hq2) / p.l])}
    mass = {3: p.m_u, 6: p.m_s}
    E = []
    for k in range(0, len(sim.t), max(1, len(sim.t) // 60)):
        x = sim.x[k]
        tp = tr.evaluate([x[0]])
        tj = TrackJoint(R=tp.rotation[0].tolist(), J=[1.0, 0, 0, *tp.omega[0]],
                        dJ=[0, 0, 0, *tp.domega_ds[0]], p=tp.position[0].tolist())
        kin = forward_kinematics(chain, list(x[:6]), list(x[6:]), track={0: tj})
        e = 0.5 * susp["k"] * x[3] ** 2 + 0.5 * susp["k_theta"] * x[4] ** 2 + 0.5 * susp["k_phi"] * x[5] ** 2
        for b in (3, 6):
            V = np.array([float(c) for c in kin.V[b - 1]])     # tree body b - 1 is body b
            M = np.array(chain.inertia[b - 1], dtype=float)
            Rb, pb = kin.pose[b - 1]
            zc = float(np.asarray(pb, float)[2] + (np.asarray(Rb, float) @ com[b])[2])
            e += 0.5 * V @ M @ V + mass[b] * G * zc
        E.append(e)
    E = np.array(E)
    ke = 0.5 * p.m * 25.0 ** 2
    assert np.ptp(E) < 1e-6 * ke, (np.ptp(E), ke)
    # and the motion was not trivial: suspension and elevation energy changed a lot
    assert np.ptp(sim.x[:, 3]) > 1e-3 and abs(sim.x[-1, 0] - s0) > 25.0


# ------------------------------------------------------------------------------ static
@pytest.mark.unit
def test_static_sag_and_loads_by_simulation():
    """Dropped with an undeflected suspension on a flat straight (no air, no drive), the car
    settles at q4 = -m_s g / k, q5 = q6 = 0, and wheel loads m g a2/(2l) front, m g a1/(2l)
    rear."""
    p = load_vehicle("fsae").replace(rho=0.0)
    cf = car_functions(p)
    tr = straight()
    x0 = [10.0, 0, 0, 0.0, 0.0, 0.0, 10.0, 0, 0, 0, 0, 0]
    sim = simulate(tr, p, FunctionControls(lambda t, x: (0.0, 0.0, 0.0)), x0, t_end=2.0,
                   car=cf, rtol=1e-9)
    assert sim.status == "t_end"
    k = 2 * p.k1 + 2 * p.k2
    assert sim.x[-1, 3] == pytest.approx(-p.m_s * G / k, rel=1e-5)
    assert abs(sim.x[-1, 4]) < 1e-9 and abs(sim.x[-1, 5]) < 1e-9
    # heave damping ratio c / (2 sqrt(k m_s)) > 1: it settles without overshoot
    assert (2 * p.c1 + 2 * p.c2) / (2 * math.sqrt(k * p.m_s)) > 1
    assert sim.x[:, 3].min() >= -p.m_s * G / k * (1 + 1e-6)
    front = p.m * G * p.a2 / (2 * p.l)
    rear = p.m * G * p.a1 / (2 * p.l)
    assert sim.z[-1, :4] == pytest.approx([front, front, rear, rear], rel=1e-6)
    assert sim.x[-1, 6] == pytest.approx(10.0, rel=1e-9)     # no force along the road
