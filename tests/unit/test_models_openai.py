"""OpenAIChatModel against a real local HTTP server speaking the chat-completions format.

The server (`ChatCompletionsServer`, the SDK's test kit) runs on 127.0.0.1 with an
ephemeral port in its own threads; the real `openai` client talks to it through
`OpenAIChatModel(base_url=...)`. The refusals an adapter proves are in
test_models_openai_errors.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import openai
import pytest

from scope_temporal.chat import FinishReason, Message, Options, ToolCall, ToolResult, Usage
from scope_temporal.models import InvalidModelResponse, ModelRequest, OpenAIChatModel
from scope_temporal.models._openai_wire import to_wire_messages, to_wire_tools
from scope_temporal.models.protocol import ToolDefinition
from scope_temporal.models.streaming import collecting_deltas
from scope_temporal.testing import ChatCompletionsServer, Hang, RawReply, RawStream

# --- the server -------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    with ChatCompletionsServer() as running:
        yield running


def json_reply(data: object, status: int = 200) -> RawReply:
    return RawReply(status, json.dumps(data))


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


async def test_text_reply(server: ChatCompletionsServer) -> None:
    server.push(json_reply(completion("Hello there.")))
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


async def test_tool_call_reply_and_the_request_body(server: ChatCompletionsServer) -> None:
    raw_arguments = '{"query":  "restart api" }'
    server.push(
        json_reply(
            completion(
                None,
                [wire_call("call_a", "search_docs", raw_arguments), wire_call("call_b", "x", "{")],
                "tool_calls",
            )
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


async def test_length_finish(server: ChatCompletionsServer) -> None:
    server.push(json_reply(completion("cut o", finish_reason="length")))
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
async def test_finish_reasons_map(
    server: ChatCompletionsServer, wire: str | None, ours: FinishReason
) -> None:
    server.push(json_reply(completion("x", finish_reason=wire)))
    response = await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("q"),))
    )
    assert response.finish_reason is ours


async def test_refusal_is_reported_as_refusal(server: ChatCompletionsServer) -> None:
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    server.push(json_reply(body))
    response = await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("q"),))
    )
    assert response.finish_reason is FinishReason.refusal
    assert response.message.text == "I can't help with that."


async def test_api_key_comes_from_the_environment(
    server: ChatCompletionsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server.push(json_reply(completion("ok")))
    await OpenAIChatModel(base_url=server.base_url).complete(
        ModelRequest(messages=(Message.user("q"),))
    )
    assert server.received[0].headers["authorization"] == "Bearer sk-env"


async def test_a_given_client_is_used_with_retries_off(server: ChatCompletionsServer) -> None:
    client = openai.AsyncOpenAI(api_key="sk-client", base_url=server.base_url, max_retries=5)
    server.push(RawReply(500, b'{"error": {"message": "down"}}'))
    model = OpenAIChatModel("m", client=client)
    with pytest.raises(openai.APIStatusError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1
    assert server.received[0].headers["authorization"] == "Bearer sk-client"
    with pytest.raises(ValueError, match="either client"):
        OpenAIChatModel(client=client, base_url=server.base_url)


# --- failures never become Responses -----------------------------------------------------


async def test_http_500_raises_after_exactly_one_request(server: ChatCompletionsServer) -> None:
    server.push(RawReply(500, b'{"error": {"message": "internal"}}'))
    server.push(json_reply(completion("a retry would get this")))
    model = OpenAIChatModel(base_url=server.base_url)
    with pytest.raises(openai.InternalServerError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1


async def test_timeout_raises_after_exactly_one_request(server: ChatCompletionsServer) -> None:
    server.push(Hang())
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
    server: ChatCompletionsServer, body: bytes, content_type: str, message: str
) -> None:
    server.push(RawReply(body=body, content_type=content_type))
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


async def test_streamed_reply_is_accumulated(server: ChatCompletionsServer) -> None:
    server.push(
        RawStream(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Let me "}),
                chunk({"content": "check."}),
                chunk(
                    tool_delta(
                        0,
                        id="call_x",
                        type="function",
                        function={"name": "search_docs", "arguments": ""},
                    )
                ),
                chunk(tool_delta(0, function={"arguments": '{"que'})),
                chunk(tool_delta(1, id="call_y", function={"name": "other", "arguments": "{}"})),
                chunk(tool_delta(0, function={"arguments": 'ry": "x"}'})),
                chunk({}, "tool_calls"),
                chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}),
            ]
        )
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


async def test_streamed_text_without_usage(server: ChatCompletionsServer) -> None:
    server.push(RawStream([chunk({"content": "Hi"}), chunk({"content": "!"}, "stop")]))
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
    server: ChatCompletionsServer, chunks: list[object], done: bool, message: str
) -> None:
    server.push(RawStream(chunks, done=done))
    model = OpenAIChatModel(base_url=server.base_url, stream=True)
    with pytest.raises(InvalidModelResponse, match=message):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))


async def test_streamed_http_500_raises_after_exactly_one_request(
    server: ChatCompletionsServer,
) -> None:
    server.push(RawReply(500, b'{"error": {"message": "internal"}}'))
    model = OpenAIChatModel(base_url=server.base_url, stream=True)
    with pytest.raises(openai.InternalServerError):
        await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert len(server.received) == 1
