"""The activity `scope.task.attempt`: one background attempt (see `background.attempts`).

Temporal's part: the attempt number (`activity.info().attempt`, retried only for
recoverable tools), the heartbeat details (the checkpoint a retry recovers from), the
heartbeats themselves, cancellation (the task asked to stop the run) and the signal
telling the task its progress.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import activity

from scope_temporal import names
from scope_temporal.background.attempts import Beat, Tell, not_held, run_attempt
from scope_temporal.background.runtime import BackgroundRuntime
from scope_temporal.background.serving import serving_tool
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.background.yielding import YieldMode
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.payloads import HeartbeatState, TaskAttemptInput, TaskReport
from scope_temporal.tools.outcome import ProgressSummary
from scope_temporal.tools.registry import ToolRegistry


async def attempt_task(
    plan: AttemptPlan,
    *,
    attempt: int,
    tools: ToolRegistry,
    runtime: BackgroundRuntime,
    previous: HeartbeatState | None,
    beat: Beat,
    tell: Tell,
    heartbeat_every: float,
    stop_on_cancel: Callable[[], bool],
    yield_after: int | None = None,
    yield_by: YieldMode | None = None,
) -> AttemptReport:
    """One attempt as `scope.task.attempt` makes it (see `background.attempts`), on the
    implementation of the task's capability class (`background.serving`), or the one a
    held live run carries (an MCP call's, `LiveRun.own`); unserved, with nothing run, if
    this worker has none (lost, for an adoption of a run held nowhere whose tool is
    registered under no name)."""
    own = runtime.live_runs.own(plan.task_id) if plan.mode == "adopt" else None
    recovering = previous is not None
    tool: BackgroundTool | str = (
        own if isinstance(own, BackgroundTool) else serving_tool(tools, plan, recovering=recovering)
    )
    if isinstance(tool, str):
        if plan.mode == "adopt" and tools.get(plan.tool) is None:  # a call's own tool (MCP)
            return AttemptReport(attempt=attempt, lost=not_held(runtime))
        return AttemptReport(attempt=attempt, unserved=tool)
    return await run_attempt(
        tool,
        plan,
        attempt=attempt,
        previous=previous,
        runtime=runtime,
        beat=beat,
        tell=tell,
        heartbeat_every=heartbeat_every,
        stop_on_cancel=stop_on_cancel,
        yield_after=yield_after,
        yield_by=yield_by,
    )


class TaskActivities:
    """The background-attempt activity of one worker."""

    def __init__(self, tools: ToolRegistry, runtime: BackgroundRuntime) -> None:
        self.tools = tools
        self.runtime = runtime

    @activity.defn(name=names.TASK_ATTEMPT_ACTIVITY)
    async def attempt(self, input: TaskAttemptInput) -> AttemptReport:
        """Run one attempt; the tool-visible attempt number is the plan's first plus
        Temporal's retries so far."""
        plan = input.plan
        info = activity.info()
        number = plan.attempt + info.attempt - 1
        previous = (
            HeartbeatState.model_validate(info.heartbeat_details[0])
            if info.heartbeat_details
            else None
        )
        task = activity.client().get_workflow_handle(info.workflow_id or plan.task_id)

        async def tell(progress: ProgressSummary | None, resumed: str | None) -> None:
            await task.signal(
                names.TASK_REPORT, TaskReport(attempt=number, progress=progress, resumed=resumed)
            )

        return await attempt_task(
            plan,
            attempt=number,
            tools=self.tools,
            runtime=self.runtime,
            previous=previous,
            beat=activity.heartbeat,
            tell=tell,
            heartbeat_every=max(input.heartbeat.total_seconds() / 3, 0.2),
            stop_on_cancel=lambda: not activity.is_worker_shutdown(),
            yield_after=input.yield_after,
            yield_by=input.yield_by,
        )


__all__ = ["TaskActivities", "attempt_task"]
