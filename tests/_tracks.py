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
