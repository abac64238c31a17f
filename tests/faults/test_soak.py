"""The soak (`--soak MINUTES`; skipped otherwise, so not in CI's default run).

Three worker processes serve the scenario (`tests.faults.scenario`: every Interaction has
its input waits, an unknown `notify`, a delegate and a background export that asks before
it writes) in the tool-call mapping `--soak-mapping` names (`always` by default) on its
own dev server (a SQLite file, so it can restart). For MINUTES a new
Interaction starts every `START_EVERY` seconds; every `KILL_EVERY` seconds a random worker
is SIGKILLed (a fresh one takes its place), and the server is restarted once, half-way.
Then the Interactions drain: each must end completed with the expected output after the
careful host's settlements, and the shared ledger, audited per Interaction, must show
nothing run twice and nothing lost. The figures are printed and added to the session's.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from pathlib import Path
from typing import cast

import pytest
from temporalio.client import Client

from scope_temporal import InteractionHandle, ScopeClient, ScopeError
from scope_temporal.definition import ToolCallWorkflows
from tests.faults import figures, scenario
from tests.faults.host import HostLog, WorkerProcess, audit_by_root, drive
from tests.faults.test_server_restart import dev_server

START_EVERY = 2.0
KILL_EVERY = 20.0
DRAIN_SECONDS = 900.0


class Fleet:
    """Three live workers; `kill_one` SIGKILLs a random one and starts its replacement."""

    def __init__(self, address: str, queue: str, ledger: Path, mapping: ToolCallWorkflows) -> None:
        self.address, self.queue, self.ledger, self.mapping = address, queue, ledger, mapping
        self.workers: list[WorkerProcess] = []
        self.all: list[WorkerProcess] = []
        self.kills = 0

    async def add(self) -> None:
        worker = WorkerProcess(self.address, self.queue, self.ledger, self.mapping)
        self.all.append(worker)
        await worker.ready()
        worker.go()
        self.workers.append(worker)

    async def kill_one(self, rng: random.Random) -> None:
        victim = rng.choice(self.workers)
        self.workers.remove(victim)
        victim.kill()
        self.kills += 1
        await self.add()

    def close(self) -> None:
        for worker in self.all:
            worker.kill()


async def _start(scope: ScopeClient) -> InteractionHandle:
    for _ in range(60):  # the server may be restarting
        try:
            return await scope.start("faults", scenario.PROMPT, continue_as_new_every=2)
        except (ScopeError, RuntimeError):
            await asyncio.sleep(1)
    raise AssertionError("could not start an Interaction for a minute")


async def test_soak_workers_killed_and_a_server_restart(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    minutes = float(request.config.getoption("--soak"))
    mapping = cast(ToolCallWorkflows, request.config.getoption("--soak-mapping"))
    if minutes <= 0:
        pytest.skip("a soak: run with --soak MINUTES")
    seed = int(time.time())
    rng = random.Random(seed)
    ledger = tmp_path / "ledger.jsonl"
    queue = f"fleet-soak-{uuid.uuid4().hex[:8]}"
    with dev_server(tmp_path / "temporal.db") as server:
        client = await Client.connect(server.address)
        scope = ScopeClient(client, task_queue=queue)
        fleet = Fleet(server.address, queue, ledger, mapping)
        try:
            for _ in range(3):
                await fleet.add()
            handles: list[InteractionHandle] = []
            logs: list[HostLog] = []
            hosts: list[asyncio.Task[str]] = []
            started = time.monotonic()
            end = started + minutes * 60
            next_kill = started + KILL_EVERY
            restarted = False
            while time.monotonic() < end:
                handle = await _start(scope)
                log = HostLog()
                handles.append(handle)
                logs.append(log)
                hosts.append(asyncio.create_task(_host(handle, ledger, log)))
                if time.monotonic() >= next_kill:
                    await fleet.kill_one(rng)
                    next_kill += KILL_EVERY
                if not restarted and time.monotonic() >= started + minutes * 30:
                    await asyncio.to_thread(server.restart)
                    restarted = True
                await asyncio.sleep(START_EVERY)
            outputs = await asyncio.gather(*hosts)
            elapsed = time.monotonic() - started
        finally:
            fleet.close()
    audits = audit_by_root(ledger)
    duplicates = sum(len(a.duplicates) for a in audits.values())
    losses = sum(len(a.lost) + len(a.unexpected) for a in audits.values())
    settled = sum(len(log.settled) for log in logs)
    figures.FIGURES["soak_interactions"] += len(handles)
    figures.FIGURES["soak_worker_kills"] += fleet.kills
    figures.FIGURES["duplicates"] += duplicates
    figures.FIGURES["losses"] += losses
    print(
        f"soak seed={seed} mapping={mapping}: {len(handles)} Interactions in {minutes:g} min, "
        f"{fleet.kills} workers SIGKILLed, server restarted={restarted}, drained after "
        f"{elapsed:.0f} s; {settled} unknowns settled by the host; "
        f"{duplicates} duplicates, {losses} losses"
    )
    assert outputs == [scenario.EXPECTED_OUTPUT] * len(handles)
    assert sorted(audits) == sorted(h.id for h in handles)
    assert duplicates == 0 and losses == 0


async def _host(handle: InteractionHandle, ledger: Path, log: HostLog) -> str:
    snap = await drive(handle, ledger, log, timeout=DRAIN_SECONDS, every=1.0)
    assert snap.status == "completed", (handle.id, snap.root.failure)
    return (await handle.result()).text
