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
"""Turn n's own stream after an offset (None: from the oldest event retained), to its
end (as `InteractionHandle.events`); it waits for a turn listed as running whose
workflow is not there yet, and raises InteractionNotFound for one that is gone."""


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
            turn's stream has not reached or no longer retains; after a position, a turn
            no longer retained (with `after=None` such a turn is read as empty).
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
            if offset is not None:  # a position in it: the events after it are lost
                raise turn_gone(session_id, turn, len(snap.turns)) from error
            # after=None reads what each turn retains: a turn whose workflow is gone, none
        snap = await past_turn(turn)
        if after_turn(snap, turn) == "end":
            return
        # each later turn from its first event: all of them after a position, else those
        # its stream still retains (a turn continued as new keeps only its latest)
        turn, offset = turn + 1, (None if after is None else -1)


__all__ = ["PastTurn", "Snapshot", "TurnEvents", "read_session"]
