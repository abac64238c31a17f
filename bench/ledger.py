"""The cost ledger: where every byte, task and billable action of workload W goes.

    python bench/run.py --only ledger            # one W run per variant, then 40 at once
    python bench/run.py --only ledger --quick    # 10 at once

For each variant (the hand-written "flat" workflow, the hand-written child-workflow-per-call
shape "naive_child", both carrying no agent data; the same two shapes written by hand as an
agent, carrying the conversation and the calls, "agent_flat" and "agent_child"
(`bench/agent_baselines.py`); and scope-temporal's `always` and `on_demand` mappings) it runs W once
and reads back every history it made (the root's runs and every child's), then prints:

- `ledger_bytes_{variant}`: history bytes of root and children together (protobuf, as the
  server stores them), `ledger_root_bytes_{variant}` the root alone;
- `ledger_events_{variant}`, `ledger_workflow_tasks_{variant}`;
- `ledger_actions_{variant}`: the billable actions a Temporal Cloud user would pay for,
  estimated from the histories by Temporal's published rules (a workflow start 1, a child
  workflow 2, an activity start 1, a timer 1, a signal 1, an accepted update 1, a search
  attribute upsert 1, the markers of one workflow task 1). Queries and activity heartbeats
  are billable too but leave no event: they are not counted (W has neither on purpose);
- `ledger_cpu_ms_{variant}` (this Python process: client and workers) and
  `ledger_server_cpu_ms_{variant}` (the dev server) for the one run;
- `ledger_event_{variant}_{EventType}`: bytes by event type (summed over runs and children);
- `ledger_field_{variant}_{owner}`: bytes by payload field of the inputs and results we
  own, e.g. `ledger_field_always_scope.ToolCall.input.definition_digest`: the JSON bytes
  of that top-level field (two levels deep for objects), summed over the run; the bytes an
  event carries beyond its payloads are `..._{EventType}.envelope`.

Then throughput: N W runs started at once in each variant on one worker process:
`ledger_throughput_per_s_{variant}`, `ledger_p50_s_{variant}`, `ledger_p99_s_{variant}`
and `ledger_stalled_{variant}` (runs not done within `STALL_SECONDS`), with the CPU the
batch took per run (`ledger_batch_cpu_ms_per_run_{variant}`, `..._server_cpu_ms_...`) and
as a share of the machine's cores (`ledger_batch_cpu_share_{variant}`: near 1.0, the
variant is bound by CPU). Last, the ratios of
each of our mappings to the hand-written shapes it is compared with (`COMPARED`), e.g.
`ledger_bytes_vs_naive_child_always`, `ledger_root_bytes_vs_flat_on_demand`,
`ledger_throughput_vs_agent_child_always`.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench import agent_baselines, baselines, workload
from scope_temporal import ScopeClient, ScopeWorker, ScriptedModel

Figure = Callable[[str, float | int | str], None]
Variant = Callable[[], Awaitable[str]]
"""Runs W once and returns the root workflow's id."""

VARIANTS = ("flat", "naive_child", "agent_flat", "agent_child", "always", "on_demand")
COMPARED = (
    ("always", "naive_child"),
    ("always", "agent_child"),
    ("on_demand", "flat"),
    ("on_demand", "agent_flat"),
)
"""(ours, the hand-written shape it is measured against): each pair's ratios of bytes,
root bytes and throughput are figures of their own."""
STALL_SECONDS = 300.0
"""A run of the throughput batch not done this long after the batch started has stalled."""

CHILD_TYPES = (
    "scope.ToolCall",
    "naive.Tool",
    "agent.Tool",
    "scope.Interaction",
    "scope.BackgroundTask",
)


def _name(event_type: int) -> str:
    return EventType.Name(event_type).removeprefix("EVENT_TYPE_")


class Ledger:
    """Bytes by event type and by payload field, tasks and billable actions, of the
    histories one W run made."""

    def __init__(self) -> None:
        self.by_event: Counter[str] = Counter()
        self.by_field: Counter[str] = Counter()
        self.events = 0
        self.bytes = 0
        self.root_bytes = 0
        self.workflow_tasks = 0
        self.actions = 0

    def add_history(self, workflow_type: str, events: Iterable[HistoryEvent], *, root: bool):
        """Account one run's events; `workflow_type` names the run's own payloads."""
        activity_types: dict[int, str] = {}
        child_types: dict[int, str] = {}
        marker_tasks: set[int] = set()
        last_task = 0
        for event in events:
            size = event.ByteSize()
            kind = _name(event.event_type)
            self.events += 1
            self.bytes += size
            if root:
                self.root_bytes += size
            self.by_event[kind] += size
            carried = 0
            for owner, payloads in self._payloads(
                workflow_type, event, activity_types, child_types
            ):
                for payload in payloads:
                    carried += payload.ByteSize()
                    self._fields(owner, payload)
            self.by_field[f"{kind}.envelope"] += size - carried
            self._count(event, root, marker_tasks, last_task)
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                self.workflow_tasks += 1
                last_task = event.event_id

    def _count(self, event: HistoryEvent, root: bool, markers: set[int], task: int) -> None:
        """Billable actions, by Temporal Cloud's published rules (module docstring)."""
        t = event.event_type
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED and root:
            self.actions += 1  # a child's own start is counted on its parent's side
        elif t == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            self.actions += 2
        elif t in (
            EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            EventType.EVENT_TYPE_TIMER_STARTED,
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
            EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
        ):
            self.actions += 1
        elif t == EventType.EVENT_TYPE_MARKER_RECORDED and task not in markers:
            markers.add(task)
            self.actions += 1

    @staticmethod
    def _payloads(
        workflow_type: str,
        event: HistoryEvent,
        activity_types: dict[int, str],
        child_types: dict[int, str],
    ) -> list[tuple[str, Iterable[Payload]]]:
        """(owner, payloads) of every payload list the event carries."""
        t = event.event_type
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            a = event.workflow_execution_started_event_attributes
            return [(f"{workflow_type}.input", a.input.payloads)]
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            a2 = event.workflow_execution_completed_event_attributes
            return [(f"{workflow_type}.result", a2.result.payloads)]
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            a3 = event.workflow_execution_continued_as_new_event_attributes
            return [(f"{workflow_type}.carry", a3.input.payloads)]
        if t == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a4 = event.activity_task_scheduled_event_attributes
            activity_types[event.event_id] = a4.activity_type.name
            return [(f"{a4.activity_type.name}.input", a4.input.payloads)]
        if t == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            a5 = event.activity_task_completed_event_attributes
            name = activity_types.get(a5.scheduled_event_id, "activity")
            return [(f"{name}.result", a5.result.payloads)]
        if t == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            a6 = event.start_child_workflow_execution_initiated_event_attributes
            child_types[event.event_id] = a6.workflow_type.name
            return [(f"{a6.workflow_type.name}.input", a6.input.payloads)]
        if t == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            a7 = event.child_workflow_execution_completed_event_attributes
            return [(f"{a7.workflow_type.name}.result", a7.result.payloads)]
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            a8 = event.workflow_execution_signaled_event_attributes
            return [(f"signal.{a8.signal_name}", a8.input.payloads)]
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            a9 = event.workflow_execution_update_accepted_event_attributes
            request = a9.accepted_request.input
            return [(f"update.{request.name}", request.args.payloads)]
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            a10 = event.workflow_execution_update_completed_event_attributes
            return [("update.result", a10.outcome.success.payloads)]
        if t == EventType.EVENT_TYPE_MARKER_RECORDED:
            a11 = event.marker_recorded_event_attributes
            details = [p for v in a11.details.values() for p in v.payloads]
            return [(f"marker.{a11.marker_name}", details)]
        return []

    def _fields(self, owner: str, payload: Payload) -> None:
        """Split one payload's bytes: its metadata, and its JSON by top-level field."""
        self.by_field[f"{owner}.metadata"] += payload.ByteSize() - len(payload.data)
        try:
            value = json.loads(payload.data)
        except ValueError:
            self.by_field[f"{owner}.(binary)"] += len(payload.data)
            return
        for path, size in _field_sizes(value, owner, depth=2):
            self.by_field[path] += size

    def report(self, variant: str, figure: Figure) -> None:
        figure(f"ledger_bytes_{variant}", self.bytes)
        figure(f"ledger_root_bytes_{variant}", self.root_bytes)
        figure(f"ledger_events_{variant}", self.events)
        figure(f"ledger_workflow_tasks_{variant}", self.workflow_tasks)
        figure(f"ledger_actions_{variant}", self.actions)
        for kind, size in self.by_event.most_common():
            figure(f"ledger_event_{variant}_{kind}", size)
        for owner, size in self.by_field.most_common():
            if size:
                figure(f"ledger_field_{variant}_{owner}", size)


def _field_sizes(value: Any, path: str, depth: int) -> list[tuple[str, int]]:
    """(path, bytes) of each field of a JSON object, down to `depth` levels; a value that
    is not an object (or at the last level) is one entry. The separators between fields
    are charged to the object (`path.{}`)."""
    whole = len(json.dumps(value, separators=(",", ":")))
    if not isinstance(value, dict) or depth == 0 or not value:
        return [(path, whole)]
    sizes: list[tuple[str, int]] = []
    inside = 0
    for key, item in value.items():
        key_bytes = len(json.dumps(key)) + 1  # "key":
        parts = _field_sizes(item, f"{path}.{key}", depth - 1)
        parts[0] = (parts[0][0], parts[0][1] + key_bytes)
        sizes += parts
        inside += key_bytes + len(json.dumps(item, separators=(",", ":")))
    sizes.append((f"{path}.{{}}", whole - inside))
    return sizes


async def histories(client: Client, workflow_id: str) -> Ledger:
    """The ledger of every run of `workflow_id` and of every child of its tree."""
    ledger = Ledger()
    query = f"WorkflowId = '{workflow_id}' OR RootWorkflowId = '{workflow_id}'"
    runs = [e async for e in client.list_workflows(query)]
    runs.sort(key=lambda e: (e.id != workflow_id, e.start_time))
    for run in runs:
        handle = client.get_workflow_handle(run.id, run_id=run.run_id)
        history = await handle.fetch_history()
        ledger.add_history(run.workflow_type, history.events, root=run.id == workflow_id)
    return ledger


async def _visible(client: Client, workflow_id: str, expected_children: int) -> None:
    """Wait until visibility lists the tree's children (it lags the histories)."""
    query = f"RootWorkflowId = '{workflow_id}' AND WorkflowId != '{workflow_id}'"
    for _ in range(100):
        count = (await client.count_workflows(query)).count
        if count >= expected_children:
            return
        await asyncio.sleep(0.1)


async def ledger(
    env: WorkflowEnvironment,
    *,
    at_once: int,
    figure: Figure,
    server_cpu: Callable[[], float],
) -> None:
    """One W run per variant, its ledger; then `at_once` runs per variant at once."""
    client = env.client
    flat_queue = f"ledger-flat-{uuid.uuid4().hex[:8]}"  # deterministic: client side
    scope_queue = f"ledger-scope-{uuid.uuid4().hex[:8]}"  # deterministic: client side
    async with (
        Worker(
            client,
            task_queue=flat_queue,
            workflows=[
                baselines.FlatWorkflow,
                baselines.NaiveChildWorkflow,
                baselines.NaiveToolWorkflow,
                *agent_baselines.WORKFLOWS,
            ],
            activities=[baselines.flat_model, baselines.flat_tool, *agent_baselines.ACTIVITIES],
            max_concurrent_workflow_tasks=100,
        ),
        ScopeWorker(
            client,
            task_queue=scope_queue,
            definitions=[workload.definition(mode) for mode in ("always", "on_demand")],
            tools=[workload.lookup],
            models={"default": ScriptedModel(workload.plan)},
        ),
    ):
        scope = ScopeClient(client, task_queue=scope_queue)

        def hand_written(workflow: Any, prefix: str, argument: object) -> Variant:
            async def one() -> str:
                workflow_id = f"{prefix}-{uuid.uuid4().hex}"  # deterministic: client side
                out = await client.execute_workflow(
                    workflow, argument, id=workflow_id, task_queue=flat_queue
                )
                assert out == f"done after {workload.TURNS - 1} tool turns", out
                return workflow_id

            return one

        def interaction(mode: str) -> Variant:
            async def one() -> str:
                handle = await scope.start(f"w-{mode}", "go")
                out = await handle.result()
                assert out.model_calls == workload.TURNS, out
                return handle.id

            return one

        variants: dict[str, Variant] = {
            "flat": hand_written(baselines.FlatWorkflow.run, "flat", workload.TURNS),
            "naive_child": hand_written(baselines.NaiveChildWorkflow.run, "naive", workload.TURNS),
            "agent_flat": hand_written(agent_baselines.AgentFlatWorkflow.run, "agent", "go"),
            "agent_child": hand_written(agent_baselines.AgentChildWorkflow.run, "agentc", "go"),
            "always": interaction("always"),
            "on_demand": interaction("on_demand"),
        }
        children = {"flat": 0, "agent_flat": 0, "on_demand": 0}
        books: dict[str, Ledger] = {}
        for name, one in variants.items():
            await one()  # warm up
            cpu, server = time.process_time(), server_cpu()
            workflow_id = await one()
            cpu, server = time.process_time() - cpu, server_cpu() - server
            expected = children.get(name, (workload.TURNS - 1) * workload.TOOLS_PER_TURN)
            await _visible(client, workflow_id, expected)
            book = books[name] = await histories(client, workflow_id)
            book.report(name, figure)
            figure(f"ledger_cpu_ms_{name}", cpu * 1000)
            figure(f"ledger_server_cpu_ms_{name}", server * 1000)
        rates: dict[str, float] = {}
        for name, one in variants.items():
            rates[name] = await _at_once(name, one, at_once, figure, server_cpu)
        for ours, theirs in COMPARED:
            figure(f"ledger_bytes_vs_{theirs}_{ours}", books[ours].bytes / books[theirs].bytes)
            root = books[ours].root_bytes / books[theirs].root_bytes
            figure(f"ledger_root_bytes_vs_{theirs}_{ours}", root)
            figure(f"ledger_throughput_vs_{theirs}_{ours}", rates[ours] / rates[theirs])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        figure("ledger_peak_rss_mb", peak / 1024)


async def _at_once(
    name: str, one: Variant, count: int, figure: Figure, server_cpu: Callable[[], float]
) -> float:
    """Start `count` runs of a variant at once: runs/s, p50/p99, how many stalled, and the
    CPU the batch took (this process, the dev server) per run and as a share of the
    machine's cores over the batch: a variant near 1.0 is bound by CPU, one well under
    it by something else (latency, slots, the server's queues)."""
    latencies: list[float] = []
    start = time.perf_counter()
    cpu, server = time.process_time(), server_cpu()

    async def timed() -> None:
        began = time.perf_counter()
        await one()
        latencies.append(time.perf_counter() - began)

    tasks = [asyncio.ensure_future(timed()) for _ in range(count)]
    done, pending = await asyncio.wait(tasks, timeout=STALL_SECONDS)
    for task in pending:
        task.cancel()
    failed = sum(1 for task in done if task.exception() is not None)
    elapsed = time.perf_counter() - start
    cpu, server = time.process_time() - cpu, server_cpu() - server
    latencies.sort()
    rate = len(latencies) / elapsed
    figure(f"ledger_batch_cpu_ms_per_run_{name}", cpu * 1000 / count)
    figure(f"ledger_batch_server_cpu_ms_per_run_{name}", server * 1000 / count)
    figure(f"ledger_batch_cpu_share_{name}", (cpu + server) / elapsed / (os.cpu_count() or 1))
    figure(f"ledger_throughput_per_s_{name}", rate)
    if latencies:
        figure(f"ledger_p50_s_{name}", statistics.median(latencies))
        figure(f"ledger_p99_s_{name}", latencies[min(len(latencies) - 1, count * 99 // 100)])
    figure(f"ledger_stalled_{name}", len(pending) + failed)
    return rate


__all__ = ["VARIANTS", "Ledger", "histories", "ledger"]
