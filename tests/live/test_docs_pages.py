"""The docs pages' server blocks run as a reader would run them, against a real server:
the project files written in order, each `worker*.py` (re)started in the background, every
other server block run to its end (the convention in tests/docs_blocks.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.docs_blocks import REPO, blocks, file_of, pages, write_file

PAGES = [page for page in pages() if any(b.mode == "server" for b in blocks(page))]


def finalizer_abort(done: subprocess.CompletedProcess[str]) -> bool:
    """The Temporal client's native threads outliving interpreter teardown, after the
    program did all it had to (temporalio/sdk-python#300, open): SIGABRT at exit with this
    signature only. The program's output is still checked in full by the caller."""
    return (
        done.returncode == -6
        and "PyGILState_Release" in done.stderr
        and ("Python runtime state: finalizing" in done.stderr)
    )


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


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_server_blocks_of_each_docs_page_run_as_written(
    page: Path, tmp_path: Path, temporal_env: WorkflowEnvironment
) -> None:
    outputs = replay(page, tmp_path, temporal_env.client.service_client.config.target_host)
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
