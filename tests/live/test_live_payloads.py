"""CONFORMANCE 46 live: oversized payloads are offloaded, unknown or refused; never a task loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    InteractionFailed,
    InteractionHandle,
    Output,
    Response,
    ScopeClient,
    ScriptedModel,
    ToolResult,
    reply,
    settle_tool_result,
    tool,
)
from scope_temporal.interaction import carried_context
from scope_temporal.storage import DirectoryStorage
from scope_temporal.testing.replay import replay_history
from scope_temporal.tools.decorator import Tool
from tests.live.harness import attempt_workflow_id, eventually, serving

LIMIT = 50_000


dumped: list[int] = []


@tool(permission="read")
def dump(size: int) -> str:
    """Return `size` characters."""
    dumped.append(size)
    return "x" * size


async def task_failures(env: WorkflowEnvironment, workflow_id: str) -> int:
    events = env.client.get_workflow_handle(workflow_id).fetch_history_events()
    return sum([e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED async for e in events])


async def test_c46_oversized_tool_result_is_unknown_keeping_the_request(
    temporal_env: WorkflowEnvironment,
) -> None:
    dumped.clear()
    model = ScriptedModel([reply.tool_calls(("dump", {"size": 200_000})), reply.text("ok")])
    definition = Definition("big-tool", tools=[dump])
    async with serving(
        temporal_env,
        [definition],
        tools=[dump],
        models={"default": model},
        payload_limit_bytes=LIMIT,
    ) as scope:
        handle = await scope.start("big-tool", "go")
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects))
        [unknown] = snap.unknown_effects
        assert unknown.kind == "tool" and unknown.request.call.name == "dump"
        assert "interaction.payload.too_large" in unknown.diagnostic
        assert "tool 'dump'" in unknown.diagnostic and "payload limit" in unknown.diagnostic
        assert len(model.requests) == 1  # the model waits for the host
        call = unknown.request.call
        result = ToolResult(call_id=call.id, name=call.name, content="200000 x (seen by hand)")
        await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        out = await handle.result()
    assert out.text == "ok"
    [seen] = model.requests[1].messages[-1].tool_results
    assert seen.content == "200000 x (seen by hand)" and not seen.is_error
    assert dumped == [200_000]  # the tool ran once; nothing re-ran it
    # the call holds its unknown in its own ToolCall workflow in both mappings
    for workflow_id in (handle.id, f"{handle.id}/tool/1/0"):
        assert await task_failures(temporal_env, workflow_id) == 0


async def test_c46_oversized_model_response_is_unknown(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.text("y" * 200_000)])
    async with serving(
        temporal_env,
        [Definition("big-reply")],
        models={"default": model},
        payload_limit_bytes=LIMIT,
    ) as scope:
        handle = await scope.start("big-reply", "go")
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects))
        assert "payload limit" in snap.unknown_effects[0].diagnostic
        assert "'default'" in snap.unknown_effects[0].diagnostic
        assert await task_failures(temporal_env, handle.id) == 0
        await handle.cancel()


async def test_c46_a_context_grown_past_the_limit_keeps_working_one_round_at_a_time(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("dump", {"size": 30_000})),
            reply.tool_calls(("dump", {"size": 30_000})),
            reply.text("read 60 KB"),
        ]
    )
    definition = Definition("big-context", tools=[dump])
    async with serving(
        temporal_env,
        [definition],
        tools=[dump],
        models={"default": model},
        payload_limit_bytes=LIMIT,
    ) as scope:
        handle = await scope.start("big-context", "go")
        out = await handle.result()
    assert out.text == "read 60 KB"
    # the model got the whole 60 KB conversation; only each round's 30 KB crossed Temporal
    assert sum(len(m.model_dump_json()) for m in model.requests[2].messages) > LIMIT
    assert await task_failures(temporal_env, handle.id) == 0


async def test_c46_a_new_message_over_the_limit_fails_with_its_code(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.text("never")])
    async with serving(
        temporal_env, [Definition("big-ask")], models={"default": model}, payload_limit_bytes=LIMIT
    ) as scope:
        handle = await scope.start("big-ask", "q" * (LIMIT + 1))
        with pytest.raises(InteractionFailed) as failed:
            await handle.result()
    assert failed.value.code == "interaction.payload.too_large"
    assert "model 'default'" in failed.value.message and "storage=" in failed.value.message
    assert model.requests == []
    assert await task_failures(temporal_env, handle.id) == 0


async def test_c46_with_storage_large_payloads_are_offloaded_not_refused(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    storage = DirectoryStorage(tmp_path / "blobs")
    model = ScriptedModel([reply.tool_calls(("dump", {"size": 3_000_000})), reply.text("read it")])
    definition = Definition("big-offloaded", tools=[dump])
    async with serving(
        temporal_env, [definition], tools=[dump], models={"default": model}, storage=storage
    ) as scope:
        offloading = ScopeClient(scope.client, task_queue=scope.task_queue, storage=storage)
        handle = await offloading.start("big-offloaded", "go")
        out = await handle.result()
    assert out.text == "read it"
    [result] = model.requests[1].messages[-1].tool_results
    assert not result.is_error and len(result.content) == 3_000_000
    assert len(list((tmp_path / "blobs").iterdir())) >= 2  # the result and the next request
    attempt = attempt_workflow_id(f"{handle.id}/tool/1/0")
    history = await temporal_env.client.get_workflow_handle(attempt).fetch_history()
    assert len(history.to_json()) < 200_000  # only references stayed in history
    assert await task_failures(temporal_env, handle.id) == 0


async def run_carried(
    env: WorkflowEnvironment, tmp_path: Path, body: Tool, calls: list[Response]
) -> tuple[InteractionHandle, Output]:
    """Run a Definition of the tool `body` through `calls` then a reply "done", with a
    `DirectoryStorage` in `tmp_path/blobs`, continuing as new every 2 model calls."""
    storage = DirectoryStorage(tmp_path / "blobs")
    model = ScriptedModel([*calls, reply.text("done")])
    definition = Definition(f"carried-{body.name}", tools=[body])
    async with serving(
        env, [definition], tools=[body], models={"default": model}, storage=storage
    ) as scope:
        offloading = ScopeClient(scope.client, task_queue=scope.task_queue, storage=storage)
        handle = await offloading.start(definition.name, "go", continue_as_new_every=2)
        return handle, await handle.result()


async def test_c45_with_storage_a_state_over_the_threshold_is_carried_by_reference(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    calls = [reply.tool_calls(("dump", {"size": 100_000})) for _ in range(4)]
    handle, out = await run_carried(temporal_env, tmp_path, dump, calls)
    assert out.text == "done" and out.model_calls == 5
    runs = [r async for r in temporal_env.client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) == 3  # continued as new after calls 2 and 4
    last = await temporal_env.client.get_workflow_handle(handle.id).fetch_history()
    started = last.events[0].workflow_execution_started_event_attributes
    # the carried state holds 400 KB of tool results; only a reference is in history
    assert started.input.ByteSize() < 5_000
    # (its four results are equal: the store, content-addressed, holds that text once)
    assert sum(p.stat().st_size for p in (tmp_path / "blobs").iterdir()) > 100_000
    assert await task_failures(temporal_env, handle.id) == 0


@tool(permission="read")
def numbered(n: int, size: int) -> str:
    """Return `size` characters after `n`: every result differs."""
    return f"{n}:" + "x" * size


async def test_c45_with_storage_each_continue_as_new_stores_only_what_is_new_and_replays(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    calls = [reply.tool_calls(("numbered", {"n": n, "size": 100_000})) for n in range(8)]
    handle, out = await run_carried(temporal_env, tmp_path, numbered, calls)
    definition = Definition("carried-numbered", tools=[numbered])
    assert out.text == "done" and out.model_calls == 9
    client = temporal_env.client
    runs = [r async for r in client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) == 5  # continued as new after calls 2, 4, 6 and 8
    # Four carried states of 200 to 800 KB of results: written whole (each result twice,
    # in the conversation and the settled rounds, and the first model call after each
    # continue-as-new sending the whole conversation again) they took about 6 MB; as
    # pieces, each result is stored about once.
    stored = sum(p.stat().st_size for p in (tmp_path / "blobs").iterdir())
    assert stored < 1.5 * 800_000, stored
    for run in runs:
        history = await client.get_workflow_handle(handle.id, run_id=run.run_id).fetch_history()
        blobs = DirectoryStorage(tmp_path / "blobs")
        await replay_history(history, [definition], storage=blobs)
        with pytest.MonkeyPatch.context() as fresh:  # a worker that kept no segment
            fresh.setattr(carried_context, "_SEGMENTS", carried_context._Segments())
            fresh.setattr(carried_context, "_ROUNDS", carried_context._Rounds())
            await replay_history(history, [definition], storage=blobs)
        # every model call sends what is new: at most one result, also the first call
        # of a run (the chain digest of what came before is carried)
        inputs = [
            e.activity_task_scheduled_event_attributes.input
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        ]
        assert inputs and all(p.ByteSize() < 150_000 for i in inputs for p in i.payloads)
    assert await task_failures(temporal_env, handle.id) == 0
