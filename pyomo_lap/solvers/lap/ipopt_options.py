"""IPOPT's options as the library documents them, and one option checked before any problem is
built: :func:`ipopt_options_documentation` (from ``print_options_documentation`` of the library
loaded by :mod:`pyomo_lap.solvers.lap.ipopt_c`), :func:`check_ipopt_option` (the library
decides, the documentation says what was expected).
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import pathlib
import re
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from .ipopt_c import (
    _LOCK,
    OPTIONS_URL,
    _option_candidates,
    _try_option,
    find_ipopt_library,
    ipopt_version,
    load_ipopt_library,
)
from .ipopt_problem import IpoptProblem

__all__ = ["IpoptOptionDoc", "IpoptOptionError", "ipopt_options_documentation",
           "check_ipopt_option", "close_matches"]

@dataclasses.dataclass(frozen=True)
class IpoptOptionDoc:
    """One option as the IPOPT library documents it (:func:`ipopt_options_documentation`).

    Attributes
    ----------
    name : str
    kind : str
        ``"real"``, ``"integer"`` or ``"string"``.
    description : str
        IPOPT's one-line description.
    valid_range : str
        As IPOPT states it (``"0 < tol"``, ``"0 <= print_level <= 12"``); ``""`` for a number
        without bounds and for strings.
    default : str
        As IPOPT prints it (``"1e-08"``, ``"mumps"``).
    values : tuple of str
        The values of a string option (empty for numbers and for any-text options).
    category : str
        IPOPT's category (``"Termination"``, ``"Linear Solver"`` ...).
    """

    name: str
    kind: str
    description: str
    valid_range: str = ""
    default: str = ""
    values: Tuple[str, ...] = ()
    category: str = ""

    def expected(self) -> str:
        """What a value must be, in words (``'an integer with 0 <= max_iter'``)."""
        if self.kind in ("integer", "real"):
            what = "an integer" if self.kind == "integer" else "a finite number"
            return what + (f" with {self.valid_range}" if self.valid_range else "")
        if self.values:
            return "one of " + ", ".join(repr(v) for v in self.values)
        return "a string"

    def described(self) -> str:
        """``' (IPOPT: "<description>")'``, or ``''`` for an option without one."""
        return f' (IPOPT: "{self.description}")' if self.description else ""


def _doc_number(text: str) -> str:
    """``10<sup>-08</sup>`` -> ``1e-08``, ``2.22045 &middot; 10<sup>-16</sup>`` ->
    ``2.22045e-16`` (numbers of IPOPT's doxygen output)."""
    m = re.fullmatch(r"(?:([-+]?[\d.]+)\s*&middot;\s*)?([-+]?)10<sup>([-+]?\d+)</sup>",
                     text.strip())
    return f"{m.group(2)}{m.group(1) or '1'}e{m.group(3)}" if m else text.strip()


def _parse_option_entry(chunk: str, category: str) -> Optional[IpoptOptionDoc]:
    r"""One ``\anchor OPT_<name>`` entry of IPOPT's doxygen option documentation."""
    lines = chunk.split("\n")
    name = lines[0][len("\\anchor OPT_"):].strip()
    head = re.match(r"<strong>(.*?)</strong>(?: \(<em>advanced</em>\))?(?::\s*(.*))?$",
                    lines[1] if len(lines) > 1 else "")
    body = chunk.split("<blockquote>", 1)[-1].split("</blockquote>", 1)[0]
    body = body.replace("&le;", "<=").replace("&ge;", ">=")
    kind = re.search(r"for this (real|integer|string) option", body)
    if not name or head is None or head.group(1) != name or kind is None:
        return None
    valid_range, default, values = "", "", ()
    if kind.group(1) == "string":
        d = re.search(r'The default value for this string option is "(.*?)"\.', body)
        default = d.group(1) if d else ""
        listed = body.split("Possible values:", 1)[1] if "Possible values:" in body else ""
        if listed.strip() and not listed.lstrip().startswith("-"):   # "yes, no"
            values = tuple(v.strip() for v in listed.strip().split(",") if v.strip())
        else:
            values = tuple(re.findall(r"^\s*- (\S+?):", listed, flags=re.M))
        values = () if "*" in values else values                     # any text
    else:
        r = re.search(r"The valid range for this \w+ option is (.*?) and its default value "
                      r"is (.*?)\.(?:\s|$)", body, flags=re.S)
        if r:
            rng = " ".join(r.group(1).split())
            valid_range = "" if rng == "unrestricted" else " ".join(
                _doc_number(w) if "sup>" in w else w for w in rng.split(" "))
            default = _doc_number(" ".join(r.group(2).split()))
    return IpoptOptionDoc(name=name, kind=kind.group(1),
                          description=" ".join((head.group(2) or "").split()),
                          valid_range=valid_range, default=default, values=values,
                          category=category)


def _parse_options_doxygen(text: str) -> Dict[str, IpoptOptionDoc]:
    """What IPOPT prints with ``print_options_documentation = yes`` and
    ``print_options_mode = doxygen``: name -> :class:`IpoptOptionDoc`."""
    out: Dict[str, IpoptOptionDoc] = {}
    category = ""
    for chunk in re.split(r"(?=^\\anchor OPT_|^\\subsection )", text, flags=re.M):
        if chunk.startswith("\\subsection "):
            parts = chunk.split("\n", 1)[0].split(" ", 2)
            category = parts[2].strip() if len(parts) > 2 else ""
        elif chunk.startswith("\\anchor OPT_"):
            doc = _parse_option_entry(chunk, category)
            if doc is not None:
                out[doc.name] = doc
    return out


_DOCS: Dict[str, Dict[str, IpoptOptionDoc]] = {}


def ipopt_options_documentation() -> Dict[str, IpoptOptionDoc]:
    """The options of the IPOPT library, as the library itself documents them.

    IPOPT prints the documentation of its options when asked (``print_options_documentation
    = yes``; ``print_options_mode = doxygen`` states each option's type, valid range, default
    and values in fixed sentences): a one-variable problem is solved once with ``max_iter = 0``
    and that documentation written to a temporary file (no console output, no ``ipopt.opt``
    read), parsed and kept for the process.

    Returns
    -------
    dict
        Option name -> :class:`IpoptOptionDoc` (about 290 for IPOPT 3.14, with the advanced
        ones). IPOPT leaves a few out (``sb``); :func:`check_ipopt_option` still accepts them.

    Raises
    ------
    IpoptLibraryNotFound
        See :func:`load_ipopt_library`.
    """
    key = str(find_ipopt_library())
    with _LOCK:
        if key in _DOCS:
            return _DOCS[key]
    prob = IpoptProblem(1, 0, [-1.0], [1.0], [], [], [], [], [0], [0],
                        objective=lambda x: float(x[0] * x[0]),
                        gradient=lambda x, out: out.__setitem__(slice(None), 2.0 * x),
                        hessian=lambda x, sigma, lam, out: out.__setitem__(0, 2.0 * sigma))
    for name, value in (("option_file_name", ""), ("print_level", 0), ("sb", "yes"),
                        ("max_iter", 0), ("print_options_documentation", "yes"),
                        ("print_options_mode", "doxygen"), ("print_advanced_options", "yes")):
        prob.add_option(name, value)
    fd, path = tempfile.mkstemp(prefix="pyomo_lap_ipopt_options_", suffix=".txt")
    os.close(fd)
    try:
        prob.set_output_file(path, print_level=3)
        prob.solve([0.5], catch_sigint=False)
        text = pathlib.Path(path).read_text(errors="replace")
    finally:
        os.unlink(path)
    with _LOCK:
        return _DOCS.setdefault(key, _parse_options_doxygen(text))


class IpoptOptionError(ValueError):
    """An option IPOPT refuses: ``name``, ``value``, ``text`` (what was expected) and, for an
    unknown name, ``suggestions`` (the closest known names; else None). The message is
    ``"<name> = <value>: <text>"``."""

    def __init__(self, name: str, value, text: str, suggestions=None):
        super().__init__(f"{name} = {value!r}: {text}")
        self.name, self.value, self.text = name, value, text
        self.suggestions = None if suggestions is None else list(suggestions)


def close_matches(name: str, names, n: int = 3) -> List[str]:
    """The names most like ``name`` (:func:`difflib.get_close_matches`, and the names that
    contain it or that it contains, for abbreviations like ``max_it``)."""
    names = sorted(set(names))
    out = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    if len(name) >= 4:
        out += [k for k in names if (name in k or k in name) and k not in out and len(k) >= 4]
    return out[:n]


def check_ipopt_option(name: str, value, extra_names=()) -> Tuple[str, Any]:
    """Check one option against the IPOPT library, before any problem is built.

    The library decides (the value is set on a never-solved one-variable problem, as
    :meth:`IpoptProblem.add_option` does); :func:`ipopt_options_documentation` says what was
    expected. Non-finite numbers are refused too (IPOPT takes ``nan`` and ``inf`` for most).

    Parameters
    ----------
    name : str
        IPOPT option name.
    value : str, bool, int or float
        As :meth:`IpoptProblem.add_option` takes it.
    extra_names : iterable of str
        Other valid names, only offered as close matches of an unknown name.

    Returns
    -------
    (kind, value)
        How IPOPT takes it: ``"str"``, ``"int"`` or ``"num"`` and the typed value.

    Raises
    ------
    IpoptOptionError (a ValueError)
        Unknown name (with the closest names), a value of the wrong type, outside the option's
        range, not among its values, or not finite: naming the option, the value and what
        was expected.
    """
    docs = ipopt_options_documentation()
    doc = docs.get(name)
    expected = f"expected {doc.expected()}{doc.described()}" if doc else ""
    try:
        typed, reasons = _try_option(load_ipopt_library(), name, value)
    except TypeError:
        raise IpoptOptionError(name, value, f"{expected or 'expected a str, bool, int or float'}"
                               f", not a {type(value).__name__}") from None
    nonfinite = any(k == "num" and not math.isfinite(v) for k, v in _option_candidates(value))
    if doc is not None and doc.kind != "string" and nonfinite:
        raise IpoptOptionError(name, value, f"not finite; {expected}")
    if typed is not None:
        return typed
    if doc is None:
        if not reasons or any("It is not a valid option" in r for r in reasons):
            near = close_matches(name, list(docs) + list(extra_names))
            hint = (f"did you mean {' or '.join(map(repr, near))}?" if near else
                    f"IPOPT's options: {OPTIONS_URL}")
            v = ".".join(map(str, ipopt_version()))
            raise IpoptOptionError(name, value, f"unknown option: IPOPT {v} has no option "
                                   f"{name!r}; {hint}", suggestions=near)
        why = next((r for r in reasons if ", but it is of type" not in r), reasons[0])
        raise IpoptOptionError(name, value, f"refused by IPOPT: {why}")
    try:
        fraction = doc.kind == "integer" and not isinstance(value, bool) and \
            not float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        fraction = False
    raise IpoptOptionError(name, value, f"not an integer; {expected}" if fraction else expected)
