"""CONFORMANCE 43 live: a real worker process is SIGKILLed mid-call and replaced."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient, ToolResult, reply, settle_model_result, settle_tool_result
from tests.live.harness import (
    MODE_BY_QUEUE,
    STARTED_IDS,
    TOOL_CALL_MODE,
    attempt_workflow_id,
    eventually,
)

ROOT = Path(__file__).resolve().parents[2]
KILL_WALL = [0.0]


@contextmanager
def worker_process(
    address: str,
    task_queue: str,
    side_effects: Path,
    *,
    module: str = "tests.live.loss_worker",
    args: Sequence[str] | None = None,
) -> Iterator[subprocess.Popen[str]]:
    """`python -m module address task_queue side_effects *args` (args default: the mode)."""
    mode = TOOL_CALL_MODE[0] or "on_demand"
    MODE_BY_QUEUE[task_queue] = mode
    extra = [mode] if args is None else list(args)
    proc = subprocess.Popen(
        [sys.executable, "-m", module, address, task_queue, str(side_effects), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "worker ready"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


async def unknown_recorded_after(env: WorkflowEnvironment, workflow_id: str) -> float:
    """Seconds from the kill to the workflow task that recorded the activity's timeout.

    Polls: a query can show the unknown before that task's completion is in history.
    """
    handle = env.client.get_workflow_handle(workflow_id)

    async def recorded() -> float | None:
        events = [e async for e in handle.fetch_history_events()]
        types = [e.event_type for e in events]
        if EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT not in types:
            return None
        timed_out = types.index(EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)
        for event in events[timed_out:]:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                return event.event_time.ToDatetime(tzinfo=UTC).timestamp() - KILL_WALL[0]
        return None

    found = await eventually(recorded, lambda seconds: seconds is not None)
    assert found is not None
    return found


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def wait_for_line(path: Path, line: str, timeout: float = 20) -> None:
    await eventually(lambda: asyncio.sleep(0, lines(path)), lambda ls: line in ls, timeout=timeout)


def address_of(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


async def test_c43_worker_killed_mid_tool_then_resolved(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"loss-{uuid.uuid4().hex[:8]}"
    effects = tmp_path / "effects.txt"
    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    with worker_process(address_of(temporal_env), task_queue, effects) as first:
        handle = await scope.start("loss", "investigate")
        STARTED_IDS.append(handle.id)
        await wait_for_line(effects, "slow b")
        await wait_for_line(effects, "quick a")
        os.kill(first.pid, signal.SIGKILL)
        KILL_WALL[0] = time.time()
        first.wait(10)
    killed_at = time.monotonic()
    with worker_process(address_of(temporal_env), task_queue, effects):
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects), timeout=30)
        detected_after = time.monotonic() - killed_at
        recorded_after = await unknown_recorded_after(
            temporal_env, attempt_workflow_id(f"{handle.id}/tool/1/1")
        )
        print(f"unknown recorded {recorded_after:.1f}s after SIGKILL, seen {detected_after:.1f}s")
        [unknown] = snap.unknown_effects
        assert unknown.kind == "tool" and unknown.request.call.name == "slow_write"
        assert "HEARTBEAT" in unknown.diagnostic
        assert lines(effects).count("quick a") == 1  # the settled sibling did not re-run
        call = unknown.request.call
        result = ToolResult(call_id=call.id, name=call.name, content="write b verified by hand")
        await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        out = await asyncio.wait_for(handle.result(), 30)
    assert out.text == "all done"
    # every side effect happened exactly once, across both worker processes
    assert sorted(lines(effects)) == sorted(["model plan", "slow b", "quick a", "model final"])
    # the workflow records the unknown about one heartbeat timeout (2 s) + the 1 s sticky
    # queue timeout after the kill; a host's first query may take longer (the server
    # tries the dead worker's sticky queue first)
    assert recorded_after < 6, f"unknown recorded {recorded_after:.1f}s after the kill"
    assert detected_after < 20


async def test_c43_worker_killed_mid_model_call_with_default_timeouts_then_resolved(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"loss-{uuid.uuid4().hex[:8]}"
    effects = tmp_path / "effects.txt"
    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    with worker_process(address_of(temporal_env), task_queue, effects) as first:
        handle = await scope.start("loss-defaults", "hang the model")
        STARTED_IDS.append(handle.id)
        await wait_for_line(effects, "model hang")
        os.kill(first.pid, signal.SIGKILL)
        KILL_WALL[0] = time.time()
        first.wait(10)
    with worker_process(address_of(temporal_env), task_queue, effects):
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects), timeout=40)
        recorded_after = await unknown_recorded_after(temporal_env, handle.id)
        print(f"model unknown recorded {recorded_after:.1f}s after SIGKILL (defaults)")
        # the default 10 s heartbeat timeout + the 1 s sticky queue timeout, not the
        # 5-minute model timeout
        assert recorded_after < 14, f"unknown recorded {recorded_after:.1f}s after the kill"
        [unknown] = snap.unknown_effects
        assert unknown.kind == "model" and "HEARTBEAT" in unknown.diagnostic
        assert lines(effects) == ["model hang"]  # the new worker did not call the model again
        settlement = settle_model_result(
            unknown.request, reply.text("answered by hand"), unknown.request.messages
        )
        await handle.resolve(unknown, settlement)
        out = await asyncio.wait_for(handle.result(), 30)
    assert out.text == "answered by hand" and out.model_calls == 1
    assert lines(effects) == ["model hang"]
