"""The careful host of the fault scenarios, the worker processes, and the ledger audit.

The host answers input waits, steers once, and settles every unknown Effect the way a
careful operator would: it looks for the side effect in the ledger (the "external
system") and reports what really happened, never running anything again itself:
- a tool call whose side effect is in the ledger settles `succeeded` with that result;
  one whose side effect is absent settles `failed` ("not done"), and the planner asks
  for it again as a new call;
- a model call whose answer is in the ledger settles with that answer; one that never
  answered is answered by the host (as if it asked the provider itself), logged too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from scope_temporal import (
    InteractionHandle,
    Message,
    Response,
    ScopeError,
    ToolResult,
    TreeSnapshot,
    settle_model_result,
    settle_tool_result,
)
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.interaction.effects import ModelEffectRequest, ToolEffectRequest
from tests.faults import scenario

ROOT = Path(__file__).resolve().parents[2]
ACTION_TIMEOUT = 20.0


# --- worker processes ------------------------------------------------------------------


class WorkerProcess:
    """One scenario worker subprocess: spawned at once, polling only after `go()`."""

    def __init__(
        self,
        address: str,
        task_queue: str,
        ledger: Path,
        mode: ToolCallWorkflows,
        kill_point: str = "",
        *,
        model_seconds: float = 0.0,
    ) -> None:
        """`model_seconds`: each model call of this worker takes that long between its
        `model_start` and its answer (a worker that holds calls when it is killed)."""
        args = [sys.executable, "-m", "tests.faults.worker", address, task_queue, str(ledger)]
        args += [mode, *([kill_point] if kill_point else [])]
        env = {**os.environ, scenario.MODEL_SECONDS_VAR: str(model_seconds)}
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.started = False

    async def ready(self) -> None:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.proc.stdout.readline), 60)
        assert line.strip() == "ready", f"worker said {line!r}"

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.started = True

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.alive:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def cleanup(processes: list[WorkerProcess]) -> Iterator[list[WorkerProcess]]:
    try:
        yield processes
    finally:
        for process in processes:
            process.kill()


# --- the careful host ------------------------------------------------------------------


@dataclass
class HostLog:
    """What the host did, for the audit."""

    settled: dict[str, str] = field(default_factory=dict)
    """effect id -> how the host settled it (succeeded / failed / model: worker|host)."""
    diagnostics: dict[str, str] = field(default_factory=dict)
    """effect id -> why it was unknown, as the snapshot said."""
    answered: set[str] = field(default_factory=set)
    steered: bool = False
    errors: Counter[str] = field(default_factory=Counter)


def _effects_by_id(ledger: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for entry in scenario.read_ledger(ledger):
        if "effect" in entry:
            found.setdefault(entry["effect"], []).append(entry)
    return found


def tool_settlement(request: ToolEffectRequest, ledger: Path) -> tuple[Any, str]:
    """Settle a tool call from what the ledger shows (never by running the tool)."""
    call = request.call
    entries = _effects_by_id(ledger).get(request.effect_id, [])
    done = [e["key"] for e in entries if e["ev"] == "effect"]
    if done:
        result = ToolResult(call_id=call.id, name=call.name, content=done[0])
        return settle_tool_result(request, result, "succeeded"), "succeeded"
    result = ToolResult(
        call_id=call.id, name=call.name, content=f"not done ({call.name})", is_error=True
    )
    return settle_tool_result(request, result, "failed"), "failed"


def model_settlement(request: ModelEffectRequest, ledger: Path) -> tuple[Any, str]:
    """Settle a model call with its logged answer, or answer it (once) as the host."""
    entries = _effects_by_id(ledger).get(request.effect_id, [])
    answers = [e for e in entries if e["ev"] == "model_answer"]
    if answers:
        response = Response.model_validate(answers[0]["response"])
        by = "worker"
    else:
        response = scenario.plan(request.messages)
        scenario.append(
            {
                "ev": "model_answer",
                "effect": request.effect_id,
                "by": "host",
                "response": response.model_dump(mode="json"),
            },
            ledger,
        )
        by = "host"
    return settle_model_result(request, response, request.messages), f"model:{by}"


async def _attempt(log: HostLog, what: str, action: Awaitable[Any]) -> bool:
    """Run one host action; a failure (no worker yet, a stale snapshot) is retried later.
    An update cut off by the timeout surfaces as Temporal's
    `WorkflowUpdateRPCTimeoutOrCancelledError` (the client turns the cancellation into
    it): retried too, as every one of these actions is idempotent."""
    try:
        await asyncio.wait_for(action, ACTION_TIMEOUT)
    except (ScopeError, TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as error:
        log.errors[f"{what}: {type(error).__name__}"] += 1
        return False
    return True


async def host_step(
    handle: InteractionHandle, snap: TreeSnapshot, ledger: Path, log: HostLog
) -> None:
    """One round of host actions on a snapshot."""
    if not log.steered:
        log.steered = await _attempt(
            log, "steer", handle.steer("steer-1", Message.user(scenario.STEER_TEXT))
        )
    for pending in snap.pending_tool_inputs:
        answer = handle.answer(pending, f"answer:{pending.wait_id}", {"approved": True})
        if await _attempt(log, "answer", answer):
            log.answered.add(pending.wait_id)
    for unknown in snap.unknown_effects:
        if isinstance(unknown.request, ToolEffectRequest):
            settlement, how = tool_settlement(unknown.request, ledger)
        else:
            settlement, how = model_settlement(unknown.request, ledger)
        if await _attempt(log, "resolve", handle.resolve(unknown, settlement)):
            log.settled[unknown.effect_id] = how
            log.diagnostics[unknown.effect_id] = unknown.diagnostic


async def snapshot_or_none(handle: InteractionHandle, log: HostLog) -> TreeSnapshot | None:
    try:
        return await handle.snapshot()
    except ScopeError as error:
        log.errors[f"snapshot: {type(error).__name__}"] += 1
        return None


async def drive(
    handle: InteractionHandle,
    ledger: Path,
    log: HostLog,
    *,
    before_step: Callable[[TreeSnapshot], Awaitable[bool]] | None = None,
    timeout: float = 120.0,
    every: float = 0.2,
) -> TreeSnapshot:
    """Act as the host until the Interaction ends; returns the last snapshot.

    `before_step(snapshot)` runs first on every snapshot; returning True skips the host's
    own step that time (a test that just killed or paused something looks again).
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the Interaction did not end in {timeout} s; host: {log}")
        snap = await snapshot_or_none(handle, log)
        if snap is None:
            await asyncio.sleep(max(every, 0.3))
            continue
        if snap.status in ("completed", "failed", "canceled"):
            return snap
        if before_step is not None and await before_step(snap):
            continue
        await host_step(handle, snap, ledger, log)
        await asyncio.sleep(every)


# --- the audit -------------------------------------------------------------------------


@dataclass
class Audit:
    duplicates: list[str]
    lost: list[str]
    unexpected: list[str]
    kills: list[str]

    @property
    def clean(self) -> bool:
        return not (self.duplicates or self.lost or self.unexpected)


def audit(ledger: Path, expected_keys: frozenset[str] = scenario.EXPECTED_KEYS) -> Audit:
    """Nothing ran twice, nothing the output claims is missing, nothing unexplained."""
    return audit_entries(scenario.read_ledger(ledger), expected_keys)


def audit_by_root(ledger: Path) -> dict[str, Audit]:
    """`audit` per Interaction, for a ledger several Interactions share."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in scenario.read_ledger(ledger):
        if entry.get("effect"):
            groups.setdefault(entry["effect"].split("/")[0], []).append(entry)
    return {root: audit_entries(entries) for root, entries in groups.items()}


def audit_entries(
    entries: list[dict[str, Any]], expected_keys: frozenset[str] = scenario.EXPECTED_KEYS
) -> Audit:
    duplicates: list[str] = []

    def once(label: str, items: list[Any]) -> None:
        for item, count in Counter(items).items():
            if count > 1:
                duplicates.append(f"{label} {item} x{count}")

    once("model call", [e["effect"] for e in entries if e["ev"] == "model_start"])
    once("model answer", [e["effect"] for e in entries if e["ev"] == "model_answer"])
    once("tool entry", [(e["effect"], e["entry"]) for e in entries if e["ev"] == "tool_enter"])
    effects = [e for e in entries if e["ev"] == "effect"]
    once("side effect of", [e["effect"] for e in effects])
    once("side effect", [e["key"] for e in effects])
    keys = {e["key"] for e in effects}
    return Audit(
        duplicates=duplicates,
        lost=sorted(expected_keys - keys),
        unexpected=sorted(keys - expected_keys),
        kills=[e["point"] for e in entries if e["ev"] == "kill"],
    )


async def wait_dead(process: WorkerProcess, timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while process.alive:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the kill point was never reached")
        await asyncio.sleep(0.05)
    with suppress(subprocess.TimeoutExpired):
        process.proc.wait(1)
