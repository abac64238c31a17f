"""`scope-temporal replay-check` as CI runs it before a deploy: a run recorded with one
version of an app replays against that version (exit 0) and diverges, named, against the
next version whose completion validator changed (exit 1); a selection matching nothing
says what to check (exit 3).

Each version of the app is a folder holding `deploy_app.py`, as each checkout would; the
payloads are encrypted and the CLI decodes them with the app's own `data_converter`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from scope_temporal import LocalFileMaterializer, ScopeClient, ScopeWorker, TreeSnapshot
from scope_temporal.cli.replay_check import DIVERGED, NOTHING_MATCHED
from tests.live import codec_app, deploy_app
from tests.live.harness import CONVERTER_BY_QUEUE, eventually

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]


def app_version(folder: Path, *, changed_validator: bool = False, build: str = "v1") -> Path:
    """A folder holding this version of the app as `deploy_app.py`."""
    text = Path(deploy_app.__file__).read_text()
    if changed_validator:
        old, new = deploy_app.CHANGED_VALIDATOR
        assert old in text
        text = text.replace(old, new, 1)
    text = text.replace('BUILD = "v1"', f"BUILD = {build!r}", 1)
    folder.mkdir(parents=True)
    (folder / "deploy_app.py").write_text(text)
    return folder


def import_app(folder: Path) -> ModuleType:
    """Import a version of the app as `deploy_app` (the name every version has)."""
    spec = importlib.util.spec_from_file_location("deploy_app", folder / "deploy_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["deploy_app"] = module
    spec.loader.exec_module(module)
    return module


def encrypted(client: Client) -> Client:
    config = client.config()
    config["data_converter"] = codec_app.data_converter
    return Client(**config)


def cli_env(client: Client) -> dict[str, str]:
    """The app folder is the working directory; the repo root holds its `tests.live`."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
    }


async def replay_check(
    client: Client, folder: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "scope_temporal.cli", "replay-check", "--app", "deploy_app"]
    return await asyncio.to_thread(
        subprocess.run,
        [*command, *args],
        cwd=folder,
        env=cli_env(client),
        capture_output=True,
        text=True,
        timeout=120,
    )


def waits_with_the_rest_done(snap: TreeSnapshot) -> bool:
    """The approval waits; the delegate and the background task are done."""
    tasks_done = bool(snap.tasks) and all(t.status == "completed" for t in snap.tasks)
    return bool(snap.pending_tool_inputs) and not snap.active_delegates and tasks_done


async def tree_size(client: Client, root_id: str) -> int:
    return len([e async for e in client.list_workflows(f"RootWorkflowId = '{root_id}'")])


async def test_replay_check_passes_the_same_code_and_names_the_run_a_changed_validator_breaks(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    v1 = app_version(tmp_path / "v1")
    v2 = app_version(tmp_path / "v2", changed_validator=True)
    app = import_app(v1)
    client = encrypted(temporal_env.client)
    task_queue = f"deploy-{uuid.uuid4().hex[:10]}"
    CONVERTER_BY_QUEUE[task_queue] = codec_app.data_converter
    worker = ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=app.definitions,
        tools=app.tools,
        models=app.build_models(),
        materializer=LocalFileMaterializer(tempfile.mkdtemp(prefix="tasks-")),
    )
    async with worker:
        scope = ScopeClient(client, task_queue=task_queue)
        handle = await scope.start(
            "deploy-agent", "ship web-42", id=f"deploy-{uuid.uuid4().hex[:8]}"
        )
        snap = await eventually(handle.snapshot, waits_with_the_rest_done, timeout=60)
        # the root, its two ToolCalls (the approval, the one that launched the task), the
        # delegate and its ToolCall, the background task
        await eventually(lambda: tree_size(client, handle.id), lambda n: n >= 6)

        same = await replay_check(client, v1, "--task-queue", task_queue)
        assert same.returncode == 0, same.stdout + same.stderr
        lines = same.stdout.splitlines()
        assert lines[0].startswith("replaying 6 workflow run(s) against deploy_app")
        kinds = {line.split()[0]: line for line in lines[1:-1]}
        assert set(kinds) == {
            handle.id,
            f"{handle.id}/tool/1/0",
            f"{handle.id}/tool/1/2",
            f"{handle.id}/delegate/1/1",
            f"{handle.id}/delegate/1/1/tool/1/0",
            snap.tasks[0].task_id,
        }
        assert "scope.Interaction (deploy-agent)" in kinds[handle.id]
        assert "scope.BackgroundTask" in kinds[snap.tasks[0].task_id]
        assert all(line.endswith("  ok") for line in kinds.values())
        assert lines[-1] == "all 6 run(s) replay"

        changed = await replay_check(
            client, v2, "--definition", "deploy-agent", "--task-queue", task_queue
        )
        assert changed.returncode == DIVERGED, changed.stdout + changed.stderr
        [root_line] = [
            line for line in changed.stdout.splitlines() if line.startswith(f"{handle.id} ")
        ]
        assert "running" in root_line
        assert (
            "DIVERGED: The replay ended the workflow with interaction.definition.changed: "
            "Definition 'deploy-agent' changed while this Interaction ran" in root_line
        )
        # the delegate's Definition did not change, nor did any ToolCall or the task
        assert changed.stdout.count("DIVERGED") == 1
        assert (
            "1 of 6 run(s) would diverge under this code or could not be checked" in changed.stderr
        )

        # without the app's codec (a plain converter given instead): not checked, and why
        blind = await replay_check(
            client,
            v1,
            "--task-queue",
            task_queue,
            "--data-converter",
            "temporalio.converter:DataConverter",
        )
        assert blind.returncode == DIVERGED
        runs = blind.stdout.splitlines()[1:]
        assert len(runs) == 6
        assert all(
            "NOT CHECKED: the Interaction's payloads are encoded with a codec" in line
            for line in runs
        )
        assert "Traceback" not in blind.stdout + blind.stderr  # the replayer's logs stay quiet
        assert "WARN" not in blind.stdout + blind.stderr
        [pending] = snap.pending_tool_inputs
        await handle.answer(pending, "a1", {"ok": True})
        output = await handle.result()
        assert "web-42 deployed by v1" in output.model_response.message.text  # type: ignore[union-attr]

    # finished: nothing runs any more, so a deploy of v2 would not touch it
    await eventually(lambda: _running(client, handle.id), lambda n: n == 0)
    done = await replay_check(client, v2, "--task-queue", task_queue, "--running")
    assert done.returncode == NOTHING_MATCHED, done.stdout + done.stderr


async def _running(client: Client, root_id: str) -> int:
    query = f"RootWorkflowId = '{root_id}' AND ExecutionStatus = 'Running'"
    return len([e async for e in client.list_workflows(query)])


async def test_replay_check_of_a_selection_matching_nothing_says_what_to_check(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    folder = app_version(tmp_path / "v1")
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    done = await replay_check(temporal_env.client, folder, "--definition", nobody, "--limit", "5")
    assert done.returncode == NOTHING_MATCHED
    assert done.stdout == ""
    assert "no Interaction matches" in done.stderr
    assert f"ScopeDefinition IN ('{nobody}')" in done.stderr
    assert "nothing was checked" in done.stderr
    assert "--definition" in done.stderr and "scope-temporal list" in done.stderr
