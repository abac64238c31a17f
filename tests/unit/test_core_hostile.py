"""Hostile input on the pure machines: a forged or malformed settlement, answer or steer
is refused with a typed error and changes nothing (the live counterparts are in
tests/faults/test_hostile_*.py).

A raw `scope.resolve` signal skips `settle_tool_result` / `settle_model_result`, so the
machines themselves must refuse what those helpers refuse: otherwise a settlement for the
right request but the wrong call id would reach the parent's round and fail the whole
Interaction, and an empty `messages_sent` would wipe the working context.
"""

from __future__ import annotations

import asyncio

import pytest

from scope_temporal.chat import Message, ToolCall, ToolResult
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.errors import InvalidSignal, ScopeError, SettlementMismatch
from scope_temporal.interaction.effects import (
    CallModel,
    ModelSettlement,
    ModelUnknown,
    ToolSettlement,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.models import reply
from scope_temporal.tools import Failed, Rejected, Succeeded, Unknown, tool
from tests.unit.test_core_waits import tool_call_machine, waiting_machine


@tool(permission="read", deferred=True)
def later() -> str:
    """Deferred."""
    return "later"


def unknown_tool_call() -> ToolCallMachine:
    child = tool_call_machine()
    assert child.next_attempt() is not None
    child.on_outcome(Unknown(code="tool.execution_failed", diagnostic="lost"))
    return child


def _result(child: ToolCallMachine, **changes: object) -> ToolResult:
    call = child.state.request.call
    fields: dict[str, object] = {"call_id": call.id, "name": call.name, "content": "ok"}
    fields.update(changes)
    return ToolResult.model_validate(fields)


FORGED_TOOL_OUTCOMES = {
    "another call id": lambda c: Succeeded(result=_result(c, call_id="call_999")),
    "another tool name": lambda c: Succeeded(result=_result(c, name="rm_rf")),
    "succeeded but is_error": lambda c: Succeeded(result=_result(c, is_error=True)),
    "failed but not is_error": lambda c: Failed(result=_result(c)),
    "rejected but not is_error": lambda c: Rejected(result=_result(c), code="tool.input_invalid"),
    "advertises a tool that is not deferred": lambda c: Succeeded(
        result=_result(c), advertised=("approve",)
    ),
}


@pytest.mark.parametrize("forged", sorted(FORGED_TOOL_OUTCOMES))
def test_a_forged_tool_settlement_for_the_right_request_is_refused(forged: str) -> None:
    child = unknown_tool_call()
    before = child.state
    settlement = ToolSettlement(request=before.request, outcome=FORGED_TOOL_OUTCOMES[forged](child))
    with pytest.raises(SettlementMismatch):
        child.check_resolution(settlement)
    with pytest.raises(SettlementMismatch):
        child.resolve(settlement)
    assert child.state == before
    # the genuine one still settles it
    child.resolve(ToolSettlement(request=before.request, outcome=Succeeded(result=_result(child))))
    assert child.outcome is not None and child.outcome.result.content == "ok"


def test_a_settlement_for_a_call_that_is_not_unknown_is_refused() -> None:
    child = waiting_machine()
    before = child.state
    settlement = ToolSettlement(request=before.request, outcome=Succeeded(result=_result(child)))
    with pytest.raises(SettlementMismatch):
        child.resolve(settlement)
    assert child.state == before


def unknown_model() -> InteractionMachine:
    definition = Definition("hostile", tools=ToolSet("t", [], deferred=[later]))
    machine = InteractionMachine.start(definition, "root", [Message.user("go")])
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    machine.on_model(ModelUnknown(effect_id=effect.request.effect_id, diagnostic="lost"))
    return machine


def _held(machine: InteractionMachine) -> ModelSettlement:
    [unknown] = machine.snapshot().unknown_effects
    request = unknown.request
    assert not isinstance(request, str) and request.kind == "model"
    return ModelSettlement(
        request=request, response=reply.text("fine"), messages_sent=request.messages
    )


FORGED_MODEL_SETTLEMENTS = {
    "no messages sent": lambda s: s.model_copy(update={"messages_sent": ()}),
    "a user message as the response": lambda s: s.model_copy(
        update={"response": s.response.model_copy(update={"message": Message.user("hi")})}
    ),
    "an empty final reply": lambda s: s.model_copy(update={"response": reply.text("")}),
    "duplicate tool-call ids": lambda s: s.model_copy(
        update={
            "response": reply.tool_calls(
                ToolCall(id="x", name="later"), ToolCall(id="x", name="later")
            )
        }
    ),
}


@pytest.mark.parametrize("forged", sorted(FORGED_MODEL_SETTLEMENTS))
def test_a_forged_model_settlement_is_refused_and_changes_nothing(forged: str) -> None:
    machine = unknown_model()
    before = machine.state
    settlement = FORGED_MODEL_SETTLEMENTS[forged](_held(machine))
    with pytest.raises(SettlementMismatch):
        machine.check_resolution(settlement)
    with pytest.raises(SettlementMismatch):
        machine.resolve(settlement)
    assert machine.state == before
    assert machine.status == "waiting"
    machine.resolve(_held(machine))
    assert machine.output is not None and machine.output.text == "fine"


@pytest.mark.parametrize("length", [257, 100_000])
def test_over_long_signal_and_answer_ids_are_refused(length: int) -> None:
    machine = unknown_model()
    before = machine.state
    with pytest.raises(InvalidSignal):
        machine.steer("s" * length, (Message.user("hi"),))
    assert machine.state == before
    child = waiting_machine()
    [wait] = child.snapshot().pending_tool_inputs
    with pytest.raises(InvalidSignal):
        child.answer(wait.wait_id, "a" * length, {"approved": True})
    assert child.snapshot().pending_tool_inputs == (wait,)


def test_rejections_are_recorded_bounded() -> None:
    machine = unknown_model()
    child = waiting_machine()
    huge = "x" * 50_000
    for n in range(500):
        error = ScopeError(huge, code="interaction.signal.invalid")
        machine.record_rejected(f"{n}:{huge}", "steer", error)
        child.record_rejected(f"{n}:{huge}", "tool_input", error)
    for snap in (machine.snapshot(), child.snapshot()):
        assert len(snap.rejected_signals) == 100
        assert len(snap.model_dump_json()) < 200_000
        assert snap.rejected_signals[0].signal_id.startswith("400:")
        assert snap.rejected_signals[-1].signal_id.startswith("499:")


async def test_an_observer_raising_a_stray_cancellation_is_isolated_a_real_one_propagates() -> None:
    from scope_temporal.observers import ObserverHub

    class Stray:
        async def tool_settled(self, **_: object) -> None:
            raise asyncio.CancelledError("not a real cancellation")

    class Slow:
        async def tool_settled(self, **_: object) -> None:
            await asyncio.sleep(10)

    hub = ObserverHub([Stray()])
    await hub.emit("tool_settled")
    assert [f.event for f in hub.failures] == ["tool_settled"]
    slow = ObserverHub([Slow()])
    task = asyncio.create_task(slow.emit("tool_settled"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert slow.failures == []
