"""Live: a long background task continues as new before its history passes its bound,
carrying its state exactly (checkpoint, progress, attempt), with answers and
cancellation across the runs; a plain run that cannot change owner reports rarely
instead (docs/background-tools.md, "Long tasks")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from bench.task_runs import assert_carried_exactly, task_runs
from scope_temporal import Definition, ScriptedModel, TaskSnapshot, reply
from scope_temporal.background import MemoryMaterializer
from tests.live.background_tools import EVENTS, follow
from tests.live.harness import eventually, serving
from tests.live.long_tasks import DONE, PlainTicker, RemoteTicker, Ticker

pytestmark = pytest.mark.live

TOOLS = [Ticker, PlainTicker, RemoteTicker]
BOUND = 150


def _serving(env: WorkflowEnvironment, model: Any) -> Any:
    return serving(
        env,
        [Definition("long", tools=TOOLS)],
        tools=TOOLS,
        models={"default": model},
        materializer=MemoryMaterializer(),  # one worker; the file store is O(n) per event
        task_history_events=BOUND,
    )


async def _run(env: WorkflowEnvironment, tool: str, arguments: dict[str, Any]) -> Any:
    """Call `tool` and follow its task to the end: its id, runs and last envelope."""
    model = ScriptedModel(follow((tool, arguments)))
    async with _serving(env, model) as scope:
        handle = await scope.start("long", "go")
        await handle.result()
        task_id = f"{handle.id}/task/1/0"
        runs = await task_runs(scope.client, task_id)
    results = [
        json.loads(r.messages[-1].tool_results[0].content)
        for r in model.requests
        if r.messages[-1].role == "tool"
    ]
    return task_id, runs, results[-1]


async def test_a_handoff_task_publishing_10000_events_continues_as_new_carrying_exactly(
    temporal_env: WorkflowEnvironment,
) -> None:
    arguments = {"events": 10_000, "per_tick": 100, "tick": 0.15}
    task_id, runs, final = await _run(temporal_env, "ticker", arguments)
    assert (final["status"], final["progress"]["events"]) == ("completed", 10_000)
    assert final["data"] == {"published": 10_000, "bonus": 0}
    assert DONE[task_id] == 10_000  # each event published once: the run never ran twice
    adopts = [e for e in EVENTS[task_id] if e.startswith("adopt")]
    assert EVENTS[task_id][0] == "start 0" and len(adopts) == len(runs)  # one per run
    print(f"runs: {[(r.events, r.bytes) for r in runs]}")
    assert len(runs) >= 3
    assert max(r.events for r in runs) <= BOUND
    assert_carried_exactly(runs)
    assert all(r.reports[-1].yielded for r in runs[:-1])  # each run ended by a yield
    last = runs[-1].reports[-1]
    assert last.outcome is not None and last.progress is not None
    assert last.progress.events == 10_000


async def test_a_recoverable_task_yields_and_is_recovered_from_its_checkpoint(
    temporal_env: WorkflowEnvironment,
) -> None:
    arguments = {"events": 3_000, "per_tick": 50, "tick": 0.15, "run_in_background": True}
    task_id, runs, final = await _run(temporal_env, "remote_ticker", arguments)
    assert (final["status"], final["progress"]["events"]) == ("completed", 3_000)
    assert DONE[task_id] == 3_000
    calls = EVENTS[task_id]
    assert calls[0] == "start 1" and all(c.startswith("recover ") for c in calls[1:])
    assert len(calls) == len(runs)  # one recover per yield, each from the carried checkpoint
    for n, run in enumerate(runs[1:], start=1):
        carried = run.input.carried
        assert carried is not None
        assert calls[n] == f"recover {carried.state.attempt + 1} at {carried.state.checkpoint}"
    assert len(runs) >= 3 and max(r.events for r in runs) <= BOUND
    assert_carried_exactly(runs)


async def test_an_answer_and_a_cancel_reach_a_task_that_continued_as_new(
    temporal_env: WorkflowEnvironment,
) -> None:
    def plan(request: Any) -> Any:  # launch both, then wait for the host
        if request.messages[-1].role != "tool":
            return reply.tool_calls(
                ("ticker", {"events": 4_000, "per_tick": 50, "tick": 0.1, "ask_at": 2_500}),
                ("ticker", {"events": 100_000, "per_tick": 50, "tick": 0.1}),
            )
        return reply.text("launched")

    async with _serving(temporal_env, ScriptedModel(plan)) as scope:
        handle = await scope.start("long", "go")
        asking, endless = f"{handle.id}/task/1/0", f"{handle.id}/task/1/1"
        client = scope.client
        snap = await eventually(handle.snapshot, lambda s: bool(s.pending_tool_inputs), timeout=90)
        [pending] = snap.pending_tool_inputs
        before = await task_runs(client, asking)
        assert len(before) >= 2  # the question was asked by a later run
        assert await handle.answer(pending, "bonus-1", {"bonus": 7}) is True
        await eventually(lambda: task_runs(client, endless), lambda r: len(r) >= 3, timeout=60)
        await handle.cancel_task(endless, "enough")
        done = await client.get_workflow_handle(asking, result_type=TaskSnapshot).result()
        stopped = await client.get_workflow_handle(endless, result_type=TaskSnapshot).result()
        runs = await task_runs(client, asking)
        endless_runs = await task_runs(client, endless)
    assert (done.status, done.data) == ("completed", {"published": 4_000, "bonus": 7})
    assert done.progress.events == 4_000 and DONE[asking] == 4_000
    assert f"resume {pending_attempt(runs)} at 2500" in EVENTS[asking]
    assert stopped.status == "canceled" and "stopped" in EVENTS[endless]
    assert stopped.progress.events == DONE[endless]  # nothing lost, nothing twice
    assert_carried_exactly(runs)
    assert_carried_exactly(endless_runs)
    assert max(r.events for r in runs + endless_runs) <= BOUND


def pending_attempt(runs: list[Any]) -> int:
    """The attempt number of the resume (the one after the run that asked)."""
    for run in runs:
        for report in run.reports:
            if report.outcome is not None and report.outcome.status == "waiting_input":
                return report.attempt + 1
    raise AssertionError("no question asked")


async def test_a_plain_run_that_cannot_change_owner_reports_rarely_past_its_budget(
    temporal_env: WorkflowEnvironment,
) -> None:
    arguments = {"events": 2_000, "per_tick": 50, "tick": 0.2, "run_in_background": True}
    task_id, runs, final = await _run(temporal_env, "plain_ticker", arguments)
    assert (final["status"], final["progress"]["events"]) == ("completed", 2_000)
    assert DONE[task_id] == 2_000 and EVENTS[task_id] == ["start 1"]
    # one attempt, one run: it could not continue as new mid-attempt; its reports stopped
    # at the budget (then one an hour), so its history stayed under the bound anyway
    assert len(runs) == 1 and runs[0].events <= BOUND
