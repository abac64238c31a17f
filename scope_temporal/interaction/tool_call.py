"""The Tool call Process as a pure state machine: one logical call, exactly one settlement.

Theory of operation. The driver (workflow `scope.ToolCall`, or `LocalRunner`) asks
`next_attempt()` for the attempt to run, runs the tool body once per attempt, and feeds
the attempt's outcome back with `on_outcome`. Outcomes:

 - succeeded / failed / rejected: definite; the Process is settled and returns it.
 - input required: the Process waits under a WaitID for `answer`; the answer is validated
   against the response schema, then the body is re-entered with (state, response).
   Beyond the call's `ToolBudget` (its continuations) it settles as failed instead
   (`tool.budget.exhausted`), and the body is not entered again.

A call its Interaction started behind an `ApprovalGate` opens an approval wait before its
first attempt (`approvals.py`): approved, it becomes ready (the body runs once); denied,
it settles as rejected with the reason, its body never entered.
 - unknown: the Process holds the Effect until the host settles it (`resolve`); nothing
   is re-run by the machine.

A paused Process starts no attempt; an answer arriving while paused is accepted and the
re-entry happens after `resume`. In the one machine style (`transitions.py`): `TABLE`
lists every legal (phase, event) pair, and it fails closed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, assert_never

from pydantic import BaseModel, ConfigDict

from scope_temporal import errors
from scope_temporal.approval import ApprovalRecord
from scope_temporal.errors import ProtocolError, ScopeError, SettlementMismatch
from scope_temporal.ids import approval_wait_id, wait_id
from scope_temporal.interaction import approvals
from scope_temporal.interaction.answers import answer_digest, check_answer
from scope_temporal.interaction.effects import ToolEffectRequest, ToolSettlement, same_request
from scope_temporal.interaction.rules import outcome_problem
from scope_temporal.interaction.sampling_values import SAMPLING_STATE
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    RejectedSignal,
    SignalKind,
    Status,
    UnknownEffect,
)
from scope_temporal.interaction.steering import record_rejection
from scope_temporal.interaction.transitions import Machine, Table, same
from scope_temporal.outputs import Failure
from scope_temporal.tools.budget import exhausted
from scope_temporal.tools.outcome import (
    DefiniteOutcome,
    Failed,
    InputRequired,
    Rejected,
    Succeeded,
    ToolOutcome,
    Unknown,
)
from scope_temporal.wire import Derivation, Derived


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenWait(_State):
    wait_id: str
    prompt: Any
    """A string or any JSON value (see `require_tool_input`)."""
    response_schema: dict[str, Any]
    state: Any = None
    kind: Literal["input", "approval", "sampling"] = "input"
    """sampling: an MCP server asks the Interaction's model; its driver answers, never a
    person (`interaction.sampling`)."""


class ToolAttempt(_State, Derived):
    """One entry into the tool body (on the wire, `entry` 1 is left out)."""

    WIRE_DERIVED: ClassVar[dict[str, Derivation]] = {"entry": lambda d: 1}

    request: ToolEffectRequest
    entry: int
    """1 for the first entry, 2 for the first continuation, ..."""
    has_continuation: bool = False
    continuation_state: Any = None
    continuation_response: Any = None
    approval: ApprovalRecord | None = None
    """The approval decision on record (`scope.tool` refuses a covered call without one)."""


ToolCallPhase = Literal["ready", "running", "waiting", "unknown", "settled", "canceled", "failed"]
"""ready: an attempt may start; running: one runs; waiting: for an answer; unknown: for the
host's settlement; settled, canceled, failed: ended (failed only by a bug in the core)."""
Event = Literal[
    "next_attempt", "outcome", "answer", "resolve", "pause", "resume", "cancel", "record"
]

_LIVE: tuple[ToolCallPhase, ...] = ("ready", "running", "waiting", "unknown")
_ENDED: tuple[ToolCallPhase, ...] = ("settled", "canceled", "failed")
TABLE: Table[Event, ToolCallPhase] = {
    "next_attempt": {"ready": frozenset({"running"})},
    "outcome": {"running": frozenset({"waiting", "unknown", "settled"})},
    "answer": {"waiting": frozenset({"ready", "settled"})},  # settled: approval denied
    "resolve": {"unknown": frozenset({"settled"})},
    "pause": same(*_LIVE, *_ENDED),
    "resume": same(*_LIVE, *_ENDED),
    "cancel": {**{p: frozenset({"canceled"}) for p in _LIVE}, **same(*_ENDED)},
    "record": same(*_LIVE, *_ENDED),
}
"""Every legal (phase, event) pair of a Tool call and the phases it may lead to."""


class ToolCallState(_State):
    request: ToolEffectRequest
    phase: ToolCallPhase = "ready"
    paused: bool = False
    entries: int = 0
    wait: OpenWait | None = None
    continuation: tuple[Any, Any] | None = None
    answers: dict[str, str] = {}
    """Accepted answer ids -> digest (dedup; reuse with other content is a conflict)."""
    unknown_code: str = ""
    diagnostic: str = ""
    outcome: DefiniteOutcome | None = None
    approval: ApprovalRecord | None = None
    """The call's approval: given by its Interaction at admission, or by its wait's answer."""
    failure: Failure | None = None
    rejected_signals: list[RejectedSignal] = []


class ToolCallMachine(Machine[ToolCallState, ToolCallPhase, Event]):
    """The pure Tool call Process (in the one machine style: see `TABLE`)."""

    TABLE = TABLE

    @classmethod
    def start(
        cls,
        request: ToolEffectRequest,
        approval: approvals.ApprovalGate | None = None,
        decision: ApprovalRecord | None = None,
    ) -> ToolCallMachine:
        """A new call: ready for its first attempt, or behind `approval` waiting for it."""
        state = ToolCallState(request=request, approval=decision)
        if approval is not None:
            state.phase = "waiting"
            state.wait = OpenWait(
                wait_id=approval_wait_id(request.process_id),
                prompt=approvals.prompt(request.call, approval),
                response_schema=approvals.ANSWER_SCHEMA,
                kind="approval",
            )
        return cls(state)

    def _refusal(self, event: Event, phase: ToolCallPhase) -> ScopeError:
        return ProtocolError(
            f"Tool call {self._state.request.process_id!r}: {event} is not legal in phase {phase}."
        )

    @staticmethod
    def _crash(state: ToolCallState, message: str) -> None:
        state.phase = "failed"
        state.wait = None
        state.failure = Failure.of(errors.STATE_INVALID, message)

    # --- reading ---------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return self._state.paused

    @property
    def outcome(self) -> DefiniteOutcome | None:
        """The settlement, once definite."""
        return self._state.outcome

    @property
    def approval(self) -> ApprovalRecord | None:
        """Its approval decision (given at admission, or by its wait's answer), if any."""
        return self._state.approval

    @property
    def failure(self) -> Failure | None:
        """Why the call ended without a settlement (only a bug in the core does that)."""
        return self._state.failure

    @property
    def status(self) -> Status:
        s = self._state
        match s.phase:
            case "settled":
                return "completed"
            case "canceled" | "failed":
                return s.phase
            case "ready" | "running" | "waiting" | "unknown":
                if s.paused:
                    return "paused"
                if s.phase == "unknown" or (s.phase == "waiting" and self.sampling_wait is None):
                    return "waiting"
                return "running"  # a sampling request waits for no person
            case _:
                assert_never(s.phase)

    @property
    def sampling_wait(self) -> OpenWait | None:
        """The open wait, when it is an MCP server's sampling request (its driver runs
        the model call and answers it with `answer(..., by_model=True)`)."""
        wait = self._state.wait
        return wait if wait is not None and wait.kind == "sampling" else None

    # --- the driver's inputs ---------------------------------------------------------

    def next_attempt(self) -> ToolAttempt | None:
        """The attempt to run now (each returned once), or None."""
        s = self._state
        if s.phase != "ready" or s.paused:
            return None

        def change(d: ToolCallState) -> ToolAttempt:
            d.entries += 1
            d.phase = "running"
            cont, d.continuation = d.continuation, None
            return ToolAttempt(
                request=d.request,
                entry=d.entries,
                has_continuation=cont is not None,
                continuation_state=cont[0] if cont else None,
                continuation_response=cont[1] if cont else None,
                approval=d.approval,
            )

        return self._apply("next_attempt", change)

    def on_outcome(self, outcome: ToolOutcome) -> None:
        """Settle the running attempt with what the tool attempt reported."""

        def change(d: ToolCallState) -> None:
            budget = d.request.budget
            match outcome:
                case InputRequired() if (
                    budget
                    and outcome.state != SAMPLING_STATE  # bounded by the model budget
                    and not budget.allows_continuation(d.entries)
                ):
                    d.phase = "settled"
                    d.outcome = exhausted(d.request.call, budget)
                case InputRequired():
                    d.phase = "waiting"
                    d.wait = OpenWait(
                        wait_id=wait_id(d.request.process_id, d.entries),
                        prompt=outcome.prompt,
                        response_schema=outcome.response_schema,
                        state=outcome.state,
                        kind="sampling" if outcome.state == SAMPLING_STATE else "input",
                    )
                case Unknown():
                    d.phase = "unknown"
                    d.unknown_code = outcome.code
                    d.diagnostic = outcome.diagnostic
                case Succeeded() | Failed() | Rejected():
                    d.phase = "settled"
                    d.outcome = outcome
                case _:
                    assert_never(outcome)

        self._apply("outcome", change)

    # --- the host's inputs -----------------------------------------------------------

    def check_answer(
        self, wait: str, answer_id: str, response: Any, *, by_model: bool = False
    ) -> bool:
        """Validate an answer; True if new, False if an exact duplicate. A sampling
        request is answered only `by_model` (its driver), never by a person.

        Raises:
            NoSuchWait: no open wait has that id.
            SignalConflict: the answer id was used with different content.
            InvalidToolInput: the response does not match the wait's schema, or a person
                answers a sampling request.
        """
        s = self._state
        if (
            s.wait is not None
            and s.wait.wait_id == wait
            and (s.wait.kind == "sampling") != by_model
        ):
            raise errors.InvalidToolInput(
                f"Wait {wait!r} is an MCP server's sampling request: the Interaction's model "
                "answers it, not a person."
                if not by_model
                else f"Wait {wait!r} is not a sampling request."
            )
        return check_answer(
            f"Tool call {s.request.process_id!r}",
            s.answers,
            wait,
            answer_id,
            response,
            open_wait=(s.wait.wait_id, s.wait.response_schema) if s.wait else None,
            closed="was cancelled" if s.phase == "canceled" else None,
        )

    def answer(self, wait: str, answer_id: str, response: Any, *, by_model: bool = False) -> bool:
        """Accept a validated answer; the body is re-entered (after resume, if paused).
        An approval wait's answer lets the body run, or settles the call as denied."""
        if not self.check_answer(wait, answer_id, response, by_model=by_model):
            return False

        def change(d: ToolCallState) -> None:
            assert d.wait is not None
            d.answers[answer_id] = answer_digest(wait, response)
            kind = d.wait.kind
            if kind == "input" or kind == "sampling":
                d.continuation = (d.wait.state, response)
                d.phase = "ready"
            elif kind == "approval":
                d.approval, refused = approvals.answered(d.request.call, response, answer_id)
                d.phase, d.outcome = ("ready", None) if refused is None else ("settled", refused)
            else:
                assert_never(kind)
            d.wait = None

        self._apply("answer", change)
        return True

    def check_resolution(self, settlement: ToolSettlement) -> None:
        s = self._state
        if s.phase != "unknown":
            raise SettlementMismatch(
                f"Tool call {s.request.process_id!r} holds no unknown effect (phase {s.phase})."
            )
        if not same_request(settlement.request, s.request):
            raise SettlementMismatch(
                f"The settlement was built from another request (effect "
                f"{settlement.request.effect_id!r}, definition {settlement.request.definition!r});"
                f" this tool call's effect is {s.request.effect_id!r}. Build it with "
                "settle_tool_result(unknown.request, ...)."
            )
        problem = outcome_problem(s.request, settlement.outcome)
        if problem is not None:
            raise SettlementMismatch(f"{problem} Build it with settle_tool_result(...).")

    def resolve(self, settlement: ToolSettlement) -> None:
        """Apply the host's investigated settlement of the unknown Effect."""
        self.check_resolution(settlement)

        def change(d: ToolCallState) -> None:
            d.phase = "settled"
            d.outcome = settlement.outcome

        self._apply("resolve", change)

    def record_rejected(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None:
        """Record a refused signal for the snapshot (the latest ones); nothing else changes."""
        self._apply(
            "record", lambda d: record_rejection(d.rejected_signals, signal_id, signal, error)
        )

    def pause(self) -> None:
        self._apply("pause", lambda d: setattr(d, "paused", True))

    def resume(self) -> None:
        self._apply("resume", lambda d: setattr(d, "paused", False))

    def cancel(self) -> None:
        """End the call as canceled: its wait closes and it is never entered again."""

        def change(d: ToolCallState) -> None:
            if d.phase in _LIVE:
                d.phase = "canceled"
                d.wait = None

        self._apply("cancel", change)

    def snapshot(self) -> ProcessSnapshot:
        s = self._state
        req = s.request
        waits: tuple[PendingToolInput, ...] = ()
        if s.wait is not None and s.wait.kind != "sampling":  # a person's waits only
            waits = (
                PendingToolInput(
                    process_id=req.process_id,
                    wait_id=s.wait.wait_id,
                    prompt=s.wait.prompt,
                    response_schema=s.wait.response_schema,
                    ref=req.ref,
                    kind=s.wait.kind,
                ),
            )
        unknown: tuple[UnknownEffect, ...] = ()
        if s.phase == "unknown":
            unknown = (
                UnknownEffect(
                    process_id=req.process_id,
                    effect_id=req.effect_id,
                    kind="tool",
                    request=req,
                    ref=req.ref,
                    diagnostic=f"[{s.unknown_code}] {s.diagnostic}",
                ),
            )
        return ProcessSnapshot(
            process_id=req.process_id,
            kind="tool_call",
            definition=req.definition,
            status=self.status,
            pending_tool_inputs=waits,
            unknown_effects=unknown,
            rejected_signals=tuple(s.rejected_signals),
            tool_entries=s.entries,
        )


__all__ = ["TABLE", "ToolAttempt", "ToolCallMachine", "ToolCallPhase", "ToolCallState"]
