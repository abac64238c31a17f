"""What happens in an Interaction tree, as events a host subscribes to.

One stream per tree, hosted by its root (`InteractionHandle.events`, `LocalRun.events`):
every process of the tree (the root, its ToolCall children, delegates, background tasks)
reports into it, so one integer offset orders everything. Each event names the process
it is about (`process_id`) and carries its position in the stream (`offset`, set when it
is read). Events are news, never state: the snapshot stays the authority, and a host that
missed events (an offset no longer retained) re-reads the snapshot.

The stream ends with the root's `completed`, `failed` or `canceled` event; a delegate's
own end is reported the same way under its process id.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from scope_temporal.chat import FinishReason, Message, ToolCall, Usage
from scope_temporal.interaction.snapshot import PendingToolInput, ResultEntry, TaskSnapshot
from scope_temporal.models.not_called import NotCalled
from scope_temporal.outputs import Failure, Output


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    process_id: str
    """The process the event is about: an Interaction (the root or a delegate), a
    ToolCall process, or a background task."""
    offset: int = -1
    """Position in the tree's stream (0, 1, ...), set when the event is read; resume after
    a disconnect with `events(after=<the last offset seen>)`."""
    turn: int | None = None
    """The session turn whose stream holds the event, set when it is read through a
    session (`SessionHandle.events`); resume there with `after=(turn, offset)`. None
    when read from an Interaction's own stream."""


class ModelStartedEvent(_Event):
    """A model call started (its steers, if any, were applied just before)."""

    kind: Literal["model_started"] = "model_started"
    model_call_seq: int
    model: str
    """The model's name on the worker."""


class TextEvent(_Event):
    """A batch of the text a model call in flight streams (for display only: the
    settled response is the call's result). The text events of one call, concatenated,
    are everything it streamed, in order."""

    kind: Literal["text"] = "text"
    model_call_seq: int
    text: str


class ModelSettledEvent(_Event):
    """A model call settled: a response (the loop then judges it), a definite host
    failure, or a call the model provably did not run (`not_called`: retried as a new
    Effect when `retried`, else the Interaction fails with its code). An unknown outcome is
    `unknown_opened` instead; a host's settlement of it is this event with
    `settled_by_host`."""

    kind: Literal["model_settled"] = "model_settled"
    model_call_seq: int
    outcome: Literal["responded", "host_failed", "not_called"]
    model: str | None = None
    """The model's name on the worker (set for `not_called`)."""
    not_called: NotCalled | None = None
    """Why the model did not run it (set for `not_called`)."""
    retried: bool = False
    """Whether the loop sends it again (set for `not_called`)."""
    message: Message | None = None
    """What the model said (None for a host failure)."""
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    settled_by_host: bool = False


class ToolStartedEvent(_Event):
    """A call of a model response started: a tool call, or a delegate (`process_id` is the
    Interaction that made the call)."""

    kind: Literal["tool_started"] = "tool_started"
    ref: str
    """ToolCallRef of the call."""
    call: ToolCall
    target: Literal["tool", "delegate"]
    child_id: str
    """The call's process: its ToolCall workflow (with `tool_call_workflows="on_demand"`,
    one by that id exists only if the call waits or becomes unknown), or the delegate."""
    definition: str | None = None
    """The delegate's Definition."""


class ToolSettledEvent(_Event):
    """A call settled definitely (a result the model will see); calls refused at
    admission (not available, not authorized, invalid arguments) settle without starting."""

    kind: Literal["tool_settled"] = "tool_settled"
    ref: str
    entry: ResultEntry
    delegate: bool = False


class WaitOpenedEvent(_Event):
    """A tool (or a background task) asks the host for input; answer it with
    `InteractionHandle.answer(event.wait, ...)`."""

    kind: Literal["wait_opened"] = "wait_opened"
    wait: PendingToolInput


class WaitAnsweredEvent(_Event):
    """An input wait took its answer (the tool goes on)."""

    kind: Literal["wait_answered"] = "wait_answered"
    wait_id: str


class UnknownOpenedEvent(_Event):
    """An Effect's outcome cannot be proven; the process holds it for the host. The
    retained request (to build a settlement from) is in the snapshot's
    `unknown_effects`."""

    kind: Literal["unknown_opened"] = "unknown_opened"
    effect_id: str
    effect_kind: Literal["model", "tool"]
    ref: str | None = None
    """ToolCallRef, for a tool call."""
    call: ToolCall | None = None
    """The tool call, for a tool call."""
    model_call_seq: int | None = None
    """For a model call."""
    definition: str
    """The Definition of the Interaction the Effect belongs to."""
    diagnostic: str


class UnknownSettledEvent(_Event):
    """The host settled an unknown Effect."""

    kind: Literal["unknown_settled"] = "unknown_settled"
    effect_id: str


class SteerAppliedEvent(_Event):
    """A steer's messages entered the context, right before the model call that follows."""

    kind: Literal["steer_applied"] = "steer_applied"
    signal_id: str
    messages: tuple[Message, ...]


class FeedbackEvent(_Event):
    """The completion validator (or the output schema) sent a candidate reply back; its
    feedback is the model's next user message."""

    kind: Literal["feedback"] = "feedback"
    text: str


class TaskProgressEvent(_Event):
    """A background task started, reported progress, or ended (`task.status`).
    `process_id` is the task id. A result over 2 KiB is left out of `task.data`: read it
    from the snapshot (`snapshot().tasks`)."""

    kind: Literal["task_progress"] = "task_progress"
    task: TaskSnapshot


class ToolProgressEvent(_Event):
    """A tool call in flight reported progress: an MCP server's `notifications/progress`
    during the call (docs/mcp.md). `process_id` is the call's process (as in
    `ToolStartedEvent.child_id`). For display only, and bounded per call (at most one a
    second, at most 50 per attempt, the message shortened): the settled result is what
    the call returned. A background task's progress is `task_progress` instead."""

    kind: Literal["tool_progress"] = "tool_progress"
    ref: str
    """ToolCallRef of the call."""
    progress: float
    """How far the call is, in the server's units (it only grows)."""
    total: float | None = None
    """The value `progress` reaches at the end, when the server knows it."""
    message: str | None = None
    """The server's text about it (at most 200 characters)."""
    seq: int = 1
    """1, 2, ... among the progress events of this call's attempt."""


class CompletedEvent(_Event):
    """An Interaction completed (the root's is the stream's last event)."""

    kind: Literal["completed"] = "completed"
    output: Output


class FailedEvent(_Event):
    """An Interaction failed (the root's is the stream's last event)."""

    kind: Literal["failed"] = "failed"
    failure: Failure


class CanceledEvent(_Event):
    """An Interaction was cancelled (the root's is the stream's last event)."""

    kind: Literal["canceled"] = "canceled"
    reason: str


Event = Annotated[
    ModelStartedEvent
    | TextEvent
    | ModelSettledEvent
    | ToolStartedEvent
    | ToolSettledEvent
    | WaitOpenedEvent
    | WaitAnsweredEvent
    | UnknownOpenedEvent
    | UnknownSettledEvent
    | SteerAppliedEvent
    | FeedbackEvent
    | TaskProgressEvent
    | ToolProgressEvent
    | CompletedEvent
    | FailedEvent
    | CanceledEvent,
    Field(discriminator="kind"),
]
"""Any event of the stream; dispatch on `event.kind`."""

EVENT = TypeAdapter[Event](Event)
"""Reads an event from JSON (`EVENT.validate_json(...)`)."""

Ended = CompletedEvent | FailedEvent | CanceledEvent


def ends_stream(event: Event, root_id: str) -> bool:
    """Whether `event` is the root's end: the last event of its stream."""
    return isinstance(event, Ended) and event.process_id == root_id


__all__ = [
    "EVENT",
    "CanceledEvent",
    "CompletedEvent",
    "Ended",
    "Event",
    "FailedEvent",
    "FeedbackEvent",
    "ModelSettledEvent",
    "ModelStartedEvent",
    "SteerAppliedEvent",
    "TaskProgressEvent",
    "TextEvent",
    "ToolProgressEvent",
    "ToolSettledEvent",
    "ToolStartedEvent",
    "UnknownOpenedEvent",
    "UnknownSettledEvent",
    "WaitAnsweredEvent",
    "WaitOpenedEvent",
    "ends_stream",
]
