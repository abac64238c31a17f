"""`OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint as a `Model`.

Works with OpenAI and with local servers that speak the same format (vLLM, llama.cpp
server, Ollama). This is the only module that imports `openai`; it runs on the worker,
inside the `scope.model` activity, never in a workflow.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta

from openai import AsyncOpenAI, omit

from scope_temporal.chat import Response
from scope_temporal.models._openai_errors import reported
from scope_temporal.models._openai_wire import (
    StreamAccumulator,
    options_to_wire,
    parse_completion,
    to_wire_messages,
    to_wire_tools,
)
from scope_temporal.models.errors import InvalidModelResponse
from scope_temporal.models.protocol import ModelRequest
from scope_temporal.models.streaming import stream_delta

__all__ = ["OpenAIChatModel"]

_LOCAL_API_KEY = "not-needed"


class OpenAIChatModel:
    """A `Model` backed by the chat-completions API of the official `openai` client.

    Retries are off (`max_retries=0`), also on a client you pass in: the adapter never
    re-sends a request, because a repeated call may bill and act twice. A call that
    provably did not run raises a `ModelNotCalled` subclass (see `complete`); any other
    failure raises as the client reported it, and its outcome is unknown.

    Attributes:
        model: the model name sent with every request.
        stream: whether requests are streamed (see `__init__`).
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        stream: bool = False,
        timeout: timedelta | None = None,
        client: AsyncOpenAI | None = None,
    ) -> None:
        """Create the adapter (no request is made).

        Args:
            model: the model name, e.g. "gpt-4o-mini" or a local server's model id.
            base_url: the API root, e.g. "http://localhost:8000/v1" for vLLM; None means
                OpenAI (or `OPENAI_BASE_URL`).
            api_key: the key; None reads `OPENAI_API_KEY`, and when that is unset too and
                `base_url` is given, a placeholder is sent (local servers need none).
                Keys stay on the worker; they never enter workflow history.
            stream: request a streamed response (SSE) and assemble it into one Response.
                Usage is requested with `stream_options.include_usage`. A stream cut short
                raises, so the call's outcome becomes unknown.
            timeout: limit of one HTTP request; None keeps the client's default. Exceeding
                it while connecting raises `ModelUnavailable` (nothing was sent), later
                raises `openai.APITimeoutError` (unknown outcome). Keep it below the model
                activity's start-to-close timeout so the adapter, not Temporal, reports
                the hang.
            client: a ready `AsyncOpenAI` client to use instead of building one (its
                retries are still turned off); excludes `base_url` and `api_key`.

        Raises:
            ValueError: `client` given together with `base_url` or `api_key`.
            openai.OpenAIError: no API key could be determined.
        """
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError("pass either client or base_url/api_key, not both")
        if client is None:
            key = api_key or os.environ.get("OPENAI_API_KEY") or None
            if key is None and base_url is not None:
                key = _LOCAL_API_KEY
            client = AsyncOpenAI(api_key=key, base_url=base_url)
        if timeout is None:
            self._client = client.with_options(max_retries=0)
        else:
            self._client = client.with_options(max_retries=0, timeout=timeout.total_seconds())
        self.model = model
        self.stream = stream

    async def complete(self, request: ModelRequest) -> Response:
        """Send one chat-completions request and return the first choice as a Response.

        The messages are sent exactly as given (one `tool` message per tool result),
        the tools as `function` tools (the field is omitted when there are none), and
        the options that are set (extra provider options included) in the body.
        Tool-call arguments come back as the raw text the model produced.

        Raises:
            ModelUnavailable: the request provably never reached the model (no connection:
                refused, DNS, TLS handshake, connect or pool timeout), or the provider
                refused it for now: 408, 409, 429 or 503 with an error body, `retry_after`
                from its `Retry-After`. Retryable.
            ModelContextOverflow: HTTP 400/413 saying the context window is exceeded.
            ModelRejected: HTTP 400, 401, 403, 404, 413 or 422, or a 429 for an
                exhausted quota. Permanent.
            InvalidModelResponse: the answer is not a structurally valid chat completion
                (not JSON, no choices, no message, a tool call without id or name, or a
                stream without a finish reason). Unknown outcome.
            openai.APIError: anything else the client reports (another status, a bare
                408/409/429/503, a read or write failure or timeout after the request
                was sent, a stream cut short, an error event in a stream). Unknown
                outcome.
            ValueError: a message the wire format cannot carry (nothing was sent).

        In every case the API key never appears in the message (replaced by `***`, in
        case the server echoed it): the message enters workflow history.
        """
        try:
            return await self._complete(request)
        except Exception as exc:
            # A provider (or a proxy) may echo the Authorization header in an error
            # body; the message becomes the Effect's diagnostic, in history.
            raise _without_key(reported(exc), self._client.api_key) from None

    async def _complete(self, request: ModelRequest) -> Response:
        messages = to_wire_messages(request.messages)
        tools = to_wire_tools(request.tools) if request.tools else omit
        options = options_to_wire(request.options) or None
        completions = self._client.chat.completions
        if not self.stream:
            raw = await completions.with_raw_response.create(
                model=self.model, messages=messages, tools=tools, extra_body=options
            )
            return parse_completion(raw.content)
        chunks = await completions.create(
            model=self.model,
            messages=messages,
            tools=tools,
            extra_body=options,
            stream=True,
            stream_options={"include_usage": True},
        )
        accumulator = StreamAccumulator()
        async with chunks:
            try:
                async for chunk in chunks:
                    stream_delta(accumulator.feed(chunk.to_dict(mode="json", warnings=False)))
            except json.JSONDecodeError as exc:
                raise InvalidModelResponse(f"model stream event is not JSON: {exc}") from exc
        return accumulator.result()


def _without_key(exc: Exception, key: str) -> Exception:
    """`exc` with every occurrence of the API key in its message replaced by `***`."""
    if not key or key == _LOCAL_API_KEY:
        return exc
    exc.args = tuple(a.replace(key, "***") if isinstance(a, str) else a for a in exc.args)
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        exc.message = message.replace(key, "***")  # type: ignore[attr-defined]
    return exc
