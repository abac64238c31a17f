"""The model activity's input carries the new messages and a reference to the rest: the
root's history grows per round by what the round added, and a worker that does not have
the prefix fetches it from the workflow (`scope.context`), checked by its digest."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ModelRequest, Response, ScriptedModel, reply, tool
from scope_temporal.activities import temporal as activity_module
from scope_temporal.activities.model_input import ModelRequestBuilder
from scope_temporal.chat import Message
from scope_temporal.converter import read_recorded
from scope_temporal.names import MODEL_ACTIVITY
from scope_temporal.payloads import ModelActivityInput
from tests.live.harness import serving

ROUNDS = 8


@tool(permission="read")
def kilobyte(n: int) -> str:
    """Return about 1 KB."""
    return f"{n}:" + "k" * 1000


def plan(request: ModelRequest) -> Response:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < ROUNDS:
        return reply.tool_calls(("kilobyte", {"n": done}))
    return reply.text(f"{done} rounds")


async def model_inputs(env: WorkflowEnvironment, workflow_id: str) -> list[dict[str, Any]]:
    """The decoded `scope.model` activity inputs recorded in the root's history."""
    found = []
    async for event in env.client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attributes = event.activity_task_scheduled_event_attributes
        if attributes.activity_type.name == MODEL_ACTIVITY:
            recorded = read_recorded(attributes.input.payloads[0], ModelActivityInput, workflow_id)
            found.append(recorded.model_dump(mode="json"))
    return found


async def run(env: WorkflowEnvironment) -> tuple[str, list[tuple[Message, ...]], str]:
    model = ScriptedModel(plan)
    definition = Definition("context", tools=[kilobyte], max_model_calls=ROUNDS + 2)
    async with serving(env, [definition], tools=[kilobyte], models={"default": model}) as scope:
        handle = await scope.start("context", "go")
        out = await handle.result()
    return out.text, [r.messages for r in model.requests], handle.id


async def test_model_inputs_carry_only_what_each_round_added(
    temporal_env: WorkflowEnvironment,
) -> None:
    text, _, workflow_id = await run(temporal_env)
    assert text == f"{ROUNDS} rounds"
    inputs = await model_inputs(temporal_env, workflow_id)
    assert len(inputs) == ROUNDS + 1
    # after the first call: the tool's result, nothing older (the assistant's tool call
    # before it is referred to: the worker that answered holds it, history has it)
    assert [len(i["new_messages"]) for i in inputs[1:]] == [1] * ROUNDS
    assert [i["prefix"]["count"] for i in inputs] == [0, *range(2, 2 * ROUNDS + 1, 2)]
    sizes = [len(json.dumps(i)) for i in inputs[1:]]
    assert max(sizes) < 1.2 * min(sizes), sizes  # the last round's input is no bigger


async def test_a_worker_without_the_prefix_fetches_it_from_the_workflow(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, remembered, _ = await run(temporal_env)
    fetched: list[int] = []
    original_fetch = activity_module._fetch_prefix
    original_rebuild = ModelRequestBuilder.rebuild

    async def counting_fetch(workflow_id: str, start: int, end: int) -> list[Message]:
        fetched.append(end)
        return await original_fetch(workflow_id, start, end)

    def forgetful(
        builder: ModelRequestBuilder, *args: Any
    ) -> Awaitable[Any]:  # as if every call landed on a freshly started worker
        builder._chains.clear()
        return original_rebuild(builder, *args)

    monkeypatch.setattr(activity_module, "_fetch_prefix", counting_fetch)
    monkeypatch.setattr(ModelRequestBuilder, "rebuild", forgetful)
    text, forgotten, _ = await run(temporal_env)
    assert text == f"{ROUNDS} rounds"
    assert forgotten == remembered  # the model saw exactly the same requests
    # one query per call after the first, for the context up to the previous reply
    assert fetched == list(range(2, 2 * ROUNDS + 1, 2))
