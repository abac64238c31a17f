"""How a background attempt keeps its task's history bounded: its progress reports are
throttled and counted, and past the budget its task gave it, the attempt yields its run
(the task then continues as new) or, for a run that cannot be yielded, reports rarely.

Each progress report is a signal to the task's workflow: about four history events (more
with the tree's event stream). The task gives each attempt a budget of reports that fits
under its bound (`driver.task_carry`). Once it is spent:

- a **handoff** tool's run is *held* by this worker (as after a foreground handoff) and
  the attempt reports `yielded`, naming the task queue only this worker polls; the task's
  next run adopts the live run there (`adopt`: nothing is started again);
- a **recoverable** tool's run is *detached* (observing stops, the run goes on) and the
  task's next run recovers it from the checkpoint, as after a foreground move
  (`recover` rebuilds a handle to the same run);
- any other run cannot change owner, so the attempt goes on, sending at most one report
  every `SLOW_REPORT_SECONDS` (its final report carries the exact count anyway: the
  stored events live in the output store, not in history).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from scope_temporal.interaction.task_values import YieldMode
from scope_temporal.tools.outcome import ProgressSummary

SLOW_REPORT_SECONDS = 3600.0
"""How often an attempt that cannot yield reports progress once its budget is spent."""

Tell = Callable[[ProgressSummary | None, str | None], Awaitable[None]]
"""Tell the task: newer progress, or the id of the answer `resume` accepted."""


def report_pause(elapsed: float, spent: bool) -> float:
    """Seconds between progress reports: 0.5 s at first, slower as the attempt goes on
    (30 s after a quarter of an hour), `SLOW_REPORT_SECONDS` once the budget is spent."""
    if spent:
        return SLOW_REPORT_SECONDS
    return min(max(elapsed / 30, 0.5), 30.0)


class Reporter:
    """Sends progress to the task, throttled (`report_pause`), counting the reports.

    Args:
        tell: how a report is sent.
        budget: reports allowed before `spent` is set (None: no budget).
    """

    def __init__(self, tell: Tell, budget: int | None = None) -> None:
        self._tell = tell
        self._budget = budget
        self.sent = 0
        self.spent = asyncio.Event()
        """Set once `budget` reports were sent."""
        self._latest: ProgressSummary | None = None
        self._changed = asyncio.Event()
        self._started = asyncio.get_running_loop().time()
        self._task = asyncio.ensure_future(self._send())

    def progress(self, summary: ProgressSummary) -> None:
        self._latest = summary
        self._changed.set()

    async def _send(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._changed.wait()
            self._changed.clear()
            await quietly(self._tell(self._latest, None))
            self.sent += 1
            if self._budget is not None and self.sent >= self._budget:
                self.spent.set()
            await asyncio.sleep(report_pause(loop.time() - self._started, self.spent.is_set()))

    def close(self) -> None:
        self._task.cancel()


async def quietly(message: Awaitable[None]) -> None:
    """Progress and acknowledgements are news, not state: a lost one changes nothing the
    report at the end does not repair."""
    try:
        await message
    except Exception:
        return


__all__ = ["SLOW_REPORT_SECONDS", "Reporter", "Tell", "YieldMode", "quietly", "report_pause"]
