"""CONFORMANCE 17-21: what becomes of a call. Invalid arguments are rejected before any
body runs (also when the tool's own schema is invalid); a ToolFailure is a definite failed
result; anything else leaves the call unknown until the host settles it, and
`settle_tool_result` refuses what does not match.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.errors import DefinitionError, SettlementMismatch
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.interaction.tool_call import ToolCallMachine, ToolCallState
from scope_temporal.models import reply
from scope_temporal.settle import settle_model_result, settle_tool_result
from scope_temporal.tools import (
    Failed,
    HostFailure,
    Succeeded,
    ToolFailure,
    Unknown,
    tool,
)
from tests.unit.tool_rounds import (
    WAIT,
    model_of,
    open_round,
    runner_with,
    tool_results_sent,
)

# --- 17: invalid arguments --------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [{"count": "many"}, {}, "not json", "[1, 2]"])
async def test_c17_invalid_arguments_are_rejected_and_the_body_never_runs(arguments: Any) -> None:
    entered: list[int] = []

    @tool(permission="read")
    def count_to(count: int) -> str:
        """Count."""
        entered.append(count)
        return str(count)

    definition = Definition("args", tools=[count_to])
    runner = runner_with(
        definition, [count_to], [reply.tool_calls(("count_to", arguments)), reply.text("ok")]
    )
    run = await runner.start("args", [Message.user("go")])
    await run.result(timeout=WAIT)
    assert entered == []
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and "invalid arguments" in result.content
    assert result.call_id == "call_1"
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.disposition == "rejected"
    assert [p.kind for p in run.snapshot().processes] == ["interaction"]  # no child


def test_c17_invalid_arguments_never_start_a_child_in_the_pure_machine() -> None:
    @tool(permission="read")
    def count_to(count: int) -> str:
        """Count."""
        return str(count)

    definition = Definition("args", tools=[count_to], max_concurrent_tool_calls=2)
    machine, effects = open_round(
        definition, ("count_to", {"count": "x"}), ("count_to", {"count": 3})
    )
    assert [type(e) for e in effects] == [StartToolCall]
    assert effects[0].request.call_index == 1
    slots = machine.state.round.slots  # type: ignore[union-attr]
    assert slots[0].target == "none" and slots[0].disposition == "rejected"
    assert slots[0].process_id is None


# --- 18: ToolFailure ---------------------------------------------------------------------------


async def test_c18_tool_failure_is_a_model_visible_failed_result_and_never_reruns() -> None:
    entries: list[str] = []

    @tool(permission="write")
    def deploy(target: str) -> str:
        """Deploy."""
        entries.append(target)
        raise ToolFailure(f"cannot deploy {target}: quota exceeded")

    definition = Definition("fail", tools=[deploy])
    runner = runner_with(
        definition,
        [deploy],
        [reply.tool_calls(("deploy", {"target": "prod"})), reply.text("sorry")],
    )
    run = await runner.start("fail", [Message.user("go")])
    out = await run.result(timeout=WAIT)
    snap = run.snapshot()
    assert out.model_calls == 2
    assert entries == ["prod"]
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and result.content == "cannot deploy prod: quota exceeded"
    assert snap.settled_results[0].entries[0].disposition == "failed"
    assert snap.unknown_effects == []


def test_c18_a_failed_call_is_not_rerun_after_restoring_either_machine() -> None:
    @tool(permission="write")
    def deploy(target: str) -> str:
        """Deploy."""
        raise ToolFailure("no")

    definition = Definition("fail", tools=[deploy])
    machine, [start] = open_round(definition, ("deploy", {"target": "prod"}))
    child = ToolCallMachine.start(start.request)
    attempt = child.next_attempt()
    assert attempt is not None and attempt.entry == 1
    failed = Failed(result=ToolResult(call_id="call_1", name="deploy", content="no", is_error=True))
    child.on_outcome(failed)
    restored_child = ToolCallMachine(
        ToolCallState.model_validate_json(child.state.model_dump_json())
    )
    assert restored_child.next_attempt() is None
    assert restored_child.outcome == failed
    assert restored_child.snapshot().unknown_effects == ()
    machine.on_call(CallSettled(effect_id=start.request.effect_id, outcome=failed))
    restored = InteractionMachine(
        definition, InteractionState.model_validate_json(machine.state.model_dump_json())
    )
    effects = restored.next_effects()
    assert [type(e) for e in effects] == [CallModel]
    assert effects[0].request.messages[-1].tool_results[0].content == "no"


# --- 19 and 20: unknown tool effects and their resolution ----------------------------------


def raiser(kind: str) -> Any:
    if kind == "exception":
        return RuntimeError("connection reset mid-write")
    return HostFailure("payment API timed out after charging")


@pytest.mark.mapping("always")  # each call a Tool call process: the card's shape
@pytest.mark.parametrize("kind", ["exception", "host_failure"])
async def test_c19_c20_unknown_tool_effect_holds_the_round_until_the_host_resolves(
    kind: str,
) -> None:
    ran: list[str] = []

    @tool(permission="read")
    async def ok(name: str) -> str:
        """Fine."""
        ran.append(name)
        return f"ok {name}"

    @tool(permission="read")
    async def charge(amount: int) -> str:
        """Ambiguous."""
        ran.append("charge")
        raise raiser(kind)

    # every call a Tool call process (the card's mapping): the siblings' ones complete
    definition = Definition(
        "unk", tools=[ok, charge], max_concurrent_tool_calls=3, tool_call_workflows="always"
    )
    runner = runner_with(
        definition,
        [ok, charge],
        [
            reply.tool_calls(
                ("ok", {"name": "a"}), ("charge", {"amount": 5}), ("ok", {"name": "b"})
            ),
            reply.text("finished"),
        ],
    )
    run = await runner.start("unk", [Message.user("go")])
    snap = await run.idle()
    assert snap.status == "waiting"
    [unknown] = snap.unknown_effects
    assert unknown.kind == "tool"
    assert unknown.process_id == "local-1/tool/1/1"
    assert unknown.ref == "local-1/1/1"
    assert unknown.request.call.name == "charge"  # type: ignore[union-attr]
    assert ("timed out" if kind == "host_failure" else "connection reset") in unknown.diagnostic
    assert "tool.execution_failed" in unknown.diagnostic
    assert len(model_of(runner).requests) == 1  # the model waits for the host
    assert sorted(ran) == ["a", "b", "charge"]  # siblings finished
    assert snap.process("local-1/tool/1/0").status == "completed"
    assert snap.process("local-1/tool/1/2").status == "completed"
    assert snap.settled_results == []  # the round has not committed

    await asyncio.sleep(0.02)
    assert len(model_of(runner).requests) == 1

    resolved = ToolResult(call_id="call_2", name="charge", content="charged once (from ledger)")
    await run.resolve(unknown, settle_tool_result(unknown.request, resolved, "succeeded"))  # type: ignore[arg-type]
    out = await run.result(timeout=WAIT)
    assert out.text == "finished" and out.model_calls == 2
    assert [r.content for r in tool_results_sent(runner, 1)] == [
        "ok a",
        "charged once (from ledger)",
        "ok b",
    ]
    assert sorted(ran) == ["a", "b", "charge"]  # nothing settled ran again
    final = run.snapshot()
    assert final.unknown_effects == []
    assert [e.disposition for e in final.settled_results[0].entries] == ["succeeded"] * 3


async def test_c19_timeout_makes_the_call_unknown() -> None:
    @tool(permission="read", timeout=0.01)
    async def slow() -> str:
        """Too slow."""
        await asyncio.sleep(5)
        return "never"

    definition = Definition("slow", tools=[slow])
    runner = runner_with(definition, [slow], [reply.tool_calls(("slow", {})), reply.text("x")])
    run = await runner.start("slow", [Message.user("go")])
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert unknown.kind == "tool" and "tool.timeout" in unknown.diagnostic
    assert len(model_of(runner).requests) == 1
    await run.cancel()


async def test_c20_calls_not_started_before_the_unknown_run_once_after_resolution() -> None:
    ran: list[str] = []

    @tool(permission="write")
    async def step(name: str) -> str:
        """One step."""
        ran.append(name)
        if name == "bad":
            raise RuntimeError("lost")
        return f"did {name}"

    definition = Definition("seq", tools=[step])
    runner = runner_with(
        definition,
        [step],
        [
            reply.tool_calls(
                ("step", {"name": "first"}), ("step", {"name": "bad"}), ("step", {"name": "later"})
            ),
            reply.text("done"),
        ],
    )
    run = await runner.start("seq", [Message.user("go")])
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert ran == ["first", "bad"]  # sequential: "later" waits behind the unknown call
    failed = ToolResult(call_id="call_2", name="step", content="it did not happen", is_error=True)
    await run.resolve(unknown, settle_tool_result(unknown.request, failed, "failed"))  # type: ignore[arg-type]
    await run.result(timeout=WAIT)
    assert ran == ["first", "bad", "later"]
    assert [r.content for r in tool_results_sent(runner, 1)] == [
        "did first",
        "it did not happen",
        "did later",
    ]
    assert [e.disposition for e in run.snapshot().settled_results[0].entries] == [
        "succeeded",
        "failed",
        "succeeded",
    ]


# --- 21: settle_tool_result refuses what does not match ---------------------------------------


def unknown_tool_call(definition: Definition) -> ToolCallMachine:
    _, [start] = open_round(definition, ("act", {}))
    child = ToolCallMachine.start(start.request)
    assert child.next_attempt() is not None
    child.on_outcome(Unknown(code="tool.execution_failed", diagnostic="lost"))
    return child


@tool(permission="exec")
def act() -> str:
    """Act."""
    return "acted"


@tool(permission="read", deferred=True)
def hidden() -> str:
    """Hidden."""
    return "hidden"


def test_c21_settle_tool_result_refuses_a_mismatched_call() -> None:
    child = unknown_tool_call(Definition("d", tools=ToolSet("t", [act], deferred=[hidden])))
    request = child.snapshot().unknown_effects[0].request
    assert request.kind == "tool"
    with pytest.raises(SettlementMismatch, match="answers call"):
        settle_tool_result(
            request, ToolResult(call_id="other", name="act", content="x"), "succeeded"
        )
    with pytest.raises(SettlementMismatch):
        settle_tool_result(
            request, ToolResult(call_id="call_1", name="other", content="x"), "succeeded"
        )
    for disposition, is_error in (("succeeded", True), ("failed", False), ("rejected", False)):
        with pytest.raises(SettlementMismatch, match="disagrees"):
            settle_tool_result(
                request,
                ToolResult(call_id="call_1", name="act", content="x", is_error=is_error),
                disposition,  # type: ignore[arg-type]
            )
    failed = ToolResult(call_id="call_1", name="act", content="x", is_error=True)
    with pytest.raises(SettlementMismatch, match="advertise"):
        settle_tool_result(request, failed, "failed", advertised=["hidden"])
    with pytest.raises(SettlementMismatch):
        settle_tool_result(
            request, ToolResult(call_id="call_1", name="act", content="x"), "succeeded", ["ghost"]
        )
    with pytest.raises(SettlementMismatch):
        settle_tool_result(
            request, ToolResult(call_id="call_1", name="act", content="x"), "succeeded", ["act"]
        )
    # the matching one is accepted
    ok = settle_tool_result(
        request, ToolResult(call_id="call_1", name="act", content="x"), "succeeded", ["hidden"]
    )
    assert isinstance(ok.outcome, Succeeded) and ok.outcome.advertised == ("hidden",)
    assert child.snapshot().unknown_effects != ()


def test_c21_tool_call_machine_refuses_a_settlement_for_another_definitions_request() -> None:
    child = unknown_tool_call(Definition("d", tools=[act]))
    own = child.state.request
    before = child.state
    other_child = unknown_tool_call(Definition("other", tools=[act]))
    foreign = other_child.state.request
    assert foreign.definition == "other" and foreign.call == own.call
    result = ToolResult(call_id="call_1", name="act", content="x")
    with pytest.raises(SettlementMismatch):
        child.check_resolution(settle_tool_result(foreign, result, "succeeded"))
    with pytest.raises(SettlementMismatch):
        child.resolve(settle_tool_result(foreign, result, "succeeded"))
    altered = own.model_copy(update={"effect_id": own.effect_id + "x"})
    with pytest.raises(SettlementMismatch):
        child.resolve(settle_tool_result(altered, result, "succeeded"))
    assert child.state == before
    child.resolve(settle_tool_result(own, result, "succeeded"))
    assert child.outcome is not None and child.outcome.result.content == "x"
    with pytest.raises(SettlementMismatch):  # settled once: a second one is refused
        child.resolve(settle_tool_result(own, result, "succeeded"))


def test_c21_interaction_refuses_a_model_settlement_for_another_definition() -> None:
    mine = InteractionMachine.start(Definition("mine"), "p", [Message.user("go")])
    theirs = InteractionMachine.start(Definition("theirs"), "p", [Message.user("go")])
    for machine in (mine, theirs):
        [effect] = machine.next_effects()
        machine.on_model(ModelUnknown(effect_id=effect.request.effect_id, diagnostic="lost"))
    their_request = theirs.snapshot().unknown_effects[0].request
    assert isinstance(their_request, type(mine.snapshot().unknown_effects[0].request))
    settlement = settle_model_result(their_request, reply.text("x"), [Message.user("go")])  # type: ignore[arg-type]
    before = mine.state
    with pytest.raises(SettlementMismatch):
        mine.resolve(settlement)
    assert mine.state == before
    assert isinstance(settlement, ModelSettlement)


async def test_c21_local_run_refuses_a_mismatched_tool_settlement_and_keeps_waiting() -> None:
    @tool(permission="read")
    async def flaky() -> str:
        """Flaky."""
        raise RuntimeError("lost")

    definition = Definition("flaky", tools=[flaky])
    runner = runner_with(definition, [flaky], [reply.tool_calls(("flaky", {})), reply.text("x")])
    run = await runner.start("flaky", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    request = unknown.request.model_copy(update={"definition": "someone-else"})
    result = ToolResult(call_id="call_1", name="flaky", content="x")
    with pytest.raises(SettlementMismatch):
        await run.resolve(unknown, settle_tool_result(request, result, "succeeded"))  # type: ignore[arg-type]
    snap = run.snapshot()
    assert [u.effect_id for u in snap.unknown_effects] == [unknown.effect_id]
    assert len(model_of(runner).requests) == 1
    await run.cancel()


# --- a tool whose own schema is invalid -------------------------------------------------------


async def test_c17_a_tool_with_an_invalid_schema_is_refused_and_never_wedges_the_loop() -> None:
    @tool(permission="read", schema={"type": "object", "properties": {"x": {"type": 5}}})
    def odd(x: int = 0) -> str:
        """Its schema passes the decorator's structural checks but is not valid JSON schema."""
        return "odd"

    with pytest.raises(DefinitionError, match="invalid JSON schema"):
        Definition("odd", tools=[odd])

    # Defence in depth: were a broken schema to reach the core anyway, the model's
    # response is consumed and the Interaction fails definitely with the schema code.
    @tool(permission="read")
    def fine(x: int = 0) -> str:
        """A valid schema."""
        return "ok"

    definition = Definition("odd", tools=[fine])
    broken = definition.tools.tools[0].model_copy(update={"parameters": odd.spec.parameters})
    object.__setattr__(definition.tools, "tools", (broken,))  # bypass: ToolSets are frozen
    machine = InteractionMachine.start(definition, "p", [Message.user("go")])
    [call_model] = machine.next_effects()
    response = reply.tool_calls((broken.name, {"x": 1}))
    machine.on_model(ModelResponded(effect_id=call_model.request.effect_id, response=response))
    assert machine.snapshot().model_calls == 1
    assert machine.next_effects() == []
    assert machine.failure is not None and machine.failure.code == "tool.schema_invalid"
