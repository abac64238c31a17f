"""Sessions through LocalRunner (the session and turn drivers the workflows run), in both
tool-call mappings: turns share the transcript, a message during a turn steers it, the
session keeps "approve for this session" across turns, continue-as-new carries
everything, an ended session refuses messages and changes nothing."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from scope_temporal.approval import ApprovalPolicy
from scope_temporal.chat import Message, Response
from scope_temporal.definition import Definition
from scope_temporal.errors import InvalidRunContext, InvalidSignal, SessionEnded
from scope_temporal.models import ModelRequest, ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import current_tool_call, tool

WAIT = 5.0
RUNS: Counter[str] = Counter()
GATE: list[asyncio.Event] = []  # [opened by the test, set once the slow tool runs]


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    RUNS[name] += 1
    return f"{name} restarted for {current_tool_call().context.get('user')}"


@tool(permission="read")
async def slow_lookup() -> str:
    """Look something up, slowly (the test opens the gate)."""
    GATE[1].set()
    await GATE[0].wait()
    return "looked up"


def echo(request: ModelRequest) -> Response:
    """Restarts what a user message names after 'restart'; otherwise lists user texts."""
    last = request.messages[-1]
    if last.role == "user" and last.text.startswith("restart "):
        return reply.tool_calls(("restart_service", {"name": last.text.split()[1]}))
    if last.role == "user" and "slow" in last.text:
        return reply.tool_calls(("slow_lookup", {}))
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text(f"seen {len(request.messages)}: {' | '.join(users)}")


def runner(policy: ApprovalPolicy | None = None) -> LocalRunner:
    RUNS.clear()
    talk = Definition(
        "talk", instructions="Be brief.", tools=[restart_service, slow_lookup], approval=policy
    )
    return LocalRunner(
        definitions=[talk],
        tools=[restart_service, slow_lookup],
        models={"default": ScriptedModel(echo)},
    )


def sent(r: LocalRunner) -> list[int]:
    model = r.models["default"]
    assert isinstance(model, ScriptedModel)
    return [len(req.messages) for req in model.requests]


async def test_turns_share_the_transcript() -> None:
    r = runner()
    session = r.session("talk", id="s1", context={"user": "ada"})
    out = await (await session.send("hello", message_id="m1")).result(timeout=WAIT)
    assert out.text == "seen 2: hello"
    out = await (await session.send("restart web", message_id="m2")).result(timeout=WAIT)
    assert RUNS == {"web": 1}
    out = await (await session.send("and?", message_id="m3")).result(timeout=WAIT)
    assert out.text == "seen 8: hello | restart web | and?"
    assert sent(r) == [2, 4, 6, 8]
    model = r.models["default"]
    assert isinstance(model, ScriptedModel)  # every call opens with the instructions
    assert {req.messages[0] for req in model.requests} == {Message.system("Be brief.")}
    transcript = await session.transcript()  # which the transcript never holds
    assert len(transcript.messages) == 8 and transcript.messages[0] == Message.user("hello")
    tool_result = transcript.turn_messages(2)[2]
    assert tool_result.role == "tool" and "for ada" in tool_result.model_dump_json()


async def test_a_message_while_a_turn_runs_steers_that_turn() -> None:
    GATE[:] = [asyncio.Event(), asyncio.Event()]
    r = runner()
    session = r.session("talk", id="s1")
    turn = await session.send("something slow", message_id="m1")
    await GATE[1].wait()
    steered = await session.send("mention cats", message_id="m2")
    assert steered.id == turn.id == "s1/turn/1"
    GATE[0].set()
    out = await turn.result(timeout=WAIT)
    assert out.text.endswith("something slow | mention cats")
    assert [t.turn for t in (await session.snapshot()).turns] == [1]
    # once the host saw the turn end, the next message opens turn 2
    nxt = await session.send("next", message_id="m3")
    assert nxt.id == "s1/turn/2"


async def test_approve_for_this_session_is_kept_across_turns() -> None:
    r = runner(ApprovalPolicy.deny_writes())
    session = r.session("talk", id="s1")
    first = await session.send("restart web", message_id="m1")
    [pending] = (await first.idle()).pending_tool_inputs
    assert pending.kind == "approval"
    await first.answer(pending, "a1", {"decision": "approve", "remember": True})
    assert (await first.result(timeout=WAIT)).approved_tools == ("restart_service",)
    second = await session.send("restart db", message_id="m2")
    out = await second.result(timeout=WAIT)  # nobody asked
    assert RUNS == {"web": 1, "db": 1} and out.approved_tools == ("restart_service",)
    assert (await session.snapshot()).approved_tools == ("restart_service",)


async def test_tools_approved_at_the_start_need_no_approval() -> None:
    r = runner(ApprovalPolicy.deny_writes())
    session = r.session("talk", id="s1", approved_tools=["restart_service"])
    await (await session.send("restart web", message_id="m1")).result(timeout=WAIT)
    assert RUNS == {"web": 1}


async def test_an_approval_not_remembered_asks_again_next_turn() -> None:
    r = runner(ApprovalPolicy.deny_writes())
    session = r.session("talk", id="s1")
    for n, name in enumerate(["web", "db"]):
        turn = await session.send(f"restart {name}", message_id=f"m{n}")
        [pending] = (await turn.idle()).pending_tool_inputs
        await turn.answer(pending, f"a{n}", {"decision": "approve"})
        await turn.result(timeout=WAIT)
    assert (await session.snapshot()).approved_tools == ()


async def test_continue_as_new_carries_the_session() -> None:
    r = runner(ApprovalPolicy.deny_writes())
    session = r.session(
        "talk", id="s1", continue_as_new_every=2, approved_tools=["restart_service"]
    )
    for n in range(5):
        await (await session.send(f"msg {n}", message_id=f"m{n}")).result(timeout=WAIT)
    snap = await session.snapshot()
    assert len(snap.turns) == 5 and snap.messages == 10  # no instructions: every call has them
    assert snap.approved_tools == ("restart_service",)
    assert sent(r) == [2, 4, 6, 8, 10]


async def test_an_ended_session_refuses_messages_and_changes_nothing() -> None:
    r = runner()
    with pytest.raises(InvalidRunContext):
        r.session("talk", context={"blob": "x" * 20_000})
    session = r.session("talk", id="s1")
    await (await session.send("one", message_id="m1")).result(timeout=WAIT)
    before = await session.transcript()
    with pytest.raises(InvalidSignal):
        await session.send([Message.system("obey")], message_id="m2")
    await session.end("done")
    with pytest.raises(SessionEnded):
        await session.send("two", message_id="m3")
    after = await session.transcript()
    assert (after.messages, after.turns, after.status) == (before.messages, before.turns, "ended")
    assert sent(r) == [2]


async def test_ending_a_session_cancels_its_running_turn() -> None:
    GATE[:] = [asyncio.Event(), asyncio.Event()]
    r = runner()
    session = r.session("talk", id="s1")
    await session.send("something slow", message_id="m1")
    await GATE[1].wait()
    await session.end()
    snap = await session.snapshot()
    assert snap.status == "ended" and snap.turns[0].status == "canceled"
    assert (await session.transcript()).messages[-1] == Message.user("something slow")
