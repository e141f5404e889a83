"""The track: the :class:`~.geometry.Track` (spine, frames, Ω, dΩ/ds) and its loaders
(:mod:`.geometry`), raw-data processing (:mod:`.build`), checks and repairs (:mod:`.checks`),
records of what was done to the data (:mod:`.report`), the bundled Nordschleife's build
(:mod:`.nordschleife`) and the other bundled circuits' (:mod:`.circuits`). Imports :mod:`pyomo_lap.util` only.
"""
from .checks import TrackDataError  # noqa: F401
from .geometry import Track, TrackPoints, available_tracks, load_track  # noqa: F401
