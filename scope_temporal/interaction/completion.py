"""Completion: what becomes of a candidate output (a decision; the machine applies it).

A candidate (a final reply, or a fully successful direct-result batch) completes only if
no steer is pending and the output schema and completion validator accept it; rejected,
the model is called again with the feedback; a validator that itself fails is a
definite host failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from scope_temporal.chat import Response, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.errors import ScopeError
from scope_temporal.interaction import notices, rules
from scope_temporal.interaction.state import InteractionState
from scope_temporal.outputs import CompletionCandidate, Failure, Output


@dataclass(frozen=True)
class Accepted:
    """The Interaction completes with `output`."""

    output: Output


@dataclass(frozen=True)
class Again:
    """The model is called again; `feedback` (if any) is its next user message."""

    feedback: str | None = None


@dataclass(frozen=True)
class Refused:
    """The validator itself failed: the Interaction fails with `failure`."""

    failure: Failure


Decision = Accepted | Again | Refused


def judge(
    definition: Definition,
    s: InteractionState,
    *,
    model_response: Response | None = None,
    direct: tuple[ToolResult, ...] | None = None,
) -> Decision:
    """What becomes of the candidate (reads the state, changes nothing).

    The candidate is the last message of the working context (the machine has just
    appended the reply, or committed the direct results); the validator's context is
    everything before it (conformance rule c60: the `test_c60_*` tests)."""
    if notices.live(s.mailbox, s.context):
        return Again()  # a pending steer always gets its model call
    source: Literal["model_response", "direct_tool_results"] = (
        "model_response" if model_response is not None else "direct_tool_results"
    )
    text = (
        model_response.message.text
        if model_response
        else "\n".join(r.content for r in direct or ())
    )
    try:
        feedback, data = rules.judge(
            definition,
            CompletionCandidate(
                source=source,
                output_text=text,
                model_response=model_response,
                direct_tool_results=direct,
                context=tuple(s.context[:-1]),  # the candidate is the last message
                artifacts=tuple(s.artifacts),
            ),
        )
    except ScopeError as error:  # the validator itself raised: a definite host failure
        return Refused(Failure.of(error.code, error.message))
    if feedback is not None:
        return Again(feedback)
    return Accepted(
        Output(
            source=source,
            model_response=model_response,
            direct_tool_results=direct,
            model_calls=s.model_calls,
            artifacts=tuple(s.artifacts),
            data=data,
            approved_tools=tuple(s.approved_tools),
            usage=s.usage,
        )
    )


__all__ = ["Accepted", "Again", "Decision", "Refused", "judge"]
