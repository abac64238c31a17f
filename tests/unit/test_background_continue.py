"""A long background task stays bounded: the machine's state carries over exactly, a
yielded attempt is followed by an adoption or a recovery (nothing run again), the
history budget, and the attempt that yields its run (see `background.yielding`)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from scope_temporal import RunHandle, RunProgress, TaskRun
from scope_temporal.background.attempts import run_attempt
from scope_temporal.background.materializer import MemoryMaterializer
from scope_temporal.background.runtime import BackgroundRuntime, LiveRuns
from scope_temporal.background.yielding import SLOW_REPORT_SECONDS, report_pause
from scope_temporal.driver import task_carry
from scope_temporal.driver.history_limits import HistoryUsage
from scope_temporal.errors import ProtocolError
from scope_temporal.interaction.background_task import BackgroundTaskMachine
from scope_temporal.interaction.news import TaskNews
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.names import UPDATE_AFTER_COMMANDS
from scope_temporal.payloads import TaskInput
from scope_temporal.tools.outcome import ProgressSummary, RunOutcome, TaskLaunch
from scope_temporal.tools.spec import BackgroundSpec
from scope_temporal.workflows.task_commands import refuse_update_after_commands

TASK = "root/task/1/0"
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


def launch(*, handoff: bool = False, recoverable: bool = False) -> TaskLaunch:
    settings = BackgroundSpec(
        heartbeat_timeout=timedelta(seconds=2),
        max_attempts=3 if recoverable else 1,
        recoverable=recoverable,
        resumable=True,
        handoff=handoff,
    )
    return TaskLaunch(task_id=TASK, tool="job", arguments="{}", mode="start", settings=settings)


def machine(**kw: Any) -> BackgroundTaskMachine:
    return BackgroundTaskMachine.start(
        launch(**kw), ref="root/1/0", parent_id="root", definition="d"
    )


def progress(n: int) -> ProgressSummary:
    return ProgressSummary(events=n, last_event_id=f"e-{n}", last_message=f"event {n}")


def test_a_handoff_attempt_that_yielded_is_followed_by_an_adoption_on_its_worker() -> None:
    m = machine(handoff=True)
    assert m.next_attempt() is not None
    m.on_report(
        AttemptReport(
            attempt=1, yielded=True, held_on="q/adopt/1", checkpoint=41, progress=progress(41)
        )
    )
    plan = m.next_attempt()
    assert plan is not None and (plan.mode, plan.queue, plan.attempt) == ("adopt", "q/adopt/1", 2)
    assert (plan.checkpoint, plan.max_attempts) == (41, 1)
    state = m.state
    assert (state.yields, state.checkpoint, state.progress) == (1, 41, progress(41))
    assert m.snapshot().status == "running"


def test_a_recoverable_attempt_that_yielded_is_recovered_from_its_checkpoint() -> None:
    m = machine(recoverable=True)
    m.next_attempt()
    m.on_report(AttemptReport(attempt=1, yielded=True, checkpoint={"at": 7}, progress=progress(7)))
    plan = m.next_attempt()
    assert plan is not None and (plan.mode, plan.attempt, plan.checkpoint) == (
        "recover",
        2,
        {"at": 7},
    )
    assert plan.max_attempts == 3


def test_a_yield_nothing_can_follow_is_a_lost_attempt() -> None:
    m = machine()  # plain: no adoption without a held run, no recovery
    m.next_attempt()
    m.on_report(AttemptReport(attempt=1, yielded=True, lost="gave up"))
    assert (m.phase, m.snapshot().code) == ("failed", "tool.background.lost")


def test_a_resume_that_yielded_took_its_answer() -> None:
    m = machine(handoff=True)
    m.next_attempt()
    m.on_report(AttemptReport(attempt=1, outcome=RunOutcome.waiting_input("n?", SCHEMA, 3)))
    wait = m.snapshot().question
    assert wait is not None and m.answer(wait.wait_id, "a-1", {"n": 2})
    m.next_attempt()
    m.on_report(AttemptReport(attempt=2, yielded=True, held_on="q", progress=progress(9)))
    assert m.verdict("a-1") == "accepted"
    plan = m.next_attempt()
    assert plan is not None and plan.mode == "adopt"


def test_a_cancel_during_a_yield_stops_the_next_attempt() -> None:
    m = machine(handoff=True)
    m.next_attempt()
    assert m.request_cancel("enough") is True
    m.on_report(AttemptReport(attempt=1, yielded=True, held_on="q"))
    assert m.next_attempt() is not None and m.stopping  # the driver stops it at once


def test_the_carried_state_restores_the_task_exactly() -> None:
    m = machine(handoff=True)
    m.next_attempt()
    m.on_progress(1, progress(5))
    m.on_report(AttemptReport(attempt=1, outcome=RunOutcome.waiting_input("n?", SCHEMA, 12)))
    carried = m.carried_state
    again = BackgroundTaskMachine.restore(carried.model_validate_json(carried.model_dump_json()))
    assert again.state == m.state
    assert again.snapshot() == m.snapshot()
    wait = again.snapshot().question
    assert wait is not None and again.answer(wait.wait_id, "a-1", {"n": 1})
    plan = again.next_attempt()
    assert plan is not None and (plan.mode, plan.attempt, plan.checkpoint) == ("resume", 2, 12)


def test_a_task_running_an_attempt_is_never_carried() -> None:
    m = machine()
    m.next_attempt()
    with pytest.raises(ProtocolError):
        _ = m.carried_state
    state = m.state
    with pytest.raises(ProtocolError):
        BackgroundTaskMachine.restore(state)


def test_the_next_input_carries_the_state_the_notices_and_the_news() -> None:
    m = machine(recoverable=True)
    news = TaskNews()
    news.step(m.snapshot())
    input = TaskInput(launch=m.state.launch, ref="root/1/0", parent_id="root", definition="d")
    told = {"task-notice:waiting_input:1:" + TASK}
    nxt = task_carry.carried(input, m, told, news, runs=2)
    carry = nxt.carried
    assert carry is not None and carry.runs == 3 and carry.told == tuple(told)
    assert (carry.shown, carry.wait) == news.carried()
    assert carry.state == m.state
    assert TaskNews(carry.shown, carry.wait).step(m.snapshot()) == []  # nothing told twice


def test_the_report_budget_fits_the_bound_and_is_never_zero() -> None:
    assert task_carry.report_budget(None, 2_000) is None  # no history: no budget
    usage = HistoryUsage(events=40, bytes=0)
    budget = task_carry.report_budget(usage, 2_000)
    assert budget == (2_000 - 40 - task_carry.RESERVE_EVENTS) // task_carry.EVENTS_PER_REPORT
    assert task_carry.report_budget(HistoryUsage(events=5_000, bytes=0), 2_000) == 1
    assert task_carry.continue_due(HistoryUsage(2_000, 0), 2_000, suggested=False)
    assert task_carry.continue_due(HistoryUsage(10, 0), 2_000, suggested=True)
    assert not task_carry.continue_due(HistoryUsage(10, 0), 2_000, suggested=False)
    assert not task_carry.continue_due(None, 2_000, suggested=True)


def test_how_a_run_can_change_owner_follows_its_capabilities() -> None:
    assert task_carry.yield_mode(launch(handoff=True, recoverable=True).settings) == "hold"
    assert task_carry.yield_mode(launch(recoverable=True).settings) == "detach"
    assert task_carry.yield_mode(launch().settings) is None


def test_reports_slow_down_and_past_the_budget_come_hourly() -> None:
    assert report_pause(0, spent=False) == 0.5
    assert report_pause(15 * 60, spent=False) == 30.0
    assert report_pause(1, spent=True) == SLOW_REPORT_SECONDS


class _Ticks:
    """Publish an event every 10 ms, `total` in all (checkpoint: the count)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    async def start(self, task_id: str, arguments: Any, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            while self.done < self.total:
                await asyncio.sleep(0.01)
                self.done += 1
                progress.publish(f"e-{self.done}")
                progress.checkpoint(self.done)
            return {"done": self.done}

        return TaskRun(work)

    def parse(self, arguments: Any) -> Any:
        return arguments


async def _attempt(yield_by: Any, queue: str | None, budget: int) -> tuple[AttemptReport, Any]:
    tool, told = _Ticks(150), []
    runtime = BackgroundRuntime(MemoryMaterializer(), LiveRuns(), adopt_queue=queue)

    async def tell(summary: ProgressSummary | None, resumed: str | None) -> None:
        told.append(summary)

    plan = AttemptPlan(
        task_id=TASK, tool="t", arguments="{}", mode="start", attempt=1, max_attempts=1
    )
    report = await run_attempt(
        tool,  # type: ignore[arg-type]
        plan,
        attempt=1,
        previous=None,
        runtime=runtime,
        beat=lambda state: None,
        tell=tell,
        heartbeat_every=5,
        stop_on_cancel=lambda: True,
        yield_after=budget,
        yield_by=yield_by,
    )
    assert len(told) <= budget + 1
    return report, runtime


async def test_an_attempt_holds_its_live_run_for_the_next_run_once_its_budget_is_spent() -> None:
    report, runtime = await _attempt("hold", "q/adopt/1", budget=2)
    assert (report.yielded, report.held_on, report.outcome) == (True, "q/adopt/1", None)
    assert report.progress is not None and report.checkpoint == report.progress.events > 0
    held = runtime.live_runs.take(TASK)
    assert held is not None and held.progress == report.progress
    outcome = await held.handle.wait()  # the run went on: nothing started again
    assert outcome.data == {"done": 150}


async def test_an_attempt_detaches_a_recoverable_run_and_a_plain_one_runs_to_its_end() -> None:
    report, runtime = await _attempt("detach", None, budget=2)
    assert (report.yielded, report.held_on) == (True, None)
    assert runtime.live_runs.take(TASK) is None
    plain, _ = await _attempt(None, None, budget=2)
    assert not plain.yielded and plain.outcome is not None and plain.outcome.data == {"done": 150}
    assert plain.progress is not None and plain.progress.events == 150


def test_an_update_arriving_while_the_task_continues_as_new_is_sent_again() -> None:
    with pytest.raises(ApplicationError) as refused:
        refuse_update_after_commands(closing=True)
    assert refused.value.type == UPDATE_AFTER_COMMANDS  # ScopeClient sends it again
