"""Which `openai` exceptions prove that the model did not run, and nothing more.

Read against the installed `openai` (3.x, on `httpx2`/`httpcore2`); see the table in docs/models.md
"Model errors an adapter may report":

- `APIConnectionError` (and its subclass `APITimeoutError`) is raised `from` the
  transport's exception (`openai._base_client`, `AsyncAPIClient.request`). Only three
  causes happen before a byte of the request is written: `httpx2.ConnectError` (TCP
  connect refused, DNS failure, TLS handshake failure: `httpcore2._backends.anyio`
  maps `OSError` in `connect_tcp` and `ssl.SSLError` in `start_tls` to it),
  `httpx2.ConnectTimeout` (the same two steps, timed out) and `httpx2.PoolTimeout` (no
  connection became free). Every other cause (a read or write error or timeout, a
  protocol error, a stream cut short, which `openai._streaming` also wraps in
  `APIConnectionError`) may come after the server got the request: not proven.
- `APIStatusError` is raised for a 4xx/5xx status before any body is parsed as a
  completion, also for a streamed request (the error body is read first); its
  `.response` holds the body. An error *event* inside a stream is a plain `APIError`,
  after generation began: not proven.

A connection error whose cause is a legacy `httpx` exception (a client built on `httpx`
rather than `httpx2`) is not recognised, so it stays unknown: the safe side.
"""

from __future__ import annotations

import json
import re

import httpx2
import openai

from scope_temporal.models.errors import (
    ModelContextOverflow,
    ModelNotCalled,
    ModelRejected,
    ModelUnavailable,
)
from scope_temporal.models.not_called import retry_after_from_headers

__all__ = ["not_called", "reported"]

PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 413, 422})
"""The provider refused the request as it is; sending it again changes nothing."""

RETRYABLE_STATUSES = frozenset({408, 409, 429, 503})
"""Refused for now, proven only with a provider error body: a proxy's bare 503 may come
after the request was forwarded."""

_NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)

# OpenAI: code context_length_exceeded; llama.cpp: type exceed_context_size_error; vLLM
# and others only say it in the message.
_OVERFLOW_MARKERS = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?(?:length|size|window)|too many tokens|prompt is too long", re.I
)


def reported(exc: Exception) -> Exception:
    """What `OpenAIChatModel` raises for `exc`: the not-called exception it proves, or
    else `exc` itself, a connection error's message naming its cause (`Connection
    error.` alone does not tell a host whether a stream was cut or a read timed out)."""
    proven = not_called(exc)
    if proven is not None:
        return proven
    cause = exc.__cause__
    if isinstance(exc, openai.APIConnectionError) and cause is not None:
        exc.message = f"{exc.message} ({_describe(cause)})"
        exc.args = (exc.message,)
    return exc


def not_called(exc: Exception) -> ModelNotCalled | None:
    """The not-called exception that `exc` proves, or None when it proves nothing.

    Args:
        exc: what the `openai` client raised for one chat-completions request.

    Returns:
        `ModelUnavailable` for a connection never made, or a 408/409/429/503 carrying a
        provider error body (with its `Retry-After`); `ModelContextOverflow` for a
        400/413 saying the context window is exceeded; `ModelRejected` for any other
        400/401/403/404/413/422, and for a 429 whose error code is `insufficient_quota`
        (billing, not load: waiting does not help). None for everything else.
    """
    if isinstance(exc, openai.APIStatusError):
        return _refused(exc)
    if isinstance(exc, openai.APIConnectionError) and isinstance(exc.__cause__, _NOT_SENT):
        return ModelUnavailable(
            f"no connection to {_origin(exc.request.url)}: {_describe(exc.__cause__)}"
        )
    return None


def _refused(exc: openai.APIStatusError) -> ModelNotCalled | None:
    status, body = exc.status_code, _response_body(exc.response)
    message = f"HTTP {status}: {_provider_message(body) or exc.message}"
    if status in PERMANENT_STATUSES:
        if status in (400, 413) and _is_overflow(body):
            return ModelContextOverflow(message, status=status)
        return ModelRejected(message, status=status)
    if status in RETRYABLE_STATUSES and _error_object(body) is not None:
        if _error_field(body, "code") == "insufficient_quota":
            return ModelRejected(message, status=status)
        return ModelUnavailable(
            message, status=status, retry_after=retry_after_from_headers(exc.response.headers)
        )
    return None


def _response_body(response: httpx2.Response) -> object:
    """The decoded JSON body, the text when it is not JSON, None when it was not read.

    Read again rather than taken from `APIStatusError.body`, which the client has
    already unwrapped (`{"error": x}` becomes `x`), losing whether it was an error body.
    """
    try:
        text = response.text
    except httpx2.ResponseNotRead:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _error_object(body: object) -> dict[str, object] | None:
    """The error part of a provider error body, or None when `body` is not one.

    `{"error": {...}}` (OpenAI, llama.cpp, newer vLLM), `{"error": "text"}` (Ollama) and
    `{"object": "error", ...}` (older vLLM) are error bodies; anything else is not.
    """
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        return error
    if isinstance(error, str) and error:
        return {"message": error}
    return body if body.get("object") == "error" else None


def _error_field(body: object, name: str) -> str | None:
    value = (_error_object(body) or {}).get(name)
    return value if isinstance(value, str) else None


def _provider_message(body: object) -> str | None:
    message = _error_field(body, "message")
    if message:
        return message
    if isinstance(body, str) and body.strip():
        return body.strip()
    return None


def _is_overflow(body: object) -> bool:
    markers = {_error_field(body, "code"), _error_field(body, "type")}
    if markers & _OVERFLOW_MARKERS:
        return True
    return bool(_OVERFLOW_TEXT.search(_provider_message(body) or ""))


def _origin(url: httpx2.URL) -> str:
    """scheme://host:port only: a URL's user info or query may hold a secret."""
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}"


def _describe(cause: BaseException) -> str:
    return f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
