"""A session's events as one stream (`interaction/session_stream.py`, read by
`driver/session_events.py`): positions are (turn, offset); a reader reads turn after
turn, waits while the session is idle, ends with the session, resumes from any stored
position (mid-turn or at a turn's end), and refuses a position ahead of the session.
In-process through `LocalSession.events`, the same reader `SessionHandle.events` runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from scope_temporal import (
    Definition,
    Event,
    EventOffsetError,
    ModelRequest,
    Response,
    ScriptedModel,
    SessionPosition,
    reply,
)
from scope_temporal.client import events as client_events
from scope_temporal.driver.session_events import TurnEvents, read_session
from scope_temporal.errors import (
    EVENTS_OFFSET_AHEAD,
    EVENTS_OFFSET_TRUNCATED,
    HOST_FAILED,
    InteractionNotFound,
    ScopeError,
)
from scope_temporal.interaction.events import ModelStartedEvent
from scope_temporal.interaction.session_stream import after_turn, first_read, missing_turn
from scope_temporal.interaction.session_values import SessionSnapshot, TurnRecord
from scope_temporal.testing import LocalRunner
from scope_temporal.testing.local_session import LocalSession

WAIT = 5.0


def snapshot(statuses: list[str], status: str = "idle") -> SessionSnapshot:
    turns = tuple(
        TurnRecord(turn=n, process_id=f"s/turn/{n}", message_ids=(f"m{n}",), status=s)  # type: ignore[arg-type]
        for n, s in enumerate(statuses, 1)
    )
    return SessionSnapshot(
        session_id="s",
        definition="talk",
        status=status,
        turns=turns,
        messages=0,
        digest="",  # type: ignore[arg-type]
    )


def test_a_position_is_a_turn_and_an_offset_in_it() -> None:
    assert first_read("s", None, 0) == (1, None)
    assert first_read("s", None, 3) == (1, None)
    assert first_read("s", SessionPosition(2, 7), 3) == (2, 7)
    assert first_read("s", (3, -1), 3) == (3, -1)
    for bad in [(4, -1), (0, 0), (1, -2), ("1", 0)]:
        with pytest.raises(EventOffsetError) as caught:
            first_read("s", bad, 3)  # type: ignore[arg-type]
        assert caught.value.code == EVENTS_OFFSET_AHEAD
        assert "last event you read" in caught.value.message
    with pytest.raises(EventOffsetError, match=r"ahead of session 's': it has 3 turn\(s\)"):
        first_read("s", (5, 0), 3)


def test_after_a_turn_the_reader_reads_on_waits_or_stops() -> None:
    assert after_turn(snapshot(["completed", "running"], "running"), 1) == "next"
    assert after_turn(snapshot(["completed"]), 1) == "wait"
    assert after_turn(snapshot(["running"], "running"), 1) == "wait"  # its end not yet taken
    assert after_turn(snapshot(["completed"], "ended"), 1) == "end"
    assert after_turn(snapshot(["canceled"], "failed"), 1) == "end"
    assert after_turn(snapshot([], "running"), 0) == "wait"


def echo(request: ModelRequest) -> Response:
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text("seen: " + " | ".join(users))


def session() -> LocalSession:
    runner = LocalRunner(definitions=[Definition("talk")], models={"default": ScriptedModel(echo)})
    return runner.session("talk", id="s1")


async def read(s: LocalSession, after: tuple[int, int] | None = None) -> list[Event]:
    return [e async for e in s.events(after=after)]


def positions(events: list[Event]) -> list[tuple[int | None, int]]:
    return [(e.turn, e.offset) for e in events]


async def test_a_subscriber_reads_every_turn_in_order_and_waits_while_idle() -> None:
    s = session()
    await (await s.send("one", message_id="m1")).result(timeout=WAIT)
    seen: list[Event] = []

    async def subscribe() -> None:
        async for event in s.events():
            seen.append(event)

    subscriber = asyncio.ensure_future(subscribe())
    await asyncio.sleep(0.05)
    assert not subscriber.done()  # idle after turn 1: it waits for the next turn
    assert seen[-1].kind == "completed" and seen[-1].turn == 1
    await (await s.send("two", message_id="m2")).result(timeout=WAIT)
    await s.end()
    await asyncio.wait_for(subscriber, WAIT)  # ended with the session
    turns = [e.turn for e in seen]
    assert turns == sorted(turns) and set(turns) == {1, 2}
    for turn in (1, 2):
        offsets = [e.offset for e in seen if e.turn == turn]
        assert offsets == list(range(len(offsets)))  # each turn's stream, whole
    ends = [e for e in seen if e.kind == "completed"]
    assert [(e.turn, e.process_id) for e in ends] == [(1, "s1/turn/1"), (2, "s1/turn/2")]
    assert ends[1].output.text == "seen: one | two"  # type: ignore[union-attr]


async def test_a_subscriber_resumes_from_a_stored_position_mid_turn_and_at_a_turn_end() -> None:
    s = session()
    await (await s.send("one", message_id="m1")).result(timeout=WAIT)
    await (await s.send("two", message_id="m2")).result(timeout=WAIT)
    await s.end()
    every = await read(s)
    first_turn = [e for e in every if e.turn == 1]
    assert len(first_turn) >= 3
    # mid-turn: the rest of turn 1, then all of turn 2
    middle = first_turn[1]
    assert positions(await read(s, (1, middle.offset))) == positions(every)[2:]
    # at turn 1's end (its completed event): turn 2 from its first event
    last = first_turn[-1]
    assert positions(await read(s, SessionPosition(1, last.offset))) == [
        (e.turn, e.offset) for e in every if e.turn == 2
    ]
    assert positions(await read(s, (2, -1))) == positions(await read(s, (1, last.offset)))


async def test_a_position_ahead_of_the_session_is_refused() -> None:
    s = session()
    await (await s.send("one", message_id="m1")).result(timeout=WAIT)
    with pytest.raises(EventOffsetError, match=r"ahead of session 's1'"):
        await read(s, (2, 0))
    with pytest.raises(EventOffsetError, match=r"Session 's1', turn 1: Offset 99 is not"):
        await read(s, (1, 99))


async def test_a_turn_no_longer_retained_is_refused_with_what_to_do() -> None:
    async def snap() -> SessionSnapshot:
        return snapshot(["completed", "completed", "completed"])

    async def gone(turn: int, after: int | None) -> AsyncIterator[Event]:
        raise InteractionNotFound(f"No Interaction 's/turn/{turn}'.")
        yield  # pragma: no cover

    events = read_session("s", (1, 4), snapshot=snap, past_turn=lambda n: snap(), turn_events=gone)
    with pytest.raises(EventOffsetError) as caught:
        await anext(events)
    assert caught.value.code == EVENTS_OFFSET_TRUNCATED
    assert "Turn 1 of session 's' is no longer retained" in caught.value.message
    assert "events(after=(3, -1))" in caught.value.message


def test_seam_11_a_listed_turn_without_its_workflow_is_waited_for_while_it_runs() -> None:
    assert missing_turn(snapshot(["completed", "running"], "running"), 2) == "wait"
    assert missing_turn(snapshot(["completed", "completed"]), 2) == "gone"
    assert missing_turn(snapshot(["completed", "failed"]), 2) == "gone"  # never started one
    assert missing_turn(snapshot(["completed"]), 2) == "gone"  # (not a turn of it)


def stream(retained: dict[int, list[int]]) -> TurnEvents:
    """Turn streams holding only the offsets `retained` lists (an older run's dropped);
    a turn not listed is gone. Strict about offsets as `client.events.follow`."""

    async def events(turn: int, after: int | None) -> AsyncIterator[Event]:
        if turn not in retained:
            raise InteractionNotFound(f"No Interaction 's/turn/{turn}'.")
        offsets = retained[turn]
        if after is not None and offsets and offsets[0] > after + 1:
            raise EventOffsetError("dropped", code=EVENTS_OFFSET_TRUNCATED)
        for offset in offsets:
            if after is None or offset > after:
                yield ModelStartedEvent(
                    process_id=f"s/turn/{turn}", offset=offset, model_call_seq=1, model="m"
                )

    return events


async def test_seam_10_from_the_start_each_turn_reads_what_it_still_retains() -> None:
    async def snap() -> SessionSnapshot:
        return snapshot(["completed", "completed", "completed"], "ended")

    turns = stream({1: [0, 1], 2: [5, 6]})  # turn 2 continued as new; turn 3's workflow gone
    read = read_session("s", None, snapshot=snap, past_turn=lambda n: snap(), turn_events=turns)
    assert positions([e async for e in read]) == [(1, 0), (1, 1), (2, 5), (2, 6)]
    # after a position, every later event is owed: a gap is refused, never skipped
    strict = read_session("s", (1, 1), snapshot=snap, past_turn=lambda n: snap(), turn_events=turns)
    with pytest.raises(EventOffsetError) as caught:
        _ = [e async for e in strict]
    assert caught.value.code == EVENTS_OFFSET_TRUNCATED
    assert caught.value.message.startswith("Session 's', turn 2:")


async def test_seam_11_a_turn_listed_as_running_is_waited_for_then_refused_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`client.events.follow_turn` with Temporal's answers faked: no workflow yet."""
    looks: list[int] = []
    listed = ["completed", "running"]

    async def follow(client: object, root_id: str, after: int | None) -> AsyncIterator[Event]:
        looks.append(len(looks))
        if len(looks) < 3:  # its workflow starts at the third look
            raise InteractionNotFound(f"No Interaction {root_id!r}.")
        yield ModelStartedEvent(process_id=root_id, offset=0, model_call_seq=1, model="m")

    async def snap() -> SessionSnapshot:
        return snapshot(listed, "running")

    monkeypatch.setattr(client_events, "follow", follow)
    monkeypatch.setattr(client_events, "TURN_START_POLLS", (0.001,))
    turn = client_events.follow_turn(None, "s", 2, None, snap)  # type: ignore[arg-type]
    assert [e.offset async for e in turn] == [0] and len(looks) == 3
    monkeypatch.setattr(client_events, "TURN_START_WAIT", 0.0)
    looks.clear()
    with pytest.raises(ScopeError) as late:  # it never appears: a clear error, not "gone"
        _ = [e async for e in client_events.follow_turn(None, "s", 2, -1, snap)]  # type: ignore[arg-type]
    assert late.value.code == HOST_FAILED and "is running, but its workflow" in late.value.message
    listed[1] = "completed"  # ended, and its workflow is not there: gone
    looks.clear()
    with pytest.raises(InteractionNotFound):
        _ = [e async for e in client_events.follow_turn(None, "s", 2, -1, snap)]  # type: ignore[arg-type]
    assert len(looks) == 1
