r"""The friction envelope of the car (the GG diagram's curves, :func:`friction_envelope`): two
axles with the car's tyre model (:data:`pyomo_lap.vehicle.tyres.TYRE_MODELS`), load transfer,
brake balance, drag and the power limit, at one speed, steady state on a flat road."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

import numpy as np

from .car import aero_forces
from .tyres import DEFAULT_TYRE_MODEL, peak_force, tyre_model

__all__ = ["friction_envelope", "ENVELOPE_KEYS", "ENVELOPE_NOTE", "ENVELOPE_LIMITS"]


# --------------------------------------------------------------------------------------------
# the friction envelope of the car (GG diagram): two axles, load transfer, brake balance
# --------------------------------------------------------------------------------------------

ENVELOPE_KEYS = ("m", "m_u", "mu_x0", "mu_y0", "Cz1", "Cz2", "rho", "S", "Cx", "P_max",
                 "a1", "a2", "h", "wheel_radius", "hq1", "hq2", "t1", "t2", "k1", "k2",
                 "brake_ratio")
"""Vehicle parameters :func:`friction_envelope` needs (``gravity``, ``pD2``, ``fz_min`` are
optional: 9.81 m/s^2, no load sensitivity and no minimum wheel load without them), with the
parameters of the car's tyre model (:attr:`pyomo_lap.vehicle.tyres.TyreModel.parameters`, the
Magic Formula's ``Fz0, pK1, pK2, C, E``) unless ``shared_slip=False`` (then ``Fz0`` is
optional, with ``pD2``)."""

ENVELOPE_NOTE = ("two axles: fixed brake balance k_b, rear drive, traction <= P_max/v, drag;\n"
                 "load transfer (longitudinal; lateral split by roll stiffness), tyre load "
                 "sensitivity,\none slip angle per axle (the lighter tyre peaks first); "
                 "steady state, flat road,\nno yaw acceleration, no pitch/roll dynamics")
"""The simplifications of :func:`friction_envelope`, as the GG diagram's legend says them."""

ENVELOPE_LIMITS = ("front axle", "rear axle", "power")
"""What limits a point of the envelope (``friction_envelope(...)["limit"]``)."""


def _setting(vehicle, key, default):
    """A setting (a string) of the vehicle, a dict or a parameters object: ``default`` if it has
    none (a results folder's ``vehicle`` sheet holds the parameters only)."""
    v = vehicle.get(key) if isinstance(vehicle, dict) else getattr(vehicle, key, None)
    return v if isinstance(v, str) and v else default


def _param(vehicle, key, default=None):
    if isinstance(vehicle, dict):
        v = vehicle.get(key, default)
    else:
        v = getattr(vehicle, key, default)
    if v is None:
        raise KeyError(key)
    return float(v)


def _envelope_car(vehicle, speed: float, brake_ratio=None, load_transfer: bool = True,
                  load_sensitivity: bool = True, shared_slip: bool = True):
    """The parameters of :func:`friction_envelope` at one speed (a namespace of floats):
    static axle loads with the downforce, drag, the roll-stiffness split, the brake balance.

    Raises
    ------
    KeyError
        A required parameter (:data:`ENVELOPE_KEYS`) is missing.
    """
    c = SimpleNamespace(**{k: _param(vehicle, k) for k in ENVELOPE_KEYS})
    c.gravity = _param(vehicle, "gravity", 9.81)
    c.fz_min = _param(vehicle, "fz_min", 0.0)
    c.shared_slip = bool(shared_slip)
    c.tyre = tyre_model(_setting(vehicle, "tyre_model", DEFAULT_TYRE_MODEL))
    if c.shared_slip:                     # the tyre model's characteristic
        for key in c.tyre.parameters:
            if key not in ENVELOPE_KEYS and key != "pD2":
                setattr(c, key, _param(vehicle, key))
        c.pD2 = _param(vehicle, "pD2", 0.0)
    else:
        c.Fz0, c.pD2 = _param(vehicle, "Fz0", 1.0), _param(vehicle, "pD2", 0.0)
    if not load_sensitivity:
        c.pD2 = 0.0
    if not c.Fz0 > 0:
        c.Fz0, c.pD2 = 1.0, 0.0
    if brake_ratio is not None:
        c.brake_ratio = float(brake_ratio)
    if not 0.0 <= c.brake_ratio <= 1.0:
        raise ValueError(f"brake_ratio = {c.brake_ratio!r}: expected the front share of the "
                         "braking force, in [0, 1]")
    c.speed = float(speed)
    c.l = c.a1 + c.a2
    # eq (20), the model's aerodynamic wrench at O3 (drag along x3, downforce, pitch moment)
    f_drag, f_down, m_aero = aero_forces(c, c.speed)
    c.drag, c.down = -float(f_drag), -float(f_down)
    # axle loads of the downforce: F_1 = (a2 f_3z - m_3y)/l as in car_equations
    c.down1 = (c.a2 * c.down - (-float(m_aero))) / c.l
    c.down2 = c.down - c.down1
    g, m = c.gravity, c.m
    c.F1 = m * g * c.a2 / c.l + c.down1          # static axle loads with downforce [N]
    c.F2 = m * g * c.a1 / c.l + c.down2
    # steady heave of the sprung mass under its weight and the downforce, eqs (18)-(19):
    # q4 = -(m_s g + F_down)/(2 k1 + 2 k2); h is the height of G6 at zero heave
    c.sag = ((c.m - c.m_u) * g + c.down) / (2 * c.k1 + 2 * c.k2)
    # m h_G: sprung mass at h + q4, unsprung mass at the wheel centres [kg m]
    c.mh = ((c.m - c.m_u) * max(c.h - c.sag, 0.0) + c.m_u * c.wheel_radius
            if load_transfer else 0.0)
    c.hq1, c.hq2 = (c.hq1, c.hq2) if load_transfer else (0.0, 0.0)
    # roll stiffness of each axle, k_phi_i = 2 k_i (t_i/2)^2 (VehicleParameters.suspension)
    kphi1, kphi2 = c.k1 * c.t1 ** 2 / 2, c.k2 * c.t2 ** 2 / 2
    c.share1 = kphi1 / (kphi1 + kphi2)
    c.power_cap = c.P_max / c.speed if c.speed > 0 else np.inf
    return c


def _envelope_tyre_loads(c, a_x, a_y):
    """Vertical loads [N] of the four tyres (11, 12, 21, 22: front left, front right, rear
    left, rear right) at accelerations ``a_x``, ``a_y`` [m/s^2] (arrays): the static axle loads
    with the downforce, the longitudinal transfer ``m h_G a_x / l`` and the lateral transfer of
    eqs (26)-(30) as :func:`pyomo_lap.vehicle.car.car_equations` builds it (roll moment
    ``m h_G a_y - Y_1 h_q1 - Y_2 h_q2`` split by roll stiffness, plus ``Y_i h_qi``), with the
    axle lateral forces ``Y_1 = m a_y a_2/l``, ``Y_2 = m a_y a_1/l`` (no yaw acceleration)."""
    d_long = c.mh * a_x / c.l
    F1, F2 = c.F1 - d_long, c.F2 + d_long
    Y1, Y2 = c.m * a_y * c.a2 / c.l, c.m * a_y * c.a1 / c.l
    roll = c.mh * a_y - Y1 * c.hq1 - Y2 * c.hq2
    dF1 = (c.share1 * roll + Y1 * c.hq1) / c.t1
    dF2 = ((1.0 - c.share1) * roll + Y2 * c.hq2) / c.t2
    return (F1 / 2 - dF1, F1 / 2 + dF1, F2 / 2 - dF2, F2 / 2 + dF2), (Y1, Y2)


def _envelope_feasible(c, a_x, a_y) -> dict:
    r"""Whether each axle and the power can give the accelerations ``a_x``, ``a_y`` [m/s^2]
    (arrays): ``{"front axle", "rear axle", "power"}`` -> bool arrays.

    The two tyres of an axle carry the same longitudinal force :math:`f_x` (eq 34: half the
    axle's), each at most the model's :math:`\mu_{x0}/\mu_{y0}\, D(f_z)\cos\theta` (its
    ``adherence = "below-peak"`` rows: the friction ellipse below the peak of the tyre's
    characteristic), :math:`D` the peak force of :func:`pyomo_lap.vehicle.tyres.peak_force`,
    and carry a load of at least ``fz_min``. ``shared_slip``: both tyres of the axle have one
    slip angle (eq 33), so the axle's lateral force is at most
    :math:`\sum_j D_j \sin\theta_j(\alpha^*)` with :math:`\alpha^*` the largest slip angle
    that keeps both tyres below their peak and within the ellipse for :math:`f_x` (the
    lighter tyre reaches its peak first; the car's tyre model,
    :attr:`~pyomo_lap.vehicle.tyres.TyreModel.slip_at` and
    :attr:`~pyomo_lap.vehicle.tyres.TyreModel.fraction`); otherwise every tyre may reach its own peak,
    :math:`\sum_j \sqrt{D_j^2 - (\mu_{y0}/\mu_{x0} f_x)^2}`.
    """
    a_x, a_y = np.asarray(a_x, float), np.asarray(a_y, float)
    X = c.m * a_x + c.drag                                  # tyre forces along x [N]
    brake, drive = np.minimum(X, 0.0), np.maximum(X, 0.0)
    X1 = c.brake_ratio * brake                              # eq (34), summed over the axle
    X2 = (1.0 - c.brake_ratio) * brake + drive              # rear drive
    (f11, f12, f21, f22), (Y1, Y2) = _envelope_tyre_loads(c, a_x, a_y)
    ratio = c.mu_y0 / c.mu_x0

    def axle(Xi, Yi, loads):
        ok = np.ones(np.broadcast(Xi, Yi).shape, bool)
        fx = ratio * np.abs(Xi) / 2                          # per tyre, in lateral units [N]
        tyres = []
        for fz in loads:
            ok &= (fz >= c.fz_min) & (fz > 0)
            fz = np.maximum(fz, 1e-9)
            D = np.maximum(peak_force(c, fz), 0.0)
            ok &= fx <= D * (1 + 1e-12)
            theta = np.arccos(np.clip(fx / np.where(D > 0, D, 1.0), 0.0, 1.0))
            tyres.append((fz, D, theta))
        if c.shared_slip:
            alpha = np.minimum.reduce([c.tyre.slip_at(c, fz, D, th) for fz, D, th in tyres])
            cap = sum(D * c.tyre.fraction(c, alpha, fz, D) for fz, D, _ in tyres)
        else:
            cap = sum(D * np.sin(th) for _, D, th in tyres)
        return ok & (np.abs(Yi) <= cap * (1 + 1e-12))

    return {"front axle": axle(X1, Y1, (f11, f12)), "rear axle": axle(X2, Y2, (f21, f22)),
            "power": drive <= c.power_cap}


def friction_envelope(vehicle, speed: float, n: int = 241, load_sensitivity: bool = True,
                      brake_ratio: Optional[float] = None, load_transfer: bool = True,
                      shared_slip: bool = True, iterations: int = 60) -> dict:
    r"""The accelerations the car can reach at one speed (the GG diagram's envelope).

    Each axle carries its share of the forces the accelerations ask for, with the loads the
    accelerations transfer, and must stay within the grip of its two tyres; the envelope is
    where the first axle (or the power) saturates, found by bisection in ``n`` directions
    (:func:`_envelope_radii`, with the closed forms it meets).

    Forces (flat road, steady state, no yaw acceleration; :math:`a_x`, :math:`a_y` the
    acceleration of the car [m/s^2], + forward, + left):

    * tyre force along x: :math:`X = m a_x + F_D`, :math:`F_D = \tfrac12\rho S C_x v^2` the
      drag [N]; braking (:math:`X < 0`) is split by the fixed brake balance, eq (34):
      :math:`X_1 = k_b X`, :math:`X_2 = (1 - k_b) X`; traction (:math:`X > 0`) is on the
      rear axle only, :math:`X_2 = X \le P_{max}/v`;
    * lateral: :math:`Y_1 = m a_y a_2/l`, :math:`Y_2 = m a_y a_1/l` (moments about G
      balance: no yaw acceleration);
    * axle loads: :math:`F_1 = m g a_2/l + F_{a1} - m h_G a_x/l`,
      :math:`F_2 = m g a_1/l + F_{a2} + m h_G a_x/l`, the downforce :math:`F_{ai}` split by
      ``Cz1``, ``Cz2`` (the model's aerodynamic wrench, :func:`pyomo_lap.vehicle.car.aero_forces`,
      eq 20), :math:`m h_G = (m - m_u)(h + q_4) + m_u r_w`: the sprung mass at ``h`` lowered
      by its steady heave :math:`q_4 = -((m - m_u) g + F_{a1} + F_{a2})/(2k_1 + 2k_2)`
      (eqs 18-19), the unsprung mass at the wheel centres (``wheel_radius``);
    * lateral load transfer of each axle as in the model's eqs (26)-(30):
      :math:`\Delta F_i = [\frac{k_{\phi i}}{k_\phi}(m h_G a_y - Y_1 h_{q1} - Y_2 h_{q2})
      + Y_i h_{qi}]/t_i`, :math:`k_{\phi i} = k_i t_i^2/2` (the wheel rates), tyre loads
      :math:`F_i/2 \mp \Delta F_i`, each at least ``fz_min`` (the model's bound);
    * each tyre: the model's friction ellipse below the peak of its lateral characteristic
      (``adherence = "below-peak"``): :math:`\mu_{y0}/\mu_{x0}\,|f_x| \le D\cos\theta`,
      :math:`f_y \le D\sin\theta`, with the peak force :math:`D = \mu_{y0}(1 + p_{D2}(f_z -
      F_{z0})/F_{z0}) f_z` (load sensitivity, :func:`pyomo_lap.vehicle.tyres.peak_force`); the
      two tyres of an axle carry the same :math:`f_x = X_i/2` (eq 34), so the lighter one
      limits the axle's longitudinal force; with ``shared_slip`` they also share one slip
      angle (eq 33), so the axle's lateral force is largest when the lighter tyre reaches its
      peak, the heavier one short of its own (the car's tyre model, ``tyre_model``; its
      cornering stiffness grows less than the load): lateral load transfer costs grip
      through that and through :math:`p_{D2} < 0`.

    Simplifications that remain: flat road (no grade, banking or vertical curvature), steady
    state (no pitch or roll dynamics, no yaw acceleration: the lateral force is shared by
    the axles as :math:`a_2 : a_1`), loads from the accelerations of the car as one rigid
    body (the sprung mass's pitch and roll do not move its centre), the axle forces taken
    along the car's axes (the steer angle's rotation of the front forces, and the yaw moment
    :math:`\tfrac{t_1}{2}(f_{11y} - f_{12y})\sin\delta` it adds, ignored), no limit on the
    braking force but the friction. It is the model's friction limit under those
    assumptions, not a bound: a run's points may lie slightly outside it where a transient
    (pitch, roll, yaw acceleration), the road's shape or the steer angle helps (up to about
    4 % on the bundled FSAE car's Zandvoort lap, in corners limited by the front axle).

    Parameters
    ----------
    vehicle : dict or VehicleParameters
        The parameters :data:`ENVELOPE_KEYS`: ``m``, ``m_u`` [kg], ``mu_x0``, ``mu_y0`` [-],
        ``Cz1``, ``Cz2``, ``Cx`` [-], ``rho`` [kg/m^3], ``S`` [m^2], ``P_max`` [W], ``a1``, ``a2``,
        ``h``, ``wheel_radius``, ``hq1``, ``hq2``, ``t1``, ``t2`` [m], ``k1``, ``k2`` [N/m],
        ``brake_ratio`` [-]; with ``shared_slip`` the tyre model's (the Magic Formula's
        ``Fz0, C, E, pK1, pK2``); optional ``gravity`` [m/s^2] (9.81), ``pD2`` [-] (none),
        ``fz_min`` [N] (0), ``tyre_model`` (``"magic-formula"``).
    speed : float
        Speed [m/s], >= 0.
    n : int
        Points (directions) on the curve, the first and the last at :math:`\theta = 0`
        (the traction limit).
    load_sensitivity : bool
        False: the friction coefficients ``mu_x0``, ``mu_y0`` at every load (``pD2`` = 0).
    brake_ratio : float, optional
        The front share :math:`k_b` of the braking force [-], in [0, 1]; None: the vehicle's.
    load_transfer : bool
        False: no load transfer, longitudinal or lateral (as ``h`` = ``wheel_radius`` =
        ``hq1`` = ``hq2`` = 0): the static axle loads with the downforce.
    shared_slip : bool
        True: the two tyres of an axle share a slip angle (the model's tyres); False: each
        may reach its own peak (the axle's grip is the sum of its tyres' friction ellipses).
    iterations : int
        Bisection steps per direction (60: the limit to about 1e-15 of its bracket).

    Returns
    -------
    dict
        ``a_x``, ``a_y``: (n,) arrays [m/s^2], the closed curve; ``limit``: (n,) array of
        str, what limits each point (:data:`ENVELOPE_LIMITS`); ``ax_brake`` (< 0),
        ``ax_traction``, ``ay_max`` [m/s^2]: the braking limit (straight line), the traction
        limit and the largest lateral acceleration on the curve; ``brake_limit``,
        ``traction_limit``, ``lateral_limit``: what limits them; ``g_eff`` [m/s^2]
        (static load with downforce over mass); ``mu_x``, ``mu_y`` [-] (at a quarter of that
        load per tyre); ``static_loads`` (front, rear) [N] per tyre; ``brake_ratio`` [-];
        ``h_G`` [m] (the height of the centre of mass with the steady heave, 0 without
        load transfer); ``drag``, ``downforce`` [N]; ``speed`` [m/s].

    Raises
    ------
    KeyError
        A required parameter is missing.
    ValueError
        ``brake_ratio`` outside [0, 1].
    """
    c = _envelope_car(vehicle, speed, brake_ratio, load_transfer, load_sensitivity, shared_slip)
    return _envelope_curve(c, int(n), iterations)


def _envelope_radii(c, centre: float, normal: float, th, iterations: int) -> tuple:
    r"""How far the car ``c`` (:func:`_envelope_car`) can accelerate in each direction ``th``
    [rad] from the point of zero tyre force ``(centre, 0)`` [m/s^2] (``normal``: the weight
    with the downforce [N]), the step of :func:`friction_envelope` that finds its curve.

    For each of ``n`` directions :math:`\theta` from the point of zero tyre force,
    :math:`(a_x, a_y) = (-\tfrac12\rho S C_x v^2/m, 0) + r(\cos\theta, \sin\theta)`, a
    bisection on :math:`r` finds the largest acceleration both axles and the power allow
    (vectorised over the directions). Closed forms it meets (tests, without load
    sensitivity): with no load transfer and :math:`k_b` the front share of the static load,
    the braking limit is :math:`\mu_x g_{eff}` plus the drag; with :math:`k_b = 1` it solves
    :math:`m a - F_D = \mu_x (F_1 + m a h_G/l)`; the rear-driven traction limit solves
    :math:`m a = \mu_x (F_2 + m a h_G/l)`; with no transfer, equal static loads on all four
    tyres and :math:`k_b = 1/2`, its braking half is the whole-car ellipse
    :math:`(a_x + F_D/m)^2/(\mu_x g_{eff})^2 + a_y^2/(\mu_y g_{eff})^2 = 1`.

    Returns
    -------
    (ndarray, ndarray)
        The largest feasible radius ``r`` [m/s^2] in each direction, and what limits it
        (:data:`ENVELOPE_LIMITS`, ``"none"`` where nothing fails).
    """
    m = c.m
    cos_t, sin_t = np.cos(th), np.sin(th)

    def feasible(r):
        ok = _envelope_feasible(c, centre + r * cos_t, r * sin_t)
        return ok, ok["front axle"] & ok["rear axle"] & ok["power"]

    # a bracket: no tyre gives more than its peak force at the whole load
    mu_top = max(c.mu_x0, c.mu_y0) * max(1.0, 1.0 + c.pD2 * (normal - c.Fz0) / c.Fz0)
    hi = np.full(th.shape, 2.0 * mu_top * normal / m + 1.0)
    for _ in range(30):
        still = feasible(hi)[1]
        if not still.any():
            break
        hi = np.where(still, 2.0 * hi, hi)
    lo = np.zeros_like(hi)
    if feasible(lo)[1].all():
        for _ in range(int(iterations)):
            mid = 0.5 * (lo + hi)
            ok = feasible(mid)[1]
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    else:                                   # no tyre force is possible (a wheel below fz_min)
        lo = np.where(feasible(lo)[1], lo, 0.0)
    checks = feasible(hi)[0]                # just outside: what fails first
    limit = np.select([~checks[k] for k in ENVELOPE_LIMITS], list(ENVELOPE_LIMITS),
                      default="none").astype(object)
    return lo, limit


def _envelope_curve(c, n: int, iterations: int) -> dict:
    """The return of :func:`friction_envelope` for the car ``c`` of :func:`_envelope_car`: the
    curve through ``n`` directions and, in three more, the traction, lateral and braking
    limits."""
    m, g = c.m, c.gravity
    normal = m * g + c.down
    centre = -c.drag / m                   # a_x with no tyre force
    th_curve = np.linspace(0.0, 2.0 * np.pi, n)
    th = np.concatenate([th_curve, [0.0, 0.5 * np.pi, np.pi]])
    lo, limit = _envelope_radii(c, centre, normal, th, iterations)
    cos_t, sin_t = np.cos(th), np.sin(th)
    a_x, a_y = centre + lo * cos_t, lo * sin_t
    k = th_curve.size
    ay_curve = np.abs(a_y[:k])
    j = int(np.argmax(ay_curve))
    if abs(a_y[k + 1]) >= ay_curve[j]:
        ay_max, lat_limit = abs(float(a_y[k + 1])), limit[k + 1]
    else:
        ay_max, lat_limit = float(ay_curve[j]), limit[j]
    scale = max(1.0 + c.pD2 * (0.25 * normal - c.Fz0) / c.Fz0, 0.0)
    return {"a_x": a_x[:k], "a_y": a_y[:k], "limit": limit[:k],
            "ax_brake": float(a_x[k + 2]), "ax_traction": float(a_x[k]), "ay_max": ay_max,
            "brake_limit": str(limit[k + 2]), "traction_limit": str(limit[k]),
            "lateral_limit": str(lat_limit), "g_eff": normal / m,
            "mu_x": c.mu_x0 * scale, "mu_y": c.mu_y0 * scale,
            "static_loads": (c.F1 / 2, c.F2 / 2), "brake_ratio": c.brake_ratio,
            "h_G": c.mh / m, "drag": c.drag, "downforce": c.down, "speed": c.speed}
