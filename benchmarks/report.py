"""Report benchmark: the size of the full Nordschleife lap's report and the time headless
Chromium takes to open it (targets of issue 35: <= 15 MB, <= 5 s).

Usage (from the repository root)::

    .venv/bin/python benchmarks/report.py                      # solves the full lap (~45 s)
    .venv/bin/python benchmarks/report.py --run /tmp/nring      # an existing results folder
    .venv/bin/python benchmarks/report.py --repeat 5

What is measured, each ``--repeat`` times (the median is printed, with the load average):

* ``write [s]``: :func:`pyomo_lap.plots.report.write_report` (reading the folder, the figures,
  the file);
* ``size [MB]``: the file (plotly.js, 4.8 MB, is embedded);
* ``blank [s]``, ``report [s]``: the wall time of ``chromium --headless --dump-dom`` (the DOM
  is dumped at the load event, when every figure is drawn) of an empty page and of the report,
  and their difference, ``open [s]``: what opening the report adds to starting the browser;
* ``in page [ms]``: marks the report's own scripts write into its root element
  (``performance.now()`` from the start of the navigation): after plotly.js is parsed, after
  each figure, at the load event (``data-load-ms``): the time a browser that is already
  running takes to show the report.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _solve_full_lap(out: Path) -> None:
    print(f"solving the full lap into {out} (about 45 s) ...", flush=True)
    subprocess.run([sys.executable, "-m", "pyomo_lap.cli", "solve", "--full-lap", "-q",
                    "--out", str(out)], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


def main(argv=None) -> int:
    from pyomo_lap.plots.report import chromium_load, find_chromium, write_report
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default=None, help="a results folder (default: solve the full lap)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if find_chromium() is None:
        print("no Chromium: bash scripts/install_chromium.sh")
        return 2
    with tempfile.TemporaryDirectory(prefix="pyomo_lap_report_bench_") as tmp:
        tmp = Path(tmp)
        run = Path(args.run) if args.run else tmp / "nring"
        if args.run is None:
            _solve_full_lap(run)
        blank = tmp / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body>blank</body></html>")
        rows = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            path = write_report([run], out=tmp / "report.html")
            write_s = time.perf_counter() - t0
            b = chromium_load(blank)["wall_s"]
            res = chromium_load(path)
            marks = dict(re.findall(r'data-(ms-[a-z-]+|load-ms)="([0-9]+)"', res["dom"]))
            rows.append({"write": write_s, "blank": b, "report": res["wall_s"],
                         "open": res["wall_s"] - b, "marks": marks,
                         "console": len(res["console"])})
        size = path.stat().st_size / 1e6
    med = {k: statistics.median(r[k] for r in rows) for k in ("write", "blank", "report", "open")}
    print(f"run: {run} ({args.repeat} repeats, medians; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores)")
    print(f"size [MB]    {size:.2f}")
    for k, label in (("write", "write [s]"), ("blank", "blank [s]"), ("report", "report [s]"),
                     ("open", "open [s]")):
        print(f"{label:<12} {med[k]:.2f}   ({', '.join(f'{r[k]:.2f}' for r in rows)})")
    for key in rows[0]["marks"]:
        vals = [int(r["marks"].get(key, -1)) for r in rows]
        print(f"in page {key:<24} {statistics.median(vals):>6.0f} ms  {vals}")
    print(f"console messages: {[r['console'] for r in rows]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
