"""The session machine's transitions on its state: opening a turn, taking a turn's end,
withdrawing a turn that never started, and what an ending session does with what waits.
Only `session.py` calls these, inside its transitions (see its numbered rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from scope_temporal import errors
from scope_temporal.chat import Message
from scope_temporal.context_refs import chain_digest, prefix_digest
from scope_temporal.errors import ProtocolError
from scope_temporal.ids import turn_process_id
from scope_temporal.interaction.session_values import (
    QueuedMessage,
    SendReceipt,
    SessionState,
    TurnRecord,
)
from scope_temporal.outputs import Failure, Output


def open_turn(s: SessionState, opening: list[QueuedMessage]) -> SendReceipt:
    """Open the next turn with `opening`; its start is asked for by `next_effects`."""
    number = len(s.turns) + 1
    process_id = turn_process_id(s.session_id, number)
    s.turns.append(
        TurnRecord(
            turn=number,
            process_id=process_id,
            message_ids=tuple(q.message_id for q in opening),
            start=len(s.transcript),
        )
    )
    s.opening = opening
    s.start_emitted = False
    s.phase = "turn"
    return SendReceipt(
        message_id=opening[0].message_id,
        turn=number,
        process_id=process_id,
        disposition="started",
    )


def turn_ended(s: SessionState, turn: int, output: Output | None, failure: Failure | None) -> None:
    """The running turn ended (rule 3): the transcript grows, missed steers wait for the
    next turn (which opens at once), or the session ends."""
    current = s.turns[-1]
    if turn != current.turn or not s.start_emitted:
        raise ProtocolError(f"Turn {turn} is not the running turn ({current.turn}).")
    applied: tuple[str, ...] = ()
    transcript = output.transcript if output is not None else None
    if transcript is not None and transcript.replaced:
        replaced = list(transcript.messages)
        if not opens_with_instructions(s.transcript) and opens_with_instructions(replaced):
            del replaced[0]  # the instructions it was sent first (rule 3a)
        s.transcript = replaced
        s.digest = prefix_digest(s.transcript)
    else:
        added = (
            transcript.messages
            if transcript is not None
            else tuple(m for q in s.opening for m in q.messages)
        )
        append(s, added)
    if transcript is not None:
        applied = transcript.applied_signals
    if output is not None:
        s.approved_tools = sorted(set(output.approved_tools))
        status: Literal["completed", "failed", "canceled"] = "completed"
    else:
        status = "canceled" if failure and failure.code == errors.CANCELED else "failed"
    s.turns[-1] = current.model_copy(
        update={"status": status, "code": failure.code if failure else None}
    )
    missed = [m for m in s.steered + s.outbox if m.message_id not in applied]
    s.queued.extend(missed)
    unapplied = [n for n in s.noticed if n.message_id not in applied]
    s.notices = unapplied + s.notices  # for the next turn (rule 6)
    s.opening, s.steered, s.outbox, s.noticed = [], [], [], []
    s.cancel_emitted = False
    if s.ending is not None:
        s.phase = "ended"
        drop_pending(s)
    elif s.queued:
        opening, s.queued = s.queued, []
        receipt = open_turn(s, opening)
        s.opened_by_send = False
        for message in opening:  # their receipts now name the turn that takes them
            seen = s.seen.get(message.message_id)
            if seen is not None:
                s.seen[message.message_id] = seen.model_copy(
                    update={
                        "receipt": receipt.model_copy(update={"message_id": message.message_id})
                    }
                )
    else:
        s.phase = "idle"


def withdraw(s: SessionState) -> None:
    """The session ends before the running turn's start was asked for: it never
    starts. A send's message is forgotten (the driver refuses that send); messages an
    earlier turn missed stay in the transcript, unanswered (rule 5)."""
    s.turns.pop()
    if s.opened_by_send:
        for message in s.opening:
            s.seen.pop(message.message_id, None)
    else:
        s.queued = s.opening + s.queued
    s.opening, s.phase = [], "idle"


def drop_pending(s: SessionState) -> None:
    """The session ended: what waits for a next turn goes into the transcript, listed
    as unanswered; notices are dropped (rule 5)."""
    for message in s.queued:
        append(s, message.messages)
        s.unanswered.append(message.message_id)
    s.queued, s.notices = [], []


def append(s: SessionState, messages: Sequence[Message]) -> None:
    for message in messages:
        s.digest = chain_digest(s.digest, message)
        s.transcript.append(message)


def opens_with_instructions(messages: Sequence[Message]) -> bool:
    """A transcript that holds the instructions (a session from before rule 3a)."""
    return bool(messages) and messages[0].role == "system"


__all__ = [
    "append",
    "drop_pending",
    "open_turn",
    "opens_with_instructions",
    "turn_ended",
    "withdraw",
]
