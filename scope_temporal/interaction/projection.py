"""Read-only views of an Interaction's state: what hosts, the UI and drivers see."""

from __future__ import annotations

from typing import assert_never

from scope_temporal.chat import Message
from scope_temporal.context_refs import BaseRef
from scope_temporal.definition import Definition
from scope_temporal.ids import task_id, tool_call_ref
from scope_temporal.interaction.news import InteractionNews
from scope_temporal.interaction.snapshot import (
    ActiveDelegate,
    ProcessSnapshot,
    Status,
    UnknownEffect,
)
from scope_temporal.interaction.state import TERMINAL_PHASES, InteractionState, SteerEnvelope
from scope_temporal.interaction.transitions import draft_of
from scope_temporal.outputs import Failure, Output, TokenUsage, TurnTranscript


def _status(s: InteractionState) -> Status:
    match s.phase:
        case "completed" | "failed" | "canceled":
            return s.phase
        case "need_model" | "model" | "backoff" | "round":
            if s.paused:
                return "paused"
            return "waiting" if s.model is not None and s.model.unknown else "running"
        case _:
            assert_never(s.phase)


def _active_children(s: InteractionState) -> tuple[str, ...]:
    """Process ids of the running child calls (ToolCall and Delegate children)."""
    if s.round is None:
        return ()
    return tuple(x.process_id or "" for x in s.round.slots if x.status == "running")


def _background_tasks(s: InteractionState) -> tuple[str, ...]:
    """The background tasks the Interaction's calls launched, in launch order, then those
    the host submitted."""
    entries = [e.task_id for r in s.rounds for e in r.entries]
    if s.round is not None:
        entries += [x.task_id for x in s.round.slots]
    entries += [t.task_id for t in s.submitted]
    return tuple(t for t in entries if t is not None)


def _tasks_to_cancel(definition: Definition, s: InteractionState) -> tuple[str, ...]:
    """The tasks launched, and those that running calls of background tools may be
    launching right now: a task's id derives from its call, so cancelling the
    Interaction reaches it even before the call has reported it."""
    launching: list[str] = []
    for slot in s.round.slots if s.round is not None else ():
        spec = definition.tools.get(slot.call.name)
        if slot.status == "running" and spec is not None and spec.background is not None:
            launching.append(task_id(slot.effect_id))
    known = _background_tasks(s)
    return known + tuple(t for t in launching if t not in known)


def _queued_message_bytes(s: InteractionState) -> int:
    """JSON bytes of the working context, the open round's settled results and the
    queued steers (with their ids): what the next model call would send, before its
    framing and tool manifest."""
    settled = s.round.slots if s.round is not None else []
    results = sum(len(c.result.model_dump_json()) for c in settled if c.result is not None)
    ids = sum(len(e.signal_id) + 4 for e in s.mailbox)  # the call lists them as applied
    messages = [*s.context, *(m for e in s.mailbox for m in e.messages)]
    return sum(len(m.model_dump_json()) for m in messages) + results + ids


def turn_transcript(s: InteractionState) -> TurnTranscript:
    """What a session's turn adds to the session's transcript."""
    return TurnTranscript(
        messages=tuple(s.context),
        replaced=s.base is None,
        applied_signals=tuple(s.applied_signals),
    )


def interaction_snapshot(s: InteractionState) -> ProcessSnapshot:
    """The snapshot of one Interaction (its children report their own)."""
    unknown: tuple[UnknownEffect, ...] = ()
    if s.model is not None and s.model.unknown:
        unknown = (
            UnknownEffect(
                process_id=s.process_id,
                effect_id=s.model.request.effect_id,
                kind="model",
                request=s.model.request,
                ref=None,
                diagnostic=s.model.diagnostic,
            ),
        )
    unknown += tuple(s.unsettled_at_cancel)
    running = [x for x in (s.round.slots if s.round else []) if x.status == "running"]
    return ProcessSnapshot(
        process_id=s.process_id,
        kind="interaction",
        definition=s.definition,
        status=_status(s),
        model_calls=s.model_calls,
        context=tuple(s.context),
        run_context=s.run_context,
        settled_results=tuple(s.rounds),
        unknown_effects=unknown,
        active_delegates=tuple(
            ActiveDelegate(
                process_id=x.process_id or "",
                ref=tool_call_ref(s.process_id, s.round.model_call_seq, x.index),
                name=x.call.name,
            )
            for x in running
            if x.target == "delegate" and s.round is not None
        ),
        active_children=_active_children(s),
        artifacts=tuple(s.artifacts),
        applied_signals=tuple(s.applied_signals),
        pending_signals=tuple(e.signal_id for e in s.mailbox),
        rejected_signals=tuple(s.rejected_signals),
        advertised_tools=tuple(s.advertised),
        approved_tools=tuple(s.approved_tools),
        output=s.output,
        failure=s.failure,
        background_tasks=_background_tasks(s),
        usage=s.usage,
        model_attempts=tuple(s.model_attempts),
    )


class InteractionView:
    """What an Interaction shows, read from its state (`InteractionMachine` has it all)."""

    _state: InteractionState
    definition: Definition

    @property
    def base(self) -> BaseRef | None:
        """A session's turn: the transcript its context starts with, by reference."""
        return self._state.base

    @property
    def carried_state(self) -> InteractionState:
        """The state the next run starts from (continue-as-new): a copy, one incarnation on.

        Its messages and results are shared, not copied: they are frozen (`draft_of`), so
        carrying costs time in the number of entries, never in the conversation's bytes."""
        carried = draft_of(self._state)
        carried.incarnation += 1
        return carried

    @property
    def context(self) -> tuple[Message, ...]:
        """The working context (after a turn's base), its messages shared, not copied."""
        return tuple(self._state.context)

    @property
    def process_id(self) -> str:
        return self._state.process_id

    @property
    def model_calls(self) -> int:
        """Model responses consumed so far (including host-settled ones)."""
        return self._state.model_calls

    @property
    def model_calls_started(self) -> int:
        """Model calls started so far (settled, in flight or unknown)."""
        return self._state.next_model_call_seq - 1

    @property
    def max_model_calls(self) -> int | None:
        return self._state.max_model_calls

    @property
    def advertised(self) -> tuple[str, ...]:
        """Deferred tools advertised so far, in advertisement order."""
        return tuple(self._state.advertised)

    @property
    def approved_tools(self) -> tuple[str, ...]:
        """Tools approved for the session (pre-approved, or remembered since)."""
        return tuple(self._state.approved_tools)

    @property
    def done(self) -> bool:
        return self._state.phase in TERMINAL_PHASES

    @property
    def output(self) -> Output | None:
        """The Output; a session's turn's carries what it adds to the session's transcript."""
        s = self._state
        if s.output is None or s.turn_of is None:
            return s.output
        return s.output.model_copy(update={"transcript": turn_transcript(s)})

    @property
    def failure(self) -> Failure | None:
        return self._state.failure

    @property
    def status(self) -> Status:
        return _status(self._state)

    @property
    def holds_unknown(self) -> bool:
        """The model Effect's outcome is unknown: only the host can settle it."""
        model = self._state.model
        return model is not None and model.unknown

    @property
    def paused(self) -> bool:
        return self._state.paused

    @property
    def model_in_flight(self) -> bool:
        """A model call was started and has not reported anything yet."""
        model = self._state.model
        return model is not None and model.emitted and not model.unknown

    @property
    def retry_reason(self) -> str | None:
        """Why the model call waits for its next attempt (phase `backoff`), else None."""
        model = self._state.model
        return model.timer.reason if model is not None and model.timer is not None else None

    @property
    def usage(self) -> TokenUsage:
        """Tokens of the model calls so far, and of the delegates that ended."""
        return self._state.usage

    @property
    def at_round_boundary(self) -> bool:
        """True when nothing is in flight: the state may be carried by continue-as-new."""
        return self._state.phase == "need_model" and not self._state.paused

    @property
    def active_children(self) -> tuple[str, ...]:
        """Process ids of the running child calls (ToolCall and Delegate children)."""
        return _active_children(self._state)

    @property
    def background_tasks(self) -> tuple[str, ...]:
        """The background tasks this Interaction's calls launched, in launch order."""
        return _background_tasks(self._state)

    @property
    def tasks_to_cancel(self) -> tuple[str, ...]:
        """The tasks launched, and those running calls may be launching right now."""
        return _tasks_to_cancel(self.definition, self._state)

    @property
    def queued_message_bytes(self) -> int:
        """JSON bytes of what the next model call would send, before its tool manifest."""
        return _queued_message_bytes(self._state)

    @property
    def pending_steers(self) -> tuple[SteerEnvelope, ...]:
        """The steers queued for the next model call, in arrival order."""
        return tuple(self._state.mailbox)

    def news(self) -> InteractionNews:
        """What this Interaction reports from now on (see `news`)."""
        return InteractionNews(lambda: self._state)

    def snapshot(self) -> ProcessSnapshot:
        return interaction_snapshot(self._state)


__all__ = ["InteractionView", "interaction_snapshot", "turn_transcript"]
