"""The opt-in real-model tests (test_local_model.py), run against an imitation of a model
server on loopback (`ChatCompletionsServer` with a scripted function), so that the tests
themselves are checked in every run. The imitation answers like llama.cpp's server:
tool calls when asked, a slowly streamed reply, HTTP 400 `exceed_context_size_error`
for a prompt over its context.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scope_temporal import reply
from scope_temporal.testing import ChatCompletionsServer, ErrorReply, Paced, ReceivedRequest, Step
from tests.live.test_local_model import (
    Endpoint,
    test_a_context_overflow_is_refused_before_generation,
    test_a_context_overflow_settles_definitely,
    test_a_streamed_reply_is_live_for_the_host,
    test_a_tool_round,
    test_odd_tool_calls_are_model_visible_rejections,
)

__all__ = [
    "test_a_context_overflow_is_refused_before_generation",
    "test_a_context_overflow_settles_definitely",
    "test_a_streamed_reply_is_live_for_the_host",
    "test_a_tool_round",
    "test_odd_tool_calls_are_model_visible_rejections",
]

CONTEXT_TOKENS = 1024
NUMBERS = ", ".join(f"number {n}" for n in range(1, 101))


def imitation(request: ReceivedRequest) -> Step:
    messages = request.body["messages"]
    if sum(len(m.get("content") or "") for m in messages) > 4 * CONTEXT_TOKENS:
        return ErrorReply(
            400,
            "the request exceeds the available context size, try increasing it",
            type="exceed_context_size_error",
        )
    last = messages[-1]
    if last["role"] == "tool":
        return reply.text(f"The word is {last['content']}.")
    if "secret_word" in last["content"]:
        return reply.tool_calls(("secret_word", {}))
    return Paced(reply.text(NUMBERS), delay=0.01)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with ChatCompletionsServer(imitation) as server:
        yield Endpoint(server.base_url, "imitation", CONTEXT_TOKENS)
