"""Sessions where their rules meet (issue 25, defects 1, 2, 4, 5, 13, 14, 15), in-process on
the drivers the workflows run (`LocalRunner`) and on the pure machines: every model call
opens with the instructions, `send` and `end` in one step both return, a message is
refused at `send` when its turn (or the next one) could not carry it, a handle holding
another identity is refused, and `end` keeps the steers a cancelled turn was given."""

from __future__ import annotations

import asyncio

import pytest

from scope_temporal import errors
from scope_temporal.chat import Message, Response
from scope_temporal.context_refs import BaseRef, prefix_digest
from scope_temporal.definition import Definition
from scope_temporal.driver.interaction import InteractionDriver
from scope_temporal.errors import InvalidSignal, SessionEnded
from scope_temporal.interaction import rules
from scope_temporal.interaction.session import SessionMachine
from scope_temporal.interaction.session_values import SessionState, StartTurn
from scope_temporal.models import ModelRejected, ModelRequest, ScriptedModel, reply
from scope_temporal.outputs import Failure, Output, TurnTranscript
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import tool

WAIT = 5.0
GATE: list[asyncio.Event] = []  # [opened by the test, set once the slow tool runs]
REQUESTS: list[ModelRequest] = []


@tool(permission="read")
async def slow_lookup() -> str:
    """Look something up, slowly (the test opens the gate)."""
    GATE[1].set()
    await GATE[0].wait()
    return "looked up"


def short(request: ModelRequest) -> Response:
    """Calls `slow_lookup` for a user message saying 'slow', fails the first request of a
    conversation saying 'reject'; otherwise a short reply."""
    REQUESTS.append(request)
    last = request.messages[-1]
    if last.role == "user" and last.text == "reject":
        raise ModelRejected("400: bad request", status=400)
    if last.role == "user" and "slow" in last.text:
        return reply.tool_calls(("slow_lookup", {}))
    return reply.text(f"{len(request.messages)} messages")


def runner(
    instructions: str = "Be brief.", *, limit: int = 2_000_000, mode: str = "always"
) -> LocalRunner:
    GATE[:] = [asyncio.Event(), asyncio.Event()]
    REQUESTS.clear()
    talk = Definition(
        "talk",
        instructions=instructions,
        tools=[slow_lookup],
        tool_call_workflows=mode,  # type: ignore[arg-type]
    )
    return LocalRunner(
        definitions=[talk],
        tools=[slow_lookup],
        models={"default": ScriptedModel(short)},
        payload_limit_bytes=limit,
    )


def too_large(error: pytest.ExceptionInfo[InvalidSignal]) -> bool:
    return error.value.code == errors.PAYLOAD_TOO_LARGE


# --- 1: the instructions open every model call ------------------------------------------


async def test_seam_01_every_turn_after_a_failed_first_turn_opens_with_the_instructions() -> None:
    r = runner()
    session = r.session("talk", id="s1")
    with pytest.raises(errors.InteractionFailed) as failed:
        await (await session.send("reject", message_id="m1")).result(timeout=WAIT)
    assert failed.value.code == errors.MODEL_REJECTED
    await (await session.send("what is the admin password?", message_id="m2")).result(timeout=WAIT)
    await (await session.send("and now?", message_id="m3")).result(timeout=WAIT)
    assert [req.messages[0] for req in REQUESTS] == [Message.system("Be brief.")] * 3
    assert REQUESTS[1].messages[1:] == (
        Message.user("reject"),
        Message.user("what is the admin password?"),
    )
    transcript = await session.transcript()  # the instructions are never in it
    assert all(m.role != "system" for m in transcript.messages)


def test_seam_01_a_turn_sends_the_instructions_before_its_base() -> None:
    talk = Definition("talk", instructions="Be brief.")
    base = BaseRef(workflow_id="s1", count=1, digest=prefix_digest([Message.user("hi")]))
    state = rules.initial_state(
        talk, "s1/turn/2", [Message.user("again")], None, None, base=base, instructions_first=True
    )
    assert state.context == [Message.user("again")] and state.instructions == "Be brief."
    # a turn of an older session (no flag) with a base keeps the old rule: none here
    old = rules.initial_state(talk, "s1/turn/2", [Message.user("again")], None, None, base=base)
    assert old.context == [Message.user("again")] and old.instructions is None


def test_seam_01_a_transcript_that_opens_with_instructions_keeps_them() -> None:
    fresh = SessionMachine.start("s1", "talk")
    fresh.send("m1", [Message.user("hi")])
    [start] = fresh.next_effects()
    assert isinstance(start, StartTurn) and start.instructions_first
    # a session from before the rule: its transcript opens with the system message
    legacy = SessionMachine(
        SessionState(
            session_id="s1",
            definition="talk",
            transcript=[Message.system("Old."), Message.user("hi"), Message.assistant("yo")],
        )
    )
    legacy.send("m2", [Message.user("again")])
    [start] = legacy.next_effects()
    assert isinstance(start, StartTurn) and not start.instructions_first


# --- 2: send and end in one step --------------------------------------------------------


def test_seam_02_an_end_before_the_turn_starts_withdraws_it() -> None:
    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    m.end("bye")
    assert m.next_effects() == [] and m.phase == "ended" and m.turns == 0
    with pytest.raises(SessionEnded):  # the id was not taken: nothing answers it
        m.check_send("m1", [Message.user("hi")])


async def test_seam_02_send_and_end_in_one_step_both_return() -> None:
    r = runner()
    session = r.session("talk", id="s1")
    sent, ended = await asyncio.wait_for(
        asyncio.gather(session.send("hi", message_id="m1"), session.end(), return_exceptions=True),
        WAIT,
    )
    assert isinstance(sent, SessionEnded) and ended is None
    snap = await session.snapshot()
    assert (snap.status, snap.turns, snap.messages) == ("ended", (), 0)
    assert REQUESTS == []


async def test_seam_02_a_turn_cancelled_before_its_task_ran_ends_cancelled() -> None:
    r = runner()
    driver = r.session("talk", id="s1").shared.driver
    driver.machine.send("m1", [Message.user("hi")])
    [start] = driver.machine.next_effects()
    driver._carry_out(start)  # its task is spawned and has not run yet
    driver.machine.end()
    [cancel] = driver.machine.next_effects()
    driver._carry_out(cancel)
    snap = driver.snapshot()
    assert snap.status == "ended" and snap.turns[0].status == "canceled"
    await asyncio.sleep(0)  # the cancelled task reports nothing more
    assert driver.snapshot() == snap


# --- 4 and 13: a message is refused at send when its turn could not carry it ----------


async def test_seam_04_steers_a_next_turn_could_not_open_with_are_refused_at_send() -> None:
    r = runner(limit=20_000)
    session = r.session("talk", id="s1")
    turn = await session.send("something slow", message_id="m0")
    await GATE[1].wait()
    steered, refused = [], []
    for n in range(1, 11):
        try:
            await session.send("x" * 6_000, message_id=f"m{n}")
            steered.append(n)
        except InvalidSignal as error:
            assert error.code == errors.PAYLOAD_TOO_LARGE
            refused.append(n)
    assert steered == [1, 2, 3] and refused == list(range(4, 11))
    assert session.last_receipt is not None and session.last_receipt.disposition == "steered"
    GATE[0].set()
    out = await turn.result(timeout=WAIT)
    assert out.text == "7 messages"  # instructions, message, call, result, three steers
    snap = await session.idle()
    assert [t.status for t in snap.turns] == ["completed"] and snap.messages == 7


async def test_seam_13_a_message_just_under_the_limit_is_refused_at_send() -> None:
    r = runner(limit=12_000)
    session = r.session("talk", id="s1")
    with pytest.raises(InvalidSignal) as error:
        await session.send("y" * 11_700, message_id="m1")
    assert too_large(error) and "first model call of turn 1" in str(error.value)
    snap = await session.snapshot()
    assert (snap.status, snap.turns, snap.messages) == ("idle", (), 0)
    assert REQUESTS == []


async def test_seam_13_long_instructions_never_crowd_out_a_message() -> None:
    r = runner(instructions="I" * 6_000, limit=12_000)
    session = r.session("talk", id="s1")
    for n in range(2):  # the worker takes the instructions from the Definition
        out = await (await session.send("y" * 6_000, message_id=f"m{n}")).result(timeout=WAIT)
        assert out.text == f"{2 + 2 * n} messages"
    assert all(req.messages[0] == Message.system("I" * 6_000) for req in REQUESTS)


# --- 14: a steer the next model call could not carry is refused -------------------------


@pytest.mark.parametrize("mode", ["always", "on_demand"])
async def test_seam_14_a_steer_the_next_model_call_could_not_carry_is_refused(mode: str) -> None:
    r = runner(limit=12_000, mode=mode)
    run = await r.start("talk", "something slow")
    await GATE[1].wait()
    assert await run.steer("s1", Message.user("a" * 5_800))
    with pytest.raises(InvalidSignal) as error:
        await run.steer("s2", Message.user("b" * 5_800))
    assert too_large(error)
    GATE[0].set()
    out = await run.result(timeout=WAIT)
    assert out.text == "5 messages"  # instructions, message, call, result, steer s1


# --- 5: a handle holding another identity ----------------------------------------------


async def test_seam_05_a_second_handle_with_another_context_is_refused() -> None:
    r = runner()
    ada = r.session("talk", id="s1", context={"user": "ada"})
    await (await ada.send("hi", message_id="m1")).result(timeout=WAIT)
    bob = r.session("talk", id="s1", context={"user": "bob"})
    assert bob is not ada and bob.last_receipt is None
    before = await ada.snapshot()
    with pytest.raises(InvalidSignal) as error:
        await bob.send("I am ada", message_id="m2")
    assert error.value.code == errors.SESSION_MISMATCH
    with pytest.raises(InvalidSignal):  # approved tools are part of what a session holds
        await r.session("talk", id="s1", context={"user": "ada"}, approved_tools=["x"]).send(
            "approve all", message_id="m3"
        )
    assert await ada.snapshot() == before
    again = r.session("talk", id="s1", context={"user": "ada"})  # the same identity: taken
    await (await again.send("hello again", message_id="m4")).result(timeout=WAIT)
    assert again.last_receipt is not None and again.last_receipt.turn == 2


def test_seam_05_a_session_from_before_or_an_old_client_is_not_checked() -> None:
    m = SessionMachine.start("s1", "talk", {"user": "ada"})
    assert m.check_send("m1", [Message.user("hi")], None) is None  # an old client
    legacy = SessionMachine(SessionState(session_id="s1", definition="talk"))
    assert legacy.check_send("m1", [Message.user("hi")], "another digest") is None


# --- 15: end keeps what the session took -------------------------------------------------


async def test_seam_15_end_keeps_a_cancelled_turns_steers_in_the_transcript() -> None:
    r = runner()
    session = r.session("talk", id="s1")
    await session.send("something slow", message_id="m1")
    await GATE[1].wait()
    await session.send("mention cats", message_id="m2")
    await session.end()
    snap = await session.snapshot()
    assert snap.status == "ended" and snap.turns[0].status == "canceled"
    assert snap.queued == () and snap.unanswered == ("m2",)
    transcript = await session.transcript()
    assert transcript.messages == (Message.user("something slow"), Message.user("mention cats"))


def test_seam_15_an_ended_session_lists_no_message_for_a_next_turn() -> None:
    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    m.next_effects()
    m.send("m2", [Message.user("also")])
    m.next_effects()
    m.end()
    m.next_effects()
    done = Output(
        source="model_response",
        model_response=Response(message=Message.assistant("ok"), finish_reason="stop"),
        model_calls=1,
        transcript=TurnTranscript(messages=(Message.user("hi"), Message.assistant("ok"))),
    )
    m.turn_ended(1, done, None)  # it gave its reply before taking m2 in
    snap = m.snapshot()
    assert (snap.status, snap.queued, snap.unanswered) == ("ended", (), ("m2",))
    assert m.transcript[-1] == Message.user("also")


def test_a_failed_turn_of_a_session_going_on_passes_its_steers_to_the_next() -> None:
    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    m.next_effects()
    m.send("m2", [Message.user("also")])
    m.next_effects()
    m.turn_ended(1, None, Failure.of(errors.MODEL_REJECTED, "400"))
    assert m.phase == "turn" and m.snapshot().turns[-1].message_ids == ("m2",)


def test_seam_02_an_end_before_a_next_turn_starts_keeps_what_it_would_open_with() -> None:
    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    m.next_effects()
    m.send("m2", [Message.user("also")])
    m.next_effects()
    done = Output(
        source="model_response",
        model_response=Response(message=Message.assistant("ok"), finish_reason="stop"),
        model_calls=1,
        transcript=TurnTranscript(messages=(Message.user("hi"), Message.assistant("ok"))),
    )
    m.turn_ended(1, done, None)  # m2 missed: it opens turn 2, not started yet
    m.end()
    snap = m.snapshot()
    assert (snap.status, len(snap.turns), snap.unanswered) == ("ended", 1, ("m2",))
    assert m.transcript[-1] == Message.user("also")


# --- 2: end before the first message ----------------------------------------------------


async def test_seam_02_end_before_any_message_ends_the_session_for_good() -> None:
    r = runner()
    session = r.session("talk", id="s1")
    await asyncio.wait_for(session.end(), WAIT)
    for handle in (session, r.session("talk", id="s1")):  # any handle on the id
        with pytest.raises(SessionEnded):
            await asyncio.wait_for(handle.send("hi", message_id="m1"), WAIT)
    snap = await session.snapshot()
    assert (snap.status, snap.turns, snap.messages) == ("ended", (), 0)
    await asyncio.wait_for(session.end(), WAIT)  # ending it again does nothing
    assert REQUESTS == []


@pytest.mark.parametrize("end_first", [True, False])
async def test_seam_02_a_send_racing_the_first_end_is_refused_or_cancelled(end_first: bool) -> None:
    r = runner()
    session = r.session("talk", id="s1")
    calls = [session.end(), r.session("talk", id="s1").send("hi", message_id="m1")]
    results = await asyncio.wait_for(
        asyncio.gather(*(calls if end_first else calls[::-1]), return_exceptions=True), WAIT
    )
    ended, sent = results if end_first else results[::-1]
    assert ended is None
    snap = await session.snapshot()
    assert snap.status == "ended"
    if isinstance(sent, BaseException):
        assert isinstance(sent, SessionEnded) and snap.turns == ()
    else:
        assert [t.status for t in snap.turns] == ["canceled"]
    with pytest.raises(SessionEnded):
        await session.send("still there?", message_id="m2")


def test_seam_04_a_steer_its_turn_refused_is_withdrawn_and_its_id_free() -> None:
    def done(turn: int) -> Output:
        said = Message.user("hi" if turn == 1 else "again")
        return Output(
            source="model_response",
            model_response=Response(message=Message.assistant("ok"), finish_reason="stop"),
            model_calls=1,
            transcript=TurnTranscript(messages=(said, Message.assistant("ok"))),
        )

    m = SessionMachine.start("s1", "talk")
    m.send("m1", [Message.user("hi")])
    m.next_effects()
    m.send("m2", [Message.user("also")])
    m.next_effects()  # passed to turn 1, which refuses it
    assert m.steering("m2") and m.refuse_steer("m2")
    assert not m.steering("m2") and m.check_send("m2", [Message.user("other")]) is None
    m.turn_ended(1, done(1), None)
    assert (m.phase, m.snapshot().queued, m.snapshot().unanswered) == ("idle", (), ())
    # a turn that ended before it answered passed the steer on: nothing to withdraw
    m.send("m3", [Message.user("again")])
    m.next_effects()
    m.send("m4", [Message.user("and this")])
    m.next_effects()
    m.turn_ended(2, done(2), None)
    assert not m.steering("m4") and not m.refuse_steer("m4")
    receipt = m.receipt_of("m4")
    assert receipt is not None and (receipt.turn, receipt.disposition) == (3, "started")


async def test_seam_02_a_steer_waiting_for_its_turns_answer_returns_when_end_cancels_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a turn that never answers (as one on a worker from before answers): `end` still wins
    monkeypatch.setattr(InteractionDriver, "steer_signal", lambda self, input: None)
    r = runner()
    session = r.session("talk", id="s1")
    await session.send("something slow", message_id="m1")
    await GATE[1].wait()
    steer = asyncio.ensure_future(session.send("mention cats", message_id="m2"))
    await asyncio.sleep(0.05)
    assert not steer.done()  # it waits for the turn's answer
    await asyncio.wait_for(session.end(), WAIT)
    turn = await asyncio.wait_for(steer, WAIT)
    assert turn.id == "s1/turn/1" and session.last_receipt is not None
    snap = await session.snapshot()
    assert (snap.status, snap.turns[0].status, snap.unanswered) == ("ended", "canceled", ("m2",))
