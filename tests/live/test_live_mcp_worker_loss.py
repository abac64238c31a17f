"""MCP live: the worker SIGKILLed while an MCP call runs; the call is an unknown Effect,
the server received it exactly once, and nothing sends it again; unless the Definition
declares the tool safe to retry: then the next worker sends it again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient, ToolResult, settle_tool_result
from tests.live.harness import MODE_BY_QUEUE, STARTED_IDS, TOOL_CALL_MODE, eventually
from tests.live.test_live_worker_loss import address_of, worker_process


def received(log: Path) -> list[str]:
    """The calls the server received (not the note it writes when a running call is
    cancelled: the killed worker's server sees its stdin close and stops)."""
    if not log.exists():
        return []
    logged = [json.loads(line)["tool"] for line in log.read_text().splitlines()]
    return [tool for tool in logged if tool != "cancelled"]


async def test_live_mcp_worker_killed_mid_call_is_unknown_and_received_once(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"mcp-loss-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "calls.jsonl"
    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    address = address_of(temporal_env)
    module = "tests.live.mcp_worker"
    with worker_process(address, task_queue, log, module=module) as first:
        handle = await scope.start("mcp-loss", "go")
        STARTED_IDS.append(handle.id)
        await eventually(lambda: asyncio.sleep(0, received(log)), lambda r: r == ["hang"])
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    with worker_process(address, task_queue, log, module=module):
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects), timeout=30)
        [unknown] = snap.unknown_effects
        assert unknown.request.mcp is not None and unknown.request.mcp.name == "hang"
        assert "HEARTBEAT" in (unknown.diagnostic or "")
        assert received(log) == ["hang"]  # the new worker did not send it again
        call = unknown.request.call
        result = ToolResult(call_id=call.id, name=call.name, content="checked by hand")
        await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        out = await asyncio.wait_for(handle.result(), 30)
    assert out.text == "all done"
    assert received(log) == ["hang", "echo"]


async def test_live_mcp_worker_killed_mid_call_of_a_retry_safe_tool_sends_it_again(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"mcp-retry-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "calls.jsonl"
    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    address = address_of(temporal_env)
    module, args = "tests.live.mcp_worker", [TOOL_CALL_MODE[0] or "on_demand", "retry_safe"]
    MODE_BY_QUEUE[task_queue] = TOOL_CALL_MODE[0] or "on_demand"  # for the suite's replay
    with worker_process(address, task_queue, log, module=module, args=args) as first:
        handle = await scope.start("mcp-loss", "go")
        STARTED_IDS.append(handle.id)
        await eventually(lambda: asyncio.sleep(0, received(log)), lambda r: r == ["stall"])
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    with worker_process(address, task_queue, log, module=module, args=args):
        out = await asyncio.wait_for(handle.result(), 60)
        assert (await handle.snapshot()).unknown_effects == []
    assert out.text == "all done"
    assert received(log) == ["stall", "stall", "echo"]  # sent again by the next worker
