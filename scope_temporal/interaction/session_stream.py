"""A session's events as one stream: where a host is in it, and what it reads next. Pure.

A session's events are its turns' own streams, one after the other (each turn is the root
of its tree and hosts its stream; the session keeps no events of its own). So a position
in them is a pair: the turn, and the offset of the last event read in that turn's stream
(`SessionPosition`). A reader reads turn after turn: from its position in the first,
from the first event of each later turn, waiting while the session is idle, and stops
once the session has ended and its last turn is read. With no position (`after=None`)
it reads what each turn's stream still retains: a turn continued as new keeps only its
latest events, a turn whose workflow is gone keeps none; with a position it reads every
event after it or raises `offset_truncated` (nothing is skipped silently). A turn the
session lists as running may have no workflow yet: the reader waits for it. The
engines' readers (`SessionHandle.events`, `LocalSession.events`) carry this out.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from scope_temporal import errors
from scope_temporal.errors import EventOffsetError, ScopeError
from scope_temporal.interaction.session_values import SessionSnapshot

Step = Literal["next", "wait", "end"]


class SessionPosition(NamedTuple):
    """Where a host is in a session's events: `turn` (1, 2, ...) and the offset of the
    last event it read in that turn's stream (-1: none of that turn yet). Every event
    read through a session carries both (`event.turn`, `event.offset`): store them, and
    resume with `events(after=SessionPosition(turn, offset))` (a plain pair works too)."""

    turn: int
    offset: int


def first_read(
    session_id: str, after: tuple[int, int] | None, turns: int
) -> tuple[int, int | None]:
    """The turn to read first and the `after` offset to read its stream from, for a
    session with `turns` turns so far. `after=None`: from turn 1, every event its stream
    still retains.

    Raises:
        EventOffsetError: `after` is not a position of this session: a turn it has not
            started yet, or not a turn and offset at all (`interaction.events.offset_ahead`).
    """
    if after is None:
        return 1, None
    turn, offset = after
    if not isinstance(turn, int) or not isinstance(offset, int) or turn < 1 or offset < -1:
        raise EventOffsetError(
            f"{tuple(after)!r} is not a position in the events of session {session_id!r}: "
            "a position is (turn, offset), turns counting from 1, the offset that of the "
            "last event read in that turn (-1 for none). Resume with the turn and offset "
            "of the last event you read.",
            code=errors.EVENTS_OFFSET_AHEAD,
        )
    if turn > turns:
        raise EventOffsetError(
            f"Position (turn {turn}, offset {offset}) is ahead of session {session_id!r}: "
            f"it has {turns} turn(s) so far. Resume with the turn and offset of the last "
            f"event you read (or ({turns}, -1) to read from its latest turn on).",
            code=errors.EVENTS_OFFSET_AHEAD,
        )
    return turn, offset


def after_turn(snapshot: SessionSnapshot, turn: int) -> Step:
    """What to do once turn `turn` has been read to its end: read the next turn (it has
    started), wait (the session is idle, or has not yet taken that turn's end), or stop
    (the session has ended)."""
    if len(snapshot.turns) > turn:
        return "next"
    if snapshot.status in ("ended", "failed"):
        return "end"
    return "wait"


TURN_START_WAIT = 30.0
"""Seconds a reader waits for the workflow of a turn the session lists as running (the
session lists a turn as it opens it, a moment before the turn's workflow exists)."""


def missing_turn(snapshot: SessionSnapshot, turn: int) -> Literal["wait", "gone"]:
    """What a reader does about turn `turn` when its workflow is not there: wait while the
    session lists it running (its workflow is starting); else it is gone (its workflow
    ended and the server's retention passed, or it ended before one started)."""
    records = snapshot.turns
    if 1 <= turn <= len(records) and records[turn - 1].status == "running":
        return "wait"
    return "gone"


def turn_not_started(session_id: str, turn: int, seconds: float) -> ScopeError:
    """The error for a turn listed as running whose workflow never appeared."""
    return ScopeError(
        f"Turn {turn} of session {session_id!r} is running, but its workflow did not "
        f"appear within {seconds:g}s, so its events cannot be read yet. Is a worker "
        f"serving the session's task queue? Follow again with events(after=({turn}, -1)).",
        code=errors.HOST_FAILED,
    )


def turn_gone(session_id: str, turn: int, turns: int) -> EventOffsetError:
    """The error for a position in a turn whose stream can no longer be read (the session
    took its end, and its workflow is gone)."""
    return EventOffsetError(
        f"Turn {turn} of session {session_id!r} is no longer retained (it has ended and its "
        "workflow is gone: the server's retention period has passed), so its events after "
        "your position cannot be read. Read the session's transcript for what it said, then "
        f"follow from its latest turn on: events(after=({turns}, -1)), or from what every "
        "turn still retains: events().",
        code=errors.EVENTS_OFFSET_TRUNCATED,
    )


def in_turn(session_id: str, turn: int, error: EventOffsetError) -> EventOffsetError:
    """A turn's own offset error, said of the session's position."""
    return EventOffsetError(
        f"Session {session_id!r}, turn {turn}: {error.message}", code=error.code
    )


__all__ = [
    "TURN_START_WAIT",
    "SessionPosition",
    "Step",
    "after_turn",
    "first_read",
    "in_turn",
    "missing_turn",
    "turn_gone",
    "turn_not_started",
]
