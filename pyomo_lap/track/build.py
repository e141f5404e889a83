"""Processing of raw track data into a smooth arc-length parametrised spine.

The functions here turn noisy, irregularly spaced points (GPS traces, survey
points) into a smooth curve sampled at uniform arc length, which
:mod:`pyomo_lap.track.geometry` then interpolates with a quintic spline.  They are used
both by :func:`pyomo_lap.track.nordschleife.build_nordschleife` (the reproducible
processing behind ``data/tracks/nordschleife.csv``) and by the user-facing loaders
:meth:`pyomo_lap.track.geometry.Track.from_csv` / :meth:`~pyomo_lap.track.geometry.Track.from_zaggy_json`.

Smoothing method
----------------
:func:`penalized_smooth` is a discrete smoothing spline (Whittaker-Eilers
smoother, periodic or open) on a uniform grid of the curve parameter ``u``::

    min_f  sum_i w_i |y_i - f(u_i)|^2  +  lam * integral |f'''(u)|^2 du

with ``f(u_i)`` linear interpolation of the grid values, ``w_i`` the Voronoi
length of sample ``i`` in ``u`` [m] (so the data term approximates an integral
and irregular spacing does not bias the fit) and third differences for the
penalty (the continuous analogue is the quintic smoothing spline, so the
result has smooth third derivatives).  For densely sampled data its transfer
function is ``1 / (1 + lam (2 pi / wavelength)^6)``; it is parametrised by the
half-power *cut-off wavelength* ``Lc`` [m], ``lam = (Lc / (2 pi))^6``:
features much longer than ``Lc`` pass unchanged, shorter ones are removed.

References: Eilers, P.H.C. (2003) "A perfect smoother", Anal. Chem. 75;
Hampel, F.R. (1974) JASA 69 (outlier filter).
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.interpolate import make_interp_spline, PchipInterpolator
from .checks import LAT_LON_ORDERS, check_lat_lon_order  # noqa: F401 (re-exported: its option)

__all__ = [
    "ZaggyData",
    "read_zaggy_json",
    "display_name",
    "project_geodetic",
    "check_geodetic",
    "LAT_LON_ORDERS",
    "check_lat_lon_order",
    "lat_lon_record",
    "voronoi_weights",
    "hampel_filter",
    "penalized_smooth",
    "curve_spline",
    "resample_arclength",
    "interpolate_arclength",
    "position_noise",
    "noise_cutoff",
    "process_points",
    "sha256_file",
    "centreline_from_boundaries",
    "nearest_on_polyline",
    "distance_along_normal",
]

EARTH_ELEV_SCALE = 1e-3   # zaggy elevation unit: mm -> m
LATLON_SCALE = 1e-7       # zaggy lat/lon unit: 1e-7 degree -> degree


# ---------------------------------------------------------------------------
# raw data
# ---------------------------------------------------------------------------
class ZaggyData(dict):
    """Parsed zaggyai/track_data JSON (a dict with numpy arrays).

    Keys: ``name``, ``short_name``, ``lat``, ``lon`` (n,) [deg],
    ``elev`` (n,) [m] (``nan`` where the file has 0 = missing),
    ``start_finish`` (lat, lon) [deg], ``start_finish_given`` (False: the file has none and
    the first point stands for it).
    """


def read_zaggy_json(path) -> ZaggyData:
    """Read a zaggyai/track_data JSON file.

    Parameters
    ----------
    path : str or Path
        File ``{"name","short_name","start_finish":{lat,lon,elev},"pts":[{lat,lon,elev}]}``
        with lat/lon in 1e-7 degree and elev in millimetres.

    Returns
    -------
    ZaggyData
        lat, lon in degrees (n,), elev in metres (n,) with 0 replaced by nan.

    Raises
    ------
    ValueError
        If the file lacks ``pts`` or has fewer than 4 points.
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"track file {path}: not a valid JSON file: {exc}") from None
    except RecursionError:
        from ..util.errors import nested_too_deep
        raise ValueError(f"track file {path}: " + nested_too_deep(
            '{"name": ..., "pts": [{"lat": ..., "lon": ..., "elev": ...}, ...]}')) from None
    pts = d.get("pts") if isinstance(d, dict) else None
    if not isinstance(pts, list) or len(pts) < 4:
        raise ValueError(f"track file {path}: expected a 'pts' list with at least 4 points")
    for i, p in enumerate(pts):
        if not isinstance(p, dict) or "lat" not in p or "lon" not in p:
            raise ValueError(f"track file {path}: point {i} is {p!r}; expected "
                             "{'lat': ..., 'lon': ..., 'elev': ...} (1e-7 degree, mm)")
    try:
        lat = np.array([p["lat"] if p["lat"] is not None else np.nan for p in pts], float) * LATLON_SCALE
        lon = np.array([p["lon"] if p["lon"] is not None else np.nan for p in pts], float) * LATLON_SCALE
        elev = np.array([p.get("elev", 0) if p.get("elev") is not None else 0 for p in pts],
                        float) * EARTH_ELEV_SCALE
    except (TypeError, ValueError) as exc:
        raise ValueError(f"track file {path}: a lat, lon or elev value is not a number ({exc})") from None
    elev[elev == 0.0] = np.nan
    sf_given = bool(d.get("start_finish"))
    sf = d.get("start_finish") or {"lat": pts[0]["lat"], "lon": pts[0]["lon"]}
    if not (isinstance(sf, dict) and isinstance(sf.get("lat"), (int, float))
            and isinstance(sf.get("lon"), (int, float))):
        raise ValueError(f"track file {path}: start_finish is {sf!r}; expected "
                         "{'lat': ..., 'lon': ...} (1e-7 degree)")
    return ZaggyData(
        name=d.get("name", path.stem),
        short_name=d.get("short_name", ""),
        lat=lat,
        lon=lon,
        elev=elev,
        start_finish=(sf["lat"] * LATLON_SCALE, sf["lon"] * LATLON_SCALE),
        start_finish_given=sf_given,
    )


def _word_key(word: str) -> str:
    """A word without accents, case and punctuation (``'Nürburgring,'`` -> ``'nurburgring'``)."""
    import unicodedata
    plain = unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode()
    return "".join(c for c in plain.lower() if c.isalnum())


def _same_word(a: str, b: str) -> bool:
    """Equal, or one an abbreviation of the other (a prefix of at least 3 letters, or a
    common start of at least 5: 'Nurburgr', 'Nurburn' for 'Nurburgring')."""
    if not a or not b:
        return a == b
    if a == b or (min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a))):
        return True
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return common >= 5


def display_name(name: str, short_name: str = "") -> str:
    """The name of a track for messages and results: ``name`` followed by the words of
    ``short_name`` that do not repeat (or abbreviate) one of its words, each word once.

    >>> display_name("WeatherTech Raceway Laguna Seca", "Laguna Seca WeatherTech")
    'WeatherTech Raceway Laguna Seca'
    >>> display_name("Nürburgring", "Nurburgr GP")
    'Nürburgring GP'
    """
    words, keys = [], []
    for w in f"{name or ''} {short_name or ''}".split():
        k = _word_key(w)
        if k and any(_same_word(k, other) for other in keys):
            continue
        words.append(w)
        keys.append(k)
    return " ".join(words)


def projection_string(lat0: float, lon0: float) -> str:
    """PROJ string of the azimuthal equidistant projection centred at (lat0, lon0)."""
    return f"+proj=aeqd +lat_0={lat0:.9f} +lon_0={lon0:.9f} +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"


def project_geodetic(lat, lon, lat0: float, lon0: float):
    """Project WGS84 latitude/longitude to local metric east/north coordinates.

    Uses pyproj with an azimuthal equidistant projection centred at
    ``(lat0, lon0)`` (:func:`projection_string`): distances from the centre
    are exact, the scale error is below 1e-7 within 10 km.

    Parameters
    ----------
    lat, lon : array_like (n,)
        WGS84 coordinates [deg].
    lat0, lon0 : float
        Projection centre [deg].

    Raises
    ------
    ValueError
        A centre that is no position on Earth, or coordinates pyproj cannot project (its
        ``CRSError`` / ``ProjError`` in one sentence).

    Returns
    -------
    x, y : ndarray (n,)
        East and north coordinates [m].
    """
    import pyproj  # lazy: only needed for raw data

    if not (np.isfinite(lat0) and np.isfinite(lon0) and abs(lat0) <= 90.0 and abs(lon0) <= 180.0):
        raise ValueError(f"latitude {lat0:.7f}, longitude {lon0:.7f} deg: not a position on "
                         "Earth (expected |latitude| <= 90 deg and |longitude| <= 180 deg)")
    try:
        tr = pyproj.Transformer.from_crs(
            "EPSG:4326", projection_string(lat0, lon0), always_xy=True
        )
        x, y = tr.transform(np.asarray(lon, float), np.asarray(lat, float))
    except (pyproj.exceptions.CRSError, pyproj.exceptions.ProjError) as exc:
        raise ValueError(f"latitude/longitude around ({lat0:.7f}, {lon0:.7f}) deg cannot be "
                         f"projected: {exc}") from None
    return np.asarray(x, float), np.asarray(y, float)


GEODETIC_LIMITS = {"lat": 90.0, "lon": 180.0}
"""Largest magnitude of a latitude and of a longitude [deg]."""


def _polyline_length(lat, lon) -> float:
    """Length [m] of the polyline of the points (projected about the first one), or nan."""
    ok = np.isfinite(lat) & np.isfinite(lon)
    if ok.sum() < 2:
        return math.nan
    try:
        x, y = project_geodetic(lat[ok], lon[ok], float(lat[ok][0]), float(lon[ok][0]))
    except ValueError:
        return math.nan
    return float(np.hypot(np.diff(x), np.diff(y)).sum())


def check_geodetic(lat, lon, *, start_finish=None, source: str = "track file",
                   labels=None, columns=("lat", "lon"), repair: bool = False,
                   order: str = "auto"):
    """Check that GPS data hold latitudes and longitudes in degrees, in that order, and
    decide their order, before they are projected.

    ``order`` (the option ``lat_lon_order``): ``'lon,lat'`` reads the two columns swapped
    (the one named latitude holds the longitudes) before the rule below, which then applies
    to the columns so read; ``'lat,lon'`` and ``'lon,lat'`` are the user's word, recorded
    in the processing step ``lat_lon_order`` (no ambiguity to report);
    ``'auto'`` reads as named. Rule (every finite value counts; missing ones are left to
    :func:`pyomo_lap.track.checks.check_points`):

    * read as named (|latitude| <= 90 deg, |longitude| <= 180 deg) and not valid read swapped
      (a longitude beyond 90 deg): the order is certain, nothing is reported;
    * valid in both readings (every value within 90 deg): the coordinates cannot tell the
      two apart (the same points read the other way are another place, mirrored and
      stretched by 1 / (cos(latitude) cos(longitude))). Two statistics of the shape, tried
      on the 13 raw files of ``data/tracks/raw`` that are valid read either way (the radii of
      the corners against their heading, the spacing of the points against their heading:
      the reading whose shape depends less on the heading), picked the wrong order for 2 and
      for 5 of them, so the file is read as named and a processing step ``lat_lon_order``
      says so, with the length of the points' polyline in both readings (Zandvoort's 4191 m
      loop read swapped is 5632 m long: compare with the track's known length);
    * valid only swapped (a latitude beyond 90 deg, every longitude within 90 deg): the
      columns are swapped, a finding ``lat_lon_swapped`` (repairable: read swapped);
    * valid in neither reading: a finding ``bad_coordinate`` naming the column, the point
      and the value (another unit than degrees?).

    Parameters
    ----------
    lat, lon : array_like (n,)
        The file's latitude and longitude columns [deg] (NaN: missing).
    start_finish : (float, float), optional
        The file's start/finish (latitude, longitude) [deg]; swapped with the points.
    source : str
        Named in the messages (the file).
    labels : sequence of str, optional
        Where each point is in the file (default ``'point i'``).
    columns : (str, str)
        The file's names of the two columns.
    repair : bool
        Read swapped columns swapped (reported) instead of refusing them.
    order : str
        One of :data:`LAT_LON_ORDERS` (default ``'auto'``).

    Returns
    -------
    lat, lon : ndarray (n,)
        In degrees, in the order decided.
    start_finish : (float, float) or None
        The same for the start/finish.
    findings : list of pyomo_lap.track.checks.Finding
        The repairs made (``lat_lon_swapped``, repaired).
    steps : list of dict
        The processing step ``lat_lon_order`` when both readings are valid or ``order`` is
        given (:func:`pyomo_lap.track.report.step`; its keys ``order``, ``given``,
        ``lengths_m`` (as read, the other way; None: no coordinates) and ``columns``).

    Raises
    ------
    ValueError
        An ``order`` not in :data:`LAT_LON_ORDERS`.
    pyomo_lap.track.checks.TrackDataError (a ValueError)
        Swapped columns without ``repair``, or values that are no latitudes and longitudes.
    """
    order = check_lat_lon_order(order)
    lat = np.asarray(lat, dtype=float).copy()
    lon = np.asarray(lon, dtype=float).copy()
    labels = list(labels) if labels is not None else [f"point {i}" for i in range(len(lat))]
    cl, co = columns
    ok = np.isfinite(lat) & np.isfinite(lon)
    sf = None if start_finish is None else tuple(float(v) for v in start_finish)
    if order == "lon,lat":             # the user's word: the column named latitude is lon
        lat, lon, cl, co = lon, lat, co, cl
        sf = None if sf is None else (sf[1], sf[0])
    if not ok.any():
        return lat, lon, sf, [], []

    def valid(a, b):        # a read as latitudes, b as longitudes
        return bool(np.all(np.abs(a[ok]) <= 90.0) and np.all(np.abs(b[ok]) <= 180.0))

    as_read, swapped = valid(lat, lon), valid(lon, lat)
    if as_read:
        given = order != "auto"
        return lat, lon, sf, [], ([_lat_lon_order_step(lat, lon, ok, cl, co, order, swapped)]
                                  if swapped or given else [])
    if swapped:
        finding = _swapped_finding(lat, lon, ok, cl, co, labels, repair, order)
        if not repair:
            from .checks import TrackDataError
            raise TrackDataError(source, [finding])
        lat, lon = lon, lat
        sf = None if sf is None else (sf[1], sf[0])
        return lat, lon, sf, [finding], []
    raise _coordinates_error(lat, lon, ok, cl, co, labels, source, order)


def _coordinates_error(lat, lon, ok, cl: str, co: str, labels, source: str, order: str):
    """:func:`check_geodetic`'s refusal of values valid in neither reading (``bad_coordinate``
    findings naming the column, the points and the values)."""
    from .checks import Finding, TrackDataError, _list
    read = "" if order == "auto" else f" (lat_lon_order={order!r})"
    problems = []
    for a, name, limit, what in ((lat, cl, 90.0, "latitude"), (lon, co, 180.0, "longitude")):
        bad = np.flatnonzero(ok & (np.abs(a) > limit))
        if len(bad):
            problems.append(Finding(
                "bad_coordinate", f"column '{name}'{read}: {len(bad)} value(s) beyond "
                f"+-{limit:g} deg: {_list(labels, bad, a, ' deg')}; expected a {what} in "
                f"degrees (|{what}| <= {limit:g}; read swapped the values are not valid "
                "either: another unit?)"))
    return TrackDataError(source, problems)


def _lat_lon_order_step(lat, lon, ok, cl: str, co: str, order: str = "auto",
                        other_valid: bool = True) -> dict:
    """The processing step ``lat_lon_order`` of :func:`check_geodetic`: the order given by the
    user (``order``), or both orders valid coordinates and the file read as named; the
    points' length both ways (None read the other way when that is no coordinates)."""
    from .report import step
    given = order != "auto"
    L_read = _polyline_length(lat, lon)
    L_other = _polyline_length(lon, lat) if other_valid else math.nan
    other = f"{L_other:.0f} m" if math.isfinite(L_other) else "no coordinates (beyond 90 deg)"
    how = f"as given (lat_lon_order={order!r})" if given else "as named"
    where = (f"around {np.median(lat[ok]):.5f}, {np.median(lon[ok]):.5f} deg")
    if given:
        detail = (f"'{cl}' read as latitude and '{co}' as longitude, {how}, {where}; the "
                  f"points' polyline is {L_read:.0f} m long as read, read the other way "
                  f"{other}")
    else:
        detail = (f"'{cl}' read as latitude and '{co}' as longitude, as named ({where}): every "
                  f"value is within +-90 deg, so the other order is valid coordinates too, and "
                  f"the data cannot tell which is meant; the points' polyline is {L_read:.0f} m "
                  f"long as read, {other} read swapped (latitude {np.median(lon[ok]):.5f}, "
                  f"longitude {np.median(lat[ok]):.5f} deg, mirrored): if the track is not "
                  f"where the first reading puts it, give lat_lon_order='lon,lat' "
                  f"(--lat-lon-order lon,lat) or swap the two keys in the file")
    method = (f"{how}, {L_read:.0f} m long; read " + ("the other way" if given else
              "swapped (both are valid)") + f" it would be {other}")
    if not math.isfinite(L_other):
        method = f"{how}, {L_read:.0f} m long; read the other way: {other}"
    rec = step("lat_lon_order", detail, method=method, count=int(ok.sum()))
    rec.update(order="lon,lat" if order == "lon,lat" else "lat,lon", given=given,
               lengths_m=[L_read, L_other if math.isfinite(L_other) else None],
               columns=[cl, co])
    return rec


def lat_lon_record(order: str, findings, steps) -> dict:
    """What the loader of a GPS file did about the order of latitude and longitude (its
    ``provenance['lat_lon_order']``, summary.json's ``track_lat_lon_order``).

    Parameters
    ----------
    order : str
        The option ``lat_lon_order`` (:data:`LAT_LON_ORDERS`).
    findings, steps : list
        :func:`check_geodetic`'s findings and processing steps.

    Returns
    -------
    dict
        ``option`` (``order``), ``order`` (``'lat,lon'``: the column named latitude read as
        the latitude; ``'lon,lat'``: read swapped), ``given`` (whether the user gave the
        order) and ``why`` (a few words).
    """
    rec = next((s for s in steps if s.get("step") == "lat_lon_order"), None)
    if rec is not None:
        return dict(option=order, order=rec["order"], given=rec["given"], why=rec["method"])
    read = "lon,lat" if order == "lon,lat" else "lat,lon"
    if any(getattr(f, "kind", "") == "lat_lon_swapped" for f in findings):
        return dict(option=order, order="lat,lon" if read == "lon,lat" else "lon,lat",
                    given=False, why="read swapped (repair): the latitudes as "
                    f"{'given' if order != 'auto' else 'named'} are beyond +-90 deg")
    return dict(option=order, order=read, given=False,
                why="as named: read the other way the values are no coordinates")


LAT_LON_WARN_DIFFERENCE = 0.01
"""Relative difference of the two readings' lengths above which :func:`lat_lon_order_warnings`
warns (below it the order hardly matters to the length)."""


def lat_lon_order_warnings(steps) -> list:
    """One line per processing step ``lat_lon_order`` (:func:`check_geodetic`: both orders
    of a GPS file's columns are valid coordinates) whose two readings differ in length by
    more than :data:`LAT_LON_WARN_DIFFERENCE`: that the order cannot be told from the data,
    the length both ways and how to read the file the other way (the option
    ``lat_lon_order``). None when the user gave the order (the step's ``given``).
    ``pyomo-lap solve`` and ``check`` print them by default.

    Parameters
    ----------
    steps : list of dict
        A track's processing steps (``track.processing_steps``).

    Returns
    -------
    list of str
    """
    out = []
    for rec in steps:
        if rec.get("step") != "lat_lon_order" or rec.get("given") or \
                len(rec.get("lengths_m") or ()) != 2:
            continue
        (named, swapped), (cl, co) = rec["lengths_m"], rec.get("columns") or ("lat", "lon")
        if named is None or swapped is None or not (
                math.isfinite(named) and math.isfinite(swapped)) or \
                abs(named - swapped) <= LAT_LON_WARN_DIFFERENCE * min(named, swapped):
            continue
        out.append(f"track warning: latitude/longitude order cannot be told from the data "
                   f"(both orders are valid coordinates): read as named ('{cl}' latitude, "
                   f"'{co}' longitude) the points are {named:.0f} m long, read the other way "
                   f"{swapped:.0f} m; if the track is {swapped:.0f} m long, give "
                   "--lat-lon-order lon,lat (Python: lat_lon_order='lon,lat') or swap the "
                   f"'{cl}' and '{co}' keys (columns) in the file")
    return out


def _swapped_finding(lat, lon, ok, cl: str, co: str, labels, repair: bool, order: str = "auto"):
    """The finding ``lat_lon_swapped`` of :func:`check_geodetic` (repaired with ``repair``);
    ``cl``, ``co``: the columns as read (swapped by ``order='lon,lat'``)."""
    from .checks import Finding
    i = int(np.flatnonzero(ok)[np.argmax(np.abs(lat[ok]))])   # the latitude farthest beyond 90
    v, k = float(lat[i]), int(np.sum(np.abs(lat[ok]) > 90.0))
    other = "lat,lon" if order == "lon,lat" else "lon,lat"
    read = "" if order == "auto" else f" (read as latitude: lat_lon_order={order!r})"
    return Finding(
        "lat_lon_swapped",
        f"latitude and longitude look swapped: column '{cl}'{read} holds {k} value(s) beyond "
        f"+-90 deg, e.g. {v:.7f} at {labels[i]} (a latitude is at most 90 deg), while every "
        f"'{co}' value is a valid latitude ({np.min(lon[ok]):.5f} to {np.max(lon[ok]):.5f} "
        + (f"deg); expected '{cl}' then '{co}': give lat_lon_order={other!r} (--lat-lon-order "
           f"{other}) or swap the two keys in the file" if order == "auto" else
           f"deg): the order given does not fit the data; expected lat_lon_order={other!r} "
           f"(--lat-lon-order {other})"),
        f"read swapped: the latitudes from '{co}', the longitudes from '{cl}'",
        repaired=bool(repair))


def sha256_file(path) -> str:
    """SHA-256 hex digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------
# generic smoothing tools
# ---------------------------------------------------------------------------
def chord_parameter(points: np.ndarray) -> np.ndarray:
    """Cumulative chord length of a polyline (n,d) -> (n,) [m], starting at 0."""
    d = np.linalg.norm(np.diff(points, axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(d)])


def voronoi_weights(u: np.ndarray, closed: bool, period: float | None = None) -> np.ndarray:
    """Voronoi length of each sample on the parameter line (n,) [m].

    Half the distance to the previous plus half to the next sample; for a
    closed curve the neighbours wrap with ``period``.
    """
    u = np.asarray(u, float)
    if closed:
        nxt = np.diff(np.concatenate([u, [u[0] + period]]))
        prv = np.roll(nxt, 1)
    else:
        d = np.diff(u)
        nxt = np.concatenate([d, [0.0]])
        prv = np.concatenate([[0.0], d])
    return 0.5 * (nxt + prv)


def hampel_filter(u, y, half_window: float, n_sigma: float = 3.0, min_threshold: float = 0.0,
                  closed: bool = False, period: float | None = None):
    """Hampel outlier detector in a parameter (arc-length) window.

    A sample is an outlier when ``|y_i - median| > max(n_sigma * 1.4826 * MAD,
    min_threshold)`` over the samples with ``|u_j - u_i| <= half_window``.
    ``nan`` samples are ignored (and never flagged).

    Parameters
    ----------
    u : (n,) sorted parameter [m]
    y : (n,) values
    half_window : float [m]
    n_sigma : float
    min_threshold : float
        Lower bound of the threshold (use it for quantised data, where the MAD
        can be 0 on plateaus) [same unit as y].
    closed, period : wrap the window around for closed curves.

    Returns
    -------
    outlier : (n,) bool
    median : (n,) float, the window medians
    """
    u = np.asarray(u, float)
    y = np.asarray(y, float)
    ok = np.isfinite(y)
    uu, yy = u[ok], y[ok]
    if closed:
        uu = np.concatenate([uu - period, uu, uu + period])
        yy = np.concatenate([yy, yy, yy])
    med = np.full(y.shape, np.nan)
    out = np.zeros(y.shape, bool)
    lo = np.searchsorted(uu, u - half_window, side="left")
    hi = np.searchsorted(uu, u + half_window, side="right")
    for i in np.flatnonzero(ok):
        win = yy[lo[i]:hi[i]]
        m = np.median(win)
        mad = 1.4826 * np.median(np.abs(win - m))
        med[i] = m
        out[i] = abs(y[i] - m) > max(n_sigma * mad, min_threshold)
    return out, med


def penalized_smooth(u, y, weights, cutoff: float, closed: bool, period: float | None = None,
                     grid_spacing: float = 1.0):
    """Discrete smoothing spline (third-difference Whittaker smoother) on a uniform grid.

    Minimises ``sum_i w_i |y_i - f(u_i)|^2 + lam * int |f'''|^2 du`` with
    ``lam = (cutoff / 2 pi)^6`` (see module docstring).

    Parameters
    ----------
    u : (n,) parameter of the samples, increasing, in [0, period) if closed [m]
    y : (n,) or (n,d) values; rows with nan or zero weight do not count
    weights : (n,) non-negative weights [m] (e.g. :func:`voronoi_weights`)
    cutoff : float
        Half-power cut-off wavelength Lc [m] (> 0).
    closed : bool
        Periodic (closed curve, period ``period``) or open on [u[0], u[-1]].
    grid_spacing : float
        Target spacing of the output grid [m].

    Returns
    -------
    ug : (M,) grid parameter; closed: ``k * period / M``, k = 0..M-1; open: from u[0] to u[-1]
    fg : (M,) or (M,d) smoothed values on the grid

    Raises
    ------
    ValueError
        If cutoff <= 0 or fewer than 4 usable samples.
    """
    u = np.asarray(u, float)
    y = np.asarray(y, float)
    vec = y.ndim == 2
    Y = y if vec else y[:, None]
    w = np.asarray(weights, float).copy()
    bad = ~np.all(np.isfinite(Y), axis=1)
    w[bad] = 0.0
    Y = np.where(np.isfinite(Y), Y, 0.0)
    if cutoff <= 0:
        raise ValueError(f"cutoff must be > 0, got {cutoff}")
    if np.count_nonzero(w > 0) < 4:
        raise ValueError("penalized_smooth needs at least 4 samples with positive weight")
    if closed:
        M = max(int(round(period / grid_spacing)), 8)
        h = period / M
        ug = np.arange(M) * h
        t = np.mod(u, period) / h
    else:
        span = u[-1] - u[0]
        M = max(int(np.ceil(span / grid_spacing)) + 1, 8)
        h = span / (M - 1)
        ug = u[0] + np.arange(M) * h
        t = (u - u[0]) / h
    j0 = np.floor(t).astype(int)
    frac = t - j0
    if closed:
        j0 = np.mod(j0, M)
        j1 = np.mod(j0 + 1, M)
    else:
        j0 = np.clip(j0, 0, M - 2)
        frac = t - j0
        j1 = j0 + 1
    n = len(u)
    rows = np.concatenate([np.arange(n), np.arange(n)])
    cols = np.concatenate([j0, j1])
    vals = np.concatenate([1.0 - frac, frac])
    H = sp.csr_matrix((vals, (rows, cols)), shape=(n, M))
    # third differences (forward), periodic wrap for closed curves
    coef = np.array([-1.0, 3.0, -3.0, 1.0])
    if closed:
        r = np.repeat(np.arange(M), 4)
        c = np.mod(np.arange(M)[:, None] + np.arange(4)[None, :], M).ravel()
        D = sp.csr_matrix((np.tile(coef, M), (r, c)), shape=(M, M))
    else:
        m3 = M - 3
        r = np.repeat(np.arange(m3), 4)
        c = (np.arange(m3)[:, None] + np.arange(4)[None, :]).ravel()
        D = sp.csr_matrix((np.tile(coef, m3), (r, c)), shape=(m3, M))
    lam = (cutoff / (2.0 * np.pi)) ** 6
    W = sp.diags(w)
    A = (H.T @ W @ H + (lam / h**5) * (D.T @ D)).tocsc()
    rhs = H.T @ (w[:, None] * Y)
    lu = spla.splu(A)
    F = lu.solve(np.asarray(rhs))
    return ug, (F if vec else F[:, 0])


def curve_spline(u, points, closed: bool, period: float | None = None, k: int = 5):
    """Interpolating spline through points (n,d) at parameters u (n,).

    Closed: periodic spline on [u[0], u[0] + period] (the first point is appended
    at the end). Open: not-a-knot spline.
    """
    u = np.asarray(u, float)
    P = np.asarray(points, float)
    if closed:
        uu = np.concatenate([u, [u[0] + period]])
        PP = np.concatenate([P, P[:1]], axis=0)
        return make_interp_spline(uu, PP, k=k, bc_type="periodic")
    return make_interp_spline(u, P, k=k)


def _arclength_table(spl, u0: float, u1: float, n_int: int):
    """Cumulative arc length of spline curve on a uniform grid of n_int intervals (5-point Gauss)."""
    ub = np.linspace(u0, u1, n_int + 1)
    xg, wg = np.polynomial.legendre.leggauss(5)
    hs = np.diff(ub)
    uq = (ub[:-1, None] + 0.5 * hs[:, None] * (xg[None, :] + 1.0)).ravel()
    sp_ = np.linalg.norm(spl(uq, 1), axis=-1).reshape(n_int, 5)
    seg = 0.5 * hs * (sp_ @ wg)
    return ub, np.concatenate([[0.0], np.cumsum(seg)])


def resample_arclength(spl, u0: float, u1: float, spacing: float, closed: bool,
                       s_start_u: float | None = None):
    """Sample a parametric spline curve at uniform arc length.

    Parameters
    ----------
    spl : callable, ``spl(u, nu)`` returns (m,d) points / derivatives
    u0, u1 : parameter range (closed: one period)
    spacing : target arc-length spacing [m]; adjusted so that the length is an
        integer multiple (closed) or the last sample hits the end (open)
    closed : bool
    s_start_u : parameter value where s = 0 (closed curves only; default u0)

    Returns
    -------
    s : (M,) uniform arc length [m]; closed: ``k L / M``, k = 0..M-1; open: 0..L
    P : (M,d) curve points at s
    length : float, total length L [m]
    """
    n_int = max(int(np.ceil((u1 - u0) / (0.25 * spacing))), 64)
    ub, sb = _arclength_table(spl, u0, u1, n_int)
    L = sb[-1]
    if closed:
        M = max(int(round(L / spacing)), 8)
        s = np.arange(M) * (L / M)
        if s_start_u is not None:
            s0 = np.interp(np.mod(s_start_u - u0, u1 - u0) + u0, ub, sb)
        else:
            s0 = 0.0
        starget = np.mod(s + s0, L)
    else:
        M = max(int(np.ceil(L / spacing)) + 1, 4)
        s = np.linspace(0.0, L, M)
        starget = s
    inv = PchipInterpolator(sb, ub)
    uq = inv(starget)
    # Newton refinement of s(u) = starget using the quadrature table
    for _ in range(3):
        k = np.clip(np.searchsorted(ub, uq, side="right") - 1, 0, n_int - 1)
        xg, wg = np.polynomial.legendre.leggauss(5)
        a = ub[k]
        hs = uq - a
        uqq = a[:, None] + 0.5 * hs[:, None] * (xg[None, :] + 1.0)
        spd = np.linalg.norm(spl(uqq.ravel(), 1), axis=-1).reshape(uqq.shape)
        sq = sb[k] + 0.5 * hs * (spd @ wg)
        du = (sq - starget)
        if closed:
            du = (du + 0.5 * L) % L - 0.5 * L
        uq = uq - du / np.linalg.norm(spl(uq, 1), axis=-1)
    if closed:
        uq = np.mod(uq - u0, u1 - u0) + u0
    P = spl(uq)
    return s, P, L


KAPPA_NOISE = 2.0e-6
"""[1/m] Standard deviation of the curvature that noise in the points may leave after the
smoothing (:func:`noise_cutoff`): a radius of 500 km; at 80 m/s it moves the lateral
acceleration by 0.013 m/s^2, and a 300 m corner's curvature by 0.06 %."""

MIN_SPACING = 0.5
"""[m] The finest spacing the light smoothing of dense points resolves (its cut-off is at least
3 x this): more points add no geometry a car can feel (a wheelbase is 1.5-3.6 m; at 0.5 m a
corner of radius 10 m is sampled every 2.9 degrees), only noise."""


def position_noise(points, closed: bool) -> float:
    """The standard deviation [m] of the noise in a polyline's positions, from the data.

    Each point's signed distance ``e_i`` from the chord of its two neighbours (plan view) is
    the sagitta ``h^2 kappa / 2`` of the curve plus ``n_i - (n_{i-1} + n_{i+1}) / 2`` of the
    noise; the differences ``d_i = e_{i+1} - e_i`` keep the noise with variance ``5 sigma^2``
    (white noise) and of the curve ``h^3 kappa' / 2``, which is 8 times larger at twice the
    spacing. With ``m1``, ``m2`` the median |d| of the points and of every other point,
    ``sigma^2 = (1.4826^2 / 5) (64 m1^2 - m2^2) / 63`` takes the curve out. Where ``m2 >= 4
    m1`` the curve dominates (points too far apart for their noise to show, e.g. every 10 m on
    a circuit): the noise cannot be told from the geometry and 0 is returned.

    Parameters
    ----------
    points : ndarray (n, 2 or 3)
        [m], in order (a closed loop's last point not repeating the first).
    closed : bool

    Returns
    -------
    float
        sigma [m] (0 for fewer than 12 points, or when the curve dominates).
    """
    P = np.asarray(points, float)[:, :2]
    if len(P) < 12:
        return 0.0
    m1 = float(np.median(np.abs(_sagitta_differences(P, closed))))
    m2 = float(np.median(np.abs(np.concatenate([_sagitta_differences(P[::2], closed),
                                                 _sagitta_differences(P[1::2], closed)]))))
    if not m1 > 0 or m2 >= 4.0 * m1:
        return 0.0
    return float(1.4826 * math.sqrt(max(64.0 * m1 ** 2 - m2 ** 2, 0.0) / 63.0 / 5.0))


def _sagitta_differences(P: np.ndarray, closed: bool) -> np.ndarray:
    """``e_{i+1} - e_i``, ``e_i`` the signed distance of point i from the chord of its
    neighbours (:func:`position_noise`)."""
    if closed:
        a, b, c = np.roll(P, 1, axis=0), P, np.roll(P, -1, axis=0)
    else:
        a, b, c = P[:-2], P[1:-1], P[2:]
    chord = c - a
    L = np.maximum(np.linalg.norm(chord, axis=1), 1e-300)
    e = (chord[:, 0] * (b - a)[:, 1] - chord[:, 1] * (b - a)[:, 0]) / L
    return np.diff(np.concatenate([e, e[:1]])) if closed else np.diff(e)


def noise_cutoff(sigma: float, spacing: float, kappa_noise: float = KAPPA_NOISE) -> float:
    """The shortest cut-off wavelength [m] of :func:`penalized_smooth` that leaves a
    curvature noise of at most ``kappa_noise`` [1/m] (standard deviation) from white position
    noise ``sigma`` [m] at ``spacing`` [m].

    The noise's spectral density is ``sigma^2 spacing / (2 pi)``; the smoother's transfer
    function is ``1 / (1 + (k / kc)^6)`` with ``kc = 2 pi / cutoff``; the curvature noise is
    the second derivative: ``var = (sigma^2 spacing / pi) kc^5 int_0^inf x^4 / (1 + x^6)^2 dx
    = sigma^2 spacing kc^5 / 18`` (the integral is pi / 18). Hence ``kc = (18 kappa_noise^2 /
    (sigma^2 spacing))^(1/5)``.

    Returns
    -------
    float
        [m]; 0 when ``sigma`` is 0.
    """
    if not sigma > 0 or not spacing > 0:
        return 0.0
    kc = (18.0 * kappa_noise ** 2 / (sigma ** 2 * spacing)) ** 0.2
    return float(2.0 * math.pi / kc)


def interpolate_arclength(u, points, extra, closed: bool, period: float | None,
                          spacing: float = 1.0):
    """Smooth samples of a curve interpolated (not smoothed) and resampled at uniform 3D arc
    length, with per-point values carried along (widths, banking).

    A quintic spline through ``points`` and ``extra`` in the parameter ``u`` (periodic with
    ``period`` when ``closed``, :func:`curve_spline`), sampled every ``spacing`` of the arc
    length of its first three columns (:func:`resample_arclength`).

    Parameters
    ----------
    u : ndarray (n,)
        Increasing parameter of the samples [m] (e.g. the file's arc length); closed: in
        ``[0, period)``, the last sample not repeating the first.
    points : ndarray (n, 3)
        x, y, z [m].
    extra : ndarray (n, k)
        Values carried along (k may be 0).
    closed : bool
    period : float or None
        The parameter's period [m] (closed curves).
    spacing : float
        Target arc-length spacing [m].

    Returns
    -------
    s : ndarray (M,)
        Uniform 3D arc length [m].
    P : ndarray (M, 3)
        Points [m].
    E : ndarray (M, k)
        The carried values at the points.
    length : float
        Length of the interpolated curve [m].
    u_to_s : callable
        The map from the parameter ``u`` to the arc length ``s`` (for comparisons at the
        samples).
    """
    u = np.asarray(u, float)
    data = np.column_stack([np.asarray(points, float), np.asarray(extra, float).reshape(len(u), -1)])
    full = curve_spline(u, data, closed, period)
    u0, u1 = (float(u[0]), float(u[0] + period)) if closed else (float(u[0]), float(u[-1]))

    def spl(x, nu=0):                 # the arc length is that of x, y, z only
        v = full(x, nu)
        return v if nu == 0 else v[..., :3]

    s, PE, L = resample_arclength(spl, u0, u1, spacing, closed)
    ub, sb = _arclength_table(spl, u0, u1, max(int(np.ceil((u1 - u0) / (0.25 * spacing))), 64))

    def u_to_s(x):
        x = np.asarray(x, float)
        if closed:
            return np.interp(np.mod(x - u0, u1 - u0) + u0, ub, sb)
        return np.interp(x, ub, sb)

    return s, PE[:, :3], PE[:, 3:], float(L), u_to_s


def process_points(points, closed: bool, xy_cutoff: float, z_cutoff: float | None = None,
                   spacing: float = 2.0, grid_spacing: float | None = None,
                   z_points=None, z_points_max_distance: float = 15.0, hampel=None,
                   max_gap: float | None = 300.0, robust_iterations: int = 0):
    """Smooth and resample a 3D polyline into uniform arc-length samples.

    Steps: consecutive points at the same plan-view position merged
    (:func:`_merge_repeated`); chord-length parameter; horizontal (x, y) smoothing with
    :func:`penalized_smooth` at cut-off ``xy_cutoff`` (0: quintic interpolation instead,
    :func:`_plan_view`); horizontal arc length sigma of the smoothed plan view; z in sigma by
    :func:`smooth_elevation` at cut-off ``z_cutoff`` (default: ``xy_cutoff``; samples whose z
    is nan ignored, optional Hampel filter, gaps longer than ``max_gap`` filled, optional
    robust passes; :func:`_elevation_samples`); 3D quintic spline in sigma; resampling at
    uniform 3D arc length.

    Parameters
    ----------
    points : (n,3) array [m] (z may contain nan)
    closed : bool (closed: the last point must not repeat the first)
    xy_cutoff, z_cutoff : float [m], cut-off wavelengths (0 = interpolate)
    spacing : output arc-length spacing [m]
    grid_spacing : smoothing grid spacing [m] (default min(1, spacing/2, median spacing/2), >= 0.05)
    z_points : (m,3) array [m], optional
        Elevations from other points (e.g. another survey of the same road), matched to the
        plan view by nearest distance; farther than ``z_points_max_distance`` [m]: not used.
    hampel, max_gap, robust_iterations : see :func:`smooth_elevation`

    Returns
    -------
    s : (M,) [m]
    P : (M,3) [m]
    length : float [m]
    info : dict
        Figures of the processing (see :func:`smooth_elevation`), ``sigma_of_raw_points``
        (an array) and ``steps``: what was done to the data, as records of
        :func:`pyomo_lap.track.report.step` located on the arc length ``s`` of the result.
    """
    P = np.asarray(points, float)
    if P.ndim != 2 or P.shape[1] != 3:
        raise ValueError(f"points must have shape (n,3), got {P.shape}")
    n_in = len(P)
    P, merged_into = _merge_repeated(P, closed)
    xy = P[:, :2]
    if closed:
        u = chord_parameter(np.concatenate([xy, xy[:1]]))
        period = u[-1]
        u = u[:-1]
    else:
        u = chord_parameter(xy)
        period = None
    du = np.diff(u)
    med = float(np.median(du))
    if grid_spacing is None:
        grid_spacing = float(np.clip(min(1.0, spacing / 2.0, med / 2.0), 0.05, None))
    # 1. plan view, and its horizontal arc length sigma
    spl_xy, ua, ub_ = _plan_view(u, xy, closed, period, xy_cutoff, grid_spacing)
    sig, XYs, Lh = resample_arclength(spl_xy, ua, ub_, grid_spacing, closed)
    # horizontal arc length of each raw point, through its curve parameter u
    # (not by nearest-point projection, which is ambiguous where the plan view crosses itself)
    utab, stab = _arclength_table(spl_xy, ua, ub_, max(int(np.ceil((ub_ - ua) / (0.25 * grid_spacing))), 64))
    sig_pts = np.interp(u, utab, stab)
    dist = np.linalg.norm(xy - spl_xy(u), axis=1)
    off_line = _distance_to_polyline(XYs, xy, closed)   # how far smoothing moved each point
    # 2. elevation
    zsig, z, far, missing = _elevation_samples(P, sig_pts, XYs, sig, closed, Lh, z_points,
                                               z_points_max_distance)
    zc = xy_cutoff if z_cutoff is None else z_cutoff
    Zs, zinfo = smooth_elevation(zsig, z, closed, Lh, sig, zc, grid_spacing, hampel, max_gap,
                                  robust_iterations=robust_iterations)
    # 3. 3D curve in sigma, resampled at 3D arc length
    P3 = np.column_stack([XYs, Zs])
    spl3 = curve_spline(sig, P3, closed, Lh)
    send = Lh if closed else sig[-1]
    s, Pout, L = resample_arclength(spl3, 0.0, send, spacing, closed)
    to_s = _sigma_to_s(spl3, send, spacing, closed, Lh)   # (for the report, located on s)
    steps = _processing_steps(
        to_s, L, closed, n_in=n_in, merged_at=sig_pts[merged_into] if len(merged_into) else [],
        missing_at=zsig[missing], n_z=len(z), far_at=zsig[far], z_max_distance=z_points_max_distance,
        xy_cutoff=xy_cutoff, xy_at=sig_pts, z_cutoff=zc, zinfo=zinfo, hampel=hampel,
        max_gap=max_gap, robust_iterations=robust_iterations, off_line=off_line)
    info = dict(
        n_raw=int(len(P)),
        raw_length=float(period if closed else u[-1]),
        median_raw_spacing=float(med),
        max_raw_spacing=float(du.max()),
        horizontal_length=float(Lh),
        xy_residual_rms=float(np.sqrt(np.mean(dist**2))),
        xy_residual_max=float(np.max(dist)),
        grid_spacing=float(grid_spacing),
    )
    info.update({k: v for k, v in zinfo.items()
                 if k not in ("z_outliers", "z_downweighted_at", "z_downweighted_residual")})
    info["n_z_missing"] = int(missing.sum())
    if z_points is not None:
        info["n_z_too_far"] = int(far.sum())
    info["sigma_of_raw_points"] = sig_pts
    info["steps"] = steps
    return s, Pout, L, info


def _sigma_to_s(spl3, send: float, spacing: float, closed: bool, Lh: float):
    """The map from the horizontal arc length sigma [m] to the 3D arc length s [m] of the
    result of :func:`process_points` (``spl3``: the 3D curve in sigma), periodic when
    ``closed`` (period ``Lh``)."""
    ub3, sb3 = _arclength_table(spl3, 0.0, send, max(int(np.ceil(send / (0.25 * spacing))), 64))

    def to_s(g):
        g = np.asarray(g, float)
        if not closed:
            return np.interp(g, ub3, sb3)
        k = np.floor(g / Lh)
        return np.interp(g - k * Lh, ub3, sb3) + k * sb3[-1]

    return to_s


def _merge_repeated(P: np.ndarray, closed: bool):
    """Step 0 of :func:`process_points`: consecutive points at the same plan-view position
    merged (and a loop's last point repeating its first). Returns the points and, for each
    merged point, the index among the kept points it was merged into."""
    keep = np.concatenate([[True], np.linalg.norm(np.diff(P[:, :2], axis=0), axis=1) > 1e-9])
    merged_into = np.cumsum(keep)[~keep] - 1      # index (among the kept points) of each merge
    P = P[keep]
    if closed and np.linalg.norm(P[-1, :2] - P[0, :2]) < 1e-9:
        P = P[:-1]
        merged_into = np.append(np.where(merged_into >= len(P), 0, merged_into), 0)
    if len(P) < 4:
        raise ValueError(f"need at least 4 distinct points, got {len(P)}")
    return P, merged_into


def _plan_view(u, xy, closed, period, xy_cutoff, grid_spacing):
    """Step 1 of :func:`process_points`: the plan view as a spline of the chord parameter
    ``u``, smoothed at cut-off ``xy_cutoff`` [m] (0: interpolated). Returns the spline and its
    parameter range."""
    if xy_cutoff and xy_cutoff > 0:
        w = voronoi_weights(u, closed, period)
        ug, XY = penalized_smooth(u, xy, w, xy_cutoff, closed, period, grid_spacing)
        spl_xy = curve_spline(ug, XY, closed, period) if closed else curve_spline(ug, XY, False)
        ua, ub_ = (0.0, period) if closed else (ug[0], ug[-1])
    else:
        spl_xy = curve_spline(u, xy, closed, period)
        ua, ub_ = (0.0, period) if closed else (u[0], u[-1])
    return spl_xy, ua, ub_


def _elevation_samples(P, sig_pts, XYs, sig, closed, Lh, z_points, z_points_max_distance):
    """Step 2 of :func:`process_points`: where the elevation samples sit on the horizontal arc
    length sigma and their values (the points' own, or ``z_points`` matched to the plan view
    by nearest distance; those farther than ``z_points_max_distance`` [m] are NaN). Returns
    (sigma, z, far, missing)."""
    if z_points is None:
        z = P[:, 2].copy()
        return sig_pts, z, np.zeros(len(z), bool), ~np.isfinite(z)
    from scipy.spatial import cKDTree
    ZP = np.asarray(z_points, float)
    tree = cKDTree(XYs)
    _, zidx = tree.query(ZP[:, :2])
    zsig = _project_on_polyline(XYs, sig, ZP[:, :2], zidx, closed, Lh)
    zdist = np.linalg.norm(ZP[:, :2] - XYs[zidx], axis=1)
    far = np.isfinite(ZP[:, 2]) & (zdist > z_points_max_distance)
    z = np.where(far, np.nan, ZP[:, 2])
    return zsig, z, far, ~np.isfinite(ZP[:, 2])


def _distance_to_polyline(Q: np.ndarray, pts: np.ndarray, closed: bool) -> np.ndarray:
    """Distance [m] of each point (n,2) from the polyline Q (M,2) (closed: Q[-1] -> Q[0] too),
    through the two segments at the nearest vertex (:func:`nearest_on_polyline`)."""
    near, _, _ = nearest_on_polyline(Q, pts, closed)
    return np.linalg.norm(np.asarray(pts, float) - near, axis=1)


def _processing_steps(to_s, L, closed, *, n_in, merged_at, missing_at, n_z, far_at,
                      z_max_distance, xy_cutoff, off_line, xy_at, z_cutoff, zinfo, hampel,
                      max_gap, robust_iterations) -> list:
    """The records of what :func:`process_points` did (:func:`pyomo_lap.track.report.step`),
    each located on the arc length s of the result (``to_s`` maps sigma to s)."""
    from .report import step

    def pts(at):
        sv = np.mod(to_s(at), L) if closed else to_s(at)
        return [(v, v) for v in np.sort(sv)]

    out = []
    if len(merged_at):
        out.append(step("points_merged", f"{len(merged_at)} of {n_in} points at the plan-view "
                        "position of the previous one (or a loop's last point repeating its "
                        "first) merged with it", method="same plan-view position",
                        count=len(merged_at), where_m=pts(merged_at)))
    if len(missing_at):
        out.append(step("elevation_missing", f"{len(missing_at)} of {n_z} points have no "
                        "elevation (an empty value, or 0 in a zaggyai file, which means "
                        "missing): their elevation comes from the neighbouring ones",
                        method="no value, or 0 in a zaggyai file", count=len(missing_at),
                        where_m=pts(missing_at)))
    if len(far_at):
        out.append(step("elevation_unmatched", f"{len(far_at)} of {n_z} elevation points "
                        f"farther than {z_max_distance:g} m from the plan view are not used",
                        method=f"> {z_max_distance:g} m off the plan view", count=len(far_at),
                        where_m=pts(far_at)))
    outl = zinfo.get("z_outliers", [])
    if outl:
        hw, ns_, mt = hampel
        k = int(np.argmax([abs(o["deviation"]) for o in outl]))
        out.append(step(
            "outliers_dropped", f"{len(outl)} of {zinfo['n_z_samples']} elevations dropped: "
            f"farther from the median of the elevations within {hw:g} m than max({ns_:g} x "
            f"1.4826 x their median absolute deviation, {mt:g} m) (Hampel filter); the "
            "largest is the distance from that median",
            method=f"Hampel: +-{hw:g} m, {ns_:g} sigma, >= {mt:g} m", count=len(outl),
            where_m=pts([o["at"] for o in outl]), size=abs(outl[k]["deviation"]),
            size_at_m=float(pts([outl[k]["at"]])[0][0])))
    gaps = zinfo.get("z_filled_gaps", [])
    if gaps:
        a = to_s([g["start"] for g in gaps])
        b = to_s([g["end"] for g in gaps])
        lengths = b - a
        k = int(np.argmax(lengths))
        where = [(x % L if closed else x, y % L if closed else y) for x, y in zip(a, b)]
        out.append(step(
            "gap_filled", f"{len(gaps)} stretch(es) without elevation longer than {max_gap:g} m "
            "filled with points every 10 m on the straight line between the medians of the "
            "elevations within 100 m of each end; the largest is the longest stretch",
            method=f"straight line over gaps > {max_gap:g} m", count=len(gaps), where_m=where, size=lengths[k], size_at_m=where[k][0]))
    dw = zinfo.get("z_downweighted_at", [])
    if dw:
        r = np.abs(zinfo["z_downweighted_residual"])
        k = int(np.argmax(r))
        out.append(step(
            "outliers_downweighted", f"{len(dw)} elevations count less than half in the robust "
            f"smoother ({robust_iterations} bisquare passes): about 3 x the scale of the "
            "residuals or more from the smooth profile; the largest is the distance from it",
            method=f"robust smoother, {robust_iterations} passes", count=len(dw), where_m=pts(dw), size=r[k], size_at_m=float(pts([dw[k]])[0][0])))
    if xy_cutoff and xy_cutoff > 0 and len(off_line):
        k = int(np.argmax(off_line))
        out.append(step(
            "smoothing_plan_view", f"plan view smoothed (cut-off wavelength {xy_cutoff:g} m): "
            f"the {len(off_line)} points are {np.sqrt(np.mean(off_line ** 2)):.3g} m (rms) from "
            "the centreline; the largest is the farthest",
            method=f"cut-off {xy_cutoff:.3g} m, rms {np.sqrt(np.mean(off_line ** 2)):.2g} m",
            count=len(off_line),
            where_m=[(0.0, L)], size=off_line[k], size_at_m=float(pts([xy_at[k]])[0][0])))
    if z_cutoff and z_cutoff > 0 and "z_change_max" in zinfo:
        out.append(step(
            "smoothing_elevation", f"elevation smoothed (cut-off wavelength {z_cutoff:g} m): "
            f"it moved the kept elevations by {zinfo['z_change_rms']:.3g} m (rms); the largest "
            "is the largest change",
            method=f"cut-off {z_cutoff:.3g} m, rms {zinfo['z_change_rms']:.2g} m",
            count=zinfo["n_z_samples"] - len(outl),
            where_m=[(0.0, L)], size=zinfo["z_change_max"],
            size_at_m=float(pts([zinfo["z_change_max_at"]])[0][0])))
    return out


def _window_median(su, zs, u0, width, closed, period):
    """Median of zs over samples between u0 and u0 + width (width may be negative)."""
    lo, hi = (u0 + width, u0) if width < 0 else (u0, u0 + width)
    d = su - u0
    if closed:
        d = (d + 0.5 * period) % period - 0.5 * period
    sel = (d >= lo - u0 - 1e-9) & (d <= hi - u0 + 1e-9)
    return float(np.median(zs[sel]))


def smooth_elevation(us, z, closed, period, sig_out, cutoff, grid_spacing, hampel=None,
                     max_gap=300.0, gap_end_window=100.0, gap_fill_spacing=10.0,
                     robust_iterations=0, robust_min_scale=1.0):
    """Robust elevation profile z(sigma) from scattered samples.

    Steps: outliers dropped (:func:`_drop_outliers`), long gaps filled
    (:func:`_fill_long_gaps`), the profile smoothed (:func:`_smooth_profile`).

    Parameters
    ----------
    us : (m,) horizontal arc length of the samples [m]
    z : (m,) elevations [m]; nan = missing
    closed, period : periodic profile of period ``period`` [m]
    sig_out : (K,) where to evaluate the result [m]
    cutoff : smoothing cut-off wavelength [m] (0: interpolation)
    grid_spacing : smoothing grid [m]
    hampel : None or (half_window [m], n_sigma, min_threshold [m]); outliers are dropped
    max_gap : gaps between samples longer than this [m] are filled with pseudo-samples
        (every ``gap_fill_spacing`` m) on the straight line between the medians of the
        samples within ``gap_end_window`` m of each end; None: no filling (the smoother
        then bridges the gap with a natural quintic, which can overshoot)
    robust_iterations : number of iteratively reweighted passes of the smoother with
        Tukey bisquare weights ``(1 - (r / 4.685 sigma)^2)^2`` (0 outside), sigma =
        max(1.4826 MAD(residuals), robust_min_scale [m]); 0: plain least squares

    Returns
    -------
    Z : (K,) smoothed elevation at sig_out [m]; zeros if no sample has an elevation
    info : dict
        ``n_z_samples``, ``n_z_outliers``, ``z_longest_gap`` [m], ``z_filled_gaps`` (list of
        dicts ``start``, ``end`` [m of us], ``length`` [m], ``z_start``, ``z_end`` [m]),
        ``z_robust_downweighted``, ``z_residual_rms`` / ``z_residual_max`` [m] (over the
        samples the smoother saw, pseudo-samples included) and, for the report of what was
        done (:mod:`pyomo_lap.track.report`): ``z_outliers`` (list of dicts ``at`` [m of
        us], ``z``, ``median``, ``deviation`` [m]), ``z_downweighted_at`` and
        ``z_downweighted_residual`` (lists, [m]), ``z_change_rms``, ``z_change_max`` and
        ``z_change_max_at`` [m]: how far the result is from the kept samples of the data.
    """
    us = np.asarray(us, float)
    z = np.asarray(z, float)
    ok = np.isfinite(z)
    info = dict(n_z_samples=int(ok.sum()), n_z_outliers=0)
    if ok.sum() == 0:
        return np.zeros(len(sig_out)), info
    order = np.argsort(us[ok])
    su, zs = us[ok][order], z[ok][order]
    su, zs = _drop_outliers(su, zs, hampel, closed, period, info)
    su, zs, real = _fill_long_gaps(su, zs, closed, period, max_gap, gap_end_window,
                                   gap_fill_spacing, info)
    if len(su) < 4:
        return np.interp(sig_out, su, zs, period=period if closed else None), info
    if cutoff and cutoff > 0:
        Z = _smooth_profile(su, zs, real, closed, period, sig_out, cutoff, grid_spacing,
                            robust_iterations, robust_min_scale, info)
    else:
        if closed:
            Z = curve_spline(su, zs, True, period)(np.mod(sig_out, period))
        else:
            Z = make_interp_spline(su, zs, k=5 if len(su) >= 6 else 1)(sig_out)
    return Z, info


def _drop_outliers(su, zs, hampel, closed, period, info):
    """Elevation samples (sorted) without the outliers of the Hampel filter ``hampel`` (None:
    none dropped); ``info`` gets ``n_z_outliers`` and ``z_outliers``."""
    if hampel is None or len(su) < 8:
        return su, zs
    hw, ns, mt = hampel
    out, med = hampel_filter(su, zs, hw, ns, mt, closed, period)
    info["n_z_outliers"] = int(out.sum())
    info["z_outliers"] = [dict(at=float(su[i]), z=float(zs[i]), median=float(med[i]),
                               deviation=float(zs[i] - med[i])) for i in np.flatnonzero(out)]
    return su[~out], zs[~out]


def _fill_long_gaps(su, zs, closed, period, max_gap, gap_end_window, gap_fill_spacing, info):
    """Gaps longer than ``max_gap`` filled with pseudo-samples on the straight line (in s, z)
    between robust end elevations (median of the samples within ``gap_end_window``). Returns
    the samples and which of them are the data's (not pseudo-samples); ``info`` gets
    ``z_longest_gap`` and ``z_filled_gaps``."""
    real = np.ones(len(su), bool)      # samples of the data (not the pseudo-samples of a fill)
    gaps = np.diff(np.concatenate([su, [su[0] + period]])) if closed else np.diff(su)
    info["z_longest_gap"] = float(gaps.max()) if len(gaps) else 0.0
    if max_gap is None or len(su) < 2:
        return su, zs, real
    add_u, add_z = [], []
    for g in np.flatnonzero(gaps > max_gap):
        ua = su[g]
        ub = su[g + 1] if g + 1 < len(su) else su[0] + period
        za = _window_median(su, zs, ua, -gap_end_window, closed, period)
        zb = _window_median(su, zs, ub, +gap_end_window, closed, period)
        k = max(int(np.ceil((ub - ua) / gap_fill_spacing)), 2)
        uu = np.linspace(ua, ub, k + 1)[1:-1]
        add_u.append(uu)
        add_z.append(za + (zb - za) * (uu - ua) / (ub - ua))
        info.setdefault("z_filled_gaps", []).append(
            dict(start=float(ua), end=float(ub), length=float(ub - ua), z_start=float(za),
                 z_end=float(zb)))
    if add_u:
        uu = np.concatenate(add_u)
        if closed:
            uu = np.mod(uu, period)
        su = np.concatenate([su, uu])
        zs = np.concatenate([zs, np.concatenate(add_z)])
        real = np.concatenate([real, np.zeros(len(uu), bool)])
        o = np.argsort(su, kind="stable")
        su, zs, real = su[o], zs[o], real[o]
    return su, zs, real


def _smooth_profile(su, zs, real, closed, period, sig_out, cutoff, grid_spacing,
                    robust_iterations, robust_min_scale, info):
    """The elevation samples smoothed by :func:`penalized_smooth` at ``cutoff`` (with
    ``robust_iterations`` bisquare passes) and evaluated at ``sig_out``; ``info`` gets the
    residuals and how far the result is from the data's samples."""
    w0 = voronoi_weights(su, closed, period)
    w = w0.copy()
    for _ in range(robust_iterations + 1):
        ug, Zg = penalized_smooth(su, zs, w, cutoff, closed, period if closed else None,
                                  grid_spacing)
        if robust_iterations == 0:
            break
        fit = np.interp(su, ug, Zg, period=period) if closed else np.interp(su, ug, Zg)
        r = zs - fit
        scale = max(1.4826 * np.median(np.abs(r - np.median(r))), robust_min_scale)
        q = r / (4.685 * scale)
        w = w0 * np.where(np.abs(q) < 1.0, (1.0 - q**2) ** 2, 0.0)
    low = w < 0.5 * w0
    info["z_robust_downweighted"] = int(np.count_nonzero(low))
    if closed:
        spl = curve_spline(ug, Zg, True, period)
        Z = spl(np.mod(sig_out, period))
        res = zs - spl(np.mod(su, period))
    else:
        spl = make_interp_spline(ug, Zg, k=5)
        Z = spl(np.clip(sig_out, ug[0], ug[-1]))
        res = zs - spl(su)
    info["z_residual_rms"] = float(np.sqrt(np.mean(res**2)))
    info["z_residual_max"] = float(np.max(np.abs(res)))
    sel = low & real
    info["z_downweighted_at"] = [float(v) for v in su[sel]]
    info["z_downweighted_residual"] = [float(v) for v in res[sel]]
    if real.any():
        r_real = np.abs(res[real])
        k = int(np.argmax(r_real))
        info["z_change_rms"] = float(np.sqrt(np.mean(r_real**2)))
        info["z_change_max"] = float(r_real[k])
        info["z_change_max_at"] = float(su[real][k])
    return Z


def _project_on_polyline(Q, sq, pts, idx, closed, period):
    """Arc-length coordinate of the orthogonal projection of pts on polyline Q (samples sq)."""
    M = len(Q)
    best = np.array(sq[idx], float)
    bestd = np.linalg.norm(pts - Q[idx], axis=1)
    for off in (-1, 0):
        a = idx + off
        b = a + 1
        if closed:
            a = np.mod(a, M)
            b = np.mod(b, M)
        else:
            valid = (a >= 0) & (b < M)
            a = np.clip(a, 0, M - 1)
            b = np.clip(b, 0, M - 1)
        d = Q[b] - Q[a]
        dd = np.maximum(np.sum(d * d, axis=1), 1e-300)
        tt = np.clip(np.sum((pts - Q[a]) * d, axis=1) / dd, 0.0, 1.0)
        proj = Q[a] + tt[:, None] * d
        dist = np.linalg.norm(pts - proj, axis=1)
        seglen = np.sqrt(dd)
        sa = sq[a]
        sval = sa + tt * seglen
        if closed:
            sval = np.mod(sval, period)
        else:
            dist = np.where(valid, dist, np.inf)
        upd = dist < bestd
        best[upd] = sval[upd]
        bestd[upd] = dist[upd]
    return best


# ---------------------------------------------------------------------------
# the bundled Nordschleife
# ---------------------------------------------------------------------------


TRACK_CSV_COLUMNS = dict(s_m="arc length [m]", x_m="east [m]", y_m="north [m]",
                         z_m="elevation [m] (as in the source: height above sea level)",
                         width_left_m="[m]", width_right_m="[m]", banking_rad="[rad]")
"""The columns of a bundled track's CSV and their units (its ``.json``'s ``columns``)."""


def track_figures(track, s, points, length: float) -> dict:
    """Figures of a built track for its metadata (``<name>.json``): length, samples, spacing,
    elevation range and value at the start, grades, tightest radius and where, the spline's
    largest deviation from unit speed, the start point's distance from the origin.

    Parameters
    ----------
    track : pyomo_lap.track.geometry.Track
    s : ndarray, shape (n,)
        Arc length of the samples [m].
    points : ndarray, shape (n, 3)
        The samples x, y, z [m].
    length : float
        Length of the loop [m].

    Returns
    -------
    dict
        ``length_m`` ... ``start_point_offset_m`` (grades [-], lengths [m]); the track is
        evaluated every 0.25 m.
    """
    L, P = float(length), np.asarray(points, dtype=float)
    ss = np.linspace(0.0, L, int(L / 0.25), endpoint=False)
    tp = track.evaluate(ss)
    grade, rad = tp.grade, tp.curvature_radius
    return dict(
        length_m=float(L),
        n_samples=int(len(s)),
        spacing_m=float(L / len(s)),
        elevation_min_m=float(P[:, 2].min()),
        elevation_max_m=float(P[:, 2].max()),
        elevation_at_start_m=float(P[0, 2]),
        max_abs_grade=float(np.max(np.abs(grade))),
        max_uphill_grade=float(grade.max()),
        max_downhill_grade=float(grade.min()),
        min_curvature_radius_m=float(rad.min()),
        s_at_min_radius_m=float(ss[np.argmin(rad)]),
        max_abs_speed_error=float(np.max(np.abs(tp.speed - 1.0))),
        start_point_offset_m=float(np.hypot(P[0, 0], P[0, 1])),
    )


# ---------------------------------------------------------------------------
# boundaries
# ---------------------------------------------------------------------------
def nearest_on_polyline(Q: np.ndarray, pts: np.ndarray, closed: bool):
    """The nearest point of the polyline ``Q`` (M, 2) (closed: ``Q[-1] -> Q[0]`` too) to each
    point of ``pts`` (n, 2), searched on the two segments at the nearest vertex (exact for a
    polyline whose segments are short against its curvature radius).

    Returns
    -------
    near : ndarray (n, 2)
        The nearest points [m].
    seg : ndarray (n,) of int
        The segment they lie on (from ``Q[seg]`` to ``Q[seg + 1]``, wrapped when closed).
    frac : ndarray (n,)
        Where on the segment, 0 to 1.
    """
    from scipy.spatial import cKDTree
    Q = np.asarray(Q, float)
    pts = np.asarray(pts, float)
    M = len(Q)
    _, idx = cKDTree(Q).query(pts)
    near, seg, frac = Q[idx].copy(), np.minimum(idx, M - 1 if closed else M - 2), np.zeros(len(pts))
    if not closed:
        frac = np.where(idx == M - 1, 1.0, 0.0)
    best = np.linalg.norm(pts - near, axis=1)
    for a in (idx - 1, idx):
        b = a + 1
        if closed:
            a, b = np.mod(a, M), np.mod(b, M)
            ok = np.ones(len(pts), bool)
        else:
            ok = (a >= 0) & (b < M)
            a, b = np.clip(a, 0, M - 1), np.clip(b, 0, M - 1)
        d = Q[b] - Q[a]
        dd = np.maximum(np.sum(d * d, axis=1), 1e-300)
        t = np.clip(np.sum((pts - Q[a]) * d, axis=1) / dd, 0.0, 1.0)
        X = Q[a] + t[:, None] * d
        dist = np.where(ok, np.linalg.norm(pts - X, axis=1), np.inf)
        upd = dist < best
        near[upd], seg[upd], frac[upd], best[upd] = X[upd], a[upd], t[upd], dist[upd]
    return near, seg, frac


def _dense_boundary(B: np.ndarray, closed: bool, spacing: float) -> np.ndarray:
    """A boundary (n, 3) resampled every ``spacing`` [m] of its plan-view chord length on a
    modified Akima interpolant through its points (the elevation linearly; NaN where not
    given), so that the nearest points of :func:`centreline_from_boundaries` do not fall on
    chords. Unlike a cubic spline it makes no loop or overshoot at a kink (a boundary drawn on
    a map turns by up to 86 deg at one point: fastest-lap's Catalunya, where a cubic spline
    swings 1.8 m off the drawn line) and follows smooth curves (a circle of radius 94 m drawn
    with 3.3 m segments: within 1 mm). A segment longer than 4 times the median is a straight
    as drawn (a curve is drawn with short segments): interpolated linearly. Points closer than
    5 % of the median spacing to the previous one are merged first."""
    from scipy.interpolate import Akima1DInterpolator
    seg = np.linalg.norm(np.diff(B[:, :2], axis=0), axis=1)
    near = 0.05 * float(np.median(seg))       # points this close to the previous one: merged
    keep, last = [0], B[0, :2]
    for i in range(1, len(B)):                 # (a spline through them would make a loop)
        if np.linalg.norm(B[i, :2] - last) >= near:
            keep.append(i)
            last = B[i, :2]
    if closed and len(keep) > 1 and np.linalg.norm(B[keep[-1], :2] - B[0, :2]) < near:
        keep.pop()
    B = B[keep]
    xy = B[:, :2]
    if closed:
        u = chord_parameter(np.concatenate([xy, xy[:1]]))
        uu = np.linspace(0.0, u[-1], max(int(np.ceil(u[-1] / spacing)), len(B)), endpoint=False)
        z = np.interp(uu, u, np.concatenate([B[:, 2], B[:1, 2]]))
        k = min(3, len(B) - 1)            # a few points of the other end on each side
        uw = np.concatenate([u[-1 - k:-1] - u[-1], u, u[-1] + u[1:k + 1]])
        xyw = np.concatenate([xy[-k:], xy, xy[:1], xy[1:k + 1]])
    else:
        u = chord_parameter(xy)
        uu = np.linspace(0.0, u[-1], max(int(np.ceil(u[-1] / spacing)) + 1, len(B)))
        z = np.interp(uu, u, B[:, 2])
        uw, xyw = u, xy
    if len(uw) < 5:
        return np.column_stack([np.interp(uu, u, xy[:len(u), 0] if not closed else np.append(xy[:, 0], xy[0, 0])),
                                np.interp(uu, u, xy[:len(u), 1] if not closed else np.append(xy[:, 1], xy[0, 1])), z])
    spl = Akima1DInterpolator(uw, xyw, axis=0, method="makima")
    out = spl(uu)
    # a segment much longer than the boundary's typical one is a straight as drawn (a curve is
    # drawn with short segments): linear there, not bowed by the curve at its ends
    ue = np.concatenate([u, [u[-1]]]) if not closed else u
    seg = np.diff(ue)
    xy_closed = np.concatenate([xy, xy[:1]]) if closed else xy
    long = np.flatnonzero(seg > 4.0 * float(np.median(seg[seg > 0])))
    for j in long:
        sel = (uu >= ue[j]) & (uu <= ue[j + 1])
        f = (uu[sel] - ue[j]) / seg[j]
        out[sel] = xy_closed[j] + f[:, None] * (xy_closed[j + 1] - xy_closed[j])
    return np.column_stack([out, z])


def centreline_from_boundaries(left, right, closed: bool, spacing: float = 0.5):
    """Centreline points between two track boundaries, with their half-widths.

    Both boundaries are resampled every ``spacing`` [m] on cubic splines through their points
    (:func:`_dense_boundary`); each point of the left one and the nearest point of the right
    one (plan view) give a midpoint. The half-widths are the midpoints' (plan-view) distances
    to the two resampled boundaries; the elevation is the mean of the two boundaries' (one of
    them where the other has none; NaN where neither has).

    Parameters
    ----------
    left, right : ndarray (n, 3), (m, 3)
        x, y, z [m] (z NaN: not given), in the direction of travel.
    closed : bool
    spacing : float
        [m].

    Returns
    -------
    mid : ndarray (k, 3)
        The centreline points [m].
    width_left, width_right : ndarray (k,)
        [m].
    side : float
        +1 when the left boundary lies left of the direction of travel (the median over the
        midpoints), -1 when it lies right.
    """
    L = _dense_boundary(np.asarray(left, float), closed, spacing)
    R = _dense_boundary(np.asarray(right, float), closed, spacing)
    nr, sr, fr = nearest_on_polyline(R[:, :2], L[:, :2], closed)
    nxt = (sr + 1) % len(R) if closed else np.minimum(sr + 1, len(R) - 1)
    zr = R[sr, 2] + fr * (R[nxt, 2] - R[sr, 2])
    both = np.isfinite(L[:, 2]) & np.isfinite(zr)
    z = np.where(both, 0.5 * (L[:, 2] + zr), np.where(np.isfinite(L[:, 2]), L[:, 2], zr))
    mid = np.column_stack([(L[:, :2] + nr) / 2, z])
    keep = np.concatenate([[True], np.linalg.norm(np.diff(mid[:, :2], axis=0), axis=1) >= 1e-3])
    mid = mid[keep]
    if closed and len(mid) > 1 and np.linalg.norm(mid[-1, :2] - mid[0, :2]) < 1e-3:
        mid = mid[:-1]
    wl = _distance_to_polyline(L[:, :2], mid[:, :2], closed)
    wr = _distance_to_polyline(R[:, :2], mid[:, :2], closed)
    # which side the left boundary is on: the tangent of the midpoints x (left - midpoint)
    t = np.roll(mid[:, :2], -1, axis=0) - np.roll(mid[:, :2], 1, axis=0)
    if not closed:
        t[0], t[-1] = mid[1, :2] - mid[0, :2], mid[-1, :2] - mid[-2, :2]
    v = nearest_on_polyline(L[:, :2], mid[:, :2], closed)[0] - mid[:, :2]
    cross = t[:, 0] * v[:, 1] - t[:, 1] * v[:, 0]
    side = 1.0 if np.median(np.sign(cross)) >= 0 else -1.0
    return mid, wl, wr, side


def distance_along_normal(C, N, B, closed: bool, reach: int = 3) -> np.ndarray:
    """How far from each point ``C`` (n, 2) along its unit normal ``N`` (n, 2) the line
    crosses the polyline ``B`` (m, 2) (closed: ``B[-1] -> B[0]`` too): the half-width of a
    track whose boundary is ``B`` (the edge ``C + t N`` lies on it).

    The crossing is searched on the segments within ``reach`` of the one nearest to the point
    ``C + d N``, d the distance from ``C`` to ``B`` (iterated twice); where the line crosses none
    of them (a kink it passes by), the distance to ``B`` is taken.

    Returns
    -------
    ndarray (n,)
        |t| [m].
    """
    C, N, B = (np.asarray(a, float) for a in (C, N, B))
    M = len(B)
    near, seg, _ = nearest_on_polyline(B, C, closed)
    d = np.linalg.norm(near - C, axis=1)
    sign = np.sign(np.sum((near - C) * N, axis=1))
    sign[sign == 0] = 1.0
    t = sign * d
    found = np.zeros(len(C), bool)
    for _ in range(2):
        _, seg, _ = nearest_on_polyline(B, C + t[:, None] * N, closed)
        best = np.full(len(C), np.inf)
        tn = t.copy()
        for off in range(-reach, reach + 1):
            a = seg + off
            if closed:
                a = np.mod(a, M)
                b = np.mod(a + 1, M)
                ok = np.ones(len(C), bool)
            else:
                ok = (a >= 0) & (a + 1 < M)
                a = np.clip(a, 0, M - 2)
                b = a + 1
            e = B[b] - B[a]
            den = N[:, 0] * e[:, 1] - N[:, 1] * e[:, 0]
            w = B[a] - C
            with np.errstate(divide="ignore", invalid="ignore"):
                tt = (w[:, 0] * e[:, 1] - w[:, 1] * e[:, 0]) / den
                u = (w[:, 0] * N[:, 1] - w[:, 1] * N[:, 0]) / den
            hit = ok & (np.abs(den) > 1e-12) & (u >= -1e-9) & (u <= 1 + 1e-9) & (np.sign(tt) == sign)
            closer = hit & (np.abs(tt - t) < best)
            tn[closer], best[closer] = tt[closer], np.abs(tt - t)[closer]
        found |= np.isfinite(best)
        t = tn
    return np.where(found, np.abs(t), d)
