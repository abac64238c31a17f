"""Helpers of the approval tests (docs/approvals.md rules a1-a11): an Interaction with a
covered round, its ToolCall machines behind their approval gates, sample approvers."""

from __future__ import annotations

from typing import Any

from scope_temporal.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.models import reply
from scope_temporal.tools import Succeeded, tool


@tool(permission="exec")
def restart_service(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


@tool(permission="write")
def write_note(text: str) -> str:
    """Write a note."""
    return "noted"


@tool(permission="read")
def read_status(name: str) -> str:
    """Read a service's status."""
    return f"{name}: ok"


TOOLS = [restart_service, write_note, read_status]
DENY_WRITES = ApprovalPolicy.deny_writes()


def definition(policy: ApprovalPolicy | None = DENY_WRITES) -> Definition:
    return Definition("ops", tools=TOOLS, approval=policy, max_concurrent_tool_calls=3)


def responded(
    policy: ApprovalPolicy | None = DENY_WRITES,
    *calls: tuple[str, dict[str, Any]],
    approved_tools: tuple[str, ...] = (),
) -> InteractionMachine:
    """An Interaction whose first model response asked for `calls`."""
    m = InteractionMachine.start(
        definition(policy), "root", [Message.user("go")], approved_tools=approved_tools
    )
    [call_model] = m.next_effects()
    assert isinstance(call_model, CallModel)
    m.on_model(
        ModelResponded(effect_id=call_model.request.effect_id, response=reply.tool_calls(*calls))
    )
    return m


def starts(m: InteractionMachine) -> list[StartToolCall]:
    effects = m.next_effects()
    assert all(isinstance(e, StartToolCall) for e in effects)
    return [e for e in effects if isinstance(e, StartToolCall)]


def gated(name: str = "web-1") -> ToolCallMachine:
    [start] = starts(responded(ApprovalPolicy.deny_writes(), ("restart_service", {"name": name})))
    assert start.approval is not None
    return ToolCallMachine.start(start.request, start.approval)


def wait_of(child: ToolCallMachine) -> str:
    [pending] = child.snapshot().pending_tool_inputs
    return pending.wait_id


def reply_result(content: str) -> Any:
    return ToolResult(call_id="call_1", name="restart_service", content=content)


def settle_gated(
    m: InteractionMachine, start: StartToolCall, response: dict[str, Any], answer_id: str
) -> None:
    child = ToolCallMachine.start(start.request, start.approval)
    if start.approval is not None:
        child.answer(wait_of(child), answer_id, response)
    if child.outcome is None:
        assert child.next_attempt() is not None
        child.on_outcome(
            Succeeded(
                result=reply_result("done").model_copy(update={"call_id": start.request.call.id})
            )
        )
    assert child.outcome is not None
    m.on_call(
        CallSettled(
            effect_id=start.request.effect_id, outcome=child.outcome, approval=child.approval
        )
    )


SEEN: list[ApprovalRequest] = []


def non_prod(request: ApprovalRequest) -> ApprovalDecision:
    """Approve restarts outside prod; deny the database; ask for the rest."""
    SEEN.append(request)
    name = str(request.arguments.get("name", ""))
    if name == "db":
        return ApprovalDecision.deny("never restart the database")
    if not name.startswith("prod-"):
        return ApprovalDecision.approve("not production")
    return ApprovalDecision.ask()


def raises(request: ApprovalRequest) -> ApprovalDecision:
    raise RuntimeError("approver bug")
