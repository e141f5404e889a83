"""``summary.json`` typed (issue 45, item 5): :class:`pyomo_lap.results.summary.Summary` and the
job's state :class:`pyomo_lap.api.state.Job`.

The summaries of ``tests/data/summaries`` were written by the code before the summary was
typed, one of each kind the project writes (a solved sector, a full lap, a failed solve's
partial results, a racecar lap, a stint's lap, a sweep's case, a setup optimization, a fixed
step export, a hybrid car): each reads into a :class:`Summary` and back into the same keys and
values, and a solve of the first one's job writes the same keys and values again, with
``summary_format`` added.
"""
from __future__ import annotations

import copy
import json
import math
import pickle
import re
from pathlib import Path

import pytest

from _folders import frame
from pyomo_lap.results.summary import SUMMARY_FORMAT, SUMMARY_KEYS, Summary, as_summary

DATA = Path(__file__).parent / "data" / "summaries"
KINDS = sorted(p.stem for p in DATA.glob("*.json"))
SOLVES = ("sector", "sector_every_sensitivities", "lap", "failed", "racecar", "sweep_case",
          "setup", "hybrid")
"""The kinds written by ``solve_sector`` (the others: a stint's lap and a fixed step export)."""


def _load(kind: str) -> dict:
    return json.loads((DATA / f"{kind}.json").read_text())


def _text(d) -> str:
    """The JSON text of a dict, keys in their order (NaN as NaN: equal texts, equal dicts)."""
    return json.dumps(d)


# ------------------------------------------------------------------------------ unit
@pytest.mark.unit
def test_there_is_a_summary_of_every_kind():
    assert len(KINDS) == 10 and set(SOLVES) < set(KINDS), KINDS


@pytest.mark.unit
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_summary_reads_and_writes_back_the_same(kind):
    """dict -> Summary -> dict gives the file's keys and values (the same objects); each key
    is a field (nothing left over in ``extra``), whose attribute is the file's value."""
    d = _load(kind)
    s = Summary.from_dict(d)
    back = s.to_dict()
    assert json.dumps(back, sort_keys=True) == json.dumps(d, sort_keys=True)
    assert len(s) == len(d) and set(s) == set(d)
    assert s.extra == {}
    for key, value in d.items():
        assert getattr(s, key) is value and s[key] is value, key
    assert s.summary_format is None and "summary_format" not in s   # written before the key


@pytest.mark.unit
@pytest.mark.parametrize("kind", SOLVES)
def test_a_solves_keys_are_the_fields_in_their_order(kind):
    """The fields are declared in the order a solve writes its keys: a solve's summary reads
    and writes back in the file's order."""
    d = _load(kind)
    assert list(Summary.from_dict(d).to_dict()) == list(d)


@pytest.mark.unit
def test_what_each_kind_says_reads_as_typed_fields():
    """The typed fields say what the files say: a failed solve is partial and has no
    self-check; the racecar's model; a stint lap's number and mass; a warm-started case's
    source; the setup's optimum; the export's step."""
    failed = Summary.from_dict(_load("failed"))
    assert failed.partial is True and failed.optimal is False and failed.self_check is None
    assert not failed.is_set("self_check") and failed.termination_condition != "optimal"
    assert Summary.from_dict(_load("racecar")).model == "racecar"
    lap = Summary.from_dict(_load("stint_lap"))
    assert lap.lap == 1 and lap.mass_start_kg > 0 and lap.periodic is True
    assert lap.model == "full" and "model" not in lap     # the default, not held
    case = Summary.from_dict(_load("sweep_case"))
    assert case.model_reused is True and case.warm_start_source["covered_share"] == 1.0
    assert case.warm_start_from == case.warm_start_source["folder"]
    setup = Summary.from_dict(_load("setup"))
    assert set(setup.setup) == {"aero.Cz1"} and "gain_s" in setup.setup_baseline
    fixed = Summary.from_dict(_load("fixed_step"))
    assert fixed.trajectory_step_m == 5.0 and fixed.exported_from.endswith("/sector")
    sector = Summary.from_dict(_load("sector"))
    assert sector.lap_time_s == pytest.approx(sum(x["time_s"] for x in sector.sectors), rel=1e-9)


@pytest.mark.unit
def test_missing_keys_read_as_defaults_and_stay_missing():
    """A summary of a few keys (an earlier version's, a hand-made one): the other fields read
    as their defaults, are not keys of the mapping and are not written."""
    d = {"lap_time_s": 12.5, "track": "nordschleife"}
    s = Summary.from_dict(d)
    assert (s.model, s.scheme, s.periodic, s.ncp, s.sectors) == ("full", "LAGRANGE-RADAU",
                                                                   False, None, None)
    assert "model" not in s and s.get("model") is None and s.get("ncp", 3) == 3
    with pytest.raises(KeyError):
        s["ncp"]
    assert s.to_dict() == d and list(s) == ["lap_time_s", "track"]
    s.ncp = 2                       # set: now held, in the fields' order
    assert list(s.to_dict()) == ["lap_time_s", "ncp", "track"]


@pytest.mark.unit
def test_unknown_keys_are_kept_and_written(tmp_path):
    """Keys of no field (a later version's, a user's) are kept in ``extra``, read as keys,
    and written to summary.json with their values."""
    from pyomo_lap.results.table import read_summary, write_results
    d = {**_load("sector"), "from_a_later_version": {"x": [1, 2]}, "users_note": "mine"}
    s = Summary.from_dict(d)
    assert s.extra == {"from_a_later_version": {"x": [1, 2]}, "users_note": "mine"}
    assert s["users_note"] == "mine" and "from_a_later_version" in s
    assert list(s.to_dict())[-2:] == ["from_a_later_version", "users_note"]
    written = json.loads((write_results(tmp_path / "r", frame(), s) / "summary.json").read_text())
    assert written["from_a_later_version"] == {"x": [1, 2]} and written["users_note"] == "mine"
    assert read_summary(tmp_path / "r").extra == s.extra


@pytest.mark.unit
def test_write_results_takes_the_summary_or_its_dict_and_leaves_it_alone(tmp_path):
    """The typed summary and the dict of its keys write the same summary.json: the dict's
    keys and values with ``summary_format`` added first (and ``partial``); the summary given
    is not changed."""
    from pyomo_lap.results.table import write_results
    d = _load("sector")
    s = Summary.from_dict(d)
    a = (write_results(tmp_path / "a", frame(), s) / "summary.json").read_text()
    b = (write_results(tmp_path / "b", frame(), dict(d)) / "summary.json").read_text()
    assert a == b
    assert _text(json.loads(a)) == _text({"summary_format": SUMMARY_FORMAT, **d})
    assert "summary_format" not in s and s.to_dict() == d
    hand = json.loads((write_results(tmp_path / "c", frame(), {"lap_time_s": 1.0})
                       / "summary.json").read_text())
    assert hand["summary_format"] == SUMMARY_FORMAT and hand["partial"] is False
    assert hand["lap_time_s"] == 1.0 and "model" not in hand


@pytest.mark.unit
def test_read_summary_types_what_is_on_disk(tmp_path):
    """summary.json of an earlier version (as written: indented) reads as a Summary equal to
    its dict; not a JSON object, or no file: said."""
    from pyomo_lap.results.table import read_summary
    d = _load("failed")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "summary.json").write_text(json.dumps(d, indent=2))
    s = read_summary(tmp_path / "r")
    assert isinstance(s, Summary) and _text(s.to_dict()) == _text(d)
    assert Summary.read(tmp_path / "r" / "summary.json").to_dict().keys() == d.keys()
    (tmp_path / "r" / "summary.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON list, expected an object"):
        read_summary(tmp_path / "r")
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        read_summary(tmp_path / "none")


@pytest.mark.unit
def test_the_summary_is_the_mapping_it_was():
    """What user code did with the dict still works: items, get, dict(), ==, unpacking,
    setting and deleting keys, pickling and copying (the keys held stay the keys held)."""
    d = _load("lap")
    s = Summary.from_dict(d)
    assert s["lap_time_s"] == d["lap_time_s"] and s.get("self_check") == d["self_check"]
    assert s == {k: v for k, v in d.items()} and {**s}.keys() == d.keys()
    for other in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), copy.copy(s), s.copy()):
        assert isinstance(other, Summary) and _text(other.to_dict()) == _text(d)
    s["lap_time_s"] = 1.0
    assert s.lap_time_s == 1.0
    del s["corners"]
    assert "corners" not in s and s.corners is None and len(s) == len(d) - 1
    with pytest.raises(KeyError):
        del s["corners"]
    assert as_summary(s) is s
    with pytest.raises(TypeError, match="expected a Summary or a dict"):
        as_summary(3.0)
    with pytest.raises(TypeError, match="expected a string"):
        Summary.from_dict({1: 2})


@pytest.mark.unit
def test_a_misspelt_field_raises():
    """A field that does not exist cannot be set, neither on the summary nor on the job's
    state (a SimpleNamespace before: a misspelt name was a new attribute)."""
    from pyomo_lap.api.state import Job
    s = Summary(lap_time_s=1.0)
    with pytest.raises(AttributeError, match="no field 'lap_tme_s'"):
        s.lap_tme_s = 2.0
    with pytest.raises(TypeError, match="'lap_tme_s' is no field"):
        Summary(lap_tme_s=1.0)
    job = Job(cfg=None, echo=print)
    job.refinement = {"rounds": []}
    assert job.summary is None and job.held == [] and job.reuse is False
    with pytest.raises(AttributeError):
        job.refinment = {"rounds": []}
    with pytest.raises(AttributeError):
        job.lap = 1.0           # no longer part of the job: the summary's lap_time_s
    assert "refinement" in repr(job)


@pytest.mark.unit
def test_every_field_is_documented():
    """Each field of the summary has its entry in the class's docstring and in
    docs/results.md; each field of the job in its docstring."""
    import dataclasses

    from pyomo_lap.api.state import Job
    doc = Summary.__doc__
    results_md = (Path(__file__).parents[1] / "docs" / "results.md").read_text()
    for key in SUMMARY_KEYS:
        assert re.search(rf"^    (\w+, )*{key}(, \w+)* :", doc, re.M), key
        assert f"`{key}`" in results_md, key
    for f in dataclasses.fields(Job):
        assert f"    {f.name} :" in Job.__doc__, f.name


# ------------------------------------------------------------------------------ integration
VOLATILE = {"build_time_s", "init_time_s", "solve_time_s", "timing", "created_utc",
            "pyomo_lap_version", "pyomo_lap_git_commit", "pyomo_version", "python",
            "solver_version", "wall_time_s"}
"""What differs from one run or machine to the next: wall times, dates, versions (and the
paths of the files, compared by name)."""


def _differences(old, new, path: str = "") -> list:
    """Where ``new`` differs from ``old``: keys (and their order), types, values (floats to
    1e-6 relative, as the golden lap times are compared between machines; the rest exact)."""
    out = []
    if isinstance(old, dict) and isinstance(new, dict):
        if list(old) != list(new):
            out.append(f"{path}: keys {list(old)} != {list(new)}")
        for k in old:
            if k in VOLATILE or ("mesh_refinement" in path and k == "time_s") or k not in new:
                continue
            if k in ("track_file", "vehicle_file"):
                if Path(old[k]).name != Path(new[k]).name:
                    out.append(f"{path}.{k}: {old[k]} != {new[k]}")
                continue
            out += _differences(old[k], new[k], f"{path}.{k}")
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: {len(old)} items != {len(new)}"]
        for i, (a, b) in enumerate(zip(old, new)):
            out += _differences(a, b, f"{path}[{i}]")
    elif type(old) is not type(new):
        out.append(f"{path}: {old!r} ({type(old).__name__}) != {new!r} ({type(new).__name__})")
    elif isinstance(old, float):
        if not (math.isclose(old, new, rel_tol=1e-6, abs_tol=1e-12)
                or (math.isnan(old) and math.isnan(new))):
            out.append(f"{path}: {old!r} != {new!r}")
    elif old != new:
        out.append(f"{path}: {old!r} != {new!r}")
    return out


@pytest.mark.integration
def test_a_solve_writes_the_keys_and_values_it_wrote_before(tmp_path):
    """The job of tests/data/summaries/sector.json (written before the summary was typed)
    solved again: the same keys in the same order, with ``summary_format`` first, and the same
    values (but wall times, dates, versions), the returned summary the file's."""
    from pyomo_lap import solve_sector
    from pyomo_lap.results.table import read_summary
    old = _load("sector")
    res = solve_sector(start=1300, length=100, out_dir=tmp_path / "r", echo=lambda *_: None,
                       progress=lambda *_: None)
    new = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert (new["track_file_sha256"], new["vehicle_file_sha256"]) == (
        old["track_file_sha256"], old["vehicle_file_sha256"]), \
        "the track or car changed: re-derive tests/data/summaries/sector.json (its README)"
    assert list(new) == ["summary_format", *old]
    assert new["summary_format"] == SUMMARY_FORMAT
    new.pop("summary_format")
    assert not _differences(old, new), "\n".join(_differences(old, new))
    # what solve_sector returned is what it wrote (but the writer's partial)
    assert isinstance(res.summary, Summary) and res.summary == {
        k: v for k, v in read_summary(tmp_path / "r").items() if k != "partial"}
    _, _, _, unpacked = res
    assert unpacked is res.summary and unpacked["lap_time_s"] == res.summary.lap_time_s


@pytest.mark.integration
def test_the_self_check_of_a_model_solved_in_a_script_takes_its_summary(solved_sector):
    """A model built and solved in a script (as benchmarks/energy_limited.py does): its
    summary (solve_summary) says what the build was given, and the self-check on it gives the
    checks the summary made by hand gave before (the same values)."""
    import _solved_sector as sector
    from pyomo_lap.api.results import solve_summary
    from pyomo_lap.verify.verdict import self_check
    tr, p, m, rep, df = solved_sector()
    s = solve_summary(m, rep)
    assert (s.model, s.start_m, s.length_m, s.nfe, s.ncp, s.periodic) == (
        "full", sector.START, sector.LENGTH, sector.NFE, 3, False)
    assert s.lap_time_s == pytest.approx(float(df["t"].iloc[-1] - df["t"].iloc[0]), rel=1e-9)
    assert s.optimal is True and s.iterations == rep.iterations
    from pyomo_lap.verify.verdict import interpolation_of
    typed = self_check(df, s.model, tr, p, start=s.start_m, ncp=s.ncp, scheme=s.scheme,
                       interpolation=interpolation_of(s))
    o = m.problem.options
    by_hand = self_check(df, m.problem.vehicle_model, tr, p, start=float(o.start), ncp=o.ncp,
                         scheme=o.scheme,
                         interpolation="state" if o.control_form == "state" else "auto")
    assert typed["verdict"] == by_hand["verdict"] and set(typed["checks"]) == set(by_hand["checks"])
    for name, c in typed["checks"].items():
        assert c["value"] == by_hand["checks"][name]["value"], name
