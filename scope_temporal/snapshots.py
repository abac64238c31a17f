"""Snapshots: read-only views of a running or finished Interaction, its tree and sessions.

`InteractionHandle.snapshot()` returns a `ProcessSnapshot` (the authority on what the
Interaction holds: its unknown effects, pending tool inputs, settled results, active
delegates and background tasks), `InteractionHandle.tree()` a `TreeSnapshot`, and
`SessionHandle.snapshot()` / `transcript()` a `SessionSnapshot` / `SessionTranscript`.
`Attribution` and `ToolCallRef` say which process and which call a value belongs to.
A host settles what a snapshot shows (an `UnknownEffect`, a `PendingToolInput`) through
its handle.

This module only gathers the names (they live in the SDK's core); each is importable from
`scope_temporal` too.
"""

from scope_temporal.ids import Attribution, ToolCallRef
from scope_temporal.interaction.session_values import SessionSnapshot, SessionTranscript
from scope_temporal.interaction.snapshot import (
    ActiveDelegate,
    ModelAttempt,
    PendingToolInput,
    ProcessSnapshot,
    ResultEntry,
    RoundResults,
    TaskSnapshot,
    TreeSnapshot,
    UnknownEffect,
)

__all__ = [
    "ActiveDelegate",
    "Attribution",
    "ModelAttempt",
    "PendingToolInput",
    "ProcessSnapshot",
    "ResultEntry",
    "RoundResults",
    "SessionSnapshot",
    "SessionTranscript",
    "TaskSnapshot",
    "ToolCallRef",
    "TreeSnapshot",
    "UnknownEffect",
]
