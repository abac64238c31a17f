"""CONFORMANCE 33-35 at the payload limit: a steer accepted while a model call ran waits
for a later call of the turn when the call after the batch has no room for it."""

from __future__ import annotations

import asyncio

from scope_temporal.chat import Message
from scope_temporal.definition import Definition
from scope_temporal.interaction.effects import CallModel, ModelEffectRequest, ModelResponded
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ModelRequest, ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import tool

WAIT = 5.0
LIMIT = 6_000


@tool(permission="read")
def lookup(key: str) -> str:
    """A 3,000-character result."""
    return "r" * 3_000


async def test_c35_a_steer_the_call_after_a_tool_batch_has_no_room_for_waits_for_the_next() -> None:
    in_call, release = asyncio.Event(), asyncio.Event()
    responses = [reply.tool_calls(("lookup", {"key": "k"})), reply.text("a"), reply.text("b")]

    async def respond(request: ModelRequest) -> object:
        if request.model_call_seq == 1:
            in_call.set()
            await release.wait()
        return responses[request.model_call_seq - 1]

    model = ScriptedModel(respond)  # type: ignore[arg-type]
    runner = LocalRunner(
        definitions=[Definition("room", tools=[lookup])],
        tools=[lookup],
        models={"default": model},
        payload_limit_bytes=LIMIT,
    )
    run = await runner.start("room", [Message.user("go")])
    await asyncio.wait_for(in_call.wait(), WAIT)
    # it fits the next call as that call stands now (no tool calls or results yet) ...
    assert await run.steer("s1", Message.user("x" * 3_000)) is True
    release.set()
    out = await run.result(timeout=WAIT)
    # ... but not beside the 3 KB result: the call after the batch goes without it, and
    # the reply to that call cannot complete while it waits
    assert out.text == "b" and out.model_calls == 3
    _, after_batch, for_the_steer = model.requests
    assert [m.role for m in after_batch.messages] == ["user", "assistant", "tool"]
    assert [m.role for m in for_the_steer.messages][-2:] == ["assistant", "user"]
    assert for_the_steer.messages[-1].text == "x" * 3_000
    assert run.snapshot().root.applied_signals == ("s1",)


def _size(request: ModelEffectRequest) -> int:
    return sum(len(m.text) for m in request.messages)


def _answered_with_steers(*steers: str) -> InteractionMachine:
    machine = InteractionMachine.start(Definition("s"), "p", [Message.user("go")])
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    for n, text in enumerate(steers, 1):
        machine.steer(f"s{n}", (Message.user(text),))
    machine.on_model(ModelResponded(effect_id=effect.request.effect_id, response=reply.text("ok")))
    return machine


def _applied(machine: InteractionMachine, fits: object) -> tuple[str, ...]:
    [effect] = machine.next_effects(fits)  # type: ignore[arg-type]
    assert isinstance(effect, CallModel)
    request = effect.request
    machine.on_model(ModelResponded(effect_id=request.effect_id, response=reply.text("ok")))
    return request.applied_signals


def test_c34_a_call_made_only_for_steers_takes_the_first_and_the_rest_wait_in_order() -> None:
    machine = _answered_with_steers("a" * 10, "b" * 10, "c" * 10)
    room = lambda request: _size(request) <= 2 + 2 + 10 + 10  # noqa: E731 - go, ok x2, two steers
    assert _applied(machine, room) == ("s1", "s2")
    assert machine.snapshot().pending_signals == ("s3",)
    assert not machine.done  # a pending steer still gets its call
    assert _applied(machine, lambda request: True) == ("s3",)
    assert machine.output is not None and machine.output.model_calls == 3
    assert machine.snapshot().applied_signals == ("s1", "s2", "s3")


def test_c34_steers_no_call_has_room_for_are_all_sent_and_none_dropped() -> None:
    # the driver then refuses the call as too large (interaction.payload.too_large)
    machine = _answered_with_steers("a", "b")
    assert _applied(machine, lambda request: False) == ("s1", "s2")
    assert machine.snapshot().pending_signals == ()
