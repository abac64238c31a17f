"""The one error root, its host-facing subclasses, and every stable failure code.

Each code is a constant here; the core, the workflows and the client only use these
names, and a test checks that nothing emits a code that is not declared.
"""

from __future__ import annotations

from typing import Literal

FailureKind = Literal["contract", "external", "host", "canceled", "quota"]

# Interaction
MODEL_INVALID_RESPONSE = "interaction.model.invalid_response"
MODEL_TOOL_CALLS_NOT_COMPLETED = "interaction.model.tool_calls_not_completed"
# The model provably did not run the request (see scope_temporal.models.not_called).
MODEL_REJECTED = "interaction.model.rejected"
MODEL_CONTEXT_OVERFLOW = "interaction.model.context_overflow"
MODEL_UNAVAILABLE = "interaction.model.unavailable"
LIMIT_MODEL_CALLS = "interaction.limit.model_calls"
LIMIT_TOKENS = "interaction.limit.tokens"
HOST_FAILED = "interaction.host.failed"
SIGNAL_INVALID = "interaction.signal.invalid"
SIGNAL_CONFLICT = "interaction.signal.conflict"
PROTOCOL_INVALID = "interaction.protocol.invalid"
STATE_INVALID = "interaction.state.invalid"
DEFINITION_INVALID = "interaction.definition.invalid"
DEFINITION_UNKNOWN = "interaction.definition.unknown"
DEFINITION_CHANGED = "interaction.definition.changed"
REPLAY_DIVERGED = "interaction.replay.diverged"
NOT_FOUND = "interaction.not_found"
ID_IN_USE = "interaction.id.in_use"
CANCELED = "interaction.canceled"
SETTLEMENT_MISMATCH = "interaction.settlement.mismatch"
PAYLOAD_TOO_LARGE = "interaction.payload.too_large"
# The state outgrew the payload limit and the history nears Temporal's: configure storage.
STATE_TOO_LARGE = "interaction.state.too_large"
DELEGATE_REJECTED = "interaction.delegate.rejected"
DELEGATE_FAILED = "interaction.delegate.failed"
TOOL_CHILD_REJECTED = "interaction.tool_child.rejected"
CONFIGURATION_INVALID = "interaction.configuration.invalid"
ARTIFACT_INVALID = "interaction.artifact.invalid"
# The event stream: an offset no longer retained, or not reached yet.
EVENTS_OFFSET_TRUNCATED = "interaction.events.offset_truncated"
EVENTS_OFFSET_AHEAD = "interaction.events.offset_ahead"
CONTEXT_INVALID = "interaction.context.invalid"
OPTIONS_INVALID = "interaction.options.invalid"
# Sessions
SESSION_ENDED = "interaction.session.ended"
SESSION_MESSAGE_STALE = "interaction.session.message_stale"
SESSION_MISMATCH = "interaction.session.mismatch"
# Tools
TOOL_NOT_FOUND = "tool.not_found"
TOOL_NOT_AUTHORIZED = "tool.not_authorized"
TOOL_INPUT_INVALID = "tool.input_invalid"
TOOL_SCHEMA_INVALID = "tool.schema_invalid"
TOOL_EXECUTION_FAILED = "tool.execution_failed"
TOOL_TIMEOUT = "tool.timeout"
TOOL_WAIT_UNKNOWN = "tool.wait.unknown"
TOOL_ANSWER_INVALID = "tool.answer.invalid"
TOOL_APPROVAL_DENIED = "tool.approval.denied"
TOOL_BUDGET_EXHAUSTED = "tool.budget.exhausted"
# MCP servers (docs/mcp.md): a tool list that could not be fetched, or was refused
MCP_LIST_FAILED = "tool.mcp.list_failed"
MCP_LIST_INVALID = "tool.mcp.list_invalid"
# a per-Interaction MCP session (docs/mcp.md, Stateful servers): its holder was lost, or
# it could not be opened; nothing was sent, the model sees it
MCP_SESSION_LOST = "tool.mcp.session_lost"
MCP_SESSION_FAILED = "tool.mcp.session_failed"
# Background tasks
TASK_LOST = "tool.background.lost"
TASK_NOT_FOUND = "tool.background.not_found"
TASK_ENDED = "tool.background.ended"
TASK_CANCELED = "tool.background.canceled"
TASK_NOT_RESUMABLE = "tool.background.not_resumable"
TASK_PROGRESS_CONFLICT = "tool.background.progress_conflict"
TASK_PROGRESS_INVALID = "tool.background.progress_invalid"
# No implementation of the task's capability class is registered on the worker.
TASK_UNREGISTERED = "tool.background.unregistered"
SUBMIT_INVALID = "tool.background.submit_invalid"
SUBMIT_CONFLICT = "tool.background.submit_conflict"

CODE_KINDS: dict[str, FailureKind] = {
    MODEL_INVALID_RESPONSE: "external",
    MODEL_TOOL_CALLS_NOT_COMPLETED: "external",
    MODEL_REJECTED: "external",
    # The conversation outgrew the model's window: a budget, fixed by a context reducer.
    MODEL_CONTEXT_OVERFLOW: "quota",
    MODEL_UNAVAILABLE: "external",
    LIMIT_MODEL_CALLS: "quota",
    LIMIT_TOKENS: "quota",
    HOST_FAILED: "host",
    SIGNAL_INVALID: "contract",
    SIGNAL_CONFLICT: "contract",
    PROTOCOL_INVALID: "contract",
    STATE_INVALID: "contract",
    DEFINITION_INVALID: "contract",
    DEFINITION_UNKNOWN: "host",
    DEFINITION_CHANGED: "host",
    REPLAY_DIVERGED: "host",
    NOT_FOUND: "contract",
    ID_IN_USE: "contract",
    CANCELED: "canceled",
    SETTLEMENT_MISMATCH: "contract",
    PAYLOAD_TOO_LARGE: "host",
    STATE_TOO_LARGE: "host",
    DELEGATE_REJECTED: "host",
    DELEGATE_FAILED: "external",
    TOOL_CHILD_REJECTED: "host",
    CONFIGURATION_INVALID: "host",
    ARTIFACT_INVALID: "contract",
    EVENTS_OFFSET_TRUNCATED: "contract",
    EVENTS_OFFSET_AHEAD: "contract",
    CONTEXT_INVALID: "contract",
    SESSION_ENDED: "contract",
    SESSION_MESSAGE_STALE: "contract",
    SESSION_MISMATCH: "contract",
    OPTIONS_INVALID: "contract",
    TOOL_NOT_FOUND: "contract",
    TOOL_NOT_AUTHORIZED: "contract",
    TOOL_INPUT_INVALID: "contract",
    TOOL_SCHEMA_INVALID: "contract",
    TOOL_EXECUTION_FAILED: "external",
    TOOL_TIMEOUT: "external",
    TOOL_WAIT_UNKNOWN: "contract",
    TOOL_ANSWER_INVALID: "contract",
    # Denied by a person, the approver hook or the policy: the host's decision.
    TOOL_APPROVAL_DENIED: "host",
    TOOL_BUDGET_EXHAUSTED: "quota",
    MCP_LIST_FAILED: "external",
    MCP_LIST_INVALID: "external",
    MCP_SESSION_LOST: "external",
    MCP_SESSION_FAILED: "external",
    TASK_LOST: "external",
    TASK_NOT_FOUND: "contract",
    TASK_ENDED: "contract",
    TASK_CANCELED: "canceled",
    TASK_NOT_RESUMABLE: "contract",
    TASK_PROGRESS_CONFLICT: "contract",
    TASK_PROGRESS_INVALID: "contract",
    # The worker's registrations: the operator deploys the implementation the task needs.
    TASK_UNREGISTERED: "host",
    SUBMIT_INVALID: "contract",
    SUBMIT_CONFLICT: "contract",
}


def kind_of(code: str) -> FailureKind:
    """The failure kind of a declared code; undeclared codes are a programming error."""
    return CODE_KINDS[code]


class ScopeError(Exception):
    """Root of every error scope-temporal raises to a host.

    Attributes:
        code: a stable, machine-readable code from this module.
        kind: who is at fault (contract, external, host, canceled, quota).
    """

    default_code = PROTOCOL_INVALID

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code or self.default_code
        self.kind: FailureKind = CODE_KINDS.get(self.code, "contract")
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class DefinitionError(ScopeError, ValueError):
    """A Definition, ToolSet, Delegate or tool declaration is invalid (caught at build time)."""

    default_code = DEFINITION_INVALID


class ConfigurationError(ScopeError, ValueError):
    """A worker, client or converter is configured in a way scope-temporal cannot use."""

    default_code = CONFIGURATION_INVALID


class InvalidInputRequest(ScopeError, TypeError):
    """A tool called `require_tool_input` with a prompt, schema or state it cannot use.

    Raised inside the tool (a bug in the tool); unless the tool handles it, the call's
    outcome is unknown. Code `tool.schema_invalid` for the response schema.
    """

    default_code = TOOL_EXECUTION_FAILED


class ProtocolError(ScopeError):
    """An input the state machine does not accept in its current state; nothing changed."""

    default_code = PROTOCOL_INVALID


class InvalidOptions(ScopeError, ValueError):
    """Sampling options given at start that the model cannot take; nothing was started."""

    default_code = OPTIONS_INVALID


class InvalidSignal(ScopeError):
    """A steer, answer or resolution that is malformed; it was refused and changed nothing."""

    default_code = SIGNAL_INVALID


class SignalConflict(InvalidSignal):
    """A signal id was reused with different content; the first one stands."""

    default_code = SIGNAL_CONFLICT


class InvalidToolInput(InvalidSignal):
    """A tool-input answer does not match the wait's response schema; nothing was sent."""

    default_code = TOOL_ANSWER_INVALID


class NoSuchWait(InvalidSignal):
    """No open tool-input wait has that id (already answered, or never existed)."""

    default_code = TOOL_WAIT_UNKNOWN


class SettlementMismatch(InvalidSignal):
    """A host settlement does not match the retained request of the unknown effect."""

    default_code = SETTLEMENT_MISMATCH


class InvalidRunContext(ScopeError, ValueError):
    """A run context that is not a JSON object, or is over its size limit; nothing started
    and nothing changed."""

    default_code = CONTEXT_INVALID


class SessionEnded(ScopeError):
    """The session has ended; it takes no more messages (start a new session id)."""

    default_code = SESSION_ENDED


class StaleMessage(InvalidSignal):
    """A message id an earlier turn of the session already took; nothing changed."""

    default_code = SESSION_MESSAGE_STALE


class UnknownDefinition(ScopeError):
    """No Definition with that name is registered on the worker."""

    default_code = DEFINITION_UNKNOWN


class InteractionNotFound(ScopeError):
    """No Interaction has that id in this namespace."""

    default_code = NOT_FOUND


class InteractionAlreadyStarted(ScopeError):
    """A workflow with that id is already running; nothing was started."""

    default_code = ID_IN_USE


class InteractionFailed(ScopeError):
    """The Interaction ended in failure; `.code` says why (e.g. interaction.limit.model_calls)."""

    default_code = HOST_FAILED


class InteractionCanceled(InteractionFailed):
    """The Interaction was cancelled before it completed."""

    default_code = CANCELED


class TaskNotFound(ScopeError):
    """No background task has that id (or it belongs to another Interaction)."""

    default_code = TASK_NOT_FOUND


class TaskEnded(ScopeError):
    """The background task has already ended; it cannot be cancelled or answered."""

    default_code = TASK_ENDED


class InvalidTaskSubmission(ScopeError):
    """A host's task submission was refused (`InteractionHandle.submit_task`): nothing
    started and nothing was recorded; the message says what to change."""

    default_code = SUBMIT_INVALID


class TaskSubmissionConflict(InvalidTaskSubmission):
    """The task id was submitted before with another tool or other arguments."""

    default_code = SUBMIT_CONFLICT


class ArtifactDecodeError(ScopeError, ValueError):
    """A delegate's Artifact does not decode into the type asked for (`Artifact.decode`).

    Attributes:
        field: the first offending field, as a dotted path ("" for the value as a whole).
    """

    default_code = ARTIFACT_INVALID

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class EventOffsetError(ScopeError, ValueError):
    """`events(after=...)` got an offset the stream cannot resume from: one no longer
    retained (`interaction.events.offset_truncated`: re-read the snapshot, then follow
    from the stream's head) or one it has not reached (`interaction.events.offset_ahead`:
    pass the offset of the last event you read)."""

    default_code = EVENTS_OFFSET_TRUNCATED


_REFUSALS: dict[str, type[ScopeError]] = {
    SIGNAL_INVALID: InvalidSignal,
    SIGNAL_CONFLICT: SignalConflict,
    TOOL_ANSWER_INVALID: InvalidToolInput,
    TOOL_WAIT_UNKNOWN: NoSuchWait,
    SETTLEMENT_MISMATCH: SettlementMismatch,
    DEFINITION_UNKNOWN: UnknownDefinition,
    TASK_ENDED: TaskEnded,
    PAYLOAD_TOO_LARGE: InvalidSignal,
    CONTEXT_INVALID: InvalidRunContext,
    SESSION_ENDED: SessionEnded,
    SESSION_MESSAGE_STALE: StaleMessage,
    SESSION_MISMATCH: InvalidSignal,
    OPTIONS_INVALID: InvalidOptions,
    SUBMIT_INVALID: InvalidTaskSubmission,
    SUBMIT_CONFLICT: TaskSubmissionConflict,
}


def refusal(code: str, message: str) -> ScopeError:
    """The typed error a host gets for an input a process refused with `code`."""
    return _REFUSALS.get(code, ScopeError)(message, code=code)
