"""CONFORMANCE 38-41 (delegates) and 48 (capabilities), through LocalRunner and the pure machine."""

from __future__ import annotations

from typing import Any

import pytest

from scope_temporal.chat import FinishReason, Message, Response, ToolResult
from scope_temporal.definition import Definition, Delegate, ToolSet
from scope_temporal.errors import DefinitionError
from scope_temporal.interaction.effects import (
    CallModel,
    DelegateSettled,
    ModelResponded,
    StartDelegate,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ModelRequest, ScriptedModel, reply
from scope_temporal.outputs import CompletionCandidate, CompletionDecision, Failure, Output
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import tool

WAIT = 2.0

ran: list[str] = []


@tool(permission="read")
def lookup(query: str) -> str:
    """Look something up."""
    ran.append(f"lookup {query}")
    return f"found {query}"


@tool(permission="write")
def save(text: str) -> str:
    """Save."""
    ran.append(f"save {text}")
    return f"saved {text}"


@tool(permission="exec")
def shell(cmd: str) -> str:
    """Run a command."""
    ran.append(f"shell {cmd}")
    return f"ran {cmd}"


def lookups_then_answer(needed: int) -> Any:
    """A child model that calls `lookup` until it has `needed` results, then answers."""

    def respond(request: ModelRequest) -> Response:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < needed:
            return reply.tool_calls(("lookup", {"query": f"q{done}"}))
        task = next(m.text for m in request.messages if m.role == "user")
        return reply.text(f"summary of {task}")

    return respond


def model(runner: LocalRunner, name: str) -> ScriptedModel:
    found = runner.models[name]
    assert isinstance(found, ScriptedModel)
    return found


def last_results(runner: LocalRunner, request: int, name: str = "default") -> list[ToolResult]:
    messages = model(runner, name).requests[request].messages
    return [m for m in messages if m.role == "tool"][-1].tool_results


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def summarizer(**options: Any) -> Definition:
    return Definition(
        "summarizer", model="child", tools=[lookup, save, shell], max_model_calls=10, **options
    )


# --- 38 -------------------------------------------------------------------------------------------


async def test_c38_mixed_batch_keeps_call_order() -> None:
    parent = Definition(
        "parent",
        tools=[lookup],
        delegates=[Delegate("summarize", "Summarise", definition="summarizer")],
        max_concurrent_tool_calls=2,
    )
    runner = LocalRunner(
        definitions=[parent, summarizer()],
        tools=[lookup, save, shell],
        models={
            "default": ScriptedModel(
                [
                    reply.tool_calls(
                        ("lookup", {"query": "a"}),
                        ("summarize", {"task": "the report"}),
                        ("lookup", {"query": "b"}),
                    ),
                    reply.text("all done"),
                ]
            ),
            "child": ScriptedModel(lookups_then_answer(1)),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    out = await run.result(timeout=WAIT)
    assert out.text == "all done"
    results = last_results(runner, 1)
    assert [r.call_id for r in results] == ["call_1", "call_2", "call_3"]
    assert [r.content for r in results] == ["found a", "summary of the report", "found b"]
    entries = run.snapshot().settled_results
    parent_round = next(r for r in entries if r.process_id == run.id)
    assert [e.disposition for e in parent_round.entries] == ["succeeded"] * 3
    assert [e.call.name for e in parent_round.entries] == ["lookup", "summarize", "lookup"]


async def test_c38_each_delegate_child_gets_its_configured_budget() -> None:
    parent = Definition(
        "parent",
        delegates=[
            Delegate("quick", "One call only", definition="summarizer", max_model_calls=1),
            Delegate("thorough", "Three calls", definition="summarizer", max_model_calls=3),
        ],
    )
    runner = LocalRunner(
        definitions=[parent, summarizer()],
        tools=[lookup, save, shell],
        models={
            "default": ScriptedModel(
                [
                    reply.tool_calls(("quick", {"task": "x"}), ("thorough", {"task": "y"})),
                    reply.text("ok"),
                ]
            ),
            # needs 3 model calls (two lookups, then the answer)
            "child": ScriptedModel(lookups_then_answer(2)),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    await run.result(timeout=WAIT)
    quick, thorough = last_results(runner, 1)
    assert quick.is_error and "interaction.limit.model_calls" in quick.content
    assert not thorough.is_error and thorough.content == "summary of y"
    snap = run.snapshot()
    quick_child = snap.process(f"{run.id}/delegate/1/0")
    thorough_child = snap.process(f"{run.id}/delegate/1/1")
    assert quick_child.model_calls == 1
    assert quick_child.failure is not None
    assert quick_child.failure.code == "interaction.limit.model_calls"
    assert thorough_child.model_calls == 3 and thorough_child.status == "completed"


def test_c38_start_delegate_carries_the_budget_and_the_child_never_exceeds_its_own() -> None:
    parent = Definition(
        "parent",
        delegates=[Delegate("d", "d", definition="summarizer", max_model_calls=4)],
    )
    machine = InteractionMachine.start(parent, "p", [Message.user("go")])
    [call_model] = machine.next_effects()
    machine.on_model(
        ModelResponded(
            effect_id=call_model.request.effect_id,
            response=reply.tool_calls(("d", {"task": "t"})),
        )
    )
    [effect] = machine.next_effects()
    assert isinstance(effect, StartDelegate)
    assert effect.max_model_calls == 4
    assert effect.process_id == "p/delegate/1/0" and effect.definition == "summarizer"
    assert effect.messages == (Message.user("t"),)
    child = InteractionMachine.start(
        summarizer(), effect.process_id, list(effect.messages), max_model_calls=4
    )
    assert child.state.max_model_calls == 4
    wider = InteractionMachine.start(summarizer(), "c", [Message.user("t")], max_model_calls=50)
    assert wider.state.max_model_calls == 10  # a budget never widens the child's own limit


# --- 39 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [{"wrong": 1}, {"task": 5}, {}, "not json"])
async def test_c39_invalid_delegate_arguments_are_model_visible_and_start_no_child(
    arguments: Any,
) -> None:
    parent = Definition(
        "parent", delegates=[Delegate("summarize", "Summarise", definition="summarizer")]
    )
    runner = LocalRunner(
        definitions=[parent, summarizer()],
        tools=[lookup, save, shell],
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("summarize", arguments)), reply.text("ok")]
            ),
            "child": ScriptedModel(lookups_then_answer(0)),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    await run.result(timeout=WAIT)
    [result] = last_results(runner, 1)
    assert result.is_error and "invalid arguments" in result.content
    snap = run.snapshot()
    assert [p.process_id for p in snap.processes] == [run.id]
    assert snap.settled_results[0].entries[0].disposition == "rejected"
    assert model(runner, "child").requests == []


async def test_c39_a_refused_child_start_is_model_visible_and_starts_no_child() -> None:
    parent = Definition(
        "parent",
        tools=[lookup],
        delegates=[Delegate("ghost", "Not registered", definition="missing")],
        max_concurrent_tool_calls=2,
    )
    runner = LocalRunner(
        definitions=[parent],
        tools=[lookup],
        models={
            "default": ScriptedModel(
                [
                    reply.tool_calls(("ghost", {"task": "t"}), ("lookup", {"query": "q"})),
                    reply.text("ok"),
                ]
            )
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    out = await run.result(timeout=WAIT)
    assert out.text == "ok"
    ghost, found = last_results(runner, 1)
    assert ghost.is_error and "missing" in ghost.content
    assert found.content == "found q"
    snap = run.snapshot()
    assert all("/delegate/" not in p.process_id for p in snap.processes)
    assert [e.disposition for e in snap.settled_results[0].entries] == ["rejected", "succeeded"]


# --- 40 -------------------------------------------------------------------------------------------


def test_c40_delegate_name_collisions_are_rejected_when_built() -> None:
    with pytest.raises(DefinitionError, match="collides"):
        Definition("p", tools=[lookup], delegates=[Delegate("lookup", "x", definition="c")])
    with pytest.raises(DefinitionError, match="collides"):
        Definition(
            "p",
            tools=ToolSet("t", [], deferred=[lookup]),
            delegates=[Delegate("lookup", "x", definition="c")],
        )
    with pytest.raises(DefinitionError, match="two delegates"):
        Definition(
            "p",
            delegates=[Delegate("d", "x", definition="c"), Delegate("d", "y", definition="e")],
        )
    # distinct names build fine
    built = Definition(
        "p",
        tools=[lookup],
        delegates=[Delegate("d", "x", definition="c"), Delegate("e", "y", definition="c")],
    )
    assert [d.name for d in built.delegates] == ["d", "e"]


# --- 41 -------------------------------------------------------------------------------------------


async def test_c41_a_delegate_failure_is_model_visible() -> None:
    parent = Definition(
        "parent", delegates=[Delegate("summarize", "Summarise", definition="summarizer")]
    )
    broken = Response(message=Message.assistant(), finish_reason=FinishReason.stop)
    runner = LocalRunner(
        definitions=[parent, summarizer()],
        tools=[lookup, save, shell],
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("summarize", {"task": "t"})), reply.text("recovered")]
            ),
            "child": ScriptedModel([broken]),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    out = await run.result(timeout=WAIT)
    assert out.text == "recovered" and out.artifacts == ()
    [result] = last_results(runner, 1)
    assert result.is_error and "interaction.model.invalid_response" in result.content
    snap = run.snapshot()
    assert snap.settled_results[0].entries[0].disposition == "failed"
    assert snap.artifacts == ()


async def test_c41_a_delegate_success_is_an_artifact_for_the_validator_and_the_output() -> None:
    seen: list[CompletionCandidate] = []

    def needs_artifact(candidate: CompletionCandidate) -> CompletionDecision:
        seen.append(candidate)
        if not candidate.artifacts:
            return CompletionDecision.reject("Delegate first.")
        return CompletionDecision.accept()

    schema = {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    }
    child = Definition("summarizer", model="child", output_schema=schema)
    parent = Definition(
        "parent",
        delegates=[Delegate("summarize", "Summarise", definition="summarizer")],
        completion_validator=needs_artifact,
    )
    runner = LocalRunner(
        definitions=[parent, child],
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("summarize", {"task": "t"})), reply.text("here it is")]
            ),
            "child": ScriptedModel([reply.text('{"summary": "short"}')]),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    out = await run.result(timeout=WAIT)
    [artifact] = out.artifacts
    assert artifact.delegate == "summarize"
    assert artifact.ref == f"{run.id}/1/0"
    assert artifact.process_id == f"{run.id}/delegate/1/0"
    assert artifact.text == '{"summary": "short"}'
    assert artifact.data == {"summary": "short"}
    assert [c.artifacts for c in seen] == [(artifact,)]
    assert run.snapshot().artifacts == (artifact,)
    [result] = last_results(runner, 1)
    assert result.content == '{"summary": "short"}' and not result.is_error


def test_c41_delegate_settlements_on_the_pure_machine() -> None:
    parent = Definition("parent", delegates=[Delegate("d", "d", definition="c")])
    machine = InteractionMachine.start(parent, "p", [Message.user("go")])
    [call_model] = machine.next_effects()
    machine.on_model(
        ModelResponded(
            effect_id=call_model.request.effect_id,
            response=reply.tool_calls(("d", {"task": "a"}), ("d", {"task": "b"})),
        )
    )
    first, second = machine.next_effects()
    assert isinstance(first, StartDelegate) and isinstance(second, StartDelegate)
    assert [d.name for d in machine.snapshot().active_delegates] == ["d", "d"]
    machine.on_call(
        DelegateSettled(
            effect_id=second.effect_id,
            failure=Failure.of("interaction.limit.model_calls", "out of budget"),
        )
    )
    assert machine.next_effects() == []  # a delegate batch commits only when complete
    machine.on_call(
        DelegateSettled(
            effect_id=first.effect_id,
            output=Output(source="model_response", model_response=reply.text("A"), model_calls=1),
        )
    )
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    results = effect.request.messages[-1].tool_results
    assert (results[0].content, results[0].is_error) == ("A", False)
    assert results[1].is_error and "out of budget" in results[1].content
    assert [a.text for a in machine.snapshot().artifacts] == ["A"]
    entries = machine.snapshot().settled_results[0].entries
    assert [e.disposition for e in entries] == ["succeeded", "failed"]


# --- 48 -------------------------------------------------------------------------------------------


async def test_c48_a_tool_outside_the_granted_capabilities_is_not_authorized() -> None:
    definition = Definition("readonly", tools=[lookup, save], capabilities={"read"})
    script = ScriptedModel(
        [
            reply.tool_calls(("save", {"text": "x"}), ("lookup", {"query": "q"})),
            reply.text("ok"),
        ]
    )
    runner = LocalRunner(definitions=[definition], tools=[lookup, save], models={"default": script})
    run = await runner.start("readonly", [Message.user("go")])
    await run.result(timeout=WAIT)
    denied, allowed = last_results(runner, 1)
    assert denied.is_error and "not authorized" in denied.content and "write" in denied.content
    assert allowed.content == "found q"
    assert ran == ["lookup q"]  # the body of `save` never ran
    snap = run.snapshot()
    assert [e.disposition for e in snap.settled_results[0].entries] == ["rejected", "succeeded"]
    assert f"{run.id}/tool/1/0" not in [p.process_id for p in snap.processes]


def test_c48_a_delegate_may_not_hold_more_than_its_parent() -> None:
    with pytest.raises(DefinitionError, match="narrow"):
        Definition(
            "p",
            capabilities={"read"},
            delegates=[Delegate("d", "d", definition="c", capabilities={"read", "write"})],
        )
    with pytest.raises(DefinitionError):
        Delegate("d", "d", definition="c", capabilities={"root"})
    Definition(
        "p",
        capabilities={"read", "write"},
        delegates=[Delegate("d", "d", definition="c", capabilities={"read"})],
    )


@pytest.mark.parametrize(
    ("parent_caps", "delegate_caps", "expected"),
    [
        ({"read", "write", "exec"}, {"read"}, ("read",)),
        ({"read", "write"}, None, ("read", "write")),
        ({"read"}, None, ("read",)),
    ],
)
def test_c48_start_delegate_carries_the_narrowed_grant(
    parent_caps: set[str], delegate_caps: set[str] | None, expected: tuple[str, ...]
) -> None:
    parent = Definition(
        "p",
        capabilities=parent_caps,
        delegates=[Delegate("d", "d", definition="c", capabilities=delegate_caps)],
    )
    machine = InteractionMachine.start(parent, "p", [Message.user("go")])
    [call_model] = machine.next_effects()
    machine.on_model(
        ModelResponded(
            effect_id=call_model.request.effect_id,
            response=reply.tool_calls(("d", {"task": "t"})),
        )
    )
    [effect] = machine.next_effects()
    assert isinstance(effect, StartDelegate)
    assert effect.capabilities == expected
    child = InteractionMachine.start(
        summarizer(), "c", [Message.user("t")], capabilities=effect.capabilities
    )
    assert child.state.granted == expected


@pytest.mark.parametrize(
    ("parent_caps", "delegate_caps", "denied"),
    [
        ({"read", "write", "exec"}, {"read"}, ["save", "shell"]),
        ({"read", "write"}, None, ["shell"]),
    ],
)
async def test_c48_the_child_runs_with_the_narrowed_grant(
    parent_caps: set[str], delegate_caps: set[str] | None, denied: list[str]
) -> None:
    parent = Definition(
        "parent",
        capabilities=parent_caps,
        delegates=[Delegate("worker", "w", definition="summarizer", capabilities=delegate_caps)],
    )

    def child_model(request: ModelRequest) -> Response:
        if not any(m.role == "tool" for m in request.messages):
            return reply.tool_calls(
                ("lookup", {"query": "q"}), ("save", {"text": "t"}), ("shell", {"cmd": "c"})
            )
        results = request.messages[-1].tool_results
        return reply.text(";".join(f"{r.name}:{r.is_error}" for r in results))

    runner = LocalRunner(
        definitions=[parent, summarizer()],
        tools=[lookup, save, shell],
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("worker", {"task": "t"})), reply.text("ok")]
            ),
            "child": ScriptedModel(child_model),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    await run.result(timeout=WAIT)
    child_results = model(runner, "child").requests[1].messages[-1].tool_results
    refused = [r.name for r in child_results if r.is_error]
    assert refused == denied
    assert all("not authorized" in r.content for r in child_results if r.is_error)
    allowed = {"lookup": "lookup q", "save": "save t", "shell": "shell c"}
    assert sorted(ran) == sorted(v for k, v in allowed.items() if k not in denied)


def test_c48_not_authorized_starts_no_tool_child_in_the_pure_machine() -> None:
    definition = Definition("ro", tools=[lookup, save], capabilities={"read"})
    machine = InteractionMachine.start(definition, "p", [Message.user("go")])
    [call_model] = machine.next_effects()
    machine.on_model(
        ModelResponded(
            effect_id=call_model.request.effect_id,
            response=reply.tool_calls(("save", {"text": "x"}), ("lookup", {"query": "q"})),
        )
    )
    effects = machine.next_effects()
    assert [type(e) for e in effects] == [StartToolCall]
    assert effects[0].request.call.name == "lookup"
    assert effects[0].request.granted == ("read",)
