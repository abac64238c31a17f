"""Steer signals: validation, deduplication by id, conflicts.

A steer is applied before the next model call and after the current batch, in arrival
order; it never preempts a running model call and never answers a tool input wait.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from scope_temporal.chat import Message
from scope_temporal.errors import InvalidSignal, ScopeError, SignalConflict
from scope_temporal.ids import MAX_ID_CHARS
from scope_temporal.interaction.snapshot import RejectedSignal, SignalKind
from scope_temporal.interaction.state import InteractionState

KEPT_REJECTIONS = 100
"""Refused signals are recorded for the snapshot, the latest this many (each one bounded):
a flood of hostile signals cannot grow the state, history or snapshot without end."""
_MAX_REJECTION_MESSAGE_CHARS = 1000


def content_digest(payload: object) -> str:
    """A stable digest of a signal's content (canonical JSON)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def steer_digest(messages: Sequence[Message]) -> str:
    return content_digest([m.model_dump(mode="json") for m in messages])


def check_steer_messages(signal_id: str, messages: Sequence[Message]) -> None:
    """Raise InvalidSignal unless the steer carries a non-empty id and only user messages."""
    if not signal_id:
        raise InvalidSignal("A steer needs a non-empty signal id (used to deduplicate).")
    check_id_length("steer", signal_id)
    if not messages:
        raise InvalidSignal(f"Steer {signal_id!r} carries no message.")
    roles = sorted({m.role for m in messages if m.role != "user"})
    if roles:
        raise InvalidSignal(
            f"Steer {signal_id!r} carries {roles} messages; steers may only carry user "
            "messages (Message.user(...))."
        )


def check_steer(
    s: InteractionState, signal_id: str, messages: Sequence[Message], *, ended: bool
) -> bool:
    """Validate a steer against the state; True if new, False if an exact duplicate.

    Raises:
        InvalidSignal: not user messages, empty, or the Interaction has `ended`.
        SignalConflict: the id was used before with different content.
    """
    check_steer_messages(signal_id, messages)
    known = s.signal_digests.get(signal_id)
    if known is not None:
        if known != steer_digest(messages):
            raise SignalConflict(
                f"Steer id {signal_id!r} was already used with different content; "
                "use a new id for a new message."
            )
        return False
    if ended:
        raise InvalidSignal(f"Interaction {s.process_id!r} has ended.")
    return True


def check_id_length(what: str, signal_id: str) -> None:
    """Raise InvalidSignal for an id over `MAX_ID_CHARS` (the error does not repeat it)."""
    if len(signal_id) > MAX_ID_CHARS:
        raise InvalidSignal(
            f"The {what} id is {len(signal_id):,} characters long; ids are at most {MAX_ID_CHARS}."
        )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} chars)"


def record_rejection(
    rejected: list[RejectedSignal],
    signal_id: str,
    signal: SignalKind,
    error: ScopeError,
) -> None:
    """Append one refusal, clipped, keeping only the latest `KEPT_REJECTIONS`."""
    rejected.append(
        RejectedSignal(
            signal_id=_clip(signal_id, MAX_ID_CHARS),
            signal=signal,
            code=error.code,
            message=_clip(error.message, _MAX_REJECTION_MESSAGE_CHARS),
        )
    )
    del rejected[:-KEPT_REJECTIONS]
