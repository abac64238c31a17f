"""Unit-test fixtures."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

from scope_temporal.definition import Definition, ToolCallWorkflows
from scope_temporal.testing import LocalRunner
from tests.live.harness import in_mode


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Where a test-owned MCP server writes its call log (tests/mcp_servers)."""
    return tmp_path / "calls.jsonl"


@pytest.fixture
async def runners() -> AsyncIterator[list[LocalRunner]]:
    """LocalRunners a test makes, closed after it."""
    made: list[LocalRunner] = []
    yield made
    for runner in made:
        await runner.aclose()


@pytest.fixture(autouse=True)
def reference_app_exports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The reference app's `export_logs` writes into the test's folder (not the checkout),
    and quickly: still over its half-second foreground timeout, so it moves to the
    background as in the demo."""
    import activities.exports

    monkeypatch.setattr(activities.exports, "EXPORTS", tmp_path / "exports")
    monkeypatch.setattr(activities.exports, "STEP_SECONDS", 0.15)


# The tests of the conformance modules that run through LocalRunner run in both tool-call
# mappings, as the live ones do (tests/live/conftest.py): LocalRunner runs the workflows'
# drivers, so both mappings' code is proven at unit speed. The mapping changes nothing
# else (the fixture below only maps the Definitions a LocalRunner is given), so a test of
# the pure machines, which builds none, runs once: `builds_a_runner` finds which do, and
# a test it missed fails when it builds one. A test about one mapping's shape says so
# with `@pytest.mark.mapping("always")`.
MAPPED_MODULES = frozenset(
    {
        "test_core_approval_runs",
        "test_core_cancellation",
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
        "test_events_local",
        "test_session_runs",
    }
)
MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")
SUITE = Path(__file__).resolve().parent.parent
"""The test suite's folder: only its own helpers are followed."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mapping(mode): run only in this tool-call mapping")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.rsplit(".", 1)[-1] not in MAPPED_MODULES:
        return
    pinned = metafunc.definition.get_closest_marker("mapping")
    if pinned is None and not builds_a_runner(metafunc):
        return
    modes = (pinned.args[0],) if pinned is not None else MODES
    metafunc.parametrize("tool_call_mode", modes, indirect=True)


def builds_a_runner(metafunc: pytest.Metafunc) -> bool:
    """Whether the test may build a LocalRunner: its code, or a function, class or fixture
    of the test suite it names (transitively), names `LocalRunner`."""
    module = metafunc.module
    fixtures = [
        defs[-1].func
        for name in metafunc.fixturenames
        if name != "tool_call_mode" and (defs := metafunc._arg2fixturedefs.get(name))
    ]
    return any(_names_runner(f, vars(module), set()) for f in [metafunc.function, *fixtures])


def _names_runner(thing: Any, scope: dict[str, Any], seen: set[int]) -> bool:
    if id(thing) in seen:
        return False
    seen.add(id(thing))
    if thing is LocalRunner:
        return True
    if isinstance(thing, type):
        module = sys.modules.get(thing.__module__)
        if not _in_the_suite(getattr(module, "__file__", None) or ""):
            return False
        return any(_names_runner(v, scope, seen) for v in vars(thing).values())
    thing = getattr(thing, "__func__", thing)  # a method
    code = getattr(thing, "__code__", None)
    if not isinstance(code, CodeType) or not _in_the_suite(code.co_filename):
        return False
    names = getattr(thing, "__globals__", scope)
    return any(_names_runner(names.get(name), names, seen) for name in _names(code))


def _in_the_suite(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(SUITE)


def _names(code: CodeType) -> set[str]:
    """The global names `code` reads, its nested functions' and lambdas' included."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found |= _names(const)
    return found


@pytest.fixture(autouse=True)
def tool_call_mode(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> ToolCallWorkflows | None:
    """Every Definition a LocalRunner is given runs in this mapping (None: as declared)."""
    mode: ToolCallWorkflows | None = getattr(request, "param", None)
    built = LocalRunner.__init__
    if mode is not None:

        def mapped(self: LocalRunner, *, definitions: Iterable[Definition], **options: Any) -> None:
            built(self, definitions=[in_mode(d, mode) for d in definitions], **options)

        monkeypatch.setattr(LocalRunner, "__init__", mapped)
    elif request.module.__name__.rsplit(".", 1)[-1] in MAPPED_MODULES:

        def unmapped(self: LocalRunner, **options: Any) -> None:
            raise AssertionError(
                f"{request.node.name} builds a LocalRunner but runs in one mapping: "
                "`builds_a_runner` missed how (teach it), or mark it `mapping(...)`"
            )

        monkeypatch.setattr(LocalRunner, "__init__", unmapped)
    return mode
