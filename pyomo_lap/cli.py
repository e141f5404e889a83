"""Command-line interface: ``pyomo-lap solve``.

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
@click.option("--model", default="full", show_default=True,
              type=click.Choice(["full", "single-track"]),
              help="vehicle model: the six-joint Lie-group car or the single-track (bicycle, Fiala tyres)")
@click.option("--initial-guess", default="cold", show_default=True,
              type=click.Choice(["cold", "single-track"]),
              help="full model: start from the single-track solution on the same mesh")
@click.option("--solver", default="ipopt", show_default=True, help="Pyomo solver name")
@click.option("--out", "out_dir", default="results", show_default=True,
              type=click.Path(file_okay=False), help="output folder")
@click.option("--quiet", is_flag=True, help="do not stream the solver's iterations")
def solve(track, vehicle, start, length, nfe, ncp, scheme, initial_speed, model, initial_guess,
          solver, out_dir, quiet):
    """Solve the minimum-time problem on a sector and write trajectory.csv, results.xlsx and
    summary.json to OUT."""
    from .api import solve_sector  # heavy imports after argument parsing
    from .solve import SolverNotFoundError

    if nfe < 2 or nfe > 100000:
        _fail(f"--nfe {nfe}: expected an integer between 2 and 100000")
    if ncp < 1 or ncp > 10:
        _fail(f"--ncp {ncp}: expected an integer between 1 and 10")
    if not math.isfinite(length) or length <= 0:
        _fail(f"--length {length}: expected a positive, finite length in metres")
    if not math.isfinite(start) or start < 0:
        _fail(f"--start {start}: expected a finite distance >= 0 m from the track's start")
    try:
        isp = initial_speed if initial_speed in ("quasi-steady", "free") else float(initial_speed)
    except ValueError:
        _fail(f"--initial-speed {initial_speed!r}: expected a speed in m/s, 'quasi-steady' or 'free'")
    try:
        solve_sector(track=track, vehicle=vehicle, start=start, length=length, nfe=nfe, ncp=ncp,
                     scheme=scheme, initial_speed=isp, model=model, initial_guess=initial_guess,
                     solver=solver, out_dir=Path(out_dir),
                     tee=not quiet, echo=click.echo)
    except KeyboardInterrupt:
        _fail(f"interrupted; nothing was written to {out_dir}", code=130)
    except (ValueError, OSError, SolverNotFoundError) as exc:
        _fail(str(exc))
    except RuntimeError as exc:
        _fail(str(exc), code=1)


@main.command()
@click.option("--out", "out_dir", default="results", show_default=True,
              type=click.Path(file_okay=False), help="results folder of `pyomo-lap solve`")
@click.option("--no-feedback", is_flag=True, help="skip the replay with steering feedback")
@click.option("--shooting", is_flag=True, help="also the local error of each element by shooting")
def validate(out_dir, no_feedback, shooting):
    """Replay the optimal controls in the time-domain simulation and measure the collocation
    defects of a solved sector; writes validation.json and defects.csv to OUT."""
    from .validate import validate_results
    try:
        validate_results(out_dir, feedback=not no_feedback, shooting=shooting, echo=click.echo)
    except (ValueError, OSError) as exc:
        _fail(str(exc))


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
