"""The SDK's docstrings and messages cite only what a reader of the repository can open:
pages of docs/ that exist, never design notes kept outside it (API.md, DESIGN.md, STYLE.md,
CONFORMANCE.md) nor README sections."""

from __future__ import annotations

import re
from pathlib import Path

import scope_temporal

PACKAGE = Path(scope_temporal.__file__).parent
REPO = PACKAGE.parent
OUTSIDE = re.compile(r"\b(?:API|DESIGN|STYLE|CONFORMANCE)(?:\.md\b|\s+(?:section\s+)?c?\d)")
README_SECTION = re.compile(r"README'?s? [A-Z][\w ]* section|README section")
DOCS_PAGE = re.compile(r"\bdocs/([\w/-]+\.md)")


def citations(text: str) -> tuple[list[str], list[str]]:
    """What `text` cites outside the repository, and the docs/ pages it cites."""
    outside = [m.group(0) for m in OUTSIDE.finditer(text)]
    outside += [m.group(0) for m in README_SECTION.finditer(text)]
    return outside, [m.group(1) for m in DOCS_PAGE.finditer(text)]


def test_the_sdk_cites_no_file_outside_the_repository_and_only_docs_pages_that_exist() -> None:
    outside: list[str] = []
    missing: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(REPO))
        cited_outside, pages = citations(path.read_text())
        outside += [f"{where}: {cite}" for cite in cited_outside]
        missing += [
            f"{where}: docs/{page}" for page in pages if not (REPO / "docs" / page).is_file()
        ]
    assert outside == []
    assert missing == []


def test_the_citation_scan_finds_each_kind() -> None:
    text = (
        "Rules (DESIGN.md 2.4); see API.md; (CONFORMANCE 51); (CONFORMANCE c59); see the "
        "README's Performance section; docs/models.md"
    )
    outside, pages = citations(text)
    assert outside == [
        "DESIGN.md",
        "API.md",
        "CONFORMANCE 5",
        "CONFORMANCE c5",
        "README's Performance section",
    ]
    assert pages == ["models.md"]
