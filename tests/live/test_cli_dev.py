"""`scope-temporal dev`, plus the helpers the other CLI tests share (subprocesses, ports).

The CLI tests run the installed console script as a user would, in a clean environment,
on servers they start themselves on free ports; they stop only the processes they started.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import temporal_cli_path

BIN = Path(sys.executable).parent
CLI = str(BIN / "scope-temporal")
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A minimal environment: no API keys, no Temporal variables, only our venv on PATH."""
    env = {
        "PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


def descendants(pid: int) -> list[int]:
    """Every process started (transitively) by `pid`, from /proc (Linux)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with suppress(OSError):
            for child in (task / "children").read_text().split():
                found += [int(child), *descendants(int(child))]
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie awaiting its parent counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "(zombie)" not in status and "(dead)" not in status


class Proc:
    """A CLI subprocess whose output is collected line by line as it arrives."""

    def __init__(self, args: Sequence[str], *, env: dict[str, str], cwd: Path) -> None:
        self.args = list(args)
        self.process = subprocess.Popen(
            [CLI, *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first output line matching `pattern` (a regex), waiting for it if needed."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        with self._changed:
            while True:
                for line in self.lines:
                    if (match := regex.search(line)) is not None:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(
                        f"{pattern!r} not in the output of scope-temporal {' '.join(self.args)}"
                        f" (exit {self.process.poll()}):\n{self.output}"
                    )
                self._changed.wait(min(left, 0.5))

    def stop(self, sig: signal.Signals = signal.SIGINT, timeout: float = 20) -> int:
        """Send `sig` (Ctrl-C by default) and wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        finally:
            self.kill()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._reader.join(5)

    def kill(self) -> None:
        """Kill it and whatever it started, if still running (only our own processes)."""
        if self.process.poll() is None:
            for pid in descendants(self.process.pid):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.kill()
            self.process.wait(10)
        self._reader.join(5)


def run_cli(
    args: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def dev_server(home: Path) -> Iterator[tuple[Proc, int, int]]:
    """`scope-temporal dev` on free ports with its SQLite file under `home`."""
    port, ui_port = free_port(), free_port()
    proc = Proc(
        [
            "dev",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--db",
            str(home / ".scope" / "temporal.db"),
        ],
        env=clean_env(home),
        cwd=home,
    )
    try:
        proc.wait_for(r"Temporal dev server ready", timeout=60)
        yield proc, port, ui_port
    finally:
        proc.kill()


@pytest.mark.live
async def test_dev_serves_with_ui_and_search_attributes_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    with dev_server(tmp_path) as (proc, port, ui_port):
        proc.wait_for(rf"Temporal UI: http://localhost:{ui_port}")
        client = await Client.connect(f"localhost:{port}")
        registered = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        assert {key.name for key in SEARCH_ATTRIBUTES} <= set(registered.custom_attributes)
        assert port_open(ui_port)
        server_pids = descendants(proc.process.pid)
        assert server_pids, "the temporal binary runs as a child of `scope-temporal dev`"

        assert proc.stop(signal.SIGINT) == 0
        assert "stopped" in proc.output
        assert not port_open(port)
        assert not any(alive(pid) for pid in server_pids), "the temporal server was stopped"
    assert (tmp_path / ".scope" / "temporal.db").is_file()


@pytest.mark.live
async def test_the_deploy_page_search_attribute_command_registers_them_on_a_bare_server(
    tmp_path: Path,
) -> None:
    line = re.search(
        r"`(temporal operator search-attribute create [^`]+)`",
        (REPO / "docs" / "deploy.md").read_text(),
    )
    assert line is not None, "the Deploy page documents the command"
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_cli_path())
    try:
        target = env.client.service_client.config.target_host
        words = shlex.split(line.group(1))
        done = subprocess.run(
            [temporal_cli_path(), *words[1:]],
            capture_output=True,
            text=True,
            env=clean_env(tmp_path, TEMPORAL_ADDRESS=target),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        registered = await env.client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        assert {key.name for key in SEARCH_ATTRIBUTES} <= set(registered.custom_attributes)
    finally:
        await env.shutdown()
