"""Golden lap times: the default job (``pyomo-lap solve``) and the full Nordschleife lap
(``pyomo-lap solve --full-lap``), run through the command line as a user runs them.

The recorded values, with the commit, solver, options, tolerance and a fingerprint of the
inputs and of the NLP, are in ``tests/golden/lap_times.json``. They are the code's own
output, so each run is also checked against what does not come from the solver:

Trusted (a failure means a bug in the model, the solver path or the export):

* the lap time is at least the energy bound of ``_independent.speed_and_time_bounds``, and
  the car's speed never exceeds its speed bound: power, drag, mass and the track's grades and
  width only; they hold for any car model sharing these numbers and are loose (~20 %);
* the exported time equals the integral of ds / q1_dot by a cubic spline through the exported
  points (not the collocation's quadrature): 1e-4 relative, the spline's own error on these
  meshes being ~1e-5;
* every tyre force lies within its friction ellipse with the Magic-Formula peak written in
  ``_independent`` from the vehicle file; power, track limits and minimum loads hold;
* the full lap is periodic: every state and rate ends where it started.

Plausibility only (not a bound): the quasi-steady point-mass estimate of the same track
(``pyomo_lap.vehicle.speed_profile``, 85 % of the tyres' nominal peak friction, on the centreline).
The full model uses the track's width (a larger radius in every bend), more than the nominal
friction at light loads (load sensitivity pD2 < 0) and loses grip to load transfer, so the
point mass is neither a lower nor an upper bound; the two agree within 4 % on these jobs, and
a window of +-10 % catches gross errors that the loose energy bound would miss.
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import _independent as ind
from pyomo_lap import load_track, load_vehicle
from pyomo_lap.cli import main
from pyomo_lap.results.table import read_summary, read_trajectory

GOLDEN = json.loads((Path(__file__).parent / "golden" / "lap_times.json").read_text())
STATES = ("q2", "q3", "q4", "q5", "q6", "q1_dot", "q2_dot", "q3_dot", "q4_dot", "q5_dot", "q6_dot")


def _solve(args, out):
    r = CliRunner().invoke(main, ["solve", *args, "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    return read_summary(out), read_trajectory(out)


def _check_fingerprint(job, summary):
    """The run is the job the golden value was derived from; else the value must be re-derived."""
    from pyomo_lap.solvers.lap.solver import LAP_IPOPT_OPTIONS
    rec = GOLDEN["jobs"][job]
    have = {
        "solver": summary["solver"], "solver_options (user)": summary["solver_options"],
        "LAP_IPOPT_OPTIONS": dict(LAP_IPOPT_OPTIONS),
        "track_file_sha256": summary["track_file_sha256"],
        "vehicle_file_sha256": summary["vehicle_file_sha256"],
        "mesh": {k: summary[k] for k in rec["mesh"]},
        "ocp_options": {k: summary["ocp_options"].get(k) for k in GOLDEN["ocp_options"]},
        "nlp": {k: summary["nlp"][k] for k in rec["nlp"]},
    }
    want = {
        "solver": GOLDEN["solver"], "solver_options (user)": {},
        "LAP_IPOPT_OPTIONS": GOLDEN["solver_options"],
        "track_file_sha256": GOLDEN["inputs"]["track_file_sha256"],
        "vehicle_file_sha256": GOLDEN["inputs"]["vehicle_file_sha256"],
        "mesh": rec["mesh"], "ocp_options": GOLDEN["ocp_options"], "nlp": rec["nlp"],
    }
    changed = {k: (want[k], have[k]) for k in want if have[k] != want[k]}
    if changed:
        pytest.fail(f"{rec['command']}: not the job its golden value was derived from "
                    f"(recorded, now): {changed}; if the change is intended, re-derive the golden "
                    "value in tests/golden/lap_times.json (see its 'about')")


def _check_lap_time(job, summary):
    golden = GOLDEN["jobs"][job]["lap_time_s"]
    assert summary["lap_time_s"] == pytest.approx(golden, rel=GOLDEN["rel_tol"]), (
        f"{GOLDEN['jobs'][job]['command']}: lap time {summary['lap_time_s']!r} s, golden {golden!r} s "
        f"(recorded at {GOLDEN['commit'][:7]}); if a change of the model or the solver is meant to "
        "move it, re-derive the golden value in tests/golden/lap_times.json (see its 'about')")


def _check_against_independent(summary, df, p, track, closed):
    T = summary["lap_time_s"]
    s, q1_dot = df["s_sector"].to_numpy(), df["q1_dot"].to_numpy()
    # the lap time, and the exported time at every point, against a quadrature of the
    # exported speeds
    assert ind.time_by_quadrature(s, q1_dot) == pytest.approx(T, rel=1e-4)
    t_quad = ind.time_along(s, q1_dot)
    assert np.abs(df["t"].to_numpy() - df["t"].iloc[0] - t_quad).max() <= 1e-4 * T
    # the energy bounds
    b = ind.speed_and_time_bounds(p, track, summary["start_m"], summary["length_m"])
    assert df["v_3x"].max() <= b.v_max, (df["v_3x"].max(), b)
    assert T >= b.t_min, (T, b)
    # tyres, power, track limits, minimum loads
    use = ind.friction_ellipse_use(p, df)
    assert use.max() <= 1.0 + 1e-6, use.max()
    assert df["power"].max() <= p.P_max * (1 + 1e-6)
    # track limits on the contact patches' outer edges: wheel ij at x_i (a1, -a2), half its
    # axle's track plus half its tyre's width to the side, yawed by q3 (closed form here)
    q2, q3 = df["q2"].to_numpy(), df["q3"].to_numpy()
    for x, half in ((p.a1, 0.5 * (p.t1 + p.tw1)), (-p.a2, 0.5 * (p.t2 + p.tw2))):
        centre = q2 + x * np.sin(q3)
        assert (centre + half * np.cos(q3) <= df["width_left"] + 1e-6).all()
        assert (centre - half * np.cos(q3) >= -df["width_right"] - 1e-6).all()
    assert df[["f_11z", "f_12z", "f_21z", "f_22z"]].min().min() >= p.fz_min - 1e-6
    # plausibility: the quasi-steady point mass on the centreline (not a bound, see above)
    from pyomo_lap.vehicle.speed_profile import quasi_steady_speed
    s_pm = np.linspace(summary["start_m"], summary["start_m"] + summary["length_m"],
                       int(summary["length_m"] / 2.0) + 1)
    tp = track.evaluate(np.mod(s_pm, track.length) if closed else s_pm)
    v_pm = quasi_steady_speed(p, s_pm, tp.omega, tp.rotation, closed,
                              v_start=None if closed else float(q1_dot[0]))
    t_pm = float(np.trapezoid(1.0 / v_pm, s_pm))
    assert 0.9 < T / t_pm < 1.1, (T, t_pm)
    return b


TARGET_CHANNELS = ("delta", "alpha_1", "f_11z", "speed", "a_y")
"""The channels of the zig-zag targets of issue 22 (0 on the default job, at most 5 each on
the full lap)."""


def _check_smooth(df, summary, most: int):
    """The exported channels do not zig-zag (pyomo_lap.verify.quality, recomputed from the
    table), and the summary says the same."""
    from pyomo_lap.verify.quality import channel_quality
    q = channel_quality(df, load_vehicle(summary["vehicle"]))
    counts = {c: q["zigzags"][c]["count"] for c in TARGET_CHANNELS}
    assert max(counts.values()) <= most, counts
    assert {c: summary["channel_quality"]["zigzags"][c]["count"] for c in TARGET_CHANNELS} == counts


@pytest.fixture(scope="module")
def inputs():
    return load_vehicle("fsae"), load_track("nordschleife")


@pytest.mark.performance
def test_default_job_lap_time(default_job, inputs):
    """`pyomo-lap solve`: Nordschleife 0-2000 m, fsae, 200 elements of 10 m, Radau ncp = 2,
    lap_ipopt; its sector time against the golden value and the independent checks. The run
    is the session's (tests/_shared.py: ``pyomo-lap solve --quiet``, also the first run of
    tests/test_warm_start.py)."""
    p, track = inputs
    summary, df = read_summary(default_job), read_trajectory(default_job)
    _check_fingerprint("default", summary)
    assert summary["termination_condition"] == "optimal"
    assert summary["ipopt_exit"] == "Optimal Solution Found."       # not 'acceptable'
    _check_lap_time("default", summary)
    b = _check_against_independent(summary, df, p, track, closed=False)
    _check_smooth(df, summary, most=0)
    assert df["q1_dot"].iloc[0] <= b.v_max          # the energy bound needs the entry below it


@pytest.mark.performance
def test_full_lap_lap_time(tmp_path, inputs):
    """`pyomo-lap solve --full-lap`: the closed 20.7 km lap, periodic, 2073 elements; its lap
    time against the golden value and the independent checks."""
    p, track = inputs
    summary, df = _solve(["--full-lap"], tmp_path / "lap")
    _check_fingerprint("full_lap", summary)
    assert summary["termination_condition"] == "optimal"
    assert summary["ipopt_exit"] == "Optimal Solution Found."
    assert summary["length_m"] == pytest.approx(track.length, rel=1e-9)   # the whole lap
    _check_lap_time("full_lap", summary)
    _check_against_independent(summary, df, p, track, closed=True)
    _check_smooth(df, summary, most=5)
    first, last = df.iloc[0], df.iloc[-1]
    for k in STATES:
        assert last[k] == pytest.approx(first[k], abs=1e-6), k
    assert math.isclose(df["s_sector"].iloc[-1], track.length, rel_tol=1e-9)
