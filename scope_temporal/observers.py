"""Worker-side observers: callbacks told when model and tool calls start and settle.

Observational only. An observer that raises is isolated and never changes a settlement;
the failure is counted per callback (`ObserverHub.failure_counts`, exact and never
reset) and the latest `MAX_KEPT_FAILURES` are kept with their tracebacks
(`ObserverHub.failures`, e.g. `ScopeWorker.observer_failures`). Memory stays bounded
however often an observer fails.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections import Counter, deque
from typing import Any

MAX_KEPT_FAILURES = 100
"""How many of the latest observer failures are kept with their tracebacks."""

MAX_TRACEBACK_CHARS = 4_000
"""A kept traceback is cut to its last this many characters."""


class ObserverFailure:
    """One exception an observer raised.

    Attributes:
        observer: the observer's class name.
        event: the callback that raised (`model_started`, `tool_settled`, ...).
        error: `"ExceptionType: message"`.
        traceback: the formatted traceback (its last `MAX_TRACEBACK_CHARS` characters).
    """

    def __init__(self, observer: str, event: str, error: str, traceback: str = "") -> None:
        self.observer = observer
        self.event = event
        self.error = error
        self.traceback = traceback

    @property
    def callback(self) -> str:
        """`"Observer.event"`: the key of `ObserverHub.failure_counts`."""
        return f"{self.observer}.{self.event}"

    def __repr__(self) -> str:
        return f"ObserverFailure({self.callback}: {self.error})"


class ObserverHub:
    """Fans events out to observers, isolating their failures."""

    def __init__(
        self,
        observers: list[Any] | tuple[Any, ...] = (),
        *,
        keep_failures: int = MAX_KEPT_FAILURES,
    ) -> None:
        self.observers = tuple(observers)
        self._failures: deque[ObserverFailure] = deque(maxlen=keep_failures)
        self.failure_counts: Counter[str] = Counter()
        """Failures per callback (`"Observer.event"`), counted since the hub was made."""

    @property
    def failures(self) -> list[ObserverFailure]:
        """The latest failures (at most `keep_failures`), oldest first."""
        return list(self._failures)

    @property
    def failure_total(self) -> int:
        """Every failure so far, including those no longer kept."""
        return sum(self.failure_counts.values())

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
        trace = "".join(traceback.format_exception(exc))[-MAX_TRACEBACK_CHARS:]
        failure = ObserverFailure(
            type(observer).__name__, event, f"{type(exc).__name__}: {exc}", trace
        )
        self.failure_counts[failure.callback] += 1
        self._failures.append(failure)


__all__ = ["MAX_KEPT_FAILURES", "ObserverFailure", "ObserverHub"]
