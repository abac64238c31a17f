"""The JSON the model sees for background tools: one envelope per result.

- `foreground_result`: the call finished in the foreground (completed, failed, canceled);
- `launch_result`: the call moved to the background; the task id to follow it with;
- `update`: what `task_status`, `task_output` and `task_cancel` report about a task.

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


def _dump(envelope: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in envelope.items() if v is not None}, ensure_ascii=False)


def _progress(summary: ProgressSummary) -> dict[str, Any] | None:
    if not summary.events:
        return None
    return {"events": summary.events, "last": summary.last_message or summary.last_kind}


def foreground_result(tool: str, outcome: RunOutcome) -> str:
    """A call that finished within the foreground."""
    return _dump(
        {
            "type": "foreground_result",
            "tool": tool,
            "status": outcome.status,
            "data": outcome.data,
            "error": outcome.error,
        }
    )


def launch_result(launch: TaskLaunch) -> str:
    """A call that moved to the background (its task is running or asks a question)."""
    waiting = launch.mode == "waiting_input"
    return _dump(
        {
            "type": "launch_result",
            "tool": launch.tool,
            "task_id": launch.task_id,
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


def update(task: TaskSnapshot, events: Sequence[StoredEvent] = (), note: str | None = None) -> str:
    """A task's state; with `events`, the latest progress events (oldest first)."""
    return _dump(
        {
            "type": "update",
            "tool": task.tool,
            "task_id": task.task_id,
            "status": task.status,
            "attempt": task.attempt,
            "progress": _progress(task.progress),
            "question": task.question.prompt if task.question is not None else None,
            "data": task.data,
            "error": task.error,
            "code": task.code,
            "events": [
                {"seq": e.seq, "event_id": e.update.event_id, "kind": e.update.kind}
                | ({"data": e.update.data} if e.update.data is not None else {})
                for e in events
            ]
            or None,
            "note": note,
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


__all__ = ["foreground_result", "launch_result", "launched", "not_found", "update"]
