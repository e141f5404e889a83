"""The verdict of `pyomo-lap validate` (issue 22, item 3): the controls that are states are
interpolated as the OCP has them (closed form), a good short sector passes, a deliberately bad
one fails for the reason expected (a coarse mesh on its defects; a trajectory with noise on the
steering on its zig-zags and defects; a shifted speed on the replay's time and the defects), and
the command's exit codes follow the verdict."""
import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

START, LENGTH = 1200.0, 400.0
"""Nordschleife 1200-1600 m: a straight, then the fast S-bends at the friction limit (the
sector the thresholds of pyomo_lap.verify.verdict were measured on, with the 2 km default job)."""

RADAU3 = np.array([(4 - 6 ** 0.5) / 10, (4 + 6 ** 0.5) / 10, 1.0])   # Radau IIA, ncp = 3
LEGENDRE2 = np.array([0.5 - 3 ** 0.5 / 6, 0.5 + 3 ** 0.5 / 6])          # Gauss-Legendre, ncp = 2


def _quiet(*_args, **_kwargs):
    pass


def _solve(out, **ocp_options):
    from pyomo_lap.api import solve_sector
    solve_sector(start=START, length=LENGTH, out_dir=out, echo=_quiet,
                 ocp_options=ocp_options or None)
    return out


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """The sector solved with the default options (controls as states, adaptive mesh)."""
    return _solve(tmp_path_factory.mktemp("validate") / "good")


@pytest.fixture(scope="module")
def coarse(tmp_path_factory):
    """The same sector on a uniform mesh of 40 m elements (10 elements)."""
    return _solve(tmp_path_factory.mktemp("validate") / "coarse", mesh="uniform", element_length=40.0)


def _copy(src, dst):
    shutil.copytree(src, dst)
    for f in ("validation.json", "defects.csv", "validation_defects.png", "validation_replay.png"):
        (dst / f).unlink(missing_ok=True)
    return dst


def _perturbed(src, dst, change):
    """A copy of a results folder whose trajectory table is changed by ``change(df)`` (the
    table written as CSV with plain column names; the parquet file removed)."""
    from pyomo_lap.results.table import read_trajectory
    dst = _copy(src, dst)
    df = read_trajectory(dst)
    change(df)
    (dst / "trajectory.parquet").unlink()
    df.to_csv(dst / "trajectory.csv", index=False, float_format="%.10g")
    return dst


def _failing(res):
    return {c["name"] for c in res["checks"] if c["verdict"] == "fail"}


def _by_name(res):
    return {c["name"]: c for c in res["checks"]}


# ------------------------------------------------------------------------------ unit
def _table(boundaries, tau, u_fun, end_point=False, start=100.0):
    """A trajectory table on a mesh: s = 0 (element 0), then per element the points at
    ``tau`` of it (and its end point, ``end_point``: Legendre), the channels from ``u_fun``."""
    s, el = [0.0], [0]
    for j, (a, b) in enumerate(zip(boundaries[:-1], boundaries[1:]), start=1):
        pts = list(a + (b - a) * tau) + ([b] if end_point else [])
        s += pts
        el += [j] * len(pts)
    s = np.array(s)
    u = u_fun(s)
    return pd.DataFrame({"s": start + s, "s_sector": s, "t": s / 20.0, "element": el,
                         "f_xa": u[0], "f_xb": u[1], "delta": u[2],
                         "q2": u[2] * 100.0, "q3": u[0] * 1e-4, "q1_dot": 20.0 + u[1] * 1e-3})


@pytest.mark.unit
def test_state_controls_reproduce_a_polynomial_between_the_points():
    """Controls that are states: on each element the polynomial of degree ncp through its start
    and collocation points. A cubic sampled on a non-uniform Radau mesh (ncp = 3) is reproduced
    exactly between the points, and a quadratic on a Legendre mesh (ncp = 2, the end point not
    a collocation point); the polynomial through the collocation points only (the old
    interpolation, degree ncp - 1) is not. The reference path of the feedback replay (the
    states' polynomials) reproduces them too."""
    from pyomo_lap.verify.replay import state_polynomials
    from pyomo_lap.ocp.collocation import element_points
    from pyomo_lap.verify.controls import CollocationControls, controls_from_trajectory
    start = 100.0
    bounds = np.array([0.0, 7.0, 12.0, 25.0, 31.0])

    def cubic(s):
        return np.array([800.0 + 30.0 * s - 2.0 * s ** 2 + 0.05 * s ** 3,
                         -50.0 + 4.0 * s + 0.3 * s ** 2 - 0.01 * s ** 3,
                         0.02 - 3e-3 * s + 4e-4 * s ** 2 - 1e-5 * s ** 3])

    df = _table(bounds, RADAU3, cubic, start=start)
    law = controls_from_trajectory(df, "s", start=start, interpolation="state")
    assert isinstance(law, CollocationControls) and not law.restart
    assert law.nodes.shape == (4, 4)                            # start + 3 collocation points
    assert law.breaks == pytest.approx(start + bounds)
    sq = np.linspace(0.0, 31.0, 157)
    x = np.zeros(12)
    got = []
    for v in sq:
        x[0] = start + v
        got.append(law(0.0, x, 0))                              # the segment is looked up
    want = cubic(sq).T
    assert np.array(got) == pytest.approx(want, rel=1e-10, abs=1e-10)
    # the old interpolation (through the collocation points only) misses between the points
    old = controls_from_trajectory(df, "s", start=start, interpolation="polynomial")
    miss = max(abs(old(0.0, np.r_[start + v, np.zeros(11)], old.segment(start + v))[2]
                   - cubic(np.array([v]))[2, 0]) for v in sq)
    assert miss > 1e-4
    # the reference path of the feedback replay: the same polynomials
    ref = state_polynomials(df, start=start)
    for v in sq[::7]:
        q2, q3, v1 = ref.at(start + v)
        u = cubic(np.array([v]))[:, 0]
        assert (q2, q3, v1) == pytest.approx((100.0 * u[2], 1e-4 * u[0], 20.0 + 1e-3 * u[1]),
                                             rel=1e-10, abs=1e-10)

    # Legendre, ncp = 2: rows per element are the 2 collocation points and the end point
    def quad(s):
        return np.array([900.0 + 10.0 * s - 0.5 * s ** 2, -20.0 + s + 0.1 * s ** 2,
                         0.01 + 1e-3 * s - 5e-5 * s ** 2])

    dl = _table(bounds, LEGENDRE2, quad, end_point=True, start=start)
    leg = controls_from_trajectory(dl, "s", start=start, interpolation="state",
                                   scheme="LAGRANGE-LEGENDRE")
    assert leg.nodes.shape == (4, 3)
    got = [leg(0.0, np.r_[start + v, np.zeros(11)], 0) for v in sq]
    assert np.array(got) == pytest.approx(quad(sq).T, rel=1e-10, abs=1e-10)

    # the element's start is the last row of the element before, also when a table repeats
    # a boundary as the first row of the next element; a table not from s = 0 is refused
    el, s = df["element"].to_numpy(), df["s_sector"].to_numpy()
    groups = element_points(el, s)
    assert [g[0] for g in groups] == [0, 3, 6, 9]
    assert [list(g[1]) for g in groups[:2]] == [[1, 2, 3], [4, 5, 6]]
    rep = pd.concat([df.iloc[:4], df.iloc[3:4].assign(element=2), df.iloc[4:]], ignore_index=True)
    g2 = element_points(rep["element"].to_numpy(), rep["s_sector"].to_numpy())
    assert g2[1][0] == 3 and list(g2[1][1]) == [5, 6, 7]
    with pytest.raises(ValueError, match="start point"):
        element_points(el[1:], s[1:])
    with pytest.raises(ValueError, match="interpolation"):
        controls_from_trajectory(df, "s", interpolation="spline")


@pytest.mark.unit
def test_checks_and_verdict():
    """A check passes up to its warn threshold, warns up to its fail threshold, fails above it
    or without a value; the verdict is the worst; one printed line per check."""
    from pyomo_lap.verify.verdict import format_check, interpolation_of, make_check, overall_verdict
    lim = (1.0, 5.0)
    assert [make_check("x", v, "m", lim)["verdict"] for v in (0.0, 1.0, 1.01, 5.0, 5.1)] == \
        ["pass", "pass", "warn", "warn", "fail"]
    assert make_check("x", None, "m", lim)["verdict"] == "fail"
    assert make_check("x", float("nan"), "m", lim)["verdict"] == "fail"
    c = make_check("replay_lateral", 0.178, "% width", lim, "1.4 cm")
    assert set(c) >= {"name", "value", "unit", "warn_above", "fail_above", "verdict"}
    assert format_check(c).split()[:4] == ["PASS", "replay_lateral", "0.178", "%"]
    assert "(warn > 1, fail > 5)" in format_check(c)
    checks = [make_check("a", 0.0, "-", lim), make_check("b", 2.0, "-", lim)]
    assert overall_verdict(checks) == "warn" and overall_verdict([]) == "pass"
    assert overall_verdict(checks + [make_check("c", 9.0, "-", lim)]) == "fail"
    assert interpolation_of({"ocp_options": {"control_form": "state"}}) == "state"
    assert interpolation_of({"ocp_options": {"control_form": "point"}}) == "auto"
    assert interpolation_of({}) == "auto"                        # older results


@pytest.mark.unit
def test_cli_refuses_what_is_not_a_results_folder(tmp_path):
    """Exit code 2, one line, for a folder that is not a results folder, one that does not
    exist, and two different folders."""
    from click.testing import CliRunner
    from pyomo_lap.cli import main
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (["validate", str(empty)], ["validate", "--out", str(tmp_path / "nothing")],
                 ["validate", str(empty), "--out", str(tmp_path / "other")]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output)
        assert "error:" in r.output
    assert "summary.json" in CliRunner().invoke(main, ["validate", str(empty)]).output


# ------------------------------------------------------------------------------ integration
@pytest.mark.integration
def test_a_good_short_sector_passes(good, tmp_path):
    """The default OCP on the short sector passes every check; the controls are interpolated
    as states; validation.json holds the checks and the verdict; the two figures are written
    (into the results folder, or the folder asked for)."""
    from pyomo_lap.api.validate import validate_results
    lines = []
    res = validate_results(good, echo=lines.append)
    assert res["verdict"] == "pass", [c for c in res["checks"] if c["verdict"] != "pass"]
    assert res["interpolation"] == "state"
    names = [c["name"] for c in res["checks"]]
    assert names == ["defect_max", "defect_p95", "replay_shortfall", "replay_lateral",
                     "replay_time", "replay_steering", "zigzags", "speed_consistency",
                     "energy_balance", "power_limit"]
    by = _by_name(res)
    assert by["replay_shortfall"]["value"] == 0.0
    assert by["replay_lateral"]["value"] < 1.0                  # % of the track width
    assert "replay_open_loop" not in res                        # optional, never judged
    v = json.loads((good / "validation.json").read_text())
    assert v["verdict"] == "pass" and len(v["checks"]) == len(names)
    for f in ("validation_defects.png", "validation_replay.png"):
        assert (good / f).stat().st_size > 10_000
    check_lines = [ln for ln in lines if ln.split()[:1] in (["PASS"], ["WARN"], ["FAIL"])]
    assert len(check_lines) == len(names) and lines[-2] == "verdict: PASS"
    # --plots DIR, and the open-loop replay as information
    res2 = validate_results(good, echo=_quiet, plots_dir=tmp_path / "figs", open_loop=True,
                            feedback=False)
    assert (tmp_path / "figs" / "validation_defects.png").exists()
    assert not (tmp_path / "figs" / "validation_replay.png").exists()   # no feedback replay
    assert "agree_until_s_m" in res2["replay_open_loop"]
    assert not any(c["name"].startswith("replay") for c in res2["checks"])


@pytest.mark.integration
def test_a_coarse_mesh_fails_on_its_defects(coarse):
    """40 m elements: the collocation polynomials miss the dynamics between the points; the
    defects fail, and so does the replay (the car does not drive the plan)."""
    from pyomo_lap.api.validate import validate_results
    res = validate_results(coarse, echo=_quiet, plots=False)
    assert res["verdict"] == "fail"
    assert {"defect_max", "defect_p95", "replay_lateral"} <= _failing(res)


@pytest.mark.integration
def test_noise_on_the_steering_fails_on_zigzags_and_defects(good, tmp_path):
    """The good result with Gaussian noise of 0.5 deg on delta at every point: the steering
    zig-zags and its polynomials no longer make the states' polynomials satisfy the dynamics;
    the replay still reaches the end."""
    from pyomo_lap.api.validate import validate_results
    rng = np.random.default_rng(1)

    def noise(df):
        df["delta"] += math.radians(0.5) * rng.standard_normal(len(df))

    res = validate_results(_perturbed(good, tmp_path / "noisy", noise), echo=_quiet, plots=False)
    assert res["verdict"] == "fail"
    assert {"zigzags", "defect_max"} <= _failing(res)
    by = _by_name(res)
    assert "delta" in by["zigzags"]["detail"]
    assert by["replay_shortfall"]["verdict"] == "pass"


@pytest.mark.integration
def test_a_shifted_speed_fails_on_the_replay_time_and_defects(good, tmp_path):
    """The good result with q1_dot 1 m/s higher at every point: the table's time no longer
    integrates its speed (defects) and the car started 1 m/s faster finishes early (replay
    time); the channels themselves do not zig-zag."""
    from pyomo_lap.api.validate import validate_results

    def shift(df):
        df["q1_dot"] += 1.0

    res = validate_results(_perturbed(good, tmp_path / "fast", shift), echo=_quiet, plots=False)
    assert res["verdict"] == "fail"
    assert {"replay_time", "defect_p95"} <= _failing(res)
    assert _by_name(res)["zigzags"]["verdict"] == "pass"


@pytest.mark.integration
def test_cli_exit_codes_follow_the_verdict(good, coarse, tmp_path, monkeypatch):
    """0 on pass (folder as argument or --out), 1 on fail, on warn 0 (1 with --strict)."""
    from click.testing import CliRunner
    import pyomo_lap.verify.verdict as verdict
    from pyomo_lap.cli import main
    g = _copy(good, tmp_path / "good")
    r = CliRunner().invoke(main, ["validate", str(g), "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "verdict: PASS" in r.output
    assert any(ln.startswith("PASS  defect_max") for ln in r.output.splitlines())
    r = CliRunner().invoke(main, ["validate", "--out", str(g), "--no-plots"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["validate", str(_copy(coarse, tmp_path / "coarse")), "--no-plots"])
    assert r.exit_code == 1, r.output
    assert "verdict: FAIL" in r.output and "FAIL  defect_max" in r.output
    # a warning: the good result against a lateral-deviation limit of 0
    monkeypatch.setattr(verdict, "REPLAY_LATERAL", (0.0, 100.0))
    r = CliRunner().invoke(main, ["validate", str(g), "--no-plots"])
    assert r.exit_code == 0 and "verdict: WARN" in r.output, r.output
    r = CliRunner().invoke(main, ["validate", str(g), "--no-plots", "--strict"])
    assert r.exit_code == 1 and "verdict: WARN" in r.output, r.output


@pytest.mark.unit
def test_zigzag_limits_scale_with_the_sector_length():
    """The counts hold per ZIGZAG_LENGTH_M of sector and never less: 9 zig-zags of one channel
    warn on a 2 km sector and pass on the 20.8 km Nordschleife; 90 fail there."""
    from pyomo_lap.verify.verdict import ZIGZAG_LENGTH_M, ZIGZAGS, _zigzag_check, zigzag_limits
    assert zigzag_limits(400.0) == ZIGZAGS == zigzag_limits(ZIGZAG_LENGTH_M)
    assert zigzag_limits(4 * ZIGZAG_LENGTH_M) == (4 * ZIGZAGS[0], 4 * ZIGZAGS[1])

    def q(n):
        return {"zigzags": {"a_x": {"count": n, "at_m": [100.0 * k for k in range(n)]},
                            "delta": {"count": 0, "at_m": []}}}
    assert _zigzag_check(q(9), 2000.0)[0]["verdict"] == "warn"
    c = _zigzag_check(q(9), 20800.0)[0]
    assert c["verdict"] == "pass" and c["warn_above"] == pytest.approx(8 * 20800.0 / 5000.0)
    assert _zigzag_check(q(90), 20800.0)[0]["verdict"] == "fail"
