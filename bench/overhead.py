"""Framework overhead, measured side by side in one run on one dev server.

    python bench/overhead.py [--rounds 5] [--runs 10] [--parallel 20]

Compares, for the same work (ROUNDS model calls that each ask for one tool call, then a
final model call):

- `scope`: a scope-temporal Interaction (every tool call a ToolCall child workflow, the
  Definition digest recorded, snapshots/status kept);
- `baseline`: a minimal hand-written workflow calling the same model and tool functions
  as two plain activities in a loop (what you would write without a framework).

Prints the median wall time per run of each and their ratio. Numbers depend on the
machine; the ratio is what to watch.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time  # deterministic: timing runs client-side, never in the workflow
import uuid
from datetime import timedelta  # deterministic: a value type, no clock

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    reply,
    tool,
)
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path

ROUNDS = 5


@tool(permission="read")
def lookup(n: int) -> str:
    """Return a fact."""
    return f"fact {n}"


def plan(request: ModelRequest) -> Response:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < ROUNDS:
        return reply.tool_calls(("lookup", {"n": done}))
    return reply.text(f"done after {done}")


@activity.defn(name="bench.model")
async def bench_model(done: int) -> str:
    return "tool" if done < ROUNDS else "final"


@activity.defn(name="bench.tool")
async def bench_tool(n: int) -> str:
    return lookup.fn(n)


@workflow.defn(name="bench.Baseline")
class Baseline:
    @workflow.run
    async def run(self, rounds: int) -> str:
        once = RetryPolicy(maximum_attempts=1)
        timeout = timedelta(seconds=30)
        done = 0
        while True:
            decision = await workflow.execute_activity(
                bench_model, done, start_to_close_timeout=timeout, retry_policy=once
            )
            if decision == "final":
                return f"done after {done}"
            await workflow.execute_activity(
                bench_tool, done, start_to_close_timeout=timeout, retry_policy=once
            )
            done += 1


async def measure(label: str, runs: int, one: object) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await one()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    print(f"{label:9s} median {statistics.median(times) * 1000:7.1f} ms  (n={runs})")
    return times


async def timed_batch(label: str, parallel: int, one: object) -> float:
    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(parallel)))  # type: ignore[operator]
    elapsed = time.perf_counter() - start
    print(f"{label:9s} {elapsed * 1000:7.1f} ms for {parallel}  ({parallel / elapsed:.1f}/s)")
    return elapsed


async def main(rounds: int, runs: int, parallel: int) -> None:
    global ROUNDS
    ROUNDS = rounds
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
        data_converter=pydantic_data_converter,
    )
    try:
        definition = Definition("bench", tools=[lookup], max_model_calls=rounds + 5)
        # deterministic: ids are made client-side, never in a workflow
        scope_queue = f"scope-{uuid.uuid4().hex[:6]}"  # deterministic: client side
        base_queue = f"base-{uuid.uuid4().hex[:6]}"  # deterministic: client side
        async with (
            ScopeWorker(
                env.client,
                task_queue=scope_queue,
                definitions=[definition],
                tools=[lookup],
                models={"default": ScriptedModel(plan)},
            ),
            Worker(
                env.client,
                task_queue=base_queue,
                workflows=[Baseline],
                activities=[bench_model, bench_tool],
            ),
        ):
            scope = ScopeClient(env.client, task_queue=scope_queue)

            async def run_scope() -> None:
                out = await (await scope.start("bench", "go")).result()
                assert out.model_calls == rounds + 1

            async def run_baseline() -> None:
                await env.client.execute_workflow(
                    Baseline.run,
                    rounds,
                    id=f"base-{uuid.uuid4().hex}",  # deterministic: client side
                    task_queue=base_queue,
                )

            await run_scope()
            await run_baseline()  # warm up both
            print(f"{rounds} tool rounds + 1 final model call per run")
            ours = await measure("scope", runs, run_scope)
            base = await measure("baseline", runs, run_baseline)
            ratio = statistics.median(ours) / statistics.median(base)
            print(f"ratio scope/baseline: {ratio:.2f}x")
            if parallel > 1:
                print(f"{parallel} runs at once:")
                ours_all = await timed_batch("scope", parallel, run_scope)
                base_all = await timed_batch("baseline", parallel, run_baseline)
                print(f"ratio scope/baseline: {ours_all / base_all:.2f}x")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=20, help="also run N at once")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rounds, arguments.runs, arguments.parallel))
