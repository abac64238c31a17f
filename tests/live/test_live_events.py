"""The pushed event stream, live (docs/events.md): one stream per tree, hosted by the root,
with every process reporting into it; each event once, in order, with contiguous offsets;
resumable by offset; stale and future offsets refused with a typed error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Event,
    EventOffsetError,
    InteractionHandle,
    ModelRequest,
    Response,
    ScriptedModel,
    ToolResult,
    reply,
    settle_tool_result,
)
from scope_temporal.workflows import events as stream_module
from tests.live.event_tree import Scenario, definitions, job, notify, restart
from tests.live.harness import serving


async def drive(handle: InteractionHandle, model: Scenario, seen: list[Event]) -> None:
    """Follow the tree as a host does: answer the wait, settle the unknown, steer once."""
    async for event in handle.events():
        seen.append(event)
        if event.kind == "wait_opened":
            await handle.steer("steer-1", "keep it short")
            await handle.answer(event.wait, "answer-1", {"approved": True})
        elif event.kind == "unknown_opened":
            snap = await handle.snapshot()
            [unknown] = snap.unknown_effects
            result = ToolResult(
                call_id=event.call.id if event.call else "",
                name="notify",
                content="posted (checked the channel)",
            )
            await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        elif event.kind == "task_progress" and event.task.status == "completed":
            model.job_seen.set()


def kinds(events: list[Event], process_id: str | None = None) -> list[str]:
    return [e.kind for e in events if process_id is None or e.process_id == process_id]


def position(events: list[Event], kind: str, **where: Any) -> int:
    for index, event in enumerate(events):
        if event.kind == kind and all(getattr(event, k) == v for k, v in where.items()):
            return index
    raise AssertionError(f"no {kind} {where} in {kinds(events)}")


async def test_a_subscriber_sees_every_event_of_the_tree_once_and_in_order(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = Scenario()
    async with serving(
        temporal_env,
        definitions(),
        tools=[restart, notify, job],
        models={"default": ScriptedModel(model)},
    ) as scope:
        handle = await scope.start("events-ops", "fix web")
        seen: list[Event] = []
        await asyncio.wait_for(drive(handle, model, seen), 60)
        assert (await handle.result()).text == "All done: web restarted."
        # a second subscriber, after the end, reads the same stream from the start
        again = [e async for e in handle.events()]

    root = handle.id
    assert [e.offset for e in seen] == list(range(len(seen)))  # each once, in order
    assert [e.model_dump() for e in again] == [e.model_dump() for e in seen]
    assert seen[-1].kind == "completed" and seen[-1].process_id == root
    assert seen[0].kind == "model_started" and seen[0].process_id == root
    assert kinds(seen, root)[:2] == ["model_started", "model_settled"]
    started = [e for e in seen if e.kind == "tool_started"]
    assert [e.call.name for e in started] == ["restart", "notify", "summarize", "job"]
    wait = position(seen, "wait_opened")
    assert position(seen, "tool_started", ref=f"{root}/1/0") < wait
    assert (
        wait < position(seen, "wait_answered") < position(seen, "tool_settled", ref=f"{root}/1/0")
    )
    unknown = position(seen, "unknown_opened")
    assert (
        unknown
        < position(seen, "unknown_settled")
        < position(seen, "tool_settled", ref=f"{root}/1/1")
    )
    delegate = f"{root}/delegate/1/2"
    assert kinds(seen, delegate) == ["model_started", "model_settled", "completed"]
    assert position(seen, "completed", process_id=delegate) < position(
        seen, "tool_settled", ref=f"{root}/1/2"
    )
    assert next(e for e in seen if e.kind == "tool_settled" and e.ref == f"{root}/1/2").delegate
    task = f"{root}/task/1/3"
    progress = [e.task for e in seen if e.kind == "task_progress"]
    assert {p.task_id for p in progress} == {task}
    assert progress[-1].status == "completed" and progress[-1].progress.events == 3
    steer = position(seen, "steer_applied")
    assert steer < position(seen, "model_started", model_call_seq=2)
    texts = [e for e in seen if e.kind == "text" and e.process_id == root]
    last = max(e.model_call_seq for e in texts)  # a task's notification may add a turn
    assert "".join(e.text for e in texts if e.model_call_seq == last) == "All done: web restarted."
    assert position(seen, "model_started", model_call_seq=2) < position(seen, "text")
    assert position(seen, "text") < position(seen, "model_settled", model_call_seq=2)


async def test_a_subscriber_resumes_by_offset_and_refuses_offsets_out_of_range(
    temporal_env: WorkflowEnvironment,
) -> None:
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            return reply.tool_calls(("restart", {"service": "db"}))
        await release.wait()
        return reply.text("done")

    async with serving(
        temporal_env,
        definitions(),
        tools=[restart, notify, job],
        models={"default": ScriptedModel(slow)},
    ) as scope:
        handle = await scope.start("events-ops", "fix db")
        first: list[Event] = []
        async for event in handle.events():  # a host reads until the wait, then drops off
            first.append(event)
            if event.kind == "wait_opened":
                break
        last = first[-1].offset
        with pytest.raises(EventOffsetError) as ahead:
            async for _ in handle.events(after=last + 5):
                pass
        assert ahead.value.code == "interaction.events.offset_ahead"
        with pytest.raises(EventOffsetError):
            async for _ in handle.events(after=-2):
                pass
        assert first[-1].kind == "wait_opened"
        await handle.answer(first[-1].wait, "a-1", {"approved": False})
        release.set()
        rest = [e async for e in handle.events(after=last)]
    assert [e.offset for e in rest] == list(range(last + 1, last + 1 + len(rest)))
    assert rest[0].kind == "wait_answered" and rest[-1].kind == "completed"


async def test_offsets_stay_valid_across_continue_as_new_and_a_stale_one_is_refused(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "CARRIED_EVENTS", 2)  # the worker is in this process
    model = ScriptedModel(
        [reply.tool_calls(("restart", {"service": f"s{i}"})) for i in range(3)] + [reply.text("ok")]
    )
    async with serving(
        temporal_env, definitions(), tools=[restart, notify, job], models={"default": model}
    ) as scope:
        handle = await scope.start("events-ops", "go", continue_as_new_every=1)
        seen: list[Event] = []
        async for event in handle.events():
            seen.append(event)
            if event.kind == "wait_opened":
                await handle.answer(event.wait, f"a-{event.offset}", {"approved": True})
        assert [e.offset for e in seen] == list(range(len(seen)))  # across four runs
        assert kinds(seen).count("model_started") == 4 and seen[-1].kind == "completed"
        with pytest.raises(EventOffsetError) as stale:  # (reading a closed run takes a worker)
            async for _ in handle.events(after=0):
                pass
        assert stale.value.code == "interaction.events.offset_truncated"
        retained = [e async for e in handle.events()]  # after=None: what the last run holds
    assert retained[-1].kind == "completed"
    assert [e.offset for e in retained] == [e.offset for e in seen[-len(retained) :]]
    assert len(retained) < len(seen)


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]
