r"""The minimum-lap-time optimal control problem as a pyomo.dae model (sec. 3.2 and 4).

The independent variable is the arc length along the track spine, :math:`q_1 = s` (on the
model, ``m.s`` runs from 0 to the sector length; the track coordinate is ``start + s``).

* states :math:`x = (q_2..q_6,\ \dot q_1..\dot q_6)` and the time ``t``;
* controls :math:`u = (f_{xa}, f_{xb}, \delta)`, piecewise constant per finite element by
  default (as the paper's :math:`u_i`);
* algebraic variables :math:`z = (f_{11z}, f_{12z}, f_{21z}, f_{22z}, f_{3x}, f_{3y}, m_{3z})`.

The spatial DAE (39), multiplied through by :math:`\dot q_1 > 0`:

.. math::
    \dot q_1 \frac{dq_k}{ds} = \dot q_k\ (k = 2..6),\quad
    \dot q_1 \frac{d\dot q_k}{ds} = \ddot q_k(x, u, z)\ (k = 1..6),\quad
    \dot q_1 \frac{dt}{ds} = 1,

with :math:`\ddot q` from the ABA (:mod:`pyomo_lap.spatial.dynamics`), the four load equations (35)
and the three in-plane equations (36) (:mod:`pyomo_lap.vehicle.car`). Path constraints: power
:math:`f_{xa} v_{3x} \le P_{max}`, the friction ellipse of each tyre, the track limits on
:math:`q_2`, steering bounds, :math:`f_{ijz} \ge f_{z,min}`, :math:`v_{3x} \ge v_{min}`.
Objective (41): the sector time :math:`t(L)` plus a penalty on steering jumps between
elements and a relaxation of the complementarity :math:`f_{xa} f_{xb} = 0`.

All physics per point are named ``Expression`` components of the block ``m.car``
(``m.car.qdd1[s]``, ``m.car.W3J_2[s]`` (= f_3z), ``m.car.alpha_1[s]``, ``m.car.f_11y[s]``...),
so users can reach them and the NL writer shares them; the channels users write constraints
and objectives on (``m.speed``, ``m.a_x`` ...) are added by
:func:`pyomo_lap.ocp.channel_expressions.add_channel_expressions`.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np
import pyomo.environ as pyo

from ..spatial.backend import add, cos, is_number, mul, sub
from ..vehicle import car as veh
from ..vehicle.powertrain import power_available
from ..vehicle.schema import (
    OPTIONAL_KEYS,
    PARAMETER_KEYS,
    SECTIONS,
    absent,
    settings_of,
)
from ..vehicle.tyres import tyre_model_of
from .channel_expressions import WHEELS, add_channel_expressions
from .common import (
    OBJECTIVE_SCALE,
    add_car_controls,
    add_derivative_vars,
    add_joint_variables,
    add_tyre_wrench_variables,
    add_vehicle_block,
    car_control_bounds,
    control_states,
    entries_at,
    reference_time,
    scale_control_rates,
    scale_variables,
    set_bounds,
    set_penalty_weights,
    vehicle_var,
)
from .initialize import cold_start_profile
from .point_functions import CarFunctions, record_of, track_vectors
from .point_rows import (  # noqa: F401 (re-exported)
    TRACK_INPUTS,
    PointRows,
    RowFamily,
    add_point_rows,
    add_recorded_rows,
    chain_channels,
    rows_on_tape,
    spatial_dae_rows,
    track_joint,
    track_numbers,
)
from .record_model import record_dynamics, record_table
from .sector import (
    discretize_on_track,
    entry_speed,
    finish_build,
    new_sector_model,
    set_track_limits,
    track_limits,
)
from .vehicle_model import VehicleModel, update_problem

__all__ = ["FULL_MODEL", "STATE_NAMES", "RATE_NAMES", "build_full_model", "initialize_full_model",
           "record_point_rows", "point_row_list", "rows_on_tape", "adherence_rows", "PointRows", "RowFamily",
           "add_recorded_rows", "set_full_vehicle", "VehicleStructureError", "load_bounds"]

STATE_NAMES = ("q2", "q3", "q4", "q5", "q6")
RATE_NAMES = ("q1_dot", "q2_dot", "q3_dot", "q4_dot", "q5_dot", "q6_dot")

USER_TAGS = ("qdd", "W3J", "V3", "V6", "a3", "alpha_", "f_", "Y_", "aero_q", "roll_moment")
"""Tags of the car equations kept as named Expressions ``m.car.<tag>[s]`` (prefixes)."""


DERIVATIVE_NAMES = tuple(f"d{k}_ds" for k in STATE_NAMES + RATE_NAMES) + ("dt_ds",)
"""Names of the ``DerivativeVar`` components (d/dq1 of the states and of the time)."""

POINT_VARIABLES = STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC + DERIVATIVE_NAMES
"""The model variables of one point that the rows of :func:`record_point_rows` depend on
(33 names, in the order of the tape's inputs)."""


VEHICLE_INPUTS = tuple(f"{sec}.{key}" for sec, keys in SECTIONS.items() for key in keys
                       if f"{sec}.{key}" not in OPTIONAL_KEYS
                       or f"{sec}.{key}" in ("geometry.width", "geometry.tyre_width_front",
                                             "geometry.tyre_width_rear")) + ("gravity",)
"""The car's parameters the full model's rows take as symbols for every car (the dotted names
of the vehicle file, without the optional ``[multibody]`` section and the optional keys that
may be absent or structural zeros, and the gravity): the model's ``m.vehicle.*``;
:func:`vehicle_inputs` adds those a car has."""


def vehicle_inputs(p, base: tuple = None) -> tuple:
    """The car's parameters a model's rows take as symbols for the car ``p``: ``base``
    (default :data:`VEHICLE_INPUTS`), then each optional key the car has (a value that is not
    None, and not 0 for :data:`STRUCTURAL_ZEROS`)."""
    out = list(VEHICLE_INPUTS if base is None else base)
    for key in OPTIONAL_KEYS:
        if key in out or absent(p, key):
            continue
        out.insert(len(out) - 1 if out and out[-1] == "gravity" else len(out), key)
    return tuple(out)


def record_point_rows(p, cfg) -> PointRows:
    r"""Record the rows of the OCP at one point, once, on :class:`pyomo_lap.spatial.tape.Node`
    symbols: the point's variables, the track's numbers and the car's parameters
    (:data:`VEHICLE_INPUTS`: the rows are the same for every car; ``p`` gives only what is
    not a parameter of the car, such as its name).

    Rows (sec. 3.2 and 4; every body is written ``body`` with constant bounds):

    * ``ode_q[k]`` (k = q2..q6): :math:`\dot q_1\, dq_k/ds - \dot q_k = 0`, eq (39);
    * ``ode_qdot[k]`` (k = 1..6): :math:`\dot q_1\, d\dot q_k/ds - \ddot q_k = 0` with
      :math:`\ddot q` from the ABA;
    * ``ode_t``: :math:`\dot q_1\, dt/ds = 1`;
    * ``loads_eq[k]`` (35) and ``inplane_eq[k]`` (36): residuals = 0;
    * ``power_limit``: :math:`f_{xa} v_{3x} - P_{max} \le 0`;
    * ``adherence[w, sense]``: the friction ellipse of each tyre (see ``adherence`` in
      :data:`OCP_CONFIG`);
    * ``speed_min``: :math:`v_{3x} \ge v_{min}`;
    * ``settled_start[k]`` (k = 4..6, open sectors): :math:`\ddot q_k = 0` at the start.

    Parameters
    ----------
    p : VehicleParameters
    cfg : ConfigDict
        :data:`OCP_CONFIG` values (``adherence``, ``v_min``, ``periodic``).

    Returns
    -------
    PointRows
    """
    def rows_and_channels(sym, v, track, namer):
        channels = {}
        rows = point_row_list(sym, veh.build_chain(sym), cfg, [v[k] for k in POINT_VARIABLES],
                              track, namer, channels=channels)
        return rows, channels

    return rows_on_tape(rows_and_channels, p, POINT_VARIABLES, vehicle_inputs(p))


def point_row_list(p, chain, cfg, x, track, namer=None, channels=None) -> list:
    r"""The rows of the OCP at one point (those of :func:`record_point_rows`), on any scalars.

    Parameters
    ----------
    p : VehicleParameters (or an object with its fields and properties, e.g. CasADi symbols:
        :mod:`pyomo_lap.analysis.sensitivities`)
    chain : KinematicTree
        :func:`pyomo_lap.vehicle.car.build_chain` of ``p``.
    cfg : ConfigDict
        :data:`OCP_CONFIG` values (``adherence``, ``v_min``, ``periodic``).
    x : sequence of 33 scalars
        The point's variables, in the order of :data:`POINT_VARIABLES`.
    track : sequence of 15 scalars
        The track numbers, in the order of :data:`TRACK_INPUTS`.
    namer : callable, optional
        ``namer(tag, value)`` (see :func:`pyomo_lap.vehicle.car.car_equations`).
    channels : dict, optional
        Filled with the record's channel group
        (:func:`pyomo_lap.ocp.point_rows.chain_channels`).

    Returns
    -------
    list of (family, key, body, lower, upper, where)
        One tuple per row, in the order of the recorded outputs; ``lower``/``upper`` are
        None, floats or (``power_limit``) ``p.P_max``.
    """
    v = dict(zip(POINT_VARIABLES, x))
    q = [0.0] + [v[k] for k in STATE_NAMES]
    qd = [v[k] for k in RATE_NAMES]
    u = [v[k] for k in veh.CONTROLS]
    z = [v[k] for k in veh.ALGEBRAIC]
    e = veh.car_equations(p, chain, track_joint(track), q, qd, u, z, namer=namer)
    ch = e.channels
    rows = spatial_dae_rows(v, STATE_NAMES, RATE_NAMES, e.qdd)
    for k in range(4):
        rows.append(("loads_eq", k, e.load_residuals[k], 0.0, 0.0, "all"))
    for k in range(3):
        rows.append(("inplane_eq", k, e.inplane_residuals[k], 0.0, 0.0, "all"))
    rows.append(("power_limit", None, sub(ch["power"], power_available(p, ch["v_3x"])), None,
                 0.0, "all"))
    for key, body in adherence_rows(p, ch, cfg.adherence):
        rows.append(("adherence", key, body, None, 0.0, "all"))
    for key, body in slip_rows(p, ch, cfg.adherence, cfg.stiffness_reserve):
        rows.append(("slip_limit", key, body, None, 0.0, "all"))
    for key, body in brake_rows(p, v["f_xb"]):
        rows.append(("brake_limit", key, body, None, 0.0, "all"))
    for w in WHEELS:
        left = w[1] == "1"
        rows.append(("track_limit", w, ch[f"patch_{w}"], None if left else "lower",
                     "upper" if left else None, "all"))
    rows.append(("speed_min", None, ch["v_3x"], cfg.v_min, None, "all"))
    if not cfg.periodic:
        for k in range(4, 7):
            rows.append(("settled_start", k, e.qdd[k - 1], 0.0, 0.0, "first"))
    if channels is not None:
        channels.update(chain_channels(p, e))
    return rows


def adherence_form(p, form: str) -> str:
    r"""The form the adherence rows of the car ``p`` take (:func:`adherence_rows`): ``form``
    (the OCP option, ``"below-peak"`` or ``"squared"``) for the paper's tyre (Magic Formula,
    the friction ellipse a constraint, tyres at or below their peak); ``"squared"`` for a
    Fiala tyre or tyres allowed past their peak with that ellipse; ``"longitudinal"`` for
    ``combined_slip = "ellipse"`` (the lateral force already scaled for the longitudinal one:
    only :math:`|f_x| \le D_x`)."""
    if getattr(p, "combined_slip", "constraint") == "ellipse":
        return "longitudinal"
    if not tyre_model_of(p).peak_angle or getattr(p, "alpha_max", None) is not None:
        return "squared"
    return form


AUTO_STIFFNESS_RESERVE = 0.1
"""The share of their cornering stiffness that the tyres able to sit at their peak keep by
default (OCP option ``stiffness_reserve`` None, :func:`stiffness_reserve`). Measured (issue 33)
on the Formula One car (combined_slip = "ellipse"): with 0 its replays spun in 4 of 13 laps
and the steering had no authority on 27 % of its Catalunya lap; with 0.05 one lap still needed
5.4 % of the steer limit; with 0.1 every replay follows with at most 4.3 %. Cost: 0.2-0.3 %
of the lap (Catalunya 78.098 -> 78.344 s, Silverstone 81.444 -> 81.626 s). On the "below-peak"
form it would cost the FSAE car 0.17 % of its default job (52.399 -> 52.474 s) and no replay
needs it (docs/validation.md)."""


def stiffness_reserve(p, form: str, reserve=None) -> float:
    """The reserve of :func:`slip_rows` [-]: ``reserve`` if given, else
    :data:`AUTO_STIFFNESS_RESERVE` for a tyre that can sit at its peak under any longitudinal
    force (:func:`adherence_form` other than ``"below-peak"``) and 0 for the "below-peak" form."""
    if reserve is not None:
        return float(reserve)
    return 0.0 if adherence_form(p, form) == "below-peak" else AUTO_STIFFNESS_RESERVE


def slip_rows(p, ch, form: str, reserve=None) -> list:
    r"""Bodies (``<= 0``) of the slip limits of the tyres (the family ``slip_limit``).

    * ``slip_angle_max`` given (tyres may pass their peak): :math:`\pm\alpha_i - \alpha_{max}
      \le 0` for each axle (keys ``(i, +1)``, ``(i, -1)``) [rad];
    * else each tyre keeps the share ``reserve`` (:math:`r`, OCP option ``stiffness_reserve``)
      of its cornering stiffness, at or below the peak of its lateral characteristic:
      :math:`D\,(r - \cos\theta) \le 0` (Magic Formula, key ``(w, 0)``) [N], whose slope
      :math:`\partial f_y/\partial\alpha \propto D\cos\theta` is then at least :math:`r` of
      its value at zero slip where the atan's argument is small, and whose force is at most
      :math:`\sqrt{1 - r^2}\,D`; or :math:`\pm\upsilon - (1 - \sqrt r) \le 0` (Fiala,
      keys ``(w, +1)``, ``(w, -1)``: :math:`\partial f_y/\partial\upsilon = 3D(1-\upsilon)^2`)
      [-]. With :math:`r = 0` and the "below-peak" adherence form, whose rows imply
      :math:`\cos\theta \ge 0`, there are none.

    Why a reserve: at the peak the front tyres give the steering no authority and the rear
    ones the car no yaw stability; measured on the Formula One car's Catalunya lap with
    :math:`r = 0`, the steering's yaw authority was below a tenth of its median on 27 % of the
    lap, the open-loop yaw mode grew at up to 12 1/s, and the replay of ``pyomo-lap validate``
    spun in 4 of 13 laps; with :math:`r = 0.1` every replay follows (docs/validation.md).
    """
    out = []
    reserve = stiffness_reserve(p, form, reserve)
    if getattr(p, "alpha_max", None) is not None:
        for i in ("1", "2"):
            for sense in (1, -1):
                out.append(((i, sense), sub(mul(float(sense), ch[f"alpha_{i}"]), p.alpha_max)))
        return out
    if adherence_form(p, form) == "below-peak" and reserve <= 0.0:
        return out
    tm = tyre_model_of(p)          # the registered model's rows (its measure's channel)
    for w in WHEELS:
        for sense, body in tm.reserve_rows(ch[f"D_{w}"], ch[f"{tm.measure}_{w}"], reserve):
            out.append(((w, sense), body))
    return out


def unsupported_tyre(p, model: str) -> None:
    """Refuse a car whose tyre settings the vehicle model ``model`` does not implement (the
    multibody car has the paper's tyre only: the Magic Formula, the friction ellipse a
    constraint, at or below the peak).

    Raises
    ------
    ValueError
        Naming the settings and what the model implements.
    """
    wrong = [f"{k} = {v!r}" for k, v, ok in
             (("[tyre] model", getattr(p, "tyre_model", "magic-formula"), "magic-formula"),
              ("[tyre] combined_slip", getattr(p, "combined_slip", "constraint"), "constraint"))
             if v != ok]
    if getattr(p, "alpha_max", None) is not None:
        wrong.append(f"[tyre] slip_angle_max = {p.alpha_max!r}")
    if wrong:
        raise ValueError(f"vehicle {p.name!r}: {', '.join(wrong)}: the {model} model has the "
                         "paper's tyre only (model 'magic-formula', combined_slip "
                         "'constraint', no slip_angle_max); use the full model (--model full)")


def brake_rows(p, f_xb) -> list:
    r"""Bodies (``<= 0``) of the brake torque limits (family ``brake_limit``, keys ``1``
    front, ``2`` rear) of a car that has them (``brake_torque_front``, ``_rear``): the brake
    torque of a wheel of axle :math:`i`, :math:`-k_i f_{xb} R / 2` (:math:`k_1 = k_b`,
    :math:`k_2 = 1 - k_b`, :math:`R` the wheel radius), minus its limit [N m]."""
    out = []
    for key, limit, share in (("1", getattr(p, "T_b1", None), p.brake_ratio),
                              ("2", getattr(p, "T_b2", None), 1 - p.brake_ratio)):
        if limit is not None:
            out.append((key, sub(mul(mul(-0.5, mul(share, p.wheel_radius)), f_xb), limit)))
    return out


def adherence_rows(p, ch, form: str) -> list:
    r"""Bodies (``<= 0``) of the adherence constraints of the four tyres.

    ``form = "squared"`` is the friction ellipse as the paper writes it,
    :math:`(\mu_y/\mu_x\, f_x)^2 + f_y^2 - D^2 \le 0`, one row per tyre (key ``(w, 0)``).
    With the Magic Formula :math:`f_y = D\sin\theta` (eq 32) this is
    :math:`(\mu_y/\mu_x f_x)^2 \le D^2\cos^2\theta`, whose gradient vanishes when a tyre is
    at the peak of its lateral characteristic with no longitudinal force: the constraint is
    active there with a zero gradient, the multipliers are unbounded and IPOPT crawls.

    ``form = "below-peak"`` (default) writes the same ellipse as
    :math:`\pm\mu_y/\mu_x\, f_x - D\cos\theta \le 0` (keys ``(w, +1)``, ``(w, -1)``),
    which has a nonzero gradient everywhere and also keeps each tyre at or below the peak
    of its lateral characteristic (:math:`\cos\theta \ge 0`). A row that the control
    bounds make redundant is left out: a front tyre that only brakes
    (:math:`f_x = k_b f_{xb}/2 \le 0`) has only the ``-1`` row.

    Parameters
    ----------
    p : VehicleParameters
    ch : dict
        Channels of :func:`pyomo_lap.vehicle.car.car_equations` (``f_<w>x``, ``f_<w>y``,
        ``D_<w>``, ``theta_<w>``).
    form : {"below-peak", "squared"}

    Returns
    -------
    list of ((wheel, sense), body)
    """
    ratio = p.mu_y0 / p.mu_x0
    form = adherence_form(p, form)
    front_drive = not is_number(getattr(p, "drive_ratio", 0.0)) or getattr(p, "drive_ratio", 0.0) > 0
    out = []
    for w in WHEELS:
        fx, D = ch[f"f_{w}x"], ch[f"D_{w}"]
        if form == "longitudinal":
            for sense in ((1, -1) if not w.startswith("1") or front_drive else (-1,)):
                out.append(((w, sense), sub(mul(sense * ratio, fx), D)))
            continue
        if form == "squared":
            body = sub(add(mul(mul(ratio, fx), mul(ratio, fx)), mul(ch[f"f_{w}y"], ch[f"f_{w}y"])),
                       mul(D, D))
            out.append(((w, 0), body))
            continue
        cap = mul(D, cos(ch[f"theta_{w}"]))
        # brake_ratio >= 0 (schema): a symbolic one (sensitivities) has the same rows
        front_brakes = not is_number(p.brake_ratio) or 0.0 <= p.brake_ratio
        senses = (-1,) if w.startswith("1") and front_brakes and not front_drive else (1, -1)
        for sense in senses:
            out.append(((w, sense), sub(mul(sense * ratio, fx), cap)))
    return out


_FAMILY_DOCS = {
    "ode_q": "spatial DAE (39), kinematics: q1_dot dq_k/ds - q_k_dot = 0 [m/s, rad/s]",
    "ode_qdot": "spatial DAE (39), dynamics: q1_dot dq_k_dot/ds - q_k_ddot(ABA) = 0 [m/s^2, rad/s^2]",
    "ode_t": "time: q1_dot dt/ds = 1",
    "loads_eq": "vertical loads, eq (35): f_ijz - f~_ijz = 0 [N]",
    "inplane_eq": "in-plane tyre resultant, eq (36) [N, N, N m]",
    "power_limit": "traction power f_xa v_3x - P_max <= 0 [W]",
    "adherence": "friction ellipse of each tyre (see pyomo_lap.ocp.build.adherence_rows) [N]",
    "speed_min": "v_3x >= v_min [m/s] (slip angles (33) divide by v_3x)",
    "slip_limit": "the tyres' slip within their limit: at or below the peak of their lateral "
                  "characteristic, or |alpha_i| <= slip_angle_max (see "
                  "pyomo_lap.ocp.full_model.slip_rows)",
    "brake_limit": "brake torque of a wheel within its limit [N m] (brake_torque_front, _rear)",
    "track_limit": "outer edge of each tyre's contact patch within the track [m]: left wheels "
                   "<= width_left, right wheels >= -width_right (minus track_margin)",
    "settled_start": "open sector: the car enters settled, q_k_ddot = 0 (k = 4..6) at the start",
}


def chain_scaling(m, extra: Optional[Callable] = None) -> tuple:
    """The scaling the full and the multibody car share (IPOPT's user scaling, from typical
    magnitudes; ``m.scaling_factor``): the variables of the six-joint chain (states, rates),
    the time, the controls and ``extra``; the rows ``ode_q``, ``ode_qdot``, ``ode_t``,
    ``power_limit``, ``adherence``, ``speed_min`` and the objective.

    Parameters
    ----------
    extra : callable, optional
        ``extra(F) -> {variable name: typical scale}`` of the car's own variables, ``F`` the
        per-wheel force scale.

    Returns
    -------
    (sf, F, typical)
        The suffix, the per-wheel force scale 1/(m g / 4) [1/N] and the scales by variable
        name (for the car's own rows).
    """
    p = m.vehicle.built_for
    sf = m.component("scaling_factor")        # kept when the model's car changes
    if sf is None:
        sf = m.scaling_factor = pyo.Suffix(direction=pyo.Suffix.EXPORT)
    F = 1.0 / (p.m * p.gravity / 4)       # per-wheel forces
    L = m.problem.sector_length
    T = max(1.0, float(m.problem.time_scale) or L / 30.0)    # the sector's quasi-steady time
    typical = {"q2": 1.0, "q3": 10.0, "q4": 100.0, "q5": 100.0, "q6": 100.0, "q1_dot": T / L,
               "q2_dot": 1.0, "q3_dot": 2.0, "q4_dot": 10.0, "q5_dot": 10.0, "q6_dot": 10.0,
               "t": 1.0 / T, "f_xa": F, "f_xb": F, "delta": 10.0}
    if extra is not None:
        typical.update(extra(F))
    scale_variables(m, sf, typical)
    qdd_scale = {1: 0.1, 2: 0.1, 3: 0.5, 4: 0.1, 5: 0.1, 6: 0.1}    # other joints: 0.02
    for (k, s), c in m.ode_qdot.items():
        sf[c] = qdd_scale.get(k, 0.02) * 0.5
    for (k, s), c in m.ode_q.items():
        sf[c] = typical[f"{k}_dot"] * 0.5
    for c in m.ode_t.values():
        sf[c] = 1.0
    for c in m.power_limit.values():
        sf[c] = 1.0 / p.P_max
    for c in m.adherence.values():
        sf[c] = F * F if m.problem.options.adherence == "squared" else F
    for c in m.speed_min.values():
        sf[c] = T / L
    if m.component("slip_limit") is not None:
        for key, c in m.slip_limit.items():         # rad or - (slip), or N (D cos theta)
            sf[c] = F if key[1] == 0 else 1.0
    if m.component("brake_limit") is not None:
        for (key, s), c in m.brake_limit.items():
            sf[c] = 1.0 / float(p.T_b1 if key == "1" else p.T_b2)
    if m.component("track_limit") is not None:
        for c in m.track_limit.values():
            sf[c] = 1.0
    # the objective is scaled to about 1000 (the sector time divided by its quasi-steady
    # estimate, times 1000). With an objective of order one (as before), the log-barrier terms
    # of the ~3 active inequalities per point, mu * sum(log(slack)), still moved the optimum
    # by 0.5-1 % at IPOPT's final barrier parameter, and IPOPT needed 120-180 iterations; scaled
    # to 1000, the same solve takes about 30 iterations and ends within 1e-5 of the optimum
    # (docs/solvers.md, "Scaling and solver options")
    sf[m.objective] = OBJECTIVE_SCALE / T
    return sf, F, typical


def build_full_model(track, vehicle: veh.VehicleParameters, cfg, t0: Optional[float] = None,
                     progress=None) -> pyo.ConcreteModel:
    """Build and discretize the minimum-time OCP of the full model on a sector (the
    ``build`` of :data:`FULL_MODEL`; called by :func:`pyomo_lap.ocp.build.build_model`, which
    parses the options into ``cfg``, a copy of :data:`pyomo_lap.ocp.build.OCP_CONFIG`).

    Returns
    -------
    pyomo.environ.ConcreteModel
        As :func:`pyomo_lap.ocp.build.build_model`.
    """
    t0 = time.perf_counter() if t0 is None else t0
    p = vehicle
    u = pyo.units
    m, L = new_sector_model(track, p, cfg, FULL_MODEL, "pyomo_lap")

    # ---- variables ---------------------------------------------------------------------
    add_joint_variables(m, FULL_MODEL, cfg)     # q2..q6, q1_dot..q6_dot, t
    add_car_controls(m, p, cfg)
    for name, bounds in load_bounds(p).items():
        m.add_component(name, pyo.Var(m.s, initialize=p.m * p.gravity / 4, bounds=bounds,
                                      units=u.N, doc=f"vertical load {name[2:4]} (axle, side) [N]"))
    add_tyre_wrench_variables(m, "body 3", (", eq (36a)", ", eq (36b)", ", eq (36c)"))

    add_derivative_vars(m, STATE_NAMES + RATE_NAMES + ("t",))

    # ---- discretization -----------------------------------------------------------------
    sigma, tp, idx = discretize_on_track(m, track, p, cfg, L, veh.CONTROLS)

    # ---- the rows at every point ---------------------------------------------------------
    # The rows of one point are recorded once on symbols (pyomo_lap.spatial.tape: common
    # subexpressions merged) and replayed at every point on the point's variables and track
    # numbers; the quantities users ask for are named Expressions m.car.<tag>[s].
    add_vehicle_block(m, p)
    m.car = pyo.Block()
    chain = veh.build_chain(p)
    add_point_rows(m, record_point_rows(p, cfg), chain, tp, sigma, idx, cfg, progress,
                   lift=cfg.lift, user_tags=USER_TAGS, docs=_FAMILY_DOCS,
                   bound_values=edge_bounds(tp, cfg))

    add_channel_expressions(m)

    # ---- boundary conditions (the zero heave, pitch and roll accelerations of a settled
    # start are the recorded rows 'settled_start') --------------------------------------------
    # ---- and the objective (41), the scaling, the build time -----------------------------------
    return finish_build(m, track, p, cfg, STATE_NAMES, RATE_NAMES, veh.CONTROLS, _set_scaling, t0)


def edge_bounds(tp, cfg) -> dict:
    """The per-point bounds of the ``track_limit`` rows: ``{"lower": -(width_right -
    track_margin), "upper": width_left - track_margin}``, (n,) arrays [m] at the points of
    ``tp``."""
    return {"lower": -(np.asarray(tp.width_right, dtype=float) - cfg.track_margin),
            "upper": np.asarray(tp.width_left, dtype=float) - cfg.track_margin}


def load_bounds(p) -> dict:
    """The bounds of the vertical loads ``f_ijz`` [N]: ``{name: (f_z,min, 20 m g)}``."""
    return {f"f_{w}z": (p.fz_min, 20 * p.m * p.gravity) for w in WHEELS}


class VehicleStructureError(ValueError):
    """The new car's equations differ in structure from those the model was built with (a
    parameter became 0 or 1, or equal to another, and an operation folded away): the model
    cannot take the car by :func:`set_full_vehicle`; build a new one."""


def set_full_vehicle(m, vehicle: veh.VehicleParameters) -> None:
    """Change the car of a built full model in place: the model becomes the one
    :func:`build_full_model` builds for ``vehicle`` on the same track, sector, mesh and options
    (the ``set_vehicle`` of :data:`FULL_MODEL`; the public entry is
    :func:`pyomo_lap.ocp.build.set_vehicle`).

    The rows hold the car's parameters as the variables ``m.vehicle.*``: their values are
    fixed at the new car's (a free one, unfixed by the user, keeps its freedom and takes the
    new value as its start). Then what else depends on the car: the bounds of the controls,
    loads and track limits, the fixed entry speed, the scaling factors and ``m.problem``
    (``vehicle``, ``chain``, ``initial_speed``). No component is added or removed. The
    variables keep their values: initialize the model
    (:func:`pyomo_lap.ocp.initialize.initialize_model`) or load a solution before solving.

    Parameters
    ----------
    m : ConcreteModel
        Built by :func:`build_full_model`.
    vehicle : VehicleParameters

    Raises
    ------
    VehicleStructureError (a ValueError)
        The model has no ``m.vehicle`` (built before the car's parameters were model
        components) or a parameter the new car has and the model has not (an optional
        section); the model is left unchanged.
    ValueError
        The track is narrower than the new car plus margins, or its entry speed is refused
        (the model is left unchanged).
    """
    set_car(m, vehicle, veh.build_chain(vehicle),
            {**car_control_bounds(vehicle), **load_bounds(vehicle)}, _set_scaling)


def set_car(m, vehicle, chain, bounds: dict, set_scaling: Callable) -> None:
    """What :func:`set_full_vehicle` does, for any model whose rows take the car's parameters
    as ``m.vehicle.*`` (the full, single-track and multibody car): the values, ``m.problem`` (``vehicle``,
    ``chain``: the new car's chain or tree, ``initial_speed``), the variables' ``bounds``
    (``{name: (lower, upper)}``), the track limits, the fixed entry speed and the scaling
    (``set_scaling(m)``). Raises as :func:`set_full_vehicle`, before anything changes."""
    t0 = time.perf_counter()
    pr = m.problem
    cfg = pr.options
    if m.component("vehicle") is None:
        raise VehicleStructureError("the model has no m.vehicle: build a new model for the car")
    p = vehicle
    _same_structure(m.vehicle.built_for, p)
    tp = pr.track_points
    sigma = np.array(sorted(m.s))
    idx = {s: i for i, s in enumerate(sigma)}
    limits = track_limits(pr.track, tp, sigma, p, cfg,     # may refuse the car: nothing changed yet
                          getattr(pr.vehicle_model, "patch_limits", False))
    first = sigma[0]
    v0 = (entry_speed(pr.track, p, cfg, m.q1_dot[first].ub)
          if pr.initial_speed is not None else None)
    values = {}
    for key in PARAMETER_KEYS + ("gravity",):
        value = p.value(key)
        if value is None or (key != "gravity" and absent(p, key)):
            continue
        try:
            values[key] = (vehicle_var(m, key), float(value))
        except ValueError:
            raise VehicleStructureError(f"vehicle {p.name!r} has {key} = {value!r}, which the "
                                        "model's car has not; build a new model") from None
    # ---- from here on the model changes -----------------------------------------------------
    for var, value in values.values():
        var.set_value(value, skip_validation=True)
    update_problem(m, vehicle=p, chain=chain, initial_speed=v0,
                   time_scale=reference_time(pr.track, p, cfg, pr.sector_length))
    set_penalty_weights(m)
    set_bounds(m, bounds)
    set_track_limits(m, limits, idx)
    if v0 is not None:
        m.q1_dot[first].fix(v0)
    set_scaling(m)
    if control_states(cfg, m):
        scale_control_rates(m, veh.CONTROLS)
    update_problem(m, build_time_s=time.perf_counter() - t0, dae_time_s=0.0)


def _same_structure(old, new) -> None:
    """Refuse a car whose rows differ in structure from the model's car: other settings
    (:func:`~pyomo_lap.vehicle.schema.settings_of`), an optional key one car has and the other
    has not, a structural zero (:data:`STRUCTURAL_ZEROS`) that is 0 for one car only.

    Raises
    ------
    VehicleStructureError
        Naming the difference.
    """
    a, b = settings_of(old), settings_of(new)
    diff = [k for k in a if a[k] != b[k]]
    have_a, have_b = set(vehicle_inputs(old)), set(vehicle_inputs(new))
    diff += sorted(have_a ^ have_b)
    if diff:
        raise VehicleStructureError(
            f"vehicle {new.name!r} differs from the model's car {old.name!r} in its rows' "
            f"structure ({', '.join(diff)}: a setting, an optional key given for one car only, "
            "or a parameter that is 0 for one car only); build a new model for it")


def _set_scaling(m) -> None:
    """Scaling factors (exported to IPOPT's user-scaling) from typical magnitudes: the chain's
    (:func:`chain_scaling`), the loads and the in-plane tyre forces and their equations."""
    sf, F, _ = chain_scaling(m, lambda F: {"f_11z": F, "f_12z": F, "f_21z": F, "f_22z": F,
                                           "f_3x": F / 4, "f_3y": F / 4, "m_3z": F / 4})
    for c in m.loads_eq.values():
        sf[c] = F
    for (k, s), c in m.inplane_eq.items():
        sf[c] = F / 4
    if m.component("settled_start") is not None:
        for c in m.settled_start.values():
            sf[c] = 0.1


def initialize_full_model(m, fixed_point_iterations: int = 4) -> dict:
    """Cold-start initial guess of a full model (the steps of :mod:`pyomo_lap.ocp.initialize`);
    :func:`pyomo_lap.ocp.initialize.initialize_model` calls it for a full model.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
    fixed_point_iterations : int
        Iterations of the algebraic loop per point.

    Returns
    -------
    dict
        ``{"status": "ok", "estimated_time_s": float, "max_algebraic_residual": float}``.
    """
    p = m.vehicle.built_for
    sigma = sorted(m.s)
    prof = cold_start_profile(m)
    v, t, sag, fx = prof["v"], prof["t"], prof["sag"], prof["fx"]
    f_xa, f_xb, delta = prof["f_xa"], prof["f_xb"], prof["delta"]
    car = CarFunctions(record_of(m), p, m.problem.vehicle_model)   # the model's record
    n = len(sigma)
    q = np.zeros((n, 6))
    q[:, 3] = sag
    qd = np.zeros((n, 6))
    qd[:, 0] = v
    u = np.column_stack([f_xa, f_xb, delta]).astype(float)
    trk = track_vectors(m.problem.track_points)        # the numbers of the track joints
    s1, s2 = p.static_loads
    z = np.tile([s1, s1, s2, s2, 0.0, 0.0, 0.0], (n, 1))
    z[:, 4] = fx
    # step 4: a fixed number of fixed-point (Picard) steps z <- z - r(z), the loads kept at
    # or above fz_min (veh.solve_loop's steps without a Jacobian), all points at once
    qdd, res = car.evaluate_many(trk, q, qd, u, z)
    for _ in range(fixed_point_iterations):
        z = z - res
        z[:, :4] = np.maximum(z[:, :4], p.fz_min)
        qdd, res = car.evaluate_many(trk, q, qd, u, z)
    values = dict(zip(STATE_NAMES, q[:, 1:].T))
    values.update(zip(RATE_NAMES, qd.T))
    values.update(t=np.asarray(t, float), f_xa=u[:, 0], f_xb=u[:, 1], delta=u[:, 2])
    values.update(zip(veh.ALGEBRAIC, z.T))
    for k, name in enumerate(STATE_NAMES):
        values[f"d{name}_ds"] = qd[:, k + 1] / qd[:, 0]
    for k, name in enumerate(RATE_NAMES):
        values[f"d{name}_ds"] = qdd[:, k] / qd[:, 0]
    values["dt_ds"] = 1.0 / qd[:, 0]
    derivatives = {f"d{name}_ds" for name in STATE_NAMES + RATE_NAMES} | {"dt_ds"}
    for name, vals in values.items():
        clip = name not in derivatives
        for var, val in zip(entries_at(m.component(name), sigma), vals.tolist()):
            if clip:
                if var.fixed:
                    continue
                lb, ub = var.bounds
                if lb is not None and val < lb:
                    val = lb
                if ub is not None and val > ub:
                    val = ub
            var.set_value(val, skip_validation=True)
    max_res = float(np.max(np.abs(res))) if n else 0.0
    if m.problem.options.lift:   # values of the lifted intermediates (OCP option 'lift')
        _set_lifted(m, sigma)
    return {"status": "ok", "estimated_time_s": float(t[-1]), "max_algebraic_residual": max_res}


def _set_lifted(m, sigma: list) -> None:
    """Give the lifted intermediates (OCP option ``lift``: the variables ``m.car.<tag>``) the
    values of their definitions at the points' values: the tagged nodes of the recorded rows
    (``m.problem.point_rows``), evaluated at all points at once."""
    rec = m.problem.point_rows
    tape = rec.tape
    inputs = {name: np.array([v.value for v in entries_at(m.component(name), sigma)], dtype=float)
              for name in rec.variables}
    inputs.update(track_numbers(m.problem.track_points))
    inputs.update(zip(rec.vehicle_inputs, rec.vehicle_values(m.vehicle.built_for)))
    tagged = [(i, tag) for i, tag in tape.tags.items() if tape.live[i]]
    values = tape.evaluate(inputs, [tape.nodes[i] for i, _ in tagged])
    for (_, tag), value in zip(tagged, values):
        comp = m.car.component(tag)
        if comp is not None and comp.ctype is pyo.Var:
            for s, x in zip(sigma, np.broadcast_to(np.asarray(value, dtype=float), len(sigma))):
                comp[s].set_value(float(x))


FULL_MODEL = VehicleModel(
    name="full",
    description="the six-joint Lie-group car (pyomo_lap.vehicle.car, pyomo_lap.spatial.tree)",
    states=STATE_NAMES, rates=RATE_NAMES, controls=veh.CONTROLS, algebraics=veh.ALGEBRAIC,
    build=build_full_model, initialize=initialize_full_model,
    point_rows=lambda p, cfg: record_point_rows(p, cfg), trajectory=record_table,
    set_vehicle=set_full_vehicle, patch_limits=True, dynamics=record_dynamics,
    lap_time_sensitivities=True)
"""The full model as a :class:`~pyomo_lap.ocp.vehicle_model.VehicleModel` (registry key ``"full"``)."""
