"""Where a host meets a session (issue 25), in-process: a host's own timeout or
cancellation of a turn's `result()` says nothing of the turn, so the next message still
steers it (defect 3; `SessionHandle` live: tests/live/test_session_seams.py); a
`continue_as_new_every` below 1 is refused where it is given, and in the workflow input
where no history can hold it (defect 6); a steer the turn waiting on an approval would
refuse is refused at `send`, never given a `steered` receipt (defect 4, as the
model-based test found it; live: tests/live/test_live_session_seams.py)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import ConfigurationError, ScopeClient
from scope_temporal.approval import ApprovalPolicy
from scope_temporal.chat import Response
from scope_temporal.client.session import SessionHandle
from scope_temporal.definition import Definition
from scope_temporal.errors import (
    CONFIGURATION_INVALID,
    PAYLOAD_TOO_LARGE,
    PROTOCOL_INVALID,
    InvalidSignal,
    ScopeError,
)
from scope_temporal.models import ModelRequest, ScriptedModel, reply
from scope_temporal.payloads import InteractionInput, SessionInput
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import tool

WAIT = 5.0


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


def restart_then_echo(request: ModelRequest) -> Response:
    if not any(m.role == "tool" for m in request.messages):
        return reply.tool_calls(("restart_service", {"name": "web"}))
    return reply.text(" | ".join(m.text for m in request.messages if m.role == "user"))


def restart_then_count(request: ModelRequest) -> Response:
    if not any(m.role == "tool" for m in request.messages):
        return reply.tool_calls(("restart_service", {"name": "web"}))
    return reply.text(f"{sum(m.role == 'user' for m in request.messages)} user messages")


def runner(
    model: object = restart_then_echo, *, limit: int = 2_000_000, mode: str = "always"
) -> LocalRunner:
    ops = Definition(
        "ops",
        tools=[restart_service],
        approval=ApprovalPolicy.deny_writes(),
        tool_call_workflows=mode,  # type: ignore[arg-type]
    )
    return LocalRunner(
        definitions=[ops],
        tools=[restart_service],
        models={"default": ScriptedModel(model)},  # type: ignore[arg-type]
        payload_limit_bytes=limit,
    )


async def test_seam_03_a_hosts_timeout_on_a_turns_result_leaves_the_next_message_steering_it() -> (
    None
):
    session = runner().session("ops", id="s1")
    turn = await session.send("restart web", message_id="m1")
    [pending] = (await turn.idle()).pending_tool_inputs  # it waits for this user's approval
    with pytest.raises(TimeoutError):
        await turn.result(timeout=0.01)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(turn.result(), 0.01)
    steered = await asyncio.wait_for(session.send("and say so", message_id="m2"), WAIT)
    assert steered.id == turn.id
    await turn.answer(pending, "a1", {"decision": "approve"})
    assert (await turn.result(timeout=WAIT)).text == "restart web | and say so"
    nxt = await asyncio.wait_for(session.send("next", message_id="m3"), WAIT)
    assert nxt.id == "s1/turn/2"  # its real end was seen: the next message opens a turn


@pytest.mark.parametrize("every", [0, -1])
async def test_seam_06_continue_as_new_every_below_one_is_refused_where_it_is_given(
    every: int,
) -> None:
    r = runner()
    with pytest.raises(ConfigurationError) as local:
        r.session("ops", id="s-bad", continue_as_new_every=every)
    assert local.value.code == CONFIGURATION_INVALID
    assert "continue_as_new_every" in local.value.message and str(every) in local.value.message
    scope = ScopeClient.__new__(ScopeClient)  # no server needed: refused before any call
    with pytest.raises(ConfigurationError):
        scope.session("ops", continue_as_new_every=every)
    with pytest.raises(ConfigurationError):
        await scope.start("ops", "hi", continue_as_new_every=every)


@pytest.mark.parametrize("every", [0, -3])
def test_seam_06_an_interaction_input_continuing_as_new_below_one_is_refused(every: int) -> None:
    with pytest.raises(ValidationError, match="continue_as_new_every"):
        InteractionInput(definition="ops", continue_as_new_every=every)
    with pytest.raises(ValidationError, match="continue_as_new_every"):
        InteractionInput.model_validate_json(
            f'{{"definition": "ops", "continue_as_new_every": {every}}}'
        )
    assert InteractionInput(definition="ops", continue_as_new_every=1).continue_as_new_every == 1
    assert InteractionInput(definition="ops").continue_as_new_every is None


def test_seam_06_a_session_input_an_older_client_sent_still_decodes() -> None:
    # older clients sent 0 for sessions, which ran as 1 (continue as new after each
    # turn): their histories must still decode
    old = SessionInput.model_validate_json('{"definition": "ops", "continue_as_new_every": 0}')
    assert old.continue_as_new_every == 0


@pytest.mark.parametrize("mode", ["always", "on_demand"])
async def test_seam_04_a_steer_the_turn_waiting_on_an_approval_would_refuse_is_refused_at_send(
    mode: str,
) -> None:
    # the model-based test's sequence: the 11,800 B message opens turn 1, whose model
    # call asks for a covered tool; a 3,000 B message then fit the next turn's opening
    # (the session's old check) but not the turn's own (15,5xx B): `steered`, then refused
    session = runner(restart_then_count, limit=14_000, mode=mode).session(
        "ops", id="s1", continue_as_new_every=1
    )
    turn = await session.send("x" * 11_800, message_id="m1")
    [pending] = (await turn.idle()).pending_tool_inputs  # it waits on the approval
    before = await session.snapshot()
    with pytest.raises(InvalidSignal) as refused:
        await asyncio.wait_for(session.send("y" * 3_000, message_id="m2"), WAIT)
    assert refused.value.code == PAYLOAD_TOO_LARGE and "refused the message" in str(refused.value)
    # a repeat of the send while the turn has not answered waits for the same answer
    both = await asyncio.wait_for(
        asyncio.gather(
            session.send("y" * 3_000, message_id="m2"),
            session.send("y" * 3_000, message_id="m2"),
            return_exceptions=True,
        ),
        WAIT,
    )
    assert [getattr(e, "code", e) for e in both] == [PAYLOAD_TOO_LARGE] * 2
    assert session.last_receipt is not None and session.last_receipt.disposition == "started"
    assert await session.snapshot() == before  # nothing changed: not queued, not seen
    assert turn.snapshot().rejected_signals == []  # the send's refusal says it all
    # the id is free again; a message the turn takes is `steered` and applied by it
    await asyncio.wait_for(session.send("and say so", message_id="m2"), WAIT)
    assert session.last_receipt is not None and session.last_receipt.disposition == "steered"
    await turn.answer(pending, "a1", {"decision": "approve"})
    assert (await turn.result(timeout=WAIT)).text == "2 user messages"
    snap = await session.idle()
    assert [t.status for t in snap.turns] == ["completed"]
    assert (snap.queued, snap.unanswered) == ((), ())
    # continued as new after the turn (every=1), the session goes on from its transcript
    nxt = await asyncio.wait_for(session.send("next", message_id="m3"), WAIT)
    assert (await nxt.result(timeout=WAIT)).text == "3 user messages"


async def test_a_session_snapshot_no_worker_answered_in_time_is_a_typed_scope_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A query no worker answered (the server's or the client's timeout) reaches the host
    as a `ScopeError` saying what to check, never as temporalio's own `RPCError`."""

    class Unanswered:
        async def query(self, *args: object, **kwargs: object) -> object:
            raise RPCError("query timed out before a worker could process it",
                           RPCStatusCode.DEADLINE_EXCEEDED, b"")  # fmt: skip

    handle = SessionHandle(scope=None, id="chat-1")  # type: ignore[arg-type]
    monkeypatch.setattr(handle, "_workflow", lambda: Unanswered())
    with pytest.raises(ScopeError) as raised:
        await handle.snapshot()
    assert raised.value.code == PROTOCOL_INVALID
    assert "could not be queried" in str(raised.value) and "Is a worker" in str(raised.value)
