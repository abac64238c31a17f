"""The one driver of a background task, on any engine.

It runs the attempts the machine plans, one at a time (each one start, recover, resume or
adopt of the run, observed to its outcome), feeds each report back, and maps the host's
inputs onto the machine: progress news from the running attempt, an answer to the
task's question (taken only once the tool took it), a cancellation (the running attempt
is asked to stop; its report says how the run ended). Its result is the final
`TaskSnapshot`: a failed or cancelled task is data, not an error. It reports its
progress and its question to the tree's event stream.
"""

from __future__ import annotations

import asyncio

from scope_temporal import errors
from scope_temporal.background import envelopes
from scope_temporal.chat import Message
from scope_temporal.driver import task_carry
from scope_temporal.driver.transport import AttemptRun, TaskTransport
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.background_task import BackgroundTaskMachine
from scope_temporal.interaction.news import TaskNews
from scope_temporal.interaction.notices import notice_id
from scope_temporal.interaction.snapshot import ProcessSnapshot, SignalKind, TaskSnapshot
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.payloads import (
    SteerInput,
    TaskAttemptInput,
    TaskInput,
    TaskReport,
    ToolInputAnswer,
)


class TaskDriver:
    """Drives one background task."""

    def __init__(self, input: TaskInput, transport: TaskTransport) -> None:
        carry = input.carried
        if carry is not None:  # a run continued as new: exactly where the last one was
            self.machine = BackgroundTaskMachine.restore(carry.state)
            self._news = TaskNews(carry.shown, carry.wait)
            self._told = set(carry.told)
            self.runs = carry.runs
        else:
            self.machine = BackgroundTaskMachine.start(
                input.launch, ref=input.ref, parent_id=input.parent_id, definition=input.definition
            )
            self._news = TaskNews()
            self._told = set()
            self.runs = 1
        self._input = input
        self._transport = transport
        self._attempt: AttemptRun | None = None
        self._stop_sent = False
        self._yielded = False
        self.closing = False
        """The run is continuing as new: updates are refused (the sender tries again)."""

    async def run(self) -> TaskSnapshot:
        """Run attempts until the task ends; its final snapshot.

        Cancelled from outside (its Interaction was), it stops the run, records how it
        ended, and ends normally with that.
        """
        machine, transport = self.machine, self._transport
        try:
            while not machine.done:
                self._show()
                await self._notify()
                await self._continue_if_due()
                plan = machine.next_attempt()
                if plan is None:
                    await transport.wait_until(lambda: machine.done or machine.phase == "ready")
                    continue
                self._settle(await self._run_attempt(plan))
        except asyncio.CancelledError:
            if transport.evicted():  # not the task's end: it goes on from its history
                raise
            if not machine.done and machine.request_cancel("the task's workflow was cancelled"):
                attempt = self._attempt
                if attempt is not None:
                    attempt.cancel()
                    self._settle(await attempt.report())
        self._show()
        await self._notify()
        await transport.flush_events()
        return machine.snapshot()

    async def _continue_if_due(self) -> None:
        """Continue as new when the history is due for it (see `task_carry`) and nothing
        holds this run: no handler in flight, no cancellation being carried out."""
        transport, machine = self._transport, self.machine
        usage = transport.task_history()
        due = self._yielded or task_carry.continue_due(
            usage, task_carry.bound_of(self._input), suggested=transport.continue_as_new_suggested()
        )
        self._yielded = False
        if not due or usage is None or machine.state.cancel_reason is not None:
            return
        if machine.phase not in ("ready", "waiting_input") or not transport.handlers_finished():
            return
        self.closing = True
        await transport.continue_task_as_new(
            lambda: task_carry.carried(self._input, machine, self._told, self._news, self.runs)
        )
        self.closing = False  # this run may not continue as new (recorded before it could)

    async def _run_attempt(self, plan: AttemptPlan) -> AttemptReport:
        settings = self._input.launch.settings
        self._stop_sent = False
        budget = task_carry.report_budget(
            self._transport.task_history(), task_carry.bound_of(self._input)
        )
        self._attempt = attempt = self._transport.start_attempt(
            TaskAttemptInput(
                plan=plan,
                heartbeat=settings.heartbeat_timeout,
                yield_after=budget,
                yield_by=task_carry.yield_mode(settings) if budget is not None else None,
            ),
            start_to_close=settings.task_timeout,
            summary=f"{plan.mode} {plan.tool} (attempt {plan.attempt})",
        )
        if self.machine.stopping:  # cancelled while this attempt was being planned
            self._stop()
        try:
            return await attempt.report()
        finally:
            self._attempt = None

    async def _notify(self) -> None:
        """Tell the Interaction, once per status, that the task ended or waits for input
        (unless the launch or the tool turned notifications off); a session's turn's task
        tells the session, which steers its running turn or keeps it for the next."""
        launch = self._input.launch
        task = self.machine.snapshot()
        wanted = launch.notify if launch.notify is not None else launch.settings.notify
        if not wanted or not (task.ended or task.status == "waiting_input"):
            return
        waits = self.machine.state.waits if task.status == "waiting_input" else 0
        signal_id = notice_id(task.task_id, task.status, waits)
        if signal_id in self._told:
            return
        self._told.add(signal_id)
        message = Message.user(envelopes.notification(task))
        steer = SteerInput(signal_id=signal_id, messages=(message,))
        session = self._input.route.session_id
        if session is not None:  # a session's turn: the session passes it on or keeps it
            if not await self._transport.notify_session(session, steer):
                self._transport.warn(
                    f"task {task.task_id} is {task.status}; its session {session!r} has "
                    "ended, so nobody was told"
                )
        elif not await self._transport.notify(self._input.parent_id, steer):
            self._transport.warn(
                f"task {task.task_id} is {task.status}; its Interaction "
                f"{self._input.parent_id!r} has ended, so it was not told"
            )

    def _settle(self, report: AttemptReport) -> None:
        self.machine.on_report(report)
        self._yielded = report.yielded and self.machine.phase == "ready"
        self._transport.changed()

    def _changed(self) -> None:
        """The task changed outside the run's loop: report what is new, wake the loop."""
        self._transport.publish(self._news.step(self.machine.snapshot()))
        self._transport.changed()

    def _stop(self) -> None:
        if self._attempt is not None and not self._stop_sent:
            self._stop_sent = True
            self._attempt.cancel()

    def _show(self) -> None:
        """Show the live status; report what is new."""
        task = self.machine.snapshot()
        self._transport.publish(self._news.step(task))
        detail = f"**{task.status}** · {task.tool} · attempt {task.attempt}"
        if task.progress.events:
            detail += f" · {task.progress.events} progress event(s)"
            if task.progress.last_message:
                detail += f": {task.progress.last_message}"
        if task.question is not None:
            detail += f" · waiting for input `{task.question.wait_id}`: {task.question.prompt_text}"
        if task.error:
            detail += f" · {task.error}"
        self._transport.show(detail)

    # --- the inputs ------------------------------------------------------------------

    def report(self, input: TaskReport) -> None:
        """News from the running attempt: progress, or that `resume` took an answer."""
        self.machine.on_progress(input.attempt, input.progress, input.resumed)
        self._changed()

    def validate_cancel(self) -> None:
        if self.machine.done:
            raise errors.TaskEnded(
                f"Background task {self._input.launch.task_id!r} has already ended "
                f"({self.machine.phase})."
            )

    def cancel(self, reason: str) -> TaskSnapshot:
        """Cancel the task (the running attempt is asked to stop); its snapshot now."""
        if self.machine.request_cancel(reason or "cancelled on request"):
            self._stop()
        self._changed()
        return self.machine.snapshot()

    def reject(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None:
        self.machine.record_rejected(signal_id, signal, error)
        self._transport.changed()

    def tool_input_signal(self, input: ToolInputAnswer) -> None:
        """An answer sent as a signal: taken, or recorded as rejected."""
        try:
            self.machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            self.machine.record_rejected(input.answer_id, "tool_input", error)
        self._changed()

    def validate_answer(self, input: ToolInputAnswer) -> None:
        self.machine.check_answer(input.wait_id, input.answer_id, input.response)

    async def answer_update(self, input: ToolInputAnswer) -> bool:
        """Answer the open question; returns once the tool took the answer (True), or
        False for an exact duplicate of one it took.

        Raises:
            InvalidToolInput: the tool refused it (the question stays open).
            TaskEnded: the task ended before it could take the answer.
        """
        machine = self.machine
        fresh = machine.answer(input.wait_id, input.answer_id, input.response)
        self._changed()
        await self._transport.wait_until(lambda: machine.verdict(input.answer_id) is not None)
        verdict = machine.verdict(input.answer_id)
        if verdict == "refused":
            raise errors.InvalidToolInput(
                f"{machine.snapshot().tool} refused the answer (nothing was applied): "
                f"{machine.refusal(input.answer_id)}"
            )
        if verdict == "unapplied":
            raise errors.TaskEnded("The task ended before it could take the answer.")
        return fresh

    def snapshot(self) -> TaskSnapshot:
        return self.machine.snapshot()

    def process_snapshot(self) -> ProcessSnapshot:
        return self.machine.process_snapshot()


__all__ = ["TaskDriver"]
