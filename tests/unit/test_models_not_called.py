"""The not-called exceptions, `classify_model_error` and `retry_after_from_headers`.

The classifier trusts an adapter's "not called" only when every field makes sense, and
never raises; anything else is unknown with a diagnostic.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from temporalio.contrib.pydantic import pydantic_data_converter

from scope_temporal import (
    ModelContextOverflow,
    ModelNotCalled,
    ModelRejected,
    ModelUnavailable,
    NotCalled,
    NotProven,
    ScopeError,
    classify_model_error,
    retry_after_from_headers,
)
from scope_temporal.errors import (
    CODE_KINDS,
    MODEL_CONTEXT_OVERFLOW,
    MODEL_REJECTED,
    MODEL_UNAVAILABLE,
)
from scope_temporal.models.errors import InvalidModelResponse
from scope_temporal.models.not_called import MAX_MESSAGE_CHARS, MAX_RETRY_AFTER


def test_each_exception_is_classified_with_its_fields() -> None:
    assert classify_model_error(ModelRejected("HTTP 401: bad key", status=401)) == NotCalled(
        code=MODEL_REJECTED, retryable=False, message="HTTP 401: bad key", status=401
    )
    assert classify_model_error(ModelContextOverflow("too long")) == NotCalled(
        code=MODEL_CONTEXT_OVERFLOW, retryable=False, message="too long"
    )
    unavailable = ModelUnavailable("busy", status=429, retry_after=timedelta(seconds=3))
    assert classify_model_error(unavailable) == NotCalled(
        code=MODEL_UNAVAILABLE,
        retryable=True,
        message="busy",
        status=429,
        retry_after=timedelta(seconds=3),
    )


def test_the_exceptions_are_scope_errors_with_declared_codes() -> None:
    for kind, code, retryable in [
        (ModelRejected, MODEL_REJECTED, False),
        (ModelContextOverflow, MODEL_CONTEXT_OVERFLOW, False),
        (ModelUnavailable, MODEL_UNAVAILABLE, True),
    ]:
        exc = kind("m")
        assert isinstance(exc, ScopeError)
        assert (exc.code, exc.retryable, exc.kind) == (code, retryable, CODE_KINDS[code])
        assert str(exc) == f"[{code}] m"
    with pytest.raises(TypeError, match="raise ModelRejected"):
        ModelNotCalled("which one?")


def test_a_huge_wait_is_capped_and_a_long_message_cut() -> None:
    outcome = classify_model_error(ModelUnavailable("x" * 10_000, retry_after=timedelta(days=9)))
    assert isinstance(outcome, NotCalled)
    assert outcome.retry_after == MAX_RETRY_AFTER
    assert len(outcome.message) == MAX_MESSAGE_CHARS
    assert outcome.message.endswith("...")


def test_any_other_exception_is_not_proven() -> None:
    assert classify_model_error(TimeoutError("read timed out")) == NotProven(
        diagnostic="TimeoutError: read timed out"
    )
    assert classify_model_error(InvalidModelResponse("no choices")) == NotProven(
        diagnostic="InvalidModelResponse: no choices"
    )


class _Retryable(ModelRejected):
    retryable = True  # type: ignore[assignment]


class _Both(ModelRejected, ModelUnavailable):
    pass


class _Undeclared(ModelUnavailable):
    default_code = "interaction.model.invalid_response"


class _NoInit(ModelUnavailable):
    def __init__(self) -> None:  # forgets super().__init__: no fields at all
        Exception.__init__(self, "half-built")


def _with(exc: ModelNotCalled, **fields: Any) -> ModelNotCalled:
    for name, value in fields.items():
        setattr(exc, name, value)
    return exc


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (_Retryable("x"), "retryable=True contradicts _Retryable"),
        (_Both("x"), "raise ModelRejected, ModelContextOverflow or ModelUnavailable"),
        (_Undeclared("x"), "code 'interaction.model.invalid_response' does not belong"),
        (_with(ModelRejected("x"), code=MODEL_UNAVAILABLE), "does not belong to ModelRejected"),
        (_with(ModelUnavailable("x"), code="rate_limited"), "code 'rate_limited'"),
        (ModelUnavailable("x", status=200), "status 200 is not an HTTP error status"),
        (_with(ModelUnavailable("x"), status="429"), "status '429'"),
        (_with(ModelUnavailable("x"), status=True), "status True"),
        (_with(ModelUnavailable("x"), status=429.0), "status 429.0"),
        (
            ModelUnavailable("x", retry_after=timedelta(seconds=-1)),
            "is not a duration of zero or more",
        ),
        (_with(ModelUnavailable("x"), retry_after=2), "retry_after 2 is not a duration"),
        (
            _with(ModelRejected("x"), retry_after=timedelta(seconds=1)),
            "a permanent refusal has no retry_after",
        ),
        (_with(ModelUnavailable("x"), message=None), "message NoneType is not text"),
        (_NoInit(), "reading it raised AttributeError"),
    ],
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)
def test_nonsense_fields_make_it_unknown_with_a_diagnostic(
    exc: ModelNotCalled, reason: str
) -> None:
    outcome = classify_model_error(exc)
    assert isinstance(outcome, NotProven)
    assert outcome.diagnostic.startswith(f"{type(exc).__name__}: ")
    assert "not trusted as 'not called'" in outcome.diagnostic
    assert reason in outcome.diagnostic


class _Unprintable(ModelUnavailable):
    def __str__(self) -> str:
        raise RuntimeError("no")


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_the_classifier_never_raises() -> None:
    assert classify_model_error(_UnprintableError()) == NotProven(
        diagnostic="_UnprintableError: <its message could not be read>"
    )
    outcome = classify_model_error(_Unprintable("fine"))  # the message field still reads
    assert isinstance(outcome, NotCalled)
    assert outcome.message == "fine"


def test_outcomes_round_trip_through_temporal_payloads() -> None:
    converter = pydantic_data_converter.payload_converter
    called = NotCalled(
        code=MODEL_UNAVAILABLE,
        retryable=True,
        message="busy",
        status=503,
        retry_after=timedelta(seconds=1.5),
    )
    for value in (called, NotProven(diagnostic="x")):
        [payload] = converter.to_payloads([value])
        assert converter.from_payloads([payload], [type(value)]) == [value]


# --- Retry-After --------------------------------------------------------------------------

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Retry-After": "7"}, timedelta(seconds=7)),
        ({"RETRY-AFTER": " 7 "}, timedelta(seconds=7)),
        ({"retry-after": "0.25"}, timedelta(seconds=0.25)),
        ({"retry-after-ms": "1500"}, timedelta(seconds=1.5)),
        ({"retry-after-ms": "soon", "retry-after": "2"}, timedelta(seconds=2)),
        ({"Retry-After": "Fri, 02 Jan 2026 03:04:35 GMT"}, timedelta(seconds=30)),
        ({"Retry-After": "Fri, 02 Jan 2026 05:04:35 +0200"}, timedelta(seconds=30)),
        ({"Retry-After": "Fri, 02 Jan 2026 03:04:35 -0000"}, timedelta(seconds=30)),
        ({"Retry-After": "Thu, 01 Jan 2026 00:00:00 GMT"}, timedelta(0)),
        ({"Retry-After": "Mon, 01 Jan 0001 00:00:00 +2359"}, timedelta(0)),
        ({"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}, MAX_RETRY_AFTER),
        ({"Retry-After": "1e3"}, None),
        ({"Retry-After": "-1"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": "1, 2"}, None),
        ({"Retry-After": "Fri, 02 Jan 2026 25:04:35 GMT"}, None),
        ({"Retry-After": "9" * 25}, None),
        ({"Retry-After": "9" * 20}, MAX_RETRY_AFTER),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: timedelta | None) -> None:
    assert retry_after_from_headers(headers, now=NOW) == expected


@given(st.dictionaries(st.sampled_from(["retry-after", "Retry-After-Ms", "x"]), st.text()))
def test_retry_after_never_raises_and_stays_in_bounds(headers: dict[str, str]) -> None:
    wait = retry_after_from_headers(headers, now=NOW)
    assert wait is None or timedelta(0) <= wait <= MAX_RETRY_AFTER
