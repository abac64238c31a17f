"""Cancelling a parent lists every call it could not settle as unknown (CONFORMANCE 59):
the pure core, then LocalRunner in both tool-call mappings."""

from __future__ import annotations

import asyncio
import json

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition, Delegate
from scope_temporal.interaction.cancellation import DIAGNOSTIC
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
    StartToolCall,
    ToolEffectRequest,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.models import reply
from scope_temporal.testing import LocalRunner, ScriptedModel
from scope_temporal.tools import Succeeded, tool

released = asyncio.Event()
entered: list[str] = []


@tool(permission="read")
async def look(what: str) -> str:
    """Look something up (waits until released)."""
    entered.append(what)
    await released.wait()
    return what


def round_of_three() -> tuple[InteractionMachine, list[StartToolCall]]:
    definition = Definition(
        "cancel-round", tools=[look], tool_call_workflows="always", max_concurrent_tool_calls=3
    )
    m = InteractionMachine.start(definition, "root", [Message.user("go")])
    [call] = m.next_effects()
    assert isinstance(call, CallModel)
    calls = reply.tool_calls(
        ("look", {"what": "a"}), ("look", {"what": "b"}), ("look", {"what": "c"})
    )
    m.on_model(ModelResponded(effect_id=call.request.effect_id, response=calls))
    starts = m.next_effects()
    assert all(isinstance(s, StartToolCall) for s in starts) and len(starts) == 3
    return m, [s for s in starts if isinstance(s, StartToolCall)]


def test_c59_cancel_lists_the_running_tool_calls_with_their_requests() -> None:
    m, [first, second, third] = round_of_three()
    m.on_call(
        CallSettled(
            effect_id=second.request.effect_id,
            outcome=Succeeded(
                result=ToolResult(call_id=second.request.call.id, name="look", content="b")
            ),
        )
    )
    m.cancel()
    unknown = m.snapshot().unknown_effects
    assert [u.request for u in unknown] == [first.request, third.request]
    assert all(u.kind == "tool" and u.diagnostic == DIAGNOSTIC for u in unknown)
    assert [u.ref for u in unknown] == [first.request.ref, third.request.ref]
    assert [u.process_id for u in unknown] == [first.request.process_id, third.request.process_id]


def test_c59_cancel_lists_the_model_call_in_flight() -> None:
    definition = Definition("cancel-model")
    m = InteractionMachine.start(definition, "root", [Message.user("go")])
    [call] = m.next_effects()
    assert isinstance(call, CallModel)
    m.cancel()
    [unknown] = m.snapshot().unknown_effects
    assert unknown.kind == "model" and unknown.request == call.request
    assert unknown.diagnostic == DIAGNOSTIC


def test_c59_a_finished_round_or_an_unsent_model_call_lists_nothing() -> None:
    m = InteractionMachine.start(Definition("cancel-idle"), "root", [Message.user("go")])
    m.cancel()  # the model call was never asked for
    assert m.snapshot().unknown_effects == ()
    m.cancel()  # a second cancel changes nothing
    assert m.snapshot().unknown_effects == ()


def test_c59_the_listing_survives_the_state_round_trip_and_older_states_load() -> None:
    m, _ = round_of_three()
    m.cancel()
    again = InteractionState.model_validate_json(m.state.model_dump_json())
    assert again == m.state and len(again.unsettled_at_cancel) == 3
    older = m.state.model_dump(mode="json")
    del older["unsettled_at_cancel"]
    assert InteractionState.model_validate(older).unsettled_at_cancel == []


async def test_c59_local_run_cancel_lists_the_tool_calls_still_running() -> None:
    released.clear()
    entered.clear()
    definition = Definition("cancel-local", tools=[look], max_concurrent_tool_calls=2)
    script = [reply.tool_calls(("look", {"what": "a"}), ("look", {"what": "b"})), reply.text("ok")]
    runner = LocalRunner(
        definitions=[definition], tools=[look], models={"default": ScriptedModel(script)}
    )
    run = await runner.start("cancel-local", [Message.user("go")])
    for _ in range(200):
        if len(entered) == 2:
            break
        await asyncio.sleep(0.01)
    assert sorted(entered) == ["a", "b"]
    await run.cancel()
    tree = run.snapshot()
    assert tree.status == "canceled"
    unknown = tree.unknown_effects
    assert [u.kind for u in unknown] == ["tool", "tool"]
    requests = [u.request for u in unknown]
    assert all(isinstance(r, ToolEffectRequest) for r in requests)
    looked = [
        json.loads(r.call.arguments or "{}") for r in requests if isinstance(r, ToolEffectRequest)
    ]
    assert looked == [{"what": "a"}, {"what": "b"}]
    assert all(u.process_id.startswith(f"{run.id}/tool/1/") for u in unknown)
    assert runner.models["default"].requests[1:] == []  # type: ignore[attr-defined]


async def test_c59_local_run_a_running_delegate_lists_its_own_calls() -> None:
    released.clear()
    entered.clear()
    parent = Definition("cancel-parent", delegates=[Delegate("help", "Help", definition="helper")])
    helper = Definition("helper", tools=[look], model="child")
    runner = LocalRunner(
        definitions=[parent, helper],
        tools=[look],
        models={
            "default": ScriptedModel([reply.tool_calls(("help", {"task": "look"}))]),
            "child": ScriptedModel([reply.tool_calls(("look", {"what": "deep"}))]),
        },
    )
    run = await runner.start("cancel-parent", [Message.user("go")])
    for _ in range(200):
        if entered:
            break
        await asyncio.sleep(0.01)
    assert entered == ["deep"]
    await run.cancel()
    tree = run.snapshot()
    [delegate] = tree.root.active_delegates
    assert tree.root.unknown_effects == ()
    child = tree.process(delegate.process_id)
    assert child.status == "canceled"
    [unknown] = child.unknown_effects
    assert unknown.kind == "tool" and unknown.process_id.startswith(f"{delegate.process_id}/tool/")
    assert tree.unknown_effects == [unknown]
