"""Rebuild the bundled tracks (data/tracks/<name>.csv and <name>.json) from the raw zaggyai files.

Usage (from the repository root):

    python data/tracks/make_tracks.py [--raw RAW_DIR] [--out OUT_DIR] [NAME ...]

NAME: any of the circuits of pyomo_lap.track.circuits.CIRCUITS (monza, silverstone, suzuka, ...),
nordschleife, or one of pyomo_lap.track.circuits.FASTEST_LAP_TRACKS (catalunya_fastest_lap,
read from data/tracks/raw/fastest-lap); none: all of them. RAW_DIR (the zaggyai files)
defaults to $PYOMO_LAP_RAW_TRACKS or data/tracks/raw/zaggyai (the copy kept in this
repository); OUT_DIR to data/tracks. The
processing is deterministic (rebuilding gives the same bytes); parameters in
pyomo_lap.track.circuits.CIRCUIT_PARAMS and CIRCUITS, and
pyomo_lap.track.nordschleife.NORDSCHLEIFE_PARAMS.
"""
import argparse
import os
import sys
import time
from pathlib import Path

from pyomo_lap.track.circuits import (CIRCUITS, FASTEST_LAP_TRACKS, build_circuit,
                                      build_fastest_lap)
from pyomo_lap.track.nordschleife import build_nordschleife

HERE = Path(__file__).resolve().parent
NAMES = ["nordschleife", *CIRCUITS, *FASTEST_LAP_TRACKS]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"tracks to build ({', '.join(NAMES)}); "
                    "default: all")
    ap.add_argument("--raw", type=Path, default=Path(os.environ.get(
        "PYOMO_LAP_RAW_TRACKS", str(HERE / "raw" / "zaggyai"))), help="folder of the raw files")
    ap.add_argument("--out", type=Path, default=HERE, help="where to write <name>.csv and .json")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in NAMES]
    if unknown:
        ap.error(f"unknown track(s) {', '.join(unknown)}; expected some of {', '.join(NAMES)}")
    for name in args.names or NAMES:
        t0 = time.perf_counter()
        if name == "nordschleife":
            track, meta = build_nordschleife(args.raw, args.out)
        elif name in FASTEST_LAP_TRACKS:
            track, meta = build_fastest_lap(name, HERE / "raw" / "fastest-lap", args.out)
        else:
            track, meta = build_circuit(name, args.raw, args.out)
        print(f"{name}: built in {time.perf_counter() - t0:.2f} s: {meta['length_m']:.1f} m, "
              f"elevation {meta['elevation_min_m']:.1f}-{meta['elevation_max_m']:.1f} m, "
              f"max grade {meta['max_abs_grade']:.3f}, min radius "
              f"{meta['min_curvature_radius_m']:.1f} m, "
              f"{meta.get('direction', 'direction as in the file').split(' (')[0]}")
        for r in meta.get("repairs", []):
            print(f"  repaired: {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
