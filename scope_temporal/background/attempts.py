"""One background attempt, free of Temporal: shared by `scope.task.attempt` and LocalRunner.

How the run is obtained (the first that applies):

1. `previous` is set (a retry of an attempt that had obtained its run, whose last
   heartbeat carried the checkpoint): `recover` from that checkpoint;
2. `start` / `recover` / `resume` as the plan says (`start` and `resume` are idempotent
   per task id and request id, so a retry whose predecessor left no checkpoint repeats
   them safely);
3. `adopt`: the live run this worker holds for the task (none held: the attempt is lost).

Then the checkpoint is heartbeated at once (so a retry recovers instead of starting
again), a `resume` acknowledges its answer, and the run is observed to its outcome while
its progress is stored and reported. A stop request (the attempt's cancellation) stops the
run and reports how it ended; a worker shutting down only stops observing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from scope_temporal import errors
from scope_temporal.background.deadlines import remaining, timed_out
from scope_temporal.background.observe import STOP_GRACE_SECONDS, RunFailure, RunObserver
from scope_temporal.background.progress import summary_after
from scope_temporal.background.protocols import RunHandle, RunOutcome
from scope_temporal.background.runtime import BackgroundRuntime
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.background.yielding import Reporter, Tell, YieldMode, quietly
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.payloads import HeartbeatState
from scope_temporal.tools.context import task_context
from scope_temporal.tools.failures import ToolFailure
from scope_temporal.tools.outcome import ProgressSummary

Beat = Callable[[HeartbeatState], None]
"""Record the attempt's liveness and checkpoint (an activity heartbeat)."""


class _Lost(Exception):
    """The attempt cannot obtain its run."""


async def run_attempt(
    tool: BackgroundTool,
    plan: AttemptPlan,
    *,
    attempt: int,
    previous: HeartbeatState | None,
    runtime: BackgroundRuntime,
    beat: Beat,
    tell: Tell,
    heartbeat_every: float,
    stop_on_cancel: Callable[[], bool],
    yield_after: int | None = None,
    yield_by: YieldMode | None = None,
) -> AttemptReport:
    """Run one attempt (see the module docstring) and report how it ended.

    Args:
        attempt: the tool-visible attempt number.
        previous: the last heartbeat of this attempt's previous try, if any.
        heartbeat_every: seconds between heartbeats.
        stop_on_cancel: whether a cancellation means "stop the run" (False while the
            worker shuts down: the run is left for a retry to recover).
        yield_after: progress reports the task's history has room for; then the
            attempt yields its run `yield_by` (see `yielding`), or reports rarely.

    Raises:
        asyncio.CancelledError: cancelled while the worker shuts down.
        Exception: what the tool raised other than `ToolFailure`, or the output store:
            the attempt has no outcome (Temporal retries it only for recoverable tools).
    """
    summary = await _stored_summary(runtime, plan.task_id)
    arguments = tool.parse(json.loads(plan.arguments))
    try:
        # the run's own tasks, created in start/recover/resume, inherit the run context
        with task_context(plan.context):
            handle, summary = await _obtain(
                tool, plan, attempt, previous, runtime, arguments, summary
            )
    except ToolFailure as failure:
        if plan.mode == "resume" and previous is None:
            return AttemptReport(attempt=attempt, refused=failure.message, progress=summary)
        return AttemptReport(
            attempt=attempt, outcome=RunOutcome.failed(failure.message), progress=summary
        )
    except _Lost as lost:
        return AttemptReport(attempt=attempt, lost=str(lost), progress=summary)
    except Exception as error:  # the tool's own code failed: durable, never retried
        step = "recover" if previous is not None else plan.mode
        return _raised(attempt, step, error, summary)
    beat(HeartbeatState(checkpoint=handle.checkpoint(), events=summary.events))
    if plan.mode == "resume":
        await quietly(tell(None, plan.request_id))
    reporter = Reporter(tell, yield_after)
    if yield_by == "hold" and runtime.adopt_queue is None:
        yield_by = None  # nowhere to adopt it: this worker serves no handoff tool now
    observer = RunObserver(
        plan.task_id, handle, runtime.materializer, summary, on_progress=reporter.progress
    )
    beating = asyncio.ensure_future(_beat_forever(handle, observer, beat, heartbeat_every))
    try:
        yield_at = reporter.spent if yield_by is not None else None
        left = remaining(plan.deadline)
        outcome = await _outcome(handle, observer, stop_on_cancel, left, yield_at)
    except RunFailure as failure:
        return AttemptReport(
            attempt=attempt,
            outcome=RunOutcome.failed(failure.message),
            code=failure.code,
            checkpoint=handle.checkpoint(),
            progress=observer.summary,
        )
    except Exception as error:
        if error is not observer.raised:
            raise  # the output store: no outcome (a recoverable tool's attempt is retried)
        return _raised(attempt, "wait", error, observer.summary, handle.checkpoint())
    finally:
        beating.cancel()
        reporter.close()
    if outcome is None:  # the budget is spent: the run goes on, owned by the next run
        held_on = None
        if yield_by == "hold":
            own = tool if isinstance(tool, BackgroundTool) and tool.starts_in_call else None
            runtime.live_runs.hold(plan.task_id, handle, observer.summary, own=own)
            held_on = runtime.adopt_queue
        return AttemptReport(
            attempt=attempt,
            yielded=True,
            held_on=held_on,
            checkpoint=handle.checkpoint(),
            progress=observer.summary,
        )
    return AttemptReport(
        attempt=attempt, outcome=outcome, checkpoint=handle.checkpoint(), progress=observer.summary
    )


async def _obtain(
    tool: BackgroundTool,
    plan: AttemptPlan,
    attempt: int,
    previous: HeartbeatState | None,
    runtime: BackgroundRuntime,
    arguments: Any,
    summary: ProgressSummary,
) -> tuple[RunHandle, ProgressSummary]:
    task_id = plan.task_id
    if previous is not None:
        return await tool.recover(task_id, arguments, attempt, previous.checkpoint), summary
    if plan.mode == "start":
        return await tool.start(task_id, arguments, attempt), summary
    if plan.mode == "recover":
        return await tool.recover(task_id, arguments, attempt, plan.checkpoint), summary
    if plan.mode == "resume":
        assert plan.request_id is not None  # the machine always plans resume with an answer
        handle = await tool.resume(
            task_id, arguments, attempt, plan.request_id, plan.data, plan.checkpoint
        )
        return handle, summary
    live = runtime.live_runs.take(task_id)
    if live is None:
        raise _Lost(not_held(runtime))
    return await tool.adopt(task_id, arguments, attempt, live.handle), summary.merged(live.progress)


def not_held(runtime: BackgroundRuntime) -> str:
    """Why an adoption finds no live run."""
    return (
        "this worker no longer holds the live run (it was released, unadopted, after "
        f"{runtime.live_runs.grace:g} s, or the worker restarted)"
    )


def _raised(
    attempt: int,
    step: str,
    error: Exception,
    progress: ProgressSummary,
    checkpoint: Any = None,
) -> AttemptReport:
    """The tool's code raised: the task fails, model-visibly; nothing is tried again (only a
    lost worker or a worker shutting down leads to another attempt)."""
    return AttemptReport(
        attempt=attempt,
        outcome=RunOutcome.failed(
            f"{step} raised {type(error).__name__}: {error}; the task failed and is not "
            "retried (whether the operation had an effect is unknown)"
        ),
        code=errors.TOOL_EXECUTION_FAILED,
        checkpoint=checkpoint,
        progress=progress,
    )


async def _outcome(
    handle: RunHandle,
    observer: RunObserver,
    stop_on_cancel: Callable[[], bool],
    left: float | None,
    yield_at: asyncio.Event | None = None,
) -> RunOutcome | None:
    """The run's outcome; past the operation's deadline (`left` seconds from now) the run
    is stopped and the outcome is a timeout failure. None: `yield_at` came first (the
    run goes on, no longer observed)."""
    watching = asyncio.ensure_future(observer.outcome(left))
    try:
        if yield_at is not None:
            yielding = asyncio.ensure_future(yield_at.wait())
            try:
                await asyncio.wait({watching, yielding}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                yielding.cancel()
            if not watching.done():
                watching.cancel()
                observer.detach()
                return None
        outcome = await watching
        if outcome is None:
            assert left is not None  # no limit: it waited for the end
            await handle.stop()
            outcome = await observer.outcome(STOP_GRACE_SECONDS)
            observer.detach()
            raise RunFailure(errors.TOOL_TIMEOUT, timed_out(outcome))
    except asyncio.CancelledError:
        watching.cancel()
        if not stop_on_cancel():
            observer.detach()
            raise
        await handle.stop()
        outcome = await observer.outcome(STOP_GRACE_SECONDS)
        if outcome is None:
            observer.detach()
            return RunOutcome.canceled(
                f"stop requested; the run did not confirm within {STOP_GRACE_SECONDS:g} s"
            )
    assert outcome is not None  # no timeout: it waited for the end
    return outcome


async def _stored_summary(runtime: BackgroundRuntime, task_id: str) -> ProgressSummary:
    """What the output store holds of the task (a retry continues the count from it)."""
    count = await runtime.materializer.count(task_id)
    last = await runtime.materializer.read(task_id, after=count - 1, limit=1) if count else []
    return summary_after(ProgressSummary(), last[0]) if last else ProgressSummary()


async def _beat_forever(handle: RunHandle, observer: RunObserver, beat: Beat, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        beat(HeartbeatState(checkpoint=handle.checkpoint(), events=observer.summary.events))


__all__ = ["Beat", "Tell", "not_held", "run_attempt"]
