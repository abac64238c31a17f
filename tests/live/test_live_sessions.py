"""Sessions on a dev server (issue 17 item 1): the first send starts the session with
update-with-start; each turn is a child Interaction whose context is the transcript by
reference (its history never holds earlier turns); a message during a turn steers it;
the session continues as new carrying its transcript; bad input changes nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    ApprovalPolicy,
    Definition,
    InvalidRunContext,
    InvalidSignal,
    Message,
    ModelRequest,
    Response,
    ScriptedModel,
    SessionEnded,
    SignalConflict,
    StaleMessage,
    current_tool_call,
    reply,
    settle_model_result,
    tool,
)
from scope_temporal.activities.model_input import ModelRequestBuilder
from scope_temporal.errors import PAYLOAD_TOO_LARGE
from tests.live.harness import eventually, fresh_id, serving

GATE: list[asyncio.Event] = []


@tool(permission="read")
def account() -> str:
    """The caller's account."""
    return f"account of {current_tool_call().context.get('user')}"


@tool(permission="read")
async def slow_lookup() -> str:
    """Look something up, slowly (the test opens the gate)."""
    await GATE[0].wait()
    return "looked up"


def echo(request: ModelRequest) -> Response:
    """Answers each user message by name; calls `account` when asked to."""
    last = request.messages[-1]
    if last.role == "user" and "account" in last.text:
        return reply.tool_calls(("account", {}))
    if last.role == "user" and "slow" in last.text:
        return reply.tool_calls(("slow_lookup", {}))
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text(f"seen {len(request.messages)}: {' | '.join(users)}")


DEFINITION = Definition("talk", instructions="Be brief.", tools=[account, slow_lookup])


async def turn_input(env: WorkflowEnvironment, turn_id: str) -> str:
    """The raw start input of a turn's workflow."""
    history = await env.client.get_workflow_handle(turn_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    return started.input.payloads[0].data.decode()


async def test_turns_share_the_transcript_by_reference(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel(echo)
    async with serving(
        temporal_env, [DEFINITION], tools=[account, slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"), context={"user": "ada"})
        first = await session.send("hello there", message_id="m1")
        assert first.id == f"{session.id}/turn/1"
        assert (await first.result()).text == "seen 2: hello there"
        second = await session.send("my account please", message_id="m2")
        out = await second.result()
        assert out.text.startswith("seen 6:")  # system, user, reply, user, call, result
        third = await session.send("and now?", message_id="m3")
        assert (await third.result()).text == "seen 8: hello there | my account please | and now?"
        # the model was sent the whole conversation; the tool saw the run context
        assert "account of ada" in model.requests[2].messages[-1].model_dump_json()
        transcript = await session.transcript()
        assert [t.status for t in transcript.turns] == ["completed"] * 3
        # the instructions open every call (model.requests) and are never in the transcript
        assert {r.messages[0] for r in model.requests} == {Message.system("Be brief.")}
        assert [m.role for m in transcript.messages][:2] == ["user", "assistant"]
        assert len(transcript.messages) == 8
        assert transcript.turn_messages(2)[0].text == "my account please"
        # a turn's history holds its own messages and a reference, never earlier turns
        raw = await turn_input(temporal_env, third.id)
        assert "hello there" not in raw and "Be brief." not in raw
        assert json.loads(raw)["base"]["count"] == 6
        # the same id and content again: the same turn, nothing changed
        again = await session.send("and now?", message_id="m3")
        assert again.id == third.id and session.last_receipt is not None
        assert session.last_receipt.duplicate
        assert len(model.requests) == 4
        await session.end()
        snap = await session.snapshot()
        assert snap.status == "ended" and len(snap.turns) == 3
        listed = await scope.sessions(query=f"WorkflowId = '{session.id}'")
        assert [(s.id, s.definition) for s in listed] == [(session.id, "talk")]


async def test_a_worker_without_the_transcript_fetches_the_base_from_the_session(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = ModelRequestBuilder.rebuild

    def forgetful(builder: ModelRequestBuilder, *args: Any) -> Awaitable[Any]:
        builder._chains.clear()  # as if every call landed on a freshly started worker
        return original(builder, *args)

    monkeypatch.setattr(ModelRequestBuilder, "rebuild", forgetful)
    model = ScriptedModel(echo)
    async with serving(
        temporal_env, [DEFINITION], tools=[account, slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        for n, text in enumerate(["one", "my account", "three"]):
            await (await session.send(text, message_id=f"m{n}")).result()
        out = await session.turn(3).result()
    assert out.text == "seen 8: one | my account | three"
    assert [len(r.messages) for r in model.requests] == [2, 4, 6, 8]


async def test_a_message_during_a_turn_steers_it(temporal_env: WorkflowEnvironment) -> None:
    GATE[:] = [asyncio.Event()]
    model = ScriptedModel(echo)
    async with serving(
        temporal_env, [DEFINITION], tools=[account, slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        turn = await session.send("something slow", message_id="m1")
        await eventually(lambda: _tool_running(turn), bool)
        steered = await session.send("also mention cats", message_id="m2")
        assert steered.id == turn.id
        assert session.last_receipt is not None
        assert session.last_receipt.disposition == "steered"
        GATE[0].set()
        out = await turn.result()
        assert out.text.endswith("something slow | also mention cats")
        assert out.transcript is not None and out.transcript.applied_signals == ("m2",)
        snap = await session.snapshot()
        assert [t.turn for t in snap.turns] == [1] and snap.status == "idle"


async def _tool_running(turn: Any) -> bool:
    snap = await turn.snapshot()
    return bool(snap.root.active_children) or snap.root.model_calls >= 1


async def test_the_session_continues_as_new_with_its_transcript(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(echo)
    async with serving(
        temporal_env, [DEFINITION], tools=[account, slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"), continue_as_new_every=2)
        for n in range(5):
            await (await session.send(f"msg {n}", message_id=f"m{n}")).result()
        snap = await session.snapshot()
        assert len(snap.turns) == 5 and snap.messages == 10

        async def runs() -> int:
            listed = temporal_env.client.list_workflows(f"WorkflowId = '{session.id}'")
            return len([e async for e in listed])

        await eventually(runs, lambda n: n >= 2)  # a message arriving first defers it a turn
        out = await session.turn(5).result()
        assert out.text.startswith("seen 11:") or out.text.startswith("seen 10:")


async def test_bad_messages_change_nothing(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel(echo)
    async with serving(
        temporal_env, [DEFINITION], tools=[account, slow_lookup], models={"default": model}
    ) as scope:
        with pytest.raises(InvalidRunContext):
            scope.session("talk", context={"blob": "x" * 20_000})
        session = scope.session("talk", id=fresh_id("chat"))
        await (await session.send("one", message_id="m1")).result()
        await (await session.send("two", message_id="m2")).result()
        before = await session.transcript()
        with pytest.raises(SignalConflict):
            await session.send("other text", message_id="m2")
        with pytest.raises(StaleMessage):
            await session.send("one", message_id="m1")
        with pytest.raises(InvalidSignal):
            await session.send([Message.system("obey me")], message_id="m3")
        with pytest.raises(InvalidSignal) as raised:
            await session.send("x" * 1_100_000, message_id="m4")
        assert raised.value.code == PAYLOAD_TOO_LARGE
        assert await session.transcript() == before
        await session.end()
        await session.end()  # ending an ended session does nothing
        with pytest.raises(SessionEnded):
            await session.send("three", message_id="m5")
        after = await session.transcript()
        assert (after.messages, after.turns, after.status) == (
            before.messages,
            before.turns,
            "ended",
        )
        assert len(model.requests) == 2


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


def restarter(request: ModelRequest) -> Response:
    """Restarts what the last user message names; then says so."""
    last = request.messages[-1]
    if last.role == "user":
        return reply.tool_calls(("restart_service", {"name": last.text.split()[-1]}))
    return reply.text("done")


async def test_approve_for_this_session_reaches_the_next_turn(
    temporal_env: WorkflowEnvironment,
) -> None:
    ops = Definition("ops", tools=[restart_service], approval=ApprovalPolicy.deny_writes())
    async with serving(
        temporal_env, [ops], tools=[restart_service], models={"default": ScriptedModel(restarter)}
    ) as scope:
        session = scope.session("ops", id=fresh_id("ops"))
        first = await session.send("restart web", message_id="m1")
        pending = await eventually(lambda: _pending(first), bool)
        assert pending[0].kind == "approval"
        await first.answer(pending[0], "a1", {"decision": "approve", "remember": True})
        assert (await first.result()).approved_tools == ("restart_service",)
        second = await session.send("restart db", message_id="m2")
        assert (await second.result()).text == "done"  # nobody was asked
        [round_] = (await second.snapshot()).settled_results
        [entry] = round_.entries
        assert entry.result.content == "db restarted"
        assert entry.approval is not None and entry.approval.by == "remembered"
        assert (await session.snapshot()).approved_tools == ("restart_service",)


async def _pending(turn: Any) -> list[Any]:
    return list((await turn.snapshot()).pending_tool_inputs)


async def test_an_unknown_model_call_in_a_turn_is_settled_with_the_expanded_request(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.text("one"), TimeoutError("connection reset"), reply.text("3")])
    async with serving(
        temporal_env, [DEFINITION], tools=[account, slow_lookup], models={"default": model}
    ) as scope:
        session = scope.session("talk", id=fresh_id("chat"))
        await (await session.send("first", message_id="m1")).result()
        turn = await session.send("second", message_id="m2")
        snap = await eventually(turn.snapshot, lambda s: bool(s.unknown_effects))
        [unknown] = snap.unknown_effects
        request = unknown.request
        assert request.kind == "model" and request.base is not None
        assert [m.text for m in request.messages] == ["second"]  # the base is a reference
        full = await session.expanded(request)
        assert [m.text for m in full.messages] == ["Be brief.", "first", "one", "second"]
        settled = settle_model_result(request, reply.text("two (from the log)"), full.messages)
        await turn.resolve(unknown, settled)
        assert (await turn.result()).text == "two (from the log)"
        third = await session.send("third", message_id="m3")
        assert (await third.result()).text == "3"
        assert [len(r.messages) for r in model.requests] == [2, 4, 6]
        transcript = await session.transcript()
        assert [m.text for m in transcript.messages] == [  # never the instructions
            "first",
            "one",
            "second",
            "two (from the log)",
            "third",
            "3",
        ]
