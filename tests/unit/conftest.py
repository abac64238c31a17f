"""Unit-test fixtures."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from scope_temporal.definition import Definition, ToolCallWorkflows
from scope_temporal.testing import LocalRunner
from tests.live.harness import in_mode


@pytest.fixture(autouse=True)
def reference_app_exports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The reference app's `export_logs` writes into the test's folder (not the checkout),
    and quickly: still over its half-second foreground timeout, so it moves to the
    background as in the demo."""
    import activities.exports

    monkeypatch.setattr(activities.exports, "EXPORTS", tmp_path / "exports")
    monkeypatch.setattr(activities.exports, "STEP_SECONDS", 0.15)


# The conformance modules that run through LocalRunner run in both tool-call mappings, as
# the live ones do (tests/live/conftest.py): LocalRunner runs the workflows' drivers, so
# both mappings' code is proven at unit speed. A test about one mapping's shape says so
# with `@pytest.mark.mapping("always")`.
MAPPED_MODULES = frozenset(
    {
        "test_core_approval_runs",
        "test_core_delegates",
        "test_core_drivers",
        "test_core_host",
        "test_core_loop",
        "test_core_model_retries",
        "test_core_steering",
        "test_core_tool_outcomes",
        "test_core_tool_results",
        "test_core_tool_scheduling",
        "test_core_waits",
    }
)
MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mapping(mode): run only in this tool-call mapping")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.rsplit(".", 1)[-1] not in MAPPED_MODULES:
        return
    pinned = metafunc.definition.get_closest_marker("mapping")
    modes = (pinned.args[0],) if pinned is not None else MODES
    metafunc.parametrize("tool_call_mode", modes, indirect=True)


@pytest.fixture(autouse=True)
def tool_call_mode(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> ToolCallWorkflows | None:
    """Every Definition a LocalRunner is given runs in this mapping (None: as declared)."""
    mode: ToolCallWorkflows | None = getattr(request, "param", None)
    if mode is not None:
        built = LocalRunner.__init__

        def mapped(self: LocalRunner, *, definitions: Iterable[Definition], **options: Any) -> None:
            built(self, definitions=[in_mode(d, mode) for d in definitions], **options)

        monkeypatch.setattr(LocalRunner, "__init__", mapped)
    return mode
