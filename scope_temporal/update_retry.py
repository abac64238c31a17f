"""Sending an update to one of our workflows, again when it was refused as sent too soon.

A workflow refuses an update (`names.UPDATE_AFTER_COMMANDS`, nothing applied, nothing in
history) when it issued a command earlier in the same workflow task; see
`workflows/task_commands.py` for why. It takes the update in its next task, so the
sender simply tries again after a short pause. Every other outcome is the caller's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from scope_temporal import names

TOO_SOON_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0)
"""Seconds before each new try (about 24 s in all); the next task usually comes at once."""


def sent_too_soon(error: WorkflowUpdateFailedError) -> bool:
    """Whether the workflow refused the update only because it came in a busy task."""
    cause = error.cause
    return isinstance(cause, ApplicationError) and cause.type == names.UPDATE_AFTER_COMMANDS


async def execute_update(
    handle: WorkflowHandle[Any, Any], update: str, *args: Any, **kw: Any
) -> Any:
    """`handle.execute_update(update, *args, **kw)`, sent again while refused as too soon.

    Raises:
        WorkflowUpdateFailedError: any other refusal or failure, or still too soon after
            the last try.
    """
    for pause in (*TOO_SOON_PAUSES, None):
        try:
            return await handle.execute_update(update, *args, **kw)
        except WorkflowUpdateFailedError as error:
            if pause is None or not sent_too_soon(error):
                raise
        await asyncio.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["TOO_SOON_PAUSES", "execute_update", "sent_too_soon"]
