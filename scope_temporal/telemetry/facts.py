"""What one `scope.model` or `scope.tool` activity did, read from its input and result.

Shared by the spans and the metrics, so both tell the same story. Pure: no I/O, no
OpenTelemetry. A result that is not data (the activity raised, e.g. it was cancelled) is
`unknown`, as the workflow records it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scope_temporal.chat import Usage
from scope_temporal.interaction.effects import (
    ModelHostFailed,
    ModelNotRun,
    ModelResponded,
    ModelUnknown,
)
from scope_temporal.models.protocol import Model
from scope_temporal.payloads import ModelActivityInput, ToolActivityInput
from scope_temporal.telemetry.conventions import Outcome
from scope_temporal.tools.outcome import (
    Backgrounded,
    Failed,
    InputRequired,
    Rejected,
    Succeeded,
    Unknown,
)


@dataclass(frozen=True, slots=True)
class ModelCallFacts:
    """One model call: what was asked, and (once settled) what came of it."""

    definition: str
    model: str
    """The registered name (`Definition(model=...)`)."""
    request_model: str
    """The provider's model name when the registered model says it (an `OpenAIChatModel`'s
    `model`), else the registered name."""
    process_id: str
    effect_id: str
    seq: int
    temperature: float | None
    max_tokens: int | None


@dataclass(frozen=True, slots=True)
class ModelResult:
    outcome: Outcome
    error_type: str | None = None
    """What went wrong (OpenTelemetry's `error.type`), for an outcome that is not success."""
    usage: Usage | None = None
    response_model: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallFacts:
    definition: str
    tool: str
    call_id: str
    ref: str
    effect_id: str
    process_id: str
    entry: int


@dataclass(frozen=True, slots=True)
class ToolResult:
    outcome: Outcome
    error_type: str | None = None
    """The outcome's code (e.g. `tool.not_found`), for an outcome that is not success."""


def model_call(input: ModelActivityInput, models: Mapping[str, Model]) -> ModelCallFacts:
    provider_name = getattr(models.get(input.model), "model", None)
    return ModelCallFacts(
        definition=input.definition,
        model=input.model,
        request_model=provider_name if isinstance(provider_name, str) else input.model,
        process_id=input.process_id,
        effect_id=input.effect_id,
        seq=input.model_call_seq,
        temperature=input.options.temperature,
        max_tokens=input.options.max_tokens,
    )


def model_result(result: object) -> ModelResult:
    """The outcome of a `scope.model` result; None (it raised) is `unknown`."""
    if isinstance(result, ModelResponded):
        response = result.response
        return ModelResult(
            "succeeded",
            usage=response.usage,
            response_model=response.model,
            finish_reason=response.finish_reason,
        )
    if isinstance(result, ModelHostFailed):
        return ModelResult("failed", error_type="host_failed")
    if isinstance(result, ModelNotRun):  # refused before it ran: definite
        return ModelResult("rejected", error_type=result.reason.code)
    if isinstance(result, ModelUnknown):
        return ModelResult("unknown", error_type="unknown")
    return ModelResult("unknown", error_type="activity_error")


def tool_call(input: ToolActivityInput) -> ToolCallFacts:
    request = input.attempt.request
    return ToolCallFacts(
        definition=request.definition,
        tool=request.call.name,
        call_id=request.call.id,
        ref=request.ref,
        effect_id=request.effect_id,
        process_id=request.process_id,
        entry=input.attempt.entry,
    )


def tool_result(result: object) -> ToolResult:
    """The outcome of one entry into a tool body; None (it raised) is `unknown`."""
    if isinstance(result, Succeeded | Backgrounded | InputRequired):
        return ToolResult(result.kind)
    if isinstance(result, Failed | Rejected | Unknown):
        return ToolResult(result.kind, error_type=result.code)
    return ToolResult("unknown", error_type="activity_error")
