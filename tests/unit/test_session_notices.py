"""Background tasks' notifications through a session (issue 18, rule 6 of
`interaction/session.py`): the running turn gets one as a steer; an idle session keeps it
for the next turn, which applies it before its first model call; it is deduplicated by its
notice id, never opens a turn, survives continue-as-new, shows in the snapshot; one a turn
did not apply is kept for the next. And in-process: a task of turn 1 that ends after turn 1
did is read by turn 2's model, and shows in the session's events as turn 2's steer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scope_temporal import (
    Definition,
    Message,
    ScriptedModel,
    SteerAppliedEvent,
)
from scope_temporal.errors import InvalidSignal
from scope_temporal.interaction.notices import notice_id
from scope_temporal.interaction.session import KEPT_MESSAGE_IDS, SessionMachine
from scope_temporal.interaction.session_values import QueuedMessage, StartTurn, SteerTurn
from scope_temporal.outputs import Failure
from scope_temporal.testing import LocalRunner
from tests.live.session_report import GATE, Report, reporter
from tests.unit.test_session_machine import output

WAIT = 5.0
NOTE = (Message.user("task t1 completed"),)


def started(m: SessionMachine) -> StartTurn:
    [effect] = m.next_effects()
    assert isinstance(effect, StartTurn)
    return effect


def test_a_notice_steers_the_running_turn_and_one_it_did_not_apply_is_kept() -> None:
    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    assert started(m).notices == ()
    assert m.notice("n1", NOTE) is True
    assert m.notice("n1", NOTE) is False  # deduplicated by its id
    [steer] = m.next_effects()
    assert steer == SteerTurn(
        process_id="s1/turn/1", message=QueuedMessage(message_id="n1", messages=NOTE)
    )
    assert m.snapshot().notices == ()  # passed on
    # the turn had already given its final reply: kept for the next turn, opens none
    m.turn_ended(1, output(Message.user("hi"), Message.assistant("hello")), None)
    assert m.phase == "idle" and m.snapshot().notices == ("n1",)
    m.send("m2", [Message.user("and?")])
    assert started(m).notices == (QueuedMessage(message_id="n1", messages=NOTE),)
    applied = output(Message.user("and?"), *NOTE, Message.assistant("ok"), applied=("n1",))
    m.turn_ended(2, applied, None)
    assert m.snapshot().notices == ()
    assert m.notice("n1", NOTE) is False  # taken once, ever


def test_an_idle_session_keeps_notices_for_the_next_turn_across_continue_as_new() -> None:
    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    started(m)
    m.turn_ended(1, output(Message.user("hi"), Message.assistant("hello")), None)
    assert m.notice("n1", NOTE) and m.notice("n2", (Message.user("task t2 failed"),))
    assert m.next_effects() == [] and m.phase == "idle"  # a notice never opens a turn
    carried = SessionMachine(m.state)  # what continue-as-new carries
    assert carried.snapshot().notices == ("n1", "n2")
    assert carried.notice("n1", NOTE) is False
    carried.send("m2", [Message.user("next")])
    assert [n.message_id for n in started(carried).notices] == ["n1", "n2"]
    # a failed turn applied none of them: kept again
    carried.turn_ended(2, None, Failure.of("interaction.host.failed", "boom"))
    assert carried.snapshot().notices == ("n1", "n2")


def test_an_ended_session_drops_notices_and_bad_ones_are_refused() -> None:
    m = SessionMachine.start("s1", "talk")
    with pytest.raises(InvalidSignal):
        m.notice("n1", (Message.assistant("not a user message"),))
    with pytest.raises(InvalidSignal):
        m.notice("", NOTE)
    m.end()
    assert m.notice("n1", NOTE) is False and m.snapshot().notices == ()
    ids = SessionMachine.start("s2", "talk")
    for n in range(KEPT_MESSAGE_IDS + 5):
        ids.notice(f"n{n}", NOTE)
    assert len(ids.state.notice_ids) == KEPT_MESSAGE_IDS


async def test_a_task_ending_after_its_turn_is_read_by_the_next_turn() -> None:
    GATE[:] = [asyncio.Event()]
    model = ScriptedModel(reporter)
    runner = LocalRunner(
        definitions=[Definition("bg", tools=[Report])], tools=[Report], models={"default": model}
    )
    session = runner.session("bg", id="s1")
    first = await session.send("write the report", message_id="m1")
    assert (await first.result(timeout=WAIT)).text == "started it"
    [task] = first.snapshot().tasks
    GATE[0].set()  # the task ends after its turn did: the idle session keeps the notice
    snap = await asyncio.wait_for(_until_noticed(session), WAIT)
    assert snap.notices == (notice_id(task.task_id, "completed"),)
    assert snap.status == "idle" and len(snap.turns) == 1  # it opened no turn
    second = await session.send("anything new?", message_id="m2")
    assert (await second.result(timeout=WAIT)).text == "told: 1"
    [request] = [r for r in model.requests if r.messages[-1].text != "write the report"][-1:]
    assert task.task_id in request.messages[-1].text  # applied before turn 2's first call
    await session.end()
    steers = [e async for e in session.events() if isinstance(e, SteerAppliedEvent)]
    assert [(e.turn, e.signal_id) for e in steers] == [(2, notice_id(task.task_id, "completed"))]
    assert (await session.snapshot()).notices == ()


async def _until_noticed(session: Any) -> Any:
    while not (snap := await session.snapshot()).notices:
        await asyncio.sleep(0.01)
    return snap
