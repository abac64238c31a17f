"""The outcome of one tool attempt, as tagged data that crosses the activity boundary.

Exactly one of five kinds. Only `unknown` means the framework cannot prove what
happened; it is never retried by the framework. Also the values a background tool's
call and task carry across it: its launch, its progress, the outcome of its run; and how
a body's return value becomes its `Succeeded` outcome (`succeeded`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_json

from scope_temporal.chat import ToolCall, ToolResult
from scope_temporal.tools.output import ToolOutput, json_form
from scope_temporal.tools.rejections import silent_acknowledgement
from scope_temporal.tools.spec import BackgroundSpec

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
    task_id: str | None = None
    """The background task this call launched (its result is a `launch_result`)."""


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


class ProgressSummary(_Outcome):
    """What a background task's workflow keeps of its progress (the bytes of the events
    live in the worker's output store): a count and the latest headline."""

    events: int = 0
    """Distinct events stored so far."""
    last_event_id: str | None = None
    last_kind: str | None = None
    last_message: str | None = None
    """The latest event's headline, if it has one."""

    def merged(self, other: ProgressSummary | None) -> ProgressSummary:
        """The later of two summaries (counts only grow; a stale report changes nothing)."""
        if other is None or other.events < self.events:
            return self
        return other


class TaskLaunch(_Outcome):
    """How a background tool's call moves to the background (see `scope.BackgroundTask`)."""

    task_id: str
    tool: str
    arguments: str
    """The arguments as the task runs them (after `prepare_input`), JSON text."""
    mode: Literal["start", "adopt", "recover", "waiting_input"]
    """`start`: start it in the background (explicit `run_in_background`); `adopt`: take
    over the live foreground run held by the worker polling `adopt_queue`; `recover`:
    rebuild the run from `checkpoint`; `waiting_input`: the run asked a question."""
    checkpoint: Any = None
    adopt_queue: str | None = None
    prompt: Any = None
    response_schema: dict[str, Any] | None = None
    attempt: int = 0
    """The last attempt made (0: the foreground one)."""
    progress: ProgressSummary = ProgressSummary()
    settings: BackgroundSpec
    context: dict[str, Any] = {}
    """The run context of the Interaction whose call launched the task (inherited)."""
    deadline: datetime | None = None
    """When the operation must have ended (the tool's `operation_timeout(arguments)`)."""
    description: str | None = None
    """How the task is shown to people (the tool's `description(arguments)`)."""
    description_error: str | None = None
    """Why `description(arguments)` gave nothing (the model is told; the task runs)."""
    notify: bool | None = None
    """Tell the Interaction when the task ends or waits (None: as the tool's settings say)."""


RunStatus = Literal["completed", "failed", "canceled", "waiting_input"]


class RunOutcome(BaseModel):
    """The authoritative end of a run (or its pause for input): what `RunHandle.wait` gives.

    Build one with `completed(data)`, `failed(error)`, `canceled()` or
    `waiting_input(prompt, response_schema, checkpoint)`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: RunStatus
    data: Any = None
    """`completed`: the result, any JSON value (the model reads it via `task_output`)."""
    error: str | None = None
    """`failed`: what went wrong, for the model; `canceled`: why, if known."""
    prompt: Any = None
    """`waiting_input`: the question for the host (a string or any JSON value)."""
    response_schema: dict[str, Any] | None = None
    """`waiting_input`: the JSON schema an answer must match."""
    checkpoint: Any = None
    """`waiting_input`: the checkpoint `resume` receives (None keeps the previous one)."""

    @classmethod
    def completed(cls, data: Any = None) -> RunOutcome:
        return cls(status="completed", data=data)

    @classmethod
    def failed(cls, error: str) -> RunOutcome:
        return cls(status="failed", error=error)

    @classmethod
    def canceled(cls, reason: str | None = None) -> RunOutcome:
        return cls(status="canceled", error=reason)

    @classmethod
    def waiting_input(
        cls, prompt: Any, response_schema: dict[str, Any], checkpoint: Any = None
    ) -> RunOutcome:
        return cls(
            status="waiting_input",
            prompt=prompt,
            response_schema=dict(response_schema),
            checkpoint=checkpoint,
        )


class Backgrounded(_Outcome):
    """The call moves to the background: its ToolCall side starts the task and settles the
    call with a `launch_result` (never fed to a Tool call Process as such)."""

    kind: Literal["backgrounded"] = "backgrounded"
    launch: TaskLaunch


ToolOutcome = Annotated[
    Succeeded | Failed | Rejected | InputRequired | Unknown, Field(discriminator="kind")
]
DefiniteOutcome = Succeeded | Failed | Rejected
AttemptOutcome = Annotated[
    Succeeded | Failed | Rejected | InputRequired | Unknown | Backgrounded,
    Field(discriminator="kind"),
]
"""What one attempt of a call reports: a `ToolOutcome`, or (background tools only) that
the call moves to the background."""


def disposition_of(outcome: DefiniteOutcome) -> Disposition:
    return outcome.kind


def succeeded(call: ToolCall, value: object, advertised: list[str]) -> Succeeded:
    """A body's return value as the call's outcome: a str as is, a `ToolOutput` split into
    model-visible content and host-side extras, anything else as JSON text.

    Raises:
        pydantic_core.PydanticSerializationError: the value is not JSON (-> unknown).
    """
    if isinstance(value, ToolOutput):
        result = (
            silent_acknowledgement(call)
            if value.silent
            else ToolResult(call_id=call.id, name=call.name, content=value.for_llm)
        )
        return Succeeded(
            result=result,
            for_user=json_form(value.for_user),
            ref=value.ref,
            metadata=json_form(value.metadata),
            advertised=tuple(advertised),
        )
    content = value if isinstance(value, str) else to_json(value).decode()
    return Succeeded(
        result=ToolResult(call_id=call.id, name=call.name, content=content),
        advertised=tuple(advertised),
    )
