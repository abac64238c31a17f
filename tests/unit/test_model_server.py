"""`ChatCompletionsServer`, the loopback chat-completions endpoint of the test kit.

A scripted Response comes back through the real `OpenAIChatModel` unchanged, plain or
streamed; the wire details real servers have (chunked SSE, `[DONE]`, the usage chunk
only when asked) are checked with a bare HTTP client.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx2
import pytest

from scope_temporal.chat import FinishReason, Message, Response, ToolCall, ToolResult, Usage
from scope_temporal.models import ModelRequest, OpenAIChatModel, reply
from scope_temporal.models.streaming import collecting_deltas
from scope_temporal.testing import (
    ChatCompletionsServer,
    ErrorReply,
    Hang,
    Paced,
    ReceivedRequest,
    Step,
)

REQUEST = ModelRequest(messages=(Message.user("q"),))


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    with ChatCompletionsServer() as running:
        yield running


RESPONSES: list[Response] = [
    reply.text("Hello there, friend.", usage=Usage(input_tokens=3, output_tokens=4)),
    reply.text("  leading and trailing  "),
    reply.tool_calls(("search_docs", {"query": "restart api"}), ("other", "{not json")),
    reply.response("Let me look.", [("search_docs", {"q": 1}, "call_77")], model="named"),
    reply.length("cut o"),
    reply.response("I can't help with that.", finish_reason=FinishReason.refusal),
    reply.response("filtered", finish_reason="content_filter"),
    reply.response("odd", finish_reason="other"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "sse"])
@pytest.mark.parametrize("scripted", RESPONSES, ids=range(len(RESPONSES)))
async def test_a_scripted_response_comes_back_unchanged(
    server: ChatCompletionsServer, scripted: Response, stream: bool
) -> None:
    server.push(scripted)
    model = OpenAIChatModel("asked-for", base_url=server.base_url, stream=stream)
    received = await model.complete(REQUEST)
    assert received == scripted.model_copy(update={"model": scripted.model or "asked-for"})
    assert server.received[0].stream is stream


async def test_the_stream_is_chunked_sse_with_usage_only_when_asked(
    server: ChatCompletionsServer,
) -> None:
    scripted = reply.text("a b", usage=Usage(input_tokens=1, output_tokens=2))
    server.push(scripted, scripted, scripted)
    body = {"model": "m", "messages": [], "stream": True}
    async with httpx2.AsyncClient(base_url=server.base_url) as http:
        plain = await http.post("/chat/completions", json={"model": "m", "messages": []})
        bare = await http.post("/chat/completions", json=body)
        asked = await http.post(
            "/chat/completions", json={**body, "stream_options": {"include_usage": True}}
        )
    assert plain.headers["content-type"] == "application/json"
    assert plain.json()["usage"] == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    assert bare.headers["transfer-encoding"] == "chunked"
    assert bare.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in bare.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    contents = [json.loads(e)["choices"][0]["delta"].get("content") for e in events[:-1]]
    assert contents == ["", "a ", "b", None]
    assert "usage" not in bare.text
    assert json.loads(asked.text.split("data: ")[-2])["usage"]["total_tokens"] == 3


async def test_requests_are_recorded_and_unscripted_ones_get_an_error(
    server: ChatCompletionsServer,
) -> None:
    async with httpx2.AsyncClient(base_url=server.base_url) as http:
        missing = await http.post("/chat/completions", json={"model": "m"})
        other = await http.get("/models")
        garbled = await http.post("/chat/completions", content=b"{not json")
    assert missing.status_code == 500
    assert "no step for request #1" in missing.json()["error"]["message"]
    assert other.status_code == 404
    assert garbled.status_code == 500
    assert [(r.method, r.path, r.body) for r in server.received] == [
        ("POST", "/v1/chat/completions", {"model": "m"}),
        ("GET", "/v1/models", None),
        ("POST", "/v1/chat/completions", None),
    ]


async def test_a_function_script_chooses_each_answer() -> None:
    def script(request: ReceivedRequest) -> Step:
        last = request.body["messages"][-1]
        if last["role"] == "user":
            return reply.tool_calls(("lookup", {"key": last["content"]}))
        return reply.text(f"found {last['content']}")

    with ChatCompletionsServer(script) as server:
        model = OpenAIChatModel("m", base_url=server.base_url)
        first = await model.complete(REQUEST)
        assert first.message.tool_calls == [
            ToolCall(id="call_1", name="lookup", arguments='{"key": "q"}')
        ]
        done = await model.complete(
            ModelRequest(
                messages=(
                    Message.user("q"),
                    first.message,
                    Message.tool([ToolResult(call_id="call_1", name="lookup", content="42")]),
                )
            )
        )
        assert done.message.text == "found 42"
        with pytest.raises(TypeError, match="function"):
            server.push(reply.text("x"))


async def test_paced_text_arrives_piece_by_piece(server: ChatCompletionsServer) -> None:
    server.push(Paced(reply.text("one two three"), delay=0.05))
    model = OpenAIChatModel("m", base_url=server.base_url, stream=True)
    arrivals: list[tuple[str, float]] = []
    with collecting_deltas(lambda text: arrivals.append((text, time.monotonic()))):
        await model.complete(REQUEST)
    assert [text for text, _ in arrivals] == ["one ", "two ", "three"]
    assert arrivals[-1][1] - arrivals[0][1] >= 0.08


def test_stop_releases_a_hanging_request_and_joins_every_thread() -> None:
    before = threading.active_count()
    server = ChatCompletionsServer([Hang()]).start()
    answered: list[int] = []

    def call() -> None:
        try:
            answered.append(httpx2.post(f"{server.base_url}/chat/completions", json={}).status_code)
        except httpx2.RemoteProtocolError:
            answered.append(0)

    caller = threading.Thread(target=call)
    caller.start()
    while not server.received:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    caller.join(5)
    assert time.monotonic() - started < 2
    assert answered == [0]  # the connection closed without an answer
    assert threading.active_count() == before
    server.stop()  # stopping twice is harmless
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url


def test_an_error_reply_is_an_openai_error_body() -> None:
    assert ErrorReply(429, "slow", code="rate_limit_exceeded").body() == {
        "error": {
            "message": "slow",
            "type": "invalid_request_error",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
