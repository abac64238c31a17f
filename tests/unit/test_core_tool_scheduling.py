"""CONFORMANCE 13-16 through LocalRunner and the pure core: results in call order, the
concurrency window, concurrency keys, and which calls run in parallel or alone.

Scheduling is observed with async tools held on `asyncio.Event` gates: each tool records
when it starts and finishes and how many tools were running at once.
"""

from __future__ import annotations

import asyncio

import pytest

from scope_temporal.chat import Message
from scope_temporal.definition import Definition
from scope_temporal.models import reply
from scope_temporal.tools import (
    tool,
)
from tests.unit.tool_rounds import (
    WAIT,
    Gates,
    gated_tool,
    open_round,
    runner_with,
    still_not_started,
    tool_results_sent,
)

# --- 13: results in call order -----------------------------------------------------------


async def test_c13_results_reach_the_model_in_call_order_whatever_order_they_finish() -> None:
    gates = Gates()
    work = gated_tool(gates, "work", permission="read")
    definition = Definition("order", tools=[work], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [work],
        [
            reply.tool_calls(
                ("work", {"name": "a"}), ("work", {"name": "b"}), ("work", {"name": "c"})
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("order", [Message.user("go")])
    await gates.started_all("a", "b", "c")
    await gates.release("c", "b", "a")
    await run.result(timeout=WAIT)
    assert gates.finished == ["c", "b", "a"]
    results = tool_results_sent(runner, 1)
    assert [r.content for r in results] == ["work done a", "work done b", "work done c"]
    assert [r.call_id for r in results] == ["call_1", "call_2", "call_3"]
    [round_] = run.snapshot().settled_results
    assert [e.call_index for e in round_.entries] == [0, 1, 2]
    assert [e.result.content for e in round_.entries] == [r.content for r in results]


async def test_c13_order_holds_with_sleeps_of_different_lengths() -> None:
    finished: list[int] = []

    durations = [40, 5, 25, 1]

    @tool(permission="read")
    async def nap(ms: int) -> str:
        """Finish after every shorter nap (all four run at once: else this never ends)."""
        while len(finished) < sorted(durations).index(ms):  # no timing: a load-proof order
            await asyncio.sleep(0.001)
        finished.append(ms)
        return f"slept {ms}"

    definition = Definition("naps", tools=[nap], max_concurrent_tool_calls=4)
    runner = runner_with(
        definition,
        [nap],
        [reply.tool_calls(*(("nap", {"ms": ms}) for ms in durations)), reply.text("ok")],
    )
    await (await runner.start("naps", [Message.user("go")])).result(timeout=WAIT)
    assert finished == sorted(durations)
    assert [r.content for r in tool_results_sent(runner, 1)] == [f"slept {ms}" for ms in durations]


# --- 14: the concurrency window ------------------------------------------------------------


async def test_c14_window_of_two_never_runs_three_and_refills_when_any_finishes() -> None:
    gates = Gates()
    work = gated_tool(gates, "work", permission="read")
    definition = Definition("window", tools=[work], max_concurrent_tool_calls=2)
    runner = runner_with(
        definition,
        [work],
        [
            reply.tool_calls(
                ("work", {"name": "a"}), ("work", {"name": "b"}), ("work", {"name": "c"})
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("window", [Message.user("go")])
    await gates.started_all("a", "b")
    await still_not_started(gates, "c")
    # the *second* one finishing frees the slot: the window refills from any finish
    await gates.release("b")
    await gates.started_all("c")
    assert "a" in gates.running
    await gates.release("a", "c")
    await run.result(timeout=WAIT)
    assert gates.max_running == 2
    assert gates.started == ["a", "b", "c"]


async def test_c14_default_window_is_one() -> None:
    gates = Gates()
    work = gated_tool(gates, "work", permission="read")
    definition = Definition("one-window", tools=[work])
    runner = runner_with(
        definition,
        [work],
        [reply.tool_calls(("work", {"name": "a"}), ("work", {"name": "b"})), reply.text("ok")],
    )
    run = await runner.start("one-window", [Message.user("go")])
    await gates.started_all("a")
    await still_not_started(gates, "b")
    await gates.release("a")
    await gates.started_all("b")
    await gates.release("b")
    await run.result(timeout=WAIT)
    assert gates.max_running == 1


# --- 15: concurrency keys ---------------------------------------------------------------------


async def test_c15_calls_sharing_a_concurrency_key_never_overlap() -> None:
    gates = Gates()
    db_read = gated_tool(gates, "db_read", permission="read", concurrency_key="db")
    db_scan = gated_tool(gates, "db_scan", permission="read", concurrency_key="db")
    free = gated_tool(gates, "free", permission="read")
    definition = Definition("keys", tools=[db_read, db_scan, free], max_concurrent_tool_calls=4)
    runner = runner_with(
        definition,
        [db_read, db_scan, free],
        [
            reply.tool_calls(
                ("db_read", {"name": "r1"}),
                ("db_scan", {"name": "s1"}),
                ("free", {"name": "f"}),
                ("db_read", {"name": "r2"}),
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("keys", [Message.user("go")])
    # an unkeyed call overlaps a keyed one (the window is not the limit here) ...
    await gates.started_all("r1", "f")
    await still_not_started(gates, "s1")
    assert "r2" not in gates.started
    # ... but keyed calls follow one another, in call order
    await gates.release("r1")
    await gates.started_all("s1")
    await still_not_started(gates, "r2")
    await gates.release("s1")
    await gates.started_all("r2")
    await gates.release("r2", "f")
    await run.result(timeout=WAIT)
    keyed = {"r1", "s1", "r2"}
    for name in keyed:
        assert not (gates.ran_with(name) & (keyed - {name})), (name, gates.overlaps)
    assert [n for n in gates.started if n in keyed] == ["r1", "s1", "r2"]


# --- 16: read parallel, write/exec and exclusive calls are barriers ------------------------


async def test_c16_read_tools_run_in_parallel_by_default() -> None:
    gates = Gates()
    look = gated_tool(gates, "look", permission="read")
    definition = Definition("reads", tools=[look], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [look],
        [reply.tool_calls(*(("look", {"name": n}) for n in "abc")), reply.text("ok")],
    )
    run = await runner.start("reads", [Message.user("go")])
    await gates.started_all("a", "b", "c")  # all three at once, none released yet
    assert gates.max_running == 3
    await gates.release("a", "b", "c")
    await run.result(timeout=WAIT)


@pytest.mark.parametrize("permission", ["write", "exec"])
async def test_c16_write_and_exec_tools_run_one_at_a_time(permission: str) -> None:
    gates = Gates()
    change = gated_tool(gates, "change", permission=permission)
    definition = Definition("writes", tools=[change], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [change],
        [reply.tool_calls(*(("change", {"name": n}) for n in "abc")), reply.text("ok")],
    )
    run = await runner.start("writes", [Message.user("go")])
    for current, following in (("a", "b"), ("b", "c"), ("c", None)):
        await gates.started_all(current)
        if following is not None:
            await still_not_started(gates, following)
        await gates.release(current)
    await run.result(timeout=WAIT)
    assert gates.max_running == 1
    assert gates.started == ["a", "b", "c"]


async def test_c16_write_tool_declared_parallel_overlaps() -> None:
    gates = Gates()
    change = gated_tool(gates, "change", permission="write", execution="parallel")
    definition = Definition("par-writes", tools=[change], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [change],
        [reply.tool_calls(*(("change", {"name": n}) for n in "abc")), reply.text("ok")],
    )
    run = await runner.start("par-writes", [Message.user("go")])
    await gates.started_all("a", "b", "c")
    assert gates.max_running == 3
    await gates.release("a", "b", "c")
    await run.result(timeout=WAIT)


@pytest.mark.parametrize(
    ("permission", "execution"),
    [("write", "auto"), ("exec", "sequential"), ("read", "exclusive")],
)
async def test_c16_sequential_and_exclusive_calls_are_barriers(
    permission: str, execution: str
) -> None:
    gates = Gates()
    look = gated_tool(gates, "look", permission="read")
    migrate = gated_tool(gates, "migrate", permission=permission, execution=execution)
    definition = Definition("excl", tools=[look, migrate], max_concurrent_tool_calls=4)
    runner = runner_with(
        definition,
        [look, migrate],
        [
            reply.tool_calls(
                ("look", {"name": "a"}),
                ("migrate", {"name": "x"}),
                ("look", {"name": "b"}),
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("excl", [Message.user("go")])
    await gates.started_all("a")
    await still_not_started(gates, "x")
    assert "b" not in gates.started  # nothing after the barrier overtakes it
    await gates.release("a")
    await gates.started_all("x")
    await still_not_started(gates, "b")
    await gates.release("x")
    await gates.started_all("b")
    await gates.release("b")
    await run.result(timeout=WAIT)
    assert gates.ran_with("x") == frozenset()
    assert gates.started == ["a", "x", "b"]


def test_c16_admission_resolves_auto_scheduling_from_the_permission() -> None:
    @tool(permission="read")
    def r() -> str:
        """Read."""
        return "r"

    @tool(permission="write")
    def w() -> str:
        """Write."""
        return "w"

    @tool(permission="exec", execution="parallel", concurrency_key="box")
    def x() -> str:
        """Exec."""
        return "x"

    definition = Definition("classes", tools=[r, w, x], max_concurrent_tool_calls=5)
    machine, effects = open_round(definition, ("r", {}), ("w", {}), ("x", {}), ("w", {}))
    slots = machine.state.round.slots  # type: ignore[union-attr]
    assert [s.scheduling for s in slots] == ["parallel", "sequential", "parallel", "sequential"]
    assert slots[2].concurrency_key == "box"
    assert [e.request.call_index for e in effects] == [0]  # the write is a barrier
