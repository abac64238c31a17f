"""The public surface is exactly what API.md promises: no name missing, none extra.

(After sdk-python's `tests/test_client_exports.py`.) Adding a public name is a decision:
add it to API.md and to the list below together; removing one breaks users.
"""

from __future__ import annotations

import scope_temporal
import scope_temporal.models
import scope_temporal.testing

EXPORTED = [
    "ActiveDelegate",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "Artifact",
    "ArtifactDecodeError",
    "Attribution",
    "BackgroundOperation",
    "BackgroundTool",
    "CanceledEvent",
    "CompletedEvent",
    "CompletionCandidate",
    "CompletionDecision",
    "ConcurrencyClassifier",
    "ConfigurationError",
    "Definition",
    "DefinitionError",
    "Delegate",
    "DirectoryStorage",
    "Event",
    "EventOffsetError",
    "FailedEvent",
    "FeedbackEvent",
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
    "InvalidRunContext",
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
    "ModelSettledEvent",
    "ModelStartedEvent",
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
    "RetiredTool",
    "RoundResults",
    "RunHandle",
    "RunOutcome",
    "RunProgress",
    "ScopeClient",
    "ScopeError",
    "ScopeWorker",
    "ScriptedModel",
    "SessionEnded",
    "SessionHandle",
    "SessionPosition",
    "SessionSnapshot",
    "SessionTranscript",
    "SettlementMismatch",
    "SignalConflict",
    "StaleMessage",
    "SteerAppliedEvent",
    "TaskEnded",
    "TaskNotFound",
    "TaskProgressEvent",
    "TaskRun",
    "TaskSnapshot",
    "TaskSubmissionConflict",
    "TextEvent",
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
    "ToolSettledEvent",
    "ToolSpec",
    "ToolStartedEvent",
    "TreeSnapshot",
    "UnknownDefinition",
    "UnknownEffect",
    "UnknownOpenedEvent",
    "UnknownSettledEvent",
    "Usage",
    "WaitAnsweredEvent",
    "WaitOpenedEvent",
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
    "run_context",
    "scope_data_converter",
    "settle_model_result",
    "settle_tool_result",
    "stream_delta",
    "tool",
    "tool_input_continuation",
]

TESTING = [
    "ChatCompletionsServer",
    "CutStream",
    "Drop",
    "ErrorReply",
    "Hang",
    "LocalRun",
    "LocalRunner",
    "Paced",
    "RawReply",
    "RawStream",
    "ReceivedRequest",
    "ScriptedModel",
    "Step",
    "refused_base_url",
    "unreachable_base_url",
]

MODELS = [
    "InvalidModelResponse",
    "Model",
    "ModelContextOverflow",
    "ModelNotCalled",
    "ModelRejected",
    "ModelRequest",
    "ModelRetry",
    "ModelUnavailable",
    "NotCalled",
    "NotProven",
    "OpenAIChatModel",
    "ScriptExhausted",
    "ScriptedModel",
    "ToolDefinition",
    "classify_model_error",
    "reply",
    "retry_after_from_headers",
]


def test_scope_temporal_exports_exactly_the_public_names() -> None:
    assert scope_temporal.__all__ == EXPORTED
    for name in EXPORTED:
        assert getattr(scope_temporal, name) is not None, name


def test_no_public_name_is_left_out_of_all() -> None:
    # every public attribute of the package is a subpackage/module or listed in __all__
    import types

    stray = sorted(
        name
        for name, value in vars(scope_temporal).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in scope_temporal.__all__
        and name != "TYPE_CHECKING"
    )
    assert stray == []


def test_the_test_kit_and_models_export_exactly_their_names() -> None:
    assert scope_temporal.testing.__all__ == TESTING
    assert scope_temporal.models.__all__ == MODELS
    for module, names in ((scope_temporal.testing, TESTING), (scope_temporal.models, MODELS)):
        for name in names:
            assert getattr(module, name) is not None, name
