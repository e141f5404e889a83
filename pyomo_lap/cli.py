"""Command-line interface: ``pyomo-lap solve | plot | compare | diagnose | tracks | vehicles``.

Built on click. Errors in the inputs are reported as one clear line and a non-zero exit
code, before any model is built.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import click

from . import __version__

__all__ = ["main"]


def _fail(msg: str, code: int = 2):
    click.secho(f"error: {msg}", fg="red", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pyomo-lap")
def main():
    """Minimum-lap-time planning on 3D tracks (Lie-group race-car model, pyomo.dae, IPOPT)."""


@main.command()
@click.option("--track", default="nordschleife", show_default=True,
              help="track name (see `pyomo-lap tracks`) or a .csv / .json file")
@click.option("--vehicle", default="fsae", show_default=True,
              help="vehicle name (models/*.toml) or a .toml file")
@click.option("--start", default=0.0, show_default=True, type=float, help="sector start [m]")
@click.option("--length", default=2000.0, show_default=True, type=float, help="sector length [m]")
@click.option("--nfe", default=400, show_default=True, type=int, help="finite elements N")
@click.option("--ncp", default=3, show_default=True, type=int, help="collocation points per element")
@click.option("--scheme", default="LAGRANGE-RADAU", show_default=True,
              type=click.Choice(["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"]), help="collocation scheme")
@click.option("--initial-speed", default="quasi-steady", show_default=True,
              help="speed at the sector start [m/s], 'quasi-steady' or 'free'")
@click.option("--solver", default="ipopt", show_default=True,
              help="Pyomo solver name (tested: ipopt, ipopt_v2 = Pyomo's newer IPOPT interface)")
@click.option("--solver-option", "solver_option", multiple=True, metavar="KEY=VALUE",
              help="solver option passed through to the solver (repeatable), e.g. max_iter=500")
@click.option("--sectors", default=3, show_default=True, type=int,
              help="number of equal sectors timed in the summary")
@click.option("--out", "out_dir", default="results", show_default=True,
              type=click.Path(file_okay=False), help="output folder")
@click.option("--quiet", is_flag=True, help="do not stream the solver's iterations")
def solve(track, vehicle, start, length, nfe, ncp, scheme, initial_speed, solver, solver_option,
          sectors, out_dir, quiet):
    """Solve the minimum-time problem on a sector and write trajectory.csv,
    trajectory.parquet, results.xlsx and summary.json to OUT."""
    from .api import solve_sector  # heavy imports after argument parsing
    from .progress import click_progress
    from .solve import SolverNotFoundError, ensure_solver, parse_solver_options

    if nfe < 2 or nfe > 100000:
        _fail(f"--nfe {nfe}: expected an integer between 2 and 100000")
    if ncp < 1 or ncp > 10:
        _fail(f"--ncp {ncp}: expected an integer between 1 and 10")
    if not math.isfinite(length) or length <= 0:
        _fail(f"--length {length}: expected a positive, finite length in metres")
    if not math.isfinite(start) or start < 0:
        _fail(f"--start {start}: expected a finite distance >= 0 m from the track's start")
    if sectors < 1 or sectors > 1000:
        _fail(f"--sectors {sectors}: expected an integer between 1 and 1000")
    try:
        isp = initial_speed if initial_speed in ("quasi-steady", "free") else float(initial_speed)
    except ValueError:
        _fail(f"--initial-speed {initial_speed!r}: expected a speed in m/s, 'quasi-steady' or 'free'")
    try:
        options = parse_solver_options(solver_option)
    except ValueError as exc:
        _fail(f"--solver-option: {exc}")
    try:
        ensure_solver(solver)
    except SolverNotFoundError as exc:
        _fail(f"--solver {solver}: {exc}")
    try:
        solve_sector(track=track, vehicle=vehicle, start=start, length=length, nfe=nfe, ncp=ncp,
                     scheme=scheme, initial_speed=isp, solver=solver, solver_options=options,
                     out_dir=Path(out_dir), tee=not quiet, echo=click.echo, n_sectors=sectors,
                     progress=click_progress())
    except KeyboardInterrupt:
        _fail(f"interrupted; nothing was written to {out_dir}", code=130)
    except (ValueError, OSError, SolverNotFoundError) as exc:
        _fail(str(exc))
    except RuntimeError as exc:
        _fail(str(exc), code=1)


@main.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder  [default: RESULTS_DIR/plots]")
@click.option("--pdf", is_flag=True, help="also write all figures to plots.pdf")
@click.option("--reference", default=None, type=click.Path(exists=True, file_okay=False),
              help="a second results folder: speed and time delta against it")
@click.option("--figure", "figures", multiple=True,
              help="only this figure (repeatable): track_map, racing_line, elevation, speed, "
                   "controls, attitudes, power, gg, vertical_loads")
def plot(results_dir, out_dir, pdf, reference, figures):
    """Write the figures of a results folder as PNG (and PDF with --pdf)."""
    from .plots import plot_results
    try:
        files = plot_results(results_dir, out_dir=out_dir, formats=("png", "pdf") if pdf else ("png",),
                             figures=list(figures) or None, reference_dir=reference, echo=click.echo)
    except (ValueError, OSError, KeyError) as exc:
        _fail(str(exc))
    click.echo(f"{len(files)} files written to {Path(files[0]).parent}/")


@main.command()
@click.argument("run_a", type=click.Path(exists=True, file_okay=False))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder  [default: RUN_B/compare_<name of RUN_A>]")
@click.option("--sectors", default=3, show_default=True, type=int,
              help="equal parts of the common stretch timed in the table")
@click.option("--pdf", is_flag=True, help="also write compare.pdf")
def compare(run_a, run_b, out_dir, sectors, pdf):
    """Time delta of RUN_B against RUN_A along the track (table, CSV and plot)."""
    from .compare import compare_runs
    if sectors < 1 or sectors > 1000:
        _fail(f"--sectors {sectors}: expected an integer between 1 and 1000")
    try:
        res = compare_runs(run_a, run_b, out_dir=out_dir, n_sectors=sectors,
                           formats=("png", "pdf") if pdf else ("png",), echo=click.echo)
    except (ValueError, OSError, KeyError) as exc:
        _fail(str(exc))
    tab = res["sectors"]
    a, b = Path(run_a).name, Path(run_b).name
    click.echo(f"{'sector':>6} {'from [m]':>9} {'to [m]':>9} {a[:12]:>12} {b[:12]:>12} {'delta [s]':>10}")
    for _, r in tab.iterrows():
        click.echo(f"{int(r['sector']):>6} {r['s_start [m]']:>9.1f} {r['s_end [m]']:>9.1f} "
                   f"{r['time_A [s]']:>12.3f} {r['time_B [s]']:>12.3f} {r['delta [s]']:>+10.3f}")
    click.echo(f"{'total':>6} {tab['s_start [m]'].iloc[0]:>9.1f} {tab['s_end [m]'].iloc[-1]:>9.1f} "
               f"{tab['time_A [s]'].sum():>12.3f} {tab['time_B [s]'].sum():>12.3f} "
               f"{res['delta_t_s']:>+10.3f}")
    click.echo(f"(delta > 0: {b} is behind {a})")


@main.command()
@click.option("--track", default="nordschleife", show_default=True, help="track name or file")
@click.option("--vehicle", default="fsae", show_default=True, help="vehicle name or .toml file")
@click.option("--start", default=500.0, show_default=True, type=float, help="sector start [m]")
@click.option("--length", default=100.0, show_default=True, type=float, help="sector length [m]")
@click.option("--nfe", default=5, show_default=True, type=int, help="finite elements")
@click.option("--ncp", default=2, show_default=True, type=int, help="collocation points per element")
@click.option("--solve", "do_solve", is_flag=True, help="solve first and diagnose the optimum")
@click.option("--solver", default="ipopt", show_default=True, help="Pyomo solver name for --solve")
@click.option("--no-numerical", is_flag=True, help="structural checks only")
@click.option("--report", default=None, type=click.Path(dir_okay=False),
              help="also write the toolbox's reports to this file")
def diagnose(track, vehicle, start, length, nfe, ncp, do_solve, solver, no_numerical, report):
    """Run the IDAES diagnostics toolbox (structural and numerical checks) and a units check
    on the model of a short sector."""
    from .diagnose import diagnose as run
    from .solve import SolverNotFoundError
    if nfe < 1 or nfe > 200:
        _fail(f"--nfe {nfe}: expected an integer between 1 and 200 (diagnose a short sector)")
    if ncp < 1 or ncp > 10:
        _fail(f"--ncp {ncp}: expected an integer between 1 and 10")
    if not math.isfinite(length) or length <= 0:
        _fail(f"--length {length}: expected a positive, finite length in metres")
    buf = __import__("io").StringIO()

    class _Tee:
        def write(self, text):
            buf.write(text)
            click.echo(text, nl=False)

    try:
        res = run(track=track, vehicle=vehicle, start=start, length=length, nfe=nfe, ncp=ncp,
                  numerical=not no_numerical, solve=do_solve, solver=solver, stream=_Tee(),
                  echo=click.echo)
    except (ValueError, OSError, SolverNotFoundError) as exc:
        _fail(str(exc))
    if report:
        Path(report).write_text(buf.getvalue())
        click.echo(f"report written to {report}")
    warnings = res["structural_warnings"] + res["numerical_warnings"]
    click.echo(f"{len(warnings)} warnings; degrees of freedom after fixing the controls: "
               f"{res['degrees_of_freedom']}; units consistent in: {', '.join(res['units']['checked'])}")


@main.command()
def tracks():
    """List the tracks shipped with the package."""
    from .track import available_tracks
    for name in available_tracks():
        click.echo(name)


@main.command()
def vehicles():
    """List the vehicle files shipped with the package."""
    from .vehicle import available_vehicles
    for name in available_vehicles():
        click.echo(name)


if __name__ == "__main__":  # pragma: no cover
    main()
