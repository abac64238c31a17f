"""Streamed model text reaches the host live (heartbeat details: no history) while only the
settled response counts; a call cut off mid-stream is unknown, its partial text unused."""

from __future__ import annotations

import asyncio

from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    ScriptedModel,
    reply,
    settle_model_result,
    stream_delta,
)
from tests.live.harness import eventually, serving


async def history_text(env: WorkflowEnvironment, workflow_id: str) -> str:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    return history.to_json()


async def test_streamed_text_is_live_for_the_host_and_not_in_history(
    temporal_env: WorkflowEnvironment,
) -> None:
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> Response:
        stream_delta("Root cause: ")
        stream_delta("STREAMED-ONLY a leak")
        await release.wait()
        return reply.text("Root cause: a connection leak")

    async with serving(
        temporal_env, [Definition("live")], models={"default": ScriptedModel(slow)}
    ) as scope:
        handle = await scope.start("live", "why?")
        live = await eventually(
            handle.live_text, lambda t: t is not None and "a leak" in t.text, timeout=10
        )
        assert live is not None
        assert live.text == "Root cause: STREAMED-ONLY a leak" and live.model_call_seq == 1
        assert (await handle.snapshot()).model_calls == 0  # nothing settled
        release.set()
        out = await handle.result()
        assert out.text == "Root cause: a connection leak"
        assert await handle.live_text() is None
    assert "STREAMED-ONLY" not in await history_text(temporal_env, handle.id)


async def test_a_stream_cut_short_stays_unknown_until_the_host_settles_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    async def cut(request: ModelRequest) -> Response:
        stream_delta("Half an ans")
        await asyncio.sleep(0.3)
        raise ConnectionError("stream reset by peer")

    async with serving(
        temporal_env, [Definition("cut")], models={"default": ScriptedModel(cut)}
    ) as scope:
        handle = await scope.start("cut", "why?")
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects))
        [unknown] = snap.unknown_effects
        assert "stream reset by peer" in unknown.diagnostic
        assert all("Half an ans" not in m.text for m in snap.root.context)
        answer = reply.text("whole answer, from the provider's log")
        await handle.resolve(
            unknown, settle_model_result(unknown.request, answer, unknown.request.messages)
        )
        assert (await handle.result()).text == "whole answer, from the provider's log"
