"""An activities worker holding per-Interaction MCP sessions, which the session-loss
test SIGKILLs.

    python -m tests.live.mcp_session_worker ADDRESS TASK_QUEUE CALL_LOG MODE

It serves `mcp-session-loss` (the counter server, `session="interaction"`, each call
approved by a person first) with role `activities`: the test runs the workflows itself,
so this process is the only one that can open the session (it holds it), and the test
can kill it while the next call waits for its approval.
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

DEFINITION = Definition(
    "mcp-session-loss",
    mcp_servers=[
        McpServer("counter", session="interaction", approval="all", timeout=timedelta(seconds=3))
    ],
    model_heartbeat_timeout=timedelta(seconds=2),
    tool_heartbeat_timeout=timedelta(seconds=2),
)


async def plan(request: ModelRequest) -> Response:
    """Increment three times (one call a round), then say what each call answered."""
    results = [r.content for m in request.messages for r in m.tool_results]
    if len(results) < 3:
        return reply.tool_calls(("counter_increment", {"by": 1}))
    return reply.text(" | ".join(results))


def worker(client: Client, task_queue: str, log: str, mode: ToolCallWorkflows) -> ScopeWorker:
    env = {"MCP_CALL_LOG": log, "PYTHONPATH": str(ROOT)}
    return ScopeWorker(
        client,
        task_queue=task_queue,
        role="activities",
        definitions=[in_mode(DEFINITION, mode)],
        models={"default": ScriptedModel(plan)},
        mcp_servers={
            "counter": McpStdio(sys.executable, ["-m", "tests.mcp_servers.counter"], env=env)
        },
    )


async def main(address: str, task_queue: str, log: str, mode: ToolCallWorkflows) -> None:
    client = await Client.connect(address)
    serving = worker(client, task_queue, log, mode)
    print("worker ready", flush=True)
    await serving.run()


if __name__ == "__main__":
    mode: ToolCallWorkflows = "always" if sys.argv[4:5] == ["always"] else "on_demand"
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], mode))
