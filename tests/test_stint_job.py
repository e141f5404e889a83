"""A stint is a job (issue 45, item 7): each lap's results go through the job's steps after a
solve (pyomo_lap.api.results.results_of_solve), so a lap's folder is a results folder as
``solve`` writes one, with the self-check; lap 1 of a stint is the flying lap of
``solve_sector(periodic=True, length=None)`` on the same mesh; a lap that fails its
self-check makes ``pyomo-lap stint`` exit 4 once every lap is written.

The case: the FSAE car on dymos's oval (1245 m), 30 elements, as tests/test_stint_fuel.py
solves it. (That the stint's folder is checked before the first lap is built:
tests/test_writers_attacked.py, test_a_stints_folder_is_checked_before_its_first_lap.)
"""
import functools
import json

import pytest
from click.testing import CliRunner

from pyomo_lap import load_vehicle, solve_sector
from pyomo_lap.verify.verdict import SELF_CHECKS, VERDICTS

MESH = {"nfe": 30}
"""The stint's and the flying lap's mesh: 30 elements of about 41 m."""


@pytest.fixture(scope="module")
def stint_and_lap(tmp_path_factory):
    """A 2-lap stint written to ``st`` and the flying lap solved by ``solve_sector`` into
    ``lap`` (its own pipeline: mesh continuation, no stint), once for the module."""
    from pyomo_lap.api.stint import solve_stint
    tmp = tmp_path_factory.mktemp("stint_job")
    res = solve_stint("dymos_oval", "fsae", 2, ocp_options=MESH, out_dir=tmp / "st",
                      echo=lambda *_: None)
    one = solve_sector(track="dymos_oval", vehicle="fsae", periodic=True, length=None,
                       out_dir=tmp / "lap", echo=lambda *_: None, **MESH)
    return res, one, tmp


def _files(folder):
    return sorted(p.name for p in folder.iterdir() if p.is_file())


@pytest.mark.integration
def test_a_laps_folder_holds_what_a_solves_folder_holds(stint_and_lap):
    """Each lap_NN holds the same files as the results folder of ``solve_sector`` of the same
    closed lap (solution.npz, corners.csv, the workbook, the manifest ...), and is a results
    folder of its own."""
    from pyomo_lap.folders.results_folder import check_results_folder
    _, _, tmp = stint_and_lap
    solved = _files(tmp / "lap")
    assert {"solution.npz", "corners.csv", "summary.json", "trajectory.parquet"} <= set(solved)
    for k in (1, 2):
        assert _files(tmp / "st" / f"lap_{k:02d}") == solved, k
        check_results_folder(tmp / "st" / f"lap_{k:02d}")


@pytest.mark.integration
def test_lap_one_of_a_stint_is_the_flying_lap_of_the_job(stint_and_lap):
    """Lap 1's time is the lap time of ``solve_sector(periodic=True, length=None)`` on the same
    mesh (1e-6 relative: two solves of one problem from different starts), and its
    summary.json is a solve's: the same sizes and mesh, the self-check of the same lap, with
    the stint's own fields (lap 1, periodic, the car's mass at the start)."""
    res, one, tmp = stint_and_lap
    lap1 = json.loads((tmp / "st" / "lap_01" / "summary.json").read_text())
    assert res["laps"][0]["lap_time_s"] == pytest.approx(one.summary.lap_time_s, rel=1e-6)
    assert lap1["lap_time_s"] == res["laps"][0]["lap_time_s"]
    for key in ("n_points", "nfe", "ncp", "scheme", "start_m", "length_m", "model", "track"):
        assert lap1[key] == one.summary[key], key
    assert lap1["mesh"]["element_boundaries_m"] == one.summary.mesh["element_boundaries_m"]
    assert lap1["corners"] and len(lap1["corners"]) == len(one.summary.corners)
    assert lap1["lap"] == 1 and lap1["periodic"] is True and lap1["optimal"] is True
    assert lap1["mass_start_kg"] == pytest.approx(load_vehicle("fsae").m, rel=1e-12)
    ours, theirs = lap1["self_check"], one.self_check
    assert ours["verdict"] == theirs["verdict"]
    assert set(ours["checks"]) == set(theirs["checks"])
    for name, c in ours["checks"].items():
        assert c["verdict"] == theirs["checks"][name]["verdict"], name
        assert c["value"] == pytest.approx(theirs["checks"][name]["value"], rel=2e-2, abs=1e-3)


@pytest.mark.integration
def test_every_lap_has_its_self_check_in_its_summary_and_the_table(stint_and_lap):
    """Each lap's summary.json holds ``self_check`` with a verdict and the fast checks; the
    stint's table (the result, stint.csv, stint.json) has the verdict in capitals per lap."""
    res, _, tmp = stint_and_lap
    csv = (tmp / "st" / "stint.csv").read_text().splitlines()
    header = csv[0].split(",")
    assert "self_check" in header
    column = [row.split(",")[header.index("self_check")] for row in csv[1:]]
    saved = json.loads((tmp / "st" / "stint.json").read_text())["laps"]
    for k in (1, 2):
        summary = json.loads((tmp / "st" / f"lap_{k:02d}" / "summary.json").read_text())
        sc = summary["self_check"]
        assert sc["verdict"] in VERDICTS and set(sc["checks"]) <= set(SELF_CHECKS)
        assert sc["verdict"] == res["self_checks"][k - 1]["verdict"]
        assert set(sc["checks"]) == set(res["self_checks"][k - 1]["checks"])
        assert column[k - 1] == saved[k - 1]["self_check"] == res["laps"][k - 1]["self_check"] \
            == sc["verdict"].upper()
        assert summary["lap"] == k and summary["periodic"] is (k == 1)
    assert json.loads((tmp / "st" / "lap_02" / "summary.json").read_text())[
        "mass_start_kg"] == res["laps"][1]["mass_start_kg"]


def _small(real):
    """``solve_stint`` on :data:`MESH` (the command line has no mesh option)."""
    @functools.wraps(real)
    def run(*args, **kwargs):
        return real(*args, **{**kwargs, "ocp_options": MESH})
    return run


@pytest.mark.integration
def test_stint_cli_exits_4_when_a_lap_fails_its_self_check_after_writing_all(tmp_path,
                                                                            monkeypatch):
    """With the thresholds of the defects and the speed consistency out of reach, both laps
    pass and ``pyomo-lap stint`` exits 0, each lap's line ending ``self-check PASS``. With
    lap 2's energy balance judged against a limit below any result (the stand-in), the stint
    exits 4 after writing every lap: one error line naming lap 2 alone and the check, lap 2's
    summary with the failing verdict, lap 1's passing."""
    import pyomo_lap.api.stint as stint
    import pyomo_lap.verify.verdict as verdict
    from pyomo_lap.cli import SELF_CHECK_FAILED, main
    monkeypatch.setattr("pyomo_lap.cli.run.solve_stint", _small(stint.solve_stint))
    for name in ("DEFECT_MAX", "DEFECT_P95", "SPEED_CONSISTENCY"):
        monkeypatch.setattr(verdict, name, (1e6, 2e6))
    args = ["stint", "--track", "dymos_oval", "--laps", "2", "--out", str(tmp_path / "st")]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert [ln.split("; ")[-1] for ln in r.output.splitlines()
            if ln.startswith("  lap ")] == ["self-check PASS"] * 2, r.output

    real, calls = verdict.self_check, []

    def lap_two_fails(*a, **k):
        calls.append(1)
        if len(calls) != 2:
            return real(*a, **k)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(verdict, "ENERGY_BALANCE", (-200.0, -100.0))
            return real(*a, **k)
    monkeypatch.setattr("pyomo_lap.api.results.self_check", lap_two_fails)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == SELF_CHECK_FAILED == 4, r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "lap 2 of the stint failed the self-check" in errors[0]
    assert "energy_balance" in errors[0] and "lap 1:" not in errors[0], errors[0]
    out = tmp_path / "st"
    verdicts = [json.loads((out / f"lap_{k:02d}" / "summary.json").read_text())["self_check"]
                ["verdict"] for k in (1, 2)]
    assert verdicts == ["pass", "fail"]
    table = (out / "stint.csv").read_text().splitlines()
    assert [row.split(",")[-1] for row in table[1:]] == ["PASS", "FAIL"]
