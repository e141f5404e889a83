"""GPS data: raw zaggyai/track_data files, latitudes and longitudes checked (swapped columns,
the order of the two) and projected, and the track constructors from GPS points
(:meth:`~pyomo_lap.track.geometry.Track.from_geodetic`,
:meth:`~pyomo_lap.track.geometry.Track.from_zaggy_json`: :class:`GpsLoaders`, a base class of
:class:`~pyomo_lap.track.geometry.Track`). A GPS logger's CSV file comes here through
:meth:`~pyomo_lap.track.geometry.Track.from_csv` (:mod:`pyomo_lap.track.csv_files`); the
smoothing of the points is :func:`pyomo_lap.track.build.process_points`.
"""
from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path

import numpy as np
import pyproj

from ..util.errors import nested_too_deep
from . import build as tb, checks as track_checks
from .built_checks import finish as _finish
from .checks import (  # noqa: F401 (re-exported: its option)
    LAT_LON_ORDERS,
    MAX_GRADE,
    Finding,
    TrackDataError,
    _list,
    check_lat_lon_order,
)
from .formats import COLUMNS, split_header
from .report import (
    flat_assumption as _flat_assumption,
    flattened_step as _flattened_step,
    step,
    widths_set_step as _widths_set_step,
)

__all__ = [
    "ZaggyData",
    "read_zaggy_json",
    "display_name",
    "projection_string",
    "project_geodetic",
    "check_geodetic",
    "LAT_LON_ORDERS",
    "check_lat_lon_order",
    "lat_lon_record",
    "lat_lon_order_warnings",
    "names_decide",
    "GpsLoaders",
]

EARTH_ELEV_SCALE = 1e-3   # zaggy elevation unit: mm -> m
LATLON_SCALE = 1e-7       # zaggy lat/lon unit: 1e-7 degree -> degree


# ---------------------------------------------------------------------------
# raw zaggyai files, names, projection, latitude and longitude
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
            raise TrackDataError(source, [finding])
        lat, lon = lon, lat
        sf = None if sf is None else (sf[1], sf[0])
        return lat, lon, sf, [finding], []
    raise _coordinates_error(lat, lon, ok, cl, co, labels, source, order)


def _coordinates_error(lat, lon, ok, cl: str, co: str, labels, source: str, order: str):
    """:func:`check_geodetic`'s refusal of values valid in neither reading (``bad_coordinate``
    findings naming the column, the points and the values)."""
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
        decided = ("the names decide the order" if names_decide(cl, co) else
                   "the data cannot tell which is meant")
        detail = (f"'{cl}' read as latitude and '{co}' as longitude, as named ({where}): every "
                  f"value is within +-90 deg, so the other order is valid coordinates too, and "
                  f"{decided}; the points' polyline is {L_read:.0f} m "
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
               columns=[cl, co], named=names_decide(cl, co))
    return rec


def names_decide(lat_name: str, lon_name: str) -> bool:
    """Whether two columns' (keys') names say which holds the latitude and which the
    longitude (names of :data:`pyomo_lap.track.formats.COLUMNS`'s ``lat`` and ``lon``, a unit
    in brackets allowed: :func:`~pyomo_lap.track.formats.split_header`; a JSON file's
    ``lat``/``lon``, a KML file's coordinates, named by the format): then the names decide
    the order, and values valid in both orders raise no warning
    (:func:`lat_lon_order_warnings`)."""
    return (split_header(str(lat_name))[0] in COLUMNS["lat"]
            and split_header(str(lon_name))[0] in COLUMNS["lon"])


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
    ``lat_lon_order``). None when the user gave the order (the step's ``given``) or the
    columns' names say which is which (the step's ``named``, :func:`names_decide`: a JSON
    file's ``lat`` and ``lon`` keys, a CSV file's ``lat`` and ``lon`` columns).
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
        if rec.get("step") != "lat_lon_order" or rec.get("given") or rec.get("named") or \
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


class GpsLoaders:
    """The constructors of :class:`~pyomo_lap.track.geometry.Track` from GPS points (a base
    class of it: call them as ``Track.from_geodetic``, ``Track.from_zaggy_json``)."""

    @classmethod
    def from_geodetic(cls, lat, lon, elev=None, *, name: str = "track",
                      closed: bool | None = None, start_finish=None,
                      start_finish_given: bool | None = None, origin=None,
                      smoothing: float = 30.0, z_smoothing: float = 400.0, spacing: float = 2.0,
                      hampel=(250.0, 3.0, 8.0), robust_iterations: int = 5,
                      track_width: float | None = None, repair: bool = False,
                      max_grade: float = MAX_GRADE, source: str = "GPS data", labels=None,
                      columns=("lat", "lon", "elev"), cells=None, provenance: dict | None = None,
                      steps=(), no_elevation: str = "the data have no elevation",
                      elevation_hint: str = "elevations in the data",
                      lat_lon_order: str = "auto"):
        """A track from raw GPS points: latitude, longitude [deg] and elevation [m] (NaN:
        missing) in driving order (the processing of :meth:`from_zaggy_json`, which calls
        this, and of a GPS logger's CSV file, :meth:`from_csv`).

        Latitude and longitude are checked first (:func:`pyomo_lap.track.gps.check_geodetic`:
        swapped columns refused, or read swapped with ``repair``; ``lat_lon_order`` (``'auto'``,
        ``'lat,lon'``, ``'lon,lat'``): which is which, the order used in
        ``provenance['lat_lon_order']``); they are projected (azimuthal equidistant, centred
        at ``origin``, else ``start_finish``, else the first point); the points are checked (:func:`pyomo_lap.track.checks.check_points`, without the elevation
        glitch checks, which the processing replaces) and processed by
        :func:`pyomo_lap.track.build.process_points` (plan view smoothed at ``smoothing``,
        elevations through a Hampel filter ``hampel``, gaps longer than 300 m filled, robust
        smoothing at ``z_smoothing``, resampled every ``spacing``); the built track is checked
        (:func:`~pyomo_lap.track.built_checks.check_track`).

        Parameters
        ----------
        lat, lon : array_like (n,)
            [deg].
        elev : array_like (n,), optional
            [m]; NaN where missing; None: no elevation (a flat track, an assumed value).
        name, closed, repair, max_grade
            As :meth:`from_zaggy_json`.
        start_finish, origin : (lat, lon), optional
            [deg]; the projection's centre is ``origin``, else ``start_finish``, else the
            first point; ``start_finish_given``: whether the data gave the start/finish.
        smoothing, z_smoothing, spacing : float
            Cut-off wavelengths of the plan-view and elevation smoothers, spacing [m].
        hampel, robust_iterations
            See :func:`pyomo_lap.track.smoothing.smooth_elevation`.
        track_width : float, optional
            Total width [m], split evenly (default 4.0 m each side, an assumed value).
        source, labels, columns, cells
            For the messages: the data's name, where each point is, the names of latitude,
            longitude and elevation, ``{'x' (lon), 'y' (lat), 'z': {point: text}}`` of
            cells that were not numbers.
        provenance : dict, optional
            Recorded first (``source_file``, ``sha256``); ``steps``: processing steps
            recorded before this processing's.
        no_elevation, elevation_hint : str
            Why the track is flat when no elevation is given, and how to give one.

        Raises
        ------
        ValueError
            A ``track_width`` that is not a positive width in metres; a start/finish (or
            ``origin``) that is no position on Earth; a bad ``lat_lon_order``.
        TrackDataError (a ValueError)
            Bad data; latitude and longitude swapped (without ``repair``) or not valid in
            either order."""
        half = track_checks.check_track_width(track_width)
        lat = np.asarray(lat, dtype=float)
        elev_none = elev is None and any(st["step"] == "flattened" for st in steps)
        elev = np.full(len(lat), np.nan) if elev is None else np.asarray(elev, dtype=float)
        cl, co, ce = columns
        x, y, (lat0, lon0), geo_findings, geo_steps, order = _projected_geodetic(
            lat, lon, start_finish, start_finish_given, origin, source, labels, (cl, co), repair,
            lat_lon_order)
        swapped, P, cells = order["order"] == "lon,lat", np.column_stack([x, y, elev]), cells or {}
        if swapped:
            cells = {"x": cells.get("y", {}), "y": cells.get("x", {}), "z": cells.get("z", {})}
        chk = track_checks.check_points(P, closed, source=source, repair=repair,
                                        max_grade=max_grade, z_missing_ok=True,
                                        elevation_checks=False, closed_abs_tol=1.0,
                                        labels=labels, cells=cells,
                                        columns=(cl, co, ce) if swapped else (co, cl, ce))
        P, closed = chk.points, chk.closed
        s_new, Pn, L, info = tb.process_points(
            P, closed, smoothing, z_smoothing, spacing=spacing, hampel=hampel,
            robust_iterations=robust_iterations)
        info.pop("sigma_of_raw_points", None)
        steps = [st for st in list(steps) + geo_steps + info.pop("steps", []) if not (
            st["step"] == "elevation_missing" and elev_none)] + (   # (ignored: not "missing")
            [_widths_set_step(track_width, [])] if half is not None else [])
        prov = dict(provenance or {})
        prov.update(projection=projection_string(lat0, lon0), lat_lon_order=order,
                    processing=dict(smoothing_cutoff_m=smoothing, z_smoothing_cutoff_m=z_smoothing,
                                    spacing_m=spacing, hampel=list(hampel),
                                    robust_iterations=robust_iterations,
                                    **{k: v for k, v in info.items()
                                       if not isinstance(v, np.ndarray)}),
                    processing_steps=steps)
        if info.get("n_z_samples", 0) == 0:
            prov["assumptions"] = [_flat_assumption(f"{no_elevation}: the track is flat",
                                                    f"{elevation_hint} or a CSV track file "
                                                    "with a z column")]
        tr = cls(s_new, Pn, half, half, None, closed, name, prov)
        return _finish(tr, geo_findings + chk.findings, source, max_grade)

    @classmethod
    def from_zaggy_json(cls, path, name: str | None = None, closed: bool | None = None,
                        smoothing: float = 30.0, z_smoothing: float = 400.0,
                        spacing: float = 2.0, origin=None,
                        hampel=(250.0, 3.0, 8.0), robust_iterations: int = 5,
                        half_width: float | None = None, repair: bool = False,
                        max_grade: float = MAX_GRADE, track_width: float | None = None,
                        flat: bool = False, lat_lon_order: str = "auto"):
        """Load a raw zaggyai/track_data JSON file (lat/lon in 1e-7 deg, elev in mm).

        Processing (same functions and defaults as the bundled Nordschleife, see
        ``data/tracks/README.md``; :meth:`from_geodetic`): azimuthal equidistant projection
        centred at ``origin`` (default: the file's start/finish) with pyproj; plan-view
        smoothing at cut-off ``smoothing`` [m]; elevations of 0 treated as missing,
        Hampel filter ``hampel = (half window [m], n_sigma, min threshold [m])``,
        robust (bisquare IRLS) smoothing at cut-off ``z_smoothing`` [m], gaps longer
        than 300 m filled linearly; resampling at uniform 3D arc length ``spacing``.
        Constant widths (the format has none), banking 0. The points are checked before
        (:func:`pyomo_lap.track.checks.check_points`, without the elevation-glitch checks,
        which the processing replaces) and the built track after
        (:func:`~pyomo_lap.track.built_checks.check_track`).

        Latitude and longitude are checked first (:func:`pyomo_lap.track.gps.check_geodetic`):
        swapped columns (a latitude beyond 90 deg, every longitude a valid latitude) are
        refused with the hint, or read swapped with ``repair``; values valid in neither order
        are refused; when both orders are valid the file is read as named and the processing
        step ``lat_lon_order`` says so, with the length of the points both ways;
        ``lat_lon_order='lon,lat'`` reads the keys swapped (``'lat,lon'``: as named), the
        user's word: no ambiguity reported.

        Every step of the processing that changed the data (missing elevations, outliers
        dropped, gaps filled, elevations down-weighted, smoothing) is recorded in
        ``provenance['processing_steps']`` and every assumed value (widths, banking, a flat
        track when the file has no elevation) in ``provenance['assumptions']``
        (:mod:`pyomo_lap.track.report`).

        Parameters
        ----------
        path : str or Path
        name : str, optional (default: the file's ``name`` followed by the words of its
            ``short_name`` that do not repeat it, :func:`pyomo_lap.track.gps.display_name`)
        closed : bool, optional (None: closed if first and last point coincide
            within 1 m or the gap is at most 2.5 x the median spacing)
        origin : (lat, lon) in degrees, optional
        half_width : float, optional
            Half-width each side [m]; or
        track_width : float, optional
            Total width [m], split evenly. Neither given: 4.0 m each side, an assumed value.
        repair : bool
            Repair the problems where a repair is well defined (reported).
        max_grade : float
            Steepest plausible grade of the result [-].
        flat : bool
            Ignore the file's elevations: a flat track (step ``flattened``, an assumed value).
        lat_lon_order : {'auto', 'lat,lon', 'lon,lat'}
            Which key holds the latitude (:func:`pyomo_lap.track.gps.check_geodetic`).

        Raises
        ------
        ValueError
            Malformed file; ``half_width`` and ``track_width`` both given, or not a positive
            width in metres; a ``lat_lon_order`` not in
            :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS`; a start/finish (or ``origin``) that is no position on Earth (the
            message names it and its value; never pyproj's ``CRSError``).
        TrackDataError (a ValueError)
            Bad data (see :meth:`from_csv`); latitude and longitude swapped (without
            ``repair``) or not valid in either order.
        """
        path = Path(path)
        if half_width is not None and track_width is not None:
            raise ValueError(f"half_width = {half_width!r} m and track_width = {track_width!r} m: "
                             "expected one of them (track_width = 2 x half_width)")
        if half_width is not None:
            track_width = 2.0 * track_checks.check_track_width(half_width, "half_width",
                                                               per_side=True)
        track_checks.check_track_width(track_width)
        d = read_zaggy_json(path)
        return cls.from_geodetic(
            d["lat"], d["lon"], None if flat else d["elev"],
            name=name or display_name(d["name"], d["short_name"]),
            closed=closed, start_finish=d["start_finish"],
            start_finish_given=d.get("start_finish_given"), origin=origin, smoothing=smoothing,
            z_smoothing=z_smoothing, spacing=spacing, hampel=hampel,
            robust_iterations=robust_iterations, track_width=track_width, repair=repair,
            max_grade=max_grade, source=f"track file {path}", lat_lon_order=lat_lon_order,
            provenance=dict(source_file=str(path.resolve()), sha256=tb.sha256_file(path)),
            steps=[_flattened_step(len(d["lat"]))] if flat else (),
            no_elevation=("flat=True: the file's elevations are ignored" if flat else
                          "the file has no elevation (every elev is 0, which means missing)"),
            elevation_hint="flat=False (no --flat)" if flat else "elevations in the file (elev in mm)")


def _projected_geodetic(lat, lon, start_finish, start_finish_given, origin, source, labels,
                        columns, repair, lat_lon_order="auto"):
    """Latitudes and longitudes checked (:func:`pyomo_lap.track.gps.check_geodetic`: in
    degrees, in the order decided (``lat_lon_order``); swapped columns refused, or read swapped
    with ``repair``; both orders valid or the order given: said in a processing step) and
    projected, centred at ``origin``, else ``start_finish``, else the first point. Returns
    x, y [m], the centre (lat0, lon0) [deg], the findings (repaired), the processing steps and
    the order used (:func:`pyomo_lap.track.gps.lat_lon_record`)."""
    lat, lon, start_finish, geo_findings, geo_steps = check_geodetic(
        lat, np.asarray(lon, dtype=float), start_finish=start_finish, source=source,
        labels=labels, columns=columns, repair=repair, order=lat_lon_order)
    order = lat_lon_record(lat_lon_order, geo_findings, geo_steps)
    track_checks._warn(source, geo_findings)
    if start_finish is None:
        ok = np.flatnonzero(np.isfinite(lat) & np.isfinite(lon))
        start_finish = (float(lat[ok[0]]), float(lon[ok[0]])) if len(ok) else (0.0, 0.0)
    lat0, lon0 = origin if origin is not None else start_finish
    try:
        x, y = project_geodetic(lat, lon, lat0, lon0)
    except ValueError as exc:
        where = "origin" if origin is not None else (
            "start_finish" if start_finish_given else
            "the first point (no start_finish)") + " (the projection's centre)"
        raise ValueError(f"{source}: {where}: {exc}") from None
    return x, y, (lat0, lon0), geo_findings, geo_steps, order
