"""Live: background failure semantics (a raising `start` fails the task once, never
retried by Temporal) and the operation timeout from the arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, LocalFileMaterializer, ScriptedModel
from tests.live.background_more import Flaky
from tests.live.background_tools import EVENTS, follow
from tests.live.harness import serving

pytestmark = pytest.mark.live

TOOLS = [Flaky]


async def run(env: WorkflowEnvironment, tmp_path: Path, plan: Any) -> tuple[str, list[Any]]:
    model = ScriptedModel(plan)
    async with serving(
        env,
        [Definition("bg", tools=TOOLS)],
        tools=TOOLS,
        models={"default": model},
        materializer=LocalFileMaterializer(tmp_path),
    ) as scope:
        handle = await scope.start("bg", "go")
        await handle.result()
    seen = [
        json.loads(r.messages[-1].tool_results[0].content)
        for r in model.requests
        if r.messages[-1].role == "tool"
    ]
    return f"{handle.id}/task/1/0", seen


async def test_a_raising_start_fails_the_task_once_without_a_temporal_retry(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_id, seen = await run(
        temporal_env, tmp_path, follow(("flaky", {"run_in_background": True}))
    )
    final = seen[-1]
    assert (final["status"], final["code"], final["attempt"]) == (
        "failed",
        "tool.execution_failed",
        1,
    )
    assert "the build farm refused the job" in final["error"]
    assert EVENTS[task_id] == ["start 1"]  # max_attempts=5, yet nothing ran again
    history = await temporal_env.client.get_workflow_handle(task_id).fetch_history()
    started = [e for e in history.events if e.HasField("activity_task_started_event_attributes")]
    assert [e.activity_task_started_event_attributes.attempt for e in started] == [1]


async def test_an_operation_timeout_from_the_arguments_stops_the_background_run(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_id, seen = await run(
        temporal_env, tmp_path, follow(("flaky", {"seconds": 30, "limit": 1.5}))
    )
    assert seen[0]["type"] == "launch_result"
    assert (seen[-1]["status"], seen[-1]["code"]) == ("failed", "tool.timeout")
    assert EVENTS[task_id] == ["start 0", "recover 1", "stopped"]
