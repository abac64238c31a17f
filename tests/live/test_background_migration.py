"""A tool that changes capability class across a worker restart keeps its tasks valid.

Version 1 of an app (`tests.live.migrate_worker`) launches a task, its worker is
SIGKILLed, and version 2, where the tool has the other class, serves on: the old task
finishes under the class it was launched with, a new call runs under the new one, and
every workflow of both versions replays against the Definitions that served it (the
task's workflow against either: it does not depend on the Definition).

Not a `test_live_*` module: the tool-call mapping only changes where the foreground
attempt runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient, TaskSnapshot
from scope_temporal.payloads import TaskInput
from scope_temporal.testing.replay import replay_history
from tests.live import migrate_worker
from tests.live.harness import CHECKED_BY_THEIR_TEST
from tests.live.test_live_worker_loss import address_of, lines, wait_for_line, worker_process

pytestmark = pytest.mark.live


async def task_of(client: Client, interaction_id: str) -> TaskSnapshot:
    """The final state of the Interaction's task (its own workflow's result)."""
    handle = client.get_workflow_handle(f"{interaction_id}/task/1/0")
    return TaskSnapshot.model_validate(await asyncio.wait_for(handle.result(), 60))


async def launched_recoverable(client: Client, interaction_id: str) -> bool:
    """Whether the task's launch (its workflow's input) recorded it as recoverable."""
    history = await client.get_workflow_handle(f"{interaction_id}/task/1/0").fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    launched = TaskInput.model_validate_json(started.input.payloads[0].data)
    return launched.launch.settings.recoverable


async def replays(client: Client, interaction_id: str, version: str) -> None:
    """The Interaction's tree replays against its version; its task against both."""
    CHECKED_BY_THEIR_TEST.add(interaction_id)
    both = ["1", "2"]
    for suffix, versions in (("", [version]), ("/tool/1/0", [version]), ("/task/1/0", both)):
        history = await client.get_workflow_handle(interaction_id + suffix).fetch_history()
        for served in versions:
            definitions = migrate_worker.VERSIONS[served][0]
            result = await replay_history(history, definitions)
            assert result.replay_failure is None, (interaction_id + suffix, served)


@dataclass
class Change:
    """What happened across the change: the old call's task and the new one's."""

    old: str
    """The id of the Interaction version 1 served."""
    new: str
    """The id of the Interaction the other version served."""
    old_task: TaskSnapshot
    new_task: TaskSnapshot
    done: list[str]
    """Every side effect recorded, in order."""


async def across_a_change(
    env: WorkflowEnvironment, tmp_path: Path, calls: tuple[str, str, str], version: str = "2"
) -> Change:
    """Version 1 runs the call `old` until `kill_after` is recorded (`calls` is `(old,
    kill_after, new)`), is SIGKILLed, and `version` serves on: the old task ends, then the
    call `new` runs to its task's end; both trees replay."""
    old, kill_after, new = calls
    queue, effects = f"migrate-{uuid.uuid4().hex[:8]}", tmp_path / "effects.txt"
    address, out = address_of(env), str(tmp_path / "out")
    run = partial(worker_process, address, queue, effects, module="tests.live.migrate_worker")
    scope = ScopeClient(env.client, task_queue=queue)
    with run(args=[out, "1"]) as first:
        before = await scope.start("migrate", old)
        await before.result()  # the model saw the launch_result and finished
        await wait_for_line(effects, kill_after)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    with run(args=[out, version]):
        old_task = await task_of(env.client, before.id)
        after = await scope.start("migrate", new)
        await after.result()
        new_task = await task_of(env.client, after.id)
    await replays(env.client, before.id, "1")
    await replays(env.client, after.id, version)
    return Change(before.id, after.id, old_task, new_task, lines(effects))


async def test_a_recoverable_task_recovers_under_its_retired_implementation_after_the_tool_became_plain(  # noqa: E501
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    change = await across_a_change(temporal_env, tmp_path, ("ledger", "step 3", "ledger now"))
    old, task, done = change.old, change.old_task, change.done
    assert (task.status, task.data) == ("completed", {"entries": 12})  # no AttributeError
    assert task.attempt >= 2 and await launched_recoverable(client, old)
    [recovered] = [line for line in done if line.startswith("recover ")]  # by version 1's code
    assert 1 <= int(recovered.split()[1]) <= 12
    assert done.count(f"start {old}/task/1/0") == 1 and done.count(f"done {old}/task/1/0") == 1
    assert f"plain ledger start {old}/task/1/0" not in done
    # the new call runs on the plain implementation, as a plain task
    fresh = change.new_task
    assert (fresh.status, fresh.data) == ("completed", {"entries": 2, "by": "plain"})
    assert not await launched_recoverable(client, change.new)
    assert done.count(f"plain ledger start {change.new}/task/1/0") == 1


async def test_a_plain_task_keeps_its_single_attempt_after_the_tool_became_recoverable(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    calls = ("fragile", "fragile start 1", "fragile now")
    change = await across_a_change(temporal_env, tmp_path, calls)
    task = change.old_task
    assert (task.status, task.code) == ("failed", "tool.background.lost")
    assert task.error is not None and "cannot be recovered" in task.error
    assert not await launched_recoverable(client, change.old)
    # never started or recovered again, by either version
    started = [line for line in change.done if line.startswith("fragile") or change.old in line]
    assert started == ["fragile start 1"]
    # the new call runs on the recoverable implementation, as a recoverable task
    fresh = change.new_task
    assert (fresh.status, fresh.data) == ("completed", {"name": "y", "by": "recoverable"})
    assert await launched_recoverable(client, change.new)
    assert change.done.count(f"recoverable fragile start {change.new}/task/1/0") == 1


async def test_without_the_retired_implementation_the_old_task_fails_saying_what_to_register(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    calls = ("ledger", "step 3", "ledger now")
    change = await across_a_change(temporal_env, tmp_path, calls, version="2-bare")
    task = change.old_task
    assert (task.status, task.code) == ("failed", "tool.background.unregistered")
    assert task.error is not None and "AttributeError" not in task.error
    assert "no recoverable implementation of background tool 'ledger'" in task.error
    assert "registers 'ledger' as plain" in task.error and ".retired()" in task.error
    recovered = [line for line in change.done if line.startswith("recover")]
    assert recovered == [] and change.new_task.status == "completed"
