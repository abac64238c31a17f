"""Background tools that run long enough for their task to continue as new.

Each counts its side effects per task id in `DONE` (an event published once is one
effect: a run that ran twice would count some twice) and records its lifecycle calls in
`background_tools.EVENTS`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from scope_temporal import RunHandle, RunOutcome, RunProgress, TaskRun, background_tool
from scope_temporal.background import ProgressUpdate
from tests.live.background_tools import EVENTS

DONE: defaultdict[str, int] = defaultdict(int)


class TickArgs(BaseModel):
    events: int = 10_000
    per_tick: int = 100
    tick: float = 0.1
    """Seconds between ticks (each publishes `per_tick` events)."""
    ask_at: int | None = None
    """Ask for a number once this many events are published (then go on)."""


def _ticks(task_id: str, arguments: TickArgs, first: int, bonus: int = 0) -> TaskRun:
    """Publish events `first`..`arguments.events` (checkpoint: the last one published)."""

    async def work(progress: RunProgress) -> Any:
        n = first - 1
        progress.checkpoint(n)
        try:
            while n < arguments.events:
                await asyncio.sleep(arguments.tick)
                for _ in range(min(arguments.per_tick, arguments.events - n)):
                    n += 1
                    progress.publish(f"e-{n}", metadata={"message": f"event {n}"})
                    DONE[task_id] += 1
                    progress.checkpoint(n)
                    if n == arguments.ask_at and not bonus:
                        schema = {"type": "object", "properties": {"bonus": {"type": "integer"}}}
                        return RunOutcome.waiting_input("a bonus?", schema, checkpoint=n)
        except asyncio.CancelledError:
            EVENTS[task_id].append("stopped")
            raise
        return {"published": n, "bonus": bonus}

    return TaskRun(work)


@background_tool(foreground_timeout=0.3, heartbeat_timeout=3)
class Ticker:
    """Publish many progress events over a while (hands its live run over; resumable)."""

    async def start(self, task_id: str, arguments: TickArgs, attempt: int) -> RunHandle:
        EVENTS[task_id].append(f"start {attempt}")
        return _ticks(task_id, arguments, 1)

    async def adopt(
        self, task_id: str, arguments: TickArgs, attempt: int, run: RunHandle
    ) -> RunHandle:
        EVENTS[task_id].append(f"adopt {attempt}")
        return run

    async def resume(
        self,
        task_id: str,
        arguments: TickArgs,
        attempt: int,
        request_id: str,
        data: Any,
        checkpoint: Any,
    ) -> RunHandle:
        EVENTS[task_id].append(f"resume {attempt} at {checkpoint}")
        return _ticks(task_id, arguments, checkpoint + 1, bonus=data["bonus"])


@background_tool(foreground_timeout=0.3, heartbeat_timeout=3)
class PlainTicker:
    """Publish many progress events over a while (a plain run: it cannot change owner)."""

    async def start(self, task_id: str, arguments: TickArgs, attempt: int) -> RunHandle:
        EVENTS[task_id].append(f"start {attempt}")
        return _ticks(task_id, arguments, 1)


class _Remote:
    """A job on a remote service (here: this process), found again by its task id."""

    def __init__(self, task_id: str, arguments: TickArgs) -> None:
        self.updates: list[ProgressUpdate] = []
        self.count = 0
        self._task = asyncio.get_running_loop().create_task(self._run(task_id, arguments))

    async def _run(self, task_id: str, arguments: TickArgs) -> RunOutcome:
        try:
            while self.count < arguments.events:
                await asyncio.sleep(arguments.tick)
                for _ in range(min(arguments.per_tick, arguments.events - self.count)):
                    self.count += 1
                    DONE[task_id] += 1
                    self.updates.append(
                        ProgressUpdate(event_id=f"e-{self.count}", metadata={"message": "tick"})
                    )
        except asyncio.CancelledError:
            EVENTS[task_id].append("stopped")
            return RunOutcome.canceled("stopped on request")
        return RunOutcome.completed({"published": self.count})

    def handle(self) -> RunHandle:
        return _RemoteHandle(self)


class _RemoteHandle(RunHandle):
    def __init__(self, job: _Remote) -> None:
        self.job = job

    async def wait(self) -> RunOutcome:
        return await asyncio.shield(self.job._task)

    async def stop(self) -> None:
        self.job._task.cancel()

    def checkpoint(self) -> Any:
        return self.job.count

    async def updates(self) -> AsyncIterator[ProgressUpdate]:
        sent = 0
        while True:
            while sent < len(self.job.updates):
                yield self.job.updates[sent]
                sent += 1
            if self.job._task.done():
                return
            await asyncio.sleep(0.05)


REMOTE: dict[str, _Remote] = {}


@background_tool(foreground_timeout=0.3, heartbeat_timeout=3, max_attempts=3)
class RemoteTicker:
    """A job on a remote service (recoverable: found again from the task id)."""

    async def start(self, task_id: str, arguments: TickArgs, attempt: int) -> RunHandle:
        EVENTS[task_id].append(f"start {attempt}")
        if task_id not in REMOTE:  # idempotent per task id
            REMOTE[task_id] = _Remote(task_id, arguments)
        return REMOTE[task_id].handle()

    async def recover(
        self, task_id: str, arguments: TickArgs, attempt: int, checkpoint: Any
    ) -> RunHandle:
        EVENTS[task_id].append(f"recover {attempt} at {checkpoint}")
        return REMOTE[task_id].handle()


__all__ = ["DONE", "REMOTE", "PlainTicker", "RemoteTicker", "TickArgs", "Ticker"]
