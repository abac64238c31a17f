"""A local run's event stream (`LocalRun.events`): the same events as on Temporal, in one
in-memory list. Every process of the run appends to it in order; offsets are list
positions; nothing is ever dropped, and each piece of text a model streams is an event
of its own (no batching: there is no history to bound)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from scope_temporal import errors
from scope_temporal.interaction.events import Event, ends_stream


class EventLog:
    """The events of one local run, in order.

    Args:
        root_id: the run's root Interaction (its end is the stream's end).
    """

    def __init__(self, root_id: str) -> None:
        self._root_id = root_id
        self._events: list[Event] = []
        self._grew = asyncio.Event()
        self._closed = False

    @property
    def head(self) -> int:
        """The offset the next event will have."""
        return len(self._events)

    def publish(self, events: Sequence[Event]) -> None:
        for event in events:
            self._events.append(event.model_copy(update={"offset": len(self._events)}))
        if events:
            self._wake()

    def close(self) -> None:
        """The run ended without its end event (a bug outside the machines): readers stop."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        self._grew.set()
        self._grew = asyncio.Event()

    async def read(self, after: int | None = None) -> AsyncIterator[Event]:
        """The events after offset `after` (all of them when None), as they happen, up to
        and including the root's end.

        Raises:
            EventOffsetError: `after` is beyond the last event (`interaction.events.offset_ahead`).
        """
        position = 0 if after is None else after + 1
        if after is not None and (after < -1 or position > len(self._events)):
            raise errors.EventOffsetError(
                f"Offset {after} is not in the stream of {self._root_id!r}: its events have "
                f"offsets 0 to {len(self._events) - 1}. Resume with the offset of the last "
                "event you read.",
                code=errors.EVENTS_OFFSET_AHEAD,
            )
        while True:
            while position < len(self._events):
                event = self._events[position]
                position += 1
                yield event
                if ends_stream(event, self._root_id):
                    return
            if self._closed:
                return
            await self._grew.wait()


class TreeLogs:
    """The event logs of the trees one engine runs, by root Interaction (a run, or a
    session's turn); an event goes to the log of the tree its process belongs to."""

    def __init__(self) -> None:
        self._logs: dict[str, EventLog] = {}

    def of(self, root_id: str) -> EventLog:
        """The log of the tree rooted at `root_id` (made on first use)."""
        return self._logs.setdefault(root_id, EventLog(root_id))

    def publish(self, events: Sequence[Event]) -> None:
        for event in events:
            pid = event.process_id
            roots = [r for r in self._logs if pid == r or pid.startswith(f"{r}/")]
            if roots:
                self._logs[max(roots, key=len)].publish([event])


__all__ = ["EventLog", "TreeLogs"]
