"""Admission of a tool call, judged once (issue 26 item 3) and again by `scope.tool`'s
guard with the approval decision the attempt carries (issue 25 defect 8).

`interaction.admission` refuses, in order: an unbound tool, a permission not granted (or
a grant wider than the Definition's), arguments off the schema, and for a call the
approval policy covers, a denial or no decision on record. The machine and the guard ask
the same function, so they cannot disagree; every attempt carries its call's decision.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

import pytest

from scope_temporal.activities.served import Served
from scope_temporal.activities.tool_attempt import attempt_once, serving, unauthorised
from scope_temporal.approval import ApprovalDecision, ApprovalPolicy, ApprovalRecord
from scope_temporal.background.runtime import BackgroundRuntime
from scope_temporal.chat import ToolCall
from scope_temporal.definition import Definition
from scope_temporal.errors import (
    TOOL_APPROVAL_DENIED,
    TOOL_INPUT_INVALID,
    TOOL_NOT_AUTHORIZED,
    TOOL_NOT_FOUND,
)
from scope_temporal.interaction.admission import Refusal, admission_problem
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.state import CallSlot
from scope_temporal.interaction.tool_call import ToolAttempt, ToolCallMachine
from scope_temporal.observers import ObserverHub
from scope_temporal.registry import Registry
from scope_temporal.tools import Rejected, tool
from scope_temporal.tools.registry import ToolRegistry
from tests.unit.approval_rounds import (
    TOOLS,
    definition,
    responded,
    starts,
    wait_of,
)

APPROVED = ApprovalRecord(decision="approve", by="person", answer_id="a1")
DENIED = ApprovalRecord(decision="deny", by="approver", reason="not in prod")
ALL = ("exec", "read", "write")


def call(tool_name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(id="c1", name=tool_name, arguments=json.dumps(arguments))


def problem(
    tool_name: str,
    /,
    granted: tuple[str, ...] = ALL,
    approval: ApprovalRecord | None = None,
    **arguments: Any,
) -> Refusal | None:
    return admission_problem(
        definition(), call(tool_name, **arguments), granted=granted, approval=approval
    )


def test_seam_08_an_unbound_tool_is_not_available() -> None:
    refusal = problem("nope")
    assert refusal is not None and refusal.code == TOOL_NOT_FOUND
    assert refusal.result.is_error
    assert "Tool 'nope' is not available" in refusal.result.content


def test_seam_08_a_permission_not_granted_is_not_authorized() -> None:
    refusal = problem("write_note", granted=("read",), approval=APPROVED, text="x")
    assert refusal is not None and refusal.code == TOOL_NOT_AUTHORIZED
    assert "not granted 'write' permission" in refusal.result.content


def test_seam_08_a_grant_wider_than_the_definitions_is_not_authorized() -> None:
    read_only = Definition("ops-read", tools=TOOLS, capabilities={"read"})
    refusal = admission_problem(
        read_only, call("read_status", name="a"), granted=("read", "exec"), approval=None
    )
    assert refusal is not None and refusal.code == TOOL_NOT_AUTHORIZED


def test_seam_08_arguments_off_the_schema_are_invalid() -> None:
    refusal = problem("read_status", nombre="a")
    assert refusal is not None and refusal.code == TOOL_INPUT_INVALID
    assert "invalid arguments" in refusal.result.content


def test_seam_08_a_covered_call_with_no_approval_on_record_is_refused() -> None:
    refusal = problem("restart_service", name="web-1")
    assert refusal is not None and refusal.code == TOOL_NOT_AUTHORIZED
    assert "needs approval and no approval decision is on record" in refusal.result.content


def test_seam_08_a_covered_call_denied_on_record_is_refused_with_the_reason() -> None:
    refusal = problem("restart_service", approval=DENIED, name="web-1")
    assert refusal is not None and refusal.code == TOOL_APPROVAL_DENIED
    assert refusal.approval == DENIED and "not in prod" in refusal.result.content


def test_seam_08_an_approved_or_uncovered_call_is_admitted() -> None:
    assert problem("restart_service", approval=APPROVED, name="web-1") is None
    assert problem("read_status", name="web-1") is None  # reads are not covered
    assert problem("read_status", granted=("read",), name="web-1") is None


def _attempt(tool_name: str, approval: ApprovalRecord | None, /, **arguments: Any) -> ToolAttempt:
    d = definition()
    request = ToolEffectRequest(
        definition=d.name,
        digest=d.digest,
        process_id="root/tool/1/0",
        parent_id="root",
        effect_id="root/tool/1/0/effect",
        ref="root/1/0",
        model_call_seq=1,
        call_index=0,
        call=call(tool_name, **arguments),
        granted=ALL,
    )
    return ToolAttempt(request=request, entry=1, approval=approval)


def test_seam_08_the_tool_guard_refuses_a_covered_attempt_without_an_approval() -> None:
    tools = ToolRegistry(TOOLS)
    restart = tools.get("restart_service")
    refused = unauthorised(_attempt("restart_service", None, name="web-1"), definition(), restart)
    assert isinstance(refused, Rejected) and refused.code == TOOL_NOT_AUTHORIZED
    assert "needs approval" in refused.result.content
    denied = unauthorised(_attempt("restart_service", DENIED, name="web-1"), definition(), restart)
    assert isinstance(denied, Rejected) and denied.code == TOOL_APPROVAL_DENIED
    approved = _attempt("restart_service", APPROVED, name="web-1")
    assert unauthorised(approved, definition(), restart) is None
    read = tools.get("read_status")
    assert unauthorised(_attempt("read_status", None, name="a"), definition(), read) is None


async def test_seam_08_a_refused_attempt_never_enters_the_tool_body() -> None:
    ran: list[str] = []

    @tool(name="restart_service", permission="exec")
    def counted(name: str) -> str:
        """Restart a service."""
        ran.append(name)
        return name

    tools = ToolRegistry([counted, *TOOLS[1:]])
    d = definition()
    registry = Registry([d])

    async def once(attempt: ToolAttempt) -> Any:
        served = SimpleNamespace(
            registry=registry, tools=tools, middleware=(), observers=ObserverHub(), mcp=None
        )
        return await attempt_once(
            attempt,
            cast(Served, served),
            *serving(attempt, cast(Served, served)),
            runtime=cast(BackgroundRuntime, None),  # a refusal never reaches the runtime
        )

    narrow = _attempt("restart_service", APPROVED, name="web-1")
    narrow = narrow.model_copy(
        update={"request": narrow.request.model_copy(update={"granted": ("read",)})}
    )
    for refused in (_attempt("restart_service", None, name="web-1"), narrow):
        outcome = await once(refused)
        assert isinstance(outcome, Rejected) and outcome.code == TOOL_NOT_AUTHORIZED
    assert ran == []
    assert "not granted 'exec' permission" in (await once(narrow)).result.content


def _approve_web(request: Any) -> ApprovalDecision:
    if str(request.arguments.get("name", "")).startswith("web-"):
        return ApprovalDecision.approve("web is safe")
    return ApprovalDecision.ask()


def test_seam_08_every_attempt_carries_its_calls_approval_decision() -> None:
    policy = ApprovalPolicy.deny_writes(approver=_approve_web)
    # decided at admission (the approver): the start and each attempt carry it
    [start] = starts(responded(policy, ("restart_service", {"name": "web-1"})))
    assert start.approval is None and start.decision is not None
    assert start.decision.by == "approver"
    attempt = ToolCallMachine.start(start.request, decision=start.decision).next_attempt()
    assert attempt is not None and attempt.approval == start.decision
    # remembered for the session: likewise
    remembered = ("restart_service",)
    [start] = starts(
        responded(policy, ("restart_service", {"name": "db-1"}), approved_tools=remembered)
    )
    assert start.decision is not None and start.decision.by == "remembered"
    # decided by a person answering the approval wait: the attempt after it carries that
    [start] = starts(responded(policy, ("restart_service", {"name": "db-1"})))
    assert start.approval is not None and start.decision is None
    child = ToolCallMachine.start(start.request, start.approval)
    child.answer(wait_of(child), "a1", {"decision": "approve"})
    attempt = child.next_attempt()
    assert attempt is not None and attempt.approval is not None
    assert attempt.approval.by == "person" and attempt.approval.answer_id == "a1"
    # not covered: nothing to carry, and nothing the guard asks for
    [start] = starts(responded(policy, ("read_status", {"name": "db-1"})))
    assert start.approval is None and start.decision is None


@pytest.mark.parametrize(
    ("name", "arguments", "approved_tools"),
    [
        ("restart_service", {"name": "web-1"}, ()),  # the approver approves
        ("restart_service", {"name": "db-1"}, ("restart_service",)),  # remembered
        ("write_note", {"text": "x"}, ()),  # asks: a person approves
        ("read_status", {"name": "a"}, ()),  # not covered
    ],
)
def test_seam_08_what_the_machine_admits_the_guard_admits(
    name: str, arguments: dict[str, Any], approved_tools: tuple[str, ...]
) -> None:
    policy = ApprovalPolicy.deny_writes(approver=_approve_web)
    m = responded(policy, (name, arguments), approved_tools=approved_tools)
    [start] = starts(m)
    child = ToolCallMachine.start(start.request, start.approval, start.decision)
    if start.approval is not None:
        child.answer(wait_of(child), "a1", {"decision": "approve"})
    attempt = child.next_attempt()
    assert attempt is not None
    d = definition(policy)
    served = ToolRegistry(TOOLS).get(name)
    assert unauthorised(attempt, d, served) is None
    stripped = attempt.model_copy(update={"approval": None})  # as a hand-started call has
    covered = name != "read_status"
    assert (unauthorised(stripped, d, served) is not None) == covered


def test_c26_a_slot_recorded_with_the_old_approval_pair_decodes_to_one_field() -> None:
    old = {
        "index": 0,
        "call": {"id": "c1", "name": "restart_service", "arguments": "{}"},
        "effect_id": "e",
        "target": "tool",
        "ask_approval": True,
        "approval": None,
    }
    assert CallSlot.model_validate(old).approval == "ask"
    decided = {**old, "ask_approval": False, "approval": APPROVED.model_dump()}
    assert CallSlot.model_validate(decided).approval == APPROVED
    assert CallSlot.model_validate({**old, "ask_approval": False}).approval is None
    assert "ask_approval" not in CallSlot.model_validate(old).model_dump()
