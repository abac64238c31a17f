"""Session fixtures: one real Temporal dev server for the whole run; the `--full` option.

`python -m pytest` runs the CI subset: tests marked `full` (every kill point in both
tool-call mappings, 50 interactions on three workers, ...) are skipped unless `--full`;
the soak (`tests/faults/test_soak.py`) runs only with `--soak MINUTES`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeWorker
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path
from tests.faults import figures
from tests.faults.test_soak import DRAIN_SECONDS as SOAK_DRAIN_SECONDS
from tests.live.harness import REGISTRY_BY_QUEUE


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="also run the long fault-injection variants (marked `full`)",
    )
    parser.addoption(
        "--soak",
        type=float,
        default=0.0,
        metavar="MINUTES",
        help="run the fault soak (tests/faults/test_soak.py) for MINUTES (default: skipped)",
    )
    parser.addoption(
        "--soak-mapping",
        default="always",
        choices=["always", "on_demand"],
        help="the tool-call mapping the soak's workers run (default: always)",
    )


def pytest_configure(config: pytest.Config) -> None:
    figures.FULL = bool(config.getoption("--full"))
    config.addinivalue_line(
        "markers", "full: a long variant, run only with --full (CI runs a deterministic subset)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    soak_minutes = float(config.getoption("--soak"))
    if soak_minutes > 0:  # the soak runs for its minutes, then drains: no 300 s cap
        limit = pytest.mark.timeout(soak_minutes * 60 + SOAK_DRAIN_SECONDS + 300)
        for item in items:
            if item.nodeid.startswith("tests/faults/test_soak.py"):
                item.add_marker(limit)
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="long variant: run with --full")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = figures.summary()
    if lines:
        terminalreporter.section("fault-injection figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session", autouse=True)
def record_registries() -> Iterator[None]:
    """Note what every ScopeWorker of the session serves, by task queue: the replay of
    all histories at the end (tests/live/test_zz_replay.py) replays each with it."""
    built = ScopeWorker.__init__

    def recording(self: ScopeWorker, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        REGISTRY_BY_QUEUE[self.task_queue] = self.registry

    ScopeWorker.__init__ = recording  # type: ignore[method-assign]
    try:
        yield
    finally:
        ScopeWorker.__init__ = built  # type: ignore[method-assign]


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()
