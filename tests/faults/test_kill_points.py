"""Fault injection: a real worker process is SIGKILLed at a named point; another takes over.

Each case runs the scenario (`tests.faults.scenario`) on a fresh task queue with two
worker processes: the first armed with one kill point, the second (started, not polling)
takes over once the first is dead. The careful host (`tests.faults.host`) answers,
steers and settles unknowns from the ledger. Every case must end with:
- the expected output (every side effect claimed, the steer applied);
- a ledger with no model call, tool entry or side effect twice, and no side effect lost;
- the kill point fired exactly once, and the call it interrupted (if any) held as an
  unknown Effect and settled by the host; no other unknown than the scenario's own
  (`notify` never confirms) and calls that were running in the killed process.

The default (CI) run covers a deterministic handful of points (twelve), each kind in both
tool-call mappings; `--full` runs every point in both.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import InteractionHandle, ScopeClient, TreeSnapshot
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.interaction.effects import ToolEffectRequest
from tests.faults import figures, scenario
from tests.faults.host import (
    HostLog,
    WorkerProcess,
    audit,
    cleanup,
    drive,
    tool_settlement,
    wait_dead,
)
from tests.live.harness import MODE_BY_QUEUE, STARTED_IDS

Kind = Literal["activity", "workflow", "host", "task"]
NOTIFY_UNCONFIRMED = "chat gateway timed out"
LOST_WORKER = "activity timed out: HEARTBEAT"


@dataclass(frozen=True)
class KillPoint:
    point: str
    kind: Kind
    ci: tuple[ToolCallWorkflows, ...] = ()
    """The mappings this point runs in by default (all of them with --full)."""
    then: str = ""
    """A kill point armed in the second worker (a third takes over once it fired)."""


POINTS = [
    # inside activities: the model, its observer hooks, tool bodies, middleware
    KillPoint("model.before:root#1", "activity"),
    KillPoint("model.after:root#1", "activity", ci=("always",)),
    KillPoint("model.after:root#2", "activity"),
    KillPoint("model.before:helper#1", "activity"),
    KillPoint("model.after:helper#2", "activity"),
    KillPoint("observer.model_started:root#2", "activity"),
    KillPoint("observer.model_settled:root#3", "activity"),
    KillPoint("observer.tool_started:write_item=a#1", "activity"),
    KillPoint("observer.tool_settled:write_item=b#1", "activity", ci=("on_demand",)),
    KillPoint("middleware.before:inventory=prod#1", "activity"),
    KillPoint("middleware.after:write_item=a#1", "activity", ci=("always",)),
    KillPoint("tool.before:inventory=prod#1", "activity"),
    KillPoint("tool.before:write_item=b#1", "activity", ci=("on_demand",)),
    KillPoint("tool.after:write_item=a#1", "activity"),
    KillPoint("tool.after:notify=ops#1", "activity"),
    KillPoint("tool.ask:deploy=prod#1", "activity"),
    KillPoint("tool.before:deploy=prod#2", "activity"),
    KillPoint("tool.after:deploy=prod#2", "activity", ci=("always",)),
    KillPoint("tool.after:note=changes#1", "activity"),
    # inside a background tool's run (the export): its foreground attempt is the tool call's
    # activity; the others are background attempts (the call has settled with its launch)
    KillPoint("task.foreground:export=sales", "activity"),
    KillPoint("task.adopt:export=sales", "task", ci=("always",)),
    KillPoint("task.before:export=sales", "task"),
    KillPoint("task.after:export=sales", "task"),
    KillPoint(
        "task.after:export=sales",
        "task",
        ci=("on_demand",),
        then="task.recover:export=sales",
    ),
    # inside workflow tasks (not replays): the task is lost with the process
    KillPoint("wf.schedule_model:root#2", "workflow"),
    KillPoint("wf.schedule_tool:deploy=prod#2", "workflow"),
    KillPoint("wf.start_child:deploy=prod#1", "workflow", ci=("on_demand",)),
    KillPoint("wf.child_first_task:deploy=prod#1", "workflow"),
    KillPoint("wf.start_delegate:2/0", "workflow"),
    KillPoint("wf.start_task:export=sales#1", "workflow"),
    KillPoint("wf.update:steer", "workflow"),
    KillPoint("wf.update:tool_input", "workflow"),
    KillPoint("wf.update:resolve", "workflow", ci=("always",)),
    KillPoint("wf.continue_as_new:root", "workflow"),
    # between workflow tasks, at a state the host observes
    KillPoint("host.input_wait", "host"),
    KillPoint("host.task_input_wait", "host", ci=("on_demand",)),
    KillPoint("host.unknown_held", "host"),
    KillPoint("host.paused_answer", "host", ci=("always",)),
    KillPoint("host.paused_resolution", "host"),
]
MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")


def _cases() -> list[object]:
    cases: list[object] = []
    for kill in POINTS:
        for mode in MODES:
            marks = () if mode in kill.ci else (pytest.mark.full,)
            name = kill.point + (f"+{kill.then}" if kill.then else "")
            cases.append(pytest.param(kill, mode, id=f"{name}-{mode}", marks=marks))
    return cases


def address_of(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


class HostKiller:
    """Host-side kill points: kill the first worker at a state seen in a snapshot."""

    def __init__(
        self, point: str, handle: InteractionHandle, victim: WorkerProcess, ledger: Path
    ) -> None:
        self.point = point
        self.handle = handle
        self.victim = victim
        self.ledger = ledger
        self.paused = False

    def _kill(self) -> None:
        scenario.append(
            {"ev": "kill", "point": self.point, "pid": self.victim.proc.pid}, self.ledger
        )
        self.victim.kill()

    async def __call__(self, snap: TreeSnapshot) -> bool:
        handle = self.handle
        if not self.victim.alive:
            if self.paused:
                await handle.resume()
                self.paused = False
                return True
            return False
        notify_held = [
            u
            for u in snap.unknown_effects
            if isinstance(u.request, ToolEffectRequest) and u.request.call.name == "notify"
        ]
        quiet = len(snap.root.active_children) == 1
        if self.point == "host.input_wait" and snap.pending_tool_inputs:
            self._kill()
            return True
        task_waits = [w for w in snap.pending_tool_inputs if "/task/" in w.process_id]
        if self.point == "host.task_input_wait" and task_waits:
            self._kill()
            return True
        if self.point == "host.unknown_held" and notify_held and quiet:
            self._kill()
            return True
        # the deploy's approval; the export task may be waiting too (its own point)
        call_waits = [w for w in snap.pending_tool_inputs if "/task/" not in w.process_id]
        if self.point == "host.paused_answer" and call_waits:
            [pending] = call_waits
            await self._pause_until(pending.process_id)
            assert await handle.answer(pending, f"answer:{pending.wait_id}", {"approved": True})
            self._kill()
            return True
        if self.point == "host.paused_resolution" and notify_held and quiet:
            [unknown] = notify_held
            assert isinstance(unknown.request, ToolEffectRequest)
            await self._pause_until(unknown.process_id)
            settlement, _ = tool_settlement(unknown.request, self.ledger)
            await handle.resolve(unknown, settlement)
            self._kill()
            return True
        # hold the settlement until the rest of the round has settled
        return self.point in ("host.unknown_held", "host.paused_resolution") and bool(notify_held)

    async def _pause_until(self, process_id: str) -> None:
        handle = self.handle
        await handle.pause()
        self.paused = True
        for _ in range(100):
            snap = await handle.snapshot()
            if snap.process(process_id).status == "paused":
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{process_id} never showed paused")


async def run_kill_point(
    env: WorkflowEnvironment, kill: KillPoint, mode: ToolCallWorkflows, tmp_path: Path
) -> None:
    queue = f"fault-{uuid.uuid4().hex[:8]}"
    MODE_BY_QUEUE[queue] = mode
    ledger = tmp_path / "ledger.jsonl"
    armed = kill.point if kill.kind != "host" else ""
    address = address_of(env)
    first = WorkerProcess(address, queue, ledger, mode, armed)
    second = WorkerProcess(address, queue, ledger, mode, kill.then)
    third = WorkerProcess(address, queue, ledger, mode) if kill.then else None
    workers = [first, second, *([third] if third else [])]
    with cleanup(workers):
        for worker in workers:
            await worker.ready()
        first.go()
        scope = ScopeClient(env.client, task_queue=queue)
        handle = await scope.start("faults", scenario.PROMPT, continue_as_new_every=2)
        STARTED_IDS.append(handle.id)

        async def replace() -> None:
            await wait_dead(first, 90)
            second.go()
            if third is not None:
                await wait_dead(second, 90)
                third.go()

        replacing = asyncio.create_task(replace())
        log = HostLog()
        killer = HostKiller(kill.point, handle, first, ledger) if kill.kind == "host" else None
        try:
            snap = await drive(handle, ledger, log, before_step=killer)
        finally:
            reached = replacing.done()
            if not reached:
                replacing.cancel()
        assert reached, f"the Interaction ended ({snap.status}) before {kill.point} was reached"
        await replacing
        out = await handle.result()

    assert snap.status == "completed", snap.root.failure
    assert out.text == scenario.EXPECTED_OUTPUT
    result = audit(ledger)
    figures.FIGURES["kill_runs"] += 1
    figures.FIGURES["duplicates"] += len(result.duplicates)
    figures.FIGURES["losses"] += len(result.lost)
    assert result.duplicates == []
    assert result.lost == [] and result.unexpected == []
    fired_points = [kill.point, *([kill.then] if kill.then else [])]
    assert result.kills == fired_points, "each kill point must fire exactly once"
    entries = scenario.read_ledger(ledger)
    fired = next(e for e in entries if e["ev"] == "kill")
    if kill.kind == "activity":
        # the interrupted call was held as unknown (its worker lost) and settled by the host
        assert fired["effect"] in log.settled, (fired, log.settled)
        assert LOST_WORKER in log.diagnostics[fired["effect"]]
    # every other unknown is the scenario's own (notify never confirms) or a call whose
    # worker was lost (its heartbeat stopped): no healthy call was ever made unknown
    unexplained = {
        effect: why
        for effect, why in log.diagnostics.items()
        if NOTIFY_UNCONFIRMED not in why and LOST_WORKER not in why
    }
    assert unexplained == {}, "unknown Effects no kill explains"
    figures.KILL_POINTS.add(kill.point)
    figures.FIGURES["unknowns_settled_by_host"] += len(log.settled)


@pytest.mark.parametrize(("kill", "mode"), _cases())
async def test_kill_point_then_takeover_nothing_twice_nothing_lost(
    temporal_env: WorkflowEnvironment, kill: KillPoint, mode: ToolCallWorkflows, tmp_path: Path
) -> None:
    started = time.monotonic()
    await run_kill_point(temporal_env, kill, mode, tmp_path)
    print(f"{kill.point} [{mode}] survived in {time.monotonic() - started:.1f}s")


def test_kill_points_cover_every_kind_and_both_mappings_in_ci() -> None:
    assert len({(k.point, k.then) for k in POINTS}) == len(POINTS) >= 20
    ci = [(k.kind, m) for k in POINTS for m in k.ci]
    assert {kind for kind, _ in ci} == {"activity", "workflow", "host", "task"}
    assert {mode for _, mode in ci} == set(MODES)
