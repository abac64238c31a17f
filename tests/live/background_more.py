"""More background tools the live tests serve (see `background_tools.py` for the basics).

Each records what it did per task id in `background_tools.EVENTS`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from scope_temporal import RunHandle, RunProgress, TaskRun, background_tool
from tests.live.background_tools import EVENTS


class FlakyArgs(BaseModel):
    limit: float | None = None
    """The operation's timeout (seconds), from the arguments."""
    seconds: float = 0.0


@background_tool(foreground_timeout=0.3, heartbeat_timeout=2, max_attempts=5)
class Flaky:
    """Raise from start in the background; sleep otherwise (recoverable)."""

    def operation_timeout(self, arguments: FlakyArgs) -> float | None:
        return arguments.limit

    async def start(self, task_id: str, arguments: FlakyArgs, attempt: int) -> RunHandle:
        EVENTS[task_id].append(f"start {attempt}")
        if attempt > 0 and not arguments.seconds:
            raise RuntimeError("the build farm refused the job")
        return _sleep(task_id, arguments.seconds)

    async def recover(
        self, task_id: str, arguments: FlakyArgs, attempt: int, checkpoint: Any
    ) -> RunHandle:
        EVENTS[task_id].append(f"recover {attempt}")
        return _sleep(task_id, arguments.seconds)


def _sleep(task_id: str, seconds: float) -> TaskRun:
    async def work(progress: RunProgress) -> Any:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            EVENTS[task_id].append("stopped")
            raise
        return {"slept": seconds}

    return TaskRun(work)


class ChattyArgs(BaseModel):
    events: int = 10_000


@background_tool(foreground_timeout=0.2, heartbeat_timeout=5)
class Chatty:
    """Publish many progress events quickly (hands its live run over)."""

    async def start(self, task_id: str, arguments: ChattyArgs, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            for n in range(1, arguments.events + 1):
                progress.publish(f"e-{n}", metadata={"message": f"event {n}"})
                if n % 200 == 0:
                    await asyncio.sleep(0)
            await asyncio.sleep(0.5)
            return {"published": arguments.events}

        return TaskRun(work)

    async def adopt(
        self, task_id: str, arguments: ChattyArgs, attempt: int, run: RunHandle
    ) -> RunHandle:
        return run


__all__ = ["Chatty", "ChattyArgs", "Flaky", "FlakyArgs"]
