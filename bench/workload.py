"""Workload W for the benchmarks: the same agent as a scope-temporal Interaction and as a
minimal hand-written Temporal workflow (the flat baseline).

W: TURNS model calls; every turn but the last asks for TOOLS_PER_TURN instant read tools;
the model is scripted and instant. The flat baseline runs the same model and tool
functions as plain activities (the tools of a turn in parallel), never retried.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta  # deterministic: a value type, no clock

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from scope_temporal import Definition, ModelRequest, Response, reply, tool
from scope_temporal.definition import ToolCallWorkflows

TURNS = 20
TOOLS_PER_TURN = 3


@tool(permission="read")
def lookup(n: int) -> str:
    """Return a fact."""
    return f"fact {n}"


def plan(request: ModelRequest) -> Response:
    """The scripted model: tool calls until the last turn, then a text reply."""
    turn = sum(1 for m in request.messages if m.role == "assistant")
    if turn < TURNS - 1:
        return reply.tool_calls(
            *[("lookup", {"n": turn * TOOLS_PER_TURN + i}) for i in range(TOOLS_PER_TURN)]
        )
    return reply.text(f"done after {turn} tool turns")


def definition(mode: ToolCallWorkflows) -> Definition:
    return Definition(
        f"w-{mode}",
        tools=[lookup],
        max_model_calls=TURNS + 5,
        max_concurrent_tool_calls=TOOLS_PER_TURN,
        tool_call_workflows=mode,
    )


@activity.defn(name="flat.model")
async def flat_model(turn: int) -> str:
    return "tools" if turn < TURNS - 1 else "final"


@activity.defn(name="flat.tool")
async def flat_tool(n: int) -> str:
    return lookup.fn(n)


@workflow.defn(name="flat.W")
class FlatWorkflow:
    """What you would write without a framework: the same activities, in a loop."""

    @workflow.run
    async def run(self, turns: int) -> str:
        once = RetryPolicy(maximum_attempts=1)
        timeout = timedelta(seconds=30)
        turn = 0
        while True:
            decision = await workflow.execute_activity(
                flat_model, turn, start_to_close_timeout=timeout, retry_policy=once
            )
            if decision == "final":
                return f"done after {turn} tool turns"
            await asyncio.gather(
                *(
                    workflow.execute_activity(
                        flat_tool,
                        turn * TOOLS_PER_TURN + i,
                        start_to_close_timeout=timeout,
                        retry_policy=once,
                    )
                    for i in range(TOOLS_PER_TURN)
                )
            )
            turn += 1
