"""Workload W without the framework: the baselines `bench/run.py` measures scope-temporal
against, side by side.

Both run W's model and tool steps (bench/workload.py) as activities, never retried, the
tools of a turn in parallel: "flat" as plain activities of one workflow, "naive child" in
the card's shape (one child workflow per tool call, each running one activity). They are
written as a user would, with Temporal's defaults (the workflow sandbox on), in a module
that imports only temporalio: the sandbox re-imports a workflow's non-standard modules for
every workflow run, so importing the SDK here would charge that to the baselines.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta  # deterministic: a value type, no clock

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

TURNS = 20
TOOLS_PER_TURN = 3
"""W's size, shared with bench/workload.py."""


@activity.defn(name="flat.model")
async def flat_model(turn: int) -> str:
    return "tools" if turn < TURNS - 1 else "final"


@activity.defn(name="flat.tool")
async def flat_tool(n: int) -> str:
    return f"fact {n}"  # what workload.lookup returns


@workflow.defn(name="flat.W")
class FlatWorkflow:
    """What you would write without a framework: the same activities, in a loop."""

    @workflow.run
    async def run(self, turns: int) -> str:
        once = RetryPolicy(maximum_attempts=1)
        timeout = timedelta(seconds=30)
        turn = 0
        while True:
            decision = await workflow.execute_activity(
                flat_model, turn, start_to_close_timeout=timeout, retry_policy=once
            )
            if decision == "final":
                return f"done after {turn} tool turns"
            await asyncio.gather(
                *(
                    workflow.execute_activity(
                        flat_tool,
                        turn * TOOLS_PER_TURN + i,
                        start_to_close_timeout=timeout,
                        retry_policy=once,
                    )
                    for i in range(TOOLS_PER_TURN)
                )
            )
            turn += 1


@workflow.defn(name="naive.Tool")
class NaiveToolWorkflow:
    """One tool call as its own workflow, running one activity."""

    @workflow.run
    async def run(self, n: int) -> str:
        return await workflow.execute_activity(
            flat_tool,
            n,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


@workflow.defn(name="naive.W")
class NaiveChildWorkflow:
    """The card's shape without a framework: a model activity per turn, then one child
    workflow per tool call (the calls of a turn at once)."""

    @workflow.run
    async def run(self, turns: int) -> str:
        once = RetryPolicy(maximum_attempts=1)
        parent = workflow.info().workflow_id
        turn = 0
        while True:
            decision = await workflow.execute_activity(
                flat_model, turn, start_to_close_timeout=timedelta(seconds=30), retry_policy=once
            )
            if decision == "final":
                return f"done after {turn} tool turns"
            await asyncio.gather(
                *(
                    workflow.execute_child_workflow(
                        NaiveToolWorkflow.run,
                        turn * TOOLS_PER_TURN + i,
                        id=f"{parent}/tool/{turn}/{i}",
                    )
                    for i in range(TOOLS_PER_TURN)
                )
            )
            turn += 1
