"""Approval in the loop: which calls wait for approval, the approval wait, its answers.

Theory of operation (the policy itself: `scope_temporal.approval`). At admission
(`admission.py`) the Interaction judges each tool call its Definition's `ApprovalPolicy`
`covers` (`judge`): the approver hook may approve or deny it then and there, an approval
remembered for the tool lets it run, and `otherwise="deny"` refuses it; else the call is
marked `ask`. When the call starts (`gate`), a tool approved meanwhile by a sibling's
remembered answer runs without asking; any other `ask` call starts its Tool call Process
behind an `ApprovalGate`: the Process opens its approval wait before the first attempt,
and the answer (`ANSWER_SCHEMA`, read by `answered`) approves it (the body runs once) or
denies it (a rejected result, the body never runs). The decision travels back with the
call's settlement; an approval with `remember` adds the tool to the Interaction's
approved tools. Every attempt carries the call's decision to `scope.tool`, whose guard
refuses a covered call with none on record (`admission.admission_problem`). Pure
functions, run inside the machines' transitions.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from scope_temporal import errors
from scope_temporal.approval import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalRequest,
    Approver,
    callable_name,
)
from scope_temporal.chat import ToolCall, ToolResult
from scope_temporal.frozen import freeze_json
from scope_temporal.interaction.hooks import call_hook
from scope_temporal.tools import rejections
from scope_temporal.tools.outcome import Rejected
from scope_temporal.tools.spec import ToolSpec
from scope_temporal.tools.task_specs import TASK_TOOL_SPECS
from scope_temporal.tools.validation import decode_arguments

MAX_REASON_CHARS = 2000
"""Longest reason an answer may give (it reaches the model's context)."""

ANSWER_SCHEMA: dict[str, Any] = freeze_json(
    {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "enum": ["approve", "deny"],
                "description": "approve: the call runs once; deny: it never runs.",
            },
            "reason": {
                "type": "string",
                "maxLength": MAX_REASON_CHARS,
                "description": "Why (a denial's reason is what the model reads).",
            },
            "remember": {
                "type": "boolean",
                "description": "With approve: approve later calls of this tool too "
                "(in this Interaction, and the session's next turns).",
            },
        },
        "required": ["decision"],
        "additionalProperties": False,
    }
)
"""What an approval wait accepts, e.g. `{"decision": "deny", "reason": "not in prod"}`."""

Ask = Literal["ask"]


class ApprovalGate(BaseModel):
    """Why a call's Tool call Process waits for approval before its first attempt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    permission: str
    """The tool's permission (shown in the prompt)."""
    rule: str
    """Which part of the policy asks, for the prompt (e.g. "exec calls need approval")."""


def covers(policy: ApprovalPolicy | None, spec: ToolSpec) -> bool:
    """Whether calls of `spec` need approval under `policy` (the task tools are the
    framework's own)."""
    return policy is not None and policy.applies_to(spec, framework=spec in TASK_TOOL_SPECS)


def judge(
    definition_name: str,
    policy: ApprovalPolicy,
    spec: ToolSpec,
    call: ToolCall,
    ref: str,
    approved_tools: Collection[str],
) -> ApprovalRecord | Ask:
    """At admission, for a call the policy `covers`: the decision taken now, or `ask`.

    Raises:
        ScopeError: `interaction.host.failed`, naming the approver, when it raises, is
            async, or returns anything but an `ApprovalDecision`.
    """
    if policy.approver is not None:
        request = ApprovalRequest(
            definition=definition_name,
            tool=spec.name,
            permission=spec.permission,
            arguments=decode_arguments(call.arguments),
            call_id=call.id,
            ref=ref,
        )
        verdict = _run(policy.approver, request, definition_name)
        if verdict.decision != "ask":
            return ApprovalRecord(decision=verdict.decision, by="approver", reason=verdict.reason)
    if spec.name in approved_tools:
        return ApprovalRecord(decision="approve", by="remembered")
    if policy.otherwise == "deny":
        return ApprovalRecord(
            decision="deny",
            by="policy",
            reason=f"{_rule(policy, spec)}, and this agent may not ask anyone",
        )
    return "ask"


def gate(policy: ApprovalPolicy | None, spec: ToolSpec) -> ApprovalGate:
    """The gate of an `ask` call of `spec` that nothing approved before it started."""
    rule = _rule(policy, spec) if policy is not None else "it needs approval"
    return ApprovalGate(permission=spec.permission, rule=rule)


def _rule(policy: ApprovalPolicy, spec: ToolSpec) -> str:
    if spec.name in policy.tools:
        return f"calls of {spec.name} need approval"
    return f"{spec.permission} calls need approval"


def _run(approver: Approver, request: ApprovalRequest, definition_name: str) -> ApprovalDecision:
    named = (
        f"The approver {callable_name(approver)} of {definition_name!r} (judging "
        f"{request.tool}, {request.ref})"
    )
    return call_hook(
        approver,
        request,
        named,
        ApprovalDecision,
        "ApprovalDecision.approve(), ApprovalDecision.deny(reason) or ApprovalDecision.ask()",
    )


def prompt(call: ToolCall, approval: ApprovalGate) -> dict[str, Any]:
    """The approval wait's prompt: the question, the tool, its permission and arguments
    (admitted calls only: their arguments are a JSON object that fits the schema)."""
    arguments = decode_arguments(call.arguments)
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return {
        "question": f"Allow {call.name}({shown})? ({approval.rule})",
        "tool": call.name,
        "permission": approval.permission,
        "arguments": arguments,
    }


def answered(
    call: ToolCall, response: Any, answer_id: str
) -> tuple[ApprovalRecord, Rejected | None]:
    """The decision an answer gives (it matched `ANSWER_SCHEMA`), and the call's rejected
    outcome when it is a denial."""
    decision = response["decision"]
    record = ApprovalRecord(
        decision=decision,
        by="person",
        reason=response.get("reason", ""),
        remember=decision == "approve" and bool(response.get("remember", False)),
        answer_id=answer_id,
    )
    if decision == "approve":
        return record, None
    return record, Rejected(result=denied(call, record), code=errors.TOOL_APPROVAL_DENIED)


def denied(call: ToolCall, record: ApprovalRecord) -> ToolResult:
    """The model-visible result of a denied call."""
    by = {
        "person": "a person",
        "approver": "the approval policy's approver",
        "policy": "the approval policy",
        "remembered": "an earlier decision",
    }[record.by]
    return rejections.approval_denied(call, by, record.reason)


def signal_json(wait_id: str, decision: Literal["approve", "deny"]) -> str:
    """The exact `scope.tool_input` signal input that answers an approval wait (what
    a person pastes into the Temporal UI's signal dialog)."""
    response: dict[str, Any] = {"decision": decision, "reason": "", "remember": False}
    if decision == "deny":
        response = {"decision": decision, "reason": "say why"}
    return json.dumps(
        {"wait_id": wait_id, "answer_id": f"ui-{decision}", "response": response},
        ensure_ascii=False,
    )


__all__ = [
    "ANSWER_SCHEMA",
    "MAX_REASON_CHARS",
    "ApprovalGate",
    "Ask",
    "answered",
    "covers",
    "denied",
    "gate",
    "judge",
    "prompt",
    "signal_json",
]
