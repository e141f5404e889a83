"""The arrays of a results folder's ``solution.npz`` (:data:`SOLUTION_ARRAYS`, the one place
that says what the writer writes: :func:`pyomo_lap.results.table.solution_arrays` and
:func:`pyomo_lap.api.warm_start.multiplier_arrays`) and its checked reader
(:func:`read_solution`), used by the warm starts and by ``export``.

The file is checked before any array is loaded: its SHA-256 against the folder's manifest
(:mod:`pyomo_lap.folders.manifest`; a folder without a manifest entry is checked on its
content only), then the zip's member list and each member's ``.npy`` header (name, dtype,
shape, read with ``numpy.lib.format`` without reading the data), then the values of ``s``
and whether any variable has a value. Every problem is one line
(:class:`SolutionFileError`); an unknown array is never loaded.
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np

from ..folders.manifest import _sha256, read_manifest
from ..folders.results_folder import SOLUTION_FILE
from ..util.errors import FileProblemsError

__all__ = ["SOLUTION_ARRAYS", "SIZE_PER_POINT", "SolutionFileError", "read_solution"]

SOLUTION_ARRAYS = (
    (re.compile(r"s"), "f", "the mesh points [m], increasing"),
    (re.compile(r"var:.+"), "f", "a variable's values in index order"),
    (re.compile(r"(dual|zL|zU):.+"), "f", "a component's multipliers"),
    (re.compile(r"(dual|zL|zU)s:.+"), "f", "the mesh points of a component's multipliers [m]"),
    (re.compile(r"(dual|zL|zU)r:.+"), "U", "the rest of each index of a component's multipliers"),
)
"""``(name pattern, dtype kind, meaning)`` of every array of :data:`SOLUTION_FILE`; each is
one-dimensional (``f``: float64, ``U``: text)."""

SIZE_PER_POINT = 64
"""The most entries of one array per mesh point of ``s`` [-] (a component indexed by the
mesh and a few other indices, such as the four wheels)."""


class SolutionFileError(FileProblemsError):
    """A ``solution.npz`` that cannot be used: one line per problem."""

    kind = "solution file"


def _expected(name: str):
    """``(dtype kind, meaning)`` of an array ``name``, or None when the writer writes none."""
    for pattern, kind, meaning in SOLUTION_ARRAYS:
        if pattern.fullmatch(name):
            return kind, meaning
    return None


def _headers(f: Path, problems: list) -> dict:
    """``{name: (shape, dtype)}`` of the members of the zip ``f``, read from their headers."""
    out = {}
    try:
        with zipfile.ZipFile(f) as z:
            for info in z.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                if _expected(name) is None:
                    problems.append(f"holds an array {name!r} this version never writes")
                    continue
                with z.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                out[name] = (shape, dtype)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        problems.append(f"is not a complete .npz file ({type(exc).__name__}: {str(exc)[:80]}); "
                        "expected the file pyomo-lap solve wrote")
    return out


def _header_problems(heads: dict) -> list:
    """The problems of the arrays' names, dtypes and shapes (:data:`SOLUTION_ARRAYS`)."""
    problems = []
    if "s" not in heads:
        return ["holds no array 's' (the mesh points)"]
    shape, dtype = heads["s"]
    if dtype.kind != "f" or len(shape) != 1 or shape[0] < 2:
        return [f"array 's' is {dtype} of shape {shape}: expected float64 of one dimension, two "
                "mesh points or more [m]"]
    n = shape[0]
    for name, (shape, dtype) in heads.items():
        kind, meaning = _expected(name)
        if dtype.kind != kind or len(shape) != 1:
            problems.append(f"array {name!r} is {dtype} of shape {shape}: expected "
                            f"{'float64' if kind == 'f' else 'text'} of one dimension ({meaning})")
        elif shape[0] > SIZE_PER_POINT * max(n, 1):
            problems.append(f"array {name!r} has {shape[0]} entries: expected at most "
                            f"{SIZE_PER_POINT} per mesh point ({n} points in 's')")
        m = re.fullmatch(r"(dual|zL|zU)[sr](:.+)", name)
        if m and heads.get(m.group(1) + m.group(2), (shape,))[0] != shape:
            problems.append(f"array {name!r} has shape {shape}: expected that of "
                            f"{m.group(1) + m.group(2)!r}")
    return problems


def _value_problems(data: dict) -> list:
    """The problems of the values: ``s`` finite and increasing, some variable with a value."""
    s = data["s"]
    if not (np.all(np.isfinite(s)) and np.all(np.diff(s) > 0)):
        return ["array 's' is not finite and strictly increasing: expected the mesh points [m]"]
    if not any(np.isfinite(v).any() for k, v in data.items() if k.startswith("var:")):
        return ["no variable has a value (every 'var:' array is NaN or absent)"]
    return []


def read_solution(path) -> dict:
    """The arrays of a results folder's :data:`SOLUTION_FILE`, checked.

    Parameters
    ----------
    path : str or Path
        The results folder or the file.

    Returns
    -------
    dict
        ``{name: ndarray (k,)}``, the names of :data:`SOLUTION_ARRAYS`.

    Raises
    ------
    FileNotFoundError
        No such file.
    SolutionFileError (a ValueError)
        The file differs from the SHA-256 the manifest records, is not a complete ``.npz``,
        holds an array the writer never writes or of another dtype or shape, ``s`` not
        increasing, or no variable with a value: one line per problem.
    ManifestError (a ValueError)
        The folder's manifest is there but cannot be read.
    """
    path = Path(path)
    f = path / SOLUTION_FILE if path.is_dir() else path
    if not f.is_file():
        raise FileNotFoundError(f"no {SOLUTION_FILE} at {str(f)!r}")
    entry = ((read_manifest(f.parent, strict=True) or {}).get("files") or {}).get(f.name)
    if isinstance(entry, dict) and entry.get("sha256") and _sha256(f) != entry["sha256"]:
        raise SolutionFileError(f, ["differs from the file the manifest records (its SHA-256 "
                                    "changed: edited or cut short since it was written); "
                                    "expected the file pyomo-lap wrote: solve again"])
    problems = []
    heads = _headers(f, problems)
    problems += _header_problems(heads) if not problems else []
    if problems:
        raise SolutionFileError(f, problems)
    with np.load(f, allow_pickle=False) as d:
        data = {k: d[k] for k in heads}
    problems = _value_problems(data)
    if problems:
        raise SolutionFileError(f, problems)
    return data
