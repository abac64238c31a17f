"""The contract between scope-temporal and a background tool's code.

Capability layers, each adding one method (the tool class implements what it can):

- **background** (`BackgroundOperation`): `start(task_id, arguments, attempt)` begins the
  operation and returns a `RunHandle`; optional `validate_arguments(arguments)` (pure and
  repeatable: raise `ValueError` or `ToolFailure` to reject) and
  `prepare_input(arguments)` (may rewrite the arguments before anything is persisted;
  must not start the operation).
- **recoverable** (`Recoverable`): `recover(task_id, arguments, attempt, checkpoint)`
  rebuilds a handle to the *same* operation from its last checkpoint, and `start` is
  idempotent per task id. Only such tools survive the loss of a worker. A recovery may run
  on another worker than the one the operation started on: an operation living in the
  worker's process should also be a handoff tool (then it moves with `adopt`, on its own
  worker, and `recover` only rebuilds it after that worker is gone).
- **resumable** (`Resumable`): `resume(task_id, arguments, attempt, request_id, data,
  checkpoint)` continues a run that waits for input; it raises `ToolFailure` for input it
  refuses *before* any side effect, and applies one request id at most once.
- **handoff** (`Handoff`): `adopt(task_id, arguments, attempt, run)` takes a live
  foreground run into background ownership without repeating its side effects (often it
  just returns `run`).

`attempt` is 0 in the foreground and 1, 2, ... in the background. `start`, `recover`,
`resume` and `adopt` are async; `validate_arguments` and `prepare_input` are plain
functions. Checkpoints are opaque to the framework but must be JSON values: they travel
in activity heartbeats.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Protocol, runtime_checkable

from scope_temporal.background.progress import ProgressUpdate
from scope_temporal.tools.outcome import RunOutcome, RunStatus


class RunHandle(ABC):
    """One running operation as its tool sees it.

    `wait()` gives the authoritative outcome; cancelling a `wait()` only stops observing
    (the operation goes on). `stop()` asks for logical cancellation and is safe to repeat;
    `wait()` then reports `canceled` (or whatever the run reached first).
    """

    @abstractmethod
    async def wait(self) -> RunOutcome:
        """The run's outcome, once it has one."""

    @abstractmethod
    async def stop(self) -> None:
        """Ask the run to stop (idempotent); it returns before the run has stopped."""

    def checkpoint(self) -> Any:
        """The latest checkpoint (a JSON value) `recover` can rebuild the run from.

        Read at every heartbeat of a background attempt; None when there is none.
        """
        return None

    def updates(self) -> AsyncIterator[ProgressUpdate]:
        """The run's progress updates, in order, ending when the run ends.

        Each call starts from the first update again (that is how a recovered or adopted
        run replays them; duplicates by event id are stored once). Default: none.
        """
        return _no_updates()


async def _no_updates() -> AsyncIterator[ProgressUpdate]:
    return
    yield  # an async generator that yields nothing


@runtime_checkable
class BackgroundOperation(Protocol):
    """The base layer: a tool that starts a long operation."""

    def start(self, task_id: str, arguments: Any, attempt: int) -> Awaitable[RunHandle]: ...


@runtime_checkable
class Recoverable(Protocol):
    """A tool whose runs survive worker loss (see the module docstring)."""

    def recover(
        self, task_id: str, arguments: Any, attempt: int, checkpoint: Any
    ) -> Awaitable[RunHandle]: ...


@runtime_checkable
class Resumable(Protocol):
    """A tool whose runs can wait for input and continue with it."""

    def resume(
        self,
        task_id: str,
        arguments: Any,
        attempt: int,
        request_id: str,
        data: Any,
        checkpoint: Any,
    ) -> Awaitable[RunHandle]: ...


@runtime_checkable
class Handoff(Protocol):
    """A tool that can keep a live foreground run when it moves to the background."""

    def adopt(
        self, task_id: str, arguments: Any, attempt: int, run: RunHandle
    ) -> Awaitable[RunHandle]: ...


__all__ = [
    "BackgroundOperation",
    "Handoff",
    "Recoverable",
    "Resumable",
    "RunHandle",
    "RunOutcome",
    "RunStatus",
]
