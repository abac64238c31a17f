"""Reading a session's events, on any engine: its turns' streams one after the other.

The position logic is pure (`interaction/session_stream.py`); this carries it out with
what an engine gives: the session's snapshot (which turns exist, whether it has ended),
a wait for the session to move past a turn, and a turn's own event stream. Every event
is handed on with its turn set, so `(event.turn, event.offset)` is where to resume.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from scope_temporal.errors import EventOffsetError, InteractionNotFound
from scope_temporal.interaction.events import Event
from scope_temporal.interaction.session_stream import after_turn, first_read, in_turn, turn_gone
from scope_temporal.interaction.session_values import SessionSnapshot

Snapshot = Callable[[], Awaitable[SessionSnapshot]]
"""The session's snapshot now (raises InteractionNotFound when there is no session)."""
PastTurn = Callable[[int], Awaitable[SessionSnapshot]]
"""Returns the snapshot once the session has moved past turn n: a later turn started, or
the session ended (`after_turn(snapshot, n) != "wait"`)."""
TurnEvents = Callable[[int, int | None], AsyncIterator[Event]]
"""Turn n's own stream after an offset, to its end (as `InteractionHandle.events`)."""


async def read_session(
    session_id: str,
    after: tuple[int, int] | None,
    *,
    snapshot: Snapshot,
    past_turn: PastTurn,
    turn_events: TurnEvents,
) -> AsyncIterator[Event]:
    """The events of session `session_id` after position `after` (see
    `interaction.session_stream`), turn after turn, until it has ended.

    Raises:
        EventOffsetError: `after` is ahead of the session or not a position; an offset a
            turn's stream has not reached or no longer retains; a turn no longer retained.
        InteractionNotFound: no session has this id.
    """
    snap = await snapshot()
    turn, offset = first_read(session_id, after, len(snap.turns))
    if not snap.turns:  # nothing yet (its first turn is starting)
        snap = await past_turn(0)
        if after_turn(snap, 0) == "end":
            return
    while True:
        try:
            async for event in turn_events(turn, offset):
                yield event.model_copy(update={"turn": turn})
        except EventOffsetError as error:
            raise in_turn(session_id, turn, error) from error
        except InteractionNotFound as error:
            raise turn_gone(session_id, turn, len(snap.turns)) from error
        snap = await past_turn(turn)
        if after_turn(snap, turn) == "end":
            return
        turn, offset = turn + 1, -1


__all__ = ["PastTurn", "Snapshot", "TurnEvents", "read_session"]
