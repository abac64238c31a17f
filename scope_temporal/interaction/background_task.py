"""A background task as a pure state machine: one operation owned by `scope.BackgroundTask`.

Theory of operation. The driver (the workflow, or `LocalRunner`) asks `next_attempt()`
for the attempt to run (each returned once) and runs it: one activity that starts,
recovers, resumes or adopts the run, stores its progress, heartbeats its checkpoint and
waits for its outcome. It feeds back exactly one `AttemptReport` per attempt, and
meanwhile `on_progress` (counts and resume acknowledgements the attempt sends), the
host's answers (`answer`) and cancellation (`request_cancel`).

Rules (in the one machine style, `transitions.py`: `TABLE` lists every legal (phase,
event) pair and where it may lead; any other pair is refused):
 1. Attempts run one at a time; a report is accepted only while an attempt runs.
 2. `completed`, `failed` and `canceled` are terminal.
 3. A run waiting for input opens one wait. An answer valid against its schema schedules a
    `resume` attempt with the answer id as request id; if the tool refuses it (before any
    side effect), the same wait is open again and nothing else changed.
 4. A lost attempt (its worker died, or every attempt Temporal made failed) fails the task
    with `tool.background.lost`, except a lost adoption by a recoverable tool, which is
    followed by a `recover` attempt from the last checkpoint, on any worker.
 5. Cancelling a task that waits (or has not started its attempt) ends it at once;
    cancelling a running attempt asks the driver to stop it, and its report says how it
    ended.
 6. Progress counts only grow: a stale report changes nothing.
 7. Every attempt runs on an implementation of the capability class the task was launched
    under; one that no registered implementation could run (`unserved`) fails the task
    with `tool.background.unregistered` (nothing ran: an answer it carried is unapplied).
 8. An attempt that yielded its run (so that the task can continue as new; the run goes
    on) is followed by an `adopt` on the worker holding it, or by a `recover` from its
    checkpoint (a recoverable tool); nothing is run again. The state carries over whole
    between runs (`carried_state`, `restore`); only a task not running an attempt
    continues as new.

Every transition works on a copy: a refused input (`ScopeError`) changes nothing, and an
unexpected exception fails the task closed (`interaction.state.invalid`).
"""

from __future__ import annotations

from typing import Any, Literal, assert_never

from scope_temporal import errors
from scope_temporal.errors import ProtocolError, ScopeError, TaskEnded
from scope_temporal.ids import wait_id
from scope_temporal.interaction.answers import answer_digest, check_answer
from scope_temporal.interaction.snapshot import (
    ProcessSnapshot,
    RejectedSignal,
    SignalKind,
    TaskSnapshot,
)
from scope_temporal.interaction.steering import record_rejection
from scope_temporal.interaction.task_values import (
    AttemptPlan,
    AttemptReport,
    Phase,
    TaskQuestion,
    TaskState,
    Verdict,
    lost_reason,
    task_process,
    task_snapshot,
)
from scope_temporal.interaction.transitions import Machine, Table, same
from scope_temporal.tools.outcome import ProgressSummary, TaskLaunch

Event = Literal["next_attempt", "report", "answer", "cancel", "progress", "record"]

_TERMINAL: tuple[Phase, ...] = ("completed", "failed", "canceled")
_ANY: tuple[Phase, ...] = ("ready", "running", "waiting_input", *_TERMINAL)
TABLE: Table[Event, Phase] = {
    "next_attempt": {"ready": frozenset({"running"})},
    "report": {"running": frozenset({"ready", "waiting_input", *_TERMINAL})},
    "answer": {"waiting_input": frozenset({"ready"})},
    "cancel": {
        "ready": frozenset({"canceled"}),
        "running": frozenset({"running"}),  # the attempt is asked to stop; its report ends it
        "waiting_input": frozenset({"canceled"}),
    },
    "progress": same(*_ANY),  # counts only grow: a stale report changes nothing
    "record": same(*_ANY),
}
"""Every legal (phase, event) pair of a background task and the phases it may lead to."""


class BackgroundTaskMachine(Machine[TaskState, Phase, Event]):
    """The pure Background task Process."""

    TABLE = TABLE

    @classmethod
    def start(
        cls, launch: TaskLaunch, *, ref: str, parent_id: str, definition: str
    ) -> BackgroundTaskMachine:
        """A task as its call launched it: an attempt to run, or a question to answer."""
        state = TaskState(
            launch=launch,
            ref=ref,
            parent_id=parent_id,
            definition=definition,
            attempt=launch.attempt,
            checkpoint=launch.checkpoint,
            progress=launch.progress,
        )
        machine = cls(state)
        mode = launch.mode
        if mode == "waiting_input":
            machine._ask(state, launch.prompt, launch.response_schema or {})
        else:
            state.plan = machine._plan(mode, state, queue=launch.adopt_queue)
        return machine

    @classmethod
    def restore(cls, state: TaskState) -> BackgroundTaskMachine:
        """The task a previous run carried (`carried_state`), exactly as it was.

        Raises:
            ProtocolError: the state has an attempt running (a run never carries one).
        """
        if state.phase == "running":
            raise ProtocolError(
                f"Background task {state.launch.task_id!r}: a carried state cannot be "
                "running an attempt."
            )
        return cls(state.model_copy(deep=True))

    # --- reading ---------------------------------------------------------------------

    @property
    def carried_state(self) -> TaskState:
        """What the next run starts from (`restore`): everything, when no attempt runs."""
        if self._state.phase == "running":
            raise ProtocolError("A task running an attempt cannot continue as new.")
        return self.state

    @property
    def done(self) -> bool:
        return self._state.phase in _TERMINAL

    @property
    def stopping(self) -> bool:
        """A cancellation waits for the running attempt to stop."""
        return self._state.phase == "running" and self._state.cancel_reason is not None

    def verdict(self, answer_id: str) -> Verdict | None:
        """What became of an accepted answer, once known."""
        return self._state.verdicts.get(answer_id)

    def refusal(self, answer_id: str) -> str:
        return self._state.refusals.get(answer_id, "")

    # --- transitions -----------------------------------------------------------------

    def _refusal(self, event: Event, phase: Phase) -> ScopeError:
        task = self._state.launch.task_id
        if phase in _TERMINAL:
            return TaskEnded(f"Background task {task!r} has ended ({phase}); refusing {event}.")
        return ProtocolError(f"Background task {task!r}: {event} is not legal in phase {phase}.")

    @staticmethod
    def _crash(state: TaskState, message: str) -> None:
        BackgroundTaskMachine._end(state, "failed", error=message, code=errors.STATE_INVALID)

    def next_attempt(self) -> AttemptPlan | None:
        """The attempt to run now (each returned once), or None."""
        if self._state.phase != "ready":
            return None

        def change(s: TaskState) -> AttemptPlan:
            assert s.plan is not None  # ready always has a plan
            s.phase = "running"
            return s.plan

        return self._apply("next_attempt", change)

    def on_report(self, report: AttemptReport) -> None:
        """End the running attempt with what it reported."""
        self._apply("report", lambda s: self._on_report(s, report))

    def _on_report(self, s: TaskState, report: AttemptReport) -> None:
        s.progress = s.progress.merged(report.progress)
        s.attempt = max(s.attempt, report.attempt)
        if report.checkpoint is not None:
            s.checkpoint = report.checkpoint
        plan = s.plan
        assert plan is not None  # running always has a plan
        s.plan = None
        if report.unserved is not None:
            self._end(s, "failed", error=report.unserved, code=errors.TASK_UNREGISTERED)
            return
        request = plan.request_id if plan.mode == "resume" else None
        if report.refused is not None and request is not None:
            s.verdicts[request] = "refused"
            s.refusals[request] = report.refused
            s.rejected_signals.append(  # visible in the snapshot, however the answer came
                RejectedSignal(
                    signal_id=request,
                    signal="tool_input",
                    code=errors.TOOL_ANSWER_INVALID,
                    message=f"the tool refused the answer: {report.refused}",
                )
            )
            if s.cancel_reason is not None:
                self._end(s, "canceled", error=s.cancel_reason, code=errors.TASK_CANCELED)
            else:
                s.phase = "waiting_input"
            return
        if request is not None and (report.outcome is not None or report.yielded):
            s.verdicts.setdefault(request, "accepted")  # the run took it, then went on
        outcome = report.outcome
        if outcome is None and report.yielded and (report.held_on or s.launch.settings.recoverable):
            s.yields += 1
            s.phase = "ready"
            held = report.held_on
            s.plan = self._plan("adopt", s, queue=held) if held else self._plan("recover", s)
            return
        if outcome is None:
            recoverable = s.launch.settings.recoverable
            if plan.mode == "adopt" and recoverable and s.cancel_reason is None:
                s.phase = "ready"
                s.plan = self._plan("recover", s)
                return
            self._end(s, "failed", error=lost_reason(s.launch, plan, report), code=errors.TASK_LOST)
            return
        match outcome.status:
            case "completed":
                self._end(s, "completed", data=outcome.data)
            case "failed":
                code = report.code or errors.TOOL_EXECUTION_FAILED
                self._end(s, "failed", error=outcome.error, code=code)
            case "canceled":
                error = s.cancel_reason or outcome.error
                self._end(s, "canceled", error=error, code=errors.TASK_CANCELED)
            case "waiting_input" if s.cancel_reason is not None:
                self._end(s, "canceled", error=s.cancel_reason, code=errors.TASK_CANCELED)
            case "waiting_input" if not s.launch.settings.resumable:
                self._end(
                    s,
                    "failed",
                    error="the run asked for input, but this tool cannot be resumed",
                    code=errors.TASK_NOT_RESUMABLE,
                )
            case "waiting_input":
                if outcome.checkpoint is not None:
                    s.checkpoint = outcome.checkpoint
                self._ask(s, outcome.prompt, outcome.response_schema or {})
            case _:
                assert_never(outcome.status)

    def on_progress(
        self, attempt: int, progress: ProgressSummary | None, resumed: str | None = None
    ) -> None:
        """A running attempt's news (`attempt` is its number): newer progress, or that
        `resume` took the answer with id `resumed`."""

        def change(s: TaskState) -> None:
            s.progress = s.progress.merged(progress)
            if s.phase == "running":
                s.attempt = max(s.attempt, attempt)
            plan = s.plan
            running = s.phase == "running" and plan is not None
            if resumed is not None and running and plan and plan.request_id == resumed:
                s.verdicts.setdefault(resumed, "accepted")

        self._apply("progress", change)

    def check_answer(self, wait: str, answer_id: str, response: Any) -> bool:
        """Validate an answer; True if new, False if an exact duplicate.

        Raises:
            SignalConflict: the answer id was used with other content.
            InvalidSignal: an empty answer id.
            NoSuchWait: no open wait has that id (or the task ended).
            InvalidToolInput: the response does not match the wait's schema.
        """
        s = self._state
        question = s.question if s.phase == "waiting_input" else None
        return check_answer(
            f"Background task {s.launch.task_id!r}",
            s.answers,
            wait,
            answer_id,
            response,
            open_wait=(question.wait_id, question.response_schema) if question else None,
            closed=f"has ended ({s.phase})" if s.phase in _TERMINAL else None,
        )

    def answer(self, wait: str, answer_id: str, response: Any) -> bool:
        """Accept a valid answer: a `resume` attempt with it runs next. False: a duplicate."""
        if not self.check_answer(wait, answer_id, response):
            return False

        def change(s: TaskState) -> None:
            s.answers[answer_id] = answer_digest(wait, response)
            s.phase = "ready"
            s.plan = self._plan("resume", s, request_id=answer_id, data=response)

        self._apply("answer", change)
        return True

    def request_cancel(self, reason: str) -> bool:
        """Cancel the task. True: the driver must stop the running attempt.

        Raises:
            TaskEnded: the task has already ended.
        """

        def change(s: TaskState) -> bool:
            s.cancel_reason = s.cancel_reason or reason or "cancelled"
            if s.phase == "running":
                return True
            self._end(s, "canceled", error=s.cancel_reason, code=errors.TASK_CANCELED)
            return False

        return self._apply("cancel", change)

    def record_rejected(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None:
        """Record a refused signal for the snapshot (the latest ones); nothing else changes."""
        self._apply(
            "record", lambda s: record_rejection(s.rejected_signals, signal_id, signal, error)
        )

    # --- helpers ---------------------------------------------------------------------

    @staticmethod
    def _plan(
        mode: Literal["start", "recover", "resume", "adopt"],
        s: TaskState,
        *,
        request_id: str | None = None,
        data: Any = None,
        queue: str | None = None,
    ) -> AttemptPlan:
        return AttemptPlan(
            task_id=s.launch.task_id,
            tool=s.launch.tool,
            arguments=s.launch.arguments,
            mode=mode,
            attempt=s.attempt + 1,
            max_attempts=1 if mode == "adopt" else s.launch.settings.max_attempts,
            checkpoint=s.checkpoint,
            request_id=request_id,
            data=data,
            queue=queue,
            context=s.launch.context,
            deadline=s.launch.deadline,
            capability=s.launch.settings.capability,
        )

    @staticmethod
    def _ask(s: TaskState, prompt: Any, response_schema: dict[str, Any]) -> None:
        s.waits += 1
        s.question = TaskQuestion(
            wait_id=wait_id(s.launch.task_id, s.waits),
            prompt=prompt,
            response_schema=response_schema,
        )
        s.phase = "waiting_input"

    @staticmethod
    def _end(
        s: TaskState,
        phase: Literal["completed", "failed", "canceled"],
        *,
        data: Any = None,
        error: str | None = None,
        code: str | None = None,
    ) -> None:
        s.phase = phase
        s.data = data
        s.error = error
        s.code = code
        s.plan = None
        for answer_id in s.answers:
            s.verdicts.setdefault(answer_id, "unapplied")

    # --- projection ------------------------------------------------------------------

    def snapshot(self) -> TaskSnapshot:
        return task_snapshot(self._state)

    def process_snapshot(self) -> ProcessSnapshot:
        return task_process(
            self.snapshot(), self._state.definition, tuple(self._state.rejected_signals)
        )


__all__ = ["TABLE", "BackgroundTaskMachine"]
