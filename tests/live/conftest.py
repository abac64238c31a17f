"""Live tests: the conformance modules (`test_live_*`) run in both tool-call mappings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scope_temporal.definition import ToolCallWorkflows
from tests.live import harness

MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.rsplit(".", 1)[-1].startswith("test_live_"):
        metafunc.parametrize("tool_call_mode", MODES, indirect=True)


@pytest.fixture(autouse=True)
def tool_call_mode(request: pytest.FixtureRequest) -> Iterator[ToolCallWorkflows | None]:
    """The mapping `serving` gives every Definition (as declared elsewhere)."""
    mode: ToolCallWorkflows | None = getattr(request, "param", None)
    harness.TOOL_CALL_MODE[0] = mode
    try:
        yield mode
    finally:
        harness.TOOL_CALL_MODE[0] = None
