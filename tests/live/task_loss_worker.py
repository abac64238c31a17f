"""A worker process the background worker-loss tests start and SIGKILL.

    python -m tests.live.task_loss_worker ADDRESS TASK_QUEUE SIDE_EFFECT_FILE OUTPUT_DIR

Tools append a line to SIDE_EFFECT_FILE for every side effect, so the test counts them
across processes. `ledger` is recoverable: its operation runs in the worker process, so
`recover` returns the run this process still has, or rebuilds it from the checkpoint
(replaying the progress updates it had published, with the same event ids).
`fragile` has no `recover`: a lost worker fails its task.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio.client import Client

from scope_temporal import (
    Definition,
    LocalFileMaterializer,
    ModelRequest,
    ProgressUpdate,
    Response,
    RunHandle,
    RunProgress,
    ScopeWorker,
    ScriptedModel,
    TaskRun,
    background_tool,
    reply,
)

SIDE_EFFECTS = [Path("/dev/null")]  # set by main()
STEP_SECONDS = 0.3


def record(line: str) -> None:
    with SIDE_EFFECTS[0].open("a") as f:
        f.write(line + "\n")


def recorded(line: str) -> bool:
    return SIDE_EFFECTS[0].exists() and line in SIDE_EFFECTS[0].read_text().splitlines()


class LedgerArgs(BaseModel):
    steps: int


def _update(step: int, steps: int) -> ProgressUpdate:
    return ProgressUpdate(
        event_id=f"step-{step}", data={"step": step}, metadata={"message": f"{step}/{steps}"}
    )


@background_tool(foreground_timeout=0.5, heartbeat_timeout=2, max_attempts=3)
class Ledger:
    """Write ledger entries, one step at a time (recoverable)."""

    runs: dict[str, TaskRun] = {}

    def _run(self, task_id: str, steps: int, done: int) -> TaskRun:
        async def work(progress: RunProgress) -> Any:
            for step in range(done + 1, steps + 1):
                await asyncio.sleep(STEP_SECONDS)
                record(f"step {step}")
                progress.checkpoint({"step": step})
                progress.publish(
                    f"step-{step}", data={"step": step}, metadata={"message": f"{step}/{steps}"}
                )
            if not recorded(f"done {task_id}"):
                record(f"done {task_id}")
            return {"entries": steps}

        run = TaskRun(
            work, checkpoint={"step": done}, replay=[_update(s, steps) for s in range(1, done + 1)]
        )
        self.runs[task_id] = run
        return run

    async def start(self, task_id: str, arguments: LedgerArgs, attempt: int) -> RunHandle:
        if task_id in self.runs:  # idempotent per task id
            return self.runs[task_id]
        if not recorded(f"start {task_id}"):
            record(f"start {task_id}")
        return self._run(task_id, arguments.steps, 0)

    async def recover(
        self, task_id: str, arguments: LedgerArgs, attempt: int, checkpoint: Any
    ) -> RunHandle:
        if task_id in self.runs:  # this process still runs it
            return self.runs[task_id]
        record(f"recover {checkpoint['step']} attempt {attempt}")
        return self._run(task_id, arguments.steps, checkpoint["step"])


class FragileArgs(BaseModel):
    name: str


@background_tool(foreground_timeout=0.5, heartbeat_timeout=2)
class Fragile:
    """Run something that cannot be recovered."""

    async def start(self, task_id: str, arguments: FragileArgs, attempt: int) -> RunHandle:
        record(f"fragile start {attempt}")

        async def work(progress: RunProgress) -> Any:
            await asyncio.sleep(600)

        return TaskRun(work)


def plan(request: ModelRequest) -> Response:
    last = request.messages[-1]
    if last.role == "user":
        if last.text == "ledger":
            return reply.tool_calls(("ledger", {"steps": 12}))
        return reply.tool_calls(("fragile", {"name": "x", "run_in_background": True}))
    return reply.text("launched")


DEFINITIONS = [
    Definition("task-loss", tools=[Ledger, Fragile], tool_heartbeat_timeout=timedelta(seconds=2))
]


async def main(
    address: str,
    task_queue: str,
    output: str,
    definitions: list[Definition] = DEFINITIONS,
    tools: tuple[Any, ...] = (Ledger, Fragile),
    answer: Callable[[ModelRequest], Response] = plan,
) -> None:
    """Serve `definitions` with `tools` (by default this module's app) until killed."""
    client = await Client.connect(address)
    worker = ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=definitions,
        tools=tools,
        models={"default": ScriptedModel(answer)},
        materializer=LocalFileMaterializer(output),
    )
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    SIDE_EFFECTS[0] = Path(sys.argv[3])
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[4]))
