"""A tree's event stream on Temporal. Everything here runs inside the workflow.

The root Interaction hosts the stream: Temporal's `workflow_streams` log (offsets,
deduplicated publishing by signal, long-poll reads by update, immediate reads by query,
state carried through continue-as-new). Its own events are appended in memory, which
costs no history: a replay rebuilds them from the same decisions. Every other process of
the tree (ToolCall children, delegates, background tasks) sends its events to the root
with the stream's publish signal, one batch at a time and in order; a batch costs the
root one signal in history, and is sent only for what the root cannot see itself
(waits, unknowns, a delegate's steps, a task's progress).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.workflow_streams import (
    PollInput,
    PollResult,
    PublishEntry,
    PublishInput,
    WorkflowStream,
    WorkflowStreamState,
)
from temporalio.exceptions import ApplicationError

from scope_temporal import names
from scope_temporal.interaction.events import Event
from scope_temporal.workflows.task_commands import command_issued, commands_may_precede_an_update

MAX_POLLS = 5
"""Subscribers long-polling one root at once. Temporal lets 10 updates be in flight per
workflow; steers, answers and settlements are updates too, so half stays theirs. A
subscriber refused here reads by query instead (see `client.events`)."""
STREAM_DRAINING = "StreamDraining"
"""workflow_streams' error type for "poll again shortly" (its subscribers retry it)."""
TOO_MANY_SUBSCRIBERS = "TooManySubscribers"
"""The error type a poll over `MAX_POLLS` is refused with."""
CARRIED_EVENTS = 256
CARRIED_BYTES = 64 * 1024
"""Continue-as-new carries at most this many of the latest events (and bytes of them);
older offsets then refuse with a stale-offset error. A subscriber that keeps up loses
nothing: a run continues as new only when nothing is in flight."""


class TreeStream(WorkflowStream):
    """The stream a root hosts: `WorkflowStream`, with a cap on long polls in flight.

    Construct it from the workflow's `@workflow.init`. (The two methods below are the
    stream's own poll handler and validator, wrapped; `test_events_stream` pins them.)
    """

    def __init__(self, prior_state: WorkflowStreamState | None, *, open: bool) -> None:
        super().__init__(prior_state)
        self._polls = 0
        self._open = open
        self._topic = self.topic(names.EVENTS_TOPIC)

    def open(self) -> None:
        """Take long polls from now on (see `_validate_poll`)."""
        self._open = True

    async def _on_poll(self, payload: PollInput) -> PollResult:
        self._polls += 1
        try:
            return await super()._on_poll(payload)
        finally:
            self._polls -= 1

    def _validate_poll(self, payload: PollInput) -> None:
        super()._validate_poll(payload)
        if commands_may_precede_an_update():
            # refused as "draining" (workflow_streams' subscribers retry shortly): see
            # `task_commands` for why an update may not follow a command in one task
            raise ApplicationError("the Interaction is busy", type=STREAM_DRAINING)
        if not self._open:
            # Measured: a poll accepted while the first run records its settings (a local
            # activity) could replay in another order than it ran (the activity's result
            # reached the workflow after updates accepted later). Until then a poll is
            # refused as "draining", which workflow_streams' subscribers retry shortly.
            raise ApplicationError("the Interaction is starting", type=STREAM_DRAINING)
        if self._polls >= MAX_POLLS:
            raise ApplicationError(
                f"{self._polls} subscribers are long-polling this Interaction already; "
                "read by query instead",
                type=TOO_MANY_SUBSCRIBERS,
            )

    def publish(self, events: Sequence[Event]) -> None:
        for event in events:
            self._topic.publish(event)

    async def flush(self) -> None:
        """Nothing to wait for: the events are in the log."""

    async def close(self) -> None:
        """Hand the last events to the subscribers waiting and refuse new long polls
        (before the run ends or continues as new): they read the rest by query, or
        from the next run."""
        self.detach_pollers()
        await workflow.wait_condition(lambda: self._polls == 0)

    def carried(self) -> WorkflowStreamState:
        """The state the next run starts from: the latest events, every offset kept."""
        state = self.get_state()
        kept, size = 0, 0
        for item in reversed(state.log):
            size += len(item.data) + len(item.topic)
            if kept == CARRIED_EVENTS or size > CARRIED_BYTES:
                break
            kept += 1
        dropped = len(state.log) - kept
        state.log = state.log[dropped:]
        state.base_offset += dropped
        return state


class SentEvents:
    """What a process other than the root publishes: batches signalled to the root.

    One signal at a time, so batches arrive in order (the stream deduplicates by this
    run's id and a sequence number); what is published meanwhile goes in the next batch.
    A root that has ended takes nothing more: the rest is dropped (a background task
    outliving its Interaction reports in the snapshot only).
    """

    def __init__(self, root_id: str) -> None:
        self._root_id = root_id
        self._queue: list[Event] = []
        self._sequence = 0
        self._sending: asyncio.Task[None] | None = None
        self._closed = False

    def publish(self, events: Sequence[Event]) -> None:
        if self._closed:
            return
        self._queue.extend(events)
        if self._queue and (self._sending is None or self._sending.done()):
            self._sending = asyncio.create_task(self._send())

    async def _send(self) -> None:
        converter = workflow.payload_converter()
        while self._queue and not self._closed:
            batch, self._queue = self._queue, []
            self._sequence += 1
            entries = [
                PublishEntry(topic=names.EVENTS_TOPIC, data=_wire(converter.to_payload(event)))
                for event in batch
            ]
            publish = PublishInput(
                items=entries, publisher_id=workflow.info().run_id, sequence=self._sequence
            )
            command_issued()
            try:
                await workflow.get_external_workflow_handle(self._root_id).signal(
                    names.STREAM_PUBLISH_SIGNAL, publish
                )
            except Exception as error:  # the root ended: nobody reads these any more
                workflow.logger.info("events for %s dropped: %s", self._root_id, error)
                self._closed = True

    async def flush(self) -> None:
        sending = self._sending
        if sending is not None:
            await sending

    async def close(self) -> None:
        await self.flush()


class NoEvents:
    """A process from before the stream (its history has no events to send)."""

    def publish(self, events: Sequence[Event]) -> None:
        """Nothing to report to."""

    async def flush(self) -> None:
        """Nothing to wait for."""

    async def close(self) -> None:
        """Nothing to close."""


Outlet = TreeStream | SentEvents | NoEvents


def _wire(payload: Payload) -> str:
    """workflow_streams' wire form of an item: base64 of the serialized Payload (as its
    `_types` module documents)."""
    return base64.b64encode(payload.SerializeToString()).decode("ascii")


__all__ = ["MAX_POLLS", "TOO_MANY_SUBSCRIBERS", "NoEvents", "Outlet", "SentEvents", "TreeStream"]
