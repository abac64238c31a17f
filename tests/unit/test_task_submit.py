"""Host submit, the pure decision (`interaction.submits`): what a submission does to an
Interaction, and every refusal leaves its state exactly as it was."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from scope_temporal import (
    Definition,
    InvalidTaskSubmission,
    Message,
    ModelRequest,
    Response,
    RunHandle,
    ScriptedModel,
    TaskRun,
    TaskSubmissionConflict,
    background_tool,
    reply,
    tool,
)
from scope_temporal.interaction import submits
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.testing import LocalRunner


class ExportArgs(BaseModel):
    dataset: str


@background_tool(permission="write")
class Export:
    """Export a dataset."""

    def validate_arguments(self, arguments: ExportArgs) -> None:
        if not arguments.dataset:
            raise ValueError("dataset must not be empty")

    async def start(self, task_id: str, arguments: ExportArgs, attempt: int) -> RunHandle:
        async def work(progress: object) -> str:
            return arguments.dataset

        return TaskRun(work)


@tool(permission="read")
def lookup(item: str) -> str:
    """Look an item up."""
    return item


def machine(*, capabilities: tuple[str, ...] | None = None) -> InteractionMachine:
    definition = Definition("submit", tools=[Export, lookup])
    return InteractionMachine.start(
        definition, "root", [Message.user("go")], capabilities=capabilities
    )


def decide(m: InteractionMachine, key: str, tool: str, arguments: object) -> object:
    return submits.decide(m.definition, m.state, key, tool, arguments, ended=m.done)


def test_a_new_key_launches_the_tool_as_a_background_call_of_the_interaction() -> None:
    m = machine()
    decision = decide(m, "nightly", "export", {"dataset": "sales"})
    assert isinstance(decision, submits.Launch)
    assert decision.task.task_id == "root/task/submit/nightly"
    request = decision.request
    assert request.effect_id == "root/call/submit/nightly"  # its task id derives from it
    assert request.call.name == "export"
    assert request.call.arguments == '{"dataset":"sales","run_in_background":true}'
    assert request.granted == m.state.granted
    assert m.background_tasks == ()  # deciding records nothing


def test_the_same_key_and_arguments_again_start_nothing_other_arguments_conflict() -> None:
    m = machine()
    decision = decide(m, "nightly", "export", {"dataset": "sales"})
    assert isinstance(decision, submits.Launch)
    m.record_submitted(decision.task)
    assert m.background_tasks == ("root/task/submit/nightly",)
    again = decide(m, "nightly", "export", {"dataset": "sales"})
    assert again == submits.Existing(task_id="root/task/submit/nightly")
    before = m.state.model_dump_json()
    with pytest.raises(TaskSubmissionConflict, match="use a new key"):
        decide(m, "nightly", "export", {"dataset": "other"})
    assert m.state.model_dump_json() == before


@pytest.mark.parametrize(
    ("key", "tool", "arguments", "says"),
    [
        ("k", "missing", {}, "is not a tool of Definition 'submit'; its background tools: export"),
        ("k", "lookup", {"item": "a"}, "is not a background tool"),
        ("k", "export", ["sales"], "must be a JSON object"),
        ("k", "export", {"dataset": "s", "run_in_background": False}, "is reserved"),
        ("", "export", {"dataset": "s"}, "task key ''"),
        ("a/b", "export", {"dataset": "s"}, "task key 'a/b'"),
        ("k" * 129, "export", {"dataset": "s"}, "1-128"),
    ],
)
def test_bad_submissions_are_typed_errors_that_change_nothing(
    key: str, tool: str, arguments: object, says: str
) -> None:
    m = machine()
    before = m.state.model_dump_json()
    with pytest.raises(InvalidTaskSubmission, match=says.replace("(", r"\(")):
        decide(m, key, tool, arguments)
    assert m.state.model_dump_json() == before


def test_a_tool_needing_a_permission_the_interaction_lacks_is_refused() -> None:
    m = machine(capabilities=("read",))
    with pytest.raises(InvalidTaskSubmission, match="needs permission 'write'"):
        decide(m, "k", "export", {"dataset": "s"})


def test_an_ended_interaction_takes_no_submission() -> None:
    m = machine()
    m.cancel()
    with pytest.raises(InvalidTaskSubmission, match="has ended"):
        decide(m, "k", "export", {"dataset": "s"})


def test_submitted_tasks_survive_continue_as_new_and_are_cancelled_with_it() -> None:
    m = machine()
    decision = decide(m, "nightly", "export", {"dataset": "sales"})
    assert isinstance(decision, submits.Launch)
    m.record_submitted(decision.task)
    m.record_submitted(decision.task)  # recorded once
    carried = InteractionMachine(
        m.definition, type(m.state).model_validate_json(m.state.model_dump_json())
    )
    assert carried.background_tasks == ("root/task/submit/nightly",)
    assert "root/task/submit/nightly" in carried.tasks_to_cancel
    assert carried.snapshot().background_tasks == ("root/task/submit/nightly",)


async def test_local_runner_submit_task_runs_the_task_and_the_model_is_told() -> None:
    def plan(request: ModelRequest) -> Response:
        last = request.messages[-1]
        if last.role == "user" and "task_notification" in (last.text or ""):
            return reply.text(f"told: {json.loads(last.text)['data']}")
        return reply.text("nothing yet")

    model = ScriptedModel(plan)
    runner = LocalRunner(
        definitions=[Definition("submit", tools=[Export])],
        tools=[Export],
        models={"default": model},
    )
    handle = await runner.start("submit", [Message.user("go")])
    await handle.pause()  # keep it running (at its first model call) while the task runs
    task_id = await handle.submit_task("export", {"dataset": "sales"}, key="k")
    assert task_id == f"{handle.id}/task/submit/k"
    assert await handle.submit_task("export", {"dataset": "sales"}, key="k") == task_id
    with pytest.raises(InvalidTaskSubmission, match="dataset must not be empty"):
        await handle.submit_task("export", {"dataset": ""}, key="empty")
    assert [t.task_id for t in handle.snapshot().tasks] == [task_id]
    for _ in range(100):
        if handle.snapshot().tasks[0].status == "completed":
            break
        await asyncio.sleep(0.05)
    await handle.resume()
    output = await handle.result(timeout=10)
    assert output.text == "told: sales"
