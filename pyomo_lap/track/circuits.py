"""The bundled circuits: the reproducible processing of eleven raw zaggyai/track_data files
into ``data/tracks/<name>.csv`` and ``<name>.json`` (``python data/tracks/make_tracks.py
[NAME ...]``; steps, parameters and repairs in ``data/tracks/README.md``).

One generic builder, :func:`build_circuit`, and one table, :data:`CIRCUITS` (name -> raw file,
its SHA-256, display name, country, layout, width and the reason for it, per-track repairs).
The processing is the Nordschleife's (:data:`CIRCUIT_PARAMS` are the parameters of
:data:`pyomo_lap.track.nordschleife.NORDSCHLEIFE_PARAMS` and of
:meth:`pyomo_lap.track.geometry.Track.from_zaggy_json`), with three differences:

* the elevations that the files give as 0 (missing: always the start/finish point, which the
  loop's last point repeats) are *repaired* before the processing, by linear interpolation
  along the track between the neighbouring points, and the repair is recorded with its size
  (``repairs`` and ``repair_records`` in the JSON; ``pyomo-lap check`` prints them);
* the width is 6 m each side (12 m total, :data:`CIRCUIT_WIDTH_REASON`), not 4 m;
* a per-track ``bridge`` repair: Suzuka's figure of eight crosses itself on a bridge, but
  the raw elevations (ground heights) put the two roads 0.7 m apart there; the crossing's
  height difference is set to a stated value by a smooth local correction of both passes
  (:func:`bridge_correction`), recorded with its size.

It sits above :mod:`pyomo_lap.track.geometry` (it makes a
:class:`~pyomo_lap.track.geometry.Track`), like :mod:`pyomo_lap.track.nordschleife`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .build import TRACK_CSV_COLUMNS, process_points, sha256_file, track_figures
from .built_checks import _segments_crossing, check_track
from .checks import check_points
from .geometry import Track, _write_track_csv
from .gps import project_geodetic, projection_string, read_zaggy_json
from .nordschleife import NORDSCHLEIFE_SOURCE, _json_default
from .smoothing import curve_spline, resample_arclength

__all__ = ["CIRCUITS", "CIRCUIT_PARAMS", "CIRCUIT_SOURCE", "CIRCUIT_WIDTH_REASON",
           "FASTEST_LAP_SOURCE", "FASTEST_LAP_TRACKS", "build_circuit", "build_fastest_lap",
           "bridge_correction", "circuit_names", "raw_path"]

CIRCUIT_SOURCE = dict(NORDSCHLEIFE_SOURCE)
"""Repository, commit and licence of the raw files (the Nordschleife's source)."""

CIRCUIT_PARAMS = dict(
    xy_cutoff_m=30.0,           # plan-view smoother cut-off wavelength
    z_cutoff_m=400.0,           # elevation smoother cut-off wavelength
    grid_spacing_m=1.0,         # smoothing grid
    spacing_m=2.0,              # output arc-length spacing (adjusted to L / M)
    hampel_half_window_m=250.0,
    hampel_n_sigma=3.0,
    hampel_min_threshold_m=8.0,
    robust_iterations=5,        # bisquare IRLS passes (c = 4.685 sigma, sigma >= 1 m)
    max_gap_m=300.0,            # longer elevation gaps: linear fill between 100 m end medians
    banking_rad=0.0,            # unknown
)
"""Processing parameters common to every circuit (those of the bundled Nordschleife and of
``Track.from_zaggy_json``; the width is per circuit, :data:`CIRCUITS`)."""

CIRCUIT_WIDTH_REASON = (
    "the data have no widths: constant 6.0 m each side of the centreline (12.0 m total), the "
    "width the FIA asks of new permanent circuits (International Sporting Code, Appendix O, "
    "art. 7.2: 'at least 12 m'); the real widths vary along each circuit and are not known "
    "here")
"""Why 12 m: the data have none, and the FIA's planning minimum for new permanent circuits is
a documented, typical value for circuits of this grade (most of these hold or held an FIA
Grade 1 licence); it is an assumption, said in every track's metadata and by ``check``."""

SUZUKA_BRIDGE_REASON = (
    "Suzuka is a figure of eight: the back straight (Spoon to 130R) passes over the section "
    "from Degner to the hairpin on a bridge (an overpass). The raw elevations put the two roads "
    "0.7 m apart at the crossing (ground heights, not the road on the bridge). No surveyed "
    "height difference is available here; 6.0 m is assumed: a road passing under a bridge needs "
    "a clearance of about 4.5 m (Japan's road construction gauge; vehicles up to 3.8-4.1 m "
    "high, Cabinet Order on Vehicle Restriction) plus a deck of about 1-1.5 m")

CIRCUITS = {
    "monza": dict(
        file="a804867126954eff581d455e4fc6d5c6--autodromo-nazionale-di-monza.json",
        sha256="b8c5cc44014954eb4a1977a20665dd19e21c6b6de3be129ed4ab13c03d3fc7a9",
        display_name="Autodromo Nazionale di Monza", country="Italy",
        layout="car layout (source short name 'Monza Car')"),
    "silverstone": dict(
        file="43b6344eeb21129c7c469c05a521b963--silverstone-circuit.json",
        sha256="a11bcd54871914081d7226800c1fe302ec8eae3385d69ea129a8af0e06e97b42",
        display_name="Silverstone Circuit", country="United Kingdom",
        layout="Grand Prix circuit (source short name 'SilverstnGP')"),
    "suzuka": dict(
        file="12bd4b0b4d4a04030c1b3f5e65c94f0a--suzuka-circuit.json",
        sha256="8d79b30c09fc960e3340e08627576ac30bab0d64248f030e81bba160f6e2d0b2",
        display_name="Suzuka Circuit", country="Japan",
        layout="car layout, figure of eight with a bridge (source short name 'Suzuka Car')",
        bridge=dict(height_m=6.0, upper_pass=2, ramp_half_length_m=150.0,
                    lower="Degner to the hairpin", upper="back straight, Spoon to 130R",
                    reason=SUZUKA_BRIDGE_REASON)),
    "barcelona": dict(
        file="c5f21b8f504ca9b5c4a94f828ec9137b--circuit-de-barcelona-catalunya.json",
        sha256="132482132f889b9fc0fcc286a5557d3637512eb4c2644be2916b1d66537b7aa7",
        display_name="Circuit de Barcelona-Catalunya", country="Spain",
        layout="the layout of the source file (short name 'Barcelona'; variant not stated)"),
    "hockenheim": dict(
        file="a70db43fbf69523ed817881712d16f63--hockenheimring.json",
        sha256="8aac89ae183ec91b954274ef08c2387ae9d4a0168493a13ec8e413802a30cba8",
        display_name="Hockenheimring", country="Germany",
        layout="the layout of the source file (short name 'Hockenheim'; variant not stated)"),
    "red_bull_ring": dict(
        file="9fb2b9c16c607fe8fe9013195cbb853c--red-bull-ring.json",
        sha256="06ef7295e54478e451ee3de523439f6423b490243b41205e770dc45b539561b9",
        display_name="Red Bull Ring", country="Austria",
        layout="the layout of the source file (short name 'RedBull'; variant not stated)"),
    "zandvoort": dict(
        file="9dcb49390c2037f6ae83f19d99124d35--circuit-park-zandvoort.json",
        sha256="a54f30be3c644e4a6a9c444849fe726cf69b89a9616cdda9936fb52c01d982c4",
        display_name="Circuit Park Zandvoort", country="Netherlands",
        layout="the layout of the source file (short name 'Zandvoort'; variant not stated)"),
    "hungaroring": dict(
        file="733b614cc8791ddc70660cb6e49c48d4--hungaroring.json",
        sha256="21b1268fd6cba67b0b240c03f07300f65d2fabc7e1e996242d720f30a208c0b2",
        display_name="Hungaroring", country="Hungary",
        layout="the layout of the source file (short name 'Hungaroring'; variant not stated)"),
    "road_america": dict(
        file="9e493835ed2ddd09c27d513086ddf9ca--road-america.json",
        sha256="ae223107055e9158b19a69029857576f89b7468c310546b38b9305a248f51efe",
        display_name="Road America", country="United States",
        layout="the layout of the source file (short name 'Rd Amer'; variant not stated)"),
    "watkins_glen": dict(
        file="c5e1449486ff9690c797ce5cdb82070b--watkins-glen-international.json",
        sha256="559d95d308a45c09fb2814bf4dddcfa8b4190abf907dc793144243bc8fdc559e",
        display_name="Watkins Glen International", country="United States",
        layout="the layout of the source file (short name 'Watkins Glen'; variant not stated)"),
    "interlagos": dict(
        file="f4024434a0da69a86ca21aeb4537483d--aut-dromo-de-interlagos.json",
        sha256="9e189760eab6b76f27c8f7657c404e59ac31b6d061c6ca459049b3ce136c2416",
        display_name="Autódromo José Carlos Pace, Interlagos", country="Brazil",
        layout="the layout of the source file (short name 'Interlagos'; variant not stated)"),
}
"""The circuits: bundled name -> ``file`` (in ``data/tracks/raw/zaggyai/``), ``sha256`` of
that file, ``display_name``, ``country``, ``layout``, optional ``width_m`` (total [m],
default 12.0) and ``width_reason`` (default :data:`CIRCUIT_WIDTH_REASON`), optional ``bridge``
(see :func:`bridge_correction`)."""

for _entry in CIRCUITS.values():
    _entry.setdefault("width_m", 12.0)
    _entry.setdefault("width_reason", CIRCUIT_WIDTH_REASON)
del _entry


def circuit_names() -> list:
    """The names of :data:`CIRCUITS`, in the table's order."""
    return list(CIRCUITS)


def raw_path(name: str, raw_dir) -> Path:
    """The raw file of circuit ``name`` in ``raw_dir``.

    Raises
    ------
    ValueError
        ``name`` is not in :data:`CIRCUITS` (the message lists the names).
    """
    if name not in CIRCUITS:
        raise ValueError(f"circuit {name!r}: not in CIRCUITS; expected one of "
                         f"{', '.join(CIRCUITS)}")
    return Path(raw_dir) / CIRCUITS[name]["file"]


def _window(d: np.ndarray, half: float) -> np.ndarray:
    """``((1 + cos(pi d / half)) / 2)^2`` for ``|d| < half``, else 0: 1 at d = 0, and its
    first three derivatives vanish at ``|d| = half`` (a C3 bump)."""
    w = np.where(np.abs(d) < half, 0.5 * (1.0 + np.cos(np.pi * d / half)), 0.0)
    return w * w


def bridge_correction(s, P, length: float, height_m: float, upper_pass: int,
                      ramp_half_length_m: float):
    """Elevation correction that makes the single plan-view crossing of a closed spine a
    bridge of a stated height.

    The crossing is found on the polyline of ``P`` (plan view). With ``d0`` the height of the
    upper pass minus that of the lower at the crossing, both passes are moved by
    ``a = (height_m - d0) / 2`` (the upper up, the lower down), tapered to 0 over
    ``ramp_half_length_m`` either side by the C3 window ``((1 + cos(pi d / l)) / 2)^2``: the
    height difference at the crossing becomes ``height_m``; the added grade is at most
    ``2.04 a / l``.

    Parameters
    ----------
    s : (M,) uniform arc length of the samples [m], from 0
    P : (M, 3) spine points [m]
    length : loop length L [m]
    height_m : height difference wanted at the crossing [m] (> 0)
    upper_pass : 1 or 2: which pass is the upper road, in the order of s from 0
    ramp_half_length_m : half-length l of the taper [m] (> 0)

    Returns
    -------
    dz : (M,) elevation change [m]
    info : dict
        ``s_lower_m``, ``s_upper_m`` [m], ``xy_m`` (x, y of the crossing) [m],
        ``height_before_m`` (d0) and ``height_after_m`` [m], ``shift_m`` (a) [m],
        ``max_added_grade`` [-].

    Raises
    ------
    ValueError
        Not exactly one crossing; ``upper_pass`` not 1 or 2; ``height_m`` or
        ``ramp_half_length_m`` not > 0; tapers that would overlap.
    """
    if upper_pass not in (1, 2):
        raise ValueError(f"bridge upper_pass = {upper_pass!r}: expected 1 or 2 (the first or "
                         "second pass over the crossing, in the order of s from 0)")
    for key, v in (("height_m", height_m), ("ramp_half_length_m", ramp_half_length_m)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"bridge {key} = {v!r}: expected a positive length in metres")
    s = np.asarray(s, float)
    P = np.asarray(P, float)
    hits = _segments_crossing(P[:, :2], True)
    if len(hits) != 1:
        raise ValueError(f"bridge: the plan view crosses itself {len(hits)} time(s); expected "
                         "exactly one crossing for a bridge repair")
    i, j, ti, tj = hits[0]
    M = len(s)
    ss = np.append(s, length)
    zz = np.append(P[:, 2], P[0, 2])
    s1, s2 = ss[i] + ti * (ss[i + 1] - ss[i]), ss[j] + tj * (ss[j + 1] - ss[j])
    z1, z2 = zz[i] + ti * (zz[i + 1] - zz[i]), zz[j] + tj * (zz[j + 1] - zz[j])
    (s1, z1), (s2, z2) = sorted([(s1, z1), (s2, z2)])
    (s_lo, z_lo), (s_up, z_up) = ((s1, z1), (s2, z2)) if upper_pass == 2 else ((s2, z2), (s1, z1))
    gap = min(abs(s_up - s_lo), length - abs(s_up - s_lo))
    if gap < 2.0 * ramp_half_length_m:
        raise ValueError(f"bridge ramp_half_length_m = {ramp_half_length_m:g} m: the passes are "
                         f"{gap:.1f} m apart along the track; expected at most half of that")
    d0 = z_up - z_lo
    a = 0.5 * (height_m - d0)

    def dist(c):
        return (s - c + 0.5 * length) % length - 0.5 * length

    dz = a * _window(dist(s_up), ramp_half_length_m) - a * _window(dist(s_lo), ramp_half_length_m)
    xy = P[i, :2] + ti * (P[(i + 1) % M, :2] - P[i, :2])
    info = dict(s_lower_m=float(s_lo), s_upper_m=float(s_up),
                xy_m=[float(v) for v in np.round(xy, 2)],
                height_before_m=float(d0), height_after_m=float(height_m), shift_m=float(a),
                max_added_grade=float(abs(a) * 1.5 * math.sin(math.pi / 3) * math.pi
                                      / (2.0 * ramp_half_length_m)))
    return dz, info


def _repair_missing_elevations(P, labels, n_file):
    """Fill the NaN elevations of a closed loop by linear interpolation in horizontal chord
    length between the nearest points that have one. Returns the points and the records."""
    P = P.copy()
    z = P[:, 2]
    bad = np.flatnonzero(~np.isfinite(z))
    if not len(bad):
        return P, []
    if len(bad) == len(z):
        raise ValueError("every elevation is missing (0); expected elevations to repair from")
    d = np.linalg.norm(np.diff(np.concatenate([P[:, :2], P[:1, :2]]), axis=0), axis=1)
    u = np.concatenate([[0.0], np.cumsum(d)])
    period, u = u[-1], u[:-1]
    ok = np.flatnonzero(np.isfinite(z))
    z_new = z.copy()
    z_new[bad] = np.interp(u[bad], u[ok], z[ok], period=period)
    recs = []
    for k in bad:
        pos = np.searchsorted(ok, k)
        before, after = ok[pos - 1], ok[pos % len(ok)]
        db = (u[k] - u[before]) % period
        da = (u[after] - u[k]) % period
        recs.append(dict(point=int(k), label=labels[k], z_m=float(z_new[k]),
                         before=dict(label=labels[before], z_m=float(z[before]), distance_m=float(db)),
                         after=dict(label=labels[after], z_m=float(z[after]), distance_m=float(da))))
    P[:, 2] = z_new
    return P, recs


def build_circuit(name: str, raw_dir, out_dir=None, params: dict | None = None):
    """Process one raw zaggyai circuit file into a bundled track.

    Steps (parameters in :data:`CIRCUIT_PARAMS`, per-track values in :data:`CIRCUITS`):

    1. the raw file's SHA-256 is checked against the table; lat/lon read and projected with
       pyproj (azimuthal equidistant, centred at the file's start/finish, which is its first
       point); the points checked (:func:`pyomo_lap.track.checks.check_points`: duplicates,
       position spikes, closure; the loop's last point repeats its first and is dropped);
    2. elevations of 0 (missing) repaired: linear interpolation in horizontal chord length
       between the nearest points with an elevation (a recorded repair, with its value);
    3. the Nordschleife's processing (:func:`pyomo_lap.track.build.process_points`): plan view
       smoothed (cut-off ``xy_cutoff_m``), elevations through a Hampel filter, gaps longer
       than ``max_gap_m`` filled, robust smoothing (cut-off ``z_cutoff_m``), 3D spine resampled
       at uniform arc length (``spacing_m``); s = 0 at the start/finish, direction as in
       the file;
    4. a ``bridge`` repair if the table has one (:func:`bridge_correction`), after which the
       spine is resampled at uniform 3D arc length again;
    5. constant width (``width_m``, half each side), banking 0; the result checked
       (:func:`pyomo_lap.track.built_checks.check_track`: grades, crossings without a bridge).

    Parameters
    ----------
    name : str
        A key of :data:`CIRCUITS`.
    raw_dir : str or Path
        Folder with the raw zaggyai JSON files.
    out_dir : str or Path, optional
        If given, write ``<name>.csv`` and ``<name>.json`` there.
    params : dict, optional
        Overrides of :data:`CIRCUIT_PARAMS`.

    Returns
    -------
    track : pyomo_lap.track.geometry.Track
    meta : dict
        The JSON metadata.

    Raises
    ------
    ValueError
        Unknown ``name``; unknown keys in ``params``; the raw file's SHA-256 differs from the
        table's (the message gives both).
    FileNotFoundError
        The raw file is not in ``raw_dir``.
    TrackDataError (a ValueError)
        The raw points or the built track fail the checks.
    """
    entry = CIRCUITS.get(name)
    path = raw_path(name, raw_dir)
    unknown = sorted(set(params or {}) - set(CIRCUIT_PARAMS))
    if unknown:
        raise ValueError(f"params: unknown key(s) {', '.join(map(repr, unknown))}; expected "
                         f"some of {', '.join(CIRCUIT_PARAMS)}")
    prm = dict(CIRCUIT_PARAMS)
    prm.update(params or {})
    raw = _raw_circuit_points(name, path, entry)
    P, labels = raw["P"], raw["labels"]
    s, Pn, L, info = process_points(
        P, True, prm["xy_cutoff_m"], prm["z_cutoff_m"], spacing=prm["spacing_m"],
        grid_spacing=prm["grid_spacing_m"],
        hampel=(prm["hampel_half_window_m"], prm["hampel_n_sigma"], prm["hampel_min_threshold_m"]),
        max_gap=prm["max_gap_m"], robust_iterations=prm["robust_iterations"])
    sig_pts = info.pop("sigma_of_raw_points")
    steps = info.pop("steps", [])
    repairs, records = [], []
    if raw["miss"]:
        _elevation_repair(raw, labels, sig_pts * (L / info["horizontal_length"]), repairs, records)
    bridge = entry.get("bridge")
    if bridge:
        s, Pn, L = _bridge_repair(s, Pn, L, bridge, prm["spacing_m"], repairs, records)
    hw = 0.5 * entry["width_m"]
    track = Track(s, Pn, hw, hw, prm["banking_rad"], closed=True, name=name)
    check_track(track, source=raw["source"])
    meta = _circuit_meta(name, entry, raw, prm, info, steps, repairs, records, hw,
                         track_figures(track, s, Pn, L))
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        n = len(s)
        _write_track_csv(out_dir / f"{name}.csv", s, Pn, np.full(n, hw), np.full(n, hw),
                         np.full(n, prm["banking_rad"]))
        with open(out_dir / f"{name}.json", "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2, ensure_ascii=False, default=_json_default)
            fh.write("\n")
    track.provenance = meta
    return track, meta


def _raw_circuit_points(name: str, path: Path, entry: dict) -> dict:
    """Step 1-2 of :func:`build_circuit`: the raw file checked against its SHA-256, read,
    projected and its points checked; the missing elevations repaired. Returns a dict: ``P``
    (n, 3) [m], ``labels``, ``miss`` (the repaired elevations), ``dropped`` and
    ``missing_file`` (file points), ``n_file``, ``digest``, ``source``, ``d`` (the file's
    data), ``lat0``, ``lon0`` [deg], ``signed_area`` [m^2] of the loop in plan view."""
    if not path.is_file():
        raise FileNotFoundError(f"raw file of circuit {name!r} not found: {path}")
    digest = sha256_file(path)
    if digest != entry["sha256"]:
        raise ValueError(f"raw file {path}: SHA-256 is {digest}, expected {entry['sha256']} "
                         f"(CIRCUITS[{name!r}]['sha256']): not the file of the table")
    d = read_zaggy_json(path)
    lat0, lon0 = d["start_finish"]
    x, y = project_geodetic(d["lat"], d["lon"], lat0, lon0)
    n_file = len(x)
    labels = [f"pts[{i}]" for i in range(n_file)]
    source = f"raw file {path.name}"
    chk = check_points(np.column_stack([x, y, d["elev"]]), True, labels=labels, source=source,
                       z_missing_ok=True, elevation_checks=False, closed_abs_tol=1.0,
                       columns=("lon", "lat", "elev"))
    P, labels = chk.points, chk.labels
    dropped = sorted(set(f"pts[{i}]" for i in range(n_file)) - set(labels),
                     key=lambda t: int(t[4:-1]))
    missing_file = [f"pts[{i}]" for i in np.flatnonzero(~np.isfinite(d["elev"]))]
    P, miss = _repair_missing_elevations(P, labels, n_file)
    signed_area = 0.5 * float(np.sum(P[:, 0] * np.roll(P[:, 1], -1) - np.roll(P[:, 0], -1) * P[:, 1]))
    return dict(P=P, labels=labels, miss=miss, dropped=dropped, missing_file=missing_file,
                n_file=n_file, digest=digest, source=source, d=d, lat0=lat0, lon0=lon0,
                path=path, signed_area=signed_area)


def _elevation_repair(raw: dict, labels: list, s_pts, repairs: list, records: list) -> None:
    """The repair of the missing elevations as a sentence (``repairs``) and a record
    (``records``), located at ``s_pts`` (the arc length of each raw point [m])."""
    miss, dropped, missing_file = raw["miss"], raw["dropped"], raw["missing_file"]
    where = [float(s_pts[r["point"]]) for r in miss]
    extra = ""
    if dropped:
        extra = (f" ({' and '.join(dropped)}, the loop's last point, repeats "
                 f"{labels[0]}, the start/finish, and is dropped)")
    parts = "; ".join(
        f"{r['label']} at s = {w:.1f} m: {r['z_m']:.2f} m, between {r['before']['label']} "
        f"({r['before']['z_m']:.2f} m, {r['before']['distance_m']:.1f} m before) and "
        f"{r['after']['label']} ({r['after']['z_m']:.2f} m, {r['after']['distance_m']:.1f} m "
        "after)" for r, w in zip(miss, where))
    repairs.append(
        f"elevation missing (0 in the file) at {' and '.join(missing_file)}{extra}: "
        f"interpolated linearly along the track: {parts}")
    records.append(dict(kind="elevation_missing", file_points=missing_file,
                        count=len(miss), where_m=[[w, w] for w in where],
                        size=max(abs(r["z_m"]) for r in miss), unit="m",
                        method="linear interpolation in horizontal chord length between "
                               "the nearest points with an elevation",
                        points=miss, detail=repairs[-1]))


def _bridge_repair(s, Pn, L, bridge: dict, spacing: float, repairs: list, records: list):
    """Step 4 of :func:`build_circuit`: the bridge correction (:func:`bridge_correction`), the
    spine resampled at uniform 3D arc length again, the repair said (``repairs``) and recorded
    (``records``). Returns (s, points, length)."""
    dz, binfo = bridge_correction(s, Pn, L, bridge["height_m"], bridge["upper_pass"],
                                  bridge["ramp_half_length_m"])
    Q = Pn.copy()
    Q[:, 2] += dz
    spl = curve_spline(s, Q, True, L)
    s, Pn, L = resample_arclength(spl, 0.0, L, spacing, True)
    repairs.append(
        f"the plan view crosses itself at (x, y) = ({binfo['xy_m'][0]:.1f}, "
        f"{binfo['xy_m'][1]:.1f}) m, s = {binfo['s_lower_m']:.1f} m (lower road: "
        f"{bridge['lower']}) and s = {binfo['s_upper_m']:.1f} m (upper road: "
        f"{bridge['upper']}), {binfo['height_before_m']:.2f} m apart in height after the "
        f"processing: a bridge of {bridge['height_m']:g} m: the upper road raised and the "
        f"lower lowered by {binfo['shift_m']:.2f} m at the crossing, tapered to 0 over "
        f"{bridge['ramp_half_length_m']:g} m either side (window ((1 + cos(pi d / l)) / 2)^2; "
        f"added grade at most {100 * binfo['max_added_grade']:.1f} %). Why "
        f"{bridge['height_m']:g} m: {bridge['reason']}")
    records.append(dict(kind="bridge", count=2,
                        where_m=[[binfo["s_lower_m"] - bridge["ramp_half_length_m"],
                                  binfo["s_lower_m"] + bridge["ramp_half_length_m"]],
                                 [binfo["s_upper_m"] - bridge["ramp_half_length_m"],
                                  binfo["s_upper_m"] + bridge["ramp_half_length_m"]]],
                        size=abs(binfo["shift_m"]), unit="m each road",
                        method=f"bridge of {bridge['height_m']:g} m, C3 taper over "
                               f"+-{bridge['ramp_half_length_m']:g} m",
                        **binfo, detail=repairs[-1]))
    return s, Pn, L


def _circuit_meta(name, entry, raw, prm, info, steps, repairs, records, hw, figures) -> dict:
    """The JSON metadata of a built circuit (``<name>.json``)."""
    d, path, bridge = raw["d"], raw["path"], entry.get("bridge")
    lat0, lon0, signed_area = raw["lat0"], raw["lon0"], raw["signed_area"]
    files = {"loop": dict(file=path.name, sha256=raw["digest"])}
    return dict(
        name=name,
        display_name=entry["display_name"],
        country=entry["country"],
        layout=entry["layout"],
        description=f"{entry['display_name']} ({entry['country']}), {entry['layout']}: the "
                    f"closed loop of zaggyai/track_data file {path.name} ('{d['name']}', "
                    f"'{d['short_name']}'), processed by pyomo_lap.track.circuits",
        closed=True,
        direction=("clockwise" if signed_area < 0 else "counter-clockwise")
        + f" (plan-view signed area of the raw loop {signed_area:.0f} m^2), as in the source "
          "file" + (" (a figure of eight: the sign says which lobe is larger)" if bridge else ""),
        columns=TRACK_CSV_COLUMNS,
        origin=dict(lat_deg=lat0, lon_deg=lon0, note="start/finish of the file (its first point)"),
        projection=projection_string(lat0, lon0),
        crs_note="x, y: azimuthal equidistant projection (pyproj) of WGS84; z: elevation of the "
                 "source (no earth-curvature correction)",
        **figures,
        raw=dict(n_points=raw["n_file"], n_points_used=int(len(raw["P"])), dropped=raw["dropped"],
                 elevation_missing=raw["missing_file"]),
        source=dict(CIRCUIT_SOURCE, files=files, used=dict(loop="plan view (x, y) and elevations")),
        processing=dict(prm, half_width_m=hw,
                        **{k: v for k, v in info.items() if not isinstance(v, np.ndarray)}),
        processing_steps=steps,
        repairs=repairs,
        repair_records=records,
        width_note=entry["width_reason"],
        banking_note="the data have no banking: 0",
    )


# ---------------------------------------------------------------------------------------
# tracks of fastest-lap's database
# ---------------------------------------------------------------------------------------
FASTEST_LAP_SOURCE = dict(repository="https://github.com/juanmanzanero/fastest-lap",
                          commit="0660208aaeea956c9d833cb32a0ae6b4d959ecb9", licence="MIT")
"""Repository, commit and licence of the fastest-lap files (copy of the licence in
``data/tracks/raw/fastest-lap/LICENSE``)."""

FASTEST_LAP_TRACKS = {
    "catalunya_fastest_lap": dict(
        file="catalunya.xml", path="database/tracks/catalunya/catalunya.xml",
        sha256="413802fb59758dea0debcceb8b3a9ec75baad348f3a58d4f7194cdd7a489687f",
        display_name="Circuit de Barcelona-Catalunya, fastest-lap's centreline",
        country="Spain", spacing_m=2.0),
}
"""The bundled tracks read from fastest-lap's XML files (kept unchanged in
``data/tracks/raw/fastest-lap/``): the file, its path in the repository and its SHA-256."""


def build_fastest_lap(name: str, raw_dir, out_dir=None):
    """A bundled track from a fastest-lap XML file: read by
    :meth:`pyomo_lap.track.geometry.Track.from_fastest_lap_xml` (frame changed to x east,
    y north, z up; sides decided geometrically; interpolated, not smoothed) and sampled
    every ``spacing_m`` of arc length; the widths are the file's, banking the file's (0 in a
    2D file). The raw file's SHA-256 is checked against :data:`FASTEST_LAP_TRACKS`.

    Parameters
    ----------
    name : str
        A key of :data:`FASTEST_LAP_TRACKS`.
    raw_dir : str or Path
        The folder holding the raw file.
    out_dir : str or Path, optional
        If given, write ``<name>.csv`` and ``<name>.json`` there.

    Returns
    -------
    track : pyomo_lap.track.geometry.Track
    meta : dict

    Raises
    ------
    ValueError
        Unknown ``name``, a raw file whose SHA-256 differs from the table's.
    FileNotFoundError
        The raw file is not in ``raw_dir``.
    """
    entry = FASTEST_LAP_TRACKS.get(name)
    if entry is None:
        raise ValueError(f"unknown fastest-lap track {name!r}; expected one of "
                         f"{', '.join(FASTEST_LAP_TRACKS)}")
    path = Path(raw_dir) / entry["file"]
    if not path.is_file():
        raise FileNotFoundError(f"raw file of {name} not found: {path}")
    digest = sha256_file(path)
    if digest != entry["sha256"]:
        raise ValueError(f"raw file {path}: SHA-256 {digest}; expected {entry['sha256']} (the "
                         f"file of {FASTEST_LAP_SOURCE['repository']} at {FASTEST_LAP_SOURCE['commit']})")
    tr = Track.from_fastest_lap_xml(path, name=name, spacing=entry["spacing_m"])
    s = tr._s_samples
    tp = tr.evaluate(s)
    figures = track_figures(tr, s, tp.position, tr.length)
    prov = tr.provenance
    meta = dict(
        name=name, display_name=entry["display_name"], country=entry["country"],
        layout=f"fastest-lap's {entry['path']} (the layout of its KML boundaries)",
        description=f"{entry['display_name']}: {FASTEST_LAP_SOURCE['repository']} file "
                    f"{entry['path']}, read by pyomo_lap.track.geometry.Track.from_fastest_lap_xml",
        closed=bool(tr.closed), columns=TRACK_CSV_COLUMNS,
        direction=_direction(tp.position),
        gps_parameters=prov.get("gps_parameters"),
        crs_note="x east, y north [m]: fastest-lap's x and -y (its equirectangular projection "
                 "about GPS_parameters' origin, y pointing south, negated); z up",
        **figures,
        source=dict(FASTEST_LAP_SOURCE, files={"track": dict(file=entry["path"], sha256=digest)}),
        processing=dict(spacing_m=entry["spacing_m"], interpolation="quintic spline, no smoothing"),
        processing_steps=prov.get("processing_steps", []),
        repairs=[], repair_records=[],
        widths="the file's nl, nr (fastest-lap's fit of its KML boundaries), on the sides "
               "found geometrically",
        elevation_note="the file is 2D (dimensions=\"2\"): flat, z = 0",
        banking_note="the file is 2D: no banking, 0")
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        _write_track_csv(out_dir / f"{name}.csv", s, tp.position, tp.width_left,
                         tp.width_right, tp.banking)
        with open(out_dir / f"{name}.json", "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2, ensure_ascii=False, default=_json_default)
            fh.write("\n")
    tr.provenance = meta
    return tr, meta


def _direction(P: np.ndarray) -> str:
    """``'clockwise (plan-view signed area -... m^2)'`` or counter-clockwise, of a loop."""
    x, y = P[:, 0], P[:, 1]
    area = 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))
    return (f"{'clockwise' if area < 0 else 'counter-clockwise'} (plan-view signed area "
            f"{area:.0f} m^2)")
