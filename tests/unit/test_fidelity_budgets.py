"""CONFORMANCE 53: a Tool child's budget (its input continuations) and a Delegate's
model-call budget are allocated from the parent; an exhausted budget is a typed,
model-visible failure, never a retried call. On the pure core and through LocalRunner."""

from __future__ import annotations

from typing import Any

import pytest

from scope_temporal import (
    Definition,
    DefinitionError,
    Delegate,
    InteractionFailed,
    Message,
    ScriptedModel,
    ToolBudget,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from scope_temporal.interaction.effects import StartDelegate, StartToolCall
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import Failed, InputRequired
from tests.unit.tool_rounds import WAIT, open_round, runner_with, tool_results_sent

SCHEMA: dict[str, Any] = {"type": "object"}


@tool(permission="read")
def ask(question: str) -> str:
    """Ask until told to stop; entries are counted in the continuation state."""
    continuation = tool_input_continuation()
    entry = 1 if continuation is None else continuation[0] + 1
    if continuation is None or not continuation[1].get("stop"):
        require_tool_input(f"{question} #{entry}", SCHEMA, entry)
    return f"done after {entry} entries"


def test_c53_a_budget_of_zero_or_below_is_refused_when_built() -> None:
    for bad in (0, -1, True):
        with pytest.raises(DefinitionError, match="max_input_continuations"):
            ToolBudget(max_input_continuations=bad)
    with pytest.raises(DefinitionError, match="max_model_calls"):
        Delegate("d", "d", definition="child", max_model_calls=0)


def test_c53_the_tool_child_gets_the_definitions_budget_and_stops_beyond_it() -> None:
    budget = ToolBudget(max_input_continuations=1)
    definition = Definition("asks", tools=[ask], tool_budget=budget)
    _, [start] = open_round(definition, ("ask", {"question": "q"}))
    assert isinstance(start, StartToolCall) and start.request.budget == budget
    child = ToolCallMachine.start(start.request)
    assert child.next_attempt() is not None
    child.on_outcome(InputRequired(prompt="q #1", response_schema=SCHEMA, state=1))
    wait = child.snapshot().pending_tool_inputs[0].wait_id
    assert child.answer(wait, "a1", {})
    second = child.next_attempt()
    assert second is not None and second.entry == 2  # the one continuation allowed
    child.on_outcome(InputRequired(prompt="q #2", response_schema=SCHEMA, state=2))
    outcome = child.outcome
    assert isinstance(outcome, Failed) and outcome.code == "tool.budget.exhausted"
    assert outcome.result.is_error and "1 continuation" in outcome.result.content
    assert child.snapshot().pending_tool_inputs == () and child.next_attempt() is None


async def test_c53_an_exhausted_tool_budget_is_model_visible_and_the_run_goes_on() -> None:
    definition = Definition("asks", tools=[ask], tool_budget=ToolBudget(max_input_continuations=2))
    runner = runner_with(
        definition, [ask], [reply.tool_calls(("ask", {"question": "q"})), reply.text("gave up")]
    )
    run = await runner.start("asks", [Message.user("go")])
    for n in (1, 2):  # the first entry, then two continuations; the third ask stops it
        [pending] = (await run.idle()).pending_tool_inputs
        assert pending.prompt == f"q #{n}"
        await run.answer(pending, f"a{n}", {})
    out = await run.result(timeout=WAIT)
    assert out.model_response is not None and out.model_response.message.text == "gave up"
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and "budget" in result.content
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.disposition == "failed"


async def test_c53_within_its_budget_a_call_completes_as_before() -> None:
    definition = Definition("asks", tools=[ask], tool_budget=ToolBudget(max_input_continuations=1))
    runner = runner_with(
        definition, [ask], [reply.tool_calls(("ask", {"question": "q"})), reply.text("ok")]
    )
    run = await runner.start("asks", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.answer(pending, "a1", {"stop": True})
    await run.result(timeout=WAIT)
    assert [r.content for r in tool_results_sent(runner, 1)] == ["done after 2 entries"]


def test_c53_the_tool_budget_is_in_the_digest_only_when_set() -> None:
    plain = Definition("asks", tools=[ask])
    assert "tool_budget" not in plain.declaration()
    one = Definition("asks", tools=[ask], tool_budget=ToolBudget(max_input_continuations=1))
    two = Definition("asks", tools=[ask], tool_budget=ToolBudget(max_input_continuations=2))
    assert len({plain.digest, one.digest, two.digest}) == 3


def parent(max_model_calls: int | None, budget: int | None) -> Definition:
    return Definition(
        "parent",
        max_model_calls=max_model_calls,
        delegates=[Delegate("d", "d", definition="child", max_model_calls=budget)],
    )


@pytest.mark.parametrize(
    ("parent_limit", "budget", "allocated"),
    [(3, 10, 2), (3, None, 2), (None, 4, 4), (None, None, None), (10, 4, 4), (1, 5, 0)],
)
def test_c53_a_delegates_budget_is_taken_from_what_its_parent_has_left(
    parent_limit: int | None, budget: int | None, allocated: int | None
) -> None:
    _, [start] = open_round(parent(parent_limit, budget), ("d", {"task": "t"}))
    assert isinstance(start, StartDelegate) and start.max_model_calls == allocated


async def test_c53_a_delegate_with_no_budget_left_fails_model_visibly_without_a_model_call() -> (
    None
):
    child_model = ScriptedModel([reply.text("never")])
    runner = LocalRunner(
        definitions=[parent(1, None), Definition("child", model="child")],
        models={
            "default": ScriptedModel([reply.tool_calls(("d", {"task": "t"}))]),
            "child": child_model,
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:  # the parent's own budget is spent too
        await run.result(timeout=WAIT)
    assert failed.value.code == "interaction.limit.model_calls"
    assert child_model.requests == []
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.result.is_error and "interaction.limit.model_calls" in entry.result.content
