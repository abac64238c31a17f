"""Admission of one tool call: the one judgement of whether it may run, made in two places.

The Interaction's machine admits each call of a model response (`rounds.py`) and the
`scope.tool` activity admits the attempt it is asked to run (its guard, against a
`scope.ToolCall` started by hand with a forged input); both ask `admission`, so the
two can never disagree. A call is refused, in this order (the first refusal decides):

1. no tool is bound under its name (for the machine: an ordinary tool, or a deferred
   one it advertised) -> "not available", `tool.not_found`;
2. its permission is not granted, or the grant is wider than the Definition's
   capabilities -> "not authorized", `tool.not_authorized`;
3. its arguments do not fit the tool's schema -> "invalid arguments",
   `tool.input_invalid`;
4. the Definition's approval policy covers it and
   - its decision is a denial -> "denied approval", `tool.approval.denied`;
   - no decision is on record -> "not authorized: needs approval",
     `tool.not_authorized` (only the activity meets this: the machine always decides).

The machine decides the approval itself (`approvals.judge`: the approver, an approval
remembered for the tool, `otherwise`); `ask` admits the call behind an approval wait.
The activity takes the decision the attempt carries (made at admission, or by the
person who answered the call's approval wait). Pure; raises only what a broken schema
raises (`validate_arguments`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import ToolCall, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.errors import (
    TOOL_APPROVAL_DENIED,
    TOOL_INPUT_INVALID,
    TOOL_NOT_AUTHORIZED,
    TOOL_NOT_FOUND,
)
from scope_temporal.interaction import approvals
from scope_temporal.interaction.approvals import Ask
from scope_temporal.interaction.rules import bound_tool
from scope_temporal.tools import rejections
from scope_temporal.tools.spec import ToolSpec
from scope_temporal.tools.validation import validate_arguments

Decision = ApprovalRecord | Ask | None
"""A covered call's approval: decided (approve or deny), `ask` a person, or None: none
on record."""

Decide = Callable[[ToolSpec], Decision]
"""How a covered call's approval is found: judged now (the machine), or read from the
record the attempt carries (the activity)."""


@dataclass(frozen=True)
class Admitted:
    """The call may run (behind an approval wait when its approval is `ask`)."""

    spec: ToolSpec
    approval: ApprovalRecord | Ask | None
    """The call's approval decision; None when the policy does not cover it."""


@dataclass(frozen=True)
class Refusal:
    """The call may not run: the model-visible rejected result, and its code."""

    result: ToolResult
    code: str
    approval: ApprovalRecord | None = None
    """The denial, when the approval decided it."""


def admission(
    definition: Definition,
    call: ToolCall,
    *,
    granted: Collection[str],
    decide: Decide,
    advertised: Collection[str] | None = None,
) -> Admitted | Refusal:
    """Admit `call` or refuse it (see the module docstring for the order).

    Args:
        definition: the Definition of the Interaction making the call.
        call: the call as the model made it.
        granted: the permissions the calling Process holds.
        decide: finds a covered call's approval (asked only for a call that passed 1-3).
        advertised: the deferred tools advertised so far (the machine); None: any tool
            the Definition binds (the activity, which cannot know what was advertised).

    Raises:
        ScopeError: the tool's own schema is not valid (`validate_arguments`).
    """
    if advertised is None:
        spec = definition.tools.get(call.name)
    else:
        spec = bound_tool(definition, list(advertised), call.name)
    if spec is None:
        return Refusal(rejections.not_available(call), TOOL_NOT_FOUND)
    if spec.permission not in granted or not set(granted) <= definition.capabilities:
        return Refusal(rejections.not_authorized(call, spec.permission), TOOL_NOT_AUTHORIZED)
    error = validate_arguments(spec.parameters, call.arguments)
    if error is not None:
        return Refusal(rejections.invalid_arguments(call, error), TOOL_INPUT_INVALID)
    if not approvals.covers(definition.approval, spec):
        return Admitted(spec, None)
    decision = decide(spec)
    if decision is None:
        return Refusal(rejections.not_approved(call), TOOL_NOT_AUTHORIZED)
    if decision != "ask" and decision.decision == "deny":
        return Refusal(approvals.denied(call, decision), TOOL_APPROVAL_DENIED, decision)
    return Admitted(spec, decision)


def admission_problem(
    definition: Definition,
    call: ToolCall,
    *,
    granted: Collection[str],
    approval: ApprovalRecord | None,
) -> Refusal | None:
    """Why an attempt of `call` may not run, or None: `admission` with the approval
    decision on record (`approval`; None: none)."""
    verdict = admission(definition, call, granted=granted, decide=lambda _spec: approval)
    return verdict if isinstance(verdict, Refusal) else None


__all__ = ["Admitted", "Decide", "Decision", "Refusal", "admission", "admission_problem"]
