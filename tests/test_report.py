"""The interactive report (pyomo_lap.plots.report, ``pyomo-lap report``): its down-sampling rule,
the table of the parameters that differ, where it is written, and the report of two solved
sectors opened in headless Chromium (no console error, every figure rendered, a screenshot
that is not blank)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.plots import report as R

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ down-sampling (unit)
@pytest.mark.unit
def test_keep_extremes_keeps_every_bins_min_and_max():
    """A noisy trace with sharp spikes: every bin's smallest and largest value survive (checked
    against the bins cut here by hand), so do the global peaks, the first and the last point;
    no more than 2 points a bin (+2); a short trace is kept whole."""
    rng = np.random.default_rng(3)
    n, max_points = 50_003, 1_000
    y = rng.normal(size=n)
    y[[17, 31_000, 49_999]] = [40.0, -55.0, 33.0]            # spikes one point wide
    i = R.keep_extremes(y, max_points)
    assert np.all(np.diff(i) > 0) and i[0] == 0 and i[-1] == n - 1
    assert len(i) <= max_points + 2
    assert {17, 31_000, 49_999} <= set(i.tolist())
    edges = np.linspace(0, n, max_points // 2 + 1).astype(int)
    kept = np.zeros(n, bool)
    kept[i] = True
    for lo, hi in zip(edges[:-1], edges[1:]):
        assert y[lo:hi][kept[lo:hi]].max() == y[lo:hi].max()
        assert y[lo:hi][kept[lo:hi]].min() == y[lo:hi].min()
    assert np.array_equal(R.keep_extremes(y[:999], max_points), np.arange(999))
    with pytest.raises(ValueError, match="max_points = 3"):
        R.keep_extremes(y, 3)


@pytest.mark.unit
def test_keep_extremes_of_several_channels_and_nan():
    """Two channels drawn on the same points: the extremes of each are kept; a NaN is not
    taken for an extreme."""
    n = 10_000
    a = np.sin(np.linspace(0, 40, n))
    b = np.zeros(n)
    b[5_555] = 9.0
    a[100] = np.nan
    i = R.keep_extremes(np.c_[a, b], 100)
    assert 5_555 in i and 100 not in i
    assert np.nanmax(a[i]) == np.nanmax(a) and np.nanmin(a[i]) == np.nanmin(a)


# ------------------------------------------------------------------ tables (unit)
@pytest.mark.unit
def test_parameter_table_lists_name_unit_and_value_per_run():
    """Three runs, two parameters changed: one row each, with the unit of the vehicle schema
    (the mass in kg, a downforce coefficient dimensionless) and each run's value; the
    parameters they share are not listed."""
    base = {"mass.total": 240.0, "aero.Cz1": 0.536, "geometry.h": 0.435}
    sums = [{"vehicle": "fsae", "track": "nordschleife", "vehicle_parameters": dict(base)},
            {"vehicle": "fsae", "track": "nordschleife",
             "vehicle_parameters": {**base, "mass.total": 260.0}},
            {"vehicle": "fsae", "track": "nordschleife",
             "vehicle_parameters": {**base, "aero.Cz1": 0.8}}]
    runs = [{"name": n, "summary": s} for n, s in zip(("a", "b", "c"), sums)]
    tab = R.parameter_table(runs).set_index("parameter")
    assert sorted(tab.index) == ["aero.Cz1", "mass.total"]
    assert tab.loc["mass.total", "unit"] == "kg"
    assert tab.loc["aero.Cz1", "unit"] in ("", "-")
    assert tab.loc["mass.total", ["a", "b", "c"]].tolist() == [240.0, 260.0, 240.0]
    assert tab.loc["aero.Cz1", ["a", "b", "c"]].tolist() == [0.536, 0.536, 0.8]
    assert R.parameter_table(runs[:1]).empty


@pytest.mark.unit
def test_table_html_escapes_text():
    """A run name with markup is shown as text, not run as HTML."""
    out = R._table_html(pd.DataFrame({"run": ["<script>alert(1)</script>"], "x": [1.23456789]}))
    assert "<script>" not in out and "&lt;script&gt;" in out and ">1.235<" in out


@pytest.mark.unit
def test_gg_hull_of_a_circle_reaches_v2_over_r():
    """A car on a circle of radius R at a speed v, with a braking phase: the convex hull of
    its GG points reaches a_y = v^2 / (R g) (the closed form) and the braking a_x."""
    g, r_m, v = 9.81, 50.0, 20.0
    ay = np.r_[np.full(50, v ** 2 / r_m), np.zeros(20)] / g
    ax = np.r_[np.zeros(50), np.linspace(0, -1.2, 20)]
    hull = R._hull(ay, ax)
    assert np.isclose(hull[:, 0].max(), v ** 2 / (r_m * g))
    assert np.isclose(hull[:, 1].min(), -1.2)
    assert np.allclose(hull[0], hull[-1])                    # closed
    assert R._hull(np.zeros(5), np.zeros(5)) is None         # no area


# ------------------------------------------------------------------ where it goes (unit)
@pytest.mark.unit
def test_report_path_defaults_and_refusals(tmp_path):
    a, b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    assert R.report_path([a]) == (a / "report.html", a)
    assert R.report_path([a, b]) == (tmp_path / "runs" / "report_a_and_1_more.html", None)
    assert R.report_path([a], telemetry="lap1.csv") == (
        tmp_path / "runs" / "report_a_vs_lap1.html", None)
    out, inside = R.report_path([a, b], out=b / "sub" / "r.html")
    assert inside == b
    with pytest.raises(ValueError, match=r"r\.png: expected a file name ending in \.html"):
        R.report_path([a], out=tmp_path / "r.png")
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        R.report_path([a], out=tmp_path / "dir.html")


@pytest.mark.unit
def test_cli_report_refuses_telemetry_with_two_runs(tmp_path):
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    lap = tmp_path / "lap.csv"
    lap.write_text("distance [m],speed [km/h]\n0,100\n10,101\n")
    r = CliRunner().invoke(main, ["report", str(tmp_path / "a"), str(tmp_path / "b"),
                                  "--telemetry", str(lap)])
    assert r.exit_code == 2 and "--telemetry compares one run with a logged lap; 2 runs" in r.output


# ------------------------------------------------------------------ in a browser (integration)
def _chromium():
    exe = R.find_chromium()
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("no Chromium in CI: scripts/bootstrap.sh (PYOMO_LAP_BROWSER=1, set by "
                        "scripts/test.sh) installs Debian's chromium package")
        pytest.skip("no Chromium (apt-get install chromium, or set PYOMO_LAP_CHROMIUM); "
                    "scripts/install_chromium.sh installs it")
    return exe


def _solve(out: Path, vehicle=None):
    cmd = [sys.executable, "-m", "pyomo_lap.cli", "solve", "--start", "1200", "--length",
           "300", "-q", "--out", str(out)] + (["--vehicle", str(vehicle)] if vehicle else [])
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stdout + res.stderr


def _rendered(dom: str) -> dict:
    """The plotly figures of the dumped DOM: div id -> number of 'main-svg' elements in it."""
    div = r'<div id="(report-[a-z]+)" class="plotly-graph-div'
    ids = [m.group(1) for m in re.finditer(div, dom)]
    parts = re.split(r'<div id="report-[a-z]+" class="plotly-graph-div', dom)[1:]
    return {i: p.count('class="main-svg"') for i, p in zip(ids, parts)}


@pytest.mark.integration
def test_report_of_two_runs_opens_in_chromium(tmp_path):
    """Two 300 m solves (the second with 20 kg more and more front downforce), their report,
    opened in headless Chromium: no console message and no uncaught error, the three figures
    rendered (plotly's 'main-svg' layers in each), the screenshot far from blank (pixel
    variance), the two parameters listed with their units and values as the vehicle files
    give them, the corner table of corners.csv shown; the file is self-contained (no
    http(s) script or stylesheet); an --out that is a link is refused, never written through
    (issue 45: a link is the user's), and written once it is gone."""
    exe = _chromium()
    car = (ROOT / "models" / "fsae.toml").read_text()
    car_b = re.sub(r"(?m)^total = 240\.0", "total = 260.0", car)
    car_b = re.sub(r"(?m)^Cz1 = 0\.536", "Cz1 = 0.7", car_b)
    assert car_b.count("260.0") == car.count("260.0") + 1 and "Cz1 = 0.7" in car_b
    (tmp_path / "b.toml").write_text(car_b)
    _solve(tmp_path / "a")
    _solve(tmp_path / "b", tmp_path / "b.toml")
    pd.DataFrame({"corner": [1, 2], "apex s [m]": [1290.0, 1410.0]}).to_csv(
        tmp_path / "b" / "corners.csv", index=False)
    victim = tmp_path / "victim.html"
    victim.write_text("mine")
    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()
    out.symlink_to(victim)
    from pyomo_lap.folders.links import FolderNotReplaceableError
    with pytest.raises(FolderNotReplaceableError, match=r"r\.html is a symbolic link"):
        R.write_report([tmp_path / "a", tmp_path / "b"], out=out)
    assert victim.read_text() == "mine" and out.is_symlink()
    out.unlink()
    path = R.write_report([tmp_path / "a", tmp_path / "b"], out=out)
    assert victim.read_text() == "mine" and not out.is_symlink()
    page = path.read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=['\"]?https?:", page)
    assert path.stat().st_size < 15e6
    params = re.search(r"Parameters that differ \(2\)</h2>(.*?)</table>", page, re.S).group(1)
    assert re.search(r"<td>mass\.total</td><td>kg</td><td>240</td><td>260</td>", params)
    assert re.search(r"<td>aero\.Cz1</td><td>-?</td><td>0\.536</td><td>0\.7</td>", params)
    assert "Corners of b</h2>" in page and "<td>1410</td>" in page
    shot = tmp_path / "shot.png"
    res = R.chromium_load(path, screenshot=shot, budget_ms=5000, chromium=exe)
    assert res["console"] == [], "\n".join(res["console"])
    assert _rendered(res["dom"]) == {"report-map": 3, "report-gg": 3, "report-stack": 3}
    from PIL import Image
    px = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert px.shape[0] > 500 and px.std() > 10.0           # a blank page has std 0


@pytest.mark.integration
def test_report_inside_the_run_is_recorded_and_refuses_links(tmp_path):
    """One run: the report goes into its folder, listed in the manifest (by 'report') with the
    file's SHA-256; a results folder holding a link is refused, nothing written."""
    import hashlib

    from pyomo_lap.folders.results_folder import MANIFEST
    from pyomo_lap.folders.links import FolderNotReplaceableError
    _solve(tmp_path / "a")
    path = R.write_report([tmp_path / "a"])
    assert path == tmp_path / "a" / "report.html"
    entry = json.loads((tmp_path / "a" / MANIFEST).read_text())["files"]["report.html"]
    assert entry["by"] == "report"
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    path.unlink()
    (tmp_path / "a" / "elsewhere").symlink_to(tmp_path)
    with pytest.raises(FolderNotReplaceableError, match="holds a symbolic link"):
        R.write_report([tmp_path / "a"])
    assert not path.exists()


@pytest.mark.integration
def test_max_points_the_help_allows_is_the_rule_the_report_takes(tmp_path):
    """``report --max-points``: the lowest value the command line takes (its ``x>=N``) is the
    report's own rule (:data:`pyomo_lap.plots.report.MIN_POINTS`), and that value writes a
    report (issue 46: 4 passed the command line, then the GG diagram refused 4 // 2)."""
    from click.testing import CliRunner

    from pyomo_lap.cli import main
    run = tmp_path / "run"
    _solve(run)
    low = CliRunner().invoke(main, ["report", str(run), "--max-points", "1"])
    lowest = int(re.search(r"x>=(\d+)", low.output).group(1))
    for n in (lowest, lowest + 1):
        out = tmp_path / f"r{n}.html"
        r = CliRunner().invoke(main, ["report", str(run), "--max-points", str(n),
                                      "--out", str(out)])
        assert r.exit_code == 0 and out.stat().st_size > 0, r.output
    assert lowest == R.MIN_POINTS
