"""Background tasks for `LocalRunner`: the same driver, machine and attempt code as the
worker, with asyncio tasks instead of `scope.BackgroundTask` workflows and activities.

Differences a test may notice: progress lives in memory (`MemoryMaterializer`), an
attempt that raises is lost at once (no Temporal retry), and nothing survives the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from scope_temporal.activities.background import attempt_task
from scope_temporal.background.materializer import MemoryMaterializer
from scope_temporal.background.runtime import BackgroundRuntime, LiveRuns
from scope_temporal.driver.background_task import TaskDriver
from scope_temporal.driver.transport import TaskTransport
from scope_temporal.interaction.snapshot import PendingToolInput, ProcessSnapshot, TaskSnapshot
from scope_temporal.interaction.task_values import AttemptReport
from scope_temporal.payloads import TaskAttemptInput, TaskInput, TaskReport, ToolInputAnswer
from scope_temporal.tools.outcome import ProgressSummary
from scope_temporal.tools.registry import ToolRegistry

Spawn = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]


class LocalAttempt:
    """One background attempt in flight, as an asyncio task of the run."""

    def __init__(self, tasks: LocalTasks, input: TaskAttemptInput) -> None:
        self._tasks = tasks
        self._plan = input.plan
        self._run = tasks.spawn(self._attempt())

    async def _attempt(self) -> AttemptReport:
        plan = self._plan

        async def tell(progress: ProgressSummary | None, resumed: str | None) -> None:
            self._tasks.deliver_report(
                plan.task_id, TaskReport(attempt=plan.attempt, progress=progress, resumed=resumed)
            )

        try:
            return await attempt_task(
                plan,
                attempt=plan.attempt,
                tools=self._tasks.tools,
                runtime=self._tasks.runtime,
                previous=None,
                beat=lambda _: None,
                tell=tell,
                heartbeat_every=3600.0,
                stop_on_cancel=lambda: True,
            )
        except Exception as error:  # no outcome, and no Temporal to retry it
            return AttemptReport(attempt=plan.attempt, lost=f"{type(error).__name__}: {error}")

    def cancel(self) -> None:
        self._run.cancel()

    async def report(self) -> AttemptReport:
        try:
            report: AttemptReport = await asyncio.shield(self._run)
        except asyncio.CancelledError:
            if not self._run.done():
                raise  # the task itself is being cancelled
            return AttemptReport(attempt=self._plan.attempt, lost="cancelled")
        return report


class LocalTasks:
    """The background tasks of one local run (also their `TaskAccess`).

    Args:
        tools: the runner's tools.
        spawn: runs a coroutine as a task of the run (so `idle()` waits for it).
        transport: the run's transport (the tasks' drivers run on it).
    """

    def __init__(
        self,
        tools: ToolRegistry,
        spawn: Spawn,
        transport: TaskTransport,
    ) -> None:
        self.tools = tools
        self.spawn = spawn
        self.runtime = BackgroundRuntime(
            materializer=MemoryMaterializer(),
            live_runs=LiveRuns(),
            adopt_queue=None,
            tasks=self,
            tools=tools,
        )
        self._transport = transport
        self._tasks: dict[str, TaskDriver] = {}

    def start(self, input: TaskInput) -> None:
        """Start a task as its call launched it."""
        driver = TaskDriver(input, self._transport)
        self._tasks[input.launch.task_id] = driver
        self.spawn(driver.run())

    def deliver_report(self, task_id: str, report: TaskReport) -> None:
        self._tasks[task_id].report(report)

    def answer_signal(self, task_id: str, input: ToolInputAnswer) -> None:
        """An answer forwarded as a signal: taken, or recorded as rejected."""
        self._tasks[task_id].tool_input_signal(input)

    def processes(self) -> list[ProcessSnapshot]:
        return [t.process_snapshot() for t in self._tasks.values()]

    def holds(self, task_id: str) -> bool:
        return task_id in self._tasks

    async def snapshot(self, task_id: str) -> TaskSnapshot | None:
        task = self._tasks.get(task_id)
        return None if task is None else task.snapshot()

    async def cancel(self, task_id: str, reason: str) -> TaskSnapshot | None:
        task = self._tasks.get(task_id)
        if task is None:
            return None
        task.validate_cancel()
        return task.cancel(reason)

    async def answer(self, pending: PendingToolInput, answer_id: str, response: Any) -> bool:
        """Answer a task's question; returns once the tool took it (see the workflow's
        `scope.tool_input` update for the same contract)."""
        task = self._tasks[pending.process_id]
        input = ToolInputAnswer(wait_id=pending.wait_id, answer_id=answer_id, response=response)
        task.validate_answer(input)
        return await task.answer_update(input)

    def cancel_all(self) -> None:
        for task in self._tasks.values():
            if not task.machine.done:
                task.cancel("the run was cancelled")


__all__ = ["LocalAttempt", "LocalTasks"]
