"""Host submit, live: `InteractionHandle.submit_task` starts a registered background tool
as a task of a running Interaction, validated as a model's call of it; the same key again
starts nothing; bad input is a typed error and starts nothing; the Interaction sees the
task (snapshot, notification)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    InteractionNotFound,
    InvalidTaskSubmission,
    ModelRequest,
    Response,
    TaskSubmissionConflict,
    reply,
)
from scope_temporal.tasks import TemporalTaskAccess
from tests.live.background_tools import EVENTS, RELEASE, follow
from tests.live.harness import eventually
from tests.live.test_live_background import started

pytestmark = pytest.mark.live


async def test_submit_task_starts_once_refuses_bad_input_and_the_interaction_is_told(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with started(temporal_env, tmp_path, plan) as (handle, model):
        held = f"{handle.id}/task/1/0"
        await eventually(lambda: _events(held), lambda e: "run" in e, timeout=30)

        task_id = await handle.submit_task("job", {"steps": 2}, key="k1")
        assert task_id == f"{handle.id}/task/submit/k1"
        assert await handle.submit_task("job", {"steps": 2}, key="k1") == task_id
        with pytest.raises(TaskSubmissionConflict):
            await handle.submit_task("job", {"steps": 3}, key="k1")
        with pytest.raises(InvalidTaskSubmission, match="is not a tool of"):
            await handle.submit_task("nope", {}, key="k2")
        with pytest.raises(InvalidTaskSubmission, match="who is paid must not be empty"):
            await handle.submit_task("payment", {"to": ""}, key="k3")
        with pytest.raises(InvalidTaskSubmission, match="refused the arguments"):
            await handle.submit_task("job", {"steps": "many"}, key="k4")
        access = TemporalTaskAccess(handle.scope.client)
        for refused in ("k2", "k3", "k4"):
            assert await access.snapshot(f"{handle.id}/task/submit/{refused}") is None

        await eventually(lambda: _events(task_id), lambda e: "done" in e, timeout=30)
        assert EVENTS[task_id] == ["start 1", "run", "done"]  # started once
        tree = await handle.snapshot()
        assert task_id in tree.root.background_tasks
        assert tree.process(task_id).status == "completed"

        RELEASE[held].set()
        await handle.result()
        told = [
            json.loads(m.text)
            for request in model.requests
            for m in request.messages
            if m.role == "user" and m.text and "task_notification" in m.text
        ]
        assert any(n["task_id"] == task_id and n["status"] == "completed" for n in told), told
        with pytest.raises(InteractionNotFound):  # ended: nothing to submit to
            await handle.submit_task("job", {"steps": 1}, key="late")


def plan(request: ModelRequest) -> Response:
    """Hold the Interaction open with a held job followed by task_output; answer a
    notification (the submitted task's) with a reply."""
    last = request.messages[-1]
    if last.role == "user" and "task_notification" in (last.text or ""):
        return reply.text("noted")
    response: Response = follow(("job", {"steps": 1, "hold": True}))(request)
    return response


async def _events(task_id: str) -> list[str]:
    return list(EVENTS[task_id])
