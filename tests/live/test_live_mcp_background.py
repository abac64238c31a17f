"""MCP calls as background tools, live on the dev server, in both tool-call mappings
(docs/mcp.md, Background calls): a long call moves to the background and its output
arrives, adopted on the worker holding it; `run_in_background: true` and `task_cancel`
(MCP's cancellation reaches the server); the holding worker process SIGKILLed while the
call runs in the background ends the task lost, its outcome unknown. The server's call
log proves every call reached it exactly once."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ScopeClient, ScriptedModel
from scope_temporal.mcp import McpServer
from scope_temporal.names import TASK_ATTEMPT_ACTIVITY
from tests.live.background_tools import follow
from tests.live.harness import MODE_BY_QUEUE, STARTED_IDS, TOOL_CALL_MODE, eventually, serving
from tests.live.test_background_worker_loss import the_task
from tests.live.test_live_mcp import calls, faulty
from tests.live.test_live_mcp_worker_loss import received
from tests.live.test_live_worker_loss import address_of, worker_process
from tests.unit.test_mcp_background import envelopes

MOVING = McpServer("faulty", background={"progress", "hang"}, foreground_timeout=0.5)


async def attempt_queues(env: WorkflowEnvironment, task_id: str) -> list[str]:
    """The task queues the task's background attempts were scheduled on."""
    history = await env.client.get_workflow_handle(task_id).fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.task_queue.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == TASK_ATTEMPT_ACTIVITY
    ]


async def test_live_mcp_background_call_is_adopted_by_its_worker_and_sent_once(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    model = ScriptedModel(follow(("faulty_progress", {"count": 4, "pause": 0.5})))
    definition = Definition("live-mcp-bg", mcp_servers=[MOVING])
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-bg", "go")
        await asyncio.wait_for(handle.result(), 60)
        seen = envelopes(model)
        assert seen[0]["type"] == "launch_result"
        task_id = seen[0]["task_id"]
        assert (seen[-1]["type"], seen[-1]["status"], seen[-1]["data"]) == (
            "output",
            "completed",
            "progressed 4",
        )
        # the server's notifications as the task's progress (at most one a second)
        messages = [e["message"] for e in seen[-1]["events"]]
        assert messages[0] == "step 1 of 4" and messages[-1] == "step 4 of 4"
        [task] = (await handle.snapshot()).tasks
        assert (task.status, task.attempt) == ("completed", 1)
        assert task.progress.events == len(messages) and task.progress.last_message == messages[-1]
        [queue] = await attempt_queues(temporal_env, task_id)
        assert "/adopt/" in queue  # adopted on the worker holding the call
    assert calls(log) == ["progress"]


async def test_live_mcp_run_in_background_then_task_cancel_sends_the_cancellation(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    call = ("faulty_hang", {"text": "long", "run_in_background": True})
    model = ScriptedModel(follow(call, then="task_cancel"))
    definition = Definition("live-mcp-bg-cancel", mcp_servers=[MOVING])
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-bg-cancel", "go")
        await asyncio.wait_for(handle.result(), 60)
        launch, update = envelopes(model)[:2]
        assert launch["type"] == "launch_result"
        assert (update["type"], update["status"]) == ("update", "canceled")
        await eventually(lambda: asyncio.sleep(0, calls(log)), lambda c: c == ["hang", "cancelled"])
    assert calls(log) == ["hang", "cancelled"]  # received once, then MCP's cancellation


async def test_live_mcp_background_call_whose_holder_is_killed_is_lost_never_resent(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"mcp-bgloss-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "calls.jsonl"
    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    address = address_of(temporal_env)
    module = "tests.live.mcp_worker"
    mode = TOOL_CALL_MODE[0] or "on_demand"
    args = [mode, "background"]
    MODE_BY_QUEUE[task_queue] = mode  # for the suite's replay
    with worker_process(address, task_queue, log, module=module, args=args) as first:
        handle = await scope.start("mcp-loss", "go")
        STARTED_IDS.append(handle.id)
        assert (await asyncio.wait_for(handle.result(), 30)).text == "launched"
        # the task adopted the call on its holder: its attempt runs there
        await eventually(
            lambda: the_task(handle), lambda t: t is not None and t.attempt == 1, timeout=20
        )
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    with worker_process(address, task_queue, log, module=module, args=args):
        task = await eventually(
            lambda: the_task(handle), lambda t: t is not None and t.ended, timeout=60
        )
    assert task is not None
    assert (task.status, task.code) == ("failed", "tool.background.lost")
    assert task.error is not None
    assert "cannot be recovered" in task.error and "unknown" in task.error
    assert "Nothing was run again" in task.error
    assert received(log) == ["hang"]  # never sent again by the next worker
