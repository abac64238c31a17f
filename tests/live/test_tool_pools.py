"""Workers by role: a tool routed with `@tool(task_queue=...)` runs on the pool of that
queue (a second worker process, `--role activities`) and nowhere else; with the pool
down, its call is unknown after its timeout and runs nowhere."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeWorker
from tests.live import routed_app
from tests.live.harness import RecordingClient, eventually
from tests.live.test_cli_dev import Proc
from tests.live.test_replay_check import cli_env

pytestmark = pytest.mark.live


def pool(env: WorkflowEnvironment, home: Path) -> Proc:
    """`scope-temporal worker --role activities` on the tools' queue, as its own process."""
    args = ["worker", "--app", "tests.live.routed_app", "--role", "activities"]
    proc = Proc([*args, "--task-queue", routed_app.POOL], env=cli_env(env.client), cwd=home)
    proc.wait_for("ready; Ctrl-C to stop", timeout=60)
    return proc


async def test_a_routed_tool_runs_only_on_its_pool_and_is_unknown_while_it_is_down(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    queue = f"tq-{uuid.uuid4().hex[:10]}"
    routed_app.RAN.clear()
    worker = ScopeWorker(
        client,
        task_queue=queue,
        definitions=routed_app.definitions,
        tools=routed_app.tools,
        models=routed_app.models,
    )
    definitions = ("router", "router-on-demand")  # a ToolCall child; the Interaction's own
    async with worker:
        assert worker.tool_queues == {routed_app.POOL: ("where",)}
        [warning] = worker.warnings  # nobody serves the pool yet: says what to do
        assert "no worker serves task queue 'tool-pool'" in warning
        assert "scope-temporal worker --role activities --task-queue tool-pool" in warning
        scope = RecordingClient(client, task_queue=queue)

        # the pool is down: each call waits its timeout (3 s), then is unknown
        for definition in definitions:
            handle = await scope.start(definition, "where?")
            snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects), timeout=30)
            [unknown] = snap.unknown_effects
            assert "SCHEDULE_TO_START" in unknown.diagnostic
            assert "task queue 'tool-pool'" in unknown.diagnostic
            await handle.cancel()
        assert routed_app.RAN == ["here", "here"]  # `where` never ran on this worker

        proc = pool(temporal_env, tmp_path)
        try:
            assert "(activities only)" in proc.output
            outputs = [await (await scope.start(d, "where?")).result() for d in definitions]
        finally:
            assert proc.stop() == 0
    expected = f"where ran in {proc.process.pid}; here ran in {os.getpid()}"
    assert [out.text for out in outputs] == [expected, expected]
    assert routed_app.RAN == ["here"] * 4  # `where` ran on the pool only


def test_an_unknown_role_is_refused_before_anything_starts(tmp_path: Path) -> None:
    proc = Proc(["worker", "--role", "tools"], env=cli_env_offline(), cwd=tmp_path)
    assert proc.wait() == 2
    assert "Invalid value for '--role': 'tools' is not one of" in proc.output
    assert "'all', 'workflows', 'activities'" in proc.output


def cli_env_offline() -> dict[str, str]:
    return {**os.environ, "TEMPORAL_ADDRESS": "localhost:1"}
