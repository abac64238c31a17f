"""A worker process the worker-loss test starts and SIGKILLs.

    python -m tests.live.loss_worker ADDRESS TASK_QUEUE SIDE_EFFECT_FILE [MODE [BASE_URL]]

Every tool body and model call appends a line to SIDE_EFFECT_FILE *before* acting, so the
test can count executions across processes. The model is a function of the request, so a
fresh process answers the same way as the killed one. The `remote` model is
`OpenAIChatModel` on BASE_URL (a `ChatCompletionsServer` of the test process), holding the
fault workers' API key, which the suite's history scan checks never reaches history.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from scope_temporal import (
    Definition,
    ModelRequest,
    OpenAIChatModel,
    Response,
    ScopeWorker,
    ScriptedModel,
    reply,
    tool,
)
from scope_temporal.definition import ToolCallWorkflows
from tests.faults.scenario import SECRET
from tests.live.harness import in_mode

SIDE_EFFECTS = [Path("/dev/null")]  # set by main()


def record(line: str) -> None:
    with SIDE_EFFECTS[0].open("a") as f:
        f.write(line + "\n")


@tool(permission="read", execution="parallel")
async def quick(name: str) -> str:
    """Finishes at once."""
    record(f"quick {name}")
    return f"quick {name} done"


@tool(permission="write", execution="parallel")
async def slow_write(name: str) -> str:
    """Takes a long time (the test kills the worker meanwhile)."""
    record(f"slow {name}")
    await asyncio.sleep(600)
    return "unreachable"


async def plan(request: ModelRequest) -> Response:
    last = request.messages[-1]
    if last.role == "user" and last.text == "hang the model":
        record("model hang")
        await asyncio.sleep(600)
    if last.role == "user":
        record("model plan")
        return reply.tool_calls(("quick", {"name": "a"}), ("slow_write", {"name": "b"}))
    record("model final")
    return reply.text("all done")


DEFINITION = Definition(
    "loss",
    tools=[quick, slow_write],
    max_concurrent_tool_calls=2,
    model_heartbeat_timeout=timedelta(seconds=2),
    tool_heartbeat_timeout=timedelta(seconds=2),
)
DEFAULTS = Definition("loss-defaults", tools=[quick, slow_write], max_concurrent_tool_calls=2)
"""The same agent with every timeout left at its default."""
REMOTE = Definition("loss-remote", model="remote", model_heartbeat_timeout=timedelta(seconds=2))
"""An agent whose model is a real HTTP endpoint (the model call the test kills the worker in)."""
DEFINITIONS = [DEFINITION, DEFAULTS, REMOTE]


async def main(address: str, task_queue: str, mode: ToolCallWorkflows, base_url: str) -> None:
    client = await Client.connect(address)
    remote = OpenAIChatModel("loopback", base_url=base_url, api_key=SECRET)
    worker = ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=[in_mode(d, mode) for d in DEFINITIONS],
        tools=[quick, slow_write],
        models={"default": ScriptedModel(plan), "remote": remote},
    )
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    SIDE_EFFECTS[0] = Path(sys.argv[3])
    mode: ToolCallWorkflows = "always" if sys.argv[4:5] == ["always"] else "on_demand"
    base_url = sys.argv[5] if len(sys.argv) > 5 else "http://127.0.0.1:9/v1"  # never called
    asyncio.run(main(sys.argv[1], sys.argv[2], mode, base_url))
