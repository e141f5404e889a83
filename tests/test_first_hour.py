"""A newcomer's first hour, as typed (issue 25): the examples and ``scripts/solve.sh`` run from a
folder outside the repository, relative paths are the caller's, the documentation site builds
with warnings as errors (its tutorial executed), and the command line spells ``None``, takes
``-q``/``-v`` everywhere and says what it does in one line where it used to say seven.

The checks are independent of the code under test: sector times against a quadrature of the
written speeds, the energy budget against the printed budget, the command reference against
the commands click knows, the API reference against ``pyomo_lap.__all__``.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from _independent import time_by_quadrature
from pyomo_lap.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("quickstart", "energy_budget", "speed_limit_and_objective")


def _run(cmd, cwd, timeout=600, **env):
    """A child process as a user would start it (the repository is not its folder)."""
    assert not Path(cwd).resolve().is_relative_to(ROOT), "must run outside the repository"
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "MPLBACKEND": "Agg", **env})


def _read_written_speeds(folder: Path):
    import pandas as pd
    df = pd.read_csv(folder / "trajectory.csv")
    return df["s_sector [m]"], df["q1_dot [m/s]"]


# ------------------------------------------------------------------ the examples, as typed
@pytest.mark.integration
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_runs_from_a_folder_outside_the_repository(name, tmp_path):
    r = _run([sys.executable, ROOT / "examples" / f"{name}.py", "--quick"], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    out = r.stdout
    if name == "quickstart":                  # its folder is the caller's
        folder = tmp_path / "results_quickstart"
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["solver"] == "lap_ipopt"
        assert summary["lap_time_s"] == pytest.approx(
            time_by_quadrature(*_read_written_speeds(folder)), rel=1e-3)
        assert (folder / "plots" / "track_map.png").stat().st_size > 10_000
    elif name == "energy_budget":             # the budget binds and costs time
        free = re.search(r"no budget:\s+t = ([\d.]+) s, E = ([\d.]+) kJ", out)
        budget = re.search(r"with budget: t = ([\d.]+) s, E = ([\d.]+) kJ \(budget ([\d.]+) kJ\)", out)
        assert free and budget, out
        t_free, e_free = float(free.group(1)), float(free.group(2))
        t_b, e_b, e_max = (float(budget.group(i)) for i in (1, 2, 3))
        assert e_max == pytest.approx(0.85 * e_free, abs=0.1)      # the example's 85 %
        assert e_b == pytest.approx(e_max, abs=0.1) and t_b > t_free
    else:                                     # the zone's limit holds and binds
        m = re.search(r"optimal: sector time ([\d.]+) s, max speed in the zone ([\d.]+) m/s", out)
        assert m, out
        assert float(m.group(2)) == pytest.approx(25.0, abs=0.01)
    assert not any(tmp_path.parent.glob("results_quickstart")), "wrote outside its folder"


# ------------------------------------------------------------------ scripts/solve.sh, as typed
@pytest.mark.integration
def test_solve_sh_reads_and_writes_relative_to_the_callers_folder(tmp_path):
    """``cd ~/work && bash ~/pyomo_lap/scripts/solve.sh --vehicle cars/mycar.toml --out res``
    reads ``~/work/cars/mycar.toml`` and writes ``~/work/res``; the console says what was done
    to the track data in one line and both sizes of the problem."""
    work = tmp_path / "work"
    (work / "cars").mkdir(parents=True)
    text = (ROOT / "models" / "fsae.toml").read_text()
    text, n = re.subn(r'^name = "fsae"', 'name = "mycar"', text, flags=re.M)
    assert n == 1
    (work / "cars" / "mycar.toml").write_text(text)
    r = _run(["bash", ROOT / "scripts" / "solve.sh", "--vehicle", "cars/mycar.toml",
              "--start", "1150", "--length", "150", "--out", "res"], cwd=work,
             PYOMO_LAP_SKIP_IPOPT="1")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    summary = json.loads((work / "res" / "summary.json").read_text())
    assert summary["vehicle"] == "mycar"
    assert Path(summary["vehicle_file"]) == (work / "cars" / "mycar.toml").resolve()
    assert not (ROOT / "res").exists()
    assert summary["lap_time_s"] == pytest.approx(
        time_by_quadrature(*_read_written_speeds(work / "res")), rel=1e-3)
    lines = r.stdout.splitlines()
    data = [ln for ln in lines if ln.startswith("track data")]
    assert len(data) == 1 and len(data[0]) <= 120, data
    assert f"{len(summary['track_processing'])} processing steps" in data[0]
    built = re.search(r"the Pyomo model has (\d+) variables and (\d+) constraints", r.stdout)
    seen = re.search(r"the solver saw (\d+) variables, (\d+) constraints", r.stdout)
    assert built and seen, r.stdout
    assert int(seen.group(1)) == summary["n_variables"] < int(built.group(1))
    assert int(seen.group(2)) == summary["n_constraints"]
    assert max(len(ln) for ln in lines if not ln.startswith("results written to")) <= 160
    assert not any(ln.startswith("iter ") or "objective" in ln for ln in lines)   # no IPOPT log
    # a relative file that is not there: the message names where it looked
    r = _run(["bash", ROOT / "scripts" / "solve.sh", "--vehicle", "nothere.toml", "--out",
              "none"], cwd=work, PYOMO_LAP_SKIP_IPOPT="1")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"looked for {(work / 'nothere.toml').resolve()}" in r.stderr, r.stderr


# ------------------------------------------------------------------ the documentation site
@pytest.mark.integration
def test_the_documentation_builds_without_warnings(tmp_path):
    """``mkdocs build --strict``: every page, link and anchor, the API reference from the
    docstrings, the command reference from click, and the tutorial executed (it solves a
    300 m sector with lap_ipopt)."""
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("mkdocs is not installed: pip install -e '.[docs]' (scripts/bootstrap.sh does)")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                        str(ROOT / "mkdocs.yml"), "-d", str(site)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900,
                       env={**os.environ, "MPLBACKEND": "Agg", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    cli_html = (site / "reference" / "cli" / "index.html").read_text()
    for name in main.commands:
        assert f'id="pyomo-lap-{name}"' in cli_html, name
    api_html = (site / "reference" / "api" / "index.html").read_text()
    import pyomo_lap
    missing = [n for n in pyomo_lap.__all__ if n != "__version__" and f'.{n}"' not in api_html]
    assert not missing, f"not in the API reference: {missing}"
    tutorial = (site / "tutorials" / "first_sector" / "index.html").read_text()
    m = re.search(r"sector time (\d+\.\d+) s \(the quasi-steady estimate: (\d+\.\d+) s\)", tutorial)
    assert m, "the tutorial was not executed"
    # 300 m between 120 and 150 km/h (the sector's speeds): 7.2 to 9.0 s
    assert 300 / (150 / 3.6) < float(m.group(1)) < 300 / (120 / 3.6)
    assert tutorial.count("data:image/png") >= 2          # its figures
    for page in ("options", "failures", "architecture", "vehicles", "tracks"):
        assert (site / page / "index.html").exists(), page


@pytest.mark.unit
def test_the_modules_page_names_every_module():
    text = (ROOT / "docs" / "reference" / "modules.md").read_text()
    named = set(re.findall(r"^::: (pyomo_lap\.[\w.]+)$", text, flags=re.M))
    modules = {"pyomo_lap." + ".".join(p.relative_to(ROOT / "pyomo_lap").with_suffix("").parts)
               for p in (ROOT / "pyomo_lap").rglob("*.py") if p.name != "__init__.py"}
    assert modules - named == set(), ("add to docs/reference/modules.md, in its layer: " + "; ".join(
        f"'::: {m}' with 'options: heading_level: 3, members: false'" for m in sorted(modules - named)))
    assert named - modules == set()


@pytest.mark.unit
def test_the_readme_is_short_and_its_commands_come_first():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    first_code = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert [ln.split("#")[0].split()[:2] for ln in first_code.splitlines()[:2]] == [
        ["bash", "scripts/solve.sh"], ["bash", "scripts/test.sh"]]
    for link in re.findall(r"\]\((docs/[^)#]+)", text):          # every page it points to
        assert (ROOT / link).exists(), link


# ------------------------------------------------------------------ the command line's words
def _params(*args):
    cmd = main.commands["solve"]
    return cmd.make_context("solve", list(args)).params


@pytest.mark.unit
def test_none_is_spelled_none_all_or_auto_on_the_command_line():
    assert _params("--length", "all")["length"] is None
    assert _params("--length", "None")["length"] is None          # as the help's "None"
    assert _params("--length", "350")["length"] == 350.0
    assert _params("--nfe", "auto")["nfe"] is None
    assert _params("--nfe", "40")["nfe"] == 40
    assert _params("--out", "none")["out_dir"] is None
    assert str(_params("--out", "nonesuch")["out_dir"]) == "nonesuch"
    r = CliRunner().invoke(main, ["solve", "--length", "everything"])
    assert r.exit_code == 2 and "--length" in r.output and "everything" in r.output
    r = CliRunner().invoke(main, ["solve", "--nfe", "all"])       # not a word of --nfe
    assert r.exit_code == 2 and "--nfe" in r.output


@pytest.mark.unit
def test_every_command_takes_quiet_and_verbose_and_not_both():
    for name, cmd in main.commands.items():
        flags = {opt for p in cmd.params for opt in getattr(p, "opts", [])}
        assert {"-q", "--quiet", "-v", "--verbose"} <= flags, name
        r = CliRunner().invoke(main, [name, "-q", "-v"] + (["x"] if name in ("plot",) else [])
                               + (["x", "y"] if name == "compare" else []))
        assert r.exit_code == 2, (name, r.output)


@pytest.mark.unit
def test_the_help_of_max_iter_names_the_limits_of_both_solver_paths():
    from pyomo_lap.solvers.lap.solver import LAP_IPOPT_OPTIONS
    from pyomo_lap.solvers.solve import DEFAULT_IPOPT_OPTIONS
    opt = next(p for p in main.commands["solve"].params if p.name == "max_iter")
    text = " ".join(opt.help.split())
    assert "LAP_IPOPT_OPTIONS" in text and "DEFAULT_IPOPT_OPTIONS" in text
    assert LAP_IPOPT_OPTIONS["max_iter"] == DEFAULT_IPOPT_OPTIONS["max_iter"]
    assert str(LAP_IPOPT_OPTIONS["max_iter"]) in text
    validate = CliRunner().invoke(main, ["validate", "--help"]).output
    assert "[RESULTS_DIR]" in validate.splitlines()[0]


@pytest.mark.unit
def test_what_was_done_to_the_track_data_in_one_line():
    from pyomo_lap import load_track
    from pyomo_lap.api import track_data_lines
    tr = load_track("nordschleife")
    steps, assumed = tr.processing_steps, tr.assumptions
    assert steps and assumed                     # the bundled file has both
    brief = track_data_lines(tr, brief=True)
    assert len(brief) == 1 and len(brief[0]) <= 120, brief
    assert f"{len(steps)} processing steps" in brief[0]
    for a in assumed:
        assert a["quantity"] in brief[0]
    assert "-v" in brief[0] and "pyomo-lap check" in brief[0]
    # the details are still one line each (for -v, check, the API's echo)
    assert len(track_data_lines(tr)) == len(steps) + len(assumed)


@pytest.mark.integration
def test_the_readme_python_quick_start_runs_as_typed(tmp_path):
    """The README's Python lines, unchanged, in a child process outside the repository."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start: Python\n\n```python\n(.*?)```", text, flags=re.S).group(1)
    (tmp_path / "quick.py").write_text(block)
    r = _run([sys.executable, "quick.py"], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    first, second = r.stdout.strip().splitlines()[-2:]
    status, t, v_max = first.split()
    assert status == "optimal"
    # a lower bound that needs no solver: 50 m at 25 m/s at most, 250 m at the top speed
    assert float(t) >= 250.0 / float(v_max) + 50.0 / 25.0
    assert float(v_max) > 25.0 + 5.0                       # faster outside the zone
    status2, t2 = second.split()                          # the same model, another front wing
    assert status2 == "optimal" and float(t2) != float(t)
    assert float(t2) >= 250.0 / float(v_max) * 0.95 + 50.0 / 25.0
