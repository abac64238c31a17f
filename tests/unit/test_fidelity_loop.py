"""CONFORMANCE 54 (max_model_calls: None is unlimited, 0 refused, why the default is 20)
and 60 (a completion candidate's working context excludes the candidate itself)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scope_temporal import (
    CompletionCandidate,
    CompletionDecision,
    Definition,
    DefinitionError,
    Message,
    ScriptedModel,
    reply,
    tool,
)
from scope_temporal.testing import LocalRunner

WAIT = 2.0


async def test_c54_none_is_unlimited_and_runs_past_the_default_bound() -> None:
    @tool(permission="read")
    def step() -> str:
        """One step."""
        return "ok"

    rounds = 25  # more than the default bound of 20
    script = [reply.tool_calls(("step", {})) for _ in range(rounds)] + [reply.text("done")]
    for limit, calls in ((None, rounds + 1), (rounds + 1, rounds + 1)):
        definition = Definition("long", tools=[step], max_model_calls=limit)
        runner = LocalRunner(
            definitions=[definition], tools=[step], models={"default": ScriptedModel(script)}
        )
        run = await runner.start("long", [Message.user("go")])
        assert (await run.result(timeout=WAIT)).model_calls == calls


def test_c54_zero_is_refused_at_construction_and_the_default_is_a_documented_bound() -> None:
    with pytest.raises(DefinitionError, match="None for unlimited"):
        Definition("none", max_model_calls=0)
    assert Definition("bounded").max_model_calls == 20
    assert Definition("unbounded", max_model_calls=None).max_model_calls is None
    assert Definition.__doc__ is not None and "max_model_calls=None" in Definition.__doc__


def recording_validator(
    seen: list[CompletionCandidate],
) -> Callable[[CompletionCandidate], CompletionDecision]:
    def judge(candidate: CompletionCandidate) -> CompletionDecision:
        seen.append(candidate)
        return CompletionDecision.accept()

    return judge


async def test_c60_a_final_replys_candidate_context_excludes_the_reply() -> None:
    seen: list[CompletionCandidate] = []
    definition = Definition("judged", completion_validator=recording_validator(seen))
    runner = LocalRunner(
        definitions=[definition], models={"default": ScriptedModel([reply.text("the answer")])}
    )
    run = await runner.start("judged", [Message.user("question")])
    await run.result(timeout=WAIT)
    [candidate] = seen
    assert candidate.output_text == "the answer"
    assert candidate.context == (Message.user("question"),)
    # the working context itself keeps the reply
    assert run.snapshot().root.context[-1].text == "the answer"


async def test_c60_a_direct_result_candidates_context_excludes_the_results() -> None:
    @tool(permission="read", direct_result=True)
    def lookup() -> str:
        """Look it up."""
        return "found"

    seen: list[CompletionCandidate] = []
    definition = Definition(
        "direct",
        tools=[lookup],
        completion_validator=recording_validator(seen),
    )
    runner = LocalRunner(
        definitions=[definition],
        tools=[lookup],
        models={"default": ScriptedModel([reply.tool_calls(("lookup", {}))])},
    )
    run = await runner.start("direct", [Message.user("question")])
    await run.result(timeout=WAIT)
    [candidate] = seen
    assert candidate.source == "direct_tool_results" and candidate.output_text == "found"
    assert [m.role for m in candidate.context] == ["user", "assistant"]
    assert candidate.context[-1].tool_calls[0].name == "lookup"
