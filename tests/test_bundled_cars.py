"""The bundled cars and the vehicle template (issue 25): `pyomo-lap vehicles --template` writes
every key with its unit, range and meaning and loads back as the car it was made from; the
cars from published data (Perantoni & Limebeer's F1 car, the CommonRoad BMW 320i) map the
published numbers as their comments say; every bundled car solves a closed lap."""
from __future__ import annotations

import math
import re

import pytest
from click.testing import CliRunner

from pyomo_lap.cli import main
from pyomo_lap.vehicle.car import available_vehicles, load_vehicle, models_dir
from pyomo_lap.vehicle.schema import (OPTIONAL_SECTIONS, PARAMETER_KEYS, SECTIONS,
                                      VehicleParameters, field_of)

CARS = ("fsae", "f1_2014", "bmw_320i")


@pytest.mark.unit
def test_the_published_cars_are_bundled():
    assert set(CARS) <= set(available_vehicles())
    out = CliRunner().invoke(main, ["vehicles"]).output
    for car in CARS:
        assert re.search(rf"^{car}\s+\S", out, re.M), out


@pytest.mark.unit
@pytest.mark.parametrize("car", CARS)
def test_template_loads_back_as_the_car(car, tmp_path):
    """template -> file -> load_vehicle: every parameter equal to the car's; the name comes
    from the file's name."""
    r = CliRunner().invoke(main, ["vehicles", car, "--template"])
    assert r.exit_code == 0, r.output
    f = tmp_path / "mycar.toml"
    f.write_text(r.output)
    mine, ref = load_vehicle(f), load_vehicle(car)
    assert mine.name == "mycar"
    assert mine.model_dump(exclude={"name"}) == ref.model_dump(exclude={"name"})


@pytest.mark.unit
def test_template_says_unit_range_and_meaning_of_every_key(tmp_path):
    """Above each key: its meaning (the schema's description) and its unit and range (the
    schema's bounds, written out independently here from the field's metadata)."""
    text = CliRunner().invoke(main, ["vehicles", "--template"]).output
    lines = text.splitlines()
    for key in PARAMETER_KEYS:
        section, name = key.split(".")
        info = VehicleParameters.model_fields[field_of(key)]
        at = next(i for i, ln in enumerate(lines) if re.match(rf"^(# )?{re.escape(name)} = ", ln)
                  and any(f"[{section}]" in x for x in lines[:i][-60:]))
        meaning, units = lines[at - 2], lines[at - 1]
        assert meaning == "# " + info.description.rsplit(" [", 1)[0], (key, meaning)
        assert units.startswith(f"#   unit: {info.json_schema_extra['unit']}"), (key, units)
        bounds = {type(m).__name__: getattr(m, type(m).__name__.lower(), None) for m in info.metadata}
        for word, op in (("Gt", ">"), ("Ge", ">="), ("Lt", "<"), ("Le", "<=")):
            if word in bounds:
                assert f"{op} {bounds[word]:g}" in units, (key, units)
    for section in list(SECTIONS) + list(OPTIONAL_SECTIONS):
        assert re.search(rf"^(# )?\[{section}\]$", text, re.M)
    r = CliRunner().invoke(main, ["vehicles", "nocar", "--template"])
    assert r.exit_code == 2 and "unknown vehicle 'nocar'" in r.output


@pytest.mark.unit
def test_each_published_car_names_its_source_and_its_choices():
    for car in ("f1_2014", "bmw_320i"):
        text = (models_dir() / f"{car}.toml").read_text()
        assert "Source:" in text and "CHOSEN" in text
    assert "10.1080/00423114.2014.889315" in (models_dir() / "f1_2014.toml").read_text()


@pytest.mark.unit
def test_f1_car_maps_the_published_tyre_and_aero():
    """Perantoni & Limebeer's tyre (fastest-lap limebeer-2014-f1: mu_y 1.80 at 2000 N, 1.45
    at 6000 N, peak at 9 and 8 deg, Qy = 1.9) and aerodynamics (cl = 3.0 at 0.1 m behind G):
    the Magic Formula's peak friction and cornering stiffness at the two reference loads, and
    the front share of the downforce."""
    p = load_vehicle("f1_2014")
    sy = math.pi / (2 * math.atan(1.9))
    for fz, mu, lam in ((2000.0, 1.80, 9.0), (6000.0, 1.45, 8.0)):
        assert p.mu_y0 * (1 + p.pD2 * (fz - p.Fz0) / p.Fz0) == pytest.approx(mu, rel=1e-5)
        c_alpha = p.pK1 * p.Fz0 * math.sin(2 * math.atan(fz / (p.pK2 * p.Fz0)))
        assert c_alpha == pytest.approx(1.9 * sy * mu * fz / math.radians(lam), rel=1e-5)
    assert p.Cz1 + p.Cz2 == pytest.approx(3.0)
    assert p.Cz1 / (p.Cz1 + p.Cz2) == pytest.approx((p.a2 - 0.1) / (p.a1 + p.a2), rel=1e-4)
    # the source's inertias are its one rigid body's: the sprung body's plus the unsprung's
    assert p.Izz + p.unsprung_inertia[2] == pytest.approx(450.0)
    assert p.Iyy + p.unsprung_inertia[1] == pytest.approx(425.0)
    assert p.Ixx + p.unsprung_inertia[0] == pytest.approx(112.5)
    assert (p.m, p.a1, p.a2, p.t1, p.h, p.S, p.Cx, p.P_max) == (
        660.0, 1.8, 1.6, 1.46, 0.3, 1.5, 0.9, 735.499e3)


@pytest.mark.unit
def test_bmw_maps_the_published_us_units():
    """CommonRoad's vehicle 2 in slug, ft, lbf: converted independently here."""
    slug, ft = 14.5939029, 0.3048
    p = load_vehicle("bmw_320i")
    assert p.m == pytest.approx(74.91452 * slug, abs=0.05)
    assert p.m_u == pytest.approx(2 * 4.371153 * slug, abs=0.05)
    assert p.m - p.m_u == pytest.approx(66.17221 * slug, abs=0.1)           # SMASS
    assert (p.a1, p.a2) == (pytest.approx(3.793293 * ft, abs=1e-4), pytest.approx(4.667707 * ft, abs=1e-4))
    assert (p.t1, p.t2, p.h) == (pytest.approx(4.55 * ft, abs=1e-4), pytest.approx(4.475 * ft, abs=1e-4),
                                 pytest.approx(2.01355 * ft, abs=1e-4))
    assert p.Ixx == pytest.approx(152.871 * slug * ft ** 2, abs=0.05)
    assert p.Iyy == pytest.approx(1154.888 * slug * ft ** 2, abs=0.05)
    assert p.c1 == pytest.approx(122.3966 * slug, abs=1) and p.c2 == pytest.approx(112.9981 * slug, abs=1)
    # the stiffness: K_y = 21.92 f_z (CommonRoad's simplification) within 0.4 % up to 9 kN
    for fz in (1000.0, 3000.0, 6000.0, 9000.0):
        c_alpha = p.pK1 * p.Fz0 * math.sin(2 * math.atan(fz / (p.pK2 * p.Fz0)))
        assert c_alpha == pytest.approx(21.92 * fz, rel=4e-3)
    assert (p.mu_y0, p.mu_x0, p.C, p.E, p.pD2) == (1.0489, 1.1739, 1.3507, -0.0074722, 0.0)


# ---- every car solves a closed lap -----------------------------------------------------------------

from _stadium import LENGTH, RADIUS, STRAIGHT, WIDTH  # noqa: E402
from _stadium import write as write_stadium  # noqa: E402


def lap_time_bounds(p, length):
    """Independent bounds of the lap time of car ``p`` on the stadium [s]: at least the length
    of the inner edge at the top speed of the power-drag balance, P = rho/2 S Cx v^3 (the
    fastest the car can go anywhere); at most the length at 0.7 x the speed of a steady turn of
    the centreline's radius with the peak friction, m v^2/R = mu_y0 (m g + rho/2 S (Cz1 + Cz2) v^2)."""
    k = 0.5 * p.rho * p.S
    v_top = (p.P_max / (k * p.Cx)) ** (1 / 3)
    inner = 2 * STRAIGHT + 2 * math.pi * (RADIUS - WIDTH / 2)
    v_turn = math.sqrt(p.mu_y0 * p.m * p.gravity / (p.m / RADIUS - p.mu_y0 * k * (p.Cz1 + p.Cz2)))
    return inner / v_top, length / (0.7 * v_turn)


@pytest.mark.integration
@pytest.mark.parametrize("car", [pytest.param(c, marks=pytest.mark.xdist_group("stadium_lap"))
                                 if c == "fsae" else c for c in CARS])
def test_every_bundled_car_solves_a_closed_lap(car, tmp_path, request):
    """The closed lap of the stadium, coarse mesh (20 m elements): solved to optimality, the
    lap time within the independent bounds. The FSAE car's is the session's shared lap
    (tests/_shared.py: the same ``solve_sector`` call, written to a folder)."""
    from pyomo_lap import solve_sector
    f, L = write_stadium("tum", tmp_path), LENGTH
    if car == "fsae":
        lap = request.getfixturevalue("stadium_lap")
        ok, termination, summary = lap.ok, lap.termination, lap.summary
    else:
        _, rep, _, summary = solve_sector(track=str(f), vehicle=car, periodic=True, length=None,
                                          ocp_options={"element_length": 20.0}, out_dir=None,
                                          echo=lambda *a: None)
        ok, termination = rep.ok, rep.termination_condition
    assert ok, termination
    assert summary["length_m"] == pytest.approx(L, rel=1e-4)
    lo, hi = lap_time_bounds(load_vehicle(car), L)
    assert lo < summary["lap_time_s"] < hi, (lo, summary["lap_time_s"], hi)
