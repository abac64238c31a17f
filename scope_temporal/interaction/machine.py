"""THE LOOP: the Interaction as a pure state machine.

Theory of operation. The machine never calls out. A driver (`scope_temporal.driver`, on
Temporal or in `LocalRunner`) asks `next_effects()` for what to start, performs those
effects, and feeds back exactly one settlement per Effect (`on_model`, `on_call`) plus
the host's inputs (`steer`, `resolve`, `pause`, `resume`, `cancel`). The machine has no
clock, no I/O and no randomness, so the same inputs always give the same effects: that
is what makes Temporal replay safe. It is written in the one machine style
(`transitions.py`): `TABLE` below lists every legal (phase, event) pair and where it may
lead; the phase is assigned here and nowhere else.

The rules it keeps (what they guarantee: docs/guarantees.md; its table drawn:
docs/machines/machine.md):
 1. Pending steers are applied, in arrival order, right before a model call, never during
    one and never in the middle of a batch; those that would put that call over the
    payload limit wait for the turn's next call (`turns.py`).
 2. A model outcome is a response, a definite host failure, not called (provably), or
    unknown, held for the host (`resolve`: settle it, or send it again). Only what did
    not run is retried by the machine itself, unless the Definition opts in (`retries.py`).
 3. A response breaking the loop's rules (duplicate call ids, nothing to say) fails with
    `interaction.model.invalid_response` and never enters the state.
 4. Tool calls run only with finish `tool_calls`; with `length` each call gets a
    "not executed" result and the model is called again; any other finish fails.
 5. Unknown tools, unauthorised tools and invalid arguments settle at admission with a
    model-visible rejected result; no child starts (`rounds.py`). So does a call the
    approval policy denies; one that needs a person's approval waits for it before its
    body runs, and an approval to remember covers the tool's later calls (`approvals.py`).
 6. Calls start as `scheduling.py` allows. The round commits, results in call order,
    only when every call is definite; advertisements commit only with a successful call.
 7. A candidate (a final reply, or a fully successful direct-result batch) completes only
    if no steer is pending and the completion validator accepts it; otherwise the model
    is called again (`completion.py`). `max_model_calls` is the hard bound
    (`interaction.limit.model_calls`).
"""

from __future__ import annotations

from typing import Literal, assert_never

import scope_temporal.interaction.submits as submits
from scope_temporal import errors
from scope_temporal.chat import FinishReason, Message, Options, Response, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.errors import ProtocolError, ScopeError
from scope_temporal.interaction import cancellation, completion, retries, rounds, rules, turns
from scope_temporal.interaction.effects import (
    CallModel,
    CallOutcome,
    Effect,
    ModelHostFailed,
    ModelNotRun,
    ModelOutcome,
    ModelResend,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
)
from scope_temporal.interaction.projection import InteractionView
from scope_temporal.interaction.snapshot import ResultEntry, SignalKind
from scope_temporal.interaction.state import (
    LIVE_PHASES,
    TERMINAL_PHASES,
    InteractionState,
    Phase,
    SteerEnvelope,
    SubmittedTask,
)
from scope_temporal.interaction.steering import check_steer, record_rejection, steer_digest
from scope_temporal.interaction.transitions import Machine, Table, same
from scope_temporal.outputs import Failure
from scope_temporal.tools import rejections

Event = Literal[
    "next_effects",
    "model_settled",
    "retry_due",
    "resolve",
    "call_settled",
    "steer",
    "pause",
    "resume",
    "cancel",
    "fail",
    "record",
]

_ANY = (*LIVE_PHASES, *TERMINAL_PHASES)
_ADMITTED: frozenset[Phase] = frozenset({"need_model", "round", "completed", "failed"})
TABLE: Table[Event, Phase] = {
    "next_effects": {
        "need_model": frozenset({"model", "failed"}),
        "model": frozenset({"model"}),
        "backoff": frozenset({"backoff"}),
        "round": frozenset({"round"}),
    },
    "model_settled": {"model": _ADMITTED | {"model", "backoff"}},
    "retry_due": {"backoff": frozenset({"model"})},
    "resolve": {"model": _ADMITTED | {"model"}},
    "call_settled": {"round": _ADMITTED},
    "steer": same(*LIVE_PHASES),
    "pause": same(*_ANY),  # a paused Process starts nothing new
    "resume": same(*_ANY),
    "cancel": {**{p: frozenset({"canceled"}) for p in LIVE_PHASES}, **same(*TERMINAL_PHASES)},
    "fail": {**{p: frozenset({"failed"}) for p in LIVE_PHASES}, **same(*TERMINAL_PHASES)},
    "record": same(*_ANY),
}
"""Every legal (phase, event) pair of the Interaction and the phases it may lead to."""


class InteractionMachine(InteractionView, Machine[InteractionState, Phase, Event]):
    """The pure Interaction state machine for one Process.

    Args:
        definition: the Definition the state was started with (its digest must match).
        state: the full state, e.g. restored from continue-as-new.

    Raises:
        ProtocolError: `interaction.definition.changed` if the digests differ.
    """

    TABLE = TABLE

    def __init__(self, definition: Definition, state: InteractionState) -> None:
        if state.digest != definition.digest:
            raise ProtocolError(
                f"Definition {definition.name!r} changed since this Interaction started "
                f"(digest {state.digest[:12]} recorded, {definition.digest[:12]} now). Deploy "
                "the change as a new pinned build (Worker Versioning), under a new Definition "
                "name, or finish old runs first (docs/deploy.md).",
                code=errors.DEFINITION_CHANGED,
            )
        super().__init__(state)
        self.definition = definition

    @classmethod
    def start(
        cls,
        definition: Definition,
        process_id: str,
        messages: list[Message] | tuple[Message, ...],
        *,
        max_model_calls: int | None = None,
        capabilities: tuple[str, ...] | None = None,
        approved_tools: tuple[str, ...] = (),
        options: Options | None = None,
    ) -> InteractionMachine:
        """A fresh Interaction: instructions (if any) then `messages` as working context.

        A parent's delegate budget and grant only tighten the Definition's own; tools in
        `approved_tools` need no approval unless the approver denies them; `options` apply
        over the Definition's (`rules.options_for` raises InvalidOptions for bad ones).
        """
        state = rules.initial_state(
            definition, process_id, messages, max_model_calls, capabilities, approved_tools
        )
        state.options = rules.options_for(definition, options)
        return cls(definition, state)

    # --- the one machine style -------------------------------------------------------

    def _refusal(self, event: Event, phase: Phase) -> ScopeError:
        if phase in TERMINAL_PHASES:
            return ProtocolError(
                f"Interaction {self._state.process_id!r} has ended ({phase}); it accepts "
                f"no further input ({event}).",
                code=errors.STATE_INVALID,
            )
        return ProtocolError(f"{event} is not legal in phase {phase} of the Interaction.")

    @staticmethod
    def _crash(state: InteractionState, message: str) -> None:
        state.phase = "failed"
        state.failure = Failure.of(errors.STATE_INVALID, message)

    # --- the driver's inputs ---------------------------------------------------------

    def next_effects(self, fits: turns.Fits | None = None) -> list[Effect]:
        """The effects to start now; each is returned exactly once.

        Args:
            fits: whether a model request can cross the engine; steers that would put
                the next call over it wait for a later call of the turn (rule 1).
        """
        if self.done or self._state.paused:
            return []
        return self._apply("next_effects", lambda s: self._next_effects(s, fits))

    def on_model(self, outcome: ModelOutcome) -> None:
        """Settle the in-flight model Effect with what the model call reported."""
        self._apply("model_settled", lambda s: self._on_model(s, outcome))

    def on_call(self, outcome: CallOutcome) -> None:
        """Settle one running call of the open round with its child's definite result."""
        self._apply("call_settled", lambda s: self._on_call(s, outcome))

    def retry_due(self, effect_id: str) -> None:
        """The wait (`WaitRetry`) before the attempt `effect_id` is over."""

        def change(s: InteractionState) -> None:
            retries.timer_due(s, effect_id)
            s.phase = "model"

        self._apply("retry_due", change)

    def fail(self, code: str, message: str) -> None:
        """End the Interaction with a classified failure reported by the driver."""
        self._apply("fail", lambda s: self._fail(s, code, message))

    # --- the host's inputs -----------------------------------------------------------

    def check_resolution(self, settlement: ModelSettlement | ModelResend) -> None:
        """Raise SettlementMismatch unless `settlement` settles the held unknown model Effect."""
        rules.check_resolution(self._state, settlement)

    def resolve(self, settlement: ModelSettlement | ModelResend) -> None:
        """Apply a host's investigated settlement of the unknown model Effect, or its
        choice to send the request again (a new Effect; the unknown one is superseded)."""
        self.check_resolution(settlement)
        match settlement:
            case ModelSettlement(request=r, response=resp, messages_sent=sent):  # base kept
                self._apply("resolve", lambda s: self._admit(s, resp, rules.replacement(r, sent)))
            case ModelResend():
                self._apply("resolve", retries.resend)
            case _:
                assert_never(settlement)

    def check_steer(self, signal_id: str, messages: tuple[Message, ...]) -> bool:
        """Validate a steer; True if new, False if an exact duplicate (a no-op).

        Raises:
            InvalidSignal: not user messages, empty, or the Interaction has ended.
            SignalConflict: the id was used before with different content.
        """
        return check_steer(self._state, signal_id, messages, ended=self.done)

    def steer(self, signal_id: str, messages: tuple[Message, ...]) -> bool:
        """Queue a steer for the next model call. Returns False for an exact duplicate."""
        if not self.check_steer(signal_id, messages):
            return False

        def change(s: InteractionState) -> None:
            s.mailbox.append(SteerEnvelope(signal_id=signal_id, messages=messages))
            s.signal_digests[signal_id] = steer_digest(messages)

        self._apply("steer", change)
        return True

    def record_rejected(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None:
        """Record a refused signal for the snapshot (the latest ones); nothing else changes."""
        self._apply(
            "record", lambda s: record_rejection(s.rejected_signals, signal_id, signal, error)
        )

    def pause(self) -> None:
        """Start nothing new until `resume`; effects in flight continue and settle."""
        self._apply("pause", lambda s: setattr(s, "paused", s.paused or s.phase in LIVE_PHASES))

    def resume(self) -> None:
        self._apply("resume", lambda s: setattr(s, "paused", False))

    def record_submitted(self, task: SubmittedTask) -> None:
        """A task the host submitted has started (`submits.decide` said Launch)."""
        self._apply("record", lambda s: submits.record(s, task))

    def cancel(self, reason: str = "cancelled by the host") -> None:
        """End the Interaction as canceled (the driver cancels its children); the calls still
        running stay listed as unknown, with their requests (`cancellation.py`)."""

        def change(s: InteractionState) -> None:
            if s.phase in LIVE_PHASES:
                s.unsettled_at_cancel = cancellation.unsettled(self.definition, s)
                s.phase = "canceled"
                s.failure = Failure.of(errors.CANCELED, reason)

        self._apply("cancel", change)

    # --- the loop --------------------------------------------------------------------

    def _next_effects(self, s: InteractionState, fits: turns.Fits | None) -> list[Effect]:
        match s.phase:
            case "need_model":
                request = turns.begin(self.definition, s, fits)
                if isinstance(request, Failure):
                    self._fail(s, request.code, request.message)
                    return []
                s.phase = "model"
                return [CallModel(request=request)]
            case "model":
                if s.model is None or s.model.emitted:
                    return []
                s.model.emitted = True
                return [CallModel(request=s.model.request)]
            case "backoff":
                return list(retries.timer_effect(s))
            case "round":
                assert s.round is not None  # the round phase always has its round
                return rounds.start_calls(self.definition, s, s.round)
            case "completed" | "failed" | "canceled":  # pragma: no cover - refused by TABLE
                return []
            case _:
                assert_never(s.phase)

    def _on_model(self, s: InteractionState, outcome: ModelOutcome) -> None:
        if s.model is None or not s.model.emitted or s.model.unknown:
            raise ProtocolError(f"No model effect is in flight; refusing {outcome.kind}.")
        if outcome.effect_id != s.model.request.effect_id:
            raise ProtocolError(
                f"Model settlement for {outcome.effect_id!r}, but {s.model.request.effect_id!r} "
                "is in flight."
            )
        match outcome:
            case ModelUnknown() | ModelNotRun():
                after = retries.after(self.definition, s, outcome)
                if isinstance(after, Failure):
                    self._fail(s, after.code, after.message)
                else:
                    s.phase = after
            case ModelHostFailed():
                self._fail(s, errors.HOST_FAILED, outcome.message)
            case ModelResponded():
                self._admit(s, outcome.response, outcome.messages_sent)
            case _:
                assert_never(outcome)

    def _admit(
        self, s: InteractionState, response: Response, messages_sent: tuple[Message, ...] | None
    ) -> None:
        """Take a model response (reported, or settled by the host) into the state."""
        seq = s.model.request.model_call_seq if s.model is not None else 0
        if messages_sent is not None:
            # the replacement is the whole context (the instructions it was sent included)
            s.context, s.base, s.instructions = list(messages_sent), None, None
        if s.model is not None:
            s.usage = s.usage.add(s.model.request.model, response.usage)
        s.model = None
        s.model_calls += 1
        message = response.message
        problem = rules.response_problem(message)
        if problem is not None:
            self._fail(s, errors.MODEL_INVALID_RESPONSE, problem)
            return
        calls = message.tool_calls
        if not calls:
            s.context.append(message)
            self._candidate(s, model_response=response)
        elif response.finish_reason == FinishReason.tool_calls:
            s.context.append(message)
            round_ = rounds.admit(self.definition, s, seq, calls)
            if isinstance(round_, Failure):
                self._fail(s, round_.code, round_.message)
                return
            s.round = round_
            s.phase = "round"
            self._commit_if_complete(s)
        elif response.finish_reason == FinishReason.length:
            s.context.append(message)
            s.context.append(Message.tool([rejections.not_executed_token_limit(c) for c in calls]))
            s.phase = "need_model"
        else:
            self._fail(
                s,
                errors.MODEL_TOOL_CALLS_NOT_COMPLETED,
                f"The model asked for {len(calls)} tool call(s) but finished with "
                f"{response.finish_reason.value!r}; nothing was executed.",
            )

    def _on_call(self, s: InteractionState, outcome: CallOutcome) -> None:
        rounds.settle(self.definition, s, outcome)
        self._commit_if_complete(s)

    def _commit_if_complete(self, s: InteractionState) -> None:
        if s.round is None or not rounds.complete(s.round):
            return
        direct = rounds.commit(s, s.round)
        if direct is not None:
            self._candidate(s, direct=direct)
        else:
            s.phase = "need_model"

    def _candidate(
        self,
        s: InteractionState,
        *,
        model_response: Response | None = None,
        direct: tuple[ToolResult, ...] | None = None,
    ) -> None:
        decision = completion.judge(
            self.definition, s, model_response=model_response, direct=direct
        )
        match decision:
            case completion.Accepted():
                s.output = decision.output
                s.phase = "completed"
            case completion.Again():
                if decision.feedback is not None:
                    s.context.append(Message.user(decision.feedback))
                s.phase = "need_model"
            case completion.Refused():
                self._fail(s, decision.failure.code, decision.failure.message)
            case _:
                assert_never(decision)

    @staticmethod
    def _fail(s: InteractionState, code: str, message: str) -> None:
        if s.phase in TERMINAL_PHASES:
            return
        s.phase = "failed"
        s.round = None
        s.model = None
        s.failure = Failure.of(code, message, usage=s.usage if s.usage.models else None)


__all__ = ["TABLE", "InteractionMachine", "ResultEntry"]
