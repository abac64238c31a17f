"""Authoring tools: declare them with `@tool`, run them with `execute_tool`.

Workflow-safe to import: nothing here loads `jsonschema` or does I/O at import time.
"""

from scope_temporal.tools.budget import ToolBudget
from scope_temporal.tools.context import (
    ToolInvocation,
    advertise_tools,
    current_tool_call,
    require_tool_input,
    run_context,
    tool_input_continuation,
)
from scope_temporal.tools.decorator import Tool, tool
from scope_temporal.tools.executor import execute_tool
from scope_temporal.tools.failures import HostFailure, ToolFailure
from scope_temporal.tools.mask import OutputMask
from scope_temporal.tools.middleware import CallNext, Middleware, chain, inner
from scope_temporal.tools.outcome import (
    DefiniteOutcome,
    Disposition,
    Failed,
    InputRequired,
    Rejected,
    Succeeded,
    ToolOutcome,
    Unknown,
    disposition_of,
)
from scope_temporal.tools.output import ToolOutput
from scope_temporal.tools.registry import RetiredTool, ToolRegistry
from scope_temporal.tools.spec import ConcurrencyClassifier, Execution, Permission, ToolSpec

__all__ = [
    "CallNext",
    "ConcurrencyClassifier",
    "DefiniteOutcome",
    "Disposition",
    "Execution",
    "Failed",
    "HostFailure",
    "InputRequired",
    "Middleware",
    "OutputMask",
    "Permission",
    "Rejected",
    "RetiredTool",
    "Succeeded",
    "Tool",
    "ToolBudget",
    "ToolFailure",
    "ToolInvocation",
    "ToolOutcome",
    "ToolOutput",
    "ToolRegistry",
    "ToolSpec",
    "Unknown",
    "advertise_tools",
    "chain",
    "current_tool_call",
    "disposition_of",
    "execute_tool",
    "inner",
    "require_tool_input",
    "run_context",
    "tool",
    "tool_input_continuation",
]
