"""THE LOOP: the Interaction as a pure state machine.

Theory of operation. The machine never calls out. A driver (the Temporal workflow, or
`LocalRunner`) asks `next_effects()` for what to start, performs those effects, and feeds
back exactly one settlement per Effect (`on_model`, `on_call`) plus signals (`steer`,
`resolve`, `pause`, `resume`). The machine has no clock, no I/O and no randomness, so
the same inputs always give the same effects: that is what makes Temporal replay safe.

The rules it keeps (DESIGN.md section 2):
 1. Pending steers are applied, in arrival order, right before a model call, never during
    one and never in the middle of a batch.
 2. A model outcome is a response, a definite host failure, or unknown. Unknown holds
    the Effect for the host (`resolve`); nothing is ever re-run by the machine.
 3. A response breaking the loop's rules (duplicate call ids, nothing to say) fails with
    `interaction.model.invalid_response` and never enters the state.
 4. Tool calls run only with finish `tool_calls`; with `length` each call gets a
    "not executed" result and the model is called again; any other finish fails.
 5. Unknown tools, unauthorised tools and invalid arguments settle at admission with a
    model-visible rejected result; no child starts (`rounds.py`).
 6. Calls start as `scheduling.py` allows: parallel tools within the window, a
    sequential or exclusive call alone (a barrier), delegates unless a barrier holds them
    back. The round commits, results in call order, only when every call
    is definite. Advertisements commit only with a successful call (`rounds.py`).
 7. A candidate (a final reply, or a fully successful direct-result batch) completes only
    if no steer is pending and the completion validator accepts it; otherwise the model
    is called again (`completion.py`). `max_model_calls` is the hard bound
    (`interaction.limit.model_calls`).

Every transition works on a copy and commits only when it succeeds: a refused input
(`ScopeError`) leaves the state untouched; an unexpected exception fails the machine
closed (`interaction.state.invalid`) and it refuses further input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from scope_temporal import errors
from scope_temporal.chat import FinishReason, Message, Response
from scope_temporal.definition import Definition
from scope_temporal.errors import InvalidSignal, ProtocolError, ScopeError, SettlementMismatch
from scope_temporal.ids import (
    model_effect_id,
    task_id,
)
from scope_temporal.interaction import completion, projection, rounds, rules
from scope_temporal.interaction.effects import (
    CallModel,
    CallOutcome,
    Effect,
    ModelEffectRequest,
    ModelHostFailed,
    ModelOutcome,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
)
from scope_temporal.interaction.snapshot import (
    ProcessSnapshot,
    ResultEntry,
    SignalKind,
    Status,
)
from scope_temporal.interaction.state import (
    TERMINAL_PHASES,
    InteractionState,
    PendingModel,
    SteerEnvelope,
    transact,
)
from scope_temporal.interaction.steering import (
    check_steer_messages,
    record_rejection,
    steer_digest,
)
from scope_temporal.outputs import Failure, Output
from scope_temporal.tools import rejections

T = TypeVar("T")
ArgumentValidator = Callable[[dict[str, object], str], "str | None"]


class InteractionMachine:
    """The pure Interaction state machine for one Process.

    Args:
        definition: the Definition the state was started with (its digest must match).
        state: the full state, e.g. restored from continue-as-new.

    Raises:
        ProtocolError: `interaction.definition.changed` if the digests differ.
    """

    def __init__(self, definition: Definition, state: InteractionState) -> None:
        if state.digest != definition.digest:
            raise ProtocolError(
                f"Definition {definition.name!r} changed since this Interaction started "
                f"(digest {state.digest[:12]} recorded, {definition.digest[:12]} now). Deploy "
                "the change under a new Definition name, or finish old runs first.",
                code=errors.DEFINITION_CHANGED,
            )
        self.definition = definition
        self._state = state

    @classmethod
    def start(
        cls,
        definition: Definition,
        process_id: str,
        messages: list[Message] | tuple[Message, ...],
        *,
        max_model_calls: int | None = None,
        capabilities: tuple[str, ...] | None = None,
    ) -> InteractionMachine:
        """A fresh Interaction: instructions (if any) then `messages` as working context.

        `max_model_calls` and `capabilities` (a parent's delegate budget and grant) can only
        tighten the Definition's own.
        """
        if not messages:
            raise InvalidSignal("An Interaction needs at least one message to start.")
        limit = definition.max_model_calls
        if max_model_calls is not None:
            limit = max_model_calls if limit is None else min(limit, max_model_calls)
        granted = definition.capabilities
        if capabilities is not None:
            granted = granted & frozenset(capabilities)
        context = [Message.system(definition.instructions)] if definition.instructions else []
        state = InteractionState(
            process_id=process_id,
            definition=definition.name,
            digest=definition.digest,
            context=[*context, *messages],
            max_model_calls=limit,
            granted=tuple(sorted(granted)),
        )
        return cls(definition, state)

    # --- reading ---------------------------------------------------------------------

    @property
    def state(self) -> InteractionState:
        """A copy of the full state (safe to serialise or keep)."""
        return self._state.model_copy(deep=True)

    @property
    def process_id(self) -> str:
        return self._state.process_id

    @property
    def model_calls(self) -> int:
        """Model responses consumed so far (including host-settled ones)."""
        return self._state.model_calls

    @property
    def advertised(self) -> tuple[str, ...]:
        """Deferred tools advertised so far, in advertisement order."""
        return tuple(self._state.advertised)

    @property
    def max_model_calls(self) -> int | None:
        return self._state.max_model_calls

    @property
    def active_children(self) -> tuple[str, ...]:
        """Process ids of the running child calls (ToolCall and Delegate children)."""
        round_ = self._state.round
        if round_ is None:
            return ()
        return tuple(x.process_id or "" for x in round_.slots if x.status == "running")

    @property
    def done(self) -> bool:
        return self._state.phase in TERMINAL_PHASES

    @property
    def output(self) -> Output | None:
        return self._state.output

    @property
    def failure(self) -> Failure | None:
        return self._state.failure

    @property
    def model_in_flight(self) -> bool:
        """A model call was started and has not reported anything yet."""
        model = self._state.model
        return model is not None and model.emitted and not model.unknown

    @property
    def queued_message_bytes(self) -> int:
        """JSON bytes of the working context plus the queued steers: what the next model
        call would send, before its tool manifest."""
        s = self._state
        messages = [*s.context, *(m for e in s.mailbox for m in e.messages)]
        return sum(len(m.model_dump_json()) for m in messages)

    @property
    def model_calls_started(self) -> int:
        """Model calls started so far (settled, in flight or unknown)."""
        return self._state.next_model_call_seq - 1

    @property
    def at_round_boundary(self) -> bool:
        """True when nothing is in flight: the state may be carried by continue-as-new."""
        return self._state.phase == "need_model" and not self._state.paused

    @property
    def status(self) -> Status:
        s = self._state
        if s.phase == "completed":
            return "completed"
        if s.phase in ("failed", "canceled"):
            return s.phase
        if s.paused:
            return "paused"
        if s.model is not None and s.model.unknown:
            return "waiting"
        return "running"

    # --- transitions -----------------------------------------------------------------

    def _apply(self, change: Callable[[InteractionState], T]) -> T:
        if self.done:
            raise ProtocolError(
                f"Interaction {self._state.process_id!r} has ended ({self._state.phase}); "
                "it accepts no further input.",
                code=errors.STATE_INVALID,
            )

        def crash(exc: Exception) -> None:  # fail closed: never half-updated
            self._state.phase = "failed"
            self._state.failure = Failure.of(
                errors.STATE_INVALID, f"internal error in the Interaction core: {exc!r}"
            )

        self._state, result = transact(self._state, change, crash)
        return result

    def next_effects(self) -> list[Effect]:
        """The effects to start now; each is returned exactly once."""
        if self.done or self._state.paused:
            return []
        return self._apply(self._next_effects)

    def on_model(self, outcome: ModelOutcome) -> None:
        """Settle the in-flight model Effect with what the activity reported."""
        self._apply(lambda s: self._on_model(s, outcome))

    def check_resolution(self, settlement: ModelSettlement) -> None:
        """Raise SettlementMismatch unless `settlement` settles the held unknown model Effect."""
        s = self._state
        if s.model is None or not s.model.unknown:
            raise SettlementMismatch(
                f"Interaction {s.process_id!r} holds no unknown model effect to settle."
            )
        if settlement.request != s.model.request:
            raise SettlementMismatch(
                f"The settlement was built from another request (effect "
                f"{settlement.request.effect_id!r}, definition {settlement.request.definition!r}); "
                f"the unknown effect is {s.model.request.effect_id!r}. Build it with "
                "settle_model_result(unknown.request, ...)."
            )
        # what settle_model_result guarantees, checked again: a raw signal skips it
        if not settlement.messages_sent:
            raise SettlementMismatch("messages_sent must list the messages the model call sent.")
        problem = rules.response_problem(settlement.response.message)
        if problem is not None:
            raise SettlementMismatch(
                f"The settlement's response cannot be admitted: {problem} Settle with the "
                "response the model gave, or cancel the Interaction."
            )

    def resolve(self, settlement: ModelSettlement) -> None:
        """Apply a host's investigated settlement of the unknown model Effect."""
        self.check_resolution(settlement)
        self._apply(
            lambda s: self._admit_response(s, settlement.response, settlement.messages_sent)
        )

    def on_call(self, outcome: CallOutcome) -> None:
        """Settle one running call of the open round with its child's definite result."""
        self._apply(lambda s: rounds.on_call(self.definition, s, outcome))

    def check_steer(self, signal_id: str, messages: tuple[Message, ...]) -> bool:
        """Validate a steer; True if new, False if an exact duplicate (a no-op).

        Raises:
            InvalidSignal: not user messages, empty, or the Interaction has ended.
            SignalConflict: the id was used before with different content.
        """
        check_steer_messages(signal_id, messages)
        known = self._state.signal_digests.get(signal_id)
        if known is not None:
            if known != steer_digest(messages):
                raise errors.SignalConflict(
                    f"Steer id {signal_id!r} was already used with different content; "
                    "use a new id for a new message."
                )
            return False
        if self.done:
            raise InvalidSignal(f"Interaction {self._state.process_id!r} has ended.")
        return True

    def steer(self, signal_id: str, messages: tuple[Message, ...]) -> bool:
        """Queue a steer for the next model call. Returns False for an exact duplicate."""
        if not self.check_steer(signal_id, messages):
            return False

        def change(s: InteractionState) -> None:
            s.mailbox.append(SteerEnvelope(signal_id=signal_id, messages=messages))
            s.signal_digests[signal_id] = steer_digest(messages)

        self._apply(change)
        return True

    def record_rejected(
        self,
        signal_id: str,
        signal: SignalKind,
        error: ScopeError,
    ) -> None:
        """Record a refused signal for the snapshot (the latest ones); nothing else changes."""
        record_rejection(self._state.rejected_signals, signal_id, signal, error)

    def pause(self) -> None:
        """Start nothing new until `resume`; effects in flight continue and settle."""
        if not self.done:
            self._state.paused = True

    def resume(self) -> None:
        self._state.paused = False

    def cancel(self, reason: str = "cancelled by the host") -> None:
        """End the Interaction as canceled (the driver cancels its children)."""
        if not self.done:
            self._state.phase = "canceled"
            self._state.failure = Failure.of(errors.CANCELED, reason)

    def fail(self, code: str, message: str) -> None:
        """End the Interaction with a classified failure reported by the driver."""
        if not self.done:
            rules.fail(self._state, code, message)

    # --- the loop --------------------------------------------------------------------

    def _next_effects(self, s: InteractionState) -> list[Effect]:
        if s.phase == "need_model":
            return self._begin_model_call(s)
        if s.phase == "model" and s.model is not None and not s.model.emitted:
            s.model.emitted = True
            return [CallModel(request=s.model.request)]
        if s.phase == "round" and s.round is not None:
            return rounds.start_calls(self.definition, s, s.round)
        return []

    def _begin_model_call(self, s: InteractionState) -> list[Effect]:
        started = s.next_model_call_seq - 1
        if s.max_model_calls is not None and started >= s.max_model_calls:
            rules.fail(
                s,
                errors.LIMIT_MODEL_CALLS,
                f"The model was called {started} times, the limit of this Interaction "
                f"(max_model_calls={s.max_model_calls}); it had not completed.",
            )
            return []
        manifest = rules.manifest(self.definition, s.advertised)
        if isinstance(manifest, str):
            rules.fail(s, errors.HOST_FAILED, manifest)
            return []
        applied = [envelope.signal_id for envelope in s.mailbox]
        for envelope in s.mailbox:
            s.context.extend(envelope.messages)
        s.mailbox = []
        s.applied_signals.extend(applied)
        seq = s.next_model_call_seq
        s.next_model_call_seq += 1
        request = ModelEffectRequest(
            definition=s.definition,
            digest=s.digest,
            process_id=s.process_id,
            effect_id=model_effect_id(s.process_id, seq),
            model_call_seq=seq,
            model=self.definition.model,
            messages=tuple(s.context),
            tools=manifest,
            options=self.definition.options,
            context_reducer=self.definition.context_reducer,
            applied_signals=tuple(applied),
        )
        s.model = PendingModel(request=request, emitted=True)
        s.phase = "model"
        return [CallModel(request=request)]

    def _on_model(self, s: InteractionState, outcome: ModelOutcome) -> None:
        if s.phase != "model" or s.model is None or not s.model.emitted or s.model.unknown:
            raise ProtocolError(
                f"No model effect is in flight (phase {s.phase}); refusing {outcome.kind}."
            )
        if outcome.effect_id != s.model.request.effect_id:
            raise ProtocolError(
                f"Model settlement for {outcome.effect_id!r}, but {s.model.request.effect_id!r} "
                "is in flight."
            )
        if isinstance(outcome, ModelUnknown):
            s.model.unknown = True
            s.model.diagnostic = outcome.diagnostic
        elif isinstance(outcome, ModelHostFailed):
            rules.fail(s, errors.HOST_FAILED, outcome.message)
        elif isinstance(outcome, ModelResponded):
            self._admit_response(s, outcome.response, outcome.messages_sent)
        else:  # pragma: no cover - exhaustive over ModelOutcome
            raise ProtocolError(f"unexpected model outcome {outcome!r}")

    def _admit_response(
        self, s: InteractionState, response: Response, messages_sent: tuple[Message, ...] | None
    ) -> None:
        seq = s.model.request.model_call_seq if s.model is not None else 0
        if messages_sent is not None:
            s.context = list(messages_sent)
        s.model = None
        s.model_calls += 1
        message = response.message
        problem = rules.response_problem(message)
        if problem is not None:
            rules.fail(s, errors.MODEL_INVALID_RESPONSE, problem)
            return
        calls = message.tool_calls
        if not calls:
            s.context.append(message)
            completion.candidate(self.definition, s, model_response=response)
        elif response.finish_reason == FinishReason.tool_calls:
            s.context.append(message)
            rounds.open_round(self.definition, s, seq, calls)
        elif response.finish_reason == FinishReason.length:
            s.context.append(message)
            s.context.append(Message.tool([rejections.not_executed_token_limit(c) for c in calls]))
            s.phase = "need_model"
        else:
            rules.fail(
                s,
                errors.MODEL_TOOL_CALLS_NOT_COMPLETED,
                f"The model asked for {len(calls)} tool call(s) but finished with "
                f"{response.finish_reason.value!r}; nothing was executed.",
            )

    # --- projection ------------------------------------------------------------------

    def snapshot(self) -> ProcessSnapshot:
        return projection.interaction_snapshot(
            self._state, self.status, self.active_children, self.background_tasks
        )

    @property
    def background_tasks(self) -> tuple[str, ...]:
        """The background tasks this Interaction's calls launched, in launch order."""
        s = self._state
        entries = [e.task_id for r in s.rounds for e in r.entries]
        if s.round is not None:
            entries += [x.task_id for x in s.round.slots]
        return tuple(t for t in entries if t is not None)

    @property
    def tasks_to_cancel(self) -> tuple[str, ...]:
        """The tasks launched, and those that running calls of background tools may be
        launching right now: a task's id derives from its call, so cancelling the
        Interaction reaches it even before the call has reported it."""
        launching: list[str] = []
        round_ = self._state.round
        for slot in round_.slots if round_ is not None else ():
            spec = self.definition.tools.get(slot.call.name)
            if slot.status == "running" and spec is not None and spec.background is not None:
                launching.append(task_id(slot.effect_id))
        known = self.background_tasks
        return known + tuple(t for t in launching if t not in known)


__all__ = ["InteractionMachine", "ResultEntry"]
