"""Presentation of background tools: `description(arguments)`, `render_result(task)`, the
`update` envelope's one progress event, and the `kind` limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from scope_temporal import (
    Definition,
    Message,
    RunHandle,
    RunProgress,
    ScriptedModel,
    TaskRun,
    TaskSnapshot,
    background_tool,
)
from scope_temporal.background.progress import ProgressUpdate
from scope_temporal.testing import LocalRunner
from tests.live.background_tools import follow


class Args(BaseModel):
    seconds: float = 0.0
    broken: bool = False


@background_tool(foreground_timeout=0.05)
class Report:
    """Build a report."""

    def description(self, arguments: Args) -> str:
        if arguments.broken:
            raise KeyError("template")
        return f"report over {arguments.seconds:g} s"

    def render_result(self, task: TaskSnapshot) -> Any:
        if task.data["rows"] < 0:
            raise ValueError("negative rows")
        return f"{task.data['rows']} rows ({task.description})"

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            progress.publish("one", kind="log", data={"n": 1}, metadata={"message": "first"})
            progress.publish("two", metadata={"message": "second"})
            await asyncio.sleep(arguments.seconds)
            return {"rows": -1 if arguments.broken else 3}

        return TaskRun(work)

    async def adopt(self, task_id: str, arguments: Args, attempt: int, run: RunHandle) -> RunHandle:
        return run


async def run(plan: Any) -> tuple[list[dict[str, Any]], Any]:
    model = ScriptedModel(plan)
    runner = LocalRunner(
        definitions=[Definition("bg", tools=[Report])], tools=[Report], models={"default": model}
    )
    handle = await runner.start("bg", [Message.user("go")])
    await handle.result(timeout=10)
    seen = [
        json.loads(r.messages[-1].tool_results[0].content)
        for r in model.requests
        if r.messages[-1].role == "tool"
    ]
    return seen, handle


async def test_render_result_shapes_a_foreground_result_for_the_model() -> None:
    [result], _ = await run(follow(("report", {"seconds": 0})))
    assert (result["data"], result["rendered"]) == ({"rows": 3}, "3 rows (report over 0 s)")


async def test_description_names_the_task_and_render_result_its_output() -> None:
    seen, handle = await run(follow(("report", {"seconds": 0.3})))
    launch, final = seen
    assert launch["description"] == "report over 0.3 s"
    assert (final["type"], final["rendered"]) == ("output", "3 rows (report over 0.3 s)")
    [task] = handle.snapshot().tasks
    assert task.description == "report over 0.3 s"


async def test_failing_hooks_are_model_visible_and_leave_the_task_alone() -> None:
    seen, handle = await run(follow(("report", {"seconds": 0.3, "broken": True})))
    launch, final = seen
    assert "description" not in launch
    assert launch["description_error"] == "description(arguments) raised KeyError: 'template'"
    assert final["status"] == "completed" and final["data"] == {"rows": -1}
    assert final["render_error"] == "render_result(task) raised ValueError: negative rows"
    [task] = handle.snapshot().tasks
    assert (task.status, task.description) == ("completed", None)


async def test_an_update_envelope_carries_one_progress_event_the_latest() -> None:
    seen, _ = await run(follow(("report", {"seconds": 0.3}), then="task_status"))
    update = seen[1]
    assert update["type"] == "update" and "events" not in update
    assert update["event"] == {"seq": 2, "event_id": "two", "kind": "progress", "message": "second"}


def test_a_kind_over_128_bytes_is_refused_with_a_clear_error() -> None:
    ProgressUpdate(event_id="e", kind="k" * 128)
    with pytest.raises(ValidationError, match="at most 128 bytes"):
        ProgressUpdate(event_id="e", kind="é" * 65)  # 130 bytes
    with pytest.raises(ValidationError, match="non-empty"):
        ProgressUpdate(event_id="e", kind="")
