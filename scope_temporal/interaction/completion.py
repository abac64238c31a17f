"""Completion: a candidate output is accepted, sent back with feedback, or deferred.

A candidate (a final reply, or a fully successful direct-result batch) completes only if
no steer is pending and the output schema and completion validator accept it.
"""

from __future__ import annotations

from typing import Literal

from scope_temporal.chat import Message, Response, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.errors import ScopeError
from scope_temporal.interaction import rules
from scope_temporal.interaction.state import InteractionState
from scope_temporal.outputs import CompletionCandidate, Output


def candidate(
    definition: Definition,
    s: InteractionState,
    *,
    model_response: Response | None = None,
    direct: tuple[ToolResult, ...] | None = None,
) -> None:
    if s.mailbox:
        s.phase = "need_model"  # a pending steer always gets its model call
        return
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
                context=tuple(s.context),
                artifacts=tuple(s.artifacts),
            ),
        )
    except ScopeError as error:  # the validator itself raised: a definite host failure
        rules.fail(s, error.code, error.message)
        return
    if feedback is not None:
        s.context.append(Message.user(feedback))
        s.phase = "need_model"
        return
    s.output = Output(
        source=source,
        model_response=model_response,
        direct_tool_results=direct,
        model_calls=s.model_calls,
        artifacts=tuple(s.artifacts),
        data=data,
    )
    s.phase = "completed"
