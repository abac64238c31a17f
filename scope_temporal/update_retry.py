"""Sending an update to one of our workflows, again when it was refused as sent too soon
or aborted with the workflow task that carried it.

A workflow refuses an update (`names.UPDATE_AFTER_COMMANDS`, nothing applied, nothing in
history) when it issued a command earlier in the same workflow task; see
`workflows/task_commands.py` for why. The server aborts an update (`WorkflowNotReady`,
"unexpected workflow task failure") when the workflow task that took it fails (seen when
a session ended as its turn's background task signalled it): the task's work is
discarded, the update with it. Either way the next task takes the update, so the
sender simply tries again after a short pause. Every other outcome is the caller's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.api.errordetails.v1 import MultiOperationExecutionFailure
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from scope_temporal import names

TOO_SOON_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0)
"""Seconds before each new try (about 24 s in all); the next task usually comes at once."""


def sent_too_soon(error: WorkflowUpdateFailedError) -> bool:
    """Whether the workflow refused the update only because it came in a busy task."""
    cause = error.cause
    return isinstance(cause, ApplicationError) and cause.type == names.UPDATE_AFTER_COMMANDS


def aborted_with_its_task(error: RPCError) -> bool:
    """Whether the server aborted the update because the workflow task that took it failed:
    nothing of it was applied, and the workflow's next task takes it if sent again."""
    try:
        details = list(error.grpc_status.details)
        for detail in list(details):  # update-with-start: the update's own status inside
            failure = MultiOperationExecutionFailure()
            if detail.Unpack(failure):
                details += [d for status in failure.statuses for d in status.details]
    except Exception:  # a status that does not parse is not this one
        return False
    return any(detail.type_url.endswith(".WorkflowNotReadyFailure") for detail in details)


async def execute_update(
    handle: WorkflowHandle[Any, Any], update: str, *args: Any, **kw: Any
) -> Any:
    """`handle.execute_update(update, *args, **kw)`, sent again while refused as too soon.

    Raises:
        WorkflowUpdateFailedError: any other refusal or failure, or still too soon after
            the last try.
        RPCError: the server unreachable, or still aborting it after the last try.
    """
    for pause in (*TOO_SOON_PAUSES, None):
        try:
            return await handle.execute_update(update, *args, **kw)
        except WorkflowUpdateFailedError as error:
            if pause is None or not sent_too_soon(error):
                raise
        except RPCError as error:
            if pause is None or not aborted_with_its_task(error):
                raise
        await asyncio.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["TOO_SOON_PAUSES", "aborted_with_its_task", "execute_update", "sent_too_soon"]
