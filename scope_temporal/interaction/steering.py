"""Steer signals: validation, deduplication by id, conflicts.

A steer is applied before the next model call and after the current batch, in arrival
order; it never preempts a running model call and never answers a tool input wait.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from scope_temporal.chat import Message
from scope_temporal.errors import InvalidSignal


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
    if not messages:
        raise InvalidSignal(f"Steer {signal_id!r} carries no message.")
    roles = sorted({m.role for m in messages if m.role != "user"})
    if roles:
        raise InvalidSignal(
            f"Steer {signal_id!r} carries {roles} messages; steers may only carry user "
            "messages (Message.user(...))."
        )
