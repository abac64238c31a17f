"""`bench/run.py` figures on the worker's and the server's limits.

- overload: RUNS runs of workload W started at once on one ScopeWorker (its default
  slots) beside a CPU hog (one busy process per core): runs completed, unknowns (timed-out
  activities; 0 is the goal), wall time and latency p50/p99 (see bench/overload.py).
- long_state: one Interaction of ROUNDS rounds, each one tool returning about 1 KB, with
  a `DirectoryStorage`: every run of it (continue-as-new) has a bounded history: the
  most events and bytes of any run, the number of runs, the wall time, what the store
  holds; the state at the end is over the 1 MB payload limit, so without storage it
  could not continue as new. Also the longest workflow task of any run (from each
  task's started and ended events: the CPU a task spends on the carried state shows
  here) and how many workflow tasks failed (the SDK's deadlock detector fails one that
  holds its thread over 2 s).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections.abc import Callable
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bench.overload import cpu_hog, run_overload
from bench.workload import rounds_plan
from scope_temporal import Definition, ScopeClient, ScopeWorker, ScriptedModel, tool
from scope_temporal.storage import DirectoryStorage

KILOBYTE = "k" * 1000

Figure = Callable[[str, float | int], None]


def figure(name: str, value: float | int) -> None:
    shown = f"{value:.2f}" if isinstance(value, float) else str(value)
    print(f"{name}={shown}", flush=True)


async def overload(env: WorkflowEnvironment, runs: int) -> None:
    with cpu_hog():
        result = await run_overload(env.client, runs=runs)
    figure("overload_runs", result.runs)
    figure("overload_completed", result.completed)
    figure("overload_unknowns", result.unknowns)
    figure("overload_wall_s", result.wall_s)
    figure("overload_p50_s", result.p50)
    figure("overload_p99_s", result.p99)
    if result.loop_lags:
        figure("overload_loop_lag_max_s", max(result.loop_lags))


@tool(permission="read")
def kilobyte_result(n: int) -> str:
    """Return about 1 KB."""
    return f"{n}:{KILOBYTE}"


def _rounds(rounds: int) -> ScriptedModel:
    return ScriptedModel(rounds_plan("kilobyte_result", rounds))


async def long_state(env: WorkflowEnvironment, rounds: int, figure: Figure = figure) -> None:
    store = Path(tempfile.mkdtemp(prefix="scope-bench-store-"))
    storage = DirectoryStorage(store)
    name = "long-state"
    definition = Definition(name, tools=[kilobyte_result], max_model_calls=rounds + 2)
    task_queue = f"{name}-{uuid.uuid4().hex[:8]}"
    try:
        async with ScopeWorker(
            env.client,
            task_queue=task_queue,
            definitions=[definition],
            tools=[kilobyte_result],
            models={"default": _rounds(rounds)},
            storage=storage,
        ):
            scope = ScopeClient(env.client, task_queue=task_queue, storage=storage)
            start = time.perf_counter()
            handle = await scope.start(name, "go")
            out = await handle.result()
            elapsed = time.perf_counter() - start
        assert out.model_calls == rounds + 1, out
        runs = await run_histories(env.client, handle.id)
        figure("long_state_rounds", rounds)
        figure("long_state_runs", len(runs))
        figure("long_state_max_events_per_run", max(r.events for r in runs))
        figure("long_state_max_kb_per_run", max(r.bytes for r in runs) // 1000)
        figure("long_state_max_workflow_task_s", max(r.longest_task_s for r in runs))
        figure("long_state_failed_workflow_tasks", sum(r.failed_tasks for r in runs))
        figure("long_state_wall_s", elapsed)
        figure("long_state_store_mb", sum(p.stat().st_size for p in store.iterdir()) / 1e6)
    finally:
        shutil.rmtree(store, ignore_errors=True)


@dataclasses.dataclass(frozen=True)
class RunHistory:
    """What one run of a workflow left in history."""

    events: int
    bytes: int
    longest_task_s: float
    """The longest workflow task: from its started event to its completed (or failed,
    or timed-out) event, as the server stamped them."""
    failed_tasks: int


_TASK_ENDS = (
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
)


async def run_histories(client: Client, workflow_id: str) -> list[RunHistory]:
    """Each run of `workflow_id`: its events, bytes and workflow tasks."""
    runs = []
    async for run in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        history = await client.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        started: dict[int, float] = {}
        longest, failed = 0.0, 0
        for event in history.events:
            at = event.event_time.ToNanoseconds() / 1e9
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                started[event.event_id] = at
            elif event.event_type in _TASK_ENDS:
                attrs = (
                    event.workflow_task_completed_event_attributes
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
                    else event.workflow_task_failed_event_attributes
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
                    else event.workflow_task_timed_out_event_attributes
                )
                began = started.get(attrs.started_event_id)
                if began is not None:
                    longest = max(longest, at - began)
                failed += event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        runs.append(
            RunHistory(
                events=len(history.events),
                bytes=sum(e.ByteSize() for e in history.events),
                longest_task_s=longest,
                failed_tasks=failed,
            )
        )
    return runs


async def run_sizes(client: Client, workflow_id: str) -> list[tuple[int, int]]:
    """(events, bytes) of each run of `workflow_id`'s history."""
    return [(r.events, r.bytes) for r in await run_histories(client, workflow_id)]


__all__ = ["RunHistory", "long_state", "overload", "run_histories", "run_sizes"]
