"""Reading signal and update payloads inside the workflow (deterministic).

Handlers take the raw payload and decode it here, so a malformed one (not JSON, wrong
types, unknown fields) is refused like any other bad input: a signal is recorded as
rejected in the snapshot, an update's validator raises the typed error to its caller.
Left to the SDK, a signal that does not decode is dropped with only a log line, and an
update fails with an untyped "Failed decoding arguments". (Their size is checked by the
drivers: `scope_temporal.driver.inputs`.)
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from scope_temporal.errors import InvalidSignal
from scope_temporal.ids import MAX_ID_CHARS

T = TypeVar("T", bound=BaseModel)

NO_PAYLOAD = RawValue(Payload(metadata={"encoding": b"binary/null"}))
"""What a handler sees when the sender passed no argument (e.g. `scope.pause`)."""


def decode(raw: RawValue, model: type[T], what: str) -> T:
    """The payload as `model`.

    Raises:
        InvalidSignal: it is not JSON of that shape (the message names the first problem).
    """
    try:
        value = workflow.payload_converter().from_payload(raw.payload, model)
    except Exception as error:  # any decoding problem is the sender's
        cause = error.__cause__ or error
        detail = " ".join(str(cause).split())[:300]
        raise InvalidSignal(
            f"The {what} payload is not a valid {model.__name__}: {detail}"
        ) from None
    if not isinstance(value, model):
        raise InvalidSignal(f"The {what} payload is not a valid {model.__name__}.")
    return value


def decode_optional(raw: RawValue, model: type[T], what: str) -> T | None:
    """Like `decode`, but no argument (or JSON null) is None."""
    if raw.payload.metadata.get("encoding") == b"binary/null" or raw.payload.data == b"null":
        return None
    return decode(raw, model, what)


def claimed_id(raw: RawValue, *keys: str) -> str:
    """The id a malformed payload claims (first of `keys` that is a string), for the record."""
    try:
        data: Any = json.loads(raw.payload.data)
    except ValueError:
        return ""
    if isinstance(data, dict):
        for key in keys:
            value = data.get(key)
            if isinstance(value, str):
                return value[:MAX_ID_CHARS]
    return ""
