"""CONFORMANCE 1-12 on the pure core (LocalRunner drives the same state machine)."""

from __future__ import annotations

import asyncio

import pytest

from scope_temporal import ToolSet
from scope_temporal.chat import FinishReason, Message, Response, ToolCall
from scope_temporal.definition import Definition
from scope_temporal.errors import DefinitionError, InteractionFailed
from scope_temporal.interaction.effects import CallModel, ModelResponded
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ModelRequest, ScriptedModel, reply
from scope_temporal.settle import settle_model_result
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import tool

calls: list[str] = []


@tool(permission="read")
def lookup(query: str) -> str:
    """Look something up."""
    calls.append(query)
    return f"found {query}"


@tool(permission="read", deferred=True)
def secret_tool() -> str:
    """Hidden until advertised."""
    return "secret"


def runner_for(definition: Definition, script: list[object], *more: Definition) -> LocalRunner:
    calls.clear()
    return LocalRunner(
        definitions=[definition, *more],
        tools=[lookup, secret_tool],
        models={"default": ScriptedModel(script)},  # type: ignore[arg-type]
    )


def model_of(runner: LocalRunner) -> ScriptedModel:
    model = runner.models["default"]
    assert isinstance(model, ScriptedModel)
    return model


async def test_c1_text_reply_completes_with_one_model_call_and_no_tools() -> None:
    runner = runner_for(Definition("plain"), [reply.text("hello")])
    run = await runner.start("plain", [Message.user("hi")])
    out = await run.result(timeout=5)
    assert out.source == "model_response"
    assert out.model_calls == 1
    assert out.text == "hello"
    assert model_of(runner).requests[0].tools == ()


async def test_c2_one_tool_round_sends_call_and_result_to_the_second_request() -> None:
    definition = Definition("one", tools=[lookup])
    runner = runner_for(
        definition, [reply.tool_calls(("lookup", {"query": "x"})), reply.text("ok")]
    )
    out = await (await runner.start("one", [Message.user("go")])).result(timeout=5)
    second = model_of(runner).requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool"]
    result = second[2].tool_results[0]
    assert (result.call_id, result.name, result.content) == ("call_1", "lookup", "found x")
    assert out.model_calls == 2


async def test_c3_manifest_lists_tools_then_delegates_then_advertised_deferred() -> None:
    from scope_temporal import Delegate

    @tool(permission="read")
    def unlock() -> str:
        """Advertise the secret tool."""
        from scope_temporal.tools import advertise_tools

        advertise_tools("secret_tool")
        return "unlocked"

    definition = Definition(
        "manifest",
        tools=ToolSet("t", [lookup, unlock], deferred=[secret_tool]),
        delegates=[Delegate("helper", "helps", definition="plain")],
    )
    runner = LocalRunner(
        definitions=[definition, Definition("plain")],
        tools=[lookup, unlock, secret_tool],
        models={"default": ScriptedModel([reply.tool_calls(("unlock", {})), reply.text("done")])},
    )
    await (await runner.start("manifest", [Message.user("go")])).result(timeout=5)
    requests = model_of(runner).requests
    assert [t.name for t in requests[0].tools] == ["lookup", "unlock", "helper"]
    assert [t.name for t in requests[1].tools] == ["lookup", "unlock", "helper", "secret_tool"]


async def test_c4_length_with_tool_calls_runs_nothing_and_calls_the_model_again() -> None:
    definition = Definition("len", tools=[lookup])
    runner = runner_for(
        definition,
        [reply.length(tool_calls=[("lookup", {"query": "x"})]), reply.text("fine")],
    )
    out = await (await runner.start("len", [Message.user("go")])).result(timeout=5)
    assert calls == []
    result = model_of(runner).requests[1].messages[-1].tool_results[0]
    assert result.is_error and "not executed" in result.content and "token limit" in result.content
    assert out.model_calls == 2


@pytest.mark.parametrize("steer_pending", [False, True], ids=["no_steer", "steer_pending"])
@pytest.mark.parametrize(
    "finish",
    [FinishReason.stop, FinishReason.content_filter, FinishReason.refusal, FinishReason.other],
)
async def test_c5_tool_calls_with_other_finish_fail_without_running(
    finish: FinishReason, steer_pending: bool
) -> None:
    in_call = asyncio.Event()
    answer = asyncio.Event()

    async def respond(request: ModelRequest) -> Response:
        in_call.set()
        await answer.wait()
        return reply.response(tool_calls=[("lookup", {"query": "x"})], finish_reason=finish)

    calls.clear()
    model = ScriptedModel(respond)
    runner = LocalRunner(
        definitions=[Definition("fin", tools=[lookup])], tools=[lookup], models={"default": model}
    )
    run = await runner.start("fin", [Message.user("go")])
    await asyncio.wait_for(in_call.wait(), 5)
    if steer_pending:  # arrives during the call, so it is still pending when the reply lands
        assert await run.steer("s1", Message.user("hurry"))
    answer.set()
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=5)
    assert failed.value.code == "interaction.model.tool_calls_not_completed"
    assert calls == []
    assert len(model.requests) == 1  # the pending steer did not bring another model call
    root = run.snapshot().root
    assert root.pending_signals == (("s1",) if steer_pending else ())
    assert root.applied_signals == ()


@pytest.mark.parametrize("case", ["duplicate_ids", "empty_reply"])
async def test_c6_invalid_response_fails_and_the_model_is_not_called_again(case: str) -> None:
    definition = Definition("inv", tools=[lookup])
    bad = (
        reply.tool_calls(("lookup", {"query": "a"}, "same"), ("lookup", {"query": "b"}, "same"))
        if case == "duplicate_ids"
        else Response(message=Message.assistant(), finish_reason=FinishReason.stop)
    )
    runner = runner_for(definition, [bad, reply.text("never")])
    run = await runner.start("inv", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=5)
    assert failed.value.code == "interaction.model.invalid_response"
    assert len(model_of(runner).requests) == 1
    assert calls == []
    assert all(not m.tool_calls for m in run.snapshot().context)


async def test_c7_text_reply_cut_by_length_still_completes() -> None:
    runner = runner_for(Definition("cut"), [reply.length(text="partial")])
    out = await (await runner.start("cut", [Message.user("go")])).result(timeout=5)
    assert out.text == "partial"


async def test_c8_max_model_calls_is_a_hard_bound() -> None:
    definition = Definition("bound", tools=[lookup], max_model_calls=1)
    runner = runner_for(definition, [reply.tool_calls(("lookup", {"query": "x"}))] * 3)
    with pytest.raises(InteractionFailed) as failed:
        await (await runner.start("bound", [Message.user("go")])).result(timeout=5)
    assert failed.value.code == "interaction.limit.model_calls"
    assert failed.value.kind == "quota"
    assert calls == ["x"]
    with pytest.raises(DefinitionError):
        Definition("zero", max_model_calls=0)
    unlimited = Definition("unlimited", tools=[lookup], max_model_calls=None)
    script = [reply.tool_calls(("lookup", {"query": str(i)})) for i in range(30)] + [
        reply.text("ok")
    ]
    out = await (
        await runner_for(unlimited, script).start("unlimited", [Message.user("go")])
    ).result(timeout=10)
    assert out.model_calls == 31


async def test_c9_model_exception_leaves_the_effect_unknown_and_is_not_retried() -> None:
    runner = runner_for(Definition("amb"), [TimeoutError("lost"), reply.text("never")])
    run = await runner.start("amb", [Message.user("go")])
    snap = await run.idle()
    assert snap.status == "waiting"
    [unknown] = snap.unknown_effects
    assert unknown.kind == "model" and "lost" in unknown.diagnostic
    assert len(model_of(runner).requests) == 1


async def test_c10_resolving_a_model_unknown_continues_without_calling_the_model() -> None:
    runner = runner_for(Definition("res"), [RuntimeError("transport"), reply.text("second")])
    run = await runner.start("res", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    reduced = [Message.user("summary of everything")]
    settlement = settle_model_result(unknown.request, reply.text("recovered"), reduced)
    await run.resolve(unknown, settlement)
    out = await run.result(timeout=5)
    assert out.text == "recovered"
    assert out.model_calls == 1
    assert len(model_of(runner).requests) == 1
    assert [m.text for m in run.snapshot().context] == ["summary of everything", "recovered"]


async def test_c11_model_preparation_failure_fails_host_with_zero_model_calls() -> None:
    definition = Definition("prep", context_reducer="shrink")

    def broken(messages: list[Message]) -> list[Message]:
        raise ValueError("cannot reduce")

    runner = LocalRunner(
        definitions=[definition],
        models={"default": ScriptedModel([reply.text("never")])},
        reducers={"shrink": broken},
    )
    run = await runner.start("prep", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=5)
    assert failed.value.code == "interaction.host.failed"
    assert run.snapshot().model_calls == 0
    assert model_of(runner).requests == []


def test_c11_advertised_tool_not_bound_is_a_preparation_failure() -> None:
    definition = Definition("prep2")
    machine = InteractionMachine.start(definition, "p", [Message.user("go")])
    state = machine.state
    state.advertised.append("ghost")
    restored = InteractionMachine(definition, state)
    assert restored.next_effects() == []
    assert restored.failure is not None and restored.failure.code == "interaction.host.failed"
    assert restored.snapshot().model_calls == 0


async def test_c12_unknown_tool_name_gets_not_available_and_no_child() -> None:
    definition = Definition("na", tools=[lookup])
    runner = runner_for(definition, [reply.tool_calls(("nope", {})), reply.text("ok")])
    run = await runner.start("na", [Message.user("go")])
    await run.result(timeout=5)
    result = model_of(runner).requests[1].messages[-1].tool_results[0]
    assert result.is_error and "not available" in result.content
    assert [p.kind for p in run.snapshot().processes] == ["interaction"]
    assert run.snapshot().settled_results[0].entries[0].disposition == "rejected"


def test_core_refuses_a_settlement_for_an_effect_that_is_not_pending() -> None:
    from scope_temporal.errors import ProtocolError

    machine = InteractionMachine.start(Definition("p"), "p", [Message.user("go")])
    before = machine.state
    with pytest.raises(ProtocolError):
        machine.on_model(ModelResponded(effect_id="p/model/1", response=reply.text("x")))
    assert machine.state == before
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    with pytest.raises(ProtocolError):
        machine.on_model(ModelResponded(effect_id="other", response=reply.text("x")))
    machine.on_model(ModelResponded(effect_id=effect.request.effect_id, response=reply.text("x")))
    assert machine.output is not None
    with pytest.raises(ProtocolError):
        machine.on_model(
            ModelResponded(effect_id=effect.request.effect_id, response=reply.text("x"))
        )
    assert ToolCall(id="a", name="b").arguments == "{}"
