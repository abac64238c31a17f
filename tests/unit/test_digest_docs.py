"""docs/deploy.md lists what a Definition's digest covers, generated from the code: every
argument of `Definition(...)` (each changes the digest when set: tests/unit/test_definition.py
and test_validator_digest.py), and the page lists exactly those."""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path

from scope_temporal import Definition

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def digest_arguments() -> list[str]:
    return list(inspect.signature(Definition).parameters)


def rendered(names: list[str]) -> str:
    """The page's list, as the block between the digest-covers markers holds it."""
    return textwrap.fill(", ".join(f"`{n}`" for n in names), width=90)


def test_deploy_lists_every_argument_a_definitions_digest_covers() -> None:
    block = re.search(
        r"<!-- digest-covers:start -->\n(.*?)\n<!-- digest-covers:end -->", DEPLOY.read_text(), re.S
    )
    assert block is not None
    expected = rendered(digest_arguments())
    assert block.group(1) == expected, f"replace the list in docs/deploy.md with:\n{expected}"
