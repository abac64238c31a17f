"""Failure semantics of background attempts: the tool's own exception fails the task once
(never retried); an operation timeout from the arguments bounds every attempt."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel

from scope_temporal import (
    Definition,
    Message,
    RunHandle,
    RunOutcome,
    RunProgress,
    ScriptedModel,
    TaskRun,
    background_tool,
)
from scope_temporal.background.attempts import run_attempt
from scope_temporal.background.materializer import LocalFileMaterializer
from scope_temporal.background.runtime import BackgroundRuntime, LiveRuns
from scope_temporal.interaction.task_values import AttemptPlan
from scope_temporal.payloads import HeartbeatState
from scope_temporal.testing import LocalRunner
from tests.live.background_tools import follow

CALLS: list[str] = []


class Args(BaseModel):
    seconds: float = 0.0
    limit: float | None = None


@background_tool(foreground_timeout=0.05, max_attempts=3)
class Exploding:
    """Raise from start in the background (recoverable, so Temporal could retry it)."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        CALLS.append(f"start {attempt}")
        raise RuntimeError("disk on fire")

    async def recover(
        self, task_id: str, arguments: Args, attempt: int, checkpoint: Any
    ) -> RunHandle:
        CALLS.append(f"recover {attempt}")
        raise RuntimeError("never called")


class _Vanishing(RunHandle):
    """A handle whose wait() raises (not a TaskRun, which turns exceptions into outcomes)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def wait(self) -> RunOutcome:
        await asyncio.sleep(self.seconds)
        raise OSError("the remote job vanished")

    async def stop(self) -> None:
        return None


@background_tool(foreground_timeout=0.05)
class Crashing:
    """A run whose wait() raises."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        return _Vanishing(arguments.seconds)

    async def adopt(self, task_id: str, arguments: Args, attempt: int, run: RunHandle) -> RunHandle:
        return run


@background_tool(foreground_timeout=0.2)
class Bounded:
    """Sleep, at most `limit` seconds in all (operation_timeout from the arguments)."""

    def operation_timeout(self, arguments: Args) -> float | None:
        return arguments.limit

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            try:
                await asyncio.sleep(arguments.seconds)
            except asyncio.CancelledError:
                CALLS.append("stopped")
                raise
            return "slept"

        return TaskRun(work)

    async def adopt(self, task_id: str, arguments: Args, attempt: int, run: RunHandle) -> RunHandle:
        return run


TOOLS = [Exploding, Crashing, Bounded]


async def run(plan: Any) -> list[dict[str, Any]]:
    model = ScriptedModel(plan)
    runner = LocalRunner(
        definitions=[Definition("bg", tools=TOOLS)], tools=TOOLS, models={"default": model}
    )
    handle = await runner.start("bg", [Message.user("go")])
    await handle.result(timeout=10)
    return [
        json.loads(m.tool_results[0].content)
        for r in model.requests
        for m in r.messages[-1:]
        if m.role == "tool"
    ]


async def test_an_exception_from_start_in_the_background_fails_the_task_once() -> None:
    CALLS.clear()
    seen = await run(follow(("exploding", {"run_in_background": True})))
    final = seen[-1]
    assert (final["status"], final["code"]) == ("failed", "tool.execution_failed")
    assert "start raised RuntimeError: disk on fire" in final["error"]
    assert "not retried" in final["error"]
    assert CALLS == ["start 1"]


async def test_an_exception_from_the_runs_wait_fails_the_task(tmp_path: Any) -> None:
    seen = await run(follow(("crashing", {"seconds": 0.2})))
    assert seen[0]["type"] == "launch_result"
    assert seen[-1]["status"] == "failed"
    assert "wait raised OSError: the remote job vanished" in seen[-1]["error"]


async def test_run_attempt_reports_a_raising_recover_as_a_failure_not_an_exception(
    tmp_path: Any,
) -> None:
    CALLS.clear()
    plan = AttemptPlan(
        task_id="i/task/1/0",
        tool="exploding",
        arguments="{}",
        mode="start",
        attempt=2,
        max_attempts=3,
    )
    report = await run_attempt(
        Exploding,
        plan,
        attempt=2,
        previous=HeartbeatState(checkpoint={"at": 1}),  # a retry after a lost worker
        runtime=BackgroundRuntime(LocalFileMaterializer(tmp_path), LiveRuns(), None),
        beat=lambda state: None,
        tell=_tell,
        heartbeat_every=1,
        stop_on_cancel=lambda: True,
    )
    assert report.outcome is not None and report.outcome.status == "failed"
    assert report.outcome.error is not None and report.outcome.error.startswith("recover raised")
    assert CALLS == ["recover 2"]


async def _tell(progress: Any, resumed: str | None) -> None:
    return None


async def test_an_operation_timeout_from_the_arguments_stops_a_foreground_run() -> None:
    CALLS.clear()
    seen = await run(follow(("bounded", {"seconds": 5, "limit": 0.1})))
    [result] = seen
    assert (result["type"], result["status"]) == ("foreground_result", "failed")
    assert "reached its timeout" in result["error"] and CALLS == ["stopped"]


async def test_an_operation_timeout_follows_the_task_into_the_background() -> None:
    CALLS.clear()
    seen = await run(follow(("bounded", {"seconds": 5, "limit": 0.6})))
    assert seen[0]["type"] == "launch_result"
    assert (seen[-1]["status"], seen[-1]["code"]) == ("failed", "tool.timeout")
    assert CALLS == ["stopped"]


async def test_without_an_operation_timeout_the_run_ends_normally() -> None:
    seen = await run(follow(("bounded", {"seconds": 0.4})))
    assert (seen[-1]["status"], seen[-1]["data"]) == ("completed", "slept")
