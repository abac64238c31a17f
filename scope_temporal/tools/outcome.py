"""The outcome of one tool attempt, as tagged data that crosses the activity boundary.

Exactly one of five kinds. Only `unknown` means the framework cannot prove what
happened; it is never retried by the framework.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scope_temporal.chat import ToolResult

Disposition = Literal["succeeded", "failed", "rejected"]


class _Outcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Succeeded(_Outcome):
    """The body returned; `result.content` is what the model sees."""

    kind: Literal["succeeded"] = "succeeded"
    result: ToolResult
    for_user: Any = None
    """Shown to the host/user (snapshot), never to the model."""
    ref: str | None = None
    """An opaque reference the tool returned (e.g. an artifact id)."""
    metadata: dict[str, Any] | None = None
    advertised: tuple[str, ...] = ()
    """Deferred tools this call asked to advertise; committed only because it succeeded."""


class Failed(_Outcome):
    """The body raised ToolFailure: a definite, model-visible error."""

    kind: Literal["failed"] = "failed"
    result: ToolResult
    code: str = "tool.execution_failed"


class Rejected(_Outcome):
    """The body never ran: unknown tool, not authorized, or invalid arguments."""

    kind: Literal["rejected"] = "rejected"
    result: ToolResult
    code: str


class InputRequired(_Outcome):
    """The body asked for input; it will be re-entered with the continuation state."""

    kind: Literal["input_required"] = "input_required"
    prompt: Any
    """What the host is asked: a string or any JSON value."""
    response_schema: dict[str, Any]
    state: Any = None


class Unknown(_Outcome):
    """The outcome cannot be proven (exception, HostFailure, timeout, cancellation)."""

    kind: Literal["unknown"] = "unknown"
    code: str
    diagnostic: str


ToolOutcome = Annotated[
    Succeeded | Failed | Rejected | InputRequired | Unknown, Field(discriminator="kind")
]
DefiniteOutcome = Succeeded | Failed | Rejected


def disposition_of(outcome: DefiniteOutcome) -> Disposition:
    return outcome.kind
