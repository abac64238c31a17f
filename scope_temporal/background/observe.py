"""Watch one run: store its progress updates once each, and give its outcome.

Used by the foreground attempt and by every background attempt. Progress goes through the
worker's `OutputMaterializer` (`reserve`, then `append`): a replayed update (same id, same
bytes) is stored once; an update reusing an id with other bytes, or breaking a limit, stops
the run and fails the task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from scope_temporal import errors
from scope_temporal.background.materializer import OutputMaterializer
from scope_temporal.background.progress import ProgressUpdate, StoredEvent, summary_after
from scope_temporal.background.protocols import RunHandle, RunOutcome
from scope_temporal.tools.outcome import ProgressSummary

DRAIN_SECONDS = 10.0
"""How long the updates of an ended run may take to be stored before they are dropped."""
STOP_GRACE_SECONDS = 30.0
"""How long a stopped run may take to confirm before it is given up on."""


class RunFailure(Exception):
    """The framework failed the run (a progress conflict or an invalid update)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class RunObserver:
    """Observes `handle` from now on (construct it inside a running event loop).

    Args:
        task_id: the task the progress belongs to.
        handle: the run.
        materializer: where progress is stored.
        summary: the progress known so far (the count continues from it).
        on_progress: called after each newly stored update.
    """

    def __init__(
        self,
        task_id: str,
        handle: RunHandle,
        materializer: OutputMaterializer,
        summary: ProgressSummary,
        on_progress: Callable[[ProgressSummary], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.handle = handle
        self.summary = summary
        self.failure: RunFailure | None = None
        self.raised: BaseException | None = None
        """What the run's own `wait()` raised, once it did (not the output store)."""
        self._materializer = materializer
        self._on_progress = on_progress
        self._wait = asyncio.ensure_future(handle.wait())
        self._pump = asyncio.ensure_future(self._store_updates())

    async def _store_updates(self) -> None:
        async for item in self.handle.updates():
            update = _as_update(item)
            if update is None:
                self.failure = RunFailure(
                    errors.TASK_PROGRESS_INVALID,
                    f"the run published an invalid progress update: {item!r:.200}",
                )
            elif await self._materializer.reserve(self.task_id, update) == "conflict":
                self.failure = RunFailure(
                    errors.TASK_PROGRESS_CONFLICT,
                    f"progress event {update.event_id!r} was published twice with different "
                    "content; the task was stopped",
                )
            else:
                seq = await self._materializer.append(self.task_id, update)
                self.summary = summary_after(self.summary, StoredEvent(seq=seq, update=update))
                if self._on_progress is not None:
                    self._on_progress(self.summary)
                continue
            await self.handle.stop()
            return

    async def outcome(self, timeout: float | None = None) -> RunOutcome | None:
        """The run's outcome once its updates are stored, or None when `timeout` seconds
        pass first (the run goes on: call again, or `detach`).

        Raises:
            RunFailure: the framework stopped the run (progress conflict or invalid update).
            Exception: what `wait()` or the output store raised (the run's state is unknown).
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            pending = {self._wait} if self._pump.done() else {self._wait, self._pump}
            remaining = None if deadline is None else max(deadline - loop.time(), 0.0)
            done, _ = await asyncio.wait(
                pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if self._pump.done() and self._pump.exception() is not None:
                raise self._pump.exception()  # type: ignore[misc]
            if self.failure is not None:
                await asyncio.wait({self._wait}, timeout=DRAIN_SECONDS)
                self.detach()
                raise self.failure
            if self._wait.done():
                await asyncio.wait({self._pump}, timeout=DRAIN_SECONDS)
                self._pump.cancel()
                if self.failure is not None:
                    raise self.failure
                if not self._wait.cancelled():
                    self.raised = self._wait.exception()
                return self._wait.result()
            if not done:
                return None

    def detach(self) -> None:
        """Stop observing; the run itself goes on."""
        self._pump.cancel()
        self._wait.cancel()


def _as_update(item: Any) -> ProgressUpdate | None:
    if isinstance(item, ProgressUpdate):
        return item
    try:
        return ProgressUpdate.model_validate(item)
    except ValidationError:
        return None


__all__ = ["STOP_GRACE_SECONDS", "RunFailure", "RunObserver"]
