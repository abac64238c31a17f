"""The bodies of the tools the model follows its background tasks with: `task_status`,
`task_output`, `task_cancel`, bound to their declarations (`tools.task_specs`, what a
Definition binding any background tool advertises). The worker serves them: they run in
`scope.tool` like other tools and read the task's workflow.

`task_status` and `task_cancel` answer with an `update` envelope (the task's state and
its latest progress event), `task_output` with an `output` envelope (its latest events).
A model may only reach the tasks its own Interaction launched (`<interaction
id>/task/...`); any other id is "not found".
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from scope_temporal.background import envelopes
from scope_temporal.background.presentation import rendered
from scope_temporal.background.progress import StoredEvent
from scope_temporal.background.runtime import TaskAccess, current_runtime
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.errors import TaskEnded
from scope_temporal.ids import task_owner
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.tools import task_specs as declared
from scope_temporal.tools.context import current_tool_call
from scope_temporal.tools.decorator import Tool, implement
from scope_temporal.tools.failures import ToolFailure

MAX_WAIT_SECONDS = 300
_POLL_SECONDS = 0.5
_CANCEL_CONFIRM_SECONDS = 10.0


def _tasks() -> TaskAccess:
    tasks = current_runtime().tasks
    if tasks is None:
        raise RuntimeError("this worker gives its tools no access to background tasks")
    return tasks


async def _find(task_id: str) -> TaskSnapshot:
    owner = task_owner(current_tool_call().process_id)
    found = await _tasks().snapshot(task_id) if task_id.startswith(f"{owner}/task/") else None
    if found is None:
        raise ToolFailure(envelopes.not_found(task_id))
    return found


async def _until(task_id: str, seconds: float, done: bool) -> TaskSnapshot:
    """The task's snapshot once it has ended (or, unless `done`, waits for input), or
    after `seconds`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    task = await _find(task_id)
    while not (task.ended or (not done and task.status == "waiting_input")):
        if loop.time() >= deadline:
            break
        await asyncio.sleep(_POLL_SECONDS)
        task = await _find(task_id)
    return task


async def _latest(task: TaskSnapshot, count: int) -> list[StoredEvent]:
    """The task's latest `count` stored progress events, oldest first."""
    total = task.progress.events
    if not count or not total:
        return []
    stored = current_runtime().materializer
    return await stored.read(task.task_id, after=max(total - count, 0), limit=count)


async def _update(task: TaskSnapshot, note: str | None = None) -> str:
    latest = await _latest(task, 1)
    return envelopes.update(task, latest[-1] if latest else None, note, _shown(task))


def _shown(task: TaskSnapshot) -> envelopes.Shown:
    tools = current_runtime().tools
    tool = None if tools is None else tools.get(task.tool)
    return rendered(tool.impl, task) if isinstance(tool, BackgroundTool) else {}


async def _status(task_id: str) -> str:
    return await _update(await _find(task_id))


async def _output(task_id: str, wait_seconds: float = 0, events: int = 10) -> str:
    task = await _until(task_id, min(max(wait_seconds, 0), MAX_WAIT_SECONDS), done=False)
    latest = await _latest(task, min(max(events, 0), 50))
    return envelopes.output(task, latest, _shown(task))


async def _cancel(task_id: str, reason: str = "") -> str:
    task = await _find(task_id)
    if task.ended:
        return await _update(task, note="the task had already ended; nothing was stopped")
    with contextlib.suppress(TaskEnded):  # it ended meanwhile: its final state says how
        await _tasks().cancel(task_id, reason or "cancelled by the model")
    task = await _until(task_id, _CANCEL_CONFIRM_SECONDS, done=True)
    note = None if task.ended else "stop requested; the run has not confirmed yet"
    return await _update(task, note=note)


task_status = implement(declared.task_status, _status)
task_output = implement(declared.task_output, _output)
task_cancel = implement(declared.task_cancel, _cancel)

TASK_TOOLS: tuple[Tool[..., Any], ...] = (task_status, task_output, task_cancel)
"""The framework's task tools, in the order they are advertised."""

__all__ = ["TASK_TOOLS", "task_cancel", "task_output", "task_status"]
