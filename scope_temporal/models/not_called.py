"""What an exception from `Model.complete` proves, as data.

`classify_model_error` turns the exception a model call raised into one of two values:

- `NotCalled`: the adapter raised a `ModelNotCalled` subclass with sound fields. The
  model did not run the request; the outcome is definite (permanent, or retryable after
  `retry_after`).
- `NotProven`: anything else, including a `ModelNotCalled` whose fields make no sense
  (a negative `retry_after`, a status that is no HTTP error, a code its class does not
  own...). The model may have run; the Effect is unknown, and `diagnostic` says why.

The classifier never raises, whatever the exception holds: a broken adapter must not be
able to crash the activity, only to make its outcome unknown. It is pure (no clock, no
I/O), so either side of Temporal may call it.

`retry_after_from_headers` reads a provider's `Retry-After` for adapters; it never raises
either, and ignores what it cannot read.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from scope_temporal.errors import MODEL_CONTEXT_OVERFLOW, MODEL_REJECTED, MODEL_UNAVAILABLE
from scope_temporal.models.errors import (
    ModelNotCalled,
    ModelRejected,
    ModelUnavailable,
)

__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_RETRY_AFTER",
    "NotCalled",
    "NotCalledCode",
    "NotProven",
    "classify_model_error",
    "retry_after_from_headers",
]

MAX_RETRY_AFTER = timedelta(hours=1)
"""Longer waits are capped to this: a provider asking for more is down for practical
purposes, and an absurd header must not become an absurd timer."""

MAX_MESSAGE_CHARS = 2000
"""Longer provider messages are cut to this (they enter workflow history)."""

NotCalledCode = Literal[
    "interaction.model.rejected",
    "interaction.model.context_overflow",
    "interaction.model.unavailable",
]

# Which codes each branch may carry; anything else is an adapter bug.
_CODES: dict[bool, frozenset[str]] = {
    False: frozenset({MODEL_REJECTED, MODEL_CONTEXT_OVERFLOW}),
    True: frozenset({MODEL_UNAVAILABLE}),
}


class NotCalled(BaseModel):
    """A model call that provably did not run: definite, never unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: NotCalledCode
    """Why: rejected (permanent), context_overflow (permanent), unavailable (retryable)."""
    retryable: bool
    """Whether the same request may succeed if sent again later (as a new Effect)."""
    message: str
    """What the provider said (at most `MAX_MESSAGE_CHARS`; no secret)."""
    status: int | None = None
    """The HTTP status of the refusal; None when no HTTP answer came (no connection)."""
    retry_after: timedelta | None = None
    """How long the provider asked to wait (at most `MAX_RETRY_AFTER`); None if it did not say."""


class NotProven(BaseModel):
    """A model call whose outcome cannot be proven: the Effect is unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    diagnostic: str
    """What went wrong, for the host investigating it (`<ExceptionType>: <message>`)."""


def classify_model_error(exc: BaseException) -> NotCalled | NotProven:
    """Decide whether an exception from `Model.complete` proves the model did not run.

    Args:
        exc: what the adapter raised (any exception).

    Returns:
        `NotCalled` for a `ModelRejected` / `ModelContextOverflow` / `ModelUnavailable`
        whose fields are sound (a `retry_after` above `MAX_RETRY_AFTER` is capped, a
        message above `MAX_MESSAGE_CHARS` cut); `NotProven` for anything else, with a
        diagnostic naming the exception and, for an unsound `ModelNotCalled`, the field
        at fault.

    Never raises (also not for an exception whose `__str__` raises).
    """
    if not isinstance(exc, ModelNotCalled):
        return NotProven(diagnostic=_describe(exc))
    try:
        return _checked(exc)
    except _Unsound as unsound:
        return NotProven(diagnostic=f"{_describe(exc)} (not trusted as 'not called': {unsound})")
    except Exception as broken:  # an adapter's subclass whose attributes raise
        return NotProven(
            diagnostic=f"{_describe(exc)} (not trusted as 'not called': "
            f"reading it raised {type(broken).__name__})"
        )


class _Unsound(Exception):
    """A ModelNotCalled field that makes no sense; the message names it."""


def _checked(exc: ModelNotCalled) -> NotCalled:
    rejected, unavailable = isinstance(exc, ModelRejected), isinstance(exc, ModelUnavailable)
    if rejected == unavailable:
        raise _Unsound("raise ModelRejected, ModelContextOverflow or ModelUnavailable")
    if exc.retryable is not unavailable:
        raise _Unsound(f"retryable={exc.retryable!r} contradicts {type(exc).__name__}")
    code = exc.code
    if code not in _CODES[unavailable]:
        raise _Unsound(f"code {code!r} does not belong to {type(exc).__name__}")
    status = exc.status
    if status is not None and (type(status) is not int or not 400 <= status <= 599):
        raise _Unsound(f"status {status!r} is not an HTTP error status")
    retry_after = exc.retry_after
    if retry_after is not None:
        if not unavailable:
            raise _Unsound("a permanent refusal has no retry_after")
        if not isinstance(retry_after, timedelta) or retry_after < timedelta(0):
            raise _Unsound(f"retry_after {retry_after!r} is not a duration of zero or more")
        retry_after = min(retry_after, MAX_RETRY_AFTER)
    message = exc.message
    if not isinstance(message, str):
        raise _Unsound(f"message {type(message).__name__} is not text")
    return NotCalled(
        code=code,  # checked against _CODES above
        retryable=unavailable,
        message=_cut(message),
        status=status,
        retry_after=retry_after,
    )


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "<its message could not be read>"
    return _cut(f"{type(exc).__name__}: {text}")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


# --- Retry-After --------------------------------------------------------------------------

_SECONDS = re.compile(r"\d{1,20}(?:\.\d{1,9})?")


def retry_after_from_headers(
    headers: Mapping[str, str], *, now: datetime | None = None
) -> timedelta | None:
    """The wait a provider asked for in its response headers, or None.

    Reads `retry-after-ms` (milliseconds, sent by OpenAI) first, then `Retry-After` as
    delta-seconds (`"2"`, also `"1.5"`) or an HTTP-date (a date in the past means zero).
    Header names are matched case-insensitively.

    Args:
        headers: the response headers.
        now: the current time, for an HTTP-date (default: the system clock, UTC).

    Returns:
        The wait, capped at `MAX_RETRY_AFTER`; None when no header is present or none is
        readable (malformed, negative, not finite). Never raises.
    """
    lowered = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    millis = lowered.get("retry-after-ms", "")
    if _SECONDS.fullmatch(millis):
        return _capped(float(millis) / 1000)
    value = lowered.get("retry-after", "")
    if _SECONDS.fullmatch(value):
        return _capped(float(value))
    return _from_http_date(value, now)


def _from_http_date(value: str, now: datetime | None) -> timedelta | None:
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:  # RFC 9110 dates are GMT; "-0000" parses as naive
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return _capped(max(seconds, 0.0))


def _capped(seconds: float) -> timedelta | None:
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return timedelta(seconds=min(seconds, MAX_RETRY_AFTER.total_seconds()))
