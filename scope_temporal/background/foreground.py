"""The foreground attempt of a background tool's call: attempt 0, inside `scope.tool`.

In order:

1. The arguments are decoded, `prepare_input` may rewrite them, `validate_arguments`
   may reject them (a model-visible rejection; nothing started, nothing stored).
2. `run_in_background=true`: nothing runs here; the task starts in the background
   (unless only this attempt can start the operation, `starts_in_call`: an MCP call is
   sent here and its live run handed over at once, as in 4).
3. Otherwise `start(task_id, arguments, 0)`, and the run is observed (its progress
   stored) for up to the foreground timeout. A run that ends in time gives the model a
   `foreground_result`; a run asking a question moves to the background at once (a
   resumable tool; others fail the call).
4. Still running at the timeout, and allowed to move (no explicit
   `run_in_background=false`, and the tool's auto-background policy agrees):
   - a **handoff** tool's live run is held by this worker and adopted by the task's first
     background attempt, on this worker's own task queue;
   - a **recoverable** tool stops observing (the operation goes on) and the task
     recovers it from its checkpoint, on any worker;
   - any other run stays in the foreground until it ends (bounded by the call's timeout).
5. A tool's `operation_timeout(arguments)` fixes the operation's deadline when the call is
   made: reached in the foreground (before the foreground timeout), the run is stopped and
   the call fails; a task keeps the deadline (its attempts stop the run there).

A cancelled foreground attempt stops the run: nobody will own it.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Protocol

from scope_temporal.background import envelopes
from scope_temporal.background.deadlines import deadline_after, remaining, timed_out
from scope_temporal.background.observe import STOP_GRACE_SECONDS, RunFailure, RunObserver
from scope_temporal.background.protocols import RunHandle, RunOutcome
from scope_temporal.background.runtime import current_runtime
from scope_temporal.ids import task_id
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.tools.context import current_tool_call
from scope_temporal.tools.failures import ToolFailure
from scope_temporal.tools.outcome import Backgrounded, ProgressSummary, TaskLaunch
from scope_temporal.tools.spec import BackgroundSpec


class ForegroundTool(Protocol):
    """What the foreground attempt needs of a background tool (`BackgroundTool` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def settings(self) -> BackgroundSpec: ...

    @property
    def starts_in_call(self) -> bool:
        """Its operation can start only inside the call's own attempt (an MCP call):
        `run_in_background=true` starts it here and hands the live run over at once."""
        ...

    def decode(self, arguments_json: str) -> tuple[Any, bool | None]: ...

    def prepare(self, arguments: Any) -> Any: ...

    def check(self, arguments: Any) -> None: ...

    def encode(self, arguments: Any) -> str: ...

    def wants_background(self, arguments: Any) -> bool: ...

    def operation_timeout(self, arguments: Any) -> timedelta | float | None: ...

    def describe(self, arguments: Any) -> tuple[str | None, str | None]: ...

    def render(self, task: TaskSnapshot) -> envelopes.Shown: ...

    async def start(self, task_id: str, arguments: Any, attempt: int) -> RunHandle: ...


async def run_foreground(tool: ForegroundTool, arguments_json: str) -> str | Backgrounded:
    """Run the foreground attempt (see the module docstring).

    Returns:
        The `foreground_result` text, or `Backgrounded` (the executor passes it on).

    Raises:
        InvalidArguments: the arguments were rejected (nothing started).
        ToolFailure: the run failed, was cancelled, or asked for input it cannot take,
            within the foreground (the text is a `foreground_result`).
        Exception: what `start` raised, or the output store: the outcome is unknown.
    """
    invocation = current_tool_call()
    runtime = current_runtime()
    settings = tool.settings
    arguments, explicit = tool.decode(arguments_json)
    arguments = tool.prepare(arguments)
    tool.check(arguments)
    launch = TaskLaunch(
        task_id=task_id(invocation.effect_id),
        tool=tool.name,
        arguments=tool.encode(arguments),
        mode="start",
        settings=settings,
        context=invocation.context,
        deadline=deadline_after(tool.operation_timeout(arguments), tool.name),
    )
    description, description_error = tool.describe(arguments)
    launch = launch.model_copy(
        update={"description": description, "description_error": description_error}
    )
    if explicit is True and not tool.starts_in_call:
        return Backgrounded(launch=launch)
    handle = await tool.start(launch.task_id, arguments, 0)
    observer = RunObserver(launch.task_id, handle, runtime.materializer, ProgressSummary())
    limit = settings.foreground_timeout if explicit is not True else timedelta(0)
    limit_s = None if limit is None else limit.total_seconds()
    left = remaining(launch.deadline)
    try:
        outcome = None
        first = _least(limit_s, left)
        if first is not None:
            outcome = await observer.outcome(first)
        if outcome is None and (left is None or (limit_s is not None and limit_s < left)):
            wanted = explicit is True or (explicit is None and tool.wants_background(arguments))
            if limit is not None and wanted and (settings.handoff or settings.recoverable):
                observer.detach()
                mode = "adopt" if settings.handoff else "recover"
                if settings.handoff:
                    own = tool if tool.starts_in_call else None
                    runtime.live_runs.hold(launch.task_id, handle, observer.summary, own=own)
                return Backgrounded(
                    launch=launch.model_copy(
                        update={
                            "mode": mode,
                            "checkpoint": handle.checkpoint(),
                            "adopt_queue": runtime.adopt_queue if settings.handoff else None,
                            "progress": observer.summary,
                        }
                    )
                )
            outcome = await observer.outcome(remaining(launch.deadline))
        if outcome is None:  # the operation's deadline
            await handle.stop()
            confirmed = await observer.outcome(STOP_GRACE_SECONDS)
            observer.detach()
            raise ToolFailure(
                envelopes.foreground_result(tool.name, RunOutcome.failed(timed_out(confirmed)))
            )
    except RunFailure as failure:
        raise ToolFailure(
            envelopes.foreground_result(tool.name, RunOutcome.failed(failure.message))
        ) from None
    except asyncio.CancelledError:
        observer.detach()
        await _stop_quietly(handle)
        raise
    return _finish(tool, launch, handle, outcome, observer.summary)


def _finish(
    tool: ForegroundTool,
    launch: TaskLaunch,
    handle: RunHandle,
    outcome: RunOutcome,
    progress: ProgressSummary,
) -> str | Backgrounded:
    if outcome.status == "completed":
        invocation = current_tool_call()
        task = TaskSnapshot(
            task_id=launch.task_id,
            tool=tool.name,
            ref=invocation.ref,
            parent_id=invocation.process_id,
            status="completed",
            progress=progress,
            data=outcome.data,
            description=launch.description,
        )
        return envelopes.foreground_result(tool.name, outcome, tool.render(task))
    if outcome.status != "waiting_input":
        raise ToolFailure(envelopes.foreground_result(tool.name, outcome))
    if not tool.settings.resumable:
        raise ToolFailure(
            envelopes.foreground_result(
                tool.name,
                RunOutcome.failed("the run asked for input, but this tool cannot be resumed"),
            )
        )
    checkpoint: Any = outcome.checkpoint if outcome.checkpoint is not None else handle.checkpoint()
    return Backgrounded(
        launch=launch.model_copy(
            update={
                "mode": "waiting_input",
                "checkpoint": checkpoint,
                "prompt": outcome.prompt,
                "response_schema": outcome.response_schema,
                "progress": progress,
            }
        )
    )


def _least(*limits: float | None) -> float | None:
    given = [limit for limit in limits if limit is not None]
    return min(given) if given else None


async def _stop_quietly(handle: RunHandle) -> None:
    try:
        await handle.stop()
    except Exception:  # the attempt is being cancelled anyway; its outcome is unknown
        return


__all__ = ["ForegroundTool", "run_foreground"]
