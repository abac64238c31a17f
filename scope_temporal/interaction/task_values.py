"""The values of the background task Process: its state, the attempts the driver runs
and the reports it feeds back (all JSON: they cross the activity boundary and persist in
the workflow), and the task as a Process of the snapshot tree."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    RejectedSignal,
    Status,
    TaskSnapshot,
    TaskStatus,
)
from scope_temporal.tools.outcome import ProgressSummary, RunOutcome, TaskLaunch
from scope_temporal.tools.spec import CapabilityClass

Phase = Literal["ready", "running", "waiting_input", "completed", "failed", "canceled"]
YieldMode = Literal["hold", "detach"]
"""How an attempt gives its run up so that its task can continue as new: held for
adoption on its worker, or detached for a `recover` from its checkpoint."""
Verdict = Literal["accepted", "refused", "unapplied"]
"""What became of an answer: the tool took it, refused it, or the task ended first."""


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AttemptPlan(_Value):
    """One background attempt for the driver to run (a self-contained activity input)."""

    task_id: str
    tool: str
    arguments: str
    mode: Literal["start", "recover", "resume", "adopt"]
    attempt: int
    """The tool-visible attempt number of its first Temporal attempt (later ones add 1)."""
    max_attempts: int
    """How many times Temporal may run it (> 1 only for recoverable tools)."""
    checkpoint: Any = None
    request_id: str | None = None
    """`resume`: the answer's id (the tool applies one request id at most once)."""
    data: Any = None
    """`resume`: the validated answer."""
    queue: str | None = None
    """`adopt`: the task queue of the worker holding the live run."""
    context: dict[str, Any] = {}
    """The task's inherited run context (what `run_context()` returns in the attempt)."""
    deadline: datetime | None = None
    """When the operation must have ended (the tool's `operation_timeout`), if ever."""
    capability: CapabilityClass | None = None
    """The capability class the task was launched under: the attempt runs on an
    implementation of it (`ToolRegistry.implementation`). None in plans scheduled before
    it was recorded: the tool's registration of today runs them."""


class AttemptReport(_Value):
    """How one attempt ended: an outcome, a refused answer, or lost (no outcome)."""

    attempt: int
    outcome: RunOutcome | None = None
    code: str | None = None
    """For a `failed` outcome the framework decided (e.g. a progress conflict)."""
    refused: str | None = None
    """`resume` refused the answer, before any side effect: the tool's message."""
    lost: str | None = None
    """Why the attempt has no outcome."""
    unserved: str | None = None
    """No implementation registered on the worker could run the attempt (nothing ran):
    what is missing and what to register."""
    checkpoint: Any = None
    progress: ProgressSummary | None = None
    yielded: bool = False
    """The attempt gave its run up on purpose, the run going on (so that the task can
    continue as new): held for adoption on `held_on`, or left for `recover`."""
    held_on: str | None = None
    """A yielded run held by its worker: the task queue only that worker polls."""


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskQuestion(_State):
    wait_id: str
    prompt: Any
    response_schema: dict[str, Any]


class TaskState(_State):
    launch: TaskLaunch
    ref: str
    parent_id: str
    definition: str
    phase: Phase = "ready"
    plan: AttemptPlan | None = None
    attempt: int = 0
    checkpoint: Any = None
    question: TaskQuestion | None = None
    waits: int = 0
    answers: dict[str, str] = {}
    """Answer ids -> digest of their content (dedup; reuse with other content conflicts)."""
    verdicts: dict[str, Verdict] = {}
    refusals: dict[str, str] = {}
    cancel_reason: str | None = None
    progress: ProgressSummary = ProgressSummary()
    data: Any = None
    error: str | None = None
    code: str | None = None
    rejected_signals: list[RejectedSignal] = []
    yields: int = 0
    """Attempts that gave their run up so that the task could continue as new."""


def lost_reason(launch: TaskLaunch, plan: AttemptPlan, report: AttemptReport) -> str:
    """Why a task fails when an attempt ended without an outcome (for the model and host)."""
    why = report.lost or "no outcome"
    if plan.mode == "adopt":
        return (
            f"the worker holding the live run was lost before the background took it over "
            f"({why}); {launch.tool} cannot be recovered, so the run's outcome is "
            "unknown. Nothing was run again."
        )
    if launch.settings.recoverable:
        return f"every background attempt ({plan.max_attempts}) ended without an outcome: {why}"
    return (
        f"the background attempt ended without an outcome ({why}); {launch.tool} "
        "cannot be recovered, so whether the operation finished is unknown. Nothing was "
        "run again."
    )


_STATUS: dict[TaskStatus, Status] = {
    "running": "running",
    "waiting_input": "waiting",
    "completed": "completed",
    "failed": "failed",
    "canceled": "canceled",
}


def task_snapshot(s: TaskState) -> TaskSnapshot:
    """The task as the host and the model see it."""
    status: TaskStatus = "running" if s.phase == "ready" or s.phase == "running" else s.phase
    question = None
    if s.phase == "waiting_input" and s.question is not None:
        question = PendingToolInput(
            process_id=s.launch.task_id,
            wait_id=s.question.wait_id,
            prompt=s.question.prompt,
            response_schema=s.question.response_schema,
            ref=s.ref,
        )
    return TaskSnapshot(
        task_id=s.launch.task_id,
        tool=s.launch.tool,
        ref=s.ref,
        parent_id=s.parent_id,
        status=status,
        attempt=s.plan.attempt if s.phase == "running" and s.plan else s.attempt,
        progress=s.progress,
        question=question,
        data=s.data,
        error=s.error,
        code=s.code,
        cancel_requested=s.cancel_reason is not None,
        description=s.launch.description,
    )


def task_process(
    task: TaskSnapshot, definition: str, rejected: tuple[RejectedSignal, ...] = ()
) -> ProcessSnapshot:
    """A task as a Process of the snapshot tree."""
    return ProcessSnapshot(
        process_id=task.task_id,
        kind="background_task",
        definition=definition,
        status=_STATUS[task.status],
        pending_tool_inputs=(task.question,) if task.question is not None else (),
        rejected_signals=rejected,
        task=task,
    )


__all__ = [
    "AttemptPlan",
    "AttemptReport",
    "Phase",
    "TaskQuestion",
    "TaskState",
    "Verdict",
    "YieldMode",
    "lost_reason",
    "task_process",
    "task_snapshot",
]
