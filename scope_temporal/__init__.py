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
from scope_temporal.client import InteractionHandle, ScopeClient
from scope_temporal.converter import scope_data_converter
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.delegates import Delegate
from scope_temporal.errors import (
    ArtifactDecodeError,
    ConfigurationError,
    DefinitionError,
    InteractionAlreadyStarted,
    InteractionCanceled,
    InteractionFailed,
    InteractionNotFound,
    InvalidInputRequest,
    InvalidOptions,
    InvalidSignal,
    InvalidTaskSubmission,
    InvalidToolInput,
    NoSuchWait,
    ProtocolError,
    ScopeError,
    SettlementMismatch,
    SignalConflict,
    TaskEnded,
    TaskNotFound,
    TaskSubmissionConflict,
    UnknownDefinition,
)
from scope_temporal.ids import ToolCallRef
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
from scope_temporal.storage import DirectoryStorage
from scope_temporal.tools import (
    ConcurrencyClassifier,
    HostFailure,
    Middleware,
    OutputMask,
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


__all__ = [
    "ActiveDelegate",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "Artifact",
    "ArtifactDecodeError",
    "BackgroundOperation",
    "BackgroundTool",
    "CompletionCandidate",
    "CompletionDecision",
    "ConcurrencyClassifier",
    "ConfigurationError",
    "Definition",
    "DefinitionError",
    "Delegate",
    "DirectoryStorage",
    "FinishReason",
    "Handoff",
    "HostFailure",
    "InteractionAlreadyStarted",
    "InteractionCanceled",
    "InteractionFailed",
    "InteractionHandle",
    "InteractionNotFound",
    "InvalidInputRequest",
    "InvalidOptions",
    "InvalidSignal",
    "InvalidTaskSubmission",
    "InvalidToolInput",
    "LiveText",
    "LocalFileMaterializer",
    "Message",
    "Middleware",
    "Model",
    "ModelAttempt",
    "ModelContextOverflow",
    "ModelNotCalled",
    "ModelRejected",
    "ModelRequest",
    "ModelRetry",
    "ModelUnavailable",
    "NoSuchWait",
    "NotCalled",
    "NotProven",
    "OpenAIChatModel",
    "Options",
    "Output",
    "OutputMask",
    "OutputMaterializer",
    "PendingToolInput",
    "ProcessSnapshot",
    "ProgressSummary",
    "ProgressUpdate",
    "ProtocolError",
    "Recoverable",
    "Response",
    "ResultEntry",
    "Resumable",
    "RoundResults",
    "RunHandle",
    "RunOutcome",
    "RunProgress",
    "ScopeClient",
    "ScopeError",
    "ScopeWorker",
    "ScriptedModel",
    "SettlementMismatch",
    "SignalConflict",
    "TaskEnded",
    "TaskNotFound",
    "TaskRun",
    "TaskSnapshot",
    "TaskSubmissionConflict",
    "TokenUsage",
    "Tool",
    "ToolBudget",
    "ToolCall",
    "ToolCallRef",
    "ToolDefinition",
    "ToolFailure",
    "ToolInvocation",
    "ToolOutput",
    "ToolResult",
    "ToolSet",
    "ToolSpec",
    "TreeSnapshot",
    "UnknownDefinition",
    "UnknownEffect",
    "Usage",
    "advertise_tools",
    "background_tool",
    "chain",
    "classify_model_error",
    "configure_tracing",
    "current_tool_call",
    "inner",
    "reply",
    "require_tool_input",
    "retry_after_from_headers",
    "scope_data_converter",
    "settle_model_result",
    "settle_tool_result",
    "stream_delta",
    "tool",
    "tool_input_continuation",
]
