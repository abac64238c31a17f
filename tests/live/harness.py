"""Shared helpers for live tests: a fresh task queue and worker per test, polling, replay."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from temporalio.client import Client
from temporalio.converter import StorageDriver
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ScopeClient, ScopeWorker
from scope_temporal.models.protocol import Model

T = TypeVar("T")

# Every workflow id a live test started, replayed at the end of the session (CONFORMANCE 42).
STARTED_IDS: list[str] = []
# Runs a test made diverge on purpose (a changed Definition): they must not replay.
DIVERGED_IDS: set[str] = set()
# External storage a test's worker offloaded to, by task queue (replay needs it).
STORAGE_BY_QUEUE: dict[str, StorageDriver] = {}


@asynccontextmanager
async def serving(
    env: WorkflowEnvironment,
    definitions: Iterable[Definition],
    *,
    tools: Iterable[Any] = (),
    models: Mapping[str, Model],
    **options: Any,
) -> AsyncIterator[ScopeClient]:
    """Run a ScopeWorker on a fresh task queue; yield a ScopeClient for that queue."""
    task_queue = f"tq-{uuid.uuid4().hex[:10]}"
    if options.get("storage") is not None:
        STORAGE_BY_QUEUE[task_queue] = options["storage"]
    worker = ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=definitions,
        tools=tools,
        models=models,
        **options,
    )
    async with worker:
        yield RecordingClient(env.client, task_queue=task_queue)


class RecordingClient(ScopeClient):
    """A ScopeClient that remembers the ids it started (for the replay test)."""

    async def start(self, definition: str, messages: Any, **options: Any) -> Any:
        handle = await super().start(definition, messages, **options)
        STARTED_IDS.append(handle.id)
        return handle


async def eventually(
    probe: Callable[[], Awaitable[T]],
    until: Callable[[T], bool],
    *,
    timeout: float = 20.0,
    every: float = 0.1,
) -> T:
    """Poll `probe` until `until(value)`; fail with the last value seen on timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    value = await probe()
    while not until(value):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not reached in {timeout}s; last value: {value!r}")
        await asyncio.sleep(every)
        value = await probe()
    return value


def fresh_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


__all__ = [
    "DIVERGED_IDS",
    "STARTED_IDS",
    "STORAGE_BY_QUEUE",
    "Client",
    "eventually",
    "fresh_id",
    "serving",
]
