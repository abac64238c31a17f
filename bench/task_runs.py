"""Reading every run of a background task's workflow (continue-as-new chain), oldest
first, with what each started from and the last attempt report it recorded."""

from __future__ import annotations

import dataclasses
import itertools

from temporalio.client import Client

from scope_temporal.interaction.task_values import AttemptReport
from scope_temporal.names import TASK_REPORT
from scope_temporal.payloads import TaskInput


@dataclasses.dataclass
class Run:
    events: int
    bytes: int
    input: TaskInput
    reports: list[AttemptReport]
    continued: bool
    """It ended by continuing as new."""
    progress_reports: int
    """The progress reports it received (signals from its attempts)."""


async def task_runs(client: Client, task_id: str) -> list[Run]:
    """The runs of `task_id`, oldest first (the newest run's chain, walked back)."""
    converter = client.data_converter
    run_id = (await client.get_workflow_handle(task_id).describe()).run_id
    runs: list[Run] = []
    while run_id:
        history = await client.get_workflow_handle(task_id, run_id=run_id).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        [input] = await converter.decode(started.input.payloads, [TaskInput])
        reports = []
        for event in history.events:
            if event.HasField("activity_task_completed_event_attributes"):
                result = event.activity_task_completed_event_attributes.result.payloads
                [report] = await converter.decode(result, [AttemptReport])
                reports.append(report)
        signals = [
            e.workflow_execution_signaled_event_attributes.signal_name
            for e in history.events
            if e.HasField("workflow_execution_signaled_event_attributes")
        ]
        last = history.events[-1]
        runs.append(
            Run(
                events=len(history.events),
                bytes=sum(e.ByteSize() for e in history.events),
                input=input,
                reports=reports,
                continued=last.HasField("workflow_execution_continued_as_new_event_attributes"),
                progress_reports=signals.count(TASK_REPORT),
            )
        )
        run_id = started.continued_execution_run_id
    return runs[::-1]


def assert_carried_exactly(runs: list[Run]) -> None:
    """Each run started from exactly what the one before ended with: the state it had
    after its last (yielded) attempt, its checkpoint and progress count included."""
    for number, (before, after) in enumerate(itertools.pairwise(runs), start=1):
        assert before.continued
        carry = after.input.carried
        assert carry is not None and carry.runs == number + 1
        last = before.reports[-1]
        if last.yielded:
            assert carry.state.checkpoint == last.checkpoint
            assert carry.state.progress == last.progress
            assert carry.state.attempt == last.attempt


__all__ = ["Run", "assert_carried_exactly", "task_runs"]
