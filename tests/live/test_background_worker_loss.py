"""Background tasks survive, or fail cleanly on, the SIGKILL of their worker process.

Not a `test_live_*` module: the tool-call mapping only changes where the foreground
attempt runs, and these tests kill the worker during a background attempt.
"""

from __future__ import annotations

import os
import signal
import uuid
from functools import partial
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient, TaskSnapshot
from scope_temporal.client import InteractionHandle
from tests.live.harness import STARTED_IDS, eventually
from tests.live.test_live_worker_loss import address_of, lines, wait_for_line, worker_process

pytestmark = pytest.mark.live


async def the_task(handle: InteractionHandle) -> TaskSnapshot | None:
    tasks = (await handle.snapshot()).tasks
    return tasks[0] if tasks else None


async def task_after_kill(
    env: WorkflowEnvironment, tmp_path: Path, prompt: str, kill_after: str
) -> tuple[TaskSnapshot, list[str], str]:
    """Start an Interaction whose call moves to the background, SIGKILL its worker once
    `kill_after` is recorded, serve on with a fresh worker until the task ends; return the
    task, every recorded side effect and the task id."""
    task_queue = f"taskloss-{uuid.uuid4().hex[:8]}"
    effects = tmp_path / "effects.txt"
    worker = partial(
        worker_process,
        address_of(env),
        task_queue,
        effects,
        module="tests.live.task_loss_worker",
        args=[str(tmp_path / "out")],
    )
    scope = ScopeClient(env.client, task_queue=task_queue)
    with worker() as first:
        handle = await scope.start("task-loss", prompt)
        STARTED_IDS.append(handle.id)
        await handle.result()  # the model saw the launch_result and finished
        await wait_for_line(effects, kill_after)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    with worker():
        task = await eventually(
            lambda: the_task(handle), lambda t: t is not None and t.ended, timeout=40
        )
    assert task is not None
    return task, lines(effects), f"{handle.id}/task/1/0"


async def test_a_recoverable_task_recovers_from_its_checkpoint_after_its_worker_is_killed(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task, done, task_id = await task_after_kill(temporal_env, tmp_path, "ledger", "step 5")
    assert (task.status, task.data) == ("completed", {"entries": 12})
    assert task.progress.events == 12  # replayed updates were stored once
    assert done.count(f"start {task_id}") == 1  # the side effect happened once
    assert done.count(f"done {task_id}") == 1
    [recovered] = [line for line in done if line.startswith("recover")]
    step = int(recovered.split()[1])
    assert 1 <= step <= 5 and task.attempt >= 2
    # every step after the checkpoint ran again at most once; none before it
    assert [int(x.split()[1]) for x in done if x.startswith("step")][-(12 - step) :] == list(
        range(step + 1, 13)
    )


async def test_a_plain_task_fails_cleanly_when_its_worker_is_killed(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task, done, _ = await task_after_kill(temporal_env, tmp_path, "fragile", "fragile start 1")
    assert (task.status, task.code) == ("failed", "tool.background.lost")
    assert task.error is not None
    assert "HEARTBEAT" in task.error and "cannot be recovered" in task.error
    assert done == ["fragile start 1"]  # never started again
