"""The text a model call streams, as `text` events in its tree's stream (from `scope.model`).

Each batch is one signal to the root, so one event in its history (and a workflow task):
the text is batched so that history grows with the time a call streams, never with its
tokens. The first piece goes at once (the first words are what a reader waits for);
then at most one batch per interval, which starts at 0.1 s and doubles every 16 batches
up to 2 s. So a call streaming for 10 s sends at most 46 batches, for 60 s 87, for
5 minutes 207 (`batches_within`). The text of a call that ends unknown is never its
result; text that cannot be delivered is dropped (it is for display only, and the
settled response carries the whole message).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from scope_temporal.interaction.events import TextEvent

FIRST_INTERVAL = 0.1
DOUBLE_EVERY = 16
MAX_INTERVAL = 2.0
CLOSE_TIMEOUT = 10.0
"""Seconds the end of a call waits for its last batch to be delivered."""

_log = logging.getLogger("scope_temporal.events")


def interval_after(batches: int) -> float:
    """Seconds between the `batches`-th batch of a call and the next."""
    doublings: int = (max(batches, 1) - 1) // DOUBLE_EVERY
    return min(FIRST_INTERVAL * float(2**doublings), MAX_INTERVAL)


def batches_within(seconds: float) -> int:
    """The most batches a call streaming for `seconds` sends (the bound on the history its
    text adds: one signal each)."""
    batches, elapsed = 1, 0.0  # the first piece, at once
    while elapsed + interval_after(batches) <= seconds:
        elapsed += interval_after(batches)
        batches += 1
    return batches + 1  # and the rest, when the call ends


class TextEvents:
    """Batches the pieces of one model call into `text` events.

    Args:
        send: delivers one event (to the root's stream).
        process_id: the Interaction making the call.
        model_call_seq: which of its calls.
    """

    def __init__(
        self, send: Callable[[TextEvent], Awaitable[None]], process_id: str, model_call_seq: int
    ) -> None:
        self._send = send
        self._process_id = process_id
        self._seq = model_call_seq
        self._pending: list[str] = []
        self._ready = asyncio.Event()
        self._closing = False
        self._closed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0

    def add(self, text: str) -> None:
        """A piece the model streamed (never blocks)."""
        self._pending.append(text)
        self._ready.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self._ready.wait()  # text, or the end of the call
            self._ready.clear()
            await self._send_pending()
            if self._closing:
                await self._send_pending()  # what came while the last one went
                return
            with contextlib.suppress(TimeoutError):  # the interval, or less if the call ends
                await asyncio.wait_for(self._closed.wait(), interval_after(self.batches))

    async def _send_pending(self) -> None:
        if not self._pending:
            return
        text, self._pending = "".join(self._pending), []
        self.batches += 1
        event = TextEvent(process_id=self._process_id, model_call_seq=self._seq, text=text)
        try:
            await self._send(event)
        except Exception as error:  # display only: the settled response has it all
            _log.info("streamed text of %s dropped: %s", self._process_id, error)

    async def close(self) -> None:
        """The call ended: deliver what is left (waiting at most `CLOSE_TIMEOUT`)."""
        task = self._task
        if task is None:
            return
        self._closing = True
        self._closed.set()
        self._ready.set()
        try:
            await asyncio.wait_for(task, CLOSE_TIMEOUT)
        except TimeoutError:
            _log.info("streamed text of %s: the last batch was not delivered", self._process_id)

    def cancel(self) -> None:
        """The call was cancelled: send nothing more."""
        if self._task is not None:
            self._task.cancel()


__all__ = ["TextEvents", "batches_within", "interval_after"]
