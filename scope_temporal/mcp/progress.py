"""An MCP server's progress notifications during a call, as `tool_progress` events.

Activity side, free of the `mcp` package. Each event sent is one signal to the root of
the tree (one event in its history), so a chatty server must not decide how much
history a call costs: the first notification goes at once, then at most one event per
`MIN_INTERVAL` seconds carrying the latest notification (those in between are
coalesced: progress only grows, so the latest says everything), at most `MAX_EVENTS`
per attempt (later ones are dropped), each message cut to `MAX_MESSAGE_CHARS`. A
notification that is not a finite number is ignored. Progress is for display only:
what cannot be delivered is dropped, and the call's settled result is its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable

from scope_temporal.interaction.events import ToolProgressEvent

MIN_INTERVAL = 1.0
"""Seconds between two progress events of one call."""
MAX_EVENTS = 50
"""Progress events of one attempt at most (so at most this many signals in history)."""
MAX_MESSAGE_CHARS = 200
CLOSE_TIMEOUT = 5.0
"""Seconds the end of a call waits for its last progress event to be delivered."""

SendProgress = Callable[[ToolProgressEvent], Awaitable[None]]
"""Delivers one event to the tree's stream."""
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
"""The MCP SDK's `progress_callback`: one notification's progress, total and message."""

_log = logging.getLogger("scope_temporal.events")


class ProgressReports:
    """Turns the progress notifications of one call into bounded `tool_progress` events.

    Args:
        send: delivers one event.
        process_id: the call's process.
        ref: the call's ToolCallRef.
    """

    def __init__(self, send: SendProgress, process_id: str, ref: str) -> None:
        self._send = send
        self._process_id = process_id
        self._ref = ref
        self._latest: ToolProgressEvent | None = None
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0
        self.received = 0

    async def notified(self, progress: float, total: float | None, message: str | None) -> None:
        """One `notifications/progress` of the call (never blocks on delivery); the MCP
        SDK's `progress_callback`."""
        self.received += 1
        if not _finite(progress) or (total is not None and not _finite(total)):
            return
        if self.sent >= MAX_EVENTS:
            return
        if message is not None and len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 3] + "..."
        self._latest = ToolProgressEvent(
            process_id=self._process_id,
            ref=self._ref,
            progress=float(progress),
            total=None if total is None else float(total),
            message=message,
            seq=self.sent + 1,
        )
        self._ready.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.sent < MAX_EVENTS:
            await self._ready.wait()
            self._ready.clear()
            await self._deliver()
            await asyncio.sleep(MIN_INTERVAL)

    async def _deliver(self) -> None:
        event, self._latest = self._latest, None
        if event is None:
            return
        self.sent += 1
        try:
            await self._send(event.model_copy(update={"seq": self.sent}))
        except Exception as error:  # display only: never fails the call
            _log.warning("a tool_progress event was dropped: %s", error)

    async def close(self) -> None:
        """The call ended: deliver the latest notification not yet sent, then stop."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self._latest is not None and self.sent < MAX_EVENTS:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._deliver(), CLOSE_TIMEOUT)

    def cancel(self) -> None:
        """The call is being cancelled: stop without delivering more."""
        if self._task is not None:
            self._task.cancel()
            self._task = None


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


__all__ = ["MAX_EVENTS", "MIN_INTERVAL", "ProgressCallback", "ProgressReports", "SendProgress"]
