"""Parameter sweeps on Dask (pyomo_lap.sweeps, ``pyomo-lap sweep``): the specification and its
refusals (unit), and sweeps on a real ``distributed.LocalCluster`` of two worker processes on a
short sector (integration): the lap times equal those of the same cases solved one by one, a
worker killed during a sweep loses no finished case, ``resume`` runs only what is missing, a
failing case is a row with its reason."""
import math

import pandas as pd
import pytest
from click.testing import CliRunner

from pyomo_lap.cli import main
from pyomo_lap.sweeps import SweepSpecError, parse_set, resolve_parameter, sweep, sweep_cases
from pyomo_lap.sweeps.cases import check_cases, read_cases_csv

JOB = {"start": 1200.0, "length": 160.0, "nfe": 16, "ncp": 2,
       "solver_options": {"compile": "vm", "eval_threads": 1}}
"""A short sector (Nordschleife 1200-1360 m, about 2 s a solve); the CasADi virtual machine
instead of compiled C, so that a new vehicle costs no compilation."""


# ---------------------------------------------------------------------------------------
# the specification (unit)
# ---------------------------------------------------------------------------------------
@pytest.mark.unit
def test_names_are_the_vehicle_files_names_short_where_unique():
    assert resolve_parameter("mass.total") == ("mass.total", "m")
    assert resolve_parameter("total") == ("mass.total", "m")
    assert resolve_parameter("m") == ("mass.total", "m")
    assert resolve_parameter("[aero] Cx") == ("aero.Cx", "Cx")
    assert resolve_parameter("Cx") == ("aero.Cx", "Cx")
    assert resolve_parameter("P_max") == ("powertrain.P_max", "P_max")
    with pytest.raises(SweepSpecError, match=r"unknown parameter 'cl_a'.*mass\.total.*aero\.Cx"):
        resolve_parameter("cl_a")


@pytest.mark.unit
def test_grids_ranges_and_lists():
    axes = parse_set(["mass.total=250:300:10", "Cx=2.5,3.0,3.5", "track=monza,spa"])
    assert axes == {"mass.total": [250.0, 260.0, 270.0, 280.0, 290.0, 300.0],
                    "aero.Cx": [2.5, 3.0, 3.5], "track": ["monza", "spa"]}
    assert parse_set(["S=1:1.3:0.1"])["aero.S"] == [1.0, 1.1, 1.2, 1.3]   # stop included
    assert parse_set(["S=1:1.25:0.1"])["aero.S"] == [1.0, 1.1, 1.2]
    assert parse_set(["S=1.3:1:-0.1"])["aero.S"] == [1.3, 1.2, 1.1, 1.0]
    cases = sweep_cases(parse_set(["total=240,250", "Cx=0.8,0.9"]), job={"nfe": 10})
    assert [c["params"] for c in cases] == [{"mass.total": 240.0, "aero.Cx": 0.8},
                                            {"mass.total": 240.0, "aero.Cx": 0.9},
                                            {"mass.total": 250.0, "aero.Cx": 0.8},
                                            {"mass.total": 250.0, "aero.Cx": 0.9}]
    assert all(c["track"] == "nordschleife" and c["vehicle"] == "fsae" for c in cases)
    # ids: deterministic, one per case, and they change with the job's options
    again = sweep_cases(parse_set(["total=240,250", "Cx=0.8,0.9"]), job={"nfe": 10})
    assert [c["id"] for c in cases] == [c["id"] for c in again]
    assert len({c["id"] for c in cases}) == 4
    other = sweep_cases(parse_set(["total=240,250", "Cx=0.8,0.9"]), job={"nfe": 20})
    assert not {c["id"] for c in cases} & {c["id"] for c in other}


@pytest.mark.unit
@pytest.mark.parametrize("item, message", [
    ("cl_a=2.5,3.0", "unknown parameter 'cl_a'"),
    ("total=300:250:10", "range '300:250:10' is empty"),
    ("total=250:300:0", "is empty"),
    ("total=250:300", "expected start:stop:step"),
    ("total=", "no values"),
    ("total=250,abc", "'abc' is not a number"),
    ("total=250,nan", "not a finite number"),
    ("total=250,250", "a value is repeated"),
    ("total", "expected NAME=VALUES"),
    ("track=", "no track given"),
])
def test_bad_grids_are_refused(item, message):
    with pytest.raises(SweepSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_set([item])


@pytest.mark.unit
def test_a_parameter_given_twice_is_refused():
    with pytest.raises(SweepSpecError, match="mass.total is given twice"):
        parse_set(["total=240", "mass.total=250"])


@pytest.mark.unit
def test_values_the_schema_refuses_are_refused_before_anything_runs():
    with pytest.raises(SweepSpecError, match=r"(?s)2 problems:\n  - aero\.Cx = 5: refused by the "
                       r"vehicle schema.*<= 3.*\n  - mass\.total = 2000: refused.*static sag"):
        check_cases(sweep_cases(parse_set(["total=240,2000", "Cx=0.8,5"])), {})
    with pytest.raises(SweepSpecError, match="track 'nowhere': neither a bundled track"):
        check_cases(sweep_cases(parse_set(["track=nowhere"])), {})
    with pytest.raises(SweepSpecError, match="unknown vehicle 'nocar'"):
        check_cases(sweep_cases(parse_set(["vehicle=nocar"])), {})
    with pytest.raises(SweepSpecError, match="nfe"):
        check_cases(sweep_cases(parse_set(["total=240"])), {"nfe": -3})
    # values each fine alone, refused only together (unsprung above total): a case that
    # will be an 'invalid' row, not a refusal of the sweep
    check_cases(sweep_cases(parse_set(["total=50,240", "unsprung=30,60"])), {})


@pytest.mark.unit
def test_a_csv_of_cases(tmp_path):
    f = tmp_path / "cases.csv"
    f.write_text("total,aero.Cx,track\n240,0.84,\n250,,monza\n\n")
    cases = read_cases_csv(f)
    assert cases == [{"mass.total": 240.0, "aero.Cx": 0.84}, {"mass.total": 250.0, "track": "monza"}]
    built = sweep_cases(None, cases)
    assert [c["track"] for c in built] == ["nordschleife", "monza"]
    assert built[1]["params"] == {"mass.total": 250.0}
    f.write_text("total,cl_a\n240,3\n")
    with pytest.raises(SweepSpecError, match="column 'cl_a': unknown parameter"):
        read_cases_csv(f)
    f.write_text("total\n240\nheavy\n")
    with pytest.raises(SweepSpecError, match="line 3, column total: 'heavy' is not a number"):
        read_cases_csv(f)
    f.write_text("total\n")
    with pytest.raises(SweepSpecError, match="at least one case"):
        read_cases_csv(f)
    with pytest.raises(SweepSpecError, match="not both"):
        sweep_cases(parse_set(["total=240"]), [{"mass.total": 250.0}])


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--set", "cl_a=2.5,3.0"], "unknown parameter 'cl_a'"),
    (["--set", "mass.total=300:250:10"], "is empty"),
    (["--set", "mass.total=2000"], "refused by the vehicle schema"),
    ([], "nothing to sweep"),
    (["--set", "total=240", "--nfe", "0"], "--nfe 0"),
    (["--set", "total=240", "--solver-option", "max_iter"], "--solver-option"),
])
def test_the_command_refuses_bad_specifications_before_anything_runs(tmp_path, args, message):
    out = tmp_path / "sw"
    r = CliRunner().invoke(main, ["sweep", "--out", str(out), *args])
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert not out.exists()


@pytest.mark.unit
def test_an_earlier_sweep_is_not_overwritten_without_resume(tmp_path):
    out = tmp_path / "sw"
    out.mkdir()
    (out / "sweep.json").write_text("{}")
    with pytest.raises(SweepSpecError, match="holds an earlier sweep: --resume"):
        sweep(["total=240"], out=out, **JOB)
    (out / "sweep.json").unlink()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(SweepSpecError, match="is not a sweep folder"):
        sweep(["total=240"], out=out, **JOB)
    with pytest.raises(SweepSpecError, match="--resume: .* is not a sweep folder"):
        sweep(["total=240"], out=out, resume=True, **JOB)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.unit
def test_compile_ahead_takes_the_model_of_each_cases_vehicle(monkeypatch):
    """The sweep's first task, compile_ahead, on a job that names no model (the CLI's default):
    it takes the model of each case's vehicle file, as the cases do. It raised ValueError('model
    = None') on every sweep (a worker's traceback on the console, and no compile-ahead);
    issue 34, item 10."""
    from pyomo_lap.sweeps.run import _job, compile_ahead
    job = _job({k: v for k, v in JOB.items() if k != "solver_options"})   # compiled functions
    assert job["model"] is None
    cases = sweep_cases({"mass.total": [240.0, 250.0]}, job=job)
    seen = []
    monkeypatch.setattr("pyomo_lap.sweeps.run.point_functions",
                        lambda rec, how: seen.append(rec))
    monkeypatch.setattr("pyomo_lap.sweeps.run.find_compiler", lambda: "cc")
    info = compile_ahead(cases, job)
    assert (info["structures"], info["cars"], len(seen)) == (1, 2, 1)   # one structure
    # compile=vm (nothing to compile): skipped, without an error
    assert compile_ahead(cases, _job(JOB))["structures"] == 0


class _NoClient:
    def close(self):
        pass


@pytest.fixture
def no_run(monkeypatch):
    """A sweep that runs no case (no cluster, no solve): the specification and the folder."""
    monkeypatch.setattr("pyomo_lap.sweeps.run._run", lambda *a, **k: None)
    monkeypatch.setattr("pyomo_lap.sweeps.run._shared_meshes", lambda *a, **k: None)
    monkeypatch.setattr("pyomo_lap.sweeps.run._client", lambda *a, **k: (_NoClient(), None))


@pytest.mark.unit
@pytest.mark.parametrize("grid, job, words", [
    (["total=240,260"], {}, ["has 1 case that this one has not", "mass.total", "240"]),
    (["Cx=0.8,0.9"], {}, ["swept parameters (--set) = [\"mass.total\"], this one [\"aero.Cx\"]"]),
    (["total=240,250"], {"nfe": 20}, ["job option 'nfe' = 16, this one 20"]),
    (["total=240,250"], {"vehicle": "f1_2014"}, ["base vehicle = \"fsae\", this one \"f1_2014\""]),
], ids=["other-values", "other-parameter", "other-job", "other-vehicle"])
def test_resume_with_another_specification_is_refused(tmp_path, no_run, grid, job, words):
    """--resume compares the specification with the folder's sweep.json before anything runs
    and refuses one that differs (it used to replace sweep.json, the table and the workbook
    without a word: issue 34, item 10); one that only adds cases is taken, and said."""
    out = tmp_path / "sw"
    quiet = {"echo": lambda *_: None, "plots": False}
    sweep(["total=240,250"], out=out, **quiet, **JOB)
    spec = (out / "sweep.json").read_text()
    with pytest.raises(SweepSpecError) as exc:
        sweep(grid, out=out, resume=True, **quiet, **{**JOB, **job})
    msg = str(exc.value)
    assert len(msg.splitlines()) == 1 and msg.startswith("--resume: the sweep in ")
    for w in words:
        assert w in msg, msg
    assert "give the same arguments as that sweep, or another --out" in msg
    assert (out / "sweep.json").read_text() == spec                  # nothing touched
    said = []
    sweep(["total=240,250,260"], out=out, resume=True, echo=said.append, plots=False, **JOB)
    assert any("the sweep grows from 2 to 3 cases (1 new" in line for line in said), said
    r = CliRunner().invoke(main, ["sweep", "--set", "total=240", "--resume", "--out", str(out),
                                  "--start", "1200", "--length", "160", "--nfe", "16",
                                  "--solver-option", "compile=vm",
                                  "--solver-option", "eval_threads=1"])
    assert r.exit_code == 2 and "has 2 cases that this one has not" in r.output, r.output


# ---------------------------------------------------------------------------------------
# on a LocalCluster of two worker processes (integration)
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    import logging

    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def one_by_one():
    """Lap times of cases solved one after another in this process, by mass."""
    from pyomo_lap import load_vehicle, solve_sector
    out = {}
    for mass in (240.0, 250.0, 260.0):
        p = load_vehicle("fsae").replace(m=mass)
        _, _, _, s = solve_sector(vehicle=p, out_dir=None, echo=lambda *_: None,
                                  progress=lambda *_: None, **JOB)
        out[mass] = s["lap_time_s"]
    return out


@pytest.mark.integration
def test_a_sweep_gives_the_lap_times_of_the_cases_solved_one_by_one(client, one_by_one, tmp_path):
    said = []
    table = sweep(["mass.total=240:260:10"], out=tmp_path / "sw", client=client,
                  echo=said.append, **JOB)
    assert list(table["status"]) == ["solved"] * 3
    assert list(table["mass.total"]) == [240.0, 250.0, 260.0]
    for mass, lap, src in zip(table["mass.total"], table["lap_time_s"], table["warm_start_from"]):
        # a warm-started case ends within IPOPT's tolerance of the cold start's point
        assert lap == pytest.approx(one_by_one[mass], rel=1e-9 if src == -1 else 1e-6)
    assert table["lap_time_s"].is_monotonic_increasing        # heavier is slower
    sectors = table[["sector_1_s", "sector_2_s", "sector_3_s"]].sum(axis=1)
    assert (sectors - table["lap_time_s"]).abs().max() < 1e-6
    assert set(table["termination_condition"]) == {"optimal"}
    assert (table["iterations"] > 0).all() and (table["wall_time_s"] > 0).all()
    assert len(set(table["worker"])) == 2                    # both workers solved
    out = tmp_path / "sw"
    for name in ("sweep.json", "sweep.parquet", "sweep.xlsx", "lap_time_vs_mass.total.png"):
        assert (out / name).is_file(), name
    pd.testing.assert_frame_equal(pd.read_parquet(out / "sweep.parquet"), table)
    xlsx = pd.read_excel(out / "sweep.xlsx", sheet_name="cases")
    assert list(xlsx["lap_time_s"]) == pytest.approx(list(table["lap_time_s"]))
    for cid in table["case_id"]:
        assert (out / "cases" / cid / "summary.json").is_file()
        assert (out / "rows" / f"{cid}.parquet").is_file()
    assert any(line.startswith("[" + "#" * 20 + "] [3/3] done 3, failed 0, running 0, waiting 0")
               for line in said), said
    # warm starts: the first two cases (one per worker) from the usual initial guess, the
    # third from the nearest of them solved by then, with the same lap time (checked above)
    assert sorted(table["warm_start_from"][:2]) == [-1, -1]
    assert table["warm_start_from"][2] in (0, 1)
    assert not table["warm_start_failed"].any()
    # the third case's worker put its car into the model of its first case (set_vehicle)
    assert table["model_reused"][2]
    cold = sweep(["mass.total=240:260:10"], out=tmp_path / "cold", client=client,
                 warm_start=False, echo=lambda *_: None, **JOB)
    assert (cold["warm_start_from"] == -1).all()
    assert cold["model_reused"].all()          # each worker kept the model of its last case
    for mass, lap in zip(cold["mass.total"], cold["lap_time_s"]):
        assert lap == pytest.approx(one_by_one[mass], rel=1e-12)   # the same start: the same NLP path


@pytest.mark.integration
def test_a_worker_killed_during_a_sweep_loses_no_finished_case(client, one_by_one, tmp_path):
    """The third case ends its worker process at its first attempt (as a killed worker);
    Dask runs it again on a worker, every case is solved, each once."""
    cases = sweep_cases(parse_set(["mass.total=240:260:10", "Cx=0.84"]),
                        job=__import__("pyomo_lap.sweeps.run", fromlist=["_job"])._job(dict(JOB)))
    crash = cases[2]["id"]
    out = tmp_path / "sw"
    table = sweep(["mass.total=240:260:10", "Cx=0.84"], out=out, client=client,
                  echo=lambda *_: None, plots=False, _crash_once=[crash], **JOB)
    marker = out / "rows" / f".{crash}.crashed"
    assert marker.exists()                                   # the worker did die
    assert list(table["status"]) == ["solved"] * 3
    row = table.set_index("case_id").loc[crash]
    assert row["worker"].split(":")[-1] != marker.read_text()   # solved by another process
    for mass, lap, src in zip(table["mass.total"], table["lap_time_s"], table["warm_start_from"]):
        # a warm-started case ends within IPOPT's tolerance of the cold start's point
        assert lap == pytest.approx(one_by_one[mass], rel=1e-9 if src == -1 else 1e-6)
    assert len(list((out / "rows").glob("*.parquet"))) == 3
    assert not list((out / "rows").glob("*.tmp"))            # no half-written row


@pytest.mark.integration
def test_a_case_whose_workers_keep_dying_is_a_lost_row_that_resume_runs_again(client, one_by_one,
                                                                             tmp_path):
    """With no retry allowed, the worker's death makes the case a row of status 'lost' with
    the reason (the sweep goes on); --resume runs it again."""
    scheduler = client.cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    out = tmp_path / "sw"
    cases = sweep_cases(parse_set(["mass.total=240,250"]),
                        job=__import__("pyomo_lap.sweeps.run", fromlist=["_job"])._job(dict(JOB)))
    try:
        table = sweep(["mass.total=240,250"], out=out, client=client, echo=lambda *_: None,
                      plots=False, _crash_once=[cases[1]["id"]], **JOB)
    finally:
        scheduler.allowed_failures = allowed
    assert table["status"][1] == "lost" and "KilledWorker" in table["reason"][1]
    # the other case is solved, or lost with it when Dask had queued it on the worker that died
    # (a worker may hold a second task behind the running one): also a KilledWorker row
    assert table["status"][0] == "solved" or "KilledWorker" in table["reason"][0]
    finished = int((table["status"] == "solved").sum())
    said = []
    table = sweep(["mass.total=240,250"], out=out, client=client, echo=said.append,
                  plots=False, resume=True, **JOB)
    assert said[0].startswith(f"sweep of 2 cases ({finished} already finished, "
                              f"{2 - finished} to run)"), said
    assert list(table["status"]) == ["solved", "solved"]
    warm = table["warm_start_from"][1] != -1       # a warm start ends within IPOPT's tolerance
    assert table["lap_time_s"][1] == pytest.approx(one_by_one[250.0], rel=1e-6 if warm else 1e-9)


@pytest.mark.integration
def test_resume_runs_only_what_is_missing(client, tmp_path):
    out = tmp_path / "sw"
    first = sweep(["mass.total=240,250"], out=out, client=client, echo=lambda *_: None,
                  plots=False, **JOB)
    kept = out / "rows" / f"{first['case_id'][0]}.parquet"
    stamp = kept.stat().st_mtime_ns
    # the sweep grows by a case, and one finished row is lost as if the worker died
    lost = first.loc[[1]].assign(status="lost", reason="KilledWorker", lap_time_s=math.nan)
    lost.to_parquet(out / "rows" / f"{first['case_id'][1]}.parquet", index=False)
    said = []
    table = sweep(["mass.total=240,250,260"], out=out, client=client, echo=said.append,
                  plots=False, resume=True, **JOB)
    assert said[0].startswith("sweep of 3 cases (1 already finished, 2 to run)"), said
    assert sum(line.startswith("[") for line in said) == 2
    assert kept.stat().st_mtime_ns == stamp                  # not run again
    assert list(table["status"]) == ["solved"] * 3
    for k in (0, 1):        # a case started from another (warm) ends within IPOPT's tolerance
        warm = table["warm_start_from"][k] != -1 or first["warm_start_from"][k] != -1
        assert table["lap_time_s"][k] == pytest.approx(first["lap_time_s"][k], rel=1e-6 if warm else 1e-9)
    said.clear()
    again = sweep(["mass.total=240,250,260"], out=out, client=client, echo=said.append,
                  plots=False, resume=True, **JOB)
    assert said[0].startswith("sweep of 3 cases (3 already finished, 0 to run)"), said
    pd.testing.assert_frame_equal(again, table)
    # a case put in front: the finished rows keep their results and take their new places
    said.clear()
    front = sweep(["mass.total=230,240,250,260"], out=out, client=client, echo=said.append,
                  plots=False, resume=True, **JOB)
    assert said[0].startswith("sweep of 4 cases (3 already finished, 1 to run)"), said
    assert list(front["case"]) == [0, 1, 2, 3]
    assert list(front["mass.total"]) == [230.0, 240.0, 250.0, 260.0]
    assert front["lap_time_s"].tolist()[1:] == table["lap_time_s"].tolist()
    assert front["lap_time_s"][0] < front["lap_time_s"][1]


@pytest.mark.integration
def test_failing_cases_are_rows_with_their_reasons(client, tmp_path):
    """A combination the schema refuses and a solver stopped by its iteration limit are rows
    with their reasons; the sweep goes on, and the command says so with exit code 1 (run
    through --scheduler, the cluster's address)."""
    f = tmp_path / "cases.csv"
    f.write_text("mass.total,mass.unsprung\n50,60\n240,40\n")
    out = tmp_path / "sw"
    r = CliRunner().invoke(main, [
        "sweep", "--cases", str(f), "--out", str(out), "--scheduler", client.scheduler.address,
        "--start", "1200", "--length", "160", "--nfe", "16", "--solver-option", "compile=vm",
        "--solver-option", "max_iter=3"])
    assert r.exit_code == 1, r.output
    table = pd.read_parquet(out / "sweep.parquet")
    assert list(table["status"]) == ["invalid", "failed"]
    assert "[mass] unsprung = 60.0: expected less than the total mass, 50.0 kg" in table["reason"][0]
    assert "iteration" in table["reason"][1].lower()
    assert table["termination_condition"][1] == "maxIterations"
    partial = out / table["results"][1] / "summary.json"           # the last iterate, kept
    assert partial.is_file() and '"partial": true' in partial.read_text()
    assert "done 0, failed 2, running 0, waiting 0" in r.output
    assert "2 cases: 1 failed, 1 invalid" in r.output


@pytest.mark.unit
def test_the_plots_of_a_sweep_table(tmp_path):
    """Lap time against each swept parameter and a heat map for two, from the table alone; a
    case that did not solve is left blank."""
    from pyomo_lap.plots.figures import figure_sweep_heatmap, sweep_plots
    table = pd.DataFrame({"case": range(4), "mass.total": [240.0, 240.0, 250.0, 250.0],
                          "aero.Cx": [0.8, 0.9, 0.8, 0.9],
                          "status": ["solved", "solved", "solved", "failed"],
                          "lap_time_s": [51.7, 53.0, 51.9, math.nan]})
    files = sweep_plots(table, tmp_path)
    assert [f.name for f in files] == ["lap_time_vs_mass.total.png", "lap_time_vs_aero.Cx.png",
                                       "lap_time_heatmap.png"]
    assert all(f.stat().st_size > 1000 for f in files)
    fig = figure_sweep_heatmap(table, "mass.total", "aero.Cx")
    grid = fig.axes[0].images[0].get_array()
    assert grid[0, 0] == 51.7 and grid[1, 0] == 53.0 and grid[0, 1] == 51.9
    assert grid.mask[1, 1] or math.isnan(grid[1, 1])
    assert fig.axes[0].get_xlabel() == "mass.total [kg]"


@pytest.mark.integration
def test_the_command_runs_a_sweep_on_its_own_forked_cluster(tmp_path):
    """`pyomo-lap sweep` as a user types it, in a fresh single-threaded process: its local
    cluster's workers are forked from it (Linux) and solve the cases; the lap times are those of
    the cases solved one by one in this process."""
    import subprocess
    import sys
    from pathlib import Path
    exe = Path(sys.executable).with_name("pyomo-lap")
    out = tmp_path / "sw"
    res = subprocess.run([str(exe), "sweep", "--set", "mass.total=240,250", "--workers", "2",
                          "--start", str(JOB["start"]), "--length", str(JOB["length"]),
                          "--nfe", str(JOB["nfe"]), "--no-warm-start", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    table = pd.read_parquet(out / "sweep.parquet")
    assert list(table["status"]) == ["solved", "solved"]
    from pyomo_lap import load_vehicle, solve_sector
    for mass, lap in zip(table["mass.total"], table["lap_time_s"]):
        s = solve_sector(vehicle=load_vehicle("fsae").replace(m=mass), out_dir=None,
                         echo=lambda *_: None, progress=lambda *_: None, **JOB).summary
        assert lap == pytest.approx(s["lap_time_s"], rel=1e-9)
    assert "[2/2] done 2, failed 0" in res.stdout


@pytest.mark.unit
def test_the_case_order_seeds_spread_out_then_follows_the_solved_cases():
    """Five masses 240..260 kg, two workers: the seeds are the middle (250) and the farthest
    from it (240, the first of the two ends); then each case taken is the one nearest to a
    solved case (a closed form of the distances over the range 20 kg)."""
    from pyomo_lap.sweeps.run import _next_case
    cases = [{"track": "t", "vehicle": "v", "params": {"mass.total": m}, "index": i}
             for i, m in enumerate((240.0, 245.0, 250.0, 255.0, 260.0))]
    scale = {"mass.total": 20.0}
    waiting, started = list(cases), []
    first = _next_case(waiting, [], started, scale)
    started.append(first)
    second = _next_case(waiting, [], started, scale)
    assert (first["params"]["mass.total"], second["params"]["mass.total"]) == (250.0, 240.0)
    solved = [first]                   # 250 solved first: its neighbours 245 and 255 come next
    third = _next_case(waiting, solved, started, scale)
    assert third["params"]["mass.total"] == 245.0
    solved.append(second)              # 240 and 245 near 240/250 ... 255 is 5 kg from 250
    fourth = _next_case(waiting, solved, started, scale)
    assert fourth["params"]["mass.total"] == 255.0
    other = {"track": "t", "vehicle": "other.toml", "params": {"mass.total": 250.0}}
    assert _next_case([other], solved, started, scale) is other   # no source: still runs
