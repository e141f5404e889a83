"""The bundled Nordschleife: the reproducible processing of the raw zaggyai files into
``data/tracks/nordschleife.csv`` and ``nordschleife.json`` (``python
data/tracks/make_nordschleife.py``; steps and parameters in ``data/tracks/README.md`` and
:data:`NORDSCHLEIFE_PARAMS`).

It sits above :mod:`pyomo_lap.track.geometry` (it makes a :class:`~pyomo_lap.track.geometry.Track`) and uses the
processing functions of :mod:`pyomo_lap.track.build`, which do not depend on the track module.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .build import TRACK_CSV_COLUMNS, process_points, sha256_file, track_figures
from .geometry import Track, _write_track_csv
from .gps import project_geodetic, projection_string, read_zaggy_json

__all__ = ["NORDSCHLEIFE_FILES", "NORDSCHLEIFE_SOURCE", "NORDSCHLEIFE_PARAMS", "build_nordschleife"]


NORDSCHLEIFE_FILES = dict(
    loop="fb7dff20890fd8af44d0a7cf8538cbae--n-rburgring.json",
    btg="1faf22819f42e158cda4a10763939bb0--n-rburgring-btg.json",
    gp="9273312051716dfa2493534ddf9c03e3--n-rburgring.json",
)
NORDSCHLEIFE_SOURCE = dict(
    repository="https://github.com/zaggyai/track_data",
    commit="a8b7ba4a434bccdb9bf5e7d548f9b0cb9c7c05ce",
    licence="MIT",
)
NORDSCHLEIFE_PARAMS = dict(
    xy_cutoff_m=30.0,           # plan-view smoother cut-off wavelength
    z_cutoff_m=400.0,           # elevation smoother cut-off wavelength
    grid_spacing_m=1.0,         # smoothing grid
    spacing_m=2.0,              # output arc-length spacing (adjusted to L / M)
    z_match_max_distance_m=15.0,  # BTG points farther than this from the loop are ignored
    hampel_half_window_m=250.0,
    hampel_n_sigma=3.0,
    hampel_min_threshold_m=8.0,
    robust_iterations=5,        # bisquare IRLS passes (c = 4.685 sigma, sigma >= 1 m)
    robust_min_scale_m=1.0,
    max_gap_m=300.0,            # longer elevation gaps: linear fill between 100 m end medians
    gap_end_window_m=100.0,
    gap_fill_spacing_m=10.0,
    half_width_m=4.0,           # constant, data have no widths (8 m total)
    banking_rad=0.0,            # unknown
)


def build_nordschleife(raw_dir, out_dir=None, params: dict | None = None):
    """Process the raw zaggyai Nordschleife files into the bundled track.

    Steps (parameters in :data:`NORDSCHLEIFE_PARAMS`):

    1. read the closed loop (``loop``) and the bridge-to-gantry file (``btg``);
       project both with pyproj (azimuthal equidistant, centre = the loop's
       start/finish); elevations of 0 are missing;
    2. plan view of the loop smoothed (cut-off ``xy_cutoff_m``) and resampled at
       uniform horizontal arc length sigma (sigma = 0 at the loop's first point,
       which is the start/finish; direction as in the file);
    3. each BTG point projected on the smoothed plan view (-> sigma, rejected if
       farther than ``z_match_max_distance_m``); Hampel filter, linear fill of the
       gantry-bridge gap (and of any gap > ``max_gap_m`` left by the filter), robust
       bisquare IRLS smoothing at cut-off ``z_cutoff_m``;
    4. 3D curve (x, y, z)(sigma) resampled at uniform 3D arc length s.

    Parameters
    ----------
    raw_dir : directory with the three zaggyai JSON files
    out_dir : if given, write ``nordschleife.csv`` and ``nordschleife.json`` there
    params : overrides of :data:`NORDSCHLEIFE_PARAMS`

    Returns
    -------
    track : pyomo_lap.track.geometry.Track
    meta : dict (the JSON metadata)
    """
    prm = dict(NORDSCHLEIFE_PARAMS)
    prm.update(params or {})
    raw_dir = Path(raw_dir)
    files = {k: raw_dir / v for k, v in NORDSCHLEIFE_FILES.items()}
    loop = read_zaggy_json(files["loop"])
    btg = read_zaggy_json(files["btg"])
    lat0, lon0 = loop["start_finish"]
    x, y = project_geodetic(loop["lat"], loop["lon"], lat0, lon0)
    xb, yb = project_geodetic(btg["lat"], btg["lon"], lat0, lon0)
    closing = float(np.hypot(x[-1] - x[0], y[-1] - y[0]))
    pts = np.column_stack([x, y, np.full_like(x, np.nan)])
    if closing < 1e-6:
        pts = pts[:-1]
    signed_area = 0.5 * float(np.sum(pts[:, 0] * np.roll(pts[:, 1], -1) - np.roll(pts[:, 0], -1) * pts[:, 1]))
    s, P, L, info = process_points(
        pts, True, prm["xy_cutoff_m"], prm["z_cutoff_m"], spacing=prm["spacing_m"],
        grid_spacing=prm["grid_spacing_m"], z_points=np.column_stack([xb, yb, btg["elev"]]),
        z_points_max_distance=prm["z_match_max_distance_m"],
        hampel=(prm["hampel_half_window_m"], prm["hampel_n_sigma"], prm["hampel_min_threshold_m"]),
        max_gap=prm["max_gap_m"], robust_iterations=prm["robust_iterations"])
    info.pop("sigma_of_raw_points", None)
    steps = info.pop("steps", [])
    hw = prm["half_width_m"]
    track = Track(s, P, hw, hw, prm["banking_rad"], closed=True, name="nordschleife")
    meta = dict(
        name="nordschleife",
        display_name="Nürburgring Nordschleife",
        country="Germany",
        layout="Nordschleife loop (source short name 'Nsch'; start/finish of the file)",
        description="Nuerburgring Nordschleife loop (zaggyai 'Nsch' file and its start/finish), "
                    "processed from zaggyai/track_data",
        closed=True,
        direction="clockwise (plan-view signed area %.0f m^2 < 0), as in the source file" % signed_area,
        columns=TRACK_CSV_COLUMNS,
        origin=dict(lat_deg=lat0, lon_deg=lon0, note="start/finish of the loop file"),
        projection=projection_string(lat0, lon0),
        crs_note="x, y: azimuthal equidistant projection (pyproj) of WGS84; z: elevation of the source "
                 "(no earth-curvature correction; < 2 m over the 5 km extent)",
        **track_figures(track, s, P, L),
        source=dict(NORDSCHLEIFE_SOURCE,
                    files={k: dict(file=v.name, sha256=sha256_file(v)) for k, v in files.items()},
                    used=dict(loop="plan view (x, y)", btg="elevations", gp="not used (no overlap with "
                              "the Nordschleife loop: nearest points 57 m apart)")),
        processing=dict(prm, **{k: v for k, v in info.items() if not isinstance(v, np.ndarray)}),
        processing_steps=steps,
        width_note="the data have no widths: constant 4.0 m each side (8.0 m total)",
        banking_note="the data have no banking: 0",
    )
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        _write_track_csv(out_dir / "nordschleife.csv", s, P, np.full(len(s), hw), np.full(len(s), hw),
                         np.full(len(s), prm["banking_rad"]))
        with open(out_dir / "nordschleife.json", "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2, ensure_ascii=False, default=_json_default)
            fh.write("\n")
    track.provenance = meta
    return track, meta


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))
