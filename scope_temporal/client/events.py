"""Following a tree's event stream through a Temporal client (`InteractionHandle.events`).

The stream is Temporal's `workflow_streams` on the root: a subscriber long-polls it with
an update (`WorkflowStreamClient.subscribe`, which also follows continue-as-new and
drains a closed run by query). What this adds:

- typed events with their offsets, and the end: the root's completed / failed / canceled;
- offsets checked: one the stream has not reached, or one it no longer retains (only the
  latest events cross a continue-as-new), raises `EventOffsetError` instead of silently
  skipping; `after=None` starts from the oldest event retained;
- a root lets `MAX_POLLS` subscribers long-poll at once (the rest of Temporal's 10
  in-flight updates stay free for steers, answers and settlements); one refused, or one
  past Temporal's limit of updates per run, reads by query (no history, no update) every
  quarter second for a while, then tries the long poll again.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

from temporalio.api.common.v1 import Payload
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import PollInput, PollResult, WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import errors, names
from scope_temporal.ids import turn_process_id
from scope_temporal.interaction.events import EVENT, Event, ends_stream
from scope_temporal.interaction.session_stream import (
    TURN_START_WAIT,
    missing_turn,
    turn_not_started,
)
from scope_temporal.interaction.session_values import SessionSnapshot

POLL_COOLDOWN = timedelta(milliseconds=50)
"""Pause between long polls of a subscriber that is caught up: batches events that
arrive together into one poll (each poll adds two events to the root's history)."""
QUERY_EVERY = 0.25
"""Seconds between reads by query, when reading by query."""
LONG_POLL_AGAIN_AFTER = 10.0
"""Seconds of reading by query before trying the long poll again."""
TURN_START_POLLS = (0.05, 0.1, 0.2, 0.4)
"""Seconds between looks for a starting turn's workflow (then 0.5 s each)."""
_REFUSED_POLL = "TooManySubscribers"  # workflows.events.TOO_MANY_SUBSCRIBERS
_CLOSED = {
    WorkflowExecutionStatus.COMPLETED,
    WorkflowExecutionStatus.FAILED,
    WorkflowExecutionStatus.CANCELED,
    WorkflowExecutionStatus.TERMINATED,
    WorkflowExecutionStatus.TIMED_OUT,
}


async def follow(client: Client, root_id: str, after: int | None) -> AsyncIterator[Event]:
    """The events of the tree rooted at `root_id` after offset `after` (see the module
    docstring); ends after the root's end event, or when its run closed without one.

    Raises:
        EventOffsetError: `after` is beyond the stream's head, or no longer retained.
        InteractionNotFound: no workflow has this id.
        ScopeError: the root has no event stream (started by an older version), or no
            worker answers its queries.
    """
    position = 0
    if after is not None:
        head = await _head(client, root_id)
        if after < -1 or after + 1 > head:
            raise errors.EventOffsetError(
                f"Offset {after} is not in the stream of {root_id!r}: its events have offsets "
                f"up to {head - 1}. Resume with the offset of the last event you read.",
                code=errors.EVENTS_OFFSET_AHEAD,
            )
        position = after + 1
    checked = after is not None  # after=None: from the oldest event retained
    async for offset, payload in _items(client, root_id, position):
        if checked and offset != position:
            raise errors.EventOffsetError(
                f"Events {position} to {offset - 1} of {root_id!r} are no longer retained (a "
                "continue-as-new carries only the latest ones). Read the snapshot, then follow "
                "with after=None (from the oldest event retained).",
                code=errors.EVENTS_OFFSET_TRUNCATED,
            )
        checked, position = True, offset + 1
        event = EVENT.validate_json(payload.data).model_copy(update={"offset": offset})
        yield event
        if ends_stream(event, root_id):
            return


async def follow_turn(
    client: Client,
    session_id: str,
    turn: int,
    after: int | None,
    snapshot: Callable[[], Awaitable[SessionSnapshot]],
) -> AsyncIterator[Event]:
    """Turn `turn` of session `session_id`'s events after offset `after` (as `follow`).
    The session lists a turn as it opens it, a moment before the turn's workflow exists:
    while the session's `snapshot()` lists it as running, a missing workflow is waited
    for (at most `TURN_START_WAIT` seconds).

    Raises:
        InteractionNotFound: the turn has ended and its workflow is gone (or never was).
        ScopeError: code `interaction.host.failed`: the turn runs, but its workflow did
            not appear in time.
        EventOffsetError: as `follow`.
    """
    root_id = turn_process_id(session_id, turn)
    loop = asyncio.get_running_loop()
    until = loop.time() + TURN_START_WAIT
    pauses = iter(TURN_START_POLLS)
    while True:
        read = False
        try:
            async for event in follow(client, root_id, after):
                read = True
                yield event
            return
        except errors.InteractionNotFound:
            if read or missing_turn(await snapshot(), turn) == "gone":
                raise
        if loop.time() >= until:
            raise turn_not_started(session_id, turn, TURN_START_WAIT)
        await asyncio.sleep(next(pauses, 0.5))


async def _items(client: Client, root_id: str, position: int) -> AsyncIterator[tuple[int, Payload]]:
    """The stream's items from `position` on: by long poll, or by query while refused.
    Ends when the run is closed and read to its end."""
    while True:
        try:
            async for offset, payload in _long_poll(client, root_id, position):
                position = offset + 1
                yield offset, payload
            return
        except _PollAgain:  # no worker took the poll in time (it waits for one)
            continue
        except _UseQueries:
            pass
        async for offset, payload in _by_query(client, root_id, position):
            position = offset + 1
            yield offset, payload


class _UseQueries(Exception):
    """The long poll was refused for now: read by query."""


class _PollAgain(Exception):
    """The long poll timed out before a worker took it."""


async def _long_poll(
    client: Client, root_id: str, position: int
) -> AsyncIterator[tuple[int, Payload]]:
    stream = WorkflowStreamClient.create(client, root_id)
    items = stream.subscribe(
        [names.EVENTS_TOPIC], position, result_type=RawValue, poll_cooldown=POLL_COOLDOWN
    )
    try:
        async for item in items:
            yield item.offset, item.data.payload
    except WorkflowUpdateRPCTimeoutOrCancelledError as error:
        raise _PollAgain() from error
    except WorkflowUpdateFailedError as error:
        if getattr(error.cause, "type", None) == _REFUSED_POLL:
            raise _UseQueries() from error
        raise _no_stream(root_id, error) from error
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise errors.InteractionNotFound(f"No Interaction {root_id!r}.") from error
        if error.status == RPCStatusCode.RESOURCE_EXHAUSTED:  # Temporal's update limits
            raise _UseQueries() from error
        raise
    finally:  # (an async generator, typed as an iterator)
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


async def _by_query(
    client: Client, root_id: str, position: int
) -> AsyncIterator[tuple[int, Payload]]:
    """Read by query (no history, no update) for `LONG_POLL_AGAIN_AFTER` seconds, or
    until the run is closed and read to its end."""
    handle = client.get_workflow_handle(root_id)
    loop = asyncio.get_running_loop()
    until = loop.time() + LONG_POLL_AGAIN_AFTER
    while loop.time() < until:
        try:
            result = await handle.query(
                names.STREAM_POLL,
                PollInput(topics=[names.EVENTS_TOPIC], from_offset=position),
                result_type=PollResult,
            )
        except (RPCError, WorkflowQueryFailedError) as error:
            raise _no_stream(root_id, error) from error
        for wire in result.items:
            payload = Payload()
            payload.ParseFromString(base64.b64decode(wire.data))
            yield wire.offset, payload
        position = result.next_offset
        if result.more_ready:
            continue
        if not result.items and (await handle.describe()).status in _CLOSED:
            return
        await asyncio.sleep(QUERY_EVERY)


async def _head(client: Client, root_id: str) -> int:
    """The offset the stream's next event will have."""
    try:
        head = await client.get_workflow_handle(root_id).query(
            names.STREAM_OFFSET_QUERY, result_type=int
        )
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise errors.InteractionNotFound(f"No Interaction {root_id!r}.") from error
        raise _no_stream(root_id, error) from error
    except WorkflowQueryFailedError as error:
        raise _no_stream(root_id, error) from error
    assert isinstance(head, int)
    return head


def _no_stream(root_id: str, error: Exception) -> errors.ScopeError:
    return errors.ScopeError(
        f"The events of {root_id!r} cannot be read ({error}). Is it the root of its tree, "
        "started by this version of scope-temporal, and is a worker serving its task queue?",
        code=errors.PROTOCOL_INVALID,
    )


__all__ = [
    "LONG_POLL_AGAIN_AFTER",
    "POLL_COOLDOWN",
    "QUERY_EVERY",
    "TURN_START_POLLS",
    "follow",
    "follow_turn",
]
