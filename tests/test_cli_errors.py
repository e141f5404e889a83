"""Command-line arguments: every bad input stops `pyomo-lap solve` with one clear message and a
non-zero exit code, before any model is built, without a traceback and without touching an
earlier results folder."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pyomo_lap.cli import main
from pyomo_lap.vehicle.car import models_dir

EARLIER = '{"lap_time_s": 51.0, "pyomo_lap_version": "0.1.0"}'


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Bad (and some good) input files, and a results folder of an earlier run."""
    d = tmp_path_factory.mktemp("cli")
    u = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    ring = np.c_[100 * np.cos(u), 100 * np.sin(u), np.full_like(u, 300.0)]

    def csv(name, P, extra="", cells=None):
        rows = ["x,y,z" + ("," + ",".join(extra) if extra else "")]
        for i, p in enumerate(P):
            vals = [f"{v:.6f}" for v in p]
            if extra:
                vals += [str(x) for x in cells[i]]
            rows.append(",".join(vals))
        (d / name).write_text("\n".join(rows) + "\n")
        return d / name

    bad = ring.copy()
    bad[7, 1] = np.nan
    csv("nan.csv", bad)
    t = np.linspace(0, 500, 251)
    csv("open.csv", np.c_[t, 0.002 * t ** 2, np.zeros_like(t)])
    csv("narrow.csv", ring, ["width_left", "width_right"], [(0.5, 0.5)] * len(ring))
    toml = (models_dir() / "fsae.toml").read_text()
    (d / "kw.toml").write_text(toml.replace("P_max = 47.0e3", "P_max = 47.0"))
    (d / "typo.toml").write_text(toml.replace("rho = 1.167", "rhoo = 1.167"))
    (d / "a_file").write_text("not a folder")
    (d / "folder.csv").mkdir()
    (d / "route.gpx").write_text("<gpx/>")
    foreign = d / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("keep me")
    (d / "res2.failed").mkdir()
    (d / "res2.failed" / "notes.txt").write_text("mine")
    earlier = d / "results"
    earlier.mkdir()
    (earlier / "summary.json").write_text(EARLIER)
    return d


def unwritable(d: Path) -> str:
    """A folder that cannot be written: read-only permissions, or /sys when running as root
    (root ignores permissions; /sys refuses new entries to everyone)."""
    if os.geteuid() != 0:
        ro = d / "readonly"
        ro.mkdir(exist_ok=True)
        ro.chmod(0o500)
        return str(ro / "results")
    return "/sys/pyomo_lap_results"


# (arguments, exit code, words of the message); {d} is the files folder, {ro} an unwritable one
CASES = [
    # mesh
    (["--nfe", "0"], 2, ["--nfe 0", "between 2 and 100000"]),
    (["--nfe", "1"], 2, ["--nfe 1", "between 2 and 100000"]),
    (["--nfe", "1000000"], 2, ["--nfe 1000000", "between 2 and 100000"]),
    (["--nfe", "abc"], 2, ["'--nfe'", "'abc' is not a valid integer"]),
    (["--nfe", "2.5"], 2, ["'--nfe'", "'2.5' is not a valid integer"]),
    (["--ncp", "0"], 2, ["--ncp 0", "between 1 and 10"]),
    (["--ncp", "11"], 2, ["--ncp 11", "between 1 and 10"]),
    (["--nfe", "5000", "--length", "100"], 2, ["--nfe 5000", "0.02 m", "at least 0.1 m"]),
    (["--scheme", "RK4"], 2, ["'--scheme'", "'RK4' is not one of"]),
    (["--max-iter", "0"], 2, ["--max-iter 0", "between 1 and"]),
    (["--max-iter", "-5"], 2, ["--max-iter -5"]),
    # sector
    (["--length", "0"], 2, ["--length 0", "positive, finite"]),
    (["--length", "-5"], 2, ["--length -5", "positive, finite"]),
    (["--length", "nan"], 2, ["--length nan", "positive, finite"]),
    (["--length", "inf"], 2, ["--length inf", "positive, finite"]),
    (["--length", "1e308"], 2, ["sector length 1e+308 m: longer than one lap"]),   # compact
    (["--max-iter", "1" + "0" * 40], 2, ["--max-iter 1e+40: expected an integer between"]),
    (["--start", "-1"], 2, ["--start -1", ">= 0 m"]),
    (["--start", "nan"], 2, ["--start nan"]),
    (["--start", "1e9", "--length", "100"], 2, ["start = 1000000000.0 m", "0 <= start < 20724"]),
    (["--track", "{d}/open.csv", "--length", "5000"], 2,
     ["past the end of the open track", "expected length <=", "--repair-track"]),
    # entry speed
    (["--initial-speed", "fast"], 2, ["--initial-speed 'fast'", "'quasi-steady' or 'free'"]),
    (["--initial-speed", "-3"], 2, ["--initial-speed -3", "positive speed"]),
    (["--initial-speed", "0"], 2, ["--initial-speed 0", "positive speed"]),
    (["--initial-speed", "nan"], 2, ["--initial-speed nan", "positive speed"]),
    # track
    (["--track", "monaco"], 2, ["unknown track 'monaco'", "known tracks: barcelona, ", "nordschleife"]),
    (["--track", "{d}/missing.csv"], 2, ["track file not found", "missing.csv"]),
    (["--track", "{d}/folder.csv"], 2, ["folder.csv", "is a folder"]),
    (["--track", "{d}/route.gpx"], 2, ["route.gpx", "unknown type '.gpx'"]),
    (["--track", "{d}/nan.csv"], 2, ["nan.csv", "column 'y'", "row 8 (line 9) 'nan'", "--repair-track"]),
    (["--track", "{d}/narrow.csv", "--length", "300"], 2, ["narrower than the car 'fsae'",
                                                           "1.40 m wide", "1.00 m at s ="]),
    (["--track", "{d}/narrow.csv", "--length", "1000"], 2, ["longer than one lap",
                                                            "which is 628.", "--full-lap"]),
    # vehicle
    (["--vehicle", "ferrari"], 2, ["unknown vehicle 'ferrari'", "known vehicles are", "fsae"]),
    (["--vehicle", "{d}/missing.toml"], 2, ["missing.toml", "file not found"]),
    (["--vehicle", "{d}/kw.toml"], 2, ["kw.toml", "[powertrain] P_max = 47.0", ">= 1000", "W, not kW"]),
    (["--vehicle", "{d}/typo.toml"], 2, ["typo.toml", "unknown field [aero] rhoo", "missing field [aero] rho"]),
    # output folder
    (["--out", "{d}/a_file"], 2, ["a_file", "is a file"]),
    (["--out", "{d}/a_file/results"], 2, ["a_file' is a file, not a folder"]),
    (["--out", "{ro}"], 2, ["cannot write results next to"]),
    (["--out", "/"], 2, ["has no name"]),
    (["--out", "{d}/thesis"], 2, ["thesis", "not pyomo_lap results", "nothing was touched"]),
    (["--out", "{d}/res2"], 2, ["res2.failed", "not pyomo_lap results"]),
    # solver, unknown option
    (["--solver", "no_such_solver"], 2, ["solver 'no_such_solver' is not a solver Pyomo knows"]),
    (["--colour", "red"], 2, ["No such option", "--colour"]),
]


def _ids():
    return [" ".join(a).replace("{d}/", "") for a, _, _ in CASES]


@pytest.mark.unit
@pytest.mark.parametrize("args, code, words", CASES, ids=_ids())
def test_bad_argument(files, args, code, words):
    args = [a.format(d=files, ro=unwritable(files)) for a in args]
    if "--out" not in args:
        args += ["--out", str(files / "results")]
    r = CliRunner().invoke(main, ["solve", *args])
    assert r.exit_code == code, r.output
    assert isinstance(r.exception, SystemExit), r.exception       # a clean exit, no traceback
    assert "Traceback" not in r.output
    for w in words:
        assert w in r.output, (w, r.output)
    assert "building the model" not in r.output                   # stopped before building
    assert (files / "results" / "summary.json").read_text() == EARLIER
    assert sorted(p.name for p in (files / "results").iterdir()) == ["summary.json"]
    assert (files / "thesis" / "chapter1.tex").read_text() == "keep me"
    assert (files / "res2.failed" / "notes.txt").read_text() == "mine"
    assert not (files / "a_file").is_dir()


@pytest.mark.unit
def test_repairs_are_reported_before_anything_is_built(files):
    """--repair-track repairs the track and shortens the sector, says so, then goes on (here
    to a missing solver, which stops it before building)."""
    r = CliRunner().invoke(main, ["solve", "--track", str(files / "nan.csv"), "--repair-track",
                                  "--length", "300", "--solver", "no_such_solver",
                                  "--out", str(files / "results")])
    assert r.exit_code == 2
    assert "track repaired: column 'y'" in r.output and "the point is dropped" in r.output
    r = CliRunner().invoke(main, ["solve", "--track", str(files / "open.csv"), "--repair-track",
                                  "--start", "100", "--length", "5000", "--solver", "no_such_solver",
                                  "--out", str(files / "results")])
    assert r.exit_code == 2
    assert "sector repaired" in r.output and "shortened to" in r.output


@pytest.mark.unit
def test_check_command(files):
    r = CliRunner().invoke(main, ["check"])
    assert r.exit_code == 0, r.output
    assert "track nordschleife" in r.output and "vehicle fsae" in r.output and "fits" in r.output
    r = CliRunner().invoke(main, ["check", "--track", str(files / "nan.csv"),
                                  "--vehicle", str(files / "kw.toml")])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert "column 'y'" in r.output and "P_max" in r.output           # both files' problems
    r = CliRunner().invoke(main, ["check", "--track", str(files / "narrow.csv")])
    assert r.exit_code == 2 and "narrower than the car" in r.output
    r = CliRunner().invoke(main, ["check", "--track", str(files / "nan.csv"), "--repair-track"])
    assert r.exit_code == 0 and "track repaired" in r.output


@pytest.mark.unit
def test_unexpected_errors_are_one_line_unless_debugging(files, monkeypatch):
    def boom(*a, **k):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr("pyomo_lap.cli.run.solve_sector", boom)
    monkeypatch.delenv("PYOMO_LAP_DEBUG", raising=False)
    r = CliRunner().invoke(main, ["solve", "--out", str(files / "results")])
    assert r.exit_code == 3 and isinstance(r.exception, SystemExit)
    assert "unexpected ZeroDivisionError: float division by zero" in r.output
    assert "PYOMO_LAP_DEBUG=1" in r.output
    monkeypatch.setenv("PYOMO_LAP_DEBUG", "1")
    r = CliRunner().invoke(main, ["solve", "--out", str(files / "results")])
    assert isinstance(r.exception, ZeroDivisionError)


@pytest.mark.component
def test_real_process_prints_one_line_and_exits_2(files):
    """The installed entry point (a real process): stderr is one error line, no traceback."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "pyomo_lap.cli", "solve", "--vehicle",
                        str(files / "kw.toml"), "--out", str(files / "results")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert p.stderr.startswith("error: vehicle file ") and "Traceback" not in p.stderr + p.stdout
    assert len(p.stderr.strip().splitlines()) == 1
    assert json.loads((files / "results" / "summary.json").read_text())["lap_time_s"] == 51.0


def _hsl_present() -> bool:
    import ctypes.util
    return any(ctypes.util.find_library(n) for n in ("hsl", "coinhsl"))


@pytest.mark.component
@pytest.mark.skipif(_hsl_present(), reason="an HSL library is installed: ma57 can be loaded")
def test_linear_solver_ipopt_cannot_load_is_refused_before_the_build(files):
    """linear_solver=ma57 without HSL: IPOPT is asked before anything is built; one line says
    which linear solvers it can load; no results folder, no '.failed' (issue 34, item 8)."""
    out = files / "ma57"
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--solver-option",
                                  "linear_solver=ma57", "--out", str(out)])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    line = [t for t in r.output.splitlines() if t.startswith("error:")]
    assert len(line) == 1 and "--solver-option linear_solver=ma57" in line[0]
    assert "cannot load the linear solver ma57" in line[0] and "it can load: mumps" in line[0]
    assert "hsllib=PATH" in line[0]
    assert "building the model" not in r.output
    assert not out.exists() and not out.with_name("ma57.failed").exists()


@pytest.mark.component
@pytest.mark.skipif(_hsl_present(), reason="an HSL library is installed: ma57 can be loaded")
def test_a_solve_that_never_started_writes_no_partial_results(files, monkeypatch):
    """A solve that fails before IPOPT's first iteration (here: the loadability check taken
    out, so that IPOPT itself fails to load ma57) writes no '.failed' folder of 'partial
    results' and says that nothing was written."""
    monkeypatch.setattr("pyomo_lap.solvers.solve._check_loadable",
                        lambda solver, options, refuse: options, raising=False)
    out = files / "never"
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--nfe", "20", "--solver-option",
                                  "linear_solver=ma57", "--out", str(out)])
    assert r.exit_code == 1, r.output
    assert "stopped before its first iteration" in r.output and "Nothing was written" in r.output
    assert "partial results written" not in r.output
    assert not out.exists() and not out.with_name("never.failed").exists()


@pytest.mark.component
def test_solver_option_output_file_is_written(files):
    """--solver-option output_file=PATH (lap_ipopt): IPOPT's log is written there; a folder
    that does not exist is refused before the build."""
    log = files / "ipopt_out.log"
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--nfe", "20", "-q",
                                  "--solver-option", f"output_file={log}",
                                  "--out", str(files / "with_log")])
    assert r.exit_code == 0, r.output
    assert log.is_file() and "EXIT: Optimal Solution Found." in log.read_text()
    r = CliRunner().invoke(main, ["solve", "--solver-option",
                                  f"output_file={files / 'nowhere' / 'x.log'}",
                                  "--out", str(files / "with_log2")])
    assert r.exit_code == 2 and "expected a file in an existing folder" in r.output
    assert "building the model" not in r.output


@pytest.mark.unit
def test_a_bad_limit_is_named_as_typed_not_as_a_tuple(tmp_path):
    """``--limit`` is repeatable: the refusal names the one entry the user typed wrong, not
    the Python tuple of all of them (issue 46)."""
    r = CliRunner().invoke(main, ["solve", "--length", "150", "--limit", "engine_energy=1MJ",
                                  "--limit", "foo=1MJ", "--out", str(tmp_path / "run")])
    line = r.output.strip()
    assert r.exit_code == 2 and len(line.splitlines()) == 1, r.output
    assert line.startswith("error: --limit 'foo=1MJ': unknown limit 'foo'"), line
    assert "(" not in line.split(":")[1] and "engine_energy=1MJ" not in line
    assert not (tmp_path / "run").exists()
