"""The vehicle schema: :class:`VehicleParameters` (a pydantic v2 model); the vehicle-file
reader is :mod:`pyomo_lap.vehicle.files`.

Every parameter is a field with its unit in the description, a plausible range (wide enough
for any race car, narrow enough to catch a wrong unit: millimetres for metres, kW for W,
degrees for radians, N/mm for N/m) and, where the physics needs it, a check against other
fields (unsprung mass below the total, inertias that satisfy the triangle inequality,
no-roll centres below the centre of mass, minimum wheel load below the static load, a static
sag that fits the heave range of the model).

Vehicle files are TOML with the sections and keys of ``models/fsae.toml`` (:data:`SECTIONS`);
unknown sections or keys, missing keys, strings, booleans, ``nan`` and ``inf`` are refused.
Every problem in a file is reported at once, each naming the file, the ``[section] key``, the
value and what was expected (:class:`pyomo_lap.vehicle.files.VehicleFileError`).

``VehicleParameters.model_json_schema()`` gives the JSON schema of the flat parameters
(descriptions, units, ranges).
"""
from __future__ import annotations

import difflib
import math
from typing import Literal, Optional

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..spatial.tree import GRAVITY
from .fuel import fuel_problems, map_problems
from .limits import limits_car_problems, parse_limits
from .tyres import DEFAULT_TYRE_MODEL, TYRE_MODELS

__all__ = ["VehicleParameters", "SECTIONS", "OPTIONAL_SECTIONS",
           "OPTIONAL_KEYS", "SETTINGS", "CHANNEL_SETTINGS", "ABSENT_WHEN_NONE", "settings_of", "STRUCTURAL_ZEROS", "absent",
           "MAX_STATIC_SAG", "PARAMETER_KEYS", "FIELD_OF_KEY", "KEY_OF_FIELD", "field_of",
           "SymbolicVehicle"]

MAX_STATIC_SAG = 0.1
"""Largest accepted static heave sag of the sprung mass, m_s g / (2 k1 + 2 k2) [m]. The OCP
bounds the heave q4 to +-0.2 m; a sag above 0.1 m means wheel rates in the wrong unit."""


def _f(description: str, unit: str, **ranges):
    """A float field with its unit and range (pydantic ``Field``)."""
    return Field(description=f"{description} [{unit}]", json_schema_extra={"unit": unit}, **ranges)


def _optional(description: str, unit: str, ge: float, le: float):
    """An optional float field (default None) with its unit and range; the range is also
    written at the top of its JSON schema (pydantic puts it inside ``anyOf``)."""
    return Field(default=None, ge=ge, le=le, description=f"{description} [{unit}]",
                 json_schema_extra={"unit": unit, "minimum": ge, "maximum": le})


class VehicleParameters(BaseModel):
    """Parameters of the car (SI units), validated on construction.

    Field descriptions carry the units; ``VehicleParameters.model_fields[name].description``
    and ``model_json_schema()`` list them with their ranges. See ``models/fsae.toml`` for the
    meaning and the source of each value of the bundled car.

    Attributes
    ----------
    name : str
    m, m_u : float
        Total and unsprung mass [kg].
    Ixx, Iyy, Izz : float
        Principal moments of the sprung body about G6 [kg m^2].
    a1, a2, t1, t2 : float
        Distances of the axles from G and tracks [m].
    h : float
        Height of G6 above the road [m].
    hq1, hq2 : float
        No-roll centre heights, front and rear [m] (Guiggiani's q_1, q_2).
    wheel_radius, width : float
        [m].
    S, Cx, Cz1, Cz2, rho : float
        Frontal area [m^2], coefficients [-], air density [kg/m^3].
    k1, k2 : float
        Wheel rates per wheel, front and rear [N/m].
    c1, c2 : float
        Damping per wheel [N s/m].
    P_max : float
        Maximum power [W].
    brake_ratio : float
        Front share k_b of the braking force [-].
    Fz0, mu_y0, mu_x0, pD2, C, E, pK1, pK2 : float
        Tyre model, see :func:`pyomo_lap.vehicle.tyres.tyre_lateral_force`.
    fz_min : float
        Minimum vertical load per wheel in the OCP [N].
    delta_max : float
        Road-wheel steer limit [rad].
    gravity : float
        [m/s^2].

    Raises
    ------
    pydantic.ValidationError (a ValueError)
        On construction with a value of the wrong type, out of its range, or inconsistent
        with another field; every problem is listed with the field, the value and the
        expected range.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="name of the car")
    gravity: float = _f("gravitational acceleration", "m/s^2", ge=9.7, le=9.9, default=GRAVITY)
    m: float = _f("total mass", "kg", gt=0.0, le=1.0e4)
    m_u: float = _f("unsprung mass (wheels, uprights, brakes, half the links); < total mass",
                    "kg", gt=0.0)
    Ixx: float = _f("roll moment of inertia of the sprung body about G6", "kg m^2", gt=0.0, le=1.0e5)
    Iyy: float = _f("pitch moment of inertia of the sprung body about G6", "kg m^2", gt=0.0, le=1.0e5)
    Izz: float = _f("yaw moment of inertia of the sprung body about G6; Ixx, Iyy, Izz satisfy "
                    "the triangle inequality", "kg m^2", gt=0.0, le=1.0e5)
    a1: float = _f("distance from G to the front axle", "m", gt=0.0, le=10.0)
    a2: float = _f("distance from G to the rear axle", "m", gt=0.0, le=10.0)
    t1: float = _f("front track", "m", gt=0.0, le=5.0)
    t2: float = _f("rear track", "m", gt=0.0, le=5.0)
    h: float = _f("height of G6 (sprung mass centre) above the road", "m", gt=0.0, le=3.0)
    hq1: float = _f("front no-roll centre height; < h", "m", ge=0.0)
    hq2: float = _f("rear no-roll centre height; < h", "m", ge=0.0)
    wheel_radius: float = _f("loaded wheel radius", "m", gt=0.0, le=1.5)
    width: Optional[float] = _optional("overall width; >= the wider track (default: the wider "
                                       "of t1 + tyre_width_front and t2 + tyre_width_rear); the "
                                       "single-track and multibody models keep it within the "
                                       "track", "m", ge=0.01, le=5.0)
    tw1: Optional[float] = _optional("width of a front tyre's contact patch: the full model keeps "
                                     "every contact patch within the track (default: width - t1)",
                                     "m", ge=0.0, le=2.5)
    tw2: Optional[float] = _optional("width of a rear tyre's contact patch (default: width - t2)",
                                     "m", ge=0.0, le=2.5)
    S: float = _f("frontal area", "m^2", gt=0.0, le=20.0)
    Cx: float = _f("drag coefficient", "-", gt=0.0, le=3.0)
    Cz1: float = _f("front downforce coefficient", "-", ge=0.0, le=10.0)
    Cz2: float = _f("rear downforce coefficient", "-", ge=0.0, le=10.0)
    rho: float = _f("air density (0: no aerodynamic forces)", "kg/m^3", ge=0.0, le=1.5)
    h_cp: float = _f("height of the aerodynamic centre of pressure above the road, where drag "
                     "and downforce act (0: at road level, as eq 20)", "m", ge=0.0, le=3.0,
                     default=0.0)
    k1: float = _f("front wheel rate, per wheel", "N/m", gt=0.0, le=1.0e7)
    k2: float = _f("rear wheel rate, per wheel; static sag m_s g/(2 k1 + 2 k2) <= "
                   f"{MAX_STATIC_SAG} m", "N/m", gt=0.0, le=1.0e7)
    c1: float = _f("front damping, per wheel (0: undamped)", "N s/m", ge=0.0, le=1.0e6)
    c2: float = _f("rear damping, per wheel (0: undamped)", "N s/m", ge=0.0, le=1.0e6)
    P_max: float = _f("maximum power (W, not kW)", "W", ge=1.0e3, le=2.0e6)
    brake_ratio: float = _f("front share k_b of the braking force", "-", ge=0.0, le=1.0)
    drive_ratio: float = _f("front share k_d of the drive force: 0 rear-wheel drive, 1 "
                            "front-wheel drive, between them all-wheel drive with this split",
                            "-", ge=0.0, le=1.0, default=0.0)
    T_b1: Optional[float] = _optional("largest brake torque of a front wheel (default: no "
                                      "limit; the tyres limit the braking)", "N m",
                                      ge=1.0, le=1.0e5)
    T_b2: Optional[float] = _optional("largest brake torque of a rear wheel (default: no limit)",
                                      "N m", ge=1.0, le=1.0e5)
    power_curve_speed: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="road speeds of the power curve, increasing [m/s]",
        json_schema_extra={"unit": "m/s"})
    power_curve_power: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="power available at the driven wheels at each speed of "
        "power_curve_speed (capped at P_max) [W]", json_schema_extra={"unit": "W"})
    engine_speed: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="engine speeds of the torque curve, increasing (rad/s, "
        "not rpm: rpm x pi/30) [rad/s]", json_schema_extra={"unit": "rad/s"})
    engine_torque: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="engine torque at full load at each engine_speed [N m]",
        json_schema_extra={"unit": "N m"})
    gear_ratios: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="gearbox ratios (engine speed / gearbox output speed), "
        "first gear first [-]", json_schema_extra={"unit": "-"})
    final_drive: Optional[float] = _optional("final drive ratio (gearbox output / wheel speed)",
                                             "-", ge=0.1, le=50.0)
    drivetrain_efficiency: Optional[float] = _optional("efficiency from the crankshaft to the "
                                                       "wheels (default 1)", "-", ge=0.1, le=1.0)
    Fz0: float = _f("nominal tyre load of the Magic Formula", "N", gt=0.0, le=1.0e5)
    mu_y0: float = _f("peak lateral friction coefficient at Fz0", "-", ge=0.1, le=3.0)
    mu_x0: float = _f("peak longitudinal friction coefficient at Fz0", "-", ge=0.1, le=3.0)
    pD2: float = _f("load sensitivity of the friction coefficient", "-", ge=-1.0, le=1.0)
    C: float = _f("Magic Formula shape factor", "-", gt=0.0, le=2.0)
    E: float = _f("Magic Formula curvature factor", "-", ge=-10.0, le=1.0)
    pK1: float = _f("cornering stiffness at Fz0 divided by Fz0, per rad (peak of "
                    "pK1 Fz0 sin(2 atan(f_z/(pK2 Fz0))))", "1/rad", gt=0.0, le=500.0)
    pK2: float = _f("load, in Fz0, at which the cornering stiffness peaks", "-", gt=0.0, le=50.0)
    fz_min: float = _f("minimum vertical load per wheel in the OCP; < static wheel load", "N",
                       ge=0.0)
    tyre_model: str = Field(
        default=DEFAULT_TYRE_MODEL, description="shape of the lateral characteristic, a name of "
        "the registry pyomo_lap.vehicle.tyres.TYRE_MODELS: 'magic-formula' (eq 32: C, E) or "
        "'fiala' (the brush model's cubic, sliding beyond 3 D / C_alpha); all with the peak "
        "D(f_z) and the cornering stiffness of the keys mu_y0, pD2, pK1, pK2 [-]",
        json_schema_extra={"unit": "-"})
    combined_slip: Literal["constraint", "ellipse"] = Field(
        default="constraint", description="combined slip: 'constraint' (the paper: the lateral "
        "force of pure slip, the friction ellipse as a constraint) or 'ellipse' (the lateral "
        "force of pure slip scaled by sqrt(1 - (f_x / (mu_x f_z))^2): a longitudinal force uses "
        "up lateral grip, as combined-slip tyre models do) [-]", json_schema_extra={"unit": "-"})
    alpha_max: Optional[float] = _optional("largest slip angle of a tyre: the tyres may work "
                                           "past the peak of their lateral characteristic up "
                                           "to it (default: at or below the peak)", "rad",
                                           ge=0.01, le=0.6)
    delta_max: float = _f("road-wheel steer limit (radians, not degrees)", "rad", gt=0.0, lt=1.2)
    steering_ratio: Optional[float] = _optional("steering ratio: steering-wheel angle / road-wheel "
                                                "angle delta, for the logger channel "
                                                "steering_wheel_angle only (not in the model's "
                                                "rows; default: not given, no such channel)",
                                                "-", ge=3.0, le=25.0)
    tyre_kz: Optional[float] = _optional("tyre vertical stiffness, per tyre (multibody model "
                                         "only; None: not given)", "N/m", ge=1.0e4, le=1.0e7)
    tyre_cz: Optional[float] = _optional("tyre vertical damping, per tyre (multibody model "
                                         "only; None: not given)", "N s/m", ge=0.0, le=1.0e5)
    # [hybrid] (pyomo_lap.ocp.hybrid, docs/energy.md): a battery and a motor-generator on
    # the driven axle; a setting, not a parameter of the rows (a car without it: no hybrid)
    hybrid_deploy_power_max: Optional[float] = _optional(
        "largest power the motor-generator deploys at the driven wheels (default: no hybrid)",
        "W", ge=1.0, le=1.0e6)
    hybrid_harvest_power_max: Optional[float] = _optional(
        "largest power the motor-generator harvests from the rear brakes", "W", ge=0.0, le=1.0e6)
    hybrid_deploy_energy: Optional[float] = _optional(
        "largest energy per lap (per sector) out of the battery to the motor (default: no limit)",
        "J", ge=1.0, le=1.0e9)
    hybrid_harvest_energy: Optional[float] = _optional(
        "largest energy per lap (per sector) into the battery from the generator (default: no "
        "limit)", "J", ge=1.0, le=1.0e9)
    hybrid_capacity: Optional[float] = _optional(
        "usable battery energy, the state of charge within [0, capacity] (default: no bound)",
        "J", ge=1.0, le=1.0e9)
    hybrid_deploy_efficiency: Optional[float] = _optional(
        "efficiency battery -> wheels (default 1)", "-", ge=0.1, le=1.0)
    hybrid_harvest_efficiency: Optional[float] = _optional(
        "efficiency brakes -> battery (default 1)", "-", ge=0.1, le=1.0)
    hybrid_soc_start: Optional[float] = _optional(
        "battery energy at the start (default: periodic, end = start, unless soc_end is given)",
        "J", ge=0.0, le=1.0e9)
    hybrid_soc_end: Optional[float] = _optional(
        "battery energy at the end (default: periodic, unless soc_start is given: free)",
        "J", ge=0.0, le=1.0e9)
    fuel_lhv: Optional[float] = _optional("lower heating value of the fuel (default "
                                          "43e6, petrol; with thermal_efficiency)", "J/kg",
                                          ge=1.0e6, le=1.5e8)
    fuel_efficiency: Optional[float] = _optional("brake thermal efficiency of the engine: "
                                                 "engine power / fuel power (or the map)", "-", ge=0.05, le=0.7)
    fuel_map_power: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="engine powers of the fuel-flow map (instead "
        "of thermal_efficiency), increasing [W]", json_schema_extra={"unit": "W"})
    fuel_map_flow: Optional[tuple[float, ...]] = Field(
        default=None, strict=False, description="fuel mass flow at each map_power [kg/s]",
        json_schema_extra={"unit": "kg/s"})
    fuel_mass: Optional[float] = _optional("fuel mass at the stint's start, part of "
                                           "[mass] total", "kg", ge=0.0, le=1.0e3)
    limits: Optional[dict[str, float]] = Field(
        default=None, description="limits on the sector's integrals, {name: value} "
        "(energies in J, fuel in kg; pyomo_lap.vehicle.limits; merged with the job's, which "
        "win; each > 0) [-]", json_schema_extra={"unit": "-", "exclusiveMinimum": 0.0})
    description: str = Field(default="", description="free text")

    # cross-field checks (fields are validated in declaration order; info.data holds the
    # earlier fields that passed their own checks) ---------------------------------------
    @model_validator(mode="before")
    @classmethod
    def _widths(cls, data):
        """The defaults of ``width``, ``tw1``, ``tw2`` from each other and the tracks: a tyre
        width left out is ``width - t_i``; a width left out is the wider of ``t_i + tw_i``."""
        if not isinstance(data, dict):
            return data
        d = dict(data)
        t = [d.get("t1"), d.get("t2")]
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in t)
        w = d.get("width")
        if ok and isinstance(w, (int, float)) and not isinstance(w, bool):
            for k, ti in (("tw1", t[0]), ("tw2", t[1])):
                if d.get(k) is None:
                    d[k] = max(float(w) - float(ti), 0.0)
        elif ok and w is None and all(isinstance(d.get(k), (int, float)) for k in ("tw1", "tw2")):
            d["width"] = max(t[0] + d["tw1"], t[1] + d["tw2"])
        return d

    @model_validator(mode="after")
    def _complete(self):
        problems = []
        if self.width is None or self.tw1 is None or self.tw2 is None:
            problems.append("[geometry]: give width, or tyre_width_front and tyre_width_rear "
                            "(the contact patches' widths, for the track limits), or all three")
        curve = (self.power_curve_speed, self.power_curve_power)
        engine = (self.engine_speed, self.engine_torque, self.gear_ratios, self.final_drive)
        if any(x is not None for x in curve) and any(x is not None for x in engine):
            problems.append("[power_curve] and [engine] both given: expected one of them (the "
                            "power at the wheels over the road speed, or the engine's torque "
                            "curve with its gears)")
        problems += _curve_problems("power_curve", ("speed", "power"), curve, (0.0, 0.0))
        problems += _curve_problems("engine", ("speed", "torque"), engine[:2], (0.0, 0.0))
        if any(x is not None for x in engine) and any(x is None for x in engine):
            problems.append("[engine]: expected speed, torque, gear_ratios and final_drive "
                            "together (efficiency optional)")
        problems += _hybrid_problems(self)
        if self.gear_ratios is not None and (len(self.gear_ratios) < 1 or any(
                not (0.1 <= g <= 50.0) for g in self.gear_ratios)):
            problems.append(f"[engine] gear_ratios = {list(self.gear_ratios)!r}: expected one or "
                            "more ratios between 0.1 and 50")
        angle = TYRE_MODELS[self.tyre_model].peak_angle     # D cos(theta) >= 0 below its peak
        if self.combined_slip != "ellipse" and (not angle or self.alpha_max is not None):
            what = (f"[tyre] model = {self.tyre_model!r}" if not angle
                    else f"[tyre] slip_angle_max = {self.alpha_max!r}")
            problems.append(f"{what} needs [tyre] combined_slip = \"ellipse\": with the paper's "
                            "friction ellipse as a constraint on the force of pure slip "
                            "('constraint') the Magic Formula tyre is held at or below its peak "
                            "(a tyre past its peak makes that constraint degenerate)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _fuel_section(self):
        """``[fuel]`` (:func:`pyomo_lap.vehicle.fuel.fuel_problems`), its map's points, and a
        ``[limits] fuel`` only with it (:func:`pyomo_lap.vehicle.limits.limits_car_problems`)."""
        problems = fuel_problems(self) + _curve_problems(
            "fuel", ("map_power", "map_flow"), (self.fuel_map_power, self.fuel_map_flow),
            (0.0, 0.0)) + limits_car_problems(self, self.limits)
        problems = problems or map_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @field_validator("limits", mode="before")
    @classmethod
    def _parsed_limits(cls, v):
        """``[limits]`` in SI (:func:`pyomo_lap.vehicle.limits.parse_limits`)."""
        return parse_limits(v) or None

    @field_validator("tyre_model")
    @classmethod
    def _registered_tyre_model(cls, v: str) -> str:
        if v not in TYRE_MODELS:
            raise ValueError(f"tyre_model = {v!r}: unknown tyre model; registered: "
                             f"{', '.join(repr(k) for k in TYRE_MODELS)}")
        return v

    @field_validator("m_u")
    @classmethod
    def _unsprung_below_total(cls, v: float, info: ValidationInfo) -> float:
        m = info.data.get("m")
        if m is not None and not v < m:
            raise ValueError(f"expected less than the total mass, {m!r} kg")
        return v

    @field_validator("Izz")
    @classmethod
    def _triangle_inequality(cls, v: float, info: ValidationInfo) -> float:
        ixx, iyy = info.data.get("Ixx"), info.data.get("Iyy")
        if ixx is not None and iyy is not None:
            i = (ixx, iyy, v)
            if not (i[0] + i[1] >= i[2] and i[1] + i[2] >= i[0] and i[0] + i[2] >= i[1]):
                raise ValueError(f"(Ixx, Iyy, Izz) = {i} violate the triangle inequality of "
                                 "principal moments of inertia (each <= the sum of the others)")
        return v

    @field_validator("hq1", "hq2")
    @classmethod
    def _roll_centre_below_g(cls, v: float, info: ValidationInfo) -> float:
        h = info.data.get("h")
        if h is not None and not v < h:
            raise ValueError(f"expected below the centre of mass, < h = {h!r} m")
        return v

    @field_validator("width")
    @classmethod
    def _width_covers_tracks(cls, v: float, info: ValidationInfo) -> float:
        t = [info.data[k] for k in ("t1", "t2") if k in info.data]
        if t and not v >= max(t):
            raise ValueError(f"expected at least the wider track max(t1, t2) = {max(t)!r} m "
                             "(the overall width includes the tyres)")
        return v

    @field_validator("k2")
    @classmethod
    def _static_sag(cls, v: float, info: ValidationInfo) -> float:
        d = info.data
        if all(k in d for k in ("m", "m_u", "k1", "gravity")):
            sag = (d["m"] - d["m_u"]) * d["gravity"] / (2 * d["k1"] + 2 * v)
            if sag > MAX_STATIC_SAG:
                raise ValueError(
                    f"static sag m_s g / (2 k1 + 2 k2) = {sag:.3g} m with k1 = {d['k1']!r}, "
                    f"expected <= {MAX_STATIC_SAG} m: wheel rates are in N/m (1 N/mm = 1000 N/m)")
        return v

    @field_validator("fz_min")
    @classmethod
    def _fz_min_below_static_load(cls, v: float, info: ValidationInfo) -> float:
        d = info.data
        if all(k in d for k in ("m", "a1", "a2", "gravity")):
            l = d["a1"] + d["a2"]
            static = min(d["m"] * d["gravity"] * d["a2"] / (2 * l),
                         d["m"] * d["gravity"] * d["a1"] / (2 * l))
            if not v < static:
                raise ValueError(f"expected less than the smaller static wheel load "
                                 f"{static:.1f} N")
        return v

    # derived quantities -----------------------------------------------------------------
    @property
    def l(self) -> float:  # noqa: E743
        """Wheelbase a1 + a2 [m]."""
        return self.a1 + self.a2

    @property
    def m_s(self) -> float:
        """Sprung mass [kg]."""
        return self.m - self.m_u

    @property
    def h_vip(self) -> float:
        """Height of the VIP (O4 = O5 = O6) above the road: the no-roll axis at x = 0 [m]."""
        return (self.a2 * self.hq1 + self.a1 * self.hq2) / self.l

    @property
    def unsprung_inertia(self) -> tuple:
        """Principal moments of the unsprung body about its centre [kg m^2]: four point masses
        at the wheel centres, split front/rear as a2:a1 so that their centre is above O3."""
        mu1 = self.m_u * self.a2 / self.l / 2  # each front wheel
        mu2 = self.m_u * self.a1 / self.l / 2
        ixx = 2 * mu1 * (self.t1 / 2) ** 2 + 2 * mu2 * (self.t2 / 2) ** 2
        iyy = 2 * mu1 * self.a1 ** 2 + 2 * mu2 * self.a2 ** 2
        return (ixx, iyy, ixx + iyy)

    @property
    def suspension(self) -> dict:
        """Equivalent stiffness and damping, eq (19): keys ``k, c`` [N/m, N s/m],
        ``k_theta, c_theta`` (pitch), ``k_phi, c_phi`` (roll) [N m/rad, N m s/rad] and the
        roll stiffness of each axle ``k_phi1, k_phi2`` [N m/rad]."""
        k1, k2, c1, c2 = self.k1, self.k2, self.c1, self.c2
        k_phi1 = 2 * k1 / 4 * self.t1 ** 2
        k_phi2 = 2 * k2 / 4 * self.t2 ** 2
        return {
            "k": 2 * k1 + 2 * k2,
            "c": 2 * c1 + 2 * c2,
            "k_theta": 2 * k1 * self.a1 ** 2 + 2 * k2 * self.a2 ** 2,
            "c_theta": 2 * c1 * self.a1 ** 2 + 2 * c2 * self.a2 ** 2,
            "k_phi1": k_phi1,
            "k_phi2": k_phi2,
            "k_phi": k_phi1 + k_phi2,
            "c_phi": 2 * c1 / 4 * self.t1 ** 2 + 2 * c2 / 4 * self.t2 ** 2,
        }

    @property
    def static_loads(self) -> tuple:
        """Static vertical load per wheel on flat ground [N]: (front, rear) = m g (l - a_i)/(2l)."""
        g = self.gravity
        return (self.m * g * self.a2 / (2 * self.l), self.m * g * self.a1 / (2 * self.l))

    def as_dict(self) -> dict:
        """All parameters as a flat dict (for export)."""
        return self.model_dump()

    def replace(self, changes: Optional[dict] = None, **kwargs) -> "VehicleParameters":
        """A copy with some parameters changed, validated again (``model_copy`` does not
        validate).

        Parameters
        ----------
        changes : dict, optional
            ``{name: value}`` with the dotted names of the vehicle file (``"mass.total"``,
            ``"aero.Cz1"``: :data:`PARAMETER_KEYS`, the names of the model's
            ``m.vehicle.<section>.<key>``) or the field names (``"m"``, ``"Cz1"``).
        **kwargs
            Field names (``car.replace(m=250)``).

        Raises
        ------
        ValueError
            An unknown name (with the known ones), or a value the schema refuses.
        """
        fields = {}
        for name, value in {**(changes or {}), **kwargs}.items():
            fields[field_of(name)] = value
        return type(self)(**{**self.model_dump(), **fields})

    def value(self, name: str) -> float:
        """The value of a parameter by its dotted name (``"mass.total"``) or field name."""
        return getattr(self, field_of(name))


# ---------------------------------------------------------------------------------------
# vehicle files
# ---------------------------------------------------------------------------------------
SECTIONS = {
    "mass": {"total": "m", "unsprung": "m_u", "Ixx": "Ixx", "Iyy": "Iyy", "Izz": "Izz"},
    "geometry": {**{k: k for k in ("a1", "a2", "t1", "t2", "h", "hq1", "hq2", "wheel_radius",
                                   "width")},
                 "tyre_width_front": "tw1", "tyre_width_rear": "tw2"},
    "aero": {k: k for k in ("S", "Cx", "Cz1", "Cz2", "rho", "h_cp")},
    "suspension": {k: k for k in ("k1", "k2", "c1", "c2")},
    "powertrain": {"P_max": "P_max", "brake_ratio": "brake_ratio", "drive_ratio": "drive_ratio",
                   "brake_torque_front": "T_b1", "brake_torque_rear": "T_b2"},
    "tyre": {**{k: k for k in ("Fz0", "mu_y0", "mu_x0", "pD2", "C", "E", "pK1", "pK2", "fz_min")},
             "slip_angle_max": "alpha_max"},
    "steering": {"delta_max": "delta_max"},
}
"""Layout of a vehicle file, its numeric parameters: ``{section: {key: VehicleParameters
field}}``. The keys of :data:`OPTIONAL_KEYS` may be left out."""

OPTIONAL_KEYS = ("geometry.width", "geometry.tyre_width_front", "geometry.tyre_width_rear",
                 "aero.h_cp", "powertrain.drive_ratio", "powertrain.brake_torque_front",
                 "powertrain.brake_torque_rear", "tyre.slip_angle_max")
"""Keys of :data:`SECTIONS` a vehicle file may leave out, each with its default (the field's
description says which): the defaults leave the model as it was before the key existed."""

STRUCTURAL_ZEROS = ("aero.h_cp", "powertrain.drive_ratio")
"""Parameters that are numbers, not symbols, in the rows of a car that has them 0 (drag at
road level; rear-wheel drive): their terms are left out, so such a car's rows are those of
the papers' model, and the model has no variable ``m.vehicle.*`` of theirs. A car with another
value has other rows (another compiled function); a model built for the one cannot take the
other (:class:`pyomo_lap.ocp.full_model.VehicleStructureError`)."""


def absent(p, key: str) -> bool:
    """Whether the car ``p`` leaves the parameter ``key`` (dotted name) out of its rows: an
    optional key it does not give, or a structural zero (:data:`STRUCTURAL_ZEROS`) it has 0."""
    value = getattr(p, field_of(key), None)
    return value is None or (key in STRUCTURAL_ZEROS and value == 0.0)


ABSENT_WHEN_NONE = ("T_b1", "T_b2", "alpha_max")
"""Fields whose default is None, meaning "not given": the model then has no variable and no
row of theirs (a car with them and a car without have different rows)."""

SETTINGS = {
    "tyre": {"model": "tyre_model", "combined_slip": "combined_slip"},
    "power_curve": {"speed": "power_curve_speed", "power": "power_curve_power"},
    "engine": {"speed": "engine_speed", "torque": "engine_torque", "gear_ratios": "gear_ratios",
               "final_drive": "final_drive", "efficiency": "drivetrain_efficiency"},
    "steering": {"steering_ratio": "steering_ratio"},
    "hybrid": {"deploy_power_max": "hybrid_deploy_power_max",
               "harvest_power_max": "hybrid_harvest_power_max",
               "deploy_energy_per_lap": "hybrid_deploy_energy",
               "harvest_energy_per_lap": "hybrid_harvest_energy",
               "capacity": "hybrid_capacity", "deploy_efficiency": "hybrid_deploy_efficiency",
               "harvest_efficiency": "hybrid_harvest_efficiency",
               "soc_start": "hybrid_soc_start", "soc_end": "hybrid_soc_end"},
    "fuel": {"lower_heating_value": "fuel_lhv", "thermal_efficiency": "fuel_efficiency",
             "map_power": "fuel_map_power", "map_flow": "fuel_map_flow",
             "mass_start": "fuel_mass"},
}
"""Keys of a vehicle file that are not parameters of the model (not ``m.vehicle.*``, not
swept or freed): choices (the tyre model) and curves (the power or engine curve), all
optional. A car whose settings differ has other rows: the model is built anew for it
(:func:`settings_of`), except for those of :data:`CHANNEL_SETTINGS`."""

CHANNEL_SETTINGS = ("steering_ratio",)
"""Settings that only convert channels of the results (the steering ratio: the logger channel
``steering_wheel_angle``, :mod:`pyomo_lap.results.logger`): not in the model's rows, so not in
:func:`settings_of`."""

OPTIONAL_SECTIONS = {
    "multibody": {"tyre_stiffness": "tyre_kz", "tyre_damping": "tyre_cz"},
}
"""Sections a vehicle file may leave out (all their keys together): ``[multibody]``, the
parameters only the multibody model (:mod:`pyomo_lap.vehicle.multibody_car`) needs."""

PARAMETER_KEYS = tuple(f"{sec}.{key}" for sec, keys in {**SECTIONS, **OPTIONAL_SECTIONS}.items()
                       for key in keys)
"""The dotted name of every parameter of a vehicle file (``"mass.total"``, ``"aero.Cz1"``,
...), in file order: the one name of a parameter in the model (``m.vehicle.mass.total``), the
API (:meth:`VehicleParameters.replace`), ``pyomo-lap sweep --set``, ``solve --free``, the
workbook's ``vehicle`` sheet, ``summary.json`` and the sensitivity table."""

FIELD_OF_KEY = {f"{sec}.{key}": attr for sec, keys in {**SECTIONS, **OPTIONAL_SECTIONS}.items()
                for key, attr in keys.items()}
"""Dotted name -> :class:`VehicleParameters` field."""

KEY_OF_FIELD = {attr: key for key, attr in FIELD_OF_KEY.items()}
""":class:`VehicleParameters` field -> dotted name."""


def _curve_problems(section: str, names: tuple, arrays: tuple, lows: tuple) -> list:
    """What is wrong with a pair of curve arrays (``[section] names[0]``, ``names[1]``): given
    together, of equal length >= 2, finite, the first strictly increasing, each >= its low."""
    a, b = arrays
    if a is None and b is None:
        return []
    if a is None or b is None:
        return [f"[{section}]: expected {names[0]} and {names[1]} together"]
    out = []
    if len(a) != len(b) or len(a) < 2:
        out.append(f"[{section}] {names[0]} ({len(a)} values), {names[1]} ({len(b)} values): "
                   "expected two or more values each, as many of one as of the other")
    if any(not math.isfinite(x) for x in tuple(a) + tuple(b)):
        out.append(f"[{section}]: expected finite numbers")
    elif any(y <= x for x, y in zip(a[:-1], a[1:])):
        out.append(f"[{section}] {names[0]} = {list(a)!r}: expected strictly increasing values")
    for name, arr, low in zip(names, (a, b), lows):
        if any(x < low for x in arr):
            out.append(f"[{section}] {name}: expected values >= {low:g}")
    return out


def _hybrid_problems(p) -> list:
    """What is wrong with the ``[hybrid]`` section of a car (docs/energy.md): its powers given
    together, the states of charge within the capacity."""
    sec = SETTINGS["hybrid"]
    given = [k for k, attr in sec.items() if getattr(p, attr, None) is not None]
    if not given:
        return []
    out = [f"[hybrid] {k}: expected (the section needs deploy_power_max and harvest_power_max)"
           for k in ("deploy_power_max", "harvest_power_max") if k not in given]
    cap = p.hybrid_capacity
    for k in ("soc_start", "soc_end"):
        value = getattr(p, sec[k])
        if value is not None and cap is not None and value > cap:
            out.append(f"[hybrid] {k} = {value!r}: expected at most capacity = {cap!r} [J]")
    return out


SMALL_POWER_SHARE = 0.01
"""A hybrid power below this share of the engine's ``P_max`` is suspicious
(:func:`suspicious_values`): it would change the lap by less than the engine's own rounding, and a power given in kW where
W are meant (``deploy_power_max = 120.0``) lands there for any car of at least 12 kW."""


def suspicious_values(p) -> list:
    """Plausible but suspicious values of a car (a warning each, naming ``[section] key``, the
    value, and what the car itself implies): a ``[hybrid]`` power below
    :data:`SMALL_POWER_SHARE` of the engine's ``[powertrain] P_max`` [W]."""
    out = []
    for key in ("deploy_power_max", "harvest_power_max"):
        value = getattr(p, SETTINGS["hybrid"][key], None)
        if value is not None and 0 < value < SMALL_POWER_SHARE * p.P_max:
            out.append(f"[hybrid] {key} = {value:g} W is {value / p.P_max:.2%} of the engine's "
                       f"[powertrain] P_max = {p.P_max:g} W: expected W, not kW "
                       f"({value:g} kW is {value * 1e3:g} W)")
    return out


def field_of(name: str) -> str:
    """The :class:`VehicleParameters` field of a parameter named by its dotted name or its field
    name (``"mass.total"`` or ``"m"`` -> ``"m"``).

    Raises
    ------
    ValueError
        An unknown name; the message lists the dotted names (and close matches).
    """
    if name in FIELD_OF_KEY:
        return FIELD_OF_KEY[name]
    if name in KEY_OF_FIELD or name == "gravity":
        return name
    sec, _, key = name.partition(".")
    if key in SETTINGS.get(sec, {}):
        return SETTINGS[sec][key]
    if name in {attr for keys in SETTINGS.values() for attr in keys.values()}:
        return name
    close = difflib.get_close_matches(name, list(PARAMETER_KEYS) + list(KEY_OF_FIELD), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(f"vehicle parameter {name!r}: unknown{hint}; expected one of "
                     f"{', '.join(PARAMETER_KEYS)}")


def settings_of(p) -> dict:
    """The :data:`SETTINGS` of a car (``{field: value}``): two cars with different settings
    have different rows (a model is built anew for the other)."""
    return {attr: getattr(p, attr, None) for keys in SETTINGS.values() for attr in keys.values()
            if attr not in CHANNEL_SETTINGS}


class SymbolicVehicle:
    """A :class:`VehicleParameters` whose fields are given objects (tape or CasADi symbols,
    Pyomo variables), with the derived quantities (``l``, ``m_s``, ``h_vip``,
    ``unsprung_inertia``, ``suspension``, ``static_loads``) computed by the same property
    code: the car's equations written once run on it unchanged (:mod:`pyomo_lap.vehicle.car`).

    Parameters
    ----------
    p : VehicleParameters
        The values of the fields not in ``symbols`` (``name``, ``gravity``, an absent
        optional section).
    symbols : dict
        ``{field or dotted name: object}``.
    """

    l = VehicleParameters.l  # noqa: E741
    m_s = VehicleParameters.m_s
    h_vip = VehicleParameters.h_vip
    unsprung_inertia = VehicleParameters.unsprung_inertia
    suspension = VehicleParameters.suspension
    static_loads = VehicleParameters.static_loads

    def __init__(self, p: VehicleParameters, symbols: dict):
        self.numbers = p          # the car whose values the symbols stand for
        for k, v in p.model_dump().items():
            setattr(self, k, v)
        for k, v in symbols.items():
            setattr(self, field_of(k), v)
