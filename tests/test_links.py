"""The rule for links in pyomo_lap's folders (issue 34, items 1, 2, 5, 11): never follow a
link out of a folder pyomo_lap owns; refuse it or report it, in one line.

* :func:`pyomo_lap.folders.links.is_link` / :func:`~pyomo_lap.folders.links.refuse_links`: the
  one test for links, used wherever a results folder is read, written, moved or deleted;
* a link named like the debris of a swap (``.NAME.old-PID``, ``.NAME.tmp-PID-*``) is left
  alone and said, never deleted through;
* an ``--out`` or ``--out.failed`` that is a link is refused before any work;
* a folder without its manifest is not replaced (only an empty one);
* a manifest that is not JSON, a linked lock file: one line naming them;
* the export is durable: every file and folder fsynced before the swap, the parent after.

Unit tests call :func:`pyomo_lap.results.table.write_results` on a small synthetic table;
the tester's reproductions that need a solve run ``pyomo-lap solve --length 300``.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyomo_lap.folders import results_folder as folders
from pyomo_lap.folders import links as link_rule


def _symlinks_work(tmp_path) -> bool:
    try:
        os.symlink(tmp_path, tmp_path / "probe")
    except (OSError, NotImplementedError):
        return False
    (tmp_path / "probe").unlink()
    return True


@pytest.fixture
def links(tmp_path):
    if not _symlinks_work(tmp_path):
        pytest.skip("symbolic links cannot be made here")
    return tmp_path


@pytest.mark.unit
def test_is_link_and_refuse_links_never_follow_a_link(links):
    tmp = links
    (tmp / "a" / "b").mkdir(parents=True)
    (tmp / "a" / "b" / "f.txt").write_text("x")
    (tmp / "outside").mkdir()
    os.symlink(tmp / "outside", tmp / "a" / "b" / "zz")
    os.symlink(tmp / "a", tmp / "la")
    assert link_rule.is_link(tmp / "la") and not link_rule.is_link(tmp / "a")
    assert not link_rule.is_link(tmp / "missing")
    assert link_rule.is_real_dir(tmp / "a") and not link_rule.is_real_dir(tmp / "la")
    with pytest.raises(link_rule.FolderNotReplaceableError) as err:
        link_rule.refuse_links(tmp / "a", "output folder 'a'")
    msg = str(err.value)
    assert "'b/zz'" in msg and "symbolic link" in msg and "\n" not in msg
    assert msg.endswith("(nothing was touched)")
    with pytest.raises(link_rule.FolderNotReplaceableError, match="'la' is a symbolic link"):
        link_rule.refuse_links(tmp / "la", "'la'")
    (tmp / "a" / "b" / "zz").unlink()
    link_rule.refuse_links(tmp / "a", "'a'")            # no link: passes
    link_rule.refuse_links(tmp / "missing", "'missing'")


# ---- helpers (a results folder without a solve, as tests/test_results_folders.py) --------------

import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from click.testing import CliRunner  # noqa: E402

from pyomo_lap.cli import main  # noqa: E402
from pyomo_lap.results import table as res_mod  # noqa: E402
from pyomo_lap.results.table import write_results  # noqa: E402

MANIFEST = ".pyomo_lap_manifest.json"

from _folders import dead_pid, frame  # noqa: E402


def _frame():
    """The channels these tests need of the folder tests' table."""
    return frame()[["s", "s_sector", "t", "speed"]]


def _results(folder: Path, lap: float = 15.0, **kw) -> Path:
    return write_results(folder, _frame(), {"lap_time_s": lap, "track": "nordschleife"}, **kw)


def _tree(folder: Path) -> dict:
    """Relative path -> bytes of every file under ``folder`` (links: their target's name)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out[rel] = ("link", os.readlink(p)) if p.is_symlink() else (
            p.read_bytes() if p.is_file() else None)
    return out


def _lap(folder: Path) -> float:
    return json.loads((folder / "summary.json").read_text())["lap_time_s"]


# ---- item 1: a link named like the debris of a swap ---------------------------------------------

@pytest.mark.unit
def test_a_link_named_like_swap_debris_is_left_alone_and_said(links):
    """.so1.old-DEAD and .so1.tmp-DEAD-x links to folders of the user's (results copied with
    cp -a, so they look like pyomo_lap's): the next exports into so1 leave the links and
    their folders alone, say so in one line, and write their results."""
    tmp = links
    keep = _results(tmp / "keep", lap=11.0)
    keep2 = _results(tmp / "keep2", lap=12.0)
    before = {p: _tree(p) for p in (keep, keep2)}
    so1 = _results(tmp / "so1", lap=15.0)
    dead = dead_pid()
    os.symlink(keep, tmp / f".so1.old-{dead}")
    os.symlink(keep2, tmp / f".so1.tmp-{dead}-abc")
    for lap in (14.0, 13.0):                  # every later solve too
        said = []
        _results(so1, lap=lap, echo=said.append)
        assert _lap(so1) == lap
        assert {p: _tree(p) for p in (keep, keep2)} == before
        line = [s for s in said if "alone" in s]
        assert len(line) == 1 and f".so1.old-{dead}" in line[0] and "symbolic link" in line[0], said
        assert f".so1.tmp-{dead}-abc" in line[0]
    assert (tmp / f".so1.old-{dead}").is_symlink() and (tmp / f".so1.tmp-{dead}-abc").is_symlink()
    # with so1 missing, a linked .so1.old-DEAD is not moved into its place either
    shutil.rmtree(so1)
    _results(so1, lap=12.5)
    assert _lap(so1) == 12.5 and not so1.is_symlink()
    assert {p: _tree(p) for p in (keep, keep2)} == before


@pytest.mark.unit
def test_removing_a_results_folder_never_deletes_through_a_link(links):
    tmp = links
    keep = _results(tmp / "keep")
    before = _tree(keep)
    os.symlink(keep, tmp / "link")
    assert folders._remove_results_folder(tmp / "link") is False
    assert folders._entries(tmp / "link") == []
    assert _tree(keep) == before and (tmp / "link").is_symlink()


# ---- item 2: a linked OUT.failed, a linked --out ------------------------------------------------

@pytest.mark.unit
def test_a_linked_failed_folder_or_out_is_refused_before_any_work(links):
    tmp = links
    t2 = _results(tmp / "t2", lap=11.0)
    before = _tree(t2)
    os.symlink(t2, tmp / "f2.failed")
    with pytest.raises(link_rule.FolderNotReplaceableError) as err:
        res_mod.check_output_dir(tmp / "f2")
    msg = str(err.value)
    assert "f2.failed" in msg and "symbolic link" in msg and "\n" not in msg
    assert msg.endswith("(nothing was touched)")
    with pytest.raises(link_rule.FolderNotReplaceableError, match="f2.failed"):
        _results(tmp / "f2", partial=True)         # the export of a failed solve
    assert _tree(t2) == before
    # --out itself a link to a results folder: refused (give the real path), nothing touched
    os.symlink(t2, tmp / "out")
    for call in (lambda: res_mod.check_output_dir(tmp / "out"), lambda: _results(tmp / "out")):
        with pytest.raises(link_rule.FolderNotReplaceableError, match="'.*out' is a symbolic link"):
            call()
    assert _tree(t2) == before and (tmp / "out").is_symlink()
    assert sorted(p.name for p in tmp.iterdir()) == ["f2.failed", "out", "t2"]


@pytest.mark.unit
def test_cli_solve_with_a_linked_failed_folder_is_refused_in_one_line(links, monkeypatch):
    """The tester's item 2: `solve --out f2 --solver-option max_iter=2` with f2.failed a link
    to a copy of results: refused before the build (exit 2, one line), the copy intact."""
    tmp = links
    t2 = _results(tmp / "t2", lap=11.0)
    before = _tree(t2)
    os.symlink(t2, tmp / "f2.failed")
    monkeypatch.chdir(tmp)
    r = CliRunner().invoke(main, ["solve", "--length", "300", "--out", "f2", "--quiet",
                                  "--solver-option", "max_iter=2"])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "f2.failed" in lines[0] and "symbolic link" in lines[0], r.stderr
    assert "building" not in r.output
    assert _tree(t2) == before


# ---- item 5: a folder without its manifest ------------------------------------------------------

@pytest.mark.unit
def test_a_folder_copied_without_its_manifest_is_not_replaced(tmp_path):
    """`mkdir c; cp base/* c/` (a plain cp skips the hidden manifest), trajectory.csv edited,
    validation.json added: an export into c is refused (one line: no manifest, use cp -a),
    every file kept; an empty folder is replaced."""
    base = _results(tmp_path / "base")
    c = tmp_path / "c"
    c.mkdir()
    for f in base.iterdir():
        if not f.name.startswith("."):
            shutil.copy(f, c / f.name)
    with open(c / "trajectory.csv", "a") as fh:
        fh.write("# my edit\n")
    (c / "validation.json").write_text('{"mine": 1}')
    before = _tree(c)
    with pytest.raises(link_rule.FolderNotReplaceableError) as err:
        _results(c, lap=14.0)
    msg = str(err.value)
    assert str(c) in msg and f"has no {MANIFEST}" in msg and "cp -a" in msg and "\n" not in msg
    assert msg.endswith("(nothing was touched)")
    assert _tree(c) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _lap(_results(empty, lap=13.0)) == 13.0


# ---- item 11: a manifest that is not JSON, a linked lock file, durable exports ------------------

@pytest.mark.unit
def test_a_manifest_that_is_not_json_is_said_so(tmp_path):
    out = _results(tmp_path / "res")
    (out / MANIFEST).write_text("{not json")
    before = _tree(out)
    with pytest.raises(link_rule.FolderNotReplaceableError) as err:
        _results(out, lap=14.0)
    msg = str(err.value)
    assert f"its {MANIFEST} is not valid JSON (line 1 col 2)" in msg and str(out) in msg
    assert "\n" not in msg and _tree(out) == before
    assert folders.read_manifest(out) is None
    with pytest.raises(folders.ManifestError, match=r"is not valid JSON \(line 1 col 2\)"):
        folders.read_manifest(out, strict=True)
    assert folders.read_manifest(tmp_path, strict=True) is None          # none: not an error


@pytest.mark.unit
def test_a_linked_lock_file_is_refused_and_not_followed(links):
    tmp = links
    out = _results(tmp / "res", lap=15.0)
    victim = tmp / "victim.txt"
    victim.write_text("precious")
    for target in (victim, tmp / ".res.lock"):          # a file of the user's; a loop
        os.symlink(target, tmp / ".res.lock")
        with pytest.raises(link_rule.FolderNotReplaceableError) as err:
            _results(out, lap=14.0)
        msg = str(err.value)
        assert ".res.lock" in msg and "symbolic link" in msg and "\n" not in msg, msg
        assert "Errno" not in msg and msg.endswith("(nothing was touched)")
        assert victim.read_text() == "precious" and _lap(out) == 15.0
        (tmp / ".res.lock").unlink()
    assert _lap(_results(out, lap=13.0)) == 13.0


@pytest.mark.unit
@pytest.mark.skipif(os.name != "posix", reason="folders are flushed on POSIX only")
def test_every_file_and_folder_is_flushed_before_the_swap_and_the_parent_after(tmp_path,
                                                                               monkeypatch):
    """os.fsync and os.replace recorded (by inode): every file of the new folder and the
    folder itself are flushed before the rename that makes them the results, the parent
    folder after it."""
    _results(tmp_path / "res", lap=15.0)
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        st = os.fstat(fd)
        events.append(("fsync", (st.st_dev, st.st_ino)))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", Path(src).name, Path(dst).name))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    out = _results(tmp_path / "res", lap=14.0)
    monkeypatch.undo()
    ino = lambda p: (os.stat(p).st_dev, os.stat(p).st_ino)    # noqa: E731
    swap = next(i for i, e in enumerate(events) if e[0] == "replace" and e[2] == "res")
    flushed_before = {e[1] for e in events[:swap] if e[0] == "fsync"}
    wanted = {ino(p) for p in out.rglob("*")} | {ino(out)}
    assert wanted <= flushed_before, (len(wanted - flushed_before), events)
    assert ("fsync", ino(tmp_path)) in events[swap + 1:], events


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pyomo_lap.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_tester_item_1_a_linked_debris_name_breaks_no_solve(links):
    """The tester's item 1 (the earlier results made without a solve): keep/ a copy of
    results, .so1.old-99999 a link to it; `solve --out so1` writes its results (exit 0),
    says it left the link alone, and keep/ is intact."""
    tmp = links
    keep = _results(tmp / "keep", lap=11.0)
    before = _tree(keep)
    _results(tmp / "so1", lap=99.0)
    dead = dead_pid()
    os.symlink(keep, tmp / f".so1.old-{dead}")
    r = _cli("solve", "--length", "300", "--out", "so1", cwd=tmp)
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stdout.splitlines() if f".so1.old-{dead}" in ln]
    assert len(said) == 1 and "alone" in said[0] and "symbolic link" in said[0], r.stdout
    assert _tree(keep) == before and _lap(tmp / "so1") < 99.0


@pytest.mark.unit
def test_plot_and_validate_name_a_manifest_that_is_not_json(tmp_path):
    """Issue 34, item 11: a results folder whose manifest is not JSON is named as such by the
    commands that read it, not as "has no manifest"."""
    from pyomo_lap.folders.results_folder import MANIFEST, check_results_folder
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / MANIFEST).write_text("{not json")
    with pytest.raises(ValueError) as err:
        check_results_folder(folder)
    msg = str(err.value)
    assert "not valid JSON (line 1 col 2)" in msg and "\n" not in msg
    assert "has no" not in msg
