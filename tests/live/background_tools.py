"""Background tools the live tests serve, and a model that follows their tasks.

Each tool records what it did in `EVENTS` (a list per task id), so a test reads only its
own task's history. `RELEASE[task_id]` holds a run until the test (or the model) sets it.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import Any

from pydantic import BaseModel

from scope_temporal import (
    ModelRequest,
    Response,
    RunHandle,
    RunOutcome,
    RunProgress,
    TaskRun,
    ToolFailure,
    background_tool,
    reply,
)

EVENTS: defaultdict[str, list[str]] = defaultdict(list)
RELEASE: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)


class JobArgs(BaseModel):
    steps: int = 2
    """Progress events to publish (event ids `step-1`...)."""
    hold: bool = False
    """Wait for RELEASE[task id] before finishing."""
    repeat: bool = False
    """Publish `step-1` again with the same bytes (a duplicate)."""
    conflict: bool = False
    """Publish `step-1` again with other bytes (a conflict)."""


def _job(task_id: str, arguments: JobArgs) -> TaskRun:
    async def work(progress: RunProgress) -> Any:
        EVENTS[task_id].append("run")
        try:
            for step in range(1, arguments.steps + 1):
                progress.publish(
                    f"step-{step}",
                    data={"step": step},
                    metadata={"message": f"step {step}/{arguments.steps}"},
                )
                await asyncio.sleep(0.02)
            if arguments.repeat:
                progress.publish(
                    "step-1", data={"step": 1}, metadata={"message": f"step 1/{arguments.steps}"}
                )
            if arguments.conflict:
                progress.publish("step-1", data={"step": "again"})
                await asyncio.sleep(30)
            if arguments.hold:
                await RELEASE[task_id].wait()
        except asyncio.CancelledError:
            EVENTS[task_id].append("stopped")
            raise
        EVENTS[task_id].append("done")
        return {"rows": arguments.steps * 10}

    return TaskRun(work)


@background_tool(
    permission="read", execution="parallel", foreground_timeout=0.5, heartbeat_timeout=2
)
class Job:
    """Run a job (hands a live run over to the background)."""

    async def start(self, task_id: str, arguments: JobArgs, attempt: int) -> RunHandle:
        EVENTS[task_id].append(f"start {attempt}")
        return _job(task_id, arguments)

    async def adopt(
        self, task_id: str, arguments: JobArgs, attempt: int, run: RunHandle
    ) -> RunHandle:
        EVENTS[task_id].append(f"adopt {attempt}")
        return run


class PayArgs(BaseModel):
    to: str


APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}},
    "required": ["amount"],
}


@background_tool(permission="write", foreground_timeout=5, heartbeat_timeout=2)
class Payment:
    """Pay someone, once a person said how much."""

    def validate_arguments(self, arguments: PayArgs) -> None:
        if not arguments.to:
            raise ValueError("to: who is paid must not be empty")

    async def start(self, task_id: str, arguments: PayArgs, attempt: int) -> RunHandle:
        EVENTS[task_id].append(f"start {attempt}")

        async def ask(progress: RunProgress) -> RunOutcome:
            return RunOutcome.waiting_input(
                f"How much to pay {arguments.to}?", APPROVAL, {"to": arguments.to}
            )

        return TaskRun(ask)

    async def resume(
        self,
        task_id: str,
        arguments: PayArgs,
        attempt: int,
        request_id: str,
        data: Any,
        checkpoint: Any,
    ) -> RunHandle:
        if data["amount"] > 100:
            raise ToolFailure(f"{data['amount']} is over the limit of 100")
        EVENTS[task_id].append(f"paid {data['amount']} to {checkpoint['to']} ({request_id})")

        async def paid(progress: RunProgress) -> Any:
            return {"paid": data["amount"]}

        return TaskRun(paid)


def _envelope(request: ModelRequest) -> dict[str, Any] | None:
    """The envelope of the latest tool result (`{"type": "text"}` if it is not JSON)."""
    last = request.messages[-1]
    if last.role != "tool":
        return None
    content = last.tool_results[0].content
    try:
        found: dict[str, Any] = json.loads(content)
    except ValueError:
        return {"type": "text", "content": content}
    return found


def follow(
    call: tuple[str, dict[str, Any]], *, then: str = "task_output", release: bool = False
) -> Any:
    """A model: make `call`; after a `launch_result`, call `then` on the task (releasing
    its run first, with `release`); `task_output` again while the task runs;
    then reply with the last envelope it saw (JSON)."""

    def plan(request: ModelRequest) -> Response:
        envelope = _envelope(request)
        if envelope is None:
            return reply.tool_calls(call)
        task_id = envelope.get("task_id")
        if envelope["type"] == "launch_result":
            if release:
                RELEASE[task_id].set()
            return reply.tool_calls((then, _arguments(then, task_id)))
        if envelope["type"] in ("update", "output") and envelope["status"] == "running":
            return reply.tool_calls(("task_output", _arguments("task_output", task_id)))
        return reply.text(json.dumps(envelope))

    return plan


def _arguments(tool: str, task_id: str) -> dict[str, Any]:
    if tool == "task_output":
        return {"task_id": task_id, "wait_seconds": 20}
    return {"task_id": task_id}


__all__ = ["EVENTS", "RELEASE", "Job", "JobArgs", "Payment", "follow"]
