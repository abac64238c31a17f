"""Many subscribers on one Interaction: a root lets 5 long-poll its stream at once, so
Temporal's 10 in-flight updates per workflow keep room for steers and answers; the
others read by query. Every subscriber sees the same events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, Event, InteractionHandle, ScriptedModel, reply
from scope_temporal.client import events as client_events
from scope_temporal.workflows.events import MAX_POLLS
from tests.live.harness import serving
from tests.live.test_live_events import restart


async def read_all(handle: InteractionHandle) -> list[Event]:
    return [e async for e in handle.events()]


async def test_more_subscribers_than_long_polls_all_see_everything_and_steers_still_land(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_query = 0
    read_by_query = client_events._by_query

    def counted(*args: Any) -> AsyncIterator[tuple[int, Any]]:
        nonlocal by_query
        by_query += 1
        return read_by_query(*args)

    monkeypatch.setattr(client_events, "_by_query", counted)
    model = ScriptedModel([reply.tool_calls(("restart", {"service": "web"})), reply.text("done")])
    async with serving(
        temporal_env,
        [Definition("crowd", tools=[restart])],
        tools=[restart],
        models={"default": model},
    ) as scope:
        handle = await scope.start("crowd", "fix web")
        readers = [asyncio.create_task(read_all(handle)) for _ in range(MAX_POLLS + 4)]
        snap = None
        for _ in range(100):
            snap = await handle.snapshot()
            if snap.pending_tool_inputs:
                break
            await asyncio.sleep(0.1)
        assert snap is not None and snap.pending_tool_inputs
        await asyncio.sleep(1.0)  # every reader is connected, waiting for the next event
        # 9 readers, and a steer (an update) still gets through at once
        assert await asyncio.wait_for(handle.steer("s1", "carefully"), 10)
        await handle.answer(snap.pending_tool_inputs[0], "a1", {"approved": True})
        seen = await asyncio.wait_for(asyncio.gather(*readers), 30)
    assert by_query >= 1  # the readers over the cap read by query
    first = [e.model_dump() for e in seen[0]]
    assert first[-1]["kind"] == "completed"
    assert all([e.model_dump() for e in other] == first for other in seen[1:])
