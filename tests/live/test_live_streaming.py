"""Streamed model text reaches the host live (the event stream, and the latest text as
heartbeat details) while only the settled response counts; in history it costs one
signal per batch, not per piece; a call cut off mid-stream is unknown, its partial text
unused."""

from __future__ import annotations

import asyncio
import base64
import json

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
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
from scope_temporal.names import STREAM_PUBLISH_SIGNAL
from tests.live.harness import eventually, serving


async def publish_signals(env: WorkflowEnvironment, workflow_id: str) -> list[str]:
    """The streamed text each event-stream signal in the root's history carried."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    texts: list[str] = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            continue
        signaled = event.workflow_execution_signaled_event_attributes
        if signaled.signal_name != STREAM_PUBLISH_SIGNAL:
            continue
        publish = json.loads(signaled.input.payloads[0].data)
        for item in publish["items"]:
            payload = Payload()
            payload.ParseFromString(base64.b64decode(item["data"]))
            texts.append(json.loads(payload.data).get("text", ""))
    return texts


async def test_streamed_text_is_live_for_the_host_and_batched_into_history(
    temporal_env: WorkflowEnvironment,
) -> None:
    release = asyncio.Event()
    pieces = [f"w{i} " for i in range(200)]

    async def slow(request: ModelRequest) -> Response:
        stream_delta("Root cause: ")
        stream_delta("STREAMED-ONLY a leak")
        await release.wait()
        for piece in pieces:  # 200 pieces in about a second
            stream_delta(piece)
            await asyncio.sleep(0.005)
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
        events = [e async for e in handle.events()]
        out = await handle.result()
        assert out.text == "Root cause: a connection leak"
        assert await handle.live_text() is None
    streamed = "Root cause: STREAMED-ONLY a leak" + "".join(pieces)
    assert "".join(e.text for e in events if e.kind == "text") == streamed
    # in history: one signal per batch, never one per piece (202 pieces here)
    batches = await publish_signals(temporal_env, handle.id)
    assert "".join(batches) == streamed
    assert len(batches) <= 20


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
