"""The package's layout: one subpackage per role, imports run one way (docs/architecture.md)."""
import ast
import functools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "pyomo_lap"

LAYER = {"util": 0, "folders": 1, "spatial": 1, "vehicle": 2, "track": 2, "ocp": 3, "solvers": 4,
         "results": 5, "verify": 6, "analysis": 6, "plots": 7, "api": 8, "sweeps": 9, "cli": 10,
         "__init__": 11}
"""Rank of each subpackage (or top-level module): a module may import its own subpackage and
lower ranks only; ``vehicle`` and ``track`` are peers that do not import each other."""


def _module_name(path: Path, pkg: Path = PKG) -> str:
    rel = path.relative_to(pkg.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, pkg: Path = PKG):
    """Every pyomo_lap module a file imports (top level and inside functions), absolute names.
    ``from pyomo_lap import __version__`` is not counted: the version is set at the top of
    ``pyomo_lap/__init__.py`` before it imports anything."""
    name = _module_name(path, pkg)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "pyomo_lap":
                continue
            for alias in node.names:
                if mod == "pyomo_lap" and alias.name == "__version__":
                    continue
                full = f"{mod}.{alias.name}"
                out.append(full if _exists(full, pkg) else mod)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "pyomo_lap"]
    return out


def _exists(dotted: str, pkg: Path = PKG) -> bool:
    p = pkg.parent.joinpath(*dotted.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def _role(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.lru_cache(maxsize=None)
def _graph(pkg: Path = PKG):
    return {_module_name(p, pkg): _imports(p, pkg) for p in pkg.rglob("*.py")}


def _wrong_way(pkg: Path = PKG):
    bad = []
    for mod, targets in _graph(pkg).items():
        src = _role(mod)
        for t in targets:
            dst = _role(t)
            if dst != src and LAYER[dst] >= LAYER[src]:
                bad.append(f"{mod} imports {t} ({src} -> {dst})")
    return bad


@pytest.mark.unit
def test_every_module_lives_in_a_role():
    """Every module is in the subpackage of a role; the top-level roles (``api``, ``sweeps``,
    ``cli``) are each one module or one package, and ``__init__.py`` is the only other file."""
    top = {p.name.removesuffix(".py") for p in PKG.glob("*.py")}
    roles = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert not top & roles, top & roles
    assert top | roles == set(LAYER), sorted(top | roles)
    assert top - {"__init__"} <= {"api", "sweeps", "cli"}, sorted(top)


@pytest.mark.unit
def test_imports_run_one_way():
    """No module imports a module of a higher layer (nor a peer's)."""
    bad = _wrong_way()
    assert not bad, "\n".join(bad)


def _circles(pkg: Path = PKG):
    graph = {m: {t for t in ts if t != m} for m, ts in _graph(pkg).items()}
    # a subpackage's __init__ re-exporting its own modules is not a circle
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = 1
        for t in graph.get(m, ()):
            if t in graph and t.startswith(m + "."):
                continue
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]) if t in stack else f"{m}->{t}")
            elif t in graph and not state.get(t):
                visit(t, stack + [t])
        state[m] = 2

    for m in graph:
        if not state.get(m):
            visit(m, [m])
    return cycles


@pytest.mark.unit
def test_no_import_circle_between_modules():
    """Not even inside one role, nor through imports inside functions."""
    cycles = _circles()
    assert not cycles, "\n".join(cycles)


@pytest.mark.unit
def test_the_checkers_see_a_wrong_way_import_and_a_circle(tmp_path):
    """The checks can fail: in a small copy of the layout, a spatial module importing the ocp
    layer inside a function, a track module importing the vehicle layer, and two ocp modules
    importing each other (one inside a function) are reported."""
    pkg = tmp_path / "pyomo_lap"
    for sub in ("spatial", "ocp", "track", "vehicle"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("__version__ = '0'\n")
    (pkg / "ocp" / "build.py").write_text("from ..spatial import lie\n")
    (pkg / "spatial" / "lie.py").write_text("from .. import __version__\n"
                                            "def f():\n    from ..ocp.build import g\n")
    (pkg / "vehicle" / "car.py").write_text("")
    (pkg / "track" / "geometry.py").write_text("import pyomo_lap.vehicle.car\n")
    (pkg / "ocp" / "common.py").write_text("def f():\n    from .build import g\n")
    (pkg / "ocp" / "build.py").write_text("from ..spatial import lie\nfrom .common import f\n")
    circles = {frozenset(c.split(" -> ")) for c in _circles(pkg)}
    assert {"pyomo_lap.ocp.build", "pyomo_lap.ocp.common"} in circles
    assert {"pyomo_lap.spatial.lie", "pyomo_lap.ocp.build"} in circles
    assert sorted(_wrong_way(pkg)) == [
        "pyomo_lap.spatial.lie imports pyomo_lap.ocp.build (spatial -> ocp)",
        "pyomo_lap.track.geometry imports pyomo_lap.vehicle.car (track -> vehicle)"]


@pytest.mark.unit
def test_the_layout_table_names_every_module():
    """Every module of the package is named in the layout table of docs/architecture.md, on the
    row of its subpackage (``pyomo_lap/<role>/``), and every subpackage has a row."""
    text = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("## Layout"):]
    end = table.find("\n## ", 3)
    table = table if end < 0 else table[:end]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `pyomo_lap/")]
    missing = []
    for p in sorted(PKG.rglob("*.py")):
        if p.name == "__init__.py":
            continue
        parts = p.relative_to(PKG).parts
        if len(parts) == 1:
            ok = any(f"pyomo_lap/{p.name}" in r or f"`{p.name}`" in r for r in rows
                     if ".py`" in r.split("|")[1])       # a row of top-level modules
        else:
            ok = any(r.startswith(f"| `pyomo_lap/{parts[0]}/`") and f"`{p.name}`" in r for r in rows)
        if not ok:
            missing.append("/".join(parts))
    assert not missing, f"not in the layout table of docs/architecture.md: {missing}"


def _long_functions(pkg: Path, limit: int) -> list:
    out = []
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{path.relative_to(pkg.parent)}:{node.lineno} {node.name} ({n} lines)")
    return out


@pytest.mark.unit
def test_no_function_is_longer_than_a_hundred_lines(tmp_path):
    """Long functions are split into named steps (issue 24); the check sees one that is not."""
    assert _long_functions(PKG, 100) == []
    bad = tmp_path / "pyomo_lap"
    bad.mkdir()
    (bad / "m.py").write_text("def f():\n" + "    x = 1\n" * 100)
    assert _long_functions(bad, 100) == ["pyomo_lap/m.py:1 f (101 lines)"]


def _long_modules(pkg: Path, limit: int) -> list:
    return [f"{p.relative_to(pkg.parent)} ({n} lines)" for p in sorted(pkg.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > limit]


@pytest.mark.unit
def test_no_module_is_longer_than_eight_hundred_lines(tmp_path):
    """A module holds one role a newcomer can read (issue 37: none over 800 lines); the check
    sees one that is longer."""
    assert _long_modules(PKG, 800) == []
    bad = tmp_path / "pyomo_lap"
    bad.mkdir()
    (bad / "m.py").write_text("x = 1\n" * 801)
    assert _long_modules(bad, 800) == ["pyomo_lap/m.py (801 lines)"]


def _imports_inside_functions(pkg: Path) -> list:
    """``file:line`` of every import statement inside a function or method of ``pkg``."""
    found = []
    for path in sorted(pkg.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{path.relative_to(pkg.parent)}:{n.lineno}" for n in ast.walk(fn)
                          if isinstance(n, (ast.Import, ast.ImportFrom))]
    return sorted(set(found))


@pytest.mark.unit
def test_imports_are_at_the_top_of_their_module(tmp_path):
    """Issue 45, item 8: every import at its module's top; a heavy module a command may not
    need (matplotlib, plotly, casadi, IDAES, Dask ...) is deferred through
    ``pyomo.common.dependencies.attempt_import`` at the top, not imported inside a function.
    The checker sees one inside a method."""
    found = _imports_inside_functions(PKG)
    assert not found, f"{len(found)} imports inside functions: {found[:20]}"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("class C:\n    def f(self):\n        import json\n")
    assert _imports_inside_functions(tmp_path / "pkg") == ["pkg/m.py:3"]


def _private_pyomo_names(pkg: Path) -> list:
    """Private names (``_x``) of Pyomo's objects that ``pkg`` reads or writes, by attribute."""
    found = []
    for path in sorted(pkg.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        pyomo_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                       and (n.module or "").split(".")[0] == "pyomo" for a in n.names}
        pyomo_names |= {a.asname or a.name.split(".")[0] for n in ast.walk(tree)
                        if isinstance(n, ast.Import) for a in n.names
                        if a.name.split(".")[0] == "pyomo"}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in pyomo_names:
                    found.append(f"{path.relative_to(pkg.parent)}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.Constant) and node.value == "_callbacks":
                found.append(f"{path.relative_to(pkg.parent)}:{node.lineno} '_callbacks'")
    return found


@pytest.mark.unit
def test_no_patch_of_pyomos_internals():
    """Issue 45, item 8: the package changes nothing inside Pyomo (``pyomo_lap/__init__.py``
    used to remove scipy's post-import callback from
    ``DeferredImportCallbackFinder._callbacks``): no private attribute of an object imported
    from Pyomo is read or set, except the solver factory's registry, read to find the
    object behind a legacy solver wrapper (``SolverFactory._cls``)."""
    found = [f for f in _private_pyomo_names(PKG) if not f.endswith("._cls")]
    assert not found, found
