"""A session's events as one stream, live (docs/events.md#sessions): every turn's events in
order, each with its turn and its offset in that turn; a subscriber waits while the session
is idle and ends with it; it resumes from a stored (turn, offset) mid-turn and across a turn
boundary; a position ahead of the session, and a session that does not exist, are refused
with a typed error (a turn no longer retained: tests/unit/test_session_events.py). And a
background task that ends after its turn did tells the session, whose next turn's model
reads it (issue 18)."""

from __future__ import annotations

import asyncio
import time

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    Event,
    EventOffsetError,
    InteractionNotFound,
    ModelRequest,
    Response,
    ScriptedModel,
    SessionHandle,
    SessionPosition,
    SteerAppliedEvent,
    reply,
)
from scope_temporal.errors import EVENTS_OFFSET_AHEAD
from scope_temporal.interaction.notices import notice_id
from tests.live.harness import eventually, fresh_id, serving
from tests.live.session_report import GATE, Report, reporter

WAIT = 30.0


def echo(request: ModelRequest) -> Response:
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text("seen: " + " | ".join(users))


TALK = Definition("talk-events")


async def read(session: SessionHandle, after: tuple[int, int] | None = None) -> list[Event]:
    async def every() -> list[Event]:
        return [e async for e in session.events(after=after)]

    return await asyncio.wait_for(every(), WAIT)


def positions(events: list[Event]) -> list[tuple[int | None, int]]:
    return [(e.turn, e.offset) for e in events]


async def test_a_subscriber_follows_a_session_across_turns_and_resumes_where_it_was(
    temporal_env: WorkflowEnvironment,
) -> None:
    async with serving(temporal_env, [TALK], models={"default": ScriptedModel(echo)}) as scope:
        session = scope.session("talk-events", id=fresh_id("sess-events"))
        await (await session.send("one", message_id="m1")).result()
        seen: list[tuple[float, Event]] = []

        async def subscribe() -> None:
            async for event in session.events():
                seen.append((time.monotonic(), event))

        subscriber = asyncio.ensure_future(subscribe())
        await eventually(
            lambda: asyncio.sleep(0, len(seen)), lambda n: n > 0 and seen[-1][1].kind == "completed"
        )
        await asyncio.sleep(1.0)  # idle: the subscriber waits for the next turn
        assert not subscriber.done()
        sent = time.monotonic()
        await (await session.send("two", message_id="m2")).result()
        await (await session.send("three", message_id="m3")).result()
        await session.end()
        await asyncio.wait_for(subscriber, WAIT)  # it ended with the session
        events = [e for _, e in seen]
        assert [e.turn for e in events] == sorted(e.turn for e in events)
        for turn in (1, 2, 3):
            offsets = [e.offset for e in events if e.turn == turn]
            assert offsets == list(range(len(offsets))), turn  # each turn whole, in order
        ends = [e for e in events if e.kind == "completed"]
        assert [(e.turn, e.process_id) for e in ends] == [
            (n, f"{session.id}/turn/{n}") for n in (1, 2, 3)
        ]
        first_of_two = next(t for t, e in seen if e.turn == 2)
        latency = first_of_two - sent
        print(f"\nthe first event of turn 2 reached the idle subscriber {latency:.3f}s after send")
        # resume from stored positions: mid-turn, and at a turn's end (across the boundary)
        two = [e for e in events if e.turn == 2]
        middle = two[len(two) // 2]
        after_middle = await read(session, SessionPosition(2, middle.offset))
        assert positions(after_middle) == positions(events)[events.index(middle) + 1 :]
        end_of_one = ends[0]
        assert positions(await read(session, (1, end_of_one.offset))) == positions(
            [e for e in events if e.turn in (2, 3)]
        )
        assert positions(await read(session, (3, -1))) == positions(
            [e for e in events if e.turn == 3]
        )


async def test_bad_positions_and_unknown_sessions_are_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    async with serving(temporal_env, [TALK], models={"default": ScriptedModel(echo)}) as scope:
        session = scope.session("talk-events", id=fresh_id("sess-bad"))
        await (await session.send("one", message_id="m1")).result()
        await (await session.send("two", message_id="m2")).result()
        with pytest.raises(EventOffsetError) as ahead:
            await read(session, (3, 0))
        assert ahead.value.code == EVENTS_OFFSET_AHEAD and "2 turn(s) so far" in ahead.value.message
        with pytest.raises(EventOffsetError) as past_head:
            await read(session, (1, 500))
        assert past_head.value.code == EVENTS_OFFSET_AHEAD
        assert past_head.value.message.startswith(f"Session {session.id!r}, turn 1:")
        with pytest.raises(InteractionNotFound):
            await read(scope.get_session(fresh_id("no-such-session")))
        await session.end()


async def test_a_task_that_ends_after_its_turn_tells_the_next_turn_through_the_session(
    temporal_env: WorkflowEnvironment,
) -> None:
    GATE[:] = [asyncio.Event()]
    model = ScriptedModel(reporter)
    definition = Definition("talk-reports", tools=[Report])
    async with serving(
        temporal_env, [definition], tools=[Report], models={"default": model}
    ) as scope:
        session = scope.session("talk-reports", id=fresh_id("sess-notice"))
        first = await session.send("write the report", message_id="m1")
        assert (await first.result()).text == "started it"
        [task] = (await first.snapshot()).tasks
        GATE[0].set()  # the task ends after turn 1 did: the idle session keeps the notice
        notice = notice_id(task.task_id, "completed")
        snap = await eventually(session.snapshot, lambda s: s.notices == (notice,))
        assert snap.status == "idle" and len(snap.turns) == 1  # it opened no turn
        second = await session.send("anything new?", message_id="m2")
        assert (await second.result()).text == "told: 1"
        assert task.task_id in model.requests[-1].messages[-1].text  # before its first call
        await session.end()
        steers = [e async for e in session.events() if isinstance(e, SteerAppliedEvent)]
        assert [(e.turn, e.signal_id) for e in steers] == [(2, notice)]
        assert (await session.snapshot()).notices == ()
