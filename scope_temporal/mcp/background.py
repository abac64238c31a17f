"""An MCP tool whose calls may run in the background (`McpServer(background=...)`).

Activity side. Such a tool is a handoff background tool (`BackgroundTool`) built per call
from its recorded record, so its calls follow the contract of a `@background_tool`
(docs/background-tools.md): the foreground attempt (attempt 0, inside the call's
`scope.tool`) sends `tools/call` once; a call still running at the foreground timeout (or
at once, with `run_in_background=true`) is held by this worker as a live run, and the
task's first background attempt adopts it here, on this worker's own queue. Nothing is
registered by name: the held run carries its implementation (`LiveRun.own`).

What follows from the call living in this worker's process:

- it is never sent again: there is no `recover` (another worker cannot rebuild it) and no
  `start` outside the call's own attempt; a lost holder fails the task with
  `tool.background.lost`, its outcome unknown;
- the server's progress notifications become the task's progress updates (stored by the
  worker's `OutputMaterializer`, `task_progress` in the event stream): at most one a
  second, carrying the latest (those in between are coalesced);
- a server's elicitation request during such a call is refused with MCP's error (the
  task's input wait would have to run on this worker, which is not built);
- `stop()` (the task cancelled) cancels the request: the MCP SDK sends the server
  `notifications/cancelled`.

Its outcome is classified as for a foreground call (`McpTool`): a result completes the
run, `isError` or a JSON-RPC refusal fails it; an ambiguous end raises `HostFailure` (an
unknown Effect in the foreground; in the background the task fails saying whether the
tool ran is unknown).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

from scope_temporal.background.progress import ProgressUpdate
from scope_temporal.background.protocols import RunHandle
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.mcp.calls import McpTool
from scope_temporal.mcp.live_calls import LiveCall
from scope_temporal.mcp.progress import MAX_MESSAGE_CHARS, MIN_INTERVAL
from scope_temporal.tools.context import current_tool_call
from scope_temporal.tools.failures import ToolFailure
from scope_temporal.tools.outcome import RunOutcome
from scope_temporal.tools.output import ToolOutput


class McpBackgroundTool(BackgroundTool):
    """A recorded MCP tool whose calls may move to the background (a handoff tool)."""

    starts_in_call = True

    def __init__(self, tool: McpTool) -> None:
        super().__init__(_McpCall(tool), tool.spec, (), None, True)
        self.record = tool.record


def movable(tool: McpTool | None) -> McpTool | McpBackgroundTool | None:
    """`tool` as a background tool when its server lets its calls run in the background
    (its recorded spec is then a background one), else as it is."""
    if tool is None or tool.spec.background is None:
        return tool
    return McpBackgroundTool(tool)


class _McpCall:
    """The capability layers: `start` sends the call, `adopt` keeps the live run."""

    def __init__(self, tool: McpTool) -> None:
        self._tool = tool

    async def start(self, task_id: str, arguments: dict[str, Any], attempt: int) -> RunHandle:
        progress = _Progress()
        call = await self._tool.send_for_background(
            current_tool_call(), arguments, progress.notified
        )
        return McpRun(self._tool, call, progress)

    async def adopt(
        self, task_id: str, arguments: dict[str, Any], attempt: int, run: RunHandle
    ) -> RunHandle:
        return run


class McpRun(RunHandle):
    """One `tools/call` in flight, as a background run."""

    def __init__(self, tool: McpTool, call: LiveCall, progress: _Progress) -> None:
        self._tool = tool
        self._call = call
        self._progress = progress
        self._stopped = False
        self._outcome = asyncio.ensure_future(self._settle())

    async def _settle(self) -> RunOutcome:
        call = self._call
        await asyncio.wait({call.task})
        self._progress.close()
        if call.task.cancelled():
            if self._stopped:
                return RunOutcome.canceled(
                    "stopped on request: the server was sent MCP's notifications/cancelled"
                )
            raise self._tool.unknown("the call was cancelled")
        try:
            value = await self._tool.settled(call)
        except ToolFailure as failure:
            return RunOutcome.failed(failure.message)
        if isinstance(value, ToolOutput):
            return RunOutcome.completed({"text": value.for_llm, "structured": value.for_user})
        return RunOutcome.completed(value)

    async def wait(self) -> RunOutcome:
        return await asyncio.shield(self._outcome)

    async def stop(self) -> None:
        if not self._call.task.done():
            self._stopped = True
            self._call.cancel()

    def updates(self) -> AsyncIterator[ProgressUpdate]:
        return self._progress.updates()


class _Progress:
    """The server's progress notifications of one call, as progress updates: the first at
    once, then at most one each `MIN_INTERVAL` seconds with the latest; replayed from the
    first on each `updates()` (an adopting attempt stores each once)."""

    def __init__(self) -> None:
        self.events: list[ProgressUpdate] = []
        self._pending: tuple[float, float | None, str | None] | None = None
        self._last: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False
        self._changed = asyncio.Event()

    async def notified(self, progress: float, total: float | None, message: str | None) -> None:
        """One `notifications/progress` (the MCP SDK's `progress_callback`)."""
        if self._ended or not _finite(progress) or (total is not None and not _finite(total)):
            return
        self._pending = (float(progress), None if total is None else float(total), message)
        loop = asyncio.get_running_loop()
        due = 0.0 if self._last is None else self._last + MIN_INTERVAL - loop.time()
        if due <= 0:
            self._publish()
        elif self._timer is None:
            self._timer = loop.call_later(due, self._publish)

    def _publish(self) -> None:
        self._timer = None
        if self._pending is None:
            return
        progress, total, message = self._pending
        self._pending = None
        self._last = asyncio.get_running_loop().time()
        if not message:
            message = f"{progress:g}" if total is None else f"{progress:g}/{total:g}"
        self.events.append(
            ProgressUpdate(
                event_id=f"mcp-progress-{len(self.events) + 1}",
                data={"progress": progress, "total": total},
                metadata={"message": message[:MAX_MESSAGE_CHARS]},
            )
        )
        self._wake()

    def close(self) -> None:
        """The call ended: publish the latest notification not yet published."""
        if self._timer is not None:
            self._timer.cancel()
        self._publish()
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def updates(self) -> AsyncIterator[ProgressUpdate]:
        sent = 0
        while True:
            changed = self._changed
            while sent < len(self.events):
                yield self.events[sent]
                sent += 1
            if self._ended:
                return
            await changed.wait()


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


__all__ = ["McpBackgroundTool", "McpRun", "movable"]
