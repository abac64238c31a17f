"""The public surface is exactly what the API reference promises: no name missing, none extra.

(After sdk-python's `tests/test_client_exports.py`.) Adding a public name is a decision:
add it to its role's group in `scope_temporal.__all__`, to docs/reference/ and to the list
below together; removing one breaks users. The roles with a module of their own
(`scope_temporal.events`, `.snapshots`, `.errors`, `.testing`) hand on the same objects.
"""

from __future__ import annotations

import scope_temporal
import scope_temporal.errors
import scope_temporal.events
import scope_temporal.models
import scope_temporal.snapshots
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
    "ToolProgressEvent",
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
    # grouped by role, not sorted: the set is the contract, each name listed once
    assert sorted(scope_temporal.__all__) == EXPORTED
    assert len(set(scope_temporal.__all__)) == len(scope_temporal.__all__)
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


def test_each_role_module_hands_on_the_same_objects_as_the_root() -> None:
    # a role's home documents its names; the root import stays the same object
    for module in (scope_temporal.events, scope_temporal.snapshots):
        assert module.__all__, module.__name__
        for name in module.__all__:
            assert name in scope_temporal.__all__, name
            assert getattr(module, name) is getattr(scope_temporal, name), name


def test_every_error_of_the_root_lives_in_scope_temporal_errors_or_models() -> None:
    # the errors a Model adapter raises are documented with the models
    errors = [
        name
        for name in scope_temporal.__all__
        if isinstance(getattr(scope_temporal, name), type)
        and issubclass(getattr(scope_temporal, name), scope_temporal.ScopeError)
    ]
    assert "ScopeError" in errors and len(errors) > 20
    for name in errors:
        home = scope_temporal.models if name in MODELS else scope_temporal.errors
        assert getattr(home, name) is getattr(scope_temporal, name), name


def test_every_event_kind_and_snapshot_is_in_its_role_module() -> None:
    events = [n for n in scope_temporal.__all__ if n.endswith("Event")]
    snapshots = [n for n in scope_temporal.__all__ if n.endswith("Snapshot")]
    assert set(events) <= set(scope_temporal.events.__all__)
    assert set(snapshots) <= set(scope_temporal.snapshots.__all__)
