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
@click.option("--full-lap", is_flag=True,
              help="the whole closed lap, periodic in every state (default N = 2000, ncp = 2)")
@click.option("--nfe", default=None, type=int,
              help="finite elements N  [default: 400, or 2000 with --full-lap]")
@click.option("--ncp", default=None, type=int,
              help="collocation points per element  [default: 3, or 2 with --full-lap]")
@click.option("--scheme", default="LAGRANGE-RADAU", show_default=True,
              type=click.Choice(["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"]), help="collocation scheme")
@click.option("--initial-speed", default="quasi-steady", show_default=True,
              help="speed at the sector start [m/s], 'quasi-steady' or 'free'")
@click.option("--solver", default="ipopt", show_default=True, help="Pyomo solver name")
@click.option("--out", "out_dir", default="results", show_default=True,
              type=click.Path(file_okay=False), help="output folder")
@click.option("--quiet", is_flag=True, help="do not stream the solver's iterations")
def solve(track, vehicle, start, length, full_lap, nfe, ncp, scheme, initial_speed, solver, out_dir,
          quiet):
    """Solve the minimum-time problem on a sector (or, with --full-lap, the closed lap) and
    write trajectory.csv, results.xlsx and summary.json to OUT."""
    from .api import solve_sector  # heavy imports after argument parsing
    from .solve import SolverNotFoundError

    ctx = click.get_current_context()
    if full_lap:
        given = [f"--{n}" for n in ("start", "length", "initial_speed")
                 if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
        if given:
            _fail(f"--full-lap solves the whole closed lap; it cannot be combined with "
                  f"{', '.join(g.replace('_', '-') for g in given)}")
    nfe = nfe if nfe is not None else (2000 if full_lap else 400)
    ncp = ncp if ncp is not None else (2 if full_lap else 3)

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
        solve_sector(track=track, vehicle=vehicle, start=0.0 if full_lap else start,
                     length=None if full_lap else length, periodic=full_lap, nfe=nfe, ncp=ncp,
                     scheme=scheme, initial_speed=isp, solver=solver, out_dir=Path(out_dir),
                     tee=not quiet, echo=click.echo)
    except KeyboardInterrupt:
        _fail(f"interrupted; nothing was written to {out_dir}", code=130)
    except (ValueError, OSError, SolverNotFoundError) as exc:
        _fail(str(exc))
    except RuntimeError as exc:
        _fail(str(exc), code=1)


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
