"""Lifecycle notifications of background tasks, as the Interaction receives them.

A task that ends (completed, failed, canceled; a lost task is failed) or starts waiting
for input tells its Interaction with a steer whose id is `notice_id(...)`: it is applied
at the next model turn like any steer (never preempting a call, never answering a wait),
deduplicated by its id. It is dropped, unseen, when the model has already read that task
in that status in a tool result (e.g. `task_output` returned it completed): the model is
told each task's status once. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from scope_temporal.chat import Message
from scope_temporal.interaction.state import SteerEnvelope

NOTICE_PREFIX = "task-notice:"


def notice_id(task_id: str, status: str, waits: int = 0) -> str:
    """The steer id of the notification that task `task_id` reached `status` (its
    `waits`-th question, for `waiting_input`)."""
    return f"{NOTICE_PREFIX}{status}:{waits}:{task_id}"


def _subject(signal_id: str) -> tuple[str, str] | None:
    """(task id, status) of a notification's steer id; None for any other steer."""
    if not signal_id.startswith(NOTICE_PREFIX):
        return None
    status, _, task_id = signal_id[len(NOTICE_PREFIX) :].split(":", 2)
    return task_id, status


def _seen(context: Sequence[Message]) -> set[tuple[str, str]]:
    """(task id, status) pairs the model has read in tool results."""
    found: set[tuple[str, str]] = set()
    for message in context:
        for result in message.tool_results if message.role == "tool" else ():
            if '"task_id"' not in result.content:
                continue
            try:
                envelope = json.loads(result.content)
            except ValueError:
                continue
            if isinstance(envelope, dict) and isinstance(envelope.get("task_id"), str):
                found.add((envelope["task_id"], str(envelope.get("status"))))
    return found


def live(mailbox: list[SteerEnvelope], context: Sequence[Message]) -> list[SteerEnvelope]:
    """The queued steers still worth a model turn: all but notifications of a status the
    model has already read."""
    if not any(_subject(e.signal_id) for e in mailbox):
        return mailbox
    seen = _seen(context)
    return [e for e in mailbox if _subject(e.signal_id) not in seen]


__all__ = ["NOTICE_PREFIX", "live", "notice_id"]
