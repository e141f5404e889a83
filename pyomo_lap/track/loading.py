"""What ``--track`` and :func:`load_track` accept: the registry of track formats
(:data:`TRACK_FORMATS`, one :class:`TrackFormat` per kind of file: its name, suffixes, an
optional test of the file's first lines for the dialects of one suffix, its loader and one line
saying what it holds), :func:`load_track` (a bundled name, or a file through the registry) and
the bundled tracks (:func:`available_tracks`, :func:`bundled_tracks`).

A new kind of track file is one loader function and one :class:`TrackFormat`, added to
:data:`TRACK_FORMATS` here or registered at run time with :func:`register_track_format`
(``docs/architecture.md``, "Add a track format"): :func:`load_track`, ``pyomo-lap solve
--track`` and ``pyomo-lap check --track`` then read it, and the messages and the table of
formats (:func:`track_formats_table`, ``docs/tracks.md``) list it.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..util.paths import data_dir as _data_dir
from . import arcs, formats
from .checks import MAX_GRADE, check_lat_lon_order
from .csv_files import is_gps_table, read_csv_columns, refuse_lat_lon_order
from .geometry import DEFAULT_BANKING, SET_BANKING, SET_WIDTH, Track
from .report import assumption, flat_assumption

__all__ = ["TrackFormat", "TRACK_FORMATS", "register_track_format", "track_format_for",
           "track_suffixes", "track_formats_text", "track_formats_help", "track_formats_table",
           "load_track", "available_tracks", "bundled_tracks", "data_dir"]

HEAD_BYTES = 65536
"""How much of a file's beginning a format's ``sniff`` sees [bytes]."""


@dataclasses.dataclass(frozen=True)
class TrackFormat:
    """One kind of track file that :func:`load_track` reads.

    Attributes
    ----------
    name : str
        Short and unique (``'csv-gps'``); shown in the messages and the table of formats.
    suffixes : tuple of str
        The file suffixes, lower case with the dot (``('.csv',)``); empty: any suffix (then
        ``sniff`` decides).
    load : callable
        ``load(path, *, repair, max_grade, track_width, flat, lat_lon_order)`` returning the
        track (a :class:`~pyomo_lap.track.geometry.Track`, or any object with the interface of
        :class:`~pyomo_lap.track.points.TrackBase`); ``path`` is an existing file. An option
        the format cannot honour is refused with a ``ValueError`` naming the file.
    description : str
        One line: what the file holds (the ``--track`` help, messages, ``docs/tracks.md``).
    sniff : callable, optional
        ``sniff(head) -> bool`` on the file's first :data:`HEAD_BYTES` bytes as text (UTF-8,
        undecodable bytes replaced): whether the file is in this format. Needed when several
        formats share a suffix (the CSV dialects): the formats with a ``sniff`` are asked
        first, in the registry's order; the one without, if any, takes the rest.
    reader : str
        The function that reads it, for the table of formats (default: ``load``'s name).
    """

    name: str
    suffixes: tuple
    load: Callable
    description: str
    sniff: Optional[Callable[[str], bool]] = None
    reader: str = ""

    def __post_init__(self):
        """Suffixes normalised to lower case with a dot; a name and a loader required."""
        if not self.name or not callable(self.load):
            raise ValueError(f"track format {self.name!r}: expected a name and a callable load")
        sfx = tuple(s.lower() if s.startswith(".") else "." + s.lower() for s in self.suffixes)
        object.__setattr__(self, "suffixes", sfx)
        if not sfx and self.sniff is None:
            raise ValueError(f"track format {self.name!r}: expected suffixes, a sniff, or both")
        if not self.reader:
            object.__setattr__(self, "reader", getattr(self.load, "__qualname__", repr(self.load)))


@functools.lru_cache(maxsize=8)
def _head_table(head: str):
    """The CSV table of a file's first lines (:func:`pyomo_lap.track.formats.parse_table`), or
    None when they are not one."""
    try:
        return formats.parse_table(head, "head")
    except ValueError:
        return None


def _sniff_gps_csv(head: str) -> bool:
    """A GPS logger's CSV file: latitude and longitude columns, no x, y."""
    table = _head_table(head)
    return table is not None and is_gps_table(table)


def _sniff_tum_csv(head: str) -> bool:
    """The TUM racetrack database's layout: the header in a comment line, or ``w_tr_`` columns
    (and no latitude and longitude: :func:`_sniff_gps_csv`)."""
    table = _head_table(head)
    return table is not None and not is_gps_table(table) and (
        table.comment_header or any(n.startswith("w_tr_") for n in table.names))


def _load_csv(path: Path, **options):
    """A CSV track file (any dialect): :meth:`Track.from_csv`."""
    return Track.from_csv(path, **options)


def _load_zaggy_json(path: Path, **options):
    """A raw zaggyai/track_data file: :meth:`Track.from_zaggy_json`."""
    return Track.from_zaggy_json(path, **options)


def _load_kml(path: Path, *, track_width=None, **options):
    """Boundaries in KML: :meth:`Track.from_kml` (the widths come from the boundaries)."""
    if track_width is not None:
        raise ValueError(f"track file {path}: the widths of a KML track come from its "
                         f"boundaries; track_width = {track_width!r} cannot replace them")
    return Track.from_kml(path, **options)


def _load_fastest_lap_xml(path: Path, *, lat_lon_order="auto", **options):
    """A fastest-lap track file: :meth:`Track.from_fastest_lap_xml` (x, y: no ``lat_lon_order``)."""
    refuse_lat_lon_order(lat_lon_order, f"track file {path} (fastest-lap XML)")
    return Track.from_fastest_lap_xml(path, **options)


def _load_arc_toml(path: Path, *, track_width=None, lat_lon_order="auto", **options):
    """Straights and arcs: :func:`pyomo_lap.track.arcs.load_arc_track` (flat, checked as it is
    read: ``repair``, ``max_grade`` and ``flat`` do not apply)."""
    refuse_lat_lon_order(lat_lon_order, f"track {str(path)!r} (straights and arcs)")
    return arcs.load_arc_track(path, track_width=track_width)


TRACK_FORMATS = [
    TrackFormat("csv", (".csv",), _load_csv,
                "a centreline x, y, z [m] (optional width_left, width_right [m], banking [rad], "
                "s [m]; separators , ; or tab)", reader="Track.from_csv"),
    TrackFormat("csv-tum", (".csv",), _load_csv,
                "the TUM racetrack database's layout (# x_m,y_m,w_tr_right_m,w_tr_left_m, "
                "optional z_m)", sniff=_sniff_tum_csv, reader="Track.from_csv"),
    TrackFormat("csv-gps", (".csv",), _load_csv,
                "a GPS logger's trace (lat, lon, optional altitude)", sniff=_sniff_gps_csv,
                reader="Track.from_csv -> Track.from_geodetic"),
    TrackFormat("zaggy-json", (".json",), _load_zaggy_json,
                "a raw zaggyai/track_data file (latitude, longitude, elevation)",
                reader="Track.from_zaggy_json"),
    TrackFormat("kml", (".kml",), _load_kml,
                "left and right boundaries (one file with two LineStrings, or NAME_left.kml + "
                "NAME_right.kml; fastest-lap's database)",
                reader="Track.from_kml -> Track.from_boundaries"),
    TrackFormat("fastest-lap-xml", (".xml",), _load_fastest_lap_xml,
                "a fastest-lap track file (<circuit format=\"discrete\">, 2D or 3D)",
                reader="Track.from_fastest_lap_xml"),
    TrackFormat("arcs-toml", (".toml",), _load_arc_toml,
                "straights and arcs (like the bundled dymos_oval)",
                reader="pyomo_lap.track.arcs.load_arc_track"),
]
"""The registry of track formats, in the order the messages and ``docs/tracks.md`` list them
(and, among the formats of one suffix with a ``sniff``, the order they are asked in).
:func:`register_track_format` adds one at run time."""

BUNDLED_NAME = ("bundled name", "a track shipped with the package (pyomo-lap tracks lists them)")
"""What ``--track`` takes besides files: (what, description)."""


def register_track_format(fmt: TrackFormat, replace: bool = False) -> TrackFormat:
    """Add a format to :data:`TRACK_FORMATS` (at the end; ``replace``: in the place of the
    format of the same name).

    Raises
    ------
    ValueError
        A name already registered (without ``replace``), or a second format without ``sniff``
        for a suffix (which of the two would read the file?); the message names both.
    """
    if not isinstance(fmt, TrackFormat):
        raise TypeError(f"expected a TrackFormat, got {type(fmt).__name__}")
    same = [i for i, f in enumerate(TRACK_FORMATS) if f.name == fmt.name]
    if same and not replace:
        raise ValueError(f"track format {fmt.name!r} is registered already "
                         "(register_track_format(..., replace=True) replaces it)")
    if fmt.sniff is None:
        for f in TRACK_FORMATS:
            clash = set(f.suffixes) & set(fmt.suffixes)
            if f.sniff is None and clash and f.name != fmt.name:
                raise ValueError(f"track format {fmt.name!r}: format {f.name!r} reads every "
                                 f"{'/'.join(sorted(clash))} file already; give one of them a sniff")
    if same:
        TRACK_FORMATS[same[0]] = fmt
    else:
        TRACK_FORMATS.append(fmt)
    return fmt


def track_suffixes() -> list:
    """Every registered suffix, in the registry's order, once."""
    return list(dict.fromkeys(s for f in TRACK_FORMATS for s in f.suffixes))


def _read_head(path: Path) -> str:
    """A file's first :data:`HEAD_BYTES` bytes as text (a byte-order mark dropped)."""
    with open(path, "rb") as fh:
        raw = fh.read(HEAD_BYTES)
    return raw.decode("utf-8-sig", errors="replace")


def track_format_for(path) -> TrackFormat:
    """The registered format of a track file: among those of its suffix (and those for any
    suffix), the first whose ``sniff`` accepts the file's first lines, else the one of its
    suffix without a ``sniff``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A folder; no registered format takes the file (one line: the file, its suffix and the
        registered formats).
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"track file not found: {p}")
    if p.is_dir():
        raise ValueError(f"track {str(p)!r} is a folder; expected a file: {track_formats_text()}")
    suffix = p.suffix.lower()
    candidates = [f for f in TRACK_FORMATS if suffix in f.suffixes or not f.suffixes]
    sniffing = [f for f in candidates if f.sniff is not None]
    if sniffing:
        head = _read_head(p)
        for f in sniffing:
            if f.sniff(head):
                return f
    for f in candidates:
        if f.sniff is None:
            return f
    raise ValueError(f"track file {p}: unknown type {suffix or '(no suffix)'!r}; "
                     f"expected {track_formats_text()}")


def _shown_suffixes(f: TrackFormat) -> str:
    """A format's suffixes as the messages show them (``.csv``; ``NAME file`` for a format of
    any suffix)."""
    return "/".join(f.suffixes) or f"{f.name} file"


def track_formats_text() -> str:
    """The registered formats in one line (messages): ``bundled name: ...; .csv: ...``."""
    return "; ".join([f"{BUNDLED_NAME[0]}: {BUNDLED_NAME[1]}"]
                     + [f"{_shown_suffixes(f)}: {f.description}" for f in TRACK_FORMATS])


def track_formats_help() -> str:
    """The registered formats for the ``--track`` help: ``.csv a centreline ...; ...``."""
    return "; ".join(f"{_shown_suffixes(f)} {f.description}" for f in TRACK_FORMATS)


def track_formats_table() -> str:
    """The table of the registered formats in Markdown (``docs/tracks.md`` holds it):
    | format | file | what it holds | read by |."""
    rows = ["| format | file | what it holds | read by |", "|---|---|---|---|"]
    for f in TRACK_FORMATS:
        what = f.description.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
        rows.append(f"| `{f.name}` | {', '.join(f'`{s}`' for s in f.suffixes) or 'any'} | "
                    f"{what} | `{f.reader}` |")
    return "\n".join(rows) + "\n"


def data_dir() -> Path:
    """Data directory (holds ``tracks/``): ``$PYOMO_LAP_DATA``, the checkout's ``data/`` or,
    after ``pip install .``, its installed copy (:func:`pyomo_lap.util.paths.data_dir`)."""
    return _data_dir()


def available_tracks() -> list[str]:
    """Names of the bundled tracks (``<data>/tracks/<name>.csv``), sorted."""
    d = data_dir() / "tracks"
    return sorted(p.stem for p in d.glob("*.csv")) if d.is_dir() else []


def bundled_tracks() -> list[dict]:
    """Every bundled track: those of :func:`available_tracks` (a centreline ``<name>.csv``,
    from its metadata, the ``.json`` next to it; without one, the CSV's ``s_m`` and ``z_m``
    columns) and the arc tracks (``<name>.toml``: straights and arcs,
    :mod:`pyomo_lap.track.arcs`), one dict per track.

    Returns
    -------
    list of dict
        Sorted by name; keys ``name``, ``kind`` (``'centreline'`` or ``'straights and
        arcs'``), ``display_name``, ``country``, ``length_m`` [m], ``elevation_min_m``,
        ``elevation_max_m`` [m], ``closed`` (bool or None: not said), ``repository``,
        ``commit`` (the source's, '' if unknown), ``licence``.

    Raises
    ------
    ValueError
        A metadata file that is not valid JSON, a CSV without ``s_m`` and ``z_m`` columns,
        a bad arc-track file (the message names the file).
    """
    out = [_bundled_csv_row(name) for name in available_tracks()]
    d = data_dir() / "tracks"
    for f in (sorted(d.glob("*.toml")) if d.is_dir() else []):
        tr = arcs.load_arc_track(f)
        src = tr.provenance.get("source") or {}
        out.append(dict(name=f.stem, kind="straights and arcs",
                        display_name=(str(tr.provenance.get("description") or f.stem)
                                      .split(":")[0] + f", curvature {tr.provenance['curvature']}"),
                        country="", length_m=float(tr.length), elevation_min_m=0.0,
                        elevation_max_m=0.0, closed=bool(tr.closed),
                        repository=src.get("repository", ""), commit=src.get("commit", ""),
                        licence=src.get("licence", "")))
    return sorted(out, key=lambda r: r["name"])


def _bundled_csv_row(name: str) -> dict:
    """The row of :func:`bundled_tracks` of the bundled centreline ``<name>.csv``."""
    csv_path = data_dir() / "tracks" / f"{name}.csv"
    meta_path = csv_path.with_suffix(".json")
    meta = {}
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"track metadata {meta_path}: not valid JSON ({exc})") from None
    if "length_m" in meta and "elevation_min_m" in meta and "elevation_max_m" in meta:
        length, zmin, zmax = meta["length_m"], meta["elevation_min_m"], meta["elevation_max_m"]
    else:
        _, data, _, _ = read_csv_columns(csv_path)
        if "s" not in data:
            raise ValueError(f"track file {csv_path}: no 's_m' column and no metadata "
                             f"({meta_path.name}) giving length_m; expected one of them")
        s, z = data["s"], data["z"]
        length = float(np.nanmax(s))
        zmin, zmax = float(np.nanmin(z)), float(np.nanmax(z))
    src = meta.get("source") or {}
    return dict(name=name, kind="centreline", display_name=meta.get("display_name", name),
                country=meta.get("country", ""), length_m=float(length),
                elevation_min_m=float(zmin), elevation_max_m=float(zmax),
                closed=meta.get("closed"), repository=src.get("repository", ""),
                commit=src.get("commit", ""), licence=src.get("licence", ""))


def _is_bundled_name(name_or_path) -> bool:
    """Whether ``name_or_path`` is a bundled centreline's bare name (no folder, no suffix):
    bundled names win over a local file or folder of that name (a results folder written
    with ``--out monza`` must not hide the bundled ``monza``); ``./monza`` reaches the local
    one."""
    if not isinstance(name_or_path, (str, Path)):
        return False
    text = str(name_or_path).strip()
    if not text or "/" in text or "\\" in text or Path(text).suffix:
        return False
    return text.lower() in available_tracks()


def load_track(name_or_path, repair: bool = False, max_grade: float = MAX_GRADE,
               track_width: float | None = None, flat: bool = False,
               lat_lon_order: str = "auto"):
    """Load a bundled track by name or a track file by path, checked (see
    :mod:`pyomo_lap.track.checks`).

    Parameters
    ----------
    name_or_path : str or Path
        A bundled name (:func:`available_tracks`, e.g. ``'nordschleife'``, or an arc track
        such as ``'dymos_oval'``: :func:`bundled_tracks` lists both; a bare bundled name
        wins over a local file or folder of that name, ``'./monza'`` reaches the local one)
        or a file
        of a registered format (:data:`TRACK_FORMATS`, found by :func:`track_format_for`):

        * ``.csv``: a centreline ``x, y, z`` [m] with optional widths, banking and ``s``; the
          TUM racetrack database's layout (``# x_m,y_m,w_tr_right_m,w_tr_left_m``); a
          pyomo_lap ``trajectory.csv``; a GPS logger's trace (``lat, lon[, alt]``)
          (:meth:`Track.from_csv`);
        * ``.json``: a raw zaggyai/track_data file (:meth:`Track.from_zaggy_json`);
        * ``.kml``: left and right boundaries (:meth:`Track.from_kml`; no ``track_width``);
        * ``.xml``: a fastest-lap track file (:meth:`Track.from_fastest_lap_xml`);
        * ``.toml``: straights and arcs (:func:`pyomo_lap.track.arcs.load_arc_track`);
        * any format added with :func:`register_track_format`.
    repair : bool
        Repair the problems of the data where a repair is well defined; the repairs are
        reported (a :class:`~pyomo_lap.track.checks.TrackRepairWarning` each, and
        ``track.findings``, ``track.provenance['repairs']``).
    max_grade : float
        Steepest plausible grade [-].
    track_width : float, optional
        Total width of the track [m], half each side of the centreline, replacing the
        widths of the data (see :meth:`Track.from_csv`). Without it, data without widths get
        4.0 m each side, recorded in ``track.assumptions``.
    flat : bool
        Ignore the data's elevations (noisy ones): z = 0, banking as given; recorded as the
        processing step ``flattened`` and an assumed value. Arc tracks are flat already.
    lat_lon_order : {'auto', 'lat,lon', 'lon,lat'}
        GPS files (a ``lat, lon`` CSV file, ``.json``, ``.kml``): which column (key) holds the
        latitude (:func:`pyomo_lap.track.gps.check_geodetic`): ``'auto'`` as named (read
        swapped only when latitudes beyond 90 deg force it, with ``repair``; both orders valid
        coordinates: said in the processing step ``lat_lon_order``), ``'lat,lon'`` as named,
        ``'lon,lat'`` swapped; the order used: ``track.provenance['lat_lon_order']``.

    Returns
    -------
    Track (or :class:`~pyomo_lap.track.arcs.ArcTrack` for a ``.toml`` arc track)
        ``track.processing_steps`` and ``track.assumptions`` say what the loader did to the
        data and which values it assumed (:mod:`pyomo_lap.track.report`); for a bundled
        track also what was assumed when it was built (its ``.json``: ``width_note``,
        ``banking_note``) and, in ``track.build_repairs``, what was repaired then (its
        ``repairs``); ``track.repairs`` lists those and the loader's repairs.

    Raises
    ------
    ValueError
        Unknown name (the message lists the known names), a file of another type (the
        message lists the accepted ones), a ``track_width`` that is not a positive width in
        metres, a ``lat_lon_order`` not in :data:`~pyomo_lap.track.checks.LAT_LON_ORDERS` or
        other than ``'auto'`` for a track without latitudes and longitudes.
    FileNotFoundError
        A path that does not exist.
    TrackDataError (a ValueError)
        Bad data; every problem is listed.
    """
    check_lat_lon_order(lat_lon_order)
    p = Path(name_or_path)
    if arcs.is_arc_track(name_or_path) and p.suffix.lower() != ".toml":   # a bundled arc track
        refuse_lat_lon_order(lat_lon_order, f"track {str(name_or_path)!r} (straights and arcs)")
        return arcs.load_arc_track(name_or_path, track_width=track_width)
    if not _is_bundled_name(name_or_path) and (p.suffix.lower() in track_suffixes()
                                               or p.exists()):
        fmt = track_format_for(p)
        return fmt.load(p, repair=repair, max_grade=max_grade, track_width=track_width,
                        flat=flat, lat_lon_order=lat_lon_order)
    key = str(name_or_path).strip().lower()
    known = available_tracks()
    if key not in known:
        arcs_dir = data_dir() / "tracks"
        known = sorted(known + [f.stem for f in arcs_dir.glob("*.toml")]) if arcs_dir.is_dir() else known
        raise ValueError(f"unknown track {name_or_path!r}; known tracks: {', '.join(known) or '(none)'}"
                         f" (or pass a file: {', '.join(track_suffixes())})")
    refuse_lat_lon_order(lat_lon_order, f"the bundled track {key!r}")
    csv_path = data_dir() / "tracks" / f"{key}.csv"
    meta_path = csv_path.with_suffix(".json")
    meta = {}
    closed = None
    if meta_path.is_file():
        with open(meta_path, encoding="utf-8") as fh:
            meta = json.load(fh)
        closed = meta.get("closed")
    tr = Track.from_csv(csv_path, name=meta.get("name", key), closed=closed, provenance=meta,
                        repair=repair, max_grade=max_grade, track_width=track_width, flat=flat)
    return _with_build_notes(tr, meta, track_width, flat)


def _with_build_notes(tr: Track, meta: dict, track_width, flat: bool) -> Track:
    """A bundled track with what was assumed (``width_note``, ``elevation_note``,
    ``banking_note`` of its ``.json``) and repaired (``repairs``) when its file was built."""
    # the values assumed when the bundled file was built (its widths and banking are columns)
    notes = []
    if track_width is None and meta.get("width_note"):
        w = tr.evaluate(0.0)
        notes.append(assumption("width", float(w.width_left[0]), "m each side",
                                f"when the bundled file was built: {meta['width_note']}", SET_WIDTH))
    if meta.get("elevation_note") and not flat:
        notes.append(flat_assumption(f"when the bundled file was built: {meta['elevation_note']}",
                                      "a 3D source file"))
    if meta.get("banking_note"):
        notes.append(assumption("banking", DEFAULT_BANKING, "rad",
                                f"when the bundled file was built: {meta['banking_note']}",
                                SET_BANKING))
    if notes:
        tr.provenance["assumptions"] = tr.assumptions + notes
    # the repairs made when the bundled file was built (its .json), then the loader's
    tr.build_repairs = [str(r) for r in meta.get("repairs", [])]
    if tr.build_repairs:
        tr.provenance["repairs"] = tr.repairs
    return tr
