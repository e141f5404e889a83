r"""Flat tracks made of straights and circular arcs: :class:`ArcTrack` and its file format.

A track of this kind is a list of segments laid end to end from the origin, heading east
(``x``): a *straight* of a length [m], or an *arc* of a radius [m] swept through an angle
[rad] to the left (counter-clockwise, positive curvature) or to the right. Everything about
it has a closed form: the length is the sum of the straights' lengths and the arcs'
:math:`R\,\theta`; the heading :math:`\psi(s)` grows by :math:`\pm (s - s_i)/R` along an arc;
the curvature is :math:`\kappa = \pm 1/R` on an arc and 0 on a straight (piecewise constant,
so :math:`d\kappa/ds = 0` but at the junctions). The track is flat (no slope, no banking)
and its half-widths are constant.

The file format (TOML, extension ``.toml``; :func:`load_arc_track`, and
:func:`pyomo_lap.track.loading.load_track` for a path ending in ``.toml`` or a bundled name
``data/tracks/<name>.toml``)::

    name = "dymos_oval"                 # optional (default: the file's stem)
    description = "..."                 # optional
    closed = true                       # a lap: periodic in s with the period ``length``
    width_left = 4.0                    # [m] from the centre line to the left edge
    width_right = 4.0                   # [m] to the right edge
    curvature = "exact"                 # or "spline-lookup" (dymos's treatment, below)
    [source]                            # optional, free text: where the segments come from
    repository = "..."

    [[segment]]
    straight = 150.0                    # [m]

    [[segment]]
    radius = 50.0                       # [m]
    angle_deg = 90.0                    # or angle = 1.5707963267948966 [rad]
    turn = "left"                       # or "right"

A file may instead name another one with ``base = "other.toml"`` (beside it): it then has
that file's segments, widths and ``closed``, and its own keys override them (the bundled
``dymos_oval_spline.toml`` is ``dymos_oval.toml`` with ``curvature = "spline-lookup"``).

``curvature = "spline-lookup"`` reproduces how the racecar example of dymos (OpenMDAO,
``dymos/examples/racecar``, ``spline.py`` and ``curvature.py``) gives its ODE the track's
curvature: centre-line points are sampled (every 5 m along a straight, from 5 m to 2 m short
of its end; ten points along each arc, at 0, 10/99, ..., 90/99 of its sweep; the track's start
first), a quintic interpolating parametric B-spline is fitted through them with chord-length
parameter :math:`u \in [0, 1]` (``scipy.interpolate.splprep``, ``s = 0``, ``k = 5``), its
signed curvature is tabulated at :math:`u = 0, 10^{-4}, \dots, 0.9999`, and the curvature at
the arc length :math:`s` is the table's entry :math:`\lfloor 10^4 s/L \rfloor`. The spline
overshoots at the junctions of straights and arcs, and :math:`u` (chord length through the
points, which end before the last straight does) runs ahead of :math:`s/L`, so the looked-up
curvature lags the arcs (measured for the oval in ``docs/racecar.md``). Positions, headings
and frames stay those of the exact arcs; only ``Omega_z`` (the curvature) is replaced.

Layer: track (imports numpy, scipy and :mod:`pyomo_lap.track.points`:
:func:`pyomo_lap.track.loading.load_track` dispatches to it, so it does not import that module;
:class:`ArcTrack` has the interface of :class:`~pyomo_lap.track.geometry.Track` and
:meth:`ArcTrack.evaluate` returns the same :class:`~pyomo_lap.track.points.TrackPoints`).
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from scipy.interpolate import splev, splprep

from ..util.errors import FileProblemsError, nested_too_deep
from ..util.paths import data_dir
from .checks import check_track_width
from .points import TrackBase, TrackPoints

__all__ = ["Segment", "ArcTrack", "ArcTrackFileError", "load_arc_track", "read_arc_track_file",
           "is_arc_track", "holds_arc_track", "spline_lookup_curvature", "CURVATURE_TREATMENTS", "LOOKUP_SAMPLES"]

CURVATURE_TREATMENTS = ("exact", "spline-lookup")
"""Values of the key ``curvature`` of an arc-track file (see the module docstring)."""

LOOKUP_SAMPLES = 10000
"""Entries of the curvature table of ``curvature = "spline-lookup"`` (dymos: ``interval =
0.0001`` in ``get_spline``)."""

_TOP_KEYS = ("name", "description", "closed", "width_left", "width_right", "curvature",
             "source", "segment", "base")
_SEGMENT_KEYS = ("straight", "radius", "angle", "angle_deg", "turn")


@dataclasses.dataclass(frozen=True)
class Segment:
    """One piece of an :class:`ArcTrack`.

    Attributes
    ----------
    length : float
        Arc length along the centre line [m] (> 0).
    radius : float
        Radius [m]; ``math.inf`` for a straight.
    turn : int
        +1 left (counter-clockwise), -1 right; 0 for a straight.
    """

    length: float
    radius: float = math.inf
    turn: int = 0

    @classmethod
    def straight(cls, length: float) -> "Segment":
        """A straight of ``length`` [m]."""
        return cls(float(length))

    @classmethod
    def arc(cls, radius: float, angle: float, turn: str = "left") -> "Segment":
        """An arc of ``radius`` [m] swept through ``angle`` [rad] to the ``turn`` ("left" or
        "right")."""
        return cls(float(radius) * float(angle), float(radius), 1 if turn == "left" else -1)

    @property
    def is_arc(self) -> bool:
        """Whether the segment is an arc (not a straight)."""
        return self.turn != 0

    @property
    def curvature(self) -> float:
        """Signed curvature [1/m]: +1/R left, -1/R right, 0 straight."""
        return self.turn / self.radius if self.is_arc else 0.0

    @property
    def angle(self) -> float:
        """Swept angle [rad] (0 for a straight)."""
        return self.length / self.radius if self.is_arc else 0.0


class ArcTrackFileError(FileProblemsError):
    """An arc-track file that cannot be used; ``problems`` lists one line per problem, each
    naming the file, the key (``segment[3].radius``), the value and what was expected."""

    kind = "arc track file"


class ArcTrack(TrackBase):
    """A flat track of straights and arcs with closed-form geometry (module docstring).

    Has the interface of :class:`~pyomo_lap.track.geometry.Track` (``length``, ``closed``,
    ``name``, ``provenance``, ``origin``, ``findings``, ``build_repairs``, :meth:`evaluate`,
    and from their common :class:`~pyomo_lap.track.points.TrackBase` ``processing_steps``,
    ``assumptions``, ``repairs``, ``global_position``, ``sample_s``), with exact values
    instead of a spline fit.

    Parameters
    ----------
    segments : sequence of Segment
        Laid end to end from the origin, heading east.
    width_left, width_right : float
        Constant half-widths [m] (> 0).
    closed : bool
        A lap: ``s`` wraps modulo the length. The segments need not close exactly (dymos's
        oval ends 5 m past its start); the gap and the heading mismatch at the seam are
        recorded in ``provenance["closure"]``.
    name : str
    curvature : {"exact", "spline-lookup"}
        The curvature ``Omega_z`` that :meth:`evaluate` returns: the arcs' own, or dymos's
        spline looked up by position (module docstring).
    provenance : dict, optional

    Raises
    ------
    ValueError
        No segments, a segment with a length or radius that is not a positive finite number,
        a width that is not positive, an unknown curvature treatment.
    """

    def __init__(self, segments: Sequence[Segment], width_left: float = 4.0,
                 width_right: float = 4.0, closed: bool = True, name: str = "arc_track",
                 curvature: str = "exact", provenance: Optional[dict] = None):
        segs = list(segments)
        if not segs:
            raise ValueError("an arc track needs at least one segment")
        for i, sg in enumerate(segs):
            if not (math.isfinite(sg.length) and sg.length > 0):
                raise ValueError(f"segment[{i}]: length = {sg.length!r} m: expected a positive, "
                                 "finite length")
            if sg.is_arc and not (math.isfinite(sg.radius) and sg.radius > 0):
                raise ValueError(f"segment[{i}]: radius = {sg.radius!r} m: expected a positive, "
                                 "finite radius")
        for key, w in (("width_left", width_left), ("width_right", width_right)):
            if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
                raise ValueError(f"{key} = {w!r} m: expected a positive, finite half-width")
        if curvature not in CURVATURE_TREATMENTS:
            raise ValueError(f"curvature = {curvature!r}: expected one of "
                             f"{', '.join(map(repr, CURVATURE_TREATMENTS))}")
        self.segments = tuple(segs)
        lengths = np.array([sg.length for sg in segs])
        self._s0 = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
        self.length = float(np.sum(lengths))
        self._kappa = np.array([sg.curvature for sg in segs])
        # start of each segment: position and heading, by the closed forms
        psi = [0.0]
        pos = [np.zeros(2)]
        for sg in segs:
            p0, h0 = pos[-1], psi[-1]
            p1, h1 = _advance(p0, h0, sg, sg.length)
            pos.append(p1)
            psi.append(h1)
        self._psi0 = np.array(psi[:-1])
        self._p0 = np.array(pos[:-1])
        self.closed = bool(closed)
        self.name = str(name)
        self.width_left = float(width_left)
        self.width_right = float(width_right)
        self.curvature_treatment = curvature
        self.origin = np.zeros(3)
        self.findings = []
        self.build_repairs = []
        self._s_samples = self._s0
        self.provenance = dict(provenance or {})
        self.provenance["curvature"] = curvature
        if self.closed:
            gap = pos[-1] - pos[0]
            dpsi = (psi[-1] - psi[0] + math.pi) % (2 * math.pi) - math.pi
            self.provenance["closure"] = {
                "gap_m": [float(gap[0]), float(gap[1])], "gap_norm_m": float(np.hypot(*gap)),
                "heading_mismatch_rad": float(dpsi),
                "note": "the lap is the segments' total length; the states are periodic, the "
                        "geometry closes only as far as the segments do"}
        self._lookup = spline_lookup_curvature(self) if curvature == "spline-lookup" else None

    def __repr__(self) -> str:
        """Name, length, closed, segments and curvature treatment."""
        return (f"ArcTrack(name={self.name!r}, length={self.length:.3f} m, closed={self.closed}, "
                f"segments={len(self.segments)}, curvature={self.curvature_treatment!r})")

    # ------------------------------------------------------------------ geometry
    def segment_index(self, s) -> np.ndarray:
        """Index of the segment each arc length ``s`` [m] (already wrapped) lies on; a junction
        belongs to the segment that starts there."""
        i = np.searchsorted(self._s0, np.asarray(s, float), side="right") - 1
        return np.clip(i, 0, len(self.segments) - 1)

    def exact_curvature(self, s) -> np.ndarray:
        """The arcs' signed curvature [1/m] at ``s`` (wrapped on a closed track)."""
        return self._kappa[self.segment_index(self._wrap(s))]

    def _exact(self, s):
        """Positions (n, 2) and headings (n,) of the centre line at wrapped ``s``."""
        i = self.segment_index(s)
        ds = s - self._s0[i]
        psi0 = self._psi0[i]
        k = self._kappa[i]
        p0 = self._p0[i]
        arc = k != 0
        psi = psi0 + k * ds
        # straight: p0 + ds t(psi0); arc: p0 + (n(psi) - n(psi0)) * (-1/k), n = (-sin, cos)
        kk = np.where(arc, k, 1.0)
        x = np.where(arc, p0[:, 0] + (np.sin(psi) - np.sin(psi0)) / kk, p0[:, 0] + ds * np.cos(psi0))
        y = np.where(arc, p0[:, 1] - (np.cos(psi) - np.cos(psi0)) / kk, p0[:, 1] + ds * np.sin(psi0))
        return np.column_stack([x, y]), psi

    def _p(self, s, der: int = 0) -> np.ndarray:
        """The centre line and its derivatives in ``s`` as (n, 3) arrays (the spline's
        interface of :class:`~pyomo_lap.track.geometry.Track`, used by its checks)."""
        s = self._wrap(s)
        P, psi = self._exact(s)
        k = self._kappa[self.segment_index(s)]
        z = np.zeros_like(psi)
        if der == 0:
            return np.column_stack([P, z])
        t = np.column_stack([np.cos(psi), np.sin(psi), z])
        nvec = np.column_stack([-np.sin(psi), np.cos(psi), z])
        if der == 1:
            return t
        if der == 2:
            return k[:, None] * nvec
        if der == 3:
            return -(k * k)[:, None] * t
        return np.zeros((len(s), 3))

    def evaluate(self, s) -> TrackPoints:
        """The track at arc lengths ``s`` [m] (wrapped on a closed track), exactly: position,
        frame ``[t n m]`` (flat: ``m`` up), ``Omega = (0, 0, kappa)``, ``dOmega/ds = 0``,
        the constant widths, no banking or slope. With ``curvature = "spline-lookup"``,
        ``Omega_z`` is the looked-up curvature (module docstring).

        Raises
        ------
        ValueError
            Non-finite ``s``; ``s`` outside ``[0, length]`` on an open track.
        """
        s = self._wrap(s)
        P, psi = self._exact(s)
        n = len(s)
        kappa = self._kappa[self.segment_index(s)] if self._lookup is None else self.lookup_curvature(s)
        c, sn, z, one = np.cos(psi), np.sin(psi), np.zeros(n), np.ones(n)
        R = np.stack([np.column_stack([c, sn, z]), np.column_stack([-sn, c, z]),
                      np.column_stack([z, z, one])], axis=2)
        return TrackPoints(s=s, position=np.column_stack([P, z]), rotation=R,
                           omega=np.column_stack([z, z, kappa]), domega_ds=np.zeros((n, 3)),
                           width_left=np.full(n, self.width_left),
                           width_right=np.full(n, self.width_right), banking=z.copy(),
                           heading=psi, slope=z.copy(), speed=one.copy())

    def lookup_curvature(self, s) -> np.ndarray:
        """The curvature of dymos at ``s`` [1/m]: the entry ``floor(N s / L)`` (at most ``N - 1``)
        of the spline's table (``curvature = "spline-lookup"``; the table is made for any
        track on first use)."""
        if self._lookup is None:
            self._lookup = spline_lookup_curvature(self)
        table = self._lookup
        N = len(table)
        idx = np.minimum(np.floor(np.asarray(s, float) / self.length * N), N - 1).astype(int)
        return table[idx]

    def dymos_sample_s(self) -> np.ndarray:
        """The arc lengths [m] of the centre-line points through which dymos fits its spline
        (module docstring): the start, then per straight every 5 m from 5 m up to its length
        rounded down less 2 m, per arc 0, 10/99, ..., 90/99 of its length."""
        out = [0.0]
        for s0, sg in zip(self._s0, self.segments):
            if sg.is_arc:
                out.extend(s0 + sg.length * j / 99.0 for j in range(0, 100, 10))
            else:
                out.extend(s0 + j for j in range(1, int(sg.length) - 1) if j % 5 == 0)
        return np.array(out)


def _advance(p0, psi0: float, sg: Segment, ds: float):
    """Position and heading ``ds`` [m] into the segment ``sg`` that starts at ``p0``, ``psi0``."""
    if not sg.is_arc:
        return p0 + ds * np.array([math.cos(psi0), math.sin(psi0)]), psi0
    k = sg.curvature
    psi = psi0 + k * ds
    return (p0 + np.array([math.sin(psi) - math.sin(psi0), -(math.cos(psi) - math.cos(psi0))]) / k,
            psi)


def spline_lookup_curvature(track: ArcTrack, samples: int = LOOKUP_SAMPLES) -> np.ndarray:
    r"""The curvature table of dymos for an arc track (module docstring): the signed curvature
    :math:`(x'y'' - y'x'')/(x'^2 + y'^2)^{3/2}` of the quintic interpolating parametric
    spline through the points :meth:`ArcTrack.dymos_sample_s` (``scipy.interpolate.splprep``,
    ``s = 0``, ``k = 5``, chord-length parameter), at ``u = j / samples``, ``j = 0 ...
    samples - 1`` [1/m]."""
    P, _ = track._exact(track.dymos_sample_s())
    tck, _ = splprep(P.T, s=0.0, k=5)
    u = np.arange(samples) / samples
    x1, y1 = splev(u, tck, der=1)
    x2, y2 = splev(u, tck, der=2)
    return (x1 * y2 - y1 * x2) / (x1 * x1 + y1 * y1) ** 1.5


# ---------------------------------------------------------------------------- the file
def is_arc_track(name_or_path) -> bool:
    """Whether :func:`pyomo_lap.track.loading.load_track` should read ``name_or_path`` with
    :func:`load_arc_track`: a path ending in ``.toml``, or the name of a bundled arc track
    (``data/tracks/<name>.toml``)."""
    if isinstance(name_or_path, ArcTrack):
        return True
    if not isinstance(name_or_path, (str, Path)):
        return False
    p = Path(str(name_or_path))
    if p.suffix.lower() == ".toml":
        return True
    return _bundled(str(name_or_path)) is not None


def holds_arc_track(path) -> bool:
    """Whether the ``.toml`` file ``path`` holds an arc track (a ``[[segment]]`` table or a
    ``base`` key, module docstring) rather than a car (``pyomo-lap check FILE`` tells them
    apart this way); a file that is not valid TOML: False (its reader says why).

    Raises
    ------
    OSError
        The file cannot be read.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return False
    return "segment" in data or "base" in data


def _bundled(name: str) -> Optional[Path]:
    key = name.strip().lower()
    if not key or "/" in key or "\\" in key or "." in key:
        return None
    f = data_dir() / "tracks" / f"{key}.toml"
    return f if f.is_file() else None


def load_arc_track(name_or_path, curvature: Optional[str] = None,
                   track_width: Optional[float] = None) -> ArcTrack:
    """Read an arc track: a ``.toml`` file (module docstring) or a bundled name.

    Parameters
    ----------
    name_or_path : str or Path
    curvature : {"exact", "spline-lookup"}, optional
        Overrides the file's ``curvature``.
    track_width : float, optional
        Total width [m], half each side, replacing the file's widths (the job option
        ``track_width``, ``--track-width``).

    Returns
    -------
    ArcTrack
        ``provenance`` holds the file's ``source``, ``description``, ``source_file`` and the
        closure record.

    Raises
    ------
    FileNotFoundError
        No such file.
    ArcTrackFileError (a ValueError)
        Bad TOML, unknown or missing keys, values that are not positive finite numbers, an
        unknown ``turn`` or ``curvature``; every problem named.
    """
    if isinstance(name_or_path, ArcTrack):
        if track_width is not None:
            raise ValueError(f"track_width = {track_width!r} m with an ArcTrack object: expected "
                             "a track name or file (for an ArcTrack, give its widths when "
                             "building it)")
        return name_or_path
    p = Path(str(name_or_path))
    if p.suffix.lower() != ".toml":
        found = _bundled(str(name_or_path))
        if found is None:
            raise ValueError(f"unknown arc track {str(name_or_path)!r}: expected a .toml file "
                             "or the name of a bundled data/tracks/<name>.toml")
        p = found
    tr = read_arc_track_file(p, curvature=curvature)
    if track_width is not None:
        half = check_track_width(track_width)
        tr.width_left = tr.width_right = float(half)
    return tr


def read_arc_track_file(path, curvature: Optional[str] = None, _seen: tuple = ()) -> ArcTrack:
    """Read and check an arc-track file (see :func:`load_arc_track`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"arc track file not found: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ArcTrackFileError(path, [f"not a valid TOML text file: {exc}"]) from None
    except RecursionError:
        raise ArcTrackFileError(path, [nested_too_deep(
            "keys and a list of [[segment]] tables")]) from None
    problems = [f"unknown key {k!r}; expected one of {', '.join(_TOP_KEYS)}"
                for k in data if k not in _TOP_KEYS]
    base = None
    if "base" in data:
        ref = data["base"]
        bp = (path.parent / str(ref)).resolve()
        if not isinstance(ref, str) or not bp.is_file():
            problems.append(f"base = {ref!r}: expected the name of an arc track file beside this one")
        elif bp in _seen or bp == path.resolve():
            problems.append(f"base = {ref!r}: the files name each other in a circle")
        else:
            base = read_arc_track_file(bp, _seen=_seen + (path.resolve(),))
    if base is None and "segment" not in data and not problems:
        problems.append("missing [[segment]] tables (each: straight = LENGTH, or radius = R "
                        "with angle or angle_deg and turn)")
    segs = list(base.segments) if base is not None else []
    if "segment" in data:
        segs = []
        raw = data["segment"]
        if not isinstance(raw, list) or not raw:
            problems.append("segment: expected one or more [[segment]] tables")
            raw = []
        for i, sg in enumerate(raw):
            seg, errs = _parse_segment(i, sg)
            problems.extend(errs)
            if seg is not None:
                segs.append(seg)

    def number(key, default):
        v = data.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            problems.append(f"{key} = {v!r}: expected a positive, finite half-width in metres")
            return default
        return float(v)
    wl = number("width_left", base.width_left if base is not None else 4.0)
    wr = number("width_right", base.width_right if base is not None else 4.0)
    closed = data.get("closed", base.closed if base is not None else True)
    if not isinstance(closed, bool):
        problems.append(f"closed = {closed!r}: expected true or false")
        closed = True
    treatment = curvature or data.get("curvature", base.curvature_treatment if base is not None
                                      else "exact")
    if treatment not in CURVATURE_TREATMENTS:
        problems.append(f"curvature = {treatment!r}: expected one of "
                        f"{', '.join(map(repr, CURVATURE_TREATMENTS))}")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key} = {data[key]!r}: expected a text")
    if "source" in data and not isinstance(data["source"], dict):
        problems.append(f"source = {data['source']!r}: expected a table ([source])")
    if problems:
        raise ArcTrackFileError(path, problems)
    prov = dict(base.provenance) if base is not None else {}
    prov.pop("closure", None)
    prov.update({"format": "arc track (pyomo_lap.track.arcs)", "source_file": str(path)})
    if "source" in data:
        prov["source"] = dict(data["source"])
    if "description" in data:
        prov["description"] = data["description"]
    name = data.get("name", path.stem)
    return ArcTrack(segs, wl, wr, closed=closed, name=name, curvature=treatment, provenance=prov)


def _parse_segment(i: int, sg) -> tuple:
    where = f"segment[{i}]"
    if not isinstance(sg, dict):
        return None, [f"{where} = {sg!r}: expected a table"]
    errs = [f"{where}.{k}: unknown key; expected one of {', '.join(_SEGMENT_KEYS)}"
            for k in sg if k not in _SEGMENT_KEYS]

    def pos(key):
        v = sg[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            errs.append(f"{where}.{key} = {v!r}: expected a positive, finite number")
            return None
        return float(v)
    if "straight" in sg:
        extra = [k for k in ("radius", "angle", "angle_deg", "turn") if k in sg]
        if extra:
            errs.append(f"{where}: a straight has only 'straight' (its length [m]), got also "
                        f"{', '.join(extra)}")
        length = pos("straight")
        return (Segment.straight(length) if length is not None and not errs else None), errs
    if "radius" not in sg:
        errs.append(f"{where}: expected straight = LENGTH [m] or radius = R [m] with angle "
                    "[rad] or angle_deg [deg] and turn")
        return None, errs
    radius = pos("radius")
    has = [k for k in ("angle", "angle_deg") if k in sg]
    if len(has) != 1:
        errs.append(f"{where}: expected exactly one of angle [rad] and angle_deg [deg], got "
                    f"{', '.join(has) or 'neither'}")
        angle = None
    else:
        angle = pos(has[0])
        if angle is not None and has[0] == "angle_deg":
            angle = math.radians(angle)
    turn = sg.get("turn")
    if turn not in ("left", "right"):
        errs.append(f"{where}.turn = {turn!r}: expected 'left' or 'right'")
    if errs or radius is None or angle is None:
        return None, errs
    return Segment.arc(radius, angle, turn), errs
