r"""Parameters of the racecar of dymos's example (:class:`RacecarParameters`) and its file reader.

The car of ``dymos/examples/racecar`` (OpenMDAO dymos): a rigid two-track car with four
linear tyres whose forces are bounded by friction ellipses, load transfer through the
accelerations ``ax``, ``ay`` (lagged by first-order dynamics), downforce and drag, one signed
longitudinal command split between throttle (rear axle) and brakes (by a brake bias). Its
equations are in :mod:`pyomo_lap.vehicle.racecar_equations`, its optimal control problem in
:mod:`pyomo_lap.ocp.racecar` (the vehicle model ``"racecar"``); the bundled
file is ``models/dymos_racecar.toml``, where every value carries its unit and its source.

Vehicle files of this car are TOML with a top-level ``model = "racecar"`` (the vehicle model
they are for: :func:`pyomo_lap.vehicle.car.load_vehicle` reads them with
:func:`read_racecar_file`, ``pyomo-lap solve --vehicle <file>`` builds that model) and the
sections and keys of :data:`RACECAR_SECTIONS`. Every value is a finite number in SI units
within the range of its field; unknown or missing keys and values out of range are refused,
each problem naming the file, the ``[section] key``, the value and what was expected.

Layer: vehicle (imports pydantic and the standard library only).
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..util.errors import nested_too_deep
from .files import VehicleFileError, bound_texts

__all__ = ["RacecarParameters", "RacecarFileError", "read_racecar_file", "RACECAR_SECTIONS",
           "RACECAR_MODEL_NAMES", "RACECAR_KEYS", "check_racecar"]

RACECAR_MODEL_NAMES = ("racecar",)
"""Values of a vehicle file's top-level ``model`` read by :func:`read_racecar_file`."""


def _f(description: str, unit: str, **ranges):
    return Field(description=f"{description} [{unit}]", json_schema_extra={"unit": unit}, **ranges)


class RacecarParameters(BaseModel):
    """The racecar's parameters (SI units), validated on construction.

    Attributes
    ----------
    name, description : str
    model : str
        The vehicle model the car is for (``"racecar"``).
    M, Iz : float
        Mass [kg], yaw moment of inertia [kg m^2].
    a, b, tw, h : float
        Centre of gravity to the front axle and to the rear axle, half the track, height of
        the centre of gravity [m].
    width : float
        Width kept inside the track's edges [m]: the bound of the lateral offset is the
        track's half width less ``width / 2`` (dymos: 0, its bound ``|n| <= 4 m`` applies to
        the centre of gravity).
    ClA, CdA : float
        Downforce and drag coefficients times the reference area [m^2].
    CoP : float
        Centre of pressure, distance behind the front axle [m] (rear share of the downforce
        ``CoP / (a + b)``).
    rho : float
        Air density [kg/m^3].
    chi : float
        Front share of the roll stiffness [-] (of the lateral load transfer).
    tau_x, tau_y : float
        Time constants of the longitudinal and lateral load transfer [s].
    k_lambda : float
        Lateral stiffness of a tyre per unit load [1/rad]: ``F = N k_lambda (slip angle)``.
    mu0_x, mu0_y : float
        Longitudinal and lateral friction coefficients at the static load [-].
    k_mu : float
        Load sensitivity of the friction coefficients [-]: ``mu = mu0 + k_mu N / N0``.
    beta : float
        Brake bias, front share of the braking command [-].
    P_max : float
        Power limit of ``V * (sum of the longitudinal tyre forces)`` [W].
    g : float
        Gravitational acceleration [m/s^2] (dymos: 9.8).

    Raises
    ------
    pydantic.ValidationError (a ValueError)
        A value of the wrong type, out of its range, or a centre of pressure outside the
        wheelbase; every problem names the field.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="name of the car")
    description: str = Field(default="", description="the vehicle file's description")
    model: str = Field(default="racecar", description="the vehicle model the car is for")
    M: float = _f("mass", "kg", gt=0.0, le=1.0e4)
    Iz: float = _f("yaw moment of inertia", "kg m^2", gt=0.0, le=1.0e5)
    a: float = _f("centre of gravity to the front axle", "m", gt=0.0, le=10.0)
    b: float = _f("centre of gravity to the rear axle", "m", gt=0.0, le=10.0)
    tw: float = _f("half track (centre line to a tyre's contact point)", "m", gt=0.0, le=2.5)
    h: float = _f("height of the centre of gravity", "m", ge=0.0, le=3.0)
    width: float = _f("width kept inside the track's edges (0: the centre of gravity's bound)",
                      "m", ge=0.0, le=5.0)
    ClA: float = _f("downforce coefficient times area", "m^2", ge=0.0, le=20.0)
    CdA: float = _f("drag coefficient times area", "m^2", ge=0.0, le=20.0)
    CoP: float = _f("centre of pressure behind the front axle (<= a + b)", "m", ge=0.0, le=20.0)
    rho: float = _f("air density", "kg/m^3", ge=0.0, le=1.5)
    chi: float = _f("front share of the roll stiffness", "-", ge=0.0, le=1.0)
    tau_x: float = _f("time constant of the longitudinal load transfer", "s", gt=0.0, le=10.0)
    tau_y: float = _f("time constant of the lateral load transfer", "s", gt=0.0, le=10.0)
    k_lambda: float = _f("lateral tyre stiffness per unit load", "1/rad", gt=0.0, le=500.0)
    mu0_x: float = _f("longitudinal friction coefficient at the static load", "-", ge=0.1, le=5.0)
    mu0_y: float = _f("lateral friction coefficient at the static load", "-", ge=0.1, le=5.0)
    k_mu: float = _f("load sensitivity of the friction coefficients", "-", ge=-1.0, le=1.0)
    beta: float = _f("brake bias, front share of the braking command", "-", ge=0.0, le=1.0)
    P_max: float = _f("power limit (W, not kW)", "W", ge=1.0e3, le=1.0e7)
    g: float = _f("gravitational acceleration", "m/s^2", ge=9.7, le=9.9)

    @model_validator(mode="after")
    def _centre_of_pressure_on_the_wheelbase(self):
        if self.CoP > self.a + self.b:
            raise ValueError(f"CoP = {self.CoP!r} m: expected a centre of pressure on the "
                             f"wheelbase, <= a + b = {self.a + self.b:g} m")
        if self.model not in RACECAR_MODEL_NAMES:
            raise ValueError(f"model = {self.model!r}: expected one of {RACECAR_MODEL_NAMES}")
        return self

    # -- the interface the rest of the package uses (names, values, hashes)
    @property
    def wheelbase(self) -> float:
        """The wheelbase a + b [m]."""
        return self.a + self.b

    @property
    def gravity(self) -> float:
        """``g`` [m/s^2] (the name the other cars use)."""
        return self.g

    def as_dict(self) -> dict:
        """All fields by name (the run's hash, ``summary.json``)."""
        return self.model_dump()

    def value(self, key: str) -> float:
        """A parameter by its dotted name (``"mass.M"``) or field name (``"M"``).

        Raises
        ------
        ValueError
            An unknown name (the message lists the known ones).
        """
        field = _FIELD_OF.get(key, key)
        if field not in RACECAR_KEYS.values():
            raise ValueError(f"unknown racecar parameter {key!r}: expected one of "
                             f"{', '.join(RACECAR_KEYS)}")
        return getattr(self, field)

    def parameter_values(self) -> dict:
        """``{dotted name: value}`` of every parameter (the workbook's vehicle sheet,
        ``summary.json``'s ``vehicle_parameters``)."""
        return {k: getattr(self, f) for k, f in RACECAR_KEYS.items()}

    def replace(self, changes: dict) -> "RacecarParameters":
        """A copy with ``{dotted or field name: value}`` changed, validated."""
        data = self.model_dump()
        for k, v in changes.items():
            field = _FIELD_OF.get(k, k)
            if field not in data:
                raise ValueError(f"unknown racecar parameter {k!r}")
            data[field] = v
        return RacecarParameters(**data)


RACECAR_SECTIONS = {
    "mass": {"M": "M", "Iz": "Iz"},
    "geometry": {"a": "a", "b": "b", "tw": "tw", "h": "h", "width": "width"},
    "aero": {"ClA": "ClA", "CdA": "CdA", "CoP": "CoP", "rho": "rho"},
    "load_transfer": {"chi": "chi", "tau_x": "tau_x", "tau_y": "tau_y"},
    "tyre": {"k_lambda": "k_lambda", "mu0_x": "mu0_x", "mu0_y": "mu0_y", "k_mu": "k_mu"},
    "powertrain": {"P_max": "P_max", "beta": "beta"},
    "environment": {"g": "g"},
}
"""Sections and keys of a racecar vehicle file -> :class:`RacecarParameters` fields."""

RACECAR_KEYS = {f"{sec}.{key}": field for sec, keys in RACECAR_SECTIONS.items()
                for key, field in keys.items()}
"""Dotted parameter names (``"mass.M"``) -> fields."""
_FIELD_OF = {**RACECAR_KEYS}
_WHERE = {field: f"[{sec}] {key}" for sec, keys in RACECAR_SECTIONS.items()
          for key, field in keys.items()}
_TOP = ("model", "name", "description")


class RacecarFileError(VehicleFileError):
    """A racecar vehicle file that cannot be used; ``problems`` lists one line per problem,
    each naming the file, the ``[section] key``, the value and what was expected (a
    :class:`~pyomo_lap.vehicle.files.VehicleFileError`)."""


def _expected(field: str) -> str:
    info = RacecarParameters.model_fields[field]
    rng = " and ".join(x for x in bound_texts(info) if x)
    return f"expected a number {rng} ({info.description})"


def read_racecar_file(path) -> RacecarParameters:
    """Read and validate a racecar vehicle file (TOML, :data:`RACECAR_SECTIONS`).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    RacecarParameters
        ``name`` defaults to the file's stem.

    Raises
    ------
    RacecarFileError (a ValueError)
        Missing file, invalid TOML, unknown or missing sections and keys, values that are not
        finite numbers or out of range; all problems at once, each naming ``[section] key``,
        the value and what was expected.
    """
    path = Path(path)
    if not path.is_file():
        raise RacecarFileError(path, ["file not found" if not path.exists() else "not a file"])
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RacecarFileError(path, [f"not a valid TOML text file: {exc}"]) from None
    except RecursionError:
        raise RacecarFileError(path, [nested_too_deep(
            "sections of numbers (models/dymos_racecar.toml)")]) from None
    problems = []
    kw = {"name": data.get("name", path.stem), "description": data.get("description", ""),
          "model": data.get("model", "racecar")}
    for k, v in data.items():
        if k in _TOP:
            if not isinstance(v, str):
                problems.append(f"{k} = {v!r}: expected a text")
            continue
        if k not in RACECAR_SECTIONS:
            problems.append(f"unknown {'section [' + k + ']' if isinstance(v, dict) else 'key ' + k}; "
                            f"expected the sections {', '.join(f'[{s}]' for s in RACECAR_SECTIONS)} "
                            f"and the keys {', '.join(_TOP)}")
            continue
        if not isinstance(v, dict):
            problems.append(f"{k} = {v!r}: expected a table (a [section] with keys)")
            continue
        for key, val in v.items():
            if key not in RACECAR_SECTIONS[k]:
                problems.append(f"unknown field [{k}] {key} = {val!r}; expected one of: "
                                f"{', '.join(RACECAR_SECTIONS[k])} (a typo?)")
                continue
            field = RACECAR_SECTIONS[k][key]
            if isinstance(val, bool) or not isinstance(val, (int, float)):
                problems.append(f"[{k}] {key} = {val!r}: {_expected(field)}")
                continue
            kw[field] = float(val)
    for sec, keys in RACECAR_SECTIONS.items():
        for key, field in keys.items():
            if field not in kw and not (isinstance(data.get(sec), dict) and key in data[sec]):
                problems.append(f"missing field [{sec}] {key} "
                                f"({RacecarParameters.model_fields[field].description})")
    if problems:
        raise RacecarFileError(path, problems)
    try:
        return RacecarParameters(**kw)
    except ValidationError as exc:
        out = []
        for e in exc.errors():
            field = str(e["loc"][0]) if e["loc"] else ""
            where = _WHERE.get(field, field or "(file)")
            msg = e["msg"].removeprefix("Value error, ")
            if field in RacecarParameters.model_fields and field not in _TOP and field != "name":
                out.append(f"{where} = {e.get('input')!r}: {_expected(field)}")
            else:
                out.append(f"{where}: {msg}" if where != "(file)" else msg)
        raise RacecarFileError(path, out) from None


def check_racecar(vehicle) -> None:
    """ValueError unless ``vehicle`` is a :class:`RacecarParameters`."""
    if not isinstance(vehicle, RacecarParameters):
        raise ValueError(f"model 'racecar' needs a racecar vehicle file (top-level model = "
                         f"\"racecar\", e.g. models/dymos_racecar.toml), got the car "
                         f"{getattr(vehicle, 'name', vehicle)!r}")
