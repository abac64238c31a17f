"""Tell the operator when a worker is too busy to heartbeat in time.

Activities heartbeat from the worker's event loop. A loop running late (too much CPU work
in the process, or a CPU starved by its neighbours) delays every heartbeat, and a call
whose heartbeat comes later than its timeout is taken for a call on a lost worker: it
becomes an unknown Effect. `LoopWatch` measures how late the loop wakes from a short sleep
and logs a warning when that lag reaches `warn_after` (a third of the default heartbeat
timeout), so a *busy* worker shows in its log, distinct from a *lost* one.
"""

from __future__ import annotations

import asyncio
import logging
import time  # deterministic: worker side, never in a workflow
from datetime import timedelta

from scope_temporal.definition import DEFAULT_HEARTBEAT_TIMEOUT

_log = logging.getLogger("scope_temporal.worker")

TICK_S = 0.5
"""How often the loop is probed."""


class LoopWatch:
    """Probes the running loop every `TICK_S`; warns (at most once a minute) on lag."""

    def __init__(self, warn_after: timedelta = DEFAULT_HEARTBEAT_TIMEOUT / 3) -> None:
        self.warn_after = warn_after.total_seconds()
        self.worst_lag_s = 0.0
        """The worst lag seen so far, in seconds."""
        self._task: asyncio.Task[None] | None = None
        self._warned_at = float("-inf")

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _watch(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(TICK_S)
            now = time.monotonic()
            self.observe(now - before - TICK_S, now)

    def observe(self, lag_s: float, now: float) -> None:
        """Record one probe's lag; warn if it reached `warn_after`."""
        self.worst_lag_s = max(self.worst_lag_s, lag_s)
        if lag_s >= self.warn_after and now - self._warned_at >= 60:
            self._warned_at = now
            _log.warning(
                "this worker's event loop ran %.1f s late: activity heartbeats are delayed "
                "as much, and a call whose heartbeat misses its timeout becomes unknown as "
                "if the worker were lost. The process is short of CPU: lower its slots "
                "(max_concurrent_workflow_tasks / max_concurrent_activities), give it "
                "more CPU, or add workers.",
                lag_s,
            )


__all__ = ["TICK_S", "LoopWatch"]
