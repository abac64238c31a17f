"""Every Temporal name scope-temporal uses. Stable: other-language clients and the UI rely on them."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

INTERACTION_WORKFLOW = "scope.Interaction"
TOOL_CALL_WORKFLOW = "scope.ToolCall"

MODEL_ACTIVITY = "scope.model"
TOOL_ACTIVITY = "scope.tool"

STEER = "scope.steer"
TOOL_INPUT = "scope.tool_input"
RESOLVE = "scope.resolve"
PAUSE = "scope.pause"
RESUME = "scope.resume"

SNAPSHOT_QUERY = "scope.snapshot"

DEFAULT_TASK_QUEUE = "scope"

DEFINITION_ATTRIBUTE = SearchAttributeKey.for_keyword("ScopeDefinition")
"""Search attribute: the Definition an Interaction runs."""
STATUS_ATTRIBUTE = SearchAttributeKey.for_keyword("ScopeStatus")
"""Search attribute: running | waiting | paused | completed | failed | canceled."""
SEARCH_ATTRIBUTES = (DEFINITION_ATTRIBUTE, STATUS_ATTRIBUTE)


def tool_call_workflow_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Id of a ToolCall child: stable across replay and continue-as-new."""
    return f"{parent_id}/tool/{model_call_seq}/{call_index}"


def delegate_workflow_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Id of a Delegate child."""
    return f"{parent_id}/delegate/{model_call_seq}/{call_index}"
