"""Sessions live where a host meets them (issue 25): a host's own timeout on a turn's
result says nothing of the turn (defect 3); a subscriber following `session.events()`
never crashes on a turn sent right after the last one ended (its workflow is waited for,
defect 11), and from the start it reads what each turn still retains, a turn continued
as new included (defect 10); `end` before any message ends the session for good, and a
send racing it is refused or its turn cancelled (defect 2). The mapping of tool calls
changes none of this: these run in the default one."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    ApprovalPolicy,
    Definition,
    Event,
    ModelRequest,
    Response,
    ScriptedModel,
    SessionEnded,
    reply,
    tool,
)
from scope_temporal.driver import session as session_driver
from scope_temporal.payloads import InteractionInput
from scope_temporal.workflows import events as stream_module
from scope_temporal.workflows.session_transport import SessionTemporalTransport
from tests.live.harness import DIVERGED_IDS, eventually, fresh_id, serving

WAIT = 30.0


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


@tool(permission="read")
def read_status(name: str) -> str:
    """Read a service's status."""
    return f"{name}: ok"


def echo(request: ModelRequest) -> Response:
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text("seen: " + " | ".join(users))


def status_then_echo(request: ModelRequest) -> Response:
    """A tool round, then the reply: a turn of two model calls."""
    if request.messages[-1].role == "user":
        return reply.tool_calls(("read_status", {"name": "db"}))
    return echo(request)


def restart_then_echo(request: ModelRequest) -> Response:
    """A covered call (it waits for approval), then the reply."""
    if not any(m.role == "tool" for m in request.messages):
        return reply.tool_calls(("restart_service", {"name": "web"}))
    return echo(request)


TALK = Definition("talk-seams")
OPS = Definition("ops-seams", tools=[restart_service], approval=ApprovalPolicy.deny_writes())
STATUS = Definition("status-seams", tools=[read_status])


async def test_seam_03_a_hosts_timeout_on_a_turns_result_leaves_the_next_message_steering_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(restart_then_echo)
    async with serving(
        temporal_env, [OPS], tools=[restart_service], models={"default": model}
    ) as scope:
        session = scope.session("ops-seams", id=fresh_id("sess-timeout"))
        turn = await session.send("restart web", message_id="m1")
        snap = await eventually(turn.snapshot, lambda s: bool(s.pending_tool_inputs))
        with pytest.raises(asyncio.TimeoutError):  # the UI's own timeout: turn 1 waits on us
            await asyncio.wait_for(turn.result(), 0.5)
        # the next message steers the waiting turn: it does not wait for turn 1 to end
        steered = await asyncio.wait_for(session.send("and say so", message_id="m2"), WAIT)
        assert steered.id == turn.id
        assert session.last_receipt is not None
        assert session.last_receipt.disposition == "steered"
        [pending] = snap.pending_tool_inputs
        await turn.answer(pending, "a1", {"decision": "approve"})
        output = await asyncio.wait_for(turn.result(), WAIT)
        assert "and say so" in output.text
        await session.end()


async def test_seam_11_a_subscriber_follows_turns_sent_right_after_the_last_one_ended(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each turn after the first is listed by the session half a second before its
    workflow exists (as when the server is slow to start a child): the subscriber, which
    sees the session list it, waits for it."""
    run_turn = SessionTemporalTransport.run_turn

    async def slow_start(self: SessionTemporalTransport, *args: Any, **kwargs: Any) -> Any:
        if not str(kwargs["process_id"]).endswith("/turn/1"):
            await workflow.sleep(0.5)
        return await run_turn(self, *args, **kwargs)

    monkeypatch.setattr(SessionTemporalTransport, "run_turn", slow_start)
    rounds, turns = 2, 3
    async with serving(temporal_env, [TALK], models={"default": ScriptedModel(echo)}) as scope:
        warm = scope.session("talk-seams", id=fresh_id("sess-warm"))  # a warm worker
        await (await warm.send("warm up", message_id="w")).result()
        for _ in range(rounds):
            session = scope.session("talk-seams", id=fresh_id("sess-follow"))
            DIVERGED_IDS.add(session.id)  # its history holds the test's own timer
            await (await session.send("1", message_id="m1")).result()
            seen: list[Event] = []
            resumed: list[Event] = []  # from a stored position: every later event owed

            async def subscribe(after: tuple[int, int] | None, into: list[Event]) -> None:
                async for event in session.events(after=after):  # noqa: B023 (this round)
                    into.append(event)

            subscribers = asyncio.gather(subscribe(None, seen), subscribe((1, 0), resumed))
            for n in range(2, turns + 1):  # each right after the last one's result
                await (await session.send(str(n), message_id=f"m{n}")).result()
            await session.end()
            await asyncio.wait_for(subscribers, WAIT)  # no EventOffsetError: they ended
            ends = [e.turn for e in seen if e.kind == "completed"]
            assert ends == list(range(1, turns + 1))
            for n in range(1, turns + 1):
                offsets = [e.offset for e in seen if e.turn == n]
                assert offsets == list(range(len(offsets)))  # each turn whole, in order
            assert [(e.turn, e.offset) for e in resumed] == [
                (e.turn, e.offset) for e in seen if (e.turn, e.offset) > (1, 0)
            ]


async def test_seam_10_from_the_start_a_turn_continued_as_new_reads_what_it_retains(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "CARRIED_EVENTS", 2)  # the worker is in this process
    async with serving(
        temporal_env,
        [STATUS],
        tools=[read_status],
        models={"default": ScriptedModel(status_then_echo)},
    ) as scope:
        session = scope.session("status-seams", id=fresh_id("sess-carried"))
        first = await (await session.send("one", message_id="m1")).result()
        # turn 2 continues as new after each model call: its stream keeps its latest events
        monkeypatch.setattr(
            session_driver,
            "InteractionInput",
            functools.partial(InteractionInput, continue_as_new_every=1),
        )
        second = await (await session.send("two", message_id="m2")).result()
        assert first.text == "seen: one" and second.text == "seen: one | two"
        await session.end()
        events = await asyncio.wait_for(_read(session.events()), WAIT)
    one = [e.offset for e in events if e.turn == 1]
    two = [e.offset for e in events if e.turn == 2]
    assert one == list(range(len(one)))  # turn 1 whole
    assert two and two[0] > 0 and two == list(range(two[0], two[0] + len(two)))
    assert [e.kind for e in events if e.kind == "completed"] == ["completed"] * 2


async def _read(events: object) -> list[Event]:
    return [e async for e in events]  # type: ignore[attr-defined]


async def test_seam_02_end_before_any_message_ends_the_session_for_good(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(echo)
    async with serving(temporal_env, [TALK], models={"default": model}) as scope:
        id = fresh_id("sess-end-first")
        session = scope.session("talk-seams", id=id)
        await asyncio.wait_for(session.end(), WAIT)  # no workflow had this id: it starts ended
        for handle in (session, scope.session("talk-seams", id=id)):
            with pytest.raises(SessionEnded):
                await asyncio.wait_for(handle.send("hi", message_id="m1"), WAIT)
        snap = await session.snapshot()
        assert (snap.status, snap.turns, snap.messages) == ("ended", (), 0)
        await asyncio.wait_for(session.end(), WAIT)  # ending it again does nothing
        assert model.requests == []


@pytest.mark.parametrize("end_first", [True, False])
async def test_seam_02_a_send_racing_the_first_end_is_refused_or_cancelled(
    temporal_env: WorkflowEnvironment, end_first: bool
) -> None:
    model = ScriptedModel(restart_then_echo)  # a turn waits on an approval: never done
    async with serving(
        temporal_env, [OPS], tools=[restart_service], models={"default": model}
    ) as scope:
        id = fresh_id("sess-end-race")
        calls = [
            scope.session("ops-seams", id=id).end(),
            scope.session("ops-seams", id=id).send("restart web", message_id="m1"),
        ]
        results = await asyncio.wait_for(
            asyncio.gather(*(calls if end_first else calls[::-1]), return_exceptions=True),
            WAIT,
        )
        ended, sent = results if end_first else results[::-1]
        assert ended is None
        session = scope.session("ops-seams", id=id)
        snap = await session.snapshot()
        assert snap.status == "ended" and snap.current is None
        if isinstance(sent, BaseException):
            assert isinstance(sent, SessionEnded), sent
            assert snap.turns == ()
        else:  # its turn started: the end cancelled it
            assert [t.status for t in snap.turns] == ["canceled"]
        with pytest.raises(SessionEnded):
            await asyncio.wait_for(session.send("still there?", message_id="m2"), WAIT)
