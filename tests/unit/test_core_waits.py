"""CONFORMANCE 27-32: tool input waits, on the pure ToolCallMachine and through LocalRunner."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.errors import (
    InvalidSignal,
    InvalidToolInput,
    NoSuchWait,
    ScopeError,
    SignalConflict,
)
from scope_temporal.interaction.effects import CallModel, ModelResponded, StartToolCall
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.tool_call import ToolCallMachine, ToolCallState
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import (
    InputRequired,
    Succeeded,
    require_tool_input,
    tool,
    tool_input_continuation,
)

WAIT = 2.0
BIG = 2**70
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "n": {"type": "integer"}},
    "required": ["approved"],
    "additionalProperties": False,
}


@tool(permission="write")
def approve(action: str) -> str:
    """Ask before acting."""
    return action


def tool_call_machine(process_id: str = "root") -> ToolCallMachine:
    definition = Definition("waits", tools=[approve])
    machine = InteractionMachine.start(definition, process_id, [Message.user("go")])
    [call_model] = machine.next_effects()
    assert isinstance(call_model, CallModel)
    machine.on_model(
        ModelResponded(
            effect_id=call_model.request.effect_id,
            response=reply.tool_calls(("approve", {"action": "reboot"})),
        )
    )
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall)
    return ToolCallMachine.start(start.request)


def waiting_machine(state: Any = None) -> ToolCallMachine:
    child = tool_call_machine()
    attempt = child.next_attempt()
    assert attempt is not None and attempt.entry == 1 and not attempt.has_continuation
    child.on_outcome(InputRequired(prompt="Reboot prod?", response_schema=SCHEMA, state=state))
    return child


def restored(child: ToolCallMachine) -> ToolCallMachine:
    return ToolCallMachine(ToolCallState.model_validate_json(child.state.model_dump_json()))


class Entries:
    """What each entry into a waiting tool saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, Any] | None] = []
        self.reentered = asyncio.Event()


def asking_tool(entries: Entries, state: Any = None, name: str = "ask") -> Any:
    @tool(name=name, permission="read")
    async def ask(question: str) -> str:
        """Ask the user."""
        continuation = tool_input_continuation()
        entries.seen.append(continuation)
        if continuation is None:
            require_tool_input(question, SCHEMA, state)
        entries.reentered.set()
        _saved, response = continuation
        return f"answered {response['approved']}"

    return ask


def runner_for(definition: Definition, tools: list[Any], script: list[Any]) -> LocalRunner:
    return LocalRunner(
        definitions=[definition], tools=tools, models={"default": ScriptedModel(script)}
    )


def requests_of(runner: LocalRunner) -> int:
    model = runner.models["default"]
    assert isinstance(model, ScriptedModel)
    return len(model.requests)


# --- 27 ---------------------------------------------------------------------------------------


def test_c27_input_required_puts_the_call_in_waiting_with_one_pending_input() -> None:
    child = waiting_machine()
    request = child.state.request
    assert child.status == "waiting"
    assert child.next_attempt() is None
    snap = child.snapshot()
    assert snap.status == "waiting"
    [pending] = snap.pending_tool_inputs
    assert pending.process_id == request.process_id == "root/tool/1/0"
    assert pending.wait_id == "root/tool/1/0/wait/1"
    assert pending.prompt == "Reboot prod?"
    assert pending.response_schema == SCHEMA
    assert pending.ref == request.ref == "root/1/0"
    assert snap.unknown_effects == ()
    assert restored(child).snapshot() == snap


async def test_c27_require_tool_input_through_local_runner() -> None:
    entries = Entries()
    ask = asking_tool(entries)
    definition = Definition("ask", tools=[ask])
    runner = runner_for(
        definition, [ask], [reply.tool_calls(("ask", {"question": "Deploy?"})), reply.text("ok")]
    )
    run = await runner.start("ask", [Message.user("go")])
    snap = await run.idle()
    assert snap.status == "waiting"
    [pending] = snap.pending_tool_inputs
    assert pending.process_id == f"{run.id}/tool/1/0"
    assert pending.wait_id == f"{run.id}/tool/1/0/wait/1"
    assert (pending.prompt, pending.response_schema) == ("Deploy?", SCHEMA)
    assert pending.ref == f"{run.id}/1/0"
    assert snap.process(pending.process_id).status == "waiting"
    assert snap.unknown_effects == []
    assert requests_of(runner) == 1
    await run.answer(pending, "a1", {"approved": True})
    out = await run.result(timeout=WAIT)
    assert out.text == "ok"
    assert run.snapshot().pending_tool_inputs == []


async def test_c27_a_prompt_may_be_any_json_value() -> None:
    prompt = {"question": "Deploy v2?", "changes": ["db", "api"], "rows": BIG}

    @tool(permission="read")
    def review() -> str:
        """Ask with a structured prompt."""
        if tool_input_continuation() is None:
            require_tool_input(prompt, SCHEMA)
        return "reviewed"

    definition = Definition("review", tools=[review])
    runner = runner_for(definition, [review], [reply.tool_calls(("review", {})), reply.text("ok")])
    run = await runner.start("review", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    assert pending.prompt == prompt
    assert pending.prompt_text == (
        f'{{"question":"Deploy v2?","changes":["db","api"],"rows":{BIG}}}'
    )
    await run.answer(pending, "a1", {"approved": True})
    assert (await run.result(timeout=WAIT)).text == "ok"


# --- 28 and 29 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        {"approved": "yes"},
        {},
        {"approved": True, "extra": 1},
        "true",
        None,
        {"approved": True, "n": 1.5},
    ],
)
def test_c28_a_bad_answer_raises_invalid_tool_input_and_changes_nothing(response: Any) -> None:
    child = waiting_machine()
    wait = child.snapshot().pending_tool_inputs[0].wait_id
    before = child.state
    with pytest.raises(InvalidToolInput) as raised:
        child.check_answer(wait, "a1", response)
    assert raised.value.code == "tool.answer.invalid"
    with pytest.raises(InvalidToolInput):
        child.answer(wait, "a1", response)
    assert child.state == before
    assert child.next_attempt() is None
    # the id was not consumed by the bad answer: a good one under it is accepted
    assert child.answer(wait, "a1", {"approved": True}) is True
    attempt = child.next_attempt()
    assert attempt is not None and attempt.continuation_response == {"approved": True}


def test_c28_answers_are_deduplicated_and_must_address_the_open_wait() -> None:
    child = waiting_machine()
    wait = child.snapshot().pending_tool_inputs[0].wait_id
    before = child.state
    with pytest.raises(NoSuchWait):
        child.answer(wait + "x", "a1", {"approved": True})
    with pytest.raises(InvalidSignal):
        child.answer(wait, "", {"approved": True})
    assert child.state == before
    assert child.answer(wait, "a1", {"approved": True}) is True
    after = child.state
    assert child.answer(wait, "a1", {"approved": True}) is False  # exact duplicate: no-op
    with pytest.raises(SignalConflict):
        child.answer(wait, "a1", {"approved": False})
    with pytest.raises(NoSuchWait):  # the wait is closed: a second answer is refused
        child.answer(wait, "a2", {"approved": False})
    assert child.state == after


async def test_c28_local_run_validates_before_sending() -> None:
    entries = Entries()
    ask = asking_tool(entries)
    definition = Definition("ask", tools=[ask])
    runner = runner_for(
        definition, [ask], [reply.tool_calls(("ask", {"question": "Deploy?"})), reply.text("ok")]
    )
    run = await runner.start("ask", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    with pytest.raises(InvalidToolInput):
        await run.answer(pending, "a1", {"approved": "maybe"})
    snap = await run.idle()
    assert snap.pending_tool_inputs == [pending]
    assert entries.seen == [None]
    assert snap.process(pending.process_id).tool_entries == 1
    await run.answer(pending, "a1", {"approved": False})
    await run.result(timeout=WAIT)
    assert entries.seen == [None, (None, {"approved": False})]


def test_c29_a_raw_bad_answer_is_recorded_as_rejected_and_the_wait_stays_open() -> None:
    child = waiting_machine()
    [pending] = child.snapshot().pending_tool_inputs
    # what the workflow's signal handler does with an answer that skipped validation
    try:
        child.answer(pending.wait_id, "raw-1", {"approved": 3})
    except ScopeError as error:
        child.record_rejected("raw-1", "tool_input", error)
    else:  # pragma: no cover - the answer must be refused
        pytest.fail("a schema-violating answer was accepted")
    snap = child.snapshot()
    [rejected] = snap.rejected_signals
    assert (rejected.signal_id, rejected.signal, rejected.code) == (
        "raw-1",
        "tool_input",
        "tool.answer.invalid",
    )
    assert snap.pending_tool_inputs == (pending,)
    assert child.status == "waiting" and child.next_attempt() is None
    assert child.answer(pending.wait_id, "ok-1", {"approved": True}) is True


# --- 30 -------------------------------------------------------------------------------------------


@pytest.mark.mapping("always")  # each call a Tool call process: the card's shape
async def test_c30_a_sibling_completes_while_another_waits() -> None:
    entries = Entries()
    ask = asking_tool(entries)
    sibling_runs: list[str] = []

    @tool(permission="read")
    async def sibling(x: str) -> str:
        """Runs once."""
        sibling_runs.append(x)
        return f"sibling {x}"

    definition = Definition(
        "pair", tools=[ask, sibling], max_concurrent_tool_calls=2, tool_call_workflows="always"
    )
    runner = runner_for(
        definition,
        [ask, sibling],
        [
            reply.tool_calls(("ask", {"question": "Go?"}), ("sibling", {"x": "s"})),
            reply.text("both done"),
        ],
    )
    run = await runner.start("pair", [Message.user("go")])
    snap = await run.idle()
    [pending] = snap.pending_tool_inputs
    sibling_id = f"{run.id}/tool/1/1"
    assert snap.process(sibling_id).status == "completed"
    assert snap.process(pending.process_id).status == "waiting"
    assert sibling_runs == ["s"]
    assert requests_of(runner) == 1  # the round is not committed while one call waits
    await run.answer(pending, "a1", {"approved": True})
    out = await run.result(timeout=WAIT)
    assert out.text == "both done"
    final = run.snapshot()
    assert final.process(pending.process_id).tool_entries == 2
    assert final.process(sibling_id).tool_entries == 1
    assert len(entries.seen) == 2 and sibling_runs == ["s"]
    model = runner.models["default"]
    assert isinstance(model, ScriptedModel)
    results = model.requests[1].messages[-1].tool_results
    assert [r.content for r in results] == ["answered True", "sibling s"]


# --- 31 -------------------------------------------------------------------------------------------


def test_c31_continuation_is_absent_first_and_carries_state_and_response_on_reentry() -> None:
    state = {"step": "confirm", "n": BIG, "ids": [BIG + 1, -BIG]}
    child = waiting_machine(state)
    child = restored(child)  # e.g. continue-as-new while waiting
    wait = child.snapshot().pending_tool_inputs[0].wait_id
    child.answer(wait, "a1", {"approved": True, "n": BIG + 7})
    child = restored(child)
    attempt = child.next_attempt()
    assert attempt is not None
    assert attempt.entry == 2 and attempt.has_continuation
    assert attempt.continuation_state == state
    assert attempt.continuation_state["n"] == BIG and isinstance(
        attempt.continuation_state["n"], int
    )
    assert attempt.continuation_response == {"approved": True, "n": BIG + 7}
    child.on_outcome(Succeeded(result=ToolResult(call_id="call_1", name="approve", content="done")))
    assert child.snapshot().tool_entries == 2 and child.status == "completed"


async def test_c31_big_integers_survive_the_local_round_trip() -> None:
    entries = Entries()
    state = {"n": BIG, "nested": {"m": -(BIG * 3)}}
    ask = asking_tool(entries, state=state)
    definition = Definition("big", tools=[ask])
    runner = runner_for(
        definition, [ask], [reply.tool_calls(("ask", {"question": "n?"})), reply.text("ok")]
    )
    run = await runner.start("big", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.answer(pending, "a1", {"approved": True, "n": BIG + 1})
    await run.result(timeout=WAIT)
    assert entries.seen[0] is None
    saved, response = entries.seen[1]  # type: ignore[misc]
    assert saved == state and saved["n"] == BIG and saved["nested"]["m"] == -(BIG * 3)
    assert response == {"approved": True, "n": BIG + 1}


# --- 32 -------------------------------------------------------------------------------------------


def test_c32_an_answer_while_paused_is_accepted_and_reentry_waits_for_resume() -> None:
    child = waiting_machine({"k": 1})
    wait = child.snapshot().pending_tool_inputs[0].wait_id
    child.pause()
    assert child.status == "paused"
    assert child.answer(wait, "a1", {"approved": True}) is True
    assert child.snapshot().pending_tool_inputs == ()
    assert child.next_attempt() is None
    assert restored(child).next_attempt() is None
    child.resume()
    attempt = child.next_attempt()
    assert attempt is not None and attempt.entry == 2
    assert (attempt.continuation_state, attempt.continuation_response) == (
        {"k": 1},
        {"approved": True},
    )
    assert child.next_attempt() is None  # each attempt is returned once


async def test_c32_local_run_paused_answer_reenters_only_after_resume() -> None:
    entries = Entries()
    ask = asking_tool(entries)
    definition = Definition("paused", tools=[ask])
    runner = runner_for(
        definition, [ask], [reply.tool_calls(("ask", {"question": "Go?"})), reply.text("ok")]
    )
    run = await runner.start("paused", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.pause()
    assert await run.answer(pending, "a1", {"approved": True}) is True
    snap = await run.idle()
    assert snap.pending_tool_inputs == []
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert entries.seen == [None]
    assert run.snapshot().process(pending.process_id).tool_entries == 1
    assert requests_of(runner) == 1
    await run.resume()
    await asyncio.wait_for(entries.reentered.wait(), WAIT)
    out = await run.result(timeout=WAIT)
    assert out.text == "ok"
    assert entries.seen == [None, (None, {"approved": True})]


# --- cancellation while waiting ----------------------------------------------------------------


def test_c44_a_canceled_tool_call_lists_no_wait_and_refuses_answers() -> None:
    child = waiting_machine({"k": 1})
    wait = child.snapshot().pending_tool_inputs[0].wait_id
    child.cancel()
    assert child.status == "canceled"
    assert child.snapshot().pending_tool_inputs == ()
    before = child.state
    with pytest.raises(ScopeError):
        child.answer(wait, "a1", {"approved": True})
    assert child.state == before
    assert child.next_attempt() is None


async def test_c44_local_run_cancel_never_reenters_a_waiting_tool() -> None:
    entries = Entries()
    ask = asking_tool(entries)
    definition = Definition("cancel-wait", tools=[ask])
    runner = runner_for(
        definition, [ask], [reply.tool_calls(("ask", {"question": "Go?"})), reply.text("ok")]
    )
    run = await runner.start("cancel-wait", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.cancel()
    assert run.snapshot().status == "canceled"
    with contextlib.suppress(ScopeError):  # refusing the answer is the right outcome
        await run.answer(pending, "a1", {"approved": True})
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert entries.seen == [None]
    assert run.snapshot().pending_tool_inputs == []
