"""The JSON the model sees for background tools: one envelope per result.

- `foreground_result`: the call finished in the foreground (completed, failed, canceled);
- `launch_result`: the call moved to the background; the task id to follow it with;
- `update`: what `task_status` and `task_cancel` report about a task: its state and one
  progress event, the latest;
- `output`: what `task_output` reports: the task's state, its result and its latest
  progress events.

Pure and deterministic (the workflow builds `launch_result` itself).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scope_temporal.background.progress import StoredEvent
from scope_temporal.background.protocols import RunOutcome
from scope_temporal.chat import ToolCall, ToolResult
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.tools.outcome import ProgressSummary, Succeeded, TaskLaunch

_FOLLOW_UP = (
    "It runs in the background: check it with task_status, read its result with "
    "task_output, stop it with task_cancel (each takes this task_id)."
)


Shown = dict[str, Any]
"""Fields a tool's `render_result` adds to a completed result (see `presentation`)."""


def _dump(envelope: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in envelope.items() if v is not None}, ensure_ascii=False)


def _progress(summary: ProgressSummary) -> dict[str, Any] | None:
    if not summary.events:
        return None
    return {"events": summary.events, "last": summary.last_message or summary.last_kind}


def foreground_result(tool: str, outcome: RunOutcome, shown: Shown | None = None) -> str:
    """A call that finished within the foreground (`shown`: its `render_result` fields)."""
    return _dump(
        {
            "type": "foreground_result",
            "tool": tool,
            "status": outcome.status,
            "data": outcome.data,
            "error": outcome.error,
        }
        | (shown or {})
    )


def launch_result(launch: TaskLaunch) -> str:
    """A call that moved to the background (its task is running or asks a question)."""
    waiting = launch.mode == "waiting_input"
    return _dump(
        {
            "type": "launch_result",
            "tool": launch.tool,
            "task_id": launch.task_id,
            "description": launch.description,
            "description_error": launch.description_error,
            "status": "waiting_input" if waiting else "running",
            "question": launch.prompt if waiting else None,
            "progress": _progress(launch.progress),
            "note": _FOLLOW_UP
            + (" It waits for an answer from the user before it goes on." if waiting else ""),
        }
    )


def launched(call: ToolCall, launch: TaskLaunch) -> Succeeded:
    """The settlement of a call whose task started: its `launch_result`."""
    return Succeeded(
        result=ToolResult(call_id=call.id, name=call.name, content=launch_result(launch)),
        task_id=launch.task_id,
    )


def update(
    task: TaskSnapshot,
    event: StoredEvent | None = None,
    note: str | None = None,
    shown: Shown | None = None,
) -> str:
    """A task's state and one progress event, its latest (`task_status`, `task_cancel`);
    `shown`: the `render_result` fields of a completed task."""
    return _dump(_task(task, "update", note, shown) | {"event": _event(event) if event else None})


def output(
    task: TaskSnapshot, events: Sequence[StoredEvent] = (), shown: Shown | None = None
) -> str:
    """A task's state and its latest progress events, oldest first (`task_output`)."""
    return _dump(
        _task(task, "output", None, shown) | {"events": [_event(e) for e in events] or None}
    )


def _task(task: TaskSnapshot, kind: str, note: str | None, shown: Shown | None) -> dict[str, Any]:
    return {
        "type": kind,
        "tool": task.tool,
        "task_id": task.task_id,
        "status": task.status,
        "attempt": task.attempt,
        "progress": _progress(task.progress),
        "question": task.question.prompt if task.question is not None else None,
        "data": task.data,
        "error": task.error,
        "code": task.code,
        "note": note,
    } | (shown or {})


def _event(stored: StoredEvent) -> dict[str, Any]:
    update = stored.update
    return (
        {"seq": stored.seq, "event_id": update.event_id, "kind": update.kind}
        | ({"message": update.headline} if update.headline is not None else {})
        | ({"data": update.data} if update.data is not None else {})
    )


def notification(task: TaskSnapshot) -> str:
    """What the Interaction is told when its task ends or starts waiting for input."""
    waiting = task.status == "waiting_input"
    return _dump(
        {
            "type": "task_notification",
            "tool": task.tool,
            "task_id": task.task_id,
            "description": task.description,
            "status": task.status,
            "question": task.question.prompt if task.question is not None else None,
            "data": task.data,
            "error": task.error,
            "code": task.code,
            "note": "A background task you started "
            + ("asks a question; the user answers it." if waiting else "has ended.")
            + " Read it with task_output if you need more.",
        }
    )


def not_found(task_id: str) -> str:
    """A task tool asked about a task this conversation did not launch."""
    return _dump(
        {
            "type": "update",
            "task_id": task_id,
            "status": "not_found",
            "error": "no background task with this id was launched in this conversation; use "
            "the task_id of a launch_result",
        }
    )


__all__ = [
    "Shown",
    "foreground_result",
    "launch_result",
    "launched",
    "not_found",
    "notification",
    "output",
    "update",
]
