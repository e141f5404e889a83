"""The commands that describe: ``pyomo-lap diagnose``, ``options``, ``channels``, ``compile``,
``tracks``, ``vehicles`` (and the vehicle-file template, :func:`vehicle_template`).
"""
from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import click
import pandas as pd

from ..api import SOLVE_CONFIG
from ..api.diagnose import diagnose as run
from ..folders.writer import ResultsWriter
from ..ocp.build import OCP_CONFIG, record_rows
from ..ocp.options import CLI_OWNED, options_table
from ..results.channels import channel_markdown, channel_text, describe
from ..solvers.lap.precompile import compile_ahead
from ..solvers.solve import SolverNotFoundError
from ..track.loading import bundled_tracks
from ..vehicle.car import available_vehicles, load_vehicle
from ..vehicle.files import bound_texts
from ..vehicle.schema import (
    MAX_STATIC_SAG,
    OPTIONAL_KEYS,
    OPTIONAL_SECTIONS,
    SECTIONS,
    SETTINGS,
    VehicleParameters,
)
from .base import (
    WRITES_NOTHING,
    _checked,
    _Echo,
    _fail,
    _fail_error,
    _flag,
    _unexpected,
    _verbosity,
    job_options,
    main,
    writes,
)


@writes("--report FILE, added to its folder")
@main.command()
@job_options("track", "vehicle", "start", "length", "nfe", "ncp", start=500.0, length=100.0, nfe=5)
@click.option("--solve", "do_solve", is_flag=True, help="solve first and diagnose the optimum")
@job_options("solver")
@click.option("--no-numerical", is_flag=True, help="structural checks only")
@click.option("--report", default=None, type=click.Path(dir_okay=False),
              help="also write the toolbox's reports to this file")
def diagnose(track, vehicle, start, length, nfe, ncp, do_solve, solver, no_numerical, report):
    """Run the IDAES diagnostics toolbox (structural and numerical checks) and a units check
    on the model of a short sector."""
    _checked({"start": start, "length": length, "nfe": nfe, "ncp": ncp})
    if nfe > 200:
        _fail(f"--nfe {nfe}: expected an integer between 2 and 200 (diagnose a short sector)")
    buf = __import__("io").StringIO()
    writer = _report_writer(report)              # checked before anything is built

    class _Tee:
        def write(self, text):
            buf.write(text)
            if _verbosity() >= 0:
                click.echo(text, nl=False)

    try:
        try:
            res = run(track=track, vehicle=vehicle, start=start, length=length, nfe=nfe, ncp=ncp,
                      numerical=not no_numerical, solve=do_solve, solver=solver, stream=_Tee(),
                      echo=_Echo(_verbosity()))
        except (ValueError, OSError, SolverNotFoundError) as exc:
            _fail_error(exc)
        if writer is not None:
            writer.write_text(Path(report).name, buf.getvalue())
            writer.commit()
            click.echo(f"report written to {report}")
    finally:
        if writer is not None:
            writer.abort()
            writer.release()
    warnings = res["structural_warnings"] + res["numerical_warnings"]
    click.echo(f"{len(warnings)} warnings; degrees of freedom after fixing the controls: "
               f"{res['degrees_of_freedom']}; units consistent in: {', '.join(res['units']['checked'])}")


def _report_writer(report):
    """The claimed writer of diagnose's ``--report`` file (add mode into its folder,
    :class:`pyomo_lap.folders.writer.ResultsWriter`), or None; a link or a file of the user's
    of that name stops with exit 2, before anything is built."""
    if not report:
        return None
    try:
        return ResultsWriter.adding(Path(report).parent, "diagnose",
                                    names=[Path(report).name]).claim()
    except (ValueError, OSError) as exc:
        _fail_error(exc)


@writes(WRITES_NOTHING)
@main.command()
@click.option("--markdown", is_flag=True, help="as the Markdown tables of the documentation's "
              "options page (docs/options.md)")
def options(markdown):
    """List every option with its default, domain and meaning: the job's (`solve`'s own
    options, the keywords of pyomo_lap.solve_sector) and the optimal control problem's
    (`--ocp-option KEY=VALUE`); both tables come from the one declaration of each."""
    if markdown:
        click.echo(job_options_table(), nl=False)
        click.echo(options_table(), nl=False)
        return
    click.echo("job options (pyomo-lap solve --OPTION, pyomo_lap.solve_sector(OPTION=...)):")
    for key in SOLVE_CONFIG.keys():
        cv = SOLVE_CONFIG.get(key)
        click.echo(f"  {_flag(key):18s} {key:16s} default {cv.value()!r}")
    click.echo("options of the optimal control problem (--ocp-option KEY=VALUE; "
               "ocp_options={...}):")
    for key in OCP_CONFIG.keys():
        if key not in CLI_OWNED:
            click.echo(f"  {key:28s} default {OCP_CONFIG.get(key).value()!r}")


def job_options_table() -> str:
    """The job's options (:data:`pyomo_lap.api.SOLVE_CONFIG`) as a Markdown table with their
    command-line spelling (``docs/options.md`` holds it; ``pyomo-lap options --markdown``)."""
    return options_table(config=SOLVE_CONFIG, flags=_flag)


@writes(WRITES_NOTHING)
@main.command()
@click.argument("names", nargs=-1, metavar="[NAME ...]")
@click.option("--markdown", is_flag=True, help="as the Markdown table of docs/channels.md")
def channels(names, markdown):
    """What each column of trajectory.csv is: unit, meaning, sign convention, source (the
    paper's equation or the code) and, for one wheel's or one axle's channels, which one
    (11 front-left, 12 front-right, 21 rear-left, 22 rear-right). Without NAME: every column
    of the full, multibody and single-track models' tables."""
    for name in names:           # every name checked before anything is printed
        try:
            describe(name)
        except KeyError as exc:
            _fail(exc.args[0])
    columns = list(names) or None
    click.echo(channel_markdown(columns) if markdown else channel_text(columns), nl=False)


@writes(WRITES_NOTHING)
@main.command("compile")
@click.option("--vehicle", default="fsae", show_default=True,
              help="the car the rows are recorded with (the libraries serve every car)")
def compile_(vehicle):
    """Compile the full model's point functions (rows, Jacobian, Hessian of the Lagrangian)
    to machine code now, for an open sector and a closed lap, with a fixed setup and with
    free parameters, so that the first solve is as fast as the later ones; the set-up
    (scripts/bootstrap.sh) runs it. Without it the first solve of each of these compiles
    them while the model is built (and says so). Cached on disk (PYOMO_LAP_CACHE, or the
    user's cache folder); already compiled libraries are checked, not rebuilt."""
    t0 = time.perf_counter()
    echo = click.echo if _verbosity() >= 0 else (lambda *_: None)
    echo("compiling the full model's point functions (once on this machine, any car) ...")
    try:
        rows = compile_ahead(vehicle, echo=echo, record=record_rows)
    except (RuntimeError, ValueError) as exc:
        _fail(str(exc))
    n = sum(not r["cached"] for r in rows)
    click.echo(f"point functions ready: {n} compiled, {len(rows) - n} already there, "
               f"{time.perf_counter() - t0:.1f} s")


@writes(WRITES_NOTHING)
@main.command()
def tracks():
    """List the tracks shipped with the package: name (for --track), what it is, its kind
    (a centreline, or straights and arcs), length, elevation range, closed or open, and where
    the data come from (repository and commit; provenance, processing and repairs:
    data/tracks/README.md and each track's .json or .toml)."""
    try:

        rows = bundled_tracks()
    except ValueError as exc:
        _fail(str(exc))
    except Exception as exc:  # noqa: BLE001
        _unexpected(exc)
    if not rows:
        click.echo("no bundled tracks found")
        return
    df = pd.DataFrame([{
        "name": r["name"],
        "track": r["display_name"] + (f" ({r['country']})" if r["country"] else ""),
        "kind": r["kind"],
        "length [m]": f"{r['length_m']:.1f}",
        "elevation [m]": f"{r['elevation_min_m']:.1f}-{r['elevation_max_m']:.1f}",
        "loop": {True: "closed", False: "open"}.get(r["closed"], "?"),
        "source": (f"{r['repository']} @ {r['commit'][:12]}" if r["commit"]
                   else r["repository"] or "-"),
    } for r in rows])
    width = {c: max(len(c), int(df[c].str.len().max())) for c in df.columns}
    right = ("length [m]", "elevation [m]")
    text = df.to_string(index=False, justify="left", formatters={
        c: (lambda x, n=width[c], r=c in right: str(x).rjust(n) if r else str(x).ljust(n))
        for c in df.columns})
    for line in text.splitlines():
        click.echo(line.rstrip())


def _range_text(info) -> str:
    """The range of a :class:`~pyomo_lap.vehicle.schema.VehicleParameters` field from its
    bounds (``> 0 and <= 10000``), '' when it has none."""
    lo, hi = bound_texts(info)
    extra = info.json_schema_extra or {}
    if lo is None and extra.get("minimum") is not None:      # optional fields
        lo = f">= {extra['minimum']:g}"
    if hi is None and extra.get("maximum") is not None:
        hi = f"<= {extra['maximum']:g}"
    return " and ".join(t for t in (lo, hi) if t)


_EXAMPLE_VALUES = {
    "T_b1": 3000.0, "T_b2": 2000.0, "alpha_max": 0.166,
    "power_curve_speed": [0.0, 10.0, 20.0, 40.0, 60.0], "power_curve_power": [0.0, 30e3, 45e3, 47e3, 47e3],
    "engine_speed": [100.0, 400.0, 700.0, 1000.0], "engine_torque": [60.0, 75.0, 70.0, 55.0],
    "gear_ratios": [2.8, 2.0, 1.6, 1.3, 1.1], "final_drive": 3.2, "drivetrain_efficiency": 0.9,
    # [fuel]: thermal_efficiency (with lower_heating_value) OR the map, and mass_start
    "fuel_lhv": 43.0e6, "fuel_efficiency": 0.25, "fuel_map_power": [0.0, 20e3, 47e3],
    "fuel_map_flow": [2e-4, 1.6e-3, 5e-3], "fuel_mass": 5.0,
    # [hybrid]: the 2014 F1 rules (models/f1_2014_hybrid.toml), battery at half charge
    "hybrid_deploy_power_max": 120e3, "hybrid_harvest_power_max": 120e3, "hybrid_deploy_energy": 4e6,
    "hybrid_harvest_energy": 2e6, "hybrid_capacity": 4e6, "hybrid_deploy_efficiency": 1.0,
    "hybrid_harvest_efficiency": 1.0, "hybrid_soc_start": 2e6, "hybrid_soc_end": 2e6,
}
"""Values shown (commented out) in the template for keys the car leaves out."""


def _toml_value(value) -> str:
    """A value as TOML: a float, a string in quotes or an array of floats."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(repr(float(v)) for v in value) + "]"
    return repr(float(value))


def vehicle_template(base: str = "fsae") -> str:
    """A vehicle file (TOML) with every key of the schema, each preceded by comments giving
    its meaning, unit and range, generated from
    :class:`pyomo_lap.vehicle.schema.VehicleParameters` (descriptions, bounds, units),
    :data:`~pyomo_lap.vehicle.schema.SECTIONS` and
    :data:`~pyomo_lap.vehicle.schema.OPTIONAL_SECTIONS`; the values are those of the bundled
    car ``base`` (or a vehicle file's path), so the text loads as a valid car
    (``pyomo-lap vehicles --template > mycar.toml``). The car's name is left to the file's
    name; an optional section the car does not have is written commented out.

    Raises
    ------
    ValueError
        ``base`` is no bundled car and no readable vehicle file, or not a file of the six-joint
        car (:class:`~pyomo_lap.vehicle.schema.VehicleParameters`).
    """
    car = load_vehicle(base)
    if not isinstance(car, VehicleParameters):
        raise ValueError(f"vehicle {base!r} is a {type(car).__name__} file, not one of the "
                         "six-joint car's (VehicleParameters); the template is of the latter: "
                         "start from fsae, f1_2014 or bmw_320i")
    fields = VehicleParameters.model_fields
    lines = [
        "# Vehicle file of pyomo_lap (TOML): every key of the schema, with its meaning, unit",
        "# and accepted range above it (pyomo_lap.vehicle.schema.VehicleParameters).",
        *textwrap.wrap(f"Generated by `pyomo-lap vehicles --template {base}`; the values are "
                       f"those of the car {car.name!r} ({car.description or 'no description'}).",
                       90, initial_indent="# ", subsequent_indent="# "),
        "# Replace them with your car's, in SI units (kg, m, s, N, rad, W: P_max in W, not kW;",
        "# wheel rates in N/m, not N/mm; angles in rad, not deg), and say where each value",
        "# comes from (a comment; mark the values you had to choose, and why).",
        "# Check the file with `pyomo-lap check --vehicle mycar.toml`; solve with",
        "# `pyomo-lap solve --vehicle mycar.toml`. Every problem is reported at once, naming the",
        "# [section] key, the value and what was expected. Besides the ranges: total mass >",
        "# unsprung; Ixx, Iyy, Izz satisfy the triangle inequality; hq1, hq2 < h; width >=",
        f"# max(t1, t2); static sag (total - unsprung) g / (2 k1 + 2 k2) <= {MAX_STATIC_SAG:g} m;",
        "# fz_min < the smaller static wheel load.",
        "",
        "# name of the car (optional; default: the file's name without .toml)",
        f"# name = {json.dumps(car.name)}",
        "# free text: what the car is and where its data come from",
        f"description = {json.dumps(car.description or '')}",
    ]

    def key_lines(section: str, key: str, attr: str, commented: bool) -> list:
        info = fields[attr]
        unit = (info.json_schema_extra or {}).get("unit", "")
        meaning = (info.description or "").rsplit(" [", 1)[0]
        rng = _range_text(info)
        value = getattr(car, attr)
        optional = f"{section}.{key}" in OPTIONAL_KEYS or key in SETTINGS.get(section, {})
        out = [f"# {meaning}",
               f"#   unit: {unit}" + (f"; range: {rng}" if rng else "")
               + ("; optional" if optional else "")]
        if value is None:
            value = _EXAMPLE_VALUES.get(attr, getattr(load_vehicle("fsae"), attr))
            commented = True
        out.append(f"{'# ' if commented else ''}{key} = {_toml_value(value)}")
        return out

    for section, keys in SECTIONS.items():
        lines += ["", f"[{section}]"]
        for key, attr in keys.items():
            lines += key_lines(section, key, attr, False)
        for key, attr in SETTINGS.get(section, {}).items():
            lines += key_lines(section, key, attr, False)
    for section, keys in SETTINGS.items():
        if section in SECTIONS:
            continue
        absent = all(getattr(car, attr) is None for attr in keys.values())
        lines += ["", f"# optional section [{section}]"
                  + (f" (not given for {car.name!r}: remove the '# ' to use it)" if absent else ""),
                  f"{'# ' if absent else ''}[{section}]"]
        for key, attr in keys.items():
            lines += key_lines(section, key, attr, absent)
    for section, keys in OPTIONAL_SECTIONS.items():
        absent = all(getattr(car, attr) is None for attr in keys.values())
        lines += ["", f"# optional section [{section}]: all its keys or none"
                  + (f" (not given for {car.name!r}: remove the '# ' to use it)" if absent else ""),
                  f"{'# ' if absent else ''}[{section}]"]
        for key, attr in keys.items():
            lines += key_lines(section, key, attr, absent)
    return "\n".join(lines) + "\n"


@writes(WRITES_NOTHING)
@main.command()
@click.argument("name", required=False, default=None)
@click.option("--template", is_flag=True,
              help="print a vehicle file with every key, its meaning, unit and range as "
                   "comments and the values of NAME (default: fsae), e.g. "
                   "`pyomo-lap vehicles --template > mycar.toml`")
def vehicles(name, template):
    """List the vehicle files shipped with the package (name and description); with
    --template, print a vehicle file to start your own car from."""
    if template:
        try:
            click.echo(vehicle_template(name or "fsae"), nl=False)
        except ValueError as exc:
            _fail(str(exc))
        return
    names = [name] if name else available_vehicles()
    for n in names:
        try:
            car = load_vehicle(n)
        except ValueError as exc:
            _fail(str(exc))
        click.echo(f"{n:<12} {car.description}" if car.description else n)
