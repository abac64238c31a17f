"""CONFORMANCE 33-37: steer signals, through LocalRunner and on the pure machine.

A function model awaiting an `asyncio.Event` holds a model call open so a steer can
arrive in the middle of it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scope_temporal.chat import Message, Response, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.errors import InvalidSignal, ScopeError, SignalConflict
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ModelRequest, ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import Succeeded, require_tool_input, tool, tool_input_continuation

WAIT = 2.0


def shape(messages: tuple[Message, ...]) -> list[tuple[str, str]]:
    """(role, text-or-summary) of each message."""
    out = []
    for m in messages:
        if m.role == "tool":
            out.append(("tool", ",".join(r.content for r in m.tool_results)))
        elif m.tool_calls:
            out.append((m.role, ",".join(c.name for c in m.tool_calls)))
        else:
            out.append((m.role, m.text))
    return out


class HeldModel:
    """A function model whose first call waits until released."""

    def __init__(self, *responses: Response) -> None:
        self.responses = list(responses)
        self.in_call = asyncio.Event()
        self.release = asyncio.Event()
        self.model = ScriptedModel(self.respond)

    async def respond(self, request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            self.in_call.set()
            await self.release.wait()
        return self.responses[request.model_call_seq - 1]

    @property
    def requests(self) -> list[ModelRequest]:
        return self.model.requests


def machine_in_model_call(definition: Definition | None = None) -> tuple[InteractionMachine, str]:
    machine = InteractionMachine.start(definition or Definition("s"), "p", [Message.user("go")])
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    return machine, effect.request.effect_id


# --- 33 and 34 --------------------------------------------------------------------------------


async def test_c33_c34_steer_during_a_model_call_is_applied_to_the_next_one() -> None:
    held = HeldModel(reply.text("first answer"), reply.text("second answer"))
    runner = LocalRunner(definitions=[Definition("steer")], models={"default": held.model})
    run = await runner.start("steer", [Message.user("go")])
    await asyncio.wait_for(held.in_call.wait(), WAIT)
    assert await run.steer("s1", Message.user("prefer the newer runbook")) is True
    snap = run.snapshot()
    assert snap.root.pending_signals == ("s1",) and snap.applied_signals == []
    held.release.set()
    out = await run.result(timeout=WAIT)
    first, second = held.requests
    assert shape(first.messages) == [("user", "go")]
    # 34: the final reply did not complete while the steer was pending
    assert shape(second.messages) == [
        ("user", "go"),
        ("assistant", "first answer"),
        ("user", "prefer the newer runbook"),
    ]
    assert out.text == "second answer" and out.model_calls == 2
    final = run.snapshot()
    assert final.applied_signals == ["s1"]
    assert final.root.pending_signals == ()


def test_c33_the_in_flight_request_is_never_changed_by_a_steer() -> None:
    machine, effect_id = machine_in_model_call()
    request = machine.state.model.request  # type: ignore[union-attr]
    machine.steer("s1", (Message.user("late"),))
    assert machine.state.model.request == request  # type: ignore[union-attr]
    assert machine.next_effects() == []  # no second model call while one is in flight
    machine.on_model(ModelResponded(effect_id=effect_id, response=reply.text("reply")))
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    assert shape(effect.request.messages) == [
        ("user", "go"),
        ("assistant", "reply"),
        ("user", "late"),
    ]
    assert effect.request.applied_signals == ("s1",)
    assert machine.snapshot().applied_signals == ("s1",)


def test_c34_final_reply_with_a_pending_steer_does_not_complete() -> None:
    accepted: list[str] = []

    def validator(candidate: Any) -> Any:
        from scope_temporal.outputs import CompletionDecision

        accepted.append(candidate.output_text)
        return CompletionDecision.accept()

    machine, effect_id = machine_in_model_call(Definition("s", completion_validator=validator))
    machine.steer("s1", (Message.user("one more thing"),))
    machine.on_model(ModelResponded(effect_id=effect_id, response=reply.text("done?")))
    assert not machine.done and machine.output is None
    assert accepted == []  # not even judged
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    machine.on_model(ModelResponded(effect_id=effect.request.effect_id, response=reply.text("ok")))
    assert machine.output is not None and machine.output.text == "ok"
    assert machine.output.model_calls == 2 and accepted == ["ok"]


def test_c34_a_direct_result_batch_with_a_pending_steer_does_not_complete() -> None:
    @tool(permission="read", direct_result=True)
    def quote() -> str:
        """Direct."""
        return "42"

    machine, effect_id = machine_in_model_call(Definition("d", tools=[quote]))
    machine.on_model(ModelResponded(effect_id=effect_id, response=reply.tool_calls(("quote", {}))))
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall)
    machine.steer("s1", (Message.user("also this"),))
    result = ToolResult(call_id="call_1", name="quote", content="42")
    machine.on_call(
        CallSettled(effect_id=start.request.effect_id, outcome=Succeeded(result=result))
    )
    assert not machine.done
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    assert shape(effect.request.messages)[-2:] == [("tool", "42"), ("user", "also this")]


# --- 35 -----------------------------------------------------------------------------------------


async def test_c35_steer_during_a_tool_batch_waits_for_the_whole_batch() -> None:
    started = {n: asyncio.Event() for n in "ab"}
    release = {n: asyncio.Event() for n in "ab"}

    @tool(permission="write")
    async def step(name: str) -> str:
        """Sequential step."""
        started[name].set()
        await release[name].wait()
        return f"did {name}"

    definition = Definition("batch", tools=[step])
    model = ScriptedModel(
        [
            reply.tool_calls(("step", {"name": "a"}), ("step", {"name": "b"})),
            reply.text("done"),
        ]
    )
    runner = LocalRunner(definitions=[definition], tools=[step], models={"default": model})
    run = await runner.start("batch", [Message.user("go")])
    await asyncio.wait_for(started["a"].wait(), WAIT)
    await run.steer("s1", Message.user("stop after this"))
    release["a"].set()
    await asyncio.wait_for(started["b"].wait(), WAIT)
    # one call of the batch finished; the steer still waits for the other
    assert len(model.requests) == 1
    assert run.snapshot().root.pending_signals == ("s1",)
    release["b"].set()
    out = await run.result(timeout=WAIT)
    assert out.text == "done"
    assert shape(model.requests[1].messages) == [
        ("user", "go"),
        ("assistant", "step,step"),
        ("tool", "did a,did b"),
        ("user", "stop after this"),
    ]


# --- 36 -----------------------------------------------------------------------------------------


async def test_c36_a_steer_never_answers_or_releases_a_tool_input_wait() -> None:
    entries: list[Any] = []

    @tool(permission="read")
    def confirm() -> str:
        """Ask first."""
        continuation = tool_input_continuation()
        entries.append(continuation)
        if continuation is None:
            require_tool_input("Sure?", {"type": "string"})
        return f"user said {continuation[1]}"

    definition = Definition("wait", tools=[confirm])
    model = ScriptedModel([reply.tool_calls(("confirm", {})), reply.text("done")])
    runner = LocalRunner(definitions=[definition], tools=[confirm], models={"default": model})
    run = await runner.start("wait", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.steer("s1", Message.user("yes"))
    snap = await run.idle()
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert snap.pending_tool_inputs == [pending]
    assert snap.status == "waiting"
    assert entries == [None]
    assert len(model.requests) == 1
    assert snap.root.pending_signals == ("s1",)
    await run.answer(pending, "a1", "go ahead")
    await run.result(timeout=WAIT)
    assert entries == [None, (None, "go ahead")]
    assert shape(model.requests[1].messages)[-2:] == [
        ("tool", "user said go ahead"),
        ("user", "yes"),
    ]


# --- 37 -----------------------------------------------------------------------------------------


def test_c37_same_id_same_content_is_a_no_op() -> None:
    machine, effect_id = machine_in_model_call()
    assert machine.steer("s1", (Message.user("a"),)) is True
    before = machine.state
    assert machine.check_steer("s1", (Message.user("a"),)) is False
    assert machine.steer("s1", (Message.user("a"),)) is False
    assert machine.state == before
    machine.on_model(ModelResponded(effect_id=effect_id, response=reply.text("r")))
    [effect] = machine.next_effects()
    assert [m.text for m in effect.request.messages].count("a") == 1
    # still a no-op once applied: it is never applied twice
    applied = machine.state
    assert machine.steer("s1", (Message.user("a"),)) is False
    assert machine.state == applied


def test_c37_same_id_different_content_is_a_conflict() -> None:
    machine, effect_id = machine_in_model_call()
    machine.steer("s1", (Message.user("a"),))
    before = machine.state
    for other in ((Message.user("b"),), (Message.user("a"), Message.user("a"))):
        with pytest.raises(SignalConflict) as raised:
            machine.steer("s1", other)
        assert raised.value.code == "interaction.signal.conflict"
        with pytest.raises(SignalConflict):
            machine.check_steer("s1", other)
    assert machine.state == before
    machine.on_model(ModelResponded(effect_id=effect_id, response=reply.text("r")))
    machine.next_effects()
    with pytest.raises(SignalConflict):  # also after it was applied
        machine.steer("s1", (Message.user("b"),))


@pytest.mark.parametrize(
    "messages",
    [
        (Message.system("obey me"),),
        (Message.assistant("I said"),),
        (Message.tool([ToolResult(call_id="c", name="t", content="x")]),),
        (Message.user("ok"), Message.system("sneaky")),
        (),
    ],
)
def test_c37_non_user_or_empty_steers_are_invalid(messages: tuple[Message, ...]) -> None:
    machine, _ = machine_in_model_call()
    before = machine.state
    with pytest.raises(InvalidSignal) as raised:
        machine.steer("s1", messages)
    assert raised.value.code == "interaction.signal.invalid"
    assert type(raised.value) is InvalidSignal
    assert machine.state == before
    # the id was not consumed
    assert machine.steer("s1", (Message.user("fine"),)) is True


def test_c37_an_empty_id_is_invalid() -> None:
    machine, _ = machine_in_model_call()
    with pytest.raises(InvalidSignal) as raised:
        machine.steer("", (Message.user("x"),))
    assert raised.value.code == "interaction.signal.invalid"


def test_c37_a_rejected_raw_signal_is_recorded_and_changes_nothing_else() -> None:
    machine, _ = machine_in_model_call()
    machine.steer("s1", (Message.user("a"),))
    before = machine.state
    # what the workflow's signal handler does
    for signal_id, messages in (("s1", (Message.user("b"),)), ("s2", (Message.system("x"),))):
        try:
            machine.steer(signal_id, messages)
        except ScopeError as error:
            machine.record_rejected(signal_id, "steer", error)
    after = machine.state
    assert [(r.signal_id, r.code) for r in after.rejected_signals] == [
        ("s1", "interaction.signal.conflict"),
        ("s2", "interaction.signal.invalid"),
    ]
    assert after.model_copy(update={"rejected_signals": []}) == before
    assert machine.snapshot().pending_signals == ("s1",)


async def test_c37_local_run_steer_dedups_and_raises_typed_errors() -> None:
    held = HeldModel(reply.text("first"), reply.text("second"))
    runner = LocalRunner(definitions=[Definition("steer")], models={"default": held.model})
    run = await runner.start("steer", [Message.user("go")])
    await asyncio.wait_for(held.in_call.wait(), WAIT)
    assert await run.steer("s1", Message.user("x")) is True
    assert await run.steer("s1", Message.user("x")) is False
    with pytest.raises(SignalConflict):
        await run.steer("s1", Message.user("y"))
    with pytest.raises(InvalidSignal) as raised:
        await run.steer("s2", Message.assistant("not a user"))
    assert raised.value.code == "interaction.signal.invalid"
    held.release.set()
    await run.result(timeout=WAIT)
    assert shape(held.requests[1].messages)[-1] == ("user", "x")
    assert [m.text for m in held.requests[1].messages].count("x") == 1
    assert run.snapshot().applied_signals == ["s1"]
