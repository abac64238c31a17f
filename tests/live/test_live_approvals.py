"""Approval policies live (rules a1-a11 of docs/approvals.md), in both tool-call mappings.

A covered call's `scope.ToolCall` workflow waits for approval before its `scope.tool`
activity is scheduled (with `on_demand` the Interaction promotes it at once, without an
attempt of its own); approve runs the body once, deny never runs it and the model reads
the reason, `remember` covers later calls. A person answers the way the Temporal UI's
signal dialog does: the JSON in the ToolCall workflow's current details, sent as the raw
`scope.tool_input` signal. Tool bodies count their entries by root id.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Definition,
    InteractionHandle,
    InvalidToolInput,
    Output,
    PendingToolInput,
    ScriptedModel,
    TreeSnapshot,
    current_tool_call,
    reply,
    tool,
)
from scope_temporal import names as tnames
from tests.live.harness import eventually, fresh_id, has_workflow, serving, tool_attempts

RESULT_TIMEOUT = 20.0
RUNS: Counter[tuple[str, str]] = Counter()
"""(root id, what ran) -> times."""


def _ran(what: str) -> str:
    root = current_tool_call().process_id.split("/tool/")[0]
    RUNS[(root, what)] += 1
    return root


def runs(handle: InteractionHandle) -> dict[str, int]:
    return {what: n for (root, what), n in RUNS.items() if root == handle.id}


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    _ran(f"restart {name}")
    return f"{name} restarted"


@tool(permission="read")
def read_status(name: str) -> str:
    """Read a service's status."""
    _ran(f"read {name}")
    return f"{name}: degraded"


def non_prod(request: ApprovalRequest) -> ApprovalDecision:
    """Approve restarts outside production; a person decides production."""
    if str(request.arguments.get("name", "")).startswith("prod-"):
        return ApprovalDecision.ask()
    return ApprovalDecision.approve("not production")


OPS = Definition(
    "approvals-live",
    tools=[restart_service, read_status],
    approval=ApprovalPolicy.deny_writes(),
    max_concurrent_tool_calls=2,
)
GUARDED = Definition(
    "approvals-live-hook",
    tools=[restart_service, read_status],
    approval=ApprovalPolicy.deny_writes(approver=non_prod),
)
TOOLS = [restart_service, read_status]


@asynccontextmanager
async def _started(
    env: WorkflowEnvironment, model: ScriptedModel, definition: Definition = OPS, **start: Any
) -> AsyncIterator[InteractionHandle]:
    """An Interaction of `definition`, served while the block runs."""
    async with serving(env, [definition], tools=TOOLS, models={"default": model}) as scope:
        yield await scope.start(definition.name, "go", id=fresh_id("approve"), **start)


async def _approval(handle: InteractionHandle) -> PendingToolInput:
    snap = await eventually(handle.snapshot, lambda s: bool(s.pending_tool_inputs))
    [pending] = snap.pending_tool_inputs
    assert pending.kind == "approval"
    return pending


async def _result(handle: InteractionHandle) -> Output:
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


def _requests_tool_text(model: ScriptedModel, request: int) -> list[str]:
    messages = model.requests[request].messages
    return [r.content for m in messages if m.role == "tool" for r in m.tool_results]


async def test_a1_a2_the_call_waits_in_its_tool_call_workflow_then_runs_once(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("read_status", {"name": "db"}), ("restart_service", {"name": "web"})),
            reply.text("done"),
        ]
    )
    client = temporal_env.client
    async with _started(temporal_env, model) as handle:
        pending = await _approval(handle)
        assert pending.process_id == f"{handle.id}/tool/1/1"
        assert pending.wait_id == f"{handle.id}/tool/1/1/wait/approval"
        assert pending.prompt["tool"] == "restart_service"
        assert pending.prompt["arguments"] == {"name": "web"}
        assert pending.prompt["permission"] == "exec"
        assert await has_workflow(client, pending.process_id)  # a child in both mappings
        assert await tool_attempts(client, pending.process_id) == 0
        assert runs(handle) == {"read db": 1}
        await handle.answer(pending, "a1", {"decision": "approve", "reason": "go"})
        assert (await _result(handle)).text == "done"
        entry = (await handle.snapshot()).settled_results[0].entries[1]
    assert runs(handle) == {"read db": 1, "restart web": 1}
    assert await tool_attempts(client, pending.process_id) == 1
    assert entry.approval is not None
    assert (entry.approval.decision, entry.approval.by, entry.approval.answer_id) == (
        "approve",
        "person",
        "a1",
    )


async def test_a3_denied_the_body_never_runs_and_the_model_reads_the_reason(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [reply.tool_calls(("restart_service", {"name": "web"})), reply.text("ok")]
    )
    async with _started(temporal_env, model) as handle:
        pending = await _approval(handle)
        with pytest.raises(InvalidToolInput):
            await handle.answer(pending, "bad", {"decision": "sure"})
        await handle.answer(pending, "no", {"decision": "deny", "reason": "change freeze"})
        await _result(handle)
    assert runs(handle) == {}
    assert await tool_attempts(temporal_env.client, pending.process_id) == 0
    [content] = _requests_tool_text(model, 1)
    assert "denied approval by a person: change freeze" in content


async def test_a4_remember_covers_the_next_round_and_reaches_the_output(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("restart_service", {"name": "web-1"})),
            reply.tool_calls(("restart_service", {"name": "web-2"})),
            reply.text("both"),
        ]
    )
    async with _started(temporal_env, model) as handle:
        pending = await _approval(handle)
        await handle.answer(pending, "a1", {"decision": "approve", "remember": True})
        out = await _result(handle)
        snap = await handle.snapshot()
    assert runs(handle) == {"restart web-1": 1, "restart web-2": 1}
    assert out.approved_tools == ("restart_service",)
    assert snap.root.approved_tools == ("restart_service",)
    by = [r.entries[0].approval.by for r in snap.settled_results]  # type: ignore[union-attr]
    assert by == ["person", "remembered"]


async def test_a4_a_start_with_approved_tools_asks_nobody(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [reply.tool_calls(("restart_service", {"name": "web"})), reply.text("ok")]
    )
    async with _started(temporal_env, model, approved_tools=["restart_service"]) as handle:
        out = await _result(handle)
    assert runs(handle) == {"restart web": 1}
    assert out.approved_tools == ("restart_service",)


async def test_a6_the_workers_approver_decides_by_arguments(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("restart_service", {"name": "staging"})),
            reply.tool_calls(("restart_service", {"name": "prod-1"})),
            reply.text("ok"),
        ]
    )
    async with _started(temporal_env, model, GUARDED) as handle:
        pending = await _approval(handle)
        assert pending.prompt["arguments"] == {"name": "prod-1"}
        assert runs(handle) == {"restart staging": 1}
        await handle.answer(pending, "no", {"decision": "deny", "reason": "not in prod"})
        await _result(handle)
        snap = await handle.snapshot()
    assert runs(handle) == {"restart staging": 1}
    by = [r.entries[0].approval.by for r in snap.settled_results]  # type: ignore[union-attr]
    assert by == ["approver", "person"]


async def test_a11_a_person_answers_with_the_json_shown_in_the_ui(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The Temporal UI shows the ToolCall workflow's current details; its signal dialog
    sends `scope.tool_input` with the JSON pasted from there, as a raw signal (to the
    ToolCall workflow, or to the root, which forwards it)."""
    model = ScriptedModel(
        [
            reply.tool_calls(("restart_service", {"name": "web-1"})),
            reply.tool_calls(("restart_service", {"name": "web-2"})),
            reply.text("ok"),
        ]
    )
    client = temporal_env.client
    async with _started(temporal_env, model) as handle:
        for sent_to in ("tool call", "root"):
            pending = await _approval(handle)
            child = client.get_workflow_handle(pending.process_id)
            metadata = await child.query(
                "__temporal_workflow_metadata", result_type=WorkflowMetadata
            )
            details = metadata.current_details
            assert f"waiting for approval `{pending.wait_id}`" in details
            pasted = [line.strip() for line in details.splitlines() if line.startswith("    {")]
            approve, deny = (json.loads(line) for line in pasted)
            assert approve["response"]["decision"] == "approve"
            assert deny["response"]["decision"] == "deny"
            if sent_to == "tool call":
                await child.signal(tnames.TOOL_INPUT, approve)
            else:
                await client.get_workflow_handle(handle.id).signal(tnames.TOOL_INPUT, deny)
            await eventually(handle.snapshot, lambda s, w=pending.wait_id: _closed(s, w))
        await _result(handle)
    assert runs(handle) == {"restart web-1": 1}  # approved by signal; web-2 denied
    [content] = _requests_tool_text(model, 2)[1:]
    assert "denied approval by a person: say why" in content


def _closed(snap: TreeSnapshot, wait_id: str) -> bool:
    return all(w.wait_id != wait_id for w in snap.pending_tool_inputs)
