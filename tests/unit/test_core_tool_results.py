"""CONFORMANCE 22-24: direct-result batches (and the validator they still pass) and
deferred tools, advertised only by a call that succeeds.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.interaction.effects import (
    CallSettled,
)
from scope_temporal.models import reply
from scope_temporal.outputs import CompletionCandidate, CompletionDecision
from scope_temporal.settle import settle_tool_result
from scope_temporal.tools import (
    Succeeded,
    ToolFailure,
    advertise_tools,
    tool,
)
from tests.unit.tool_rounds import (
    WAIT,
    model_of,
    open_round,
    runner_with,
    tool_results_sent,
)

# --- 22 and 23: direct results ---------------------------------------------------------------


def direct_tools(failing: set[str]) -> list[Any]:
    @tool(permission="read", direct_result=True)
    def quote(symbol: str) -> str:
        """A price."""
        if symbol in failing:
            raise ToolFailure(f"no price for {symbol}")
        return f"{symbol}=42"

    @tool(permission="read")
    def note(text: str) -> str:
        """An ordinary tool."""
        return f"noted {text}"

    return [quote, note]


async def test_c22_direct_result_batch_completes_without_another_model_call() -> None:
    tools = direct_tools(set())
    definition = Definition("direct", tools=tools, max_concurrent_tool_calls=2)
    runner = runner_with(
        definition,
        tools,
        [
            reply.tool_calls(("quote", {"symbol": "B"}), ("quote", {"symbol": "A"})),
            reply.text("no"),
        ],
    )
    out = await (await runner.start("direct", [Message.user("go")])).result(timeout=WAIT)
    assert out.source == "direct_tool_results"
    assert out.model_calls == 1
    assert [r.content for r in out.direct_tool_results or ()] == ["B=42", "A=42"]
    assert [r.call_id for r in out.direct_tool_results or ()] == ["call_1", "call_2"]
    assert out.text == "B=42\nA=42"
    assert len(model_of(runner).requests) == 1


@pytest.mark.parametrize("mixed", [False, True])
async def test_c22_a_failed_or_non_direct_call_sends_all_results_to_the_model(mixed: bool) -> None:
    tools = direct_tools({"BAD"})
    definition = Definition("direct", tools=tools, max_concurrent_tool_calls=2)
    second = ("note", {"text": "n"}) if mixed else ("quote", {"symbol": "BAD"})
    runner = runner_with(
        definition,
        tools,
        [reply.tool_calls(("quote", {"symbol": "A"}), second), reply.text("summary")],
    )
    out = await (await runner.start("direct", [Message.user("go")])).result(timeout=WAIT)
    assert out.source == "model_response" and out.text == "summary"
    assert out.model_calls == 2
    results = tool_results_sent(runner, 1)
    expected = ["A=42", "noted n"] if mixed else ["A=42", "no price for BAD"]
    assert [r.content for r in results] == expected


async def test_c23_direct_results_still_pass_the_completion_validator() -> None:
    seen: list[CompletionCandidate] = []

    def no_drafts(candidate: CompletionCandidate) -> CompletionDecision:
        seen.append(candidate)
        if "draft" in candidate.output_text:
            return CompletionDecision.reject("Results were drafts; confirm them.")
        return CompletionDecision.accept()

    @tool(permission="read", direct_result=True)
    def fetch(key: str) -> str:
        """Fetch."""
        return f"draft {key}"

    definition = Definition("judged", tools=[fetch], completion_validator=no_drafts)
    runner = runner_with(
        definition, [fetch], [reply.tool_calls(("fetch", {"key": "k"})), reply.text("confirmed")]
    )
    out = await (await runner.start("judged", [Message.user("go")])).result(timeout=WAIT)
    assert out.source == "model_response" and out.text == "confirmed"
    assert out.model_calls == 2
    first = seen[0]
    assert first.source == "direct_tool_results"
    assert [r.content for r in first.direct_tool_results or ()] == ["draft k"]
    last = model_of(runner).requests[1].messages[-1]
    assert last.role == "user" and last.text == "Results were drafts; confirm them."


# --- 24: deferred tools ------------------------------------------------------------------------


def advertising_tools(outcome: str) -> list[Any]:
    @tool(permission="read")
    def unlock() -> str:
        """Unlock the hidden tool."""
        advertise_tools("secret")
        if outcome == "failure":
            raise ToolFailure("unlock failed after advertising")
        if outcome == "unknown":
            raise RuntimeError("lost")
        return "unlocked"

    @tool(permission="read", deferred=True)
    def secret() -> str:
        """The hidden tool."""
        return "secret value"

    @tool(permission="read")
    def plain() -> str:
        """Ordinary."""
        return "plain"

    return [unlock, secret, plain]


async def test_c24_advertised_tool_is_visible_from_the_next_call_after_success() -> None:
    tools = advertising_tools("success")
    definition = Definition(
        "adv",
        tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]),
        max_concurrent_tool_calls=2,
    )
    runner = runner_with(
        definition,
        tools,
        [
            reply.tool_calls(("unlock", {}), ("secret", {})),  # same batch: not yet bound
            reply.tool_calls(("secret", {})),
            reply.text("done"),
        ],
    )
    run = await runner.start("adv", [Message.user("go")])
    await run.result(timeout=WAIT)
    requests = model_of(runner).requests
    assert [t.name for t in requests[0].tools] == ["unlock", "plain"]
    assert [t.name for t in requests[1].tools] == ["unlock", "plain", "secret"]
    first_round = tool_results_sent(runner, 1)
    assert first_round[0].content == "unlocked"
    assert first_round[1].is_error and "not available" in first_round[1].content
    assert tool_results_sent(runner, 2)[0].content == "secret value"
    assert run.snapshot().root.advertised_tools == ("secret",)


async def test_c24_advertisement_of_a_failed_call_never_commits() -> None:
    tools = advertising_tools("failure")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    runner = runner_with(
        definition,
        tools,
        [reply.tool_calls(("unlock", {})), reply.tool_calls(("secret", {})), reply.text("done")],
    )
    run = await runner.start("adv", [Message.user("go")])
    await run.result(timeout=WAIT)
    requests = model_of(runner).requests
    assert all("secret" not in [t.name for t in r.tools] for r in requests)
    assert "not available" in tool_results_sent(runner, 2)[0].content
    assert run.snapshot().root.advertised_tools == ()


@pytest.mark.parametrize("disposition", ["failed", "succeeded"])
async def test_c24_advertisement_of_an_unknown_call_commits_only_if_settled_succeeded(
    disposition: str,
) -> None:
    tools = advertising_tools("unknown")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    runner = runner_with(definition, tools, [reply.tool_calls(("unlock", {})), reply.text("done")])
    run = await runner.start("adv", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    failed = disposition == "failed"
    result = ToolResult(call_id="call_1", name="unlock", content="established", is_error=failed)
    advertised = () if failed else ("secret",)
    settlement = settle_tool_result(unknown.request, result, disposition, advertised)  # type: ignore[arg-type]
    await run.resolve(unknown, settlement)
    await run.result(timeout=WAIT)
    names = [t.name for t in model_of(runner).requests[1].tools]
    assert ("secret" in names) is (not failed)


@pytest.mark.parametrize("name", ["ghost", "plain"])
async def test_c24_unknown_or_non_deferred_names_are_refused(name: str) -> None:
    @tool(permission="read")
    def unlock() -> str:
        """Advertise a name that is not a deferred tool."""
        advertise_tools(name)
        return "unlocked"

    tools = advertising_tools("success")
    definition = Definition("adv", tools=ToolSet("t", [unlock, tools[2]], deferred=[tools[1]]))
    runner = runner_with(
        definition, [unlock, *tools[1:]], [reply.tool_calls(("unlock", {})), reply.text("done")]
    )
    run = await runner.start("adv", [Message.user("go")])
    await run.result(timeout=WAIT)
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and name in result.content
    assert run.snapshot().settled_results[0].entries[0].disposition == "failed"
    assert run.snapshot().root.advertised_tools == ()
    assert [t.name for t in model_of(runner).requests[1].tools] == ["unlock", "plain"]


@pytest.mark.parametrize("name", ["ghost", "plain"])
def test_c24_machine_refuses_a_succeeded_outcome_advertising_a_non_deferred_name(
    name: str,
) -> None:
    tools = advertising_tools("success")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    machine, [start] = open_round(definition, ("unlock", {}))
    outcome = Succeeded(
        result=ToolResult(call_id="call_1", name="unlock", content="unlocked"), advertised=(name,)
    )
    machine.on_call(CallSettled(effect_id=start.request.effect_id, outcome=outcome))
    [entry] = machine.snapshot().settled_results[0].entries
    assert entry.disposition == "failed" and entry.result.is_error
    assert machine.snapshot().advertised_tools == ()
    [call_model] = machine.next_effects()
    assert [t.name for t in call_model.request.tools] == ["unlock", "plain"]
    # a valid advertisement through the same path does commit
    machine2, [start2] = open_round(definition, ("unlock", {}))
    machine2.on_call(
        CallSettled(
            effect_id=start2.request.effect_id,
            outcome=outcome.model_copy(update={"advertised": ("secret",)}),
        )
    )
    assert machine2.snapshot().advertised_tools == ("secret",)


def test_c24_advertisable_names_travel_with_the_request() -> None:
    tools = advertising_tools("success")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    _, [start] = open_round(definition, ("unlock", {}))
    assert start.request.deferred_tools == ("secret",)
    assert json.loads(start.request.model_dump_json())["deferred_tools"] == ["secret"]
