"""Vehicle files: the pydantic schema refuses every kind of bad input with a message naming the
file, the [section] key, the value and what was expected; the bundled car passes; the schema
documents units and ranges; property-based round trips of valid files."""
import json
import math
import re
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pyomo_lap.vehicle import car as veh
from pyomo_lap.vehicle.schema import OPTIONAL_KEYS, SECTIONS, SETTINGS, VehicleParameters
from pyomo_lap.vehicle.files import VehicleFileError

SETTING_FIELDS = {attr for keys in SETTINGS.values() for attr in keys.values()}

FSAE = veh.models_dir() / "fsae.toml"
FSAE_TEXT = FSAE.read_text()


def edited(tmp_path, edits, name="car.toml"):
    """The fsae file with ``key = value`` lines replaced: edits = {(section, key): text or None
    (delete the line)}; a key absent from the section is appended to it."""
    lines = FSAE_TEXT.splitlines()
    section = None
    done = set()
    out = []
    for line in lines:
        m = re.match(r"\s*\[(\w+)\]", line)
        if m:
            section = m.group(1)
        m = re.match(r"\s*(\w+)\s*=", line)
        key = (section, m.group(1)) if m else None
        if key in edits:
            done.add(key)
            if edits[key] is not None:
                out.append(f"{key[1]} = {edits[key]}")
            continue
        out.append(line)
        if m is None and re.match(r"\s*\[(\w+)\]", line):
            for (sec, k), v in edits.items():
                if sec == section and (sec, k) not in done and v is not None and \
                        not re.search(rf"^\s*{k}\s*=", FSAE_TEXT, re.M):
                    out.append(f"{k} = {v}")
                    done.add((sec, k))
    f = tmp_path / name
    f.write_text("\n".join(out) + "\n")
    return f


def load_error(path) -> VehicleFileError:
    with pytest.raises(VehicleFileError) as exc:
        veh.load_vehicle(path)
    return exc.value


# ------------------------------------------------------------------ the bundled car
@pytest.mark.unit
def test_bundled_vehicle_is_valid_and_matches_the_file():
    p = veh.load_vehicle("fsae")
    raw = tomllib.loads(FSAE_TEXT)
    for sec, keys in SECTIONS.items():
        for key, attr in keys.items():
            if key in raw[sec]:
                assert getattr(p, attr) == pytest.approx(float(raw[sec][key]))
            else:   # an optional key left out: its documented default
                assert f"{sec}.{key}" in OPTIONAL_KEYS, key
    # the defaults of the keys the file leaves out (their descriptions say them)
    assert p.tw1 == pytest.approx(1.40 - 1.21) and p.tw2 == pytest.approx(1.40 - 1.21)
    assert p.h_cp == 0.0 and p.drive_ratio == 0.0
    assert p.T_b1 is None and p.T_b2 is None and p.alpha_max is None
    assert p.tyre_model == "magic-formula" and p.combined_slip == "constraint"
    assert p.name == "fsae" and isinstance(p, VehicleParameters)
    # derived quantities by hand from Table 1
    assert p.l == pytest.approx(0.765 + 0.815)
    assert p.m_s == pytest.approx(240.0 - 40.0)
    assert p.static_loads[0] == pytest.approx(240.0 * 9.81 * 0.815 / (2 * 1.58), rel=1e-3)


@pytest.mark.unit
def test_schema_documents_units_and_ranges():
    schema = VehicleParameters.model_json_schema()
    props = schema["properties"]
    for name, info in VehicleParameters.model_fields.items():
        if name in ("name", "description"):
            continue
        assert re.search(r"\[[^\]]+\]$", info.description), (name, info.description)   # unit
        assert props[name].get("unit"), name
        if name in SETTING_FIELDS:       # choices and curves: their values are checked otherwise
            continue
        assert any(k in props[name] for k in ("exclusiveMinimum", "minimum")), name    # range
    assert props["delta_max"]["exclusiveMaximum"] == pytest.approx(1.2)
    assert "rad" in props["delta_max"]["description"]
    assert schema.get("additionalProperties") is False


# ------------------------------------------------------------------ bad values (one per kind)
# (edits, [section] key named, value shown, words of the expectation)
BAD_VALUES = [
    ({("mass", "total"): "-240.0"}, "[mass] total", "-240.0", "> 0"),                     # negative mass
    ({("mass", "total"): "0"}, "[mass] total", "0", "> 0"),                               # zero mass
    ({("mass", "total"): "240000.0"}, "[mass] total", "240000.0", "<= 10000"),           # grams
    ({("mass", "unsprung"): "300.0"}, "[mass] unsprung", "300.0", "less than the total mass"),
    ({("mass", "Izz"): "500.0"}, "[mass] Izz", "500.0", "triangle inequality"),
    ({("mass", "Ixx"): "-40.0"}, "[mass] Ixx", "-40.0", "> 0"),
    ({("geometry", "a1"): "765.0"}, "[geometry] a1", "765.0", "<= 10"),                  # mm
    ({("geometry", "hq1"): "0.5"}, "[geometry] hq1", "0.5", "< h"),                      # above G
    ({("geometry", "hq2"): "-0.1"}, "[geometry] hq2", "-0.1", ">= 0"),
    ({("geometry", "width"): "1.0"}, "[geometry] width", "1.0", "wider track"),
    ({("aero", "rho"): "1167.0"}, "[aero] rho", "1167.0", "<= 1.5"),                     # g/m^3
    ({("aero", "Cz1"): "-0.5"}, "[aero] Cz1", "-0.5", ">= 0"),
    ({("suspension", "k1"): "36.0", ("suspension", "k2"): "24.0"}, "[suspension] k2", "24.0",
     "N/m"),                                                                             # N/mm
    ({("powertrain", "P_max"): "47.0"}, "[powertrain] P_max", "47.0", ">= 1000"),         # kW
    ({("powertrain", "brake_ratio"): "80.0"}, "[powertrain] brake_ratio", "80.0", "<= 1"),  # %
    ({("tyre", "mu_y0"): "150.0"}, "[tyre] mu_y0", "150.0", "<= 3"),                     # %
    ({("tyre", "mu_x0"): "0.0"}, "[tyre] mu_x0", "0.0", ">= 0.1"),
    ({("tyre", "E"): "1.5"}, "[tyre] E", "1.5", "<= 1"),
    ({("tyre", "fz_min"): "700.0"}, "[tyre] fz_min", "700.0", "static wheel load"),
    ({("steering", "delta_max"): "26.0"}, "[steering] delta_max", "26.0", "< 1.2"),     # degrees
    ({("mass", "total"): "nan"}, "[mass] total", "nan", "finite number"),
    ({("mass", "total"): "inf"}, "[mass] total", "inf", "finite number"),
    ({("tyre", "mu_y0"): '"high"'}, "[tyre] mu_y0", "'high'", "a number"),              # string
    ({("tyre", "mu_y0"): '"1.5"'}, "[tyre] mu_y0", "'1.5'", "a number"),                # quoted number
    ({("aero", "Cx"): "true"}, "[aero] Cx", "True", "a number"),                       # boolean
    ({("aero", "S"): "[1.4, 1.5]"}, "[aero] S", "[1.4, 1.5]", "a number"),             # array
]


@pytest.mark.unit
@pytest.mark.parametrize("edits, where, value, expected", BAD_VALUES,
                         ids=[f"{w}={v}" for _, w, v, _ in BAD_VALUES])
def test_bad_value_is_refused_with_file_field_value_expectation(tmp_path, edits, where, value,
                                                                expected):
    f = edited(tmp_path, edits)
    err = load_error(f)
    line = next((p for p in err.problems if p.startswith(where)), None)
    assert line is not None, err.problems
    assert str(f) in str(err)
    assert f"{where} = {value}" in line
    assert expected in line
    assert isinstance(err, ValueError)


@pytest.mark.unit
def test_unknown_missing_keys_and_sections(tmp_path):
    # a typo: unknown key and the missing one, both named, with the allowed keys
    f = edited(tmp_path, {("aero", "rho"): None, ("aero", "rhoo"): "1.2"})
    err = load_error(f)
    assert any("unknown field [aero] rhoo = 1.2" in p and "rho" in p for p in err.problems)
    assert any("missing field [aero] rho" in p and "kg/m^3" in p for p in err.problems)
    # unknown section, missing section, unknown top-level key
    text = FSAE_TEXT.replace("[steering]", "[steer]")
    f2 = tmp_path / "sections.toml"
    f2.write_text("colour = 'red'\n" + text)
    err = load_error(f2)
    joined = "\n".join(err.problems)
    assert "unknown section [steer]" in joined
    assert "unknown top-level key colour = 'red'" in joined
    assert "missing section [steering]" in joined
    # a section that is not a table
    f3 = tmp_path / "flat.toml"
    f3.write_text(FSAE_TEXT.split("[mass]")[0] + "mass = 240.0\n" + "[geometry]" +
                  FSAE_TEXT.split("[geometry]")[1])
    assert any("[mass] = 240.0" in p and "table" in p for p in load_error(f3).problems)


@pytest.mark.unit
def test_every_problem_is_listed_at_once(tmp_path):
    f = edited(tmp_path, {("mass", "unsprung"): "300.0", ("tyre", "mu_y0"): "15.0",
                          ("steering", "delta_max"): "26.0"})
    err = load_error(f)
    assert len(err.problems) == 3
    assert "3 problems" in str(err)


@pytest.mark.unit
def test_unreadable_files(tmp_path):
    err = load_error(tmp_path / "nowhere.toml")
    assert "nowhere.toml" in str(err) and "not found" in str(err)
    bad = tmp_path / "syntax.toml"
    bad.write_text("[mass\ntotal = 240\n")
    err = load_error(bad)
    assert "syntax.toml" in str(err) and "not a valid TOML" in str(err) and "line 1" in str(err)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "binary.toml" in str(load_error(binary))
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    assert "not a file" in str(load_error(folder))
    with pytest.raises(ValueError, match="unknown vehicle 'ferrari'.*fsae"):
        veh.load_vehicle("ferrari")


@pytest.mark.unit
def test_direct_construction_is_validated():
    p = veh.load_vehicle("fsae")
    with pytest.raises(ValidationError, match="m_u"):
        p.replace(m_u=500.0)
    with pytest.raises(ValidationError, match="extra"):
        VehicleParameters(**{**p.as_dict(), "colour": 1.0})
    q = p.replace(m=250.0)
    assert q.m == 250.0 and p.m == 240.0                   # frozen, a new validated copy
    with pytest.raises(ValidationError):
        p.m = 1.0  # frozen
    assert VehicleParameters(**p.as_dict()) == p


# ------------------------------------------------------------------ property-based
def _valid_vehicle(draw):
    """A random car that satisfies every range and cross-field rule (drawn independently of
    the schema's code: from the physical rules written out here)."""
    fl = lambda lo, hi: draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))  # noqa: E731
    m = fl(80.0, 2500.0)
    ixx, iyy = fl(5.0, 2000.0), fl(5.0, 2000.0)
    izz = abs(ixx - iyy) + fl(0.01, 0.99) * (ixx + iyy - abs(ixx - iyy))   # triangle inequality
    t1, t2 = fl(0.8, 2.0), fl(0.8, 2.0)
    h = fl(0.2, 1.0)
    a1, a2 = fl(0.5, 2.0), fl(0.5, 2.0)
    m_u = fl(0.05, 0.3) * m
    k_min = (m - m_u) * 9.81 / (4 * 0.09)            # static sag below 0.09 m
    static = min(m * 9.81 * a2, m * 9.81 * a1) / (2 * (a1 + a2))
    return {
        "mass": {"total": m, "unsprung": m_u, "Ixx": ixx, "Iyy": iyy, "Izz": izz},
        "geometry": {"a1": a1, "a2": a2, "t1": t1, "t2": t2, "h": h,
                     "hq1": fl(0.0, 0.9) * h, "hq2": fl(0.0, 0.9) * h,
                     "wheel_radius": fl(0.2, 0.4), "width": max(t1, t2) + fl(0.0, 0.5)},
        "aero": {"S": fl(0.5, 3.0), "Cx": fl(0.2, 1.5), "Cz1": fl(0.0, 3.0),
                 "Cz2": fl(0.0, 3.0), "rho": fl(0.9, 1.3)},
        "suspension": {"k1": fl(k_min, 10 * k_min), "k2": fl(k_min, 10 * k_min),
                       "c1": fl(500.0, 2e4), "c2": fl(500.0, 2e4)},
        "powertrain": {"P_max": fl(2e4, 8e5), "brake_ratio": fl(0.4, 0.8)},
        "tyre": {"Fz0": fl(300.0, 8000.0), "mu_y0": fl(0.8, 2.0), "mu_x0": fl(0.8, 2.0),
                 "pD2": fl(-0.3, 0.0), "C": fl(1.1, 1.6), "E": fl(-1.0, 0.5),
                 "pK1": fl(10.0, 60.0), "pK2": fl(1.0, 4.0), "fz_min": fl(0.0, 0.5) * static},
        "steering": {"delta_max": fl(0.2, 0.6)},
    }


def _value(v) -> str:
    """A TOML literal."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    return "[" + ", ".join(_value(x) for x in v) + "]"


def _toml(data: dict, name="random") -> str:
    out = [f'name = "{name}"']
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    out += [f"{k} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for sec, keys in tables.items():
        out.append(f"[{sec}]")
        out += [f"{k} = {_value(v)}" for k, v in keys.items()]
    return "\n".join(out) + "\n"


valid_vehicles = st.composite(lambda draw: _valid_vehicle(draw))()
PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.unit
@PROPERTY
@given(data=valid_vehicles)
def test_property_valid_files_round_trip(tmp_path, data):
    f = tmp_path / "random.toml"
    f.write_text(_toml(data))
    p = veh.load_vehicle(f)
    for sec, keys in SECTIONS.items():
        for key, attr in keys.items():
            if key in data[sec]:
                assert getattr(p, attr) == data[sec][key]      # exactly: repr round-trips floats
    assert p.tw1 == max(data["geometry"]["width"] - data["geometry"]["t1"], 0.0)   # defaults
    # the export is JSON-serialisable and rebuilds the same car
    assert VehicleParameters(**json.loads(json.dumps(p.as_dict()))) == p


_OUT_OF_RANGE = st.sampled_from([
    ("mass", "total", lambda d: -abs(d["mass"]["total"])),
    ("mass", "unsprung", lambda d: d["mass"]["total"] * 1.5),
    ("mass", "Izz", lambda d: 1.5 * (d["mass"]["Ixx"] + d["mass"]["Iyy"])),
    ("geometry", "hq1", lambda d: d["geometry"]["h"] * 1.2),
    ("geometry", "a2", lambda d: 1000 * d["geometry"]["a2"]),          # millimetres
    ("aero", "rho", lambda d: -d["aero"]["rho"]),
    ("suspension", "k1", lambda d: -d["suspension"]["k1"]),           # a sign error
    ("powertrain", "P_max", lambda d: d["powertrain"]["P_max"] / 1000),  # kW
    ("tyre", "mu_x0", lambda d: 100 * d["tyre"]["mu_x0"]),            # percent
    ("tyre", "fz_min", lambda d: 1e5),
    ("steering", "delta_max", lambda d: math.degrees(d["steering"]["delta_max"])),
    ("tyre", "C", lambda d: math.nan),
])


@pytest.mark.unit
@PROPERTY
@given(data=valid_vehicles, bad=_OUT_OF_RANGE)
def test_property_one_bad_field_is_named(tmp_path, data, bad):
    sec, key, make = bad
    data[sec][key] = make(data)
    f = tmp_path / "random.toml"
    f.write_text(_toml(data))
    with pytest.raises(VehicleFileError) as exc:
        veh.load_vehicle(f)
    named = [p for p in exc.value.problems if p.startswith(f"[{sec}]")]
    assert named, exc.value.problems
    assert any(p.startswith(f"[{sec}] {key} = ") for p in named)
    assert str(f) in str(exc.value)


_any_value = st.one_of(st.floats(), st.integers(-10 ** 6, 10 ** 6), st.booleans(),
                      st.text(max_size=8), st.lists(st.floats(-10, 10), max_size=3))
_names = st.sampled_from([k for keys in SECTIONS.values() for k in keys] + list(SECTIONS)
                         + ["colour", "Mass", "rhoo", "total "])


@pytest.mark.unit
@PROPERTY
@given(data=valid_vehicles, mutations=st.lists(st.tuples(st.sampled_from(["set", "delete", "add"]),
                                                          st.sampled_from(list(SECTIONS)),
                                                          _names, _any_value),
                                                min_size=1, max_size=3))
def test_property_mutated_files_fail_cleanly(tmp_path, data, mutations):
    """Random edits (wrong types, deleted and added keys, sections replaced by values):
    either the file is still valid or VehicleFileError names every problem; never another
    exception."""
    for op, sec, key, value in mutations:
        table = data.get(sec)
        if op == "set" and isinstance(table, dict) and table:
            table[sorted(table)[len(key) % len(table)]] = value
        elif op == "delete" and isinstance(table, dict) and table:
            table.pop(sorted(table)[len(key) % len(table)])
        elif op == "add":
            if isinstance(table, dict):
                table[key.strip() or "x"] = value
            else:
                data[sec] = value
    f = tmp_path / "mutated.toml"
    f.write_text(_toml(data))
    try:
        veh.load_vehicle(f)
    except VehicleFileError as exc:
        assert str(f) in str(exc) and exc.problems
        for p in exc.problems:        # each problem names a place in the file
            assert re.match(r"(missing |unknown |not |\[)", p) or " = " in p, p


@pytest.mark.unit
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_property_arbitrary_text_never_crashes_the_loader(tmp_path, text):
    f = tmp_path / "fuzz.toml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(VehicleFileError) as exc:
        veh.load_vehicle(f)
    assert "fuzz.toml" in str(exc.value)
