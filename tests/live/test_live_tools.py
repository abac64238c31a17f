"""CONFORMANCE 13-16 live: order of results, the window, concurrency keys, barriers."""

from __future__ import annotations

import asyncio
import time

from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ScriptedModel, reply, tool
from tests.live.harness import serving

log: list[str] = []
running = {"now": 0, "max": 0}
spans: dict[str, tuple[float, float]] = {}
"""name -> (start, end), monotonic seconds, as the tool bodies saw them."""


async def _work(name: str, seconds: float) -> str:
    running["now"] += 1
    running["max"] = max(running["max"], running["now"])
    log.append(f"start {name}")
    start = time.monotonic()
    await asyncio.sleep(seconds)
    spans[name] = (start, time.monotonic())
    log.append(f"end {name}")
    running["now"] -= 1
    return name


@tool(permission="read")
async def sleepy(name: str, seconds: float) -> str:
    """Sleep then answer."""
    return await _work(name, seconds)


@tool(permission="write", execution="parallel", concurrency_key="db")
async def db_write(name: str, seconds: float) -> str:
    """Write to the database (one at a time)."""
    return await _work(name, seconds)


@tool(permission="write")
async def write_file(name: str, seconds: float) -> str:
    """Write a file (sequential by default: a barrier in its batch)."""
    return await _work(name, seconds)


def reset() -> None:
    log.clear()
    spans.clear()
    running.update(now=0, max=0)


async def test_c13_live_results_reach_the_model_in_call_order(
    temporal_env: WorkflowEnvironment,
) -> None:
    reset()
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("sleepy", {"name": "slow", "seconds": 0.8}),
                ("sleepy", {"name": "fast", "seconds": 0.05}),
            ),
            reply.text("done"),
        ]
    )
    definition = Definition("order", tools=[sleepy], max_concurrent_tool_calls=2)
    async with serving(
        temporal_env, [definition], tools=[sleepy], models={"default": model}
    ) as scope:
        await (await scope.start("order", "go")).result()
    assert log.index("end fast") < log.index("end slow")
    results = model.requests[1].messages[-1].tool_results
    assert [r.content for r in results] == ["slow", "fast"]


async def test_c14_live_window_of_two_refills_when_any_call_finishes(
    temporal_env: WorkflowEnvironment,
) -> None:
    reset()
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("sleepy", {"name": "long", "seconds": 2.0}),
                ("sleepy", {"name": "short", "seconds": 0.2}),
                ("sleepy", {"name": "third", "seconds": 0.2}),
            ),
            reply.text("done"),
        ]
    )
    definition = Definition("window", tools=[sleepy], max_concurrent_tool_calls=2)
    async with serving(
        temporal_env, [definition], tools=[sleepy], models={"default": model}
    ) as scope:
        await (await scope.start("window", "go")).result()
    assert running["max"] == 2
    # the third started when "short" finished, while "long" was still running
    assert log.index("end short") < log.index("start third") < log.index("end long")


async def test_c15_live_calls_sharing_a_concurrency_key_never_overlap(
    temporal_env: WorkflowEnvironment,
) -> None:
    reset()
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("db_write", {"name": "w1", "seconds": 0.3}),
                ("db_write", {"name": "w2", "seconds": 0.3}),
                ("sleepy", {"name": "r", "seconds": 0.3}),
            ),
            reply.text("done"),
        ]
    )
    definition = Definition("keys", tools=[sleepy, db_write], max_concurrent_tool_calls=3)
    async with serving(
        temporal_env, [definition], tools=[sleepy, db_write], models={"default": model}
    ) as scope:
        await (await scope.start("keys", "go")).result()
    assert log.index("end w1") < log.index("start w2")
    assert log.index("start r") < log.index("end w1")  # the read overlapped the first write


async def test_c16_live_a_write_waits_for_earlier_reads_and_holds_back_later_ones(
    temporal_env: WorkflowEnvironment,
) -> None:
    reset()
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("sleepy", {"name": "r1", "seconds": 0.5}),
                ("sleepy", {"name": "r2", "seconds": 0.5}),
                ("write_file", {"name": "w", "seconds": 0.3}),
                ("sleepy", {"name": "r3", "seconds": 0.5}),
                ("sleepy", {"name": "r4", "seconds": 0.5}),
            ),
            reply.text("done"),
        ]
    )
    tools = [sleepy, write_file]
    definition = Definition("barrier", tools=tools, max_concurrent_tool_calls=4)
    async with serving(temporal_env, [definition], tools=tools, models={"default": model}) as scope:
        await (await scope.start("barrier", "go")).result()
    (r1_start, r1_end), (r2_start, r2_end) = spans["r1"], spans["r2"]
    (w_start, w_end), (r3_start, r3_end), (r4_start, r4_end) = spans["w"], spans["r3"], spans["r4"]
    assert r2_start < r1_end and r1_start < r2_end  # reads before the write overlapped
    assert w_start >= max(r1_end, r2_end)  # the write waited for every earlier call
    assert min(r3_start, r4_start) >= w_end  # and held back every later one
    assert r4_start < r3_end and r3_start < r4_end  # reads after it overlap again
    results = model.requests[1].messages[-1].tool_results
    assert [r.content for r in results] == ["r1", "r2", "w", "r3", "r4"]
