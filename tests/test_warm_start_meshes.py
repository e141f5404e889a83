"""A warm start from a results folder of the same track on another mesh, sector or car
(``pyomo-lap solve --warm-start RUN``, :mod:`pyomo_lap.api.warm_start`): the interpolation
against closed forms (polynomials the collocation reproduces, the time's increments, a closed
lap's wrap, the blend into the usual guess) and the solves against cold solves of the same
job (the optimum is the job's, not the source's)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap import load_vehicle, solve_sector
from pyomo_lap.api.warm_start import solution_at_positions

QUIET = {"echo": lambda *_: None, "progress": lambda *_: None}
SECTOR = {"start": 1500.0, "length": 250.0, **QUIET}     # a braking zone and a corner


def _radau_mesh(breaks, ncp=2):
    """The mesh points of pyomo.dae's Radau collocation with ``ncp`` points: the element
    starts and, in each element, the Radau points (the end included)."""
    tau = {2: [1 / 3, 1.0], 3: [(4 - 6 ** 0.5) / 10, (4 + 6 ** 0.5) / 10, 1.0]}[ncp]
    pts = [breaks[0]] + [a + t * (b - a) for a, b in zip(breaks[:-1], breaks[1:]) for t in tau]
    return np.array(pts)


def _source(start, length, nfe, ncp=2, periodic=False, speed=20.0):
    """A synthetic solution: a state ``q2`` = a quadratic in the sector coordinate (which the
    collocation polynomials of ncp = 2 reproduce exactly), its derivative ``dq2_ds``, an
    algebraic ``f_11z`` linear in s, and the time ``t = s / speed``."""
    breaks = np.linspace(0.0, length, nfe + 1)
    s = _radau_mesh(breaks, ncp)
    q2 = 0.1 + 0.02 * s - 1e-4 * s ** 2
    return {"data": {"s": s, "var:q2": q2, "var:dq2_ds": 0.02 - 2e-4 * s,
                     "var:f_11z": 1000.0 + 3.0 * s, "var:t": s / speed},
            "start": start, "breaks": breaks, "scheme": "LAGRANGE-RADAU",
            "periodic": periodic, "model": "full", "car": "x", "folder": None}


@pytest.mark.unit
def test_values_on_another_mesh_are_the_collocation_polynomials():
    """A quadratic state and a linear algebraic variable come back exactly on a mesh of
    other elements and another ncp; an overlapping sector is covered where it overlaps."""
    src = _source(start=100.0, length=200.0, nfe=7)
    x = 150.0 + _radau_mesh(np.linspace(0.0, 200.0, 12), ncp=3)   # 150 .. 350 m
    out = solution_at_positions(src, x)
    u = x - 100.0
    cov = out["covered"]
    assert cov.tolist() == (u <= 200.0 + 1e-9).tolist() and 0 < cov.sum() < len(x)
    np.testing.assert_allclose(out["values"]["q2"][cov], 0.1 + 0.02 * u[cov] - 1e-4 * u[cov] ** 2,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["values"]["f_11z"][cov], 1000.0 + 3.0 * u[cov], atol=1e-9)
    assert np.isnan(out["values"]["q2"][~cov]).all()


@pytest.mark.unit
def test_a_closed_lap_covers_every_position_and_its_time_wraps():
    """A closed-lap source (track 1000 m, lap from 0 at 20 m/s: 50 s) read by a sector that
    crosses the start line: every point covered, the time increases by the lap's 50 s over
    the line (t = (x mod 1000) / 20 + 50 turns)."""
    src = _source(start=0.0, length=1000.0, nfe=20, periodic=True)
    x = np.linspace(900.0, 1100.0, 41)
    out = solution_at_positions(src, x, track_length=1000.0)
    assert out["covered"].all()
    expected = np.where(x < 1000.0, x / 20.0, 50.0 + (x - 1000.0) / 20.0)
    np.testing.assert_allclose(out["values"]["t"], expected, atol=1e-9)
    # an open sector of the same closed track crossing the line: the part past it covered
    part = solution_at_positions(_source(start=0.0, length=300.0, nfe=6), x, track_length=1000.0)
    assert part["covered"].tolist() == (x >= 1000.0 - 1e-9).tolist()


@pytest.mark.unit
def test_uncovered_points_blend_into_the_usual_guess():
    """Past the covered part the values go linearly from the source's edge value to the model's
    guess over BLEND_M, and the time keeps the source's increments where covered and the
    guess's elsewhere (continuous, increasing)."""
    from pyomo_lap.api.warm_start import BLEND_M, _blend, _time
    x = np.linspace(0.0, 200.0, 201)
    cov = x <= 100.0
    src = np.where(cov, 5.0, np.nan)
    out = _blend(np.zeros_like(x), src, cov, x, BLEND_M)
    d = np.clip(x - 100.0, 0.0, None)
    np.testing.assert_allclose(out, 5.0 * np.clip(1.0 - d / BLEND_M, 0.0, 1.0), atol=1e-12)
    guess_t, src_t = x / 10.0, np.where(cov, 7.0 + x / 20.0, np.nan)
    t = _time(guess_t, src_t, cov)
    np.testing.assert_allclose(t, np.where(cov, x / 20.0, 5.0 + (x - 100.0) / 10.0), atol=1e-12)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The fsae car on a 250 m sector with a braking zone, solved and written."""
    out = tmp_path_factory.mktemp("ws") / "base"
    solve_sector(vehicle=load_vehicle("fsae"), out_dir=out, **SECTOR)
    return out


@pytest.mark.integration
@pytest.mark.parametrize("change", ["car", "mesh", "sector"])
def test_a_warm_start_lands_on_the_cold_optimum(base, change):
    """From the base result: another car (mass +10 %, more downforce) on its own mesh,
    another mesh (ncp 3, 7 m elements), another sector (40 % overlapping): the sector time of
    the cold solve of that job, to IPOPT's tolerance; what was covered in summary.json."""
    car = load_vehicle("fsae")
    job = dict(SECTOR)
    if change == "car":
        car = car.replace(m=1.1 * car.m, Cz1=car.Cz1 * 1.15, Cz2=car.Cz2 * 1.15)
    elif change == "mesh":
        job.update(ncp=3, ocp_options={"element_length": 7.0})
    else:
        job.update(start=1650.0)
    cold = solve_sector(vehicle=car, out_dir=None, **job).summary
    warm = solve_sector(vehicle=car, out_dir=None, warm_start_from=base, **job).summary
    ws = warm["warm_start_source"]
    assert warm["optimal"] and "warm_start_failed" not in warm
    assert warm["lap_time_s"] == pytest.approx(cold["lap_time_s"], rel=1e-5)
    share = {"car": 1.0, "mesh": 1.0, "sector": 100.0 / 250.0}[change]
    assert ws["covered_share"] == pytest.approx(share, abs=1e-4)
    assert ws["source_car"] == "fsae" and ws["source_mesh"]["ncp"] == 2
    assert ws["same_mesh"] is False or change == "car"


@pytest.mark.integration
def test_the_command_line_takes_warm_start_and_its_old_name(base, tmp_path):
    """``--warm-start RUN`` and the alias ``--warm-start-from RUN``: the same start, said on
    the console; another track refused with exit 2 and one line."""
    def run(*args):
        return subprocess.run([sys.executable, "-m", "pyomo_lap.cli", "solve", "--start", "1500",
                               "--length", "250", *args], capture_output=True, text=True,
                              cwd=tmp_path, env={**__import__("os").environ,
                                                 "PYTHONPATH": str(Path(__file__).parents[1])})
    a = run("--out", str(tmp_path / "a"), "--warm-start", str(base))
    b = run("--out", str(tmp_path / "b"), "--warm-start-from", str(base))
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "warm start from" in a.stdout and "100 % of the sector" in a.stdout
    sa, sb = (json.loads((tmp_path / n / "summary.json").read_text()) for n in "ab")
    assert sa["warm_start_source"]["same_mesh"] and sa["iterations"] == sb["iterations"]
    bad = run("--out", str(tmp_path / "c"), "--track", "monza", "--start", "0",
              "--warm-start", str(base))
    assert bad.returncode == 2 and "expected this job's track 'monza'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
