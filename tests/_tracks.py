"""Small track files written by the tests (shared by several test modules)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def write_ring_csv(path, columns=None, n=200, r=100.0):
    """A closed circle x, y, z (+ constant columns), counter-clockwise, gently undulating."""
    u = np.linspace(0, 2 * np.pi, n, endpoint=False)
    cols = dict(x=r * np.cos(u), y=r * np.sin(u), z=300 + 3 * np.sin(u))
    cols.update({k: np.full(n, v) for k, v in (columns or {}).items()})
    pd.DataFrame(cols).to_csv(path, index=False)
    return path


REBUILD_TOLERANCE_M = {"s_m": 1e-3, "x_m": 1e-3, "y_m": 1e-3, "z_m": 5e-3}
"""How far a rebuilt track file may lie from the bundled one [m]: the rebuild runs the same
script on the same raw data, but the smoothing splines and filters of a newer NumPy/SciPy can
round differently (measured with SciPy 1.17: Zandvoort's elevations moved 1.7 mm, its length
0.08 mm); a processing change moves them by centimetres to metres, which this still sees. The
widths and the banking are copied from the data: they must be equal."""


def assert_same_track_files(built_dir, bundled_dir, name: str) -> None:
    """The track ``name`` rebuilt into ``built_dir`` equals the bundled one of ``bundled_dir``:
    the CSV's columns within :data:`REBUILD_TOLERANCE_M` (the other columns and the header
    comments exactly), the JSON's texts exactly and its numbers within 1e-4 relative or 5 mm."""
    import json
    from pathlib import Path
    built_dir, bundled_dir = Path(built_dir), Path(bundled_dir)
    new_text = (built_dir / f"{name}.csv").read_text().splitlines()
    old_text = (bundled_dir / f"{name}.csv").read_text().splitlines()
    assert [ln for ln in new_text if ln.startswith("#")] == [ln for ln in old_text if ln.startswith("#")]
    new = pd.read_csv(built_dir / f"{name}.csv", comment="#")
    old = pd.read_csv(bundled_dir / f"{name}.csv", comment="#")
    assert list(new.columns) == list(old.columns) and len(new) == len(old)
    for col in old.columns:
        atol = REBUILD_TOLERANCE_M.get(col, 0.0)
        np.testing.assert_allclose(new[col], old[col], rtol=0, atol=atol, err_msg=col)

    def same(a, b, path):
        if isinstance(a, dict):
            assert isinstance(b, dict) and sorted(a) == sorted(b), path
            for k in a:
                same(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list):
            assert isinstance(b, list) and len(a) == len(b), path
            for i, (u, v) in enumerate(zip(a, b)):
                same(u, v, f"{path}[{i}]")
        elif isinstance(a, float) and isinstance(b, (int, float)):
            assert abs(a - b) <= max(1e-4 * abs(b), 5e-3), (path, a, b)
        elif isinstance(a, str) and isinstance(b, str) and a != b:
            # a text that quotes a number (a step's detail) may differ in that number's last digit
            import re
            num = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
            assert re.sub(num, "#", a) == re.sub(num, "#", b), (path, a, b)
            for u, v in zip(re.findall(num, a), re.findall(num, b)):
                assert abs(float(u) - float(v)) <= max(1e-2 * abs(float(v)), 5e-3), (path, a, b)
        else:
            assert a == b, (path, a, b)
    same(json.loads((built_dir / f"{name}.json").read_text()),
         json.loads((bundled_dir / f"{name}.json").read_text()), name)
