"""Approval policies on the pure machines (rules a1-a11, see docs/approvals.md):

a1  a covered call waits for approval before its body runs (one pending input of kind
    `approval`, its prompt the tool, arguments and permission);
a2  approved, the body runs once; a3  denied, a model-visible rejected result with the
    reason, the body never entered; a4  `remember` approves the tool's later calls, and
    pre-approved tools need no approval; a5  calls not covered never wait; a6  the
    approver decides by arguments before a person is asked; a7  an approver that
    raises, is async or returns nonsense fails the Interaction naming it; a8
    `otherwise="deny"` denies without asking; a9  hostile answers change nothing;
    a10 the policy and the approver's code are part of the digest (only when set);
    a11 the exact signal JSON to answer from the Temporal UI. a9-a11 are in
    test_core_approval_answers.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from scope_temporal import errors
from scope_temporal.approval import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalRequest,
)
from scope_temporal.interaction.approvals import ANSWER_SCHEMA
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.interaction.tool_call import ToolCallMachine, ToolCallState
from scope_temporal.models import reply
from scope_temporal.tools import Rejected, Succeeded
from scope_temporal.tools.task_specs import task_cancel
from tests.unit.approval_rounds import (
    SEEN,
    definition,
    gated,
    non_prod,
    raises,
    reply_result,
    responded,
    settle_gated,
    starts,
    wait_of,
)

# --- a1 ----------------------------------------------------------------------------------


def test_a1_a_covered_call_waits_for_approval_before_its_first_attempt() -> None:
    child = gated()
    assert child.phase == "waiting" and child.status == "waiting"
    assert child.next_attempt() is None
    snap = child.snapshot()
    assert snap.tool_entries == 0
    [pending] = snap.pending_tool_inputs
    assert pending.kind == "approval"
    assert pending.wait_id == "root/tool/1/0/wait/approval"
    assert pending.response_schema == ANSWER_SCHEMA
    assert pending.prompt == {
        "question": 'Allow restart_service(name="web-1")? (exec calls need approval)',
        "tool": "restart_service",
        "permission": "exec",
        "arguments": {"name": "web-1"},
    }
    assert pending.prompt_text == pending.prompt["question"]
    restored = ToolCallMachine(ToolCallState.model_validate_json(child.state.model_dump_json()))
    assert restored.snapshot() == snap


def test_a1_the_gate_names_the_rule_that_asks() -> None:
    policy = ApprovalPolicy(tools=("read_status",))
    [start] = starts(responded(policy, ("read_status", {"name": "db"})))
    assert start.approval is not None
    assert start.approval.rule == "calls of read_status need approval"
    assert start.approval.permission == "read"


# --- a2 and a3 ---------------------------------------------------------------------------


def test_a2_approved_the_body_runs_once_without_a_continuation() -> None:
    child = gated()
    assert child.answer(wait_of(child), "a1", {"decision": "approve", "reason": "ok"}) is True
    attempt = child.next_attempt()
    assert attempt is not None and attempt.entry == 1 and not attempt.has_continuation
    assert child.next_attempt() is None
    child.on_outcome(Succeeded(result=reply_result("web-1 restarted")))
    assert child.approval == ApprovalRecord(
        decision="approve", by="person", reason="ok", answer_id="a1"
    )
    assert child.snapshot().tool_entries == 1


def test_a3_denied_the_call_settles_rejected_with_the_reason_and_is_never_entered() -> None:
    child = gated()
    child.answer(wait_of(child), "no-1", {"decision": "deny", "reason": "not during the sale"})
    assert child.phase == "settled" and child.next_attempt() is None
    outcome = child.outcome
    assert isinstance(outcome, Rejected)
    assert outcome.code == errors.TOOL_APPROVAL_DENIED
    assert outcome.result.is_error
    assert "denied approval by a person: not during the sale" in outcome.result.content
    assert child.snapshot().tool_entries == 0
    assert child.snapshot().pending_tool_inputs == ()


def test_a3_the_interaction_commits_the_denial_for_the_model() -> None:
    m = responded(ApprovalPolicy.deny_writes(), ("restart_service", {"name": "web-1"}))
    [start] = starts(m)
    child = ToolCallMachine.start(start.request, start.approval)
    child.answer(wait_of(child), "no-1", {"decision": "deny", "reason": "not now"})
    assert child.outcome is not None
    m.on_call(
        CallSettled(
            effect_id=start.request.effect_id, outcome=child.outcome, approval=child.approval
        )
    )
    [entry] = m.snapshot().settled_results[0].entries
    assert entry.disposition == "rejected"
    assert entry.approval is not None and entry.approval.decision == "deny"
    assert "not now" in m.state.context[-1].tool_results[0].content


# --- a4 ----------------------------------------------------------------------------------


def test_a4_remember_approves_the_tools_later_calls_in_the_same_round() -> None:
    m = responded(
        ApprovalPolicy.deny_writes(),
        ("restart_service", {"name": "web-1"}),
        ("restart_service", {"name": "web-2"}),
    )
    [first] = starts(m)  # exec calls are sequential: one at a time
    assert first.approval is not None
    settle_gated(m, first, {"decision": "approve", "remember": True}, "a1")
    assert m.approved_tools == ("restart_service",)
    [second] = starts(m)
    assert second.approval is None  # remembered: no wait
    settle_gated(m, second, {"decision": "approve"}, "unused")
    entries = m.snapshot().settled_results[0].entries
    assert [e.approval.by if e.approval else None for e in entries] == ["person", "remembered"]
    assert m.snapshot().approved_tools == ("restart_service",)


def test_a4_an_approval_without_remember_is_not_remembered() -> None:
    m = responded(
        ApprovalPolicy.deny_writes(),
        ("restart_service", {"name": "web-1"}),
        ("restart_service", {"name": "web-2"}),
    )
    [first] = starts(m)
    settle_gated(m, first, {"decision": "approve", "remember": False}, "a1")
    [second] = starts(m)
    assert second.approval is not None
    assert m.approved_tools == ()


def test_a4_a_denial_is_never_remembered() -> None:
    m = responded(ApprovalPolicy.deny_writes(), ("restart_service", {"name": "web-1"}))
    [first] = starts(m)
    settle_gated(m, first, {"decision": "deny", "reason": "no", "remember": True}, "d1")
    assert m.approved_tools == ()


def test_a4_pre_approved_tools_need_no_approval_and_unknown_names_are_ignored() -> None:
    m = responded(
        ApprovalPolicy.deny_writes(),
        ("restart_service", {"name": "web-1"}),
        approved_tools=("restart_service", "no_such_tool"),
    )
    assert m.approved_tools == ("restart_service",)
    [start] = starts(m)
    assert start.approval is None
    slot = m.state.round.slots[0]  # type: ignore[union-attr]
    assert slot.approval == ApprovalRecord(decision="approve", by="remembered")


def test_a4_approved_tools_survive_continue_as_new_and_reach_the_output() -> None:
    m = responded(ApprovalPolicy.deny_writes(), ("restart_service", {"name": "web-1"}))
    [start] = starts(m)
    settle_gated(m, start, {"decision": "approve", "remember": True}, "a1")
    carried = InteractionState.model_validate_json(m.state.model_dump_json())
    restored = InteractionMachine(definition(), carried)
    assert restored.approved_tools == ("restart_service",)
    [call_model] = restored.next_effects()
    assert isinstance(call_model, CallModel)
    restored.on_model(
        ModelResponded(effect_id=call_model.request.effect_id, response=reply.text("done"))
    )
    assert restored.output is not None
    assert restored.output.approved_tools == ("restart_service",)


def test_a4_a_settlement_reporting_an_approval_for_a_call_that_had_no_gate_is_ignored() -> None:
    m = responded(ApprovalPolicy.deny_writes(), ("read_status", {"name": "db"}))
    [start] = starts(m)
    assert start.approval is None
    forged = ApprovalRecord(decision="approve", by="person", remember=True, answer_id="x")
    result = reply_result("db: ok").model_copy(update={"name": "read_status"})
    m.on_call(
        CallSettled(
            effect_id=start.request.effect_id, outcome=Succeeded(result=result), approval=forged
        )
    )
    assert m.approved_tools == ()
    assert m.snapshot().settled_results[0].entries[0].approval is None


# --- a5 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "name", "waits"),
    [
        (ApprovalPolicy.deny_writes(), "read_status", False),
        (ApprovalPolicy.deny_writes(), "write_note", True),
        (ApprovalPolicy.deny_writes(exempt=("write_note",)), "write_note", False),
        (ApprovalPolicy(require=("exec",)), "write_note", False),
        (ApprovalPolicy(tools=("read_status",)), "read_status", True),
        (None, "restart_service", False),
    ],
    ids=["read", "write", "exempt", "other-permission", "named-tool", "no-policy"],
)
def test_a5_only_covered_calls_wait(policy: ApprovalPolicy | None, name: str, waits: bool) -> None:
    arguments = {"text": "x"} if name == "write_note" else {"name": "x"}
    [start] = starts(responded(policy, (name, arguments)))
    assert (start.approval is not None) is waits


def test_a5_the_framework_task_tools_are_exempt_unless_named() -> None:
    policy = ApprovalPolicy.deny_writes()
    assert task_cancel.spec.permission == "write"
    from scope_temporal.tools.task_specs import TASK_TOOL_SPECS

    spec = next(s for s in TASK_TOOL_SPECS if s.name == "task_cancel")
    assert not policy.applies_to(spec, framework=True)
    assert ApprovalPolicy(tools=("task_cancel",)).applies_to(spec, framework=True)


# --- a6, a7, a8 --------------------------------------------------------------------------


def test_a6_the_approver_decides_by_arguments_before_a_person_is_asked() -> None:
    SEEN.clear()
    policy = ApprovalPolicy.deny_writes(approver=non_prod)
    m = responded(
        policy,
        ("restart_service", {"name": "staging-1"}),
        ("restart_service", {"name": "db"}),
        ("restart_service", {"name": "prod-1"}),
    )
    assert [r.arguments["name"] for r in SEEN] == ["staging-1", "db", "prod-1"]
    assert SEEN[0] == ApprovalRequest(
        definition="ops",
        tool="restart_service",
        permission="exec",
        arguments={"name": "staging-1"},
        call_id="call_1",
        ref="root/1/0",
    )
    slots = m.state.round.slots  # type: ignore[union-attr]
    assert slots[0].approval == ApprovalRecord(
        decision="approve", by="approver", reason="not production"
    )
    assert slots[1].status == "settled" and slots[1].disposition == "rejected"
    assert slots[1].result is not None
    assert "the approval policy's approver: never restart the database" in slots[1].result.content
    [first] = starts(m)
    assert first.approval is None  # approved by the hook: runs
    settle_gated(m, first, {"decision": "approve"}, "unused")
    [third] = starts(m)
    assert third.approval is not None  # asked: a person decides


def test_a6_a_denying_approver_wins_over_a_remembered_approval() -> None:
    policy = ApprovalPolicy.deny_writes(approver=non_prod)
    m = responded(policy, ("restart_service", {"name": "db"}), approved_tools=("restart_service",))
    [entry] = m.snapshot().settled_results[0].entries
    assert entry.disposition == "rejected" and entry.approval is not None
    assert entry.approval.by == "approver"


def returns_none(request: ApprovalRequest) -> ApprovalDecision:
    return None  # type: ignore[return-value]


async def is_async(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.approve()


@pytest.mark.parametrize(
    ("approver", "says"),
    [
        (raises, "raised RuntimeError('approver bug')"),
        (returns_none, "returned None, not an ApprovalDecision"),
        (is_async, "is async"),
        (lambda request: True, "returned True, not an ApprovalDecision"),
    ],
    ids=["raises", "none", "async", "bool"],
)
def test_a7_a_broken_approver_fails_the_interaction_naming_it(approver: Any, says: str) -> None:
    m = responded(ApprovalPolicy.deny_writes(approver=approver), ("restart_service", {"name": "x"}))
    assert m.done and m.status == "failed"
    failure = m.failure
    assert failure is not None and failure.code == errors.HOST_FAILED
    assert "The approver" in failure.message and says in failure.message
    assert getattr(approver, "__qualname__", "") in failure.message
    assert m.next_effects() == []


def test_a8_otherwise_deny_denies_without_asking() -> None:
    policy = ApprovalPolicy.deny_writes(otherwise="deny")
    m = responded(policy, ("restart_service", {"name": "web-1"}), ("read_status", {"name": "a"}))
    slots = m.state.round.slots  # type: ignore[union-attr]
    assert slots[0].disposition == "rejected"
    assert slots[0].approval == ApprovalRecord(
        decision="deny",
        by="policy",
        reason="exec calls need approval, and this agent may not ask anyone",
    )
    assert "denied approval by the approval policy" in (slots[0].result.content or "")  # type: ignore[union-attr]
    [start] = starts(m)
    assert start.request.call.name == "read_status"
    pre = responded(policy, ("restart_service", {"name": "w"}), approved_tools=("restart_service",))
    [start] = starts(pre)
    assert start.approval is None  # an earlier approval still counts
