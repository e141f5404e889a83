"""One writer for every results folder (issue 45, item 2): every command of ``pyomo-lap`` is
classified as writing or not (its ``writes`` attribute, ``pyomo_lap.cli.base.writes``), and
every writing one is attacked with the same cases (its recipe: tests/_writer_attacks.py), so
that a command added later cannot skip them:

``linked_file``
    a file of a name it writes is a symbolic link to a file outside: refused (exit 2, one
    line), the file outside byte-identical, the link left as it was;
``linked_out``
    the folder it writes (``--out``, or the results folder given) is a link to a folder
    outside: refused, that folder untouched;
``linked_tmp``
    links planted at the temporary names it could use (the fixed names of the code before
    issue 45, and the first name the writer draws, forced by a patched name generator): never
    written through, never removed;
``user_file``
    a file of the user's of a name it writes, in a folder whose manifest does not list it (or
    that has none): refused, nothing touched;
``edited``
    a file it wrote earlier, edited since (its SHA-256 no longer the manifest's): refused,
    the edit kept;
``full_disk``
    the disk holding the folder is full after the first file (``os.fsync`` of a file there
    raises ENOSPC): one line, exit code 1, the earlier files byte-identical, nothing left;
``sigterm``
    a child process sent SIGTERM while it writes: exit code 143, one line, the earlier files
    byte-identical, nothing left (no ``.NAME.lock``, no ``.NAME.tmp-*``).

The results folders attacked are made without a solve where the command allows it (a
synthetic lap), else from ONE small solve shared by the module (200 m, 20 elements); a stint
is one lap of dymos's oval on 30 elements; a sweep's cases are rows made up without a solve.
Each command's earlier output is made once and copied per case.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _writer_attacks import (MANIFEST, RECIPES, USER_BYTES, VICTIM_BYTES, copy,  # noqa: E402
                             disk_full_after, patches, synthetic_runs, tree)

from pyomo_lap.cli import main  # noqa: E402

CASES = ("linked_file", "linked_out", "linked_tmp", "user_file", "edited", "full_disk",
         "sigterm")

pytestmark = pytest.mark.skipif(os.name != "posix" or not Path("/proc/self/fd").is_dir(),
                                reason="symbolic links, signals and /proc of POSIX (Linux)")


def _kind(recipe, case: str) -> str:
    if case == "sigterm":
        return recipe.sigterm_kind
    return recipe.run_kind if case in ("linked_tmp", "full_disk") else recipe.refusal_kind


def _cases():
    for name, recipe in RECIPES.items():
        for case in CASES:
            yield pytest.param(name, case, id=f"{name}-{case}",
                               marks=getattr(pytest.mark, _kind(recipe, case)))


# ---- the classification -------------------------------------------------------------------

@pytest.mark.unit
def test_every_command_is_classified_and_every_writing_one_has_its_attacks():
    """Each command says whether it writes (``writes``); each writing one has a recipe here,
    so every case below runs on it; a recipe of a command that does not write is stale."""
    unclassified = sorted(n for n, c in main.commands.items() if not hasattr(c, "writes"))
    assert not unclassified, (f"commands without a `writes` classification "
                              f"(pyomo_lap.cli.base.writes): {unclassified}")
    writing = {n for n, c in main.commands.items() if c.writes is not None}
    assert writing - set(RECIPES) == set(), ("writing commands without a recipe in "
                                             f"tests/_writer_attacks.py: {writing - set(RECIPES)}")
    stale = set(RECIPES) - writing
    assert stale == set(), f"recipes of commands that do not write: {stale}"
    assert {"solve", "compare", "stint", "sweep", "report", "export", "plot",
            "validate"} <= writing


# ---- the workspaces -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def solved_base(tmp_path_factory):
    """The module's one solve: 200 m of the default track on 20 elements."""
    from pyomo_lap.api import solve_sector
    out = tmp_path_factory.mktemp("solved") / "a"
    solve_sector(length=200.0, nfe=20, out_dir=out, echo=lambda *_: None,
                 progress=lambda *_a, **_k: None)
    return out


@pytest.fixture(scope="module")
def prototypes(tmp_path_factory, request):
    """``make(recipe, earlier)``: a workspace with the runs the command reads and (``earlier``)
    its output of an earlier run, made once and copied by each case."""
    made = {}

    def make(recipe, earlier: bool) -> Path:
        key = (recipe.name, earlier)
        if key not in made:
            ws = tmp_path_factory.mktemp(f"{recipe.name}_{int(earlier)}")
            if recipe.data == "synthetic":
                synthetic_runs(ws)
            elif recipe.data == "solved":
                copy(request.getfixturevalue("solved_base"), ws / "a")
            if earlier:
                _earlier_output(recipe, ws)
            made[key] = ws
        return made[key]
    return make


def _earlier_output(recipe, ws: Path) -> None:
    """What the command wrote in an earlier run (a solve's: a results folder without a solve)."""
    if recipe.name == "solve":
        from test_plots import VEHICLE, _run

        from pyomo_lap.results.table import write_results
        df, summary = _run(n=81)
        write_results(ws / "out", df, summary, vehicle_params=VEHICLE)
        return
    if recipe.name == "diagnose":
        recipe.target(ws).mkdir()                # diagnose's --report names a file
    r = _invoke(recipe, recipe.args(ws))
    assert r.exit_code == recipe.done, f"the earlier {recipe.name}: {r.output}"
    for name in recipe.names:
        assert (recipe.target(ws) / name).is_file(), (recipe.name, name)


def _invoke(recipe, args, more=()):
    """The command in this process, with its recipe's patches and ``more``."""
    with pytest.MonkeyPatch.context() as mp:
        for obj, attr, value in [*patches(recipe.name), *more]:
            mp.setattr(obj, attr, value)
        return CliRunner().invoke(main, args)


def _error_line(r) -> str:
    """The one ``error:`` line of a run (and no click "Aborted!")."""
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, (f"exit {r.exit_code}, expected one error line:\n{r.output}\n"
                             f"{r.exception!r}")
    assert "Aborted!" not in r.output, r.output
    return lines[0]


def _no_debris(ws: Path, allowed=()) -> None:
    """No lock file and no temporary name of a writer anywhere under ``ws`` (but ``allowed``)."""
    left = [rel for rel in tree(ws) if rel not in allowed
            and (Path(rel).name.endswith(".lock") or ".tmp-" in Path(rel).name
                 or Path(rel).name.endswith(".tmp") or ".old-" in Path(rel).name)]
    assert not left, f"left behind: {left}"


# ---- the cases ----------------------------------------------------------------------------

@pytest.mark.parametrize("command, case", list(_cases()))
def test_every_writing_command_holds_every_attack(command, case, prototypes, tmp_path):
    recipe = RECIPES[command]
    earlier = case != "user_file" or command == "sweep"
    ws = copy(prototypes(recipe, earlier), tmp_path / "ws")
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM_BYTES)
    victim_dir = tmp_path / "victim_dir"
    if recipe.out_is_run:                        # validate: the folder it writes is the run
        copy(ws / "a", victim_dir)               # a results folder of the user's elsewhere
    else:
        victim_dir.mkdir()
        (victim_dir / "keep.txt").write_bytes(VICTIM_BYTES)
    ATTACKS[case](recipe, ws, victim, victim_dir)


def _linked_file(recipe, ws, victim, victim_dir):
    name = recipe.target(ws) / recipe.names[0]
    name.unlink()
    os.symlink(victim, name)
    before = tree(ws)
    r = _invoke(recipe, recipe.args(ws))
    line = _error_line(r)
    assert r.exit_code == 2 and "symbolic link" in line, line
    assert victim.read_bytes() == VICTIM_BYTES
    assert tree(ws) == before


def _linked_out(recipe, ws, victim, victim_dir):
    link = ws.parent / "elsewhere"
    os.symlink(victim_dir, link)
    before, outside = tree(ws), tree(victim_dir)
    r = _invoke(recipe, recipe.args(ws, out=link))
    line = _error_line(r)
    assert r.exit_code == 2 and "symbolic link" in line, line
    assert tree(victim_dir) == outside and tree(ws) == before
    assert os.readlink(link) == str(victim_dir)


def _linked_tmp(recipe, ws, victim, victim_dir):
    planted = _plant(recipe, ws, victim)
    real = tempfile._get_candidate_names

    def names():                       # every temporary name first tries "planted"
        rest = real()
        yield "planted"
        while True:
            yield next(rest)
    r = _invoke(recipe, recipe.args(ws), more=[(tempfile, "_get_candidate_names", names)])
    if r.exit_code != recipe.done:     # refused (a link in a folder of pyomo_lap's): fine
        line = _error_line(r)
        assert r.exit_code == 2 and "symbolic link" in line, line
    assert victim.read_bytes() == VICTIM_BYTES
    for p in planted:
        assert p.is_symlink() and os.readlink(p) == str(victim), p
    _no_debris(ws, allowed={p.relative_to(ws).as_posix() for p in planted})


def _plant(recipe, ws, victim) -> list:
    """Links to ``victim`` at every temporary name the command's writing could try: the fixed
    names of the code before issue 45 and the names the writer draws first ("planted")."""
    pid, target, home = os.getpid(), recipe.target(ws), recipe.home(ws)
    target.mkdir(parents=True, exist_ok=True)
    where = [target.parent / f".{target.name}.tmp-{pid}-planted",
             home / f"{MANIFEST}.tmp-{pid}", home / f"{MANIFEST}.tmp-{pid}-planted",
             *(target / n for n in recipe.fixed_tmp)]
    for n in recipe.names:
        suffix = Path(n).suffix
        where += [target / f".{n}.tmp-{pid}-planted{suffix}", target / f".{n}.tmp-{pid}-planted"]
    for p in where:
        if not os.path.lexists(p):
            os.symlink(victim, p)
    return where


def _user_file(recipe, ws, victim, victim_dir):
    target = recipe.target(ws)
    if recipe.name == "sweep":                   # an earlier sweep copied without its manifest
        (target / MANIFEST).unlink(missing_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    (target / recipe.names[1 if recipe.name == "sweep" else 0]).write_bytes(USER_BYTES)
    before = tree(ws)
    r = _invoke(recipe, recipe.args(ws))
    _error_line(r)
    assert r.exit_code == 2, r.output
    assert tree(ws) == before


def _edited(recipe, ws, victim, victim_dir):
    name = recipe.target(ws) / recipe.names[0]
    name.write_bytes(name.read_bytes() + b"\nedited by the user\n")
    before = tree(ws)
    r = _invoke(recipe, recipe.args(ws))
    line = _error_line(r)
    assert r.exit_code == 2 and recipe.names[0] in line, line
    assert tree(ws) == before


def _full_disk(recipe, ws, victim, victim_dir):
    before = tree(ws)
    r = _invoke(recipe, recipe.args(ws), more=[(os, "fsync", disk_full_after(ws))])
    line = _error_line(r)
    assert r.exit_code == 1 and "No space left on device" in line, line
    assert tree(ws) == before
    saved = line.partition("they were saved to ")[2].partition("/ instead")[0]
    if saved:                                    # solve: the results kept elsewhere, named
        import shutil
        assert Path(saved, "summary.json").is_file(), line
        shutil.rmtree(Path(saved).parent, ignore_errors=True)


def _sigterm(recipe, ws, victim, victim_dir):
    before = tree(ws)
    helper = Path(__file__).resolve().parent / "_writer_attacks.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(helper), str(ws), recipe.name,
                             *recipe.args(ws)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=ws)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr] + [lines.put(None)],
                     daemon=True).start()
    said = []
    try:
        while True:
            ln = lines.get(timeout=600)
            if ln is None:
                pytest.fail(f"{recipe.name} ended (exit {proc.wait()}) before writing any file "
                            f"under the workspace:\n{''.join(said)}")
            if ln.strip() == "WRITING":
                break
            said.append(ln)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    rest = []
    while True:
        ln = lines.get(timeout=60)
        if ln is None:
            break
        rest.append(ln)
    errors = [ln for ln in said + rest if ln.startswith("error:")]
    assert code == 143, f"exit {code}:\n{''.join(said + rest)}"
    assert len(errors) == 1 and "SIGTERM" in errors[0], "".join(said + rest)
    assert "Aborted!" not in "".join(rest)
    assert tree(ws) == before


ATTACKS = {"linked_file": _linked_file, "linked_out": _linked_out, "linked_tmp": _linked_tmp,
           "user_file": _user_file, "edited": _edited, "full_disk": _full_disk,
           "sigterm": _sigterm}
assert set(ATTACKS) == set(CASES)


# ---- the other cases ------------------------------------------------------------------

@pytest.mark.integration
def test_a_one_lap_stint_into_an_earlier_longer_stints_folder_leaves_none_of_its_laps(tmp_path):
    """A 1-lap stint into the folder of an earlier 2-lap stint: the folder is the new stint
    whole (its table one row, lap_01 only): no lap_02 of the earlier one beside it."""
    from pyomo_lap.api.stint import solve_stint
    out = tmp_path / "st"
    solve_stint("dymos_oval", "fsae", 2, ocp_options={"nfe": 30}, out_dir=out,
                echo=lambda *_: None)
    assert (out / "lap_02" / "summary.json").is_file()
    r = _invoke(RECIPES["stint"], RECIPES["stint"].args(tmp_path))
    assert r.exit_code == RECIPES["stint"].done, r.output
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "lap_01", "stint.csv",
                                                      "stint.json", "stint.xlsx"]
    assert len((out / "stint.csv").read_text().splitlines()) == 2         # a header, one lap
    import json
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["kind"] == "stint" and set(manifest["folders"]) == {"lap_01"}
    from pyomo_lap.folders.results_folder import check_results_folder
    check_results_folder(out / "lap_01")                   # a results folder of its own
    _no_debris(tmp_path)


@pytest.mark.unit
def test_a_stints_folder_is_checked_before_its_first_lap(tmp_path, monkeypatch):
    """A folder holding a lap_02 of the user's (no manifest), or a stint's folder holding a
    lap_07 it does not list: refused before the model is built (it used to be refused only
    after two laps were solved), nothing touched."""
    import pyomo_lap.api.stint as stint

    def built(*_a, **_k):
        raise AssertionError("the model was built before the folder was checked")
    monkeypatch.setattr(stint, "_prepare", built)
    out = tmp_path / "st"
    (out / "lap_02").mkdir(parents=True)
    (out / "lap_02" / "notes.txt").write_bytes(USER_BYTES)
    before = tree(tmp_path)
    r = CliRunner().invoke(main, ["stint", "--laps", "5", "--out", str(out)])
    line = _error_line(r)
    assert r.exit_code == 2 and str(out) in line and "nothing was touched" in line, line
    assert tree(tmp_path) == before
    from pyomo_lap.folders.writer import ResultsWriter
    (out / "lap_02" / "notes.txt").unlink()
    (out / "lap_02").rmdir()
    with ResultsWriter.replacing(out, "stint", kind="stint") as w:   # a stint's folder
        w.write_text("stint.csv", "lap\n1\n")
    (out / "lap_07").mkdir()
    r = CliRunner().invoke(main, ["stint", "--laps", "5", "--out", str(out)])
    line = _error_line(r)
    assert r.exit_code == 2 and "lap_07" in line, line


@pytest.mark.unit
def test_report_out_into_another_results_folder_is_recorded_in_its_manifest(tmp_path):
    """``report A --out B/report_of_a.html``: listed in B's manifest (by report, its
    SHA-256), so the next solve into B replaces it with the rest; edited, it is refused."""
    import hashlib
    import json

    from test_plots import VEHICLE, _run

    from pyomo_lap.results.table import write_results
    synthetic_runs(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    r = CliRunner().invoke(main, ["report", str(a), "--out", str(b / "report_of_a.html")])
    assert r.exit_code == 0, r.output
    entry = json.loads((b / MANIFEST).read_text())["files"]["report_of_a.html"]
    assert entry["by"] == "report"
    assert entry["sha256"] == hashlib.sha256((b / "report_of_a.html").read_bytes()).hexdigest()
    assert not (a / "report.html").exists()
    df, summary = _run(n=81)
    write_results(b, df, summary, vehicle_params=VEHICLE)                # the next solve
    assert not (b / "report_of_a.html").exists()
    r = CliRunner().invoke(main, ["report", str(a), "--out", str(b / "report_of_a.html")])
    assert r.exit_code == 0, r.output
    (b / "report_of_a.html").write_text("my notes")
    r = CliRunner().invoke(main, ["report", str(a), "--out", str(b / "report_of_a.html")])
    assert r.exit_code == 2 and "report_of_a.html" in _error_line(r)
    assert (b / "report_of_a.html").read_text() == "my notes"


@pytest.mark.unit
@pytest.mark.parametrize("command", ["report", "export"])
def test_ctrl_c_in_report_and_export_exits_130_with_one_line(command, tmp_path, monkeypatch):
    """Ctrl-C while the work is done: exit code 130 and one line (click said "Aborted!" and
    exited 1), the folder as it was, no lock file or temporary folder left."""
    synthetic_runs(tmp_path)

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt
    if command == "report":
        monkeypatch.setattr("pyomo_lap.plots.report.report_html", interrupted)
        args = ["report", str(tmp_path / "a")]
    else:
        monkeypatch.setattr("pyomo_lap.results.fixed_step.folder_fixed_step", interrupted)
        args = ["export", str(tmp_path / "a"), "--every", "5"]
    before = tree(tmp_path)
    r = CliRunner().invoke(main, args)
    line = _error_line(r)
    assert r.exit_code == 130 and "interrupted by SIGINT" in line, r.output
    assert tree(tmp_path) == before
