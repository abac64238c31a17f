"""The event projection: what is new in a process since its driver last looked (pure).

Each process keeps a cursor of what it has reported; its driver asks, after each step,
for the events between the cursor and the state now, and publishes them. A cursor starts
from the state it is given: a run continued-as-new from a carried state reports only
what happens after (the run before reported the rest).

An Interaction is looked at in three places, because some facts live in no state:
 1. `started`: the effects `next_effects()` returned (a model call, with the steers it
    applied; calls and delegates started).
 2. `model`: the outcome a model call reported, or a host's settlement of an unknown one
    (what the model said, how it finished, its usage).
 3. `settled`, before each `next_effects()`: calls settled since (one event per call,
    those refused at admission included), feedback the completion validator appended to
    the context, and the end (completed, failed or canceled), once.
A Tool call and a background task are looked at after each step (`ToolCallNews`,
`TaskNews`): an input wait opened or answered, an unknown outcome opened or settled, a
task's progress.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import assert_never

from scope_temporal.chat import Message
from scope_temporal.ids import tool_call_ref
from scope_temporal.interaction import rules
from scope_temporal.interaction.effects import (
    CallModel,
    Effect,
    ModelEffectRequest,
    ModelHostFailed,
    ModelNotRun,
    ModelOutcome,
    ModelResend,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
    StartDelegate,
    StartToolCall,
)
from scope_temporal.interaction.events import (
    CanceledEvent,
    CompletedEvent,
    Event,
    FailedEvent,
    FeedbackEvent,
    ModelSettledEvent,
    ModelStartedEvent,
    SteerAppliedEvent,
    TaskProgressEvent,
    ToolSettledEvent,
    ToolStartedEvent,
    UnknownOpenedEvent,
    UnknownSettledEvent,
    WaitAnsweredEvent,
    WaitOpenedEvent,
)
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    ResultEntry,
    TaskSnapshot,
)
from scope_temporal.interaction.state import (
    TERMINAL_PHASES,
    CallSlot,
    InteractionState,
    SteerEnvelope,
)

MAX_TASK_DATA_BYTES = 2048
"""A task result larger than this (as JSON) is left out of its `task_progress` event."""


class InteractionNews:
    """What one run of an Interaction has reported (see the module docstring)."""

    def __init__(self, read: Callable[[], InteractionState]) -> None:
        self._read = read
        state = read()
        self._process_id = state.process_id
        self._rounds = len(state.rounds)
        self._settled = _refs(state, lambda x: x.status == "settled")
        self._delegates = _refs(state, lambda x: x.target == "delegate")  # results do not say
        self._ended = state.phase in TERMINAL_PHASES
        self._seen(state)

    def _seen(self, s: InteractionState) -> None:
        self._context_len = len(s.context)
        self._last = s.context[-1] if s.context else None

    def started(self, effects: Sequence[Effect], steers: Sequence[SteerEnvelope]) -> list[Event]:
        """Events of the effects just started; `steers` were pending before."""
        s = self._read()
        events: list[Event] = []
        for effect in effects:
            match effect:
                case CallModel(request=request):
                    events += [
                        SteerAppliedEvent(
                            process_id=self._process_id,
                            signal_id=steer.signal_id,
                            messages=steer.messages,
                        )
                        for steer in steers
                        if steer.signal_id in request.applied_signals
                    ]
                    events.append(
                        ModelStartedEvent(
                            process_id=self._process_id,
                            model_call_seq=request.model_call_seq,
                            model=request.model,
                        )
                    )
                case StartToolCall(request=request):
                    events.append(
                        ToolStartedEvent(
                            process_id=self._process_id,
                            ref=request.ref,
                            call=request.call,
                            target="tool",
                            child_id=request.process_id,
                        )
                    )
                case StartDelegate():
                    assert s.round is not None  # a delegate starts in its round
                    self._delegates.add(effect.ref)
                    events.append(
                        ToolStartedEvent(
                            process_id=self._process_id,
                            ref=effect.ref,
                            call=s.round.slots[effect.call_index].call,
                            target="delegate",
                            child_id=effect.process_id,
                            definition=effect.definition,
                        )
                    )
        self._seen(s)  # the steers just applied are not feedback
        return events + self._end(s)

    def model(
        self,
        request: ModelEffectRequest,
        outcome: ModelOutcome | ModelSettlement | ModelResend,
        *,
        retried: bool = False,
    ) -> list[Event]:
        """Events of a model call's outcome, or of a host's settlement of its unknown
        (`retried`: the loop sends a not-called request again)."""
        seq = request.model_call_seq
        pid = self._process_id
        match outcome:
            case ModelResponded(response=response) | ModelSettlement(response=response):
                by_host = isinstance(outcome, ModelSettlement)
                settled = ModelSettledEvent(
                    process_id=pid,
                    model_call_seq=seq,
                    outcome="responded",
                    message=response.message,
                    finish_reason=response.finish_reason,
                    usage=response.usage,
                    settled_by_host=by_host,
                )
                if not by_host:
                    return [settled]
                return [UnknownSettledEvent(process_id=pid, effect_id=request.effect_id), settled]
            case ModelHostFailed():
                failed = ModelSettledEvent(
                    process_id=pid, model_call_seq=seq, outcome="host_failed"
                )
                return [failed]
            case ModelNotRun(reason=reason):
                not_called = ModelSettledEvent(
                    process_id=pid,
                    model_call_seq=seq,
                    outcome="not_called",
                    model=request.model,
                    not_called=reason,
                    retried=retried,
                )
                return [not_called]
            case ModelResend():  # the host sends it again: the unknown is settled
                return [UnknownSettledEvent(process_id=pid, effect_id=request.effect_id)]
            case ModelUnknown(diagnostic=diagnostic):
                return [
                    UnknownOpenedEvent(
                        process_id=pid,
                        effect_id=request.effect_id,
                        effect_kind="model",
                        model_call_seq=seq,
                        definition=request.definition,
                        diagnostic=diagnostic,
                    )
                ]
            case _:
                assert_never(outcome)

    def settled(self) -> list[Event]:
        """Calls settled, feedback appended and the end, since the last look."""
        s = self._read()
        pid = self._process_id
        events: list[Event] = []
        for round_ in s.rounds[self._rounds :]:
            for entry in round_.entries:
                if entry.call_ref not in self._settled:
                    delegate = entry.call_ref in self._delegates
                    events.append(_tool_settled(pid, entry, delegate=delegate))
            self._settled, self._delegates = set(), set()
        self._rounds = len(s.rounds)
        if s.round is not None:
            for slot in s.round.slots:
                entry_ref = tool_call_ref(pid, s.round.model_call_seq, slot.index)
                if slot.status == "settled" and entry_ref not in self._settled:
                    self._settled.add(entry_ref)
                    entry = rules.result_entry(pid, s.round.model_call_seq, slot)
                    events.append(_tool_settled(pid, entry, delegate=slot.target == "delegate"))
        if s.phase not in TERMINAL_PHASES:
            events += [
                FeedbackEvent(process_id=pid, text=m.text)
                for m in self._appended(s)
                if m.role == "user"
            ]
        self._seen(s)
        return events + self._end(s)

    def _appended(self, s: InteractionState) -> list[Message]:
        """Messages the context gained since the last look. A context reducer replaces the
        context when its call settles: then they are the response and what followed it."""
        context = s.context
        at = self._context_len
        kept = at == 0 or (len(context) >= at and context[at - 1] is self._last)
        if kept:
            return context[self._context_len :]
        last_reply = max((i for i, m in enumerate(context) if m.role == "assistant"), default=0)
        return context[last_reply:]

    def _end(self, s: InteractionState) -> list[Event]:
        if self._ended or s.phase not in TERMINAL_PHASES:
            return []
        self._ended = True
        pid = self._process_id
        if s.phase == "completed" and s.output is not None:
            return [CompletedEvent(process_id=pid, output=s.output)]
        if s.phase == "canceled":
            reason = s.failure.message if s.failure is not None else "cancelled"
            return [CanceledEvent(process_id=pid, reason=reason)]
        assert s.failure is not None  # a failed Interaction always says why
        return [FailedEvent(process_id=pid, failure=s.failure)]


def _refs(s: InteractionState, keep: Callable[[CallSlot], bool]) -> set[str]:
    """The ToolCallRefs of the open round's calls that `keep` picks."""
    if s.round is None:
        return set()
    seq = s.round.model_call_seq
    return {tool_call_ref(s.process_id, seq, x.index) for x in s.round.slots if keep(x)}


def _tool_settled(process_id: str, entry: ResultEntry, *, delegate: bool) -> ToolSettledEvent:
    return ToolSettledEvent(
        process_id=process_id, ref=entry.call_ref, entry=entry, delegate=delegate
    )


class ToolCallNews:
    """What one Tool call process has reported: its input wait and its unknown outcome."""

    def __init__(self) -> None:
        self._wait: str | None = None
        self._unknown: str | None = None

    def step(self, snap: ProcessSnapshot) -> list[Event]:
        events = _waits(snap.process_id, self._wait, snap.pending_tool_inputs, snap.status)
        self._wait = snap.pending_tool_inputs[0].wait_id if snap.pending_tool_inputs else None
        unknown = snap.unknown_effects[0] if snap.unknown_effects else None
        if self._unknown is not None and unknown is None and snap.status == "completed":
            events.append(UnknownSettledEvent(process_id=snap.process_id, effect_id=self._unknown))
        if unknown is not None and unknown.effect_id != self._unknown:
            request = unknown.request
            events.append(
                UnknownOpenedEvent(
                    process_id=snap.process_id,
                    effect_id=unknown.effect_id,
                    effect_kind="tool",
                    ref=unknown.ref,
                    call=getattr(request, "call", None),
                    definition=request.definition,
                    diagnostic=unknown.diagnostic,
                )
            )
        self._unknown = unknown.effect_id if unknown is not None else None
        return events


class TaskNews:
    """What one background task has reported: its progress and its question."""

    def __init__(
        self, shown: tuple[str, int, int, str | None] | None = None, wait: str | None = None
    ) -> None:
        """`shown`, `wait`: what a previous run of the task had reported (`carried`)."""
        self._shown = shown
        self._wait = wait

    def carried(self) -> tuple[tuple[str, int, int, str | None] | None, str | None]:
        """What has been reported, for the task's next run."""
        return self._shown, self._wait

    def step(self, task: TaskSnapshot) -> list[Event]:
        events: list[Event] = []
        now = (task.status, task.attempt, task.progress.events, task.error)
        if now != self._shown:
            self._shown = now
            events.append(TaskProgressEvent(process_id=task.task_id, task=_small(task)))
        questions = (task.question,) if task.question is not None else ()
        status = "canceled" if task.status == "canceled" else "running"
        events += _waits(task.task_id, self._wait, questions, status)
        self._wait = task.question.wait_id if task.question is not None else None
        return events


def _waits(
    process_id: str,
    reported: str | None,
    waits: Sequence[PendingToolInput],
    status: str,
) -> list[Event]:
    """A wait answered (it closed while the process lives on), a wait opened."""
    events: list[Event] = []
    open_now = waits[0] if waits else None
    closed = reported is not None and (open_now is None or open_now.wait_id != reported)
    if closed and reported is not None and status not in ("canceled", "failed"):
        events.append(WaitAnsweredEvent(process_id=process_id, wait_id=reported))
    if open_now is not None and open_now.wait_id != reported:
        events.append(WaitOpenedEvent(process_id=process_id, wait=open_now))
    return events


def _small(task: TaskSnapshot) -> TaskSnapshot:
    """The task without a result too large for an event."""
    if task.data is None:
        return task
    size = len(json.dumps(task.data, ensure_ascii=False, default=str).encode())
    return task if size <= MAX_TASK_DATA_BYTES else task.model_copy(update={"data": None})


__all__ = ["MAX_TASK_DATA_BYTES", "InteractionNews", "TaskNews", "ToolCallNews"]
