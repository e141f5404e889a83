"""Channel quality benchmark: zig-zags, speed consistency, lap time, iterations and time of the
formulations of the controls and meshes, on the default job, the full lap and every bundled
circuit, and the mesh sensitivity of the peaks.

Usage (from the repository root)::

    .venv/bin/python benchmarks/channels.py                       # the study: every variant,
                                                                  # default job and full lap
    .venv/bin/python benchmarks/channels.py --variants default --jobs default full-lap
    .venv/bin/python benchmarks/channels.py --circuits [--validate]   # every bundled circuit's
                                                                  # closed lap, default options,
                                                                  # and pyomo-lap validate of each
    .venv/bin/python benchmarks/channels.py --peaks               # peaks at 10 m and 5 m elements
    .venv/bin/python benchmarks/channels.py --markdown            # tables for docs/formulation.md

Every run is the CLI itself (``pyomo-lap solve ... --quiet --out TMP`` in a child process, one
at a time); its wall time is everything the user waits for. The figures come from the
``summary.json`` the run wrote: ``channel_quality`` (:func:`pyomo_lap.verify.quality.channel_quality`:
the zig-zag count of each channel with its threshold, the speed consistency), ``lap_time_s``,
``iterations``, ``timing.solve_s``, ``nlp.n_variables``, ``mesh.n_elements``.

The variants (``--ocp-option`` values of ``pyomo-lap solve``):

* ``point``: a value of each control at every collocation point, uniform 10 m elements (the
  formulation before issue 22: steering jumps penalized with ``K_delta``);
* ``point+force-jumps``: the same with the journal paper's penalty on the force jumps too
  (eq (41), ``K_force``);
* ``piecewise``: controls constant in each element (the paper's u_i), uniform mesh;
* ``state-uniform``: controls as states with penalized rates (``control_form=state``), uniform
  10 m elements;
* ``default``: controls as states and the adaptive mesh (``control_form=state``,
  ``mesh=adaptive``: the defaults);
* ``state-ncp3``: controls as states, uniform 10 m elements with three collocation points.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

VARIANTS = {
    "point": ["--ocp-option", "control_form=point", "--ocp-option", "mesh=uniform"],
    "point+force-jumps": ["--ocp-option", "control_form=point", "--ocp-option", "mesh=uniform",
                          "--ocp-option", "K_force=1e-8"],
    "piecewise": ["--ocp-option", "control_form=point", "--ocp-option", "mesh=uniform",
                  "--ocp-option", "piecewise_constant_controls=true"],
    "state-uniform": ["--ocp-option", "control_form=state", "--ocp-option", "mesh=uniform"],
    "default": [],
    "state-ncp3": ["--ocp-option", "control_form=state", "--ocp-option", "mesh=uniform",
                   "--ncp", "3"],
}

JOBS = {"default": [], "full-lap": ["--full-lap"]}

TARGET_CHANNELS = ("delta", "alpha_1", "f_11z", "speed", "a_y")
"""The channels of the issue's targets (0 zig-zags on the default job, <= 5 on a lap)."""

PEAKS = {
    "brake force min f_xb [N]": ("f_xb", "min"),
    "traction max f_xa [N]": ("f_xa", "max"),
    "a_x min [m/s^2]": ("a_x", "min"),
    "a_x max [m/s^2]": ("a_x", "max"),
    "a_y min [m/s^2]": ("a_y", "min"),
    "a_y max [m/s^2]": ("a_y", "max"),
    "speed max [km/h]": ("speed_kmh", "max"),
    "speed min [km/h]": ("speed_kmh", "min"),
    "f_11z max [N]": ("f_11z", "max"),
    "delta max |.| [deg]": ("delta", "absmax"),
}
"""Peaks compared between 10 m and 5 m elements (``--peaks``)."""


def _cli():
    exe = Path(sys.executable).parent / "pyomo-lap"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pyomo_lap.cli"]


def run(args, out: Path) -> dict:
    """One CLI solve into ``out``; returns the summary with ``wall_s`` added."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    cmd = _cli() + ["solve", "--quiet", "--out", str(out)] + list(args)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"failed": True, "wall_s": wall, "returncode": proc.returncode,
                "output": (proc.stdout + proc.stderr)[-800:], "args": args}
    s = json.loads((out / "summary.json").read_text())
    s["wall_s"] = wall
    s["args"] = args
    return s


def row(name: str, job: str, s: dict) -> dict:
    """The figures of one run."""
    if s.get("failed"):
        return {"variant": name, "job": job, "lap_s": None, "note": f"exit {s['returncode']}"}
    q = s.get("channel_quality", {})
    z = q.get("zigzags", {})
    out = {"variant": name, "job": job, "lap_s": s["lap_time_s"],
           "elements": s.get("mesh", {}).get("n_elements", s.get("nfe")),
           "n_var": s.get("nlp", {}).get("n_variables", s.get("n_variables")),
           "iters": s.get("iterations"), "solve_s": s.get("timing", {}).get("solve_s"),
           "wall_s": s["wall_s"]}
    for ch in TARGET_CHANNELS:
        out[f"zz_{ch}"] = z.get(ch, {}).get("count")
    out["zz_all"] = q.get("zigzag_total")
    sc = q.get("speed_consistency", {})
    out["dv_max_mps"] = sc.get("max_error_mps")
    return out


def _markdown(rows, cols) -> str:
    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.4f}" if abs(v) < 1000 else f"{v:.1f}"
        return str(v)
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    return head + "".join("| " + " | ".join(fmt(r.get(c)) for c in cols) + " |\n" for r in rows)


def _print(rows, markdown: bool, extra=()):
    cols = ["variant", "job", "lap_s", "elements", "n_var", "iters", "solve_s", "wall_s"] + \
        [f"zz_{c}" for c in TARGET_CHANNELS] + ["zz_all", "dv_max_mps"] + list(extra)
    if markdown:
        print(_markdown(rows, cols))
        return
    print("  ".join(f"{c:>10s}" for c in cols))
    for r in rows:
        print("  ".join(f"{r.get(c):>10.4f}" if isinstance(r.get(c), float) else f"{str(r.get(c)):>10s}"
                        for c in cols))


def study(variants, jobs, markdown: bool):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for job in jobs:
            for name in variants:
                s = run(VARIANTS[name] + JOBS[job], Path(tmp) / f"{name}-{job}")
                rows.append(row(name, job, s))
                print(f"# {name} {job}: lap {rows[-1]['lap_s']}, {rows[-1].get('wall_s', 0):.1f} s",
                      file=sys.stderr, flush=True)
    _print(rows, markdown)
    return rows


def validate(folder: Path) -> dict:
    """``pyomo-lap validate FOLDER`` in a child process: its verdict, the worst check and its
    wall time [s]."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    t0 = time.perf_counter()
    proc = subprocess.run(_cli() + ["validate", str(folder), "--no-plots"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    try:
        v = json.loads((folder / "validation.json").read_text())
    except (OSError, ValueError):
        return {"verdict": f"exit {proc.returncode}", "validate_s": wall}
    worst = [c for c in v.get("checks", []) if c.get("verdict") == v.get("verdict")]
    return {"verdict": v.get("verdict"), "validate_s": wall, "exit": proc.returncode,
            "worst": ", ".join(c["name"] for c in worst) if v.get("verdict") != "pass" else ""}


def circuits(markdown: bool, with_validate: bool = False, names=None):
    from pyomo_lap.track.circuits import CIRCUITS
    names = names or ["nordschleife"] + sorted(CIRCUITS)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            folder = Path(tmp) / name
            s = run(["--track", name, "--full-lap"], folder)
            rows.append(row(name, "full-lap", s))
            if with_validate and not s.get("failed"):
                rows[-1].update(validate(folder))
            print(f"# {name}: lap {rows[-1]['lap_s']}, {rows[-1].get('wall_s', 0):.1f} s "
                  f"{rows[-1].get('verdict', '')}", file=sys.stderr, flush=True)
    _print(rows, markdown, extra=("verdict", "validate_s", "worst") if with_validate else ())
    return rows


def peaks(markdown: bool):
    import numpy as np
    import pandas as pd
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for h in (10, 5):
            folder = Path(tmp) / f"h{h}"
            s = run(["--ocp-option", f"element_length={h}"], folder)
            df = pd.read_parquet(folder / "trajectory.parquet")
            vals = {}
            for label, (col, how) in PEAKS.items():
                x = df[col].to_numpy(float) * (180 / np.pi if col == "delta" else 1.0)
                vals[label] = {"min": x.min(), "max": x.max(), "absmax": np.abs(x).max()}[how]
            out[h] = (vals, s)
    rows = []
    for label in PEAKS:
        a, b = out[10][0][label], out[5][0][label]
        rows.append({"peak": label, "10 m": a, "5 m": b,
                     "difference [%]": 100 * (a - b) / abs(b) if b else None})
    rows.append({"peak": "sector time [s]", "10 m": out[10][1]["lap_time_s"],
                 "5 m": out[5][1]["lap_time_s"],
                 "difference [%]": 100 * (out[10][1]["lap_time_s"] / out[5][1]["lap_time_s"] - 1)})
    cols = ["peak", "10 m", "5 m", "difference [%]"]
    if markdown:
        print(_markdown(rows, cols))
    else:
        for r in rows:
            print(f"{r['peak']:>28s} {r['10 m']:12.4f} {r['5 m']:12.4f} {r['difference [%]']:+9.3f}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--jobs", nargs="+", default=list(JOBS), choices=list(JOBS))
    ap.add_argument("--circuits", nargs="*", default=None, metavar="TRACK",
                    help="every bundled circuit's closed lap (or the ones named)")
    ap.add_argument("--validate", action="store_true",
                    help="with --circuits: also pyomo-lap validate each lap (verdict, time)")
    ap.add_argument("--peaks", action="store_true", help="peaks of the default job at 10 m and 5 m")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    print(f"# load average before: {os.getloadavg()}", file=sys.stderr)
    if a.circuits is not None:
        circuits(a.markdown, a.validate, a.circuits or None)
    elif a.peaks:
        peaks(a.markdown)
    else:
        study(a.variants, a.jobs, a.markdown)


if __name__ == "__main__":
    main()
