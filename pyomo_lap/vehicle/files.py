"""The vehicle-file reader: TOML files with the sections and keys of ``models/fsae.toml``
(:data:`pyomo_lap.vehicle.schema.SECTIONS`) read into a
:class:`~pyomo_lap.vehicle.schema.VehicleParameters`; unknown sections or keys, missing keys,
strings, booleans, ``nan`` and ``inf`` are refused, and every problem of a file is reported at
once, each naming the file, the ``[section] key``, the value and what was expected
(:class:`VehicleFileError`); the bounds of a field as numbers and texts (:func:`field_bounds`,
:func:`bound_texts`).
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal, Optional

from pydantic import ConfigDict, Field, ValidationError, create_model

from ..util.errors import FileProblemsError, nested_too_deep
from .limits import parse_limits
from .schema import (
    OPTIONAL_KEYS,
    OPTIONAL_SECTIONS,
    SECTIONS,
    SETTINGS,
    VehicleParameters,
)

__all__ = ["VehicleFileError", "read_vehicle_file", "field_bounds", "bound_texts", "FILE_MODELS"]

_TOP_LEVEL = ("model", "name", "description")
#: the vehicle models that read a file of this schema (its optional top-level ``model = "..."``)
FILE_MODELS = ("full", "single-track", "multibody")
_ALL_SECTIONS = {sec: {**SECTIONS.get(sec, {}), **OPTIONAL_SECTIONS.get(sec, {}),
                       **SETTINGS.get(sec, {})}
                 for sec in {**SECTIONS, **OPTIONAL_SECTIONS, **SETTINGS}}
_LOCATION = {attr: (sec, key) for sec, keys in _ALL_SECTIONS.items() for key, attr in keys.items()}


class VehicleFileError(FileProblemsError):
    """A vehicle file that cannot be used. ``problems`` lists one line per problem, each
    naming the file, the ``[section] key``, the value and what was expected."""

    kind = "vehicle file"


def _where(loc: tuple) -> str:
    """``('mass', 'total')`` -> ``[mass] total``; a flat field name -> its file location."""
    loc = tuple(str(x) for x in loc)
    if len(loc) == 1 and loc[0] in _LOCATION:
        loc = _LOCATION[loc[0]]
    if len(loc) == 2:
        return f"[{loc[0]}] {loc[1]}"
    if len(loc) == 1:
        return loc[0] if loc[0] in _TOP_LEVEL else f"[{loc[0]}]"
    return ".".join(loc) or "(file)"


def _describe(attr: Optional[str]) -> str:
    info = VehicleParameters.model_fields.get(attr) if attr else None
    return f" ({info.description})" if info is not None and info.description else ""


_BOUND_WORDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
                "less_than_equal": "<="}


def field_bounds(info) -> tuple:
    """The bounds of a pydantic field (``model_fields[name]``) from its metadata:
    ``(lower, upper)``, each ``(word, value)`` (``(">", 0)``, ``("<=", 1e4)``) or None."""
    lo = hi = None
    for meta in info.metadata:
        for key, word in (("gt", ">"), ("ge", ">=")):
            if getattr(meta, key, None) is not None:
                lo = (word, getattr(meta, key))
        for key, word in (("lt", "<"), ("le", "<=")):
            if getattr(meta, key, None) is not None:
                hi = (word, getattr(meta, key))
    return lo, hi


def bound_texts(info) -> tuple:
    """:func:`field_bounds` as texts: ``("> 0", "<= 10000")``, None for an open side."""
    return tuple(None if b is None else f"{b[0]} {b[1]:g}" for b in field_bounds(info))


def _expected(err: dict, attr: Optional[str]) -> str:
    """What was expected, from a pydantic error dict."""
    t, ctx = err["type"], err.get("ctx") or {}
    if t in _BOUND_WORDS:
        info = VehicleParameters.model_fields.get(attr) if attr else None
        lo, hi = bound_texts(info) if info is not None else (None, None)
        if lo and hi:
            return f"expected a value {lo} and {hi}"
        bound = next(iter(ctx.values())) if ctx else "?"
        return f"expected a value {_BOUND_WORDS[t]} {bound}"
    if t in ("float_type", "float_parsing", "int_type"):
        return "expected a number"
    if t == "finite_number":
        return "expected a finite number"
    if t in ("string_type", "string_too_short"):
        return "expected a non-empty string in quotes"
    if t == "value_error":
        text = str(ctx.get("error", err["msg"]))
        own = f"{attr} = {err.get('input')!r}: "      # a field's own message names it: once
        return text[len(own):] if attr and text.startswith(own) else text
    return err["msg"]


def _format(err: dict, data: dict) -> str:
    loc = tuple(err["loc"])
    t = err["type"]
    if not loc and t == "value_error":        # a check across sections (model validator)
        return str((err.get("ctx") or {}).get("error", err["msg"]))
    if len(loc) == 1 and loc[0] in _LOCATION:
        attr = loc[0]
    elif len(loc) == 2 and loc[0] in _ALL_SECTIONS:
        attr = _ALL_SECTIONS[loc[0]].get(loc[1])
    else:
        attr = None
    where = _where(loc)
    if t == "missing":
        if len(loc) == 1 and loc[0] in SECTIONS:
            return f"missing section {where} (keys {', '.join(SECTIONS[loc[0]])})"
        return f"missing field {where}{_describe(attr)}"
    if t == "extra_forbidden":
        if len(loc) == 1:
            what = (f"unknown section {where}" if isinstance(err.get("input"), dict) else
                    f"unknown top-level key {loc[0]} = {err.get('input')!r}")
            return (f"{what}; expected the sections {', '.join(f'[{s}]' for s in SECTIONS)}, "
                    f"optionally {', '.join(f'[{s}]' for s in OPTIONAL_SECTIONS)}, "
                    f"and the keys {', '.join(_TOP_LEVEL)}")
        allowed = ", ".join(_ALL_SECTIONS.get(loc[0], {}))
        return f"unknown field {where} = {err.get('input')!r}; expected one of: {allowed} (a typo?)"
    if t in ("model_type", "dict_type"):
        return f"{where} = {err.get('input')!r}: expected a table (a [section] with keys)"
    return f"{where} = {err.get('input')!r}: {_expected(err, attr)}{_describe(attr)}"


def _section_model(section: str):
    keys = {**SECTIONS, **OPTIONAL_SECTIONS}.get(section, {})
    info = VehicleParameters.model_fields
    fields = {}
    for key, attr in keys.items():
        desc = info[attr].description
        fields[key] = ((Optional[float], Field(None, description=desc))
                       if f"{section}.{key}" in OPTIONAL_KEYS else (float, Field(description=desc)))
    for key, attr in SETTINGS.get(section, {}).items():
        ann = info[attr].annotation
        if "tuple" in str(ann):
            ann = Optional[list[float]]
        fields[key] = (Optional[ann] if ann is not None else ann, Field(None, description=info[attr].description))
    return create_model(f"{section.capitalize()}Section",
                        __config__=ConfigDict(extra="forbid", strict=True, allow_inf_nan=False),
                        **fields)


def _file_model():
    fields = {sec: (_section_model(sec), ...) for sec in SECTIONS}
    fields.update({sec: (Optional[_section_model(sec)], None) for sec in OPTIONAL_SECTIONS})
    fields.update({sec: (Optional[_section_model(sec)], None) for sec in SETTINGS
                   if sec not in SECTIONS})
    fields["limits"] = (Optional[dict[str, str | float]], None)   # checked by the reader
    fields["model"] = (Optional[Literal[FILE_MODELS]], None)   # the model the car is for
    fields["name"] = (Optional[str], None)
    fields["description"] = (str, "")
    return create_model("VehicleFile", __config__=ConfigDict(extra="forbid", strict=True),
                        **fields)


_VehicleFile = _file_model()


def read_vehicle_file(path) -> VehicleParameters:
    """Read and validate a vehicle file (TOML, layout :data:`SECTIONS`).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    VehicleParameters
        ``name`` defaults to the file stem.

    Raises
    ------
    VehicleFileError (a ValueError)
        The file is missing, not TOML, has unknown or missing sections or keys, a value that
        is not a finite number, out of its range or inconsistent with another value. All
        problems are listed, each with the file, the ``[section] key``, the value and what
        was expected.
    """
    path = Path(path)
    if not path.is_file():
        raise VehicleFileError(path, ["file not found" if not path.exists() else "not a file"])
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise VehicleFileError(path, [f"not a text (UTF-8) file: {exc.reason}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise VehicleFileError(path, [f"not a valid TOML file: {exc}"]) from None
    except RecursionError:
        raise VehicleFileError(path, [nested_too_deep(
            "sections of numbers ([mass] total = 250.0 ..., models/fsae.toml)")]) from None
    try:
        parsed = _VehicleFile.model_validate(data)
    except ValidationError as exc:
        raise VehicleFileError(path, [_format(e, data) for e in exc.errors()]) from None
    kw = {"name": parsed.name or path.stem, "description": parsed.description}
    for sec in SECTIONS:
        section = getattr(parsed, sec)
        for key, attr in SECTIONS[sec].items():
            if getattr(section, key) is not None:
                kw[attr] = getattr(section, key)
    for sec, keys in SETTINGS.items():
        section = getattr(parsed, sec)
        for key, attr in keys.items() if section is not None else ():
            value = getattr(section, key)
            if value is not None:
                kw[attr] = tuple(value) if isinstance(value, list) else value
    for sec, keys in OPTIONAL_SECTIONS.items():
        section = getattr(parsed, sec)
        if section is not None:
            kw.update({attr: getattr(section, key) for key, attr in keys.items()})
    kw["limits"] = _file_limits(path, parsed.limits)
    try:
        return VehicleParameters(**kw)
    except ValidationError as exc:
        raise VehicleFileError(path, [_format(e, data) for e in exc.errors()]) from None


def _file_limits(path, table) -> Optional[dict]:
    """A car file's ``[limits]`` in SI (J, kg), or None; VehicleFileError naming each wrong
    ``[limits] name = value``."""
    problems, out = [], {}
    for name, value in (table or {}).items():
        try:
            out.update(parse_limits({name: value}))
        except ValueError as exc:
            problems.append(f"[limits] {name} = {value!r}: {exc}")
    if problems:
        raise VehicleFileError(path, problems)
    return out or None
