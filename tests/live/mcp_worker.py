"""A worker process with an MCP server, which the MCP worker-loss test SIGKILLs.

    python -m tests.live.mcp_worker ADDRESS TASK_QUEUE CALL_LOG MODE [retry_safe|background]

The Definition's tools come from the test-owned MCP server (`tests.mcp_servers.faulty`,
started by this worker over stdio), which appends each call it receives to CALL_LOG.
The model is a function of the request, so a fresh process answers as the killed one.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from scope_temporal import Definition, ModelRequest, Response, ScopeWorker, ScriptedModel, reply
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.mcp import McpServer, McpStdio
from tests.live.harness import in_mode

ROOT = Path(__file__).resolve().parents[2]


RETRY_SAFE = sys.argv[5:6] == ["retry_safe"]
"""Serve `mcp-loss` with `stall` declared safe to retry (the retry test's worker)."""
BACKGROUND = sys.argv[5:6] == ["background"]
"""Serve `mcp-loss` with `hang` allowed to run in the background (the background loss
test's worker): the model launches it, then ends its turn."""


async def plan(request: ModelRequest) -> Response:
    done = sum(1 for m in request.messages if m.role == "tool")
    if BACKGROUND:
        if done == 0:
            return reply.tool_calls(("faulty_hang", {"text": "slow"}))
        return reply.text("launched")
    if done == 0 and RETRY_SAFE:
        return reply.tool_calls(("faulty_stall", {"text": "slow"}))
    if done == 0:
        return reply.tool_calls(("faulty_hang", {"text": "slow"}))
    if done == 1:
        return reply.tool_calls(("faulty_echo", {"text": "after"}))
    return reply.text("all done")


def definition(retry_safe: bool, background: bool = False) -> Definition:
    """The Definition this worker serves; `retry_safe`: `stall` declared safe to retry;
    `background`: `hang` may run in the background (after 1 s in the foreground)."""
    server = McpServer("faulty", retry_safe={"stall"} if retry_safe else False)
    if background:
        server = McpServer("faulty", background={"hang"}, foreground_timeout=1)
    return Definition(
        "mcp-loss",
        mcp_servers=[server],
        model_heartbeat_timeout=timedelta(seconds=2),
        tool_heartbeat_timeout=timedelta(seconds=2),
    )


DEFINITION = definition(RETRY_SAFE, BACKGROUND)


async def main(address: str, task_queue: str, log: str, mode: ToolCallWorkflows) -> None:
    client = await Client.connect(address)
    env = {"MCP_CALL_LOG": log, "PYTHONPATH": str(ROOT)}
    worker = ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=[in_mode(DEFINITION, mode)],
        models={"default": ScriptedModel(plan)},
        mcp_servers={
            "faulty": McpStdio(sys.executable, ["-m", "tests.mcp_servers.faulty"], env=env)
        },
    )
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    mode: ToolCallWorkflows = "always" if sys.argv[4:5] == ["always"] else "on_demand"
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], mode))
