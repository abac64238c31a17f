"""The event stream's figures (`python bench/run.py --only events`).

One Interaction = one model call that streams `tokens` pieces at `rate` per second, then
completes. Measured on its root:

- `events_text_latency_p50_ms` / `_p99_ms`: from a piece leaving the model
  (`stream_delta`) to a host subscribed with `handle.events()` reading it, over every
  piece of every run (the host long-polls: Temporal's update, workflow_streams);
  `events_text_latency_by_query_*`: the same for a host reading by query (the fallback
  of a subscriber over a root's cap of long polls).
- history the streamed text adds to the root per model call: `..._text_bytes` /
  `..._text_events` (streamed, nobody subscribed, minus the same call not streamed: the
  text's signals and their workflow tasks), `..._subscriber_bytes` / `..._events` (one
  subscriber's long polls on top); `events_text_batches_per_call` (signals per call)
  and `events_text_streamed_bytes` (the text itself, for scale).
"""

from __future__ import annotations

import asyncio
import statistics
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    reply,
    stream_delta,
)
from scope_temporal.client import events as client_events
from scope_temporal.names import STREAM_PUBLISH_SIGNAL


class StreamingModel:
    """Streams `tokens` pieces (`t0 `, `t1 `, ...) at `rate` per second, noting when each
    left; or, not streaming, waits as long and replies the same."""

    def __init__(self, tokens: int, rate: float) -> None:
        self.tokens, self.rate = tokens, rate
        self.left: dict[str, float] = {}
        self.stream = True

    async def __call__(self, request: ModelRequest) -> Response:
        run = uuid.uuid4().hex[:6]  # deterministic: runs in the activity
        pieces = [f"{run}-t{i} " for i in range(self.tokens)]
        for piece in pieces:
            await asyncio.sleep(1 / self.rate)
            if self.stream:
                self.left[piece] = time.monotonic()
                stream_delta(piece)
        return reply.text("".join(pieces))


async def follow(handle: Any, model: StreamingModel, latencies: list[float]) -> None:
    async for event in handle.events():
        if event.kind == "text":
            now = time.monotonic()
            latencies += [now - model.left[p + " "] for p in event.text.split()]


async def root_history(scope: ScopeClient, workflow_id: str) -> tuple[int, int, int]:
    """(events, bytes, text signals) of the root's history."""
    history = await scope.client.get_workflow_handle(workflow_id).fetch_history()
    signals = sum(
        1
        for e in history.events
        if e.workflow_execution_signaled_event_attributes.signal_name == STREAM_PUBLISH_SIGNAL
    )
    return len(history.events), sum(e.ByteSize() for e in history.events), signals


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def events(
    env: WorkflowEnvironment,
    runs: int,
    tokens: int,
    rate: float,
    figure: Callable[[str, float | int], None],
) -> None:
    model = StreamingModel(tokens, rate)
    task_queue = f"events-{uuid.uuid4().hex[:8]}"  # deterministic: client side
    async with ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=[Definition("stream")],
        models={"default": ScriptedModel(model)},
    ):
        scope = ScopeClient(env.client, task_queue=task_queue)

        async def run(stream: bool, subscribe: bool, latencies: list[float]) -> tuple[int, ...]:
            model.stream = stream
            handle = await scope.start("stream", "go")
            if subscribe:
                await follow(handle, model, latencies)
            await handle.result()
            return await root_history(scope, handle.id)

        long_poll: list[float] = []
        by_query: list[float] = []
        shapes: dict[str, list[tuple[int, ...]]] = {"plain": [], "text": [], "subscribed": []}
        for _ in range(runs):  # the variants interleaved
            shapes["plain"].append(await run(False, False, []))
            shapes["text"].append(await run(True, False, []))
            shapes["subscribed"].append(await run(True, True, long_poll))
            async with reading_by_query():
                await run(True, True, by_query)

    def median(variant: str, index: int) -> float:
        return statistics.median(shape[index] for shape in shapes[variant])

    figure("events_text_latency_p50_ms", percentile(long_poll, 0.5) * 1000)
    figure("events_text_latency_p99_ms", percentile(long_poll, 0.99) * 1000)
    figure("events_text_latency_by_query_p50_ms", percentile(by_query, 0.5) * 1000)
    figure("events_text_latency_by_query_p99_ms", percentile(by_query, 0.99) * 1000)
    figure("events_history_per_call_text_events", median("text", 0) - median("plain", 0))
    figure("events_history_per_call_text_bytes", median("text", 1) - median("plain", 1))
    figure("events_history_per_call_subscriber_events", median("subscribed", 0) - median("text", 0))
    figure("events_history_per_call_subscriber_bytes", median("subscribed", 1) - median("text", 1))
    figure("events_text_batches_per_call", median("text", 2))
    figure("events_text_streamed_bytes", sum(len(f"xxxxxx-t{i} ") for i in range(tokens)))
    figure("events_stream_seconds_per_call", tokens / rate)


@asynccontextmanager
async def reading_by_query() -> AsyncIterator[None]:
    """Subscribers read by query, as those over a root's cap of long polls do."""
    saved = client_events._long_poll

    async def refused(*args: Any) -> AsyncIterator[tuple[int, Any]]:
        raise client_events._UseQueries()
        yield  # an async generator, as the one it stands for

    client_events._long_poll = refused  # type: ignore[assignment]
    try:
        yield
    finally:
        client_events._long_poll = saved
