"""OpenAIChatModel reports what it can prove: the README table "Model errors an adapter may
report", row by row, against a real HTTP server on loopback (no mock of `openai` or
`httpx2`).

Each case raises the exact not-called exception with its fields, classified `NotCalled`,
or stays unknown: the client's own exception, classified `NotProven`. Every case sends
the request at most once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import openai
import pytest

from scope_temporal.chat import Message
from scope_temporal.errors import MODEL_CONTEXT_OVERFLOW, MODEL_REJECTED, MODEL_UNAVAILABLE
from scope_temporal.models import (
    InvalidModelResponse,
    ModelContextOverflow,
    ModelRejected,
    ModelRequest,
    ModelUnavailable,
    NotCalled,
    NotProven,
    OpenAIChatModel,
    classify_model_error,
    reply,
)
from scope_temporal.models.not_called import MAX_RETRY_AFTER
from scope_temporal.models.streaming import collecting_deltas
from scope_temporal.testing import (
    ChatCompletionsServer,
    CutStream,
    Drop,
    ErrorReply,
    Hang,
    RawReply,
    RawStream,
    refused_base_url,
    unreachable_base_url,
)

REQUEST = ModelRequest(messages=(Message.user("q"),))
STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["plain", "sse"])


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    with ChatCompletionsServer() as running:
        yield running


@pytest.fixture(autouse=True)
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


async def failure(model: OpenAIChatModel) -> Exception:
    """What one call raised (it must raise)."""
    try:
        await model.complete(REQUEST)
    except Exception as exc:
        return exc
    pytest.fail("the call returned a Response")


def model_for(server: ChatCompletionsServer, *, stream: bool = False) -> OpenAIChatModel:
    return OpenAIChatModel("m", base_url=server.base_url, stream=stream)


# --- no connection: nothing was sent ------------------------------------------------------


async def test_a_refused_connection_is_unavailable() -> None:
    with refused_base_url() as url:
        raised = await failure(OpenAIChatModel("m", base_url=url))
    assert type(raised) is ModelUnavailable
    assert (raised.status, raised.retry_after) == (None, None)
    assert "no connection to http://127.0.0.1:" in raised.message
    assert "ConnectError" in raised.message
    outcome = classify_model_error(raised)
    assert isinstance(outcome, NotCalled)
    assert (outcome.code, outcome.retryable) == (MODEL_UNAVAILABLE, True)


async def test_a_dns_failure_is_unavailable() -> None:
    raised = await failure(OpenAIChatModel("m", base_url="http://no-such-host.invalid/v1"))
    assert type(raised) is ModelUnavailable
    assert "no connection to http://no-such-host.invalid: ConnectError" in raised.message


async def test_a_tls_handshake_failure_is_unavailable(server: ChatCompletionsServer) -> None:
    # https:// to a plain-HTTP server: it answers the ClientHello in plain HTTP.
    url = server.base_url.replace("http://", "https://")
    raised = await failure(OpenAIChatModel("m", base_url=url))
    assert type(raised) is ModelUnavailable
    assert "SSL" in raised.message
    assert server.received == []


async def test_a_connect_timeout_is_unavailable() -> None:
    with unreachable_base_url() as url:
        model = OpenAIChatModel("m", base_url=url, timeout=timedelta(seconds=0.3))
        raised = await failure(model)
    assert type(raised) is ModelUnavailable
    assert raised.message.endswith("ConnectTimeout")


async def test_a_pool_timeout_is_unavailable(server: ChatCompletionsServer) -> None:
    # One connection, held by a request that is never answered: the next one waits for
    # the pool and gives up before sending anything.
    server.push(Hang())
    http = httpx2.AsyncClient(
        limits=httpx2.Limits(max_connections=1), timeout=httpx2.Timeout(5.0, pool=0.2)
    )
    client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, http_client=http)
    model = OpenAIChatModel("m", client=client)
    held = asyncio.create_task(model.complete(REQUEST))
    while not server.received:
        await asyncio.sleep(0.01)
    raised = await failure(model)
    held.cancel()
    assert type(raised) is ModelUnavailable
    assert "PoolTimeout" in raised.message
    assert len(server.received) == 1
    await http.aclose()


# --- HTTP refusals ------------------------------------------------------------------------


@STREAMED
@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
async def test_permanent_statuses_are_rejected(
    server: ChatCompletionsServer, status: int, stream: bool
) -> None:
    server.push(ErrorReply(status, "Invalid value for 'model'", headers={"Retry-After": "5"}))
    raised = await failure(model_for(server, stream=stream))
    assert type(raised) is ModelRejected
    assert raised.status == status
    assert raised.message == f"HTTP {status}: Invalid value for 'model'"
    assert classify_model_error(raised) == NotCalled(
        code=MODEL_REJECTED, retryable=False, message=raised.message, status=status
    )
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (404, "<html><h1>404 Not Found</h1></html>", "HTTP 404: <html><h1>404 Not Found</h1>"),
        (413, "", "HTTP 413: Error code: 413"),
        (401, '{"detail": "Not authenticated"}', "HTTP 401: Error code: 401"),
    ],
)
async def test_a_permanent_status_needs_no_error_body(
    server: ChatCompletionsServer, status: int, body: str, message: str
) -> None:
    server.push(RawReply(status, body, content_type="text/html"))
    raised = await failure(model_for(server))
    assert type(raised) is ModelRejected
    assert raised.message.startswith(message)


@STREAMED
@pytest.mark.parametrize(
    ("status", "body"),
    [
        (  # OpenAI
            400,
            ErrorReply(
                400,
                "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 130000 tokens.",
                code="context_length_exceeded",
            ).body(),
        ),
        (  # llama.cpp server
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
        ),
        (  # vLLM (older releases: the error object at the top level)
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, "
                "you requested 5000 tokens in the messages.",
                "type": "BadRequestError",
                "code": 400,
            },
        ),
        (413, ErrorReply(413, "prompt is too long: 210000 tokens").body()),
    ],
    ids=["openai", "llama.cpp", "vllm", "413"],
)
async def test_a_context_overflow_is_its_own_rejection(
    server: ChatCompletionsServer, status: int, body: object, stream: bool
) -> None:
    server.push(RawReply(status, json.dumps(body)))
    raised = await failure(model_for(server, stream=stream))
    assert type(raised) is ModelContextOverflow
    outcome = classify_model_error(raised)
    assert isinstance(outcome, NotCalled)
    assert (outcome.code, outcome.retryable, outcome.status) == (
        MODEL_CONTEXT_OVERFLOW,
        False,
        status,
    )


@STREAMED
@pytest.mark.parametrize("status", [408, 409, 429, 503])
async def test_retryable_statuses_with_an_error_body_are_unavailable(
    server: ChatCompletionsServer, status: int, stream: bool
) -> None:
    server.push(ErrorReply(status, "Rate limit reached", headers={"Retry-After": "2"}))
    raised = await failure(model_for(server, stream=stream))
    assert type(raised) is ModelUnavailable
    assert (raised.status, raised.retry_after) == (status, timedelta(seconds=2))
    assert classify_model_error(raised) == NotCalled(
        code=MODEL_UNAVAILABLE,
        retryable=True,
        message=f"HTTP {status}: Rate limit reached",
        status=status,
        retry_after=timedelta(seconds=2),
    )
    assert len(server.received) == 1


# The parser itself is tested in test_models_not_called.py; these cross the wire.
@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after-ms": "250", "Retry-After": "9"}, timedelta(milliseconds=250)),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-5"}, None),
        ({"Retry-After": "99999999999999999999"}, MAX_RETRY_AFTER),
    ],
)
async def test_retry_after_is_read_and_bad_values_are_ignored_or_capped(
    server: ChatCompletionsServer, headers: dict[str, str], expected: timedelta | None
) -> None:
    server.push(ErrorReply(429, "slow down", headers=headers))
    raised = await failure(model_for(server))
    assert type(raised) is ModelUnavailable
    assert raised.retry_after == expected


async def test_retry_after_as_an_http_date(server: ChatCompletionsServer) -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    server.push(ErrorReply(503, "overloaded", headers={"Retry-After": format_datetime(when)}))
    raised = await failure(model_for(server))
    assert type(raised) is ModelUnavailable
    assert raised.retry_after is not None
    assert timedelta(seconds=25) <= raised.retry_after <= timedelta(seconds=30)


@pytest.mark.parametrize(
    "body",
    [{"error": "model is loading"}, {"object": "error", "message": "model is loading"}],
    ids=["ollama", "vllm"],
)
async def test_other_error_body_shapes_count(server: ChatCompletionsServer, body: object) -> None:
    server.push(RawReply(503, json.dumps(body)))
    raised = await failure(model_for(server))
    assert type(raised) is ModelUnavailable
    assert raised.message == "HTTP 503: model is loading"


async def test_an_exhausted_quota_is_permanent(server: ChatCompletionsServer) -> None:
    server.push(ErrorReply(429, "You exceeded your current quota", code="insufficient_quota"))
    raised = await failure(model_for(server))
    assert type(raised) is ModelRejected
    assert raised.status == 429


# --- unknown: the model may have run ------------------------------------------------------


@STREAMED
@pytest.mark.parametrize(
    ("status", "body"),
    [
        (408, ""),
        (409, "<html>409 Conflict</html>"),
        (429, '{"detail": "busy"}'),
        (503, '{"error": null}'),
        (503, "<html>503 Service Unavailable</html>"),
    ],
)
async def test_retryable_statuses_without_an_error_body_stay_unknown(
    server: ChatCompletionsServer, status: int, body: str, stream: bool
) -> None:
    server.push(RawReply(status, body, headers={"Retry-After": "1"}))
    raised = await failure(model_for(server, stream=stream))
    assert isinstance(raised, openai.APIStatusError)
    assert raised.status_code == status
    assert classify_model_error(raised) == NotProven(
        diagnostic=f"{type(raised).__name__}: {raised}"
    )


@STREAMED
@pytest.mark.parametrize("status", [500, 502, 504, 405, 410, 418])
async def test_other_statuses_stay_unknown(
    server: ChatCompletionsServer, status: int, stream: bool
) -> None:
    server.push(ErrorReply(status, "upstream failed", headers={"Retry-After": "1"}))
    raised = await failure(model_for(server, stream=stream))
    assert isinstance(raised, openai.APIStatusError)
    assert isinstance(classify_model_error(raised), NotProven)
    assert len(server.received) == 1


@STREAMED
async def test_a_request_never_answered_stays_unknown(
    server: ChatCompletionsServer, stream: bool
) -> None:
    server.push(Hang())
    model = OpenAIChatModel(
        "m", base_url=server.base_url, stream=stream, timeout=timedelta(seconds=0.3)
    )
    raised = await failure(model)
    assert isinstance(raised, openai.APITimeoutError)
    assert str(raised) == "Request timed out. (ReadTimeout)"
    assert classify_model_error(raised) == NotProven(
        diagnostic="APITimeoutError: Request timed out. (ReadTimeout)"
    )
    assert len(server.received) == 1


@STREAMED
async def test_a_connection_dropped_without_an_answer_stays_unknown(
    server: ChatCompletionsServer, stream: bool
) -> None:
    server.push(Drop())
    raised = await failure(model_for(server, stream=stream))
    assert isinstance(raised, openai.APIConnectionError)
    assert "Server disconnected without sending a response" in str(raised)
    assert isinstance(classify_model_error(raised), NotProven)
    assert len(server.received) == 1


async def test_a_stream_cut_short_stays_unknown_after_showing_its_text(
    server: ChatCompletionsServer,
) -> None:
    server.push(CutStream(reply.text("one two three four"), after=3))
    live: list[str] = []
    with collecting_deltas(live.append):
        raised = await failure(model_for(server, stream=True))
    assert live == ["one ", "two "]  # the role chunk, then two words
    assert isinstance(raised, openai.APIConnectionError)
    assert "incomplete chunked read" in str(raised)
    assert isinstance(classify_model_error(raised), NotProven)


async def test_a_body_cut_short_stays_unknown(server: ChatCompletionsServer) -> None:
    server.push(CutStream(reply.text("one two three four")))
    raised = await failure(model_for(server))
    assert isinstance(raised, openai.APIConnectionError)
    assert "RemoteProtocolError" in str(raised)
    assert isinstance(classify_model_error(raised), NotProven)


async def test_an_error_event_inside_a_stream_stays_unknown(
    server: ChatCompletionsServer,
) -> None:
    # llama.cpp reports a model output its tool-call parser rejects this way.
    error = {"error": {"code": 500, "message": "does not match the expected format"}}
    server.push(RawStream([{"choices": [{"index": 0, "delta": {"content": "x"}}]}, error]))
    raised = await failure(model_for(server, stream=True))
    assert type(raised) is openai.APIError
    assert isinstance(classify_model_error(raised), NotProven)


async def test_a_garbled_body_stays_unknown(server: ChatCompletionsServer) -> None:
    server.push(RawReply(200, "<html>bad gateway</html>", content_type="text/html"))
    raised = await failure(model_for(server))
    assert isinstance(raised, InvalidModelResponse)
    assert isinstance(classify_model_error(raised), NotProven)


# --- secrets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, ModelRejected), (429, ModelUnavailable), (500, openai.InternalServerError)],
)
async def test_the_api_key_never_reaches_a_message(
    server: ChatCompletionsServer, status: int, kind: type[Exception]
) -> None:
    key = "sk-live-0123456789abcdef"
    server.push(ErrorReply(status, f"Incorrect API key provided: {key}."))
    model = OpenAIChatModel("m", base_url=server.base_url, api_key=key)
    raised = await failure(model)
    assert type(raised) is kind
    assert key not in str(raised)
    assert "Incorrect API key provided: ***." in str(raised)
    outcome = classify_model_error(raised)
    assert key not in outcome.model_dump_json()
    assert server.received[0].headers["authorization"] == f"Bearer {key}"
