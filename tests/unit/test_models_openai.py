"""OpenAIChatModel against a real local HTTP server speaking the chat-completions format.

The server runs on 127.0.0.1 with an ephemeral port in a thread; the real `openai`
client talks to it through `OpenAIChatModel(base_url=...)`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

from scope_temporal.chat import FinishReason, Message, Options, ToolCall, ToolResult, Usage
from scope_temporal.models import InvalidModelResponse, ModelRequest, OpenAIChatModel
from scope_temporal.models._openai_wire import to_wire_messages, to_wire_tools
from scope_temporal.models.protocol import ToolDefinition
from scope_temporal.models.streaming import collecting_deltas

# --- the fake server -------------------------------------------------------------------


@dataclass
class Reply:
    """One canned HTTP answer: a body, or SSE events (each written and flushed in turn)."""

    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    events: list[str] | None = None
    delay: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeServer:
    base_url: str
    replies: list[Reply] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)

    def reply_json(self, data: object, status: int = 200) -> None:
        self.replies.append(Reply(json.dumps(data).encode(), status))

    def reply_sse(self, *chunks: object, done: bool = True) -> None:
        events = [f"data: {json.dumps(c) if not isinstance(c, str) else c}\n\n" for c in chunks]
        if done:
            events.append("data: [DONE]\n\n")
        self.replies.append(Reply(content_type="text/event-stream", events=events))


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.received.append(Received(self.path, headers, body))
            answer = server.replies.pop(0) if server.replies else Reply(b"no reply", 599)
            time.sleep(answer.delay)
            # The client may have given up first (the timeout test); nothing to report.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(answer)

        def _send(self, answer: Reply) -> None:
            self.send_response(answer.status)
            self.send_header("content-type", answer.content_type)
            if answer.events is None:
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
                return
            self.end_headers()
            for event in answer.events:
                self.wfile.write(event.encode())
                self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer(base_url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    httpd.daemon_threads = True
    fake.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = "stop",
    **extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "local-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        **extra,
    }


def wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


SEARCH = ToolDefinition(
    name="search_docs",
    description="Search the docs.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}},
)

HISTORY = (
    Message.system("You are terse."),
    Message.user("How do I restart?"),
    Message.assistant(
        "Looking.",
        [
            ToolCall(id="c1", name="search_docs", arguments='{"query": "restart"}'),
            ToolCall(id="c2", name="search_docs", arguments='{"query":"api"}'),
        ],
    ),
    Message.tool(
        [
            ToolResult(call_id="c1", name="search_docs", content="Use systemctl."),
            ToolResult(call_id="c2", name="search_docs", content="boom", is_error=True),
        ]
    ),
    Message.assistant(tool_calls=[ToolCall(id="c3", name="search_docs")]),
    Message.tool([ToolResult(call_id="c3", name="search_docs", content="none")]),
)

WIRE_HISTORY = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "How do I restart?"},
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            wire_call("c1", "search_docs", '{"query": "restart"}'),
            wire_call("c2", "search_docs", '{"query":"api"}'),
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Use systemctl."},
    {"role": "tool", "tool_call_id": "c2", "content": "boom"},
    {"role": "assistant", "content": None, "tool_calls": [wire_call("c3", "search_docs", "{}")]},
    {"role": "tool", "tool_call_id": "c3", "content": "none"},
]


# --- wire format -----------------------------------------------------------------------


def test_messages_round_trip_to_the_wire_format() -> None:
    assert to_wire_messages(HISTORY) == WIRE_HISTORY
    assert to_wire_messages((Message.assistant(),)) == [{"role": "assistant", "content": ""}]
    assert to_wire_tools((SEARCH,)) == [
        {
            "type": "function",
            "function": {
                "name": "search_docs",
                "description": "Search the docs.",
                "parameters": SEARCH.parameters,
            },
        }
    ]


def test_parts_a_role_cannot_carry_are_refused_not_dropped() -> None:
    bad = Message(
        role="user", parts=Message.assistant(tool_calls=[ToolCall(id="x", name="t")]).parts
    )
    with pytest.raises(ValueError, match="'tool_call' part"):
        to_wire_messages((bad,))


# --- non-streamed calls ----------------------------------------------------------------


async def test_text_reply(server: FakeServer) -> None:
    server.reply_json(completion("Hello there."))
    model = OpenAIChatModel("local-model", base_url=server.base_url)
    request = ModelRequest(
        messages=(Message.user("hi"),),
        options=Options(temperature=0.5, max_tokens=None, stop=["END"]),
    )
    response = await model.complete(request)
    assert response.message == Message.assistant("Hello there.")
    assert response.finish_reason is FinishReason.stop
    assert response.usage == Usage(input_tokens=11, output_tokens=7)
    assert response.model == "local-model"
    [sent] = server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer not-needed"
    assert sent.body["model"] == "local-model"
    assert sent.body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in sent.body
    assert "max_tokens" not in sent.body
    assert sent.body["temperature"] == 0.5
    assert sent.body["stop"] == ["END"]
    assert not sent.body.get("stream")


async def test_tool_call_reply_and_the_request_body(server: FakeServer) -> None:
    raw_arguments = '{"query":  "restart api" }'
    server.reply_json(
        completion(
            None,
            [wire_call("call_a", "search_docs", raw_arguments), wire_call("call_b", "x", "{")],
            "tool_calls",
        )
    )
    model = OpenAIChatModel("local-model", base_url=server.base_url, api_key="sk-test")
    response = await model.complete(ModelRequest(messages=HISTORY, tools=(SEARCH,)))
    assert response.finish_reason is FinishReason.tool_calls
    assert response.message.text == ""
    assert response.message.tool_calls == [
        ToolCall(id="call_a", name="search_docs", arguments=raw_arguments),
        ToolCall(id="call_b", name="x", arguments="{"),
    ]
    [sent] = server.received
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["messages"] == WIRE_HISTORY
    assert sent.body["tools"] == to_wire_tools((SEARCH,))


async def test_length_finish(server: FakeServer) -> None:
    server.reply_json(completion("cut o", finish_reason="length"))
    response = await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("essay"),))
    )
    assert response.finish_reason is FinishReason.length
    assert response.message.text == "cut o"
    assert server.received[0].body["model"] == "gpt-4o-mini"


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("stop", FinishReason.stop),
        ("tool_calls", FinishReason.tool_calls),
        ("function_call", FinishReason.tool_calls),
        ("length", FinishReason.length),
        ("content_filter", FinishReason.content_filter),
        ("eos_token", FinishReason.other),
        (None, FinishReason.other),
    ],
)
async def test_finish_reasons_map(server: FakeServer, wire: str | None, ours: FinishReason) -> None:
    server.reply_json(completion("x", finish_reason=wire))
    response = await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("q"),))
    )
    assert response.finish_reason is ours


async def test_refusal_is_reported_as_refusal(server: FakeServer) -> None:
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    server.reply_json(body)
    response = await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("q"),))
    )
    assert response.finish_reason is FinishReason.refusal
    assert response.message.text == "I can't help with that."


async def test_api_key_comes_from_the_environment(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server.reply_json(completion("ok"))
    await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("q"),))
    )
    assert server.received[0].headers["authorization"] == "Bearer sk-env"


async def test_a_given_client_is_used_with_retries_off(server: FakeServer) -> None:
    client = openai.AsyncOpenAI(api_key="sk-client", base_url=server.base_url, max_retries=5)
    server.replies.append(Reply(b'{"error": {"message": "down"}}', 503))
    model = OpenAIChatModel("m", client=client)
    with pytest.raises(openai.APIStatusError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1
    assert server.received[0].headers["authorization"] == "Bearer sk-client"
    with pytest.raises(ValueError, match="either client"):
        OpenAIChatModel(client=client, base_url=server.base_url)


# --- failures never become Responses -----------------------------------------------------


async def test_http_500_raises_after_exactly_one_request(server: FakeServer) -> None:
    server.replies.append(Reply(b'{"error": {"message": "internal"}}', 500))
    server.reply_json(completion("a retry would get this"))
    model = OpenAIChatModel(base_url=server.base_url)
    with pytest.raises(openai.InternalServerError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1


async def test_timeout_raises_after_exactly_one_request(server: FakeServer) -> None:
    server.replies.append(Reply(json.dumps(completion("late")).encode(), delay=1.0))
    model = OpenAIChatModel(base_url=server.base_url, timeout=timedelta(seconds=0.2))
    with pytest.raises(openai.APITimeoutError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b'{"foo": 1}', "application/json", "choices"),
        (b'{"choices": []}', "application/json", "choices"),
        (b'{"choices": [{"index": 0, "finish_reason": "stop"}]}', "application/json", "message"),
        (
            json.dumps(
                completion(None, [{"type": "function", "function": {"name": "t"}}])
            ).encode(),
            "application/json",
            "tool_calls",
        ),
        (b"<html>bad gateway</html>", "text/html", "not JSON"),
        (b"not json at all", "application/json", "not JSON"),
        (b"", "application/json", "not JSON"),
        (b"[1, 2]", "application/json", "not a chat completion"),
    ],
)
async def test_malformed_body_raises_invalid_model_response(
    server: FakeServer, body: bytes, content_type: str, message: str
) -> None:
    server.replies.append(Reply(body, content_type=content_type))
    model = OpenAIChatModel(base_url=server.base_url)
    with pytest.raises(InvalidModelResponse, match=message):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1


# --- streaming -----------------------------------------------------------------------------


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "stream-model",
        "choices": choices,
        **extra,
    }


def tool_delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, **fields}]}


async def test_streamed_reply_is_accumulated(server: FakeServer) -> None:
    server.reply_sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Let me "}),
        chunk({"content": "check."}),
        chunk(
            tool_delta(
                0, id="call_x", type="function", function={"name": "search_docs", "arguments": ""}
            )
        ),
        chunk(tool_delta(0, function={"arguments": '{"que'})),
        chunk(tool_delta(1, id="call_y", function={"name": "other", "arguments": "{}"})),
        chunk(tool_delta(0, function={"arguments": 'ry": "x"}'})),
        chunk({}, "tool_calls"),
        chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}),
    )
    model = OpenAIChatModel("stream-model", base_url=server.base_url, stream=True)
    live: list[str] = []
    with collecting_deltas(live.append):
        response = await model.complete(
            ModelRequest(messages=(Message.user("q"),), tools=(SEARCH,))
        )
    assert live == ["Let me ", "check."]  # reported as it arrived, for display
    assert response.message.text == "Let me check."
    assert response.message.tool_calls == [
        ToolCall(id="call_x", name="search_docs", arguments='{"query": "x"}'),
        ToolCall(id="call_y", name="other", arguments="{}"),
    ]
    assert response.finish_reason is FinishReason.tool_calls
    assert response.usage == Usage(input_tokens=5, output_tokens=9)
    assert response.model == "stream-model"
    [sent] = server.received
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["tools"] == to_wire_tools((SEARCH,))


async def test_streamed_text_without_usage(server: FakeServer) -> None:
    server.reply_sse(chunk({"content": "Hi"}), chunk({"content": "!"}, "stop"))
    model = OpenAIChatModel(base_url=server.base_url, stream=True)
    response = await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert response.message == Message.assistant("Hi!")
    assert response.finish_reason is FinishReason.stop
    assert response.usage is None


@pytest.mark.parametrize(
    ("chunks", "done", "message"),
    [
        ([chunk({"content": "Hel"})], False, "without a finish reason"),
        ([chunk({"content": "Hel"})], True, "without a finish reason"),
        ([], True, "without a finish reason"),
        ([chunk(tool_delta(0, function={"arguments": "{}"}), "tool_calls")], True, "has no id"),
        ([chunk(tool_delta(0, id="c", function={"arguments": "{}"}), "stop")], True, "has no name"),
        ([chunk({"content": "x"}), "{not json"], True, "not JSON"),
        ([{"choices": "nope"}], True, "not a chat-completion chunk"),
    ],
)
async def test_broken_stream_raises_invalid_model_response(
    server: FakeServer, chunks: list[object], done: bool, message: str
) -> None:
    server.reply_sse(*chunks, done=done)
    model = OpenAIChatModel(base_url=server.base_url, stream=True)
    with pytest.raises(InvalidModelResponse, match=message):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))


async def test_streamed_http_500_raises_after_exactly_one_request(server: FakeServer) -> None:
    server.replies.append(Reply(b'{"error": {"message": "internal"}}', 500))
    model = OpenAIChatModel(base_url=server.base_url, stream=True)
    with pytest.raises(openai.InternalServerError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1
