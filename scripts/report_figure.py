"""Make docs/figures/report.png: the headless Chromium screenshot of the report of the default
2 km job (``pyomo-lap solve``, Nordschleife 0-2000 m, fsae).

Usage (from the repository root)::

    .venv/bin/python scripts/report_figure.py [--run RESULTS_FOLDER]

Without ``--run`` it solves the default job into a temporary folder first (about 5 s).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from pyomo_lap.plots.report import chromium_load, write_report
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default=None)
    ap.add_argument("--png", default=str(ROOT / "docs" / "figures" / "report.png"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pyomo_lap_report_fig_") as tmp:
        run = Path(args.run) if args.run else Path(tmp) / "default_job"
        if args.run is None:
            subprocess.run([sys.executable, "-m", "pyomo_lap.cli", "solve", "-q", "--out",
                            str(run)], check=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        path = write_report([run], out=Path(tmp) / "report.html")
        res = chromium_load(path, screenshot=args.png, window=(1400, 2200), budget_ms=5000)
    if res["console"]:
        print("\n".join(res["console"]))
        return 1
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
