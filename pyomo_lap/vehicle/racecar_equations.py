r"""The equations of the racecar of dymos's example, written once over "scalars": floats,
NumPy arrays (many points at once) or Pyomo expressions (:mod:`pyomo_lap.spatial.backend`).

:func:`racecar_equations` gives, at one state :math:`x = (n, V, \alpha, \lambda, \omega, a_x,
a_y)`, controls :math:`u = (\delta, \text{thrust})` and curvature :math:`\kappa` of the centre
line, the tyre loads, the tyre forces, the friction-ellipse use, the tractive power, the speed
along the centre line :math:`\dot s` and the time derivatives :math:`\dot x = f(x, u,
\kappa)` (the ODE right-hand side in time). The same function writes the Pyomo model
(:func:`pyomo_lap.ocp.racecar.build_racecar_model`, which gives it a ``name`` callback so that
every intermediate quantity is one of the model's named Expressions and the expression trees
stay as small as written by hand) and evaluates the car on numbers: the simulation, the
collocation defects and the limits of ``pyomo-lap validate`` (through the racecar's
:class:`pyomo_lap.ocp.racecar.RacecarDynamics`).

Source: dymos, ``dymos/examples/racecar`` (OpenMDAO; read at commit ``5bfbe394``):
``normalForceODE.py`` (tyre loads), ``tireODE.py`` (forces), ``tireConstraintODE.py`` (friction
ellipses), ``accelerationODE.py`` (the lagged accelerations), ``carODE.py`` (:math:`\dot V,
\dot\lambda, \dot\omega, \dot n, \dot\alpha`, the power), ``timeODE.py`` (:math:`\dot s`). The
equations, in the notation of :mod:`pyomo_lap.ocp.racecar`:

.. math::
    \dot s &= V\cos(\alpha - \lambda)/(1 - n\kappa), \qquad
    \dot n = V\sin(\alpha - \lambda), \qquad \dot\alpha = \omega - \kappa\dot s,\\
    \dot V &= (S_{all} - \delta (F_{fl} + F_{fr}) - \tfrac12\rho C_dA V^2)/M - \omega V\lambda,\\
    \dot\lambda &= \omega - \dot V\lambda/V - \delta (S_{fl} + S_{fr})/(MV) - F_{all}/(MV),\\
    \dot\omega &= \big(a (F_{fr} + F_{fl}) - b (F_{rr} + F_{rl})
                  + t_w(-S_{rr} + S_{rl} - S_{fr} + S_{fl})\big)/I_z,\\
    \dot a_x &= (\dot V + \omega V\lambda - a_x)/\tau_x, \qquad
    \dot a_y = (\omega V - (V\dot\lambda + \dot V\lambda) - a_y)/\tau_y, \qquad \dot t = 1.

Units: SI (m, s, rad, N, W). Layer: vehicle (imports :mod:`pyomo_lap.spatial.backend` and the
racecar's parameters).
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

from ..spatial.backend import cos, sin, sqrt
from .racecar import RacecarParameters

__all__ = ["racecar_equations", "state_rates", "smooth_max0", "load_transfer_per_accel",
           "STATE_NAMES", "CONTROLS", "WHEELS", "THRUST_EPS", "QUANTITIES", "QUANTITY_DOCS",
           "spatial_ode_residuals", "centre_line_speed"]

STATE_NAMES = ("n", "V", "alpha", "lam", "omega", "ax", "ay")
"""The states besides the time, as the Pyomo variables are named (``lam`` is dymos's
``lambda``, a Python keyword): lateral offset [m], speed [m/s], heading relative to the centre
line [rad], body slip angle [rad], yaw rate [rad/s], lagged accelerations [m/s^2]."""
CONTROLS = ("delta", "thrust")
"""Steer angle [rad] and the signed longitudinal command [-]."""
WHEELS = ("fl", "fr", "rl", "rr")
"""Front-left, front-right, rear-left, rear-right (dymos's labels: its "l" tyres are on the
outside of a left turn)."""
THRUST_EPS = 1e-4
"""Default smoothing of ``max(thrust, 0)`` [-] (:func:`smooth_max0`)."""

QUANTITIES = {"N": True, "throttle": False, "brake": False, "S": True, "F": True, "c": True,
              "S_all": False, "power": False, "drag": False, "V_dot": False, "lam_dot": False,
              "cos_heading": False, "s_dot": False}
"""The named quantities of :func:`racecar_equations`, in the order they are computed, and
whether each is per wheel (:data:`WHEELS`). The Pyomo model has one Expression of each."""

QUANTITY_DOCS = {
    "N": "tyre loads [N] (normalForceODE)", "throttle": "max(thrust, 0), smoothed [-]",
    "brake": "max(-thrust, 0), smoothed [-]", "S": "longitudinal tyre forces [N] (tireODE)",
    "F": "lateral tyre forces [N] (tireODE)",
    "c": "friction ellipse of each tyre [-] (tireConstraintODE), <= 1",
    "S_all": "sum of the longitudinal tyre forces [N]",
    "power": "tractive power V sum(S) [W] (carODE)", "drag": "aerodynamic drag [N]",
    "V_dot": "dV/dt [m/s^2]", "lam_dot": "d lambda/dt [rad/s]",
    "cos_heading": "cos(alpha - lambda) [-]", "s_dot": "ds/dt [m/s]"}
"""What each quantity of :data:`QUANTITIES` is, with its unit and dymos's component: the docs
of the Pyomo model's named Expressions."""


def smooth_max0(x, eps: float):
    """max(x, 0), smoothed: (x + sqrt(x^2 + eps^2)) / 2 (error at most eps/2, at x = 0); dymos
    uses ``numpy.sign``, not differentiable at 0."""
    return 0.5 * (x + sqrt(x * x + eps * eps))


def load_transfer_per_accel(M: float, h: float, l: float) -> float:
    """Longitudinal load transfer per wheel and per m/s^2 of ``ax``: M h / (4 l) [kg] (dymos's
    ``normalForceODE``: half the rigid-body statics', ``docs/racecar.md``)."""
    return M / 4 * h / l


def _identity(key: str, wheel: Optional[str], value):
    return value


def _loads(p: RacecarParameters, x: Mapping, name: Callable) -> tuple:
    """Tyre loads ``N`` [N] (normalForceODE) and the static loads [N] (dicts by wheel)."""
    M, g, a, b, tw = p.M, p.g, p.a, p.b, p.tw
    l = a + b
    kd = 0.5 * p.rho * p.ClA
    rear_share = p.CoP / l
    static = {"fl": M * g / 2 * b / l, "fr": M * g / 2 * b / l,
              "rl": M * g / 2 * a / l, "rr": M * g / 2 * a / l}
    tr = load_transfer_per_accel(M, p.h, l)
    long_tr = {"fl": -tr, "fr": -tr, "rl": tr, "rr": tr}
    lat_tr = {"fl": M / 4 * p.chi * p.h / tw, "fr": -M / 4 * p.chi * p.h / tw,
              "rl": M / 4 * (1 - p.chi) * p.h / tw, "rr": -M / 4 * (1 - p.chi) * p.h / tw}
    aero_share = {"fl": (1 - rear_share) / 2, "fr": (1 - rear_share) / 2,
                  "rl": rear_share / 2, "rr": rear_share / 2}
    N = {w: name("N", w, static[w] + long_tr[w] * x["ax"] + lat_tr[w] * x["ay"]
                 + aero_share[w] * kd * x["V"] ** 2) for w in WHEELS}
    return N, static


def _tyre_forces(p: RacecarParameters, x: Mapping, u: Mapping, N: dict, eps: float,
                 name: Callable) -> tuple:
    """Longitudinal and lateral tyre forces ``S``, ``F`` [N] (tireODE; dicts by wheel)."""
    M, g, a, b, tw = p.M, p.g, p.a, p.b, p.tw
    throttle = name("throttle", None, smooth_max0(u["thrust"], eps))
    brake = name("brake", None, smooth_max0(-u["thrust"], eps))
    S = {}
    for w in WHEELS:
        if w[0] == "f":
            S[w] = name("S", w, -(M * g / 2) * brake * p.beta)
        else:
            S[w] = name("S", w, (M * g / 2) * (throttle - brake * (1 - p.beta)))
    # dymos (tireODE): F_rr = N k (lam + om (b + lam tw)/V), F_rl: (b - lam tw),
    # F_fr = N k (lam + delta - om (a - lam tw)/V), F_fl: (a + lam tw)
    V, lam, om, delta = x["V"], x["lam"], x["omega"], u["delta"]
    slip = {"fl": lambda: lam + delta - om * (a + lam * tw) / V,
            "fr": lambda: lam + delta - om * (a - lam * tw) / V,
            "rl": lambda: lam + om * (b - lam * tw) / V,
            "rr": lambda: lam + om * (b + lam * tw) / V}
    F = {w: name("F", w, N[w] * p.k_lambda * slip[w]()) for w in WHEELS}
    return S, F


def _friction_use(p: RacecarParameters, N: dict, S: dict, F: dict, static: dict,
                  name: Callable) -> dict:
    """Friction-ellipse use ``c`` of each tyre [-] (tireConstraintODE), <= 1 in the OCP."""
    def mu(w, mu0):
        return mu0 + p.k_mu * N[w] / static[w] if p.k_mu != 0 else mu0
    return {w: name("c", w, (S[w] / (N[w] * mu(w, p.mu0_x))) ** 2
                    + (F[w] / (N[w] * mu(w, p.mu0_y))) ** 2) for w in WHEELS}


def centre_line_speed(x: Mapping, kappa, cos_heading=None):
    r"""The speed along the centre line :math:`\dot s = V\cos(\alpha - \lambda)/(1 - n\kappa)`
    [m/s] (dymos's ``timeODE``) at the states ``x`` (``n`` [m], ``V`` [m/s], ``alpha``,
    ``lam`` [rad]; any scalars) on a centre line of curvature ``kappa`` [1/m];
    ``cos_heading``, :math:`\cos(\alpha - \lambda)`, if computed already."""
    c = cos(x["alpha"] - x["lam"]) if cos_heading is None else cos_heading
    return x["V"] * c / (1 - x["n"] * kappa)


def racecar_equations(p: RacecarParameters, x: Mapping, u: Mapping, kappa,
                      eps: float = THRUST_EPS, name: Optional[Callable] = None) -> dict:
    r"""The racecar's equations at one state (module docstring).

    Parameters
    ----------
    p : RacecarParameters
        The car (SI units).
    x : mapping
        The states :data:`STATE_NAMES` by name: ``n`` [m], ``V`` [m/s], ``alpha`` [rad],
        ``lam`` [rad], ``omega`` [rad/s], ``ax``, ``ay`` [m/s^2]; floats, NumPy arrays of one
        shape (points at once), or Pyomo expressions (the time ``t`` is not needed).
    u : mapping
        The controls :data:`CONTROLS`: ``delta`` [rad], ``thrust`` [-].
    kappa : scalar
        Curvature of the centre line [1/m] (+ left).
    eps : float
        Smoothing of ``max(thrust, 0)`` [-] (:func:`smooth_max0`; the model's ``thrust_eps``).
    name : callable, optional
        ``name(key, wheel, value) -> value``, called on every quantity of :data:`QUANTITIES`
        as it is computed (``wheel`` None for those that are not per wheel); what it returns
        is used in the equations after it. The Pyomo model stores each value in its named
        Expression and returns that Expression. Default: the value itself.

    Returns
    -------
    dict
        Every quantity of :data:`QUANTITIES` (those per wheel as ``{wheel: value}``): tyre
        loads ``N`` [N], ``throttle``, ``brake`` [-], longitudinal and lateral tyre forces
        ``S``, ``F`` [N], friction-ellipse use ``c`` [-], ``S_all`` [N], tractive power
        ``power`` = V S_all [W], ``drag`` [N], ``V_dot`` [m/s^2], ``lam_dot`` [rad/s],
        ``cos_heading`` = cos(alpha - lam) [-], ``s_dot`` [m/s]; and ``rates``: the time
        derivatives of ``t`` (1) and of every state of :data:`STATE_NAMES` [unit/s].
    """
    name = name or _identity
    M, a, b, tw = p.M, p.a, p.b, p.tw
    N, static = _loads(p, x, name)
    S, F = _tyre_forces(p, x, u, N, eps, name)
    c = _friction_use(p, N, S, F, static, name)
    V, lam, om, delta, n = x["V"], x["lam"], x["omega"], u["delta"], x["n"]
    out = {"N": N, "S": S, "F": F, "c": c}
    out["S_all"] = S_all = name("S_all", None, sum(S[w] for w in WHEELS))
    out["power"] = name("power", None, V * S_all)
    out["drag"] = drag = name("drag", None, 0.5 * p.rho * p.CdA * V ** 2)
    out["V_dot"] = V_dot = name("V_dot", None, (S_all - delta * (F["fl"] + F["fr"]) - drag) / M
                                - om * V * lam)
    out["lam_dot"] = lam_dot = name("lam_dot", None, om - V_dot * lam / V
                                    - delta * (S["fl"] + S["fr"]) / (M * V)
                                    - sum(F[w] for w in WHEELS) / (M * V))
    out["cos_heading"] = name("cos_heading", None, cos(x["alpha"] - lam))
    out["s_dot"] = s_dot = name("s_dot", None, centre_line_speed(x, kappa, out["cos_heading"]))
    out["rates"] = {
        "t": 1.0,
        "n": V * sin(x["alpha"] - lam),
        "V": V_dot,
        "alpha": om - kappa * s_dot,
        "lam": lam_dot,
        "omega": (a * (F["fr"] + F["fl"]) - b * (F["rr"] + F["rl"])
                  + tw * (-S["rr"] + S["rl"] - S["fr"] + S["fl"])) / p.Iz,
        "ax": (V_dot + om * V * lam - x["ax"]) / p.tau_x,
        "ay": (om * V - (V * lam_dot + V_dot * lam) - x["ay"]) / p.tau_y}
    return out


def state_rates(p: RacecarParameters, x: Mapping, u: Mapping, kappa,
                eps: float = THRUST_EPS) -> dict:
    """The time derivatives of ``t`` and :data:`STATE_NAMES` and the speed along the centre
    line, on numbers (floats or arrays of one shape): ``{"s": s_dot [m/s], "t": 1, "n": ...,
    "ay": ...}`` (:func:`racecar_equations`)."""
    eq = racecar_equations(p, x, u, kappa, eps)
    return {"s": eq["s_dot"], **eq["rates"]}


def spatial_ode_residuals(x: Mapping, eq: dict, kappa, dx_ds: Mapping) -> dict:
    r"""The ODE over the distance along the centre line, as residuals: for ``t`` and every state
    :math:`k` of :data:`STATE_NAMES`, :math:`V\cos(\alpha - \lambda)\, dk/ds - (1 - n\kappa)\,
    \dot k` (zero on a solution: :math:`dk/ds = \dot k/\dot s`, multiplied through by
    :math:`V\cos(\alpha - \lambda)`), on any scalars.

    Parameters
    ----------
    x : mapping
        ``n`` [m] and ``V`` [m/s] (the state).
    eq : dict
        :func:`racecar_equations` at that state (its ``cos_heading`` and ``rates``).
    kappa : scalar
        Curvature of the centre line [1/m].
    dx_ds : mapping
        ``d<k>_ds`` for ``t`` and every state [unit of k / m].

    Returns
    -------
    dict
        ``{k: residual}`` in the order ``t``, :data:`STATE_NAMES` [unit of k m/s / m].
    """
    rates = eq["rates"]
    return {k: x["V"] * eq["cos_heading"] * dx_ds[f"d{k}_ds"] - (1 - x["n"] * kappa) * rates[k]
            for k in ("t",) + STATE_NAMES}
