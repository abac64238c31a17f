"""Several workers: three worker processes serve one task queue; many Interactions of the
scenario run at once (each with its delegate, input wait and unknown settled by the
host). All complete with the expected output; the shared ledger, audited per
Interaction, shows every side effect exactly once and nothing run twice.

Default: 5 Interactions per mapping. --full: 50, and one of the three workers is SIGKILLed once a
third of them have completed (a fourth takes its place): the calls it was running become
unknown and are settled by the host from the ledger.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient
from scope_temporal.definition import ToolCallWorkflows
from tests.faults import figures, scenario
from tests.faults.host import HostLog, WorkerProcess, audit_by_root, cleanup, drive
from tests.live.harness import MODE_BY_QUEUE, STARTED_IDS


def address_of(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


async def run_fleet(
    env: WorkflowEnvironment, tmp_path: Path, mode: ToolCallWorkflows, count: int, *, kill: bool
) -> None:
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    MODE_BY_QUEUE[queue] = mode
    ledger = tmp_path / "ledger.jsonl"
    address = address_of(env)
    # the worker to lose takes its time over each model call: it holds calls when killed
    workers = [
        WorkerProcess(address, queue, ledger, mode, model_seconds=1.0 if n == 0 and kill else 0)
        for n in range(4)
    ]
    fleet, spare = workers[:3], workers[3]
    with cleanup(workers):
        for worker in workers:
            await worker.ready()
        for worker in fleet:
            worker.go()
        scope = ScopeClient(env.client, task_queue=queue)
        started = time.monotonic()
        handles = []
        for _ in range(count):
            handle = await scope.start("faults", scenario.PROMPT, continue_as_new_every=2)
            STARTED_IDS.append(handle.id)
            handles.append(handle)
        logs = [HostLog() for _ in handles]
        done: list[str] = []

        async def host(index: int) -> str:
            handle = handles[index]
            snap = await drive(handle, ledger, logs[index], timeout=600, every=1.0)
            assert snap.status == "completed", (handle.id, snap.root.failure)
            done.append(handle.id)
            return (await handle.result()).text

        async def lose_a_worker() -> set[str]:
            while len(done) < count // 3:
                await asyncio.sleep(0.2)
            held: set[str] = set()
            for _ in range(300):  # until it is inside a model call (it takes 1 s each)
                held = model_calls_held(ledger, fleet[0].proc.pid)
                if held:
                    break
                await asyncio.sleep(0.1)
            fleet[0].kill()
            spare.go()
            return held

        killer = asyncio.create_task(lose_a_worker()) if kill else None
        outputs = await asyncio.gather(*(host(i) for i in range(count)))
        held = await killer if killer is not None else set()
        elapsed = time.monotonic() - started
    assert outputs == [scenario.EXPECTED_OUTPUT] * count
    audits = audit_by_root(ledger)
    assert sorted(audits) == sorted(h.id for h in handles)
    duplicates = {root: a.duplicates for root, a in audits.items() if a.duplicates}
    lost = {root: a.lost + a.unexpected for root, a in audits.items() if a.lost or a.unexpected}
    figures.FIGURES["fleet_interactions"] += count
    figures.FIGURES["duplicates"] += sum(len(d) for d in duplicates.values())
    figures.FIGURES["losses"] += sum(len(a.lost) for a in audits.values())
    assert duplicates == {}
    assert lost == {}
    if kill:
        # the lost worker held calls when it was killed, and the host was told so
        assert held, "the killed worker held no model call"
        told = {e: d for log in logs for e, d in log.diagnostics.items() if e in held}
        assert told, f"none of the calls it held ({sorted(held)}) became unknown"
        assert all("worker was probably lost" in d for d in told.values()), told
    settled = sum(len(log.settled) for log in logs)
    print(f"{count} on 3 workers ({mode}, kill={kill}): {elapsed:.1f}s, {settled} settled")


def model_calls_held(ledger: Path, pid: int) -> set[str]:
    """The model calls the worker `pid` began and has not answered (per the ledger)."""
    entries = scenario.read_ledger(ledger)
    answered = {e["effect"] for e in entries if e["ev"] == "model_answer"}
    return {
        e["effect"]
        for e in entries
        if e["ev"] == "model_start" and e.get("pid") == pid and e["effect"] not in answered
    }


@pytest.mark.parametrize("mode", ["always", "on_demand"])
async def test_three_workers_a_few_interactions(
    temporal_env: WorkflowEnvironment, tmp_path: Path, mode: ToolCallWorkflows
) -> None:
    await run_fleet(temporal_env, tmp_path, mode, 5, kill=False)


@pytest.mark.full
@pytest.mark.parametrize("mode", ["always", "on_demand"])
async def test_three_workers_fifty_interactions_one_worker_lost(
    temporal_env: WorkflowEnvironment, tmp_path: Path, mode: ToolCallWorkflows
) -> None:
    await run_fleet(temporal_env, tmp_path, mode, 50, kill=True)
