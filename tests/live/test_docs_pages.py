"""The docs pages' server blocks run as a reader would run them, against a real server:
the project files written in order, each `worker*.py` (re)started in the background, every
other server block run to its end (the convention in tests/docs_blocks.py)."""

from __future__ import annotations

import asyncio
import os
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition
from scope_temporal.testing.replay import history_task_queue, replay_history
from tests.docs_blocks import REPO, blocks, file_of, pages, write_file
from tests.live.harness import CHECKED_BY_THEIR_TEST

PAGES = [page for page in pages() if any(b.mode == "server" for b in blocks(page))]


def finalizer_abort(done: subprocess.CompletedProcess[str]) -> bool:
    """The Temporal client's native threads outliving interpreter teardown, after the
    program did all it had to (temporalio/sdk-python#300, open): SIGABRT at exit with this
    signature, or SIGSEGV at exit with nothing on stderr (seen once in a full run: the
    page's program had printed all it prints). The program's output is still checked in
    full by the caller."""
    aborted = (
        done.returncode == -6
        and "PyGILState_Release" in done.stderr
        and ("Python runtime state: finalizing" in done.stderr)
    )
    return aborted or (done.returncode == -11 and not done.stderr.strip())


def replay(page: Path, folder: Path, address: str) -> dict[str, str]:
    """Replay `page` in `folder`; the stdout of each server program that ran to its end."""
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "PYTHONPATH": str(REPO)}
    outputs: dict[str, str] = {}
    worker: subprocess.Popen[str] | None = None
    try:
        for block in blocks(page):
            assert block.mode != "server" or file_of(block), f"{block.where}: name its file"
            if file_of(block) is None:
                continue
            path = write_file(block, folder)
            if block.mode != "server":
                continue
            if path.stem.startswith("worker"):
                if worker is not None:
                    worker.terminate()
                    worker.wait(timeout=30)
                worker = subprocess.Popen(
                    [sys.executable, path.name], cwd=folder, env=env, text=True,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                )  # fmt: skip
                continue
            done = subprocess.run(
                [sys.executable, path.name], cwd=folder, env=env, capture_output=True,
                text=True, timeout=90,
            )  # fmt: skip
            assert done.returncode == 0 or finalizer_abort(done), (
                f"{block.where}\n{done.stderr[-3000:]}"
            )
            outputs[path.name] = done.stdout
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
    return outputs


@contextmanager
def importable(folder: Path) -> Iterator[None]:
    """The page's folder on sys.path, and the modules imported from it forgotten after."""
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in set(sys.modules) - before:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(str(folder)):
                del sys.modules[name]


def definitions_of(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[Definition]:
    """Every Definition the page's files declare, as they stand at the end of the page
    (each program's `asyncio.run(main())` is not run: only its declarations are read)."""

    def declare_only(coroutine: Any) -> None:
        coroutine.close()

    found: dict[str, Definition] = {}
    with monkeypatch.context() as patch, importable(folder):
        patch.setattr(asyncio, "run", declare_only)
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("test_"):
                continue
            for value in runpy.run_path(str(path), run_name="docs_page_file").values():
                if isinstance(value, Definition):
                    found[value.name] = value
    return list(found.values())


async def replay_what_the_page_ran(
    env: WorkflowEnvironment, folder: Path, started_before: set[str], queues: set[str],
    definitions: list[Definition],
) -> int:  # fmt: skip
    """Replay every workflow the page's programs ran (on the page's task queues) with the
    page's own Definitions; the suite's replay test leaves them to this one."""
    replayed = 0
    async for execution in env.client.list_workflows():
        if execution.id in started_before or execution.task_queue not in queues:
            continue
        CHECKED_BY_THEIR_TEST.add(execution.id.split("/")[0])
        history = await env.client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).fetch_history()
        assert history_task_queue(history) in queues
        result = await replay_history(history, definitions)
        assert result.replay_failure is None, (execution.id, folder, result.replay_failure)
        replayed += 1
    return replayed


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
async def test_the_server_blocks_of_each_docs_page_run_as_written(
    page: Path, tmp_path: Path, temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {execution.id async for execution in temporal_env.client.list_workflows()}
    address = temporal_env.client.service_client.config.target_host
    outputs = await asyncio.to_thread(replay, page, tmp_path, address)
    queues = set(re.findall(r'task_queue="([^"]+)"', page.read_text()))
    definitions = definitions_of(tmp_path, monkeypatch)
    replayed = await replay_what_the_page_ran(temporal_env, tmp_path, before, queues, definitions)
    assert replayed >= 1, f"{page}: its programs ran no workflow on {sorted(queues)}"
    if page.name == "tutorial.md":
        assert outputs["host.py"].startswith("Order A-1 is shipped. (2 model calls, id helpdesk-")
        assert "asked: Allow refund_order" in outputs["approve.py"]
        assert outputs["approve.py"].rstrip().endswith("Order A-2 is refunded.")
        assert outputs["chat.py"].splitlines() == [
            "agent: Order A-1 is shipped.",
            "agent: Order A-2 is delayed at the warehouse.",
            "2 turns",
        ]
    if page.name == "worker.md":
        assert outputs["serve_and_stop.py"].splitlines() == ["hello", "again", "stopped"]
    if page.name == "handles.md":
        assert outputs["pause_resume.py"].splitlines() == ["paused", "done"]
