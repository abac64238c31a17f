"""Server restart: the Temporal server (a dev server on its own SQLite file and port) is
stopped mid-interaction and started again on the same file and port; the worker process
and the client reconnect by themselves, the Interaction completes with the expected
output and the ledger shows every side effect exactly once. Every history of that
server then replays.

By default the server stops while a tool waits for input (nothing in flight); with
--full also while round 1's tool calls are running.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.client import Client

from scope_temporal import ScopeClient, TreeSnapshot
from scope_temporal.cli.dev import dev_server_command, wait_for_port
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.testing.replay import replay_history
from tests.faults import figures, scenario
from tests.faults.host import HostLog, WorkerProcess, audit, cleanup, drive
from tests.live.harness import in_mode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class DevServer:
    """A dev server process on a SQLite file, stopped and started by pid."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.port = free_port()
        self.ui_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        command = dev_server_command(port=self.port, ui_port=self.ui_port, db=self.db)
        self.process = subprocess.Popen(
            [*command, "--log-level", "error"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_for_port("127.0.0.1", self.port, timeout=60, process=self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def dev_server(db: Path) -> Iterator[DevServer]:
    server = DevServer(db)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def _replay_all(client: Client, mode: ToolCallWorkflows) -> int:
    definitions = [in_mode(d, mode) for d in scenario.DEFINITIONS]
    replayed = 0
    async for execution in client.list_workflows():
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        result = await replay_history(await handle.fetch_history(), definitions)
        assert result.replay_failure is None, (execution.id, result.replay_failure)
        replayed += 1
    return replayed


async def run_with_restart(tmp_path: Path, mode: ToolCallWorkflows, *, mid_flight: bool) -> None:
    ledger = tmp_path / "ledger.jsonl"
    queue = f"restart-{uuid.uuid4().hex[:8]}"
    restarts: list[str] = []
    with dev_server(tmp_path / "temporal.db") as server:
        client = await Client.connect(server.address)
        worker = WorkerProcess(server.address, queue, ledger, mode)
        with cleanup([worker]):
            await worker.ready()
            worker.go()
            scope = ScopeClient(client, task_queue=queue)
            handle = await scope.start("faults", scenario.PROMPT, continue_as_new_every=2)

            async def restart(why: str) -> None:
                await asyncio.to_thread(server.restart)
                restarts.append(why)

            async def at_input_wait(snap: TreeSnapshot) -> bool:
                if not mid_flight and not restarts and snap.pending_tool_inputs:
                    await restart("input wait open")
                    return True
                return False

            async def at_first_side_effect() -> None:
                while not any(e["ev"] == "effect" for e in scenario.read_ledger(ledger)):
                    await asyncio.sleep(0.01)
                await restart("round 1 in flight")

            watcher = asyncio.create_task(at_first_side_effect()) if mid_flight else None
            log = HostLog()
            snap = await drive(handle, ledger, log, before_step=at_input_wait, timeout=180)
            if watcher is not None:
                await watcher
            out = await handle.result()
            assert worker.alive  # the same worker process, reconnected
        assert len(restarts) == 1
        assert snap.status == "completed"
        assert out.text == scenario.EXPECTED_OUTPUT
        result = audit(ledger)
        assert result.duplicates == [] and result.lost == [] and result.unexpected == []
        assert await _replay_all(client, mode) >= 3
    figures.FIGURES["server_restarts_survived"] += 1
    figures.FIGURES["duplicates"] += len(result.duplicates)
    figures.FIGURES["losses"] += len(result.lost)


@pytest.mark.parametrize("mode", ["always", pytest.param("on_demand", marks=pytest.mark.full)])
async def test_server_restarted_at_an_input_wait(tmp_path: Path, mode: ToolCallWorkflows) -> None:
    await run_with_restart(tmp_path, mode, mid_flight=False)


@pytest.mark.full
@pytest.mark.parametrize("mode", ["always", "on_demand"])
async def test_server_restarted_while_tool_calls_run(
    tmp_path: Path, mode: ToolCallWorkflows
) -> None:
    await run_with_restart(tmp_path, mode, mid_flight=True)
