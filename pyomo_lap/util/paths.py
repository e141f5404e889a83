"""Where the bundled data are: the processed tracks (``data/``) and the vehicle files
(``models/``).

In a checkout (and an editable install) they are the repository's own ``data/`` and
``models/`` folders, next to the package. ``pip install .`` (not editable) copies them to
``<prefix>/share/pyomo_lap/data`` and ``<prefix>/share/pyomo_lap/models`` (``data_files`` in
``setup.cfg``), where ``<prefix>`` is the environment's (``sys.prefix``) or, for
``pip install --user``, the user base. ``$PYOMO_LAP_DATA`` and ``$PYOMO_LAP_MODELS`` override
both.
"""
from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path
from typing import List

__all__ = ["data_dir", "models_dir"]

_REPO = Path(__file__).resolve().parents[2]


def _share_candidates() -> List[Path]:
    prefixes = [Path(sysconfig.get_path("data")), Path(sys.prefix), Path(sys.base_prefix)]
    try:
        prefixes.append(Path(site.getuserbase()))
    except Exception:   # pragma: no cover - site without a user base
        pass
    out: List[Path] = []
    for p in prefixes:
        q = p / "share" / "pyomo_lap"
        if q not in out:
            out.append(q)
    return out


def _find(env: str, name: str, marker: str) -> Path:
    value = os.environ.get(env)
    if value:
        return Path(value)
    here = _REPO / name
    if (here / marker).exists():
        return here
    for share in _share_candidates():
        if (share / name / marker).exists():
            return share / name
    return here     # not found: the checkout's path, so that messages name a real place


def data_dir() -> Path:
    """The data folder (holds ``tracks/``): ``$PYOMO_LAP_DATA``, the checkout's ``data/``, or
    the installed copy in ``<prefix>/share/pyomo_lap/data``."""
    return _find("PYOMO_LAP_DATA", "data", "tracks")


def models_dir() -> Path:
    """The folder of the bundled vehicle files (``*.toml``): ``$PYOMO_LAP_MODELS``, the
    checkout's ``models/``, or the installed copy in ``<prefix>/share/pyomo_lap/models``."""
    return _find("PYOMO_LAP_MODELS", "models", "fsae.toml")
