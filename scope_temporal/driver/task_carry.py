"""Continue-as-new of a background task, on any engine: when its run ends and what the
next run carries.

A task's history grows with its attempts and with the progress reports of a running
attempt (signals, see `background.yielding`). Its run continues as new, carrying the
machine's whole state (`TaskCarry`), when no attempt runs (between attempts, or while
the task waits for an answer) and either Temporal suggests it or the history has reached
the task's bound (`TASK_HISTORY_EVENTS`, or `TaskInput.history_events`). A running
attempt belongs to its run, so it is given a budget of reports that fits under the bound;
once spent, a run that can change owner is yielded (held for adoption, or left for
`recover`) and the task continues as new at once; any other run reports rarely.
"""

from __future__ import annotations

from scope_temporal.driver.history_limits import HistoryUsage
from scope_temporal.interaction.background_task import BackgroundTaskMachine
from scope_temporal.interaction.news import TaskNews
from scope_temporal.interaction.task_values import YieldMode
from scope_temporal.payloads import TaskCarry, TaskInput
from scope_temporal.tools.spec import BackgroundSpec

TASK_HISTORY_EVENTS = 2_000
"""A task's run continues as new before its history passes this many events."""

EVENTS_PER_REPORT = 10
"""History events one progress report may cost: its signal and workflow task (4), and
the batch it adds to the tree's event stream with its workflow task (up to 6)."""

RESERVE_EVENTS = 60
"""Events kept free for what an attempt adds besides its reports: its own scheduling and
end, the notice to the Interaction, the event stream's last batch, the continue-as-new."""


def bound_of(input: TaskInput) -> int:
    """The task's history bound (events)."""
    return input.history_events if input.history_events is not None else TASK_HISTORY_EVENTS


def report_budget(usage: HistoryUsage | None, bound: int) -> int | None:
    """How many progress reports the next attempt may send (None: no history, no limit);
    at least one, so that a run always reports."""
    if usage is None:
        return None
    return max((bound - usage.events - RESERVE_EVENTS) // EVENTS_PER_REPORT, 1)


def yield_mode(settings: BackgroundSpec) -> YieldMode | None:
    """How the task's runs can change owner: a handoff tool's live run is held and
    adopted (on its worker), a recoverable tool's is recovered from its checkpoint; any
    other run cannot (None)."""
    if settings.handoff:
        return "hold"
    if settings.recoverable:
        return "detach"
    return None


def continue_due(usage: HistoryUsage | None, bound: int, *, suggested: bool) -> bool:
    """Whether a run whose history is `usage` should continue as new (at a point where no
    attempt runs)."""
    return usage is not None and (suggested or usage.events >= bound)


def carried(
    input: TaskInput, machine: BackgroundTaskMachine, told: set[str], news: TaskNews, runs: int
) -> TaskInput:
    """The next run's input, continuing the run that started from `input`."""
    shown, wait = news.carried()
    carry = TaskCarry(
        state=machine.carried_state,
        told=tuple(sorted(told)),
        shown=shown,
        wait=wait,
        runs=runs + 1,
    )
    return input.model_copy(update={"carried": carry})


__all__ = [
    "EVENTS_PER_REPORT",
    "RESERVE_EVENTS",
    "TASK_HISTORY_EVENTS",
    "bound_of",
    "carried",
    "continue_due",
    "report_budget",
    "yield_mode",
]
