"""The transport of `scope.BackgroundTask`: `TemporalTransport` plus what only a task
does (its attempts, telling its Interaction and session, continuing as new). Everything
here runs inside the workflow: deterministic."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta  # deterministic: a value type, no clock

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ActivityError, TimeoutError

from scope_temporal import names
from scope_temporal.driver.history_limits import HistoryUsage
from scope_temporal.interaction.task_values import AttemptReport
from scope_temporal.payload_limits import size_of
from scope_temporal.payloads import HeartbeatState, SteerInput, TaskAttemptInput, TaskInput
from scope_temporal.workflows import serving
from scope_temporal.workflows.ended import describe_activity_error
from scope_temporal.workflows.task_commands import command_issued
from scope_temporal.workflows.temporal import TemporalTransport, retried, signal_workflow

CONTINUE_AS_NEW_PATCH = "scope.task.continue_as_new"
"""Tasks recorded before they continued as new replay without it."""

NOTICES_PATCH = "scope.task.notices"
"""Tasks recorded before lifecycle notifications replay without them."""

_ADOPT_PICKUP = timedelta(seconds=10)
"""How long an adoption may wait for the worker holding the live run to pick it up."""


class TaskTemporalTransport(TemporalTransport):
    """A background task's transport (see `driver.transport.TaskTransport`)."""

    def start_attempt(
        self, input: TaskAttemptInput, *, start_to_close: timedelta, summary: str
    ) -> _Attempt:
        plan = input.plan
        command_issued()
        return _Attempt(
            workflow.start_activity(
                names.TASK_ATTEMPT_ACTIVITY,
                input,
                result_type=AttemptReport,
                task_queue=plan.queue,
                start_to_close_timeout=start_to_close,
                schedule_to_start_timeout=_ADOPT_PICKUP if plan.mode == "adopt" else None,
                heartbeat_timeout=input.heartbeat,
                retry_policy=retried(plan.max_attempts),
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=summary,
            )
        )

    async def notify(self, process_id: str, input: SteerInput) -> bool:
        command_issued()  # the patch marker, then the signal
        if not workflow.patched(NOTICES_PATCH):  # a task recorded before notifications
            return True
        return await signal_workflow(process_id, names.STEER, input) is None

    async def notify_session(self, session_id: str, input: SteerInput) -> bool:
        # (only tasks started with a session id: no earlier history)
        return await signal_workflow(session_id, names.SESSION_NOTICE, input) is None

    def task_history(self) -> HistoryUsage:
        return self.history_usage()

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


class _Attempt:
    """A background attempt in flight: the `scope.task.attempt` activity."""

    def __init__(self, handle: workflow.ActivityHandle[AttemptReport]) -> None:
        self._handle = handle

    def cancel(self) -> None:
        self._handle.cancel()

    async def report(self) -> AttemptReport:
        """The attempt's report; an attempt without one is lost (with its last checkpoint)."""
        try:
            return await self._handle
        except ActivityError as error:
            checkpoint = None
            cause = error.cause
            if isinstance(cause, TimeoutError) and cause.last_heartbeat_details:
                try:
                    beat = HeartbeatState.model_validate(cause.last_heartbeat_details[0])
                except ValidationError:  # not ours: recover from the last known checkpoint
                    beat = HeartbeatState()
                checkpoint = beat.checkpoint
            return AttemptReport(
                attempt=0, lost=describe_activity_error(error), checkpoint=checkpoint
            )


__all__ = ["CONTINUE_AS_NEW_PATCH", "NOTICES_PATCH", "TaskTemporalTransport"]
