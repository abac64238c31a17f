"""Background tasks for `LocalRunner`: the same task machine and attempt code as the worker,
with asyncio tasks instead of `scope.BackgroundTask` workflows and activities.

Differences a test may notice: progress lives in memory (`MemoryMaterializer`), an
attempt that raises is lost at once (no Temporal retry), and nothing survives the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from scope_temporal.background.attempts import run_attempt
from scope_temporal.background.materializer import MemoryMaterializer
from scope_temporal.background.runtime import BackgroundRuntime, LiveRuns
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.errors import InvalidToolInput, ScopeError, TaskEnded
from scope_temporal.interaction.background_task import BackgroundTaskMachine
from scope_temporal.interaction.snapshot import PendingToolInput, ProcessSnapshot, TaskSnapshot
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.payloads import TaskInput, ToolInputAnswer
from scope_temporal.tools.outcome import ProgressSummary
from scope_temporal.tools.registry import ToolRegistry

Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


class _Task:
    def __init__(self, tasks: LocalTasks, machine: BackgroundTaskMachine) -> None:
        self.tasks = tasks
        self.machine = machine
        self.changed = asyncio.Event()
        self.attempt: asyncio.Task[None] | None = None

    def pump(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()
        plan = self.machine.next_attempt()
        if plan is not None:
            self.attempt = self.tasks.spawn(self._run(plan))

    async def _run(self, plan: AttemptPlan) -> None:
        tool = self.tasks.tools.get(plan.tool)
        assert isinstance(tool, BackgroundTool)  # it launched the task

        async def tell(progress: ProgressSummary | None, resumed: str | None) -> None:
            self.machine.on_progress(plan.attempt, progress, resumed)
            self.pump()

        try:
            report = await run_attempt(
                tool,
                plan,
                attempt=plan.attempt,
                previous=None,
                runtime=self.tasks.runtime,
                beat=lambda _: None,
                tell=tell,
                heartbeat_every=3600.0,
                stop_on_cancel=lambda: True,
            )
        except Exception as error:  # no outcome, and no Temporal to retry it
            report = AttemptReport(attempt=plan.attempt, lost=f"{type(error).__name__}: {error}")
        self.attempt = None
        self.machine.on_report(report)
        self.pump()

    def stop(self, reason: str) -> None:
        if self.machine.request_cancel(reason) and self.attempt is not None:
            self.attempt.cancel()
        self.pump()


class LocalTasks:
    """The background tasks of one local run (also their `TaskAccess`).

    Args:
        tools: the runner's tools.
        spawn: runs a coroutine as a task of the run (so `idle()` waits for it).
    """

    def __init__(self, tools: ToolRegistry, spawn: Spawn) -> None:
        self.tools = tools
        self.spawn = spawn
        self.runtime = BackgroundRuntime(
            materializer=MemoryMaterializer(), live_runs=LiveRuns(), adopt_queue=None, tasks=self
        )
        self._tasks: dict[str, _Task] = {}

    def start(self, input: TaskInput) -> None:
        """Start a task as its call launched it."""
        task = _Task(
            self,
            BackgroundTaskMachine.start(
                input.launch, ref=input.ref, parent_id=input.parent_id, definition=input.definition
            ),
        )
        self._tasks[input.launch.task_id] = task
        task.pump()

    def answer_signal(self, task_id: str, input: ToolInputAnswer) -> None:
        """An answer forwarded as a signal: taken, or recorded as rejected."""
        task = self._tasks[task_id]
        try:
            task.machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            task.machine.record_rejected(input.answer_id, "tool_input", error)
        task.pump()

    def processes(self) -> list[ProcessSnapshot]:
        return [t.machine.process_snapshot() for t in self._tasks.values()]

    def holds(self, task_id: str) -> bool:
        return task_id in self._tasks

    async def snapshot(self, task_id: str) -> TaskSnapshot | None:
        task = self._tasks.get(task_id)
        return None if task is None else task.machine.snapshot()

    async def cancel(self, task_id: str, reason: str) -> TaskSnapshot | None:
        task = self._tasks.get(task_id)
        if task is None:
            return None
        task.stop(reason)
        return task.machine.snapshot()

    async def answer(self, pending: PendingToolInput, answer_id: str, response: Any) -> bool:
        """Answer a task's question; returns once the tool took it (see the workflow's
        `scope.tool_input` update for the same contract)."""
        task = self._tasks[pending.process_id]
        fresh = task.machine.answer(pending.wait_id, answer_id, response)
        task.pump()
        while (verdict := task.machine.verdict(answer_id)) is None:
            await task.changed.wait()
        if verdict == "refused":
            raise InvalidToolInput(
                f"the tool refused the answer (nothing was applied): "
                f"{task.machine.refusal(answer_id)}"
            )
        if verdict == "unapplied":
            raise TaskEnded("The task ended before it could take the answer.")
        return fresh

    def cancel_all(self) -> None:
        for task in self._tasks.values():
            if not task.machine.done:
                task.stop("the run was cancelled")


__all__ = ["LocalTasks"]
