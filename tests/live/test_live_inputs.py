"""Live input waits (CONFORMANCE 27-32, 36) on the real Temporal dev server.

A tool calls `require_tool_input`; its `scope.ToolCall` child waits; the host answers
through `InteractionHandle.answer` (validated update) or a raw `scope.tool_input` signal.
Tool bodies count their entries in module-level counters keyed by the root id, so each
test reads only its own counts.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    InvalidToolInput,
    Message,
    Output,
    ScopeClient,
    ScriptedModel,
    TreeSnapshot,
    current_tool_call,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from scope_temporal import names as tnames
from scope_temporal.client import InteractionHandle
from scope_temporal.payloads import ToolInputAnswer
from tests.live.harness import (
    TOOL_CALL_MODE,
    eventually,
    fresh_id,
    has_workflow,
    serving,
    tool_attempts,
)

APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
    "additionalProperties": False,
}
NUMBER: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}
BIG = 2**70
RESULT_TIMEOUT = 15.0


async def _result(handle: InteractionHandle) -> Output:
    """The Output, failing fast (not at the session timeout) if the Interaction got stuck."""
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


ENTRIES: Counter[tuple[str, str]] = Counter()
"""(tool name, root id) -> times the body was entered."""
CONTINUATIONS: defaultdict[str, list[Any]] = defaultdict(list)
"""root id -> what `tool_input_continuation()` returned at each entry."""


def _enter(name: str) -> str:
    root = current_tool_call().process_id.split("/tool/")[0]
    ENTRIES[(name, root)] += 1
    return root


@tool(permission="read")
async def approve(topic: str) -> str:
    """Ask the host to approve a topic."""
    root = _enter("approve")
    cont = tool_input_continuation()
    CONTINUATIONS[root].append(cont)
    if cont is None:
        require_tool_input(f"Approve {topic}?", APPROVAL, state={"topic": topic})
    state, response = cont
    return f"{state['topic']}: approved={response['approved']}"


@tool(permission="read")
async def sibling(item: str) -> str:
    """A plain read tool that finishes at once."""
    _enter("sibling")
    return f"sibling saw {item}"


@tool(permission="read")
async def tally(label: str) -> str:
    """Ask the host for an integer; big integers must survive the round trip."""
    root = _enter("tally")
    cont = tool_input_continuation()
    CONTINUATIONS[root].append(cont)
    if cont is None:
        require_tool_input("How many?", NUMBER, state={"label": label, "big": BIG, "list": [BIG]})
    state, response = cont
    return f"{state['big'] + response['n']}"


def _serve(
    env: WorkflowEnvironment, definition: Definition, model: ScriptedModel, *tools: Any
) -> AbstractAsyncContextManager[ScopeClient]:
    return serving(env, [definition], tools=tools, models={"default": model})


def _definition(name: str, *tools: Any, concurrency: int = 1) -> Definition:
    return Definition(name, tools=list(tools), max_concurrent_tool_calls=concurrency)


async def _wait_for_input(handle: InteractionHandle) -> TreeSnapshot:
    return await eventually(handle.snapshot, lambda s: len(s.pending_tool_inputs) == 1)


async def _input_events(client: Client, workflow_id: str) -> list[str]:
    """Names of the signal/update events a workflow *received* (not the status signals
    a ToolCall sends its parent)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    found = []
    for event in history.events:
        name = EventType.Name(event.event_type)
        if ("SIGNALED" in name or "UPDATE" in name) and "EXTERNAL" not in name:
            found.append(name)
    return found


async def _stays(probe: Any, holds: Any, seconds: float = 0.5) -> None:
    """Negative check: `holds(probe())` stays true for a short window (not synchronisation)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        value = await probe()
        assert holds(value), value
        await asyncio.sleep(0.1)


# --- 27 ------------------------------------------------------------------------------


async def test_c27_tool_input_wait_is_listed_in_snapshot(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.tool_calls(("approve", {"topic": "deploy"})), reply.text("ok")])
    definition = _definition("inputs-c27", approve)
    root = fresh_id("c27")
    async with _serve(temporal_env, definition, model, approve) as scope:
        handle = await scope.start("inputs-c27", [Message.user("go")], id=root)
        snap = await _wait_for_input(handle)
        pid = f"{root}/tool/1/0"
        [pending] = snap.pending_tool_inputs
        assert pending.process_id == pid
        assert pending.wait_id == f"{pid}/wait/1"
        assert pending.prompt == "Approve deploy?"
        assert pending.response_schema == APPROVAL
        assert pending.ref == f"{root}/1/0"
        assert snap.status == "waiting"
        assert snap.process(pid).kind == "tool_call"
        assert snap.process(pid).status == "waiting"
        assert snap.process(pid).tool_entries == 1
        assert snap.root.active_children == (pid,)
        assert await handle.answer(pending, "a-27", {"approved": True}) is True
        out = await _result(handle)
    assert out.text == "ok"
    assert model.requests[1].messages[-1].tool_results[0].content == "deploy: approved=True"


@tool(permission="read")
async def review(change: str) -> str:
    """Ask the host to review a change, with a structured prompt."""
    if tool_input_continuation() is None:
        require_tool_input({"change": change, "rows": BIG, "steps": ["lock", "copy"]}, APPROVAL)
    return f"{change} reviewed"


async def test_c27_a_json_prompt_crosses_temporal_and_shows_in_the_details(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.tool_calls(("review", {"change": "schema"})), reply.text("ok")])
    async with _serve(temporal_env, _definition("inputs-json", review), model, review) as scope:
        handle = await scope.start("inputs-json", [Message.user("go")])
        [pending] = (await _wait_for_input(handle)).pending_tool_inputs
        assert pending.prompt == {"change": "schema", "rows": BIG, "steps": ["lock", "copy"]}
        shown = f'{{"change":"schema","rows":{BIG},"steps":["lock","copy"]}}'
        child = temporal_env.client.get_workflow_handle(pending.process_id)
        metadata = await child.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        assert f"waiting for input `{pending.wait_id}`: {shown}" in metadata.current_details
        await handle.answer(pending, "a-json", {"approved": True})
        out = await _result(handle)
    assert out.text == "ok"
    assert model.requests[1].messages[-1].tool_results[0].content == "schema reviewed"


# --- 28 ------------------------------------------------------------------------------


async def test_c28_bad_answer_raises_and_nothing_is_sent(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.tool_calls(("approve", {"topic": "db"})), reply.text("ok")])
    definition = _definition("inputs-c28", approve)
    root = fresh_id("c28")
    async with _serve(temporal_env, definition, model, approve) as scope:
        handle = await scope.start("inputs-c28", [Message.user("go")], id=root)
        [pending] = (await _wait_for_input(handle)).pending_tool_inputs

        # The client validates against the schema first: nothing reaches the workflow.
        with pytest.raises(InvalidToolInput) as raised:
            await handle.answer(pending, "a-28-bad", {"approved": "yes"})
        assert raised.value.code == "tool.answer.invalid"
        with pytest.raises(InvalidToolInput):
            await handle.answer(pending, "a-28-bad2", {"approved": True, "extra": 1})
        assert await _input_events(temporal_env.client, pending.process_id) == []
        # Validated before any call: addressed to a process that does not exist, a bad
        # answer still raises InvalidToolInput (a sent one would fail on the missing workflow).
        nowhere = pending.model_copy(update={"process_id": f"{root}/tool/9/9"})
        with pytest.raises(InvalidToolInput):
            await handle.answer(nowhere, "a-28-nowhere", {"approved": None})

        # Even bypassing the client's check, the update's validator refuses it and the
        # rejected update leaves no trace in the ToolCall's history.
        raw = scope.client.get_workflow_handle(pending.process_id)
        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await raw.execute_update(
                tnames.TOOL_INPUT,
                ToolInputAnswer(
                    wait_id=pending.wait_id,
                    answer_id="a-28-raw",
                    response={"approved": 3},
                    process_id=pending.process_id,
                ),
            )
        assert isinstance(failed.value.cause, ApplicationError)
        assert failed.value.cause.type == "tool.answer.invalid"
        assert await _input_events(temporal_env.client, pending.process_id) == []

        snap = await handle.snapshot()
        assert [w.wait_id for w in snap.pending_tool_inputs] == [pending.wait_id]
        assert snap.process(pending.process_id).tool_entries == 1
        assert ENTRIES[("approve", root)] == 1

        assert await handle.answer(pending, "a-28-good", {"approved": False}) is True
        out = await _result(handle)
    assert out.text == "ok"
    assert model.requests[1].messages[-1].tool_results[0].content == "db: approved=False"
    assert ENTRIES[("approve", root)] == 2


# --- 29 ------------------------------------------------------------------------------


async def test_c29_raw_bad_answer_signal_is_rejected_and_recorded(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.tool_calls(("approve", {"topic": "dns"})), reply.text("ok")])
    definition = _definition("inputs-c29", approve)
    root = fresh_id("c29")
    async with _serve(temporal_env, definition, model, approve) as scope:
        handle = await scope.start("inputs-c29", [Message.user("go")], id=root)
        [pending] = (await _wait_for_input(handle)).pending_tool_inputs

        # Sent straight to the ToolCall workflow, and to the root (which forwards it).
        bad = {"approved": "maybe"}
        await scope.client.get_workflow_handle(pending.process_id).signal(
            tnames.TOOL_INPUT,
            ToolInputAnswer(
                wait_id=pending.wait_id,
                answer_id="bad-direct",
                response=bad,
                process_id=pending.process_id,
            ),
        )
        await scope.client.get_workflow_handle(root).signal(
            tnames.TOOL_INPUT,
            ToolInputAnswer(
                wait_id=pending.wait_id,
                answer_id="bad-via-root",
                response=bad,
                process_id=pending.process_id,
            ),
        )
        snap = await eventually(
            handle.snapshot,
            lambda s: {r.signal_id for r in s.rejected_signals} >= {"bad-direct", "bad-via-root"},
        )
        for rejected in snap.rejected_signals:
            assert rejected.signal == "tool_input"
            assert rejected.code == "tool.answer.invalid"
        assert len(snap.process(pending.process_id).rejected_signals) == 2
        # The wait stays open and the body was not re-entered.
        assert [w.wait_id for w in snap.pending_tool_inputs] == [pending.wait_id]
        assert snap.process(pending.process_id).status == "waiting"
        assert ENTRIES[("approve", root)] == 1
        assert await tool_attempts(temporal_env.client, pending.process_id) == 1

        assert await handle.answer(pending, "good", {"approved": True}) is True
        out = await _result(handle)
    assert out.text == "ok"
    assert model.requests[1].messages[-1].tool_results[0].content == "dns: approved=True"


# --- 30 ------------------------------------------------------------------------------


async def test_c30_sibling_completes_while_other_waits(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("approve", {"topic": "rollout"}), ("sibling", {"item": "logs"})),
            reply.text("ok"),
        ]
    )
    definition = _definition("inputs-c30", approve, sibling, concurrency=2)
    root = fresh_id("c30")
    async with _serve(temporal_env, definition, model, approve, sibling) as scope:
        handle = await scope.start("inputs-c30", [Message.user("go")], id=root)
        waiting_pid, sibling_pid = f"{root}/tool/1/0", f"{root}/tool/1/1"
        # The sibling settles (its child ends) while the first call keeps waiting.
        snap = await eventually(
            handle.snapshot,
            lambda s: len(s.pending_tool_inputs) == 1 and s.root.active_children == (waiting_pid,),
        )
        assert ENTRIES[("sibling", root)] == 1
        assert ENTRIES[("approve", root)] == 1
        assert len(model.requests) == 1
        if await has_workflow(scope.client, sibling_pid):  # tool_call_workflows="always"
            sibling_result = await scope.client.get_workflow_handle(sibling_pid).describe()
            assert sibling_result.status is not None and sibling_result.status.name == "COMPLETED"
        else:  # "on_demand": it settled in its first attempt, needing no workflow
            assert TOOL_CALL_MODE[0] == "on_demand"
        assert await tool_attempts(scope.client, sibling_pid) == 1

        [pending] = snap.pending_tool_inputs
        await handle.answer(pending, "a-30", {"approved": True})
        out = await _result(handle)
    assert out.text == "ok"
    assert ENTRIES[("approve", root)] == 2  # first entry + continuation
    assert ENTRIES[("sibling", root)] == 1  # never re-run
    results = model.requests[1].messages[-1].tool_results
    assert [(r.call_id, r.content) for r in results] == [
        ("call_1", "rollout: approved=True"),
        ("call_2", "sibling saw logs"),
    ]


# --- 31 ------------------------------------------------------------------------------


async def test_c31_continuation_state_and_big_integers(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.tool_calls(("tally", {"label": "widgets"})), reply.text("ok")])
    definition = _definition("inputs-c31", tally)
    root = fresh_id("c31")
    async with _serve(temporal_env, definition, model, tally) as scope:
        handle = await scope.start("inputs-c31", [Message.user("go")], id=root)
        [pending] = (await _wait_for_input(handle)).pending_tool_inputs
        assert CONTINUATIONS[root] == [None]  # absent on first entry
        assert await handle.answer(pending, "a-31", {"n": BIG + 1}) is True
        out = await _result(handle)
    assert out.text == "ok"
    first, second = CONTINUATIONS[root]
    assert first is None
    state, response = second
    assert state == {"label": "widgets", "big": BIG, "list": [BIG]}
    assert type(state["big"]) is int and type(state["list"][0]) is int
    assert response == {"n": BIG + 1}
    assert type(response["n"]) is int
    # The exact sum reached the model: no float rounding anywhere on the way.
    assert model.requests[1].messages[-1].tool_results[0].content == str(2 * BIG + 1)


# --- 32 ------------------------------------------------------------------------------


async def test_c32_answer_while_paused_reenters_only_after_resume(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.tool_calls(("approve", {"topic": "pause"})), reply.text("ok")])
    definition = _definition("inputs-c32", approve)
    root = fresh_id("c32")
    async with _serve(temporal_env, definition, model, approve) as scope:
        handle = await scope.start("inputs-c32", [Message.user("go")], id=root)
        [pending] = (await _wait_for_input(handle)).pending_tool_inputs
        pid = pending.process_id

        await handle.pause()
        await eventually(handle.snapshot, lambda s: s.process(pid).status == "paused")

        # Accepted while paused, and the wait clears...
        assert await handle.answer(pending, "a-32", {"approved": True}) is True
        snap = await handle.snapshot()
        assert snap.pending_tool_inputs == []
        assert snap.status == "paused"
        assert snap.process(pid).status == "paused"
        # ...but the body is not re-entered: the update's workflow task scheduled nothing.
        assert await tool_attempts(temporal_env.client, pid) == 1
        await _stays(handle.snapshot, lambda s: s.process(pid).tool_entries == 1)
        assert ENTRIES[("approve", root)] == 1
        assert len(model.requests) == 1

        await handle.resume()
        out = await _result(handle)
    assert out.text == "ok"
    assert ENTRIES[("approve", root)] == 2
    assert CONTINUATIONS[root] == [None, ({"topic": "pause"}, {"approved": True})]
    assert await tool_attempts(temporal_env.client, pid) == 2


# --- 36 ------------------------------------------------------------------------------


async def test_c36_steer_never_answers_a_tool_input_wait(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.tool_calls(("approve", {"topic": "cache"})), reply.text("ok")])
    definition = _definition("inputs-c36", approve)
    root = fresh_id("c36")
    async with _serve(temporal_env, definition, model, approve) as scope:
        handle = await scope.start("inputs-c36", [Message.user("go")], id=root)
        [pending] = (await _wait_for_input(handle)).pending_tool_inputs

        assert await handle.steer("steer-36", "Prefer the blue cache") is True
        snap = await eventually(handle.snapshot, lambda s: s.root.pending_signals == ("steer-36",))
        # The wait is untouched: same wait, still open, body not re-entered, nothing
        # delivered to the ToolCall workflow, and no model call in between.
        assert [w.wait_id for w in snap.pending_tool_inputs] == [pending.wait_id]
        assert snap.process(pending.process_id).status == "waiting"
        await _stays(handle.snapshot, lambda s: len(s.pending_tool_inputs) == 1)
        assert await _input_events(temporal_env.client, pending.process_id) == []
        assert ENTRIES[("approve", root)] == 1
        assert len(model.requests) == 1
        assert snap.root.applied_signals == ()

        await handle.answer(pending, "a-36", {"approved": True})
        out = await _result(handle)
        final = await handle.snapshot()
    assert out.text == "ok"
    assert ENTRIES[("approve", root)] == 2
    second = model.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool", "user"]
    assert second[2].tool_results[0].content == "cache: approved=True"
    assert second[3].text == "Prefer the blue cache"
    assert final.root.applied_signals == ("steer-36",)
