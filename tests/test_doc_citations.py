"""Every page, section, file and name the code and the docs cite exists (issue 35: docs/options.md
pointed to README sections that did not exist; issue 37: docstrings cited README sections that
no longer existed, docs pages gave old paths and names).

Read in the package, the docs pages (docs/options.md is generated from the option
declarations), the README, the examples, the benchmarks, the scripts and the tests:

* a page ``docs/NAME.md`` or the README, with a quoted section after it
  (``docs/benchmarks.md, "Accuracy: mesh study"``, ``README, "Speed"``, ``the README's table,
  "Speed"``): the section is a heading (or a bold paragraph lead) of that page;
* an anchor (``README.md#speed``, ``docs/validation.md#thresholds``, and the Markdown links of
  the README and the docs pages, ``[text](validation.md#thresholds)``): the page exists and
  has a heading of that anchor (as MkDocs and GitHub make them) or an explicit ``{#id}``;
* a path from the repository's top (``data/tracks/README.md``, ``tests/test_ocp.py``): the file
  exists;
* a dotted name of the package (``pyomo_lap.ocp.build.VEHICLE_MODELS``): the module exists
  and defines the name (read from the source, nothing imported);
* in the docs pages and the README, a file in inline code (``ocp/full_model.py``,
  ``tree.py``): some file of the repository has that path or ends with it.
"""
from __future__ import annotations

import ast
import functools
import html
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_PAGE = re.compile(r"(?<![\w/])(docs/[\w/.-]+?\.md|README(?:\.md)?)(?:#([\w-]+))?`{0,2}"
                   r"(?:'s(?:\s+\w+)?)?(?:\s+section)?"
                   r"(?:(?:,|:)?\s+(?:section\s+)?([\"'])([^\"'\n]{3,80})\3)?")
"""A page, its anchor, and a quoted section after it (groups 1, 2, 4)."""

_LINK = re.compile(r"\]\(([^()\s#]*?)(?:#([\w-]+))?\)")
"""A Markdown link's target and anchor (groups 1, 2)."""

_ROOTED = re.compile(r"(?<![\w./$~-])((?:docs|data|models|tests|pyomo_lap|benchmarks|examples|"
                     r"scripts)/[\w./-]*[\w-]\.[a-z]{1,5})\b(?![\w/-])")
"""A path from the repository's top."""

_NAME = re.compile(r"(?<![\w./-])pyomo_lap(?:\.\w+)+")
"""A dotted name of the package."""

_CODE_FILE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|md))(?![\w/-])")
"""A file name in inline code (relative to the repository, the package or a subpackage)."""

_NOT_PYTHON = {
    "pyomo_lap.units": "a key of the Parquet schema metadata (docs/results.md)",
    "pyomo_lap.summary": "a key of the Parquet schema metadata (docs/results.md)",
    "pyomo_lap.verbosity": "a key of click's context (pyomo_lap/cli.py)",
}
_NOT_IN_THE_REPOSITORY = {
    "pyomo_lap/m.py": "written by tests/test_architecture.py in a temporary folder",
    "test/test_racecar.py": "dymos's test of its racecar example (docs/racecar.md)",
}
_PENDING_OTHER_BRANCHES = {
    ("pyomo_lap/ocp/common.py", "tests/test_named_model.py"),
}
"""Stale citations in files of the other branches of issue 37, ``(file, what it cites)``: their
owners fix them, the lead empties this after merging. A test fails when one is fixed, so that
it leaves the list."""
_THIS_FILE = Path(__file__).resolve()          # holds examples of broken citations


def _sources() -> list:
    files = []
    for folder in ("pyomo_lap", "docs", "examples", "benchmarks", "scripts", "tests"):
        files += [p for p in sorted((ROOT / folder).rglob("*"))
                  if p.suffix in (".py", ".md", ".sh") and p.is_file() and p.resolve() != _THIS_FILE]
    return files + [ROOT / name for name in ("README.md", "mkdocs.yml", "setup.cfg", "pyproject.toml")]


def _pages() -> list:
    """The Markdown pages whose links are checked: the README and the docs pages."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def _heading_texts(text: str) -> list:
    """The headings of a Markdown page as rendered (no code marks, emphasis or link targets),
    outside fenced code blocks, and the ``{#id}`` of each if given."""
    out = []
    for line in _outside_fences(text).splitlines():
        m = re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            head = m.group(1)
            given = re.search(r"\{[^}]*#([\w-]+)[^}]*\}\s*$", head)
            head = re.sub(r"\s*\{[^}]*\}\s*$", "", head)
            head = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", head).replace("`", "").replace("*", "")
            out.append((html.unescape(head), given.group(1) if given else None))
    return out


def _outside_fences(text: str) -> str:
    return re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)


def _slugs(heading: str) -> set:
    """The anchor of a heading as MkDocs makes it (Python-Markdown's toc) and as GitHub does."""
    ascii_ = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    mkdocs = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", ascii_).strip().lower())
    github = re.sub(r" ", "-", re.sub(r"[^\w\- ]", "", heading.strip().lower()))
    return {mkdocs, github}


@functools.lru_cache(maxsize=None)
def _anchors(page: Path) -> frozenset:
    found = set()
    text = page.read_text(encoding="utf-8")
    for head, given in _heading_texts(text):
        found |= {given} if given else _slugs(head)
    found |= set(re.findall(r"<a\s+(?:id|name)=\"([\w-]+)\"", text))
    return frozenset(found)


def _sections(page: Path) -> set:
    """The headings and the bold paragraph leads (``**Scaling and solver options.**``) of a
    Markdown page, lower case, without trailing punctuation."""
    text = page.read_text(encoding="utf-8")
    found = {m.group(1) for m in re.finditer(r"^#+\s+(.+?)\s*$", text, re.M)}
    found |= {m.group(1) for m in re.finditer(r"\*\*([^*\n]+?)\*\*", text)}
    return {f.strip().rstrip(".:").lower() for f in found}


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _citations():
    """``(file, page, anchor, section)`` of every page cited in the sources."""
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for m in _PAGE.finditer(" ".join(text.split())):     # docstrings wrap citations
            yield path.relative_to(ROOT), m.group(1), m.group(2), m.group(4)


def _citation_problems(where, page: str, anchor, section) -> list:
    target = ROOT / ("README.md" if page.startswith("README") else page)
    if not target.is_file():
        return [f"{where}: cites {page}, which does not exist"]
    out = []
    if anchor and anchor not in _anchors(target):
        out.append(f"{where}: cites {page}#{anchor}: no heading with that anchor there")
    if section:
        want = section.strip().rstrip(".:").lower()
        if not any(h == want or h.startswith(want) for h in _sections(target)):
            out.append(f"{where}: cites {page}, {section!r}: no such heading there")
    return out


@pytest.mark.unit
def test_every_cited_page_and_section_exists():
    problems, n = [], 0
    for where, page, anchor, section in _citations():
        n += 1
        problems += _citation_problems(where, page, anchor, section)
    assert n > 10          # the pattern finds the citations (docs/options.md, docs/solvers.md ...)
    assert not problems, "\n".join(problems)


@pytest.mark.unit
def test_the_check_catches_a_missing_section(tmp_path):
    """The pattern reads the forms used: a quoted section after a page, across a line break,
    after a page in inline code, after "the README's <noun>"; an anchor."""
    text = ('lap time (README, "Mesh study") and (docs/solvers.md, "Scaling and\n    solver '
            'options") and docs/benchmarks.md, \'Accuracy: mesh study\' and (`docs/racecar.md`, '
            '"Solver path") (the README\'s table, "Lap-time sensitivities") README.md#speed')
    got = [(m.group(1), m.group(2), m.group(4)) for m in _PAGE.finditer(" ".join(text.split()))]
    assert got == [("README", None, "Mesh study"),
                   ("docs/solvers.md", None, "Scaling and solver options"),
                   ("docs/benchmarks.md", None, "Accuracy: mesh study"),
                   ("docs/racecar.md", None, "Solver path"),
                   ("README", None, "Lap-time sensitivities"),
                   ("README.md", "speed", None)]
    assert "mesh study" not in _sections(ROOT / "README.md")
    assert "scaling and solver options" in _sections(ROOT / "docs" / "solvers.md")
    assert _citation_problems("x.py", "README", None, "Lap-time sensitivities") == [
        "x.py: cites README, 'Lap-time sensitivities': no such heading there"]
    assert _citation_problems("x.py", "README.md", "speed", None) == []
    assert _citation_problems("x.py", "README.md", "sped", None) == [
        "x.py: cites README.md#sped: no heading with that anchor there"]
    assert _citation_problems("x.py", "docs/nowhere.md", None, None) == [
        "x.py: cites docs/nowhere.md, which does not exist"]


@pytest.mark.unit
def test_every_link_of_the_readme_and_the_docs_pages_reaches_its_page_and_anchor():
    problems = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for m in _LINK.finditer(_outside_fences(text)):
            target, anchor = m.group(1), m.group(2)
            if "://" in target or target.startswith("mailto:"):
                continue
            if target and not target.endswith(".md"):
                if not (page.parent / target).exists():
                    problems.append(f"{page.relative_to(ROOT)}: links to {target}, which does not exist")
                continue
            dest = (page.parent / target) if target else page
            if not dest.is_file():
                problems.append(f"{page.relative_to(ROOT)}: links to {target}, which does not exist")
            elif anchor and anchor not in _anchors(dest):
                problems.append(f"{page.relative_to(ROOT)}: links to {target}#{anchor}: "
                                f"no heading with that anchor in {dest.relative_to(ROOT)}")
    assert not problems, "\n".join(problems)


@pytest.mark.unit
def test_the_anchors_are_made_as_mkdocs_and_github_make_them(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n## Quick start: the command line\n\n"
                    "## Side by side (`bash scripts/benchmark.sh --job both`)\n\n"
                    "## Custom {#mine}\n\n```bash\n# not a heading\n```\n", encoding="utf-8")
    anchors = _anchors(page)
    assert {"title", "quick-start-the-command-line", "mine",
            "side-by-side-bash-scriptsbenchmarksh-job-both"} <= anchors
    assert "not-a-heading" not in anchors and "custom" not in anchors
    assert "every-car-on-every-circuit" in _anchors(ROOT / "docs" / "validation.md")


@pytest.mark.unit
def test_every_path_from_the_top_of_the_repository_exists():
    problems, pending = [], set()
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for m in _ROOTED.finditer(text):
            cited, where = m.group(1), path.relative_to(ROOT).as_posix()
            if "*" in cited or cited in _NOT_IN_THE_REPOSITORY or (ROOT / cited).exists():
                continue
            if (where, cited) in _PENDING_OTHER_BRANCHES:
                pending.add((where, cited))
            else:
                problems.append(f"{where}:{_line(text, m.start())}: {cited}")
    assert not problems, "cited files that do not exist:\n" + "\n".join(problems)
    fixed = sorted(_PENDING_OTHER_BRANCHES - pending)
    assert not fixed, f"fixed: remove {fixed} from _PENDING_OTHER_BRANCHES"


# --- dotted names of the package, read from the source ------------------------------------

def _module_file(module: str):
    rel = Path(*module.split("."))
    for cand in (ROOT / rel.with_suffix(".py"), ROOT / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _scope(body) -> dict:
    """The names a module or class body defines: functions, classes, assignments, imports
    (also under ``if`` / ``try``)."""
    out = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                out.update({n.id: node for n in ast.walk(t) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in [getattr(node, k, []) for k in ("body", "orelse", "finalbody")] + [
                    h.body for h in getattr(node, "handlers", [])]:
                out.update(_scope(block))
    return out


@functools.lru_cache(maxsize=None)
def _module_names(path: Path) -> tuple:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = _scope(tree.body)
    exported = set()
    for node in tree.body:          # __all__ (the lazy names of pyomo_lap/__init__.py)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            exported = {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
    return names, exported


def _name_exists(name: str) -> bool:
    """Whether ``pyomo_lap.a.b.c`` is a module of the package, or a name a module defines, or
    an attribute of a class it defines (its body, ``self.x = ...``, or a base class's: then not
    checked further). Past a function or a value, attributes are not checked."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        path = _module_file(".".join(parts[:k]))
        if path is not None:
            break
    else:
        return False
    rest = parts[k:]
    if not rest or _plainly_defined(path, rest):
        return True
    names, exported = _module_names(path)          # the exact reading: parse the module
    node = names.get(rest[0])
    if node is None:
        return rest[0] in exported
    for attr in rest[1:]:
        if not isinstance(node, ast.ClassDef):
            return True
        inner = _scope(node.body)
        if attr in inner:
            node = inner[attr]
            continue
        self_attrs = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Name) and n.value.id == "self"}
        return attr in self_attrs or bool(node.bases)
    return True


@functools.lru_cache(maxsize=None)
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _plainly_defined(path: Path, rest: list) -> bool:
    """The quick reading, without parsing (most names): a function, class or value at the top of
    the module (``def NAME``, ``class NAME``, ``NAME = ...``, ``from ... import NAME``), or an
    attribute of a class defined in its body (``def ATTR``, ``ATTR: ...``, ``ATTR = ...``), one
    level deep. False: ask the parser."""
    text = _text(path)
    if len(rest) > 2:
        return False
    top = re.search(rf"^(?:(?:async\s+)?def|class)\s+{rest[0]}\b", text, re.M)
    if top is None and len(rest) == 1:        # a value, or a name imported on one line
        return re.search(rf"^{rest[0]}\s*(?::[^=\n]*)?=|^from\s+\S+\s+import\s[^(\n]*\b{rest[0]}\b",
                         text, re.M) is not None
    if top is None or len(rest) == 1:
        return top is not None
    if not top.group(0).startswith("class"):
        return True
    start = text.find("\n", top.end()) + 1
    end = re.search(r"^\S", text[start:], re.M)
    body = text[start:start + end.start()] if end else text[start:]
    return re.search(rf"^\s+(?:(?:async\s+)?def\s+{rest[1]}\b|{rest[1]}\s*[:=])", body, re.M) is not None


@pytest.mark.unit
def test_every_dotted_name_of_the_package_exists():
    problems, n = [], 0
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for m in _NAME.finditer(text):
            n += 1
            if m.group(0) not in _NOT_PYTHON and not _name_exists(m.group(0)):
                problems.append(f"{path.relative_to(ROOT)}:{_line(text, m.start())}: {m.group(0)}")
    assert n > 100
    assert not problems, "names of the package that do not exist:\n" + "\n".join(problems)


@pytest.mark.unit
def test_the_name_check_sees_what_is_not_there():
    assert _name_exists("pyomo_lap.ocp.build.VEHICLE_MODELS")
    assert _name_exists("pyomo_lap.ocp")                                  # a subpackage
    assert _name_exists("pyomo_lap.sweep")                                # lazy, in __all__
    assert _name_exists("pyomo_lap.ocp.vehicle_model.ProblemData.point_rows")  # a field
    assert _name_exists("pyomo_lap.ocp.vehicle_model.VehicleModel.variables")  # a property
    assert not _name_exists("pyomo_lap.ocp.ocp_common")                   # an old module
    assert not _name_exists("pyomo_lap.ocp.build.VEHICLE_MODEL")          # a misspelt name
    assert not _name_exists("pyomo_lap.ocp.vehicle_model.ProblemData.rows")
    assert not _name_exists("pyomo_lap.vehicle_model")


@functools.lru_cache(maxsize=None)
def _repository_files() -> frozenset:
    skip = {".git", ".venv", "site", "__pycache__"}
    return frozenset(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                     if p.suffix in (".py", ".md") and not skip & set(p.relative_to(ROOT).parts)
                     and p.relative_to(ROOT).parts[0] != "results")     # a solve's default folder


def _file_exists(cited: str) -> bool:
    """A file cited in a docs page: from the repository's top or the package's, or the end of
    some file's path (``tree.py``, ``ocp/full_model.py``)."""
    if cited in _NOT_IN_THE_REPOSITORY or (ROOT / cited).is_file() or (ROOT / "pyomo_lap" / cited).is_file():
        return True
    return any(f == cited or f.endswith("/" + cited) for f in _repository_files())


@pytest.mark.unit
def test_every_file_named_in_inline_code_of_the_docs_pages_exists():
    problems = []
    for page in _pages():
        text = _outside_fences(page.read_text(encoding="utf-8"))
        for code in re.finditer(r"`([^`\n]+)`", text):
            for m in _CODE_FILE.finditer(code.group(1)):
                if not _file_exists(m.group(1)):
                    problems.append(f"{page.relative_to(ROOT)}:{_line(text, code.start())}: "
                                    f"{m.group(1)}")
    assert not problems, "files named in the docs that do not exist:\n" + "\n".join(problems)


@pytest.mark.unit
def test_the_file_check_reads_paths_of_the_package_and_its_subpackages():
    assert _file_exists("ocp/full_model.py") and _file_exists("tree.py")
    assert _file_exists("pyomo_lap/ocp/build.py") and _file_exists("docs/racecar.md")
    assert not _file_exists("vehicle.py") and not _file_exists("ocp/ocp_common.py")
    assert [m.group(1) for m in _CODE_FILE.finditer("python benchmarks/laps.py --out x.md")] == [
        "benchmarks/laps.py", "x.md"]


# --- the site: its navigation and the modules page ------------------------------------------

def _nav_entries(mkdocs_yml: str) -> list:
    """The files of the ``nav:`` of mkdocs.yml (``- Title: page.md``), relative to docs/."""
    nav = re.search(r"^nav:\n(.*?)(?=^\S)", mkdocs_yml, re.M | re.S)
    assert nav, "mkdocs.yml has no nav"
    return re.findall(r":\s*\"?([\w/.-]+\.(?:md|py))\"?\s*$", nav.group(1), re.M)


@pytest.mark.unit
def test_the_site_navigation_lists_every_docs_page_once():
    """Every page of docs/ (and every tutorial) is in the navigation of mkdocs.yml, once, and
    every entry there is a page (the site build, an integration test, warns of the first only)."""
    listed = _nav_entries((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = ROOT / "docs"
    pages = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    pages |= {p.relative_to(docs).as_posix() for p in (docs / "tutorials").glob("*.py")}
    assert sorted(pages - set(listed)) == [], "not in mkdocs.yml's nav"
    assert sorted(set(listed) - pages) == [], "in mkdocs.yml's nav, but not in docs/"
    assert len(listed) == len(set(listed)), "listed twice in mkdocs.yml's nav"


@pytest.mark.unit
def test_the_navigation_reader_reads_the_nav_only():
    text = ('site_name: x\nnav:\n  - Home: index.md\n  - Part:\n      - "A: b": a.md\n'
            '      - T: tutorials/t.py\nplugins:\n  - x: y.md\n')
    assert _nav_entries(text) == ["index.md", "a.md", "tutorials/t.py"]


@pytest.mark.unit
def test_the_modules_page_puts_each_module_under_its_subpackage():
    """docs/reference/modules.md: ``::: pyomo_lap.<package>.<module>`` under the heading
    ``pyomo_lap.<package>``, the top-level modules under "The top layer" (test_first_hour.py
    checks that every module is there)."""
    text = (ROOT / "docs" / "reference" / "modules.md").read_text(encoding="utf-8")
    section, wrong = None, []
    for line in text.splitlines():
        head = re.match(r"##\s+`?([\w. ]+?)`?\s*$", line)
        if head:
            section = head.group(1)
        mod = re.match(r"::: (pyomo_lap(?:\.\w+)+)\s*$", line)
        if mod:
            parts = mod.group(1).split(".")
            want = ".".join(parts[:2]) if len(parts) > 2 else "The top layer"
            if section != want:
                wrong.append(f"{mod.group(1)} under {section!r}, not {want!r}")
    assert not wrong, "\n".join(wrong)
