"""Every python block of docs/ that needs no external service runs as written (the
convention in tests/docs_blocks.py: blocks marked `server` run in the live suite, blocks
marked `skip` say why)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.docs_blocks import REPO, blocks, pages, run_page, stray_markers

PAGES = [page for page in pages() if blocks(page)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
async def test_the_offline_blocks_of_each_docs_page_run_as_written(
    page: Path, tmp_path: Path
) -> None:
    await asyncio.wait_for(run_page(page, tmp_path), timeout=120)


def test_every_marker_sits_on_a_python_block_and_every_skip_says_why() -> None:
    # a marker that is misspelt, misplaced or a skip without its reason is stray
    assert {str(page): stray_markers(page) for page in pages() if stray_markers(page)} == {}


def test_a_stray_or_unexplained_marker_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs: skip -->\n```python\nx\n```\n<!-- docs: sever -->\n```python\ny\n```\n"
        "<!-- docs: server -->\ntext\n```python\nz\n```\n"
    )
    assert stray_markers(page) == [
        "<!-- docs: skip -->",
        "<!-- docs: sever -->",
        "<!-- docs: server -->",
    ]
    assert [b.mode for b in blocks(page)] == ["offline", "offline", "offline"]


def test_the_tutorial_runs_offline_and_live() -> None:
    modes = [block.mode for block in blocks(REPO / "docs" / "tutorial.md")]
    assert modes.count("offline") >= 3 and modes.count("server") >= 4
    assert "skip" not in modes


async def test_a_failing_block_fails_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\n<!-- docs: skip: a fragment -->\n```python\nundefined\n```\n"
        "```python\n# lib.py\nVALUE = x if 'x' in dir() else 2\n```\n"
        "```python\n# test_lib.py\nfrom lib import VALUE\n\n"
        "def test_value():\n    assert VALUE == 3\n```\n"
    )
    with pytest.raises(AssertionError):
        await run_page(page, tmp_path)
    assert [b.mode for b in blocks(page)] == ["offline", "skip", "offline", "offline"]
