"""CONFORMANCE 44, 47, 59 live: cancellation of the tree, and what it left unknown;
deterministic errors fail with a code; starting under an id in use is refused with a typed
error."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    InteractionAlreadyStarted,
    InteractionCanceled,
    InteractionFailed,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    reply,
    tool,
)
from tests.live.harness import DIVERGED_IDS, eventually, has_workflow, serving

started = asyncio.Event()


@tool(permission="read")
async def forever() -> str:
    """Never finishes on its own."""
    started.set()
    await asyncio.sleep(3600)
    return "unreachable"


async def test_c44_live_cancelling_the_root_cancels_its_children(
    temporal_env: WorkflowEnvironment, tool_call_mode: str
) -> None:
    started.clear()
    model = ScriptedModel([reply.tool_calls(("forever", {})), reply.text("never")])
    definition = Definition("cancel", tools=[forever])
    async with serving(
        temporal_env, [definition], tools=[forever], models={"default": model}
    ) as scope:
        handle = await scope.start("cancel", "go")
        await asyncio.wait_for(started.wait(), 10)
        await handle.cancel()
        with pytest.raises(InteractionCanceled):
            await handle.result()
        events = [
            e.event_type
            async for e in temporal_env.client.get_workflow_handle(handle.id).fetch_history_events()
        ]
        cancel_at = events.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)
        if tool_call_mode == "always":
            child = temporal_env.client.get_workflow_handle(f"{handle.id}/tool/1/0")
            status = await eventually(
                lambda: child.describe(), lambda d: d.status != WorkflowExecutionStatus.RUNNING
            )
            assert status.status == WorkflowExecutionStatus.CANCELED
        else:  # the call ran as the root's own activity: its cancellation was requested
            assert not await has_workflow(temporal_env.client, f"{handle.id}/tool/1/0")
            assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED in events[cancel_at:]
        # the canceled parent never resumed to collect the call: nothing after its cancel
        assert EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED not in events[cancel_at:]
        assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED not in events[cancel_at:]
        assert events[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED
    assert len(model.requests) == 1


async def test_c59_live_a_canceled_root_lists_its_running_tool_call_as_unknown(
    temporal_env: WorkflowEnvironment, tool_call_mode: str
) -> None:
    started.clear()
    model = ScriptedModel([reply.tool_calls(("forever", {})), reply.text("never")])
    definition = Definition("cancel-list", tools=[forever])
    async with serving(
        temporal_env, [definition], tools=[forever], models={"default": model}
    ) as scope:
        handle = await scope.start("cancel-list", "go")
        await asyncio.wait_for(started.wait(), 10)
        await handle.cancel()
        with pytest.raises(InteractionCanceled):
            await handle.result()
        tree = await handle.snapshot()
        assert tree.status == "canceled"
        [unknown] = tree.unknown_effects
        assert unknown.kind == "tool" and unknown.process_id == f"{handle.id}/tool/1/0"
        assert unknown.request.kind == "tool" and unknown.request.call.name == "forever"
        assert "cancelled" in unknown.diagnostic


async def test_c47_live_unknown_definition_fails_with_its_code_not_a_task_loop(
    temporal_env: WorkflowEnvironment,
) -> None:
    async with serving(
        temporal_env, [Definition("known")], models={"default": ScriptedModel([])}
    ) as scope:
        handle = await scope.start("nobody", "go")
        with pytest.raises(InteractionFailed) as failed:
            await asyncio.wait_for(handle.result(), 10)
    assert failed.value.code == "interaction.definition.unknown"
    assert "Register it on the worker" in failed.value.message


async def test_c47_live_a_changed_definition_fails_the_replay_with_its_code(
    temporal_env: WorkflowEnvironment,
) -> None:
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    v1 = Definition("agent", instructions="version one")
    v2 = Definition("agent", instructions="version two")
    model = ScriptedModel([TimeoutError("lost"), reply.text("never")])
    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    async with ScopeWorker(
        temporal_env.client,
        task_queue=task_queue,
        definitions=[v1],
        models={"default": model},
        max_cached_workflows=0,
    ):
        handle = await scope.start("agent", "go")
        DIVERGED_IDS.add(handle.id)
        await eventually(handle.snapshot, lambda s: bool(s.unknown_effects))
    async with ScopeWorker(
        temporal_env.client,
        task_queue=task_queue,
        definitions=[v2],
        models={"default": model},
        max_cached_workflows=0,
    ):
        await temporal_env.client.get_workflow_handle(handle.id).signal("scope.pause")
        with pytest.raises(InteractionFailed) as failed:
            await asyncio.wait_for(handle.result(), 15)
    # Our digest check reads the recorded digest back; when history has moved on past it,
    # Temporal's own non-determinism check fires first. Either way the workflow *fails*
    # with a classified code instead of looping on workflow-task failures.
    assert failed.value.code in ("interaction.definition.changed", "interaction.replay.diverged")
    assert failed.value.kind == "host"


async def test_starting_with_an_id_in_use_raises_a_typed_error_and_starts_nothing(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([TimeoutError("held unknown, so the first run stays open")])
    async with serving(temporal_env, [Definition("taken")], models={"default": model}) as scope:
        first = await scope.start("taken", "go")
        await eventually(first.snapshot, lambda s: bool(s.unknown_effects))
        with pytest.raises(InteractionAlreadyStarted) as raised:
            await scope.start("taken", "again", id=first.id)
        assert raised.value.code == "interaction.id.in_use"
        assert repr(first.id) in raised.value.message and "get_handle" in raised.value.message
        assert len(model.requests) == 1  # nothing new started
        await first.cancel()
