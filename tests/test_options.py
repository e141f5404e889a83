"""The OCP's options from their one declaration (pyomo_lap.ocp.build.OCP_CONFIG): validation for the
API and the CLI, the documentation's tables (docs/options.md), and that a given option reaches
the model."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pyomo_lap.ocp.options import CLI_OWNED, check_ocp_options, options_table, parse_option_value

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.unit
def test_the_options_page_holds_the_generated_tables():
    text = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- options-table:start -->\n(.*?)<!-- options-table:end -->", text, re.S)
    assert m, "docs/options.md lacks the options table markers"
    assert m.group(1) == options_table()
    from pyomo_lap.ocp.build import OCP_CONFIG
    for key in OCP_CONFIG.keys():          # every declared option is documented
        assert f"| `{key}` |" in m.group(1)
    from pyomo_lap.api import SOLVE_CONFIG
    from pyomo_lap.cli.info import job_options_table
    m = re.search(r"<!-- job-options-table:start -->\n(.*?)<!-- job-options-table:end -->", text, re.S)
    assert m, "docs/options.md lacks the job options table markers"
    assert m.group(1) == job_options_table()
    for key in SOLVE_CONFIG.keys():
        assert f"| `{key}` |" in m.group(1)
    # `pyomo-lap options --markdown` prints exactly these two tables
    from pyomo_lap.cli import main
    out = CliRunner().invoke(main, ["options", "--markdown"])
    assert out.exit_code == 0 and out.output == job_options_table() + options_table()


@pytest.mark.unit
def test_job_options_are_declared_once_and_the_cli_is_derived_from_them():
    """Every job option of SOLVE_CONFIG is an option of `pyomo-lap solve` with the same
    default and choices; the OCP's own among them are OCP_CONFIG's declarations."""
    import click

    from pyomo_lap.api import OWN_OCP_OPTIONS, SOLVE_CONFIG
    from pyomo_lap.cli.base import _flag
    from pyomo_lap.cli.run import solve
    from pyomo_lap.ocp.build import OCP_CONFIG, VEHICLE_MODELS
    params = {p.name: p for p in solve.params}
    for key in SOLVE_CONFIG.keys():
        flag = _flag(key)
        p = next(p for p in solve.params if flag in p.opts)
        cv = SOLVE_CONFIG.get(key)
        if not (getattr(p, "is_flag", False) or p.multiple or cv.value() is None):
            default = cv.value()
            assert p.default == (str(default) if p.type is click.STRING else default), key
    for key in OWN_OCP_OPTIONS:
        assert SOLVE_CONFIG.get(key)._domain is OCP_CONFIG.get(key)._domain
        assert SOLVE_CONFIG.get(key)._description == OCP_CONFIG.get(key)._description
    assert list(params["model"].type.choices) == list(VEHICLE_MODELS)
    assert list(params["scheme"].type.choices) == ["LAGRANGE-RADAU", "LAGRANGE-LEGENDRE"]


@pytest.mark.unit
def test_values_are_converted_and_checked_by_their_domains():
    assert parse_option_value("true") is True and parse_option_value("False") is False
    assert parse_option_value("5") == 5 and parse_option_value("2.5e-3") == 2.5e-3
    assert parse_option_value("qdd,W3J") == ("qdd", "W3J")
    assert parse_option_value("squared") == "squared"
    got = check_ocp_options({"adherence": "squared", "w_steer_jump": 2, "lift": ("qdd",)})
    assert got == {"adherence": "squared", "w_steer_jump": 2.0, "lift": ("qdd",)}
    assert isinstance(got["w_steer_jump"], float)
    assert check_ocp_options(None) == {}


@pytest.mark.unit
@pytest.mark.parametrize("options, words", [
    ({"adherance": "squared"}, ["'adherance'", "unknown", "adherence", "element_length"]),
    ({"adherence": "cubic"}, ["adherence", "'cubic'", "below-peak", "squared"]),
    ({"w_complementarity": -1.0}, ["w_complementarity", "-1.0", "non-negative"]),
    ({"K_f": 1e-5}, ["K_f", "w_complementarity", "dimensionless"]),     # a retired option
    ({"nfe": 10}, ["'nfe'", "its own argument"]),
])
def test_bad_options_are_refused_naming_the_option_and_value(options, words):
    with pytest.raises(ValueError) as err:
        check_ocp_options(options)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


@pytest.mark.unit
def test_every_option_owned_by_an_argument_is_declared():
    from pyomo_lap.ocp.build import OCP_CONFIG
    assert all(k in OCP_CONFIG for k in CLI_OWNED)


@pytest.mark.unit
@pytest.mark.parametrize("args, words", [
    (["--ocp-option", "adherence"], ["--ocp-option", "KEY=VALUE"]),
    (["--ocp-option", "adherence=cubic"], ["adherence", "cubic"]),
    (["--ocp-option", "ncp=3"], ["'ncp'", "its own argument"]),
])
def test_cli_refuses_bad_ocp_options_before_building(args, words, tmp_path):
    from pyomo_lap.cli import main
    res = CliRunner().invoke(main, ["solve", *args, "--out", str(tmp_path / "r")])
    assert res.exit_code == 2, res.output
    for w in words:
        assert w in res.output, (w, res.output)
    assert "building" not in res.output and not (tmp_path / "r").exists()


@pytest.mark.integration
def test_ocp_options_reach_the_model_and_the_summary(tmp_path):
    """adherence='squared' writes one adherence row a tyre where 'below-peak' writes up to two
    (counted on the built models), element_length sets the mesh; the summary records them."""
    import json

    import pyomo.environ as pyo

    from pyomo_lap import build_model, load_track, load_vehicle, solve_sector
    tr, p = load_track("nordschleife"), load_vehicle("fsae")

    def n_adherence(**kw):
        m = build_model(tr, p, start=500, length=60, element_length=6.0, mesh="uniform", **kw)
        return m, sum(1 for _ in m.adherence.values())
    m1, below = n_adherence()
    m2, squared = n_adherence(adherence="squared")
    assert squared < below <= 2 * squared
    m, rep, df, summary = solve_sector(start=500, length=60, out_dir=tmp_path / "r", echo=lambda *_: None,
                                       ocp_options={"adherence": "squared", "element_length": 6.0,
                                                    "mesh": "uniform"})
    assert rep.ok and summary["nfe"] == 10 and summary["mesh"]["placement"] == "uniform"
    assert sum(1 for _ in m.adherence.values()) == squared
    saved = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert saved["ocp_options"]["adherence"] == "squared"
    assert saved["ocp_options"]["element_length"] == 6.0 and saved["ocp_options"]["mesh"] == "uniform"
    assert pyo.value(m.lap_time) > 0


@pytest.mark.unit
def test_cli_model_choices_are_the_registry():
    """The CLI lists the models literally (importing the OCP would slow every --help); they must
    be the registry's keys."""
    from pyomo_lap.cli.run import solve
    from pyomo_lap.ocp.build import VEHICLE_MODELS
    opt = next(p for p in solve.params if p.name == "model")
    assert list(opt.type.choices) == list(VEHICLE_MODELS)
