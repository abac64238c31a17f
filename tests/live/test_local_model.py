"""Opt-in: the product against a real OpenAI-compatible model server (llama.cpp
`llama-server`, Ollama, vLLM...), through a worker on the dev server.

Skipped unless `SCOPE_TEST_MODEL_BASE_URL` is set (docs/models.md, "Run it with a local model"):

    SCOPE_TEST_MODEL_BASE_URL=http://127.0.0.1:8080/v1 SCOPE_TEST_MODEL=qwen2.5-7b \\
        python -m pytest tests/live/test_local_model.py

`SCOPE_TEST_MODEL` is the model name sent (default `local`); `SCOPE_TEST_MODEL_CONTEXT`
the server's context size in tokens (default 8192), which the overflow tests exceed
twice over. A model on a CPU is slow: each call may take up to `CALL_TIMEOUT`.

`test_local_model_imitation.py` runs these same tests against an imitation on loopback,
so that they stay correct while no model server is around.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    Message,
    ModelContextOverflow,
    ModelRequest,
    NotCalled,
    OpenAIChatModel,
    Options,
    Response,
    classify_model_error,
    reply,
    tool,
)
from scope_temporal.errors import MODEL_CONTEXT_OVERFLOW
from tests.live.harness import eventually, serving

CALL_TIMEOUT = timedelta(minutes=4)
SECRET_WORD = "pelican-4711"
INSTRUCTIONS = "You are a precise assistant. Use the tools you are given when asked to."


@dataclass(frozen=True)
class Endpoint:
    """The model server the tests talk to."""

    base_url: str
    model: str
    context_tokens: int

    def chat_model(self) -> OpenAIChatModel:
        return OpenAIChatModel(
            self.model, base_url=self.base_url, stream=True, timeout=CALL_TIMEOUT
        )

    def oversized_prompt(self) -> str:
        """Twice the context: one short word is at least one token everywhere."""
        return "Summarise this: " + "word " * (2 * self.context_tokens)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    base_url = os.environ.get("SCOPE_TEST_MODEL_BASE_URL")
    if not base_url:
        pytest.skip("no model server: set SCOPE_TEST_MODEL_BASE_URL (and SCOPE_TEST_MODEL)")
    yield Endpoint(
        base_url,
        os.environ.get("SCOPE_TEST_MODEL") or "local",
        int(os.environ.get("SCOPE_TEST_MODEL_CONTEXT") or 8192),
    )


@tool(permission="read")
def secret_word() -> str:
    """Return today's secret word."""
    return SECRET_WORD


def agent(name: str, options: Options | None = None) -> Definition:
    return Definition(
        name,
        instructions=INSTRUCTIONS,
        tools=[secret_word],
        max_model_calls=4,
        options=options,
        model_timeout=CALL_TIMEOUT + timedelta(seconds=30),
    )


async def test_a_tool_round(temporal_env: WorkflowEnvironment, endpoint: Endpoint) -> None:
    async with serving(
        temporal_env,
        [agent("local-tools")],
        tools=[secret_word],
        models={"default": endpoint.chat_model()},
    ) as scope:
        handle = await scope.start(
            "local-tools",
            "Call the secret_word tool, then answer with the exact word it returned.",
        )
        out = await handle.result()
        snap = await handle.snapshot()
    calls = [e for r in snap.settled_results for e in r.entries if e.call.name == "secret_word"]
    assert calls and all(e.disposition == "succeeded" for e in calls)
    assert calls[0].result.content == SECRET_WORD
    assert SECRET_WORD in out.text


async def test_a_streamed_reply_is_live_for_the_host(
    temporal_env: WorkflowEnvironment, endpoint: Endpoint
) -> None:
    definition = agent("local-stream", Options(max_tokens=600))
    async with serving(
        temporal_env, [definition], tools=[secret_word], models={"default": endpoint.chat_model()}
    ) as scope:
        handle = await scope.start(
            "local-stream",
            "Write the numbers from one to one hundred in words, separated by commas.",
        )
        done = asyncio.create_task(handle.result())
        seen = await eventually(
            handle.live_text, lambda live: live is not None and bool(live.text), every=0.05
        )
        out = await done
    assert seen is not None and seen.model_call_seq == 1
    assert out.text.startswith(seen.text)


async def test_a_context_overflow_is_refused_before_generation(endpoint: Endpoint) -> None:
    request = ModelRequest(messages=(Message.user(endpoint.oversized_prompt()),))
    try:
        await endpoint.chat_model().complete(request)
    except ModelContextOverflow as refused:
        outcome = classify_model_error(refused)
        assert isinstance(outcome, NotCalled)
        assert (outcome.code, outcome.retryable) == (MODEL_CONTEXT_OVERFLOW, False)
    else:
        pytest.skip("this server cuts an oversized prompt instead of refusing it (Ollama does)")


async def test_a_context_overflow_settles_definitely(
    temporal_env: WorkflowEnvironment, endpoint: Endpoint
) -> None:
    async with serving(
        temporal_env,
        [agent("local-overflow")],
        tools=[secret_word],
        models={"default": endpoint.chat_model()},
    ) as scope:
        handle = await scope.start("local-overflow", endpoint.oversized_prompt())
        snap = await eventually(
            handle.snapshot,
            lambda s: s.status in ("failed", "waiting", "completed"),
            timeout=CALL_TIMEOUT.total_seconds(),
        )
    if snap.status == "completed":
        pytest.skip("this server cuts an oversized prompt instead of refusing it (Ollama does)")
    assert snap.unknown_effects == []
    assert snap.failure is not None
    assert snap.failure.code == MODEL_CONTEXT_OVERFLOW
    assert "context_reducer" in snap.failure.message


class OddFirst:
    """The real model, except that its first reply is what small models sometimes emit:
    arguments that are not JSON and a tool that does not exist."""

    def __init__(self, real: OpenAIChatModel) -> None:
        self.real = real

    async def complete(self, request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            return reply.tool_calls(("secret_word", "{not json"), ("fetch_weather", {"city": "x"}))
        return await self.real.complete(request)


async def test_odd_tool_calls_are_model_visible_rejections(
    temporal_env: WorkflowEnvironment, endpoint: Endpoint
) -> None:
    async with serving(
        temporal_env,
        [agent("local-odd")],
        tools=[secret_word],
        models={"default": OddFirst(endpoint.chat_model())},
    ) as scope:
        handle = await scope.start("local-odd", "Call the secret_word tool and tell me the word.")
        out = await handle.result()  # the real model read the rejections and went on
        snap = await handle.snapshot()
    first = snap.settled_results[0]
    assert first.model_call_seq == 1
    assert [e.disposition for e in first.entries] == ["rejected", "rejected"]
    assert snap.unknown_effects == []
    assert out.text
