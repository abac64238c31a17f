"""The Tool call Process as a pure state machine: one logical call, exactly one settlement.

Theory of operation. The driver (workflow `scope.ToolCall`, or `LocalRunner`) asks
`next_attempt()` for the attempt to run, runs the tool body once per attempt, and feeds
the attempt's outcome back with `on_outcome`. Outcomes:

 - succeeded / failed / rejected: definite; the Process is settled and returns it.
 - input required: the Process waits under a WaitID for `answer`; the answer is validated
   against the response schema, then the body is re-entered with (state, response).
 - unknown: the Process holds the Effect until the host settles it (`resolve`); nothing
   is re-run by the machine.

A paused Process starts no attempt; an answer arriving while paused is accepted and the
re-entry happens after `resume`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from scope_temporal.errors import (
    ProtocolError,
    ScopeError,
    SettlementMismatch,
)
from scope_temporal.ids import wait_id
from scope_temporal.interaction.answers import answer_digest, check_answer
from scope_temporal.interaction.effects import ToolEffectRequest, ToolSettlement
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    RejectedSignal,
    SignalKind,
    Status,
    UnknownEffect,
)
from scope_temporal.interaction.state import draft_of
from scope_temporal.interaction.steering import record_rejection
from scope_temporal.tools.outcome import (
    DefiniteOutcome,
    InputRequired,
    Succeeded,
    ToolOutcome,
    Unknown,
)

T = TypeVar("T")


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenWait(_State):
    wait_id: str
    prompt: Any
    """A string or any JSON value (see `require_tool_input`)."""
    response_schema: dict[str, Any]
    state: Any = None


class ToolAttempt(_State):
    """One entry into the tool body."""

    request: ToolEffectRequest
    entry: int
    """1 for the first entry, 2 for the first continuation, ..."""
    has_continuation: bool = False
    continuation_state: Any = None
    continuation_response: Any = None


class ToolCallState(_State):
    request: ToolEffectRequest
    phase: Literal["ready", "running", "waiting", "unknown", "settled", "canceled"] = "ready"
    paused: bool = False
    entries: int = 0
    wait: OpenWait | None = None
    continuation: tuple[Any, Any] | None = None
    answers: dict[str, str] = {}
    """Accepted answer ids -> digest (dedup; reuse with other content is a conflict)."""
    unknown_code: str = ""
    diagnostic: str = ""
    outcome: DefiniteOutcome | None = None
    rejected_signals: list[RejectedSignal] = []


def outcome_problem(request: ToolEffectRequest, outcome: DefiniteOutcome) -> str | None:
    """Why `outcome` cannot settle the call `request` describes, or None.

    The checks `settle_tool_result` makes, repeated where a raw signal cannot skip them:
    a result for another call would otherwise reach the parent's round and fail it.
    """
    call, result = request.call, outcome.result
    if result.call_id != call.id or result.name != call.name:
        return (
            f"The result answers call {result.call_id!r} ({result.name}), but the unknown "
            f"effect is call {call.id!r} ({call.name})."
        )
    if isinstance(outcome, Succeeded) == result.is_error:
        return (
            f"Disposition {outcome.kind!r} disagrees with is_error={result.is_error}: "
            "succeeded results have is_error=False, failed/rejected ones is_error=True."
        )
    if isinstance(outcome, Succeeded):
        unknown = sorted(set(outcome.advertised) - set(request.deferred_tools))
        if unknown:
            return f"{unknown} are not deferred tools of {request.definition!r}."
    return None


class ToolCallMachine:
    """The pure Tool call Process."""

    def __init__(self, state: ToolCallState) -> None:
        self._state = state

    @classmethod
    def start(cls, request: ToolEffectRequest) -> ToolCallMachine:
        return cls(ToolCallState(request=request))

    @property
    def state(self) -> ToolCallState:
        return self._state.model_copy(deep=True)

    @property
    def phase(self) -> str:
        return self._state.phase

    @property
    def paused(self) -> bool:
        return self._state.paused

    @property
    def outcome(self) -> DefiniteOutcome | None:
        """The settlement, once definite."""
        return self._state.outcome

    @property
    def status(self) -> Status:
        phase = self._state.phase
        if phase == "settled":
            return "completed"
        if phase == "canceled":
            return "canceled"
        if self._state.paused:
            return "paused"
        if phase in ("waiting", "unknown"):
            return "waiting"
        return "running"

    def _apply(self, change: Callable[[ToolCallState], T]) -> T:
        draft = draft_of(self._state)
        result = change(draft)
        self._state = draft
        return result

    def next_attempt(self) -> ToolAttempt | None:
        """The attempt to run now (each returned once), or None."""
        s = self._state
        if s.phase != "ready" or s.paused:
            return None

        def change(d: ToolCallState) -> ToolAttempt:
            d.entries += 1
            d.phase = "running"
            cont = d.continuation
            d.continuation = None
            return ToolAttempt(
                request=d.request,
                entry=d.entries,
                has_continuation=cont is not None,
                continuation_state=cont[0] if cont else None,
                continuation_response=cont[1] if cont else None,
            )

        return self._apply(change)

    def on_outcome(self, outcome: ToolOutcome) -> None:
        """Settle the running attempt with what the activity reported."""
        if self._state.phase != "running":
            raise ProtocolError(
                f"Tool call {self._state.request.process_id!r} has no attempt running "
                f"(phase {self._state.phase}); refusing {outcome.kind}."
            )

        def change(d: ToolCallState) -> None:
            if isinstance(outcome, InputRequired):
                d.phase = "waiting"
                d.wait = OpenWait(
                    wait_id=wait_id(d.request.process_id, d.entries),
                    prompt=outcome.prompt,
                    response_schema=outcome.response_schema,
                    state=outcome.state,
                )
            elif isinstance(outcome, Unknown):
                d.phase = "unknown"
                d.unknown_code = outcome.code
                d.diagnostic = outcome.diagnostic
            else:
                d.phase = "settled"
                d.outcome = outcome

        self._apply(change)

    def check_answer(self, wait: str, answer_id: str, response: Any) -> bool:
        """Validate an answer; True if new, False if an exact duplicate.

        Raises:
            NoSuchWait: no open wait has that id.
            SignalConflict: the answer id was used with different content.
            InvalidToolInput: the response does not match the wait's schema.
        """
        s = self._state
        return check_answer(
            f"Tool call {s.request.process_id!r}",
            s.answers,
            wait,
            answer_id,
            response,
            open_wait=(s.wait.wait_id, s.wait.response_schema) if s.wait else None,
            closed="was cancelled" if s.phase == "canceled" else None,
        )

    def answer(self, wait: str, answer_id: str, response: Any) -> bool:
        """Accept a validated answer; the body is re-entered (after resume, if paused)."""
        if not self.check_answer(wait, answer_id, response):
            return False

        def change(d: ToolCallState) -> None:
            assert d.wait is not None
            d.answers[answer_id] = answer_digest(wait, response)
            d.continuation = (d.wait.state, response)
            d.wait = None
            d.phase = "ready"

        self._apply(change)
        return True

    def check_resolution(self, settlement: ToolSettlement) -> None:
        s = self._state
        if s.phase != "unknown":
            raise SettlementMismatch(
                f"Tool call {s.request.process_id!r} holds no unknown effect (phase {s.phase})."
            )
        if settlement.request != s.request:
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

        self._apply(change)

    def record_rejected(
        self,
        signal_id: str,
        signal: SignalKind,
        error: ScopeError,
    ) -> None:
        """Record a refused signal for the snapshot (the latest ones); nothing else changes."""
        record_rejection(self._state.rejected_signals, signal_id, signal, error)

    def pause(self) -> None:
        self._state.paused = True

    def resume(self) -> None:
        self._state.paused = False

    def cancel(self) -> None:
        """End the call as canceled: its wait closes and it is never entered again."""
        if self._state.phase != "settled":
            self._state.phase = "canceled"
            self._state.wait = None

    def snapshot(self) -> ProcessSnapshot:
        s = self._state
        req = s.request
        waits: tuple[PendingToolInput, ...] = ()
        if s.wait is not None:
            waits = (
                PendingToolInput(
                    process_id=req.process_id,
                    wait_id=s.wait.wait_id,
                    prompt=s.wait.prompt,
                    response_schema=s.wait.response_schema,
                    ref=req.ref,
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


__all__ = ["ToolAttempt", "ToolCallMachine", "ToolCallState"]
