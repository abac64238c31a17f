"""Read and cancel background tasks through a Temporal client (hosts and worker tools).

A running task answers the `scope.task.status` query; an ended one is read from its
result (the final `TaskSnapshot`), which needs no worker to replay it.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import errors, names
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.payloads import TaskCancelInput
from scope_temporal.update_retry import execute_update


class TemporalTaskAccess:
    """`TaskAccess` over a Temporal client (one with the pydantic data converter).

    Args:
        client: the client.
        timeout: per query or update RPC (a query needs a worker; without one it hangs).
    """

    def __init__(self, client: Client, *, timeout: timedelta = timedelta(seconds=10)) -> None:
        self.client = client
        self.timeout = timeout

    async def snapshot(self, task_id: str) -> TaskSnapshot | None:
        """The task's snapshot, or None when no background task has this id.

        Raises:
            RPCError: the server could not be reached, or no worker answered the query.
        """
        handle = self.client.get_workflow_handle(task_id)
        try:
            description = await handle.describe(rpc_timeout=self.timeout)
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        if description.workflow_type != names.TASK_WORKFLOW:
            return None
        if description.status == WorkflowExecutionStatus.COMPLETED:
            try:
                result = await self.client.get_workflow_handle(
                    task_id, result_type=TaskSnapshot
                ).result(rpc_timeout=self.timeout)
            except WorkflowFailureError:
                pass  # ended as a failed workflow: the query below still answers
            else:
                assert isinstance(result, TaskSnapshot)
                return result
        found = await handle.query(
            names.TASK_STATUS_QUERY, result_type=TaskSnapshot, rpc_timeout=self.timeout
        )
        assert isinstance(found, TaskSnapshot)
        return found

    async def cancel(self, task_id: str, reason: str) -> TaskSnapshot | None:
        """Ask the task to stop; its snapshot right after, or None if there is no such task.

        Raises:
            TaskEnded: the task had already ended.
        """
        handle = self.client.get_workflow_handle(task_id)
        try:
            result = await execute_update(
                handle,
                names.TASK_CANCEL,
                TaskCancelInput(reason=reason),
                result_type=TaskSnapshot,
                rpc_timeout=self.timeout,
            )
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == errors.TASK_ENDED:
                raise errors.TaskEnded(cause.message) from None
            raise
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        assert isinstance(result, TaskSnapshot)
        return result


__all__ = ["TemporalTaskAccess"]
