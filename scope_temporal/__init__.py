"""scope-temporal: run LLM agents durably on Temporal.

Side effects never run twice and are never silently lost: every model and tool call is a
non-retrying activity, and an ambiguous outcome becomes an unknown Effect the host settles.
"""

from typing import TYPE_CHECKING

from scope_temporal.approval import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalRequest,
)
from scope_temporal.background import (
    BackgroundOperation,
    BackgroundTool,
    Handoff,
    LocalFileMaterializer,
    OutputMaterializer,
    ProgressUpdate,
    Recoverable,
    Resumable,
    RunHandle,
    RunOutcome,
    RunProgress,
    TaskRun,
    background_tool,
)
from scope_temporal.chat import (
    FinishReason,
    Message,
    Options,
    Response,
    ToolCall,
    ToolResult,
    Usage,
)
from scope_temporal.client import InteractionHandle, ScopeClient, SessionHandle
from scope_temporal.converter import scope_data_converter
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.delegates import Delegate
from scope_temporal.errors import (
    ArtifactDecodeError,
    ConfigurationError,
    DefinitionError,
    EventOffsetError,
    InteractionAlreadyStarted,
    InteractionCanceled,
    InteractionFailed,
    InteractionNotFound,
    InvalidInputRequest,
    InvalidOptions,
    InvalidRunContext,
    InvalidSignal,
    InvalidTaskSubmission,
    InvalidToolInput,
    NoSuchWait,
    ProtocolError,
    ScopeError,
    SessionEnded,
    SettlementMismatch,
    SignalConflict,
    StaleMessage,
    TaskEnded,
    TaskNotFound,
    TaskSubmissionConflict,
    UnknownDefinition,
)
from scope_temporal.events import (
    CanceledEvent,
    CompletedEvent,
    Event,
    FailedEvent,
    FeedbackEvent,
    ModelSettledEvent,
    ModelStartedEvent,
    SessionPosition,
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
from scope_temporal.models import (
    Model,
    ModelContextOverflow,
    ModelNotCalled,
    ModelRejected,
    ModelRequest,
    ModelRetry,
    ModelUnavailable,
    NotCalled,
    NotProven,
    ScriptedModel,
    ToolDefinition,
    classify_model_error,
    reply,
    retry_after_from_headers,
)
from scope_temporal.models.streaming import LiveText, stream_delta
from scope_temporal.outputs import (
    Artifact,
    CompletionCandidate,
    CompletionDecision,
    Output,
    TokenUsage,
)
from scope_temporal.settle import settle_model_result, settle_tool_result
from scope_temporal.snapshots import (
    ActiveDelegate,
    Attribution,
    ModelAttempt,
    PendingToolInput,
    ProcessSnapshot,
    ResultEntry,
    RoundResults,
    SessionSnapshot,
    SessionTranscript,
    TaskSnapshot,
    ToolCallRef,
    TreeSnapshot,
    UnknownEffect,
)
from scope_temporal.storage import DirectoryStorage
from scope_temporal.tools import (
    ConcurrencyClassifier,
    HostFailure,
    Middleware,
    OutputMask,
    RetiredTool,
    Tool,
    ToolBudget,
    ToolFailure,
    ToolInvocation,
    ToolOutput,
    ToolSpec,
    advertise_tools,
    chain,
    current_tool_call,
    inner,
    require_tool_input,
    run_context,
    tool,
    tool_input_continuation,
)
from scope_temporal.tools.outcome import ProgressSummary
from scope_temporal.worker import ScopeWorker

if TYPE_CHECKING:  # the real class for type checkers; at run time see __getattr__
    from scope_temporal.models.openai import OpenAIChatModel
    from scope_temporal.telemetry.tracing import configure_tracing


def __getattr__(name: str) -> object:
    if name == "OpenAIChatModel":  # imports `openai` only when asked for
        from scope_temporal.models.openai import OpenAIChatModel

        return OpenAIChatModel
    if name == "configure_tracing":  # imports OpenTelemetry only when asked for
        from scope_temporal.telemetry.tracing import configure_tracing

        return configure_tracing
    raise AttributeError(f"module 'scope_temporal' has no attribute {name!r}")


# The public names by role, in the order of the API reference (docs/reference/): each is
# importable from here, and the roles with a module of their own (scope_temporal.events,
# .snapshots, .errors; the test kit in .testing) document their names there too.
__all__ = [  # noqa: RUF022 (grouped by role, not sorted)
    # Declaring an agent: Definition, tool sets, delegates, approval and completion policies
    "Definition",
    "ToolSet",
    "Delegate",
    "ToolBudget",
    "ApprovalPolicy",
    "ApprovalDecision",
    "ApprovalRequest",
    "ApprovalRecord",
    "CompletionCandidate",
    "CompletionDecision",
    # Writing tools: @tool, what a tool body may call, middleware
    "tool",
    "Tool",
    "ToolSpec",
    "ToolFailure",
    "HostFailure",
    "ToolOutput",
    "OutputMask",
    "RetiredTool",
    "ConcurrencyClassifier",
    "ToolInvocation",
    "ProgressSummary",
    "Middleware",
    "chain",
    "inner",
    "advertise_tools",
    "current_tool_call",
    "require_tool_input",
    "run_context",
    "tool_input_continuation",
    # Background tools: @background_tool and what an operation implements
    "background_tool",
    "BackgroundTool",
    "BackgroundOperation",
    "Handoff",
    "Recoverable",
    "Resumable",
    "RunHandle",
    "RunOutcome",
    "RunProgress",
    "TaskRun",
    "ProgressUpdate",
    "OutputMaterializer",
    "LocalFileMaterializer",
    # Models: the protocol, the OpenAI-compatible adapter, the scripted double, adapter errors
    "Model",
    "ModelRequest",
    "ToolDefinition",
    "OpenAIChatModel",
    "ScriptedModel",
    "reply",
    "ModelRetry",
    "ModelUnavailable",
    "ModelRejected",
    "ModelContextOverflow",
    "ModelNotCalled",
    "NotCalled",
    "NotProven",
    "classify_model_error",
    "retry_after_from_headers",
    "LiveText",
    "stream_delta",
    # Messages: the chat values models and hosts exchange
    "Message",
    "ToolCall",
    "ToolResult",
    "Response",
    "Options",
    "Usage",
    "FinishReason",
    # Running: the worker, the client and its handles, payload storage, tracing
    "ScopeWorker",
    "ScopeClient",
    "InteractionHandle",
    "SessionHandle",
    "scope_data_converter",
    "DirectoryStorage",
    "configure_tracing",
    # Outputs and settlements: what an Interaction returns; how a host settles an unknown
    "Output",
    "Artifact",
    "TokenUsage",
    "settle_model_result",
    "settle_tool_result",
    # Events (home: scope_temporal.events)
    "Event",
    "CanceledEvent",
    "CompletedEvent",
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
    "SessionPosition",
    # Snapshots (home: scope_temporal.snapshots)
    "ProcessSnapshot",
    "TreeSnapshot",
    "TaskSnapshot",
    "ActiveDelegate",
    "ModelAttempt",
    "PendingToolInput",
    "ResultEntry",
    "RoundResults",
    "UnknownEffect",
    "SessionSnapshot",
    "SessionTranscript",
    "Attribution",
    "ToolCallRef",
    # Errors (home: scope_temporal.errors): every ScopeError subclass, with a stable .code
    "ScopeError",
    "ConfigurationError",
    "DefinitionError",
    "ProtocolError",
    "ArtifactDecodeError",
    "EventOffsetError",
    "InteractionAlreadyStarted",
    "InteractionCanceled",
    "InteractionFailed",
    "InteractionNotFound",
    "InvalidInputRequest",
    "InvalidOptions",
    "InvalidRunContext",
    "InvalidSignal",
    "InvalidTaskSubmission",
    "InvalidToolInput",
    "NoSuchWait",
    "SessionEnded",
    "SettlementMismatch",
    "SignalConflict",
    "StaleMessage",
    "TaskEnded",
    "TaskNotFound",
    "TaskSubmissionConflict",
    "UnknownDefinition",
]
