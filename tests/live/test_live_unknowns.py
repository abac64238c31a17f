"""CONFORMANCE 9, 10, 19, 20, 21 live: ambiguous outcomes become unknowns the host settles."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    HostFailure,
    Message,
    ScriptedModel,
    SettlementMismatch,
    ToolResult,
    TreeSnapshot,
    reply,
    settle_model_result,
    settle_tool_result,
    tool,
)
from scope_temporal.interaction.effects import ToolEffectRequest
from tests.live.harness import eventually, serving

runs: dict[str, int] = {}


@tool(permission="read", execution="parallel")
async def steady(name: str) -> str:
    """Always works."""
    runs[name] = runs.get(name, 0) + 1
    return f"steady {name}"


@tool(permission="read", execution="parallel")
async def flaky(kind: str) -> str:
    """Fails ambiguously."""
    runs["flaky"] = runs.get("flaky", 0) + 1
    if kind == "host":
        raise HostFailure("the payment gateway did not answer")
    raise RuntimeError("connection reset mid-write")


@tool(permission="read", execution="parallel")
async def stuck(name: str) -> str:
    """Never answers within its timeout."""
    runs[name] = runs.get(name, 0) + 1
    await asyncio.sleep(30)
    raise AssertionError("unreachable")


def has_unknown(snap: TreeSnapshot) -> bool:
    return bool(snap.unknown_effects)


async def test_c9_live_model_exception_is_an_unknown_effect_and_the_workflow_stays_open(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([ConnectionError("socket closed"), reply.text("never")])
    async with serving(temporal_env, [Definition("amb")], models={"default": model}) as scope:
        handle = await scope.start("amb", "go")
        snap = await eventually(handle.snapshot, has_unknown)
        [unknown] = snap.unknown_effects
        assert unknown.kind == "model"
        assert "socket closed" in unknown.diagnostic
        assert snap.status == "waiting"
        await asyncio.sleep(0.5)  # nothing calls the model again while it waits
        assert len(model.requests) == 1
        assert await handle.status() == WorkflowExecutionStatus.RUNNING
        await handle.cancel()


async def test_c9_live_model_activity_timeout_is_unknown(
    temporal_env: WorkflowEnvironment,
) -> None:
    from datetime import timedelta

    async def hang(request: object) -> object:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")

    model = ScriptedModel(hang)
    definition = Definition("hang", model_timeout=timedelta(seconds=1))
    async with serving(temporal_env, [definition], models={"default": model}) as scope:
        handle = await scope.start("hang", "go")
        snap = await eventually(handle.snapshot, has_unknown)
        [unknown] = snap.unknown_effects
        assert unknown.kind == "model" and "START_TO_CLOSE" in unknown.diagnostic
        # the model was called once: Temporal did not retry the activity, and the
        # Interaction did not re-send the call (an unknown is the host's, by default)
        assert len(model.requests) == 1
        # past another timeout and any retry wait, it is still that one unknown, waiting
        await asyncio.sleep(2.5)
        snap = await handle.snapshot()
        assert [u.effect_id for u in snap.unknown_effects] == [unknown.effect_id]
        assert snap.status == "waiting" and len(model.requests) == 1
        await handle.resolve(
            unknown,
            settle_model_result(unknown.request, reply.text("late"), unknown.request.messages),
        )
        out = await handle.result()
    assert out.text == "late" and out.model_calls == 1
    assert len(model.requests) == 1


async def test_c19_live_tool_activity_timeout_is_unknown_and_never_entered_again(
    temporal_env: WorkflowEnvironment,
) -> None:
    from datetime import timedelta

    runs.clear()
    model = ScriptedModel([reply.tool_calls(("stuck", {"name": "s"})), reply.text("done")])
    definition = Definition("stuck", tools=[stuck], tool_timeout=timedelta(seconds=1))
    async with serving(
        temporal_env, [definition], tools=[stuck], models={"default": model}
    ) as scope:
        handle = await scope.start("stuck", "go")
        # until it is unknown, or the body is entered again (a retried activity)
        snap = await eventually(
            handle.snapshot, lambda snap: has_unknown(snap) or runs.get("s", 0) > 1
        )
        # the body was entered once: Temporal did not retry the timed-out activity
        assert runs == {"s": 1}, f"the tool body was entered {runs['s']} times"
        [unknown] = snap.unknown_effects
        assert unknown.kind == "tool" and "START_TO_CLOSE" in unknown.diagnostic
        # past another timeout and any retry wait, it is still that one unknown, waiting
        await asyncio.sleep(2.5)
        snap = await handle.snapshot()
        assert [u.effect_id for u in snap.unknown_effects] == [unknown.effect_id]
        assert snap.status == "waiting" and runs == {"s": 1}
        assert isinstance(unknown.request, ToolEffectRequest)
        result = ToolResult(call_id=unknown.request.call.id, name="stuck", content="settled")
        await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        out = await handle.result()
    assert out.text == "done" and len(model.requests) == 2
    assert runs == {"s": 1}


async def test_c10_live_resolving_a_model_unknown_continues_without_calling_the_model(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([TimeoutError("read timeout"), reply.text("never called")])
    async with serving(temporal_env, [Definition("res")], models={"default": model}) as scope:
        handle = await scope.start("res", "go")
        [unknown] = (await eventually(handle.snapshot, has_unknown)).unknown_effects
        reduced = [Message.user("short summary")]
        await handle.resolve(
            unknown, settle_model_result(unknown.request, reply.text("ok"), reduced)
        )
        out = await handle.result()
    assert out.text == "ok" and out.model_calls == 1
    assert len(model.requests) == 1


@pytest.mark.parametrize("kind", ["exception", "host"])
async def test_c19_live_tool_exception_is_unknown_and_siblings_keep_their_results(
    temporal_env: WorkflowEnvironment, kind: str
) -> None:
    runs.clear()
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("steady", {"name": "a"}), ("flaky", {"kind": kind}), ("steady", {"name": "b"})
            ),
            reply.text("done"),
        ]
    )
    definition = Definition("tools19", tools=[steady, flaky], max_concurrent_tool_calls=3)
    async with serving(
        temporal_env, [definition], tools=[steady, flaky], models={"default": model}
    ) as scope:
        handle = await scope.start("tools19", "go")
        snap = await eventually(handle.snapshot, has_unknown)
        [unknown] = snap.unknown_effects
        assert unknown.kind == "tool" and unknown.process_id == f"{handle.id}/tool/1/1"
        assert unknown.ref == f"{handle.id}/1/1"
        await eventually(lambda: asyncio.sleep(0, runs.copy()), lambda r: r.get("b") == 1)
        assert len(model.requests) == 1
        await handle.cancel()
    assert runs == {"a": 1, "b": 1, "flaky": 1}


async def test_c20_c21_live_resolving_a_tool_unknown_continues_in_order_without_reruns(
    temporal_env: WorkflowEnvironment,
) -> None:
    runs.clear()
    model = ScriptedModel(
        [
            reply.tool_calls(("steady", {"name": "a"}), ("flaky", {"kind": "exception"})),
            reply.text("done"),
        ]
    )
    definition = Definition("tools20", tools=[steady, flaky], max_concurrent_tool_calls=2)
    async with serving(
        temporal_env, [definition], tools=[steady, flaky], models={"default": model}
    ) as scope:
        handle = await scope.start("tools20", "go")
        [unknown] = (await eventually(handle.snapshot, has_unknown)).unknown_effects
        call = unknown.request.call
        wrong = ToolResult(call_id="other", name=call.name, content="x")
        with pytest.raises(SettlementMismatch):
            settle_tool_result(unknown.request, wrong, "succeeded")
        good = ToolResult(call_id=call.id, name=call.name, content="written once (verified)")
        other_request = unknown.request.model_copy(update={"definition": "someone-else"})
        with pytest.raises(SettlementMismatch):
            await handle.resolve(unknown, settle_tool_result(other_request, good, "succeeded"))
        await handle.resolve(unknown, settle_tool_result(unknown.request, good, "succeeded"))
        out = await handle.result()
    assert out.text == "done"
    results = model.requests[1].messages[-1].tool_results
    assert [r.content for r in results] == ["steady a", "written once (verified)"]
    assert runs == {"a": 1, "flaky": 1}
