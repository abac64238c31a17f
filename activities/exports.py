"""A background tool: export the incident's logs as evidence files (a simulated long job).

`ExportLogs` (the model calls it `export_logs`) writes one JSON-lines file per service,
a moment per service, and publishes a progress event after each. It runs in the
foreground for half a second; then the call moves to the background (the model gets a
`launch_result` with the task id and reads the result later with `task_output`), while
`scope-temporal run` shows its progress live.

It has every capability layer a long job can have:
- **handoff** (`adopt`): the live run moves to the background without starting again;
- **recoverable** (`recover`, with `start` idempotent per task id): if the worker dies, the
  next attempt continues from the checkpoint (the services already exported) on any
  worker, replaying the progress events it had published with the same event ids;
- it validates its arguments before anything starts.

The operation runs in the worker process (a `TaskRun`), so `start` and `recover` first
look for the run this process already has: that is "the same operation".
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field

from activities.incidents import LOGS, services
from scope_temporal import ProgressUpdate, RunHandle, RunProgress, TaskRun, background_tool

EXPORTS = Path(".scope/exports")
STEP_SECONDS = float(os.environ.get("SCOPE_DEMO_EXPORT_STEP", "0.5"))
"""How long exporting one service takes (the simulation)."""


class ExportArgs(BaseModel):
    services: list[str] = Field(
        default_factory=list, description="Services to export; every service when empty."
    )


def _update(index: int, service: str, total: int, lines: int) -> ProgressUpdate:
    return ProgressUpdate(
        event_id=f"exported-{service}",
        data={"service": service, "lines": lines},
        metadata={"message": f"exported {service} ({index}/{total})"},
    )


def _chosen(arguments: ExportArgs) -> list[str]:
    return arguments.services or services()


@background_tool(
    permission="write", execution="parallel", foreground_timeout=0.5, heartbeat_timeout=5
)
class ExportLogs:
    """Export service logs as evidence files (one per service; takes a few seconds, and
    continues in the background: read the result with task_output)."""

    def __init__(self) -> None:
        self.runs: dict[str, TaskRun] = {}

    def validate_arguments(self, arguments: ExportArgs) -> None:
        unknown = sorted(set(arguments.services) - set(services()))
        if unknown:
            raise ValueError(f"no logs for {unknown}; known services: {services()}")

    def _run(self, task_id: str, arguments: ExportArgs, done: int) -> TaskRun:
        chosen = _chosen(arguments)
        folder = EXPORTS / quote(task_id, safe="")

        async def export(progress: RunProgress) -> Any:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                for index, service in enumerate(chosen[done:], start=done + 1):
                    await asyncio.sleep(STEP_SECONDS)
                    lines = (LOGS / f"{service}.log").read_text().splitlines()
                    rows = [json.dumps({"service": service, "line": x}) + "\n" for x in lines]
                    (folder / f"{service}.jsonl").write_text("".join(rows))  # idempotent
                    progress.checkpoint({"done": index})
                    update = _update(index, service, len(chosen), len(lines))
                    progress.publish(update.event_id, data=update.data, metadata=update.metadata)
            finally:  # ended: a later Interaction may reuse the id, and memory is freed
                self.runs.pop(task_id, None)
            return {"folder": str(folder), "files": len(chosen)}

        replay = [
            _update(i, s, len(chosen), len((LOGS / f"{s}.log").read_text().splitlines()))
            for i, s in enumerate(chosen[:done], start=1)
        ]
        run = TaskRun(export, checkpoint={"done": done}, replay=replay)
        self.runs[task_id] = run
        return run

    async def start(self, task_id: str, arguments: ExportArgs, attempt: int) -> RunHandle:
        return self.runs.get(task_id) or self._run(task_id, arguments, 0)

    async def recover(
        self, task_id: str, arguments: ExportArgs, attempt: int, checkpoint: Any
    ) -> RunHandle:
        return self.runs.get(task_id) or self._run(task_id, arguments, checkpoint["done"])

    async def adopt(
        self, task_id: str, arguments: ExportArgs, attempt: int, run: RunHandle
    ) -> RunHandle:
        return run
