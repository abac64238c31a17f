"""`TaskRun`: a ready-made `RunHandle` for an operation that runs in this worker process.

Write the operation as `async def work(progress: RunProgress) -> data`; `TaskRun(work)` runs
it as an asyncio task. It returns data (`completed`), raises `ToolFailure` (`failed`) or
returns a `RunOutcome` itself (e.g. `RunOutcome.waiting_input(...)`); `stop()` cancels
it (`canceled`). `progress.publish(...)` records updates (replayed from the first on
every `updates()` call), `progress.checkpoint(value)` what `recover` needs.

Such a run lives and dies with its worker process: for a recoverable tool, `recover`
builds a new `TaskRun` that continues from the checkpoint.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from scope_temporal.background.progress import ProgressUpdate
from scope_temporal.background.protocols import RunHandle, RunOutcome
from scope_temporal.tools.failures import ToolFailure


class RunProgress:
    """What a `TaskRun`'s work reports through."""

    def __init__(self, run: TaskRun) -> None:
        self._run = run

    def publish(
        self,
        event_id: str,
        kind: str = "progress",
        data: Any = None,
        metadata: Mapping[str, str] | None = None,
    ) -> ProgressUpdate:
        """Record one progress update (see `ProgressUpdate` for the limits).

        Raises:
            pydantic.ValidationError: the update breaks a limit (nothing is recorded).
        """
        update = ProgressUpdate(
            event_id=event_id, kind=kind, data=data, metadata=dict(metadata or {})
        )
        self._run._publish(update)
        return update

    def checkpoint(self, value: Any) -> None:
        """Set the run's latest checkpoint (a JSON value)."""
        self._run._checkpoint = value


class TaskRun(RunHandle):
    """Runs `work(progress)` as an asyncio task of the current event loop.

    Args:
        work: the operation.
        checkpoint: the initial checkpoint.
        replay: updates published before this run took over (e.g. rebuilt by `recover`
            from the checkpoint); `updates()` yields them first.
    """

    def __init__(
        self,
        work: Callable[[RunProgress], Awaitable[Any]],
        *,
        checkpoint: Any = None,
        replay: Sequence[ProgressUpdate] = (),
    ) -> None:
        self._checkpoint = checkpoint
        self._events: list[ProgressUpdate] = list(replay)
        self._changed = asyncio.Event()
        self._stop_requested = False
        loop = asyncio.get_running_loop()
        self._work = loop.create_task(_call(work, RunProgress(self)))
        self._task = loop.create_task(self._run())

    async def _run(self) -> RunOutcome:
        try:
            value = await self._work
        except ToolFailure as failure:
            outcome = RunOutcome.failed(failure.message)
        except asyncio.CancelledError:
            if not self._stop_requested:
                raise
            outcome = RunOutcome.canceled("stopped on request")
        except Exception as error:  # the operation crashed: it is over, and failed
            outcome = RunOutcome.failed(f"{type(error).__name__}: {error}")
        else:
            outcome = value if isinstance(value, RunOutcome) else RunOutcome.completed(value)
        self._wake()
        return outcome

    def _publish(self, update: ProgressUpdate) -> None:
        self._events.append(update)
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait(self) -> RunOutcome:
        return await asyncio.shield(self._task)

    async def stop(self) -> None:
        if not self._work.done():
            self._stop_requested = True
            self._work.cancel()

    def checkpoint(self) -> Any:
        return self._checkpoint

    async def updates(self) -> AsyncIterator[ProgressUpdate]:
        sent = 0
        while True:
            changed = self._changed
            while sent < len(self._events):
                yield self._events[sent]
                sent += 1
            if self._task.done():
                return
            await changed.wait()


async def _call(work: Callable[[RunProgress], Awaitable[Any]], progress: RunProgress) -> Any:
    return await work(progress)


__all__ = ["RunProgress", "TaskRun"]
