"""What the Temporal UI shows: summaries, live details, and status search attributes."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    ScriptedModel,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from scope_temporal.names import DEFINITION_ATTRIBUTE, STATUS_ATTRIBUTE
from tests.live.harness import eventually, serving

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@tool(permission="write")
def approve_deploy(version: str) -> str:
    """Deploy after approval."""
    if tool_input_continuation() is None:
        require_tool_input(f"Deploy {version}?", SCHEMA)
    return f"deployed {version}"


async def test_ui_summaries_details_and_a_waiting_status_that_reaches_the_root(
    temporal_env: WorkflowEnvironment, tool_call_mode: str
) -> None:
    model = ScriptedModel(
        [reply.tool_calls(("approve_deploy", {"version": "v2"})), reply.text("deployed")]
    )
    definition = Definition("deployer", tools=[approve_deploy])
    async with serving(
        temporal_env, [definition], tools=[approve_deploy], models={"default": model}
    ) as scope:
        handle = await scope.start("deployer", "ship v2")
        root = temporal_env.client.get_workflow_handle(handle.id)
        child = temporal_env.client.get_workflow_handle(f"{handle.id}/tool/1/0")

        # the tree's status is computed from every process, and the root's attribute says
        # what its tree needs from a person (the ToolCall child's wait reaches it)
        snap = await eventually(handle.snapshot, lambda s: s.status == "waiting")
        desc = await eventually(
            root.describe,
            lambda d: d.typed_search_attributes.get(STATUS_ATTRIBUTE) == "waiting_input",
        )
        assert desc.typed_search_attributes.get(DEFINITION_ATTRIBUTE) == "deployer"
        # paused, the tree still needs a person first (test_live_attention pins the rest)
        await handle.pause()
        await eventually(handle.snapshot, lambda s: s.root.status == "paused")
        assert (await root.describe()).typed_search_attributes.get(
            STATUS_ATTRIBUTE
        ) == "waiting_input"
        await handle.resume()
        assert (
            await (await child.describe()).static_summary() == 'tool approve_deploy(version="v2")'
        )
        assert await desc.static_summary() == "deployer: ship v2"

        snap = await handle.snapshot()
        await handle.answer(snap.pending_tool_inputs[0], "a1", {"ok": True})
        await handle.result()
        desc = await eventually(
            root.describe,
            lambda d: d.typed_search_attributes.get(STATUS_ATTRIBUTE) == "completed",
        )

    summaries = [
        (
            e.activity_task_scheduled_event_attributes.activity_type.name,
            e.user_metadata.summary.data.decode(),
        )
        async for e in root.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    first_attempt = [("scope.tool", '"tool approve_deploy(version=\\"v2\\")"')]
    assert summaries == [
        ("scope.model", '"model #1: default"'),
        # on_demand: the first attempt ran as the root's activity, then the call was promoted
        *(first_attempt if tool_call_mode == "on_demand" else []),
        ("scope.model", '"model #2: default"'),
    ]
