r"""A solution moved onto another model's mesh: the warm start from a results folder.

A solve of the same track can start from an earlier result (``pyomo-lap solve --warm-start
RUN``, the job option ``warm_start_from``) even when the two differ in the mesh, the sector or
the car. This module reads the folder (:func:`read_source`: its ``solution.npz`` and
``summary.json``); :func:`solution_at_positions` gives the earlier solution's values (a
:class:`pyomo_lap.ocp.transfer.Solution`, the one home of the moves of a solution) at another
model's mesh points, matched by the **absolute track position** ``start + s``:

* within an element of the source mesh, each variable is its collocation polynomial
  (:func:`pyomo_lap.ocp.collocation.collocation_interpolate`): states (variables ``X`` with a
  derivative ``dX_ds``) through the element's start and collocation points, every other
  variable through the collocation points;
* the time ``t`` is not interpolated: its increments are (the source's time between two target
  points), summed from the target's own start value, so a sector that starts elsewhere starts
  at its own ``t = 0`` and the time always increases;
* on a closed track a position is taken modulo the track length; a closed-lap source covers
  every position (its increments wrap over the start line);
* target points the source does not cover keep the values already in the model (the usual
  initial guess): within :data:`BLEND_M` of the covered part, the value is blended linearly
  from the source's value at the edge to the guess, so the start stays continuous.

The multipliers (``dual:``, ``zL:``, ``zU:`` entries of ``solution.npz``, Pyomo's suffixes
``dual``, ``ipopt_zL_out``, ``ipopt_zU_out`` after the solve) are moved the same way as
densities: divided by each point's share of the distance (half the distance to its
neighbours), interpolated linearly per row, multiplied by the target point's share; they go
into the suffixes ``dual``, ``ipopt_zL_in``, ``ipopt_zU_in`` that IPOPT's
``warm_start_init_point = yes`` reads.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pyomo.environ as pyo

from ..folders.results_folder import SOLUTION_FILE
from ..ocp.collocation import snap_breaks
from ..ocp.transfer import Solution, set_within_bounds
from ..results.solution_file import read_solution
from ..results.summary import Summary, as_summary
from ..results.table import solution_arrays

__all__ = ["solution_at_positions", "read_source", "model_source", "apply_warm_start",
           "check_source", "multiplier_arrays", "BLEND_M", "WarmStartError"]

BLEND_M = 50.0
"""[m] the length beyond the covered part over which a warm start's values blend into the
usual initial guess (linearly in the distance from the edge)."""

_TOL = 1e-6     # [m] positions this close to a covered end are covered


class WarmStartError(ValueError):
    """A results folder a warm start cannot use (another track, another vehicle model, a
    missing or unreadable file): one line naming the folder, the value and what was expected."""


def _s_keys(comp, s_set) -> Optional[list]:
    """``[(row, s)]`` of an indexed component whose last index is a mesh point (``row`` the
    rest of the index as text), or None when it is not indexed along the mesh."""
    if not comp.is_indexed():
        return None
    out = []
    for k in comp.keys():
        parts = k if isinstance(k, tuple) else (k,)
        s = parts[-1]
        if not isinstance(s, (float, np.floating)) or s not in s_set:
            return None
        out.append(("|".join(map(str, parts[:-1])), float(s)))
    return out if len(out) >= 2 else None


def multiplier_arrays(m) -> dict:
    """The multipliers a solve left in the model's suffixes ``dual`` (constraints),
    ``ipopt_zL_out``, ``ipopt_zU_out`` (variable bounds), Pyomo's signs, for
    :data:`pyomo_lap.folders.results_folder.SOLUTION_FILE`: for every component indexed along the mesh
    ``<kind>:<name>`` (values), ``<kind>s:<name>`` (its mesh points [m]) and ``<kind>r:<name>``
    (the rest of each index, text); ``kind`` ``dual``, ``zL`` or ``zU``. ``{}`` when the
    suffixes are absent or empty."""
    out = {}
    s_set = set(m.s)
    for kind, suffix, ctype in (("dual", "dual", pyo.Constraint), ("zL", "ipopt_zL_out", pyo.Var),
                                ("zU", "ipopt_zU_out", pyo.Var)):
        suf = m.component(suffix)
        if suf is None or len(suf) == 0:
            continue
        for comp in m.component_objects(ctype, descend_into=True):
            keys = _s_keys(comp, s_set)
            if keys is None:
                continue
            vals = [suf.get(comp[k]) for k in comp.keys()]
            if all(v is None for v in vals):
                continue
            out[f"{kind}:{comp.name}"] = np.array([np.nan if v is None else v for v in vals])
            out[f"{kind}s:{comp.name}"] = np.array([s for _, s in keys])
            out[f"{kind}r:{comp.name}"] = np.array([r for r, _ in keys])
    return out


def model_source(m) -> dict:
    """A solved model as the source of :func:`solution_at_positions`: its variables (as
    :func:`pyomo_lap.results.table.solution_arrays`), multipliers (:func:`multiplier_arrays`)
    and mesh (``start``, ``breaks``, ``scheme``, ``periodic``, ``model``, ``car``)."""
    o = m.problem.options
    data = {**solution_arrays(m), **multiplier_arrays(m)}
    return {"data": data, "start": float(o.start or 0.0),
            "breaks": np.array(sorted(m.s.get_finite_elements()), dtype=float),
            "scheme": str(o.scheme), "periodic": bool(o.periodic),
            "model": o.model, "car": getattr(m.vehicle.built_for, "name", None), "folder": None}


def read_source(folder) -> dict:
    """A results folder (``summary.json`` and ``solution.npz``) as the source of
    :func:`solution_at_positions` (keys as :func:`model_source`, with ``summary``, the folder's
    :class:`pyomo_lap.results.summary.Summary`).

    Raises
    ------
    WarmStartError
        No such folder, no ``solution.npz`` or ``summary.json``, or a summary without the mesh.
    """
    folder = Path(folder)
    f = folder / SOLUTION_FILE if folder.is_dir() else folder
    folder = f.parent
    if not f.is_file() or not (folder / "summary.json").is_file():
        raise WarmStartError(f"warm start: {str(folder)!r} holds no {SOLUTION_FILE} and "
                             "summary.json: expected a results folder of pyomo-lap solve")
    try:
        summary = Summary.read(folder / "summary.json")
        data = read_solution(f)          # checked: manifest SHA-256, names, shapes, dtypes
        breaks = snap_breaks(data["s"], summary.mesh["element_boundaries_m"])  # rounded there
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WarmStartError(f"warm start: {str(folder)!r} cannot be read ({exc}): expected the "
                             "summary.json and solution.npz of pyomo-lap solve") from None
    return {"data": data, "start": float(summary.start_m or 0.0), "breaks": breaks,
            "scheme": str(summary.scheme), "periodic": bool(summary.periodic),
            "model": summary.model, "car": summary.vehicle, "folder": str(folder),
            "summary": summary}


def check_source(src: dict, *, track_name: str, track_sha256: Optional[str], model: str) -> None:
    """Refuse a source of another track (the track file's sha256, else its name) or another
    vehicle model (``full``, ``single-track``, ...; a car of another parameter schema has other
    variables). Raises :class:`WarmStartError`, one line."""
    summ = as_summary(src.get("summary") or {})   # a model's source has none
    where = src.get("folder") or "the source model"
    sha = summ.track_file_sha256
    if sha and track_sha256 and sha != track_sha256:
        raise WarmStartError(f"warm start: {where} was solved on another track file "
                             f"({summ.track!r}, sha256 {sha[:12]}...): expected this "
                             f"job's track {track_name!r} (sha256 {track_sha256[:12]}...)")
    if summ.track is not None and str(summ.track) != str(track_name) and not (
            sha and sha == track_sha256):
        raise WarmStartError(f"warm start: {where} was solved on track {summ.track!r}: "
                             f"expected this job's track {track_name!r}")
    if src.get("model") is not None and src["model"] != model:
        raise WarmStartError(f"warm start: {where} was solved with model {src['model']!r}: "
                             f"expected a solve of this job's vehicle model {model!r}")


def _map_positions(src: dict, x: np.ndarray, track_length: Optional[float]):
    """Source sector coordinates of the absolute positions ``x`` and whether each is covered;
    for a closed-lap source, the number of times each one wrapped."""
    s = src["data"]["s"]
    a, length = src["start"], float(s[-1])
    if track_length is None:
        u = x - a
        return u, (u >= -_TOL) & (u <= length + _TOL), np.zeros(len(x), dtype=int)
    if src["periodic"]:
        turns = np.floor((x - a) / track_length + 1e-12).astype(int)
        u = np.clip(x - a - turns * track_length, 0.0, length)
        return u, np.ones(len(x), dtype=bool), turns
    u = np.mod(x - a, track_length)
    u = np.where(u > length + _TOL, u - track_length, u)   # just before the start: uncovered
    u = np.where((u < 0) & (u > -_TOL), 0.0, u)
    return u, (u >= 0) & (u <= length + _TOL), np.zeros(len(x), dtype=int)


def solution_at_positions(source, points, *, track_length: Optional[float] = None) -> dict:
    """The values of a solution at other positions of the same track: the source's
    :class:`pyomo_lap.ocp.transfer.Solution` evaluated where the positions fall in its sector
    (:meth:`~pyomo_lap.ocp.transfer.Solution.at`, the derivative variables moved as values of
    their own), the time as increments.

    Parameters
    ----------
    source : dict or ConcreteModel
        :func:`read_source` of a results folder, :func:`model_source` of a model, or a solved
        model from :func:`pyomo_lap.ocp.build.build_model`.
    points : array_like (n,)
        Absolute track positions [m] (a target model's ``start + s``), increasing.
    track_length : float, optional
        A closed track's length [m] (positions taken modulo it); None for an open track.

    Returns
    -------
    dict
        ``"covered"``: bool (n,), the points the source covers; ``"values"``: ``{name: (n,)}``
        for every variable component of the source indexed along its mesh (NaN where not
        covered; ``t`` as increments from 0 at the first covered point of each covered run);
        ``"u"``: the positions in the source's sector [m]; ``"source"``: the source dict.
    """
    src = model_source(source) if hasattr(source, "component_objects") else source
    x = np.asarray(points, dtype=float)
    u, covered, turns = _map_positions(src, x, track_length)
    d = src["data"]
    sol = Solution.from_arrays(d, src["breaks"], src["scheme"])
    values = sol.at(np.where(covered, u, 0.0), derivatives="values")
    for v in values.values():
        v[~covered] = np.nan
    if "t" in values:          # the time: the source's increments, wrapping over a lap
        lap = float(d["var:t"][-1] - d["var:t"][0]) if src["periodic"] else 0.0
        values["t"] = np.where(covered, values["t"] + turns * lap, np.nan)
    return {"covered": covered, "values": values, "u": u, "source": src}


def _weights(x: np.ndarray) -> np.ndarray:
    """Each point's share of the distance: half the distance to its neighbours [m]."""
    w = np.zeros(len(x))
    dx = np.diff(x)
    w[:-1] += dx / 2
    w[1:] += dx / 2
    return np.maximum(w, 1e-12)


def _blend(guess: np.ndarray, src: np.ndarray, covered: np.ndarray, x: np.ndarray,
           blend_m: float) -> np.ndarray:
    """The source where covered, else the guess blended from the nearest covered value."""
    if covered.all():
        return src.copy()
    if not covered.any():
        return guess.copy()
    idx = np.flatnonzero(covered)
    near = idx[np.abs(x[:, None] - x[idx][None, :]).argmin(axis=1)]
    w = np.clip(1.0 - np.abs(x - x[near]) / blend_m, 0.0, 1.0)
    edge = src[near]
    out = np.where(covered, src, w * edge + (1 - w) * guess)
    return np.where(np.isfinite(out), out, guess)


def _time(guess: np.ndarray, src_t: np.ndarray, covered: np.ndarray) -> np.ndarray:
    """The target's time from its start value: the source's increments between two covered
    points, the guess's elsewhere."""
    dg = np.diff(guess)
    ds = np.diff(src_t)
    both = covered[1:] & covered[:-1] & np.isfinite(ds) & (ds > 0)
    inc = np.where(both, ds, dg)
    return guess[0] + np.concatenate([[0.0], np.cumsum(inc)])


def apply_warm_start(m, source, *, track_length: Optional[float] = None,
                     blend_m: float = BLEND_M) -> dict:
    """Set a model's variables (and, when the source has them, the multiplier suffixes
    ``dual``, ``ipopt_zL_in``, ``ipopt_zU_in``) from a solution of the same track on any mesh
    and sector (:func:`solution_at_positions`); the model holds the usual initial guess before
    (:func:`pyomo_lap.ocp.initialize.initialize_model`), kept where the source does not cover.

    Returns
    -------
    dict
        ``covered_share`` (of the target's sector length, 0-1), ``covered_m`` [m],
        ``n_variables`` set, ``variables_missing`` (the model's variables along the mesh the
        source lacks), ``multipliers`` (True when set), ``same_mesh`` (bool).

    Raises
    ------
    WarmStartError
        The source shares fewer than half of the model's variables along the mesh (another
        vehicle model or parameter schema).
    """
    src = model_source(source) if hasattr(source, "component_objects") else source
    s_t = np.array(list(m.s), dtype=float)
    x = float(m.problem.options.start or 0.0) + s_t
    res = solution_at_positions(src, x, track_length=track_length)
    cov, vals = res["covered"], res["values"]
    comps = [c for c in m.component_objects(pyo.Var, descend_into=True)
             if c.is_indexed() and len(c) == len(s_t) and c.dim() == 1]
    missing = [c.name for c in comps if c.name not in vals]
    if len(missing) > len(comps) / 2:
        raise WarmStartError(f"warm start: {src.get('folder') or 'the source'} has "
                             f"{len(comps) - len(missing)} of this model's {len(comps)} "
                             "variables: expected a solve of the same vehicle model and car "
                             f"schema (missing e.g. {', '.join(missing[:4])})")
    n_set = 0
    for c in comps:
        if c.name not in vals:
            continue
        guess = np.array([np.nan if v.value is None else v.value for v in c.values()])
        guess = np.where(np.isfinite(guess), guess, vals[c.name])
        new = (_time(guess, vals["t"], cov) if c.name == "t" and np.isfinite(guess).all()
               else _blend(guess, vals[c.name], cov, x, blend_m))
        n_set += set_within_bounds(zip(c.values(), new))
    for k, arr in src["data"].items():   # unfixed scalars (free parameters) of the same name
        if k.startswith("var:") and arr.size == 1:
            c = m.component(k[4:])
            if c is not None and not c.is_indexed():
                n_set += set_within_bounds(zip(c.values(), arr))
    has_mult = _set_multipliers(m, res, x, s_t)
    same = (len(src["data"]["s"]) == len(s_t) and np.allclose(src["data"]["s"], s_t, atol=1e-6)
            and abs(src["start"] - x[0]) < 1e-6)
    fine = (np.arange(20000) + 0.5) / 20000 * float(s_t[-1])   # the covered length, to 5e-5
    covered_m = float(s_t[-1]) * float(np.mean(_map_positions(
        src, x[0] + fine, track_length)[1]))
    return {"covered_share": covered_m / float(s_t[-1]), "covered_m": covered_m,
            "n_variables": n_set, "variables_missing": missing,
            "multipliers": has_mult, "same_mesh": bool(same)}


def _set_multipliers(m, res: dict, x: np.ndarray, s_t: np.ndarray) -> bool:
    """The source's multipliers as densities onto the model's points (covered ones only),
    into the suffixes ``dual``, ``ipopt_zL_in``, ``ipopt_zU_in``; False when it has none."""
    d, src = res["source"]["data"], res["source"]
    if not any(k.startswith("dual:") for k in d):
        return False
    pos_t = dict(zip(s_t.tolist(), range(len(s_t))))
    w_t = _weights(s_t)
    w_s = _weights(d["s"])
    s_index = {v: i for i, v in enumerate(d["s"].tolist())}
    u, cov = res["u"], res["covered"]
    for kind, suffix, ctype in (("dual", "dual", pyo.Constraint), ("zL", "ipopt_zL_in", pyo.Var),
                                ("zU", "ipopt_zU_in", pyo.Var)):
        suf = m.component(suffix)
        if suf is None:
            suf = pyo.Suffix(direction=pyo.Suffix.IMPORT_EXPORT if kind == "dual"
                             else pyo.Suffix.EXPORT)
            m.add_component(suffix, suf)
        elif kind == "dual":
            suf.set_direction(pyo.Suffix.IMPORT_EXPORT)   # sent to the solver too
        for comp in m.component_objects(ctype, descend_into=True):
            key = f"{kind}:{comp.name}"
            if key not in d:
                continue
            rows, ss, vv = d[f"{kind}r:{comp.name}"], d[f"{kind}s:{comp.name}"], d[key]
            table = {}
            for r in np.unique(rows):
                sel = rows == r
                sp = ss[sel]
                dens = vv[sel] / w_s[[s_index.get(v, 0) for v in sp.tolist()]]
                table[str(r)] = (sp, dens)
            for k in comp.keys():
                parts = k if isinstance(k, tuple) else (k,)
                i = pos_t.get(float(parts[-1])) if isinstance(parts[-1], (float, np.floating)) else None
                row = table.get("|".join(map(str, parts[:-1])))
                if i is None or row is None or not cov[i]:
                    continue
                sp, dens = row
                ok = np.isfinite(dens)
                if ok.sum() < 1:
                    continue
                val = float(np.interp(u[i], sp[ok], dens[ok])) * w_t[i]
                suf[comp[k]] = val
    return True
