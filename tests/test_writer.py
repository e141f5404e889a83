"""The writer of every folder pyomo_lap writes (:class:`pyomo_lap.folders.writer.ResultsWriter`,
issue 45 item 2) on its own, without a command: temporary names taken by links are passed by,
a full disk at the manifest renames nothing, a signal during a commit waits for its end,
folders with a manifest of their own inside another are checked against it, the kinds of
folders are not mixed, and what a killed run left inside a folder is cleaned up.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import tempfile
from pathlib import Path

import pytest

from pyomo_lap.folders import writer as writer_mod
from pyomo_lap.folders.links import FolderNotReplaceableError
from pyomo_lap.folders.manifest import MANIFEST
from pyomo_lap.folders.results_folder import check_output_dir, remove_dead_temporaries
from pyomo_lap.folders.writer import FolderWriteError, ResultsWriter

VICTIM = b"the user's file\n"


def _listing(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (os.readlink(p) if p.is_symlink() else
                                               None if p.is_dir() else p.read_bytes())
            for p in sorted(folder.rglob("*"))}


def _first_name_planted(monkeypatch):
    """Every temporary name of :mod:`tempfile` first tries ``planted``."""
    real = tempfile._get_candidate_names

    def names():
        rest = real()
        yield "planted"
        while True:
            yield next(rest)
    monkeypatch.setattr(tempfile, "_get_candidate_names", names)


@pytest.mark.unit
def test_temporary_names_taken_by_links_are_passed_by(tmp_path, monkeypatch):
    """Links at the first temporary names the writer draws (the folder written aside, a file
    added, the manifest): other names are taken, the links neither written through nor
    removed, and the files are where they belong."""
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    pid = os.getpid()
    planted = [tmp_path / f".out.tmp-{pid}-planted",
               tmp_path / "add" / f".a.txt.tmp-{pid}-planted.txt",
               tmp_path / "add" / f"{MANIFEST}.tmp-{pid}-planted"]
    (tmp_path / "add").mkdir()
    for p in planted:
        p.symlink_to(victim)
    _first_name_planted(monkeypatch)
    with ResultsWriter.replacing(tmp_path / "out", "compare", kind="compare") as w:
        w.write_text("x.csv", "1\n")
    with ResultsWriter.adding(tmp_path / "add", "report", names=["a.txt"]) as w:
        w.write_text("a.txt", "2\n")
    assert victim.read_bytes() == VICTIM
    assert all(p.is_symlink() and os.readlink(p) == str(victim) for p in planted)
    assert (tmp_path / "out" / "x.csv").read_text() == "1\n"
    assert (tmp_path / "add" / "a.txt").read_text() == "2\n"
    assert json.loads((tmp_path / "add" / MANIFEST).read_text())["kind"] == "files"


@pytest.mark.unit
def test_a_full_disk_at_the_manifest_puts_no_file_in_place(tmp_path, monkeypatch):
    """Add mode: the files are written to temporary names, the manifest next; when the
    manifest cannot be written (ENOSPC) nothing is renamed: the earlier file and manifest are
    byte-identical and no temporary file is left."""
    folder = tmp_path / "figs"
    with ResultsWriter.adding(folder, "plot", names=["a.png", "b.png"]) as w:
        w.write_bytes("a.png", b"first a")
        w.write_bytes("b.png", b"first b")
    before = _listing(folder)
    real = writer_mod._manifest_file

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(writer_mod, "_manifest_file", full)
    with pytest.raises(FolderWriteError, match="No space left on device") as exc:
        with ResultsWriter.adding(folder, "plot", names=["a.png", "b.png"]) as w:
            w.write_bytes("a.png", b"second a")
            w.write_bytes("b.png", b"second b")
    assert exc.value.errno == errno.ENOSPC and "\n" not in str(exc.value)
    assert _listing(folder) == before
    monkeypatch.setattr(writer_mod, "_manifest_file", real)


@pytest.mark.unit
@pytest.mark.skipif(os.name != "posix", reason="signals of POSIX")
def test_a_signal_during_the_renames_of_a_commit_waits_for_their_end(tmp_path, monkeypatch):
    """SIGTERM sent while the staged files are renamed (between two renames): the commit
    ends, its manifest listing every file with its SHA-256, and only then the signal's
    handler runs (here: KeyboardInterrupt, as the command line's)."""
    import hashlib
    folder = tmp_path / "figs"
    real = os.replace
    sent = []

    def replace(src, dst):
        if not sent:
            sent.append(dst)
            os.kill(os.getpid(), signal.SIGTERM)
        return real(src, dst)

    def interrupt(*_a):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        w = ResultsWriter.adding(folder, "plot", names=["a.png", "b.png"]).claim()
        w.write_bytes("a.png", b"a")
        w.write_bytes("b.png", b"b")
        monkeypatch.setattr(writer_mod.os, "replace", replace)
        with pytest.raises(KeyboardInterrupt):
            w.commit()
            w.release()
        w.release()
    finally:
        signal.signal(signal.SIGTERM, previous)
        monkeypatch.undo()
    listed = json.loads((folder / MANIFEST).read_text())["files"]
    for name, data in (("a.png", b"a"), ("b.png", b"b")):
        assert (folder / name).read_bytes() == data
        assert listed[name]["sha256"] == hashlib.sha256(data).hexdigest()
    assert not [p for p in folder.iterdir() if ".tmp-" in p.name]


@pytest.mark.unit
def test_a_folder_inside_with_its_own_manifest_is_checked_against_it(tmp_path):
    """A stint's lap_01 (a folder of its own, listed in the stint's manifest under
    ``folders``): figures added to it later are in its own manifest, so the next stint
    replaces the whole; a file in it edited since is refused, named."""
    out = tmp_path / "st"
    with ResultsWriter.replacing(out, "stint", kind="stint") as w:
        w.write_text("stint.csv", "lap\n1\n")
        with w.nested("lap_01") as lap:
            lap.write_text("summary.json", "{}")
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["folders"] == {"lap_01": {"kind": "results", "by": "stint"}}
    assert set(json.loads((out / "lap_01" / MANIFEST).read_text())["files"]) == {"summary.json"}
    with ResultsWriter.adding(out / "lap_01" / "plots", "plot", names=["speed.png"]) as w:
        w.write_bytes("speed.png", b"png")
    assert "plots/speed.png" in json.loads((out / "lap_01" / MANIFEST).read_text())["files"]
    check_output_dir(out, kind="stint")                  # replaceable: all of it pyomo_lap's
    (out / "lap_01" / "summary.json").write_text('{"mine": 1}')
    with pytest.raises(FolderNotReplaceableError, match="lap_01/summary.json.*changed"):
        check_output_dir(out, kind="stint")


@pytest.mark.unit
def test_a_folder_of_another_kind_is_not_replaced(tmp_path):
    """A comparison never replaces a results folder, nor a solve a comparison; files added
    to a folder of pyomo_lap's of another kind than asked (a sweep's) are refused too."""
    with ResultsWriter.replacing(tmp_path / "res", "solve") as w:
        w.write_text("summary.json", "{}")
    with ResultsWriter.replacing(tmp_path / "cmp", "compare", kind="compare") as w:
        w.write_text("compare.csv", "s\n")
    before = _listing(tmp_path)
    with pytest.raises(FolderNotReplaceableError, match="is a results folder.*not a comparison"):
        ResultsWriter.replacing(tmp_path / "res", "compare", kind="compare").claim()
    with pytest.raises(FolderNotReplaceableError, match="is a comparison.*not a results folder"):
        ResultsWriter.replacing(tmp_path / "cmp", "solve").claim()
    with pytest.raises(FolderNotReplaceableError, match="not a sweep folder"):
        ResultsWriter.adding(tmp_path / "cmp", "sweep", kind="sweep").claim()
    assert _listing(tmp_path) == before


@pytest.mark.unit
def test_what_a_killed_run_left_inside_a_results_folder_is_removed(tmp_path):
    """A figure's temporary file and a lock file of a process that is not running, left in a
    results folder by a killed ``plot``: removed when the folder is next claimed, so the next
    solve into it is not refused; those of a running process are kept."""
    from _folders import dead_pid
    with ResultsWriter.replacing(tmp_path / "res", "solve") as w:
        w.write_text("summary.json", "{}")
    dead = dead_pid()
    (tmp_path / "res" / "plots").mkdir()
    left = tmp_path / "res" / "plots" / f".speed.png.tmp-{dead}-abcd.png"
    left.write_bytes(b"half a figure")
    mine = tmp_path / "res" / f".speed.png.tmp-{os.getpid()}-abcd.png"
    mine.write_bytes(b"being written")
    assert remove_dead_temporaries(tmp_path / "res") == [f"plots/.speed.png.tmp-{dead}-abcd.png"]
    assert not left.exists() and mine.exists()
    mine.unlink()
    (tmp_path / "res" / "plots").rmdir()
    check_output_dir(tmp_path / "res")


@pytest.mark.unit
def test_a_name_outside_the_folder_or_the_manifest_is_not_written(tmp_path):
    """The writer writes inside its folder only, never the manifest by name, and nothing
    before it is claimed."""
    w = ResultsWriter.adding(tmp_path / "f", "plot")
    with pytest.raises(RuntimeError, match="before it is claimed"):
        w.write_text("a.txt", "x")
    with w:
        for bad in ("../x.txt", MANIFEST, "sub/../../x.txt"):
            with pytest.raises(ValueError, match="not a file pyomo_lap writes"):
                w.write_text(bad, "x")
    assert not (tmp_path / "x.txt").exists()
