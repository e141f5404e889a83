"""The rule for links in pyomo_lap's folders (issue 34, items 1, 2, 5, 11): never follow a
link out of a folder pyomo_lap owns; refuse it or report it, in one line.

* :func:`pyomo_lap.post.folders.is_link` / :func:`~pyomo_lap.post.folders.refuse_links`: the
  one test for links, used wherever a results folder is read, written, moved or deleted;
* a link named like the debris of a swap (``.NAME.old-PID``, ``.NAME.tmp-PID-*``) is left
  alone and said, never deleted through;
* an ``--out`` or ``--out.failed`` that is a link is refused before any work;
* a folder without its manifest is not replaced (only an empty one);
* a manifest that is not JSON, a linked lock file: one line naming them;
* the export is durable: every file and folder fsynced before the swap, the parent after.

Unit tests call :func:`pyomo_lap.post.results.write_results` on a small synthetic table;
the tester's reproductions that need a solve run ``pyomo-lap solve --length 300``.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyomo_lap.post import folders


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
    assert folders.is_link(tmp / "la") and not folders.is_link(tmp / "a")
    assert not folders.is_link(tmp / "missing")
    assert folders.is_real_dir(tmp / "a") and not folders.is_real_dir(tmp / "la")
    with pytest.raises(folders.FolderNotReplaceableError) as err:
        folders.refuse_links(tmp / "a", "output folder 'a'")
    msg = str(err.value)
    assert "'b/zz'" in msg and "symbolic link" in msg and "\n" not in msg
    assert msg.endswith("(nothing was touched)")
    with pytest.raises(folders.FolderNotReplaceableError, match="'la' is a symbolic link"):
        folders.refuse_links(tmp / "la", "'la'")
    (tmp / "a" / "b" / "zz").unlink()
    folders.refuse_links(tmp / "a", "'a'")            # no link: passes
    folders.refuse_links(tmp / "missing", "'missing'")
