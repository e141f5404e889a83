"""Speed benchmark: the default job and the full lap, timed exactly as ``pyomo-lap solve`` runs
them, with a profile of where the time goes, and the solver paths side by side.

Usage (from the repository root; ``bash scripts/benchmark.sh ARGS`` sets up and runs this)::

    python benchmarks/speed.py                          # default job and full lap, default path
    python benchmarks/speed.py --job default --runs 3   # one job, three runs (medians printed)
    python benchmarks/speed.py --side-by-side           # + the same NLP through the ASL path,
                                                        #   the fast path and the CasADi twin
    python benchmarks/speed.py --csv bench.csv
    python benchmarks/speed.py --job default --first-run --runs 3   # the first solve after
                                                        #   a set-up against the next one

Every run of ``lap_ipopt`` and ``ipopt`` is the CLI itself, ``pyomo-lap solve [--full-lap]
--solver NAME --quiet --out TMP``, started as a child process: its wall time is everything the
user waits for (Python start, imports, track, build, initial guess, translation or NL file,
solve, channels, export), its CPU time and peak memory (the largest resident set of the child
and of its children, such as the ipopt executable) come from the operating system
(``os.wait4``). The breakdown comes from the ``summary.json`` the run wrote (``timing`` and
``nlp``: see :func:`pyomo_lap.api.solve_sector`). The CasADi twin has no CLI; its child
process runs the same steps as the CLI (track, vehicle, build, initial guess) and then
:func:`pyomo_lap.solvers.casadi_ocp.build_casadi_nlp` and :func:`pyomo_lap.solvers.casadi_ocp.solve_casadi`,
and exports nothing.

``--side-by-side`` solves the same NLP three ways: the fast path without its presolve
(``eliminate_derivatives=False``: the same variables and rows as the NL file), the ASL path
(Pyomo's ``ipopt`` interface, NL file, IPOPT 3.11 + AMPL solver library) and the twin (CasADi's
``nlpsol``), all with the IPOPT options of the fast path (:data:`pyomo_lap.solvers.lap.solver.
LAP_IPOPT_OPTIONS`) and the same model, scaling and cold start; then the default fast path.

Columns: ``wall_s`` (what the user waits for), ``cpu_s``, ``peak_rss_mb``, ``points``,
``n_var``, ``n_con``, ``jac_nnz``, ``hess_nnz``, ``build_s`` (of which ``dae_s`` is pyomo.dae's
transformation), ``init_s``, ``translate_s`` (fast path: translation incl. the check of the
recorded rows; ASL path: NL file write and the process round trip, i.e. the solve time minus
IPOPT's own and evaluation time), ``compile_s``, ``ipopt_own_s`` (IPOPT's own work: linear
algebra, line search), ``eval_s`` (function evaluations), ``g_ms``, ``jac_ms``, ``hess_ms``
(per call), ``iters``, ``inertia`` (iterations with an inertia correction, each at least one
extra factorization), ``own_ms_per_iter``, ``channels_export_s`` (the rest of the wall time
after the solve), ``pyomo_share`` (build + translation or NL write over the wall time),
``lap_s``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

JOBS = {"default": [], "full-lap": ["--full-lap"]}


def _cli():
    exe = Path(sys.executable).parent / "pyomo-lap"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pyomo_lap.cli"]


def _run(cmd, env=None):
    """Run a child process; return (wall_s, cpu_s, peak_rss_mb, returncode, output)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=env or os.environ.copy())
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, proc.returncode, text


def _row_from_summary(s: dict, wall: float, cpu: float, rss: float, path: str, job: str) -> dict:
    t, nlp = s.get("timing", {}), s.get("nlp", {})
    fs, fc = t.get("function_s", {}), t.get("function_calls", {})
    per = {k: 1e3 * fs[k] / fc[k] for k in ("g", "jac_g", "h") if fc.get(k)}
    solve = t.get("solve_s", 0.0)
    own = t.get("ipopt_internal_s")
    ev = t.get("ipopt_eval_s")
    if "translate_s" in t:
        translate = t["translate_s"] + t.get("verify_s", 0.0)
    elif own is not None and ev is not None:
        translate = solve - own - ev     # NL write, process start, sol file read
    else:
        translate = None
    pyomo = t.get("build_s", 0.0) + (translate or 0.0)
    its = s.get("iterations")
    before = t.get("build_s", 0) + t.get("init_s", 0) + solve
    return {
        "job": job, "path": path, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss,
        "points": s.get("n_points"), "n_var": nlp.get("n_variables", s.get("n_variables")),
        "n_con": (nlp.get("n_equalities", 0) + nlp.get("n_inequalities", 0)) or s.get("n_constraints"),
        "jac_nnz": nlp.get("jac_nnz"), "hess_nnz": nlp.get("hess_nnz"),
        "build_s": t.get("build_s"), "dae_s": t.get("dae_transformation_s"), "init_s": t.get("init_s"),
        "translate_s": translate, "compile_s": t.get("compile_s"),
        "ipopt_own_s": own, "eval_s": ev,
        "g_ms": per.get("g"), "jac_ms": per.get("jac_g"), "hess_ms": per.get("h"),
        "iters": its, "inertia": t.get("inertia_corrections"),
        "own_ms_per_iter": 1e3 * own / its if own is not None and its else None,
        "channels_export_s": wall - before, "pyomo_share": pyomo / wall if wall else None,
        "lap_s": s.get("lap_time_s"), "status": s.get("ipopt_exit") or s.get("outcome"),
    }


def run_cli(job: str, solver: str, options=(), extra=(), env=None) -> dict:
    out = Path(tempfile.mkdtemp(prefix="pyomo_lap_bench_")) / "run"
    cmd = _cli() + ["solve", *JOBS[job], *extra, "--solver", solver, "--quiet", "--out", str(out)]
    for o in options:
        cmd += ["--solver-option", o]
    try:
        wall, cpu, rss, rc, text = _run(cmd, env)
        where = out if (out / "summary.json").exists() else Path(str(out) + ".failed")
        if not (where / "summary.json").exists():
            raise RuntimeError(f"{' '.join(cmd)} wrote no summary (exit {rc}):\n{text[-2000:]}")
        s = json.loads((where / "summary.json").read_text())
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
    label = solver + ("" if not options else " [" + ", ".join(options) + "]") + \
        ("" if not extra else " " + " ".join(extra))
    return _row_from_summary(s, wall, cpu, rss, label, job)


_TWIN = r"""
import json, sys, time
t0 = time.perf_counter()
from pyomo_lap.util.gc_pause import gc_paused
from pyomo_lap import build_model, initialize_model, load_track, load_vehicle
from pyomo_lap.solvers.casadi_ocp import build_casadi_nlp, solve_casadi
from pyomo_lap.solvers.report import log_statistics
full = sys.argv[1] == "full-lap"
tr, p = load_track("nordschleife"), load_vehicle("fsae")
with gc_paused():
    m = (build_model(tr, p, start=0.0, length=None, periodic=True) if full
         else build_model(tr, p, start=0.0, length=2000.0))
    t1 = time.perf_counter(); initialize_model(m); init_s = time.perf_counter() - t1
    t2 = time.perf_counter(); nlp = build_casadi_nlp(m); twin_s = time.perf_counter() - t2
    rep = solve_casadi(nlp)
print("JSON" + json.dumps({
    "n_points": len(m.s), "iterations": rep.iterations, "lap_time_s": rep.lap_time_s,
    "ipopt_exit": rep.return_status,
    "nlp": {"n_variables": rep.n_variables, "n_equalities": rep.n_constraints,
            "jac_nnz": rep.jac_nnz, "hess_nnz": rep.hess_nnz},
    "timing": {"build_s": m.problem.build_time_s, "dae_transformation_s": m.problem.dae_time_s, "init_s": init_s,
               "translate_s": twin_s + rep.nlpsol_s, "solve_s": twin_s + rep.nlpsol_s + rep.solve_s,
               "ipopt_internal_s": rep.t_wall["ipopt_rest"], "ipopt_eval_s": rep.t_wall["functions"],
               "function_s": {"g": rep.t_wall.get("nlp_g", 0), "jac_g": rep.t_wall.get("nlp_jac_g", 0),
                              "h": rep.t_wall.get("nlp_hess_l", 0)},
               "function_calls": {"g": rep.n_calls.get("nlp_g", 0), "jac_g": rep.n_calls.get("nlp_jac_g", 0),
                                  "h": rep.n_calls.get("nlp_hess_l", 0)}}}))
"""


def run_twin(job: str) -> dict:
    wall, cpu, rss, rc, text = _run([sys.executable, "-c", _TWIN, job])
    line = [ln for ln in text.splitlines() if ln.startswith("JSON")]
    if rc != 0 or not line:
        raise RuntimeError(f"the CasADi twin failed (exit {rc}):\n{text[-2000:]}")
    return _row_from_summary(json.loads(line[-1][4:]), wall, cpu, rss, "casadi twin (nlpsol)", job)


def _median_rows(rows):
    out = dict(rows[0])
    for k, v in rows[0].items():
        vals = [r[k] for r in rows if isinstance(r.get(k), (int, float)) and r.get(k) is not None]
        if vals and isinstance(v, (int, float)):
            out[k] = statistics.median(vals)
    out["runs"] = len(rows)
    return out


def first_run(job: str, runs: int) -> list:
    """The first solve after a set-up against the next ones: each run starts from an empty
    cache of compiled functions (``PYOMO_LAP_CACHE``, a new folder), runs ``pyomo-lap compile``
    as ``scripts/bootstrap.sh`` does, then solves the job twice (first, warm)."""
    rows = []
    for _ in range(runs):
        cache = tempfile.mkdtemp(prefix="pyomo_lap_cache_")
        env = {**os.environ, "PYOMO_LAP_CACHE": cache}
        try:
            wall, _, _, rc, text = _run(_cli() + ["compile", "--quiet"], env)
            if rc != 0:
                raise RuntimeError(f"pyomo-lap compile failed (exit {rc}):\n{text[-2000:]}")
            first = run_cli(job, "lap_ipopt", env=env)
            warm = run_cli(job, "lap_ipopt", env=env)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        ratio = first["wall_s"] / warm["wall_s"]
        print(f"  {job:9s} set-up compile {wall:5.1f} s, first solve {first['wall_s']:5.2f} s, "
              f"warm {warm['wall_s']:5.2f} s: first/warm {ratio:.2f}", flush=True)
        rows.append({"job": job, "path": "first run after set-up", "compile_s": wall,
                     "first_wall_s": first["wall_s"], "warm_wall_s": warm["wall_s"],
                     "first_over_warm": ratio})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", choices=["default", "full-lap", "both"], default="both")
    ap.add_argument("--runs", type=int, default=1, help="runs of each case (medians printed)")
    ap.add_argument("--side-by-side", action="store_true",
                    help="also the same NLP through the ASL path and the CasADi twin")
    ap.add_argument("--mesh", type=int, nargs="+", default=None, metavar="N",
                    help="mesh study: solve the job(s) with each --nfe N (and the default) and "
                         "print each lap time's deviation from the finest mesh's")
    ap.add_argument("--ncp", type=int, default=2, help="collocation points for --mesh")
    ap.add_argument("--csv", default=None, help="also write the table to this CSV file")
    ap.add_argument("--first-run", action="store_true",
                    help="the first solve after a set-up (empty cache, pyomo-lap compile) "
                         "against the next one, --runs times (target: within 1.5x)")
    a = ap.parse_args(argv)
    import pandas as pd

    from pyomo.contrib.solver.solvers.ipopt import ipopt_command_line_options

    from pyomo_lap.solvers.lap.solver import LAP_IPOPT_OPTIONS
    # the AMPL executable takes some options only through an options file (prefix OF_)
    same = [f"{'' if k in ipopt_command_line_options else 'OF_'}{k}={v}"
            for k, v in LAP_IPOPT_OPTIONS.items()]
    jobs = ["default", "full-lap"] if a.job == "both" else [a.job]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min) at the start", flush=True)
    rows = []
    if a.first_run:
        for job in jobs:
            got = first_run(job, a.runs)
            ratios = sorted(r["first_over_warm"] for r in got)
            print(f"  {job}: first/warm median {statistics.median(ratios):.2f} "
                  f"(min {ratios[0]:.2f}, max {ratios[-1]:.2f}, {len(ratios)} runs)", flush=True)
            rows.extend(got)
        jobs = []
    if a.mesh:
        for job in jobs:
            study = [run_cli(job, "lap_ipopt", extra=("--nfe", str(n), "--ncp", str(a.ncp)))
                     for n in sorted(a.mesh)] + [run_cli(job, "lap_ipopt")]
            ref = study[len(a.mesh) - 1]["lap_s"]          # the finest of the listed meshes
            for r in study:
                r["deviation_from_finest_pct"] = 100.0 * (r["lap_s"] - ref) / ref
                print(f"  {job:9s} {r['path']:45s} points {r['points']:6d}  lap {r['lap_s']:.4f} s  "
                      f"{r['deviation_from_finest_pct']:+.4f} %  {r['iters']} iterations  "
                      f"wall {r['wall_s']:.1f} s", flush=True)
            rows.extend(study)
        jobs = []
    for job in jobs:
        cases = [("lap_ipopt", ())]
        if a.side_by_side:
            cases = [("lap_ipopt", ("eliminate_derivatives=0",)), ("ipopt", tuple(same)),
                     ("twin", ()), ("lap_ipopt", ())]
        for solver, opts in cases:
            runs = []
            for _ in range(a.runs):
                r = run_twin(job) if solver == "twin" else run_cli(job, solver, opts)
                runs.append(r)
                print(f"  {job:9s} {r['path'][:40]:40s} wall {r['wall_s']:7.1f} s  "
                      f"{r['iters']} iterations  lap {r['lap_s']:.4f} s", flush=True)
            rows.append(_median_rows(runs))
    df = pd.DataFrame(rows)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    with pd.option_context("display.width", 250, "display.max_columns", 60,
                           "display.float_format", "{:.3f}".format):
        print(df.T.to_string(header=False))
    if a.csv:
        df.to_csv(a.csv, index=False)
    return df


if __name__ == "__main__":
    main()
