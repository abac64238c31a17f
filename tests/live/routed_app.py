"""The app of the tool-pool tests (`scope-temporal worker --app tests.live.routed_app`):
`where` runs only on the workers of task queue `POOL`, `here` on the Interaction's own.

Each tool answers with the id of the process that ran it and notes it in `RAN` (of the
process that imported this module), so a test can tell where a body ran.
"""

from __future__ import annotations

import os

from scope_temporal import Definition, ModelRequest, Response, ScriptedModel, reply, tool

POOL = "tool-pool"
RAN: list[str] = []


@tool(permission="read", task_queue=POOL, timeout=3)
def where() -> str:
    """Say which process ran this (on the tool pool)."""
    RAN.append("where")
    return f"where ran in {os.getpid()}"


@tool(permission="read")
def here() -> str:
    """Say which process ran this (on the Interaction's own queue)."""
    RAN.append("here")
    return f"here ran in {os.getpid()}"


def plan(request: ModelRequest) -> Response:
    last = request.messages[-1]
    if last.role == "tool":
        return reply.text("; ".join(r.content for r in last.tool_results))
    return reply.tool_calls(("where", {}), ("here", {}))


definitions = [
    Definition("router", tools=[where, here], max_concurrent_tool_calls=2),
    Definition(
        "router-on-demand",
        tools=[where, here],
        max_concurrent_tool_calls=2,
        tool_call_workflows="on_demand",
    ),
]
tools = [where, here]
models = {"default": ScriptedModel(plan)}
