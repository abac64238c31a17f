"""The handle of one local Interaction tree (`LocalRunner.start`, a local session's turn):
the same verbs as `InteractionHandle`, on the in-process engine."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from scope_temporal import errors
from scope_temporal.chat import Message
from scope_temporal.driver.interaction import InteractionDriver
from scope_temporal.errors import InteractionCanceled, InteractionFailed
from scope_temporal.interaction.effects import ModelResend, ModelSettlement, ToolSettlement
from scope_temporal.interaction.events import Event
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    TaskSnapshot,
    TreeSnapshot,
    UnknownEffect,
)
from scope_temporal.models.streaming import LiveText
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import ResolveInput, SteerInput, TaskSubmitInput, ToolInputAnswer
from scope_temporal.settle import resend_model_call
from scope_temporal.testing.engine import LocalEngine, LocalWorker

_CANCEL_GRACE_SECONDS = 5.0


class LocalRun:
    """Handle of one local Interaction tree; the same verbs as `InteractionHandle`."""

    def __init__(self, runner: LocalWorker, run_id: str, engine: LocalEngine | None = None) -> None:
        self.runner = runner
        self.id = run_id
        self.engine = engine or LocalEngine(runner)
        self.engine.logs.of(run_id)  # its events from the start
        self.tasks = self.engine.tasks
        self._run: asyncio.Task[Output | Failure] | None = None
        self._on_end: Callable[[], None] | None = None

    @classmethod
    def attached(
        cls,
        runner: LocalWorker,
        engine: LocalEngine,
        run_id: str,
        run: asyncio.Task[Output | Failure],
        *,
        on_end: Callable[[], None] | None = None,
    ) -> LocalRun:
        """The handle of an Interaction already running on `engine` (a session's turn);
        `on_end()` once `result()` saw it end."""
        handle = cls(runner, run_id, engine)
        handle._run = run
        handle._on_end = on_end
        return handle

    def _started(self, root: InteractionDriver) -> None:
        self._run = self.engine.spawn(self.engine.run_interaction(root))
        self._run.add_done_callback(lambda _: self.engine.logs.of(self.id).close())

    @property
    def _root(self) -> InteractionDriver:
        root = self.engine.processes[self.id]
        assert isinstance(root, InteractionDriver)
        return root

    # --- host verbs ------------------------------------------------------------------

    async def result(self, timeout: float | None = None) -> Output:
        """The Output; raises InteractionFailed (with `.code`) if the run failed."""
        assert self._run is not None
        done, _ = await asyncio.wait([self._run], timeout=timeout)
        if not done:
            raise TimeoutError(f"Interaction {self.id!r} did not end in {timeout}s.")
        if self._on_end is not None:
            self._on_end()
        machine = self._root.machine
        if machine.output is not None:
            return machine.output
        failure = machine.failure or Failure.of(errors.STATE_INVALID, "ended without output")
        error = InteractionCanceled if failure.code == errors.CANCELED else InteractionFailed
        raise error(failure.message, code=failure.code)

    async def idle(self, timeout: float = 10.0) -> TreeSnapshot:
        """Wait until nothing is in flight (done, or waiting on the host); return a snapshot."""
        await asyncio.wait_for(self.engine.idle.wait(), timeout)
        return self.snapshot()

    def events(self, after: int | None = None) -> AsyncIterator[Event]:
        """The run's events as they happen, from after offset `after` (from the first
        when None), up to the root's `completed`, `failed` or `canceled` (as
        `InteractionHandle.events`; here each streamed piece of text is its own event).

        Raises:
            EventOffsetError: `after` is beyond the last event.
        """
        return self.engine.logs.of(self.id).read(after)

    async def live_text(self, process_id: str | None = None) -> LiveText | None:
        """What the model call in flight has streamed so far (as `InteractionHandle`)."""
        return self.engine.live.get(process_id or self.id)

    def snapshot(self) -> TreeSnapshot:
        """Every process the run started (ended ones included) and every task."""
        mine = self.id + "/"
        snaps: list[ProcessSnapshot] = [
            p.snapshot()
            for process_id, p in self.engine.processes.items()
            if process_id == self.id or process_id.startswith(mine)
        ]
        root = next(s for s in snaps if s.process_id == self.id)
        return TreeSnapshot(root=root, processes=(*snaps, *self.tasks.processes()))

    async def steer(self, signal_id: str, *messages: Message) -> bool:
        """Queue user messages for the next model call; False if an exact duplicate."""
        input = SteerInput(signal_id=signal_id, messages=tuple(messages))
        root = self._root
        root.validate_steer(input)
        return root.steer_update(input)

    async def answer(self, pending: PendingToolInput, answer_id: str, response: Any) -> bool:
        """Answer a tool input wait (validated against its schema), or a background
        task's question (returns once the tool took the answer)."""
        if self.tasks.holds(pending.process_id):
            return await self.tasks.answer(pending, answer_id, response)
        input = ToolInputAnswer(
            wait_id=pending.wait_id,
            answer_id=answer_id,
            response=response,
            process_id=pending.process_id,
        )
        process = self.engine.processes.get(pending.process_id)
        if isinstance(process, InteractionDriver):
            raise process.answer_elsewhere(input)
        if process is None:
            raise errors.NoSuchWait(f"No tool call process {pending.process_id!r}.")
        process.validate_answer(input)
        return await process.answer_update(input)

    async def resolve(
        self, unknown: UnknownEffect, settlement: ModelSettlement | ModelResend | ToolSettlement
    ) -> None:
        """Settle an unknown effect with the host's investigated settlement."""
        input = ResolveInput(signal_id=f"resolve:{unknown.effect_id}", settlement=settlement)
        process = self.engine.processes.get(unknown.process_id)
        if process is None:
            raise errors.SettlementMismatch(f"No process {unknown.process_id!r} to settle.")
        process.validate_resolve(input)
        await process.resolve_update(input)

    async def retry_model_call(self, unknown: UnknownEffect) -> None:
        """Send an unknown model call's request again as a new Effect (see
        `InteractionHandle.retry_model_call`); never for a tool call."""
        await self.resolve(unknown, resend_model_call(unknown.request))

    async def cancel_task(self, task_id: str, reason: str = "") -> TaskSnapshot:
        """Stop a background task of this run (see `InteractionHandle.cancel_task`).

        Raises:
            TaskNotFound: no background task has this id.
            TaskEnded: it had already ended.
        """
        found = await self.tasks.cancel(task_id, reason or "host")
        if found is None:
            raise errors.TaskNotFound(f"No background task {task_id!r}.")
        return found

    async def submit_task(
        self, tool: str, arguments: dict[str, Any], *, key: str | None = None
    ) -> str:
        """Start a background tool as a task of this run (as `InteractionHandle.submit_task`;
        without a key, a fresh one)."""
        input = TaskSubmitInput(key=key or uuid.uuid4().hex, tool=tool, arguments=arguments)
        return await self._root.submissions.submit(input)

    async def pause(self) -> None:
        """Start nothing new (in-flight calls settle); children are paused too."""
        self._root.pause()

    async def resume(self) -> None:
        self._root.resume()

    async def cancel(self) -> None:
        """Cancel the Interaction; its children and tasks are cancelled with it."""
        assert self._run is not None
        self._run.cancel()
        await asyncio.wait([self._run])
        self.tasks.cancel_all()
        rest = self.engine.running()
        if rest:
            await asyncio.wait(rest, timeout=_CANCEL_GRACE_SECONDS)


__all__ = ["LocalRun"]
