"""Workload W written by hand as an agent: the baselines of `bench/baselines.py`, carrying
the data an agent's loop carries.

`bench/baselines.py`'s hand-written workflows pass a turn number to the model activity and
an integer to each tool: they carry none of an agent's data, so their histories are the
floor of what W can cost, not what a hand-written agent costs. These carry what any agent
loop has to: the model activity gets the conversation and answers with the assistant's
message (its tool calls: id, name, JSON arguments), each tool gets its call and answers
with a tool message. As the agent integrations of other SDKs on Temporal do, each model
call is sent the whole conversation so far (a worker holds no state between
activities). The content is W's, byte for byte what scope-temporal's scripted model and
`lookup` tool produce: "agent flat" as plain activities of one workflow, "agent child"
in the card's shape (a child workflow per tool call). Like the other baselines, this
module imports only temporalio (the workflow sandbox re-imports a workflow's modules).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta  # deterministic: a value type, no clock
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from bench.baselines import TOOLS_PER_TURN, TURNS

Message = dict[str, Any]
"""A chat message as a hand-written agent keeps it: role, content or tool calls."""

_ONCE = RetryPolicy(maximum_attempts=1)
_TIMEOUT = timedelta(seconds=30)


@activity.defn(name="agent.model")
async def agent_model(conversation: list[Message]) -> Message:
    """W's scripted model: tool calls until the last turn, then a text reply."""
    turn = sum(1 for m in conversation if m["role"] == "assistant")
    if turn < TURNS - 1:
        calls = [
            {
                "id": f"call_{i + 1}",
                "name": "lookup",
                "arguments": json.dumps({"n": turn * TOOLS_PER_TURN + i}),
            }
            for i in range(TOOLS_PER_TURN)
        ]
        return {"role": "assistant", "tool_calls": calls}
    return {"role": "assistant", "content": f"done after {turn} tool turns"}


@activity.defn(name="agent.tool")
async def agent_tool(call: Message) -> Message:
    """W's `lookup` tool, answering its call with a tool message."""
    n = json.loads(call["arguments"])["n"]
    return {"role": "tool", "tool_call_id": call["id"], "content": f"fact {n}"}


async def _agent_loop(
    prompt: str, run_calls: Callable[[list[Message]], Awaitable[list[Message]]]
) -> str:
    """The agent loop both shapes share: the conversation into each model call, the
    reply's tool calls run by `run_calls` (those of a turn at once), until a text reply."""
    conversation: list[Message] = [{"role": "user", "content": prompt}]
    while True:
        reply = await workflow.execute_activity(
            agent_model, conversation, start_to_close_timeout=_TIMEOUT, retry_policy=_ONCE
        )
        conversation.append(reply)
        if not reply.get("tool_calls"):
            return str(reply["content"])
        conversation.extend(await run_calls(reply["tool_calls"]))


@workflow.defn(name="agent.W")
class AgentFlatWorkflow:
    """An agent loop by hand, its tool calls as activities of this workflow."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        async def as_activities(calls: list[Message]) -> list[Message]:
            return list(
                await asyncio.gather(
                    *(
                        workflow.execute_activity(
                            agent_tool, call, start_to_close_timeout=_TIMEOUT, retry_policy=_ONCE
                        )
                        for call in calls
                    )
                )
            )

        return await _agent_loop(prompt, as_activities)


@workflow.defn(name="agent.Tool")
class AgentToolWorkflow:
    """One tool call as its own workflow, running one activity."""

    @workflow.run
    async def run(self, call: Message) -> Message:
        return await workflow.execute_activity(
            agent_tool, call, start_to_close_timeout=_TIMEOUT, retry_policy=_ONCE
        )


@workflow.defn(name="agent.ChildW")
class AgentChildWorkflow:
    """The card's shape by hand: an agent loop, a child workflow per tool call."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        parent = workflow.info().workflow_id
        turn = -1

        async def as_children(calls: list[Message]) -> list[Message]:
            nonlocal turn
            turn += 1
            return list(
                await asyncio.gather(
                    *(
                        workflow.execute_child_workflow(
                            AgentToolWorkflow.run, call, id=f"{parent}/tool/{turn}/{i}"
                        )
                        for i, call in enumerate(calls)
                    )
                )
            )

        return await _agent_loop(prompt, as_children)


WORKFLOWS = (AgentFlatWorkflow, AgentToolWorkflow, AgentChildWorkflow)
ACTIVITIES = (agent_model, agent_tool)

__all__ = ["ACTIVITIES", "WORKFLOWS", "AgentChildWorkflow", "AgentFlatWorkflow"]
