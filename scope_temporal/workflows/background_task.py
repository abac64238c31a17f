"""Workflow `scope.BackgroundTask`. Everything here runs inside the workflow: deterministic.

One per task, id = the task id, started by the side of the call that moved to the
background (parent-close policy *abandon*: the task outlives its call; the Interaction
cancels its tasks when it is cancelled). A thin shell around `TaskDriver` (the same
driver `LocalRunner` runs), with `TaskTemporalTransport`.

Each attempt is the heartbeating activity `scope.task.attempt`; its heartbeat details
carry the checkpoint, so Temporal's retry (recoverable tools only: `max_attempts > 1`)
recovers the run where it was. An adoption runs on the task queue of the worker that
holds the live run, once. The run continues as new, carrying the task's whole state,
before its history passes its bound (`driver.task_carry`); updates arriving meanwhile
are refused as sent too soon, and the sender's next try reaches the next run. Answers
(`scope.tool_input`) and cancellation (`scope.task.cancel`) are updates with validators;
status and the open question are queries. The workflow's result is the final
`TaskSnapshot` (a failed or cancelled task is data, not an error).
"""

from __future__ import annotations

from temporalio import workflow

from scope_temporal import names
from scope_temporal.driver.background_task import TaskDriver
from scope_temporal.interaction.snapshot import PendingToolInput, ProcessSnapshot, TaskSnapshot
from scope_temporal.payloads import TaskCancelInput, TaskInput, TaskReport, ToolInputAnswer
from scope_temporal.workflows.events import NoEvents, SentEvents
from scope_temporal.workflows.outcomes import refused_as_update, scope_workflow
from scope_temporal.workflows.task_commands import (
    CommandsInTask,
    refuse_update_after_commands,
)
from scope_temporal.workflows.task_transport import TaskTemporalTransport


@scope_workflow(names.TASK_WORKFLOW)
class BackgroundTaskWorkflow(CommandsInTask):
    """One background task."""

    @workflow.init
    def __init__(self, input: TaskInput) -> None:
        events_to = input.route.events_to
        events = SentEvents(events_to) if events_to is not None else NoEvents()
        self._driver = TaskDriver(input, TaskTemporalTransport(events))

    @workflow.run
    async def run(self, input: TaskInput) -> TaskSnapshot:
        snapshot = await self._driver.run()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return snapshot

    # --- signals, updates, queries ---------------------------------------------------

    @workflow.signal(name=names.TASK_REPORT)
    def report(self, input: TaskReport) -> None:
        self._driver.report(input)

    @workflow.update(name=names.TASK_CANCEL)
    def cancel(self, input: TaskCancelInput) -> TaskSnapshot:
        return self._driver.cancel(input.reason)

    def _refuse_while_busy(self) -> None:
        """Refuse an update (the sender tries again) that might be recorded after this
        task's commands, or that comes while the run continues as new (the next run
        takes it)."""
        refuse_update_after_commands(closing=self._driver.closing)

    @cancel.validator
    def _validate_cancel(self, input: TaskCancelInput) -> None:
        self._refuse_while_busy()
        with refused_as_update():
            self._driver.validate_cancel()

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, input: ToolInputAnswer) -> None:
        self._driver.tool_input_signal(input)

    @workflow.update(name=names.TOOL_INPUT)
    async def tool_input_update(self, input: ToolInputAnswer) -> bool:
        """Answer the open question; returns once the tool took the answer (True), or
        False for an exact duplicate of one it took. A refusal by the tool raises
        `InvalidToolInput` and leaves the question open."""
        with refused_as_update():
            return await self._driver.answer_update(input)

    @tool_input_update.validator
    def _validate_tool_input(self, input: ToolInputAnswer) -> None:
        self._refuse_while_busy()
        with refused_as_update():
            self._driver.validate_answer(input)

    @workflow.query(name=names.TASK_STATUS_QUERY)
    def status(self) -> TaskSnapshot:
        return self._driver.snapshot()

    @workflow.query(name=names.TASK_QUESTION_QUERY)
    def question(self) -> PendingToolInput | None:
        return self._driver.snapshot().question

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        return self._driver.process_snapshot()
