"""What background-tool code reaches on the worker: the output store, the live runs held
for a handoff, and access to tasks. Set around each tool attempt by the worker (or
`LocalRunner`) in a context variable; outside one, background tools cannot run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from scope_temporal.background.materializer import OutputMaterializer
from scope_temporal.background.protocols import RunHandle
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.tools.outcome import ProgressSummary

HANDOFF_GRACE_SECONDS = 60.0
"""How long a live run waits to be adopted before it is stopped (nobody owns it)."""


class TaskAccess(Protocol):
    """Reads and cancels the background tasks of the running Interaction."""

    async def snapshot(self, task_id: str) -> TaskSnapshot | None:
        """The task's current snapshot, or None if there is no such task."""
        ...

    async def cancel(self, task_id: str, reason: str) -> TaskSnapshot | None:
        """Ask the task to stop (safe to repeat); its snapshot after the request, or None.

        Raises:
            TaskEnded: the task had already ended.
        """
        ...


@dataclass
class LiveRun:
    """A foreground run handed off to the background, waiting to be adopted."""

    handle: RunHandle
    progress: ProgressSummary
    release: asyncio.TimerHandle | None = None
    own: object = None
    """The `BackgroundTool` that adopts it, for a tool bound per call and registered under
    no name (an MCP tool, `BackgroundTool.starts_in_call`); None: the registered one."""


@dataclass
class LiveRuns:
    """The runs this worker process holds between a handoff and their adoption.

    A run not taken within `grace` seconds is stopped: no task will ever own it.
    """

    grace: float = HANDOFF_GRACE_SECONDS
    _runs: dict[str, LiveRun] = field(default_factory=dict)

    def hold(
        self,
        task_id: str,
        handle: RunHandle,
        progress: ProgressSummary,
        *,
        own: object = None,
    ) -> None:
        run = LiveRun(handle, progress, own=own)
        loop = asyncio.get_running_loop()
        run.release = loop.call_later(self.grace, self._release, task_id, run)
        self._runs[task_id] = run

    def take(self, task_id: str) -> LiveRun | None:
        """The held run of `task_id` (once), or None if none is held."""
        run = self._runs.pop(task_id, None)
        if run is not None and run.release is not None:
            run.release.cancel()
        return run

    def own(self, task_id: str) -> object:
        """The implementation the held run of `task_id` carries (`LiveRun.own`), if any."""
        run = self._runs.get(task_id)
        return None if run is None else run.own

    def _release(self, task_id: str, run: LiveRun) -> None:
        if self._runs.get(task_id) is run:
            del self._runs[task_id]
            asyncio.get_running_loop().create_task(run.handle.stop())


class ToolLookup(Protocol):
    """Finds a registered tool by name (a `ToolRegistry`, or a dict in tests)."""

    def get(self, name: str) -> Any: ...


@dataclass(frozen=True)
class BackgroundRuntime:
    """The worker services background tools use during one attempt."""

    materializer: OutputMaterializer
    live_runs: LiveRuns
    adopt_queue: str | None
    """The task queue only this worker polls (where an adoption of its live runs runs)."""
    tasks: TaskAccess | None = None
    tools: ToolLookup | None = None
    """The worker's tools by name (the task tools render a result with its tool's hooks)."""


_runtime: ContextVar[BackgroundRuntime] = ContextVar("scope_temporal_background_runtime")


@contextmanager
def activate(runtime: BackgroundRuntime) -> Iterator[None]:
    """Make `runtime` current for the code run inside (the worker and LocalRunner use it)."""
    token = _runtime.set(runtime)
    try:
        yield
    finally:
        _runtime.reset(token)


def current_runtime() -> BackgroundRuntime:
    """The runtime of the attempt running in this context.

    Raises:
        RuntimeError: no background runtime is active (not inside a worker's tool attempt).
    """
    try:
        return _runtime.get()
    except LookupError:
        raise RuntimeError(
            "background tools run only inside a ScopeWorker (or LocalRunner) tool attempt"
        ) from None


__all__ = [
    "BackgroundRuntime",
    "LiveRun",
    "LiveRuns",
    "TaskAccess",
    "activate",
    "current_runtime",
]
