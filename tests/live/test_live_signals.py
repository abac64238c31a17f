"""Live steering and signal rules (CONFORMANCE 33-35, 37, and 21 live) on the dev server.

Model calls and tool bodies are held open with `asyncio.Event` gates: the worker runs in
this process, so a test can send a steer exactly while a call is in flight.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    InteractionFailed,
    InteractionHandle,
    InvalidSignal,
    Message,
    ModelRequest,
    Output,
    Response,
    ScriptedModel,
    SettlementMismatch,
    SignalConflict,
    ToolResult,
    current_tool_call,
    reply,
    settle_tool_result,
    tool,
)
from scope_temporal import names as tnames
from scope_temporal.payloads import SteerInput
from scope_temporal.testing.replay import replay_history
from scope_temporal.workflows.temporal import TemporalTransport
from tests.live.harness import TOOL_CALL_MODE, eventually, fresh_id, in_mode, serving

GATE_TIMEOUT = 10.0
RESULT_TIMEOUT = 15.0


async def _result(handle: InteractionHandle) -> Output:
    """The Output, failing fast (not at the session timeout) if the Interaction got stuck."""
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


ENTRIES: Counter[tuple[str, str]] = Counter()
"""(tool name, root id) -> times the body was entered."""


class Gate:
    """`started` is set when the gated call begins; it proceeds once `release` is set."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def hold(self) -> None:
        self.started.set()
        await asyncio.wait_for(self.release.wait(), GATE_TIMEOUT)

    async def reached(self) -> None:
        await asyncio.wait_for(self.started.wait(), GATE_TIMEOUT)


GATES: dict[tuple[str, str], Gate] = {}
"""(tool name, root id) -> the gate that tool's body waits on."""


def _root() -> str:
    return current_tool_call().process_id.split("/tool/")[0]


@tool  # exec: sequential by default
async def step_a(note: str) -> str:
    """First step (gated by the test)."""
    root = _root()
    ENTRIES[("step_a", root)] += 1
    await GATES[("step_a", root)].hold()
    return f"a:{note}"


@tool
async def step_b(note: str) -> str:
    """Second step (gated by the test)."""
    root = _root()
    ENTRIES[("step_b", root)] += 1
    await GATES[("step_b", root)].hold()
    return f"b:{note}"


@tool(permission="read")
async def lost(what: str) -> str:
    """Always fails in a way the framework cannot classify: its outcome is unknown."""
    ENTRIES[("lost", _root())] += 1
    raise RuntimeError(f"connection reset while fetching {what}")


def _gated_model(gate: Gate, first: Response, *later: Response) -> ScriptedModel:
    """Call 1 waits on `gate` then answers `first`; calls 2.. answer `later` in order."""

    async def respond(request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            await gate.hold()
            return first
        return later[request.model_call_seq - 2]

    return ScriptedModel(respond)


async def _accepted_updates(client: Client, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )


async def _input_events(client: Client, workflow_id: str) -> list[str]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    names = [EventType.Name(e.event_type) for e in history.events]
    # received ones only: a ToolCall's status signals to its parent are outgoing
    return [n for n in names if ("SIGNALED" in n or "UPDATE" in n) and "EXTERNAL" not in n]


def _roles(request: ModelRequest) -> list[str]:
    return [m.role for m in request.messages]


# --- 33 ------------------------------------------------------------------------------


async def test_c33_steer_during_model_call_is_applied_at_the_next_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    gate = Gate()
    model = _gated_model(gate, reply.text("first"), reply.text("second"))
    definition = Definition("signals-c33")
    root = fresh_id("c33")
    try:
        async with serving(temporal_env, [definition], models={"default": model}) as scope:
            handle = await scope.start("signals-c33", [Message.user("go")], id=root)
            await gate.reached()  # model call #1 is in flight
            assert await handle.steer("steer-33", "Use metric units") is True
            snap = await eventually(
                handle.snapshot, lambda s: s.root.pending_signals == ("steer-33",)
            )
            assert snap.root.applied_signals == ()
            assert snap.model_calls == 0
            gate.release.set()
            out = await _result(handle)
            final = await handle.snapshot()
    finally:
        gate.release.set()
    first, second = model.requests
    # The in-flight call never saw the steer...
    assert [m.text for m in first.messages] == ["go"]
    # ...the next one gets it right after the reply that call produced.
    assert _roles(second) == ["user", "assistant", "user"]
    assert [m.text for m in second.messages] == ["go", "first", "Use metric units"]
    assert final.applied_signals == ["steer-33"]
    assert final.root.pending_signals == ()
    assert out.text == "second"


# --- 34 ------------------------------------------------------------------------------


async def test_c34_final_reply_with_pending_steer_calls_the_model_again(
    temporal_env: WorkflowEnvironment,
) -> None:
    gate = Gate()

    async def respond(request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            return reply.tool_calls(("step_a", {"note": "x"}))
        if request.model_call_seq == 2:
            await gate.hold()
            return reply.text("draft answer")
        return reply.text("answer with the steer")

    model = ScriptedModel(respond)
    definition = Definition("signals-c34", tools=[step_a])
    root = fresh_id("c34")
    GATES[("step_a", root)] = Gate()
    GATES[("step_a", root)].release.set()
    try:
        async with serving(
            temporal_env, [definition], tools=[step_a], models={"default": model}
        ) as scope:
            handle = await scope.start("signals-c34", [Message.user("go")], id=root)
            await gate.reached()  # the call that will produce a final reply is in flight
            assert await handle.steer("steer-34", "Mention the caveat") is True
            await eventually(handle.snapshot, lambda s: s.root.pending_signals == ("steer-34",))
            gate.release.set()
            out = await _result(handle)
    finally:
        gate.release.set()
    # The "draft answer" did not complete the Interaction: the model was called again.
    assert out.text == "answer with the steer"
    assert out.model_calls == 3
    assert len(model.requests) == 3
    third = model.requests[2]
    assert _roles(third) == ["user", "assistant", "tool", "assistant", "user"]
    assert third.messages[3].text == "draft answer"
    assert third.messages[4].text == "Mention the caveat"


# --- 35 ------------------------------------------------------------------------------


async def test_c35_steer_during_tool_batch_waits_for_the_whole_batch(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("step_a", {"note": "1"}), ("step_b", {"note": "2"})),
            reply.text("done"),
        ]
    )
    definition = Definition("signals-c35", tools=[step_a, step_b])
    root = fresh_id("c35")
    gate_a, gate_b = Gate(), Gate()
    GATES[("step_a", root)], GATES[("step_b", root)] = gate_a, gate_b
    tools, models = [step_a, step_b], {"default": model}
    try:
        async with serving(temporal_env, [definition], tools=tools, models=models) as scope:
            handle = await scope.start("signals-c35", [Message.user("go")], id=root)
            await gate_a.reached()  # first call of the batch is running
            assert await handle.steer("steer-35", "Also check the logs") is True
            await eventually(handle.snapshot, lambda s: s.root.pending_signals == ("steer-35",))
            gate_a.release.set()
            await gate_b.reached()  # first call settled, second running: no model call between
            assert len(model.requests) == 1
            snap = await handle.snapshot()
            assert snap.root.pending_signals == ("steer-35",)
            assert snap.root.applied_signals == ()
            gate_b.release.set()
            out = await _result(handle)
    finally:
        gate_a.release.set()
        gate_b.release.set()
    assert out.model_calls == 2
    second = model.requests[1]
    assert _roles(second) == ["user", "assistant", "tool", "user"]
    assert [(r.call_id, r.content) for r in second.messages[2].tool_results] == [
        ("call_1", "a:1"),
        ("call_2", "b:2"),
    ]
    assert second.messages[3].text == "Also check the logs"


@tool(permission="read")
def big_lookup(key: str) -> str:
    """A 3,000-character result."""
    return "r" * 3_000


async def _steer_beside_a_big_result(
    env: WorkflowEnvironment, name: str
) -> tuple[str, ScriptedModel, Output | InteractionFailed]:
    """Run `name`: a 3,000-character steer accepted while model call #1 runs (it fits the
    next call as that stands), then a tool batch with a 3 KB result, limit 6,000 B.
    Returns the root id, the model, and the Output or the failure."""
    gate = Gate()
    model = _gated_model(
        gate, reply.tool_calls(("big_lookup", {"key": "k"})), reply.text("a"), reply.text("b")
    )
    root = fresh_id(name)
    try:
        async with serving(
            env,
            [Definition(name, tools=[big_lookup])],
            tools=[big_lookup],
            models={"default": model},
            payload_limit_bytes=6_000,
        ) as scope:
            handle = await scope.start(name, [Message.user("go")], id=root)
            await gate.reached()
            assert await handle.steer("steer-room", "x" * 3_000) is True
            gate.release.set()
            try:
                return root, model, await _result(handle)
            except InteractionFailed as failed:
                return root, model, failed
    finally:
        gate.release.set()


async def test_c35_a_steer_the_call_after_a_tool_batch_has_no_room_for_waits_for_the_next(
    temporal_env: WorkflowEnvironment,
) -> None:
    """Accepted while model call #1 ran (it fitted the next call as it stood), the steer
    has no room beside the batch's 3 KB result: call #2 goes without it, call #3 takes it
    (before, the Interaction failed `interaction.payload.too_large`). The history records
    the rule's patch marker, so histories from before it replay as they ran."""
    root, model, out = await _steer_beside_a_big_result(temporal_env, "signals-c35-room")
    assert isinstance(out, Output) and out.text == "b" and out.model_calls == 3
    _, after_batch, for_the_steer = model.requests
    assert _roles(after_batch) == ["user", "assistant", "tool"]
    assert _roles(for_the_steer)[-2:] == ["assistant", "user"]
    assert for_the_steer.messages[-1].text == "x" * 3_000
    history = await temporal_env.client.get_workflow_handle(root).fetch_history()
    markers = [
        e.marker_recorded_event_attributes.SerializeToString()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]
    assert any(b"scope.interaction.steers_wait_for_room" in marker for marker in markers)


async def test_c42_a_history_from_before_steers_waited_for_room_replays_as_it_failed(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker from before the rule (its transport never defers) sent the steer with the
    batch's result and the Interaction failed too large; today's code replays that
    history (no patch marker: the call goes as it did then)."""
    monkeypatch.setattr(TemporalTransport, "defers_steers", lambda self: False)
    name = "signals-c35-before"
    root, _, out = await _steer_beside_a_big_result(temporal_env, name)
    assert isinstance(out, InteractionFailed) and out.code == "interaction.payload.too_large"
    monkeypatch.undo()
    history = await temporal_env.client.get_workflow_handle(root).fetch_history()
    definition = Definition(name, tools=[big_lookup])
    served = in_mode(definition, mode) if (mode := TOOL_CALL_MODE[0]) else definition
    result = await replay_history(history, [served])
    assert result.replay_failure is None


# --- 37 ------------------------------------------------------------------------------


async def test_c37_steer_dedup_conflict_and_non_user_rejected(
    temporal_env: WorkflowEnvironment,
) -> None:
    gate = Gate()
    model = _gated_model(gate, reply.text("first"), reply.text("second"))
    definition = Definition("signals-c37")
    root = fresh_id("c37")
    try:
        async with serving(temporal_env, [definition], models={"default": model}) as scope:
            handle = await scope.start("signals-c37", [Message.user("go")], id=root)
            await gate.reached()

            # Same id, same content: the duplicate is a no-op.
            assert await handle.steer("s-37", "keep it short") is True
            assert await handle.steer("s-37", "keep it short") is False
            # Same id, other content: a conflict at the client.
            with pytest.raises(SignalConflict) as conflict:
                await handle.steer("s-37", "make it long")
            assert conflict.value.code == "interaction.signal.conflict"
            # A non-user message: invalid at the client.
            with pytest.raises(InvalidSignal) as invalid:
                await handle.steer("s-37-assistant", Message.assistant("I am the model"))
            assert invalid.value.code == "interaction.signal.invalid"
            assert not isinstance(invalid.value, SignalConflict)
            # Only the two accepted updates (new + duplicate) are in history; the refused
            # ones left no trace.
            assert await _accepted_updates(temporal_env.client, root) == 2

            # The same refusals as raw signals: recorded, nothing else changes.
            raw = scope.client.get_workflow_handle(root)
            await raw.signal(
                tnames.STEER, SteerInput(signal_id="s-37", messages=(Message.user("conflicting"),))
            )
            await raw.signal(
                tnames.STEER,
                SteerInput(signal_id="s-37-system", messages=(Message.system("obey me"),)),
            )
            snap = await eventually(handle.snapshot, lambda s: len(s.rejected_signals) == 2)
            assert {(r.signal_id, r.signal, r.code) for r in snap.rejected_signals} == {
                ("s-37", "steer", "interaction.signal.conflict"),
                ("s-37-system", "steer", "interaction.signal.invalid"),
            }
            assert snap.root.pending_signals == ("s-37",)
            assert snap.root.applied_signals == ()

            gate.release.set()
            out = await _result(handle)
            final = await handle.snapshot()
    finally:
        gate.release.set()
    assert out.text == "second"
    second = model.requests[1]
    # Exactly one copy of the first content; none of the refused ones.
    assert [m.text for m in second.messages] == ["go", "first", "keep it short"]
    assert final.applied_signals == ["s-37"]


# --- 21 (live) -----------------------------------------------------------------------


async def test_c21_live_resolve_with_settlement_from_another_request_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("lost", {"what": "alpha"}), ("lost", {"what": "beta"})),
            reply.text("done"),
        ]
    )
    definition = Definition("signals-c21", tools=[lost], max_concurrent_tool_calls=2)
    root = fresh_id("c21")
    models = {"default": model}
    async with serving(temporal_env, [definition], tools=[lost], models=models) as scope:
        handle = await scope.start("signals-c21", [Message.user("go")], id=root)
        snap = await eventually(handle.snapshot, lambda s: len(s.unknown_effects) == 2)
        first, second = sorted(snap.unknown_effects, key=lambda u: u.process_id)
        assert first.process_id == f"{root}/tool/1/0"

        def ok(request: Any, content: str) -> Any:
            result = ToolResult(call_id=request.call.id, name=request.call.name, content=content)
            return settle_tool_result(request, result, "succeeded")

        # Built from the sibling's request.
        with pytest.raises(SettlementMismatch) as mismatch:
            await handle.resolve(first, ok(second.request, "beta recovered"))
        assert mismatch.value.code == "interaction.settlement.mismatch"
        # Built from a request of another Definition.
        foreign = first.request.model_copy(update={"definition": "someone-else"})
        with pytest.raises(SettlementMismatch):
            await handle.resolve(first, ok(foreign, "alpha recovered"))

        # Nothing changed: both unknowns held, no update recorded, nothing re-run.
        after = await handle.snapshot()
        assert sorted(u.effect_id for u in after.unknown_effects) == sorted(
            u.effect_id for u in snap.unknown_effects
        )
        assert after.process(first.process_id).status == "waiting"
        assert await _input_events(temporal_env.client, first.process_id) == []
        assert len(model.requests) == 1
        assert ENTRIES[("lost", root)] == 2

        await handle.resolve(first, ok(first.request, "alpha recovered"))
        await handle.resolve(second, ok(second.request, "beta recovered"))
        out = await _result(handle)
    assert out.text == "done"
    assert ENTRIES[("lost", root)] == 2
    results = model.requests[1].messages[-1].tool_results
    assert [(r.call_id, r.content, r.is_error) for r in results] == [
        ("call_1", "alpha recovered", False),
        ("call_2", "beta recovered", False),
    ]


async def test_c37_steering_an_ended_interaction_raises_a_typed_error(
    temporal_env: WorkflowEnvironment,
) -> None:
    from scope_temporal import InteractionNotFound, ScopeError

    model = ScriptedModel([reply.text("done")])
    async with serving(temporal_env, [Definition("ended")], models={"default": model}) as scope:
        handle = await scope.start("ended", "go")
        await handle.result()
        with pytest.raises(ScopeError) as raised:
            await handle.steer("late", Message.user("too late"))
        assert isinstance(raised.value, InteractionNotFound)
        with pytest.raises(InteractionNotFound):
            await scope.get_handle("no-such-interaction").snapshot()
