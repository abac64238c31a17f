"""Every Temporal name scope-temporal uses.

Stable: other-language clients and the UI rely on them.
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

INTERACTION_WORKFLOW = "scope.Interaction"
TOOL_CALL_WORKFLOW = "scope.ToolCall"

MODEL_ACTIVITY = "scope.model"
TOOL_ACTIVITY = "scope.tool"
RECORD_DIGEST_ACTIVITY = "scope.record_digest"

STEER = "scope.steer"
TOOL_INPUT = "scope.tool_input"
RESOLVE = "scope.resolve"
PAUSE = "scope.pause"
RESUME = "scope.resume"

SNAPSHOT_QUERY = "scope.snapshot"

BARRIER_SCHEDULING_PATCH = "scope.scheduling.barriers"
"""Patch id (`workflow.patched`): runs recorded without it schedule calls by the rules
before sequential calls became barriers, so their histories still replay."""

DEFAULT_TASK_QUEUE = "scope"

DEFINITION_ATTRIBUTE = SearchAttributeKey.for_keyword("ScopeDefinition")
"""Search attribute: the Definition an Interaction runs."""
STATUS_ATTRIBUTE = SearchAttributeKey.for_keyword("ScopeStatus")
"""Search attribute: running | waiting | paused | completed | failed | canceled."""
SEARCH_ATTRIBUTES = (DEFINITION_ATTRIBUTE, STATUS_ATTRIBUTE)
