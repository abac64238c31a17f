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
    "Artifact",
    "BackgroundOperation",
    "BackgroundTool",
    "CompletionCandidate",
    "CompletionDecision",
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
    "InvalidSignal",
    "InvalidToolInput",
    "LiveText",
    "LocalFileMaterializer",
    "Message",
    "Middleware",
    "Model",
    "ModelRequest",
    "NoSuchWait",
    "OpenAIChatModel",
    "Options",
    "Output",
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
    "Tool",
    "ToolCall",
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
    "current_tool_call",
    "inner",
    "reply",
    "require_tool_input",
    "scope_data_converter",
    "settle_model_result",
    "settle_tool_result",
    "stream_delta",
    "tool",
    "tool_input_continuation",
]

TESTING = ["LocalRun", "LocalRunner", "ScriptedModel"]

MODELS = [
    "InvalidModelResponse",
    "Model",
    "ModelRequest",
    "OpenAIChatModel",
    "ScriptExhausted",
    "ScriptedModel",
    "ToolDefinition",
    "reply",
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
