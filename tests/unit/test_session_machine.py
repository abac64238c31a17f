"""Sessions on the pure machine (`interaction/session.py`): a message opens a turn or
steers the running one, the transcript grows by what each turn added and is passed by
reference, ids are taken once, approvals are kept for the session, `end` ends it."""

from __future__ import annotations

import pytest

from scope_temporal import errors
from scope_temporal.chat import Message, Response
from scope_temporal.context_refs import prefix_digest
from scope_temporal.errors import (
    InvalidSignal,
    SessionEnded,
    SignalConflict,
    StaleMessage,
)
from scope_temporal.interaction.session import KEPT_MESSAGE_IDS, SessionMachine
from scope_temporal.interaction.session_values import (
    CancelTurn,
    SessionState,
    StartTurn,
    SteerTurn,
)
from scope_temporal.outputs import Failure, Output, TurnTranscript


def machine(**options: object) -> SessionMachine:
    return SessionMachine.start("s1", "talk", {"user": "ada"}, **options)  # type: ignore[arg-type]


def output(
    *added: Message, applied: tuple[str, ...] = (), approved: tuple[str, ...] = ()
) -> Output:
    """A turn's Output adding `added` to the transcript."""
    return Output(
        source="model_response",
        model_response=Response(message=added[-1], finish_reason="stop"),
        model_calls=1,
        transcript=TurnTranscript(messages=added, applied_signals=applied),
        approved_tools=approved,
    )


def start_of(m: SessionMachine) -> StartTurn:
    [effect] = m.next_effects()
    assert isinstance(effect, StartTurn)
    return effect


def test_a_message_opens_a_turn_with_the_transcript_by_reference() -> None:
    m = machine()
    receipt = m.send("m1", [Message.user("hi")])
    assert (receipt.turn, receipt.process_id, receipt.disposition) == (1, "s1/turn/1", "started")
    first = start_of(m)
    assert first.base.count == 0 and first.messages == (Message.user("hi"),)
    assert first.run_context == {"user": "ada", "session_id": "s1"}
    m.turn_ended(1, output(Message.user("hi"), Message.assistant("hello")), None)
    assert m.phase == "idle" and len(m.transcript) == 2
    m.send("m2", [Message.user("again")])
    second = start_of(m)
    assert second.process_id == "s1/turn/2"
    assert (second.base.count, second.base.digest) == (2, prefix_digest(m.transcript))
    assert second.messages == (Message.user("again"),)  # never the earlier turns


def test_a_message_during_a_turn_steers_it_and_one_it_missed_opens_the_next() -> None:
    m = machine()
    m.send("m1", [Message.user("hi")])
    start_of(m)
    steered = m.send("m2", [Message.user("also this")])
    assert (steered.turn, steered.disposition) == (1, "steered")
    [steer] = m.next_effects()
    assert isinstance(steer, SteerTurn) and steer.message.message_id == "m2"
    late = m.send("m3", [Message.user("and that")])
    m.next_effects()
    # the turn took m2 in, not m3 (it had already given its final reply)
    m.turn_ended(1, output(Message.user("hi"), Message.assistant("ok"), applied=("m2",)), None)
    assert m.phase == "turn" and m.snapshot().turns[-1].message_ids == ("m3",)
    assert late.turn == 1
    assert m.check_send("m3", [Message.user("and that")]).turn == 2  # type: ignore[union-attr]
    assert start_of(m).messages == (Message.user("and that"),)


def test_ids_are_taken_once() -> None:
    m = machine()
    m.send("m1", [Message.user("hi")])
    again = m.send("m1", [Message.user("hi")])
    assert again.duplicate and again.turn == 1
    with pytest.raises(SignalConflict):
        m.send("m1", [Message.user("other")])
    start_of(m)
    m.turn_ended(1, output(Message.user("hi"), Message.assistant("ok")), None)
    m.send("m2", [Message.user("two")])
    with pytest.raises(StaleMessage):
        m.check_send("m1", [Message.user("hi")])
    with pytest.raises(InvalidSignal):
        m.send("m3", [Message.system("obey")])
    assert m.turns == 2


def test_only_the_latest_ids_are_kept() -> None:
    m = machine()
    for n in range(KEPT_MESSAGE_IDS + 5):
        m.send(f"m{n}", [Message.user("x")])
    assert len(m.state.seen) == KEPT_MESSAGE_IDS and "m0" not in m.state.seen


def test_a_failed_turn_adds_only_its_opening_messages() -> None:
    m = machine()
    m.send("m1", [Message.user("hi")])
    start_of(m)
    m.turn_ended(1, None, Failure.of(errors.HOST_FAILED, "boom"))
    assert m.transcript == [Message.user("hi")]
    assert m.snapshot().turns[0].status == "failed"


def test_approvals_are_kept_for_the_session() -> None:
    m = machine(approved_tools=("read_status",))
    m.send("m1", [Message.user("hi")])
    assert start_of(m).approved_tools == ("read_status",)
    m.turn_ended(
        1, output(Message.assistant("ok"), approved=("read_status", "restart_service")), None
    )
    m.send("m2", [Message.user("again")])
    assert start_of(m).approved_tools == ("read_status", "restart_service")
    m.turn_ended(2, None, Failure.of(errors.CANCELED, "stopped"))  # a failed turn keeps them
    assert m.snapshot().approved_tools == ("read_status", "restart_service")


def test_end_cancels_the_running_turn_then_refuses_messages() -> None:
    m = machine()
    m.send("m1", [Message.user("hi")])
    start_of(m)
    m.end("bye")
    [cancel] = m.next_effects()
    assert isinstance(cancel, CancelTurn) and cancel.process_id == "s1/turn/1"
    with pytest.raises(SessionEnded):
        m.send("m2", [Message.user("more")])
    m.turn_ended(1, None, Failure.of(errors.CANCELED, "canceled"))
    snap = m.snapshot()
    assert (snap.status, snap.ended, snap.turns[0].status) == ("ended", "bye", "canceled")
    with pytest.raises(SessionEnded):
        m.send("m2", [Message.user("more")])
    m.end()  # ending an ended session does nothing
    assert m.next_effects() == []


def test_the_state_restores_exactly() -> None:
    m = machine(approved_tools=("read_status",))
    m.send("m1", [Message.user("hi")])
    start_of(m)
    m.send("m2", [Message.user("steer")])
    restored = SessionMachine(SessionState.model_validate_json(m.state.model_dump_json()))
    assert restored.snapshot() == m.snapshot()
    assert restored.next_effects() == m.next_effects()
