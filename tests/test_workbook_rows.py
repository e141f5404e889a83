"""results.xlsx: the channels and track sheets written as XML text at once
(pyomo_lap.results.export._bulk_rows) are xlsxwriter's own cell-by-cell writing, byte for byte:
missing values, rows without any value, whole numbers, the spans of every 16 rows, the column
formats, the chart's cached values; a table it cannot write (texts, infinities) is written cell
by cell as before."""
from __future__ import annotations

import zipfile

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.results import export as E
from pyomo_lap.results import table as R


def _table(n=75, seed=5):
    """Channels of every kind of number: missing values scattered and in whole blocks of 16
    rows of some columns, a row without any value, an integer column, tiny and huge values."""
    rng = np.random.default_rng(seed)
    s = np.cumsum(rng.uniform(0.5, 3.0, n))
    df = pd.DataFrame({"s": s, "s_sector": s - s[0], "t": s / 30.0,
                       "speed_kmh": rng.uniform(50, 250, n),
                       "f_11z": rng.normal(0, 1e4, n), "q4": rng.normal(0, 1e-3, n),
                       "gear": rng.integers(1, 7, n).astype(float),
                       "element": np.arange(n, dtype=np.int64) // 3,
                       "Omega_z": rng.normal(0, 1e-2, n) * 10.0 ** rng.integers(-300, 300, n),
                       "width_left": np.full(n, 4.0)})
    df.loc[rng.random(n) < 0.2, "f_11z"] = np.nan
    df.loc[16:40, "gear"] = np.nan                  # a column missing for whole blocks
    if n > 33:
        df.loc[10, "speed_kmh"] = np.nan            # the chart's data with a hole
        df = df.astype({"element": float})
        df.loc[33, df.columns] = np.nan             # a row without any value
    return df


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist() if n != "docProps/core.xml"}  # (its time)


@pytest.mark.unit
@pytest.mark.parametrize("n", [1, 16, 17, 30, 75])
def test_the_bulk_rows_are_xlsxwriters_own_bytes(tmp_path, monkeypatch, n):
    """The whole workbook written with the bulk rows and with xlsxwriter's write_row (the
    bulk path switched off) is the same, member by member (sheets, chart, shared strings);
    openpyxl reads the table's values back. (n = 30: an int64 column; 75: a row without
    values.)"""
    df = _table(n)
    summary = {"lap_time_s": 1.0}
    R._write_workbook(tmp_path / "bulk.xlsx", df, summary, pd.DataFrame(), None)
    calls = []
    monkeypatch.setattr(E, "_bulk_rows", lambda *a, **k: calls.append(1) or False)
    R._write_workbook(tmp_path / "cells.xlsx", df, summary, pd.DataFrame(), None)
    assert calls                                         # the cell-by-cell path did run
    bulk, cells = _members(tmp_path / "bulk.xlsx"), _members(tmp_path / "cells.xlsx")
    assert bulk.keys() == cells.keys()
    assert [k for k in bulk if bulk[k] != cells[k]] == []
    # the values read back (openpyxl, another reader) are the table's
    import openpyxl
    ws = openpyxl.load_workbook(tmp_path / "bulk.xlsx", read_only=True)["channels"]
    got = [[c for c in row] for row in ws.iter_rows(min_row=2, values_only=True)]
    want = df.astype(object).where(df.notna(), None).to_numpy().tolist()
    got = [row + [None] * (df.shape[1] - len(row)) for row in got]
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-15)


@pytest.mark.unit
def test_tables_the_bulk_rows_cannot_write_are_written_cell_by_cell(tmp_path):
    """A text column, or an infinity, leaves the table to xlsxwriter (which refuses the
    infinity, as before): nothing is written in bulk."""
    import xlsxwriter
    wb = xlsxwriter.Workbook(str(tmp_path / "x.xlsx"))
    ws = wb.add_worksheet("a")
    assert not E._bulk_rows(ws, pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]}))
    assert not E._bulk_rows(ws, pd.DataFrame({"a": [1.0, np.inf]}))
    assert not E._bulk_rows(ws, pd.DataFrame({"a": [True, False]}))
    assert E._bulk_rows(ws, pd.DataFrame({"a": [1.0, np.nan]}))
    wb.close()
