"""Live model text: visible while the call runs, never the result."""

from __future__ import annotations

import asyncio

from scope_temporal import (
    Definition,
    Message,
    ModelRequest,
    Response,
    ScriptedModel,
    reply,
    settle_model_result,
    stream_delta,
)
from scope_temporal.models.streaming import collecting_deltas
from scope_temporal.testing import LocalRunner


def test_stream_delta_without_a_listener_is_a_no_op() -> None:
    stream_delta("nobody listens")  # must not raise
    seen: list[str] = []
    with collecting_deltas(seen.append):
        stream_delta("a")
        stream_delta("")  # nothing to show
    stream_delta("b")
    assert seen == ["a"]


async def test_scripted_model_streams_its_text_word_by_word() -> None:
    model = ScriptedModel([reply.text("three small words")], stream_delay=0)
    seen: list[str] = []
    with collecting_deltas(seen.append):
        response = await model.complete(ModelRequest(messages=(Message.user("q"),)))
    assert seen == ["three ", "small ", "words"]
    assert response.message.text == "three small words"


async def test_live_text_shows_while_the_call_runs_and_goes_when_it_settles() -> None:
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> Response:
        stream_delta("Root cause: ")
        stream_delta("a leak")
        await release.wait()
        return reply.text("Root cause: a leak in payments-worker")

    runner = LocalRunner(definitions=[Definition("s")], models={"default": ScriptedModel(slow)})
    run = await runner.start("s", [Message.user("why?")])
    for _ in range(100):
        live = await run.live_text()
        if live is not None and live.text == "Root cause: a leak":
            break
        await asyncio.sleep(0.01)
    assert live is not None and live.model_call_seq == 1 and live.process_id == run.id
    assert run.snapshot().root.context[-1].role == "user"  # nothing settled yet
    release.set()
    out = await run.result(timeout=5)
    assert out.text == "Root cause: a leak in payments-worker"
    assert await run.live_text() is None


async def test_a_stream_cut_short_is_unknown_and_its_partial_text_is_never_the_result() -> None:
    async def cut(request: ModelRequest) -> Response:
        stream_delta("Half an ans")
        raise ConnectionError("stream reset by peer")

    runner = LocalRunner(definitions=[Definition("s")], models={"default": ScriptedModel(cut)})
    run = await runner.start("s", [Message.user("why?")])
    tree = await run.idle()
    [unknown] = tree.unknown_effects
    assert "stream reset" in unknown.diagnostic
    assert all("Half an ans" not in m.text for m in tree.root.context)
    assert await run.live_text() is None
    settlement = settle_model_result(
        unknown.request,
        reply.text("the whole answer, from the provider's log"),
        unknown.request.messages,
    )
    await run.resolve(unknown, settlement)
    assert (await run.result(timeout=5)).text == "the whole answer, from the provider's log"
