"""Managed background tools: long operations that start in the foreground, move to the
background after a timeout, report progress, survive worker loss and wait for input.

A call of a background tool runs in the foreground first (attempt 0, nothing persisted);
if it ends within the foreground timeout the model gets a `foreground_result`. If it is
still running and may move, it continues as a background task (workflow
`scope.BackgroundTask`, id = the task id) and the model gets a `launch_result` with the
task id, then follows it with `task_status` / `task_output` / `task_cancel`. See
`protocols` for what a tool implements, `foreground` and `attempts` for what happens
where, and `materializer` for where progress lives.
"""

from scope_temporal.background.handle import RunProgress, TaskRun
from scope_temporal.background.materializer import (
    LocalFileMaterializer,
    MemoryMaterializer,
    OutputMaterializer,
)
from scope_temporal.background.progress import ProgressUpdate, StoredEvent
from scope_temporal.background.protocols import (
    BackgroundOperation,
    Handoff,
    Recoverable,
    Resumable,
    RunHandle,
    RunOutcome,
)
from scope_temporal.background.task_tools import TASK_TOOLS, task_cancel, task_output, task_status
from scope_temporal.background.tool import BackgroundTool, background_tool

__all__ = [
    "TASK_TOOLS",
    "BackgroundOperation",
    "BackgroundTool",
    "Handoff",
    "LocalFileMaterializer",
    "MemoryMaterializer",
    "OutputMaterializer",
    "ProgressUpdate",
    "Recoverable",
    "Resumable",
    "RunHandle",
    "RunOutcome",
    "RunProgress",
    "StoredEvent",
    "TaskRun",
    "background_tool",
    "task_cancel",
    "task_output",
    "task_status",
]
