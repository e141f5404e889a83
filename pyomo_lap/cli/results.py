"""The commands that show results: ``pyomo-lap plot``, ``compare``, ``report`` (and the
console tables of a comparison).
"""
from __future__ import annotations

from pathlib import Path

import click

from ..analysis.compare import compare_many, compare_telemetry, parse_step
from ..plots.figures import compare_runs, parse_range, plot_results
from ..plots.report import MAX_POINTS, MIN_POINTS, write_report
from .base import _complete_results, _Echo, _fail, _fail_error, _verbosity, main, writes


@writes("figures added to RESULTS_DIR/plots or --out")
@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False))     # a missing one: checked
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder  [default: RESULTS_DIR/plots]")
@click.option("--pdf", is_flag=True, help="also write all figures to plots.pdf")
@click.option("--reference", default=None, type=click.Path(file_okay=False),
              help="a second results folder: speed and time delta against it")
@click.option("--figure", "figures", multiple=True,
              help="only this figure (repeatable): track_map, racing_line, elevation, speed, "
                   "controls, attitudes, power, gg, vertical_loads, sensitivities (a run with "
                   "--sensitivities)")
@click.option("--range", "s_range", default=None, metavar="A:B",
              help="only this distance window, in metres of track coordinate s as on the "
                   "figures' horizontal axes (s of the run's start + s_sector, not s_sector): "
                   "1200:1800, :800 (from the start), 1200: (to the end); the track map "
                   "highlights it")
def plot(results_dir, out_dir, pdf, reference, figures, s_range):
    """Write the figures of a results folder as PNG (and PDF with --pdf)."""
    try:
        parse_range(s_range, "--range")          # the text, before anything is read
    except ValueError as exc:
        _fail(str(exc))
    for folder in (results_dir, reference):
        if folder is not None:
            _complete_results(folder)
    try:
        files = plot_results(results_dir, out_dir=out_dir, formats=("png", "pdf") if pdf else ("png",),
                             figures=list(figures) or None, reference_dir=reference,
                             echo=_Echo(_verbosity()).detail, s_range=s_range)
    except (ValueError, OSError, KeyError) as exc:
        _fail_error(exc)
    if _verbosity() >= 0:
        click.echo(f"{len(files)} files written to {Path(files[0]).parent}/")


@writes("--out (default compare_A_vs_B next to B), a comparison folder written whole")
@main.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]",
                type=click.Path(exists=True, file_okay=False))
@click.option("--telemetry", default=None, type=click.Path(exists=True, dir_okay=False),
              metavar="LOG.csv",
              help="a logged lap to overlay on RUN (one run): a MoTeC i2 or AiM RaceStudio CSV "
                   "export as it comes, or a CSV with a distance or a time column, a speed column "
                   "with its unit ('speed [km/h]') and any channels named as the run's (a_y, "
                   "...; docs: Logger files); aligned on distance (the logged distance "
                   "stretched to the run's length when within 10 %)")
@click.option("--lap", "lap", default=None, type=int, metavar="N",
              help="with --telemetry: the lap of the logged outing to overlay (1 = the log's "
                   "first segment, the out lap; the laps are listed)  [default: the fastest "
                   "complete lap, between two beacon markers]")
@click.option("--every", default=None, metavar="STEP",
              help="write the comparison table on a fixed step: of distance (1m, 0.5m) or of "
                   "the first run's time (0.01s, 100Hz); at least the span / (100 (rows - 1)) of "
                   "each run: at most 100 rows per interval of its rows")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder, not inside a run's folder  [default: "
                   "compare_<name of RUN_A>_vs_<name of RUN_B> next to RUN_B; with more runs "
                   "compare_<first>_and_<n>_more; with --telemetry compare_<RUN>_vs_<file>]")
@click.option("--sectors", default=3, show_default=True, type=int,
              help="equal parts of the common stretch timed in the table")
@click.option("--pdf", is_flag=True, help="also write the figure as PDF")
def compare(runs, telemetry, lap, every, out_dir, sectors, pdf):
    """Time delta along the track: of RUN_B against RUN_A (two runs), of every run against the
    first (more runs; the legend and compare_runs.csv give the vehicle parameters in which
    they differ), or of a logged lap against RUN (--telemetry)."""
    if sectors < 1 or sectors > 1000:
        _fail(f"--sectors {sectors}: expected an integer between 1 and 1000")
    if every is not None:
        try:
            parse_step(every)
        except ValueError as exc:
            _fail(f"--every {exc}")
    if telemetry is not None and len(runs) != 1:
        _fail(f"--telemetry compares one run with a logged lap; {len(runs)} runs given")
    if lap is not None and telemetry is None:
        _fail(f"--lap {lap}: a lap of a logged outing; give --telemetry FILE")
    if telemetry is None and len(runs) < 2:
        _fail("one run given: expected two runs or more, or one run and --telemetry LAP.csv")
    for folder in runs:
        _complete_results(folder)
    formats = ("png", "pdf") if pdf else ("png",)
    echo = _Echo(_verbosity()).detail
    try:
        if telemetry is not None:
            res = compare_telemetry(runs[0], telemetry, out_dir=out_dir, n_sectors=sectors,
                                    every=every, formats=formats, echo=echo, lap=lap)
        elif len(runs) > 2:
            res = compare_many(runs, out_dir=out_dir, n_sectors=sectors, every=every,
                               formats=formats, echo=echo)
        else:
            res = compare_runs(runs[0], runs[1], out_dir=out_dir, n_sectors=sectors,
                               formats=formats, echo=echo, every=every)
    except (ValueError, OSError, KeyError) as exc:
        _fail_error(exc)
    if telemetry is not None:
        _echo_telemetry(res, Path(runs[0]).name, Path(telemetry).name)
    elif len(runs) > 2:
        _echo_many(res)
    else:
        _echo_two(res, Path(runs[0]).name, Path(runs[1]).name)
    if _verbosity() >= 0:
        click.echo(f"written to {Path(res['files'][0]).parent}/")


@writes("report.html added to RUN, or --out (recorded in the manifest of its folder)")
@main.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]",
                type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False),
              help="the HTML file  [default: RUN/report.html for one run (recorded in its "
                   "manifest: the next solve into RUN replaces it); "
                   "report_<first>_and_<n>_more.html next to the first run for several; "
                   "report_<RUN>_vs_<file>.html with --telemetry]")
@click.option("--telemetry", default=None, type=click.Path(exists=True, dir_okay=False),
              metavar="LAP.csv",
              help="a logged lap to overlay on RUN (one run), as `compare --telemetry` reads it")
@click.option("--max-points", default=MAX_POINTS, show_default=True,
              type=click.IntRange(MIN_POINTS, None),
              help="most points drawn per trace; longer traces keep the smallest and the "
                   "largest value of each of max-points/2 bins")
def report(runs, out, telemetry, max_points):
    """Write one self-contained HTML report of one run or several (opens offline in a
    browser): the runs and the parameters in which they differ, the track map coloured by
    a channel, the channels along the track on one zoomable axis with one cursor, the GG
    diagram with its envelope, the time delta (several runs or --telemetry), the corners
    (a run with corners.csv)."""
    if telemetry is not None and len(runs) != 1:
        _fail(f"--telemetry compares one run with a logged lap; {len(runs)} runs given")
    for folder in runs:
        _complete_results(folder)
    try:
        path = write_report(runs, out=out, telemetry=telemetry, max_points=max_points,
                            echo=_Echo(_verbosity()).detail)
    except ImportError as exc:
        _fail(f"the report needs the package plotly ({exc}): pip install plotly")
    except (ValueError, OSError, KeyError) as exc:
        _fail_error(exc)
    if _verbosity() >= 0:
        click.echo(f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB)")


def _echo_sectors(tab, a: str, b: str, col_a: str, col_b: str, delta_t: float) -> None:
    """The sector table of a comparison of two laps: each sector's span and both times (the
    columns ``col_a``, ``col_b`` of ``tab``, headed ``a``, ``b``), its delta, and the total."""
    click.echo(f"{'sector':>6} {'from [m]':>9} {'to [m]':>9} {a[:12]:>12} {b[:12]:>12} {'delta [s]':>10}")
    for _, r in tab.iterrows():
        click.echo(f"{int(r['sector']):>6} {r['s_start [m]']:>9.1f} {r['s_end [m]']:>9.1f} "
                   f"{r[col_a]:>12.3f} {r[col_b]:>12.3f} {r['delta [s]']:>+10.3f}")
    click.echo(f"{'total':>6} {tab['s_start [m]'].iloc[0]:>9.1f} {tab['s_end [m]'].iloc[-1]:>9.1f} "
               f"{tab[col_a].sum():>12.3f} {tab[col_b].sum():>12.3f} {delta_t:>+10.3f}")


def _echo_two(res: dict, a: str, b: str) -> None:
    """The tables of ``compare RUN_A RUN_B``: sector times, the runs' statistics, channels."""
    _echo_sectors(res["sectors"], a, b, "time_A [s]", "time_B [s]", res["delta_t_s"])
    click.echo(f"(delta > 0: {b} is behind {a})")
    if _verbosity() < 0:
        return
    _echo_corners(res.get("corners"), a, b)
    click.echo("")
    runs = res["runs"]
    click.echo(f"{'run':<22} {a[:14]:>14} {b[:14]:>14}")
    for _, r in runs.iterrows():
        fmt = (lambda v: f"{v:>14.3f}") if isinstance(r["A"], float) else (lambda v: f"{str(v):>14}")
        click.echo(f"{r['quantity']:<22} {fmt(r['A'])} {fmt(r['B'])}")
    ch = res["channels"]
    if len(ch):
        click.echo("")
        click.echo(f"{'channel':<10} {'unit':>5} {'mean ' + a[:9]:>14} {'mean ' + b[:9]:>14} "
                   f"{'rms(B-A)':>10} {'max|B-A|':>10} {'at s [m]':>9}")
        for _, r in ch.iterrows():
            click.echo(f"{r['channel']:<10} {r['unit']:>5} {r['mean_A']:>14.5g} {r['mean_B']:>14.5g} "
                       f"{r['rms_diff']:>10.4g} {r['max_abs_diff']:>10.4g} {r['s_at_max [m]']:>9.1f}")


def _echo_corners(tab, a: str, b: str) -> None:
    """The corner table of a comparison of two runs (:func:`pyomo_lap.results.corners.corner_deltas`):
    each corner's time in both runs, the difference, and the difference of the minimum speeds."""
    if tab is None or not len(tab):
        return
    click.echo("")
    click.echo(f"{'corner':<14} {'dir':>5} {a[:10] + ' [s]':>14} {b[:10] + ' [s]':>14} "
               f"{'delta [s]':>10} {'d v_min [km/h]':>15}")
    for _, r in tab.iterrows():
        click.echo(f"{str(r['name'])[:14]:<14} {r['direction']:>5} {r['time_A [s]']:>14.3f} "
                   f"{r['time_B [s]']:>14.3f} {r['delta_time [s]']:>+10.3f} "
                   f"{r['delta_min_speed [km/h]']:>+15.2f}")


def _echo_many(res: dict) -> None:
    """The table of ``compare`` with more than two runs: each run's time over the common
    stretch, its delta to the first and the parameters in which it differs."""
    runs = res["runs"]
    click.echo(f"{'run':<24} {'time [s]':>10} {'delta [s]':>10}  differs in")
    for (_, r), label in zip(runs.iterrows(), res["labels"]):
        differs = label.split(": ", 1)[1] if ": " in label else ""
        click.echo(f"{str(r['run'])[:24]:<24} {r['time over the common stretch [s]']:>10.3f} "
                   f"{r['delta to the first [s]']:>+10.3f}  {differs}")
    click.echo(f"(over {res['delta']['s [m]'].iloc[0]:.1f}-{res['delta']['s [m]'].iloc[-1]:.1f} m; "
               "delta > 0: behind the first run)")
    corners = res.get("corners")
    if _verbosity() >= 0 and corners is not None and len(corners):
        deltas = [c for c in corners.columns if c.startswith("delta_")]
        click.echo("")
        click.echo(f"{'corner':<14} " + " ".join(f"{c[6:-4][:12]:>12}" for c in deltas)
                   + "  (delta [s] to the first run)")
        for _, r in corners.iterrows():
            click.echo(f"{str(r['name'])[:14]:<14} " + " ".join(f"{r[c]:>+12.3f}" for c in deltas))


def _echo_telemetry(res: dict, run: str, log: str) -> None:
    """The tables of ``compare RUN --telemetry LAP``: sector times, the alignment and the
    channels compared."""
    info = res["info"]
    _echo_sectors(res["sectors"], run, log, "time_run [s]", "time_log [s]", res["delta_t_s"])
    click.echo(f"(delta > 0: the logged lap {log} loses time on {run})")
    if _verbosity() < 0:
        return
    laps = info.get("laps")
    if laps is not None and len(laps) > 1:
        click.echo(f"laps in {log}: " + ", ".join(
            f"{int(r['lap'])}: {r['time [s]']:.3f} s" + ("" if r["complete"] else " (part)")
            for _, r in laps.iterrows()) + f"; lap {info['lap']} overlaid"
            + ("" if info.get("lap_asked") else " (the fastest complete; --lap N for another)"))
    click.echo(f"logged lap read: {info['how']}; speed from {info['speed']!r}"
               + "".join(f"; {d}" for d in info["derived"])
               + (f"; its distance stretched by {info['scale']:.5f} to the run's"
                  if info["scale"] != 1.0 else ""))
    if info["compared"]:
        click.echo("channels compared: " + ", ".join(info["compared"]))
    if info["skipped"]:
        click.echo("channels not compared (another unit): " + "; ".join(info["skipped"]))
