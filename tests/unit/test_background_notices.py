"""Lifecycle notifications: a task that ends or asks a question tells its Interaction
(a steer at the next turn), once per status, unless the model has already read it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel

from scope_temporal import (
    Definition,
    Message,
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    ScriptedModel,
    TaskRun,
    ToolResult,
    background_tool,
    reply,
    tool,
)
from scope_temporal.interaction.notices import live, notice_id
from scope_temporal.interaction.state import SteerEnvelope
from scope_temporal.testing import LocalRunner
from tests.live.background_tools import follow


class Args(BaseModel):
    seconds: float = 0.0


def _sleeper(arguments: Args) -> TaskRun:
    async def work(progress: RunProgress) -> Any:
        await asyncio.sleep(arguments.seconds)
        return {"slept": arguments.seconds}

    return TaskRun(work)


@background_tool(foreground_timeout=0.05)
class Told:
    """Sleep in the background; the Interaction is told when it ends."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        return _sleeper(arguments)


@background_tool(foreground_timeout=0.05, notify=False)
class Quiet:
    """Sleep in the background; nobody is told."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        return _sleeper(arguments)


@tool(permission="read")
async def pause(seconds: float) -> str:
    """Wait a while."""
    await asyncio.sleep(seconds)
    return "paused"


TOOLS = [Told, Quiet, pause]


def launch_then_pause(name: str) -> Any:
    """Launch `name` in the background, wait longer than it runs, then reply with what the
    last request ended with."""

    def plan(request: ModelRequest) -> Response:
        calls = sum(1 for m in request.messages if m.role == "tool")
        if calls == 0:
            return reply.tool_calls((name, {"seconds": 0.1, "run_in_background": True}))
        if calls == 1:
            return reply.tool_calls(("pause", {"seconds": 0.6}))
        return reply.text(request.messages[-1].text or "no notice")

    return plan


async def run(plan: Any) -> tuple[ScriptedModel, Any]:
    model = ScriptedModel(plan)
    runner = LocalRunner(
        definitions=[Definition("bg", tools=TOOLS)], tools=TOOLS, models={"default": model}
    )
    handle = await runner.start("bg", [Message.user("go")])
    await handle.result(timeout=10)
    return model, handle


def notices(model: ScriptedModel) -> list[dict[str, Any]]:
    found = []
    for request in model.requests:
        for m in request.messages:
            if m.role == "user" and m.text and "task_notification" in m.text:
                found.append(json.loads(m.text))
    return [dict(t) for t in {json.dumps(n, sort_keys=True): n for n in found}.values()]


async def test_an_ended_task_tells_its_interaction_at_the_next_turn_once() -> None:
    model, handle = await run(launch_then_pause("told"))
    [notice] = notices(model)
    task_id = f"{handle.id}/task/1/0"
    assert notice["type"] == "task_notification"
    assert (notice["task_id"], notice["status"], notice["data"]) == (
        task_id,
        "completed",
        {"slept": 0.1},
    )
    last = model.requests[-1].messages
    assert last[-2].role == "tool" and last[-1].role == "user"  # after the pause's result
    output = await handle.result(timeout=1)
    assert json.loads(output.text)["status"] == "completed"


async def test_notify_false_keeps_the_interaction_uninformed() -> None:
    model, _ = await run(launch_then_pause("quiet"))
    assert notices(model) == []


async def test_a_status_the_model_already_read_is_not_notified() -> None:
    model, _ = await run(follow(("told", {"seconds": 0.2})))
    assert notices(model) == []


def test_live_drops_only_notifications_of_a_status_the_model_read() -> None:
    task = "i-1/task/1/0"
    done = SteerEnvelope(signal_id=notice_id(task, "completed"), messages=(Message.user("done"),))
    asked = SteerEnvelope(
        signal_id=notice_id(task, "waiting_input", 1), messages=(Message.user("asks"),)
    )
    steer = SteerEnvelope(signal_id="s-1", messages=(Message.user("hi"),))
    read = Message.tool(
        [
            ToolResult(
                call_id="c",
                name="task_output",
                content=json.dumps({"type": "output", "task_id": task, "status": "completed"}),
            )
        ]
    )
    assert live([done, asked, steer], [read]) == [asked, steer]
    assert live([done, steer], []) == [done, steer]
