"""Session benchmarks (issue 17 items 1 and 5), run by `bench/run.py --only sessions,idle`.

- sessions: one session of N turns (each turn one model reply of about 200 characters,
  every fifth turn a tool round first), sent one after another. Figures: wall time and
  per-turn latency (send to Output), the session's runs (continue-as-new every 100
  turns), each run's history events and bytes (first, largest, last), the largest turn
  history, and the carried state (the last run's input). Events per run are bounded by
  `continue_as_new_every`; bytes per run grow with the transcript the run carries.
- idle: N sessions on one worker, each idle after one turn; this process's resident
  memory (the worker, the client, the benchmark) after every step of sessions, then the
  next turn of a sample of them (mostly evicted from the worker's sticky cache, so the
  turn replays the session's history first): latency p50/p99 against the first turns'.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import time  # deterministic: timing runs client-side, never in a workflow
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bench import workload
from scope_temporal import Definition, ModelRequest, Response, ScopeClient, ScopeWorker, reply
from scope_temporal.models import ScriptedModel

Figure = Callable[[str, float | int | str], None]

CHATTY = "x" * 200


def chat(request: ModelRequest) -> Response:
    """A reply of about 200 characters; a tool round first when the user says 'look'."""
    last = request.messages[-1]
    if last.role == "user" and last.text.startswith("look"):
        return reply.tool_calls(("lookup", {"n": 1}))
    return reply.text(f"turn answered {CHATTY}")


def rss_mb() -> float:
    """This process's resident memory now (Linux /proc), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, len(ordered) * p // 100)]


async def run_histories(client: Client, workflow_id: str) -> list[tuple[int, int]]:
    """(events, bytes) of every run of a workflow, oldest first."""
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    runs.sort(key=lambda e: e.start_time)
    sizes: list[tuple[int, int]] = []
    for execution in runs:
        history = await client.get_workflow_handle(
            workflow_id, run_id=execution.run_id
        ).fetch_history()
        sizes.append((len(history.events), sum(e.ByteSize() for e in history.events)))
    return sizes


def worker(env: WorkflowEnvironment, name: str, **options: Any) -> ScopeWorker:
    definition = Definition(name, instructions="Be brief.", tools=[workload.lookup])
    return ScopeWorker(
        env.client,
        task_queue=f"bench-{name}",
        definitions=[definition],
        tools=[workload.lookup],
        models={"default": ScriptedModel(chat)},
        **options,
    )


async def sessions(env: WorkflowEnvironment, turns: int, figure: Figure) -> None:
    """One session of `turns` turns (see the module docstring)."""
    async with worker(env, "chat") as served:
        scope = ScopeClient(env.client, task_queue=served.task_queue)
        session = scope.session("chat", id=f"bench-session-{time.time_ns()}")
        latencies: list[float] = []
        start = time.perf_counter()
        for n in range(turns):
            sent = time.perf_counter()
            text = "look it up" if n % 5 == 4 else f"message {n}"
            await (await session.send(text, message_id=f"m{n}")).result()
            latencies.append(time.perf_counter() - sent)
        wall = time.perf_counter() - start
        snap = await session.snapshot()
    assert len(snap.turns) == turns and all(t.status == "completed" for t in snap.turns)
    runs = await run_histories(env.client, session.id)
    turn_sizes = [
        (await run_histories(env.client, f"{session.id}/turn/{n}"))[0]
        for n in (1, turns // 2, turns)
    ]
    figure("sessions_turns", turns)
    figure("sessions_transcript_messages", snap.messages)
    figure("sessions_wall_s", wall)
    figure("sessions_turn_p50_s", statistics.median(latencies))
    figure("sessions_turn_p99_s", percentile(latencies, 99))
    figure("sessions_runs", len(runs))
    figure("sessions_run_events_max", max(e for e, _ in runs))
    figure("sessions_run_events_first_last", f"{runs[0][0]}/{runs[-1][0]}")
    figure("sessions_run_kb_first", runs[0][1] / 1024)
    figure("sessions_run_kb_last", runs[-1][1] / 1024)
    figure("sessions_run_kb_max", max(b for _, b in runs) / 1024)
    shown = "/".join(f"{b / 1024:.1f}" for _, b in turn_sizes)
    figure("sessions_turn_history_kb_first_mid_last", shown)


async def idle(env: WorkflowEnvironment, count: int, sample: int, figure: Figure) -> None:
    """`count` idle sessions on one worker, then the next turn of `sample` of them."""
    async with worker(env, "idle", max_cached_workflows=1000) as served:
        scope = ScopeClient(env.client, task_queue=served.task_queue)
        prefix = f"bench-idle-{time.time_ns()}"
        first: list[float] = []

        async def open_one(n: int) -> None:
            sent = time.perf_counter()
            turn = await scope.session("idle", id=f"{prefix}-{n}").send("hi", message_id="m1")
            await turn.result()
            first.append(time.perf_counter() - sent)

        gc.collect()
        figure("idle_rss_mb_0", rss_mb())
        step = max(1, count // 5)
        start = time.perf_counter()
        for done in range(0, count, step):
            batch = range(done, min(count, done + step))
            for chunk in range(batch.start, batch.stop, 50):
                ids = range(chunk, min(batch.stop, chunk + 50))
                await asyncio.gather(*(open_one(n) for n in ids))
            gc.collect()
            figure(f"idle_rss_mb_{batch.stop}", rss_mb())
        figure("idle_sessions", count)
        figure("idle_open_per_s", count / (time.perf_counter() - start))
        figure("idle_first_turn_p50_s", statistics.median(first))
        await asyncio.sleep(2)  # let the last turns' workflow tasks settle
        next_turn: list[float] = []
        for n in random.Random(7).sample(range(count), min(sample, count)):
            sent = time.perf_counter()
            turn = await scope.session("idle", id=f"{prefix}-{n}").send("again", message_id="m2")
            out = await turn.result()
            assert turn.id.endswith("/turn/2"), out
            next_turn.append(time.perf_counter() - sent)
        gc.collect()
        figure("idle_rss_mb_after_next_turns", rss_mb())
    figure("idle_next_turn_p50_s", statistics.median(next_turn))
    figure("idle_next_turn_p99_s", percentile(next_turn, 99))


__all__ = ["idle", "sessions"]
