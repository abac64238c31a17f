"""Declaring background tools, and their lifecycle through LocalRunner (no Temporal)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from scope_temporal import (
    Definition,
    DefinitionError,
    InvalidToolInput,
    Message,
    RunHandle,
    RunOutcome,
    RunProgress,
    ScriptedModel,
    TaskEnded,
    TaskNotFound,
    TaskRun,
    ToolFailure,
    background_tool,
    reply,
    tool,
)
from scope_temporal.background.task_tools import TASK_TOOLS
from scope_temporal.ids import task_id
from scope_temporal.interaction.effects import CallModel, ModelResponded, StartToolCall
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.testing import LocalRunner
from tests.live.background_tools import follow

LOG: list[str] = []


class Args(BaseModel):
    seconds: float = 0.0


def _sleeper(arguments: Args) -> TaskRun:
    async def work(progress: RunProgress) -> Any:
        progress.publish("begin", metadata={"message": "begun"})
        await asyncio.sleep(arguments.seconds)
        return {"slept": arguments.seconds}

    return TaskRun(work)


@background_tool(foreground_timeout=0.05)
class HandOff:
    """Sleep (hands its live run over)."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        LOG.append(f"start {attempt}")
        return _sleeper(arguments)

    async def adopt(self, task_id: str, arguments: Args, attempt: int, run: RunHandle) -> RunHandle:
        LOG.append(f"adopt {attempt}")
        return run


@background_tool(foreground_timeout=0.05)
class Recovering:
    """Sleep (recoverable: the same run while this process has it)."""

    runs: dict[str, RunHandle] = {}

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        LOG.append(f"start {attempt}")
        self.runs[task_id] = _sleeper(arguments)
        return self.runs[task_id]

    async def recover(
        self, task_id: str, arguments: Args, attempt: int, checkpoint: Any
    ) -> RunHandle:
        LOG.append(f"recover {attempt}")
        return self.runs[task_id]


@background_tool(foreground_timeout=0.05)
class Plain:
    """Sleep (neither hands over nor recovers)."""

    def prepare_input(self, arguments: Args) -> Args:
        return Args(seconds=min(arguments.seconds, 0.1))  # never sleep long

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        LOG.append(f"start {attempt}")
        return _sleeper(arguments)


@background_tool(foreground_timeout=0.05, auto_background=lambda a: a.seconds > 1)
class Picky:
    """Sleep (moves only runs longer than a second)."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        return _sleeper(arguments)

    async def adopt(self, task_id: str, arguments: Args, attempt: int, run: RunHandle) -> RunHandle:
        LOG.append("adopt")
        return run


AMOUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@background_tool(schema={"type": "object", "properties": {"who": {"type": "string"}}})
class Asker:
    """Ask, then act."""

    async def start(self, task_id: str, arguments: dict[str, Any], attempt: int) -> RunHandle:
        async def ask(progress: RunProgress) -> RunOutcome:
            return RunOutcome.waiting_input(f"how many for {arguments['who']}?", AMOUNT, {"who": 1})

        return TaskRun(ask)

    async def resume(
        self,
        task_id: str,
        arguments: dict[str, Any],
        attempt: int,
        request_id: str,
        data: Any,
        checkpoint: Any,
    ) -> RunHandle:
        if data["n"] < 0:
            raise ToolFailure("negative amounts are refused")
        LOG.append(f"resume {attempt} {request_id} {checkpoint}")

        async def act(progress: RunProgress) -> Any:
            return data["n"] * 2

        return TaskRun(act)


@background_tool()
class Failing:
    """Fail at once."""

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            raise ToolFailure("no space left")

        return TaskRun(work)


TOOLS = [HandOff, Recovering, Plain, Picky, Asker, Failing]


@pytest.fixture(autouse=True)
def clean_log() -> None:
    LOG.clear()


async def run(plan: Any) -> tuple[list[dict[str, Any]], Any]:
    """Run an Interaction; return every tool-result envelope the model saw, and the run."""
    model = ScriptedModel(plan)
    runner = LocalRunner(
        definitions=[Definition("bg", tools=TOOLS)], tools=TOOLS, models={"default": model}
    )
    handle = await runner.start("bg", [Message.user("go")])
    await handle.result(timeout=10)
    seen = [
        json.loads(m.tool_results[0].content)
        for r in model.requests
        for m in r.messages[-1:]
        if m.role == "tool"
    ]
    return seen, handle


def test_the_decorator_builds_the_spec_from_the_class_and_adds_run_in_background() -> None:
    spec = HandOff.spec
    assert (spec.name, spec.description) == ("hand_off", "Sleep (hands its live run over).")
    assert set(spec.parameters["properties"]) == {"seconds", "run_in_background"}
    assert spec.background is not None
    assert (spec.background.handoff, spec.background.recoverable) == (True, False)
    assert Recovering.spec.background.max_attempts == 5  # type: ignore[union-attr]
    assert Plain.spec.background.max_attempts == 1  # type: ignore[union-attr]
    assert Asker.spec.background.resumable  # type: ignore[union-attr]


def test_declarations_that_cannot_work_are_refused() -> None:
    with pytest.raises(DefinitionError, match="no start"):
        background_tool()(object())
    with pytest.raises(DefinitionError, match="only by a recoverable tool"):
        background_tool(max_attempts=3)(Plain.impl)
    with pytest.raises(DefinitionError, match="declare its arguments"):

        class Untyped:
            async def start(self, task_id: str, arguments: Any, attempt: int) -> RunHandle:
                raise NotImplementedError

        background_tool()(Untyped)
    with pytest.raises(DefinitionError, match="reserved"):
        background_tool(schema={"type": "object", "properties": {"run_in_background": {}}})(
            Asker.impl
        )


def test_a_definition_binding_a_background_tool_binds_the_task_tools_once() -> None:
    definition = Definition("bg", tools=[Plain])
    assert [s.name for s in definition.tools.tools] == [
        "plain",
        "task_status",
        "task_output",
        "task_cancel",
    ]
    assert Definition("bg", tools=definition.tools).digest == definition.digest
    assert Definition("x", tools=[TASK_TOOLS[0]]).tools.names == ("task_status",)

    @tool
    def task_status() -> str:
        """Mine."""
        return ""

    with pytest.raises(DefinitionError, match="reserved for the task tools"):
        Definition("bg", tools=[Plain, task_status])


def test_specs_without_background_keep_their_declaration() -> None:
    @tool
    def plain() -> str:
        """Plain."""
        return ""

    assert "background" not in plain.spec.declaration()
    assert plain.spec.declaration() == {  # routing (task_queue) is never in a digest
        k: v
        for k, v in plain.spec.model_dump(mode="json").items()
        if k not in ("background", "task_queue")
    }


async def test_a_call_that_ends_in_time_returns_a_foreground_result() -> None:
    seen, _ = await run(follow(("hand_off", {"seconds": 0})))
    assert seen == [
        {
            "type": "foreground_result",
            "tool": "hand_off",
            "status": "completed",
            "data": {"slept": 0},
        }
    ]
    assert LOG == ["start 0"]


async def test_a_handoff_tool_moves_its_live_run_and_the_task_adopts_it() -> None:
    seen, handle = await run(follow(("hand_off", {"seconds": 0.2})))
    launch, final = seen
    assert launch["type"] == "launch_result" and launch["task_id"] == f"{handle.id}/task/1/0"
    assert launch["progress"] == {"events": 1, "last": "begun"}
    assert (final["status"], final["data"], final["events"][0]["event_id"]) == (
        "completed",
        {"slept": 0.2},
        "begin",
    )
    assert LOG == ["start 0", "adopt 1"]
    [task] = handle.snapshot().tasks
    assert (task.status, task.progress.events) == ("completed", 1)


async def test_a_recoverable_tool_moves_by_recovering_the_same_run() -> None:
    seen, _ = await run(follow(("recovering", {"seconds": 0.2})))
    assert [e["type"] for e in seen] == ["launch_result", "output"]
    assert seen[1]["status"] == "completed"
    assert LOG == ["start 0", "recover 1"]


async def test_a_tool_that_can_neither_hand_over_nor_recover_stays_in_the_foreground() -> None:
    seen, _ = await run(follow(("plain", {"seconds": 0.2})))
    assert seen == [
        {
            "type": "foreground_result",
            "tool": "plain",
            "status": "completed",
            "data": {"slept": 0.1},
        }
    ]


async def test_explicit_false_and_the_auto_background_policy_keep_a_run_in_the_foreground() -> None:
    seen, _ = await run(follow(("hand_off", {"seconds": 0.2, "run_in_background": False})))
    assert seen[0]["type"] == "foreground_result"
    LOG.clear()
    seen, _ = await run(follow(("picky", {"seconds": 0.2})))
    assert seen[0]["type"] == "foreground_result" and LOG == []


async def test_prepare_input_rewrites_the_arguments_the_task_runs_with() -> None:
    seen, _ = await run(follow(("plain", {"seconds": 99, "run_in_background": True})))
    assert (seen[-1]["status"], seen[-1]["data"]) == ("completed", {"slept": 0.1})


async def test_run_in_background_starts_the_task_directly() -> None:
    seen, _ = await run(follow(("plain", {"seconds": 0, "run_in_background": True})))
    assert seen[0]["type"] == "launch_result" and seen[1]["status"] == "completed"
    assert LOG == ["start 1"]


async def test_a_failure_within_the_foreground_is_a_model_visible_error() -> None:
    seen, handle = await run(follow(("failing", {})))
    assert seen == [
        {
            "type": "foreground_result",
            "tool": "failing",
            "status": "failed",
            "error": "no space left",
        }
    ]
    [entry] = handle.snapshot().settled_results[0].entries
    assert entry.disposition == "failed"


async def test_a_question_moves_the_call_to_the_background_and_resume_answers_it() -> None:
    seen, handle = await run(follow(("asker", {"who": "ann"})))
    launch, update = seen
    assert (launch["status"], launch["question"]) == ("waiting_input", "how many for ann?")
    assert update["status"] == "waiting_input"
    [pending] = handle.snapshot().pending_tool_inputs
    with pytest.raises(InvalidToolInput, match="negative amounts are refused"):
        await handle.answer(pending, "a1", {"n": -1})
    assert LOG == []
    assert await handle.answer(pending, "a2", {"n": 4}) is True
    await handle.idle()
    [task] = handle.snapshot().tasks
    assert (task.status, task.data) == ("completed", 8)
    assert LOG == ["resume 2 a2 {'who': 1}"]


async def test_the_task_tools_reach_only_this_interactions_tasks() -> None:
    seen, handle = await run(follow(("task_status", {"task_id": "someone-else/task/1/0"})))
    [envelope] = seen
    assert (envelope["type"], envelope["status"]) == ("update", "not_found")
    assert handle.snapshot().settled_results[0].entries[0].disposition == "failed"


async def test_a_host_cancels_a_task_once() -> None:
    plan = [
        reply.tool_calls(("hand_off", {"seconds": 30, "run_in_background": True})),
        reply.text("started"),
    ]
    seen, handle = await run(plan)
    assert seen[0]["type"] == "launch_result"  # the Interaction ended; the task goes on
    [task] = handle.snapshot().tasks
    assert task.status == "running"
    assert (await handle.cancel_task(task.task_id, "not needed")).cancel_requested
    await handle.idle()
    [task] = handle.snapshot().tasks
    assert (task.status, task.error) == ("canceled", "not needed")
    with pytest.raises(TaskEnded):
        await handle.cancel_task(task.task_id)
    with pytest.raises(TaskNotFound):
        await handle.cancel_task("nope/task/1/0")


def test_cancelling_reaches_a_task_its_call_may_be_launching_before_it_reports() -> None:
    definition = Definition("launcher", tools=[Plain])
    machine = InteractionMachine.start(definition, "root", [Message.user("go")])
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    response = reply.tool_calls(("plain", {"seconds": 5}))
    machine.on_model(ModelResponded(effect_id=call.request.effect_id, response=response))
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall)
    assert machine.background_tasks == ()  # the call has not reported a launch yet
    assert machine.tasks_to_cancel == (task_id(start.request.effect_id),)
