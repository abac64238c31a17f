"""An MCP server's sampling request (`sampling/createMessage`) under the Interaction's
model, budget and limits (docs/mcp.md, Sampling): in-process (`LocalRunner`) against the
test-owned server `tests.mcp_servers.faulty` over stdio, whose call log proves the
`tools/call` reached it once and what the model's reply was; and the pure rules of the
allowance (`interaction.sampling`) and of the sampling wait (`ToolCallMachine`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scope_temporal import Definition, InvalidToolInput
from scope_temporal.chat import Message, Options, ToolCall, Usage
from scope_temporal.errors import LIMIT_TOKENS
from scope_temporal.interaction import sampling
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.sampling_values import ANSWER_SCHEMA, SAMPLING_STATE, Sampled
from scope_temporal.interaction.state import InteractionState
from scope_temporal.mcp import McpSampling, McpServer
from scope_temporal.mcp.values import McpToolRecord
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.outputs import TokenUsage
from scope_temporal.testing import LocalRunner
from tests.unit.test_mcp_local import calls, faulty


def _runner(
    made: list[LocalRunner], definitions: list[Definition], model: ScriptedModel, log: Path
) -> LocalRunner:
    runner = LocalRunner(
        definitions=definitions, models={"default": model}, mcp_servers={"faulty": faulty(log)}
    )
    made.append(runner)
    return runner


def _result(model: ScriptedModel) -> str:
    [result] = model.requests[-1].messages[-1].tool_results
    return result.content


async def test_mcp_sampling_runs_as_a_model_call_of_the_interaction_and_the_server_gets_its_reply(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-sample",
        mcp_servers=[McpServer("faulty", sampling=McpSampling(max_tokens=5))],
        options=Options(temperature=0.25),
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_sample", {"text": "sky colour?"})),
            reply.text("blue", usage=Usage(input_tokens=7, output_tokens=1)),
            reply.text("ok"),
        ]
    )
    run = await _runner(runners, [definition], model, log).start("mcp-sample", "go")
    output = await run.result()
    assert output.text == "ok"
    assert output.model_calls == 3  # the sampling call is one of the Interaction's
    assert output.usage.total_tokens == 8
    sampled = model.requests[1]
    assert sampled.messages == (Message.system("Answer in one word."), Message.user("sky colour?"))
    assert sampled.tools == ()
    # the Definition's options; the server's maxTokens (10) capped by McpSampling (5)
    assert (sampled.options.temperature, sampled.options.max_tokens) == (0.25, 5)
    assert _result(model) == "sample answered: blue"
    assert [c["tool"] for c in calls(log)] == ["sample", "sampled"]  # tools/call sent once
    assert calls(log)[1]["arguments"] == {"text": "blue", "model": "default"}
    kinds = [e.kind async for e in run.events()]
    assert "wait_opened" not in kinds  # nobody was asked


async def test_mcp_sampling_not_allowed_by_the_definition_is_refused_naming_the_server(
    runners: list[LocalRunner], log: Path
) -> None:
    """The worker declares sampling (another Definition allows it), this one does not."""
    allows = Definition("mcp-allows", mcp_servers=[McpServer("faulty", sampling=True)])
    denies = Definition("mcp-denies", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_sample", {"text": "hi"})), reply.text("ok")])
    run = await _runner(runners, [allows, denies], model, log).start("mcp-denies", "go")
    output = await run.result()
    assert output.model_calls == 2 and len(model.requests) == 2  # the model was not asked
    assert _result(model) == (
        "sample refused by the client: Sampling not supported: Definition 'mcp-denies' does "
        "not let MCP server 'faulty' use its model (declare McpServer('faulty', "
        "sampling=True) to allow it)"
    )
    assert [c["tool"] for c in calls(log)] == ["sample"]


async def test_mcp_sampling_beyond_max_requests_of_the_call_gets_an_mcp_error(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-sample-once", mcp_servers=[McpServer("faulty", sampling=McpSampling(max_requests=1))]
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_sample_twice", {"text": "q"})),
            reply.text("first"),
            reply.text("ok"),
        ]
    )
    run = await _runner(runners, [definition], model, log).start("mcp-sample-once", "go")
    assert (await run.result()).model_calls == 3
    assert _result(model) == (
        "sample answered: first | sample refused by the client: sampling refused: this tool "
        "call used its 1 model call(s) for sampling"
    )
    assert [c["tool"] for c in calls(log)] == ["sample_twice", "sampled"]


async def test_mcp_sampling_counts_against_max_model_calls_keeping_the_interactions_next_call(
    runners: list[LocalRunner], log: Path
) -> None:
    """max_model_calls=3: the first call is made, one is kept for the Interaction's next
    call, so the tool call may sample once; the second request gets the budget error."""
    definition = Definition(
        "mcp-sample-budget",
        mcp_servers=[McpServer("faulty", sampling=True)],
        max_model_calls=3,
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_sample_twice", {"text": "q"})),
            reply.text("first"),
            reply.text("ok"),
        ]
    )
    run = await _runner(runners, [definition], model, log).start("mcp-sample-budget", "go")
    output = await run.result()
    assert output.text == "ok" and output.model_calls == 3
    assert _result(model).startswith("sample answered: first | sample refused by the client: ")
    assert "the Interaction's max_model_calls=3 leaves 1 model call(s)" in _result(model)


async def test_mcp_sampling_with_no_model_call_left_is_refused_before_the_model_is_asked(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-sample-none", mcp_servers=[McpServer("faulty", sampling=True)], max_model_calls=2
    )
    model = ScriptedModel([reply.tool_calls(("faulty_sample", {"text": "hi"})), reply.text("ok")])
    run = await _runner(runners, [definition], model, log).start("mcp-sample-none", "go")
    output = await run.result()
    assert output.model_calls == 2 and len(model.requests) == 2
    assert _result(model).startswith(
        "sample refused by the client: sampling refused: no model call is left in the budget"
    )


async def test_mcp_sampling_tokens_count_against_max_total_tokens(
    runners: list[LocalRunner], log: Path
) -> None:
    """150 tokens: the first call used 100, so the tool call's sampling may use what is
    left (50); its first request used 60, the second is refused, and the Interaction's
    next call is not made (160 >= 150)."""
    definition = Definition(
        "mcp-sample-tokens",
        mcp_servers=[McpServer("faulty", sampling=True)],
        max_total_tokens=150,
    )
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("faulty_sample_twice", {"text": "q"}),
                usage=Usage(input_tokens=90, output_tokens=10),
            ),
            reply.text("first", usage=Usage(input_tokens=50, output_tokens=10)),
            reply.text("never"),
        ]
    )
    run = await _runner(runners, [definition], model, log).start("mcp-sample-tokens", "go")
    with pytest.raises(Exception) as raised:
        await run.result()
    assert getattr(raised.value, "code", None) == LIMIT_TOKENS
    assert "160 tokens" in str(raised.value)
    assert len(model.requests) == 2
    assert [c["tool"] for c in calls(log)] == ["sample_twice", "sampled"]


async def test_mcp_sampling_whose_model_call_is_unknown_is_never_sent_again_the_server_decides(
    runners: list[LocalRunner], log: Path
) -> None:
    """The sampling call raised (its outcome unknown): the model is not called again for
    it, the server gets an MCP error saying so, it counts as a model call (it may have
    run), and the tool call settles with what the server's tool made of it."""
    definition = Definition("mcp-sample-unknown", mcp_servers=[McpServer("faulty", sampling=True)])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_sample", {"text": "hi"})),
            RuntimeError("connection reset mid-call"),
            reply.text("ok"),
        ]
    )
    run = await _runner(runners, [definition], model, log).start("mcp-sample-unknown", "go")
    output = await run.result()
    assert output.text == "ok" and output.model_calls == 3 and len(model.requests) == 3
    assert _result(model).startswith(
        "sample refused by the client: sampling failed: the model call's outcome is unknown ("
    )
    assert _result(model).endswith("it is not sent again")
    assert not run.snapshot().unknown_effects  # the tool call settled: nothing is held
    assert [c["tool"] for c in calls(log)] == ["sample"]


# --- the pure rules ----------------------------------------------------------------


def _state(max_model_calls: int | None, started: int = 1) -> InteractionState:
    return InteractionState(
        process_id="p",
        definition="d",
        digest="x",
        max_model_calls=max_model_calls,
        granted=("exec",),
        next_model_call_seq=started + 1,
    )


RECORD = McpToolRecord(server="faulty", name="sample", tool="faulty_sample")


def test_the_allowance_reserves_for_running_siblings_and_the_settlement_counts_what_was_used() -> (
    None
):
    definition = Definition("d", mcp_servers=[McpServer("faulty", sampling=True)])
    s = _state(max_model_calls=5)  # 1 started, 1 kept: 3 left for sampling
    first = sampling.allowance(definition, s, RECORD, "e1")
    second = sampling.allowance(definition, s, RECORD, "e2")
    third = sampling.allowance(definition, s, RECORD, "e3")
    assert first is not None and second is not None and third is not None
    assert (first.calls, second.calls, third.calls) == (3, 0, 0)
    assert "leaves 0 model call(s)" in second.why
    usage = TokenUsage().add("default", Usage(input_tokens=3, output_tokens=2))
    sampling.settle(s, "e1", Sampled(calls=1, usage=usage))
    assert (s.sampled_calls, s.model_calls, s.usage.total_tokens) == (1, 1, 5)
    assert s.sampling_reserved == {"e2": 0, "e3": 0}
    fourth = sampling.allowance(definition, s, RECORD, "e4")  # 5 - 1 - 1 (sampled) - 1
    assert fourth is not None and fourth.calls == 2


def test_no_allowance_for_a_server_that_may_not_sample_or_a_local_tool() -> None:
    definition = Definition("d", mcp_servers=[McpServer("faulty")])
    s = _state(max_model_calls=None)
    assert sampling.allowance(definition, s, RECORD, "e1") is None
    assert sampling.allowance(definition, s, None, "e1") is None
    assert s.sampling_reserved == {}


def test_the_sampling_declaration_enters_the_digest_only_when_declared() -> None:
    plain = Definition("d", mcp_servers=[McpServer("faulty")])
    assert "sampling" not in McpServer("faulty").declaration()
    assert Definition("d", mcp_servers=[McpServer("faulty", sampling=False)]).digest == plain.digest
    allowed = Definition("d", mcp_servers=[McpServer("faulty", sampling=True)])
    capped = Definition("d", mcp_servers=[McpServer("faulty", sampling=McpSampling(max_tokens=9))])
    assert len({plain.digest, allowed.digest, capped.digest}) == 3


def test_a_person_cannot_answer_a_sampling_wait() -> None:
    from scope_temporal.interaction.tool_call import ToolCallMachine
    from scope_temporal.tools.outcome import InputRequired

    request = ToolEffectRequest(
        definition="d",
        digest="x",
        process_id="p/tool/1/0",
        parent_id="p",
        effect_id="p/1/0",
        ref="p/1/0",
        model_call_seq=1,
        call_index=0,
        call=ToolCall(id="c", name="faulty_sample", arguments="{}"),
        granted=("exec",),
    )
    machine = ToolCallMachine.start(request)
    machine.next_attempt()
    prompt: dict[str, Any] = {"mcp_sampling": {"messages": []}}
    machine.on_outcome(
        InputRequired(prompt=prompt, response_schema=ANSWER_SCHEMA, state=SAMPLING_STATE)
    )
    wait = machine.sampling_wait
    assert wait is not None and machine.status == "running"  # waits for no person
    assert machine.snapshot().pending_tool_inputs == ()
    with pytest.raises(InvalidToolInput, match="the Interaction's model answers it"):
        machine.answer(wait.wait_id, "a1", {"error": "no"})
    assert machine.answer(wait.wait_id, "a1", {"error": "no"}, by_model=True)
    assert machine.phase == "ready"
