"""The cache of compiled functions is never trusted blindly (issue 23, items 2 and 3).

What a power loss, an interrupted run or another user can leave in the cache folder, and what
must happen then (:mod:`pyomo_lap.util.casadi_compile`, :func:`pyomo_lap.solvers.lap.compiled.point_functions`,
:meth:`pyomo_lap.solvers.lap.nlp.LapNLP._verify_library`):

* a compiled library cut short (what ``os.replace`` without ``fsync`` leaves after a power
  loss) is refused by its manifest, compiled again, and the solve succeeds;
* a library replaced by another valid shared library (one whose constructor would write a
  file, or another compiled function) is refused by its SHA-256 and never loaded;
* a library whose constants were changed (1.0 -> 1.05 in its read-only data) is refused by
  its manifest; with a manifest made to match (recomputed here), the check before the solve
  finds it (compiled ``point_f`` / ``point_fj`` / ``point_h`` against CasADi's virtual
  machine), removes it, says so and rebuilds it, and the solve goes on in the same run (issue
  34, item 7: the old code failed a run per altered library); if a rebuilt one differs still,
  the solve runs in CasADi's virtual machine (said once, no loop);
* another entry's library (other outputs) with a manifest made to match is found by its
  inputs and outputs before it is used, rebuilt, and the first solve succeeds (issue 34, item
  6: the old code failed every solve with a NumPy broadcasting error and kept it);
* a compile killed with SIGKILL leaves its build folder in the cache folder, not in the
  system's temporary folder, and the next compile removes it (one of a running process is
  kept: issue 34, item 11);
* a cache folder that others may write to is not used (said once): the cache goes to a
  private folder, and a library planted there never runs;
* pickles that pint's disk cache (used up to now) left in ``<cache>/pint``, cut short by a
  Ctrl-C or planted, are never loaded.

Every test works in its own private cache folder (``PYOMO_LAP_CACHE``), made from one cache
compiled once for this module. The runs that load a damaged library (which crashed the old
code with SIGBUS) are child processes.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap import load_vehicle
from pyomo_lap.ocp.build import OCP_CONFIG, record_point_rows, record_rows
from pyomo_lap.util import casadi_compile as cc

MODEL = "single-track"
"""The vehicle model whose point functions these tests compile, damage and rebuild: the
smallest of the registry's (its Hessian's library 65 kB against the full model's 870 kB, a
compile of seconds, not of 20 s); the cache's rules are the same for every model."""
SECTOR = ["--start", "500", "--length", "150", "--nfe", "15", "--model", MODEL]
"""150 m in 15 elements of 10 m (in 10 of 15 m the result fails its self-check, defect_p95 0.051,
and the solve exits 4: these tests are about the cache, not the mesh)."""
NAMES = ("point_f", "point_fj", "point_h")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

def _rows():
    """The recorded rows of the default car and options: the structure of the CLI's sector."""
    p = load_vehicle("fsae")
    return record_rows(p, {"model": MODEL})


def _private(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _libraries(folder: Path) -> dict:
    """``function name -> library`` of the point functions in ``folder``."""
    out = {}
    for n in NAMES:
        found = sorted(folder.glob(f"pyomo_lap_point-{n}-*{cc.library_suffix()}"))
        assert len(found) == 1, (n, sorted(p.name for p in folder.iterdir()))
        out[n] = found[0]
    return out


def _rewrite_manifest(lib: Path) -> None:
    """Make the manifest match the file again (what a forger with write access would do)."""
    man = cc.manifest_path(lib)
    d = json.loads(man.read_text())
    data = lib.read_bytes()
    d["size"], d["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    man.write_text(json.dumps(d))


def _rodata(b: bytes):
    """(offset, size) of the ``.rodata`` section of an ELF64 little-endian file."""
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        pytest.skip("the constants are patched in ELF64 little-endian libraries only")
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)

    def section(i):
        name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize)
        return name, off, size

    _, strtab, _ = section(shstrndx)
    for i in range(shnum):
        name, off, size = section(i)
        if b[strtab + name: b.index(b"\0", strtab + name)] == b".rodata":
            return off, size
    raise AssertionError("no .rodata section")


def _alter_constants(lib: Path) -> int:
    """Change the constants 1.0 and -1.0 in the library's read-only data to 1.05 and -1.05
    (in place, same size); the number changed."""
    b = bytearray(lib.read_bytes())
    off, size = _rodata(bytes(b))
    n = 0
    for value in (1.0, -1.0):
        pattern = struct.pack("<d", value)
        i = b.find(pattern, off, off + size)
        while i >= 0:
            if (i - off) % 8 == 0:
                b[i:i + 8] = struct.pack("<d", 1.05 * value)
                n += 1
            i = b.find(pattern, i + 1, off + size)
    lib.write_bytes(bytes(b))
    return n


def _outputs(path: Path, name: str, args) -> list:
    """The outputs of the function ``name`` of a shared library, loaded from a copy under a
    name of its own (a path is loaded once per process)."""
    import casadi as ca
    f = ca.external(name, str(path))
    res = f(*args)
    res = res if isinstance(res, (list, tuple)) else [res]
    return [np.asarray(r, dtype=float).ravel() for r in res]


def _point_args(rec, name, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 1.0, len(rec.variables))
    w[rec.variables.index("q1_dot")] = 20.0
    t = np.concatenate([np.eye(3).ravel(), rng.uniform(-0.02, 0.02, 6)])
    args = [w, t, rec.vehicle_values(load_vehicle("fsae"))]
    if name == "point_h":
        args.append(rng.uniform(-1.0, 1.0, len(rec.outputs)))
    return args


def _planted_library(folder: Path, marker: Path) -> Path:
    """A valid shared library whose constructor writes ``marker`` when it is loaded."""
    src = folder / "planted.c"
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void planted(void) '
                   f'{{ FILE *f = fopen("{marker}", "w"); if (f) {{ fputs("ran", f); '
                   'fclose(f); } }\n')
    lib = folder / f"planted{cc.library_suffix()}"
    subprocess.run(cc.find_compiler().split() + ["-shared", "-fPIC", str(src), "-o", str(lib)],
                   check=True, capture_output=True)
    return lib


def _solve_cli(cache: Path, out: Path):
    """``pyomo-lap solve`` of the 150 m sector in a child process with the cache ``cache``."""
    env = {**os.environ, "PYOMO_LAP_CACHE": str(cache)}
    env.pop("PYOMO_LAP_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "pyomo_lap.cli", "solve", *SECTOR,
                           "--out", str(out), "--quiet"], capture_output=True, text=True,
                          env=env, cwd=out.parent, timeout=600)


def _cache_warnings(text: str) -> list:
    return [line for line in text.splitlines() if "RuntimeWarning: pyomo_lap: the cache" in line]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A private cache folder with the point functions of the default structure compiled
    (and nothing else); tests copy it, never change it."""
    from pyomo_lap.solvers.lap.compiled import point_functions
    if cc.find_compiler() is None:
        pytest.fail("no C compiler: the compiled cache cannot be checked (install gcc)")
    folder = _private(tmp_path_factory.mktemp("pristine") / "cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("PYOMO_LAP_CACHE", str(folder))
    try:
        pf = point_functions(_rows())
    finally:
        mp.undo()
    assert pf["functions"].compiled, pf["functions"].reason
    libs = _libraries(folder)
    for lib in libs.values():
        assert cc.check_file(lib) == ""
    return folder


@pytest.fixture
def cache(pristine, tmp_path, monkeypatch):
    """A private copy of the pristine cache for one test, set as ``PYOMO_LAP_CACHE``."""
    folder = tmp_path / "cache"
    shutil.copytree(pristine, folder)
    folder.chmod(0o700)
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(folder))
    return folder


# --------------------------------------------------------------------------------------------
# the files: written whole or not at all, checked against their manifest
# --------------------------------------------------------------------------------------------

@pytest.mark.unit
def test_an_interrupted_write_leaves_no_file_and_a_damaged_one_is_named(tmp_path, monkeypatch):
    """An interrupted write leaves no file and a damaged one is named."""
    folder = _private(tmp_path / "c")
    target = folder / "entry.bin"
    real_fsync = os.fsync

    def interrupted(fd):
        raise KeyboardInterrupt          # Ctrl-C in the middle of the write

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cc.store_file(target, data=b"x" * 1000)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert list(folder.iterdir()) == []          # no half file, no temporary file
    assert cc.check_file(target) == cc.MISSING

    cc.store_file(target, data=b"x" * 1000, source_sha256="abc")
    assert cc.check_file(target) == "" and cc.check_file(target, "abc") == ""
    assert stat.S_IMODE(target.stat().st_mode) & 0o077 == 0
    assert "other C code" in cc.check_file(target, "def")
    target.write_bytes(b"x" * 500)
    assert "truncated" in cc.check_file(target)
    target.write_bytes(b"y" * 1000)
    assert "SHA-256" in cc.check_file(target)
    cc.manifest_path(target).unlink()
    assert "no manifest" in cc.check_file(target)


@pytest.mark.unit
def test_folder_problems_are_named(tmp_path):
    """Folder problems are named."""
    folder = _private(tmp_path / "c")
    assert cc.folder_problem(folder) == ""
    folder.chmod(0o777)
    assert "writable by group and others" in cc.folder_problem(folder)
    folder.chmod(0o720)
    assert "writable by group (mode 720)" in cc.folder_problem(folder)
    folder.chmod(0o700)
    (folder / "f").write_text("")
    assert cc.folder_problem(folder / "f") == "it is not a folder"


# --------------------------------------------------------------------------------------------
# item 2: a damaged library is rebuilt, never run
# --------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_truncated_libraries_are_rebuilt_and_the_solve_succeeds(cache, pristine, tmp_path):
    """Every library cut to half its size (the old code died of SIGBUS or exited 1 with
    "try another mesh" on every later run): one warning, rebuilt, solved."""
    libs = _libraries(cache)
    sizes = {n: lib.stat().st_size for n, lib in libs.items()}
    for lib in libs.values():
        with open(lib, "r+b") as fh:
            fh.truncate(lib.stat().st_size // 2)
    proc = _solve_cli(cache, tmp_path / "out")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    said = _cache_warnings(proc.stderr)
    assert len(said) == 1 and "truncated" in said[0], proc.stderr[-3000:]
    assert all(lib.name in said[0] for lib in libs.values())
    assert "another mesh" not in proc.stdout + proc.stderr
    for n, lib in _libraries(cache).items():
        assert cc.check_file(lib) == "" and lib.stat().st_size == sizes[n]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["solver_status"] == "ok"


@pytest.mark.component
@pytest.mark.parametrize("planted", ["a library with a constructor", "another compiled function"])
def test_a_planted_library_is_refused_by_its_hash_and_never_runs(cache, pristine, tmp_path,
                                                                 planted):
    """A planted library is refused by its hash and never runs."""
    from pyomo_lap.solvers.lap.compiled import point_functions
    marker = tmp_path / "constructor-ran"
    libs = _libraries(cache)
    if planted == "another compiled function":
        victim = libs["point_fj"]
        shutil.copyfile(libs["point_f"], victim)          # a valid ELF, the wrong content
    else:
        victim = libs["point_f"]
        shutil.copyfile(_planted_library(_private(tmp_path / "src"), marker), victim)
    rec = _rows()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pf = point_functions(rec)
    said = [str(w.message) for w in seen if "the cache entry" in str(w.message)]
    assert len(said) == 1 and victim.name in said[0] and "manifest says" in said[0], said
    assert not marker.exists(), "the planted library was loaded"
    funs = pf["functions"]
    assert funs.compiled and funs.compile_s > 0 and funs.paths[victim.name.split("-")[1]] == victim
    assert cc.check_file(victim) == ""
    name = victim.name.split("-")[1]
    args = _point_args(rec, name)
    want = _outputs(pristine / victim.name, name, args)
    got = [np.asarray(r, dtype=float).ravel() for r in
           (funs[name](*args) if name == "point_fj" else [funs[name](*args)])]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.component
def test_altered_constants_are_refused_by_the_manifest(cache, pristine, tmp_path):
    """``point_h`` with its constants +-1.0 changed to +-1.05 (they change the Hessian: checked
    on a copy first) is refused by its SHA-256 and rebuilt."""
    from pyomo_lap.solvers.lap.compiled import point_functions
    lib = _libraries(cache)["point_h"]
    assert _alter_constants(lib) >= 1
    rec = _rows()
    args = _point_args(rec, "point_h")
    probe = _private(tmp_path / "probe") / "altered_point_h.so"
    shutil.copyfile(lib, probe)
    (want,) = _outputs(pristine / lib.name, "point_h", args)
    (altered,) = _outputs(probe, "point_h", args)
    # really different: some entries change by percents
    assert np.max(np.abs(altered - want) / np.maximum(np.abs(want), 1e-12)) > 1e-2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pf = point_functions(rec)
    said = [str(w.message) for w in seen if "the cache entry" in str(w.message)]
    assert len(said) == 1 and lib.name in said[0] and "SHA-256" in said[0], said
    assert pf["functions"].compile_s > 0 and cc.check_file(lib) == ""
    np.testing.assert_array_equal(np.asarray(pf["functions"]["point_h"](*args)).ravel(), want)


@pytest.fixture(scope="module")
def sector_model():
    """The 150 m sector of the CLI runs, built and initialized (not solved)."""
    from pyomo_lap import build_model, initialize_model, load_track
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=500, length=150,
                    nfe=15, ncp=2, model=MODEL)
    initialize_model(m)
    return m


@pytest.mark.component
@pytest.mark.parametrize("name", ["point_fj", "point_h"])
def test_altered_constants_with_a_matching_manifest_are_caught_and_rebuilt_before_the_solve(
        cache, pristine, sector_model, name):
    """The manifest bypassed (made to match the altered library): the library is rebuilt.

    The check before the solve compares the compiled Jacobian and Hessian with CasADi's virtual machine, removes the
    library, says so once and rebuilds it; the NLP then uses the rebuilt one. (The oldest
    check compared only ``point_f``: it passed; the last one raised CompiledLibraryMismatch.)"""
    from pyomo_lap.solvers.lap import nlp as lap_nlp_module
    libs = _libraries(cache)
    lib = libs[name]
    assert _alter_constants(lib) >= 1
    _rewrite_manifest(lib)
    assert cc.check_file(lib) == ""                    # the manifest no longer helps
    others = {n: p.stat().st_mtime_ns for n, p in libs.items() if n != name}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rep = lap_nlp_module.LapNLP(sector_model).report
    said = [str(w.message) for w in seen if "the cache entry" in str(w.message)]
    assert len(said) == 1 and "\n" not in said[0], said
    assert lib.name in said[0] and f"{name} gives" in said[0] and "rebuilt" in said[0], said
    assert rep.compiled and rep.max_library_error < 1e-12, rep.compile_reason
    assert cc.check_file(lib) == "" and lib.read_bytes() == (pristine / lib.name).read_bytes()
    for other, mtime in others.items():              # only the altered library is rebuilt
        assert cc.check_file(libs[other]) == "" and libs[other].stat().st_mtime_ns == mtime


@pytest.mark.component
def test_the_pristine_library_passes_the_check_before_the_solve(cache, sector_model):
    """The pristine library passes the check before the solve."""
    from pyomo_lap.solvers.lap.nlp import LapNLP
    rep = LapNLP(sector_model).report
    assert rep.compiled and rep.library_points == 3
    assert rep.max_library_error < 1e-12            # the same operations: rounding only
    every = LapNLP(sector_model, verify_points="all").report
    assert every.library_points == every.verified_points == 2 * 15 + 1     # ncp = 2, 15 elements
    assert every.max_library_error < 1e-12


@pytest.mark.integration
def test_three_altered_libraries_are_rebuilt_and_the_first_solve_succeeds(cache, tmp_path):
    """Issue 34, item 7: all three point libraries altered (the same shapes, manifests made
    to match). The old code failed one run per library (exit 1, each run removing one); now
    every library is checked, the three are removed and rebuilt, one warning names them, and
    the first run solves."""
    libs = _libraries(cache)
    for lib in libs.values():
        assert _alter_constants(lib) >= 1
        _rewrite_manifest(lib)
    first = _solve_cli(cache, tmp_path / "out")
    text = first.stdout + first.stderr
    assert first.returncode == 0, text[-3000:]
    said = _cache_warnings(first.stderr)
    assert len(said) == 1 and "rebuilt" in said[0], first.stderr[-3000:]
    assert all(lib.name in said[0] and f"{n} gives" in said[0] for n, lib in libs.items())
    assert "virtual machine (slower)" not in text and "another mesh" not in text
    for lib in libs.values():
        assert cc.check_file(lib) == ""
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["solver_status"] == "ok"


@pytest.mark.component
def test_a_rebuilt_library_that_differs_still_leaves_the_solve_to_the_virtual_machine(
        cache, sector_model, monkeypatch):
    """Every comparison made to fail (a tolerance below zero): the libraries are rebuilt once,
    differ again, and the NLP evaluates the points in CasADi's virtual machine, with one
    warning that says so (never a loop; the old code raised)."""
    from pyomo_lap.solvers.lap import checks, compiled, nlp as lap_nlp_module
    monkeypatch.setattr(checks, "LIBRARY_TOLERANCE", -1.0)
    calls = []
    real = compiled.point_functions
    monkeypatch.setattr(compiled, "point_functions",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        nlp = lap_nlp_module.LapNLP(sector_model)
    vm = [str(w.message) for w in seen if "virtual machine (slower)" in str(w.message)]
    assert len(vm) == 1 and "after a rebuild" in vm[0] and "\n" not in vm[0], vm
    assert len(calls) == 2                                # the first setup and one rebuild
    assert not nlp.report.compiled and "after a rebuild" in nlp.report.compile_reason
    assert not nlp._point["functions"].compiled
    g, h = np.zeros(nlp.m), np.zeros(nlp.hess_rows.size)
    nlp.constraints_eval(nlp.x0, g)                       # the points evaluate, in the VM
    nlp.hessian(nlp.x0, 1.0, np.ones(nlp.m), h)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))


# --------------------------------------------------------------------------------------------
# issue 34, item 6: another entry's library, of other shapes, with a matching manifest
# --------------------------------------------------------------------------------------------

def _foreign_rows():
    """The rows of another cache entry: the full model's of ``periodic=True`` (other inputs
    and outputs than this module's model's)."""
    return record_point_rows(load_vehicle("fsae"), OCP_CONFIG({"periodic": True}))


def _first_input(rec) -> str:
    """The shape of a recording's first input (a point's variables), as the cache's message
    writes it."""
    return f"{len(rec.variables)}x1"


def _foreign_point_f(cache: Path) -> Path:
    """Put another cache entry's ``point_f`` (:func:`_foreign_rows`) over this entry's and make
    the manifest match it, as the issue did; this entry's ``point_f``."""
    import casadi as ca
    from pyomo_lap.solvers.lap import compiled
    lib = _libraries(cache)["point_f"]
    rec = _foreign_rows()
    key = compiled._point_key(rec, False, cc.find_compiler())
    w, t, c, out = compiled._point_symbols(rec, False)
    other = cc.compile_functions([ca.Function("point_f", [w, t, c], [out])], "pyomo_lap_point",
                                 key=key)
    assert other.compiled, other.reason
    tmp = lib.with_name(".foreign")
    shutil.copyfile(other.paths["point_f"], tmp)
    os.replace(tmp, lib)              # a new file: this process may have the old one loaded
    _rewrite_manifest(lib)
    assert cc.check_file(lib) == ""
    return lib


@pytest.mark.integration
def test_another_entrys_library_with_a_matching_manifest_is_rebuilt_and_the_solve_succeeds(
        cache, tmp_path):
    """The old code exited 1 on every run ("operands could not be broadcast together with
    shapes (31,) (34,)", "did not find an optimal solution", a hint about the mesh) and never
    removed the library."""
    lib = _foreign_point_f(cache)
    proc = _solve_cli(cache, tmp_path / "out")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-3000:]
    said = _cache_warnings(proc.stderr)
    assert len(said) == 1 and lib.name in said[0] and "rebuilt" in said[0], proc.stderr[-3000:]
    assert (f"its input 0 is {_first_input(_foreign_rows())}, the model's function's "
            f"{_first_input(_rows())}") in said[0], said
    assert "broadcast" not in text and "another mesh" not in text
    assert cc.check_file(lib) == ""
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["solver_status"] == "ok"


@pytest.mark.component
def test_another_entrys_library_is_never_used_and_rebuilt_in_the_same_call(cache, pristine):
    """Another entrys library is never used and rebuilt in the same call."""
    from pyomo_lap.solvers.lap.compiled import point_functions
    lib = _foreign_point_f(cache)
    rec = _rows()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pf = point_functions(rec)
    said = [str(w.message) for w in seen if "the cache entry" in str(w.message)]
    assert len(said) == 1 and lib.name in said[0] and _first_input(_foreign_rows()) in said[0], said
    funs = pf["functions"]
    assert funs.compiled and funs.compile_s > 0 and pf["n_out"] == len(rec.outputs)
    args = _point_args(rec, "point_f")
    (want,) = _outputs(pristine / lib.name, "point_f", args)
    np.testing.assert_array_equal(np.asarray(funs["point_f"](*args)).ravel(), want)


@pytest.mark.unit
def test_a_function_of_other_inputs_outputs_or_sparsity_does_not_fit():
    """A function of other inputs outputs or sparsity does not fit."""
    import casadi as ca
    x, y = ca.SX.sym("x", 3), ca.SX.sym("y", 2)
    f = ca.Function("f", [x, y], [x * y[0], ca.jacobian(x * y[0], x)])
    assert cc.signature_problem(f, f) == "" and cc.signature_problem(f, cc.signature(f)) == ""
    fewer = ca.Function("f", [x, y], [x[:2] * y[0], ca.jacobian(x * y[0], x)])
    assert cc.signature_problem(fewer, f) == "its output 0 is 2x1, the model's function's 3x1"
    dense = ca.Function("f", [x, y], [x * y[0], ca.densify(ca.jacobian(x * y[0], x))])
    assert "output 1 has another sparsity pattern (9 nonzeros" in cc.signature_problem(dense, f)
    one = ca.Function("f", [x], [x])
    assert "1 inputs and 1 outputs" in cc.signature_problem(one, f)


# --------------------------------------------------------------------------------------------
# issue 34, item 11: a compile killed with SIGKILL leaves nothing in the temporary folder
# --------------------------------------------------------------------------------------------

@pytest.mark.component
def test_a_killed_compile_leaves_its_build_folder_to_the_next_compile(tmp_path, monkeypatch):
    """A child process compiling (a compiler that waits) is killed with SIGKILL: its build
    folder ``pyomo_lap_cg_<pid>_*`` is in the cache folder (the old code left it in the
    system's temporary folder, for ever); the next compile removes it and keeps one of a
    running process (this one)."""
    cache = _private(tmp_path / "cache")
    tmp = _private(tmp_path / "tmp")
    started = tmp_path / "compiler-started"
    slow = tmp_path / "slowcc"
    slow.write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 60\n")
    slow.chmod(0o700)
    env = {**os.environ, "PYOMO_LAP_CACHE": str(cache), "TMPDIR": str(tmp), "CC": str(slow)}
    child = subprocess.Popen(
        [sys.executable, "-c", "import casadi as ca; from pyomo_lap.util import casadi_compile "
         "as cc; x = ca.SX.sym('x'); cc.compile_functions([ca.Function('g', [x], [2 * x])], "
         "'killed', key='k')"], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert child.poll() is None and time.monotonic() < deadline, "the compile did not start"
            time.sleep(0.05)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert not list(tmp.glob("pyomo_lap_cg_*")), "a build folder in the temporary folder"
    stale = list(cache.glob(f"pyomo_lap_cg_{child.pid}_*"))
    assert len(stale) == 1 and (stale[0] / "g.c").exists()
    tag = stale[0].name.split("_")[4]                         # this machine's
    running = cache / f"pyomo_lap_cg_{os.getpid()}_{tag}_running"
    elsewhere = cache / f"pyomo_lap_cg_{child.pid}_{'0' * 8 if tag != '0' * 8 else '1' * 8}_x"
    running.mkdir()
    elsewhere.mkdir()            # the same process id on another machine sharing the folder
    import casadi as ca
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(cache))
    monkeypatch.delenv("CC", raising=False)
    x = ca.SX.sym("x")
    funs = cc.compile_functions([ca.Function("g", [x], [3 * x])], "next", key="k")
    assert funs.compiled and float(funs["g"](2.0)) == 6.0
    assert sorted(p.name for p in cache.glob("pyomo_lap_cg_*")) == sorted([running.name,
                                                                           elsewhere.name])


# --------------------------------------------------------------------------------------------
# item 3: a folder others can write to is not used
# --------------------------------------------------------------------------------------------

@pytest.mark.component
def test_a_world_writable_cache_folder_is_not_used_and_said_once(pristine, tmp_path,
                                                                 monkeypatch):
    """A cache folder with mode 777 holding a complete entry whose ``point_f`` is a planted
    library with a matching manifest: not used (one warning), the cache goes to a private
    folder under the temporary folder, nothing is loaded from or written to the shared one."""
    import tempfile

    from pyomo_lap.solvers.lap.compiled import point_functions
    shared = tmp_path / "shared"
    shutil.copytree(pristine, shared)
    marker = tmp_path / "constructor-ran"
    lib = _libraries(shared)["point_f"]
    shutil.copyfile(_planted_library(_private(tmp_path / "src"), marker), lib)
    _rewrite_manifest(lib)
    shared.chmod(0o777)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in shared.iterdir())
    monkeypatch.setenv("PYOMO_LAP_CACHE", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", str(_private(tmp_path / "tmp")))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        used = {cc.cache_dir() for _ in range(3)}
        pf = point_functions(_rows())
    said = [str(w.message) for w in seen if "cache folder" in str(w.message)]
    assert len(said) == 1, said
    assert str(shared) in said[0] and "writable by group and others" in said[0], said
    assert not marker.exists(), "the planted library was loaded"
    assert len(used) == 1
    (fallback,) = used
    assert fallback.parent == tmp_path / "tmp" and cc.folder_problem(fallback) == ""
    funs = pf["functions"]
    assert funs.compiled and funs.library == fallback and funs.compile_s > 0
    assert all(p.parent == fallback for p in funs.paths.values())
    assert sorted((p.name, p.stat().st_mtime_ns) for p in shared.iterdir()) == before


# --------------------------------------------------------------------------------------------
# pint's disk cache: never read
# --------------------------------------------------------------------------------------------

class _Planted:
    """A pickle that makes a folder when it is loaded."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["truncated", "planted"])
def test_pint_pickles_in_the_cache_are_never_loaded(cache, tmp_path, damage):
    """Pint's cache in ``<cache>/pint`` as the old code made it, then every pickle cut to
    half (a Ctrl-C during the first run: the old code then failed every run with exit 3,
    "'NoneType' object has no attribute 'm'") or replaced by one that runs code."""
    pint_dir = cache / "pint"
    subprocess.run([sys.executable, "-c",
                    "import sys, pint; pint.UnitRegistry(cache_folder=sys.argv[1]).m",
                    str(pint_dir)], check=True, capture_output=True)
    pickles = sorted(pint_dir.glob("*.pickle"))
    assert pickles
    marker = tmp_path / "pickle-ran"
    for p in pickles:
        if damage == "truncated":
            with open(p, "r+b") as fh:
                fh.truncate(p.stat().st_size // 2)
        else:
            p.write_bytes(pickle.dumps(_Planted(marker)))
    proc = _solve_cli(cache, tmp_path / "out")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert not marker.exists(), "a planted pickle was loaded"
