"""A background report that ends when its test opens the gate, and a scripted model for a
session around it: turn 1 launches the report and replies, later turns say how many task
notifications they were told. Shared by the unit and live tests of notifications that
reach a session after their turn ended."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from scope_temporal import (
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    TaskRun,
    background_tool,
    reply,
)


class Args(BaseModel):
    pass


GATE: list[asyncio.Event] = []
"""The gate the report waits on: a test sets `GATE[:] = [asyncio.Event()]` first."""


@background_tool(foreground_timeout=0.05)
class Report:
    """Write a report in the background (it ends when the test opens the gate)."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            await GATE[0].wait()
            return {"report": "ready"}

        return TaskRun(work)


def reporter(request: ModelRequest) -> Response:
    """Turn 1 launches the report and replies; later turns say what they were told."""
    last = request.messages[-1]
    if last.role == "user" and last.text == "write the report":
        return reply.tool_calls(("report", {"run_in_background": True}))
    if last.role == "tool":
        return reply.text("started it")
    told = [m.text for m in request.messages if m.role == "user" and "task" in m.text]
    return reply.text(f"told: {len(told)}")
