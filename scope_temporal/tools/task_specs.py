"""The framework's task tools as a Definition binds them: `task_status`, `task_output`,
`task_cancel` (a Definition binding any background tool advertises them).

Declarations only: what the model sees (name, description, schema, permission). The
worker runs their bodies (`scope_temporal.background.task_tools`), bound to these very
declarations, so a Definition never holds an executable tool.
"""

from __future__ import annotations

from scope_temporal.tools.decorator import tool
from scope_temporal.tools.spec import ToolSpec

_DECLARED_ONLY = "a declaration: the worker binds the body (background.task_tools)"


@tool(permission="read", execution="parallel")
async def task_status(task_id: str) -> str:
    """Report the status and progress of a background task.

    Args:
        task_id: the task_id of a launch_result.
    """
    raise NotImplementedError(_DECLARED_ONLY)


@tool(permission="read", execution="parallel")
async def task_output(task_id: str, wait_seconds: float = 0, events: int = 10) -> str:
    """Read a background task's result (when it has ended) and its latest progress events.

    Args:
        task_id: the task_id of a launch_result.
        wait_seconds: wait up to this long (at most 300) for the task to end or ask a
            question first.
        events: how many of its latest progress events to include (0-50).
    """
    raise NotImplementedError(_DECLARED_ONLY)


@tool(permission="write", execution="parallel")
async def task_cancel(task_id: str, reason: str = "") -> str:
    """Stop a background task (its run is asked to stop; the result says how it ended).

    Args:
        task_id: the task_id of a launch_result.
        reason: why, kept with the task.
    """
    raise NotImplementedError(_DECLARED_ONLY)


TASK_TOOL_SPECS: tuple[ToolSpec, ...] = (task_status.spec, task_output.spec, task_cancel.spec)
"""The task tools' specs, in the order they are advertised."""
TASK_TOOL_NAMES = frozenset(s.name for s in TASK_TOOL_SPECS)

__all__ = ["TASK_TOOL_NAMES", "TASK_TOOL_SPECS", "task_cancel", "task_output", "task_status"]
