"""The event stream in-process (`LocalRun.events`): the same events the workflows publish,
from the same drivers, in both tool-call mappings. A host following a tree with an input
wait, an unknown outcome, a delegate, a background task and a steer sees each event once,
in order; it resumes after any offset; an offset the stream has not reached is refused."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from scope_temporal import (
    Definition,
    Event,
    EventOffsetError,
    Message,
    ModelRetry,
    ModelSettledEvent,
    ModelUnavailable,
    ScriptedModel,
    ToolResult,
    reply,
    settle_tool_result,
)
from scope_temporal.testing import LocalRun, LocalRunner
from tests.live.event_tree import Scenario, definitions, job, notify, restart


def runner(model: Scenario) -> LocalRunner:
    return LocalRunner(
        definitions=definitions(),
        tools=[restart, notify, job],
        models={"default": ScriptedModel(model)},
    )


async def host(run: LocalRun, model: Scenario, seen: list[Event], after: int | None = None) -> None:
    async for event in run.events(after=after):
        seen.append(event)
        if event.kind == "wait_opened":
            await run.steer("s1", Message.user("be careful"))
            await run.answer(event.wait, "a1", {"approved": True})
        elif event.kind == "unknown_opened":
            [unknown] = run.snapshot().unknown_effects
            result = ToolResult(call_id=unknown.request.call.id, name="notify", content="posted")  # type: ignore[union-attr]
            await run.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))  # type: ignore[arg-type]
        elif event.kind == "task_progress" and event.task.status == "completed":
            model.job_seen.set()


async def test_a_local_host_sees_every_event_once_and_in_order() -> None:
    model = Scenario()
    run = await runner(model).start("events-ops", [Message.user("fix web")])
    seen: list[Event] = []
    await asyncio.wait_for(host(run, model, seen), 20)
    assert (await run.result()).text == "All done: web restarted."
    assert [e.offset for e in seen] == list(range(len(seen)))
    assert seen[-1].kind == "completed" and seen[-1].process_id == run.id
    every = [e async for e in run.events()]
    assert [e.model_dump() for e in every] == [e.model_dump() for e in seen]
    order = [e.kind for e in seen]
    for kind in ("wait_opened", "wait_answered", "unknown_opened", "unknown_settled"):
        assert order.count(kind) == 1, kind
    assert order.index("wait_opened") < order.index("wait_answered")
    assert order.index("unknown_opened") < order.index("unknown_settled")
    assert order.index("steer_applied") < max(
        i for i, e in enumerate(seen) if e.kind == "model_started" and e.process_id == run.id
    )
    delegate = f"{run.id}/delegate/1/2"
    assert [e.kind for e in seen if e.process_id == delegate] == [
        "model_started",
        "model_settled",
        "completed",
    ]
    texts = [e for e in seen if e.kind == "text" and e.process_id == run.id]
    last = max(e.model_call_seq for e in texts)  # a task's notification may add a turn
    assert [e.text for e in texts if e.model_call_seq == last] == [
        "All ",
        "done: ",
        "web ",
        "restarted.",
    ]
    statuses = [e.task.status for e in seen if e.kind == "task_progress"]
    assert statuses[-1] == "completed"


async def test_a_local_host_resumes_after_an_offset_and_an_offset_ahead_is_refused() -> None:
    model = Scenario()
    run = await runner(model).start("events-ops", [Message.user("fix web")])
    seen: list[Event] = []
    await asyncio.wait_for(host(run, model, seen), 20)
    middle = seen[len(seen) // 2].offset
    rest = [e async for e in run.events(after=middle)]
    assert [e.offset for e in rest] == [e.offset for e in seen[middle + 1 :]]
    with pytest.raises(EventOffsetError) as ahead:
        async for _ in run.events(after=len(seen) + 3):
            pass
    assert ahead.value.code == "interaction.events.offset_ahead"
    with pytest.raises(EventOffsetError):
        async for _ in run.events(after=-5):
            pass


async def test_a_local_host_sees_a_call_the_model_did_not_run_and_a_resent_unknown() -> None:
    model = ScriptedModel(
        [
            ModelUnavailable("Rate limit reached", status=429),
            TimeoutError("connection reset after the request was written"),
            reply.text("answered at last"),
        ]
    )
    retrying = Definition(
        "events-retry",
        model_retry=ModelRetry(initial_interval=timedelta(milliseconds=5), jitter=0.0),
    )
    run = await LocalRunner(definitions=[retrying], models={"default": model}).start(
        "events-retry", [Message.user("hi")]
    )
    seen: list[Event] = []
    async for event in run.events():
        seen.append(event)
        if event.kind == "unknown_opened":
            [unknown] = (await run.idle()).unknown_effects
            await run.retry_model_call(unknown)
    assert (await run.result()).text == "answered at last"
    [not_called] = [e for e in seen if isinstance(e, ModelSettledEvent) and e.not_called]
    assert not_called.outcome == "not_called" and not_called.retried
    assert not_called.not_called is not None and not_called.not_called.status == 429
    assert [e.kind for e in seen] == [
        "model_started",
        "model_settled",  # not called: 429, retried after the backoff
        "model_started",
        "unknown_opened",
        "unknown_settled",  # the host sent it again
        "model_started",
        "model_settled",
        "completed",
    ]
