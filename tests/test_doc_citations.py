"""Every page and section the code and the docs cite exists: ``docs/NAME.md`` in docstrings,
comments and option descriptions (so also in the generated docs/options.md), a quoted section
after it (``docs/benchmarks.md, "Accuracy: mesh study"``) and a quoted section of the README
(``README, "Speed"``) are headings (or bold paragraph leads) of that page; nothing cites a
README section that is not there (issue 35: docs/options.md pointed to README sections that
did not exist)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_PAGE = re.compile(r"(?<![\w/])(docs/[\w/.-]+?\.md|README(?:\.md)?)(?:'s)?(?:\s+section)?"
                   r"(?:(?:,|:)?\s+(?:section\s+)?([\"'])([^\"'\n]{3,80})\2)?")


def _sources() -> list:
    files = sorted((ROOT / "pyomo_lap").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md"))
    return files + [ROOT / "README.md"]


def _sections(page: Path) -> set:
    """The headings and the bold paragraph leads (``**Scaling and solver options.**``) of a
    Markdown page, lower case, without trailing punctuation."""
    text = page.read_text(encoding="utf-8")
    found = {m.group(1) for m in re.finditer(r"^#+\s+(.+?)\s*$", text, re.M)}
    found |= {m.group(1) for m in re.finditer(r"\*\*([^*\n]+?)\*\*", text)}
    return {f.strip().rstrip(".:").lower() for f in found}


def _citations():
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for m in _PAGE.finditer(" ".join(text.split())):     # docstrings wrap citations
            yield path.relative_to(ROOT), m.group(1), m.group(3)


@pytest.mark.unit
def test_every_cited_page_and_section_exists():
    problems, n = [], 0
    for where, page, section in _citations():
        n += 1
        target = ROOT / ("README.md" if page.startswith("README") else page)
        if not target.is_file():
            problems.append(f"{where}: cites {page}, which does not exist")
            continue
        if section is None:
            continue
        heads = _sections(target)
        want = section.strip().rstrip(".:").lower()
        if not any(h == want or h.startswith(want) for h in heads):
            problems.append(f"{where}: cites {page}, {section!r}: no such heading there")
    assert n > 10          # the pattern finds the citations (docs/options.md, docs/solvers.md ...)
    assert not problems, "\n".join(problems)


@pytest.mark.unit
def test_the_check_catches_a_missing_section(tmp_path):
    """The pattern reads the forms used: a quoted section after a page, across a line break."""
    text = ('lap time (README, "Mesh study") and (docs/solvers.md, "Scaling and\n    solver '
            'options") and docs/benchmarks.md, \'Accuracy: mesh study\'')
    got = [(m.group(1), m.group(3)) for m in _PAGE.finditer(" ".join(text.split()))]
    assert got == [("README", "Mesh study"), ("docs/solvers.md", "Scaling and solver options"),
                   ("docs/benchmarks.md", "Accuracy: mesh study")]
    assert "mesh study" not in _sections(ROOT / "README.md")
    assert "scaling and solver options" in _sections(ROOT / "docs" / "solvers.md")
