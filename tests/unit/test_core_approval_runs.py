"""Approval policies through LocalRunner, in both tool-call mappings (rules a1-a9 of
docs/approvals.md; the pure machines' side is in test_core_approvals.py).

Tool bodies count their entries, so "the body never runs" and "runs once" are observed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scope_temporal import errors
from scope_temporal.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from scope_temporal.chat import Message
from scope_temporal.definition import Definition
from scope_temporal.errors import InteractionFailed, InvalidToolInput, NoSuchWait
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import require_tool_input, tool, tool_input_continuation

WAIT = 2.0
RUNS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def fresh_counts() -> None:
    RUNS.clear()


def runs() -> dict[str, int]:
    """What ran, and how often."""
    return dict(RUNS)


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    RUNS[f"restart {name}"] += 1
    return f"{name} restarted"


@tool(permission="read")
def read_status(name: str) -> str:
    """Read a service's status."""
    RUNS[f"read {name}"] += 1
    return f"{name}: degraded"


@tool(permission="read")
def confirm(what: str) -> str:
    """Ask the host a question of the tool's own (an ordinary input wait)."""
    if tool_input_continuation() is None:
        require_tool_input(f"Really {what}?", {"type": "object", "required": ["ok"]})
    return "confirmed"


@tool(permission="write", execution="parallel")
def tag_release(version: str) -> str:
    """Tag a release (writes may overlap other calls)."""
    RUNS[f"tag {version}"] += 1
    return f"tagged {version}"


TOOLS = [restart_service, read_status, confirm, tag_release]


def runner(policy: ApprovalPolicy, *script: Any, concurrency: int = 2) -> LocalRunner:
    definition = Definition(
        "ops", tools=TOOLS, approval=policy, max_concurrent_tool_calls=concurrency
    )
    return LocalRunner(
        definitions=[definition], tools=TOOLS, models={"default": ScriptedModel(list(script))}
    )


def sent(run_runner: LocalRunner, request: int) -> list[str]:
    model = run_runner.models["default"]
    assert isinstance(model, ScriptedModel)
    return [
        r.content
        for m in model.requests[request].messages
        if m.role == "tool"
        for r in m.tool_results
    ]


async def test_a1_a2_the_call_waits_for_approval_then_runs_once() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("read_status", {"name": "db"}), ("restart_service", {"name": "web-1"})),
        reply.text("done"),
    )
    run = await r.start("ops", [Message.user("go")])
    snap = await run.idle()
    [pending] = snap.pending_tool_inputs
    assert pending.kind == "approval"
    assert pending.prompt["arguments"] == {"name": "web-1"}
    assert pending.prompt["permission"] == "exec"
    # a ToolCall process of its own in both mappings (on_demand promotes it at once)
    assert snap.process(pending.process_id).kind == "tool_call"
    assert snap.process(pending.process_id).tool_entries == 0
    assert runs() == {"read db": 1}  # the read ran; the restart did not
    await run.answer(pending, "a1", {"decision": "approve", "reason": "go ahead"})
    out = await run.result(timeout=WAIT)
    assert out.text == "done"
    assert runs() == {"read db": 1, "restart web-1": 1}
    assert sent(r, 1) == ["db: degraded", "web-1 restarted"]
    entry = run.snapshot().settled_results[0].entries[1]
    assert entry.approval is not None
    assert (entry.approval.decision, entry.approval.by, entry.approval.reason) == (
        "approve",
        "person",
        "go ahead",
    )


async def test_a1_siblings_finish_while_a_parallel_call_waits_for_approval() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("tag_release", {"version": "v2"}), ("read_status", {"name": "db"})),
        reply.text("done"),
    )
    run = await r.start("ops", [Message.user("go")])
    snap = await run.idle()
    [pending] = snap.pending_tool_inputs
    assert pending.prompt["tool"] == "tag_release"
    assert runs() == {"read db": 1}
    await run.answer(pending, "a1", {"decision": "approve"})
    await run.result(timeout=WAIT)
    assert runs() == {"read db": 1, "tag v2": 1}


async def test_a3_denied_the_body_never_runs_and_the_model_reads_the_reason() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("restart_service", {"name": "web-1"})),
        reply.text("understood"),
    )
    run = await r.start("ops", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.answer(pending, "no", {"decision": "deny", "reason": "freeze until Monday"})
    assert (await run.result(timeout=WAIT)).text == "understood"
    assert runs() == {}
    [content] = sent(r, 1)
    assert "was not run: the call was denied approval by a person: freeze until Monday" in content
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.disposition == "rejected" and entry.result.is_error


async def test_a4_remember_covers_later_rounds_and_reaches_the_output() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("restart_service", {"name": "web-1"})),
        reply.tool_calls(("restart_service", {"name": "web-2"})),
        reply.text("both restarted"),
    )
    run = await r.start("ops", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.answer(pending, "a1", {"decision": "approve", "remember": True})
    out = await run.result(timeout=WAIT)
    assert runs() == {"restart web-1": 1, "restart web-2": 1}
    assert out.approved_tools == ("restart_service",)
    rounds = run.snapshot().settled_results
    assert [rd.entries[0].approval.by for rd in rounds] == ["person", "remembered"]  # type: ignore[union-attr]
    assert run.snapshot().root.approved_tools == ("restart_service",)


async def test_a4_a_run_started_with_approved_tools_asks_nobody() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("restart_service", {"name": "web-1"})),
        reply.text("restarted"),
    )
    run = await r.start("ops", [Message.user("go")], approved_tools=["restart_service"])
    out = await run.result(timeout=WAIT)
    assert runs() == {"restart web-1": 1}
    assert out.approved_tools == ("restart_service",)


def non_prod(request: ApprovalRequest) -> ApprovalDecision:
    """Approve restarts outside production; ask for production."""
    if str(request.arguments["name"]).startswith("prod-"):
        return ApprovalDecision.ask()
    return ApprovalDecision.approve("not production")


async def test_a6_the_approver_approves_non_prod_and_a_person_decides_prod() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(approver=non_prod),
        reply.tool_calls(
            ("restart_service", {"name": "staging-1"}), ("restart_service", {"name": "prod-1"})
        ),
        reply.text("done"),
    )
    run = await r.start("ops", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    assert pending.prompt["arguments"] == {"name": "prod-1"}
    assert runs() == {"restart staging-1": 1}
    await run.answer(pending, "no", {"decision": "deny", "reason": "not in prod"})
    await run.result(timeout=WAIT)
    assert runs() == {"restart staging-1": 1}
    by = [e.approval.by for e in run.snapshot().settled_results[0].entries]  # type: ignore[union-attr]
    assert by == ["approver", "person"]


def broken(request: ApprovalRequest) -> ApprovalDecision:
    raise KeyError("region")


async def test_a7_a_broken_approver_fails_the_interaction_as_a_host_failure_naming_it() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(approver=broken),
        reply.tool_calls(("read_status", {"name": "db"}), ("restart_service", {"name": "x"})),
        reply.text("never"),
    )
    run = await r.start("ops", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=WAIT)
    assert failed.value.code == errors.HOST_FAILED
    assert "The approver" in failed.value.message and "broken" in failed.value.message
    assert runs() == {}  # nothing of the round ran


async def test_a8_otherwise_deny_refuses_without_a_wait() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(otherwise="deny"),
        reply.tool_calls(("restart_service", {"name": "web-1"})),
        reply.text("ok"),
    )
    run = await r.start("ops", [Message.user("go")])
    await run.result(timeout=WAIT)
    assert runs() == {}
    assert "denied approval by the approval policy" in sent(r, 1)[0]


async def test_a9_bad_answers_raise_at_the_host_and_leave_the_wait_open() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("restart_service", {"name": "web-1"}), ("confirm", {"what": "this"})),
        reply.text("ok"),
    )
    run = await r.start("ops", [Message.user("go")])
    snap = await run.idle()
    approval = next(w for w in snap.pending_tool_inputs if w.kind == "approval")
    with pytest.raises(InvalidToolInput):
        await run.answer(approval, "h1", {"decision": "yes"})
    with pytest.raises(InvalidToolInput):
        await run.answer(approval, "h2", {"approved": True})
    forged = approval.model_copy(update={"wait_id": approval.process_id + "/wait/1"})
    with pytest.raises(NoSuchWait):
        await run.answer(forged, "h3", {"decision": "approve"})
    assert run.snapshot().pending_tool_inputs == snap.pending_tool_inputs
    assert runs() == {}
    await run.answer(approval, "a1", {"decision": "approve"})
    await run.idle()
    assert runs() == {"restart web-1": 1}


async def test_a9_an_approval_answer_to_a_call_that_needs_none_is_refused() -> None:
    r = runner(
        ApprovalPolicy.deny_writes(),
        reply.tool_calls(("confirm", {"what": "this"})),
        reply.text("ok"),
    )
    run = await r.start("ops", [Message.user("go")])
    [question] = (await run.idle()).pending_tool_inputs
    assert question.kind == "input"
    with pytest.raises(NoSuchWait):
        forged = question.model_copy(update={"wait_id": question.process_id + "/wait/approval"})
        await run.answer(forged, "h1", {"decision": "approve"})
    await run.answer(question, "ok", {"ok": True})
    assert (await run.result(timeout=WAIT)).text == "ok"
