"""The options of the optimal control problem, from their one declaration.

:data:`pyomo_lap.ocp.build.OCP_CONFIG` (a Pyomo ``ConfigDict``: name, default, domain, description
with the unit) is the single source of the OCP's options. This module derives from it:

* :func:`check_ocp_options`: the validation of user-given options, used by
  :func:`pyomo_lap.api.solve_sector` (``ocp_options=``) and ``pyomo-lap solve --ocp-option
  KEY=VALUE`` before anything is built;
* :func:`options_table`: the option table of docs/options.md (``pyomo-lap options --markdown``
  prints it; a test checks that docs/options.md holds exactly this table).
"""
from __future__ import annotations

from typing import Iterable, Optional

from ..util.domains import error_text
from .build import OCP_CONFIG, RETIRED_OPTIONS

__all__ = ["check_ocp_options", "options_table", "parse_ocp_options", "parse_option_value",
           "key_value_pairs", "CLI_OWNED"]

CLI_OWNED = ("model", "start", "length", "nfe", "ncp", "scheme", "periodic", "initial_speed",
             "limits")
"""OCP options that ``pyomo-lap solve`` and :func:`pyomo_lap.api.solve_sector` set from their
own arguments (``--model``, ``--start``, ... ``--full-lap`` for ``periodic``, ``--limit``);
``ocp_options`` holds the others. The model built does not depend on the solver named."""


def parse_option_value(text: str):
    """A command-line value: ``true``/``false`` -> bool, integers and floats -> numbers,
    ``a,b,c`` -> a tuple of these, anything else stays a string."""
    t = str(text).strip()
    if "," in t:
        return tuple(parse_option_value(v) for v in t.split(",") if v.strip())
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            continue
    return t


def key_value_pairs(items, what: str = "", example: str = "adherence=squared"):
    """``(key, value text)`` of each ``"KEY=VALUE"`` item (keys and values stripped).

    Raises
    ------
    ValueError
        An item without ``=`` or with an empty key: ``"<what><item>: expected KEY=VALUE,
        e.g. <example>"``.
    """
    for item in items or ():
        key, sep, val = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what}{item!r}: expected KEY=VALUE, e.g. {example}")
        yield key.strip(), val.strip()


def parse_ocp_options(items) -> dict:
    """``["KEY=VALUE", ...]`` (``pyomo-lap solve --ocp-option``) as a dict, each value read by
    :func:`parse_option_value`; check it with :func:`check_ocp_options`.

    Raises
    ------
    ValueError
        An item without ``=`` or with an empty key (the message names the item).
    """
    return {key: parse_option_value(val) for key, val in key_value_pairs(items)}


def check_ocp_options(options: Optional[dict], owned: Iterable[str] = CLI_OWNED) -> dict:
    """Validate OCP options against :data:`pyomo_lap.ocp.build.OCP_CONFIG`.

    Parameters
    ----------
    options : dict or None
        ``{name: value}``.
    owned : iterable of str
        Names that must not be given here (set by other arguments).

    Returns
    -------
    dict
        The options converted by their domains.

    Raises
    ------
    ValueError
        An unknown name (the message lists the valid ones), a name set elsewhere, or a value
        outside its domain (the message names the option, the value and what was expected).
    """
    out = {}
    owned = set(owned)
    valid = [k for k in OCP_CONFIG.keys() if k not in owned]
    for key, value in (options or {}).items():
        if key in owned:
            raise ValueError(f"OCP option {key!r} is set by its own argument (--{key.replace('_', '-')}"
                             f" / {key}=), not among the OCP options")
        if key not in OCP_CONFIG:
            if key in RETIRED_OPTIONS:
                new = RETIRED_OPTIONS[key]
                hint = (f"its weight in SI units follows from the car and the sector: "
                        f"pyomo_lap.ocp.common.penalty_weights; {new}=0 turns the penalty off"
                        if new.startswith("w_") else
                        "relative to the car's accelerations and the element length: "
                        "pyomo_lap.ocp.mesh")
                raise ValueError(f"OCP option {key!r}: replaced by the dimensionless {new} "
                                 f"({hint})")
            raise ValueError(f"OCP option {key!r}: unknown; expected one of {', '.join(valid)}")
        cfg = OCP_CONFIG()
        try:
            cfg[key] = value
        except (ValueError, TypeError) as exc:
            desc = OCP_CONFIG.get(key)._description or ""
            raise ValueError(f"OCP option {key} = {value!r}: not accepted ({error_text(exc)}); "
                             f"expected {desc}") from None
        out[key] = cfg[key]
    return out


def _domain(cv) -> str:
    d = cv.domain_name() or ""
    if d.startswith("<"):         # a lambda: the description says it
        return "see description"
    return d.replace("|", "\\|")


def options_table(skip: Iterable[str] = (), config=None, flags=None) -> str:
    """Options as a Markdown table: name, default, domain, description.

    Parameters
    ----------
    skip : iterable of str
        Names left out.
    config : pyomo.common.config.ConfigDict, optional
        The declaration (default :data:`pyomo_lap.ocp.build.OCP_CONFIG`).
    flags : callable, optional
        ``flags(name) -> str``: adds a column with the command line's spelling.
    """
    if config is None:
        config = OCP_CONFIG
    skip = set(skip)
    head = "| option | " + ("command line | " if flags else "") + "default | domain | description |"
    rows = [head, "|---" * (5 if flags else 4) + "|"]
    for key in config.keys():
        if key in skip:
            continue
        cv = config.get(key)
        desc = " ".join((cv._description or "").split()).replace("|", "\\|")
        flag = f"`{flags(key)}` | " if flags else ""
        rows.append(f"| `{key}` | {flag}`{cv.value()!r}` | {_domain(cv)} | {desc} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":     # pragma: no cover
    print(options_table(), end="")
