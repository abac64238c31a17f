"""scope-temporal benchmarks, each measured side by side in one run on one local dev server.

    python bench/run.py            # full sizes (about 10 minutes on 2 cores)
    python bench/run.py --quick    # a small version of each (under 3 minutes)
    python bench/run.py --only overhead,history

Prints one `name=value` line per figure, e.g. `overhead_ratio_on_demand=1.21`:

- overhead: workload W (bench/workload.py: 20 model turns, 3 instant read tools per
  turn but the last) as a scope-temporal Interaction in each tool-call mapping (and in
  `always` again with tracing and metrics on: `always_traced`, scope-temporal's spans, and
  `always_traced_temporal`, Temporal's own spans too; spans are batched to an exporter
  that drops them; `tracing_cost_ratio_always[_temporal]` is the wall time over
  `always`'s, `tracing_cpu_ratio_always[_temporal]` the Python CPU, and
  `tracing_spans_per_run[_temporal]` how many spans one run makes), as a
  minimal hand-written workflow running the same activities ("flat"), and as a
  hand-written workflow starting one child workflow per tool call ("naive_child", the
  card's shape with no framework; `overhead_vs_naive_child_always` compares `always` to
  it); median wall time of N runs
  after a warm-up, the variants interleaved; plus CPU per run (this Python process: client,
  workers; and the dev server), workflow tasks and history bytes per turn (the root and
  any ToolCall workflows), and this process's CPU per workflow task.
- history: one Interaction of many rounds, each one tool returning about 1 KB; bytes
  added to the root's history per round around round 10 and around round 200 (including
  continue-as-new runs), and their ratio.
- concurrency: 8 tools of 1 s each, window 8: wall time of the batch.
- throughput: 100 Interactions of 3 rounds at once on one worker: rate, p50/p99 latency.
- long: 1,000 model calls in one Interaction, one small tool call each (continue-as-new
  on the way); wall time, runs, peak memory of the process.
- events: the event stream (bench/events.py): the latency from a streamed piece leaving
  the model to a subscribed host (p50/p99, long poll and by query), and the history the
  streamed text and a subscriber add to the root per model call.
- sessions: one session of 1,000 turns: history per run (bench/sessions.py).
- idle: 10,000 idle sessions on one worker (`--idle N` for another size): memory, and the
  next turn's latency p50/p99 (bench/sessions.py).
- long_state: 5,000 rounds of 1 KB tool results with a DirectoryStorage: runs, the most
  events and bytes of one run, wall time, store size (bench/limits.py).
- overload: 100 W runs at once on one worker beside a CPU hog: completed, unknowns, wall
  time, latency p50/p99 (bench/limits.py, bench/overload.py).
- ledger: the cost ledger of W in the four variants (bytes by event type and payload
  field, workflow tasks, billable actions, CPU) and 40 W runs at once in each
  (bench/ledger.py).
- task_progress: a background task publishing 10,000 progress events over 30 s, with a
  history bound of 200 events: runs (continue-as-new), the most events and bytes of one
  run, history events per progress report; checkpoint and count carried over exactly
  (asserted; bench/task_progress.py).
- mcp: W with its tool served by a local MCP server over stdio against W with the local
  `@tool`, in each mapping: the ratio and the extra milliseconds per call
  (bench/mcp_calls.py).

The dev server runs with the settings of `scope_temporal.testing.devserver` (one
task-queue partition, `history.transferProcessorMaxPollRPS=1000`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import opentelemetry.trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` as a package

from bench import baselines, events, ledger, limits, mcp_calls, task_progress, workload
from bench import sessions as session_bench
from scope_temporal import (
    Definition,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    configure_tracing,
    reply,
    tool,
)
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.names import MODEL_ACTIVITY, SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path

MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")


FIGURES_FILE = Path(__file__).resolve().parents[1] / "docs" / "figures.json"
"""Where a full run records its figures: the one source the docs quote them from."""

FIGURES: dict[str, float | int | str] = {}


def figure(name: str, value: float | int | str) -> None:
    shown = f"{value:.2f}" if isinstance(value, float) else str(value)
    print(f"{name}={shown}", flush=True)
    FIGURES[name] = round(value, 2) if isinstance(value, float) else value


def record_figures(path: Path, figures: dict[str, float | int | str], command: str) -> None:
    """Merge `figures` into `path` (docs/figures.json), each with its date, machine and
    command; figures of other benchmarks keep theirs."""
    known = json.loads(path.read_text()) if path.exists() else {"figures": {}}
    stamp = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}",
        "command": command,
    }
    for name, value in sorted(figures.items()):
        known["figures"][name] = {"value": value, **stamp}
    known["figures"] = dict(sorted(known["figures"].items()))
    path.write_text(json.dumps(known, indent=1, ensure_ascii=False) + "\n")


def server_cpu_seconds() -> float:
    """CPU time used so far by the dev server this process started (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[1] is the parent pid; utime and stime are fields 14 and 15 of the line
        if int(fields[1]) == os.getpid() and "temporal" in stat.parent.joinpath("comm").read_text():
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def queue(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"  # deterministic: client side


@asynccontextmanager
async def serving(
    env: WorkflowEnvironment, definition: Definition, tool_: Any, model: ScriptedModel
) -> AsyncIterator[ScopeClient]:
    """A ScopeWorker for one Definition on a fresh task queue, and a client for it."""
    task_queue = queue(definition.name)
    async with ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=[definition],
        tools=[tool_],
        models={"default": model},
    ):
        yield ScopeClient(env.client, task_queue=task_queue)


async def root_events(client: Client, workflow_id: str) -> list[tuple[int, int, str]]:
    """(event type, bytes, activity type or "") of every event of every run of
    `workflow_id`, oldest run first."""
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    runs.sort(key=lambda e: e.start_time)
    events: list[tuple[int, int, str]] = []
    for run in runs:
        history = await client.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        events += [
            (
                e.event_type,
                e.ByteSize(),
                e.activity_task_scheduled_event_attributes.activity_type.name,
            )
            for e in history.events
        ]
    return events


# --- overhead ---------------------------------------------------------------------------


async def overhead(env: WorkflowEnvironment, runs: int) -> None:
    client = env.client
    flat_queue, scope_queue = queue("flat"), queue("scope")
    definitions = [workload.definition(mode) for mode in MODES]
    configure_tracing(_Drop())  # once per process: every span goes to one exporter
    async with (
        Worker(
            client,
            task_queue=flat_queue,
            workflows=[
                baselines.FlatWorkflow,
                baselines.NaiveChildWorkflow,
                baselines.NaiveToolWorkflow,
            ],
            activities=[baselines.flat_model, baselines.flat_tool],
        ),
        ScopeWorker(
            client,
            task_queue=scope_queue,
            definitions=definitions,
            tools=[workload.lookup],
            models={"default": ScriptedModel(workload.plan)},
        ),
        traced_worker(env, temporal_spans=False) as traced,
        traced_worker(env, temporal_spans=True) as traced_temporal,
    ):
        scope = ScopeClient(client, task_queue=scope_queue)
        last_ids: dict[str, str] = {}

        async def flat() -> None:
            workflow_id = f"flat-{uuid.uuid4().hex}"  # deterministic: client side
            await client.execute_workflow(
                baselines.FlatWorkflow.run, workload.TURNS, id=workflow_id, task_queue=flat_queue
            )
            last_ids["flat"] = workflow_id

        async def naive_child() -> None:
            workflow_id = f"naive-{uuid.uuid4().hex}"  # deterministic: client side
            await client.execute_workflow(
                baselines.NaiveChildWorkflow.run,
                workload.TURNS,
                id=workflow_id,
                task_queue=flat_queue,
            )
            last_ids["naive_child"] = workflow_id

        def interaction(mode: str) -> Callable[[], Awaitable[None]]:
            async def one() -> None:
                handle = await scope.start(f"w-{mode}", "go")
                out = await handle.result()
                assert out.model_calls == workload.TURNS, out
                last_ids[mode] = handle.id

            return one

        variants: dict[str, Callable[[], Awaitable[None]]] = {
            "flat": flat,
            "naive_child": naive_child,
        }
        variants.update({mode: interaction(mode) for mode in MODES})

        def traced_run(name: str, scope: ScopeClient) -> Callable[[], Awaitable[None]]:
            async def one() -> None:
                workflow_id = f"{name}-{uuid.uuid4().hex}"  # deterministic: client side
                handle = await scope.start("w-always", "go", id=workflow_id)
                out = await handle.result()
                assert out.model_calls == workload.TURNS, out
                last_ids[name] = handle.id

            return one

        variants["always_traced"] = traced_run("always_traced", traced)
        variants["always_traced_temporal"] = traced_run("always_traced_temporal", traced_temporal)
        for one in variants.values():
            await one()  # warm up
        walls: dict[str, list[float]] = {name: [] for name in variants}
        cpus: dict[str, list[float]] = {name: [] for name in variants}
        servers: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(runs):
            for name, one in variants.items():
                cpu, server, start = time.process_time(), server_cpu_seconds(), time.perf_counter()
                await one()
                walls[name].append(time.perf_counter() - start)
                cpus[name].append(time.process_time() - cpu)
                servers[name].append(server_cpu_seconds() - server)
        base = statistics.median(walls["flat"])
        for name in variants:
            wall = statistics.median(walls[name])
            figure(f"overhead_wall_ms_{name}", wall * 1000)
            figure(f"overhead_cpu_ms_{name}", statistics.median(cpus[name]) * 1000)
            figure(f"overhead_server_cpu_ms_{name}", statistics.median(servers[name]) * 1000)
            per_round = 1000 / workload.TURNS  # a round: one model call and its tool calls
            figure(f"overhead_cpu_ms_per_round_{name}", statistics.median(cpus[name]) * per_round)
            figure(
                f"overhead_server_cpu_ms_per_round_{name}",
                statistics.median(servers[name]) * per_round,
            )
            if name != "flat":
                figure(f"overhead_ratio_{name}", wall / base)
        provider = opentelemetry.trace.get_tracer_provider()
        getattr(provider, "force_flush", lambda: None)()  # the last runs' last spans
        for suffix in ("", "_temporal"):
            traced_name = f"always_traced{suffix}"
            figure(
                f"tracing_cost_ratio_always{suffix}",
                statistics.median(walls[traced_name]) / statistics.median(walls["always"]),
            )
            figure(
                f"tracing_cpu_ratio_always{suffix}",
                statistics.median(cpus[traced_name]) / statistics.median(cpus["always"]),
            )
            figure(f"tracing_spans_per_run{suffix}", _Drop.by_run[last_ids[traced_name]])
        naive = statistics.median(walls["naive_child"])
        figure("overhead_vs_naive_child_always", statistics.median(walls["always"]) / naive)
        turns = workload.TURNS
        for name, workflow_id in last_ids.items():
            events = await root_events(client, workflow_id)
            children = [
                e.id
                async for e in client.list_workflows(
                    f"WorkflowType IN ('scope.ToolCall', 'naive.Tool') "
                    f"AND RootWorkflowId = '{workflow_id}'"
                )
            ]
            for child in children:
                events += await root_events(client, child)
            tasks = sum(
                1 for t, _, _ in events if t == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
            )
            figure(f"overhead_tool_call_workflows_{name}", len(children))
            figure(f"overhead_workflow_tasks_per_turn_{name}", tasks / turns)
            figure(f"overhead_history_bytes_per_turn_{name}", sum(b for _, b, _ in events) // turns)
            figure(
                f"overhead_cpu_ms_per_workflow_task_{name}",
                statistics.median(cpus[name]) * 1000 / tasks,
            )
        for suffix in ("", "_temporal"):  # the trace context every call's header carries
            added = FIGURES[f"overhead_history_bytes_per_turn_always_traced{suffix}"]
            added -= FIGURES["overhead_history_bytes_per_turn_always"]  # type: ignore[operator]
            figure(f"tracing_history_bytes_added_per_turn{suffix}", added)


class _Drop(SpanExporter):
    """Takes every span batch and drops it (the cost measured is making the spans),
    counting them by the Interaction they belong to."""

    by_run: Counter[str] = Counter()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            attributes = span.attributes or {}
            owner = attributes.get("scope.process_id") or attributes.get("temporalWorkflowID")
            _Drop.by_run[str(owner).split("/", 1)[0]] += 1
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


@asynccontextmanager
async def traced_worker(
    env: WorkflowEnvironment, *, temporal_spans: bool
) -> AsyncIterator[ScopeClient]:
    """W's `always` Definition served with tracing on, as a deployment runs it (a
    replay-safe provider exporting in batches), on the same connection and runtime as the
    other variants; `metrics=True` too (the bench runtime has no metrics exporter, so this
    measures recording them, not serving them). `temporal_spans`: the client carries
    `OpenTelemetryPlugin(add_temporal_spans=True)` (ScopeWorker keeps it). The global
    tracer provider is set once, by `overhead`."""
    client = env.client
    if temporal_spans:
        config = client.config()
        config["plugins"] = [OpenTelemetryPlugin(add_temporal_spans=True)]
        client = Client(**config)
    task_queue = queue("traced")
    async with ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=[workload.definition("always")],
        tools=[workload.lookup],
        models={"default": ScriptedModel(workload.plan)},
        tracing=True,
        metrics=True,
    ):
        yield ScopeClient(client, task_queue=task_queue, tracing=True)


# --- history growth ---------------------------------------------------------------------


KILOBYTE = "k" * 1000


@tool(permission="read")
def kilobyte(n: int) -> str:
    """Return about 1 KB."""
    return f"{n}:{KILOBYTE}"


def bytes_per_round(events: list[tuple[int, int, str]]) -> list[int]:
    """Root-history bytes each round added; a round starts where its model activity is
    scheduled (a continue-as-new run's first event counts in the round it happened in)."""
    starts = [i for i, (_, _, activity) in enumerate(events) if activity == MODEL_ACTIVITY]
    return [sum(b for _, b, _ in events[a:z]) for a, z in itertools.pairwise(starts)]


async def history(env: WorkflowEnvironment, rounds: int, early: int, late: int) -> None:
    for mode in MODES:
        name = f"history-{mode}"
        definition = Definition(
            name, tools=[kilobyte], max_model_calls=rounds + 2, tool_call_workflows=mode
        )
        async with serving(
            env, definition, kilobyte, ScriptedModel(workload.rounds_plan("kilobyte", rounds))
        ) as scope:
            handle = await scope.start(name, "go")
            await handle.result()
        events = await root_events(env.client, handle.id)
        per_round = bytes_per_round(events)
        window = 10
        at_early = statistics.mean(per_round[early - 1 : early - 1 + window])
        at_late = statistics.mean(per_round[late - 1 : late - 1 + window])
        runs = sum(1 for t, _, _ in events if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
        figure(f"history_bytes_per_round_at_{early}_{mode}", int(at_early))
        figure(f"history_bytes_per_round_at_{late}_{mode}", int(at_late))
        figure(f"history_growth_ratio_{mode}", at_late / at_early)
        figure(f"history_runs_{mode}", runs)
        figure(f"history_total_kb_{mode}", sum(b for _, b, _ in events) // 1000)


# --- concurrency ------------------------------------------------------------------------


@tool(permission="read")
async def one_second(n: int) -> str:
    """Take one second."""
    await asyncio.sleep(1)
    return f"slept {n}"


async def concurrency(env: WorkflowEnvironment) -> None:
    for mode in MODES:
        name = f"wide-{mode}"
        model = ScriptedModel(
            lambda r: (
                reply.text("done")
                if any(m.role == "tool" for m in r.messages)
                else reply.tool_calls(*[("one_second", {"n": i}) for i in range(8)])
            )
        )
        definition = Definition(
            name, tools=[one_second], max_concurrent_tool_calls=8, tool_call_workflows=mode
        )
        async with serving(env, definition, one_second, model) as scope:
            await (await scope.start(name, "warm up")).result()
            start = time.perf_counter()
            await (await scope.start(name, "go")).result()
            figure(f"concurrency_8x1s_wall_s_{mode}", time.perf_counter() - start)


# --- throughput -------------------------------------------------------------------------


async def throughput(env: WorkflowEnvironment, count: int) -> None:
    for mode in MODES:
        name = f"many-{mode}"
        definition = Definition(
            name, tools=[workload.lookup], max_model_calls=10, tool_call_workflows=mode
        )
        async with serving(
            env, definition, workload.lookup, ScriptedModel(workload.rounds_plan("lookup", 3))
        ) as scope:
            await (await scope.start(name, "warm up")).result()
            latencies = await _latencies(scope, name, count)
            elapsed = latencies.pop()
        latencies.sort()
        figure(f"throughput_per_s_{mode}", count / elapsed)
        figure(f"throughput_p50_s_{mode}", latencies[len(latencies) // 2])
        figure(f"throughput_p99_s_{mode}", latencies[min(len(latencies) - 1, count * 99 // 100)])


async def _latencies(scope: ScopeClient, name: str, count: int) -> list[float]:
    """Latency of each of `count` Interactions started at once, then the total wall time."""
    latencies: list[float] = []

    async def one() -> None:
        start = time.perf_counter()
        out = await (await scope.start(name, "go")).result()
        assert out.model_calls == 4
        latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return [*latencies, time.perf_counter() - start]


# --- long run ---------------------------------------------------------------------------


async def long_run(env: WorkflowEnvironment, model_calls: int) -> None:
    for mode in MODES:
        name = f"long-{mode}"
        definition = Definition(
            name, tools=[workload.lookup], max_model_calls=model_calls, tool_call_workflows=mode
        )
        async with serving(
            env,
            definition,
            workload.lookup,
            ScriptedModel(workload.rounds_plan("lookup", model_calls - 1)),
        ) as scope:
            start = time.perf_counter()
            handle = await scope.start(name, "go")
            out = await handle.result()
            elapsed = time.perf_counter() - start
        assert out.model_calls == model_calls, out
        runs = [e async for e in env.client.list_workflows(f"WorkflowId = '{handle.id}'")]
        figure(f"long_model_calls_{mode}", out.model_calls)
        figure(f"long_wall_s_{mode}", elapsed)
        figure(f"long_runs_{mode}", len(runs))
        # the whole benchmark process: server client, worker and both Interactions so far
        figure(
            f"long_peak_rss_mb_{mode}", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        )


# --- main -------------------------------------------------------------------------------


ALL = (
    "overhead",
    "history",
    "concurrency",
    "throughput",
    "long",
    "events",
    "sessions",
    "idle",
    "long_state",
    "overload",
    "task_progress",
    "ledger",
    "mcp",
)


async def main(
    quick: bool, only: tuple[str, ...], idle: int | None = None, rounds: int | None = None
) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
    )
    try:
        if "overhead" in only:
            await overhead(env, runs=3 if quick else 5)
        if "history" in only:
            if quick:
                await history(env, rounds=60, early=10, late=50)
            else:
                await history(env, rounds=215, early=10, late=200)
        if "concurrency" in only:
            await concurrency(env)
        if "throughput" in only:
            await throughput(env, count=20 if quick else 100)
        if "long" in only:
            await long_run(env, model_calls=100 if quick else 1000)
        if "events" in only:
            await events.events(env, runs=3 if quick else 10, tokens=150, rate=30.0, figure=figure)
        if "sessions" in only:
            await session_bench.sessions(env, turns=100 if quick else 1000, figure=figure)
        if "idle" in only:
            count = idle or (500 if quick else 10_000)
            await session_bench.idle(env, count=count, sample=100, figure=figure)
        if "long_state" in only:
            count = rounds or (300 if quick else 5000)
            await limits.long_state(env, rounds=count, figure=figure)
        if "overload" in only:
            await limits.overload(env, runs=20 if quick else 100)
        if "task_progress" in only:
            await task_progress.task_progress(
                env, events=10_000, seconds=10 if quick else 30, bound=200, figure=figure
            )
        if "ledger" in only:
            await ledger.ledger(
                env, at_once=10 if quick else 40, figure=figure, server_cpu=server_cpu_seconds
            )
        if "mcp" in only:
            await mcp_calls.mcp(env, runs=3 if quick else 5, figure=figure)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, under 3 minutes")
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated: {','.join(ALL)}")
    parser.add_argument("--idle", type=int, default=None, help="how many idle sessions")
    parser.add_argument("--rounds", type=int, default=None, help="long_state's rounds")
    parser.add_argument(
        "--figures",
        type=Path,
        default=None,
        help=f"record the figures here (default: {FIGURES_FILE.name} in docs/ for a full-size "
        "run, nowhere with --quick)",
    )
    arguments = parser.parse_args()
    chosen = tuple(x for x in arguments.only.split(",") if x)
    unknown = sorted(set(chosen) - set(ALL))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(ALL)}")
    asyncio.run(main(arguments.quick, chosen, arguments.idle, arguments.rounds))
    target = arguments.figures or (None if arguments.quick else FIGURES_FILE)
    if target is not None:
        record_figures(target, FIGURES, "python bench/run.py " + " ".join(sys.argv[1:]))
