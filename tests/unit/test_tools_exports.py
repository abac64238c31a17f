"""`scope_temporal.tools` exports exactly its documented public names."""

from __future__ import annotations

import scope_temporal.tools as tools

EXPECTED = {
    # API.md "Tools" and the tool-authoring brief
    "tool",
    "Tool",
    "ToolSpec",
    "ToolOutput",
    "ToolFailure",
    "ToolBudget",
    "HostFailure",
    "require_tool_input",
    "run_context",
    "tool_input_continuation",
    "advertise_tools",
    "current_tool_call",
    "ToolInvocation",
    "Middleware",
    "OutputMask",
    "ConcurrencyClassifier",
    "CallNext",
    "chain",
    "inner",
    "ToolRegistry",
    "RetiredTool",
    "execute_tool",
    # outcomes and the policy literals they use
    "ToolOutcome",
    "Succeeded",
    "Failed",
    "Rejected",
    "InputRequired",
    "Unknown",
    "DefiniteOutcome",
    "Disposition",
    "disposition_of",
    "Permission",
    "Execution",
}


def test_all_lists_exactly_the_public_names() -> None:
    assert set(tools.__all__) == EXPECTED
    assert len(tools.__all__) == len(EXPECTED)
    for name in tools.__all__:
        assert getattr(tools, name) is not None
