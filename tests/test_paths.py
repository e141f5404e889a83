"""Where the bundled data are found: the checkout, the installed copy (``pip install .``
puts them in ``<prefix>/share/pyomo_lap``, see ``[options.data_files]`` in setup.cfg), or the
environment variables."""
from __future__ import annotations

import configparser
from pathlib import Path

import pytest

import pyomo_lap.util.paths as paths

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.unit
def test_checkout_folders_are_found_first():
    assert paths.data_dir() == ROOT / "data"
    assert paths.models_dir() == ROOT / "models"
    assert (paths.data_dir() / "tracks" / "nordschleife.csv").exists()
    assert (paths.models_dir() / "fsae.toml").exists()


@pytest.mark.unit
def test_installed_copy_is_found_without_a_checkout(tmp_path, monkeypatch):
    """A package installed without the repository beside it finds <prefix>/share/pyomo_lap."""
    share = tmp_path / "prefix" / "share" / "pyomo_lap"
    (share / "data" / "tracks").mkdir(parents=True)
    (share / "models").mkdir(parents=True)
    (share / "models" / "fsae.toml").write_text("")
    monkeypatch.setattr(paths, "_REPO", tmp_path / "site-packages")     # no data/, no models/
    monkeypatch.setattr(paths, "_share_candidates", lambda: [tmp_path / "other", share])
    monkeypatch.delenv("PYOMO_LAP_DATA", raising=False)
    monkeypatch.delenv("PYOMO_LAP_MODELS", raising=False)
    assert paths.data_dir() == share / "data"
    assert paths.models_dir() == share / "models"
    monkeypatch.setenv("PYOMO_LAP_DATA", str(tmp_path / "mine"))
    assert paths.data_dir() == tmp_path / "mine"


@pytest.mark.unit
def test_setup_cfg_installs_every_bundled_track_and_vehicle():
    """Every file the loaders need is listed in [options.data_files] (by its glob)."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    files = dict(cfg.items("options.data_files"))
    listed = set()
    for target, patterns in files.items():
        for pat in patterns.replace("\n", ",").split(","):
            if pat.strip():
                listed.update(p.resolve() for p in ROOT.glob(pat.strip()))
    need = list((ROOT / "models").glob("*.toml")) + list((ROOT / "data" / "tracks").glob("*.csv")) \
        + list((ROOT / "data" / "tracks").glob("*.json"))
    assert need and all(p.resolve() in listed for p in need)
    assert files["share/pyomo_lap/models"] and files["share/pyomo_lap/data/tracks"]
