"""Overload: many runs of workload W at once on one worker, optionally beside a CPU hog.

    python bench/overload.py --runs 40 --trials 3 [--hog] [--mode always]

What it counts: runs completed, unknowns (`ActivityTaskTimedOut` events: every one is an
unknown Effect, which only a person can settle, so only a run that did not complete can
hold one; the worker logs "Activity not found on completion" when such an activity
finishes after all), wall time to the last completion and each completed run's latency.
`bench/run.py --only overload` prints the same figures for 100 runs beside a hog;
`tests/live/test_overload.py` asserts no unknowns.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import subprocess
import sys
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` as a package

from bench import workload
from scope_temporal import ScopeClient, ScopeWorker, ScriptedModel
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path

_SPIN = "while True: pass"


@contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[list[int]]:
    """Busy-loop `processes` subprocesses (default: one per core) until the block ends.

    Yields their pids; they are killed (by pid) however the block ends.
    """
    count = processes if processes is not None else (os.cpu_count() or 1)
    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(count)]
    for spinner in spinners:  # at the machine's usual priority, whatever ours is
        os.setpriority(os.PRIO_PROCESS, spinner.pid, 0)
    try:
        yield [p.pid for p in spinners]
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait(10)


@dataclasses.dataclass
class OverloadResult:
    runs: int
    completed: int
    unknowns: int
    """`ActivityTaskTimedOut` events in the workflows left running (every one an unknown)."""
    unknown_activities: dict[str, int]
    wall_s: float
    """From the first start to the last completion."""
    latencies: list[float]
    """Each completed run's start-to-result time, sorted."""
    activity_seconds: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    """Per activity type, each closed activity's started-to-closed time (server clock),
    sorted: how close an activity came to its heartbeat timeout."""
    loop_lags: list[float] = dataclasses.field(default_factory=list)
    """How late the event loop woke a 0.1 s sleep, every 0.1 s while the runs ran, sorted."""

    @property
    def p50(self) -> float:
        return _percentile(self.latencies, 50)

    @property
    def p99(self) -> float:
        return _percentile(self.latencies, 99)

    def line(self) -> str:
        activities = " ".join(
            f"{name}_max_s={max(values):.2f} {name}_p99_s={_percentile(values, 99):.2f}"
            for name, values in sorted(self.activity_seconds.items())
            if values
        )
        lag = (
            f"loop_lag_p99_s={_percentile(self.loop_lags, 99):.2f} "
            f"loop_lag_max_s={max(self.loop_lags):.2f} "
            if self.loop_lags
            else ""
        )
        return (
            f"completed={self.completed}/{self.runs} unknowns={self.unknowns} {lag}"
            f"{self.unknown_activities or ''} "
            f"wall_s={self.wall_s:.1f} p50_s={self.p50:.1f} p99_s={self.p99:.1f} {activities}"
        )


def _percentile(values: list[float], pct: int) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, len(values) * pct // 100)]


async def run_overload(
    client: Client,
    *,
    runs: int,
    mode: ToolCallWorkflows = "always",
    worker_options: Mapping[str, Any] | None = None,
    stall_s: float = 60.0,
    limit_s: float = 1800.0,
    activity_times: bool = False,
) -> OverloadResult:
    """Start `runs` W Interactions at once on one fresh ScopeWorker and wait them out.

    Waiting ends when every run completed, or when no run completed for `stall_s` and
    every open one holds an unknown (nothing can move without a person), or after
    `limit_s`. Runs left open are terminated afterwards. `activity_times` reads every
    workflow's history afterwards for `OverloadResult.activity_seconds`.
    """
    task_queue = f"overload-{uuid.uuid4().hex[:8]}"  # deterministic: client side
    latencies: list[float] = []
    async with ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=[workload.definition(mode)],
        tools=[workload.lookup],
        models={"default": ScriptedModel(workload.plan)},
        **dict(worker_options or {}),
    ):
        scope = ScopeClient(client, task_queue=task_queue)
        started = time.perf_counter()
        last_done = [started]

        async def one() -> None:
            begin = time.perf_counter()
            handle = await scope.start(f"w-{mode}", "go")
            out = await handle.result()
            assert out.model_calls == workload.TURNS, out
            last_done[0] = time.perf_counter()
            latencies.append(last_done[0] - begin)

        pending = {asyncio.create_task(one()) for _ in range(runs)}
        lags: list[float] = []
        probe = asyncio.create_task(_loop_lag(lags))
        try:
            await _wait_out(client, task_queue, pending, stall_s, started + limit_s)
        finally:
            probe.cancel()
            for task in pending:
                task.cancel()
        wall = last_done[0] - started
        by_activity = await _timed_out_activities(client, task_queue)
        await _terminate_open(client, task_queue)
    seconds = await _activity_seconds(client, task_queue) if activity_times else {}
    return OverloadResult(
        runs=runs,
        completed=len(latencies),
        unknowns=sum(by_activity.values()),
        unknown_activities=by_activity,
        wall_s=wall,
        latencies=sorted(latencies),
        activity_seconds=seconds,
        loop_lags=sorted(lags),
    )


async def _loop_lag(lags: list[float]) -> None:
    while True:
        before = time.perf_counter()
        await asyncio.sleep(0.1)
        lags.append(time.perf_counter() - before - 0.1)


async def _wait_out(
    client: Client,
    task_queue: str,
    pending: set[asyncio.Task[None]],
    stall_s: float,
    deadline: float,
) -> None:
    while pending and time.perf_counter() < deadline:
        done, _ = await asyncio.wait(pending, timeout=stall_s)
        for task in done:
            pending.discard(task)
            task.result()  # a failed run is a bench failure, not a figure
        if pending and not done and await _all_open_stranded(client, task_queue):
            return


async def _all_open_stranded(client: Client, task_queue: str) -> bool:
    """Every open Interaction has an open workflow in its tree holding a timed-out activity."""
    open_roots = set()
    stranded = set()
    async for execution in client.list_workflows(
        f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    ):
        root = execution.id.split("/", 1)[0]
        open_roots.add(root)
        if root not in stranded and await _timeouts(client, execution.id, execution.run_id):
            stranded.add(root)
    return open_roots == stranded


async def _timeouts(client: Client, workflow_id: str, run_id: str | None) -> list[str]:
    """The activity types of the timed-out activities in one workflow run's history."""
    scheduled: dict[int, str] = {}
    timed_out: list[str] = []
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            attributes = event.activity_task_timed_out_event_attributes
            timed_out.append(scheduled.get(attributes.scheduled_event_id, "?"))
    return timed_out


async def _timed_out_activities(client: Client, task_queue: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    async for execution in client.list_workflows(
        f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    ):
        for name in await _timeouts(client, execution.id, execution.run_id):
            counts[name] = counts.get(name, 0) + 1
    return counts


async def _activity_seconds(client: Client, task_queue: str) -> dict[str, list[float]]:
    ids = [(e.id, e.run_id) async for e in client.list_workflows(f"TaskQueue = '{task_queue}'")]
    seconds: dict[str, list[float]] = {}
    gate = asyncio.Semaphore(16)

    async def one(workflow_id: str, run_id: str | None) -> None:
        async with gate:
            handle = client.get_workflow_handle(workflow_id, run_id=run_id)
            events = [e async for e in handle.fetch_history_events()]
        types: dict[int, str] = {}
        started: dict[int, float] = {}
        for event in events:
            at = event.event_time.ToMicroseconds() / 1e6
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                types[event.event_id] = (
                    event.activity_task_scheduled_event_attributes.activity_type.name
                )
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                started[event.activity_task_started_event_attributes.scheduled_event_id] = at
            elif kind in _CLOSED:
                scheduled = getattr(event, _CLOSED[kind]).scheduled_event_id
                if scheduled in started:
                    name = types[scheduled]
                    seconds.setdefault(name, []).append(at - started[scheduled])

    await asyncio.gather(*(one(w, r) for w, r in ids))
    return {name: sorted(values) for name, values in seconds.items()}


_CLOSED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity_task_canceled_event_attributes",
}


async def _terminate_open(client: Client, task_queue: str) -> None:
    async for execution in client.list_workflows(
        f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    ):
        if "/" not in execution.id:  # a root: its children are cancelled with it
            # it may have completed since the (eventually consistent) listing
            with contextlib.suppress(RPCError):
                await client.get_workflow_handle(execution.id).terminate("overload bench")


def _pin_apart() -> None:
    """Run the dev server on the first core and this process (client and worker) on the
    others: the server then answers as promptly as a cluster elsewhere would, and the
    worker alone is short of CPU."""
    cores = sorted(os.sched_getaffinity(0))
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            comm = stat.parent.joinpath("comm").read_text().strip()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and comm == "temporal":
            pid = int(stat.parent.name)
            for task in Path(f"/proc/{pid}/task").iterdir():
                os.sched_setaffinity(int(task.name), cores[:1])
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        os.sched_setaffinity(int(task.name), cores[1:])


def _slot_options(arguments: argparse.Namespace) -> dict[str, Any]:
    """Slot limits given on the command line (none: the ScopeWorker's defaults)."""
    options = {
        "max_concurrent_workflow_tasks": arguments.workflow_slots,
        "max_concurrent_activities": arguments.activity_slots,
    }
    return {name: value for name, value in options.items() if value is not None}


async def _main(arguments: argparse.Namespace) -> int:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
    )
    if arguments.pin:
        _pin_apart()
    if arguments.nice:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            os.setpriority(os.PRIO_PROCESS, int(task.name), arguments.nice)
    try:
        for trial in range(arguments.trials):
            with cpu_hog(None if arguments.hog else 0):
                result = await run_overload(
                    env.client,
                    runs=arguments.runs,
                    mode=arguments.mode,
                    activity_times=True,
                    worker_options=_slot_options(arguments),
                )
            print(f"trial={trial + 1} hog={arguments.hog} {result.line()}", flush=True)
            if result.latencies:
                print(f"  mean_s={statistics.mean(result.latencies):.1f}", flush=True)
    finally:
        await env.shutdown()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--hog", action="store_true", help="spin a process per core beside it")
    parser.add_argument("--pin", action="store_true", help="the server on core 0, us on the rest")
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="run client and worker at this niceness (not the server, not the hog)",
    )
    parser.add_argument("--workflow-slots", type=int, default=None)
    parser.add_argument("--activity-slots", type=int, default=None)
    parser.add_argument("--mode", default="always", choices=["always", "on_demand"])
    sys.exit(asyncio.run(_main(parser.parse_args())))
