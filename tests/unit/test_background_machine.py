"""The background task machine (pure): attempts, outcomes, loss, input, cancellation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

import pytest

from scope_temporal.background.protocols import RunOutcome
from scope_temporal.errors import (
    InvalidToolInput,
    NoSuchWait,
    ProtocolError,
    SignalConflict,
    TaskEnded,
)
from scope_temporal.interaction.background_task import BackgroundTaskMachine
from scope_temporal.interaction.task_values import AttemptReport
from scope_temporal.tools.outcome import ProgressSummary, TaskLaunch
from scope_temporal.tools.spec import BackgroundSpec

TASK = "root/task/1/0"
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def machine(
    mode: Literal["start", "adopt", "recover", "waiting_input"] = "start",
    *,
    recoverable: bool = False,
    resumable: bool = False,
    **launch: Any,
) -> BackgroundTaskMachine:
    settings = BackgroundSpec(
        heartbeat_timeout=timedelta(seconds=2),
        max_attempts=5 if recoverable else 1,
        recoverable=recoverable,
        resumable=resumable,
    )
    return BackgroundTaskMachine.start(
        TaskLaunch(
            task_id=TASK, tool="job", arguments="{}", mode=mode, settings=settings, **launch
        ),
        ref="root/1/0",
        parent_id="root",
        definition="d",
    )


def report(attempt: int = 1, **fields: Any) -> AttemptReport:
    return AttemptReport(attempt=attempt, **fields)


def waiting(checkpoint: Any = None) -> BackgroundTaskMachine:
    m = machine(resumable=True)
    m.next_attempt()
    m.on_report(report(outcome=RunOutcome.waiting_input("how many?", SCHEMA, checkpoint)))
    return m


def test_a_started_task_runs_one_attempt_at_a_time_and_completes() -> None:
    m = machine()
    plan = m.next_attempt()
    assert plan is not None and (plan.mode, plan.attempt, plan.max_attempts) == ("start", 1, 1)
    assert m.next_attempt() is None  # one at a time
    m.on_report(report(outcome=RunOutcome.completed({"rows": 3})))
    task = m.snapshot()
    assert (task.status, task.data, task.attempt) == ("completed", {"rows": 3}, 1)
    with pytest.raises(TaskEnded):
        m.on_report(report(outcome=RunOutcome.completed(None)))


def test_a_report_without_a_running_attempt_is_refused_and_changes_nothing() -> None:
    m = machine()
    before = m.state
    with pytest.raises(ProtocolError, match="report is not legal in phase ready"):
        m.on_report(report(outcome=RunOutcome.completed(None)))
    assert m.state == before


def test_failed_and_canceled_outcomes_end_the_task_with_their_codes() -> None:
    m = machine()
    m.next_attempt()
    m.on_report(report(outcome=RunOutcome.failed("disk full")))
    assert (m.snapshot().status, m.snapshot().code) == ("failed", "tool.execution_failed")
    m = machine()
    m.next_attempt()
    m.on_report(
        report(outcome=RunOutcome.failed("conflict"), code="tool.background.progress_conflict")
    )
    assert m.snapshot().code == "tool.background.progress_conflict"
    m = machine()
    m.next_attempt()
    m.on_report(report(outcome=RunOutcome.canceled("stopped")))
    assert (m.snapshot().status, m.snapshot().error) == ("canceled", "stopped")


def test_a_lost_attempt_of_a_plain_tool_fails_the_task_with_a_clear_error() -> None:
    m = machine()
    m.next_attempt()
    m.on_report(report(lost="activity timed out: HEARTBEAT"))
    task = m.snapshot()
    assert (task.status, task.code) == ("failed", "tool.background.lost")
    assert "HEARTBEAT" in (task.error or "") and "cannot be recovered" in (task.error or "")
    assert m.next_attempt() is None  # nothing runs again


def test_a_lost_adoption_of_a_recoverable_tool_recovers_from_the_last_checkpoint() -> None:
    m = machine("adopt", recoverable=True, checkpoint={"step": 1}, adopt_queue="q/adopt/1")
    plan = m.next_attempt()
    assert plan is not None and (plan.mode, plan.queue, plan.max_attempts) == (
        "adopt",
        "q/adopt/1",
        1,
    )
    m.on_report(report(lost="SCHEDULE_TO_START", checkpoint={"step": 4}))
    plan = m.next_attempt()
    assert plan is not None
    assert (plan.mode, plan.checkpoint, plan.attempt, plan.queue) == (
        "recover",
        {"step": 4},
        2,
        None,
    )
    assert plan.max_attempts == 5


def test_a_lost_adoption_of_a_plain_handoff_tool_fails() -> None:
    m = machine("adopt", adopt_queue="q/adopt/1")
    m.next_attempt()
    m.on_report(report(lost="SCHEDULE_TO_START"))
    task = m.snapshot()
    assert task.code == "tool.background.lost" and "before the background took it over" in (
        task.error or ""
    )


def test_a_recover_launch_plans_recover_with_the_checkpoint() -> None:
    m = machine("recover", recoverable=True, checkpoint={"step": 2}, attempt=0)
    plan = m.next_attempt()
    assert plan is not None and (plan.mode, plan.checkpoint, plan.attempt) == (
        "recover",
        {"step": 2},
        1,
    )


def test_a_question_opens_one_wait_and_a_valid_answer_schedules_resume() -> None:
    m = waiting({"asked": True})
    task = m.snapshot()
    assert task.status == "waiting_input" and task.question is not None
    wait = task.question.wait_id
    assert wait == f"{TASK}/wait/1" and task.question.process_id == TASK
    with pytest.raises(InvalidToolInput):
        m.answer(wait, "a1", {"n": "x"})
    with pytest.raises(NoSuchWait):
        m.answer(f"{TASK}/wait/9", "a1", {"n": 1})
    assert m.answer(wait, "a1", {"n": 1}) is True
    assert m.verdict("a1") is None
    plan = m.next_attempt()
    assert plan is not None
    assert (plan.mode, plan.request_id, plan.data, plan.checkpoint) == (
        "resume",
        "a1",
        {"n": 1},
        {"asked": True},
    )
    assert (plan.attempt) == 2
    m.on_progress(2, None, resumed="a1")
    assert m.verdict("a1") == "accepted"
    m.on_report(report(2, outcome=RunOutcome.completed("ok")))
    assert m.snapshot().status == "completed"


def test_a_refused_answer_reopens_the_same_wait_and_a_duplicate_is_refused_again() -> None:
    m = waiting()
    wait = m.snapshot().question.wait_id  # type: ignore[union-attr]
    m.answer(wait, "a1", {"n": 500})
    m.next_attempt()
    m.on_report(report(2, refused="over the limit"))
    assert (m.verdict("a1"), m.refusal("a1")) == ("refused", "over the limit")
    [rejected] = m.process_snapshot().rejected_signals
    assert (rejected.signal_id, rejected.code) == ("a1", "tool.answer.invalid")
    task = m.snapshot()
    assert task.status == "waiting_input" and task.question is not None
    assert task.question.wait_id == wait
    assert m.answer(wait, "a1", {"n": 500}) is False  # the same answer again: no new attempt
    assert m.next_attempt() is None
    with pytest.raises(SignalConflict):
        m.answer(wait, "a1", {"n": 5})


def test_a_waiting_input_outcome_from_a_tool_that_cannot_resume_fails() -> None:
    m = machine()
    m.next_attempt()
    m.on_report(report(outcome=RunOutcome.waiting_input("?", SCHEMA)))
    assert m.snapshot().code == "tool.background.not_resumable"


def test_cancelling_a_waiting_task_ends_it_and_leaves_its_answers_unapplied() -> None:
    m = waiting()
    assert m.request_cancel("no longer needed") is False
    task = m.snapshot()
    assert (task.status, task.code, task.question) == ("canceled", "tool.background.canceled", None)
    with pytest.raises(TaskEnded):
        m.request_cancel("again")


def test_cancelling_a_running_attempt_asks_the_driver_to_stop_it() -> None:
    m = machine()
    m.next_attempt()
    assert m.request_cancel("stop") is True and m.stopping
    assert m.snapshot().cancel_requested
    m.on_report(report(outcome=RunOutcome.canceled(None)))
    assert (m.snapshot().status, m.snapshot().error) == ("canceled", "stop")


def test_an_answer_pending_when_the_task_ends_is_unapplied() -> None:
    m = waiting()
    m.answer(m.snapshot().question.wait_id, "a1", {"n": 1})  # type: ignore[union-attr]
    m.next_attempt()
    m.on_report(report(2, lost="worker lost"))
    assert m.verdict("a1") == "unapplied"


def test_progress_counts_only_grow() -> None:
    m = machine()
    m.next_attempt()
    m.on_progress(1, ProgressSummary(events=3, last_message="3/9"))
    m.on_progress(1, ProgressSummary(events=2, last_message="stale"))
    assert m.snapshot().progress.last_message == "3/9"
    m.on_report(report(outcome=RunOutcome.completed(None), progress=ProgressSummary(events=9)))
    assert m.snapshot().progress.events == 9


def test_the_process_snapshot_lists_the_question_as_a_pending_input() -> None:
    m = waiting()
    process = m.process_snapshot()
    assert (process.kind, process.status, process.definition) == ("background_task", "waiting", "d")
    assert [w.wait_id for w in process.pending_tool_inputs] == [f"{TASK}/wait/1"]
    assert process.task is not None and process.task.ref == "root/1/0"


def test_an_unexpected_error_fails_the_task_closed() -> None:
    m = machine()
    m.next_attempt()
    with pytest.raises(ProtocolError):
        m.on_report(AttemptReport.model_construct(attempt="x"))  # type: ignore[arg-type]
    assert m.done and m.snapshot().code == "interaction.state.invalid"
