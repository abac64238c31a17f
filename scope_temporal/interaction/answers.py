"""Answers to input waits, shared by every Process that waits (tool calls, background
tasks): deduplicated by answer id, refused on reuse with other content, checked against
the open wait and its response schema before anything changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scope_temporal.errors import InvalidSignal, InvalidToolInput, NoSuchWait, SignalConflict
from scope_temporal.interaction.steering import check_id_length, content_digest
from scope_temporal.tools.validation import validate_value


def answer_digest(wait: str, response: Any) -> str:
    """What identifies an answer's content (the same id with another digest conflicts)."""
    return content_digest([wait, response])


def check_answer(
    owner: str,
    answers: Mapping[str, str],
    wait: str,
    answer_id: str,
    response: Any,
    *,
    open_wait: tuple[str, Mapping[str, Any]] | None,
    closed: str | None = None,
) -> bool:
    """Validate an answer for `owner` (e.g. "Tool call 'x'"); True if new, False if an exact
    duplicate of an accepted one.

    Args:
        answers: accepted answer ids -> `answer_digest`.
        open_wait: the open wait's id and response schema, if one is open.
        closed: why nothing can wait any more (e.g. "was cancelled"), if so.

    Raises:
        SignalConflict: the answer id was used with different content.
        InvalidSignal: an empty answer id, or one over `MAX_ID_CHARS`.
        NoSuchWait: no open wait has that id.
        InvalidToolInput: the response does not match the wait's schema.
    """
    known = answers.get(answer_id)
    if known is not None:
        if known != answer_digest(wait, response):
            raise SignalConflict(f"Answer id {answer_id!r} was already used with another answer.")
        return False
    if not answer_id:
        raise InvalidSignal("An answer needs a non-empty id (used to deduplicate).")
    check_id_length("answer", answer_id)
    if closed is not None:
        raise NoSuchWait(f"{owner} {closed}; nothing waits.")
    if open_wait is None or open_wait[0] != wait:
        open_id = open_wait[0] if open_wait else None
        raise NoSuchWait(
            f"{owner} has no open wait {wait!r} (open wait: {open_id!r}). Take the wait id "
            "from the snapshot."
        )
    problem = validate_value(open_wait[1], response)
    if problem is not None:
        raise InvalidToolInput(
            f"The answer does not match the response schema of wait {wait!r}: {problem}"
        )
    return True


__all__ = ["answer_digest", "check_answer"]
