"""Session fixtures: one real Temporal dev server per test process; the `--full` option.

`python -m pytest` runs the CI subset: tests marked `full` (every kill point in both
tool-call mappings, 50 interactions on three workers, ...) are skipped unless `--full`;
the soak (`tests/faults/test_soak.py`) runs only with `--soak MINUTES`.

The run takes two processes (pytest-xdist, `-n 2 --dist loadgroup` in pyproject.toml).
The tests that need Temporal are mostly waiting (for a heartbeat to lapse, a worker to be
noticed lost), so they run in two streams, whole files alternating between them, each
stream in one process with its own dev server; `test_zz_replay` runs at the end of each
stream and replays what that stream's server holds. The unit tests fill in beside them.
With `-n 0` everything runs in one process as one stream.
"""

from __future__ import annotations

import json
import os
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

STREAMS = 2
"""How many streams the tests that need Temporal run in under xdist (one per process)."""
REPLAY_TEST = "tests/live/test_zz_replay.py"


def _stream_of(item: pytest.Item, files: list[str]) -> int:
    """The stream a test that needs Temporal runs in: the replay test's own parameter;
    otherwise its file's place among the streamed files. (The unit tests have none: they
    run anywhere, in any order.)"""
    path = item.nodeid.split("::")[0]
    if path == REPLAY_TEST:
        return int(item.callspec.params["stream"])  # type: ignore[attr-defined]
    return files.index(path) % STREAMS


def _assign_streams(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ:  # one process: one stream, one replay
        kept = [i for i in items if not _is_replay_of_another_stream(i)]
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
        return
    streamed = [i for i in items if not i.nodeid.startswith("tests/unit/")]
    replays = [i for i in streamed if i.nodeid.startswith(REPLAY_TEST)]
    if replays and streamed[-len(replays) :] != replays:
        raise pytest.UsageError(f"{REPLAY_TEST} must be the last file of tests that need Temporal")
    files = list(dict.fromkeys(i.nodeid.split("::")[0] for i in streamed if i not in replays))
    for item in streamed:
        item.add_marker(pytest.mark.xdist_group(f"temporal-{_stream_of(item, files)}"))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse a run whose streams xdist did not keep (it marks each grouped test's id):
    without them a module's fixtures and the replay's place at the end are lost silently."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group")]
    lost = [nodeid for nodeid in lost if "@temporal-" not in nodeid]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not group {lost[0]} (and {len(lost) - 1} more): this pytest "
            "and pytest-xdist do not work together; install the versions the `dev` extra "
            "pins, or run with -n 0"
        )


def _is_replay_of_another_stream(item: pytest.Item) -> bool:
    return item.nodeid.startswith(REPLAY_TEST) and item.callspec.params["stream"] != 0  # type: ignore[attr-defined]


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
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(FiguresFromWorkers())
    config.addinivalue_line(
        "markers", "full: a long variant, run only with --full (CI runs a deterministic subset)"
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _assign_streams(config, items)
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


class FiguresFromWorkers:
    """Each xdist worker hands the fault figures it counted to the controlling process,
    which prints them all (the figures live in the process that ran the tests)."""

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(session.config, "workeroutput", None)
        if output is not None:
            output["fault_figures"] = json.dumps(
                {"figures": dict(figures.FIGURES), "kill_points": sorted(figures.KILL_POINTS)}
            )

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        sent = getattr(node, "workeroutput", {}).get("fault_figures")
        if sent:
            counted = json.loads(sent)
            figures.FIGURES.update(counted["figures"])
            figures.KILL_POINTS.update(counted["kill_points"])


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
