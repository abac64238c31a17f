"""The parts of the event stream that need no server: the text batching schedule (the
bound on history per model call), the batcher itself, and what `TreeStream` relies on in
Temporal's workflow_streams."""

from __future__ import annotations

import asyncio
import inspect
import time

from temporalio.contrib.workflow_streams import WorkflowStream

from scope_temporal.activities.text_events import TextEvents, batches_within, interval_after
from scope_temporal.interaction.events import TextEvent
from scope_temporal.workflows.events import TreeStream


def test_text_batches_grow_with_time_streamed_never_with_pieces() -> None:
    assert [interval_after(k) for k in (1, 16, 17, 33, 49, 65, 81, 500)] == [
        0.1, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0,
    ]  # fmt: skip
    # the bound docs/events.md states, per model call
    assert [batches_within(s) for s in (1, 10, 60, 300)] == [12, 46, 87, 207]


async def test_the_batcher_sends_the_first_piece_at_once_and_folds_the_rest() -> None:
    sent: list[tuple[float, str]] = []
    start = time.monotonic()

    async def send(event: TextEvent) -> None:
        sent.append((time.monotonic() - start, event.text))

    text = TextEvents(send, "root", 1)
    for index in range(300):  # 300 pieces in about 0.6 s
        text.add(f"{index} ")
        await asyncio.sleep(0.002)
    await text.close()
    assert "".join(piece for _, piece in sent) == "".join(f"{i} " for i in range(300))
    assert sent[0][1] == "0 " and sent[0][0] < 0.05  # at once
    assert len(sent) <= batches_within(sent[-1][0]) and len(sent) < 20


async def test_a_batch_that_cannot_be_delivered_is_dropped_not_raised() -> None:
    async def broken(event: TextEvent) -> None:
        raise ConnectionError("server gone")

    text = TextEvents(broken, "root", 1)
    text.add("a")
    await asyncio.sleep(0.01)
    text.add("b")
    await text.close()
    assert text.batches == 2


def test_tree_stream_wraps_the_poll_handler_and_validator_workflow_streams_registers() -> None:
    # TreeStream caps long polls by overriding these two methods of WorkflowStream, which
    # its __init__ registers as the poll update's handler and validator: pinned here so a
    # temporalio upgrade that renames them fails this test, not production
    source = inspect.getsource(WorkflowStream.__init__)
    assert "self._on_poll, validator=self._validate_poll" in source
    assert TreeStream._on_poll is not WorkflowStream._on_poll
    assert TreeStream._validate_poll is not WorkflowStream._validate_poll
