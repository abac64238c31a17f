"""The documentation site builds from docs/ with `mkdocs build --strict`: a broken link, a
page left out of the navigation, or a reference to a name that no longer exists (or whose
docstring griffe cannot read) fails the suite. The API reference (docs/reference/) covers
every public name of `scope_temporal` and of its test kit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import scope_temporal
import scope_temporal.testing

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"
DIRECTIVE = re.compile(r"(?m)^::: ([\w.]+)\s*$")


def referenced_names() -> set[str]:
    """The last part of every `::: dotted.path` block of the reference pages."""
    return {
        path.rpartition(".")[2]
        for page in REFERENCE.glob("*.md")
        for path in DIRECTIVE.findall(page.read_text())
    }


def test_the_reference_documents_every_public_name() -> None:
    names = referenced_names()
    public = [*scope_temporal.__all__, *scope_temporal.testing.__all__]
    assert [name for name in public if name not in names] == []


def test_every_reference_page_is_in_the_navigation() -> None:
    config = (REPO / "mkdocs.yml").read_text()
    pages = sorted(REPO.joinpath("docs").rglob("*.md"))
    missing = [str(p.relative_to(REPO / "docs")) for p in pages]
    assert [page for page in missing if page not in config] == []


def test_the_site_builds_with_strict_checks(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("material")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    warnings = [line for line in built.stderr.splitlines() if "WARNING" in line]
    assert built.returncode == 0, "\n".join(warnings) or built.stderr[-3000:]
    assert (tmp_path / "reference" / "definitions" / "index.html").is_file()
    page = (tmp_path / "reference" / "definitions" / "index.html").read_text()
    assert "max_model_calls" in page, "the reference renders Definition's arguments"
