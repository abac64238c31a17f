"""Per-Interaction MCP sessions live on the dev server, in both tool-call mappings
(docs/mcp.md, Stateful servers): each Interaction sees its own state of the test-owned
stateful server (`tests.mcp_servers.counter`), the session is opened by
`scope.mcp.session` (its route in history), every call runs on the holder's own queue,
continue-as-new keeps the session, and the Interaction's end closes it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    reply,
)
from scope_temporal.mcp import McpServer, McpStdio
from scope_temporal.names import MCP_CLOSE_ACTIVITY, MCP_SESSION_ACTIVITY, TOOL_ACTIVITY
from tests.live import mcp_session_worker
from tests.live.harness import STARTED_IDS, TOOL_CALL_MODE, eventually, in_mode, serving
from tests.live.test_live_worker_loss import address_of, worker_process

ROOT = Path(__file__).resolve().parents[2]


def counter(log: Path) -> McpStdio:
    env = {"MCP_CALL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    return McpStdio(sys.executable, ["-m", "tests.mcp_servers.counter"], env=env)


def events(log: Path, event: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in logged if e["tool"] == event]


def increments(times: int) -> ScriptedModel:
    def plan(request: ModelRequest) -> Response:
        results = [r.content for m in request.messages for r in m.tool_results]
        if len(results) < times:
            return reply.tool_calls(("counter_increment", {"by": 1}))
        return reply.text(",".join(results))

    return ScriptedModel(plan)


COUNTED = Definition("live-counted", mcp_servers=[McpServer("counter", session="interaction")])


async def _scheduled(env: WorkflowEnvironment, workflow_id: str) -> list[tuple[str, str]]:
    """(activity type, task queue) of every activity the workflow scheduled."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    return [
        (a.activity_type.name, a.task_queue.name)
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        for a in [e.activity_task_scheduled_event_attributes]
    ]


async def test_live_mcp_sessions_two_interactions_each_see_their_own_counter_then_closed(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    async with serving(
        temporal_env,
        [COUNTED],
        models={"default": increments(2)},
        mcp_servers={"counter": counter(log)},
    ) as scope:
        first = await scope.start("live-counted", "go")
        second = await scope.start("live-counted", "go")
        outs = await asyncio.gather(first.result(), second.result())
        assert [o.text for o in outs] == ["1,2", "1,2"]
        assert len({e["pid"] for e in events(log, "increment")}) == 2
        scheduled = await _scheduled(temporal_env, first.id)
        [(_, main)] = [s for s in scheduled if s[0] == MCP_SESSION_ACTIVITY]
        [(_, holder)] = [s for s in scheduled if s[0] == MCP_CLOSE_ACTIVITY]
        assert holder.startswith(f"{main}/mcp/")
        if TOOL_CALL_MODE[0] == "on_demand":  # the calls' attempts: on the holder's queue
            assert [q for a, q in scheduled if a == TOOL_ACTIVITY] == [holder, holder]
        else:
            child = await _scheduled(temporal_env, f"{first.id}/tool/1/0")
            assert child == [(TOOL_ACTIVITY, holder)]
        # closed when the Interaction ended: each session's server process saw its end
        used = {e["pid"] for e in events(log, "increment")}
        await eventually(
            lambda: asyncio.sleep(0, {e["pid"] for e in events(log, "closed")}),
            lambda closed: used <= closed,
        )


async def test_live_mcp_sessions_continue_as_new_keeps_the_session(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    async with serving(
        temporal_env,
        [COUNTED],
        models={"default": increments(3)},
        mcp_servers={"counter": counter(log)},
    ) as scope:
        handle = await scope.start("live-counted", "go", continue_as_new_every=1)
        assert (await handle.result()).text == "1,2,3"
        assert len({e["pid"] for e in events(log, "increment")}) == 1
        runs = 0
        async for _ in temporal_env.client.list_workflows(f"WorkflowId = '{handle.id}'"):
            runs += 1
        assert runs >= 2  # it did continue as new


async def test_live_mcp_sessions_holder_killed_the_next_calls_fail_definitely_session_lost(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"mcp-session-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "calls.jsonl"
    mode = TOOL_CALL_MODE[0] or "on_demand"
    definition = in_mode(mcp_session_worker.DEFINITION, mode)
    client = temporal_env.client
    scope = ScopeClient(client, task_queue=task_queue)
    workflows = ScopeWorker(
        client,
        task_queue=task_queue,
        role="workflows",
        definitions=[definition],
        models={"default": ScriptedModel(mcp_session_worker.plan)},
    )
    async with workflows:
        address, module = address_of(temporal_env), "tests.live.mcp_session_worker"
        with worker_process(address, task_queue, log, module=module) as holder:
            handle = await scope.start("mcp-session-loss", "go")
            STARTED_IDS.append(handle.id)
            await _approve(handle, "a1")  # the first call: sent to the session
            await eventually(lambda: asyncio.sleep(0, events(log, "increment")), bool)
            snap = await eventually(handle.snapshot, lambda s: bool(s.pending_tool_inputs))
            os.kill(holder.pid, signal.SIGKILL)  # the second call waits for its approval
            holder.wait(10)
        del snap
        replacement = mcp_session_worker.worker(client, task_queue, str(log), mode)
        async with replacement:
            await _approve(handle, "a2")  # sent to the dead holder's queue: never picked up
            try:
                out = await asyncio.wait_for(handle.result(), 60)
            except TimeoutError:
                raise AssertionError(repr(await handle.snapshot())) from None
            final = await handle.snapshot()
    first, second, third = out.text.split(" | ")
    assert first == "1"
    assert "is gone" in second and "was not sent" in second
    assert "lost earlier" in third and "was not sent" in third
    assert final.unknown_effects == []
    assert len(events(log, "increment")) == 1  # nothing else reached any session
    assert len(events(log, "opened")) == 2  # the listing's shared one and the session


async def _approve(handle: Any, answer_id: str) -> None:
    snap = await eventually(handle.snapshot, lambda s: bool(s.pending_tool_inputs), timeout=30)
    [pending] = snap.pending_tool_inputs
    await handle.answer(pending, answer_id, {"decision": "approve"})
