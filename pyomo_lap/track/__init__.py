"""The track: the :class:`~.geometry.Track` (spine, frames, Ω, dΩ/ds, :mod:`.geometry`) and its
constructors from files (:mod:`.csv_files`, :mod:`.gps`, :mod:`.boundaries`; the files read by
:mod:`.formats`), the registry of track formats and :func:`~.loading.load_track`
(:mod:`.loading`), raw-data processing (:mod:`.build`, :mod:`.smoothing`), checks and repairs
(:mod:`.checks`, :mod:`.built_checks`), records of what was done to the data (:mod:`.report`),
the bundled Nordschleife's build (:mod:`.nordschleife`) and the other bundled circuits'
(:mod:`.circuits`). Imports :mod:`pyomo_lap.util` only.
"""
from .checks import TrackDataError  # noqa: F401
from .geometry import Track, TrackPoints  # noqa: F401
from .loading import TrackFormat, available_tracks, load_track, register_track_format  # noqa: F401
