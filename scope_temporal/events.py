"""Events: what a host reads while an Interaction (or a session) runs.

`InteractionHandle.events()`, `SessionHandle.events()` and `LocalRun.events()` yield these
values, one stream per Interaction tree ordered by `offset`. Every event is one of the
classes below (`Event` is their union, discriminated by `kind`); each names the process it
is about (`process_id`). Events are news, never state: a host that missed some re-reads the
snapshot (`scope_temporal.snapshots`). `SessionPosition` is where a session's stream was
read up to, to resume it. See docs/events.md.

This module only gathers the names (they live in the SDK's core); each is importable from
`scope_temporal` too.
"""

from scope_temporal.interaction.events import (
    CanceledEvent,
    CompletedEvent,
    Event,
    FailedEvent,
    FeedbackEvent,
    ModelSettledEvent,
    ModelStartedEvent,
    SteerAppliedEvent,
    TaskProgressEvent,
    TextEvent,
    ToolProgressEvent,
    ToolSettledEvent,
    ToolStartedEvent,
    UnknownOpenedEvent,
    UnknownSettledEvent,
    WaitAnsweredEvent,
    WaitOpenedEvent,
)
from scope_temporal.interaction.session_stream import SessionPosition

__all__ = [
    "CanceledEvent",
    "CompletedEvent",
    "Event",
    "FailedEvent",
    "FeedbackEvent",
    "ModelSettledEvent",
    "ModelStartedEvent",
    "SessionPosition",
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
]
