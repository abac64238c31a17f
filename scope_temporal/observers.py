"""Worker-side observers: callbacks told when model and tool calls start and settle.

Observational only. An observer that raises is isolated: the exception is counted and
kept (visible to the host as `ObserverHub.failures`, e.g. `ScopeWorker.observer_failures`)
and never changes a settlement.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any


class ObserverFailure:
    """One exception an observer raised."""

    def __init__(self, observer: str, event: str, error: str) -> None:
        self.observer = observer
        self.event = event
        self.error = error

    def __repr__(self) -> str:
        return f"ObserverFailure({self.observer}.{self.event}: {self.error})"


class ObserverHub:
    """Fans events out to observers, isolating their failures."""

    def __init__(self, observers: list[Any] | tuple[Any, ...] = ()) -> None:
        self.observers = tuple(observers)
        self.failures: list[ObserverFailure] = []

    async def emit(self, event: str, **details: Any) -> None:
        """Call `event` on every observer that has it; never raises.

        Events: `model_started(request)`, `model_settled(request, outcome)`,
        `tool_started(invocation)`, `tool_settled(invocation, outcome)`.
        """
        for observer in self.observers:
            callback = getattr(observer, event, None)
            if callback is None:
                continue
            try:
                result = callback(**details)
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError as exc:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # the call itself is being cancelled: not the observer's doing
                self._failed(observer, event, exc)  # a stray one, raised by the observer
            except Exception as exc:
                self._failed(observer, event, exc)

    def _failed(self, observer: Any, event: str, exc: BaseException) -> None:
        self.failures.append(
            ObserverFailure(type(observer).__name__, event, f"{type(exc).__name__}: {exc}")
        )
