"""The docstrings of pyomo_lap pass ruff's pydocstyle rules (``D``, numpy convention; the
configuration and the ignored rules, with the reasons, are in pyproject.toml's
``[tool.ruff]``), and no docstring holds a control character such as a tab (``"\\tau"`` in a
string that is not raw is a tab followed by ``au``: issue 37 found them in spatial/tree.py).

ruff is one of the test extras (setup.cfg; scripts/bootstrap.sh installs them): without it the
lint test fails, it does not skip, so CI cannot pass without having run it.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pyomo_lap"

# Files of the other branches of issue 37 that still have violations when this test was
# written (their owners' branches fix them; the lead empties this list after merging them).
# The test fails if a file here has none any more, so the list never names a clean file.
_PENDING_OTHER_BRANCHES = ()

# Subpackages whose docstring (``__init__.py``, another branch's file) does not name all their
# modules yet; the test fails when one of them does, so that it leaves this list.
_PENDING_PACKAGE_DOCSTRINGS = (
    "pyomo_lap/track/__init__.py",
)

_CONTROL = {"\t": "a tab", "\a": "a bell (\\a)", "\b": "a backspace (\\b)",
            "\v": "a vertical tab (\\v)", "\f": "a form feed (\\f)", "\r": "a carriage return",
            "\x00": "a NUL (\\0)"}


def _ruff_command() -> list:
    """``python -m ruff`` if the package is installed in this interpreter, else a ``ruff``
    executable next to it (a venv's bin/); a failure naming the fix otherwise."""
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    exe = Path(sys.executable).with_name("ruff")
    if exe.is_file():
        return [str(exe)]
    pytest.fail("ruff is not installed, so the docstrings cannot be checked: install the test "
                "extras (pip install -e '.[test]'; scripts/bootstrap.sh does it)")


def _ruff(paths, cwd: Path = ROOT) -> list:
    """ruff's findings on ``paths`` with the project's configuration (pyproject.toml), as
    ``(path relative to cwd, line, code, message)``; no cache folder is written."""
    proc = subprocess.run(
        [*_ruff_command(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
         "--output-format", "json", "--exit-zero", *map(str, paths)],
        cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"ruff failed to run:\n{proc.stderr}"
    found = []
    for v in json.loads(proc.stdout):
        rel = Path(v["filename"]).resolve().relative_to(cwd.resolve()).as_posix()
        found.append((rel, v["location"]["row"], v["code"], v["message"]))
    return found


def _by_file(found) -> dict:
    out = defaultdict(list)
    for path, row, code, message in found:
        out[path].append(f"{path}:{row}: {code} {message}")
    return out


@pytest.mark.component          # runs ruff, a child process (tests/conftest.py)
def test_the_docstrings_pass_pydocstyle():
    by_file = _by_file(_ruff(["pyomo_lap"]))
    assert by_file or _PENDING_OTHER_BRANCHES == (), "ruff found nothing at all: was it run?"
    new = [line for path, lines in sorted(by_file.items())
           if path not in _PENDING_OTHER_BRANCHES for line in lines]
    assert not new, (f"{len(new)} docstring violations (pyproject.toml [tool.ruff]; "
                     f"`.venv/bin/ruff check` lists them too):\n" + "\n".join(new))
    clean = [p for p in _PENDING_OTHER_BRANCHES if p not in by_file]
    assert not clean, ("no violations left in these files: remove them from "
                       "_PENDING_OTHER_BRANCHES in tests/test_docstyle.py:\n" + "\n".join(clean))


@pytest.mark.component          # runs ruff, a child process (tests/conftest.py)
def test_the_linter_flags_what_the_project_forbids_and_not_its_style(tmp_path):
    """The configuration is read: a missing docstring and a backslash in a docstring that is not
    raw are flagged; a summary over two lines in the indicative mood is not, nor an
    ``__init__`` documented in its class's docstring (numpy convention: D107 is off)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""A module whose summary runs over\ntwo lines, as this project writes them."""\n\n\n'
        'def documented(x):\n    """The square of ``x``, in the indicative mood and over\n'
        '    two lines."""\n    return x * x\n\n\n'
        'def undocumented(x):\n    return x\n\n\n'
        'def backslash(x):\n    """The angle :math:`\\\\theta` of ``x``."""\n    return x\n\n\n'
        'class Documented:\n    """A class whose ``__init__`` is documented here (numpy)."""\n\n'
        '    def __init__(self):\n        self.x = 1\n',
        encoding="utf-8")
    codes = sorted(code for _, _, code, _ in _ruff([sample], cwd=tmp_path))
    assert codes == ["D103", "D301"]


def _docstrings(path: Path):
    """``(line, docstring)`` of the module, its classes and its functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                yield body[0].lineno, body[0].value.value


def _control_characters(path: Path, root: Path = ROOT) -> list:
    return [f"{path.relative_to(root).as_posix()}:{line}: {name} in the docstring"
            for line, doc in _docstrings(path) for ch, name in _CONTROL.items() if ch in doc]


@pytest.mark.unit
def test_no_docstring_holds_a_tab_or_another_control_character():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(ROOT).as_posix() not in _PENDING_OTHER_BRANCHES:
            found += _control_characters(path)
    assert not found, ("a backslash escape in a docstring that is not raw (write r\"\"\"...; "
                       "\\tau is a tab and 'au'):\n" + "\n".join(found))


@pytest.mark.unit
def test_the_control_character_check_finds_escapes_but_not_raw_docstrings(tmp_path):
    (tmp_path / "m.py").write_text(
        'class A:\n    """The torque :math:`\\tau` and :math:`\\beta`."""\n\n\n'
        'def f():\n    r"""The torque :math:`\\tau`."""\n', encoding="utf-8")
    assert _control_characters(tmp_path / "m.py", tmp_path) == [
        "m.py:2: a tab in the docstring", "m.py:2: a backspace (\\b) in the docstring"]


@pytest.mark.unit
def test_the_pending_list_names_real_files_once():
    assert len(set(_PENDING_OTHER_BRANCHES)) == len(_PENDING_OTHER_BRANCHES)
    missing = [p for p in _PENDING_OTHER_BRANCHES if not (ROOT / p).is_file()]
    assert not missing, missing


@pytest.mark.unit
def test_ruff_is_one_of_the_test_extras():
    """CI installs the test extras (.ci/run -> scripts/test.sh -> scripts/bootstrap.sh:
    pip install -e '.[test,docs]'), so ruff must be one of them."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg", encoding="utf-8")
    test_extras = [line.strip() for line in cfg["options.extras_require"]["test"].splitlines()]
    assert any(line.startswith("ruff") for line in test_extras), test_extras


@pytest.mark.unit
def test_without_ruff_the_lint_fails_and_says_to_install_the_test_extras(monkeypatch, tmp_path):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(pytest.fail.Exception, match=r"install the test extras"):
        _ruff_command()


def _unnamed_modules(package: Path, root: Path = ROOT) -> list:
    """The modules of ``package`` that its docstring does not name as ``:mod:`.name``` (or
    ``:mod:`pyomo_lap.<package>.name```)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    full = ".".join(package.relative_to(root).parts)
    return sorted(f.stem for f in package.glob("*.py") if f.name != "__init__.py"
                  and f":mod:`.{f.stem}`" not in doc and f":mod:`{full}.{f.stem}`" not in doc)


@pytest.mark.unit
def test_every_subpackage_docstring_names_its_modules():
    """A newcomer reads ``pyomo_lap/<package>/__init__.py`` first: it says what each module of
    the package is for (issue 37: these lists had fallen behind the modules)."""
    missing, done = [], []
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        rel = init.relative_to(ROOT).as_posix()
        unnamed = _unnamed_modules(init.parent)
        if unnamed and rel not in _PENDING_PACKAGE_DOCSTRINGS:
            missing.append(f"{rel}: " + ", ".join(f":mod:`.{m}`" for m in unnamed))
        if not unnamed and rel in _PENDING_PACKAGE_DOCSTRINGS:
            done.append(rel)
    assert not missing, "name these modules in their package's docstring:\n" + "\n".join(missing)
    assert not done, ("these name all their modules now: remove them from "
                      "_PENDING_PACKAGE_DOCSTRINGS in tests/test_docstyle.py:\n" + "\n".join(done))


@pytest.mark.unit
def test_the_package_docstring_check_sees_a_module_left_out(tmp_path):
    fake = tmp_path / "pyomo_lap" / "vehicle"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('"""Cars: :mod:`.car` and :mod:`pyomo_lap.' + 'vehicle.tyre`."""\n')
    for name in ("car", "tyre", "brakes"):
        (fake / f"{name}.py").write_text("")
    assert _unnamed_modules(fake, tmp_path) == ["brakes"]
