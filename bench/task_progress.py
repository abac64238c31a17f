"""`bench/run.py` figure task_progress: a long background task stays bounded.

One Interaction calls a handoff tool whose run publishes EVENTS progress events over a
while (a checkpoint after each); its task runs with a small history bound, so it
continues as new several times: each time its attempt yields the live run, which the
next run adopts on the same worker. Figures: the runs, the most events and bytes of one
run, the history events one progress report cost, the wall time; and it asserts that
every run started from exactly the checkpoint, progress and attempt the one before ended
with, that the final count is EVENTS and that no event was published twice.
"""

from __future__ import annotations

import asyncio
import json
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections import Counter
from typing import Any

from pydantic import BaseModel
from temporalio.testing import WorkflowEnvironment

from bench.task_runs import assert_carried_exactly, task_runs
from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    TaskRun,
    background_tool,
    reply,
)
from scope_temporal.background import MemoryMaterializer

PUBLISHED: Counter[str] = Counter()


class Steps(BaseModel):
    events: int
    seconds: float
    """How long publishing them takes."""


@background_tool(foreground_timeout=0.2, heartbeat_timeout=5)
class Publisher:
    """Publish many progress events over a while (hands its live run over)."""

    async def start(self, task_id: str, arguments: Steps, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            batches = 100
            for batch in range(batches):
                await asyncio.sleep(arguments.seconds / batches)
                first, end = (b * arguments.events // batches for b in (batch, batch + 1))
                for n in range(first, end):
                    progress.publish(f"p-{n + 1}", metadata={"message": f"{n + 1} done"})
                    PUBLISHED[task_id] += 1
                    progress.checkpoint({"next": n + 2})
            return {"published": arguments.events}

        return TaskRun(work)

    async def adopt(
        self, task_id: str, arguments: Steps, attempt: int, run: RunHandle
    ) -> RunHandle:
        return run


def _plan(events: int, seconds: float) -> Any:
    def plan(request: ModelRequest) -> Response:
        last = request.messages[-1]
        if last.role != "tool":
            return reply.tool_calls(("publisher", {"events": events, "seconds": seconds}))
        envelope = json.loads(last.tool_results[0].content)
        if envelope["status"] == "running":  # the launch, or still running: wait for it
            task = {"task_id": envelope["task_id"], "wait_seconds": 30}
            return reply.tool_calls(("task_output", task))
        return reply.text("done")

    return plan


async def task_progress(
    env: WorkflowEnvironment, *, events: int, seconds: float, bound: int, figure: Any
) -> None:
    name = "task-progress"
    task_queue = f"{name}-{uuid.uuid4().hex[:8]}"
    async with ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=[Definition(name, tools=[Publisher])],
        tools=[Publisher],
        models={"default": ScriptedModel(_plan(events, seconds))},
        materializer=MemoryMaterializer(),
        task_history_events=bound,
    ) as worker:
        scope = ScopeClient(env.client, task_queue=task_queue)
        start = time.perf_counter()
        handle = await scope.start(name, "go")
        await handle.result()
        task_id = f"{handle.id}/task/1/0"
        final = (await handle.snapshot()).tasks[0]
        elapsed = time.perf_counter() - start
        runs = await task_runs(worker.client, task_id)
    reports = sum(r.progress_reports for r in runs)
    assert final.status == "completed" and final.progress.events == events, final
    assert PUBLISHED[task_id] == events  # the run never ran twice
    assert_carried_exactly(runs)  # checkpoint, progress, attempt: exactly, at every run
    assert runs[-1].reports[-1].progress is not None
    assert runs[-1].reports[-1].progress.events == events
    figure("task_progress_events", events)
    figure("task_progress_bound", bound)
    figure("task_progress_runs", len(runs))
    figure("task_progress_max_events_per_run", max(r.events for r in runs))
    figure("task_progress_max_kb_per_run", max(r.bytes for r in runs) / 1000)
    figure("task_progress_reports", reports)
    figure("task_progress_events_per_report", sum(r.events for r in runs) / max(reports, 1))
    figure("task_progress_wall_s", elapsed)


__all__ = ["task_progress"]
