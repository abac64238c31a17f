"""The activity `scope.task.attempt`: one background attempt (see `background.attempts`).

Temporal's part: the attempt number (`activity.info().attempt`, retried only for
recoverable tools), the heartbeat details (the checkpoint a retry recovers from), the
heartbeats themselves, cancellation (the task asked to stop the run) and the signal
telling the task its progress.
"""

from __future__ import annotations

from temporalio import activity

from scope_temporal import names
from scope_temporal.background.attempts import run_attempt
from scope_temporal.background.runtime import BackgroundRuntime
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.interaction.task_values import AttemptReport
from scope_temporal.payloads import HeartbeatState, TaskAttemptInput, TaskReport
from scope_temporal.tools.outcome import ProgressSummary
from scope_temporal.tools.registry import ToolRegistry


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
        tool = self.tools.get(plan.tool)
        if not isinstance(tool, BackgroundTool):
            return AttemptReport(
                attempt=number,
                lost=f"no background tool {plan.tool!r} is registered on the worker that ran "
                "the attempt",
            )
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

        return await run_attempt(
            tool,
            plan,
            attempt=number,
            previous=previous,
            runtime=self.runtime,
            beat=activity.heartbeat,
            tell=tell,
            heartbeat_every=max(input.heartbeat.total_seconds() / 3, 0.2),
            stop_on_cancel=lambda: not activity.is_worker_shutdown(),
        )


__all__ = ["TaskActivities"]
