"""CONFORMANCE 25 (what only the host sees), 49 (observers) and 50 (context reducer), plus how
host-side failures end a run."""

from __future__ import annotations

from typing import Any

import pytest

from scope_temporal.chat import Message
from scope_temporal.definition import Definition
from scope_temporal.errors import InteractionFailed
from scope_temporal.interaction.effects import CallModel, ModelResponded
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.outputs import CompletionCandidate, CompletionDecision
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import ToolFailure, ToolOutput, tool

WAIT = 2.0
EVENTS = ("model_started", "model_settled", "tool_started", "tool_settled")


@tool(permission="read")
def lookup(query: str) -> str:
    """Look up."""
    return f"found {query}"


@tool(permission="write")
def refuse(x: str) -> str:
    """Always fails definitely."""
    raise ToolFailure(f"refused {x}")


class Raising:
    """Every callback raises (sync and async alike)."""

    def model_started(self, request: Any) -> None:
        raise RuntimeError("observer bug: model_started")

    async def model_settled(self, request: Any, outcome: Any) -> None:
        raise ValueError("observer bug: model_settled")

    def tool_started(self, invocation: Any) -> None:
        raise KeyError("tool_started")

    async def tool_settled(self, invocation: Any, outcome: Any) -> None:
        raise RuntimeError("observer bug: tool_settled")


class Recording:
    def __init__(self) -> None:
        self.events: list[str] = []

    def model_started(self, request: Any) -> None:
        self.events.append("model_started")

    def model_settled(self, request: Any, outcome: Any) -> None:
        self.events.append(f"model_settled:{outcome.kind}")

    def tool_started(self, invocation: Any) -> None:
        self.events.append(f"tool_started:{invocation.call.name}")

    def tool_settled(self, invocation: Any, outcome: Any) -> None:
        self.events.append(f"tool_settled:{outcome.kind}")


SCRIPT = [
    reply.tool_calls(("lookup", {"query": "q"}), ("refuse", {"x": "y"})),
    reply.text("done"),
]


async def run_with(observers: list[Any]) -> tuple[LocalRunner, Any]:
    definition = Definition("obs", tools=[lookup, refuse])
    runner = LocalRunner(
        definitions=[definition],
        tools=[lookup, refuse],
        models={"default": ScriptedModel(list(SCRIPT))},
        observers=observers,
    )
    run = await runner.start("obs", [Message.user("go")], id="obs-run")
    await run.result(timeout=WAIT)
    return runner, run


# --- 49 -------------------------------------------------------------------------------------------


@tool(permission="read")
def report(rows: int, silent: bool) -> ToolOutput:
    """A report with host-only extras."""
    return ToolOutput(
        f"{rows} rows found",
        for_user={"table": "HOST-ONLY-TABLE", "rows": list(range(rows))},
        ref="HOST-ONLY-REF",
        metadata={"source": "HOST-ONLY-META"},
        silent=silent,
    )


async def test_c25_tool_output_extras_are_in_the_snapshot_and_never_in_the_model_context() -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("report", {"rows": 2, "silent": False})),
            reply.tool_calls(("report", {"rows": 3, "silent": True})),
            reply.text("done"),
        ]
    )
    runner = LocalRunner(
        definitions=[Definition("reports", tools=[report])],
        tools=[report],
        models={"default": model},
    )
    run = await runner.start("reports", [Message.user("go")])
    await run.result(timeout=WAIT)
    snap = run.snapshot()
    [loud], [quiet] = (r.entries for r in snap.root.settled_results)
    for entry, rows in ((loud, 2), (quiet, 3)):
        assert entry.for_user == {"table": "HOST-ONLY-TABLE", "rows": list(range(rows))}
        assert entry.ref == "HOST-ONLY-REF"
        assert entry.metadata == {"source": "HOST-ONLY-META"}
    assert loud.result.content == "2 rows found"
    assert quiet.result.content == "Done. The output was delivered to the user."
    sent = [m.model_dump_json() for m in model.requests[2].messages]
    context = [m.model_dump_json() for m in snap.root.context]
    for seen_by_the_model in (sent, context):
        text = "\n".join(seen_by_the_model)
        assert "2 rows found" in text and "3 rows found" not in text  # silent: an ack
        assert "HOST-ONLY" not in text


async def test_c49_a_raising_observer_never_changes_a_settlement_and_is_counted() -> None:
    _, baseline = await run_with([])
    recording = Recording()
    runner, run = await run_with([Raising(), recording])
    assert run.snapshot().root.model_dump_json() == baseline.snapshot().root.model_dump_json()
    assert (await run.result()).model_dump() == (await baseline.result()).model_dump()
    entries = run.snapshot().settled_results[0].entries
    assert [e.disposition for e in entries] == ["succeeded", "failed"]
    failures = runner.observers.failures
    # two model calls and two tool calls, each started and settled: 8 raising callbacks
    assert len(failures) == 8
    assert sorted({f.event for f in failures}) == sorted(EVENTS)
    assert all(f.observer == "Raising" for f in failures)
    assert any("observer bug: model_settled" in f.error for f in failures)
    # the other observer still saw every event
    assert recording.events.count("model_started") == 2
    assert sorted(e for e in recording.events if e.startswith("tool_settled")) == [
        "tool_settled:failed",
        "tool_settled:succeeded",
    ]


async def test_c49_a_raising_observer_never_turns_a_model_unknown_into_something_else() -> None:
    definition = Definition("obs2")
    runner = LocalRunner(
        definitions=[definition],
        models={"default": ScriptedModel([TimeoutError("lost")])},
        observers=[Raising()],
    )
    run = await runner.start("obs2", [Message.user("go")])
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert unknown.kind == "model" and "lost" in unknown.diagnostic
    assert {f.event for f in runner.observers.failures} == {"model_started", "model_settled"}
    await run.cancel()


# --- 50 -------------------------------------------------------------------------------------------


def shrink_calls() -> tuple[list[list[str]], Any]:
    received: list[list[str]] = []

    async def shrink(messages: list[Message]) -> list[Message]:
        received.append([m.text for m in messages])
        kept = [m for m in messages if not m.text.startswith("old")]
        if len(kept) == len(messages):
            return messages
        return [Message.user("summary of old turns"), *kept]

    return received, shrink


async def test_c50_the_reducers_replacement_becomes_the_working_context() -> None:
    received, shrink = shrink_calls()
    definition = Definition("reduce", tools=[lookup], context_reducer="shrink")
    model = ScriptedModel([reply.tool_calls(("lookup", {"query": "q"})), reply.text("done")])
    runner = LocalRunner(
        definitions=[definition],
        tools=[lookup],
        models={"default": model},
        reducers={"shrink": shrink},
    )
    history = [Message.user("old 1"), Message.user("old 2"), Message.user("question")]
    run = await runner.start("reduce", history)
    out = await run.result(timeout=WAIT)
    assert out.text == "done"
    first, second = model.requests
    assert [m.text for m in first.messages] == ["summary of old turns", "question"]
    # the next request starts from the replacement, not from the original history
    assert [m.text for m in second.messages[:2]] == ["summary of old turns", "question"]
    assert [m.role for m in second.messages] == ["user", "user", "assistant", "tool"]
    # the reducer never sees the old turns again: the context did not regrow
    assert received[1][:2] == ["summary of old turns", "question"]
    assert all(not t.startswith("old") for t in received[1])
    context = run.snapshot().context
    assert [m.text for m in context][:2] == ["summary of old turns", "question"]
    assert all(not m.text.startswith("old") for m in context)
    assert context[-1].text == "done"


def test_c50_messages_sent_replace_the_context_in_the_pure_machine() -> None:
    machine = InteractionMachine.start(
        Definition("r", context_reducer="x"), "p", [Message.user("old"), Message.user("q")]
    )
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    assert effect.request.context_reducer == "x"
    sent = (Message.user("short"),)
    machine.on_model(
        ModelResponded(
            effect_id=effect.request.effect_id,
            response=reply.text("answer"),
            messages_sent=sent,
        )
    )
    assert [m.text for m in machine.snapshot().context] == ["short", "answer"]
    assert machine.output is not None and machine.output.model_calls == 1


@pytest.mark.parametrize("registered", [True, False])
async def test_c50_a_reducer_error_fails_host_with_zero_model_calls(registered: bool) -> None:
    async def broken(messages: list[Message]) -> list[Message]:
        raise OSError("summariser unavailable")

    definition = Definition("reduce", context_reducer="shrink")
    model = ScriptedModel([reply.text("never")])
    runner = LocalRunner(
        definitions=[definition],
        models={"default": model},
        reducers={"shrink": broken} if registered else {},
    )
    run = await runner.start("reduce", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=WAIT)
    assert failed.value.code == "interaction.host.failed"
    assert failed.value.kind == "host"
    assert ("summariser unavailable" if registered else "not registered") in failed.value.message
    assert model.requests == []
    snap = run.snapshot()
    assert snap.model_calls == 0 and snap.status == "failed"
    assert [m.text for m in snap.context] == ["go"]


# --- a completion validator that raises -------------------------------------------------------


async def test_c47_a_raising_completion_validator_fails_host_instead_of_wedging() -> None:
    def broken(candidate: CompletionCandidate) -> CompletionDecision:
        raise ValueError("validator bug")

    definition = Definition("judge", completion_validator=broken)
    runner = LocalRunner(
        definitions=[definition], models={"default": ScriptedModel([reply.text("ok")])}
    )
    run = await runner.start("judge", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=0.5)
    assert failed.value.code == "interaction.host.failed"
    assert run.snapshot().model_calls == 1


def sloppy_validator(candidate: CompletionCandidate) -> Any:
    """Returns a bool where a CompletionDecision belongs (set `sloppy_validator.returns`)."""
    return sloppy_validator.returns  # type: ignore[attr-defined]


@pytest.mark.parametrize("returned", [True, False, None, "accept"])
async def test_c47_a_validator_returning_no_decision_fails_host_naming_it(returned: Any) -> None:
    sloppy_validator.returns = returned  # type: ignore[attr-defined]
    definition = Definition("sloppy", completion_validator=sloppy_validator)
    runner = LocalRunner(
        definitions=[definition], models={"default": ScriptedModel([reply.text("ok")])}
    )
    run = await runner.start("sloppy", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=WAIT)
    assert failed.value.code == "interaction.host.failed"
    assert "sloppy_validator" in failed.value.message
    assert "CompletionDecision" in failed.value.message and repr(returned) in failed.value.message


async def test_c47_an_async_validator_fails_host_naming_it() -> None:
    async def eventually_accepts(candidate: CompletionCandidate) -> CompletionDecision:
        return CompletionDecision.accept()

    definition = Definition("later", completion_validator=eventually_accepts)  # type: ignore[arg-type]
    runner = LocalRunner(
        definitions=[definition], models={"default": ScriptedModel([reply.text("ok")])}
    )
    run = await runner.start("later", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=WAIT)
    assert failed.value.code == "interaction.host.failed"
    assert "eventually_accepts" in failed.value.message
    assert "async" in failed.value.message and "workflow code" in failed.value.message
