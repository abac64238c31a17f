"""The transport of `scope.BackgroundTask`: `TemporalTransport` plus what only a task
does (tell its session, continue as new). Everything here runs inside the workflow:
deterministic."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

from scope_temporal import names
from scope_temporal.driver.history_limits import HistoryUsage
from scope_temporal.payload_limits import size_of
from scope_temporal.payloads import SteerInput, TaskInput
from scope_temporal.workflows import serving
from scope_temporal.workflows.task_commands import command_issued
from scope_temporal.workflows.temporal import TemporalTransport

CONTINUE_AS_NEW_PATCH = "scope.task.continue_as_new"
"""Tasks recorded before they continued as new replay without it."""


class TaskTemporalTransport(TemporalTransport):
    """A background task's transport (see `driver.transport.TaskTransport`)."""

    def task_history(self) -> HistoryUsage:
        return self.history_usage()

    def handlers_finished(self) -> bool:
        return workflow.all_handlers_finished()

    async def notify_session(self, session_id: str, input: SteerInput) -> bool:
        command_issued()  # (only tasks started with a session id: no earlier history)
        try:
            await workflow.get_external_workflow_handle(session_id).signal(
                names.SESSION_NOTICE, input
            )
        except Exception:  # it has ended (or never was): the signal was not delivered
            return False
        return True

    async def continue_task_as_new(self, next_input: Callable[[], TaskInput]) -> None:
        limit = serving.current().payload_limit
        size = size_of(next_input())
        if size > limit:
            self.warn(
                f"not continuing as new: the task's state is {size:,} bytes, over the "
                f"payload limit of {limit:,} (a large checkpoint or arguments); this run's "
                "history keeps growing"
            )
            return
        command_issued()  # the patch marker
        if not workflow.patched(CONTINUE_AS_NEW_PATCH):
            return
        await self.events.close()
        await workflow.wait_condition(workflow.all_handlers_finished)
        command_issued()
        workflow.continue_as_new(next_input())


__all__ = ["CONTINUE_AS_NEW_PATCH", "TaskTemporalTransport"]
