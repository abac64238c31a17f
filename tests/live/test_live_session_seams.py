"""Sessions where their rules meet, on a dev server (issue 25, defects 1, 2, 4, 5, 13, 14),
in both tool-call mappings: every model call of every turn opens with the Definition's
instructions, `send` and `end` together both return, a handle holding another identity
is refused, a message (or a steer) the model call carrying it could not send is
refused when it is sent (a steer by the running turn's own check: never `steered`,
then refused), and `end` before any message ends the session for good."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    ApprovalPolicy,
    Definition,
    InteractionFailed,
    InvalidSignal,
    Message,
    ModelRequest,
    Response,
    ScriptedModel,
    SessionEnded,
    reply,
    tool,
)
from scope_temporal.errors import MODEL_REJECTED, PAYLOAD_TOO_LARGE, SESSION_MISMATCH
from scope_temporal.models import ModelRejected
from tests.live.harness import eventually, fresh_id, serving
from tests.live.test_live_sessions import turn_input

GATE: list[asyncio.Event] = []  # [opened by the test, set once the slow tool runs]


@tool(permission="read")
async def slow_lookup() -> str:
    """Look something up, slowly (the test opens the gate)."""
    GATE[1].set()
    await GATE[0].wait()
    return "looked up"


def rejecting(request: ModelRequest) -> Response:
    """Refuses a conversation whose last message is 'reject', calls `slow_lookup` for
    'something slow'; otherwise counts."""
    last = request.messages[-1]
    if last.text == "reject":
        raise ModelRejected("400: bad request", status=400)
    if last.role == "user" and last.text == "something slow":
        return reply.tool_calls(("slow_lookup", {}))
    return reply.text(f"{len(request.messages)} messages")


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


def restart_then_count(request: ModelRequest) -> Response:
    """A covered call (it waits for approval), then a count of the user messages."""
    if not any(m.role == "tool" for m in request.messages):
        return reply.tool_calls(("restart_service", {"name": "web"}))
    return reply.text(f"{sum(m.role == 'user' for m in request.messages)} user messages")


TALK = Definition("talk", instructions="Be brief.", tools=[slow_lookup])
OPS = Definition(
    "ops", instructions="Be brief.", tools=[restart_service], approval=ApprovalPolicy.deny_writes()
)
TOOLS = [slow_lookup]


async def test_seam_01_live_every_turn_after_a_failed_first_turn_has_the_instructions(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(rejecting)
    async with serving(
        temporal_env, [TALK], tools=[slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        with pytest.raises(InteractionFailed) as failed:
            await (await session.send("reject", message_id="m1")).result()
        assert failed.value.code == MODEL_REJECTED
        second = await session.send("what is the admin password?", message_id="m2")
        assert (await second.result()).text == "3 messages"
        assert [r.messages[0] for r in model.requests] == [Message.system("Be brief.")] * 2
        # the worker takes them from the Definition: no turn's history holds them
        assert "Be brief." not in await turn_input(temporal_env, second.id)
        await session.end()


async def test_seam_02_live_send_and_end_together_both_return(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(rejecting)
    async with serving(
        temporal_env, [TALK], tools=[slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        await (await session.send("hi", message_id="m1")).result()
        sent, ended = await asyncio.wait_for(
            asyncio.gather(
                session.send("one more", message_id="m2"), session.end(), return_exceptions=True
            ),
            30,
        )
        assert ended is None
        assert isinstance(sent, SessionEnded) or sent.id == f"{session.id}/turn/2"
        snap = await session.snapshot()
        assert snap.status == "ended" and snap.current is None
        with pytest.raises(SessionEnded):
            await session.send("still there?", message_id="m3")


async def test_seam_05_live_a_handle_with_another_context_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(rejecting)
    async with serving(
        temporal_env, [TALK], tools=[slow_lookup], models={"default": model}
    ) as scope:
        id = fresh_id("chat")
        ada = scope.session("talk", id=id, context={"user": "ada"})
        await (await ada.send("hi", message_id="m1")).result()
        before = await ada.snapshot()
        bob = scope.session("talk", id=id, context={"user": "bob"})
        with pytest.raises(InvalidSignal) as refused:
            await bob.send("I am ada", message_id="m2")
        assert refused.value.code == SESSION_MISMATCH
        assert await ada.snapshot() == before
        same = scope.session("talk", id=id, context={"user": "ada"})
        assert (await (await same.send("again", message_id="m3")).result()).text == "4 messages"
        await ada.end()


async def test_seam_13_live_a_message_its_turn_could_not_send_is_refused_at_send(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(rejecting)
    long = Definition("talk", instructions="I" * 6_000)
    async with serving(
        temporal_env, [long], models={"default": model}, payload_limit_bytes=12_000
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        out = await (await session.send("y" * 6_000, message_id="m1")).result()
        assert out.text == "2 messages"  # the instructions never crowd out a message
        before = await session.snapshot()
        with pytest.raises(InvalidSignal) as refused:
            await session.send("y" * 11_600, message_id="m2")
        assert refused.value.code == PAYLOAD_TOO_LARGE
        assert await session.snapshot() == before
        await session.end()


async def test_seam_04_live_steers_a_next_turn_could_not_open_with_are_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    GATE[:] = [asyncio.Event(), asyncio.Event()]
    model = ScriptedModel(rejecting)
    async with serving(
        temporal_env,
        [TALK],
        tools=[slow_lookup],
        models={"default": model},
        payload_limit_bytes=20_000,
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        turn = await session.send("something slow", message_id="m0")
        await asyncio.wait_for(GATE[1].wait(), 10)
        refused = []
        for n in range(1, 6):
            try:
                await session.send("x" * 6_000, message_id=f"m{n}")
            except InvalidSignal as error:
                assert error.code == PAYLOAD_TOO_LARGE
                refused.append(n)
        assert refused == [4, 5]
        GATE[0].set()
        assert (await turn.result()).text == "7 messages"
        snap = await session.snapshot()
        assert [t.status for t in snap.turns] == ["completed"] and snap.queued == ()
        await session.end()


async def test_seam_14_live_a_steer_the_next_model_call_could_not_carry_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    GATE[:] = [asyncio.Event(), asyncio.Event()]
    model = ScriptedModel(rejecting)
    async with serving(
        temporal_env,
        [TALK],
        tools=[slow_lookup],
        models={"default": model},
        payload_limit_bytes=12_000,
    ) as scope:
        run = await scope.start("talk", "something slow", id=fresh_id("steer"))
        await asyncio.wait_for(GATE[1].wait(), 10)
        assert await run.steer("s1", "a" * 5_800)
        with pytest.raises(InvalidSignal) as refused:
            await run.steer("s2", "b" * 5_800)
        assert refused.value.code == PAYLOAD_TOO_LARGE
        GATE[0].set()
        assert (await run.result()).text == "5 messages"


async def test_seam_04_live_a_steer_the_turn_waiting_on_an_approval_would_refuse_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The model-based test's sequence: the turn's own check is the one that decides."""
    model = ScriptedModel(restart_then_count)
    async with serving(
        temporal_env,
        [OPS],
        tools=[restart_service],
        models={"default": model},
        payload_limit_bytes=14_000,
    ) as scope:
        session = scope.session("ops", id=fresh_id("chat"), continue_as_new_every=1)
        turn = await session.send("x" * 11_800, message_id="m1")
        snap = await eventually(turn.snapshot, lambda s: bool(s.pending_tool_inputs))
        before = await session.snapshot()
        with pytest.raises(InvalidSignal) as refused:
            await asyncio.wait_for(session.send("y" * 3_000, message_id="m2"), 30)
        assert refused.value.code == PAYLOAD_TOO_LARGE
        assert session.last_receipt is not None and session.last_receipt.disposition == "started"
        assert await session.snapshot() == before
        assert (await turn.snapshot()).rejected_signals == []
        await asyncio.wait_for(session.send("and say so", message_id="m2"), 30)
        assert session.last_receipt is not None and session.last_receipt.disposition == "steered"
        [pending] = snap.pending_tool_inputs
        await turn.answer(pending, "a1", {"decision": "approve"})
        assert (await asyncio.wait_for(turn.result(), 30)).text == "2 user messages"
        done = await session.snapshot()
        assert [t.status for t in done.turns] == ["completed"]
        assert (done.queued, done.unanswered) == ((), ())
        await session.end()
