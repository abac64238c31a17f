"""The README stays the quick path, with the reference in docs/: every relative link of the
README, the changelog and docs/*.md reaches an existing file (and heading), every docs page is
linked from the README, and CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, REPO / "CHANGELOG.md", *DOCS]
LINK = re.compile(r"\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # https:, mailto: ... (not checked here)


def _outside_fences(text: str) -> str:
    return re.sub(r"(?ms)^```.*?^```[^\n]*$", "", text)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of `page` (a repeated one gets -1, -2 ...)."""
    anchors: set[str] = set()
    for heading in re.findall(r"(?m)^#{1,6} +(.+?) *#*$", _outside_fences(page.read_text())):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in anchors:
            n += 1
            candidate = f"{slug}-{n}"
        anchors.add(candidate)
    return anchors


def _links(page: Path) -> list[str]:
    """The link targets of `page`, code (fenced or inline) left out."""
    return LINK.findall(re.sub(r"`[^`\n]*`", "", _outside_fences(page.read_text())))


def broken_links(page: Path, root: Path) -> list[str]:
    """The relative links of `page` that reach no file inside `root`, or no heading of it."""
    broken = []
    for target in _links(page):
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        in_tree = file.exists() and file.is_relative_to(root.resolve())
        if not in_tree or (anchor and (file.suffix != ".md" or anchor not in _anchors(file))):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_reaches_an_existing_file_and_heading(page: Path) -> None:
    assert page.is_file()
    assert broken_links(page, REPO) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## Its `part` two\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n[a](other.md) [b](other.md#its-part-two) [c](#page) [d](https://x.org/y)\n"
        "[e](missing.md#top) [f](other.md#nope) [g](#nope) [h](../outside.md)\n"
        "`[i](in-code.md)`\n```\n[j](in-a-block.md)\n# not a heading\n```\n[k](#not-a-heading)\n"
    )
    (tmp_path.parent / "outside.md").write_text("# Outside\n")
    assert broken_links(page, tmp_path) == [
        "missing.md#top",
        "other.md#nope",
        "#nope",
        "../outside.md",
        "#not-a-heading",
    ]


def test_every_docs_page_is_linked_from_the_readme_or_the_sites_home() -> None:
    home = REPO / "docs" / "index.md"
    linked = {
        (page.parent / target.partition("#")[0]).resolve()
        for page in (README, home)
        for target in _links(page)
        if not SCHEME.match(target)
    }
    assert home.resolve() in linked, "the README links the site's home"
    assert DOCS, "the reference lives in docs/"
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


def test_the_readme_is_the_quick_path_from_clone_to_a_running_agent() -> None:
    text = README.read_text()
    first_screen = text[: text.index("```bash")]
    assert "Python 3.11 or newer" in first_screen and "python3 -m venv" in first_screen
    first_block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["pip install -e '.[dev]' && scope-temporal demo", "python -m pytest"]
    assert "## Architecture" in text.splitlines()
    assert len(text.splitlines()) <= 350, "the README is the quick path; put reference in docs/"


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    assert "Run the tests with `python -m pytest`" in README.read_text()
    steps = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert steps[-1] == "python -m pytest"
