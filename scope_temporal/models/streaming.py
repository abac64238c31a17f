"""Live text from a model call in flight: shown to hosts, never authoritative.

A model adapter that streams from its provider calls `stream_delta(text)` with each piece
of text as it arrives (`OpenAIChatModel(stream=True)` does). Where the call runs, the
pieces are collected and published for observers: in a worker, as the `scope.model`
activity's heartbeat details, which `InteractionHandle.live_text()` and `scope-temporal
run` read; in `LocalRunner`, in memory. Heartbeat details are not history, so streaming
costs no history; they are the *latest* text only, not a log.

The framework settles only complete responses: the live text of a call that ends unknown
(cut off, timed out, a lost worker) is never used as its result, and a host settling it
supplies the whole response (`settle_model_result`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel, ConfigDict

DeltaSink = Callable[[str], None]
"""Receives each piece of streamed text."""

_sink: ContextVar[DeltaSink | None] = ContextVar("scope_model_delta_sink", default=None)


def stream_delta(text: str) -> None:
    """Report a piece of text the model call in progress has produced (no-op elsewhere).

    Call it from inside `Model.complete` as text arrives; it never blocks and never
    raises for lack of a listener. What it reports is for display only.
    """
    sink = _sink.get()
    if sink is not None and text:
        sink(text)


@contextmanager
def collecting_deltas(sink: DeltaSink) -> Iterator[None]:
    """Route `stream_delta` calls made in this context (and tasks it starts) to `sink`."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


class LiveText(BaseModel):
    """The text a model call in flight has streamed so far (not its result)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    process_id: str
    """The Interaction making the call."""
    model_call_seq: int
    text: str
    """Everything streamed so far, in order; may stop mid-word."""


class LiveTextBuffer:
    """Collects the streamed pieces of one model call."""

    def __init__(self, process_id: str, model_call_seq: int) -> None:
        self._process_id = process_id
        self._seq = model_call_seq
        self._pieces: list[str] = []

    def add(self, text: str) -> None:
        self._pieces.append(text)

    def current(self) -> LiveText:
        """Everything streamed so far."""
        return LiveText(
            process_id=self._process_id, model_call_seq=self._seq, text="".join(self._pieces)
        )


__all__ = ["DeltaSink", "LiveText", "LiveTextBuffer", "collecting_deltas", "stream_delta"]
