"""Workflow `scope.BackgroundTask`. Everything here runs inside the workflow: deterministic.

A thin driver of `BackgroundTaskMachine`: one per task, id = the task id, started by the
ToolCall side of the call that moved to the background (parent-close policy *abandon*:
the task outlives its call; the Interaction cancels its tasks when it is cancelled).

Each attempt is the heartbeating activity `scope.task.attempt`; its heartbeat details
carry the checkpoint, so Temporal's retry (recoverable tools only: `max_attempts > 1`)
recovers the run where it was. An adoption runs on the task queue of the worker that holds
the live run, once. Answers (`scope.tool_input`) and cancellation (`scope.task.cancel`)
are updates with validators; status and the open question are queries. The workflow's
result is the final `TaskSnapshot` (a failed or cancelled task is data, not an error).
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

from scope_temporal import errors, names
from scope_temporal.driver.transport import AttemptRun
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.background_task import BackgroundTaskMachine
from scope_temporal.interaction.snapshot import PendingToolInput, ProcessSnapshot, TaskSnapshot
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.payloads import (
    TaskAttemptInput,
    TaskCancelInput,
    TaskInput,
    TaskReport,
    ToolInputAnswer,
)
from scope_temporal.workflows.outcomes import update_rejection
from scope_temporal.workflows.temporal import TemporalTransport


# ScopeError: deterministic framework errors fail the workflow with their code.
# Not sandboxed: no user code runs here (see the note on InteractionWorkflow).
@workflow.defn(name=names.TASK_WORKFLOW, failure_exception_types=[ScopeError], sandboxed=False)
class BackgroundTaskWorkflow:
    """One background task."""

    @workflow.init
    def __init__(self, input: TaskInput) -> None:
        self._machine = BackgroundTaskMachine.start(
            input.launch, ref=input.ref, parent_id=input.parent_id, definition=input.definition
        )
        self._attempt: AttemptRun | None = None
        self._stop_sent = False

    @workflow.run
    async def run(self, input: TaskInput) -> TaskSnapshot:
        machine = self._machine
        try:
            while not machine.done:
                self._show()
                plan = machine.next_attempt()
                if plan is None:
                    await workflow.wait_condition(lambda: machine.done or machine.phase == "ready")
                    continue
                machine.on_report(await self._run_attempt(plan, input))
        except asyncio.CancelledError:
            # Cancelled from outside (its Interaction was cancelled): stop the run, say how
            # it ended, and end normally with that (the snapshot is the result).
            if not machine.done and machine.request_cancel("the task's workflow was cancelled"):
                attempt = self._attempt
                if attempt is not None:
                    attempt.cancel()
                    machine.on_report(await attempt.report())
        self._show()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return machine.snapshot()

    async def _run_attempt(self, plan: AttemptPlan, input: TaskInput) -> AttemptReport:
        settings = input.launch.settings
        self._stop_sent = False
        self._attempt = attempt = TemporalTransport().start_attempt(
            TaskAttemptInput(plan=plan, heartbeat=settings.heartbeat_timeout),
            start_to_close=settings.task_timeout,
            summary=f"{plan.mode} {plan.tool} (attempt {plan.attempt})",
        )
        if self._machine.stopping:  # cancelled while this attempt was being planned
            self._stop()
        try:
            return await attempt.report()
        finally:
            self._attempt = None

    def _stop(self) -> None:
        if self._attempt is not None and not self._stop_sent:
            self._stop_sent = True
            self._attempt.cancel()

    def _show(self) -> None:
        task = self._machine.snapshot()
        detail = f"**{task.status}** · {task.tool} · attempt {task.attempt}"
        if task.progress.events:
            detail += f" · {task.progress.events} progress event(s)"
            if task.progress.last_message:
                detail += f": {task.progress.last_message}"
        if task.question is not None:
            detail += f" · waiting for input `{task.question.wait_id}`: {task.question.prompt_text}"
        if task.error:
            detail += f" · {task.error}"
        workflow.set_current_details(detail)

    # --- signals, updates, queries ---------------------------------------------------

    @workflow.signal(name=names.TASK_REPORT)
    def report(self, input: TaskReport) -> None:
        self._machine.on_progress(input.attempt, input.progress, input.resumed)

    @workflow.update(name=names.TASK_CANCEL)
    def cancel(self, input: TaskCancelInput) -> TaskSnapshot:
        if self._machine.request_cancel(input.reason or "cancelled on request"):
            self._stop()
        return self._machine.snapshot()

    @cancel.validator
    def _validate_cancel(self, input: TaskCancelInput) -> None:
        if self._machine.done:
            raise update_rejection(
                errors.TaskEnded(
                    f"Background task {self._machine.snapshot().task_id!r} has already ended "
                    f"({self._machine.phase})."
                )
            )

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, input: ToolInputAnswer) -> None:
        try:
            self._machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            self._machine.record_rejected(input.answer_id, "tool_input", error)

    @workflow.update(name=names.TOOL_INPUT)
    async def tool_input_update(self, input: ToolInputAnswer) -> bool:
        """Answer the open question; returns once the tool took the answer (True), or
        False for an exact duplicate of one it took. A refusal by the tool raises
        `InvalidToolInput` and leaves the question open."""
        machine = self._machine
        try:
            fresh = machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            raise update_rejection(error) from None
        await workflow.wait_condition(lambda: machine.verdict(input.answer_id) is not None)
        verdict = machine.verdict(input.answer_id)
        if verdict == "refused":
            raise update_rejection(
                errors.InvalidToolInput(
                    f"{machine.snapshot().tool} refused the answer (nothing was applied): "
                    f"{machine.refusal(input.answer_id)}"
                )
            )
        if verdict == "unapplied":
            raise update_rejection(
                errors.TaskEnded("The task ended before it could take the answer.")
            )
        return fresh

    @tool_input_update.validator
    def _validate_tool_input(self, input: ToolInputAnswer) -> None:
        try:
            self._machine.check_answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.query(name=names.TASK_STATUS_QUERY)
    def status(self) -> TaskSnapshot:
        return self._machine.snapshot()

    @workflow.query(name=names.TASK_QUESTION_QUERY)
    def question(self) -> PendingToolInput | None:
        return self._machine.snapshot().question

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        return self._machine.process_snapshot()
