"""A sweep's cases: the vehicle parameters a sweep may set (:func:`parameter_names`,
:func:`resolve_parameter`), grids of values (``--set``, :func:`parse_set`), CSV files of cases
(:func:`read_cases_csv`), the cases and their ids (:func:`sweep_cases`, :func:`case_id`) and
their checks before anything runs (:func:`check_cases`, :class:`SweepSpecError`).
"""
from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

from ..api import job_options
from ..ocp.options import check_ocp_options
from ..track.loading import available_tracks
from ..vehicle.car import load_vehicle
from ..vehicle.files import _format
from ..vehicle.schema import SECTIONS, VehicleParameters

__all__ = ["parse_set", "parameter_names", "resolve_parameter", "sweep_cases", "read_cases_csv",
           "case_id", "check_cases", "SweepSpecError", "STATUSES", "AXES"]


STATUSES = ("solved", "failed", "invalid", "error", "lost")


AXES = ("track", "vehicle")
"""Axes of a sweep that are not vehicle parameters."""


_NOT_SWEPT = ("out_dir", "tee", "track", "vehicle", "warm_start_from")
"""Job options that a sweep sets itself (the out_dir of each case) or takes as axes."""


class SweepSpecError(ValueError):
    """A sweep specification that cannot be run (unknown parameter, empty range, a value
    the vehicle schema refuses, a bad CSV of cases); raised before anything runs."""


# ---------------------------------------------------------------------------------------
# parameter names
# ---------------------------------------------------------------------------------------
def parameter_names() -> list:
    """The sweepable vehicle parameters, as the vehicle file names them (``mass.total``)."""
    return [f"{sec}.{key}" for sec, keys in SECTIONS.items() for key in keys]


def resolve_parameter(name: str):
    """``(file name, VehicleParameters attribute)`` of a parameter given as ``section.key``,
    a key found in one section only, or an attribute name.

    Raises
    ------
    SweepSpecError
        Unknown or ambiguous name; the message lists the valid names.
    """
    name = str(name).strip()
    matches = []
    for sec, keys in SECTIONS.items():
        for key, attr in keys.items():
            full = f"{sec}.{key}"
            if name in (full, f"[{sec}] {key}"):
                return full, attr
            if name == key or name == attr:
                matches.append((full, attr))
    matches = sorted(set(matches))
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise SweepSpecError(f"parameter {name!r} is ambiguous: "
                             f"{' or '.join(m[0] for m in matches)}")
    raise SweepSpecError(f"unknown parameter {name!r}: expected track, vehicle or a vehicle "
                         f"parameter ({', '.join(parameter_names())}; the key alone where it "
                         "is unique, e.g. total, Cx)")


# ---------------------------------------------------------------------------------------
# the specification
# ---------------------------------------------------------------------------------------
def _number(text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise SweepSpecError(f"{what}: {text.strip()!r} is not a number") from None
    if not math.isfinite(x):
        raise SweepSpecError(f"{what}: {text.strip()!r} is not a finite number")
    return x


def _values(text: str, what: str) -> list:
    """``'250:300:10'`` (start:stop:step, stop included), ``'2.5,3.0,3.5'`` or ``'240'``."""
    text = text.strip()
    if not text:
        raise SweepSpecError(f"{what}: no values (expected a list a,b,c or a range "
                             "start:stop:step)")
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise SweepSpecError(f"{what}: range {text!r}: expected start:stop:step")
        a, b, step = (_number(x, what) for x in parts)
        if step == 0 or (b - a) / step < 0:
            raise SweepSpecError(f"{what}: range {text!r} is empty (step {step:g} does not lead "
                                 f"from {a:g} to {b:g})")
        n = int(math.floor((b - a) / step + 1e-9)) + 1
        if n > 100000:
            raise SweepSpecError(f"{what}: range {text!r} has {n} values (at most 100000)")
        return [round(a + k * step, 12) for k in range(n)]
    return [_number(x, what) for x in text.split(",")]


def parse_set(items) -> dict:
    """``['mass.total=250:300:10', 'Cx=0.8,0.9', 'track=a,b']`` ->
    ``{'mass.total': [250.0, ..., 300.0], 'aero.Cx': [0.8, 0.9], 'track': ['a', 'b']}``.

    Raises
    ------
    SweepSpecError
        A value without ``=``, an unknown parameter, an empty range, a value that is not a
        number, a parameter given twice.
    """
    axes = {}
    for item in items or ():
        if "=" not in item:
            raise SweepSpecError(f"--set {item!r}: expected NAME=VALUES, e.g. mass.total=250:300:10 "
                                 "or Cx=0.8,0.9")
        name, text = item.split("=", 1)
        name = name.strip()
        if name in AXES:
            values = [v.strip() for v in text.split(",") if v.strip()]
            if not values:
                raise SweepSpecError(f"--set {item!r}: no {name} given")
            key = name
        else:
            key, _ = resolve_parameter(name)
            values = _values(text, f"--set {name}")
        if key in axes:
            raise SweepSpecError(f"--set: {key} is given twice")
        if len(set(values)) != len(values):
            raise SweepSpecError(f"--set {item!r}: a value is repeated")
        axes[key] = values
    return axes


def read_cases_csv(path) -> list:
    """The cases of a CSV file: one dict per row ``{column: value}``, columns resolved to
    parameter names (``track``, ``vehicle`` kept as text, empty cells left out).

    Raises
    ------
    SweepSpecError
        Missing file, no rows, an unknown column, a cell that is not a number.
    """
    path = Path(path)
    if not path.is_file():
        raise SweepSpecError(f"cases file {str(path)!r} not found")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise SweepSpecError(f"cases file {path}: expected a header row and at least one case")
    header = [h.strip() for h in rows[0]]
    keys = []
    for h in header:
        if h in AXES:
            keys.append(h)
            continue
        try:
            keys.append(resolve_parameter(h)[0])
        except SweepSpecError as exc:
            raise SweepSpecError(f"cases file {path}, column {h!r}: {exc}") from None
    if len(set(keys)) != len(keys):
        raise SweepSpecError(f"cases file {path}: a parameter has two columns ({', '.join(header)})")
    cases = []
    for line, r in enumerate(rows[1:], start=2):
        case = {}
        for key, h, cell in zip(keys, header, r + [""] * (len(keys) - len(r))):
            cell = cell.strip()
            if not cell:
                continue
            case[key] = cell if key in AXES else _number(cell, f"cases file {path}, line {line}, "
                                                               f"column {h}")
        cases.append(case)
    return cases


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _where(x) -> str:
    """A track or vehicle as the workers get it: a file as its absolute path, a name as is."""
    s = str(x)
    p = Path(s).expanduser()
    if p.suffix.lower() in (".csv", ".json", ".toml") and p.exists():
        return str(p.resolve())
    return s


def case_id(case: dict, job: dict) -> str:
    """The case's id: a hash of its track, vehicle, parameter values and job options (the same
    case of the same job has the same id in every sweep)."""
    text = json.dumps({"track": case["track"], "vehicle": case["vehicle"],
                       "params": case["params"], "job": job}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sweep_cases(axes: Optional[dict] = None, cases: Optional[list] = None, *,
                track="nordschleife", vehicle="fsae", job: Optional[dict] = None) -> list:
    """The cases of a sweep, in order: the grid of ``axes`` (the last axis varies fastest),
    or each of ``cases`` (dicts from :func:`read_cases_csv`), every one with the base
    ``track`` and ``vehicle`` unless it sets them. Each case: ``{'index', 'id', 'track',
    'vehicle', 'params': {file name: value}}``."""
    job = job or {}
    if axes and cases:
        raise SweepSpecError("give either a grid (--set) or a file of cases (--cases), not both")
    if cases is None:
        axes = dict(axes or {})
        names = list(axes)
        combos = itertools.product(*(axes[n] for n in names)) if names else [()]
        cases = [dict(zip(names, combo)) for combo in combos]
    out = []
    for k, c in enumerate(cases):
        case = {"index": k, "track": _where(c.get("track", track)),
                "vehicle": _where(c.get("vehicle", vehicle)),
                "params": {n: float(v) for n, v in c.items() if n not in AXES}}
        case["id"] = case_id(case, job)
        out.append(case)
    ids = [c["id"] for c in out]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise SweepSpecError(f"two cases are the same (ids {', '.join(dup)}): each case once")
    return out


def _base_vehicles(cases: list) -> dict:
    out = {}
    for c in cases:
        v = c["vehicle"]
        if v not in out:
            try:
                out[v] = v if isinstance(v, VehicleParameters) else load_vehicle(v)
            except (ValueError, OSError) as exc:
                raise SweepSpecError(f"vehicle {v!r}: {exc}") from None
    return out


def _case_vehicle(base, params: dict):
    """``base`` (VehicleParameters) with a case's parameter values (``section.key`` names);
    raises the schema's ValueError for values it refuses."""
    return base.replace(**{resolve_parameter(n)[1]: v for n, v in params.items()}) if params else base


def _schema_message(exc) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(_format(e, {}) for e in exc.errors())
    return str(exc)


def check_cases(cases: list, job: dict) -> None:
    """Refuse, before anything runs, a sweep that cannot run: the job's options, every track
    and vehicle, and every swept value set alone on each base vehicle (the vehicle schema's
    ranges and the cross-field rules with the base values). A combination of values that is
    refused only together (e.g. unsprung mass above the total mass, both swept) is a case
    that fails with status ``invalid``, not a refusal.

    Raises
    ------
    SweepSpecError
        Every problem found, one line each.
    """
    if not cases:
        raise SweepSpecError("the sweep has no cases")
    try:
        cfg = job_options({k: v for k, v in job.items()})
        check_ocp_options(cfg.ocp_options)
    except ValueError as exc:
        raise SweepSpecError(str(exc)) from None
    problems = []
    for t in sorted({c["track"] for c in cases}):
        if not (t in available_tracks() or Path(t).is_file()):
            problems.append(f"track {t!r}: neither a bundled track ({', '.join(available_tracks())}) "
                            "nor a file")
    try:
        bases = _base_vehicles(cases)
    except SweepSpecError as exc:
        problems.append(str(exc))
        bases = {}
    seen = set()
    for c in cases:
        base = bases.get(c["vehicle"])
        if base is None:
            continue
        for name, value in c["params"].items():
            key = (str(c["vehicle"]), name, value)
            if key in seen:
                continue
            seen.add(key)
            try:
                _case_vehicle(base, {name: value})
            except ValueError as exc:
                problems.append(f"{name} = {value:g}: refused by the vehicle schema "
                                f"({_schema_message(exc)})")
    if problems:
        raise SweepSpecError(problems[0] if len(problems) == 1 else
                             f"{len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems))
