"""CONFORMANCE 56: a tool and a model call read their attribution (process, step,
attempt, incarnation); the incarnation counts runs across continue-as-new and older
carried states still load. On the pure core and through LocalRunner."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from scope_temporal import (
    Attribution,
    Definition,
    Message,
    ScriptedModel,
    current_tool_call,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from scope_temporal.interaction.effects import CallModel, ModelResponded, StartToolCall
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.models import ModelUnavailable
from scope_temporal.models.retry import ModelRetry
from scope_temporal.testing import LocalRunner
from tests.unit.tool_rounds import WAIT

QUICK = ModelRetry(initial_interval=timedelta(milliseconds=1))
ENTRIES: list[Attribution] = []


@tool(permission="read")
def ask() -> str:
    """Ask once, then answer; records each entry's attribution."""
    ENTRIES.append(current_tool_call().attribution)
    if tool_input_continuation() is None:
        require_tool_input("go on?", {"type": "object"}, None)
    return "done"


def test_c56_the_incarnation_counts_runs_across_continue_as_new() -> None:
    definition = Definition("asks", tools=[ask])
    machine = InteractionMachine.start(definition, "p", [Message.user("go")])
    [first] = machine.next_effects()
    assert isinstance(first, CallModel)
    assert (first.request.attempt, first.request.incarnation) == (1, 1)
    response = reply.tool_calls(("ask", {}))
    machine.on_model(ModelResponded(effect_id=first.request.effect_id, response=response))
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall) and start.request.incarnation == 1
    carried = InteractionState.model_validate_json(machine.carried_state.model_dump_json())
    assert carried.incarnation == 2 and machine.state.incarnation == 1
    again = InteractionMachine(definition, carried)
    assert again.carried_state.incarnation == 3
    older = carried.model_dump(mode="json")
    del older["incarnation"]  # a state carried before attribution existed
    assert InteractionState.model_validate(older).incarnation == 1


async def test_c56_a_tool_reads_its_step_attempt_and_incarnation_on_each_entry() -> None:
    ENTRIES.clear()
    definition = Definition("asks", tools=[ask])
    script = [reply.tool_calls(("ask", {})), reply.tool_calls(("ask", {})), reply.text("ok")]
    runner = LocalRunner(
        definitions=[definition], tools=[ask], models={"default": ScriptedModel(script)}
    )
    run = await runner.start("asks", [Message.user("go")], id="attr")
    for n in (1, 2):
        [pending] = (await run.idle()).pending_tool_inputs
        await run.answer(pending, f"a{n}", {})
    await run.result(timeout=WAIT)
    expected = [
        Attribution(process_id=f"attr/tool/{step}/0", step=step, attempt=entry, incarnation=1)
        for step in (1, 2)
        for entry in (1, 2)  # the first entry, then the re-entry after the answer
    ]
    assert ENTRIES == expected  # noqa: SIM300


async def test_c56_a_models_attempt_counts_each_new_effect_of_its_step() -> None:
    model = ScriptedModel(
        [
            ModelUnavailable("Connection refused"),
            reply.tool_calls(("ask", {})),
            ModelUnavailable("Rate limit reached", status=429, retry_after=timedelta(0)),
            reply.text("done"),
        ]
    )
    definition = Definition("asks", tools=[ask], model_retry=QUICK)
    runner = LocalRunner(definitions=[definition], tools=[ask], models={"default": model})
    run = await runner.start("asks", [Message.user("go")], id="m")
    [pending] = (await run.idle()).pending_tool_inputs
    await run.answer(pending, "a1", {})
    await run.result(timeout=WAIT)
    attributions: list[Any] = [r.attribution for r in model.requests]
    assert [(a.process_id, a.step, a.attempt, a.incarnation) for a in attributions] == [
        ("m", 1, 1, 1),
        ("m", 1, 2, 1),
        ("m", 2, 1, 1),
        ("m", 2, 2, 1),
    ]
