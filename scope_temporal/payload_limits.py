"""Payload size limits: refuse oversized payloads with a clear error, never loop.

Temporal rejects payloads over its blob limit (2 MiB by default on the server), and a
command carrying one fails the workflow task again and again. With external storage
(`ScopeWorker(storage=...)`, see `scope_temporal.storage`) large payloads are offloaded
and only a reference is kept. Either way scope-temporal checks every payload it creates
against a configured limit first:

- a tool outcome over the limit: the call's Effect is *unknown* (code
  `interaction.payload.too_large`, naming the tool), held with its request for the host:
  the tool did run, so a retry would repeat its side effects;
- a model response over the limit: the model Effect is *unknown* likewise (nothing can
  be proven about a response that cannot be recorded);
- both with a lower bound where a Definition sets `max_response_bytes` (its calls only);
- new messages for a model call, or a tool-call input, over the limit (e.g. a 5 MB steer):
  the Interaction fails with `interaction.payload.too_large`, naming the model or tool.

The conversation as a whole is not a payload: a model call's input carries only what is
new since the previous call (`scope_temporal.context_refs`), so a context may outgrow the
limit. It is carried whole only by continue-as-new, which waits while the state does not
fit (see `workflows/interaction.py`).
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel

DEFAULT_PAYLOAD_LIMIT_BYTES = 1_000_000
"""Under Temporal's 2 MiB default, leaving room for the envelope around each payload."""

SERVER_BLOB_LIMIT_BYTES = 2 * 1024 * 1024
"""Temporal's default blob limit. A client refuses to send a bigger signal, update or
start input itself (unless it offloads to external storage): the server refuses a signal
or start that big, and an update that big fails the workflow task that rejects it (the
rejection carries the request back)."""

OFFLOADED_PAYLOAD_LIMIT_BYTES = 64_000_000
"""With external storage only a reference stays in history; this bounds worker memory."""


def size_of(payload: BaseModel) -> int:
    """Bytes of the payload's JSON form, as the pydantic data converter writes it."""
    return len(payload.model_dump_json().encode())


def too_large(
    what: str, size: int, limit: int, advice: str, *, bound: str = "the payload limit"
) -> str:
    return f"{what} is {size:,} bytes, over {bound} of {limit:,} bytes. {advice}"


class ResponseLimit(NamedTuple):
    """The largest model response or tool outcome a call may record, and what sets it."""

    bytes: int
    bound: str
    """For errors: `the payload limit`, or the Definition's `max_response_bytes`."""
