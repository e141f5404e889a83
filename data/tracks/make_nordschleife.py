"""Rebuild data/tracks/nordschleife.csv and nordschleife.json from the raw zaggyai files.

Usage (from the repository root):

    python data/tracks/make_nordschleife.py [RAW_DIR]

RAW_DIR defaults to $PYOMO_LAP_RAW_TRACKS or data/tracks/raw/zaggyai (the copy kept in this repository) and must
contain the three zaggyai/track_data JSON files listed in data/tracks/README.md.
The processing is deterministic; all parameters are in
pyomo_lap.track.nordschleife.NORDSCHLEIFE_PARAMS.
"""
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

from pyomo_lap.track.nordschleife import build_nordschleife


def main(argv):
    raw = Path(argv[1]) if len(argv) > 1 else Path(
        os.environ.get("PYOMO_LAP_RAW_TRACKS", str(Path(__file__).resolve().parent / "raw" / "zaggyai")))
    t0 = time.perf_counter()
    track, meta = build_nordschleife(raw, HERE)
    print(f"built in {time.perf_counter() - t0:.2f} s: {track}")
    for k in ("length_m", "elevation_min_m", "elevation_max_m", "elevation_at_start_m",
              "max_abs_grade", "max_uphill_grade", "max_downhill_grade",
              "min_curvature_radius_m", "s_at_min_radius_m", "max_abs_speed_error",
              "start_point_offset_m", "direction"):
        print(f"  {k}: {meta[k]}")


if __name__ == "__main__":
    main(sys.argv)
